"""What the lab's tests as root share: whether the lab can run here (skip, or fail with
``AIOX400_REQUIRE_LAB=1``), a whole run of ``python -m lab``, and what a run must not
leave behind (namespaces, host veths, wires).

Public API::

    ROOT, LAB                        the checkout; the command
    unavailable() -> str | None      why the lab cannot run here
    require_lab()                    skip (fail with AIOX400_REQUIRE_LAB=1) unless it can
    lab_namespaces() -> set[str]     the lab's namespaces that exist now
    veths() -> set[str]              the host's veths
    assert_nothing_left(before)      nothing of those appeared since ``before``
    run_lab(options, timeout)        a whole run, which must succeed and leave nothing
    wires(namespaces) -> list[str]   command lines of the wires of ``namespaces`` running
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.topology import NAMESPACE_PREFIX, TOOLS

ROOT = Path(__file__).resolve().parents[2]
LAB = [sys.executable, "-m", "lab"]


def unavailable() -> str | None:
    if os.geteuid() != 0:
        return "the lab needs root (network namespaces)"
    missing = sorted({package for tool, package in TOOLS.items() if not shutil.which(tool)})
    if missing:
        return f"the lab needs {', '.join(missing)}: apt-get install -y {' '.join(missing)}"
    return None


def require_lab() -> None:
    """Skip (fail with ``AIOX400_REQUIRE_LAB=1``) when the lab cannot run here."""
    why = unavailable()
    if why is None:
        return
    if os.environ.get("AIOX400_REQUIRE_LAB") == "1":
        pytest.fail(why)
    pytest.skip(why)


def lab_namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {
        line.split()[0] for line in out.stdout.splitlines() if line.startswith(NAMESPACE_PREFIX)
    }


def veths() -> set[str]:
    out = subprocess.run(
        ["ip", "-o", "link", "show", "type", "veth"], capture_output=True, text=True, check=True
    )
    return {line.split(":")[1].strip() for line in out.stdout.splitlines()}


def assert_nothing_left(before: tuple[set[str], set[str]]) -> None:
    """No namespace and no host veth that was not there before (another lab may be
    running, or end, meanwhile: only what appeared counts)."""
    assert lab_namespaces() - before[0] == set()
    assert veths() - before[1] == set()


def run_lab(options: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """A whole lab run with ``options``, which must succeed and leave nothing behind
    (for module fixtures, which run before an autouse check)."""
    require_lab()
    before = (lab_namespaces(), veths())
    done = subprocess.run(
        [*LAB, *options], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stderr
    assert_nothing_left(before)
    return done


def wires(namespaces: set[str]) -> list[str]:
    """Command lines of the wires (delay or HF) of ``namespaces`` still running."""
    lines = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # (it ended meanwhile)
        if "lab.wire" in text and any(name in text for name in namespaces):
            lines.append(text)
    return lines
