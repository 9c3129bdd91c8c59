"""Persistence (SQLAlchemy 2): the transit queue, the message store and the audit log.

SQLite is the embedded default (WAL, synchronous FULL); PostgreSQL works by URL and lets
several MTA processes share one queue.  The API is synchronous: the daemon runs it in a
worker thread.  Repositories wrap the caller's :class:`sqlalchemy.orm.Session` and never
commit; one :func:`transaction` is one unit of work, committed (on disk) when its block
ends, so work done in several repositories commits or fails together::

    engine = open_database("sqlite:////var/lib/aiox400/store.db")
    with transaction(engine) as session:
        result = TransitQueue(session).enqueue(message, now)
        AuditLog(session).record(AuditEvent.RECEIVED, now, mts_identifier=...)
    # committed: only now acknowledge the transfer

Modules: :mod:`store.db` (opening, transactions), :mod:`store.models` (schema),
:mod:`store.queue` (:class:`TransitQueue`), :mod:`store.mailbox` (:class:`MessageStore`),
:mod:`store.audit` (:class:`AuditLog`), :mod:`store.quarantine` (:class:`Quarantine`:
what peers transferred that could not be taken in), :mod:`store.spool` (large APDUs as files),
:mod:`store.warm` (ready for the first message after a start).
"""

from store.audit import AuditEvent, AuditLog, AuditRecord
from store.db import (
    DatabaseUnavailableError,
    StoreError,
    open_database,
    sweep_spool,
    transaction,
)
from store.mailbox import Delivery, MailboxMessage, MailboxSummary, MessageStore
from store.models import LOCAL_ROUTE, ApduKind, RecipientState
from store.quarantine import Quarantine, QuarantinedApdu, QuarantineSummary, QuarantineTotals
from store.queue import (
    Enqueued,
    NewMessage,
    NewRecipient,
    QueueCount,
    QueueEntry,
    QueueRecipient,
    TransitQueue,
    WaitingRecipient,
)
from store.warm import warm_up

__all__ = [
    "LOCAL_ROUTE",
    "ApduKind",
    "AuditEvent",
    "AuditLog",
    "AuditRecord",
    "DatabaseUnavailableError",
    "Delivery",
    "Enqueued",
    "MailboxMessage",
    "MailboxSummary",
    "MessageStore",
    "NewMessage",
    "NewRecipient",
    "Quarantine",
    "QuarantineSummary",
    "QuarantineTotals",
    "QuarantinedApdu",
    "QueueCount",
    "QueueEntry",
    "QueueRecipient",
    "RecipientState",
    "StoreError",
    "TransitQueue",
    "WaitingRecipient",
    "open_database",
    "sweep_spool",
    "transaction",
    "warm_up",
]
