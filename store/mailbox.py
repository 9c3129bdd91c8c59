"""The message store: messages and reports delivered to this MTA's users.

Delivery is idempotent: an entry is unique on (MTS identifier, user), so delivering the
same message to the same user twice (a retry after a crash between delivery and its
bookkeeping, or a duplicate transfer) stores it once.

A message is stored once however many users it is delivered to: each distinct APDU of a
delivery is one content row (in a spool file when large, :mod:`store.spool`), and each
user's entry names it.  Deleting an entry deletes its content with the last entry naming
it, the file once the transaction commits (:mod:`store.sql.mailbox` says why two
deletions at once never keep or delete a content wrongly).  An entry of a database made
before contents existed holds its own APDU, and is read and deleted as it was made.

On delivery the store reads what a user's listing shows from the message itself
(:func:`index_apdu`): for an IPM (P2 or P772 content, X.420 clause 7; STANAG 4406 Annex A)
the subject, the originator and the precedence the originator gave this user (primary or
copy precedence, depending on where the heading names the user) and the P772
message-type, falling back on the envelope's precedence and originator when the content
is not an IPM or does not decode (the message is delivered all the same); and, for a
message or a report, the envelope's message-security-label (X.411 8.5.9) in one line.
The subject and a free-form originator name are TeletexString (X.420's SubjectField and
FreeFormName), which may hold control characters: they are stored with those escaped
(:func:`p1.ber.values.escape_controls`), as is all text a peer chose, so that a listing
shows one line per entry.  A mailbox is named by its user's canonical
O/R name (:attr:`p1.mts.orname.ORAddress.canonical`), which never holds one either: a
name that does is refused (ValueError).

Every method runs inside the caller's transaction (see :func:`store.db.transaction`) and
commits nothing; time is passed in.  Every read, change and deletion names the user, so
one user's id never reaches another user's mail.

Public API::

    MessageStore(session)
        .deliver(user, apdu, now) -> int | None            (None: already delivered)
        .deliver_many(deliveries, now) -> tuple[int | None, ...]
        .list(user, *, unread_only=False) -> tuple[MailboxSummary, ...]
        .since(user, after, *, limit=100) -> tuple[MailboxSummary, ...]   (in delivery order)
        .newest_id(user) -> int                                   (0 for an empty mailbox)
        .read(user | None, entry_id) -> MailboxMessage | None
        .mark_read(user, entry_ids, *, read=True) -> int
        .delete(user, entry_ids) -> int
        .unread_count(user) -> int
    Delivery(user, apdu, index=None, report_precedence=REPORT_PRECEDENCE)
    MailboxIndex, index_apdu(apdu, user, *, report_precedence, is_probe) -> MailboxIndex,
        REPORT_PRECEDENCE
    index_message(envelope, content, users) -> tuple[MailboxIndex, ...]   (envelope decoded)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, cast

from sqlalchemy import CursorResult
from sqlalchemy.orm import Session

from p1.ber import Deviation, Deviations
from p1.ber.values import escape_controls
from p1.errors import DecodeError
from p1.ipms.ipm import IPN, ContentKind, Heading, ORDescriptor, decode_content_heading
from p1.ipms.models import MessageType, TypeMessage
from p1.mts.envelope import MessageEnvelope, Probe, Report, decode_mts_apdu
from p1.mts.extensions import ExtensionField, StandardExtension, find_extension
from p1.mts.orname import ORName, format_orname
from p1.mts.precedence import Precedence
from p1.mts.security_label import decode_security_label_extension
from store._sql import AnyRow, chunks, connection_of
from store.models import ApduKind
from store.spool import apdu_columns, spool_of, stored_apdu
from store.sql import mailbox as sql

__all__ = [
    "REPORT_PRECEDENCE",
    "UNDECODABLE",
    "UNDECODABLE_LABEL",
    "Delivery",
    "MailboxIndex",
    "MailboxMessage",
    "MailboxSummary",
    "MessageStore",
    "index_apdu",
    "index_message",
]

REPORT_PRECEDENCE: Final = Precedence.ROUTINE
"""A report's envelope carries no priority (X.411 12.2.1.3): a report whose subject this
MTA does not know is listed as routine; otherwise at its subject's precedence."""

