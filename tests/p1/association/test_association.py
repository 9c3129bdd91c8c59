"""P1Association end to end: an initiator and a responder driven in memory (X.419 clause 7).

The whole composed stack (TPKT, X.224 class 0, X.225 session, X.226 presentation, X.227
ACSE, X.228 RTSE, MTA-bind) on both ends of one in-memory pipe (tests/p1/association_pair):

- bind: accepted with each kind of credentials, refused with each MTABindError, an RT-OPEN
  asking to recover refused as busy, an unaccepted dialogue mode refused;
- RT-TRANSFER of 2 octets to 1 MB with checkpoint sizes 0, 1, 16, 63 and windows 1, 3:
  byte-exact delivery, pieces and window on the wire, confirmation only after
  ``confirm_transfer``; many transfers in a row;
- the turn in two-way-alternate mode, and monologue; release; abort by either side;
- misuse raising LocalProtocolError and changing nothing; every byte fed alone; limits;
- malformed input at each layer: an Aborted event and that layer's abort on the wire;
- hypothesis: random calls of both users (in lock step and with deliveries interleaved)
  and random or mutated bytes give only events and leave both ends agreeing.

The tests at the end pin down defects p1/association/connection.py once had, each named by what
went wrong.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p1 import ber
from p1.association.connection import (
    Aborted,
    AssociationSettings,
    BindAccepted,
    BindRefused,
    BindRequested,
    P1Association,
    RecoveryRequested,
    Released,
    State,
    TransferConfirmed,
    TransferReceived,
    TransferTooLong,
    TurnGiven,
    TurnRequested,
)
from p1.association.machine import DISCARDED, TABLE, Input
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult
from p1.association.transfer import encode_transfer
from p1.errors import EncodeError
from p1.osi import (
    Event,
    LocalProtocolError,
    Role,
    StackLimits,
    acse,
    presentation,
    rtse,
    tpdu,
)
from p1.osi.rtse import AbortReason, DialogueMode
from p1.osi.rtse_recovery import SessionConnectionId
from p1.osi.rtse_transfer import CHECKPOINT_UNIT
from p1.osi.tpkt import encode_tpkt
from p1.osi.x225 import spdu
from p1.osi.x225.spdu import Kind
from tests.p1.association.pair import (
    ARGUMENT,
    BIND_OPEN,
    RESULT,
    Pair,
    Pumped,
    aarq_bytes,
    activity_end_bytes,
    activity_start_bytes,
    apdu,
    cn_bytes,
    connect_data,
    data_bytes,
    dt,
    feed,
    minor_sync_ack_bytes,
    only_spdu,
    open_pair,
    refusal_aare,
    refusal_error,
    rtorq_bytes,
    rttr_bytes,
    rttr_lengths,
    spdu_bytes,
    spdu_kinds,
    tpdu_codes,
    tpdus,
    user_abort_rtab,
)
from tests.profiles import examples

TWA = DialogueMode.TWA
MONOLOGUE = DialogueMode.MONOLOGUE
KB = 1024
MAX_TPDU = 2048
SESSION_PROTOCOL_ERROR = spdu.TRANSPORT_RELEASED | spdu.PROTOCOL_ERROR
SESSION_USER_ABORT = spdu.TRANSPORT_RELEASED | spdu.USER_ABORT
EVENT_TYPES = (
    BindRequested,
    BindAccepted,
    BindRefused,
    TransferReceived,
    TransferConfirmed,
    TurnRequested,
    TurnGiven,
    Released,
    Aborted,
)
FUZZ = settings(
    max_examples=examples(1.5),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
WALKS = settings(FUZZ, max_examples=examples(3))


def _only(events: list[Event], kind: type[Event]) -> Event:
    (event,) = events
    assert isinstance(event, kind), event
    return event


def _aborted(events: list[Event], *, by_peer: bool) -> Aborted:
    event = _only(events, Aborted)
    assert isinstance(event, Aborted)
    assert event.by_peer is by_peer
    return event


def _unchanged(association: P1Association, state: State) -> None:
    """A call that raised LocalProtocolError left no trace."""
    assert association.state is state
    assert association.data_to_send() == b""


def _transfer(pair: Pair, data: bytes, *, from_initiator: bool = True) -> int:
    """One RT-TRANSFER confirmed end to end; the transfer id."""
    sender, receiver = (
        (pair.initiator, pair.responder) if from_initiator else (pair.responder, pair.initiator)
    )
    transfer_id = sender.send_transfer(data)
    pumped = pair.pump()
    received, sent = (
        (pumped.responder, pumped.initiator)
        if from_initiator
        else (pumped.initiator, pumped.responder)
    )
    assert received == [TransferReceived(transfer_id=transfer_id, apdu=data)]
    assert sent == []
    receiver.confirm_transfer(transfer_id)
    pumped = pair.pump()
    confirmed = pumped.initiator if from_initiator else pumped.responder
    assert confirmed == [TransferConfirmed(transfer_id=transfer_id)]
    return transfer_id


# --- bind -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argument", "result"),
    [
        (ARGUMENT, RESULT),
        (
            MTABindArgument(initiator_name="mta-a.example", password=b"\x00\xffoctets"),
            MTABindResult(responder_name="mta-b.example", password=b"\x01\x02"),
        ),
        (MTABindArgument(), MTABindResult()),
    ],
    ids=["ia5-password", "octet-string-password", "unauthenticated"],
)
def test_bind_is_accepted(argument: MTABindArgument, result: MTABindResult) -> None:
    pair = Pair(AssociationSettings(calling_tsap=b"X400-88", called_tsap=b"X400-88"))
    requested, accepted = pair.bind(argument, result)
    assert requested.argument == argument
    assert type(requested.argument.password) is type(argument.password)  # IA5 / OCTET STRING
    assert requested.calling_tsap == b"X400-88"
    assert (requested.dialogue_mode, requested.checkpoint_size, requested.window_size) == (
        MONOLOGUE,
        0,
        3,
    )
    assert accepted == BindAccepted(
        result=result, dialogue_mode=MONOLOGUE, checkpoint_size=0, window_size=3
    )
    assert pair.initiator.state is State.OPEN and pair.responder.state is State.OPEN
    assert pair.initiator.has_turn and not pair.responder.has_turn
    assert not pair.initiator.busy and not pair.responder.busy
    assert spdu_kinds(b"".join(pair.sent_by_initiator)) == [Kind.CN]
    assert spdu_kinds(b"".join(pair.sent_by_responder)) == [Kind.AC]


@pytest.mark.parametrize(("checkpoint_size", "window_size"), [(0, 3), (1, 1), (63, 3), (16, 7)])
@pytest.mark.parametrize("dialogue_mode", list(DialogueMode))
def test_bind_agrees_on_the_rt_open_parameters(
    dialogue_mode: DialogueMode, checkpoint_size: int, window_size: int
) -> None:
    pair = Pair(
        AssociationSettings(
            dialogue_mode=dialogue_mode, checkpoint_size=checkpoint_size, window_size=window_size
        )
    )
    requested, accepted = pair.bind()
    agreed = (dialogue_mode, checkpoint_size, window_size)
    assert (requested.dialogue_mode, requested.checkpoint_size, requested.window_size) == agreed
    assert (accepted.dialogue_mode, accepted.checkpoint_size, accepted.window_size) == agreed


@pytest.mark.parametrize("error", list(MTABindError))
def test_bind_is_refused_with_each_error(error: MTABindError) -> None:
    pair = Pair()
    pair.initiator.send_bind(ARGUMENT)
    assert isinstance(_only(pair.pump().responder, BindRequested), BindRequested)
    pair.responder.refuse_bind(error)
    assert pair.responder.closed
    pumped = pair.pump()
    assert pumped.initiator == [BindRefused(error=error, why=error.name.lower().replace("_", "-"))]
    assert pumped.responder == []
    assert pair.initiator.closed
    refusal = pair.sent_by_responder[-2]
    assert spdu_kinds(refusal) == [Kind.RF]
    assert refusal_error(refusal) is error


def _crafted_bind(cn_user_data: bytes, responder: AssociationSettings | None = None) -> Pair:
    """A pair whose initiator's CN is replaced by one carrying ``cn_user_data``."""
    pair = Pair(None, responder)
    pair.connect_transport()  # the initiator's own CN is dropped
    pair.responder_events.extend(feed(pair.responder, cn_bytes(cn_user_data)))
    return pair


