"""The message store, on SQLite and PostgreSQL: idempotent delivery, indexing of IPMs and
reports, listing, reading, read flags and deletion, each scoped to its user."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event

from p1.ber import parse_lenient_utctime
from p1.errors import DecodeError
from p1.ipms.ipm import ContentKind, ORDescriptor
from p1.ipms.models import MessageType, TypeMessage
from p1.mts.extensions import ExtensionField, StandardExtension
from p1.mts.precedence import Precedence
from p1.mts.security_label import SecurityLabel, security_label_extension
from store.db import open_database, transaction
from store.mailbox import (
    REPORT_PRECEDENCE,
    UNDECODABLE_LABEL,
    Delivery,
    MailboxIndex,
    MailboxSummary,
    MessageStore,
    index_apdu,
)
from store.models import ApduKind
from tests.support.store_samples import (
    BROWN,
    JONES,
    SMITH,
    T0,
    at,
    ipm_apdu,
    ipn_apdu,
    mts_id,
    probe_apdu,
    raw_apdu,
    report_apdu,
)

ANNE = JONES.canonical
BROWN_NAME = BROWN.canonical
SMITH_TEXT = "C=GB;ADMD= ;PRMD=NATO;O=ACT;S=Smith;G=John"


def deliver(engine: Engine, *deliveries: Delivery, now: datetime = T0) -> tuple[int | None, ...]:
    with transaction(engine) as session:
        return MessageStore(session).deliver_many(deliveries, now)


def listing(engine: Engine, user: str, *, unread_only: bool = False) -> tuple[MailboxSummary, ...]:
    with transaction(engine) as session:
        return MessageStore(session).list(user, unread_only=unread_only)


# --- indexing (no database) ------------------------------------------------------------


def test_an_ipm_is_indexed_by_subject_originator_and_the_users_precedence() -> None:
    apdu = ipm_apdu("m1", subject="SITREP 042")
    assert index_apdu(apdu, ANNE) == MailboxIndex(
        mts_identifier=mts_id("m1").text,
        kind=ApduKind.MESSAGE,
        precedence=Precedence.FLASH,
        subject="SITREP 042",
        originator=SMITH_TEXT,
    )
    # Brown is a copy recipient: the copy precedence is his.
    assert index_apdu(apdu, BROWN_NAME).precedence == Precedence.ROUTINE
    # Someone the heading does not name (a list member): the primary precedence.
    assert index_apdu(apdu, SMITH.canonical).precedence == Precedence.FLASH


def test_the_security_label_and_message_type_are_indexed() -> None:
    label = SecurityLabel(
        policy="1.3.26.0.4406.0.5.1", classification=4, privacy_mark="NATO EXERCISE"
    )
    apdu = ipm_apdu(
        "m1",
        message_type=MessageType(type=TypeMessage.EXERCISE, identifier="STEADFAST 26"),
        envelope_extensions=(security_label_extension(label),),
    )
    index = index_apdu(apdu, ANNE)
    assert index.security_label == label.describe()
    assert index.security_label.startswith("SECRET;")
    assert index.message_type == "exercise STEADFAST 26"


def test_a_national_message_type_is_indexed_by_number() -> None:
    apdu = ipm_apdu("m1", message_type=MessageType(type=200))
    assert index_apdu(apdu, ANNE).message_type == "type 200"


def test_a_label_that_does_not_decode_is_indexed_as_such() -> None:
    broken = ExtensionField(type=StandardExtension.MESSAGE_SECURITY_LABEL, value=b"\x04\x01x")
    index = index_apdu(ipm_apdu("m1", envelope_extensions=(broken,)), ANNE)
    assert index.security_label == UNDECODABLE_LABEL
    assert index.subject == "SITREP 042"  # indexed (and delivered) all the same


def test_without_label_or_type_nothing_is_indexed_for_them() -> None:
    index = index_apdu(ipm_apdu("m1"), ANNE)
    assert (index.security_label, index.message_type) == (None, None)


def test_a_heading_time_without_zone_is_indexed_and_handed_to_the_log() -> None:
    expiry = parse_lenient_utctime("260302120000", "expiry", None)  # written back so
    index = index_apdu(ipm_apdu("m1", expiry_time=expiry), ANNE)
    assert index.subject == "SITREP 042"
    (deviation,) = index.deviations
    assert deviation.field == "IPM.heading.expiry-time"
    assert (deviation.found, deviation.read_as) == ("260302120000", "2026-03-02T12:00:00+00:00")
    assert index_apdu(ipm_apdu("m2"), ANNE).deviations == ()


def test_a_deferred_heading_precedence_is_not_passed_over() -> None:
    # Deferred is 0: the envelope's precedence (priority here) must not take its place.
    apdu = ipm_apdu(
        "m1", primary_precedence=Precedence.DEFERRED, copy_precedence=Precedence.DEFERRED
    )
    assert index_apdu(apdu, ANNE).precedence is Precedence.DEFERRED
    assert index_apdu(apdu, BROWN_NAME).precedence is Precedence.DEFERRED


def test_a_p2_ipm_is_indexed_too() -> None:
    apdu = ipm_apdu("m1", subject="lunch", kind=ContentKind.P2)
    assert index_apdu(apdu, ANNE).subject == "lunch"


def test_without_heading_precedence_the_envelope_precedence_counts() -> None:
    apdu = ipm_apdu("m1", primary_precedence=None, copy_precedence=None)
    assert index_apdu(apdu, ANNE).precedence == Precedence.PRIORITY  # the envelope's


def test_a_free_form_originator_is_shown_as_given() -> None:
    apdu = ipm_apdu("m1", originator=ORDescriptor(free_form_name="Duty Officer"))
    assert index_apdu(apdu, ANNE).originator == "Duty Officer"


def test_an_ipn_is_indexed_by_its_originator() -> None:
    index = index_apdu(ipn_apdu("n1"), ANNE)
    assert (index.kind, index.subject, index.originator) == (
        ApduKind.MESSAGE,
        None,
        "Anne Jones",
    )


@pytest.mark.parametrize(
    ("content_type", "content"),
    [
        (2, b"\x01\x02 not an IPM"),  # another built-in content type: not opened
        ("1.2.3.4", b"anything"),  # an extended one we do not know
        (22, b"\x30\x03\x01\x01"),  # P2 that does not decode: still delivered
        ("1.3.26.0.4406.0.4.1", b""),  # empty P772
    ],
)
def test_other_or_broken_content_falls_back_on_the_envelope(
    content_type: int | str, content: bytes
) -> None:
    index = index_apdu(raw_apdu("m1", content_type, content), ANNE)
    assert index == MailboxIndex(
        mts_identifier=mts_id("m1").text,
        kind=ApduKind.MESSAGE,
        precedence=Precedence.PRIORITY,
        subject=None,
        originator=SMITH_TEXT,
    )


def test_a_report_is_indexed_as_a_report() -> None:
    assert index_apdu(report_apdu("r1"), SMITH.canonical) == MailboxIndex(
        mts_identifier=mts_id("r1").text,
        kind=ApduKind.REPORT,
        precedence=REPORT_PRECEDENCE,
        subject=f"delivery report on {mts_id('m1').text}",
        originator=None,
    )


def test_a_report_is_listed_at_the_precedence_the_caller_knows_for_its_subject() -> None:
    index = index_apdu(report_apdu("r1"), SMITH.canonical, report_precedence=Precedence.FLASH)
    assert (index.kind, index.precedence) == (ApduKind.REPORT, Precedence.FLASH)
    # A message is listed at its own precedence, whatever is said for reports.
    message = index_apdu(raw_apdu("m1", 22, b""), ANNE, report_precedence=Precedence.FLASH)
    assert message.precedence is Precedence.PRIORITY


def test_a_probe_is_not_delivered() -> None:
    with pytest.raises(ValueError, match="probe"):
        index_apdu(probe_apdu("p1"), ANNE)


def test_bytes_that_are_no_apdu_are_refused() -> None:
    with pytest.raises(DecodeError):
        index_apdu(b"\x04\x01x", ANNE)


# --- delivery --------------------------------------------------------------------------


def test_delivery_is_idempotent(engine: Engine) -> None:
    apdu = ipm_apdu("m1")
    with transaction(engine) as session:
        first = MessageStore(session).deliver(ANNE, apdu, T0)
    with transaction(engine) as session:
        again = MessageStore(session).deliver(ANNE, apdu, at(5))
    assert isinstance(first, int)
    assert again is None
    assert [e.id for e in listing(engine, ANNE)] == [first]


def test_the_listing_and_the_read_entry_carry_label_and_type(engine: Engine) -> None:
    label = SecurityLabel(classification=3, privacy_mark="IN CONFIDENCE")
    apdu = ipm_apdu(
        "m1",
        message_type=MessageType(type=TypeMessage.OPERATION),
        envelope_extensions=(security_label_extension(label),),
    )
    (entry_id,) = deliver(engine, Delivery(user=ANNE, apdu=apdu))
    (listed,) = listing(engine, ANNE)
    assert (listed.security_label, listed.message_type) == (label.describe(), "operation")
    with transaction(engine) as session:
        read = MessageStore(session).read(ANNE, listed.id)
    assert read is not None and read.id == entry_id
    assert (read.security_label, read.message_type) == (label.describe(), "operation")


def test_deliver_many_in_one_transaction(engine: Engine) -> None:
    results = deliver(
        engine,
        Delivery(user=ANNE, apdu=ipm_apdu("m1")),
        Delivery(user=BROWN_NAME, apdu=ipm_apdu("m1")),  # same message, another user
        Delivery(user=ANNE, apdu=ipm_apdu("m1")),  # a repeat within the batch
        Delivery(user=SMITH.canonical, apdu=report_apdu("r1")),
    )
    assert [isinstance(r, int) for r in results] == [True, True, False, True]
    assert len(set(results)) == 4  # three ids and None
    assert [e.mts_identifier for e in listing(engine, ANNE)] == [mts_id("m1").text]
    assert [e.kind for e in listing(engine, SMITH.canonical)] == [ApduKind.REPORT]


def test_a_delivered_report_is_listed_at_its_subjects_precedence(engine: Engine) -> None:
    deliver(
        engine,
        Delivery(user=SMITH.canonical, apdu=report_apdu("r1"), report_precedence=Precedence.FLASH),
        Delivery(user=SMITH.canonical, apdu=report_apdu("r2")),
    )
    listed = {e.mts_identifier: e.precedence for e in listing(engine, SMITH.canonical)}
    assert listed == {mts_id("r1").text: Precedence.FLASH, mts_id("r2").text: REPORT_PRECEDENCE}


def test_a_failed_transaction_delivers_nothing(engine: Engine) -> None:
    with pytest.raises(RuntimeError), transaction(engine) as session:
        MessageStore(session).deliver(ANNE, ipm_apdu("m1"), T0)
        raise RuntimeError("crash before commit")
    assert listing(engine, ANNE) == ()
    assert deliver(engine, Delivery(user=ANNE, apdu=ipm_apdu("m1")))[0] is not None


def test_a_probe_in_a_batch_delivers_none_of_it(engine: Engine) -> None:
    with pytest.raises(ValueError, match="probe"):
        deliver(
            engine,
            Delivery(user=ANNE, apdu=ipm_apdu("m1")),
            Delivery(user=ANNE, apdu=probe_apdu("p1")),
        )
    assert listing(engine, ANNE) == ()


# --- listing, reading, flags, deletion ---------------------------------------------------


def test_the_list_is_most_urgent_first_then_in_delivery_order(engine: Engine) -> None:
    deliver(engine, Delivery(user=ANNE, apdu=ipm_apdu("routine", primary_precedence=None)))
    deliver(engine, Delivery(user=ANNE, apdu=ipm_apdu("flash-1")), now=at(1))
    deliver(
        engine,
        Delivery(user=ANNE, apdu=ipm_apdu("override", primary_precedence=Precedence.OVERRIDE)),
        now=at(2),
    )
    deliver(engine, Delivery(user=ANNE, apdu=ipm_apdu("flash-2")), now=at(3))
    deliver(engine, Delivery(user=BROWN_NAME, apdu=ipm_apdu("other")))
    entries = listing(engine, ANNE)
    assert [(e.mts_identifier, e.precedence) for e in entries] == [
        (mts_id("override").text, Precedence.OVERRIDE),
        (mts_id("flash-1").text, Precedence.FLASH),
        (mts_id("flash-2").text, Precedence.FLASH),
        (mts_id("routine").text, Precedence.PRIORITY),
    ]
    first = entries[1]
    assert (first.user, first.subject, first.originator) == (ANNE, "SITREP 042", SMITH_TEXT)
    assert (first.delivered_at, first.read, first.size) == (at(1), False, len(ipm_apdu("flash-1")))


def test_since_gives_a_users_newer_entries_in_delivery_order(engine: Engine) -> None:
    with transaction(engine) as session:
        assert MessageStore(session).newest_id(ANNE) == 0
    (first,) = deliver(engine, Delivery(user=ANNE, apdu=ipm_apdu("routine")))
    deliver(engine, Delivery(user=BROWN_NAME, apdu=ipm_apdu("other")))
    (second,) = deliver(
        engine,
        Delivery(user=ANNE, apdu=ipm_apdu("override", primary_precedence=Precedence.OVERRIDE)),
    )
    (third,) = deliver(engine, Delivery(user=ANNE, apdu=ipm_apdu("flash")))
    assert first is not None and second is not None and third is not None
    with transaction(engine) as session:
        store = MessageStore(session)
        assert store.newest_id(ANNE) == third
        # In delivery order, not the listing's most-urgent-first; only Anne's.
        assert [e.id for e in store.since(ANNE, 0)] == [first, second, third]
        assert [e.id for e in store.since(ANNE, first)] == [second, third]
        assert [e.id for e in store.since(ANNE, first, limit=1)] == [second]
        assert store.since(ANNE, third) == ()
        assert store.newest_id(BROWN_NAME) not in (0, first, second, third)


def test_since_and_newest_id_read_a_users_newest_entries_through_an_index(
    tmp_path: Path,
) -> None:
    """A watching user agent asks after every delivery: neither query may read the whole
    mailbox, or sort it (SQLite's plan for the statements the store runs)."""
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    statements: list[tuple[str, Any]] = []

    def seen(conn: Any, cursor: Any, sql: str, parameters: Any, *_: Any) -> None:
        statements.append((sql, parameters))

    event.listen(engine, "before_cursor_execute", seen)
    with transaction(engine, read_only=True) as session:
        MessageStore(session).since(ANNE, 5)
        MessageStore(session).newest_id(ANNE)
    event.remove(engine, "before_cursor_execute", seen)
    with engine.connect() as connection:
        for sql, parameters in statements[-2:]:
            plan = " ".join(
                row[3]
                for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", parameters)
            )
            assert "INDEX ix_mailbox_user_id (user=?" in plan, (sql, plan)
            assert "TEMP B-TREE" not in plan, (sql, plan)
    engine.dispose()


def test_read_returns_the_bytes_only_to_their_user(engine: Engine) -> None:
    apdu = ipm_apdu("m1")
    (entry_id,) = deliver(engine, Delivery(user=ANNE, apdu=apdu))
    assert entry_id is not None
    with transaction(engine) as session:
        store = MessageStore(session)
        message = store.read(ANNE, entry_id)
        assert store.read(BROWN_NAME, entry_id) is None
        assert store.read(ANNE, entry_id + 1000) is None
    assert message is not None
    assert (message.apdu, message.subject, message.read) == (apdu, "SITREP 042", False)


def test_mark_read_and_unread(engine: Engine) -> None:
    ids = deliver(
        engine,
        Delivery(user=ANNE, apdu=ipm_apdu("m1")),
        Delivery(user=ANNE, apdu=ipm_apdu("m2")),
        Delivery(user=BROWN_NAME, apdu=ipm_apdu("m3")),
    )
    anne = [i for i in ids[:2] if i is not None]
    brown = [i for i in ids[2:] if i is not None]
    with transaction(engine) as session:
        store = MessageStore(session)
        assert store.unread_count(ANNE) == 2
        assert store.mark_read(ANNE, anne[:1]) == 1
        assert store.mark_read(ANNE, anne[:1]) == 0  # already read
        assert store.mark_read(ANNE, brown) == 0  # not hers
        assert store.unread_count(ANNE) == 1
        assert store.unread_count(BROWN_NAME) == 1
    assert [e.id for e in listing(engine, ANNE, unread_only=True)] == anne[1:]
    with transaction(engine) as session:
        assert MessageStore(session).mark_read(ANNE, anne, read=False) == 1
    assert [e.id for e in listing(engine, ANNE, unread_only=True)] == anne


def test_delete_removes_only_the_users_entries(engine: Engine) -> None:
    ids = deliver(
        engine,
        Delivery(user=ANNE, apdu=ipm_apdu("m1")),
        Delivery(user=BROWN_NAME, apdu=ipm_apdu("m1")),
    )
    anne, brown = (i for i in ids if i is not None)
    with transaction(engine) as session:
        store = MessageStore(session)
        assert store.delete(ANNE, [brown]) == 0
        assert store.delete(ANNE, [anne]) == 1
        assert store.delete(ANNE, [anne]) == 0
        assert store.read(ANNE, anne) is None
        assert store.read(BROWN_NAME, brown) is not None
    # Ids are never reused: a stale listing cannot name a later message.
    (later,) = deliver(engine, Delivery(user=ANNE, apdu=ipm_apdu("m2")))
    assert later is not None and later > max(anne, brown)
