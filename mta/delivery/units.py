"""Local delivery, expiry and restart recovery: units the database thread runs.

- :meth:`DeliveryUnits.deliver_local_in`: local recipients left pending by intake (a
  probe, a report that did not decode, a message whose delivery was deferred) into
  their mailboxes (the message store), with the delivery reports they asked for;
- :meth:`DeliveryUnits.expire`: recipients past their expiry time are non-delivered,
  reason unable-to-transfer, diagnostic maximum-time-expired (X.411 8.3.1.2.1.10);
- :meth:`DeliveryUnits.non_deliver`: the operator's non-delivery of the recipients
  selected (``x400ctl non-deliver``), reported as :data:`OPERATOR_NON_DELIVERY` says,
  the operator's reason as the report's supplementary-information; both make their
  reports the one way, :meth:`DeliveryUnits.non_deliver_in`;
- :meth:`DeliveryUnits.recover`: at start and stop, what this process left in flight is
  pending again (only its own: other processes of the site may share the queue);
- :meth:`DeliveryUnits.keep_claims_in`: this process's claims are renewed, and those of any
  process whose lease lapsed are taken back (pending again).

Reports enter the queue through intake (:meth:`mta.intake.units.IntakeUnits.report`).
A local delivery is flushed to disk before it returns (a user may have read it).

Public API::

    DeliveryUnits(engine, intake, *, owner=None, lease=None)
        .deliver_local_in(session, *, now, limit) -> list[LocalOutcome]
        .expire(now) -> int
        .non_deliver(selection, reason, now) -> Failure
        .non_deliver_in(session, entries, report, now, journal, *, supplementary=None)
        .recover(now) -> int
        .keep_claims_in(session, *, now) -> int     recipients taken back
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from mta.faults import LogLimiter
from mta.intake.units import IntakeUnits, LocalOutcome, delivered_records, outcome_for, subject_of
from p1.errors import DecodeError
from p1.mts.precedence import Precedence
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason, NonDeliveryReport
from store import (
    LOCAL_ROUTE,
    ApduKind,
    AuditEvent,
    AuditLog,
    Delivery,
    MessageStore,
    QueueEntry,
    TransitQueue,
    transaction,
)
from store.audit import AuditRecord
from store.mailbox import UNDECODABLE, MailboxIndex, index_apdu
from store.queue import Failure, Selection

__all__ = ["OPERATOR_NON_DELIVERY", "DeliveryUnits"]

log = logging.getLogger("aiox400.queue")

_ALL = tuple(Precedence)
_EXPIRED = NonDeliveryReport(
    reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
    diagnostic_code=NonDeliveryDiagnostic.MAXIMUM_TIME_EXPIRED,
)
OPERATOR_NON_DELIVERY: Final = NonDeliveryReport(
    reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER, diagnostic_code=None
)
"""How the operator's non-delivery is reported (X.411 8.3.1.2.1.9-10).

