"""What peers may make the daemon hold before and after they bind (``[limits]``).

Anyone who reaches a listener can open connections and send octets before the MTA-bind
says who it is (X.411 12.1.1: the bind authenticates the peer), so everything an
unauthenticated peer can make the daemon hold is bounded here, and kept cheap to refuse:

- :class:`Guard` admits inbound P1 connections at accept: a total over all listeners, a
  count per source address and a count of connections without a completed MTA-bind.  One
  over a count is closed at once, unless an unbound connection that has waited longer than
  a bind takes (a tenth of ``bind_timeout``) gives way to it: the oldest of the source
  address that holds the most of them, or of the newcomer's own address when that is the
  count it exceeds.  So a flood of idle connections does not keep a real peer out.
- Failed binds cost their source: the next bind from an address whose binds failed waits
  ``failed_bind_delay``, doubled per further failure up to ``failed_bind_delay_max``,
  before any answer (a refusal never comes sooner than an acceptance would).  Another
  address is not delayed; the table of addresses is bounded and forgets quiet ones.
- :class:`Pace`: once bound, an association may stay silent ``idle_timeout`` while nothing
  is in progress; once a PDU has begun to arrive, the peer must send ``min_progress``
  octets per ``progress_interval`` until it is complete.
- :class:`LogLimiter`: one line per condition per minute, the next saying how many were
  left out, so a flood cannot fill the log.
- :func:`descriptor_cap`: ``max_connections`` and the daemon's other files must fit in
  RLIMIT_NOFILE; the soft limit is raised towards the hard one, else the cap is lowered
  (an accept that fails for want of a descriptor makes asyncio log a traceback).

Synchronous, with an injected clock; :mod:`mta.service`, :mod:`mta.link` and
:mod:`mta.operator.control` apply them.  IPv6 sources count per /64 (one host or site holds one).

Public API::

    Guard(limits, *, max_connections=None, clock)    Guard.for_config(config)
        .admit(peername, close) -> Ticket | None    (None: refused, logged; close it)
        .reconfigure(config)    a reload's [limits], for the connections and binds to come
        .limits  .warnings  .connections  .unbound
    Ticket  .address  .limits  .warnings  .bind_delay()  .bind_refused() -> (failures, delay)
            .bind_accepted()  .release()
    Pace(idle=, min_octets=, interval=, now=)  .deadline()  .waiting(now)  .idle_now
        .received(n, complete=, now=)  .expired(now) -> why | None
    FailedBinds(delay=, maximum=, clock)  .delay(address)  .failed(address)  .succeeded(address)
        .bound(delay=, maximum=)
    LogLimiter(interval=60, clock)  .log(logger, level, key, message, *args)  .warning(...)
    address_key(host) -> str
    descriptor_cap(connections, reserve) -> DescriptorCap(connections, soft, raised_from)
"""

from __future__ import annotations

import collections
import ipaddress
import logging
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from config.schema import ConnectionLimits, MtaConfig
from mta.faults import Clock, LogLimiter

__all__ = [
    "DescriptorCap",
    "FailedBinds",
    "Guard",
    "Pace",
    "Ticket",
    "address_key",
    "descriptor_cap",
]

log = logging.getLogger("aiox400.guard")

FAILED_BIND_ADDRESSES = 4096
"""Source addresses :class:`FailedBinds` remembers; the least recently failed goes first."""
FAILED_BIND_MEMORY = 900.0
"""Seconds after its last failed bind (beyond the longest delay) that an address is
forgotten."""
DESCRIPTOR_RESERVE = 64
"""Open files besides connections: standard streams, the event loop, the control socket,
the database and its pool, spool files being written or read."""
IPV6_PREFIX = 64
"""Length of the IPv6 prefix counted as one source address."""


# --- progress of one association ---------------------------------------------------------


