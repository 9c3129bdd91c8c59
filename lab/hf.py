"""A model of an HF radio link: one half-duplex channel between two ends, driven by the
lab's wire (:mod:`lab.wire`).  Sans-I/O: no sockets, no clock, no asyncio; the caller
passes the time in, and the same settings, seed, offers and times give the same events.

What it models follows Isode's measurements of messaging over HF (STANAG 4539 and
STANAG 5069 waveforms under STANAG 5066): 75 to 240,000 bit/s, half duplex with a
turnaround of about 4 s at 9,600 bit/s, transmissions of at most 127.5 s, random bit
errors of 1e-6 and 1e-5.  The rules, in the order the channel applies them:

Rule 1 (serialisation).  A packet is on the air for ``(octets + framing) * 8 / rate``
    seconds and reaches the other end when that time ends, never before.
Rule 2 (half duplex).  One end transmits at a time.  A transmission is packets of one
    end sent back to back; it goes on while that end has a packet waiting whose air time
    ends within ``max_transmission`` of the transmission's start.
Rule 3 (turnaround).  When a transmission ends and the other end has a packet waiting,
    the other end starts ``turnaround`` seconds later.  On an idle channel a packet at the
    end that did not transmit last waits until ``turnaround`` after the last packet left
    the air (not at all if that is past).  So the channel turns round only when the
    direction changes, and opposite transmissions are at least ``turnaround`` apart.
Rule 4 (cut transmissions).  A transmission cut at ``max_transmission`` while the other
    end has nothing waiting is followed at once by a new transmission of the same end, with
    neither pause nor turnaround: the limit gives the other end its turn, and it has none
    to take.
Rule 5 (bit errors).  Each packet sent is lost with probability ``1 - (1 - ber) ** bits``,
    ``bits`` being its air octets (framing included) times 8, drawn from a generator seeded
    with ``seed``.  A lost packet takes its air time all the same.
Rule 6 (modem buffer).  Each end holds at most ``queue_packets`` packets and
    ``queue_octets`` octets waiting (the one on the air not counted); a packet that would
    exceed either is dropped on arrival (drop-tail), as is one whose air time alone is
    longer than ``max_transmission``.

Not modelled: ARQ at the modem or in STANAG 5066 (a packet lost stays lost: TCP
retransmits it), STANAG 5066 itself (no segmentation into D_PDUs, no soft-link set-up, no
flow control toward the sender), propagation and interleaver delay, fading, burst errors
and changes of rate.

The ends are 0 and 1; what end ``e`` offers goes to end ``1 - e``.

Public API::

    HfSettings(rate, turnaround=4.0, max_transmission=127.5, ber=0.0, framing=0,
               queue_packets=64, queue_octets=None, seed=0)     ValueError when out of range
    Channel(settings)
        .offer(end, packet, now) -> bool   False: dropped (the end's queue full, or too long)
        .next_event() -> float | None      when something next happens (None: idle, empty)
        .advance(now) -> list[Event]       what happened up to ``now``, in order
        .counters(now) -> Counters
    air_time(octets, settings) -> float    seconds on the air
    largest_packet(settings) -> int        the most octets one packet may have
    loss_probability(octets, settings) -> float
    Event: Delivered, Corrupted, TurnedRound
    Counters, EndCounters
"""

from __future__ import annotations

import collections
import dataclasses
import math
import random
from dataclasses import dataclass

