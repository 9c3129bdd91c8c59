"""Stops and crashes of ``x400-mta`` processes during a load, counted at the peer.

- A clean stop (SIGTERM) of the only process of site A while it transfers to B: every
  transfer B confirmed and A logged as ``transferred`` before it stopped is marked so
  before A lets go of its claims, so the restarted A sends none of them again (B's
  ``duplicate ... already have`` lines name none of them).
- Two processes of site A (same name and configuration, their own state directories)
  on one PostgreSQL database: a start and a stop of one that has nothing to send, during
  the other's load, change nothing the other holds (B receives nothing twice).
- The same, the claims' lease set to 2 s: ``kill -9`` of one while
  both transfer, and the other takes back the dead one's claims within the lease and
  sends them; no process is restarted, and B's mailbox holds every message once.

The daemons, waits and the mailbox check are those of :mod:`tests.mta.test_crash`.
"""

from __future__ import annotations

import asyncio
import copy
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.mta.test_crash import CrashLab, Daemon
from tests.support.sites import A, Lab, Site

pytestmark = pytest.mark.slow  # x400-mta processes stopped and killed during a load

MESSAGES = 1000
STOP_AFTER = 100
"""The process is stopped or killed once B has delivered this many (of MESSAGES)."""
LEASE = 2.0
"""Seconds a claim lasts unless renewed, in the two-process test."""
TAKEOVER_BOUND = 30.0
"""Seconds from the kill to the takeover the test accepts: the design says 4/3 of the
lease; the margin is for a slow machine, not for a missing takeover (then never)."""

_TRANSFERRED = re.compile(r"transferred (\[[^]]*\]) \(")
_DUPLICATE = re.compile(r"duplicate (\[[^]]*\]) ")
_TOOK_BACK = re.compile(r"took back (\d+) recipient\(s\) in flight whose claim lapsed")
_OWNER = re.compile(r"claims queued work as (\S+),")


def _before(lines: list[str], marker: str) -> list[str]:
    """The lines before the first one holding ``marker`` (all of them if none does)."""
    index = min((i for i, line in enumerate(lines) if marker in line), default=len(lines))
    return lines[:index]


def _found(pattern: re.Pattern[str], lines: list[str]) -> list[str]:
    return [m.group(1) for line in lines if (m := pattern.search(line)) is not None]


def _terminate(daemon: Daemon) -> int:
    """SIGTERM, and the exit code."""
    process, daemon.process = daemon.process, None
    assert process is not None, f"{daemon.name} is not running"
    process.terminate()
    code = process.wait(timeout=60)
    with daemon.log.open("ab") as log:
        log.write(f"=== {daemon.name}: stopped (exit {code}) ===\n".encode())
    return code


@pytest.fixture
async def single(tmp_path: Path) -> AsyncIterator[CrashLab]:
    lab = Lab.create(tmp_path)
    crash = CrashLab(
        a=Daemon(lab.a, tmp_path / "mta-a.log"), b=Daemon(lab.b, tmp_path / "mta-b.log")
    )
    try:
        yield crash
    finally:
        crash.kill_all()
        await lab.close()


async def test_sigterm_sends_no_confirmed_transfer_again(single: CrashLab) -> None:
    lab = single
    await lab.start(lab.a)
    identifiers = await lab.submit(MESSAGES)
    await lab.start(lab.b)
    delivered = await lab.until(
        lab.b.delivered, lambda n: n >= STOP_AFTER, what=f"B delivers {STOP_AFTER}"
    )
    assert _terminate(lab.a) == 0
    assert delivered < MESSAGES, "A was stopped after B had everything: nothing was cut"
    confirmed = set(_found(_TRANSFERRED, _before(lab.a.lines(), "stopped (exit")))
    await lab.start(lab.a)
    await lab.check_mailbox(identifiers)

    again = set(_found(_DUPLICATE, lab.b.lines()))
    assert confirmed, "A logged no transfer before it stopped"
    assert not (again & confirmed), (
        f"{len(again & confirmed)} transfer(s) B had confirmed before A stopped were sent "
        f"again: {sorted(again & confirmed)[:10]}\n" + lab.stories(sorted(again & confirmed)[:3])
    )


