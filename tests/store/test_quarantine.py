"""The quarantine (store.quarantine), on SQLite and PostgreSQL: what is kept comes back
octet for octet, listed oldest first with its peer, time, size and reason; totals count
it; deletion removes it, a large one's spool file too once the deletion commits, and the
start-up sweep leaves a kept file alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from store.db import open_database, spool_folder, sweep_spool, transaction
from store.quarantine import Quarantine, QuarantinedApdu, QuarantineSummary, QuarantineTotals
from store.spool import SPOOL_THRESHOLD
from tests.support.store_samples import at

SMALL = b"\x60\x80\x31\x80" + bytes(range(256)) + b"@"
"""Octets no decoder would take: the quarantine keeps them as they are."""
LARGE = bytes(range(256)) * (SPOOL_THRESHOLD // 256 + 1)
"""Over the spool threshold, every octet value present."""


def keep(engine: Engine, apdu: bytes, seconds: float, reason: str = "it does not decode") -> int:
    with transaction(engine) as session:
        return Quarantine(session).keep(apdu, peer="MTA-A", reason=reason, now=at(seconds))


def test_kept_octets_come_back_as_received_and_are_listed_oldest_first(engine: Engine) -> None:
    first = keep(engine, SMALL, 0, "the MTS-APDU does not decode: surname: 0x40 at 3")
    second = keep(engine, b"\x00", 5, "line\nbreak")
    assert second > first
    with transaction(engine, read_only=True) as session:
        quarantine = Quarantine(session)
        assert quarantine.totals() == QuarantineTotals(messages=2, octets=len(SMALL) + 1)
        assert quarantine.list() == (
            QuarantineSummary(
                id=first,
                peer="MTA-A",
                received_at=at(0),
                reason="the MTS-APDU does not decode: surname: 0x40 at 3",
                size=len(SMALL),
            ),
            QuarantineSummary(
                id=second, peer="MTA-A", received_at=at(5), reason="line\\x0abreak", size=1
            ),
        )
        assert quarantine.read(first) == QuarantinedApdu(
            id=first,
            peer="MTA-A",
            received_at=at(0),
            reason="the MTS-APDU does not decode: surname: 0x40 at 3",
            size=len(SMALL),
            apdu=SMALL,
        )
        assert quarantine.read(second + 1) is None


def test_delete_removes_only_the_entries_named(engine: Engine) -> None:
    ids = [keep(engine, bytes([n]) * (n + 1), n) for n in range(3)]
    with transaction(engine) as session:
        assert Quarantine(session).delete([ids[0], ids[2], ids[2], ids[2] + 100]) == 2
    with transaction(engine, read_only=True) as session:
        quarantine = Quarantine(session)
        assert [e.id for e in quarantine.list()] == [ids[1]]
        assert quarantine.totals() == QuarantineTotals(messages=1, octets=2)
    with transaction(engine) as session:
        assert Quarantine(session).delete([ids[1]]) == 1
    with transaction(engine, read_only=True) as session:
        assert Quarantine(session).totals() == QuarantineTotals(messages=0, octets=0)
        assert Quarantine(session).list() == ()


def test_a_rolled_back_keep_leaves_nothing(engine: Engine) -> None:
    with pytest.raises(RuntimeError), transaction(engine) as session:
        Quarantine(session).keep(SMALL, peer="MTA-A", reason="r", now=at(0))
        raise RuntimeError("the unit failed")
    with transaction(engine, read_only=True) as session:
        assert Quarantine(session).totals() == QuarantineTotals(messages=0, octets=0)


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[Engine]:
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    yield engine
    engine.dispose()


def filled(engine: Engine) -> set[str]:
    """The spool files holding something (not the blank files made ahead)."""
    folder = spool_folder(engine.url)
    assert folder is not None
    return {path.name for path in folder.iterdir() if path.stat().st_size}


def test_a_large_apdu_is_a_spool_file_the_sweep_keeps_and_delete_removes(sqlite: Engine) -> None:
    entry = keep(sqlite, LARGE, 0)
    (name,) = filled(sqlite)
    sweep_spool(sqlite)  # (as at a start: only files no row names go)
    assert filled(sqlite) == {name}
    with transaction(sqlite, read_only=True) as session:
        found = Quarantine(session).read(entry)
    assert found is not None and found.apdu == LARGE and found.size == len(LARGE)
    with pytest.raises(RuntimeError), transaction(sqlite) as session:
        assert Quarantine(session).delete([entry]) == 1
        raise RuntimeError("rolled back: the row and its file stay")
    assert filled(sqlite) == {name}
    with transaction(sqlite) as session:
        assert Quarantine(session).delete([entry]) == 1
    assert filled(sqlite) == set()
