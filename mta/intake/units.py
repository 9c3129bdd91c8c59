"""The daemon's units of work on the store: each one transaction, committed before it returns.

These are synchronous functions the daemon runs in its database thread
(:class:`mta.database.Database`).  Those named ``*_in`` run in the caller's transaction, so
that the database thread can commit several units at once (group commit); the others
open their own.  Each leaves the store consistent on its own: what it
returns has been committed, so the caller may then acknowledge (a transfer, a
submission) or act (send, report), and a crash at any point loses nothing:

- :meth:`Units.receive_and_deliver_in` / :meth:`Units.submit_in`: take a transfer or a
  submission in: queue what intake planned, deliver its local recipients, and queue the
  non-delivery reports on the recipients it rejected (nothing acknowledged is lost);
- :meth:`Units.quarantine_in`: keep a transfer that cannot be taken in, with the
  non-delivery report its envelope still allows (:mod:`mta.intake.quarantine`);
- :meth:`Units.too_long_in`: a transfer over ``max_message_size``: its message is
  non-delivered (content-too-long) from its envelope alone, with the report;
- :meth:`Units.claim_in` / :meth:`Units.transferred_in` / :meth:`Units.put_back`:
  transfers to a peer (claimed in flight, a few at a time, then transferred, or pending
  again for a later attempt); :meth:`Units.non_deliver`: a claimed message the peer can
  never take (it cannot be down-graded for a 1984 MTA), failed with its report;
- :meth:`Units.deliver_local_in`: local recipients left pending (a probe, a report that
  did not decode) into their mailboxes, with the delivery reports they asked for;
- :meth:`Units.expire`: recipients past their expiry time, with non-delivery reports.

Durability: what this MTA acknowledges (a submission, a transfer received) is flushed to
disk before the acknowledgement, and so is a local delivery (a user may have read it);
claims, transfers marked done, defers and expiries are not flushed on their own
(:func:`store.db.transaction` ``durable=False``): a crash of the process keeps them, a
power cut may undo them, and undone they are simply redone (a message sent again is
dropped by the peer as a duplicate).

Public API::

    Units(engine, site, *, owner, metrics=None)      .metrics: the daemon's counters
        .receive_and_deliver_in(session, *, apdu, now, origin_peer, envelope=None)
                    -> (Plan, Enqueued | None, LocalOutcome | None)
        .submit_in(session, *, request, now)
                    -> (mts identifier, Plan, Enqueued | None, LocalOutcome | None)
        .quarantine_in(session, *, apdu, peer, reason, now, bounds) -> Kept
        .too_long_in(session, *, subject, peer, now) -> (reported, what became of it)
        .claim_in(session, *, peer, precedences, now, limit, transferred, max_octets)
                    -> tuple[QueueEntry, ...]
        .transferred_in(session, *, entries, peer, now)
        .deliver_local_in(session, *, now, limit) -> list[LocalOutcome]
        .backlog(peer, precedences, now) -> int
        .put_back(*, transferred, failed, error, next_attempt_at, now, peer, unsent)
        .non_deliver(entry, report, *, why, now, peer, transferred) -> bool
        .expire(now) -> int
        .recover(now) -> int
    transfer_apdu(entry) -> bytes   the APDU with responsibility for the claimed recipients
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from config.schema import QuarantineLimits
from mta.intake.plan import Plan, Site, plan_intake, plan_report, plan_submission, precedence_of
from mta.intake.quarantine import INVALID_ENVELOPE, Kept, keep_in, non_delivered
from mta.intake.reports import Outcome, build_report, indicators_from, wants_report
from mta.intake.submission import SubmitRequest, build_submission
from mta.operator.metrics import Metrics
from p1.ber import Deviation
from p1.errors import DecodeError
from p1.mts.envelope import (
    MessageEnvelope,
    MTSIdentifier,
    Probe,
    RecipientField,
    Report,
    encode_mts_apdu,
    message_content,
    peek_envelope,
    replace_message_envelope,
)
from p1.mts.orname import parse_orname
from p1.mts.precedence import Precedence
from p1.mts.report import (
    DeliveryReport,
    NonDeliveryDiagnostic,
    NonDeliveryReason,
    NonDeliveryReport,
)
from p1.mts.salvage import salvage_subject
from store import (
    LOCAL_ROUTE,
    ApduKind,
    AuditEvent,
    AuditLog,
    Delivery,
    Enqueued,
    MessageStore,
    QueueEntry,
    QueueRecipient,
    TransitQueue,
    transaction,
)
from store.audit import AuditRecord
from store.mailbox import UNDECODABLE, MailboxIndex, index_apdu, index_message
from store.queue import NewMessage, NewRecipient

__all__ = ["LocalOutcome", "Units", "transfer_apdu"]

log = logging.getLogger("aiox400.queue")

_ALL = tuple(Precedence)
CONTENT_TOO_LONG = NonDeliveryReport(
    reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
    diagnostic_code=NonDeliveryDiagnostic.CONTENT_TOO_LONG,
)
"""The non-delivery of a message longer than a peer, or this MTA, takes (X.411
8.3.1.2.1.10 content-too-long: the content exceeds a length the MTS imposes)."""
_LOCAL_ID_OCTETS = 10  # 20 hex digits, well inside ub-local-id (32)


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalOutcome:
    """One APDU handled by local delivery (for the log)."""

    mts_identifier: str
    kind: ApduKind
    precedence: Precedence
    users: tuple[str, ...]
    """Mailboxes it went into."""
    reported: bool
    """A delivery report was queued."""
    deviations: tuple[Deviation, ...] = ()
    """What its heading held outside the standard's form, read all the same (for the
    log: :class:`mta.inbound.tolerance.ToleranceLog`)."""


class Units:
    """Units of work on one store, for one MTA (see the module docstring)."""

    def __init__(
        self,
        engine: Engine,
        site: Site,
        *,
        owner: str | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.engine = engine
        self.site = site
        self.owner = owner
        self.metrics = metrics or Metrics()

    def new_identifier(self) -> MTSIdentifier:
        """A fresh MTS identifier in this MTA's domain (random: unique across restarts)."""
        return MTSIdentifier(
            global_domain_identifier=self.site.domain,
            local_identifier=secrets.token_hex(_LOCAL_ID_OCTETS),
        )

    # --- intake ------------------------------------------------------------------------

    def _enqueue(
        self,
        session: Session,
        plans: Sequence[Plan],
        now: datetime,
        event: AuditEvent,
        journal: list[AuditRecord],
        *,
        delivered_route: str | None = None,
    ) -> tuple[Enqueued, ...]:
        """Queue ``plans``; their audit records go to ``journal`` (the caller writes it, so
        that one statement carries a unit's records).  ``delivered_route``: see
        :meth:`store.TransitQueue.enqueue_many`."""
        messages = [p.message for p in plans if p.message is not None]
        results = TransitQueue(session).enqueue_many(messages, now, delivered_route=delivered_route)
        journal += (
            AuditRecord(
                at=now,
                event=AuditEvent.DUPLICATE if not result.queued else event,
                mts_identifier=message.mts_identifier,
                peer=message.origin_peer,
                detail=_recipients_detail(result),
            )
            for message, result in zip(messages, results, strict=True)
        )
        for plan in plans:
            if plan.rejected and plan.subject is not None:
                _log_rejected(plan.subject, plan.rejected, plan.why)
                self._report(session, plan.subject, plan.rejected, plan.arrival, now, journal)
        return results

    def _report(
        self,
        session: Session,
        subject: MessageEnvelope | Probe,
        outcomes: Sequence[Outcome],
        arrival: datetime,
        now: datetime,
        journal: list[AuditRecord],
    ) -> bool:
        """Queue the report on ``outcomes`` if they asked for one; whether one was queued."""
        report = build_report(
            subject,
            outcomes,
            identifier=self.new_identifier(),
            domain=self.site.domain,
            arrival=arrival,
            now=now,
        )
        journal += (
            AuditRecord(
                at=now,
                event=AuditEvent.FAILED,
                mts_identifier=subject.mts_identifier.text,
                recipient=outcome.recipient.canonical,
                detail=_non_delivery_text(outcome.report),
            )
            for outcome in outcomes
            if isinstance(outcome.report, NonDeliveryReport)
        )
        if report is None:
            return False
        precedence = precedence_of(subject, self.site)
        plan = plan_report(report, self.site, precedence=precedence, now=now)
        if plan.message is None:
            log.warning("report on %s dropped: %s", subject.mts_identifier.text, plan.why)
            return False
        TransitQueue(session).enqueue(plan.message, now)
        self.metrics.report_queued(session, outcomes[0].report)
        journal.append(
            AuditRecord(
                at=now,
                event=AuditEvent.REPORTED,
                mts_identifier=report.mts_identifier.text,
                recipient=plan.message.originator,
                detail=f"on {subject.mts_identifier.text}",
            )
        )
        return True

    def receive_and_deliver_in(
        self,
        session: Session,
        *,
        apdu: bytes,
        now: datetime,
        origin_peer: str | None,
        envelope: MessageEnvelope | Probe | Report | None = None,
    ) -> tuple[Plan, Enqueued | None, LocalOutcome | None]:
        """Take ``apdu`` (from a peer, or the local API): plan it, queue it, and deliver its
        local recipients, in the caller's transaction (one commit between the peer's
        transfer and the user's mailbox).  Raises :class:`mta.intake.plan.IntakeError` when it
        cannot be taken (nothing is written).

        A message's local recipients are recorded as delivered as they are queued, never
        claimed, and their mailbox entries are indexed from the envelope intake decoded.
        What cannot be delivered so (a probe, a report that does not decode) stays
        pending for the local deliverer, which reports what is wrong.  ``envelope``:
        the APDU's, if the caller decoded it already.
        """
        plan = self._plan(session, apdu, now, origin_peer, envelope)
        event = _intake_event(origin_peer)
        result, delivered = self._take_and_deliver(session, plan, now, event, content=None)
        return plan, result, delivered

    def _plan(
        self,
        session: Session,
        apdu: bytes,
        now: datetime,
        origin_peer: str | None,
        envelope: MessageEnvelope | Probe | Report | None = None,
    ) -> Plan:
        """:func:`mta.intake.plan.plan_intake`, a report at its subject's queued precedence."""
        return plan_intake(
            apdu,
            self.site,
            origin_peer=origin_peer,
            now=now,
            subject_precedence=lambda subject: TransitQueue(session).subject_precedence(subject),
            envelope=envelope,
        )

    def _take_and_deliver(
        self,
        session: Session,
        plan: Plan,
        now: datetime,
        event: AuditEvent,
        *,
        content: bytes | None,
    ) -> tuple[Enqueued | None, LocalOutcome | None]:
        """Queue ``plan`` with its local recipients delivered (``content``: the message's
        content octets if the caller has them); the audit records in one statement."""
        journal: list[AuditRecord] = []
        indexes = _local_indexes(plan, content)
        route = None if indexes is None else LOCAL_ROUTE
        results = self._enqueue(session, (plan,), now, event, journal, delivered_route=route)
        result = results[0] if results else None
        outcome = None
        if indexes is not None and result is not None and result.message_id is not None:
            outcome = self._deliver_taken(session, plan, result, indexes, now, journal)
        AuditLog(session).record_many(journal)
        return result, outcome

    def _deliver_taken(
        self,
        session: Session,
        plan: Plan,
        result: Enqueued,
        indexes: Mapping[str, MailboxIndex],
        now: datetime,
        journal: list[AuditRecord],
    ) -> LocalOutcome:
        """Mailbox entries for the local recipients just queued as delivered, and the
        delivery report they asked for."""
        message = plan.message
        assert message is not None
        fresh = set(result.queued)
        local = [r for r in message.recipients if r.route == LOCAL_ROUTE and r.recipient in fresh]
        users = tuple(dict.fromkeys(r.recipient for r in local))
        MessageStore(session).deliver_many(
            [Delivery(user=u, apdu=message.apdu, index=indexes[u]) for u in users], now
        )
        reported = message.kind is ApduKind.MESSAGE and self._delivery_report(
            session, local, lambda: plan.subject, plan.arrival, now, journal
        )
        journal += _delivered_records(message.mts_identifier, users, now)
        return LocalOutcome(
            mts_identifier=message.mts_identifier,
            kind=message.kind,
            precedence=message.precedence,
            users=users,
            reported=reported,
            deviations=indexes[users[0]].deviations if users else (),
        )

    def submit_in(
        self, session: Session, *, request: SubmitRequest, now: datetime
    ) -> tuple[str, Plan, Enqueued | None, LocalOutcome | None]:
        """Give a local submission its identifier and envelope, and take it in as
        :meth:`receive_and_deliver_in` takes a transfer.

        The envelope just built is planned as it is (:func:`mta.intake.plan.plan_submission`),
        not encoded and read back.
        """
        message = build_submission(request, identifier=self.new_identifier(), table=self.site.table)
        plan = plan_submission(message, self.site, now=now)
        result, delivered = self._take_and_deliver(
            session, plan, now, AuditEvent.SUBMITTED, content=message.content
        )
        return message.envelope.mts_identifier.text, plan, result, delivered

    def quarantine_in(
        self,
        session: Session,
        *,
        apdu: bytes,
        peer: str,
        reason: str,
        now: datetime,
        bounds: QuarantineLimits,
    ) -> Kept:
        """Keep ``apdu`` from ``peer``, which cannot be taken in because of ``reason``, in
        the quarantine (:func:`mta.intake.quarantine.keep_in`), and queue the non-delivery report
        on its responsible recipients that its envelope allows (X.411 12.2.1.3), in the
        caller's transaction; ``report`` of the result says what became of it.  A copy
        sent again (its confirmation lost) is kept again, and not reported on again (the
        recipients' duplicate-detection keys are recorded with the first report)."""
        kept = keep_in(session, apdu=apdu, peer=peer, reason=reason, now=now, bounds=bounds)
        if kept.entry_id is None:
            return kept
        salvage = salvage_subject(apdu)
        if salvage.subject is None:
            return dataclasses.replace(kept, report=f"no report: {salvage.why}")
        journal: list[AuditRecord] = []
        reported, report = self._report_responsible(
            session,
            salvage.subject,
            peer,
            INVALID_ENVELOPE,
            "the envelope cannot be taken in",
            now,
            journal,
        )
        AuditLog(session).record_many(journal)
        return dataclasses.replace(kept, reported=reported, report=report)

    def too_long_in(
        self, session: Session, *, subject: MessageEnvelope, peer: str, now: datetime
    ) -> tuple[bool, str]:
        """Take responsibility for a message from ``peer`` too long to be taken in (over
        ``max_message_size``), of which only the envelope was read: its responsible
        recipients are non-delivered with unable-to-transfer, content-too-long (X.411
        8.3.1.2.1.9, 8.3.1.2.1.10) and the report they ask for is queued, in the caller's
        transaction.  Whether a report was queued, and what became of it, for the log.

        The recipients' duplicate-detection keys are recorded as for a message taken in:
        a peer that re-sends the message (its confirmation was lost) gets it confirmed
        again, and the originator no second report."""
        journal = [
            AuditRecord(
                at=now,
                event=AuditEvent.RECEIVED,
                mts_identifier=subject.mts_identifier.text,
                peer=peer,
                detail="over max_message_size: not taken in",
            )
        ]
        result = self._report_responsible(
            session, subject, peer, CONTENT_TOO_LONG, "over max_message_size", now, journal
        )
        AuditLog(session).record_many(journal)
        return result

    def _report_responsible(
        self,
        session: Session,
        subject: MessageEnvelope | Probe,
        peer: str,
        report: NonDeliveryReport,
        why: str,
        now: datetime,
        journal: list[AuditRecord],
    ) -> tuple[bool, str]:
        """Non-deliver the responsible recipients of ``subject``, from ``peer``, with
        ``report`` (``why``: for the log): whether a report was queued, and what became
        of it, for the log.  Their duplicate-detection keys are recorded here: those of a
        copy sent again are there already, and it is not reported on again."""
        outcomes = non_delivered(subject, report)
        if not outcomes:
            return False, "no report: no recipient this MTA is responsible for"
        fresh = TransitQueue(session).record_received(
            subject.mts_identifier.text, [o.recipient.canonical for o in outcomes], peer, now
        )
        outcomes = tuple(o for o in outcomes if o.recipient.canonical in fresh)
        if not outcomes:
            return False, "no report: a copy received again, reported on when first received"
        _log_rejected(subject, outcomes, why)
        if self._report(session, subject, outcomes, now, now, journal):
            return True, "non-delivery report queued"
        if any(wants_report(o.indicators, o.report) for o in outcomes):
            return False, "no report: no route to the originator"
        return False, "no report: none asked for"

    # --- transfer to peers -------------------------------------------------------------

    def claim_in(
        self,
        session: Session,
        *,
        peer: str,
        precedences: Collection[Precedence],
        now: datetime,
        limit: int = 1,
        transferred: Sequence[QueueEntry] = (),
        max_octets: int | None = None,
    ) -> tuple[QueueEntry, ...]:
        """Claim up to ``limit`` messages for ``peer`` at these precedences (most urgent,
        oldest first), first marking ``transferred`` as :meth:`transferred_in` does: a
        connection's next claim commits with its last confirmations (one transaction per
        claim instead of one per message).
        ``max_octets``: see :meth:`store.queue.TransitQueue.claim_next`."""
        if transferred:
            self.transferred_in(session, entries=transferred, peer=peer, now=now)
        return TransitQueue(session).claim_next(
            peer, precedences, now, limit=limit, owner=self.owner, max_octets=max_octets
        )

    def backlog(self, peer: str, precedences: Collection[Precedence], now: datetime) -> int:
        """Messages due for ``peer`` at these precedences."""
        with transaction(self.engine, read_only=True) as session:
            return TransitQueue(session).backlog(peer, precedences, now)

    def transferred_in(
        self, session: Session, *, entries: Sequence[QueueEntry], peer: str, now: datetime
    ) -> None:
        """The peer confirmed the transfer of ``entries``: it is responsible now."""
        TransitQueue(session).mark_transferred(
            [i for entry in entries for i in entry.recipient_ids], now
        )
        AuditLog(session).record_many(
            AuditRecord(
                at=now,
                event=AuditEvent.TRANSFERRED,
                mts_identifier=entry.mts_identifier,
                peer=peer,
                detail=f"{len(entry.recipients)} recipient(s)",
            )
            for entry in entries
        )

    def put_back(
        self,
        *,
        transferred: Sequence[QueueEntry],
        failed: QueueEntry | None,
        error: str,
        next_attempt_at: datetime | None,
        now: datetime,
        peer: str = "",
        unsent: Sequence[QueueEntry] = (),
    ) -> None:
        """A connection failed while transferring ``failed``: mark what the peer confirmed
        before, defer ``failed`` until ``next_attempt_at`` (None: retry it at once, its
        attempt not counted, :meth:`store.queue.TransitQueue.retry_at_once`), and make
        ``unsent`` (claimed with it, never attempted) pending again at once.  ``failed``
        None: the connection failed before any of its claim was attempted."""
        with transaction(self.engine, durable=False) as session:
            if transferred:
                self.transferred_in(session, entries=transferred, peer=peer, now=now)
            queue = TransitQueue(session)
            if failed is not None:
                self._defer(queue, failed, error, next_attempt_at, now)
                AuditLog(session).record(
                    AuditEvent.DEFERRED, now, mts_identifier=failed.mts_identifier, detail=error
                )
            queue.unclaim([i for entry in unsent for i in entry.recipient_ids], now)

    def non_deliver(
        self,
        entry: QueueEntry,
        report: NonDeliveryReport | None,
        *,
        why: str,
        now: datetime,
        peer: str,
        transferred: Sequence[QueueEntry] = (),
    ) -> bool:
        """The claimed ``entry`` can never be transferred to ``peer`` (it cannot be
        down-graded for a 1984 MTA, say): its recipients fail with ``report``, reported
        to the originator when asked (None, and for a report: no report), in the same
        transaction that marks ``transferred`` (confirmed before it) done.  Whether a
        report was queued."""
        with transaction(self.engine, durable=False) as session:
            if transferred:
                self.transferred_in(session, entries=transferred, peer=peer, now=now)
            TransitQueue(session).fail(entry.recipient_ids, error=why, now=now)
            journal: list[AuditRecord] = []
            subject = _subject(entry)
            queued = False
            if subject is not None and report is not None:
                outcomes = [_outcome(r, subject, report) for r in entry.recipients]
                queued = self._report(session, subject, outcomes, entry.arrival_time, now, journal)
            else:
                journal.append(
                    AuditRecord(
                        at=now,
                        event=AuditEvent.FAILED,
                        mts_identifier=entry.mts_identifier,
                        peer=peer,
                        detail=why,
                    )
                )
            AuditLog(session).record_many(journal)
        return queued

    @staticmethod
    def _defer(
        queue: TransitQueue,
        failed: QueueEntry,
        error: str,
        next_attempt_at: datetime | None,
        now: datetime,
    ) -> None:
        ids = failed.recipient_ids
        if next_attempt_at is None:
            queue.retry_at_once(ids, error=error, now=now)
        else:
            queue.defer(ids, next_attempt_at=next_attempt_at, error=error, now=now)

    # --- local delivery ----------------------------------------------------------------

    def deliver_local_in(
        self, session: Session, *, now: datetime, limit: int = 50
    ) -> list[LocalOutcome]:
        """Deliver up to ``limit`` local APDUs left pending, with their delivery reports."""
        queue = TransitQueue(session)
        entries = queue.claim_next(LOCAL_ROUTE, _ALL, now, limit=limit, owner=self.owner)
        journal: list[AuditRecord] = []
        outcomes = [self._deliver(session, entry, now, journal) for entry in entries]
        AuditLog(session).record_many(journal)
        return outcomes

    def _deliver(
        self, session: Session, entry: QueueEntry, now: datetime, journal: list[AuditRecord]
    ) -> LocalOutcome:
        users = tuple(r.recipient for r in entry.recipients)
        reported = False
        if entry.kind is not ApduKind.PROBE:  # a probe is only reported on, never delivered
            MessageStore(session).deliver_many(
                [
                    Delivery(user=user, apdu=entry.apdu, index=_mailbox_index(entry, user))
                    for user in users
                ],
                now,
            )
        if entry.kind is not ApduKind.REPORT:
            reported = self._delivery_report(
                session, entry.recipients, lambda: _subject(entry), entry.arrival_time, now, journal
            )
        TransitQueue(session).mark_delivered(entry.recipient_ids, now)
        journal += _delivered_records(entry.mts_identifier, users, now)
        return LocalOutcome(
            mts_identifier=entry.mts_identifier,
            kind=entry.kind,
            precedence=entry.precedence,
            users=users,
            reported=reported,
        )

    def _delivery_report(
        self,
        session: Session,
        recipients: Sequence[QueueRecipient | NewRecipient],
        subject: Callable[[], MessageEnvelope | Probe | None],
        arrival: datetime,
        now: datetime,
        journal: list[AuditRecord],
    ) -> bool:
        """Queue the delivery report ``recipients`` asked for, if any; whether one was.
        ``subject`` gives the envelope, read only when a report is wanted."""
        delivered = DeliveryReport(message_delivery_time=now)
        wanted = (indicators_from(r.report_request) for r in recipients)
        if not any(wants_report(indicators, delivered) for indicators in wanted):
            return False  # (without decoding the envelope again)
        envelope = subject()
        if envelope is None:
            return False
        outcomes = [_outcome(r, envelope, delivered) for r in recipients]
        return self._report(session, envelope, outcomes, arrival, now, journal)

    # --- expiry and restart ------------------------------------------------------------

    def expire(self, now: datetime) -> int:
        """Non-deliver recipients past their expiry time; how many."""
        expired_report = NonDeliveryReport(
            reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
            diagnostic_code=NonDeliveryDiagnostic.MAXIMUM_TIME_EXPIRED,
        )
        with transaction(self.engine, durable=False) as session:
            entries = TransitQueue(session).expire_due(now)
            journal: list[AuditRecord] = []
            for entry in entries:
                subject = _subject(entry)
                if subject is not None:
                    outcomes = [_outcome(r, subject, expired_report) for r in entry.recipients]
                    self._report(session, subject, outcomes, entry.arrival_time, now, journal)
                journal.append(
                    AuditRecord(
                        at=now,
                        event=AuditEvent.EXPIRED,
                        mts_identifier=entry.mts_identifier,
                        detail=", ".join(r.recipient for r in entry.recipients),
                    )
                )
            AuditLog(session).record_many(journal)
        return sum(len(entry.recipients) for entry in entries)

    def recover(self, now: datetime) -> int:
        """At start: recipients left in flight by a crash are pending again."""
        with transaction(self.engine, durable=False) as session:
            count = TransitQueue(session).recover_in_flight(now, owner=self.owner)
            if count:
                AuditLog(session).record(
                    AuditEvent.RECOVERED, now, detail=f"{count} recipient(s) in flight"
                )
        return count


