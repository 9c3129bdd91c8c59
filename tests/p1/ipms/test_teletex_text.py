"""Teletex (X.420 7.4.4) and videotex (7.4.5) body parts are kept as received and shown
as text: a teletex part's pages (a SEQUENCE OF TeletexString) one per line, a videotex
part's VideotexString; basic or extended form, in any legal BER form, checked against
the ASN.1 of X.420."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client import x400
from p1 import asn1, ber
from p1.ipms.body import decode_body
from p1.ipms.ipm import ContentKind
from p1.ipms.models import (
    BodyPart,
    ExtendedBodyPart,
    RawBodyPart,
    body_part_text,
    body_part_type,
)
from tests.p1 import ber_forms
from tests.profiles import examples

ID_ET_TELETEX = "2.6.1.4.4"
ID_ET_VIDEOTEX = "2.6.1.4.5"

# Page text: T.61 graphic characters this MTA shows as ISO 8859-1.
pages = st.lists(
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40),
    min_size=1,
    max_size=4,
)


IPMS = "IPMSInformationObjects"


def basic_teletex(texts: list[str]) -> bytes:
    """``teletex [5] TeletexBodyPart`` as asn1tools writes it from X.420's module."""
    return asn1.encode(IPMS, "BodyPart", ("basic", ("teletex", {"parameters": {}, "data": texts})))


def basic_videotex(text: str) -> bytes:
    value = {"parameters": {}, "data": text.encode("latin-1")}
    return asn1.encode(IPMS, "BodyPart", ("basic", ("videotex", value)))


def decoded(*parts: bytes) -> tuple[BodyPart, ...]:
    view, tlv = ber.single(ber.tlv(ber.SEQUENCE, b"".join(parts), constructed=True), "Body")
    return decode_body(view, tlv, ContentKind.P772)


def extended(type_id: str, data: bytes) -> bytes:
    """An extended body part ``[15]`` with no parameters and ``data`` as its value (X.420
    7.3.12: INSTANCE OF, ``[UNIVERSAL 8]`` of the identifier and ``[0]`` the value)."""
    instance = ber.oid_tlv(type_id) + ber.tlv(ber.context(0), data, constructed=True)
    inner = ber.tlv(ber.universal(8), instance, constructed=True)
    return ber.tlv(ber.context(15), inner, constructed=True)


def _strings(path: ber_forms.Path, octet: int) -> bool:
    return octet in (0x14, 0x15)  # TeletexString, VideotexString


RULES = ber_forms.Rules(string=_strings, high_tags=True)


def test_the_reader_expects_what_asn1_writes() -> None:
    assert basic_teletex(["A"]).hex() == "a50731003003140141"
    assert basic_videotex("B").hex() == "a60531001501" + "42"


def test_a_teletex_part_shows_its_pages_one_per_line() -> None:
    (part,) = decoded(basic_teletex(["ZCZC 1234", "page two", ""]))
    assert isinstance(part, RawBodyPart)
    assert body_part_type(part) == "teletex"
    assert body_part_text(part) == "ZCZC 1234\npage two\n"
    assert x400.format_body_part(part) == "ZCZC 1234\npage two\n"


def test_a_videotex_part_shows_its_string() -> None:
    (part,) = decoded(basic_videotex("frame 1"))
    assert (body_part_type(part), body_part_text(part)) == ("videotex", "frame 1")


def test_extended_forms_show_the_same_text() -> None:
    teletex_data = asn1.encode(IPMS, "TeletexData", ["one", "two"])
    videotex_data = asn1.encode(IPMS, "VideotexData", b"frame")
    first, second = decoded(
        extended(ID_ET_TELETEX, teletex_data), extended(ID_ET_VIDEOTEX, videotex_data)
    )
    assert isinstance(first, ExtendedBodyPart) and isinstance(second, ExtendedBodyPart)
    assert (body_part_type(first), body_part_text(first)) == ("teletex", "one\ntwo")
    assert (body_part_type(second), body_part_text(second)) == ("videotex", "frame")


@pytest.mark.slow
@settings(max_examples=examples(40))
@given(pages, st.randoms(use_true_random=False))
def test_any_legal_form_shows_the_same_text(texts: list[str], rnd: random.Random) -> None:
    samples = ((basic_teletex(texts), "\n".join(texts)), (basic_videotex(texts[0]), texts[0]))
    for der, want in samples:
        (part,) = decoded(ber_forms.reform(der, rnd, RULES))
        assert body_part_text(part) == want


@pytest.mark.parametrize(
    "encoding",
    [
        "a5023100",  # no data
        "a50731003003160141",  # a page of IA5String, not TeletexString
        "a6053100040142",  # videotex data as OCTET STRING
        "a503310030",  # truncated
    ],
)
def test_a_part_that_is_not_its_types_syntax_shows_no_text(encoding: str) -> None:
    part = RawBodyPart(encoding=bytes.fromhex(encoding))
    assert body_part_text(part) is None
    assert x400.format_body_part(part).startswith("[")  # type and size, as for others
