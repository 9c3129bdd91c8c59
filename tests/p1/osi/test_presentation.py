"""Presentation PPDUs, normal mode, kernel (X.226 clause 8): p1.osi.presentation.

Tables of values and bytes, the PPDUs of a real MTA's captures decoded and re-encoded,
our encodings read back by the compiled ISO8823-PRESENTATION module, negotiate(), the
one-copy transfer path, property round trips and mutated input.
"""

from __future__ import annotations

import contextlib
import re
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p1 import asn1, ber
from p1.errors import DecodeError, EncodeError
from p1.osi.presentation import (
    ACSE_AS,
    ACSE_CONTEXT,
    ARP_PROTOCOL_ERROR,
    BER,
    MTA_RTSE_AS,
    MTSE_AS,
    MTSE_CONTEXT,
    P1_CONTEXTS,
    RTSE_CONTEXT,
    AbortReason,
    AcceptPpdu,
    ArpPpdu,
    AruPpdu,
    ConnectPpdu,
    ContextDefinition,
    ContextReason,
    ContextResult,
    Encoding,
    Pdv,
    ProviderReason,
    RefusePpdu,
    Result,
    decode_abort,
    decode_arp,
    decode_aru,
    decode_cp,
    decode_cpa,
    decode_cpr,
    decode_user_data,
    encode_arp,
    encode_aru,
    encode_cp,
    encode_cpa,
    encode_cpr,
    encode_pdv,
    encode_user_data,
    negotiate,
)
from tests.profiles import examples
from tests.support import golden

PRES = "ISO8823-PRESENTATION"
SUCCESS = "x400-ping-success"
REFUSE = "x400-ping-refuse"
PER = "2.1.2.1"  # packed encoding rules, basic aligned: a transfer syntax we do not speak
RLRQ = bytes.fromhex("6203800100")
SUPPORTED = {ACSE_AS: BER, MTA_RTSE_AS: BER, MTSE_AS: BER}


def _hex(*parts: str) -> bytes:
    return bytes.fromhex("".join(parts))


CONTEXT_LIST = _hex(
    "a433",
    "300f 020101 060452010001 3004 06025101",
    "300f 020103 06045600020c 3004 06025101",
    "300f 020105 060456000207 3004 06025101",
)
ACCEPTED_3 = _hex("a51b", "3007 800100 81025101" * 3)

# (value, bytes, decode): decode(bytes) == value and encode(value) == bytes.
TABLE: list[tuple[object, bytes, Callable[[bytes], object]]] = [
    (
        ConnectPpdu(contexts=P1_CONTEXTS, user_data=(Pdv(ACSE_CONTEXT, RLRQ),)),
        _hex("314a a003800101 a243", CONTEXT_LIST.hex(), "610c 300a 020101 a005 6203800100"),
        decode_cp,
    ),
    (
        ConnectPpdu(
            protocol_version=1,
            calling_selector=b"\x00\x01",
            called_selector=b"\x00\x02",
            contexts=(ContextDefinition(identifier=1, abstract_syntax=ACSE_AS),),
            presentation_requirements=0,
            user_session_requirements=0x0249,  # half-duplex, minor-sync, activity, exceptions
            protocol_options=0,
        ),
        _hex(
            "3133 a003800101 a22c",
            "80020780",  # protocol-version {version-1}
            "81020001 82020002",  # selectors
            "a411 300f 020101 060452010001 3004 06025101",
            "880100",  # presentation-requirements {}
            "8903069240",  # user-session-requirements: bits 0, 3, 6, 9
            "ab03 030100",  # protocol-options [11] EXPLICIT {}
        ),
        decode_cp,
    ),
    (ConnectPpdu(), _hex("3107 a003800101 a200"), decode_cp),
    (
        AcceptPpdu(
            results=(ContextResult(result=Result.ACCEPTANCE, transfer_syntax=BER),) * 3,
            responding_selector=b"\x00\x01",
        ),
        _hex("3128 a003800101 a221 83020001", ACCEPTED_3.hex()),
        decode_cpa,
    ),
    (
        RefusePpdu(provider_reason=ProviderReason.TEMPORARY_CONGESTION),
        _hex("3003 8a0101"),
        decode_cpr,
    ),
    (
        RefusePpdu(
            results=(
                ContextResult(
                    result=Result.PROVIDER_REJECTION,
                    provider_reason=ContextReason.ABSTRACT_SYNTAX_NOT_SUPPORTED,
                ),
            ),
            default_context_result=Result.USER_REJECTION,
            user_data=(Pdv(ACSE_CONTEXT, RLRQ),),
        ),
        _hex("301b a508 3006 800102 820101 870101 610c300a020101a0056203800100"),
        decode_cpr,
    ),
    (
        (Pdv(ACSE_CONTEXT, RLRQ),),
        _hex("610c 300a 020101 a005 6203800100"),
        decode_user_data,
    ),
    (
        (
            Pdv(RTSE_CONTEXT, b"\x04\x01\xaa", transfer_syntax=BER),
            Pdv(MTSE_CONTEXT, b"\xaa\xbb", encoding=Encoding.OCTET_ALIGNED),
            Pdv(MTSE_CONTEXT, b"\xcc", encoding=Encoding.ARBITRARY),
        ),
        _hex(
            "6120",
            "300c 06025101 020103 a003 0401aa",
            "3007 020105 8102aabb",
            "3007 020105 82020 0cc".replace(" ", ""),
        ),
        decode_user_data,
    ),
    (
        AruPpdu(contexts=((1, BER),), user_data=(Pdv(ACSE_CONTEXT, _hex("6403800100")),)),
        _hex("a019 a009 3007 020101 06025101 610c 300a 020101 a005 6403800100"),
        decode_aru,
    ),
    (AruPpdu(), _hex("a000"), decode_aru),
    (
        ArpPpdu(provider_reason=AbortReason.UNRECOGNIZED_PPDU, event_identifier=3),
        _hex("3006 800101 810103"),
        decode_arp,
    ),
    (ARP_PROTOCOL_ERROR, _hex("3003 800106"), decode_arp),
]

