"""The daemon's long-lived delivery parts: the local deliverer, the expirer, the pruner.

- The local deliverer moves what intake left pending for local recipients (a probe, a
  report that did not decode at intake, a message whose deferred delivery time has come,
  X.411 12.2.1.1.1.5) into the message store, with the delivery reports asked for; it
  runs when woken (:meth:`Delivery.wake`) and at least every second.
- The expirer non-delivers recipients past their expiry time (X.411 8.3.1.2.1.10
  maximum-time-expired), every ``expiry_interval`` seconds.
- The operator's non-delivery (``x400ctl non-deliver``, :meth:`Delivery.non_deliver`)
  goes the expirer's way: the same units, the same reports, announced the same way.
- The pruner deletes what the MTA has finished with (:mod:`mta.delivery.retention`).
- The lease keeper renews this process's claims on queued work every third of the
  lease, and takes back the claims of any process of the site whose lease lapsed (one
  that was killed, or stalled): those are sent by the processes alive, and the takeover
  is logged once, with its count.

Each runs under the daemon's :class:`mta.supervisor.Supervisor` (restarted after an
error); each tells it when a round went well.  What they commit is announced through
intake (:meth:`mta.intake.intake.Intake.delivered`, :meth:`~mta.intake.intake.Intake.queued`).

Public API::

    Delivery(db, units, intake, *, healthy, retention, expiry_interval)
        .wake()   await .deliver_forever()  await .expire_forever()  await .prune_forever()
        await .keep_claims_forever()
        await .non_deliver(selection, reason) -> Failure
        .retention   (replaced on reload)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from config.schema import Retention
from mta.database import Database
from mta.delivery.retention import Pruning
from mta.delivery.units import DeliveryUnits
from mta.intake.intake import Intake
from store.queue import Failure, Selection

__all__ = ["CLAIMS", "EXPIRY", "EXPIRY_INTERVAL", "LOCAL_DELIVERY", "RETENTION", "Delivery"]

log = logging.getLogger("aiox400.mta")

_POLL = 1.0
"""Seconds between looks at the local queue when nothing wakes the deliverer."""
EXPIRY_INTERVAL = 5.0
"""Seconds between expiry runs (by default)."""
LOCAL_DELIVERY = "local delivery"
EXPIRY = "expiry"
RETENTION = "retention"
CLAIMS = "claim leases"
"""The parts' names, as the supervisor shows them."""


class Delivery:
    """The delivery parts of one MTA (see the module docstring)."""

    def __init__(
        self,
        db: Database,
        units: DeliveryUnits,
        intake: Intake,
        *,
        healthy: Callable[[str], None],
        retention: Retention,
        expiry_interval: float = EXPIRY_INTERVAL,
    ) -> None:
        self.db = db
        self.units = units
        self.intake = intake
        self.healthy = healthy
        self.expiry_interval = expiry_interval
        self._retention = retention
        self._pruning: Pruning | None = None
        self._wake = asyncio.Event()

    @property
    def retention(self) -> Retention:
        """``[retention]``, as the next round applies it."""
        return self._retention

    @retention.setter
    def retention(self, retention: Retention) -> None:
        self._retention = retention
        if self._pruning is not None:
            self._pruning.retention = retention

    def wake(self) -> None:
        """Something for a local recipient was queued."""
        self._wake.set()

    async def deliver_forever(self) -> None:
        while True:
            self._wake.clear()
            # Group-committed: deliveries share the disk flush of the transfers received.
            unit = functools.partial(self.units.deliver_local_in, now=datetime.now(UTC))
            outcomes = await self.db.batch(unit)
            self.healthy(LOCAL_DELIVERY)
            for outcome in outcomes:
                self.intake.delivered(outcome)
            if outcomes:
                self.intake.store.succeeded()
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_POLL):
                    await self._wake.wait()

    async def expire_forever(self) -> None:
        while True:
            expired = await self.db.run(self.units.expire, datetime.now(UTC))
            self.healthy(EXPIRY)
            if expired:
                log.warning("expired %d recipient(s): non-delivery reports queued", expired)
                self.intake.queued()
            await asyncio.sleep(self.expiry_interval)

    async def non_deliver(self, selection: Selection, reason: str) -> Failure:
        """The operator's non-delivery of the selected waiting recipients, with their
        reports (:meth:`mta.delivery.units.DeliveryUnits.non_deliver`)."""
        failure = await self.db.run(self.units.non_deliver, selection, reason, datetime.now(UTC))
        failed = sum(len(entry.recipients) for entry in failure.failed)
        if failed:
            log.warning(
                "non-delivered %d recipient(s) (operator: %s): non-delivery reports queued",
                failed,
                reason,
            )
            self.intake.queued()
        return failure

    async def keep_claims_forever(self) -> None:
        lease = self.units.lease
        assert lease is not None, "claims are not leased"
        while True:
            # Ahead of routine work: a renewal stuck behind a long queue could let a live
            # process's claims lapse.
            unit = functools.partial(self.units.keep_claims_in, now=datetime.now(UTC))
            taken = await self.db.batch(unit, durable=False, urgent=True)
            self.healthy(CLAIMS)
            if taken:
                log.warning(
                    "took back %d recipient(s) in flight whose claim lapsed (a process of "
                    "the site stopped renewing it): pending again",
                    taken,
                )
                self.intake.queued()
            await asyncio.sleep(lease.total_seconds() / 3)

    async def prune_forever(self) -> None:
        self._pruning = pruning = Pruning(self.db, self._retention)
        await pruning.forever(functools.partial(self.healthy, RETENTION))
