"""deploy/README.md's steps, from an empty machine to a running site, work as written: the
shell blocks of "From an empty machine to two running sites" are run as they stand, for
site A, from a copy of the checkout's files, in a temporary root instead of ``/`` (every
absolute path the steps name is moved under it).  What a container cannot do is stood in
for by small commands on PATH that record their arguments: ``systemctl`` and
``journalctl`` (no systemd running), ``chown`` and the owner and group of ``install``
(the ``aiox400`` account is made by ``systemd-sysusers --root`` in the temporary root,
not on this host).

Then: the sysusers file made the account, ``systemd-analyze verify`` accepts the unit as
installed (its ``Documentation=`` man pages found), the daemon is started by the unit's
``ExecStartPre=`` and ``ExecStart=`` lines, answers ``x400ctl status``, takes a peer's
bind (``x400ctl ping`` as MTA-B with B's password file) and a message it delivers; the
man pages are found from the ``PATH`` the steps set up, and the licence is installed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import tomllib
from pathlib import Path

import pytest

from tests.deploy.test_systemd_unit import directives, systemd_analyze
from tests.support.sites import ReservedPorts, to_toml

pytestmark = pytest.mark.slow  # a venv installed from the checkout, and the daemon

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "deploy" / "README.md"
MOVED = (
    "/opt/aiox400",
    "/usr/local",
    "/usr/lib/sysusers.d",
    "/etc/aiox400",
    "/etc/systemd",
    "/var/lib/aiox400",
)
"""The absolute paths the steps and the unit write to or run from, moved under the
temporary root."""
STAND_INS = {
    "systemctl": "",
    "journalctl": "",
    "chown": "",
    "systemd-sysusers": 'exec /usr/bin/systemd-sysusers --root="$DEPLOY_ROOT" "$@"',
    "install": (
        "args=()\n"
        "while [ $# -gt 0 ]; do\n"
        '  case "$1" in -g|-o) shift 2 ;; *) args+=("$1"); shift ;; esac\n'
        "done\n"
        'exec /usr/bin/install "${args[@]}"'
    ),
}
"""What stands in for each command a container cannot run as the steps mean it; each also
appends its arguments to $DEPLOY_ROOT/calls."""
SKELETON = (
    "etc/systemd/system",
    "usr/lib/sysusers.d",
    "usr/local/bin",
    "usr/local/share",
    "var/lib",
)
"""What a fresh machine with systemd has before the steps."""
A_USER = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith"
DEADLINE = 120.0


def steps() -> list[str]:
    """The shell blocks of the section that takes an empty machine to running sites,
    up to the operators' client configuration."""
    text = README.read_text()
    section = text.split("## From an empty machine")[1].split("### The operators")[0]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def moved(text: str, root: Path) -> str:
    for path in MOVED:
        text = re.sub(rf"(?<![\w/]){re.escape(path)}(?=/|\b|$)", f"{root}{path}", text)
    return text


def stand_ins(folder: Path) -> Path:
    folder.mkdir()
    for name, body in STAND_INS.items():
        script = folder / name
        script.write_text(
            f'#!/bin/bash\necho "{name} $*" >> "$DEPLOY_ROOT/calls"\n{body}\n', encoding="utf-8"
        )
        script.chmod(0o755)
    return folder


