"""The turn in two-way alternate mode on the wire, refereed by tshark (X.228 7.6, 7.7).

A responder on loopback accepts mta-a/a-pw; mta-a binds proposing dialogueMode twa (X.228
RTORQ), transfers a message, gives the turn (RT-TURN-GIVE: S-CONTROL-GIVE, GTC answered by
GTA), asks for it back (RT-TURN-PLEASE: S-TOKEN-PLEASE, a PT carrying an RTTP), which the
responder gives at once, transfers again and releases.  dumpcap captures the connection
and tshark reads it: no decode problems, dialogueMode twa in the bind, and the session
SPDUs of the turn in order, each from the side that sends it.
"""

from __future__ import annotations

import asyncio
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from benchmarks import samples
from mta import link as links
from mta import net
from p1.association.connection import AssociationSettings
from p1.osi.rtse import DialogueMode
from p1.osi.x225.spdu import Kind
from tests.support import tshark

pytestmark = pytest.mark.slow  # dumpcap, then tshark

LOOPBACK = "127.0.0.1"
ARGUMENT, RESULT, Store = tshark.ARGUMENT, tshark.RESULT, tshark.Store
TIMEOUT = tshark.TIMEOUT  # seconds; a bound against a hang (and against a deadlock)
PRIORITY = 3
"""The RTTP priority of the RT-TURN-PLEASE."""
MESSAGES = (samples.message_bytes(1024), samples.message_bytes(2048))


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionFrame:
    """The X.225 SPDU types (ses.type) and RTTP priorities tshark read in one frame."""

    to_server: bool
    types: tuple[int, ...]
    priorities: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """One capture of the exchange, decoded, and what the responder stored."""

    pcap: Path
    ports: str
    stored: list[bytes]
    decoded: tshark.Decoded
    sessions: tuple[SessionFrame, ...]


async def exchange(port: int) -> None:
    """Bind twa, transfer, give the turn, ask for it back, transfer, release."""
    settings = AssociationSettings(dialogue_mode=DialogueMode.TWA)
    link, _ = await links.open_link(LOOPBACK, port, ARGUMENT, settings=settings)
    try:
        await link.transfer(MESSAGES[0], timeout=TIMEOUT)
        await link.give_turn()
        await link.take_turn(priority=PRIORITY, timeout=TIMEOUT)
        await link.transfer(MESSAGES[1], timeout=TIMEOUT)
        await link.release(timeout=TIMEOUT)
    finally:
        await link.close()


def session_frames(pcap: Path, ports: str, port: int) -> tuple[SessionFrame, ...]:
    """Every frame holding SPDUs, in order (decode() keeps only X.400 fields)."""
    argv = ["tshark", "-n", "-r", str(pcap), "-o", f"tpkt.tcp.port:{ports}", "-Y", "ses"]
    argv += ["-T", "fields", "-e", "tcp.dstport", "-e", "ses.type", "-e", "rtse.rttp_apdu"]
    argv += ["-E", "occurrence=a", "-E", "aggregator=,"]
    done = subprocess.run(argv, capture_output=True, timeout=TIMEOUT, check=False)
    if done.returncode != 0:
        raise tshark.TsharkError(f"{' '.join(argv)}: {done.stderr.decode(errors='replace')}")
    frames = []
    for line in done.stdout.decode().splitlines():
        dst, types, priorities = line.split("\t")
        frames.append(
            SessionFrame(
                to_server=int(dst) == port,
                types=tuple(int(t) for t in types.split(",")),
                priorities=tuple(int(p) for p in priorities.split(",") if p),
            )
        )
    return tuple(frames)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tshark.require_tshark()
    pcap = tmp_path_factory.mktemp("turn") / "turn.pcap"
    store = Store()
    server = await net.start_marked_server(store.serve, LOOPBACK, 0, dscp=0)
    port = net.bound_port(server)
    try:
        async with tshark.LoopbackCapture(pcap, str(port)), asyncio.timeout(TIMEOUT):
            await exchange(port)
            await asyncio.gather(*store.served)  # released: its packets precede stop()
    finally:
        server.close()
        await server.wait_closed()
    return Run(
        pcap=pcap,
        ports=str(port),
        stored=store.stored,
        decoded=tshark.decode(pcap, str(port)),
        sessions=session_frames(pcap, str(port), port),
    )


def test_tshark_finds_no_decode_problem(run: Run) -> None:
    assert run.decoded.problems == ()


def test_both_messages_are_stored(run: Run) -> None:
    assert run.stored == list(MESSAGES)


def test_the_bind_proposes_two_way_alternate(run: Run) -> None:
    (number,) = tshark.matching(run.pcap, run.ports, "rtse.dialogueMode == 1")  # twa
    assert "p1.MTABindArgument" in run.decoded.frame(number).fields


def test_the_turn_goes_and_comes_back_on_request(run: Run) -> None:
    # Lone SPDUs: a PT also heads a concatenated MAA (X.225 basic concatenation).
    lone = ((Kind.PT.si,), (Kind.GTC.si,), (Kind.GTA.si,))
    turn = [(frame.to_server, frame.types[0]) for frame in run.sessions if frame.types in lone]
    assert turn == [
        (True, Kind.GTC.si),  # RT-TURN-GIVE by mta-a
        (False, Kind.GTA.si),
        (True, Kind.PT.si),  # RT-TURN-PLEASE by mta-a
        (False, Kind.GTC.si),  # RT-TURN-GIVE by the responder, at once
        (True, Kind.GTA.si),
    ]
    (please,) = (frame for frame in run.sessions if frame.types == (Kind.PT.si,))
    assert please.priorities == (PRIORITY,)
