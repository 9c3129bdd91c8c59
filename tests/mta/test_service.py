"""The MTA daemon end to end: two Services in one event loop, on loopback, with SQLite files.

Site A and site B (:mod:`tests.support.sites`) are configured as in ``config/examples``: one
slot per DSCP, three permanent, routine and deferred on demand.  Messages are submitted
with the ``x400`` client, read back with the local API, and every wait is a poll with a
deadline that only a failing test reaches.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from client.api import ApiError, AsyncConnection, call
from config.schema import RetryPolicy
from mta import command, daemon
from mta.database import Database
from mta.intake.intake import Intake
from mta.intake.plan import domain_of
from mta.intake.units import IntakeUnits
from mta.link import BindRefusedError, open_link
from mta.outbound import channels
from mta.transport import ConnectionState
from p1.association.mtabind import MTABindArgument, MTABindError
from p1.ipms.ipm import (
    P772_CONTENT_TYPE,
)
from p1.mts.envelope import (
    Message,
    Report,
    decode_mts_apdu,
)
from p1.mts.orname import parse_orname
from p1.mts.precedence import Precedence
from p1.mts.report import (
    DeliveryReport,
    NonDeliveryDiagnostic,
    NonDeliveryReason,
    NonDeliveryReport,
)
from p1.mts.trace import InternalTraceEntry
from store import LOCAL_ROUTE
from tests.support.sites import (
    SENT,
    A,
    B,
    Lab,
    Site,
    eventually,
    message_from_a,
    solo_site,
    transfer_as_a,
    until,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "config" / "examples"


@pytest.fixture
async def solo(tmp_path: Path) -> AsyncIterator[Site]:
    """Site A alone (no peers), started."""
    site = solo_site(tmp_path / "solo")
    await site.start()
    try:
        yield site
    finally:
        await site.stop()


def smith(site: Site) -> str:
    return site.address("Smith")


def jones(site: Site) -> str:
    return site.address("Jones")


def non_delivery(report: Report) -> list[NonDeliveryReport]:
    """The non-delivery outcomes a report gives (one per recipient)."""
    outcomes = [r.last_trace_information.report for r in report.content.recipients]
    return [o for o in outcomes if isinstance(o, NonDeliveryReport)]


async def until_connected(site: Site, *precedences: Precedence) -> None:
    """Wait until the slot admitting ``precedences`` holds an idle, bound connection."""
    runner = site.runner(*precedences)

    def connected() -> bool:
        connections = runner.snapshot().connections
        return bool(connections) and all(c.state == "idle" for c in connections)

    await until(connected, what=f"{runner.name} connected")


async def queue_states(site: Site, route: str) -> dict[str, int]:
    """Recipients on ``route`` by state."""
    states: dict[str, int] = {}
    for count in (await site.api({"op": "queue"}))["counts"]:
        if count["route"] == route:
            states[count["state"]] = states.get(count["state"], 0) + count["recipients"]
    return states


# --- precedences end to end ------------------------------------------------------------


@pytest.mark.slow
async def test_each_precedence_is_delivered_once_and_its_delivery_report_comes_back(
    lab: Lab,
) -> None:
    await lab.start()
    sent: dict[str, Precedence] = {}
    for precedence in Precedence:
        (identifier,) = await lab.a.send(
            smith(lab.a), jones(lab.b), precedence, delivery_report=True
        )
        sent[identifier] = precedence

    reports = await eventually(
        lambda: lab.a.reports(smith(lab.a)),
        lambda found: len(found) >= len(sent),
        what="six delivery reports at A",
    )
    delivered = await lab.b.inbox(jones(lab.b))
    assert sorted(m["mts_identifier"] for m in delivered) == sorted(sent)
    assert {m["mts_identifier"]: m["precedence"] for m in delivered} == {
        identifier: precedence.label for identifier, precedence in sent.items()
    }
    assert sorted(r.content.subject_identifier.text for r in reports) == sorted(sent)
    for report in reports:
        (recipient,) = report.content.recipients
        assert isinstance(recipient.last_trace_information.report, DeliveryReport)
        assert recipient.actual_recipient_name.canonical == parse_orname(jones(lab.b)).canonical


async def test_a_large_message_is_relayed_through_both_spools_and_deleted_with_its_entry(
    lab: Lab,
) -> None:
    await lab.start()
    argv = ["send", "--socket", str(lab.a.socket), "--from", smith(lab.a), "--to", jones(lab.b)]
    code, out, err = await lab.a.x400(*argv, "--subject", "big", "--size", "1M")
    assert code == 0, err
    (entry,) = await eventually(
        lambda: lab.b.inbox(jones(lab.b)), lambda found: len(found) == 1, what="1 MB at B"
    )
    _, apdu = await lab.b.read(jones(lab.b), entry["id"])
    message = decode_mts_apdu(apdu)
    assert isinstance(message, Message)
    assert message.envelope.mts_identifier.text == out.strip()
    assert len(message.content) > 1024 * 1024 and entry["size"] == len(apdu)
    a_files, b_files = spooled(lab.a), spooled(lab.b)
    assert len(a_files) == 1  # A's queue keeps what it transferred until it is purged
    assert len(b_files) == 1 and b_files[0].stat().st_size == len(apdu)  # B's mailbox
    answer = await lab.b.api({"op": "delete", "user": jones(lab.b), "ids": [entry["id"]]})
    assert answer["deleted"] == 1
    assert spooled(lab.b) == []


def spooled(site: Site) -> list[Path]:
    """The APDU files in the spool folder of the site's database (not the blank ones)."""
    folder = site.directory / "state" / "aiox400.db-apdus"
    return sorted(path for path in folder.iterdir() if path.stat().st_size)


