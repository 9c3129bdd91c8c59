"""``x400ctl ping --peer NAME``: a bind to a configured peer, address, slot, selectors,
mode and credentials taken from the configuration, against site B of the lab running in
this test's event loop (``x400ctl.main`` blocks on its socket, so it runs in a worker
thread).  Site A is not started: only its configuration file is read, password files
included, as ``sudo -u aiox400 x400ctl ping --peer MTA-B`` reads the MTA's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from client import x400ctl
from tests.support.sites import LAB_SLOTS, A, Lab


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    """B running; A configured (its password in a file), not running."""
    lab = Lab.create(tmp_path)
    secret = tmp_path / "mta-a.password"
    secret.write_text(A.password + "\n", encoding="ascii")
    secret.chmod(0o600)
    del lab.a.settings["password"]
    lab.a.settings["password_file"] = str(secret)
    await lab.b.start()
    try:
        yield lab
    finally:
        await lab.close()


async def ping(lab: Lab, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``x400ctl -c <A's file> ping ARGV...``: exit code, output, errors."""
    command = ["-c", str(lab.a.write()), "ping", *argv]
    code = await asyncio.to_thread(x400ctl.main, command)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def b_port(lab: Lab, precedence: str) -> int:
    """The port of B's listener for the slot of A's that carries ``precedence``."""
    (peer,) = lab.a.settings["peers"]
    for slot, spec in zip(peer["slots"], LAB_SLOTS, strict=True):
        if precedence in spec.precedences:
            return int(slot["port"])
    raise LookupError(precedence)


@pytest.mark.slow
async def test_ping_peer_binds_as_the_configuration_says(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await ping(lab, capsys, "--peer", "MTA-B", "--peer-name", "MTA-B")
    assert (code, err) == (x400ctl.EXIT_OK, "")
    first = b_port(lab, "override")
    assert out.startswith(f"MTA-B (127.0.0.1 port {first}): bound to MTA-B in ")
    assert out.endswith(" ms (DSCP CS3), released\n")

    code, out, err = await ping(lab, capsys, "--peer", "MTA-B", "--precedence", "routine")
    assert (code, err) == (x400ctl.EXIT_OK, "")
    routine = b_port(lab, "routine")
    assert out.startswith(f"MTA-B (127.0.0.1 port {routine}): bound to MTA-B in ")
    assert out.endswith(" ms (DSCP CS0), released\n")

    code, out, _ = await ping(lab, capsys, "--peer", "MTA-B", "--port", str(routine))
    assert (code, out.split(":")[0]) == (x400ctl.EXIT_OK, f"MTA-B (127.0.0.1 port {routine})")


@pytest.mark.slow
async def test_ping_peer_with_a_wrong_password_file_is_refused(
    lab: Lab, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    wrong = tmp_path / "wrong.password"
    wrong.write_text("not-a-s-password\n", encoding="ascii")
    wrong.chmod(0o600)
    code, out, err = await ping(lab, capsys, "--peer", "MTA-B", "--password-file", str(wrong))
    port = b_port(lab, "override")
    assert (code, out) == (x400ctl.EXIT_REFUSED, "")
    assert err == (
        f"x400ctl ping: MTA-B (127.0.0.1 port {port}) refused the bind: authentication-error\n"
    )

    # The same password file as the one the configuration gives for this peer.
    (peer,) = lab.a.settings["peers"]
    peer["password_file"] = str(wrong)
    code, out, err = await ping(lab, capsys, "--peer", "MTA-B")
    assert (code, out) == (x400ctl.EXIT_REFUSED, "")
    assert err.endswith("refused the bind: authentication-error\n")


async def test_ping_of_a_peer_not_configured_is_a_usage_error(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await ping(lab, capsys, "--peer", "MTA-C")
    assert (code, out) == (x400ctl.EXIT_USAGE, "")
    assert err == f"x400ctl ping: no peer 'MTA-C' in {lab.a.config_file} (its peers: MTA-B)\n"
    code, _, err = await ping(lab, capsys, "--peer", "MTA-B", "--port", "1")
    assert code == x400ctl.EXIT_USAGE
    assert err.startswith("x400ctl ping: peer MTA-B has no slot on port 1 (its: ")
    code, _, err = await ping(lab, capsys, "127.0.0.1", "--precedence", "flash")
    assert (code, err) == (
        x400ctl.EXIT_USAGE,
        "x400ctl ping: --precedence chooses a slot of --peer NAME: give the peer\n",
    )
