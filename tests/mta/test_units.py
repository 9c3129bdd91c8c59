"""The daemon's units of work on the store (mta.units): windowed claims to a peer, their
confirmation with the next claim, and putting back what a failed connection held."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine

from mta.units import Units
from p1.precedence import Precedence
from store import AuditEvent, AuditLog, RecipientState, TransitQueue, open_database, transaction
from tests.mta.test_intake import NOW, SMITH, apdu, envelope, identifier, recipient, site_b

PEER = "MTA-A"  # site B routes Smith's domain to site A
ROUTINE = (Precedence.ROUTINE, Precedence.DEFERRED)


@pytest.fixture
def units(tmp_path: Path) -> Iterator[Units]:
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    yield Units(engine, site_b(), owner="MTA-B")
    engine.dispose()


def queue_messages(units: Units, count: int) -> list[str]:
    names = []
    for number in range(count):
        made = envelope(
            recipient(SMITH),
            precedence=Precedence.ROUTINE,
            mts_identifier=identifier(f"m{number}"),
        )
        _plan, result = units.receive(apdu(made), NOW, origin_peer=None)
        assert result is not None and result.queued
        names.append(made.mts_identifier.text)
    return names


def states(engine: Engine) -> dict[str, RecipientState]:
    with transaction(engine, read_only=True) as session:
        queue = TransitQueue(session)
        found = {}
        for message_id in range(1, 100):
            entry = queue.get(message_id)
            if entry is not None:
                found[entry.mts_identifier] = entry.recipients[0].state
        return found


def test_a_claim_takes_a_window_and_the_next_claim_marks_it_transferred(units: Units) -> None:
    names = queue_messages(units, 5)
    window = units.claim(PEER, ROUTINE, NOW, limit=3)
    assert [e.mts_identifier for e in window] == names[:3]
    with transaction(units.engine) as session:
        rest = units.claim_in(
            session, peer=PEER, precedences=ROUTINE, now=NOW, limit=3, transferred=window
        )
    assert [e.mts_identifier for e in rest] == names[3:]
    S = RecipientState
    assert states(units.engine) == {
        **dict.fromkeys(names[:3], S.TRANSFERRED),
        **dict.fromkeys(names[3:], S.IN_FLIGHT),
    }
    with transaction(units.engine, read_only=True) as session:
        transferred = [
            r.mts_identifier or ""
            for r in AuditLog(session).recent(100)
            if r.event is AuditEvent.TRANSFERRED
        ]
    assert sorted(transferred) == names[:3]


def test_put_back_marks_the_confirmed_defers_the_failed_and_frees_the_unsent(
    units: Units,
) -> None:
    names = queue_messages(units, 4)
    sent, failed, *unsent = units.claim(PEER, ROUTINE, NOW, limit=4)
    later = NOW + timedelta(minutes=5)
    units.put_back(
        transferred=(sent,),
        failed=failed,
        error="transfer failed: reset",
        next_attempt_at=later,
        now=NOW,
        peer=PEER,
        unsent=unsent,
    )
    S = RecipientState
    assert states(units.engine) == {
        names[0]: S.TRANSFERRED,
        names[1]: S.PENDING,
        names[2]: S.PENDING,
        names[3]: S.PENDING,
    }
    # The unsent are due at once, their claim not counted; the failed one waits.
    again = units.claim(PEER, ROUTINE, NOW, limit=4)
    assert [e.mts_identifier for e in again] == names[2:]
    assert [e.recipients[0].attempts for e in again] == [1, 1]
    (retried,) = units.claim(PEER, ROUTINE, later, limit=4)
    assert retried.mts_identifier == names[1]
    assert (retried.recipients[0].attempts, retried.recipients[0].last_error) == (
        2,
        "transfer failed: reset",
    )
