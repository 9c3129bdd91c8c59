"""RTSE APDUs, normal mode (X.228): p1.osi.rtse.

Tables of values and bytes, the APDUs of a real MTA's captures decoded and re-encoded byte
for byte, our encodings read back by the compiled Reliable-Transfer-APDU module, the
one-copy RTTR path, property round trips and mutated input.
"""

from __future__ import annotations

import contextlib
import re
import tracemalloc
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p1 import asn1, ber
from p1.association.mtabind import (
    MTABindError,
    decode_bind_argument,
    decode_bind_error,
    decode_bind_result,
    unwrap_bind_argument,
    unwrap_bind_error,
    unwrap_bind_result,
)
from p1.errors import DecodeError, EncodeError
from p1.osi import acse
from p1.osi.rtse import (
    AbortReason,
    DialogueMode,
    RefuseReason,
    Rtab,
    Rtoac,
    Rtorj,
    Rtorq,
    RtseApdu,
    Rttp,
    Rttr,
    decode_rtse,
    decode_rttr,
    encode_rtse,
    encode_rttr,
)
from tests.profiles import examples
from tests.support import golden

RTSE = "Reliable-Transfer-APDU"
SUCCESS = "x400-ping-success"
REFUSE = "x400-ping-refuse"


def _hex(*parts: str) -> bytes:
    return bytes.fromhex("".join(parts))


BIND_ARGUMENT = _hex("b012 a110 80044d544131 a108 1606736563726574")  # [16] MTA1 / secret
BIND_RESULT = _hex("b1020500")  # [17] unauthenticated
BIND_ERROR = _hex("b203020102")  # [18] authentication-error
# SessionConnectionIdentifier { callingSSuserReference octetString "ref", commonReference }
RECOVER = _hex("3014 0403726566 170d3035313030313134343835325a")

TABLE: list[tuple[RtseApdu, bytes]] = [
    (
        Rtorq(checkpoint_size=63, open=BIND_ARGUMENT),  # as the captured peer writes it
        _hex("b01e 80013f 820100 a316 a014", BIND_ARGUMENT.hex()),
    ),
    (Rtorq(open=BIND_ARGUMENT), _hex("b01b 820100 a316 a014", BIND_ARGUMENT.hex())),
    (
        Rtorq(
            checkpoint_size=63, window_size=5, dialogue_mode=DialogueMode.TWA, open=BIND_ARGUMENT
        ),
        _hex("b021 80013f 810105 820101 a316 a014", BIND_ARGUMENT.hex()),
    ),
    (Rtorq(recover=RECOVER), _hex("b01b 820100 a316 a114", RECOVER[2:].hex())),
    (Rtorq(), _hex("b007 820100 a302 8000")),  # open without user data: [0] IMPLICIT NULL
    (
        Rtorq(open=BIND_ARGUMENT, application_protocol=12),
        _hex("b01e 820100 a316 a014", BIND_ARGUMENT.hex(), "84010c"),
    ),
    (Rtoac(checkpoint_size=63, open=BIND_RESULT), _hex("b10b 80013f a206 a004 b1020500")),
    (Rtoac(open=BIND_RESULT), _hex("b108 a206 a004 b1020500")),
    (Rtoac(window_size=1, recover=RECOVER), _hex("b11b 810101 a216 a114", RECOVER[2:].hex())),
    (Rtoac(), _hex("b104 a202 8000")),
    (Rtorj(user_data=BIND_ERROR), _hex("b207 a105 b203020102")),
    (Rtorj(refuse_reason=RefuseReason.RTS_BUSY), _hex("b203 800100")),
    (Rtorj(), _hex("b200")),
    (Rttp(priority=0), _hex("020100")),
    (Rttp(priority=3), _hex("020103")),
    (Rttr(data=b"\x28\x00"), _hex("04022800")),
    (Rttr(data=b""), _hex("0400")),
    (Rtab(abort_reason=AbortReason.USER_ERROR), _hex("b603 800106")),
    (
        Rtab(abort_reason=AbortReason.INVALID_PARAMETER, reflected_parameter=0xA0),
        _hex("b607 800101 810200a0"),
    ),
    (
        Rtab(abort_reason=AbortReason.USER_ERROR, user_data=b"\x05\x00"),
        _hex("b607 800106 a2020500"),
    ),
    (Rtab(), _hex("b600")),
]
IDS = [f"{type(apdu).__name__}-{index}" for index, (apdu, _) in enumerate(TABLE)]
_OPEN_WITHOUT_DATA = {_hex("b007 820100 a302 8000"), _hex("b104 a202 8000")}


@pytest.mark.parametrize(("apdu", "data"), TABLE, ids=IDS)
def test_table(apdu: RtseApdu, data: bytes) -> None:
    assert encode_rtse(apdu).hex() == data.hex()
    assert decode_rtse(data) == apdu


