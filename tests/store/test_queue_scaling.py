"""A claim's cost does not grow with the backlog (store.queue.TransitQueue.claim_next).

A routine slot claims a window of messages after every confirmation; under a backlog of
thousands of due messages each claim must read only the rows it takes, not every due row
of the route, or the database thread spends milliseconds per claim and urgent work waits
behind it.  The work is counted in SQLite's virtual machine instructions (its progress
handler), which does not depend on the machine's speed."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine

from p1.mts.precedence import Precedence
from store import open_database
from store.db import transaction
from store.queue import TransitQueue
from tests.support.store_samples import T0, new_message

ROUTINE = (Precedence.ROUTINE, Precedence.DEFERRED)
STEP = 100
"""Instructions between two calls of the progress handler."""


def _queue(tmp_path: Path, name: str, count: int) -> Engine:
    """A store with ``count`` routine messages due on mta-b, with some deferred ones
    and, for another route, as many again."""
    engine = open_database(f"sqlite:///{tmp_path / name}")
    messages = [
        new_message(
            f"{name}-{i}",
            ("c=gb;s=jones", "mta-b" if i % 2 else "mta-c"),
            precedence=Precedence.DEFERRED if i % 7 == 0 else Precedence.ROUTINE,
        )
        for i in range(2 * count)
    ]
    with transaction(engine) as session:
        TransitQueue(session).enqueue_many(messages, T0)
    return engine


@contextmanager
def _counted(session_connection: sqlite3.Connection) -> Iterator[list[int]]:
    calls = [0]

    def tick() -> int:
        calls[0] += 1
        return 0

    session_connection.set_progress_handler(tick, STEP)
    try:
        yield calls
    finally:
        session_connection.set_progress_handler(None, STEP)


def _claim_work(engine: Engine) -> tuple[int, int]:
    """SQLite's work (in hundreds of instructions) for one claim of 16 routine messages,
    and how many it claimed."""
    with transaction(engine) as session:
        driver = session.connection().connection.driver_connection
        assert isinstance(driver, sqlite3.Connection)
        with _counted(driver) as calls:
            claimed = TransitQueue(session).claim_next("mta-b", ROUTINE, T0, limit=16)
    return calls[0], len(claimed)


def test_a_claim_reads_about_as_much_with_4000_due_as_with_40(tmp_path: Path) -> None:
    small = _queue(tmp_path, "small.db", 40)
    large = _queue(tmp_path, "large.db", 4000)
    try:
        _claim_work(small)  # (each connection meets its statements once)
        _claim_work(large)
        few, got_few = _claim_work(small)
        many, got_many = _claim_work(large)
    finally:
        small.dispose()
        large.dispose()
    assert got_few == got_many == 16
    assert many < 3 * few, f"{many} against {few} (x{STEP} instructions)"


def test_the_other_recipients_of_a_claimed_message_come_with_it_under_a_backlog(
    tmp_path: Path,
) -> None:
    """Through the messages' index: a message's second recipient on the route is claimed
    with the first, whatever the backlog."""
    engine = _queue(tmp_path, "store.db", 500)
    pair = new_message(
        "pair",
        ("c=gb;s=jones", "mta-b"),
        ("c=gb;s=brown", "mta-b"),
        precedence=Precedence.PRIORITY,
    )
    try:
        with transaction(engine) as session:
            TransitQueue(session).enqueue_many([pair], T0)
        with transaction(engine) as session:
            (entry,) = TransitQueue(session).claim_next(
                "mta-b", (Precedence.PRIORITY, *ROUTINE), T0, limit=1
            )
    finally:
        engine.dispose()
    assert entry.mts_identifier == pair.mts_identifier
    assert sorted(r.recipient for r in entry.recipients) == ["c=gb;s=brown", "c=gb;s=jones"]
