"""Churn benchmark: a real peer's transfers while others churn idle connections or guess.

    python benchmarks/churn.py [--seconds 20] [--seed 29] [--tree DIR]

One ``x400-mta`` process with the default ``[limits]`` (:class:`benchmarks.flood.Daemon`:
one listener, one peer, MTA-A at 127.0.0.1, that this script plays).  Phases:

* quiet, then churn from one address (127.0.0.2) and from two hundred (127.0.4.x): the
  attacker of :mod:`tests.fuzz.attack_churn` keeps 32 idle connections, each replaced
  within 0.5-2.5 s, while MTA-A binds and transfers a 1 KB message over and over for
  ``--seconds``, from its configured host (127.0.0.1) and, in a second run, from an
  address that is not (127.0.0.9, a stranger to the daemon): the share of transfers
  served and their latency (median, worst);
* guessing: binds with a wrong password from 1,000 addresses (127.0.6.1 ...), 32 at
  once, for ``--seconds``: how many were answered, and the log lines they made.

``--tree DIR`` runs ``x400-mta`` from another checkout (figures of an
earlier commit).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.flood import A_NAME, A_PASSWORD, Daemon, Row, _since, own_descriptors  # noqa: E402
from mta.link import LinkError  # noqa: E402
from p1.association.mtabind import MTABindArgument  # noqa: E402
from tests.fuzz.attack_churn import (  # noqa: E402
    SOURCES_MANY,
    SOURCES_ONE,
    Churn,
    Served,
    bind_and_transfer,
)

A_BINDS = MTABindArgument(initiator_name=A_NAME, password=A_PASSWORD)
GUESS = MTABindArgument(initiator_name=A_NAME, password="guess")
GUESSERS = [f"127.0.{6 + n // 250}.{1 + n % 250}" for n in range(1000)]
STRANGER = "127.0.0.9"


async def peer_for(port: int, source: str, seconds: float) -> Served:
    """MTA-A from ``source``, transfer after transfer for ``seconds``."""
    served = Served()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            served.latencies.append(await bind_and_transfer(port, source, A_BINDS, 10.0))
            served.served += 1
        except (LinkError, OSError, TimeoutError) as error:
            served.failed += 1
            served.errors.append(type(error).__name__)
        await asyncio.sleep(0.1)
    return served


def _figures(served: Served) -> str:
    total = served.served + served.failed
    if not served.served:
        return f"0 of {total}"
    return (
        f"{served.served} of {total} ({served.share:.0%}); "
        f"{served.median * 1000:.0f} / {served.worst * 1000:.0f} ms"
    )


async def churn_phase(
    daemon: Daemon, name: str, sources: Sequence[str], args: argparse.Namespace
) -> Row:
    figures: dict[str, str] = {}
    before = daemon.log_lines()
    for source, who in (("127.0.0.1", "its configured host"), (STRANGER, "another address")):
        stop = asyncio.Event()
        attacker = None
        if sources:
            churn = Churn(daemon.port, sources, seed=args.seed)
            attacker = asyncio.create_task(churn.run(stop))
            await asyncio.sleep(3.0)
        try:
            served = await peer_for(daemon.port, source, args.seconds)
        finally:
            stop.set()
            done = await attacker if attacker is not None else None
        figures[f"MTA-A from {who}: served; median / worst"] = _figures(served)
        if done is not None:
            figures[f"attacker (MTA-A from {who}): opened, cut short"] = (
                f"{done.opened}, {done.cut_short}"
            )
    lines, tracebacks, _ = _since(daemon, before)
    figures["log lines / tracebacks"] = f"{lines} / {tracebacks}"
    return Row(name, figures)


async def guess(port: int, source: str) -> bool:
    """One wrong bind from ``source``; whether it was answered (refused)."""
    try:
        await bind_and_transfer(port, source, GUESS, 60.0)
    except LinkError:
        return True
    except (OSError, TimeoutError):
        return False
    return False


async def guessing_phase(daemon: Daemon, args: argparse.Namespace) -> Row:
    before = daemon.log_lines()
    answered = 0
    queue = list(GUESSERS)
    started = time.monotonic()
    deadline = started + args.seconds

    async def guesser() -> None:
        nonlocal answered
        while queue and time.monotonic() < deadline:
            source = queue.pop()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.1, deadline - time.monotonic())):
                    refused = await guess(daemon.port, source)
                answered += refused

    await asyncio.gather(*(guesser() for _ in range(32)))
    elapsed = time.monotonic() - started
    lines, tracebacks, _ = _since(daemon, before)
    real = await peer_for(daemon.port, "127.0.0.1", 2.0)
    return Row(
        "guessing from 1,000 addresses",
        {
            "wrong binds answered": f"{answered} in {elapsed:.1f} s ({answered / elapsed:.1f}/s)",
            "log lines / tracebacks": f"{lines} / {tracebacks}",
            "MTA-A from its configured host after: served; median / worst": _figures(real),
        },
    )


async def run(args: argparse.Namespace) -> list[Row]:
    with tempfile.TemporaryDirectory() as folder:
        daemon = Daemon(Path(folder), 4096, args.tree)
        daemon.start()
        try:
            await daemon.ready()
            await peer_for(daemon.port, "127.0.0.1", 0.5)  # (the codec loads at the first bind)
            rows = [await churn_phase(daemon, "quiet", (), args)]
            rows.append(await churn_phase(daemon, "churn from one address", SOURCES_ONE, args))
            rows.append(await churn_phase(daemon, "churn from 200 addresses", SOURCES_MANY, args))
            rows.append(await guessing_phase(daemon, args))
        finally:
            daemon.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each scenario (20)")
    parser.add_argument("--seed", type=int, default=29, help="the attacker's seed (29)")
    parser.add_argument(
        "--tree", type=Path, default=None, help="run the x400-mta of another checkout"
    )
    args = parser.parse_args()
    with own_descriptors(2048):
        rows = asyncio.run(run(args))
    print("| phase | figure | value |")
    print("|---|---|---:|")
    for row in rows:
        for name, value in row.figures.items():
            print(f"| {row.phase} | {name} | {value} |")


if __name__ == "__main__":
    main()
