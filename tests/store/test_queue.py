"""The transit queue, on SQLite and PostgreSQL: order, slots, due times, claims, recovery,
duplicates, expiry, counts and batches."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from datetime import datetime

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.exc import StatementError

from p1.mts.precedence import Precedence
from store.db import transaction
from store.models import LOCAL_ROUTE, ApduKind, QueuedRecipient, RecipientState
from store.queue import (
    EXPIRED_ERROR,
    Enqueued,
    NewMessage,
    QueueCount,
    QueueEntry,
    TransitQueue,
)
from tests.support.store_samples import T0, at, mts_id, new_message

ALL = frozenset(Precedence)
P = Precedence
S = RecipientState


def enqueue(engine: Engine, *messages: NewMessage, now: datetime = T0) -> tuple[Enqueued, ...]:
    with transaction(engine) as session:
        return TransitQueue(session).enqueue_many(messages, now)


def claim(
    engine: Engine,
    route: str = "mta-b",
    precedences: Collection[Precedence] = ALL,
    now: datetime = T0,
    *,
    limit: int = 1,
    owner: str | None = None,
) -> tuple[QueueEntry, ...]:
    with transaction(engine) as session:
        return TransitQueue(session).claim_next(route, precedences, now, limit=limit, owner=owner)


def claimed_ids(entries: tuple[QueueEntry, ...]) -> list[str]:
    return [e.mts_identifier for e in entries]


def get(engine: Engine, message_id: int | None) -> QueueEntry:
    assert message_id is not None
    with transaction(engine) as session:
        entry = TransitQueue(session).get(message_id)
    assert entry is not None
    return entry


def states(engine: Engine, message_id: int | None) -> list[RecipientState]:
    return [r.state for r in get(engine, message_id).recipients]


# --- enqueue ---------------------------------------------------------------------------


def test_enqueue_stores_the_message_and_its_recipients(engine: Engine) -> None:
    message = new_message(
        "m1",
        ("c=gb;s=jones", "mta-b"),
        ("c=gb;s=brown", LOCAL_ROUTE),
        precedence=P.FLASH,
        expiry_time=at(3600),
        origin_peer="mta-a",
    )
    (result,) = enqueue(engine, message, now=at(5))
    assert result.queued == ("c=gb;s=jones", "c=gb;s=brown")
    assert result.duplicates == ()
    entry = get(engine, result.message_id)
    assert (entry.mts_identifier, entry.kind, entry.apdu) == (
        mts_id("m1").text,
        ApduKind.MESSAGE,
        b"apdu m1",
    )
    assert (entry.precedence, entry.originator, entry.origin_peer) == (
        P.FLASH,
        "c=gb;s=smith",
        "mta-a",
    )
    assert (entry.arrival_time, entry.expiry_time) == (at(5), at(3600))
    assert entry.arrival_time.tzinfo is not None
    assert [(r.recipient, r.route, r.state, r.attempts) for r in entry.recipients] == [
        ("c=gb;s=jones", "mta-b", S.PENDING, 0),
        ("c=gb;s=brown", LOCAL_ROUTE, S.PENDING, 0),
    ]
    assert [
        (r.next_attempt_at, r.report_request, r.recipient_number) for r in entry.recipients
    ] == [
        (at(5), 0b11000, 1),
        (at(5), 0b11000, 2),
    ]


def test_a_message_without_recipients_is_refused(engine: Engine) -> None:
    message = new_message("m1")
    empty = NewMessage(
        mts_identifier=message.mts_identifier,
        kind=message.kind,
        apdu=message.apdu,
        precedence=message.precedence,
        originator=message.originator,
        recipients=(),
    )
    with pytest.raises(ValueError, match="no recipient"):
        enqueue(engine, empty)


def test_a_naive_time_is_refused(engine: Engine) -> None:
    with pytest.raises(StatementError, match="naive datetime"):
        enqueue(engine, new_message("m1"), now=datetime(2026, 3, 1, 12, 0))


def test_nothing_is_queued_or_remembered_when_the_transaction_fails(engine: Engine) -> None:
    with pytest.raises(RuntimeError), transaction(engine) as session:
        TransitQueue(session).enqueue(new_message("m1"), T0)
        raise RuntimeError("crash before commit")
    # Not acknowledged, so the peer sends it again: it must not look like a duplicate.
    (again,) = enqueue(engine, new_message("m1"))
    assert again.duplicates == ()
    assert claimed_ids(claim(engine)) == [mts_id("m1").text]


# --- duplicates ------------------------------------------------------------------------


def test_an_inbound_duplicate_is_detected_and_not_queued(engine: Engine) -> None:
    pairs = (("c=gb;s=jones", "mta-b"), ("c=gb;s=brown", LOCAL_ROUTE))
    (first,) = enqueue(engine, new_message("m1", *pairs, origin_peer="mta-a"))
    # The acknowledgement was lost: mta-a sends the same message again.
    (second,) = enqueue(engine, new_message("m1", *pairs, origin_peer="mta-a"), now=at(60))
    assert first.message_id is not None
    assert second.message_id is None
    assert second.queued == ()
    assert second.duplicates == ("c=gb;s=jones", "c=gb;s=brown")
    with transaction(engine) as session:
        assert sum(c.recipients for c in TransitQueue(session).counts()) == 2


def test_only_the_new_recipients_of_a_repeated_identifier_are_queued(engine: Engine) -> None:
    enqueue(engine, new_message("m1", ("c=gb;s=jones", "mta-b")))
    (split,) = enqueue(engine, new_message("m1", ("c=gb;s=jones", "mta-b"), ("c=gb;s=x", "mta-c")))
    assert split.message_id is not None
    assert (split.queued, split.duplicates) == (("c=gb;s=x",), ("c=gb;s=jones",))
    assert [r.recipient for r in get(engine, split.message_id).recipients] == ["c=gb;s=x"]


def test_a_repeat_inside_one_batch_is_a_duplicate(engine: Engine) -> None:
    first, second = enqueue(engine, new_message("m1"), new_message("m1"))
    assert (first.queued, first.duplicates) == (("c=gb;s=jones",), ())
    assert (second.message_id, second.queued) == (None, ())
    assert second.duplicates == ("c=gb;s=jones",)


def test_received_keys_outlive_the_queue_until_forgotten(engine: Engine) -> None:
    (result,) = enqueue(engine, new_message("m1"))
    (entry,) = claim(engine)
    with transaction(engine) as session:
        queue = TransitQueue(session)
        queue.mark_transferred(entry.recipient_ids, at(1))
        assert queue.purge_finished(at(2)) == 1
    # Purged from the queue, yet a late duplicate is still recognised.
    (late,) = enqueue(engine, new_message("m1"), now=at(10))
    assert late.message_id is None
    with transaction(engine) as session:
        assert TransitQueue(session).forget_received(at(10)) == 1
    (accepted,) = enqueue(engine, new_message("m1"), now=at(20))
    assert accepted.message_id is not None and accepted.message_id != result.message_id


def test_keys_recorded_without_queueing_make_a_later_copy_a_duplicate(engine: Engine) -> None:
    """A message non-delivered at once (over max_message_size) records its keys only: a
    copy sent again finds them, as a queued message's would, and nothing is queued."""
    with transaction(engine) as session:
        queue = TransitQueue(session)
        fresh = queue.record_received(mts_id("m1").text, ["c=gb;s=jones", "c=gb;s=x"], "mta-a", T0)
        assert fresh == {"c=gb;s=jones", "c=gb;s=x"}
        assert queue.record_received(mts_id("m1").text, ["c=gb;s=jones"], "mta-a", at(1)) == set()
        assert sum(c.recipients for c in queue.counts()) == 0
    (again,) = enqueue(engine, new_message("m1", ("c=gb;s=jones", "mta-b")), now=at(2))
    assert (again.message_id, again.duplicates) == (None, ("c=gb;s=jones",))
    with transaction(engine) as session:
        assert TransitQueue(session).forget_received(at(3)) == 2


