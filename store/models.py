"""The database schema: transit queue, duplicate keys, mailboxes and audit log (SQLAlchemy 2).

Tables::

    messages     one MTS-APDU (message, report or probe) waiting in the transit queue
    recipients   one responsible recipient of a queued APDU: its route and delivery state
    received     (MTS identifier, recipient) of every APDU taken responsibility for: the
                 unique key that makes an inbound duplicate (a peer re-sending after a lost
                 acknowledgement) detectable
    mailbox      delivered messages and reports, per user
    contents     the APDU of a delivery, one row however many mailbox entries name it
    audit        what happened to which message, when
    quarantine   MTS-APDUs peers transferred that could not be taken in, kept as received

Names are canonical O/R name text (:attr:`p1.mts.orname.ORName.canonical`), compared and
looked up in that form; a recipient's ``shown`` keeps it as given, for display.  MTS identifiers
are :attr:`p1.mts.envelope.MTSIdentifier.text`.  Every time is an aware ``datetime``; it is
stored as UTC (``timestamptz`` on PostgreSQL, ISO text on SQLite, where text order is time
order because the format is fixed).  A naive datetime is refused rather than guessed at.

The scheduling columns of ``messages`` (precedence, arrival time) are copied into
``recipients`` so that the queue manager's one hot query (next due recipients of a peer,
most urgent first, then oldest) reads one index of one table.

Public API::

    Base, LOCAL_ROUTE, ApduKind, RecipientState, FINAL_STATES, UtcDateTime, to_utc, from_utc
    QueuedMessage, QueuedRecipient, ReceivedKey, MailboxEntry, MailboxContent, AuditEntry,
    QuarantineEntry
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Final

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Enum,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    SmallInteger,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

__all__ = [
    "FINAL_STATES",
    "LOCAL_ROUTE",
    "ApduKind",
    "AuditEntry",
    "Base",
    "MailboxContent",
    "MailboxEntry",
    "QuarantineEntry",
    "QueuedMessage",
    "QueuedRecipient",
    "ReceivedKey",
    "RecipientState",
    "UtcDateTime",
    "from_utc",
    "to_utc",
]

LOCAL_ROUTE: Final = "local"
"""The route of a recipient this MTA delivers itself (every other route names a peer MTA)."""


class ApduKind(enum.StrEnum):
    """Which MTS-APDU (X.411 clause 12.2: message [0], report [1], probe [2])."""

    MESSAGE = "message"
    REPORT = "report"
    PROBE = "probe"


class RecipientState(enum.StrEnum):
    """Where one recipient of a queued APDU stands (Postfix's queues, per recipient).

    pending -> in_flight (claimed by a connection or the local deliverer)
    in_flight -> transferred | delivered (done) | pending (deferred, or recovered) | failed
    pending -> held -> pending (operator); pending -> failed (expired, permanent error)
    """

    PENDING = "pending"
    IN_FLIGHT = "in_flight"
    TRANSFERRED = "transferred"
    DELIVERED = "delivered"
    FAILED = "failed"
    HELD = "held"


FINAL_STATES: Final = frozenset(
    {RecipientState.TRANSFERRED, RecipientState.DELIVERED, RecipientState.FAILED}
)
"""States a recipient never leaves: the queue no longer owes it anything."""


def to_utc(value: datetime) -> datetime:
    """``value`` in UTC, to store; ValueError for a naive datetime."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value!r}: pass an aware one (UTC)")
    return value.astimezone(UTC)


def from_utc(value: datetime) -> datetime:
    """A stored time as read back: aware, in UTC (SQLite's comes without a zone)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class UtcDateTime(TypeDecorator[datetime]):
    """An aware datetime stored as UTC; naive values are refused."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = to_utc(value)
        # SQLite has no zone type: keep the text in UTC, without an offset, so text order
        # is time order.
        return value if dialect.name == "postgresql" else value.replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else from_utc(value)


def _enum(kind: type[enum.StrEnum]) -> Enum:
    # Stored as the values ("in_flight"), in a VARCHAR: portable, and readable from psql.
    return Enum(
        kind,
        native_enum=False,
        length=16,
        values_callable=lambda members: [member.value for member in members],
        validate_strings=True,
    )


# SQLite makes an INTEGER PRIMARY KEY the rowid only when it is spelt INTEGER; PostgreSQL
# gets a 64-bit key from a sequence.  Ids are never reused (SQLite AUTOINCREMENT on the
# tables whose ids leave the database): an id held by a connection, an operator or a
# user's listing must not come to name another message once the first is purged.
_ID = BigInteger().with_variant(Integer(), "sqlite")
_NEVER_REUSE_IDS: Final = {"sqlite_autoincrement": True}
_IN_FLIGHT_ONLY: Final = f"state = '{RecipientState.IN_FLIGHT.value}'"
"""The recipients in flight, as a partial index's condition."""
_NAME = String(1024)  # canonical O/R name text
_MTS_ID = String(256)  # [C;ADMD;PRMD;local-id]: ub-local-id is 32, domain names 16 each
_PEER = String(128)
_FILE = String(64)  # a spool file's name


