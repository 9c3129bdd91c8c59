"""What a peer's strings may hold: the alphabets of PrintableString and NumericString
checked as they are decoded (X.680 41.4), O/R name attributes that may not be empty
(X.411 18.5), and control characters written out wherever text is shown, the O/R name
text forms included (which read them back)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p1 import ber
from p1.ber.values import (
    NUMERIC_OCTETS,
    PRINTABLE_OCTETS,
    escape_controls,
    escape_text,
    numeric_text,
    printable_text,
    read_text,
)
from p1.errors import DecodeError
from p1.mts.orname import (
    ExtensionAttribute,
    ORName,
    decode_orname,
    encode_orname,
    format_orname,
    parse_orname,
)
from p1.orname.model import _escape, _written
from p1.orname.text import _join, _lex, _strip
from tests.p1 import strategies
from tests.profiles import examples

CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
"""What no text form, canonical form or escaped text may hold."""


def der(octet: int, contents: bytes) -> bytes:
    return bytes((octet, len(contents))) + contents


# --- the string readers ----------------------------------------------------------------


def test_the_alphabets_are_those_of_x680() -> None:
    assert sorted(PRINTABLE_OCTETS) == sorted(strategies.PRINTABLE.encode())
    assert NUMERIC_OCTETS == b"0123456789 "


@pytest.mark.parametrize(
    ("encoding", "text"),
    [
        (der(0x13, b"Duty Officer (J6) +1:2=3?/,-.'"), "Duty Officer (J6) +1:2=3?/,-.'"),
        (der(0x12, b"0123 456"), "0123 456"),
        (der(0x16, b"tab\there\n"), "tab\there\n"),  # IA5String: all of ISO 646
        (der(0x33, der(0x04, b"Sm") + der(0x04, b"ith")), "Smith"),  # segmented
        (der(0x13, b""), ""),
    ],
)
def test_read_text_takes_each_alphabet(encoding: bytes, text: str) -> None:
    assert read_text(ber.read_single(encoding, "t"), "t") == text


@pytest.mark.parametrize(
    ("encoding", "string_type", "why"),
    [
        (der(0x13, b"eth\nFAKE"), None, "0x0a at 3 is not a PrintableString character"),
        (der(0x13, b"\x00"), None, "0x00 at 0 is not a PrintableString character"),
        (der(0x13, b"a@b"), None, "'@' at 1 is not a PrintableString character"),
        (der(0x13, b"caf\xe9"), None, "0xe9 at 3 is not a PrintableString character"),
        (der(0x12, b"12a"), None, "'a' at 2 is not a NumericString character"),
        (der(0x33, der(0x04, b"ab") + der(0x04, b"\r")), None, "0x0d at 2 is not a"),
        # An implicit tag hides the type: the caller names it.
        (der(0x4A, b"x\x1b[2J"), ber.PRINTABLE_STRING, "0x1b at 1 is not a PrintableString"),
        (der(0x16, b"caf\xe9"), None, "non-ASCII octet at 3"),
    ],
)
def test_read_text_refuses_what_the_alphabet_has_not(
    encoding: bytes, string_type: int | None, why: str
) -> None:
    with pytest.raises(DecodeError) as raised:
        read_text(ber.read_single(encoding, "t"), "the-attribute", string_type)
    assert raised.value.why.startswith(why)
    assert raised.value.where == "the-attribute"
    assert CONTROL.search(str(raised.value)) is None


def test_an_implicitly_tagged_ia5_string_keeps_its_control_characters() -> None:
    assert read_text(ber.read_single(der(0x4A, b"a\nb"), "t"), "t") == "a\nb"


def test_the_tuple_form_readers_check_their_alphabets() -> None:
    view, tlv = ber.single(der(0x80, b"eth\nFAKE"), "t")
    with pytest.raises(DecodeError, match="0x0a at 3 is not a PrintableString character"):
        printable_text(view, tlv, "common-name")
    with pytest.raises(DecodeError, match="'e' at 0 is not a NumericString character"):
        numeric_text(view, tlv, "x121")
    view, tlv = ber.single(der(0xA0, der(0x04, b"12") + der(0x04, b" 3")), "t")
    assert numeric_text(view, tlv, "x121") == "12 3"
    assert printable_text(view, tlv, "o") == "12 3"
    view, tlv = ber.single(der(0xA0, der(0x04, b"Ops") + der(0x04, b"\x00")), "t")
    with pytest.raises(DecodeError, match="0x00 at 3 is not a PrintableString character"):
        printable_text(view, tlv, "o")
    with pytest.raises(DecodeError, match="'O' at 0 is not a NumericString character"):
        numeric_text(view, tlv, "x121")


# --- escaping --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("eth\nFAKE", "eth\\x0aFAKE"),
        ("a\r\n\tb\x00\x7f", "a\\x0d\\x0a\\x09b\\x00\\x7f"),
        ("next\x85line\u2028and\u2029", "next\\x85line\\u2028and\\u2029"),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("gnp\u202e.exe\u2066\u2069\u200e", "gnp\\u202e.exe\\u2066\\u2069\\u200e"),
        ("\u200f\u061c", "\\u200f\\u061c"),
        ("Müller, 東京 \\x0a", "Müller, 東京 \\x0a"),  # printable text is left alone
        ("", ""),
    ],
)
def test_escape_controls(text: str, shown: str) -> None:
    assert escape_controls(text) == shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("one\r\ntwo\n\tthree", "one\r\ntwo\n\tthree"),
        ("over\rwrite\r", "over\\x0dwrite\\x0d"),
        ("\x1b]0;title\x07\x9b2J\u202e", "\\x1b]0;title\\x07\\x9b2J\\u202e"),
    ],
)
def test_escape_text_keeps_line_ends_and_tabs(text: str, shown: str) -> None:
    assert escape_text(text) == shown


@given(st.text())
def test_escaped_lines_hold_no_other_control_character(text: str) -> None:
    escaped = escape_text(text).replace("\r\n", "\n")
    assert CONTROL.search(escaped.replace("\n", "").replace("\t", "")) is None


@given(st.text())
def test_escaped_text_holds_no_control_character(text: str) -> None:
    escaped = escape_controls(text)
    assert CONTROL.search(escaped) is None
    assert len(escaped.splitlines()) <= 1


# --- O/R names from BER ----------------------------------------------------------------

GB = der(0x61, der(0x13, b"GB"))
SITEB = GB + der(0x62, der(0x13, b" ")) + der(0xA2, der(0x13, b"SITEB"))


def orname_ber(standard: bytes, extensions: bytes = b"") -> bytes:
    return der(0x60, der(0x30, standard) + (der(0x31, extensions) if extensions else b""))


def common_name(value: bytes, kind: int = 1) -> bytes:
    return der(0x30, der(0x80, bytes((kind,))) + der(0xA1, value))


@pytest.mark.parametrize(
    ("data", "where", "why"),
    [
        (
            orname_ber(SITEB, common_name(der(0x13, b"eth\nFAKE"))),
            "common-name",
            "0x0a at 3 is not a PrintableString character",
        ),
        (orname_ber(SITEB, common_name(der(0x13, b""))), "common-name", "an empty value"),
        (orname_ber(SITEB + der(0xA5, der(0x80, b"a\x00b"))), "surname", "0x00 at 1"),
        (orname_ber(SITEB + der(0xA5, der(0x80, b""))), "surname", "an empty value"),
        (
            orname_ber(SITEB + der(0xA5, der(0x80, b"S") + der(0x81, b"J\r"))),
            "given_name",
            "0x0d at 1",
        ),
        (orname_ber(SITEB + der(0x83, "HQ\u2028".encode())), "organization", "0xe2 at 2"),
        (orname_ber(SITEB + der(0x83, b"")), "organization", "an empty value"),
        (
            orname_ber(SITEB + der(0xA6, der(0x13, b"J6") + der(0x13, b"ops\n"))),
            "organizational-unit-names",
            "0x0a at 3",
        ),
        (
            orname_ber(SITEB + der(0xA6, der(0x13, b""))),
            "organizational-unit-names",
            "an empty value",
        ),
        (orname_ber(GB + der(0x80, b"12\n")), "network_address", "0x0a at 2 is not a Numeric"),
        (orname_ber(GB + der(0x84, b"x")), "numeric_user_identifier", "'x' at 0 is not a"),
        (orname_ber(GB + der(0x81, b"T\x07")), "terminal_identifier", "0x07 at 1"),
        (orname_ber(der(0x61, der(0x13, b"G\n"))), "country", "0x0a at 1"),
        (orname_ber(der(0x61, der(0x12, b""))), "country", "an empty value"),
        (orname_ber(GB + der(0xA2, der(0x13, b""))), "prmd", "an empty value"),
        (orname_ber(GB + der(0x62, der(0x12, b"1a"))), "admd", "'a' at 1 is not a Numeric"),
        (
            der(0x60, der(0x30, GB) + der(0x30, der(0x30, der(0x13, b"T") + der(0x13, b"v\n")))),
            "built-in-domain-defined-attributes",
            "0x0a at 1",
        ),
        (
            der(0x60, der(0x30, GB) + der(0x30, der(0x30, der(0x13, b"") + der(0x13, b"v")))),
            "built-in-domain-defined-attributes",
            "an empty value",
        ),
    ],
)
def test_an_orname_with_a_character_outside_its_alphabet_or_an_empty_value_is_refused(
    data: bytes, where: str, why: str
) -> None:
    with pytest.raises(DecodeError) as raised:
        decode_orname(data)
    assert (raised.value.where, raised.value.why[: len(why)]) == (where, why)
    assert CONTROL.search(str(raised.value)) is None


def test_an_empty_admd_is_legal() -> None:
    # AdministrationDomainName is SIZE (0..ub-domain-name-length).
    name = decode_orname(orname_ber(GB + der(0x62, der(0x13, b""))))
    assert (name.country, name.admd) == ("GB", "")


def test_a_teletex_common_name_with_a_newline_is_kept_as_received_and_shown_in_hex() -> None:
    raw = der(0x14, b"eth\nFAKE")  # teletex-common-name (2): any T.61 octet is legal
    name = decode_orname(orname_ber(SITEB, common_name(raw, kind=2)))
    assert name.extension_attributes == (ExtensionAttribute(type=2, value=raw),)
    assert name.canonical == "C=gb;ADMD= ;PRMD=siteb;EXT:2=#14086574680a46414b45"
    assert parse_orname(format_orname(name)) == name


# --- O/R name text: control characters written out, and read back ---------------------


def test_a_name_made_with_control_characters_is_written_without_them() -> None:
    # Only a name built in code (or by asn1tools, which does not check alphabets) can
    # hold these: the BER reader refuses them.
    name = ORName(country="GB", surname="\x00Smith\t", common_name="eth\nFAKE\u2028")
    assert name.canonical == "C=gb;S=\\x00smith\\x09;CN=eth\\x0afake\\u2028"
    assert format_orname(name) == "C=GB;S=\\x00Smith\\x09;CN=eth\\x0aFAKE\\u2028"
    assert format_orname(name, "slash") == "/C=GB/S=\\x00Smith\\x09/CN=eth\\x0aFAKE\\u2028/"
    # The parser reads the escape back: then the value is refused as not PrintableString.
    with pytest.raises(DecodeError, match=re.escape("outside PrintableString: '\\n'")):
        parse_orname("C=GB;CN=eth\\x0aFAKE")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("CN=\\x41\\x42", "AB"),  # any character may be written so
        ("CN=\\u0041b", "Ab"),
        ("CN=\\x4", "x4"),  # not two hex digits: the backslash keeps the x literal
        ("CN=\\xyz", "xyz"),
        ("CN=a\\\\x41", "a\\x41"),  # an escaped backslash, then plain text
    ],
)
def test_hex_escapes_are_read(text: str, value: str) -> None:
    (tokens,) = _lex(text[3:], ";")
    assert _join(tokens) == value


@settings(max_examples=examples(5))
@given(st.text(), st.sampled_from([";", "/"]))
def test_any_value_is_written_without_control_characters_and_read_back(
    value: str, separator: str
) -> None:
    written = _written(_escape(value, separator))
    assert CONTROL.search(written) is None
    (tokens,) = _lex(written, separator)
    assert _join(_strip(tokens)) == value


@pytest.mark.slow
@settings(max_examples=examples(3), suppress_health_check=[HealthCheck.too_slow])
@given(strategies.ornames(), st.sampled_from(["semicolon", "slash"]))
def test_every_legal_name_reads_back_from_its_text_and_its_ber(name: ORName, style: str) -> None:
    text = format_orname(name, style)  # type: ignore[arg-type]
    assert CONTROL.search(text) is None and CONTROL.search(name.canonical) is None
    assert parse_orname(text) == name
    assert parse_orname(name.canonical).canonical == name.canonical
    assert decode_orname(encode_orname(name)) == name


@st.composite
def names_with_any_text(draw: st.DrawFn) -> ORName:
    """Names built in code with any characters in their values."""
    text = st.text(min_size=1, max_size=20)
    return ORName(
        country=draw(text),
        prmd=draw(st.none() | text),
        organization=draw(st.none() | text),
        organizational_units=tuple(draw(st.lists(text, max_size=4))),
        surname=draw(st.none() | text),
        common_name=draw(st.none() | text),
        domain_defined=tuple(draw(st.lists(st.tuples(text, text), max_size=2))),
    )


@settings(max_examples=examples(5), suppress_health_check=[HealthCheck.too_slow])
@given(names_with_any_text(), st.sampled_from(["semicolon", "slash"]))
def test_no_text_form_of_any_name_holds_a_control_character(name: ORName, style: str) -> None:
    assert CONTROL.search(format_orname(name, style)) is None  # type: ignore[arg-type]
    assert CONTROL.search(name.canonical) is None
