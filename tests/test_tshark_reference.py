"""tshark's reading of the reference captures, and of the same TPKTs sent over loopback.

The reference captures (a real X.400 product's MTA bind, accepted and refused) must decode
without a problem and show the bind names and the DSCP marks as recorded.  The loopback tests
prove the harness end to end: the success capture's TPKTs, replayed between two sockets marked
CS3 and captured with dumpcap, decode to the same bind with DSCP 24 both ways; the same replay
with one damaged octet in the bind shows a problem, so "no problems" means something.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.support import golden, tshark
from tests.support.tshark import Direction

SUCCESS = "x400-ping-success"
REFUSE = "x400-ping-refuse"
REFERENCE_PORTS = "102"
INITIATOR = "percival.smhs.co.uk"
RESPONDER = "guinevere.smhs.co.uk"
ID_AC_MTS_TRANSFER = "2.6.0.1.6"
# The presentation contexts the product proposes: ACSE, id-as-mta-rtse, id-as-mtse.
CONTEXTS = ("2.2.1.0.1", "2.6.0.2.12", "2.6.0.2.7")
# X.411: MTABindError ::= INTEGER {busy(0), authentication-error(2), ...}; tshark -T fields
# gives the number, its display filters and Info column the name.
AUTHENTICATION_ERROR = "2"
CS3 = 24
TOS_CS3 = CS3 << 2  # IP_TOS holds the DSCP above the two ECN bits
LOOPBACK = "127.0.0.1"

Script = list[tuple[bool, bytes]]  # (sent by the initiator, one TPKT), in capture order


def _reference_pcap(capture: str) -> Path:
    """``<shared>/reference/pcaps/<capture>.pcap``, located and skipped as golden.py does."""
    path = golden.pcaps_dir() / f"{capture}.pcap"
    if not path.is_file():
        why = f"reference capture {path} not found (set AIOX400_SHARED to the shared folder)"
        if os.environ.get("AIOX400_REQUIRE_SHARED"):
            pytest.fail(why)
        pytest.skip(why)
    return path


def _decoded(capture: str) -> tshark.Decoded:
    tshark.require_tshark()
    return tshark.decode(_reference_pcap(capture), REFERENCE_PORTS)


@pytest.fixture(scope="module")
def success() -> tshark.Decoded:
    return _decoded(SUCCESS)


@pytest.fixture(scope="module")
def refuse() -> tshark.Decoded:
    return _decoded(REFUSE)


# --- ports ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ports", "expected"),
    [
        ("102", "tcp port 102"),
        ("102,5000-5003", "tcp port 102 or tcp portrange 5000-5003"),
        (" 5001 , 6000-6000", "tcp port 5001 or tcp port 6000"),
    ],
)
def test_bpf(ports: str, expected: str) -> None:
    assert tshark.bpf(ports) == expected


@pytest.mark.parametrize(
    ("port", "expected"), [(102, True), (101, False), (5000, True), (5003, True), (5004, False)]
)
def test_is_server_port(port: int, expected: bool) -> None:
    assert tshark.is_server_port(port, "102,5000-5003") is expected


# --- reference captures ---------------------------------------------------------------


@pytest.mark.slow
def test_success_capture_has_no_problems_and_decodes_the_bind(success: tshark.Decoded) -> None:
    assert success.problems == ()
    assert success.values("p1.MTABindArgument") and success.values("p1.MTABindResult")
    assert success.values("acse.aSO_context_name") == (ID_AC_MTS_TRANSFER, ID_AC_MTS_TRANSFER)
    assert success.values("pres.abstract_syntax_name") == CONTEXTS


@pytest.mark.slow
def test_success_capture_bind_names(success: tshark.Decoded) -> None:
    assert success.values("p1.authenticated.initiator-name") == (INITIATOR,)
    assert success.values("p1.authenticated.responder-name") == (RESPONDER,)
    (argument,) = (f for f in success.frames if "p1.MTABindArgument" in f.fields)
    (result,) = (f for f in success.frames if "p1.MTABindResult" in f.fields)
    assert (argument.dst_port, argument.protocol) == (102, "P1")
    assert (result.src_port, result.protocol) == (102, "P1")


@pytest.mark.slow
def test_refuse_capture_has_no_problems(refuse: tshark.Decoded) -> None:
    assert refuse.problems == ()
    assert refuse.values("p1.authenticated.initiator-name") == (INITIATOR,)
    assert refuse.values("p1.MTABindResult") == ()


@pytest.mark.slow
def test_refuse_capture_shows_an_authentication_error(refuse: tshark.Decoded) -> None:
    assert refuse.values("p1.MTABindError") == (AUTHENTICATION_ERROR,)
    (error,) = (f for f in refuse.frames if "p1.MTABindError" in f.fields)
    assert error.src_port == 102
    assert error.info == "Bind-Error (authentication-error)"
    named = 'p1.MTABindError == "authentication-error"'
    assert tshark.matching(_reference_pcap(REFUSE), REFERENCE_PORTS, named) == (error.number,)


@pytest.mark.slow
@pytest.mark.parametrize("capture", [SUCCESS, REFUSE])
def test_reference_dscp_per_port_and_direction(capture: str) -> None:
    assert _decoded(capture).dscp_by_port() == {
        (102, Direction.TO_SERVER): {0},
        (102, Direction.TO_CLIENT): {0},
    }


# --- the harness end to end over loopback ---------------------------------------------


def _script(records: list[dict[str, Any]]) -> Script:
    initiator_port = next(r["src_port"] for r in records if r.get("cotp") == "CR")
    return [(r["src_port"] == initiator_port, bytes.fromhex(r["hex"])) for r in records]


async def _play(
    script: Script, stream: tuple[asyncio.StreamReader, asyncio.StreamWriter], *, initiator: bool
) -> None:
    """Send our side's TPKTs and expect the peer's, in the capture's order."""
    reader, writer = stream
    for from_initiator, tpkt in script:
        if from_initiator == initiator:
            writer.write(tpkt)
            await writer.drain()
        else:
            assert await reader.readexactly(len(tpkt)) == tpkt