def test_a_reports_subject_precedence_is_the_one_its_message_was_queued_at(
    engine: Engine,
) -> None:
    enqueue(engine, new_message("m1", precedence=P.FLASH), new_message("m2"))
    report = dataclasses.replace(
        new_message("r1", precedence=P.OVERRIDE), kind=ApduKind.REPORT, mts_identifier="m3"
    )
    enqueue(engine, report)
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert queue.subject_precedence(mts_id("m1").text) is P.FLASH
        assert queue.subject_precedence(mts_id("m2").text) is P.ROUTINE
        assert queue.subject_precedence(mts_id("unknown").text) is None
        # Only messages count: a report is never the subject of a report.
        assert queue.subject_precedence("m3") is None


def test_a_purged_subject_has_no_precedence(engine: Engine) -> None:
    enqueue(engine, new_message("m1", precedence=P.IMMEDIATE))
    (entry,) = claim(engine)
    with transaction(engine) as session:
        queue = TransitQueue(session)
        queue.mark_transferred(entry.recipient_ids, at(1))
        assert queue.subject_precedence(mts_id("m1").text) is P.IMMEDIATE
        assert queue.purge_finished(at(2)) == 1
        assert queue.subject_precedence(mts_id("m1").text) is None


# --- order, slots, due times -----------------------------------------------------------