TABLE_IDS = [f"{type(value).__name__}-{index}" for index, (value, _, _) in enumerate(TABLE)]
ENCODERS: dict[type, Callable[[Any], bytes]] = {
    ConnectPpdu: encode_cp,
    AcceptPpdu: encode_cpa,
    RefusePpdu: encode_cpr,
    AruPpdu: encode_aru,
    ArpPpdu: encode_arp,
    tuple: encode_user_data,
}


def _encode(value: object) -> bytes:
    return ENCODERS[type(value)](value)


@pytest.mark.parametrize(("value", "data", "decode"), TABLE, ids=TABLE_IDS)
def test_table(value: object, data: bytes, decode: Callable[[bytes], object]) -> None:
    assert _encode(value).hex() == data.hex()
    assert decode(data) == value


# --- the compiled module reads what we write ------------------------------------------


def _bits(value: int) -> tuple[bytes, int]:
    length = value.bit_length()
    return ber.numbers_to_bits([n for n in range(length) if value >> n & 1], length), length


def _asn1_pdv(pdv: Pdv) -> dict[str, Any]:
    value: Any = pdv.value
    if pdv.encoding is Encoding.ARBITRARY:
        value = (pdv.value, 8 * len(pdv.value))
    out: dict[str, Any] = {
        "presentation-context-identifier": pdv.context_id,
        "presentation-data-values": (pdv.encoding.value, value),
    }
    if pdv.transfer_syntax is not None:
        out["transfer-syntax-name"] = pdv.transfer_syntax
    return out


def _asn1_user_data(pdvs: tuple[Pdv, ...]) -> tuple[str, list[dict[str, Any]]]:
    return ("fully-encoded-data", [_asn1_pdv(p) for p in pdvs])


def _asn1_result(result: ContextResult) -> dict[str, Any]:
    out: dict[str, Any] = {"result": result.result}
    if result.transfer_syntax is not None:
        out["transfer-syntax-name"] = result.transfer_syntax
    if result.provider_reason is not None:
        out["provider-reason"] = result.provider_reason
    return out


