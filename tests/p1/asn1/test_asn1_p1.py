"""The X.411 / X.419 (P1) modules: they compile, and values cross the wire byte-exact."""

from __future__ import annotations

from typing import Any

import pytest

from p1 import asn1, ber
from p1.errors import DecodeError

MTA = "MTAAbstractService"
MTS = "MTSAbstractService"

# --- building blocks ------------------------------------------------------------------

GDI = {
    "country-name": ("iso-3166-alpha2-code", "GB"),
    "administration-domain-name": ("printable", " "),
    "private-domain-identifier": ("printable", "NATO"),
}
# C=GB;ADMD= ;PRMD=NATO;O=ACT;OU=J6;S=Smith;G=John;CN=Duty Officer
OR_NAME = {
    "built-in-standard-attributes": {
        "country-name": ("iso-3166-alpha2-code", "GB"),
        "administration-domain-name": ("printable", " "),
        "private-domain-name": ("printable", "NATO"),
        "organization-name": "ACT",
        "organizational-unit-names": ["J6"],
        "personal-name": {"surname": "Smith", "given-name": "John"},
    },
    # common-name (1) as an extension attribute: value PrintableString "Duty Officer"
    "extension-attributes": [
        {"extension-attribute-type": 1, "extension-attribute-value": b"\x13\x0cDuty Officer"}
    ],
}
TRACE = [
    {
        "global-domain-identifier": GDI,
        "domain-supplied-information": {
            "arrival-time": "240501123000Z",
            "routing-action": "relayed",
        },
    }
]
UNKNOWN_PRIVATE = {"type": ("private-extension", "1.2.3.4"), "value": b"\x04\x02\xab\xcd"}
LEVEL_QUALIFIER_HIGH = {
    "type": ("private-extension", "1.3.26.0.4406.0.8.0"),
    "value": b"\x0a\x01\x01",
}
INTERNAL_TRACE = [
    {
        "global-domain-identifier": GDI,
        "mta-name": "mta1",
        "mta-supplied-information": {
            "arrival-time": "2405011230Z",
            "routing-action": "rerouted",
            "attempted": ("mta", "mta2"),
        },
    }
]


def message_envelope(**extra: Any) -> dict[str, Any]:
    envelope = {
        "message-identifier": {"global-domain-identifier": GDI, "local-identifier": "abc123"},
        "originator-name": OR_NAME,
        "content-type": ("extended", "1.3.26.0.4406.0.4.1"),
        "priority": "urgent",
        "per-message-indicators": (b"\x20", 3),
        "trace-information": TRACE,
        "per-recipient-fields": [
            {
                "recipient-name": OR_NAME,
                "originally-specified-recipient-number": 1,
                "per-recipient-indicators": (b"\x90", 8),
            }
        ],
    }
    envelope.update(extra)
    return envelope


def round_trip(module: str, type_name: str, value: Any) -> bytes:
    """Encode, decode, encode again: the two encodings must be identical."""
    encoded = asn1.encode(module, type_name, value)
    again = asn1.encode(module, type_name, asn1.decode(module, type_name, encoded))
    assert again.hex() == encoded.hex()
    return encoded


# --- compilation --------------------------------------------------------------------------


@pytest.mark.slow
def test_the_whole_directory_compiles_with_the_p1_modules() -> None:
    spec = asn1.compile_uncached()
    for module, names in {
        MTA: [
            "MTABindArgument",
            "MTABindResult",
            "MTABindError",
            "MTS-APDU",
            "Message",
            "Report",
            "Probe",
            "MessageTransferEnvelope",
            "ReportTransferEnvelope",
            "ReportTransferContent",
            "ProbeTransferEnvelope",
            "PerRecipientMessageTransferFields",
            "TraceInformation",
            "InternalTraceInformation",
            "PerDomainBilateralInformation",
        ],
        MTS: [
            "ORName",
            "ORAddress",
            "ExtensionField",
            "ExtensionType",
            "MTSIdentifier",
            "ContentType",
            "Priority",
            "SecurityLabel",
            "Credentials",
            "StrongCredentials",
            "SecurityContext",
            "UniversalCommonName",
            "Token",
        ],
        "InformationFramework": ["Name", "RDNSequence", "RelativeDistinguishedName"],
        "AuthenticationFramework": ["AlgorithmIdentifier", "Certificates", "Certificate"],
        "SelectedAttributeTypes": ["PresentationAddress"],
        "CertificateExtensions": ["CertificateAssertion", "GeneralNames"],
        "MMSEnvelopeExtensions": ["PriorityLevelQualifier"],
    }.items():
        missing = [name for name in names if name not in spec.modules[module]]
        assert not missing, (module, missing)


