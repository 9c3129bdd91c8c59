"""Leased claims: several processes of one site on one queue.  A claim names its owner and
lapses unless renewed; a lapsed claim is taken back by any process, once; a process
recovers only its own claims.  The property test runs random interleavings of claim,
transfer, confirm, lease expiry, recovery, stop and kill over two owners and checks that
no recipient is lost or held twice, and that a confirmed transfer is sent again only when
its owner was killed before it committed the confirmation."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, select, text

from p1.mts.precedence import Precedence
from store.db import transaction
from store.models import RecipientState
from store.queue import Selection, TransitQueue
from store.sql import queue as sql
from tests.profiles import examples
from tests.support.store_samples import at, new_message

ALL = frozenset(Precedence)
LEASE = timedelta(seconds=30)
_r = sql.RECIPIENTS.c


def _fill(engine: Engine, count: int, route: str = "mta-b") -> None:
    pairs = (("c=gb;s=a", route), ("c=gb;s=b", route))
    with transaction(engine) as session:
        TransitQueue(session).enqueue_many(
            [new_message(f"{route}-{i:03}", *pairs) for i in range(count)], at(0)
        )


def _owners(engine: Engine) -> dict[str | None, int]:
    """In-flight recipients per owner."""
    with transaction(engine, read_only=True) as session:
        rows = session.execute(
            select(_r.owner, _r.id).where(_r.state == RecipientState.IN_FLIGHT)
        ).all()
    counts: dict[str | None, int] = {}
    for owner, _ in rows:
        counts[owner] = counts.get(owner, 0) + 1
    return counts


def _claim(engine: Engine, owner: str, seconds: float, limit: int) -> list[int]:
    with transaction(engine) as session:
        entries = TransitQueue(session).claim_next(
            "mta-b", ALL, at(seconds), limit=limit, owner=owner, lease=LEASE
        )
    return [i for entry in entries for i in entry.recipient_ids]


def test_a_renewed_claim_outlives_its_first_lease(engine: Engine) -> None:
    _fill(engine, 3)
    assert len(_claim(engine, "site/one", 0, 3)) == 6
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert queue.renew_claims("site/one", at(20) + LEASE) == 6
        assert queue.renew_claims("site/two", at(20) + LEASE) == 0
        assert queue.take_back_lapsed(at(45)) == 0  # lapsed at 30 unless renewed
    assert _owners(engine) == {"site/one": 6}
    with transaction(engine) as session:
        assert TransitQueue(session).take_back_lapsed(at(50)) == 6
    assert _owners(engine) == {}


def test_a_lapsed_claim_is_taken_back_once_and_claimed_by_another(engine: Engine) -> None:
    _fill(engine, 4)
    dead = _claim(engine, "site/dead", 0, 2)
    live = _claim(engine, "site/live", 0, 2)
    with transaction(engine) as session:
        queue = TransitQueue(session)
        queue.renew_claims("site/live", at(25) + LEASE)
        assert queue.take_back_lapsed(at(29)) == 0
        assert queue.take_back_lapsed(at(31)) == len(dead) == 4
        assert queue.take_back_lapsed(at(32)) == 0  # counted once
    assert _owners(engine) == {"site/live": 4}
    again = _claim(engine, "site/live", 33, 5)
    assert sorted(again) == sorted(dead)
    assert set(again).isdisjoint(live)
    with transaction(engine, read_only=True) as session:
        attempts = session.execute(select(_r.attempts).where(_r.id.in_(again))).scalars()
        assert set(attempts) == {2}  # the dead owner's attempt stays counted


def test_a_claim_with_no_lease_counts_as_lapsed(engine: Engine) -> None:
    _fill(engine, 1)
    with transaction(engine) as session:
        TransitQueue(session).claim_next("mta-b", ALL, at(0), owner="site")  # an older release's
    with transaction(engine) as session:
        assert TransitQueue(session).take_back_lapsed(at(1)) == 2


def test_a_process_recovers_only_its_own_claims(engine: Engine) -> None:
    _fill(engine, 4)
    _claim(engine, "site/one", 0, 2)
    _claim(engine, "site/two", 0, 2)
    with transaction(engine) as session:
        assert TransitQueue(session).recover_in_flight(at(1), owner="site/one") == 4
    assert _owners(engine) == {"site/two": 4}
    with transaction(engine, read_only=True) as session:
        leases = session.execute(
            select(_r.lease_until).where(_r.state == RecipientState.PENDING)
        ).scalars()
        assert set(leases) == {None}


def test_a_taken_back_claim_can_be_held_deleted_and_expired(engine: Engine) -> None:
    with transaction(engine) as session:
        queue = TransitQueue(session)
        queue.enqueue_many(
            [
                new_message("held", ("c=gb;s=a", "mta-b")),
                new_message("gone", ("c=gb;s=a", "mta-b")),
                new_message("late", ("c=gb;s=a", "mta-b"), expiry_time=at(20)),
            ],
            at(0),
        )
    assert len(_claim(engine, "site/dead", 0, 3)) == 3
    with transaction(engine) as session:
        queue = TransitQueue(session)
        assert queue.take_back_lapsed(at(31)) == 3
        held = queue.hold_selected(Selection(mts_identifiers=(_identifier("held"),)), at(31))
        deletion = queue.delete_selected(Selection(mts_identifiers=(_identifier("gone"),)))
        expired = queue.expire_due(at(31))
    assert [r.mts_identifier for r in held] == [_identifier("held")]
    assert [r.mts_identifier for r in deletion.deleted] == [_identifier("gone")]
    assert not deletion.busy
    assert [e.mts_identifier for e in expired] == [_identifier("late")]


def _identifier(local: str) -> str:
    return new_message(local).mts_identifier


# --- the property ---------------------------------------------------------------------------


@dataclass
class _Process:
    """What one process holds in memory: its claims, and the transfers the peer confirmed
    that it has not committed yet."""

    owner: str
    alive: bool = True
    held: dict[int, float] = field(default_factory=dict)
    """Claimed recipients and when their lease lapses."""
    sent: set[int] = field(default_factory=set)


@dataclass
class _World:
    engine: Engine
    now: float = 0.0
    processes: list[_Process] = field(default_factory=list)
    received: dict[int, int] = field(default_factory=dict)
    """Times the peer received each recipient."""
    unconfirmed_loss: set[int] = field(default_factory=set)
    """Recipients the peer received from a process killed before it committed them: the
    only ones that may be sent again."""
    transferred: set[int] = field(default_factory=set)

    def queue_op(self, do: str, who: int, amount: int) -> None:
        process = self.processes[who]
        getattr(self, f"_{do}")(process, amount)
        self.check()

    def _claim(self, process: _Process, amount: int) -> None:
        if not process.alive:
            return
        got = set(_claim(self.engine, process.owner, self.now, amount))
        others = {rid for p in self.processes if p is not process for rid in p.held}
        assert got.isdisjoint(others), "a recipient still claimed was claimed again"
        assert got.isdisjoint(self.transferred), "a transferred recipient was claimed again"
        process.held.update(dict.fromkeys(got, self.now + LEASE.total_seconds()))

    def _transfer(self, process: _Process, amount: int) -> None:
        """The peer confirms up to ``amount`` of the held recipients (not yet committed)."""
        if not process.alive:
            return
        for rid in sorted(process.held.keys() - process.sent)[:amount]:
            self.received[rid] = self.received.get(rid, 0) + 1
            process.sent.add(rid)

    def _confirm(self, process: _Process, amount: int) -> None:
        """The next claim commits the confirmations (the daemon's way)."""
        if not process.sent:
            return
        with transaction(self.engine) as session:
            marked = TransitQueue(session).mark_transferred(sorted(process.sent), at(self.now))
        assert marked == len(process.sent)
        self.transferred |= process.sent
        for rid in process.sent:
            del process.held[rid]
        process.sent = set()

    def _tick(self, process: _Process, amount: int) -> None:
        """Time passes (a third of a lease at most): live processes renew first, then one
        takes back what lapsed."""
        with transaction(self.engine) as session:
            queue = TransitQueue(session)
            for live in self.processes:
                if live.alive:
                    queue.renew_claims(live.owner, at(self.now) + LEASE)
                    live.held = dict.fromkeys(live.held, self.now + LEASE.total_seconds())
        self.now += amount
        with transaction(self.engine) as session:
            taken = TransitQueue(session).take_back_lapsed(at(self.now))
        lapsed = 0
        for process in self.processes:
            gone = {rid for rid, until in process.held.items() if until <= self.now}
            assert not (gone and process.alive), "a live process's claim lapsed"
            lapsed += len(gone)
            process.held = {rid: u for rid, u in process.held.items() if rid not in gone}
        assert taken == lapsed

    def _kill(self, process: _Process, amount: int) -> None:
        if not process.alive:
            return
        self.unconfirmed_loss |= process.sent
        process.alive = False
        process.sent = set()  # its claims stay in flight until taken back

    def _stop(self, process: _Process, amount: int) -> None:
        """A clean stop: the confirmations seen are committed, then its claims go back."""
        if not process.alive:
            return
        self._confirm(process, amount)
        with transaction(self.engine) as session:
            back = TransitQueue(session).recover_in_flight(at(self.now), owner=process.owner)
        assert back == len(process.held)
        process.held = {}
        process.alive = False

    def _start(self, process: _Process, amount: int) -> None:
        if process.alive:
            return
        with transaction(self.engine) as session:
            back = TransitQueue(session).recover_in_flight(at(self.now), owner=process.owner)
        assert back == len(process.held)  # what no other process took back yet
        process.held = {}
        process.alive = True

    def check(self) -> None:
        owners = _owners(self.engine)
        for process in self.processes:
            if process.alive:
                assert owners.get(process.owner, 0) == len(process.held)
        twice = {rid for rid, n in self.received.items() if n > 1}
        assert twice <= self.unconfirmed_loss, "a confirmed transfer was sent again"
        with transaction(self.engine, read_only=True) as session:
            done = session.execute(
                select(_r.id).where(_r.state == RecipientState.TRANSFERRED)
            ).scalars()
            assert set(done) == self.transferred

    def drain(self, total: int) -> None:
        """Stop everyone, wait out every lease, and let one process send the rest."""
        for process in self.processes:
            self._stop(process, 0)
        self.now += 2 * LEASE.total_seconds()
        with transaction(self.engine) as session:
            TransitQueue(session).take_back_lapsed(at(self.now))
        for process in self.processes:
            process.held = {}
        last = self.processes[0]
        self._start(last, 0)
        while True:
            before = len(self.transferred)
            self._claim(last, 50)
            self._transfer(last, total)
            self._confirm(last, 0)
            if len(self.transferred) == before:
                break
        assert len(self.transferred) == total, "a recipient was lost"
        assert set(self.received) == self.transferred


_OPS = st.tuples(
    st.sampled_from(["claim", "transfer", "confirm", "tick", "kill", "stop", "start"]),
    st.integers(min_value=0, max_value=1),
    st.integers(min_value=1, max_value=10),
)


@settings(max_examples=examples(1), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_OPS, max_size=40))
def test_interleavings_never_lose_or_duplicate(
    engine: Engine, steps: list[tuple[str, int, int]]
) -> None:
    with engine.begin() as connection:  # one example's rows only
        for table in ("recipients", "messages", "received"):
            connection.execute(text(f"DELETE FROM {table}"))
    messages = 6
    _fill(engine, messages)
    world = _World(engine, processes=[_Process("site/one"), _Process("site/two")])
    for do, who, amount in steps:
        world.queue_op(do, who, amount)
    world.drain(2 * messages)