# --- helpers ---------------------------------------------------------------------------


def transfer_apdu(entry: QueueEntry) -> bytes:
    """The APDU to transfer for a claimed ``entry``: this hop's peer becomes responsible
    for the claimed recipients only (X.411 12.2.1.1.1.3 responsibility bit).

    The envelope is rewritten only when a bit must change; the content stays as received.
    It is not even decoded when the entry claims every recipient of an envelope whose bits
    are all set (:attr:`store.QueueEntry.envelope_recipients`), as for a message taken in
    for one peer only.
    """
    if entry.kind is ApduKind.REPORT or _whole(entry):
        return entry.apdu
    envelope = peek_envelope(entry.apdu)
    assert isinstance(envelope, MessageEnvelope | Probe)
    claimed = {r.recipient_number for r in entry.recipients}
    recipients = tuple(
        _responsible(r, r.originally_specified_recipient_number in claimed)
        for r in envelope.recipients
    )
    if recipients == envelope.recipients:
        return entry.apdu
    if isinstance(envelope, MessageEnvelope):
        return replace_message_envelope(
            entry.apdu, dataclasses.replace(envelope, recipients=recipients)
        )
    return encode_mts_apdu(dataclasses.replace(envelope, recipients=recipients))


def _whole(entry: QueueEntry) -> bool:
    """Whether ``entry`` claims every recipient its envelope names, each bit already set."""
    numbers = {r.recipient_number for r in entry.recipients if r.recipient_number is not None}
    return entry.envelope_recipients is not None and len(numbers) == entry.envelope_recipients


