"""Golden: what this MTA sends PP 6.0 in 1988 mode with PP's policy, against the live3
captures (shared/reference/pcaps/pp/live3, README there).

PP aborted every message and report this MTA sent it (captures 10, 21, 22, 23): each
carried this MTA's internal trace (``80 01 26``) and a message the STANAG 4406
priority-level-qualifier, which PP cannot parse.  Those very APDUs, queued again and put
through :func:`mta.outbound.outgoing.outgoing` for a peer with ``omit_extensions =
["internal-trace", "priority-level-qualifier"]``, carry no extension at all: their
envelopes match, member by member, the message PP accepted and delivered (capture 15)
and PP's own reports; the rest of each APDU is unchanged.  A message PP sent, relayed
through this MTA back to PP, keeps PP's own extensions byte for byte.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from config.schema import P1Protocol
from config.values import OwnExtension
from mta.intake.plan import domain_of
from mta.outbound.outgoing import OwnPolicy, outgoing
from p1 import ber
from p1.association.connection import BindRequested, P1Association, TransferReceived
from p1.association.mtabind import MTABindResult
from p1.mts.envelope import Message, MessageEnvelope, Probe, decode_mts_apdu, peek_envelope
from p1.mts.precedence import Precedence
from p1.mts.relay import with_trace_added
from p1.mts.report import DeliveryReport, NonDeliveryReport, Report
from p1.mts.trace import InternalTraceEntry, RoutingAction
from p1.orname.model import ORAddress
from p1.osi import Role
from store import ApduKind, QueueEntry
from store.models import RecipientState
from store.queue import QueueRecipient
from store.spool import as_bytes
from tests.support.golden import load_tpkts

LIVE3 = "pp/live3/"
AIOX = OwnPolicy(
    omit=frozenset(OwnExtension),
    name="aiox",
    domain=domain_of(ORAddress(country="GB", admd=" ", prmd="AIOX")),
)
PP_PORT = 20001
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _transfers(capture: str, *, to_port: int | None = None) -> list[bytes]:
    """The MTS-APDUs transferred on each connection of ``capture`` (to ``to_port`` only,
    when given), read by a sans-I/O responder of ours that accepts every bind."""
    connections: dict[tuple[int, int], list[bytes]] = {}
    for record in load_tpkts(capture):
        key = (record["src_port"], record["dst_port"])
        if record.get("cotp") == "CR":
            connections[key] = []
        if key in connections:
            connections[key].append(bytes.fromhex(record["hex"]))
    apdus = []
    for (_, port), tpkts in connections.items():
        if to_port is not None and port != to_port:
            continue
        association = P1Association(Role.RESPONDER)
        for tpkt in tpkts:
            for event in association.receive_data(tpkt):
                if isinstance(event, BindRequested):
                    association.accept_bind(MTABindResult(responder_name="r", password=""))
                elif isinstance(event, TransferReceived):
                    apdus.append(event.apdu)
    return apdus


def _queued(apdu: bytes, origin_peer: str | None) -> QueueEntry:
    """``apdu`` as claimed for one peer: each of its recipients, the whole envelope."""
    envelope = peek_envelope(apdu)
    kind = {MessageEnvelope: ApduKind.MESSAGE, Probe: ApduKind.PROBE, Report: ApduKind.REPORT}
    numbers = [r.originally_specified_recipient_number for r in getattr(envelope, "recipients", ())]
    recipients = tuple(
        QueueRecipient(
            id=index,
            recipient=f"recipient {index}",
            route="PP",
            state=RecipientState.IN_FLIGHT,
            attempts=1,
            next_attempt_at=NOW,
            last_error=None,
            report_request=0,
            recipient_number=number,
        )
        for index, number in enumerate(numbers or [None])
    )
    return QueueEntry(
        message_id=1,
        mts_identifier="x",
        kind=kind[type(envelope)],
        precedence=Precedence.ROUTINE,
        originator="o",
        apdu=apdu,
        arrival_time=NOW,
        expiry_time=None,
        origin_peer=origin_peer,
        recipients=recipients,
        envelope_recipients=len(numbers) or None,
    )


def _to_pp(apdu: bytes, origin_peer: str | None = None) -> bytes:
    wire = outgoing(_queued(apdu, origin_peer), P1Protocol.NORMAL, AIOX)
    assert wire.refused is None and wire.entry is not None
    return as_bytes(wire.apdu)


def _members(envelope_set: bytes) -> dict[int, bytes]:
    """The members of a BER SET by tag, each as encoded."""
    tlv = ber.read_single(envelope_set, "SET")
    return {child.tag: child.raw() for child in ber.children(tlv, "SET")}


def _message_members(apdu: bytes) -> dict[int, bytes]:
    """The members of a message's envelope (the first element of the Message SEQUENCE)."""
    message = ber.read_single(apdu, "MTS-APDU")
    return _members(ber.children(message, "Message")[0].raw())


