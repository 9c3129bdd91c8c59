"""Two MTA daemons relaying over TLS, refereed by tshark with the session keys.

Sites A and B run as in ``config/examples`` (one listener and one slot per DSCP, CS0..CS3)
with every listener and slot in TLS and mutual certificates (:mod:`tests.mta.tls.pki`),
and ``SSLKEYLOGFILE`` set, as an operator would for Wireshark.  dumpcap captures every
listener port while A sends B one message of each precedence.  Without the keys, tshark
finds no P1 on the wire and the password is nowhere in the capture; with them
(``tls.keylog_file``, TPKT decoded inside TLS), it reads TPKT, X.224, session,
presentation, ACSE, RTSE and P1 with zero decode problems: every bind, every message with
its X.411 priority; and every packet of every connection carries its DSCP, TLS records
included.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from p1.mts.envelope import MTSIdentifier
from p1.mts.precedence import DEFAULT_TABLE, Precedence, Priority, parse_dscp
from tests.mta.tls.pki import Pki, secure
from tests.support import tshark
from tests.support.sites import A, B, Lab, Site, eventually
from tests.support.tshark import Direction

pytestmark = pytest.mark.slow  # two daemons under dumpcap, then tshark


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    pcap: Path
    keylog: Path
    ports: str
    listeners: dict[str, dict[int, int]]
    """Listener port by site name, then by DSCP."""
    sent: dict[Precedence, str]
    decoded: tshark.Decoded


def listener_ports(site: Site) -> dict[int, int]:
    return {parse_dscp(entry["dscp"]): entry["port"] for entry in site.settings["listeners"]}


async def exchange(lab: Lab) -> dict[Precedence, str]:
    """One message of each precedence from A to B, delivered; their local identifiers."""
    sent: dict[Precedence, str] = {}
    bob = lab.b.address("Bob")
    for precedence in Precedence:
        (identifier,) = await lab.a.send(lab.a.address("Smith"), bob, precedence)
        sent[precedence] = MTSIdentifier.parse(identifier).local_identifier
    await eventually(
        lambda: lab.b.inbox(bob), lambda found: len(found) == len(sent), what="six at B"
    )
    return sent


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tshark.require_tshark()
    directory = tmp_path_factory.mktemp("tls")
    keylog = directory / "keys.log"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SSLKEYLOGFILE", str(keylog))
        lab = Lab.create(directory)
        secure(lab, Pki.create(directory / "pki"))
        listeners = {site.name: listener_ports(site) for site in (lab.a, lab.b)}
        ports = ",".join(str(p) for by_dscp in listeners.values() for p in by_dscp.values())
        pcap = directory / "tls.pcap"
        try:
            async with tshark.LoopbackCapture(pcap, ports):
                await lab.start()
                sent = await exchange(lab)
                await lab.stop()
        finally:
            await lab.close()
    return Run(
        pcap=pcap,
        keylog=keylog,
        ports=ports,
        listeners=listeners,
        sent=sent,
        decoded=tshark.decode(pcap, ports, keylog=keylog),
    )


def test_without_the_keys_nothing_of_p1_is_on_the_wire(run: Run) -> None:
    sealed = tshark.decode(run.pcap, run.ports)
    assert sealed.values("p1.MTABindArgument") == ()
    assert sealed.values("p1.MTS_APDU") == ()
    assert A.password.encode() not in run.pcap.read_bytes()
    assert B.password.encode() not in run.pcap.read_bytes()


def test_with_the_keys_tshark_decodes_every_layer_without_a_problem(run: Run) -> None:
    assert run.decoded.problems == ()
    # A's binds to B; B's to A too when its slots retried before the sites stopped.
    initiators = set(run.decoded.values("p1.authenticated.initiator-name"))
    assert A.name in initiators <= {A.name, B.name}
    responders = set(run.decoded.values("p1.authenticated.responder-name"))
    assert B.name in responders <= {A.name, B.name}
    for precedence, local in run.sent.items():
        [frame] = [f for f in run.decoded.frames if f.fields.get("p1.local_identifier") == (local,)]
        priority, _ = DEFAULT_TABLE.to_mts(precedence)
        # A DEFAULT priority (normal) is left out, so tshark shows none.
        shown = () if priority is Priority.NORMAL else (str(int(priority)),)
        assert frame.fields.get("p1.priority", ()) == shown, precedence


def test_every_tls_connection_carries_its_slots_dscp_both_ways(run: Run) -> None:
    # A's four slots connect to B's four listeners, one per DSCP (B's slots to A may
    # have found A not yet listening, and not retried before the sites stopped).
    ports = run.listeners[B.name]
    expected = {(port, d): {dscp} for dscp, port in ports.items() for d in Direction}
    seen = run.decoded.dscp_by_port()
    assert {key: seen.get(key) for key in expected} == expected
