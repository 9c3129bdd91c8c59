"""Delivery and non-delivery reports an MTA originates (X.411 clauses 8.3.1.2 and 12.2.1.3).

When this MTA delivers a message into a local mailbox, or gives up on a recipient (no
route, loop, expiry, a permanent refusal), it reports to the subject's originator if the
originating-MTA report request of that recipient asks for it (per-recipient-indicators
bits 1 and 2: ``report`` gives delivery and non-delivery reports, ``non-delivery-report``
only the latter).  One report covers every recipient of one subject that reached one
outcome at one time.

A report is an MTS-APDU of its own: it gets its own MTS identifier from this MTA, goes to
``report-destination-name`` (the subject's originator) and is routed like a message.

Pure: no I/O, no clock (``now`` is passed in).

Public API::

    Outcome(recipient, number, indicators, report, supplementary=None)   one recipient's fate
    wants_report(indicators, report) -> bool
    build_report(subject, outcomes, *, identifier, domain, now) -> Report | None
    report_apdu(report) -> bytes
    indicator_bits(indicators) -> int / indicators_from(bits) -> PerRecipientIndicators
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from p1.mts.envelope import (
    MessageEnvelope,
    MTSIdentifier,
    Probe,
    encode_mts_apdu,
)
from p1.mts.fields import GlobalDomainIdentifier, PerRecipientIndicators
from p1.mts.orname import ORName
from p1.mts.report import (
    DeliveryReport,
    LastTraceInformation,
    NonDeliveryReport,
    Report,
    ReportContent,
    ReportEnvelope,
    ReportRecipientField,
)
from p1.mts.trace import RoutingAction, TraceEntry

__all__ = [
    "Outcome",
    "build_report",
    "indicator_bits",
    "indicators_from",
    "report_apdu",
    "wants_report",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What became of one recipient of a subject message or probe."""

    recipient: ORName
    number: int
    """originally-specified-recipient-number of the recipient in the subject."""
    indicators: PerRecipientIndicators
    """The recipient's per-recipient-indicators in the subject (its report requests)."""
    report: DeliveryReport | NonDeliveryReport
    supplementary: str | None = None
    """The report's supplementary-information on the recipient (X.411
    SupplementaryInformation: a PrintableString of 1 to 256 characters), such as an
    operator's reason."""


def wants_report(
    indicators: PerRecipientIndicators, report: DeliveryReport | NonDeliveryReport
) -> bool:
    """Whether the originating-MTA report request asks for this kind of report.

    X.411 12.2.1.1.1.1: the MTS acts on originating-MTA-report-request; ``report``
    (bit 1) asks for both kinds, ``non-delivery-report`` (bit 2) for non-delivery only.
    """
    if isinstance(report, DeliveryReport):
        return indicators.originating_mta_report
    return indicators.originating_mta_report or indicators.originating_mta_non_delivery_report


def build_report(
    subject: MessageEnvelope | Probe,
    outcomes: Sequence[Outcome],
    *,
    identifier: MTSIdentifier,
    domain: GlobalDomainIdentifier,
    arrival: datetime,
    now: datetime,
) -> Report | None:
    """The report on ``subject`` for the ``outcomes`` that asked for one; None if none did.

    ``arrival`` is when the subject reached this MTA (last-trace-information arrival-time);
    ``identifier`` is the new report's own MTS identifier.
    """
    wanted = [o for o in outcomes if wants_report(o.indicators, o.report)]
    if not wanted:
        return None
    envelope = ReportEnvelope(
        report_identifier=identifier,
        report_destination_name=subject.originator_name,
        trace_information=(
            TraceEntry(
                global_domain_identifier=domain,
                arrival_time=now,
                routing_action=RoutingAction.RELAYED,
            ),
        ),
    )
    content = ReportContent(
        subject_identifier=subject.mts_identifier,
        content_type=subject.content_type,
        recipients=tuple(_recipient_field(o, arrival) for o in wanted),
    )
    return Report(envelope=envelope, content=content)


def _recipient_field(outcome: Outcome, arrival: datetime) -> ReportRecipientField:
    return ReportRecipientField(
        actual_recipient_name=outcome.recipient,
        originally_specified_recipient_number=outcome.number,
        per_recipient_indicators=outcome.indicators,
        last_trace_information=LastTraceInformation(arrival_time=arrival, report=outcome.report),
        supplementary_information=outcome.supplementary,
    )


def report_apdu(report: Report) -> bytes:
    """The BER of ``report`` as an MTS-APDU (``report [1]``, X.411 clause 12.2)."""
    return encode_mts_apdu(report)


def indicator_bits(indicators: PerRecipientIndicators) -> int:
    """per-recipient-indicators as the queue keeps them: bit n as ``1 << n``."""
    return sum(1 << number for number in indicators.numbers())


def indicators_from(bits: int) -> PerRecipientIndicators:
    """The inverse of :func:`indicator_bits`."""
    return PerRecipientIndicators(
        other_bits=tuple(n for n in range(bits.bit_length()) if bits >> n & 1)
    )
