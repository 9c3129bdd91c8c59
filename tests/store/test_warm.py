"""The store builds its hot statements when the MTA starts (store.warm_statements), so
that the first message after a start compiles no SQL: on SQLite and on PostgreSQL.

Each run is a fresh interpreter: statements, once built, stay built for the process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import BindParameter, Engine, bindparam

from store._prepared import Prepared
from store._sql import table
from store.models import QueuedRecipient

ROOT = Path(__file__).resolve().parents[2]

FIRST_MESSAGE = """
import sys
from sqlalchemy.sql.compiler import SQLCompiler
from p1.precedence import Precedence
from store import AuditEvent, AuditLog, AuditRecord, Delivery, MessageStore, TransitQueue
from store import open_database, transaction, warm_statements
from tests.store.samples import JONES, T0, ipm_apdu, new_message

engine = open_database(sys.argv[1])
if sys.argv[2] == "warm":
    warm_statements(engine)
compiled = []
original = SQLCompiler.__init__
def counted(self, *args, **kwargs):
    original(self, *args, **kwargs)
    compiled.append(self.string[:60])
SQLCompiler.__init__ = counted
with transaction(engine) as session:
    queue = TransitQueue(session)
    queue.enqueue_many([new_message("m1", precedence=Precedence.FLASH)], T0)
    (entry,) = queue.claim_next("mta-b", frozenset(Precedence), T0, limit=1)
    queue.mark_transferred(entry.recipient_ids, T0)
    MessageStore(session).deliver_many([Delivery(user=JONES.canonical, apdu=ipm_apdu("m2"))], T0)
    record = AuditRecord(at=T0, event=AuditEvent.TRANSFERRED, mts_identifier="m1")
    AuditLog(session).record_many([record])
print(len(compiled))
for statement in compiled:
    print(" ", " ".join(statement.split()))
"""


def first_message(url: str, how: str) -> tuple[int, str]:
    """How many statements the first message compiles in a fresh process, and which."""
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


def test_after_warming_the_first_message_compiles_nothing(url: str) -> None:
    count, which = first_message(url, "warm")
    assert count == 0, which


def test_without_warming_the_first_message_compiles_its_statements(url: str) -> None:
    # What the warming saves: each of these is 0.2-0.6 ms of the first message.
    count, _ = first_message(url, "cold")
    assert count >= 5


def test_a_statement_is_built_once_for_each_dialect(engine: Engine) -> None:
    recipients = table(QueuedRecipient)
    ids: BindParameter[int] = bindparam("ids", expanding=True)
    prepared = Prepared(recipients.select().where(recipients.c.id.in_(ids)))
    assert prepared.warm(engine.dialect) == 1
    assert prepared.warm(engine.dialect) == 0


def test_a_statement_written_for_another_dialect_is_not_built(engine: Engine) -> None:
    recipients = table(QueuedRecipient)
    other = "postgresql" if engine.dialect.name == "sqlite" else "sqlite"
    prepared = Prepared(recipients.select(), dialect=other)
    assert prepared.warm(engine.dialect) == 0
