"""PP 6.0 refusing an MTA-bind with a bare INTEGER as RTORJ user data (X.411 12.1.1.3).

The captures' pp/03-ping-wrong-password holds PP (ISODE) refusing our bind for a wrong
password: RTORJ { userDataRJ [1] INTEGER 2 }, the MTABindError authentication-error
without the ``[18]`` tag of the X.410 BIND macro.  PP's own answers (CC, then RF) are fed
to our initiator association in memory, then served over loopback TCP to ``x400ctl
ping``, in process and as the installed command: each reads authentication-error.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from client import x400ctl
from client.bind import BindRefusedError
from p1.association.connection import BindRefused, P1Association
from p1.association.mtabind import MTABindArgument, MTABindError
from p1.osi import Role
from tests.support import golden

ROOT = Path(__file__).resolve().parents[3]
CAPTURE = "pp/03-ping-wrong-password"
DEADLINE = 30.0
"""Seconds a step may take before the test fails instead of hanging."""
TPKT_HEADER = 4  # RFC 1006: version, reserved, two length octets counting the header


def _pp_answers() -> list[bytes]:
    """PP's TPKTs of the capture, in order: the CC, then the RF."""
    records = golden.load_tpkts(CAPTURE)
    initiator = next(r["src_port"] for r in records if r.get("cotp") == "CR")
    return [bytes.fromhex(r["hex"]) for r in records if r["src_port"] != initiator]


@pytest.mark.parametrize("bytewise", [False, True], ids=["whole", "bytewise"])
def test_initiator_reads_pps_refusal_as_authentication_error(bytewise: bool) -> None:
    cc, rf = _pp_answers()
    ours = P1Association(Role.INITIATOR)
    ours.send_bind(MTABindArgument(initiator_name="aiox", password="wrong"))
    ours.data_to_send()
    events = []
    for tpkt in (cc, rf):
        pieces = [tpkt[i : i + 1] for i in range(len(tpkt))] if bytewise else [tpkt]
        for piece in pieces:
            events.extend(ours.receive_data(piece))
        ours.data_to_send()
    error = MTABindError.AUTHENTICATION_ERROR
    assert events == [BindRefused(error=error, why="authentication-error")]
    assert ours.closed


async def _read_tpkt(reader: asyncio.StreamReader) -> bytes:
    header = await reader.readexactly(TPKT_HEADER)
    return header + await reader.readexactly(int.from_bytes(header[2:4], "big") - TPKT_HEADER)


@contextlib.asynccontextmanager
async def _pp_refusing() -> AsyncIterator[int]:
    """A server on 127.0.0.1 that answers a caller's CR and CN TPKTs with PP's CC and RF
    from the capture, then closes; yields its port."""
    answers = _pp_answers()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            for answer in answers:
                await asyncio.wait_for(_read_tpkt(reader), DEADLINE)
                writer.write(answer)
                await writer.drain()
        finally:
            writer.close()
            await writer.wait_closed()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def test_ping_reads_pps_refusal_as_authentication_error() -> None:
    async with _pp_refusing() as port:
        with pytest.raises(BindRefusedError) as refused:
            await asyncio.to_thread(
                x400ctl.ping,
                "127.0.0.1",
                port,
                mta_name="aiox",
                password="wrong",
                dscp=0,
                timeout=DEADLINE,
            )
    assert refused.value.error is MTABindError.AUTHENTICATION_ERROR
    assert str(refused.value) == "authentication-error"


@pytest.mark.slow
async def test_the_ping_command_prints_authentication_error(tmp_path: Path) -> None:
    password = tmp_path / "password"
    password.write_text("wrong\n")
    password.chmod(0o600)
    async with _pp_refusing() as port:
        command = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "client.x400ctl", "ping", "127.0.0.1", str(port)),
            *("--mta-name", "aiox", "--password-file", str(password)),
            *("--timeout", str(DEADLINE)),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(command.communicate(), DEADLINE)
    assert command.returncode == x400ctl.EXIT_REFUSED, err
    assert out == b""
    where = f"127.0.0.1 port {port}"
    assert err.decode() == f"x400ctl ping: {where} refused the bind: authentication-error\n"
