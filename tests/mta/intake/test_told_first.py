"""After a transfer's commit at the receiving MTA (mta.intake.intake), the users its
delivery reached are told first: a wait on the mailbox is woken before the transfer's
log line and counters are written.  Two MTAs on loopback (:mod:`tests.support.sites`)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.sites import Lab, eventually

pytestmark = pytest.mark.slow  # two daemons


async def test_a_delivery_wakes_its_users_before_the_transfer_is_counted(lab: Lab) -> None:
    await lab.start()
    service = lab.b.service
    assert service is not None
    intake = service.intake
    order: list[str] = []
    stored, received = intake.watch.stored, intake.metrics.received

    def stored_first(*args: Any, **kwargs: Any) -> None:
        order.append("told")
        stored(*args, **kwargs)

    def then_counted(*args: Any, **kwargs: Any) -> None:
        order.append("counted")
        received(*args, **kwargs)

    intake.watch.stored = stored_first  # type: ignore[method-assign]
    intake.metrics.received = then_counted  # type: ignore[method-assign]
    await lab.a.send(lab.a.address("Smith"), lab.b.address("Jones"))
    await eventually(
        lambda: lab.b.inbox(lab.b.address("Jones")),
        lambda got: len(got) == 1,
        what="the message in B's mailbox",
    )
    assert order == ["told", "counted"]
