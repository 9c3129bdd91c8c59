"""The daemon's pure decisions on an MTS-APDU: intake (trace, loops, routing), the reports it
originates, the envelope of a local submission, and the APDU a transfer carries.

No sockets, no store, no clock: times are fixed and passed in.  The MTA is site B of
``config/examples`` (MTA-B, PRMD SITEB delivered locally, PRMD SITEA routed to MTA-A).
"""

from __future__ import annotations

import dataclasses
import mmap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from config.loader import load_config
from config.schema import MaxAge
from mta.intake.plan import (
    IntakeError,
    Site,
    _trace_entries,
    _with_trace,
    domain_of,
    plan_intake,
    plan_report,
    plan_submission,
    precedence_of,
)
from mta.intake.reports import (
    Outcome,
    build_report,
    indicator_bits,
    indicators_from,
    report_apdu,
    wants_report,
)
from mta.intake.routing import Router
from mta.intake.submission import SubmitRequest, build_submission
from mta.outbound.outgoing import transfer_apdu
from p1.ipms.ipm import P2_CONTENT_TYPE, P772_CONTENT_TYPE
from p1.mts.envelope import (
    Message,
    MessageEnvelope,
    MTSIdentifier,
    PerRecipientIndicators,
    Probe,
    RecipientField,
    Report,
    TraceEntry,
    decode_mts_apdu,
    encode_mts_apdu,
)
from p1.mts.extensions import latest_delivery_time_extension, with_extension
from p1.mts.fields import GlobalDomainIdentifier
from p1.mts.orname import ORName, format_orname, parse_orname
from p1.mts.precedence import DEFAULT_TABLE, Precedence
from p1.mts.report import (
    DeliveryReport,
    NonDeliveryDiagnostic,
    NonDeliveryReason,
    NonDeliveryReport,
)
from p1.mts.trace import InternalTraceEntry, RoutingAction
from store import LOCAL_ROUTE, ApduKind, QueueEntry, QueueRecipient, RecipientState
from store.queue import NewRecipient
from store.spool import as_bytes

EXAMPLES = Path(__file__).resolve().parents[3] / "config" / "examples"
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
EARLIER = NOW - timedelta(minutes=5)

SITEA = domain_of(parse_orname("C=GB;ADMD= ;PRMD=SITEA"))
SITEB = domain_of(parse_orname("C=GB;ADMD= ;PRMD=SITEB"))
SMITH = parse_orname("C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith")
JONES = parse_orname("C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones")
BROWN = parse_orname("C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Brown")
NOBODY = parse_orname("C=FR;ADMD= ;PRMD=NOWHERE;O=X;S=Nobody")
CONTENT = b"\x04\x05opaque"  # the MTA never decodes the content it relays

RESPONSIBLE = PerRecipientIndicators(responsibility=True, originating_mta_non_delivery_report=True)
REPORT = PerRecipientIndicators(responsibility=True, originating_mta_report=True)


def site_b(max_age: MaxAge | None = None) -> Site:
    """Site B of the examples, every name under its domain a user."""
    example = load_config(EXAMPLES / "site-b.toml")
    config = dataclasses.replace(example, local_users=None, accept_any_recipient=True)
    return Site(
        name=config.name,
        domain=domain_of(config.global_domain),
        router=Router(config),
        table=config.precedence_table,
        max_age=max_age or config.max_age,
    )


def identifier(local: str, domain: GlobalDomainIdentifier = SITEA) -> MTSIdentifier:
    return MTSIdentifier(global_domain_identifier=domain, local_identifier=local)


def recipient(
    name: ORName, number: int = 1, indicators: PerRecipientIndicators = RESPONSIBLE
) -> RecipientField:
    return RecipientField(
        recipient_name=name,
        originally_specified_recipient_number=number,
        per_recipient_indicators=indicators,
    )


def envelope(
    *recipients: RecipientField,
    trace: tuple[GlobalDomainIdentifier, ...] = (SITEA,),
    precedence: Precedence = Precedence.PRIORITY,
    **fields: object,
) -> MessageEnvelope:
    """A message from Smith at site A, as A transfers it (A's trace entry)."""
    made = MessageEnvelope(
        mts_identifier=identifier("msg-1"),
        originator_name=SMITH,
        content_type=P772_CONTENT_TYPE,
        trace_information=tuple(
            TraceEntry(global_domain_identifier=domain, arrival_time=EARLIER) for domain in trace
        ),
        recipients=recipients or (recipient(JONES),),
    ).with_precedence(precedence)
    return dataclasses.replace(made, **fields)  # type: ignore[arg-type]