def _responsible(recipient: RecipientField, responsible: bool) -> RecipientField:
    indicators = recipient.per_recipient_indicators
    if indicators.responsibility == responsible:
        return recipient
    return dataclasses.replace(
        recipient,
        per_recipient_indicators=dataclasses.replace(indicators, responsibility=responsible),
    )


def _subject(entry: QueueEntry) -> MessageEnvelope | Probe | None:
    """The envelope of a queued message or probe (None for a report: no report on one)."""
    if entry.kind is ApduKind.REPORT:
        return None
    try:
        envelope = peek_envelope(entry.apdu)
    except DecodeError as error:  # it decoded when queued: the store is damaged
        log.error("%s: queued APDU no longer decodes: %s", entry.mts_identifier, error)
        return None
    return envelope if isinstance(envelope, MessageEnvelope | Probe) else None


def _outcome(
    recipient: QueueRecipient | NewRecipient,
    subject: MessageEnvelope | Probe,
    report: DeliveryReport | NonDeliveryReport,
) -> Outcome:
    """The outcome for a queued recipient, named as the subject's envelope names it."""
    number = recipient.recipient_number
    named = next(
        (
            r.recipient_name
            for r in subject.recipients
            if r.originally_specified_recipient_number == number
        ),
        None,
    )
    return Outcome(
        recipient=named or parse_orname(recipient.recipient),
        number=recipient.recipient_number or 1,
        indicators=indicators_from(recipient.report_request),
        report=report,
    )


