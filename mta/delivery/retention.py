"""Pruning what the MTA has finished with, on a timer, in short transactions.

Every ``[retention] interval`` the daemon deletes, oldest first and ``batch`` rows per
transaction (:class:`store.retention.Pruner`), the queued messages finished longer than
``finished`` ago with their APDU files, the duplicate-detection keys older than
``received`` and the audit records older than ``audit``.  Each batch is one routine unit
of the database thread (:class:`mta.database.Database`), so a transfer or a submission
above routine never waits behind more than one batch; a round ends when a batch comes
back short.  One INFO line per round that pruned anything.

Public API::

    Pruning(db, retention)
        await .round(now) -> Round
        await .forever(healthy)          rounds every interval, the first one soon after start
    Round(messages, octets, received, audit)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from sqlalchemy.orm import Session

from config.schema import Retention
from mta.database import Database
from store.retention import Pruned, Pruner

__all__ = ["Pruning", "Round"]

log = logging.getLogger("aiox400.retention")

_FIRST_ROUND = 30.0
"""Seconds after start before the first round (start-up and recovery come first)."""

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Round:
    """What one round deleted."""

    messages: int = 0
    octets: int = 0
    """Of the finished messages' APDUs."""
    received: int = 0
    audit: int = 0

    def __bool__(self) -> bool:
        return bool(self.messages or self.received or self.audit)


class Pruning:
    """The rounds of one daemon's pruning."""

    def __init__(self, db: Database, retention: Retention) -> None:
        self.db = db
        self.retention = retention

    async def round(self, now: datetime) -> Round:
        """Prune everything due at ``now``, a batch per transaction."""
        policy = self.retention
        finished = await self._finished(now - timedelta(seconds=policy.finished))
        received = await self._rows(Pruner.received, now - timedelta(seconds=policy.received))
        audit = await self._rows(Pruner.audit, now - timedelta(seconds=policy.audit))
        done = Round(finished.messages, finished.octets, received, audit)
        if done:
            log.info(
                "pruned %d finished message(s) (%d octets), %d duplicate-"
                "detection key(s), %d audit record(s)",
                done.messages,
                done.octets,
                done.received,
                done.audit,
            )
        return done

    async def forever(self, healthy: Callable[[], None]) -> None:
        """A round soon after start, then one every ``interval`` seconds."""
        await asyncio.sleep(min(_FIRST_ROUND, self.retention.interval))
        while True:
            await self.round(datetime.now(UTC))
            healthy()
            await asyncio.sleep(self.retention.interval)

    async def _finished(self, before: datetime) -> Pruned:
        limit = self.retention.batch
        messages = octets = 0
        while True:
            pruned = await self._batch(lambda session: Pruner(session).finished(before, limit))
            messages, octets = messages + pruned.messages, octets + pruned.octets
            if pruned.messages < limit:
                return Pruned(messages, octets)

    async def _rows(self, prune: Callable[[Pruner, datetime, int], int], before: datetime) -> int:
        limit = self.retention.batch
        total = 0
        while True:
            count = await self._batch(lambda session: prune(Pruner(session), before, limit))
            total += count
            if count < limit:
                return total

    def _batch(self, unit: Callable[[Session], _T]) -> Awaitable[_T]:
        return self.db.batch(unit, durable=True, urgent=False)