def apdu(made: MessageEnvelope) -> bytes:
    return encode_mts_apdu(Message(envelope=made, content=CONTENT))


def decoded_message(data: bytes | mmap.mmap) -> Message:
    message = decode_mts_apdu(as_bytes(data))
    assert isinstance(message, Message)
    return message


def non_delivered(diagnostic: NonDeliveryDiagnostic) -> NonDeliveryReport:
    return NonDeliveryReport(
        reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER, diagnostic_code=diagnostic
    )


# --- intake: routing -----------------------------------------------------------------------


def test_message_for_a_local_user_is_queued_for_the_store() -> None:
    plan = plan_intake(apdu(envelope()), site_b(), origin_peer="MTA-A", now=NOW)
    message = plan.message
    assert message is not None
    assert plan.rejected == ()
    assert (message.kind, message.precedence, message.origin_peer) == (
        ApduKind.MESSAGE,
        Precedence.PRIORITY,
        "MTA-A",
    )
    assert message.mts_identifier == identifier("msg-1").text
    assert message.originator == SMITH.canonical
    assert message.recipients == (
        NewRecipient(
            recipient=JONES.canonical,
            shown=format_orname(JONES),
            route=LOCAL_ROUTE,
            report_request=indicator_bits(RESPONSIBLE),
            recipient_number=1,
        ),
    )


def test_message_is_queued_with_our_trace_and_its_content_as_received() -> None:
    plan = plan_intake(apdu(envelope()), site_b(), origin_peer="MTA-A", now=NOW)
    assert plan.message is not None
    queued = decoded_message(plan.message.apdu)
    assert queued.content == CONTENT
    assert [
        (t.global_domain_identifier, t.arrival_time) for t in queued.envelope.trace_information
    ] == [
        (SITEA, EARLIER),
        (SITEB, NOW),
    ]
    (internal,) = queued.envelope.internal_trace
    assert (internal.mta_name, internal.global_domain_identifier, internal.arrival_time) == (
        "MTA-B",
        SITEB,
        NOW,
    )
    assert internal.routing_action is RoutingAction.RELAYED


def test_domain_trace_is_not_repeated_when_the_message_is_already_in_our_domain() -> None:
    plan = plan_intake(
        apdu(envelope(trace=(SITEA, SITEB))), site_b(), origin_peer="MTA-B2", now=NOW
    )
    assert plan.message is not None
    queued = decoded_message(plan.message.apdu)
    assert [t.global_domain_identifier for t in queued.envelope.trace_information] == [
        SITEA,
        SITEB,
    ]
    assert [e.mta_name for e in queued.envelope.internal_trace] == ["MTA-B"]


def test_recipient_in_a_peers_domain_is_routed_to_that_peer() -> None:
    submitted = envelope(recipient(SMITH), trace=(), originator_name=JONES)
    plan = plan_intake(apdu(submitted), site_b(), origin_peer=None, now=NOW)
    assert plan.message is not None
    assert [r.route for r in plan.message.recipients] == ["MTA-A"]


def test_only_recipients_this_mta_is_responsible_for_are_taken_from_a_peer() -> None:
    not_ours = PerRecipientIndicators(responsibility=False)
    made = envelope(recipient(JONES, 1), recipient(BROWN, 2, not_ours))

    relayed = plan_intake(apdu(made), site_b(), origin_peer="MTA-A", now=NOW)
    assert relayed.message is not None
    assert [r.recipient for r in relayed.message.recipients] == [JONES.canonical]

    submitted = plan_intake(apdu(made), site_b(), origin_peer=None, now=NOW)
    assert submitted.message is not None
    assert [r.recipient for r in submitted.message.recipients] == [
        JONES.canonical,
        BROWN.canonical,
    ]


def test_recipient_without_a_route_is_rejected_and_the_others_queued() -> None:
    made = envelope(recipient(JONES, 1), recipient(NOBODY, 2))
    plan = plan_intake(apdu(made), site_b(), origin_peer="MTA-A", now=NOW)
    assert plan.message is not None
    assert [r.recipient for r in plan.message.recipients] == [JONES.canonical]
    assert plan.rejected == (
        Outcome(
            recipient=NOBODY,
            number=2,
            indicators=RESPONSIBLE,
            report=non_delivered(NonDeliveryDiagnostic.UNRECOGNISED_OR_NAME),
        ),
    )
    assert plan.subject == made
    assert plan.why == "no route"


