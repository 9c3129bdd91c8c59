"""Taking responsibility for an MTS-APDU: trace, loop check, routing, queue rows (X.411 14).

Whatever reaches this MTA (a transfer from a peer, a local submission, a report this MTA
originates) goes through :func:`plan_intake` before it is committed to the queue:

1. The envelope is read (the content of a message is not decoded, X.411 clause 14.3).
2. Loops (X.411 14.3.1, 14.4.1): a message is looping when this MTA already appears in
   its internal trace, or when this MTA's domain appears in its trace information before
   the last entry (it left this domain and came back).
3. Trace (X.411 12.2.1.1.1.10): a trace entry for this domain is appended unless the
   domain's entry is already last; an internal trace entry for this MTA always.
4. Routing (X.411 14.3.1): each recipient this MTA is responsible for goes to the local
   store or a peer; one without a route (a name under a local domain that is none of the
   configured local users included, :mod:`mta.intake.routing`), or whose envelope or own fields
   carry an extension critical for what its route does that is not supported there
   (X.411 9.1, :meth:`mta.intake.routing.Router.admit`), or whose security label the
   clearance of its mailbox or its peer's link does not allow (X.411 8.5.9,
   :meth:`mta.intake.routing.Router.judge`), like every recipient of a looping message,
   gets a non-delivery outcome here and is never queued.

The result, a :class:`Plan`, says what to write: a :class:`store.queue.NewMessage` (or
none) and the outcomes to report.  A received message's trace entries are added to its
bytes, every other octet kept as received (:func:`p1.mts.relay.with_trace_added`).
A local submission, whose envelope this MTA has just built, is planned from that envelope
(:func:`plan_submission`) and encoded once, with its trace, instead of being encoded,
read back and encoded again.

Pure: no I/O, no clock; the caller passes ``now``, new MTS identifiers and how to look up
the precedence of a report's subject.

Public API::

    Site(name, domain, router, table, max_age, max_message_size=None)   what this MTA is
    Plan(message, rejected, subject, arrival)
    plan_intake(apdu, site, *, origin_peer, now, subject_precedence, envelope) -> Plan
    plan_submission(message, site, *, now) -> Plan     as plan_intake(encode_mts_apdu(message),
                                                   origin_peer=None), encoding once
    plan_probe_submission(probe, site, *, now) -> Plan   the same for a submitted probe
    plan_report(report, site, *, precedence, now) -> Plan
    domain_of(address) -> GlobalDomainIdentifier
    precedence_of(envelope, site) -> Precedence      a message's; routine for the rest
    IntakeError                                    the APDU cannot be taken
    MalformedApduError(IntakeError)                ... because of its own octets: permanent
    TooLongError(IntakeError)                      a submission over max_message_size
    ForeignOriginatorError(IntakeError)            a submission from under no local domain
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from config.schema import MaxAge
from mta.intake.reports import Outcome, indicator_bits
from mta.intake.routing import LabelDecision, LocalRoute, NoRoute, PeerRoute, Route, Router
from p1.errors import DecodeError, EncodeError
from p1.mts.envelope import (
    Message,
    MessageEnvelope,
    Probe,
    RecipientField,
    Report,
    encode_mts_apdu,
    peek_envelope,
)
from p1.mts.extensions import with_internal_trace_entry
from p1.mts.fields import GlobalDomainIdentifier
from p1.mts.orname import ORAddress, format_orname
from p1.mts.precedence import Precedence, PrecedenceTable
from p1.mts.relay import with_trace_added
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason, NonDeliveryReport
from p1.mts.trace import InternalTraceEntry, RoutingAction, TraceEntry
from store.models import LOCAL_ROUTE, ApduKind
from store.queue import NewMessage, NewRecipient

__all__ = [
    "ForeignOriginatorError",
    "IntakeError",
    "MalformedApduError",
    "Plan",
    "Site",
    "TooLongError",
    "domain_of",
    "plan_intake",
    "plan_probe_submission",
    "plan_report",
    "plan_submission",
    "precedence_of",
]


class IntakeError(Exception):
    """The APDU cannot be taken: it does not decode, or its trace cannot be written."""


class MalformedApduError(IntakeError):
    """A received APDU cannot be taken because of its own octets, however often it is
    tried: it does not decode (X.411 12.2, X.690), or its envelope cannot be written back
    with this MTA's trace (X.411 12.2.1.1.1.10), such as a value outside its bounds.
    Not a fault of the store: trying again later changes nothing."""


class ForeignOriginatorError(IntakeError):
    """A local submission whose originator is under none of the local domains, refused
    (``foreign_originators = "refuse"``): nothing was queued."""


class TooLongError(IntakeError):
    """A local submission longer than this MTA takes (``[limits] max_message_size``):
    refused, as a peer with the same limit would non-deliver it (X.411 8.3.1.2.1.10,
    content-too-long)."""

    def __init__(self, size: int, limit: int) -> None:
        self.size, self.limit = size, limit
        super().__init__(
            f"message is {size} octets; this MTA accepts at most {limit} (max_message_size)"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Site:
    """What this MTA is, as intake needs it."""

    name: str
    """Our MTAName, as written in internal trace."""
    domain: GlobalDomainIdentifier
    router: Router
    table: PrecedenceTable
    max_age: MaxAge
    max_message_size: int | None = None
    """The longest MTS-APDU a local user may submit (None: any)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """What to commit for one APDU."""

    message: NewMessage | None
    """The rows to queue; None when no recipient is left to queue."""
    rejected: tuple[Outcome, ...] = ()
    """Recipients given up on at once (no route, loop): each gets a non-delivery outcome."""
    subject: MessageEnvelope | Probe | None = None
    """The envelope, for reports on ``rejected`` (None for a report APDU)."""
    arrival: datetime
    """When the APDU reached this MTA (the caller's ``now``)."""
    why: str = ""
    """Why recipients were rejected, for the log."""
    labels: tuple[LabelDecision, ...] = ()
    """The security label decisions taken for its recipients (X.411 8.5.9)."""


