"""This MTA's ACP 142 node on UDP: the asyncio adapter of :class:`p1.acp142.node.Node`.

One :class:`Acp142Link` per MTA with an ``[acp142]`` table.  It owns:

- two UDP sockets on ``[acp142] address``: ``data_port`` (Address, Data and
  Discard_Message PDUs) and ``ack_port`` (Ack_PDUs); everything is sent from the first;
- the *pacer*: every datagram goes out through one queue ordered by rank (the most
  urgent precedence first, acknowledgements before all), at ``[acp142] rate`` bit/s, so
  that a flash message overtakes the Data_PDUs of a routine one still waiting and the
  radio or the host is never handed more than the link carries.  The retransmission
  timer of a message starts when the last PDU of its burst left here;
- the node's one timer (acknowledgement delays, retransmissions, expiries);
- the inbound side of the transport seam (:mod:`mta.transport`): a message that arrived
  whole is unwrapped (STANAG 4406 Annex E) and handed to intake as its peer's transfer;
  only once intake returned is it acknowledged, so this MTA is then responsible for it.
  A message intake refuses is not acknowledged: its sender keeps it and sends it again.

Only the configured ACP 142 peers are heard: a datagram from any other address, or a
message whose Source_ID is not the peer's at that address, is dropped with one line a
minute.  ACP 142 has no authentication of its own: the link (a crypto unit, an IPsec
tunnel) is what keeps strangers out.

The outbound side is :class:`mta.acp142.channel.Acp142Channel`, one per peer, which hands
messages to :meth:`Acp142Link.send` and waits for their outcome.

Public API::

    Acp142Link(config, sink, *, reachable, route)
        await .start()   await .stop()   .reconfigure(config)
        .send(peers, apdu, precedence, expiry) -> Sending   (its .outcomes futures, by
                                                peer: True delivered, False expired)
        .cancel(sending)      .ports -> (data_port, ack_port)
        .counters -> dict[str, int]
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import ipaddress
import itertools
import logging
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from config.schema import Acp142Endpoint, MtaConfig, Peer
from config.values import Transport
from mta.acp142.share import own_share
from mta.faults import LogLimiter
from mta.intake.routing import Route
from mta.transport import InboundSink, Refused
from p1.acp142.annex_e import unwrap_apdu, wrap_apdu
from p1.acp142.node import (
    BadPdu,
    Datagram,
    Delivered,
    Node,
    NodeEvent,
    Undelivered,
)
from p1.acp142.pdu import HEADER_SIZE, PduType, node_id, node_text
from p1.acp142.receiver import Dropped, MessageComplete, ReceiverLimits
from p1.acp142.receiver import Refused as NotTaken
from p1.acp142.sender import Destination, SenderTimers
from p1.errors import DecodeError
from p1.mts.precedence import Precedence
from p1.orname.model import ORName

__all__ = ["Acp142Link", "Sending"]

log = logging.getLogger("aiox400.mta")

_UDP_IP_HEADERS = 28
"""IPv4 and UDP headers: what each datagram costs the link besides its PDU."""
_LOOP_SLACK = 0.001
_RECEIVE_BUFFER = 4 * 1024 * 1024
"""SO_RCVBUF asked of each socket (the kernel caps it at net.core.rmem_max)."""


@dataclass(slots=True)
class Sending:
    """One message handed to the link: its Message_ID and, per peer, its outcome."""

    message_id: int
    outcomes: dict[str, asyncio.Future[bool]]
    """By peer name: True once the peer has it, False if it expired first."""


@dataclass(order=True, slots=True)
class _Queued:
    rank: int
    order: int
    datagram: Datagram = field(compare=False)
    address: tuple[str, int] = field(compare=False)


class _Socket(asyncio.DatagramProtocol):
    """One UDP socket: what it receives goes to the link."""

    def __init__(self, link: Acp142Link) -> None:
        self.link = link
        self.transport: asyncio.DatagramTransport | None = None

    def datagram_received(self, data: bytes, addr: tuple[str | int, int]) -> None:
        self.link.datagram_received(data, str(addr[0]))

    def error_received(self, exc: Exception) -> None:
        self.link.notes.log(log, logging.WARNING, "acp142 socket", "acp142: %s", exc)


class Acp142Link:
    """This MTA's ACP 142 node (see the module docstring)."""

    def __init__(
        self,
        config: MtaConfig,
        sink: InboundSink,
        *,
        reachable: Callable[[str], None],
        route: Callable[[ORName], Route],
    ) -> None:
        assert config.acp142 is not None
        self.endpoint: Acp142Endpoint = config.acp142
        self.sink = sink
        self.reachable = reachable
        self.route = route
        """Where this MTA routes a recipient now (for a message multicast to several)."""
        self.notes = LogLimiter()
        self.counters: dict[str, int] = dict.fromkeys(
            (
                "sent",
                "multicast",
                "received",
                "octets_sent",
                "bad",
                "strangers",
                "delivered",
                "expired",
            ),
            0,
        )
        self.node = Node(
            node_id(self.endpoint.node),
            receiver=_receiver_limits(config),
            first_message_id=int(time.time() * 10),
        )
        self._limit = config.limits.max_message_size
        self._peers: dict[int, Peer] = {}
        self._by_address: dict[str, Peer] = {}
        self._node_of: dict[str, int] = {}
        self._groups: dict[int, tuple[str, int]] = {}
        self._sending: dict[int, Sending] = {}
        self._queue: list[_Queued] = []
        self._order = itertools.count()
        self._pending = asyncio.Event()
        self._timer_changed = asyncio.Event()
        self._sockets: list[_Socket] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._commits: set[asyncio.Task[None]] = set()
        self.reconfigure(config)

    # --- life ------------------------------------------------------------------------------

    @property
    def ports(self) -> tuple[int, int]:
        """The data and ack ports bound (useful when configured as 0)."""
        return self._port(0), self._port(1)

    def _port(self, index: int) -> int:
        socket = self._sockets[index].transport
        assert socket is not None
        return int(socket.get_extra_info("sockname")[1])

    async def start(self) -> None:
        """Bind both sockets and start the pacer and the timer."""
        loop = asyncio.get_running_loop()
        for port in (self.endpoint.data_port, self.endpoint.ack_port):
            protocol = _Socket(self)
            transport, _ = await loop.create_datagram_endpoint(
                functools.partial(_same, protocol), local_addr=(self.endpoint.address, port)
            )
            protocol.transport = transport
            self._sockets.append(protocol)
        for one in self._sockets:
            _receive_buffer(one)
        _send_multicast(self._sockets[0], self.endpoint)
        for group in self.endpoint.groups:
            protocol = _Socket(self)
            transport, _ = await loop.create_datagram_endpoint(
                functools.partial(_same, protocol), sock=_group_socket(group, self.endpoint)
            )
            protocol.transport = transport
            _receive_buffer(protocol)
            self._sockets.append(protocol)
        for job, name in ((self._pace, "acp142 pacer"), (self._tick, "acp142 timer")):
            task = asyncio.create_task(job(), name=name)
            self._tasks.add(task)
        log.info(
            "acp142: node %s on %s, data port %d, ack port %d, %d bit/s",
            self.endpoint.node,
            self.endpoint.address,
            *self.ports,
            self.endpoint.rate,
        )

    async def stop(self) -> None:
        """Stop sending and receiving; messages on their way stay queued (not confirmed)."""
        for task in (*self._tasks, *self._commits):
            task.cancel()
        for task in (*self._tasks, *self._commits):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for one in self._sockets:
            if one.transport is not None:
                one.transport.close()
        for sending in self._sending.values():
            for outcome in sending.outcomes.values():
                if not outcome.done():
                    outcome.cancel()

    def reconfigure(self, config: MtaConfig) -> None:
        """Take the peers of a reloaded configuration (the endpoint itself stays)."""
        peers = [p for p in config.peers if p.transport is Transport.ACP142]
        self._peers = {node_id(p.node_id): p for p in peers}
        self._node_of = {p.name: node for node, p in self._peers.items()}
        self._by_address = {_address(h): p for p in peers for h in p.hosts}
        self._groups = {
            node_id(p.acp142.group): (p.acp142.group, p.acp142.data_port)
            for p in peers
            if p.acp142.group is not None
        }

    # --- sending ---------------------------------------------------------------------------

    def send(
        self, peers: Sequence[Peer], apdu: bytes, precedence: Precedence, expiry: int
    ) -> Sending:
        """Start sending ``apdu`` to ``peers`` (several: once, to their multicast group);
        each outcome resolves when its peer has it (True) or the message's Expiry_Time
        passed first (False)."""
        first = peers[0]
        group = first.acp142.group
        together = len(peers) > 1 and group is not None
        message_id = self.node.send_message(
            wrap_apdu(apdu),
            [Destination(node_id(p.node_id), emcon=p.acp142.emcon) for p in peers],
            priority=int(precedence),
            rank=int(Precedence.OVERRIDE) - int(precedence),
            expiry=expiry,
            max_pdu=self.endpoint.max_pdu_size,
            timers=_timers(first),
            to=(node_id(group),) if together and group is not None else (),
        )
        loop = asyncio.get_running_loop()
        sending = Sending(message_id, {p.name: loop.create_future() for p in peers})
        self._sending[message_id] = sending
        self._flush()
        return sending

    def cancel(self, sending: Sending) -> None:
        """Send nothing more for ``sending`` (the channel stops)."""
        self.node.cancel(sending.message_id)
        self._sending.pop(sending.message_id, None)
        self._queue = [q for q in self._queue if q.datagram.ends_burst != sending.message_id]
        heapq.heapify(self._queue)

    def _flush(self) -> None:
        """Queue what the node has to send (no acknowledgement when this node is in
        EMCON), and look at its timer again."""
        for datagram in self.node.datagrams_to_send():
            address = self._destination(datagram)
            if address is None or (self.endpoint.emcon and datagram.rank < 0):
                continue
            heapq.heappush(
                self._queue, _Queued(datagram.rank, next(self._order), datagram, address)
            )
        if self._queue:
            self._pending.set()
        self._timer_changed.set()

    def _destination(self, datagram: Datagram) -> tuple[str, int] | None:
        group = self._groups.get(datagram.to)
        if group is not None:
            return group
        peer = self._peers.get(datagram.to)
        if peer is None:
            return None
        is_ack = datagram.data[3] & 0x3F == PduType.ACK
        return peer.host, peer.acp142.ack_port if is_ack else peer.acp142.data_port

    async def _pace(self) -> None:
        """Send the queue, most urgent first, at the link's rate."""
        rate = self.endpoint.rate
        free_at = time.monotonic()
        while True:
            while not self._queue:
                self._pending.clear()
                await self._pending.wait()
            queued = heapq.heappop(self._queue)
            delay = free_at - time.monotonic()
            if delay > _LOOP_SLACK:
                await asyncio.sleep(delay)
                heapq.heappush(self._queue, queued)  # (something more urgent may have come)
                continue
            self._transmit(queued)
            octets = len(queued.datagram.data) + _UDP_IP_HEADERS
            free_at = max(free_at, time.monotonic()) + octets * 8 / rate

    def _transmit(self, queued: _Queued) -> None:
        socket = self._sockets[0].transport
        assert socket is not None
        socket.sendto(queued.datagram.data, queued.address)
        self.counters["sent"] += 1
        self.counters["octets_sent"] += len(queued.datagram.data)
        if queued.datagram.to in self._groups:
            self.counters["multicast"] += 1
        if queued.datagram.ends_burst is not None:
            self._handle(self.node.burst_sent(queued.datagram.ends_burst, time.time()))

    # --- receiving -------------------------------------------------------------------------

    def datagram_received(self, data: bytes, host: str) -> None:
        """One datagram on either socket."""
        peer = self._by_address.get(_address(host))
        if peer is None:
            self.counters["strangers"] += 1
            self.notes.log(
                log,
                logging.WARNING,
                f"acp142 stranger {host}",
                "acp142: datagram from %s dropped: no ACP 142 peer has that address",
                host,
            )
            return
        if len(data) >= HEADER_SIZE and not self._from_peer(data, peer):
            return
        self.counters["received"] += 1
        self._handle(self.node.receive_datagram(data, time.time()))

    def _from_peer(self, data: bytes, peer: Peer) -> bool:
        """Whether a PDU from ``peer``'s address names ``peer`` as its source."""
        offset = HEADER_SIZE
        if len(data) < offset + 4:
            return True  # (the node says what is wrong with it)
        source = int.from_bytes(data[offset : offset + 4], "big")
        if source == self._node_of[peer.name]:
            return True
        self.counters["strangers"] += 1
        self.notes.log(
            log,
            logging.WARNING,
            f"acp142 source {peer.name}",
            "acp142: PDU from %s (%s) names node %s, not its node %s: dropped",
            peer.name,
            peer.host,
            node_text(source),
            peer.node_id,
        )
        return False

    def _handle(self, events: list[NodeEvent]) -> None:
        for event in events:
            self._dispatch(event)
        self._flush()

    def _dispatch(self, event: NodeEvent) -> None:
        if isinstance(event, MessageComplete):
            self._complete(event)
        elif isinstance(event, Delivered):
            self._delivered(event)
        elif isinstance(event, Undelivered):
            self._undelivered(event)
        elif isinstance(event, BadPdu):
            self._bad("PDU dropped", event.kind, event.why)
        elif isinstance(event, NotTaken):
            self._not_taken(event)
        else:
            self._dropped(event)

    def _complete(self, event: MessageComplete) -> None:
        peer = self._peers.get(event.source)
        if peer is None:
            self.node.refused(event.source, event.message_id)
            return
        self.reachable(peer.name)
        task = asyncio.create_task(self._commit(peer, event), name=f"acp142 from {peer.name}")
        self._commits.add(task)
        task.add_done_callback(self._commits.discard)

    async def _commit(self, peer: Peer, event: MessageComplete) -> None:
        """Hand the message to intake; acknowledge it once committed."""
        try:
            apdu = self._share(unwrap_apdu(event.data, self._limit), event)
            await self.sink.receive(apdu, peer.name)
        except DecodeError as error:
            self.node.refused(event.source, event.message_id)
            self._bad(
                peer.name, "annex-e", f"message {event.message_id} is no Annex E APDU: {error}"
            )
        except Refused as refused:
            self.node.refused(event.source, event.message_id)
            level = logging.WARNING if refused.temporary else logging.ERROR
            self.notes.log(
                log,
                level,
                f"acp142 refused {peer.name}",
                "acp142: message %d from %s not taken: %s",
                event.message_id,
                peer.name,
                refused,
            )
        else:
            self.node.committed(event.source, event.message_id, time.time())
        self._flush()

    def _share(self, apdu: bytes, event: MessageComplete) -> bytes:
        """A message multicast to several MTAs: the recipients this one takes on."""
        if len(event.destinations) < 2:
            return apdu
        nodes = {*event.destinations, event.source} - {self.node.node_id}
        others = {self._peers[n].name for n in nodes if n in self._peers}
        return own_share(apdu, self.route, others)

    def _delivered(self, event: Delivered) -> None:
        self.counters["delivered"] += 1
        peer = self._resolve(event.message_id, event.node, True)
        if peer is not None and event.acknowledged:
            self.reachable(peer)

    def _undelivered(self, event: Undelivered) -> None:
        self.counters["expired"] += 1
        self._resolve(event.message_id, event.node, False)

    def _resolve(self, message_id: int, node: int, delivered: bool) -> str | None:
        """Settle ``node``'s outcome of ``message_id``; the peer's name."""
        sending = self._sending.get(message_id)
        peer = self._peers.get(node)
        if sending is None or peer is None:
            return None
        outcome = sending.outcomes.get(peer.name)
        if outcome is not None and not outcome.done():
            outcome.set_result(delivered)
        if all(o.done() for o in sending.outcomes.values()):
            del self._sending[message_id]
        return peer.name

    def _bad(self, who: str, kind: str, why: str) -> None:
        self.counters["bad"] += 1
        self.notes.log(log, logging.WARNING, f"acp142 bad {kind}", "acp142: %s: %s", who, why)

    def _not_taken(self, event: NotTaken) -> None:
        self.notes.log(
            log,
            logging.WARNING,
            "acp142 not taken",
            "acp142: message %d from node %s not taken now: %s",
            event.message_id,
            node_text(event.source),
            event.why,
        )

    def _dropped(self, event: Dropped) -> None:
        self.notes.log(
            log,
            logging.INFO,
            "acp142 dropped",
            "acp142: incomplete message %d from node %s dropped (%d of %d PDUs): %s",
            event.message_id,
            node_text(event.source),
            event.received,
            event.total,
            event.why,
        )

    # --- the timer -------------------------------------------------------------------------

    async def _tick(self) -> None:
        """Run the node's timer whenever it is due."""
        while True:
            self._timer_changed.clear()
            due = self.node.timer
            wait = None if due is None else max(0.0, due - time.time())
            if wait is None or wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._timer_changed.wait(), wait)
                continue
            self._handle(self.node.handle_timer(time.time()))


