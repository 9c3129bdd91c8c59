"""One P_MUL node: its transmissions, its receiver, its datagrams (ACP 142).

A :class:`Node` is what an adapter drives, as aioquic's connection is: datagrams in
(:meth:`Node.receive_datagram`), messages to send (:meth:`Node.send_message`), one timer
(:attr:`Node.timer`, :meth:`Node.handle_timer`), datagrams out
(:meth:`Node.datagrams_to_send`), and events back.  It never does I/O and never reads a
clock.

A burst goes as one copy of each PDU to each destination still owed the message (those
its Address_PDU names; a Discard_Message_PDU to every destination).  Each datagram out
names the node it goes to and its *rank* (the order the link sends in: lower first, then
first come first served; the adapter gives each message its rank from its precedence),
and the last one of a burst names its message, so that the adapter reports when it left
the link (:meth:`Node.burst_sent`): the retransmission timer starts then, not when the
burst was queued behind slower traffic.

Acknowledgements due are sent in as few Ack_PDUs per destination node as hold them, each
entry naming one message, at most 64 entries and 65507 octets (the largest UDP payload
over IPv4) in one; an entry whose missing numbers would not fit lists the lowest of them,
and the next answer the rest.  A datagram that is not a PDU this node takes gives a
:class:`BadPdu` event and changes nothing.

Public API::

    Node(node_id, *, receiver=ReceiverLimits(), first_message_id=1)
        .send_message(data, destinations, *, priority, rank, expiry, max_pdu, timers,
                      to=()) -> message_id
        .cancel(message_id)                         no more bursts (a stop)
        .receive_datagram(data, now) -> list[NodeEvent]
        .committed(source, message_id, now)   .refused(source, message_id)
        .burst_sent(message_id, now)
        .timer -> float | None   .handle_timer(now) -> list[NodeEvent]
        .datagrams_to_send() -> list[Datagram]
        .sending -> int
    Datagram(data, to, rank, ends_burst)
    NodeEvent = MessageComplete | Refused | Dropped | Delivered | Undelivered | BadPdu
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from p1.acp142.pdu import (
    HEADER_SIZE,
    AckInfo,
    AckPdu,
    AddressPdu,
    PduError,
    ack_info_size,
    decode_pdu,
    encode_pdu,
)
from p1.acp142.receiver import Dropped, MessageComplete, Receiver, ReceiverLimits, Refused
from p1.acp142.sender import Burst, Destination, Expired, SenderTimers, Transmission

__all__ = [
    "BadPdu",
    "Datagram",
    "Delivered",
    "Node",
    "NodeEvent",
    "Undelivered",
]

_U32 = 0xFFFFFFFF
_ACK_RANK = -1
"""Acknowledgements go before any message's PDUs: they are short and free the sender."""
_ACK_ENTRIES = 64
_ACK_OCTETS = 65507
"""The largest Ack_PDU: the largest UDP payload over IPv4."""
_ACK_HEAD = HEADER_SIZE + 6
"""An Ack_PDU's octets before its entries (Source_ID_of_Ack_Sender, the count)."""


@dataclass(frozen=True, slots=True)
class Datagram:
    """One PDU to send to node ``to``; ``ends_burst``: the message whose burst it ends."""

    data: bytes
    to: int
    rank: int
    ends_burst: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivered:
    """Destination ``node`` has message ``message_id`` (``acknowledged``, or it is in
    EMCON and its repetitions were sent)."""

    message_id: int
    node: int
    acknowledged: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Undelivered:
    """Message ``message_id`` expired before destination ``node`` had it."""

    message_id: int
    node: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BadPdu:
    """A datagram that is not a PDU taken here: ``kind`` (of :class:`PduError`) and why."""

    kind: str
    why: str


NodeEvent = MessageComplete | Refused | Dropped | Delivered | Undelivered | BadPdu


@dataclass(slots=True)
class _Sending:
    transmission: Transmission
    rank: int
    to: tuple[int, ...]
    grouped: bool = False
    """``to`` is a multicast group: every burst goes there, once."""


