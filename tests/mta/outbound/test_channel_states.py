"""A slot's state follows from its connections' states (what ``x400ctl channels`` shows)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mta.transport import ConnectionState, SlotState

C = ConnectionState


def test_a_slot_without_connections_is_closed() -> None:
    assert SlotState.of([]) is SlotState.CLOSED


def test_one_bound_connection_makes_the_slot_up() -> None:
    assert SlotState.of([C.BACKOFF, C.IDLE]) is SlotState.UP
    assert SlotState.of([C.CONNECTING, C.TRANSFERRING]) is SlotState.UP


def test_a_slot_whose_connections_all_back_off_is_down() -> None:
    assert SlotState.of([C.BACKOFF]) is SlotState.DOWN
    assert SlotState.of([C.BACKOFF, C.BACKOFF]) is SlotState.DOWN


def test_a_slot_opening_or_closing_without_a_bound_connection_is_connecting() -> None:
    assert SlotState.of([C.CONNECTING, C.BACKOFF]) is SlotState.CONNECTING
    assert SlotState.of([C.CLOSING]) is SlotState.CONNECTING


@given(st.lists(st.sampled_from(list(ConnectionState)), max_size=6))
def test_every_mix_of_connection_states_gives_the_state_its_definition_says(
    states: list[ConnectionState],
) -> None:
    slot = SlotState.of(states)
    bound = any(s in (C.IDLE, C.TRANSFERRING) for s in states)
    assert (slot is SlotState.CLOSED) == (not states)
    assert (slot is SlotState.UP) == bound
    assert (slot is SlotState.DOWN) == (bool(states) and all(s is C.BACKOFF for s in states))


def test_states_are_reported_by_their_text() -> None:
    # The local API and x400ctl carry the values as text; StrEnum keeps them equal.
    assert [s.value for s in ConnectionState] == [
        "connecting",
        "idle",
        "transferring",
        "backoff",
        "closing",
    ]
    assert f"{C.IDLE}" == "idle"
