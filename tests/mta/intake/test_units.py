"""The daemon's units of work on the store (mta.intake.units): windowed claims to a peer, their
confirmation with the next claim, and putting back what a failed connection held."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

import mta.delivery.units
import mta.intake.units
from client.x400 import text_ipm
from mta.delivery.units import DeliveryUnits
from mta.intake.submission import SubmitRequest
from mta.intake.units import IntakeUnits
from mta.outbound.units import OutboundUnits
from p1.errors import DecodeError
from p1.ipms.ipm import P772_CONTENT_TYPE
from p1.mts.envelope import Message, encode_mts_apdu, message_content, peek_envelope
from p1.mts.precedence import Precedence
from store import (
    AuditEvent,
    AuditLog,
    MessageStore,
    QueueEntry,
    RecipientState,
    TransitQueue,
    open_database,
    transaction,
)
from store.mailbox import UNDECODABLE, MailboxIndex, index_apdu
from tests.mta.intake.test_intake import (
    CONTENT,
    JONES,
    NOW,
    SITEA,
    SITEB,
    SMITH,
    apdu,
    decoded_message,
    envelope,
    identifier,
    recipient,
    report_on,
    site_b,
)

PEER = "MTA-A"  # site B routes Smith's domain to site A
ROUTINE = (Precedence.ROUTINE, Precedence.DEFERRED)


@dataclass(frozen=True)
class Units:
    """Site B's units of work on one store, by direction."""

    engine: Engine
    intake: IntakeUnits
    outbound: OutboundUnits
    delivery: DeliveryUnits


@pytest.fixture
def units(tmp_path: Path) -> Iterator[Units]:
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    intake = IntakeUnits(site_b())
    outbound = OutboundUnits(engine, intake, owner="MTA-B")
    yield Units(engine, intake, outbound, DeliveryUnits(engine, intake, owner="MTA-B"))
    engine.dispose()


def queue_messages(units: Units, count: int) -> list[str]:
    names = []
    for number in range(count):
        made = envelope(
            recipient(SMITH),
            precedence=Precedence.ROUTINE,
            mts_identifier=identifier(f"m{number}"),
        )
        with transaction(units.engine) as session:
            _plan, result, _ = units.intake.receive_and_deliver_in(
                session, apdu=apdu(made), now=NOW, origin_peer=None
            )
        assert result is not None and result.queued
        names.append(made.mts_identifier.text)
    return names


