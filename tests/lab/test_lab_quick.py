"""The DiffServ lab's quick run (``python -m lab --quick``), as root: the router's profiles
order the flash message's goodput under routine load as they should, and nothing the lab
created remains afterwards, also when it is interrupted.

Orderings with margins, never absolute times: the machine may be shared.  Without root or
the tools the lab needs, the tests skip saying so; with ``AIOX400_REQUIRE_LAB=1`` they fail
instead.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lab.topology import NAMESPACE_PREFIX, TOOLS

ROOT = Path(__file__).resolve().parents[2]
LAB = [sys.executable, "-m", "lab"]


def _unavailable() -> str | None:
    if os.geteuid() != 0:
        return "the lab needs root (network namespaces)"
    missing = sorted({package for tool, package in TOOLS.items() if not shutil.which(tool)})
    if missing:
        return f"the lab needs {', '.join(missing)}: apt-get install -y {' '.join(missing)}"
    return None


@pytest.fixture(autouse=True)
def _lab_possible() -> None:
    why = _unavailable()
    if why is None:
        return
    if os.environ.get("AIOX400_REQUIRE_LAB") == "1":
        pytest.fail(why)
    pytest.skip(why)


def _lab_namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {
        line.split()[0] for line in out.stdout.splitlines() if line.startswith(NAMESPACE_PREFIX)
    }


def _veths() -> set[str]:
    out = subprocess.run(
        ["ip", "-o", "link", "show", "type", "veth"], capture_output=True, text=True, check=True
    )
    return {line.split(":")[1].strip() for line in out.stdout.splitlines()}


def _assert_nothing_left(before: tuple[set[str], set[str]]) -> None:
    """No namespace and no host veth that was not there before (another lab may be
    running, or end, meanwhile: only what appeared counts)."""
    assert _lab_namespaces() - before[0] == set()
    assert _veths() - before[1] == set()


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    """The figures and the report of one quick run (a little over a minute)."""
    if _unavailable() is not None:
        pytest.skip(_unavailable() or "")
    before = (_lab_namespaces(), _veths())
    figures = tmp_path_factory.mktemp("lab") / "quick.json"
    done = subprocess.run(
        [*LAB, "--quick", "--json", str(figures)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    _assert_nothing_left(before)
    return json.loads(figures.read_text()), done.stdout


def test_strict_priority_gives_flash_well_above_weighted(
    quick: tuple[dict[str, Any], str],
) -> None:
    runs = quick[0]["contention"]
    assert runs["strict"]["flash_pct"] > runs["weighted"]["flash_pct"] + 8


def test_weighted_gives_flash_well_above_fifo(quick: tuple[dict[str, Any], str]) -> None:
    runs = quick[0]["contention"]
    assert runs["weighted"]["flash_pct"] > runs["fifo"]["flash_pct"] + 25


def test_small_flash_latency_under_bulk_is_far_lower_with_priority_than_fifo(
    quick: tuple[dict[str, Any], str],
) -> None:
    latency = quick[0]["latency"]
    fifo_p50 = sorted(latency["fifo"])[len(latency["fifo"]) // 2]
    for profile in ("strict", "weighted"):
        p50 = sorted(latency[profile])[len(latency[profile]) // 2]
        assert p50 * 3 < fifo_p50, (profile, p50, fifo_p50)


def test_unloaded_goodput_is_most_of_the_link(quick: tuple[dict[str, Any], str]) -> None:
    figures = quick[0]
    largest = max(figures["unloaded"], key=lambda t: t["size"])
    assert largest["kbit_s"] > 0.8 * figures["rate_kbit"]
    assert largest["kbit_s"] <= figures["rate_kbit"]  # (the shaper holds)


def test_the_report_has_both_tables(quick: tuple[dict[str, Any], str]) -> None:
    report = quick[1]
    assert "(a) Unloaded" in report and "(b) Routine" in report and "(d) Flash" in report
    for profile in ("fifo", "strict", "weighted"):
        assert f"| {profile} |" in report


def test_an_interrupted_run_removes_everything(tmp_path: Path) -> None:
    before = (_lab_namespaces(), _veths())
    process = subprocess.Popen(
        [*LAB, "--quick"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while not (_lab_namespaces() - before[0]):  # until the lab has built something
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the lab created no namespace within 60 s"
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
    _assert_nothing_left(before)


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
