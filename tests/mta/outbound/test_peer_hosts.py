"""A peer reachable at several hosts under one MTA name (mta.outbound.channels): each
connection of a slot starts at a different host and moves to the next when one cannot be
connected to, so a dead process of the peer's site does not stop the slot.

Site B is a real daemon listening on 127.0.0.1; A's peer entry for B names 127.0.0.2
first, where nothing listens on B's port (the connection is refused), then 127.0.0.1.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.sites import Lab, SlotSpec, eventually

pytestmark = pytest.mark.slow  # two daemons

EVERY_PRECEDENCE = ("override", "flash", "immediate", "priority", "routine", "deferred")
DEAD, LIVE = "127.0.0.2", "127.0.0.1"
COUNT = 64
"""Enough that connection 0 is still working through them (one claim takes at most 16)
when the slot next reads its backlog, however quickly the peer answers."""


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    """One slot of two connections, each opened as soon as a message waits."""
    slot = SlotSpec(EVERY_PRECEDENCE, "CS0", max_connections=2, backlog_threshold=1)
    sites = Lab.create(tmp_path, slots=(slot,))
    sites.a.settings["peers"][0]["host"] = [DEAD, LIVE]
    try:
        yield sites
    finally:
        await sites.close()


async def test_a_slot_reaches_the_peer_past_a_host_that_refuses(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400")
    await lab.start()
    a, b = lab.a, lab.b
    # Held under MINIMIZE, then all due at once: the slot then wants both connections
    # (sent one by one, each went straight to connection 0 and none waited for #1; eight
    # at once were sometimes all sent before the slot looked at its backlog).
    await a.api({"op": "minimize", "precedence": "flash"})
    sent = await a.send(a.address("Smith"), b.address("Jones"), count=COUNT)
    await a.api({"op": "minimize", "precedence": "off"})
    inbox = await eventually(
        lambda: b.inbox(b.address("Jones")),
        lambda got: len(got) == COUNT,
        what="all delivered at B",
    )
    assert len(inbox) == len(sent)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("MTA-B/")]
    # Connection 0 starts at the first host, is refused there and goes on to the second.
    assert any(f"#0: cannot connect to {DEAD}" in line and "next host" in line for line in lines)
    assert any(f"#0: connected to {LIVE}" in line for line in lines)
    # Connection 1 starts at the second host: the slot's connections spread over them.
    assert any(f"#1: connected to {LIVE}" in line for line in lines)
    assert not any(f"#1: cannot connect to {DEAD}" in line for line in lines)
