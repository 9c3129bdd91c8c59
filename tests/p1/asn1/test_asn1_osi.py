"""The OSI upper-layer modules: ACSE (X.227), presentation (X.226), RTSE (X.228), ROS (X.880).

Each case is a value and the exact bytes written out by hand, field by field; both
directions are checked.  The P1 bind examples follow wire-notes.md.
"""

from __future__ import annotations

import datetime
from typing import Any

import asn1tools
import pytest

from p1 import asn1
from p1.errors import DecodeError, EncodeError

ACSE = "ACSE-1"
PRES = "ISO8823-PRESENTATION"
RTSE = "Reliable-Transfer-APDU"
ROS = "Remote-Operations-Generic-ROS-PDUs"

ID_AC_MTS_TRANSFER = "2.6.0.1.6"
ACSE_AS = "2.2.1.0.1"
ID_AS_MTA_RTSE = "2.6.0.2.12"
ID_AS_MTSE = "2.6.0.2.7"
BER = "2.1.1"

# MTABindArgument authenticated {initiator-name "MTA1", simple password "secret"} in its
# [16] wrapper: the RTSE connection data of a P1 bind.
BIND_ARGUMENT = bytes.fromhex("b012 a110 80044d544131 a108 1606736563726574")


def _hex(*parts: str) -> bytes:
    return bytes.fromhex("".join(parts))


RTORQ = _hex(
    "b018",  # rtorq-apdu [16] IMPLICIT SET, defaults left out
    "a316",  # connectionDataRQ [3]
    "a014",  # open [0]
    BIND_ARGUMENT.hex(),
)

AARQ = _hex(
    "602b",  # [APPLICATION 0] IMPLICIT SEQUENCE
    "a106 0604 56000106",  # aSO-context-name [1] 2.6.0.1.6
    "be21",  # user-information [30] IMPLICIT SEQUENCE OF
    "281f",  # EXTERNAL
    "020103",  # indirect-reference 3 (context of RTSE)
    "a01a",  # single-ASN1-type [0]
    RTORQ.hex(),
)

CONTEXT_LIST = _hex(
    "a433",  # presentation-context-definition-list [4] IMPLICIT
    "300f 020101 060452010001 3004 06025101",  # 1: ACSE, BER
    "300f 020103 06045600020c 3004 06025101",  # 3: id-as-mta-rtse, BER
    "300f 020105 060456000207 3004 06025101",  # 5: id-as-mtse, BER
)

CP_TYPE = _hex(
    "3172",  # SET
    "a003 800101",  # mode-selector { mode-value normal-mode }
    "a26b",  # normal-mode-parameters [2] IMPLICIT SEQUENCE
    CONTEXT_LIST.hex(),
    "6134",  # user-data: fully-encoded-data [APPLICATION 1]
    "3032 020101 a02d",  # PDV-list { context 1, single-ASN1-type [0]
    AARQ.hex(),
)

CONTEXT_LIST_VALUE = [
    {
        "presentation-context-identifier": pci,
        "abstract-syntax-name": name,
        "transfer-syntax-name-list": [BER],
    }
    for pci, name in ((1, ACSE_AS), (3, ID_AS_MTA_RTSE), (5, ID_AS_MTSE))
]

RTORQ_VALUE = ("rtorq-apdu", {"connectionDataRQ": ("open", BIND_ARGUMENT)})

AARQ_VALUE = (
    "aarq",
    {
        "aSO-context-name": ID_AC_MTS_TRANSFER,
        "user-information": [
            {"indirect-reference": 3, "encoding": ("single-ASN1-type", RTORQ)},
        ],
    },
)

CP_VALUE = {
    "mode-selector": {"mode-value": 1},
    "normal-mode-parameters": {
        "presentation-context-definition-list": CONTEXT_LIST_VALUE,
        "user-data": (
            "fully-encoded-data",
            [
                {
                    "presentation-context-identifier": 1,
                    "presentation-data-values": ("single-ASN1-type", AARQ),
                }
            ],
        ),
    },
}

