"""P1 in X.410-1984 mode: PP's connect answered, and our two ends in memory (X.419 7, X.410).

The capture pp/30-pp-to-aiox-x410-mode holds PP 6.0 (ISODE) connecting in X.410-1984 mode:
a CR, then a CN whose user data is PConnect { dataTransferSyntax, pUserData { checkpointSize
63, dialogueMode monologue, open: pp.test / pp-secret, applicationProtocol 1 } }.  Its CR
and CN are fed to our 1984 responder, which asks its user, then accepts (AC{PAccept}) or
refuses (RF{PRefuse validationFailure}), never a normal-mode abort.  Then our 1984 initiator
and responder run in memory: bind, a message, a report and a probe with and without
checkpoints, release, a refused bind, aborts, all also one octet at a time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import samples
from p1.association import x410_pdus as pdus
from p1.association.connection import AssociationSettings, ConnectionRefused, P1Association
from p1.association.events import (
    Aborted,
    BindAccepted,
    BindRefused,
    BindRequested,
    Released,
    TransferConfirmed,
    TransferReceived,
    TurnGiven,
    TurnRequested,
)
from p1.association.inbound import ConnectSniffer
from p1.association.machine import State
from p1.association.mtabind import (
    MTABindArgument,
    MTABindError,
    MTABindResult,
    encode_bind_argument,
    encode_bind_result,
)
from p1.association.x410 import X410Association, X410Settings, settings_like
from p1.association.x410_pdus import AbortReason, ConnectMode, RefuseReason
from p1.errors import DecodeError
from p1.osi import Event, LocalProtocolError, Role
from p1.osi.rtse import DialogueMode
from p1.osi.x225 import spdu
from tests.p1 import ber_forms
from tests.p1.association.pair import spdu_bytes, spdu_kinds, spdus, tsdus
from tests.support import golden, store_samples

CAPTURE = "pp/30-pp-to-aiox-x410-mode"
PP_CONNECT_DATA = bytes.fromhex(
    "312ca003800100a12580013f820100a31aa018a116800770702e74657374a10b160970702d736563726574840101"
)
ARGUMENT = MTABindArgument(initiator_name="mta-a.example", password="secret-a")
RESULT = MTABindResult(responder_name="mta-b.example", password=b"secret-b")
APDUS = {
    "message": samples.message_bytes(3000),
    "report": store_samples.report_apdu("r1"),
    "probe": store_samples.probe_apdu("p1"),
}


def _pp_connect() -> list[bytes]:
    """PP's TPKTs of the capture: its CR, then its CN (the DT carrying it); PP sent the
    CN only once it had our CC, so they are read apart."""
    records = golden.load_tpkts(CAPTURE)
    initiator = next(r["src_port"] for r in records if r.get("cotp") == "CR")
    sent = [r for r in records if r["src_port"] == initiator and r.get("cotp") in ("CR", "DT")]
    return [bytes.fromhex(r["hex"]) for r in sent]


def _feed(association: X410Association, data: bytes, *, bytewise: bool) -> list[Event]:
    if not bytewise:
        return association.receive_data(data)
    events: list[Event] = []
    for index in range(len(data)):
        events.extend(association.receive_data(data[index : index + 1]))
    return events


def _pp_bound(bytewise: bool) -> tuple[X410Association, BindRequested]:
    responder = X410Association(Role.RESPONDER)
    events: list[Event] = []
    for tpkt in _pp_connect():
        events += _feed(responder, tpkt, bytewise=bytewise)
    assert [type(e) for e in events] == [BindRequested]
    (requested,) = events
    assert isinstance(requested, BindRequested)
    return responder, requested


# --- the capture ------------------------------------------------------------------------


@pytest.mark.parametrize("bytewise", [False, True])
def test_pp_connect_is_a_bind_request_for_pp_test(bytewise: bool) -> None:
    responder, requested = _pp_bound(bytewise)
    assert requested.argument == MTABindArgument(initiator_name="pp.test", password="pp-secret")
    assert (requested.checkpoint_size, requested.window_size) == (63, 3)
    assert requested.dialogue_mode is DialogueMode.MONOLOGUE
    assert responder.application_protocol == pdus.APPLICATION_P1_1984


def test_accepting_pp_answers_an_ac_with_paccept() -> None:
    responder, _ = _pp_bound(False)
    responder.data_to_send()  # the CC
    assert responder.accept_bind(MTABindResult(responder_name="aiox", password="aiox-secret")) == []
    (ac,) = spdus(responder.data_to_send())
    assert ac.kind is spdu.Kind.AC
    assert ac.session_user_requirements == 0x0249
    paccept = pdus.decode_paccept(ac.user_data)
    assert (paccept.checkpoint_size, paccept.window_size) == (63, 3)
    result = pdus.decode_bind_result_1984(paccept.open)
    assert result == MTABindResult(responder_name="aiox", password="aiox-secret")
    assert pdus.connect_mode(ac.user_data) is ConnectMode.X410_1984
    assert responder.state is State.OPEN


def test_refusing_pp_answers_rf_with_prefuse_validation_failure() -> None:
    responder, _ = _pp_bound(False)
    responder.data_to_send()
    responder.refuse_bind(MTABindError.AUTHENTICATION_ERROR)
    (rf,) = spdus(responder.data_to_send())
    assert rf.kind is spdu.Kind.RF
    assert rf.reason_code == spdu.REFUSED_BY_USER
    assert bytes(rf.user_data) == bytes.fromhex("3103800102")
    assert pdus.decode_prefuse(rf.user_data) is RefuseReason.VALIDATION_FAILURE
    assert responder.closed


def test_a_1984_cn_for_an_ssel_not_served_is_refused_ssap_unknown() -> None:
    responder = X410Association(Role.RESPONDER, X410Settings(served_ssaps=frozenset({b"SS"})))
    events: list[Event] = []
    for tpkt in _pp_connect():
        events += responder.receive_data(tpkt)
    (refused,) = events
    assert isinstance(refused, ConnectionRefused)
    assert refused.layer == "session"
    assert responder.closed
    (rf,) = spdus(responder.data_to_send())
    assert (rf.kind, rf.reason_code, bytes(rf.user_data)) == (spdu.Kind.RF, 129, b"")


def test_a_1984_initiator_reads_ssap_unknown_and_binds_with_the_served_ssel() -> None:
    served = X410Settings(served_ssaps=frozenset({b"SS"}))
    wrong = Pair(X410Association(Role.INITIATOR), X410Association(Role.RESPONDER, served))
    wrong.initiator.send_bind(ARGUMENT)
    answered, (refused,) = wrong.pump()
    assert isinstance(refused, ConnectionRefused)
    (refusal,) = answered
    assert isinstance(refusal, BindRefused) and refusal.error is None
    assert refusal.why == "refused by the peer's session provider: session selector unknown"
    right = Pair(
        X410Association(Role.INITIATOR, X410Settings(called_ssap=b"SS")),
        X410Association(Role.RESPONDER, served),
    )
    right.initiator.send_bind(ARGUMENT)
    _, (requested,) = right.pump()
    assert isinstance(requested, BindRequested)


def test_the_1984_settings_serve_the_normal_settings_ssels() -> None:
    normal = AssociationSettings(served_ssaps=frozenset({b"SS"}), served_psaps=frozenset({b"P"}))
    assert settings_like(normal).served_ssaps == frozenset({b"SS"})


def test_the_sniffer_tells_pps_connect_is_x410_and_hands_it_over() -> None:
    sniffer = ConnectSniffer()
    cr, cn = _pp_connect()
    assert sniffer.receive_data(cr) is None
    cc = sniffer.data_to_send()
    assert cc[5] == 0xD0  # the CC, sent before the mode is known
    assert sniffer.receive_data(cn) is ConnectMode.X410_1984
    responder = X410Association(Role.RESPONDER)
    events = sniffer.replay(responder)
    assert [type(e) for e in events] == [BindRequested]
    assert responder.data_to_send() == b""  # its own CC is dropped: the peer has the sniffer's


def test_the_sniffer_leaves_a_tsel_not_served_to_the_normal_machine_unanswered() -> None:
    sniffer = ConnectSniffer(served_tsaps=frozenset({b"591"}))
    cr, _ = _pp_connect()  # PP's CR calls TSEL "591"
    called_other = P1Association(Role.INITIATOR, AssociationSettings(called_tsap=b"592"))
    called_other.send_bind(ARGUMENT)
    assert sniffer.receive_data(called_other.data_to_send()) is ConnectMode.NORMAL
    assert sniffer.data_to_send() == b""  # no CC: the normal machine answers
    responder = P1Association(Role.RESPONDER, AssociationSettings(served_tsaps=frozenset({b"591"})))
    (refused,) = sniffer.replay(responder)
    assert isinstance(refused, ConnectionRefused)
    assert responder.data_to_send()[5] == 0x80  # its DR, sent whole
    served = ConnectSniffer(served_tsaps=frozenset({b"591"}))
    assert served.receive_data(cr) is None
    assert served.data_to_send()[5] == 0xD0


def test_the_sniffer_keeps_the_normal_machines_answer_to_a_broken_cr() -> None:
    broken = bytes.fromhex("0300000b0ae00000000000")  # LI 10, six octets of header
    sniffer = ConnectSniffer()
    assert sniffer.receive_data(broken) is ConnectMode.NORMAL
    responder = P1Association(Role.RESPONDER)
    reference = P1Association(Role.RESPONDER)
    assert sniffer.replay(responder) == reference.receive_data(broken)
    answer = responder.data_to_send()
    assert answer == reference.data_to_send()
    assert answer  # the transport's ER or DR, not dropped as if it were a CC


def test_connect_mode_of_a_normal_mode_cp_and_of_garbage() -> None:
    normal_cp = bytes.fromhex("3109a003800101a2028000")
    assert pdus.connect_mode(normal_cp) is ConnectMode.NORMAL
    assert pdus.connect_mode(b"\x31\x05") is ConnectMode.NORMAL
    assert pdus.connect_mode(PP_CONNECT_DATA) is ConnectMode.X410_1984
    assert pdus.connect_mode(PP_CONNECT_DATA[:20]) is ConnectMode.NORMAL  # truncated


# --- codecs -----------------------------------------------------------------------------


def test_pconnect_of_pp_decodes_with_every_field() -> None:
    value = pdus.decode_pconnect(PP_CONNECT_DATA)
    assert value == pdus.PConnect(
        checkpoint_size=63,
        open=bytes.fromhex("a116800770702e74657374a10b160970702d736563726574"),
        application_protocol=1,
    )
    assert pdus.decode_pconnect(pdus.encode_pconnect(value)) == value


def test_a_bare_data_transfer_syntax_is_read_too() -> None:
    value = pdus.PConnect(open=pdus.encode_bind_argument_1984(ARGUMENT))
    encoded = pdus.encode_pconnect(value)
    bare = b"\x31" + bytes([encoded[1] - 2]) + b"\x80\x01\x00" + encoded[7:]
    assert pdus.decode_pconnect(bare) == value
    assert pdus.connect_mode(bare) is ConnectMode.X410_1984


def test_abort_information_and_prefuse_round_trip() -> None:
    for reason in AbortReason:
        assert pdus.decode_abort_information(pdus.encode_abort_information(reason)) == reason
    assert pdus.decode_abort_information(b"\x31\x00") is None
    for refusal in RefuseReason:
        assert pdus.decode_prefuse(pdus.encode_prefuse(refusal)) is refusal
    assert pdus.bind_error_of(RefuseReason.CANNOT_RECOVER) is None
    assert pdus.refuse_reason_of(MTABindError.BUSY) is RefuseReason.RTS_BUSY


def test_1988_only_bind_fields_are_refused_in_1984_mode() -> None:
    strong = MTABindArgument(initiator_name="a", strong_credentials=b"\x31\x00")
    with pytest.raises(LocalProtocolError):
        X410Association(Role.INITIATOR).send_bind(strong)


SECURITY_CONTEXT = bytes.fromhex("3109310702010306022a03")
"""SET OF SecurityLabel { classification confidential(3), policy 1.2.3 }"""


@pytest.mark.parametrize(
    "argument",
    [
        MTABindArgument(initiator_name="a", strong_credentials=b"\x31\x00"),
        MTABindArgument(initiator_name="a", password="p", security_context=SECURITY_CONTEXT),
    ],
)
def test_1988_only_bind_fields_received_in_1984_mode_do_not_decode(
    argument: MTABindArgument,
) -> None:
    with pytest.raises(DecodeError, match="1988 only"):
        pdus.decode_bind_argument_1984(encode_bind_argument(argument))
    result = MTABindResult(responder_name="b", strong_credentials=b"\x31\x00")
    with pytest.raises(DecodeError, match="1988 only"):
        pdus.decode_bind_result_1984(encode_bind_result(result))
    plain = MTABindArgument(initiator_name="a", password=b"p")
    assert pdus.decode_bind_argument_1984(encode_bind_argument(plain)) == plain


# --- our two ends in memory -------------------------------------------------------------


@dataclass
class Pair:
    """A 1984 initiator and responder joined in memory."""

    initiator: X410Association
    responder: X410Association
    bytewise: bool = False
    initiator_events: list[Event] = field(default_factory=list)
    responder_events: list[Event] = field(default_factory=list)
    wire: list[tuple[bool, bytes]] = field(default_factory=list)

    def pump(self) -> tuple[list[Event], list[Event]]:
        """Deliver both ways until quiet: the events of (initiator, responder)."""
        got_i: list[Event] = []
        got_r: list[Event] = []
        for _ in range(10_000):
            out_i = self.initiator.data_to_send()
            got_r += _feed(self.responder, out_i, bytewise=self.bytewise)
            out_r = self.responder.data_to_send()
            got_i += _feed(self.initiator, out_r, bytewise=self.bytewise)
            self.wire += [(True, out_i), (False, out_r)]
            if not out_i and not out_r:
                self.initiator_events += got_i
                self.responder_events += got_r
                return got_i, got_r
        raise AssertionError("still talking")


def _pair(bytewise: bool = False, initiator: X410Settings | None = None, bind: bool = True) -> Pair:
    pair = Pair(
        X410Association(Role.INITIATOR, initiator),
        X410Association(Role.RESPONDER),
        bytewise,
    )
    if bind:
        pair.initiator.send_bind(ARGUMENT)
        _, (requested,) = pair.pump()
        assert isinstance(requested, BindRequested) and requested.argument == ARGUMENT
        pair.responder.accept_bind(RESULT)
        (accepted,), _ = pair.pump()
        assert isinstance(accepted, BindAccepted) and accepted.result == RESULT
    return pair


@pytest.mark.parametrize("bytewise", [False, True])
@pytest.mark.parametrize("checkpoint_size", [0, 1])
def test_bind_transfers_and_release(bytewise: bool, checkpoint_size: int) -> None:
    settings = X410Settings(checkpoint_size=checkpoint_size, window_size=2)
    pair = _pair(bytewise, settings)
    for kind, apdu in APDUS.items():
        transfer_id = pair.initiator.send_transfer(apdu)
        _, received = pair.pump()
        assert [type(e) for e in received] == [TransferReceived], kind
        (event,) = received
        assert isinstance(event, TransferReceived) and event.apdu == apdu
        assert pair.initiator.busy
        pair.responder.confirm_transfer(event.transfer_id)
        confirmed, _ = pair.pump()
        assert confirmed == [TransferConfirmed(transfer_id=transfer_id)]
    pair.initiator.send_release()
    released_i, released_r = pair.pump()
    assert released_r == [Released(by_peer=True)] and released_i == [Released(by_peer=False)]
    assert pair.initiator.closed and pair.responder.closed


def test_the_wire_has_no_presentation_and_raw_mpdus_in_s_data() -> None:
    pair = _pair(initiator=X410Settings(checkpoint_size=1, window_size=3))
    apdu = APDUS["message"]
    pair.wire.clear()
    pair.initiator.send_transfer(apdu)
    pair.pump()
    sent = b"".join(data for forward, data in pair.wire if forward)
    kinds = spdu_kinds(sent)
    assert kinds[0] is spdu.Kind.AS and kinds[-1] is spdu.Kind.MAP
    assert kinds.count(spdu.Kind.MIP) == len(apdu) // 1024
    data = b"".join(bytes(u.user_data) for u in spdus(sent) if u.kind is spdu.Kind.DT)
    assert data == apdu  # S-DATA carries the MPDU itself: no RTTR, no P-DATA
    (start,) = [u for u in spdus(sent) if u.kind is spdu.Kind.AS]
    assert start.activity_identifier == b"\x02\x01\x01"


def test_the_cn_proposes_session_versions_1_and_2() -> None:
    pair = _pair(bind=False)
    pair.initiator.send_bind(ARGUMENT)
    pair.responder.receive_data(pair.initiator.data_to_send())
    pair.initiator.receive_data(pair.responder.data_to_send())
    (cn,) = spdus(pair.initiator.data_to_send())
    assert cn.kind is spdu.Kind.CN
    assert cn.connect_accept_item is not None
    assert cn.connect_accept_item.version_number == spdu.VERSION_1 | spdu.VERSION_2
    assert pdus.connect_mode(cn.user_data) is ConnectMode.X410_1984


@pytest.mark.parametrize("bytewise", [False, True])
def test_refused_bind(bytewise: bool) -> None:
    pair = _pair(bytewise, bind=False)
    pair.initiator.send_bind(ARGUMENT)
    pair.pump()
    pair.responder.refuse_bind(MTABindError.AUTHENTICATION_ERROR)
    (refused,), _ = pair.pump()
    assert refused == BindRefused(
        error=MTABindError.AUTHENTICATION_ERROR, why="PRefuse validation_failure"
    )
    assert pair.initiator.closed and pair.responder.closed


def test_an_unacceptable_dialogue_mode_is_refused_before_the_user_is_asked() -> None:
    pair = Pair(
        X410Association(Role.INITIATOR, X410Settings(dialogue_mode=DialogueMode.TWA)),
        X410Association(
            Role.RESPONDER,
            X410Settings(accepted_dialogue_modes=frozenset({DialogueMode.MONOLOGUE})),
        ),
    )
    pair.initiator.send_bind(ARGUMENT)
    (refused,), responder_events = pair.pump()
    assert responder_events == []
    assert isinstance(refused, BindRefused)
    assert refused.error is MTABindError.UNACCEPTABLE_DIALOGUE_MODE


@pytest.mark.parametrize("temporary", [False, True])
def test_abort_by_the_initiator(temporary: bool) -> None:
    pair = _pair()
    assert pair.initiator.abort("stop", temporary=temporary) == [Aborted(by_peer=False, why="stop")]
    (ab,) = spdus(pair.initiator.data_to_send())
    assert ab.kind is spdu.Kind.AB
    expected = pdus.encode_abort_information(AbortReason.TEMPORARY_PROBLEM) if temporary else b""
    assert bytes(ab.user_data) == expected
    (aborted,) = pair.responder.receive_data(spdu_bytes(ab))
    assert isinstance(aborted, Aborted) and aborted.by_peer
    assert ("temporary_problem" in aborted.why) is temporary


def test_a_broken_mpdu_aborts_with_protocol_error() -> None:
    pair = _pair()
    pair.initiator.send_transfer(b"\x04\x01\x00")  # an OCTET STRING, not an MPDU
    _, (aborted,) = pair.pump()
    assert isinstance(aborted, Aborted) and not aborted.by_peer
    sent = b"".join(data for forward, data in pair.wire if not forward)
    (ab,) = [u for u in spdus(sent) if u.kind is spdu.Kind.AB]
    assert pdus.decode_abort_information(ab.user_data) == AbortReason.PROTOCOL_ERROR
    assert isinstance(pair.initiator_events[-1], Aborted) and pair.initiator_events[-1].by_peer


def test_the_turn_in_two_way_alternate() -> None:
    pair = _pair(initiator=X410Settings(dialogue_mode=DialogueMode.TWA))
    pair.responder.request_turn(2)
    (asked,), _ = pair.pump()
    assert asked == TurnRequested(priority=2)
    pair.initiator.give_turn()
    _, (given,) = pair.pump()
    assert given == TurnGiven()
    pair.responder.send_transfer(APDUS["probe"])
    (received,), _ = pair.pump()
    assert isinstance(received, TransferReceived)


def test_tsdus_of_the_bind_are_single_spdus() -> None:
    pair = _pair(bind=False)
    pair.initiator.send_bind(ARGUMENT)
    pair.pump()
    sent = b"".join(data for forward, data in pair.wire if forward)
    assert len(tsdus(sent)) == 1


# --- every legal BER form ---------------------------------------------------------------

_OPEN = 0xA0  # ConnectionData.open [0]: its contents (the bind value) are kept as received
_CONNECTION_DATA = (0xA3, 0xA2)  # connectionDataRQ [3] of PConnect, connectionDataAC [2]


def _rules() -> ber_forms.Rules:
    return ber_forms.Rules(
        string=lambda path, octet: False,
        opaque=lambda path, octet, contents: (
            octet == _OPEN and bool(path) and path[-1] in _CONNECTION_DATA
        ),
        high_tags=True,
    )


@settings(max_examples=200, deadline=None)
@given(
    checkpoint=st.integers(0, 2**31 - 1),
    window=st.integers(1, 2**31 - 1),
    mode=st.sampled_from(DialogueMode),
    protocol=st.sampled_from([1, 12]),
    seed=st.integers(0, 2**32 - 1),
)
def test_pconnect_and_paccept_in_random_ber_forms(
    checkpoint: int, window: int, mode: DialogueMode, protocol: int, seed: int
) -> None:
    rnd = random.Random(seed)
    pconnect = pdus.PConnect(
        checkpoint_size=checkpoint,
        window_size=window,
        dialogue_mode=mode,
        open=pdus.encode_bind_argument_1984(ARGUMENT),
        application_protocol=protocol,
    )
    reformed = ber_forms.reform(pdus.encode_pconnect(pconnect), rnd, _rules())
    decoded = pdus.decode_pconnect(reformed)
    assert decoded.open is not None
    assert pdus.decode_bind_argument_1984(decoded.open) == ARGUMENT
    assert replace(decoded, open=pconnect.open) == pconnect
    assert pdus.connect_mode(reformed) is ConnectMode.X410_1984
    paccept = pdus.PAccept(
        checkpoint_size=checkpoint, window_size=window, open=pdus.encode_bind_result_1984(RESULT)
    )
    reformed = ber_forms.reform(pdus.encode_paccept(paccept), rnd, _rules())
    decoded_accept = pdus.decode_paccept(reformed)
    assert pdus.decode_bind_result_1984(decoded_accept.open) == RESULT
    assert replace(decoded_accept, open=paccept.open) == paccept


def test_the_sniffer_hands_a_normal_mode_connect_to_the_1988_machine() -> None:
    initiator = P1Association(Role.INITIATOR)
    initiator.send_bind(ARGUMENT)
    sniffer = ConnectSniffer()
    assert sniffer.receive_data(initiator.data_to_send()) is None
    initiator.receive_data(sniffer.data_to_send())
    assert sniffer.receive_data(initiator.data_to_send()) is ConnectMode.NORMAL
    responder = P1Association(Role.RESPONDER)
    events = sniffer.replay(responder)
    assert [type(e) for e in events] == [BindRequested]
    assert responder.data_to_send() == b""