class Pace:
    """When a bound peer must next have sent something, for one association.

    While nothing is partly received, the peer may stay silent ``idle`` seconds (None: as
    long as it likes).  Once octets of a PDU have arrived, it must send ``min_octets`` in
    every ``interval`` until the PDU is complete: a trickle cannot hold an association,
    while a transfer at any useful rate takes as long as it needs.
    """

    def __init__(self, *, idle: float | None, min_octets: int, interval: float, now: float) -> None:
        self.idle = idle
        self.min_octets = min_octets
        self.interval = interval
        self._quiet_since = now
        self._window: float | None = None  # when the current interval began, if partial
        self._octets = 0  # received in it

    @property
    def partial(self) -> bool:
        """True while a PDU has begun to arrive and is not complete."""
        return self._window is not None

    def deadline(self) -> float | None:
        """When :meth:`expired` is to be asked, if nothing arrives before; None: never."""
        if self._window is not None:
            return self._window + self.interval
        return None if self.idle is None else self._quiet_since + self.idle

    def waiting(self, now: float) -> None:
        """We are ready for the peer's next PDU: with nothing partly received, its silence
        counts from now (not while we were answering the last one)."""
        if self._window is None:
            self._quiet_since = now

    def received(self, octets: int, *, complete: bool, now: float) -> None:
        """``octets`` arrived; ``complete``: they completed a PDU (an event came of them)."""
        if complete:
            self._window, self._quiet_since = None, now
            return
        if self._window is None:
            self._window, self._octets = now, 0
        self._octets += octets

    @property
    def idle_now(self) -> bool:
        """Nothing is partly received: an expiry now is for silence, not slowness."""
        return self._window is None

    def expired(self, now: float) -> str | None:
        """The deadline has passed: why the association is to end, or None when the peer
        kept up (then the next interval begins)."""
        if self._window is None:
            return f"silent for {self.idle:g} s with nothing in progress"
        if self._octets >= self.min_octets:
            self._window, self._octets = now, 0
            return None
        return (
            f"sent {self._octets} octet(s) of a PDU in {self.interval:g} s, "
            f"fewer than {self.min_octets}"
        )


# --- failed binds ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Failures:
    count: int
    last: float


class FailedBinds:
    """Failed MTA-binds by source address, and how long the next bind from there waits.

    At most ``capacity`` addresses are remembered (the least recently failed is forgotten
    first), and an address is forgotten once ``FAILED_BIND_MEMORY`` seconds past its
    longest delay have gone by without a failure.
    """

    def __init__(
        self,
        *,
        delay: float,
        maximum: float,
        clock: Clock = time.monotonic,
        capacity: int = FAILED_BIND_ADDRESSES,
    ) -> None:
        self.base = delay
        self.maximum = maximum
        self._clock = clock
        self._capacity = capacity
        self._memory = FAILED_BIND_MEMORY + maximum
        self._table: dict[str, _Failures] = {}

    def __len__(self) -> int:
        return len(self._table)

    def bound(self, *, delay: float, maximum: float) -> None:
        """New delays (a reload): the failures counted so far stay counted."""
        self.base = delay
        self.maximum = maximum
        self._memory = FAILED_BIND_MEMORY + maximum

    def delay(self, address: str) -> float:
        """Seconds a bind from ``address`` waits before it is answered (0: none)."""
        failures = self._current(address)
        if failures is None or self.base == 0:
            return 0.0
        return min(self.maximum, self.base * 2.0 ** min(failures.count - 1, 64))

    def failed(self, address: str) -> int:
        """A bind from ``address`` failed; how many have failed in a row from there."""
        failures = self._current(address) or _Failures(0, 0.0)
        failures.count += 1
        failures.last = self._clock()
        self._table.pop(address, None)
        self._table[address] = failures
        if len(self._table) > self._capacity:
            del self._table[next(iter(self._table))]
        return failures.count

    def succeeded(self, address: str) -> None:
        """A bind from ``address`` was accepted: it starts afresh."""
        self._table.pop(address, None)

    def _current(self, address: str) -> _Failures | None:
        failures = self._table.get(address)
        if failures is not None and self._clock() - failures.last > self._memory:
            del self._table[address]
            return None
        return failures


