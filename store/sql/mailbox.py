"""The SQL of ``mailbox`` and ``contents``: users' delivered messages and reports.

Delivery, which the daemon runs for every local recipient, is a
:class:`store.sql.statement.Insert` of one content row per APDU and one mailbox row per
user, run on the driver's cursor; a user agent's listings and changes are SQLAlchemy
statements for the session, built per call.

A content goes with the last entry naming it.  Entries naming a content are made only
in the transaction that makes the content, so only deletions race: each deleting
transaction locks the contents its entries named (PostgreSQL ``FOR UPDATE``, in id
order; a SQLite transaction holds the whole database) before it looks for entries still
naming them, so of two transactions deleting the last two entries of one content the
second waits for the first to commit, then sees that no entry is left and deletes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Executable, Select, Update, delete, func, select, update

from store.models import ApduKind, MailboxContent, MailboxEntry
from store.sql.statement import BOOL, BYTES, INT, TEXT, TIME, Insert, enum_kind

_E = MailboxEntry
_C = MailboxContent

INSERT_CONTENTS: Final = Insert(
    "contents",
    {"size": INT, "apdu_file": TEXT, "apdu": BYTES},
    returning={"id": INT},
)
"""Contents, one per distinct APDU of a delivery; returns each one's id."""

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
        "content_id": INT,
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
    """One entry's summary with its APDU's ``apdu_file`` and ``apdu`` (its content's,
    or its own when it names none); only ``user``'s unless None."""
    statement = (
        select(
            *SUMMARY_COLUMNS,
            _E.content_id,
            func.coalesce(_C.apdu_file, _E.apdu_file).label("apdu_file"),
            func.coalesce(_C.apdu, _E.apdu).label("apdu"),
        )
        .outerjoin(_C, _C.id == _E.content_id)
        .where(_E.id == entry_id)
    )
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
    """Delete entries ``entry_ids`` of ``user``'s; returns their ``content_id`` and
    ``apdu_file``."""
    return (
        delete(_E)
        .where(_E.user == user, _E.id.in_(entry_ids))
        .returning(_E.content_id, _E.apdu_file)
        .execution_options(synchronize_session=False)
    )


def lock_contents(content_ids: Sequence[int]) -> Executable:
    """Lock contents ``content_ids`` until the transaction ends, in id order (PostgreSQL;
    nothing more on SQLite, whose transaction holds the database)."""
    return select(_C.id).where(_C.id.in_(content_ids)).order_by(_C.id).with_for_update()


def delete_unnamed_contents(content_ids: Sequence[int]) -> Executable:
    """Delete those of contents ``content_ids`` no entry names any more; returns their
    ``apdu_file``."""
    named = select(_E.id).where(_E.content_id == _C.id).exists()
    return (
        delete(_C)
        .where(_C.id.in_(content_ids), ~named)
        .returning(_C.apdu_file)
        .execution_options(synchronize_session=False)
    )


def unread_count(user: str) -> Select[Any]:
    """How many of ``user``'s entries are unread."""
    return select(func.count()).select_from(_E).where(_E.user == user, _E.read.is_(False))
