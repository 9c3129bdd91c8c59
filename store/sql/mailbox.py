"""The SQL of ``mailbox``: users' delivered messages and reports.

Delivery, which the daemon runs for every local recipient, is a
:class:`store.sql.statement.Insert` run on the driver's cursor; a user agent's listings
and changes are SQLAlchemy statements for the session, built per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Executable, Select, Update, delete, func, select, update

from store.models import ApduKind, MailboxEntry
from store.sql.statement import BOOL, BYTES, INT, TEXT, TIME, Insert, enum_kind

_E = MailboxEntry

INSERT_NEW: Final = Insert(
    "mailbox",
    {
        "user": TEXT,
        "mts_identifier": TEXT,
        "kind": enum_kind(ApduKind),
        "size": INT,
        "precedence": INT,
        "subject": TEXT,
        "originator": TEXT,
        "security_label": TEXT,
        "message_type": TEXT,
        "delivered_at": TIME,
        "read": BOOL,
        "apdu_file": TEXT,
        "apdu": BYTES,
    },
    returning={"id": INT, "mts_identifier": TEXT, "user": TEXT},
    skip_existing=("mts_identifier", "user"),
)
"""Mailbox entries, those already delivered (same MTS identifier and user) skipped;
returns (id, mts_identifier, user) of those inserted."""

SUMMARY_COLUMNS: Final = (
    _E.id,
    _E.user,
    _E.mts_identifier,
    _E.kind,
    _E.precedence,
    _E.subject,
    _E.originator,
    _E.security_label,
    _E.message_type,
    _E.delivered_at,
    _E.read,
    _E.size,
)
"""An entry without its bytes."""


def listing(user: str, *, unread_only: bool) -> Select[*tuple[Any, ...]]:
    """``user``'s summaries, most urgent first, then in delivery order."""
    statement = select(*SUMMARY_COLUMNS).where(_E.user == user)
    if unread_only:
        statement = statement.where(_E.read.is_(False))
    return statement.order_by(_E.precedence.desc(), _E.delivered_at, _E.id)


def since(user: str, after: int, limit: int) -> Select[*tuple[Any, ...]]:
    """``user``'s summaries numbered above ``after``, in delivery order, ``limit`` at most."""
    return (
        select(*SUMMARY_COLUMNS).where(_E.user == user, _E.id > after).order_by(_E.id).limit(limit)
    )


def newest_id(user: str) -> Select[Any]:
    """The number of ``user``'s newest entry (None for an empty mailbox)."""
    return select(func.max(_E.id)).where(_E.user == user)


def entry(user: str | None, entry_id: int) -> Select[*tuple[Any, ...]]:
    """One entry's summary, ``apdu_file`` and ``apdu``; only ``user``'s unless None."""
    statement = select(*SUMMARY_COLUMNS, _E.apdu_file, _E.apdu).where(_E.id == entry_id)
    return statement if user is None else statement.where(_E.user == user)


def mark_read(user: str, entry_ids: Sequence[int], *, read: bool) -> Update:
    """Set the read flag of entries ``entry_ids`` of ``user``'s that differ."""
    return (
        update(_E)
        .where(_E.user == user, _E.id.in_(entry_ids), _E.read.is_not(read))
        .values(read=read)
        .execution_options(synchronize_session=False)
    )


def delete_entries(user: str, entry_ids: Sequence[int]) -> Executable:
    """Delete entries ``entry_ids`` of ``user``'s; returns their ``apdu_file``."""
    return (
        delete(_E)
        .where(_E.user == user, _E.id.in_(entry_ids))
        .returning(_E.apdu_file)
        .execution_options(synchronize_session=False)
    )


def unread_count(user: str) -> Select[Any]:
    """How many of ``user``'s entries are unread."""
    return select(func.count()).select_from(_E).where(_E.user == user, _E.read.is_(False))
