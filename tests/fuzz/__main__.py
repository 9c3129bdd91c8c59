"""The long fuzz run, and the replay of one case: ``python -m tests.fuzz``.

    python -m tests.fuzz --cases 100000                 both levels, a table for each
    python -m tests.fuzz --cases 20000 --level live --concurrency 16 --keep /tmp/fuzz
    python -m tests.fuzz --seed 7 --case 1234 --side initiator     replay one case

The sans-I/O level plays each case to a fresh association (responder for the initiator's
side of a conversation, initiator for the responder's); the live level plays the
initiator's side to a real ``x400-mta`` (:mod:`tests.fuzz.live`).  The exit status is 1
when either found anything (the problems are listed), else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tests.fuzz.corpus import corpus
from tests.fuzz.drive import Failure, check, run_cases
from tests.fuzz.live import run_live
from tests.fuzz.mutate import DEFAULT_SEED, Case, Mutator

_SHOWN = 20


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--cases", type=int, default=10_000, help="cases per level and side")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--level", choices=["sans-io", "live", "both"], default="both")
    parser.add_argument("--concurrency", type=int, default=8, help="live connections at once")
    parser.add_argument("--keep", type=Path, help="directory for the daemon (kept afterwards)")
    parser.add_argument("--case", type=int, help="replay this case only (sans-I/O)")
    parser.add_argument("--side", choices=["initiator", "responder"], default="initiator")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    mutator = Mutator(corpus(require_shared=False), args.seed)
    if args.case is not None:
        return _replay(mutator.case(args.case, from_client=args.side == "initiator"))
    found = 0
    if args.level in ("sans-io", "both"):
        found += _sans_io(mutator, args.cases)
    if args.level in ("live", "both"):
        found += _live(mutator, args.cases, args.concurrency, args.keep)
    return 1 if found else 0


def _replay(case: Case) -> int:
    print(case.describe())
    for number, data in enumerate(case.reads):
        print(f"  read {number}: {data.hex()}")
    outcome = check(case)
    print(f"events: {outcome.events}")
    print(f"we wrote: {outcome.sent.hex()}")
    for problem in outcome.problems:
        print(f"PROBLEM: {problem}")
    if outcome.error:
        print(outcome.error)
    return 0 if outcome.ok else 1


def _sans_io(mutator: Mutator, cases: int) -> int:
    found = 0
    for from_client in (True, False):
        side = "initiator's side -> responder" if from_client else "responder's side -> initiator"
        started = time.monotonic()
        failures = run_cases(mutator, range(cases), from_client=from_client)
        seconds = time.monotonic() - started
        exceptions = sum(1 for failure in failures if failure.outcome.error)
        print(f"sans-I/O, {side}")
        print(f"  cases             {cases} in {seconds:.1f} s ({cases / seconds:.0f}/s)")
        print(f"  exceptions        {exceptions}")
        print(f"  broken rules      {len(failures) - exceptions}")
        _show(failures, mutator.seed)
        found += len(failures)
    return found


def _show(failures: list[Failure], seed: int) -> None:
    for failure in failures[:_SHOWN]:
        print(failure.describe(seed))
    if len(failures) > _SHOWN:
        print(f"... and {len(failures) - _SHOWN} more")


def _live(mutator: Mutator, cases: int, concurrency: int, keep: Path | None) -> int:
    directory = keep or Path(tempfile.mkdtemp(prefix="aiox400-fuzz-"))
    print(f"live, initiator's side -> x400-mta in {directory}")
    generated = (mutator.case(index) for index in range(cases))
    report = asyncio.run(run_live(generated, directory, concurrency=concurrency, progress=True))
    print(report.table())
    problems = report.problems()
    for problem in problems[:_SHOWN]:
        print(f"PROBLEM: {problem}")
    if len(problems) > _SHOWN:
        print(f"... and {len(problems) - _SHOWN} more")
    return len(problems)


if __name__ == "__main__":
    sys.exit(main())
