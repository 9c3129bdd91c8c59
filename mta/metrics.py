"""The daemon's figures for Prometheus: counters fed where things happen, gauges read at
scrape time (the text exposition format, served by :mod:`mta.operator.scrape`).

One :class:`prometheus_client.CollectorRegistry` per :class:`Metrics`, never the
library's global one: a process may run several daemons (the tests do), and each
scrape must see one daemon's figures only.

Counters and histograms are fed by one-line hooks where the events happen: the slot
runners (:mod:`mta.outbound.channels`: a transfer confirmed or failed, our bind refused, a
routine transfer held for flash work), the
service (:mod:`mta.service`: a transfer taken in or quarantined, a peer's bind refused)
and the store's units (:mod:`mta.intake.units`: a report queued).  A report is counted only
once the transaction that queued it commits (:meth:`Metrics.report_queued`): a unit
may be run twice, or undone, by the group commit of :mod:`mta.database`.

Gauges are not kept up to date as things change: what the queue holds and what the
slots are doing is read when Prometheus asks, into a :class:`Figures` value, and
rendered from it (:meth:`Metrics.render`).  Label sets are bounded by the
configuration: peers (and ``local`` for local delivery), precedences, states, slots,
directions and outcomes, and the processes of the site sharing the queue (the owners of
claims in flight); never a message or an address.

Public API::

    Metrics(*, process=False)
        .registry
        .transferred(peer, entry, seconds, now)   .transfer_failed(peer, precedence)
        .routine_held(peer, seconds)        a routine transfer waited for flash work
        .received(peer, precedence, octets, *, outcome="accepted")
        .bind_refused(peer, direction, reason)
        .report_queued(session, report)     counted when the session's transaction commits
        .label_refused(session, peer)       likewise: a recipient refused for its label
        .render(figures) -> bytes           the exposition text (CONTENT_TYPE_LATEST)
    after_commit(session, action)       ``action()`` once the session's transaction commits
    Figures(now, routes, queue, slots, slot_states, inbound, unbound, store_bytes,
            quarantine_messages, quarantine_bytes, store_up, degraded, owner, owners)
    SlotFigure(peer, slot, state, backlog, connections)
    WAITING_STATES, TRANSFER_BUCKETS, WAIT_BUCKETS
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from prometheus_client import (
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction

from p1.mts.precedence import Precedence
from p1.mts.report import DeliveryReport, NonDeliveryReport
from store import RecipientState
from store.figures import OwnerFigure, QueueFigure
from store.queue import QueueEntry

__all__ = [
    "TRANSFER_BUCKETS",
    "WAITING_STATES",
    "WAIT_BUCKETS",
    "Figures",
    "Metrics",
    "SlotFigure",
    "after_commit",
]

TRANSFER_BUCKETS: Final = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0),
)
"""Seconds, for one transfer from its first octet to the peer's confirmation: a 1 KB
message on a LAN takes milliseconds, 10 MB over a 512 kbit/s link some 160 s; 300 s is
the transfer timeout."""
WAIT_BUCKETS: Final = (
    *(0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0),
    86400.0,
)
"""Seconds from a message's arrival in this MTA's queue to its transfer confirmed: from
an idle flash slot's milliseconds to a routine message held a day."""
WAITING_STATES: Final = (RecipientState.PENDING, RecipientState.IN_FLIGHT, RecipientState.HELD)
"""The states of recipients the queue still owes something (shown even when none)."""

_PREFIX = "aiox400"
_REPORT_KINDS = ("delivery", "non-delivery")
_PRECEDENCES = tuple(p.label for p in Precedence.most_urgent_first())