UNDECODABLE: Final = "(content could not be decoded)"
"""The subject a listing shows for an APDU delivered as received that could not be read."""

UNDECODABLE_LABEL: Final = "(security label does not decode)"
"""What the index holds for a message-security-label that is not a SecurityLabel."""

_IPM_CONTENT_TYPES: Final = frozenset(kind.value for kind in ContentKind)


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """One message or report to put in one user's mailbox."""

    user: str
    """Canonical O/R name of the recipient."""
    apdu: bytes
    """The BER of the MTS-APDU (a message or a report)."""
    index: MailboxIndex | None = None
    """What the listing shows, when the caller has it already (:func:`index_message` of
    the envelope it decoded); None: read from ``apdu`` (:func:`index_apdu`)."""
    report_precedence: Precedence = REPORT_PRECEDENCE
    """The precedence a report is listed at when ``index`` is None: that of the message
    it is on, as this MTA queued it (ignored for a message)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MailboxIndex:
    """What a listing shows of a delivered APDU."""

    mts_identifier: str
    kind: ApduKind
    precedence: Precedence
    subject: str | None
    originator: str | None
    security_label: str | None = None
    """The envelope's message-security-label in one line (X.411 8.5.9), if any."""
    message_type: str | None = None
    """The P772 message-type heading extension (STANAG 4406 Annex A), if any."""
    deviations: tuple[Deviation, ...] = field(default=(), compare=False)
    """What the heading held outside the standard's form and was read all the same
    (:func:`p1.ber.parse_lenient_utctime`), for the log; not stored."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MailboxSummary:
    """One mailbox entry without its bytes."""

    id: int
    user: str
    mts_identifier: str
    kind: ApduKind
    precedence: Precedence
    subject: str | None
    originator: str | None
    delivered_at: datetime
    read: bool
    size: int
    security_label: str | None = None
    message_type: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MailboxMessage(MailboxSummary):
    """One mailbox entry with the delivered MTS-APDU."""

    apdu: bytes


class MessageStore:
    """Users' mailboxes, in the caller's session (the caller commits)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.spool = spool_of(session)

    def deliver(self, user: str, apdu: bytes, now: datetime) -> int | None:
        """Store ``apdu`` for ``user``; the entry id, or None if it was there already."""
        return self.deliver_many((Delivery(user=user, apdu=apdu),), now)[0]

    def deliver_many(self, deliveries: Sequence[Delivery], now: datetime) -> tuple[int | None, ...]:
        """Store several deliveries in the caller's transaction; None for each duplicate.

        Raises :class:`p1.errors.DecodeError` if an APDU is not an MTS-APDU and
        ValueError for a probe (probes are answered, never delivered).
        """
        rows = [_row(d, now) for d in deliveries]
        contents = self._store_contents(d.apdu for d in deliveries)
        for row, delivery in zip(rows, deliveries, strict=True):
            row["content_id"] = contents[delivery.apdu]
        new = sql.INSERT_NEW.insert(connection_of(self.session), rows)
        ids = {(mts_identifier, user): entry_id for entry_id, mts_identifier, user in new}
        # The first delivery of a key takes the new id; a repeat in the batch is a duplicate.
        made = [ids.pop((row["mts_identifier"], row["user"]), None) for row in rows]
        named = {r["content_id"] for r, i in zip(rows, made, strict=True) if i is not None}
        unnamed = set(contents.values()) - named  # (every delivery of it a duplicate)
        if unnamed:
            self._delete_unnamed(unnamed)
        return tuple(made)

    def _store_contents(self, apdus: Iterable[bytes]) -> dict[bytes, int]:
        """One content row for each distinct APDU of ``apdus`` (a large one in a spool
        file); their ids by APDU."""
        distinct = list(dict.fromkeys(apdus))
        rows = [
            {"size": len(apdu), **apdu_columns(self.spool, self.session, apdu)} for apdu in distinct
        ]
        made = sql.INSERT_CONTENTS.insert(connection_of(self.session), rows)
        return {apdu: row.id for apdu, row in zip(distinct, made, strict=True)}

    def list(self, user: str, *, unread_only: bool = False) -> tuple[MailboxSummary, ...]:
        """``user``'s entries, most urgent first, then in delivery order."""
        statement = sql.listing(user, unread_only=unread_only)
        return tuple(_summary(row) for row in self.session.execute(statement))

    def since(self, user: str, after: int, *, limit: int = 100) -> tuple[MailboxSummary, ...]:
        """``user``'s entries numbered above ``after``, in delivery order, at most
        ``limit`` of them (a watching user agent's next ones).

        Entry numbers follow the order of commits: the daemon writes through one thread
        (:mod:`mta.database`), so an entry never becomes visible below one already seen.
        """
        statement = sql.since(user, after, limit)
        return tuple(_summary(row) for row in self.session.execute(statement))

    def newest_id(self, user: str) -> int:
        """The number of ``user``'s newest entry; 0 when the mailbox is empty."""
        newest = self.session.scalar(sql.newest_id(user))
        return int(newest or 0)

    def read(self, user: str | None, entry_id: int) -> MailboxMessage | None:
        """One entry of ``user``'s (of anyone's when None) with its bytes, or None (marking
        it read is separate)."""
        row = self.session.execute(sql.entry(user, entry_id)).first()
        if row is None:
            return None
        return MailboxMessage(
            **_summary_fields(row),
            apdu=stored_apdu(self.spool, row.apdu, row.apdu_file, _what(row)),
        )

    def mark_read(self, user: str, entry_ids: Sequence[int], *, read: bool = True) -> int:
        """Set (or clear) the read flag of entries of ``user``'s; how many changed."""
        changed = 0
        for part in chunks(sorted(set(entry_ids))):
            result = self.session.execute(sql.mark_read(user, part, read=read))
            changed += cast(CursorResult[Any], result).rowcount
        return changed

    def delete(self, user: str, entry_ids: Sequence[int]) -> int:
        """Delete entries of ``user``'s; how many were deleted.

        The (MTS identifier, user) key goes with the entry: a duplicate transfer arriving
        later is caught by the transit queue's received keys, not here.
        """
        files: list[str | None] = []
        contents: set[int] = set()
        deleted = 0
        for part in chunks(sorted(set(entry_ids))):
            rows = self.session.execute(sql.delete_entries(user, part)).all()
            deleted += len(rows)
            files += [row.apdu_file for row in rows]
            contents.update(row.content_id for row in rows if row.content_id is not None)
        self._discard(files)
        if contents:
            self._delete_unnamed(contents)
        return deleted

    def _delete_unnamed(self, content_ids: Collection[int]) -> None:
        """Delete those of ``content_ids`` that no entry names any more, their files once
        the caller commits; each is locked first (:mod:`store.sql.mailbox`)."""
        files: list[str | None] = []
        for part in chunks(sorted(content_ids)):
            self.session.execute(sql.lock_contents(part)).all()
            files += [
                row.apdu_file for row in self.session.execute(sql.delete_unnamed_contents(part))
            ]
        self._discard(files)

    def _discard(self, files: Sequence[str | None]) -> None:
        if self.spool is not None:
            self.spool.discard_after_commit(self.session, files)

    def unread_count(self, user: str) -> int:
        """How many of ``user``'s entries are unread."""
        count = self.session.scalar(sql.unread_count(user))
        return int(count or 0)


