"""x400ctl ping with selectors, against x400-mta in another process whose listener serves
only the called TSEL "x400" (as PP's 1988 normal-mode channel does).

Each ping is one association of its own and changes nothing in the daemon's state, so the
tests of this module share one daemon (started once per module); its log is checked for
tracebacks when the module is done.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from client import x400ctl
from tests.support.sites import ReservedPorts, to_toml

ROOT = Path(__file__).resolve().parents[2]
ALL = ["override", "flash", "immediate", "priority", "routine", "deferred"]
START_TIMEOUT = 60.0


def _wait_listening(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            pytest.fail(f"x400-mta exited at start: {log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    tmp_path = tmp_path_factory.mktemp("daemon")
    ports = ReservedPorts(2)
    listen, dead = ports.ports
    settings = {
        "name": "mta-b",
        "global_domain": "C=GB;ADMD= ;PRMD=SITEB",
        "accept_any_recipient": True,
        "password": "b-pw",
        "state_dir": "state",
        "control_socket": "control.sock",
        "listeners": [{"address": "127.0.0.1", "port": listen, "tsel": "x400"}],
        # The tests share the daemon: a bind one refuses must not delay the next one's.
        "limits": {"failed_bind_delay": "0s"},
        "peers": [
            {
                "name": "mta-a",
                "host": "127.0.0.1",
                "peer_password": "a-pw",
                "slots": [{"precedences": ALL, "port": dead}],
            }
        ],
    }
    config = tmp_path / "mta.toml"
    config.write_text(to_toml(settings) + "\n", encoding="utf-8")
    log = tmp_path / "mta.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "mta.command", "--config", str(config), "--no-timestamps"],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
    try:
        _wait_listening(process, listen, log)
        yield listen
    finally:
        process.terminate()
        process.wait(timeout=30)
        ports.close()
    text = log.read_text()
    assert "Traceback" not in text, text


def _ping(port: int, *extra: str) -> int:
    argv = ["ping", "127.0.0.1", str(port), "--mta-name", "mta-a", "--password", "a-pw"]
    return x400ctl.main([*argv, *extra])


@pytest.mark.slow
def test_ping_with_the_served_tsel_binds(daemon: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        _ping(daemon, "--tsel", "x400", "--calling-tsel", "hex:0591", "--peer-name", "mta-b") == 0
    )
    assert f"127.0.0.1 port {daemon}: bound to mta-b in " in capsys.readouterr().out


@pytest.mark.slow
def test_ping_with_another_tsel_is_disconnected(
    daemon: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _ping(daemon, "--tsel", "592") == x400ctl.EXIT_FAILED
    assert "DR received: address unknown" in capsys.readouterr().err


@pytest.mark.slow
def test_ping_without_a_tsel_is_disconnected(
    daemon: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _ping(daemon) == x400ctl.EXIT_FAILED
    assert "DR received: address unknown" in capsys.readouterr().err


def test_ping_refuses_a_bad_selector(capsys: pytest.CaptureFixture[str]) -> None:
    assert _ping(102, "--ssel", "hex:abc") == x400ctl.EXIT_USAGE
    assert "argument --ssel: 'hex:abc': expected an even" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["1984", "1988-x410"])
def test_ping_in_x410_mode_binds_and_a_wrong_password_is_refused_the_1984_way(
    daemon: int, protocol: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The daemon's listener tells X.410-1984 mode from the CN (its TSEL check first)."""
    assert _ping(daemon, "--tsel", "x400", "--protocol", protocol, "--peer-name", "mta-b") == 0
    assert f"127.0.0.1 port {daemon}: bound to mta-b in " in capsys.readouterr().out
    wrong = ["ping", "127.0.0.1", str(daemon), "--mta-name", "mta-a", "--password", "wrong"]
    refused = x400ctl.main([*wrong, "--tsel", "x400", "--protocol", protocol])
    assert refused == x400ctl.EXIT_REFUSED
    assert "refused the bind: PRefuse validation_failure" in capsys.readouterr().err
    assert _ping(daemon, "--tsel", "592", "--protocol", protocol) == x400ctl.EXIT_FAILED
    assert "DR received: address unknown" in capsys.readouterr().err


def test_ping_refuses_an_unknown_protocol(capsys: pytest.CaptureFixture[str]) -> None:
    assert _ping(102, "--protocol", "1992") == x400ctl.EXIT_USAGE
    assert "argument --protocol: invalid choice: '1992'" in capsys.readouterr().err
