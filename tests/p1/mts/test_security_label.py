"""The X.411 SecurityLabel (clause 8.5.9) and the message-security-label envelope
extension (standard-extension 20): encodings, every legal BER form, errors."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p1 import ber
from p1.errors import DecodeError, EncodeError
from p1.mts.extensions import ExtensionField, StandardExtension
from p1.mts.fields import Criticality
from p1.mts.security_label import (
    SecurityCategory,
    SecurityClassification,
    SecurityLabel,
    classification_name,
    decode_security_label,
    encode_security_label,
    is_message_security_label,
    message_security_label,
    security_label_extension,
)
from tests.p1 import ber_forms
from tests.p1.strategies import PRINTABLE, tuples
from tests.profiles import examples

NATO_SECRET = SecurityLabel(
    policy="1.3.26.0.4406.0.5.1",
    classification=SecurityClassification.SECRET,
    privacy_mark="NATO",
    categories=(SecurityCategory("2.16.840.1.101.2.1.8.3.1", bytes.fromhex("020105")),),
)
NATO_SECRET_DER = bytes.fromhex(
    "3128"
    "020104"  # security-classification secret(4)
    "06082b1a00a236000501"  # security-policy-identifier 1.3.26.0.4406.0.5.1
    "3113"  # security-categories
    "3011800a60864801650201080301a103020105"  # { [0] 2.16.840.1.101.2.1.8.3.1, [1] 5 }
    "13044e41544f"  # privacy-mark "NATO"
)

# --- encodings --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "der"),
    [
        (SecurityLabel(), "3100"),
        (SecurityLabel(classification=0), "3103020100"),
        (SecurityLabel(classification=256), "31040202 0100"),
        (SecurityLabel(privacy_mark="IN CONFIDENCE"), "310f130d494e20434f4e464944454e4345"),
        (SecurityLabel(policy="2.5"), "3103060155"),
        (NATO_SECRET, NATO_SECRET_DER.hex()),
    ],
)
def test_encodings(label: SecurityLabel, der: str) -> None:
    assert encode_security_label(label) == bytes.fromhex(der)
    assert decode_security_label(bytes.fromhex(der)) == label


@pytest.mark.parametrize(
    ("ber_hex", "label"),
    [
        # members in any order (a SET), the privacy mark before the classification
        ("3109 13044e41544f 020104", SecurityLabel(classification=4, privacy_mark="NATO")),
        # indefinite lengths, a long-form length, a segmented PrivacyMark
        (
            "3180 02810103 3380 0402 4e41 0402 544f 0000 0000",
            SecurityLabel(classification=3, privacy_mark="NATO"),
        ),
        # a category whose value is kept exactly as received (indefinite, long form)
        (
            "310f 310d 300b 800155 a180 0281 0107 0000",
            SecurityLabel(categories=(SecurityCategory("2.5", bytes.fromhex("02810107")),)),
        ),
        # a tag number below 31 written in the high-number form
        ("3104 1f02 0102", SecurityLabel(classification=2)),
    ],
)
def test_decode_only_forms(ber_hex: str, label: SecurityLabel) -> None:
    assert decode_security_label(bytes.fromhex(ber_hex.replace(" ", ""))) == label


# --- every legal form -------------------------------------------------------------------


def _oids() -> st.SearchStrategy[str]:
    first = st.integers(0, 2)
    second = st.integers(0, 39)
    rest = st.lists(st.integers(0, 2**40), max_size=6)
    return st.builds(lambda a, b, r: ".".join(map(str, (a, b, *r))), first, second, rest)


def _values() -> st.SearchStrategy[bytes]:
    """Category values: DER of an INTEGER, an OCTET STRING or a SEQUENCE of INTEGERs."""
    integers = st.integers(-(2**31), 2**31).map(lambda n: ber.tlv(ber.INTEGER, ber.int_contents(n)))
    strings = st.binary(max_size=140).map(lambda b: ber.tlv(ber.OCTET_STRING, b))
    sequences = st.lists(integers, max_size=3).map(lambda xs: ber.constructed(ber.SEQUENCE, xs))
    return st.one_of(integers, strings, sequences)


labels = st.builds(
    SecurityLabel,
    policy=st.none() | _oids(),
    classification=st.none() | st.integers(0, 256),
    privacy_mark=st.none() | st.text(PRINTABLE, min_size=1, max_size=128),
    categories=tuples(st.builds(SecurityCategory, _oids(), _values()), max_size=4),
)


@settings(max_examples=examples(2))
@given(labels)
def test_round_trip(label: SecurityLabel) -> None:
    der = encode_security_label(label)
    assert decode_security_label(der) == label
    assert encode_security_label(decode_security_label(der)) == der


def _string(path: ber_forms.Path, octet: int) -> bool:
    return octet == 0x13 and path == (0x31,)  # the privacy mark


def _opaque(path: ber_forms.Path, octet: int, contents: bytes) -> bool:
    return octet == 0xA1 and path[-1:] == (0x30,)  # a category's value: kept as received


LABEL_FORMS = ber_forms.Rules(string=_string, opaque=_opaque, high_tags=True)


@settings(max_examples=examples(2), suppress_health_check=[HealthCheck.too_slow])
@given(labels, st.randoms())
def test_any_legal_ber_form_decodes_to_the_same_label(
    label: SecurityLabel, rnd: random.Random
) -> None:
    data = ber_forms.reform(encode_security_label(label), rnd, LABEL_FORMS)
    assert decode_security_label(data) == label


# --- errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ber_hex", "where", "why"),
    [
        ("3003020101", "SecurityLabel", "expected [UNIVERSAL 17], found [UNIVERSAL 16]"),
        ("31050201000201", "SecurityLabel ([UNIVERSAL 2] at offset 5)", "truncated"),
        ("3106020100020101", "SecurityLabel", "security-classification appears twice"),
        ("3103040100", "SecurityLabel", "unexpected [UNIVERSAL 4]"),
        ("31020200", "SecurityLabel.security-classification", "at least one content"),
        ("31040202ffff", "SecurityLabel.security-classification", "-1 is outside 0..256"),
        ("310402020101", "SecurityLabel.security-classification", "257 is outside 0..256"),
        ("3103130121", "SecurityLabel.privacy-mark", "'!' at 0 is not a PrintableString"),
        ("31021300", "SecurityLabel.privacy-mark", "0 characters, not 1..128"),
        ("3102 0600", "SecurityLabel.security-policy-identifier", "truncated OBJECT IDENTIFIER"),
        ("31023100", "SecurityLabel.security-categories", "0 categories, not 1..64"),
        ("3104 3102 0500", "SecurityLabel.security-categories[0]", "expected [UNIVERSAL 16]"),
        ("3104 3102 3000", "SecurityLabel.security-categories[0]", "0 members"),
        (
            "3109 3107 3005 060155 a100",
            "SecurityLabel.security-categories[0].type",
            "expected [0], found [UNIVERSAL 6]",
        ),
        (
            "3109 3107 3005 800155 8100",
            "SecurityLabel.security-categories[0].value",
            "must be constructed",
        ),
        (
            "310d 310b 3009 800155 a104 05000500",
            "SecurityLabel.security-categories[0].value",
            "holds 2 values, not one",
        ),
        ("3100 00", "SecurityLabel", "1 trailing byte"),
    ],
)
def test_malformed_labels_name_the_field(ber_hex: str, where: str, why: str) -> None:
    with pytest.raises(DecodeError) as caught:
        decode_security_label(bytes.fromhex(ber_hex.replace(" ", "")))
    assert caught.value.where == where
    assert why in caught.value.why


def test_a_truncated_value_inside_a_category_names_the_label() -> None:
    with pytest.raises(DecodeError) as caught:
        decode_security_label(bytes.fromhex("3108 3106 3004 800155 a1".replace(" ", "")) + b"\x05")
    assert caught.value.where.startswith("SecurityLabel")


@pytest.mark.parametrize(
    ("label", "where"),
    [
        (SecurityLabel(classification=257), "SecurityLabel.security-classification"),
        (SecurityLabel(classification=-1), "SecurityLabel.security-classification"),
        (SecurityLabel(privacy_mark=""), "SecurityLabel.privacy-mark"),
        (SecurityLabel(privacy_mark="x" * 129), "SecurityLabel.privacy-mark"),
        (SecurityLabel(privacy_mark="NATO!"), "SecurityLabel.privacy-mark"),
        (SecurityLabel(privacy_mark="Gr\xfc\xdfe"), "SecurityLabel.privacy-mark"),
        (SecurityLabel(policy="1.3.x"), "SecurityLabel.security-policy-identifier"),
        (
            SecurityLabel(categories=(SecurityCategory("2.5", b"\x02\x01"),)),
            "SecurityLabel.security-categories[0].value",
        ),
        (
            SecurityLabel(categories=(SecurityCategory("5.5", b"\x05\x00"),)),
            "SecurityLabel.security-categories[0].type",
        ),
        (
            SecurityLabel(categories=(SecurityCategory("2.5", b"\x05\x00"),) * 65),
            "SecurityLabel.security-categories",
        ),
    ],
)
def test_unencodable_labels_name_the_field(label: SecurityLabel, where: str) -> None:
    with pytest.raises(EncodeError) as caught:
        encode_security_label(label)
    assert caught.value.where == where


# --- names and text ---------------------------------------------------------------------


def test_classification_names() -> None:
    assert [classification_name(n) for n in range(7)] == [
        "unmarked",
        "unclassified",
        "restricted",
        "confidential",
        "secret",
        "top-secret",
        "6",
    ]
    assert SecurityLabel(classification=5).classification_name == "top-secret"
    assert SecurityLabel().classification_name is None


@pytest.mark.parametrize(
    ("label", "text"),
    [
        (
            NATO_SECRET,
            "SECRET; policy 1.3.26.0.4406.0.5.1; privacy mark 'NATO'; "
            "categories: 2.16.840.1.101.2.1.8.3.1 = 020105",
        ),
        (SecurityLabel(classification=5), "TOP SECRET"),
        (SecurityLabel(classification=42, privacy_mark="X"), "classification 42; privacy mark 'X'"),
        (SecurityLabel(), "empty label"),
    ],
)
def test_describe(label: SecurityLabel, text: str) -> None:
    assert label.describe() == text
    assert label.text == text


# --- the envelope extension -------------------------------------------------------------


def test_the_extension_round_trips() -> None:
    extension = security_label_extension(NATO_SECRET)
    assert extension.type == StandardExtension.MESSAGE_SECURITY_LABEL
    assert extension.criticality == Criticality(for_delivery=True)  # recommended
    assert extension.value == NATO_SECRET_DER
    assert is_message_security_label(extension)
    others = (ExtensionField(type="1.3.26.0.4406.0.8.0", value=b"\x0a\x01\x00"),)
    assert message_security_label(others) is None
    assert message_security_label((*others, extension)) == NATO_SECRET


def test_a_private_extension_numbered_20_is_not_the_label() -> None:
    assert not is_message_security_label(ExtensionField(type="20", value=b"\x31\x00"))
    assert not is_message_security_label(ExtensionField(type=21, value=b"\x31\x00"))


@pytest.mark.parametrize(
    ("value", "where"),
    [
        (None, "message-security-label"),
        (bytes.fromhex("3103020109"), None),
        (bytes.fromhex("3103130100"), "message-security-label.privacy-mark"),
    ],
)
def test_the_extensions_errors_name_it(value: bytes | None, where: str | None) -> None:
    extension = ExtensionField(type=StandardExtension.MESSAGE_SECURITY_LABEL, value=value)
    if where is None:
        assert message_security_label([extension]) == SecurityLabel(classification=9)
        return
    with pytest.raises(DecodeError) as caught:
        message_security_label([extension])
    assert caught.value.where == where