unable-to-transfer: "due to some problem with the subject-message itself" the MTS will
not transfer or deliver it; the nearest of the reason codes to an operator's decision
about the message.  Not transfer-failure, which tells of a communication failure that
did not happen (an originator may just send again into the same decision).  No
diagnostic: none of X.411's names an administrative action (maximum-time-expired,
mts-congestion or recipient-unavailable would each say something false), and the
diagnostic is OPTIONAL; the operator's reason goes, in words, into the report's
supplementary-information on each recipient (PrintableString, 1 to 256 characters).
"""


class DeliveryUnits:
    """Local delivery, expiry and recovery on one store (see the module docstring)."""

    def __init__(
        self,
        engine: Engine,
        intake: IntakeUnits,
        *,
        owner: str | None = None,
        lease: timedelta | None = None,
    ) -> None:
        self.engine = engine
        self.intake = intake
        self.owner = owner
        self.lease = lease
        self.notes = LogLimiter()
        """Lines the content of peers' messages can repeat at will, each once a minute."""

    def deliver_local_in(
        self, session: Session, *, now: datetime, limit: int = 50
    ) -> list[LocalOutcome]:
        """Deliver up to ``limit`` local APDUs left pending, with their delivery reports."""
        queue = TransitQueue(session)
        entries = queue.claim_next(
            LOCAL_ROUTE, _ALL, now, limit=limit, owner=self.owner, lease=self.lease
        )
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
                    Delivery(
                        user=user,
                        apdu=entry.apdu_bytes,
                        index=self._mailbox_index(entry, user, TransitQueue(session).is_probe),
                    )
                    for user in users
                ],
                now,
            )
        if entry.kind is not ApduKind.REPORT:
            reported = self.intake.delivery_report(
                session,
                entry.recipients,
                lambda: subject_of(entry),
                entry.arrival_time,
                now,
                journal,
            )
        TransitQueue(session).mark_delivered(entry.recipient_ids, now)
        shown = tuple(r.display for r in entry.recipients)
        journal += delivered_records(entry.mts_identifier, shown, now)
        return LocalOutcome(
            mts_identifier=entry.mts_identifier,
            kind=entry.kind,
            precedence=entry.precedence,
            users=users,
            shown=shown,
            reported=reported,
        )

    def expire(self, now: datetime) -> int:
        """Non-deliver recipients past their expiry time; how many."""
        with transaction(self.engine, durable=False) as session:
            entries = TransitQueue(session).expire_due(now)
            journal: list[AuditRecord] = []
            self.non_deliver_in(session, entries, _EXPIRED, now, journal)
            journal += (
                AuditRecord(
                    at=now,
                    event=AuditEvent.EXPIRED,
                    mts_identifier=entry.mts_identifier,
                    detail=", ".join(r.display for r in entry.recipients),
                )
                for entry in entries
            )
            AuditLog(session).record_many(journal)
        return sum(len(entry.recipients) for entry in entries)

    def non_deliver(self, selection: Selection, reason: str, now: datetime) -> Failure:
        """The operator's non-delivery of the selected waiting recipients, each reported
        (:data:`OPERATOR_NON_DELIVERY`, ``reason`` as supplementary-information) and
        audited; those in flight are left to their attempt and returned as busy."""
        with transaction(self.engine) as session:
            failure = TransitQueue(session).fail_selected(
                selection, error=f"non-delivered by the operator: {reason}", now=now
            )
            journal: list[AuditRecord] = [
                AuditRecord(
                    at=now,
                    event=AuditEvent.NON_DELIVERED,
                    mts_identifier=entry.mts_identifier,
                    recipient=r.display,
                    peer=None if r.route == LOCAL_ROUTE else r.route,
                    detail=f"by the operator: {reason}",
                )
                for entry in failure.failed
                for r in entry.recipients
            ]
            self.non_deliver_in(
                session, failure.failed, OPERATOR_NON_DELIVERY, now, journal, supplementary=reason
            )
            AuditLog(session).record_many(journal)
        return failure

    def non_deliver_in(
        self,
        session: Session,
        entries: Sequence[QueueEntry],
        report: NonDeliveryReport,
        now: datetime,
        journal: list[AuditRecord],
        *,
        supplementary: str | None = None,
    ) -> None:
        """Queue the non-delivery reports on the failed recipients of ``entries`` (one
        per message whose recipients asked for it; none on a report)."""
        for entry in entries:
            subject = subject_of(entry)
            if subject is None:
                continue
            outcomes = [
                outcome_for(r, subject, report, supplementary=supplementary)
                for r in entry.recipients
            ]
            self.intake.report(session, subject, outcomes, entry.arrival_time, now, journal)

    def keep_claims_in(self, session: Session, *, now: datetime) -> int:
        """Renew this process's claims for another lease, then take back (pending again)
        the claims of any process whose lease lapsed; how many were taken back."""
        assert self.owner is not None and self.lease is not None, "claims are not leased"
        queue = TransitQueue(session)
        queue.renew_claims(self.owner, now + self.lease)
        taken = queue.take_back_lapsed(now)
        if taken:
            AuditLog(session).record(
                AuditEvent.RECOVERED, now, detail=f"{taken} recipient(s) whose claim lapsed"
            )
        return taken

    def recover(self, now: datetime) -> int:
        """At start and stop: recipients this process left in flight are pending again."""
        with transaction(self.engine, durable=False) as session:
            count = TransitQueue(session).recover_in_flight(now, owner=self.owner)
            if count:
                AuditLog(session).record(
                    AuditEvent.RECOVERED, now, detail=f"{count} recipient(s) in flight"
                )
        return count

    def _mailbox_index(
        self, entry: QueueEntry, user: str, is_probe: Callable[[str], bool]
    ) -> MailboxIndex:
        """What ``user``'s listing shows of the queued ``entry`` (a report whose subject
        ``is_probe`` is listed as a probe report).  An APDU that was
        accepted is delivered whatever its content holds: when it cannot be indexed, it
        is stored as received and listed with :data:`UNDECODABLE` as its subject, and
        one line a minute says so (a peer may send such content in every transfer)."""
        try:
            return index_apdu(
                entry.apdu_bytes, user, report_precedence=entry.precedence, is_probe=is_probe
            )
        except DecodeError as error:
            self.notes.warning(
                log,
                "undecodable",
                "%s: delivered as %s: %s",
                entry.mts_identifier,
                UNDECODABLE,
                error,
            )
        except Exception:  # a fault of ours: the user still gets the message
            self.notes.log(
                log,
                logging.ERROR,
                "index-failure",
                "%s: delivered as %s",
                entry.mts_identifier,
                UNDECODABLE,
                exc_info=True,
            )
        return MailboxIndex(
            mts_identifier=entry.mts_identifier,
            kind=entry.kind,
            precedence=entry.precedence,
            subject=UNDECODABLE,
            originator=None,
        )
