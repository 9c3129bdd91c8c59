"""Opening the database: SQLite settings on every connection, transactions, and errors
that name the URL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import OperationalError

from store.db import DatabaseUnavailableError, open_database, transaction
from store.quarantine import Quarantine
from store.queue import TransitQueue
from tests.support.store_samples import T0, new_message

TABLES = ["audit", "contents", "mailbox", "messages", "quarantine", "received", "recipients"]


def test_the_schema_is_created(engine: Engine) -> None:
    assert sorted(inspect(engine).get_table_names()) == TABLES


def test_every_sqlite_connection_is_durable_and_checked(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}", busy_timeout=2.5)
    first, second = engine.raw_connection(), engine.raw_connection()
    for connection in (first, second):
        cursor = connection.cursor()
        pragmas: dict[str, object] = {}
        for name in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout"):
            cursor.execute(f"PRAGMA {name}")
            (pragmas[name],) = cursor.fetchall()[0]
        assert first.dbapi_connection is not second.dbapi_connection
        assert pragmas == {
            "journal_mode": "wal",
            "synchronous": 2,  # FULL
            "foreign_keys": 1,
            "busy_timeout": 2500,
        }
        connection.close()
    engine.dispose()


def test_a_sqlite_transaction_takes_the_write_lock_when_it_begins(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    holder = open_database(url)
    other = open_database(url, busy_timeout=0.05)
    with transaction(holder) as session:
        session.execute(text("SELECT 1"))  # a read, yet the lock is taken (BEGIN IMMEDIATE)
        with pytest.raises(OperationalError, match="locked"), transaction(other) as blocked:
            blocked.execute(text("SELECT 1"))
    with transaction(other) as session:  # free again once the first committed
        assert session.execute(text("SELECT 1")).scalar() == 1
    holder.dispose()
    other.dispose()


def test_a_read_only_sqlite_transaction_leaves_the_write_lock_free(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    reader = open_database(url)
    writer = open_database(url, busy_timeout=0.05)
    with transaction(reader, read_only=True) as reading:
        assert reading.scalars(text("SELECT count(*) FROM messages")).one() == 0
        with transaction(writer) as session:
            TransitQueue(session).enqueue(new_message("m1"), T0)
        # WAL: the reader keeps its snapshot until its transaction ends.
        assert reading.scalars(text("SELECT count(*) FROM messages")).one() == 0
    with transaction(reader, read_only=True) as reading:
        assert reading.scalars(text("SELECT count(*) FROM messages")).one() == 1
    reader.dispose()
    writer.dispose()


def test_reopening_keeps_what_was_committed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = open_database(url)
    with transaction(engine) as session:
        TransitQueue(session).enqueue(new_message("m1"), T0)
    engine.dispose()
    engine = open_database(url)
    with transaction(engine) as session:
        assert sum(c.recipients for c in TransitQueue(session).counts()) == 1
    engine.dispose()


def test_an_unreachable_sqlite_file_is_named(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'missing' / 'store.db'}"
    with pytest.raises(DatabaseUnavailableError) as caught:
        open_database(url)
    assert str(caught.value).startswith(f"cannot open database {url}: ")
    assert "unable to open database file" in str(caught.value)


def test_an_unreachable_server_is_named_without_its_password() -> None:
    url = "postgresql+psycopg://mta:s3cret@127.0.0.1:1/aiox400"
    with pytest.raises(DatabaseUnavailableError) as caught:
        open_database(url)
    message = str(caught.value)
    assert message.startswith("cannot open database postgresql+psycopg://mta:***@127.0.0.1:1/")
    assert "s3cret" not in message


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("not a url", "'not a url' is not a database URL"),
        ("nosuchdb://host/x", "cannot open database nosuchdb://host/x: "),
        ("postgresql+nosuchdriver://h/x", "cannot open database postgresql+nosuchdriver://h/x: "),
    ],
)
def test_a_bad_url_is_named(url: str, expected: str) -> None:
    with pytest.raises(DatabaseUnavailableError, match="^" + expected.replace("+", r"\+")):
        open_database(url)


def test_a_read_only_transaction_reads_what_was_committed(engine: Engine) -> None:
    with transaction(engine) as session:
        TransitQueue(session).enqueue(new_message("m1"), T0)
    with transaction(engine, read_only=True) as session:
        assert sum(c.recipients for c in TransitQueue(session).counts()) == 1


def test_sqlite_writers_in_several_threads_wait_for_each_other(tmp_path: Path) -> None:
    # The daemon's worker threads share one engine: BEGIN IMMEDIATE and the busy timeout
    # serialise their transactions instead of failing them.
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")

    def write(worker: int) -> None:
        for n in range(25):
            with transaction(engine) as session:
                queue = TransitQueue(session)
                queue.enqueue(new_message(f"w{worker}-{n}"), T0)
                queue.counts()  # read after write inside the same transaction

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, range(4)))
    with transaction(engine, read_only=True) as session:
        assert sum(c.recipients for c in TransitQueue(session).counts()) == 100
    engine.dispose()


def _flush_level(engine: Engine, durable: bool) -> str:
    with transaction(engine, durable=durable) as session:
        if engine.dialect.name == "sqlite":
            # PRAGMA synchronous: 1 NORMAL (no flush per commit in WAL), 2 FULL.
            return {1: "normal", 2: "full"}[
                int(session.execute(text("PRAGMA synchronous")).scalar_one())
            ]
        return str(session.execute(text("SHOW synchronous_commit")).scalar_one())


def test_a_transaction_is_flushed_to_disk_unless_asked_not_to(engine: Engine) -> None:
    lazy, durable = ("normal", "full") if engine.dialect.name == "sqlite" else ("off", "on")
    assert _flush_level(engine, durable=True) == durable
    assert _flush_level(engine, durable=False) == lazy
    # The level is the transaction's: the next durable one flushes again.
    assert _flush_level(engine, durable=True) == durable


def test_a_transaction_that_need_not_be_durable_still_commits(engine: Engine) -> None:
    with transaction(engine, durable=False) as session:
        TransitQueue(session).enqueue(new_message("lazy"), T0)
    with transaction(engine, read_only=True) as session:
        assert len(TransitQueue(session).counts()) == 1


def test_a_database_from_an_earlier_schema_gets_the_columns_that_may_be_empty(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = open_database(url)
    with transaction(engine) as session:
        TransitQueue(session).enqueue(new_message("kept"), T0)
    with engine.begin() as connection:  # as an earlier release made it
        connection.exec_driver_sql("ALTER TABLE messages DROP COLUMN envelope_recipients")
        for column in ("apdu_file", "security_label", "message_type"):
            connection.exec_driver_sql(f"ALTER TABLE mailbox DROP COLUMN {column}")
    engine.dispose()
    engine = open_database(url)
    added = (
        ("messages", "envelope_recipients"),
        ("mailbox", "apdu_file"),
        ("mailbox", "security_label"),
        ("mailbox", "message_type"),
    )
    with engine.connect() as connection:
        for table, column in added:
            names = {row[1] for row in connection.exec_driver_sql(f"PRAGMA table_info({table})")}
            assert column in names
    with transaction(engine, read_only=True) as session:
        (count,) = TransitQueue(session).counts()
    assert count.recipients == 1  # what the earlier release queued is still there
    engine.dispose()


def test_a_database_from_an_earlier_schema_gets_its_missing_indexes(engine: Engine) -> None:
    with engine.begin() as connection:  # as an earlier release made it
        connection.exec_driver_sql("DROP INDEX ix_mailbox_user_id")
    assert "ix_mailbox_user_id" not in mailbox_indexes(engine)
    open_database(engine.url).dispose()
    assert "ix_mailbox_user_id" in mailbox_indexes(engine)


def mailbox_indexes(engine: Engine) -> set[str | None]:
    return {index["name"] for index in inspect(engine).get_indexes("mailbox")}


def test_a_database_lacking_a_column_that_may_not_be_empty_is_refused_by_name(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    engine = open_database(f"sqlite:///{path}")
    with engine.begin() as connection:  # not an earlier release of ours: refused
        connection.exec_driver_sql("ALTER TABLE messages DROP COLUMN size")
    engine.dispose()
    with pytest.raises(DatabaseUnavailableError, match="messages lacks size"):
        open_database(f"sqlite:///{path}")


def test_a_database_from_an_earlier_schema_gets_the_quarantine_table(engine: Engine) -> None:
    with engine.begin() as connection:  # as an earlier release made it
        connection.exec_driver_sql("DROP TABLE quarantine")
    assert "quarantine" not in inspect(engine).get_table_names()
    reopened = open_database(engine.url)
    try:
        assert "quarantine" in inspect(reopened).get_table_names()
        with transaction(reopened) as session:
            kept = Quarantine(session).keep(b"\x00", peer="MTA-A", reason="r", now=T0)
        with transaction(reopened, read_only=True) as session:
            found = Quarantine(session).read(kept)
        assert found is not None and found.apdu == b"\x00"
    finally:
        reopened.dispose()
