"""One message on its way to its destinations: P_MUL's transmitting node (ACP 142 clause 3).

A :class:`Transmission` cuts the message into Data_PDUs of at most ``max_pdu`` octets
and sends, in one *burst*, the Address_PDU naming the destinations still owed the message,
then the Data_PDUs they still need.  Its rules:

1. A destination that is not in EMCON is served once it acknowledged the whole message
   (an Ack_Info_Entry with no missing numbers).  An entry that lists missing numbers
   says what the next burst must carry for it.
2. The next burst goes when the retransmission timer runs out, the timer having started
   when the adapter says the burst left the link (:meth:`Transmission.burst_sent`):
   first ``retransmission`` seconds, then that times ``backoff`` each time, up to
   ``max_retransmission``.  It goes at once instead when every destination still owed
   the message has answered since the last burst left (all of them list what they miss).
   A destination that never answered gets every Data_PDU; the others those missing, and,
   when the timer sent the burst (the destination was silent since its list), every
   Data_PDU numbered after the highest it listed too: a list may be cut short, and a
   destination that lost the last Data_PDUs may not know it.
3. A destination in EMCON sends no acknowledgement: it gets the whole message
   ``emcon_repetitions`` times, ``emcon_interval`` seconds after each burst left, and is
   then served.  Should it acknowledge anyway (its EMCON lifted), that serves it sooner.
4. At the message's Expiry_Time every destination still owed it expires and a
   Discard_Message_PDU goes to them; nothing more is sent.

Time is an argument (seconds since 1970, as Expiry_Time counts them): the machine never
reads a clock.  Outcomes are values (:class:`Served`, :class:`Expired`) taken with
:meth:`Transmission.outcomes`.

Public API::

    Destination(node, emcon=False)          SenderTimers(...)
    Transmission(source, message_id, data, destinations, *, priority, expiry,
                 max_pdu, timers, sequences)
        .start() -> Burst   .burst_sent(now)   .receive_ack(node, info, now)
        .timer -> float | None   .handle_timer(now) -> Burst | None
        .outcomes() -> list[Served | Expired]   .done -> bool
    Burst(pdus, discard)    Served(node, acknowledged)    Expired(node)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from p1.acp142.pdu import (
    DATA_OVERHEAD,
    AckInfo,
    AddressPdu,
    DataPdu,
    DestinationEntry,
    DiscardPdu,
    Pdu,
)

__all__ = [
    "Burst",
    "Destination",
    "Expired",
    "SenderTimers",
    "Served",
    "Transmission",
    "fragments_of",
]


@dataclass(frozen=True, slots=True)
class Destination:
    """A node the message is for; ``emcon``: it is silent, so it never acknowledges."""

    node: int
    emcon: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SenderTimers:
    """The transmitting node's timers and counts (seconds)."""

    retransmission: float = 30.0
    """The first wait for acknowledgements after a burst left."""
    backoff: float = 2.0
    """Each further wait is the last one times this."""
    max_retransmission: float = 600.0
    emcon_repetitions: int = 3
    """How many times an EMCON destination gets the whole message."""
    emcon_interval: float = 60.0


@dataclass(frozen=True, slots=True)
class Burst:
    """What to send now, in this order (``discard``: the transmission ended expired)."""

    pdus: tuple[Pdu, ...]
    discard: bool = False


@dataclass(frozen=True, slots=True)
class Served:
    """``node`` has the message (``acknowledged``; else its EMCON repetitions were sent)."""

    node: int
    acknowledged: bool


@dataclass(frozen=True, slots=True)
class Expired:
    """The message expired before ``node`` had it."""

    node: int


@dataclass(slots=True)
class _Owed:
    """What one destination still needs."""

    destination: Destination
    sequence: int
    missing: frozenset[int] | None = None
    """What it said it misses (None: it never answered)."""
    answered: bool = False
    """It answered since the last burst left."""
    repetitions: int = 0


def fragments_of(data: bytes, max_pdu: int) -> list[bytes]:
    """``data`` cut for Data_PDUs of at most ``max_pdu`` octets (at least one fragment)."""
    size = max_pdu - DATA_OVERHEAD
    if size <= 0:
        raise ValueError(f"a PDU of {max_pdu} octets leaves no room for data")
    count = max(1, math.ceil(len(data) / size))
    if count > 0xFFFF:
        raise ValueError(f"{len(data)} octets need {count} Data_PDUs, more than 65535")
    return [data[i * size : (i + 1) * size] for i in range(count)]


