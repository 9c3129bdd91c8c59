"""The MTA daemon's wiring: one configuration's parts, started, reconfigured and stopped.

:class:`Service` builds the parts and owns every task; it decides nothing about a message:

- intake (:class:`mta.intake.intake.Intake`), the one way in for every message;
- the inbound transport (:class:`mta.inbound.listeners.Listeners`), whose peers' transfers
  go to intake;
- the outbound transport: a :class:`mta.outbound.channels.SlotRunner` per connection slot
  of every peer (:class:`mta.outbound.peers.Peers`), each taking its work from the queue
  (:class:`mta.outbound.units.TransferQueue`);
- delivery (:class:`mta.delivery.local.Delivery`): the local deliverer, the expirer and
  the pruner, under the :class:`mta.supervisor.Supervisor`;
- the operator's side: the local API (:mod:`mta.operator.control`), the Prometheus
  endpoint (:mod:`mta.operator.scrape`), which see the service through the narrow
  protocols of :mod:`mta.operator.views`.

Start-up: lock the state directory (:mod:`mta.instance`: a second daemon on it stops
there, having changed nothing; it also names the process's claims), open the database,
put back what this process left in flight, then listen and connect.  While it runs,
the process renews its claims and takes back those of a process of the site whose
lease lapsed (:meth:`mta.delivery.local.Delivery.keep_claims_forever`).  Stop: answer
the user agents waiting for mail, close the listeners and the local API (its socket
file removed if still ours), cancel every task and wait for it (a connection commits
the transfers its peer confirmed first), put back what this process had in flight,
close the database, unlock.  Nothing committed is lost at any point, and another
process's claims are never touched.

Public API::

    Service(config, *, timeouts=None, settings=None, expiry_interval=5.0)
        await .start()  /  await .stop()  /  await .run()   (until SIGTERM or SIGINT)
        .listening_ports -> list[int]
        .notify()                 wake every slot (held messages released, a flush)
        .peer_reachable(peer)     a peer answers: its slots try again now
        .flush_peer(peer)         the operator: its slots try again now, backoff anew
        .intake / .peers / .delivery / .listeners / .watch / .metrics / .store / .parts
        .reconfigure(config, *, then=None)    a reload (:mod:`mta.operator.reload`)
        .attach(controls) / .controls   the service loop's reload and stop, for the
                                  local API (:mod:`mta.lifecycle`)
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta

from config.schema import MtaConfig, Peer
from config.values import Transport
from mta.acp142.channel import Acp142Channel, channel_key
from mta.acp142.link import Acp142Link
from mta.database import Database
from mta.delivery.local import (
    CLAIMS,
    EXPIRY,
    EXPIRY_INTERVAL,
    LOCAL_DELIVERY,
    RETENTION,
    Delivery,
)
from mta.delivery.units import DeliveryUnits
from mta.delivery.watch import MailboxWatch
from mta.faults import StoreCondition, store_fault
from mta.inbound.guard import Guard
from mta.inbound.listeners import Listeners
from mta.instance import StateLock
from mta.intake.intake import Intake
from mta.intake.plan import Site, domain_of
from mta.intake.routing import Router
from mta.intake.units import IntakeUnits
from mta.lifecycle import serve
from mta.link import Timeouts
from mta.metrics import Metrics
from mta.operator.admission import ApiLimits
from mta.operator.control import SocketFile, serve_control
from mta.operator.minimize import MinimizeState, describe
from mta.operator.operations import LocalApi
from mta.operator.scrape import MetricsServer
from mta.operator.views import Controls
from mta.outbound.channels import ChannelContext, SlotRunner
from mta.outbound.giveway import GiveWay
from mta.outbound.peers import Peers
from mta.outbound.units import OutboundUnits, TransferQueue
from mta.supervisor import Supervisor
from mta.transport import Runner
from p1.association.connection import AssociationSettings
from p1.mts.precedence import Precedence
from store import open_database, sweep_spool, warm_up

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
        site = Site(
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
        self._acp142: Acp142Link | None = None
        self._building: dict[tuple[int, object], tuple[ChannelContext, Acp142Channel]] = {}
        """The ACP 142 channels of the runners being built, shared by a group's peers."""
        self._lock: StateLock | None = None
        self._owner: str | None = None
        self._socket: SocketFile | None = None
        self._control: asyncio.Server | None = None
        self._queue: TransferQueue | None = None
        self._minimize: MinimizeState | None = None
        self.parts = Supervisor(expected=self._part_fault)
        """The long-lived tasks: restarted after an error, listed while degraded."""
        self.peers = Peers(parts=self.parts, local=self._wake_local, others=self._acp142_runners)
        """Every peer's slot runners, woken by what is queued for them."""
        self.watch = MailboxWatch()
        """The users waiting for their next delivery (the local API's ``wait``)."""
        self.metrics = Metrics(process=True)
        """The counters and histograms; the Prometheus endpoint serves them when on."""
        self.give_way = GiveWay()
        """Flash work under way by peer: the peers' routine transfers wait for it."""
        self.guard = Guard.for_config(config)
        """Admits inbound P1 connections and prices failed binds (``[limits]``)."""
        self._intake_units = IntakeUnits(site, metrics=self.metrics)
        self._scrape: MetricsServer | None = None
        self._controls: Controls | None = None
        self._running = False
        """Started and not stopped since."""

    # --- parts -------------------------------------------------------------------------

    @property
    def db(self) -> Database:
        """The database thread (after :meth:`start`)."""
        assert self._db is not None, "the service is not started"
        return self._db

    @property
    def owner(self) -> str:
        """The owner of the queued work this process claims, ``<name>/<instance>``
        (after :meth:`start`)."""
        assert self._owner is not None, "the service is not started"
        return self._owner

    @property
    def minimize(self) -> MinimizeState:
        """The MINIMIZE in force (after :meth:`start`)."""
        assert self._minimize is not None, "the service is not started"
        return self._minimize

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
    def site(self) -> Site:
        """This MTA as intake sees it (its routes, precedence table, limits)."""
        return self._intake_units.site

    @property
    def store(self) -> StoreCondition:
        """Whether the store takes work (after :meth:`start`)."""
        return self.intake.store

    @property
    def listeners(self) -> Listeners:
        """The inbound transport (after :meth:`start`)."""
        assert self._listeners is not None, "the service is not started"
        return self._listeners

    @property
    def runners(self) -> list[Runner]:
        """Every slot runner, peer by peer."""
        return self.peers.runners

    @property
    def slot_runners(self) -> list[SlotRunner]:
        """The P1 peers' slot runners, peer by peer."""
        return [r for r in self.peers.runners if isinstance(r, SlotRunner)]

    @property
    def acp142(self) -> Acp142Link | None:
        """This MTA's ACP 142 node (after :meth:`start`, with an ``[acp142]`` table)."""
        return self._acp142

    def _acp142_runners(
        self, context: ChannelContext, peer: Peer, kept: Iterable[Runner]
    ) -> list[Runner]:
        """An ACP 142 peer's one channel, shared with the peers of its multicast group:
        today's if it serves them as configured, else one built for ``context`` (the
        group's other peers get the same)."""
        assert self._acp142 is not None, "an acp142 peer without [acp142]"
        group = peer.acp142.group
        members = [
            p
            for p in context.config.peers
            if p.transport is Transport.ACP142
            and (p.name == peer.name or (group is not None and p.acp142.group == group))
        ]
        key = channel_key(members)
        for runner in kept:
            if isinstance(runner, Acp142Channel) and runner.key == key:
                return [runner]
        built = self._building.get((id(context), key))
        if built is None or built[0] is not context:
            channel = Acp142Channel(context, members, self._acp142, parts=self.parts)
            built = self._building[(id(context), key)] = (context, channel)
        return [built[1]]

    @property
    def listening_ports(self) -> list[int]:
        """The TCP ports P1 is served on (useful when configured as 0)."""
        return [] if self._listeners is None else self._listeners.ports

    @property
    def controls(self) -> Controls | None:
        """The service loop's reload and stop (None unless :meth:`attach` gave them)."""
        return self._controls

    def attach(self, controls: Controls) -> None:
        """Hand the local API the service loop's reload and stop (:mod:`mta.lifecycle`)."""
        self._controls = controls

    # --- life --------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the store, recover, listen, connect; raises if a part cannot start,
        having undone what it did (the lock released, the store closed, nothing left
        listening), quietly: the caller says why it could not start."""
        try:
            await self._start()
        except BaseException:
            await self._close()
            raise
        self._running = True
        config = self.config
        log.info(
            "%s started: listening on %s; %d peer(s), %d slot(s)",
            config.name,
            ", ".join(f"{lst.address}:{lst.port}" for lst in config.listeners) or "nothing",
            len(config.peers),
            len(self.runners),
        )

    async def _start(self) -> None:
        config = self.config
        self._lock = StateLock.acquire(config.state_dir)  # before anything is touched
        self._owner = owner = self._lock.claim_owner(config.name)
        lease = timedelta(seconds=config.queue.lease)
        self._minimize = minimize = MinimizeState.load(config.state_dir, config.minimize.precedence)
        if minimize.floors.active:
            log.warning("MINIMIZE in force: %s", describe(minimize.floors))
        engine = await asyncio.to_thread(open_database, config.database)
        self._db = db = Database(engine)
        self._intake = Intake(
            db,
            self._intake_units,
            watch=self.watch,
            wake=self.peers.wake,
            claim_ahead=self.peers.claim_ahead,
            quarantine_bounds=lambda: self.config.quarantine,
            flash_work=self.give_way.during,
        )
        self._queue = TransferQueue(
            db,
            OutboundUnits(
                engine, self._intake_units, owner=owner, lease=lease, floor=minimize.floor
            ),
        )
        self._delivery = Delivery(
            db,
            DeliveryUnits(engine, self._intake_units, owner=owner, lease=lease),
            self._intake,
            healthy=self.parts.healthy,
            retention=config.retention,
            expiry_interval=self.expiry_interval,
        )
        recovered = await db.run(self.delivery.units.recover, datetime.now(UTC))
        log.info("claims queued work as %s, leased for %g s", owner, config.queue.lease)
        if recovered:
            log.info("put back %d recipient(s) left in flight", recovered)
        swept = await db.run(sweep_spool, engine)
        if swept:
            log.info("removed %d APDU file(s) that no committed message names", swept)
        slots: list[Sequence[Precedence]] = [
            slot.precedences for peer in config.peers for slot in peer.slots
        ]
        if any(peer.transport is Transport.ACP142 for peer in config.peers):
            slots.append(tuple(Precedence))
        built = await db.run(warm_up, engine, slots, now=datetime.now(UTC))
        log.debug("ran %d store statement(s) once before the first message", built)
        await self._start_parts()

    async def _start_parts(self) -> None:
        limits = self.config.connection_limits
        api = LocalApi(self, self.intake, self.watch)
        self._control = await serve_control(
            self.config.control_socket,
            api,
            policy=api.policy,
            limits=ApiLimits.of(limits),
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
        if self.config.acp142 is not None:
            self._acp142 = Acp142Link(
                self.config,
                self.intake,
                reachable=self.peer_reachable,
                route=lambda name: self.site.router.route(name),
            )
            await self._acp142.start()
        context = self._channel_context(self.config, self.timeouts, self.settings)
        self.peers.start(self.peers.build(self.config, context))
        self.parts.start(LOCAL_DELIVERY, self.delivery.deliver_forever)
        self.parts.start(EXPIRY, self.delivery.expire_forever)
        self.parts.start(CLAIMS, self.delivery.keep_claims_forever)
        self.parts.start(RETENTION, self.delivery.prune_forever)
        self._scrape = await MetricsServer.start(self)

    async def stop(self) -> None:
        """Stop everything and wait for it; what was in flight is put back.  Logs that
        it stopped only when it had started (a failed start was undone already)."""
        await self._close()
        if self._running:
            self._running = False
            log.info("%s stopped", self.config.name)

    async def _close(self) -> None:
        """Undo whatever part of :meth:`start` was done, in reverse."""
        self.watch.close()  # (user agents waiting for mail are told at once)
        if self._control is not None:
            self._control.close()
        if self._listeners is not None:
            self._listeners.close()
        if self._scrape is not None:
            await self._scrape.close()
        await self.peers.stop()
        if self._acp142 is not None:
            await self._acp142.stop()
            self._acp142 = None
        await self.parts.stop()
        if self._listeners is not None:
            await self._listeners.stop()
        if self._control is not None:
            await self._control.wait_closed()
            self._control = None
        if self._db is not None:
            if self._delivery is not None:
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

    async def run(self) -> None:
        """Start, serve until SIGTERM or SIGINT, stop (:func:`mta.lifecycle.serve`)."""
        await serve(self)

    # --- reload ------------------------------------------------------------------------

    def _channel_context(
        self, config: MtaConfig, timeouts: Timeouts, settings: AssociationSettings
    ) -> ChannelContext:
        assert self._queue is not None, "the service is not started"
        return ChannelContext(
            queue=self._queue,
            metrics=self.metrics,
            config=config,
            timeouts=timeouts,
            settings=settings,
            give_way=self.give_way,
        )

    def reconfigure(
        self, config: MtaConfig, *, then: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """Run on ``config`` from now on (a reload, :mod:`mta.operator.reload`): routing,
        intake, ``[limits]`` for new connections, binds and associations, ``[retention]``
        from the next round, and the peers' channels (:meth:`mta.outbound.peers.Peers
        .swap`).  Everything is built before anything is replaced, so an error leaves the
        service as it was."""
        old = self.config
        if self._acp142 is None and any(p.transport is Transport.ACP142 for p in config.peers):
            raise ValueError(
                "an acp142 peer needs this MTA's [acp142] node, which it started without: "
                "a restart adds it"
            )
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
            self._intake_units.site,
            router=Router(config),
            table=config.precedence_table,
            max_age=config.max_age,
            max_message_size=config.limits.max_message_size,
        )
        context = self._channel_context(config, timeouts, settings)
        runners = self.peers.build(config, context)
        self.guard.reconfigure(config)
        # From here on nothing fails: the parts are swapped with no await in between.
        self.config, self.settings, self.timeouts = config, settings, timeouts
        self._intake_units.site = site
        if self._listeners is not None:
            self._listeners.reconfigure(config, settings, timeouts)
        if self._acp142 is not None:
            self._acp142.reconfigure(config)
        if self._delivery is not None:
            self._delivery.retention = config.retention
        self.peers.swap(runners, context, config, then)

    # --- wake-ups (mta.operator.views.Daemon) ------------------------------------------

    def notify(self) -> None:
        """Anything may be due (held messages released, a flush): wake every slot."""
        self.peers.wake()

    def peer_reachable(self, peer: str) -> None:
        """``peer``'s slots stop waiting out their backoff."""
        self.peers.peer_reachable(peer)

    def flush_peer(self, peer: str) -> None:
        """``peer``'s slots try again now, their backoff started anew (``x400ctl flush``)."""
        self.peers.flush(peer)

    def _wake_local(self) -> None:
        if self._delivery is not None:
            self._delivery.wake()

    def _part_fault(self, error: Exception) -> str | None:
        """Why a long-lived part failed, when the store is the cause (then reported)."""
        fault = store_fault(error)
        if fault is not None and self._intake is not None:
            self._intake.store.failed(fault, refused=False)
        return fault


def _nothing(session: object) -> None:
    """A unit that does nothing: awaited, everything queued before it is committed."""