def _asn1_normal(ppdu: ConnectPpdu | AcceptPpdu | RefusePpdu) -> dict[str, Any]:
    version = ppdu.protocol_version
    out: dict[str, Any] = {"protocol-version": _bits(1 if version is None else version)}
    if not isinstance(ppdu, RefusePpdu):
        out["protocol-options"] = _bits(ppdu.protocol_options or 0)
        for name, flags in (
            ("presentation-requirements", ppdu.presentation_requirements),
            ("user-session-requirements", ppdu.user_session_requirements),
        ):
            if flags is not None:
                out[name] = _bits(flags)
    if isinstance(ppdu, ConnectPpdu):
        for name, selector in (
            ("calling-presentation-selector", ppdu.calling_selector),
            ("called-presentation-selector", ppdu.called_selector),
        ):
            if selector is not None:
                out[name] = selector
        if ppdu.contexts:
            out["presentation-context-definition-list"] = [
                {
                    "presentation-context-identifier": c.identifier,
                    "abstract-syntax-name": c.abstract_syntax,
                    "transfer-syntax-name-list": list(c.transfer_syntaxes),
                }
                for c in ppdu.contexts
            ]
    else:
        if ppdu.responding_selector is not None:
            out["responding-presentation-selector"] = ppdu.responding_selector
        if ppdu.results:
            name = "presentation-context-definition-result-list"
            out[name] = [_asn1_result(r) for r in ppdu.results]
    if isinstance(ppdu, RefusePpdu):
        if ppdu.default_context_result is not None:
            out["default-context-result"] = ppdu.default_context_result
        if ppdu.provider_reason is not None:
            out["provider-reason"] = ppdu.provider_reason
    if ppdu.user_data:
        out["user-data"] = _asn1_user_data(ppdu.user_data)
    return out


def _asn1_value(value: object) -> tuple[str, Any]:
    """(type name, the value asn1tools decodes) of one of our values."""
    if isinstance(value, ConnectPpdu | AcceptPpdu):
        kind = "CP-type" if isinstance(value, ConnectPpdu) else "CPA-PPDU"
        return kind, {
            "mode-selector": {"mode-value": 1},
            "normal-mode-parameters": _asn1_normal(value),
        }
    if isinstance(value, RefusePpdu):
        return "CPR-PPDU", ("normal-mode-parameters", _asn1_normal(value))
    if isinstance(value, AruPpdu):
        normal: dict[str, Any] = {}
        if value.contexts:
            normal["presentation-context-identifier-list"] = [
                {"presentation-context-identifier": c, "transfer-syntax-name": s}
                for c, s in value.contexts
            ]
        if value.user_data:
            normal["user-data"] = _asn1_user_data(value.user_data)
        return "Abort-type", ("aru-ppdu", ("normal-mode-parameters", normal))
    if isinstance(value, ArpPpdu):
        arp = {"provider-reason": value.provider_reason, "event-identifier": value.event_identifier}
        return "Abort-type", ("arp-ppdu", {k: v for k, v in arp.items() if v is not None})
    assert isinstance(value, tuple)
    return "User-data", _asn1_user_data(value)


@pytest.mark.parametrize(("value", "data", "decode"), TABLE, ids=TABLE_IDS)
def test_compiled_module_reads_our_encoding(
    value: object, data: bytes, decode: Callable[[bytes], object]
) -> None:
    type_name, expected = _asn1_value(value)
    assert asn1.decode(PRES, type_name, _encode(value)) == expected


# --- golden captures ------------------------------------------------------------------


def _definite(data: bytes | memoryview) -> bytes:
    """The same BER with every length definite (X.690 8.1.3)."""
    tlv = ber.read_single(data, "test")
    if not tlv.constructed:
        return tlv.raw()
    inner = b"".join(_definite(child.raw_view()) for child in ber.children(tlv, "test"))
    return ber.tlv(tlv.tag, inner, constructed=True)


def _ppdu(capture: str, spdu: str) -> bytes:
    exchange = next(e for e in golden.decode_capture(capture) if e.spdu == spdu)
    return exchange.pdus[0].data


@pytest.mark.parametrize("capture", [SUCCESS, REFUSE])
def test_golden_cp_decodes_and_re_encodes_with_definite_lengths(capture: str) -> None:
    data = _ppdu(capture, "CN")
    assert data[:2] == b"\x31\x80"  # the peer's indefinite lengths
    cp = decode_cp(data)
    assert cp.contexts == P1_CONTEXTS
    assert (cp.protocol_version, cp.calling_selector, cp.called_selector) == (None, None, None)
    assert cp.user_session_requirements is None
    (pdv,) = cp.user_data
    assert (pdv.context_id, pdv.encoding, pdv.value[:1]) == (
        ACSE_CONTEXT,
        Encoding.SINGLE_ASN1_TYPE,
        b"\x60",
    )
    assert encode_cp(cp) == _definite(data)
    assert decode_cp(_definite(data)) == cp


