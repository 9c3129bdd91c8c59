"""Keeping a transfer that cannot be taken in, within the bounds of ``[quarantine]``.

A peer's transfer is confirmed only once this MTA is responsible for it (X.411
12.2.1.1).  When its own octets make it impossible to take in (:class:`mta.intake.plan
.MalformedApduError`: it does not decode, or cannot be written with this MTA's trace),
refusing it does not help: the peer sends it again and again, and everything it queued
behind it waits.  So it is confirmed and kept as received in the quarantine
(:mod:`store.quarantine`), with an audit entry, in one transaction; the operator lists,
reads and deletes it with ``x400ctl quarantine``.  A broken or hostile peer must not
fill the disk that way: a transfer that would take the quarantine past
``max_messages`` or ``max_bytes`` is not kept, and the caller refuses it unconfirmed.

The transfer is not delivered, so its originator is told by a non-delivery report
(X.411 8.3.1.2, 12.2.1.3) when what the report needs can be read from the envelope all
the same (:func:`p1.mts.salvage.salvage_subject`): each recipient this MTA took
responsibility for is non-delivered (:data:`INVALID_ENVELOPE`, :func:`non_delivered`),
and the caller queues the report they ask for in the transaction that keeps the
transfer.  A report is never reported on.

Public API::

    keep_in(session, *, apdu, peer, reason, now, bounds) -> Kept     a unit of work
    Kept(entry_id, totals, reported, report)
    full_refusal(kept, size, reason, bounds) -> str   why the transfer is refused
    INVALID_ENVELOPE                 unable-to-transfer, invalid-arguments
    non_delivered(subject, report=INVALID_ENVELOPE) -> tuple[Outcome, ...]
                                     its responsible recipients' fate
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from config.schema import QuarantineLimits
from mta.intake.reports import Outcome
from p1.mts.envelope import MessageEnvelope, Probe
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason, NonDeliveryReport
from store import AuditEvent, AuditLog, Quarantine, QuarantineTotals

__all__ = ["INVALID_ENVELOPE", "Kept", "full_refusal", "keep_in", "non_delivered"]

_MIB = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class Kept:
    """What :func:`keep_in` did."""

    entry_id: int | None
    """The APDU's number in the quarantine; None: it would not fit, nothing was written."""
    totals: QuarantineTotals
    """What the quarantine held before."""
    reported: bool = False
    """A non-delivery report on it was queued."""
    report: str = ""
    """What became of the report on it, for the log ("non-delivery report queued", "no
    report: originator not readable", ...)."""


def keep_in(
    session: Session,
    *,
    apdu: bytes,
    peer: str,
    reason: str,
    now: datetime,
    bounds: QuarantineLimits,
) -> Kept:
    """Keep ``apdu`` from ``peer`` in the quarantine, with an audit entry, in the caller's
    transaction, unless it would take the quarantine past ``bounds``."""
    quarantine = Quarantine(session)
    totals = quarantine.totals()
    if not _fits(totals, len(apdu), bounds):
        return Kept(entry_id=None, totals=totals)
    entry_id = quarantine.keep(apdu, peer=peer, reason=reason, now=now)
    AuditLog(session).record(
        AuditEvent.QUARANTINED,
        now,
        peer=peer,
        detail=f"#{entry_id}, {len(apdu)} octets: {reason}",
    )
    return Kept(entry_id=entry_id, totals=totals)


def _fits(totals: QuarantineTotals, size: int, bounds: QuarantineLimits) -> bool:
    return totals.messages + 1 <= bounds.max_messages and totals.octets + size <= bounds.max_bytes


def full_refusal(kept: Kept, size: int, reason: str, bounds: QuarantineLimits) -> str:
    """Why a transfer that does not fit is refused, and what the operator can do."""
    totals = kept.totals
    return (
        f"{reason}; the quarantine is full ({totals.messages} of {bounds.max_messages} "
        f"messages, {totals.octets / _MIB:.1f} of {bounds.max_bytes / _MIB:.1f} MiB; this "
        f"transfer has {size} octets): see x400ctl quarantine list, and free room with "
        "x400ctl quarantine delete ID..."
    )


INVALID_ENVELOPE = NonDeliveryReport(
    reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
    diagnostic_code=NonDeliveryDiagnostic.INVALID_ARGUMENTS,
)
"""The non-delivery of a transfer whose envelope cannot be taken in (X.411 8.3.1.2.1.10).

invalid-arguments, not protocol-violation: the envelope's arguments are present but one
does not decode or cannot be relayed, while protocol-violation says mandatory ones are
missing."""


def non_delivered(
    subject: MessageEnvelope | Probe, report: NonDeliveryReport = INVALID_ENVELOPE
) -> tuple[Outcome, ...]:
    """``report`` (by default :data:`INVALID_ENVELOPE`) for each recipient of ``subject``
    this MTA was made responsible for (X.411 12.2.1.1.1, per-recipient-indicators:
    responsibility), as a relaying MTA reports."""
    return tuple(
        Outcome(
            recipient=r.recipient_name,
            number=r.originally_specified_recipient_number,
            indicators=r.per_recipient_indicators,
            report=report,
        )
        for r in subject.recipients
        if r.responsible
    )
