"""Peer channels: the connection slots that carry messages to one peer MTA.

Each configured slot of a peer (its precedences, port, DSCP, mode, parallel connections,
backlog threshold, idle timeout) is run by one :class:`SlotRunner`:

- its supervisor keeps as many connections as :func:`mta.outbound.schedule.connections_wanted`
  says for the slot's backlog: one at all times for a permanent slot, one while messages
  wait for an on-demand slot, one more per ``backlog_threshold`` waiting messages up to
  ``max_connections``.  A message waits while it is due in the queue and also while it
  sits, claimed, in a connection's window behind the transfer in progress.  It looks at
  the backlog when woken by a message, at most every ``_RECHECK`` seconds, but not while
  the slot has every connection it may have (a permanent flash slot, nearly always):
  then only a connection that ends, or ``_POLL``, makes it look (its database read
  would otherwise run just as the message's transfer starts);
- each connection binds (X.411 MTA-bind), then claims the most urgent, oldest messages the
  slot admits (as many as :func:`mta.outbound.schedule.transfer_window` says), transfers them one
  by one, and marks them transferred, with its next claim, once the peer confirmed each
  (the peer has stored it); it closes when :func:`mta.outbound.schedule.should_close` says so.
  On a slot that carries nothing above routine (the slots whose connections claim
  windows), the next claim is queued halfway through the window, so that the next
  window is at hand when this one ends instead of one database round trip later (P1
  over RTSE has one transfer in flight per association, X.228: a connection that waits
  for its claim sends nothing);
- an idle connection reads its association, so that a peer that aborted, or whose end of
  the connection closed (stopped, killed), is noticed at once and the connection opened
  again; and a submission for the slot is claimed for an idle connection in the very
  transaction that takes it in (:meth:`SlotRunner.claim_ahead`);
- a connection that cannot be opened is retried with growing, jittered backoff, cut short
  when the peer is seen to answer again (:meth:`SlotRunner.peer_reachable`: another slot
  bound to it, or it bound to us), so that an urgent slot is not left waiting out its
  backoff while another slot already carries routine traffic, yet never below
  ``_LEAST_BACKOFF``, so that a burst of such wake-ups makes one attempt, not a burst;
  a connection lost before it tried a transfer is opened again at once the first time,
  then no sooner than that backoff after the last one bound, so that a peer that accepts
  binds and drops them is not called in a tight loop (a failed transfer is paced by the
  message's own retry delay instead);
- a failed transfer puts the message back for the ``[retry]`` delay of the attempts
  counted (``retry.initial`` after the first, growing by ``factor``); but the first
  failure of a message on a connection that had idled (an idle connection dropped unseen
  fails its first transfer) is retried at once, once: that try is not counted, and the
  error it records makes the next failure wait (:func:`retry_delay`).  Attempts are
  counted per recipient, by its claims, so each message's backoff starts from
  ``retry.initial`` whatever the messages before it met.  The WARNING about a deferred
  transfer is written once a minute per peer (:class:`mta.faults.LogLimiter`, shared by
  the peer's slots), the next one counting those left out: a peer that refuses every
  transfer for an hour (its disk full) costs a line a minute, not one per message.

Recovery (X.228, :mod:`p1.osi.rtse_recovery`): on a slot with a ``checkpoint_size``,
each connection names itself in its CN, and a transfer that the connection's loss (or
the peer's passing abort) cuts off past a checkpoint the peer confirmed stays with the
connection, still claimed, instead of going back to the queue.  The connection is opened
again at once, with RT-OPEN ``recover``, and the transfer resumed from that checkpoint:
only the octets after it are sent.  A peer that refuses the recovery is bound afresh at
once, and one that binds instead, or kept nothing (RTSE abortReason
unrecognized-activity), gets the transfer from its first octet on that connection.  The
transfer is put back to the queue as any failed one (for the ``[retry]`` delay) when a
resumption made no progress, after ``_MAX_RESUMES`` of them, when the peer cannot be
reached again within ``_RESUME_HOLD`` seconds, or when the connection is no longer
wanted.  Nothing is marked transferred before the peer confirmed the whole transfer.

Tasks: the runner owns its supervisor, which owns its connection tasks; stopping the
runner cancels and awaits them all.  A connection cancelled marks what the peer
confirmed transferred before it ends; a message it claimed and did not see confirmed
stays in flight and the daemon puts it back (:meth:`mta.delivery.units.DeliveryUnits.recover`).

A reload that changes or removes a slot retires its runner while the daemon runs
(:meth:`SlotRunner.retire`, then :meth:`SlotRunner.drain`): no connection is opened any
more (one waiting out a backoff ends at once); a connection finishes the transfer in
progress, so what the peer may have stored is never sent twice, marks what the peer
confirmed, makes what it had claimed and not sent pending again for the runner that
replaces it, releases its association and ends.  A runner left as it was takes the new
shared context (:meth:`SlotRunner.reconfigure`): the stack's limits and timeouts for its
next connections, the ``[retry]`` policy for its next failure.

Public API::

    ChannelContext(queue, metrics, config, timeouts, settings, notes, give_way)
    slot_settings(base, selectors, protocol)
    SlotRunner(context, peer, slot, *, on_connected=None, parts=None)
        .start() / .stop() / .wake() / .peer_reachable() / .snapshot()
        .admits(precedence) / .claim_ahead() -> bool
        .serves(peer, slot) / .reconfigure(context, peer)   .retire() / .drain()   (a reload)
    SlotSnapshot, ConnectionSnapshot     what ``x400ctl channels`` shows
    retry_delay(failed, *, idled, policy, draw) -> float | None
    Interrupted(entry, apdu, point, since)   a transfer held to be resumed
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import mmap
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from config.schema import MtaConfig, P1Protocol, Peer, RetryPolicy, Selectors, Slot, TlsMode
from mta import stages
from mta.database import is_urgent
from mta.faults import LOG_INTERVAL, LogLimiter
from mta.intake.plan import domain_of
from mta.link import (
    BindRefusedError,
    BindTimeoutError,
    Link,
    LinkError,
    RefusedByPeerError,
    ResumeRefusedError,
    Timeouts,
    open_link,
    protocol_settings,
    session_identifier,
)
from mta.metrics import Metrics
from mta.net import ClientTls
from mta.outbound import schedule
from mta.outbound.giveway import GiveWay
from mta.outbound.outgoing import LinkClearance, Outgoing, OwnPolicy, outgoing
from mta.outbound.refusals import REFUSED, refusal_error, refusals_so_far
from mta.supervisor import Supervisor
from mta.transport import (
    ConnectionSnapshot,
    ConnectionState,
    OutboundQueue,
    SlotSnapshot,
    SlotState,
)
from p1.association.connection import AssociationSettings
from p1.association.events import BindAccepted
from p1.association.mtabind import MTABindArgument
from p1.association.x410 import X410Settings
from p1.mts.precedence import Precedence, dscp_name
from p1.mts.report import NonDeliveryDiagnostic
from p1.osi.rtse_recovery import ResumePoint
from store import ApduKind, QueueEntry

__all__ = [
    "ChannelContext",
    "ConnectionSnapshot",
    "ConnectionState",
    "Interrupted",
    "SlotRunner",
    "SlotSnapshot",
    "SlotState",
    "retry_delay",
]

log = logging.getLogger("aiox400.channel")

_POLL = 1.0
"""Seconds between the supervisor's looks at the backlog when nothing wakes it (deferred
messages come due without a wake-up)."""
_RECHECK = 0.05
"""Least seconds between two looks at the backlog while the slot has connections."""
_STOP_RELEASE = 2.0
"""Seconds a stopping MTA waits for the peer to answer the release of an idle association."""
_RECONNECT = RetryPolicy(initial=1.0, maximum=60.0, factor=2.0, jitter=0.2)
"""Backoff between attempts to open a connection (growing from 1 s to a minute)."""
_LEAST_BACKOFF = 1.0
"""Least seconds between a failed attempt to connect and the next, however soon the peer
is seen to answer (its binds to us, other slots binding to it)."""
_LOSSES_COUNTED = 16
"""Connections lost in a row past which the count stops: the backoff reached its maximum
long before (from 1 s, doubling, it passes a minute at the seventh)."""
_RESUME_HOLD = 600.0
"""Seconds a connection holds a transfer cut off, trying to reach the peer again to
resume it, before it goes back to the queue (what a receiver of this MTA keeps it for)."""
_MAX_RESUMES = 8
"""Resumptions of one transfer in a row, each cut off again, before it goes back to the
queue."""
_KEPT_APDU = 64 * 1024
"""Octets from which a confirmed entry is kept without its APDU until it is marked."""


DEFERRAL_LOG_INTERVAL = LOG_INTERVAL
"""Seconds between two lines about one peer's deferred transfers."""


