"""Messages arriving at one node: P_MUL's receiving node (ACP 142 clause 3).

A :class:`Receiver` collects the Data_PDUs of each message announced to its node by an
Address_PDU, keyed by (Source_ID, Message_ID).  Its rules:

1. A message is handed up once, when its last missing Data_PDU arrives
   (:class:`MessageComplete`); it is acknowledged only when the adapter says it was
   committed (:meth:`Receiver.committed`): this node is then responsible for it.  A
   refused message (:meth:`Receiver.refused`) is forgotten: the sender keeps it and
   sends it again.
2. A message handed up is remembered until its Expiry_Time: an Address_PDU announcing it
   again (the sender did not get our acknowledgement) is answered with the whole
   acknowledgement once more, and it is never handed up twice.
3. A message still incomplete when its Data_PDU numbered last arrives is answered at once
   with the numbers it misses (the sender's burst is over: on a half-duplex link every
   second waited is the link's), and so is one still incomplete ``ack_delay`` seconds after
   its latest PDU arrived.
4. Data_PDUs that arrive before their Address_PDU are held, at most
   ``max_unidentified`` of them for ``unidentified_validity`` seconds.
5. Bounds: at most ``max_messages`` incomplete messages and ``max_octets`` octets held
   in all; a message over ``max_message`` octets, or whose Data_PDU would pass
   ``max_octets`` in all, is given up.  An Address_PDU that would pass a bound is
   refused (:class:`Refused`); the sender tries again later.
6. An incomplete message is dropped at its Expiry_Time or when its sender discards it;
   an Address_PDU that arrives at or after its Expiry_Time is ignored.

Time is an argument (seconds since 1970); the machine never reads a clock.

Public API::

    ReceiverLimits(...)
    Receiver(node, limits)
        .receive(pdu, now) -> list[ReceiverEvent]      (Address, Data, Discard PDUs)
        .committed(source, message_id, now)    .refused(source, message_id)
        .timer -> float | None    .handle_timer(now) -> list[ReceiverEvent]
        .acks_to_send() -> list[tuple[int, AckInfo]]   (destination node, entry)
        .holding -> int           incomplete messages held
    MessageComplete, Refused, Dropped       events
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p1.acp142.pdu import AckInfo, AddressPdu, DataPdu, DiscardPdu, Pdu

__all__ = [
    "Dropped",
    "Event",
    "MessageComplete",
    "Receiver",
    "ReceiverEvent",
    "ReceiverLimits",
    "Refused",
]

_Key = tuple[int, int]
_REMEMBERED = 100_000
"""Committed messages remembered at most (each until its Expiry_Time)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReceiverLimits:
    """What one node holds at most, and its timers (seconds)."""

    ack_delay: float = 2.0
    max_messages: int = 64
    max_octets: int = 64 * 1024 * 1024
    max_message: int = 16 * 1024 * 1024
    max_unidentified: int = 256
    unidentified_validity: float = 300.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Something the adapter acts on or logs."""

    source: int
    message_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageComplete(Event):
    """Every Data_PDU of a message arrived: its octets, to be committed."""

    priority: int
    data: bytes
    destinations: tuple[int, ...] = ()
    """The nodes its Address_PDU named (several: it went to a multicast group)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused(Event):
    """An Address_PDU not taken (a bound would be passed): ``why`` for the log."""

    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Dropped(Event):
    """An incomplete message given up: ``why`` (expired, discarded, too large)."""

    why: str
    received: int
    total: int


ReceiverEvent = MessageComplete | Refused | Dropped


@dataclass(slots=True)
class _Incoming:
    address: AddressPdu
    fragments: dict[int, bytes] = field(default_factory=dict)
    octets: int = 0
    last_seen: float = 0.0
    ack_at: float | None = None
    handed_up: bool = False

    @property
    def missing(self) -> tuple[int, ...]:
        return tuple(n for n in range(1, self.address.total + 1) if n not in self.fragments)


@dataclass(slots=True)
class _Held:
    pdu: DataPdu
    until: float


