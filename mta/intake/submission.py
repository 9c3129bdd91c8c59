"""Local submission: the envelope an MTA puts around a user's content (X.411 clause 8.2.1.1).

A local user agent (``x400 send``) hands the MTA its content (an IPM, P2 or P772) and the
submission parameters; the MTA gives the message its MTS identifier and writes the
message transfer envelope:

- originator, recipients (each with the responsibility bit set: this MTA takes them all);
- content type (built-in 22 for P2, extended 1.3.26.0.4406.0.4.1 for P772);
- P1 priority and the STANAG 4406 priority-level-qualifier for the precedence
  (:mod:`p1.mts.precedence`, with the configured table);
- report requests: with ``delivery_report`` both the originator and the originating MTA
  ask for ``report`` (delivery and non-delivery), else for ``non-delivery-report`` only;
- deferred delivery time and latest delivery time when given;
- the message-security-label extension (standard-extension 20, X.411 12.2.1.1.1)
  when the user gave a label (:mod:`p1.security.naming` makes it from names), with
  its recommended criticality {for-delivery}.

A probe (X.411 clause 8.2.1.2, probe-submission) asks whether a message of the content
type and length given could be delivered, without content: its envelope (X.411
12.2.1.2.1) has the originator, recipients, content type and content-length, and no
priority (it is scheduled here at the precedence the user gave; it travels on at
routine, X.411 12.2.1.2).  Its recipients always ask for ``report``: a probe's answer
is its report ("would be delivered" or not).

Pure: no I/O, no clock.

Public API::

    SubmitRequest(originator, recipients, precedence, content_type, content, ...,
                  probe=False, content_length=None)
    build_submission(request, *, identifier, table) -> Message
    build_probe(request, *, identifier) -> Probe
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from p1.mts.envelope import (
    Message,
    MessageEnvelope,
    MTSIdentifier,
    PerRecipientIndicators,
    Probe,
    RecipientField,
)
from p1.mts.extensions import (
    latest_delivery_time_extension,
    priority_level_qualifier_extension,
    with_extension,
)
from p1.mts.fields import ContentType
from p1.mts.orname import ORName
from p1.mts.precedence import Precedence, PrecedenceTable
from p1.mts.security_label import SecurityLabel, security_label_extension

__all__ = ["SubmitRequest", "build_probe", "build_submission"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmitRequest:
    """What a local user submits (X.411 MessageSubmissionArgument, in short)."""

    originator: ORName
    recipients: tuple[ORName, ...]
    precedence: Precedence
    content_type: ContentType
    content: bytes
    """The BER of the content (an IPM), as the user agent encoded it."""
    delivery_report: bool = False
    deferred_delivery_time: datetime | None = None
    latest_delivery_time: datetime | None = None
    probe: bool = False
    """A probe (no content): :func:`build_probe`."""
    content_length: int | None = None
    """A probe's content-length: the octets of the content it asks about."""
    security_label: SecurityLabel | None = None
    """The message's security label (X.411 8.5.9), for its envelope."""


def build_submission(
    request: SubmitRequest, *, identifier: MTSIdentifier, table: PrecedenceTable
) -> Message:
    """The message the MTA takes responsibility for."""
    if not request.recipients:
        raise ValueError("a message needs at least one recipient")
    indicators = _indicators(request.delivery_report)
    # What MessageEnvelope.with_precedence would add, given at once: the envelope is
    # built once, not built and copied.
    priority, qualifier = table.to_mts(request.precedence)
    extensions = with_extension((), priority_level_qualifier_extension(qualifier))
    if request.latest_delivery_time is not None:
        extension = latest_delivery_time_extension(request.latest_delivery_time)
        extensions = with_extension(extensions, extension)
    if request.security_label is not None:
        extensions = with_extension(extensions, security_label_extension(request.security_label))
    envelope = MessageEnvelope(
        mts_identifier=identifier,
        originator_name=request.originator,
        content_type=request.content_type,
        priority=priority,
        deferred_delivery_time=request.deferred_delivery_time,
        extensions=extensions,
        recipients=tuple(
            RecipientField(
                recipient_name=name,
                originally_specified_recipient_number=number,
                per_recipient_indicators=indicators,
            )
            for number, name in enumerate(request.recipients, start=1)
        ),
    )
    return Message(envelope=envelope, content=request.content)


def build_probe(request: SubmitRequest, *, identifier: MTSIdentifier) -> Probe:
    """The probe the MTA takes responsibility for (X.411 12.2.1.2.1)."""
    if not request.recipients:
        raise ValueError("a probe needs at least one recipient")
    indicators = _indicators(True)
    return Probe(
        probe_identifier=identifier,
        originator_name=request.originator,
        content_type=request.content_type,
        content_length=request.content_length,
        recipients=tuple(
            RecipientField(
                recipient_name=name,
                originally_specified_recipient_number=number,
                per_recipient_indicators=indicators,
            )
            for number, name in enumerate(request.recipients, start=1)
        ),
    )


def _indicators(delivery_report: bool) -> PerRecipientIndicators:
    if delivery_report:
        return PerRecipientIndicators(
            responsibility=True, originating_mta_report=True, originator_report=True
        )
    return PerRecipientIndicators(
        responsibility=True,
        originating_mta_non_delivery_report=True,
        originator_non_delivery_report=True,
    )
