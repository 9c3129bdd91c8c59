"""sd_notify(3) without libsystemd (mta/systemd.py), and what the daemon tells the
service manager (mta/lifecycle.py): READY=1 with a STATUS= line once it serves,
WATCHDOG=1 from its event loop, RELOADING=1 then READY=1 on SIGHUP, STOPPING=1 at stop.

The manager is played by a real AF_UNIX datagram socket, in the abstract namespace (as
``@name`` in ``$NOTIFY_SOCKET``) or in the file system.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mta.daemon import EXIT_OK
from mta.systemd import Notifier, watchdog_interval
from tests.support.process import DEADLINE, Daemon
from tests.support.sites import ReservedPorts, solo_site

WATCHDOG_USEC = 400_000
"""The watchdog the live daemon is given: a keep-alive every 0.2 s."""


class Manager:
    """The service manager's end: a datagram socket the daemon notifies."""

    def __init__(self, address: str | bytes) -> None:
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(address)
        self.socket.settimeout(DEADLINE)

    def receive(self) -> dict[str, str]:
        """The next notification, as its assignments."""
        data = self.socket.recv(4096).decode("utf-8")
        return dict(line.split("=", 1) for line in data.split("\n"))

    def until(self, key: str) -> dict[str, str]:
        """The first notification that sets ``key`` (those before it skipped)."""
        while True:
            fields = self.receive()
            if key in fields:
                return fields

    def close(self) -> None:
        self.socket.close()


@pytest.fixture
def abstract() -> Iterator[tuple[str, Manager]]:
    """``$NOTIFY_SOCKET`` naming an abstract socket, and the manager bound to it."""
    name = f"aiox400-test-{secrets.token_hex(8)}"
    manager = Manager(b"\0" + name.encode())
    try:
        yield f"@{name}", manager
    finally:
        manager.close()


def test_notifications_reach_an_abstract_socket(abstract: tuple[str, Manager]) -> None:
    address, manager = abstract
    notifier = Notifier(address)
    assert notifier.ready("serving: 1 listener")
    assert manager.receive() == {"READY": "1", "STATUS": "serving: 1 listener"}
    assert notifier.watchdog()
    assert manager.receive() == {"WATCHDOG": "1"}
    assert notifier.stopping()
    assert manager.receive()["STOPPING"] == "1"


def test_notifications_reach_a_socket_in_the_file_system() -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        path = os.path.join(folder, "notify")
        manager = Manager(path)
        try:
            assert Notifier(path).status("queue 12\nsecond line")
            assert manager.receive() == {"STATUS": "queue 12 second line"}
        finally:
            manager.close()


def test_reloading_carries_the_monotonic_clock(abstract: tuple[str, Manager]) -> None:
    address, manager = abstract
    Notifier(address).reloading()
    fields = manager.receive()
    assert fields["RELOADING"] == "1"
    assert int(fields["MONOTONIC_USEC"]) > 0


def test_without_notify_socket_nothing_is_sent() -> None:
    notifier = Notifier.from_environment({})
    assert not notifier.enabled
    assert not notifier.ready("serving")


def test_a_manager_that_went_away_is_no_error(tmp_path: Path) -> None:
    assert not Notifier(str(tmp_path / "nobody")).watchdog()


@pytest.mark.parametrize(
    ("environ", "interval"),
    [
        ({"WATCHDOG_USEC": "30000000"}, 15.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4242"}, 15.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({}, None),
    ],
)
def test_the_watchdog_interval_is_half_the_timeout_for_this_process(
    environ: dict[str, str], interval: float | None
) -> None:
    assert watchdog_interval(environ, pid=4242) == interval


@pytest.mark.slow
def test_the_daemon_notifies_ready_status_watchdog_reloading_and_stopping(
    tmp_path: Path, abstract: tuple[str, Manager]
) -> None:
    address, manager = abstract
    ports = ReservedPorts(1)
    site = solo_site(tmp_path / "site")
    site.settings["listeners"] = [{"address": "127.0.0.1", "port": ports.ports[0]}]
    environ = dict(os.environ, NOTIFY_SOCKET=address, WATCHDOG_USEC=str(WATCHDOG_USEC))
    environ.pop("WATCHDOG_PID", None)
    daemon = Daemon(site.write(), tmp_path / "mta.log", env=environ).start()
    try:
        ready = manager.until("READY")
        assert ready["STATUS"] == "serving: 1 listener, 0 peers, queue 0"
        assert daemon.answers()  # ready means serving
        for _ in range(3):
            manager.until("WATCHDOG")
        daemon.signal(signal.SIGHUP)
        assert "MONOTONIC_USEC" in manager.until("RELOADING")
        manager.until("READY")
        daemon.signal(signal.SIGTERM)
        assert manager.until("STOPPING")["STATUS"] == "stopping"
        assert daemon.wait_exit() == EXIT_OK, daemon.text()
    finally:
        daemon.kill()
        ports.close()