def test_hand_made_cn_is_what_the_initiator_sends() -> None:
    # The hand-made CNs above differ from a real one only where each test says.
    real = Pair().connect_transport()
    crafted = cn_bytes(connect_data(aarq_bytes(rtorq_bytes())))
    assert only_spdu(real, Kind.CN).user_data == only_spdu(crafted, Kind.CN).user_data
    assert BIND_OPEN in real


def test_rt_open_asking_to_recover_goes_to_the_user_who_may_refuse_it() -> None:
    # SessionConnectionIdentifier: calling SS-user reference and common reference.
    identifier = ber.constructed(
        ber.SEQUENCE,
        [ber.tlv(ber.OCTET_STRING, b"mta-a"), ber.tlv(ber.UTC_TIME, b"240506070809Z")],
    )
    pair = _crafted_bind(connect_data(aarq_bytes(rtorq_bytes(open_data=None, recover=identifier))))
    (requested,) = pair.responder_events
    assert isinstance(requested, RecoveryRequested)
    assert requested.identifier == SessionConnectionId(
        calling_reference=b"mta-a", common_reference=b"240506070809Z"
    )
    pair.responder.refuse_recovery()
    assert pair.responder.closed
    refusal = pair.responder.data_to_send()
    assert spdu_kinds(refusal) == [Kind.RF]
    aare = refusal_aare(refusal)
    assert aare.result == acse.REJECTED_PERMANENT
    (value,) = aare.user_information
    assert rtse.decode_rtse(value.value) == rtse.Rtorj()  # no MTA-bind error: no bind
    refused = BindRefused(error=None, why="refused without an MTA-bind error")
    assert feed(pair.initiator, refusal) == [refused]


@pytest.mark.parametrize(
    ("proposed", "accepted"),
    [(TWA, frozenset({MONOLOGUE})), (MONOLOGUE, frozenset({TWA}))],
    ids=["twa-to-monologue-only", "monologue-to-twa-only"],
)
def test_unaccepted_dialogue_mode_is_refused(
    proposed: DialogueMode, accepted: frozenset[DialogueMode]
) -> None:
    pair = Pair(
        AssociationSettings(dialogue_mode=proposed),
        AssociationSettings(accepted_dialogue_modes=accepted),
    )
    pair.initiator.send_bind(ARGUMENT)
    pumped = pair.pump()
    assert pumped.responder == []
    error = MTABindError.UNACCEPTABLE_DIALOGUE_MODE
    assert pumped.initiator == [BindRefused(error=error, why="unacceptable-dialogue-mode")]
    assert pair.initiator.closed and pair.responder.closed
    assert refusal_error(b"".join(pair.sent_by_responder)) is error


# --- transfers --------------------------------------------------------------------------


def _transfer_stepwise(pair: Pair, data: bytes, window_size: int) -> tuple[list[int], int]:
    """Transfer ``data`` delivering one direction at a time, checking the window.

    Returns the RTTR piece lengths on the wire and the number of minor syncs.
    """
    transfer_id = pair.initiator.send_transfer(data)
    outstanding = syncs = 0
    pieces: list[int] = []
    received: list[Event] = []
    for _ in range(100_000):
        before = len(pair.sent_by_initiator)
        received += pair.deliver(True)
        sent = pair.sent_by_initiator[before]
        pieces += rttr_lengths(sent)
        assert all(len(unit) <= MAX_TPDU for unit in tpdus(sent))  # the size agreed in CR/CC
        for kind in spdu_kinds(sent):
            if kind is Kind.MIP:
                outstanding += 1
                syncs += 1
                assert outstanding <= window_size
            elif kind is Kind.MAP:  # the activity end takes a window slot too
                assert outstanding < window_size
        assert pair.deliver(False) == []  # minor sync confirmations only
        outstanding -= spdu_kinds(pair.sent_by_responder[-1]).count(Kind.MIA)
        if not sent and not pair.sent_by_responder[-1]:
            break
    assert received == [TransferReceived(transfer_id=transfer_id, apdu=data)]
    assert outstanding == 0
    assert pair.initiator.busy  # confirmed only by confirm_transfer
    pair.responder.confirm_transfer(transfer_id)
    pumped = pair.pump()
    assert pumped.initiator == [TransferConfirmed(transfer_id=transfer_id)]
    assert not pair.initiator.busy
    return pieces, syncs


