"""Interoperability with a TLS implementation that is not ours: OpenSSL's command line.

``openssl s_client`` against site B's TLS listener: with A's certificate the handshake
verifies both ways and B answers the transport connect inside TLS (a TPKT CC); without a
certificate B ends the handshake (mutual authentication).  Our initiator against
``openssl s_server`` demanding a client certificate: the handshake completes on a socket
still marked with the slot's DSCP, s_server saw A's certificate, and a wrong pin is
refused before anything is sent.

openssl must be installed; with ``AIOX400_REQUIRE_OPENSSL=1`` (CI) its absence fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from config.loader import load_config
from config.tls import fingerprint
from mta import net
from mta.net import ClientTls, TlsError
from p1.association.connection import P1Association
from p1.osi import Role
from tests.mta.inbound.test_limits import A_BINDS, messages
from tests.mta.tls.pki import A_NAME, B_NAME, Pki, secure
from tests.mta.tls.test_refusals import start_b
from tests.support.sites import DEADLINE, Lab

pytestmark = pytest.mark.slow  # external processes

CC = 0xD0  # X.224 13.4: CC TPDU code
EF = 46


def openssl() -> str:
    """The command's path; skips the test when it is missing and not required."""
    command = shutil.which("openssl")
    if command is None:
        if os.environ.get("AIOX400_REQUIRE_OPENSSL", "") not in ("", "0"):
            pytest.fail("openssl is missing and AIOX400_REQUIRE_OPENSSL is set")
        pytest.skip("openssl is not installed")
    return command


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki.create(tmp_path / "pki")


async def s_client(port: int, pki: Pki, *extra: str, data: bytes) -> tuple[bytes, bytes]:
    """Run s_client to B's listener, writing ``data``; its stdout and stderr."""
    process = await asyncio.create_subprocess_exec(
        openssl(),
        "s_client",
        "-connect",
        f"127.0.0.1:{port}",
        "-CAfile",
        str(pki.directory / "ca.pem"),
        "-verify_hostname",
        B_NAME,
        "-verify_return_error",
        "-ign_eof",
        *extra,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None
    process.stdin.write(data)
    await process.stdin.drain()
    with contextlib.suppress(TimeoutError):
        # s_client holds the connection until the peer closes it or time runs out.
        await asyncio.wait_for(process.wait(), 3.0)
    if process.returncode is None:
        process.terminate()
    out, err = await process.communicate()
    return out, err


async def test_s_client_with_a_certificate_gets_a_transport_connect_answered_in_tls(
    lab: Lab, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    port, _ = await start_b(lab, pki)
    initiator = P1Association(Role.INITIATOR)
    initiator.send_bind(A_BINDS)
    cr = initiator.data_to_send()  # a TPKT holding the transport CR
    cert, key = pki.directory / "a.pem", pki.directory / "a.key"
    out, err = await s_client(port, pki, "-quiet", "-cert", str(cert), "-key", str(key), data=cr)
    assert b"verify return:1" in err and b"depth=0 CN = " + B_NAME.encode() in err
    assert out[:2] == b"\x03\x00" and out[5] == CC, out[:16]  # TPKT version 3, a CC
    assert not messages(caplog, "TLS handshake failed")


async def test_s_client_without_a_certificate_is_refused(
    lab: Lab, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    port, _ = await start_b(lab, pki)
    out, err = await s_client(port, pki, "-quiet", data=b"\x03\x00\x00\x07\x02\xf0\x80")
    assert out == b""  # no CC: the CR was never read
    assert b"depth=0 CN = " + B_NAME.encode() in err  # (s_client did reach B's listener)
    [line] = messages(caplog, "TLS handshake failed")
    assert line.endswith("certificate refused (peer did not return a certificate)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def s_server(pki: Pki) -> AsyncIterator[tuple[int, asyncio.subprocess.Process]]:
    """s_server as B, demanding a client certificate from the lab CA."""
    port = _free_port()
    process = await asyncio.create_subprocess_exec(
        openssl(),
        "s_server",
        "-accept",
        f"127.0.0.1:{port}",
        "-cert",
        str(pki.directory / "b.pem"),
        "-key",
        str(pki.directory / "b.key"),
        "-CAfile",
        str(pki.directory / "ca.pem"),
        "-Verify",
        "1",
        "-verify_return_error",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), DEADLINE)
        while b"ACCEPT" not in line:
            line = await asyncio.wait_for(process.stdout.readline(), DEADLINE)
        yield port, process
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()


def a_peer(lab: Lab, pki: Pki, **settings: object) -> ClientTls:
    """How site A, as configured, opens TLS to B (its [[peers]] entry through the loader)."""
    secure(lab, pki)
    lab.a.settings["peers"][0].update(settings)
    return ClientTls.for_peer(load_config(lab.a.write()).peers[0])


async def test_our_initiator_to_s_server_presents_its_certificate_and_keeps_dscp(
    lab: Lab, pki: Pki
) -> None:
    tls = a_peer(lab, pki)
    async with s_server(pki) as (port, process):
        _, writer = await net.open_marked_connection(
            "127.0.0.1", port, dscp=EF, timeout=DEADLINE, tls=tls
        )
        writer.write(b"\x03\x00\x00\x07\x02\xf0\x80")
        await writer.drain()
        assert net.socket_dscp(writer.get_extra_info("socket")) == EF
        assert process.stdout is not None
        seen = b""
        while b"\x03\x00" not in seen:  # s_server echoes what it reads, after its notes
            seen += await asyncio.wait_for(process.stdout.read(4096), DEADLINE)
        writer.close()
    assert b"depth=0 CN = " + A_NAME.encode() in seen  # it verified A's certificate


async def test_our_initiator_refuses_s_server_when_the_pin_is_not_its_certificate(
    lab: Lab, pki: Pki
) -> None:
    tls = a_peer(lab, pki, fingerprint=fingerprint(pki.a.der))
    async with s_server(pki) as (port, _):
        with pytest.raises(TlsError, match="is not the pinned one"):
            await net.open_marked_connection("127.0.0.1", port, dscp=0, timeout=DEADLINE, tls=tls)
