"""P_MUL nodes on a simulated network, for the tests (a helper, not a test module).

Deterministic: a fake clock, one link per node that sends one datagram at a time (lowest
rank first, then in the order made) at a fixed rate, and a channel that loses, duplicates
and delays datagrams as a seeded :class:`Faults` says, until its calm time.  When a
burst's last datagram has left its link the node hears :meth:`Node.burst_sent`, as an
adapter would tell it.  Every event a node gives is kept, per node, with its time; a
message handed up is committed at once unless the test's ``commit`` says otherwise.

After every :meth:`Node.handle_timer` the network checks that the node's timer is not
due any more (it would otherwise be called again at once: a busy loop).

Public API::

    T0                           the clock's start (seconds since 1970)
    Faults(seed, ...)            what the channel does to datagrams
    Network(nodes, faults, rate=..., delay=..., commit=...)
        .send(node, data, destinations, ...) -> message_id
        .run(until)   .now   .events[node]   .sent   .delivered
        .of(node, kind)  the events of one kind a node gave
    Sent(time, source, datagram, pdu)   Delivered(time, to, pdu)
    kind_of(pdu) -> "address" | "data" | "ack" | "discard"
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from p1.acp142.node import Datagram, Node, NodeEvent
from p1.acp142.pdu import AckPdu, AddressPdu, DataPdu, DiscardPdu, Pdu, decode_pdu
from p1.acp142.receiver import MessageComplete
from p1.acp142.sender import Destination, SenderTimers

T0 = 1_700_000_000.0
"""The simulation's start, in seconds since 1970 (Expiry_Time counts them so)."""

E = TypeVar("E")


def kind_of(pdu: Pdu) -> str:
    if isinstance(pdu, AddressPdu):
        return "address"
    if isinstance(pdu, DataPdu):
        return "data"
    if isinstance(pdu, AckPdu):
        return "ack"
    assert isinstance(pdu, DiscardPdu)
    return "discard"


@dataclass(frozen=True, slots=True)
class Faults:
    """What the channel does to each datagram that left a link, drawn from ``seed``.

    ``loss`` is the chance of losing a datagram by its kind (``"address"``, ``"data"``,
    ``"last"`` for the Data_PDU numbered last, ``"ack"``, ``"discard"``); ``duplicate``
    the chance of a second copy; each copy arrives ``delay`` plus up to ``jitter``
    seconds after it left (so datagrams within ``jitter`` of each other may swap).  Only
    until ``calm`` seconds after :data:`T0`: then nothing is lost, copied or delayed.
    ``cut(time, source, to, pdu)`` loses a datagram whatever the rest says (a node in
    EMCON, a PDU that never arrives)."""

    seed: int = 0
    loss: dict[str, float] = field(default_factory=dict)
    duplicate: float = 0.0
    jitter: float = 0.0
    calm: float = math.inf
    cut: Callable[[float, int, int, Pdu], bool] | None = None


@dataclass(frozen=True, slots=True)
class Sent:
    """A datagram that left its node's link (whatever the channel then did to it)."""

    time: float
    source: int
    datagram: Datagram
    pdu: Pdu


@dataclass(frozen=True, slots=True)
class Delivered:
    """A datagram that reached node ``to``."""

    time: float
    source: int
    to: int
    pdu: Pdu
    data: bytes


@dataclass
class _Link:
    queue: list[tuple[int, int, Datagram]] = field(default_factory=list)
    busy: tuple[float, Datagram] | None = None


Commit = Callable[[int, MessageComplete, int], "bool | float"]
"""(node, the message, how many times this node was handed it) -> True: committed now;
False: refused; a number: committed that many seconds later."""


def _commit_at_once(node: int, event: MessageComplete, count: int) -> bool | float:
    return True