def test_claims_come_most_urgent_first_then_oldest(engine: Engine) -> None:
    enqueue(engine, new_message("routine-0", precedence=P.ROUTINE), now=at(0))
    enqueue(engine, new_message("flash-1", precedence=P.FLASH), now=at(1))
    enqueue(engine, new_message("priority-2", precedence=P.PRIORITY), now=at(2))
    enqueue(engine, new_message("override-3", precedence=P.OVERRIDE), now=at(3))
    enqueue(engine, new_message("flash-4", precedence=P.FLASH), now=at(4))
    enqueue(engine, new_message("deferred-5", precedence=P.DEFERRED), now=at(5))
    order = [claim(engine, now=at(10))[0].mts_identifier for _ in range(6)]
    assert order == [
        mts_id(local).text
        for local in (
            "override-3",
            "flash-1",
            "flash-4",
            "priority-2",
            "routine-0",
            "deferred-5",
        )
    ]
    assert claim(engine, now=at(10)) == ()


def test_age_is_the_arrival_time_not_the_insertion_order(engine: Engine) -> None:
    enqueue(engine, new_message("late"), now=at(50))
    enqueue(engine, new_message("early"), now=at(10))
    entries = claim(engine, now=at(60), limit=2)
    assert claimed_ids(entries) == [mts_id("early").text, mts_id("late").text]


@pytest.mark.parametrize(
    ("slot", "expected"),
    [
        ({P.OVERRIDE, P.FLASH}, ["flash"]),
        ({P.IMMEDIATE}, ["immediate"]),
        ({P.ROUTINE, P.DEFERRED}, ["routine", "deferred"]),
        ({P.PRIORITY}, []),
        (set(), []),
    ],
)
def test_a_slot_gets_only_the_precedences_it_admits(
    engine: Engine, slot: set[Precedence], expected: list[str]
) -> None:
    for local, precedence in [
        ("deferred", P.DEFERRED),
        ("routine", P.ROUTINE),
        ("immediate", P.IMMEDIATE),
        ("flash", P.FLASH),
    ]:
        enqueue(engine, new_message(local, precedence=precedence))
    assert claimed_ids(claim(engine, precedences=slot, limit=10)) == [
        mts_id(e).text for e in expected
    ]


