"""mta.faults and a full disk at the receiving MTA: transfers are refused unconfirmed, the
condition is logged once each way, and everything arrives exactly once when space returns."""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy import exc as sa_exc

from mta.faults import StoreCondition, store_fault
from store.spool import SpoolError
from tests.support.sites import Lab, eventually, until


def _raised(error: BaseException, cause: BaseException) -> BaseException:
    try:
        raise error from cause
    except BaseException as caught:
        return caught


def test_disk_and_database_faults_are_named() -> None:
    full = OSError(errno.ENOSPC, "No space left on device")
    assert store_fault(full) == "no space left on device"
    spool = _raised(SpoolError("cannot write an APDU file in /x"), full)
    assert store_fault(spool) == "no space left on device"
    engine = create_engine("sqlite://")
    with pytest.raises(sa_exc.OperationalError) as caught, engine.connect() as connection:
        connection.execute(text("select * from nowhere"))
    assert store_fault(caught.value) == "no such table: nowhere"
    assert store_fault(sqlite3.OperationalError("database or disk is full")) == (
        "database or disk is full"
    )


@pytest.mark.parametrize(
    "error",
    [
        ValueError("a bug"),
        KeyError("x"),
        OSError(errno.ENOENT, "No such file or directory"),
        sa_exc.IntegrityError("insert", {}, sqlite3.IntegrityError("UNIQUE constraint failed")),
    ],
)
def test_our_own_errors_are_not_faults_of_the_store(error: BaseException) -> None:
    assert store_fault(error) is None


def test_the_condition_is_logged_once_each_way(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="aiox400.store")
    now = [100.0]
    condition = StoreCondition(clock=lambda: now[0])
    condition.succeeded()
    for _ in range(50):
        condition.failed("database or disk is full")
    condition.failed("database or disk is full", refused=False)
    assert condition.down == "database or disk is full"
    assert condition.refused == 50
    now[0] = 130.0
    condition.succeeded()
    condition.succeeded()
    assert condition.down is None
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        (
            "ERROR",
            "the store cannot take work: database or disk is full; transfers are refused "
            "unconfirmed (peers keep them and retry) until it can",
        ),
        (
            "WARNING",
            "the store takes work again after 30 s; 50 transfer(s) or submission(s) were "
            "refused meanwhile",
        ),
    ]


# --- a full disk under the receiving MTA ----------------------------------------------------

MESSAGES = 200


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs of the test's own (mounting needs root, as the CI machine has)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"this test mounts a tmpfs and needs root: {done.stderr}"
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
async def full_lab(tmp_path: Path, small_disk: Path) -> AsyncIterator[tuple[Lab, Path]]:
    lab = Lab.create(tmp_path / "lab")
    lab.b.settings["state_dir"] = str(small_disk / "state")
    await lab.start()
    try:
        yield lab, small_disk
    finally:
        await lab.close()


def _fill(mount: Path, leave: int) -> Path:
    """Take all but ``leave`` octets of the disk at ``mount``; the file holding them."""
    filler = mount / "filler"
    stat = os.statvfs(mount)
    with filler.open("wb") as stream:
        stream.write(b"\0" * max(0, stat.f_bavail * stat.f_frsize - leave))
    return filler


@pytest.mark.slow
async def test_a_full_disk_refuses_transfers_unconfirmed_and_recovers_by_itself(
    full_lab: tuple[Lab, Path], caplog: pytest.LogCaptureFixture
) -> None:
    lab, disk = full_lab
    caplog.set_level(logging.INFO)
    bob = lab.b.address("bob")
    filler = _fill(disk, leave=200_000)
    sent = await lab.a.send(lab.a.address("alice"), bob, count=MESSAGES)
    b = lab.b.running
    await until(lambda: b.store.refused >= 20, what="B refuses transfers while its disk is full")
    status = await lab.b.api({"op": "status"})
    assert status["store"] == "database or disk is full"

    filler.unlink()
    entries = await eventually(
        lambda: lab.b.inbox(bob), lambda found: len(found) >= MESSAGES, what="every message"
    )
    await until(lambda: b.store.down is None, what="B's store is back")
    assert sorted(e["mts_identifier"] for e in entries) == sorted(set(sent))
    assert (await lab.b.api({"op": "status"}))["store"] is None

    b_records = [r for r in caplog.records if r.name.startswith("aiox400.")]
    assert [r for r in b_records if r.exc_info is not None] == []
    assert [r for r in b_records if r.levelno >= logging.CRITICAL] == []
    store_lines = [r.getMessage() for r in caplog.records if r.name == "aiox400.store"]
    assert len(store_lines) == 2, store_lines
    assert store_lines[0].startswith("the store cannot take work: database or disk is full")
    assert store_lines[1].startswith("the store takes work again")
