"""MINIMIZE at the queue: a claim's floor keeps the less urgent precedences pending on
that route only, the backlog counts what may be claimed, and what waits below the floor
expires only when its own expiry passes."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Engine

from p1.mts.precedence import Precedence
from store.db import transaction
from store.models import RecipientState
from store.queue import NewMessage, QueueEntry, TransitQueue
from tests.support.store_samples import at, mts_id, new_message

ALL = frozenset(Precedence)
P = Precedence


def enqueue(engine: Engine, *messages: NewMessage) -> None:
    with transaction(engine) as session:
        TransitQueue(session).enqueue_many(messages, at(0))


LATER = at(10)


def claim(engine: Engine, route: str, floor: Precedence | None, now: datetime = LATER) -> list[str]:
    with transaction(engine) as session:
        entries: tuple[QueueEntry, ...] = TransitQueue(session).claim_next(
            route, ALL, now, limit=50, floor=floor
        )
    return [e.mts_identifier for e in entries]


def ids(*locals_: str) -> list[str]:
    return [mts_id(local).text for local in locals_]


def queue_mixed(engine: Engine, route: str) -> None:
    enqueue(
        engine,
        *(
            new_message(f"{route}-{p.label}", ("c=gb;s=a", route), precedence=p)
            for p in (P.ROUTINE, P.FLASH, P.PRIORITY, P.IMMEDIATE, P.DEFERRED, P.OVERRIDE)
        ),
    )


def test_a_claim_takes_only_precedences_at_or_above_its_floor(engine: Engine) -> None:
    queue_mixed(engine, "mta-b")
    assert claim(engine, "mta-b", P.IMMEDIATE) == ids(
        "mta-b-override", "mta-b-flash", "mta-b-immediate"
    )
    assert claim(engine, "mta-b", P.IMMEDIATE) == []
    assert claim(engine, "mta-b", None) == ids("mta-b-priority", "mta-b-routine", "mta-b-deferred")


def test_the_floor_is_per_route(engine: Engine) -> None:
    queue_mixed(engine, "mta-b")
    queue_mixed(engine, "mta-c")
    assert claim(engine, "mta-b", P.FLASH) == ids("mta-b-override", "mta-b-flash")
    labels = ("override", "flash", "immediate", "priority", "routine", "deferred")
    assert claim(engine, "mta-c", None) == ids(*(f"mta-c-{label}" for label in labels))


def test_the_backlog_counts_only_what_the_floor_lets_through(engine: Engine) -> None:
    queue_mixed(engine, "mta-b")
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert queue.backlog("mta-b", ALL, at(10), floor=P.IMMEDIATE) == 3
        assert queue.backlog("mta-b", {P.ROUTINE}, at(10), floor=P.IMMEDIATE) == 0
        assert queue.backlog("mta-b", ALL, at(10)) == 6


def test_what_waits_below_the_floor_stays_pending_until_its_own_expiry(engine: Engine) -> None:
    enqueue(
        engine,
        new_message("soon", precedence=P.ROUTINE, expiry_time=at(100)),
        new_message("later", precedence=P.ROUTINE, expiry_time=at(1000)),
    )
    assert claim(engine, "mta-b", P.IMMEDIATE) == []
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert queue.expire_due(at(99)) == ()
        assert [e.mts_identifier for e in queue.expire_due(at(100))] == ids("soon")
        states = {r.mts_identifier: r.state for r in queue.waiting()}
    assert states == {mts_id("later").text: RecipientState.PENDING}
    assert claim(engine, "mta-b", None, now=at(200)) == ids("later")