def test_claims_are_per_route(engine: Engine) -> None:
    enqueue(engine, new_message("to-b", ("c=gb;s=a", "mta-b")))
    enqueue(engine, new_message("to-c", ("c=gb;s=b", "mta-c")))
    enqueue(engine, new_message("here", ("c=gb;s=c", LOCAL_ROUTE)))
    assert claimed_ids(claim(engine, "mta-c", limit=5)) == [mts_id("to-c").text]
    assert claimed_ids(claim(engine, LOCAL_ROUTE, limit=5)) == [mts_id("here").text]
    assert claimed_ids(claim(engine, "mta-x", limit=5)) == []
    assert claimed_ids(claim(engine, "mta-b", limit=5)) == [mts_id("to-b").text]


def test_a_message_is_not_claimed_before_its_first_attempt_is_due(engine: Engine) -> None:
    enqueue(engine, new_message("later", not_before=at(60)), now=at(0))
    assert claim(engine, now=at(59)) == ()
    (entry,) = claim(engine, now=at(60))
    assert entry.recipients[0].next_attempt_at == at(60)


def test_a_deferred_recipient_waits_for_its_next_attempt(engine: Engine) -> None:
    enqueue(engine, new_message("m1"))
    (entry,) = claim(engine, now=at(1))
    with transaction(engine) as session:
        queue = TransitQueue(session)
        deferred = queue.defer(
            entry.recipient_ids, next_attempt_at=at(300), error="peer busy", now=at(2)
        )
        assert deferred == 1
        assert queue.next_due("mta-b", ALL) == at(300)
        assert queue.backlog("mta-b", ALL, at(299)) == 0
    assert claim(engine, now=at(299)) == ()
    (again,) = claim(engine, now=at(300))
    assert (again.recipients[0].attempts, again.recipients[0].last_error) == (2, "peer busy")


# --- claiming and recovery ---------------------------------------------------------------


def test_a_claim_marks_in_flight_and_is_not_given_twice(engine: Engine) -> None:
    (result,) = enqueue(engine, new_message("m1"))
    (entry,) = claim(engine)
    assert entry.message_id == result.message_id
    assert [(r.state, r.attempts) for r in entry.recipients] == [(S.IN_FLIGHT, 1)]
    assert states(engine, result.message_id) == [S.IN_FLIGHT]
    assert claim(engine) == ()


def test_a_claim_brings_every_recipient_of_the_message_on_that_route(engine: Engine) -> None:
    pairs = (("c=gb;s=a", "mta-b"), ("c=gb;s=b", "mta-c"), ("c=gb;s=c", "mta-b"))
    enqueue(engine, new_message("m1", *pairs), new_message("m2"))
    (entry,) = claim(engine, "mta-b", limit=1)
    assert entry.mts_identifier == mts_id("m1").text
    assert [(r.recipient, r.route) for r in entry.recipients] == [
        ("c=gb;s=a", "mta-b"),
        ("c=gb;s=c", "mta-b"),
    ]
    (other,) = claim(engine, "mta-c")
    assert [r.recipient for r in other.recipients] == ["c=gb;s=b"]


def test_a_claim_stops_where_its_apdus_would_pass_max_octets(engine: Engine) -> None:
    sizes = (600, 300, 200, 100, 50)
    messages = [
        dataclasses.replace(new_message(f"m{i}"), apdu=bytes(size)) for i, size in enumerate(sizes)
    ]
    enqueue(engine, *messages)
    with transaction(engine) as session:
        first = TransitQueue(session).claim_next("mta-b", ALL, T0, limit=5, max_octets=1000)
    # 600 + 300 fit; with the next 200 it would be 1,100.
    assert claimed_ids(first) == [mts_id(f"m{i}").text for i in range(2)]
    with transaction(engine) as session:
        big = TransitQueue(session).claim_next("mta-b", ALL, T0, limit=5, max_octets=10)
    assert claimed_ids(big) == [mts_id("m2").text]  # the first whatever its size
    rest = claim(engine, limit=5)  # what was left out is still pending
    assert claimed_ids(rest) == [mts_id("m3").text, mts_id("m4").text]
    assert claim(engine, limit=5) == ()


