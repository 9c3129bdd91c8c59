"""MINIMIZE as the operator sets it (mta.operator.minimize, mta.operator.operations,
client.ctl_local): ``x400ctl minimize`` sets and lifts it switch-wide or per peer, it is
kept across a restart of the daemon on its SQLite store, shown by ``status`` and the
metrics, audited once per change, and a local submission below it is refused or held as
``[minimize] submissions`` says.

Site A runs with B down: nothing it queues for B is sent, so what the claim would take
is read from A's queue.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from client import x400, x400ctl
from client.api import ApiError
from mta.operator.minimize import FILE_NAME, Floors, MinimizeState
from mta.operator.scrape import read_figures
from p1.mts.precedence import Precedence
from store import AuditLog, transaction
from store.audit import AuditEvent, AuditRecord
from tests.support.sites import Lab, Site

P = Precedence
JONES_AT_B = "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones"


# --- the state file ------------------------------------------------------------------------


def test_the_state_starts_as_configured_then_keeps_what_the_operator_set(tmp_path: Path) -> None:
    assert MinimizeState.load(tmp_path, P.IMMEDIATE).floors == Floors(switch=P.IMMEDIATE)
    state = MinimizeState.load(tmp_path, P.IMMEDIATE)
    state.set(P.FLASH, "MTA-B")
    state.lift()
    state.set(P.PRIORITY, "MTA-C")
    again = MinimizeState.load(tmp_path, P.IMMEDIATE)
    assert again.floors.switch is None
    assert dict(again.floors.peers) == {"MTA-C": P.PRIORITY}


def test_a_changed_section_wins_over_the_kept_state(tmp_path: Path) -> None:
    MinimizeState.load(tmp_path, None).set(P.FLASH)
    assert MinimizeState.load(tmp_path, None).floors.switch is P.FLASH
    assert MinimizeState.load(tmp_path, P.PRIORITY).floors == Floors(switch=P.PRIORITY)


def test_an_unreadable_state_file_falls_back_to_the_section(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / FILE_NAME).write_text('{"switch": "loud"}', encoding="utf-8")
    assert MinimizeState.load(tmp_path, P.FLASH).floors == Floors(switch=P.FLASH)
    assert "not a MINIMIZE state" in caplog.text


def test_a_peer_gets_the_higher_of_the_switch_wide_and_its_own_floor(tmp_path: Path) -> None:
    state = MinimizeState.load(tmp_path, None)
    state.set(P.IMMEDIATE)
    state.set(P.FLASH, "MTA-B")
    state.set(P.PRIORITY, "MTA-C")
    assert (state.floor("MTA-B"), state.floor("MTA-C"), state.floor("MTA-D")) == (
        P.FLASH,
        P.IMMEDIATE,
        P.IMMEDIATE,
    )
    state.lift("MTA-B")
    assert state.floor("MTA-B") is P.IMMEDIATE
    state.lift()
    assert (state.floor("MTA-B"), state.floor("MTA-C")) == (None, None)


# --- the running daemon ------------------------------------------------------------------


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    made = Lab.create(tmp_path)
    try:
        yield made
    finally:
        await made.close()


async def minimized(site: Site) -> list[AuditRecord]:
    def records() -> list[AuditRecord]:
        with transaction(site.running.db.engine, read_only=True) as session:
            recent = AuditLog(session).recent(100)
        return [r for r in recent if r.event is AuditEvent.MINIMIZED]

    return await site.running.db.run(records)


async def gauge(site: Site) -> dict[str, float]:
    service = site.running
    text = service.metrics.render(await read_figures(service)).decode()
    return {
        s.labels["peer"]: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "aiox400_minimize_precedence"
    }


@pytest.mark.slow
async def test_minimize_is_set_shown_audited_and_kept_across_a_restart(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    a = lab.a
    await a.start()
    assert (await a.api({"op": "status"}))["minimize"]["shown"] == "off"
    assert await gauge(a) == {"MTA-B": 0}

    code = await asyncio.to_thread(
        x400ctl.main, ["minimize", "immediate", "--socket", str(a.socket)]
    )
    assert code == x400ctl.EXIT_OK
    assert capsys.readouterr().out == "MINIMIZE: immediate and above to every peer\n"
    code = await asyncio.to_thread(
        x400ctl.main, ["minimize", "flash", "--peer", "MTA-B", "--socket", str(a.socket)]
    )
    assert code == x400ctl.EXIT_OK
    shown = "immediate and above to every peer; flash and above to MTA-B"
    assert capsys.readouterr().out == f"MINIMIZE: {shown}\n"
    assert await gauge(a) == {"MTA-B": int(P.FLASH)}
    code = await asyncio.to_thread(x400ctl.main, ["status", "--socket", str(a.socket)])
    assert f"MINIMIZE: {shown}" in capsys.readouterr().out.splitlines()
    records = await minimized(a)
    assert [(r.peer, r.detail) for r in reversed(records)] == [
        (None, "immediate (switch-wide): immediate and above to every peer"),
        ("MTA-B", f"flash (MTA-B): {shown}"),
    ]

    await a.stop()
    await a.start()
    answer = await a.api({"op": "minimize"})
    assert answer["minimize"] == {
        "switch": "immediate",
        "peers": {"MTA-B": "flash"},
        "shown": shown,
    }
    assert a.running.minimize.floor("MTA-B") is P.FLASH

    off = await a.api({"op": "minimize", "precedence": "off"})
    assert off["minimize"]["shown"] == "off"
    assert len(await minimized(a)) == 3
    await a.stop()
    await a.start()
    assert (await a.api({"op": "minimize"}))["minimize"]["shown"] == "off"
    kept = json.loads((a.directory / "state" / FILE_NAME).read_text(encoding="utf-8"))
    assert kept == {"configured": None, "switch": None, "peers": {}}


@pytest.mark.slow
async def test_minimize_refuses_an_unknown_peer_or_precedence(lab: Lab) -> None:
    a = lab.a
    await a.start()
    with pytest.raises(ApiError, match="no peer 'MTA-Z'; known: MTA-B"):
        await a.api({"op": "minimize", "precedence": "flash", "peer": "MTA-Z"})
    with pytest.raises(ApiError, match="loud"):
        await a.api({"op": "minimize", "precedence": "loud"})
    assert (await a.api({"op": "minimize"}))["minimize"]["shown"] == "off"
    assert await minimized(a) == []


@pytest.mark.slow
async def test_a_submission_below_minimize_is_refused_when_so_configured(lab: Lab) -> None:
    a = lab.a
    a.settings["minimize"] = {"precedence": "immediate", "submissions": "refuse"}
    await a.start()
    smith = a.address("Smith")
    argv = ["send", "--socket", str(a.socket), "--from", smith, "--to", JONES_AT_B]
    code, out, err = await a.x400(*argv, "--precedence", "routine", "--body", "x")
    assert code != x400.EXIT_OK
    assert out == ""
    assert "MINIMIZE in force, only immediate and above are accepted (this one is routine)" in err
    assert await a.send(smith, JONES_AT_B, P.FLASH)
    counts = (await a.api({"op": "status"}))["recipients"]
    assert sum(counts.values()) == 1


@pytest.mark.slow
async def test_a_submission_below_minimize_is_held_by_default(lab: Lab) -> None:
    a = lab.a
    a.settings["minimize"] = {"precedence": "immediate"}
    await a.start()
    smith = a.address("Smith")
    assert await a.send(smith, JONES_AT_B, P.ROUTINE, count=3)
    assert await a.send(smith, JONES_AT_B, P.FLASH)
    queue = a.running._queue  # the transfer queue the slots claim from
    assert queue is not None
    assert await queue.backlog("MTA-B", set(Precedence)) == 1
    await a.api({"op": "minimize", "precedence": "off"})
    assert await queue.backlog("MTA-B", set(Precedence)) == 4
