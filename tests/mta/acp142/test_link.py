"""What the ACP 142 node on UDP takes and refuses, and in what order it sends, on real
sockets (two daemons on loopback, as in :mod:`tests.mta.acp142.test_live`)."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest

from mta.operator.reload import Reloader
from p1.acp142.pdu import AddressPdu, DestinationEntry, encode_pdu, node_id
from p1.mts.precedence import Precedence
from tests.mta.acp142.test_live import HOSTS, make_lab, send_random_text
from tests.support.sites import A, B, eventually

pytestmark = pytest.mark.slow  # two daemons


async def test_bad_datagrams_cost_a_line_each_and_nothing_else(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lab = make_lab(tmp_path)
    await lab.start()
    try:
        caplog.set_level(logging.INFO, logger="aiox400")
        port = lab.b.settings["acp142"]["data_port"]
        from_a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        from_a.bind((HOSTS[A.name], 0))
        stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        stranger.bind(("127.0.0.9", 0))
        good = encode_pdu(
            AddressPdu(
                priority=1,
                source=node_id(HOSTS[A.name]),
                message_id=7,
                expiry=2_000_000_000,
                total=1,
                destinations=(DestinationEntry(node_id(HOSTS[B.name]), 1),),
            )
        )
        broken = bytearray(good)
        broken[-1] ^= 0xFF
        for _ in range(50):
            from_a.sendto(bytes(broken), (HOSTS[B.name], port))  # a bad checksum
            from_a.sendto(b"\x00\x05garbage", (HOSTS[B.name], port))  # a bad length
            stranger.sendto(good, (HOSTS[B.name], port))
        link = lab.b.running.acp142
        assert link is not None

        async def counted() -> tuple[int, int]:
            return link.counters["bad"], link.counters["strangers"]

        await eventually(counted, lambda n: n == (100, 50), what="every datagram judged")
        lines = [r for r in caplog.records if "acp142" in r.getMessage()]
        assert not [r for r in caplog.records if r.exc_info], "a traceback"
        checksum = [r for r in lines if "checksum" in r.getMessage()]
        strangers = [r for r in lines if "127.0.0.9" in r.getMessage()]
        assert len(checksum) == 1 and len(strangers) == 1, [r.getMessage() for r in lines]
        # The site still works.
        sender, recipient = lab.a.address("Smith"), lab.b.address("Jones")
        await lab.a.send(sender, recipient, Precedence.ROUTINE)
        await eventually(lambda: lab.b.inbox(recipient), lambda got: len(got) == 1, what="at B")
    finally:
        await lab.close()


async def test_flash_overtakes_a_routine_message_already_on_the_link(tmp_path: Path) -> None:
    lab = make_lab(tmp_path)
    lab.a.settings["acp142"]["rate"] = 400_000  # the routine message takes about 4 s
    await lab.start()
    try:
        sender, recipient = lab.a.address("Smith"), lab.b.address("Jones")
        await send_random_text(lab, tmp_path, subject="routine")
        link = lab.a.running.acp142
        assert link is not None

        async def sent() -> int:
            return link.counters["sent"]

        await eventually(sent, lambda n: n >= 10, what="the routine message on its way")
        await lab.a.send(sender, recipient, Precedence.FLASH, subject="flash")
        inbox = await eventually(
            lambda: lab.b.inbox(recipient), lambda got: len(got) == 2, what="both at B"
        )
        delivered = sorted(inbox, key=lambda m: m["id"])
        assert [m["subject"] for m in delivered] == ["flash", "routine"], delivered
    finally:
        await lab.close()


async def test_a_reload_adding_an_acp142_peer_without_the_node_is_refused(
    tmp_path: Path,
) -> None:
    lab = make_lab(tmp_path)
    del lab.a.settings["acp142"]
    lab.a.settings["peers"] = []
    await lab.start()
    try:
        b_peer = make_lab(tmp_path / "other").a.settings["peers"][0]
        lab.a.settings["peers"] = [b_peer]
        lab.a.settings["acp142"] = {"address": HOSTS[A.name]}
        lab.a.write()
        reloaded = Reloader(lab.a.running)()
        assert reloaded.error is not None and "[acp142]" in reloaded.error, reloaded
        assert lab.a.running.runners == []  # as it was
    finally:
        await lab.close()
