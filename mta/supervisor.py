"""Long-lived tasks, owned: a part that fails is logged, restarted with backoff and shown.

Every long-lived task of the daemon (local delivery, expiry, each slot's supervisor) runs
under a :class:`Supervisor`.  A part whose coroutine raises is logged once with its
traceback (a repeat of the same error is one line without it; an error the ``expected``
classifier explains, such as a full disk, is no bug of ours: the classifier reports the
condition, and the part's failures and recovery are not logged again), waits a backoff
that grows
from one second to a minute, and starts again; until it reports a good cycle
(:meth:`Supervisor.healthy`) or runs a minute without failing, :meth:`Supervisor.degraded`
lists it with its last error, and ``x400ctl status`` shows it.  A part that returns has
finished its work and is not restarted.

Public API::

    Supervisor(backoff=RetryPolicy(...), expected=lambda error: None, clock=time.monotonic)
        .start(name, factory) -> None     factory() makes the part's coroutine, each run
        .healthy(name)                    the part completed a good cycle
        .degraded() -> list[PartHealth]   parts that failed and have not recovered
        .stop(*names) -> None             cancel those parts (all: none named), wait
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from config.schema import RetryPolicy

log = logging.getLogger("aiox400.supervisor")

PART_BACKOFF = RetryPolicy(initial=1.0, maximum=60.0, factor=2.0, jitter=0.1)
"""Wait before a failed part starts again: 1 s, 2 s, 4 s ... up to a minute."""
STABLE = 60.0
"""Seconds a restarted part must run without failing to count as recovered, when it does
not say so itself."""

Factory = Callable[[], Coroutine[Any, Any, None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class PartHealth:
    """A part that failed and has not recovered yet."""

    name: str
    failures: int
    """Failures in a row."""
    last_error: str
    """The last error, one line."""
    since: float
    """Seconds since the first failure of the row."""


@dataclass(slots=True)
class _Record:
    failures: int = 0
    last_error: str = ""
    first_failure: float = 0.0
    started: float = 0.0
    running: bool = False
    expected: bool = False
    """The last failure was one the classifier explained (and reported)."""


class Supervisor:
    """Runs named parts, restarts those that fail, and says which are degraded."""

    def __init__(
        self,
        *,
        backoff: RetryPolicy = PART_BACKOFF,
        expected: Callable[[Exception], str | None] = lambda error: None,
        stable: float = STABLE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backoff = backoff
        """The wait before a failed part starts again."""
        self._expected = expected
        self._stable = stable
        self._clock = clock
        self._records: dict[str, _Record] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def start(self, name: str, factory: Factory) -> None:
        """Run ``factory()`` as the part ``name``, again after each failure."""
        if name in self._tasks:
            raise ValueError(f"a part named {name!r} is running already")
        self._records[name] = _Record()
        self._tasks[name] = asyncio.create_task(self._run(name, factory), name=name)

    def healthy(self, name: str) -> None:
        """The part ``name`` completed a good cycle: it is no longer degraded."""
        record = self._records.get(name)
        if record is not None and record.failures:
            if not record.expected:
                log.warning("%s: recovered after %d failure(s)", name, record.failures)
            record.failures = 0
            record.last_error = ""

    def degraded(self) -> list[PartHealth]:
        """The parts that failed and have not recovered, by name."""
        now = self._clock()
        found = []
        for name, record in sorted(self._records.items()):
            if record.failures and record.running and now - record.started >= self._stable:
                self.healthy(name)  # ran long enough since its restart
            if record.failures:
                since = round(now - record.first_failure, 1)
                found.append(
                    PartHealth(
                        name=name,
                        failures=record.failures,
                        last_error=record.last_error,
                        since=since,
                    )
                )
        return found

    async def stop(self, *names: str) -> None:
        """Cancel the parts named (every part when none is) and wait for them to end."""
        chosen = names or tuple(self._tasks)
        tasks = [self._tasks.pop(name) for name in chosen if name in self._tasks]
        for name in chosen:
            self._records.pop(name, None)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self, name: str, factory: Factory) -> None:
        record = self._records[name]
        while True:
            record.started = self._clock()
            record.running = True
            try:
                await factory()
                return
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a bug of ours: logged, and the part goes on
                record.running = False
                delay = self._failed(name, record, error)
            await asyncio.sleep(delay)

    def _failed(self, name: str, record: _Record, error: Exception) -> float:
        """Count and log a failure; the wait before the next run."""
        text = f"{type(error).__name__}: {error}"
        if not record.failures:
            record.first_failure = self._clock()
        record.failures += 1
        delay = self.backoff.delay(record.failures, random.random())
        reason = self._expected(error)
        record.expected = reason is not None
        if reason is not None:
            text = reason
        elif text != record.last_error:
            log.error("%s stopped by an error; restarting in %.1f s", name, delay, exc_info=error)
        else:
            log.error(
                "%s failed again (%d in a row): %s; restarting in %.1f s",
                name,
                record.failures,
                text,
                delay,
            )
        record.last_error = text
        return delay
