"""Whatever the peer sends, the association gives events and never raises (style.md 5).

Sans-I/O: each test feeds an association the octets a peer would send, in one read where
the point is that they arrive together, and asserts the events it returns and the abort it
writes.  Three families:

- the association ends in the same read as an event its user must answer (BindRequested,
  TransferReceived, BindAccepted, TransferConfirmed): the answer does nothing
  (p1.association.connection rule 7), while a call that is a mistake of our own code still
  raises LocalProtocolError;
- RT-OPEN parameters that would leave an association unable to transfer (windowSize 0,
  session functional units without RTSE's, the initial turn kept by the responder) are the
  peer's protocol errors, aborted at once; so is a CN that leaves no room for the answer;
- after the end nothing counts: more data and the end of the connection give no event.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from p1.association.connection import (
    Aborted,
    BindAccepted,
    BindRequested,
    P1Association,
    State,
    TransferConfirmed,
    TransferReceived,
)
from p1.association.mtabind import MTABindError, encode_bind_result, wrap_bind_result
from p1.association.pdus import SUPPORTED_SYNTAXES, accept_data
from p1.osi import LocalProtocolError, Role, presentation, rtse, session, tpdu
from p1.osi.rtse import AbortReason
from p1.osi.tpkt import encode_tpkt
from p1.osi.x225 import spdu
from p1.osi.x225.spdu import Kind
from tests.p1.association.pair import (
    ARGUMENT,
    BIND_OPEN,
    RESULT,
    Pair,
    aarq_bytes,
    apdu,
    cn_bytes,
    connect_data,
    dt,
    only_spdu,
    open_pair,
    spdu_kinds,
    tpdu_codes,
    user_abort_rtab,
)

BAD_TPKT = b"\x04\x00\x00\x08\x02\xf0\x80\x00"
"""A TPKT of version 4 (RFC 1006 has only 3): the byte stream is lost."""
SESSION_PROTOCOL_ERROR = spdu.TRANSPORT_RELEASED | spdu.PROTOCOL_ERROR
BIND_RESULT = wrap_bind_result(encode_bind_result(RESULT))
_RTORQ = rtse.encode_rtse(rtse.Rtorq(open=BIND_OPEN))


def _accept(association: P1Association) -> None:
    assert association.accept_bind(RESULT) == []  # (nothing more to say: it has ended)


def _refuse(association: P1Association) -> None:
    association.refuse_bind(MTABindError.AUTHENTICATION_ERROR)


def _nothing_more(association: P1Association) -> None:
    """Closed, nothing left to write, and nothing fed to it counts any more."""
    assert association.closed
    assert association.data_to_send() == b""
    assert association.receive_data(b"more" + BAD_TPKT) == []
    assert association.receive_eof() == []
    assert association.data_to_send() == b""


def _arp(wire: bytes) -> presentation.ArpPpdu:
    arp = presentation.decode_abort(only_spdu(wire, Kind.AB).user_data)
    assert isinstance(arp, presentation.ArpPpdu), arp
    return arp


# --- the bind answered after the association ended in the same read ---------------------


@pytest.mark.parametrize("answer", [_accept, _refuse], ids=["accept", "refuse"])
def test_bind_and_a_bad_tpkt_in_one_read(answer: Callable[[P1Association], None]) -> None:
    # What the daemon met: BindRequested handed to its user, then the same read's bad TPKT
    # closed the association; the user's answer used to raise LocalProtocolError.
    pair = Pair()
    cn = pair.connect_transport()
    requested, aborted = pair.responder.receive_data(cn + BAD_TPKT)
    assert isinstance(requested, BindRequested)
    assert aborted == Aborted(by_peer=False, why="transport: tpkt: TPKT version 4, expected 3")
    assert tpdu_codes(pair.responder.data_to_send()) == [tpdu.ER]
    answer(pair.responder)
    _nothing_more(pair.responder)


@pytest.mark.parametrize("answer", [_accept, _refuse], ids=["accept", "refuse"])
def test_bind_and_the_peers_abort_in_one_read(answer: Callable[[P1Association], None]) -> None:
    pair = Pair()
    cn = pair.connect_transport()
    pair.initiator.abort("gave up")
    abort = pair.initiator.data_to_send()
    requested, aborted = pair.responder.receive_data(cn + abort)
    assert isinstance(requested, BindRequested)
    assert isinstance(aborted, Aborted) and aborted.by_peer
    answer(pair.responder)
    _nothing_more(pair.responder)


def test_bind_then_the_connection_closed_before_the_answer() -> None:
    pair = Pair()
    (requested,) = pair.responder.receive_data(pair.connect_transport())
    assert isinstance(requested, BindRequested)
    assert pair.responder.receive_eof() == [
        Aborted(by_peer=True, why="the peer closed the connection")
    ]
    assert pair.responder.accept_bind(RESULT) == []
    _nothing_more(pair.responder)


def test_bind_and_a_bad_spdu_in_one_read() -> None:
    pair = Pair()
    cn = pair.connect_transport()
    requested, aborted = pair.responder.receive_data(cn + dt(b"\x77\x00"))
    assert isinstance(requested, BindRequested)
    assert isinstance(aborted, Aborted) and not aborted.by_peer and "SI 119" in aborted.why
    ab = only_spdu(pair.responder.data_to_send(), Kind.AB)
    assert ab.transport_disconnect == SESSION_PROTOCOL_ERROR
    pair.responder.accept_bind(RESULT)
    _nothing_more(pair.responder)


# --- a transfer confirmed after the association ended in the same read --------------------


def test_transfer_and_the_peers_abort_in_one_read() -> None:
    pair = open_pair()
    transfer_id = pair.initiator.send_transfer(apdu(100))
    data = pair.initiator.data_to_send()
    pair.initiator.abort("gave up")
    received, aborted = pair.responder.receive_data(data + pair.initiator.data_to_send())
    assert received == TransferReceived(transfer_id=transfer_id, apdu=apdu(100))
    assert isinstance(aborted, Aborted) and aborted.by_peer
    pair.responder.confirm_transfer(transfer_id)  # stored meanwhile: nothing to confirm to
    _nothing_more(pair.responder)


def test_transfer_and_a_bad_tpkt_in_one_read() -> None:
    pair = open_pair()
    transfer_id = pair.initiator.send_transfer(apdu(100))
    events = pair.responder.receive_data(pair.initiator.data_to_send() + BAD_TPKT)
    assert [type(e) for e in events] == [TransferReceived, Aborted]
    assert tpdu_codes(pair.responder.data_to_send()) == [tpdu.ER]
    pair.responder.confirm_transfer(transfer_id)
    _nothing_more(pair.responder)


def test_transfer_and_data_out_of_place_in_one_read() -> None:
    # After the activity end the session awaits our answer: more data is its protocol error.
    pair = open_pair()
    transfer_id = pair.initiator.send_transfer(apdu(100))
    data = pair.initiator.data_to_send()
    received, aborted = pair.responder.receive_data(data + dt(spdu.DT_PREFIX + b"\x61\x01"))
    assert isinstance(received, TransferReceived)
    assert isinstance(aborted, Aborted) and not aborted.by_peer
    assert aborted.why == "session: receive DT is not allowed in state WAIT_ACTIVITY_END_RESPONSE"
    ab = only_spdu(pair.responder.data_to_send(), Kind.AB)
    assert ab.transport_disconnect == SESSION_PROTOCOL_ERROR
    pair.responder.confirm_transfer(transfer_id)
    _nothing_more(pair.responder)


# --- the initiator, after the responder's answer and its abort in one read -----------------


def test_bind_accepted_and_an_error_tpdu_in_one_read() -> None:
    pair = Pair()
    pair.initiator.send_bind(ARGUMENT)
    pair.pump()
    pair.responder.accept_bind(RESULT)
    error = encode_tpkt(tpdu.encode_er(tpdu.ErrorTpdu(destination_reference=1)))
    accepted, aborted = pair.initiator.receive_data(pair.responder.data_to_send() + error)
    assert isinstance(accepted, BindAccepted)
    assert isinstance(aborted, Aborted) and aborted.by_peer
    # The MTA transfers once bound, then releases: both do nothing now.
    transfer_id = pair.initiator.send_transfer(apdu(100))
    assert pair.initiator.send_transfer(apdu(100)) == transfer_id + 1  # never confirmed
    pair.initiator.send_release()
    _nothing_more(pair.initiator)


def test_transfer_confirmed_and_the_peers_abort_in_one_read() -> None:
    pair = open_pair()
    transfer_id = pair.initiator.send_transfer(apdu(100))
    (received,) = pair.deliver(True)
    assert isinstance(received, TransferReceived)
    pair.responder.confirm_transfer(transfer_id)
    confirmation = pair.responder.data_to_send()
    pair.responder.abort("stopping")
    events = pair.initiator.receive_data(confirmation + pair.responder.data_to_send())
    assert events[0] == TransferConfirmed(transfer_id=transfer_id)
    assert isinstance(events[1], Aborted) and events[1].by_peer
    pair.initiator.send_release()
    _nothing_more(pair.initiator)


# --- our own mistakes still raise once the association ended ------------------------------


def test_misuse_still_raises_after_the_peer_ended_the_association() -> None:
    pair = open_pair()
    pair.initiator.abort()
    assert [type(e) for e in pair.responder.receive_data(pair.initiator.data_to_send())] == [
        Aborted
    ]
    with pytest.raises(LocalProtocolError, match="accept bind is not allowed in state closed"):
        pair.responder.accept_bind(RESULT)  # answered already, when it was open
    with pytest.raises(LocalProtocolError, match="awaits no confirmation"):
        pair.responder.confirm_transfer(1)
    with pytest.raises(LocalProtocolError, match="only the initiator"):
        pair.responder.send_bind(ARGUMENT)
    with pytest.raises(LocalProtocolError, match="two-way alternate"):
        pair.responder.request_turn()
    assert pair.responder.state is State.CLOSED
    assert pair.responder.data_to_send() == b""


def test_answering_a_bind_twice_raises_even_once_refused() -> None:
    pair = Pair()
    (requested,) = pair.responder.receive_data(pair.connect_transport())
    assert isinstance(requested, BindRequested)
    pair.responder.refuse_bind(MTABindError.BUSY)
    assert spdu_kinds(pair.responder.data_to_send()) == [Kind.RF]
    with pytest.raises(LocalProtocolError, match="accept bind is not allowed in state closed"):
        pair.responder.accept_bind(RESULT)
    assert pair.responder.data_to_send() == b""


# --- RT-OPEN parameters that leave no way to transfer --------------------------------------


def _answered_bind(
    *,
    rtoac: rtse.Rtoac | None = None,
    requirements: int | None = None,
    token_setting: int | None = None,
) -> tuple[Pair, bytes]:
    """A pair whose responder accepted the bind, and its AC with the changes asked for."""
    pair = Pair()
    pair.initiator.send_bind(ARGUMENT)
    pair.pump()
    pair.responder.accept_bind(RESULT)
    ac = only_spdu(pair.responder.data_to_send(), Kind.AC)
    if rtoac is not None:
        results = presentation.negotiate(presentation.P1_CONTEXTS, SUPPORTED_SYNTAXES)
        ac = dataclasses.replace(ac, user_data=accept_data(results, rtoac))
    if requirements is not None:
        ac = dataclasses.replace(ac, session_user_requirements=requirements)
    if token_setting is not None:
        assert ac.connect_accept_item is not None
        item = dataclasses.replace(ac.connect_accept_item, token_setting=token_setting)
        ac = dataclasses.replace(ac, connect_accept_item=item)
    return pair, dt(spdu.encode_tsdu(ac))


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (
            {"rtoac": rtse.Rtoac(checkpoint_size=1, window_size=0, open=BIND_RESULT)},
            "windowSize 0",
        ),
        ({"requirements": session.RTSE_REQUIREMENTS & ~spdu.Requirement.ACTIVITY}, "not RTSE's"),
        ({"token_setting": 0x55}, "initial turn"),  # every token on the responder's side
    ],
    ids=["window-0", "no-activity-unit", "turn-kept"],
)
def test_accept_that_leaves_no_way_to_transfer_is_aborted(
    change: dict[str, object], why: str
) -> None:
    pair, ac = _answered_bind(**change)  # type: ignore[arg-type]
    (aborted,) = pair.initiator.receive_data(ac)
    assert isinstance(aborted, Aborted) and not aborted.by_peer and why in aborted.why
    wire = pair.initiator.data_to_send()
    assert user_abort_rtab(wire).abort_reason == AbortReason.PROTOCOL_ERROR
    _nothing_more(pair.initiator)


def _bind_with(cn: bytes) -> tuple[P1Association, list[object]]:
    pair = Pair()
    pair.connect_transport()  # the initiator's own CN is dropped
    return pair.responder, list(pair.responder.receive_data(cn))


def test_rt_open_with_window_0_is_aborted_with_arp() -> None:
    rtorq = rtse.encode_rtse(rtse.Rtorq(checkpoint_size=1, window_size=0, open=BIND_OPEN))
    responder, events = _bind_with(cn_bytes(connect_data(aarq_bytes(rtorq))))
    (aborted,) = events
    assert isinstance(aborted, Aborted) and "windowSize 0" in aborted.why
    assert _arp(responder.data_to_send()) == presentation.ARP_PROTOCOL_ERROR


def test_connect_without_rtse_units_is_aborted_with_arp() -> None:
    connection = session.SessionConnection(Role.INITIATOR)
    connection.send_connect(
        connect_data(aarq_bytes(_RTORQ)),
        requirements=int(spdu.Requirement.DUPLEX),
    )
    cn = b"".join(dt(unit) for unit in connection.tsdus_to_send())
    responder, events = _bind_with(cn)
    (aborted,) = events
    assert isinstance(aborted, Aborted) and "not RTSE's" in aborted.why
    assert _arp(responder.data_to_send()) == presentation.ARP_PROTOCOL_ERROR


def test_answer_the_peers_cn_leaves_no_room_for_is_an_abort() -> None:
    # Session version 1 only, and a CP proposing 150 contexts: the CPA listing a result
    # for each cannot fit the 512 octets of a version 1 AC.  Accepting used to raise.
    many = tuple(
        presentation.ContextDefinition(identifier=7 + 2 * n, abstract_syntax=f"2.6.0.2.{100 + n}")
        for n in range(150)
    )
    cp = presentation.encode_cp(
        presentation.ConnectPpdu(
            contexts=presentation.P1_CONTEXTS + many,
            user_data=(presentation.Pdv(presentation.ACSE_CONTEXT, aarq_bytes(_RTORQ)),),
        )
    )
    connection = session.SessionConnection(Role.INITIATOR)
    connection.send_connect(cp)
    (cn,) = spdu.decode_tsdu(connection.tsdus_to_send()[0])
    assert cn.connect_accept_item is not None
    item = dataclasses.replace(cn.connect_accept_item, version_number=spdu.VERSION_1)
    responder, events = _bind_with(
        dt(spdu.encode_tsdu(dataclasses.replace(cn, connect_accept_item=item)))
    )
    assert [type(e) for e in events] == [BindRequested]
    (aborted,) = responder.accept_bind(RESULT)
    assert isinstance(aborted, Aborted) and not aborted.by_peer
    assert "leaves 512 octets for the AC's user data" in aborted.why
    assert _arp(responder.data_to_send()) == presentation.ARP_PROTOCOL_ERROR
    responder.refuse_bind(MTABindError.BUSY)  # ended: the other answer does nothing either
    _nothing_more(responder)
