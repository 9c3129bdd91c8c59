"""The ESS security label (RFC 2634 5.4) read by our reader and, independently, by
pyasn1-modules' rfc2634, in every legal BER form; and its differences from X.411's."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyasn1.codec.ber import decoder as ber_decoder
from pyasn1.error import PyAsn1Error
from pyasn1.type import univ
from pyasn1_modules import rfc2634

from p1 import ber
from p1.errors import DecodeError
from p1.mts.security_label import SecurityCategory, SecurityLabel, encode_security_label
from p1.security.ess import decode_ess_security_label
from tests.p1 import ber_forms
from tests.p1.mts.test_security_label import _oids, _values
from tests.p1.strategies import PRINTABLE
from tests.profiles import examples

_UTF8_STRING = ber.universal(12)
_utf8 = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=40)


@st.composite
def ess_labels(draw: st.DrawFn) -> bytes:
    """An ESSSecurityLabel in DER, its privacy mark either a PrintableString or a
    UTF8String.  (Not encoded by pyasn1: rfc2634 there tags a category's value [1]
    implicitly, which an open type cannot be, so its encoder writes a primitive [1].)"""
    label = SecurityLabel(
        policy=draw(_oids()),
        classification=draw(st.none() | st.integers(0, 256)),
        categories=tuple(
            draw(st.lists(st.builds(SecurityCategory, _oids(), _values()), max_size=4))
        ),
    )
    mark = draw(st.none() | st.text(PRINTABLE, min_size=1, max_size=128) | _utf8)
    if mark is not None and all(c in PRINTABLE for c in mark) and draw(st.booleans()):
        return encode_security_label(replace(label, privacy_mark=mark))
    members = ber_forms.parse_der(encode_security_label(label))[1]
    if mark is not None:
        members += ber.tlv(_UTF8_STRING, mark.encode())
    return ber.constructed(ber.SET, [members])


def pyasn1_reading(data: bytes) -> SecurityLabel:
    """What pyasn1-modules' rfc2634 reads, in our model."""
    value, rest = ber_decoder.decode(data, asn1Spec=rfc2634.ESSSecurityLabel())
    assert rest == b""
    mark = value["privacy-mark"]
    categories = value["security-categories"]
    return SecurityLabel(
        policy=str(value["security-policy-identifier"]),
        classification=int(value["security-classification"])
        if value["security-classification"].isValue
        else None,
        privacy_mark=str(_chosen(mark)) if mark.isValue else None,
        categories=tuple(SecurityCategory(str(c["type"]), bytes(c["value"])) for c in categories)
        if categories.isValue
        else (),
    )


def _chosen(mark: object) -> object:
    """The privacy mark's string: pyasn1 gives the CHOICE, or (when categories follow
    it in the SET) the chosen string itself."""
    return mark.getComponent() if isinstance(mark, univ.Choice) else mark


def _opaque(path: ber_forms.Path, octet: int, contents: bytes) -> bool:
    return octet == 0xA1 and path[-1:] == (0x30,)  # a category's value: kept as received


# pyasn1 reads neither a character string in segments nor a length field of more than
# eight octets, both of which X.690 allows (8.23.6, 8.1.3.5): the privacy mark is not
# segmented here (our reader of segments is measured by the X.411 label's tests), and a
# long length field is compared against pyasn1's reading of the DER.
ESS_FORMS = ber_forms.Rules(string=lambda path, octet: False, opaque=_opaque, high_tags=True)
_LENGTH_LIMIT = "length field size"


@settings(max_examples=examples(2), suppress_health_check=[HealthCheck.too_slow])
@given(ess_labels(), st.randoms())
def test_our_reading_is_pyasn1s_in_any_legal_form(der: bytes, rnd: random.Random) -> None:
    data = ber_forms.reform(der, rnd, ESS_FORMS)
    ours = decode_ess_security_label(data)
    assert ours == pyasn1_reading(der)
    try:
        assert ours == pyasn1_reading(data)
    except PyAsn1Error as exc:
        assert _LENGTH_LIMIT in str(exc)


def test_a_utf8_privacy_mark() -> None:
    # SET { OID 1.2.3, UTF8String "ÉTÉ" }
    data = bytes.fromhex("310b 06022a03 0c05 c38954c389")
    assert decode_ess_security_label(data) == SecurityLabel(policy="1.2.3", privacy_mark="ÉTÉ")


def test_the_x411_form_with_a_policy_is_an_ess_label() -> None:
    label = SecurityLabel(policy="1.2.3", classification=4, privacy_mark="NATO")
    assert decode_ess_security_label(encode_security_label(label)) == label


@pytest.mark.parametrize(
    ("data_hex", "message"),
    [
        ("3103 020104", "ESSSecurityLabel: missing security-policy-identifier"),
        ("3108 06022a03 0c02c328", "ESSSecurityLabel.privacy-mark: not UTF-8"),
        ("310a 06022a03 0c0141 130142", "ESSSecurityLabel: .*privacy-mark"),
    ],
)
def test_malformed_ess_labels(data_hex: str, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        decode_ess_security_label(bytes.fromhex(data_hex))
