"""Many-recipients benchmark: one ``x400-mta`` (MTA-B) taking in a message for thousands of
its users, and what it costs the others.

    python benchmarks/recipients.py [--users 10000] [--body 630000] [--tree DIR]
    python benchmarks/recipients.py --fuzz 50 --seed 7      the attacker's long run

MTA-A (this script) transfers one message over the spool's threshold whose envelope and
heading name ``--users`` users of MTA-B.  Half a second after that transfer began, a
one-recipient transfer on a second association and the local API's ``status`` are timed.
Reported: the large transfer's time (bind to release), the other transfer's and
``status``'s latency, the disk the state folder grew by, the spool files and content rows
made, and the longest log line.

``--fuzz N`` plays N messages drawn by :func:`tests.fuzz.attack_many_recipients.cases`
from ``--seed`` (up to ``--users`` recipients each) and prints what it found (exit 1 if
anything).  ``--tree DIR`` runs ``x400-mta`` from another checkout (for the
figures of an earlier commit).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz.attack_many_recipients import (  # noqa: E402
    answers,
    cases,
    daemon_config,
    free_port,
    many_recipient_apdu,
    one_recipient_apdu,
    run_attack,
    transfer,
    user_name,
    wait_answering,
)
from tests.fuzz.live import daemon_module  # noqa: E402


def _du(folder: Path) -> int:
    """Octets of the files under ``folder``."""
    return sum(
        (Path(root) / name).stat().st_size for root, _, names in os.walk(folder) for name in names
    )


async def _timed(what: asyncio.Future[None] | asyncio.Task[None]) -> float:
    started = time.monotonic()
    await what
    return time.monotonic() - started


async def one_message(args: argparse.Namespace, directory: Path) -> dict[str, str]:
    port = free_port()
    config = daemon_config(directory, port, free_port())
    command = [sys.executable, "-m", daemon_module(args.tree), "--config", str(config)]
    environment = dict(os.environ)
    if args.tree is not None:
        environment["PYTHONPATH"] = str(args.tree)
    log = directory / "mta.log"
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=out, cwd=directory, env=environment)
    try:
        control = directory / "state" / "control.sock"
        await wait_answering(control, process)
        await transfer(port, one_recipient_apdu("warm-up", user_name(99_998)))
        before = _du(directory / "state")
        apdu = many_recipient_apdu("bench", [user_name(n) for n in range(args.users)], args.body)
        started = time.monotonic()
        large = asyncio.create_task(transfer(port, apdu, timeout=3600))
        await asyncio.sleep(0.5)
        other = await _timed(
            asyncio.ensure_future(transfer(port, one_recipient_apdu("o", user_name(99_999))))
        )
        status_started = time.monotonic()
        await answers(control)
        status = time.monotonic() - status_started
        await large
        took = time.monotonic() - started
    finally:
        process.terminate()
        process.wait(timeout=600)
    state = directory / "state"
    with sqlite3.connect(state / "aiox400.db") as database:
        tables = {row[0] for row in database.execute("SELECT name FROM sqlite_master")}
        contents = (
            database.execute("SELECT count(*) FROM contents").fetchone()[0]
            if "contents" in tables
            else "-"
        )
    spool = state / "aiox400.db-apdus"
    files = sum(1 for path in spool.iterdir() if path.stat().st_size)
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    return {
        "APDU octets": f"{len(apdu):,}",
        "transfer (s)": f"{took:.1f}",
        "other transfer (s)": f"{other:.2f}",
        "status (s)": f"{status:.2f}",
        "disk grew (MB)": f"{(_du(state) - before) / 1e6:,.1f}",
        "spool files": f"{files:,}",
        "content rows": str(contents),
        "longest log line": f"{max(len(line) for line in lines):,}",
    }


async def main(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="aiox400-recipients-") as folder:
        if args.fuzz:
            attack = cases(args.seed, args.fuzz, most=args.users)
            started = time.monotonic()
            outcome = await run_attack(Path(folder), attack)
            print(f"{args.fuzz} messages, seed {args.seed}, up to {args.users} recipients: ")
            print(f"{time.monotonic() - started:.1f} s; {outcome}")
            for problem in outcome.problems():
                print("PROBLEM:", problem)
            return 1 if outcome.problems() else 0
        for name, value in (await one_message(args, Path(folder))).items():
            print(f"{name:20} {value}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--users", type=int, default=10_000, help="local users the large message names (10000)"
    )
    parser.add_argument(
        "--body", type=int, default=630_000, help="octets of its body text (630000)"
    )
    parser.add_argument(
        "--tree", type=Path, help="run the x400-mta of another checkout (a figure before a change)"
    )
    parser.add_argument(
        "--fuzz", type=int, default=0, help="instead, N messages of the many-recipients attacker"
    )
    parser.add_argument("--seed", type=int, default=7, help="the attacker's seed (7)")
    sys.exit(asyncio.run(main(parser.parse_args())))