def claim(units: Units, now: datetime, limit: int) -> tuple[QueueEntry, ...]:
    with transaction(units.engine, durable=False) as session:
        return units.outbound.claim_in(
            session, peer=PEER, precedences=ROUTINE, now=now, limit=limit
        )


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
    window = claim(units, NOW, limit=3)
    assert [e.mts_identifier for e in window] == names[:3]
    with transaction(units.engine) as session:
        rest = units.outbound.claim_in(
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
    sent, failed, *unsent = claim(units, NOW, limit=4)
    later = NOW + timedelta(minutes=5)
    units.outbound.put_back(
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
    again = claim(units, NOW, limit=4)
    assert [e.mts_identifier for e in again] == names[2:]
    assert [e.recipients[0].attempts for e in again] == [1, 1]
    (retried,) = claim(units, later, limit=4)
    assert retried.mts_identifier == names[1]
    assert (retried.recipients[0].attempts, retried.recipients[0].last_error) == (
        2,
        "transfer failed: reset",
    )


# --- a transfer received and delivered in one transaction --------------------------------


def mailbox(units: Units, user: str) -> list[str]:
    with transaction(units.engine, read_only=True) as session:
        return [m.mts_identifier for m in MessageStore(session).list(user)]


def test_a_message_for_a_local_user_is_delivered_with_the_transfer(units: Units) -> None:
    made = envelope(recipient(JONES), recipient(SMITH, 2))
    with transaction(units.engine) as session:
        _plan, result, delivered = units.intake.receive_and_deliver_in(
            session, apdu=apdu(made), now=NOW, origin_peer="MTA-A"
        )
    assert result is not None and result.queued
    assert delivered is not None and delivered.users == (JONES.canonical,)
    assert mailbox(units, JONES.canonical) == [made.mts_identifier.text]
    by_route = {r.route: r.state for r in units_entry(units).recipients}
    # Jones (local) is delivered; Smith (behind the peer) waits for a connection.
    assert by_route == {"local": RecipientState.DELIVERED, PEER: RecipientState.PENDING}


def test_a_transfer_received_twice_is_delivered_once(units: Units) -> None:
    made = envelope(recipient(JONES))
    for _ in range(2):
        with transaction(units.engine) as session:
            units.intake.receive_and_deliver_in(
                session, apdu=apdu(made), now=NOW, origin_peer="MTA-A"
            )
    assert mailbox(units, JONES.canonical) == [made.mts_identifier.text]


def test_a_message_to_be_delivered_later_is_not_delivered_at_once(units: Units) -> None:
    made = envelope(recipient(JONES), deferred_delivery_time=NOW + timedelta(hours=1))
    with transaction(units.engine) as session:
        _, _, delivered = units.intake.receive_and_deliver_in(
            session, apdu=apdu(made), now=NOW, origin_peer="MTA-A"
        )
    assert delivered is None
    assert mailbox(units, JONES.canonical) == []
    assert units_entry(units).recipients[0].state is RecipientState.PENDING


def units_entry(units: Units) -> QueueEntry:
    with transaction(units.engine, read_only=True) as session:
        entry = TransitQueue(session).get(1)
    assert entry is not None
    return entry


def statements(session: Session) -> list[str]:
    """Every statement SQLite runs on the session's connection from now on (a list that
    grows): traced by SQLite itself, so statements run on the driver's cursor count too."""
    seen: list[str] = []
    driver = session.connection().connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    driver.set_trace_callback(seen.append)
    return seen


def test_a_transfer_for_a_local_user_is_queued_and_delivered_in_few_statements(
    units: Units,
) -> None:
    made = envelope(recipient(JONES))
    with transaction(units.engine) as session:
        seen = statements(session)  # (after BEGIN)
        _, _, delivered = units.intake.receive_and_deliver_in(
            session, apdu=apdu(made), now=NOW, origin_peer="MTA-A"
        )
        counted = list(seen)
        session.connection().connection.driver_connection.set_trace_callback(None)  # type: ignore[union-attr]
    assert delivered is not None
    # Received key, message, recipient (queued as delivered), the delivered content and
    # its mailbox entry, and one audit insert for both records: no claim, no update, no
    # savepoint.
    # (SQLite traces an insert of several rows once per row: repeats are collapsed.)
    assert [table for table, _ in itertools.groupby(s.split()[2] for s in counted)] == [
        "received",
        "messages",
        "recipients",
        "contents",
        "mailbox",
        "audit",
    ]
    with transaction(units.engine, read_only=True) as session:
        events = [
            r.event for r in AuditLog(session).recent(mts_identifier=made.mts_identifier.text)
        ]
    assert events == [AuditEvent.DELIVERED, AuditEvent.RECEIVED]


def test_what_is_delivered_at_once_is_listed_as_read_back_from_its_apdu(units: Units) -> None:
    content = text_ipm(SMITH, JONES, "at once", b"hello")
    message = encode_mts_apdu(Message(envelope=envelope(recipient(JONES)), content=content))
    from_jones = envelope(
        recipient(SMITH), originator_name=JONES, mts_identifier=identifier("m2", SITEB)
    )
    report = encode_mts_apdu(report_on(from_jones, trace_domain=SITEA))
    for data in (message, report):
        with transaction(units.engine) as session:
            _, _, delivered = units.intake.receive_and_deliver_in(
                session, apdu=data, now=NOW, origin_peer=PEER
            )
        assert delivered is not None
    with transaction(units.engine, read_only=True) as session:
        store = MessageStore(session)
        entries = store.list(JONES.canonical)
        for entry in entries:
            stored = store.read(JONES.canonical, entry.id)
            assert stored is not None
            index = index_apdu(stored.apdu, JONES.canonical)
            listed = (entry.mts_identifier, entry.kind, entry.precedence, entry.subject)
            assert listed == (index.mts_identifier, index.kind, index.precedence, index.subject)
            assert entry.originator == index.originator
    assert sorted(str(e.subject) for e in entries) == [
        "at once",
        f"delivery report on {from_jones.mts_identifier.text}",
    ]


def test_a_message_that_cannot_be_indexed_is_taken_and_left_to_the_local_deliverer(
    units: Units, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("index broken")

    monkeypatch.setattr(mta.intake.units, "index_message", broken)
    made = envelope(recipient(JONES))
    with transaction(units.engine) as session:
        _, result, delivered = units.intake.receive_and_deliver_in(
            session, apdu=apdu(made), now=NOW, origin_peer="MTA-A"
        )
    assert result is not None and result.queued and delivered is None
    assert units_entry(units).recipients[0].state is RecipientState.PENDING
    with transaction(units.engine, read_only=True) as session:
        events = [
            r.event for r in AuditLog(session).recent(mts_identifier=made.mts_identifier.text)
        ]
    assert events == [AuditEvent.RECEIVED]


@pytest.mark.parametrize("fault", [DecodeError("truncated", where="IPM"), KeyError("bug")])
def test_a_message_that_cannot_be_indexed_is_delivered_as_received_with_a_mark(
    units: Units, monkeypatch: pytest.MonkeyPatch, fault: Exception
) -> None:
    # Confirmed to the peer, then unreadable: it must still end (here: delivered), and
    # must not hold up the message behind it.
    poison = envelope(recipient(JONES), mts_identifier=identifier("poison"))
    fine = envelope(recipient(JONES), mts_identifier=identifier("fine"))
    real = index_apdu

    def index(apdu_bytes: bytes, user: str, **kwargs: Any) -> MailboxIndex:
        if peek_envelope(apdu_bytes).mts_identifier == poison.mts_identifier:
            raise fault
        return real(apdu_bytes, user, **kwargs)

    def unindexed(*args: object, **kwargs: object) -> None:
        raise RuntimeError("left to the local deliverer")

    monkeypatch.setattr(mta.intake.units, "index_message", unindexed)
    monkeypatch.setattr(mta.delivery.units, "index_apdu", index)
    for made in (poison, fine):
        with transaction(units.engine) as session:
            units.intake.receive_and_deliver_in(
                session, apdu=apdu(made), now=NOW, origin_peer="MTA-A"
            )
    with transaction(units.engine) as session:
        outcomes = units.delivery.deliver_local_in(session, now=NOW)
    assert [o.mts_identifier for o in outcomes] == [
        poison.mts_identifier.text,
        fine.mts_identifier.text,
    ]
    with transaction(units.engine, read_only=True) as session:
        listed = {m.mts_identifier: m for m in MessageStore(session).list(JONES.canonical)}
        stored = MessageStore(session).read(JONES.canonical, listed[poison.mts_identifier.text].id)
    assert listed[poison.mts_identifier.text].subject == UNDECODABLE
    assert listed[fine.mts_identifier.text].subject != UNDECODABLE
    assert stored is not None
    assert peek_envelope(stored.apdu).mts_identifier == poison.mts_identifier
    assert message_content(stored.apdu) == CONTENT  # as received, with our trace entry
    assert set(states(units.engine).values()) == {RecipientState.DELIVERED}


def test_a_local_submission_is_queued_with_our_trace_and_delivered(units: Units) -> None:
    request = SubmitRequest(
        originator=SMITH,
        recipients=(JONES,),
        precedence=Precedence.ROUTINE,
        content_type=P772_CONTENT_TYPE,
        content=CONTENT,
    )
    with transaction(units.engine) as session:
        identifier_text, plan, result, delivered = units.intake.submit_in(
            session, request=request, now=NOW
        )
    assert result is not None and delivered is not None
    assert delivered.users == (JONES.canonical,)
    with transaction(units.engine, read_only=True) as session:
        (stored,) = MessageStore(session).list(JONES.canonical)
        message = MessageStore(session).read(JONES.canonical, stored.id)
        events = [r.event for r in AuditLog(session).recent(mts_identifier=identifier_text)]
    assert message is not None and plan.message is not None
    assert message.apdu == plan.message.apdu
    sent = decoded_message(message.apdu)
    assert sent.content == CONTENT
    assert [e.mta_name for e in sent.envelope.internal_trace] == [units.intake.site.name]
    assert events == [AuditEvent.DELIVERED, AuditEvent.SUBMITTED]


def test_a_transfer_planned_from_the_envelope_given_is_planned_as_from_its_bytes(
    units: Units, tmp_path: Path
) -> None:
    made = envelope(recipient(JONES), precedence=Precedence.FLASH)
    data = apdu(made)
    with transaction(units.engine) as session:
        given = units.intake.receive_and_deliver_in(
            session, apdu=data, now=NOW, origin_peer=PEER, envelope=peek_envelope(data)
        )
        session.rollback()
    with transaction(units.engine) as session:
        decoded = units.intake.receive_and_deliver_in(session, apdu=data, now=NOW, origin_peer=PEER)
    assert given[0] == decoded[0]  # the same plan: APDU with trace, routes, precedence
    assert given[0].message is not None and given[0].message.precedence is Precedence.FLASH