def _deferral_notes() -> LogLimiter:
    return LogLimiter(interval=DEFERRAL_LOG_INTERVAL)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelContext:
    """What every slot runner of an MTA shares."""

    queue: OutboundQueue
    metrics: Metrics
    config: MtaConfig
    timeouts: Timeouts = field(default_factory=Timeouts)
    settings: AssociationSettings = field(default_factory=AssociationSettings)
    notes: LogLimiter = field(default_factory=_deferral_notes)
    """The lines about deferred transfers, one per peer per interval."""
    give_way: GiveWay = field(default_factory=GiveWay)
    """Flash work under way, by peer, that routine transfers wait for
    (:mod:`mta.outbound.giveway`)."""


@dataclass(slots=True)
class Interrupted:
    """A transfer a lost connection cut off, held by its connection to be resumed."""

    entry: QueueEntry
    apdu: bytes | mmap.mmap
    """The octets transferred (the entry's APDU as rewritten for the peer)."""
    point: ResumePoint | None
    """Where it goes on; None: from its first octet (the peer cannot resume it)."""
    since: float
    """When it was cut off (monotonic)."""
    resumes: int = 0
    """Resumptions tried so far."""


@dataclass(slots=True)
class _Connection:
    index: int
    state: ConnectionState = ConnectionState.CONNECTING
    since: float = field(default_factory=time.monotonic)
    transfers: int = 0
    tried: int = 0
    """Transfers attempted, confirmed or not."""
    last_error: str | None = None
    tls_version: str | None = None
    """The TLS version of the link bound now ("TLSv1.3"); None in the clear or unbound."""
    bind_refused: str | None = None
    """Why the peer refused this connection's last bind, until a bind is accepted: a bind
    that times out after it is shown with it (the peer delays its answers after a failed
    bind, so the refusal is what the operator has to fix)."""
    refused: str | None = None
    """Why the peer refused the last transfer tried (:mod:`mta.outbound.refusals`), or
    None when it did not refuse it."""
    unsent: int = 0
    """Messages claimed in this connection's window and not yet transferred."""
    confirmed: list[QueueEntry] = field(default_factory=list)
    """Confirmed by the peer, to be marked transferred with the next claim."""
    following: asyncio.Future[tuple[QueueEntry, ...]] | None = None
    """The claim of the window after this one, queued while this one is transferred."""
    ahead: asyncio.Future[tuple[QueueEntry, ...]] | None = None
    host_turn: int = 0
    """Which of the peer's hosts the next attempt starts at (modulo their number): at
    first the connection's index, so that a slot's connections spread over them."""
    """A claim queued for this idle connection behind a submission (:meth:`SlotRunner.
    claim_ahead`): its next claim."""
    interrupted: Interrupted | None = None
    """A transfer the last link's loss cut off, to be resumed on the next."""
    recovered: bool = False
    """The link bound now recovered the last one (RT-OPEN recover accepted)."""

    def enter(self, state: ConnectionState) -> None:
        self.state = state
        self.since = time.monotonic()

    def waiting(self) -> int:
        """Messages claimed for this connection and not yet transferred: the rest of its
        window, and the window after it once claimed."""
        held = self.unsent + (self.interrupted is not None)
        following = self.following
        if following is None or not following.done() or following.cancelled():
            return held
        if following.exception() is not None:
            return held
        return held + len(following.result())


def slot_settings(
    base: AssociationSettings,
    selectors: Selectors,
    protocol: P1Protocol = P1Protocol.NORMAL,
    *,
    checkpoint_size: int = 0,
    window_size: int = 3,
) -> AssociationSettings | X410Settings:
    """``base`` with a slot's selectors: the CR's TSAP-IDs (X.224 13.3.4 a), the CN's SSAP
    identifiers (X.225 PI 51, 52) and the CP's presentation selectors (X.226 CP-type), and
    the checkpoint size and window its RT-OPEN proposes (X.228); in the mode of the peer's
    ``protocol`` (:func:`mta.link.protocol_settings`)."""
    normal = dataclasses.replace(
        base,
        checkpoint_size=checkpoint_size,
        window_size=window_size,
        calling_tsap=selectors.calling_tsel,
        called_tsap=selectors.tsel,
        calling_ssap=selectors.calling_ssel,
        called_ssap=selectors.ssel,
        calling_psap=selectors.calling_psel,
        called_psap=selectors.psel,
    )
    return protocol_settings(normal, protocol)


