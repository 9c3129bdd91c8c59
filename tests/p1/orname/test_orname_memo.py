"""O/R names computed once: parse_orname's memory of texts, and the canonical form, route key
and BER kept in a name (X.411 clause 18.5 comparison forms; X.411 annex B upper bounds).

Each remembered value must equal the one computed afresh, and bad input must fail the same
way every time: a name is shared only because it is immutable.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given

from p1.errors import DecodeError, EncodeError
from p1.mts.orname import ORName, decode_orname, encode_orname, format_orname, parse_orname
from p1.orname import ber as orname_ber
from p1.orname import model as orname_model
from p1.orname import text as orname_text
from tests.p1 import strategies

SMITH = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith"
BAD_TEXTS = [
    "",
    "C=GB;S=",
    "C=GB;X=1",
    "C=GBR;O=X",
    "C=GB;ADMD= ;G=John",
    "C=GB;O=a\\",
    "C=GB;O=\u00e9",
    "C=GB;OU2=x",
    "C=GB;S=a;S=b",
    "C=GB;O=" + "x" * 65,
]


def _fresh_error(text: str) -> DecodeError:
    with pytest.raises(DecodeError) as caught:
        orname_text._parse(text)
    return caught.value


# --- parse_orname remembers texts -------------------------------------------------------


@given(strategies.ornames())
def test_a_remembered_parse_equals_a_fresh_one(name: ORName) -> None:
    for text in (format_orname(name), format_orname(name, "slash")):
        first, again, fresh = parse_orname(text), parse_orname(text), orname_text._parse(text)
        assert first == again == fresh == name
        assert repr(again) == repr(fresh)
        assert again.canonical == fresh.canonical
        assert encode_orname(again) == encode_orname(fresh)


def test_the_same_text_gives_the_same_name_object() -> None:
    assert parse_orname(SMITH) is parse_orname(SMITH)
    assert parse_orname(SMITH) is not orname_text._parse(SMITH)


@pytest.mark.parametrize("text", BAD_TEXTS)
def test_bad_text_fails_the_same_way_every_time(text: str) -> None:
    expected = _fresh_error(text)
    for _ in range(3):
        with pytest.raises(DecodeError) as caught:
            parse_orname(text)
        assert (caught.value.why, caught.value.where) == (expected.why, expected.where)
        assert str(caught.value) == str(expected)


def test_what_is_not_text_fails_as_before() -> None:
    for value in (None, 5, ["C=GB"]):
        with pytest.raises(AttributeError):
            parse_orname(value)  # type: ignore[arg-type]


def test_the_memory_is_bounded() -> None:
    remembered = orname_text._parse_remembered
    assert remembered.cache_info().maxsize == orname_text._REMEMBERED_NAMES
    for number in range(orname_text._REMEMBERED_NAMES + 10):
        parse_orname(f"C=GB;ADMD= ;PRMD=P{number}")
    assert remembered.cache_info().currsize == orname_text._REMEMBERED_NAMES


def test_a_long_text_is_parsed_every_time() -> None:
    padding = " " * orname_text._LONGEST_REMEMBERED_TEXT
    text = f"C=GB;{padding}S=Smith"
    first, again = parse_orname(text), parse_orname(text)
    assert first == again == orname_text._parse(text)
    assert first is not again


def test_a_shared_name_cannot_be_changed() -> None:
    name = parse_orname(SMITH)
    with pytest.raises(dataclasses.FrozenInstanceError):
        name.surname = "Jones"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        name.canonical = "c=gb"
    assert parse_orname(SMITH).surname == "Smith"


# --- values kept in the name ------------------------------------------------------------


@pytest.mark.slow
@given(strategies.ornames())
def test_kept_canonical_route_key_and_ber_equal_fresh_ones(name: ORName) -> None:
    for _ in range(2):
        assert name.canonical == orname_model._canonical(name)
        assert name.route_key() == orname_model._route_key(name)
        assert encode_orname(name) == orname_ber._encode_orname(name)
    decoded = decode_orname(encode_orname(name))
    assert decoded.canonical == name.canonical
    assert decoded.route_key() == name.route_key()
    assert encode_orname(decoded) == encode_orname(name)


def test_kept_values_are_not_fields() -> None:
    read = parse_orname("C=GB;ADMD= ;PRMD=SiteA;O=HQ;S=Smith  Jr")
    kept = (read.canonical, read.route_key(), encode_orname(read))
    assert {"canonical", "_route_key", "_encoding"} <= set(vars(read))  # all three kept now
    unread = orname_text._parse("C=GB;ADMD= ;PRMD=SiteA;O=HQ;S=Smith  Jr")
    assert read == unread
    assert hash(read) == hash(unread)
    assert repr(read) == repr(unread)
    changed = dataclasses.replace(read, prmd="SiteB", surname="Jones")
    assert changed.canonical == "C=gb;ADMD= ;PRMD=siteb;O=hq;S=jones"
    assert changed.route_key() == ("gb", " ", "siteb", "hq")
    assert encode_orname(changed) == orname_ber._encode_orname(changed)
    assert encode_orname(changed) != encode_orname(read)
    assert (read.canonical, read.route_key(), encode_orname(read)) == kept


def test_a_name_the_codec_refuses_is_refused_every_time() -> None:
    name = ORName(surname="M\u00fcller")
    messages = set()
    for _ in range(2):
        with pytest.raises(EncodeError) as caught:
            encode_orname(name)
        messages.add(str(caught.value))
    assert len(messages) == 1
    assert "_encoding" not in vars(name)


def test_a_name_with_a_directory_name_is_encoded_every_time() -> None:
    name = ORName(country="GB", admd=" ", surname="Smith", directory_name=b"\x30\x00")
    assert encode_orname(name) == encode_orname(name) == orname_ber._encode_orname(name)
    assert "_encoding" not in vars(name)


# --- decode_orname's memory of encodings ---------------------------------------------------


@given(strategies.ornames())
def test_a_decoded_name_handed_out_again_equals_a_fresh_decode(name: ORName) -> None:
    data = encode_orname(name)
    first = decode_orname(data)
    assert decode_orname(data) is first
    assert orname_ber._decode_orname(data) == first
    assert first.canonical == orname_ber._decode_orname(data).canonical


def test_a_bad_encoding_fails_every_time_and_is_not_kept() -> None:
    bad = encode_orname(parse_orname(SMITH))[:-1]
    for _ in range(2):
        with pytest.raises(DecodeError):
            decode_orname(bad)
    assert bad not in orname_ber._DECODED


def test_the_memory_of_encodings_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(orname_ber, "_DECODED", {})
    names = [parse_orname(f"C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=User{i}") for i in range(5000)]
    for name in names:
        assert decode_orname(encode_orname(name)) == name
    assert 0 < len(orname_ber._DECODED) <= orname_ber._DECODED_MOST