# --- two processes of site A on one PostgreSQL database -----------------------------------


def _second_process(lab: Lab, directory: Path) -> Site:
    """Site A's second process: A's configuration but its own state directory (and
    control socket), and no listeners (it only sends)."""
    settings = copy.deepcopy(lab.a.settings)
    settings["listeners"] = []
    return Site(A, directory, settings)


async def test_kill_9_of_one_of_two_processes_and_the_other_takes_over(
    tmp_path: Path, postgres_url: str
) -> None:
    lab = Lab.create(tmp_path)
    lab.a.settings["database"] = postgres_url
    lab.a.settings["queue"] = {"lease": f"{LEASE:g}s"}
    second = _second_process(lab, tmp_path / "a2")
    crash = CrashLab(
        a=Daemon(lab.a, tmp_path / "mta-a1.log"), b=Daemon(lab.b, tmp_path / "mta-b.log")
    )
    other = Daemon(second, tmp_path / "mta-a2.log")
    engine = create_engine(postgres_url)
    try:
        await crash.start(crash.a)
        await crash.start(other)
        identifiers = await crash.submit(MESSAGES)
        await crash.start(crash.b)
        victim_owner = _found(_OWNER, crash.a.lines())[-1]
        survivor_owner = _found(_OWNER, other.lines())[-1]
        assert victim_owner != survivor_owner

        def held() -> int:
            with engine.connect() as connection:
                return int(
                    connection.execute(
                        text(
                            "SELECT count(*) FROM recipients"
                            " WHERE state = 'in_flight' AND owner = :owner"
                        ),
                        {"owner": victim_owner},
                    ).scalar_one()
                )

        async def victim_holds() -> int:
            return await asyncio.to_thread(held)

        await crash.until(lambda: crash.b.delivered(), lambda n: n >= STOP_AFTER, what="load")
        await crash.until(victim_holds, lambda n: n > 0, what="the victim holds claims")
        crash.a.kill()
        killed_at = time.monotonic()
        await crash.until(
            victim_holds, lambda n: n == 0, what="the dead process's claims are taken back"
        )
        took = time.monotonic() - killed_at
        assert took < TAKEOVER_BOUND
        await _check_two(crash, other, identifiers)
        counts = [int(n) for n in _found(_TOOK_BACK, other.lines())]
        assert counts and sum(counts) > 0, other.tail()
        assert not _found(_TOOK_BACK, crash.a.lines())  # (nothing lapsed while both lived)
    finally:
        crash.kill_all()
        other.kill()
        engine.dispose()
        await lab.close()


async def test_start_and_stop_of_an_idle_process_leave_the_others_claims_alone(
    tmp_path: Path, postgres_url: str
) -> None:
    lab = Lab.create(tmp_path)
    lab.a.settings["database"] = postgres_url
    idle = _second_process(lab, tmp_path / "a2")
    idle.settings["peers"] = []  # (it has nothing to send: any claim it touches is A1's)
    crash = CrashLab(
        a=Daemon(lab.a, tmp_path / "mta-a1.log"), b=Daemon(lab.b, tmp_path / "mta-b.log")
    )
    other = Daemon(idle, tmp_path / "mta-a2.log")
    try:
        await crash.start(crash.a)
        identifiers = await crash.submit(MESSAGES)
        await crash.start(crash.b)
        await crash.until(crash.b.delivered, lambda n: n >= STOP_AFTER, what="load")
        await crash.start(other)  # (puts back what it had left in flight: nothing)
        hit = await crash.b.delivered() < MESSAGES
        assert _terminate(other) == 0  # (puts back what it holds: nothing)
        assert hit, "the load was over before the idle process started: nothing was hit"
        await crash.check_mailbox(identifiers)
        again = _found(_DUPLICATE, crash.b.lines())
        assert not again, f"{len(again)} transfer(s) sent twice: {again[:10]}"
    finally:
        crash.kill_all()
        other.kill()
        await lab.close()


async def _check_two(crash: CrashLab, other: Daemon, identifiers: list[str]) -> None:
    """B's mailbox holds every message once; the shared queue is done (read through the
    surviving process, since the queue is the database's)."""
    survivor = CrashLab(a=other, b=crash.b)
    await survivor.check_mailbox(identifiers)