def test_the_limit_counts_messages(engine: Engine) -> None:
    enqueue(engine, *(new_message(f"m{i}") for i in range(5)))
    entries = claim(engine, limit=3)
    assert claimed_ids(entries) == [mts_id(f"m{i}").text for i in range(3)]
    assert claimed_ids(claim(engine, limit=3)) == [mts_id(f"m{i}").text for i in range(3, 5)]


def test_unclaim_puts_back_what_was_never_attempted_as_it_was(engine: Engine) -> None:
    enqueue(engine, new_message("m1"), new_message("m2"))
    first, second = claim(engine, limit=2, now=at(1), owner="mta-1")
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert queue.unclaim(second.recipient_ids, at(2)) == 1
        assert queue.unclaim(second.recipient_ids, at(3)) == 0  # pending now: left alone
        assert queue.backlog("mta-b", ALL, at(2)) == 1  # due at once
    assert states(engine, first.message_id) == [S.IN_FLIGHT]
    (again,) = claim(engine, now=at(2))
    assert again.mts_identifier == second.mts_identifier
    assert again.recipients[0].attempts == 1  # the unattempted claim was not counted


def test_retry_at_once_takes_the_attempt_back_and_keeps_the_error(engine: Engine) -> None:
    enqueue(engine, new_message("m1"))
    (first,) = claim(engine, now=at(1))
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert queue.retry_at_once(first.recipient_ids, error="reset", now=at(2)) == 1
        assert queue.retry_at_once(first.recipient_ids, error="reset", now=at(3)) == 0
        assert queue.next_due("mta-b", ALL) == at(2)  # due at once
    (again,) = claim(engine, now=at(2))
    # Counted once for the two tries; the error says the next failure is not the first.
    assert (again.recipients[0].attempts, again.recipients[0].last_error) == (1, "reset")


def test_recover_in_flight_makes_claimed_recipients_pending_again(engine: Engine) -> None:
    (result,) = enqueue(engine, new_message("m1"), new_message("m2"))[:1]
    claim(engine, limit=2)
    # The MTA stops here (crash): nothing says whether the peer took the messages.
    with transaction(engine) as session:
        assert TransitQueue(session).recover_in_flight(at(100)) == 2
    assert states(engine, result.message_id) == [S.PENDING]
    entries = claim(engine, now=at(100), limit=2)
    assert [e.recipients[0].attempts for e in entries] == [2, 2]


def test_recover_in_flight_of_one_owner_leaves_the_others(engine: Engine) -> None:
    a, b = enqueue(engine, new_message("m1"), new_message("m2"))
    claim(engine, owner="mta-1")
    claim(engine, owner="mta-2")
    with transaction(engine) as session:
        assert TransitQueue(session).recover_in_flight(at(1), owner="mta-1") == 1
    assert states(engine, a.message_id) == [S.PENDING]
    assert states(engine, b.message_id) == [S.IN_FLIGHT]


def test_state_changes_apply_only_to_the_states_they_leave(engine: Engine) -> None:
    (result,) = enqueue(engine, new_message("m1"))
    ids = get(engine, result.message_id).recipient_ids
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert queue.mark_transferred(ids, at(1)) == 0  # pending, not in flight
        assert queue.defer(ids, next_attempt_at=at(9), error="x", now=at(1)) == 0
    claim(engine)
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert queue.mark_transferred(ids, at(2)) == 1
        assert queue.mark_transferred(ids, at(3)) == 0  # already done: idempotent
        assert queue.fail(ids, error="late", now=at(3)) == 0
    assert states(engine, result.message_id) == [S.TRANSFERRED]


