"""The transfer path's quick codecs and unjoined buffers agree with the general ones.

The data phase of an association (GT + AS, GT + DT, GT + MIP, PT + MIA, GT + MAP, PT + MAA,
P-DATA{RTTR}) is coded without the general SPDU and BER machinery, and a large transfer is
passed between the layers as views and (head, data) pairs rather than joined bytes.  Every
test here holds one of those shortcuts to the result of the general path: the same bytes on
the wire, the same events and states, the same refusals, and fewer copies.
"""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import samples
from p1 import ber
from p1.association.connection import (
    AssociationSettings,
    BindAccepted,
    BindRequested,
    P1Association,
    TransferConfirmed,
    TransferReceived,
)
from p1.association.mtabind import MTABindArgument, MTABindResult
from p1.association.pdus import plain_apdu
from p1.association.transfer import decode_transfer, encode_transfer
from p1.errors import DecodeError, EncodeError
from p1.osi import Event, Role, cotp, presentation, rtse, tpkt
from p1.osi import tpdu as x224
from p1.osi.rtse_transfer import (
    CHECKPOINT_UNIT,
    End,
    InboundTransfer,
    OutboundTransfer,
    Piece,
    Sync,
)
from p1.osi.session import DataReceived, DataViewReceived, SessionConnection
from p1.osi.x225 import spdu
from p1.osi.x225.spdu import Kind, Spdu
from tests.p1.osi.test_session import RECIPES, Pair
from tests.profiles import examples

SERIAL_KINDS = (Kind.MIP, Kind.MIA, Kind.MAP, Kind.MAA)
SERIALS = [0, 1, 2, 9, 10, 64, 99, 100, 1023, 1024, 65535, 999_999, 9_999_999_999]


# --- session codec ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", SERIAL_KINDS, ids=lambda k: k.name)
@pytest.mark.parametrize("serial", SERIALS)
def test_serial_tsdu_is_what_the_general_encoder_gives(kind: Kind, serial: int) -> None:
    general = spdu.encode_tsdu(Spdu(kind=kind, serial_number=serial))
    assert spdu.encode_serial_tsdu(kind, serial) == general
    assert spdu.encode_serial_tsdu(kind, serial) == general  # and again, from the cache
    assert spdu.decode_plain_tsdu(general) == (kind, serial, None, b"")


@pytest.mark.parametrize("activity_id", [b"", b"\x02\x01\x01", b"\x02\x02\x01\x00", bytes(6)])
def test_activity_start_tsdu_is_what_the_general_encoder_gives(activity_id: bytes) -> None:
    general = spdu.encode_tsdu(Spdu(kind=Kind.AS, activity_identifier=activity_id))
    assert spdu.encode_activity_start_tsdu(activity_id) == general
    assert spdu.decode_plain_tsdu(general) == (Kind.AS, None, None, activity_id)


@pytest.mark.parametrize("data", [b"", b"x", bytes(5000)])
def test_dt_prefix_is_what_the_general_encoder_gives(data: bytes) -> None:
    general = spdu.encode_tsdu(Spdu(kind=Kind.DT, user_data=data))
    assert spdu.DT_PREFIX + data == general
    plain = spdu.decode_plain_tsdu(general)
    assert plain is not None and plain[0] is Kind.DT and bytes(plain[3]) == data


def test_plain_encoders_refuse_what_they_cannot_code() -> None:
    with pytest.raises(EncodeError):
        spdu.encode_serial_tsdu(Kind.MIP, -1)
    with pytest.raises(EncodeError):
        spdu.encode_serial_tsdu(Kind.DT, 1)
    with pytest.raises(EncodeError):
        spdu.encode_activity_start_tsdu(bytes(7))


@pytest.mark.parametrize(
    "tsdu",
    [
        "0100 2906 0f0101 2a0131",  # MAP with a sync type item: a major sync point
        "0100 0103 190103 41",  # DT with an enclosure item
        "0100 3105 2a0131 2a0132",  # two serial numbers
        "0100 3103 2a0161",  # a serial number that is not digits
        "0100 3102 2a00",  # an empty serial number
        "0100 310d 2a0b 3132333435363738393031",  # eleven digits
        "0100 3104 2a0131 00",  # trailing octet in the parameter field
        "0100 3103 2a0131 00",  # an octet after the SPDU
        "0103 100101 3103 2a0131",  # a GT that gives tokens
        "0300 3103 2a0131",  # no category 0 SPDU first
        "0100 2d00",  # AS without an activity identifier
        "0100 2d04 290101 290101",  # two activity identifiers
        "0100 31ff0003 2a0131",  # a three-octet length
        "0100 3103 c10131",  # user data in MIP
        "0100 3003 320101",  # ED is not a plain SPDU
        "0100 31",  # cut short
    ],
)
def test_plain_decoder_leaves_the_rest_to_the_general_one(tsdu: str) -> None:
    assert spdu.decode_plain_tsdu(bytes.fromhex(tsdu)) is None


