"""One stored copy of a delivered APDU however many users it went to, on SQLite and
PostgreSQL: one content row (and, on SQLite, one spool file) per distinct APDU, deleted
with the last entry naming it, never before; concurrent deletions neither keep nor lose
it; the start-up sweep keeps its file; entries of a database made before contents
existed are read and deleted as they were made."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select, text

from store._sql import table
from store.db import open_database, spool_folder, sweep_spool, transaction
from store.mailbox import Delivery, MessageStore
from store.models import MailboxContent
from store.spool import SPOOL_THRESHOLD, apdu_columns, spool_of
from tests.support.store_samples import T0, at, ipm_apdu, raw_apdu

LARGE = raw_apdu("big", 22, bytes(range(256)) * (SPOOL_THRESHOLD // 256 + 1))
"""A message over the spool's threshold."""
USERS = [f"c=gb;admd= ;prmd=nato;o=jfc;s=user{n:03}" for n in range(120)]
_CONTENTS = table(MailboxContent)


def deliver(engine: Engine, users: list[str], apdu: bytes) -> list[int]:
    with transaction(engine) as session:
        ids = MessageStore(session).deliver_many([Delivery(user=u, apdu=apdu) for u in users], T0)
    assert None not in ids
    return [i for i in ids if i is not None]


def contents(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(_CONTENTS)).scalar_one())


def files(engine: Engine) -> set[str]:
    """Spool files holding something (none on PostgreSQL: its rows hold the APDUs)."""
    folder = spool_folder(engine.url)
    if folder is None:
        return set()
    return {path.name for path in folder.iterdir() if path.stat().st_size}


def read(engine: Engine, user: str, entry_id: int) -> bytes | None:
    with transaction(engine, read_only=True) as session:
        message = MessageStore(session).read(user, entry_id)
    return None if message is None else message.apdu


def delete(engine: Engine, user: str, entry_id: int) -> int:
    with transaction(engine) as session:
        return MessageStore(session).delete(user, [entry_id])


def expected_files(engine: Engine, count: int) -> int:
    return count if engine.dialect.name == "sqlite" else 0


def test_a_message_for_many_users_is_stored_once(engine: Engine) -> None:
    ids = deliver(engine, USERS, LARGE)
    assert contents(engine) == 1
    assert len(files(engine)) == expected_files(engine, 1)
    for user, entry_id in list(zip(USERS, ids, strict=True))[::17]:
        assert read(engine, user, entry_id) == LARGE
    with transaction(engine, read_only=True) as session:
        (summary,) = MessageStore(session).list(USERS[5])
    assert summary.size == len(LARGE)


def test_each_distinct_apdu_of_a_batch_is_one_content(engine: Engine) -> None:
    small = ipm_apdu("small", subject="one")
    with transaction(engine) as session:
        MessageStore(session).deliver_many(
            [Delivery(user=u, apdu=LARGE) for u in USERS[:3]]
            + [Delivery(user=u, apdu=bytes(small)) for u in USERS[:3]],
            T0,
        )
    assert contents(engine) == 2
    assert len(files(engine)) == expected_files(engine, 1)  # the small one is in its row


def test_the_content_goes_with_the_last_entry_naming_it(engine: Engine) -> None:
    ids = deliver(engine, USERS[:3], LARGE)
    assert delete(engine, USERS[0], ids[0]) == 1
    assert delete(engine, USERS[1], ids[0]) == 0  # another user's entry: not deleted
    assert contents(engine) == 1
    assert read(engine, USERS[2], ids[2]) == LARGE
    assert delete(engine, USERS[1], ids[1]) == 1
    assert contents(engine) == 1
    assert len(files(engine)) == expected_files(engine, 1)
    assert delete(engine, USERS[2], ids[2]) == 1
    assert contents(engine) == 0
    assert files(engine) == set()


def test_a_rolled_back_deletion_keeps_content_and_file(engine: Engine) -> None:
    (only,) = deliver(engine, USERS[:1], LARGE)
    with pytest.raises(RuntimeError), transaction(engine) as session:
        assert MessageStore(session).delete(USERS[0], [only]) == 1
        assert len(files(engine)) == expected_files(engine, 1)  # not before the commit
        raise RuntimeError("rolled back")
    assert contents(engine) == 1
    assert read(engine, USERS[0], only) == LARGE


def test_a_delivery_of_duplicates_only_leaves_no_content(engine: Engine) -> None:
    deliver(engine, USERS[:4], LARGE)
    with transaction(engine) as session:
        again = MessageStore(session).deliver_many(
            [Delivery(user=u, apdu=LARGE) for u in USERS[:4]], at(5)
        )
    assert again == (None, None, None, None)
    assert contents(engine) == 1
    assert len(files(engine)) == expected_files(engine, 1)


