"""A peer reachable at several hosts: every host's addresses are known peer addresses to
the admission guard (mta.inbound.guard), at start and at each reload."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import cast

from config import MtaConfig, load_config
from config.schema import ConnectionLimits
from mta.inbound.guard import Guard
from mta.inbound.listeners import Listeners, peer_addresses
from mta.link import Timeouts
from mta.metrics import Metrics
from mta.transport import InboundSink
from p1.association.connection import AssociationSettings

ALL = '"override", "flash", "immediate", "priority", "routine", "deferred"'
SLOT = f"[[peers.slots]]\nprecedences = [{ALL}]\nport = 5000\n"


def config_with(tmp_path: Path, hosts: str) -> MtaConfig:
    path = tmp_path / "site.toml"
    path.write_text(
        'name = "MTA-A"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEA"\naccept_any_recipient = true\n'
        f'[[peers]]\nname = "MTA-B"\nhost = {hosts}\n'
        + SLOT
        + '[[peers]]\nname = "MTA-C"\nhost = "192.0.2.30"\n'
        + SLOT
    )
    return load_config(path)


def listeners_of(config: MtaConfig, guard: Guard) -> Listeners:
    return Listeners(
        config,
        cast(InboundSink, object()),  # (no connection is made)
        guard=guard,
        metrics=Metrics(),
        reachable=lambda name: None,
        settings=AssociationSettings(),
        timeouts=Timeouts(),
    )


async def test_every_host_of_a_peer_is_a_known_address(tmp_path: Path) -> None:
    config = config_with(tmp_path, '["192.0.2.10", "192.0.2.11"]')
    assert await peer_addresses(config) == {"192.0.2.10", "192.0.2.11", "192.0.2.30"}
    guard = Guard(ConnectionLimits())
    listeners = listeners_of(config, guard)
    await listeners.start()
    try:
        assert guard.known == {"192.0.2.10", "192.0.2.11", "192.0.2.30"}
        # A reload that names the peer's hosts anew: the new set, each of them.
        listeners.reconfigure(
            config_with(tmp_path, '["192.0.2.12", "localhost"]'), AssociationSettings(), Timeouts()
        )
        async with asyncio.timeout(30):
            while "127.0.0.1" not in guard.known:
                await asyncio.sleep(0.05)
        assert {"192.0.2.12", "127.0.0.1", "192.0.2.30"} <= guard.known
        assert not {"192.0.2.10", "192.0.2.11"} & guard.known
    finally:
        await listeners.stop()
