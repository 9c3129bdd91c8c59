"""A daemon that cannot start says why in one CRITICAL line, and nothing about stopping.

``x400-mta`` runs as a real process with a configuration it cannot start with: a
listener port another socket holds (the store opened and recovered first, then undone),
or a database it cannot open.  Its log ends with one ``CRITICAL ... cannot start:`` line
naming the cause, with no "stopped" line before or after it: nothing was serving, so
nothing was stopped.  It exits 4.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from mta.daemon import EXIT_START
from tests.support.process import Daemon
from tests.support.sites import Site, solo_site

pytestmark = pytest.mark.slow  # x400-mta processes


def _port_taken(site: Site, taken: socket.socket) -> str:
    port = taken.getsockname()[1]
    site.settings["listeners"] = [{"address": "127.0.0.1", "port": port}]
    return f"('127.0.0.1', {port}): address already in use"


def _database_unopenable(site: Site, taken: socket.socket) -> str:
    blocker = site.directory / "not-a-directory"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("a file where the database's directory should be\n")
    site.settings["database"] = f"sqlite:///{blocker}/queue.db"
    return f"cannot open database sqlite:///{blocker}/queue.db"


@pytest.mark.parametrize("spoil", [_port_taken, _database_unopenable])
def test_a_failed_start_logs_one_critical_line_and_no_stop(
    tmp_path: Path, spoil: Callable[[Site, socket.socket], str]
) -> None:
    site = solo_site(tmp_path / "a")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        cause = spoil(site, taken)
        daemon = Daemon(site.write(), tmp_path / "mta.log", args=("--log-level", "debug"))
        assert daemon.start().wait_exit() == EXIT_START, daemon.text()
    lines = daemon.text().splitlines()
    critical = [line for line in lines if " CRITICAL " in line]
    assert len(critical) == 1, daemon.text()
    assert critical[0] == lines[-1], daemon.text()
    assert "cannot start: " in critical[0] and cause in critical[0], daemon.text()
    assert not [line for line in lines if "stopped" in line], daemon.text()
