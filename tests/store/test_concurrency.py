"""Several MTA processes sharing one PostgreSQL queue: concurrent claims never return the
same recipient (``FOR UPDATE SKIP LOCKED``), and each process recovers only its own."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import Engine

from p1.mts.precedence import Precedence
from store.db import open_database, transaction
from store.queue import TransitQueue
from tests.support.store_samples import T0, at, mts_id, new_message

ALL = frozenset(Precedence)


def _fill(engine: Engine, count: int) -> None:
    pairs = (("c=gb;s=a", "mta-b"), ("c=gb;s=b", "mta-b"))
    with transaction(engine) as session:
        TransitQueue(session).enqueue_many(
            [new_message(f"m{i:03}", *pairs) for i in range(count)], T0
        )


def test_two_open_claims_skip_each_others_rows(postgres_engine: Engine) -> None:
    _fill(postgres_engine, 5)
    with transaction(postgres_engine) as first:
        mine = TransitQueue(first).claim_next("mta-b", ALL, at(1), limit=2, owner="mta-1")
        # The first transaction has not committed: its rows are locked, not yet in flight.
        with transaction(postgres_engine) as second:
            theirs = TransitQueue(second).claim_next("mta-b", ALL, at(1), limit=2, owner="mta-2")
    assert [e.mts_identifier for e in mine] == [mts_id("m000").text, mts_id("m001").text]
    assert [e.mts_identifier for e in theirs] == [mts_id("m002").text, mts_id("m003").text]
    assert all(len(e.recipients) == 2 for e in (*mine, *theirs))
    with transaction(postgres_engine) as session:
        queue = TransitQueue(session)
        (last,) = queue.claim_next("mta-b", ALL, at(1), limit=5)
        assert last.mts_identifier == mts_id("m004").text
        assert queue.recover_in_flight(at(2), owner="mta-1") == 4
        again = queue.claim_next("mta-b", ALL, at(2), limit=5, owner="mta-3")
    assert [e.mts_identifier for e in again] == [e.mts_identifier for e in mine]


@pytest.mark.slow
def test_concurrent_claimers_never_get_the_same_recipient(postgres_url: str) -> None:
    workers = 6
    # One engine per worker, as separate MTA processes would have.
    engines = [open_database(postgres_url) for _ in range(workers)]
    _fill(engines[0], 120)
    start = threading.Barrier(workers)

    def claim_until_empty(index: int) -> list[int]:
        got: list[int] = []
        start.wait()
        while True:
            with transaction(engines[index]) as session:
                entries = TransitQueue(session).claim_next(
                    "mta-b", ALL, at(1), limit=3, owner=f"mta-{index}"
                )
            if not entries:
                return got
            got += [i for e in entries for i in e.recipient_ids]

    with ThreadPoolExecutor(workers) as pool:
        claimed = list(pool.map(claim_until_empty, range(workers)))
    every = [i for ids in claimed for i in ids]
    assert len(every) == 240
    assert len(set(every)) == 240  # no recipient was claimed twice
    with transaction(engines[0]) as session:
        counts = TransitQueue(session).counts()
    assert [(c.state, c.recipients) for c in counts] == [("in_flight", 240)]
    for engine in engines:
        engine.dispose()