def _summary_fields(row: AnyRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "user": row.user,
        "mts_identifier": row.mts_identifier,
        "kind": row.kind,
        "precedence": Precedence(row.precedence),
        "subject": row.subject,
        "originator": row.originator,
        "security_label": row.security_label,
        "message_type": row.message_type,
        "delivered_at": row.delivered_at,
        "read": row.read,
        "size": row.size,
    }


def _what(row: AnyRow) -> str:
    """How an error names the APDU of an entry."""
    where = "" if row.content_id is None else f" (content {row.content_id})"
    return f"mailbox entry {row.id}{where}"


def _summary(row: AnyRow) -> MailboxSummary:
    return MailboxSummary(**_summary_fields(row))


def _row(delivery: Delivery, now: datetime) -> dict[str, Any]:
    if escape_controls(delivery.user) != delivery.user:
        raise ValueError(f"mailbox name {escape_controls(delivery.user)} has a control character")
    index = delivery.index or index_apdu(
        delivery.apdu, delivery.user, report_precedence=delivery.report_precedence
    )
    return {
        "user": delivery.user,
        "mts_identifier": index.mts_identifier,
        "kind": index.kind,
        "size": len(delivery.apdu),
        "precedence": int(index.precedence),
        "subject": index.subject,
        "originator": index.originator,
        "security_label": index.security_label,
        "message_type": index.message_type,
        "delivered_at": now,
        "read": False,
        "apdu_file": None,
        "apdu": b"",
    }


