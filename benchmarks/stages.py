"""Where a message's time goes: the relay's profile by stage, from the daemons' own marks.

    python benchmarks/stages.py [--samples 200] [--messages 3000] [--backlog 0]
                                [--routine-connections 4]

Two ``x400-mta`` processes as ``relay.py`` runs them (the same configuration), started with
``AIOX400_STAGES`` set, so that each writes the marks of :mod:`mta.stages` (a stage's name
and the system's monotonic clock, shared by every process of the machine) when it stops.
The benchmark marks its own steps on the same clock.

Three profiles:

* **one idle flash message, end to end**: ``--samples`` 1 KB flash messages, one every
  100 ms on an idle pair (as ``relay.py``'s idle row), each followed stage by stage:
  from the client's call through A's local API, A's intake and commit, the claim, the
  transfer's encoding and sending, B's receipt and decoding, B's commit, to B's event loop
  seeing the delivery committed (the time a user waiting on B's mailbox is told).  Each
  stage's median and p90 in microseconds, and the sum of the medians against the median
  of the whole.  Marks are found in order: each stage is the first mark of its name in
  its process at or after the stage before it, within the sample's 100 ms.  The daemons
  keep the marks of urgent work as ``stage!`` (:mod:`mta.stages`), so only the flash
  message's own are followed.
* **one flash message crossing a routine backlog** (``--backlog N``): as ``relay.py``'s
  queued row, N routine messages are queued at A while B is stopped, B is started, and
  ``--samples`` flash messages follow, one every 100 ms, while the backlog drains; the same
  table, with the stages' p99 as well (the target is on the whole's p99), so that the
  stage where a flash message waits behind routine work shows.
* **the 1 KB relay**: ``--messages`` routine messages from 8 clients (``relay.py``'s
  throughput row); per site, the transactions of its database thread (messages per
  transaction; the units' work and the commit, per transaction and per message; how
  much of the run the thread was busy), and A's transfers (from the start of one to
  the peer's confirmation, and from a confirmation to the next start on that slot).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.relay import (  # noqa: E402
    CLIENTS,
    DUTY_B,
    FLASH_SPACING,
    ROUTINE_CONNECTIONS,
    Site,
    content,
    cpu_check,
    flash_slot_ready,
    percentile,
    permanent_slots_ready,
    submission,
    submit_many,
    two_sites,
    wait_delivered,
)
from client.api import AsyncConnection  # noqa: E402
from mta.stages import VARIABLE  # noqa: E402

CLIENT = "client"

FLASH_PATH: tuple[tuple[str, str, str], ...] = (
    # (site, mark, what the time up to it was spent on)
    (CLIENT, "client.submit", ""),
    ("A", "api.request", "client: request encoded, read by A's local API"),
    ("A", "intake.queued!", "A local API: access, routing, the unit queued"),
    ("A", "db.begin!", "A: the unit handed to the database thread"),
    ("A", "db.units!", "A intake: the submission planned, written, claimed"),
    ("A", "db.committed!", "A commit: the disk flush"),
    ("A", "claim.window!", "A claim: the result back on the loop, the connection woken"),
    ("A", "transfer.start!", "A encode: the envelope written for the peer"),
    ("A", "transfer.encoded!", "A send: the RTSE and session PDUs encoded"),
    ("B", "transfer.received!", "B receive: written, read, the PDUs decoded"),
    ("B", "intake.peeked!", "B decode: the envelope read on the loop"),
    ("B", "db.begin!", "B: the unit handed to the database thread"),
    ("B", "db.units!", "B intake: planned, written, delivered into the store"),
    ("B", "db.committed!", "B commit: the disk flush"),
    ("B", "intake.settled!", "B deliver: the commit seen on B's event loop"),
)
"""One flash message's stages, in the order they happen (``!``: marks of urgent work)."""


@dataclass(frozen=True)
class Mark:
    at: int
    """Nanoseconds on the system's monotonic clock."""
    site: str
    stage: str


class Marks:
    """The benchmark's own marks (site ``client``)."""

    def __init__(self) -> None:
        self.marks: list[Mark] = []

    def mark(self, stage: str) -> None:
        self.marks.append(Mark(time.monotonic_ns(), CLIENT, stage))


def read_marks(prefix: Path, sites: dict[int, str]) -> list[Mark]:
    """The marks the daemons wrote (``PREFIX.PID``), named by the site of each PID."""
    marks = []
    for pid, site in sites.items():
        path = prefix.with_name(f"{prefix.name}.{pid}")
        if not path.exists():
            raise SystemExit(f"stages: {site} (pid {pid}) wrote no marks to {path}")
        for line in path.read_text(encoding="ascii").splitlines():
            at, stage = line.split(" ", 1)
            marks.append(Mark(int(at), site, stage))
    return marks


