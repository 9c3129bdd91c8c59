"""The daemon's database thread: store work runs off the event loop, with group commit.

The store's API is synchronous (SQLAlchemy sessions).  The daemon runs every unit of
work in one dedicated thread, so the event loop never waits on a disk flush and units
never contend for SQLite's single writer.

Group commit: units given to :meth:`Database.batch` take a session and do not commit.
Whatever units are waiting when the thread comes to them run in one transaction and are
committed with one disk flush; only then does each caller get its result.  A unit that
raises is undone alone and its caller gets the exception: the batch is first run
without savepoints (a savepoint costs two statements per unit, as much as a small
unit's own work), and only if one of its units raises is the transaction rolled back
and the batch run again with each unit in a savepoint of its own.  Units touch nothing
but the session, so running one again is safe.  Under load, the submissions, transfers
received and transfers confirmed of many connections share one flush instead of paying
one each.

Precedence: a unit given with ``urgent=True`` (a submission above routine, a claim of a
slot that carries a precedence above routine) goes into the next transaction with the
other urgent units and nothing else, ahead of the routine units and of the work given
to :meth:`run`.  A routine transaction under way gives way to it: once an urgent unit
waits and the routine batch has run for :data:`GIVE_WAY_AFTER`, the batch ends with the
unit it is running and is committed, and its units not yet run go back to the head of
the queue, so an urgent unit waits for about that long, one routine unit and a commit,
not for a whole batch (under a backlog a batch of claims and confirmations takes
several milliseconds while the event loop shares the interpreter).  The floor keeps a
steady stream of urgent units (a peer whose one slot carries every precedence makes
each of its claims urgent) from cutting every routine batch down to one unit and one
disk flush.  (A transfer received from a peer is urgent when its envelope, read on
the event loop, says so.)

A unit given with ``durable=False`` (a claim, a transfer marked done) needs no disk
flush of its own (:func:`store.db.transaction`); a batch is flushed when any of its
units is durable.  Once a batch is committed, such units are answered before the
durable ones (each group in the order queued): a claim that shared a submission's
transaction starts its transfer before the submitter is told.

Public API::

    Database(engine, *, give_way_after=GIVE_WAY_AFTER)
        await .run(function, *args) -> result      a unit with its own transaction(s)
        await .batch(unit, *, durable=True, urgent=False) -> result   unit(session):
                                                         group-committed
        .enqueue(unit, *, durable=True, urgent=False) -> Future   the same, queued at once
        .close()
    is_urgent(precedence) -> bool     work above routine goes first
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import threading
import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from mta import stages
from p1.mts.precedence import Precedence
from store import transaction

__all__ = ["Database"]

_P = ParamSpec("_P")
_T = TypeVar("_T")

_MAX_BATCH = 256
"""Most units committed together (bounds the work lost to one failed commit)."""

GIVE_WAY_AFTER = 0.001
"""Seconds a routine batch runs before it gives way to urgent units that wait."""

_Waiting = tuple[Callable[[Session], Any], "asyncio.Future[Any]", asyncio.AbstractEventLoop, bool]


def is_urgent(precedence: Precedence) -> bool:
    """Whether work for ``precedence`` goes ahead of routine work: in the database thread
    (:meth:`Database.enqueue`) and in a connection's window
    (:func:`mta.outbound.schedule.transfer_window`).  Everything above routine is."""
    return precedence > Precedence.ROUTINE


class Database:
    """Runs synchronous store work in one worker thread."""

    def __init__(self, engine: Engine, *, give_way_after: float = GIVE_WAY_AFTER) -> None:
        self.engine = engine
        self._give_way_after = give_way_after
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="aiox400-db"
        )
        self._lock = threading.Lock()
        self._waiting: collections.deque[_Waiting] = collections.deque()
        self._urgent: collections.deque[_Waiting] = collections.deque()
        self._draining = False

    async def run(self, function: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """``function(*args, **kwargs)`` in the database thread; its result or exception.

        A caller cancelled while the unit runs does not stop it: the unit completes (and
        commits) in its thread, so work is never left half done.
        """
        loop = asyncio.get_running_loop()
        call = functools.partial(function, *args, **kwargs)
        return await loop.run_in_executor(self._executor, call)

    async def batch(
        self, unit: Callable[[Session], _T], *, durable: bool = True, urgent: bool = False
    ) -> _T:
        """``unit(session)`` in a transaction shared with the other waiting units; its
        result once that transaction is committed (or its exception).

        As with :meth:`run`, a cancelled caller does not stop the unit.
        """
        return await self.enqueue(unit, durable=durable, urgent=urgent)

    def enqueue(
        self, unit: Callable[[Session], _T], *, durable: bool = True, urgent: bool = False
    ) -> asyncio.Future[_T]:
        """:meth:`batch`, queued now (called from the event loop): the future of its
        result.  Units queued one after the other from one callback run in that order
        (among the urgent ones, and among the others); when the thread is idle, they run
        in the same transaction (it is started once the callback is done).

        ``urgent`` (the work of a precedence above routine): the next transaction takes
        the urgent units waiting and nothing else, ahead of the others and of the work
        given to :meth:`run`; only the transaction already under way is waited for.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        with self._lock:
            (self._urgent if urgent else self._waiting).append((unit, future, loop, durable))
            start, self._draining = not self._draining, True
        if start:
            # The drain ends itself when nothing waits; its completion is not awaited.
            loop.call_soon(self._start_drain)
        return future

    def _start_drain(self) -> None:
        try:
            self._executor.submit(self._drain)
        except RuntimeError as error:  # closed: nothing will run what waits
            with self._lock:
                waiting, self._draining = [*self._urgent, *self._waiting], False
                self._urgent.clear()
                self._waiting.clear()
            for _, future, _, _ in waiting:
                if not future.done():
                    future.set_exception(error)

    def _drain(self) -> None:
        """Commit one batch of what waits, then queue the next drain behind whatever
        :meth:`run` queued meanwhile (a steady stream of batches must not starve it),
        unless urgent units wait: those are committed first."""
        while True:
            with self._lock:
                queue = self._urgent or self._waiting
                units = [queue.popleft() for _ in range(min(len(queue), _MAX_BATCH))]
                if not units:
                    self._draining = False
                    return
            self._commit(units, urgent=queue is self._urgent)
            if self._urgent:  # (read without the lock: a unit queued just after waits one turn)
                continue
            try:
                self._executor.submit(self._drain)
                return
            except RuntimeError:  # closing: what waits is committed here, before it ends
                continue

    def _commit(self, units: list[_Waiting], *, urgent: bool = False) -> None:
        stages.mark("db.begin", urgent)
        durable = any(waiting[3] for waiting in units)
        try:
            outcomes = self._run_all(units, durable=durable, savepoints=False, urgent=urgent)
            if outcomes is None:  # a unit raised: undo everything, then each alone
                outcomes = self._run_all(units, durable=durable, savepoints=True, urgent=urgent)
        except Exception as error:  # the commit failed: no unit's work is on disk
            outcomes = [(False, error)] * len(units)
        assert outcomes is not None
        stages.mark("db.committed", urgent)
        # One wake-up of each waiting loop per batch, not one per unit.  The units that
        # needed no flush (claims) are answered first: a connection starts the transfer
        # of what it claimed before the submissions it shared the batch with are answered.
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], bool, Any]]] = {}
        answered = sorted(zip(units, outcomes, strict=True), key=lambda pair: pair[0][3])
        for (_, future, loop, _), (ok, value) in answered:
            by_loop.setdefault(loop, []).append((future, ok, value))
        for loop, settled in by_loop.items():
            loop.call_soon_threadsafe(_settle_all, settled)

    def _run_all(
        self, units: list[_Waiting], *, durable: bool, savepoints: bool, urgent: bool
    ) -> list[tuple[bool, Any]] | None:
        """Run ``units`` in one transaction and commit; their outcomes.

        Without ``savepoints``, the first unit that raises rolls the transaction back and
        the answer is None.
        """
        outcomes: list[tuple[bool, Any]] = []
        until = time.monotonic() + self._give_way_after
        try:
            with transaction(self.engine, durable=durable) as session:
                for index, (unit, _, _, _) in enumerate(units):
                    if savepoints:
                        outcomes.append(_attempt(session, unit))
                        continue
                    try:
                        outcomes.append((True, unit(session)))
                    except Exception as error:
                        raise _UnitFailedError from error  # rolls the transaction back
                    if self._gives_way(urgent, until) and index + 1 < len(units):
                        self._give_way(units, index + 1)
                        break
                stages.mark("db.units", urgent)
        except _UnitFailedError:
            return None
        return outcomes

    def _gives_way(self, urgent: bool, until: float) -> bool:
        """Whether a batch (``urgent`` or not) ends here for urgent units that wait: a
        routine one whose time (``until``) is over."""
        return not urgent and bool(self._urgent) and time.monotonic() >= until

    def _give_way(self, units: list[_Waiting], kept: int) -> None:
        """End a routine batch after its first ``kept`` units, for the urgent ones that
        wait: the rest go back to the head of the queue, in their order, and ``units``
        keeps only those run (their outcomes are the batch's).  (Read without the lock,
        an urgent unit queued just after the test waits for the next unit.)"""
        rest = units[kept:]
        del units[kept:]
        with self._lock:
            self._waiting.extendleft(reversed(rest))

    def close(self) -> None:
        """Wait for the work in progress, then release the thread and the engine."""
        self._executor.shutdown(wait=True)
        self.engine.dispose()


class _UnitFailedError(Exception):
    """A unit of a batch run without savepoints raised (its exception is the cause)."""


def _attempt(session: Session, unit: Callable[[Session], Any]) -> tuple[bool, Any]:
    """Run ``unit`` in a savepoint: its result, or its exception with its work undone."""
    try:
        with session.begin_nested():
            return True, unit(session)
    except Exception as error:
        return False, error


def _settle_all(settled: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    for future, ok, value in settled:
        if future.cancelled():
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)