def test_golden_cpa_accepts_the_three_contexts_byte_exact() -> None:
    data = _ppdu(SUCCESS, "AC")
    cpa = decode_cpa(data)
    assert cpa.results == (ContextResult(result=Result.ACCEPTANCE, transfer_syntax=BER),) * 3
    assert cpa.results == negotiate(P1_CONTEXTS, SUPPORTED)
    assert [p.context_id for p in cpa.user_data] == [ACSE_CONTEXT]
    assert cpa.user_data[0].value[:1] == b"\x61"  # the AARE
    assert encode_cpa(cpa) == data


def test_golden_cpr_carries_results_and_the_aare_byte_exact() -> None:
    data = _ppdu(REFUSE, "RF")
    cpr = decode_cpr(data)
    assert cpr.provider_reason is None  # refused by the user (ACSE), not the provider
    assert cpr.results == (ContextResult(result=Result.ACCEPTANCE, transfer_syntax=BER),) * 3
    (pdv,) = cpr.user_data
    assert pdv.context_id == ACSE_CONTEXT
    assert pdv.value.hex() == (
        "612aa106060456000106a203020101a305a103020101be14281206025101020103a009b207a105b203020102"
    )
    assert encode_cpr(cpr) == data


@pytest.mark.parametrize(("spdu", "apdu"), [("FN", "6203800100"), ("DN", "6303800100")])
def test_golden_release_user_data(spdu: str, apdu: str) -> None:
    data = _ppdu(SUCCESS, spdu)
    assert decode_user_data(data) == (Pdv(ACSE_CONTEXT, bytes.fromhex(apdu)),)
    assert encode_pdv(ACSE_CONTEXT, bytes.fromhex(apdu)) == data
    assert data == _hex("610c 300a 020101 a005", apdu)


# --- X.410-1984 mode and other refusals -----------------------------------------------

X410_CP = _hex("3120 a003800100 a119 a314 a012 a110 80044d544131 a108 1606736563726574 84010c")


def test_x410_mode_cp_is_an_unsupported_mode_error() -> None:
    assert asn1.decode(PRES, "CP-type", X410_CP)["mode-selector"] == {"mode-value": 0}
    with pytest.raises(DecodeError, match=re.escape("unsupported X.410-1984 mode")) as info:
        decode_cp(X410_CP)
    assert info.value.where == "CP-type.mode-selector"


@pytest.mark.parametrize(
    ("decode", "data", "where", "why"),
    [
        (decode_cp, "3105 a003800102", "CP-type.mode-selector", "mode-value 2"),
        (decode_cp, "3005 a003800101", "CP-type", "expected [UNIVERSAL 17]"),
        (decode_cp, "3102 a200", "CP-type", "missing mode-selector"),
        (decode_cpa, "3107 a003800101 a100", "CPA-PPDU.mode-selector", "X.410-1984"),
        (decode_cpr, "3103 800100", "CPR-PPDU.x400-mode-parameters", "X.410-1984"),
        (decode_abort, "3103 800106", "ARU-PPDU.x400-mode-parameters", "X.410-1984"),
        (decode_abort, "0500", "Abort-type", "neither ARU nor ARP"),
        (decode_arp, "a000", "Abort-type", "a user abort"),
        (decode_aru, "3000", "Abort-type", "a provider abort"),
        (
            decode_cp,
            "310c a003800101 a205 a6033001 00",
            "CP-type.normal-mode-parameters.default-context-name",
            "default context",
        ),
        (
            decode_cp,
            "3118 a003800101 a211 a40f 300d 020100 060452010001 3002 0600",
            "CP-type.normal-mode-parameters.presentation-context-definition-list[0]"
            ".presentation-context-identifier",
            "presentation context identifier 0",
        ),
        (decode_user_data, "400101", "User-data", "simply-encoded-data"),
        (decode_user_data, "6100", "User-data.fully-encoded-data", "no PDV-list"),
        (
            decode_user_data,
            "6107 3005 020101 a300",
            "User-data.fully-encoded-data[0].presentation-data-values",
            "unknown encoding [3]",
        ),
        (
            decode_user_data,
            "6109 3007 020101 820201ff",
            "User-data.fully-encoded-data[0].presentation-data-values.arbitrary",
            "whole octets",
        ),
        (decode_user_data, "610c300a020101a005620380010000", "User-data", "1 trailing byte"),
    ],
)
def test_decode_errors_name_the_field(
    decode: Callable[[bytes], object], data: str, where: str, why: str
) -> None:
    with pytest.raises(DecodeError, match=re.escape(why)) as info:
        decode(bytes.fromhex(data))
    assert info.value.where == where