class Node:
    """One P_MUL node (see the module docstring)."""

    def __init__(
        self,
        node_id: int,
        *,
        receiver: ReceiverLimits | None = None,
        first_message_id: int = 1,
    ) -> None:
        self.node_id = node_id
        self.receiver = Receiver(node_id, receiver)
        self._next_id = first_message_id & _U32 or 1
        self._sending: dict[int, _Sending] = {}
        self._sequences: dict[int, int] = {}
        self._out: list[Datagram] = []

    @property
    def sending(self) -> int:
        """Messages not yet delivered, expired or cancelled."""
        return len(self._sending)

    # --- sending -------------------------------------------------------------------------

    def send_message(
        self,
        data: bytes,
        destinations: Sequence[Destination],
        *,
        priority: int,
        rank: int,
        expiry: int,
        max_pdu: int,
        timers: SenderTimers,
        to: Sequence[int] = (),
    ) -> int:
        """Start sending ``data``; its Message_ID.  ``to``: where its datagrams go (a
        multicast group's ID: once for every destination); by default to each destination."""
        message_id = self._take_id()
        sequences = {d.node: self._sequence(d.node) for d in destinations}
        transmission = Transmission(
            source=self.node_id,
            message_id=message_id,
            data=data,
            destinations=tuple(destinations),
            priority=priority,
            expiry=expiry,
            max_pdu=max_pdu,
            timers=timers,
            sequences=sequences,
        )
        targets = tuple(to) or tuple(d.node for d in destinations)
        sending = _Sending(transmission, rank, targets, grouped=bool(to))
        self._sending[message_id] = sending
        self._queue(message_id, sending, transmission.start())
        return message_id

    def cancel(self, message_id: int) -> None:
        """Send nothing more for ``message_id``."""
        self._sending.pop(message_id, None)

    def burst_sent(self, message_id: int, now: float) -> list[NodeEvent]:
        """The last PDU of ``message_id``'s latest burst left the link."""
        sending = self._sending.get(message_id)
        if sending is None:
            return []
        sending.transmission.burst_sent(now)
        return self._outcomes(message_id, sending)

    def _take_id(self) -> int:
        message_id = self._next_id
        while message_id in self._sending:
            message_id = message_id % _U32 + 1
        self._next_id = message_id % _U32 + 1
        return message_id

    def _sequence(self, node: int) -> int:
        number = self._sequences.get(node, 0) % _U32 + 1
        self._sequences[node] = number
        return number

    def _queue(self, message_id: int, sending: _Sending, burst: Burst) -> None:
        out = [
            Datagram(encode_pdu(pdu), node, sending.rank)
            for pdu in burst.pdus
            for node in (sending.to if sending.grouped else _burst_to(burst, sending.to))
        ]
        if out and not burst.discard:
            last = out[-1]
            out[-1] = Datagram(last.data, last.to, last.rank, message_id)
        self._out += out

    # --- receiving -----------------------------------------------------------------------

    def receive_datagram(self, data: bytes, now: float) -> list[NodeEvent]:
        """Take one datagram."""
        try:
            pdu = decode_pdu(data)
        except PduError as error:
            return [BadPdu(kind=error.kind, why=str(error))]
        if isinstance(pdu, AckPdu):
            return self._ack(pdu, now)
        events: list[NodeEvent] = list(self.receiver.receive(pdu, now))
        self._take_acks()
        return events

    def _ack(self, pdu: AckPdu, now: float) -> list[NodeEvent]:
        events: list[NodeEvent] = []
        for info in pdu.entries:
            if info.source not in (self.node_id, pdu.node):
                continue  # (some nodes name themselves in the entry: either is taken)
            sending = self._sending.get(info.message_id)
            if sending is None:
                continue
            burst = sending.transmission.receive_ack(pdu.node, info, now)
            if burst is not None:
                self._queue(info.message_id, sending, burst)
            events += self._outcomes(info.message_id, sending)
        return events

    def committed(self, source: int, message_id: int, now: float) -> None:
        """A message handed up is committed: acknowledge it."""
        self.receiver.committed(source, message_id, now)
        self._take_acks()

    def refused(self, source: int, message_id: int) -> None:
        """A message handed up was not taken: its sender sends it again."""
        self.receiver.refused(source, message_id)

    def _take_acks(self) -> None:
        by_node: dict[int, list[AckInfo]] = {}
        for node, info in self.receiver.acks_to_send():
            by_node.setdefault(node, []).append(info)
        for node, entries in by_node.items():
            for batch in _batches(entries):
                pdu = AckPdu(priority=0, node=self.node_id, entries=batch)
                self._out.append(Datagram(encode_pdu(pdu), node, _ACK_RANK))

    # --- timers --------------------------------------------------------------------------

    @property
    def timer(self) -> float | None:
        """When :meth:`handle_timer` is due."""
        times = [s.transmission.timer for s in self._sending.values()]
        times.append(self.receiver.timer)
        return min((t for t in times if t is not None), default=None)

    def handle_timer(self, now: float) -> list[NodeEvent]:
        """Whatever is due at ``now``."""
        events: list[NodeEvent] = list(self.receiver.handle_timer(now))
        self._take_acks()
        for message_id, sending in list(self._sending.items()):
            burst = sending.transmission.handle_timer(now)
            if burst is not None:
                self._queue(message_id, sending, burst)
            events += self._outcomes(message_id, sending)
        return events

    def _outcomes(self, message_id: int, sending: _Sending) -> list[NodeEvent]:
        events: list[NodeEvent] = []
        for outcome in sending.transmission.outcomes():
            if isinstance(outcome, Expired):
                events.append(Undelivered(message_id=message_id, node=outcome.node))
            else:
                events.append(
                    Delivered(
                        message_id=message_id, node=outcome.node, acknowledged=outcome.acknowledged
                    )
                )
        if sending.transmission.done:
            self._sending.pop(message_id, None)
        return events

    def datagrams_to_send(self) -> list[Datagram]:
        """What to send, in the order it was made (the adapter orders it by rank)."""
        taken, self._out = self._out, []
        return taken