# --- admission -------------------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class Ticket:
    """One inbound connection a :class:`Guard` admitted, counted until :meth:`release`."""

    address: str
    """The source it counts against (:func:`address_key`)."""
    since: float
    close: Callable[[], None] = field(repr=False)
    """Ends the connection at once (when it must give way to another)."""
    guard: Guard = field(repr=False)
    unbound: bool = True
    released: bool = False

    @property
    def limits(self) -> ConnectionLimits:
        return self.guard.limits

    @property
    def warnings(self) -> LogLimiter:
        return self.guard.warnings

    def bind_delay(self) -> float:
        """Seconds to wait before answering this connection's MTA-bind."""
        return self.guard.failed_binds.delay(self.address)

    def bind_refused(self) -> tuple[int, float]:
        """Its bind was refused: failures in a row from its address, and the delay the next
        bind from there will wait."""
        failures = self.guard.failed_binds.failed(self.address)
        return failures, self.guard.failed_binds.delay(self.address)

    def bind_accepted(self) -> None:
        """Its bind was accepted: no longer unbound; its address starts afresh."""
        self.guard.failed_binds.succeeded(self.address)
        self.guard.bound(self)

    def release(self) -> None:
        """The connection has ended (again: nothing)."""
        self.guard.release(self)


class Guard:
    """Admission of inbound P1 connections and what their binds cost, for one daemon."""

    def __init__(
        self,
        limits: ConnectionLimits,
        *,
        max_connections: int | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.limits = limits
        self.max_connections = max_connections or limits.max_connections
        """Inbound connections at once: ``limits.max_connections``, or fewer when the
        open-file limit is lower (:meth:`for_config`)."""
        self.grace = limits.bind_timeout / 10
        """Seconds an unbound connection keeps its place before a newcomer may take it."""
        self.warnings = LogLimiter(clock=clock)
        self.failed_binds = FailedBinds(
            delay=limits.failed_bind_delay, maximum=limits.failed_bind_delay_max, clock=clock
        )
        self._clock = clock
        self._per_address: collections.Counter[str] = collections.Counter()
        self._unbound_per_address: collections.Counter[str] = collections.Counter()
        self._unbound: dict[Ticket, None] = {}  # oldest first
        self.connections = 0
        """Inbound connections admitted and not yet ended."""

    @classmethod
    def for_config(cls, config: MtaConfig) -> Guard:
        """The guard of ``config``'s daemon, with ``max_connections`` fitted into the
        open-file limit (raised if need be; a WARNING says so when it cannot be)."""
        return cls(config.connection_limits, max_connections=_fitted(config))

    def reconfigure(self, config: MtaConfig) -> None:
        """Apply ``config``'s ``[limits]`` (a reload) to the connections admitted and the
        binds answered from now on; the connections admitted stay counted, the addresses
        whose binds failed keep their count, and each association keeps the pace it was
        given when it began (:func:`mta.link.serve_link` reads the limits once)."""
        limits = config.connection_limits
        self.limits = limits
        self.max_connections = _fitted(config)
        self.grace = limits.bind_timeout / 10
        self.failed_binds.bound(
            delay=limits.failed_bind_delay, maximum=limits.failed_bind_delay_max
        )

    @property
    def unbound(self) -> int:
        """Inbound connections admitted whose MTA-bind has not been accepted."""
        return len(self._unbound)

    def admit(self, peername: object, close: Callable[[], None]) -> Ticket | None:
        """A ticket for a connection from ``peername`` (a socket address); None when it is
        refused (the caller closes it at once; a rate-limited line says why)."""
        address = address_key(_host(peername))
        ticket = Ticket(address, self._clock(), close, self)
        refusal = self._make_room(address)
        if refusal is not None:
            key, why = refusal
            self.warnings.warning(log, key, "closed a connection from %s at once: %s", address, why)
            return None
        self.connections += 1
        self._per_address[address] += 1
        self._unbound[ticket] = None
        self._unbound_per_address[address] += 1
        return ticket

    def _make_room(self, address: str) -> tuple[str, str] | None:
        """Evict an unbound connection if one must give way; else which count is full
        (its key and the text naming it), or None when there is room."""
        per_address = self.limits.max_connections_per_address
        if self._per_address[address] >= per_address and not self._evict(
            self._oldest_unbound(address), address
        ):
            return "max_connections_per_address", f"max_connections_per_address ({per_address})"
        if self.connections >= self.max_connections:
            key, cap = "max_connections", self.max_connections
        elif len(self._unbound) >= self.limits.max_unbound:
            key, cap = "max_unbound", self.limits.max_unbound
        else:
            return None
        if self._evict(self._most_waiting(), address):
            return None
        return key, f"{key} ({cap})"

    def _oldest_unbound(self, address: str) -> Ticket | None:
        """The oldest unbound connection from ``address``, if past its grace."""
        settled = self._clock() - self.grace
        for ticket in self._unbound:
            if ticket.since > settled:
                return None
            if ticket.address == address:
                return ticket
        return None

    def _most_waiting(self) -> Ticket | None:
        """The oldest unbound connection past its grace from the address holding the most
        unbound connections."""
        settled = self._clock() - self.grace
        chosen, most = None, 0
        for ticket in self._unbound:
            if ticket.since > settled:
                break
            count = self._unbound_per_address[ticket.address]
            if count > most:
                chosen, most = ticket, count
        return chosen

    def _evict(self, ticket: Ticket | None, newcomer: str) -> bool:
        if ticket is None:
            return False
        self.release(ticket)
        ticket.close()
        waited = self._clock() - ticket.since
        self.warnings.warning(
            log,
            "evicted",
            "closed a connection from %s, unbound after %.1f s, to admit one from %s",
            ticket.address,
            waited,
            newcomer,
        )
        return True

    def bound(self, ticket: Ticket) -> None:
        """``ticket``'s bind was accepted (it stays counted until released)."""
        if ticket.released or not ticket.unbound:
            return
        ticket.unbound = False
        self._forget_unbound(ticket)

    def release(self, ticket: Ticket) -> None:
        """``ticket``'s connection ended."""
        if ticket.released:
            return
        ticket.released = True
        self.connections -= 1
        _decrement(self._per_address, ticket.address)
        if ticket.unbound:
            self._forget_unbound(ticket)

    def _forget_unbound(self, ticket: Ticket) -> None:
        del self._unbound[ticket]
        _decrement(self._unbound_per_address, ticket.address)


def _decrement(counter: collections.Counter[str], key: str) -> None:
    """One less for ``key``, dropped at zero (the counters stay as small as what is open)."""
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]


