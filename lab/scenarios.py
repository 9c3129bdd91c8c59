"""The lab's scenarios and their Markdown tables, beside the reference figures.

(a) unloaded: one routine message at a time, of each ``unloaded_sizes``, then one flash
    message of ``flash_size`` alone (the base its loaded rate is compared with), under
    the ``fifo`` profile (one queue: nothing to prioritise).
(d) latency (``latency_samples``): 1 KB flash messages one after another, alone, then
    while a routine message of ``latency_bulk`` is in flight, under each profile; p50 and
    p99 (nearest rank) of their times from submission to B's store.
(e) connection set-up (``setup_samples``): on an idle link (``fifo``), 1 KB flash
    messages with the flash slot permanent (its connection open), then as many with the
    slot on-demand and an ``idle_timeout`` of ``SETUP_IDLE_TIMEOUT`` (each message waits
    until the previous connection closed, so it opens its own); the difference in round
    trips of the link (measured, SYN to RST).  Meant with a delay wire (``--delay``).
(c) under load (``load_kbit``): the ``reserved`` profile, a CS1 UDP stream faster than the
    link from A to B, and each of ``load_runs`` sent alone: its goodput against its own
    without the load, or that it was not through within its wait.
(b) contention, under each profile: a routine (CS0) message of ``routine_size``, and
    ``flash_delay`` seconds after its submission a flash (CS3) one of ``flash_size``; each
    one's goodput, as a percentage of its size's unloaded goodput; and, every
    ``SAMPLE_INTERVAL`` seconds meanwhile, the octets the router had let through toward
    B's routine and flash listeners, from a capture (:class:`Sample`, for the throughput
    plots of :mod:`lab.plots`).

Reference figures (cited, not measured here): the 2007 field test's round 2 (a Cisco 2811
shaping to 512 kbit/s; M-Switch R14.0) and raw TCP on this lab's topology without an MTA
(cubic, IPv4, 512 kbit/s; the same shape at 2 and 4 Mbit/s).

Public API::

    Settings, FULL, QUICK
    Results                           what a run measured
    async run_scenarios(topology, a, b, settings, progress) -> Results   (a), (b), (d), (e), (c)
    render(results) -> str            the Markdown report
    summary(results) -> dict          the figures, for --json
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from lab.capture import Capture, Parts, cumulative, split
from lab.load import UdpLoad
from lab.sites import CONGESTION, Site, Transfer, Watch, flash_on_demand, send, submit
from lab.topology import LabError, Topology


@dataclass(frozen=True, slots=True)
class Settings:
    rate_kbit: int
    """The router's shaped rate, both directions (kbit/s, 1000 bit/s)."""
    unloaded_sizes: tuple[int, ...]
    routine_size: int
    flash_size: int
    flash_delay: float
    """Seconds from the routine submission to the flash one."""
    profiles: tuple[str, ...]
    load_kbit: int = 0
    """(c): the CS1 UDP load's rate; 0: no scenario (c)."""
    load_runs: tuple[tuple[str, int, float], ...] = ()
    """(c): (precedence, body octets, seconds waited for it under the load) of each message
    sent alone with the load running."""
    contention: bool = True
    """(b) under each of ``profiles``; False: (b) is left out."""
    latency_samples: int = 0
    """(d): most 1 KB flash messages timed, one after another, while a routine message of
    ``latency_bulk`` octets is in flight (under each of ``profiles``); 0: no scenario (d)."""
    latency_bulk: int = 0
    latency_spacing: float = 0.5
    """(d), (e): seconds between one sample's delivery and the next one's submission."""
    setup_samples: int = 0
    """(e): 1 KB flash messages timed with the flash slot permanent, and as many with it
    on-demand (a new connection each); 0: no scenario (e)."""


