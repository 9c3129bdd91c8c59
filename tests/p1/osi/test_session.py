"""The session protocol machine (X.225): an initiator and a responder driven in memory.

Connection, refusal, data, activities with minor synchronization, tokens and control give,
interrupt and discard, exceptions, release, abort, large connect data, segmenting, every
(state, input) pair of the table, random walks of both users, and hostile TSDUs.
"""

from __future__ import annotations

import contextlib
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p1.osi import DEFAULT_LIMITS, Event, LocalProtocolError, Role, StackLimits
from p1.osi.session import (
    RTSE_REQUIREMENTS,
    Aborted,
    ActivityDiscardConfirmed,
    ActivityDiscarded,
    ActivityEnded,
    ActivityEndRequested,
    ActivityInterruptConfirmed,
    ActivityInterrupted,
    ActivityStarted,
    ConnectAccepted,
    ConnectRefused,
    ConnectRequested,
    ControlGiven,
    DataReceived,
    ExceptionReported,
    MinorSyncConfirmed,
    MinorSyncRequested,
    Released,
    ReleaseRefused,
    ReleaseRequested,
    SessionConnection,
    Token,
    TokensGiven,
    TokensRequested,
)
from p1.osi.x225 import spdu
from p1.osi.x225.machine import DISCARDED, TABLE, Input, State
from p1.osi.x225.spdu import ConnectAcceptItem, Kind, Requirement, Spdu
from tests.profiles import examples

ALL_RTSE_TOKENS = Token.DATA | Token.MINOR_SYNC | Token.MAJOR_ACTIVITY
ACTIVITY_ID = b"\x02\x01\x01"  # what RTSE puts there: a BER INTEGER, the transfer number
NEGOTIATED = RTSE_REQUIREMENTS | Requirement.NEGOTIATED_RELEASE


@dataclass
class Pair:
    """An initiator and a responder; ``pump`` carries TSDUs both ways until none is left."""

    initiator: SessionConnection
    responder: SessionConnection
    wire: list[tuple[bool, bytes]] = field(default_factory=list)  # (from initiator, TSDU)

    @classmethod
    def make(cls, *, tsdu_maximum_size: int = 0, limits: StackLimits = DEFAULT_LIMITS) -> Pair:
        return cls(
            SessionConnection(Role.INITIATOR, tsdu_maximum_size=tsdu_maximum_size),
            SessionConnection(Role.RESPONDER, limits=limits, tsdu_maximum_size=tsdu_maximum_size),
        )

    def pump(self) -> tuple[list[Event], list[Event]]:
        """Events of (initiator, responder) once nothing is queued any more."""
        to_initiator: list[Event] = []
        to_responder: list[Event] = []
        while True:
            forward = self.initiator.tsdus_to_send()
            backward = self.responder.tsdus_to_send()
            if not forward and not backward:
                return to_initiator, to_responder
            for tsdu in forward:
                self.wire.append((True, tsdu))
                to_responder.extend(self.responder.receive_tsdu(tsdu))
            for tsdu in backward:
                self.wire.append((False, tsdu))
                to_initiator.extend(self.initiator.receive_tsdu(tsdu))

    def connect(self, requirements: int = RTSE_REQUIREMENTS) -> Pair:
        self.initiator.send_connect(b"CP", requirements=requirements)
        _, events = self.pump()
        assert isinstance(events[0], ConnectRequested)
        self.responder.send_accept(b"CPA")
        events, _ = self.pump()
        assert isinstance(events[0], ConnectAccepted)
        return self

    def sent(self, from_initiator: bool = True) -> list[bytes]:
        return [tsdu for forward, tsdu in self.wire if forward is from_initiator]


def states(pair: Pair) -> tuple[State, State]:
    """Both states, read afresh (a type checker would keep an earlier assert's narrowing)."""
    return pair.initiator.state, pair.responder.state


def connected(requirements: int = RTSE_REQUIREMENTS, **kwargs: int) -> Pair:
    return Pair.make(**kwargs).connect(requirements)  # type: ignore[arg-type]


def in_activity(**kwargs: int) -> Pair:
    pair = connected(**kwargs)
    pair.initiator.send_activity_start(ACTIVITY_ID)
    pair.pump()
    return pair


# --- connection ----------------------------------------------------------------------------


def test_connect_and_accept_with_rtse_requirements() -> None:
    pair = Pair.make()
    pair.initiator.send_connect(b"CP", calling_ssap=b"\x00\x01", called_ssap=b"\x00\x02")
    assert pair.initiator.state is State.WAIT_AC
    _, events = pair.pump()
    assert events == [
        ConnectRequested(
            user_data=b"CP",
            requirements=0x0249,
            token_setting=0,
            calling_ssap=b"\x00\x01",
            called_ssap=b"\x00\x02",
            version=2,
        )
    ]
    assert pair.responder.state is State.WAIT_CONNECT_RESPONSE
    pair.responder.send_accept(b"CPA")
    events, _ = pair.pump()
    assert events == [ConnectAccepted(user_data=b"CPA", requirements=0x0249, token_setting=0)]
    # CN: connect/accept item (options 0, version 2, tokens on the initiator's side), PI 20.
    assert pair.sent()[0] == bytes.fromhex(
        "0d1b 0509130100160102 1a0100 14020249 33020001 34020002 c1024350"
    )
    # AC: the same item, PI 20, the responding SSAP (the called one), user data.
    assert pair.sent(False)[0] == bytes.fromhex(
        "0e18 0509130100160102 1a0100 14020249 34020002 c103435041"
    )
    for side in (pair.initiator, pair.responder):
        assert side.state is State.OPEN and side.requirements == RTSE_REQUIREMENTS
        assert side.available_tokens == ALL_RTSE_TOKENS
    assert pair.initiator.tokens == ALL_RTSE_TOKENS and pair.responder.tokens == Token(0)


