"""The one BER core (p1.ber): every legal form of every value reads the same, through the
TLV object (Tlv) and through the tuple form (FlatTlv) alike (X.690 8.1 to 8.23).

Each value is encoded in DER, written again in random legal forms by
:func:`tests.p1.ber_forms.reform` (long lengths with leading zeros, indefinite lengths,
strings, times and BIT STRINGs in nested segments, tag numbers in the long form), and
read by both forms of each reader.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p1 import ber
from p1.ber.values import numeric_text, printable_text
from p1.errors import DecodeError
from tests.p1 import ber_forms
from tests.profiles import examples

_STRINGS = frozenset({0x04, 0x12, 0x13, 0x16}) | ber_forms.TIMES
_ANY_FORM = ber_forms.Rules(string=lambda path, octet: octet in _STRINGS, high_tags=True)

randoms = st.randoms(use_true_random=False)


def _forms(der: bytes, rnd: random.Random) -> tuple[ber.Tlv, memoryview, ber.FlatTlv]:
    """One legal form of ``der``, read as a Tlv and in the tuple form."""
    received = ber_forms.reform(der, rnd, _ANY_FORM)
    view, flat = ber.single(received, "value")
    return ber.read_single(received, "value"), view, flat


@settings(max_examples=examples(2))
@given(st.binary(max_size=40), st.integers(0, 7), randoms)
def test_a_bit_string_reads_the_same_in_every_form(
    octets: bytes, unused: int, rnd: random.Random
) -> None:
    length = max(0, len(octets) * 8 - (unused if octets else 0))
    der = ber.tlv(ber.BIT_STRING, ber.bits_contents(octets, length))
    expected = ber.read_bits(ber.read_single(der, "b"), "b")
    assert expected[1] == length
    tlv, view, flat = _forms(der, rnd)
    assert ber.read_bits(tlv, "b") == expected
    assert ber.bit_string(view, flat, "b") == expected
    assert ber.bits(view, flat, "b") == ber.bits_to_numbers(*expected)


@settings(max_examples=examples(2))
@given(st.integers(-(2**127), 2**127 - 1), randoms)
def test_an_integer_reads_the_same_in_every_form(value: int, rnd: random.Random) -> None:
    tlv, view, flat = _forms(ber.tlv(ber.INTEGER, ber.int_contents(value)), rnd)
    assert ber.read_int(tlv, "i") == ber.integer(view, flat, "i") == value


@settings(max_examples=examples(2))
@given(st.binary(max_size=300), randoms)
def test_octets_read_the_same_in_every_form(value: bytes, rnd: random.Random) -> None:
    tlv, view, flat = _forms(ber.tlv(ber.OCTET_STRING, value), rnd)
    assert ber.read_octets(tlv, "o") == ber.octets(view, flat, "o") == value


_PRINTABLE = st.text(st.sampled_from(ber.values.PRINTABLE_OCTETS.decode()), max_size=60)


@settings(max_examples=examples(2))
@given(_PRINTABLE, st.text(st.sampled_from("0123456789 "), max_size=20), randoms)
def test_strings_read_the_same_in_every_form(
    printable: str, numeric: str, rnd: random.Random
) -> None:
    tlv, view, flat = _forms(ber.tlv(ber.PRINTABLE_STRING, printable.encode()), rnd)
    assert ber.read_text(tlv, "p") == printable_text(view, flat, "p") == printable
    assert ber.text(view, flat, "p") == printable
    tlv, view, flat = _forms(ber.tlv(ber.NUMERIC_STRING, numeric.encode()), rnd)
    assert ber.read_text(tlv, "n") == numeric_text(view, flat, "n") == numeric


@settings(max_examples=examples(2))
@given(st.datetimes(datetime(1950, 1, 1), datetime(2049, 12, 31), timezones=st.just(UTC)), randoms)
def test_times_read_the_same_in_every_form(when: datetime, rnd: random.Random) -> None:
    when = when.replace(microsecond=0)
    tlv, view, flat = _forms(ber.tlv(ber.UTC_TIME, ber.utctime_contents(when, "t")), rnd)
    assert ber.read_utctime(tlv, "t") == when
    assert ber.parse_utctime(ber.text(view, flat, "t"), "t") == when
    # GeneralizedTime (X.680 46) is a VisibleString too: its text, segmented or not
    text = when.strftime("%Y%m%d%H%M%SZ")
    tlv, view, flat = _forms(ber.tlv(ber.universal(24), text.encode()), rnd)
    assert ber.read_text(tlv, "g") == ber.text(view, flat, "g") == text


@settings(max_examples=examples(2))
@given(st.lists(st.integers(0, 2**40), min_size=1, max_size=8), randoms)
def test_an_oid_reads_the_same_in_every_form(arcs: list[int], rnd: random.Random) -> None:
    dotted = "1.3." + ".".join(map(str, arcs))
    tlv, view, flat = _forms(ber.oid_tlv(dotted), rnd)
    assert ber.read_oid(tlv, "o") == dotted
    if flat[0] == ber.OID_KEY:  # (the tuple form's oid() takes the universal tag only)
        assert ber.oid(view, flat, "o") == dotted


@settings(max_examples=examples(2))
@given(st.lists(st.sampled_from([0, 1, 2, 3, 17, 30]), unique=True), randoms)
def test_set_members_are_found_the_same_in_every_form(
    numbers: list[int], rnd: random.Random
) -> None:
    members = [ber.tlv(ber.context(n), bytes((n % 256,))) for n in numbers]
    tlv, view, flat = _forms(ber.constructed(ber.SET, members), rnd)
    by_tag = ber.split_set(tlv, {ber.context(n): f"m{n}" for n in numbers}, "s")
    keys = {
        ber.flat(child)[0] & ~ber.CONSTRUCTED: f"m{n}"
        for n, child in zip(numbers, ber.children(tlv, "s"), strict=True)
    }
    by_key = ber.members(view, flat, keys, "s")
    assert list(by_tag) == list(by_key) == [f"m{n}" for n in numbers]
    for name, child in by_tag.items():
        assert ber.flat(child) == by_key[name]
        assert ber.tlv_of(child.data, by_key[name]) == child


# --- forms read the same, decided once: the cases -------------------------------------


def test_a_length_with_many_leading_zero_octets() -> None:
    data = bytes.fromhex("04 8c" + "00" * 11 + "05") + b"hello"
    assert ber.read_octets(ber.read_single(data, "o"), "o") == b"hello"


@pytest.mark.parametrize(
    ("hexed", "why"),
    [
        ("04ff", "length octet 0xff is reserved"),
        ("0489" + "01" + "00" * 8, "a length of 65 bits"),
        ("0403616263", "truncated: 3 content octets announced, 2 present"),
        ("0480616263", "indefinite length on a primitive value"),
    ],
)
def test_lengths_that_are_not_read(hexed: str, why: str) -> None:
    data = bytes.fromhex(hexed)
    with pytest.raises(DecodeError) as caught:
        ber.read_single(data[:-1] if why.startswith("truncated") else data, "o")
    assert caught.value.why == why


@pytest.mark.parametrize(
    ("hexed", "bits"),
    [
        ("2300", (b"", 0)),  # no segment: no bit
        ("2380 0301 00 0000", (b"", 0)),
        ("2309 0302 00ff 0303 05aae0", (b"\xff\xaa\xe0", 19)),
        ("2380 2380 2304 0302 00ff 0000 0302 0780 0000", (b"\xff\x80", 9)),
    ],
)
def test_constructed_bit_strings(hexed: str, bits: tuple[bytes, int]) -> None:
    data = bytes.fromhex(hexed.replace(" ", ""))
    view, flat = ber.single(data, "b")
    assert ber.read_bits(ber.read_single(data, "b"), "b") == ber.bit_string(view, flat, "b") == bits


@pytest.mark.parametrize(
    ("hexed", "why"),
    [
        ("2308 0302 0780 0302 0080", "only the last BIT STRING segment may have unused bits"),
        ("2304 0402 00ff", "expected [UNIVERSAL 3], found [UNIVERSAL 4]"),
        ("2303 0301 08", "8 unused bits in a BIT STRING of 0 octets"),
        ("2302 0300", "a BIT STRING needs its unused-bits octet"),
    ],
)
def test_constructed_bit_strings_refused(hexed: str, why: str) -> None:
    data = bytes.fromhex(hexed.replace(" ", ""))
    view, flat = ber.single(data, "b")
    with pytest.raises(DecodeError) as by_object:
        ber.read_bits(ber.read_single(data, "b"), "b")
    with pytest.raises(DecodeError) as by_tuple:
        ber.bit_string(view, flat, "b")
    assert by_object.value.why == by_tuple.value.why == why


def test_a_constructed_utctime_in_nested_segments() -> None:
    data = bytes.fromhex("3780 0406 323430313032 2480 0405 3033303430 0402 355a 0000 0000")
    when = ber.read_utctime(ber.read_single(data, "t"), "t")
    assert when == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert str(when.utctime) == "240102030405Z"


def test_a_high_tag_number_reads_as_its_tag_in_both_forms() -> None:
    data = bytes.fromhex("bf8148 03 020105")  # [200] { INTEGER 5 }
    tlv = ber.read_single(data, "x")
    _, flat = ber.single(data, "x")
    assert tlv.tag == ber.context(200) and tlv.constructed
    assert ber.tag_of(flat[0]) == ber.context(200)
    assert ber.flat(tlv) == flat and ber.tlv_of(tlv.data, flat) == tlv
    assert ber.read_int(ber.only_child(tlv, "x"), "x") == 5
