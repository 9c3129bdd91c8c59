"""The SQL of ``quarantine``: MTS-APDUs kept because they could not be taken in.

Keeping one is a :class:`store.sql.statement.Insert` run on the driver's cursor, like
the other tables' inserts; the rest (totals, listing, reading, deleting) is cold and
written as SQLAlchemy statements for the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Executable, Select, delete, func, select

from store.models import QuarantineEntry
from store.sql.statement import BYTES, INT, TEXT, TIME, Insert

_Q = QuarantineEntry

INSERT: Final = Insert(
    "quarantine",
    {
        "peer": TEXT,
        "received_at": TIME,
        "reason": TEXT,
        "size": INT,
        "apdu_file": TEXT,
        "apdu": BYTES,
    },
    returning={"id": INT},
)
"""One kept APDU; returns its id."""

SUMMARY_COLUMNS: Final = (_Q.id, _Q.peer, _Q.received_at, _Q.reason, _Q.size)
"""An entry without its octets."""


def totals() -> Select[*tuple[Any, ...]]:
    """How many entries there are and their octets (None when there are none)."""
    return select(func.count(), func.sum(_Q.size)).select_from(_Q)


def listing() -> Select[*tuple[Any, ...]]:
    """Every entry's summary, oldest first."""
    return select(*SUMMARY_COLUMNS).order_by(_Q.id)


def entry(entry_id: int) -> Select[*tuple[Any, ...]]:
    """One entry's summary, ``apdu_file`` and ``apdu``."""
    return select(*SUMMARY_COLUMNS, _Q.apdu_file, _Q.apdu).where(_Q.id == entry_id)


def delete_entries(entry_ids: Sequence[int]) -> Executable:
    """Delete entries ``entry_ids``; returns their ``apdu_file``."""
    return (
        delete(_Q)
        .where(_Q.id.in_(entry_ids))
        .returning(_Q.apdu_file)
        .execution_options(synchronize_session=False)
    )