# --- MTA bind -----------------------------------------------------------------------------

BIND_MTA1_SECRET = "a11080044d544131a1081606736563726574"


def test_bind_argument_authenticated_has_the_documented_bytes() -> None:
    value = (
        "authenticated",
        {
            "initiator-name": "MTA1",
            "initiator-credentials": ("simple", ("ia5-string", "secret")),
        },
    )
    # a1 10: authenticated [1] SET; 80 04 "MTA1": [0] IMPLICIT MTAName;
    # a1 08 16 06 "secret": credentials [1] (explicit, a CHOICE) holding an IA5String.
    assert asn1.encode(MTA, "MTABindArgument", value).hex() == BIND_MTA1_SECRET
    assert asn1.decode(MTA, "MTABindArgument", bytes.fromhex(BIND_MTA1_SECRET)) == value


def test_bind_argument_and_result_of_a_real_peer_decode() -> None:
    # From reference/pcaps/x400-ping-success.pcap: the RTORQ open and RTOAC values,
    # inside their [16] / [17] wrappers.
    argument = bytes.fromhex(
        "a1228013706572636976616c2e736d68732e636f2e756ba10b1609657863616c69627572"
    )
    result = bytes.fromhex("a12080146775696e65766572652e736d68732e636f2e756ba10816066d65726c696e")
    assert asn1.decode(MTA, "MTABindArgument", argument) == (
        "authenticated",
        {
            "initiator-name": "percival.smhs.co.uk",
            "initiator-credentials": ("simple", ("ia5-string", "excalibur")),
        },
    )
    assert asn1.decode(MTA, "MTABindResult", result) == (
        "authenticated",
        {
            "responder-name": "guinevere.smhs.co.uk",
            "responder-credentials": ("simple", ("ia5-string", "merlin")),
        },
    )
    for type_name, data in [("MTABindArgument", argument), ("MTABindResult", result)]:
        assert round_trip(MTA, type_name, asn1.decode(MTA, type_name, data)) == data


@pytest.mark.parametrize(
    ("type_name", "value", "hex_"),
    [
        ("MTABindArgument", ("unauthenticated", None), "0500"),
        ("MTABindResult", ("unauthenticated", None), "0500"),
        (
            "MTABindResult",
            (
                "authenticated",
                {
                    "responder-name": "B",
                    "responder-credentials": ("simple", ("octet-string", b"\x01\x02")),
                },
            ),
            "a109800142a10404020102",
        ),
        ("MTABindError", 0, "020100"),
        ("MTABindError", 5, "020105"),
    ],
)
def test_bind_values_round_trip(type_name: str, value: Any, hex_: str) -> None:
    assert round_trip(MTA, type_name, value).hex() == hex_


def test_bind_argument_with_strong_credentials_and_security_context() -> None:
    value = (
        "authenticated",
        {
            "initiator-name": "MTA1",
            "initiator-credentials": (
                "strong",
                {
                    "bind-token": {"token-type-identifier": "1.2.3.4", "token": b"\x02\x01\x05"},
                },
            ),
            "security-context": [
                {"security-policy-identifier": "1.2.3", "security-classification": 3}
            ],
        },
    )
    encoded = round_trip(MTA, "MTABindArgument", value)
    # strong [0] inside the explicit [1]; the Token is [0] IMPLICIT SEQUENCE whose open
    # type [1] is explicit; the security context is [2] IMPLICIT SET OF SecurityLabel.
    assert encoded.hex() == (
        "a121"
        "80044d544131"
        "a10e"
        "a00c"
        "a00a"
        "80032a0304"
        "a103020105"
        # SecurityLabel is a SET: its members are written in tag order (02 before 06)
        "a209"
        "3107"
        "020103"
        "06022a03"
    )


# --- ExtensionField ---------------------------------------------------------------------


def test_extension_field_without_value_stays_without_value() -> None:
    # standard-extension [0] 38, criticality and value absent
    data = bytes.fromhex("3003800126")
    decoded = asn1.decode(MTS, "ExtensionField", data)
    assert decoded["type"] == ("standard-extension", 38)
    assert "value" not in decoded  # absent means NULL (X.411 clause 9)
    assert asn1.encode(MTS, "ExtensionField", decoded) == data