RATE_MIN = 75.0
"""Bit/s: the slowest HF waveform (STANAG 4539)."""
RATE_MAX = 240_000.0
"""Bit/s: the fastest wideband HF waveform (STANAG 5069, 48 kHz)."""
TURNAROUND = 4.0
"""Seconds: Isode's turnaround at 9,600 bit/s, a common modem and radio without crypto."""
MAX_TRANSMISSION = 127.5
"""Seconds: the longest transmission in Isode's measurements (the STANAG 5066 maximum)."""
QUEUE_PACKETS = 64
"""Packets waiting at each end by default (as the lab router's pfifo)."""
_SLACK = 1e-9
"""Seconds of floating-point slack in comparisons of sums of air times."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HfSettings:
    """One HF link, both directions alike."""

    rate: float
    """Bit/s on the air, RATE_MIN to RATE_MAX."""
    turnaround: float = TURNAROUND
    """Seconds between the end of one end's transmission and the start of the other's."""
    max_transmission: float = MAX_TRANSMISSION
    """Seconds a transmission may last at most."""
    ber: float = 0.0
    """Bit error rate: 0 (a clear channel), 1e-6, 1e-5, ...; less than 1."""
    framing: int = 0
    """Octets the modem adds to each packet on the air (headers, CRC)."""
    queue_packets: int | None = QUEUE_PACKETS
    """Most packets waiting at each end (None: no limit)."""
    queue_octets: int | None = None
    """Most octets waiting at each end (None: no limit)."""
    seed: int = 0
    """Of the bit errors' generator."""

    def __post_init__(self) -> None:
        r, q_p, q_o = self.rate, self.queue_packets, self.queue_octets
        checks = (
            (RATE_MIN <= r <= RATE_MAX, f"rate {r:g}: {RATE_MIN:g} to {RATE_MAX:g} bit/s"),
            (0 <= self.turnaround < math.inf, f"turnaround {self.turnaround:g}: s, 0 or more"),
            (0 < self.max_transmission < math.inf,
             f"max_transmission {self.max_transmission:g}: s, more than 0"),
            (0 <= self.ber < 1, f"ber {self.ber:g}: 0 or more, less than 1"),
            (self.framing >= 0, f"framing {self.framing}: octets, 0 or more"),
            (q_p is None or q_p >= 1, f"queue_packets {q_p}: 1 or more"),
            (q_o is None or q_o >= 1, f"queue_octets {q_o}: 1 or more"),
        )  # fmt: skip
        for holds, why in checks:
            if not holds:
                raise ValueError(why)
        if largest_packet(self) < 1:
            raise ValueError(
                f"max_transmission {self.max_transmission:g} s at {self.rate:g} bit/s leaves "
                f"no room for a packet beside {self.framing} octets of framing"
            )


def air_time(octets: int, settings: HfSettings) -> float:
    """Seconds a packet of ``octets`` is on the air (Rule 1)."""
    return (octets + settings.framing) * 8 / settings.rate


def largest_packet(settings: HfSettings) -> int:
    """The most octets a packet may have to fit in one transmission (Rule 6)."""
    return math.floor(settings.max_transmission * settings.rate / 8 + _SLACK) - settings.framing


def loss_probability(octets: int, settings: HfSettings) -> float:
    """The chance a packet of ``octets`` is lost to bit errors (Rule 5)."""
    bits = (octets + settings.framing) * 8
    return -math.expm1(bits * math.log1p(-settings.ber))


# --- events ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Something that happened on the channel."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivered(Event):
    """A packet reached the other end (``1 - source``) intact."""

    source: int
    packet: bytes
    offered: float
    started: float
    """When it went on the air."""
    ended: float
    """When it left the air and was delivered."""
    transmission: int
    """The number of the transmission it went in (counted from 1, both ends together)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Corrupted(Event):
    """A packet was lost to bit errors: it took its air time, the other end dropped it."""

    source: int
    octets: int
    offered: float
    started: float
    ended: float
    transmission: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnedRound(Event):
    """The channel turned round toward ``to``: it transmits from ``at``."""

    to: int
    decided: float
    """When the turnaround began (the other end's last packet ended, or ``to``'s arrived
    on an idle channel)."""
    at: float


# --- counters ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EndCounters:
    """What one end offered, sent and lost."""

    offered_packets: int = 0
    offered_octets: int = 0
    sent_packets: int = 0
    """Whose air time ended, delivered or lost."""
    sent_octets: int = 0
    lost_packets: int = 0
    """To bit errors."""
    lost_octets: int = 0
    dropped_packets: int = 0
    """On arrival: the queue full, or the packet too long for a transmission."""
    dropped_octets: int = 0
    transmissions: int = 0
    busy_seconds: float = 0.0
    """Air time of the packets sent (framing included)."""
    waiting_packets: int = 0
    """Queued now (the one on the air not counted)."""
    waiting_octets: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Counters:
    """The channel's counters at ``at``."""

    at: float
    ends: tuple[EndCounters, EndCounters]
    turnarounds: int
    turnaround_seconds: float
    """Time the channel spent turning round (from each turnaround's ``decided`` to its
    ``at``, as far as ``at`` is past)."""
    on_air: int | None
    """The end transmitting now, or None."""
    last_ended: float | None
    """When the last packet left the air (None: none yet)."""


