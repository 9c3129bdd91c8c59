"""What each account may hold of the local API (mta.operator.admission), counted alone."""

from __future__ import annotations

from pathlib import Path

from mta.operator.access import Caller, Policy, Standing, standing
from mta.operator.admission import ApiLimits, Places

LIMITS = ApiLimits(connections=6, operator_places=2, per_uid=3, pending_per_uid=100)


def test_an_account_holds_its_share_and_the_operators_places_stay_free() -> None:
    places = Places(LIMITS)
    assert [places.enter(1000, Standing.BOUNDED) for _ in range(3)] == [None] * 3
    why = places.enter(1000, Standing.BOUNDED)
    assert why is not None and "max_api_connections_per_uid" in why
    assert places.enter(1001, Standing.BOUNDED) is None
    why = places.enter(1002, Standing.BOUNDED)
    assert why is not None and "kept for operators" in why
    assert places.enter(0, Standing.OPERATOR) is None
    assert places.enter(0, Standing.OPERATOR) is None
    why = places.enter(0, Standing.OPERATOR)
    assert why is not None and "(max_api_connections 6)" in why
    places.leave(1000)
    assert places.of(1000) == 2 and places.open == 5
    assert places.enter(1000, Standing.BOUNDED) is not None  # the free place is an operator's


def test_content_held_per_account_but_one_request_always_fits() -> None:
    places = Places(LIMITS)
    assert places.hold(1000, Standing.BOUNDED, 500) is None  # alone: up to max_message_size
    why = places.hold(1000, Standing.BOUNDED, 1)
    assert why is not None and "max_api_pending_per_uid (100)" in why
    assert places.hold(1001, Standing.BOUNDED, 60) is None
    assert places.hold(1001, Standing.BOUNDED, 40) is None
    assert places.hold(1001, Standing.BOUNDED, 1) is not None
    assert places.hold(0, Standing.OPERATOR, 10_000) is None
    assert places.hold(0, Standing.OPERATOR, 10_000) is None
    places.release(1000, 500)
    assert places.pending(1000) == 0
    assert places.hold(1000, Standing.BOUNDED, 1) is None


def test_who_is_judged_how() -> None:
    open_policy = Policy.open(daemon_uid=999)
    caller = Caller(pid=1, uid=1000, gid=1000)
    assert standing(open_policy, caller) is Standing.BOUNDED
    assert standing(open_policy, Caller(pid=1, uid=0, gid=0)) is Standing.OPERATOR
    assert standing(open_policy, Caller(pid=1, uid=999, gid=5)) is Standing.OPERATOR
    enforced = Policy(
        daemon_uid=999,
        operator_gids=frozenset({50}),
        users={1000: ("alice",)},
        source=Path("mta.toml"),
    )
    assert standing(enforced, caller) is Standing.BOUNDED
    assert standing(enforced, Caller(pid=1, uid=1001, gid=1001)) is Standing.REFUSED
    member = Caller(pid=1, uid=1001, gid=1001, groups=frozenset({50}))
    assert standing(enforced, member) is Standing.OPERATOR
