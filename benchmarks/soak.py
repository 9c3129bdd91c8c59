"""Soak benchmark: a steady stream through user -> MTA A -> MTA B -> B's user, for an hour.

    python benchmarks/soak.py [--duration 3600] [--rate 150] [--size 1024] [--flash-every 50]
                              [--sample 10] [--window 600] [--out DIR]

Two ``x400-mta`` processes on loopback, configured as in ``relay.py`` (SQLite stores,
WAL, synchronous FULL; four slots, DSCP CS0..CS3), with retention windows short enough
to be crossed several times in the run (``--window``: ``[max_age]`` of every precedence
and ``[retention] received`` and ``audit``; ``finished`` is a fifth of it, ``interval``
30 s).  A paced sender submits ``--rate`` messages a second through A's local API (one in
``--flash-every`` at flash, the rest routine); B's user reads its mailbox as ``x400
inbox --follow`` does (the local API's ``wait``) and deletes what it got, as a user who
keeps up.  Every ``--sample`` seconds the benchmark writes one CSV row: messages
submitted and consumed, each daemon's resident memory (VmRSS) and the disk its state
directory occupies (allocated blocks: database, WAL, APDU files), A's queue by state.

At the end it stops sending, waits until B's user has every message, and prints a
Markdown table (one row per tenth of the run) and the plateau check: for RSS and disk of
both daemons, the mean of the last quarter of the run against the mean of the second
quarter (after the first retention window, the state should stop growing).  With
matplotlib installed (``pip install -e '.[plot]'``) it draws ``soak.png`` in ``--out``:
RSS, disk, A's queue rows (finished ones kept for ``finished``, and those waiting) and
the messages submitted and read, over time.  ``--from-csv FILE`` prints the tables and
draws the plot of an earlier run without running anything.

Nothing is lost if the run ends with every submitted message in B's mailbox: the
benchmark checks that the consumed count equals the submitted count and exits 1 if not.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import os
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.relay import (  # noqa: E402
    USER_B,
    Site,
    api,
    content,
    cpu_check,
    rss_mib,
    submission,
    two_sites,
)
from client.api import AsyncConnection  # noqa: E402

SENDERS = 4
"""Concurrent submitting clients, each on a connection it keeps."""
_WAITING = ("pending", "held", "in_flight")
"""A's queue states of a recipient not yet transferred."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One row of the CSV."""

    seconds: float
    submitted: int
    consumed: int
    a_rss_mib: float
    b_rss_mib: float
    a_disk_mib: float
    b_disk_mib: float
    a_waiting: int
    a_finished: int


def retention_text(window: float) -> str:
    """The ``[max_age]`` and ``[retention]`` sections of both sites for a ``window``."""
    seconds = int(window)
    ages = "".join(
        f'{p} = "{seconds}s"\n'
        for p in ("override", "flash", "immediate", "priority", "routine", "deferred")
    )
    return (
        f"\n[max_age]\n{ages}\n[retention]\n"
        f'finished = "{max(1, seconds // 5)}s"\nreceived = "{seconds}s"\n'
        f'audit = "{seconds}s"\ninterval = "30s"\nbatch = 500\n'
    )


def disk_mib(folder: Path) -> float:
    """Disk allocated to every file under ``folder`` (st_blocks), MiB."""
    total = 0
    for path in _files(folder):
        with contextlib.suppress(FileNotFoundError):
            total += path.lstat().st_blocks * 512
    return total / (1024 * 1024)


def _files(folder: Path) -> Iterator[Path]:
    for base, _, names in os.walk(folder):
        for name in names:
            yield Path(base) / name


class Counters:
    """What the sender and the reader have done."""

    def __init__(self) -> None:
        self.submitted = 0
        self.consumed = 0


async def send(
    site: Site, args: argparse.Namespace, counters: Counters, stop: asyncio.Event
) -> None:
    """Submit ``args.rate`` messages a second until ``stop``, paced from the start (a
    sender that fell behind catches up)."""
    routine = (submission("routine"), content(args.size, "routine"))
    flash = (submission("flash"), content(args.size, "flash"))
    started = time.monotonic()
    numbers = iter(range(sys.maxsize))

    async def sender() -> None:
        connection = await AsyncConnection.open(site.socket)
        try:
            for number in numbers:
                if stop.is_set():
                    return
                delay = started + number / args.rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                request, body = flash if number % args.flash_every == 0 else routine
                await connection.call(request, body)
                counters.submitted += 1
        finally:
            await connection.close()

    await asyncio.gather(*(sender() for _ in range(SENDERS)))