def _same(protocol: _Socket) -> _Socket:
    return protocol


def _receive_buffer(one: _Socket) -> None:
    """Room for a burst from a fast peer: the default (some 200 KiB) overflows."""
    assert one.transport is not None
    sock = one.transport.get_extra_info("socket")
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RECEIVE_BUFFER)


def _send_multicast(data: _Socket, endpoint: Acp142Endpoint) -> None:
    """What the data socket sends to a group leaves by the node's own interface."""
    assert data.transport is not None
    sock = data.transport.get_extra_info("socket")
    interface = socket.inet_aton(endpoint.address)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, interface)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, endpoint.multicast_ttl)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)


def _group_socket(group: str, endpoint: Acp142Endpoint) -> socket.socket:
    """A socket receiving ``group`` at the data port, joined on the node's interface."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((group, endpoint.data_port))
    membership = socket.inet_aton(group) + socket.inet_aton(endpoint.address)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
    sock.setblocking(False)
    return sock


def _address(host: str) -> str:
    """``host`` in one written form (an address as the standard library writes it)."""
    with contextlib.suppress(ValueError):
        return str(ipaddress.ip_address(host))
    return host


def _timers(peer: Peer) -> SenderTimers:
    settings = peer.acp142
    return SenderTimers(
        retransmission=settings.retransmission,
        backoff=settings.backoff,
        max_retransmission=settings.max_retransmission,
        emcon_repetitions=settings.emcon_repetitions,
        emcon_interval=settings.emcon_interval,
    )


def _receiver_limits(config: MtaConfig) -> ReceiverLimits:
    endpoint = config.acp142
    assert endpoint is not None
    size = config.limits.max_message_size
    return ReceiverLimits(
        ack_delay=max(endpoint.ack_delay, 3 * endpoint.max_pdu_size * 8 / endpoint.rate),
        max_messages=endpoint.max_incomplete,
        max_octets=endpoint.max_incomplete * size,
        max_message=size,
    )
