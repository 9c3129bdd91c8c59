"""The HF scenario (``python -m lab --hf-scenario``): how much of an HF link P1 over RFC 1006
uses, one message at a time, as Isode measured ACP 142 and CFTP over STANAG 5066.

(h) Site A sends site B one message at a time over the HF wire (:mod:`lab.hf`, between A
    and the router), each with one bilaterally defined body part (X.420 7.4.10) of N
    random octets: incompressible, as in Isode's measurements.  It goes at flash
    precedence, on that slot's connection, open since the start (Isode's figures are for
    an established STANAG 5066 link too).  Link use = payload bits / (the link's rate x
    the time from the submission at A until B's store had it).  After the delivery come
    B's P1 confirmation (RTSE) and the last TCP acknowledgements, each a turnaround away:
    the message has the link until the wire is quiet again (nothing on the air or
    waiting for a turnaround and two seconds), and the same figure to the last packet
    of that is its link use "until quiet": what a message alone costs the link, where the
    first is what its user waits.  Beside them, what the wire counted from the submission
    until quiet: the air time each way, the turnarounds, the octets A sent against the
    payload, and packets lost to bit errors or dropped at a modem queue.

Reference figures (cited, not measured here): Isode's link utilisation at 9,600 bit/s on a
clear channel and, for 100 KB, at BER 1e-6 and 1e-5, STANAG 4539 short interleaver, ACP
142 and CFTP over STANAG 5066 ARQ (their white paper "Measuring Performance of Messaging
Protocols for HF Radio").

Public API::

    HF_SIZES                          the default sizes, octets (1 KB, 10 KB, 100 KB)
    HfMessage                         one message's transfer and the wire's counters
    binary_ipm(size, seed) -> bytes   a P772 IPM with ``size`` random octets
    async run_hf(topology, a, b, sizes, progress) -> list[HfMessage]
    Overtake                          a flash message sent while a routine one is on the air
    async run_overtake(topology, a, b, routine, flash, after, progress) -> Overtake
    render_overtake(overtake, settings) -> str
    render_hf(messages, settings, started) -> str   the Markdown table
    summary_hf(messages, settings) -> dict
"""

from __future__ import annotations

import asyncio
import platform
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lab.hf import HfSettings
from lab.sites import USER_A, USER_B, Site, Transfer, Watch, send, submit
from lab.topology import LabError, Topology
from p1.ipms.ipm import (
    IPM,
    BinaryBodyPart,
    ContentKind,
    Heading,
    IPMIdentifier,
    Recipient,
    encode_ipm,
)
from p1.mts.orname import parse_orname

HF_SIZES = (1_000, 10_000, 100_000)
PRECEDENCE = "flash"
"""Its slot is permanent: the connection is open before the first message."""
SITE_A, ROUTER = "a0", "ra"
"""The wire's devices: what comes in at ``a0`` goes from A toward B."""
ISODE_9600 = {
    (1_000, 0.0): (46.0, 55.5),
    (10_000, 0.0): (83.0, 82.0),
    (100_000, 0.0): (89.5, 88.0),
    (1_000_000, 0.0): (91.0, 89.5),
    (100_000, 1e-6): (88.0, 86.0),
    (100_000, 1e-5): (72.0, 64.0),
}
"""(payload octets, BER) -> Isode's link utilisation, %, (ACP 142, CFTP), 9,600 bit/s."""
QUIET_POLL = 0.5
"""Seconds between two readings of the wire's counters while waiting for quiet."""
QUIET_LONGEST = 600.0
"""Seconds the lab waits for a quiet wire before it gives up (LabError)."""


@dataclass(frozen=True, slots=True)
class HfMessage:
    """One message over the HF wire, and what the wire counted from its submission until
    it was quiet again."""

    transfer: Transfer
    rate: float
    quiet: float
    """Seconds from the submission until the last packet of the exchange left the air."""
    counted: dict[str, float]
    """The wire's counters when quiet less those at the submission: ``air_a``, ``air_b``
    (seconds on the air from A, and from the router toward A), ``octets_a`` (IP octets A
    sent), ``turnarounds`` (changes of direction, a free one after a long enough silence
    included), ``turnaround_seconds`` (the time they took), ``lost`` and ``dropped``
    (packets, both ways)."""

    @property
    def link_use(self) -> float:
        """Payload bits / (rate x seconds from submission to delivery)."""
        return self.transfer.size * 8 / (self.rate * self.transfer.seconds)

    @property
    def link_use_quiet(self) -> float:
        """Payload bits / (rate x seconds from submission until quiet)."""
        return self.transfer.size * 8 / (self.rate * self.quiet)


def binary_ipm(size: int, seed: int) -> bytes:
    """A P772 IPM from A's user to B's with one bilaterally defined body part of ``size``
    random octets (the same for the same ``seed``)."""
    originator = parse_orname(USER_A)
    heading = Heading(
        this_ipm=IPMIdentifier(user=originator, user_relative_identifier=f"hf {size} {seed}"),
        primary_recipients=(Recipient(name=parse_orname(USER_B)),),
        subject=f"lab hf {size} random octets",
    )
    payload = random.Random(seed).randbytes(size)
    return encode_ipm(IPM(heading=heading, body=(BinaryBodyPart(data=payload),)), ContentKind.P772)