def test_recipient_under_our_domain_that_is_no_local_user_is_rejected() -> None:
    config = load_config(EXAMPLES / "site-b.toml")
    site = dataclasses.replace(
        site_b(),
        router=Router(dataclasses.replace(config, local_users=(JONES,))),
    )
    made = envelope(recipient(JONES, 1), recipient(BROWN, 2), recipient(NOBODY, 3))
    plan = plan_intake(apdu(made), site, origin_peer="MTA-A", now=NOW)
    assert plan.message is not None
    assert [(r.recipient, r.route) for r in plan.message.recipients] == [
        (JONES.canonical, LOCAL_ROUTE)
    ]
    unrecognised = non_delivered(NonDeliveryDiagnostic.UNRECOGNISED_OR_NAME)
    assert [(o.recipient, o.number, o.report) for o in plan.rejected] == [
        (BROWN, 2, unrecognised),
        (NOBODY, 3, unrecognised),
    ]
    assert plan.why == "not a local user; no route"


def test_message_with_no_routable_recipient_queues_nothing() -> None:
    plan = plan_intake(apdu(envelope(recipient(NOBODY))), site_b(), origin_peer=None, now=NOW)
    assert plan.message is None
    assert [o.recipient for o in plan.rejected] == [NOBODY]


# --- intake: loops -------------------------------------------------------------------------


def test_message_whose_internal_trace_names_this_mta_is_a_loop() -> None:
    been_here = InternalTraceEntry(
        global_domain_identifier=SITEB, mta_name="MTA-B", arrival_time=EARLIER
    )
    made = envelope(recipient(JONES, 1), recipient(SMITH, 2)).with_internal_trace(been_here)
    plan = plan_intake(apdu(made), site_b(), origin_peer="MTA-A", now=NOW)
    assert plan.message is None
    assert [(o.recipient, o.report) for o in plan.rejected] == [
        (JONES, non_delivered(NonDeliveryDiagnostic.LOOP_DETECTED)),
        (SMITH, non_delivered(NonDeliveryDiagnostic.LOOP_DETECTED)),
    ]
    assert plan.why == "loop: MTA-B is already in the internal trace"


def test_message_that_left_our_domain_and_came_back_is_a_loop() -> None:
    plan = plan_intake(apdu(envelope(trace=(SITEB, SITEA))), site_b(), origin_peer="MTA-A", now=NOW)
    assert plan.message is None
    assert [o.report for o in plan.rejected] == [non_delivered(NonDeliveryDiagnostic.LOOP_DETECTED)]
    assert plan.why.startswith("loop: the trace left domain ")


def test_another_mta_of_our_domain_in_the_internal_trace_is_no_loop() -> None:
    elsewhere = InternalTraceEntry(
        global_domain_identifier=SITEB, mta_name="MTA-B2", arrival_time=EARLIER
    )
    made = envelope(trace=(SITEA, SITEB)).with_internal_trace(elsewhere)
    plan = plan_intake(apdu(made), site_b(), origin_peer="MTA-B2", now=NOW)
    assert plan.message is not None
    queued = decoded_message(plan.message.apdu)
    assert [e.mta_name for e in queued.envelope.internal_trace] == ["MTA-B2", "MTA-B"]


# --- intake: timing and kinds ---------------------------------------------------------------


def test_expiry_is_the_maximum_age_of_the_precedence() -> None:
    site = site_b(MaxAge(priority=60.0, flash=5.0))
    plan = plan_intake(apdu(envelope()), site, origin_peer="MTA-A", now=NOW)
    assert plan.message is not None
    assert plan.message.expiry_time == NOW + timedelta(seconds=60)

    flash = plan_intake(
        apdu(envelope(precedence=Precedence.FLASH)), site, origin_peer="MTA-A", now=NOW
    )
    assert flash.message is not None
    assert flash.message.expiry_time == NOW + timedelta(seconds=5)


def test_expiry_is_the_latest_delivery_time_when_that_comes_first() -> None:
    request = SubmitRequest(
        originator=JONES,
        recipients=(BROWN,),
        precedence=Precedence.PRIORITY,
        content_type=P772_CONTENT_TYPE,
        content=CONTENT,
        latest_delivery_time=NOW + timedelta(seconds=10),
    )
    message = build_submission(request, identifier=identifier("ldt", SITEB), table=DEFAULT_TABLE)
    site = site_b(MaxAge(priority=60.0))
    plan = plan_intake(encode_mts_apdu(message), site, origin_peer=None, now=NOW)
    assert plan.message is not None
    assert plan.message.expiry_time == NOW + timedelta(seconds=10)


