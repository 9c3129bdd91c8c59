"""Retention (store.retention.Pruner), on SQLite and on PostgreSQL: only what is finished
and old enough goes, oldest first, at most a batch at a time, and a finished message's
spool file goes with it once the transaction commits."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, func, select

from p1.mts.precedence import Precedence
from store.audit import AuditEvent, AuditLog
from store.db import open_database, spool_folder, transaction
from store.models import AuditEntry, QueuedMessage, ReceivedKey
from store.queue import TransitQueue
from store.retention import Pruned, Pruner
from store.spool import SPOOL_THRESHOLD
from tests.support.store_samples import T0, at, new_message

ALL = set(Precedence)


def _count(engine: Engine, model: type[QueuedMessage | ReceivedKey | AuditEntry]) -> int:
    with engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(model)).scalar_one())


def _finish(engine: Engine, locals_: list[str], when: float) -> None:
    """Queue one message per name, then transfer them all at ``when``."""
    with transaction(engine) as session:
        TransitQueue(session).enqueue_many([new_message(name) for name in locals_], T0)
    with transaction(engine) as session:
        queue = TransitQueue(session)
        entries = queue.claim_next("mta-b", ALL, at(when), limit=len(locals_))
        queue.mark_transferred([i for e in entries for i in e.recipient_ids], at(when))


def _identifiers(engine: Engine) -> list[str]:
    with engine.connect() as connection:
        rows = connection.execute(select(QueuedMessage.mts_identifier).order_by(QueuedMessage.id))
        return [row[0].rsplit(";", 1)[-1] for row in rows]


def test_finished_goes_in_batches_oldest_first(engine: Engine) -> None:
    _finish(engine, ["a", "b", "c"], when=10)
    with transaction(engine) as session:
        TransitQueue(session).enqueue_many([new_message("waiting")], T0)
    with transaction(engine) as session:
        assert Pruner(session).finished(at(10), limit=10) == Pruned(0, 0)  # not before 10
    with transaction(engine) as session:
        assert Pruner(session).finished(at(11), limit=2).messages == 2
    assert len(_identifiers(engine)) == 2
    with transaction(engine) as session:
        assert Pruner(session).finished(at(11), limit=2).messages == 1
    with transaction(engine) as session:
        assert Pruner(session).finished(at(11), limit=2).messages == 0
    (left,) = _identifiers(engine)
    assert "waiting" in left


def test_a_message_with_one_recipient_still_owed_stays(engine: Engine) -> None:
    half = new_message("half", ("c=gb;s=a", "mta-b"), ("c=gb;s=b", "mta-c"))
    with transaction(engine) as session:
        TransitQueue(session).enqueue_many([half], T0)
    with transaction(engine) as session:
        queue = TransitQueue(session)
        (entry,) = queue.claim_next("mta-b", ALL, at(1))
        queue.mark_transferred(entry.recipient_ids, at(1))
    with transaction(engine) as session:
        assert Pruner(session).finished(at(1000), limit=10).messages == 0
    assert _count(engine, QueuedMessage) == 1


def test_the_octets_pruned_are_the_apdus_sizes(engine: Engine) -> None:
    _finish(engine, ["x"], when=1)
    size = len(new_message("x").apdu)
    with transaction(engine) as session:
        assert Pruner(session).finished(at(2), limit=5) == Pruned(1, size)


def test_received_keys_go_oldest_first_in_batches(engine: Engine) -> None:
    for second, name in enumerate(["k0", "k1", "k2"]):
        with transaction(engine) as session:
            TransitQueue(session).enqueue_many([new_message(name)], at(second))
    with transaction(engine) as session:
        assert Pruner(session).received(at(2), limit=1) == 1
    with transaction(engine) as session:
        assert Pruner(session).received(at(2), limit=5) == 1  # k1; k2 is not before 2
    assert _count(engine, ReceivedKey) == 1
    # Forgotten keys no longer stop a copy; the kept one still does.
    with transaction(engine) as session:
        again = TransitQueue(session).enqueue_many([new_message("k0"), new_message("k2")], at(9))
    assert [r.message_id is not None for r in again] == [True, False]


def test_audit_records_go_oldest_first_in_batches(engine: Engine) -> None:
    with transaction(engine) as session:
        log = AuditLog(session)
        for second in range(5):
            log.record(AuditEvent.DELIVERED, at(second), mts_identifier=f"m{second}")
    with transaction(engine) as session:
        assert Pruner(session).audit(at(3), limit=2) == 2
    with transaction(engine) as session:
        assert Pruner(session).audit(at(3), limit=2) == 1
        assert Pruner(session).audit(at(3), limit=2) == 0
    with transaction(engine) as session:
        kept = [r.mts_identifier for r in AuditLog(session).recent(10)]
    assert kept == ["m4", "m3"]


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(
    ages=st.lists(st.integers(min_value=0, max_value=20), min_size=1, max_size=12),
    cut=st.integers(min_value=0, max_value=21),
    limit=st.integers(min_value=1, max_value=5),
)
def test_pruning_to_the_end_leaves_exactly_the_young(
    tmp_path_factory: pytest.TempPathFactory, ages: list[int], cut: int, limit: int
) -> None:
    """Batches repeated until one comes back short delete exactly the messages finished
    before the cut, whatever the batch size."""
    folder = tmp_path_factory.mktemp("prune")
    engine = open_database(f"sqlite:///{folder / 'store.db'}")
    try:
        for index, age in enumerate(ages):
            _finish(engine, [f"m{index}"], when=age)
        deleted = 0
        while True:
            with transaction(engine) as session:
                pruned = Pruner(session).finished(at(cut), limit=limit).messages
            deleted += pruned
            if pruned < limit:
                break
        assert deleted == sum(1 for age in ages if age < cut)
        assert _count(engine, QueuedMessage) == sum(1 for age in ages if age >= cut)
    finally:
        engine.dispose()


def test_a_pruned_messages_spool_file_goes_once_committed(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        large = dataclasses.replace(new_message("big"), apdu=b"\x30" * (SPOOL_THRESHOLD + 1))
        with transaction(engine) as session:
            TransitQueue(session).enqueue_many([large], T0)
        folder = spool_folder(engine.url)
        assert folder is not None
        holding = [p for p in folder.iterdir() if p.stat().st_size]
        assert len(holding) == 1
        with transaction(engine) as session:
            queue = TransitQueue(session)
            (entry,) = queue.claim_next("mta-b", ALL, at(1))
            queue.mark_transferred(entry.recipient_ids, at(1))
        try:
            with transaction(engine) as session:
                assert Pruner(session).finished(at(2), limit=5).messages == 1
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        assert holding[0].exists()  # rolled back: the row and its file stay
        with transaction(engine) as session:
            assert Pruner(session).finished(at(2), limit=5).octets == SPOOL_THRESHOLD + 1
        assert not holding[0].exists()
    finally:
        engine.dispose()
