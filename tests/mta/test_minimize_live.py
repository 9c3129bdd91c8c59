"""MINIMIZE between two live sites: with MINIMIZE at immediate, site A transfers its flash
and immediate messages to B while 200 routine, 40 priority and 40 deferred ones stay pending
at A, never attempted; ``x400ctl minimize off`` lets them go in precedence order, and B
delivers every one of them once."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from client import x400ctl
from p1.mts.precedence import Precedence
from tests.support.sites import Lab, Site, eventually

pytestmark = pytest.mark.slow  # two sites, 200 messages

P = Precedence
ROUTINE = 200
PRIORITY = 40
DEFERRED = 40
HELD = ROUTINE + PRIORITY + DEFERRED


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    made = Lab.create(tmp_path)
    await made.start()
    try:
        yield made
    finally:
        await made.close()


async def subjects(site: Site, user: str) -> Counter[str]:
    return Counter(str(m["subject"]) for m in await site.inbox(user))


async def recipients_at_a(site: Site) -> dict[str, Any]:
    states: dict[str, Any] = (await site.api({"op": "status"}))["recipients"]
    return states


async def test_minimize_holds_back_routine_and_off_releases_it_all(lab: Lab) -> None:
    a, b = lab.a, lab.b
    jones = b.address("Jones")
    code = await asyncio.to_thread(
        x400ctl.main, ["minimize", "immediate", "--socket", str(a.socket)]
    )
    assert code == x400ctl.EXIT_OK
    smith = a.address("Smith")
    await a.send(smith, jones, P.ROUTINE, count=ROUTINE, subject="routine")
    await a.send(smith, jones, P.DEFERRED, count=DEFERRED, subject="deferred")
    await a.send(smith, jones, P.PRIORITY, count=PRIORITY, subject="priority")
    await a.send(smith, jones, P.FLASH, subject="flash")
    await a.send(smith, jones, P.IMMEDIATE, subject="immediate")

    await eventually(
        lambda: subjects(b, jones),
        lambda seen: seen == Counter(flash=1, immediate=1),
        what="flash and immediate delivered at B",
    )
    states = await recipients_at_a(a)
    assert states.get("pending") == HELD
    assert states.get("in_flight", 0) == 0
    waiting = (await a.api({"op": "messages", "limit": HELD + 10}))["recipients"]
    assert len(waiting) == HELD
    assert {(m["precedence"], m["attempts"]) for m in waiting} == {
        ("priority", 0),
        ("routine", 0),
        ("deferred", 0),
    }
    assert await subjects(b, jones) == Counter(flash=1, immediate=1)

    code = await asyncio.to_thread(x400ctl.main, ["minimize", "off", "--socket", str(a.socket)])
    assert code == x400ctl.EXIT_OK
    await eventually(
        lambda: subjects(b, jones),
        lambda seen: seen["routine"] + seen["priority"] + seen["deferred"] >= HELD,
        what=f"{HELD} held messages delivered at B",
    )
    assert await subjects(b, jones) == Counter(
        routine=ROUTINE, priority=PRIORITY, deferred=DEFERRED, flash=1, immediate=1
    )
    order = delivery_order(await b.inbox(jones))
    # Priority has a slot of its own: none of it waits behind the routine backlog.
    assert max(order["priority"]) < max(order["routine"])
    # Routine and deferred share a slot of two connections: deferred goes after routine,
    # give or take what the two connections' windows hold at the turn.
    assert sorted(order["routine"])[ROUTINE * 3 // 4] < min(order["deferred"])
    await eventually(
        lambda: recipients_at_a(a),
        lambda states: not states.get("pending") and not states.get("in_flight"),
        what="nothing left waiting at A",
    )


def delivery_order(entries: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Entry numbers (B's commit order) by subject."""
    order: dict[str, list[int]] = {}
    for entry in entries:
        order.setdefault(str(entry["subject"]), []).append(int(entry["id"]))
    return order
