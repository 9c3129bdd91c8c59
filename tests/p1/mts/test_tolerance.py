"""Tolerance with a rule: values outside the standard's form in fields the MTA does not
route on are read, listed as deviations, and relayed as received (PP 6.0, vendors' P772).

The rule: a trace, report or heading time without its zone or with PP's three-digit year,
PP's ``[0] EXPLICIT`` form of ``ExtensionField.type`` and a tag number below 31 in the
long form are read and listed in ``deviations``; the fields routed or scheduled on stay
strict.  Golden data: PP's delivery report and P2 message
(``reference/pcaps/pp/20-*``, ``21-*``).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p1 import ber
from p1.ber import Deviation
from p1.errors import DecodeError
from p1.ipms.heading import decode_heading, encode_heading
from p1.ipms.ipm import (
    IPM,
    Heading,
    IPMIdentifier,
    TextBodyPart,
    decode_content,
    decode_ipm,
    encode_ipm,
)
from p1.ipms.ipm import Deviation as IpmsDeviation
from p1.mts.envelope import (
    DeliveryReport,
    GlobalDomainIdentifier,
    Message,
    MessageEnvelope,
    MTSIdentifier,
    PerRecipientIndicators,
    Probe,
    RecipientField,
    Report,
    TraceEntry,
    decode_mts_apdu,
    encode_message_envelope,
    encode_mts_apdu,
    latest_delivery_time_extension,
    peek_envelope,
)
from p1.mts.envelope import (
    Deviation as MtsDeviation,
)
from p1.mts.extensions import (
    ExtensionField,
    StandardExtension,
    decode_extension,
    encode_extension,
    internal_trace,
    with_internal_trace_entry,
)
from p1.mts.orname import parse_orname
from p1.mts.relay import with_trace_added
from p1.mts.trace import InternalTraceEntry
from tests.support.golden import transferred_apdus

GB = GlobalDomainIdentifier(country="GB", admd=" ", prmd="AIOX")
SMITH = parse_orname("C=GB;ADMD= ;PRMD=AIOX;S=smith")
JONES = parse_orname("C=GB;ADMD= ;PRMD=AIOX;S=jones")
NOW = datetime(2026, 11, 24, 21, 0, tzinfo=UTC)


def lenient(text: str) -> tuple[datetime, list[Deviation]]:
    found: list[Deviation] = []
    return ber.parse_lenient_utctime(text, "t", found), found


# --- times -----------------------------------------------------------------------------

TOLERATED = [
    ("050924120000", datetime(2005, 9, 24, 12, 0, tzinfo=UTC)),  # a vendor's P772 heading
    ("0509241200", datetime(2005, 9, 24, 12, 0, tzinfo=UTC)),
    ("1261124205142Z", datetime(2026, 11, 24, 20, 51, 42, tzinfo=UTC)),  # PP's trace
    ("12611242051Z", datetime(2026, 11, 24, 20, 51, tzinfo=UTC)),
    ("0701124205142Z", datetime(1970, 11, 24, 20, 51, 42, tzinfo=UTC)),
    ("1261124205142", datetime(2026, 11, 24, 20, 51, 42, tzinfo=UTC)),
    ("1261124205142+0100", datetime(2026, 11, 24, 19, 51, 42, tzinfo=UTC)),
    ("991231235959", datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC)),
]


@pytest.mark.parametrize(("text", "expected"), TOLERATED)
def test_tolerated_time_forms_are_read_and_listed(text: str, expected: datetime) -> None:
    value, found = lenient(text)
    assert value == expected
    assert value.utcoffset() is not None
    assert found == [Deviation("t", text, value.isoformat())]
    assert ber.utctime_text(value, "t") == text  # written back as received
    with pytest.raises(DecodeError, match="is not YYMMDDhhmm"):
        ber.parse_utctime(text, "t")  # the strict reader is unchanged


@pytest.mark.parametrize(
    "text",
    ["261124205142Z", "2611242051Z", "261124205142+0130", "261124205142-0500"],
)
def test_standard_times_are_no_deviation(text: str) -> None:
    value, found = lenient(text)
    assert found == []
    assert value == ber.parse_utctime(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "26112420Z",  # no minutes
        "12345678901234Z",  # four-digit year (GeneralizedTime is not taken for UTCTime)
        "261324205142Z",  # month 13
        "2611242051421",  # 13 digits: a three-digit year whose day is 42
        "1261124205142z",
        "261124205142+2500",
        "26112420514ZZ",
    ],
)
def test_malformed_times_still_raise(text: str) -> None:
    with pytest.raises(DecodeError):
        lenient(text)


def test_written_times_stay_strict() -> None:
    assert ber.utctime_text(datetime(2026, 11, 24, 20, 51, 42, tzinfo=UTC), "t") == (
        "261124205142Z"
    )
    value, _ = lenient("050924120000")
    moved = value + timedelta(seconds=1)  # a derived value forgets the text
    assert ber.utctime_text(moved, "t") == "050924120001Z"


@st.composite
def lenient_texts(draw: st.DrawFn) -> tuple[str, datetime, bool]:
    """A UTCTime text in a standard or tolerated form, its value, and whether it is one of
    the standard's forms."""
    three = draw(st.booleans())
    low, high = (1900, 2899) if three else (1950, 2049)
    year = draw(st.integers(low, high))
    day = datetime(year, 1, 1) + timedelta(days=draw(st.integers(0, 364)))
    hour, minute = draw(st.integers(0, 23)), draw(st.integers(0, 59))
    second = draw(st.none() | st.integers(0, 59))
    zone = draw(st.sampled_from([None, "Z", "+0000", "-0130", "+1200"]))
    yy = f"{year - 1900:03d}" if three else f"{year % 100:02d}"
    text = f"{yy}{day:%m%d}{hour:02d}{minute:02d}"
    text += "" if second is None else f"{second:02d}"
    text += zone or ""
    offset = timedelta(0)
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        offset = sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[3:]))
    expected = day.replace(hour=hour, minute=minute, second=second or 0, tzinfo=timezone(offset))
    return text, expected, not three and zone is not None