def test_requirements_are_the_and_of_both_sides() -> None:
    proposed = RTSE_REQUIREMENTS | Requirement.DUPLEX | Requirement.CAPABILITY_DATA
    pair = connected(proposed)
    # Duplex goes (half-duplex wins); capability data is not implemented here.
    assert pair.initiator.requirements == pair.responder.requirements == RTSE_REQUIREMENTS


def test_responder_chooses_fewer_units_and_tokens_follow() -> None:
    pair = Pair.make()
    pair.initiator.send_connect(b"CP")
    pair.pump()
    with pytest.raises(LocalProtocolError, match="not within"):
        pair.responder.send_accept(b"", requirements=RTSE_REQUIREMENTS | Requirement.DUPLEX)
    pair.responder.send_accept(b"", requirements=Requirement.HALF_DUPLEX)
    pair.pump()
    assert pair.initiator.requirements == Requirement.HALF_DUPLEX
    assert pair.initiator.tokens == Token.DATA  # the only token left
    with pytest.raises(LocalProtocolError, match="ACTIVITY"):
        pair.initiator.send_activity_start(ACTIVITY_ID)


def test_called_users_choice_settles_on_the_initiator() -> None:
    pair = Pair.make()
    pair.initiator.send_connect(b"", token_setting=0b10_10_10_10)
    _, [requested] = pair.pump()
    assert isinstance(requested, ConnectRequested) and requested.token_setting == 0xAA
    pair.responder.send_accept(b"")
    [accepted], _ = pair.pump()
    assert isinstance(accepted, ConnectAccepted) and accepted.token_setting == 0
    assert pair.initiator.tokens == ALL_RTSE_TOKENS


def test_tokens_on_the_responders_side() -> None:
    pair = Pair.make()
    pair.initiator.send_connect(b"", token_setting=0b01_01_01_01)
    pair.pump()
    pair.responder.send_accept(b"")
    pair.pump()
    assert pair.responder.tokens == ALL_RTSE_TOKENS and pair.initiator.tokens == Token(0)


def test_refusal_with_user_data() -> None:
    pair = Pair.make()
    pair.initiator.send_connect(b"CP")
    pair.pump()
    pair.responder.send_refuse(b"CPR")
    events, _ = pair.pump()
    assert events == [ConnectRefused(user_data=b"CPR", reason=spdu.REFUSED_BY_USER)]
    assert pair.sent(False) == [bytes.fromhex("0c0d 110101 14020249 3204 02435052")]
    assert pair.initiator.closed and pair.responder.closed
    with pytest.raises(LocalProtocolError, match="reason 2 only"):
        in_connect().responder.send_refuse(b"x", reason=1)


def test_only_the_initiator_connects_and_only_once() -> None:
    with pytest.raises(LocalProtocolError, match="only the initiator"):
        SessionConnection(Role.RESPONDER).send_connect(b"")
    initiator = SessionConnection(Role.INITIATOR)
    initiator.send_connect(b"")
    with pytest.raises(LocalProtocolError, match="send CN is not allowed in state WAIT_AC"):
        initiator.send_connect(b"")


def test_cn_to_an_initiator_is_a_protocol_error() -> None:
    cn = SessionConnection(Role.INITIATOR)
    cn.send_connect(b"")
    tsdu = cn.tsdus_to_send()[0]
    other = SessionConnection(Role.INITIATOR)
    [aborted] = other.receive_tsdu(tsdu)
    assert isinstance(aborted, Aborted) and "CN received by the initiator" in aborted.why


# --- data ----------------------------------------------------------------------------------


def test_data_needs_the_data_token() -> None:
    pair = connected()
    pair.initiator.send_data(b"one")
    _, events = pair.pump()
    assert events == [DataReceived(user_data=b"one")]
    assert pair.sent()[-1] == b"\x01\x00\x01\x00one"
    with pytest.raises(LocalProtocolError, match="S-DATA needs the DATA token"):
        pair.responder.send_data(b"no")
    pair.initiator.send_give_tokens(Token.DATA)
    events, responder_events = pair.pump()
    assert responder_events == [TokensGiven(tokens=Token.DATA)]
    pair.responder.send_data(memoryview(b"two"))
    events, _ = pair.pump()
    assert events == [DataReceived(user_data=b"two")]


def test_data_from_the_wrong_side_aborts() -> None:
    pair = connected()
    [aborted] = pair.initiator.receive_tsdu(b"\x01\x00\x01\x00x")  # it holds the token
    assert aborted == Aborted(
        reason=spdu.TRANSPORT_RELEASED | spdu.PROTOCOL_ERROR,
        user_data=b"",
        by_peer=False,
        why="DT while we hold DATA",
    )
    assert pair.initiator.closed
    assert pair.initiator.receive_tsdu(b"\x01\x00\x01\x00x") == []  # closed: ignored
    _, events = pair.pump()
    assert pair.sent() == [pair.sent()[0], bytes.fromhex("1903110105")]
    [peer_view] = events
    assert isinstance(peer_view, Aborted) and (peer_view.by_peer, peer_view.reason) == (True, 5)
    assert pair.responder.closed


def test_a_megabyte_of_data_costs_one_copy_each_way() -> None:
    pair = connected()
    data = bytes(1 << 20)
    tracemalloc.start()
    try:
        pair.initiator.send_data(data)
        _, sent_peak = tracemalloc.get_traced_memory()
        [tsdu] = pair.initiator.tsdus_to_send()
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        [received] = pair.responder.receive_tsdu(tsdu)
        _, received_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(tsdu) == len(data) + 4
    assert isinstance(received, DataReceived) and received.user_data == data
    assert sent_peak < len(data) + 64 * 1024
    assert received_peak - before < len(data) + 64 * 1024


# --- activities and synchronization ------------------------------------------------------