def test_deferred_delivery_time_holds_the_message_until_then() -> None:
    later = NOW + timedelta(hours=1)
    plan = plan_intake(
        apdu(envelope(deferred_delivery_time=later)), site_b(), origin_peer="MTA-A", now=NOW
    )
    assert plan.message is not None
    assert plan.message.not_before == later


def test_probe_is_queued_as_a_routine_probe() -> None:
    probe = Probe(
        probe_identifier=identifier("probe-1"),
        originator_name=SMITH,
        content_type=P2_CONTENT_TYPE,
        trace_information=(TraceEntry(global_domain_identifier=SITEA, arrival_time=EARLIER),),
        recipients=(recipient(JONES),),
    )
    plan = plan_intake(encode_mts_apdu(probe), site_b(), origin_peer="MTA-A", now=NOW)
    assert plan.message is not None
    assert (plan.message.kind, plan.message.precedence) == (ApduKind.PROBE, Precedence.ROUTINE)
    queued = decode_mts_apdu(plan.message.apdu)
    assert isinstance(queued, Probe)
    assert [e.mta_name for e in queued.internal_trace] == ["MTA-B"]


def test_apdu_that_does_not_decode_is_refused() -> None:
    with pytest.raises(IntakeError, match=r"^the MTS-APDU does not decode: "):
        plan_intake(b"\x30\x03\x02\x01\x01", site_b(), origin_peer="MTA-A", now=NOW)


# --- intake: reports -------------------------------------------------------------------------


def report_on(subject: MessageEnvelope, *, trace_domain: GlobalDomainIdentifier = SITEB) -> Report:
    outcome = Outcome(
        recipient=JONES,
        number=1,
        indicators=REPORT,
        report=DeliveryReport(message_delivery_time=EARLIER),
    )
    report = build_report(
        subject,
        [outcome],
        identifier=identifier("report-1", trace_domain),
        domain=trace_domain,
        arrival=EARLIER,
        now=EARLIER,
    )
    assert report is not None
    return report


def test_report_goes_to_its_destination_at_the_precedence_asked() -> None:
    subject = envelope(recipient(JONES, 1, REPORT))
    plan = plan_report(report_on(subject), site_b(), precedence=Precedence.FLASH, now=NOW)
    message = plan.message
    assert message is not None
    assert (message.kind, message.precedence) == (ApduKind.REPORT, Precedence.FLASH)
    assert message.originator == SMITH.canonical
    assert message.recipients == (
        NewRecipient(recipient=SMITH.canonical, shown=format_orname(SMITH), route="MTA-A"),
    )
    queued = decode_mts_apdu(message.apdu)
    assert isinstance(queued, Report)
    assert [e.mta_name for e in queued.envelope.internal_trace] == ["MTA-B"]
    assert [t.global_domain_identifier for t in queued.envelope.trace_information] == [SITEB]


def test_report_received_from_a_peer_gets_our_domain_in_its_trace() -> None:
    subject = envelope(recipient(JONES, 1, REPORT), originator_name=JONES)
    received = report_on(subject, trace_domain=SITEA)
    plan = plan_intake(report_apdu(received), site_b(), origin_peer="MTA-A", now=NOW)
    assert plan.message is not None
    assert plan.message.precedence is Precedence.ROUTINE
    assert [r.route for r in plan.message.recipients] == [LOCAL_ROUTE]
    queued = decode_mts_apdu(plan.message.apdu)
    assert isinstance(queued, Report)
    assert [t.global_domain_identifier for t in queued.envelope.trace_information] == [
        SITEA,
        SITEB,
    ]


def test_report_received_from_a_peer_goes_on_at_its_subjects_queued_precedence() -> None:
    subject = envelope(recipient(JONES, 1, REPORT), originator_name=JONES)
    asked: list[str] = []

    def queued_at(identifier: str) -> Precedence | None:
        asked.append(identifier)
        return Precedence.FLASH

    received = report_apdu(report_on(subject, trace_domain=SITEA))
    plan = plan_intake(
        received, site_b(), origin_peer="MTA-A", now=NOW, subject_precedence=queued_at
    )
    assert asked == [subject.mts_identifier.text]
    assert plan.message is not None
    assert plan.message.precedence is Precedence.FLASH
    assert plan.message.expiry_time == NOW + timedelta(
        seconds=site_b().max_age.of(Precedence.FLASH)
    )


