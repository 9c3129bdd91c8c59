"""The MTA daemon's wiring: one configuration's parts, started, reconfigured and stopped.

:class:`Service` builds the parts and owns every task; it decides nothing about a message:

- intake (:class:`mta.intake.intake.Intake`), the one way in for every message;
- the inbound transport (:class:`mta.inbound.listeners.Listeners`), whose peers' transfers
  go to intake;
- the outbound transport: a :class:`mta.outbound.channels.SlotRunner` per connection slot
  of every peer, each taking its work from the queue (:class:`mta.outbound.units
  .TransferQueue`); when a peer is seen to answer again, every slot of its channel stops
  waiting out its reconnection backoff;
- delivery (:class:`mta.delivery.local.Delivery`): the local deliverer, the expirer and
  the pruner, under the :class:`mta.supervisor.Supervisor`;
- the operator's side: the local API (:mod:`mta.operator.control`), the Prometheus
  endpoint (:mod:`mta.operator.scrape`), which see the service through the narrow
  protocols of :mod:`mta.operator.views`.

Start-up: lock the state directory (:mod:`mta.instance`: a second daemon on it stops
there, having changed nothing), open the database, put back what a crash left in
flight, then listen and connect.  Stop: answer the user agents waiting for mail, close
the listeners and the local API (its socket file removed if still ours), cancel every
task and wait for it, put back what was in flight, close the database, unlock.
Nothing committed is lost at any point.

Public API::

    Service(config, *, timeouts=None, settings=None, expiry_interval=5.0)
        await .start()  /  await .stop()  /  await .run()   (until SIGTERM or SIGINT)
        .listening_ports -> list[int]
        .notify(plan=None, delivered=False)   wake the slots that may carry what was queued
        .claim_ahead(recipients, precedence)  an idle connection claims behind a submission
        .peer_reachable(peer)                 a peer answers: its slots try again now
        .intake / .delivery / .watch / .metrics / .store / .runners / .parts
        .reconfigure(config, *, then=None)    a reload (:mod:`mta.operator.reload`)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime

from config.schema import MtaConfig, Peer
from mta.database import Database
from mta.delivery.local import EXPIRY, EXPIRY_INTERVAL, LOCAL_DELIVERY, RETENTION, Delivery
from mta.delivery.units import DeliveryUnits
from mta.delivery.watch import MailboxWatch
from mta.faults import StoreCondition, store_fault
from mta.inbound.guard import Guard
from mta.inbound.listeners import Listeners
from mta.inbound.tolerance import ToleranceLog
from mta.instance import StateLock
from mta.intake.intake import Intake
from mta.intake.plan import Plan, Site, domain_of
from mta.intake.recent import RecentPrecedences
from mta.intake.routing import PeerRoute, Router
from mta.intake.units import IntakeUnits
from mta.lifecycle import serve
from mta.link import Timeouts
from mta.operator.control import SocketFile, serve_control
from mta.operator.metrics import Metrics
from mta.operator.operations import LocalApi
from mta.operator.scrape import MetricsServer
from mta.outbound.channels import ChannelContext, SlotRunner
from mta.outbound.units import OutboundUnits, TransferQueue
from mta.supervisor import Supervisor
from p1.association.connection import AssociationSettings
from p1.mts.orname import ORName
from p1.mts.precedence import Precedence
from store import LOCAL_ROUTE, open_database, sweep_spool, warm_up

__all__ = ["Service"]

log = logging.getLogger("aiox400.mta")


class Service:
    """One running MTA (see the module docstring)."""

    def __init__(
        self,
        config: MtaConfig,
        *,
        timeouts: Timeouts | None = None,
        settings: AssociationSettings | None = None,
        expiry_interval: float = EXPIRY_INTERVAL,
    ) -> None:
        self.config = config
        self.expiry_interval = expiry_interval
        self.timeouts = timeouts or Timeouts(
            bind=config.connection_limits.bind_timeout, idle=config.connection_limits.idle_timeout
        )
        self.settings = settings or AssociationSettings(limits=config.limits)
        self.site = Site(
            name=config.name,
            domain=domain_of(config.global_domain),
            router=Router(config),
            table=config.precedence_table,
            max_age=config.max_age,
            max_message_size=config.limits.max_message_size,
        )
        self.started = time.monotonic()
        self.frozen = 0
        """Objects of start-up left out of garbage collection (set once :meth:`run` started)."""
        self._db: Database | None = None
        self._intake: Intake | None = None
        self._delivery: Delivery | None = None
        self._listeners: Listeners | None = None
        self._lock: StateLock | None = None
        self._socket: SocketFile | None = None
        self._control: asyncio.Server | None = None
        self._runners: dict[str, list[SlotRunner]] = {}
        self._leaving: dict[SlotRunner, None] = {}  # retired by a reload, not yet ended
        self._handover: asyncio.Task[None] | None = None
        self.parts = Supervisor(expected=self._part_fault)
        """The long-lived tasks: restarted after an error, listed while degraded."""
        self.watch = MailboxWatch()
        """The users waiting for their next delivery (the local API's ``wait``)."""
        self.metrics = Metrics(process=True)
        """The counters and histograms; the Prometheus endpoint serves them when on."""
        self.guard = Guard.for_config(config)
        """Admits inbound P1 connections and prices failed binds (``[limits]``)."""
        self._intake_units = IntakeUnits(self.site, metrics=self.metrics)
        self._scrape: MetricsServer | None = None

    # --- parts -------------------------------------------------------------------------

    @property
    def db(self) -> Database:
        """The database thread (after :meth:`start`)."""
        assert self._db is not None, "the service is not started"
        return self._db

    @property
    def intake(self) -> Intake:
        """The one way in (after :meth:`start`)."""
        assert self._intake is not None, "the service is not started"
        return self._intake

    @property
    def delivery(self) -> Delivery:
        """Local delivery, expiry and retention (after :meth:`start`)."""
        assert self._delivery is not None, "the service is not started"
        return self._delivery

    @property
    def store(self) -> StoreCondition:
        """Whether the store takes work (after :meth:`start`)."""
        return self.intake.store

    @property
    def recent(self) -> RecentPrecedences:
        """The precedences of the messages taken in lately."""
        return self.intake.recent

    @property
    def tolerated(self) -> ToleranceLog:
        """What peers sent outside the standard's form and was read anyway."""
        return self.intake.tolerated

    @property
    def listeners(self) -> Listeners:
        """The inbound transport (after :meth:`start`)."""
        assert self._listeners is not None, "the service is not started"
        return self._listeners

    @property
    def runners(self) -> list[SlotRunner]:
        """Every slot runner, peer by peer."""
        return [runner for runners in self._runners.values() for runner in runners]

    @property
    def listening_ports(self) -> list[int]:
        """The TCP ports P1 is served on (useful when configured as 0)."""
        return [] if self._listeners is None else self._listeners.ports

    # --- life --------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the store, recover, listen, connect; raises if a part cannot start."""
        config = self.config
        self._lock = StateLock.acquire(config.state_dir)  # before anything is touched
        engine = await asyncio.to_thread(open_database, config.database)
        self._db = db = Database(engine)
        self._intake = Intake(
            db,
            self._intake_units,
            watch=self.watch,
            wake=self.notify,
            quarantine_bounds=lambda: self.config.quarantine,
        )
        self._queue = TransferQueue(
            db, OutboundUnits(engine, self._intake_units, owner=config.name)
        )
        self._delivery = Delivery(
            db,
            DeliveryUnits(engine, self._intake_units, owner=config.name),
            self._intake,
            healthy=self.parts.healthy,
            retention=config.retention,
            expiry_interval=self.expiry_interval,
        )
        recovered = await db.run(self.delivery.units.recover, datetime.now(UTC))
        if recovered:
            log.info("put back %d recipient(s) left in flight", recovered)
        swept = await db.run(sweep_spool, engine)
        if swept:
            log.info("removed %d APDU file(s) that no committed message names", swept)
        slots = [slot.precedences for peer in config.peers for slot in peer.slots]
        built = await db.run(warm_up, engine, slots, now=datetime.now(UTC))
        log.debug("ran %d store statement(s) once before the first message", built)
        try:
            await self._start_parts()
        except BaseException:
            await self.stop()
            raise
        log.info(
            "%s started: listening on %s; %d peer(s), %d slot(s)",
            config.name,
            ", ".join(f"{lst.address}:{lst.port}" for lst in config.listeners) or "nothing",
            len(config.peers),
            len(self.runners),
        )

    async def _start_parts(self) -> None:
        limits = self.config.connection_limits
        self._control = await serve_control(
            self.config.control_socket,
            LocalApi(self, self.intake, self.watch),
            max_connections=limits.max_api_connections,
            idle_timeout=limits.api_idle_timeout,
            max_payload=self.config.limits.max_message_size,
        )
        self._socket = SocketFile.of(self.config.control_socket)
        self._listeners = Listeners(
            self.config,
            self.intake,
            guard=self.guard,
            metrics=self.metrics,
            reachable=self.peer_reachable,
            settings=self.settings,
            timeouts=self.timeouts,
        )
        await self._listeners.start()
        context = self._channel_context(self.config, self.timeouts, self.settings)
        for peer in self.config.peers:
            self._runners[peer.name] = self._channel(context, peer)
        for runner in self.runners:
            runner.start()
        self.parts.start(LOCAL_DELIVERY, self.delivery.deliver_forever)
        self.parts.start(EXPIRY, self.delivery.expire_forever)
        self.parts.start(RETENTION, self.delivery.prune_forever)
        self._scrape = await MetricsServer.start(self)

    async def stop(self) -> None:
        """Stop everything and wait for it; what was in flight is put back."""
        self.watch.close()  # (user agents waiting for mail are told at once)
        if self._control is not None:
            self._control.close()
        if self._listeners is not None:
            self._listeners.close()
        if self._scrape is not None:
            await self._scrape.close()
        if self._handover is not None:
            self._handover.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._handover
        for runner in [*self.runners, *self._leaving]:
            await runner.stop()
        await self.parts.stop()
        if self._listeners is not None:
            await self._listeners.stop()
        if self._control is not None:
            await self._control.wait_closed()
            self._control = None
        if self._db is not None:
            # Units queued by the tasks just stopped are committed first, then put back.
            await self.db.batch(_nothing, durable=False)
            await self.db.run(self.delivery.units.recover, datetime.now(UTC))
            self.db.close()
            self._db = None
        if self._socket is not None:
            self._socket.remove()
            self._socket = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        log.info("%s stopped", self.config.name)

    async def run(self) -> None:
        """Start, serve until SIGTERM or SIGINT, stop (:func:`mta.lifecycle.serve`)."""
        await serve(self)

    # --- reload ------------------------------------------------------------------------

    def _channel_context(
        self, config: MtaConfig, timeouts: Timeouts, settings: AssociationSettings
    ) -> ChannelContext:
        return ChannelContext(
            queue=self._queue,
            metrics=self.metrics,
            config=config,
            timeouts=timeouts,
            settings=settings,
        )

    def _channel(
        self, context: ChannelContext, peer: Peer, kept: Iterable[SlotRunner] = ()
    ) -> list[SlotRunner]:
        """The runners of ``peer``'s slots: one of ``kept`` that serves the slot as it is
        (:meth:`mta.outbound.channels.SlotRunner.serves`), else a new one, not started."""
        reachable = functools.partial(self.peer_reachable, peer.name)
        return [
            next((r for r in kept if r.serves(peer, slot)), None)
            or SlotRunner(context, peer, slot, on_connected=reachable, parts=self.parts)
            for slot in peer.slots
        ]

    def reconfigure(
        self, config: MtaConfig, *, then: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """Run on ``config`` from now on (a reload, :mod:`mta.operator.reload`): routing, intake,
        ``[limits]`` for new connections, binds and associations, ``[retention]`` from the
        next round.  A slot whose peer and settings are as they were keeps its runner
        (and its connections); the others get a new one, and the runners of the slots
        gone retire.  Everything is built before anything is replaced, so an error
        leaves the service as it was.  The retired runners hand over in a task
        (:meth:`mta.outbound.channels.SlotRunner.retire`), which then awaits ``then()``."""
        old = self.config
        settings = self.settings
        if config.limits != old.limits:
            settings = dataclasses.replace(settings, limits=config.limits)
        timeouts = self.timeouts
        if config.connection_limits != old.connection_limits:
            limits = config.connection_limits
            timeouts = dataclasses.replace(
                timeouts, bind=limits.bind_timeout, idle=limits.idle_timeout
            )
        site = dataclasses.replace(
            self.site,
            router=Router(config),
            table=config.precedence_table,
            max_age=config.max_age,
            max_message_size=config.limits.max_message_size,
        )
        context = self._channel_context(config, timeouts, settings)
        runners = {
            p.name: self._channel(context, p, self._runners.get(p.name, ())) for p in config.peers
        }
        kept = {r for rs in runners.values() for r in rs} & set(self.runners)
        self.guard.reconfigure(config)
        # From here on nothing fails: the parts are swapped with no await in between.
        self.config, self.settings, self.timeouts, self.site = config, settings, timeouts, site
        self._intake_units.site = site
        if self._listeners is not None:
            self._listeners.reconfigure(config, settings, timeouts)
        if self._delivery is not None:
            self._delivery.retention = config.retention
        leaving = [r for r in self.runners if r not in kept]
        fresh = [r for rs in runners.values() for r in rs if r not in kept]
        for peer in config.peers:
            for runner in runners[peer.name]:
                if runner in kept:
                    runner.reconfigure(context, peer)
        self._runners = runners
        self._leaving.update(dict.fromkeys(leaving))
        previous = self._handover
        self._handover = asyncio.create_task(
            self._hand_over(previous, leaving, fresh, then), name="reload hand-over"
        )
        self._handover.add_done_callback(_hand_over_ended)

    async def _hand_over(
        self,
        previous: asyncio.Task[None] | None,
        leaving: list[SlotRunner],
        fresh: list[SlotRunner],
        then: Callable[[], Awaitable[None]] | None,
    ) -> None:
        """The runners ``leaving`` stop opening connections, ``fresh`` start (a slot's
        new runner only once its old one's supervisor has ended: they share its name),
        and what ``leaving`` claimed and did not send is pending again for them."""
        if previous is not None:
            await asyncio.wait((previous,))  # (one reload's hand-over after another's)
        for runner in leaving:
            await runner.retire()
        for runner in fresh:
            runner.start()
        for runner in leaving:
            await runner.drain()
            self._leaving.pop(runner, None)
        if leaving:
            self.notify()  # (what they put back is due for the runners that replace them)
        if then is not None:
            await then()

    # --- wake-ups ----------------------------------------------------------------------

    def notify(self, plan: Plan | None = None, delivered: bool = False) -> None:
        """Something was queued: wake whoever serves its routes at its precedence
        (everyone if unsure).  ``delivered``: the plan's local recipients were delivered
        as it was taken in, so the local deliverer has nothing to do for it."""
        message = plan.message if plan is not None else None
        precedence = message.precedence if message is not None else None
        routes = {r.route for r in message.recipients} if message is not None else None
        if routes is None or plan is None or plan.rejected:
            routes, precedence = {LOCAL_ROUTE, *self._runners}, None
        elif delivered:
            routes.discard(LOCAL_ROUTE)
        if LOCAL_ROUTE in routes and self._delivery is not None:
            self._delivery.wake()
        for route in routes:
            for runner in self._runners.get(route, ()):
                if precedence is None or runner.admits(precedence):
                    runner.wake()  # (a slot that does not carry it would claim nothing)

    def claim_ahead(self, recipients: Iterable[ORName], precedence: Precedence) -> None:
        """A submission for ``recipients`` at ``precedence`` is queued for commit: for each
        peer they are routed to, an idle connection of a slot carrying that precedence
        queues its claim right behind it (:meth:`SlotRunner.claim_ahead`)."""
        peers = {
            route.peer
            for route in map(self.site.router.route, recipients)
            if isinstance(route, PeerRoute)
        }
        for peer in peers:
            for runner in self._runners.get(peer, ()):
                if runner.admits(precedence) and runner.claim_ahead():
                    break

    def peer_reachable(self, peer: str) -> None:
        """``peer`` answers (a slot bound to it, or it bound to us): every slot of its
        channel that waits out a backoff tries again now, the urgent ones included."""
        for runner in self._runners.get(peer, ()):
            runner.peer_reachable()

    def _part_fault(self, error: Exception) -> str | None:
        """Why a long-lived part failed, when the store is the cause (then reported)."""
        fault = store_fault(error)
        if fault is not None and self._intake is not None:
            self._intake.store.failed(fault, refused=False)
        return fault


def _hand_over_ended(task: asyncio.Task[None]) -> None:
    """Log a reload's hand-over that failed (its runners are stopped with the service)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("reload: the hand-over of the channels failed", exc_info=task.exception())


def _nothing(session: object) -> None:
    """A unit that does nothing: awaited, everything queued before it is committed."""