def test_a_context_defined_twice_is_an_error() -> None:
    twice = ConnectPpdu(contexts=(P1_CONTEXTS[0], P1_CONTEXTS[0]))
    with pytest.raises(DecodeError, match="context 1 is defined twice"):
        decode_cp(encode_cp(twice))


@pytest.mark.parametrize(
    ("encode", "value", "why"),
    [
        (encode_user_data, (), "needs a presentation data value"),
        (encode_user_data, (Pdv(0, RLRQ),), "not positive"),
        (encode_user_data, (Pdv(1, b"\x04\x05ab"),), "not one BER value"),
        (encode_user_data, (Pdv(1, RLRQ + b"\x00"),), "not one BER value"),
        (encode_user_data, (Pdv(1, RLRQ, transfer_syntax="ber"),), "not a dotted"),
        (encode_cp, ConnectPpdu(protocol_version=-1), "not a set of named bits"),
        (
            encode_cp,
            ConnectPpdu(contexts=(ContextDefinition(identifier=1, abstract_syntax="x"),)),
            "dotted",
        ),
        (encode_cpr, RefusePpdu(provider_reason="busy"), "not an integer"),  # type: ignore[arg-type]
        (encode_aru, AruPpdu(contexts=((1, BER, 3),)), "expected (context id"),  # type: ignore[arg-type]
    ],
)
def test_encode_errors(encode: Callable[[Any], bytes], value: object, why: str) -> None:
    with pytest.raises(EncodeError, match=re.escape(why)):
        encode(value)


# --- decode-only forms ----------------------------------------------------------------


def test_indefinite_lengths_and_segmented_octet_aligned() -> None:
    indefinite = _hex("6180 3080 020101 a080 6203800100 0000 0000 0000")
    assert decode_user_data(indefinite) == (Pdv(ACSE_CONTEXT, RLRQ),)
    segmented = _hex("610f 300d 020105 a108 0402aabb 0402ccdd")
    assert decode_user_data(segmented) == (
        Pdv(MTSE_CONTEXT, b"\xaa\xbb\xcc\xdd", encoding=Encoding.OCTET_ALIGNED),
    )
    # An indefinite-length value inside single-ASN1-type is kept as sent.
    inner = _hex("6280 800100 0000")
    assert decode_user_data(_hex("610e 300c 020101 a007", inner.hex()))[0].value == inner


def test_abort_type_dispatch() -> None:
    assert decode_abort(encode_aru(AruPpdu())) == AruPpdu()
    assert decode_abort(encode_arp(ArpPpdu())) == ArpPpdu()
    assert encode_arp(ArpPpdu()) == b"\x30\x00"


# --- negotiate ------------------------------------------------------------------------


def test_negotiate_accepts_the_p1_contexts() -> None:
    results = negotiate(P1_CONTEXTS, SUPPORTED)
    assert results == (ContextResult(result=Result.ACCEPTANCE, transfer_syntax=BER),) * 3
    assert _result_list_bytes(AcceptPpdu(results=results)) == ACCEPTED_3


def _result_list_bytes(cpa: AcceptPpdu) -> bytes:
    """The result list of a CPA as encoded (the golden CPA's bytes for three acceptances)."""
    data = encode_cpa(cpa)
    normal = ber.split_set(
        ber.read_single(data, "t"), {ber.context(0): "m", ber.context(2): "n"}, "t"
    )
    return ber.children(normal["n"], "t")[0].raw()