def test_activity_with_outstanding_minor_syncs() -> None:
    pair = connected()
    pair.initiator.send_activity_start(ACTIVITY_ID)
    pair.initiator.send_data(b"a")
    serials = [pair.initiator.send_minor_sync() for _ in range(3)]
    pair.initiator.send_data(b"b")
    assert serials == [1, 2, 3]
    _, events = pair.pump()
    assert events == [
        ActivityStarted(activity_id=ACTIVITY_ID, user_data=b""),
        DataReceived(user_data=b"a"),
        *(MinorSyncRequested(serial=n, confirm_required=True, user_data=b"") for n in serials),
        DataReceived(user_data=b"b"),
    ]
    assert pair.sent()[1:4] == [
        bytes.fromhex("0100 2d05 2903020101"),
        bytes.fromhex("0100 0100 61"),
        bytes.fromhex("0100 3103 2a0131"),
    ]
    pair.responder.send_minor_sync_response(1)
    pair.responder.send_minor_sync_response(3)  # confirms 2 and 3
    with pytest.raises(LocalProtocolError, match="no minor sync point 2 to confirm"):
        pair.responder.send_minor_sync_response(2)
    events, _ = pair.pump()
    assert events == [
        MinorSyncConfirmed(serial=1, user_data=b""),
        MinorSyncConfirmed(serial=3, user_data=b""),
    ]
    assert pair.sent(False) == [
        *pair.sent(False)[:1],
        bytes.fromhex("0200 3203 2a0131"),
        bytes.fromhex("0200 3203 2a0133"),
    ]
    assert pair.initiator.send_activity_end(b"end") == 4
    _, events = pair.pump()
    assert events == [ActivityEndRequested(serial=4, user_data=b"end")]
    assert pair.responder.state is State.WAIT_ACTIVITY_END_RESPONSE
    pair.responder.send_activity_end_response()
    events, _ = pair.pump()
    assert events == [ActivityEnded(serial=4, user_data=b"")]
    assert pair.sent(False)[-1] == bytes.fromhex("0200 2a03 2a0134")
    assert states(pair) == (State.OPEN, State.OPEN)
    # A new activity starts the serial numbers again.
    pair.initiator.send_activity_start(b"\x02\x01\x02")
    assert pair.initiator.send_activity_end() == 1
    assert pair.sent()[-1] != pair.sent()[-2]


def test_minor_sync_without_confirmation_and_late_confirmations() -> None:
    pair = in_activity()
    pair.initiator.send_minor_sync(confirm=False, user_data=b"q")
    pair.initiator.send_minor_sync()
    pair.initiator.send_activity_end()  # sent while point 2 waits for its MIA
    _, events = pair.pump()
    assert events[0] == MinorSyncRequested(serial=1, confirm_required=False, user_data=b"q")
    assert pair.initiator.state is State.WAIT_MAA
    pair.responder.send_minor_sync_response(2)  # allowed while the activity end waits
    pair.responder.send_activity_end_response()
    events, _ = pair.pump()
    assert events == [
        MinorSyncConfirmed(serial=2, user_data=b""),
        ActivityEnded(serial=3, user_data=b""),
    ]


def test_the_activity_end_leaves_no_point_to_confirm() -> None:
    pair = in_activity()
    pair.initiator.send_minor_sync()
    pair.initiator.send_activity_end()
    pair.pump()
    pair.responder.send_activity_end_response()
    with pytest.raises(LocalProtocolError, match="no minor sync point 1 to confirm"):
        pair.responder.send_minor_sync_response(1)


def test_activity_rules() -> None:
    pair = connected()
    with pytest.raises(LocalProtocolError, match="not allowed outside an activity"):
        pair.initiator.send_minor_sync()
    with pytest.raises(LocalProtocolError, match="not allowed outside an activity"):
        pair.initiator.send_activity_end()
    with pytest.raises(LocalProtocolError, match="needs the DATA\\+MINOR_SYNC\\+MAJOR"):
        pair.responder.send_activity_start(ACTIVITY_ID)
    with pytest.raises(LocalProtocolError, match="at most 6 octets"):
        pair.initiator.send_activity_start(bytes(7))
    pair.initiator.send_activity_start(ACTIVITY_ID)
    with pytest.raises(LocalProtocolError, match="not allowed inside an activity"):
        pair.initiator.send_activity_start(ACTIVITY_ID)
    with pytest.raises(LocalProtocolError, match="not allowed inside an activity"):
        pair.initiator.send_release()
    with pytest.raises(LocalProtocolError, match="not allowed inside an activity"):
        pair.initiator.send_control_give()


def test_a_wrong_serial_number_aborts() -> None:
    pair = in_activity()
    [aborted] = pair.responder.receive_tsdu(bytes.fromhex("0100 3103 2a0135"))
    assert isinstance(aborted, Aborted) and aborted.why == "MIP serial 5, not 1"


def test_major_synchronization_is_not_supported() -> None:
    pair = in_activity()
    [aborted] = pair.responder.receive_tsdu(bytes.fromhex("0100 2906 0f0101 2a0131"))
    assert isinstance(aborted, Aborted) and "receive MAP" in aborted.why


# --- tokens and turns ----------------------------------------------------------------------


def test_token_please_give_and_control_give() -> None:
    """RTSE's turn: RT-TURN-PLEASE is PT, RT-TURN-GIVE is GTC (two-way alternate)."""
    pair = connected()
    with pytest.raises(LocalProtocolError, match="cannot ask for"):
        pair.initiator.send_token_please(Token.DATA)  # held already
    pair.responder.send_token_please(ALL_RTSE_TOKENS, b"RTTP")
    events, _ = pair.pump()
    assert events == [TokensRequested(tokens=ALL_RTSE_TOKENS, user_data=b"RTTP")]
    assert pair.sent(False)[-1] == bytes.fromhex("0209 100115 c10452545450")
    pair.initiator.send_control_give()
    assert pair.initiator.state is State.WAIT_GTA and pair.initiator.tokens == Token(0)
    initiator_events, responder_events = pair.pump()
    assert responder_events == [ControlGiven()] and initiator_events == []
    assert pair.sent()[-1] == b"\x15\x00" and pair.sent(False)[-1] == b"\x16\x00"
    assert states(pair)[0] is State.OPEN
    assert pair.responder.tokens == ALL_RTSE_TOKENS
    # The responder now has the turn: it transfers in its own activity.
    pair.responder.send_activity_start(ACTIVITY_ID)
    pair.responder.send_data(b"reply")
    events, _ = pair.pump()
    assert events == [
        ActivityStarted(activity_id=ACTIVITY_ID, user_data=b""),
        DataReceived(user_data=b"reply"),
    ]