# (module, type, value, bytes): encode(value) == bytes.
ROUND_TRIPS: list[tuple[str, str, Any, bytes]] = [
    # ACSE (X.227): release, abort, association
    (ACSE, "ACSE-apdu", ("rlrq", {"reason": 0}), _hex("6203 800100")),
    (ACSE, "ACSE-apdu", ("rlre", {"reason": 0}), _hex("6303 800100")),
    (ACSE, "ACSE-apdu", ("abrt", {"abort-source": 0}), _hex("6403 800100")),
    (
        ACSE,
        "ACSE-apdu",
        ("abrt", {"abort-source": 1, "abort-diagnostic": "protocol-error"}),
        _hex("6406 800101 810102"),
    ),
    (ACSE, "ACSE-apdu", AARQ_VALUE, AARQ),
    (
        ACSE,
        "ACSE-apdu",
        (
            "aare",
            {
                "aSO-context-name": ID_AC_MTS_TRANSFER,
                "result": 1,  # rejected-permanent
                "result-source-diagnostic": ("service-user", 1),  # no-reason-given
                "user-information": [
                    {
                        "indirect-reference": 3,
                        "encoding": ("single-ASN1-type", _hex("b207 a105 b203020102")),
                    }
                ],
            },
        ),
        _hex(
            "6126",
            "a106 060456000106",
            "a203 020101",  # result [2]
            "a305 a103020101",  # result-source-diagnostic [3] { service-user [1] }
            "be10 280e 020103 a009 b207a105b203020102",
        ),
    ),
    (
        ACSE,
        "Association-information",  # the X.227 (1988) name
        [{"direct-reference": BER, "encoding": ("octet-aligned", b"\x01\x02")}],
        _hex("300a 2808 06025101 81020102"),  # octet-aligned [1] IMPLICIT
    ),
    # Presentation (X.226): normal mode
    (PRES, "CP-type", CP_VALUE, CP_TYPE),
    (
        PRES,
        "CPA-PPDU",
        {
            "mode-selector": {"mode-value": 1},
            "normal-mode-parameters": {
                "presentation-context-definition-result-list": [
                    {"result": 0, "transfer-syntax-name": BER} for _ in range(3)
                ],
            },
        },
        _hex(
            "3124",
            "a003800101",
            "a21d a51b",  # presentation-context-definition-result-list [5]
            "3007 800100 81025101",  # acceptance, BER (three times)
            "3007 800100 81025101",
            "3007 800100 81025101",
        ),
    ),
    (
        PRES,
        "CPR-PPDU",
        ("normal-mode-parameters", {"provider-reason": 1}),  # temporary-congestion
        _hex("3003 8a0101"),
    ),
    (
        PRES,
        "User-data",
        (
            "fully-encoded-data",
            [
                {
                    "presentation-context-identifier": 1,
                    "presentation-data-values": ("single-ASN1-type", _hex("6203800100")),
                }
            ],
        ),
        _hex("610c 300a 020101 a005 6203800100"),
    ),
    (
        PRES,
        "User-data",
        (
            "fully-encoded-data",
            [
                {
                    "presentation-context-identifier": 5,
                    "presentation-data-values": ("octet-aligned", b"\xaa\xbb"),
                }
            ],
        ),
        _hex("6109 3007 020105 8102aabb"),
    ),
    (PRES, "User-data", ("simply-encoded-data", b"\x01"), _hex("400101")),  # primitive
    (
        PRES,
        "Abort-type",
        (
            "aru-ppdu",
            (
                "normal-mode-parameters",
                {
                    "presentation-context-identifier-list": [
                        {"presentation-context-identifier": 1, "transfer-syntax-name": BER},
                    ],
                },
            ),
        ),
        _hex("a00b a009 3007 020101 06025101"),
    ),
    (
        PRES,
        "Abort-type",
        ("arp-ppdu", {"provider-reason": 1, "event-identifier": 3}),
        _hex("3006 800101 810103"),
    ),
    # Presentation, X.410-1984 mode: the RTORQ is the CP's own parameter, no [16] wrapper
    (
        PRES,
        "CP-type",
        {
            "mode-selector": {"mode-value": 0},
            "x410-mode-parameters": {
                "connectionDataRQ": ("open", BIND_ARGUMENT[2:]),
                "applicationProtocol": 12,
            },
        },
        _hex("3120 a003800100 a119 a314 a012", BIND_ARGUMENT[2:].hex(), "84010c"),
    ),
    # RTSE (X.228)
    (RTSE, "RTSE-apdus", RTORQ_VALUE, RTORQ),
    (
        RTSE,
        "RTSE-apdus",
        (
            "rtorq-apdu",
            {
                "checkpointSize": 63,
                "windowSize": 5,
                "dialogueMode": 1,  # twa
                "connectionDataRQ": ("open", BIND_ARGUMENT),
            },
        ),
        _hex("b021 80013f 810105 820101 a316a014", BIND_ARGUMENT.hex()),
    ),
    (
        RTSE,
        "RTSE-apdus",
        ("rtoac-apdu", {"connectionDataAC": ("open", _hex("b1020500"))}),
        _hex("b108 a206 a004 b1020500"),
    ),
    (
        RTSE,
        "RTSE-apdus",
        ("rtorj-apdu", {"userDataRJ": _hex("b203020102")}),
        _hex("b207 a105 b203020102"),
    ),
    (RTSE, "RTSE-apdus", ("rtorj-apdu", {"refuseReason": 0}), _hex("b203 800100")),
    (RTSE, "RTSE-apdus", ("rttp-apdu", 0), _hex("020100")),
    (RTSE, "RTSE-apdus", ("rttr-apdu", b"\x28\x00"), _hex("04022800")),
    (RTSE, "RTSE-apdus", ("rtab-apdu", {"abortReason": 6}), _hex("b603 800106")),
    (
        RTSE,
        "RTORQapdu",
        {
            "connectionDataRQ": (
                "recover",
                {
                    "callingSSuserReference": ("octetString", b"ref"),
                    "commonReference": datetime.datetime(2005, 10, 1, 14, 48, 52),
                },
            )
        },
        _hex("3118 a316 a114 0403726566 170d3035313030313134343835325a"),
    ),
    # ROS (X.880)
    (
        ROS,
        "ROS",
        ("invoke", {"invokeId": ("present", 1), "opcode": ("local", 3), "argument": b"\x05\x00"}),
        _hex("a108 020101 020103 0500"),
    ),
    (
        ROS,
        "ROS",
        (
            "invoke",
            {
                "invokeId": ("present", 2),
                "linkedId": ("present", 1),
                "opcode": ("global", ID_AC_MTS_TRANSFER),
            },
        ),
        _hex("a10c 020102 800101 060456000106"),
    ),
    (
        ROS,
        "ROS",
        (
            "returnResult",
            {"invokeId": ("present", 1), "result": {"opcode": ("local", 3), "result": b"\x05\x00"}},
        ),
        _hex("a20a 020101 3005 020103 0500"),
    ),
    (ROS, "ROS", ("returnResult", {"invokeId": ("absent", None)}), _hex("a202 0500")),
    (
        ROS,
        "ROS",
        ("returnError", {"invokeId": ("present", 1), "errcode": ("local", -1)}),
        _hex("a306 020101 0201ff"),
    ),
    (
        ROS,
        "ROS",
        ("reject", {"invokeId": ("present", 1), "problem": ("invoke", 1)}),
        _hex("a406 020101 810101"),
    ),
    (ROS, "Bind", ("bind-invoke", BIND_ARGUMENT[2:]), BIND_ARGUMENT),
    (ROS, "Bind", ("bind-error", _hex("020102")), _hex("b203020102")),
    (ROS, "Unbind", ("unbind-result", _hex("0500")), _hex("b4020500")),
]