@pytest.mark.parametrize("window_size", [1, 3])
@pytest.mark.parametrize("checkpoint_size", [0, 1, 16, 63])
@pytest.mark.parametrize("size", [2, KB, 100 * KB, 1024 * KB], ids=["2", "1K", "100K", "1M"])
def test_transfer_is_byte_exact_and_checkpointed(
    size: int, checkpoint_size: int, window_size: int
) -> None:
    pair = open_pair(checkpoint_size=checkpoint_size, window_size=window_size)
    data = apdu(size)
    assert len(data) == size
    pieces, syncs = _transfer_stepwise(pair, data, window_size)
    octets = len(encode_transfer(data))
    assert sum(pieces) == octets
    if checkpoint_size == 0:
        assert pieces == [octets] and syncs == 0
    else:
        piece = checkpoint_size * CHECKPOINT_UNIT
        assert all(length == piece for length in pieces[:-1])
        assert 0 < pieces[-1] <= piece
        assert syncs == len(pieces) - 1 == -(-octets // piece) - 1


def test_transfer_confirmed_only_after_confirm_transfer() -> None:
    pair = open_pair(checkpoint_size=1)
    transfer_id = pair.initiator.send_transfer(apdu(5 * KB))
    pumped = pair.pump()
    (received,) = pumped.responder
    assert isinstance(received, TransferReceived)
    assert pumped.initiator == []
    assert Kind.MAA not in spdu_kinds(b"".join(pair.sent_by_responder))
    assert pair.initiator.busy
    assert pair.pump().initiator == []  # waiting changes nothing
    pair.responder.confirm_transfer(transfer_id)
    assert spdu_kinds(pair.responder.data_to_send()) == [Kind.MAA]


def test_many_transfers_in_sequence() -> None:
    pair = open_pair(checkpoint_size=1, window_size=2)
    sizes = [2, *(random.Random(7).randrange(4, 6 * KB) for _ in range(59))]
    ids = [_transfer(pair, apdu(size)) for size in sizes]
    assert ids == list(range(1, 61))
    pair.initiator.send_release()
    assert pair.pump().responder == [Released(by_peer=True)]


def test_transfer_of_a_non_ber_apdu_raises_and_changes_nothing() -> None:
    pair = open_pair()
    with pytest.raises(EncodeError):
        pair.initiator.send_transfer(b"\x04\x05abc")
    assert pair.initiator.data_to_send() == b""
    assert not pair.initiator.busy
    _transfer(pair, apdu(100))


# --- the turn ---------------------------------------------------------------------------


def test_two_way_alternate_turn_and_transfers_both_ways() -> None:
    pair = open_pair(dialogue_mode=TWA, checkpoint_size=1)
    _transfer(pair, apdu(3 * KB))
    with pytest.raises(LocalProtocolError):
        pair.responder.send_transfer(apdu(10))
    pair.responder.request_turn(7)
    please = pair.responder.data_to_send()
    assert spdu_kinds(please) == [Kind.PT]
    assert feed(pair.initiator, please) == [TurnRequested(priority=7)]
    assert pair.initiator.has_turn  # asking does not move it
    pair.initiator.give_turn()
    assert not pair.initiator.has_turn
    pumped = pair.pump()
    assert pumped.responder == [TurnGiven()]
    assert pair.responder.has_turn and not pair.initiator.has_turn
    assert Kind.GTC in spdu_kinds(b"".join(pair.sent_by_initiator))
    assert Kind.GTA in spdu_kinds(b"".join(pair.sent_by_responder))
    data = apdu(5 * KB)
    _transfer(pair, data, from_initiator=False)
    with pytest.raises(LocalProtocolError):
        pair.initiator.send_transfer(apdu(10))
    # The turn back to the initiator, which releases.
    pair.initiator.request_turn()
    assert pair.pump().responder == [TurnRequested(priority=0)]
    pair.responder.give_turn()
    assert pair.pump().initiator == [TurnGiven()]
    pair.initiator.send_release()
    pumped = pair.pump()
    assert (pumped.initiator, pumped.responder) == (
        [Released(by_peer=False)],
        [Released(by_peer=True)],
    )


def test_turn_requested_during_a_transfer_is_given_after_it() -> None:
    pair = open_pair(dialogue_mode=TWA, checkpoint_size=1, window_size=1)
    transfer_id = pair.initiator.send_transfer(apdu(4 * KB))
    pair.deliver(True)
    pair.responder.request_turn(2)
    pumped = pair.pump()
    assert TurnRequested(priority=2) in pumped.initiator
    with pytest.raises(LocalProtocolError):
        pair.initiator.give_turn()  # not during a transfer
    pair.responder.confirm_transfer(transfer_id)
    assert pair.pump().initiator == [TransferConfirmed(transfer_id=transfer_id)]
    pair.initiator.give_turn()
    assert pair.pump().responder == [TurnGiven()]


def test_turn_please_entries_of_the_table() -> None:
    """RT-TURN-PLEASE (PT) is taken while open, and dropped once it crossed our FN (X.228
    7.4): nowhere else; RT-TURN-GIVE (GTC / GTA) is data phase, open only."""
    pleases = {
        state: after for (state, what), after in TABLE.items() if what is Input.RECV_TURN_PLEASE
    }
    assert pleases == {State.OPEN: State.OPEN, State.RELEASING: State.RELEASING}
    assert (State.OPEN, Input.RECV_TURN_PLEASE) not in DISCARDED
    assert (State.RELEASING, Input.RECV_TURN_PLEASE) in DISCARDED
    data_phase = {state for (state, what) in TABLE if what is Input.DATA_PHASE}
    assert data_phase == {State.OPEN}


@pytest.mark.parametrize("mode", list(DialogueMode))
def test_both_ends_know_the_dialogue_mode_agreed(mode: DialogueMode) -> None:
    pair = Pair(AssociationSettings(dialogue_mode=mode))
    assert pair.initiator.dialogue_mode is pair.responder.dialogue_mode is MONOLOGUE
    pair.bind()
    assert pair.initiator.dialogue_mode is pair.responder.dialogue_mode is mode


@pytest.mark.parametrize("giver", ["initiator", "responder"])
def test_a_turn_given_is_asked_back_once_the_peer_acknowledged_it(giver: str) -> None:
    pair = open_pair(dialogue_mode=TWA)
    if giver == "responder":
        pair.responder.request_turn(1)
        pair.pump()
        pair.initiator.give_turn()
        pair.pump()
    gives = pair.initiator if giver == "initiator" else pair.responder
    takes = pair.responder if giver == "initiator" else pair.initiator
    gives.give_turn()
    assert gives.giving_turn and not gives.has_turn
    with pytest.raises(LocalProtocolError, match="not acknowledged yet"):
        gives.request_turn(4)  # before the GTA: nothing sent, nothing changed
    sent = gives.data_to_send()
    assert spdu_kinds(sent) == [Kind.GTC]
    assert feed(takes, sent) == [TurnGiven()]
    assert spdu_kinds(acknowledged := takes.data_to_send()) == [Kind.GTA]
    assert feed(gives, acknowledged) == []
    assert not gives.giving_turn and takes.has_turn
    gives.request_turn(4)
    assert feed(takes, gives.data_to_send()) == [TurnRequested(priority=4)]
    takes.give_turn()
    pumped = pair.pump()
    back = pumped.initiator if giver == "initiator" else pumped.responder
    assert back == [TurnGiven()]
    assert gives.has_turn and not takes.has_turn


def test_monologue_responder_cannot_transfer() -> None:
    pair = open_pair(checkpoint_size=1)
    for _ in range(2):
        with pytest.raises(LocalProtocolError, match="does not hold the turn"):
            pair.responder.send_transfer(apdu(10))
        _unchanged(pair.responder, State.OPEN)
    _transfer(pair, apdu(2 * KB))


# --- release and abort ------------------------------------------------------------------


def test_release_by_the_initiator() -> None:
    pair = open_pair()
    pair.initiator.send_release()
    assert pair.initiator.state is State.RELEASING
    pumped = pair.pump()
    assert pumped.responder == [Released(by_peer=True)]
    assert pumped.initiator == [Released(by_peer=False)]
    assert pair.initiator.closed and pair.responder.closed
    fn = only_spdu(pair.sent_by_initiator[-2], Kind.FN)
    dn = only_spdu(pair.sent_by_responder[-2], Kind.DN)
    assert bytes(fn.user_data).endswith(bytes.fromhex("6203800100"))  # RLRQ normal
    assert bytes(dn.user_data).endswith(bytes.fromhex("6303800100"))  # RLRE normal


@pytest.mark.parametrize("by_initiator", [True, False], ids=["initiator", "responder"])
@pytest.mark.parametrize("during_transfer", [False, True], ids=["idle", "transfer"])
def test_abort_by_either_side(by_initiator: bool, during_transfer: bool) -> None:
    pair = open_pair(checkpoint_size=1, window_size=1)
    if during_transfer:
        pair.initiator.send_transfer(apdu(10 * KB))
        pair.deliver(True)
    aborting = pair.initiator if by_initiator else pair.responder
    assert aborting.abort("shutting down") == [Aborted(by_peer=False, why="shutting down")]
    assert aborting.closed
    assert aborting.abort() == []  # once
    wire = aborting.data_to_send()
    assert only_spdu(wire, Kind.AB).transport_disconnect == SESSION_USER_ABORT
    assert user_abort_rtab(wire).abort_reason == AbortReason.USER_ERROR
    peer = pair.responder if by_initiator else pair.initiator
    _aborted(feed(peer, wire), by_peer=True)
    assert peer.closed
    assert pair.pump() == Pumped()  # nothing more either way


def test_abort_by_the_responder_while_its_user_decides_refuses_the_bind() -> None:
    pair = Pair()
    pair.initiator.send_bind(ARGUMENT)
    pair.pump()
    assert pair.responder.abort() == [Aborted(by_peer=False, why="aborted by the MTA")]
    wire = pair.responder.data_to_send()
    assert user_abort_rtab(wire).abort_reason == AbortReason.USER_ERROR
    (refused,) = feed(pair.initiator, wire)
    assert isinstance(refused, BindRefused) and refused.error is None
    assert pair.initiator.closed


def test_eof_from_the_peer() -> None:
    pair = open_pair()
    assert pair.responder.receive_eof() == [
        Aborted(by_peer=True, why="the peer closed the connection")
    ]
    assert pair.responder.receive_eof() == []
    assert pair.responder.receive_data(b"anything") == []


# --- misuse: LocalProtocolError, nothing changed ----------------------------------------


def test_transfer_while_one_is_in_flight() -> None:
    pair = open_pair(checkpoint_size=1, window_size=1)
    first = pair.initiator.send_transfer(apdu(3 * KB))
    pair.deliver(True)  # AS, a piece, MIP: waiting for the MIA
    for attempt in range(4):
        with pytest.raises(LocalProtocolError, match="already in progress"):
            pair.initiator.send_transfer(apdu(10))
        _unchanged(pair.initiator, State.OPEN)
        if attempt == 1:  # and again once the transfer awaits only its confirmation
            assert pair.pump().responder == [TransferReceived(transfer_id=first, apdu=apdu(3 * KB))]
    pair.responder.confirm_transfer(first)
    assert pair.pump().initiator == [TransferConfirmed(transfer_id=first)]
    assert _transfer(pair, apdu(10)) == first + 1


def test_release_during_a_transfer_then_after_it() -> None:
    pair = open_pair(checkpoint_size=1)
    transfer_id = pair.initiator.send_transfer(apdu(3 * KB))
    with pytest.raises(LocalProtocolError, match="during a transfer"):
        pair.initiator.send_release()
    assert pair.initiator.state is State.OPEN
    (received,) = pair.pump().responder
    assert isinstance(received, TransferReceived)
    with pytest.raises(LocalProtocolError, match="during a transfer"):
        pair.initiator.send_release()  # still unconfirmed
    pair.responder.confirm_transfer(transfer_id)
    assert pair.pump().initiator == [TransferConfirmed(transfer_id=transfer_id)]
    pair.initiator.send_release()
    assert pair.pump().initiator == [Released(by_peer=False)]


def test_confirm_of_an_unknown_transfer() -> None:
    pair = open_pair()
    with pytest.raises(LocalProtocolError, match="awaits no confirmation"):
        pair.responder.confirm_transfer(1)
    transfer_id = pair.initiator.send_transfer(apdu(10))
    pair.pump()
    with pytest.raises(LocalProtocolError, match="awaits no confirmation"):
        pair.responder.confirm_transfer(transfer_id + 1)
    _unchanged(pair.responder, State.OPEN)
    pair.responder.confirm_transfer(transfer_id)
    assert pair.pump().initiator == [TransferConfirmed(transfer_id=transfer_id)]
    with pytest.raises(LocalProtocolError):
        pair.responder.confirm_transfer(transfer_id)  # only once


def test_accept_bind_twice() -> None:
    pair = open_pair()
    with pytest.raises(LocalProtocolError, match="accept bind is not allowed in state open"):
        pair.responder.accept_bind(RESULT)
    _unchanged(pair.responder, State.OPEN)
    with pytest.raises(LocalProtocolError, match="refuse bind is not allowed in state open"):
        pair.responder.refuse_bind(MTABindError.BUSY)
    _unchanged(pair.responder, State.OPEN)
    _transfer(pair, apdu(100))


def test_calls_out_of_place() -> None:
    pair = Pair()
    with pytest.raises(LocalProtocolError):
        pair.responder.send_bind(ARGUMENT)
    with pytest.raises(LocalProtocolError):
        pair.initiator.accept_bind(RESULT)
    for call in (
        lambda: pair.initiator.send_transfer(apdu(10)),
        pair.initiator.send_release,
        pair.initiator.give_turn,
    ):
        with pytest.raises(LocalProtocolError):
            call()
        _unchanged(pair.initiator, State.IDLE)
    pair.bind()
    with pytest.raises(LocalProtocolError):
        pair.initiator.send_bind(ARGUMENT)
    with pytest.raises(LocalProtocolError, match="already holds the turn"):
        pair.initiator.request_turn()
    _transfer(pair, apdu(100))


# --- one byte at a time -----------------------------------------------------------------


def _conversation(bytewise: bool) -> tuple[list[Event], list[Event]]:
    pair = Pair(AssociationSettings(dialogue_mode=TWA, checkpoint_size=1, window_size=2))
    pair.initiator.send_bind(ARGUMENT)
    pair.pump(bytewise=bytewise)
    pair.responder.accept_bind(RESULT)
    pair.pump(bytewise=bytewise)
    for size in (5 * KB, 2):
        transfer_id = pair.initiator.send_transfer(apdu(size))
        pair.pump(bytewise=bytewise)
        pair.responder.confirm_transfer(transfer_id)
        pair.pump(bytewise=bytewise)
    pair.responder.request_turn(1)
    pair.pump(bytewise=bytewise)
    pair.initiator.give_turn()
    pair.pump(bytewise=bytewise)
    transfer_id = pair.responder.send_transfer(apdu(1500))
    pair.pump(bytewise=bytewise)
    pair.initiator.confirm_transfer(transfer_id)
    pair.pump(bytewise=bytewise)
    pair.initiator.request_turn(0)
    pair.pump(bytewise=bytewise)
    pair.responder.give_turn()
    pair.pump(bytewise=bytewise)
    pair.initiator.send_release()
    pair.pump(bytewise=bytewise)
    return pair.initiator_events, pair.responder_events


def test_every_byte_alone_gives_the_same_events() -> None:
    whole = _conversation(bytewise=False)
    assert _conversation(bytewise=True) == whole
    initiator, responder = whole
    assert [type(event) for event in initiator] == [
        BindAccepted,
        TransferConfirmed,
        TransferConfirmed,
        TurnRequested,
        TransferReceived,
        TurnGiven,
        Released,
    ]
    assert [type(event) for event in responder] == [
        BindRequested,
        TransferReceived,
        TransferReceived,
        TurnGiven,
        TransferConfirmed,
        TurnRequested,
        Released,
    ]


# --- limits -----------------------------------------------------------------------------


@pytest.mark.parametrize("checkpoint_size", [0, 1])
def test_transfer_beyond_max_message_size_is_too_long_not_aborted(checkpoint_size: int) -> None:
    limit = 3000
    pair = open_pair(
        checkpoint_size=checkpoint_size,
        responder=AssociationSettings(limits=StackLimits(max_message_size=limit)),
    )
    _transfer(pair, apdu(limit - 20))  # the EXTERNAL around it still fits
    transfer_id = pair.initiator.send_transfer(apdu(limit + 1))
    (event,) = pair.pump().responder
    assert isinstance(event, TransferTooLong) and event.size > limit == event.limit
    pair.responder.confirm_transfer(transfer_id)
    assert pair.pump().initiator == [TransferConfirmed(transfer_id=transfer_id)]
    assert not pair.initiator.closed and not pair.responder.closed


# --- malformed input at each layer -------------------------------------------------------


def _inject(association: P1Association, data: bytes) -> tuple[Aborted, bytes]:
    """Feed ``data``: the one Aborted (ours) and what was queued in answer."""
    aborted = _aborted(association.receive_data(data), by_peer=False)
    assert association.closed
    wire = association.data_to_send()
    assert association.receive_data(data) == []  # closed: nothing more counts
    assert association.data_to_send() == b""
    return aborted, wire


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x04\x00\x00\x08\x02\xf0\x80\x00", "TPKT version"),
        (encode_tpkt(b"\x02\x30\x80\x00"), "TPDU code 0x30"),
        (encode_tpkt(b"\x04\xf0\x80\x00\x00"), "LI 2"),
    ],
    ids=["tpkt-version", "tpdu-code", "dt-header"],
)
@pytest.mark.parametrize("side", ["initiator", "responder"])
def test_bad_tpkt_or_tpdu_is_answered_with_er(data: bytes, why: str, side: str) -> None:
    pair = open_pair()
    aborted, wire = _inject(getattr(pair, side), data)
    assert aborted.why.startswith("transport: ") and why in aborted.why
    assert tpdu_codes(wire) == [tpdu.ER]
    _aborted(feed(pair.responder if side == "initiator" else pair.initiator, wire), by_peer=True)


