"""The SQL of retention: what the MTA has finished with, deleted a batch at a time.

Each statement deletes at most ``limit`` rows, oldest first, and uses an index to find
them (recipients by ``message_id``, received keys by ``received_at``, audit records by
``at``), so a batch costs about the same however large the tables are.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from sqlalchemy import BindParameter, Delete, bindparam, case, delete, func, select

from store._sql import table
from store.models import (
    FINAL_STATES,
    AuditEntry,
    QueuedMessage,
    QueuedRecipient,
    ReceivedKey,
    UtcDateTime,
)

_MESSAGES: Final = table(QueuedMessage)
_RECIPIENTS: Final = table(QueuedRecipient)
_RECEIVED: Final = table(ReceivedKey)
_AUDIT: Final = table(AuditEntry)
_m = _MESSAGES.c
_r = _RECIPIENTS.c


def _before() -> BindParameter[datetime]:
    return bindparam("before", type_=UtcDateTime())


_FINISHED_BATCH: Final = (
    select(_r.message_id)
    .group_by(_r.message_id)
    .having(
        func.sum(case((_r.state.in_(sorted(FINAL_STATES)), 0), else_=1)) == 0,
        func.max(_r.updated_at) < _before(),
    )
    .order_by(_r.message_id)
    .limit(bindparam("limit"))
)
PRUNE_FINISHED: Final = (
    delete(_MESSAGES)
    .where(_m.id.in_(_FINISHED_BATCH.scalar_subquery()))
    .returning(_m.id, _m.apdu_file, _m.size)
)
"""At most ``limit`` messages, oldest first, whose every recipient reached a final state
before ``before`` (their recipients go with them: ON DELETE CASCADE).  Returns each
one's id, spool file and size."""

PRUNE_RECEIVED: Final[Delete] = delete(_RECEIVED).where(
    _RECEIVED.c.id.in_(
        select(_RECEIVED.c.id)
        .where(_RECEIVED.c.received_at < _before())
        .order_by(_RECEIVED.c.received_at)
        .limit(bindparam("limit"))
        .scalar_subquery()
    )
)
"""At most ``limit`` duplicate-detection keys received before ``before``, oldest first."""

PRUNE_AUDIT: Final[Delete] = delete(_AUDIT).where(
    _AUDIT.c.id.in_(
        select(_AUDIT.c.id)
        .where(_AUDIT.c.at < _before())
        .order_by(_AUDIT.c.at)
        .limit(bindparam("limit"))
        .scalar_subquery()
    )
)
"""At most ``limit`` audit records written before ``before``, oldest first."""
