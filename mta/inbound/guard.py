"""What peers may make the daemon hold before and after they bind (``[limits]``).

Anyone who reaches a listener can open connections and send octets before the MTA-bind
says who it is (X.411 12.1.1: the bind authenticates the peer), so everything an
unauthenticated peer can make the daemon hold is bounded here, and kept cheap to refuse:

- :class:`Guard` admits inbound P1 connections at accept: a total over all listeners
  (``max_connections``), a count per source address (``max_connections_per_address``)
  and the connections without a completed MTA-bind.  The policy for those, unbound:

  * The configured peers' hosts, resolved to addresses at start and at each reload
    (:meth:`Guard.know`), are known: their connections do not count against
    ``max_unbound``, are never refused for it and never give way to a stranger's.  A
    peer's slots never wait behind a flood, as Postfix's postscreen lets its allowlist
    past every test.
  * A stranger's address holds at most ``max_unbound_per_address`` unbound connections
    (a small share of ``max_unbound``, as anvil counts connections per client and
    OpenSSH's PerSourceMaxStartups limits unauthenticated ones per source); its next
    takes the place of its own oldest, so a host churning connections only replaces its
    own.
  * When the strangers' ``max_unbound`` places (or all ``max_connections``) are taken,
    a newcomer takes the place of the oldest unbound connection of the address holding
    the most; when its own address is among those holding the most, of its own oldest.
    A place only ever passes from an address holding at least as many as the
    newcomer's (max-min fairness), so no address gains by opening more; however many
    addresses churn, a newcomer is admitted, and one alone on its address gives way only
    after every connection older than it: it keeps its place for about as many arrivals
    as there are places.  OpenSSH's
    MaxStartups drops newcomers at random instead, which under a flood refuses a real
    peer with the flood's odds; taking the oldest place costs the flood, whose
    connections are the oldest idle ones, and spares a peer that binds promptly.
    Bound connections never give way; a connection refused is closed before anything
    is read.
- Failed binds cost their source: the next bind from an address whose binds failed waits
  ``failed_bind_delay``, doubled per further failure up to ``failed_bind_delay_max``,
  before any answer (a refusal never comes sooner than an acceptance would).  They also
  cost the daemon as a whole, so that guesses from many addresses are slowed too: past a
  burst of ``FAILED_BIND_BURST`` failures from strangers (one forgiven per
  ``failed_bind_delay``), every stranger's bind waits as well, doubled per further
  failure up to ``failed_bind_delay_max``.  Guessing faster than the level drains keeps
  every stranger's bind waiting ``failed_bind_delay_max`` on ``max_unbound`` places, so
  in the long run guesses are answered at about the larger of ``1 / failed_bind_delay``
  and ``max_unbound / failed_bind_delay_max`` a second (about one with the defaults),
  however many addresses they come from; known peers' binds are not delayed by others'
  failures.  Failed binds are logged as counts (:class:`BindFailures`): the first after
  a quiet interval at once, the rest as one line per interval saying how many from how
  many addresses.
- :class:`Pace`: once bound, an association may stay silent ``idle_timeout`` while nothing
  is in progress; once a PDU has begun to arrive, the peer must send ``min_progress``
  octets per ``progress_interval`` until it is complete.
- :class:`LogLimiter`: one line per condition per minute, the next saying how many were
  left out, so a flood cannot fill the log.
- :func:`descriptor_cap`: ``max_connections`` and the daemon's other files must fit in
  RLIMIT_NOFILE; the soft limit is raised towards the hard one, else the cap is lowered
  (an accept that fails for want of a descriptor makes asyncio log a traceback).

Synchronous, with an injected clock; :mod:`mta.service`, :mod:`mta.link`,
:mod:`mta.inbound.listeners` and :mod:`mta.operator.control` apply them.  IPv6 sources
count per /64 (one host or site holds one).

Public API::

    Guard(limits, *, max_connections=None, clock)    Guard.for_config(config)
        .admit(peername, close) -> Ticket | None    (None: refused, logged; close it)
        .know(addresses)    the configured peers' addresses
        .reconfigure(config)    a reload's [limits], for the connections and binds to come
        .tick()    log the failed binds counted, once their interval is over
        .limits  .warnings  .connections  .unbound  .known
    Ticket  .address  .known  .limits  .warnings  .bind_delay()
            .bind_refused(detail) -> (failures, delay)  .bind_accepted()  .release()
    Pace(idle=, min_octets=, interval=, now=)  .deadline()  .waiting(now)  .idle_now
        .received(n, complete=, now=)  .expired(now) -> why | None
    FailedBinds(delay=, maximum=, clock)  .delay(address, known=)  .failed(address, known=)
        .succeeded(address)  .global_delay()  .bound(delay=, maximum=)
    BindFailures(interval=, clock)  .failed(address, line)  .tick(delay)
    LogLimiter(interval=60, clock)  .log(logger, level, key, message, *args)  .warning(...)
    address_key(host) -> str
    descriptor_cap(connections, reserve) -> DescriptorCap(connections, soft, raised_from)
"""