def _timeout(size: int, settings: HfSettings) -> float:
    """Generous: ten times the payload's air time, ten turnarounds and ten minutes."""
    return size * 8 / settings.rate * 10 + 10 * settings.turnaround + 600


async def run_hf(
    topology: Topology,
    a: Site,
    b: Site,
    sizes: Sequence[int],
    progress: Callable[[str], None],
) -> list[HfMessage]:
    """(h): each of ``sizes`` alone, on a quiet wire."""
    settings = topology.hf
    if settings is None:
        raise LabError("the HF scenario needs the HF wire (Topology(hf=...))")
    messages = []
    settle = settings.turnaround + 2
    async with Watch(b) as watch:
        before = await _until_quiet(topology, settle)
        for number, size in enumerate(sizes):
            progress(f"hf: {size} random octets at {settings.rate:g} bit/s")
            submitted = time.monotonic()  # (the wire's clock too)
            transfer = await send(
                a, watch, size, PRECEDENCE, timeout=_timeout(size, settings),
                content=binary_ipm(size, number),
            )  # fmt: skip
            after = await _until_quiet(topology, settle)
            quiet = float(after["last_ended"]) - submitted
            message = HfMessage(transfer, settings.rate, quiet, _difference(before, after))
            messages.append(message)
            progress(
                f"  {transfer.seconds:.1f} s, link use {100 * message.link_use:.1f} %; "
                f"quiet after {quiet:.1f} s, {100 * message.link_use_quiet:.1f} %"
            )
            before = after
    return messages


@dataclass(frozen=True, slots=True)
class Overtake:
    """A routine message of random octets, and a flash one submitted ``after`` seconds
    later, while the routine one is on the air."""

    routine: Transfer
    flash: Transfer
    after: float

    @property
    def overtook(self) -> bool:
        """Whether B stored the flash message first."""
        return self.flash.stored < self.routine.stored


async def run_overtake(
    topology: Topology,
    a: Site,
    b: Site,
    routine: int,
    flash: int,
    after: float,
    progress: Callable[[str], None],
) -> Overtake:
    """A routine message of ``routine`` random octets, then, ``after`` seconds later, a
    flash one of ``flash``: when B stored each."""
    settings = topology.hf
    if settings is None:
        raise LabError("the overtaking scenario needs the HF wire (Topology(hf=...))")
    async with Watch(b) as watch:
        await _until_quiet(topology, settings.turnaround + 2)
        progress(f"hf: routine {routine} octets, then flash {flash} octets {after:g} s later")
        slow = await submit(a, watch, routine, "routine", binary_ipm(routine, 101))
        await asyncio.sleep(after)
        quick = await submit(a, watch, flash, "flash", binary_ipm(flash, 102))
        flash_transfer = await quick.stored(watch, _timeout(flash, settings))
        progress(f"  flash stored after {flash_transfer.seconds:.1f} s")
        routine_transfer = await slow.stored(watch, _timeout(routine, settings))
        progress(f"  routine stored after {routine_transfer.seconds:.1f} s")
    return Overtake(routine_transfer, flash_transfer, after)


def render_overtake(overtake: Overtake, settings: HfSettings) -> str:
    r, f = overtake.routine, overtake.flash
    return "\n".join(
        [
            f"(i) Flash overtaking routine at {settings.rate:g} bit/s: a routine message of "
            f"{_size(r.size)} random octets, then a flash one of {_size(f.size)} "
            f"{overtake.after:g} s later",
            "",
            "| message | submitted, s | stored after, s | stored at, s |",
            "|---|---|---|---|",
            f"| routine {_size(r.size)} | 0 | {r.seconds:.1f} | {r.seconds:.1f} |",
            f"| flash {_size(f.size)} | {overtake.after:g} | {f.seconds:.1f} "
            f"| {(f.stored - r.submitted).total_seconds():.1f} |",
            "",
            f"The flash message {'overtook' if overtake.overtook else 'did not overtake'} "
            "the routine one.",
            "",
        ]
    )


