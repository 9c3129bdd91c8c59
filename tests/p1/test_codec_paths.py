"""The codecs' quick paths give what their general paths give (p1.ber, p1.ipms.body,
p1.ipms.heading, p1.ipms.ipm, p1.mts.orname, p1.mts.fields, p1.mts.extensions): decoded
values, encodings and decode errors; and models the decoders build without ``__init__``
are the ones ``__init__`` builds."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from datetime import UTC, datetime
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import samples
from p1 import asn1, ber
from p1.errors import DecodeError, EncodeError
from p1.ipms import body as ipm_body
from p1.ipms import heading as ipm_heading
from p1.ipms import ipm
from p1.ipms.heading import read_enum
from p1.ipms.ipm import IPM, P772_CONTENT_TYPE, ContentKind, TextBodyPart, decode_ipm, encode_ipm
from p1.ipms.models import Importance, Repertoire
from p1.mts import extensions as envelope_extensions
from p1.mts import orname
from p1.mts.envelope import (
    ExtensionField,
    Message,
    MessageEnvelope,
    Priority,
    decode_message_envelope,
    decode_mts_apdu,
    encode_message_envelope,
    encode_mts_apdu,
)
from p1.mts.fields import (
    GDI_TAG,
    BuiltInContentType,
    GlobalDomainIdentifier,
    OtherActions,
    PerMessageIndicators,
    PerRecipientIndicators,
    decode_bits,
    decode_recipient_number,
    encode_bits,
    encode_gdi,
)
from p1.mts.orname import ExtensionAttribute, ORName, decode_orname, encode_orname
from p1.mts.precedence import PRIORITY_LEVEL_QUALIFIER_OID
from tests.p1 import strategies
from tests.p1.ipms import test_ipm
from tests.profiles import examples

# --- O/R names: decoded values built without __init__ ---------------------------------


def _constructed(name: ORName) -> ORName:
    """The same name through the generated __init__ (and __post_init__)."""
    return ORName(**{f.name: getattr(name, f.name) for f in dataclasses.fields(ORName)})


@settings(max_examples=examples(2))
@given(strategies.ornames())
def test_decoded_name_is_the_constructed_one(name: ORName) -> None:
    decoded = decode_orname(encode_orname(name))
    built = _constructed(decoded)
    assert decoded == built == name
    assert hash(decoded) == hash(built)
    assert repr(decoded) == repr(built)
    # Every field set, normalised as __post_init__ does.  (Only the fields: the same bytes
    # decoded earlier in the process give the same name back, with what was computed from
    # it since, its canonical text or its encoding, kept beside them.)
    fields = {f.name for f in dataclasses.fields(ORName)}
    assert {k: v for k, v in vars(decoded).items() if k in fields} == vars(built)


def test_decoded_name_is_frozen_and_copies() -> None:
    name = decode_orname(encode_orname(_a_name()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        name.surname = "Other"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(name)) == name
    assert copy.deepcopy(name) == name
    assert dataclasses.replace(name, surname="Other").surname == "Other"


def _a_name() -> ORName:
    return ORName(
        country="GB",
        admd=" ",
        prmd="NATO",
        organization="ACT",
        organizational_units=("J6",),
        surname="Smith",
        given_name="John",
        common_name="Duty Officer",
    )


@pytest.mark.parametrize(
    ("common_name_position", "expected"),
    [(None, None), (0, None), (1, 1)],
)
def test_common_name_position_is_normalised(
    common_name_position: int | None, expected: int | None
) -> None:
    name = ORName(
        country="GB",
        admd=" ",
        common_name="Duty Officer",
        extension_attributes=(ExtensionAttribute(type=7, value=b"\x13\x01A"),),
        common_name_position=common_name_position,
    )
    decoded = decode_orname(encode_orname(name))
    assert decoded.common_name_position == expected
    assert decoded == name


# --- text body parts: read straight through or by the general reader -------------------


def _body_part(data: bytes, kind: ContentKind) -> tuple[bytes, ber.FlatTlv]:
    chunks = ipm_body.encode_body((TextBodyPart(data=data),), kind)
    encoded = b"".join(chunks)
    _, body = ber.single(encoded, "Body")
    return encoded, ber.items(encoded, body, "Body")[0]


@pytest.mark.parametrize("size", [0, 1, 100, 127, 128, 255, 256, 65535, 65536])
def test_extended_text_is_read_as_the_general_reader_does(size: int) -> None:
    data = bytes(0x41 + n % 26 for n in range(size))
    encoded, tlv = _body_part(data, ContentKind.P772)
    quick = ipm_body._extended_ia5_text(encoded, tlv, ContentKind.P772)
    assert quick == ipm_body._extended(encoded, tlv, ContentKind.P772)
    assert quick == TextBodyPart(data=data)
    p2 = ipm_body._extended_ia5_text(encoded, tlv, ContentKind.P2)
    assert p2 == TextBodyPart(data=data, extended=True)


@settings(max_examples=examples(3))
@given(st.binary(max_size=300).map(lambda raw: bytes(b & 0x7F for b in raw)), st.data())
def test_damaged_extended_text_is_read_as_the_general_reader_does(
    data: bytes, draw: st.DataObject
) -> None:
    encoded, tlv = _body_part(data, ContentKind.P772)
    header_size = len(encoded) - len(data)
    position = draw.draw(st.integers(tlv[2], header_size - 1))
    damaged = bytearray(encoded)
    damaged[position] = draw.draw(st.integers(0, 255))
    damaged_bytes = bytes(damaged)
    try:
        _, body = ber.single(damaged_bytes, "Body")
        damaged_tlv = ber.items(damaged_bytes, body, "Body")[0]
    except DecodeError:
        return
    quick = ipm_body._extended_ia5_text(damaged_bytes, damaged_tlv, ContentKind.P772)
    if quick is not None:  # read straight through: the general reader agrees
        general = ipm_body._extended(damaged_bytes, damaged_tlv, ContentKind.P772)
        assert quick == general


def test_text_with_a_longer_length_than_needed_is_read_and_kept_as_received() -> None:
    # The IA5String's length in two octets (0x81 0x05) where one would do.
    parameters = bytes.fromhex("a00a060456010b00a0023100")
    data_type = bytes.fromhex("060456010400")
    text = ber.tlv_bytes(0xA0, b"\x16\x81\x05HELLO")
    part = ber.tlv_bytes(0xAF, parameters + ber.tlv_bytes(0x28, data_type + text))
    body = ber.tlv_bytes(0x30, part)
    _, outer = ber.single(body, "Body")
    tlv = ber.items(body, outer, "Body")[0]
    assert ipm_body._extended_ia5_text(body, tlv, ContentKind.P772) is None
    decoded = ipm_body.decode_body(body, outer, ContentKind.P772)
    assert decoded == ipm_body.decode_body(memoryview(body), outer, ContentKind.P772)
    assert decoded[0] == TextBodyPart(data=b"HELLO")  # the fast path declines; the reader reads
    assert b"".join(ipm_body.encode_body(decoded, ContentKind.P772)) == body


def test_ia5_repertoire_of_a_quick_text() -> None:
    encoded, tlv = _body_part(b"TEXT", ContentKind.P772)
    part = ipm_body._extended_ia5_text(encoded, tlv, ContentKind.P772)
    assert isinstance(part, TextBodyPart)
    assert part.repertoire is Repertoire.IA5


# --- SETs read in one pass: errors as the two passes gave them --------------------------

_NAMES = {0x80: "a", 0x81: "b"}
_TAGS = {ber.context(0): "a", ber.context(1): "b"}


@pytest.mark.parametrize(
    ("contents", "why"),
    [
        (b"\x82\x00\x80\x05", "truncated: 5 content octets announced, 0 present"),
        (b"\x82\x00\x80\x00", "unexpected [2]"),  # as split_set says it
        (b"\x80\x00\x80\x00\x83\x00", "a appears twice"),  # the first problem wins
        (b"\x80\x00\x81\x01\x00", ""),
    ],
)
def test_members_reports_as_before(contents: bytes, why: str) -> None:
    data = b"\x31" + bytes((len(contents),)) + contents
    view, tlv = ber.single(data, "SET")
    if not why:
        assert list(ber.members(data, tlv, _NAMES, "SET")) == ["a", "b"]
        return
    with pytest.raises(DecodeError) as error:
        ber.members(view, tlv, _NAMES, "SET")
    assert error.value.why == why


@pytest.mark.parametrize(
    ("contents", "why"),
    [
        (b"\x82\x00\x80\x05", "truncated: 5 content octets announced, 0 present"),
        (b"\x82\x00\x80\x00", "unexpected [2]"),
        (b"\x80\x00\x80\x00\x83\x00", "a appears twice"),
        (b"\x81\x00\x80\x00", ""),
    ],
)
def test_split_set_reports_as_before(contents: bytes, why: str) -> None:
    data = b"\x31" + bytes((len(contents),)) + contents
    tlv = ber.read_single(data, "SET")
    if not why:
        found = ber.split_set(tlv, _TAGS, "SET")
        assert found.order == ("b", "a")
        assert found["a"].raw() == b"\x80\x00"
        return
    with pytest.raises(DecodeError) as error:
        ber.split_set(tlv, _TAGS, "SET")
    assert error.value.why == why


@settings(max_examples=examples(3))
@given(st.binary(max_size=24))
def test_one_pass_readers_agree_with_items_and_children(contents: bytes) -> None:
    data = b"\x31" + bytes((len(contents),)) + contents
    view, flat = ber.single(data, "SET")
    tlv = ber.read_single(data, "SET")
    try:
        listed = ber.items(view, flat, "SET")
    except DecodeError as exc:
        with pytest.raises(DecodeError) as error:
            ber.members(data, flat, _NAMES, "SET")
        assert error.value.why == exc.why
    else:
        assert [item[4] for item in listed] == [child.stop for child in ber.children(tlv, "S")]
        names = [_NAMES.get(item[0] & ~ber.CONSTRUCTED) for item in listed]
        if None in names or len(set(names)) != len(names):
            with pytest.raises(DecodeError):
                ber.members(data, flat, _NAMES, "SET")
        else:
            assert list(ber.members(data, flat, _NAMES, "SET").values()) == listed


# --- encodings kept by value -----------------------------------------------------------


def test_bits_are_kept_by_value_length_and_tag() -> None:
    short = PerMessageIndicators(disclosure_of_other_recipients=True)
    long = PerMessageIndicators(disclosure_of_other_recipients=True, length=16)
    assert short == long
    assert encode_bits(short, ber.application(8), "x") == b"\x48\x02\x07\x80"
    assert encode_bits(long, ber.application(8), "x") == b"\x48\x03\x00\x80\x00"
    assert encode_bits(short, ber.context(1), "x") == b"\x81\x02\x07\x80"
    empty = PerRecipientIndicators()
    assert empty.is_empty and OtherActions().is_empty
    assert not PerRecipientIndicators(responsibility=True).is_empty
    assert not OtherActions(other_bits=(5,)).is_empty


def test_domain_identifiers_are_kept_by_value_and_tag() -> None:
    gdi = GlobalDomainIdentifier(country="GB", admd=" ", prmd="NATO")
    first = encode_gdi(gdi)
    assert encode_gdi(GlobalDomainIdentifier(country="GB", admd=" ", prmd="NATO")) == first
    assert first[0] == 0x63 and encode_gdi(gdi, ber.context(1))[0] == 0xA1
    numeric = GlobalDomainIdentifier(country="GB", admd=" ", prmd="1234", prmd_numeric=False)
    assert encode_gdi(numeric) != encode_gdi(
        GlobalDomainIdentifier(country="GB", admd=" ", prmd="1234")
    )
    assert ber.application(3) == GDI_TAG


@pytest.mark.parametrize("value", [*range(-300, 300), 2**40, -(2**40), True, False])
def test_int_contents_shortest_form(value: int) -> None:
    size = (value + (value < 0)).bit_length() // 8 + 1
    assert ber.int_contents(value) == value.to_bytes(size, "big", signed=True)


def test_int_contents_of_an_enumeration() -> None:
    assert ber.int_contents(Importance.HIGH) == b"\x02"


@pytest.mark.parametrize("value", [0, 1, 2])
def test_read_enum_gives_the_members(value: int) -> None:
    data = bytes((0x0A, 1, value))
    for _ in range(2):  # the first reading through the class, then by value
        assert read_enum(data, (0x0A, 0, 2, 3, 3), Importance, "importance") is Importance(value)


def test_read_enum_refuses_unknown_values() -> None:
    read_enum(b"\x0a\x01\x01", (0x0A, 0, 2, 3, 3), Importance, "importance")
    with pytest.raises(DecodeError, match="7 is not a known value"):
        read_enum(b"\x0a\x01\x07", (0x0A, 0, 2, 3, 3), Importance, "importance")


# --- decoded models built without __init__ ---------------------------------------------


def _through_init(value: Any) -> Any:
    """The same value through the generated __init__."""
    return type(value)(**{f.name: getattr(value, f.name) for f in dataclasses.fields(value)})


def _assert_built_as_init_builds(value: Any) -> None:
    built = _through_init(value)
    assert value == built
    assert hash(value) == hash(built)
    assert repr(value) == repr(built)
    assert vars(value) == vars(built)  # every field set
    assert pickle.loads(pickle.dumps(value)) == value
    assert copy.deepcopy(value) == value
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.extra = 1


@pytest.mark.slow
@settings(max_examples=examples(0.6), suppress_health_check=[HealthCheck.too_slow])
@given(strategies.message_envelopes())
def test_decoded_envelopes_are_the_constructed_ones(envelope: MessageEnvelope) -> None:
    decoded = decode_message_envelope(encode_message_envelope(envelope))
    assert decoded == envelope
    _assert_built_as_init_builds(decoded)
    for value in (*decoded.recipients, *decoded.trace_information):
        _assert_built_as_init_builds(value)
    assert dataclasses.replace(decoded, priority=Priority.URGENT).priority == Priority.URGENT


def test_the_benchmark_message_decodes_to_constructed_models() -> None:
    message = samples.message(1024)
    decoded = decode_mts_apdu(encode_mts_apdu(message))
    assert isinstance(decoded, Message)
    _assert_built_as_init_builds(decoded.envelope)
    ipm = decode_ipm(decoded.content, decoded.envelope.content_type)
    assert ipm == samples.p772_ipm(1024)
    _assert_built_as_init_builds(ipm.heading)
    for recipient in ipm.heading.primary_recipients:
        _assert_built_as_init_builds(recipient)


@pytest.mark.slow
@settings(max_examples=examples(0.6), suppress_health_check=[HealthCheck.too_slow])
@given(test_ipm.kinds_and_ipms)
def test_decoded_headings_are_the_constructed_ones(kind_and_ipm: tuple[ContentKind, IPM]) -> None:
    kind, ipm = kind_and_ipm
    heading = decode_ipm(encode_ipm(ipm, kind), kind).heading
    assert heading == ipm.heading
    _assert_built_as_init_builds(heading)
    for recipient in (*heading.primary_recipients, *heading.copy_recipients):
        _assert_built_as_init_builds(recipient)


# --- UTCTime: the usual form through datetime's parser ----------------------------------

_DIGITS = "0123456789"


@settings(max_examples=examples(5))
@given(
    st.one_of(
        st.text(_DIGITS, min_size=12, max_size=12),
        st.datetimes(datetime(1950, 1, 1), datetime(2049, 12, 31)).map(
            lambda when: when.strftime("%y%m%d%H%M%S")
        ),
        st.sampled_from(["491231235959", "500101000000", "240229120000", "230229120000"]),
    )
)
def test_quick_utctime_reads_as_the_general_path(digits: str) -> None:
    text = digits + "Z"
    quick = ber.values._quick_utctime(text)
    try:
        general = ber.values._parse_utctime(text, "t")
    except DecodeError as exc:
        assert quick is None
        with pytest.raises(DecodeError) as error:
            ber.parse_utctime(text, "t")
        assert (error.value.why, error.value.where) == (exc.why, exc.where)
        return
    assert quick is not None and type(quick) is ber.WireTime
    assert quick == general and quick.tzinfo is general.tzinfo is UTC
    assert quick.utctime == general.utctime == text
    assert ber.parse_utctime(text, "t").utctime == text


@pytest.mark.parametrize(
    "text",
    ["2611220930Z", "261122093000+0100", "\u0662\u0666" + "1122093000Z", "26112209300Z", "x" * 13],
)
def test_other_utctime_forms_take_the_general_path(text: str) -> None:
    try:
        general = ber.values._parse_utctime(text, "t")
    except DecodeError as exc:
        with pytest.raises(DecodeError) as error:
            ber.parse_utctime(text, "t")
        assert error.value.why == exc.why
    else:
        parsed = ber.parse_utctime(text, "t")
        assert parsed == general and parsed.utctime == general.utctime


@settings(max_examples=examples(3))
@given(strategies.plain_times())
def test_utctime_text_is_what_strftime_writes(when: datetime) -> None:
    offset = when.utcoffset()
    assert offset is not None
    expected = (when - offset).replace(tzinfo=None).strftime("%y%m%d%H%M%SZ")
    assert ber.utctime_text(when, "t") == expected
    assert ber.utctime_text(when.replace(tzinfo=None).replace(tzinfo=UTC), "t") == (
        when.strftime("%y%m%d%H%M%SZ")
    )


# --- writers: precomputed short headers --------------------------------------------------


@pytest.mark.parametrize("octet", range(0x100))
def test_short_headers_are_the_formatted_ones(octet: int) -> None:
    for length in (0, 1, 0x7F, 0x80, 0x100, 0x10000):
        contents = bytes(length)
        expected = bytes((octet,)) + ber.length_octets(length)
        assert ber.header(octet, length) == expected
        assert ber.tlv_bytes(octet, contents) == expected + contents


@pytest.mark.parametrize(
    "tag",
    [
        ber.INTEGER,
        ber.SET,
        ber.application(0),
        ber.context(30),
        ber.context(31),
        ber.universal(200),
    ],
)
@pytest.mark.parametrize("length", [0, 1, 0x7F, 0x80, 0x1234])
def test_tlv_is_identifier_length_and_contents(tag: int, length: int) -> None:
    contents = bytes(range(256)) * (length // 256) + bytes(range(length % 256))
    for is_constructed in (False, True):
        expected = ber.identifier(tag, is_constructed) + ber.length_octets(length) + contents
        assert ber.tlv(tag, contents, is_constructed) == expected
        assert ber.tlv(tag, bytearray(contents), is_constructed) == expected


_NEAR_TLVS = st.builds(
    lambda octet, contents, length, trailing: bytes((octet, length)) + contents + trailing,
    st.sampled_from([0x04, 0x30, 0x1F, 0xA0, 0xBF]),
    st.binary(max_size=0x82),
    st.integers(0, 0xFF),
    st.sampled_from([b"", b"\x00", b"\x00\x00"]),
)
"""Mostly not quite one TLV: any length octet, any contents, maybe trailing bytes."""
_EXACT_TLVS = st.builds(
    lambda octet, contents, trailing: bytes((octet, len(contents))) + contents + trailing,
    st.integers(0, 0xFF),
    st.binary(max_size=0xFF),
    st.sampled_from([b"", b"\x00"]),
)
"""One TLV (a short or a long-form length octet), maybe with a trailing byte."""


@settings(max_examples=examples(5))
@given(st.one_of(st.binary(max_size=140), _NEAR_TLVS, _EXACT_TLVS))
def test_check_single_tlv_agrees_with_read_single(data: bytes) -> None:
    _assert_check_single_tlv_agrees(data)


@pytest.mark.parametrize("size", range(0x7C, 0x86))
@pytest.mark.parametrize("first", [0x00, 0x7F, 0x80, 0xFF])
def test_check_single_tlv_around_the_short_length_limit(size: int, first: int) -> None:
    # The length octet is ``size``: past 0x7F it counts the length octets that follow.
    _assert_check_single_tlv_agrees(bytes((0x04, size, first)) + bytes(size - 1))


def _assert_check_single_tlv_agrees(data: bytes) -> None:
    try:
        ber.read_single(data, "x")
    except DecodeError as exc:
        with pytest.raises(EncodeError) as error:
            ber.check_single_tlv(data, "x")
        assert error.value.why == f"not one BER value: {exc.why}"
    else:
        ber.check_single_tlv(data, "x")


@pytest.mark.parametrize("length", [0, 1, 0x7D, 0x7E, 0x7F, 0x80, 0x81, 0x100])
def test_quick_ia5_text_chunks_are_the_general_ones(length: int) -> None:
    data = bytes(0x41 + n % 26 for n in range(length))
    general = ipm_body._extended_chunks(
        ipm_body.ID_EP_IA5_TEXT,
        [ipm_body._IA5_PARAMETER_BYTES[Repertoire.IA5]],
        ipm_body.ID_ET_IA5_TEXT,
        ber.wrap(ipm_body._IA5STRING_OCTET, [data]),
    )
    quick = ipm_body._encode_text(TextBodyPart(data=data), ContentKind.P772)
    assert b"".join(quick) == b"".join(general)
    assert quick[-1] is data  # the text is not copied


# --- O/R names: long values around the short-header limits -------------------------------


@pytest.mark.parametrize("length", [1, 0x40, 0x78, 0x79, 0x7D, 0x7E, 0x7F, 0x80, 0x100])
def test_long_name_values_agree_with_asn1tools(length: int) -> None:
    text = ("A1 " * length)[:length]
    for name in (
        ORName(country=text, admd=text, prmd=text, organization=text),
        ORName(country="GB", admd=" ", surname=text, given_name=text[:0x7E] or "G"),
        ORName(country="GB", admd=" ", organizational_units=(text, "J6")),
        ORName(country="GB", admd=" ", common_name=text),
        ORName(country="GB", admd="1" * length, prmd="2" * length, country_numeric=False),
    ):
        expected = asn1.encode(orname.MODULE, "ORName", orname.orname_to_asn1(name))
        assert encode_orname(name) == expected
        assert decode_orname(expected) == name


# --- envelope fields: quick readings ---------------------------------------------------

_NUMBER_CONTENTS = [b"", b"\x00", b"\x01", b"\x7f", b"\x80", b"\xff", b"\x00\x01", b"\x7f\xff"]
_NUMBER_TLVS = [
    *(bytes((0x80, len(contents))) + contents for contents in _NUMBER_CONTENTS),
    *(b"\x80\x02\x80\x00", b"\x80\x03\x00\x80\x00", b"\x80\x03\x00\x00\x01"),
    *(b"\xa0\x03\x02\x01\x01", b"\xa0\x00"),  # constructed
]


@pytest.mark.parametrize("encoded", _NUMBER_TLVS)
def test_recipient_number_reads_as_read_bounded_int(encoded: bytes) -> None:
    tlv = ber.read_single(encoded, "x")
    try:
        expected = ber.read_bounded_int(tlv, "r.originally-specified-recipient-number", 1, 32767)
    except DecodeError as exc:
        with pytest.raises(DecodeError) as error:
            decode_recipient_number(tlv, "r")
        assert (error.value.why, error.value.where) == (exc.why, exc.where)
    else:
        assert decode_recipient_number(tlv, "r") == expected


@settings(max_examples=examples(3))
@given(st.binary(max_size=6), st.sampled_from([PerRecipientIndicators, OtherActions]))
def test_bits_read_by_their_contents_as_from_bit_string(
    contents: bytes, cls: type[PerRecipientIndicators | OtherActions]
) -> None:
    tlv = ber.read_single(b"\x81" + bytes((len(contents),)) + contents, "x")
    try:
        octets, length = ber.read_bits(tlv, "b")
    except DecodeError as exc:
        with pytest.raises(DecodeError) as error:
            decode_bits(cls, tlv, "b")
        assert (error.value.why, error.value.where) == (exc.why, exc.where)
        return
    expected = cls.from_bit_string(octets, length)
    for _ in range(2):  # read, then remembered
        decoded = decode_bits(cls, tlv, "b")
        assert decoded == expected and decoded.length == expected.length


@pytest.mark.parametrize(
    "value", [bytes((tag, 1, n)) for tag in (0x0A, 0x02, 0x04) for n in (0, 1, 2)]
)
def test_level_qualifier_lookup_reads_as_the_general_path(value: bytes) -> None:
    extensions = (ExtensionField(type=PRIORITY_LEVEL_QUALIFIER_OID, value=value),)
    with mock.patch.dict(envelope_extensions._LEVEL_QUALIFIER_ENCODINGS, clear=True):
        try:
            expected = envelope_extensions.priority_level_qualifier(extensions)
        except DecodeError as exc:
            general_error: DecodeError | None = exc
        else:
            general_error = None
    if general_error is not None:
        with pytest.raises(DecodeError) as error:
            envelope_extensions.priority_level_qualifier(extensions)
        assert error.value.why == general_error.why
    else:
        assert envelope_extensions.priority_level_qualifier(extensions) is expected


# --- IPM: quick readings -----------------------------------------------------------------


@settings(max_examples=examples(3))
@given(st.binary(max_size=12), st.binary(max_size=3))
def test_content_read_in_place_as_ber_single_reads_it(contents: bytes, trailing: bytes) -> None:
    data = ber.tlv_bytes(0xA0, contents) + trailing
    for candidate in (data, data[: len(data) // 2]):
        try:
            expected = ber.single(candidate, "IPM")[1]
        except DecodeError as exc:
            with pytest.raises(DecodeError) as error:
                ipm._single(candidate, "IPM")
            assert (error.value.why, error.value.where) == (exc.why, exc.where)
        else:
            assert ipm._single(candidate, "IPM") == (candidate, expected)


@pytest.mark.parametrize(
    "kind", [*ContentKind, P772_CONTENT_TYPE, 22, BuiltInContentType(22), True, "2.5", 23, []]
)
def test_content_kind_lookup_is_the_enumeration(kind: object) -> None:
    try:
        expected = ContentKind(kind)
    except ValueError:
        with pytest.raises(ValueError, match="not an IPM content type"):
            ipm._content_kind(kind)  # type: ignore[arg-type]
    else:
        assert ipm._content_kind(kind) is expected  # type: ignore[arg-type]


def _extensions_read_both_ways(view: bytes, tlv: ber.FlatTlv) -> tuple[object, object]:
    """What _heading_extensions gives (or its error), then what the general path gives."""
    results: list[object] = []
    for quick in (True, False):
        with mock.patch.object(ipm_heading, "_modelled", wraps=ipm_heading._modelled) as spy:
            if not quick:
                spy.side_effect = lambda view, tlv: None
            try:
                results.append(ipm_heading._heading_extensions(view, tlv))
            except DecodeError as exc:
                results.append((exc.why, exc.where))
    return results[0], results[1]


_PRECEDENCE_OID = ber.oid_tlv(f"{ipm_heading.ID_MM}.0")
_HANDLING_OID = ber.oid_tlv(f"{ipm_heading.ID_MM}.7")


@pytest.mark.parametrize("oid", [_PRECEDENCE_OID, _HANDLING_OID, ber.oid_tlv("1.2.3")])
@pytest.mark.parametrize(
    "value",
    [
        b"",  # no value
        b"\x02\x01\x05",
        b"\x30\x05\x13\x03ABC",
        b"\x1f\x02\x01\x00",  # a high tag number
        b"\x30\x80\x13\x01A\x00\x00",  # indefinite length
        b"\x30\x80\x04\x7e" + bytes(0x7E),  # indefinite, its length octet the rest's size
        b"\x30\x81\x80" + b"\x04\x7e" + bytes(0x7E),  # a long-form length
        b"\x02\x01\x05\x02\x01\x05",  # two values
        b"\x02\x02\x05",  # truncated
    ],
)
def test_heading_extension_forms_read_as_the_general_path(oid: bytes, value: bytes) -> None:
    view = ber.tlv_bytes(0xAF, ber.tlv_bytes(0x30, oid + value))
    tlv = ber.single(view, "extensions")[1]
    quick, general = _extensions_read_both_ways(view, tlv)
    assert quick == general


@settings(max_examples=examples(3), suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_heading_extensions_read_as_the_general_path(data: st.DataObject) -> None:
    heading = test_ipm.FULL_HEADING
    encoded = bytearray(ipm_heading.encode_heading(heading))
    for _ in range(data.draw(st.integers(0, 3))):
        encoded[data.draw(st.integers(0, len(encoded) - 1))] = data.draw(st.integers(0, 255))
    view = bytes(encoded)
    try:
        _, outer = ber.single(view, "Heading")
        found = ber.members(view, outer, ipm_heading._HEADING, "Heading")
    except DecodeError:
        return
    if "extensions" not in found:
        return
    quick, general = _extensions_read_both_ways(view, found["extensions"])
    assert quick == general