from __future__ import annotations

import collections
import ipaddress
import logging
import math
import resource
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from config.schema import ConnectionLimits, MtaConfig
from mta.faults import Clock, LogLimiter

__all__ = [
    "BindFailures",
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
FAILED_BIND_BURST = 10.0
"""Failed binds from strangers the daemon takes before every stranger's bind waits."""
FAILED_BIND_REPORT = 60.0
"""Seconds over which failed binds are counted for one log line."""


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
    """Failed MTA-binds by source address and over all strangers, and how long the next
    bind waits.

    At most ``capacity`` addresses are remembered (the least recently failed is forgotten
    first), and an address is forgotten once ``FAILED_BIND_MEMORY`` seconds past its
    longest delay have gone by without a failure.  The strangers' failures fill one
    level, which drains by one per ``delay`` seconds: past ``burst``, every stranger's
    bind waits ``delay``, doubled per failure beyond, up to ``maximum``.
    """

    def __init__(
        self,
        *,
        delay: float,
        maximum: float,
        clock: Clock = time.monotonic,
        capacity: int = FAILED_BIND_ADDRESSES,
        burst: float = FAILED_BIND_BURST,
    ) -> None:
        self.base = delay
        self.maximum = maximum
        self.burst = burst
        self._clock = clock
        self._capacity = capacity
        self._memory = FAILED_BIND_MEMORY + maximum
        self._table: dict[str, _Failures] = {}
        self._level = 0.0  # the strangers' failures not yet drained
        self._level_at = clock()

    def __len__(self) -> int:
        return len(self._table)

    def bound(self, *, delay: float, maximum: float) -> None:
        """New delays (a reload): the failures counted so far stay counted."""
        self._drained()
        self.base = delay
        self.maximum = maximum
        self._memory = FAILED_BIND_MEMORY + maximum

    def delay(self, address: str, *, known: bool = False) -> float:
        """Seconds a bind from ``address`` waits before it is answered (0: none);
        ``known``: a configured peer's address, not slowed by strangers' failures."""
        own = self._delay_after(self._current(address))
        return own if known else max(own, self.global_delay())

    def global_delay(self) -> float:
        """Seconds every stranger's bind waits for the strangers' failures (0: none)."""
        excess = self._drained() - self.burst
        if self.base == 0 or excess < 0:
            return 0.0
        return min(self.maximum, self.base * math.pow(2.0, min(excess, 64.0)))

    def failed(self, address: str, *, known: bool = False) -> int:
        """A bind from ``address`` failed; how many have failed in a row from there."""
        failures = self._current(address) or _Failures(0, 0.0)
        failures.count += 1
        failures.last = self._clock()
        self._table.pop(address, None)
        self._table[address] = failures
        if len(self._table) > self._capacity:
            del self._table[next(iter(self._table))]
        if not known:
            self._level = self._drained() + 1.0
        return failures.count

    def succeeded(self, address: str) -> None:
        """A bind from ``address`` was accepted: it starts afresh."""
        self._table.pop(address, None)

    def _delay_after(self, failures: _Failures | None) -> float:
        if failures is None or self.base == 0:
            return 0.0
        return min(self.maximum, self.base * 2.0 ** min(failures.count - 1, 64))

    def _drained(self) -> float:
        """The strangers' level now, drained since it was last looked at."""
        now = self._clock()
        drained = (now - self._level_at) / self.base if self.base > 0 else self._level
        self._level = max(0.0, self._level - drained)
        self._level_at = now
        return self._level

    def _current(self, address: str) -> _Failures | None:
        failures = self._table.get(address)
        if failures is not None and self._clock() - failures.last > self._memory:
            del self._table[address]
            return None
        return failures


class BindFailures:
    """Failed binds in the log as counts: the first after a quiet interval at once, with
    its details; those that follow within ``interval`` as one WARNING when it is over,
    saying how many, from how many addresses, the most from which.  So a guessing flood
    from a thousand addresses is one line a minute, not a line per address."""

    def __init__(self, *, interval: float = FAILED_BIND_REPORT, clock: Clock = time.monotonic):
        self.interval = interval
        self._clock = clock
        self._since: float | None = None  # when the interval being counted began
        self._count = 0
        self._addresses: collections.Counter[str] = collections.Counter()

    def failed(self, address: str, line: str, delay: float) -> None:
        """A bind from ``address`` failed (``line``: what to say of it when it is said at
        once); ``delay``: what strangers' binds wait now."""
        self.tick(delay)
        if self._since is None:
            log.warning("%s", line)
            self._since = self._clock()
            return
        self._count += 1
        self._addresses[address] += 1
        if len(self._addresses) > FAILED_BIND_ADDRESSES:  # (keep the heaviest)
            del self._addresses[min(self._addresses, key=self._addresses.__getitem__)]

    def tick(self, delay: float) -> None:
        """Say what the interval counted, once it is over; ``delay``: what strangers'
        binds wait now."""
        if self._since is None or self._clock() - self._since < self.interval:
            return
        if not self._count:
            self._since = None  # quiet: the next failure is said at once
            return
        [(heaviest, most)] = self._addresses.most_common(1)
        log.warning(
            "%d more failed bind(s) in the last %.0f s from %d address(es), the most (%d) "
            "from %s; a bind from an address not a peer's waits %g s",
            self._count,
            self._clock() - self._since,
            len(self._addresses),
            most,
            heaviest,
            delay,
        )
        self._since, self._count = self._clock(), 0
        self._addresses.clear()


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
    known: bool = False
    """From a configured peer's address: not counted against ``max_unbound``, never
    giving way to a stranger, its bind not slowed by strangers' failures."""
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
        return self.guard.failed_binds.delay(self.address, known=self.known)

    def bind_refused(self, detail: str) -> tuple[int, float]:
        """Its bind was refused (``detail``: by whom, why, for the log): failures in a row
        from its address, and the delay the next bind from there will wait."""
        return self.guard.bind_refused(self, detail)

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
        self.warnings = LogLimiter(clock=clock)
        self.failed_binds = FailedBinds(
            delay=limits.failed_bind_delay, maximum=limits.failed_bind_delay_max, clock=clock
        )
        self.failures = BindFailures(clock=clock)
        self._clock = clock
        self.known: frozenset[str] = frozenset()
        """The configured peers' addresses (:func:`address_key`)."""
        self._per_address: collections.Counter[str] = collections.Counter()
        self._unbound: dict[Ticket, None] = {}  # every unbound connection, oldest first
        self._strangers: collections.Counter[str] = collections.Counter()
        """Unbound connections per address, of addresses not known."""
        self._stranger_count = 0
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
        self.failed_binds.bound(
            delay=limits.failed_bind_delay, maximum=limits.failed_bind_delay_max
        )

    def know(self, addresses: Iterable[str]) -> None:
        """The configured peers' addresses (their hosts resolved), for the connections
        admitted from now on."""
        self.known = frozenset(address_key(address) for address in addresses)

    @property
    def unbound(self) -> int:
        """Inbound connections admitted whose MTA-bind has not been accepted."""
        return len(self._unbound)

    def admit(self, peername: object, close: Callable[[], None]) -> Ticket | None:
        """A ticket for a connection from ``peername`` (a socket address); None when it is
        refused (the caller closes it at once; a rate-limited line says why)."""
        address = address_key(_host(peername))
        known = address in self.known
        refusal = self._make_room(address, known)
        if refusal is not None:
            key, why = refusal
            self.warnings.warning(log, key, "closed a connection from %s at once: %s", address, why)
            return None
        ticket = Ticket(address, self._clock(), close, self, known)
        self.connections += 1
        self._per_address[address] += 1
        self._unbound[ticket] = None
        if not known:
            self._strangers[address] += 1
            self._stranger_count += 1
        return ticket

    def bind_refused(self, ticket: Ticket, detail: str) -> tuple[int, float]:
        """``ticket``'s bind was refused: counted and logged (:class:`BindFailures`);
        failures in a row from its address, and what its next bind waits."""
        address, known = ticket.address, ticket.known
        failures = self.failed_binds.failed(address, known=known)
        delay = self.failed_binds.delay(address, known=known)
        line = (
            f"{detail}; {failures} failed bind(s) in a row from {address}, "
            f"the next bind from there waits {delay:g} s"
        )
        self.failures.failed(address, line, self.failed_binds.global_delay())
        return failures, delay

    def tick(self) -> None:
        """Log the failed binds counted, once their interval is over."""
        self.failures.tick(self.failed_binds.global_delay())

    def _make_room(self, address: str, known: bool) -> tuple[str, str] | None:
        """Make room for a newcomer from ``address`` by closing an unbound connection
        if one must give way; else which count is full (its key and the text naming it),
        or None when there is room."""
        limits = self.limits
        per_address = limits.max_connections_per_address
        if self._per_address[address] >= per_address:
            if self._evict(self._oldest_of(address), address):
                return None
            return "max_connections_per_address", f"max_connections_per_address ({per_address})"
        share_full = not known and self._strangers[address] >= limits.max_unbound_per_address
        if share_full and self._evict(self._oldest_of(address), address):
            return None  # its newest took its own oldest's place
        if self.connections >= self.max_connections:
            key, cap = "max_connections", self.max_connections
        elif not known and self._stranger_count >= limits.max_unbound:
            key, cap = "max_unbound", limits.max_unbound
        else:
            return None
        if self._evict(self._heaviest(address, known), address):
            return None
        return key, f"{key} ({cap})"

    def _oldest_of(self, address: str) -> Ticket | None:
        """The oldest unbound connection from ``address``."""
        return next((ticket for ticket in self._unbound if ticket.address == address), None)

    def _heaviest(self, newcomer: str, known: bool) -> Ticket | None:
        """The stranger's unbound connection to give way to a newcomer from ``newcomer``:
        the oldest of the address holding the most (the oldest such address on a tie),
        or the newcomer's own oldest when its address holds as many."""
        chosen, most = None, 0
        for ticket in self._unbound:
            count = 0 if ticket.known else self._strangers[ticket.address]
            if count > most:
                chosen, most = ticket, count
        own = 0 if known else self._strangers[newcomer]
        if own and own >= most:
            return self._oldest_of(newcomer)
        return chosen

    def _evict(self, ticket: Ticket | None, newcomer: str) -> bool:
        if ticket is None:
            return False
        self.release(ticket)
        ticket.close()
        waited = self._clock() - ticket.since
        self.warnings.warning(
            log,
            "evicted for a peer" if newcomer in self.known else "evicted",
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
        if not ticket.known:
            _decrement(self._strangers, ticket.address)
            self._stranger_count -= 1


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
