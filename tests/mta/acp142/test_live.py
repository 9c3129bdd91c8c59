"""Two MTAs over STANAG 4406 Annex E over ACP 142 on loopback: real UDP sockets, real
daemons, real stores.

Site A is node 127.0.0.1, site B node 127.0.0.2 (both on loopback), each the other's one
peer with ``transport = "acp142"``.  Every precedence arrives once with its delivery
report back; a peer in EMCON is served without acknowledgements; the receiving site stopped
in the middle loses nothing, and the sending one sends it again, delivered once.
"""

from __future__ import annotations

import base64
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from mta.acp142.link import Acp142Link
from p1.mts.precedence import Precedence
from tests.support.sites import A, B, Identity, Lab, Site, eventually

pytestmark = pytest.mark.slow  # two daemons

HOSTS = {A.name: "127.0.0.1", B.name: "127.0.0.2"}


TRACEROUTE = range(33435, 33465)
"""UDP ports Wireshark's UDP dissector flags as a possible traceroute (expert info, chat
level): a capture of ours on them would not read as clean."""


def udp_ports(host: str, count: int) -> list[int]:
    """Ports free on ``host`` for UDP now (given back at once: the daemon binds them),
    none of them in :data:`TRACEROUTE`."""
    sockets: list[socket.socket] = []
    ports: list[int] = []
    while len(ports) < count:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((host, 0))
        sockets.append(s)  # (all kept bound until the last is drawn: none drawn twice)
        if s.getsockname()[1] not in TRACEROUTE:
            ports.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return ports


def acp142_site(
    site: Site, me: Identity, them: Identity, mine: list[int], theirs: list[int], **peer: object
) -> None:
    """Make ``site`` speak ACP 142 only, to ``them``."""
    settings = site.settings
    settings["listeners"] = []
    settings["acp142"] = {
        "address": HOSTS[me.name],
        "data_port": mine[0],
        "ack_port": mine[1],
        "ack_delay": "0.2s",
    }
    settings["peers"] = [
        {
            "name": them.name,
            "host": HOSTS[them.name],
            "routes": [them.domain],
            "transport": "acp142",
            "acp142": {
                "data_port": theirs[0],
                "ack_port": theirs[1],
                "retransmission": "1s",
                **peer,
            },
        }
    ]


async def send_random_text(lab: Lab, directory: Path, *, subject: str) -> Path:
    """``x400 send`` from A's Smith to B's Jones, routine, a body of random text that
    compresses to about 150 KB; the body's file."""
    body = directory / f"{subject}.txt"
    body.write_text(base64.b64encode(os.urandom(150_000)).decode())
    code, _, err = await lab.a.x400(
        "send", "--socket", str(lab.a.socket),
        "--from", lab.a.address("Smith"), "--to", lab.b.address("Jones"),
        "--body-file", str(body), "--subject", subject, "--precedence", "routine",
    )  # fmt: skip
    assert code == 0, err
    return body


def make_lab(directory: Path, **peer_of_b: object) -> Lab:
    lab = Lab.create(directory, slots=())
    ports_a, ports_b = udp_ports(HOSTS[A.name], 2), udp_ports(HOSTS[B.name], 2)
    acp142_site(lab.a, A, B, ports_a, ports_b, **peer_of_b)
    acp142_site(lab.b, B, A, ports_b, ports_a)
    return lab


@pytest_asyncio.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    lab = make_lab(tmp_path)
    await lab.start()
    try:
        yield lab
    finally:
        await lab.close()


async def test_every_precedence_arrives_once_with_its_report(lab: Lab) -> None:
    sender, recipient = lab.a.address("Smith"), lab.b.address("Jones")
    sent = []
    for precedence in Precedence.most_urgent_first():
        sent += await lab.a.send(sender, recipient, precedence, delivery_report=True)
    inbox = await eventually(
        lambda: lab.b.inbox(recipient), lambda got: len(got) >= len(sent), what="six messages at B"
    )
    assert len(inbox) == len(sent)
    reports = await eventually(
        lambda: lab.a.reports(sender), lambda got: len(got) >= len(sent), what="six reports at A"
    )
    assert len(reports) == len(sent)
    link = lab.a.running.acp142
    assert link is not None and link.counters["delivered"] >= len(sent)