# --- indexing --------------------------------------------------------------------------


def _never(_: str) -> bool:
    return False


def index_apdu(
    apdu: bytes,
    user: str,
    *,
    report_precedence: Precedence = REPORT_PRECEDENCE,
    is_probe: Callable[[str], bool] = _never,
) -> MailboxIndex:
    """What ``user``'s listing shows of ``apdu`` (a message or a report; a report is
    listed at ``report_precedence``, its subject's when the caller knows it, and as a
    probe report when ``is_probe`` says its subject is a probe, X.411 8.3.1.2).

    Raises :class:`p1.errors.DecodeError` if ``apdu`` is not an MTS-APDU, ValueError for
    a probe.
    """
    decoded = decode_mts_apdu(apdu)
    if isinstance(decoded, Report):
        return MailboxIndex(
            mts_identifier=decoded.mts_identifier.text,
            kind=ApduKind.REPORT,
            precedence=report_precedence,
            subject=_report_subject(decoded, is_probe(decoded.content.subject_identifier.text)),
            originator=None,
            security_label=_security_label(decoded.envelope.extensions),
        )
    if isinstance(decoded, Probe):
        raise ValueError(f"probe {decoded.mts_identifier.text} cannot be delivered")
    return index_message(decoded.envelope, decoded.content, (user,))[0]


def _report_subject(report: Report, probe: bool) -> str:
    """What a listing says of a report: its kind and the message (or probe) it is about."""
    outcomes = [r.delivered for r in report.content.recipients]
    delivered = sum(outcomes)
    subject = report.content.subject_identifier.text
    if probe:
        if delivered == len(outcomes):
            what = "would be delivered"
        elif delivered == 0:
            what = "would not be delivered"
        else:
            what = f"{delivered} would be delivered, {len(outcomes) - delivered} not"
        return escape_controls(f"probe report on {subject}: {what}")
    if delivered == len(outcomes):
        what = "delivery report"
    elif delivered == 0:
        what = "non-delivery report"
    else:
        what = f"report ({delivered} delivered, {len(outcomes) - delivered} not)"
    return escape_controls(f"{what} on {subject}")


def index_message(
    envelope: MessageEnvelope, content_octets: bytes | memoryview, users: Sequence[str]
) -> tuple[MailboxIndex, ...]:
    """What each of ``users``' listings shows of a message with this envelope and
    content (as :func:`index_apdu` reads them from its APDU); the content is decoded
    once."""
    deviations: Deviations = []
    content = _content(envelope, content_octets, deviations)
    heading = content if isinstance(content, Heading) else None
    subject = (
        None if heading is None or heading.subject is None else escape_controls(heading.subject)
    )
    originator = _originator(content, envelope)
    label = _security_label(envelope.extensions)
    message_type = None if heading is None else _message_type(heading.message_type)
    precedence = _HeadingPrecedence(heading)
    return tuple(
        MailboxIndex(
            mts_identifier=envelope.mts_identifier.text,
            kind=ApduKind.MESSAGE,
            precedence=_or(precedence.of(user), envelope.precedence),
            subject=subject,
            originator=originator,
            security_label=label,
            message_type=message_type,
            deviations=_located(deviations, content),
        )
        for user in users
    )