def test_report_on_a_deferred_subject_goes_on_as_deferred() -> None:
    subject = envelope(recipient(JONES, 1, REPORT), originator_name=JONES)
    received = report_apdu(report_on(subject, trace_domain=SITEA))
    plan = plan_intake(
        received,
        site_b(),
        origin_peer="MTA-A",
        now=NOW,
        subject_precedence=lambda _: Precedence.DEFERRED,
    )
    assert plan.message is not None
    assert plan.message.precedence is Precedence.DEFERRED


def test_report_on_a_subject_not_queued_here_goes_on_as_routine() -> None:
    subject = envelope(recipient(JONES, 1, REPORT), originator_name=JONES)
    received = report_apdu(report_on(subject, trace_domain=SITEA))
    plan = plan_intake(
        received, site_b(), origin_peer="MTA-A", now=NOW, subject_precedence=lambda _: None
    )
    assert plan.message is not None
    assert plan.message.precedence is Precedence.ROUTINE


@pytest.mark.parametrize("known", [*Precedence, None], ids=lambda p: getattr(p, "label", "none"))
def test_one_rule_gives_a_reports_precedence_to_the_scheduler_and_to_the_queue(
    known: Precedence | None,
) -> None:
    # The service schedules a received report's unit with precedence_of and what it
    # remembers of the subject; the unit queues it with what the queue knows.  Given the
    # same knowledge, both come to the same precedence.
    subject = envelope(recipient(JONES, 1, REPORT), originator_name=JONES)
    report = report_on(subject, trace_domain=SITEA)
    scheduled = precedence_of(report, site_b(), lambda _: known)
    plan = plan_intake(
        report_apdu(report),
        site_b(),
        origin_peer="MTA-A",
        now=NOW,
        subject_precedence=lambda _: known,
    )
    assert plan.message is not None
    assert scheduled is plan.message.precedence
    assert scheduled is (Precedence.ROUTINE if known is None else known)


@pytest.mark.parametrize("precedence", list(Precedence), ids=lambda p: p.label)
def test_a_message_travels_at_its_own_precedence_and_a_probe_as_routine(
    precedence: Precedence,
) -> None:
    made = envelope(recipient(JONES), precedence=precedence)
    assert precedence_of(made, site_b(), lambda _: Precedence.OVERRIDE) is precedence
    assert precedence_of(_probe_from_a(), site_b()) is Precedence.ROUTINE
    assert precedence_of(None, site_b()) is Precedence.ROUTINE


def test_report_without_a_route_is_dropped() -> None:
    subject = envelope(recipient(JONES, 1, REPORT), originator_name=NOBODY)
    plan = plan_report(report_on(subject), site_b(), precedence=Precedence.ROUTINE, now=NOW)
    assert plan.message is None
    assert plan.rejected == ()
    assert plan.why.startswith("no route for the report to ")


def test_looping_report_is_dropped_without_a_report_on_it() -> None:
    been_here = InternalTraceEntry(
        global_domain_identifier=SITEB, mta_name="MTA-B", arrival_time=EARLIER
    )
    report = report_on(envelope(recipient(JONES, 1, REPORT))).with_internal_trace(been_here)
    plan = plan_intake(report_apdu(report), site_b(), origin_peer="MTA-A", now=NOW)
    assert (plan.message, plan.rejected, plan.why) == (None, (), "the report is looping")


# --- reports --------------------------------------------------------------------------------

DELIVERED = DeliveryReport(message_delivery_time=NOW)
FAILED = non_delivered(NonDeliveryDiagnostic.UNRECOGNISED_OR_NAME)


@pytest.mark.parametrize(
    ("indicators", "delivered", "failed"),
    [
        (PerRecipientIndicators(), False, False),
        (PerRecipientIndicators(originating_mta_report=True), True, True),
        (PerRecipientIndicators(originating_mta_non_delivery_report=True), False, True),
        (PerRecipientIndicators(originator_report=True), False, False),  # the user's, not ours
    ],
    ids=["none", "report", "non-delivery-report", "originator-only"],
)
def test_report_is_made_as_the_originating_mta_asked(
    indicators: PerRecipientIndicators, delivered: bool, failed: bool
) -> None:
    assert wants_report(indicators, DELIVERED) is delivered
    assert wants_report(indicators, FAILED) is failed


