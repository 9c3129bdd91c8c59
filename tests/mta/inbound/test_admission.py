"""Admission under connection churn: a real peer is served while others hold every place.

Site B runs with its default ``[limits]``; the churn attacker (:mod:`tests.fuzz.attack_churn`)
keeps 32 idle connections open from one loopback address, or from two hundred, each
replaced well before a tenth of ``bind_timeout``, while MTA-A binds from its configured
host (127.0.0.1) and transfers, one transfer after another.  Every transfer must be
served: a configured peer's address never queues behind strangers.  A peer binding from
an address that is not its configured host is a stranger too; with the attacker spread
over many addresses it still gets a place, since a newcomer takes the place of the
oldest connection of the address that holds the most.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from p1.association.mtabind import MTABindArgument
from tests.fuzz.attack_churn import SOURCES_MANY, SOURCES_ONE, Churn, Served, transfers
from tests.support.sites import A, Lab, until

pytestmark = pytest.mark.slow  # a daemon under a flood for some seconds

A_BINDS = MTABindArgument(initiator_name=A.name, password=A.password)
TRANSFERS = 20


async def served_during_churn(
    lab: Lab, sources: Sequence[str], *, source: str = "127.0.0.1", seed: int = 1
) -> Served:
    """Site B started with default limits; MTA-A's transfers from ``source`` while
    ``sources`` churn."""
    await lab.b.start()
    port = lab.b.running.listening_ports[0]
    warm = await transfers(port, 1, argument=A_BINDS)  # (the codec is compiled)
    assert warm.served == 1, warm.errors
    stop = asyncio.Event()
    churn = Churn(port, sources, seed=seed)
    attacker = asyncio.create_task(churn.run(stop))
    try:
        await asyncio.sleep(3.0)  # every place taken, the first ones replaced
        served = await transfers(
            port, TRANSFERS, argument=A_BINDS, source=source, pause=0.1, timeout=10.0
        )
    finally:
        stop.set()
        figures = await attacker
    assert figures.opened > 100  # the attacker did churn
    return served


async def test_a_configured_peer_is_served_while_one_address_churns(lab: Lab) -> None:
    served = await served_during_churn(lab, SOURCES_ONE)
    assert served.served == TRANSFERS, served.errors


async def test_a_configured_peer_is_served_while_many_addresses_churn(lab: Lab) -> None:
    served = await served_during_churn(lab, SOURCES_MANY)
    assert served.served == TRANSFERS, served.errors


async def test_a_peer_from_another_address_gets_a_place_while_many_addresses_churn(
    lab: Lab,
) -> None:
    served = await served_during_churn(lab, SOURCES_MANY, source="127.0.0.9")
    assert served.served >= TRANSFERS // 2, served.errors


async def test_a_peer_configured_by_host_name_is_known_once_resolved(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    lab.b.settings["peers"][0]["host"] = "localhost"
    lab.b.settings.setdefault("peers", []).append(
        {
            **lab.b.settings["peers"][0],
            "name": "MTA-X",
            "host": "no-such-host.invalid",
            "routes": ["C=GB;ADMD= ;PRMD=SITEX"],
        }
    )
    await lab.b.start()
    guard = lab.b.running.guard
    await until(lambda: "127.0.0.1" in guard.known, what="localhost resolved", timeout=15.0)
    await until(
        lambda: any("no-such-host.invalid" in m for m in caplog.messages),
        what="the host that does not resolve said",
        timeout=15.0,
    )
    [line] = [m for m in caplog.messages if "no-such-host.invalid" in m]
    assert line.startswith("cannot resolve peer MTA-X's host 'no-such-host.invalid'")
    assert line.endswith("its connections are admitted as a stranger's")
