"""The operator's queue commands, on SQLite and PostgreSQL: selections (message id, MTS
identifier, route, precedence, everything), hold, release, delete (never of a message in
flight; its APDU file goes with it), flush, and the queue's shape by age."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path

from sqlalchemy import Engine

from p1.mts.precedence import Precedence
from store.audit import AuditEvent, AuditLog
from store.db import open_database, spool_folder, transaction
from store.models import LOCAL_ROUTE, RecipientState
from store.queue import Selection, ShapeCount, TransitQueue
from store.spool import SPOOL_THRESHOLD
from tests.support.store_samples import T0, at, mts_id, new_message

P = Precedence
S = RecipientState
EDGES = tuple(timedelta(minutes=m) for m in (5, 10, 20, 40, 80))


def queue_four(engine: Engine) -> list[int]:
    """r1 (routine, mta-b), f1 (flash, mta-b), p1 (priority, mta-c), l1 (routine, local
    and mta-b): their message ids."""
    with transaction(engine) as session:
        results = TransitQueue(session).enqueue_many(
            [
                new_message("r1"),
                new_message("f1", precedence=P.FLASH),
                new_message("p1", ("c=gb;s=a", "mta-c"), precedence=P.PRIORITY),
                new_message("l1", ("c=gb;s=b", LOCAL_ROUTE), ("c=gb;s=c", "mta-b")),
            ],
            T0,
        )
    return [r.message_id or 0 for r in results]


def hold(engine: Engine, selection: Selection) -> list[str]:
    """Hold ``selection``; the local parts of the MTS identifiers held, in order."""
    with transaction(engine) as session:
        held = TransitQueue(session).hold_selected(selection, at(1))
    return [h.mts_identifier.rsplit(";", 1)[-1].rstrip("]") for h in held]


def states(engine: Engine) -> dict[str, list[S]]:
    with transaction(engine, read_only=True) as session:
        waiting = TransitQueue(session).waiting(1000)
    found: dict[str, list[S]] = {}
    for w in waiting:
        found.setdefault(w.mts_identifier, []).append(w.state)
    return found


def test_a_selection_names_messages_by_id_or_mts_identifier(engine: Engine) -> None:
    ids = queue_four(engine)
    selection = Selection(message_ids=(ids[0],), mts_identifiers=(mts_id("p1").text,))
    assert hold(engine, selection) == ["r1", "p1"]


def test_a_selection_by_route_and_precedence_takes_those_recipients_only(
    engine: Engine,
) -> None:
    queue_four(engine)
    assert hold(engine, Selection(route="mta-b", precedence=P.ROUTINE)) == ["r1", "l1"]
    assert states(engine)[mts_id("l1").text] == [S.PENDING, S.HELD]  # local one untouched
    assert hold(engine, Selection(precedence=P.FLASH)) == ["f1"]


def test_everything_selects_all_and_an_empty_selection_nothing(engine: Engine) -> None:
    queue_four(engine)
    assert Selection().empty and not Selection(everything=True).empty
    assert hold(engine, Selection()) == []
    assert hold(engine, Selection(message_ids=(999_999,))) == []
    assert hold(engine, Selection(mts_identifiers=("[nowhere]",))) == []
    assert sorted(hold(engine, Selection(everything=True))) == ["f1", "l1", "l1", "p1", "r1"]


def test_release_makes_the_held_due_at_once(engine: Engine) -> None:
    ids = queue_four(engine)
    hold(engine, Selection(everything=True))
    with transaction(engine) as session:
        released = TransitQueue(session).release_selected(Selection(route="mta-c"), at(50))
    assert [r.message_id for r in released] == [ids[2]]
    with transaction(engine) as session:
        (entry,) = TransitQueue(session).claim_next("mta-c", set(P), at(50))
    assert entry.message_id == ids[2]


def test_delete_removes_the_message_and_records_nothing_itself(engine: Engine) -> None:
    ids = queue_four(engine)
    with transaction(engine) as session:
        deletion = TransitQueue(session).delete_selected(Selection(message_ids=(ids[0],)))
    assert [d.recipient for d in deletion.deleted] == ["c=gb;s=jones"]
    assert (deletion.busy, deletion.messages_removed) == ((), 1)
    with transaction(engine, read_only=True) as session:
        assert TransitQueue(session).get(ids[0]) is None
        assert AuditLog(session).history(mts_id("r1").text) == ()
    assert mts_id("r1").text not in states(engine)


def test_delete_by_route_keeps_a_message_still_owed_elsewhere(engine: Engine) -> None:
    ids = queue_four(engine)
    with transaction(engine) as session:
        deletion = TransitQueue(session).delete_selected(Selection(route="mta-b"))
    assert sorted(d.mts_identifier for d in deletion.deleted) == sorted(
        mts_id(n).text for n in ("r1", "f1", "l1")
    )
    assert deletion.messages_removed == 2
    with transaction(engine, read_only=True) as session:
        kept = TransitQueue(session).get(ids[3])
    assert kept is not None and [r.route for r in kept.recipients] == [LOCAL_ROUTE]


def test_delete_refuses_a_message_in_flight(engine: Engine) -> None:
    ids = queue_four(engine)
    with transaction(engine) as session:
        (claimed,) = TransitQueue(session).claim_next("mta-b", {P.FLASH}, at(1))
    with transaction(engine) as session:
        deletion = TransitQueue(session).delete_selected(Selection(route="mta-b"))
    assert [b.message_id for b in deletion.busy] == [claimed.message_id] == [ids[1]]
    assert ids[1] not in {d.message_id for d in deletion.deleted}
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert queue.mark_transferred(claimed.recipient_ids, at(2)) == 1  # finishes intact


def test_delete_removes_the_apdu_file_after_the_commit(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        large = dataclasses.replace(new_message("big"), apdu=b"x" * SPOOL_THRESHOLD)
        with transaction(engine) as session:
            (result,) = TransitQueue(session).enqueue_many([large], T0)
        folder = spool_folder(engine.url)
        assert folder is not None
        assert [p for p in folder.iterdir() if p.stat().st_size]
        with transaction(engine) as session:
            deletion = TransitQueue(session).delete_selected(
                Selection(message_ids=(result.message_id or 0,))
            )
        assert deletion.messages_removed == 1
        assert not [p for p in folder.iterdir() if p.stat().st_size]
    finally:
        engine.dispose()


def test_flush_makes_retries_due_now_but_not_a_deferred_delivery(engine: Engine) -> None:
    with transaction(engine) as session:
        queue = TransitQueue(session)
        queue.enqueue_many(
            [
                new_message("retried"),
                new_message("later", not_before=at(3600)),
                new_message("elsewhere", ("c=gb;s=a", "mta-c")),
            ],
            T0,
        )
        for route in ("mta-b", "mta-c"):
            (entry,) = queue.claim_next(route, set(P), at(1))
            queue.defer(entry.recipient_ids, next_attempt_at=at(600), error="down", now=at(1))
    with transaction(engine) as session:
        assert TransitQueue(session).flush("mta-b", at(2)) == 1
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert [e.mts_identifier for e in queue.claim_next("mta-b", set(P), at(2), limit=5)] == [
            mts_id("retried").text
        ]
        assert queue.claim_next("mta-c", set(P), at(2)) == ()
        assert queue.flush(None, at(3)) == 1
        assert len(queue.claim_next("mta-c", set(P), at(3))) == 1


def test_shape_counts_waiting_recipients_by_age(engine: Engine) -> None:
    now = at(10_000)
    ages = {"a": 1, "b": 4, "c": 7, "d": 15, "e": 30, "f": 60, "g": 100, "h": 1000}
    with transaction(engine) as session:
        queue = TransitQueue(session)
        for local, minutes in ages.items():
            arrived = now - timedelta(minutes=minutes)
            queue.enqueue_many([new_message(local)], arrived)
        queue.enqueue_many([new_message("flash", precedence=P.FLASH)], now)
    with transaction(engine, read_only=True) as session:
        shape = set(TransitQueue(session).shape(now, EDGES))
    routine = {(s.bucket, s.recipients) for s in shape if s.precedence is P.ROUTINE}
    assert routine == {(0, 2), (1, 1), (2, 1), (3, 1), (4, 1), (5, 2)}
    assert ShapeCount(route="mta-b", precedence=P.FLASH, bucket=0, recipients=1) in shape


def test_history_lists_a_messages_events_oldest_first(engine: Engine) -> None:
    identifier = mts_id("m").text
    with transaction(engine) as session:
        log = AuditLog(session)
        log.record(AuditEvent.TRANSFERRED, at(5), mts_identifier=identifier, peer="mta-b")
        log.record(AuditEvent.SUBMITTED, at(1), mts_identifier=identifier)
        log.record(AuditEvent.DEFERRED, at(5), mts_identifier=identifier, detail="later")
        log.record(AuditEvent.SUBMITTED, at(2), mts_identifier="other")
    with transaction(engine, read_only=True) as session:
        history = AuditLog(session).history(identifier)
    assert [(h.at, h.event) for h in history] == [
        (at(1), AuditEvent.SUBMITTED),
        (at(5), AuditEvent.TRANSFERRED),
        (at(5), AuditEvent.DEFERRED),
    ]


def test_recipients_of_one_message_are_listed_in_every_state(engine: Engine) -> None:
    ids = queue_four(engine)
    hold(engine, Selection(message_ids=(ids[3],), route=LOCAL_ROUTE))
    with transaction(engine) as session:
        queue = TransitQueue(session)
        (entry,) = queue.claim_next("mta-b", {P.ROUTINE}, at(2))
        assert entry.mts_identifier == mts_id("r1").text
        queue.mark_transferred(entry.recipient_ids, at(3))
    with transaction(engine, read_only=True) as session:
        queue = TransitQueue(session)
        l1 = queue.recipients_of(mts_id("l1").text)
        r1 = queue.recipients_of(mts_id("r1").text)
        nothing = queue.recipients_of("[nowhere]")
    assert [(r.route, r.state) for r in l1] == [(LOCAL_ROUTE, S.HELD), ("mta-b", S.PENDING)]
    assert [(r.route, r.state, r.attempts) for r in r1] == [("mta-b", S.TRANSFERRED, 1)]
    assert {r.message_id for r in l1} == {ids[3]} and nothing == ()


def test_fail_selected_fails_the_pending_and_held_and_leaves_those_in_flight(
    engine: Engine,
) -> None:
    ids = queue_four(engine)
    hold(engine, Selection(message_ids=(ids[0],)))
    with transaction(engine) as session:
        (claimed,) = TransitQueue(session).claim_next("mta-b", {P.FLASH}, at(1))
    with transaction(engine) as session:
        failure = TransitQueue(session).fail_selected(
            Selection(route="mta-b"), error="by the operator", now=at(2)
        )
    failed = {
        e.mts_identifier: [(r.recipient, r.state) for r in e.recipients] for e in failure.failed
    }
    assert failed == {
        mts_id("r1").text: [("c=gb;s=jones", S.FAILED)],
        mts_id("l1").text: [("c=gb;s=c", S.FAILED)],
    }
    assert [e.apdu for e in failure.failed] == [b"apdu r1", b"apdu l1"]
    assert [(b.message_id, b.recipient) for b in failure.busy] == [(ids[1], "c=gb;s=jones")]
    assert states(engine) == {
        mts_id("f1").text: [S.IN_FLIGHT],
        mts_id("p1").text: [S.PENDING],
        mts_id("l1").text: [S.PENDING],
    }
    with transaction(engine, read_only=True) as session:
        (r1,) = TransitQueue(session).recipients_of(mts_id("r1").text)
    assert r1.last_error == "by the operator"
    assert claimed.message_id == ids[1]


def test_matching_finds_queued_messages_by_recipient_originator_and_arrival(
    engine: Engine,
) -> None:
    queue_four(engine)
    with transaction(engine, read_only=True) as session:
        queue = TransitQueue(session)
        to_c = queue.matching(recipient="c=gb;s=c")
        by_smith = queue.matching(originator="c=gb;s=smith", since=T0)
        later = queue.matching(originator="c=gb;s=smith", since=at(1))
        nobody = queue.matching(originator="c=gb;s=nobody")
    assert [(r.mts_identifier, r.recipient) for r in to_c] == [
        (mts_id("l1").text, "c=gb;s=b"),
        (mts_id("l1").text, "c=gb;s=c"),
    ]
    assert {r.mts_identifier for r in by_smith} == {
        mts_id(n).text for n in ("r1", "f1", "p1", "l1")
    }
    assert {r.originator for r in by_smith} == {"c=gb;s=smith"}
    assert later == () and nobody == ()


def test_the_audit_log_finds_messages_by_recipient_and_time(engine: Engine) -> None:
    with transaction(engine) as session:
        log = AuditLog(session)
        log.record(AuditEvent.SUBMITTED, at(1), mts_identifier="m1")
        log.record(AuditEvent.DELIVERED, at(3), mts_identifier="m1", recipient="c=gb;s=b")
        log.record(AuditEvent.DELIVERED, at(2), mts_identifier="m2", recipient="c=gb;s=b")
        log.record(AuditEvent.DELIVERED, at(4), mts_identifier="m3", recipient="c=gb;s=c")
        log.record(AuditEvent.MINIMIZED, at(5), detail="flash")
    with transaction(engine, read_only=True) as session:
        log = AuditLog(session)
        to_b = log.messages(recipient="c=gb;s=b")
        since = log.messages(since=at(3))
    assert [(s.mts_identifier, s.first, s.last) for s in to_b] == [
        ("m2", at(2), at(2)),
        ("m1", at(3), at(3)),
    ]
    assert [s.mts_identifier for s in since] == ["m1", "m3"]
