"""Our P1 association against a real X.400 product's recorded bytes.

The captures in shared/reference/pcaps hold both ends of two associations of an
established product: a bind (percival.smhs.co.uk / excalibur) accepted by
guinevere.smhs.co.uk / merlin and released, and the same bind refused with
authentication-error.  Our initiator is fed the recorded responder's TPKTs and our responder
the recorded initiator's, in order: whole, and one byte at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from p1.association import mtabind
from p1.association.connection import (
    AssociationSettings,
    BindAccepted,
    BindRefused,
    BindRequested,
    P1Association,
    Released,
    State,
)
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult
from p1.osi import Event, Role
from p1.osi.rtse import DialogueMode
from p1.osi.x225 import spdu
from tests.support import golden

SUCCESS = "x400-ping-success"
REFUSE = "x400-ping-refuse"
ARGUMENT = MTABindArgument(initiator_name="percival.smhs.co.uk", password="excalibur")
RESULT = MTABindResult(responder_name="guinevere.smhs.co.uk", password="merlin")
TSAP = b"X400-88"


def _sides(capture: str) -> tuple[list[bytes], list[bytes]]:
    """(the initiator's TPKTs, the responder's TPKTs) of ``capture``, in order."""
    records: list[dict[str, Any]] = golden.load_tpkts(capture)
    initiator_port = next(r["src_port"] for r in records if r.get("cotp") == "CR")
    initiator = [bytes.fromhex(r["hex"]) for r in records if r["src_port"] == initiator_port]
    responder = [bytes.fromhex(r["hex"]) for r in records if r["src_port"] != initiator_port]
    return initiator, responder


def _pieces(data: bytes, bytewise: bool) -> Iterator[bytes]:
    if bytewise:
        yield from (data[i : i + 1] for i in range(len(data)))
    else:
        yield data


def _feed(association: P1Association, tpkt: bytes, bytewise: bool) -> list[Event]:
    events: list[Event] = []
    for piece in _pieces(tpkt, bytewise):
        events.extend(association.receive_data(piece))
    return events


def _tsdus_sent(association: P1Association) -> list[golden.Tsdu]:
    """The TSDUs in what the association queued (TPKT and DT headers removed)."""
    tpkts = _split_tpkts(association.data_to_send())
    records = [{"frame_first": n, "src_port": 1, "hex": t.hex()} for n, t in enumerate(tpkts)]
    return golden.tsdus([{"src_port": 1, "cotp": "CR", "hex": "0300000702e000"}, *records])


def _spdus_sent(association: P1Association) -> list[golden.Spdu]:
    """The session SPDUs in what the association queued."""
    return [spdu for tsdu in _tsdus_sent(association) for spdu in golden.spdus(tsdu.data)]


def _split_tpkts(data: bytes) -> list[bytes]:
    out = []
    while data:
        length = int.from_bytes(data[2:4], "big")
        out.append(data[:length])
        data = data[length:]
    return out


@pytest.mark.parametrize("bytewise", [False, True], ids=["whole", "bytewise"])
def test_initiator_binds_and_releases_with_the_recorded_responder(bytewise: bool) -> None:
    _, responder = _sides(SUCCESS)
    cc, ac, dn = responder
    ours = P1Association(Role.INITIATOR, AssociationSettings(calling_tsap=TSAP, called_tsap=TSAP))
    ours.send_bind(ARGUMENT)
    assert ours.data_to_send()[5] == 0xE0  # a CR TPDU
    assert _feed(ours, cc, bytewise) == []
    (cn,) = _spdus_sent(ours)
    assert cn.name == "CN"
    events = _feed(ours, ac, bytewise)
    assert len(events) == 1 and isinstance(events[0], BindAccepted)
    assert events[0].result == RESULT
    assert events[0].dialogue_mode is DialogueMode.MONOLOGUE
    assert ours.state is State.OPEN and ours.has_turn
    ours.send_release()
    (fn,) = _spdus_sent(ours)
    assert fn.name == "FN"
    assert _feed(ours, dn, bytewise) == [Released(by_peer=False)]
    assert ours.closed


@pytest.mark.parametrize("bytewise", [False, True], ids=["whole", "bytewise"])
def test_initiator_reports_the_recorded_refusal(bytewise: bool) -> None:
    _, responder = _sides(REFUSE)
    cc, rf = responder
    ours = P1Association(Role.INITIATOR)
    ours.send_bind(MTABindArgument(initiator_name="percival.smhs.co.uk", password=" "))
    ours.data_to_send()
    assert _feed(ours, cc, bytewise) == []
    ours.data_to_send()
    (refused,) = _feed(ours, rf, bytewise)
    assert isinstance(refused, BindRefused)
    assert refused.error is MTABindError.AUTHENTICATION_ERROR
    assert "authentication-error" in refused.why
    assert ours.closed


@pytest.mark.parametrize("bytewise", [False, True], ids=["whole", "bytewise"])
def test_responder_accepts_the_recorded_initiator_and_releases(bytewise: bool) -> None:
    initiator, _ = _sides(SUCCESS)
    cr, cn, fn = initiator
    ours = P1Association(Role.RESPONDER)
    assert _feed(ours, cr, bytewise) == []
    assert ours.data_to_send()[5] == 0xD0  # a CC TPDU
    events = _feed(ours, cn, bytewise)
    assert len(events) == 1 and isinstance(events[0], BindRequested)
    request = events[0]
    assert request.argument == ARGUMENT
    assert (request.checkpoint_size, request.window_size) == (63, 3)
    assert request.dialogue_mode is DialogueMode.MONOLOGUE
    assert request.calling_tsap == TSAP
    ours.accept_bind(RESULT)
    (tsdu,) = _tsdus_sent(ours)
    (accepted,) = golden.exchanges(tsdu)
    assert accepted.spdu == "AC"
    assert accepted.bind is not None
    assert mtabind.decode_bind_result(mtabind.unwrap_bind_result(accepted.bind)) == RESULT
    assert _feed(ours, fn, bytewise) == [Released(by_peer=True)]
    (dn,) = _spdus_sent(ours)
    assert dn.name == "DN"
    assert dn.user_data.endswith(bytes.fromhex("6303800100"))  # RLRE normal
    assert ours.closed


def test_responder_refuses_the_recorded_initiator_like_the_product() -> None:
    initiator, _ = _sides(REFUSE)
    cr, cn = initiator
    ours = P1Association(Role.RESPONDER)
    _feed(ours, cr, False)
    ours.data_to_send()
    (request,) = _feed(ours, cn, False)
    assert isinstance(request, BindRequested)
    assert request.argument.password == " "
    ours.refuse_bind(MTABindError.AUTHENTICATION_ERROR)
    (rf,) = _spdus_sent(ours)
    assert rf.name == "RF"
    recorded = golden.spdus(golden.tsdus(golden.load_tpkts(REFUSE))[-1].data)[0]
    # The refusal's user data (CPR{AARE{RTORJ{[18] authentication-error}}}) is the product's.
    assert rf.user_data == recorded.user_data
    assert ours.closed


@pytest.mark.parametrize("capture", [SUCCESS, REFUSE])
def test_our_ac_and_rf_echo_the_connection_identifier_like_the_product(capture: str) -> None:
    """X.225 8.3.2, 8.3.3: the product's CN names a calling SS-user reference and a common
    reference; its AC or RF gives them back (the calling one as called), and so do ours."""
    (cr, cn, *_), responder_side = _sides(capture)
    ours = P1Association(Role.RESPONDER)
    _feed(ours, cr, False)
    ours.data_to_send()
    _feed(ours, cn, False)
    if capture == SUCCESS:
        ours.accept_bind(RESULT)
    else:
        ours.refuse_bind(MTABindError.AUTHENTICATION_ERROR)
    (tsdu,) = _tsdus_sent(ours)
    (answer,) = spdu.decode_tsdu(tsdu.data)
    (recorded,) = spdu.decode_tsdu(responder_side[1][7:])  # after its CC
    assert answer.kind is recorded.kind
    assert answer.connection_identifier is not None
    assert answer.connection_identifier == recorded.connection_identifier
    assert answer.connection_identifier.called_ss_user_reference == b"\x04\x08Percival"
