"""A live MTA-B receiving a message over the spool's threshold for 2,000 of its users:
stored once (one content row, one spool file), every user's entry reading it, a log of
bounded lines, and a one-recipient transfer sent meanwhile delivered too."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path

import pytest

from store.spool import SPOOL_THRESHOLD
from tests.fuzz.attack_many_recipients import MAX_LINE, Case, run_attack

USERS = 2000


@pytest.mark.slow
def test_a_message_for_many_local_users_is_stored_once(tmp_path: Path) -> None:
    case = Case(
        identifier="many-users",
        users=tuple(range(USERS)),
        foreign=0,
        body_octets=2 * SPOOL_THRESHOLD,
    )
    outcome = asyncio.run(run_attack(tmp_path, [case]))
    assert outcome.one_recipient_delivered
    assert outcome.mailbox_rows == USERS + 1  # and the one-recipient message
    assert outcome.contents == 2
    assert outcome.spool_files == 1  # (the one-recipient message is in its row)
    assert outcome.longest_line <= MAX_LINE
    assert outcome.tracebacks == 0
    assert outcome.answering
    with contextlib.closing(sqlite3.connect(tmp_path / "state" / "aiox400.db")) as database:
        (named,) = database.execute(
            "SELECT count(DISTINCT content_id) FROM mailbox WHERE mts_identifier LIKE "
            "'%many-users%'"
        ).fetchone()
    assert named == 1
    assert outcome.problems() == []