def domain_of(address: ORAddress) -> GlobalDomainIdentifier:
    """The global domain identifier of a configured global domain (C, ADMD, PRMD)."""
    return GlobalDomainIdentifier(
        country=address.country or "", admd=address.admd or " ", prmd=address.prmd
    )


def plan_intake(
    apdu: bytes,
    site: Site,
    *,
    origin_peer: str | None,
    now: datetime,
    subject_precedence: Callable[[str], Precedence | None] = lambda _: None,
    envelope: MessageEnvelope | Probe | Report | None = None,
    precedence: Precedence | None = None,
) -> Plan:
    """What to do with ``apdu``, received from ``origin_peer`` (None: submitted locally).
    ``envelope``: :func:`p1.mts.envelope.peek_envelope` of ``apdu``, and ``precedence``:
    :func:`precedence_of` that envelope, if the caller has them (a report's precedence is
    always its subject's as the queue knows it).

    A report carries no priority (X.411 12.2.1.3): it goes on at the precedence
    ``subject_precedence`` gives for the MTS identifier of its subject (the precedence
    this MTA queued that message at), routine when that is None.
    """
    try:
        envelope = peek_envelope(apdu) if envelope is None else envelope
    except DecodeError as error:
        raise MalformedApduError(f"the MTS-APDU does not decode: {error}") from error
    if isinstance(envelope, Report):
        precedence = precedence_of(envelope, site, subject_precedence)
        return _plan_report(envelope, site, origin_peer=origin_peer, now=now, precedence=precedence)

    def write(
        subject: MessageEnvelope | Probe, trace: TraceEntry | None, internal: InternalTraceEntry
    ) -> bytes:
        try:
            if isinstance(subject, MessageEnvelope):  # (its other octets as received)
                return with_trace_added(apdu, trace, internal)
            probe = _with_trace(subject, trace, internal)
            assert isinstance(probe, Probe)
            return encode_mts_apdu(probe)
        except (DecodeError, EncodeError) as error:
            raise MalformedApduError(
                f"the envelope cannot be written with our trace: {error}"
            ) from error

    return _plan_subject(
        write, envelope, site, origin_peer=origin_peer, now=now, precedence=precedence
    )