@pytest.mark.parametrize(
    ("module", "type_name", "value", "data"),
    ROUND_TRIPS,
    ids=[f"{t}-{i}" for i, (_, t, _, _) in enumerate(ROUND_TRIPS)],
)
def test_round_trip(module: str, type_name: str, value: Any, data: bytes) -> None:
    assert asn1.encode(module, type_name, value).hex() == data.hex()
    assert asn1.encode(module, type_name, asn1.decode(module, type_name, data)) == data


def test_cp_type_decodes_to_the_context_list_and_the_aarq() -> None:
    value = asn1.decode(PRES, "CP-type", CP_TYPE)
    normal = value["normal-mode-parameters"]
    assert normal["presentation-context-definition-list"] == CONTEXT_LIST_VALUE
    pdv = normal["user-data"][1][0]
    assert pdv["presentation-context-identifier"] == 1
    assert asn1.decode(ACSE, "ACSE-apdu", pdv["presentation-data-values"][1]) == (
        "aarq",
        {**AARQ_VALUE[1], "protocol-version": (b"\x80", 1)},  # the DEFAULT, filled in
    )


def test_aarq_user_information_leads_to_the_bind_argument() -> None:
    external = asn1.decode(ACSE, "ACSE-apdu", AARQ)[1]["user-information"][0]
    assert external["indirect-reference"] == 3
    kind, rtorq = asn1.decode(RTSE, "RTSE-apdus", external["encoding"][1])
    assert kind == "rtorq-apdu"
    assert rtorq["connectionDataRQ"] == ("open", BIND_ARGUMENT)
    assert asn1.decode(ROS, "Bind", BIND_ARGUMENT) == ("bind-invoke", BIND_ARGUMENT[2:])