@pytest.mark.slow
async def test_two_sites_on_postgresql_deliver_and_report(
    postgres_schemas: Callable[[], str], lab: Lab
) -> None:
    # (Asked for before the lab, so the lab stops before its schemas are dropped.)
    for site in (lab.a, lab.b):
        site.settings["database"] = postgres_schemas()  # a schema of its own each
    await lab.start()
    sent = [
        (await lab.a.send(smith(lab.a), jones(lab.b), precedence, delivery_report=True))[0]
        for precedence in (Precedence.FLASH, Precedence.ROUTINE)
    ]
    delivered = await eventually(
        lambda: lab.b.inbox(jones(lab.b)), lambda found: len(found) == 2, what="both at B"
    )
    assert sorted(m["mts_identifier"] for m in delivered) == sorted(sent)
    reports = await eventually(
        lambda: lab.a.reports(smith(lab.a)), lambda found: len(found) == 2, what="reports at A"
    )
    assert sorted(r.content.subject_identifier.text for r in reports) == sorted(sent)
    assert lab.a.running.db.engine.dialect.name == "postgresql"


async def test_each_message_travels_on_the_slot_whose_schedule_admits_it(lab: Lab) -> None:
    await lab.start()
    for precedence in Precedence:
        await lab.a.send(smith(lab.a), jones(lab.b), precedence)

    runners = lab.a.running.slot_runners
    expected = {runner.name: len(runner.slot.precedences) for runner in runners}
    await until(
        lambda: {runner.name: lab.a.transfers(runner) for runner in runners} == expected,
        what=f"transfers per slot of A: {expected}",
    )
    assert expected == {
        "MTA-B/override+flash": 2,
        "MTA-B/immediate": 1,
        "MTA-B/priority": 1,
        "MTA-B/routine+deferred": 2,
    }


async def test_a_message_wakes_only_the_slots_that_carry_its_precedence(lab: Lab) -> None:
    await lab.start()
    for precedence in (Precedence.FLASH, Precedence.IMMEDIATE, Precedence.PRIORITY):
        await until_connected(lab.a, precedence)
    runners = lab.a.running.slot_runners
    before = {runner.name: runner.wakes for runner in runners}
    await lab.a.send(smith(lab.a), jones(lab.b), Precedence.IMMEDIATE)
    await eventually(lambda: lab.b.inbox(jones(lab.b)), lambda found: len(found) == 1, what="at B")
    woken = {runner.name for runner in runners if runner.wakes != before[runner.name]}
    assert woken == {"MTA-B/immediate"}


def has_precedence(label: str, messages: list[dict[str, Any]]) -> bool:
    return any(m["precedence"] == label for m in messages)


