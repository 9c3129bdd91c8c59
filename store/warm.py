"""Getting the store ready for the first message after a start.

A freshly started MTA has run none of its statements: the driver compiles each SQL text
the first time it runs it (sqlite3 keeps it in the connection's statement cache; psycopg
parses its placeholders), and the session and repository code runs for the first time.
Left to the first message, that work lands inside its transaction and makes it two to
three times as slow as the next ones: milliseconds, where a flash message submitted right
after a restart has a budget of a few.  :func:`warm_up`, run by the daemon before it
listens, does it in advance, in one transaction that is then rolled back:

1. every hot statement of the store that reads or updates runs once with sample values,
   which match no row (:func:`store.sql.statement.warm`);
2. the hot path runs once: for each distinct precedence list of the slots, and for all
   six precedences, one message is taken in with one recipient delivered to a mailbox as
   intake does and one on the rehearsal route, which a claim with that list takes, marks
   transferred and audits (so every insert runs too, with real rows).  No peer can have
   the rehearsal route, so no claim sees a real message; nothing of it is kept (a
   PostgreSQL sequence may skip a few numbers).

Public API::

    warm_up(engine, slots=(), *, now) -> int      statements run in step 1
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Iterable
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from p1.mts.precedence import Precedence
from store._sql import connection_of
from store.audit import AuditEvent, AuditLog, AuditRecord
from store.db import transaction
from store.mailbox import Delivery, MailboxIndex, MessageStore
from store.models import LOCAL_ROUTE, ApduKind
from store.queue import NewMessage, NewRecipient, TransitQueue
from store.sql.statement import warm

__all__ = ["warm_up"]

REHEARSAL_ROUTE: Final = "\t"
"""The route of the rehearsal's recipients: blank, which no configured peer's name is."""
_USER: Final = "(rehearsal)"
_MAX_OCTETS: Final = 8 * 1024 * 1024


class _RollBack(Exception):
    """Ends the rehearsal's transaction without committing it."""


def warm_up(engine: Engine, slots: Iterable[Collection[Precedence]] = (), *, now: datetime) -> int:
    """Run the store's statements and rehearse the hot path, then roll back (module
    docstring); ``slots``: the precedences of each connection slot, as its claims give
    them.  How many statements step 1 ran."""
    shapes = sorted({frozenset(s) for s in slots if s} | {frozenset(Precedence)}, key=max)
    ran = 0
    try:
        with transaction(engine, durable=False) as session:
            ran = warm(connection_of(session))
            _rehearse(session, shapes, now)
            raise _RollBack
    except _RollBack:
        pass
    return ran


def _rehearse(session: Session, shapes: list[frozenset[Precedence]], now: datetime) -> None:
    queue = TransitQueue(session)
    run = secrets.token_hex(4)  # (two processes sharing a queue never wait on each other)
    messages = [_message(f"{run}-{n}", max(shape), now) for n, shape in enumerate(shapes)]
    queue.enqueue_many(messages, now, delivered_route=LOCAL_ROUTE)
    MessageStore(session).deliver_many([_delivery(m) for m in messages], now)
    journal = []
    for shape in reversed(shapes):  # most urgent first: each claims its own message
        queue.backlog(REHEARSAL_ROUTE, shape, now)
        queue.next_due(REHEARSAL_ROUTE, shape)
        for entry in queue.claim_next(REHEARSAL_ROUTE, shape, now, max_octets=_MAX_OCTETS):
            queue.mark_transferred(entry.recipient_ids, now)
            journal.append(
                AuditRecord(
                    at=now, event=AuditEvent.TRANSFERRED, mts_identifier=entry.mts_identifier
                )
            )
    AuditLog(session).record_many(journal)


def _message(name: str, precedence: Precedence, now: datetime) -> NewMessage:
    return NewMessage(
        mts_identifier=f"{_USER}-{name}",
        kind=ApduKind.MESSAGE,
        apdu=b"\x00",
        precedence=precedence,
        originator=_USER,
        recipients=(
            NewRecipient(recipient=_USER, route=REHEARSAL_ROUTE, recipient_number=1),
            NewRecipient(recipient=_USER, route=LOCAL_ROUTE, recipient_number=2),
        ),
        expiry_time=now + timedelta(hours=1),
        envelope_recipients=2,
    )


def _delivery(message: NewMessage) -> Delivery:
    index = MailboxIndex(
        mts_identifier=message.mts_identifier,
        kind=ApduKind.MESSAGE,
        precedence=message.precedence,
        subject=None,
        originator=None,
    )
    return Delivery(user=_USER, apdu=message.apdu, index=index)