def test_bad_tpdu_before_the_bind_is_answered_with_er() -> None:
    association = P1Association(Role.RESPONDER)
    aborted, wire = _inject(association, encode_tpkt(b"\x02\x30\x80\x00"))
    assert "transport" in aborted.why
    assert tpdu_codes(wire) == [tpdu.ER]


@pytest.mark.parametrize(
    ("tsdu", "why"),
    [
        (b"\x77\x00", "SI 119"),
        (b"\x01\x00\x01", "DT SPDU"),
        (b"\x19\x05\x11\x01", "AB SPDU"),
    ],
    ids=["unknown-si", "truncated-dt", "truncated-ab"],
)
def test_bad_spdu_is_answered_with_ab(tsdu: bytes, why: str) -> None:
    pair = open_pair()
    aborted, wire = _inject(pair.responder, dt(tsdu))
    assert aborted.why.startswith("session: ") and why in aborted.why
    ab = only_spdu(wire, Kind.AB)
    assert ab.transport_disconnect == SESSION_PROTOCOL_ERROR
    assert ab.user_data == b""
    _aborted(feed(pair.initiator, wire), by_peer=True)


def _arp(wire: bytes) -> presentation.ArpPpdu:
    ab = only_spdu(wire, Kind.AB)
    arp = presentation.decode_abort(ab.user_data)
    assert isinstance(arp, presentation.ArpPpdu), arp
    return arp


