"""mta.supervisor: a part that fails is logged, restarted with backoff, and listed as
degraded until it recovers."""

from __future__ import annotations

import asyncio
import logging

import pytest

from config.schema import RetryPolicy
from mta.supervisor import Supervisor

QUICK = RetryPolicy(initial=0.001, maximum=0.004, factor=2.0, jitter=0.0)


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_failing_part_is_restarted_and_shown_until_it_reports_a_good_cycle(
    caplog: pytest.LogCaptureFixture,
) -> None:
    parts = Supervisor(backoff=QUICK)
    runs = 0
    third = asyncio.Event()
    recovered = asyncio.Event()

    async def flaky() -> None:
        nonlocal runs
        runs += 1
        if runs <= 3:
            if runs == 3:
                third.set()
            raise OSError(28, "No space left on device")
        parts.healthy("local delivery")
        recovered.set()
        await asyncio.Event().wait()  # serves on

    caplog.set_level(logging.ERROR, logger="aiox400.supervisor")
    parts.start("local delivery", flaky)
    await asyncio.wait_for(third.wait(), 10)
    await asyncio.sleep(0)
    degraded = parts.degraded()
    if degraded:  # (unless the fourth run already began and reported)
        assert [p.name for p in degraded] == ["local delivery"]
        assert degraded[0].last_error == "OSError: [Errno 28] No space left on device"
    await asyncio.wait_for(recovered.wait(), 10)
    assert parts.degraded() == []
    assert runs == 4
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    # The first failure with its traceback, the repeats of the same error one line each.
    assert errors[0].exc_info is not None
    assert all(r.exc_info is None for r in errors[1:])
    assert len(errors) == 3
    await parts.stop()


async def test_the_failure_count_is_shown_while_the_part_waits_out_its_backoff() -> None:
    clock = Clock()
    slow = RetryPolicy(initial=3600.0, maximum=3600.0, factor=2.0, jitter=0.0)
    parts = Supervisor(backoff=slow, clock=clock)
    failed = asyncio.Event()

    async def broken() -> None:
        failed.set()
        raise KeyError("backlog")

    parts.start("slot B/routine", broken)
    await asyncio.wait_for(failed.wait(), 10)
    await asyncio.sleep(0)
    clock.now += 7200  # long after its start: still degraded, it is not running
    [part] = parts.degraded()
    assert (part.name, part.failures, part.last_error) == (
        "slot B/routine",
        1,
        "KeyError: 'backlog'",
    )
    assert part.since == 7200
    await parts.stop()
    assert parts.degraded() == []


async def test_a_restarted_part_that_runs_long_enough_counts_as_recovered() -> None:
    clock = Clock()
    parts = Supervisor(backoff=QUICK, clock=clock, stable=60.0)
    runs = 0
    second = asyncio.Event()

    async def once_broken() -> None:
        nonlocal runs
        runs += 1
        if runs == 1:
            raise RuntimeError("first run")
        second.set()
        await asyncio.Event().wait()

    parts.start("expiry", once_broken)
    await asyncio.wait_for(second.wait(), 10)
    assert [p.name for p in parts.degraded()] == ["expiry"]
    clock.now += 61
    assert parts.degraded() == []
    await parts.stop()


async def test_a_part_that_returns_is_done_and_stop_cancels_the_others() -> None:
    parts = Supervisor(backoff=QUICK)
    done = 0
    cancelled = asyncio.Event()

    async def finishes() -> None:
        nonlocal done
        done += 1

    async def serves() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    parts.start("once", finishes)
    parts.start("forever", serves)
    with pytest.raises(ValueError, match="running already"):
        parts.start("forever", serves)
    await asyncio.sleep(0.01)
    assert done == 1
    await parts.stop()
    assert cancelled.is_set()


async def test_an_expected_fault_is_reported_by_its_classifier_not_logged_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reported: list[str] = []

    def disk(error: Exception) -> str | None:
        if isinstance(error, OSError):
            reported.append("disk full")
            return "disk full"
        return None

    parts = Supervisor(backoff=QUICK, expected=disk)
    runs = 0
    recovered = asyncio.Event()

    async def full_then_fine() -> None:
        nonlocal runs
        runs += 1
        if runs <= 3:
            raise OSError(28, "No space left on device")
        parts.healthy("local delivery")
        recovered.set()
        await asyncio.Event().wait()

    caplog.set_level(logging.DEBUG, logger="aiox400.supervisor")
    parts.start("local delivery", full_then_fine)
    await asyncio.wait_for(recovered.wait(), 10)
    assert reported == ["disk full"] * 3
    assert parts.degraded() == []
    assert [r for r in caplog.records if r.name == "aiox400.supervisor"] == []
    await parts.stop()