def _mailbox_index(entry: QueueEntry, user: str) -> MailboxIndex:
    """What ``user``'s listing shows of the queued ``entry``.  An APDU that was accepted
    is delivered whatever its content holds: when it cannot be indexed, it is stored as
    received and listed with :data:`UNDECODABLE` as its subject."""
    try:
        return index_apdu(entry.apdu, user, report_precedence=entry.precedence)
    except DecodeError as error:
        log.warning("%s: %s for %s: %s", entry.mts_identifier, UNDECODABLE, user, error)
    except Exception:  # a fault of ours: the user still gets the message
        log.exception("%s: %s for %s", entry.mts_identifier, UNDECODABLE, user)
    return MailboxIndex(
        mts_identifier=entry.mts_identifier,
        kind=entry.kind,
        precedence=entry.precedence,
        subject=UNDECODABLE,
        originator=None,
    )


def _local_indexes(plan: Plan, content: bytes | None) -> dict[str, MailboxIndex] | None:
    """The mailbox index of each local recipient of ``plan``, read from what intake
    decoded, before anything is written; None when there is none, or when they are left
    to the local deliverer (a probe, a message whose delivery is deferred, an APDU
    whose content or report cannot be read here)."""
    message = plan.message
    if message is None or all(r.route != LOCAL_ROUTE for r in message.recipients):
        return None
    if message.not_before is not None and message.not_before > plan.arrival:
        return None  # deferred delivery (X.411 12.2.1.1.1.5): delivered when due
    users = [r.recipient for r in message.recipients if r.route == LOCAL_ROUTE]
    try:
        indexes = _indexes(message, plan.subject, content, users)
    except Exception:  # the local deliverer tries again and reports what is wrong
        log.exception("%s: cannot index for immediate delivery", message.mts_identifier)
        return None
    return None if indexes is None else dict(zip(users, indexes, strict=True))


