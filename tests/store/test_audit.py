"""The audit log, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from store.audit import AuditEvent, AuditLog, AuditRecord
from store.db import transaction
from tests.support.store_samples import at


def test_recent_is_newest_first_and_filters_by_message(engine: Engine) -> None:
    with transaction(engine) as session:
        log = AuditLog(session)
        log.record(AuditEvent.RECEIVED, at(0), mts_identifier="[GB; ;NATO;m1]", peer="mta-a")
        log.record_many(
            [
                AuditRecord(at=at(1), event=AuditEvent.SUBMITTED, mts_identifier="[GB; ;NATO;m2]"),
                AuditRecord(
                    at=at(2),
                    event=AuditEvent.TRANSFERRED,
                    mts_identifier="[GB; ;NATO;m1]",
                    recipient="c=gb;s=jones",
                    peer="mta-b",
                    detail="2 recipients",
                ),
            ]
        )
        log.record_many([])
    with transaction(engine) as session:
        log = AuditLog(session)
        assert [r.event for r in log.recent()] == [
            AuditEvent.TRANSFERRED,
            AuditEvent.SUBMITTED,
            AuditEvent.RECEIVED,
        ]
        assert log.recent(1) == (
            AuditRecord(
                at=at(2),
                event=AuditEvent.TRANSFERRED,
                mts_identifier="[GB; ;NATO;m1]",
                recipient="c=gb;s=jones",
                peer="mta-b",
                detail="2 recipients",
            ),
        )
        assert [r.at for r in log.recent(mts_identifier="[GB; ;NATO;m1]")] == [at(2), at(0)]
        assert log.recent(mts_identifier="[GB; ;NATO;none]") == ()


def test_entries_roll_back_with_their_transaction(engine: Engine) -> None:
    with pytest.raises(RuntimeError), transaction(engine) as session:
        AuditLog(session).record(AuditEvent.DELIVERED, at(0))
        raise RuntimeError("crash before commit")
    with transaction(engine) as session:
        assert AuditLog(session).recent() == ()


def test_purge_drops_older_entries(engine: Engine) -> None:
    with transaction(engine) as session:
        log = AuditLog(session)
        for second in range(5):
            log.record(AuditEvent.DEFERRED, at(second), detail=f"try {second}")
    with transaction(engine) as session:
        log = AuditLog(session)
        assert log.purge(at(3)) == 3
        assert [r.detail for r in log.recent()] == ["try 4", "try 3"]