def _located(deviations: Deviations, content: Heading | IPN | None) -> tuple[Deviation, ...]:
    """Deviations named from the content's top (``IPM.heading.expiry-time``), as the
    envelope's are."""
    top = "IPN" if isinstance(content, IPN) else "IPM.heading"
    return tuple(Deviation(f"{top}.{d.field}", d.found, d.read_as) for d in deviations)


def _security_label(extensions: Sequence[ExtensionField]) -> str | None:
    """The message-security-label (X.411 8.5.9) in one line; one that does not decode
    is listed as such (the message is delivered all the same)."""
    extension = find_extension(extensions, StandardExtension.MESSAGE_SECURITY_LABEL)
    if extension is None:
        return None
    try:
        return escape_controls(decode_security_label_extension(extension).describe())
    except DecodeError:
        return UNDECODABLE_LABEL


def _message_type(value: MessageType | None) -> str | None:
    """STANAG 4406 Annex A message-type as text: ``exercise``, ``operation OP-ALPHA``, or
    ``type 200`` for a national value."""
    if value is None:
        return None
    try:
        name = TypeMessage(value.type).name.lower()
    except ValueError:
        name = f"type {value.type}"
    return name if value.identifier is None else f"{name} {escape_controls(value.identifier)}"


def _content(
    envelope: MessageEnvelope, octets: bytes | memoryview, deviations: Deviations
) -> Heading | IPN | None:
    """The IPM's heading or the IPN: what the listing shows (the body is not decoded);
    what was tolerated is appended to ``deviations``."""
    content_type = envelope.content_type
    if content_type not in _IPM_CONTENT_TYPES:
        return None
    try:
        return decode_content_heading(octets, content_type, deviations=deviations)
    except DecodeError:
        return None  # delivered all the same; the user's agent shows what it can


def _or(given: Precedence | None, otherwise: Precedence) -> Precedence:
    """``given`` unless it is None (deferred is 0, so ``or`` would pass it over)."""
    return otherwise if given is None else given


class _HeadingPrecedence:
    """The precedence the originator gave each user.

    STANAG 4406 Annex A: primary-precedence for action recipients, copy-precedence for
    information (copy and blind copy) recipients.  A user the heading does not name (a
    list member, say) gets the primary precedence.  The heading's names are read once
    for all users of a message.
    """

    def __init__(self, heading: Heading | None) -> None:
        self.heading = heading
        self.copies: frozenset[str] = frozenset()
        if heading is None or heading.copy_precedence is None:
            return
        primary = {r.name.canonical for r in heading.primary_recipients if r.name is not None}
        self.copies = frozenset(
            r.name.canonical
            for r in (*heading.copy_recipients, *heading.blind_copy_recipients)
            if r.name is not None and r.name.canonical not in primary
        )

    def of(self, user: str) -> Precedence | None:
        """``user``'s precedence; None when there is no heading."""
        heading = self.heading
        if heading is None:
            return None
        if heading.copy_precedence is not None and user in self.copies:
            return heading.copy_precedence
        return heading.primary_precedence


def _originator(content: Heading | IPN | None, envelope: MessageEnvelope) -> str | None:
    descriptor: ORDescriptor | None = None
    if isinstance(content, Heading):
        descriptor = content.originator
    elif isinstance(content, IPN):
        descriptor = content.ipn_originator
    if descriptor is not None:
        if descriptor.formal_name is not None:
            return _name_text(descriptor.formal_name)
        if descriptor.free_form_name:
            return escape_controls(descriptor.free_form_name)
    return _name_text(envelope.originator_name)


def _name_text(name: ORName) -> str:
    try:
        return format_orname(name)
    except (DecodeError, ValueError):
        return name.canonical  # a name text cannot spell (a value out of its character set)
