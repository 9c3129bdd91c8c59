"""Intake's units of work on the store, run in the database thread (X.411 14, 12.2.1.3).

Each unit runs in the caller's transaction (the database thread commits several at once,
:class:`mta.database.Database`); what it returns has been committed once the unit's batch
is, so the caller may then acknowledge (a transfer, a submission) and a crash at any point
loses nothing:

- :meth:`IntakeUnits.receive_and_deliver_in` / :meth:`IntakeUnits.submit_in`: take a
  transfer or a submission in: queue what intake planned, deliver its local recipients
  at once, and queue the non-delivery reports on the recipients it rejected;
- :meth:`IntakeUnits.quarantine_in`: keep a transfer that cannot be taken in, with the
  non-delivery report its envelope still allows (:mod:`mta.intake.quarantine`);
- :meth:`IntakeUnits.too_long_in`: a transfer over ``max_message_size``: its message is
  non-delivered (content-too-long) from its envelope alone, with the report;
- :meth:`IntakeUnits.report` / :meth:`IntakeUnits.delivery_report`: the reports this MTA
  originates, whoever decides on them (intake, the outbound side, local delivery,
  expiry), enter the queue here and nowhere else.

Durability: what this MTA acknowledges (a submission, a transfer received) is flushed to
disk before the acknowledgement, and so is a local delivery (a user may have read it).

Public API::

    IntakeUnits(site, *, metrics=None)        .site is replaced on reload
        .receive_and_deliver_in(session, *, apdu, now, origin_peer, envelope=None)
                    -> (Plan, Enqueued | None, LocalOutcome | None)
        .prepare(*, apdu, now, origin_peer, envelope, precedence) -> Prepared   (no session)
        .take_prepared_in(session, *, prepared, now) -> the same as receive_and_deliver_in
        .submit_in(session, *, request, now)
                    -> (mts identifier, Plan, Enqueued | None, LocalOutcome | None)
        .quarantine_in(session, *, apdu, peer, reason, now, bounds) -> Kept
        .too_long_in(session, *, subject, peer, now) -> (reported, what became of it)
        .report(session, subject, outcomes, arrival, now, journal) -> bool
        .delivery_report(session, recipients, subject, arrival, now, journal) -> bool
    subject_of(entry) / outcome_for(recipient, subject, report) / delivered_records(...)
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from config.schema import QuarantineLimits
from mta.faults import LogLimiter
from mta.intake.plan import (
    Plan,
    Site,
    plan_intake,
    plan_probe_submission,
    plan_report,
    plan_submission,
    precedence_of,
)
from mta.intake.quarantine import INVALID_ENVELOPE, Kept, keep_in, non_delivered
from mta.intake.reports import Outcome, build_report, indicators_from, wants_report
from mta.intake.routing import Route
from mta.intake.submission import SubmitRequest, build_probe, build_submission
from mta.metrics import Metrics
from p1.ber import Deviation
from p1.errors import DecodeError
from p1.mts.envelope import (
    MessageEnvelope,
    MTSIdentifier,
    Probe,
    Report,
    message_content_view,
    peek_envelope,
)
from p1.mts.orname import format_orname, parse_orname
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
)
from store.audit import AuditRecord
from store.mailbox import MailboxIndex, index_apdu, index_message
from store.queue import NewMessage, NewRecipient

__all__ = [
    "CONTENT_TOO_LONG",
    "IntakeUnits",
    "LocalOutcome",
    "Prepared",
    "delivered_records",
    "outcome_for",
    "subject_of",
]

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
    shown: tuple[str, ...] = ()
    """Their users' O/R names as the envelope gave them, for the log; empty: ``users``."""
    reported: bool
    """A delivery report was queued."""
    deviations: tuple[Deviation, ...] = ()
    """What its heading held outside the standard's form, read all the same (for the
    log: :class:`mta.intake.tolerance.ToleranceLog`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepared:
    """A transfer's plan and its local recipients' mailbox indexes, worked out before
    anything is written (:meth:`IntakeUnits.prepare`)."""

    plan: Plan
    indexes: Mapping[str, MailboxIndex] | None
    """None: its local recipients are left to the local deliverer."""


class IntakeUnits:
    """Intake's units of work, for one MTA (see the module docstring)."""

    def __init__(self, site: Site, *, metrics: Metrics | None = None) -> None:
        self.site = site
        self.metrics = metrics or Metrics()
        self.notes = LogLimiter()
        """Lines a peer's messages can repeat at will, each once a minute."""

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
                detail=_recipients_detail(result, message),
            )
            for message, result in zip(messages, results, strict=True)
        )
        for plan in plans:
            journal += _label_records(plan, now)
            if self.metrics is not None:
                for decision in plan.labels:
                    if not decision.allowed:
                        self.metrics.label_refused(session, decision.peer)
            if plan.rejected and plan.subject is not None:
                _log_rejected(plan.subject, plan.rejected, plan.why)
                self.report(session, plan.subject, plan.rejected, plan.arrival, now, journal)
        return results

    def report(
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
                recipient=format_orname(outcome.recipient),
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
        precedence: Precedence | None = None,
    ) -> tuple[Plan, Enqueued | None, LocalOutcome | None]:
        """Take ``apdu`` (from a peer, or the local API): plan it, queue it, and deliver its
        local recipients, in the caller's transaction (one commit between the peer's
        transfer and the user's mailbox).  Raises :class:`mta.intake.plan.IntakeError` when it
        cannot be taken (nothing is written).

        A message's local recipients are recorded as delivered as they are queued, never
        claimed, and their mailbox entries are indexed from the envelope intake decoded.
        What cannot be delivered so (a probe, a report that does not decode) stays
        pending for the local deliverer, which reports what is wrong.  ``envelope``:
        the APDU's, and ``precedence`` a message's or a probe's, if the caller read them
        already.
        """
        plan = self._plan(session, apdu, now, origin_peer, envelope, precedence)
        event = _intake_event(origin_peer)
        result, delivered = self._take_and_deliver(session, plan, now, event, content=None)
        return plan, result, delivered

    def prepare(
        self,
        *,
        apdu: bytes,
        now: datetime,
        origin_peer: str,
        envelope: MessageEnvelope,
        precedence: Precedence,
    ) -> Prepared:
        """What :meth:`receive_and_deliver_in` works out before it writes, for a message
        from ``origin_peer`` (its plan and its local recipients' mailbox indexes): it
        needs no session, so that the caller may run it outside the database thread and
        hand the result to :meth:`take_prepared_in`.  Raises as
        :meth:`receive_and_deliver_in` does."""
        plan = plan_intake(
            apdu,
            self.site,
            origin_peer=origin_peer,
            now=now,
            envelope=envelope,
            precedence=precedence,
        )
        return Prepared(plan=plan, indexes=_local_indexes(plan, None, self.notes))

    def take_prepared_in(
        self, session: Session, *, prepared: Prepared, now: datetime
    ) -> tuple[Plan, Enqueued | None, LocalOutcome | None]:
        """:meth:`receive_and_deliver_in` of what :meth:`prepare` worked out."""
        result, delivered = self._write(
            session, prepared.plan, now, AuditEvent.RECEIVED, prepared.indexes
        )
        return prepared.plan, result, delivered

    def _plan(
        self,
        session: Session,
        apdu: bytes,
        now: datetime,
        origin_peer: str | None,
        envelope: MessageEnvelope | Probe | Report | None = None,
        precedence: Precedence | None = None,
    ) -> Plan:
        """:func:`mta.intake.plan.plan_intake`, a report at its subject's queued precedence."""
        return plan_intake(
            apdu,
            self.site,
            origin_peer=origin_peer,
            now=now,
            subject_precedence=lambda subject: TransitQueue(session).subject_precedence(subject),
            envelope=envelope,
            precedence=precedence,
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
        return self._write(session, plan, now, event, _local_indexes(plan, content, self.notes))

    def _write(
        self,
        session: Session,
        plan: Plan,
        now: datetime,
        event: AuditEvent,
        indexes: Mapping[str, MailboxIndex] | None,
    ) -> tuple[Enqueued | None, LocalOutcome | None]:
        """Queue ``plan``, its local recipients delivered with ``indexes`` (None: left
        to the local deliverer)."""
        journal: list[AuditRecord] = []
        route = None if indexes is None else LOCAL_ROUTE
        results = self._enqueue(session, (plan,), now, event, journal, delivered_route=route)
        result = results[0] if results else None
        outcome = None
        if indexes is not None and result is not None and result.message_id is not None:
            indexes = _probe_reports(plan, indexes, TransitQueue(session).is_probe)
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
        shown: dict[str, str] = {}
        for r in local:
            shown.setdefault(r.recipient, r.display)
        users = tuple(shown)
        MessageStore(session).deliver_many(
            [Delivery(user=u, apdu=message.apdu, index=indexes[u]) for u in users], now
        )
        reported = message.kind is ApduKind.MESSAGE and self.delivery_report(
            session, local, lambda: plan.subject, plan.arrival, now, journal
        )
        journal += delivered_records(message.mts_identifier, tuple(shown.values()), now)
        return LocalOutcome(
            mts_identifier=message.mts_identifier,
            kind=message.kind,
            precedence=message.precedence,
            users=users,
            shown=tuple(shown.values()),
            reported=reported,
            deviations=indexes[users[0]].deviations if users else (),
        )

    def submit_in(
        self,
        session: Session,
        *,
        request: SubmitRequest,
        now: datetime,
        routes: Mapping[str, Route] | None = None,
    ) -> tuple[str, Plan, Enqueued | None, LocalOutcome | None]:
        """Give a local submission its identifier and envelope, and take it in as
        :meth:`receive_and_deliver_in` takes a transfer.

        The envelope just built is planned as it is (:func:`mta.intake.plan.plan_submission`),
        not encoded and read back.
        """
        if request.probe:
            probe = build_probe(request, identifier=self.new_identifier())
            plan = plan_probe_submission(
                probe, self.site, now=now, routes=routes, precedence=request.precedence
            )
            result, delivered = self._take_and_deliver(
                session, plan, now, AuditEvent.SUBMITTED, content=None
            )
            return probe.probe_identifier.text, plan, result, delivered
        message = build_submission(request, identifier=self.new_identifier(), table=self.site.table)
        plan = plan_submission(
            message, self.site, now=now, routes=routes, precedence=request.precedence
        )
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
        if self.report(session, subject, outcomes, now, now, journal):
            return True, "non-delivery report queued"
        if any(wants_report(o.indicators, o.report) for o in outcomes):
            return False, "no report: no route to the originator"
        return False, "no report: none asked for"

    def delivery_report(
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
        outcomes = [outcome_for(r, envelope, delivered) for r in recipients]
        return self.report(session, envelope, outcomes, arrival, now, journal)


def subject_of(entry: QueueEntry) -> MessageEnvelope | Probe | None:
    """The envelope of a queued message or probe (None for a report: no report on one)."""
    if entry.kind is ApduKind.REPORT:
        return None
    try:
        envelope = peek_envelope(entry.apdu_bytes)
    except DecodeError as error:  # it decoded when queued: the store is damaged
        log.error("%s: queued APDU no longer decodes: %s", entry.mts_identifier, error)
        return None
    return envelope if isinstance(envelope, MessageEnvelope | Probe) else None


def outcome_for(
    recipient: QueueRecipient | NewRecipient,
    subject: MessageEnvelope | Probe,
    report: DeliveryReport | NonDeliveryReport,
    *,
    supplementary: str | None = None,
) -> Outcome:
    """The outcome for a queued recipient, named as the subject's envelope names it
    (``supplementary``: the report's supplementary-information for it)."""
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
        supplementary=supplementary,
    )


def _local_indexes(
    plan: Plan, content: bytes | None, notes: LogLimiter
) -> dict[str, MailboxIndex] | None:
    """The mailbox index of each local recipient of ``plan``, read from what intake
    decoded, before anything is written; None when there is none, or when they are left
    to the local deliverer (a probe, a message whose delivery is deferred, an APDU
    whose content or report cannot be read here: the deliverer stores it marked as such
    and says so)."""
    message = plan.message
    if message is None or all(r.route != LOCAL_ROUTE for r in message.recipients):
        return None
    if message.not_before is not None and message.not_before > plan.arrival:
        return None  # deferred delivery (X.411 12.2.1.1.1.5): delivered when due
    users = [r.recipient for r in message.recipients if r.route == LOCAL_ROUTE]
    try:
        indexes = _indexes(message, plan.subject, content, users)
    except DecodeError:  # the peer's data: the local deliverer marks it and logs it
        return None
    except Exception:  # a fault of ours; the local deliverer tries again
        notes.log(
            log,
            logging.ERROR,
            "cannot-index",
            "%s: cannot index for immediate delivery",
            message.mts_identifier,
            exc_info=True,
        )
        return None
    return None if indexes is None else dict(zip(users, indexes, strict=True))


def _probe_reports(
    plan: Plan, indexes: Mapping[str, MailboxIndex], is_probe: Callable[[str], bool]
) -> Mapping[str, MailboxIndex]:
    """``indexes``, a report's listed as a probe report when its subject is a probe
    queued here (X.411 8.3.1.2; only the store knows: a report does not say)."""
    message = plan.message
    if message is None or message.kind is not ApduKind.REPORT:
        return indexes
    index = index_apdu(
        message.apdu, message.originator, report_precedence=message.precedence, is_probe=is_probe
    )
    return dict.fromkeys(indexes, index)


def _indexes(
    message: NewMessage,
    subject: MessageEnvelope | Probe | None,
    content: bytes | None,
    users: Sequence[str],
) -> Sequence[MailboxIndex] | None:
    if message.kind is ApduKind.MESSAGE and isinstance(subject, MessageEnvelope):
        octets = message_content_view(message.apdu) if content is None else content
        return index_message(subject, octets, users)
    if message.kind is ApduKind.REPORT:
        index = index_apdu(message.apdu, message.originator, report_precedence=message.precedence)
        return [index] * len(users)
    return None


def delivered_records(
    mts_identifier: str, users: Sequence[str], now: datetime
) -> list[AuditRecord]:
    return [
        AuditRecord(at=now, event=AuditEvent.DELIVERED, mts_identifier=mts_identifier, recipient=u)
        for u in users
    ]


def _log_rejected(subject: MessageEnvelope | Probe, outcomes: Sequence[Outcome], why: str) -> None:
    """One line for the recipients a plan non-delivers, and why."""
    names = ", ".join(format_orname(outcome.recipient) for outcome in outcomes[:3])
    more = f" and {len(outcomes) - 3} more" if len(outcomes) > 3 else ""
    log.info("%s non-delivered to %s%s: %s", subject.mts_identifier.text, names, more, why)


def _label_records(plan: Plan, now: datetime) -> Iterator[AuditRecord]:
    """One record per security label decision of ``plan`` (X.411 8.5.9)."""
    if plan.subject is None:
        return
    for decision in plan.labels:
        verdict = "allowed" if decision.allowed else "refused"
        yield AuditRecord(
            at=now,
            event=AuditEvent.LABEL_CHECKED,
            mts_identifier=plan.subject.mts_identifier.text,
            recipient=decision.recipient,
            peer=decision.peer,
            detail=f"{verdict}: {decision.marking}: {decision.reason}",
        )


def _non_delivery_text(report: DeliveryReport | NonDeliveryReport) -> str:
    if isinstance(report, DeliveryReport):
        return "delivered"
    diagnostic = report.diagnostic_name
    return f"non-delivered: {report.reason_name}" + (f", {diagnostic}" if diagnostic else "")


def _intake_event(origin_peer: str | None) -> AuditEvent:
    return AuditEvent.SUBMITTED if origin_peer is None else AuditEvent.RECEIVED


def _recipients_detail(result: Enqueued, message: NewMessage) -> str:
    """``to A, B; duplicate for C``: the names as the envelope gave them."""
    shown = {r.recipient: r.display for r in message.recipients}
    parts = []
    if result.queued:
        parts.append("to " + ", ".join(shown.get(name, name) for name in result.queued))
    if result.duplicates:
        parts.append("duplicate for " + ", ".join(shown.get(n, n) for n in result.duplicates))
    return "; ".join(parts)
