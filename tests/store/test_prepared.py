"""store._prepared and store._sql.connection_of: inserts on the driver's cursor store what
SQLAlchemy's own execute() stores, fail as it fails, and stay inside savepoints."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import Engine, bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError, StatementError

from store import ApduKind, transaction
from store import _queue_sql as sql
from store._prepared import Prepared
from store._sql import connection_of, table
from store.models import QueuedMessage, QueuedRecipient

MESSAGES = table(QueuedMessage)
RECIPIENTS = table(QueuedRecipient)
COLUMNS = sql.INSERT_MESSAGES.columns  # every column but the key
RECIPIENT_COLUMNS = tuple(
    name
    for name in sql.INSERT_RECIPIENTS.columns
    if name not in {"last_error", "report_request", "recipient_number", "owner"}
)
"""Without report_request, which has a Python-side default."""
T0 = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


def message_row(name: str, **changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "mts_identifier": name,
        "kind": ApduKind.REPORT,
        "apdu": b"\x00\x01 apdu \xff",
        "apdu_file": None,
        "size": 11,
        "precedence": 5,
        "originator": "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith",
        # Not in UTC: both ways must convert it the same way.
        "arrival_time": T0.astimezone(timezone(timedelta(hours=2))),
        "expiry_time": None,
        "origin_peer": "MTA-B",
        "envelope_recipients": 3,
    }
    return {**row, **changes}


PREPARED = Prepared(insert(MESSAGES).returning(MESSAGES.c.id, MESSAGES.c.arrival_time), COLUMNS)


def stored(engine: Engine, name: str) -> dict[str, Any]:
    with transaction(engine, read_only=True) as session:
        row = session.execute(select(MESSAGES).where(MESSAGES.c.mts_identifier == name)).one()
    fields = dict(row._mapping)
    fields.pop("id")
    fields.pop("mts_identifier")
    return fields


def test_a_prepared_insert_stores_what_execute_stores(engine: Engine) -> None:
    expiry = T0 + timedelta(days=1)
    with transaction(engine) as session:
        connection = connection_of(session)
        connection.execute(insert(MESSAGES), [message_row("by-execute", expiry_time=expiry)])
        returned = PREPARED.insert(connection, [message_row("prepared", expiry_time=expiry)])
    assert stored(engine, "prepared") == stored(engine, "by-execute")
    ((entry_id, arrival),) = returned
    assert isinstance(entry_id, int)
    assert arrival == T0  # read back through the column's result processor: aware, UTC
    assert stored(engine, "prepared")["kind"] == ApduKind.REPORT


def test_rows_return_in_their_order(engine: Engine) -> None:
    names = [f"m{i}" for i in range(5)]
    with transaction(engine) as session:
        returned = PREPARED.insert(connection_of(session), [message_row(n) for n in names])
    with transaction(engine, read_only=True) as session:
        rows = session.execute(select(MESSAGES.c.mts_identifier, MESSAGES.c.id))
        ids = {name: entry_id for name, entry_id in rows}
    assert [row[0] for row in returned] == [ids[n] for n in names]


def test_many_rows_without_returning(engine: Engine) -> None:
    prepared = Prepared(insert(MESSAGES), COLUMNS)
    with transaction(engine) as session:
        # (no RETURNING of the key added on PostgreSQL, none on a single row either)
        assert prepared.insert(connection_of(session), [message_row("a"), message_row("b")]) == []
        assert prepared.insert(connection_of(session), [message_row("c")]) == []
        assert prepared.insert(connection_of(session), []) == []
    assert stored(engine, "a") == stored(engine, "b") == stored(engine, "c")


def test_a_driver_error_is_sqlalchemys(engine: Engine) -> None:
    recipient = Prepared(insert(RECIPIENTS), (*RECIPIENT_COLUMNS, "report_request"))
    row = {
        "message_id": 999_999,  # no such message: the foreign key refuses it
        "recipient": "C=GB",
        "route": "MTA-B",
        "state": "pending",
        "precedence": 1,
        "arrival_time": T0,
        "attempts": 0,
        "next_attempt_at": T0,
        "updated_at": T0,
    }
    row |= {"report_request": 0}
    with pytest.raises(IntegrityError), transaction(engine) as session:
        recipient.insert(connection_of(session), [row])


def test_a_value_no_processor_takes_is_a_statement_error(engine: Engine) -> None:
    naive = message_row("naive", arrival_time=datetime(2026, 3, 1, 12, 0))
    with pytest.raises(StatementError, match="naive datetime"), transaction(engine) as session:
        PREPARED.insert(connection_of(session), [naive])
    unknown = message_row("unknown", kind="letter")
    with pytest.raises(StatementError, match="letter"), transaction(engine) as session:
        PREPARED.insert(connection_of(session), [unknown])


def test_statements_it_cannot_run_are_refused(engine: Engine) -> None:
    # report_request has a Python-side default, which would not be applied.
    missing = Prepared(insert(RECIPIENTS), RECIPIENT_COLUMNS)
    with pytest.raises(ValueError, match="must give report_request"), transaction(engine) as s:
        missing.insert(connection_of(s), [dict.fromkeys(RECIPIENT_COLUMNS)])
    expanding = Prepared(
        insert(MESSAGES).from_select(
            list(COLUMNS), select(MESSAGES).where(MESSAGES.c.id.in_([1, 2]))
        ),
        COLUMNS,
    )
    with pytest.raises(ValueError), transaction(engine) as session:
        expanding.insert(connection_of(session), [message_row("m")])


def test_an_insert_in_a_savepoint_is_undone_with_it(engine: Engine) -> None:
    with transaction(engine) as session:
        PREPARED.insert(connection_of(session), [message_row("kept")])
        with pytest.raises(RuntimeError), session.begin_nested():
            PREPARED.insert(connection_of(session), [message_row("undone")])
            raise RuntimeError("the unit fails")
        PREPARED.insert(connection_of(session), [message_row("after")])
    with transaction(engine, read_only=True) as session:
        names = set(session.scalars(select(MESSAGES.c.mts_identifier)))
    assert names == {"kept", "after"}


def test_the_connection_is_asked_for_once_per_transaction(engine: Engine) -> None:
    with transaction(engine) as session:
        first = connection_of(session)
        assert connection_of(session) is first
        with session.begin_nested():
            assert connection_of(session) is first  # the same connection, asked again
    with transaction(engine) as session:
        assert connection_of(session) is not first


# --- statements with lists and literals ---------------------------------------------------

SOME = Prepared(
    select(MESSAGES.c.id, MESSAGES.c.kind, MESSAGES.c.arrival_time, MESSAGES.c.apdu)
    .where(
        MESSAGES.c.mts_identifier.in_(bindparam("names", expanding=True)),
        MESSAGES.c.kind.in_([ApduKind.REPORT, ApduKind.MESSAGE]),  # a literal list
        MESSAGES.c.precedence >= bindparam("lowest"),
    )
    .order_by(MESSAGES.c.id)
)


def test_a_select_with_lists_returns_what_execute_returns(engine: Engine) -> None:
    names = [f"m{i}" for i in range(4)]
    with transaction(engine) as session:
        PREPARED.insert(connection_of(session), [message_row(n) for n in names])
        connection = connection_of(session)
        for wanted in ([], ["m1"], ["m0", "m2", "m3"], ["m2"]):  # a form per list length
            parameters = {"names": wanted, "lowest": 5}
            expected = [tuple(row) for row in connection.execute(SOME.statement, parameters)]
            got = SOME.rows(connection, parameters)
            assert [tuple(row) for row in got] == expected
            assert len(got) == len(wanted)
        (row,) = SOME.rows(connection, {"names": ["m1"], "lowest": 5})
    assert row.kind is ApduKind.REPORT  # named fields, values through result processors
    assert row.arrival_time == T0
    assert row.apdu == b"\x00\x01 apdu \xff"


def test_an_update_binds_its_own_values_and_returns_rows(engine: Engine) -> None:
    later = T0 + timedelta(hours=1)
    moved = Prepared(
        update(MESSAGES)
        .where(MESSAGES.c.id.in_(bindparam("ids", expanding=True)))
        .values(kind=ApduKind.PROBE, arrival_time=bindparam("at"), origin_peer=None)
        .returning(MESSAGES.c.mts_identifier, MESSAGES.c.kind, MESSAGES.c.arrival_time)
    )
    with transaction(engine) as session:
        ids = PREPARED.insert(connection_of(session), [message_row("a"), message_row("b")])
        rows = moved.rows(connection_of(session), {"ids": [ids[1][0]], "at": later})
    assert [tuple(r) for r in rows] == [("b", ApduKind.PROBE, later)]
    assert stored(engine, "b") == {
        **stored(engine, "a"),
        "kind": ApduKind.PROBE,
        "arrival_time": later,
        "origin_peer": None,
    }


def test_scalar(engine: Engine) -> None:
    latest = Prepared(
        select(func.max(MESSAGES.c.arrival_time)).where(MESSAGES.c.origin_peer == bindparam("peer"))
    )
    with transaction(engine) as session:
        assert latest.scalar(connection_of(session), {"peer": "MTA-B"}) is None
        PREPARED.insert(connection_of(session), [message_row("a")])
        assert latest.scalar(connection_of(session), {"peer": "MTA-B"}) == T0


def test_a_parameter_not_given_is_named(engine: Engine) -> None:
    for names in (["m1"], ["m1", "m2", "m3", "m4", "m5"]):  # a form made before, a new one
        with (
            pytest.raises(StatementError, match="parameter lowest is not given"),
            transaction(engine) as session,
        ):
            SOME.rows(connection_of(session), {"names": names})
