"""The lab's figures as PNG files, drawn with matplotlib when it is installed.

matplotlib is an optional extra (``pip install -e '.[plot]'``): it is imported only by
:func:`write_plots`, so the lab runs and prints its tables without it.

``throughput.png``  (b): per profile one panel, the routine (CS0) and flash (CS3)
                    messages' throughput over time: the TCP payload the router's shaper
                    let through toward B's listener for each (from a capture on its
                    egress) per interval between two readings (``SAMPLE_INTERVAL``), in
                    kbit/s.
``latency.png``     (d): the empirical CDF of the 1 KB flash messages' times from
                    submission to B's store, alone and under each profile.
``link-use.png``    (h), the HF scenario: link use against message size (log scale), one
                    line per run (transport and rate) from its figures as ``--json``
                    writes them (:func:`lab.hf_scenario.summary_hf`), and Isode's
                    published figures for ACP 142 over STANAG 5066 at 9,600 bit/s on a
                    clear channel (cited, not measured here).

``python -m lab.plots FIGURES.json .. --out FILE.png`` draws ``link-use.png`` from the
figures of several HF runs (each file one run's object, or a list of them), such as one
run per transport, or figures written by hand from a table.

Public API::

    available() -> bool                      whether matplotlib can be imported
    write_plots(results, folder) -> list[Path]   the files written
    write_link_use(runs, path) -> Path       (h)'s plot from the runs' figures
    read_runs(paths) -> list[dict]           the runs in HF figures files
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lab.hf_scenario import ISODE_9600, TRANSPORTS
from lab.scenarios import SAMPLE_INTERVAL, Results, Sample

COLOURS = {"routine": "tab:blue", "flash": "tab:red"}
DSCP_NAME = {"routine": "CS0", "flash": "CS3"}


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # (files only, no display)
    import matplotlib.pyplot as plt

    return plt


def write_plots(results: Results, folder: Path) -> list[Path]:
    """Draw what ``results`` has data for into ``folder``; the files written."""
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    if results.contention:
        written.append(_throughput(plt, results, folder / "throughput.png"))
    if results.latency or results.latency_alone:
        written.append(_latency(plt, results, folder / "latency.png"))
    return written


def _rates(samples: tuple[Sample, ...], precedence: str) -> tuple[list[float], list[float]]:
    """(middle of each interval, kbit/s in it) from consecutive cumulative readings."""
    times, rates = [], []
    for before, after in itertools.pairwise(samples):
        elapsed = after.seconds - before.seconds
        if elapsed <= 0:
            continue
        octets = after.octets[precedence] - before.octets[precedence]
        times.append((before.seconds + after.seconds) / 2)
        rates.append(octets * 8 / elapsed / 1000)
    return times, rates


def _throughput(plt: Any, results: Results, path: Path) -> Path:
    s = results.settings
    runs = results.contention
    figure, axes = plt.subplots(
        len(runs), 1, figsize=(7, 2.2 * len(runs) + 0.6), sharex=True, squeeze=False
    )
    for axis, run in zip(axes[:, 0], runs, strict=True):
        for precedence in ("routine", "flash"):
            times, rates = _rates(run.samples, precedence)
            size = s.routine_size if precedence == "routine" else s.flash_size
            axis.plot(
                times,
                rates,
                color=COLOURS[precedence],
                linewidth=1.2,
                label=f"{precedence} {size / 1e6:g} MB ({DSCP_NAME[precedence]})",
            )
        axis.axhline(s.rate_kbit, color="grey", linewidth=0.8, linestyle=":")
        axis.set_ylim(0, s.rate_kbit * 1.15)
        axis.set_ylabel("kbit/s")
        axis.set_title(f"profile {run.profile}", fontsize=10, loc="left")
        axis.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8, loc="upper right")
    axes[-1, 0].set_xlabel("seconds since the routine submission")
    figure.suptitle(
        f"(b) Leaving the router toward B, {s.rate_kbit} kbit/s link "
        f"(TCP payload per {SAMPLE_INTERVAL:g} s)",
        fontsize=11,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return path


def _latency(plt: Any, results: Results, path: Path) -> Path:
    s = results.settings
    figure, axis = plt.subplots(figsize=(7, 3.6))
    series = [("nothing else in flight", results.latency_alone)]
    series += [(f"{profile}, routine in flight", v) for profile, v in results.latency.items()]
    for name, values in series:
        if not values:
            continue
        ordered = sorted(v * 1000 for v in values)
        fractions = [(i + 1) / len(ordered) for i in range(len(ordered))]
        axis.step(ordered, fractions, where="post", label=f"{name} ({len(ordered)})")
    axis.set_xscale("log")
    axis.set_ylim(0, 1.02)
    axis.set_xlabel("ms from submission at A to B's store (log scale)")
    axis.set_ylabel("fraction of messages")
    axis.set_title(
        f"(d) Flash 1000 octets, {s.rate_kbit} kbit/s link, routine "
        f"{s.latency_bulk / 1e6:g} MB in flight",
        fontsize=11,
    )
    axis.grid(alpha=0.3, which="both")
    axis.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return path


# --- (h): link use over HF -----------------------------------------------------------------

TRANSPORT_NAMES = {"p1": "P1 over RFC 1006", "acp142": "ACP 142"}
TRANSPORT_MARKERS = {"p1": "s", "acp142": "o"}
ISODE_COLOUR = "grey"


def _run_label(run: dict[str, Any]) -> str:
    transport = str(run["transport"])
    hf = run["hf"]
    label = f"{TRANSPORT_NAMES.get(transport, transport)}, {float(hf['rate']):,.0f} bit/s"
    if float(hf.get("ber", 0)):
        label += f", BER {float(hf['ber']):g}"
    return label


def write_link_use(runs: Sequence[dict[str, Any]], path: Path) -> Path:
    """(h)'s plot: each run's link use (to the delivery) against its messages' sizes, and
    Isode's ACP 142 figures at 9,600 bit/s, clear channel; ``runs`` as
    :func:`lab.hf_scenario.summary_hf` gives them."""
    if not runs or not any(run["messages"] for run in runs):
        raise ValueError("no HF figures to draw")
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(7, 4))
    for run in runs:
        ordered = sorted(run["messages"], key=lambda m: int(m["size"]))
        axis.plot(
            [int(m["size"]) / 1000 for m in ordered],
            [100 * float(m["link_use"]) for m in ordered],
            marker=TRANSPORT_MARKERS.get(str(run["transport"]), "^"),
            linewidth=1.4,
            label=_run_label(run),
        )
    isode = sorted((size, figures[0]) for (size, ber), figures in ISODE_9600.items() if ber == 0)
    axis.plot(
        [size / 1000 for size, _ in isode],
        [use for _, use in isode],
        color=ISODE_COLOUR,
        linestyle="--",
        marker="x",
        linewidth=1.2,
        label="Isode: ACP 142 over STANAG 5066, 9,600 bit/s (cited)",
    )
    axis.set_xscale("log")
    sizes = sorted(
        {int(m["size"]) for run in runs for m in run["messages"]} | {s for s, _ in isode}
    )
    axis.set_xticks([size / 1000 for size in sizes], [_size_label(size) for size in sizes])
    axis.minorticks_off()
    axis.set_ylim(0, 100)
    axis.set_xlabel("payload (random octets; log scale)")
    axis.set_ylabel("link use, % (to the delivery)")
    axis.set_title("(h) One message at a time over the HF wire", fontsize=11)
    axis.grid(alpha=0.3, which="both")
    axis.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return path


def _size_label(octets: int) -> str:
    for unit, scale in (("MB", 1_000_000), ("KB", 1_000)):
        if octets >= scale:
            return f"{octets / scale:g} {unit}"
    return f"{octets} octets"


def read_runs(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """The HF runs in ``paths``: each file one run's figures or a list of them (ValueError
    when a file holds neither)."""
    runs: list[dict[str, Any]] = []
    for path in paths:
        data = json.loads(path.read_text())
        found = data if isinstance(data, list) else [data]
        for run in found:
            if not isinstance(run, dict) or not {"transport", "hf", "messages"} <= run.keys():
                raise ValueError(f"{path}: not the HF scenario's figures (--json)")
            if run["transport"] not in TRANSPORTS:
                raise ValueError(f"{path}: unknown transport {run['transport']!r}")
        runs += found
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m lab.plots",
        description="Draw the HF scenario's link use against message size from the "
        "figures of one or more runs (python -m lab --hf-scenario --json FILE).",
    )
    p.add_argument("figures", nargs="+", type=Path, metavar="FIGURES.json")
    p.add_argument("--out", type=Path, required=True, metavar="FILE.png")
    args = p.parse_args(argv)
    if not available():
        print("lab.plots: matplotlib is not installed (pip install -e '.[plot]')", file=sys.stderr)
        return 2
    try:
        runs = read_runs(args.figures)
        write_link_use(runs, args.out)
    except (OSError, ValueError) as error:
        print(f"lab.plots: {error}", file=sys.stderr)
        return 2
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