FULL = Settings(
    rate_kbit=512,
    unloaded_sizes=(1_000_000, 10_000_000),
    routine_size=10_000_000,
    flash_size=1_000_000,
    flash_delay=5.0,
    profiles=("fifo", "strict", "weighted"),
    load_kbit=1000,
    latency_samples=20,
    latency_bulk=3_000_000,
    latency_spacing=1.0,
    load_runs=(
        ("immediate", 1_000_000, 180.0),
        ("routine", 1_000_000, 240.0),
        ("priority", 10_000, 120.0),
    ),
)
"""The field test's round 2 at its link rate (about 20 minutes)."""
QUICK = Settings(
    rate_kbit=4000,
    unloaded_sizes=(300_000, 3_000_000),
    routine_size=3_000_000,
    flash_size=300_000,
    flash_delay=1.0,
    profiles=("fifo", "strict", "weighted"),
    latency_samples=15,
    latency_bulk=3_000_000,
    latency_spacing=0.1,
    load_runs=(
        ("immediate", 300_000, 30.0),
        ("routine", 300_000, 15.0),
        ("priority", 10_000, 15.0),
    ),
)
"""The same shape scaled to about a minute: 4 Mbit/s, 3 MB routine, 0.3 MB flash; (c)
only when asked for (``--load``)."""

# Raw TCP on this topology (no MTA): 512 kbit/s, cubic, 10 MB CS0 + 1 MB CS3 after 5 s.
RAW_UNLOADED_KBIT = 490.6
RAW_FLASH = {"fifo": (115.0, 23.5), "strict": (482.0, 98.3), "weighted": (391.0, 79.7)}
"""Profile -> (flash kbit/s, flash % of its unloaded rate)."""
# The 2007 field test, round 2 (512 kbit/s shaper): (seconds, kbit/s) by size.
SEED_UNLOADED = {
    1_000_000: ((22.25, 359.0), (17.2, 465.0)),
    10_000_000: ((212.969, 376.0), (175.25, 456.0)),
}
"""Size -> (three-queue router, single-queue router) baselines."""
SEED_LOAD = {
    ("immediate", 1_000_000): "39.8 s, 201 kbit/s, 55 %",
    ("routine", 1_000_000): "2964 s, 3 kbit/s, 0.8 %",
    ("priority", 10_000): "more than 3 minutes",
}
"""(precedence, size) -> the field test's figure with a 1 Mbit/s CS1 UDP load (three queues:
CS1 50 %, CS2 50 %, the rest)."""
SEED_CONTENTION = {"routine": (229.18, 349.0, 93.0), "flash": (25.84, 309.0, 86.0)}
"""Precedence -> (seconds, kbit/s, % of base rate) of its 10 MB + 1 MB run."""
TARGETS = {"unloaded": 93.0, "strict": 95.0, "weighted": 80.0, "fifo": 25.0}
"""Unloaded: % of the link, at least; profiles: flash % of unloaded (strict at least, the
others about)."""


SAMPLE_INTERVAL = 0.5
"""(b): seconds between two readings of what the router let through toward B's
listeners."""
LISTENER_PORT = {"routine": 5000, "flash": 5003}
"""(b): precedence -> the port of B's listener its slot connects to (CS0, CS3;
config/examples/site-b.toml)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """(b): what the router had let through toward B, as TCP payload, since the routine
    submission."""

    seconds: float
    """Since the routine submission."""
    octets: dict[str, int]
    """Precedence -> TCP payload octets (OSI headers included, retransmissions too) the
    router's shaper sent toward B's listener for it, since the routine submission."""


@dataclass(frozen=True, slots=True)
class Contention:
    profile: str
    routine: Transfer
    flash: Transfer
    samples: tuple[Sample, ...] = ()


@dataclass(frozen=True, slots=True)
class Loaded:
    """(c): one message sent alone under the UDP load, and its base without the load."""

    precedence: str
    size: int
    base: Transfer
    waited: float
    loaded: Transfer | None
    """None: not stored at B within ``waited`` seconds."""
    drained: Transfer
    """The same message once stored (after the load stopped, if it was not before)."""


@dataclass(slots=True)
class Results:
    settings: Settings
    started: datetime
    unloaded: list[Transfer] = field(default_factory=list)
    flash_alone: Transfer | None = None
    contention: list[Contention] = field(default_factory=list)
    loaded: list[Loaded] = field(default_factory=list)
    latency_alone: list[float] = field(default_factory=list)
    """(d): seconds of 1 KB flash messages with nothing else in flight."""
    latency: dict[str, list[float]] = field(default_factory=dict)
    """(d): profile -> seconds of each 1 KB flash message timed during the bulk."""
    parts: dict[str, list[Parts]] = field(default_factory=dict)
    """(d): ``ALONE`` or profile -> each 1 KB flash message's time, split at the router."""
    round_trip: float | None = None
    """(e): seconds from a SYN of A to B's RST (the least of five)."""
    setup: dict[str, list[float]] = field(default_factory=dict)
    """(e): flash slot mode -> seconds of each 1 KB flash message."""