@pytest.mark.slow
async def test_work_above_routine_is_queued_as_urgent_at_both_sites(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    queued: list[tuple[str, bool]] = []
    enqueue = Database.enqueue

    def recorded(self: Database, unit: Any, **options: Any) -> Any:
        if unit.func.__name__ in ("submit_in", "receive_and_deliver_in"):
            queued.append((unit.func.__name__, bool(options.get("urgent"))))
        return enqueue(self, unit, **options)

    monkeypatch.setattr(Database, "enqueue", recorded)
    await lab.start()
    for precedence in (Precedence.FLASH, Precedence.ROUTINE):
        label = precedence.label
        await lab.a.send(smith(lab.a), jones(lab.b), precedence, delivery_report=True)
        await eventually(
            lambda: lab.a.inbox(smith(lab.a)),
            functools.partial(has_precedence, label),
            what=f"the {label} message's delivery report back at A",
        )
    assert queued == [
        ("submit_in", True),  # A: the flash submission
        ("receive_and_deliver_in", True),  # B: the flash transfer
        ("receive_and_deliver_in", True),  # A: its delivery report, by its subject
        ("submit_in", False),
        ("receive_and_deliver_in", False),
        ("receive_and_deliver_in", False),
    ]


async def test_an_idle_connection_claims_a_submission_in_the_transaction_that_takes_it(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each committed transaction of either site: its database, and each unit with its result.
    committed: list[tuple[Database, list[tuple[str, Any]]]] = []
    run_all = Database._run_all

    def recorded(
        self: Database, units: list[Any], *, durable: bool, savepoints: bool, urgent: bool
    ) -> list[tuple[bool, Any]] | None:
        outcomes = run_all(self, units, durable=durable, savepoints=savepoints, urgent=urgent)
        if outcomes is not None:  # (None: rolled back, to be run again with savepoints)
            results = [
                (getattr(unit, "func", unit).__name__, value)  # (most units are partials)
                for (unit, *_), (ok, value) in zip(units, outcomes, strict=True)
                if ok
            ]
            committed.append((self, results))
        return outcomes

    monkeypatch.setattr(Database, "_run_all", recorded)
    await lab.start()
    flash = lab.a.runner(Precedence.FLASH)
    await until(
        lambda: [c.state for c in flash.snapshot().connections] == ["idle"],
        what="A's flash connection idle",
    )
    (identifier,) = await lab.a.send(smith(lab.a), jones(lab.b), Precedence.FLASH)
    await until(lambda: lab.a.transfers(flash) == 1, what="the flash message transferred")

    def took_it(name: str, result: Any) -> bool:
        return name == "submit_in" and result[0] == identifier

    def claimed_it(name: str, result: Any) -> bool:
        return name == "claim_in" and [e.mts_identifier for e in result] == [identifier]

    # Whatever else shares the transaction (other slots' claims, say), the one that takes
    # the submission in also claims it for the idle flash connection.
    (taken,) = [
        results
        for database, results in committed
        if database is lab.a.running.db and any(took_it(*r) for r in results)
    ]
    assert any(claimed_it(*r) for r in taken), [name for name, _ in taken]


async def test_a_flash_submission_holds_its_peers_routine_transfers_while_it_is_taken_in(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What A's give-way shows for B while each submission's unit runs.
    seen: list[tuple[Precedence, bool]] = []
    submit_in = IntakeUnits.submit_in

    def watched(self: IntakeUnits, session: Any, **kwargs: Any) -> Any:
        held = lab.a.running.give_way.under_way(lab.b.name)
        seen.append((kwargs["request"].precedence, held))
        return submit_in(self, session, **kwargs)

    monkeypatch.setattr(IntakeUnits, "submit_in", watched)
    await lab.start()
    # (The flash message last: its transfer, flash work too, may outlast its submission.)
    for precedence in (Precedence.ROUTINE, Precedence.IMMEDIATE, Precedence.FLASH):
        await lab.a.send(smith(lab.a), jones(lab.b), precedence)
    assert seen == [
        (Precedence.ROUTINE, False),
        (Precedence.IMMEDIATE, False),
        (Precedence.FLASH, True),
    ]
    flash = lab.a.runner(Precedence.FLASH)
    await until(lambda: lab.a.transfers(flash) == 1, what="the flash message transferred")
    await until(lambda: not lab.a.running.give_way.under_way(lab.b.name), what="no flash work left")


@pytest.mark.slow
async def test_delivery_reports_travel_back_at_their_subjects_precedence(lab: Lab) -> None:
    await lab.start()
    await lab.a.send(smith(lab.a), jones(lab.b), Precedence.FLASH, delivery_report=True)
    await lab.a.send(smith(lab.a), jones(lab.b), Precedence.PRIORITY, delivery_report=True)

    flash, priority = lab.b.runner(Precedence.FLASH), lab.b.runner(Precedence.PRIORITY)
    await until(
        lambda: (lab.b.transfers(flash), lab.b.transfers(priority)) == (1, 1),
        what="one report on each of B's flash and priority slots",
    )
    others = [r for r in lab.b.running.slot_runners if r not in (flash, priority)]
    assert [lab.b.transfers(r) for r in others] == [0] * len(others)
    # A lists each report at the precedence it sent the message at (a report's envelope
    # carries none: A takes it from its own queue).
    listed = await eventually(
        lambda: lab.a.inbox(smith(lab.a)), lambda found: len(found) == 2, what="two reports at A"
    )
    assert sorted((m["kind"], m["precedence"]) for m in listed) == [
        ("report", "flash"),
        ("report", "priority"),
    ]


async def test_the_channels_operation_shows_each_slot_and_its_transfers(lab: Lab) -> None:
    await lab.start()
    await lab.a.send(smith(lab.a), jones(lab.b), Precedence.IMMEDIATE)

    async def immediate_slot() -> dict[str, Any]:
        slots = (await lab.a.api({"op": "channels"}))["slots"]
        (slot,) = [s for s in slots if s["precedences"] == ["immediate"]]
        return dict(slot)

    slot = await eventually(
        immediate_slot,
        lambda s: [c["transfers"] for c in s["connections"]] == [1],
        what="one transfer on the immediate slot",
    )
    assert slot["peer"] == "MTA-B"
    assert slot["dscp"] == "CS2"
    assert slot["mode"] == "permanent"
    assert slot["port"] == lab.b.running.listening_ports[1]


# --- connections -------------------------------------------------------------------------


@pytest.mark.slow
async def test_on_demand_slot_connects_for_a_message_and_closes_after_its_idle_timeout(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400.channel")
    routine = lab.a.settings["peers"][0]["slots"][3]
    routine["idle_timeout"] = "1s"
    await lab.start()
    for precedences in ((Precedence.FLASH,), (Precedence.IMMEDIATE,), (Precedence.PRIORITY,)):
        await until_connected(lab.a, *precedences)
    runner = lab.a.runner(Precedence.ROUTINE)
    assert runner.snapshot().connections == ()

    (identifier,) = await lab.a.send(smith(lab.a), jones(lab.b), Precedence.ROUTINE)
    await eventually(
        lambda: lab.b.inbox(jones(lab.b)), lambda found: len(found) == 1, what="delivered at B"
    )
    await until(lambda: runner.snapshot().connections == (), what="the routine connection closed")

    mine = [r for r in caplog.records if r.getMessage().startswith(f"{runner.name}#")]
    connected = [r for r in mine if "connected to" in r.getMessage()]
    closed = [r for r in mine if "closed after idle timeout" in r.getMessage()]
    (transferred,) = [r for r in caplog.records if f"transferred {identifier}" in r.getMessage()]
    assert len(connected) == len(closed) == 1
    assert connected[0].created <= transferred.created
    # (log times are wall-clock: allow for a small clock step)
    assert closed[0].created - transferred.created >= 0.9


@pytest.mark.slow
async def test_permanent_slot_reconnects_after_the_peer_restarts(lab: Lab) -> None:
    await lab.start()
    (before,) = await lab.a.send(smith(lab.a), jones(lab.b), Precedence.FLASH)
    await eventually(
        lambda: lab.b.inbox(jones(lab.b)), lambda found: len(found) == 1, what="delivered at B"
    )
    await lab.b.stop()
    await lab.b.start()  # same configuration, same database

    (after,) = await lab.a.send(smith(lab.a), jones(lab.b), Precedence.FLASH)
    delivered = await eventually(
        lambda: lab.b.inbox(jones(lab.b)), lambda found: len(found) == 2, what="both at B"
    )
    assert {m["mts_identifier"] for m in delivered} == {before, after}
    runner = lab.a.runner(Precedence.FLASH)
    await until(
        lambda: (
            [(c.state, c.transfers, c.last_error) for c in runner.snapshot().connections]
            == [("idle", 2, None)]
        ),
        what="the flash slot connected again, with both transfers",
    )


async def test_a_peer_that_stays_down_is_warned_about_once_and_its_return_is_logged(
    lab: Lab, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400.channel")
    monkeypatch.setattr(channels, "_RECONNECT", RetryPolicy(initial=0.05, maximum=0.1))
    await lab.a.start()  # B is down
    runner = lab.a.runner(Precedence.FLASH)
    port = runner.slot.port

    def mine(level: int) -> list[str]:
        prefix = f"{runner.name}#0: "
        return [
            r.getMessage()[len(prefix) :]
            for r in caplog.records
            if r.levelno == level and r.getMessage().startswith(prefix)
        ]

    await until(lambda: len(mine(logging.INFO)) >= 3, what="three more failed attempts")
    (warning,) = mine(logging.WARNING)
    assert warning.startswith(f"cannot connect to 127.0.0.1 port {port}: connection refused; ")
    assert "next attempt in " in warning
    assert "attempt 2 failed the same way; next attempt in " in mine(logging.INFO)[0]

    await lab.b.start()
    again = re.compile(r"connected again after \d+ failed attempt\(s\) in [\d.]+ s")
    await until(
        lambda: any(again.fullmatch(m) for m in mine(logging.INFO)),
        what="A's flash slot connected again",
    )
    # Back to normal is news, not a warning: the only warning is the first failure's.
    assert mine(logging.WARNING) == [warning]


@pytest.mark.slow
async def test_an_idle_connection_notices_at_once_that_the_peer_went_away(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)  # (the end is INFO; failing to connect again, WARNING)
    await lab.start()
    runner = lab.a.runner(Precedence.FLASH)

    def flash_connection() -> tuple[str, str | None]:
        connections = runner.snapshot().connections
        return (connections[0].state, connections[0].last_error) if connections else ("", None)

    await until(lambda: flash_connection() == ("idle", None), what="A's flash slot idle")
    await lab.b.stop()  # no message is sent: only reading the idle association tells
    await until(
        lambda: flash_connection()[0] != "idle" and flash_connection()[1] is not None,
        what="A's flash connection found ended, and opening again",
    )
    ended = [
        r.getMessage() for r in caplog.records if "ended the idle association" in r.getMessage()
    ]
    assert any(m.startswith(f"{runner.name}#0: ") for m in ended), ended
    await lab.b.start()
    await until(lambda: flash_connection() == ("idle", None), what="connected again, unasked")


@pytest.mark.slow
async def test_slots_waiting_out_a_backoff_retry_as_soon_as_the_peer_answers(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without the peer's answer cutting it short, the backoff would outlast the test.
    monkeypatch.setattr(channels, "_RECONNECT", RetryPolicy(initial=3600.0, maximum=3600.0))
    await lab.a.start()
    (flash,) = await lab.a.send(smith(lab.a), jones(lab.b), Precedence.FLASH)
    runner = lab.a.runner(Precedence.FLASH)
    await until(
        lambda: [c.state for c in runner.snapshot().connections] == ["backoff"],
        what="the flash slot waiting out its backoff",
    )

    await lab.b.start()  # B's slots bind to A: A sees its peer answer
    delivered = await eventually(
        lambda: lab.b.inbox(jones(lab.b)), lambda found: len(found) == 1, what="delivered at B"
    )
    assert delivered[0]["mts_identifier"] == flash


@pytest.mark.slow
async def test_stopping_with_open_associations_logs_no_error(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    await lab.start()
    for site in (lab.a, lab.b):
        await until_connected(site, Precedence.FLASH)
    await lab.stop()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


@pytest.mark.slow
async def test_flash_overtakes_a_routine_backlog_built_while_the_peer_was_down(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Which of A's slots binds first when B comes back is up to their backoffs (a routine
    # slot bound first may drain the whole backlog before the flash slot binds); what is
    # asserted is the order once both are bound.  So B takes in no transfer (each waits,
    # unconfirmed, in B's receive) until every connection of A's flash and routine slots
    # is bound and has its first transfer waiting at B.
    gate = asyncio.Event()
    waiting: list[bytes] = []
    receive = Intake.receive

    async def held(self: Intake, apdu: bytes, peer: str) -> None:
        if self.units.site.name == B.name and not gate.is_set():
            waiting.append(apdu)
            await gate.wait()
        await receive(self, apdu, peer)

    monkeypatch.setattr(Intake, "receive", held)
    await lab.a.start()
    routine = await lab.a.send(smith(lab.a), jones(lab.b), Precedence.ROUTINE, count=200)
    (flash,) = await lab.a.send(smith(lab.a), jones(lab.b), Precedence.FLASH)
    await lab.b.start()
    slots = [lab.a.runner(Precedence.FLASH), lab.a.runner(Precedence.ROUTINE)]

    def each_first_transfer_waits_at_b() -> bool:
        snapshots = [slot.snapshot() for slot in slots]
        opened = [c for snapshot in snapshots for c in snapshot.connections]
        transferring = [
            c
            for runner in lab.a.running.slot_runners
            for c in runner.snapshot().connections
            if c.state is ConnectionState.TRANSFERRING
        ]
        return (
            len(opened) == sum(snapshot.max_connections for snapshot in snapshots)
            and all(c.state is ConnectionState.TRANSFERRING for c in opened)
            and len(waiting) == len(transferring)
        )

    await until(
        each_first_transfer_waits_at_b,
        what="every connection of A's flash and routine slots bound, a transfer of each at B",
    )
    assert await lab.b.inbox(jones(lab.b)) == []
    on_the_way = [mts_identifier(apdu) for apdu in waiting]
    gate.set()

    delivered = await eventually(
        lambda: lab.b.inbox(jones(lab.b)),
        lambda found: len(found) == 201,
        what="201 messages delivered at B",
    )
    ids = {m["mts_identifier"]: m["id"] for m in delivered}
    assert ids.keys() == {*routine, flash}
    # Any other message leaves A only once B has stored one of those on the way, and B
    # takes the flash message in with them: it may come after them, never after another.
    ahead = {r for r in routine if ids[r] < ids[flash]}
    assert ahead <= set(on_the_way), f"{len(ahead)} routine messages before the flash"


def mts_identifier(apdu: bytes) -> str:
    """The MTS identifier of the message a transfer carries."""
    message = decode_mts_apdu(apdu)
    assert isinstance(message, Message)
    return message.envelope.mts_identifier.text


@pytest.mark.slow
async def test_extra_routine_connection_opens_only_once_the_backlog_reaches_the_threshold(
    lab: Lab,
) -> None:
    routine = lab.a.settings["peers"][0]["slots"][3]
    assert (routine["max_connections"], routine["backlog_threshold"]) == (2, 20)
    await lab.a.start()  # B is down: the backlog stays where we put it
    runner = lab.a.runner(Precedence.ROUTINE)

    async def queue(count: int, backlog: int) -> int:
        await lab.a.send(smith(lab.a), jones(lab.b), Precedence.ROUTINE, count=count)
        await until(lambda: runner.snapshot().backlog == backlog, what=f"a backlog of {backlog}")
        return len(runner.snapshot().connections)

    assert await queue(5, backlog=5) == 1
    assert await queue(14, backlog=19) == 1
    assert await queue(1, backlog=20) == 2
    assert await queue(80, backlog=100) == 2  # max_connections

    await lab.b.start()
    await eventually(
        lambda: lab.b.inbox(jones(lab.b)),
        lambda found: len(found) == 100,
        what="100 messages delivered at B",
    )


# --- non-delivery --------------------------------------------------------------------------


async def test_recipient_without_a_route_gets_a_non_delivery_report(solo: Site) -> None:
    nowhere = "C=FR;ADMD= ;PRMD=NOWHERE;O=X;S=Nobody"
    code, out, err = await solo.x400(
        "send", "--socket", str(solo.socket), "--from", smith(solo), "--to", nowhere
    )
    assert code == 0
    assert f"no route to {nowhere}" in err

    (report,) = await eventually(
        lambda: solo.reports(smith(solo)), lambda found: len(found) == 1, what="a report"
    )
    assert report.content.subject_identifier.text == out.strip()
    (recipient,) = report.content.recipients
    assert recipient.actual_recipient_name.canonical == parse_orname(nowhere).canonical
    assert non_delivery(report) == [
        NonDeliveryReport(
            reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
            diagnostic_code=NonDeliveryDiagnostic.UNRECOGNISED_OR_NAME,
        )
    ]


@pytest.mark.slow
async def test_message_that_waits_past_its_maximum_age_is_non_delivered(lab: Lab) -> None:
    lab.a.settings["max_age"] = {"routine": "1s"}
    lab.a.expiry_interval = 0.2
    await lab.a.start()  # B never starts
    (identifier,) = await lab.a.send(smith(lab.a), jones(lab.b), Precedence.ROUTINE)

    (report,) = await eventually(
        lambda: lab.a.reports(smith(lab.a)), lambda found: len(found) == 1, what="a report"
    )
    assert report.content.subject_identifier.text == identifier
    assert [o.diagnostic_code for o in non_delivery(report)] == [
        NonDeliveryDiagnostic.MAXIMUM_TIME_EXPIRED
    ]
    assert await queue_states(lab.a, B.name) == {"failed": 1}


# --- refusals ------------------------------------------------------------------------------


async def test_wrong_password_is_refused_and_nothing_is_transferred(lab: Lab) -> None:
    lab.a.settings["peers"][0]["password"] = "not-the-password"
    await lab.start()
    await lab.a.send(smith(lab.a), jones(lab.b), Precedence.FLASH)
    runner = lab.a.runner(Precedence.FLASH)

    def refused() -> bool:
        return any(
            "authentication-error" in (c.last_error or "") for c in runner.snapshot().connections
        )

    await until(refused, what="the flash slot refused with authentication-error")
    assert lab.a.transfers(runner) == 0
    assert await queue_states(lab.a, B.name) == {"pending": 1}
    assert await lab.b.inbox(jones(lab.b)) == []


async def test_unknown_mta_name_is_refused(lab: Lab) -> None:
    await lab.b.start()
    port = lab.b.running.listening_ports[0]
    stranger = MTABindArgument(initiator_name="MTA-X", password=A.password)
    with pytest.raises(BindRefusedError) as refused:
        await open_link("127.0.0.1", port, stranger)
    assert refused.value.error is MTABindError.AUTHENTICATION_ERROR


# --- what a peer sends -----------------------------------------------------------------------


async def test_same_message_transferred_twice_is_delivered_once(lab: Lab) -> None:
    await lab.b.start()
    apdu = message_from_a("twice-1", jones(lab.b))
    await transfer_as_a(lab.b, apdu)
    await transfer_as_a(lab.b, apdu)  # as after an acknowledgement lost on the way back

    await eventually(
        lambda: queue_states(lab.b, LOCAL_ROUTE),
        lambda states: states == {"delivered": 1},
        what="one local recipient delivered at B, nothing else queued",
    )
    (entry,) = await lab.b.inbox(jones(lab.b))
    assert entry["mts_identifier"].endswith(";twice-1]")


@pytest.mark.slow
async def test_message_whose_trace_already_names_the_mta_is_non_delivered_as_a_loop(
    lab: Lab,
) -> None:
    await lab.start()
    been_at_b = InternalTraceEntry(
        global_domain_identifier=domain_of(parse_orname(B.domain)),
        mta_name=B.name,
        arrival_time=SENT,
    )
    await transfer_as_a(lab.b, message_from_a("loop-1", jones(lab.b), internal_trace=(been_at_b,)))

    (report,) = await eventually(
        lambda: lab.a.reports(smith(lab.a)), lambda found: len(found) == 1, what="a report at A"
    )
    assert report.content.subject_identifier.local_identifier == "loop-1"
    assert non_delivery(report) == [
        NonDeliveryReport(
            reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
            diagnostic_code=NonDeliveryDiagnostic.LOOP_DETECTED,
        )
    ]
    assert await lab.b.inbox(jones(lab.b)) == []
    assert await queue_states(lab.b, LOCAL_ROUTE) == {}


# --- the local API -------------------------------------------------------------------------


SUBMIT = {
    "op": "submit",
    "originator": "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith",
    "recipients": ["C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Jones"],
    "precedence": "flash",
    "content_type": P772_CONTENT_TYPE,
}


@pytest.mark.parametrize(
    ("request_", "payload", "error"),
    [
        ({"op": "frobnicate"}, b"", "unknown op 'frobnicate'; known: submit, status"),
        (
            {**SUBMIT, "originator": "not an address"},
            b"content",
            "originator 'not an address': O/R name: `not an address` is not of the form key=",
        ),
        (
            {**SUBMIT, "recipients": ["C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Jones", "S=;;"]},
            b"content",
            "recipients 'S=;;': O/R name: empty value for `S`",
        ),
        ({**SUBMIT, "recipients": []}, b"content", "non-empty list of O/R addresses"),
        (SUBMIT, b"", "submit needs the content after the request line"),
        ({**SUBMIT, "precedence": "urgent"}, b"content", "precedence 'urgent' is not one of"),
        ({**SUBMIT, "precedence": [[4]]}, b"content", "precedence must be a name (flash) or"),
        (
            {**SUBMIT, "deferred_delivery_time": 1764000000},
            b"content",
            "deferred_delivery_time must be an ISO 8601 time as a string",
        ),
        ({**SUBMIT, "content_type": "p772"}, b"content", "content_type must be"),
        ({"op": "inbox"}, b"", "user must be an O/R address in text form"),
        ({"op": "read", "user": SUBMIT["originator"], "id": "one"}, b"", "id must be an integer"),
        (
            {"op": "wait", "user": SUBMIT["originator"], "timeout": -1},
            b"",
            "timeout must be a number of seconds from 0 to 3600",
        ),
        (
            {"op": "wait", "user": SUBMIT["originator"], "after": "newest"},
            b"",
            "after must be an integer",
        ),
    ],
    ids=[
        "unknown-op",
        "bad-originator",
        "bad-recipient",
        "no-recipients",
        "no-content",
        "bad-precedence",
        "precedence-not-text",
        "time-not-text",
        "bad-content-type",
        "no-user",
        "bad-id",
        "bad-wait-timeout",
        "bad-wait-after",
    ],
)
async def test_local_api_refuses_a_bad_request_and_keeps_serving(
    solo: Site, request_: dict[str, object], payload: bytes, error: str
) -> None:
    with pytest.raises(ApiError) as refused:
        await asyncio.to_thread(call, solo.socket, request_, payload)
    assert error in str(refused.value)
    status = await solo.api({"op": "status"})
    assert status["name"] == A.name
    assert await queue_states(solo, LOCAL_ROUTE) == {}


async def test_local_api_refuses_a_request_that_is_not_json(solo: Site) -> None:
    reader, writer = await asyncio.open_unix_connection(str(solo.socket))
    writer.write(b"submit please\n")
    await writer.drain()
    answer = await reader.readline()
    writer.close()
    await writer.wait_closed()
    assert answer.startswith(b'{"ok": false, "error": "request is not JSON: ')
    assert (await solo.api({"op": "status"}))["ok"] is True


async def test_local_api_answers_one_request_after_another_on_a_connection(
    solo: Site,
) -> None:
    connection = await AsyncConnection.open(solo.socket)
    try:
        first, _ = await connection.call({"op": "status"})
        with pytest.raises(ApiError, match="unknown"):
            await connection.call({"op": "unknown-op"})
        again, _ = await connection.call({"op": "status"})
    finally:
        await connection.close()
    assert first["name"] == again["name"] == A.name


async def test_local_api_closes_a_connection_whose_request_cannot_be_delimited(
    solo: Site,
) -> None:
    reader, writer = await asyncio.open_unix_connection(str(solo.socket))
    writer.write(b'{"op": "status", "content_length": -1}\n{"op": "status"}\n')
    await writer.drain()
    answer = await reader.readline()
    rest = await reader.read()  # the second request is not answered: the stream is lost
    writer.close()
    await writer.wait_closed()
    assert answer.startswith(b'{"ok": false, "error": "content_length must be 0..')
    assert rest == b""


# --- waiting for mail --------------------------------------------------------------------


async def wait_for_mail(site: Site, user: str, **arguments: object) -> dict[str, Any]:
    """A ``wait`` request on a connection of its own (from a worker thread)."""
    response, _ = await asyncio.to_thread(
        call, site.socket, {"op": "wait", "user": user, **arguments}
    )
    return response


async def test_wait_answers_at_once_with_the_entries_above_after(solo: Site) -> None:
    await solo.send(smith(solo), jones(solo), Precedence.PRIORITY, count=2)
    first, second = await eventually(
        lambda: solo.inbox(jones(solo)), lambda m: len(m) == 2, what="two messages"
    )
    answer = await wait_for_mail(solo, jones(solo), after=0, timeout=30)
    assert [m["id"] for m in answer["messages"]] == [first["id"], second["id"]]
    assert (answer["after"], answer["stored_at"]) == (second["id"], None)
    answer = await wait_for_mail(solo, jones(solo), after=first["id"], timeout=30)
    assert [m["id"] for m in answer["messages"]] == [second["id"]]


@pytest.mark.slow
async def test_wait_is_woken_by_a_delivery_to_its_user_only(solo: Site) -> None:
    for_jones = asyncio.create_task(wait_for_mail(solo, jones(solo), timeout=30))
    for_brown = asyncio.create_task(wait_for_mail(solo, solo.address("Brown"), timeout=1))
    await until(lambda: solo.running.watch.waiting == 2, what="both requests waiting")
    sent = datetime.now(UTC)
    (identifier,) = await solo.send(smith(solo), jones(solo), Precedence.FLASH)
    answer = await for_jones
    (message,) = answer["messages"]
    assert (message["mts_identifier"], message["precedence"]) == (identifier, "flash")
    assert answer["after"] == message["id"]
    assert sent < datetime.fromisoformat(answer["stored_at"]) < datetime.now(UTC)
    quiet = await for_brown
    assert (quiet["messages"], quiet["after"], quiet["stored_at"]) == ([], 0, None)
    assert solo.running.watch.waiting == 0


async def test_a_waiting_request_is_answered_when_the_mta_stops(solo: Site) -> None:
    waiting = asyncio.create_task(wait_for_mail(solo, jones(solo), timeout=30))
    await until(lambda: solo.running.watch.waiting == 1, what="the request waiting")
    await solo.stop()
    with pytest.raises(ApiError, match="the MTA is stopping"):
        await waiting


# --- x400-mta --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["site-a.toml", "site-b.toml"])
def test_check_accepts_the_example_configurations(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert command.main(["--config", str(EXAMPLES / name), "--check"]) == daemon.EXIT_OK
    assert "is valid" in capsys.readouterr().out


def test_without_config_the_daemon_reads_the_default_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    default = tmp_path / "etc" / "mta.toml"
    monkeypatch.setattr(command, "DEFAULT_CONFIG_FILE", default)
    with pytest.raises(SystemExit) as stopped:
        command.main(["--check"])
    assert stopped.value.code == 2
    assert f"--config FILE (there is no {default})" in capsys.readouterr().err

    default.parent.mkdir()
    default.write_text((EXAMPLES / "site-a.toml").read_text())
    assert command.main(["--check"]) == daemon.EXIT_OK
    assert capsys.readouterr().out == f"{default}: configuration of MTA-A is valid\n"


def test_malformed_configuration_exits_3_naming_file_key_and_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (EXAMPLES / "site-a.toml").read_text()
    bad = tmp_path / "site-a.toml"
    bad.write_text(text.replace('dscp = "CS2"   # immediate', 'dscp = "CS9"   # immediate'))
    assert command.main(["--config", str(bad), "--check"]) == daemon.EXIT_CONFIG
    err = capsys.readouterr().err
    assert f'{bad}: listeners[2].dscp = "CS9": expected ' in err


def test_listener_port_in_use_exits_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(daemon, "_configure_logging", lambda *args, **kwargs: None)
    site = solo_site(tmp_path / "busy")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        site.settings["listeners"] = [{"address": "127.0.0.1", "port": port}]
        assert command.main(["--config", str(site.write())]) == daemon.EXIT_START
    (record,) = [r for r in caplog.records if r.levelno == logging.CRITICAL]
    assert record.getMessage().startswith("cannot start: ")


@pytest.mark.slow
def test_installed_x400_mta_checks_a_configuration(tmp_path: Path) -> None:
    command = shutil.which("x400-mta", path=os.path.dirname(sys.executable))
    assert command is not None, "x400-mta is not installed next to the interpreter"
    site = solo_site(tmp_path / "installed")
    done = subprocess.run(
        [command, "--config", str(site.write()), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"configuration of {A.name} is valid" in done.stdout


@pytest.mark.slow
def test_a_running_x400_mta_leaves_its_start_up_out_of_garbage_collection(
    tmp_path: Path,
) -> None:
    command = shutil.which("x400-mta", path=os.path.dirname(sys.executable))
    assert command is not None, "x400-mta is not installed next to the interpreter"
    site = solo_site(tmp_path / "frozen")
    log = (tmp_path / "frozen.log").open("wb")
    process = subprocess.Popen([command, "--config", str(site.write())], stderr=log)
    try:
        status = None
        for _ in range(600):  # until it answers (or 60 s)
            try:
                status, _ = call(site.socket, {"op": "status"})
                break
            except ApiError:  # not listening yet
                time.sleep(0.1)
        assert status is not None, (tmp_path / "frozen.log").read_text()
        # Frozen once it started (a full collection then visits only what came later).
        assert status["gc"]["frozen"] > 10_000
        assert len(status["gc"]["collections"]) == 3
    finally:
        process.terminate()
        assert process.wait(timeout=60) == daemon.EXIT_OK
        log.close()


async def test_local_delivery_that_fails_is_restarted_and_shown_in_status_until_it_recovers(
    solo: Site,
) -> None:
    # A full disk (or any fault) in local delivery: the part is restarted with backoff,
    # `status` names it meanwhile, and it serves again once the fault clears.
    service = solo.running
    service.parts.backoff = RetryPolicy(initial=0.01, maximum=0.01, factor=1.0, jitter=0.0)
    real = service.delivery.units.deliver_local_in
    failures = 0
    failing = asyncio.Event()
    clear = asyncio.Event()

    def full_disk(*args: Any, **kwargs: Any) -> Any:
        nonlocal failures
        if not clear.is_set():
            failures += 1
            failing.set()
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    service.delivery.units.deliver_local_in = full_disk  # type: ignore[method-assign]
    service.notify()
    await asyncio.wait_for(failing.wait(), 10)
    status = await solo.api({"op": "status"})
    [part] = status["degraded"]
    assert part["part"] == "local delivery"
    assert part["last_error"] == "no space left on device"
    assert status["store"] == "no space left on device"
    clear.set()
    await eventually(
        lambda: solo.api({"op": "status"}), lambda s: s["degraded"] == [], what="recovered"
    )
    await solo.send(smith(solo), jones(solo), Precedence.PRIORITY, count=1)
    await eventually(lambda: solo.inbox(jones(solo)), lambda m: len(m) == 1, what="delivered")
    assert failures >= 1
