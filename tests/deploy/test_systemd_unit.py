"""The systemd unit (deploy/systemd/aiox400-mta.service): ``systemd-analyze verify``
accepts it, ``systemd-analyze security`` rates it OK or better, and the daemon runs
under what it asks (a process that may not map writable and executable memory).

Without ``systemd-analyze`` the tests that need it are skipped, unless
``AIOX400_REQUIRE_SYSTEMD=1`` says the machine must have it (then they fail).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from mta.daemon import EXIT_OK
from tests.support.process import DEADLINE, MTA, Daemon
from tests.support.sites import solo_site

pytestmark = pytest.mark.slow  # systemd-analyze, and the daemon as a process

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "systemd"
UNIT = DEPLOY / "aiox400-mta.service"
INSTALLED = "/usr/local/bin/x400-mta"
"""Where the unit expects the command (deploy/README.md links it there)."""
MOST_EXPOSURE = 2.0
"""The highest exposure score accepted (systemd rates up to 3.9 as "OK")."""
PR_SET_MDWE = 65
PR_MDWE_REFUSE_EXEC_GAIN = 1
"""prctl(2): refuse mappings that are, or become, writable and executable."""


def systemd_analyze() -> str:
    """The command's path; skips the test when it is missing and not required."""
    command = shutil.which("systemd-analyze")
    if command is None:
        if os.environ.get("AIOX400_REQUIRE_SYSTEMD"):
            pytest.fail("systemd-analyze is missing and AIOX400_REQUIRE_SYSTEMD is set")
        pytest.skip("systemd-analyze is not installed")
    return command


@pytest.fixture
def unit(tmp_path: Path) -> Path:
    """The unit, its commands pointing at the x400-mta installed here (verify checks
    that they exist)."""
    copy = tmp_path / UNIT.name
    copy.write_text(UNIT.read_text().replace(INSTALLED, str(MTA)))
    return copy


def directives(path: Path) -> dict[str, list[str]]:
    """The unit's ``Key=value`` lines, each key's values in order."""
    found: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            found.setdefault(key, []).append(value)
    return found


def test_the_unit_points_at_the_installed_man_pages() -> None:
    assert directives(UNIT)["Documentation"] == ["man:x400-mta(1) man:aiox400.toml(5)"]


def test_the_units_word_on_sighup_is_the_guides() -> None:
    """The unit, deploy/README.md and x400-mta(1) say alike what a reload does: the
    peers change in place, and a peer's changed credentials end its associations."""
    comment = UNIT.read_text().split("# SIGHUP")[1].split("ExecReload=")[0]
    readme = (DEPLOY.parent / "README.md").read_text().split("**Reload.**")[1].split("- **")[0]
    for text in (comment, readme):
        words = " ".join(text.replace("#", " ").split())
        assert "peers" in words and "credentials changed" in words and "restart" in words


def test_the_unit_is_a_notify_service_with_watchdog_reload_and_file_limit() -> None:
    found = directives(UNIT)
    assert found["Type"] == ["notify"]
    assert found["NotifyAccess"] == ["main"]
    assert found["WatchdogSec"]
    assert found["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert found["LimitNOFILE"] == ["65536"]
    assert found["CapabilityBoundingSet"] == [""]


def test_the_example_listens_on_ports_that_need_no_capability() -> None:
    example = tomllib.loads((DEPLOY / "mta.toml").read_text())
    assert all(listener["port"] >= 1024 for listener in example["listeners"])


def test_systemd_analyze_verify_accepts_the_unit(unit: Path) -> None:
    """verify also asks man for each page of ``Documentation=``: those installed with
    x400-mta, found from its bin/ on PATH as man-db does."""
    if shutil.which("man") is None:
        if os.environ.get("AIOX400_REQUIRE_MAN"):
            pytest.fail("man is missing and AIOX400_REQUIRE_MAN is set")
        pytest.skip("man (man-db) is missing: verify could not look up Documentation=")
    done = subprocess.run(
        [systemd_analyze(), "verify", str(unit)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
        env={**os.environ, "PATH": f"{MTA.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr


def test_systemd_analyze_security_rates_the_unit_ok(unit: Path) -> None:
    done = subprocess.run(
        [systemd_analyze(), "security", "--offline=yes", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d) (\w+)", done.stdout)
    assert match is not None, done.stdout
    assert match[2] in ("OK", "SAFE"), match[0]
    assert float(match[1]) <= MOST_EXPOSURE, match[0]


def test_the_daemon_serves_without_writable_executable_memory(tmp_path: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_MDWE, 0, 0, 0, 0) != 0 and ctypes.get_errno() != 0:
        pytest.skip("this kernel has no PR_SET_MDWE (Linux 6.3)")
    refuse = f"ctypes.CDLL(None).prctl({PR_SET_MDWE}, {PR_MDWE_REFUSE_EXEC_GAIN}, 0, 0, 0)"
    launcher = (
        f"import ctypes, os, sys\nassert {refuse} == 0\nos.execv(sys.argv[1], sys.argv[1:])\n"
    )
    site = solo_site(tmp_path / "site")
    daemon = Daemon(site.write(), tmp_path / "mta.log")
    daemon.command = (sys.executable, "-c", launcher, str(MTA))
    daemon.start()
    try:
        daemon.wait_answering()
        assert daemon.stop() == EXIT_OK, daemon.text()
    finally:
        daemon.kill()
