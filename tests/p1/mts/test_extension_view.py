"""Extensions shown by name and decoded value (X.411 clause 9, STANAG 4406 Annex A):
one sample per standard extension, every legal BER form of each, values that do not
decode and types not known."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p1 import asn1
from p1.mts.extension_view import (
    UNKNOWN,
    ExtensionView,
    describe_extension,
    extension_label,
    normalised,
    view_extension,
)
from p1.mts.extensions import (
    ExtensionField,
    StandardExtension,
    internal_trace_extension,
    latest_delivery_time_extension,
    priority_level_qualifier_extension,
)
from p1.mts.fields import Criticality, GlobalDomainIdentifier
from p1.mts.orname import encode_oraddress, encode_orname, parse_orname
from p1.mts.precedence import PRIORITY_LEVEL_QUALIFIER_OID, LevelQualifier
from p1.mts.security_label import SecurityLabel, security_label_extension
from p1.mts.trace import InternalTraceEntry, TraceEntry, encode_trace
from p1.orname.ber import orname_to_asn1
from p1.render import Plain
from tests.p1 import ber_forms
from tests.profiles import examples

MTS = "MTSAbstractService"
NAME_TEXT = "C=GB;ADMD= ;PRMD=NATO;O=ACT;OU=J6;S=Smith;G=John"
NAME = parse_orname(NAME_TEXT)
NAME_ASN1 = orname_to_asn1(NAME)
DL_TEXT = "C=GB;ADMD= ;PRMD=NATO;O=JFC;S=Staff"
DL_ASN1 = orname_to_asn1(parse_orname(DL_TEXT))
TIME = "2611251000Z"
TIME_ISO = "2026-11-25T10:00:00+00:00"
GDI = {
    "country-name": ("iso-3166-alpha2-code", "GB"),
    "administration-domain-name": ("printable", " "),
}
ALGORITHM = {"algorithmId": "1.2.840.113549.3.7", "parameters": b"\x05\x00"}
ALGORITHM_VIEW: Plain = {"algorithmId": "1.2.840.113549.3.7", "parameters": "0500"}
SIGNATURE = {"algorithmIdentifier": ALGORITHM, "encrypted": (b"\xca\xfe", 16)}
SIGNATURE_VIEW: Plain = {"algorithmIdentifier": ALGORITHM_VIEW, "encrypted": "cafe"}
DIRECTORY_NAME = ("rdnSequence", [[{"type": "2.5.4.3", "value": b"\x13\x03abc"}]])
DIRECTORY_NAME_VIEW: Plain = {
    # (asn1tools fills in the DEFAULT of primaryDistinguished)
    "rdnSequence": [[{"type": "2.5.4.3", "value": "1303616263", "primaryDistinguished": True}]]
}
CERTIFICATE = {
    "signedCertificate": {
        "serialNumber": 7,
        "signature": ALGORITHM,
        "issuer": DIRECTORY_NAME,
        "validity": {
            "notBefore": ("utcTime", datetime(2026, 1, 1, tzinfo=UTC)),
            "notAfter": ("utcTime", datetime(2027, 1, 1, tzinfo=UTC)),
        },
        "subject": DIRECTORY_NAME,
        "subjectPublicKeyInfo": {"algorithm": ALGORITHM, "subjectPublicKey": (b"\x01", 8)},
    },
    "algorithmIdentifier": ALGORITHM,
    "encrypted": (b"\xca\xfe", 16),
}
CERTIFICATES = {"userCertificate": CERTIFICATE}
TOKEN = {"token-type-identifier": "2.6.3.6.0", "token": b"\x04\x02\xab\xcd"}
TOKEN_VIEW: Plain = {"token-type-identifier": "2.6.3.6.0", "token": "0402abcd"}
SELECTORS = {"encryption-recipient": {"serialNumber": 5, "subject": DIRECTORY_NAME}}
SELECTORS_VIEW: Plain = {
    "encryption-recipient": {"serialNumber": 5, "subject": DIRECTORY_NAME_VIEW}
}
ARRIVAL = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)
TRACE = TraceEntry(
    global_domain_identifier=GlobalDomainIdentifier(country="GB", admd=" ", prmd="NATO"),
    arrival_time=ARRIVAL,
)
INTERNAL = InternalTraceEntry(
    global_domain_identifier=GlobalDomainIdentifier(country="GB", admd=" ", prmd="NATO"),
    mta_name="mta-a",
    arrival_time=ARRIVAL,
)
LABEL = SecurityLabel(classification=4, privacy_mark="NATO", policy="1.3.26.0.4406.0.5.1")


def _mts(type_name: str, value: Any) -> bytes:
    return asn1.encode(MTS, type_name, value)


def _certificate_view(view: Plain) -> None:
    """The parts of the sample certificate that show each rendering rule."""
    assert isinstance(view, dict)
    signed = view["userCertificate"]
    assert isinstance(signed, dict)
    body = signed["signedCertificate"]
    assert isinstance(body, dict)
    assert body["serialNumber"] == 7
    assert body["issuer"] == DIRECTORY_NAME_VIEW
    assert body["validity"] == {
        "notBefore": {"utcTime": "2026-01-01T00:00:00+00:00"},
        "notAfter": {"utcTime": "2027-01-01T00:00:00+00:00"},
    }
    assert signed["encrypted"] == "cafe"


@dataclass(frozen=True)
class Sample:
    """A value of one extension type (DER) and the view it must give."""

    ext_type: int | str
    der: bytes
    view: Plain | None = None
    context_strings: frozenset[int] = frozenset()
    """Context-specific primitive identifier octets that are strings in this value
    (implicitly tagged strings, which a sender may split)."""


# Inside an O/R name without extension attributes every context-specific primitive is
# a string (X.411 clause 18.5: personal-name members, organization-name, ...).
ORNAME_STRINGS = frozenset(range(0x80, 0x86))

SAMPLES: tuple[Sample, ...] = (
    Sample(
        1,
        _mts("RecipientReassignmentProhibited", "recipient-reassignment-prohibited"),
        "recipient-reassignment-prohibited",
    ),
    Sample(2, encode_orname(NAME), NAME_TEXT, ORNAME_STRINGS),
    Sample(3, _mts("DLExpansionProhibited", "dl-expansion-allowed"), "dl-expansion-allowed"),
    Sample(
        4,
        _mts("ConversionWithLossProhibited", "conversion-with-loss-prohibited"),
        "conversion-with-loss-prohibited",
    ),
    Sample(5, _mts("LatestDeliveryTime", TIME), TIME_ISO),
    Sample(
        6,
        _mts("RequestedDeliveryMethod", [1, 5, 12]),
        ["mhs-delivery", "g3-facsimile-delivery", 12],
    ),
    Sample(
        7,
        _mts("PhysicalForwardingProhibited", "physical-forwarding-prohibited"),
        "physical-forwarding-prohibited",
    ),
    Sample(
        8,
        _mts("PhysicalForwardingAddressRequest", "physical-forwarding-address-requested"),
        "physical-forwarding-address-requested",
    ),
    Sample(
        9,
        _mts("PhysicalDeliveryModes", (b"\x41", 8)),
        ["special-delivery", "bureau-fax-delivery"],
    ),
    Sample(10, _mts("RegisteredMailType", 2), "registered-mail-to-addressee-in-person"),
    Sample(11, _mts("RecipientNumberForAdvice", "+44 1234"), "+44 1234"),
    Sample(12, _mts("PhysicalRenditionAttributes", "2.6.5.3.1"), "2.6.5.3.1"),
    Sample(13, encode_oraddress(NAME), NAME_TEXT, ORNAME_STRINGS),
    Sample(14, _mts("PhysicalDeliveryReportRequest", 3), "return-of-notification-by-MHS-and-PDS"),
    Sample(15, _mts("OriginatorCertificate", CERTIFICATES)),
    Sample(16, _mts("MessageToken", TOKEN), TOKEN_VIEW),
    Sample(17, _mts("ContentConfidentialityAlgorithmIdentifier", ALGORITHM), ALGORITHM_VIEW),
    Sample(18, _mts("ContentIntegrityCheck", SIGNATURE), SIGNATURE_VIEW),
    Sample(19, _mts("MessageOriginAuthenticationCheck", SIGNATURE), SIGNATURE_VIEW),
    Sample(
        20,
        security_label_extension(LABEL).value or b"",
        {
            "@type": "SecurityLabel",
            "classification": "secret",
            "classification-value": 4,
            "policy": "1.3.26.0.4406.0.5.1",
            "privacy-mark": "NATO",
            "text": "SECRET; policy 1.3.26.0.4406.0.5.1; privacy mark 'NATO'",
        },
    ),
    Sample(
        21,
        _mts("ProofOfSubmissionRequest", "proof-of-submission-requested"),
        "proof-of-submission-requested",
    ),
    Sample(
        22,
        _mts("ProofOfDeliveryRequest", "proof-of-delivery-not-requested"),
        "proof-of-delivery-not-requested",
    ),
    Sample(23, _mts("ContentCorrelator", ("ia5text", "SITREP 042")), {"ia5text": "SITREP 042"}),
    Sample(24, _mts("ProbeOriginAuthenticationCheck", SIGNATURE), SIGNATURE_VIEW),
    Sample(
        25,
        _mts(
            "RedirectionHistory",
            [
                {
                    "intended-recipient-name": {
                        "intended-recipient": NAME_ASN1,
                        "redirection-time": TIME,
                    },
                    "redirection-reason": "alias",
                }
            ],
        ),
        [
            {
                "intended-recipient-name": {
                    "intended-recipient": NAME_TEXT,
                    "redirection-time": TIME_ISO,
                },
                "redirection-reason": "alias",
            }
        ],
        ORNAME_STRINGS,
    ),
    Sample(
        26,
        _mts("DLExpansionHistory", [{"dl": DL_ASN1, "dl-expansion-time": TIME}]),
        [{"dl": DL_TEXT, "dl-expansion-time": TIME_ISO}],
        ORNAME_STRINGS,
    ),
    Sample(27, encode_orname(NAME), NAME_TEXT, ORNAME_STRINGS),
    Sample(28, _mts("RecipientCertificate", CERTIFICATES)),
    Sample(29, _mts("ProofOfDelivery", SIGNATURE), SIGNATURE_VIEW),
    Sample(
        30,
        _mts(
            "OriginatorAndDLExpansionHistory",
            [
                {"originator-or-dl-name": NAME_ASN1, "origination-or-expansion-time": TIME},
                {"originator-or-dl-name": DL_ASN1, "origination-or-expansion-time": TIME},
            ],
        ),
        [
            {"originator-or-dl-name": NAME_TEXT, "origination-or-expansion-time": TIME_ISO},
            {"originator-or-dl-name": DL_TEXT, "origination-or-expansion-time": TIME_ISO},
        ],
        ORNAME_STRINGS,
    ),
    Sample(31, encode_orname(parse_orname(DL_TEXT)), DL_TEXT, ORNAME_STRINGS),
    Sample(32, _mts("ReportingMTACertificate", CERTIFICATES)),
    Sample(33, _mts("ReportOriginAuthenticationCheck", SIGNATURE), SIGNATURE_VIEW),
    Sample(34, _mts("OriginatingMTACertificate", CERTIFICATES)),
    Sample(35, _mts("ProofOfSubmission", SIGNATURE), SIGNATURE_VIEW),
    Sample(36, bytes.fromhex("020107"), 7),
    Sample(
        37,
        encode_trace([TRACE]),
        [
            {
                "@type": "TraceEntry",
                "global-domain-identifier": "GB; ;NATO",
                "arrival-time": "2026-11-25T09:30:00+00:00",
            }
        ],
        frozenset({0x80}),  # arrival-time [0] Time
    ),
    Sample(
        38,
        internal_trace_extension([INTERNAL]).value or b"",
        [
            {
                "@type": "InternalTraceEntry",
                "global-domain-identifier": "GB; ;NATO",
                "mta-name": "mta-a",
                "arrival-time": "2026-11-25T09:30:00+00:00",
            }
        ],
        frozenset({0x80}),
    ),
    Sample(
        39,
        _mts("ReportingMTAName", {"domain": GDI, "mta-name": "mta-b"}),
        {"domain": "GB; ;", "mta-name": "mta-b"},
    ),
    Sample(
        40,
        _mts("ExtendedCertificates", [("directory-entry", DIRECTORY_NAME)]),
        [{"directory-entry": DIRECTORY_NAME_VIEW}],
    ),
    Sample(
        41,
        asn1.encode(
            "IPMSInformationObjects",
            "BlindCopyRecipientsField",
            [{"recipient": {"formal-name": NAME_ASN1, "free-form-name": "Duty Officer"}}],
        ),
        [
            {
                "recipient": {"formal-name": NAME_TEXT, "free-form-name": "Duty Officer"},
                # (asn1tools fills in the DEFAULTs)
                "notification-requests": "",
                "reply-requested": False,
            }
        ],
        ORNAME_STRINGS,
    ),
    Sample(42, _mts("DLExemptedRecipients", [NAME_ASN1]), [NAME_TEXT], ORNAME_STRINGS),
    Sample(
        43,
        asn1.encode(
            "IPMSSecurityExtensions",
            "BodyPartTokens",
            [
                {
                    "body-part-number": 1,
                    "body-part-choice": (
                        "encryption-token",
                        {
                            "encryption-algorithm-identifier": ALGORITHM,
                            "encrypted-key": (b"\xbe\xef", 16),
                        },
                    ),
                }
            ],
        ),
        [
            {
                "body-part-number": 1,
                "body-part-choice": {
                    "encryption-token": {
                        "encryption-algorithm-identifier": ALGORITHM_VIEW,
                        "encrypted-key": "beef",
                    }
                },
            }
        ],
    ),
    Sample(
        44,
        asn1.encode(
            "IPMSSecurityExtensions",
            "ForwardedContentToken",
            [{"body-part-number": 2, "body-part-choice": ("forwarding-token", TOKEN)}],
        ),
        [{"body-part-number": 2, "body-part-choice": {"forwarding-token": TOKEN_VIEW}}],
    ),
    Sample(45, _mts("CertificateSelectors", SELECTORS), SELECTORS_VIEW),
    Sample(46, _mts("CertificateSelectors", SELECTORS), SELECTORS_VIEW),
    Sample(
        PRIORITY_LEVEL_QUALIFIER_OID,
        priority_level_qualifier_extension(LevelQualifier.HIGH).value or b"",
        "high",
    ),
)

CERTIFICATE_TYPES = frozenset({15, 28, 32, 34})


def _ids(sample: Sample) -> str:
    return extension_label(sample.ext_type)


# --- names -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ext_type", "label"),
    [
        (StandardExtension.LATEST_DELIVERY_TIME, "latest-delivery-time"),
        (5, "latest-delivery-time"),
        (20, "message-security-label"),
        (30, "originator-and-DL-expansion-history"),
        (39, "reporting-MTA-name"),
        (46, "certificate-selectors-override"),
        (PRIORITY_LEVEL_QUALIFIER_OID, "priority-level-qualifier"),
        (99, "standard-extension 99"),
        (0, "standard-extension 0"),
        ("1.2.3.4", "1.2.3.4"),
        ("5", "5"),  # a private extension is never a standard one, even as text
    ],
)
def test_labels(ext_type: int | str, label: str) -> None:
    assert extension_label(ext_type) == label


def test_every_standard_extension_has_a_name() -> None:
    for kind in StandardExtension:
        assert extension_label(kind) != f"standard-extension {int(kind)}"
        assert extension_label(kind).lower() == kind.name.lower().replace("_", "-")


def test_every_standard_extension_with_a_value_has_a_sample() -> None:
    assert {s.ext_type for s in SAMPLES} >= {int(kind) for kind in StandardExtension}


# --- decoded values --------------------------------------------------------------------


@pytest.mark.parametrize("sample", SAMPLES, ids=_ids)
def test_samples_decode_to_their_views(sample: Sample) -> None:
    view = view_extension(ExtensionField(type=sample.ext_type, value=sample.der))
    assert view.error is None, view.error
    assert view.hex is None
    assert view.label == extension_label(sample.ext_type)
    if sample.ext_type in CERTIFICATE_TYPES:
        _certificate_view(view.value)
    else:
        assert view.value == sample.view


def test_criticality_by_name() -> None:
    critical = Criticality(for_transfer=True, for_delivery=True)
    view = view_extension(ExtensionField(type=3, criticality=critical, value=b"\x0a\x01\x01"))
    assert view == ExtensionView(
        label="dl-expansion-prohibited",
        criticality=("for-transfer", "for-delivery"),
        value="dl-expansion-prohibited",
    )


def test_an_absent_value_is_shown_as_absent() -> None:
    view = view_extension(ExtensionField(type=3))
    assert view == ExtensionView(label="dl-expansion-prohibited")
    assert view.decoded


def test_long_octets_are_summarised_unless_full() -> None:
    long = {"algorithmId": "1.2.3", "parameters": bytes((0x04, 100)) + bytes(100)}
    ext = ExtensionField(type=17, value=_mts("ContentConfidentialityAlgorithmIdentifier", long))
    short = view_extension(ext).value
    assert isinstance(short, dict)
    assert short["parameters"] == {"length": 102, "hex-prefix": "0464" + "00" * 62}
    full = view_extension(ext, full_bytes=True).value
    assert isinstance(full, dict)
    assert full["parameters"] == "0464" + "00" * 100


def test_bit_strings_of_odd_length() -> None:
    value = {"algorithmIdentifier": ALGORITHM, "encrypted": (b"\xa0", 3)}
    view = view_extension(ExtensionField(type=18, value=_mts("ContentIntegrityCheck", value)))
    assert isinstance(view.value, dict)
    assert view.value["encrypted"] == {"bits": 3, "hex": "a0"}


def test_the_octets_alternative_of_content_correlator() -> None:
    ext = ExtensionField(type=23, value=_mts("ContentCorrelator", ("octets", b"\x00\x01")))
    assert view_extension(ext).value == {"octets": "0001"}


def test_priority_level_qualifier_sent_as_an_integer() -> None:
    # Read as the MTA reads it: the INTEGER form is tolerated.
    ext = ExtensionField(type=PRIORITY_LEVEL_QUALIFIER_OID, value=bytes.fromhex("020100"))
    assert view_extension(ext).value == "low"


# --- every legal BER form --------------------------------------------------------------

_UNIVERSAL_STRINGS = frozenset({0x04, 0x0C, 0x12, 0x13, 0x14, 0x16, 0x17, 0x18, 0x1A, 0x1E})
"""Identifier octets of the universal string types reform may split (not BIT STRING:
its segments are BIT STRINGs, reform writes OCTET STRINGs)."""


def _rules(sample: Sample) -> ber_forms.Rules:
    def string(path: ber_forms.Path, octet: int) -> bool:
        return octet in _UNIVERSAL_STRINGS or octet in sample.context_strings

    return ber_forms.Rules(string=string, high_tags=True)


@settings(
    max_examples=examples(1),
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.sampled_from(SAMPLES), st.randoms(use_true_random=False))
def test_every_ber_form_shows_the_same_view(sample: Sample, rnd: random.Random) -> None:
    expected = view_extension(ExtensionField(type=sample.ext_type, value=sample.der))
    form = ber_forms.reform(sample.der, rnd, _rules(sample))
    assert view_extension(ExtensionField(type=sample.ext_type, value=form)) == expected


@pytest.mark.parametrize("sample", SAMPLES, ids=_ids)
def test_each_sample_in_many_forms(sample: Sample) -> None:
    expected = view_extension(ExtensionField(type=sample.ext_type, value=sample.der))
    rnd = random.Random(sample.der)
    for _ in range(20):
        form = ber_forms.reform(sample.der, rnd, _rules(sample))
        assert view_extension(ExtensionField(type=sample.ext_type, value=form)) == expected


@pytest.mark.parametrize(
    ("form", "der"),
    [
        ("37 80 04 05 3236313132 04 06 3531303030 5a 0000", "170b 3236313132353130 30305a"),
        ("1f17 81 0b 3236313132353130 30305a", "170b 3236313132353130 30305a"),
        ("30 80 02 01 01 00 00", "30 03 020101"),
        ("23 08 03 02 00 ff 03 02 04 f0", "03 03 04 fff0"),
        ("04 84 00000002 abcd", "04 02 abcd"),
    ],
)
def test_normalised(form: str, der: str) -> None:
    assert normalised(bytes.fromhex(form)) == bytes.fromhex(der)


# --- values that do not decode ---------------------------------------------------------


@pytest.mark.parametrize(
    ("ext_type", "value", "error"),
    [
        (5, "0403313233", "LatestDeliveryTime: "),
        (5, "170431323334", "Time: '1234' is not YYMMDDhhmm[ss] followed by Z or +-hhmm"),
        (1, "0a0102", "RecipientReassignmentProhibited: "),
        (2, "0500", "ORName"),
        (20, "3103130121", "message-security-label.privacy-mark: '!' at 0"),
        (23, "30", "truncated"),
        (36, "0400", "value: expected [UNIVERSAL 2], found [UNIVERSAL 4]"),
        (37, "0201ff", "[UNIVERSAL 2] must be constructed"),
        (PRIORITY_LEVEL_QUALIFIER_OID, "0a0105", "priority-level-qualifier"),
        (13, "020101 00", "trailing byte"),
    ],
)
def test_undecodable_values_give_error_and_hex(ext_type: int | str, value: str, error: str) -> None:
    data = bytes.fromhex(value)
    view = view_extension(ExtensionField(type=ext_type, value=data))
    assert view.error is not None and error in view.error, view.error
    assert view.hex == data.hex()
    assert view.value is None
    assert not view.decoded


def test_unknown_types_show_hex() -> None:
    for ext_type in (99, "1.2.3.4"):
        view = view_extension(ExtensionField(type=ext_type, value=b"\x04\x01\xff"))
        label = "standard-extension 99" if ext_type == 99 else "1.2.3.4"
        assert view == ExtensionView(label=label, error=UNKNOWN, hex="0401ff")


@settings(max_examples=examples(4))
@given(
    st.sampled_from([*range(1, 47), 99, PRIORITY_LEVEL_QUALIFIER_OID]),
    st.binary(max_size=40),
)
def test_arbitrary_bytes_never_raise(ext_type: int | str, data: bytes) -> None:
    view = view_extension(ExtensionField(type=ext_type, value=data))
    assert view.decoded or view.hex == data.hex()
    describe_extension(ExtensionField(type=ext_type, value=data))


@settings(max_examples=examples(2))
@given(st.sampled_from(SAMPLES), st.data())
def test_corrupted_samples_never_raise(sample: Sample, data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(sample.der) - 1))
    octet = data.draw(st.integers(0, 255))
    corrupt = sample.der[:at] + bytes((octet,)) + sample.der[at + 1 :]
    view = view_extension(ExtensionField(type=sample.ext_type, value=corrupt))
    assert view.decoded or view.hex == corrupt.hex()


# --- one line for people ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("ext", "line"),
    [
        (
            ExtensionField(
                type=5,
                criticality=Criticality(for_delivery=True),
                value=latest_delivery_time_extension(datetime(2026, 11, 25, 10, tzinfo=UTC)).value,
            ),
            "latest-delivery-time: 2026-11-25T10:00:00+00:00 (critical for delivery)",
        ),
        (
            priority_level_qualifier_extension(LevelQualifier.HIGH),
            "priority-level-qualifier: high",
        ),
        (
            ExtensionField(type=23, value=_mts("ContentCorrelator", ("ia5text", "abc"))),
            "content-correlator: {ia5text: abc}",
        ),
        (
            ExtensionField(type=6, value=_mts("RequestedDeliveryMethod", [1, 2])),
            "requested-delivery-method: [mhs-delivery, physical-delivery]",
        ),
        (
            security_label_extension(LABEL),
            "message-security-label: SECRET; policy 1.3.26.0.4406.0.5.1; privacy mark 'NATO'"
            " (critical for delivery)",
        ),
        (
            ExtensionField(type=13, value=encode_oraddress(NAME)),
            f"originator-return-address: {NAME_TEXT}",
        ),
        (
            ExtensionField(type=3, criticality=Criticality(for_transfer=True)),
            "dl-expansion-prohibited: no value (critical for transfer)",
        ),
        (
            ExtensionField(type="1.2.3.4", value=b"\x05\x00"),
            "1.2.3.4: 0500 (unknown extension type)",
        ),
        (
            ExtensionField(type=36, value=b"\x04\x00"),
            "forwarding-request: 0400 (does not decode: "
            "value: expected [UNIVERSAL 2], found [UNIVERSAL 4])",
        ),
    ],
)
def test_describe(ext: ExtensionField, line: str) -> None:
    assert describe_extension(ext) == line