@pytest.mark.parametrize(
    ("cp", "why"),
    [
        (b"\x31\x03\x01\x02\x03", "truncated"),
        (bytes.fromhex("3105a003800100"), "X.410-1984"),
        (connect_data(b"\x60\x02\x05\x00"), "AARQ-apdu"),
        (connect_data(aarq_bytes(b"\xb0\x03\x02\x01\x00")), "RTORQapdu"),
        (connect_data(aarq_bytes(b"\x04\x01\x00")), "expected Rtorq"),
        (
            connect_data(aarq_bytes(rtorq_bytes(open_data=bytes.fromhex("b0030201ff")))),
            "MTABindArgument",
        ),
        (
            connect_data(aarq_bytes(rtorq_bytes(open_data=bytes.fromhex("a1030201ff")))),
            "MTABindArgument",
        ),
    ],
    ids=[
        "cp-truncated",
        "x410-mode",
        "aarq",
        "rtorq",
        "not-rtorq",
        "bind-argument",
        "bind-wrapper",
    ],
)
def test_bad_connect_data_is_aborted_with_arp(cp: bytes, why: str) -> None:
    pair = _crafted_bind(cp)
    aborted = _only(pair.responder_events, Aborted)
    assert isinstance(aborted, Aborted) and not aborted.by_peer
    assert why in aborted.why
    assert pair.responder.closed
    wire = pair.responder.data_to_send()
    assert spdu_kinds(wire) == [Kind.AB]
    assert _arp(wire).provider_reason == presentation.AbortReason.INVALID_PPDU_PARAMETER_VALUE
    (refused,) = feed(pair.initiator, wire)
    assert isinstance(refused, BindRefused) and refused.error is None


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (activity_start_bytes(1) + data_bytes(b"\x99\x01\x00"), "User-data"),
        (rttr_bytes(b"abc"), "P-DATA outside an activity"),
        (
            activity_start_bytes(1)
            + data_bytes(presentation.encode_pdv(5, rtse.encode_rttr(b"x"))),
            "presentation context 5",
        ),
        (
            activity_start_bytes(1)
            + data_bytes(presentation.encode_pdv(presentation.RTSE_CONTEXT, b"\x02\x01\x00")),
            "RTTRapdu",
        ),
        (
            activity_start_bytes(1) + rttr_bytes(b"\x30\x00") + activity_end_bytes(),
            "transfer EXTERNAL",
        ),
        (
            activity_start_bytes(1) + rttr_bytes(b"\x28\x02\x02") + activity_end_bytes(),
            "[UNIVERSAL 8] at offset 0: truncated",
        ),
        (activity_start_bytes(1) + activity_end_bytes(), "truncated: a tag was expected"),
        (
            activity_start_bytes(1)
            + rttr_bytes(encode_transfer(apdu(10), indirect_reference=3))
            + activity_end_bytes(),
            "context 3",
        ),
    ],
    ids=[
        "p-data-garbage",
        "p-data-outside-activity",
        "p-data-other-context",
        "p-data-not-rttr",
        "external-garbage",
        "external-truncated",
        "external-empty",
        "external-other-context",
    ],
)
def test_bad_data_phase_apdu_is_aborted_with_rtab(data: bytes, why: str) -> None:
    pair = open_pair()
    aborted, wire = _inject(pair.responder, data)
    assert why in aborted.why
    assert only_spdu(wire, Kind.AB).transport_disconnect == SESSION_USER_ABORT
    assert user_abort_rtab(wire).abort_reason == AbortReason.PROTOCOL_ERROR
    _aborted(feed(pair.initiator, wire), by_peer=True)