def test_negotiate_unsupported_abstract_syntax() -> None:
    proposed = (*P1_CONTEXTS, ContextDefinition(identifier=7, abstract_syntax="2.6.0.2.1"))
    results = negotiate(proposed, SUPPORTED)
    assert results[:3] == (ContextResult(result=Result.ACCEPTANCE, transfer_syntax=BER),) * 3
    assert results[3] == ContextResult(
        result=Result.PROVIDER_REJECTION,
        provider_reason=ContextReason.ABSTRACT_SYNTAX_NOT_SUPPORTED,
    )
    entry = asn1.decode(PRES, "CPA-PPDU", encode_cpa(AcceptPpdu(results=results)))
    listed = entry["normal-mode-parameters"]["presentation-context-definition-result-list"]
    assert listed[3] == {"result": 2, "provider-reason": 1}


def test_negotiate_unsupported_transfer_syntax() -> None:
    proposed = (ContextDefinition(identifier=1, abstract_syntax=ACSE_AS, transfer_syntaxes=(PER,)),)
    assert negotiate(proposed, SUPPORTED) == (
        ContextResult(
            result=Result.PROVIDER_REJECTION,
            provider_reason=ContextReason.PROPOSED_TRANSFER_SYNTAXES_NOT_SUPPORTED,
        ),
    )


def test_negotiate_takes_the_proposers_first_acceptable_syntax() -> None:
    proposed = (
        ContextDefinition(identifier=1, abstract_syntax=ACSE_AS, transfer_syntaxes=(PER, BER)),
        ContextDefinition(identifier=3, abstract_syntax=MTA_RTSE_AS, transfer_syntaxes=()),
    )
    supported = {ACSE_AS: frozenset({BER, PER}), MTA_RTSE_AS: (BER,)}
    assert negotiate(proposed, supported) == (
        ContextResult(result=Result.ACCEPTANCE, transfer_syntax=PER),
        ContextResult(
            result=Result.PROVIDER_REJECTION,
            provider_reason=ContextReason.PROPOSED_TRANSFER_SYNTAXES_NOT_SUPPORTED,
        ),
    )
    assert negotiate((), supported) == ()


# --- the transfer path copies a value once --------------------------------------------

MEGABYTE = 1 << 20


