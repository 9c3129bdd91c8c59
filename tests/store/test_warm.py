"""The store gets ready for the first message when the MTA starts (store.warm_up): the
first message then writes no SQL text and SQLAlchemy compiles nothing for it, every hot
statement has run once on the driver, and the warm-up leaves the database as it was; on
SQLite and on PostgreSQL.

Each count of the first message is taken in a fresh interpreter: a statement's text,
once written for a dialect, stays written for the process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine

from p1.mts.precedence import Precedence
from store import TransitQueue, transaction, warm_up
from store._sql import connection_of
from store.models import Base
from store.sql import audit, mailbox, queue, received
from store.sql.statement import Insert, Statement, warm
from tests.support.store_samples import T0, mts_id, new_message

ROOT = Path(__file__).resolve().parents[2]

FIRST_MESSAGE = """
import sys
from sqlalchemy.sql.compiler import SQLCompiler
from p1.mts.precedence import Precedence
from store import AuditEvent, AuditLog, AuditRecord, Delivery, MessageStore, TransitQueue
from store import open_database, transaction, warm_up
from store.sql import statement
from tests.support.store_samples import JONES, T0, ipm_apdu, new_message

engine = open_database(sys.argv[1])
if sys.argv[2] == "warm":
    warm_up(engine, [(Precedence.OVERRIDE, Precedence.FLASH)], now=T0)
made = []
original = SQLCompiler.__init__
def counted(self, *args, **kwargs):
    original(self, *args, **kwargs)
    made.append(self.string[:60])
SQLCompiler.__init__ = counted
render = statement._Form.render
def rendered(self, lengths):
    text = render(self, lengths)
    made.append(f"{lengths}: {text}"[:60])
    return text
statement._Form.render = rendered
with transaction(engine) as session:
    queue = TransitQueue(session)
    queue.enqueue_many([new_message("m1", precedence=Precedence.FLASH)], T0)
    flash_slot = (Precedence.OVERRIDE, Precedence.FLASH)
    (entry,) = queue.claim_next("mta-b", flash_slot, T0, limit=1, max_octets=1 << 23)
    queue.mark_transferred(entry.recipient_ids, T0)
    MessageStore(session).deliver_many([Delivery(user=JONES.canonical, apdu=ipm_apdu("m2"))], T0)
    record = AuditRecord(at=T0, event=AuditEvent.TRANSFERRED, mts_identifier="m1")
    AuditLog(session).record_many([record])
print(len(made))
for text in made:
    print(" ", " ".join(text.split()))
"""


def first_message(url: str, how: str) -> tuple[int, str]:
    """How many SQL texts the first message makes in a fresh process, and which (one
    SQLAlchemy compiles, or one of a hot statement, for the lengths of its lists)."""
    done = subprocess.run(
        [sys.executable, "-c", FIRST_MESSAGE, url, how],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    count, _, which = done.stdout.partition("\n")
    return int(count), which


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.mark.slow
def test_after_warming_up_the_first_message_makes_no_sql(url: str) -> None:
    count, which = first_message(url, "warm")
    assert count == 0, which


@pytest.mark.slow
def test_without_warming_the_first_message_writes_its_statements(url: str) -> None:
    count, _ = first_message(url, "cold")
    assert count >= 5


def reads_and_updates() -> list[Statement]:
    """The store's statements that warm runs (all but the inserts)."""
    return [
        value
        for module in (queue, received, mailbox, audit)
        for value in vars(module).values()
        if isinstance(value, Statement) and not isinstance(value, Insert)
    ]


def test_sample_values_match_no_row(engine: Engine) -> None:
    with transaction(engine) as session:
        TransitQueue(session).enqueue_many([new_message("m1"), new_message("m2")], T0)
    with engine.connect() as connection:
        begun = connection.begin()
        for statement in reads_and_updates():
            rows = statement.rows(connection, statement.sample())
            assert rows in ([], [(0,)], [(None,)]), statement  # none, or an empty aggregate
        begun.rollback()


def test_warm_runs_each_statement_that_reads_or_updates(engine: Engine) -> None:
    with transaction(engine) as session:
        assert warm(connection_of(session)) >= len(reads_and_updates())


def snapshot(engine: Engine) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table of the store."""
    with engine.connect() as connection:
        return {
            name: sorted(tuple(row) for row in connection.execute(t.select()))
            for name, t in Base.metadata.tables.items()
        }


def test_warming_up_leaves_the_database_as_it_was(engine: Engine) -> None:
    enqueue_flash = new_message("m1", precedence=Precedence.FLASH)
    with transaction(engine) as session:
        TransitQueue(session).enqueue_many([enqueue_flash], T0)
    before = snapshot(engine)
    slots = [(Precedence.OVERRIDE, Precedence.FLASH), (Precedence.ROUTINE, Precedence.DEFERRED)]
    assert warm_up(engine, slots, now=T0) >= len(reads_and_updates())
    assert snapshot(engine) == before
    # The real message is still there to be claimed, by the route it is on.
    with transaction(engine) as session:
        (entry,) = TransitQueue(session).claim_next("mta-b", slots[0], T0)
    assert entry.mts_identifier == mts_id("m1").text
