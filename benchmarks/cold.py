"""Cold-start benchmark: the same work, back to back and after a pause.

    python benchmarks/cold.py [--samples 100]       (or: make bench)

The work is the codec's share of one flash message: encode a 1 KB STANAG 4406 message
(its P772 content, then the MTS-APDU: benchmarks/samples.py), then decode the APDU and
its heading.  It
is timed back to back (hot), then once after each pause: asleep for 1, 10 and 100 ms (the
relay benchmark sends its idle flash messages 100 ms apart), and busy for 100 ms (a loop
that reads the clock, touching almost no memory).

On a shared virtual machine the caches the work needs are lost while the process
pauses, whether it sleeps or spins (to the host's other tenants, or as the virtual CPU
moves), and the first run after the pause pays for them: an idle MTA's latency is that
of its cold path, which this table prices for this machine.  Nothing is written to disk
and no daemon runs; the garbage collector is off while timing.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import samples  # noqa: E402
from p1.ipms.ipm import decode_content_heading  # noqa: E402
from p1.mts.envelope import Message, decode_mts_apdu  # noqa: E402

WARM_UP = 300
"""Runs before anything is timed (imports, caches of the interpreter)."""


def work() -> None:
    """Encode a 1 KB flash message, then decode it and its heading."""
    apdu = decode_mts_apdu(samples.message_bytes(1024))
    assert isinstance(apdu, Message)
    decode_content_heading(apdu.content, apdu.envelope.content_type)


def timed() -> float:
    started = time.perf_counter()
    work()
    return (time.perf_counter() - started) * 1000


def asleep(seconds: float) -> Callable[[], None]:
    return lambda: time.sleep(seconds)


def busy(seconds: float) -> Callable[[], None]:
    def spin() -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    return spin


def after(pause: Callable[[], None], samples_: int) -> list[float]:
    """``samples_`` timings of the work, each after ``pause``."""
    timings = []
    for _ in range(samples_):
        pause()
        timings.append(timed())
    return timings


def main(args: argparse.Namespace) -> None:
    for _ in range(WARM_UP):
        work()
    gc.disable()  # (a collection landing in one row's runs would be timed as that row's)
    hot = [timed() for _ in range(args.samples)]
    rows = [
        ("back to back", hot),
        ("after 1 ms asleep", after(asleep(0.001), args.samples)),
        ("after 10 ms asleep", after(asleep(0.01), args.samples)),
        ("after 100 ms asleep", after(asleep(0.1), args.samples)),
        ("after 100 ms busy", after(busy(0.1), args.samples)),
    ]
    base = statistics.median(hot)
    print(f"aiox400 cold-start benchmark (Python {sys.version.split()[0]}, {args.samples} samples)")
    print()
    print("| work timed | p50 | p90 | p50 / hot p50 |")
    print("|---|---:|---:|---:|")
    for label, timings in rows:
        ordered = sorted(timings)
        p50, p90 = statistics.median(ordered), ordered[int(0.9 * len(ordered)) - 1]
        print(f"| {label} | {p50 * 1000:.0f} us | {p90 * 1000:.0f} us | {p50 / base:.1f}x |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=100, help="timings per row")
    main(parser.parse_args())