def clone(into: Path) -> Path:
    """The checkout's files as a fresh clone has them (pip's build leaves build/ in the
    folder it installs from: not in this one)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, into / name)
    return into


def run_step(block: str, root: Path, environ: dict[str, str]) -> str:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", moved(block, root)],
        cwd=root.parent / "clone",
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{block}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def edit_config(path: Path, root: Path, ports: list[int]) -> None:
    """The edit the steps ask for after installing mta.toml: this host's listeners on
    the first four ``ports``, and MTA-B at this host (a ping from here binds as MTA-B) on
    the fifth, where nothing answers."""
    config = tomllib.loads(moved(path.read_text(), root))
    for listener, port in zip(config["listeners"], ports, strict=False):
        listener |= {"address": "127.0.0.1", "port": port}
    peer = config["peers"][0]
    peer["host"] = "127.0.0.1"
    for slot in peer["slots"]:
        slot["port"] = ports[4]
    path.write_text(to_toml(config) + "\n")


def test_the_steps_take_an_empty_root_to_a_running_site(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for folder in SKELETON:
        (root / folder).mkdir(parents=True)
    shims = stand_ins(tmp_path / "stand-ins")
    clone(tmp_path / "clone")
    environ = {
        k: v for k, v in os.environ.items() if k not in ("MANPATH", "AIOX400_CONFIG", "VIRTUAL_ENV")
    }
    environ |= {
        "DEPLOY_ROOT": str(root),
        "PATH": f"{shims}:{root}/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "PASSWORD_OF_B": "secret-of-b",
        "MANPAGER": "cat",
    }
    install, site_a, start = steps()
    found = run_step(install, root, environ)
    pages = [line for line in found.splitlines() if line.startswith(f"{root}/")]
    assert [Path(page).name for page in pages] == ["x400-mta.1", "aiox400.toml.5"]
    for command in ("x400-mta", "x400", "x400ctl", "x400-dump"):
        assert (root / "usr/local/bin" / command).resolve().is_file()
        assert (root / "usr/local/share/bash-completion/completions" / command).is_file()
    assert "aiox400:x:" in (root / "etc/group").read_text()
    assert list(root.glob("opt/aiox400/lib/python3*/site-packages/aiox400-*/licenses/LICENSE"))

    run_step(site_a, root, environ)
    config = root / "etc/aiox400/mta.toml"
    assert (root / "etc/aiox400/mta-b.password").read_text() == "secret-of-b\n"
    assert (root / "etc/aiox400/mta.password").stat().st_mode & 0o077 == 0

    unit = root / "etc/systemd/system/aiox400-mta.service"
    _verify(unit, root, environ)
    reserved = ReservedPorts(5)
    try:
        edit_config(config, root, list(reserved.ports))
        _serve(unit, root, environ, reserved.ports[0], start)
    finally:
        reserved.close()
    calls = (root / "calls").read_text()
    assert "systemctl enable --now aiox400-mta" in calls


def _verify(unit: Path, root: Path, environ: dict[str, str]) -> None:
    """systemd-analyze verify on the unit as installed, its commands where the steps put
    them; it asks man for each page of Documentation=."""
    copy = unit.parent / "verify" / unit.name
    copy.parent.mkdir()
    copy.write_text(moved(unit.read_text(), root))
    done = subprocess.run(
        [systemd_analyze(), "verify", str(copy)], capture_output=True, text=True, env=environ
    )
    assert (done.returncode, done.stderr) == (0, "")


def _serve(unit: Path, root: Path, environ: dict[str, str], port: int, start: str) -> None:
    """The steps' last block with the daemon started as the unit starts it: ExecStartPre
    (the check), then ExecStart in the background until it answers."""
    found = directives(unit)
    check = shlex.split(moved(found["ExecStartPre"][0], root))
    assert subprocess.run(check, env=environ, capture_output=True).returncode == 0
    state = root / "var/lib/aiox400"
    state.mkdir(parents=True, exist_ok=True)
    log = (root / "mta.log").open("w")
    daemon = subprocess.Popen(
        shlex.split(moved(found["ExecStart"][0], root)), env=environ, stdout=log, stderr=log
    )
    try:
        _until_answering(root, environ)
        shown = run_step(start, root, environ)
        assert "configuration of MTA-A is valid" in shown
        _use(root, environ, port)
    finally:
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(DEADLINE) == 0, (root / "mta.log").read_text()
        log.close()


def _until_answering(root: Path, environ: dict[str, str]) -> None:
    config = str(root / "etc/aiox400/mta.toml")
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        done = subprocess.run(["x400ctl", "status", "-c", config], env=environ, capture_output=True)
        if done.returncode == 0:
            return
        time.sleep(0.5)
    pytest.fail((root / "mta.log").read_text())


def _use(root: Path, environ: dict[str, str], port: int) -> None:
    """A peer's bind, and a message to a local user, delivered."""
    config = str(root / "etc/aiox400/mta.toml")
    ping = subprocess.run(
        [
            *("x400ctl", "ping", "127.0.0.1", str(port), "--mta-name", "MTA-B"),
            *("--password-file", str(root / "etc/aiox400/mta-b.password")),
            *("--peer-name", "MTA-A"),
        ],
        env=environ,
        capture_output=True,
        text=True,
    )
    assert ping.returncode == 0, ping.stdout + ping.stderr
    sent = subprocess.run(
        [
            *("x400", "send", "-c", config, "--from", A_USER, "--to", A_USER),
            *("--subject", "deployed", "--body", "it works"),
        ],
        env=environ,
        capture_output=True,
        text=True,
    )
    assert sent.returncode == 0, sent.stderr
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        inbox = subprocess.run(
            ["x400", "inbox", "-c", config, "--user", A_USER],
            env=environ,
            capture_output=True,
            text=True,
        )
        if "deployed" in inbox.stdout:
            return
        time.sleep(0.5)
    pytest.fail(inbox.stdout + inbox.stderr)


def test_the_steps_name_every_command_and_no_package_index() -> None:
    install = steps()[0]
    assert "pip install ." in install and "pip install aiox400" not in install
    for command in ("x400-mta", "x400", "x400ctl", "x400-dump"):
        assert f"/opt/aiox400/bin/{command} " in install
    assert "/opt/aiox400/share/man/" in install


def test_the_moved_paths_keep_their_tails() -> None:
    root = Path("/tmp/r")
    assert moved("ln -s /opt/aiox400/bin/x400 /usr/local/bin/", root) == (
        "ln -s /tmp/r/opt/aiox400/bin/x400 /tmp/r/usr/local/bin/"
    )
    assert moved("deploy/systemd/aiox400.sysusers", root) == "deploy/systemd/aiox400.sysusers"