def test_local_recipients_are_marked_delivered(engine: Engine) -> None:
    (result,) = enqueue(engine, new_message("m1", ("c=gb;s=a", LOCAL_ROUTE)))
    (entry,) = claim(engine, LOCAL_ROUTE)
    with transaction(engine) as session:
        assert TransitQueue(session).mark_delivered(entry.recipient_ids, at(1)) == 1
    assert states(engine, result.message_id) == [S.DELIVERED]


def test_fail_is_permanent(engine: Engine) -> None:
    (result,) = enqueue(engine, new_message("m1"))
    (entry,) = claim(engine)
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert queue.fail(entry.recipient_ids, error="unknown recipient", now=at(1)) == 1
        assert queue.recover_in_flight(at(2)) == 0
    recipient = get(engine, result.message_id).recipients[0]
    assert (recipient.state, recipient.last_error) == (S.FAILED, "unknown recipient")
    assert claim(engine, now=at(3)) == ()


def test_a_held_message_is_not_claimed_until_released(engine: Engine) -> None:
    held, other = enqueue(engine, new_message("held"), new_message("other"), now=at(0))
    assert held.message_id is not None and other.message_id is not None
    with transaction(engine) as session:
        assert TransitQueue(session).hold([held.message_id], at(1)) == 1
    assert claimed_ids(claim(engine, now=at(2), limit=5)) == [mts_id("other").text]
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert queue.release([held.message_id, other.message_id], at(3)) == 1
    (entry,) = claim(engine, now=at(3))
    assert entry.mts_identifier == mts_id("held").text


# --- expiry ----------------------------------------------------------------------------


def test_expire_due_fails_pending_recipients_of_expired_messages(engine: Engine) -> None:
    two = (("c=gb;s=a", "mta-b"), ("c=gb;s=b", LOCAL_ROUTE))
    expiring, flying, held, lasting = enqueue(
        engine,
        new_message("expiring", *two, expiry_time=at(100)),
        new_message("flying", ("c=gb;s=f", "mta-f"), expiry_time=at(50)),
        new_message("held", ("c=gb;s=h", "mta-h"), expiry_time=at(50)),
        new_message("lasting", expiry_time=None),
    )
    assert held.message_id is not None
    claim(engine, "mta-f")
    with transaction(engine) as session:
        queue = TransitQueue(session)
        queue.hold([held.message_id], at(1))
        assert queue.expire_due(at(49)) == ()
    with transaction(engine) as session:
        expired = TransitQueue(session).expire_due(at(100))
    assert claimed_ids(expired) == [mts_id("expiring").text]
    assert [(r.recipient, r.route, r.state, r.last_error) for r in expired[0].recipients] == [
        ("c=gb;s=a", "mta-b", S.FAILED, EXPIRED_ERROR),
        ("c=gb;s=b", LOCAL_ROUTE, S.FAILED, EXPIRED_ERROR),
    ]
    assert expired[0].apdu == b"apdu expiring"
    assert states(engine, flying.message_id) == [S.IN_FLIGHT]
    assert states(engine, held.message_id) == [S.HELD]
    assert states(engine, lasting.message_id) == [S.PENDING]
    with transaction(engine) as session:
        assert TransitQueue(session).expire_due(at(100)) == ()
    assert expiring.message_id is not None


# --- views -----------------------------------------------------------------------------


def test_counts_by_route_precedence_and_state(engine: Engine) -> None:
    enqueue(
        engine,
        new_message("f1", ("c=gb;s=a", "mta-b"), ("c=gb;s=b", "mta-b"), precedence=P.FLASH),
        new_message("f2", ("c=gb;s=a", "mta-b"), precedence=P.FLASH),
        new_message("r1", ("c=gb;s=a", "mta-b"), ("c=gb;s=l", LOCAL_ROUTE)),
    )
    claim(engine, "mta-b", {P.FLASH})  # f1: both recipients in flight
    with transaction(engine) as session:
        counts = TransitQueue(session).counts()
    assert counts == (
        QueueCount(route=LOCAL_ROUTE, precedence=P.ROUTINE, state=S.PENDING, recipients=1),
        QueueCount(route="mta-b", precedence=P.FLASH, state=S.IN_FLIGHT, recipients=2),
        QueueCount(route="mta-b", precedence=P.FLASH, state=S.PENDING, recipients=1),
        QueueCount(route="mta-b", precedence=P.ROUTINE, state=S.PENDING, recipients=1),
    )