class Network:
    """Nodes joined by links and a faulty channel (see the module docstring)."""

    def __init__(
        self,
        nodes: Sequence[Node],
        faults: Faults | None = None,
        *,
        rate: float = 1_000_000.0,
        delay: float = 0.05,
        commit: Commit = _commit_at_once,
    ) -> None:
        self.nodes = {n.node_id: n for n in nodes}
        self.faults = faults or Faults()
        self.rate = rate
        """Octets per second on each link."""
        self.delay = delay
        self.commit = commit
        self.now = T0
        self.events: dict[int, list[tuple[float, NodeEvent]]] = {n: [] for n in self.nodes}
        self.sent: list[Sent] = []
        self.delivered: list[Delivered] = []
        self.handed: dict[tuple[int, int, int], int] = {}
        self._random = random.Random(self.faults.seed)
        self._links = {n: _Link() for n in self.nodes}
        self._order = itertools.count()
        self._arrivals: list[tuple[float, int, int, int, bytes]] = []
        self._commits: list[tuple[float, int, int, int, int]] = []
        self._totals: dict[tuple[int, int], int] = {}

    # --- driving -----------------------------------------------------------------------

    def send(
        self,
        node: int,
        data: bytes,
        destinations: Sequence[Destination],
        *,
        priority: int = 1,
        rank: int = 0,
        expiry: float = 3600.0,
        max_pdu: int = 1400,
        timers: SenderTimers | None = None,
    ) -> int:
        """``node`` sends ``data``; ``expiry`` is seconds after :data:`T0`."""
        message_id = self.nodes[node].send_message(
            data,
            destinations,
            priority=priority,
            rank=rank,
            expiry=int(T0 + expiry),
            max_pdu=max_pdu,
            timers=timers or SenderTimers(),
        )
        self._collect(node)
        return message_id

    def run(self, until: float) -> None:
        """Run until nothing is left to do, or ``until`` seconds after :data:`T0`."""
        end = T0 + until
        while True:
            due = self._next()
            if due is None or due > end:
                self.now = max(self.now, end) if due is not None else self.now
                return
            self.now = max(self.now, due)
            self._step()

    def of(self, node: int, kind: type[E]) -> list[E]:
        """The events of ``kind`` that ``node`` gave, in order."""
        return [e for _, e in self.events[node] if isinstance(e, kind)]

    def sent_by(self, node: int, kind: str) -> list[Sent]:
        return [s for s in self.sent if s.source == node and kind_of(s.pdu) == kind]

    # --- one step ----------------------------------------------------------------------

    def _next(self) -> float | None:
        times: list[float] = []
        for link in self._links.values():
            if link.busy is not None:
                times.append(link.busy[0])
            elif link.queue:
                times.append(self.now)
        if self._arrivals:
            times.append(self._arrivals[0][0])
        if self._commits:
            times.append(self._commits[0][0])
        times += [t for t in (n.timer for n in self.nodes.values()) if t is not None]
        return min(times, default=None)

    def _step(self) -> None:
        for node_id, link in self._links.items():
            self._link_step(node_id, link)
        while self._arrivals and self._arrivals[0][0] <= self.now:
            _, _, source, to, data = heapq.heappop(self._arrivals)
            self._arrive(source, to, data)
        while self._commits and self._commits[0][0] <= self.now:
            _, _, node_id, source, message_id = heapq.heappop(self._commits)
            self.nodes[node_id].committed(source, message_id, self.now)
            self._collect(node_id)
        for node_id, node in self.nodes.items():
            if node.timer is not None and node.timer <= self.now:
                self._record(node_id, node.handle_timer(self.now))
                after = node.timer
                assert after is None or after > self.now, (
                    f"node {node_id}: timer {after} not after {self.now} once handled"
                )
                self._collect(node_id)

    def _link_step(self, node_id: int, link: _Link) -> None:
        if link.busy is not None and link.busy[0] <= self.now:
            _, datagram = link.busy
            link.busy = None
            self._leave(node_id, datagram)
        if link.busy is None and link.queue:
            _, _, datagram = heapq.heappop(link.queue)
            link.busy = (self.now + len(datagram.data) / self.rate, datagram)

    def _leave(self, node_id: int, datagram: Datagram) -> None:
        pdu = decode_pdu(datagram.data)
        if isinstance(pdu, AddressPdu):
            self._totals[pdu.source, pdu.message_id] = pdu.total
        self.sent.append(Sent(self.now, node_id, datagram, pdu))
        for at in self._channel(node_id, datagram.to, pdu):
            heapq.heappush(
                self._arrivals, (at, next(self._order), node_id, datagram.to, datagram.data)
            )
        if datagram.ends_burst is not None:
            self._record(node_id, self.nodes[node_id].burst_sent(datagram.ends_burst, self.now))
            self._collect(node_id)

    def _channel(self, source: int, to: int, pdu: Pdu) -> list[float]:
        """When the copies of one datagram arrive (none: it was lost)."""
        faults = self.faults
        if faults.cut is not None and faults.cut(self.now, source, to, pdu):
            return []
        if self.now >= T0 + faults.calm:
            return [self.now + self.delay]
        kind = kind_of(pdu)
        if kind == "data" and self._last(pdu):
            kind = "last"
        draws = [self._random.random() for _ in range(4)]
        if draws[0] < faults.loss.get(kind, 0.0):
            return []
        copies = 2 if draws[1] < faults.duplicate else 1
        return [self.now + self.delay + faults.jitter * d for d in draws[2 : 2 + copies]]

    def _last(self, pdu: Pdu) -> bool:
        assert isinstance(pdu, DataPdu)
        return self._totals.get((pdu.source, pdu.message_id)) == pdu.sequence

    def _arrive(self, source: int, to: int, data: bytes) -> None:
        node = self.nodes.get(to)
        if node is None:
            return
        self.delivered.append(Delivered(self.now, source, to, decode_pdu(data), data))
        self._record(to, node.receive_datagram(data, self.now))
        self._collect(to)

    def _record(self, node_id: int, events: list[NodeEvent]) -> None:
        for event in events:
            self.events[node_id].append((self.now, event))
            if isinstance(event, MessageComplete):
                self._hand_up(node_id, event)

    def _hand_up(self, node_id: int, event: MessageComplete) -> None:
        key = (node_id, event.source, event.message_id)
        self.handed[key] = self.handed.get(key, 0) + 1
        answer = self.commit(node_id, event, self.handed[key])
        node = self.nodes[node_id]
        if answer is True:
            node.committed(event.source, event.message_id, self.now)
        elif answer is False:
            node.refused(event.source, event.message_id)
        else:
            entry = (self.now + answer, next(self._order), node_id, event.source, event.message_id)
            heapq.heappush(self._commits, entry)

    def _collect(self, node_id: int) -> None:
        link = self._links[node_id]
        for datagram in self.nodes[node_id].datagrams_to_send():
            heapq.heappush(link.queue, (datagram.rank, next(self._order), datagram))
