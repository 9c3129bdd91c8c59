"""A reload applies peers, slots, routes, limits and retention to a running MTA
(mta/reload.py), between two live sites of the lab sending real messages.

A peer added gets runners that carry a message; one removed loses them and what waits
for it stays queued (a WARNING counts it) until it is configured again; a slot whose
port or DSCP changes gets a new runner whose connection carries the next message; a
peer left as it was keeps its runners and its connections; a reload in the middle of a
stream of transfers loses and duplicates nothing (B's deliveries, received keys and
audit records against A's submissions, with no duplicate seen by B); a bad file, or a
failure to apply a good one, changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Sized
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.orm import Session

from config.loader import load_config
from config.schema import MtaConfig
from mta import service as service_module
from mta.operator.reload import Reloader, compare_peers
from mta.outbound.channels import SlotRunner
from p1.mts.precedence import Precedence
from store.models import AuditEntry, ReceivedKey
from tests.support.sites import (
    LAB_SLOTS,
    B,
    Lab,
    ReservedPorts,
    Site,
    SlotSpec,
    eventually,
    peer_settings,
    solo_site,
    until,
)

CHANNEL = "aiox400.channel"


def _reload(site: Site) -> None:
    """Write the site's settings and reload its running daemon, as SIGHUP does."""
    site.write()
    Reloader(site.running)()


def _connected(caplog: pytest.LogCaptureFixture, peer: str) -> int:
    """Connections the channel log says were opened to ``peer``'s host so far."""
    return sum(
        1
        for r in caplog.records
        if r.name == CHANNEL
        and r.getMessage().startswith(f"{peer}/")
        and "connected to" in r.getMessage()
    )


def _lines(caplog: pytest.LogCaptureFixture, text: str, level: int = logging.INFO) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level and text in r.getMessage()]


async def _up(runners: list[SlotRunner], *precedences: Precedence) -> None:
    """Wait until the slots carrying ``precedences`` have a bound connection."""
    chosen = [r for r in runners if any(r.admits(p) for p in precedences)]
    await until(lambda: all(r.snapshot().state == "up" for r in chosen), what="the slots bound")


async def _rows(site: Site, model: Any, *columns: Any) -> list[Any]:
    """Rows of ``columns`` of ``model`` in the site's database, read by its own thread."""

    def read(session: Session) -> list[Any]:
        return list(session.execute(select(*columns)).all())

    return await site.running.db.batch(read, durable=False)


async def _events(site: Site, event: str) -> list[str]:
    """The MTS identifiers of the site's audit records of ``event``."""
    rows = await _rows(site, AuditEntry, AuditEntry.event, AuditEntry.mts_identifier)
    return [m for e, m in rows if e == event]


def _at_least(count: int) -> Callable[[Sized], bool]:
    return lambda found: len(found) >= count