async def consume(site: Site, counters: Counters, done: asyncio.Event) -> None:
    """B's user: wait for new entries, delete them, until ``done`` and nothing is left."""
    connection = await AsyncConnection.open(site.socket)
    after = 0
    try:
        while True:
            response, _ = await connection.call(
                {"op": "wait", "user": USER_B, "after": after, "timeout": 2}
            )
            ids = [int(m["id"]) for m in response["messages"]]
            after = int(response["after"])
            if ids:
                await connection.call({"op": "delete", "user": USER_B, "ids": ids})
                counters.consumed += len(ids)
            elif done.is_set():
                return
    finally:
        await connection.close()


async def sample(a: Site, b: Site, counters: Counters, started: float) -> Sample:
    status = await api(a.socket, {"op": "status"})
    states: dict[str, int] = status["recipients"]
    assert a.process is not None and b.process is not None
    return Sample(
        seconds=round(time.monotonic() - started, 1),
        submitted=counters.submitted,
        consumed=counters.consumed,
        a_rss_mib=round(rss_mib(a.process.pid), 1),
        b_rss_mib=round(rss_mib(b.process.pid), 1),
        a_disk_mib=round(disk_mib(a.config.parent / "state-MTA-A"), 1),
        b_disk_mib=round(disk_mib(b.config.parent / "state-MTA-B"), 1),
        a_waiting=sum(n for s, n in states.items() if s in _WAITING),
        a_finished=sum(n for s, n in states.items() if s not in _WAITING),
    )


async def run(args: argparse.Namespace) -> list[Sample]:
    extra = retention_text(args.window)
    samples: list[Sample] = []
    async with two_sites(extra=extra) as (a, b):
        await b.start()
        await a.start()
        counters = Counters()
        stop, done = asyncio.Event(), asyncio.Event()
        started = time.monotonic()
        sending = asyncio.create_task(send(a, args, counters, stop))
        reading = asyncio.create_task(consume(b, counters, done))
        out = args.out / "soak.csv"
        with out.open("w", newline="") as file:
            writer = csv.DictWriter(file, [f.name for f in fields(Sample)])
            writer.writeheader()
            while time.monotonic() - started < args.duration:
                await asyncio.sleep(args.sample)
                row = await sample(a, b, counters, started)
                samples.append(row)
                writer.writerow(asdict(row))
                file.flush()
                _progress(row)
            stop.set()
            await sending
            while counters.consumed < counters.submitted:
                await asyncio.sleep(args.sample)
                row = await sample(a, b, counters, started)
                samples.append(row)
                writer.writerow(asdict(row))
                _progress(row)
            done.set()
            await reading
    return samples


def _progress(row: Sample) -> None:
    print(
        f"{row.seconds:8.0f} s  sent {row.submitted:8d}  read {row.consumed:8d}  "
        f"RSS A {row.a_rss_mib:6.1f} B {row.b_rss_mib:6.1f} MiB  "
        f"disk A {row.a_disk_mib:7.1f} B {row.b_disk_mib:7.1f} MiB  "
        f"A waiting {row.a_waiting}",
        file=sys.stderr,
        flush=True,
    )


def read_csv(path: Path) -> list[Sample]:
    """The rows of a ``soak.csv``."""
    kinds = {f.name: f.type for f in fields(Sample)}
    samples = []
    with path.open(newline="") as file:
        for row in csv.DictReader(file):
            values: dict[str, Any] = {
                k: float(v) if kinds[k] == "float" else int(v) for k, v in row.items()
            }
            samples.append(Sample(**values))
    return samples


