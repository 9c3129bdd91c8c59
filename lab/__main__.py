"""``python -m lab``: the two-site DiffServ lab (docs/lab.md).

Builds three network namespaces (site A, a router shaping both directions with HTB, site
B), runs an ``x400-mta`` in each site, sends messages of given sizes and precedences from
A to B under each router profile, prints the Markdown tables, and removes everything it
created, also after Ctrl-C, SIGTERM or a failure.  Needs root.

With ``--hf-rate`` the link between site A and the router is an HF radio link
(:mod:`lab.hf`, run by :mod:`lab.wire`) instead of a veth pair; ``--hf-scenario`` runs the
HF scenario (:mod:`lab.hf_scenario`) instead of the DiffServ ones.

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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from client.api import ApiError
from lab import plots
from lab.hf import MAX_TRANSMISSION, QUEUE_PACKETS, RATE_MAX, RATE_MIN, TURNAROUND, HfSettings
from lab.hf_scenario import (
    HF_SIZES,
    render_hf,
    render_overtake,
    run_hf,
    run_overtake,
    summary_hf,
)
from lab.profiles import PROFILES
from lab.scenarios import FULL, QUICK, Results, Settings, render, run_scenarios, summary
from lab.sites import Acp142Link, Site, two_sites
from lab.topology import LabError, Topology, check_host
from lab.wire import nonnegative

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


def _kilobytes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(round(float(part) * 1000) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected sizes in KB, such as 1,10") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: sizes must be > 0")
    return sizes


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
    _hf_arguments(p)
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    p.add_argument(
        "--plots",
        type=Path,
        metavar="DIR",
        help="also draw throughput.png (b) and latency.png (d) into DIR, or with "
        "--hf-scenario link-use.png and its figures, link-use.json (needs matplotlib: "
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


def _hf_arguments(p: argparse.ArgumentParser) -> None:
    hf = p.add_argument_group(
        "HF wire",
        "an HF radio link between site A and the router instead of a veth pair (lab.hf: "
        "half duplex, turnarounds, bit errors, a modem queue each way; docs/lab.md)",
    )
    hf.add_argument(
        "--hf-rate", type=nonnegative(float, "bit/s"), metavar="BIT/S",
        help=f"its bit rate, {RATE_MIN:g} to {RATE_MAX:g}: turns the HF wire on "
        "(--hf-scenario: 9600)",
    )  # fmt: skip
    options = (
        ("--hf-turnaround", float, "S", TURNAROUND, "seconds before the other end transmits"),
        ("--hf-max-transmission", float, "S", MAX_TRANSMISSION, "longest transmission, s"),
        ("--hf-ber", float, "X", 0.0, "random bit error rate, such as 1e-6 or 1e-5; 0: clear"),
        ("--hf-seed", int, "N", 0, "of the bit errors"),
        ("--hf-framing", int, "OCTETS", 0, "octets the modem adds to each packet"),
        ("--hf-queue-packets", int, "N", QUEUE_PACKETS,
         "most packets waiting at each end, drop-tail; 0: no limit"),
        ("--hf-queue-octets", int, "N", 0, "most octets waiting at each end; 0: no limit"),
    )  # fmt: skip
    for name, kind, metavar, default, text in options:
        hf.add_argument(
            name, type=nonnegative(kind, metavar.lower()), metavar=metavar,
            help=f"{text} ({default:g})",
        )  # fmt: skip
    hf.add_argument(
        "--hf-scenario", type=_kilobytes, nargs="?", metavar="KB,..",
        const=tuple(HF_SIZES),
        help="run the HF scenario instead of the DiffServ ones: one message of random "
        "octets at a time from A to B, link use per size (1,10,100; add 1000 for 1 MB)",
    )  # fmt: skip
    hf.add_argument(
        "--hf-overtake", type=_kilobytes, metavar="KB", nargs="?", const=(100_000,),
        help="with --hf-scenario: then a routine message of KB random octets (100), and a "
        "flash one of 1 KB ten seconds later: does the flash one get there first?",
    )  # fmt: skip
    hf.add_argument(
        "--hf-transport", choices=("p1", "acp142"), default="p1",
        help="how the sites reach each other: P1 over RFC 1006 (p1, the default) or STANAG "
        "4406 Annex E over ACP 142 (acp142: UDP, paced to the HF rate)",
    )  # fmt: skip
    hf.add_argument(
        "--hf-pdu", type=nonnegative(int, "octets"), metavar="OCTETS",
        help="ACP 142's largest PDU (--hf-transport acp142; default: the wire's MTU less "
        "the IP and UDP headers)",
    )  # fmt: skip


HF_DEFAULT_RATE = 9600.0
"""Bit/s of the HF scenario when --hf-rate is not given."""


def hf_of(args: argparse.Namespace, p: argparse.ArgumentParser) -> HfSettings | None:
    """The HF wire the options ask for (None: none); exits 2 through ``p`` when they make
    no sense."""
    rate = args.hf_rate
    if rate is None and args.hf_scenario is not None:
        rate = HF_DEFAULT_RATE
    given = {
        key: getattr(args, f"hf_{key}")
        for key in ("turnaround", "max_transmission", "ber", "seed", "framing",
                    "queue_packets", "queue_octets")
        if getattr(args, f"hf_{key}") is not None
    }  # fmt: skip
    if rate is None:
        if given:
            p.error(f"--hf-{next(iter(given)).replace('_', '-')} needs --hf-rate")
        return None
    if args.delay:
        p.error("--delay and the HF wire both replace site A's link: give one")
    for key in ("queue_packets", "queue_octets"):
        if key in given:
            given[key] = int(given[key]) or None
    try:
        return HfSettings(rate=rate, **given)
    except ValueError as error:
        p.error(f"--hf: {error}")


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


async def _run(settings: Settings, hf: HfSettings | None, args: argparse.Namespace) -> str:
    with tempfile.TemporaryDirectory(prefix="aiox400-lab-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        async with Topology(settings.rate_kbit, args.delay, hf) as topology:
            _progress(f"namespaces {', '.join(topology.namespaces)}")
            if args.delay:
                rtt = await topology.round_trip()
                _progress(f"delay wire {args.delay:g} ms each way: round trip {rtt * 1000:.1f} ms")
            if hf is not None:
                _progress(f"HF wire {hf.rate:g} bit/s between site A and the router, MTU "
                          f"{topology.mtu}; the sites connect (a few round trips)")  # fmt: skip
            link = _acp142_link(topology, hf, args) if hf is not None else None
            async with two_sites(topology, folder, link) as (a, b):
                if hf is not None and args.hf_scenario is not None:
                    return await _hf_scenario(topology, a, b, hf, args)
                results = await run_scenarios(topology, a, b, settings, _progress)
        if args.json is not None:
            args.json.write_text(json.dumps(summary(results), indent=2) + "\n")
        if args.plots is not None:
            _plots(results, args.plots)
        return render(results, args.delay)


def _acp142_link(topology: Topology, hf: HfSettings, args: argparse.Namespace) -> Acp142Link | None:
    """ACP 142 between the sites, paced to the HF wire (None: P1, as always)."""
    if args.hf_transport != "acp142":
        return None
    pdu = args.hf_pdu or topology.mtu - IP_UDP_HEADERS
    pdu_seconds = (pdu + IP_UDP_HEADERS) * 8 / hf.rate
    return Acp142Link(
        rate=int(hf.rate),
        max_pdu_size=pdu,
        ack_delay=max(1.0, 3 * pdu_seconds),
        retransmission=max(30.0, 4 * hf.turnaround + 10 * pdu_seconds),
    )


IP_UDP_HEADERS = 28
"""What an IPv4 UDP datagram adds to its payload on the wire."""


async def _hf_scenario(
    topology: Topology, a: Site, b: Site, hf: HfSettings, args: argparse.Namespace
) -> str:
    started = datetime.now(UTC)
    messages = await run_hf(topology, a, b, args.hf_scenario, _progress)
    overtake = None
    if args.hf_overtake is not None:
        routine = args.hf_overtake[0]
        overtake = await run_overtake(topology, a, b, routine, 1_000, 10.0, _progress)
    summary_of = summary_hf(messages, hf, transport=args.hf_transport)
    if args.json is not None:
        args.json.write_text(json.dumps(summary_of, indent=2) + "\n")
    if args.plots is not None:
        _hf_plots(summary_of, args.plots)
    report = render_hf(messages, hf, started, transport=args.hf_transport)
    return report if overtake is None else report + "\n" + render_overtake(overtake, hf)


def _hf_plots(summary_of: dict[str, Any], folder: Path) -> None:
    """(h)'s figures as ``link-use.json`` in ``folder`` (to draw with other runs' later:
    ``python -m lab.plots``) and, with matplotlib, ``link-use.png`` from them."""
    figures = folder / "link-use.json"
    figures.write_text(json.dumps(summary_of, indent=2) + "\n")
    if not plots.available():
        _progress(f"plots skipped: matplotlib is not installed (pip install -e '.[plot]'); "
                  f"figures in {figures}")  # fmt: skip
        return
    _progress(f"plots: {plots.write_link_use([summary_of], folder / 'link-use.png')}, {figures}")


def _plots(results: Results, folder: Path) -> None:
    if not plots.available():
        _progress("plots skipped: matplotlib is not installed (pip install -e '.[plot]')")
        return
    written = plots.write_plots(results, folder)
    _progress(f"plots: {', '.join(str(path) for path in written) or 'nothing to draw'}")


async def _main(
    settings: Settings, hf: HfSettings | None, args: argparse.Namespace
) -> tuple[str | None, int]:
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
        return await _run(settings, hf, args), 0
    except asyncio.CancelledError:
        if not received:
            raise
        return None, _SIGNAL_EXIT[signal.Signals(received[0])]


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    hf = hf_of(args, p)
    settings = settings_of(args)
    try:
        check_host()
        prepare_outputs(args)
    except LabError as error:
        print(f"lab: {error}", file=sys.stderr)
        return 2
    try:
        report, code = asyncio.run(_main(settings, hf, args))
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