def _timeout(size: int, rate_kbit: int) -> float:
    """Generous: twenty times the size's time at the full rate, plus a minute."""
    return size * 8 / (rate_kbit * 1000) * 20 + 60


async def run_scenarios(
    topology: Topology, a: Site, b: Site, settings: Settings, progress: Callable[[str], None]
) -> Results:
    results = Results(settings=settings, started=datetime.now(UTC))
    rate = settings.rate_kbit
    async with Watch(b) as watch:
        await topology.shape("fifo", rate)
        for size in settings.unloaded_sizes:
            progress(f"unloaded: routine {size} octets")
            transfer = await send(a, watch, size, "routine", timeout=_timeout(size, rate))
            results.unloaded.append(transfer)
            progress(f"  {transfer.seconds:.2f} s, {transfer.kbit_s:.1f} kbit/s")
            await asyncio.sleep(1)
        progress(f"unloaded: flash {settings.flash_size} octets")
        results.flash_alone = await send(
            a, watch, settings.flash_size, "flash", timeout=_timeout(settings.flash_size, rate)
        )
        progress(f"  {results.flash_alone.kbit_s:.1f} kbit/s")
        for profile in settings.profiles if settings.contention else ():
            await topology.shape(profile, rate)
            await asyncio.sleep(1)
            progress(f"{profile}: routine {settings.routine_size} + flash {settings.flash_size}")
            run = await _contention(topology, a, watch, settings, profile)
            results.contention.append(Contention(profile, *run))
            progress(f"  flash {run[1].kbit_s:.1f} kbit/s, routine {run[0].kbit_s:.1f} kbit/s")
            await asyncio.sleep(1)
        if settings.latency_samples:
            await _latencies(topology, a, watch, settings, results, progress)
        if settings.setup_samples:
            await _connection_setup(topology, a, watch, settings, results, progress)
        if settings.load_kbit:
            await _under_load(topology, a, watch, settings, results, progress)
    return results


SMALL = 1000
"""(d), (e): body octets of the latency samples."""
SETUP_IDLE_TIMEOUT = 0.5
"""(e): seconds an on-demand flash connection stays open without traffic."""
SETUP_ROUND_TRIPS = 3
"""(e): what a new connection adds before the message can go, in round trips: TCP's
SYN / SYN-ACK (T-CONNECT over RFC 1006; the CR rides with the handshake's last ACK), the
transport CR / CC (X.224), and the session CN / AC (X.225) that carries the presentation
CP / CPA, ACSE's AARQ / AARE and RTSE's RTORQ / RTOAC with the MTA bind (X.228, X.411)."""


async def _latencies(
    topology: Topology,
    a: Site,
    watch: Watch,
    settings: Settings,
    results: Results,
    progress: Callable[[str], None],
) -> None:
    """(d) 1 KB flash latencies: alone (fifo), then with routine bulk under each profile;
    each one's time split at the router (:mod:`lab.capture`)."""
    rate = settings.rate_kbit
    await topology.shape("fifo", rate)
    progress(f"latency: {settings.latency_samples} flash {SMALL} octets, nothing else")
    alone: list[Transfer] = []
    async with _capture(topology, a, ALONE) as capture:
        for _ in range(settings.latency_samples):
            alone.append(await send(a, watch, SMALL, "flash", timeout=60))
            await asyncio.sleep(settings.latency_spacing)
    results.latency_alone = [t.seconds for t in alone]
    results.parts[ALONE] = _split(alone, capture)
    for profile in settings.profiles:
        await topology.shape(profile, rate)
        await asyncio.sleep(1)
        progress(f"latency, {profile}: flash {SMALL} octets during routine {settings.latency_bulk}")
        samples: list[Transfer] = []
        bulk = await submit(a, watch, settings.latency_bulk, "routine")
        stored = asyncio.create_task(bulk.stored(watch, _timeout(settings.latency_bulk, rate)))
        try:
            async with _capture(topology, a, profile) as capture:
                await asyncio.sleep(settings.flash_delay)
                while len(samples) < settings.latency_samples and not stored.done():
                    t = await send(a, watch, SMALL, "flash", timeout=120)
                    if not stored.done():  # (only samples that met the bulk count)
                        samples.append(t)
                    await asyncio.sleep(settings.latency_spacing)
            await stored
        finally:
            stored.cancel()
        results.latency[profile] = [t.seconds for t in samples]
        results.parts[profile] = _split(samples, capture)
        progress(
            f"  p50 {_quantile(results.latency[profile], 0.5) * 1000:.0f} ms over {len(samples)}"
        )
        await asyncio.sleep(1)


