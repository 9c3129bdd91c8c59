"""Transport class 0 over RFC 1006 (X.224): the TPDU codec (p1.osi.tpdu) and the connection
(p1.osi.cotp).  Byte tables, a real product's CR / CC / DT, an in-memory initiator and responder,
every (state, input) of the transition table, and random or mutated bytes."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p1.errors import EncodeError
from p1.osi import Event, LocalProtocolError, RemoteProtocolError, Role, StackLimits
from p1.osi import tpdu as x224
from p1.osi.cotp import (
    TRANSITIONS,
    Connected,
    ConnectRequested,
    Disconnected,
    Input,
    TransportConnection,
    TransportState,
    TsduReceived,
    class_0_allowed,
)
from p1.osi.tpkt import TpktReader, encode_tpkt
from tests.profiles import examples
from tests.support import golden

SUCCESS = "x400-ping-success"
REFUSE = "x400-ping-refuse"
GOLDEN_CR = "0300001d18e0000017c400c107583430302d3838c207583430302d3838"
GOLDEN_CC = "0300000b06d017c4034c00"
SIZES = (128, 256, 512, 1024, 2048)
MEGABYTE = bytes(range(256)) * 4096

# --- codec: (value, bytes) ---------------------------------------------------------------------

TPDUS: list[tuple[x224.Tpdu, str]] = [
    (  # the golden CR: no TPDU size, so 128
        x224.ConnectionRequest(
            source_reference=0x17C4, calling_tsap=b"X400-88", called_tsap=b"X400-88"
        ),
        GOLDEN_CR[8:],
    ),
    (  # the golden CC: no parameters at all
        x224.ConnectionConfirm(destination_reference=0x17C4, source_reference=0x034C),
        GOLDEN_CC[8:],
    ),
    (  # wire-notes example: TSAPs 0001, size 2048
        x224.ConnectionRequest(
            source_reference=1, calling_tsap=b"\x00\x01", called_tsap=b"\x00\x01", tpdu_size=2048
        ),
        "11e00000000100c1020001c2020001c0010b",
    ),
    (  # class 2 preferred, class 0 alternative, other parameters kept in order
        x224.ConnectionRequest(
            source_reference=0x4242,
            protocol_class=2,
            options=0x2,
            tpdu_size=1024,
            alternative_classes=(0,),
            other_parameters=((x224.PREFERRED_MAX_TPDU_SIZE, b"\x10"), (0xC6, b"\x01")),
        ),
        "12e000004242 22 c0010a c70100 f00110 c60101",
    ),
    (
        x224.ConnectionConfirm(destination_reference=7, source_reference=9, tpdu_size=256),
        "09 d0 0007 0009 00 c00108",
    ),
    (x224.DisconnectRequest(destination_reference=0x17C4), "06 80 17c4 0000 00"),
    (
        x224.DisconnectRequest(
            destination_reference=1,
            source_reference=2,
            reason=x224.REASON_NEGOTIATION_FAILED,
            additional_information=b"why",
        ),
        "0b 80 0001 0002 82 e003776879",
    ),
    (x224.DataTpdu(eot=True, data=b""), "02f080"),
    (x224.DataTpdu(eot=False, data=b"ab"), "02f0006162"),
    (
        x224.ErrorTpdu(destination_reference=0x034C, cause=2, invalid_tpdu=b"\x02\x10"),
        "08 70 034c 02 c1020210",
    ),
    (x224.ErrorTpdu(destination_reference=0), "04 70 0000 00"),
]


def _encode(value: x224.Tpdu) -> bytes:
    if isinstance(value, x224.ConnectionRequest):
        return x224.encode_cr(value)
    if isinstance(value, x224.ConnectionConfirm):
        return x224.encode_cc(value)
    if isinstance(value, x224.DisconnectRequest):
        return x224.encode_dr(value)
    if isinstance(value, x224.ErrorTpdu):
        return x224.encode_er(value)
    return x224.encode_dt(value.data, eot=value.eot)


@pytest.mark.parametrize(("value", "data"), TPDUS)
def test_tpdu_encodes_and_decodes(value: x224.Tpdu, data: str) -> None:
    wire = bytes.fromhex(data.replace(" ", ""))
    assert _encode(value) == wire
    assert x224.decode_tpdu(wire) == value


def test_cr_credit_is_ignored_and_user_data_kept() -> None:
    cr = x224.decode_tpdu(bytes.fromhex("06e30000000100") + b"hi")
    assert cr == x224.ConnectionRequest(source_reference=1, user_data=b"hi")


def test_dt_tpdu_nr_is_not_significant_in_class_0() -> None:
    assert x224.decode_tpdu(bytes.fromhex("02f0ff41")) == x224.DataTpdu(eot=True, data=b"A")
    assert x224.decode_tpdu(bytes.fromhex("02f07f41")) == x224.DataTpdu(eot=False, data=b"A")


@pytest.mark.parametrize(
    ("size", "code"), [(128, 7), (256, 8), (512, 9), (1024, 10), (2048, 11), (8192, 13)]
)
def test_tpdu_size_codes(size: int, code: int) -> None:
    assert x224.tpdu_size_code(size) == code
    assert x224.tpdu_size_of(code) == size


@pytest.mark.parametrize("size", [0, 64, 100, 3000, 16384])
def test_tpdu_size_code_refuses_other_sizes(size: int) -> None:
    with pytest.raises(EncodeError, match="power of two"):
        x224.tpdu_size_code(size)


def test_tpdu_size_of_refuses_other_codes() -> None:
    with pytest.raises(ValueError, match=r"7 \.\.\. 13"):
        x224.tpdu_size_of(14)


@pytest.mark.parametrize(
    "value",
    [
        x224.ConnectionRequest(source_reference=70000),
        x224.ConnectionRequest(source_reference=1, protocol_class=5),
        x224.ConnectionRequest(source_reference=1, calling_tsap=bytes(255)),
        x224.ConnectionRequest(source_reference=1, calling_tsap=bytes(200), called_tsap=bytes(50)),
        x224.DisconnectRequest(destination_reference=1, reason=256),
        x224.ErrorTpdu(destination_reference=1, cause=-1),
    ],
)
def test_encode_refuses_what_x224_cannot_carry(value: x224.Tpdu) -> None:
    with pytest.raises(EncodeError):
        _encode(value)


# (TPDU, ER reject cause, octet in error, why)
BAD_TPDUS = [
    ("02", 0, 0, "TPDU of 1 octets"),
    ("00f0", 0, 0, "LI 0 in a TPDU of 2 octets"),
    ("05f080", 0, 0, "LI 5 in a TPDU of 3 octets"),
    ("ff" + "00" * 255, 0, 0, "LI 255 in a TPDU of 256 octets"),
    ("02c000", 2, 1, "DC TPDU is not used in class 0"),
    ("0410000100", 2, 1, "ED TPDU is not used in class 0"),
    ("02f180", 2, 1, "unknown TPDU code 0xf1"),  # DT with ROA: class 1 only
    ("020000", 2, 1, "unknown TPDU code 0x00"),
    ("04e0000001", 0, 0, "CR with LI 4: the fixed part needs 6"),
    ("04f0800000", 0, 0, "DT with LI 4: class 0 has no other"),
    ("0780000100000001", 3, 7, "parameter without a length"),
    ("0360000100", 2, 1, "AK TPDU is not used in class 0"),
    ("08e000000001 00 c001", 3, 8, "parameter 0xc0 of 1 octets overruns the header"),
    ("07e000000001 00 c0", 3, 7, "parameter without a length"),
    ("09e000000001 00 c00106", 3, 9, "TPDU size parameter 06 is not one octet 07 ... 0d"),
    ("09e000000001 00 c0010e", 3, 9, "TPDU size parameter 0e is not one octet 07 ... 0d"),
    ("0ae000000001 00 c002070b", 3, 9, "TPDU size parameter 070b is not one octet 07 ... 0d"),
    ("06e000000001 50", 3, 6, "protocol class 5"),
    ("09e000000001 20 c70150", 3, 9, "protocol class 5"),
    ("09d000010002 00 990100", 1, 7, "CC parameter 0x99 is not defined"),
]


@pytest.mark.parametrize(("data", "cause", "octet", "why"), BAD_TPDUS)
def test_decode_errors(data: str, cause: int, octet: int, why: str) -> None:
    wire = bytes.fromhex(data)
    with pytest.raises(x224.InvalidTpdu) as raised:
        x224.decode_tpdu(wire)
    error = raised.value
    assert isinstance(error, RemoteProtocolError)
    assert (error.reason, error.octet, error.why, error.layer) == (cause, octet, why, "cotp")


def test_cr_ignores_parameters_x224_does_not_define() -> None:
    cr = x224.decode_cr(bytes.fromhex("0ce000000001 00 990100 c0010b"))
    assert cr.tpdu_size == 2048
    assert cr.other_parameters == ((0x99, b"\x00"),)


@pytest.mark.parametrize(
    ("decode", "data"),
    [
        (x224.decode_cr, "06d00000000100"),
        (x224.decode_cc, "06e00000000100"),
        (x224.decode_dr, "02f080"),
        (x224.decode_er, "02f080"),
        (x224.decode_dt, "0470000100"),
    ],
)
def test_typed_decoders_check_the_code(decode: Callable[[bytes], object], data: str) -> None:
    with pytest.raises(x224.InvalidTpdu, match=r"not a [A-Z]{2} TPDU"):
        decode(bytes.fromhex(data))


# --- golden: the real product's CR, CC and DTs --------------------------------------------------


@pytest.mark.parametrize("capture", [SUCCESS, REFUSE])
def test_golden_tpdus_re_encode_byte_exact(capture: str) -> None:
    records = golden.load_tpkts(capture)
    kinds = []
    for record in records:
        wire = bytes.fromhex(record["hex"])
        value = x224.decode_tpdu(wire[4:])
        kinds.append(type(value).__name__)
        assert encode_tpkt(_encode(value)) == wire
    assert kinds[:2] == ["ConnectionRequest", "ConnectionConfirm"]
    assert set(kinds[2:]) == {"DataTpdu"}


def test_golden_cr_and_cc_fields() -> None:
    records = golden.load_tpkts(SUCCESS)
    assert records[0]["hex"] == GOLDEN_CR and records[1]["hex"] == GOLDEN_CC
    cr = x224.decode_cr(bytes.fromhex(GOLDEN_CR)[4:])
    cc = x224.decode_cc(bytes.fromhex(GOLDEN_CC)[4:])
    assert (cr.calling_tsap, cr.called_tsap, cr.tpdu_size) == (b"X400-88", b"X400-88", None)
    assert (cr.protocol_class, cr.alternative_classes) == (0, ())
    assert (cc.destination_reference, cc.source_reference) == (cr.source_reference, 0x034C)
    assert cc.tpdu_size is None


def _stream_from(records: list[dict[str, object]], port: object) -> bytes:
    return b"".join(bytes.fromhex(str(r["hex"])) for r in records if r["src_port"] == port)


@pytest.mark.parametrize("capture", [SUCCESS, REFUSE])
def test_golden_responder_accepts_the_real_initiator(capture: str) -> None:
    records = golden.load_tpkts(capture)
    initiator_port = records[0]["src_port"]
    cr, cc = str(records[0]["hex"]), str(records[1]["hex"])
    # Octets 7-8 of either TPKT: the SRC-REF of its sender.
    responder = TransportConnection(Role.RESPONDER, source_reference=int(cc[16:20], 16))
    stream = _stream_from(records, initiator_port)
    cr_size = int(records[0]["tpkt_len"])
    events = responder.receive_data(stream[:cr_size])
    assert events == [
        ConnectRequested(
            calling_tsap=b"X400-88",
            called_tsap=b"X400-88",
            tpdu_size=128,
            source_reference=int(cr[16:20], 16),
        )
    ]
    responder.send_accept()
    assert responder.data_to_send().hex() == cc  # what the real responder sent
    # Then the peer sends DT TPDUs of 200 octets and more although 128 was agreed: accepted.
    tsdus = responder.receive_data(stream[cr_size:])
    expected = [t.data for t in golden.tsdus(records) if t.from_initiator]
    assert [e.data for e in tsdus if isinstance(e, TsduReceived)] == expected
    assert responder.state is TransportState.OPEN


@pytest.mark.parametrize("capture", [SUCCESS, REFUSE])
def test_golden_initiator_connects_to_the_real_responder(capture: str) -> None:
    records = golden.load_tpkts(capture)
    responder_port = records[1]["src_port"]
    initiator = TransportConnection(
        Role.INITIATOR, calling_tsap=b"X400-88", called_tsap=b"X400-88", source_reference=1
    )
    initiator.send_connect()
    sent = initiator.data_to_send()
    cr = "03000020 1b e0 0000 0001 00 c107583430302d3838 c207583430302d3838 c0010b"
    assert sent == bytes.fromhex(cr)
    events = initiator.receive_data(_stream_from(records, responder_port))
    assert events[0] == Connected(tpdu_size=128)  # the CC has no TPDU size parameter
    expected = [t.data for t in golden.tsdus(records) if not t.from_initiator]
    assert [e.data for e in events[1:] if isinstance(e, TsduReceived)] == expected


# --- the pair -----------------------------------------------------------------------------------


def _limits(size: int, **more: int) -> StackLimits:
    return StackLimits(max_tpdu_size=size, **more)


def _pair(
    initiator_size: int = 2048, responder_size: int = 2048
) -> tuple[TransportConnection, TransportConnection]:
    initiator = TransportConnection(
        Role.INITIATOR, limits=_limits(initiator_size), called_tsap=b"MTA", source_reference=5
    )
    responder = TransportConnection(
        Role.RESPONDER, limits=_limits(responder_size), source_reference=6
    )
    initiator.send_connect()
    assert initiator.state is TransportState.WAIT_CC
    [requested] = responder.receive_data(initiator.data_to_send())
    agreed = min(initiator_size, responder_size)
    assert requested == ConnectRequested(
        calling_tsap=b"", called_tsap=b"MTA", tpdu_size=agreed, source_reference=5
    )
    responder.send_accept()
    assert initiator.receive_data(responder.data_to_send()) == [Connected(tpdu_size=agreed)]
    assert initiator.state is responder.state is TransportState.OPEN
    assert initiator.tpdu_size == responder.tpdu_size == agreed
    return initiator, responder


def _tpkts(wire: bytes) -> list[bytes]:
    return TpktReader().feed(wire)


@pytest.mark.parametrize("initiator_size", SIZES)
@pytest.mark.parametrize("responder_size", SIZES)
def test_tpdu_size_negotiation(initiator_size: int, responder_size: int) -> None:
    initiator, _responder = _pair(initiator_size, responder_size)
    assert initiator.tpdu_size == min(initiator_size, responder_size)


@pytest.mark.parametrize("size", SIZES)
def test_data_both_ways_every_size(size: int) -> None:
    initiator, responder = _pair(size, 2048)
    room = size - 3
    for length in (0, 1, room - 1, room, room + 1, len(MEGABYTE)):
        data = MEGABYTE[:length]
        for sender, receiver in ((initiator, responder), (responder, initiator)):
            sender.send_tsdu(data)
            wire = sender.data_to_send()
            tpdus = _tpkts(wire)
            assert len(tpdus) == max(1, -(-length // room))
            assert all(len(t) <= size for t in tpdus)
            assert [t[2] for t in tpdus] == [0] * (len(tpdus) - 1) + [x224.EOT]
            assert receiver.receive_data(wire) == [TsduReceived(data=data)]


def test_several_tsdus_in_one_read_and_one_byte_at_a_time() -> None:
    initiator, responder = _pair(128, 128)
    for data in (b"a", b"", MEGABYTE[:1000], b"z" * 125):
        initiator.send_tsdu(data)
    wire = initiator.data_to_send()
    expected = [TsduReceived(data=d) for d in (b"a", b"", MEGABYTE[:1000], b"z" * 125)]
    assert responder.receive_data(wire) == expected
    events: list[Event] = []
    for index in range(len(wire)):
        events += responder.receive_data(wire[index : index + 1])
    assert events == expected
    # trailing bytes: the four TSDUs, then the next two and half of the third, then the rest
    half = len(wire) // 2
    assert responder.receive_data(wire + wire[:half]) == expected + expected[:2]
    assert responder.receive_data(wire[half:]) == expected[2:]


@pytest.mark.parametrize("max_size", [1, 7, 2048, 2051, 65536])
def test_data_to_send_in_pieces_is_the_whole_cut(max_size: int) -> None:
    whole_sender, _ = _pair()
    sender, responder = _pair()
    for connection in (whole_sender, sender):
        for data in (b"head", MEGABYTE[:300_000], b"", b"tail"):
            connection.send_tsdu(data, prefix=b"pre")
    whole = whole_sender.data_to_send()
    pieces: list[bytes] = []
    while piece := sender.data_to_send(max_size):
        pieces.append(piece)
    assert b"".join(pieces) == whole
    assert [len(p) for p in pieces[:-1]] == [max_size] * (len(pieces) - 1)
    assert 0 < len(pieces[-1]) <= max_size
    assert sender.data_to_send() == b""
    events = responder.receive_data(whole)
    assert [e.data for e in events if isinstance(e, TsduReceived)] == [
        b"prehead",
        b"pre" + MEGABYTE[:300_000],
        b"pre",
        b"pretail",
    ]


def test_data_to_send_in_pieces_holds_no_copy_of_the_tsdu() -> None:
    sender, _ = _pair()
    data = MEGABYTE * 4
    sender.send_tsdu(data)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        while sender.data_to_send(64 * 1024):
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - before < 256 * 1024  # a piece or two, not the 4 MB TSDU joined


def test_data_to_send_refuses_a_size_of_nothing() -> None:
    sender, _ = _pair()
    sender.send_tsdu(b"x")
    with pytest.raises(ValueError, match="max_size 0"):
        sender.data_to_send(0)


def test_send_tsdu_takes_memoryview_and_copies_writable_buffers() -> None:
    initiator, responder = _pair(128, 128)
    buffer = bytearray(b"x" * 300)
    initiator.send_tsdu(buffer)
    buffer[:] = b"y" * 300  # changed after sending: what was sent does not change
    initiator.send_tsdu(memoryview(b"abc"))
    assert responder.receive_data(initiator.data_to_send()) == [
        TsduReceived(data=b"x" * 300),
        TsduReceived(data=b"abc"),
    ]


def test_cr_without_tpdu_size_means_128_and_cc_stays_silent() -> None:
    responder = TransportConnection(Role.RESPONDER, source_reference=1)
    cr = x224.ConnectionRequest(source_reference=9)
    [requested] = responder.receive_data(encode_tpkt(x224.encode_cr(cr)))
    assert isinstance(requested, ConnectRequested) and requested.tpdu_size == 128
    responder.send_accept()
    cc = x224.decode_cc(responder.data_to_send()[4:])
    assert cc == x224.ConnectionConfirm(destination_reference=9, source_reference=1)


def test_cc_larger_than_proposed_is_capped() -> None:
    initiator = TransportConnection(Role.INITIATOR, limits=_limits(512))
    initiator.send_connect()
    cc = x224.ConnectionConfirm(destination_reference=1, source_reference=2, tpdu_size=2048)
    assert initiator.receive_data(encode_tpkt(x224.encode_cc(cc))) == [Connected(tpdu_size=512)]


def test_cr_proposing_more_than_class_0_allows_is_capped() -> None:
    responder = TransportConnection(Role.RESPONDER)
    cr = x224.ConnectionRequest(source_reference=9, protocol_class=1, tpdu_size=8192)
    [requested] = responder.receive_data(encode_tpkt(x224.encode_cr(cr)))
    assert isinstance(requested, ConnectRequested) and requested.tpdu_size == 2048


def test_cr_other_parameters_are_ignored() -> None:
    responder = TransportConnection(Role.RESPONDER)
    cr = x224.ConnectionRequest(
        source_reference=9,
        tpdu_size=1024,
        other_parameters=(
            (x224.PREFERRED_MAX_TPDU_SIZE, b"\x00\x40"),
            (x224.ADDITIONAL_OPTIONS, b"\x01"),
            (x224.VERSION_NUMBER, b"\x01"),
            (0x99, b"unknown"),
        ),
        user_data=b"class 0 has none",
    )
    [requested] = responder.receive_data(encode_tpkt(x224.encode_cr(cr)))
    assert isinstance(requested, ConnectRequested) and requested.tpdu_size == 1024
    responder.send_accept()
    cc = x224.decode_cc(responder.data_to_send()[4:])
    assert (cc.tpdu_size, cc.protocol_class, cc.other_parameters) == (1024, 0, ())


# X.224 Table 3: preferred class, alternatives -> may the responder select class 0?
CLASSES = [
    (0, (), True),
    (1, (), True),
    (1, (0,), True),
    (2, (), False),
    (2, (0,), True),
    (2, (2,), False),
    (3, (), False),
    (3, (0,), True),
    (3, (1,), True),
    (3, (2,), False),
    (4, (), False),
    (4, (0,), True),
    (4, (1,), True),
    (4, (2, 3), False),
    (4, (3, 2, 0), True),
]


@pytest.mark.parametrize(("preferred", "alternatives", "allowed"), CLASSES)
def test_class_negotiation(preferred: int, alternatives: tuple[int, ...], allowed: bool) -> None:
    assert class_0_allowed(preferred, alternatives) is allowed
    responder = TransportConnection(Role.RESPONDER, source_reference=3)
    cr = x224.ConnectionRequest(
        source_reference=0x0102,
        protocol_class=preferred,
        alternative_classes=alternatives,
        other_parameters=((x224.CHECKSUM, b"\x00\x00"),) if preferred == 4 else (),
    )
    [event] = responder.receive_data(encode_tpkt(x224.encode_cr(cr)))
    if allowed:
        assert isinstance(event, ConnectRequested)
        responder.send_accept()
        answer = x224.decode_tpdu(responder.data_to_send()[4:])
        assert answer == x224.ConnectionConfirm(destination_reference=0x0102, source_reference=3)
        assert responder.state is TransportState.OPEN
    else:
        assert event == Disconnected(
            reason=x224.REASON_NEGOTIATION_FAILED,
            by_peer=False,
            why=(
                f"CR proposes class {preferred} "
                f"(alternatives: {', '.join(map(str, alternatives)) or 'none'}), not class 0"
            ),
        )
        answer = x224.decode_tpdu(responder.data_to_send()[4:])
        assert answer == x224.DisconnectRequest(destination_reference=0x0102, reason=130)
        assert responder.state is TransportState.CLOSED


@pytest.mark.parametrize("reason", [0, 1, 2, 3])
def test_refusal_with_dr(reason: int) -> None:
    initiator = TransportConnection(Role.INITIATOR, source_reference=0x0A0B)
    responder = TransportConnection(Role.RESPONDER)
    initiator.send_connect()
    responder.receive_data(initiator.data_to_send())
    responder.send_refuse(reason)
    assert responder.state is TransportState.CLOSED
    wire = responder.data_to_send()
    assert wire == bytes.fromhex(f"0300000b 06 80 0a0b 0000 {reason:02x}".replace(" ", ""))
    [event] = initiator.receive_data(wire)
    assert isinstance(event, Disconnected)
    assert (event.reason, event.by_peer, initiator.state) == (reason, True, TransportState.CLOSED)
    assert initiator.data_to_send() == b""  # no answer to a DR


def test_send_refuse_reason_must_be_one_octet() -> None:
    responder = TransportConnection(Role.RESPONDER)
    responder.receive_data(encode_tpkt(x224.encode_cr(x224.ConnectionRequest(source_reference=1))))
    with pytest.raises(LocalProtocolError, match="DR reason 256"):
        responder.send_refuse(256)
    assert responder.state is TransportState.WAIT_ACCEPT


def test_er_received_disconnects() -> None:
    initiator, _responder = _pair()
    er = x224.ErrorTpdu(destination_reference=5, cause=1, invalid_tpdu=b"\x02")
    [event] = initiator.receive_data(encode_tpkt(x224.encode_er(er)))
    assert event == Disconnected(reason=1, by_peer=True, why="ER received: invalid parameter code")
    assert initiator.data_to_send() == b""


# --- protocol errors -----------------------------------------------------------------------------


def _assert_er(
    connection: TransportConnection, event: Event, cause: int, quote: bytes | None = None
) -> None:
    assert isinstance(event, Disconnected)
    assert (event.by_peer, event.reason) == (False, cause)
    assert connection.state is TransportState.CLOSED
    [er] = _tpkts(connection.data_to_send())
    value = x224.decode_er(er)
    assert value.cause == cause
    if quote is not None:
        assert value.invalid_tpdu == quote
    # Closed: whatever comes next is ignored.
    assert connection.receive_data(encode_tpkt(x224.encode_dt(b"more"))) == []
    assert connection.data_to_send() == b""


def test_dt_before_cc_is_an_error() -> None:
    initiator = TransportConnection(Role.INITIATOR)
    responder = TransportConnection(Role.RESPONDER)
    initiator.send_connect()
    responder.receive_data(initiator.data_to_send())
    [event] = responder.receive_data(encode_tpkt(x224.encode_dt(b"early")))
    _assert_er(responder, event, x224.CAUSE_INVALID_TPDU_TYPE, quote=b"\x02\xf0")
    assert isinstance(event, Disconnected)
    assert event.why == "cotp: cannot receive DT in state wait-accept"


def test_bad_tpkt_is_answered_with_er_after_the_good_tpdus() -> None:
    initiator, responder = _pair()
    initiator.send_tsdu(b"fine")
    events = responder.receive_data(initiator.data_to_send() + b"GET / HTTP/1.1\r\n")
    assert events[0] == TsduReceived(data=b"fine")
    _assert_er(responder, events[1], x224.CAUSE_NOT_SPECIFIED, quote=b"GET ")
    assert isinstance(events[1], Disconnected)
    assert events[1].why == "tpkt: TPKT version 71, expected 3"


def test_bad_tpdu_is_answered_with_er_quoting_it() -> None:
    initiator, responder = _pair()
    bad = bytes.fromhex("0ad0000500060099020000")  # a second CC, with an undefined parameter
    [event] = responder.receive_data(encode_tpkt(bad))
    _assert_er(responder, event, x224.CAUSE_INVALID_TPDU_TYPE, quote=bad[:2])
    [event] = initiator.receive_data(encode_tpkt(bytes.fromhex("02f100")))
    _assert_er(initiator, event, x224.CAUSE_INVALID_TPDU_TYPE, quote=b"\x02\xf1")


def test_er_quote_is_bounded_by_the_tpdu_size() -> None:
    responder = TransportConnection(Role.RESPONDER)
    # An ignored 230-octet parameter, then a bad TPDU size at octet 241.
    bad = bytes.fromhex("f1 e0 0000 0001 00 99e6") + bytes(230) + bytes.fromhex("c0 01 05")
    [event] = responder.receive_data(encode_tpkt(bad))
    assert isinstance(event, Disconnected) and event.reason == x224.CAUSE_INVALID_PARAMETER_VALUE
    [er] = _tpkts(responder.data_to_send())
    assert len(er) == 128
    assert x224.decode_er(er).invalid_tpdu == bad[:121]


def test_cc_selecting_another_class_is_an_error() -> None:
    initiator = TransportConnection(Role.INITIATOR)
    initiator.send_connect()
    initiator.data_to_send()
    cc = x224.ConnectionConfirm(destination_reference=1, source_reference=2, protocol_class=2)
    [event] = initiator.receive_data(encode_tpkt(x224.encode_cc(cc)))
    _assert_er(initiator, event, x224.CAUSE_INVALID_PARAMETER_VALUE, quote=x224.encode_cc(cc)[:7])


@pytest.mark.parametrize("size", [128, 2048])
def test_tsdu_limit(size: int) -> None:
    limits = _limits(size, max_tsdu_size=1000)
    responder = TransportConnection(Role.RESPONDER, limits=limits)
    initiator = TransportConnection(Role.INITIATOR, limits=_limits(size))
    initiator.send_connect()
    responder.receive_data(initiator.data_to_send())
    responder.send_accept()
    initiator.receive_data(responder.data_to_send())
    initiator.send_tsdu(bytes(1000))
    assert responder.receive_data(initiator.data_to_send()) == [TsduReceived(data=bytes(1000))]
    initiator.send_tsdu(bytes(1001))
    wire = initiator.data_to_send()
    events = responder.receive_data(wire)
    [event] = events
    _assert_er(responder, event, x224.CAUSE_NOT_SPECIFIED)
    assert isinstance(event, Disconnected) and event.why == "cotp: TSDU longer than 1000 octets"


def test_oversized_dt_from_the_peer_is_accepted() -> None:
    _initiator, responder = _pair(128, 128)
    big = encode_tpkt(x224.encode_dt(bytes(60000)))  # far above the 128 agreed
    assert responder.receive_data(big) == [TsduReceived(data=bytes(60000))]


@pytest.mark.parametrize("size", [0, 100, 4096, 3000])
def test_max_tpdu_size_must_suit_class_0(size: int) -> None:
    with pytest.raises(ValueError, match="class 0 needs"):
        TransportConnection(Role.INITIATOR, limits=_limits(size))


def test_source_reference_must_fit() -> None:
    with pytest.raises(ValueError, match="source_reference"):
        TransportConnection(Role.INITIATOR, source_reference=65536)


def test_each_connection_has_its_own_reference_in_its_cr_and_cc() -> None:
    references = []
    for role in (Role.INITIATOR, Role.INITIATOR, Role.RESPONDER):
        connection = TransportConnection(role)
        assert 1 <= connection.source_reference <= 0xFFFF
        references.append(connection.source_reference)
    assert len(set(references)) == 3
    initiator = TransportConnection(Role.INITIATOR)
    responder = TransportConnection(Role.RESPONDER)
    initiator.send_connect()
    cr = x224.decode_cr(initiator.data_to_send()[4:])
    assert cr.source_reference == initiator.source_reference
    responder.receive_data(encode_tpkt(x224.encode_cr(cr)))
    responder.send_accept()
    cc = x224.decode_cc(responder.data_to_send()[4:])
    assert (cc.destination_reference, cc.source_reference) == (
        initiator.source_reference,
        responder.source_reference,
    )
    assert cc.source_reference != cr.source_reference


# --- every (state, input) ------------------------------------------------------------------------

STATES = [
    (Role.INITIATOR, TransportState.IDLE),
    (Role.RESPONDER, TransportState.LISTEN),
    (Role.INITIATOR, TransportState.WAIT_CC),
    (Role.RESPONDER, TransportState.WAIT_ACCEPT),
    (Role.INITIATOR, TransportState.OPEN),
    (Role.RESPONDER, TransportState.OPEN),
    (Role.INITIATOR, TransportState.CLOSED),
    (Role.RESPONDER, TransportState.CLOSED),
]

RECEIVED = {
    Input.RECV_CR: x224.encode_cr(x224.ConnectionRequest(source_reference=7, tpdu_size=512)),
    Input.RECV_CC: x224.encode_cc(
        x224.ConnectionConfirm(destination_reference=1, source_reference=7)
    ),
    Input.RECV_DR: x224.encode_dr(x224.DisconnectRequest(destination_reference=1, reason=1)),
    Input.RECV_DT: x224.encode_dt(b"data"),
    Input.RECV_ER: x224.encode_er(x224.ErrorTpdu(destination_reference=1, cause=0)),
}
SENDS: dict[Input, Callable[[TransportConnection], None]] = {
    Input.SEND_CR: TransportConnection.send_connect,
    Input.SEND_CC: TransportConnection.send_accept,
    Input.SEND_DR: TransportConnection.send_refuse,
    Input.SEND_DT: lambda connection: connection.send_tsdu(b"data"),
}


def _in_state(role: Role, state: TransportState) -> TransportConnection:
    connection = TransportConnection(role)
    if state is TransportState.OPEN:
        initiator, responder = _pair()
        connection = initiator if role is Role.INITIATOR else responder
    elif state is TransportState.WAIT_CC:
        connection.send_connect()
    elif state is TransportState.WAIT_ACCEPT:
        connection.receive_data(encode_tpkt(RECEIVED[Input.RECV_CR]))
    elif state is TransportState.CLOSED:
        connection.receive_data(encode_tpkt(RECEIVED[Input.RECV_ER]))
    connection.data_to_send()
    assert connection.state is state
    return connection


def _apply(connection: TransportConnection, what: Input) -> list[Event]:
    """Apply ``what`` and check the table's rule; returns the events."""
    before = connection.state
    allowed = (before, what) in TRANSITIONS
    if what in SENDS:
        if not allowed:
            with pytest.raises(LocalProtocolError, match="cannot"):
                SENDS[what](connection)
            assert connection.state is before
            assert connection.data_to_send() == b""
            return []
        SENDS[what](connection)
        assert connection.state is TRANSITIONS[before, what]
        assert connection.data_to_send()
        return []
    events = connection.receive_data(encode_tpkt(RECEIVED[what]))
    if before is TransportState.CLOSED:
        assert (events, connection.data_to_send()) == ([], b"")
    elif allowed:
        assert connection.state is TRANSITIONS[before, what]
        if connection.closed:
            [event] = events
            assert isinstance(event, Disconnected) and event.by_peer
            assert connection.data_to_send() == b""
    else:
        [event] = events
        _assert_er(connection, event, x224.CAUSE_INVALID_TPDU_TYPE, quote=RECEIVED[what][:2])
    return events


