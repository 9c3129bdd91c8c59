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

Public API::

    available() -> bool                      whether matplotlib can be imported
    write_plots(results, folder) -> list[Path]   the files written
"""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Any

from lab.scenarios import SAMPLE_INTERVAL, Results, Sample

COLOURS = {"routine": "tab:blue", "flash": "tab:red"}
DSCP_NAME = {"routine": "CS0", "flash": "CS3"}


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def write_plots(results: Results, folder: Path) -> list[Path]:
    """Draw what ``results`` has data for into ``folder``; the files written."""
    import matplotlib

    matplotlib.use("Agg")  # (files only, no display)
    import matplotlib.pyplot as plt

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