async def test_a_peer_added_by_reload_carries_a_message(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    peers = lab.a.settings.pop("peers")
    await lab.start()
    assert lab.a.running.slot_runners == []
    lab.a.settings["peers"] = peers
    _reload(lab.a)
    assert {r.peer.name for r in lab.a.running.slot_runners} == {B.name}
    assert _lines(caplog, f"reloaded {lab.a.config_file}: peers added MTA-B")
    bob = lab.b.address("Bob")
    await lab.a.send(lab.a.address("Smith"), bob, Precedence.PRIORITY)
    await eventually(lambda: lab.b.inbox(bob), lambda found: len(found) == 1, what="delivery")


@pytest.mark.slow
async def test_a_peer_removed_by_reload_leaves_its_queue_waiting_until_it_is_back(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    await lab.start()
    await lab.b.stop()
    bob = lab.b.address("Bob")
    await lab.a.send(lab.a.address("Smith"), bob, Precedence.ROUTINE, count=3)
    peers = lab.a.settings.pop("peers")
    _reload(lab.a)
    assert lab.a.running.slot_runners == []
    warning = "peer MTA-B removed: 3 recipient(s) queued for it have no peer now"
    await until(lambda: bool(_lines(caplog, warning, logging.WARNING)), what="the warning")
    status = await lab.a.api({"op": "status"})
    assert "degraded" not in status or not status["degraded"]

    lab.a.settings["peers"] = peers
    _reload(lab.a)
    await lab.b.start()
    await eventually(lambda: lab.b.inbox(bob), lambda found: len(found) == 3, what="delivery")


@pytest.mark.parametrize("change", ["port", "dscp"])
async def test_a_slot_changed_by_reload_connects_anew_and_the_others_stay_up(
    lab: Lab, caplog: pytest.LogCaptureFixture, change: str
) -> None:
    caplog.set_level(logging.INFO)
    await lab.start()
    runners = lab.a.running.slot_runners
    await _up(runners, Precedence.FLASH, Precedence.IMMEDIATE, Precedence.PRIORITY)
    before = _connected(caplog, B.name)
    inbound = set(lab.b.running.listeners.associations)
    slot = lab.a.settings["peers"][0]["slots"][2]  # priority, permanent
    if change == "port":  # B's listener for the immediate slot serves it as well
        slot["port"] = lab.a.settings["peers"][0]["slots"][1]["port"]
    else:
        slot["dscp"] = "AF41"
    _reload(lab.a)

    after = lab.a.running.slot_runners
    priority = lab.a.runner(Precedence.PRIORITY)
    assert priority not in runners
    others = [r for r in runners if not r.admits(Precedence.PRIORITY)]
    assert [r for r in after if r is not priority] == others
    await _up([priority], Precedence.PRIORITY)
    assert _connected(caplog, B.name) == before + 1  # the new slot's, and no other
    # B serves A's other two permanent connections as before; the old one is released.
    await until(
        lambda: len(inbound & lab.b.running.listeners.associations) == 2, what="the old one gone"
    )
    bob = lab.b.address("Bob")
    await lab.a.send(lab.a.address("Smith"), bob, Precedence.PRIORITY)
    await eventually(lambda: lab.b.inbox(bob), lambda found: len(found) == 1, what="delivery")
    # (A logs the transfer once B's confirmation is back, which may be after B's delivery.)
    await until(lambda: bool(_lines(caplog, "transferred ")), what="A's transfer logged")
    transferred = _lines(caplog, "transferred ")[-1]
    expected = f"on port {slot['port']} {'AF41' if change == 'dscp' else 'CS1'}"
    assert expected in transferred
    assert lab.a.transfers(priority) == 1
    assert len(inbound & lab.b.running.listeners.associations) == 2
    assert _lines(caplog, "changed MTA-B")


async def test_an_unchanged_peer_keeps_its_connections_when_another_is_added(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    await lab.start()
    runners = lab.a.running.slot_runners
    await _up(runners, Precedence.FLASH, Precedence.IMMEDIATE, Precedence.PRIORITY)
    before = _connected(caplog, B.name)
    inbound = set(lab.b.running.listeners.associations)
    nowhere = ReservedPorts(1)
    try:
        everything = SlotSpec(tuple(p.label for p in Precedence), "CS0", mode="on-demand")
        other = peer_settings(B, nowhere.ports, [everything])
        other |= {"name": "MTA-C", "routes": ["C=GB;ADMD= ;PRMD=SITEC"]}
        lab.a.settings["peers"].append(other)
        lab.a.settings["limits"] = {"max_connections_per_address": 7}
        lab.a.settings["retention"] = {"interval": "2m"}
        _reload(lab.a)
        service = lab.a.running
        assert service.slot_runners[: len(runners)] == runners
        assert [r.peer.name for r in service.slot_runners[len(runners) :]] == ["MTA-C"]
        assert service.guard.limits.max_connections_per_address == 7
        assert service.config.retention.interval == 120
        assert _lines(caplog, "peers added MTA-C; limits; retention")
        bob = lab.b.address("Bob")
        await lab.a.send(lab.a.address("Smith"), bob, Precedence.FLASH)
        await eventually(lambda: lab.b.inbox(bob), lambda found: len(found) == 1, what="delivery")
        assert _connected(caplog, B.name) == before
        assert set(lab.b.running.listeners.associations) == inbound
    finally:
        await lab.a.stop()
        nowhere.close()


@pytest.mark.slow
async def test_a_reload_during_a_stream_of_transfers_loses_and_duplicates_nothing(
    lab: Lab,
) -> None:
    await lab.start()
    smith, bob = lab.a.address("Smith"), lab.b.address("Bob")
    count = 150
    sending = asyncio.create_task(lab.a.send(smith, bob, Precedence.ROUTINE, count=count))
    routine = lab.a.settings["peers"][0]["slots"][3]
    for dscp, seen in (("AF11", 1), ("CS0", count // 3), ("AF12", 2 * count // 3)):
        await eventually(lambda: lab.b.inbox(bob), _at_least(seen), what="the stream running")
        routine["dscp"] = dscp
        _reload(lab.a)
    sent = await sending
    await eventually(lambda: lab.b.inbox(bob), lambda found: len(found) >= count, what="all")

    a_audit = await eventually(
        lambda: _events(lab.a, "transferred"), _at_least(count), what="A's audit"
    )
    assert Counter(a_audit) == Counter(sent)  # each exactly once
    assert Counter(await _events(lab.b, "received")) == Counter(sent)
    assert await _events(lab.b, "duplicate") == []
    keys = await _rows(lab.b, ReceivedKey, ReceivedKey.mts_identifier)
    assert sorted(m for (m,) in keys) == sorted(sent)
    assert len(await lab.b.inbox(bob)) == count
    assert [r.snapshot().dscp for r in lab.a.running.slot_runners][3] == "AF12"


async def test_a_bad_file_or_a_failure_to_apply_changes_nothing(
    lab: Lab, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    await lab.start()
    service = lab.a.running
    config, runners, site = service.config, service.slot_runners, service.site
    slot = lab.a.settings["peers"][0]["slots"][0]
    slot["dscp"] = "CS9"
    _reload(lab.a)
    (refused,) = _lines(caplog, "reload refused", logging.ERROR)
    assert 'peers[0].slots[0].dscp = "CS9": expected' in refused

    slot["dscp"] = "EF"
    lab.a.settings["retention"] = {"interval": "1m"}

    def broken(config: object) -> None:
        raise RuntimeError("no router today")

    monkeypatch.setattr(service_module, "Router", broken)
    _reload(lab.a)
    (failed,) = _lines(caplog, "reload failed", logging.ERROR)
    assert failed.endswith("stays in force: RuntimeError: no router today")
    assert service.config is config and service.site is site
    assert service.slot_runners == runners
    assert not [r for r in runners if r.retiring]
    assert not _lines(caplog, "reloaded ")

    monkeypatch.undo()
    _reload(lab.a)
    assert service.config == load_config(lab.a.config_file)
    assert lab.a.runner(Precedence.FLASH).snapshot().dscp == "EF"


names = st.sets(st.sampled_from(["MTA-B", "MTA-C", "MTA-D", "MTA-E"]))


@given(old=names, new=names, hosts=st.sets(st.sampled_from(["MTA-C", "MTA-D"])))
def test_compare_peers_sorts_every_name_once(
    old: set[str], new: set[str], hosts: set[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = _config(tmp_path_factory, old, set())
    changed = _config(tmp_path_factory, new, hosts)
    peers = compare_peers(base.peers, changed.peers)
    assert set(peers.added) == new - old
    assert set(peers.removed) == old - new
    assert set(peers.changed) == new & old & hosts
    assert peers.routed == ()


def _config(factory: pytest.TempPathFactory, names: set[str], moved: set[str]) -> MtaConfig:
    """A configuration with a peer of each name (on another host when in ``moved``)."""
    site = solo_site(factory.mktemp("site"))
    peers = []
    for name in sorted(names):
        peer = peer_settings(B, _PORTS, LAB_SLOTS)
        peer |= {"name": name, "routes": [f"C=GB;ADMD= ;PRMD={name}"]}
        peer["host"] = "127.0.0.2" if name in moved else "127.0.0.1"
        peers.append(peer)
    site.settings["peers"] = peers
    return load_config(site.write())


_PORTS = (1102, 1103, 1104, 1105)