def _units(draw: st.DrawFn) -> bytes:
    codes = st.sampled_from([15, 16, 25, 41, 42, 42, 42, 46, 193, 0])
    values = st.one_of(
        st.binary(max_size=4),
        st.text("0123456789", min_size=1, max_size=12).map(str.encode),
    )
    units = draw(st.lists(st.tuples(codes, values), max_size=3))
    return b"".join(bytes((code, len(value))) + value for code, value in units)


@st.composite
def data_phase_tsdus(draw: st.DrawFn) -> bytes:
    """Mostly well-formed data-phase TSDUs, with every kind of small damage."""
    first = draw(st.sampled_from([b"\x01\x00", b"\x02\x00", b"\x01\x03\x10\x01\x01", b"\x19\x00"]))
    si = draw(st.sampled_from([1, 45, 49, 50, 41, 42, 48, 25, 0, 99]))
    field = _units(draw)
    size = draw(st.one_of(st.just(len(field)), st.integers(0, 255)))
    tail = draw(st.one_of(st.just(b""), st.binary(max_size=6)))
    tsdu = first + bytes((si, size)) + field + tail
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(tsdu)))
        tsdu = tsdu[:cut]
    return tsdu


@pytest.mark.slow
@settings(max_examples=examples(15))
@given(data_phase_tsdus())
def test_plain_decoder_agrees_with_the_general_one(tsdu: bytes) -> None:
    plain = spdu.decode_plain_tsdu(tsdu)
    if plain is None:
        return
    first, second = spdu.decode_tsdu(tsdu)  # never raises when the plain decoder took it
    assert first.kind in (Kind.GT, Kind.PT) and not first.token_item and not first.user_data
    kind, serial, sync_type, data = plain
    assert second.kind is kind and second.enclosure_item is None
    assert second.serial_number == serial and second.sync_type_item == sync_type
    if kind is Kind.AS:
        assert second.activity_identifier == data and not second.user_data
    else:
        assert bytes(second.user_data) == bytes(data)


# --- session machine: the plain path and the general path --------------------------------------

_STATES = [
    "open with tokens",
    "open without tokens",
    "activity sender",
    "activity receiver",
    "synced receiver",
    "wait AEA",
    "wait activity end response",
    "exception sent",
    "wait AIA",
    "closed",
]
_VALID = [
    spdu.DT_PREFIX + b"data",
    spdu.encode_activity_start_tsdu(b"\x02\x01\x07"),
    *(spdu.encode_serial_tsdu(kind, serial) for kind in SERIAL_KINDS for serial in (0, 1, 2, 5)),
]


def _outcome(subject: SessionConnection, tsdu: bytes | bytearray) -> object:
    events = subject.receive_tsdu(tsdu)  # type: ignore[arg-type]  # (any buffer is read)
    return events, subject.state, subject.tokens, subject.tsdus_to_send()


def _both_paths(recipe: str, tsdu: bytes) -> None:
    """bytes take the plain path where they can; a bytearray always the general one."""
    build = RECIPES[recipe][1]
    assert _outcome(build(), tsdu) == _outcome(build(), bytearray(tsdu))


@pytest.mark.parametrize("tsdu", _VALID, ids=lambda t: t.hex())
@pytest.mark.parametrize("recipe", _STATES)
def test_plain_receipt_matches_the_general_one(recipe: str, tsdu: bytes) -> None:
    _both_paths(recipe, tsdu)


@settings(max_examples=examples(3))
@given(st.sampled_from(_STATES), data_phase_tsdus())
def test_plain_receipt_matches_the_general_one_for_any_tsdu(recipe: str, tsdu: bytes) -> None:
    _both_paths(recipe, tsdu)