@given(lenient_texts())
def test_lenient_times_property(case: tuple[str, datetime, bool]) -> None:
    text, expected, standard = case
    value, found = lenient(text)
    assert value == expected
    assert value.utcoffset() == expected.utcoffset()
    assert (found == []) == standard
    assert ber.utctime_text(value, "t") == text
    if not standard:
        assert found == [Deviation("t", text, expected.isoformat())]


# --- envelopes -------------------------------------------------------------------------


def envelope(**changes: object) -> MessageEnvelope:
    fields: dict[str, object] = {
        "mts_identifier": MTSIdentifier(global_domain_identifier=GB, local_identifier="m1"),
        "originator_name": SMITH,
        "content_type": 22,
        "trace_information": (TraceEntry(global_domain_identifier=GB, arrival_time=NOW),),
        "recipients": (
            RecipientField(
                recipient_name=JONES,
                originally_specified_recipient_number=1,
                per_recipient_indicators=PerRecipientIndicators(responsibility=True),
            ),
        ),
    }
    fields.update(changes)
    return MessageEnvelope(**fields)  # type: ignore[arg-type]


def zoneless(text: str = "261124205142") -> datetime:
    """A time that the codec writes back as this zone-less text (as received)."""
    return lenient(text)[0]


def test_well_formed_input_has_no_deviations() -> None:
    message = decode_mts_apdu(encode_mts_apdu(Message(envelope=envelope(), content=b"x")))
    assert isinstance(message, Message)
    assert message.envelope.deviations == () == message.deviations
    assert MtsDeviation is Deviation is IpmsDeviation