ALONE = "alone"
"""(d): the key of the samples with nothing else in flight."""


def _capture(topology: Topology, a: Site, name: str) -> Capture:
    """(d): the flash listener's packets at the router, kept beside A's files."""
    return Capture(topology, (LISTENER_PORT["flash"],), a.config.parent / "captures" / name)


def _split(samples: list[Transfer], capture: Capture) -> list[Parts]:
    """Each sample's parts; LabError when the capture missed one (it must not)."""
    parts = []
    for t in samples:
        split_time = split(
            t.submitted, t.stored, capture.arrived, capture.left, LISTENER_PORT["flash"]
        )
        if split_time is None:
            raise LabError(
                f"no packet of the flash message submitted at {t.submitted:%H:%M:%S.%f} "
                f"was captured at the router ({capture.folder})"
            )
        parts.append(split_time)
    return parts


async def _connection_setup(
    topology: Topology,
    a: Site,
    watch: Watch,
    settings: Settings,
    results: Results,
    progress: Callable[[str], None],
) -> None:
    """(e) 1 KB flash on an idle link: the slot permanent, then on-demand (A reloaded with
    it so, and back at the end)."""
    await topology.shape("fifo", settings.rate_kbit)
    results.round_trip = await topology.round_trip()
    count = settings.setup_samples
    progress(
        f"set-up: round trip {results.round_trip * 1000:.1f} ms; {count} flash {SMALL} "
        "octets, flash slot permanent"
    )
    await a.slots_ready()
    permanent = results.setup["permanent"] = []
    for _ in range(count):
        permanent.append((await send(a, watch, SMALL, "flash", timeout=60)).seconds)
        await asyncio.sleep(settings.latency_spacing)
    original = a.config.read_text()
    await a.reload(flash_on_demand(original, SETUP_IDLE_TIMEOUT), "on-demand")
    progress(f"set-up: {count} flash {SMALL} octets, flash slot on-demand (a connection each)")
    on_demand = results.setup["on-demand"] = []
    for _ in range(count):
        await asyncio.sleep(settings.latency_spacing)
        await _until_no_connection(a)
        on_demand.append((await send(a, watch, SMALL, "flash", timeout=60)).seconds)
    await a.reload(original, "permanent")
    await a.slots_ready()
    progress(
        f"  p50 {_quantile(permanent, 0.5) * 1000:.0f} ms permanent, "
        f"{_quantile(on_demand, 0.5) * 1000:.0f} ms on-demand"
    )


async def _until_no_connection(a: Site, timeout: float = 30.0) -> None:
    """Until the flash slot has closed its connection (its idle timeout ran out)."""
    async with asyncio.timeout(timeout):
        while (await a.flash_slot())["connections"]:
            await asyncio.sleep(0.05)


