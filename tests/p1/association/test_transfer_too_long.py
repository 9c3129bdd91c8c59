"""A transfer longer than ``StackLimits.max_message_size``: kept in part, answered whole.

The responder keeps the first ``max_message_size`` octets of the transfer, counts the
rest, confirms every minor synchronization point as usual and, at the activity end,
gives :class:`TransferTooLong` (with the MTS-APDU's first octets) instead of
:class:`TransferReceived`; its user confirms it like any other (the activity end is
answered only then), and the association carries on.  A transfer of at most the limit
is received as before.  Both modes: normal (an EXTERNAL around the MTS-APDU) and
X.410-1984 (the MPDU bare).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p1.association.connection import (
    AssociationSettings,
    TransferConfirmed,
    TransferReceived,
    TransferTooLong,
)
from p1.association.events import BindAccepted, BindRequested
from p1.association.pdus import transfer_head
from p1.association.transfer import apdu_prefix, encode_transfer
from p1.association.x410 import X410Association, X410Settings
from p1.errors import DecodeError
from p1.osi import Event, Role, StackLimits
from p1.osi.x225.spdu import Kind
from tests.p1.association.pair import ARGUMENT, RESULT, Pair, apdu, open_pair, spdu_kinds

LIMIT = 3000


def _limited(limit: int = LIMIT) -> AssociationSettings:
    return AssociationSettings(limits=StackLimits(max_message_size=limit))


def _expected(data: bytes, limit: int) -> TransferTooLong:
    """What the responder gives for ``data`` sent as our MTA sends it."""
    head = transfer_head(data)
    return TransferTooLong(
        transfer_id=1, size=len(head) + len(data), limit=limit, prefix=data[: limit - len(head)]
    )


def _only(events: list[Event]) -> Event:
    (event,) = events
    return event


@pytest.mark.parametrize("window_size", [1, 3])
@pytest.mark.parametrize("checkpoint_size", [0, 1, 2])
def test_an_over_limit_transfer_is_too_long_with_its_first_octets(
    checkpoint_size: int, window_size: int
) -> None:
    pair = open_pair(checkpoint_size=checkpoint_size, window_size=window_size, responder=_limited())
    data = apdu(3 * LIMIT)
    transfer_id = pair.initiator.send_transfer(data)
    pumped = pair.pump()
    assert pumped.responder == [_expected(data, LIMIT)]
    assert pumped.initiator == []
    assert pair.initiator.busy  # the activity end waits for the user's confirmation
    pair.responder.confirm_transfer(transfer_id)
    assert pair.pump().initiator == [TransferConfirmed(transfer_id=transfer_id)]
    assert not pair.initiator.busy


def test_every_minor_sync_is_confirmed_and_the_end_only_once_the_user_confirms() -> None:
    pair = open_pair(checkpoint_size=1, window_size=2, responder=_limited())
    transfer_id = pair.initiator.send_transfer(apdu(10 * LIMIT))
    events = pair.pump().responder
    sent = b"".join(pair.sent_by_initiator)
    answered = b"".join(pair.sent_by_responder)
    assert spdu_kinds(sent).count(Kind.MIP) == spdu_kinds(answered).count(Kind.MIA) >= 25
    assert Kind.MAP in spdu_kinds(sent) and Kind.MAA not in spdu_kinds(answered)
    assert isinstance(_only(events), TransferTooLong)
    pair.responder.confirm_transfer(transfer_id)
    pair.pump()
    assert spdu_kinds(pair.sent_by_responder[-2]) == [Kind.MAA]


def test_the_association_carries_on_after_a_transfer_too_long() -> None:
    pair = open_pair(checkpoint_size=1, responder=_limited())
    first = pair.initiator.send_transfer(apdu(2 * LIMIT))
    assert isinstance(_only(pair.pump().responder), TransferTooLong)
    pair.responder.confirm_transfer(first)
    pair.pump()
    small = apdu(LIMIT // 2)
    second = pair.initiator.send_transfer(small)
    assert pair.pump().responder == [TransferReceived(transfer_id=second, apdu=small)]


def test_a_transfer_of_exactly_the_limit_is_received_whole() -> None:
    data = apdu(LIMIT - len(transfer_head(apdu(LIMIT))))
    assert len(encode_transfer(data)) == LIMIT
    pair = open_pair(checkpoint_size=1, responder=_limited())
    transfer_id = pair.initiator.send_transfer(data)
    assert pair.pump().responder == [TransferReceived(transfer_id=transfer_id, apdu=data)]


def test_a_transfer_one_octet_over_is_too_long() -> None:
    data = apdu(LIMIT + 1 - len(transfer_head(apdu(LIMIT))))
    assert len(encode_transfer(data)) == LIMIT + 1
    pair = open_pair(checkpoint_size=1, responder=_limited())
    pair.initiator.send_transfer(data)
    assert pair.pump().responder == [_expected(data, LIMIT)]


def test_abort_after_too_long_confirms_nothing() -> None:
    pair = open_pair(responder=_limited())
    transfer_id = pair.initiator.send_transfer(apdu(2 * LIMIT))
    assert isinstance(_only(pair.pump().responder), TransferTooLong)
    pair.responder.abort("refused")
    assert pair.initiator.busy
    pair.pump()
    pair.responder.confirm_transfer(transfer_id)  # rule 7: answers an association gone
    assert pair.initiator.closed and pair.responder.closed


# --- segmentations around the limit ---------------------------------------------------------


def _deliver_in_pieces(pair: Pair, cuts: random.Random) -> list[Event]:
    """Pump ``pair``, the initiator's bytes cut at random points; the responder's events."""
    events: list[Event] = []
    for _ in range(10_000):
        data = pair.initiator.data_to_send()
        pair.sent_by_initiator.append(data)
        position = 0
        while position < len(data):
            step = cuts.randint(1, 700)
            events += pair.responder.receive_data(data[position : position + step])
            position += step
        answer = pair.responder.data_to_send()
        pair.sent_by_responder.append(answer)
        assert pair.initiator.receive_data(answer) == []
        if not data and not answer:
            return events
    raise AssertionError("still talking")


@given(
    over=st.integers(min_value=-40, max_value=40),
    limit=st.integers(min_value=200, max_value=5000),
    checkpoint_size=st.sampled_from([0, 1, 2]),
    window_size=st.integers(min_value=1, max_value=3),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_around_the_limit_whatever_the_pieces(
    over: int, limit: int, checkpoint_size: int, window_size: int, seed: int
) -> None:
    size = max(limit + over - 8, 3)
    data = apdu(size)
    total = len(encode_transfer(data))
    pair = open_pair(
        checkpoint_size=checkpoint_size, window_size=window_size, responder=_limited(limit)
    )
    transfer_id = pair.initiator.send_transfer(data)
    event = _only(_deliver_in_pieces(pair, random.Random(seed)))
    if total <= limit:
        assert event == TransferReceived(transfer_id=transfer_id, apdu=data)
    else:
        assert event == _expected(data, limit)
    sent = b"".join(pair.sent_by_initiator)
    answered = b"".join(pair.sent_by_responder)
    assert spdu_kinds(sent).count(Kind.MIP) == spdu_kinds(answered).count(Kind.MIA)
    pair.responder.confirm_transfer(transfer_id)
    pair.pump()
    assert pair.pump().initiator == [] and not pair.initiator.busy


# --- the EXTERNAL around the MTS-APDU, cut short --------------------------------------------


@pytest.mark.parametrize(
    "external",
    [
        bytes.fromhex("28 82 0f a0 02 01 05 a0 82 0f 99"),  # ours: indirect-reference, [0]
        bytes.fromhex("28 80 02 01 05 a0 80"),  # indefinite lengths
        bytes.fromhex("28 80 a0 80"),  # no reference
        bytes.fromhex("28 82 0f a0 06 03 56 00 01 02 01 05 07 01 41 a0 82 0f 80"),
        bytes.fromhex("28 82 0f a0 81 82 0f 99"),  # octet-aligned, primitive
    ],
    ids=["ours", "indefinite", "bare", "references", "octet-aligned"],
)
def test_apdu_prefix_skips_the_external_headers(external: bytes) -> None:
    start = apdu(5000)[:100]
    assert apdu_prefix(external + start) == start


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (bytes.fromhex("30 80 a0 80"), "[UNIVERSAL 16] is not an EXTERNAL"),
        (bytes.fromhex("28 80 a2 80"), "[2] cannot be read from a part"),
        (bytes.fromhex("28 80 a1 80 04 03"), "[1] cannot be read from a part"),
        (bytes.fromhex("28 80 02 01"), "truncated"),
        (b"", "truncated"),
    ],
    ids=["sequence", "arbitrary", "segmented", "cut-reference", "empty"],
)
def test_apdu_prefix_says_when_it_cannot(data: bytes, why: str) -> None:
    with pytest.raises(DecodeError, match=why.replace("[", r"\[").replace("]", r"\]")):
        apdu_prefix(data)


def test_a_transfer_whose_external_is_unreadable_has_no_prefix() -> None:
    pair = open_pair(responder=_limited(10))
    pair.initiator.send_transfer(apdu(200))
    event = _only(pair.pump().responder)
    assert isinstance(event, TransferTooLong) and event.prefix is not None
    pair = open_pair(responder=_limited(3))  # "28 81 c9": the EXTERNAL's length cut
    pair.initiator.send_transfer(apdu(200))
    event = _only(pair.pump().responder)
    assert isinstance(event, TransferTooLong) and event.prefix is None


# --- X.410-1984 mode ---------------------------------------------------------------------------


def _pump(
    initiator: X410Association, responder: X410Association
) -> tuple[list[Event], list[Event]]:
    """Deliver both ways until quiet: the events of (initiator, responder)."""
    got_i: list[Event] = []
    got_r: list[Event] = []
    for _ in range(10_000):
        out_i = initiator.data_to_send()
        got_r += responder.receive_data(out_i)
        out_r = responder.data_to_send()
        got_i += initiator.receive_data(out_r)
        if not out_i and not out_r:
            return got_i, got_r
    raise AssertionError("still talking")


def _x410_pair(limit: int, checkpoint_size: int) -> tuple[X410Association, X410Association]:
    initiator = X410Association(Role.INITIATOR, X410Settings(checkpoint_size=checkpoint_size))
    responder = X410Association(
        Role.RESPONDER, X410Settings(limits=StackLimits(max_message_size=limit))
    )
    initiator.send_bind(ARGUMENT)
    assert isinstance(_only(_pump(initiator, responder)[1]), BindRequested)
    responder.accept_bind(RESULT)
    assert isinstance(_only(_pump(initiator, responder)[0]), BindAccepted)
    return initiator, responder


@pytest.mark.parametrize("checkpoint_size", [0, 1])
def test_x410_mode_gives_the_mpdus_first_octets(checkpoint_size: int) -> None:
    initiator, responder = _x410_pair(LIMIT, checkpoint_size)
    data = apdu(4 * LIMIT)
    transfer_id = initiator.send_transfer(data)
    _, received = _pump(initiator, responder)
    assert received == [
        TransferTooLong(transfer_id=transfer_id, size=len(data), limit=LIMIT, prefix=data[:LIMIT])
    ]
    responder.confirm_transfer(transfer_id)
    confirmed, _ = _pump(initiator, responder)
    assert confirmed == [TransferConfirmed(transfer_id=transfer_id)]
    small = apdu(LIMIT)
    second = initiator.send_transfer(small)
    assert _pump(initiator, responder)[1] == [TransferReceived(transfer_id=second, apdu=small)]