@dataclass(frozen=True, slots=True, kw_only=True)
class SlotFigure:
    """One connection slot of a peer channel, as a scrape sees it."""

    peer: str
    slot: str
    """The slot's precedences joined by ``+`` (``override+flash``)."""
    state: str
    """:class:`mta.outbound.channels.SlotState` value."""
    backlog: int
    """Messages waiting for the slot when its supervisor last looked."""
    connections: Mapping[str, int]
    """Connections per :class:`mta.outbound.channels.ConnectionState` value, every state named."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Figures:
    """What a scrape read from the store and the running parts, rendered as gauges."""

    now: datetime
    routes: tuple[str, ...]
    """The configured peers and ``local``: their waiting counts are shown even at 0."""
    queue: tuple[QueueFigure, ...] = ()
    slots: tuple[SlotFigure, ...] = ()
    slot_states: tuple[str, ...] = ()
    """Every :class:`mta.outbound.channels.SlotState` value (one series each per slot)."""
    inbound: int = 0
    """Inbound P1 connections open."""
    unbound: int = 0
    """Of those, the ones without a completed MTA-bind."""
    store_bytes: Mapping[str, int] = field(default_factory=dict)
    quarantine_messages: int = 0
    quarantine_bytes: int = 0
    store_up: bool = True
    degraded: int = 0
    """Long-lived parts failing and being restarted."""
    owner: str = ""
    """This process's name in the site's queue (``<MTA name>/<instance>``)."""
    owners: tuple[OwnerFigure, ...] = ()
    """Recipients in flight per process of the site holding them."""
    minimize: Mapping[str, int] = field(default_factory=dict)
    """The least precedence transferred to each peer (MINIMIZE; 0, deferred: every one)."""


@dataclass(frozen=True, slots=True)
class _Sent:
    """The series a confirmed outbound transfer adds to, for one peer and precedence."""

    transfers: Counter
    octets: Counter
    duration: Histogram
    wait: Histogram


class Metrics:
    """One daemon's registry, its counters and histograms, and its scrape-time gauges."""

    def __init__(self, *, process: bool = False) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        """This daemon's registry (never the library's global one)."""
        if process:
            ProcessCollector(registry=self.registry)
            PlatformCollector(registry=self.registry)
            GCCollector(registry=self.registry)
        self._gauges = _Gauges()
        self.registry.register(self._gauges)
        self._transfers = self._counter(
            "transfers",
            "P1 transfers: out (confirmed, failed) and in (accepted, quarantined)",
            ("peer", "precedence", "direction", "outcome"),
        )
        self._octets = self._counter(
            "transferred_bytes",
            "Octets of the MTS-APDUs transferred (confirmed out, accepted in)",
            ("peer", "precedence", "direction"),
        )
        self._duration = Histogram(
            f"{_PREFIX}_transfer_duration_seconds",
            "Outbound transfer, from its first octet to the peer's confirmation",
            ("peer", "precedence"),
            buckets=TRANSFER_BUCKETS,
            registry=self.registry,
        )
        self._wait = Histogram(
            f"{_PREFIX}_queue_wait_seconds",
            "From arrival in this MTA's queue to the peer's confirmation of the transfer",
            ("peer", "precedence"),
            buckets=WAIT_BUCKETS,
            registry=self.registry,
        )
        self._binds = self._counter(
            "bind_failures",
            "MTA-binds refused: in (a peer's, refused by us) and out (ours, by the peer)",
            ("peer", "direction", "reason"),
        )
        self._reports = self._counter(
            "reports_sent", "Delivery and non-delivery reports this MTA originated", ("kind",)
        )
        for kind in _REPORT_KINDS:
            self._reports.labels(kind)  # (both series from the start, at 0)
        self._label_refusals = self._counter(
            "security_label_refusals",
            "Recipients non-delivered because the clearance of their mailbox (route "
            '"local") or of the link to their peer does not allow the security label',
            ("route",),
        )
        self._held = self._counter(
            "routine_held_seconds",
            "Seconds routine transfers to each peer waited for flash work for it (at most "
            "50 ms per transfer)",
            ("peer",),
        )

        # The series of each label set, looked up once: a transfer's figures cost a few
        # increments, not a label lookup (and its lock) per series.
        self._sent: dict[tuple[str, Precedence], _Sent] = {}
        self._received: dict[tuple[str, Precedence, str], tuple[Counter, Counter]] = {}

    def _counter(self, name: str, documentation: str, labels: tuple[str, ...]) -> Counter:
        return Counter(f"{_PREFIX}_{name}", documentation, labels, registry=self.registry)

    # --- events ------------------------------------------------------------------------

    def transferred(self, peer: str, entry: QueueEntry, seconds: float, now: datetime) -> None:
        """``entry`` was transferred to ``peer`` and confirmed at ``now``, ``seconds`` after
        its first octet went."""
        series = self._sent.get((peer, entry.precedence))
        if series is None:
            precedence = entry.precedence.label
            series = self._sent[peer, entry.precedence] = _Sent(
                transfers=self._transfers.labels(peer, precedence, "out", "confirmed"),
                octets=self._octets.labels(peer, precedence, "out"),
                duration=self._duration.labels(peer, precedence),
                wait=self._wait.labels(peer, precedence),
            )
        series.transfers.inc()
        series.octets.inc(len(entry.apdu))
        series.duration.observe(seconds)
        series.wait.observe(max(0.0, (now - entry.arrival_time).total_seconds()))

    def routine_held(self, peer: str, seconds: float) -> None:
        """A routine transfer to ``peer`` waited ``seconds`` for flash work for it
        (:mod:`mta.outbound.giveway`)."""
        self._held.labels(peer).inc(seconds)

    def transfer_failed(self, peer: str, precedence: Precedence) -> None:
        """A transfer to ``peer`` failed (it goes back to the queue)."""
        self._transfers.labels(peer, precedence.label, "out", "failed").inc()

    def received(
        self, peer: str, precedence: Precedence, octets: int, *, outcome: str = "accepted"
    ) -> None:
        """A transfer from ``peer`` was committed (``accepted``) or kept in the quarantine
        (``quarantined``), and is confirmed."""
        series = self._received.get((peer, precedence, outcome))
        if series is None:
            series = self._received[peer, precedence, outcome] = (
                self._transfers.labels(peer, precedence.label, "in", outcome),
                self._octets.labels(peer, precedence.label, "in"),
            )
        transfers, transferred = series
        transfers.inc()
        transferred.inc(octets)

    def bind_refused(self, peer: str, direction: str, reason: str) -> None:
        """An MTA-bind was refused: ``in``, a peer's by us (``peer`` empty for an MTA not
        configured); ``out``, ours by ``peer``."""
        self._binds.labels(peer, direction, reason).inc()

    def report_queued(self, session: Session, report: DeliveryReport | NonDeliveryReport) -> None:
        """A report was queued in ``session``'s transaction: counted once it commits
        (never if it, or the savepoint around the unit, is rolled back)."""
        kind = _REPORT_KINDS[0 if isinstance(report, DeliveryReport) else 1]
        after_commit(session, self._reports.labels(kind).inc)

    def label_refused(self, session: Session, peer: str | None) -> None:
        """A recipient was refused for its security label, at its mailbox (None) or the
        link to ``peer``: counted once ``session``'s transaction commits."""
        after_commit(session, self._label_refusals.labels(peer or "local").inc)

    # --- scrape ------------------------------------------------------------------------

    def render(self, figures: Figures) -> bytes:
        """The registry in the text exposition format, gauges from ``figures``.  Called on
        the event loop: the figures are set and rendered with no await between, so two
        scrapes never mix."""
        self._gauges.figures = figures
        return generate_latest(self.registry)


