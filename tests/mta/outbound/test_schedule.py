"""The queue manager's pure decisions: connections per slot, idle close, retry, expiry."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from config.schema import RetryPolicy, Slot, SlotMode, TlsMode
from mta.database import is_urgent
from mta.outbound.schedule import (
    MAX_WINDOW,
    connections_wanted,
    should_close,
    transfer_window,
)
from p1.mts.precedence import Precedence

PERMANENT = Slot(
    precedences=(Precedence.FLASH,),
    port=5003,
    dscp=24,
    mode=SlotMode.PERMANENT,
    max_connections=1,
    backlog_threshold=10,
    idle_timeout=60,
    tls=TlsMode.OFF,
)
ON_DEMAND = Slot(
    precedences=(Precedence.ROUTINE,),
    port=5000,
    dscp=0,
    mode=SlotMode.ON_DEMAND,
    max_connections=3,
    backlog_threshold=20,
    idle_timeout=120,
    tls=TlsMode.OFF,
)


@pytest.mark.parametrize(
    ("slot", "backlog", "wanted"),
    [
        (PERMANENT, 0, 1),
        (PERMANENT, 1000, 1),  # max_connections caps it
        (ON_DEMAND, 0, 0),
        (ON_DEMAND, 1, 1),
        (ON_DEMAND, 19, 1),  # below the threshold: one connection, however long it takes
        (ON_DEMAND, 20, 2),  # the threshold reached: a second connection
        (ON_DEMAND, 39, 2),
        (ON_DEMAND, 40, 3),
        (ON_DEMAND, 10_000, 3),
    ],
)
def test_connections_wanted(slot: Slot, backlog: int, wanted: int) -> None:
    assert connections_wanted(slot, backlog) == wanted


@given(backlog=st.integers(min_value=0, max_value=10**6))
def test_connections_wanted_stays_within_bounds(backlog: int) -> None:
    wanted = connections_wanted(ON_DEMAND, backlog)
    assert 0 <= wanted <= ON_DEMAND.max_connections
    assert (wanted > 1) == (backlog >= ON_DEMAND.backlog_threshold)


@pytest.mark.parametrize(
    ("backlog", "window"),
    [
        (0, 1),  # nothing counted yet: one at a time
        (1, 1),
        (19, 16),  # one connection: it takes its window
        (20, 10),  # two connections share the backlog
        (40, 13),  # three
        (10_000, MAX_WINDOW),
    ],
)
def test_routine_connections_claim_their_share_of_the_backlog(backlog: int, window: int) -> None:
    assert transfer_window(ON_DEMAND, backlog) == window


@given(st.integers(min_value=0, max_value=100_000))
def test_a_slot_carrying_anything_urgent_claims_one_message_at_a_time(backlog: int) -> None:
    assert transfer_window(PERMANENT, backlog) == 1
    mixed = dataclasses.replace(ON_DEMAND, precedences=(Precedence.PRIORITY, Precedence.ROUTINE))
    assert transfer_window(mixed, backlog) == 1
    routine = dataclasses.replace(ON_DEMAND, precedences=(Precedence.ROUTINE, Precedence.DEFERRED))
    assert 1 <= transfer_window(routine, backlog) <= MAX_WINDOW


def test_permanent_first_connection_never_closes_for_idleness() -> None:
    assert not should_close(PERMANENT, 0, idle_for=10**9, backlog=0)


def test_on_demand_connection_closes_after_idle_timeout_only() -> None:
    assert not should_close(ON_DEMAND, 0, idle_for=119.9, backlog=0)
    assert should_close(ON_DEMAND, 0, idle_for=120, backlog=0)
    assert not should_close(ON_DEMAND, 0, idle_for=500, backlog=1)  # still wanted


def test_extra_connection_closes_when_backlog_falls() -> None:
    assert not should_close(ON_DEMAND, 1, idle_for=500, backlog=25)
    assert should_close(ON_DEMAND, 1, idle_for=500, backlog=5)


def test_retry_delay_grows_and_is_capped() -> None:
    policy = RetryPolicy(initial=30, maximum=600, factor=2, jitter=0.2)
    nominal = [policy.delay(attempt, 0.5) for attempt in range(1, 8)]
    assert nominal == [30, 60, 120, 240, 480, 600, 600]
    assert policy.delay(1, 0.0) == pytest.approx(24)
    assert policy.delay(1, 0.999999) == pytest.approx(36, abs=1e-3)


@given(
    st.floats(0.001, 1e6),
    st.floats(1.0, 1e3),
    st.floats(1.0, 1e6),
    st.integers(0, 10**12),
)
def test_retry_delay_stays_between_initial_and_maximum_for_any_attempt(
    initial: float, ratio: float, factor: float, attempt: int
) -> None:
    # The attempt count of a peer that refuses for days grows without bound: the wait
    # must stay at the cap, never overflow (1.7976931348623157e308 ** 2 raises).
    policy = RetryPolicy(initial=initial, maximum=initial * ratio, factor=factor, jitter=0.0)
    wait = policy.delay(attempt, 0.5)
    assert initial * (1 - 1e-9) <= wait <= policy.maximum * (1 + 1e-9)
    assert policy.nominal(attempt + 1) >= wait * (1 - 1e-9)


def test_retry_delay_at_attempt_1025_is_the_maximum() -> None:
    policy = RetryPolicy(initial=60.0, maximum=3600.0, factor=2.0, jitter=0.0)
    assert policy.delay(1025, 0.5) == 3600
    assert policy.delay(10**18, 0.5) == 3600


def test_work_above_routine_is_urgent_and_claims_one_message_at_a_time() -> None:
    assert [p for p in Precedence if is_urgent(p)] == [
        p for p in Precedence if p > Precedence.ROUTINE
    ]
    for precedence in Precedence:
        slot = dataclasses.replace(ON_DEMAND, precedences=(precedence,))
        window = transfer_window(slot, backlog=100)
        assert (window == 1) == is_urgent(precedence), precedence
