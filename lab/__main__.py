"""``python -m lab``: the two-site DiffServ lab (docs/lab.md).

Builds three network namespaces (site A, a router shaping both directions with HTB, site
B), runs an ``x400-mta`` in each site, sends messages of given sizes and precedences from
A to B under each router profile, prints the Markdown tables, and removes everything it
created, also after Ctrl-C, SIGTERM or a failure.  Needs root.

Exit codes: 0 done; 1 a scenario failed (the message says which); 2 bad arguments, not
root, or a missing tool or kernel feature (the message says what to install); 130 / 143
interrupted by SIGINT / SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from client.api import ApiError
from lab import plots
from lab.profiles import PROFILES
from lab.scenarios import FULL, QUICK, Results, Settings, render, run_scenarios, summary
from lab.sites import two_sites
from lab.topology import LabError, Topology, check_host

_SIGNAL_EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(float(part) * 1e6) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected sizes in MB, such as 1,10") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: sizes must be > 0")
    return sizes


def _delay(text: str) -> float:
    try:
        delay = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected milliseconds") from None
    if not 0 <= delay <= 10_000:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 0 to 10000 ms")
    return delay


def _profiles(text: str) -> tuple[str, ...]:
    if text == "none":
        return ()
    names = tuple(text.split(","))
    unknown = [name for name in names if name not in PROFILES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown profile(s) {', '.join(unknown)}: expected some of {', '.join(PROFILES)}"
        )
    return names


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m lab",
        description=(
            "The two-site DiffServ lab: two x400-mta daemons in network namespaces joined "
            "by a router that shapes both directions with HTB, the 2007 NATO/Isode field "
            "test's round 2 reproduced on one machine. Needs root; removes everything it "
            "creates. Defaults: the full run at 512 kbit/s, scenarios (a) to (d) "
            "(about 22 minutes)."
        ),
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="the CI-sized run: 4000 kbit/s, 0.3 MB and 3 MB unloaded, 3 MB routine + "
        "0.3 MB flash 1 s later, (a), (b) and (d) (a little over a minute); other options "
        "override its values",
    )
    p.add_argument("--rate", type=int, metavar="KBIT", help="shaped link rate, kbit/s (512)")
    p.add_argument(
        "--unloaded", type=_sizes, metavar="MB,..", help="unloaded routine sizes, MB (1,10)"
    )
    p.add_argument("--routine", type=float, metavar="MB", help="routine message size, MB (10)")
    p.add_argument("--flash", type=float, metavar="MB", help="flash message size, MB (1)")
    p.add_argument(
        "--flash-delay",
        type=float,
        metavar="S",
        help="seconds from the routine submission to the flash one (5)",
    )
    p.add_argument(
        "--profiles",
        type=_profiles,
        metavar="P,..",
        help=f"router profiles of scenarios (b) and (d), of {', '.join(PROFILES)}, or "
        "none (fifo,strict,weighted)",
    )
    p.add_argument(
        "--contention",
        action=argparse.BooleanOptionalAction,
        help="run scenario (b), routine with flash under each profile (yes)",
    )
    p.add_argument(
        "--load",
        type=int,
        metavar="KBIT",
        help="rate of the CS1 UDP load of scenario (c) under the reserved profile; 0: no "
        "scenario (c) (1000; --quick: 0)",
    )
    p.add_argument(
        "--latency",
        type=int,
        metavar="N",
        help="most 1 KB flash samples of scenario (d) per profile; 0: no scenario (d) "
        "(20; --quick: 15)",
    )
    p.add_argument(
        "--delay",
        type=_delay,
        metavar="MS",
        default=0.0,
        help="one-way delay between site A and the router, each direction, by a user-space "
        "wire of two TUN devices (0: none, a veth pair)",
    )
    p.add_argument(
        "--setup",
        type=int,
        metavar="N",
        help="1 KB flash samples of scenario (e) per flash slot mode (permanent, then "
        "on-demand with a new connection each); 0: no scenario (e) (0); meant with --delay",
    )
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    p.add_argument(
        "--plots",
        type=Path,
        metavar="DIR",
        help="also draw throughput.png (b) and latency.png (d) into DIR (needs matplotlib: "
        "pip install -e '.[plot]'; without it the tables only, and one line saying so)",
    )
    p.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="keep the daemons' configurations, logs and stores in DIR (default: a "
        "temporary folder, removed)",
    )
    return p


def settings_of(args: argparse.Namespace) -> Settings:
    base = QUICK if args.quick else FULL
    changes: dict[str, object] = {}
    if args.rate is not None:
        changes["rate_kbit"] = args.rate
    if args.unloaded is not None:
        changes["unloaded_sizes"] = args.unloaded
    if args.routine is not None:
        changes["routine_size"] = int(args.routine * 1e6)
    if args.flash is not None:
        changes["flash_size"] = int(args.flash * 1e6)
    if args.flash_delay is not None:
        changes["flash_delay"] = args.flash_delay
    if args.profiles is not None:
        changes["profiles"] = args.profiles
    if args.contention is not None:
        changes["contention"] = args.contention
    if args.load is not None:
        changes["load_kbit"] = args.load
    if args.latency is not None:
        changes["latency_samples"] = args.latency
    if args.setup is not None:
        changes["setup_samples"] = args.setup
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def prepare_outputs(args: argparse.Namespace) -> None:
    """Make the folders of ``--json``, ``--plots`` and ``--keep`` before the run, so a bad
    path is said at once (LabError) rather than after many minutes of measuring."""
    folders = [(option, getattr(args, option)) for option in ("plots", "keep")]
    if args.json is not None:
        folders.append(("json", args.json.parent))
    for option, folder in folders:
        if folder is None:
            continue
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise LabError(f"--{option}: cannot make {folder}: {error.strerror}") from None
        if not os.access(folder, os.W_OK):
            raise LabError(f"--{option}: {folder} is not writable")


def _progress(text: str) -> None:
    print(f"lab: {text}", file=sys.stderr, flush=True)


async def _run(settings: Settings, args: argparse.Namespace) -> str:
    with tempfile.TemporaryDirectory(prefix="aiox400-lab-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        async with Topology(settings.rate_kbit, args.delay) as topology:
            _progress(f"namespaces {', '.join(topology.namespaces)}")
            if args.delay:
                rtt = await topology.round_trip()
                _progress(f"delay wire {args.delay:g} ms each way: round trip {rtt * 1000:.1f} ms")
            async with two_sites(topology, folder) as (a, b):
                results = await run_scenarios(topology, a, b, settings, _progress)
        if args.json is not None:
            args.json.write_text(json.dumps(summary(results), indent=2) + "\n")
        if args.plots is not None:
            _plots(results, args.plots)
        return render(results, args.delay)


def _plots(results: Results, folder: Path) -> None:
    if not plots.available():
        _progress("plots skipped: matplotlib is not installed (pip install -e '.[plot]')")
        return
    written = plots.write_plots(results, folder)
    _progress(f"plots: {', '.join(str(path) for path in written) or 'nothing to draw'}")


async def _main(settings: Settings, args: argparse.Namespace) -> tuple[str | None, int]:
    """The report and 0, or None and the exit code of the signal that stopped the run."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def stop(number: int) -> None:
        received.append(number)
        task.cancel()

    for number in _SIGNAL_EXIT:
        loop.add_signal_handler(number, stop, number)
    try:
        return await _run(settings, args), 0
    except asyncio.CancelledError:
        if not received:
            raise
        return None, _SIGNAL_EXIT[signal.Signals(received[0])]


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    settings = settings_of(args)
    try:
        check_host()
        prepare_outputs(args)
    except LabError as error:
        print(f"lab: {error}", file=sys.stderr)
        return 2
    try:
        report, code = asyncio.run(_main(settings, args))
    except LabError as error:
        print(f"lab: {error}", file=sys.stderr)
        return 2 if "lacks" in str(error) else 1
    except ApiError as error:
        print(f"lab: an MTA refused a request: {error}", file=sys.stderr)
        return 1
    if report is None:
        print("lab: interrupted; everything it created is removed", file=sys.stderr)
        return code
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