@dataclass(slots=True, kw_only=True)
class Transmission:
    """One message from ``source`` to ``destinations`` (see the module docstring)."""

    source: int
    message_id: int
    data: bytes
    destinations: Sequence[Destination]
    priority: int
    expiry: int
    max_pdu: int
    timers: SenderTimers = field(default_factory=SenderTimers)
    sequences: Mapping[int, int] = field(default_factory=dict)
    """Message_Sequence_Number of this message for each destination node."""
    _fragments: list[bytes] = field(init=False)
    _owed: dict[int, _Owed] = field(init=False)
    _outcomes: list[Served | Expired] = field(init=False, default_factory=list)
    _wait: float = field(init=False)
    _timer: float | None = field(init=False, default=None)
    _in_flight: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self._fragments = fragments_of(self.data, self.max_pdu)
        self._owed = {d.node: _Owed(d, self.sequences.get(d.node, 0)) for d in self.destinations}
        self._wait = self.timers.retransmission

    # --- what the adapter asks -----------------------------------------------------------

    @property
    def done(self) -> bool:
        """No destination is owed the message any more."""
        return not self._owed

    @property
    def timer(self) -> float | None:
        """When :meth:`handle_timer` is due: the next burst, or the expiry."""
        if self.done:
            return None
        if self._timer is None:
            return float(self.expiry)
        return min(self._timer, float(self.expiry))

    def outcomes(self) -> list[Served | Expired]:
        """The destinations served or expired since the last call."""
        taken, self._outcomes = self._outcomes, []
        return taken

    # --- what happens --------------------------------------------------------------------

    def start(self) -> Burst:
        """The first burst: the Address_PDU and every Data_PDU."""
        return self._burst()

    def burst_sent(self, now: float) -> None:
        """The last PDU of the latest burst left the link: the timer starts."""
        self._in_flight = False
        for owed in self._owed.values():
            owed.answered = False
            if owed.destination.emcon:
                owed.repetitions += 1
        self._serve_repeated()
        if self.done:
            return
        silent = all(o.destination.emcon for o in self._owed.values())
        wait = self.timers.emcon_interval if silent else self._wait
        self._timer = now + wait
        if not silent:
            self._wait = min(self._wait * self.timers.backoff, self.timers.max_retransmission)

    def receive_ack(self, node: int, info: AckInfo, now: float) -> Burst | None:
        """``node`` acknowledged (part of) the message; a burst when every destination
        still owed it has answered since the last one left."""
        owed = self._owed.get(node)
        if owed is None:
            return None
        if not info.missing:
            del self._owed[node]
            self._outcomes.append(Served(node, acknowledged=True))
            return None
        owed.missing = frozenset(n for n in info.missing if 1 <= n <= len(self._fragments))
        owed.answered = not self._in_flight
        if self._in_flight or not all(o.answered for o in self._listening()):
            return None
        return self._burst()

    def handle_timer(self, now: float) -> Burst | None:
        """The timer ran out: expire, or send the next burst."""
        if self.done:
            return None
        if now >= self.expiry:
            return self._expire()
        if self._timer is None or now < self._timer or self._in_flight:
            return None
        return self._burst()

    # --- inside ----------------------------------------------------------------------------

    def _listening(self) -> list[_Owed]:
        return [o for o in self._owed.values() if not o.destination.emcon]

    def _serve_repeated(self) -> None:
        for node, owed in list(self._owed.items()):
            if owed.destination.emcon and owed.repetitions >= self.timers.emcon_repetitions:
                del self._owed[node]
                self._outcomes.append(Served(node, acknowledged=False))

    def _burst(self) -> Burst:
        self._in_flight = True
        self._timer = None
        owed = list(self._owed.values())
        wanted: set[int] = set()
        total = len(self._fragments)
        for one in owed:
            if one.missing is None or one.destination.emcon:
                wanted.update(range(1, total + 1))
            elif one.answered or not one.missing:
                wanted |= one.missing
            else:  # (silent since its list: it may have cut the list short, or lost the end)
                wanted |= one.missing | set(range(max(one.missing) + 1, total + 1))
        address = AddressPdu(
            priority=self.priority,
            source=self.source,
            message_id=self.message_id,
            expiry=self.expiry,
            total=len(self._fragments),
            destinations=tuple(DestinationEntry(o.destination.node, o.sequence) for o in owed),
        )
        data = tuple(self._data_pdu(n) for n in sorted(wanted))
        return Burst((address, *data))

    def _data_pdu(self, number: int) -> DataPdu:
        return DataPdu(
            priority=self.priority,
            source=self.source,
            message_id=self.message_id,
            sequence=number,
            fragment=self._fragments[number - 1],
        )

    def _expire(self) -> Burst:
        for node in self._owed:
            self._outcomes.append(Expired(node))
        self._owed.clear()
        self._timer = None
        discard = DiscardPdu(priority=self.priority, source=self.source, message_id=self.message_id)
        return Burst((discard,), discard=True)