def test_extension_field_with_explicit_null_value_keeps_it() -> None:
    data = bytes.fromhex("3007800126a2020500")
    decoded = asn1.decode(MTS, "ExtensionField", data)
    assert decoded["value"] == b"\x05\x00"
    assert asn1.encode(MTS, "ExtensionField", decoded) == data


def test_unknown_private_extension_is_kept_byte_exact() -> None:
    # private-extension [3] IMPLICIT OBJECT IDENTIFIER 1.2.3.4; value [2] EXPLICIT 04 02 ab cd
    data = bytes.fromhex("300b83032a0304a2040402abcd")
    assert asn1.encode(MTS, "ExtensionField", UNKNOWN_PRIVATE) == data
    decoded = asn1.decode(MTS, "ExtensionField", data)
    assert decoded["value"] == b"\x04\x02\xab\xcd"
    assert asn1.encode(MTS, "ExtensionField", decoded) == data


def test_critical_extension_criticality_bits() -> None:
    value = {"type": ("standard-extension", 38), "criticality": (b"\x40", 2), "value": b"\x30\x00"}
    assert round_trip(MTS, "ExtensionField", value).hex() == "300b80012681020640a2023000"


def test_priority_level_qualifier_value() -> None:
    assert asn1.encode("MMSEnvelopeExtensions", "PriorityLevelQualifier", "high") == b"\x0a\x01\x01"
    assert asn1.decode("MMSEnvelopeExtensions", "PriorityLevelQualifier", b"\x0a\x01\x00") == "low"


# --- envelopes ----------------------------------------------------------------------------


def test_message_envelope_with_unknown_private_extension_round_trips() -> None:
    envelope = message_envelope(extensions=[LEVEL_QUALIFIER_HIGH, UNKNOWN_PRIVATE])
    encoded = round_trip(MTA, "MessageTransferEnvelope", envelope)
    assert bytes.fromhex("300b83032a0304a2040402abcd") in encoded
    decoded = asn1.decode(MTA, "MessageTransferEnvelope", encoded)
    assert decoded["content-type"] == ("extended", "1.3.26.0.4406.0.4.1")
    assert decoded["priority"] == "urgent"
    assert [e["value"] for e in decoded["extensions"]] == [b"\x0a\x01\x01", b"\x04\x02\xab\xcd"]


def test_message_envelope_member_order_does_not_matter() -> None:
    # BER allows a SET's members in any order (X.690 8.11.1): move content-type elsewhere.
    encoded = asn1.encode(MTA, "MessageTransferEnvelope", message_envelope())
    assert encoded[:1] == b"\x31"
    members = [child.raw() for child in ber.children(ber.read_single(encoded, "env"), "env")]
    content_type = bytes.fromhex("06082b1a00a236000401")
    others = [member for member in members if member != content_type]
    assert len(others) == len(members) - 1
    for position in (0, len(others)):
        moved = [*others[:position], content_type, *others[position:]]
        reordered = ber.constructed(ber.SET, moved)
        assert reordered != encoded  # (asn1tools writes content-type third, as defined)
        decoded = asn1.decode(MTA, "MessageTransferEnvelope", reordered)
        assert decoded == asn1.decode(MTA, "MessageTransferEnvelope", encoded)


def test_built_in_content_type_and_default_priority() -> None:
    envelope = message_envelope(**{"content-type": ("built-in", 22)})
    del envelope["priority"]
    encoded = round_trip(MTA, "MessageTransferEnvelope", envelope)
    assert bytes.fromhex("460116") in encoded  # [APPLICATION 6] INTEGER 22
    assert b"\x47\x01" not in encoded  # normal is the default: not sent
    assert asn1.decode(MTA, "MessageTransferEnvelope", encoded)["priority"] == "normal"