def _fitted(config: MtaConfig) -> int:
    """``config``'s ``max_connections``, fitted into the open-file limit (raised if need
    be; a WARNING says so when it cannot be)."""
    limits = config.connection_limits
    cap = descriptor_cap(limits.max_connections, _reserve(config))
    if cap.raised_from is not None:
        log.info("raised the open-file limit from %d to %d", cap.raised_from, cap.soft)
    if cap.connections < limits.max_connections:
        log.warning(
            "the open-file limit is %d: inbound P1 connections are capped at %d "
            "instead of max_connections = %d (raise LimitNOFILE)",
            cap.soft,
            cap.connections,
            limits.max_connections,
        )
    return cap.connections


def _reserve(config: MtaConfig) -> int:
    """Open files the daemon needs besides inbound P1 connections."""
    slots = sum(slot.max_connections for peer in config.peers for slot in peer.slots)
    api = config.connection_limits.max_api_connections
    return DESCRIPTOR_RESERVE + len(config.listeners) + slots + api


def _host(peername: object) -> str:
    if isinstance(peername, tuple) and peername:
        return str(peername[0])
    return str(peername)


def address_key(host: str) -> str:
    """The source a connection from ``host`` counts against: the IPv4 address (also when
    IPv4-mapped), the /64 of an IPv6 address, else ``host`` as it is."""
    try:
        address = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_PREFIX), strict=False))
    return str(address)


# --- open files ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DescriptorCap:
    """How many inbound connections fit in the open-file limit."""

    connections: int
    soft: int
    """The soft RLIMIT_NOFILE now (``resource.RLIM_INFINITY``: none)."""
    raised_from: int | None
    """The soft limit before, when it was raised."""


def descriptor_cap(connections: int, reserve: int) -> DescriptorCap:
    """Raise the soft RLIMIT_NOFILE towards the hard limit until ``connections`` plus
    ``reserve`` descriptors fit; how many connections fit then (at least one)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + reserve
    raised_from = None
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        if target > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            except (OSError, ValueError):
                pass
            else:
                soft, raised_from = target, soft
    if soft == resource.RLIM_INFINITY:
        return DescriptorCap(connections, soft, raised_from)
    return DescriptorCap(max(1, min(connections, soft - reserve)), soft, raised_from)