def table(samples: list[Sample], rows: int = 10) -> str:
    """Markdown: one row per ``1/rows`` of the run, then the plateau check."""
    step = max(1, len(samples) // rows)
    picked = samples[step - 1 :: step]
    if picked[-1] is not samples[-1]:
        picked.append(samples[-1])
    lines = [
        "| time | submitted | read at B | RSS A / B, MiB | disk A / B, MiB | A waiting |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {s.seconds / 60:.1f} min | {s.submitted:,} | {s.consumed:,} | "
        f"{s.a_rss_mib:.1f} / {s.b_rss_mib:.1f} | {s.a_disk_mib:.1f} / {s.b_disk_mib:.1f} | "
        f"{s.a_waiting:,} |"
        for s in picked
    ]
    return "\n".join(lines)


_MEASURES = {
    "a_rss_mib": "RSS of A, MiB",
    "b_rss_mib": "RSS of B, MiB",
    "a_disk_mib": "disk of A, MiB",
    "b_disk_mib": "disk of B, MiB",
}


def plateau(samples: list[Sample]) -> str:
    """Second quarter against last quarter, per measure (the run's sending part)."""
    quarter = len(samples) // 4
    if quarter == 0:
        return f"(no plateau check: {len(samples)} sample(s), at least 4 are needed)"
    second, last = samples[quarter : 2 * quarter], samples[3 * quarter :]
    lines = [
        "| measure | mean, 2nd quarter | mean, last quarter | change |",
        "|---|---:|---:|---:|",
    ]
    for name, label in _MEASURES.items():
        before = statistics.fmean(getattr(s, name) for s in second)
        after = statistics.fmean(getattr(s, name) for s in last)
        change = 100 * (after / before - 1)
        lines.append(f"| {label} | {before:.1f} | {after:.1f} | {change:+.1f} % |")
    return "\n".join(lines)


def plot(samples: list[Sample], path: Path) -> bool:
    """Draw RSS, disk and throughput over time; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    minutes = [s.seconds / 60 for s in samples]
    figure, (memory, disk, rows, flow) = plt.subplots(4, 1, sharex=True, figsize=(9, 10))
    memory.plot(minutes, [s.a_rss_mib for s in samples], label="MTA A")
    memory.plot(minutes, [s.b_rss_mib for s in samples], label="MTA B")
    memory.set_ylabel("RSS, MiB")
    memory.set_ylim(bottom=0)
    memory.legend()
    disk.plot(minutes, [s.a_disk_mib for s in samples], label="MTA A")
    disk.plot(minutes, [s.b_disk_mib for s in samples], label="MTA B")
    disk.set_ylabel("state directory, MiB")
    disk.set_ylim(bottom=0)
    disk.legend()
    rows.plot(minutes, [s.a_finished / 1000 for s in samples], label="finished, kept")
    rows.plot(minutes, [s.a_waiting / 1000 for s in samples], label="waiting")
    rows.set_ylabel("A's queue rows,\nthousands")
    rows.set_ylim(bottom=0)
    rows.legend()
    flow.plot(minutes, [s.submitted / 1000 for s in samples], label="submitted at A")
    flow.plot(minutes, [s.consumed / 1000 for s in samples], label="read at B")
    flow.set_ylabel("messages, thousands")
    flow.set_xlabel("minutes")
    flow.legend()
    figure.suptitle("aiox400 soak: A -> B, steady load")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Soak two MTAs with a steady stream and watch memory and disk.",
        epilog="Writes soak.csv (and soak.png with matplotlib) into --out.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--duration", type=float, default=3600, help="seconds of sending")
    parser.add_argument("--rate", type=float, default=150, help="messages a second")
    parser.add_argument("--size", type=int, default=1024, help="body octets")
    parser.add_argument("--flash-every", type=int, default=50, help="one flash in N")
    parser.add_argument("--sample", type=float, default=10, help="seconds between samples")
    parser.add_argument(
        "--window", type=float, default=600, help="seconds of [max_age] and [retention]"
    )
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for the results")
    parser.add_argument(
        "--from-csv",
        type=Path,
        help="print the table and draw the plot of an earlier run's soak.csv; run nothing",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.from_csv is not None:
        samples = read_csv(args.from_csv)
    else:
        print(f"CPU check before: {cpu_check():.2f} s", file=sys.stderr)
        samples = asyncio.run(run(args))
        print(f"CPU check after: {cpu_check():.2f} s", file=sys.stderr)
    last = samples[-1]
    print(table(samples))
    print()
    sending = [s for s in samples if s.seconds <= args.duration] or samples
    print(plateau(sending))
    if plot(samples, args.out / "soak.png"):
        print(f"\nplot: {args.out / 'soak.png'}")
    if last.consumed != last.submitted and args.from_csv is None:
        print(f"LOST: {last.submitted - last.consumed} message(s)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
