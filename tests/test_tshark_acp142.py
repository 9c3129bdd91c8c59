"""Two MTAs over STANAG 4406 Annex E over ACP 142, refereed by tshark.

dumpcap captures the UDP ports of both sites' ACP 142 nodes while a user at A sends a
user at B one message of each precedence with a delivery report asked for; once A holds
the six reports, tshark reads the capture with its p_mul dissector, the CDT dissector
for what a message carries and the P1 dissector behind it: every PDU is P_MUL with a
good checksum, nothing is malformed or flagged, the three PDU types of a transfer are
there, and the six messages and six reports are read as MTS-APDUs.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from p1.mts.precedence import Precedence
from tests.mta.acp142.test_live import make_lab
from tests.support import tshark
from tests.support.sites import eventually

pytestmark = pytest.mark.slow  # two daemons under dumpcap, then tshark

DATA, ACK, ADDRESS = "0", "1", "2"


async def test_tshark_reads_every_pdu_of_an_acp142_exchange(tmp_path: Path) -> None:
    tshark.require_tshark()
    lab = make_lab(tmp_path)
    ports = [
        lab.a.settings["acp142"]["data_port"],
        lab.a.settings["acp142"]["ack_port"],
        lab.b.settings["acp142"]["data_port"],
        lab.b.settings["acp142"]["ack_port"],
    ]
    listed = ",".join(str(p) for p in ports)
    pcap = tmp_path / "acp142.pcap"
    with tshark.LoopbackCapture(pcap, listed, protocol="udp"):
        await lab.start()
        try:
            sender, recipient = lab.a.address("Smith"), lab.b.address("Jones")
            for precedence in Precedence.most_urgent_first():
                await lab.a.send(sender, recipient, precedence, delivery_report=True)
            await eventually(
                lambda: lab.a.reports(sender), lambda got: len(got) == 6, what="six reports"
            )
        finally:
            await lab.close()
    rows = _fields(pcap, ports)
    assert rows, "nothing captured"
    for row in rows:
        pdu_type, good, malformed, severity, _ = row
        assert pdu_type in (DATA, ACK, ADDRESS), row
        assert good == "1", row
        assert malformed == "" and severity == "", row
    types = [row[0] for row in rows]
    assert types.count(ADDRESS) == 12 and types.count(ACK) == 12, types
    apdus = [row[4] for row in rows if row[4]]
    assert apdus.count("0") == 6 and apdus.count("1") == 6, apdus  # messages, reports


def _fields(pcap: Path, ports: list[int]) -> list[list[str]]:
    argv = ["tshark", "-r", str(pcap), "-Y", "p_mul"]
    for port in ports:
        argv += ["-d", f"udp.port=={port},p_mul"]
    argv += ["-o", "p_mul.decode:Compressed Data Type", "-T", "fields", "-E", "occurrence=f"]
    for name in ("p_mul.pdu_type", "p_mul.checksum_good", "_ws.malformed"):
        argv += ["-e", name]
    argv += ["-e", "_ws.expert.severity", "-e", "p1.MTS_APDU"]
    result = subprocess.run(
        argv, capture_output=True, text=True, timeout=tshark.TIMEOUT, check=True
    )
    return [line.split("\t") for line in result.stdout.splitlines()]
