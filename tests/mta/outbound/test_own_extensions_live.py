"""A peer that does not get this MTA's own extensions, between live daemons.

Each site has the other as a peer with ``omit_extensions = ["internal-trace",
"priority-level-qualifier"]`` (the policy for PP, docs/interoperability.md): messages
and delivery reports flow both ways, and what each receiver stored carries no
internal-trace entry of the sender and no priority-level-qualifier.  Without the policy
the same exchange carries both (the control).  Wireshark, capturing every connection,
reads every APDU without a decode problem, and sees the qualifier and the internal trace
on the wire only in the control.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p1.mts.envelope import Message, MessageEnvelope, decode_mts_apdu
from p1.mts.precedence import PRIORITY_LEVEL_QUALIFIER_OID, Precedence
from p1.mts.report import Report
from tests.support import tshark
from tests.support.sites import Lab, Site, eventually

pytestmark = pytest.mark.slow  # two daemons, a second or more each

PP_POLICY = ["internal-trace", "priority-level-qualifier"]
MESSAGE_APDU, REPORT_APDU = "0", "1"  # MTS-APDU choices as tshark shows them


async def _exchange(sender: Site, receiver: Site) -> tuple[Message, Report]:
    """A message from ``sender``'s Smith to ``receiver``'s Bob, delivery report asked:
    the message as Bob's store holds it and the report as Smith's does."""
    smith, bob = sender.address("Smith"), receiver.address("Bob")
    (identifier,) = await sender.send(smith, bob, Precedence.FLASH, delivery_report=True)
    (entry,) = await eventually(
        lambda: receiver.inbox(bob), lambda found: len(found) == 1, what="delivered to Bob"
    )
    _, apdu = await receiver.read(bob, int(str(entry["id"])))
    message = decode_mts_apdu(apdu)
    assert isinstance(message, Message)
    assert message.envelope.mts_identifier.text == identifier
    (report,) = await eventually(
        lambda: sender.reports(smith), lambda found: len(found) == 1, what="the report"
    )
    assert report.content.subject_identifier.text == identifier
    assert report.content.recipients[0].delivered
    return message, report


def _traced_by(extended: MessageEnvelope | Report) -> set[str]:
    envelope = extended.envelope if isinstance(extended, Report) else extended
    return {entry.mta_name for entry in envelope.internal_trace}


def _qualified(envelope: MessageEnvelope) -> bool:
    return any(e.type == PRIORITY_LEVEL_QUALIFIER_OID for e in envelope.extensions)


def _listener_ports(lab: Lab) -> str:
    return ",".join(
        str(entry["port"]) for site in (lab.a, lab.b) for entry in site.settings["listeners"]
    )


@pytest.mark.parametrize("policy", [True, False], ids=["omitted", "control"])
async def test_messages_and_reports_both_ways_lack_the_omitted_extensions(
    lab: Lab, policy: bool, tmp_path: Path
) -> None:
    tshark.require_tshark()
    if policy:
        lab.a.settings["peers"][0]["omit_extensions"] = PP_POLICY
        lab.b.settings["peers"][0]["omit_extensions"] = PP_POLICY
    ports, pcap = _listener_ports(lab), tmp_path / "wire.pcap"
    exchanged = []
    async with tshark.LoopbackCapture(pcap, ports):
        await lab.start()
        for sender, receiver in ((lab.a, lab.b), (lab.b, lab.a)):
            exchanged.append((sender, receiver, *await _exchange(sender, receiver)))
        await lab.stop()  # every connection closed before the capture stops
    decoded = tshark.decode(pcap, ports)
    assert decoded.problems == ()
    apdus = decoded.values("p1.MTS_APDU")
    assert apdus.count(MESSAGE_APDU) == 2 and apdus.count(REPORT_APDU) == 2, apdus
    # The control's four APDUs carry an internal trace each, its two messages a qualifier.
    qualified = tshark.matching(pcap, ports, "p772.PriorityLevelQualifier")
    traced = tshark.matching(pcap, ports, "p1.InternalTraceInformation")
    assert (len(qualified), len(traced)) == ((0, 0) if policy else (2, 4))
    for sender, receiver, message, report in exchanged:
        # The receiver's own entry is there either way: it traced what it took in.
        assert receiver.name in _traced_by(message.envelope)
        assert sender.name in _traced_by(report)
        if policy:
            assert sender.name not in _traced_by(message.envelope)
            assert not _qualified(message.envelope)
            assert receiver.name not in _traced_by(report)
        else:
            assert sender.name in _traced_by(message.envelope)
            assert _qualified(message.envelope)
            assert receiver.name in _traced_by(report)