def _peak(call: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_encode_pdv_and_decode_user_data_copy_a_megabyte_once() -> None:
    value = ber.tlv(ber.OCTET_STRING, bytes(MEGABYTE))
    encoded = encode_pdv(RTSE_CONTEXT, memoryview(value))
    assert encoded == encode_user_data((Pdv(RTSE_CONTEXT, value),))
    assert decode_user_data(encoded) == (Pdv(RTSE_CONTEXT, value),)
    # One copy is one megabyte; two would be two.
    assert _peak(lambda: encode_pdv(RTSE_CONTEXT, memoryview(value))) < 1.5 * MEGABYTE
    assert _peak(lambda: decode_user_data(encoded)) < 1.5 * MEGABYTE
    assert _peak(lambda: decode_user_data(memoryview(encoded))) < 1.5 * MEGABYTE


# --- properties -----------------------------------------------------------------------

oids = st.builds(
    lambda first, second, rest: ".".join(map(str, (first, second, *rest))),
    st.integers(0, 2),
    st.integers(0, 39),
    st.lists(st.integers(0, 2**40), max_size=4),
)
context_ids = st.integers(1, 2**20)
flags = st.none() | st.integers(0, 2**13 - 1)
selectors = st.none() | st.binary(min_size=1, max_size=6)
single_values = st.one_of(
    st.binary(max_size=40).map(lambda b: ber.tlv(ber.OCTET_STRING, b)),
    st.integers(-(2**64), 2**64).map(lambda n: ber.tlv(ber.INTEGER, ber.int_contents(n))),
    st.lists(st.binary(max_size=8), max_size=3).map(
        lambda items: ber.constructed(ber.SEQUENCE, [ber.tlv(ber.OCTET_STRING, i) for i in items])
    ),
)
pdvs = st.one_of(
    st.builds(
        lambda c, v, s: Pdv(c, v, transfer_syntax=s), context_ids, single_values, st.none() | oids
    ),
    st.builds(
        lambda c, v, e: Pdv(c, v, encoding=e),
        context_ids,
        st.binary(max_size=40),
        st.sampled_from([Encoding.OCTET_ALIGNED, Encoding.ARBITRARY]),
    ),
)
user_data = st.lists(pdvs, max_size=3).map(tuple)
definitions = st.builds(
    ContextDefinition,
    identifier=context_ids,
    abstract_syntax=oids,
    transfer_syntaxes=st.lists(oids, max_size=3).map(tuple),
)
results = st.builds(
    ContextResult,
    result=st.integers(0, 2),
    transfer_syntax=st.none() | oids,
    provider_reason=st.none() | st.integers(0, 3),
)
ppdus = st.one_of(
    st.builds(
        ConnectPpdu,
        contexts=st.lists(definitions, max_size=4, unique_by=lambda d: d.identifier).map(tuple),
        calling_selector=selectors,
        called_selector=selectors,
        protocol_version=flags,
        presentation_requirements=flags,
        user_session_requirements=flags,
        protocol_options=flags,
        user_data=user_data,
    ),
    st.builds(
        AcceptPpdu,
        results=st.lists(results, max_size=4).map(tuple),
        responding_selector=selectors,
        protocol_version=flags,
        presentation_requirements=flags,
        user_session_requirements=flags,
        protocol_options=flags,
        user_data=user_data,
    ),
    st.builds(
        RefusePpdu,
        results=st.lists(results, max_size=4).map(tuple),
        responding_selector=selectors,
        protocol_version=flags,
        default_context_result=st.none() | st.integers(0, 2),
        provider_reason=st.none() | st.integers(0, 7),
        user_data=user_data,
    ),
    st.builds(
        AruPpdu,
        contexts=st.lists(st.tuples(context_ids, oids), max_size=3).map(tuple),
        user_data=user_data,
    ),
    st.builds(
        ArpPpdu,
        provider_reason=st.none() | st.integers(0, 6),
        event_identifier=st.none() | st.integers(0, 32),
    ),
    user_data.filter(bool),
)
DECODERS: dict[type, Callable[[bytes], object]] = {
    ConnectPpdu: decode_cp,
    AcceptPpdu: decode_cpa,
    RefusePpdu: decode_cpr,
    AruPpdu: decode_aru,
    ArpPpdu: decode_arp,
    tuple: decode_user_data,
}


@settings(max_examples=examples(3))
@given(ppdus)
def test_round_trip_and_compiled_module_agree(value: object) -> None:
    data = _encode(value)
    assert DECODERS[type(value)](data) == value
    type_name, expected = _asn1_value(value)
    assert asn1.decode(PRES, type_name, data) == expected


def _seeds() -> list[tuple[bytes, Callable[[bytes], object]]]:
    return [(data, decode) for _, data, decode in TABLE]


@settings(max_examples=examples(5))
@given(st.sampled_from(_seeds()), st.data())
def test_mutated_ppdus_give_a_value_or_a_decode_error(
    seed: tuple[bytes, Callable[[bytes], object]], data: st.DataObject
) -> None:
    original, decode = seed
    wire = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(wire) - 1))
        wire[index] = data.draw(st.integers(0, 255))
    wire = wire[: data.draw(st.integers(0, len(wire)))]
    try:
        value = decode(bytes(wire))
    except DecodeError:
        return
    try:
        again = _encode(value)
    except EncodeError:
        return
    assert decode(again) == value  # whatever we accept, we can write back


@pytest.mark.parametrize(("value", "data", "decode"), TABLE, ids=TABLE_IDS)
def test_every_truncation_is_a_decode_error(
    value: object, data: bytes, decode: Callable[[bytes], object]
) -> None:
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            decode(data[:cut])


GOLDEN_DECODERS: dict[str, Callable[[bytes], object]] = {
    "CN": decode_cp,
    "AC": decode_cpa,
    "RF": decode_cpr,
    "FN": decode_user_data,
    "DN": decode_user_data,
}


@pytest.mark.parametrize("capture", [SUCCESS, REFUSE])
def test_every_byte_of_the_golden_ppdus_corrupted(capture: str) -> None:
    """Each octet of each captured PPDU set to 0x00, 0x80 and 0xff in turn."""
    for exchange in golden.decode_capture(capture):
        decode = GOLDEN_DECODERS[exchange.spdu]
        original = exchange.pdus[0].data
        for index in range(len(original)):
            for octet in (0x00, 0x80, 0xFF):
                wire = bytearray(original)
                wire[index] = octet
                with contextlib.suppress(DecodeError):
                    decode(bytes(wire))