def _fields(extensions: bytes) -> list[bytes]:
    """Each ExtensionField of an ``extensions`` member, as encoded."""
    return [f.raw() for f in ber.children(ber.read_single(extensions, "extensions"), "x")]


def _extensions_of(apdu: bytes) -> bytes:
    return _message_members(apdu)[ber.context(3)]


def _report_envelope_members(apdu: bytes) -> dict[int, bytes]:
    report = ber.read_single(apdu, "MTS-APDU")
    return _members(ber.children(report, "Report")[0].raw())


def _standard_type_tags(apdu: bytes) -> bool:
    """Whether an ExtensionField of ``apdu``'s envelope writes its type as ``80 01 ..``
    (the standard's form, which PP aborts on)."""
    decoded = decode_mts_apdu(apdu)
    envelope = decoded.envelope if isinstance(decoded, Message | Report) else decoded
    return any(e.type_encoding is None for e in envelope.extensions)


def test_our_message_pp_aborted_goes_as_the_one_it_accepted() -> None:
    refused = _transfers(LIVE3 + "10-88-aiox-to-pp-p2")
    (accepted,) = _transfers("pp/15-diag-p22-noext-accepted-and-pp-dr", to_port=PP_PORT)
    assert len(refused) == 3
    for sent in refused:
        before = decode_mts_apdu(sent)
        assert isinstance(before, Message) and len(before.envelope.extensions) == 2
        now = _to_pp(sent)
        after = decode_mts_apdu(now)
        assert isinstance(after, Message)
        assert after.envelope.extensions == ()
        assert all(r.extensions == () for r in after.envelope.recipients)
        assert after.content == before.content
        ours, pps = _message_members(now), _message_members(accepted)
        assert ours.keys() == pps.keys()
        extensions = ber.context(3)  # MessageTransferEnvelope.extensions
        assert ours[extensions] == pps[extensions]  # the empty SET PP took
        # Every other member is this message's own, unchanged.
        old = _message_members(sent)
        assert {t: v for t, v in ours.items() if t != extensions} == {
            t: v for t, v in old.items() if t != extensions
        }


@pytest.mark.parametrize(
    ("capture", "outcomes"),
    [
        ("21-88-pp-to-aiox-urgent-dr", {DeliveryReport}),
        ("22-88-pp-to-aiox-unknown-and-probe", {NonDeliveryReport}),
        ("23-88-pp-probe", {DeliveryReport, NonDeliveryReport}),  # probe reports
    ],
)
def test_our_reports_pp_aborted_carry_no_extension(capture: str, outcomes: set[type]) -> None:
    reports = _transfers(LIVE3 + capture, to_port=PP_PORT)
    assert reports
    (pps_report,) = _transfers("pp/15-diag-p22-noext-accepted-and-pp-dr", to_port=5400)
    pps = _report_envelope_members(pps_report)
    seen: set[type] = set()
    for sent in reports:
        before = decode_mts_apdu(sent)
        assert isinstance(before, Report) and _standard_type_tags(sent)
        now = _to_pp(sent)
        after = decode_mts_apdu(now)
        assert isinstance(after, Report)
        seen |= {type(r.last_trace_information.report) for r in after.content.recipients}
        assert after.envelope.extensions == ()
        assert after.content == before.content
        assert not _standard_type_tags(now)
        # The members of PP's own report envelope, PP's extensions aside.
        assert _report_envelope_members(now).keys() == pps.keys()
    assert seen == outcomes


def test_pps_message_relayed_back_to_pp_keeps_pps_extensions_as_received() -> None:
    (received,) = _transfers(LIVE3 + "20-88-pp-to-aiox-p22")
    relayed = with_trace_added(
        received,
        None,
        InternalTraceEntry(
            global_domain_identifier=AIOX.domain,
            mta_name=AIOX.name,
            arrival_time=NOW,
            routing_action=RoutingAction.RELAYED,
        ),
    )
    assert relayed != received
    now = _to_pp(relayed, origin_peer="pp.test")
    # PP's extensions (in PP's form) as PP wrote them, ours gone; every other envelope
    # member and the content as received (the outer lengths are ours: definite).
    extensions = ber.context(3)  # MessageTransferEnvelope.extensions
    ours, pps = _message_members(now), _message_members(received)
    assert _fields(ours.pop(extensions)) == _fields(pps.pop(extensions))
    assert ours == pps
    assert _fields(_message_members(relayed)[extensions]) != _fields(_extensions_of(received))
    before, after = decode_mts_apdu(received), decode_mts_apdu(now)
    assert isinstance(before, Message) and isinstance(after, Message)
    assert after.content == before.content
    assert [e.type_encoding for e in after.envelope.extensions] == [
        e.type_encoding for e in before.envelope.extensions
    ]
    assert all(e.type_encoding is not None for e in after.envelope.extensions)  # PP's form
