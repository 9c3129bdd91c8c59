"""``x400ctl reload`` and ``x400ctl stop`` against a real ``x400-mta`` process: the
reload is SIGHUP's (the same log lines, the same refusal of a bad file, now also
answered), the stop SIGTERM's (the same clean exit).  A daemon run otherwise (here, in
the test's own process) has no service loop to reload or stop it, and says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from client import x400ctl
from mta.daemon import EXIT_OK
from tests.support.process import Daemon
from tests.support.sites import ReservedPorts, solo_site


def ctl(daemon: Daemon, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``x400ctl ARGV... --socket <daemon's>``: exit code, output, errors."""
    code = x400ctl.main([*argv, "--socket", str(daemon.socket)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.slow
def test_reload_applies_names_what_needs_a_restart_and_refuses_a_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ports = ReservedPorts(1)
    site = solo_site(tmp_path / "site")
    site.settings["log_level"] = "info"
    daemon = Daemon(site.write(), tmp_path / "mta.log", args=("--no-timestamps",)).start()
    try:
        daemon.wait_answering()
        site.settings["log_level"] = "debug"
        site.settings["listeners"] = [{"address": "127.0.0.1", "port": ports.ports[0]}]
        site.write()
        assert ctl(daemon, capsys, "reload") == (
            x400ctl.EXIT_OK,
            "reloaded: log_level\nlisteners changed: needs a restart to take effect\n",
            "",
        )
        assert daemon.wait_for_line("reloaded ") == (
            f"INFO aiox400.mta: reloaded {site.config_file}: log_level"
        )
        assert daemon.wait_for_line("log_level is") == (
            "INFO aiox400.mta: reload: log_level is debug now (was info)"
        )

        site.settings["listeners"][0]["dscp"] = "CS9"
        site.write()
        code, out, err = ctl(daemon, capsys, "reload")
        assert (code, out) == (x400ctl.EXIT_REFUSED, "")
        assert err.startswith(
            "x400ctl reload: reload refused, the previous configuration stays in force: "
            f'{site.config_file}: listeners[0].dscp = "CS9": expected'
        )
        assert err.count("\n") == 1
        assert "ERROR aiox400.mta: reload refused" in daemon.wait_for_line("reload refused")
        assert daemon.answers()
        assert daemon.stop() == EXIT_OK
    finally:
        daemon.kill()
        ports.close()
    assert "Traceback" not in daemon.text()


@pytest.mark.slow
def test_stop_is_acknowledged_and_with_wait_returns_once_the_socket_is_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = solo_site(tmp_path / "site")
    daemon = Daemon(site.write(), tmp_path / "mta.log", args=("--no-timestamps",)).start()
    try:
        daemon.wait_answering()
        assert ctl(daemon, capsys, "stop") == (
            x400ctl.EXIT_OK,
            f"stopping (pid {daemon.pid})\n",
            "",
        )
        assert daemon.wait_exit() == EXIT_OK
        assert "INFO aiox400.mta: stopping on request of the local API (x400ctl stop)" in (
            daemon.text().splitlines()
        )
        assert not daemon.socket.exists()

        again = Daemon(site.write(), tmp_path / "mta2.log", args=("--no-timestamps",)).start()
        try:
            again.wait_answering()
            code, out, err = ctl(again, capsys, "stop", "--wait")
            assert (code, out, err) == (
                x400ctl.EXIT_OK,
                f"stopping (pid {again.pid})\nstopped\n",
                "",
            )
            assert not again.socket.exists()  # gone when it returned, not later
            assert again.wait_exit() == EXIT_OK
            assert "stopped" in again.text().splitlines()[-1]
        finally:
            again.kill()
    finally:
        daemon.kill()
    assert "Traceback" not in daemon.text()


async def test_a_daemon_without_the_service_loop_neither_reloads_nor_stops(
    tmp_path: Path,
) -> None:
    site = solo_site(tmp_path / "site")
    await site.start()
    try:
        for op in ("reload", "stop"):
            with pytest.raises(Exception, match="not run by x400-mta"):
                await site.api({"op": op})
        assert (await site.api({"op": "status"}))["ok"] is True
    finally:
        await site.stop()
