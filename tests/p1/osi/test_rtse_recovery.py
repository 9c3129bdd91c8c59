"""What recovery keeps (X.228): the session connection identifier's codec, checkpoint
marks on both sides of a transfer, and the receiver's bounded keep of partial transfers."""

from __future__ import annotations

import re

import pytest

from p1 import ber
from p1.errors import DecodeError
from p1.osi import LocalProtocolError
from p1.osi.rtse_recovery import (
    PartialTransfer,
    PartialTransfers,
    SessionConnectionId,
    decode_session_connection_id,
)
from p1.osi.rtse_transfer import CHECKPOINT_UNIT, End, InboundTransfer, OutboundTransfer, Piece
from p1.osi.x225.spdu import ConnectionIdentifier

ONE = SessionConnectionId(calling_reference=b"\x01\x02", common_reference=b"260422101500Z")
TWO = SessionConnectionId(
    calling_reference=b"two", common_reference=b"260422101501Z", additional=b"x"
)


# --- the session connection identifier -------------------------------------------------


@pytest.mark.parametrize(
    ("value", "hex_"),
    [
        (ONE, "3013 04020102 170d3236303432323130313530305a"),
        (TWO, "3017 040374776f 170d3236303432323130313530315a 800178"),
    ],
)
def test_session_connection_identifier_codec(value: SessionConnectionId, hex_: str) -> None:
    wire = bytes.fromhex(hex_)
    assert value.encode() == wire
    assert decode_session_connection_id(wire) == value


def test_a_t61_string_calling_reference_is_read_as_its_octets() -> None:
    # (X.410-1984 mode's alternative of CallingSSuserReference)
    wire = ber.constructed(
        ber.SEQUENCE,
        [ber.tlv(ber.universal(20), b"mta"), ber.tlv(ber.UTC_TIME, b"260422101500Z")],
    )
    assert decode_session_connection_id(wire).calling_reference == b"mta"


@pytest.mark.parametrize(
    ("hex_", "message"),
    [
        ("3100", "expected [UNIVERSAL 16], found [UNIVERSAL 17]"),
        ("3004 04020102", "1 members, not 2 or 3"),
        ("3006 020101 170130", "callingSSuserReference is [UNIVERSAL 2]"),
        ("3006 040101 040130", "commonReference: expected [UNIVERSAL 23]"),
        ("3009 040101 170130 810178", "additionalReferenceInformation: expected [0]"),
    ],
)
def test_session_connection_identifier_decode_errors(hex_: str, message: str) -> None:
    with pytest.raises(DecodeError, match=re.escape(message)):
        decode_session_connection_id(bytes.fromhex(hex_))


def test_identifier_as_the_cn_carries_it_and_back() -> None:
    carried = TWO.connection_identifier()
    assert carried == ConnectionIdentifier(
        calling_ss_user_reference=b"two",
        common_reference=b"260422101501Z",
        additional_reference_information=b"x",
    )
    assert SessionConnectionId.of(carried) == TWO
    assert SessionConnectionId.of(None) is None
    assert SessionConnectionId.of(ConnectionIdentifier(common_reference=b"t")) is None


# --- checkpoint marks ------------------------------------------------------------------


def _pieces(transfer: OutboundTransfer) -> list[bytes]:
    return [
        bytes(step.head) + bytes(step.data) for step in transfer.steps() if isinstance(step, Piece)
    ]


def test_the_sender_knows_where_each_confirmed_checkpoint_fell() -> None:
    octets = bytes(range(256)) * 40  # 10,240 octets: ten checkpoints of 1 KiB
    transfer = OutboundTransfer(1, octets, 1, 3, head=b"hd")
    assert transfer.confirmed == (0, 0)
    assert len(_pieces(transfer)) == 3
    transfer.confirm_sync(2)
    assert transfer.confirmed == (2, 2 * CHECKPOINT_UNIT)


def test_a_resumed_sender_sends_only_what_follows_the_checkpoint() -> None:
    octets = bytes(range(256)) * 40
    whole = b"hd" + octets
    offset = 3 * CHECKPOINT_UNIT
    transfer = OutboundTransfer.resumed(1, octets, 2, 8, serial=3, offset=offset, head=b"hd")
    assert transfer.confirmed == (3, offset)
    steps = transfer.steps()
    sent = b"".join(bytes(s.head) + bytes(s.data) for s in steps if isinstance(s, Piece))
    assert sent == whole[offset:]
    assert isinstance(steps[-1], End)
    transfer.confirm_sync(4)  # the first checkpoint after the resumption
    assert transfer.confirmed == (4, offset + 2 * CHECKPOINT_UNIT)


