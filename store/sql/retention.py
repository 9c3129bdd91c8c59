"""The SQL of retention: what the MTA has finished with, deleted a batch at a time.

Each statement deletes at most ``limit`` rows, oldest first, and uses an index to find
them (recipients by ``message_id``, received keys by ``received_at``, audit records by
``at``), so a batch costs about the same however large the tables are.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from sqlalchemy import BindParameter, Column, Delete, Table, bindparam, case, delete, func, select

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


def _oldest(table: Table, when: Column[datetime]) -> Delete:
    """At most ``limit`` rows of ``table`` whose ``when`` is before ``before``, oldest
    first (``when`` is indexed)."""
    ids = select(table.c.id).where(when < _before()).order_by(when).limit(bindparam("limit"))
    return delete(table).where(table.c.id.in_(ids.scalar_subquery()))


PRUNE_RECEIVED: Final = _oldest(_RECEIVED, _RECEIVED.c.received_at)
"""At most ``limit`` duplicate-detection keys received before ``before``, oldest first."""

PRUNE_AUDIT: Final = _oldest(_AUDIT, _AUDIT.c.at)
"""At most ``limit`` audit records written before ``before``, oldest first."""