def test_turn_entries_of_the_table() -> None:
    """PT and GTC as RTSE's turn uses them (X.225): asked and given while open; after our
    GTC nothing is sent until its GTA, and a PT or GT that crossed it is dropped."""
    assert TABLE[State.OPEN, Input.SEND_PT] is State.OPEN
    assert TABLE[State.OPEN, Input.RECV_PT] is State.OPEN
    assert TABLE[State.OPEN, Input.SEND_GTC] is State.WAIT_GTA
    assert TABLE[State.OPEN, Input.RECV_GTC] is State.OPEN
    assert TABLE[State.WAIT_GTA, Input.RECV_GTA] is State.OPEN
    while_giving = {what for (state, what) in TABLE if state is State.WAIT_GTA}
    assert while_giving == {
        Input.RECV_GTA,
        Input.RECV_PT,
        Input.RECV_GT,
        Input.SEND_AB,
        Input.RECV_AB,
    }
    assert {(State.WAIT_GTA, Input.RECV_PT), (State.WAIT_GTA, Input.RECV_GT)} <= DISCARDED
    # A turn request crossing our release (FN) is taken, and the DN ends it.
    assert TABLE[State.WAIT_DN, Input.RECV_PT] is State.WAIT_DN


def test_give_tokens_one_by_one() -> None:
    pair = connected()
    pair.initiator.send_give_tokens(Token.MINOR_SYNC | Token.MAJOR_ACTIVITY)
    _, events = pair.pump()
    assert events == [TokensGiven(tokens=Token.MINOR_SYNC | Token.MAJOR_ACTIVITY)]
    assert pair.sent()[-1] == bytes.fromhex("0103 100114")
    with pytest.raises(LocalProtocolError, match="S-TOKEN-GIVE needs the MAJOR_ACTIVITY"):
        pair.initiator.send_give_tokens(Token.MAJOR_ACTIVITY)
    with pytest.raises(LocalProtocolError, match="S-CONTROL-GIVE needs"):
        pair.initiator.send_control_give()
    with pytest.raises(LocalProtocolError, match="no tokens to give"):
        pair.initiator.send_give_tokens(Token(0))


def test_gtc_in_flight_discards_the_peers_pt() -> None:
    pair = connected()
    pair.initiator.send_control_give()
    pair.responder.send_token_please(Token.DATA)  # crosses the GTC
    initiator_events, responder_events = pair.pump()
    assert initiator_events == [] and responder_events == [ControlGiven()]
    assert pair.responder.tokens == ALL_RTSE_TOKENS


# --- interrupt, discard, exceptions --------------------------------------------------------


@pytest.mark.parametrize("discard", [False, True])
def test_activity_interrupt_and_discard(discard: bool) -> None:
    pair = in_activity()
    pair.initiator.send_give_tokens(Token.DATA)  # the responder may even hold some
    pair.pump()
    if discard:
        pair.initiator.send_activity_discard(5)
    else:
        pair.initiator.send_activity_interrupt(0)
    _, events = pair.pump()
    assert events == [ActivityDiscarded(reason=5) if discard else ActivityInterrupted(reason=0)]
    assert pair.sent()[-1] == bytes.fromhex("0100 3903 320105" if discard else "0100 1903 320100")
    if discard:
        pair.responder.send_activity_discard_response()
    else:
        pair.responder.send_activity_interrupt_response()
    events, _ = pair.pump()
    assert events == [ActivityDiscardConfirmed() if discard else ActivityInterruptConfirmed()]
    assert pair.sent(False)[-1] == bytes.fromhex("0200 3a00" if discard else "0200 1a00")
    # Every token is with the side that asked; the activity is over.
    assert pair.initiator.tokens == ALL_RTSE_TOKENS and pair.responder.tokens == Token(0)
    pair.initiator.send_activity_start(b"\x02\x01\x02")
    assert isinstance(pair.pump()[1][0], ActivityStarted)


def test_exception_report_and_recovery_by_discard() -> None:
    pair = in_activity()
    pair.initiator.send_data(b"lost")  # in flight when the exception report goes
    pair.responder.send_exception_report(1, b"full")
    with pytest.raises(LocalProtocolError, match="side without the data token"):
        pair.initiator.send_exception_report(1)
    initiator_events, responder_events = pair.pump()
    assert responder_events == []  # the DT crossed the ED: discarded
    assert initiator_events == [ExceptionReported(reason=1, user_data=b"full", by_provider=False)]
    assert pair.sent(False)[-1] == bytes.fromhex("0200 3009 320101 c10466756c6c")
    assert pair.initiator.state is State.EXCEPTION_RECEIVED
    assert pair.responder.state is State.EXCEPTION_SENT
    with pytest.raises(LocalProtocolError, match="send DT is not allowed"):
        pair.initiator.send_data(b"more")
    pair.initiator.send_activity_discard(0)
    pair.pump()
    pair.responder.send_activity_discard_response()
    events, _ = pair.pump()
    assert events == [ActivityDiscardConfirmed()]
    assert states(pair) == (State.OPEN, State.OPEN)


def test_exception_recovery_by_giving_the_data_token() -> None:
    pair = in_activity()
    pair.responder.send_exception_report(128)  # "demand the data token"
    pair.pump()
    with pytest.raises(LocalProtocolError, match="gives the data token"):
        pair.initiator.send_give_tokens(Token.MINOR_SYNC)
    pair.initiator.send_give_tokens(Token.DATA)
    _, events = pair.pump()
    assert events == [TokensGiven(tokens=Token.DATA)]
    assert states(pair) == (State.OPEN, State.OPEN)