def plan_submission(
    message: Message,
    site: Site,
    *,
    now: datetime,
    routes: Mapping[str, Route] | None = None,
    precedence: Precedence | None = None,
) -> Plan:
    """The plan for a message submitted locally, whose envelope this MTA built: the same
    as :func:`plan_intake` of its encoding, but encoded once, with its trace.

    ``routes``: its recipients' routes by canonical O/R name, if the caller routed them
    already (then they are not routed again; their extensions are still checked), and
    ``precedence`` the one it was submitted at (then not read back from the envelope).
    TooLongError when its content, or the MTS-APDU with envelope and trace, is longer
    than ``site.max_message_size``."""
    _check_size(len(message.content), site.max_message_size)

    def write(
        subject: MessageEnvelope | Probe, trace: TraceEntry | None, internal: InternalTraceEntry
    ) -> bytes:
        traced = _with_trace(subject, trace, internal)
        assert isinstance(traced, MessageEnvelope)
        try:
            apdu = encode_mts_apdu(Message(envelope=traced, content=message.content))
        except EncodeError as error:
            raise IntakeError(f"the message cannot be encoded: {error}") from error
        _check_size(len(apdu), site.max_message_size)
        return apdu

    return _plan_subject(
        write,
        message.envelope,
        site,
        origin_peer=None,
        now=now,
        routed=routes or {},
        precedence=precedence,
    )


def plan_probe_submission(
    probe: Probe,
    site: Site,
    *,
    now: datetime,
    routes: Mapping[str, Route] | None = None,
    precedence: Precedence | None = None,
) -> Plan:
    """The plan for a probe submitted locally (see :func:`plan_submission`; the
    ``precedence`` it is scheduled at here: a probe carries none)."""

    def write(
        subject: MessageEnvelope | Probe, trace: TraceEntry | None, internal: InternalTraceEntry
    ) -> bytes:
        traced = _with_trace(subject, trace, internal)
        assert isinstance(traced, Probe)
        try:
            return encode_mts_apdu(traced)
        except EncodeError as error:
            raise IntakeError(f"the probe cannot be encoded: {error}") from error

    return _plan_subject(
        write, probe, site, origin_peer=None, now=now, routed=routes or {}, precedence=precedence
    )


def _check_size(size: int, limit: int | None) -> None:
    if limit is not None and size > limit:
        raise TooLongError(size, limit)


def plan_report(report: Report, site: Site, *, precedence: Precedence, now: datetime) -> Plan:
    """The plan for a report this MTA originated, scheduled at ``precedence``."""
    return _plan_report(report, site, origin_peer=None, now=now, precedence=precedence)


# --- messages and probes ---------------------------------------------------------------


_Write = Callable[[MessageEnvelope | Probe, TraceEntry | None, InternalTraceEntry], bytes]
"""Writes the APDU of a subject with this MTA's trace entries (X.411 12.2.1.1.1.10)."""


def _plan_subject(
    write: _Write,
    envelope: MessageEnvelope | Probe,
    site: Site,
    *,
    origin_peer: str | None,
    now: datetime,
    routed: Mapping[str, Route] | None = None,
    precedence: Precedence | None = None,
) -> Plan:
    responsible = [r for r in envelope.recipients if origin_peer is None or r.responsible]
    loop = _loop(envelope.trace_information, envelope.internal_trace, site)
    if loop:
        rejected = _outcomes(responsible, NonDeliveryDiagnostic.LOOP_DETECTED)
        return Plan(message=None, rejected=rejected, subject=envelope, arrival=now, why=loop)
    judged = {id(r): _route(site.router, envelope, r, routed or {}) for r in responsible}
    routes = {key: route for key, (route, _) in judged.items()}
    labels = tuple(decision for _, decision in judged.values() if decision is not None)
    queued = [r for r in responsible if not isinstance(routes[id(r)], NoRoute)]
    rejected, why = _unroutable(responsible, routes)
    if not queued:
        return Plan(
            message=None, rejected=rejected, subject=envelope, arrival=now, why=why, labels=labels
        )
    precedence = precedence_of(envelope, site) if precedence is None else precedence
    message = NewMessage(
        mts_identifier=envelope.mts_identifier.text,
        kind=ApduKind.PROBE if isinstance(envelope, Probe) else ApduKind.MESSAGE,
        apdu=write(envelope, *_trace_entries(envelope, site, now)),
        precedence=precedence,
        originator=envelope.originator_name.canonical,
        recipients=tuple(_new_recipient(r, routes[id(r)]) for r in queued),
        expiry_time=_expiry(envelope, precedence, site, now),
        not_before=getattr(envelope, "deferred_delivery_time", None),
        origin_peer=origin_peer,
        envelope_recipients=_all_responsible(envelope),
    )
    return Plan(
        message=message, rejected=rejected, subject=envelope, arrival=now, why=why, labels=labels
    )