def _burst_to(burst: Burst, everyone: tuple[int, ...]) -> tuple[int, ...]:
    """The nodes a burst goes to: those its Address_PDU names, the ones still owed the
    message (a discard goes to every destination)."""
    address = burst.pdus[0] if burst.pdus else None
    if not isinstance(address, AddressPdu):
        return everyone
    owed = {d.node for d in address.destinations}
    return tuple(n for n in everyone if n in owed)


def _batches(entries: list[AckInfo]) -> list[tuple[AckInfo, ...]]:
    """``entries`` in groups that each fit one Ack_PDU."""
    batches: list[tuple[AckInfo, ...]] = []
    batch: list[AckInfo] = []
    size = _ACK_HEAD
    for entry in entries:
        fitted, octets = _fitted(entry)
        if batch and (len(batch) == _ACK_ENTRIES or size + octets > _ACK_OCTETS):
            batches.append(tuple(batch))
            batch, size = [], _ACK_HEAD
        batch.append(fitted)
        size += octets
    if batch:
        batches.append(tuple(batch))
    return batches


def _fitted(entry: AckInfo) -> tuple[AckInfo, int]:
    """``entry`` with as many of its missing numbers, lowest first, as an Ack_PDU holds
    beside nothing else, and its size."""
    size = ack_info_size(entry)
    if _ACK_HEAD + size <= _ACK_OCTETS:
        return entry, size
    numbers = sorted(set(entry.missing))
    low, high = 1, len(numbers)
    while low < high:  # the longest run of the lowest numbers that fits
        middle = (low + high + 1) // 2
        cut = AckInfo(entry.source, entry.message_id, tuple(numbers[:middle]))
        if _ACK_HEAD + ack_info_size(cut) <= _ACK_OCTETS:
            low = middle
        else:
            high = middle - 1
    fitted = AckInfo(entry.source, entry.message_id, tuple(numbers[:low]))
    return fitted, ack_info_size(fitted)