def test_provider_exception_report() -> None:
    pair = in_activity()
    events = pair.initiator.receive_tsdu(bytes.fromhex("0200 0000"))
    assert events == [ExceptionReported(reason=None, user_data=b"", by_provider=True)]
    assert pair.initiator.state is State.EXCEPTION_RECEIVED


# --- release and abort -------------------------------------------------------------------


def test_orderly_release() -> None:
    pair = connected()
    with pytest.raises(LocalProtocolError, match="S-RELEASE needs"):
        pair.responder.send_release()
    pair.initiator.send_release(b"RLRQ")
    _, events = pair.pump()
    assert events == [ReleaseRequested(user_data=b"RLRQ")]
    assert pair.sent()[-1] == bytes.fromhex("0909 110101 c104524c5251")
    with pytest.raises(LocalProtocolError, match="NEGOTIATED_RELEASE"):
        pair.responder.send_release_refuse()
    pair.responder.send_release_response(b"RLRE")
    events, _ = pair.pump()
    assert events == [Released(user_data=b"RLRE")]
    assert pair.sent(False)[-1] == bytes.fromhex("0a06 c104524c5245")
    assert pair.initiator.closed and pair.responder.closed


def test_negotiated_release_may_be_refused() -> None:
    pair = connected(NEGOTIATED)
    assert Token.RELEASE in pair.initiator.tokens
    pair.initiator.send_release()
    pair.pump()
    pair.responder.send_release_refuse(b"not yet")
    events, _ = pair.pump()
    assert events == [ReleaseRefused(user_data=b"not yet")]
    assert pair.sent(False)[-1] == bytes.fromhex("0809 c1076e6f7420796574")
    assert states(pair) == (State.OPEN, State.OPEN)


def test_user_abort() -> None:
    pair = in_activity()
    pair.responder.send_abort(b"ARU")
    initiator_events, _ = pair.pump()
    assert initiator_events == [
        Aborted(reason=0x03, user_data=b"ARU", by_peer=True, why="aborted by the peer")
    ]
    assert pair.sent(False)[-1] == bytes.fromhex("1908 110103 c103415255")
    assert pair.initiator.closed and pair.responder.closed
    with pytest.raises(LocalProtocolError, match="send AB is not allowed in state CLOSED"):
        pair.responder.send_abort()


def test_abort_before_connecting_just_closes() -> None:
    initiator = SessionConnection(Role.INITIATOR)
    initiator.send_abort()
    assert initiator.closed and initiator.tsdus_to_send() == []


def test_abort_keeping_the_transport_is_accepted() -> None:
    pair = connected()
    [aborted] = pair.initiator.receive_tsdu(bytes.fromhex("1903110102"))
    assert isinstance(aborted, Aborted) and aborted.by_peer
    assert pair.initiator.tsdus_to_send() == [b"\x1a\x00"]  # AA


def test_provider_abort_from_the_peer() -> None:
    pair = connected()
    [aborted] = pair.initiator.receive_tsdu(bytes.fromhex("1903110105"))
    assert isinstance(aborted, Aborted) and "provider" in aborted.why and aborted.reason == 5


# --- large connect data and segmenting --------------------------------------------------


def test_extended_user_data_in_cn_and_ac() -> None:
    pair = Pair.make()
    pair.initiator.send_connect(bytes(range(256)) * 20)  # 5,120 octets: PGI 194
    _, [requested] = pair.pump()
    assert pair.sent()[0][19:23] == b"\xc2\xff\x14\x00"
    assert isinstance(requested, ConnectRequested)
    assert requested.user_data == bytes(range(256)) * 20
    pair.responder.send_accept(bytes(600))
    [accepted], _ = pair.pump()
    assert isinstance(accepted, ConnectAccepted) and accepted.user_data == bytes(600)
    with pytest.raises(LocalProtocolError, match="octets of AC user data"):
        in_connect().responder.send_accept(bytes(10241))


def in_connect() -> Pair:
    pair = Pair.make()
    pair.initiator.send_connect(b"CP")
    pair.pump()
    return pair


def test_connect_data_overflow() -> None:
    data = bytes(range(251)) * 100  # 25,100 octets: CN (10,240), OA, then CDOs
    pair = Pair.make()
    pair.initiator.send_connect(data)
    assert pair.initiator.state is State.WAIT_OA
    _, events = pair.pump()
    assert [kind for kind in _kinds(pair)] == [
        (True, Kind.CN),
        (False, Kind.OA),
        (True, Kind.CDO),
        (True, Kind.CDO),
    ]
    cn = spdu.decode_tsdu(pair.sent()[0])[0]
    assert cn.data_overflow == spdu.MORE_DATA and len(cn.user_data) == 10240
    assert pair.sent(False)[0] == bytes.fromhex("1003 160102")
    cdos = [spdu.decode_tsdu(t)[0] for t in pair.sent()[1:]]
    assert [c.enclosure_item for c in cdos] == [0, spdu.ENCLOSURE_END]
    assert events == [
        ConnectRequested(
            user_data=data,
            requirements=RTSE_REQUIREMENTS,
            token_setting=0,
            calling_ssap=b"",
            called_ssap=b"",
            version=2,
        )
    ]
    pair.responder.send_accept(b"ok")
    events, _ = pair.pump()
    assert isinstance(events[0], ConnectAccepted)


def _kinds(pair: Pair) -> list[tuple[bool, Kind]]:
    return [(forward, spdu.decode_tsdu(tsdu)[-1].kind) for forward, tsdu in pair.wire]


def test_connect_data_is_bounded() -> None:
    limits = StackLimits(max_connect_data_size=20000)
    pair = Pair.make(limits=limits)
    pair.initiator.send_connect(bytes(25000))
    _, [aborted] = pair.pump()
    assert isinstance(aborted, Aborted) and aborted.why == "CN user data exceeds 20000 octets"
    assert pair.initiator.closed and pair.responder.closed