def _difference(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    def of(line: dict[str, Any], device: str, key: str) -> float:
        return float(line["from"][device][key])

    def change(device: str, key: str) -> float:
        return of(after, device, key) - of(before, device, key)

    return {
        "air_a": change(SITE_A, "busy_seconds"),
        "air_b": change(ROUTER, "busy_seconds"),
        "octets_a": change(SITE_A, "sent_octets"),
        "turnarounds": float(after["turnarounds"] - before["turnarounds"]),
        "turnaround_seconds": float(after["turnaround_seconds"] - before["turnaround_seconds"]),
        "lost": change(SITE_A, "lost_packets") + change(ROUTER, "lost_packets"),
        "dropped": change(SITE_A, "dropped_packets") + change(ROUTER, "dropped_packets"),
    }


async def _until_quiet(topology: Topology, settle: float) -> dict[str, Any]:
    """Until nothing has gone on the air for ``settle`` seconds and nothing waits: the
    wire's counters then."""
    deadline = time.monotonic() + QUIET_LONGEST
    last, since = -1.0, time.monotonic()
    while time.monotonic() < deadline:
        line = await topology.link_counters()
        ends = line["from"].values()
        sent = float(sum(end["sent_packets"] for end in ends))
        busy = line["on_air"] is not None or any(end["waiting_packets"] for end in ends)
        if busy or sent != last:
            last, since = sent, time.monotonic()
        elif time.monotonic() - since >= settle:
            return line
        await asyncio.sleep(QUIET_POLL)
    raise LabError(f"the HF wire was not quiet for {settle:g} s within {QUIET_LONGEST:g} s")


# --- the report -------------------------------------------------------------------------


def _size(octets: int) -> str:
    for unit, scale in (("MB", 1_000_000), ("KB", 1_000)):
        if octets >= scale:
            return f"{octets / scale:g} {unit}"
    return f"{octets} octets"


def _profile(s: HfSettings) -> str:
    queue = " and ".join(
        part
        for part in (
            f"{s.queue_packets} packets" if s.queue_packets else "",
            f"{s.queue_octets} octets" if s.queue_octets else "",
        )
        if part
    )
    return (
        f"{s.rate:g} bit/s, turnaround {s.turnaround:g} s, transmissions of at most "
        f"{s.max_transmission:g} s, BER {s.ber:g}{' (clear)' if s.ber == 0 else ''}, "
        f"framing {s.framing} octets a packet, modem queue {queue or 'unbounded'} each way"
    )


TRANSPORTS = {
    "p1": "P1 over RFC 1006, the connection open",
    "acp142": "STANAG 4406 Annex E over ACP 142, paced to the rate",
}
"""How the sites reach each other (``--hf-transport``), as the report says it."""


def render_hf(
    messages: Sequence[HfMessage],
    settings: HfSettings,
    started: datetime,
    *,
    transport: str = "p1",
) -> str:
    lines = [
        f"HF lab, {started:%Y-%m-%d %H:%M} UTC, kernel {platform.release()}.",
        "Link use: payload bits / (rate x seconds from submission at A until B's store).",
        "",
        f"(h) One message at a time from A to B over the HF wire ({_profile(settings)}): "
        f"one body part of N random octets, {PRECEDENCE} precedence, {TRANSPORTS[transport]}",
        "",
        "| payload | seconds | link use | until quiet, s | link use until quiet "
        "| air A to B, s | air B to A, s | turnarounds, s | octets A sent / payload "
        "| lost, dropped | Isode ACP 142 | Isode CFTP |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in messages:
        c, t = m.counted, m.transfer
        isode = ISODE_9600.get((t.size, settings.ber)) if settings.rate == 9600 else None
        lines.append(
            f"| {_size(t.size)} | {t.seconds:.2f} | {100 * m.link_use:.1f} % "
            f"| {m.quiet:.2f} | {100 * m.link_use_quiet:.1f} % "
            f"| {c['air_a']:.2f} | {c['air_b']:.2f} "
            f"| {c['turnarounds']:.0f}, {c['turnaround_seconds']:.1f} "
            f"| {c['octets_a'] / t.size:.2f} | {c['lost']:.0f}, {c['dropped']:.0f} "
            f"| {f'{isode[0]:g} %' if isode else '-'} | {f'{isode[1]:g} %' if isode else '-'} |"
        )
    lines += [
        "",
        "Until quiet: until the last packet of the exchange (B's P1 confirmation, the TCP "
        "acknowledgements) left the air; the counters cover that time (turnarounds: "
        "changes of direction, and the seconds they took; one after a silence longer than "
        "the turnaround takes none).",
        "Isode: ACP 142 and CFTP over STANAG 5066 ARQ at 9,600 bit/s, clear channel, and 100 "
        "KB at BER 1e-6 and 1e-5 (cited, not measured here; shown where rate, size and BER "
        "match).",
        "",
    ]
    return "\n".join(lines)


def summary_hf(
    messages: Sequence[HfMessage], settings: HfSettings, *, transport: str = "p1"
) -> dict[str, Any]:
    """The figures as plain data, for --json."""
    return {
        "transport": transport,
        "hf": {
            "rate": settings.rate,
            "turnaround": settings.turnaround,
            "max_transmission": settings.max_transmission,
            "ber": settings.ber,
            "framing": settings.framing,
            "queue_packets": settings.queue_packets,
            "queue_octets": settings.queue_octets,
            "seed": settings.seed,
        },
        "messages": [
            {
                "size": m.transfer.size,
                "seconds": m.transfer.seconds,
                "link_use": m.link_use,
                "quiet": m.quiet,
                "link_use_quiet": m.link_use_quiet,
                **m.counted,
            }
            for m in messages
        ],
    }
