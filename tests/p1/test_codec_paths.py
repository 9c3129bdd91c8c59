"""The codecs' quick paths give what their general paths give (p1.ber, p1.ipm_body,
p1.orname, p1.envelope_fields): decoded values, encodings and decode errors."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p1 import ber, ipm_body
from p1.envelope_fields import (
    GDI_TAG,
    GlobalDomainIdentifier,
    OtherActions,
    PerMessageIndicators,
    PerRecipientIndicators,
    encode_bits,
    encode_gdi,
)
from p1.errors import DecodeError
from p1.ipm import ContentKind, TextBodyPart
from p1.ipm_heading import read_enum
from p1.ipm_models import Importance, Repertoire
from p1.orname import ExtensionAttribute, ORName, decode_orname, encode_orname
from tests.p1 import strategies

# --- O/R names: decoded values built without __init__ ---------------------------------


def _constructed(name: ORName) -> ORName:
    """The same name through the generated __init__ (and __post_init__)."""
    return ORName(**{f.name: getattr(name, f.name) for f in dataclasses.fields(ORName)})


@settings(max_examples=200)
@given(strategies.ornames())
def test_decoded_name_is_the_constructed_one(name: ORName) -> None:
    decoded = decode_orname(encode_orname(name))
    built = _constructed(decoded)
    assert decoded == built == name
    assert hash(decoded) == hash(built)
    assert repr(decoded) == repr(built)
    assert vars(decoded) == vars(built)  # every field set, normalised as __post_init__ does


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


@settings(max_examples=300)
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


def test_text_with_a_longer_length_than_needed_is_kept_as_received() -> None:
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
    assert not isinstance(decoded[0], TextBodyPart)
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
        (b"\x82\x00\x80\x05", "5 content octets announced, 0 present"),  # truncation first
        (b"\x82\x00\x80\x00", "unexpected member with tag 0x82"),
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


@settings(max_examples=300)
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
