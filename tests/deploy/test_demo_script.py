"""deploy/demo.sh runs under ``set -o pipefail``: none of the project's commands in it
may write into a pipe, whose reader could stop before the end (the writer's exit 141
would end the demo); and the demo runs to its end when the mailboxes it lists are larger
than a pipe's buffer."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).parents[2] / "deploy" / "demo.sh"
BIN = Path(sys.executable).parent
_OUR_COMMAND_INTO_A_PIPE = re.compile(r'"\$BIN/[^"]+"[^|#]*\|(?!\|)')


def test_the_demo_runs_under_pipefail() -> None:
    assert "set -euo pipefail" in DEMO.read_text()


def test_no_command_of_the_project_writes_into_a_pipe() -> None:
    lines = [
        line
        for line in DEMO.read_text().splitlines()
        if _OUR_COMMAND_INTO_A_PIPE.search(line.split(" || ")[0])
    ]
    assert lines == []


PIPE_BUFFER = 65536
"""Linux's default pipe capacity (pipe(7)): a listing larger than this cannot be written
whole into a pipe before its reader takes any."""
EXTRA = 700
"""Routine messages sent beside the demo's six: B's mailbox listing is then several
pipe buffers long."""


@pytest.mark.slow
def test_the_demo_succeeds_under_pipefail_with_a_large_inbox() -> None:
    environ = {**os.environ, "EXTRA": str(EXTRA), "BIN": str(BIN)}
    environ.pop("AIOX400_CONFIG", None)
    done = subprocess.run(
        ["bash", str(DEMO)], env=environ, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    listing = done.stdout.split("== site B: the mailbox of")[1].split("\n== ")[0]
    assert len(listing.encode()) > PIPE_BUFFER
    assert len(re.findall(r"^ +\d+ ", listing, re.M)) == EXTRA + 6
    assert "== site B: the flash message" in done.stdout and "DEMO flash" in done.stdout