@dataclass(slots=True)
class _Tally:
    offered_packets: int = 0
    offered_octets: int = 0
    sent_packets: int = 0
    sent_octets: int = 0
    lost_packets: int = 0
    lost_octets: int = 0
    dropped_packets: int = 0
    dropped_octets: int = 0
    transmissions: int = 0
    busy_seconds: float = 0.0


# --- the channel -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Waiting:
    packet: bytes
    offered: float


@dataclass(frozen=True, slots=True)
class _OnAir:
    source: int
    waiting: _Waiting
    started: float
    ended: float
    lost: bool
    transmission: int


@dataclass(frozen=True, slots=True)
class _Turning:
    to: int
    decided: float
    at: float


class Channel:
    """The HF link between ends 0 and 1 (the module's rules)."""

    def __init__(self, settings: HfSettings) -> None:
        self.settings = settings
        self._random = random.Random(settings.seed)
        self._queues: tuple[collections.deque[_Waiting], collections.deque[_Waiting]] = (
            collections.deque(),
            collections.deque(),
        )
        self._queued_octets = [0, 0]
        self._tallies = (_Tally(), _Tally())
        self._now = -math.inf
        """Everything up to here has happened."""
        self._air: _OnAir | None = None
        self._turning: _Turning | None = None
        self._holder: int | None = None
        """The end that transmitted last (None: nobody yet)."""
        self._transmission_start = 0.0
        self._transmissions = 0
        self._last_ended = -math.inf
        self._turnarounds = 0
        self._turnaround_seconds = 0.0
        self._events: list[Event] = []

    def offer(self, end: int, packet: bytes, now: float) -> bool:
        """``packet`` arrives at ``end`` at ``now`` (not before the last time given); False
        when it is dropped (Rule 6).  What happened before ``now`` waits for
        :meth:`advance`."""
        self._run_until(now)
        now = self._now
        tally = self._tallies[end]
        tally.offered_packets += 1
        tally.offered_octets += len(packet)
        if not self._room(end, len(packet)):
            tally.dropped_packets += 1
            tally.dropped_octets += len(packet)
            return False
        self._queues[end].append(_Waiting(packet, now))
        self._queued_octets[end] += len(packet)
        if self._air is None and self._turning is None:
            self._start_idle(end, now)
        return True

    def next_event(self) -> float | None:
        """When the packet on the air ends or the channel has turned round; None when the
        channel is idle with nothing waiting."""
        if self._air is not None:
            return self._air.ended
        if self._turning is not None:
            return self._turning.at
        return None

    def advance(self, now: float) -> list[Event]:
        """Run the channel to ``now``: the events since the last call, oldest first."""
        self._run_until(now)
        events, self._events = self._events, []
        return events

    def counters(self, now: float) -> Counters:
        """The counters once the channel has run to ``now`` (its events wait for
        :meth:`advance`)."""
        self._run_until(now)
        turning = self._turning
        spent = self._turnaround_seconds
        if turning is not None:  # (under way: only its past part)
            spent -= turning.at - max(turning.decided, self._now)
        ends = tuple(
            EndCounters(
                **dataclasses.asdict(tally),
                waiting_packets=len(self._queues[end]),
                waiting_octets=self._queued_octets[end],
            )
            for end, tally in enumerate(self._tallies)
        )
        return Counters(
            at=self._now,
            ends=(ends[0], ends[1]),
            turnarounds=self._turnarounds,
            turnaround_seconds=spent,
            on_air=None if self._air is None else self._air.source,
            last_ended=None if self._last_ended == -math.inf else self._last_ended,
        )

    # --- inside ---------------------------------------------------------------------------

    def _room(self, end: int, octets: int) -> bool:
        s = self.settings
        if octets > largest_packet(s):
            return False
        if s.queue_packets is not None and len(self._queues[end]) >= s.queue_packets:
            return False
        return s.queue_octets is None or self._queued_octets[end] + octets <= s.queue_octets

    def _run_until(self, now: float) -> None:
        while True:
            if self._air is not None and self._air.ended <= now:
                self._land(self._air)
            elif self._turning is not None and self._turning.at <= now:
                turning, self._turning = self._turning, None
                self._now = turning.at
                self._transmit(turning.to, turning.at)
            else:
                break
        self._now = max(self._now, now)

    def _start_idle(self, end: int, now: float) -> None:
        """Rule 3 on an idle channel: a packet has just arrived at ``end``."""
        if self._holder is None or self._holder == end:
            self._transmit(end, now)
        else:
            self._turn(end, now, max(now, self._last_ended + self.settings.turnaround))

    def _land(self, air: _OnAir) -> None:
        """The packet on the air ends: delivered or lost; then what goes next (Rules 2-4)."""
        self._air = None
        self._now = self._last_ended = t = air.ended
        tally = self._tallies[air.source]
        octets = len(air.waiting.packet)
        tally.sent_packets += 1
        tally.sent_octets += octets
        tally.busy_seconds += air.ended - air.started
        waiting, source = air.waiting, air.source
        if air.lost:
            tally.lost_packets += 1
            tally.lost_octets += octets
            self._events.append(
                Corrupted(source=source, octets=octets, offered=waiting.offered,
                          started=air.started, ended=t, transmission=air.transmission)
            )  # fmt: skip
        else:
            self._events.append(
                Delivered(source=source, packet=waiting.packet, offered=waiting.offered,
                          started=air.started, ended=t, transmission=air.transmission)
            )  # fmt: skip
        self._next(air.source, t)

    def _next(self, holder: int, t: float) -> None:
        mine, theirs = self._queues[holder], self._queues[1 - holder]
        if mine and self._fits(mine[0], t):
            self._send(holder, t, self._transmissions)
        elif theirs:
            self._turn(1 - holder, t, t + self.settings.turnaround)
        elif mine:
            self._transmit(holder, t)  # (Rule 4: cut, and nobody waits)

    def _fits(self, waiting: _Waiting, t: float) -> bool:
        ends = t + air_time(len(waiting.packet), self.settings)
        return ends - self._transmission_start <= self.settings.max_transmission + _SLACK

    def _turn(self, to: int, decided: float, at: float) -> None:
        self._turnarounds += 1
        self._turnaround_seconds += at - decided
        self._events.append(TurnedRound(to=to, decided=decided, at=at))
        if at <= self._now:
            self._transmit(to, at)
        else:
            self._turning = _Turning(to, decided, at)

    def _transmit(self, end: int, t: float) -> None:
        """A new transmission of ``end`` begins at ``t`` with its first packet waiting."""
        self._holder = end
        self._transmission_start = t
        self._transmissions += 1
        self._tallies[end].transmissions += 1
        self._send(end, t, self._transmissions)

    def _send(self, end: int, t: float, transmission: int) -> None:
        waiting = self._queues[end].popleft()
        octets = len(waiting.packet)
        self._queued_octets[end] -= octets
        lost = self.settings.ber > 0 and (
            self._random.random() < loss_probability(octets, self.settings)
        )
        self._air = _OnAir(end, waiting, t, t + air_time(octets, self.settings), lost, transmission)
