"""lab.hf, the HF channel model, without a network: the air time follows the rate, nothing
arrives before its air time ends, each direction keeps its order, the channel turns round
only when the direction changes and whenever the other end waits at the end of a
transmission, no transmission outlasts the maximum, the queues drop their tail at their
bounds, the losses follow 1 - (1 - BER)^bits, and the same seed gives the same run
whenever the caller looks."""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lab.hf import (
    Channel,
    Corrupted,
    Delivered,
    Event,
    HfSettings,
    TurnedRound,
    air_time,
    largest_packet,
    loss_probability,
)
from tests.profiles import examples

EPS = 1e-6


@dataclass(frozen=True, slots=True)
class Offer:
    at: float
    end: int
    packet: bytes

    @property
    def number(self) -> int:
        return int(struct.unpack(">I", self.packet[:4])[0])


Sent = Delivered | Corrupted


def _packet(number: int, size: int) -> bytes:
    return struct.pack(">I", number) + b"\0" * (size - 4)


def _number(event: Sent) -> int:
    assert isinstance(event, Delivered), "numbered only when delivered"
    return int(struct.unpack(">I", event.packet[:4])[0])


def run(
    channel: Channel, offers: list[Offer], looks: Sequence[float] = ()
) -> tuple[list[Event], list[bool]]:
    """Every offer at its time, ``advance`` also at each of ``looks``, then the channel
    run dry: the events and whether each offer was taken."""
    events: list[Event] = []
    taken: list[bool] = []
    pending = sorted(looks)
    for offer in offers:
        while pending and pending[0] <= offer.at:
            events += channel.advance(pending.pop(0))
        taken.append(channel.offer(offer.end, offer.packet, offer.at))
    for look in pending:
        events += channel.advance(look)
    events += channel.advance(offers[-1].at if offers else 0.0)  # (what the offers did)
    while (due := channel.next_event()) is not None:
        events += channel.advance(due)
    return events, taken


def sent_of(events: list[Event]) -> list[Sent]:
    return [e for e in events if isinstance(e, Delivered | Corrupted)]


def _octets(event: Sent) -> int:
    return len(event.packet) if isinstance(event, Delivered) else event.octets


# --- strategies -------------------------------------------------------------------------------


