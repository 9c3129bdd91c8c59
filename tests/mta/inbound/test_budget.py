"""The inbound buffer's accounting (:mod:`mta.inbound.budget`)."""

from __future__ import annotations

from mta.inbound.budget import InboundBudget


def test_shares_take_from_one_budget_until_it_is_spent() -> None:
    budget = InboundBudget(100)
    first, second = budget.share(1000), budget.share(1000)
    assert first.take(60) and budget.used == 60
    assert not second.take(41)  # (nothing taken)
    assert (second.held, budget.used) == (0, 60)
    assert second.take(40) and budget.used == 100
    first.give_back()
    assert (first.held, budget.used) == (0, 40)
    assert first.take(60)


def test_a_share_holds_no_more_than_its_most() -> None:
    budget = InboundBudget(100)
    share = budget.share(30)
    assert share.take(25) and share.take(25)  # (the second counts 5)
    assert (share.held, budget.used) == (30, 30)
    assert share.take(1000) and budget.used == 30


def test_a_smaller_budget_refuses_new_takes_and_keeps_what_is_held() -> None:
    budget = InboundBudget(100)
    share = budget.share(1000)
    assert share.take(80)
    budget.resize(50)
    assert not budget.share(1000).take(1)
    share.give_back()
    assert budget.used == 0 and budget.share(1000).take(50)
