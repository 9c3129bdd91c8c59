"""deploy/demo.sh runs under ``set -o pipefail``: none of the project's commands in it
may write into a pipe, whose reader could stop before the end (the writer's exit 141
would end the demo)."""

from __future__ import annotations

import re
from pathlib import Path

DEMO = Path(__file__).parents[2] / "deploy" / "demo.sh"
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