def test_backlog_counts_due_messages_of_the_slot(engine: Engine) -> None:
    enqueue(
        engine,
        new_message("f1", ("c=gb;s=a", "mta-b"), ("c=gb;s=b", "mta-b"), precedence=P.FLASH),
        new_message("f2", precedence=P.FLASH, not_before=at(60)),
        new_message("r1", precedence=P.ROUTINE),
        new_message("c1", ("c=gb;s=a", "mta-c"), precedence=P.FLASH),
    )
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert queue.backlog("mta-b", {P.FLASH, P.OVERRIDE}, at(0)) == 1  # messages, not recipients
        assert queue.backlog("mta-b", {P.FLASH, P.OVERRIDE}, at(60)) == 2
        assert queue.backlog("mta-b", ALL, at(60)) == 3
        assert queue.backlog("mta-b", set(), at(60)) == 0
        assert queue.next_due("mta-b", {P.FLASH}) == at(0)
        assert queue.next_due("mta-b", {P.PRIORITY}) is None


def test_purge_finished_removes_only_messages_with_every_recipient_done(engine: Engine) -> None:
    done, half = enqueue(
        engine,
        new_message("done", ("c=gb;s=a", "mta-b")),
        new_message("half", ("c=gb;s=a", "mta-b"), ("c=gb;s=b", "mta-c")),
    )
    entries = claim(engine, "mta-b", limit=2)
    with transaction(engine) as session:
        queue = TransitQueue(session)
        queue.mark_transferred([i for e in entries for i in e.recipient_ids], at(10))
        assert queue.purge_finished(at(10)) == 0  # finished at 10: not before 10
        assert queue.purge_finished(at(11)) == 1
        assert done.message_id is not None and queue.get(done.message_id) is None
        recipients = session.scalar(select(func.count()).select_from(QueuedRecipient))
    assert recipients == 2  # the purged message's recipient went with it (foreign key)
    assert states(engine, half.message_id) == [S.TRANSFERRED, S.PENDING]


# --- batches ---------------------------------------------------------------------------


def test_batch_operations_handle_more_than_one_chunk(engine: Engine) -> None:
    batch = [
        new_message(f"m{i:04}", ("c=gb;s=a", "mta-b"), ("c=gb;s=b", "mta-b")) for i in range(600)
    ]
    results = enqueue(engine, *batch)
    assert all(r.message_id is not None and len(r.queued) == 2 for r in results)
    assert len({r.message_id for r in results}) == 600
    entries = claim(engine, limit=600)
    assert claimed_ids(entries) == [m.mts_identifier for m in batch]
    assert [e.message_id for e in entries] == [r.message_id for r in results]
    ids = [i for e in entries for i in e.recipient_ids]
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert queue.mark_transferred(ids, at(1)) == 1200
        assert queue.counts() == (
            QueueCount(route="mta-b", precedence=P.ROUTINE, state=S.TRANSFERRED, recipients=1200),
        )
        assert queue.purge_finished(at(2)) == 600
    assert enqueue(engine, *batch[:3])[0].duplicates == ("c=gb;s=a", "c=gb;s=b")


