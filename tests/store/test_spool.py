"""Large APDUs in the spool folder of a SQLite database: written and flushed before the
commit that names them, read back byte for byte, removed with their rows (after the
commit) or at a rollback, swept at start when no row names them; PostgreSQL keeps them
in its rows."""

from __future__ import annotations

import dataclasses
import mmap
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, event, select

from p1.mts.precedence import Precedence
from store.db import open_database, spool_folder, sweep_spool, transaction
from store.mailbox import Delivery, MessageStore
from store.models import MailboxEntry, QueuedMessage
from store.queue import QueueEntry, TransitQueue
from store.spool import MAP_THRESHOLD, SPOOL_THRESHOLD, SpoolError, spool_of
from tests.support.store_samples import JONES, T0, at, new_message, raw_apdu

LARGE = bytes(range(256)) * (SPOOL_THRESHOLD // 256 + 1)
"""Just over the threshold, every octet value present."""
ROUTINE = {Precedence.ROUTINE}


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[Engine]:
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    yield engine
    engine.dispose()


def _files(engine: Engine) -> set[str]:
    """The files in the spool folder holding something (not the blank files made ahead)."""
    folder = spool_folder(engine.url)
    assert folder is not None
    return {path.name for path in folder.iterdir() if path.stat().st_size}


def _queue(engine: Engine, local: str, apdu: bytes) -> int:
    with transaction(engine) as session:
        (result,) = TransitQueue(session).enqueue_many(
            [dataclasses.replace(new_message(local), apdu=apdu)], T0
        )
    assert result.message_id is not None
    return result.message_id


def _claim(engine: Engine) -> QueueEntry:
    with transaction(engine) as session:
        (entry,) = TransitQueue(session).claim_next("mta-b", ROUTINE, at(1))
    return entry


def _stored(
    engine: Engine, model: type[QueuedMessage | MailboxEntry]
) -> list[tuple[int, str | None]]:
    table = model.__table__
    with engine.connect() as connection:
        rows = connection.execute(select(table.c.apdu, table.c.apdu_file)).all()
    return [(len(row[0]), row[1]) for row in rows]


def test_the_spool_folder_is_beside_a_sqlite_file_only(tmp_path: Path) -> None:
    assert spool_folder(f"sqlite:///{tmp_path}/q.db") == tmp_path / "q.db-apdus"
    assert spool_folder("sqlite://") is None
    assert spool_folder("sqlite:///:memory:") is None
    assert spool_folder("postgresql+psycopg://mta@db.example/aiox400") is None


def test_a_large_apdu_is_a_file_and_comes_back_byte_for_byte(sqlite: Engine) -> None:
    _queue(sqlite, "big", LARGE)
    _queue(sqlite, "small", b"small apdu")
    ((empty, name), (inline, none)) = _stored(sqlite, QueuedMessage)
    assert (empty, inline, none) == (0, len(b"small apdu"), None)
    assert name is not None and _files(sqlite) == {name}
    folder = spool_folder(sqlite.url)
    assert folder is not None and (folder / name).read_bytes() == LARGE
    assert _claim(sqlite).apdu == LARGE


def test_postgresql_keeps_a_large_apdu_in_its_row(postgres_engine: Engine) -> None:
    _queue(postgres_engine, "big", LARGE)
    assert _stored(postgres_engine, QueuedMessage) == [(len(LARGE), None)]
    with transaction(postgres_engine) as session:
        assert spool_of(session) is None
    assert _claim(postgres_engine).apdu == LARGE


def test_a_database_opened_without_spool_keeps_apdus_in_rows(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}", spool=False)
    _queue(engine, "big", LARGE)
    assert _stored(engine, QueuedMessage) == [(len(LARGE), None)]
    engine.dispose()


def test_the_file_is_flushed_and_its_name_was_before_the_commit(
    sqlite: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    happened: list[str] = []
    real_fsync, real_fdatasync = os.fsync, os.fdatasync

    def flushed(descriptor: int) -> str:
        path = os.readlink(f"/proc/self/fd/{descriptor}")
        return "folder" if os.path.isdir(path) else f"file of {os.path.getsize(path)} octets"

    def fsync(descriptor: int) -> None:
        happened.append(flushed(descriptor))
        real_fsync(descriptor)

    def fdatasync(descriptor: int) -> None:
        happened.append(flushed(descriptor))
        real_fdatasync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "fdatasync", fdatasync)
    monkeypatch.setattr("store.spool._flush_data", fdatasync)
    event.listen(sqlite, "commit", lambda connection: happened.append("commit"))
    _queue(sqlite, "first", LARGE)
    _queue(sqlite, "second", LARGE)
    written = f"file of {len(LARGE)} octets"
    # The names of the blank files are flushed once, ahead; each file before its commit.
    assert happened == ["folder", written, "commit", written, "commit"]


def test_a_rolled_back_transaction_leaves_no_file(sqlite: Engine) -> None:
    with pytest.raises(RuntimeError), transaction(sqlite) as session:
        TransitQueue(session).enqueue(dataclasses.replace(new_message("big"), apdu=LARGE), T0)
        assert len(_files(sqlite)) == 1  # written, flushed, not yet committed
        raise RuntimeError("the unit failed")
    assert _files(sqlite) == set()
    assert _stored(sqlite, QueuedMessage) == []


def test_a_purged_message_takes_its_file_once_committed(sqlite: Engine) -> None:
    _queue(sqlite, "big", LARGE)
    entry = _claim(sqlite)
    with transaction(sqlite) as session:
        TransitQueue(session).mark_transferred([r.id for r in entry.recipients], at(2))
    with pytest.raises(RuntimeError), transaction(sqlite) as session:
        assert TransitQueue(session).purge_finished(at(3)) == 1
        raise RuntimeError("rolled back")
    assert len(_files(sqlite)) == 1  # the row is back, so is its file
    with transaction(sqlite) as session:
        assert TransitQueue(session).purge_finished(at(3)) == 1
        assert len(_files(sqlite)) == 1  # not before the commit
    assert _files(sqlite) == set()


def test_a_large_delivery_is_a_file_read_back_and_deleted_with_its_entry(
    sqlite: Engine,
) -> None:
    apdu = raw_apdu("m1", 22, LARGE)
    user = JONES.canonical
    with transaction(sqlite) as session:
        (entry_id,) = MessageStore(session).deliver_many([Delivery(user=user, apdu=apdu)], T0)
    assert entry_id is not None
    assert len(_files(sqlite)) == 1
    assert _stored(sqlite, MailboxEntry)[0][0] == 0
    with transaction(sqlite, read_only=True) as session:
        store = MessageStore(session)
        (summary,) = store.list(user)
        message = store.read(user, entry_id)
    assert summary.size == len(apdu)
    assert message is not None and message.apdu == apdu
    with transaction(sqlite) as session:
        assert MessageStore(session).delete(user, [entry_id]) == 1
    assert _files(sqlite) == set()


def test_the_sweep_removes_only_files_no_row_names(sqlite: Engine) -> None:
    _queue(sqlite, "big", LARGE)
    (kept,) = _files(sqlite)
    folder = spool_folder(sqlite.url)
    assert folder is not None
    orphan = folder / ("0" * 32 + ".ber")  # a stop between the write and the commit
    orphan.write_bytes(b"never committed")
    (folder / "notes.txt").write_text("not the spool's")
    blanks = len(list(folder.iterdir())) - 3
    assert blanks > 0  # made ahead, named by no row either
    assert sweep_spool(sqlite) == 1 + blanks
    assert {path.name for path in folder.iterdir()} == {kept, "notes.txt"}
    _queue(sqlite, "after", LARGE)  # blank files are made again
    assert _claim(sqlite).apdu == LARGE


def test_a_missing_file_is_an_error_naming_it(sqlite: Engine) -> None:
    _queue(sqlite, "big", LARGE)
    folder = spool_folder(sqlite.url)
    assert folder is not None
    (name,) = _files(sqlite)
    (folder / name).unlink()
    with pytest.raises(SpoolError, match=f"cannot read APDU file .*{name}"):
        _claim(sqlite)


def test_a_large_value_is_the_last_column_so_listings_do_not_read_it(sqlite: Engine) -> None:
    with sqlite.connect() as connection:
        for table in ("messages", "mailbox"):
            columns = [row[1] for row in connection.exec_driver_sql(f"PRAGMA table_info({table})")]
            assert columns[-1] == "apdu"


def test_savepoints_undo_their_own_files_and_keep_those_of_their_deleted_rows(
    sqlite: Engine,
) -> None:
    _queue(sqlite, "old", LARGE)
    entry = _claim(sqlite)
    with transaction(sqlite) as session:
        TransitQueue(session).mark_transferred([r.id for r in entry.recipients], at(2))
    (old,) = _files(sqlite)
    with pytest.raises(RuntimeError), transaction(sqlite) as session:
        with session.begin_nested():  # released, but its transaction rolls back
            assert TransitQueue(session).purge_finished(at(3)) == 1
        raise RuntimeError("rolled back")
    assert _files(sqlite) == {old}
    with transaction(sqlite) as session, pytest.raises(RuntimeError), session.begin_nested():
        assert TransitQueue(session).purge_finished(at(3)) == 1
        raise RuntimeError("this unit failed")
    assert _files(sqlite) == {old}  # its row is back, so its file stays
    with transaction(sqlite) as session:
        with session.begin_nested():  # units in savepoints, as mta.database runs them
            message = dataclasses.replace(new_message("first"), apdu=LARGE)
            TransitQueue(session).enqueue(message, T0)
        with pytest.raises(RuntimeError), session.begin_nested():
            message = dataclasses.replace(new_message("undone"), apdu=LARGE)
            TransitQueue(session).enqueue(message, T0)
            raise RuntimeError("this unit failed")
        assert len(_files(sqlite) - {old}) == 1  # the failed unit's file went with it
        message = dataclasses.replace(new_message("kept"), apdu=LARGE)
        TransitQueue(session).enqueue(message, T0)
    names = [name for _, name in _stored(sqlite, QueuedMessage)]  # old, first, kept
    assert len(names) == 3 and set(names) == _files(sqlite)


def test_a_claim_in_the_transaction_that_spooled_the_apdu_reads_no_copy(sqlite: Engine) -> None:
    apdu = LARGE + b"same transaction"
    with transaction(sqlite) as session:
        queue = TransitQueue(session)
        queue.enqueue(dataclasses.replace(new_message("big"), apdu=apdu), T0)
        (entry,) = queue.claim_next("mta-b", ROUTINE, at(1))
    assert entry.apdu is apdu  # the APDU written, not read back from its file
    assert len(_files(sqlite)) == 1
    # Once that transaction has ended, the file is what is read.
    with transaction(sqlite) as session:
        TransitQueue(session).unclaim(entry.recipient_ids, at(2))
    again = _claim(sqlite)
    assert again.apdu == apdu and again.apdu is not apdu


def test_a_transaction_keeps_only_the_last_apdus_it_spooled(
    sqlite: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    apdus = [LARGE + bytes([n]) for n in range(3)]
    monkeypatch.setattr("store.spool.MAX_WRITTEN_KEPT", 2 * len(apdus[0]))
    with transaction(sqlite) as session:
        queue = TransitQueue(session)
        for number, apdu in enumerate(apdus):
            queue.enqueue(dataclasses.replace(new_message(f"big{number}"), apdu=apdu), T0)
        entries = queue.claim_next("mta-b", ROUTINE, at(1), limit=3)
    assert [e.apdu for e in entries] == apdus
    assert [e.apdu is a for e, a in zip(entries, apdus, strict=True)] == [False, True, True]


def test_a_savepoint_rolled_back_takes_the_apdu_it_spooled_with_it(sqlite: Engine) -> None:
    with transaction(sqlite) as session:
        with pytest.raises(RuntimeError), session.begin_nested():
            TransitQueue(session).enqueue(dataclasses.replace(new_message("big"), apdu=LARGE), T0)
            raise RuntimeError("the unit failed")
        assert session.info.get("aiox400_spool_written") == {}
    assert _files(sqlite) == set()


def test_a_claim_to_send_maps_a_file_of_several_megabytes(sqlite: Engine) -> None:
    huge = LARGE * (MAP_THRESHOLD // len(LARGE) + 1)
    with transaction(sqlite) as session:
        queue = TransitQueue(session)
        queue.enqueue(dataclasses.replace(new_message("huge"), apdu=huge), T0)
        queue.enqueue(dataclasses.replace(new_message("large"), apdu=LARGE), T0)
        # In the transaction that spooled it too: the writer's copy is not kept for it.
        mapped, read = queue.claim_next("mta-b", ROUTINE, at(1), limit=2, mapped=True)
    assert isinstance(mapped.apdu, mmap.mmap) and mapped.apdu[:] == huge
    assert mapped.apdu_bytes == huge and len(mapped.apdu) == len(huge)
    assert type(read.apdu) is bytes and read.apdu == LARGE  # (under MAP_THRESHOLD: read)
    with transaction(sqlite) as session:
        TransitQueue(session).unclaim(mapped.recipient_ids + read.recipient_ids, at(2))
    plain = [e.apdu for e in _claim_all(sqlite)]
    assert [type(a) for a in plain] == [bytes, bytes] and plain == [huge, LARGE]


def _claim_all(engine: Engine) -> tuple[QueueEntry, ...]:
    with transaction(engine) as session:
        return TransitQueue(session).claim_next("mta-b", ROUTINE, at(3), limit=2)