def test_report_covers_only_the_recipients_that_asked() -> None:
    subject = envelope(recipient(JONES, 1, REPORT), recipient(BROWN, 2, RESPONSIBLE))
    outcomes = [
        Outcome(recipient=JONES, number=1, indicators=REPORT, report=DELIVERED),
        Outcome(recipient=BROWN, number=2, indicators=RESPONSIBLE, report=DELIVERED),
    ]
    report = build_report(
        subject,
        outcomes,
        identifier=identifier("r-1", SITEB),
        domain=SITEB,
        arrival=EARLIER,
        now=NOW,
    )
    assert report is not None
    assert report.envelope.report_identifier == identifier("r-1", SITEB)
    assert report.envelope.report_destination_name == SMITH
    assert [
        (t.global_domain_identifier, t.arrival_time) for t in report.envelope.trace_information
    ] == [(SITEB, NOW)]
    content = report.content
    assert (content.subject_identifier, content.content_type) == (
        identifier("msg-1"),
        P772_CONTENT_TYPE,
    )
    (only,) = content.recipients
    assert (only.actual_recipient_name, only.originally_specified_recipient_number) == (JONES, 1)
    assert only.last_trace_information.arrival_time == EARLIER
    assert only.last_trace_information.report == DELIVERED


def test_no_report_when_no_recipient_asked() -> None:
    outcome = Outcome(recipient=JONES, number=1, indicators=RESPONSIBLE, report=DELIVERED)
    made = build_report(
        envelope(),
        [outcome],
        identifier=identifier("r-2", SITEB),
        domain=SITEB,
        arrival=EARLIER,
        now=NOW,
    )
    assert made is None


def test_report_apdu_decodes_to_the_report() -> None:
    report = report_on(envelope(recipient(JONES, 1, REPORT)))
    assert decode_mts_apdu(report_apdu(report)) == report


@pytest.mark.parametrize(
    ("indicators", "bits"),
    [
        (PerRecipientIndicators(), 0),
        (PerRecipientIndicators(responsibility=True), 0b1),
        (RESPONSIBLE, 0b101),
        (REPORT, 0b11),
        (
            PerRecipientIndicators(originator_report=True, originator_non_delivery_report=True),
            0b11000,
        ),
    ],
)
def test_indicator_bits_are_kept_as_the_queue_stores_them(
    indicators: PerRecipientIndicators, bits: int
) -> None:
    assert indicator_bits(indicators) == bits
    assert indicator_bits(indicators_from(bits)) == bits
    assert wants_report(indicators_from(bits), FAILED) == wants_report(indicators, FAILED)


# --- submission ------------------------------------------------------------------------------


def submit(**fields: object) -> Message:
    request = SubmitRequest(
        originator=JONES,
        recipients=(BROWN, SMITH),
        precedence=Precedence.IMMEDIATE,
        content_type=P772_CONTENT_TYPE,
        content=CONTENT,
    )
    request = dataclasses.replace(request, **fields)  # type: ignore[arg-type]
    return build_submission(request, identifier=identifier("sub-1", SITEB), table=DEFAULT_TABLE)


def test_submission_numbers_the_recipients_and_takes_responsibility_for_all() -> None:
    message = submit()
    made = message.envelope
    assert made.mts_identifier == identifier("sub-1", SITEB)
    assert (made.originator_name, made.content_type) == (JONES, P772_CONTENT_TYPE)
    assert [
        (r.recipient_name, r.originally_specified_recipient_number) for r in made.recipients
    ] == [
        (BROWN, 1),
        (SMITH, 2),
    ]
    assert all(r.responsible for r in made.recipients)
    assert message.content == CONTENT
    assert made.trace_information == ()


@pytest.mark.parametrize(
    ("delivery_report", "indicators"),
    [
        (
            False,
            PerRecipientIndicators(
                responsibility=True,
                originating_mta_non_delivery_report=True,
                originator_non_delivery_report=True,
            ),
        ),
        (
            True,
            PerRecipientIndicators(
                responsibility=True, originating_mta_report=True, originator_report=True
            ),
        ),
    ],
    ids=["non-delivery-only", "delivery-report"],
)
def test_submission_asks_for_the_reports_the_user_wants(
    delivery_report: bool, indicators: PerRecipientIndicators
) -> None:
    made = submit(delivery_report=delivery_report).envelope
    assert [r.per_recipient_indicators for r in made.recipients] == [indicators, indicators]


@pytest.mark.parametrize("precedence", list(Precedence))
def test_submission_carries_the_precedence_in_the_envelope(precedence: Precedence) -> None:
    message = submit(precedence=precedence)
    assert message.envelope.precedence_in(DEFAULT_TABLE) is precedence
    again = decode_mts_apdu(encode_mts_apdu(message))
    assert isinstance(again, Message)
    assert again.envelope.precedence_in(DEFAULT_TABLE) is precedence