# --- the compiled module reads what we write ------------------------------------------


def _connection_data(open_data: bytes | None, recover: bytes | None) -> tuple[str, Any]:
    if recover is not None:
        return "recover", asn1.decode(RTSE, "SessionConnectionIdentifier", recover)
    return "open", open_data


def _asn1_value(apdu: RtseApdu) -> tuple[str, Any]:
    if isinstance(apdu, Rttp):
        return "rttp-apdu", apdu.priority
    if isinstance(apdu, Rttr):
        return "rttr-apdu", apdu.data
    if isinstance(apdu, Rtorq | Rtoac):
        out: dict[str, Any] = {
            "checkpointSize": apdu.checkpoint_size,
            "windowSize": apdu.window_size,
        }
        if isinstance(apdu, Rtorq):
            out["dialogueMode"] = int(apdu.dialogue_mode)  # always written, so never the name
            out["connectionDataRQ"] = _connection_data(apdu.open, apdu.recover)
            if apdu.application_protocol is not None:
                out["applicationProtocol"] = apdu.application_protocol
            return "rtorq-apdu", out
        out["connectionDataAC"] = _connection_data(apdu.open, apdu.recover)
        return "rtoac-apdu", out
    if isinstance(apdu, Rtorj):
        refused: dict[str, object] = {
            "refuseReason": apdu.refuse_reason,
            "userDataRJ": apdu.user_data,
        }
        return "rtorj-apdu", {k: v for k, v in refused.items() if v is not None}
    reflected = None if apdu.reflected_parameter is None else (bytes([apdu.reflected_parameter]), 8)
    fields: dict[str, object] = {
        "abortReason": apdu.abort_reason,
        "reflectedParameter": reflected,
        "userdataAB": apdu.user_data,
    }
    return "rtab-apdu", {k: v for k, v in fields.items() if v is not None}


@pytest.mark.parametrize(("apdu", "data"), TABLE, ids=IDS)
def test_compiled_module_reads_our_encoding(apdu: RtseApdu, data: bytes) -> None:
    if data in _OPEN_WITHOUT_DATA:
        # X.228 writes this alternative as [0] IMPLICIT NULL, which the module's ANY
        # (and so asn1tools) cannot express.
        with pytest.raises(DecodeError):
            asn1.decode(RTSE, "RTSE-apdus", data)
        return
    assert asn1.decode(RTSE, "RTSE-apdus", encode_rtse(apdu)) == _asn1_value(apdu)


def test_recover_is_the_session_connection_identifier() -> None:
    decoded = asn1.decode(RTSE, "SessionConnectionIdentifier", RECOVER)
    assert decoded["callingSSuserReference"] == ("octetString", b"ref")
    assert decoded["commonReference"] == datetime(2005, 10, 1, 14, 48, 52)


# --- golden captures ------------------------------------------------------------------


def _rtse(capture: str, spdu: str) -> bytes:
    exchange = next(e for e in golden.decode_capture(capture) if e.spdu == spdu)
    return exchange.pdu("RTSE-apdus").data


@pytest.mark.parametrize("capture", [SUCCESS, REFUSE])
def test_golden_rtorq(capture: str) -> None:
    data = _rtse(capture, "CN")
    length = {SUCCESS: "30", REFUSE: "28"}[capture]
    # checkpointSize 63, windowSize absent (3), dialogueMode 0 written, open [0] holding [16]
    assert data[:9] == _hex("b0", length, "80013f 820100 a3")
    rtorq = decode_rtse(data)
    assert isinstance(rtorq, Rtorq)
    assert (rtorq.checkpoint_size, rtorq.window_size) == (63, 3)
    assert rtorq.dialogue_mode is DialogueMode.MONOLOGUE
    assert rtorq.recover is None and rtorq.application_protocol is None
    assert rtorq.open is not None and rtorq.open[:1] == b"\xb0"
    argument = decode_bind_argument(unwrap_bind_argument(rtorq.open))
    assert argument.initiator_name == "percival.smhs.co.uk"
    assert encode_rtse(rtorq) == data


def test_golden_rtoac() -> None:
    data = _rtse(SUCCESS, "AC")
    assert data[:7] == _hex("b12b 80013f a226")
    rtoac = decode_rtse(data)
    assert isinstance(rtoac, Rtoac)
    assert (rtoac.checkpoint_size, rtoac.window_size, rtoac.recover) == (63, 3, None)
    assert rtoac.open is not None
    assert (
        decode_bind_result(unwrap_bind_result(rtoac.open)).responder_name == "guinevere.smhs.co.uk"
    )
    assert encode_rtse(rtoac) == data


