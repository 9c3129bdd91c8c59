"""A slot's supervisor (mta.channels): what it counts as waiting when it sizes the slot."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest

from config.loader import load_config
from mta import channels
from mta.channels import ChannelContext, SlotRunner
from p1.precedence import Precedence

EXAMPLE = Path(__file__).resolve().parents[2] / "config" / "examples" / "site-a.toml"


def routine_runner() -> SlotRunner:
    config = load_config(EXAMPLE)
    peer = config.peers[0]
    (slot,) = [s for s in peer.slots if Precedence.ROUTINE in s.precedences]
    assert (slot.max_connections, slot.backlog_threshold) == (2, 20)
    context = ChannelContext(db=cast(Any, None), units=cast(Any, None), config=config)
    return SlotRunner(context, peer, slot)


async def supervised(runner: SlotRunner, queued: int, in_window: int) -> tuple[list[int], int]:
    """One look of the supervisor with ``queued`` messages due in the queue and
    ``in_window`` claimed by its first connection: the connections it starts, and the
    backlog it shows."""
    started: list[int] = []

    async def read_backlog() -> int:
        return queued

    first = channels._Connection(0, state="transferring", unsent=in_window)
    runner._connections[0] = first
    busy = asyncio.create_task(asyncio.sleep(3600))  # the first connection's task
    runner._workers[0] = busy
    runner._read_backlog = read_backlog  # type: ignore[method-assign]
    runner._start_worker = started.append  # type: ignore[method-assign,assignment]
    supervisor = asyncio.create_task(runner._supervise())
    await asyncio.sleep(0.01)
    for task in (supervisor, busy):
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    return started, runner.snapshot().backlog


async def test_messages_claimed_into_a_window_count_as_waiting() -> None:
    # 6 due in the queue and 15 claimed behind the transfer in progress: 21 wait.
    assert await supervised(routine_runner(), queued=6, in_window=15) == ([1], 21)


async def test_below_the_threshold_no_extra_connection_opens() -> None:
    assert await supervised(routine_runner(), queued=6, in_window=13) == ([], 19)
