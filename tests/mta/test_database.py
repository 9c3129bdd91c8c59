"""The database thread's group commit (mta.database): units share a transaction, each in a
savepoint; a unit that raises is undone alone; results arrive only after the commit."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session

from mta.database import Database
from store import AuditEvent, AuditLog, open_database, transaction

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    yield engine
    engine.dispose()


def record(detail: str) -> Callable[[Session], str]:
    def unit(session: Session) -> str:
        AuditLog(session).record(AuditEvent.SUBMITTED, NOW, detail=detail)
        return detail

    return unit


def failing(session: Session) -> None:
    AuditLog(session).record(AuditEvent.SUBMITTED, NOW, detail="undone")
    raise ValueError("this unit fails")


def details(engine: Engine) -> list[str]:
    with transaction(engine, read_only=True) as session:
        return sorted(r.detail or "" for r in AuditLog(session).recent(1000))


def count_commits(engine: Engine) -> list[int]:
    commits = [0]

    @event.listens_for(engine, "commit")
    def committed(connection: object) -> None:
        commits[0] += 1

    return commits


async def test_waiting_units_share_one_commit(engine: Engine) -> None:
    database = Database(engine)
    commits = count_commits(engine)
    try:
        # The first unit starts the drain; the other 49 wait behind it and go together.
        results = await asyncio.gather(*(database.batch(record(f"u{i}")) for i in range(50)))
    finally:
        database.close()
    batch_commits = commits[0]
    assert results == [f"u{i}" for i in range(50)]
    assert details(engine) == sorted(f"u{i}" for i in range(50))
    assert 1 <= batch_commits <= 2


async def test_a_failing_unit_is_undone_alone(engine: Engine) -> None:
    database = Database(engine)
    try:
        outcomes = await asyncio.gather(
            database.batch(record("before")),
            database.batch(failing),
            database.batch(record("after")),
            return_exceptions=True,
        )
    finally:
        database.close()
    assert outcomes[0] == "before"
    assert isinstance(outcomes[1], ValueError)
    assert outcomes[2] == "after"
    assert details(engine) == ["after", "before"]


async def test_a_result_is_given_only_after_the_commit(engine: Engine) -> None:
    database = Database(engine)
    seen: list[list[str]] = []

    def unit(session: Session) -> None:
        AuditLog(session).record(AuditEvent.SUBMITTED, NOW, detail="x")

    try:
        await database.batch(unit)
        seen.append(details(engine))  # another connection sees it: it is committed
    finally:
        database.close()
    assert seen == [["x"]]


async def test_a_failed_commit_fails_every_unit_of_the_batch(engine: Engine) -> None:
    database = Database(engine)

    @event.listens_for(engine, "commit")
    def refuse(connection: object) -> None:
        raise RuntimeError("disk full")

    try:
        outcomes = await asyncio.gather(
            database.batch(record("a")), database.batch(record("b")), return_exceptions=True
        )
    finally:
        event.remove(engine, "commit", refuse)
        database.close()
    assert all(isinstance(o, RuntimeError) for o in outcomes)
    assert details(engine) == []


def count_savepoints(engine: Engine) -> list[int]:
    savepoints = [0]

    @event.listens_for(engine, "savepoint")
    def saved(connection: object, name: str) -> None:
        savepoints[0] += 1

    return savepoints


async def test_a_batch_whose_units_all_succeed_uses_no_savepoint(engine: Engine) -> None:
    database = Database(engine)
    savepoints = count_savepoints(engine)
    try:
        await asyncio.gather(*(database.batch(record(f"u{i}")) for i in range(10)))
    finally:
        database.close()
    assert savepoints == [0]
    assert details(engine) == sorted(f"u{i}" for i in range(10))


async def test_a_failing_unit_runs_the_batch_again_with_savepoints(engine: Engine) -> None:
    database = Database(engine)
    savepoints = count_savepoints(engine)
    runs: list[str] = []

    def counted(detail: str) -> Callable[[Session], str]:
        def unit(session: Session) -> str:
            runs.append(detail)
            return record(detail)(session)

        return unit

    try:
        # One batch: the first unit starts the drain while the others are queued.
        outcomes = await asyncio.gather(
            database.batch(counted("a")),
            database.batch(counted("b")),
            database.batch(failing),
            database.batch(counted("c")),
            return_exceptions=True,
        )
    finally:
        database.close()
    assert (outcomes[0], outcomes[1], outcomes[3]) == ("a", "b", "c")
    assert isinstance(outcomes[2], ValueError)
    assert details(engine) == ["a", "b", "c"]  # each once: the first run was undone
    assert savepoints[0] >= 1
    assert runs.count("b") in (1, 2)


async def test_units_queued_from_one_callback_share_a_transaction_in_order(
    engine: Engine,
) -> None:
    database = Database(engine)
    commits = count_commits(engine)
    seen: list[str] = []

    def reader(session: Session) -> list[str]:
        seen.extend(r.detail or "" for r in AuditLog(session).recent(10))
        return seen

    try:
        first = database.enqueue(record("first"))
        second = database.enqueue(reader, durable=False)  # sees what the first wrote
        assert await first == "first"
        assert await second == ["first"]
    finally:
        database.close()
    assert commits[0] == 1


async def test_units_that_needed_no_flush_are_answered_first(engine: Engine) -> None:
    """A claim (durable=False) queued behind a submission in the same batch: its caller
    resumes first, so that the transfer starts before the submitter is answered."""
    database = Database(engine)
    commits = count_commits(engine)
    resumed: list[str] = []

    async def waiter(name: str, queued: asyncio.Future[str]) -> None:
        await queued
        resumed.append(name)

    try:
        submission = database.enqueue(record("submission"))
        claim = database.enqueue(record("claim"), durable=False)
        later = database.enqueue(record("report"))
        await asyncio.gather(
            waiter("submission", submission), waiter("claim", claim), waiter("report", later)
        )
    finally:
        database.close()
    assert commits[0] == 1
    assert resumed == ["claim", "submission", "report"]


async def test_a_unit_queued_on_a_closed_database_fails(engine: Engine) -> None:
    database = Database(engine)
    database.close()
    with pytest.raises(RuntimeError):
        await database.enqueue(record("late"))


async def test_work_given_to_run_is_not_held_up_by_a_stream_of_batches(engine: Engine) -> None:
    database = Database(engine)
    loop = asyncio.get_running_loop()
    done: list[str] = []
    running = asyncio.Event()
    gate = threading.Event()

    def held(session: Session) -> None:
        loop.call_soon_threadsafe(running.set)
        assert gate.wait(30), "the test never let the batch in progress finish"
        done.append("held")

    def unit(session: Session) -> None:
        done.append("batch")

    try:
        first = database.enqueue(held, durable=False)
        async with asyncio.timeout(30):
            await running.wait()  # a batch is in progress in the database thread
        # More units arrive while it runs: the queue is not empty when it ends.
        stream = [database.enqueue(unit, durable=False) for _ in range(60)]
        # The batch in progress ends only once the call below is queued behind it (the
        # callback runs when that call has been handed to the thread and awaits it).
        loop.call_soon(gate.set)
        await database.run(done.append, "run")
        await asyncio.gather(first, *stream)
    finally:
        gate.set()
        database.close()
    # Served after the batch in progress, not once the stream of 60 units has dried up.
    assert done == ["held", "run", *["batch"] * 60]


async def test_urgent_units_are_committed_first_and_alone(engine: Engine) -> None:
    database = Database(engine)
    loop = asyncio.get_running_loop()
    commits = count_commits(engine)
    ran: list[str] = []
    holding = asyncio.Event()
    release = threading.Event()

    def hold() -> None:
        loop.call_soon_threadsafe(holding.set)
        assert release.wait(30), "the test never released the database thread"

    def named(name: str) -> Callable[[Session], str]:
        def unit(session: Session) -> str:
            AuditLog(session).record(AuditEvent.SUBMITTED, NOW, detail=name)
            ran.append(name)
            return name

        return unit

    try:
        busy = asyncio.ensure_future(database.run(hold))
        async with asyncio.timeout(30):
            await holding.wait()  # the thread is busy: all five wait behind it
        routine = [database.enqueue(named(f"routine-{i}")) for i in range(3)]
        flash = [database.enqueue(named(f"flash-{i}"), urgent=True) for i in range(2)]
        before = commits[0]
        release.set()
        await asyncio.gather(busy, *routine, *flash)
    finally:
        release.set()
        database.close()
    # The urgent ones first, in their order, in a transaction of their own; then the rest.
    assert ran == ["flash-0", "flash-1", "routine-0", "routine-1", "routine-2"]
    assert commits[0] - before == 2


class Held:
    """Units that record their names; ``routine-0`` holds the database thread, once its
    batch is under way, until the test releases it."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.ran: list[str] = []
        self.started = asyncio.Event()
        self.release = threading.Event()

    def named(self, name: str) -> Callable[[Session], str]:
        def unit(session: Session) -> str:
            AuditLog(session).record(AuditEvent.SUBMITTED, NOW, detail=name)
            self.ran.append(name)
            if name == "routine-0":  # the batch is under way: the test queues the rest
                self.loop.call_soon_threadsafe(self.started.set)
                assert self.release.wait(30), "the test never released the database thread"
            return name

        return unit

    async def under_way(self) -> None:
        async with asyncio.timeout(30):
            await self.started.wait()