class Base(DeclarativeBase):
    """Declarative base of every table of the store."""


class QueuedMessage(Base):
    """One MTS-APDU in the transit queue, kept as the bytes to send on."""

    __tablename__ = "messages"
    __table_args__ = _NEVER_REUSE_IDS

    id: Mapped[int] = mapped_column(_ID, primary_key=True)
    mts_identifier: Mapped[str] = mapped_column(_MTS_ID, index=True)
    """Not unique: a message may come back with other recipients (split transfers)."""
    kind: Mapped[ApduKind] = mapped_column(_enum(ApduKind))
    size: Mapped[int] = mapped_column(Integer)
    precedence: Mapped[int] = mapped_column(SmallInteger)
    """:class:`p1.mts.precedence.Precedence` value (0 deferred .. 5 override)."""
    originator: Mapped[str] = mapped_column(_NAME)
    """Canonical O/R name of the originator (report: of the report's destination)."""
    arrival_time: Mapped[datetime] = mapped_column(UtcDateTime)
    expiry_time: Mapped[datetime | None] = mapped_column(UtcDateTime, index=True)
    """When undelivered recipients fail (latest-delivery-time, or the queue lifetime)."""
    origin_peer: Mapped[str | None] = mapped_column(_PEER)
    """The peer MTA it came from; None for a local submission or a report we generated."""
    envelope_recipients: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """How many recipients the envelope names when each has the responsibility bit set,
    else None: a transfer claiming that many sends the APDU unchanged, without decoding it."""
    apdu_file: Mapped[str | None] = mapped_column(_FILE, nullable=True)
    """The spool file holding the APDU (:mod:`store.spool`), or None: it is in ``apdu``."""
    apdu: Mapped[bytes] = mapped_column(LargeBinary)
    """The BER of the MTS-APDU to transfer (as received, plus our trace when relayed);
    empty when spooled, or when nothing is left to transfer.  Last: SQLite reads a row's
    columns in order, through every overflow page of a large value before them."""

    recipients: Mapped[list[QueuedRecipient]] = relationship(
        back_populates="message", cascade="all, delete-orphan", passive_deletes=True
    )


class QueuedRecipient(Base):
    """One recipient of a queued APDU this MTA is responsible for."""

    __tablename__ = "recipients"
    __table_args__ = (
        # The queue manager's query: route, state, precedence, then age; due time filtered
        # from the index itself.
        Index(
            "ix_recipients_ready",
            "route",
            "state",
            "precedence",
            "arrival_time",
            "message_id",
            "next_attempt_at",
        ),
        # The leases' statements (renewal by owner, takeover by time) read only the
        # recipients in flight: a few windows' worth, whatever the table holds.
        Index(
            "ix_recipients_in_flight",
            "owner",
            "lease_until",
            sqlite_where=text(_IN_FLIGHT_ONLY),
            postgresql_where=text(_IN_FLIGHT_ONLY),
        ),
        _NEVER_REUSE_IDS,
    )

    id: Mapped[int] = mapped_column(_ID, primary_key=True)
    message_id: Mapped[int] = mapped_column(
        ForeignKey("messages.id", ondelete="CASCADE"), index=True
    )
    recipient: Mapped[str] = mapped_column(_NAME)
    """Canonical O/R name."""
    shown: Mapped[str | None] = mapped_column(_NAME, nullable=True)
    """The O/R name as the envelope gave it (its letters' case kept), for display; None:
    as ``recipient`` (a row of an earlier release)."""
    route: Mapped[str] = mapped_column(_PEER)
    """:data:`LOCAL_ROUTE` or the name of the peer MTA to transfer to."""
    state: Mapped[RecipientState] = mapped_column(_enum(RecipientState))
    precedence: Mapped[int] = mapped_column(SmallInteger)
    """Copied from the message (scheduling order)."""
    arrival_time: Mapped[datetime] = mapped_column(UtcDateTime)
    """Copied from the message (scheduling order)."""
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    """Times claimed: a recipient that keeps crashing the MTA shows here."""
    next_attempt_at: Mapped[datetime] = mapped_column(UtcDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    report_request: Mapped[int] = mapped_column(Integer, default=0)
    """The per-recipient-indicators bits (X.411 12.2.1.1.1), bit n as ``1 << n``."""
    recipient_number: Mapped[int | None] = mapped_column(Integer)
    """originally-specified-recipient-number, which reports quote."""
    owner: Mapped[str | None] = mapped_column(_PEER)
    """The MTA process holding it in flight (several may share a PostgreSQL queue): the
    site's name and the process's instance (:func:`mta.instance.claim_owner`)."""
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    """When the claim of a recipient in flight lapses unless its owner renews it; a lapsed
    claim (or one with no lease) is taken back by any process of the site."""
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)

    message: Mapped[QueuedMessage] = relationship(back_populates="recipients")


