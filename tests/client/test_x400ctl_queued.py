"""``x400ctl show``, ``non-deliver``, ``track``'s search and the precedence order of
``queue`` and ``qshape``, against a running MTA.

Site A runs; its peer B is down, so A's messages to B wait.  A recipient in flight is
set through the store, in the daemon's database thread.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from client import ctl_queued, x400ctl
from p1.mts.envelope import decode_mts_apdu
from p1.mts.precedence import Precedence
from p1.mts.report import NonDeliveryReason, NonDeliveryReport
from store.db import transaction
from store.models import QueuedRecipient
from store.queue import TransitQueue
from tests.support.sites import Lab, Site, eventually

_T = TypeVar("_T")
SMITH_AT_A = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith"
JONES_AT_B = "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones"
BROWN_AT_B = "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Brown"
# Names are shown as the envelope gave them.
SMITH, JONES, BROWN = SMITH_AT_A, JONES_AT_B, BROWN_AT_B
"""The names as the queue keeps them (canonical)."""


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    """Site A started; B configured but down."""
    lab = Lab.create(tmp_path)
    await lab.a.start()
    try:
        yield lab
    finally:
        await lab.close()


async def ctl(site: Site, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``x400ctl ARGV... --socket <site's>``: exit code, output, errors."""
    code = await asyncio.to_thread(x400ctl.main, [*argv, "--socket", str(site.socket)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def in_store(site: Site, work: Callable[[Session], _T]) -> _T:
    def unit() -> _T:
        with transaction(site.running.db.engine) as session:
            return work(session)

    return await site.running.db.run(unit)


async def message_id(site: Site, mts_identifier: str) -> int:
    response = await site.api({"op": "messages"})
    return int(
        next(
            r["message_id"] for r in response["recipients"] if r["mts_identifier"] == mts_identifier
        )
    )


async def states(site: Site, mts_identifier: str) -> dict[str, str]:
    response = await site.api({"op": "track", "mts_identifier": mts_identifier})
    return {r["recipient"]: r["state"] for r in response["queue"]}


# --- show ------------------------------------------------------------------------------


async def test_show_gives_the_queue_record_the_envelope_and_the_content(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    (identifier,) = await site.send(SMITH_AT_A, JONES_AT_B, Precedence.FLASH, subject="fuel state")
    number = await message_id(site, identifier)

    code, by_id, err = await ctl(site, capsys, "show", str(number))
    assert code == x400ctl.EXIT_OK, err
    lines = by_id.splitlines()
    assert lines[0] == f"message:        {number} (message)"
    assert f"MTS identifier: {identifier}" in lines
    assert "precedence:     flash" in lines
    assert f"originator:     {SMITH}" in lines
    assert any(line.startswith("arrived:") and "submitted here" in line for line in lines)
    recipient = next(line for line in lines if line.lstrip().startswith(JONES))
    assert recipient.split()[-5:-2] == ["pending", "MTA-B", "0"]
    assert "content type:   P772 (1.3.26.0.4406.0.4.1)" in lines
    assert "trace:" in lines
    assert "subject:        fuel state" in lines
    assert "body: 1 part(s)" in lines
    assert lines[-1] == "text"

    code, by_identifier, err = await ctl(site, capsys, "show", identifier)
    assert (code, by_identifier) == (x400ctl.EXIT_OK, by_id), err


async def test_show_raw_writes_the_stored_apdu_but_not_to_a_terminal(
    lab: Lab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    site = lab.a
    (identifier,) = await site.send(SMITH_AT_A, JONES_AT_B)
    number = await message_id(site, identifier)
    stored = await in_store(site, lambda s: TransitQueue(s).get(number))
    assert stored is not None

    with capsys.disabled():
        read, write = os.pipe()
        with open(write, "w", encoding="utf-8") as pipe:
            monkeypatch.setattr(sys, "stdout", pipe)
            code = await asyncio.to_thread(
                x400ctl.main, ["show", str(number), "--raw", "--socket", str(site.socket)]
            )
        with open(read, "rb") as octets:
            written = octets.read()
    assert code == x400ctl.EXIT_OK
    assert written == stored.apdu
    assert decode_mts_apdu(written).envelope.mts_identifier.text == identifier  # type: ignore[union-attr]

    main, terminal = os.openpty()
    try:
        with open(terminal, "w", encoding="utf-8") as tty:
            monkeypatch.setattr(sys, "stdout", tty)
            refused = await asyncio.to_thread(
                x400ctl.main, ["show", str(number), "--raw", "--socket", str(site.socket)]
            )
            forced = await asyncio.to_thread(
                x400ctl.main,
                ["show", str(number), "--raw", "--force", "--socket", str(site.socket)],
            )
        assert os.read(main, len(stored.apdu) * 2 + 64)[:2] == stored.apdu[:2]
    finally:
        os.close(main)
    monkeypatch.undo()
    assert refused == x400ctl.EXIT_REFUSED
    assert forced == x400ctl.EXIT_OK
    assert "not to a terminal" in capsys.readouterr().err


async def test_show_of_a_message_not_in_the_queue_exits_1(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await ctl(lab.a, capsys, "show", "4711")
    assert (code, out, err) == (1, "", "x400ctl show: no message 4711 in the queue\n")


# --- non-deliver -----------------------------------------------------------------------


async def test_non_deliver_fails_the_recipient_and_reports_the_reason_to_the_originator(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    (identifier,) = await site.send(SMITH_AT_A, JONES_AT_B)
    (other,) = await site.send(SMITH_AT_A, BROWN_AT_B)
    reason = "recipient left: write to J. Brown"

    code, out, err = await ctl(site, capsys, "non-deliver", identifier, "--reason", reason)
    assert code == x400ctl.EXIT_OK, err
    assert out.startswith("non-delivered 1 recipient(s) of 1 message(s);")
    assert await states(site, identifier) == {JONES: "failed"}
    assert await states(site, other) == {BROWN: "pending"}

    (report,) = await eventually(
        lambda: site.reports(SMITH_AT_A), lambda found: len(found) == 1, what="the report"
    )
    assert report.content.subject_identifier.text == identifier
    (field,) = report.content.recipients
    assert field.supplementary_information == reason
    assert field.last_trace_information.report == NonDeliveryReport(
        reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER, diagnostic_code=None
    )

    code, tracked, err = await ctl(site, capsys, "track", identifier)
    assert code == x400ctl.EXIT_OK, err
    audited = next(line for line in tracked.splitlines() if " non-delivered " in line)
    assert JONES in audited and f"by the operator: {reason}" in audited
    assert "non-delivered: unable-to-transfer" in tracked


async def test_non_deliver_leaves_a_recipient_in_flight_and_says_so(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    (busy,) = await site.send(SMITH_AT_A, JONES_AT_B)
    (idle,) = await site.send(SMITH_AT_A, BROWN_AT_B)
    number = await message_id(site, busy)

    def claim(session: Session) -> None:
        session.execute(
            update(QueuedRecipient)
            .where(QueuedRecipient.message_id == number)
            .values(state="in_flight")
        )

    await in_store(site, claim)
    code, out, err = await ctl(site, capsys, "non-deliver", "--peer", "MTA-B", "--reason", "x")
    assert code == x400ctl.EXIT_REFUSED
    assert out.startswith("non-delivered 1 recipient(s) of 1 message(s);")
    assert err == (
        f"x400ctl non-deliver: message {number} {busy} to {JONES} is being transferred "
        "now: left alone (try again once the transfer ended)\n"
    )
    assert await states(site, busy) == {JONES: "in_flight"}
    assert await states(site, idle) == {BROWN: "failed"}


async def test_non_deliver_refuses_a_reason_a_report_cannot_carry_and_needs_a_match(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    (identifier,) = await site.send(SMITH_AT_A, JONES_AT_B)
    code, out, err = await ctl(site, capsys, "non-deliver", identifier, "--reason", "gone!")
    assert (code, out) == (x400ctl.EXIT_REFUSED, "")
    assert err.startswith("x400ctl non-deliver: reason 'gone!': the report carries it as X.411")
    assert await states(site, identifier) == {JONES: "pending"}

    code, out, err = await ctl(site, capsys, "non-deliver", "4711", "--reason", "gone")
    assert (code, err) == (
        x400ctl.EXIT_REFUSED,
        "x400ctl non-deliver: no waiting recipient matches\n",
    )
    code, _, err = await ctl(site, capsys, "non-deliver", identifier)
    assert code == x400ctl.EXIT_USAGE and "--reason" in err


# --- track's search --------------------------------------------------------------------


async def test_track_finds_messages_by_recipient_originator_and_time(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    first, second = await site.send(SMITH_AT_A, JONES_AT_B, count=2)
    (brown,) = await site.send(site.address("Green"), BROWN_AT_B)

    code, out, err = await ctl(site, capsys, "track", "--recipient", JONES_AT_B)
    assert code == x400ctl.EXIT_OK, err
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["FIRST", "SEEN", "(UTC)", "MTS"]
    assert [line for line in lines if first in line or second in line] == lines[1:3]
    assert brown not in out

    code, out, err = await ctl(site, capsys, "track", "--originator", SMITH_AT_A, "--since", "1h")
    assert code == x400ctl.EXIT_OK, err
    assert first in out and second in out and brown not in out

    code, out, err = await ctl(site, capsys, "track", "--originator", site.address("Green"))
    assert code == x400ctl.EXIT_OK, err
    assert out.splitlines()[0].split()[:3] == ["TIME", "(UTC)", "EVENT"]
    assert " submitted " in out and brown not in out.splitlines()[0]

    code, out, err = await ctl(site, capsys, "track", "--recipient", site.address("Nobody"))
    assert (code, out) == (x400ctl.EXIT_REFUSED, "")
    assert "has a message that matches" in err
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    code, _, _ = await ctl(site, capsys, "track", "--recipient", JONES_AT_B, "--since", later)
    assert code == x400ctl.EXIT_REFUSED


async def test_track_takes_an_identifier_or_a_search_not_both(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await ctl(lab.a, capsys, "track")
    assert code == x400ctl.EXIT_USAGE and "say which" in err
    code, _, err = await ctl(lab.a, capsys, "track", "[X]", "--since", "1h")
    assert code == x400ctl.EXIT_USAGE
    code, _, err = await ctl(lab.a, capsys, "track", "--since", "yesterday")
    assert code == x400ctl.EXIT_USAGE and "'yesterday': expected an ISO 8601 time" in err


def test_since_takes_an_age_or_an_iso_time() -> None:
    now = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    assert ctl_queued.parse_since("90s", now) == now - timedelta(seconds=90)
    assert ctl_queued.parse_since("30m", now) == now - timedelta(minutes=30)
    assert ctl_queued.parse_since("2d", now) == now - timedelta(days=2)
    assert ctl_queued.parse_since("2026-11-28T09:30", now) == datetime(
        2026, 11, 28, 9, 30, tzinfo=UTC
    )
    assert ctl_queued.parse_since("2026-11-28T09:30+01:00", now) == datetime(
        2026, 11, 28, 8, 30, tzinfo=UTC
    )


# --- precedence order ------------------------------------------------------------------


async def test_queue_and_qshape_list_precedences_most_urgent_first(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    for precedence in (Precedence.DEFERRED, Precedence.ROUTINE, Precedence.OVERRIDE):
        await site.send(SMITH_AT_A, JONES_AT_B, precedence)
    await site.send(SMITH_AT_A, JONES_AT_B, Precedence.FLASH)
    wanted = ["override", "flash", "routine", "deferred"]

    code, out, err = await ctl(site, capsys, "queue")
    assert code == x400ctl.EXIT_OK, err
    rows = [line.split() for line in out.splitlines()[1:] if line.startswith("MTA-B")]
    assert [row[1] for row in rows] == wanted

    code, out, err = await ctl(site, capsys, "qshape")
    assert code == x400ctl.EXIT_OK, err
    rows = [line.split() for line in out.splitlines() if line.startswith("MTA-B")]
    assert [row[1] for row in rows] == wanted