def follow(marks: Sequence[Mark], path: Sequence[tuple[str, str, str]]) -> list[int] | None:
    """The time of each of ``path``'s marks in ``marks`` (sorted by time), each the first
    of its site and name at or after the one before; None if one is missing."""
    found: list[int] = []
    index = 0
    for site, stage, _ in path:
        while index < len(marks) and (marks[index].site, marks[index].stage) != (site, stage):
            index += 1
        if index == len(marks):
            return None
        found.append(marks[index].at)
    return found


def samples(marks: list[Mark], start: str = "client.submit") -> Iterator[list[Mark]]:
    """``marks`` (sorted) cut into samples, each from one client ``start`` to the next."""
    starts = [i for i, m in enumerate(marks) if m.site == CLIENT and m.stage == start]
    for number, first in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(marks)
        yield marks[first:end]


def flash_table(marks: list[Mark], title: str = "One idle 1 KB flash message") -> list[str]:
    """The flash profile as Markdown lines."""
    steps: list[list[float]] = [[] for _ in FLASH_PATH[1:]]
    whole: list[float] = []
    answered: list[float] = []
    incomplete = 0
    for sample in samples(marks):
        times = follow(sample, FLASH_PATH)
        if times is None:
            incomplete += 1
            continue
        for number in range(1, len(times)):
            steps[number - 1].append((times[number] - times[number - 1]) / 1000)
        whole.append((times[-1] - times[0]) / 1000)
        answer = follow(sample, ((CLIENT, "client.submit", ""), (CLIENT, "client.answer", "")))
        if answer is not None:
            answered.append((answer[1] - answer[0]) / 1000)
    if not whole:
        raise SystemExit("stages: no flash sample could be followed from client to B's store")
    lines = [
        f"{title}, {len(whole)} samples" + (f" ({incomplete} not followed)" if incomplete else ""),
        "",
        "| stage (time up to the mark) | mark | p50 us | p90 us | p99 us |",
        "|---|---|---:|---:|---:|",
    ]
    for (site, stage, what), values in zip(FLASH_PATH[1:], steps, strict=True):
        lines.append(
            f"| {what} | {site} {stage} | {statistics.median(values):,.0f} "
            f"| {percentile(values, 0.9):,.0f} | {percentile(values, 0.99):,.0f} |"
        )
    medians = sum(statistics.median(values) for values in steps)
    lines += [
        f"| **sum of the medians** | | **{medians:,.0f}** | | |",
        f"| **whole, submission to stored at B** | | **{statistics.median(whole):,.0f}** "
        f"| {percentile(whole, 0.9):,.0f} | {percentile(whole, 0.99):,.0f} |",
    ]
    if answered:
        lines.append(
            f"| the user's answer at A (submission to answer) | client client.answer "
            f"| {statistics.median(answered):,.0f} | {percentile(answered, 0.9):,.0f} "
            f"| {percentile(answered, 0.99):,.0f} |"
        )
    return lines


