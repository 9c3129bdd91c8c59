"""``x400ctl`` as an operator used to postqueue, postsuper, qshape and postconf uses it,
against a running MTA: selections for hold, release and delete, flush, track, config,
qshape, tables sized to their content, ``--version`` and ``--config`` anywhere.

Site A runs; its peer B is down unless a test starts it, so A's messages to B wait.
Where a test needs a state the daemon reaches only by chance (a recipient in flight,
a retry an hour away, a message an hour old), it sets it through the store, in the
daemon's database thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import TypeVar

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from client import ctl_local, x400ctl
from p1.mts.precedence import Precedence
from store.db import transaction
from store.models import ApduKind, QueuedRecipient
from store.queue import NewMessage, NewRecipient, TransitQueue
from tests.support.sites import Lab, Site, eventually

_T = TypeVar("_T")
JONES_AT_B = "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones"
LONG_PEER = "P" * 60


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


async def to_b(site: Site, precedence: Precedence, count: int = 1) -> list[str]:
    return await site.send(site.address("Smith"), JONES_AT_B, precedence, count=count)


async def in_store(site: Site, work: Callable[[Session], _T]) -> _T:
    """Run ``work`` in one transaction of the site's store, in its database thread."""

    def unit() -> _T:
        with transaction(site.running.db.engine) as session:
            return work(session)

    return await site.running.db.run(unit)


async def message_ids(site: Site) -> dict[str, int]:
    """Queue message id by MTS identifier, of what waits."""
    response = await site.api({"op": "messages"})
    return {r["mts_identifier"]: r["message_id"] for r in response["recipients"]}


# --- the command line ------------------------------------------------------------------


def test_version_is_the_installed_packages(capsys: pytest.CaptureFixture[str]) -> None:
    assert x400ctl.main(["--version"]) == x400ctl.EXIT_OK
    assert capsys.readouterr().out == f"x400ctl {metadata.version('aiox400')}\n"