def test_mts_apdu_message_report_probe_tags_and_round_trips() -> None:
    message = ("message", {"envelope": message_envelope(), "content": b"hello"})
    report_envelope = {
        "report-identifier": {"global-domain-identifier": GDI, "local-identifier": "r1"},
        "report-destination-name": OR_NAME,
        "trace-information": TRACE,
        "extensions": [
            {
                "type": ("standard-extension", 38),
                "value": asn1.encode(MTA, "InternalTraceInformation", INTERNAL_TRACE),
            }
        ],
    }
    report_content = {
        "subject-identifier": {"global-domain-identifier": GDI, "local-identifier": "abc123"},
        "content-type": ("built-in", 22),
        "per-recipient-fields": [
            {
                "actual-recipient-name": OR_NAME,
                "originally-specified-recipient-number": 1,
                "per-recipient-indicators": (b"\x40", 8),
                "last-trace-information": {
                    "arrival-time": "240501123000Z",
                    "report-type": (
                        "non-delivery",
                        {"non-delivery-reason-code": 1, "non-delivery-diagnostic-code": 0},
                    ),
                },
                "supplementary-information": "no route",
            }
        ],
    }
    report = ("report", {"envelope": report_envelope, "content": report_content})
    probe = (
        "probe",
        {
            "probe-identifier": {"global-domain-identifier": GDI, "local-identifier": "p1"},
            "originator-name": OR_NAME,
            "content-type": ("built-in", 22),
            "content-length": 1000,
            "trace-information": TRACE,
            "per-recipient-fields": [
                {
                    "recipient-name": OR_NAME,
                    "originally-specified-recipient-number": 1,
                    "per-recipient-indicators": (b"\x80", 8),
                }
            ],
        },
    )
    for value, first in [(message, 0xA0), (report, 0xA1), (probe, 0xA2)]:
        assert round_trip(MTA, "MTS-APDU", value)[0] == first


def test_internal_trace_information_as_extension_value() -> None:
    encoded = round_trip(MTA, "InternalTraceInformation", INTERNAL_TRACE)
    decoded = asn1.decode(MTA, "InternalTraceInformation", encoded)
    supplied = decoded[0]["mta-supplied-information"]
    assert supplied["attempted"] == ("mta", "mta2")
    assert supplied["routing-action"] == "rerouted"


@pytest.mark.parametrize(
    "text", ["2405011230Z", "240501123000Z", "2405011230+0100", "240501123005-0130"]
)
def test_times_keep_their_text(text: str) -> None:
    encoded = asn1.encode(MTS, "Time", text)
    assert encoded == b"\x17" + bytes([len(text)]) + text.encode()
    assert asn1.decode(MTS, "Time", encoded) == text


def test_or_name_with_directory_name_and_universal_attribute() -> None:
    name: dict[str, Any] = dict(OR_NAME)
    # universal-common-name (24): the UniversalOrBMPString{} SET, BMPString alternative
    universal = asn1.encode(
        MTS, "UniversalCommonName", {"character-encoding": ("two-octets", "Zoë")}
    )
    name["extension-attributes"] = [
        {"extension-attribute-type": 24, "extension-attribute-value": universal}
    ]
    # directory-name is carried as received (an open value holding an X.501 Name)
    name["directory-name"] = asn1.encode(
        "InformationFramework",
        "Name",
        ("rdnSequence", [[{"type": "2.5.4.3", "value": b"\x13\x03Bob"}]]),
    )
    encoded = round_trip(MTS, "ORName", name)
    assert encoded[0] == 0x60  # [APPLICATION 0]
    assert bytes.fromhex("a010300e310c300a06035504031303426f62") in encoded
    assert universal == bytes.fromhex("31081e06005a006f00eb")


def test_indefinite_length_apdu_decodes() -> None:
    definite = asn1.encode(
        MTA,
        "Probe",
        {
            "probe-identifier": {"global-domain-identifier": GDI, "local-identifier": "p1"},
            "originator-name": OR_NAME,
            "content-type": ("built-in", 22),
            "trace-information": TRACE,
            "per-recipient-fields": [
                {
                    "recipient-name": OR_NAME,
                    "originally-specified-recipient-number": 1,
                    "per-recipient-indicators": (b"\x80", 8),
                }
            ],
        },
    )
    # Re-frame the outer SET with the indefinite length form.
    header = 3 if definite[1] == 0x81 else 2
    indefinite = b"\x31\x80" + definite[header:] + b"\x00\x00"
    assert asn1.decode(MTA, "Probe", indefinite) == asn1.decode(MTA, "Probe", definite)


@pytest.mark.parametrize("data", ["", "a1", "a10480024d", "a100", "0501", "3000", "ff"])
def test_malformed_bind_argument_raises_decode_error(data: str) -> None:
    with pytest.raises(DecodeError):
        asn1.decode(MTA, "MTABindArgument", bytes.fromhex(data))
