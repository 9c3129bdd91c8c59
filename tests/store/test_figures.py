"""The store's figures for monitoring, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from p1.mts.precedence import Precedence
from store import RecipientState, TransitQueue, transaction
from store.figures import database_bytes, file_bytes, queue_figures
from tests.support.store_samples import at, new_message


def test_recipients_are_counted_with_the_oldest_arrival(engine: Engine) -> None:
    with transaction(engine) as session:
        queue = TransitQueue(session)
        queue.enqueue(new_message("f1", precedence=Precedence.FLASH), at(10))
        queue.enqueue(new_message("f2", precedence=Precedence.FLASH), at(20))
        two = (("c=gb;s=a", "mta-b"), ("c=gb;s=b", "local"))
        queue.enqueue(new_message("r1", *two), at(30))
    with transaction(engine, read_only=True) as session:
        figures = {(f.route, f.precedence, f.state): f for f in queue_figures(session)}
    flash = figures[("mta-b", Precedence.FLASH, RecipientState.PENDING)]
    assert (flash.recipients, flash.oldest) == (2, at(10))
    routine = figures[("mta-b", Precedence.ROUTINE, RecipientState.PENDING)]
    assert (routine.recipients, routine.oldest) == (1, at(30))
    assert figures[("local", Precedence.ROUTINE, RecipientState.PENDING)].recipients == 1
    assert len(figures) == 3


def test_the_size_of_the_store(engine: Engine) -> None:
    with transaction(engine, read_only=True) as session:
        size = database_bytes(session)
    url = engine.url.render_as_string(hide_password=False)
    files = file_bytes(url)
    if engine.dialect.name == "postgresql":
        assert size is not None and size > 0
        assert files == {}
    else:
        assert size is None
        assert files["database"] > 0
        assert set(files) == {"database", "wal", "spool"}


def test_files_not_there_count_nothing(tmp_path: Path) -> None:
    gone = tmp_path / "gone.db"
    assert file_bytes(f"sqlite:///{gone}") == {"database": 0, "wal": 0, "spool": 0}
    assert file_bytes("sqlite://") == {}
