"""The daemon's message log: one line per message event, for the operator.

Lines name the MTS identifier, the kind and precedence, the peer or user, and what
happened, so that ``journalctl -u aiox400-mta | grep ID`` tells a message's story.

A line naming recipients names the first :data:`NAMED` and counts the others, so that
a message for thousands of recipients is one line of bounded length.  O/R names are
shown as the envelope gave them (their letters' case kept), though compared and stored
case-folded.

Public API::

    log_intake(verb, plan, result, where)
    log_non_delivery(report, peer)     a non-delivery report received, at WARNING
    few(names) -> str                  "a, b, c and 9997 more"
    NAMED
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from mta.intake.plan import Plan
from p1.mts.orname import format_orname
from p1.mts.report import NonDeliveryReport, Report
from store import Enqueued

__all__ = ["NAMED", "few", "log_intake", "log_non_delivery"]

log = logging.getLogger("aiox400.mta")

NAMED: Final = 3
"""Recipients a log line names; it counts the others."""


def few(names: Sequence[str], total: int | None = None) -> str:
    """The first :data:`NAMED` of ``names``, and how many more there are of ``total``
    (``len(names)`` unless given: the caller may pass only the first few)."""
    count = len(names) if total is None else total
    shown = ", ".join(names[:NAMED])
    return shown if count <= NAMED else f"{shown} and {count - NAMED} more"


def log_intake(verb: str, plan: Plan, result: Enqueued | None, where: str) -> None:
    """Log what taking in one APDU did: queued, duplicate, non-delivered recipients."""
    message = plan.message
    if message is not None and result is not None:
        if result.queued:
            log.info(
                "%s %s %s (%s, %d octets) %s for %d recipient(s): %s",
                verb,
                message.kind.value,
                message.mts_identifier,
                message.precedence.label,
                len(message.apdu),
                where,
                len(message.recipients),
                few(
                    [f"{r.display} via {r.route}" for r in message.recipients[:NAMED]],
                    len(message.recipients),
                ),
            )
        if result.duplicates:
            log.info(
                "duplicate %s %s: already have %d recipient(s): %s",
                message.mts_identifier,
                where,
                len(result.duplicates),
                few(result.duplicates),
            )
    if plan.rejected:
        log.warning(
            "non-delivered %s to %d recipient(s): %s: %s",
            plan.subject.mts_identifier.text if plan.subject else "?",
            len(plan.rejected),
            few([format_orname(outcome.recipient) for outcome in plan.rejected]),
            plan.why,
        )


def log_non_delivery(report: Report, peer: str) -> None:
    """One WARNING line for a report received from ``peer`` that non-delivers recipients
    (X.411 12.2.1.3): the subject's MTS identifier, the MTA that reported (the first of
    its internal trace, else the domain of its first trace entry), and for each recipient
    its reason and diagnostic (X.411 8.3.1.2.1.9, 8.3.1.2.1.10).  A delivery report
    says nothing more than its INFO line."""
    failed = [
        (format_orname(r.actual_recipient_name), r.last_trace_information.report)
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
        few([f"{name}: {_outcome(outcome)}" for name, outcome in failed]),
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
