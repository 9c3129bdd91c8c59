"""A slot (mta.outbound.channels): what its supervisor counts as waiting when it sizes the slot, how
a connection claims and puts back its windows, and when a failed message is retried."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import tracemalloc
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from config.loader import load_config
from config.schema import RetryPolicy
from mta.link import LinkClosedError
from mta.metrics import Metrics
from mta.outbound import channels, schedule
from mta.outbound.channels import ChannelContext, SlotRunner, retry_delay
from p1.mts.precedence import Precedence
from p1.mts.report import NonDeliveryReport
from store import ApduKind, QueueEntry, QueueRecipient, RecipientState

EXAMPLE = Path(__file__).resolve().parents[3] / "config" / "examples" / "site-a.toml"


def routine_runner() -> SlotRunner:
    config = load_config(EXAMPLE)
    peer = config.peers[0]
    (slot,) = [s for s in peer.slots if Precedence.ROUTINE in s.precedences]
    assert (slot.max_connections, slot.backlog_threshold) == (4, 20)
    context = ChannelContext(queue=cast(Any, None), metrics=Metrics(), config=config)
    return SlotRunner(context, peer, slot)


async def forever() -> None:
    """Never ends on its own (a connection's task, a read that hangs)."""
    await asyncio.Event().wait()


async def supervised(
    runner: SlotRunner, monkeypatch: pytest.MonkeyPatch, queued: int, in_window: int
) -> tuple[list[int], int]:
    """One look of the supervisor with ``queued`` messages due in the queue and
    ``in_window`` claimed by its first connection: the connections it starts, and the
    backlog it shows."""
    # Straight on to the next look, whose backlog read marks the end of the first.
    monkeypatch.setattr(channels, "_RECHECK", 0.0)
    monkeypatch.setattr(channels, "_POLL", 0.0)
    started: list[int] = []
    looked = asyncio.Event()
    reads = 0

    async def read_backlog() -> int:
        nonlocal reads
        reads += 1
        if reads == 1:
            return queued
        looked.set()
        await forever()  # the second look never ends
        return 0

    first = channels._Connection(0, state=channels.ConnectionState.TRANSFERRING, unsent=in_window)
    runner._connections[0] = first
    busy = asyncio.create_task(forever())  # the first connection's task
    runner._workers[0] = busy
    runner._read_backlog = read_backlog  # type: ignore[method-assign]
    runner._start_worker = started.append  # type: ignore[method-assign,assignment]
    supervisor = asyncio.create_task(runner._supervise())
    async with asyncio.timeout(30):
        await looked.wait()
    for task in (supervisor, busy):
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    return started, runner.snapshot().backlog


async def test_messages_claimed_into_a_window_count_as_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 6 due in the queue and 15 claimed behind the transfer in progress: 21 wait.
    assert await supervised(routine_runner(), monkeypatch, queued=6, in_window=15) == ([1], 21)


async def test_below_the_threshold_no_extra_connection_opens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert await supervised(routine_runner(), monkeypatch, queued=6, in_window=13) == ([], 19)


# --- a connection's windows ---------------------------------------------------------------

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def queued(name: str) -> QueueEntry:
    """A report for one recipient (transferred as queued, no envelope to rewrite)."""
    recipient = QueueRecipient(
        id=int(name[1:]),
        recipient="C=GB;ADMD= ;PRMD=SITEB;O=FOB;S=Jones",
        route="MTA-B",
        state=RecipientState.IN_FLIGHT,
        attempts=1,
        next_attempt_at=NOW,
        last_error=None,
        report_request=0,
        recipient_number=None,
    )
    return QueueEntry(
        message_id=recipient.id,
        mts_identifier=name,
        kind=ApduKind.REPORT,
        precedence=Precedence.ROUTINE,
        originator="C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith",
        apdu=name.encode(),
        arrival_time=NOW,
        expiry_time=None,
        origin_peer=None,
        recipients=(recipient,),
    )


@dataclass
class Queue:
    """The store's side of a connection, and its database thread (units run as queued):
    what happens, in order, in ``events``."""

    pending: list[QueueEntry]
    events: list[str] = field(default_factory=list)
    budgets: list[int | None] = field(default_factory=list)
    """The ``max_octets`` of each claim."""
    mapped: list[bool] = field(default_factory=list)
    """The ``mapped`` of each claim."""
    metrics: Metrics = field(default_factory=Metrics)

    def claim(
        self,
        peer: str,
        precedences: Collection[Precedence],
        *,
        limit: int,
        transferred: Sequence[QueueEntry],
        max_octets: int | None,
        urgent: bool,
        mapped: bool = False,
    ) -> asyncio.Future[tuple[QueueEntry, ...]]:
        self.budgets.append(max_octets)
        self.mapped.append(mapped)
        taken, self.pending = self.pending[:limit], self.pending[limit:]
        self.events.append(f"mark {names(transferred)}, claim {names(taken)}")
        future: asyncio.Future[tuple[QueueEntry, ...]] = asyncio.get_running_loop().create_future()
        future.set_result(tuple(taken))
        return future

    async def backlog(self, peer: str, precedences: Collection[Precedence]) -> int:
        return len(self.pending)

    async def non_deliver(
        self,
        entry: QueueEntry,
        report: NonDeliveryReport | None,
        *,
        why: str,
        peer: str,
        transferred: Sequence[QueueEntry],
    ) -> bool:
        self.events.append(f"mark {names(transferred)}, fail {entry.mts_identifier}")
        return False

    async def put_back(
        self,
        *,
        transferred: Sequence[QueueEntry],
        failed: QueueEntry | None,
        unsent: Sequence[QueueEntry],
        **_: Any,
    ) -> None:
        deferred = "-" if failed is None else failed.mts_identifier
        self.events.append(f"mark {names(transferred)}, defer {deferred}, unclaim {names(unsent)}")


def names(entries: Sequence[QueueEntry]) -> str:
    return ",".join(e.mts_identifier for e in entries) or "-"


@dataclass
class FakeLink:
    """Confirms every transfer but ``failing``; the peer ends the association once idle,
    as ``arriving`` are queued."""

    events: list[str]
    failing: bytes = b""
    arriving: list[QueueEntry] = field(default_factory=list)
    queue: Queue | None = None
    association: Any = field(default_factory=lambda: SimpleNamespace(resume_point=None))
    """(no checkpoints: a transfer cut off leaves nothing to resume)"""

    async def transfer(self, apdu: bytes, *, timeout: float) -> int:
        await asyncio.sleep(0)
        if apdu == self.failing:
            self.events.append(f"{apdu.decode()} failed")
            raise LinkClosedError("connection reset")
        self.events.append(f"{apdu.decode()} confirmed")
        return 1

    async def ended(self) -> str:
        if self.queue is not None:
            self.queue.pending += self.arriving
        return "the peer ended the idle association"


async def serve(
    precedence: Precedence,
    count: int,
    *,
    failing: str = "",
    budgets: list[int | None] | None = None,
    arriving: int = 0,
) -> list[str]:
    """One connection of the slot carrying ``precedence`` serves ``count`` queued messages
    with a backlog of 4 (its window: 4 on the routine slot, 1 on the others), and
    ``arriving`` more queued as the peer ends the association; each claim's
    ``max_octets`` goes to ``budgets``."""
    config = load_config(EXAMPLE)
    peer = config.peers[0]
    (slot,) = [s for s in peer.slots if precedence in s.precedences]
    queue = Queue([queued(f"m{n}") for n in range(1, count + 1)])
    context = ChannelContext(queue=queue, metrics=queue.metrics, config=config)
    runner = SlotRunner(context, peer, slot)
    runner._backlog = 4
    late = [queued(f"m{n}") for n in range(count + 1, count + arriving + 1)]
    link = FakeLink(queue.events, failing.encode(), late, queue)
    assert not await runner._serve(channels._Connection(0), cast(Any, link))
    if budgets is not None:
        budgets += queue.budgets
    return queue.events


async def test_every_claim_bounds_the_octets_of_its_window() -> None:
    budgets: list[int | None] = []
    await serve(Precedence.ROUTINE, 6, budgets=budgets)
    assert budgets and set(budgets) == {schedule.MAX_WINDOW_OCTETS}


async def test_routine_connection_claims_its_next_window_halfway_through_this_one() -> None:
    # The next window is at hand when this one ends: no transfer waits for a claim.
    assert await serve(Precedence.ROUTINE, 6) == [
        "mark -, claim m1,m2,m3,m4",
        "m1 confirmed",
        "m2 confirmed",
        "mark m1,m2, claim m5,m6",
        "m3 confirmed",
        "m4 confirmed",
        "m5 confirmed",
        "mark m3,m4,m5, claim -",
        "m6 confirmed",
        "mark m6, claim -",  # found nothing, but confirmations were left to mark
        "mark -, claim -",  # (the peer ended the association while it idled)
    ]


async def test_urgent_connection_claims_only_once_its_transfer_is_confirmed() -> None:
    # Rule 4 of mta.outbound.schedule: an urgent message never waits behind one claimed before it.
    assert await serve(Precedence.FLASH, 2) == [
        "mark -, claim m1",
        "m1 confirmed",
        "mark m1, claim m2",
        "m2 confirmed",
        "mark m2, claim -",
        "mark -, claim -",
    ]


async def test_failed_transfer_puts_back_the_next_window_claimed_meanwhile() -> None:
    assert await serve(Precedence.ROUTINE, 6, failing="m4") == [
        "mark -, claim m1,m2,m3,m4",
        "m1 confirmed",
        "m2 confirmed",
        "mark m1,m2, claim m5,m6",
        "m3 confirmed",
        "m4 failed",
        "mark m3, defer m4, unclaim m5,m6",
    ]


async def test_what_is_claimed_as_the_peer_ends_the_association_goes_back_untried() -> None:
    # Never attempted: no attempt counted, no error recorded (as unsent, not as failed).
    assert await serve(Precedence.ROUTINE, 0, arriving=2) == [
        "mark -, claim -",
        "mark -, claim m1,m2",
        "mark -, defer -, unclaim m1,m2",
    ]


# --- when a failed message is tried again -----------------------------------------------------

POLICY = RetryPolicy(initial=60.0, maximum=3600.0, factor=2.0, jitter=0.2)


def tried(attempts: int, last_error: str | None = None) -> QueueEntry:
    """A message claimed for its ``attempts``-th try, after ``last_error``."""
    entry = queued("m1")
    recipient = dataclasses.replace(entry.recipients[0], attempts=attempts, last_error=last_error)
    return dataclasses.replace(entry, recipients=(recipient,))


@pytest.mark.parametrize(
    ("entry", "idled", "delay"),
    [
        (tried(1), True, None),  # a connection dropped while idle: at once, uncounted
        (tried(1), False, 60.0),
        (tried(1, "reset"), True, 60.0),  # the retry at once failed too: initial
        (tried(2, "reset"), True, 120.0),
        (tried(3, "reset"), False, 240.0),
        (tried(2), True, 120.0),  # tried before (the MTA stopped during the transfer)
        (tried(40, "reset"), True, 3600.0),
    ],
)
def test_only_a_first_try_failing_after_an_idle_period_is_retried_at_once(
    entry: QueueEntry, idled: bool, delay: float | None
) -> None:
    assert retry_delay(entry, idled=idled, policy=POLICY, draw=0.5) == delay


def test_connections_lost_in_a_row_count_until_one_tries_a_transfer_or_lives_long() -> None:
    longest = channels._RECONNECT.maximum
    assert channels._losses(0, 0.01, tried=False) == 1
    assert channels._losses(3, 0.01, tried=False) == 4
    assert channels._losses(3, 0.01, tried=True) == 0
    assert channels._losses(3, longest, tried=False) == 0
    most = channels._LOSSES_COUNTED
    assert channels._losses(most, 0.01, tried=False) == most


# --- the supervisor's wake-ups ------------------------------------------------------------


class Reads:
    """The backlog reads a supervisor makes (each finds nothing due), counted."""

    def __init__(self) -> None:
        self.count = 0
        self._counted = asyncio.Condition()

    async def read_backlog(self) -> int:
        async with self._counted:
            self.count += 1
            self._counted.notify_all()
        return 0

    async def reach(self, count: int) -> None:
        """Wait for the ``count``-th read (30 s at most: only a failing test waits so long)."""
        async with asyncio.timeout(30), self._counted:
            await self._counted.wait_for(lambda: self.count >= count)


async def watched(
    runner: SlotRunner, monkeypatch: pytest.MonkeyPatch, connections: int
) -> tuple[Reads, list[asyncio.Task[None]], asyncio.Task[None]]:
    """The supervisor of ``runner`` with ``connections`` open (their tasks) and the
    backlog reads it makes; it polls no more on its own."""
    monkeypatch.setattr(channels, "_POLL", 3600.0)
    reads = Reads()
    tasks: list[asyncio.Task[None]] = []
    for index in range(connections):
        runner._connections[index] = channels._Connection(
            index, state=channels.ConnectionState.IDLE
        )
        task = asyncio.create_task(forever())
        task.add_done_callback(functools.partial(runner._reap, index))
        runner._workers[index] = task
        tasks.append(task)
    runner._read_backlog = reads.read_backlog  # type: ignore[method-assign]
    runner._start_worker = lambda index: None  # type: ignore[method-assign]
    return reads, tasks, asyncio.create_task(runner._supervise())


async def stopped(*tasks: asyncio.Task[None]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_slot_with_all_its_connections_reads_no_backlog_on_wake_ups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner = routine_runner()
    reads, tasks, supervisor = await watched(runner, monkeypatch, connections=4)
    await reads.reach(1)
    for _ in range(5):  # one per message queued
        runner.wake()
        # The claim is that nothing happens: give the supervisor twice the interval at
        # which it would look again if a wake-up made it look.
        await asyncio.sleep(2 * channels._RECHECK)
    assert reads.count == 1
    assert not supervisor.done()  # (still waiting: not silent because it ended)
    await stopped(supervisor, *tasks)


async def test_a_slot_that_lacks_a_connection_reads_the_backlog_when_woken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner = routine_runner()
    reads, tasks, supervisor = await watched(runner, monkeypatch, connections=1)
    await reads.reach(1)
    runner.wake()
    await reads.reach(2)
    await stopped(supervisor, *tasks)


async def test_a_full_slot_that_loses_a_connection_looks_again_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner = routine_runner()
    reads, tasks, supervisor = await watched(runner, monkeypatch, connections=4)
    await reads.reach(1)
    tasks[1].cancel()  # the second connection's task ends (reaped)
    await reads.reach(2)
    assert list(runner._workers) == [0, 2, 3]
    await stopped(supervisor, *tasks)


# --- what a connection holds of the messages it transferred ---------------------------------

LARGE = 4 * 1024 * 1024


@dataclass
class LargeQueue(Queue):
    """Claims messages of LARGE octets, each APDU made as it is claimed; notes the octets
    traced when each claim is asked for (what the connection then still holds)."""

    held: list[int] = field(default_factory=list)

    def claim(
        self,
        peer: str,
        precedences: Collection[Precedence],
        *,
        limit: int,
        transferred: Sequence[QueueEntry],
        max_octets: int | None,
        urgent: bool,
        mapped: bool = False,
    ) -> asyncio.Future[tuple[QueueEntry, ...]]:
        self.held.append(tracemalloc.get_traced_memory()[0])
        future = super().claim(
            peer,
            precedences,
            limit=limit,
            transferred=transferred,
            max_octets=max_octets,
            urgent=urgent,
        )
        taken = [dataclasses.replace(e, apdu=bytes(LARGE)) for e in future.result()]
        large: asyncio.Future[tuple[QueueEntry, ...]] = asyncio.get_running_loop().create_future()
        large.set_result(tuple(taken))
        return large


class ConfirmingLink:
    """Confirms every transfer; the peer ends the association once idle."""

    association = SimpleNamespace(resume_point=None)

    async def transfer(self, apdu: bytes, *, timeout: float) -> int:
        await asyncio.sleep(0)
        return 1

    async def ended(self) -> str:
        return "the peer ended the idle association"


async def test_a_confirmed_transfer_is_not_held_while_the_next_is_claimed() -> None:
    config = load_config(EXAMPLE)
    peer = config.peers[0]
    (slot,) = [s for s in peer.slots if Precedence.FLASH in s.precedences]
    queue = LargeQueue([queued(f"m{n}") for n in range(1, 4)])
    runner = SlotRunner(
        ChannelContext(queue=queue, metrics=queue.metrics, config=config), peer, slot
    )
    tracemalloc.start()
    try:
        assert not await runner._serve(channels._Connection(0), cast(Any, ConfirmingLink()))
    finally:
        tracemalloc.stop()
    assert queue.events[:4] == [
        "mark -, claim m1",
        "mark m1, claim m2",
        "mark m2, claim m3",
        "mark m3, claim -",
    ]
    # Each claim after the first marks the message before it, confirmed: its 4 MB APDU
    # is no longer held (neither as the window transferred nor as the entry to mark).
    first, *later = queue.held
    assert all(held - first < LARGE // 4 for held in later)


# --- a slot's own timeouts ----------------------------------------------------------------


@dataclass
class TimedLink(FakeLink):
    """A FakeLink that keeps the timeout each transfer was given."""

    timeouts: list[float] = field(default_factory=list)

    async def transfer(self, apdu: bytes, *, timeout: float) -> int:
        self.timeouts.append(timeout)
        return await super().transfer(apdu, timeout=timeout)


async def test_a_slot_s_connect_and_transfer_timeouts_reach_its_links() -> None:
    """connect_timeout and transfer_timeout of a slot (long over HF radio) are what its
    connections open and transfer with, not the daemon's defaults."""
    config = load_config(EXAMPLE)
    peer = config.peers[0]
    (slot,) = [s for s in peer.slots if Precedence.ROUTINE in s.precedences]
    assert (slot.connect_timeout, slot.transfer_timeout) == (10.0, 300.0)  # the defaults
    slot = dataclasses.replace(slot, connect_timeout=120.0, transfer_timeout=900.0)
    queue = Queue([queued("m1")])
    context = ChannelContext(queue=queue, metrics=queue.metrics, config=config)
    runner = SlotRunner(context, peer, slot)
    timeouts = runner._timeouts()
    assert (timeouts.connect, timeouts.transfer) == (120.0, 900.0)
    link = TimedLink(queue.events, queue=queue)
    assert not await runner._serve(channels._Connection(0), cast(Any, link))
    assert link.timeouts == [900.0]


async def test_a_slot_claims_its_messages_to_be_sent_from_their_spool_files() -> None:
    """Each claim of a connection asks for large spooled APDUs as their files' mappings
    (sent from the file, not held whole: :meth:`store.queue.TransitQueue.claim_next`)."""
    config = load_config(EXAMPLE)
    peer = config.peers[0]
    (slot,) = [s for s in peer.slots if Precedence.ROUTINE in s.precedences]
    queue = Queue([queued("m1"), queued("m2")])
    runner = SlotRunner(
        ChannelContext(queue=queue, metrics=queue.metrics, config=config), peer, slot
    )
    assert not await runner._serve(
        channels._Connection(0), cast(Any, FakeLink(queue.events, queue=queue))
    )
    assert len(queue.mapped) >= 2 and all(queue.mapped)