def test_segmented_spdus_with_a_small_tsdu_maximum_size() -> None:
    pair = in_activity(tsdu_maximum_size=256)
    ac = spdu.decode_tsdu(pair.sent(False)[0])[0]
    assert ac.connect_accept_item is not None
    assert ac.connect_accept_item.tsdu_maximum_size == (256, 256)
    data = bytes(range(256)) * 40
    pair.initiator.send_data(data)
    pair.initiator.send_minor_sync(user_data=bytes(300))
    pair.initiator.send_data(b"small")  # still with an enclosure item
    _, events = pair.pump()
    assert events == [
        DataReceived(user_data=data),
        MinorSyncRequested(serial=1, confirm_required=True, user_data=bytes(300)),
        DataReceived(user_data=b"small"),
    ]
    assert all(len(tsdu) <= 256 for _, tsdu in pair.wire[2:])
    assert pair.sent()[-1] == bytes.fromhex("0100 0103 190103") + b"small"
    pair.responder.send_minor_sync_response(1, b"m" * 400)
    [confirmed], _ = pair.pump()
    assert confirmed == MinorSyncConfirmed(serial=1, user_data=b"m" * 400)


def test_segment_reassembly_is_bounded() -> None:
    limits = StackLimits(max_spdu_size=1000)
    pair = Pair.make(tsdu_maximum_size=128, limits=limits).connect()
    pair.initiator.send_data(bytes(1001))
    _, events = pair.pump()
    assert [type(e) for e in events] == [Aborted]
    assert isinstance(events[0], Aborted) and "exceeds 1000 octets" in events[0].why


@pytest.mark.parametrize(
    ("tsdus", "why"),
    [
        (["0100 0103 190101 61", "0100 0103 190101 61"], "begins twice"),
        (["0100 0103 190102 61"], "DT segment out of place"),
        (["0100 0103 190101 61", "0100 3103 2a0131"], "MIP between segments"),
        (["0100 0103 190101 61", "0100 3106 190102 2a0131"], "MIP segment out of place"),
    ],
)
def test_segmenting_errors(tsdus: list[str], why: str) -> None:
    pair = in_activity()
    events: list[Event] = []
    for tsdu in tsdus:
        events += pair.responder.receive_tsdu(bytes.fromhex(tsdu))
    assert isinstance(events[-1], Aborted) and why in events[-1].why


def test_a_tsdu_maximum_size_below_64_is_refused_locally() -> None:
    with pytest.raises(ValueError, match=r"outside 64\.\.65535"):
        SessionConnection(Role.INITIATOR, tsdu_maximum_size=10)


# --- every (state, input) pair -----------------------------------------------------------


def _subject(pair: Pair, initiator: bool) -> SessionConnection:
    return pair.initiator if initiator else pair.responder


def _after(
    steps: Callable[[Pair], None], initiator: bool, **kwargs: int
) -> Callable[[], SessionConnection]:
    def build() -> SessionConnection:
        pair = Pair.make(**kwargs)  # type: ignore[arg-type]
        steps(pair)
        return _subject(pair, initiator)

    return build


def _connect(pair: Pair, data: bytes = b"CP", requirements: int = NEGOTIATED) -> None:
    pair.initiator.send_connect(data, requirements=requirements)
    pair.pump()


def _open(pair: Pair) -> None:
    _connect(pair)
    pair.responder.send_accept(b"")
    pair.pump()


def _activity(pair: Pair) -> None:
    _open(pair)
    pair.initiator.send_activity_start(ACTIVITY_ID)
    pair.pump()


def _steps(*calls: Callable[[Pair], object]) -> Callable[[Pair], None]:
    def run(pair: Pair) -> None:
        for call in calls:
            call(pair)
            pair.pump()

    return run


_BIG = bytes(20000)


def _control_given(pair: Pair) -> None:
    """GTC sent, its GTA not yet back."""
    _open(pair)
    pair.initiator.send_control_give()


def _overflowing_cn(pair: Pair) -> None:
    """The responder has the CN announcing more data, and has answered OA."""
    pair.initiator.send_connect(_BIG)
    pair.responder.receive_tsdu(pair.initiator.tsdus_to_send()[0])


RECIPES: dict[str, tuple[State, Callable[[], SessionConnection]]] = {
    "idle initiator": (State.IDLE, _after(lambda p: None, True)),
    "idle responder": (State.IDLE, _after(lambda p: None, False)),
    "wait OA": (State.WAIT_OA, _after(lambda p: p.initiator.send_connect(_BIG), True)),
    "wait AC": (State.WAIT_AC, _after(lambda p: p.initiator.send_connect(b""), True)),
    "wait CDO": (State.WAIT_CDO, _after(_overflowing_cn, False)),
    "wait connect response": (State.WAIT_CONNECT_RESPONSE, _after(_connect, False)),
    "open with tokens": (State.OPEN, _after(_open, True)),
    "open without tokens": (State.OPEN, _after(_open, False)),
    "activity sender": (State.OPEN, _after(_activity, True)),
    "activity receiver": (State.OPEN, _after(_activity, False)),
    "synced receiver": (
        State.OPEN,
        _after(_steps(_activity, lambda p: p.initiator.send_minor_sync()), False),
    ),
    "wait GTA": (State.WAIT_GTA, _after(_control_given, True)),
    "wait AEA": (
        State.WAIT_MAA,
        _after(_steps(_activity, lambda p: p.initiator.send_activity_end()), True),
    ),
    "wait activity end response": (
        State.WAIT_ACTIVITY_END_RESPONSE,
        _after(_steps(_activity, lambda p: p.initiator.send_activity_end()), False),
    ),
    "wait AIA": (
        State.WAIT_AIA,
        _after(_steps(_activity, lambda p: p.initiator.send_activity_interrupt(0)), True),
    ),
    "wait interrupt response": (
        State.WAIT_ACTIVITY_INTERRUPT_RESPONSE,
        _after(_steps(_activity, lambda p: p.initiator.send_activity_interrupt(0)), False),
    ),
    "wait ADA": (
        State.WAIT_ADA,
        _after(_steps(_activity, lambda p: p.initiator.send_activity_discard(0)), True),
    ),
    "wait discard response": (
        State.WAIT_ACTIVITY_DISCARD_RESPONSE,
        _after(_steps(_activity, lambda p: p.initiator.send_activity_discard(0)), False),
    ),
    "exception received": (
        State.EXCEPTION_RECEIVED,
        _after(_steps(_activity, lambda p: p.responder.send_exception_report(1)), True),
    ),
    "exception sent": (
        State.EXCEPTION_SENT,
        _after(_steps(_activity, lambda p: p.responder.send_exception_report(1)), False),
    ),
    "wait DN": (State.WAIT_DN, _after(_steps(_open, lambda p: p.initiator.send_release()), True)),
    "wait release response": (
        State.WAIT_FN_RESPONSE,
        _after(_steps(_open, lambda p: p.initiator.send_release()), False),
    ),
    "closed": (State.CLOSED, _after(_steps(_open, lambda p: p.initiator.send_abort()), True)),
}

