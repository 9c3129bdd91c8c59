"""The churn attacker against a live site, with a fixed seed (:mod:`tests.fuzz.attack_churn`).

Each round draws the attacker's shape from the seed (how many places it holds, how long
each connection lives, which prefix of a CR it sends, FIN or RST) and runs it from one
address, then from two hundred, against site B of the lab with its default ``[limits]``,
while MTA-A transfers from its configured host.  Every transfer is served, the daemon
logs no traceback and nothing at ERROR, and once the attacker has gone the guard's counts
are back to zero (no connection is counted twice or forgotten).  The long run is
``benchmarks/churn.py``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from p1.association.mtabind import MTABindArgument
from tests.fuzz.attack_churn import DEFAULT_SEED, SOURCES_MANY, SOURCES_ONE, Churn, transfers
from tests.support.sites import A, Lab, until

pytestmark = pytest.mark.slow  # a live site under churn for some seconds

A_BINDS = MTABindArgument(initiator_name=A.name, password=A.password)
TRANSFERS = 8


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    sites = Lab.create(tmp_path)
    try:
        yield sites
    finally:
        await sites.close()


@pytest.mark.parametrize("sources", [SOURCES_ONE, SOURCES_MANY], ids=["one", "many"])
async def test_churn_leaves_a_peer_served_and_the_counts_balanced(
    lab: Lab, caplog: pytest.LogCaptureFixture, sources: tuple[str, ...]
) -> None:
    caplog.set_level(logging.INFO)
    draw = random.Random(DEFAULT_SEED + len(sources))
    await lab.b.start()
    port = lab.b.running.listening_ports[0]
    guard = lab.b.running.guard
    assert (await transfers(port, 1, argument=A_BINDS)).served == 1  # (the codec loads)
    shortest = draw.uniform(0.05, 0.5)
    churn = Churn(
        port,
        sources,
        places=draw.randint(32, 64),  # (at least every unbound place)
        lifetime=(shortest, shortest + draw.uniform(0.1, 2.0)),
        seed=draw.randrange(1 << 30),
    )
    stop = asyncio.Event()
    attacker = asyncio.create_task(churn.run(stop))
    try:
        await asyncio.sleep(1.0)
        served = await transfers(port, TRANSFERS, argument=A_BINDS, pause=0.05)
    finally:
        stop.set()
        figures = await attacker
    assert served.served == TRANSFERS, served.errors
    assert figures.opened > churn.places
    await until(
        lambda: (guard.connections, guard.unbound) == (0, 0),
        what="every connection the attacker held released",
    )
    loud = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert loud == []