def _route(
    router: Router,
    envelope: MessageEnvelope | Probe,
    recipient: RecipientField,
    routed: Mapping[str, Route],
) -> tuple[Route, LabelDecision | None]:
    """The recipient's route (``routed`` if the caller routed it), once its extensions'
    criticality is checked against it (X.411 9.1: the envelope's extensions and the
    recipient's own) and its security label against where it goes (X.411 8.5.9)."""
    name = recipient.recipient_name
    route = routed.get(name.canonical) or router.route(name)
    return router.judge(route, (*envelope.extensions, *recipient.extensions), name)


def _all_responsible(envelope: MessageEnvelope | Probe) -> int | None:
    """How many recipients ``envelope`` names if each has the responsibility bit set."""
    if all(r.responsible for r in envelope.recipients):
        return len(envelope.recipients)
    return None


def _loop(trace: Sequence[TraceEntry], internal: Sequence[InternalTraceEntry], site: Site) -> str:
    """Why the APDU is looping, or "" (X.411 14.3.1: loops detected from trace)."""
    if any(entry.mta_name == site.name for entry in internal):
        return f"loop: {site.name} is already in the internal trace"
    if any(entry.global_domain_identifier == site.domain for entry in trace[:-1]):
        return f"loop: the trace left domain {site.domain.text} and came back"
    return ""


def _outcomes(
    recipients: Sequence[RecipientField], diagnostic: NonDeliveryDiagnostic
) -> tuple[Outcome, ...]:
    report = NonDeliveryReport(
        reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER, diagnostic_code=diagnostic
    )
    return tuple(_outcome(r, report) for r in recipients)


def _unroutable(
    recipients: Sequence[RecipientField], routes: dict[int, Route]
) -> tuple[tuple[Outcome, ...], str]:
    """The outcomes of the recipients that have no route, each with the codes of its
    :class:`NoRoute` (no route at all, or a name under a local domain that is none of
    the local users), and why, for the log."""
    outcomes: list[Outcome] = []
    whys: dict[str, None] = {}
    for recipient in recipients:
        route = routes[id(recipient)]
        if isinstance(route, NoRoute):
            report = NonDeliveryReport(reason_code=route.reason, diagnostic_code=route.diagnostic)
            outcomes.append(_outcome(recipient, report))
            whys[route.why] = None
    return tuple(outcomes), "; ".join(whys)


def _outcome(recipient: RecipientField, report: NonDeliveryReport) -> Outcome:
    return Outcome(
        recipient=recipient.recipient_name,
        number=recipient.originally_specified_recipient_number,
        indicators=recipient.per_recipient_indicators,
        report=report,
    )


def _trace_entries(
    envelope: MessageEnvelope | Probe, site: Site, now: datetime
) -> tuple[TraceEntry | None, InternalTraceEntry]:
    """What this MTA adds to the trace: a trace-information element when its domain is
    not the last one there, and its internal-trace-information element."""
    trace = envelope.trace_information
    ours = None
    if not trace or trace[-1].global_domain_identifier != site.domain:
        ours = TraceEntry(global_domain_identifier=site.domain, arrival_time=now)
    internal = InternalTraceEntry(
        global_domain_identifier=site.domain,
        mta_name=site.name,
        arrival_time=now,
        routing_action=RoutingAction.RELAYED,
    )
    return ours, internal


