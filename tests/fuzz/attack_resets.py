"""Resets at every stage: a real conversation cut at an octet, then the connection reset.

A peer may drop its connection at any octet: before its CR, between the CR and the CN,
during the MTA-bind, in the middle of a TPDU of a transfer, while releasing.  Each
:class:`Cut` plays the initiator's side of one of our own conversations
(:func:`tests.fuzz.corpus.ours`: a bind accepted and refused, transfers in monologue and
two-way alternate, a release, an abort) up to one octet, then resets the connection
(``SO_LINGER`` 0 and close: the kernel sends RST, not FIN).  Half of the cuts wait for the
daemon's answer to each whole write first (so the reset meets an association that has
answered); the other half write and reset at once (so it meets one that is about to
answer, and its write finds the connection gone).

:func:`stage_cuts` gives the cuts at every boundary between writes and in the middle of
each write of one conversation; :class:`Resetter` draws cuts from ``(seed, index)``
alone.  :func:`run_resets` plays cuts to a real ``x400-mta`` (:class:`tests.fuzz.live
.Daemon`) and reports what they did to it: its log (lines, tracebacks), its memory, and
whether a valid transfer is delivered afterwards.

The long run (a table of what it found; exit status 1 when it found anything)::

    python -m tests.fuzz.attack_resets --cases 100000 [--seed 7] [--concurrency 16] [--keep DIR]

Public API::

    Cut(record, octets, wait)  .writes() .describe()
    stage_cuts(record) -> list[Cut]
    Resetter(records, seed).cut(index) -> Cut
    await reset_after(cut, port) -> local port
    await run_resets(cuts, directory, *, concurrency=8) -> ResetReport
    ResetReport  .problems(max_lines) -> list[str]   .table() -> str
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import re
import socket
import struct
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz.corpus import Recorded, ours
from tests.fuzz.live import (
    Daemon,
    LogReport,
    _delivered,
    _valid_transfer,
    read_log,
)
from tests.fuzz.mutate import DEFAULT_SEED

MAX_FAULT_LINES = 40
"""Lines a run may make per minute, binds and messages aside: a handful of conditions,
each logged once a minute (a line per reset without the rate limit)."""
ANSWER_WAIT = 0.3
"""Seconds a waiting cut gives the daemon to answer one write before the next."""
_ROUTINE = re.compile(r"bind from .* accepted|(received|delivered) message|: released$")
"""The lines of a bound peer's work: a bind, a message, a release."""
_LINGER_RESET = struct.pack("ii", 1, 0)
"""SO_LINGER on, 0 s: close sends RST and drops what was unsent."""


@dataclass(frozen=True, slots=True)
class Cut:
    """The first ``octets`` octets of ``record``'s initiator side, then a reset;
    ``wait``: the daemon's answer to each whole write is read before the next."""

    record: Recorded
    octets: int
    wait: bool

    def writes(self) -> list[bytes]:
        """The writes made before the reset (the last one cut short)."""
        out, left = [], self.octets
        for write in self.record.client:
            if left <= 0:
                break
            out.append(write[:left])
            left -= len(write)
        return out

    def describe(self) -> str:
        total = sum(len(w) for w in self.record.client)
        how = "waiting for answers" if self.wait else "at once"
        return f"{self.record.name}: reset after {self.octets} of {total} octets, {how}"