class _Gauges(Collector):
    """The gauges of the last :class:`Figures` handed to :meth:`Metrics.render`."""

    def __init__(self) -> None:
        self.figures: Figures | None = None

    def describe(self) -> Iterator[Metric]:
        return iter(())  # the names depend on nothing but are made at scrape time

    def collect(self) -> Iterator[Metric]:
        figures = self.figures
        if figures is None:
            return
        yield _build_info()
        yield from _claims(figures)
        yield from _queue(figures)
        yield from _slots(figures)
        yield from _store(figures)
        yield _minimize(figures)


def _gauge(name: str, documentation: str, labels: tuple[str, ...] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{_PREFIX}_{name}", documentation, labels=labels)


def _build_info() -> Metric:
    info = InfoMetricFamily(f"{_PREFIX}_build", "The running aiox400 release", labels=())
    info.add_metric([], {"version": _version()})
    return info


def _claims(figures: Figures) -> Iterator[Metric]:
    """This process's name, and what each process of the site holds in flight: the
    processes sharing one queue each show all of it, named by owner."""
    info = InfoMetricFamily(
        f"{_PREFIX}_instance", "This process's name in the site's shared queue", labels=()
    )
    info.add_metric([], {"owner": figures.owner})
    yield info
    held = _gauge("claims_in_flight", "Recipients in flight per process holding them", ("owner",))
    lease = _gauge(
        "claims_lease_seconds",
        "Seconds until the latest lease of each process's claims lapses; 0 or less: "
        "lapsed, a live process takes them back",
        ("owner",),
    )
    for figure in figures.owners:
        name = figure.owner or ""
        held.add_metric([name], figure.recipients)
        until = figure.lease_until
        lease.add_metric([name], 0.0 if until is None else (until - figures.now).total_seconds())
    yield from (held, lease)


def _version() -> str:
    try:
        return importlib.metadata.version("aiox400")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _queue(figures: Figures) -> Iterator[Metric]:
    recipients = _gauge(
        "queue_recipients",
        "Recipients in the queue per route, precedence and state",
        ("peer", "precedence", "state"),
    )
    counts: dict[tuple[str, str, str], int] = {
        (route, precedence, state.value): 0
        for route in figures.routes
        for precedence in _PRECEDENCES
        for state in WAITING_STATES
    }
    oldest: dict[tuple[str, str], datetime | None] = {
        (route, precedence): None for route in figures.routes for precedence in _PRECEDENCES
    }
    for row in figures.queue:
        key = (row.route, row.precedence.label)
        counts[(*key, row.state.value)] = row.recipients
        if row.state in WAITING_STATES:
            known = oldest.get(key)
            oldest[key] = row.oldest if known is None else min(known, row.oldest)
    for (route, precedence, state), count in counts.items():
        recipients.add_metric([route, precedence, state], count)
    yield recipients
    age = _gauge(
        "queue_oldest_age_seconds",
        "Age of the oldest recipient waiting (pending, in flight, held); 0: none waits",
        ("peer", "precedence"),
    )
    for (route, precedence), arrival in oldest.items():
        seconds = 0.0 if arrival is None else (figures.now - arrival).total_seconds()
        age.add_metric([route, precedence], max(0.0, seconds))
    yield age


def _minimize(figures: Figures) -> Metric:
    floors = _gauge(
        "minimize_precedence",
        "The least precedence transferred to each peer under MINIMIZE (STANAG 4406 level: "
        "0 deferred, every message, when off; 3 immediate; 5 override)",
        ("peer",),
    )
    for peer, level in figures.minimize.items():
        floors.add_metric([peer], level)
    return floors


def _slots(figures: Figures) -> Iterator[Metric]:
    connections = _gauge(
        "slot_connections",
        "Outbound connections of each slot per state",
        ("peer", "slot", "state"),
    )
    states = _gauge(
        "slot_state", "1 for the state each slot is in, 0 for the others", ("peer", "slot", "state")
    )
    backlog = _gauge("slot_backlog", "Messages waiting for each slot", ("peer", "slot"))
    for slot in figures.slots:
        for state, count in slot.connections.items():
            connections.add_metric([slot.peer, slot.slot, state], count)
        for state in figures.slot_states:
            states.add_metric([slot.peer, slot.slot, state], 1 if state == slot.state else 0)
        backlog.add_metric([slot.peer, slot.slot], slot.backlog)
    yield from (connections, states, backlog)
    inbound = _gauge("inbound_connections", "Inbound P1 connections open, by MTA-bind", ("state",))
    inbound.add_metric(["bound"], figures.inbound - figures.unbound)
    inbound.add_metric(["unbound"], figures.unbound)
    yield inbound


def _store(figures: Figures) -> Iterator[Metric]:
    size = _gauge("store_bytes", "Octets the store occupies, per part", ("part",))
    for part, octets in figures.store_bytes.items():
        size.add_metric([part], octets)
    yield size
    yield _single(
        "quarantine_messages", "Transfers kept in the quarantine", figures.quarantine_messages
    )
    yield _single(
        "quarantine_bytes",
        "Octets of the transfers kept in the quarantine",
        figures.quarantine_bytes,
    )
    yield _single(
        "store_up", "1 when the store takes work, 0 while it refuses it", figures.store_up
    )
    yield _single(
        "parts_degraded", "Long-lived parts failing and being restarted", figures.degraded
    )


def _single(name: str, documentation: str, value: float) -> Metric:
    return GaugeMetricFamily(f"{_PREFIX}_{name}", documentation, value=value)


# --- counting on commit ---------------------------------------------------------------

_PENDING: Final = "aiox400.metrics"
"""Where :func:`after_commit` keeps (action, transaction) in ``session.info``."""

_Pending = tuple[Callable[[], None], SessionTransaction | None]


def after_commit(session: Session, action: Callable[[], None]) -> None:
    """Call ``action`` once ``session``'s transaction commits; never if the transaction,
    or the savepoint it was called in, is rolled back."""
    current = session.get_nested_transaction() or session.get_transaction()
    session.info.setdefault(_PENDING, []).append((action, current))


@event.listens_for(Session, "after_commit")
def _on_commit(session: Session) -> None:
    if session.get_nested_transaction() is not None:
        return  # a savepoint released: its transaction may still roll back
    pending: list[_Pending] = session.info.pop(_PENDING, [])
    for action, _ in pending:
        action()


@event.listens_for(Session, "after_soft_rollback")
def _on_rollback(session: Session, previous_transaction: SessionTransaction) -> None:
    pending: list[_Pending] | None = session.info.get(_PENDING)
    if pending:
        session.info[_PENDING] = [
            (action, at) for action, at in pending if not _inside(at, previous_transaction)
        ]


def _inside(transaction: SessionTransaction | None, undone: SessionTransaction) -> bool:
    level = transaction
    while level is not None and level is not undone:
        level = level.parent
    return level is not None