def test_zoneless_trace_time_is_read_and_listed() -> None:
    trace = TraceEntry(global_domain_identifier=GB, arrival_time=zoneless())
    data = encode_mts_apdu(Message(envelope=envelope(trace_information=(trace,)), content=b""))
    assert b"\x80\x0c261124205142" in data
    message = decode_mts_apdu(data)
    assert isinstance(message, Message)
    assert message.envelope.trace_information[0].arrival_time == datetime(
        2026, 11, 24, 20, 51, 42, tzinfo=UTC
    )
    assert message.deviations == (
        Deviation(
            "MessageTransferEnvelope.trace-information[0].domain-supplied-information.arrival-time",
            "261124205142",
            "2026-11-24T20:51:42+00:00",
        ),
    )
    assert encode_mts_apdu(message) == data  # relayed as received


def test_internal_trace_times_are_tolerated_too() -> None:
    entry = InternalTraceEntry(global_domain_identifier=GB, mta_name="pp", arrival_time=zoneless())
    extensions = with_internal_trace_entry((), entry)
    data = encode_mts_apdu(Message(envelope=envelope(extensions=extensions), content=b""))
    message = decode_mts_apdu(data)
    assert isinstance(message, Message)
    assert [d.field for d in message.deviations] == [
        "MessageTransferEnvelope.extensions.internal-trace-information[0]"
        ".mta-supplied-information.arrival-time"
    ]
    assert message.envelope.internal_trace[0].arrival_time.year == 2026


def test_probe_deviations() -> None:
    probe = Probe(
        probe_identifier=MTSIdentifier(global_domain_identifier=GB, local_identifier="p1"),
        originator_name=SMITH,
        content_type=22,
        trace_information=(TraceEntry(global_domain_identifier=GB, arrival_time=zoneless()),),
        recipients=envelope().recipients,
    )
    decoded = decode_mts_apdu(encode_mts_apdu(probe))
    assert isinstance(decoded, Probe)
    assert [d.found for d in decoded.deviations] == ["261124205142"]


def test_fields_routed_on_stay_strict() -> None:
    deferred = encode_mts_apdu(
        Message(envelope=envelope(deferred_delivery_time=zoneless()), content=b"")
    )
    with pytest.raises(DecodeError, match="deferred-delivery-time: '261124205142' is not"):
        decode_mts_apdu(deferred)
    latest = latest_delivery_time_extension(zoneless())
    with pytest.raises(DecodeError, match="latest-delivery-time"):
        decode_mts_apdu(
            encode_mts_apdu(Message(envelope=envelope(extensions=(latest,)), content=b""))
        )
    good = encode_mts_apdu(Message(envelope=envelope(), content=b""))
    bad_name = good.replace(b"\x80\x05jones", b"\x80\x05jo!es")  # '!' is not printable
    assert bad_name != good
    with pytest.raises(DecodeError, match="recipient-name"):
        decode_mts_apdu(bad_name)


def test_a_trace_time_that_reads_as_nothing_still_raises() -> None:
    data = encode_mts_apdu(
        Message(
            envelope=envelope(
                trace_information=(TraceEntry(global_domain_identifier=GB, arrival_time=NOW),)
            ),
            content=b"",
        )
    )
    bad = data.replace(b"261124210000Z", b"26112421000QZ")
    with pytest.raises(DecodeError, match="arrival-time"):
        decode_mts_apdu(bad)


# --- ExtensionField.type ---------------------------------------------------------------


PP_TYPE = bytes.fromhex("a0 03 02 01 26")  # [0] EXPLICIT INTEGER 38
PP_PRIVATE = bytes.fromhex("a0 06 06 04 2b 1a 00 01")  # [0] EXPLICIT OID 1.3.26.0.1


def field_bytes(*parts: bytes) -> bytes:
    return ber.constructed(ber.SEQUENCE, parts)


