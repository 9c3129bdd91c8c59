"""Routine transfers give way to flash work for the same peer (mta.outbound.giveway): a
routine slot's connection starts its next transfer once the peer's flash work has ended,
or once it has waited its hold; a flash slot's transfer is such work, a routine one is
not, and another peer's flash work holds nothing."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

import pytest

from config.loader import load_config
from mta.outbound import channels
from mta.outbound.channels import ChannelContext, SlotRunner
from mta.outbound.giveway import GiveWay
from p1.mts.precedence import Precedence
from store import QueueEntry
from tests.mta.outbound.test_channels import EXAMPLE, FakeLink, Queue, queued

PEER = "MTA-B"
LONG = 3600.0
"""A hold no test waits out."""


async def settle() -> None:
    """Let every task that can run, run."""
    for _ in range(20):
        await asyncio.sleep(0)


@pytest.mark.parametrize("precedence", list(Precedence))
def test_only_flash_and_override_count_as_flash_work(precedence: Precedence) -> None:
    give_way = GiveWay()
    with give_way.during(precedence, [PEER]):
        assert give_way.under_way(PEER) is (precedence >= Precedence.FLASH)
    assert not give_way.under_way(PEER)


async def test_a_wait_ends_when_the_peers_last_flash_work_ends() -> None:
    give_way, events = GiveWay(hold=LONG), []

    async def routine() -> None:
        await give_way.wait(PEER)
        events.append("routine goes")

    with give_way.during(Precedence.FLASH, [PEER]):
        with give_way.during(Precedence.OVERRIDE, [PEER, "MTA-C"]):
            waiter = asyncio.create_task(routine())
            await settle()
        events.append("override done")
        await settle()
        events.append("flash done")
    async with asyncio.timeout(30):
        await waiter
    assert events == ["override done", "flash done", "routine goes"]


async def test_every_waiter_goes_once_the_work_ends_even_if_it_was_cancelled() -> None:
    give_way, events = GiveWay(hold=LONG), []

    async def flash() -> None:
        with give_way.during(Precedence.FLASH, [PEER]):
            await asyncio.Event().wait()

    async def routine(name: str) -> None:
        await give_way.wait(PEER)
        events.append(name)

    work = asyncio.create_task(flash())
    await settle()
    waiters = [asyncio.create_task(routine(name)) for name in ("first", "second")]
    await settle()
    assert events == []
    work.cancel()
    async with asyncio.timeout(30):
        await asyncio.gather(*waiters)
    assert sorted(events) == ["first", "second"]
    assert not give_way.under_way(PEER)


async def test_another_peers_flash_work_holds_nothing() -> None:
    give_way = GiveWay(hold=LONG)
    with give_way.during(Precedence.FLASH, ["MTA-C"]):
        async with asyncio.timeout(30):
            await give_way.wait(PEER)
        assert give_way.under_way("MTA-C")


async def test_a_wait_ends_after_its_hold_while_flash_work_goes_on() -> None:
    give_way = GiveWay(hold=0.01)
    with give_way.during(Precedence.FLASH, [PEER]):
        async with asyncio.timeout(30):
            await give_way.wait(PEER)
        assert give_way.under_way(PEER)


# --- a slot's connection ------------------------------------------------------------------


@dataclass
class WatchingLink(FakeLink):
    """A FakeLink that notes, at each transfer, whether flash work for the peer was under
    way (``seen``)."""

    give_way: GiveWay = field(default_factory=GiveWay)
    seen: list[bool] = field(default_factory=list)

    async def transfer(self, apdu: bytes, *, timeout: float) -> int:
        self.seen.append(self.give_way.under_way(PEER))
        return await super().transfer(apdu, timeout=timeout)


def held_seconds(queue: Queue) -> float:
    """``aiox400_routine_held_seconds_total`` for the peer, 0 if never counted."""
    value = queue.metrics.registry.get_sample_value(
        "aiox400_routine_held_seconds_total", {"peer": PEER}
    )
    return value or 0.0


def at(entry: QueueEntry, precedence: Precedence) -> QueueEntry:
    return dataclasses.replace(entry, precedence=precedence)


def _runner(precedence: Precedence, queue: Queue, give_way: GiveWay) -> SlotRunner:
    config = load_config(EXAMPLE)
    peer = config.peers[0]
    assert peer.name == PEER
    (slot,) = [s for s in peer.slots if precedence in s.precedences]
    context = ChannelContext(queue=queue, metrics=queue.metrics, config=config, give_way=give_way)
    runner = SlotRunner(context, peer, slot)
    runner._backlog = 2
    return runner


async def _serve(runner: SlotRunner, link: WatchingLink) -> None:
    assert not await runner._serve(channels._Connection(0), cast(Any, link))


async def served(
    precedence: Precedence, entry: QueueEntry, give_way: GiveWay
) -> tuple[Queue, WatchingLink]:
    """A connection of the slot carrying ``precedence`` serves ``entry`` until the peer
    ends the association: the queue (its events) and the link (what it saw)."""
    queue = Queue([entry])
    link = WatchingLink(queue.events, queue=queue, give_way=give_way)
    async with asyncio.timeout(30):
        await _serve(_runner(precedence, queue, give_way), link)
    return queue, link


async def test_a_routine_transfer_starts_once_flash_work_for_its_peer_has_ended() -> None:
    give_way = GiveWay(hold=LONG)
    queue = Queue([queued("m1"), queued("m2")])
    link = WatchingLink(queue.events, queue=queue, give_way=give_way)
    runner = _runner(Precedence.ROUTINE, queue, give_way)
    with give_way.during(Precedence.FLASH, [PEER]):
        serving = asyncio.create_task(_serve(runner, link))
        await settle()
        queue.events.append("flash work ends")
    async with asyncio.timeout(30):
        await serving
    assert queue.events[:3] == ["mark -, claim m1,m2", "flash work ends", "m1 confirmed"]
    assert "m2 confirmed" in queue.events
    assert link.seen == [False, False]
    assert held_seconds(queue) > 0  # (m1 waited; m2 did not)


async def test_a_routine_transfer_held_past_its_hold_goes_anyway() -> None:
    give_way = GiveWay(hold=0.01)
    with give_way.during(Precedence.OVERRIDE, [PEER]):
        queue, link = await served(Precedence.ROUTINE, queued("m1"), give_way)
    assert "m1 confirmed" in queue.events
    assert link.seen == [True]


async def test_a_flash_transfer_is_flash_work_while_it_is_under_way() -> None:
    give_way = GiveWay(hold=LONG)
    _, link = await served(Precedence.FLASH, at(queued("m1"), Precedence.FLASH), give_way)
    assert link.seen == [True]
    assert not give_way.under_way(PEER)


async def test_a_flash_slot_is_not_held_by_other_flash_work() -> None:
    give_way = GiveWay(hold=LONG)
    with give_way.during(Precedence.FLASH, [PEER]):
        queue, _ = await served(Precedence.FLASH, at(queued("m1"), Precedence.OVERRIDE), give_way)
    assert "m1 confirmed" in queue.events


async def test_a_transfer_not_held_counts_no_held_time() -> None:
    give_way = GiveWay(hold=LONG)
    with give_way.during(Precedence.FLASH, ["MTA-C"]):
        queue, _ = await served(Precedence.ROUTINE, queued("m1"), give_way)
    assert held_seconds(queue) == 0


async def test_an_immediate_transfer_is_not_flash_work() -> None:
    give_way = GiveWay(hold=LONG)
    entry = at(queued("m1"), Precedence.IMMEDIATE)
    _, link = await served(Precedence.IMMEDIATE, entry, give_way)
    assert link.seen == [False]


async def test_a_slot_retired_while_its_connection_is_held_sends_nothing_more() -> None:
    # A reload that replaces the slot meanwhile: the runner after it sends the window.
    give_way = GiveWay(hold=LONG)
    queue = Queue([queued("m1"), queued("m2")])
    ended = SimpleNamespace(resume_point=None, closed=True)  # (nothing left to release)
    link = WatchingLink(queue.events, queue=queue, association=ended, give_way=give_way)
    runner = _runner(Precedence.ROUTINE, queue, give_way)
    with give_way.during(Precedence.FLASH, [PEER]):
        serving = asyncio.create_task(runner._serve(channels._Connection(0), cast(Any, link)))
        await settle()
        runner._retiring = True
    async with asyncio.timeout(30):
        assert await serving  # (ended as retired, not failed)
    assert link.seen == []
    assert queue.events[:2] == ["mark -, claim m1,m2", "mark -, defer -, unclaim m1,m2"]