def _indexes(
    message: NewMessage,
    subject: MessageEnvelope | Probe | None,
    content: bytes | None,
    users: Sequence[str],
) -> Sequence[MailboxIndex] | None:
    if message.kind is ApduKind.MESSAGE and isinstance(subject, MessageEnvelope):
        octets = message_content(message.apdu) if content is None else content
        return index_message(subject, octets, users)
    if message.kind is ApduKind.REPORT:
        index = index_apdu(message.apdu, message.originator, report_precedence=message.precedence)
        return [index] * len(users)
    return None


def _delivered_records(
    mts_identifier: str, users: Sequence[str], now: datetime
) -> list[AuditRecord]:
    return [
        AuditRecord(at=now, event=AuditEvent.DELIVERED, mts_identifier=mts_identifier, recipient=u)
        for u in users
    ]


def _log_rejected(subject: MessageEnvelope | Probe, outcomes: Sequence[Outcome], why: str) -> None:
    """One line for the recipients a plan non-delivers, and why."""
    names = ", ".join(outcome.recipient.canonical for outcome in outcomes[:3])
    more = f" and {len(outcomes) - 3} more" if len(outcomes) > 3 else ""
    log.info("%s non-delivered to %s%s: %s", subject.mts_identifier.text, names, more, why)


def _non_delivery_text(report: DeliveryReport | NonDeliveryReport) -> str:
    if isinstance(report, DeliveryReport):
        return "delivered"
    diagnostic = report.diagnostic_name
    return f"non-delivered: {report.reason_name}" + (f", {diagnostic}" if diagnostic else "")


def _intake_event(origin_peer: str | None) -> AuditEvent:
    return AuditEvent.SUBMITTED if origin_peer is None else AuditEvent.RECEIVED


def _recipients_detail(result: Enqueued) -> str:
    parts = []
    if result.queued:
        parts.append("to " + ", ".join(result.queued))
    if result.duplicates:
        parts.append("duplicate for " + ", ".join(result.duplicates))
    return "; ".join(parts)
