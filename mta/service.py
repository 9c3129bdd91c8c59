"""The MTA daemon: listeners, peer channels, local delivery, expiry and the local API.

:class:`Service` wires one configuration's parts together and owns every task:

- a marked listener per configured ``[[listeners]]`` entry (the DSCP is set before the
  first accept), whose associations authenticate the peer in the MTA-bind (X.411
  12.1.1) and confirm a transfer only once it is committed to the queue, or, when its
  own octets keep it from being taken in, to the quarantine (:mod:`mta.intake.quarantine`),
  or, over ``max_message_size``, once the non-delivery report on it is
  (:mod:`mta.intake.oversize`);
- a :class:`mta.outbound.channels.SlotRunner` per connection slot of every peer; when a peer is
  seen to answer again (one of its slots binds, or it binds to us), every slot of its
  channel stops waiting out its reconnection backoff;
- the local deliverer, which moves local recipients into their mailboxes and queues the
  delivery reports they asked for;
- the expirer, which non-delivers recipients past their expiry time;
- the local API (:mod:`mta.operator.control`) on ``control_socket``, whose ``wait`` requests
  are woken by the deliveries committed to their user (:mod:`mta.delivery.watch`).

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
        .notify(plan)  /  .peer_reachable(peer)   wake the slots that may have work
        .claim_ahead(recipients, precedence)      an idle connection claims behind a submission
        .delivered(outcome)      a local delivery was committed: log it, wake its watchers
        .watch -> MailboxWatch   users waiting for their next delivery
        .recent -> RecentPrecedences   the precedences of the messages taken in lately
        .metrics -> Metrics      the counters, served by ``[metrics]`` (:mod:`mta.operator.scrape`)
        .reconfigure(config, *, then=None)   a reload (:mod:`mta.operator.reload`)
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
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from config.schema import Listener, MtaConfig, Peer
from mta import net
from mta.database import Database
from mta.delivery.retention import Pruning
from mta.delivery.watch import MailboxWatch
from mta.faults import StoreCondition, store_fault
from mta.inbound.guard import Guard
from mta.inbound.tolerance import ToleranceLog
from mta.instance import StateLock
from mta.intake.journal import log_intake, log_non_delivery
from mta.intake.oversize import envelope_of, too_long_line
from mta.intake.plan import IntakeError, MalformedApduError, Plan, Site, domain_of, precedence_of
from mta.intake.quarantine import full_refusal
from mta.intake.recent import RecentPrecedences
from mta.intake.routing import PeerRoute, Router
from mta.intake.units import LocalOutcome, Units
from mta.lifecycle import serve
from mta.link import Responder, Timeouts, TransferRefusedError, serve_link
from mta.operator.control import SocketFile, serve_control
from mta.operator.metrics import Metrics
from mta.operator.operations import LocalApi
from mta.operator.scrape import MetricsServer
from mta.outbound.channels import ChannelContext, SlotRunner
from mta.outbound.schedule import is_urgent
from mta.supervisor import Supervisor
from p1.association.connection import AssociationSettings, BindRequested, TransferTooLong
from p1.association.mtabind import MTABindError, MTABindResult
from p1.ber import Deviation
from p1.errors import DecodeError
from p1.mts.envelope import (
    MessageEnvelope,
    Probe,
    Report,
    long_tags_in_message_envelope,
    peek_envelope,
)
from p1.mts.orname import ORName
from p1.mts.precedence import Precedence
from store import LOCAL_ROUTE, ApduKind, open_database, sweep_spool, warm_up

__all__ = ["Service"]

log = logging.getLogger("aiox400.mta")

_T = TypeVar("_T")

_POLL = 1.0
"""Seconds between looks at the local queue when nothing wakes the deliverer."""
EXPIRY_INTERVAL = 5.0
"""Seconds between expiry runs (by default)."""


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
        self._lock: StateLock | None = None
        self._socket: SocketFile | None = None
        self._units: Units | None = None
        self._servers: list[asyncio.Server] = []
        self._runners: dict[str, list[SlotRunner]] = {}
        self._leaving: dict[SlotRunner, None] = {}  # retired by a reload, not yet ended
        self._handover: asyncio.Task[None] | None = None
        self._pruning: Pruning | None = None
        self.parts = Supervisor(expected=self._part_fault)
        """The long-lived tasks: restarted after an error, listed while degraded."""
        self._inbound: set[asyncio.Task[Any]] = set()
        self._local_wake = asyncio.Event()
        self.watch = MailboxWatch()
        """The users waiting for their next delivery (the local API's ``wait``)."""
        self.recent = RecentPrecedences()
        """The precedences of the messages taken in lately (a report's unit is scheduled
        at its subject's)."""
        self.store = StoreCondition()
        """Whether the store takes work (a full disk, a database that does not answer)."""
        self.tolerated = ToleranceLog()
        """What peers sent outside the standard's form and was read anyway."""
        self.metrics = Metrics(process=True)
        """The counters and histograms; the Prometheus endpoint serves them when on."""
        self._scrape: MetricsServer | None = None

    # --- parts -------------------------------------------------------------------------

    @property
    def db(self) -> Database:
        """The database thread (after :meth:`start`)."""
        assert self._db is not None, "the service is not started"
        return self._db

    @property
    def units(self) -> Units:
        """The store's units of work (after :meth:`start`)."""
        assert self._units is not None, "the service is not started"
        return self._units

    @property
    def runners(self) -> list[SlotRunner]:
        """Every slot runner, peer by peer."""
        return [runner for runners in self._runners.values() for runner in runners]

    @property
    def listening_ports(self) -> list[int]:
        """The TCP ports P1 is served on (useful when configured as 0)."""
        return [net.bound_port(server) for server in self._servers[1:]]

    # --- life --------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the store, recover, listen, connect; raises if a part cannot start."""
        config = self.config
        self._lock = StateLock.acquire(config.state_dir)  # before anything is touched
        engine = await asyncio.to_thread(open_database, config.database)
        self._db = Database(engine)
        self._units = Units(engine, self.site, owner=config.name, metrics=self.metrics)
        recovered = await self.db.run(self.units.recover, datetime.now(UTC))
        if recovered:
            log.info("put back %d recipient(s) left in flight", recovered)
        swept = await self.db.run(sweep_spool, engine)
        if swept:
            log.info("removed %d APDU file(s) that no committed message names", swept)
        slots = [slot.precedences for peer in config.peers for slot in peer.slots]
        built = await self.db.run(warm_up, engine, slots, now=datetime.now(UTC))
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
        api = serve_control(
            self.config.control_socket,
            LocalApi(self),
            max_connections=limits.max_api_connections,
            idle_timeout=limits.api_idle_timeout,
            max_payload=self.config.limits.max_message_size,
        )
        self._servers.append(await api)
        self._socket = SocketFile.of(self.config.control_socket)
        self.guard = Guard.for_config(self.config)
        """Admits inbound P1 connections and prices failed binds (``[limits]``)."""
        for listener in self.config.listeners:
            accept = functools.partial(self._accept, listener)
            server = await net.start_marked_server(
                accept,
                listener.address,
                listener.port,
                dscp=listener.dscp,
                congestion=self.config.tcp_congestion,
            )
            self._servers.append(server)
        context = self._channel_context(self.config, self.timeouts, self.settings)
        for peer in self.config.peers:
            self._runners[peer.name] = self._channel(context, peer)
        for runner in self.runners:
            runner.start()
        self.parts.start(_LOCAL_DELIVERY, self._deliver_forever)
        self.parts.start(_EXPIRY, self._expire_forever)
        self.parts.start(_RETENTION, self._prune_forever)
        self._scrape = await MetricsServer.start(self)

    async def stop(self) -> None:
        """Stop everything and wait for it; what was in flight is put back."""
        self.watch.close()  # (user agents waiting for mail are told at once)
        for server in self._servers:
            server.close()
        if self._scrape is not None:
            await self._scrape.close()
        if self._handover is not None:
            self._handover.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._handover
        for runner in [*self.runners, *self._leaving]:
            await runner.stop()
        await self.parts.stop()
        tasks = [*self._inbound]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()
        if self._db is not None:
            # Units queued by the tasks just stopped are committed first, then put back.
            await self.db.batch(_nothing, durable=False)
            await self.db.run(self.units.recover, datetime.now(UTC))
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
            db=self.db, units=self.units, config=config, timeouts=timeouts, settings=settings
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
        self.units.site = site
        if self._pruning is not None:
            self._pruning.retention = config.retention
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

    def notify(self, plan: Plan | None = None, *, delivered: LocalOutcome | None = None) -> None:
        """Something was queued: note a message's precedence (:attr:`recent`, for its
        reports), and wake whoever serves its routes at its precedence (everyone if
        unsure).

        ``delivered``: the plan's local recipients were delivered as it was taken in, so
        the local deliverer has nothing to do for it.
        """
        message = plan.message if plan is not None else None
        if message is not None and message.kind is not ApduKind.REPORT:
            self.recent.note(message.mts_identifier, message.precedence)
        precedence = message.precedence if message is not None else None
        routes = {r.route for r in message.recipients} if message is not None else None
        if routes is None or plan is None or plan.rejected:
            routes, precedence = {LOCAL_ROUTE, *self._runners}, None
        elif delivered is not None:
            routes.discard(LOCAL_ROUTE)
        if LOCAL_ROUTE in routes:
            self._local_wake.set()
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

    # --- inbound -----------------------------------------------------------------------

    async def _accept(
        self,
        listener: Listener,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        task = asyncio.current_task()
        assert task is not None

        def close() -> None:
            writer.transport.abort()
            task.cancel()

        ticket = self.guard.admit(writer.get_extra_info("peername"), close)
        if ticket is None:  # over a limit: closed before anything is read
            writer.transport.abort()
            return
        self._inbound.add(task)
        try:
            # Cancelled by stop(), or when the guard gives this unbound connection's place
            # to another: end quietly, as Python 3.11's streams would report a cancelled
            # connection handler to the loop's exception handler as an error.
            with contextlib.suppress(asyncio.CancelledError):
                await serve_link(
                    reader,
                    writer,
                    _Inbound(self),
                    settings=listener_settings(self.settings, listener),
                    timeouts=self.timeouts,
                    ticket=ticket,
                )
        finally:
            ticket.release()
            self._inbound.discard(task)

    async def receive(self, apdu: bytes, peer: str) -> None:
        """Take a transfer from ``peer``; return once committed (then it is confirmed).

        An APDU whose own octets keep it from being taken in is committed to the
        quarantine instead, with the non-delivery report its envelope allows, unless the
        quarantine is full; a store fault refuses it as temporary.
        """
        now = datetime.now(UTC)
        envelope = _peek(apdu)  # (on the loop: the busier database thread is spared it)
        precedence = precedence_of(envelope, self.site, self.recent.of)
        unit = functools.partial(
            self.units.receive_and_deliver_in,
            apdu=apdu,
            now=now,
            origin_peer=peer,
            envelope=envelope,
        )
        try:
            plan, result, delivered = await self._commit(unit, urgent=is_urgent(precedence))
        except MalformedApduError as error:
            await self._quarantine(apdu, peer, str(error), now)
            self.metrics.received(peer, precedence, len(apdu), outcome="quarantined")
            return
        except IntakeError as error:
            raise TransferRefusedError(str(error)) from error
        if envelope is not None:
            self._tolerated(apdu, envelope, peer)
        if delivered is not None and delivered.deviations:  # (its heading, read to deliver)
            self.tolerated.received(peer, delivered.mts_identifier, delivered.deviations)
        log_intake("received", plan, result, f"from {peer}")
        self.metrics.received(peer, precedence, len(apdu))
        if isinstance(envelope, Report) and result is not None and result.queued:
            log_non_delivery(envelope, peer)
        self.delivered(delivered)
        self.notify(plan, delivered=delivered)

    async def receive_too_long(self, event: TransferTooLong, peer: str) -> None:
        """Take a transfer from ``peer`` over ``max_message_size``; return once the
        non-delivery report on its message is committed (then it is confirmed).
        TransferRefusedError (the association is aborted) when it is not a message whose
        envelope its first octets hold (:func:`mta.intake.oversize.envelope_of`)."""
        envelope = envelope_of(event)
        unit = functools.partial(
            self.units.too_long_in, subject=envelope, peer=peer, now=datetime.now(UTC)
        )
        urgent = is_urgent(precedence_of(envelope, self.site))
        reported, report = await self._commit(unit, urgent=urgent)
        log.warning(too_long_line(envelope, event, peer, report))
        if reported:
            self.notify()

    def _tolerated(
        self, apdu: bytes, envelope: MessageEnvelope | Probe | Report, peer: str
    ) -> None:
        """Log what the envelope of an APDU taken in held outside the standard's form."""
        deviations = (*envelope.deviations, *_long_tags(apdu, envelope))
        if deviations:
            self.tolerated.received(peer, envelope.mts_identifier.text, deviations)

    async def _commit(self, unit: Callable[[Session], _T], *, urgent: bool = False) -> _T:
        """``unit``, group-committed; a store fault refuses the transfer as temporary."""
        try:
            result = await self.db.batch(unit, urgent=urgent)
        except Exception as error:
            fault = store_fault(error)
            if fault is None:
                raise
            self.store.failed(fault)
            raise TransferRefusedError(f"cannot store: {fault}", temporary=True) from error
        self.store.succeeded()
        return result

    async def _quarantine(self, apdu: bytes, peer: str, reason: str, now: datetime) -> None:
        """Keep ``apdu`` in the quarantine, with the non-delivery report its envelope
        allows, or refuse it when the quarantine is full."""
        bounds = self.config.quarantine
        unit = functools.partial(
            self.units.quarantine_in, apdu=apdu, peer=peer, reason=reason, now=now, bounds=bounds
        )
        kept = await self._commit(unit)
        if kept.entry_id is None:
            raise TransferRefusedError(full_refusal(kept, len(apdu), reason, bounds))
        log.warning(
            "%s: transfer of %d octets kept in quarantine as #%d, not delivered: %s; %s",
            peer,
            len(apdu),
            kept.entry_id,
            reason,
            kept.report,
        )
        if kept.reported:
            self.notify()

    def delivered(self, outcome: LocalOutcome | None) -> None:
        """Log a local delivery; send on the delivery report it queued."""
        if outcome is None:
            return
        self.watch.stored(outcome.users, datetime.now(UTC))
        log.info(
            "delivered %s %s (%s) to %s%s",
            outcome.kind.value,
            outcome.mts_identifier,
            outcome.precedence.label,
            ", ".join(outcome.users),
            "; delivery report queued" if outcome.reported else "",
        )
        if outcome.reported:
            self.notify()

    def _part_fault(self, error: Exception) -> str | None:
        """Why a long-lived part failed, when the store is the cause (then reported)."""
        fault = store_fault(error)
        if fault is not None:
            self.store.failed(fault, refused=False)
        return fault

    # --- local delivery and expiry -----------------------------------------------------

    async def _deliver_forever(self) -> None:
        while True:
            self._local_wake.clear()
            # Group-committed: deliveries share the disk flush of the transfers received.
            unit = functools.partial(self.units.deliver_local_in, now=datetime.now(UTC))
            outcomes = await self.db.batch(unit)
            self.parts.healthy(_LOCAL_DELIVERY)
            for outcome in outcomes:
                self.delivered(outcome)
            if outcomes:
                self.store.succeeded()
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_POLL):
                    await self._local_wake.wait()

    async def _expire_forever(self) -> None:
        while True:
            expired = await self.db.run(self.units.expire, datetime.now(UTC))
            self.parts.healthy(_EXPIRY)
            if expired:
                log.warning("expired %d recipient(s): non-delivery reports queued", expired)
                self.notify()
            await asyncio.sleep(self.expiry_interval)

    async def _prune_forever(self) -> None:
        self._pruning = pruning = Pruning(self.db, self.config.retention)
        await pruning.forever(functools.partial(self.parts.healthy, _RETENTION))


_LOCAL_DELIVERY = "local delivery"
_EXPIRY = "expiry"
_RETENTION = "retention"


class _Inbound(Responder):
    """One inbound association: who the peer is, and where its transfers go."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.peer: Peer | None = None

    async def on_bind(self, event: BindRequested) -> MTABindResult | MTABindError:
        argument = event.argument
        peer = _peer_named(self.service.config, argument.initiator_name)
        notes = self.service.guard.warnings  # (anyone can make these lines: rate-limited)
        if peer is None:
            notes.warning(
                log, "unknown MTA", "bind refused: unknown MTA %r", argument.initiator_name
            )
            self.service.metrics.bind_refused("", "in", "unknown-mta")
            return MTABindError.AUTHENTICATION_ERROR
        expected = peer.their_credentials.password
        if expected is not None and not expected.matches(argument.password or ""):
            notes.warning(
                log, f"password {peer.name}", "bind refused: wrong password from %s", peer.name
            )
            self.service.metrics.bind_refused(peer.name, "in", "wrong-password")
            return MTABindError.AUTHENTICATION_ERROR
        self.peer = peer
        self.service.peer_reachable(peer.name)
        ours = peer.our_credentials
        password = ours.password or self.service.config.password
        return MTABindResult(
            responder_name=ours.name, password=password.reveal() if password else ""
        )

    async def on_transfer(self, apdu: bytes) -> None:
        assert self.peer is not None, "transfers come only after an accepted bind"
        await self.service.receive(apdu, self.peer.name)

    async def on_transfer_too_long(self, event: TransferTooLong) -> None:
        assert self.peer is not None, "transfers come only after an accepted bind"
        await self.service.receive_too_long(event, self.peer.name)


def _hand_over_ended(task: asyncio.Task[None]) -> None:
    """Log a reload's hand-over that failed (its runners are stopped with the service)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("reload: the hand-over of the channels failed", exc_info=task.exception())


def _long_tags(apdu: bytes, envelope: MessageEnvelope | Probe | Report) -> tuple[Deviation, ...]:
    """A message envelope's long-form tags, which its decoder does not look for."""
    if not isinstance(envelope, MessageEnvelope):
        return ()
    try:
        return long_tags_in_message_envelope(apdu)
    except DecodeError:  # (it decoded to be taken in: not expected)
        return ()


def _peek(apdu: bytes) -> MessageEnvelope | Probe | Report | None:
    """The APDU's envelope, or None if it does not decode (the unit then refuses it)."""
    try:
        return peek_envelope(apdu)
    except DecodeError:
        return None


def _nothing(session: object) -> None:
    """A unit that does nothing: awaited, everything queued before it is committed."""


def _peer_named(config: MtaConfig, name: str | None) -> Peer | None:
    if name is None:
        return None
    return next((p for p in config.peers if p.their_credentials.name == name), None)


def listener_settings(base: AssociationSettings, listener: Listener) -> AssociationSettings:
    """``base`` serving only the called selectors ``listener`` accepts: a CR for another
    TSEL is refused with DR "address unknown" (X.224 13.3.4 a), a CN for another SSEL
    with RF "session selector unknown" (X.225), a CP for another PSEL with CPR
    called-presentation-address-unknown (X.226)."""
    return dataclasses.replace(
        base,
        served_tsaps=listener.tsels,
        served_ssaps=listener.ssels,
        served_psaps=listener.psels,
    )