async def _respond(listener: socket.socket, script: Script) -> None:
    connection, _ = await asyncio.get_running_loop().sock_accept(listener)
    reader, writer = await asyncio.open_connection(sock=connection)
    await _play(script, (reader, writer), initiator=False)
    assert await reader.read() == b""  # the initiator disconnects first
    writer.close()
    await writer.wait_closed()


async def _initiate(port: int, script: Script) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, TOS_CS3)  # before connect: the SYN too
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (LOOPBACK, port))
    reader, writer = await asyncio.open_connection(sock=sock)
    await _play(script, (reader, writer), initiator=True)
    writer.close()
    await writer.wait_closed()


async def _replay(script: Script, pcap: Path) -> tshark.Decoded:
    """Capture ``script`` played over loopback between two CS3 sockets, and decode it."""
    tshark.require_tshark()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        # Marked before it accepts, so the accepted socket (SYN-ACK included) inherits CS3.
        listener.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, TOS_CS3)
        listener.bind((LOOPBACK, 0))
        listener.listen(1)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        async with (
            tshark.LoopbackCapture(pcap, str(port)),
            asyncio.timeout(tshark.TIMEOUT),
            asyncio.TaskGroup() as group,
        ):
            group.create_task(_respond(listener, script))
            group.create_task(_initiate(port, script))
    return tshark.decode(pcap, str(port))


@pytest.mark.slow
async def test_loopback_replay_decodes_the_bind_with_cs3(tmp_path: Path) -> None:
    decoded = await _replay(_script(golden.load_tpkts(SUCCESS)), tmp_path / "replay.pcap")
    assert decoded.problems == ()
    assert decoded.values("p1.authenticated.initiator-name") == (INITIATOR,)
    assert decoded.values("p1.authenticated.responder-name") == (RESPONDER,)
    assert decoded.values("pres.abstract_syntax_name") == CONTEXTS
    (port,) = {port for port, _ in decoded.dscp_by_port()}
    assert decoded.dscp_by_port() == {
        (port, Direction.TO_SERVER): {CS3},
        (port, Direction.TO_CLIENT): {CS3},
    }


def _damaged(script: Script) -> Script:
    """The bind argument's initiator-name tag [0] turned into an unknown [5] (same length)."""
    name = b"\x80\x13" + INITIATOR.encode()
    damaged = [(initiator, tpkt.replace(name, b"\x85" + name[1:])) for initiator, tpkt in script]
    assert sum(a != b for a, b in zip(script, damaged, strict=True)) == 1
    return damaged


@pytest.mark.slow
async def test_loopback_replay_of_a_damaged_bind_shows_a_problem(tmp_path: Path) -> None:
    decoded = await _replay(_damaged(_script(golden.load_tpkts(SUCCESS))), tmp_path / "bad.pcap")
    (bind,) = (f for f in decoded.frames if "p1.MTABindArgument" in f.fields)
    assert [p.number for p in decoded.problems] == [bind.number]
    assert decoded.values("p1.authenticated.initiator-name") == ()