class Receiver:
    """The messages arriving at ``node`` (see the module docstring)."""

    def __init__(self, node: int, limits: ReceiverLimits | None = None) -> None:
        self.node = node
        self.limits = limits or ReceiverLimits()
        self._incoming: dict[_Key, _Incoming] = {}
        self._done: dict[_Key, int] = {}  # committed: the key's Expiry_Time
        self._held: dict[_Key, list[_Held]] = {}
        self._acks: list[tuple[int, AckInfo]] = []

    @property
    def holding(self) -> int:
        """Incomplete messages held."""
        return len(self._incoming)

    def acks_to_send(self) -> list[tuple[int, AckInfo]]:
        """Acknowledgements due, each with the node it goes to."""
        taken, self._acks = self._acks, []
        return taken

    # --- PDUs ----------------------------------------------------------------------------

    def receive(self, pdu: Pdu, now: float) -> list[ReceiverEvent]:
        """Take one PDU (Address, Data or Discard; others are not this machine's)."""
        if isinstance(pdu, AddressPdu):
            return self._address(pdu, now)
        if isinstance(pdu, DataPdu):
            return self._data(pdu, now)
        if isinstance(pdu, DiscardPdu):
            return self._discard(pdu)
        return []

    def _address(self, pdu: AddressPdu, now: float) -> list[ReceiverEvent]:
        if all(d.node != self.node for d in pdu.destinations):
            return []
        key = (pdu.source, pdu.message_id)
        if key in self._done:
            self._acks.append((pdu.source, AckInfo(*key)))
            return []
        incoming = self._incoming.get(key)
        if incoming is None and now >= pdu.expiry:
            return []  # a late copy: the message was given up at its expiry (rule 6)
        if incoming is None:
            refusal = self._bounded(pdu)
            if refusal is not None:
                return [Refused(source=pdu.source, message_id=pdu.message_id, why=refusal)]
            incoming = self._incoming[key] = _Incoming(pdu)
        # (An Address_PDU announcing it again with another number of Data_PDUs, as some
        # senders write the number they resend: the first number stands.)
        if incoming.handed_up:
            return []  # being committed: acknowledged once it is (rule 1)
        incoming.last_seen = now
        incoming.ack_at = now + self.limits.ack_delay
        events: list[ReceiverEvent] = []
        for held in self._held.pop(key, []):
            events += self._data(held.pdu, now)
        return events

    def _bounded(self, pdu: AddressPdu) -> str | None:
        limits = self.limits
        if len(self._incoming) >= limits.max_messages:
            return f"{limits.max_messages} incomplete messages are held already"
        held = sum(i.octets for i in self._incoming.values())
        if held >= limits.max_octets:
            return f"{held} octets of incomplete messages are held already"
        if pdu.total == 0:
            return "an Address_PDU announcing no Data_PDU"
        return None

    def _data(self, pdu: DataPdu, now: float) -> list[ReceiverEvent]:
        key = (pdu.source, pdu.message_id)
        if key in self._done:
            return []
        incoming = self._incoming.get(key)
        if incoming is None:
            self._hold(key, pdu, now)
            return []
        if incoming.handed_up or pdu.sequence > incoming.address.total:
            return []
        incoming.last_seen = now
        if pdu.sequence not in incoming.fragments:
            incoming.fragments[pdu.sequence] = pdu.fragment
            incoming.octets += len(pdu.fragment)
        if incoming.octets > self.limits.max_message:
            return [self._drop(key, f"larger than {self.limits.max_message} octets")]
        if sum(i.octets for i in self._incoming.values()) > self.limits.max_octets:
            why = f"more than {self.limits.max_octets} octets of incomplete messages held"
            return [self._drop(key, why)]
        return self._progress(key, incoming, pdu, now)

    def _progress(
        self, key: _Key, incoming: _Incoming, pdu: DataPdu, now: float
    ) -> list[ReceiverEvent]:
        if len(incoming.fragments) < incoming.address.total:
            last = pdu.sequence == incoming.address.total  # (the end of the first burst)
            incoming.ack_at = now + (0.0 if last else self.limits.ack_delay)
            return []
        incoming.handed_up = True
        incoming.ack_at = None
        total = incoming.address.total
        data = b"".join(incoming.fragments[n] for n in range(1, total + 1))
        return [
            MessageComplete(
                source=key[0],
                message_id=key[1],
                priority=incoming.address.priority,
                data=data,
                destinations=tuple(d.node for d in incoming.address.destinations),
            )
        ]

    def _hold(self, key: _Key, pdu: DataPdu, now: float) -> None:
        count = sum(len(h) for h in self._held.values())
        if count >= self.limits.max_unidentified:
            return
        self._held.setdefault(key, []).append(_Held(pdu, now + self.limits.unidentified_validity))

    def _discard(self, pdu: DiscardPdu) -> list[ReceiverEvent]:
        key = (pdu.source, pdu.message_id)
        self._held.pop(key, None)
        incoming = self._incoming.get(key)
        if incoming is None or incoming.handed_up:
            return []
        return [self._drop(key, "discarded by its sender")]

    def _drop(self, key: _Key, why: str) -> Dropped:
        incoming = self._incoming.pop(key)
        return Dropped(
            source=key[0],
            message_id=key[1],
            why=why,
            received=len(incoming.fragments),
            total=incoming.address.total,
        )

    # --- the adapter's answers -------------------------------------------------------------

    def committed(self, source: int, message_id: int, now: float) -> None:
        """The message handed up is committed: acknowledge it, remember it."""
        key = (source, message_id)
        incoming = self._incoming.pop(key, None)
        expiry = incoming.address.expiry if incoming is not None else int(now)
        self._done[key] = max(expiry, int(now))
        if len(self._done) > _REMEMBERED:
            del self._done[next(iter(self._done))]  # (the oldest: a bound, not a rule)
        self._acks.append((source, AckInfo(source, message_id)))

    def refused(self, source: int, message_id: int) -> None:
        """The message handed up was not taken: forget it (the sender sends it again)."""
        self._incoming.pop((source, message_id), None)

    # --- timers ----------------------------------------------------------------------------

    @property
    def timer(self) -> float | None:
        """When :meth:`handle_timer` is due."""
        times = [i.ack_at for i in self._incoming.values() if i.ack_at is not None]
        times += [float(i.address.expiry) for i in self._incoming.values() if not i.handed_up]
        times += [h[0].until for h in self._held.values() if h]
        times += [float(e) for e in self._done.values()]
        return min(times, default=None)

    def handle_timer(self, now: float) -> list[ReceiverEvent]:
        """Acknowledge incomplete messages whose delay ran out; drop what expired."""
        events: list[ReceiverEvent] = []
        for key, incoming in list(self._incoming.items()):
            if now >= incoming.address.expiry and not incoming.handed_up:
                events.append(self._drop(key, "expired before it was complete"))
            elif incoming.ack_at is not None and now >= incoming.ack_at:
                incoming.ack_at = None
                self._acks.append((key[0], AckInfo(*key, missing=incoming.missing)))
        for key, expiry in list(self._done.items()):
            if now >= expiry:
                del self._done[key]
        for key, held in list(self._held.items()):
            kept = [h for h in held if h.until > now]
            if kept:
                self._held[key] = kept
            else:
                del self._held[key]
        return events
