"""The DiffServ lab's quick run (``python -m lab --quick``), as root: the router's profiles
order the flash message's goodput under routine load as they should, and nothing the lab
created remains afterwards, also when it is interrupted; its plots are written (when
matplotlib is installed); the delay wire adds its delay to the round trip, and a new
connection costs the on-demand flash slot round trips the permanent one does not pay.

Orderings with margins, never absolute times: the machine may be shared.  Without root or
the tools the lab needs, the tests skip saying so; with ``AIOX400_REQUIRE_LAB=1`` they fail
instead.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.lab.as_root import (
    LAB,
    ROOT,
    assert_nothing_left,
    lab_namespaces,
    require_lab,
    run_lab,
    veths,
    wires,
)

pytestmark = pytest.mark.slow  # root, network namespaces, about a minute


@pytest.fixture(autouse=True)
def _lab_possible() -> None:
    require_lab()


Quick = tuple[dict[str, Any], str, Path]


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, Path]:
    """The figures, the report and the plots' folder of one quick run (a little over a
    minute)."""
    folder = tmp_path_factory.mktemp("lab")
    figures = folder / "quick.json"
    done = run_lab(["--quick", "--json", str(figures), "--plots", str(folder / "plots")], 600)
    if importlib.util.find_spec("matplotlib") is None:
        skipped = [line for line in done.stderr.splitlines() if "plots skipped" in line]
        assert len(skipped) == 1, done.stderr
    return json.loads(figures.read_text()), done.stdout, folder / "plots"


def test_strict_priority_gives_flash_well_above_weighted(
    quick: Quick,
) -> None:
    runs = quick[0]["contention"]
    assert runs["strict"]["flash_pct"] > runs["weighted"]["flash_pct"] + 8


def test_weighted_gives_flash_well_above_fifo(quick: Quick) -> None:
    runs = quick[0]["contention"]
    assert runs["weighted"]["flash_pct"] > runs["fifo"]["flash_pct"] + 25


def test_small_flash_latency_under_bulk_is_far_lower_with_priority_than_fifo(
    quick: Quick,
) -> None:
    latency = quick[0]["latency"]
    fifo_p50 = sorted(latency["fifo"])[len(latency["fifo"]) // 2]
    for profile in ("strict", "weighted"):
        p50 = sorted(latency[profile])[len(latency[profile]) // 2]
        assert p50 * 3 < fifo_p50, (profile, p50, fifo_p50)


def test_each_small_flash_time_is_split_at_the_router(quick: Quick) -> None:
    """Every (d) sample was found in the router's captures, its parts add up to its time,
    it carried at least its body, and under fifo the wait is on the link, not in the MTAs."""
    figures = quick[0]
    parts = figures["latency_parts"]
    assert set(parts) == {"alone", *figures["latency"]}
    assert len(parts["alone"]) == len(figures["latency_alone"])
    for profile, values in figures["latency"].items():
        assert len(parts[profile]) == len(values), profile
    for split in (s for samples in parts.values() for s in samples):
        assert split["mta_a"] + split["link"] + split["mta_b"] == pytest.approx(
            split["total"], abs=1e-3
        )
        assert split["mta_a"] > 0 and split["mta_b"] > 0 and split["link"] >= 0
        assert split["link_octets"] > 1000 and split["packets"] >= 1
    fifo = sorted(parts["fifo"], key=lambda s: s["total"])[len(parts["fifo"]) // 2]
    assert fifo["link"] > fifo["mta_a"] + fifo["mta_b"], fifo
    assert "(d) Where the time goes" in quick[1]


def test_unloaded_goodput_is_most_of_the_link(quick: Quick) -> None:
    figures = quick[0]
    largest = max(figures["unloaded"], key=lambda t: t["size"])
    assert largest["kbit_s"] > 0.8 * figures["rate_kbit"]
    assert largest["kbit_s"] <= figures["rate_kbit"]  # (the shaper holds)


def test_the_report_has_both_tables(quick: Quick) -> None:
    report = quick[1]
    assert "(a) Unloaded" in report and "(b) Routine" in report and "(d) Flash" in report
    for profile in ("fifo", "strict", "weighted"):
        assert f"| {profile} |" in report


def test_the_quick_run_draws_its_plots(quick: Quick) -> None:
    if importlib.util.find_spec("matplotlib") is None:
        why = "matplotlib is not installed (pip install -e '.[plot]')"
        if os.environ.get("AIOX400_REQUIRE_LAB") == "1":
            pytest.fail(why)
        pytest.skip(why)
    for name in ("throughput.png", "latency.png"):
        png = quick[2] / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert png.stat().st_size > 5000, name


def test_the_throughput_samples_see_both_messages(quick: Quick) -> None:
    """B received at least the body octets of each message while it was being sampled."""
    figures = quick[0]
    for profile, run in figures["contention"].items():
        last = run["samples"][-1]["octets"]
        assert last["routine"] >= run["routine"]["size"], profile
        assert last["flash"] >= run["flash"]["size"], profile


@pytest.fixture(scope="module")
def delayed(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    """A run with a 20 ms delay wire, scenario (e) only (and the smallest (a))."""
    figures = tmp_path_factory.mktemp("lab") / "delayed.json"
    done = run_lab(
        [
            "--quick", "--delay", str(DELAY_MS), "--setup", "5", "--no-contention",
            "--latency", "0", "--unloaded", "0.05", "--flash", "0.05",
            "--json", str(figures),
        ],
        300,
    )  # fmt: skip
    return json.loads(figures.read_text()), done.stdout


DELAY_MS = 20


def test_the_delay_wire_adds_twice_its_delay_to_the_round_trip(
    delayed: tuple[dict[str, Any], str],
) -> None:
    round_trip = delayed[0]["round_trip"] * 1000
    assert 2 * DELAY_MS <= round_trip < 2 * DELAY_MS * 1.5, round_trip


def test_a_new_connection_costs_round_trips(delayed: tuple[dict[str, Any], str]) -> None:
    """The on-demand slot's median is at least two round trips above the permanent one's
    (the protocol says three: TCP, transport, session with the bind)."""
    figures = delayed[0]
    setup = figures["setup"]
    extra = sorted(setup["on-demand"])[2] - sorted(setup["permanent"])[2]
    assert extra > 2 * figures["round_trip"], setup
    assert "(e) Flash" in delayed[1]


@pytest.mark.parametrize(
    "options",
    [[], ["--delay", "20"], ["--hf-rate", "57600", "--hf-turnaround", "0.5"]],
    ids=["veth", "delay-wire", "hf-wire"],
)
def test_an_interrupted_run_removes_everything(options: list[str]) -> None:
    before = (lab_namespaces(), veths())
    process = subprocess.Popen(
        [*LAB, "--quick", *options],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    created: set[str] = set()
    try:
        deadline = time.monotonic() + 60
        while len(created) < 3:  # until the lab has built its namespaces
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the lab created no namespace within 60 s"
            created |= lab_namespaces() - before[0]
            time.sleep(0.05)
        time.sleep(2)  # (daemons starting or running in the namespaces)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert "interrupted" in err
    assert_nothing_left(before)
    assert wires(created) == []


def test_not_root_is_one_line_and_exit_2() -> None:
    nobody = shutil.which("setpriv")
    if nobody is None:
        pytest.skip("setpriv (util-linux) is needed to drop root")
    done = subprocess.run(
        [nobody, "--reuid=65534", "--regid=65534", "--clear-groups", *LAB, "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "root" in done.stderr


def test_an_output_that_cannot_be_written_is_said_before_the_run(tmp_path: Path) -> None:
    """A --json in a folder that cannot be made ends the lab at once (exit 2, one line),
    before any namespace is made, not after the measurements."""
    before = (lab_namespaces(), veths())
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = subprocess.run(
        [*LAB, "--quick", "--json", str(blocker / "figures.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert "--json" in done.stderr and str(blocker) in done.stderr
    assert_nothing_left(before)