_LOST = spdu.ConnectionIdentifier(calling_ss_user_reference=b"r", common_reference=b"t")
SENDS: dict[Input, Callable[[SessionConnection], object]] = {
    Input.SEND_CN: lambda c: c.send_connect(b"CP", requirements=NEGOTIATED),
    Input.SEND_CN_OVERFLOW: lambda c: c.send_connect(_BIG),
    Input.SEND_AC: lambda c: c.send_accept(b"CPA"),
    Input.SEND_RF: lambda c: c.send_refuse(b"CPR"),
    Input.SEND_DT: lambda c: c.send_data(b"data"),
    Input.SEND_GT: lambda c: c.send_give_tokens(Token.DATA),
    Input.SEND_PT: lambda c: c.send_token_please(Token.DATA),
    Input.SEND_GTC: lambda c: c.send_control_give(),
    Input.SEND_AS: lambda c: c.send_activity_start(ACTIVITY_ID),
    Input.SEND_AR: lambda c: c.send_activity_resume(
        ACTIVITY_ID, old_activity_id=b"\x02\x01\x07", serial=3, connection_identifier=_LOST
    ),
    Input.SEND_AE: lambda c: c.send_activity_end(),
    Input.SEND_AEA: lambda c: c.send_activity_end_response(),
    Input.SEND_MIP: lambda c: c.send_minor_sync(),
    Input.SEND_MIA: lambda c: c.send_minor_sync_response(1),
    Input.SEND_AI: lambda c: c.send_activity_interrupt(0),
    Input.SEND_AIA: lambda c: c.send_activity_interrupt_response(),
    Input.SEND_AD: lambda c: c.send_activity_discard(0),
    Input.SEND_ADA: lambda c: c.send_activity_discard_response(),
    Input.SEND_ED: lambda c: c.send_exception_report(1),
    Input.SEND_FN: lambda c: c.send_release(b"RLRQ"),
    Input.SEND_DN: lambda c: c.send_release_response(b"RLRE"),
    Input.SEND_NF: lambda c: c.send_release_refuse(),
    Input.SEND_AB: lambda c: c.send_abort(b"ARU"),
}

_CN_ITEM = ConnectAcceptItem(version_number=2, token_setting=0)
RECEIVES: dict[Input, bytes] = {
    Input.RECV_CN: spdu.encode_tsdu(
        Spdu(kind=Kind.CN, connect_accept_item=_CN_ITEM, session_user_requirements=NEGOTIATED)
    ),
    Input.RECV_CN_OVERFLOW: spdu.encode_tsdu(
        Spdu(kind=Kind.CN, connect_accept_item=_CN_ITEM, data_overflow=1, user_data=b"x")
    ),
    Input.RECV_OA: bytes.fromhex("1003 160102"),
    Input.RECV_CDO: bytes.fromhex("0f05 190100 c100"),
    Input.RECV_CDO_LAST: bytes.fromhex("0f03 190102"),
    Input.RECV_AC: spdu.encode_tsdu(
        Spdu(kind=Kind.AC, connect_accept_item=_CN_ITEM, session_user_requirements=NEGOTIATED)
    ),
    Input.RECV_RF: bytes.fromhex("0c03 320100"),
    Input.RECV_DT: bytes.fromhex("0100 0100 64"),
    Input.RECV_GT: bytes.fromhex("0103 100101"),
    Input.RECV_PT: bytes.fromhex("0203 100101"),
    Input.RECV_GTC: bytes.fromhex("1500"),
    Input.RECV_GTA: bytes.fromhex("1600"),
    Input.RECV_AS: bytes.fromhex("0100 2d05 2903020101"),
    Input.RECV_AR: bytes.fromhex("0100 1d0f 2108 2903020107 2a0133 2903020101"),
    Input.RECV_AE: bytes.fromhex("0100 2903 2a0131"),
    Input.RECV_MAP: bytes.fromhex("0100 2906 0f0101 2a0131"),
    Input.RECV_AEA: bytes.fromhex("0200 2a03 2a0131"),
    Input.RECV_MIP: bytes.fromhex("0100 3103 2a0131"),
    Input.RECV_MIA: bytes.fromhex("0200 3203 2a0131"),
    Input.RECV_AI: bytes.fromhex("0100 1903 320100"),
    Input.RECV_AIA: bytes.fromhex("0200 1a00"),
    Input.RECV_AD: bytes.fromhex("0100 3903 320100"),
    Input.RECV_ADA: bytes.fromhex("0200 3a00"),
    Input.RECV_ED: bytes.fromhex("0200 3003 320101"),
    Input.RECV_ER: bytes.fromhex("0200 0000"),
    Input.RECV_FN: bytes.fromhex("0903 110101"),
    Input.RECV_DN: bytes.fromhex("0a00"),
    Input.RECV_NF: bytes.fromhex("0800"),
    Input.RECV_AB: bytes.fromhex("1903 110103"),
    Input.RECV_AA: bytes.fromhex("1a00"),
}


