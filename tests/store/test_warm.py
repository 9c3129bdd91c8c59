"""The store gets ready for the first message when the MTA starts (store.warm_up): the
first message then compiles no SQL, and the rehearsal leaves the database as it was; on
SQLite and on PostgreSQL.  Also the declared inserts of new rows (store._sql.InsertNew),
which warming builds ahead.

Each compile count is taken in a fresh interpreter: statements, once built, stay built
for the process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import BindParameter, Engine, bindparam

from p1.mts.precedence import Precedence
from store import TransitQueue, transaction, warm_up
from store._prepared import Prepared
from store._sql import InsertNew, table
from store.models import Base, QueuedRecipient, ReceivedKey
from tests.store.samples import T0, mts_id, new_message

ROOT = Path(__file__).resolve().parents[2]

FIRST_MESSAGE = """
import sys
from sqlalchemy.sql.compiler import SQLCompiler
from p1.mts.precedence import Precedence
from store import AuditEvent, AuditLog, AuditRecord, Delivery, MessageStore, TransitQueue
from store import open_database, transaction, warm_up
from store._prepared import Prepared
from tests.store.samples import JONES, T0, ipm_apdu, new_message

engine = open_database(sys.argv[1])
if sys.argv[2] == "warm":
    warm_up(engine, [(Precedence.OVERRIDE, Precedence.FLASH)], now=T0)
compiled = []
original = SQLCompiler.__init__
def counted(self, *args, **kwargs):
    original(self, *args, **kwargs)
    compiled.append(self.string[:60])
SQLCompiler.__init__ = counted
expand = Prepared._compile
def expanded(self, dialect, key, parameters):
    compiled.append(f"{key}: {self.statement}"[:60])
    return expand(self, dialect, key, parameters)
Prepared._compile = expanded
with transaction(engine) as session:
    queue = TransitQueue(session)
    queue.enqueue_many([new_message("m1", precedence=Precedence.FLASH)], T0)
    flash_slot = (Precedence.OVERRIDE, Precedence.FLASH)
    (entry,) = queue.claim_next("mta-b", flash_slot, T0, limit=1, max_octets=1 << 23)
    queue.mark_transferred(entry.recipient_ids, T0)
    MessageStore(session).deliver_many([Delivery(user=JONES.canonical, apdu=ipm_apdu("m2"))], T0)
    record = AuditRecord(at=T0, event=AuditEvent.TRANSFERRED, mts_identifier="m1")
    AuditLog(session).record_many([record])
print(len(compiled))
for statement in compiled:
    print(" ", " ".join(statement.split()))
"""


def first_message(url: str, how: str) -> tuple[int, str]:
    """How many statements the first message compiles in a fresh process, and which
    (a new SQLAlchemy compilation, or a prepared statement's new form for the lengths of
    its lists)."""
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


def test_after_warming_up_the_first_message_compiles_nothing(url: str) -> None:
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
    assert warm_up(engine, slots, now=T0) >= 0
    assert snapshot(engine) == before
    # The real message is still there to be claimed, by the route it is on.
    with transaction(engine) as session:
        (entry,) = TransitQueue(session).claim_next("mta-b", slots[0], T0)
    assert entry.mts_identifier == mts_id("m1").text


def test_an_insert_of_new_rows_refuses_a_column_it_would_leave_out(engine: Engine) -> None:
    keys = InsertNew(
        ReceivedKey,
        key=("mts_identifier", "recipient"),
        returning=("mts_identifier", "recipient"),
        given=("mts_identifier", "recipient", "received_at"),
    )
    row = {"mts_identifier": "m1", "recipient": "c=gb;s=jones", "received_at": T0}
    with transaction(engine) as session:
        connection = session.connection()
        with pytest.raises(ValueError, match=r"rows give \['origin_peer'\], not inserted"):
            keys.insert(connection, [{**row, "origin_peer": "MTA-A"}])
        assert keys.insert(connection, [row]) == [("m1", "c=gb;s=jones")]
        assert keys.insert(connection, [row]) == []  # there already: skipped