def _quantile(values: list[float], fraction: float) -> float:
    """Nearest rank: the smallest value at least ``fraction`` of the values do not exceed."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


async def _under_load(
    topology: Topology,
    a: Site,
    watch: Watch,
    settings: Settings,
    results: Results,
    progress: Callable[[str], None],
) -> None:
    """(c) under ``reserved``: each message's base without the load, then with it."""
    rate = settings.rate_kbit
    await topology.shape("reserved", rate)
    await asyncio.sleep(1)
    bases: dict[tuple[str, int], Transfer] = {}
    for precedence, size, _ in settings.load_runs:
        progress(f"reserved, no load: {precedence} {size} octets")
        bases[precedence, size] = await send(
            a, watch, size, precedence, timeout=_timeout(size, rate)
        )
        await asyncio.sleep(1)
    for precedence, size, waited in settings.load_runs:
        progress(f"reserved, CS1 UDP load {settings.load_kbit} kbit/s: {precedence} {size} octets")
        async with UdpLoad(topology, settings.load_kbit, dscp=8):
            pending = await submit(a, watch, size, precedence)
            try:
                loaded: Transfer | None = await pending.stored(watch, waited)
            except TimeoutError:
                loaded = None
        # (the load stopped: what was not through drains before the next message)
        drained = loaded or await pending.stored(watch, _timeout(size, rate))
        results.loaded.append(
            Loaded(precedence, size, bases[precedence, size], waited, loaded, drained)
        )
        outcome = (
            f"not stored within {waited:g} s" if loaded is None else f"{loaded.kbit_s:.1f} kbit/s"
        )
        progress(f"  {outcome}")
        await asyncio.sleep(2)


async def _contention(
    topology: Topology, a: Site, watch: Watch, settings: Settings, profile: str
) -> tuple[Transfer, Transfer, tuple[Sample, ...]]:
    rate = settings.rate_kbit
    folder = a.config.parent / "captures" / f"contention-{profile}"
    capture = Capture(topology, tuple(LISTENER_PORT.values()), folder)
    async with capture, asyncio.TaskGroup() as group:  # (the tasks end before the capture)
        routine = group.create_task(
            send(a, watch, settings.routine_size, "routine",
                 timeout=_timeout(settings.routine_size, rate))
        )  # fmt: skip
        await asyncio.sleep(settings.flash_delay)
        flash = group.create_task(
            send(a, watch, settings.flash_size, "flash",
                 timeout=_timeout(settings.flash_size, rate))
        )  # fmt: skip
    readings = cumulative(capture.left, LISTENER_PORT, routine.result().submitted, SAMPLE_INTERVAL)
    samples = tuple(Sample(seconds, octets) for seconds, octets in readings)
    return routine.result(), flash.result(), samples


# --- the report ---------------------------------------------------------------------------


def _base(results: Results, size: int) -> Transfer | None:
    return next((t for t in results.unloaded if t.size == size), None)


def _pct(part: float, whole: float | None) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"


def _mb(size: int) -> str:
    return f"{size / 1e6:g} MB"