async def test_config_and_socket_go_before_or_after_the_command(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    for argv in (
        ["--socket", str(site.socket), "status"],
        ["status", "--socket", str(site.socket)],
        ["-c", str(site.config_file), "status"],
        ["status", "--config", str(site.config_file)],
    ):
        code = await asyncio.to_thread(x400ctl.main, argv)
        captured = capsys.readouterr()
        assert code == x400ctl.EXIT_OK, (argv, captured.err)
        assert captured.out.startswith("MTA-A: up "), argv


async def test_ctrl_c_ends_x400ctl_with_one_line_and_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(ctl_local, "run", interrupted)
    assert x400ctl.main(["status", "--socket", "/nowhere"]) == 130
    assert capsys.readouterr().err == "x400ctl: interrupted\n"


# --- selections ------------------------------------------------------------------------


async def test_hold_and_release_select_by_id_mts_identifier_peer_precedence_and_all(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    first, second = await to_b(site, Precedence.FLASH, count=2)
    (routine,) = await to_b(site, Precedence.ROUTINE)
    ids = await message_ids(site)

    async def expect(*argv: str, out: str) -> None:
        code, printed, err = await ctl(site, capsys, *argv)
        assert (code, printed) == (x400ctl.EXIT_OK, out + "\n"), (argv, err)

    await expect("hold", first, out="held 1 recipient(s) of 1 message(s)")
    await expect("hold", str(ids[second]), out="held 1 recipient(s) of 1 message(s)")
    await expect("release", "--all", out="released 2 recipient(s) of 2 message(s)")
    await expect("hold", "--precedence", "routine", out="held 1 recipient(s) of 1 message(s)")
    await expect("hold", "--peer", "MTA-B", out="held 2 recipient(s) of 2 message(s)")
    await expect(
        "release",
        "--peer",
        "MTA-B",
        "--precedence",
        "flash",
        out="released 2 recipient(s) of 2 message(s)",
    )
    listed = (await site.api({"op": "messages"}))["recipients"]
    held = {r["mts_identifier"] for r in listed if r["state"] == "held"}
    assert held == {routine}


async def test_nothing_matched_is_exit_1_with_a_clear_message(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    (queued,) = await to_b(site, Precedence.FLASH)
    for argv, message in (
        (["hold", "999999"], "x400ctl hold: no pending recipient matches"),
        (["hold", "[GB; ;NOWHERE;none]"], "x400ctl hold: no pending recipient matches"),
        (["release", queued], "x400ctl release: no held recipient matches"),
        (["delete", "999999"], "x400ctl delete: no waiting recipient matches"),
        (["hold", "--precedence", "deferred"], "x400ctl hold: no pending recipient matches"),
        (["hold", "--peer", "MTA-Z"], "x400ctl hold: no peer 'MTA-Z'; known: MTA-B, local"),
        (["track", "[GB; ;NOWHERE;none]"], "x400ctl track: neither the audit log nor the queue"),
    ):
        code, out, err = await ctl(site, capsys, *argv)
        assert code == 1, argv
        assert out == ""
        assert err.startswith(message), (argv, err)
    code, out, err = await ctl(site, capsys, "hold")  # a selection naming nothing: usage
    assert (code, out) == (2, "")
    assert err.startswith("x400ctl hold: say which: ID or MTSID..., --peer NAME, --precedence")


# --- delete ----------------------------------------------------------------------------


async def test_delete_removes_silently_and_the_audit_log_says_so(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    (identifier,) = await to_b(site, Precedence.FLASH)
    code, out, err = await ctl(site, capsys, "delete", identifier)
    assert code == x400ctl.EXIT_OK, err
    assert out == "deleted 1 recipient(s) of 1 message(s); 1 message(s) removed, no report sent\n"
    _, out, _ = await ctl(site, capsys, "queue")
    assert out == "the queue is empty\n"
    assert await site.inbox(site.address("Smith")) == []  # no non-delivery report
    _, out, _ = await ctl(site, capsys, "track", identifier)
    events = [line.split("  ")[1].strip() for line in out.splitlines()[1:]]
    assert events == ["submitted", "deleted"]
    assert out.splitlines()[-1].endswith("by the operator")


async def test_delete_leaves_a_message_in_flight_whole(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    (identifier,) = await to_b(site, Precedence.FLASH)
    now = datetime.now(UTC)
    # B is down, so no slot of A claims it: claim it as a slot about to transfer would.
    (claimed,) = await in_store(
        site, lambda s: TransitQueue(s).claim_next("MTA-B", {Precedence.FLASH}, now)
    )
    code, out, err = await ctl(site, capsys, "delete", "--all")
    assert (code, out) == (1, "")
    assert err == (
        f"x400ctl delete: message {claimed.message_id} {identifier} is being transferred now:"
        " not deleted (hold it, or try again once the transfer ended)\n"
    )
    listed = (await site.api({"op": "messages"}))["recipients"]
    assert [(r["mts_identifier"], r["state"]) for r in listed] == [(identifier, "in_flight")]
    await in_store(site, lambda s: TransitQueue(s).unclaim(claimed.recipient_ids, now))
    code, _, err = await ctl(site, capsys, "delete", str(claimed.message_id))
    assert code == x400ctl.EXIT_OK, err


# --- flush -----------------------------------------------------------------------------


@pytest.mark.slow
async def test_flush_sends_at_once_what_waited_out_a_retry(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    (identifier,) = await to_b(site, Precedence.FLASH)
    now = datetime.now(UTC)

    def tried_and_deferred(session: Session) -> None:
        queue = TransitQueue(session)
        (entry,) = queue.claim_next("MTA-B", {Precedence.FLASH}, now)
        later = now + timedelta(hours=1)
        queue.defer(entry.recipient_ids, next_attempt_at=later, error="down", now=now)

    await in_store(site, tried_and_deferred)
    await lab.b.start()
    code, out, err = await ctl(site, capsys, "flush", "MTA-B")
    assert (code, out) == (x400ctl.EXIT_OK, "flush MTA-B: 1 recipient(s) due now; slots woken\n")
    await eventually(lambda: lab.b.inbox(JONES_AT_B), lambda m: len(m) == 1, what="delivered at B")
    code, _, err = await ctl(site, capsys, "flush", "MTA-Z")
    assert (code, err) == (1, "x400ctl flush: no peer 'MTA-Z'; known: MTA-B, local\n")
    code, out, _ = await ctl(site, capsys, "flush")
    assert (code, out) == (
        x400ctl.EXIT_OK,
        "flush every route: 0 recipient(s) due now; slots woken\n",
    )
    _, out, _ = await ctl(site, capsys, "track", identifier)
    assert "transferred" in out


# --- track -----------------------------------------------------------------------------


async def test_track_lists_a_messages_events_in_order_with_times(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    (identifier,) = await to_b(site, Precedence.PRIORITY)
    for verb in ("hold", "release", "hold"):
        assert (await ctl(site, capsys, verb, identifier))[0] == x400ctl.EXIT_OK
    code, out, err = await ctl(site, capsys, "track", identifier)
    assert code == x400ctl.EXIT_OK, err
    history, now = out.split("\n\n")
    header, *rows = history.splitlines()
    assert header.split() == ["TIME", "(UTC)", "EVENT", "RECIPIENT", "PEER", "DETAIL"]
    assert [row.split()[2] for row in rows] == ["submitted", "held", "released", "held"]
    times = [datetime.strptime(" ".join(row.split()[:2]), "%Y-%m-%d %H:%M:%S.%f") for row in rows]
    assert times == sorted(times)
    assert abs(times[-1].replace(tzinfo=UTC) - datetime.now(UTC)) < timedelta(minutes=10)
    assert all(JONES_AT_B.lower().replace(" ", "") in row.lower().replace(" ", "") for row in rows)
    title, header, row = now.splitlines()
    assert title == "now in the queue:"
    assert header.split()[:4] == ["RECIPIENT", "STATE", "ROUTE", "TRIES"]
    assert row.split()[-5:-2] == ["held", "MTA-B", "0"]


@pytest.mark.slow
async def test_track_shows_the_queue_state_after_the_transfer(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    await lab.b.start()
    (identifier,) = await to_b(site, Precedence.FLASH)
    await eventually(lambda: lab.b.inbox(JONES_AT_B), lambda m: len(m) == 1, what="at B")
    code, out, err = await ctl(site, capsys, "track", identifier)
    assert code == x400ctl.EXIT_OK, err
    history, now = out.split("\n\n")
    assert [row.split()[2] for row in history.splitlines()[1:]] == ["submitted", "transferred"]
    (row,) = now.splitlines()[2:]
    assert row.split()[-4:] == ["transferred", "MTA-B", "1", "-"]


# --- config ----------------------------------------------------------------------------


async def test_config_shows_the_daemons_settings_with_passwords_hidden(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    code, from_daemon, err = await ctl(site, capsys, "config")
    assert code == x400ctl.EXIT_OK, err
    code = await asyncio.to_thread(x400ctl.main, ["config", "-c", str(site.config_file)])
    from_file = capsys.readouterr().out
    assert code == x400ctl.EXIT_OK
    assert from_daemon == from_file
    lines = from_file.splitlines()
    assert 'name = "MTA-A"' in lines
    assert lines.count('password = "<hidden>"') == 1  # the MTA's; the peer's is the same
    assert 'peer_password = "<hidden>"' in lines
    assert "[[peers.slots]]" in lines
    assert "secret-a" not in from_file and "secret-b" not in from_file


def test_config_names_a_password_file_and_hides_a_database_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "password"
    secret.write_text("do-not-show-me\n")
    secret.chmod(0o600)
    config = tmp_path / "mta.toml"
    config.write_text(
        'name = "MTA-A"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEA"\naccept_any_recipient = true\n'
        f'password_file = "{secret}"\nstate_dir = "{tmp_path}"\n'
        'database = "postgresql+psycopg://mta:db-secret@db.example/aiox400"\n'
    )
    assert x400ctl.main(["config", "-c", str(config)]) == x400ctl.EXIT_OK
    out = capsys.readouterr().out
    assert f'password_file = "{secret}"\n' in out
    assert 'database = "postgresql+psycopg://mta:<hidden>@db.example/aiox400"\n' in out
    assert "do-not-show-me" not in out and "db-secret" not in out


# --- qshape and tables -----------------------------------------------------------------


def _arrived(message_id: int, ago: timedelta) -> Callable[[Session], None]:
    def change(session: Session) -> None:
        session.execute(
            update(QueuedRecipient)
            .where(QueuedRecipient.message_id == message_id)
            .values(arrival_time=datetime.now(UTC) - ago)
        )

    return change


async def test_qshape_counts_what_waits_by_age(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    identifiers = await to_b(site, Precedence.ROUTINE, count=3)
    (flash,) = await to_b(site, Precedence.FLASH)
    ids = await message_ids(site)
    for identifier, minutes in zip(identifiers, (2, 15, 100), strict=True):
        await in_store(site, _arrived(ids[identifier], timedelta(minutes=minutes)))
    await in_store(site, _arrived(ids[flash], timedelta(minutes=50)))
    code, out, err = await ctl(site, capsys, "qshape")
    assert code == x400ctl.EXIT_OK, err
    header, *rows = (line.split() for line in out.splitlines())
    assert header == [
        "ROUTE", "PRECEDENCE", "TOTAL", "0-5m", "5-10m", "10-20m", "20-40m", "40-80m", "80m+"
    ]  # fmt: skip
    assert rows == [
        ["TOTAL", "4", "1", "0", "1", "0", "1", "1"],
        ["MTA-B", "flash", "1", "0", "0", "0", "0", "1", "0"],
        ["MTA-B", "routine", "3", "1", "0", "1", "0", "0", "1"],
    ]


def _long_route_message(session: Session) -> None:
    message = NewMessage(
        mts_identifier="[GB; ;SITEA;long-route]",
        kind=ApduKind.MESSAGE,
        apdu=b"x" * 1234,
        precedence=Precedence.ROUTINE,
        originator="c=gb;s=smith",
        recipients=(NewRecipient(recipient="c=gb;s=far", route=LONG_PEER),),
    )
    TransitQueue(session).enqueue(message, datetime.now(UTC) - timedelta(minutes=90))


def _columns_line_up(out: str, header_word: str, cells: list[str]) -> None:
    """The column headed ``header_word`` starts where each of ``cells`` does in its row."""
    header, *rows = out.splitlines()
    start = header.index(header_word)
    for cell in cells:
        (row,) = [r for r in rows if f"  {cell}" in r]
        assert row.index(f"  {cell}") + 2 == start, (row, cell)


async def test_tables_fit_a_60_character_peer_name(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    site = lab.a
    await to_b(site, Precedence.FLASH)
    await in_store(site, _long_route_message)
    _, out, _ = await ctl(site, capsys, "queue")
    assert LONG_PEER in out
    _columns_line_up(out, "PRECEDENCE", ["flash", "routine"])
    _, out, _ = await ctl(site, capsys, "qshape")
    _columns_line_up(out, "PRECEDENCE", ["flash", "routine"])
    _, out, _ = await ctl(site, capsys, "queue", "--list")
    header, *rows = out.splitlines()
    assert header.split()[:8] == [
        "ID",
        "PRECEDENCE",
        "STATE",
        "TRIES",
        "AGE",
        "OCTETS",
        "ROUTE",
        "MTS",
    ]
    (long_row,) = [row for row in rows if LONG_PEER in row]
    assert long_row.split()[4:7] == ["1h30m", "1234", LONG_PEER]
    _columns_line_up(out, "MTS IDENTIFIER", ["[GB; ;SITEA;long-route]"])
    flash_row = next(row for row in rows if "flash" in row)
    assert flash_row.index("  [GB; ;SITEA;") + 2 == header.index("MTS IDENTIFIER")