async def test_a_routine_batch_under_way_gives_way_to_an_urgent_unit(engine: Engine) -> None:
    """An urgent unit queued while a routine batch runs waits for the unit being run and
    that unit's commit, not for the rest of the batch: the rest run after it, in their
    order, and ahead of routine work queued later (the batch's time to give way is over
    at once here)."""
    database = Database(engine, give_way_after=0)
    commits = count_commits(engine)
    held = Held()
    try:
        routine = [database.enqueue(held.named(f"routine-{i}")) for i in range(3)]
        await held.under_way()
        flash = database.enqueue(held.named("flash"), urgent=True)
        later = database.enqueue(held.named("later"))
        held.release.set()
        results = await asyncio.gather(*routine, flash, later)
    finally:
        held.release.set()
        database.close()
    assert results == ["routine-0", "routine-1", "routine-2", "flash", "later"]
    assert held.ran == ["routine-0", "flash", "routine-1", "routine-2", "later"]
    # routine-0 alone, the flash unit alone, then the rest with the one queued later
    assert commits[0] == 3
    with transaction(engine, read_only=True) as session:
        details = [r.detail for r in AuditLog(session).recent(10)]
    assert sorted(d or "" for d in details) == sorted(held.ran)


async def test_a_routine_batch_within_its_time_gives_no_way(engine: Engine) -> None:
    """Before :data:`GIVE_WAY_AFTER` has passed, a routine batch runs to its end: a steady
    stream of urgent units does not cut every routine batch to one unit and one flush."""
    database = Database(engine, give_way_after=3600)
    held = Held()
    try:
        routine = [database.enqueue(held.named(f"routine-{i}")) for i in range(3)]
        await held.under_way()
        flash = database.enqueue(held.named("flash"), urgent=True)
        held.release.set()
        await asyncio.gather(*routine, flash)
    finally:
        held.release.set()
        database.close()
    assert held.ran == ["routine-0", "routine-1", "routine-2", "flash"]


async def test_units_put_back_by_a_batch_that_gave_way_fail_alone(engine: Engine) -> None:
    """A unit that raises among those a batch put back is undone alone, in the batch
    they run in next: every unit is answered once, with its own result or exception."""
    database = Database(engine, give_way_after=0)
    held = Held()
    try:
        first = database.enqueue(held.named("routine-0"))
        broken = database.enqueue(failing)
        last = database.enqueue(held.named("routine-2"))
        await held.under_way()
        flash = database.enqueue(held.named("flash"), urgent=True)
        held.release.set()
        results = await asyncio.gather(first, broken, last, flash, return_exceptions=True)
    finally:
        held.release.set()
        database.close()
    assert results[0] == "routine-0" and results[2] == "routine-2" and results[3] == "flash"
    assert isinstance(results[1], ValueError)
    with transaction(engine, read_only=True) as session:
        details = sorted(r.detail or "" for r in AuditLog(session).recent(10))
    assert details == ["flash", "routine-0", "routine-2"]  # not the failed unit's row