def test_pp_extension_type_is_read_listed_and_kept() -> None:
    value = ber.constructed(ber.SEQUENCE, [])
    data = field_bytes(PP_TYPE, ber.tlv(ber.context(2), value, True))
    found: list[Deviation] = []
    extension = decode_extension(ber.read_single(data, "x"), "E", found)
    assert extension.type == StandardExtension.INTERNAL_TRACE_INFORMATION
    assert extension == ExtensionField(type=38, value=value)
    assert found == [Deviation("E.type", "a0 03 02 01 26", "standard-extension 38")]
    assert encode_extension(extension) == data  # kept as received
    # A field built in code, or whose type was changed, is written in the standard's form.
    assert encode_extension(ExtensionField(type=38, value=value)).startswith(
        b"\x30\x07\x80\x01\x26"
    )
    changed = dataclasses.replace(extension, type=39)
    assert encode_extension(changed)[2:5] == b"\x80\x01\x27"


def test_pp_private_extension_type() -> None:
    found: list[Deviation] = []
    data = field_bytes(PP_PRIVATE)
    extension = decode_extension(ber.read_single(data, "x"), "E", found)
    assert extension.type == "1.3.26.0.1"
    assert found[0].read_as == "private-extension 1.3.26.0.1"
    assert encode_extension(extension) == data


@pytest.mark.parametrize(
    "type_bytes",
    [
        bytes.fromhex("a0 03 04 01 26"),  # an OCTET STRING inside
        bytes.fromhex("a0 06 02 01 26 02 01 01"),  # two values
        bytes.fromhex("a0 00"),
        bytes.fromhex("a3 03 06 01 2b"),  # [3] must be primitive
    ],
)
def test_malformed_extension_types_still_raise(type_bytes: bytes) -> None:
    with pytest.raises(DecodeError, match=r"E\.type"):
        decode_extension(ber.read_single(field_bytes(type_bytes), "x"), "E")


def test_internal_trace_added_to_pp_form_keeps_it() -> None:
    entry = InternalTraceEntry(global_domain_identifier=GB, mta_name="pp", arrival_time=NOW)
    value = ber.constructed(ber.SEQUENCE, [])
    received = decode_extension(
        ber.read_single(field_bytes(PP_TYPE, ber.tlv(ber.context(2), value, True)), "x")
    )
    (grown,) = with_internal_trace_entry((received,), entry)
    assert grown.type_encoding == PP_TYPE
    assert encode_extension(grown).startswith(b"\x30") and PP_TYPE in encode_extension(grown)
    assert internal_trace((grown,))[0].mta_name == "pp"


# --- heading ---------------------------------------------------------------------------


def heading_bytes(**changes: object) -> bytes:
    heading = Heading(
        this_ipm=IPMIdentifier(user_relative_identifier="h1"),
        subject="hello",
        **changes,  # type: ignore[arg-type]
    )
    return encode_heading(heading)


def test_vendor_heading_times_without_zone() -> None:
    data = heading_bytes(
        expiry_time=zoneless("050924120000"),
        reply_time=zoneless("0509241300"),
        extended_authorisation_info=zoneless("050924110000"),
    )
    assert b"050924120000" in data and b"050924120000Z" not in data
    found: list[Deviation] = []
    view, tlv = ber.single(data, "h")
    heading = decode_heading(view, tlv, found)
    assert heading.expiry_time == datetime(2005, 9, 24, 12, 0, tzinfo=UTC)
    assert heading.reply_time == datetime(2005, 9, 24, 13, 0, tzinfo=UTC)
    assert heading.extended_authorisation_info == datetime(2005, 9, 24, 11, 0, tzinfo=UTC)
    assert heading.other_extensions == ()
    assert sorted(d.field for d in found) == [
        "ExtendedAuthorisationInfo",
        "expiry-time",
        "reply-time",
    ]
    assert encode_heading(heading) == data
    assert decode_heading(view, tlv) == heading  # no list: tolerated all the same


