"""Selectors: their written forms, and each layer's selector parameters on the wire.

TSAP-IDs in the CR (X.224 13.3.4 a: 0xC1 calling, 0xC2 called), SSAP identifiers in the CN
(X.225: PI 51 calling, PI 52 called), presentation selectors in the CP (X.226 CP-type
normal-mode-parameters [1] calling, [2] called); a responder serving only some called TSAPs
refuses a CR for another with DR reason 3, "address unknown" (X.224 13.5.3 d).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p1.association.connection import (
    Aborted,
    AssociationSettings,
    BindRefused,
    BindRequested,
    ConnectionRefused,
)
from p1.association.pdus import connect_data
from p1.osi import presentation, rtse
from p1.osi import tpdu as x224
from p1.osi.selectors import (
    MAX_PSEL,
    MAX_SSEL,
    MAX_TSEL,
    SelectorError,
    format_selector,
    parse_selector,
)
from p1.osi.x225 import spdu
from tests.p1.association.pair import ARGUMENT, Pair, only_spdu, spdus, tpdus
from tests.support.golden import load_tpkts

TSEL = st.binary(min_size=1, max_size=MAX_TSEL)
SSEL = st.binary(min_size=1, max_size=MAX_SSEL)
PSEL = st.binary(min_size=1, max_size=MAX_PSEL)

# --- written forms ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "octets"),
    [
        ("x400", b"x400"),
        ("591", b"591"),
        ("X400-88", b"X400-88"),
        ("hex:0591", b"\x05\x91"),
        ("hex:ABcd", b"\xab\xcd"),
        ("", b""),
    ],
)
def test_a_selector_is_text_or_hex(text: str, octets: bytes) -> None:
    assert parse_selector(text, limit=MAX_TSEL) == octets


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("hex:059", "an even, non-zero number of hexadecimal digits after hex:"),
        ("hex:", "an even, non-zero number of hexadecimal digits after hex:"),
        ("hex:zz", "an even, non-zero number of hexadecimal digits after hex:"),
        ("x\t400", "printable ASCII text, or hex: and hexadecimal digits"),
        ("x400é", "printable ASCII text, or hex: and hexadecimal digits"),
        ("a" * (MAX_SSEL + 1), f"at most {MAX_SSEL} octets ({MAX_SSEL + 1} given)"),
    ],
)
def test_a_bad_selector_says_why(text: str, why: str) -> None:
    with pytest.raises(SelectorError) as raised:
        parse_selector(text, limit=MAX_SSEL)
    assert raised.value.why == why


@given(st.binary(max_size=MAX_PSEL))
def test_the_written_form_reads_back(value: bytes) -> None:
    assert parse_selector(format_selector(value), limit=MAX_PSEL) == value


def test_the_written_form_is_text_when_it_can_be() -> None:
    assert format_selector(b"x400") == "x400"
    assert format_selector(b"\x05\x91") == "hex:0591"
    assert format_selector(b"hex:") == "hex:6865783a"


# --- round trips of each layer's parameters ---------------------------------------------


@given(st.one_of(st.none(), TSEL), st.one_of(st.none(), TSEL))
def test_cr_tsap_ids_round_trip(calling: bytes | None, called: bytes | None) -> None:
    cr = x224.ConnectionRequest(
        source_reference=1, calling_tsap=calling, called_tsap=called, tpdu_size=2048
    )
    decoded = x224.decode_cr(x224.encode_cr(cr))
    assert (decoded.calling_tsap, decoded.called_tsap) == (calling, called)


@given(st.one_of(st.none(), SSEL), st.one_of(st.none(), SSEL))
def test_cn_ssap_identifiers_round_trip(calling: bytes | None, called: bytes | None) -> None:
    cn = spdu.Spdu(
        kind=spdu.Kind.CN,
        session_user_requirements=0x0249,
        calling_ssap=calling,
        called_ssap=called,
        user_data=b"\x31\x00",
    )
    (decoded,) = spdu.decode_tsdu(spdu.encode_spdu(cn))
    assert (decoded.calling_ssap, decoded.called_ssap) == (calling, called)


@given(st.one_of(st.none(), PSEL), st.one_of(st.none(), PSEL))
def test_cp_presentation_selectors_round_trip(calling: bytes | None, called: bytes | None) -> None:
    cp = presentation.ConnectPpdu(
        calling_selector=calling, called_selector=called, contexts=presentation.P1_CONTEXTS
    )
    decoded = presentation.decode_cp(presentation.encode_cp(cp))
    assert (decoded.calling_selector, decoded.called_selector) == (calling, called)


@given(PSEL, PSEL)
def test_connect_data_carries_the_presentation_selectors(calling: bytes, called: bytes) -> None:
    rtorq = rtse.Rtorq(open=b"\xa0\x02\x05\x00")
    cp = presentation.decode_cp(connect_data(rtorq, calling, called))
    assert (cp.calling_selector, cp.called_selector) == (calling, called)


# --- an association's selectors -----------------------------------------------------------

SELECTORS = AssociationSettings(
    calling_tsap=b"591",
    called_tsap=b"x400",
    calling_ssap=b"\x00\x01",
    called_ssap=b"SS",
    calling_psap=b"\x00\x00\x00\x01",
    called_psap=b"PS",
)


def test_the_initiator_sends_its_selectors_in_cr_cn_and_cp() -> None:
    pair = Pair(SELECTORS)
    pair.initiator.send_bind(ARGUMENT)
    (cr,) = tpdus(pair.initiator.data_to_send())
    request = x224.decode_cr(cr)
    assert (request.calling_tsap, request.called_tsap) == (b"591", b"x400")
    feed_cc = x224.encode_cc(x224.ConnectionConfirm(destination_reference=1, source_reference=7))
    pair.initiator.receive_data(bytes((3, 0, 0, 4 + len(feed_cc))) + feed_cc)
    (cn,) = spdus(pair.initiator.data_to_send())
    assert (cn.calling_ssap, cn.called_ssap) == (b"\x00\x01", b"SS")
    cp = presentation.decode_cp(cn.user_data)
    assert (cp.calling_selector, cp.called_selector) == (b"\x00\x00\x00\x01", b"PS")


def test_the_responder_echoes_the_called_ssel_and_psel() -> None:
    pair = Pair(SELECTORS, AssociationSettings(served_tsaps=frozenset({b"x400"})))
    requested, _ = pair.bind()
    assert requested.calling_tsap == b"591"
    (ac,) = spdus(pair.sent_by_responder[-2])
    assert ac.called_ssap == b"SS"  # the responding SSAP identifier
    assert presentation.decode_cpa(ac.user_data).responding_selector == b"PS"


def test_a_cr_for_a_tsel_not_served_is_refused_address_unknown() -> None:
    pair = Pair(
        AssociationSettings(called_tsap=b"nochannel"),
        AssociationSettings(served_tsaps=frozenset({b"591", b"x400"})),
    )
    pair.initiator.send_bind(ARGUMENT)
    (refused,) = pair.deliver(True)
    assert isinstance(refused, ConnectionRefused)
    assert (refused.layer, refused.called, refused.by_peer) == ("transport", b"nochannel", False)
    assert "called TSEL 'nochannel' is not served here" in refused.why
    assert pair.responder.closed
    (dr,) = tpdus(pair.responder.data_to_send())
    assert x224.decode_dr(dr).reason == x224.REASON_ADDRESS_UNKNOWN == 3
    pair.sent_by_responder.append(b"")
    (gone,) = pair.initiator.receive_data(bytes((3, 0, 0, 4 + len(dr))) + dr)
    assert isinstance(gone, Aborted)
    assert "DR received: address unknown" in gone.why


def test_a_cr_without_a_tsel_is_served_only_when_b_empty_is() -> None:
    served = Pair(None, AssociationSettings(served_tsaps=frozenset({b"", b"x400"})))
    requested, _ = served.bind()
    assert isinstance(requested, BindRequested)
    refused = Pair(None, AssociationSettings(served_tsaps=frozenset({b"x400"})))
    refused.initiator.send_bind(ARGUMENT)
    (event,) = refused.deliver(True)
    assert isinstance(event, ConnectionRefused)
    assert "called TSEL 'none'" in event.why


@given(st.one_of(st.just(b""), SSEL), st.frozensets(SSEL, min_size=1, max_size=3))
def test_a_cn_for_an_ssel_not_served_is_refused_ssap_unknown(
    called: bytes, served: frozenset[bytes]
) -> None:
    pair = Pair(AssociationSettings(called_ssap=called), AssociationSettings(served_ssaps=served))
    pair.initiator.send_bind(ARGUMENT)
    pair.deliver(True)  # CR
    pair.deliver(False)  # CC
    events = pair.deliver(True)  # CN
    if called in served:
        assert [type(e) for e in events] == [BindRequested]
        return
    (refused,) = events
    assert isinstance(refused, ConnectionRefused)
    assert (refused.layer, refused.called, refused.calling) == ("session", called, b"")
    assert pair.responder.closed
    refusal = pair.responder.data_to_send()
    (rf,) = spdus(refusal)
    assert (rf.kind, rf.reason_code, bytes(rf.user_data)) == (spdu.Kind.RF, 129, b"")
    (answer,) = pair.initiator.receive_data(refusal)
    assert isinstance(answer, BindRefused)
    assert answer.error is None
    assert answer.why == "refused by the peer's session provider: session selector unknown"


def test_a_cp_for_a_psel_not_served_is_refused_by_the_presentation_provider() -> None:
    pair = Pair(
        AssociationSettings(called_psap=b"PS-other", calling_psap=b"\x00\x01"),
        AssociationSettings(served_psaps=frozenset({b"PS"})),
    )
    pair.initiator.send_bind(ARGUMENT)
    events = pair.pump()
    (refused,) = events.responder
    assert isinstance(refused, ConnectionRefused)
    assert (refused.layer, refused.called, refused.calling) == (
        "presentation",
        b"PS-other",
        b"\x00\x01",
    )
    rf = only_spdu(b"".join(pair.sent_by_responder), spdu.Kind.RF)
    assert (rf.kind, rf.reason_code) == (spdu.Kind.RF, spdu.REFUSED_BY_USER)
    cpr = presentation.decode_cpr(rf.user_data)
    assert cpr.provider_reason == presentation.ProviderReason.CALLED_PRESENTATION_ADDRESS_UNKNOWN
    assert cpr.user_data == ()  # no AARE: no ACSE user was asked
    (answer,) = events.initiator
    assert isinstance(answer, BindRefused)
    assert answer.why == (
        "refused by the peer's presentation provider: called-presentation-address-unknown"
    )


def test_a_cp_without_a_psel_is_served_only_when_b_empty_is() -> None:
    served = Pair(None, AssociationSettings(served_psaps=frozenset({b""})))
    requested, _ = served.bind()
    assert isinstance(requested, BindRequested)
    refused = Pair(None, AssociationSettings(served_psaps=frozenset({b"PS"})))
    refused.initiator.send_bind(ARGUMENT)
    (event,) = refused.pump().responder
    assert isinstance(event, ConnectionRefused)
    assert "called PSEL 'none'" in event.why


# --- golden: PP's captures ------------------------------------------------------------------


def _cr_of(capture: str) -> x224.ConnectionRequest:
    record = load_tpkts(capture)[0]
    assert record["cotp"] == "CR"
    return x224.decode_cr(bytes.fromhex(record["hex"])[4:])


def test_our_cr_calling_x400_is_the_one_pp_accepted() -> None:
    """pcaps/pp/02: PP accepted our CR with called TSEL "x400"; ours is that CR still."""
    pair = Pair(AssociationSettings(called_tsap=b"x400"))
    pair.initiator.send_bind(ARGUMENT)
    ours = pair.initiator.data_to_send()
    captured = bytes.fromhex(load_tpkts("pp/02-ping-tsel-x400-ok")[0]["hex"])
    assert b"\xc2\x04x400" in ours
    assert x224.decode_cr(ours[4:]).called_tsap == _cr_of("pp/02-ping-tsel-x400-ok").called_tsap
    # The same CR but SRC-REF (octets 8-9), which is each connection's own now.
    assert ours[:8] + ours[10:] == captured[:8] + captured[10:]
    assert int.from_bytes(ours[8:10], "big") != 0


@pytest.mark.parametrize("capture", ["pp/20-pp-to-aiox-dr", "pp/30-pp-to-aiox-x410-mode"])
def test_pp_calls_tsel_591_which_a_listener_serving_it_accepts(capture: str) -> None:
    record = load_tpkts(capture)[0]
    assert _cr_of(capture).called_tsap == b"591"
    responder = Pair(None, AssociationSettings(served_tsaps=frozenset({b"591"}))).responder
    assert responder.receive_data(bytes.fromhex(record["hex"])) == []
    (cc,) = tpdus(responder.data_to_send())
    assert x224.tpdu_code(cc) == x224.CC
