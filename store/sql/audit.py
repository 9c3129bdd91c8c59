"""The SQL of ``audit``: the audit log.

Recording, which the daemon does with every unit of work, is a
:class:`store.sql.statement.Insert` run on the driver's cursor; reading and purging are
SQLAlchemy statements for the session.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from sqlalchemy import Delete, Select, delete, select

from store.models import AuditEntry
from store.sql.statement import TEXT, TIME, Insert

INSERT: Final = Insert(
    "audit",
    {
        "at": TIME,
        "event": TEXT,
        "mts_identifier": TEXT,
        "recipient": TEXT,
        "peer": TEXT,
        "detail": TEXT,
    },
)


def recent(limit: int, mts_identifier: str | None) -> Select[AuditEntry]:
    """The latest ``limit`` entries, newest first; only one message's when
    ``mts_identifier`` is given."""
    statement = select(AuditEntry)
    if mts_identifier is not None:
        statement = statement.where(AuditEntry.mts_identifier == mts_identifier)
    return statement.order_by(AuditEntry.at.desc(), AuditEntry.id.desc()).limit(limit)


def purge(before: datetime) -> Delete:
    """Entries older than ``before``."""
    return (
        delete(AuditEntry)
        .where(AuditEntry.at < before)
        .execution_options(synchronize_session=False)
    )