def test_heading_long_form_tag_is_listed() -> None:
    data = heading_bytes()
    view, tlv = ber.single(data, "h")
    parts = [bytes(view[item[1] : item[4]]) for item in ber.items(view, tlv, "h")]
    subject = next(i for i, part in enumerate(parts) if part[0] == 0xA8)
    parts[subject] = b"\xbf\x08" + parts[subject][1:]  # [8] in the long form
    long_form = ber.tlv_bytes(0x31, b"".join(parts))
    found: list[Deviation] = []
    view, tlv = ber.single(long_form, "h")
    assert decode_heading(view, tlv, found).subject == "hello"
    assert found == [Deviation("Heading.subject tag", "bf 08", "[8] (a8)")]


def test_ipm_decode_passes_the_list_through() -> None:
    ipm = IPM(
        heading=Heading(
            this_ipm=IPMIdentifier(user_relative_identifier="h1"), expiry_time=zoneless()
        ),
        body=(TextBodyPart(data=b"hi"),),
    )
    data = encode_ipm(ipm, 22)
    found: list[Deviation] = []
    assert decode_ipm(data, 22, deviations=found) == ipm
    assert [d.field for d in found] == ["expiry-time"]
    found.clear()
    assert decode_content(data, 22, deviations=found) == ipm
    assert len(found) == 1


# --- PP captures (golden) --------------------------------------------------------------


def definite(data: bytes) -> bytes:
    """``data`` with every indefinite length made definite, all else unchanged."""
    view, tlv = ber.single(data, "x")
    return _definite(view, tlv)


def _definite(view: ber.View, tlv: ber.FlatTlv) -> bytes:
    key, start, _, _, stop = tlv
    if not key & ber.CONSTRUCTED:
        return bytes(view[start:stop])
    inner = b"".join(_definite(view, item) for item in ber.items(view, tlv, "x"))
    return ber.tlv_bytes(view[start], inner)


def test_pp_delivery_report() -> None:
    (apdu,) = transferred_apdus("pp/20-pp-to-aiox-dr")
    report = decode_mts_apdu(apdu)
    assert isinstance(report, Report)
    assert report.envelope.report_destination_name == parse_orname("C=GB;ADMD= ;PRMD=AIOX;S=bob")
    assert report.content.subject_identifier.local_identifier == "9d86a43fe8ce72199510"
    (recipient,) = report.content.recipients
    assert recipient.delivered
    assert recipient.actual_recipient_name.surname == "alice"
    delivery = recipient.last_trace_information.report
    assert isinstance(delivery, DeliveryReport)
    assert delivery.message_delivery_time == datetime(2026, 11, 24, 20, 48, 12, tzinfo=UTC)
    assert report.envelope.internal_trace[0].mta_name == "pp.test"
    fields = [d.field for d in report.deviations]
    assert fields[0] == "ReportTransferEnvelope.extensions[0].type"
    assert report.deviations[0].found == "a0 03 02 01 26"
    assert (
        "ReportTransferContent.per-recipient-fields[0].last-trace-information"
        ".report-type.delivery.message-delivery-time"
    ) in fields
    assert {d.found for d in report.deviations[1:]} == {"1261124204812Z", "1261124204708Z"}
    # Relayed as received: the re-encoding is the input with definite lengths.
    assert encode_mts_apdu(report) == definite(apdu)
    # ... and with our trace, PP's octets stay.
    entry = InternalTraceEntry(global_domain_identifier=GB, mta_name="aiox", arrival_time=NOW)
    relayed = encode_mts_apdu(report.with_internal_trace(entry))
    assert relayed.count(PP_TYPE) == 1 and relayed.count(b"1261124204812Z") == 3
    again = decode_mts_apdu(relayed)
    assert isinstance(again, Report)
    assert [e.mta_name for e in again.envelope.internal_trace] == ["pp.test", "aiox"]