def test_the_sweep_keeps_the_files_of_contents(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        ids = deliver(engine, USERS[:2], LARGE)
        (kept,) = files(engine)
        assert sweep_spool(engine) > 0  # the blank files made ahead
        folder = spool_folder(engine.url)
        assert folder is not None
        assert {path.name for path in folder.iterdir()} == {kept}
        assert read(engine, USERS[1], ids[1]) == LARGE
    finally:
        engine.dispose()


# --- a database made before contents existed ----------------------------------------------


def _as_before_contents(engine: Engine) -> None:
    """Make ``engine``'s (empty) store as a release without contents made it."""
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.exec_driver_sql("ALTER TABLE mailbox DROP COLUMN content_id")
        else:  # SQLite drops no column named by a foreign key: the table is made again
            ddl = connection.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE name = 'mailbox'"
            ).scalar_one()
            ddl = re.sub(r",\s*FOREIGN KEY\(content_id\) REFERENCES contents \(id\)", "", ddl)
            ddl = re.sub(r"\s*content_id \w+,", "", ddl)
            connection.exec_driver_sql("DROP TABLE mailbox")
            connection.exec_driver_sql(ddl)
        connection.exec_driver_sql("DROP TABLE contents")


def _old_entry(engine: Engine, user: str, name: str, apdu: bytes) -> int:
    """An entry as a release without contents delivered it: its APDU in its own row."""
    with transaction(engine) as session:
        columns = apdu_columns(spool_of(session), session, apdu)
        inserted = session.execute(
            text(
                'INSERT INTO mailbox ("user", mts_identifier, kind, size, precedence, '
                "subject, originator, delivered_at, read, apdu_file, apdu) VALUES (:user, "
                ":name, 'message', :size, 2, 'old', NULL, :at, :read, :apdu_file, :apdu) "
                "RETURNING id"
            ),
            {"user": user, "name": name, "size": len(apdu), "at": T0, "read": False, **columns},
        )
        return int(inserted.scalar_one())


@pytest.fixture
def old_engine(engine: Engine) -> Iterator[Engine]:
    _as_before_contents(engine)
    yield engine


def test_entries_made_before_contents_are_read_and_deleted(old_engine: Engine) -> None:
    small = bytes(ipm_apdu("small", subject="old"))
    big_id = _old_entry(old_engine, USERS[0], "old-big", LARGE)
    small_id = _old_entry(old_engine, USERS[0], "old-small", small)
    old_engine.dispose()
    engine = open_database(old_engine.url)  # the column and the table are added
    try:
        assert read(engine, USERS[0], big_id) == LARGE
        assert read(engine, USERS[0], small_id) == small
        new_ids = deliver(engine, USERS[:2], LARGE)  # a new delivery: one content
        assert contents(engine) == 1
        assert len(files(engine)) == expected_files(engine, 2)
        assert delete(engine, USERS[0], big_id) == 1
        assert len(files(engine)) == expected_files(engine, 1)  # the old entry's own file
        assert delete(engine, USERS[0], small_id) == 1
        assert [read(engine, u, i) for u, i in zip(USERS, new_ids, strict=False)] == [LARGE] * 2
        assert contents(engine) == 1
    finally:
        engine.dispose()


# --- two deletions at once (PostgreSQL: SQLite serialises its transactions) ---------------


def test_two_deletions_of_the_last_entries_at_once_delete_the_content(
    postgres_engine: Engine,
) -> None:
    first, second = deliver(postgres_engine, USERS[:2], LARGE)
    holder = transaction(postgres_engine)
    session = holder.__enter__()
    try:
        assert MessageStore(session).delete(USERS[0], [first]) == 1  # not committed yet
        outcome: list[int | BaseException] = []

        def other() -> None:
            try:
                outcome.append(delete(postgres_engine, USERS[1], second))
            except BaseException as error:  # (reported below)
                outcome.append(error)

        thread = threading.Thread(target=other)
        thread.start()
        _until_waiting_or_done(postgres_engine, thread)
    finally:
        holder.__exit__(None, None, None)  # commits
    thread.join(timeout=60)
    assert outcome == [1]
    # Each saw the other's entry while neither had committed; the second, having waited
    # for the first, saw none left.
    assert contents(postgres_engine) == 0


def _until_waiting_or_done(engine: Engine, thread: threading.Thread) -> None:
    """Until ``thread``'s transaction waits for a lock held by another, or it ended."""
    query = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    for _ in range(3000):
        if not thread.is_alive():
            return
        with engine.connect() as connection:
            if connection.execute(query).scalar_one():
                return
        thread.join(timeout=0.02)
    pytest.fail("the second deletion neither waited nor ended")
