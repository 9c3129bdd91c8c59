"""ACSE APDUs, kernel (X.227): p1.osi.acse.

Tables of values and bytes, the APDUs of a real MTA's captures decoded and re-encoded
byte for byte, our encodings read back by the compiled ACSE-1 module, property round
trips and mutated input.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p1 import asn1, ber
from p1.association.mtabind import MTABindError, decode_bind_error, unwrap_bind_error
from p1.errors import DecodeError, EncodeError
from p1.osi import rtse
from p1.osi.acse import (
    ACCEPTED,
    NO_REASON_GIVEN,
    NULL_DIAGNOSTIC,
    REJECTED_PERMANENT,
    RELEASE_NORMAL,
    SERVICE_PROVIDER,
    SERVICE_USER,
    Aare,
    Aarq,
    AbortDiagnostic,
    Abrt,
    AcseApdu,
    Diagnostic,
    External,
    ProviderDiagnostic,
    ReleaseResponseReason,
    Rlre,
    Rlrq,
    decode_acse,
    decode_external,
    encode_acse,
    encode_external,
)
from p1.osi.presentation import BER, RTSE_CONTEXT, Encoding
from tests.profiles import examples
from tests.support import golden

ACSE = "ACSE-1"
MTS_TRANSFER = "2.6.0.1.6"
SUCCESS = "x400-ping-success"
REFUSE = "x400-ping-refuse"


def _hex(*parts: str) -> bytes:
    return bytes.fromhex("".join(parts))


BIND_ARGUMENT = _hex("b012 a110 80044d544131 a108 1606736563726574")
RTORQ = _hex("b018 a316 a014", BIND_ARGUMENT.hex())
RTAB = _hex("b603 800106")  # userError
AP_TITLE = _hex("06032b0c01")  # ap-title-form2 1.3.12.1
AE_QUALIFIER = _hex("020105")  # aso-qualifier-form2 5
PASSWORD = _hex("8006736563726574")  # Authentication-value charstring "secret"


def _rtse_external(value: bytes) -> External:
    return External(value=value, indirect_reference=RTSE_CONTEXT)


TABLE: list[tuple[AcseApdu, bytes]] = [
    (
        Aarq(application_context=MTS_TRANSFER, user_information=(_rtse_external(RTORQ),)),
        _hex("602b a106 060456000106 be21 281f 020103 a01a", RTORQ.hex()),
    ),
    (
        Aarq(
            application_context=MTS_TRANSFER,
            protocol_version=1,
            called_ap_title=AP_TITLE,
            called_ae_qualifier=AE_QUALIFIER,
            called_ap_invocation=7,
            called_ae_invocation=8,
            calling_ap_title=AP_TITLE,
            calling_ae_qualifier=AE_QUALIFIER,
            calling_ap_invocation=9,
            calling_ae_invocation=10,
            acse_requirements=1,  # authentication
            mechanism_name="2.5.5.1",
            authentication_value=PASSWORD,
            implementation_information="aiox400",
        ),
        _hex(
            "6054",
            "80020780",  # protocol-version {version1}
            "a106 060456000106",
            "a205 06032b0c01 a303 020105 a403 020107 a503 020108",  # called-*
            "a605 06032b0c01 a703 020105 a803 020109 a903 02010a",  # calling-*
            "8a020780",  # sender-acse-requirements {authentication}
            "8b03 550501",  # mechanism-name
            "ac08 8006736563726574",  # calling-authentication-value [12] EXPLICIT
            "9d07 61696f78343030",  # implementation-information [29]
        ),
    ),
    (
        Aare(
            application_context=MTS_TRANSFER,
            result=ACCEPTED,
            diagnostic=Diagnostic(source=SERVICE_USER, value=NULL_DIAGNOSTIC),
            user_information=(
                External(
                    value=_hex("b108 a206 a004 b1020500"),
                    direct_reference=BER,
                    indirect_reference=3,
                ),
            ),
        ),
        _hex(
            "612b a106 060456000106 a203 020100 a305 a103020100",
            "be15 2813 06025101 020103 a00a b108a206a004b1020500",
        ),
    ),
    (
        Aare(
            application_context=MTS_TRANSFER,
            result=REJECTED_PERMANENT,
            diagnostic=Diagnostic(
                source=SERVICE_PROVIDER, value=ProviderDiagnostic.NO_COMMON_ACSE_VERSION
            ),
            responding_ap_title=AP_TITLE,
            responding_ae_qualifier=AE_QUALIFIER,
            responding_ap_invocation=1,
            responding_ae_invocation=2,
            acse_requirements=0,
            mechanism_name="2.5.5.1",
            authentication_value=PASSWORD,
        ),
        _hex(
            "613c a106 060456000106 a203 020101 a305 a203020102",
            "a405 06032b0c01 a503 020105 a603 020101 a703 020102",
            "880100 8903 550501 aa08 8006736563726574",
        ),
    ),
    (Rlrq(reason=RELEASE_NORMAL), _hex("6203 800100")),
    (Rlre(reason=ReleaseResponseReason.NOT_FINISHED), _hex("6303 800101")),
    (Rlrq(), _hex("6200")),
    (
        Rlre(user_information=(External(value=b"\x01\x02", encoding=Encoding.OCTET_ALIGNED),)),
        _hex("6308 be06 2804 81020102"),
    ),
    (Abrt(source=SERVICE_USER), _hex("6403 800100")),
    (
        Abrt(source=SERVICE_PROVIDER, diagnostic=AbortDiagnostic.PROTOCOL_ERROR),
        _hex("6406 800101 810102"),
    ),
    (
        Abrt(source=SERVICE_USER, user_information=(_rtse_external(RTAB),)),
        _hex("6411 800100 be0c 280a 020103 a005 b603800106"),
    ),
]
IDS = [f"{type(apdu).__name__}-{index}" for index, (apdu, _) in enumerate(TABLE)]


@pytest.mark.parametrize(("apdu", "data"), TABLE, ids=IDS)
def test_table(apdu: AcseApdu, data: bytes) -> None:
    assert encode_acse(apdu).hex() == data.hex()
    assert decode_acse(data) == apdu


# --- the compiled module reads what we write ------------------------------------------

_KINDS = {Aarq: "aarq", Aare: "aare", Rlrq: "rlrq", Rlre: "rlre", Abrt: "abrt"}
# attribute suffix -> the ASN.1 type (and the suffix of the member name)
_RAW = {"ap_title": "AP-title", "ae_qualifier": "AE-qualifier"}
_SIDES = {Aarq: ("called", "calling"), Aare: ("responding",)}


def _bits(value: int) -> tuple[bytes, int]:
    length = value.bit_length()
    return ber.numbers_to_bits([n for n in range(length) if value >> n & 1], length), length


def _asn1_external(external: External) -> dict[str, Any]:
    out: dict[str, Any] = {"encoding": (external.encoding.value, external.value)}
    if external.encoding is Encoding.ARBITRARY:
        out["encoding"] = ("arbitrary", (external.value, 8 * len(external.value)))
    if external.direct_reference is not None:
        out["direct-reference"] = external.direct_reference
    if external.indirect_reference is not None:
        out["indirect-reference"] = external.indirect_reference
    if external.descriptor is not None:
        out["data-value-descriptor"] = external.descriptor
    return out


def _asn1_association(apdu: Aarq | Aare, out: dict[str, Any]) -> None:
    version = apdu.protocol_version
    out["protocol-version"] = _bits(1 if version is None else version)
    out["aSO-context-name"] = apdu.application_context
    for side in _SIDES[type(apdu)]:
        for suffix, type_name in _RAW.items():
            raw = getattr(apdu, f"{side}_{suffix}")
            if raw is not None:
                out[f"{side}-{type_name}"] = asn1.decode(ACSE, type_name, raw)
        for letters in ("AP", "AE"):
            number = getattr(apdu, f"{side}_{letters.lower()}_invocation")
            if number is not None:
                out[f"{side}-{letters}-invocation-identifier"] = number
    requirements = "sender" if isinstance(apdu, Aarq) else "responder"
    authentication = "calling" if isinstance(apdu, Aarq) else "responding"
    if apdu.acse_requirements is not None:
        out[f"{requirements}-acse-requirements"] = _bits(apdu.acse_requirements)
    if apdu.mechanism_name is not None:
        out["mechanism-name"] = apdu.mechanism_name
    if apdu.authentication_value is not None:
        value = asn1.decode(ACSE, "Authentication-value", apdu.authentication_value)
        out[f"{authentication}-authentication-value"] = value
    if apdu.implementation_information is not None:
        out["implementation-information"] = apdu.implementation_information
    if isinstance(apdu, Aare):
        out["result"] = apdu.result
        out["result-source-diagnostic"] = (apdu.diagnostic.source.value, apdu.diagnostic.value)


def _asn1_value(apdu: AcseApdu) -> tuple[str, dict[str, Any]]:
    out: dict[str, Any] = {}
    if isinstance(apdu, Aarq | Aare):
        _asn1_association(apdu, out)
    elif isinstance(apdu, Abrt):
        out["abort-source"] = 0 if apdu.source is SERVICE_USER else 1
        if apdu.diagnostic is not None:
            out["abort-diagnostic"] = (
                AbortDiagnostic(apdu.diagnostic).name.lower().replace("_", "-")
            )
    elif apdu.reason is not None:
        out["reason"] = apdu.reason
    if apdu.user_information:
        out["user-information"] = [_asn1_external(e) for e in apdu.user_information]
    return _KINDS[type(apdu)], out


@pytest.mark.parametrize(("apdu", "data"), TABLE, ids=IDS)
def test_compiled_module_reads_our_encoding(apdu: AcseApdu, data: bytes) -> None:
    assert asn1.decode(ACSE, "ACSE-apdu", encode_acse(apdu)) == _asn1_value(apdu)


# --- golden captures ------------------------------------------------------------------


def _acse(capture: str, spdu: str) -> bytes:
    exchange = next(e for e in golden.decode_capture(capture) if e.spdu == spdu)
    return exchange.pdu("ACSE-apdu").data


@pytest.mark.parametrize("capture", [SUCCESS, REFUSE])
def test_golden_aarq(capture: str) -> None:
    data = _acse(capture, "CN")
    aarq = decode_acse(data)
    assert isinstance(aarq, Aarq)
    assert aarq.application_context == MTS_TRANSFER
    assert aarq.protocol_version is None and aarq.calling_ap_title is None
    (external,) = aarq.user_information
    assert (external.direct_reference, external.indirect_reference) == (BER, RTSE_CONTEXT)
    assert external.encoding is Encoding.SINGLE_ASN1_TYPE
    assert external.value[:6] == _hex(
        "b0 30 80013f 82" if capture == SUCCESS else "b0 28 80013f 82"
    )
    assert isinstance(rtse.decode_rtse(external.value), rtse.Rtorq)
    assert encode_acse(aarq) == data


def test_golden_aare_accepted() -> None:
    data = _acse(SUCCESS, "AC")
    aare = decode_acse(data)
    assert isinstance(aare, Aare)
    assert (aare.application_context, aare.result) == (MTS_TRANSFER, ACCEPTED)
    assert aare.diagnostic == Diagnostic(source=SERVICE_USER, value=NULL_DIAGNOSTIC)
    (external,) = aare.user_information
    assert external.value[:5] == _hex("b12b 80013f")  # the RTOAC
    assert encode_acse(aare) == data


def test_golden_aare_rejected_carries_an_authentication_error() -> None:
    data = _acse(REFUSE, "RF")
    aare = decode_acse(data)
    assert isinstance(aare, Aare)
    assert aare.result == REJECTED_PERMANENT
    assert aare.diagnostic == Diagnostic(source=SERVICE_USER, value=NO_REASON_GIVEN)
    (external,) = aare.user_information
    rtorj = rtse.decode_rtse(external.value)
    assert isinstance(rtorj, rtse.Rtorj) and rtorj.user_data is not None
    error = decode_bind_error(unwrap_bind_error(rtorj.user_data))
    assert error is MTABindError.AUTHENTICATION_ERROR
    assert encode_acse(aare) == data


def test_golden_release() -> None:
    assert decode_acse(_acse(SUCCESS, "FN")) == Rlrq(reason=RELEASE_NORMAL)
    assert decode_acse(_acse(SUCCESS, "DN")) == Rlre(reason=RELEASE_NORMAL)
    assert encode_acse(Rlrq(reason=RELEASE_NORMAL)) == _hex("6203800100")
    assert encode_acse(Rlre(reason=RELEASE_NORMAL)) == _hex("6303800100")


@pytest.mark.parametrize(
    ("capture", "spdu"), [(SUCCESS, "CN"), (SUCCESS, "AC"), (REFUSE, "CN"), (REFUSE, "RF")]
)
def test_every_byte_of_the_golden_apdus_corrupted(capture: str, spdu: str) -> None:
    original = _acse(capture, spdu)
    for index in range(len(original)):
        for octet in (0x00, 0x80, 0xFF):
            wire = bytearray(original)
            wire[index] = octet
            with contextlib.suppress(DecodeError):
                decode_acse(bytes(wire))


# --- EXTERNAL -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("external", "data"),
    [
        (
            External(value=RTAB, indirect_reference=3),
            _hex("280a 020103 a005 b603800106"),
        ),
        (
            External(
                value=b"\xaa",
                direct_reference=BER,
                indirect_reference=5,
                descriptor="ab",
                encoding=Encoding.OCTET_ALIGNED,
            ),
            _hex("280e 06025101 020105 07026162 8101aa"),
        ),
        (External(value=b"\xaa", encoding=Encoding.ARBITRARY), _hex("2804 820200aa")),
    ],
)
def test_externals(external: External, data: bytes) -> None:
    assert encode_external(external) == data
    assert decode_external(data) == external
    assert asn1.decode(ACSE, "EXTERNAL-type", data) == _asn1_external(external)


def test_external_forms_received() -> None:
    indefinite = _hex("2880 020103 a080 b6038001 06 0000 0000")
    assert decode_external(indefinite) == External(value=RTAB, indirect_reference=3)
    segmented = _hex("280c 020105 a107 0402aabb 0401cc")
    assert decode_external(segmented).value == b"\xaa\xbb\xcc"


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ("2800", "no encoding"),
        ("2805 020103 0500", "unknown encoding [UNIVERSAL 5]"),
        ("280b 020103 06025101 a002 0500", "unexpected [UNIVERSAL 6]"),  # out of order
        ("280a 020103 020103 a0020500", "unexpected [UNIVERSAL 2]"),  # twice
        ("3003 a00105", "expected [UNIVERSAL 8]"),
    ],
)
def test_malformed_externals(data: str, why: str) -> None:
    with pytest.raises(DecodeError, match=re.escape(why)):
        decode_external(bytes.fromhex(data))


# --- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "where", "why"),
    [
        ("6000", "AARQ-apdu", "missing aSO-context-name"),
        ("6108 a106060456000106", "AARE-apdu", "missing result"),
        ("6400", "ABRT-apdu", "missing abort-source"),
        ("6403 800102", "ABRT-apdu.abort-source", "2 is outside 0..1"),
        (
            "6112 a106060456000106 a203020100 a303a40100",
            "AARE-apdu.result-source-diagnostic",
            "unexpected [4]",
        ),
        (
            "600c a106060456000106 ad02 3000",
            "AARQ-apdu.aSO-context-name-list",
            "application context negotiation is not supported",
        ),
        ("6204 ae020101", "RLRQ-apdu.asoi-identifier", "higher-level association"),
        ("6503 800100", "ACSE-apdu", "A-DT (higher-level association) is not supported"),
        ("6903 800100", "ACSE-apdu", "[APPLICATION 9]: unknown APDU"),
        ("6203 9f1f00", "RLRQ-apdu", "unexpected [31]"),
        ("6205 800100 8001", "RLRQ-apdu", "truncated"),
        ("620380010000", "ACSE-apdu", "1 trailing byte"),
        ("6208 a106 0604 56000106", "RLRQ-apdu", "unexpected [1]"),
    ],
)
def test_decode_errors_name_the_field(data: str, where: str, why: str) -> None:
    with pytest.raises(DecodeError, match=re.escape(why)) as info:
        decode_acse(bytes.fromhex(data))
    if why != "truncated":
        assert info.value.where == where


@pytest.mark.parametrize(
    ("apdu", "why"),
    [
        (Aarq(application_context="mts"), "not a dotted"),
        (Aarq(application_context=MTS_TRANSFER, called_ap_title=b"\x06\x05"), "not one BER value"),
        (Aarq(application_context=MTS_TRANSFER, implementation_information="\u20ac"), "ISO 8859-1"),
        (
            Aare(application_context=MTS_TRANSFER, result=0, diagnostic=None),  # type: ignore[arg-type]
            "not a Diagnostic",
        ),
        (Abrt(source=0), "not a Source"),  # type: ignore[arg-type]
        (Rlrq(user_information=(b"\x05\x00",)), "not an External"),  # type: ignore[arg-type]
        (Rlrq(user_information=(External(value=b"\x05"),)), "not one BER value"),
        ("rlrq", "not an ACSE APDU"),
    ],
)
def test_encode_errors(apdu: AcseApdu, why: str) -> None:
    with pytest.raises(EncodeError, match=re.escape(why)):
        encode_acse(apdu)


# --- properties -----------------------------------------------------------------------

oids = st.builds(
    lambda first, second, rest: ".".join(map(str, (first, second, *rest))),
    st.integers(0, 2),
    st.integers(0, 39),
    st.lists(st.integers(0, 2**40), max_size=4),
)
small = st.none() | st.integers(-(2**31), 2**31)
printable = st.text("ABCXYZabcxyz0189 '()+,-./:=?", max_size=12)
ap_titles = st.none() | st.one_of(
    oids.map(lambda o: ber.tlv(ber.OBJECT_IDENTIFIER, ber.oid_contents(o, "t"))),
    printable.map(lambda t: ber.tlv(ber.PRINTABLE_STRING, t.encode())),
)
ae_qualifiers = st.none() | st.one_of(
    st.integers(-1000, 1000).map(lambda n: ber.tlv(ber.INTEGER, ber.int_contents(n))),
    printable.map(lambda t: ber.tlv(ber.PRINTABLE_STRING, t.encode())),
)
authentication = st.none() | printable.map(lambda t: ber.tlv(ber.context(0), t.encode()))
flags = st.none() | st.integers(0, 15)
graphic = st.none() | st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=10)
externals = st.lists(
    st.one_of(
        st.builds(
            External,
            value=st.binary(max_size=20).map(lambda b: ber.tlv(ber.OCTET_STRING, b)),
            direct_reference=st.none() | oids,
            indirect_reference=small,
            descriptor=graphic,
        ),
        st.builds(
            External,
            value=st.binary(max_size=20),
            indirect_reference=small,
            encoding=st.sampled_from([Encoding.OCTET_ALIGNED, Encoding.ARBITRARY]),
        ),
    ),
    max_size=2,
).map(tuple)
diagnostics = st.one_of(
    st.builds(Diagnostic, source=st.just(SERVICE_USER), value=st.integers(0, 14)),
    st.builds(Diagnostic, source=st.just(SERVICE_PROVIDER), value=st.integers(0, 2)),
)
apdus = st.one_of(
    st.builds(
        Aarq,
        application_context=oids,
        protocol_version=flags,
        called_ap_title=ap_titles,
        called_ae_qualifier=ae_qualifiers,
        called_ap_invocation=small,
        called_ae_invocation=small,
        calling_ap_title=ap_titles,
        calling_ae_qualifier=ae_qualifiers,
        calling_ap_invocation=small,
        calling_ae_invocation=small,
        acse_requirements=flags,
        mechanism_name=st.none() | oids,
        authentication_value=authentication,
        implementation_information=graphic,
        user_information=externals,
    ),
    st.builds(
        Aare,
        application_context=oids,
        result=st.integers(0, 2),
        diagnostic=diagnostics,
        protocol_version=flags,
        responding_ap_title=ap_titles,
        responding_ae_qualifier=ae_qualifiers,
        responding_ap_invocation=small,
        responding_ae_invocation=small,
        acse_requirements=flags,
        mechanism_name=st.none() | oids,
        authentication_value=authentication,
        implementation_information=graphic,
        user_information=externals,
    ),
    st.builds(Rlrq, reason=st.none() | st.sampled_from([0, 1, 30]), user_information=externals),
    st.builds(Rlre, reason=st.none() | st.sampled_from([0, 1, 30]), user_information=externals),
    st.builds(
        Abrt,
        source=st.sampled_from([SERVICE_USER, SERVICE_PROVIDER]),
        diagnostic=st.none() | st.integers(1, 6),
        user_information=externals,
    ),
)


@settings(max_examples=examples(3))
@given(apdus)
def test_round_trip_and_compiled_module_agree(apdu: AcseApdu) -> None:
    data = encode_acse(apdu)
    assert decode_acse(data) == apdu
    assert asn1.decode(ACSE, "ACSE-apdu", data) == _asn1_value(apdu)


@settings(max_examples=examples(5))
@given(st.sampled_from([data for _, data in TABLE]), st.data())
def test_mutated_apdus_give_a_value_or_a_decode_error(original: bytes, data: st.DataObject) -> None:
    wire = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        wire[data.draw(st.integers(0, len(wire) - 1))] = data.draw(st.integers(0, 255))
    wire = wire[: data.draw(st.integers(0, len(wire)))]
    try:
        apdu = decode_acse(bytes(wire))
    except DecodeError:
        return
    with contextlib.suppress(EncodeError):
        assert decode_acse(encode_acse(apdu)) == apdu


@pytest.mark.parametrize(("apdu", "data"), TABLE, ids=IDS)
def test_every_truncation_is_a_decode_error(apdu: AcseApdu, data: bytes) -> None:
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            decode_acse(data[:cut])


def test_decoders_accept_indefinite_lengths() -> None:
    indefinite = _hex("6080 a180 060456000106 0000 be80 2880 020103 a080", RTORQ.hex(), "0000" * 4)
    assert decode_acse(indefinite) == TABLE[0][0]


def test_constants() -> None:
    assert (ACCEPTED, REJECTED_PERMANENT, NULL_DIAGNOSTIC, NO_REASON_GIVEN) == (0, 1, 0, 1)
    decoded: Callable[[bytes], object] = decode_acse
    assert decoded(_hex("6403800101")) == Abrt(source=SERVICE_PROVIDER)
