"""MTS-APDU codec: message, probe and report envelopes (X.411 clause 12.2, Annex A; X.419)."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import pickle
import tracemalloc
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p1 import asn1, ber
from p1.errors import DecodeError, EncodeError
from p1.mts.envelope import (
    Criticality,
    DeliveryReport,
    ExtensionField,
    GlobalDomainIdentifier,
    InternalTraceEntry,
    LastTraceInformation,
    Message,
    MessageEnvelope,
    MTSApdu,
    MTSIdentifier,
    NonDeliveryDiagnostic,
    NonDeliveryReason,
    NonDeliveryReport,
    PerMessageIndicators,
    PerRecipientIndicators,
    Precedence,
    Priority,
    Probe,
    RecipientField,
    Report,
    ReportContent,
    ReportEnvelope,
    ReportRecipientField,
    RoutingAction,
    StandardExtension,
    TraceEntry,
    TypeOfMTSUser,
    decode_message_envelope,
    decode_mts_apdu,
    encode_message_envelope,
    encode_mts_apdu,
    message_content,
    message_content_view,
    peek_envelope,
    priority_level_qualifier_extension,
    replace_message_envelope,
)
from p1.mts.extensions import encode_extension, latest_delivery_time_extension
from p1.mts.orname import ExtensionAttribute, ORName
from p1.mts.precedence import PRIORITY_LEVEL_QUALIFIER_OID, LevelQualifier
from tests.p1 import strategies

HYPOTHESIS = settings(suppress_health_check=[HealthCheck.too_slow])


def t(tag: int, *parts: bytes) -> bytes:
    """A definite-length TLV with a one-octet tag, written independently of the codec."""
    body = b"".join(parts)
    if len(body) < 0x80:
        return bytes([tag, len(body)]) + body
    size = len(body).to_bytes((len(body).bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + body


def pr(text: str) -> bytes:
    return t(0x13, text.encode())


def ia5(text: str) -> bytes:
    return t(0x16, text.encode())


# --- hand-written encodings ------------------------------------------------------------

P772 = bytes.fromhex("2b1a00a236000401")  # 1.3.26.0.4406.0.4.1
PLQ = bytes.fromhex("2b1a00a236000800")  # 1.3.26.0.4406.0.8.0

GDI = t(0x63, t(0x61, pr("GB")), t(0x62, pr(" ")), pr("NATO"))
# ORName: C=GB;ADMD= ;PRMD=NATO;O=ACT;S=Smith
ORIGINATOR = t(
    0x60,
    t(
        0x30,
        t(0x61, pr("GB")),
        t(0x62, pr(" ")),
        t(0xA2, pr("NATO")),
        t(0x83, b"ACT"),
        t(0xA5, t(0x80, b"Smith")),
    ),
)
# ORName: C=GB;ADMD= ;PRMD=NATO;O=HQ;S=Jones plus extension attribute 23 (not modelled)
RECIPIENT = t(
    0x60,
    t(
        0x30,
        t(0x61, pr("GB")),
        t(0x62, pr(" ")),
        t(0xA2, pr("NATO")),
        t(0x83, b"HQ"),
        t(0xA5, t(0x80, b"Jones")),
    ),
    t(0x31, t(0x30, t(0x80, b"\x17"), t(0xA1, pr("T1")))),
)

# A message as an established stack writes it: members in the standard's definition
# order, DEFAULT values sent explicitly, UTCTime without seconds and with an offset,
# extensions in no particular order, and extensions this codec does not know.
GOLDEN_ENVELOPE = t(
    0x31,
    t(0x64, GDI, ia5("msg-0001")),  # message-identifier
    ORIGINATOR,  # originator-name
    t(0x65, t(0x80, b"\x05\x20")),  # original-encoded-information-types: ia5-text
    t(0x06, P772),  # content-type extended
    t(0x4A, b"C-01"),  # content-identifier
    t(0x47, b"\x00"),  # priority normal, explicitly
    t(0x48, b"\x05\x20"),  # per-message-indicators: alternate-recipient-allowed
    t(0x80, b"2405061200Z"),  # deferred-delivery-time, no seconds
    t(0x69, t(0x30, GDI, t(0x31, t(0x80, b"240506070809+0100"), t(0x82, b"\x00")))),
    t(
        0xA3,
        t(0x30, t(0x80, b"\x63"), t(0x81, b"\x06\x40"), t(0xA2, t(0x04, b"abc"))),  # 99, critical
        t(0x30, t(0x83, PLQ), t(0xA2, t(0x02, b"\x01"))),  # priority-level-qualifier as INTEGER
        t(0x30, t(0x83, b"\x2a\x03\x04"), t(0xA2, t(0x30, pr("x")))),  # private 1.2.3.4
        t(0x30, t(0x80, b"\x05"), t(0x81, b"\x05\x20"), t(0xA2, t(0x17, b"240507000000Z"))),
    ),
    t(
        0xA2,
        t(
            0x31,
            RECIPIENT,
            t(0x80, b"\x01"),
            t(0x81, b"\x00\x88"),
            t(0xA3, t(0x30, t(0x80, b"\x0b"), t(0xA2, pr("42")))),
        ),
    ),
)
GOLDEN_MESSAGE = t(0xA0, GOLDEN_ENVELOPE, t(0x04, b"hello"))

GOLDEN_REPORT = t(
    0xA1,
    t(
        0x31,
        t(0x64, GDI, ia5("rpt-7")),
        ORIGINATOR,
        t(0x69, t(0x30, GDI, t(0x31, t(0x80, b"240506080000Z"), t(0x82, b"\x00")))),
    ),
    t(
        0x31,
        t(0x64, GDI, ia5("msg-0001")),
        t(0x06, P772),
        t(
            0xA0,
            t(
                0x31,
                t(0xA0, RECIPIENT[2:]),
                t(0x81, b"\x01"),
                t(0x82, b"\x00\x00"),
                t(
                    0xA3,
                    t(0x80, b"240506080000Z"),
                    t(0xA1, t(0xA1, t(0x80, b"\x01"), t(0x81, b"\x03"))),
                ),
            ),
            t(
                0x31,
                t(0xA0, ORIGINATOR[2:]),
                t(0x81, b"\x02"),
                t(0x82, b"\x00\x00"),
                t(
                    0xA3,
                    t(0x80, b"2405060800Z"),
                    t(0xA1, t(0xA0, t(0x80, b"2405060759Z"), t(0x81, b"\x00"))),
                ),
            ),
        ),
    ),
)

GOLDEN_PROBE = t(
    0xA2,
    t(0x64, GDI, ia5("probe-1")),
    ORIGINATOR,
    t(0x46, b"\x16"),
    t(0x80, b"\x03\xe8"),
    t(0x69, t(0x30, GDI, t(0x31, t(0x80, b"240506070809Z"), t(0x82, b"\x00")))),
    t(0xA2, t(0x31, RECIPIENT, t(0x80, b"\x01"), t(0x81, b"\x00\x80"))),
)

UTC_GB = GlobalDomainIdentifier(country="GB", admd=" ", prmd="NATO")


def test_golden_message_decodes_to_the_expected_values() -> None:
    message = decode_mts_apdu(GOLDEN_MESSAGE)
    assert isinstance(message, Message)
    env = message.envelope
    assert message.content == b"hello"
    assert env.mts_identifier == MTSIdentifier(
        global_domain_identifier=UTC_GB, local_identifier="msg-0001"
    )
    assert env.mts_identifier.text == "[GB; ;NATO;msg-0001]"
    assert env.originator_name.organization == "ACT"
    assert env.original_encoded_information_types is not None
    assert env.original_encoded_information_types.built_in.ia5_text
    assert env.content_type == "1.3.26.0.4406.0.4.1"
    assert env.content_identifier == "C-01"
    assert env.priority is Priority.NORMAL
    assert env.per_message_indicators == PerMessageIndicators(alternate_recipient_allowed=True)
    assert env.deferred_delivery_time == datetime(2024, 5, 6, 12, 0, tzinfo=UTC)
    trace = env.trace_information[0]
    assert trace.arrival_time == datetime(2024, 5, 6, 6, 8, 9, tzinfo=UTC)
    assert trace.arrival_time.utcoffset() == timedelta(hours=1)
    assert trace.routing_action is RoutingAction.RELAYED
    assert env.precedence is Precedence.IMMEDIATE  # normal + high
    assert env.priority_level_qualifier is LevelQualifier.HIGH
    assert env.latest_delivery_time == datetime(2024, 5, 7, tzinfo=UTC)
    assert [e.type for e in env.extensions] == [99, PRIORITY_LEVEL_QUALIFIER_OID, "1.2.3.4", 5]
    assert env.unsupported_critical_extensions() == (env.extensions[0],)
    assert env.unsupported_critical_extensions(frozenset({99})) == ()
    assert env.extensions[0].value == bytes.fromhex("0403616263")
    (recipient,) = env.recipients
    assert recipient.recipient_name.extension_attributes == (
        ExtensionAttribute(type=23, value=pr("T1")),
    )
    assert recipient.originally_specified_recipient_number == 1
    assert recipient.per_recipient_indicators == PerRecipientIndicators(
        responsibility=True, originator_non_delivery_report=True
    )
    assert recipient.responsible
    assert recipient.extensions == (ExtensionField(type=11, value=pr("42")),)


def test_golden_message_re_encodes_byte_exact() -> None:
    assert encode_mts_apdu(decode_mts_apdu(GOLDEN_MESSAGE)) == GOLDEN_MESSAGE


def test_golden_report_decodes_and_re_encodes() -> None:
    report = decode_mts_apdu(GOLDEN_REPORT)
    assert isinstance(report, Report)
    assert report.mts_identifier.local_identifier == "rpt-7"
    assert report.envelope.report_destination_name.surname == "Smith"
    content = report.content
    assert content.subject_identifier.local_identifier == "msg-0001"
    assert content.content_type == "1.3.26.0.4406.0.4.1"
    failed, delivered = content.recipients
    assert not failed.delivered
    assert failed.actual_recipient_name.surname == "Jones"
    assert failed.last_trace_information.report == NonDeliveryReport(
        reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
        diagnostic_code=NonDeliveryDiagnostic.LOOP_DETECTED,
    )
    assert delivered.delivered
    assert delivered.last_trace_information.report == DeliveryReport(
        message_delivery_time=datetime(2024, 5, 6, 7, 59, tzinfo=UTC)
    )
    assert encode_mts_apdu(report) == GOLDEN_REPORT


def test_golden_probe_decodes_and_re_encodes() -> None:
    probe = decode_mts_apdu(GOLDEN_PROBE)
    assert isinstance(probe, Probe)
    assert probe.mts_identifier.local_identifier == "probe-1"
    assert probe.content_type == 22
    assert probe.content_length == 1000
    assert probe.recipients[0].per_recipient_indicators.responsibility
    assert encode_mts_apdu(probe) == GOLDEN_PROBE


@pytest.mark.parametrize("golden", [GOLDEN_MESSAGE, GOLDEN_REPORT, GOLDEN_PROBE])
def test_golden_encodings_decode_with_the_asn1_modules(golden: bytes) -> None:
    # The hand-written bytes are valid MTAAbstractService.MTS-APDU values.
    kind, _ = asn1.decode("MTAAbstractService", "MTS-APDU", golden)
    assert kind == {0xA0: "message", 0xA1: "report", 0xA2: "probe"}[golden[0]]


# --- fresh values ----------------------------------------------------------------------

ARRIVAL = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
SMITH = ORName(country="GB", admd=" ", prmd="NATO", organization="ACT", surname="Smith")
JONES = ORName(country="GB", admd=" ", prmd="NATO", organization="HQ", surname="Jones")


def make_envelope(**changes: Any) -> MessageEnvelope:
    fields: dict[str, Any] = {
        "mts_identifier": MTSIdentifier(global_domain_identifier=UTC_GB, local_identifier="m1"),
        "originator_name": SMITH,
        "content_type": 22,
        "trace_information": (TraceEntry(global_domain_identifier=UTC_GB, arrival_time=ARRIVAL),),
        "recipients": (
            RecipientField(
                recipient_name=JONES,
                originally_specified_recipient_number=1,
                per_recipient_indicators=PerRecipientIndicators(responsibility=True),
            ),
        ),
    }
    fields.update(changes)
    return MessageEnvelope(**fields)


def test_fresh_message_is_encoded_in_definition_order_without_defaults() -> None:
    message = Message(envelope=make_envelope(), content=b"hi")
    expected = t(
        0xA0,
        t(
            0x31,
            t(0x64, GDI, ia5("m1")),
            t(
                0x60,
                t(
                    0x30,
                    t(0x61, pr("GB")),
                    t(0x62, pr(" ")),
                    t(0xA2, pr("NATO")),
                    t(0x83, b"ACT"),
                    t(0xA5, t(0x80, b"Smith")),
                ),
            ),
            t(0x46, b"\x16"),
            t(0x69, t(0x30, GDI, t(0x31, t(0x80, b"240506070809Z"), t(0x82, b"\x00")))),
            t(
                0xA2,
                t(
                    0x31,
                    t(
                        0x60,
                        t(
                            0x30,
                            t(0x61, pr("GB")),
                            t(0x62, pr(" ")),
                            t(0xA2, pr("NATO")),
                            t(0x83, b"HQ"),
                            t(0xA5, t(0x80, b"Jones")),
                        ),
                    ),
                    t(0x80, b"\x01"),
                    t(0x81, b"\x00\x80"),
                ),
            ),
        ),
        t(0x04, b"hi"),
    )
    assert encode_mts_apdu(message) == expected
    assert decode_mts_apdu(expected) == message


def test_typed_extensions_encode_as_the_standards_say() -> None:
    plq = priority_level_qualifier_extension(LevelQualifier.HIGH)
    assert encode_extension(plq) == t(0x30, t(0x83, PLQ), t(0xA2, t(0x0A, b"\x01")))
    latest = latest_delivery_time_extension(
        datetime(2024, 5, 7, 1, 0, tzinfo=timezone(timedelta(hours=1)))
    )
    assert encode_extension(latest) == t(
        0x30, t(0x80, b"\x05"), t(0x81, b"\x05\x20"), t(0xA2, t(0x17, b"240507000000Z"))
    )


def test_round_trip_of_a_message_with_every_member() -> None:
    env = make_envelope(
        content_identifier="ref-9",
        priority=Priority.URGENT,
        per_message_indicators=PerMessageIndicators(content_return_request=True),
        deferred_delivery_time=ARRIVAL + timedelta(hours=2),
        per_domain_bilateral_information=(
            t(0x30, t(0x61, pr("GB")), t(0x62, pr("X")), t(0x04, b"\x01")),
        ),
        extensions=(latest_delivery_time_extension(ARRIVAL + timedelta(days=1)),),
    ).with_precedence(Precedence.OVERRIDE)
    message = Message(envelope=env, content=bytes(range(256)))
    data = encode_mts_apdu(message)
    assert decode_mts_apdu(data) == message
    assert encode_mts_apdu(decode_mts_apdu(data)) == data
    assert decode_message_envelope(encode_message_envelope(env)) == env


def make_report(outcome: DeliveryReport | NonDeliveryReport) -> Report:
    return Report(
        envelope=ReportEnvelope(
            report_identifier=MTSIdentifier(global_domain_identifier=UTC_GB, local_identifier="r"),
            report_destination_name=SMITH,
            trace_information=(TraceEntry(global_domain_identifier=UTC_GB, arrival_time=ARRIVAL),),
        ),
        content=ReportContent(
            subject_identifier=MTSIdentifier(
                global_domain_identifier=UTC_GB, local_identifier="m1"
            ),
            content_type=22,
            returned_content=b"returned",
            recipients=(
                ReportRecipientField(
                    actual_recipient_name=JONES,
                    originally_specified_recipient_number=1,
                    last_trace_information=LastTraceInformation(
                        arrival_time=ARRIVAL, report=outcome
                    ),
                    supplementary_information="see log",
                ),
            ),
        ),
    )


@pytest.mark.parametrize(
    "outcome",
    [
        DeliveryReport(message_delivery_time=ARRIVAL),
        DeliveryReport(message_delivery_time=ARRIVAL, type_of_mts_user=TypeOfMTSUser.MS),
        NonDeliveryReport(
            reason_code=NonDeliveryReason.TRANSFER_FAILURE,
            diagnostic_code=NonDeliveryDiagnostic.MAXIMUM_TIME_EXPIRED,
        ),
        NonDeliveryReport(reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER),
    ],
)
def test_round_trip_of_reports(outcome: DeliveryReport | NonDeliveryReport) -> None:
    report = make_report(outcome)
    data = encode_mts_apdu(report)
    decoded = decode_mts_apdu(data)
    assert decoded == report
    assert encode_mts_apdu(decoded) == data
    assert asn1.decode("MTAAbstractService", "MTS-APDU", data)[0] == "report"


def test_round_trip_of_a_probe() -> None:
    probe = Probe(
        probe_identifier=MTSIdentifier(global_domain_identifier=UTC_GB, local_identifier="p"),
        originator_name=SMITH,
        content_type="1.3.26.0.4406.0.4.1",
        content_length=12345,
        trace_information=(TraceEntry(global_domain_identifier=UTC_GB, arrival_time=ARRIVAL),),
        recipients=(RecipientField(recipient_name=JONES, originally_specified_recipient_number=1),),
    )
    data = encode_mts_apdu(probe)
    assert data[0] == 0xA2
    assert decode_mts_apdu(data) == probe
    assert peek_envelope(data) == probe


def test_enumerations_are_complete() -> None:
    assert [r.value for r in NonDeliveryReason] == list(range(9))
    assert [d.value for d in NonDeliveryDiagnostic] == list(range(79))
    assert NonDeliveryDiagnostic(78).name == "UNSUPPORTED_SECURITY_POLICY"
    assert int(StandardExtension.INTERNAL_TRACE_INFORMATION) == 38


def test_unknown_codes_are_kept_as_integers() -> None:
    report = make_report(NonDeliveryReport(reason_code=300, diagnostic_code=999))
    decoded = decode_mts_apdu(encode_mts_apdu(report))
    assert isinstance(decoded, Report)
    outcome = decoded.content.recipients[0].last_trace_information.report
    assert outcome == NonDeliveryReport(reason_code=300, diagnostic_code=999)


# --- lossless relay --------------------------------------------------------------------


def test_unknown_extensions_survive_exactly() -> None:
    unknown = (
        ExtensionField(
            type=200,
            criticality=Criticality(for_transfer=True, other_bits=(6,), length=16),
            value=bytes.fromhex("3003020101"),
        ),
        ExtensionField(type="2.999.7", value=bytes.fromhex("0500")),
        ExtensionField(type=77, criticality=Criticality()),  # explicit empty criticality
    )
    name = dataclasses.replace(
        JONES,
        extension_attributes=(ExtensionAttribute(type=41, value=bytes.fromhex("3003800101")),),
    )
    private = ExtensionField(type="1.2.840.1", value=b"\x01\x01\xff")
    recipient = RecipientField(
        recipient_name=name, originally_specified_recipient_number=3, extensions=(private,)
    )
    env = make_envelope(extensions=unknown, recipients=(recipient,))
    data = encode_mts_apdu(Message(envelope=env, content=b""))
    assert (
        t(
            0x30,
            t(0x80, b"\x00\xc8"),
            t(0x81, b"\x00\x42\x00"),
            t(0xA2, bytes.fromhex("3003020101")),
        )
        in data
    )
    assert t(0x30, t(0x80, b"\x4d"), t(0x81, b"\x00")) in data
    assert t(0x31, t(0x30, t(0x80, b"\x29"), t(0xA1, bytes.fromhex("3003800101")))) in data
    decoded = decode_mts_apdu(data)
    assert isinstance(decoded, Message)
    assert decoded.envelope.extensions == unknown
    assert decoded.envelope.recipients == (recipient,)
    assert encode_mts_apdu(decoded) == data


def test_relay_adds_trace_and_keeps_everything_else() -> None:
    message = decode_mts_apdu(GOLDEN_MESSAGE)
    assert isinstance(message, Message)
    entry = TraceEntry(
        global_domain_identifier=GlobalDomainIdentifier(country="FR", admd="X"),
        arrival_time=datetime(2024, 5, 6, 9, 0, tzinfo=UTC),
    )
    relayed = encode_mts_apdu(
        dataclasses.replace(message, envelope=message.envelope.with_trace(entry))
    )
    old_trace = t(0x30, GDI, t(0x31, t(0x80, b"240506070809+0100"), t(0x82, b"\x00")))
    new_trace = t(
        0x30,
        t(0x63, t(0x61, pr("FR")), t(0x62, pr("X"))),
        t(0x31, t(0x80, b"240506090000Z"), t(0x82, b"\x00")),
    )
    members = [
        t(0x69, old_trace, new_trace) if m == t(0x69, old_trace) else m
        for m in _members(GOLDEN_ENVELOPE)
    ]
    assert relayed == t(0xA0, t(0x31, *members), t(0x04, b"hello"))


def test_internal_trace_is_appended_in_place() -> None:
    env = make_envelope(extensions=(ExtensionField(type=99),))
    first = InternalTraceEntry(
        global_domain_identifier=UTC_GB,
        mta_name="mta-a",
        arrival_time=ARRIVAL,
        attempted_mta="mta-b",
    )
    second = InternalTraceEntry(
        global_domain_identifier=UTC_GB,
        mta_name="mta-b",
        arrival_time=ARRIVAL,
        routing_action=RoutingAction.REROUTED,
        attempted_domain=GlobalDomainIdentifier(country="FR", admd="X"),
    )
    env = env.with_internal_trace(first).with_internal_trace(second)
    assert [e.type for e in env.extensions] == [99, 38]
    assert env.internal_trace == (first, second)
    decoded = decode_message_envelope(encode_message_envelope(env))
    assert decoded.internal_trace == (first, second)


def test_replace_message_envelope_keeps_the_content_encoding() -> None:
    segmented = t(0x24, t(0x04, b"hel"), t(0x04, b"lo"))
    data = t(0xA0, GOLDEN_ENVELOPE, segmented)
    message = decode_mts_apdu(data)
    assert isinstance(message, Message)
    assert message.content == b"hello"
    envelope = message.envelope.with_trace(
        TraceEntry(global_domain_identifier=UTC_GB, arrival_time=ARRIVAL)
    )
    relayed = replace_message_envelope(data, envelope)
    assert relayed == t(0xA0, encode_message_envelope(envelope), segmented)
    assert peek_envelope(relayed) == envelope


def test_message_content_is_read_without_the_envelope() -> None:
    segmented = t(0x24, t(0x04, b"hel"), t(0x04, b"lo"))
    assert message_content(t(0xA0, GOLDEN_ENVELOPE, segmented)) == b"hello"
    assert message_content(GOLDEN_MESSAGE) == decode_message(GOLDEN_MESSAGE).content
    with pytest.raises(DecodeError, match="not a message"):
        message_content(t(0xA2, GOLDEN_ENVELOPE))
    with pytest.raises(DecodeError):
        message_content(t(0xA0, GOLDEN_ENVELOPE))  # no content


def decode_message(data: bytes) -> Message:
    message = decode_mts_apdu(data)
    assert isinstance(message, Message)
    return message


def test_indefinite_lengths_are_accepted() -> None:
    def indefinite(tag: int, *parts: bytes) -> bytes:
        return bytes([tag, 0x80]) + b"".join(parts) + b"\0\0"

    data = indefinite(0xA0, indefinite(0x31, *_members(GOLDEN_ENVELOPE)), t(0x04, b"hello"))
    assert decode_mts_apdu(data) == decode_mts_apdu(GOLDEN_MESSAGE)
    assert encode_mts_apdu(decode_mts_apdu(data)) == GOLDEN_MESSAGE


def _members(encoding: bytes) -> list[bytes]:
    tlv = ber.read_single(encoding, "test")
    return [child.raw() for child in ber.children(tlv, "test")]


def test_members_in_any_order_are_kept_in_that_order() -> None:
    members = _members(GOLDEN_ENVELOPE)
    shuffled = t(0x31, *reversed(members))
    decoded = decode_message_envelope(shuffled)
    assert decoded == decode_message_envelope(GOLDEN_ENVELOPE)
    assert encode_message_envelope(decoded) == shuffled


def test_asn1tools_canonical_encoding_decodes_to_the_same_value() -> None:
    # asn1tools writes SET members in tag order and leaves out DEFAULT values.
    value = asn1.decode("MTAAbstractService", "MTS-APDU", GOLDEN_MESSAGE)
    canonical = asn1.encode("MTAAbstractService", "MTS-APDU", value)
    assert canonical != GOLDEN_MESSAGE
    assert decode_mts_apdu(canonical) == decode_mts_apdu(GOLDEN_MESSAGE)


# --- precedence ------------------------------------------------------------------------

LEVELS = [
    (Precedence.DEFERRED, Priority.NON_URGENT, LevelQualifier.LOW),
    (Precedence.ROUTINE, Priority.NON_URGENT, LevelQualifier.HIGH),
    (Precedence.PRIORITY, Priority.NORMAL, LevelQualifier.LOW),
    (Precedence.IMMEDIATE, Priority.NORMAL, LevelQualifier.HIGH),
    (Precedence.FLASH, Priority.URGENT, LevelQualifier.LOW),
    (Precedence.OVERRIDE, Priority.URGENT, LevelQualifier.HIGH),
]


@pytest.mark.parametrize(("precedence", "priority", "qualifier"), LEVELS)
def test_precedence_of_all_six_levels(
    precedence: Precedence, priority: Priority, qualifier: LevelQualifier
) -> None:
    env = make_envelope().with_precedence(precedence)
    assert (env.priority, env.priority_level_qualifier) == (priority, qualifier)
    data = encode_message_envelope(env)
    plq = t(0x30, t(0x83, PLQ), t(0xA2, t(0x0A, bytes([qualifier]))))
    assert t(0xA3, plq) in data
    assert (t(0x47, bytes([priority])) in data) == (priority != Priority.NORMAL)
    decoded = decode_message_envelope(data)
    assert decoded.precedence is precedence
    assert Message(envelope=decoded, content=b"").precedence is precedence


@pytest.mark.parametrize(
    ("priority", "precedence"),
    [
        (Priority.NON_URGENT, Precedence.ROUTINE),
        (Priority.NORMAL, Precedence.PRIORITY),
        (Priority.URGENT, Precedence.FLASH),
    ],
)
def test_precedence_without_qualifier(priority: Priority, precedence: Precedence) -> None:
    assert make_envelope(priority=priority).precedence is precedence


def test_with_precedence_replaces_the_qualifier_in_place() -> None:
    env = make_envelope(
        extensions=(priority_level_qualifier_extension(LevelQualifier.LOW), ExtensionField(type=99))
    )
    changed = env.with_precedence(Precedence.ROUTINE)
    assert [e.type for e in changed.extensions] == [PRIORITY_LEVEL_QUALIFIER_OID, 99]
    assert changed.precedence is Precedence.ROUTINE


@pytest.mark.parametrize("value", [t(0x0A, b"\x02"), t(0x02, b"\xff"), t(0x04, b"\x01"), None])
def test_malformed_priority_level_qualifier_is_a_decode_error(value: bytes | None) -> None:
    env = make_envelope(
        extensions=(ExtensionField(type=PRIORITY_LEVEL_QUALIFIER_OID, value=value),)
    )
    with pytest.raises(DecodeError, match="priority-level-qualifier"):
        decode_message_envelope(encode_message_envelope(env))


# --- UTCTime ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2405060708Z", datetime(2024, 5, 6, 7, 8, tzinfo=UTC)),
        ("240506070809Z", datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)),
        ("2405060708+0100", datetime(2024, 5, 6, 6, 8, tzinfo=UTC)),
        ("240506070809-0430", datetime(2024, 5, 6, 11, 38, 9, tzinfo=UTC)),
        ("240506070809+0000", datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)),
        ("491231235959Z", datetime(2049, 12, 31, 23, 59, 59, tzinfo=UTC)),
        ("500101000000Z", datetime(1950, 1, 1, tzinfo=UTC)),
    ],
)
def test_utctime_forms_decode_and_re_encode_as_received(text: str, expected: datetime) -> None:
    entry = t(0x69, t(0x30, GDI, t(0x31, t(0x80, text.encode()), t(0x82, b"\x01"))))
    data = t(
        0x31,
        t(0x64, GDI, ia5("m")),
        ORIGINATOR,
        t(0x46, b"\x02"),
        entry,
        t(0xA2, t(0x31, RECIPIENT, t(0x80, b"\x01"), t(0x81, b"\x00\x80"))),
    )
    env = decode_message_envelope(data)
    (trace,) = env.trace_information
    assert trace.arrival_time == expected
    assert trace.routing_action is RoutingAction.REROUTED
    assert encode_message_envelope(env) == data


@pytest.mark.parametrize(
    "text",
    [
        "240506070860Z",
        "24050607Z",
        "2405060708",
        "2413060708Z",
        "2405060708+2400",
        "2405060708+0060",
        "2405060708.5Z",
        "24050607080900Z",
        "2405060708z",
        "240506070\u00e9Z",
    ],
)
def test_bad_utctime_is_a_decode_error(text: str) -> None:
    with pytest.raises(DecodeError, match=r"UTCTime|deferred-delivery-time"):
        ber.read_utctime(
            ber.read_single(t(0x80, text.encode("latin-1")), "t"), "deferred-delivery-time"
        )


def test_fresh_times_are_written_in_utc_with_seconds() -> None:
    local = datetime(2024, 1, 2, 3, 4, 5, 678, tzinfo=timezone(timedelta(hours=-2)))
    assert ber.utctime_text(local, "t") == "240102050405Z"
    remembered = ber.parse_utctime("2401020304+0100")
    assert ber.utctime_text(remembered, "t") == "2401020304+0100"
    assert ber.utctime_text(remembered.replace(minute=5), "t") == "240102020500Z"
    with pytest.raises(EncodeError, match="no time zone"):
        ber.utctime_text(datetime(2024, 1, 2), "t")
    with pytest.raises(EncodeError, match=r"1950\.\.2049"):
        ber.utctime_text(datetime(2050, 1, 1, tzinfo=UTC), "t")


# --- identifiers -----------------------------------------------------------------------


def test_mts_identifier_text_form() -> None:
    ident = MTSIdentifier(
        global_domain_identifier=GlobalDomainIdentifier(country="GB", admd=" "),
        local_identifier="a;b]c",
    )
    assert ident.text == "[GB; ;;a;b]c]"
    assert MTSIdentifier.parse(ident.text) == ident
    assert str(ident) == ident.text
    with_prmd = MTSIdentifier.parse("[GB;ADMD;NATO;x]")
    assert with_prmd.global_domain_identifier.prmd == "NATO"
    for bad in ("GB;A;P;x", "[GB;A;P;]", "[GB;A;x]", "[;A;P;x]"):
        with pytest.raises(DecodeError):
            MTSIdentifier.parse(bad)


def test_domain_name_string_forms_are_kept() -> None:
    gdi = GlobalDomainIdentifier(country="234", admd="1234", prmd="77", prmd_numeric=False)
    assert gdi.country_numeric is None and gdi.prmd_numeric is False
    ident = MTSIdentifier(global_domain_identifier=gdi, local_identifier="x")
    env = make_envelope(mts_identifier=ident)
    data = encode_message_envelope(env)
    assert t(0x63, t(0x61, t(0x12, b"234")), t(0x62, t(0x12, b"1234")), pr("77")) in data
    assert decode_message_envelope(data) == env


# --- errors ----------------------------------------------------------------------------


def golden_with(old: bytes, new: bytes) -> bytes:
    """The golden message with one envelope member replaced."""
    members = [new if m == old else m for m in _members(GOLDEN_ENVELOPE)]
    assert members != _members(GOLDEN_ENVELOPE)
    return t(0xA0, t(0x31, *members), t(0x04, b"hello"))


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "truncated"),
        (b"\xa0", "truncated"),
        (bytes.fromhex("a003"), "truncated"),
        (bytes.fromhex("a30100"), "is not message [0], report [1] or probe [2]"),
        (GOLDEN_MESSAGE + b"\x00", "trailing"),
        (t(0xA0, GOLDEN_ENVELOPE), "expected envelope and content"),
        (t(0xA0, GOLDEN_ENVELOPE, t(0x13, b"x")), "expected [UNIVERSAL 4]"),
        (t(0xA0, t(0x31, t(0x64, GDI, ia5("m"))), t(0x04, b"")), "missing originator-name"),
        (GOLDEN_MESSAGE[:-3], "truncated"),
        (bytes.fromhex("a2029f80"), "leading zero septet"),
        (bytes.fromhex("a0848000000000"), "truncated"),
        (bytes.fromhex("a0 80 04 00".replace(" ", "")), "missing end-of-contents"),
        (t(0xA0, t(0x31, t(0x8F, b"")), t(0x04, b"")), "unexpected [15]"),
        (
            t(0xA0, t(0x31, t(0x47, b"\x00"), t(0x47, b"\x01")), t(0x04, b"")),
            "priority appears twice",
        ),
        (golden_with(t(0x47, b"\x00"), t(0x47, b"\x05")), "priority: 5 is outside 0..2"),
        (golden_with(t(0x47, b"\x00"), t(0x47, b"")), "at least one content octet"),
        (golden_with(t(0x4A, b"C-01"), t(0x4A, b"C\xff")), "non-ASCII"),
        (golden_with(t(0x06, P772), t(0x06, b"\x2b\x80")), "truncated OBJECT IDENTIFIER"),
        (golden_with(t(0x48, b"\x05\x20"), t(0x48, b"\x08\x00")), "unused bits"),
        (
            golden_with(ORIGINATOR, t(0x60, t(0x30, t(0x61, pr("GB")), t(0x62, b"")))),
            "originator-name",
        ),
    ],
)
def test_malformed_input_is_a_decode_error(data: bytes, why: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_mts_apdu(data)
    assert why in str(info.value)


@pytest.mark.parametrize(
    "change",
    [
        {
            "recipients": (
                RecipientField(recipient_name=JONES, originally_specified_recipient_number=0),
            )
        },
        {"content_type": "not.an.oid"},
        {"content_type": -1},
        {"content_identifier": "caf\u00e9"},
        {"deferred_delivery_time": datetime(2024, 1, 1)},
        {"extensions": (ExtensionField(type=1, value=b"\x04\x05ab"),)},
        {"per_domain_bilateral_information": (b"\x30",)},
    ],
)
def test_values_that_cannot_be_encoded_are_encode_errors(change: dict[str, Any]) -> None:
    with pytest.raises(EncodeError):
        encode_message_envelope(make_envelope(**change))


def test_internal_trace_attempted_is_one_or_the_other() -> None:
    entry = InternalTraceEntry(
        global_domain_identifier=UTC_GB,
        mta_name="a",
        arrival_time=ARRIVAL,
        attempted_mta="b",
        attempted_domain=UTC_GB,
    )
    with pytest.raises(EncodeError, match="not both"):
        make_envelope().with_internal_trace(entry)


@given(st.binary(max_size=64))
def test_random_bytes_raise_only_decode_errors(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        decode_mts_apdu(data)


@pytest.mark.slow
@HYPOTHESIS
@given(strategies.mts_apdus, st.data())
def test_damaged_encodings_raise_only_decode_errors(apdu: MTSApdu, data: st.DataObject) -> None:
    encoded = bytearray(encode_mts_apdu(apdu))
    position = data.draw(st.integers(0, len(encoded) - 1))
    damage = data.draw(st.sampled_from(["flip", "cut", "insert"]))
    if damage == "flip":
        encoded[position] ^= 1 << data.draw(st.integers(0, 7))
    elif damage == "cut":
        del encoded[position:]
    else:
        encoded[position:position] = data.draw(st.binary(min_size=1, max_size=3))
    for decode in (decode_mts_apdu, peek_envelope):
        with contextlib.suppress(DecodeError):
            decode(bytes(encoded))


# --- property tests --------------------------------------------------------------------


@pytest.mark.slow
@HYPOTHESIS
@given(strategies.mts_apdus)
def test_round_trip_values_and_bytes(apdu: MTSApdu) -> None:
    data = encode_mts_apdu(apdu)
    decoded = decode_mts_apdu(data)
    assert decoded == apdu
    assert encode_mts_apdu(decoded) == data


@pytest.mark.slow
@HYPOTHESIS
@given(strategies.mts_apdus)
def test_encodings_agree_with_the_asn1_modules(apdu: MTSApdu) -> None:
    data = encode_mts_apdu(apdu)
    kind, value = asn1.decode("MTAAbstractService", "MTS-APDU", data)
    if isinstance(apdu, Message):
        assert kind == "message"
        _check_message(apdu, value)
    elif isinstance(apdu, Probe):
        assert kind == "probe"
        identifier = value["probe-identifier"]["local-identifier"]
        assert identifier == apdu.probe_identifier.local_identifier
        assert len(value["per-recipient-fields"]) == len(apdu.recipients)
        assert value.get("content-length") == apdu.content_length
    else:
        assert kind == "report"
        _check_report(apdu, value)


def _check_message(message: Message, value: dict[str, Any]) -> None:
    env, asn1_env = message.envelope, value["envelope"]
    assert value["content"] == message.content
    assert asn1_env["message-identifier"]["local-identifier"] == env.mts_identifier.local_identifier
    assert asn1_env["priority"] == env.priority.label
    assert asn1_env["content-type"][1] == env.content_type
    assert asn1_env.get("content-identifier") == env.content_identifier
    assert len(asn1_env["trace-information"]) == len(env.trace_information)
    assert [_extension_type(e) for e in asn1_env["extensions"]] == [e.type for e in env.extensions]
    assert [e.get("value") for e in asn1_env["extensions"]] == [e.value for e in env.extensions]
    assert [
        r["originally-specified-recipient-number"] for r in asn1_env["per-recipient-fields"]
    ] == [r.originally_specified_recipient_number for r in env.recipients]
    assert [r["per-recipient-indicators"][1] for r in asn1_env["per-recipient-fields"]] == [
        r.per_recipient_indicators.bit_string()[1] for r in env.recipients
    ]


def _check_report(report: Report, value: dict[str, Any]) -> None:
    content = value["content"]
    assert content["subject-identifier"]["local-identifier"] == (
        report.content.subject_identifier.local_identifier
    )
    assert content.get("returned-content") == report.content.returned_content
    outcomes = [r["last-trace-information"]["report-type"] for r in content["per-recipient-fields"]]
    assert [kind for kind, _ in outcomes] == [
        "delivery" if r.delivered else "non-delivery" for r in report.content.recipients
    ]


def _extension_type(value: dict[str, Any]) -> int | str:
    kind, ext_type = value["type"]
    assert kind in ("standard-extension", "private-extension")
    return ext_type  # type: ignore[no-any-return]


# --- performance -----------------------------------------------------------------------


def test_a_large_content_is_copied_once_each_way() -> None:
    size = 10_000_000
    message = Message(envelope=make_envelope(), content=bytes(size))
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        data = encode_mts_apdu(message)
        encode_peak = tracemalloc.get_traced_memory()[1] - start
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        decoded = decode_mts_apdu(data)
        decode_peak = tracemalloc.get_traced_memory()[1] - start
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        peek_envelope(data)
        peek_peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert isinstance(decoded, Message) and decoded.content == message.content
    assert encode_peak < 1.5 * size
    assert decode_peak < 1.5 * size
    assert peek_peak < 0.1 * size


def test_the_content_view_copies_nothing_of_a_primitive_content() -> None:
    size = 10_000_000
    data = encode_mts_apdu(Message(envelope=make_envelope(), content=bytes(size)))
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        view = message_content_view(data)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert isinstance(view, memoryview)
    assert view == message_content(data)
    assert peak < 0.01 * size


def test_the_content_view_of_a_constructed_content_is_its_octets_joined() -> None:
    segmented = b"\x24\x80" + ber.tlv(ber.OCTET_STRING, b"IP") + b"\x04\x01M" + b"\x00\x00"
    body = encode_message_envelope(make_envelope()) + segmented
    data = b"\xa0" + ber.length_octets(len(body)) + body
    assert message_content_view(data) == b"IPM" == message_content(data)


# --- details ---------------------------------------------------------------------------


def test_remembered_utctime_text_survives_pickle_and_copy() -> None:
    remembered = ber.parse_utctime("2405060708-0430")
    for copied in (pickle.loads(pickle.dumps(remembered)), copy.deepcopy(remembered)):
        assert copied == remembered
        assert ber.utctime_text(copied, "t") == "2405060708-0430"


def test_named_bits_normalise_spare_bits() -> None:
    indicators = PerRecipientIndicators(other_bits=(9, 0, 6, 9))
    assert indicators.responsibility
    assert indicators.other_bits == (6, 9)
    assert indicators == PerRecipientIndicators(responsibility=True, other_bits=(6, 9))
    assert indicators.bit_string() == (bytes.fromhex("8240"), 10)
    assert PerRecipientIndicators().bit_string() == (b"\x00", 8)  # SIZE (8..ub-bit-options)
    assert PerMessageIndicators(bit_5=True, bit_6=True).notification_type == 3


def test_peek_envelope_of_each_kind() -> None:
    message = decode_mts_apdu(GOLDEN_MESSAGE)
    assert isinstance(message, Message)
    assert peek_envelope(GOLDEN_MESSAGE) == message.envelope
    assert peek_envelope(GOLDEN_REPORT) == decode_mts_apdu(GOLDEN_REPORT)
    assert peek_envelope(GOLDEN_PROBE) == decode_mts_apdu(GOLDEN_PROBE)
    with pytest.raises(DecodeError, match="not a message"):
        replace_message_envelope(GOLDEN_REPORT, message.envelope)


def test_encode_rejects_what_is_not_an_mts_apdu() -> None:
    with pytest.raises(EncodeError, match="not a Message, Report or Probe"):
        encode_mts_apdu(make_envelope())  # type: ignore[arg-type]


# --- BER primitives against their definitions ------------------------------------------


@given(st.binary(max_size=6), st.integers(-2, 56))
def test_bits_to_numbers_reads_the_bits_that_are_one(octets: bytes, length: int) -> None:
    # X.690 8.6.2: bit 0 is the most significant bit of the first octet.
    try:
        expected: object = {n for n in range(length) if octets[n // 8] >> (7 - n % 8) & 1}
    except IndexError:
        expected = IndexError
    try:
        found: object = ber.bits_to_numbers(octets, length)
    except IndexError:
        found = IndexError
    assert found == expected


@given(
    st.sampled_from([0, 1, 2]),
    st.lists(st.integers(0, 2**70), min_size=1, max_size=6),
    st.integers(0, 39),
)
def test_object_identifiers_are_base_128_arcs(first: int, rest: list[int], second: int) -> None:
    # X.690 8.19: the first two arcs share one subidentifier; each subidentifier is
    # base 128, most significant septet first, bit 8 set on all but the last octet.
    arcs = [first, second if first < 2 else rest[0], *rest[1:]]
    text = ".".join(map(str, arcs))
    expected = b""
    for arc in [40 * arcs[0] + arcs[1], *arcs[2:]]:
        septets = [arc & 0x7F]
        while arc > 0x7F:
            arc >>= 7
            septets.insert(0, 0x80 | arc & 0x7F)
        expected += bytes(septets)
    assert ber.oid_contents(text, "oid") == expected
    assert (
        ber.read_oid(ber.read_single(ber.tlv(ber.OBJECT_IDENTIFIER, expected), "oid"), "oid")
        == text
    )


@pytest.mark.parametrize(
    ("contents", "why"),
    [
        ("2b068001", "arc with a leading zero septet"),
        ("8001", "arc with a leading zero septet"),
        ("2b0680", "truncated OBJECT IDENTIFIER"),
    ],
)
def test_malformed_object_identifiers_are_decode_errors(contents: str, why: str) -> None:
    tlv = ber.read_single(ber.tlv(ber.OBJECT_IDENTIFIER, bytes.fromhex(contents)), "oid")
    with pytest.raises(DecodeError) as info:
        ber.read_oid(tlv, "oid")
    assert why in info.value.why


@given(st.lists(st.binary(max_size=300), max_size=4), st.booleans())
def test_children_read_short_and_long_lengths(values: list[bytes], indefinite: bool) -> None:
    parts = [ber.tlv(ber.context(n), value) for n, value in enumerate(values)]
    body = b"".join(parts)
    outer = b"\x30\x80" + body + b"\x00\x00" if indefinite else ber.tlv(ber.SEQUENCE, body, True)
    found = ber.children(ber.read_single(outer, "x"), "x")
    assert [(child.tag, child.raw(), ber.read_octets(child, "x")) for child in found] == [
        (ber.context(n), part, value)
        for n, (part, value) in enumerate(zip(parts, values, strict=True))
    ]


def test_a_huge_tag_number_is_a_decode_error() -> None:
    # Found by the random-bytes test: a four-septet tag number ran into the class bits.
    with pytest.raises(DecodeError, match="tag number too large"):
        decode_mts_apdu(b"\x1f\x88\x80\x80\x00\x00")