def stage_cuts(record: Recorded) -> list[Cut]:
    """Cuts of ``record`` at every stage: before anything, at each boundary between two
    writes (after the CR, the CN, each transfer, the release) and in the middle of each
    write (a TPDU cut short), each both waiting for answers and not."""
    octets = {0}
    offset = 0
    for write in record.client:
        octets.add(offset + len(write) // 2)
        offset += len(write)
        octets.add(offset)
    return [Cut(record, n, wait) for n in sorted(octets) for wait in (True, False)]


class Resetter:
    """Cuts at random octets of random conversations, each following from ``(seed, index)``
    alone; a conversation's messages numbered by the case (:meth:`Recorded.numbered`)."""

    def __init__(self, records: Sequence[Recorded], seed: int) -> None:
        self.records = list(records)
        self.seed = seed

    def cut(self, index: int) -> Cut:
        rng = random.Random(f"{self.seed}/{index}")
        record = rng.choice(self.records).numbered(index)
        total = sum(len(w) for w in record.client)
        return Cut(record, rng.randint(0, total), rng.random() < 0.5)


async def reset_after(cut: Cut, port: int) -> int:
    """Play ``cut`` to 127.0.0.1 ``port`` and reset the connection; our local port."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    local_port = int(writer.get_extra_info("sockname")[1])
    try:
        for data in cut.writes():
            writer.write(data)
            await writer.drain()
            if cut.wait and not await _answered(reader):
                break  # (the daemon closed first)
    except OSError:
        pass  # (the daemon closed first: the reset below is a no-op)
    finally:
        sock = writer.get_extra_info("socket")
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
        writer.transport.abort()
    return local_port


async def _answered(reader: asyncio.StreamReader) -> bool:
    """Read what the daemon answers within :data:`ANSWER_WAIT`; False at its EOF."""
    try:
        data = await asyncio.wait_for(reader.read(1 << 16), ANSWER_WAIT)
    except TimeoutError:
        return True
    return bool(data)


@dataclass(slots=True)
class ResetReport:
    """What a run of cuts did to the daemon."""

    cases: int = 0
    seconds: float = 0.0
    connect_errors: int = 0
    rss_before_kib: int = 0
    rss_after_kib: int = 0
    rss_peak_kib: int = 0
    delivered_after: bool = False
    daemon_up: bool = False
    exit_code: int | None = None
    log: LogReport = field(default_factory=LogReport)

    lines: list[str] = field(default_factory=list)
    """The log lines the cuts made (from the first cut to the transfer after them)."""

    @property
    def fault_lines(self) -> list[str]:
        """:attr:`lines` but those that record what a bound peer did (a bind accepted, a
        message received and delivered, a release): one per such event is the rule."""
        return [line for line in self.lines if not _ROUTINE.search(line)]

    def problems(self, *, max_lines: int) -> list[str]:
        """What the run found wrong (empty: nothing); ``max_lines``: of
        :attr:`fault_lines` per minute begun (each condition is logged once a minute)."""
        found = [f"traceback {t.error} after {t.message!r}" for t in self.log.tracebacks]
        found += [f"CRITICAL: {line}" for line in self.log.critical]
        faults = self.fault_lines
        allowed = max_lines * (1 + int(self.seconds // 60))
        if len(faults) > allowed:
            found.append(
                f"{len(faults)} log lines for {self.cases} resets in {self.seconds:.0f} s "
                f"(at most {allowed}), the first: {faults[:3]}"
            )
        if not self.delivered_after:
            found.append("the valid transfer after the resets was not delivered")
        if not self.daemon_up:
            found.append("the daemon is down after the resets")
        if self.exit_code not in (0, None):
            found.append(f"the daemon's exit code on SIGTERM: {self.exit_code}")
        return found

    def table(self) -> str:
        rate = self.cases / self.seconds if self.seconds else 0.0
        faults = len(self.fault_lines)
        rows = [
            ("cases (connections reset)", f"{self.cases} in {self.seconds:.1f} s"),
            ("connections/s", f"{rate:.1f}"),
            ("log lines: all / binds, messages aside", f"{len(self.lines)} / {faults}"),
            ("tracebacks", str(len(self.log.tracebacks))),
            ("lines by level", ", ".join(f"{k} {v}" for k, v in sorted(self.log.levels.items()))),
            (
                "RSS before / peak / after",
                f"{self.rss_before_kib} / {self.rss_peak_kib} / {self.rss_after_kib} KiB",
            ),
            ("valid transfer afterwards", "delivered" if self.delivered_after else "NOT delivered"),
        ]
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return -1


async def run_resets(
    cuts: Iterable[Cut], directory: Path, *, concurrency: int = 8, progress: bool = False
) -> ResetReport:
    """Start a daemon in ``directory``, play ``cuts`` to it, check it, stop it."""
    daemon = Daemon(directory)
    report = ResetReport()
    await daemon.start()
    try:
        await _valid_transfer(daemon, "warm-up")  # (the ASN.1 specification is compiled)
        report.rss_before_kib = daemon.rss_kib()
        first = len(_lines(daemon.log))
        queue = iter(cuts)
        started = time.monotonic()

        async def worker() -> None:
            for cut in queue:
                try:
                    await reset_after(cut, daemon.port)
                except OSError:
                    report.connect_errors += 1
                    continue
                report.cases += 1
                if progress and report.cases % 1000 == 0:
                    took = time.monotonic() - started
                    print(f"  {report.cases} resets, {took:.0f} s", flush=True)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        report.seconds = time.monotonic() - started
        local_id = f"resets-after-{report.cases}"
        with contextlib.suppress(Exception):
            await _valid_transfer(daemon, local_id)
        report.delivered_after = await _delivered(daemon, local_id)
        report.lines = _lines(daemon.log)[first:]
        report.rss_after_kib, report.rss_peak_kib = daemon.rss_kib(), _peak_kib(daemon.pid)
        report.daemon_up = daemon.running and await daemon.api_answers()
    finally:
        report.exit_code = await daemon.stop()
    report.log = read_log(daemon.log, {})
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.attack_resets", description=__doc__)
    parser.add_argument("--cases", type=int, default=10_000, help="connections reset")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the random seed")
    parser.add_argument("--concurrency", type=int, default=8, help="connections at once")
    parser.add_argument("--keep", type=Path, help="directory for the daemon (kept afterwards)")
    args = parser.parse_args(argv)
    directory = args.keep or Path(tempfile.mkdtemp(prefix="aiox400-resets-"))
    print(f"resets at every stage -> x400-mta in {directory}")
    resetter = Resetter(ours(), args.seed)
    cuts = (resetter.cut(index) for index in range(args.cases))
    report = asyncio.run(run_resets(cuts, directory, concurrency=args.concurrency, progress=True))
    print(report.table())
    problems = report.problems(max_lines=MAX_FAULT_LINES)
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