def test_pp_p2_message() -> None:
    (apdu,) = transferred_apdus("pp/21-pp-to-aiox-p22")
    message = decode_mts_apdu(apdu)
    assert isinstance(message, Message)
    envelope = message.envelope
    assert [r.recipient_name.surname for r in envelope.recipients] == ["bob"]
    assert envelope.trace_information[0].arrival_time.year == 1970  # as PP wrote it
    assert envelope.trace_information[1].arrival_time == datetime(
        2026, 11, 24, 20, 51, 42, tzinfo=UTC
    )
    assert [(d.field, d.found) for d in message.deviations] == [
        (
            "MessageTransferEnvelope.trace-information[1].domain-supplied-information.arrival-time",
            "1261124205142Z",
        ),
        ("MessageTransferEnvelope.extensions[0].type", "a0 03 02 01 17"),
        ("MessageTransferEnvelope.extensions[1].type", "a0 03 02 01 26"),
        (
            "MessageTransferEnvelope.extensions.internal-trace-information[1]"
            ".mta-supplied-information.arrival-time",
            "1261124205142Z",
        ),
    ]
    assert envelope.content_correlator is not None
    ipm = decode_content(message.content, envelope.content_type)
    assert isinstance(ipm, IPM)
    assert ipm.heading.subject == "PP to aiox400 test"
    assert [r.name.surname for r in ipm.heading.primary_recipients] == ["bob"]  # type: ignore[union-attr]
    (text,) = ipm.body
    assert isinstance(text, TextBodyPart)
    assert text.data.startswith(b"Hello bob,\r\n")
    # The envelope re-encodes as received (with definite lengths; PP segments the
    # content, which encode_mts_apdu writes in one piece).
    received_envelope = ber.children(ber.read_single(apdu, "x"), "x")[0].raw()
    assert encode_message_envelope(envelope) == definite(received_envelope)


def test_pp_p2_message_relay_keeps_its_octets() -> None:
    (apdu,) = transferred_apdus("pp/21-pp-to-aiox-p22")
    trace = TraceEntry(global_domain_identifier=GB, arrival_time=NOW)
    internal = InternalTraceEntry(global_domain_identifier=GB, mta_name="aiox", arrival_time=NOW)
    relayed = with_trace_added(apdu, trace, internal)
    received = decode_mts_apdu(apdu)
    out = decode_mts_apdu(relayed)
    assert isinstance(received, Message) and isinstance(out, Message)
    assert out.envelope == received.envelope.with_trace(trace).with_internal_trace(internal)
    assert out.content == received.content
    assert relayed.count(PP_TYPE) == 1 and PP_TYPE[:4] + b"\x17" in relayed
    assert relayed.count(b"1261124205142Z") == 2
    assert out.deviations == received.deviations


def test_message_envelope_long_form_tag_is_listed_as_it_is_read() -> None:
    """A member of a message envelope's SET with its tag number below 31 in the long form
    is listed as the envelope is read, by peek_envelope and decode_mts_apdu alike."""
    entry = InternalTraceEntry(
        global_domain_identifier=GB, mta_name="pp", arrival_time=datetime.now(UTC)
    )
    extensions = with_internal_trace_entry((), entry)
    apdu = encode_mts_apdu(Message(envelope=envelope(extensions=extensions), content=b"x"))
    view, outer = ber.single(apdu, "apdu")
    written, content = ber.items(view, outer, "apdu")
    members = [bytes(view[m[1] : m[4]]) for m in ber.items(view, written, "envelope")]
    (at,) = [i for i, member in enumerate(members) if member[0] == 0xA3]  # extensions [3]
    members[at] = b"\xbf\x03" + members[at][1:]
    rebuilt = ber.tlv_bytes(0x31, b"".join(members)) + bytes(view[content[1] : content[4]])
    long_form = ber.tlv_bytes(apdu[0], rebuilt)
    listed = Deviation("MessageTransferEnvelope.extensions tag", "bf 03", "[3] (a3)")
    peeked = peek_envelope(long_form)
    decoded = decode_mts_apdu(long_form)
    assert isinstance(peeked, MessageEnvelope) and isinstance(decoded, Message)
    assert listed in peeked.deviations
    assert listed in decoded.envelope.deviations
    assert peek_envelope(apdu).deviations == ()
