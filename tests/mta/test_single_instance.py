"""One daemon per state directory (mta/instance.py), and a control socket that is only
ever removed by the daemon that made it (mta/control.py).

A second ``x400-mta`` on the same state directory exits 4 naming the process that holds
the lock, and changes nothing: the first daemon's APDU files (even one its sweep would
remove), its control socket and its database stay as they were, and it keeps answering.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from mta.daemon import EXIT_OK, EXIT_START
from mta.instance import LOCK_NAME, StateDirInUseError, StateLock
from mta.operator.control import ControlSocketInUseError
from tests.support.process import DEADLINE, MTA, Daemon
from tests.support.sites import Site, solo_site

ORPHAN = "0123456789abcdef0123456789abcdef.ber"
"""A spool file name no row names: the start-up sweep of a daemon removes it."""


def identity(path: Path) -> tuple[int, int]:
    info = path.lstat()
    return info.st_dev, info.st_ino


def state_of(site: Site) -> Path:
    return site.directory / "state"


@pytest.mark.slow
def test_a_second_daemon_on_the_same_state_directory_exits_4_and_changes_nothing(
    tmp_path: Path,
) -> None:
    site = solo_site(tmp_path / "a")
    first = Daemon(site.write(), tmp_path / "first.log").start()
    try:
        first.wait_answering()
        state = state_of(site)
        orphan = state / "aiox400.db-apdus" / ORPHAN
        orphan.write_bytes(b"not named by any row")
        before = {p: identity(p) for p in (site.socket, state / "aiox400.db", orphan)}

        second = subprocess.run(
            [str(MTA), "--config", str(site.config_file), "--log-level", "info"],
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
        )

        assert second.returncode == EXIT_START, second.stderr
        [line] = second.stderr.splitlines()
        assert f"process {first.pid} holds {state / LOCK_NAME}" in line
        assert f"state directory {state}" in line
        assert {p: identity(p) for p in before} == before
        assert orphan.read_bytes() == b"not named by any row"
        assert (state / LOCK_NAME).read_text() == f"{first.pid}\n"
        assert first.answers()
    finally:
        code = first.stop()
    assert code == EXIT_OK, first.text()
    assert not site.socket.exists()
    assert "Traceback" not in first.text()


async def test_a_second_service_on_the_same_state_directory_is_refused_before_touching_it(
    tmp_path: Path,
) -> None:
    site = solo_site(tmp_path / "a")
    twin = Site(site.identity, site.directory, dict(site.settings))
    await site.start()
    try:
        socket_before = identity(site.socket)
        with pytest.raises(StateDirInUseError) as refused:
            await twin.start()
        assert refused.value.pid == os.getpid()
        assert identity(site.socket) == socket_before
        assert (await site.api({"op": "status"}))["ok"]
    finally:
        await site.stop()
    await twin.start()  # the lock was given back at stop
    await twin.stop()


async def test_a_control_socket_another_process_answers_on_is_left_alone(
    tmp_path: Path,
) -> None:
    site = solo_site(tmp_path / "a")
    other = solo_site(tmp_path / "b")
    other.settings["control_socket"] = str(site.socket)  # another state directory
    await site.start()
    try:
        before = identity(site.socket)
        with pytest.raises(ControlSocketInUseError, match="is in use"):
            await other.start()
        assert identity(site.socket) == before
        assert (await site.api({"op": "status"}))["ok"]
    finally:
        await site.stop()
    # Its lock was given back too: the other site starts once the socket is free.
    await other.start()
    await other.stop()


async def test_a_stale_control_socket_is_replaced(tmp_path: Path) -> None:
    site = solo_site(tmp_path / "a")
    site.directory.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as gone:
        gone.bind(str(site.socket))  # bound, never listening: what a killed daemon leaves
    await site.start()
    try:
        assert (await site.api({"op": "status"}))["ok"]
    finally:
        await site.stop()


async def test_the_control_socket_is_removed_at_stop(tmp_path: Path) -> None:
    site = solo_site(tmp_path / "a")
    await site.start()
    assert site.socket.is_socket()
    await site.stop()
    assert not site.socket.exists()
    assert (state_of(site) / LOCK_NAME).exists()  # (never removed: see mta/instance.py)


async def test_a_control_socket_that_is_not_ours_any_more_is_not_removed_at_stop(
    tmp_path: Path,
) -> None:
    site = solo_site(tmp_path / "a")
    await site.start()
    site.socket.unlink()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as newcomer:
        newcomer.bind(str(site.socket))
        theirs = identity(site.socket)
        await site.stop()
        assert identity(site.socket) == theirs


def test_the_lock_is_given_back_when_its_holder_is_released(tmp_path: Path) -> None:
    held = StateLock.acquire(tmp_path / "state")
    with pytest.raises(StateDirInUseError, match=f"process {os.getpid()} holds"):
        StateLock.acquire(tmp_path / "state")
    held.release()
    StateLock.acquire(tmp_path / "state").release()
