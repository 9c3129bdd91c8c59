"""What bound peers may make the daemon hold together (``[limits] max_inbound_buffer``):
a live daemon, ten bound associations each streaming a TSDU that does not end yet, its
peak resident memory, and a transfer served afterwards."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from p1.osi.tpkt import encode_tpkt
from tests.fuzz.corpus import ours
from tests.fuzz.live import Daemon, _delivered, _valid_transfer

MIB = 1 << 20
STREAMERS = 10
STREAM = 30 * MIB
"""Octets of the TSDU each streamer sends (all together: 300 MiB held without a bound)."""
BUFFER = 64 * MIB
"""The daemon's max_inbound_buffer (the least its stack limits below allow)."""
MAX_GROWTH = 160 * MIB
"""Peak resident memory over that after the warm-up: the buffer, the copies a PDU costs
on its way, and a wide margin (without the bound: some 300 MiB)."""
_DT = encode_tpkt(b"\x02\xf0\x00" + bytes(2045))
"""A DT TPDU of 2,048 octets without its end-of-TSDU mark."""
_BURST = _DT * 128


class _BufferedDaemon(Daemon):
    """The fuzz harness's daemon with a small stack and a small inbound buffer."""

    def _settings(self) -> dict[str, object]:
        settings = super()._settings()
        limits = settings["limits"]
        assert isinstance(limits, dict)
        limits.update(max_tsdu_size=32 * MIB, max_message_size=32 * MIB, max_inbound_buffer=BUFFER)
        return settings


def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


async def _stream(port: int, streamed: asyncio.Barrier) -> bool:
    """Bind as the fuzz peer (our own recorded CR and CN), send STREAM octets of one TSDU,
    hold it until every streamer is done; whether the daemon closed the connection."""
    record = ours()[0]  # (the monologue: its first writes are the CR and the CN + bind)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    closed = False
    try:
        for write in record.client[:2]:
            writer.write(write)
            await writer.drain()
            assert await asyncio.wait_for(reader.read(1 << 16), 20), "no answer"
        sent = 0
        while sent < STREAM:
            writer.write(_BURST)
            await writer.drain()
            sent += len(_BURST)
    except (ConnectionError, AssertionError, TimeoutError):
        closed = True
    await streamed.wait()
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return closed


@pytest.mark.slow
async def test_bound_peers_streaming_large_pdus_are_held_to_the_inbound_buffer(
    tmp_path: Path,
) -> None:
    daemon = _BufferedDaemon(tmp_path / "mta")
    await daemon.start()
    try:
        await _valid_transfer(daemon, "warm-up")
        before = _kib(daemon.pid, "VmHWM")
        streamed = asyncio.Barrier(STREAMERS + 1)
        streamers = [asyncio.create_task(_stream(daemon.port, streamed)) for _ in range(STREAMERS)]
        await streamed.wait()  # every streamer sent its TSDU, or was refused, and holds on
        peak = _kib(daemon.pid, "VmHWM")  # (the high-water mark: no sampling needed)
        closed = [await task for task in streamers]
        await _valid_transfer(daemon, "after-the-stream")
        assert await _delivered(daemon, "after-the-stream")
    finally:
        await daemon.stop()
    log = daemon.log.read_text()
    growth = (peak - before) * 1024
    assert growth < MAX_GROWTH, f"peak {peak} KiB after {before} KiB"
    assert any(closed), "no streamer was refused"
    assert "Traceback" not in log
    assert log.count("max_inbound_buffer is spent") == 1, log[-3000:]
