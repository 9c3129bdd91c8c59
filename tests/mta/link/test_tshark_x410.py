"""X.410-1984 mode on the wire, refereed by tshark, one TCP connection at a time.

Sites A and B each call the other as a 1984 MTA (``protocol = "1984"``): a P2 message
crosses A -> B in X.410-1984 mode and its delivery report B -> A; a bind with the wrong
password is refused.  dumpcap captures every port of the lab; the capture is split per
TCP stream, because tshark's RTSE dissector keeps the last applicationProtocol it read
in a global and would carry it from one connection into the next.

What tshark reads in each connection that carried P1: the CN's and AC's presentation
mode-selector x410-1984-mode (0), applicationProtocol 1 (mts-transfer-protocol-1984),
the bind argument and result (or the refusal) decoded as P1, and nothing malformed
except one known gap of Wireshark's: in X.410-1984 mode the MPDU is the S-DATA's user
data itself, and Wireshark's session dissector hands every S-DATA to the presentation
dissector, which only reads normal-mode user data (pres.invalid_offset).  So those
frames are checked to be exactly the transfers' (one per S-ACTIVITY-START), each with
no other problem, and what they carried is checked at the other end (delivered).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mta.link import BindRefusedError, open_link
from p1.association.mtabind import MTABindArgument
from p1.association.x410 import X410Settings
from tests.support import tshark
from tests.support.sites import A, Lab, eventually

pytestmark = pytest.mark.slow  # two daemons under dumpcap, then tshark

INVALID_OFFSET = "pres.invalid_offset"
"""Wireshark's presentation dissector given X.410-1984 mode S-DATA (see the docstring)."""


def _streams(pcap: Path, ports: str, directory: Path) -> list[Path]:
    """One capture file per TCP stream that carried a TPKT."""
    found = tshark.fields(pcap, ports, "tpkt", ("tcp.stream",))
    parts = []
    for stream in sorted({int(layers["tcp.stream"][0]) for layers in found}):
        part = directory / f"stream-{stream}.pcap"
        argv = ["tshark", "-n", "-r", str(pcap), "-Y", f"tcp.stream == {stream}", "-w", str(part)]
        subprocess.run(argv, check=True, capture_output=True, timeout=tshark.TIMEOUT)
        parts.append(part)
    return parts


def _values(pcap: Path, ports: str, name: str) -> list[str]:
    return [v for layers in tshark.fields(pcap, ports, name, (name,)) for v in layers[name]]


async def test_x410_mode_connections_decode_one_by_one(lab: Lab, tmp_path: Path) -> None:
    tshark.require_tshark()
    for site in (lab.a, lab.b):
        site.settings["peers"][0]["protocol"] = "1984"
    pcap, ports = tmp_path / "x410.pcap", ",".join(map(str, lab.reserved.ports))
    smith, bob = lab.a.address("Smith"), lab.b.address("Bob")
    async with tshark.LoopbackCapture(pcap, ports):
        await lab.start()
        code, _, err = await lab.a.x400(
            *("send", "--socket", str(lab.a.socket), "--from", smith, "--to", bob, "--p2"),
            *("--precedence", "flash", "--subject", "1984", "--body", "hi", "-r"),
        )
        assert code == 0, err
        await eventually(lambda: lab.a.reports(smith), lambda r: len(r) == 1, what="the report")
        wrong = MTABindArgument(initiator_name=A.name, password="wrong")
        port = lab.b.running.listening_ports[0]
        try:
            await open_link("127.0.0.1", port, wrong, settings=X410Settings())
        except BindRefusedError:
            pass
        else:
            raise AssertionError("a bind with the wrong password was accepted")
        await lab.stop()
    parts = _streams(pcap, ports, tmp_path)
    transfers = refusals = 0
    for part in parts:
        decoded = tshark.decode(part, ports)
        gap = set(tshark.matching(part, ports, INVALID_OFFSET))
        starts = set(tshark.matching(part, ports, "ses.type == 45"))  # S-ACTIVITY-START
        assert {p.number for p in decoded.problems} == gap, (part.name, decoded.problems)
        assert gap == starts, part.name  # only the transfers' S-DATA, one per transfer
        transfers += len(starts)
        assert _values(part, ports, "pres.mode_value") in (["0"], ["0", "0"]), part.name
        assert set(_values(part, ports, "rtse.applicationProtocol")) == {"1"}, part.name
        assert decoded.values("p1.MTABindArgument"), part.name
        if tshark.matching(part, ports, "ses.type == 12"):  # RF: the refusal
            refusals += 1
        else:
            assert decoded.values("p1.MTABindResult"), part.name
    assert transfers == 2  # the message A -> B, the delivery report B -> A
    assert refusals == 1
    assert len(await _delivered(lab, bob)) == 1


async def _delivered(lab: Lab, bob: str) -> list[dict[str, object]]:
    await lab.b.start()
    try:
        return await lab.b.inbox(bob)
    finally:
        await lab.b.stop()
