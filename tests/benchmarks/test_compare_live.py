"""benchmarks/compare.py run whole, with tiny sizes: this tree against HEAD (two rounds of
two daemon pairs per row each) prints a table with both contestants and ratios that are
numbers, and removes its worktree; interrupted (SIGINT, even if it was started with SIGINT
ignored), it stops its contestant and removes the worktree all the same; against Postfix
(only where ``postfix_relay.py`` and Postfix are installed: the test skips elsewhere, and
fails instead with ``AIOX400_REQUIRE_POSTFIX=1``) it gives the four figures Postfix has,
with ratios, and leaves Postfix stopped."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.compare import POSTFIX_BASE, POSTFIX_TOOL, ROOT

pytestmark = pytest.mark.slow

COMPARE = ROOT / "benchmarks" / "compare.py"
TINY = ["--rounds=2", "--messages=20", "--large=1", "--backlog=20", "--flash=5"]


def _worktrees() -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "list"], check=True, capture_output=True, text=True
    ).stdout


def _summary(stdout: str) -> list[list[str]]:
    """The cells of the table of medians (header first)."""
    table = stdout.split("Medians over the rounds")[1].split("Every round")[0]
    rows = [line for line in table.splitlines() if line.startswith("|")]
    return [row.strip("| ").split(" | ") for row in rows if not row.startswith("|---")]


def test_this_tree_against_head() -> None:
    done = subprocess.run(
        [sys.executable, str(COMPARE), "--against=HEAD", *TINY],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    header, *rows = _summary(done.stdout)
    assert header[2].startswith("this tree (") and header[3].startswith("HEAD (")
    assert header[4] == "this tree / HEAD"
    figures = {row[0]: row for row in rows}
    assert {"1 KB relay, 8 clients, msgs/s", "idle, end to end, p99, ms"} <= set(figures)
    for row in rows:
        assert row[1] in ("higher", "lower")
        assert float(row[4]) > 0  # every figure of relay.py, for both
    assert done.stdout.count("| 1 | this tree, HEAD |") == 1  # the CPU check, per round
    assert done.stdout.count("| 2 | HEAD, this tree |") == 1
    assert "aiox400-compare-" not in _worktrees()


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    children = Path(f"/proc/{pid}/task/{pid}/children")
    for child in children.read_text().split() if children.exists() else ():
        found |= {int(child)} | _descendants(int(child))
    return found


def _alive(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


def _as_a_background_job() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell starts one: Ctrl-C is not its


def test_interrupted_it_stops_its_contestant_and_removes_the_worktree() -> None:
    process = subprocess.Popen(
        [sys.executable, str(COMPARE), "--against=HEAD", "--messages=20000", "--rounds=1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_a_background_job,  # SIGINT sent to it by name stops it all the same
    )
    deadline = time.monotonic() + 120
    started: set[int] = set()
    while time.monotonic() < deadline and len(started) < 3:  # relay.py and both daemons
        time.sleep(0.5)
        started = _descendants(process.pid)
    assert len(started) >= 3, "the contestant's daemons did not start"
    assert "aiox400-compare-" in _worktrees()

    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:  # (SIGINT was not enough: it cleans up on SIGTERM too)
            process.terminate()
            process.communicate(timeout=120)
    assert process.returncode == 130, stderr[-3000:]
    assert "interrupted" in stderr
    assert not [pid for pid in started if _alive(pid)]
    assert "aiox400-compare-" not in _worktrees()


def test_this_tree_against_postfix() -> None:
    if shutil.which("postfix") is None or not POSTFIX_TOOL.is_file():
        why = f"needs Postfix installed and {POSTFIX_TOOL}"
        if os.environ.get("AIOX400_REQUIRE_POSTFIX") == "1":
            pytest.fail(why)
        pytest.skip(why)
    done = subprocess.run(
        [sys.executable, str(COMPARE), "--postfix", *TINY],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    header, *rows = _summary(done.stdout)
    assert header[3].startswith("Postfix") and header[4] == "this tree / Postfix"
    figures = {row[0]: row for row in rows}
    for name in (
        "1 KB relay, 8 clients, msgs/s",
        "1 MB relay, 8 clients, MB/s",
        "idle, end to end, p50, ms",
        "idle, end to end, p99, ms",
    ):
        assert float(figures[name][4]) > 0
    assert figures["flash, routine backlog queued, end to end, p99, ms"][3:] == ["n/a", "n/a"]
    for instance in ("a", "b"):  # stopped: it does not idle beside other work
        status = subprocess.run(
            ["postfix", "-c", str(POSTFIX_BASE / instance), "status"], capture_output=True
        )
        assert status.returncode != 0