def test_golden_rtorj() -> None:
    data = _rtse(REFUSE, "RF")
    rtorj = decode_rtse(data)
    assert rtorj == Rtorj(user_data=BIND_ERROR)
    assert decode_bind_error(unwrap_bind_error(BIND_ERROR)) is MTABindError.AUTHENTICATION_ERROR
    assert encode_rtse(rtorj) == data


@pytest.mark.parametrize(("capture", "spdu"), [(SUCCESS, "CN"), (SUCCESS, "AC"), (REFUSE, "RF")])
def test_every_byte_of_the_golden_apdus_corrupted(capture: str, spdu: str) -> None:
    original = _rtse(capture, spdu)
    for index in range(len(original)):
        for octet in (0x00, 0x80, 0xFF):
            wire = bytearray(original)
            wire[index] = octet
            with contextlib.suppress(DecodeError):
                decode_rtse(bytes(wire))


def test_rtab_travels_in_an_abrt() -> None:
    rtab = encode_rtse(Rtab(abort_reason=AbortReason.PROTOCOL_ERROR))
    external = acse.External(value=rtab, indirect_reference=3)
    abrt = acse.decode_acse(
        acse.encode_acse(acse.Abrt(source=acse.SERVICE_USER, user_information=(external,)))
    )
    assert isinstance(abrt, acse.Abrt)
    assert decode_rtse(abrt.user_information[0].value) == Rtab(
        abort_reason=AbortReason.PROTOCOL_ERROR
    )


# --- RTTR: the transfer path ----------------------------------------------------------

MEGABYTE = 1 << 20


def _peak(call: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_rttr_forms() -> None:
    assert encode_rttr(b"abc") == _hex("0403616263")
    assert encode_rttr(memoryview(b"abcd").cast("H")) == _hex("040461626364")  # len in octets
    assert decode_rttr(_hex("0403616263")) == b"abc"
    assert decode_rttr(_hex("2480 04026162 040163 0000")) == b"abc"  # segmented, indefinite
    assert decode_rttr(_hex("2409 04026162 2403 040163")) == b"abc"  # segments nested
    assert decode_rtse(_hex("2407 04026162 040163")) == Rttr(data=b"abc")
    assert encode_rttr(bytes(200)) == _hex("0481c8") + bytes(200)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ("020100", "expected [UNIVERSAL 4], found [UNIVERSAL 2]"),
        ("0403 6162", "truncated"),
        ("0402 616263", "1 trailing byte"),
        ("2404 0202 6162", "expected [UNIVERSAL 4]"),
        ("", "truncated"),
    ],
)
def test_rttr_errors(data: str, why: str) -> None:
    with pytest.raises(DecodeError, match=re.escape(why)):
        decode_rttr(bytes.fromhex(data))


def test_rttr_copies_a_megabyte_once() -> None:
    chunk = bytes(range(256)) * (MEGABYTE // 256)
    encoded = encode_rttr(memoryview(chunk))
    assert decode_rttr(encoded) == chunk
    assert _peak(lambda: encode_rttr(memoryview(chunk))) < 1.5 * MEGABYTE
    assert _peak(lambda: decode_rttr(memoryview(encoded))) < 1.5 * MEGABYTE


# --- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "where", "why"),
    [
        ("b003 820102", "RTORQapdu.dialogueMode", "2 is outside 0..1"),
        ("b003 820100", "RTORQapdu", "missing connectionDataRQ"),
        ("b00a 8001ff 820100 a302 8000", "RTORQapdu.checkpointSize", "-1 is outside"),
        ("b006 a304 8002 0500", "RTORQapdu.connectionDataRQ", "[0] IMPLICIT NULL"),
        ("b004 a302 8200", "RTORQapdu.connectionDataRQ", "unexpected [2]"),
        ("b006 a304 81020500", "RTORQapdu.connectionDataRQ.recover", "must be constructed"),
        ("b008 a306 a0020500 8000", "RTORQapdu.connectionDataRQ", "holds 2 values"),
        ("b008 a302 8000 a3028000", "RTORQapdu", "connectionDataRQ appears twice"),
        ("b104 a202 a000", "RTOACapdu.connectionDataAC.open", "holds 0 values"),
        ("b205 a303 020100", "RTORJapdu", "unexpected [3]"),
        ("b605 810300ffff", "RTABapdu.reflectedParameter", "16 bits, at most 8"),
        ("b303 800100", "RTSE-apdus", "[19] is not an RTSE APDU"),
        ("0500", "RTSE-apdus", "[UNIVERSAL 5] is not an RTSE APDU"),
        ("2203 020100", "RTTPapdu", "an integer must be primitive"),
    ],
)
def test_decode_errors_name_the_field(data: str, where: str, why: str) -> None:
    with pytest.raises(DecodeError, match=re.escape(why)) as info:
        decode_rtse(bytes.fromhex(data))
    assert info.value.where == where