def test_every_state_and_input_is_covered() -> None:
    assert {state for state, _ in RECIPES.values()} == set(State)
    assert set(SENDS) | set(RECEIVES) == set(Input)


@pytest.mark.parametrize("what", list(Input), ids=lambda i: i.name)
@pytest.mark.parametrize("recipe", list(RECIPES))
def test_every_state_and_input(recipe: str, what: Input) -> None:
    """A valid next state, or a protocol error: a send changes nothing, a receipt closes."""
    state, build = RECIPES[recipe]
    subject = build()
    assert subject.state is state
    subject.tsdus_to_send()
    expected = TABLE.get((state, what))
    if what in SENDS:
        try:
            SENDS[what](subject)
        except LocalProtocolError:
            assert subject.state is state and subject.tsdus_to_send() == []
            return
        assert expected is not None and subject.state is expected
        return
    events = subject.receive_tsdu(RECEIVES[what])
    if state is State.CLOSED:
        assert events == [] and subject.tsdus_to_send() == []
        return
    errors = [e for e in events if isinstance(e, Aborted) and not e.by_peer]
    if errors:
        assert subject.state is State.CLOSED
        assert subject.tsdus_to_send()[-1] == bytes.fromhex("1903110105")
        return
    assert expected is not None and subject.state is expected


# --- random walks of both users ---------------------------------------------------------

_Action = Callable[[SessionConnection, int], object]
WALK_ACTIONS: list[tuple[str, _Action]] = [
    ("data", lambda c, s: c.send_data(b"d")),
    ("give data", lambda c, s: c.send_give_tokens(Token.DATA)),
    ("give minor", lambda c, s: c.send_give_tokens(Token.MINOR_SYNC)),
    ("give all", lambda c, s: c.send_give_tokens(c.tokens)),
    ("please all", lambda c, s: c.send_token_please(c.available_tokens & ~c.tokens)),
    ("control give", lambda c, s: c.send_control_give()),
    ("start", lambda c, s: c.send_activity_start(ACTIVITY_ID)),
    ("sync", lambda c, s: c.send_minor_sync()),
    ("sync, no confirm", lambda c, s: c.send_minor_sync(confirm=False)),
    ("confirm", lambda c, s: c.send_minor_sync_response(s)),
    ("end", lambda c, s: c.send_activity_end()),
    ("end response", lambda c, s: c.send_activity_end_response()),
    ("interrupt", lambda c, s: c.send_activity_interrupt(0)),
    ("interrupt response", lambda c, s: c.send_activity_interrupt_response()),
    ("discard", lambda c, s: c.send_activity_discard(0)),
    ("discard response", lambda c, s: c.send_activity_discard_response()),
    ("exception", lambda c, s: c.send_exception_report(1)),
    ("release", lambda c, s: c.send_release()),
    ("release response", lambda c, s: c.send_release_response()),
    ("release refuse", lambda c, s: c.send_release_refuse()),
]


@settings(max_examples=examples(3))
@given(
    st.sampled_from([RTSE_REQUIREMENTS, NEGOTIATED, int(Requirement.DUPLEX)]),
    st.lists(st.tuples(st.booleans(), st.sampled_from(WALK_ACTIONS)), max_size=40),
)
def test_random_walks_never_break_the_protocol(
    requirements: int,
    steps: list[tuple[bool, tuple[str, _Action]]],
) -> None:
    """Whatever both users do that their own side allows, the peer accepts it."""
    pair = connected(requirements)
    last_sync = {True: 1, False: 1}
    for initiator, (_, action) in steps:
        with contextlib.suppress(LocalProtocolError):
            action(_subject(pair, initiator), last_sync[initiator])
        to_initiator, to_responder = pair.pump()
        for side, events in ((True, to_initiator), (False, to_responder)):
            assert not any(isinstance(e, Aborted) and not e.by_peer for e in events), events
            for event in events:
                if isinstance(event, MinorSyncRequested):
                    last_sync[side] = event.serial
        one, other = pair.initiator, pair.responder
        assert one.closed is other.closed
        if not one.closed and one.state is other.state is State.OPEN:
            assert one.tokens & other.tokens == Token(0)
            assert one.tokens | other.tokens == one.available_tokens


# --- hostile TSDUs ------------------------------------------------------------------------


def _recorded_tsdus() -> list[bytes]:
    pair = in_activity(tsdu_maximum_size=128)
    pair.initiator.send_data(bytes(300))
    pair.initiator.send_minor_sync()
    pair.pump()
    pair.responder.send_minor_sync_response(1)
    pair.initiator.send_activity_end()
    pair.pump()
    pair.responder.send_activity_end_response()
    pair.pump()
    pair.initiator.send_release(b"x")
    pair.pump()
    return [tsdu for _, tsdu in pair.wire] + list(RECEIVES.values())


_RECORDED = _recorded_tsdus()


@settings(max_examples=examples(3))
@given(st.sampled_from(list(RECIPES)), st.binary(max_size=40))
def test_random_tsdus_only_give_events(recipe: str, tsdu: bytes) -> None:
    subject = RECIPES[recipe][1]()
    events = subject.receive_tsdu(tsdu)
    assert all(isinstance(e, Event) for e in events)


@settings(max_examples=examples(5))
@given(st.sampled_from(list(RECIPES)), st.data())
def test_mutated_tsdus_only_give_events(recipe: str, data: st.DataObject) -> None:
    subject = RECIPES[recipe][1]()
    tsdu = bytearray(data.draw(st.sampled_from(_RECORDED)))
    for _ in range(data.draw(st.integers(0, 3))):
        tsdu[data.draw(st.integers(0, len(tsdu) - 1))] = data.draw(st.integers(0, 255))
    tsdu = tsdu[: data.draw(st.integers(0, len(tsdu)))]
    before = subject.state
    events = subject.receive_tsdu(bytes(tsdu))
    assert all(isinstance(e, Event) for e in events)
    if any(isinstance(e, Aborted) and not e.by_peer for e in events):
        assert subject.closed and before is not State.CLOSED