@pytest.mark.parametrize(("role", "state"), STATES)
@pytest.mark.parametrize("what", list(Input))
def test_every_state_and_input(role: Role, state: TransportState, what: Input) -> None:
    _apply(_in_state(role, state), what)


@settings(max_examples=examples(3), suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(STATES), st.lists(st.sampled_from(list(Input)), max_size=8))
def test_random_walks_keep_to_the_table(
    start: tuple[Role, TransportState], inputs: list[Input]
) -> None:
    connection = _in_state(*start)
    for what in inputs:
        _apply(connection, what)
        assert connection.state in TransportState


def test_table_covers_only_live_states() -> None:
    assert all(state is not TransportState.CLOSED for state, _ in TRANSITIONS)
    # A DR or ER from the peer ends the connection in every live state, never answered.
    for state in TransportState:
        if state is not TransportState.CLOSED:
            assert TRANSITIONS[state, Input.RECV_ER] is TransportState.CLOSED
            assert TRANSITIONS[state, Input.RECV_DR] is TransportState.CLOSED


# --- random and mutated bytes --------------------------------------------------------------------


def _check_only_events(connection: TransportConnection, data: bytes) -> None:
    """Random input gives events, never an exception; a close always comes with one."""
    was_closed = connection.closed
    events = connection.receive_data(data)
    assert all(isinstance(e, Event) for e in events)
    if was_closed:
        assert events == []
    elif connection.closed:
        last = events[-1]
        assert isinstance(last, Disconnected)
        assert sum(isinstance(e, Disconnected) for e in events) == 1
        [*answers] = map(x224.decode_tpdu, _tpkts(connection.data_to_send()))
        if last.by_peer:
            assert answers == []  # a DR or ER is never answered
        else:
            [answer] = answers
            assert isinstance(answer, x224.ErrorTpdu | x224.DisconnectRequest)


def _connections() -> list[TransportConnection]:
    return [_in_state(role, state) for role, state in STATES[:6]]


@settings(max_examples=examples(3), suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_random_bytes_only_give_events(data: bytes) -> None:
    for connection in _connections():
        _check_only_events(connection, data)
        _check_only_events(connection, encode_tpkt(data) if 3 <= len(data) <= 65531 else data)


@settings(max_examples=examples(4), suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([GOLDEN_CR, GOLDEN_CC, "0300000c02f08068656c6c6f", "0300000b06800001000003"]),
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 6),
)
def test_mutated_tpdus_only_give_events(
    original: str, changes: list[tuple[int, int]], cut: int
) -> None:
    data = bytearray(bytes.fromhex(original))
    for index, value in changes:
        data[index % len(data)] = value
    mutated = bytes(data[: len(data) - cut])
    for connection in _connections():
        _check_only_events(connection, mutated)