def test_rtorq_defaults_as_asn1tools_reports_them() -> None:
    """Absent DEFAULT members come back filled in; a named-number default by its name.

    A dialogueMode sent explicitly as 0 (as a real peer does) stays 0 and is written
    again; an absent one reads "monologue" and stays absent.
    """
    absent = asn1.decode(RTSE, "RTSE-apdus", RTORQ)[1]
    assert absent["checkpointSize"] == 0
    assert absent["windowSize"] == 3
    assert absent["dialogueMode"] == "monologue"
    explicit = _hex("b01b 820100 a316a014", BIND_ARGUMENT.hex())
    value = asn1.decode(RTSE, "RTSE-apdus", explicit)
    assert value[1]["dialogueMode"] == 0
    assert asn1.encode(RTSE, "RTSE-apdus", value) == explicit


@pytest.mark.parametrize(
    ("module", "type_name", "indefinite", "definite"),
    [
        (ACSE, "ACSE-apdu", "6280 800100 0000", "6203800100"),
        (
            PRES,
            "User-data",
            "6180 3080 020101 a080 6203800100 0000 0000 0000",
            "610c300a020101a0056203800100",
        ),
        (
            RTSE,
            "RTSE-apdus",
            "b080 a380 a080" + BIND_ARGUMENT.hex() + "0000 0000 0000",
            RTORQ.hex(),
        ),
        # An extensible SEQUENCE in the published module (see ACSE-1.asn), nested indefinite;
        # the RTORQ inside is an open type, kept as sent (here definite).
        (
            ACSE,
            "ACSE-apdu",
            "6080 a180 060456000106 0000 be80 2880 020103 a080" + RTORQ.hex() + "0000" * 4,
            AARQ.hex(),
        ),
    ],
)
def test_indefinite_lengths_decode(
    module: str, type_name: str, indefinite: str, definite: str
) -> None:
    value = asn1.decode(module, type_name, bytes.fromhex(indefinite))
    assert asn1.encode(module, type_name, value).hex() == definite


@pytest.mark.parametrize(
    ("module", "type_name", "data"),
    [
        (ACSE, "ACSE-apdu", "620380"),  # truncated
        (PRES, "CP-type", "3003a00180"),  # mode-selector cut short
        (RTSE, "RTSE-apdus", "b90100"),  # [25]: no such APDU
        (ROS, "ROS", "a503020101"),  # [5]: no such PDU
    ],
)
def test_malformed_input_is_a_decode_error(module: str, type_name: str, data: str) -> None:
    with pytest.raises(DecodeError) as info:
        asn1.decode(module, type_name, bytes.fromhex(data))
    assert info.value.where == type_name


def test_unknown_apdu_of_an_extensible_choice_reads_as_none() -> None:
    """ACSE-apdu is extensible: an unknown alternative ([APPLICATION 9]) is not an error
    to asn1tools but comes back as (None, None); the ACSE layer must refuse it."""
    assert asn1.decode(ACSE, "ACSE-apdu", _hex("6903800100")) == (None, None)


def test_bad_user_information_is_an_encode_error_not_left_out() -> None:
    """Why ACSE-1.asn has no extension markers in its APDUs: asn1tools would drop a
    user-information that fails to encode and send the AARQ without it."""
    value = ("aarq", {**AARQ_VALUE[1], "user-information": [{"indirect-reference": 3}]})
    with pytest.raises(EncodeError):
        asn1.encode(ACSE, "ACSE-apdu", value)


def test_trailing_bytes_are_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="1 trailing byte"):
        asn1.decode(ACSE, "ACSE-apdu", _hex("620380010000"))


def test_object_identifier_values_match_the_contexts_in_use() -> None:
    """The OID value assignments are kept; acse-as-id is the ACSE context's abstract syntax."""
    parsed = asn1tools.parse_files([str(asn1.ASN1_DIR / f"{ACSE}.asn")])[ACSE]["values"]
    arcs = parsed["acse-as-id"]["value"]
    assert arcs[0] == "joint-iso-itu-t"  # 2
    assert [number for _, number in arcs[1:]] == [2, 1, 0, 1]
    assert ".".join(["2", *(str(n) for _, n in arcs[1:])]) == ACSE_AS
