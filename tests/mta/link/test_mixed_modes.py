"""A relay across both modes: A speaks 1984 to B, B relays on in 1988 normal mode to C.

Three live daemons on loopback.  A routes C's domain through B and calls B as a 1984
MTA (``protocol = "1984"``, X.410-1984 mode, down-grading); B calls C in normal mode,
and A in normal mode too.  A P2 message from Smith at A reaches Carol at C; C's
delivery report comes back through B to Smith.  B's log shows A's bind taken in
X.410-1984 mode, C's shows B's in normal mode.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.sites import (
    Identity,
    ReservedPorts,
    Site,
    SlotSpec,
    eventually,
    peer_settings,
    site_settings,
)

SITE_A = Identity("MTA-A", "C=GB;ADMD= ;PRMD=SITEA", "secret-a")
SITE_B = Identity("MTA-B", "C=GB;ADMD= ;PRMD=SITEB", "secret-b")
SITE_C = Identity("MTA-C", "C=GB;ADMD= ;PRMD=SITEC", "secret-c")
ONE_SLOT = (
    SlotSpec(
        ("override", "flash", "immediate", "priority", "routine", "deferred"),
        "CS0",
        mode="on-demand",
    ),
)


def _peer(them: Identity, port: int, routes: list[str], **extra: Any) -> dict[str, Any]:
    return peer_settings(them, [port], ONE_SLOT) | {"routes": routes, **extra}


def _site(me: Identity, port: int, peers: list[dict[str, Any]]) -> dict[str, Any]:
    return site_settings(me, [port], ONE_SLOT) | {"peers": peers}


@dataclass
class Chain:
    a: Site
    b: Site
    c: Site


@pytest.fixture
async def chain(tmp_path: Path) -> AsyncIterator[Chain]:
    ports = ReservedPorts(3)
    pa, pb, pc = ports.ports
    a = _site(SITE_A, pa, [_peer(SITE_B, pb, [SITE_B.domain, SITE_C.domain], protocol="1984")])
    b = _site(SITE_B, pb, [_peer(SITE_A, pa, [SITE_A.domain]), _peer(SITE_C, pc, [SITE_C.domain])])
    c = _site(SITE_C, pc, [_peer(SITE_B, pb, [SITE_B.domain, SITE_A.domain])])
    sites = Chain(
        Site(SITE_A, tmp_path / "a", a),
        Site(SITE_B, tmp_path / "b", b),
        Site(SITE_C, tmp_path / "c", c),
    )
    for site in (sites.c, sites.b, sites.a):
        await site.start()
    try:
        yield sites
    finally:
        for site in (sites.a, sites.b, sites.c):
            await site.stop()
        ports.close()


async def test_a_message_relayed_from_1984_mode_into_normal_mode_and_reported_back(
    chain: Chain, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    smith, carol = chain.a.address("Smith"), chain.c.address("Carol")
    code, out, err = await chain.a.x400(
        *("send", "--socket", str(chain.a.socket), "--from", smith, "--to", carol, "--p2"),
        *("--precedence", "priority", "--subject", "across", "--body", "hello", "-r"),
    )
    assert code == 0, err
    identifier = out.strip()

    async def delivered() -> int:
        return len(await chain.c.inbox(carol))

    await eventually(delivered, lambda n: n == 1, what=f"{identifier} delivered to Carol")
    reports = await eventually(
        lambda: chain.a.reports(smith), lambda found: len(found) == 1, what="Carol's report"
    )
    assert reports[0].content.subject_identifier.text == identifier
    assert reports[0].content.recipients[0].delivered
    accepted = [r.getMessage() for r in caplog.records if "accepted" in r.getMessage()]
    assert any("'MTA-A' accepted (X.410-1984 mode)" in line for line in accepted)
    from_b = [line for line in accepted if "bind from 'MTA-B' accepted" in line]
    assert from_b and not [line for line in from_b if "X.410" in line]
    assert not [r for r in caplog.records if r.exc_info]
