"""Recovery live (X.228): a 1 MB message over a connection cut twice mid-transfer.

Site A's routine slot reaches site B through a TCP proxy in the test that counts the
octets A sends and cuts (resets) the connection after a set number of them, twice.  With
a ``checkpoint_size`` on the slot, each connection lost goes on from the last confirmed
checkpoint on the next one (RT-OPEN recover, S-ACTIVITY-RESUME); without one, each
attempt sends the message again from its first octet.  Either way B delivers it once,
and A sends fewer octets with recovery than without (an ordering, not a time).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from p1.mts.envelope import Message, decode_mts_apdu
from tests.support.sites import Lab, eventually

ROUTINE_SLOT = 3
"""The lab's routine slot (LAB_SLOTS): on demand, the one the message travels on."""
CUTS = (400_000, 400_000)
"""Octets from A after which the proxy cuts the first and the second connection."""


@dataclass
class CuttingProxy:
    """Forwards each connection to ``upstream``; the n-th is reset after ``cuts[n]``
    octets from the client (the ones after the last cut are left alone).  ``half_open``:
    only the client's side is reset; the upstream side stays open, silent, as a cut link
    leaves a receiver that has not noticed it yet."""

    upstream: int
    cuts: tuple[int, ...]
    half_open: bool = False
    sent: list[int] = field(default_factory=list)
    """Octets the client sent on each connection, in order."""
    server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.server is not None:
            await self.server.wait_closed()

    @property
    def total(self) -> int:
        return sum(self.sent)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # (cancelled by close, as the streams' own tasks are not)
        task.add_done_callback(self._tasks.discard)
        number = len(self.sent)
        self.sent.append(0)
        limit = self.cuts[number] if number < len(self.cuts) else None
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        back = asyncio.create_task(self._back(up_reader, writer))
        self._tasks.add(back)
        back.add_done_callback(self._tasks.discard)
        try:
            await self._forth(number, limit, reader, up_writer)
            if self.half_open and limit is not None:
                back.cancel()
                writer.transport.abort()
                await asyncio.Event().wait()  # (until the proxy closes)
        finally:
            back.cancel()
            for transport in (writer.transport, up_writer.transport):
                transport.abort()  # a reset, both ways: the link is gone

    async def _forth(
        self,
        number: int,
        limit: int | None,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        while True:
            data = await reader.read(65536)
            if not data:
                return
            if limit is not None and self.sent[number] + len(data) >= limit:
                data = data[: limit - self.sent[number]]
                self.sent[number] += len(data)
                writer.write(data)
                with contextlib.suppress(ConnectionError):
                    await writer.drain()
                return
            self.sent[number] += len(data)
            writer.write(data)
            await writer.drain()

    async def _back(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()


async def proxied_lab(directory: Path, *, half_open: bool = False) -> tuple[Lab, CuttingProxy]:
    """A lab whose A reaches B's routine listener through a proxy cutting twice."""
    lab = Lab.create(directory)
    slot = lab.a.settings["peers"][0]["slots"][ROUTINE_SLOT]
    proxy = CuttingProxy(upstream=slot["port"], cuts=CUTS, half_open=half_open)
    slot["port"] = await proxy.start()
    return lab, proxy


async def send_a_megabyte(lab: Lab) -> str:
    """1 MB from Smith at A to Jones at B, routine; its MTS identifier once B has it,
    delivered once and whole."""
    smith, jones = lab.a.address("Smith"), lab.b.address("Jones")
    argv = ["send", "--socket", str(lab.a.socket), "--from", smith, "--to", jones]
    code, out, err = await lab.a.x400(*argv, "--subject", "big", "--size", "1M")
    assert code == 0, err
    identifier = out.strip()
    (entry,) = await eventually(
        lambda: lab.b.inbox(jones), lambda found: len(found) >= 1, what="1 MB at B"
    )
    _, apdu = await lab.b.read(jones, entry["id"])
    message = decode_mts_apdu(apdu)
    assert isinstance(message, Message)
    assert message.envelope.mts_identifier.text == identifier
    assert len(message.content) > 1024 * 1024 and entry["size"] == len(apdu)
    return identifier


async def octets_for_a_megabyte(
    directory: Path, *, checkpoint_size: int, half_open: bool = False
) -> int:
    """Send the megabyte on a slot of ``checkpoint_size`` (0: none) whose connection is
    cut twice; the octets A sent, once B delivered it, once."""
    lab, proxy = await proxied_lab(directory, half_open=half_open)
    try:
        lab.a.settings["peers"][0]["slots"][ROUTINE_SLOT]["checkpoint_size"] = checkpoint_size
        await lab.start()
        await send_a_megabyte(lab)
        await eventually(
            lambda: lab.a.api({"op": "queue"}),
            lambda answer: all(c["state"] == "transferred" for c in answer["counts"]),
            what="A's queue done",
        )
        assert len(await lab.b.inbox(lab.b.address("Jones"))) == 1
        assert proxy.sent[: len(CUTS)] == list(CUTS)  # both cuts happened
        return proxy.total
    finally:
        await proxy.close()
        await lab.close()


async def test_a_megabyte_cut_twice_arrives_once_and_recovery_sends_less(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    resumed = await octets_for_a_megabyte(tmp_path / "resumed", checkpoint_size=16)
    restarted = await octets_for_a_megabyte(tmp_path / "restarted", checkpoint_size=0)
    record_property("octets sent, with recovery", resumed)
    record_property("octets sent, without recovery", restarted)
    print(f"1 MB cut twice: {resumed} octets sent with recovery, {restarted} without")
    assert resumed < restarted
    # Without recovery the whole message went once more after the cuts; with it, what
    # followed the last confirmed checkpoint only.
    assert restarted > sum(CUTS) + 1024 * 1024 > resumed


async def test_a_receiver_that_has_not_seen_the_cut_hands_the_transfer_over(
    tmp_path: Path,
) -> None:
    # B's end of each cut connection stays open: the recovery that names it ends it, as
    # lost, and goes on from what it had.
    resumed = await octets_for_a_megabyte(tmp_path, checkpoint_size=16, half_open=True)
    assert resumed < sum(CUTS) + 1024 * 1024
