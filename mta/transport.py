"""The seam between the queue and the transports that carry messages to and from peers.

A transport moves MTS-APDUs between this MTA and its peers: P1 over RFC 1006 in the 1988
normal mode or the X.410-1984 mode (:mod:`mta.link`, :mod:`mta.inbound.listeners`,
:mod:`mta.outbound.channels`) is the first; a datagram transport for constrained links
(STANAG 4406 Annex E over ACP 142) plugs in at the same two places, without touching
intake, the queue or delivery:

- **inbound**, a transport hands each APDU a bound peer transferred to an
  :class:`InboundSink` (intake), and confirms it to the peer only once the call returned:
  then the APDU is committed and this MTA is responsible for it (X.411 12.2.1.1).  A
  :class:`Refused` it raises is the peer's to hear: ``temporary`` means the store cannot
  take it for now, and the peer should keep the message and try again later.
- **outbound**, a transport runs one :class:`Channel` per configured connection slot of
  a peer.  A channel takes its work from an :class:`OutboundQueue`: it claims the next
  entries for its peer at its slot's precedences (most urgent, oldest first), transfers
  them, and hands back what the peer confirmed with its next claim, or puts back what
  failed.  The daemon wakes a channel when something it may carry was queued.

What a transport must provide, then: a way to admit peers (authentication is the
transport's: the MTA-bind for P1) that tells the daemon when a peer is seen to answer,
one inbound adapter that calls the sink, and a channel per slot with the methods below.
It must never confirm to a peer before the sink returned, and never mark an entry
transferred before the peer confirmed it.

Public API::

    Refused(why, *, temporary=False, fault=None)
    InboundSink       .receive(apdu, peer)  .receive_too_long(event, peer)
    OutboundQueue     .claim(...)  .backlog(...)  .put_back(...)  .non_deliver(...)
    Channel           .start()  .stop()  .wake()  .admits(precedence)  .claim_ahead()
                      .peer_reachable()  .snapshot() -> SlotSnapshot
    Runner(Channel)   .name  .part  .retiring  .flush()  .retire()  .drain()  .reconfigure()
    SlotSnapshot, ConnectionSnapshot, SlotState, ConnectionState   what the operator sees
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from config.schema import Peer
from p1.association.connection import TransferTooLong
from p1.mts.precedence import Precedence
from p1.mts.report import NonDeliveryReport
from store import QueueEntry

__all__ = [
    "Channel",
    "ConnectionSnapshot",
    "ConnectionState",
    "InboundSink",
    "OutboundQueue",
    "Refused",
    "Runner",
    "SlotSnapshot",
    "SlotState",
]


class ConnectionState(enum.StrEnum):
    """Where one connection of a slot is in its life."""

    CONNECTING = "connecting"
    """Opening TCP and binding."""
    IDLE = "idle"
    """Bound, nothing to transfer: waiting for a message (or its idle timeout)."""
    TRANSFERRING = "transferring"
    """Bound, an RT-TRANSFER under way."""
    BACKOFF = "backoff"
    """The last attempt failed: waiting before the next."""
    CLOSING = "closing"
    """Releasing the association (idle timeout, stop, or the peer ended it)."""


class SlotState(enum.StrEnum):
    """A slot as a whole, from its connections' states (what ``x400ctl`` reports)."""

    CLOSED = "closed"
    """No connection: an on-demand slot with nothing to send, or a slot not started."""
    UP = "up"
    """At least one connection is bound (idle or transferring)."""
    CONNECTING = "connecting"
    """None bound yet, and at least one not waiting out a backoff."""
    DOWN = "down"
    """Every connection is waiting out a backoff: the peer cannot be reached."""

    @classmethod
    def of(cls, connections: Sequence[ConnectionState]) -> SlotState:
        """The state of a slot whose connections are in ``connections``."""
        if not connections:
            return cls.CLOSED
        if any(c in _BOUND for c in connections):
            return cls.UP
        if all(c is ConnectionState.BACKOFF for c in connections):
            return cls.DOWN
        return cls.CONNECTING