def test_recipients_on_the_delivered_route_are_queued_as_delivered(engine: Engine) -> None:
    message = new_message(
        "at-once", ("c=gb;s=jones", LOCAL_ROUTE), ("c=gb;s=brown", "mta-b"), origin_peer="mta-a"
    )
    with transaction(engine) as session:
        (result,) = TransitQueue(session).enqueue_many((message,), T0, delivered_route=LOCAL_ROUTE)
    assert result.queued == ("c=gb;s=jones", "c=gb;s=brown")
    stored = get(engine, result.message_id)
    assert [(r.recipient, r.state, r.attempts) for r in stored.recipients] == [
        ("c=gb;s=jones", S.DELIVERED, 1),
        ("c=gb;s=brown", S.PENDING, 0),
    ]
    # The peer's recipient still needs the APDU, and is claimed for it as usual.
    assert stored.apdu == message.apdu
    (entry,) = claim(engine)
    assert [r.recipient for r in entry.recipients] == ["c=gb;s=brown"]
    assert entry.apdu == message.apdu


def test_a_message_delivered_whole_keeps_no_copy_of_its_apdu(engine: Engine) -> None:
    message = new_message("local", ("c=gb;s=jones", LOCAL_ROUTE), ("c=gb;s=brown", LOCAL_ROUTE))
    with transaction(engine) as session:
        (result,) = TransitQueue(session).enqueue_many((message,), T0, delivered_route=LOCAL_ROUTE)
    stored = get(engine, result.message_id)
    assert stored.apdu == b""
    assert [r.state for r in stored.recipients] == [S.DELIVERED, S.DELIVERED]
    with transaction(engine, read_only=True) as session:
        queue = TransitQueue(session)
        assert queue.backlog(LOCAL_ROUTE, tuple(P), at(1)) == 0
        assert queue.waiting() == ()
    # A repeat is a duplicate, recorded nowhere as delivered again.
    (again,) = enqueue(engine, message)
    assert again.message_id is None
    assert again.duplicates == ("c=gb;s=jones", "c=gb;s=brown")


def test_the_envelope_recipients_count_is_kept_with_the_message(engine: Engine) -> None:
    counted = dataclasses.replace(new_message("counted"), envelope_recipients=3)
    (result,) = enqueue(engine, counted, new_message("unknown"))[:1]
    assert get(engine, result.message_id).envelope_recipients == 3
    assert [e.envelope_recipients for e in claim(engine, limit=2)] == [3, None]


def test_waiting_lists_what_is_owed_most_urgent_first_with_message_ids(engine: Engine) -> None:
    results = enqueue(
        engine,
        new_message("r1", ("c=gb;s=a", "mta-b")),
        new_message("f1", ("c=gb;s=b", "mta-b"), precedence=P.FLASH),
        new_message("d1", ("c=gb;s=c", LOCAL_ROUTE)),
        new_message("t1", ("c=gb;s=d", "mta-c")),
    )
    claim(engine, "mta-b", {P.FLASH})  # f1 in flight
    (sent,) = claim(engine, "mta-c")
    with transaction(engine) as session:
        TransitQueue(session).mark_transferred(sent.recipient_ids, T0)  # t1: owed no more
    with transaction(engine) as session:
        queue = TransitQueue(session)
        queue.hold([results[0].message_id or 0], T0)  # r1 held
        waiting = queue.waiting()
    assert [(w.mts_identifier, w.state, w.recipient) for w in waiting] == [
        (mts_id("f1").text, S.IN_FLIGHT, "c=gb;s=b"),
        (mts_id("r1").text, S.HELD, "c=gb;s=a"),
        (mts_id("d1").text, S.PENDING, "c=gb;s=c"),
    ]
    assert [w.message_id for w in waiting] == [
        results[1].message_id,
        results[0].message_id,
        results[2].message_id,
    ]


def test_waiting_stops_at_its_limit(engine: Engine) -> None:
    enqueue(engine, *(new_message(f"m{n}", ("c=gb;s=a", "mta-b")) for n in range(5)))
    with transaction(engine) as session:
        assert len(TransitQueue(session).waiting(3)) == 3