def test_bad_turn_please_is_aborted_with_rtab() -> None:
    pair = open_pair(dialogue_mode=TWA)
    please = spdu.Spdu(kind=Kind.PT, token_item=0x15, user_data=b"\x01\x02")
    aborted, wire = _inject(pair.initiator, spdu_bytes(please))
    assert "truncated" in aborted.why
    assert user_abort_rtab(wire).abort_reason == AbortReason.PROTOCOL_ERROR


def test_release_by_the_responder_is_aborted_with_rtab() -> None:
    # RT-CLOSE is the association-initiator's (X.228 7.4), even when the responder holds
    # the turn: its FN passes the session's token rules but is RTSE's protocol error.
    pair = open_pair(dialogue_mode=TWA)
    pair.responder.request_turn(1)
    pair.pump()
    pair.initiator.give_turn()
    pair.pump()
    rlrq = acse.encode_acse(acse.Rlrq(reason=acse.RELEASE_NORMAL))
    fn = spdu.Spdu(
        kind=Kind.FN,
        transport_disconnect=spdu.TRANSPORT_RELEASED,
        user_data=presentation.encode_pdv(presentation.ACSE_CONTEXT, rlrq),
    )
    aborted, wire = _inject(pair.initiator, spdu_bytes(fn))
    assert "RT-CLOSE is the initiator's" in aborted.why
    assert user_abort_rtab(wire).abort_reason == AbortReason.PROTOCOL_ERROR
    _aborted(feed(pair.responder, wire), by_peer=True)


def test_confirmation_of_the_activity_end_as_a_checkpoint_is_aborted_with_rtab() -> None:
    # One piece, a checkpoint (serial 1), the last piece and the activity end (serial 2):
    # an MIA may confirm checkpoint 1, not serial 2, which is no checkpoint.
    pair = open_pair(checkpoint_size=1, window_size=3)
    pair.initiator.send_transfer(apdu(KB + 100))
    assert spdu_kinds(pair.initiator.data_to_send()).count(Kind.MIP) == 1
    aborted, wire = _inject(pair.initiator, minor_sync_ack_bytes(2))
    assert "minor sync 2 confirmed" in aborted.why
    assert user_abort_rtab(wire).abort_reason == AbortReason.PROTOCOL_ERROR


@pytest.mark.parametrize("confirmed", [False, True], ids=["open-activity", "unconfirmed-end"])
def test_unexpected_activity_start_is_answered_with_ab(confirmed: bool) -> None:
    pair = open_pair(checkpoint_size=1)
    pair.initiator.send_transfer(apdu(5 * KB))
    if confirmed:
        pair.pump()  # ended, its confirmation not given yet
    else:
        pair.deliver(True)  # still open: three minor syncs await their MIA
    aborted, wire = _inject(pair.responder, activity_start_bytes(9))
    assert aborted.why.startswith("session: ") and "AS" in aborted.why
    assert only_spdu(wire, Kind.AB).transport_disconnect == SESSION_PROTOCOL_ERROR
    _aborted(feed(pair.initiator, wire), by_peer=True)


def test_peer_disconnect_request_ends_the_association() -> None:
    pair = open_pair()
    dr = encode_tpkt(tpdu.encode_dr(tpdu.DisconnectRequest(destination_reference=1, reason=0)))
    _aborted(pair.responder.receive_data(dr), by_peer=True)
    assert pair.responder.closed
    assert pair.responder.data_to_send() == b""


# --- hypothesis: random calls of both users -------------------------------------------------

ACTIONS = ("transfer", "confirm", "request_turn", "give_turn", "release", "abort", "deliver")


@dataclass
class _Side:
    """What one user did and saw, to compare with the other's."""

    association: P1Association
    sent: list[bytes] = field(default_factory=list)  # by transfer id - 1
    received: list[tuple[int, bytes]] = field(default_factory=list)
    confirmed_by_us: list[int] = field(default_factory=list)
    confirmed_to_us: list[int] = field(default_factory=list)
    aborted: bool = False  # called abort()
    ended: list[Event] = field(default_factory=list)  # Released / Aborted


class _Walk:
    """Both users of a pair calling the API at random; the bookkeeping of what happened."""

    def __init__(self, dialogue_mode: DialogueMode, checkpoint_size: int, window_size: int) -> None:
        self.pair = open_pair(
            dialogue_mode=dialogue_mode, checkpoint_size=checkpoint_size, window_size=window_size
        )
        self.sides = {True: _Side(self.pair.initiator), False: _Side(self.pair.responder)}

    def note(self, initiator: bool, events: list[Event]) -> None:
        side = self.sides[initiator]
        for event in events:
            assert isinstance(event, EVENT_TYPES), event
            if isinstance(event, TransferReceived):
                side.received.append((event.transfer_id, event.apdu))
            elif isinstance(event, TransferConfirmed):
                side.confirmed_to_us.append(event.transfer_id)
            elif isinstance(event, Released | Aborted):
                side.ended.append(event)
            else:
                assert isinstance(event, TurnRequested | TurnGiven), event

    def deliver(self, initiator: bool) -> None:
        self.note(not initiator, self.pair.deliver(initiator))

    def pump(self) -> None:
        pumped = self.pair.pump()
        self.note(True, pumped.initiator)
        self.note(False, pumped.responder)

    def act(self, initiator: bool, action: str, number: int) -> None:
        """One call; only LocalProtocolError may come out, and then nothing changed."""
        side = self.sides[initiator]
        association = side.association
        state = association.state
        try:
            if action == "transfer":
                data = apdu((2, 700, 3 * KB, 9 * KB)[number])
                transfer_id = association.send_transfer(data)
                assert transfer_id == len(side.sent) + 1
                side.sent.append(data)
            elif action == "confirm":
                pending = [tid for tid, _ in side.received if tid not in side.confirmed_by_us]
                transfer_id = pending[-1] if pending else 99
                association.confirm_transfer(transfer_id)
                side.confirmed_by_us.append(transfer_id)
            elif action == "request_turn":
                association.request_turn(number)
            elif action == "give_turn":
                association.give_turn()
            elif action == "release":
                association.send_release()
            elif action == "abort":
                events = association.abort()
                side.aborted = side.aborted or bool(events)
                self.note(initiator, events)
            else:
                self.deliver(initiator)
        except LocalProtocolError:
            assert association.state is state

    def check_transfers(self, *, complete: bool) -> None:
        """Each direction: what arrived is what was sent, in order; confirmations match."""
        for initiator in (True, False):
            sender, receiver = self.sides[initiator], self.sides[not initiator]
            arrived = [data for _, data in receiver.received]
            assert arrived == sender.sent[: len(arrived)]
            assert [tid for tid, _ in receiver.received] == list(range(1, len(arrived) + 1))
            assert sender.confirmed_to_us == receiver.confirmed_by_us[: len(sender.confirmed_to_us)]
            if complete:
                assert len(arrived) == len(sender.sent)
                assert sender.confirmed_to_us == receiver.confirmed_by_us

    def check_agreement(self) -> None:
        """After a full pump: both ends open or both closed, and they say the same."""
        initiator, responder = self.sides[True], self.sides[False]
        assert initiator.association.closed == responder.association.closed
        someone_aborted = initiator.aborted or responder.aborted
        self.check_transfers(complete=not initiator.association.closed)
        if not initiator.association.closed:
            assert initiator.association.has_turn != responder.association.has_turn
            return
        kinds = [[type(event) for event in side.ended] for side in (initiator, responder)]
        assert all(len(ended) == 1 for ended in kinds), kinds
        if not someone_aborted:  # an abort may cross a release: then either end may say so
            assert kinds[0] == kinds[1], kinds
            (first,), (second,) = initiator.ended, responder.ended
            if isinstance(first, Aborted) and isinstance(second, Aborted):
                assert first.by_peer != second.by_peer

    def finish(self) -> None:
        """Confirm what is pending, bring the turn home and release: the pair still works."""
        for _ in range(3):
            for initiator in (True, False):
                side = self.sides[initiator]
                for transfer_id, _ in side.received:
                    if transfer_id not in side.confirmed_by_us:
                        side.association.confirm_transfer(transfer_id)
                        side.confirmed_by_us.append(transfer_id)
            self.pump()
        first, second = self.pair.initiator, self.pair.responder
        if not first.has_turn:
            first.request_turn(0)
            self.pump()
            second.give_turn()
            self.pump()
        first.send_release()
        self.pump()
        assert [type(event) for event in self.sides[True].ended] == [Released]
        assert [type(event) for event in self.sides[False].ended] == [Released]
        self.check_transfers(complete=True)


