"""Which process of a site holds what (mta.operator.operations, mta.operator.scrape,
client.ctl_local): ``status`` names this process and counts the recipients in flight per
owner with its lease, ``queue`` lists them under its table, and the Prometheus figures
carry the same, labelled by owner.

Site A runs on its SQLite store with B down, so nothing it queues for B is sent; the
claims of the site's other processes (one live, one whose lease lapsed) are made in A's
store as those processes would make them.  A's own lease is an hour, so A takes nothing
back while the test looks.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from client import x400ctl
from mta.operator.scrape import read_figures
from p1.mts.precedence import Precedence
from store.db import transaction
from store.queue import TransitQueue
from tests.support.sites import Lab, Site

pytestmark = pytest.mark.slow  # a daemon

JONES_AT_B = "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones"
LIVE, DEAD = "MTA-A/a2:0001", "MTA-A/a3:0002"


@pytest.fixture
async def site(tmp_path: Path) -> AsyncIterator[Site]:
    lab = Lab.create(tmp_path)
    lab.a.settings["queue"] = {"lease": "1h"}
    await lab.a.start()
    try:
        yield lab.a
    finally:
        await lab.close()


async def claim(site: Site, precedence: Precedence, owner: str, lease: timedelta) -> None:
    """Claim the one message of ``precedence`` for B as ``owner`` would, leased ``lease``
    from now (negative: lapsed)."""

    def unit() -> None:
        with transaction(site.running.db.engine) as session:
            now = datetime.now(UTC)
            queue = TransitQueue(session)
            claimed = queue.claim_next("MTA-B", {precedence}, now, owner=owner, lease=lease)
            assert len(claimed) == 1

    await site.running.db.run(unit)


@pytest.fixture
async def held(site: Site) -> Site:
    """Five messages for B: one claimed by this process, two by a live other process
    (its lease an hour ahead), one by a process whose lease lapsed an hour ago, one
    pending."""
    for precedence in (Precedence.FLASH, Precedence.IMMEDIATE, Precedence.PRIORITY):
        await site.send(site.address("Smith"), JONES_AT_B, precedence)
    await site.send(site.address("Smith"), JONES_AT_B, Precedence.ROUTINE, count=2)
    await claim(site, Precedence.FLASH, site.running.owner, timedelta(hours=1))
    await claim(site, Precedence.IMMEDIATE, LIVE, timedelta(hours=1))
    await claim(site, Precedence.ROUTINE, LIVE, timedelta(hours=1))
    await claim(site, Precedence.PRIORITY, DEAD, -timedelta(hours=1))
    return site


async def test_status_counts_in_flight_per_owner(held: Site) -> None:
    own = held.running.owner
    assert own.startswith("MTA-A/")
    status = await held.api({"op": "status"})
    assert status["owner"] == own
    assert status["recipients"]["in_flight"] == 4
    by_owner = {
        o["owner"]: (o["recipients"], o["lapsed"], o["this_process"]) for o in status["in_flight"]
    }
    assert by_owner == {own: (1, False, True), LIVE: (2, False, False), DEAD: (1, True, False)}
    queue = await held.api({"op": "queue"})
    assert queue["in_flight"] == status["in_flight"] and queue["owner"] == own


async def test_x400ctl_shows_who_holds_what(held: Site, capsys: pytest.CaptureFixture[str]) -> None:
    own = held.running.owner
    code = await asyncio.to_thread(x400ctl.main, ["status", "--socket", str(held.socket)])
    out = capsys.readouterr().out
    assert code == x400ctl.EXIT_OK
    lines = out.splitlines()
    assert f"process: {own}" in lines
    assert any(f"in flight 1 by {own} (this process), lease until " in line for line in lines)
    assert any(f"in flight 2 by {LIVE}, lease until " in line for line in lines)
    assert f"  in flight 1 by {DEAD}, lease lapsed: a live process takes them back" in lines
    code = await asyncio.to_thread(x400ctl.main, ["queue", "--socket", str(held.socket)])
    out = capsys.readouterr().out
    assert code == x400ctl.EXIT_OK
    rows = {
        line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("MTA-A/")
    }
    assert rows[own][:3] == ["(this", "process)", "1"]
    assert rows[LIVE][:2] == ["2", "until"]
    assert rows[DEAD][:2] == ["1", "lapsed:"]


async def test_metrics_name_the_process_and_count_in_flight_per_owner(held: Site) -> None:
    service = held.running
    text = service.metrics.render(await read_figures(service)).decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("aiox400_instance_info", (("owner", service.owner),))] == 1
    held_by = {
        labels[0][1]: value
        for (name, labels), value in samples.items()
        if name == "aiox400_claims_in_flight"
    }
    assert held_by == {service.owner: 1, LIVE: 2, DEAD: 1}
    lease = {
        labels[0][1]: value
        for (name, labels), value in samples.items()
        if name == "aiox400_claims_lease_seconds"
    }
    assert lease[DEAD] < 0 < lease[LIVE] and lease[service.owner] > 0
