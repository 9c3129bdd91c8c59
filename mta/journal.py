"""The daemon's message log: one line per message event, for the operator.

Lines name the MTS identifier, the kind and precedence, the peer or user, and what
happened, so that ``journalctl -u aiox400-mta | grep ID`` tells a message's story.

Public API::

    log_intake(verb, plan, result, where)
"""

from __future__ import annotations

import logging

from mta.intake import Plan
from store import Enqueued

__all__ = ["log_intake"]

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
