"""Interoperability with stunnel, a TLS implementation that is not ours, carrying real P1.

- Our TLS initiator to an stunnel TLS server (client certificate required) in front of a
  plaintext MTA: site A's slot connects to stunnel in TLS, stunnel hands the plain TPKT
  stream to B's plain listener, and A's message is delivered at B.
- An stunnel TLS client in front of a plaintext initiator, to our TLS listener: A's slot
  connects in clear to stunnel, which opens TLS to B's listener with A's certificate; B
  proves MTA-A by that certificate at the bind and delivers the message.

stunnel must be installed; with ``AIOX400_REQUIRE_STUNNEL=1`` (CI) its absence fails.
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

from p1.mts.precedence import Precedence
from tests.mta.tls.pki import A_NAME, B_NAME, Pki
from tests.support.sites import DEADLINE, Lab, SlotSpec, eventually

pytestmark = pytest.mark.slow  # two daemons and stunnel

ONE_SLOT = (SlotSpec(tuple(p.label for p in Precedence), "CS2"),)


def stunnel() -> str:
    command = shutil.which("stunnel4") or shutil.which("stunnel")
    if command is None:
        if os.environ.get("AIOX400_REQUIRE_STUNNEL", "") not in ("", "0"):
            pytest.fail("stunnel is missing and AIOX400_REQUIRE_STUNNEL is set")
        pytest.skip("stunnel is not installed")
    return command


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _listening(port: int) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if loop.time() > deadline:
                pytest.fail(f"stunnel did not listen on {port}")
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return


@contextlib.asynccontextmanager
async def running_stunnel(directory: Path, service: str) -> AsyncIterator[int]:
    """stunnel with ``service`` (its [p1] section, accept and connect included); the port
    it accepts on."""
    accept = _free_port()
    conf = directory / "stunnel.conf"
    conf.write_text(
        f"foreground = yes\npid =\ndebug = 4\n[p1]\naccept = 127.0.0.1:{accept}\n{service}"
    )
    process = await asyncio.create_subprocess_exec(
        stunnel(), str(conf), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        await _listening(accept)
        yield accept
    finally:
        process.terminate()
        await process.wait()


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    sites = Lab.create(tmp_path / "lab", slots=ONE_SLOT)
    try:
        yield sites
    finally:
        await sites.close()


async def _deliver(lab: Lab) -> None:
    await lab.start()
    bob = lab.b.address("Bob")
    await lab.a.send(lab.a.address("Smith"), bob, Precedence.IMMEDIATE)
    await eventually(lambda: lab.b.inbox(bob), lambda found: len(found) == 1, what="delivery")


async def test_our_tls_initiator_through_an_stunnel_server_to_a_plain_mta(
    lab: Lab, tmp_path: Path
) -> None:
    pki = Pki.create(tmp_path / "pki")
    d = pki.directory
    b_plain = lab.b.settings["listeners"][0]["port"]
    server = (
        f"connect = 127.0.0.1:{b_plain}\ncert = {d}/b.pem\nkey = {d}/b.key\n"
        f"CAfile = {d}/ca.pem\nverifyChain = yes\nrequireCert = yes\n"
    )
    async with running_stunnel(tmp_path, server) as port:
        peer = lab.a.settings["peers"][0]
        peer |= {"tls": "required", "certificate_name": B_NAME} | pki.files("a")
        peer["slots"][0]["port"] = port
        await _deliver(lab)


async def test_an_stunnel_client_before_a_plain_initiator_to_our_tls_listener(
    lab: Lab, tmp_path: Path
) -> None:
    pki = Pki.create(tmp_path / "pki")
    d = pki.directory
    lab.b.settings["tls"] = pki.files("b")
    lab.b.settings["listeners"][0]["tls"] = "required"
    lab.b.settings["peers"][0] |= {"tls": "required", "certificate_name": A_NAME}
    b_tls = lab.b.settings["listeners"][0]["port"]
    client = (
        f"client = yes\nconnect = 127.0.0.1:{b_tls}\ncert = {d}/a.pem\nkey = {d}/a.key\n"
        f"CAfile = {d}/ca.pem\nverifyChain = yes\ncheckHost = {B_NAME}\n"
    )
    async with running_stunnel(tmp_path, client) as port:
        lab.a.settings["peers"][0]["slots"][0]["port"] = port
        await _deliver(lab)
