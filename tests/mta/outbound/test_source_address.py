"""Outgoing connections from a configured local address (``source_address`` of a peer or
of one of its slots, mta.outbound.channels and mta.net): the peer sees every connection
come from it, as a peer that tells MTAs apart by address (PP does) or a router that
classifies by source needs.

Site B is a real daemon on 127.0.0.1; A's connections come from other loopback addresses,
which Linux routes on lo without configuration.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from p1.mts.precedence import Precedence
from tests.support.sites import Lab, SlotSpec, eventually

pytestmark = pytest.mark.slow  # two daemons

URGENT = ("override", "flash", "immediate")
ROUTINE = ("priority", "routine", "deferred")
PEER_SOURCE, SLOT_SOURCE = "127.0.0.9", "127.0.0.10"


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    """Two slots: the urgent one with a source address of its own, the routine one with
    the peer's."""
    slots = (SlotSpec(URGENT, "CS5"), SlotSpec(ROUTINE, "CS0"))
    sites = Lab.create(tmp_path, slots=slots)
    peer = sites.a.settings["peers"][0]
    peer["source_address"] = PEER_SOURCE
    peer["slots"][0]["source_address"] = SLOT_SOURCE
    try:
        yield sites
    finally:
        await sites.close()


def _bind_sources(caplog: pytest.LogCaptureFixture) -> set[str]:
    """The source addresses of the binds B accepted from MTA-A."""
    lines = (r.getMessage() for r in caplog.records)
    return {line.split(":", 1)[0] for line in lines if "bind from 'MTA-A' accepted" in line}


async def test_each_slot_connects_from_its_source_address(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400")
    await lab.start()
    a, b = lab.a, lab.b
    await a.send(a.address("Smith"), b.address("Jones"), precedence=Precedence.FLASH)
    await a.send(a.address("Smith"), b.address("Jones"), precedence=Precedence.ROUTINE)
    await eventually(
        lambda: b.inbox(b.address("Jones")),
        lambda got: len(got) == 2,
        what="both delivered at B",
    )
    assert _bind_sources(caplog) == {PEER_SOURCE, SLOT_SOURCE}