def test_submission_carries_deferred_and_latest_delivery_times() -> None:
    deferred, latest = NOW + timedelta(hours=1), NOW + timedelta(hours=2)
    made = submit(deferred_delivery_time=deferred, latest_delivery_time=latest).envelope
    assert (made.deferred_delivery_time, made.latest_delivery_time) == (deferred, latest)
    assert (submit().envelope.deferred_delivery_time, submit().envelope.latest_delivery_time) == (
        None,
        None,
    )


def test_submission_without_recipients_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one recipient"):
        submit(recipients=())


# --- the APDU a transfer carries --------------------------------------------------------------


def entry(data: bytes, kind: ApduKind, *numbers: int) -> QueueEntry:
    """A claimed queue entry with the recipients numbered ``numbers``."""
    return QueueEntry(
        message_id=1,
        mts_identifier=identifier("msg-1").text,
        kind=kind,
        precedence=Precedence.PRIORITY,
        originator=SMITH.canonical,
        apdu=data,
        arrival_time=NOW,
        expiry_time=None,
        origin_peer=None,
        recipients=tuple(
            QueueRecipient(
                id=number,
                recipient=f"recipient {number}",
                route="MTA-A",
                state=RecipientState.IN_FLIGHT,
                attempts=1,
                next_attempt_at=NOW,
                last_error=None,
                report_request=0,
                recipient_number=number,
            )
            for number in numbers
        ),
    )


def responsibility(data: bytes | mmap.mmap) -> list[bool]:
    decoded = decode_mts_apdu(as_bytes(data))
    assert isinstance(decoded, Message | Probe)
    made = decoded.envelope if isinstance(decoded, Message) else decoded
    return [r.responsible for r in made.recipients]


def test_transfer_with_every_recipient_claimed_sends_the_apdu_as_queued() -> None:
    queued = apdu(envelope(recipient(JONES, 1), recipient(BROWN, 2)))
    assert transfer_apdu(entry(queued, ApduKind.MESSAGE, 1, 2)) == queued


def test_transfer_passes_responsibility_for_the_claimed_recipients_only() -> None:
    queued = apdu(envelope(recipient(JONES, 1), recipient(BROWN, 2), recipient(SMITH, 3)))
    sent = transfer_apdu(entry(queued, ApduKind.MESSAGE, 2))
    assert responsibility(sent) == [False, True, False]
    assert decoded_message(sent).content == CONTENT
    assert decoded_message(sent).envelope.mts_identifier == identifier("msg-1")


def test_transfer_of_a_probe_passes_responsibility_for_the_claimed_recipients_only() -> None:
    probe = Probe(
        probe_identifier=identifier("probe-1"),
        originator_name=SMITH,
        content_type=P2_CONTENT_TYPE,
        recipients=(recipient(JONES, 1), recipient(BROWN, 2)),
    )
    sent = transfer_apdu(entry(encode_mts_apdu(probe), ApduKind.PROBE, 1))
    assert responsibility(sent) == [True, False]


def test_transfer_of_a_report_sends_it_as_queued() -> None:
    queued = report_apdu(report_on(envelope(recipient(JONES, 1, REPORT))))
    assert transfer_apdu(entry(queued, ApduKind.REPORT, 1)) == queued


# --- planning a submission from the envelope built --------------------------------------------


@pytest.mark.parametrize(
    "recipients", [(BROWN, SMITH), (NOBODY, JONES), (NOBODY,)], ids=["routed", "one", "none"]
)
def test_a_submission_is_planned_as_its_encoding_would_be(recipients: tuple[ORName, ...]) -> None:
    message = submit(recipients=recipients, delivery_report=True)
    planned = plan_submission(message, site_b(), now=NOW)
    read_back = plan_intake(encode_mts_apdu(message), site_b(), origin_peer=None, now=NOW)
    # The same rows (the APDU to the octet, with the same trace), the same reports.
    assert planned == read_back


def test_a_submission_is_encoded_once_with_the_trace_of_this_mta() -> None:
    plan = plan_submission(submit(), site_b(), now=NOW)
    assert plan.message is not None
    sent = decoded_message(plan.message.apdu)
    assert sent.content == CONTENT
    assert [e.global_domain_identifier for e in sent.envelope.trace_information] == [SITEB]
    assert [e.mta_name for e in sent.envelope.internal_trace] == [site_b().name]


def test_intake_counts_the_recipients_of_an_envelope_responsible_for_all() -> None:
    both = envelope(recipient(JONES, 1), recipient(SMITH, 2))
    plan = plan_intake(apdu(both), site_b(), origin_peer="MTA-A", now=NOW)
    assert plan.message is not None and plan.message.envelope_recipients == 2
    not_ours = PerRecipientIndicators(responsibility=False)
    partly = envelope(recipient(JONES, 1), recipient(SMITH, 2, not_ours))
    plan = plan_intake(apdu(partly), site_b(), origin_peer="MTA-A", now=NOW)
    assert plan.message is not None and plan.message.envelope_recipients is None


