"""x400ctl ping against a real responder in another process, over loopback TCP.

The responder serves any number of associations and keeps no state between them, so the
tests of this module share one (started once per module).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from client import x400ctl

ROOT = Path(__file__).resolve().parents[2]


def _start(*extra: str) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.responder", *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.strip().isdigit():
        process.kill()
        pytest.fail(f"the test responder did not start: {line!r}")
    return process, int(line)


@pytest.fixture(scope="module")
def responder() -> Iterator[int]:
    process, port = _start("--name", "mta-b", "--password", "b-pw", "--accept", "mta-a:a-pw")
    yield port
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def silent() -> Iterator[int]:
    process, port = _start("--silent")
    yield port
    process.terminate()
    process.wait(timeout=10)


def password_file(directory: Path, password: str, mode: int = 0o600) -> Path:
    """A password file as an operator writes one (a trailing newline)."""
    path = directory / "password"
    path.write_text(password + "\n", encoding="ascii")
    path.chmod(mode)
    return path


def _ping(port: int, *extra: str) -> int:
    argv = ["ping", "127.0.0.1", str(port), "--mta-name", "mta-a", *extra]
    return x400ctl.main(argv)


def test_ping_reports_the_responder_and_the_bind_time(
    responder: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _ping(responder, "--password", "a-pw", "--peer-name", "mta-b", "--dscp", "CS3") == 0
    out = capsys.readouterr().out
    assert f"127.0.0.1 port {responder}: bound to mta-b in " in out
    assert "ms (DSCP CS3), released" in out


def test_ping_with_a_wrong_password_prints_the_bind_error(
    responder: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _ping(responder, "--password", "wrong") == x400ctl.EXIT_REFUSED
    assert "refused the bind: authentication-error" in capsys.readouterr().err


def test_ping_notices_an_unexpected_responder_name(
    responder: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _ping(responder, "--password", "a-pw", "--peer-name", "other") == x400ctl.EXIT_FAILED
    assert "expected the responder 'other', it named itself 'mta-b'" in capsys.readouterr().err


def test_ping_times_out_on_a_silent_peer(silent: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert _ping(silent, "--password", "a-pw", "--timeout", "0.5") == x400ctl.EXIT_TIMEOUT
    assert "did not answer within 0.5 s" in capsys.readouterr().err


def test_ping_of_a_closed_port_is_a_connection_error(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert _ping(port, "--password", "a-pw") == x400ctl.EXIT_FAILED
    assert f"127.0.0.1 port {port}:" in capsys.readouterr().err


@pytest.fixture
def malformed_ac() -> Iterator[int]:
    process, port = _start("--name", "mta-b", "--accept", "mta-a:a-pw", "--malformed-ac")
    yield port
    process.terminate()
    process.wait(timeout=10)


def test_ping_of_a_malformed_accept_is_a_protocol_error(malformed_ac: int, tmp_path: Path) -> None:
    command = [str(Path(sys.executable).with_name("x400ctl")), "ping", "127.0.0.1"]
    command += [str(malformed_ac), "--mta-name", "mta-a", "--password-file"]
    command += [str(password_file(tmp_path, "a-pw"))]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == x400ctl.EXIT_FAILED == 4, done.stderr
    assert done.stderr.splitlines() == [
        f"x400ctl ping: 127.0.0.1 port {malformed_ac}: protocol error in the bind's answer: "
        "session: AC SPDU: LI 254 runs past the TSDU"
    ]
    assert done.stdout == ""


def test_ping_refuses_a_bad_dscp(capsys: pytest.CaptureFixture[str]) -> None:
    assert _ping(1, "--password", "x", "--dscp", "CS9") == x400ctl.EXIT_USAGE
    assert "--dscp" in capsys.readouterr().err


def test_ping_needs_its_credentials(capsys: pytest.CaptureFixture[str]) -> None:
    assert x400ctl.main(["ping", "127.0.0.1"]) == x400ctl.EXIT_USAGE
    assert "--mta-name" in capsys.readouterr().err


def test_ping_reads_the_password_from_a_file(
    responder: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _ping(responder, "--password-file", str(password_file(tmp_path, "a-pw"))) == 0
    captured = capsys.readouterr()
    assert "bound to mta-b" in captured.out
    assert captured.err == ""


def test_ping_refuses_a_password_file_others_may_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = password_file(tmp_path, "a-pw", mode=0o644)
    assert _ping(1, "--password-file", str(shared)) == x400ctl.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"x400ctl ping: --password-file: {shared}: expected a file only its")
    assert "chmod 600" in err


def test_ping_with_a_password_on_the_command_line_warns_it_is_visible(
    responder: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _ping(responder, "--password", "a-pw") == 0
    assert capsys.readouterr().err == (
        "x400ctl ping: --password is visible to every user of this host (ps, /proc):"
        " prefer --password-file FILE\n"
    )


@pytest.fixture
def hang_up() -> Iterator[int]:
    process, port = _start("--hang-up")
    yield port
    process.terminate()
    process.wait(timeout=10)


def test_ping_of_a_peer_closing_without_an_answer_is_a_peer_error(
    hang_up: int, tmp_path: Path
) -> None:
    # Not a refusal (1): the peer said nothing about the bind.  A peer or protocol error.
    command = [str(Path(sys.executable).with_name("x400ctl")), "ping", "127.0.0.1"]
    command += [str(hang_up), "--mta-name", "mta-a", "--password-file"]
    command += [str(password_file(tmp_path, "a-pw"))]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (x400ctl.EXIT_FAILED, "")
    assert done.returncode == 4
    assert done.stderr == (
        f"x400ctl ping: 127.0.0.1 port {hang_up}: the peer closed the connection"
        " without answering the bind\n"
    )