def render(results: Results, delay_ms: float = 0) -> str:
    s = results.settings
    link = float(s.rate_kbit)
    lines = [
        f"Two-site DiffServ lab, {s.rate_kbit} kbit/s each way, {CONGESTION}, IPv4; "
        f"{results.started:%Y-%m-%d %H:%M} UTC, kernel {platform.release()}.",
        "Goodput: message body octets x 8 / (submission at A until committed to B's store).",
        "",
        "(a) Unloaded, one message at a time (profile fifo)",
        "",
        "| message | seconds | kbit/s | % of link | raw TCP 1 MB | field test: 3 queues "
        "| field test: 1 queue |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in results.unloaded:
        seed = SEED_UNLOADED.get(t.size)
        three = f"{seed[0][0]:g} s, {seed[0][1]:g} kbit/s" if seed else "-"
        one = f"{seed[1][0]:g} s, {seed[1][1]:g} kbit/s" if seed else "-"
        lines.append(
            f"| routine {_mb(t.size)} | {t.seconds:.2f} | {t.kbit_s:.1f} | {_pct(t.kbit_s, link)} "
            f"| {RAW_UNLOADED_KBIT:g} kbit/s ({_pct(RAW_UNLOADED_KBIT, 512)} of 512) "
            f"| {three} | {one} |"
        )
    if results.flash_alone is not None:
        t = results.flash_alone
        lines.append(
            f"| flash {_mb(t.size)} | {t.seconds:.2f} | {t.kbit_s:.1f} | {_pct(t.kbit_s, link)} "
            "| | | |"
        )
    lines += [
        "",
        f"Target: unloaded {_mb(s.unloaded_sizes[0])} >= {TARGETS['unloaded']:g} % of the link.",
        "",
        f"(b) Routine {_mb(s.routine_size)} (CS0), flash {_mb(s.flash_size)} (CS3) "
        f"submitted {s.flash_delay:g} s later",
        "",
        "| profile | flash s | flash kbit/s | flash % of unloaded | routine s | routine kbit/s "
        "| routine % of unloaded | raw TCP flash % | target flash % |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    flash_base = results.flash_alone.kbit_s if results.flash_alone else None
    routine_base = _base(results, s.routine_size)
    for c in results.contention:
        raw = RAW_FLASH.get(c.profile)
        target = TARGETS.get(c.profile)
        target_text = (
            "-"
            if target is None
            else (f">= {target:g}" if c.profile == "strict" else f"~{target:g}")
        )
        lines.append(
            f"| {c.profile} | {c.flash.seconds:.2f} | {c.flash.kbit_s:.1f} "
            f"| {_pct(c.flash.kbit_s, flash_base)} | {c.routine.seconds:.2f} "
            f"| {c.routine.kbit_s:.1f} "
            f"| {_pct(c.routine.kbit_s, routine_base.kbit_s if routine_base else None)} "
            f"| {f'{raw[1]:g}' if raw else '-'} | {target_text} |"
        )
    seed_r, seed_f = SEED_CONTENTION["routine"], SEED_CONTENTION["flash"]
    lines += [
        f"| field test (Cisco, 2007; 10 MB + 1 MB, 512 kbit/s) | {seed_f[0]:g} | {seed_f[1]:g} "
        f"| {seed_f[2]:g} % | {seed_r[0]:g} | {seed_r[1]:g} | {seed_r[2]:g} % | | |",
        "",
    ]
    if results.loaded:
        lines += _render_loaded(results)
    if results.latency:
        lines += _render_latency(results)
    if results.setup:
        lines += _render_setup(results, delay_ms)
    return "\n".join(lines)


def _ms(values: list[float], fraction: float) -> str:
    return f"{_quantile(values, fraction) * 1000:.0f}" if values else "-"


def _render_latency(results: Results) -> list[str]:
    s = results.settings
    lines = [
        f"(d) Flash {SMALL} octets, one after another (spaced {s.latency_spacing:g} s), "
        f"while a routine {_mb(s.latency_bulk)} message is in flight",
        "",
        "| profile | samples | p50 ms | p99 ms | min ms | max ms |",
        "|---|---|---|---|---|---|",
    ]
    rows = [("nothing else in flight", results.latency_alone)]
    rows += [(profile, values) for profile, values in results.latency.items()]
    for name, values in rows:
        lines.append(
            f"| {name} | {len(values)} | {_ms(values, 0.5)} | {_ms(values, 0.99)} "
            f"| {_ms(values, 0.0)} | {_ms(values, 1.0)} |"
        )
    return [*lines, "", *_render_parts(results)]


def _render_parts(results: Results) -> list[str]:
    """(d): each part's median, the octets at the link's rate, and the slowest sample."""
    if not results.parts:
        return []
    rate = results.settings.rate_kbit * 1000 / 8  # octets a second
    lines = [
        "(d) Where the time goes, from captures at the router (ms; medians of each part, "
        "so they need not add up; MTA A: submission until its first packet reaches the "
        "router; link: until the last one leaves it; MTA B: until B's commit)",
        "",
        "| profile | p50 | MTA A | link | MTA B | octets on the link | at the link's rate "
        "| slowest: total = A + link + B |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, parts in results.parts.items():
        if not parts:
            continue
        octets = _median([float(p.link_octets) for p in parts])
        slowest = max(parts, key=lambda p: p.total)
        lines.append(
            f"| {'nothing else in flight' if name == ALONE else name} "
            f"| {_median([p.total for p in parts]) * 1000:.0f} "
            f"| {_median([p.mta_a for p in parts]) * 1000:.1f} "
            f"| {_median([p.link for p in parts]) * 1000:.1f} "
            f"| {_median([p.mta_b for p in parts]) * 1000:.1f} "
            f"| {octets:.0f} in {_median([float(p.packets) for p in parts]):.0f} packets "
            f"| {octets / rate * 1000:.1f} "
            f"| {slowest.total * 1000:.0f} = {slowest.mta_a * 1000:.0f} + "
            f"{slowest.link * 1000:.0f} + {slowest.mta_b * 1000:.0f} |"
        )
    return [*lines, ""]


def _median(values: list[float]) -> float:
    return _quantile(values, 0.5)


def _render_setup(results: Results, delay_ms: float) -> list[str]:
    rtt = results.round_trip or float("nan")
    permanent = results.setup.get("permanent", [])
    on_demand = results.setup.get("on-demand", [])
    lines = [
        f"(e) Flash {SMALL} octets on an idle link (profile fifo), one-way delay "
        f"{delay_ms:g} ms, round trip {rtt * 1000:.1f} ms (SYN to RST): the flash slot "
        "permanent, then on-demand with a new connection for each message",
        "",
        "| flash slot | samples | p50 ms | p99 ms | min ms | max ms | p50 in round trips |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, values in (
        ("permanent (connection open)", permanent),
        (f"on-demand (idle_timeout {SETUP_IDLE_TIMEOUT:g} s: a connection each)", on_demand),
    ):
        lines.append(
            f"| {name} | {len(values)} | {_ms(values, 0.5)} | {_ms(values, 0.99)} "
            f"| {_ms(values, 0.0)} | {_ms(values, 1.0)} "
            f"| {_quantile(values, 0.5) / rtt:.2f} |"
        )
    extra = _quantile(on_demand, 0.5) - _quantile(permanent, 0.5)
    lines += [
        f"| on-demand - permanent (p50) | | {extra * 1000:.0f} | | | | {extra / rtt:.2f} |",
        "",
        f"Expected from the protocol: {SETUP_ROUND_TRIPS} round trips more for a new "
        "connection (TCP SYN / SYN-ACK, transport CR / CC, session CN / AC with "
        "AARQ / AARE and the MTA bind).",
        "",
    ]
    return lines


def _render_loaded(results: Results) -> list[str]:
    s = results.settings
    lines = [
        f"(c) Profile reserved (CS1 50 %, CS2 50 %, the rest), CS1 UDP load of "
        f"{s.load_kbit} kbit/s; each message alone",
        "",
        "| message | without load: s, kbit/s | with load: s | kbit/s | % of without | field test |",
        "|---|---|---|---|---|---|",
    ]
    for run in results.loaded:
        name = f"{run.precedence} {run.size / 1e6:g} MB"
        base = f"{run.base.seconds:.2f}, {run.base.kbit_s:.1f}"
        seed = SEED_LOAD.get((run.precedence, run.size), "-")
        if run.loaded is None:
            lines.append(
                f"| {name} | {base} | not within {run.waited:g} | < "
                f"{run.size * 8 / run.waited / 1000:.1f} | - | {seed} |"
            )
            continue
        t = run.loaded
        lines.append(
            f"| {name} | {base} | {t.seconds:.2f} | {t.kbit_s:.1f} "
            f"| {_pct(t.kbit_s, run.base.kbit_s)} | {seed} |"
        )
    return [*lines, ""]


def summary(results: Results) -> dict[str, Any]:
    """The measured figures as plain data."""

    def one(t: Transfer) -> dict[str, Any]:
        return {"size": t.size, "precedence": t.precedence, "seconds": t.seconds,
                "kbit_s": t.kbit_s}  # fmt: skip

    flash_base = results.flash_alone.kbit_s if results.flash_alone else None
    routine_base = _base(results, results.settings.routine_size)
    return {
        "rate_kbit": results.settings.rate_kbit,
        "unloaded": [one(t) for t in results.unloaded],
        "flash_alone": one(results.flash_alone) if results.flash_alone else None,
        "contention": {
            c.profile: {
                "flash": one(c.flash),
                "routine": one(c.routine),
                "flash_pct": 100 * c.flash.kbit_s / flash_base if flash_base else None,
                "routine_pct": (
                    100 * c.routine.kbit_s / routine_base.kbit_s if routine_base else None
                ),
                "samples": [{"seconds": x.seconds, "octets": x.octets} for x in c.samples],
            }
            for c in results.contention
        },
        "latency_alone": results.latency_alone,
        "latency": results.latency,
        "latency_parts": {
            name: [dataclasses.asdict(p) for p in parts] for name, parts in results.parts.items()
        },
        "round_trip": results.round_trip,
        "setup": results.setup,
        "loaded": [
            {
                "precedence": run.precedence,
                "size": run.size,
                "base": one(run.base),
                "waited": run.waited,
                "loaded": one(run.loaded) if run.loaded else None,
            }
            for run in results.loaded
        ],
    }
