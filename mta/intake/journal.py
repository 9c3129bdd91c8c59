"""The daemon's message log: one line per message event, for the operator.

Lines name the MTS identifier, the kind and precedence, the peer or user, and what
happened, so that ``journalctl -u aiox400-mta | grep ID`` tells a message's story.

Public API::

    log_intake(verb, plan, result, where)
    log_non_delivery(report, peer)     a non-delivery report received, at WARNING
"""

from __future__ import annotations

import logging

from mta.intake.plan import Plan
from p1.mts.report import NonDeliveryReport, Report
from store import Enqueued

__all__ = ["log_intake", "log_non_delivery"]

log = logging.getLogger("aiox400.mta")


def log_intake(verb: str, plan: Plan, result: Enqueued | None, where: str) -> None:
    """Log what taking in one APDU did: queued, duplicate, non-delivered recipients."""
    message = plan.message
    if message is not None and result is not None:
        if result.queued:
            log.info(
                "%s %s %s (%s, %d octets) %s for %s",
                verb,
                message.kind.value,
                message.mts_identifier,
                message.precedence.label,
                len(message.apdu),
                where,
                ", ".join(f"{r.recipient} via {r.route}" for r in message.recipients),
            )
        if result.duplicates:
            log.info(
                "duplicate %s %s: already have %s",
                message.mts_identifier,
                where,
                ", ".join(result.duplicates),
            )
    for outcome in plan.rejected:
        log.warning(
            "non-delivered %s to %s: %s",
            plan.subject.mts_identifier.text if plan.subject else "?",
            outcome.recipient.canonical,
            plan.why,
        )


def log_non_delivery(report: Report, peer: str) -> None:
    """One WARNING line for a report received from ``peer`` that non-delivers recipients
    (X.411 12.2.1.3): the subject's MTS identifier, the MTA that reported (the first of
    its internal trace, else the domain of its first trace entry), and for each recipient
    its reason and diagnostic (X.411 8.3.1.2.1.9, 8.3.1.2.1.10).  A delivery report
    says nothing more than its INFO line."""
    failed = [
        (r.actual_recipient_name.canonical, r.last_trace_information.report)
        for r in report.content.recipients
        if isinstance(r.last_trace_information.report, NonDeliveryReport)
    ]
    if not failed:
        return
    log.warning(
        "non-delivery report %s from %s on %s, reported by %s: %s",
        report.mts_identifier.text,
        peer,
        report.content.subject_identifier.text,
        _reporter(report),
        "; ".join(f"{name}: {_outcome(outcome)}" for name, outcome in failed),
    )


def _reporter(report: Report) -> str:
    envelope = report.envelope
    if envelope.internal_trace:
        return envelope.internal_trace[0].mta_name
    if envelope.trace_information:
        return envelope.trace_information[0].global_domain_identifier.text
    return "an unnamed MTA"


def _outcome(report: NonDeliveryReport) -> str:
    diagnostic = report.diagnostic_name
    return report.reason_name + (f", {diagnostic}" if diagnostic else "")