@st.composite
def hf_settings(draw: st.DrawFn) -> HfSettings:
    rate = draw(st.sampled_from([75.0, 300.0, 1200.0, 9600.0, 57600.0, 240000.0]))
    longest = draw(st.sampled_from([2.0, 10.0, 127.5]))
    framing = draw(st.integers(0, 40))
    assume(longest * rate / 8 - framing >= 4)  # (room for a numbered packet)
    return HfSettings(
        rate=rate,
        turnaround=draw(st.sampled_from([0.0, 0.5, 4.0])),
        max_transmission=longest,
        ber=draw(st.sampled_from([0.0, 1e-5, 1e-3])),
        framing=framing,
        queue_packets=draw(st.one_of(st.none(), st.integers(1, 8))),
        queue_octets=draw(st.one_of(st.none(), st.integers(1000, 20000))),
        seed=draw(st.integers(0, 2**32)),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[HfSettings, list[Offer]]:
    s = draw(hf_settings())
    largest = min(1500, largest_packet(s) + 20)  # (some too long for a transmission)
    # Gaps on the scale of a packet's air time, so queues build and drain.
    unit = air_time(500, s)
    steps = draw(
        st.lists(
            st.tuples(st.floats(0, 3), st.integers(0, 1), st.integers(4, max(4, largest))),
            max_size=40,
        )
    )
    offers, t = [], 0.0
    for number, (gap, end, size) in enumerate(steps):
        t += gap * unit if gap > 0.3 else 0.0  # (a third of them at once)
        offers.append(Offer(t, end, _packet(number, size)))
    return s, offers


def _numbered(offers: list[Offer]) -> dict[int, Offer]:
    return {offer.number: offer for offer in offers}


def _sent_by_number(events: list[Event], offers: list[Offer]) -> list[tuple[Offer, Sent]]:
    """(offer, its Delivered or Corrupted) in the order they went on the air; a corrupted
    packet is matched by its source, offer time and size, the earliest not yet matched
    (each direction keeps its order, a property tested on its own)."""
    pairs = []
    by_number = _numbered(offers)
    unmatched = list(offers)
    for event in sent_of(events):
        if isinstance(event, Delivered):
            offer = by_number[_number(event)]
        else:
            offer = next(
                o for o in unmatched
                if o.end == event.source and o.at == event.offered
                and len(o.packet) == event.octets
            )  # fmt: skip
        unmatched.remove(offer)
        pairs.append((offer, event))
    return pairs


# --- properties -------------------------------------------------------------------------------


@given(scenarios())
def test_each_packet_is_on_the_air_for_its_bits_over_the_rate_and_not_before_offered(
    scenario: tuple[HfSettings, list[Offer]],
) -> None:
    s, offers = scenario
    events, _ = run(Channel(s), offers)
    for offer, event in _sent_by_number(events, offers):
        assert event.ended - event.started == pytest.approx(
            (len(offer.packet) + s.framing) * 8 / s.rate, rel=1e-9
        )
        assert event.started >= offer.at - EPS
        assert event.ended >= offer.at + air_time(len(offer.packet), s) - EPS


@given(scenarios())
def test_every_packet_taken_is_sent_once_in_its_direction_s_order(
    scenario: tuple[HfSettings, list[Offer]],
) -> None:
    s, offers = scenario
    events, taken = run(Channel(s), offers)
    pairs = _sent_by_number(events, offers)
    for end in (0, 1):
        accepted = [o.number for o, ok in zip(offers, taken, strict=True) if ok and o.end == end]
        assert [o.number for o, e in pairs if e.source == end] == accepted
    delivered = [e for e in events if isinstance(e, Delivered)]
    for end in (0, 1):  # (and what arrives, arrives in order)
        numbers = [_number(e) for e in delivered if e.source == end]
        assert numbers == sorted(numbers)


@given(scenarios())
def test_one_end_at_a_time_and_the_turnaround_only_when_the_direction_changes(
    scenario: tuple[HfSettings, list[Offer]],
) -> None:
    """Each packet starts as soon as the rules let it: right after the one before in the
    same direction (or when it came), a turnaround after it in the other."""
    s, offers = scenario
    channel = Channel(s)
    events, _ = run(channel, offers)
    pairs = _sent_by_number(events, offers)
    changes = 0
    for (_, p), (q_offer, q) in itertools.pairwise(pairs):
        assert q.started >= p.ended - EPS  # (half duplex)
        gap = 0.0 if q.source == p.source else s.turnaround
        changes += q.source != p.source
        assert q.started == pytest.approx(max(p.ended + gap, q_offer.at), abs=EPS)
    if pairs:
        assert pairs[0][1].started == pytest.approx(pairs[0][0].at, abs=EPS)
    turned = [e for e in events if isinstance(e, TurnedRound)]
    assert len(turned) == changes == channel.counters(math.inf).turnarounds


@given(scenarios())
def test_no_transmission_outlasts_the_maximum_and_none_is_cut_for_nothing(
    scenario: tuple[HfSettings, list[Offer]],
) -> None:
    """A transmission is one end's packets back to back within the maximum; it ends only
    when its end has nothing waiting or the next would not fit, and then the other end
    goes next if it was waiting."""
    s, offers = scenario
    events, _ = run(Channel(s), offers)
    pairs = _sent_by_number(events, offers)
    start: dict[int, float] = {}
    for _, e in pairs:
        start.setdefault(e.transmission, e.started)
        assert e.ended - start[e.transmission] <= s.max_transmission + EPS
    for i, ((_, p), (_, q)) in enumerate(itertools.pairwise(pairs)):
        if q.transmission == p.transmission:
            assert q.source == p.source and q.started == pytest.approx(p.ended, abs=EPS)
            continue
        later = pairs[i + 1 :]
        mine = next((o for o, e in later if e.source == p.source), None)
        if mine is not None and mine.at < p.ended - EPS:  # (it was waiting: it did not fit)
            fits = p.ended + air_time(len(mine.packet), s) - start[p.transmission]
            assert fits > s.max_transmission - EPS
        theirs = next((o for o, e in later if e.source != p.source), None)
        if theirs is not None and theirs.at < p.ended - EPS:  # (it was waiting: its turn)
            assert q.source != p.source


@given(scenarios())
def test_the_queues_hold_their_bounds_and_drop_only_at_them(
    scenario: tuple[HfSettings, list[Offer]],
) -> None:
    s, offers = scenario
    events, taken = run(Channel(s), offers)
    started = {o.number: e.started for o, e in _sent_by_number(events, offers)}
    for i, (offer, ok) in enumerate(zip(offers, taken, strict=True)):
        waiting = [
            o
            for o, accepted in zip(offers[:i], taken[:i], strict=True)
            if accepted and o.end == offer.end and started[o.number] > offer.at
        ]
        octets = sum(len(o.packet) for o in waiting)
        room = (
            len(offer.packet) <= largest_packet(s)
            and (s.queue_packets is None or len(waiting) < s.queue_packets)
            and (s.queue_octets is None or octets + len(offer.packet) <= s.queue_octets)
        )
        assert ok == room, (i, len(waiting), octets)


@given(scenarios())
def test_the_counters_add_up(scenario: tuple[HfSettings, list[Offer]]) -> None:
    s, offers = scenario
    channel = Channel(s)
    events, taken = run(channel, offers)
    counters = channel.counters(math.inf)
    sent = sent_of(events)
    for end, c in enumerate(counters.ends):
        mine = [o for o in offers if o.end == end]
        dropped = [o for o, ok in zip(offers, taken, strict=True) if o.end == end and not ok]
        out = [e for e in sent if e.source == end]
        lost = [e for e in out if isinstance(e, Corrupted)]
        assert (c.offered_packets, c.offered_octets) == (
            len(mine), sum(len(o.packet) for o in mine)
        )  # fmt: skip
        assert (c.dropped_packets, c.dropped_octets) == (
            len(dropped), sum(len(o.packet) for o in dropped)
        )  # fmt: skip
        assert (c.sent_packets, c.sent_octets) == (len(out), sum(_octets(e) for e in out))
        assert (c.lost_packets, c.lost_octets) == (len(lost), sum(_octets(e) for e in lost))
        assert c.sent_packets + c.dropped_packets == c.offered_packets
        assert c.busy_seconds == pytest.approx(sum(e.ended - e.started for e in out), abs=EPS)
        assert c.transmissions == len({e.transmission for e in out})
        assert c.waiting_packets == c.waiting_octets == 0
    turned = [e for e in events if isinstance(e, TurnedRound)]
    assert counters.turnaround_seconds == pytest.approx(
        sum(t.at - t.decided for t in turned), abs=EPS
    )
    assert counters.on_air is None
    assert counters.last_ended == max((e.ended for e in sent), default=None)


@given(scenarios(), st.lists(st.floats(0, 500), max_size=20))
def test_when_the_caller_looks_changes_nothing(
    scenario: tuple[HfSettings, list[Offer]], looks: list[float]
) -> None:
    """The same offers give the same events, however often and whenever ``advance`` is
    called in between (a late wire writes late, the channel's times stay its own)."""
    s, offers = scenario
    plain, taken = run(Channel(s), offers)
    looked, taken_looked = run(Channel(s), offers, looks)
    assert looked == plain and taken_looked == taken


@given(scenarios())
def test_the_same_seed_gives_the_same_run(scenario: tuple[HfSettings, list[Offer]]) -> None:
    s, offers = scenario
    assert run(Channel(s), offers) == run(Channel(s), offers)


# --- bit errors -------------------------------------------------------------------------------


def _loss_run(ber: float, seed: int, count: int, size: int = 1500) -> int:
    """Packets lost of ``count`` of ``size`` octets sent one way."""
    channel = Channel(HfSettings(rate=240_000, ber=ber, seed=seed, queue_packets=None))
    for number in range(count):
        channel.offer(0, _packet(number, size), 0.0)
    events, _ = run(channel, [])
    return sum(isinstance(e, Corrupted) for e in events)


@pytest.mark.parametrize("ber", [1e-6, 1e-5])
def test_losses_are_close_to_the_formula(ber: float) -> None:
    """Within five standard deviations of the binomial (a fixed seed: it does not vary)."""
    count = 20_000
    p = loss_probability(1500, HfSettings(rate=9600, ber=ber))
    assert p == pytest.approx(1 - (1 - ber) ** 12_000, rel=1e-9)
    lost = _loss_run(ber, seed=1, count=count)
    assert abs(lost - count * p) < 5 * math.sqrt(count * p * (1 - p)), (lost, count * p)


@settings(max_examples=examples(0.2))
@given(st.integers(0, 2**32), st.sampled_from([1e-5, 1e-4]), st.integers(40, 1500))
def test_losses_follow_the_formula_for_any_seed_and_size(seed: int, ber: float, size: int) -> None:
    count = 4000
    p = loss_probability(size, HfSettings(rate=9600, ber=ber))
    lost = _loss_run(ber, seed, count, size)
    assert abs(lost - count * p) < 6 * math.sqrt(count * p * (1 - p)) + 1, (lost, count * p)


def test_a_clear_channel_loses_nothing_and_framing_counts_in_the_bits() -> None:
    assert _loss_run(0.0, seed=1, count=2000) == 0
    s = HfSettings(rate=9600, ber=1e-5, framing=250)
    assert loss_probability(1000, s) == pytest.approx(1 - (1 - 1e-5) ** 10_000, rel=1e-9)


def test_another_seed_loses_other_packets() -> None:
    def lost(seed: int) -> list[float]:
        channel = Channel(HfSettings(rate=240_000, ber=1e-4, seed=seed, queue_packets=None))
        for number in range(500):
            channel.offer(0, _packet(number, 1500), 0.0)
        events, _ = run(channel, [])
        return [e.started for e in events if isinstance(e, Corrupted)]

    assert lost(7) == lost(7)
    assert lost(7) != lost(8)


# --- cases ------------------------------------------------------------------------------------


def _timeline(
    s: HfSettings, offers: list[tuple[float, int, int]]
) -> list[tuple[int, float, float]]:
    """(source, started, ended) of each packet sent, for offers of (time, end, octets);
    the times to the microsecond."""
    numbered = [Offer(at, end, _packet(n, size)) for n, (at, end, size) in enumerate(offers)]
    events, _ = run(Channel(s), numbered)
    return [(e.source, round(e.started, 6), round(e.ended, 6)) for e in sent_of(events)]


def test_a_packet_on_an_idle_channel_arrives_after_its_air_time() -> None:
    (one,) = _timeline(HfSettings(rate=9600), [(5.0, 0, 1200)])
    assert one == (0, 5.0, 6.0)  # 1200 octets at 9600 bit/s: 1 s
    (framed,) = _timeline(HfSettings(rate=9600, framing=60), [(0.0, 1, 1140)])
    assert framed == (1, 0.0, 1.0)


def test_the_other_end_waits_for_the_transmission_then_the_turnaround() -> None:
    s = HfSettings(rate=9600, turnaround=4.0)
    line = _timeline(s, [(0.0, 0, 1200), (0.0, 0, 1200), (0.5, 1, 60), (1.5, 0, 1200)])
    # End 0 keeps the channel while it has packets: the one at 1.5 s joins its transmission.
    assert line == [(0, 0.0, 1.0), (0, 1.0, 2.0), (0, 2.0, 3.0), (1, 7.0, 7.05)]


def test_the_same_end_after_a_pause_pays_no_turnaround_the_other_pays_what_is_left() -> None:
    s = HfSettings(rate=9600, turnaround=4.0)
    line = _timeline(s, [(0.0, 0, 1200), (10.0, 0, 1200), (12.0, 1, 1200), (30.0, 0, 1200)])
    assert line == [(0, 0.0, 1.0), (0, 10.0, 11.0), (1, 15.0, 16.0), (0, 30.0, 31.0)]


def test_a_long_transmission_is_cut_for_the_other_end_and_continues_without_it() -> None:
    s = HfSettings(rate=800, turnaround=1.0, max_transmission=1.0)  # 100 octets a second
    waiting = _timeline(s, [(0.0, 0, 40)] * 3 + [(0.1, 1, 40)])
    assert waiting == [(0, 0.0, 0.4), (0, 0.4, 0.8), (1, 1.8, 2.2), (0, 3.2, 3.6)]
    alone = _timeline(s, [(0.0, 0, 40)] * 3)
    assert alone == [(0, 0.0, 0.4), (0, 0.4, 0.8), (0, 0.8, 1.2)]
    channel = Channel(s)
    run(channel, [Offer(0.0, 0, _packet(n, 40)) for n in range(3)])
    assert channel.counters(10).ends[0].transmissions == 2
    assert channel.counters(10).turnarounds == 0


def test_a_packet_longer_than_a_transmission_is_dropped() -> None:
    s = HfSettings(rate=75)  # 127.5 s: 1195 octets
    assert largest_packet(s) == 1195
    channel = Channel(s)
    assert channel.offer(0, bytes(1195), 0.0)
    assert not channel.offer(0, bytes(1196), 0.0)
    c = channel.counters(0.0).ends[0]
    assert (c.dropped_packets, c.dropped_octets, c.waiting_packets) == (1, 1196, 0)


def test_a_full_queue_drops_the_newcomer() -> None:
    channel = Channel(HfSettings(rate=9600, queue_packets=2))
    taken = [channel.offer(0, bytes(100), 0.0) for _ in range(4)]
    assert taken == [True, True, True, False]  # one on the air, two waiting
    by_octets = Channel(HfSettings(rate=9600, queue_packets=None, queue_octets=250))
    taken = [by_octets.offer(1, bytes(100), 0.0) for _ in range(4)]
    assert taken == [True, True, True, False]  # one on the air, 200 octets waiting
    assert by_octets.counters(0.0).ends[1].waiting_octets == 200


def test_the_counters_midway_count_only_what_is_past() -> None:
    channel = Channel(HfSettings(rate=9600, turnaround=4.0))
    channel.offer(0, bytes(1200), 0.0)
    channel.offer(1, bytes(1200), 0.5)
    c = channel.counters(3.0)  # (the turnaround runs from 1 s to 5 s)
    assert c.turnarounds == 1
    assert c.turnaround_seconds == pytest.approx(2.0)
    assert c.on_air is None and c.ends[1].waiting_packets == 1 and c.last_ended == 1.0
    assert c.ends[0].busy_seconds == pytest.approx(1.0)
    c = channel.counters(5.5)
    assert c.turnaround_seconds == pytest.approx(4.0) and c.on_air == 1


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"rate": 50}, "rate"),
        ({"rate": 300_000}, "rate"),
        ({"turnaround": -1}, "turnaround"),
        ({"max_transmission": 0}, "max_transmission"),
        ({"ber": 1.0}, "ber"),
        ({"ber": math.nan}, "ber"),
        ({"queue_packets": 0}, "queue_packets"),
        ({"queue_octets": 0}, "queue_octets"),
        ({"framing": -1}, "framing"),
        ({"rate": 75, "max_transmission": 1.0, "framing": 10}, "no room"),
    ],
)
def test_settings_out_of_range_are_refused_saying_which(
    changes: dict[str, float], why: str
) -> None:
    with pytest.raises(ValueError, match=why):
        HfSettings(**{"rate": 9600, **changes})  # type: ignore[arg-type]