def test_a_transfer_of_the_whole_envelope_is_sent_without_decoding_it() -> None:
    # Not BER at all: a decode would fail.
    whole = dataclasses.replace(entry(b"opaque", ApduKind.MESSAGE, 1, 2), envelope_recipients=2)
    assert transfer_apdu(whole) == b"opaque"


def test_a_transfer_of_part_of_a_counted_envelope_still_passes_responsibility() -> None:
    queued = apdu(envelope(recipient(JONES, 1), recipient(BROWN, 2)))
    part = dataclasses.replace(entry(queued, ApduKind.MESSAGE, 2), envelope_recipients=2)
    assert responsibility(transfer_apdu(part)) == [False, True]


# --- work done once: the same results as the step-by-step forms -------------------------------


@pytest.mark.parametrize("latest", [None, NOW + timedelta(hours=2)], ids=["", "latest"])
@pytest.mark.parametrize("precedence", list(Precedence))
def test_a_submission_envelope_is_the_one_with_precedence_makes(
    precedence: Precedence, latest: datetime | None
) -> None:
    made = submit(precedence=precedence, latest_delivery_time=latest).envelope
    expected = MessageEnvelope(
        mts_identifier=identifier("sub-1", SITEB),
        originator_name=JONES,
        content_type=P772_CONTENT_TYPE,
        recipients=made.recipients,
    ).with_precedence(precedence, DEFAULT_TABLE)
    if latest is not None:
        extensions = with_extension(expected.extensions, latest_delivery_time_extension(latest))
        expected = dataclasses.replace(expected, extensions=extensions)
    assert made == expected
    assert encode_mts_apdu(Message(envelope=made, content=CONTENT)) == encode_mts_apdu(
        Message(envelope=expected, content=CONTENT)
    )


def _probe_from_a() -> Probe:
    return Probe(
        probe_identifier=identifier("probe-1"),
        originator_name=SMITH,
        content_type=P2_CONTENT_TYPE,
        trace_information=(TraceEntry(global_domain_identifier=SITEA, arrival_time=EARLIER),),
        recipients=(recipient(JONES),),
    )


def _serialised(subject: MessageEnvelope | Probe) -> bytes:
    if isinstance(subject, MessageEnvelope):
        return encode_mts_apdu(Message(envelope=subject, content=CONTENT))
    return encode_mts_apdu(subject)


@pytest.mark.parametrize(
    ("subject", "domain_entry"),
    [
        (envelope(), True),
        (envelope(trace=(SITEA, SITEB)), False),
        (envelope(trace=()), True),
        (
            envelope().with_internal_trace(
                InternalTraceEntry(
                    global_domain_identifier=SITEA, mta_name="MTA-A", arrival_time=EARLIER
                )
            ),
            True,
        ),
        (_probe_from_a(), True),
    ],
    ids=["from-a", "our-domain-last", "no-trace", "internal-trace", "probe"],
)
def test_our_trace_is_added_as_with_trace_then_with_internal_trace_add_it(
    subject: MessageEnvelope | Probe, domain_entry: bool
) -> None:
    site = site_b()
    expected = subject
    if domain_entry:
        expected = expected.with_trace(TraceEntry(global_domain_identifier=SITEB, arrival_time=NOW))
    expected = expected.with_internal_trace(
        InternalTraceEntry(
            global_domain_identifier=SITEB,
            mta_name=site.name,
            arrival_time=NOW,
            routing_action=RoutingAction.RELAYED,
        )
    )
    traced = _with_trace(subject, *_trace_entries(subject, site, NOW))
    assert type(traced) is type(subject)
    assert traced == expected
    assert _serialised(traced) == _serialised(expected)


def test_an_unroutable_recipient_is_still_rejected_when_others_are_routed() -> None:
    plan = plan_submission(submit(recipients=(NOBODY, JONES, NOBODY)), site_b(), now=NOW)
    assert plan.message is not None
    assert [r.recipient for r in plan.message.recipients] == [JONES.canonical]
    assert [(o.recipient, o.number) for o in plan.rejected] == [(NOBODY, 1), (NOBODY, 3)]
    assert all(
        o.report == non_delivered(NonDeliveryDiagnostic.UNRECOGNISED_OR_NAME) for o in plan.rejected
    )
    assert plan.why == "no route"