_BOUND = frozenset({ConnectionState.IDLE, ConnectionState.TRANSFERRING})


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionSnapshot:
    """One connection of a slot, as the operator sees it."""

    index: int
    state: ConnectionState
    since: float
    """Seconds in this state."""
    transfers: int
    last_error: str | None
    tls_version: str | None = None
    """The TLS version negotiated ("TLSv1.3") while bound inside TLS, else None."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SlotSnapshot:
    """One slot of a peer channel, as the operator sees it."""

    peer: str
    precedences: tuple[str, ...]
    host: str
    port: int
    dscp: str
    mode: str
    tls: bool
    """Whether the slot's connections run inside TLS (its ``tls``)."""
    max_connections: int
    backlog: int
    connections: tuple[ConnectionSnapshot, ...]

    @property
    def state(self) -> SlotState:
        """The slot's state, from its connections'."""
        return SlotState.of([c.state for c in self.connections])


class Refused(Exception):
    """An APDU a peer transferred was not taken in: the peer keeps it (nothing confirmed)."""

    def __init__(self, why: str, *, temporary: bool = False, fault: str | None = None) -> None:
        super().__init__(why)
        self.temporary = temporary
        """The store cannot take it for now: try again later."""
        self.fault = fault
        """What the store stands on failed (a full disk, ...), when that is the cause."""


class InboundSink(Protocol):
    """Where a transport hands what its bound peers transfer (intake)."""

    async def receive(self, apdu: bytes, peer: str) -> None:
        """Take ``apdu`` from ``peer``; returns once committed.  Raises :class:`Refused`."""

    async def receive_too_long(self, event: TransferTooLong, peer: str) -> None:
        """A transfer over ``max_message_size``, of which only its first octets were kept:
        returns once its message is non-delivered.  Raises :class:`Refused`."""


class OutboundQueue(Protocol):
    """What a transport's channels may ask of the queue."""

    def claim(
        self,
        peer: str,
        precedences: Collection[Precedence],
        *,
        limit: int,
        transferred: Sequence[QueueEntry],
        max_octets: int | None,
        urgent: bool,
        mapped: bool = False,
    ) -> asyncio.Future[tuple[QueueEntry, ...]]:
        """Mark ``transferred`` (confirmed by the peer) and claim the next entries
        (``mapped``: to be sent over a link, :meth:`store.queue.TransitQueue.claim_next`)."""

    async def backlog(self, peer: str, precedences: Collection[Precedence]) -> int:
        """Messages due for ``peer`` at these precedences."""

    async def put_back(
        self,
        *,
        peer: str,
        transferred: Sequence[QueueEntry],
        failed: QueueEntry | None,
        error: str,
        next_attempt_at: datetime | None,
        unsent: Sequence[QueueEntry],
    ) -> None:
        """A connection failed: confirmed entries marked, ``failed`` deferred until
        ``next_attempt_at`` (None: at once), ``unsent`` pending again."""

    async def non_deliver(
        self,
        entry: QueueEntry,
        report: NonDeliveryReport | None,
        *,
        why: str,
        peer: str,
        transferred: Sequence[QueueEntry],
    ) -> bool:
        """``entry`` can never go to ``peer``: failed and reported; whether a report was queued."""


class Channel(Protocol):
    """One connection slot of a peer, as a transport runs it."""

    def start(self) -> None:
        """Begin serving the slot."""

    async def stop(self) -> None:
        """End every connection; what was claimed and not confirmed stays in flight."""

    def wake(self) -> None:
        """Something the slot may carry was queued."""

    def admits(self, precedence: Precedence) -> bool:
        """Whether the slot's schedule carries ``precedence``."""

    def claim_ahead(self) -> bool:
        """An idle connection queues its claim now (behind a submission being committed)."""

    def peer_reachable(self) -> None:
        """The peer answers again: stop waiting out a reconnection backoff."""

    def snapshot(self) -> SlotSnapshot:
        """The slot's state for the operator."""


class Runner(Channel, Protocol):
    """A channel as the daemon runs it: named, supervised, swapped by a reload."""

    name: str

    @property
    def part(self) -> str:
        """Its name among the daemon's supervised parts."""

    @property
    def retiring(self) -> bool:
        """Whether a reload is taking it away."""

    def flush(self) -> None:
        """The operator asks to try again now."""

    async def retire(self) -> None:
        """Send no more (a reload replaces or removes it)."""

    async def drain(self) -> None:
        """Wait until a retired runner has ended."""

    def reconfigure(self, context: Any, peer: Peer) -> None:
        """Take a reloaded configuration that leaves it as it is (``context``: the
        daemon's shared channel context, :class:`mta.outbound.channels.ChannelContext`)."""