async def test_a_peer_in_emcon_is_served_without_acknowledgements(tmp_path: Path) -> None:
    lab = make_lab(tmp_path, emcon=True, emcon_repetitions=2, emcon_interval="0.5s")
    lab.b.settings["acp142"]["emcon"] = True
    await lab.start()
    try:
        sender, recipient = lab.a.address("Smith"), lab.b.address("Jones")
        await lab.a.send(sender, recipient, Precedence.FLASH)
        await eventually(lambda: lab.b.inbox(recipient), lambda got: len(got) == 1, what="at B")
        link_a, link_b = lab.a.running.acp142, lab.b.running.acp142
        assert link_a is not None and link_b is not None
        await eventually(
            _delivered(link_a), lambda n: n == 1, what="A counts the message delivered"
        )
        # B sent no acknowledgement, and A sent the whole message twice.
        assert link_b.counters["sent"] == 0
        queue = await lab.a.api({"op": "queue"})
        waiting = [
            c for c in queue["counts"] if c["route"] == B.name and c["state"] != "transferred"
        ]
        assert not waiting, queue
    finally:
        await lab.close()


def _delivered(link: Acp142Link) -> Callable[[], Awaitable[int]]:
    async def probe() -> int:
        return link.counters["delivered"]

    return probe


async def _under_way(lab: Lab, directory: Path) -> Path:
    """Start both sites (A paced so that 200 KB take about 4 s), send B's Jones a large
    message, and return once some of it is on its way; the body's file."""
    lab.a.settings["acp142"]["rate"] = 400_000
    await lab.start()
    body = await send_random_text(lab, directory, subject="big")
    link_a = lab.a.running.acp142
    assert link_a is not None
    await eventually(_sent(link_a), lambda n: n >= 20, what="some of it on its way")
    return body


async def _read_once(lab: Lab, body: Path) -> None:
    """B's Jones has exactly one message, and it carries ``body``."""
    recipient = lab.b.address("Jones")
    inbox = await lab.b.inbox(recipient)
    assert len(inbox) == 1
    _, text = await lab.b.read(recipient, inbox[0]["id"])
    assert body.read_text() in text.decode(errors="replace")


def _link_of(site: Site) -> Acp142Link:
    link = site.running.acp142
    assert link is not None
    return link


async def test_a_site_stopped_in_the_middle_loses_nothing(tmp_path: Path) -> None:
    lab = make_lab(tmp_path)
    try:
        body = await _under_way(lab, tmp_path)
        await lab.b.stop()
        await lab.b.start()
        recipient = lab.b.address("Jones")
        await eventually(
            lambda: lab.b.inbox(recipient), lambda got: len(got) >= 1, what="the message at B"
        )
        await _read_once(lab, body)
        await eventually(_delivered(_link_of(lab.a)), lambda n: n >= 1, what="acknowledged to A")
    finally:
        await lab.close()


async def test_the_sender_stopped_in_the_middle_sends_it_again_and_it_arrives_once(
    tmp_path: Path,
) -> None:
    """A stops while the message is on its way and starts again: the message, still
    claimed in A's queue, goes again, and B delivers it once, byte for byte."""
    lab = make_lab(tmp_path)
    try:
        body = await _under_way(lab, tmp_path)
        await lab.a.stop()
        assert await lab.b.inbox(lab.b.address("Jones")) == []  # (not all of it had gone)
        await lab.a.start()
        await eventually(
            _delivered(_link_of(lab.a)), lambda n: n >= 1, what="acknowledged to A again"
        )
        await _read_once(lab, body)
    finally:
        await lab.close()


def _sent(link: Acp142Link) -> Callable[[], Awaitable[int]]:
    async def probe() -> int:
        return link.counters["sent"]

    return probe