def _connected_pair(*, views: bool, tsdu_maximum_size: int = 0) -> Pair:
    pair = Pair(
        SessionConnection(Role.INITIATOR, tsdu_maximum_size=tsdu_maximum_size),
        SessionConnection(Role.RESPONDER, tsdu_maximum_size=tsdu_maximum_size, data_views=views),
    )
    pair.initiator.send_connect(b"CP")
    pair.pump()
    pair.responder.send_accept(b"CPA")
    pair.pump()
    return pair


@pytest.mark.parametrize("size", [0, 1, 100, 70000])
@pytest.mark.parametrize("limit", [0, 512])
def test_data_with_a_prefix_is_the_data_joined(size: int, limit: int) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    joined = _connected_pair(views=False, tsdu_maximum_size=limit)
    apart = _connected_pair(views=False, tsdu_maximum_size=limit)
    joined.initiator.send_data(b"HEAD" + data)
    apart.initiator.send_data(memoryview(data), prefix=b"HEAD")
    assert apart.initiator.tsdus_to_send() == joined.initiator.tsdus_to_send()


def test_tsdu_parts_join_to_the_tsdus() -> None:
    parts = _connected_pair(views=False)
    whole = _connected_pair(views=False)
    for pair in (parts, whole):
        pair.initiator.send_activity_start(b"\x02\x01\x01")
        pair.initiator.send_data(b"payload", prefix=b"P")
        pair.initiator.send_minor_sync()
    assert [head + data for head, data in parts.initiator.tsdu_parts_to_send()] == (
        whole.initiator.tsdus_to_send()
    )
    assert parts.initiator.tsdu_parts_to_send() == []


def test_data_from_a_writable_buffer_is_taken_when_sent() -> None:
    pair = _connected_pair(views=False)
    buffer = bytearray(b"before")
    pair.initiator.send_data(memoryview(buffer))
    buffer[:] = b"after!"
    [(head, data)] = pair.initiator.tsdu_parts_to_send()
    assert head + data == spdu.DT_PREFIX + b"before"


def test_data_views_give_the_same_octets_uncopied() -> None:
    pair = _connected_pair(views=True)
    pair.initiator.send_data(b"x" * 1000)
    [tsdu] = pair.initiator.tsdus_to_send()
    [event] = pair.responder.receive_tsdu(tsdu)
    assert isinstance(event, DataViewReceived)
    assert event.user_data == b"x" * 1000 and event.user_data.obj is tsdu
    plain = _connected_pair(views=False)
    plain.initiator.send_data(b"x" * 1000)
    assert plain.responder.receive_tsdu(plain.initiator.tsdus_to_send()[0]) == [
        DataReceived(user_data=b"x" * 1000)
    ]


# --- presentation and RTSE -----------------------------------------------------------------------

_VALUE_SIZES = [0, 1, 125, 126, 127, 128, 255, 256, 65535, 65536, 70000]


@pytest.mark.parametrize("size", _VALUE_SIZES)
@pytest.mark.parametrize("context_id", [1, 3, 5, 127])
def test_pdv_header_and_view_match_encode_pdv(size: int, context_id: int) -> None:
    value = rtse.encode_rttr(bytes(size))
    encoded = presentation.encode_pdv(context_id, value)
    assert presentation.pdv_header(context_id, len(value)) + value == encoded
    view = presentation.decode_pdv_view(encoded)
    assert view is not None and view[0] == context_id and view[1] == value
    assert view[1].obj is encoded  # a view, not a copy