def relay_table(marks: list[Mark], count: int, seconds: float) -> list[str]:
    """The 1 KB relay profile as Markdown lines."""
    lines = [
        f"1 KB relay: {count} messages in {seconds:.2f} s ({count / seconds:,.0f} msgs/s)",
        "",
        "| site | transactions | messages per transaction | units us per transaction "
        "| commit us per transaction | database thread busy | per message: units + commit us |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for site in ("A", "B"):
        own = [m for m in marks if m.site == site]
        units, commits = _transactions(own)
        if not units:
            continue
        busy = (sum(units) + sum(commits)) / 1e9
        lines.append(
            f"| {site} | {len(units):,} | {count / len(units):.2f} "
            f"| {statistics.mean(units) / 1000:,.0f} "
            f"| {statistics.mean(commits) / 1000:,.0f} | {busy / seconds:.0%} "
            f"| {(sum(units) + sum(commits)) / count / 1000:,.0f} |"
        )
    round_trips, gaps = _transfers([m for m in marks if m.site == "A"])
    if round_trips and gaps:
        p90 = percentile([float(t) for t in round_trips], 0.9)
        lines += [
            "",
            f"A's transfers: {len(round_trips):,}; start to the peer's confirmation p50 "
            f"{statistics.median(round_trips) / 1000:,.0f} us (p90 "
            f"{p90 / 1000:,.0f}); confirmation to the next start p50 "
            f"{statistics.median(gaps) / 1000:,.0f} us",
        ]
    return lines


def _transactions(marks: list[Mark]) -> tuple[list[int], list[int]]:
    """Each transaction's units and commit time (ns) from its database marks."""
    units, commits = [], []
    begun = done = None
    for mark in marks:
        stage = mark.stage.rstrip("!")  # (urgent or routine: every transaction counts)
        if stage == "db.begin":
            begun, done = mark.at, None
        elif stage == "db.units" and begun is not None:
            done = mark.at
        elif stage == "db.committed" and begun is not None and done is not None:
            units.append(done - begun)
            commits.append(mark.at - done)
            begun = done = None
    return units, commits


def _transfers(marks: list[Mark]) -> tuple[list[int], list[int]]:
    """Round trips of A's transfers, and the gaps from a confirmation to the next start
    (all of A's connections together: the gap is to the next start on any of them)."""
    trips, gaps = [], []
    started: list[int] = []
    confirmed: int | None = None
    for mark in marks:
        stage = mark.stage.rstrip("!")
        if stage == "transfer.start":
            started.append(mark.at)
            if confirmed is not None:
                gaps.append(mark.at - confirmed)
                confirmed = None
        elif stage == "transfer.confirmed" and started:
            trips.append(mark.at - started.pop(0))
            confirmed = mark.at
    return trips, gaps


async def flash_run(
    folder: Path, count: int, routine_connections: int, backlog: int = 0
) -> list[Mark]:
    """The marks of ``count`` flash messages, on an idle pair or (``backlog``) while that
    many routine messages, queued at A while B was stopped, drain."""
    prefix = folder / ("backlog" if backlog else "marks")
    os.environ[VARIABLE] = str(prefix)
    client = Marks()
    async with two_sites(routine_connections) as (a, b):
        await a.start()
        if backlog:
            await submit_many(a, backlog, 1024, "routine")
        await b.start()
        await flash_slot_ready(a)
        body = content(1024, "flash", DUTY_B)
        request = submission("flash", DUTY_B)
        connection = await AsyncConnection.open(a.socket)
        try:
            for _ in range(count):
                client.mark("client.submit")
                await connection.call(request, body)
                client.mark("client.answer")
                await asyncio.sleep(FLASH_SPACING)
        finally:
            await connection.close()
        await wait_delivered(b, count + backlog)
        sites = _pids(a, b)
    return sorted([*read_marks(prefix, sites), *client.marks], key=lambda m: m.at)


async def relay_run(folder: Path, count: int, routine_connections: int) -> tuple[list[Mark], float]:
    prefix = folder / "relay"
    os.environ[VARIABLE] = str(prefix)
    async with two_sites(routine_connections) as (a, b):
        await b.start()
        await a.start()
        await permanent_slots_ready(a)
        started = time.monotonic_ns()
        await _submit(a, count)
        ended = await wait_delivered(b, count, poll=0.01)
        sites = _pids(a, b)
    marks = [m for m in read_marks(prefix, sites) if m.at >= started]
    return sorted(marks, key=lambda m: m.at), ended - started / 1e9  # (seconds)


async def _submit(site: Site, count: int) -> None:
    body = content(1024, "routine")
    request = submission("routine")
    numbers = iter(range(count))

    async def one_client() -> None:
        connection = await AsyncConnection.open(site.socket)
        try:
            for _ in numbers:
                await connection.call(request, body)
        finally:
            await connection.close()

    await asyncio.gather(*(one_client() for _ in range(CLIENTS)))


def _pids(a: Site, b: Site) -> dict[int, str]:
    """Each daemon's PID by site; they are stopped (their marks written) on leaving
    :func:`two_sites`, so the caller reads the marks after it."""
    assert a.process is not None and b.process is not None
    return {a.process.pid: "A", b.process.pid: "B"}


async def main(args: argparse.Namespace) -> None:
    print(f"aiox400 stage profile (Python {sys.version.split()[0]}, {os.cpu_count()} CPUs)\n")
    print(f"CPU check (10 million additions): {cpu_check():.2f} s\n")
    with tempfile.TemporaryDirectory(prefix="aiox400-stages-") as tmp:
        folder = Path(tmp)
        if args.samples:
            marks = await flash_run(folder, args.samples, args.routine_connections)
            print("\n".join(flash_table(marks)) + "\n")
        if args.samples and args.backlog:
            marks = await flash_run(folder, args.samples, args.routine_connections, args.backlog)
            title = f"One 1 KB flash message, {args.backlog:,} routine queued"
            print("\n".join(flash_table(marks, title)) + "\n")
        if args.messages:
            marks, seconds = await relay_run(folder, args.messages, args.routine_connections)
            print("\n".join(relay_table(marks, args.messages, seconds)))


def _counts(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--samples", type=_counts, default=200, help="idle flash messages followed (0: none)"
    )
    parser.add_argument(
        "--messages", type=_counts, default=3000, help="1 KB messages of the relay run (0: none)"
    )
    parser.add_argument(
        "--backlog",
        type=_counts,
        default=0,
        help="routine messages queued ahead of a second flash profile (0: none; relay.py's "
        "published queued row uses 10000)",
    )
    parser.add_argument(
        "--routine-connections",
        type=_counts,
        default=ROUTINE_CONNECTIONS,
        help=f"most connections of the routine slot ({ROUTINE_CONNECTIONS}, as in config/examples)",
    )
    asyncio.run(main(parser.parse_args()))