_STEPS = st.lists(
    st.tuples(st.booleans(), st.sampled_from(ACTIONS), st.integers(0, 3)), max_size=40
)
_MODES = st.sampled_from(list(DialogueMode))
_CHECKPOINTS = st.sampled_from([0, 1, 2])
_WINDOWS = st.sampled_from([1, 3])


@WALKS
@given(_MODES, _CHECKPOINTS, _WINDOWS, _STEPS)
def test_random_calls_in_lock_step_keep_both_ends_agreeing(
    mode: DialogueMode, checkpoint_size: int, window_size: int, steps: list[tuple[bool, str, int]]
) -> None:
    walk = _Walk(mode, checkpoint_size, window_size)
    for initiator, action, number in steps:
        walk.act(initiator, action, number)
        walk.pump()
        walk.check_agreement()
        if walk.pair.initiator.closed:
            return
    walk.finish()


@WALKS
@given(_MODES, _CHECKPOINTS, _WINDOWS, _STEPS)
def test_random_calls_with_interleaved_deliveries_keep_both_ends_agreeing(
    mode: DialogueMode, checkpoint_size: int, window_size: int, steps: list[tuple[bool, str, int]]
) -> None:
    walk = _Walk(mode, checkpoint_size, window_size)
    for initiator, action, number in steps:
        walk.act(initiator, action, number)
    walk.pump()
    walk.check_agreement()
    if not walk.pair.initiator.closed:
        walk.finish()


# --- hypothesis: random and mutated bytes ---------------------------------------------------


def _recorded_conversation() -> tuple[bytes, bytes, bytes]:
    """The initiator's bytes of a whole association, its data phase alone, the responder's."""
    pair = Pair(AssociationSettings(dialogue_mode=TWA, checkpoint_size=1, window_size=2))
    pair.bind()
    bind_end = len(pair.sent_by_initiator)
    _transfer(pair, apdu(3 * KB))
    pair.responder.request_turn(2)
    pair.pump()
    pair.initiator.give_turn()
    pair.pump()
    _transfer(pair, apdu(300), from_initiator=False)
    pair.initiator.request_turn(1)
    pair.pump()
    pair.responder.give_turn()
    pair.pump()
    pair.initiator.send_release()
    pair.pump()
    return (
        b"".join(pair.sent_by_initiator),
        b"".join(pair.sent_by_initiator[bind_end:]),
        b"".join(pair.sent_by_responder),
    )


INITIATOR_STREAM, DATA_PHASE_STREAM, RESPONDER_STREAM = _recorded_conversation()


@st.composite
def _mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few octets changed, removed or inserted."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(out) - 1))
        how = draw(st.sampled_from(["set", "flip", "delete", "insert"]))
        if how == "set":
            out[index] = draw(st.integers(0, 255))
        elif how == "flip":
            out[index] ^= 1 << draw(st.integers(0, 7))
        elif how == "delete":
            del out[index : index + draw(st.integers(1, 8))]
        else:
            out[index:index] = draw(st.binary(min_size=1, max_size=8))
        if not out:
            out.append(0)
    return bytes(out)


def _user(association: P1Association, events: list[Event]) -> None:
    """What an MTA does with events: accept binds, confirm transfers (if still open)."""
    for event in events:
        assert isinstance(event, EVENT_TYPES), event
        if association.closed:
            continue
        if isinstance(event, BindRequested):
            association.accept_bind(RESULT)
        elif isinstance(event, TransferReceived):
            association.confirm_transfer(event.transfer_id)


def _feed_bytewise(association: P1Association, data: bytes) -> None:
    """One octet per read, so that no read holds both a TPDU and a bad TPDU after it."""
    for index in range(len(data)):
        _user(association, association.receive_data(data[index : index + 1]))
        association.data_to_send()


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_to_a_fresh_responder_give_only_events(data: bytes) -> None:
    _feed_bytewise(P1Association(Role.RESPONDER), data)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_to_an_open_association_give_only_events(data: bytes) -> None:
    pair = open_pair(checkpoint_size=1)
    _feed_bytewise(pair.responder, data)
    _feed_bytewise(pair.initiator, data)


@FUZZ
@given(_mutated(INITIATOR_STREAM))
def test_mutated_initiator_bytes_to_a_fresh_responder_give_only_events(data: bytes) -> None:
    _feed_bytewise(P1Association(Role.RESPONDER), data)


@FUZZ
@given(_mutated(DATA_PHASE_STREAM))
def test_mutated_data_phase_to_an_open_responder_give_only_events(data: bytes) -> None:
    pair = open_pair(dialogue_mode=TWA, checkpoint_size=1, window_size=2)
    _feed_bytewise(pair.responder, data)