def _with_trace(
    envelope: MessageEnvelope | Probe, trace: TraceEntry | None, internal: InternalTraceEntry
) -> MessageEnvelope | Probe:
    """``envelope`` with the entries of :func:`_trace_entries` (as
    :meth:`~p1.mts.envelope.MessageEnvelope.with_trace` and then ``with_internal_trace``
    would leave it, copied once rather than twice)."""
    entries = envelope.trace_information if trace is None else (*envelope.trace_information, trace)
    extensions = with_internal_trace_entry(envelope.extensions, internal)
    return dataclasses.replace(envelope, trace_information=entries, extensions=extensions)


def precedence_of(
    envelope: MessageEnvelope | Probe | Report | None,
    site: Site,
    subject_precedence: Callable[[str], Precedence | None] = lambda _: None,
) -> Precedence:
    """The precedence an APDU travels and is scheduled at: a message's own, under the
    site's table; a report's, its subject's as ``subject_precedence`` knows it (a report's
    envelope carries no priority, X.411 12.2.1.3); routine for a probe (X.411 12.2.1.2), a
    report whose subject is not known, or an APDU that does not decode (None).

    The callers differ only in what they know of a subject: intake asks the queue, in the
    unit that stores the report; the service asks the messages taken in lately
    (:mod:`mta.intake.recent`), to schedule that unit before the store is read."""
    if isinstance(envelope, MessageEnvelope):
        return envelope.precedence_in(site.table)
    if isinstance(envelope, Report):
        known = subject_precedence(envelope.content.subject_identifier.text)
        return Precedence.ROUTINE if known is None else known  # (deferred is 0: not falsy)
    return Precedence.ROUTINE


def _expiry(
    envelope: MessageEnvelope | Probe, precedence: Precedence, site: Site, now: datetime
) -> datetime:
    limit = now + timedelta(seconds=site.max_age.of(precedence))
    latest = envelope.latest_delivery_time
    return limit if latest is None else min(limit, latest)


def _new_recipient(recipient: RecipientField, route: Route) -> NewRecipient:
    return NewRecipient(
        recipient=recipient.recipient_name.canonical,
        shown=format_orname(recipient.recipient_name),
        route=_route_name(route),
        report_request=indicator_bits(recipient.per_recipient_indicators),
        recipient_number=recipient.originally_specified_recipient_number,
    )


def _route_name(route: Route) -> str:
    if isinstance(route, LocalRoute):
        return LOCAL_ROUTE
    assert isinstance(route, PeerRoute)
    return route.peer


# --- reports ---------------------------------------------------------------------------


def _plan_report(
    report: Report,
    site: Site,
    *,
    origin_peer: str | None,
    now: datetime,
    precedence: Precedence = Precedence.ROUTINE,
) -> Plan:
    """A report goes to its report-destination-name; one without a route is dropped (no
    report is ever made on a report, X.411 14.3.2)."""
    destination = report.envelope.report_destination_name
    route = site.router.route(destination)
    if isinstance(route, NoRoute):
        return Plan(message=None, arrival=now, why=f"no route for the report to {destination}")
    if _loop(report.envelope.trace_information, report.envelope.internal_trace, site):
        return Plan(message=None, arrival=now, why="the report is looping")
    traced = report.with_internal_trace(
        InternalTraceEntry(
            global_domain_identifier=site.domain, mta_name=site.name, arrival_time=now
        )
    )
    trace = report.envelope.trace_information
    if trace and trace[-1].global_domain_identifier != site.domain:
        traced = traced.with_trace(
            TraceEntry(global_domain_identifier=site.domain, arrival_time=now)
        )
    try:
        apdu = encode_mts_apdu(traced)
    except EncodeError as error:
        raise MalformedApduError(f"the report cannot be written with our trace: {error}") from error
    message = NewMessage(
        mts_identifier=report.mts_identifier.text,
        kind=ApduKind.REPORT,
        apdu=apdu,
        precedence=precedence,
        originator=destination.canonical,
        recipients=(
            NewRecipient(
                recipient=destination.canonical,
                shown=format_orname(destination),
                route=_route_name(route),
            ),
        ),
        expiry_time=now + timedelta(seconds=site.max_age.of(precedence)),
        origin_peer=origin_peer,
    )
    return Plan(message=message, arrival=now)