class SlotRunner:
    """Runs one connection slot of one peer (see the module docstring)."""

    def __init__(
        self,
        context: ChannelContext,
        peer: Peer,
        slot: Slot,
        *,
        on_connected: Callable[[], None] | None = None,
        parts: Supervisor | None = None,
    ) -> None:
        self.context = context
        self._parts = parts or Supervisor()  # restarts the slot's supervisor if it fails
        self.peer = peer
        self.slot = slot
        self._on_connected = on_connected  # each time a connection has bound to the peer
        self._reached = asyncio.Event()
        self.name = f"{peer.name}/{'+'.join(p.label for p in slot.precedences)}"
        # A slot that carries urgent precedences claims ahead of routine work; the others
        # overlap claims with transfers (windows), as nothing urgent then waits.
        self._urgent = any(is_urgent(p) for p in slot.precedences)
        # Wake-ups are counted: a waiter notes the count before it looks at the queue and
        # waits only if no wake-up came since, so none is lost while it looks.
        self._wakes = 0
        self._woken = asyncio.Event()
        self._reaped = asyncio.Event()
        self._workers: dict[int, asyncio.Task[None]] = {}
        self._connections: dict[int, _Connection] = {}
        self._backlog = 0
        self._retiring = False
        self._flushes = 0  # operator's flushes: each starts the connection backoff anew

    # --- life --------------------------------------------------------------------------

    @property
    def part(self) -> str:
        """The name of the slot's supervisor among the daemon's parts."""
        return f"slot {self.name}"

    def start(self) -> None:
        """Start the supervisor (a permanent slot connects at once)."""
        self._parts.start(self.part, self._supervise)

    async def stop(self) -> None:
        """Cancel the supervisor and every connection, and wait for them."""
        await self._parts.stop(self.part)
        tasks = list(self._workers.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def serves(self, peer: Peer, slot: Slot) -> bool:
        """Whether this runner carries ``slot`` of ``peer`` as they are configured: the
        same slot, and the same peer but for its routes and supported extensions (which
        only routing reads)."""
        return slot == self.slot and _link_of(peer) == _link_of(self.peer)

    def reconfigure(self, context: ChannelContext, peer: Peer) -> None:
        """Take a reloaded configuration whose slot and connection settings for this peer
        are the same (its routes may differ): ``context`` applies from the next
        connection, transfer failure or bind on."""
        self.context = context
        self.peer = peer

    async def retire(self) -> None:
        """Open no more connections (the first step of a reload that replaces or removes
        this slot): the supervisor ends, a connection waiting out a backoff (it holds
        nothing) ends now, the others end once their transfer in progress is done
        (:meth:`drain` waits for them)."""
        self._retiring = True
        await self._parts.stop(self.part)
        held: list[tuple[_Connection, Interrupted]] = []
        for index, task in self._workers.items():
            connection = self._connections.get(index)
            if connection is not None and connection.state is ConnectionState.BACKOFF:
                if connection.interrupted is not None:  # (the runner after this sends it)
                    held.append((connection, connection.interrupted))
                    connection.interrupted = None
                task.cancel()
        for connection, interrupted in held:
            await self._put_back(None, (interrupted.entry,), connection)
        self.wake()  # (idle connections end now)

    async def drain(self) -> None:
        """Wait until every connection of a retired runner has ended."""
        tasks = list(self._workers.values())
        if tasks:
            await asyncio.wait(tasks)

    @property
    def retiring(self) -> bool:
        """Whether :meth:`retire` was called: the runner is on its way out."""
        return self._retiring

    @property
    def wakes(self) -> int:
        """How many times the slot was told a message may be waiting (:meth:`wake`)."""
        return self._wakes

    def wake(self) -> None:
        """A message may be waiting: look at the backlog now."""
        self._wakes += 1
        self._woken.set()
        self._woken = asyncio.Event()

    async def _wait_wake(self, seen: int, timeout: float) -> None:
        """Wait up to ``timeout`` for a wake-up after the ``seen``-th one."""
        if self._wakes != seen:
            return
        woken = self._woken
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await woken.wait()

    def admits(self, precedence: Precedence) -> bool:
        """Whether this slot carries ``precedence``."""
        return precedence in self.slot.precedences

    def claim_ahead(self) -> bool:
        """A message for this slot is about to be committed (its unit is queued already):
        queue the claim of an idle connection right behind it, so that the claim shares
        its transaction and the transfer starts as the submission is answered, not one
        database round trip later.  Whether an idle connection took it."""
        for connection in self._connections.values():
            if connection.state is ConnectionState.IDLE and connection.ahead is None:
                connection.ahead = self._claim_for(())
                self.wake()
                return True
        return False

    def peer_reachable(self) -> None:
        """The peer answers again: connections waiting out a backoff try again now."""
        self._reached.set()
        self._reached = asyncio.Event()  # for attempts that start from now on

    def flush(self) -> None:
        """The operator says the cause is fixed (``x400ctl flush``): connections waiting
        out a backoff try again now, and a failure after it waits the first backoff, not
        one grown by the failures before."""
        self._flushes += 1
        self.peer_reachable()
        self.wake()

    def snapshot(self) -> SlotSnapshot:
        """The slot's state now."""
        now = time.monotonic()
        return SlotSnapshot(
            peer=self.peer.name,
            precedences=tuple(p.label for p in self.slot.precedences),
            host=", ".join(self.peer.hosts),
            port=self.slot.port,
            dscp=dscp_name(self.slot.dscp),
            mode=self.slot.mode.value,
            tls=self.slot.tls is TlsMode.REQUIRED,
            max_connections=self.slot.max_connections,
            backlog=self._backlog,
            connections=tuple(
                ConnectionSnapshot(
                    index=c.index,
                    state=c.state,
                    since=round(now - c.since, 3),
                    transfers=c.transfers,
                    last_error=c.last_error,
                    tls_version=c.tls_version,
                )
                for c in sorted(self._connections.values(), key=lambda c: c.index)
            ),
        )

    # --- supervisor --------------------------------------------------------------------

    async def _supervise(self) -> None:
        while True:
            seen = self._wakes
            self._backlog = await self._read_backlog() + self._unsent()
            self._parts.healthy(self.part)
            wanted = schedule.connections_wanted(self.slot, self._backlog)
            for index in range(wanted):
                if index not in self._workers:
                    self._start_worker(index)
            if self._workers:
                # Connections claim for themselves; the backlog only sizes the slot, so a
                # burst of wake-ups (one per message queued) is read once per interval.
                await asyncio.sleep(_RECHECK)
            if len(self._workers) >= self.slot.max_connections:
                # Every connection the slot may have is open: a message needs no decision
                # here, only a connection that ends.  (Reading the backlog on each wake-up
                # would run in the database thread just as the message's transfer starts.)
                await self._wait_reaped(_POLL)
            else:
                await self._wait_wake(seen, _POLL)

    async def _wait_reaped(self, timeout: float) -> None:
        """Wait up to ``timeout`` for a connection task to end (:meth:`_reap`)."""
        self._reaped = reaped = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await reaped.wait()

    def _unsent(self) -> int:
        """Messages waiting in the windows of the slot's connections."""
        return sum(connection.waiting() for connection in self._connections.values())

    async def _read_backlog(self) -> int:
        return await self.context.queue.backlog(self.peer.name, self.slot.precedences)

    def _start_worker(self, index: int) -> None:
        connection = self._connections[index] = _Connection(index, host_turn=index)
        task = asyncio.create_task(self._work(connection), name=f"{self.name}#{index}")
        self._workers[index] = task
        task.add_done_callback(lambda done: self._reap(index, done))

    def _reap(self, index: int, task: asyncio.Task[None]) -> None:
        """A connection task ended: forget it, and say why if it failed."""
        if self._workers.get(index) is task:
            del self._workers[index]
            self._connections.pop(index, None)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s#%d: stopped by an error", self.name, index, exc_info=task.exception())
        self._reaped.set()
        self.wake()  # the supervisor decides whether another is wanted

    # --- one connection ----------------------------------------------------------------

    async def _work(self, connection: _Connection) -> None:
        stages.urgent_here(self._urgent)
        attempt = 0  # failed attempts to connect in a row
        lost = 0  # connections in a row lost soon after binding (:func:`_losses`)
        said = ""  # the failure last logged as a warning
        down_since = 0.0
        flushes = self._flushes
        while True:
            reached = self._reached  # set if the peer answers another slot meanwhile
            link = await self._connect(connection)
            if link is None:
                if self._flushes != flushes:  # (the backoff starts anew)
                    attempt, flushes = 0, self._flushes
                attempt += 1
                down_since = down_since if attempt > 1 else time.monotonic()
                wanted = self._still_wanted(connection.index) and not self._retiring
                delay = _RECONNECT.delay(attempt, random.random())
                said = self._log_failure(connection, attempt, delay if wanted else None, said)
                if not wanted or self._held_too_long(connection):
                    await self._give_up_resuming(connection)
                if not wanted:
                    return
                await self._backoff(connection, delay, reached)
                continue
            if attempt:
                self._log_connected_again(connection, attempt, down_since)
            attempt, said = 0, ""
            bound_at, tried = time.monotonic(), connection.tried
            try:
                if await self._serve(connection, link):
                    return  # closed for idleness
            except asyncio.CancelledError:
                await self._end_on_stop(connection, link)
                raise
            finally:
                connection.tls_version = None
                await link.close()
            if self._retiring:
                await self._hand_over_held(connection)
                return
            lived = time.monotonic() - bound_at
            lost = _losses(lost, lived, tried=connection.tried > tried)
            await self._pause_after_loss(connection, lost, lived)

    def _log_connected_again(self, connection: _Connection, attempt: int, since: float) -> None:
        log.info(
            "%s#%d: connected again after %d failed attempt(s) in %.1f s",
            self.name,
            connection.index,
            attempt,
            time.monotonic() - since,
        )

    async def _pause_after_loss(self, connection: _Connection, lost: int, lived: float) -> None:
        """The connection, bound ``lived`` seconds ago, has failed, the ``lost``-th in a
        row lost soon (:func:`_losses`).  The first is opened again at once (the peer may
        have restarted); each after it no sooner than the backoff between connections
        after the last one bound, so that a peer that accepts binds and then drops them is
        not called in a tight loop.  The peer answering does not cut this short: it
        answers, then drops the association."""
        if lost < 2:
            return
        delay = _RECONNECT.delay(lost - 1, random.random()) - lived
        if delay <= 0:
            return
        log.info(
            "%s#%d: %d connections in a row lost before any transfer; next attempt in %.1f s",
            self.name,
            connection.index,
            lost,
            delay,
        )
        connection.enter(ConnectionState.BACKOFF)
        await asyncio.sleep(delay)

    def _still_wanted(self, index: int) -> bool:
        return index < schedule.connections_wanted(self.slot, self._backlog)

    def _log_failure(
        self, connection: _Connection, attempt: int, delay: float | None, said: str
    ) -> str:
        """Log a failed attempt to connect: a warning when it fails anew or for another
        reason than the last warning said, else (the peer stays down) at info level, so
        that a peer down for an hour does not fill the log; the failure warned about."""
        why = connection.last_error or "cannot connect"
        then = "no further attempt" if delay is None else f"next attempt in {delay:.1f} s"
        if why != said:
            log.warning("%s#%d: %s; %s", self.name, connection.index, why, then)
            return why
        log.info(
            "%s#%d: attempt %d failed the same way; %s", self.name, connection.index, attempt, then
        )
        return said

    async def _backoff(self, connection: _Connection, delay: float, reached: asyncio.Event) -> None:
        """Wait ``delay`` seconds before the next attempt, or until the peer has answered
        since the failed one, but ``_LEAST_BACKOFF`` at least."""
        connection.enter(ConnectionState.BACKOFF)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await reached.wait()
                await asyncio.sleep(_LEAST_BACKOFF - (time.monotonic() - connection.since))

    async def _connect(self, connection: _Connection) -> Link | None:
        """Connect and bind to one of the peer's hosts: from the one this connection last
        reached (at first the one its index picks), on to the next while one cannot be
        connected to, each once; a refused bind ends the attempt."""
        connection.enter(ConnectionState.CONNECTING)
        hosts = self.peer.hosts
        for step in range(len(hosts)):
            turn = (connection.host_turn + step) % len(hosts)
            try:
                link, accepted = await self._open_for(connection, hosts[turn])
            except BindRefusedError as error:
                connection.bind_refused = f"bind refused: {_bind_error(error)}"
                connection.last_error = connection.bind_refused
                self.context.metrics.bind_refused(self.peer.name, "out", _bind_error(error))
                connection.host_turn = turn
                return None
            except BindTimeoutError as error:
                connection.last_error = _bind_timeout(connection.bind_refused, error)
                connection.host_turn = turn
                return None
            except (OSError, TimeoutError, LinkError) as error:
                connection.last_error = _connect_error(error, hosts[turn], len(hosts))
                if step + 1 < len(hosts):
                    log.info(
                        "%s#%d: %s; trying the next host",
                        self.name,
                        connection.index,
                        connection.last_error,
                    )
                continue
            connection.host_turn = turn
            return self._connected(connection, link, accepted, hosts[turn])
        connection.host_turn = (connection.host_turn + 1) % len(hosts)
        return None

    async def _open_for(self, connection: _Connection, host: str) -> tuple[Link, BindAccepted]:
        """Open a link to ``host``: one recovering the last when the connection holds a
        transfer it cut off (X.228); a peer that refuses the recovery is bound afresh at
        once, and the transfer will start from its first octet."""
        held = connection.interrupted
        if held is None or held.point is None:
            return await self._open(host)
        try:
            return await self._open(host, recover=held.point)
        except BindRefusedError as error:
            log.info(
                "%s#%d: %s refused to recover the connection lost (%s): %s starts afresh",
                self.name,
                connection.index,
                self.peer.name,
                _bind_error(error),
                held.entry.mts_identifier,
            )
            held.point = None
            return await self._open(host)

    async def _open(
        self, host: str, recover: ResumePoint | None = None
    ) -> tuple[Link, BindAccepted]:
        peer, slot = self.peer, self.slot
        # The connection is named in its CN, so that a transfer it cuts off may be resumed.
        named = slot.checkpoint_size > 0 and not peer.protocol.x410
        return await open_link(
            host,
            slot.port,
            self._bind_argument(),
            settings=slot_settings(
                self.context.settings,
                slot.selectors,
                peer.protocol,
                checkpoint_size=slot.checkpoint_size,
                window_size=slot.window_size,
            ),
            dscp=slot.dscp,
            timeouts=self._timeouts(),
            congestion=self.context.config.tcp_congestion,
            source=slot.source_address or peer.source_address,
            tls=ClientTls.for_peer(peer) if slot.tls is TlsMode.REQUIRED else None,
            identifier=session_identifier(datetime.now(UTC)) if named else None,
            recover=None if recover is None else recover.identifier,
        )

    def _timeouts(self) -> Timeouts:
        """The link's timeouts: the slot's ``connect_timeout`` and ``transfer_timeout``,
        and the bind's answer is awaited ``bind_timeout`` plus
        ``failed_bind_delay_max`` (the peers' delay after failed binds is taken to be at
        most this MTA's), so that the first bind after a refusal's cause is fixed is
        answered rather than given up on while the peer still delays it."""
        timeouts = self.context.timeouts
        grace = self.context.config.connection_limits.failed_bind_delay_max
        return dataclasses.replace(
            timeouts,
            connect=self.slot.connect_timeout,
            bind=timeouts.bind + grace,
            transfer=self.slot.transfer_timeout,
        )

    def _connected(
        self, connection: _Connection, link: Link, accepted: BindAccepted, host: str
    ) -> Link:
        peer, slot = self.peer, self.slot
        name = accepted.result.responder_name
        if name is not None and name != peer.their_credentials.name:
            log.warning("%s: responder calls itself %r", self.name, name)
        log.info(
            "%s#%d: connected to %s port %d (%s, %s%s)",
            self.name,
            connection.index,
            host,
            slot.port,
            dscp_name(slot.dscp),
            slot.mode.value
            if link.tls_version is None
            else f"{slot.mode.value}, {link.tls_version}",
            f", {link.association.MODE} mode, P1 {peer.protocol.value}"
            if peer.protocol.x410
            else "",
        )
        connection.last_error = connection.bind_refused = None
        connection.tls_version = link.tls_version
        connection.recovered = accepted.recovered
        if accepted.recovered:
            log.info("%s#%d: the peer recovered the connection lost", self.name, connection.index)
        if self._on_connected is not None:
            self._on_connected()
        return link

    def _link(self) -> LinkClearance | None:
        """The label check of the link to this peer; None without a policy."""
        security = self.context.config.security
        if not security.enforced:
            return None
        return LinkClearance(
            security=security, clearance=security.clearance_named(self.peer.clearance)
        )

    def _own_policy(self) -> OwnPolicy | None:
        """Which of this MTA's own extensions the peer does not get (None: it gets them)."""
        omit = self.peer.omit_extensions
        if not omit:
            return None
        config = self.context.config
        return OwnPolicy(
            omit=frozenset(omit), name=config.name, domain=domain_of(config.global_domain)
        )

    def _bind_argument(self) -> MTABindArgument:
        ours = self.peer.our_credentials
        password = ours.password or self.context.config.password
        return MTABindArgument(
            initiator_name=ours.name, password=password.reveal() if password else ""
        )

    async def _serve(self, connection: _Connection, link: Link) -> bool:
        """Transfer until the link fails (False) or closes for idleness (True)."""
        if connection.interrupted is not None and not await self._resume(connection, link):
            return False
        idle_since = time.monotonic()
        fresh = True
        ended: str | None = None  # why the peer ended the association while it idled
        while True:
            if self._retiring:
                await self._leave(connection, link)
                return True
            seen = self._wakes
            entries = await self._claim(connection)
            if ended is not None:
                return await self._ended(connection, entries, ended)
            if not entries:
                idle_for = time.monotonic() - idle_since
                closing = schedule.should_close(
                    self.slot, connection.index, idle_for, self._backlog
                )
                if closing and connection.ahead is None:  # (a claim queued ahead is served)
                    await self._release(connection, link)
                    return True
                connection.enter(ConnectionState.IDLE)
                ended = await self._idle(seen, idle_for, link)
                fresh = False
                continue
            if not await self._transfer_window(connection, link, entries, idled=not fresh):
                return False
            entries = ()  # (their APDUs are not held while the next window is claimed)
            idle_since = time.monotonic()
            fresh = True

    async def _transfer_window(
        self,
        connection: _Connection,
        link: Link,
        entries: tuple[QueueEntry, ...],
        *,
        idled: bool,
    ) -> bool:
        """Transfer ``entries`` one by one (each confirmed is kept to be marked with the
        next claim, which is queued halfway through where claims overlap); whether the
        link is still good.  On a failure the rest, and the next window, are put back.
        ``idled``: the connection had idled since it last transferred (until one of these
        is confirmed, a failure may be the connection's, not the message's)."""
        connection.unsent = len(entries)
        stages.mark("claim.window")
        for number, claimed in enumerate(entries):
            await self._give_way(connection)
            if self._retiring:  # (the runner that replaces this one sends the rest)
                connection.unsent = 0
                unsent = entries[number:] + await self._take_following(connection)
                await self._put_back(None, unsent, connection)
                return True
            if not self._urgent and connection.following is None and 2 * number >= len(entries):
                connection.following = self._queue_claim(connection)
            wire = outgoing(claimed, self.peer.protocol, self._own_policy(), self._link())
            if wire.refused is not None:
                await self._non_deliver(connection, wire)
            entry = wire.entry
            if wire.removed:
                self._log_downgraded(claimed, wire)
            if entry is not None and not await self._transfer(connection, link, entry, wire.apdu):
                connection.unsent = 0
                unsent = entries[number + 1 :] + await self._take_following(connection)
                if self._hold(connection, link, entry, wire.apdu):
                    if unsent or connection.confirmed:
                        await self._put_back(None, unsent, connection)
                else:
                    await self._failed(connection, entry, unsent, idled=idled and number == 0)
                return False
            connection.unsent -= 1
            if entry is not None:
                connection.confirmed.append(_confirmed(entry))
        return True

    # --- resuming a transfer cut off (X.228 recovery) -------------------------------------

    def _hold(
        self, connection: _Connection, link: Link, entry: QueueEntry, apdu: bytes | mmap.mmap
    ) -> bool:
        """The transfer of ``entry`` failed: keep it with the connection, claimed, to be
        resumed on the next link, when the link's end left where to (it was lost past a
        checkpoint the peer confirmed, and the peer did not refuse the transfer)."""
        point = link.association.resume_point
        if point is None or connection.refused is not None or self._retiring:
            return False
        connection.interrupted = Interrupted(entry, apdu, point, time.monotonic())
        log.info(
            "%s#%d: transfer of %s cut off after checkpoint %d (%d of %d octets confirmed); "
            "resuming it on the next connection",
            self.name,
            connection.index,
            entry.mts_identifier,
            point.serial,
            point.offset,
            len(apdu),
        )
        return True

    async def _resume(self, connection: _Connection, link: Link) -> bool:
        """Transfer the entry the last link's loss cut off: resumed after its checkpoint
        on a link that recovered the last one, else from its first octet; whether the
        link is still good.  Cut off again past a further checkpoint, it is held again;
        otherwise it fails as any transfer (:meth:`_failed`)."""
        held = connection.interrupted
        assert held is not None
        await self._give_way(connection)
        connection.enter(ConnectionState.TRANSFERRING)
        connection.tried += 1
        held.resumes += 1
        point = held.point if connection.recovered else None
        started = time.monotonic()
        timeout = self.slot.transfer_timeout
        try:
            with self._flash_work(held.entry):
                if point is None:
                    await link.transfer(held.apdu, timeout=timeout)
                else:
                    await link.resume(held.apdu, point, timeout=timeout)
        except ResumeRefusedError as error:
            connection.last_error = str(error)
            log.info(
                "%s#%d: %s; %s starts afresh",
                self.name,
                connection.index,
                error,
                held.entry.mts_identifier,
            )
            held.point = None
            return False
        except (LinkError, OSError, TimeoutError) as error:
            connection.last_error = f"transfer failed: {error or type(error).__name__}"
            connection.refused = str(error) if isinstance(error, RefusedByPeerError) else None
            self.context.metrics.transfer_failed(self.peer.name, held.entry.precedence)
            if not self._progressed(connection, link, point):
                connection.interrupted = None
                await self._failed(connection, held.entry, (), idled=False)
            return False
        connection.interrupted = None
        self._resumed(connection, held, point, started)
        return True

    def _progressed(self, connection: _Connection, link: Link, point: ResumePoint | None) -> bool:
        """Whether the held transfer, cut off again, went past a further checkpoint (and
        may be resumed once more from there)."""
        held, after = connection.interrupted, link.association.resume_point
        assert held is not None
        if after is None or connection.refused is not None or self._retiring:
            return False
        if held.resumes >= _MAX_RESUMES or (point is not None and after.offset <= point.offset):
            return False
        held.point, held.since = after, time.monotonic()
        log.info(
            "%s#%d: transfer of %s cut off again after checkpoint %d (%d octets confirmed)",
            self.name,
            connection.index,
            held.entry.mts_identifier,
            after.serial,
            after.offset,
        )
        return True

    def _resumed(
        self, connection: _Connection, held: Interrupted, point: ResumePoint | None, started: float
    ) -> None:
        entry = held.entry
        connection.transfers += 1
        connection.confirmed.append(_confirmed(entry))
        took = time.monotonic() - started
        self.context.metrics.transferred(self.peer.name, entry, took, datetime.now(UTC))
        log.info(
            "transferred %s (%s, %d recipient(s), %d octets) to %s on port %d %s in %.1f ms, %s",
            entry.mts_identifier,
            entry.precedence.label,
            len(entry.recipients),
            len(entry.apdu),
            self.peer.name,
            self.slot.port,
            dscp_name(self.slot.dscp),
            took * 1000,
            "again from its first octet"
            if point is None
            else f"resumed after checkpoint {point.serial} ({point.offset} octets not sent again)",
        )

    def _held_too_long(self, connection: _Connection) -> bool:
        held = connection.interrupted
        return held is not None and time.monotonic() - held.since > _RESUME_HOLD

    async def _give_up_resuming(self, connection: _Connection) -> None:
        """The transfer held to be resumed fails as any (:meth:`_failed`): the peer was
        not reached again in time, or the connection is no longer wanted."""
        held, connection.interrupted = connection.interrupted, None
        if held is not None:
            await self._failed(connection, held.entry, (), idled=False)

    async def _hand_over_held(self, connection: _Connection) -> None:
        """The runner retires: the transfer held to be resumed is pending again as it
        was, for the runner that replaces this one."""
        held, connection.interrupted = connection.interrupted, None
        if held is not None:
            await self._put_back(None, (held.entry,), connection)

    def _log_downgraded(self, claimed: QueueEntry, wire: Outgoing) -> None:
        log.info(
            "%s down-graded for %s (X.419 Annex B): removed %s",
            claimed.mts_identifier,
            self.peer.name,
            "; ".join(wire.removed),
        )

    async def _non_deliver(self, connection: _Connection, wire: Outgoing) -> None:
        """Recipients the peer can never take (:mod:`mta.outbound.outgoing`: not down-graded
        for a 1984 MTA, or a label the link is not cleared for): failed, with their
        non-delivery report, in one transaction with the confirmations so far."""
        refused = wire.refused
        assert refused is not None
        done, connection.confirmed = connection.confirmed, []
        name, peer = refused.mts_identifier, self.peer.name
        # Shielded, as every unit that carries confirmations: a stop cancelling this
        # task must not drop it before it runs.
        queued = await asyncio.shield(
            self.context.queue.non_deliver(
                refused, wire.report, why=wire.why, peer=peer, transferred=done
            )
        )
        report = wire.report
        if report is None:  # a report: dropped, never reported on
            log.warning("report %s to %s dropped: %s (a 1984 MTA)", name, peer, wire.why)
            return
        labelled = report.diagnostic_code is NonDeliveryDiagnostic.SECURE_MESSAGING_ERROR
        log.warning(
            "non-delivered %s to %s (%d recipient(s)): %s%s (%s, %s); %s",
            name,
            peer,
            len(refused.recipients),
            wire.why,
            "" if labelled else " for a 1984 MTA",
            report.reason_name,
            report.diagnostic_name,
            "report queued" if queued else "no report asked",
        )

    async def _take_following(self, connection: _Connection) -> tuple[QueueEntry, ...]:
        """The window claimed after the current one (once committed), if one was queued."""
        following, connection.following = connection.following, None
        return () if following is None else await following

    async def _ended(
        self, connection: _Connection, entries: tuple[QueueEntry, ...], why: str
    ) -> bool:
        """The peer ended the association while it idled: what was claimed for it since,
        never attempted, goes back at once as it was, and the connection is opened again
        (False: link gone)."""
        connection.enter(ConnectionState.CLOSING)
        connection.last_error = why
        # (INFO: a peer ends idle associations on its own timer; if it cannot be reached
        # again, the connection attempts say so at WARNING)
        log.info("%s#%d: %s", self.name, connection.index, why)
        if entries:
            await self._put_back(None, entries, connection)
        return False

    async def _claim(self, connection: _Connection) -> tuple[QueueEntry, ...]:
        """The connection's next window: the claim queued while the last one was
        transferred, unless it found nothing and there are confirmations to mark; else
        the claim queued ahead for the connection while it was idle (nothing was
        transferred since); else a new claim (:meth:`_queue_claim`)."""
        if connection.following is not None:
            entries = await self._take_following(connection)
            if entries or not connection.confirmed:
                return entries
        ahead, connection.ahead = connection.ahead, None
        if ahead is not None and not connection.confirmed:
            return await ahead
        entries = await self._queue_claim(connection)
        return entries if ahead is None else entries + await ahead

    def _queue_claim(self, connection: _Connection) -> asyncio.Future[tuple[QueueEntry, ...]]:
        """Queue a group-committed unit that marks what the peer confirmed since the last
        claim and claims the next messages (a cancelled caller does not stop it).

        Not flushed to disk on its own: a power cut may undo it, and then the messages are
        sent again and the peer, which keeps what it received, does not deliver them twice.
        """
        transferred, connection.confirmed = connection.confirmed, []
        return self._claim_for(transferred)

    def _claim_for(
        self, transferred: Sequence[QueueEntry]
    ) -> asyncio.Future[tuple[QueueEntry, ...]]:
        return self.context.queue.claim(
            self.peer.name,
            self.slot.precedences,
            limit=schedule.transfer_window(self.slot, self._backlog),
            transferred=transferred,
            max_octets=schedule.MAX_WINDOW_OCTETS,
            urgent=self._urgent,
            mapped=True,
        )

    async def _idle(self, seen: int, idle_for: float, link: Link) -> str | None:
        """Wait for a wake-up, reading the idle association meanwhile: None, or why the
        peer ended it (it aborted, or its end of the connection closed, as when it was
        stopped or killed), so that the connection is opened again now, not when the
        next message finds it dead."""
        timeout = max(0.05, min(_POLL, self.slot.idle_timeout - idle_for))
        watch = asyncio.create_task(link.ended())
        wake = asyncio.create_task(self._wait_wake(seen, timeout))
        try:
            await asyncio.wait((watch, wake), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (watch, wake):
                task.cancel()
            # Let both end (the stream then has no reader left waiting); a cancellation
            # of this task itself still goes through.
            await asyncio.wait((watch, wake))
        return None if watch.cancelled() else watch.result()

    async def _give_way(self, connection: _Connection) -> None:
        """On a slot that carries nothing above routine, wait while flash work for the
        peer is under way, 50 ms at most (:mod:`mta.outbound.giveway`), counted in
        ``aiox400_routine_held_seconds_total``; the connection shows as transferring
        meanwhile (it holds what it claimed)."""
        give_way = self.context.give_way
        if self._urgent or not give_way.under_way(self.peer.name):
            return
        connection.enter(ConnectionState.TRANSFERRING)
        started = time.monotonic()
        await give_way.wait(self.peer.name)
        self.context.metrics.routine_held(self.peer.name, time.monotonic() - started)

    def _flash_work(self, entry: QueueEntry) -> contextlib.AbstractContextManager[None]:
        """The transfer of ``entry`` as flash work for the peer, if it is flash."""
        return self.context.give_way.during(entry.precedence, (self.peer.name,))

    async def _transfer(
        self, connection: _Connection, link: Link, entry: QueueEntry, apdu: bytes | mmap.mmap
    ) -> bool:
        """Transfer ``entry`` as ``apdu`` (:mod:`mta.outbound.outgoing`); whether the link is still
        good.  A flash transfer is flash work (:mod:`mta.outbound.giveway`)."""
        connection.enter(ConnectionState.TRANSFERRING)
        connection.tried += 1
        started = time.monotonic()
        stages.mark("transfer.start")
        try:
            with self._flash_work(entry):
                await link.transfer(apdu, timeout=self.slot.transfer_timeout)
        except (LinkError, OSError, TimeoutError) as error:
            connection.last_error = f"transfer failed: {error or type(error).__name__}"
            connection.refused = str(error) if isinstance(error, RefusedByPeerError) else None
            self.context.metrics.transfer_failed(self.peer.name, entry.precedence)
            return False
        connection.transfers += 1
        took, now = time.monotonic() - started, datetime.now(UTC)
        self.context.metrics.transferred(self.peer.name, entry, took, now)
        if log.isEnabledFor(logging.INFO):
            log.info(
                "transferred %s (%s, %d recipient(s), %d octets) to %s on port %d %s in %.1f ms",
                entry.mts_identifier,
                entry.precedence.label,
                len(entry.recipients),
                len(entry.apdu),
                self.peer.name,
                self.slot.port,
                dscp_name(self.slot.dscp),
                (time.monotonic() - started) * 1000,
            )
        return True

    async def _failed(
        self,
        connection: _Connection,
        failed: QueueEntry,
        unsent: tuple[QueueEntry, ...],
        *,
        idled: bool,
    ) -> None:
        """The transfer of ``failed`` failed: put back (:meth:`_put_back`), or, when the
        peer refused it ``[retry] max_refusals`` times in a row the same way
        (:mod:`mta.outbound.refusals`), non-delivered, ``unsent`` put back."""
        why = connection.refused
        if why is None:
            await self._put_back(failed, unsent, connection, idled=idled)
            return
        count = refusals_so_far(failed, why) + 1
        if count < self.context.config.retry.max_refusals:
            connection.last_error = refusal_error(why, count)
            await self._put_back(failed, unsent, connection, idled=idled)
            return
        await self._refused_enough(connection, failed, refusal_error(why, count))
        await self._put_back(None, unsent, connection)

    async def _refused_enough(self, connection: _Connection, refused: QueueEntry, why: str) -> None:
        """``refused`` failed for good, in one transaction with the confirmations so far;
        its originator reported to (a report is dropped: never reported on)."""
        done, connection.confirmed = connection.confirmed, []
        report = None if refused.kind is ApduKind.REPORT else REFUSED
        name, peer = refused.mts_identifier, self.peer.name
        # Shielded, as every unit that carries confirmations.
        queued = await asyncio.shield(
            self.context.queue.non_deliver(refused, report, why=why, peer=peer, transferred=done)
        )
        if report is None:
            verb, tail = "dropped report", "a report is never reported on"
        else:
            asked = "report queued" if queued else "no report asked"
            verb, tail = "non-delivered", f"{report.reason_name}, {report.diagnostic_name}; {asked}"
        n = len(refused.recipients)
        log.warning("%s %s to %s (%d recipient(s)): %s; %s", verb, name, peer, n, why, tail)

    async def _put_back(
        self,
        failed: QueueEntry | None,
        unsent: tuple[QueueEntry, ...],
        connection: _Connection,
        *,
        idled: bool = False,
    ) -> None:
        """The transfer of ``failed`` failed (None: the connection failed before any of its
        claim was tried): mark what the peer confirmed since the last claim transferred,
        put ``failed`` back for its next attempt (:func:`retry_delay`; ``idled``: the
        connection had idled until this transfer), and make ``unsent`` pending again as
        they were."""
        done, connection.confirmed = connection.confirmed, []
        why = connection.last_error or "transfer failed"
        now = datetime.now(UTC)
        delay = None
        if failed is not None:
            policy = self.context.config.retry
            delay = retry_delay(failed, idled=idled, policy=policy, draw=random.random())
        put_back = self.context.queue.put_back(
            peer=self.peer.name,
            transferred=done,
            failed=failed,
            error=why,
            next_attempt_at=None if delay is None else now + timedelta(seconds=delay),
            unsent=unsent,
        )
        # Shielded: it carries the confirmations taken off the connection, and a stop
        # cancelling this task must not drop it before it runs.
        await asyncio.shield(put_back)
        if failed is not None:
            self._log_put_back(failed, why, delay)
        self.wake()

    def _log_put_back(self, failed: QueueEntry, why: str, delay: float | None) -> None:
        name, peer, notes = failed.mts_identifier, self.peer.name, self.context.notes
        if delay is None:
            message = "retrying %s to %s at once: %s (the connection had idled)"
            notes.warning(log, f"retrying to {peer}", message, name, peer, why)
            return
        message = "deferred %s to %s: %s; attempt %d, next in %.1f s"
        attempts = _attempts(failed)
        notes.warning(log, f"deferred to {peer}", message, name, peer, why, attempts, delay)

    async def _end_on_stop(self, connection: _Connection, link: Link) -> None:
        """The MTA stops: what the peer confirmed since the last claim is marked
        transferred first, so that nothing it confirmed is sent again; then an idle
        association is released (RT-CLOSE), one caught in a transfer is aborted (its
        message stays in flight and is put back by the MTA)."""
        if connection.confirmed:
            # (queued ahead of the MTA's own put-back of this process's claims)
            await self._put_back(None, (), connection)
        if link.association.closed:  # (the peer ended it while it idled)
            return
        if connection.state is not ConnectionState.IDLE:
            await link.abort("the MTA is stopping")
            return
        connection.enter(ConnectionState.CLOSING)
        try:
            await link.release(timeout=_STOP_RELEASE)
        except (LinkError, OSError, TimeoutError) as error:
            log.info("%s#%d: release on stop: %s", self.name, connection.index, error)

    async def _leave(self, connection: _Connection, link: Link) -> None:
        """The runner retires: mark what the peer confirmed, make pending again what was
        claimed for this connection and not sent, release the association."""
        unsent = await self._take_following(connection)
        ahead, connection.ahead = connection.ahead, None
        if ahead is not None:
            unsent += await ahead
        if unsent or connection.confirmed:
            await self._put_back(None, unsent, connection)
        if link.association.closed:  # (the peer ended it while it idled)
            return
        connection.enter(ConnectionState.CLOSING)
        try:
            await link.release(timeout=self.context.timeouts.release)
        except (LinkError, OSError, TimeoutError) as error:
            log.info("%s#%d: release on reload: %s", self.name, connection.index, error)
        log.info("%s#%d: released: the slot was reconfigured", self.name, connection.index)

    async def _release(self, connection: _Connection, link: Link) -> None:
        connection.enter(ConnectionState.CLOSING)
        try:
            await link.release(timeout=self.context.timeouts.release)
        except (LinkError, OSError, TimeoutError) as error:
            log.info("%s#%d: release: %s", self.name, connection.index, error)
        log.info("%s#%d: closed after idle timeout", self.name, connection.index)


def retry_delay(
    failed: QueueEntry, *, idled: bool, policy: RetryPolicy, draw: float
) -> float | None:
    """Seconds before ``failed`` is tried again after its transfer failed; None: at once,
    the try not counted (its claim's attempt is given back).

    At once only when the connection had idled until this transfer (a peer or a firewall
    may drop an idle connection unseen, and the next transfer finds it dead) and the
    message is on its first try with no error recorded: the retry at once records the
    error, so a second failure in a row waits.  Otherwise the wait after the ``n``-th
    counted attempt is ``policy.delay(n, draw)``: ``retry.initial`` after the first.
    """
    first = all(r.attempts <= 1 and r.last_error is None for r in failed.recipients)
    if idled and first:
        return None
    return policy.delay(_attempts(failed), draw)


def _confirmed(entry: QueueEntry) -> QueueEntry:
    """``entry``, confirmed by the peer, as kept until the next claim marks it: a large
    APDU left out (marking reads only its recipients), so that the connection holds no
    transfer's APDU past its confirmation."""
    return entry if len(entry.apdu) < _KEPT_APDU else dataclasses.replace(entry, apdu=b"")


def _link_of(peer: Peer) -> Peer:
    """What of ``peer`` its connections use: everything but its routes, its supported
    extensions and its slots (each runner compares its own)."""
    return dataclasses.replace(peer, routes=(), supported_extensions=(), slots=())


def _attempts(entry: QueueEntry) -> int:
    """Attempts counted for a claimed entry, this one included (its claim counted it)."""
    return max(1, max(r.attempts for r in entry.recipients))


def _losses(lost: int, lived: float, *, tried: bool) -> int:
    """Connections lost in a row soon after binding, ``lost`` before a connection that
    lived ``lived`` seconds failed: one that ``tried`` a transfer (its message's retry
    delay paces what follows), or that outlived the longest backoff between connections,
    ends the run; the count stops at ``_LOSSES_COUNTED``."""
    if tried or lived >= _RECONNECT.maximum:
        return 0
    return min(lost + 1, _LOSSES_COUNTED)


def _connect_error(error: BaseException, host: str, hosts: int) -> str:
    """Why connecting failed, naming the host when the peer has several."""
    text = str(error) or type(error).__name__
    prefix = "" if text.startswith("cannot connect") else "cannot connect: "
    return prefix + text if hosts == 1 or host in text else f"{prefix}{host}: {text}"


def _bind_timeout(refused: str | None, error: BindTimeoutError) -> str:
    """Why a bind that timed out failed: the last refusal when the peer refused one of
    this connection's binds since the last accepted (its delay after failed binds is what
    timed out), else the timeout itself."""
    if refused is None:
        return str(error)
    return f"{refused} (the next bind not answered within {error.timeout:g} s: check the password)"


def _bind_error(error: BindRefusedError) -> str:
    if error.error is None:
        return str(error)
    return error.error.name.lower().replace("_", "-")