@FUZZ
@given(_mutated(RESPONDER_STREAM))
def test_mutated_responder_bytes_to_an_initiator_give_only_events(data: bytes) -> None:
    association = P1Association(
        Role.INITIATOR, AssociationSettings(dialogue_mode=TWA, checkpoint_size=1, window_size=2)
    )
    association.send_bind(ARGUMENT)
    association.data_to_send()
    _feed_bytewise(association, data)


@FUZZ
@given(_mutated(INITIATOR_STREAM), st.lists(st.integers(1, 600), min_size=1, max_size=20))
def test_mutated_bytes_in_reads_of_any_size_give_only_events(data: bytes, reads: list[int]) -> None:
    association = P1Association(Role.RESPONDER)
    start = 0
    for size in reads * (len(data) // sum(reads) + 1):
        _user(association, association.receive_data(data[start : start + size]))
        association.data_to_send()
        start += size


# --- defects p1/association/connection.py once had, pinned down -------------------------


def test_release_crossing_a_turn_request_releases_both_ends() -> None:
    pair = open_pair(dialogue_mode=TWA)
    pair.initiator.send_release()
    pair.responder.request_turn(5)  # legal: the responder has not seen the FN yet
    pumped = pair.pump()
    assert pumped.responder == [Released(by_peer=True)]
    assert pumped.initiator == [Released(by_peer=False)]


def test_one_confirmation_of_several_checkpoints_opens_the_whole_window() -> None:
    pair = open_pair(checkpoint_size=1, window_size=3)
    pair.initiator.send_transfer(apdu(10 * KB))
    assert spdu_kinds(pair.initiator.data_to_send()).count(Kind.MIP) == 3  # the window is full
    assert pair.initiator.receive_data(minor_sync_ack_bytes(3)) == []
    assert spdu_kinds(pair.initiator.data_to_send()).count(Kind.MIP) == 3  # a full window again


@pytest.mark.parametrize("mode", list(DialogueMode))
def test_release_without_the_turn_changes_nothing(mode: DialogueMode) -> None:
    pair = open_pair(dialogue_mode=mode)
    with pytest.raises(LocalProtocolError):
        pair.responder.send_release()
    assert pair.responder.state is State.OPEN
    _transfer(pair, apdu(100))


@pytest.mark.parametrize("who", ["initiator-gives", "responder-asks"])
def test_no_turn_moves_in_monologue(who: str) -> None:
    pair = open_pair()
    with pytest.raises(LocalProtocolError):
        if who == "initiator-gives":
            pair.initiator.give_turn()
        else:
            pair.responder.request_turn(1)


def test_only_the_initiator_releases_in_two_way_alternate() -> None:
    pair = open_pair(dialogue_mode=TWA)
    pair.responder.request_turn(1)
    pair.pump()
    pair.initiator.give_turn()
    pair.pump()
    assert pair.responder.has_turn
    with pytest.raises(LocalProtocolError):
        pair.responder.send_release()


def test_abort_while_connecting_then_the_cc_arrives() -> None:
    pair = Pair()
    pair.initiator.send_bind(ARGUMENT)
    assert pair.initiator.abort() == [Aborted(by_peer=False, why="aborted by the MTA")]
    pair.pump()
    assert pair.initiator.closed


def test_connect_request_and_bad_tpdu_in_one_read() -> None:
    pair = Pair()
    pair.initiator.send_bind(ARGUMENT)
    cr = pair.initiator.data_to_send()
    events = pair.responder.receive_data(cr + b"\x04\x00\x00\x08\x02\xf0\x80\x00")
    _aborted(events, by_peer=False)
    assert tpdu_codes(pair.responder.data_to_send()) == [tpdu.ER]


def test_minor_sync_and_bad_tpdu_in_one_read() -> None:
    pair = open_pair(checkpoint_size=1)
    pair.initiator.send_transfer(apdu(5 * KB))
    data = pair.initiator.data_to_send()
    events = pair.responder.receive_data(data + b"\x04\x00\x00\x08\x02\xf0\x80\x00")
    _aborted(events, by_peer=False)
    assert tpdu_codes(pair.responder.data_to_send()) == [tpdu.ER]


def test_other_application_context_is_rejected_with_an_aare() -> None:
    mts_access = "2.6.0.1.0"  # id-ac-mts-access-88: a P3 context, not P1's
    pair = _crafted_bind(connect_data(aarq_bytes(rtorq_bytes(), mts_access)))
    assert pair.responder.closed
    wire = pair.responder.data_to_send()
    assert spdu_kinds(wire) == [Kind.RF]
    aare = refusal_aare(wire)
    assert aare.result == acse.REJECTED_PERMANENT
    assert aare.diagnostic == acse.Diagnostic(
        source=acse.SERVICE_USER,
        value=acse.UserDiagnostic.APPLICATION_CONTEXT_NAME_NOT_SUPPORTED,
    )
    (refused,) = feed(pair.initiator, wire)
    assert isinstance(refused, BindRefused)


def test_rt_open_without_a_bind_argument_is_not_refused_as_busy() -> None:
    pair = _crafted_bind(connect_data(aarq_bytes(rtorq_bytes(open_data=None))))
    (refused,) = feed(pair.initiator, pair.responder.data_to_send())
    assert isinstance(refused, BindRefused)
    assert refused.error is not MTABindError.BUSY


def test_release_request_with_garbage_is_aborted_on_the_wire() -> None:
    pair = open_pair()
    fn = spdu.Spdu(kind=Kind.FN, transport_disconnect=spdu.TRANSPORT_RELEASED, user_data=b"\x01")
    aborted = _aborted(pair.responder.receive_data(spdu_bytes(fn)), by_peer=False)
    assert "truncated" in aborted.why
    wire = pair.responder.data_to_send()
    assert spdu_kinds(wire) == [Kind.AB]
    assert user_abort_rtab(wire).abort_reason == AbortReason.PROTOCOL_ERROR


def test_exception_report_during_a_transfer_is_not_ignored() -> None:
    pair = open_pair(checkpoint_size=1, window_size=1)
    pair.initiator.send_transfer(apdu(5 * KB))
    pair.initiator.data_to_send()
    report = spdu.Spdu(kind=Kind.ED, reason_code=0)
    events = pair.initiator.receive_data(spdu_bytes(report))
    wire = pair.initiator.data_to_send()
    discarded = Kind.AD in spdu_kinds(wire)
    assert discarded or any(isinstance(event, Aborted) for event in events)


@pytest.mark.parametrize(("stop", "answer"), [(Kind.AD, Kind.ADA), (Kind.AI, Kind.AIA)])
def test_transfer_discarded_by_the_sender_is_answered(stop: Kind, answer: Kind) -> None:
    pair = open_pair()
    data = activity_start_bytes(1) + rttr_bytes(b"\x28\x80\x02\x01\x05")
    data += spdu_bytes(spdu.Spdu(kind=stop, reason_code=0))
    assert pair.responder.receive_data(data) == []
    assert spdu_kinds(pair.responder.data_to_send()) == [answer]
    again = activity_start_bytes(2) + rttr_bytes(encode_transfer(apdu(40))) + activity_end_bytes()
    assert pair.responder.receive_data(again) == [TransferReceived(transfer_id=2, apdu=apdu(40))]