@pytest.mark.parametrize("size", _VALUE_SIZES)
def test_rttr_header_and_view_match_the_rttr_codec(size: int) -> None:
    chunk = bytes(range(256)) * (size // 256) + bytes(size % 256)
    encoded = rtse.encode_rttr(chunk)
    assert rtse.rttr_header(size) + chunk == encoded
    view = rtse.decode_rttr_view(encoded)
    assert view is not None and view == chunk == rtse.decode_rttr(encoded)


@pytest.mark.parametrize(
    "data",
    [
        "6180",  # indefinite
        "610b 3008 020103 a0 03 040100",  # lengths that do not add up
        "610b 3009 0601 51 020103 a0 00",  # a transfer syntax name first
        "610b 3009 02020003 a003 040100",  # a two-octet context identifier
        "6109 3007 020180 a0 02 0400",  # a negative one
        "6110 3007 020103 a0 02 0400 3005 020103 a000",  # two PDVs
        "610b 3009 020103 a004 04010000",  # a value with trailing octets
        "6108 3006 020103 a1 01 00",  # octet-aligned, not single-ASN1-type
        "4108 3006 020103 a0 02 0400",  # simply-encoded-data
        "6108 3006 020103 a0 02 1f00",  # a high tag number inside
    ],
)
def test_pdv_view_leaves_the_rest_to_decode_user_data(data: str) -> None:
    assert presentation.decode_pdv_view(bytes.fromhex(data.replace(" ", ""))) is None


@pytest.mark.slow
@settings(max_examples=examples(10))
@given(st.integers(1, 200), st.binary(max_size=300), st.data())
def test_pdv_view_agrees_with_decode_user_data(
    context_id: int, inner: bytes, data: st.DataObject
) -> None:
    encoded = bytearray(presentation.encode_pdv(context_id, rtse.encode_rttr(inner)))
    for _ in range(data.draw(st.integers(0, 3))):
        position = data.draw(st.integers(0, len(encoded) - 1))
        encoded[position] = data.draw(st.integers(0, 255))
    encoded = encoded[: data.draw(st.integers(0, len(encoded)))]
    view = presentation.decode_pdv_view(bytes(encoded))
    if view is None:
        return
    [pdv] = presentation.decode_user_data(bytes(encoded))
    assert pdv.context_id == view[0] and pdv.value == view[1]
    assert pdv.encoding is presentation.Encoding.SINGLE_ASN1_TYPE and pdv.transfer_syntax is None
    octets = rtse.decode_rttr_view(view[1])
    if octets is not None:
        assert rtse.decode_rttr(view[1]) == octets


@pytest.mark.parametrize("data", ["2400", "0480", "0402 00", "0401 0000", "04", ""])
def test_rttr_view_leaves_the_rest_to_decode_rttr(data: str) -> None:
    assert rtse.decode_rttr_view(bytes.fromhex(data.replace(" ", ""))) is None


def test_read_definite() -> None:
    view = memoryview(bytes.fromhex("0482000100"))
    assert presentation.read_definite(view, 0, 5) == (0x04, 4, 5)
    assert presentation.read_definite(view, 0, 4) is None  # runs past the end
    assert presentation.read_definite(memoryview(b"\x1f\x01\x00"), 0, 3) is None
    assert presentation.read_definite(memoryview(b"\x30\x80\x00\x00"), 0, 4) is None
    with pytest.raises(DecodeError):  # what the general reader says about the same octets
        ber.read_single(b"\x30\x80\x00", "x")


# --- RT-TRANSFER bookkeeping ----------------------------------------------------------------------


def _pieces(transfer: OutboundTransfer) -> list[bytes]:
    out: list[bytes] = []
    confirmed = 0
    while not transfer.done:
        steps = transfer.steps()
        for step in steps:
            if isinstance(step, Piece):
                out.append(step.head + bytes(step.data))
        syncs = sum(isinstance(step, Sync) for step in steps)
        assert isinstance(steps[-1], End | Sync)
        for _ in range(syncs):  # one at a time (serial numbers count from 1)
            confirmed += 1
            transfer.confirm_sync(confirmed)
    return out


@pytest.mark.parametrize("head_size", [0, 5, CHECKPOINT_UNIT, CHECKPOINT_UNIT + 3])
@pytest.mark.parametrize("size", [0, 1, CHECKPOINT_UNIT - 5, 3 * CHECKPOINT_UNIT, 5000])
@pytest.mark.parametrize("checkpoint_size", [0, 1, 2])
def test_pieces_of_head_and_octets(head_size: int, size: int, checkpoint_size: int) -> None:
    head = bytes(range(head_size % 256)) + b"h" * (head_size - head_size % 256)
    octets = bytes(range(256)) * (size // 256) + b"o" * (size % 256)
    apart = _pieces(OutboundTransfer(1, octets, checkpoint_size, 3, head=head))
    joined = _pieces(OutboundTransfer(1, head + octets, checkpoint_size, 3))
    assert apart == joined and b"".join(apart) == head + octets


# --- transport and TPKT -----------------------------------------------------------------------


@settings(max_examples=examples(3))
@given(
    st.lists(st.binary(min_size=3, max_size=3000), min_size=1, max_size=8),
    st.lists(st.integers(min_value=1, max_value=5000), max_size=20),
)
def test_tpkt_views_are_the_tpdus(tpdus: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(tpkt.encode_tpkt(t) for t in tpdus)
    reader = tpkt.TpktReader()
    out: list[bytes] = []
    offset = 0
    for cut in [*cuts, len(stream)]:
        chunk = stream[offset : offset + cut]
        views = reader.feed_views(chunk)
        assert all(view.obj is chunk for view in views[1:])  # only the first may straddle
        out += [bytes(view) for view in views]
        offset += cut
    assert out == tpdus


def test_tpkt_views_of_one_read_are_not_copies() -> None:
    stream = b"".join(tpkt.encode_tpkt(b"\x02\xf0\x80" + bytes(n)) for n in (10, 2000, 30))
    views = tpkt.TpktReader().feed_views(stream)
    assert [len(view) for view in views] == [13, 2003, 33]
    assert all(view.obj is stream for view in views)


def _open_transports() -> tuple[cotp.TransportConnection, cotp.TransportConnection]:
    initiator = cotp.TransportConnection(Role.INITIATOR)
    responder = cotp.TransportConnection(Role.RESPONDER)
    initiator.send_connect()
    responder.receive_data(initiator.data_to_send())
    responder.send_accept()
    initiator.receive_data(responder.data_to_send())
    return initiator, responder


@pytest.mark.parametrize("size", [0, 1, 2030, 2031, 2045, 2046, 4090, 4091, 100_000])
@pytest.mark.parametrize("prefix", [b"", b"P" * 15, b"Q" * 2045, b"R" * 2046])
def test_tsdu_with_a_prefix_is_the_tsdu_joined(size: int, prefix: bytes) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    joined, responder = _open_transports()
    apart, _ = _open_transports()
    joined.send_tsdu(prefix + data)
    apart.send_tsdu(memoryview(data), prefix=prefix)
    wire = apart.data_to_send()
    assert wire == joined.data_to_send()
    assert responder.receive_data(wire) == [cotp.TsduReceived(data=prefix + data)]


def test_tsdu_of_dt_tpdus_in_many_reads_is_joined_once() -> None:
    initiator, responder = _open_transports()
    data = bytes(range(256)) * 400
    initiator.send_tsdu(data)
    wire = initiator.data_to_send()
    events: list[Event] = []
    for offset in range(0, len(wire), 777):
        events += responder.receive_data(wire[offset : offset + 777])
    assert events == [cotp.TsduReceived(data=data)]


def test_oversized_tsdu_still_refused_with_er() -> None:
    initiator, responder = _open_transports()
    responder._max_tsdu_size = 3000
    initiator.send_tsdu(bytes(5000))
    [event] = responder.receive_data(initiator.data_to_send())
    assert isinstance(event, cotp.Disconnected) and not event.by_peer
    assert responder.closed and responder.data_to_send()[4 + 1] == x224.ER


# --- the association: the same octets, fewer copies ------------------------------------------

ARGUMENT = MTABindArgument(initiator_name="fast-a", password="secret")
RESULT = MTABindResult(responder_name="fast-b", password="secret")


def _bound(checkpoint_size: int) -> tuple[P1Association, P1Association]:
    initiator = P1Association(Role.INITIATOR, AssociationSettings(checkpoint_size=checkpoint_size))
    responder = P1Association(Role.RESPONDER)
    initiator.send_bind(ARGUMENT)
    for _ in range(4):
        for event in responder.receive_data(initiator.data_to_send()):
            if isinstance(event, BindRequested):
                responder.accept_bind(RESULT)
        if any(
            isinstance(e, BindAccepted) for e in initiator.receive_data(responder.data_to_send())
        ):
            return initiator, responder
    raise AssertionError("no bind")


def _tsdus(wire: bytes) -> list[bytes]:
    """The TSDUs of a stream of class 0 DT TPDUs."""
    tsdus: list[bytes] = []
    parts: list[bytes] = []
    for tpdu in tpkt.TpktReader().feed(wire):
        parts.append(tpdu[3:])
        if tpdu[2] & x224.EOT:
            tsdus.append(b"".join(parts))
            parts = []
    return tsdus


@pytest.mark.parametrize("checkpoint_size", [0, 1, 4])
@pytest.mark.parametrize("size", [10, 3000, 9000])
def test_transfer_octets_on_the_wire(checkpoint_size: int, size: int) -> None:
    """Each P-DATA holds encode_pdv(3, encode_rttr(piece)) of encode_transfer(apdu)."""
    initiator, responder = _bound(checkpoint_size)
    apdu = samples.message_bytes(size)
    transfer_id = initiator.send_transfer(apdu)
    octets = encode_transfer(apdu)
    piece = checkpoint_size * CHECKPOINT_UNIT or len(octets)
    expected = [
        spdu.DT_PREFIX + presentation.encode_pdv(3, rtse.encode_rttr(octets[at : at + piece]))
        for at in range(0, len(octets), piece)
    ]
    sent: list[bytes] = []
    received: list[Event] = []
    while not any(isinstance(e, TransferConfirmed) for e in received):
        wire = initiator.data_to_send()
        sent += _tsdus(wire)
        for event in responder.receive_data(wire):
            if isinstance(event, TransferReceived):
                assert event.transfer_id == transfer_id and event.apdu == apdu
                assert type(event.apdu) is bytes
                responder.confirm_transfer(event.transfer_id)
        received = initiator.receive_data(responder.data_to_send())
    assert [t for t in sent if t.startswith(spdu.DT_PREFIX)] == expected
    assert sent[0] == spdu.encode_activity_start_tsdu(ber.tlv(ber.INTEGER, b"\x01"))
    pieces = [presentation.decode_user_data(t[len(spdu.DT_PREFIX) :])[0].value for t in expected]
    assert decode_transfer(b"".join(map(rtse.decode_rttr, pieces))).apdu == apdu


def test_a_megabyte_transfer_is_copied_once_each_way() -> None:
    initiator, responder = _bound(0)
    apdu = samples.message_bytes(1 << 20)
    tracemalloc.start()
    try:
        initiator.send_transfer(apdu)
        wire = initiator.data_to_send()
        _, sent_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        events = responder.receive_data(wire)
        _, received_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    [event] = events
    assert isinstance(event, TransferReceived) and event.apdu == apdu
    # Sending: the wire octets only.  Receiving: the joined TSDU, then the MTS-APDU.
    assert sent_peak < len(wire) + 256 * 1024
    assert received_peak - before < 2 * len(apdu) + 256 * 1024


def _inbound(octets: bytes, cuts: list[int]) -> InboundTransfer:
    inbound = InboundTransfer(1, 1 << 30)
    start = 0
    for cut in sorted({0, *cuts, len(octets)}):
        if cut > start:
            inbound.add(memoryview(octets)[start:cut])
            start = cut
    return inbound


@pytest.mark.parametrize("size", [10, 3000, 70000])
@pytest.mark.parametrize("cuts", [[], [1], [16], [17, 5000], [1024, 2048, 3072]])
def test_plain_apdu_is_what_decode_transfer_gives(size: int, cuts: list[int]) -> None:
    apdu = samples.message_bytes(size)
    octets = encode_transfer(apdu)
    inbound = _inbound(octets, cuts)
    found = plain_apdu(inbound)
    if len(inbound.head(16)) < 16:
        assert found is None  # a first piece this short: the general path
    else:
        assert found == apdu and type(found) is bytes
    assert decode_transfer(inbound.octets()).apdu == apdu


@pytest.mark.parametrize(
    "octets",
    [
        "2880 020105 a080 0400 0000 0000",  # indefinite lengths
        "2806 a004 04020000 00000000000000",  # no indirect reference
        "2809 020103 a004 04020000 0000000000",  # indirect reference 3
        "2809 020105 a104 04020000 0000000000",  # octet-aligned
        "280a 020105 a005 0402000000 00000000",  # [0] holding more than one value
    ],
)
def test_plain_apdu_leaves_other_forms_to_decode_transfer(octets: str) -> None:
    assert plain_apdu(_inbound(bytes.fromhex(octets.replace(" ", "")), [])) is None


@settings(max_examples=examples(5))
@given(st.binary(min_size=2, max_size=200), st.data())
def test_plain_apdu_agrees_with_decode_transfer(content: bytes, data: st.DataObject) -> None:
    octets = bytearray(encode_transfer(ber.tlv(ber.OCTET_STRING, content)))
    for _ in range(data.draw(st.integers(0, 3))):
        position = data.draw(st.integers(0, len(octets) - 1))
        octets[position] = data.draw(st.integers(0, 255))
    cuts = data.draw(st.lists(st.integers(0, len(octets)), max_size=3))
    found = plain_apdu(_inbound(bytes(octets), cuts))
    if found is not None:
        transfer = decode_transfer(bytes(octets))
        assert transfer.apdu == found and transfer.indirect_reference == 5
