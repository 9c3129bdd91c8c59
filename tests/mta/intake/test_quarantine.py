"""The quarantine at a live MTA: a transfer whose MTS-APDU cannot be taken in is
confirmed and kept as received, the association carries on, and a full quarantine
refuses such a transfer unconfirmed (the association aborted) and keeps nothing more.

Site B runs (:mod:`tests.support.sites`); MTA-A's side is this test, binding to B over a real
P1 association on loopback and transferring what a broken peer would.  The bounds of
``keep_in`` are checked on a SQLite file of their own.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from client.api import call
from config.loader import load_config
from config.schema import QuarantineLimits
from mta.intake.plan import IntakeError, MalformedApduError, Site, domain_of, plan_intake
from mta.intake.quarantine import keep_in
from mta.intake.routing import Router
from mta.link import LinkClosedError, open_link
from p1.association.mtabind import MTABindArgument
from p1.mts.orname import ORName
from store import AuditEvent, AuditLog, Quarantine, QuarantineTotals
from store.db import open_database, transaction
from tests.support.sites import A, B, Lab, eventually, message_from_a, transfer_as_a
from tests.support.sites import Site as LabSite

AT_SIGN = ORName(country="GB", admd=" ", prmd="SITEB", organization="HQ", surname="Jo@nes")
"""Encoded as given: a PrintableString holding '@', which no PrintableString may."""
REASON = (
    "the MTS-APDU does not decode: MessageTransferEnvelope.per-recipient-fields[0]"
    ".recipient-name: surname: '@' at 2 is not a PrintableString character"
)
JONES_AT_B = f"{B.domain};O=HQ;S=Jones"


def undecodable(local_identifier: str) -> bytes:
    return message_from_a(local_identifier, AT_SIGN)


def kept_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "kept in quarantine" in r.getMessage()
    ]


def audit_rows(site: LabSite) -> list[tuple[str, str, str]]:
    with sqlite3.connect(site.directory / "state" / "aiox400.db") as database:
        rows = database.execute(
            "SELECT event, peer, detail FROM audit WHERE event = 'quarantined' ORDER BY id"
        ).fetchall()
    return [(str(e), str(p), str(d)) for e, p, d in rows]


async def quarantined(site: LabSite) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = (await site.api({"op": "quarantine"}))["entries"]
    return entries


async def read_kept(site: LabSite, entry_id: int) -> bytes:
    request = {"op": "quarantine_read", "id": entry_id}
    _, apdu = await asyncio.to_thread(call, site.socket, request)
    return apdu


def test_a_message_that_does_not_decode_is_a_malformed_apdu() -> None:
    with pytest.raises(MalformedApduError, match=r"^the MTS-APDU does not decode: "):
        plan_intake(undecodable("intake"), _site_b(), origin_peer="MTA-A", now=_NOW)
    assert issubclass(MalformedApduError, IntakeError)


async def test_an_undecodable_transfer_is_confirmed_and_kept_and_the_link_carries_on(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    await lab.start()
    bad, good = undecodable("bad-1"), message_from_a("good-1", JONES_AT_B)
    port = lab.b.running.listening_ports[2]
    argument = MTABindArgument(initiator_name=A.name, password=A.password)
    link, _ = await open_link("127.0.0.1", port, argument)
    try:
        await link.transfer(bad, timeout=30)  # confirmed: returns, no abort
        await link.transfer(good, timeout=30)  # the same association goes on
        await link.release(timeout=10)
    finally:
        await link.close()

    (entry,) = await quarantined(lab.b)
    assert {k: v for k, v in entry.items() if k != "received_at"} == {
        "id": entry["id"],
        "peer": A.name,
        "reason": REASON,
        "size": len(bad),
    }
    assert await read_kept(lab.b, entry["id"]) == bad
    (delivered,) = await eventually(
        lambda: lab.b.inbox(JONES_AT_B), lambda found: len(found) == 1, what="Jones's at B"
    )
    assert delivered["mts_identifier"].endswith(";good-1]")
    assert kept_lines(caplog) == [
        f"{A.name}: transfer of {len(bad)} octets kept in quarantine as #{entry['id']}, "
        f"not delivered: {REASON}; no report: no recipient readable"
    ]
    assert not [r for r in caplog.records if "transfer refused" in r.getMessage()]
    assert audit_rows(lab.b) == [
        ("quarantined", A.name, f"#{entry['id']}, {len(bad)} octets: {REASON}")
    ]
    status = await lab.b.api({"op": "status"})
    assert status["quarantine"]["messages"] == 1
    assert status["quarantine"]["octets"] == len(bad)


async def test_a_full_quarantine_refuses_the_transfer_and_keeps_nothing_more(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    lab.b.settings["quarantine"] = {"max_messages": 1}
    await lab.start()
    first, second = undecodable("bad-first"), undecodable("bad-second")
    await transfer_as_a(lab.b, first)
    with pytest.raises(LinkClosedError, match="aborted"):
        await transfer_as_a(lab.b, second)

    (entry,) = await quarantined(lab.b)
    assert entry["size"] == len(first)
    assert await read_kept(lab.b, entry["id"]) == first
    refused = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "transfer refused" in r.getMessage()
    ]
    assert len(refused) == 1
    assert f"aborting: {REASON}; the quarantine is full (1 of 1 messages, " in refused[0]
    assert refused[0].endswith(
        "see x400ctl quarantine list, and free room with x400ctl quarantine delete ID..."
    )
    assert len(kept_lines(caplog)) == 1
    assert len(audit_rows(lab.b)) == 1

    # Once the operator deletes what was dealt with, the peer's next try is taken.
    await lab.b.api({"op": "quarantine_delete", "ids": [entry["id"]]})
    await transfer_as_a(lab.b, second)
    (again,) = await quarantined(lab.b)
    assert await read_kept(lab.b, again["id"]) == second
    assert again["id"] > entry["id"]


# --- the bounds, on a store of their own ------------------------------------------------

_NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _site_b() -> Site:
    config = load_config(Path(__file__).resolve().parents[3] / "config/examples/site-b.toml")
    return Site(
        name=config.name,
        domain=domain_of(config.global_domain),
        router=Router(config),
        table=config.precedence_table,
        max_age=config.max_age,
    )


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    sqlite = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    yield sqlite
    sqlite.dispose()


def _keep(engine: Engine, size: int, bounds: QuarantineLimits, minutes: int) -> int | None:
    with transaction(engine) as session:
        kept = keep_in(
            session,
            apdu=bytes(size),
            peer="MTA-A",
            reason="why",
            now=_NOW + timedelta(minutes=minutes),
            bounds=bounds,
        )
    return kept.entry_id


def test_keep_in_stays_within_max_bytes_and_max_messages(engine: Engine) -> None:
    bounds = QuarantineLimits(max_messages=3, max_bytes=100)
    assert _keep(engine, 60, bounds, 0) is not None
    assert _keep(engine, 41, bounds, 1) is None  # 101 octets: one too many
    assert _keep(engine, 40, bounds, 2) is not None  # exactly 100
    assert _keep(engine, 1, bounds, 3) is None
    assert _keep(engine, 101, QuarantineLimits(max_messages=9, max_bytes=100), 4) is None
    wide = QuarantineLimits(max_messages=3, max_bytes=1000)
    assert _keep(engine, 1, wide, 5) is not None
    assert _keep(engine, 1, wide, 6) is None  # a fourth message: one too many
    with transaction(engine, read_only=True) as session:
        assert Quarantine(session).totals() == QuarantineTotals(messages=3, octets=101)
        recorded = AuditLog(session).recent()
    assert [r.event for r in recorded] == [AuditEvent.QUARANTINED] * 3
    assert [r.at for r in recorded] == [_NOW + timedelta(minutes=m) for m in (5, 2, 0)]
