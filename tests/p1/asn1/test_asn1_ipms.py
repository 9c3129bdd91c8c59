"""The X.420 (P2) and STANAG 4406 (P772) modules: they compile, and values cross the wire
byte-exact through asn1tools."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from p1 import asn1
from p1.errors import DecodeError

IPMS = "IPMSInformationObjects"
MMHS = "MMSHeadingExtensions"
MMS = "MMSInformationObjects"

# C=GB;ADMD= ;PRMD=NATO;O=ACT;S=Smith
OR_NAME = {
    "built-in-standard-attributes": {
        "country-name": ("iso-3166-alpha2-code", "GB"),
        "administration-domain-name": ("printable", " "),
        "private-domain-name": ("printable", "NATO"),
        "organization-name": "ACT",
        "personal-name": {"surname": "Smith"},
    }
}
THIS_IPM = {"user": OR_NAME, "user-relative-identifier": "0001 240102030405Z"}
ID_MM = "1.3.26.0.4406.0.2"  # id-nato-mmhs-mm


def ext(arc: int, type_name: str, value: Any) -> dict[str, Any]:
    """An IPMSExtension holding a STANAG 4406 heading extension value."""
    return {"type": f"{ID_MM}.{arc}", "value": asn1.encode(MMHS, type_name, value)}


def contains(actual: Any, expected: Any) -> bool:
    """``actual`` has every component of ``expected`` (asn1tools adds the defaults)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and contains(actual[key], value) for key, value in expected.items()
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(expected)
            and all(contains(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return bool(actual == expected)


def round_trip(module: str, type_name: str, value: Any) -> bytes:
    """Encode, decode (finding ``value`` again), re-encode: the same bytes."""
    encoded = asn1.encode(module, type_name, value)
    decoded = asn1.decode(module, type_name, encoded)
    assert contains(decoded, value), decoded
    assert asn1.encode(module, type_name, decoded) == encoded
    return encoded


@pytest.mark.slow
def test_modules_compile_together() -> None:
    modules = asn1.compile_uncached().modules
    for name in (
        IPMS,
        "IPMSHeadingExtensions",
        "IPMSExtendedBodyPartTypes2",
        "IPMSForwardedContentBodyPartType",
        "IPMSExtendedVoiceBodyPartType",
        "IPMSSecurityExtensions",
        "IPMSObjectIdentifiers",
        MMHS,
        MMS,
        "MMSAbstractService",
        "MMSExtendedBodyPartTypes",
        "MMSObjectIdentifiers",
        "MMSOtherNotificationTypeExtensions",
        "MMSPerRecipientSpecifierExtensions",
    ):
        assert name in modules, name


# --- heading extensions ----------------------------------------------------------------


def test_primary_precedence_flash_exact_bytes() -> None:
    # IPMSExtension {type id-nato-mmhs-mm-primary-precedence, value flash (4)}
    value = asn1.encode(MMHS, "PrimaryPrecedence", 4)
    assert value.hex() == "020104"
    encoded = round_trip(IPMS, "IPMSExtension", {"type": f"{ID_MM}.0", "value": value})
    assert encoded.hex() == "300d06082b1a00a236000200020104"


def test_extension_without_value_means_null() -> None:
    # value ANY DEFAULT NULL: an absent value stays absent on the wire.
    encoded = round_trip(IPMS, "IPMSExtension", {"type": "2.6.1.5.0"})
    assert encoded.hex() == "3006060456010500"


@pytest.mark.parametrize(
    ("type_name", "value", "hex_"),
    [
        ("CopyPrecedence", 1, "020101"),
        ("MessageType", {"type": 0, "identifier": "BRAVO"}, "310a8001008105425241564f"),
        ("OriginatorReference", "REF 1", "13055245462031"),
        ("HandlingInstructions", ["NO FORN"], "300913074e4f20464f524e"),
        ("Acp127MessageIdentifier", "RUABC 0001", "130a52554142432030303031"),
        (
            "ExtendedAuthorisationInfo",
            datetime(2024, 1, 2, 3, 4, 5),
            "170d3234303130323033303430355a",
        ),
        ("ExemptedAddressSeq", [{"free-form-name": "X"}], "30053103800158"),
    ],
)
def test_heading_extension_values(type_name: str, value: Any, hex_: str) -> None:
    assert round_trip(MMHS, type_name, value).hex() == hex_


def test_distribution_codes_instance_of() -> None:
    value = {
        "sics": ["ABC", "DEFG"],
        "dist-Extensions": [{"type-id": "1.2.3", "value": b"\x05\x00"}],
    }
    encoded = round_trip(MMHS, "DistributionCodes", value)
    # dist-Extensions [1] { INSTANCE OF: [UNIVERSAL 8] { 1.2.3, [0] NULL } }
    assert encoded.hex() == "3119a00b1303414243130444454647a10a280806022a03a0020500"


def test_priority_level_qualifier() -> None:
    assert round_trip(MMHS, "PriorityLevelQualifier", "high").hex() == "0a0101"


def test_acp127_notification_request_and_response() -> None:
    request = round_trip(
        "MMSPerRecipientSpecifierExtensions", "Acp127NotificationType", (b"\xa0", 3)
    )
    assert request.hex() == "030205a0"  # bits 0 and 2 of three
    response = {
        "acp127-notification-type": (b"\x40", 2),
        "receipt-time": datetime(2024, 1, 2, 3, 4, 5),
        "acp127-recipient": "RUABC",
    }
    round_trip("MMSOtherNotificationTypeExtensions", "Acp127NotificationResponse", response)


# --- IPM and IPN -----------------------------------------------------------------------


def ia5_text(text: str) -> tuple[str, Any]:
    return ("basic", ("ia5-text", {"parameters": {}, "data": text}))


def extended_ia5_text(text: str) -> tuple[str, Any]:
    return (
        "extended",
        {
            "parameters": {"type-id": "2.6.1.11.0", "value": b"\x31\x00"},
            "data": {
                "type-id": "2.6.1.4.0",
                "value": b"\x16" + bytes((len(text),)) + text.encode(),
            },
        },
    )


HEADING = {
    "this-IPM": THIS_IPM,
    "originator": {"formal-name": OR_NAME},
    "primary-recipients": [
        {
            "recipient": {"formal-name": OR_NAME, "free-form-name": "Duty Officer"},
            "notification-requests": (b"\xc0", 2),
            "reply-requested": True,
        }
    ],
    "subject": "Exercise status",
    "expiry-time": datetime(2024, 1, 3, 4, 5, 6),
    "importance": "high",
    "sensitivity": "private",
}


def test_p2_ipm_round_trip() -> None:
    ipm = {
        "heading": HEADING,
        "body": [ia5_text("Hello"), ("basic", ("bilaterally-defined", b"\x00\x01"))],
    }
    encoded = round_trip(IPMS, "InformationObject", ("ipm", ipm))
    assert encoded[0] == 0xA0  # ipm [0] IPM, implicit
    # The basic ia5-text body part: [0] { SET {}, IA5String "Hello" }
    assert bytes.fromhex("a00931001605") + b"Hello" in encoded


def test_p772_mm_round_trip_with_heading_extensions() -> None:
    heading = {
        **HEADING,
        "extensions": [
            ext(0, "PrimaryPrecedence", 4),
            ext(1, "CopyPrecedence", 1),
            ext(2, "MessageType", {"type": 0, "identifier": "BRAVO"}),
            ext(6, "DistributionCodes", {"sics": ["ABC"]}),
            ext(7, "HandlingInstructions", ["NO FORN"]),
            ext(10, "OriginatorReference", "REF 1"),
            ext(13, "Acp127MessageIdentifier", "RUABC 0001"),
            {"type": "1.2.3.4", "value": b"\x04\x01\xff"},  # not a military extension
        ],
    }
    mm = {"mmheading": heading, "mmbody": [extended_ia5_text("Hello")]}
    encoded = round_trip(MMS, "InformationObject", ("mm", mm))
    # The same bytes are an IPM to X.420.
    choice, ipm = asn1.decode(IPMS, "InformationObject", encoded)
    assert choice == "ipm"
    assert ipm["body"] == mm["mmbody"]
    assert asn1.decode(MMHS, "PrimaryPrecedence", ipm["heading"]["extensions"][0]["value"]) == 4


def test_extended_body_part_instance_of_bytes() -> None:
    encoded = round_trip(IPMS, "BodyPart", extended_ia5_text("Hi"))
    # extended [15] { [0] {id-ep-ia5-text, [0] SET {}}, [UNIVERSAL 8] {id-et-ia5-text,
    # [0] IA5String "Hi"} }
    assert encoded.hex() == "af1aa00a060456010b00a0023100280c060456010400a00416024869"


def test_general_text_types() -> None:
    assert round_trip("IPMSExtendedBodyPartTypes2", "GeneralTextParameters", [1, 6, 100]).hex() == (
        "3109020101020106020164"
    )
    assert round_trip("IPMSExtendedBodyPartTypes2", "GeneralTextData", "Gr\xfc\xdfe").hex() == (
        "1b054772fcdf65"
    )


def test_receipt_notification_round_trip() -> None:
    ipn = {
        "subject-ipm": THIS_IPM,
        "ipn-originator": {"formal-name": OR_NAME},
        "choice": (
            "receipt-fields",
            {"receipt-time": datetime(2024, 1, 2, 3, 4, 5), "acknowledgment-mode": "automatic"},
        ),
    }
    encoded = round_trip(IPMS, "InformationObject", ("ipn", ipn))
    assert encoded[0] == 0xA1  # ipn [1] IPN, implicit
    # choice [0] is explicit (a tag on a CHOICE): [0] { receipt-fields [1] {...} }
    assert bytes.fromhex("a014a112800d") in encoded
    mn = asn1.decode(MMS, "InformationObject", encoded)
    assert mn[0] == "mn"
    assert mn[1]["choice"][0] == "mn-receipt-fields"
    assert mn[1]["choice"][1]["acknowledgment-mode"] == "automatic"


def test_non_receipt_notification_returns_the_ipm() -> None:
    returned = {"heading": {"this-IPM": THIS_IPM}, "body": [ia5_text("x")]}
    ipn = {
        "subject-ipm": THIS_IPM,
        "choice": (
            "non-receipt-fields",
            {
                "non-receipt-reason": "ipm-discarded",
                "discard-reason": "ipm-expired",
                "returned-ipm": returned,
            },
        ),
    }
    round_trip(IPMS, "IPN", ipn)


def test_truncated_heading_is_a_decode_error() -> None:
    encoded = asn1.encode(IPMS, "Heading", HEADING)
    with pytest.raises(DecodeError):
        asn1.decode(IPMS, "Heading", encoded[:-3])
