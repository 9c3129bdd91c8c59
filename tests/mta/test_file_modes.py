"""The files the daemon makes have their modes whatever the umask it was started with:
0600 for the database (with its -wal and -shm) and the APDU files, 0640 for the state
directory's lock, 0660 for the control socket (its group are the operators), 0750 and
0700 for the folders it creates."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from mta.instance import LOCK_NAME
from p1.mts.precedence import Precedence
from store.spool import SPOOL_THRESHOLD
from tests.support.sites import Site, eventually, solo_site

UMASKS = [0o022, 0o000]


@pytest.fixture(params=UMASKS, ids=lambda mask: f"umask-{mask:03o}")
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """The process's umask set to the parameter for the test (and put back)."""
    mask: int = request.param
    previous = os.umask(mask)
    try:
        yield mask
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


async def send_large(site: Site) -> None:
    """A message large enough for its APDU to be a spool file, delivered locally."""
    jones = site.address("Jones")
    code, _, err = await site.x400(
        *("send", "--socket", str(site.socket), "--from", site.address("Smith")),
        *("--to", jones, "--precedence", Precedence.ROUTINE.label, "--subject", "large"),
        *("--body", "x" * (2 * SPOOL_THRESHOLD)),
    )
    assert code == 0, err
    await eventually(lambda: site.inbox(jones), lambda m: len(m) == 1, what="delivered")


async def test_the_daemons_files_have_their_modes_whatever_the_umask(
    tmp_path: Path, umask: int
) -> None:
    site = solo_site(tmp_path / "site")
    state = site.directory / "state"
    await site.start()
    try:
        await send_large(site)
        assert mode(site.socket) == 0o660
        assert mode(state) == 0o750
        assert mode(state / LOCK_NAME) == 0o640
        for name in ("aiox400.db", "aiox400.db-wal", "aiox400.db-shm"):
            assert mode(state / name) == 0o600, name
        spool = state / "aiox400.db-apdus"
        assert mode(spool) == 0o700
        files = list(spool.iterdir())
        assert files, "no APDU file was written"
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
    finally:
        await site.stop()