def test_resuming_past_the_end_is_our_mistake() -> None:
    with pytest.raises(LocalProtocolError, match="no checkpoint 1 at octet 9 of 8"):
        OutboundTransfer.resumed(1, b"12345678", 1, 3, serial=1, offset=9)


def test_the_receiver_keeps_the_octets_before_a_checkpoint() -> None:
    inbound = InboundTransfer(1, limit=100)
    inbound.add(b"abcd")
    inbound.mark(1)
    inbound.add(memoryview(b"efgh"))
    inbound.mark(2)
    inbound.add(b"ij")  # after the last checkpoint: not kept
    assert inbound.marks == {1: 4, 2: 8}
    assert inbound.kept(2) == b"abcdefgh"
    resumed = InboundTransfer.resumed(7, 100, b"abcd", {1: 4})
    resumed.add(b"EFGH")
    assert (resumed.transfer_id, resumed.octets(), resumed.size) == (7, b"abcdEFGH", 8)


def test_a_transfer_too_long_keeps_nothing() -> None:
    inbound = InboundTransfer(1, limit=4)
    inbound.add(b"abcdef")
    inbound.mark(1)
    with pytest.raises(LocalProtocolError):
        inbound.kept(1)


def test_a_partial_transfer_goes_back_to_an_earlier_checkpoint() -> None:
    partial = PartialTransfer(
        identifier=ONE, activity_id=b"a", octets=b"abcdefgh", marks={1: 4, 2: 8}
    )
    assert partial.at(2) == (b"abcdefgh", {1: 4, 2: 8})
    assert partial.at(1) == (b"abcd", {1: 4})
    assert partial.at(0) == (b"", {})
    assert partial.at(3) is None


# --- the receiver's keep -----------------------------------------------------------------


def _partial(identifier: SessionConnectionId, size: int, activity: bytes = b"a") -> PartialTransfer:
    return PartialTransfer(
        identifier=identifier, activity_id=activity, octets=bytes(size), marks={1: size}
    )


def test_a_partial_transfer_is_taken_once_by_its_peer_only() -> None:
    kept = PartialTransfers(max_count=4, max_octets=100, keep_for=60.0)
    partial = _partial(ONE, 10)
    assert kept.keep("MTA-A", partial, now=0.0)
    assert kept.owner(ONE, now=1.0) == "MTA-A" and kept.owner(TWO, now=1.0) is None
    assert kept.take("MTA-B", ONE, b"a", now=1.0) is None  # another peer's
    assert kept.take("MTA-A", ONE, b"b", now=1.0) is None  # another activity
    assert kept.take("MTA-A", ONE, b"a", now=1.0) is partial
    assert kept.take("MTA-A", ONE, b"a", now=1.0) is None  # once
    assert (len(kept), kept.octets) == (0, 0)


def test_partial_transfers_expire() -> None:
    kept = PartialTransfers(max_count=4, max_octets=100, keep_for=60.0)
    kept.keep("MTA-A", _partial(ONE, 10), now=0.0)
    kept.keep("MTA-A", _partial(TWO, 10), now=30.0)
    kept.expire(now=60.0)
    assert (len(kept), kept.octets) == (1, 10)
    assert kept.take("MTA-A", ONE, b"a", now=60.0) is None
    assert kept.take("MTA-A", TWO, b"a", now=89.0) is not None


def test_the_oldest_go_to_keep_within_the_count_and_the_octets() -> None:
    kept = PartialTransfers(max_count=2, max_octets=25, keep_for=60.0)
    for number in range(3):
        kept.keep("MTA-A", _partial(ONE, 10, bytes([number])), now=float(number))
    assert len(kept) == 2 and kept.take("MTA-A", ONE, b"\x00", now=3.0) is None
    kept.keep("MTA-A", _partial(TWO, 20), now=4.0)  # 10 + 10 + 20 > 25: two go
    assert (len(kept), kept.octets) == (1, 20)
    assert not kept.keep("MTA-A", _partial(ONE, 26), now=5.0)  # over the bound alone
    assert (len(kept), kept.octets) == (1, 20)