@pytest.mark.parametrize(
    ("apdu", "why"),
    [
        (Rtorq(open=BIND_ARGUMENT, recover=RECOVER), "not both"),
        (Rtorq(dialogue_mode=2, open=BIND_ARGUMENT), "neither monologue"),  # type: ignore[arg-type]
        (Rtorq(checkpoint_size=-1), "not an integer in 0..2147483647"),
        (Rtoac(window_size=2**31), "not an integer in 0..2147483647"),
        (Rtorq(open=b"\x04\x05"), "not one BER value"),
        (Rtorq(recover=BIND_ARGUMENT), "a SessionConnectionIdentifier is a SEQUENCE"),
        (Rtorq(recover=b"\x30"), "truncated"),
        (Rtab(reflected_parameter=256), "not an octet"),
        (Rttp(priority="high"), "not an integer"),  # type: ignore[arg-type]
        ("rttr", "not an RTSE APDU"),
    ],
)
def test_encode_errors(apdu: RtseApdu, why: str) -> None:
    with pytest.raises(EncodeError, match=re.escape(why)):
        encode_rtse(apdu)


def test_received_forms() -> None:
    # Indefinite lengths, and every DEFAULT sent explicitly.
    indefinite = _hex("b080 800100 810103 820100 a380 a080", BIND_ARGUMENT.hex(), "0000 0000 0000")
    assert decode_rtse(indefinite) == Rtorq(open=BIND_ARGUMENT)
    # The members of a SET in any order.
    shuffled = _hex("b01e a316 a014", BIND_ARGUMENT.hex(), "820101 80013f")
    assert decode_rtse(shuffled) == Rtorq(
        checkpoint_size=63, dialogue_mode=DialogueMode.TWA, open=BIND_ARGUMENT
    )
    assert decode_rtse(_hex("b603 810100")) == Rtab(reflected_parameter=0)  # no bits


# --- properties -----------------------------------------------------------------------

values = st.one_of(
    st.binary(max_size=30).map(lambda b: ber.tlv(ber.OCTET_STRING, b)),
    st.binary(max_size=30).map(
        lambda b: ber.tlv(ber.context(16), ber.tlv(ber.OCTET_STRING, b), constructed=True)
    ),
)
sizes = st.integers(0, 2**31 - 1)
connection = st.one_of(
    st.tuples(values, st.none()),
    st.tuples(st.none(), st.just(RECOVER)),
)
apdus = st.one_of(
    st.builds(
        lambda c, w, d, data, p: Rtorq(
            checkpoint_size=c,
            window_size=w,
            dialogue_mode=d,
            open=data[0],
            recover=data[1],
            application_protocol=p,
        ),
        sizes,
        sizes,
        st.sampled_from(DialogueMode),
        connection,
        st.none() | st.sampled_from([1, 12]),
    ),
    st.builds(
        lambda c, w, data: Rtoac(checkpoint_size=c, window_size=w, open=data[0], recover=data[1]),
        sizes,
        sizes,
        connection,
    ),
    st.builds(Rtorj, refuse_reason=st.none() | st.integers(0, 3), user_data=st.none() | values),
    st.builds(Rttp, priority=st.integers(-(2**63), 2**63)),
    st.builds(Rttr, data=st.binary(max_size=300)),
    st.builds(
        Rtab,
        abort_reason=st.none() | st.integers(0, 7),
        reflected_parameter=st.none() | st.integers(0, 255),
        user_data=st.none() | values,
    ),
)


@settings(max_examples=examples(3))
@given(apdus)
def test_round_trip_and_compiled_module_agree(apdu: RtseApdu) -> None:
    data = encode_rtse(apdu)
    assert decode_rtse(data) == apdu
    assert asn1.decode(RTSE, "RTSE-apdus", data) == _asn1_value(apdu)


@settings(max_examples=examples(5))
@given(st.sampled_from([data for _, data in TABLE]), st.data())
def test_mutated_apdus_give_a_value_or_a_decode_error(original: bytes, data: st.DataObject) -> None:
    wire = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        wire[data.draw(st.integers(0, len(wire) - 1))] = data.draw(st.integers(0, 255))
    wire = wire[: data.draw(st.integers(0, len(wire)))]
    try:
        apdu = decode_rtse(bytes(wire))
    except DecodeError:
        return
    with contextlib.suppress(EncodeError):
        assert decode_rtse(encode_rtse(apdu)) == apdu


@pytest.mark.parametrize(("apdu", "data"), TABLE, ids=IDS)
def test_every_truncation_is_a_decode_error(apdu: RtseApdu, data: bytes) -> None:
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            decode_rtse(data[:cut])