class ReceivedKey(Base):
    """(MTS identifier, recipient) of an APDU this MTA took responsibility for."""

    __tablename__ = "received"
    __table_args__ = (UniqueConstraint("mts_identifier", "recipient", name="uq_received"),)

    id: Mapped[int] = mapped_column(_ID, primary_key=True)
    mts_identifier: Mapped[str] = mapped_column(_MTS_ID)
    recipient: Mapped[str] = mapped_column(_NAME)
    received_at: Mapped[datetime] = mapped_column(UtcDateTime, index=True)
    origin_peer: Mapped[str | None] = mapped_column(_PEER)


class MailboxContent(Base):
    """The MTS-APDU of one delivery, named by the mailbox entry of each of its users: a
    message for many local users is stored once.  Deleted with the last entry naming it."""

    __tablename__ = "contents"
    __table_args__ = _NEVER_REUSE_IDS

    id: Mapped[int] = mapped_column(_ID, primary_key=True)
    size: Mapped[int] = mapped_column(Integer)
    apdu_file: Mapped[str | None] = mapped_column(_FILE, nullable=True)
    """The spool file holding the APDU (:mod:`store.spool`), or None: it is in ``apdu``."""
    apdu: Mapped[bytes] = mapped_column(LargeBinary)
    """The BER of the delivered MTS-APDU, empty when spooled; last (see
    :class:`QueuedMessage`)."""


class MailboxEntry(Base):
    """A message or report delivered to a user of this MTA."""

    __tablename__ = "mailbox"
    __table_args__ = (
        UniqueConstraint("mts_identifier", "user", name="uq_mailbox_delivery"),
        Index("ix_mailbox_user", "user", "read"),
        Index("ix_mailbox_user_id", "user", "id"),  # a user's newest entries (``wait``)
        Index("ix_mailbox_content", "content_id"),  # is a content still named?
        _NEVER_REUSE_IDS,
    )

    id: Mapped[int] = mapped_column(_ID, primary_key=True)
    user: Mapped[str] = mapped_column(_NAME)
    """Canonical O/R name of the recipient."""
    mts_identifier: Mapped[str] = mapped_column(_MTS_ID)
    kind: Mapped[ApduKind] = mapped_column(_enum(ApduKind))
    size: Mapped[int] = mapped_column(Integer)
    precedence: Mapped[int] = mapped_column(SmallInteger)
    subject: Mapped[str | None] = mapped_column(Text)
    originator: Mapped[str | None] = mapped_column(Text)
    """For display: the IPM originator, else the MTS originator (O/R name text)."""
    security_label: Mapped[str | None] = mapped_column(Text, nullable=True)
    """For display: the envelope's message-security-label in one line (X.411 8.5.9)."""
    message_type: Mapped[str | None] = mapped_column(Text, nullable=True)
    """For display: the P772 message-type heading extension (STANAG 4406 Annex A)."""
    delivered_at: Mapped[datetime] = mapped_column(UtcDateTime)
    read: Mapped[bool] = mapped_column(Boolean, default=False)
    content_id: Mapped[int | None] = mapped_column(
        ForeignKey("contents.id"), nullable=True, default=None
    )
    """The :class:`MailboxContent` holding the APDU; None: the entry holds it itself
    (``apdu_file`` or ``apdu``), as entries of a database made before the contents
    table do."""
    apdu_file: Mapped[str | None] = mapped_column(_FILE, nullable=True)
    """The spool file holding the APDU (:mod:`store.spool`) of an entry without
    ``content_id``, or None."""
    apdu: Mapped[bytes] = mapped_column(LargeBinary)
    """The BER of the delivered MTS-APDU of an entry without ``content_id`` not spooled;
    else empty.  Last, so that a listing does not read through it (see
    :class:`QueuedMessage`)."""


class AuditEntry(Base):
    """One event in the life of a message."""

    __tablename__ = "audit"

    id: Mapped[int] = mapped_column(_ID, primary_key=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime, index=True)
    event: Mapped[str] = mapped_column(String(32))
    mts_identifier: Mapped[str | None] = mapped_column(_MTS_ID, index=True)
    recipient: Mapped[str | None] = mapped_column(_NAME)
    peer: Mapped[str | None] = mapped_column(_PEER)
    detail: Mapped[str | None] = mapped_column(Text)


class QuarantineEntry(Base):
    """An MTS-APDU a peer transferred that could not be taken in (it does not decode, or
    cannot be written with this MTA's trace): confirmed, kept as received, not delivered."""

    __tablename__ = "quarantine"
    __table_args__ = _NEVER_REUSE_IDS

    id: Mapped[int] = mapped_column(_ID, primary_key=True)
    peer: Mapped[str] = mapped_column(_PEER)
    """The peer MTA that transferred it."""
    received_at: Mapped[datetime] = mapped_column(UtcDateTime)
    reason: Mapped[str] = mapped_column(Text)
    """Why it could not be taken in (control characters escaped)."""
    size: Mapped[int] = mapped_column(Integer)
    apdu_file: Mapped[str | None] = mapped_column(_FILE, nullable=True)
    """The spool file holding the APDU (:mod:`store.spool`), or None: it is in ``apdu``."""
    apdu: Mapped[bytes] = mapped_column(LargeBinary)
    """The octets as received, empty when spooled; last (see :class:`QueuedMessage`)."""
