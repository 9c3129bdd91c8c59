"""The table of recent precedences: what was noted is found, the oldest goes first."""

from __future__ import annotations

import pytest

from mta.intake.recent import RecentPrecedences
from p1.mts.precedence import Precedence


def test_a_noted_message_is_found_and_an_unknown_one_is_not() -> None:
    recent = RecentPrecedences()
    recent.note("[GB; ;SITEA;m1]", Precedence.FLASH)
    recent.note("[GB; ;SITEA;m2]", Precedence.DEFERRED)
    assert recent.of("[GB; ;SITEA;m1]") is Precedence.FLASH
    assert recent.of("[GB; ;SITEA;m2]") is Precedence.DEFERRED  # (0, and still found)
    assert recent.of("[GB; ;SITEA;m3]") is None


def test_the_oldest_is_forgotten_first_and_noting_again_makes_it_new() -> None:
    recent = RecentPrecedences(size=2)
    recent.note("a", Precedence.FLASH)
    recent.note("b", Precedence.ROUTINE)
    recent.note("a", Precedence.OVERRIDE)  # a is now the newer of the two
    recent.note("c", Precedence.PRIORITY)
    assert (recent.of("a"), recent.of("b"), recent.of("c")) == (
        Precedence.OVERRIDE,
        None,
        Precedence.PRIORITY,
    )
    assert len(recent) == 2


def test_a_table_of_no_room_is_refused() -> None:
    with pytest.raises(ValueError, match="size must be at least 1, not 0"):
        RecentPrecedences(size=0)
