"""store.sql.statement: every hot statement of the store, run on the driver's cursor,
returns and stores what the same query returns and stores through SQLAlchemy's
``Connection.execute`` (with the schema's column types converting values), on SQLite and
on PostgreSQL; errors are SQLAlchemy's; inserts stay inside savepoints.

Each comparison runs both ways on the same committed rows, each in a transaction rolled
back afterwards, and compares the rows returned (values with their types and time zones)
and every stored value as the driver reads it (so SQLite's time text must be the same).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from types import ModuleType
from typing import Any

import pytest
from sqlalchemy import (
    Connection,
    Engine,
    Executable,
    Table,
    bindparam,
    case,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError, StatementError

from store import ApduKind, RecipientState, transaction
from store._sql import connection_of, table
from store.models import (
    AuditEntry,
    MailboxContent,
    MailboxEntry,
    QueuedMessage,
    QueuedRecipient,
    ReceivedKey,
    UtcDateTime,
)
from store.sql import audit as audit_sql
from store.sql import mailbox as mailbox_sql
from store.sql import queue as queue_sql
from store.sql import received as received_sql
from store.sql.statement import BYTES, INT, INTS, TIME, Insert, Statement

MESSAGES = table(QueuedMessage)
RECIPIENTS = table(QueuedRecipient)
RECEIVED = table(ReceivedKey)
MAILBOX = table(MailboxEntry)
AUDIT = table(AuditEntry)
TABLES = (MESSAGES, RECIPIENTS, RECEIVED, MAILBOX, AUDIT)
M = MESSAGES.c
R = RECIPIENTS.c
S = RecipientState

T0 = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
EAST = timezone(timedelta(hours=2))


def at(seconds: float) -> datetime:
    """``seconds`` after T0, in a zone two hours east of UTC (both ways must convert)."""
    return (T0 + timedelta(seconds=seconds)).astimezone(EAST)


# --- committed rows both ways read and change -------------------------------------------------


def message(name: str, kind: ApduKind, precedence: int, **changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "mts_identifier": name,
        "kind": kind,
        "size": 11,
        "precedence": precedence,
        "originator": "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith",
        "arrival_time": at(0),
        "expiry_time": None,
        "origin_peer": None,
        "envelope_recipients": None,
        "apdu_file": None,
        "apdu": b"\x00\x01 apdu \xff",
    }
    return row | changes


MESSAGE_ROWS = (
    message("m1", ApduKind.MESSAGE, 5, expiry_time=at(3600), origin_peer="MTA-A"),
    message("m2", ApduKind.REPORT, 2, arrival_time=at(-5), apdu=b"", apdu_file="f.ber"),
    message("m3", ApduKind.PROBE, 0, expiry_time=at(-1), envelope_recipients=2, size=0),
    message("m1", ApduKind.MESSAGE, 3, arrival_time=at(2)),  # m1 again, split transfer
    message("m1", ApduKind.REPORT, 5),  # a report on m1: not its precedence
)


def recipient(message_id: int, name: str, route: str, state: S, **changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "message_id": message_id,
        "recipient": name,
        "shown": name.upper(),
        "route": route,
        "state": state,
        "precedence": MESSAGE_ROWS[message_id - 1]["precedence"],
        "arrival_time": MESSAGE_ROWS[message_id - 1]["arrival_time"],
        "attempts": 0,
        "next_attempt_at": at(0),
        "last_error": None,
        "report_request": 0,
        "recipient_number": None,
        "owner": None,
        "updated_at": at(0),
    }
    return row | changes


RECIPIENT_ROWS = (
    recipient(1, "c=gb;s=a", "mta-b", S.PENDING, recipient_number=1, report_request=0b11000),
    recipient(1, "c=gb;s=b", "mta-b", S.IN_FLIGHT, attempts=2, owner="mta-1"),
    recipient(1, "c=gb;s=c", "mta-c", S.PENDING, next_attempt_at=at(60), last_error="busy"),
    recipient(2, "c=gb;s=a", "mta-b", S.PENDING, next_attempt_at=at(-30)),
    recipient(2, "c=gb;s=d", "mta-b", S.HELD),
    recipient(3, "c=gb;s=a", "mta-b", S.PENDING, attempts=1),
    recipient(3, "c=gb;s=e", "local", S.DELIVERED, attempts=1),
    recipient(4, "c=gb;s=f", "mta-b", S.IN_FLIGHT, attempts=1, owner="mta-2"),
    recipient(4, "c=gb;s=g", "mta-b", S.FAILED, last_error="refused"),
    recipient(5, "c=gb;s=h", "mta-b", S.PENDING),
)


@pytest.fixture
def filled(engine: Engine) -> Engine:
    """``engine`` with MESSAGE_ROWS (ids 1-5) and RECIPIENT_ROWS (ids 1-10) committed."""
    with engine.begin() as connection:
        connection.execute(insert(MESSAGES), list(MESSAGE_ROWS))
        connection.execute(insert(RECIPIENTS), list(RECIPIENT_ROWS))
        connection.execute(
            insert(RECEIVED),
            [{"mts_identifier": "m1", "recipient": "c=gb;s=a", "received_at": at(0)}],
        )
        connection.execute(insert(MAILBOX), [mailbox_row("m1", "c=gb;s=e")])
    return engine


# --- both ways --------------------------------------------------------------------------------


def typed(rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Rows as (type, value, time zone) of each value: a str is no enum, naive no aware."""
    return [tuple((type(v), v, getattr(v, "tzinfo", None)) for v in row) for row in rows]


def stored(connection: Connection, *, ids: bool = True) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the store's tables as the driver reads it (no SQLAlchemy type)."""
    tables: dict[str, list[tuple[Any, ...]]] = {}
    for t in TABLES:
        names = [c.name for c in t.columns if ids or c.name != "id"]
        columns = ", ".join(f'"{name}"' for name in names)
        result = connection.exec_driver_sql(f'SELECT {columns} FROM "{t.name}" ORDER BY id')
        tables[t.name] = [tuple(row) for row in result]
    return tables


Run = Callable[[Connection], Sequence[Sequence[Any]]]


def outcome(engine: Engine, run: Run, *, ids: bool = True) -> tuple[list[Any], dict[str, Any]]:
    """What ``run`` returns and leaves stored, in a transaction then rolled back."""
    with engine.connect() as connection:
        transaction_ = connection.begin()
        try:
            return typed(run(connection)), stored(connection, ids=ids)
        finally:
            transaction_.rollback()


def execute(statement: Executable, parameters: Mapping[str, Any]) -> Run:
    return lambda connection: connection.execute(statement, dict(parameters)).all()


def literal(statement: Statement, parameters: Mapping[str, Any]) -> Run:
    return lambda connection: statement.rows(connection, parameters)


@dataclass(frozen=True)
class Case:
    """A hot statement, the same query in SQLAlchemy Core, and parameters to run it with."""

    statement: Statement
    core: Executable
    parameters: tuple[dict[str, Any], ...]
    ordered: bool = True
    """Whether the statement orders its rows (else both sides are sorted)."""


def _time(name: str) -> Any:
    return bindparam(name, type_=UtcDateTime())


def _ids(name: str) -> Any:
    return bindparam(name, expanding=True)


_DUE = (
    R.route == bindparam("route"),
    R.state == S.PENDING,
    R.precedence.in_(_ids("precedences")),
    R.next_attempt_at <= _time("now"),
)
RECIPIENT_COLUMNS = (
    R.id,
    R.message_id,
    R.recipient,
    R.shown,
    R.route,
    R.state,
    R.attempts,
    R.next_attempt_at,
    R.last_error,
    R.report_request,
    R.recipient_number,
)
MESSAGE_COLUMNS = (
    M.id,
    M.mts_identifier,
    M.kind,
    M.precedence,
    M.originator,
    M.apdu,
    M.arrival_time,
    M.expiry_time,
    M.origin_peer,
    M.envelope_recipients,
    M.apdu_file,
)
ALL = [0, 1, 2, 3, 4, 5]
DUE = {"route": "mta-b", "precedences": ALL, "now": at(10)}
LEVEL = {"route": "mta-b", "precedence": 2, "now": at(10)}


def _transition(from_states: tuple[S, ...], **values: Any) -> Executable:
    return (
        update(RECIPIENTS)
        .where(R.id.in_(_ids("ids")), R.state.in_(from_states))
        .values(updated_at=_time("at"), **values)
        .returning(*RECIPIENT_COLUMNS)
    )


def _changes(**values: Any) -> tuple[dict[str, Any], ...]:
    everyone = list(range(1, 11))
    return (
        {"ids": everyone, "at": at(100), **values},
        {"ids": [2, 8, 99], "at": at(100), **values},
        {"ids": [6], "at": at(100), **values},
    )


SELECTS = (
    Case(
        queue_sql.CHOOSE,
        select(R.id, R.message_id)
        .where(
            R.route == bindparam("route"),
            R.state == S.PENDING,
            R.precedence == bindparam("precedence"),
            R.next_attempt_at <= _time("now"),
            R.message_id.not_in(_ids("taken")),
        )
        .order_by(R.arrival_time, R.message_id, R.next_attempt_at, R.id)
        .limit(bindparam("limit"))
        .with_for_update(skip_locked=True),
        (
            {**LEVEL, "taken": [], "limit": 10},
            {**LEVEL, "taken": [1], "limit": 2},
            {**LEVEL, "taken": [1, 2, 3], "limit": 10},
            {**LEVEL, "precedence": 3, "taken": [], "limit": 1},
            {**LEVEL, "now": at(-60), "taken": [], "limit": 10},
        ),
    ),
    Case(
        queue_sql.SIBLINGS,
        select(R.id).where(R.message_id.in_(_ids("messages")), *_DUE),
        (
            {**DUE, "messages": [1]},
            {**DUE, "messages": [1, 2, 3, 4, 5]},
            {**DUE, "messages": [2], "precedences": [5]},
        ),
        ordered=False,
    ),
    Case(
        queue_sql.BACKLOG,
        select(func.count(func.distinct(R.message_id))).where(*_DUE),
        (DUE, {**DUE, "precedences": [0]}, {**DUE, "route": "nowhere"}),
    ),
    Case(
        queue_sql.NEXT_DUE,
        select(func.min(R.next_attempt_at)).where(
            R.route == bindparam("route"),
            R.state == S.PENDING,
            R.precedence.in_(_ids("precedences")),
        ),
        (
            {"route": "mta-b", "precedences": ALL},
            {"route": "mta-c", "precedences": [5]},
            {"route": "mta-c", "precedences": [0, 1]},  # none: NULL
        ),
    ),
    Case(
        queue_sql.SIZES,
        select(M.id, M.size).where(M.id.in_(_ids("ids"))),
        ({"ids": [1]}, {"ids": [3, 1, 2, 77]}),
        ordered=False,
    ),
    Case(
        queue_sql.MESSAGES_BY_ID,
        select(*MESSAGE_COLUMNS).where(M.id.in_(_ids("ids"))),
        ({"ids": [1, 2, 3, 4, 5]}, {"ids": [3]}),
        ordered=False,
    ),
    Case(
        queue_sql.SUBJECT_PRECEDENCE,
        select(func.max(M.precedence)).where(
            M.mts_identifier == bindparam("mts_identifier"), M.kind == ApduKind.MESSAGE
        ),
        ({"mts_identifier": "m1"}, {"mts_identifier": "m3"}, {"mts_identifier": "none"}),
    ),
    Case(
        queue_sql.SUBJECT_PROBES,
        select(func.count()).where(
            M.mts_identifier == bindparam("mts_identifier"), M.kind == ApduKind.PROBE
        ),
        ({"mts_identifier": "m1"}, {"mts_identifier": "m3"}, {"mts_identifier": "none"}),
    ),
    Case(
        queue_sql.RECIPIENTS_OF,
        select(*RECIPIENT_COLUMNS).where(R.message_id == bindparam("message_id")),
        ({"message_id": 1}, {"message_id": 4}, {"message_id": 99}),
        ordered=False,
    ),
    Case(
        queue_sql.EXPIRED,
        select(R.id, R.message_id)
        .join(MESSAGES, M.id == R.message_id)
        .where(R.state == S.PENDING, M.expiry_time <= _time("now"))
        .order_by(M.expiry_time, R.message_id, R.id)
        .limit(bindparam("limit"))
        .with_for_update(skip_locked=True, of=RECIPIENTS),
        (
            {"now": at(0), "limit": 10},
            {"now": at(7200), "limit": 10},
            {"now": at(7200), "limit": 1},
        ),
    ),
    Case(
        queue_sql.TO_IN_FLIGHT,
        _transition(
            (S.PENDING,),
            state=S.IN_FLIGHT,
            attempts=R.attempts + 1,
            owner=bindparam("new_owner"),
            lease_until=bindparam("lease_until", type_=UtcDateTime()),
        ),
        (
            *_changes(new_owner="mta-9/one", lease_until=at(130)),
            *_changes(new_owner=None, lease_until=None),
        ),
        ordered=False,
    ),
    Case(
        queue_sql.TO_TRANSFERRED,
        _transition((S.IN_FLIGHT,), state=S.TRANSFERRED),
        _changes(),
        ordered=False,
    ),
    Case(
        queue_sql.TO_DELIVERED,
        _transition((S.IN_FLIGHT,), state=S.DELIVERED),
        _changes(),
        ordered=False,
    ),
    Case(
        queue_sql.TO_DEFERRED,
        _transition(
            (S.IN_FLIGHT,),
            state=S.PENDING,
            next_attempt_at=_time("next_attempt"),
            last_error=bindparam("error"),
            owner=None,
        ),
        _changes(next_attempt=at(900), error="peer busy"),
        ordered=False,
    ),
    Case(
        queue_sql.TO_UNCLAIMED,
        _transition(
            (S.IN_FLIGHT,),
            state=S.PENDING,
            attempts=case((R.attempts > 0, R.attempts - 1), else_=0),
            owner=None,
        ),
        _changes(),
        ordered=False,
    ),
    Case(
        queue_sql.TO_RETRIED_AT_ONCE,
        _transition(
            (S.IN_FLIGHT,),
            state=S.PENDING,
            attempts=case((R.attempts > 0, R.attempts - 1), else_=0),
            next_attempt_at=_time("at"),
            last_error=bindparam("error"),
            owner=None,
        ),
        _changes(error="transfer failed: reset"),
        ordered=False,
    ),
    Case(
        queue_sql.TO_FAILED,
        _transition(
            (S.IN_FLIGHT, S.PENDING, S.HELD),
            state=S.FAILED,
            last_error=bindparam("error"),
            owner=None,
        ),
        _changes(error="no route"),
        ordered=False,
    ),
    Case(
        queue_sql.TO_NON_DELIVERED,
        _transition(
            (S.PENDING, S.HELD),
            state=S.FAILED,
            last_error=bindparam("error"),
            owner=None,
        ),
        _changes(error="non-delivered by the operator: gone"),
        ordered=False,
    ),
    Case(
        queue_sql.TO_EXPIRED,
        _transition((S.PENDING,), state=S.FAILED, last_error="expired", owner=None),
        _changes(),
        ordered=False,
    ),
)


@pytest.mark.parametrize("case", SELECTS, ids=lambda case: _name(case.statement))
def test_a_statement_returns_and_stores_what_execute_does(filled: Engine, case: Case) -> None:
    returned = 0
    for parameters in case.parameters:
        ours = outcome(filled, literal(case.statement, parameters))
        theirs = outcome(filled, execute(case.core, parameters))
        if not case.ordered:
            ours, theirs = (sorted(ours[0]), ours[1]), (sorted(theirs[0]), theirs[1])
        assert ours == theirs, parameters
        returned += len(ours[0])
    assert returned  # rows to compare, not only empty results


# --- inserts ----------------------------------------------------------------------------------


def mailbox_row(name: str, user: str, **changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "user": user,
        "mts_identifier": name,
        "kind": ApduKind.REPORT,
        "size": 3,
        "precedence": 2,
        "subject": "report on m1",
        "originator": None,
        "security_label": None,
        "message_type": None,
        "delivered_at": at(1),
        "read": False,
        "content_id": None,
        "apdu_file": None,
        "apdu": b"\x01\x02\x03",
    }
    return row | changes


def key(name: str, user: str, seconds: float, **changes: Any) -> dict[str, Any]:
    row = {"mts_identifier": name, "recipient": user, "received_at": at(seconds)}
    return row | {"origin_peer": None} | changes


def _skipping(dialect: str, target: Table, key: Sequence[str], returning: Sequence[str]) -> Any:
    """SQLAlchemy's INSERT ... ON CONFLICT (key) DO NOTHING RETURNING for ``dialect``."""
    if dialect == "postgresql":
        made: Any = postgresql.insert(target).on_conflict_do_nothing(index_elements=list(key))
    else:
        made = sqlite.insert(target).on_conflict_do_nothing(index_elements=list(key))
    return made.returning(*(target.c[name] for name in returning))


@dataclass(frozen=True)
class InsertCase:
    """An insert, the rows to give it, and how SQLAlchemy inserts them."""

    statement: Insert
    rows: tuple[dict[str, Any], ...]
    core: Callable[[str], Executable]
    """The same insert, for a dialect."""


INSERTS = (
    InsertCase(
        queue_sql.INSERT_MESSAGES,
        (
            message("n1", ApduKind.MESSAGE, 4, expiry_time=at(60), envelope_recipients=1),
            message("n2", ApduKind.REPORT, 0, apdu=b"", apdu_file="g.ber", origin_peer="MTA-C"),
        ),
        lambda _: insert(MESSAGES).returning(M.id),
    ),
    InsertCase(
        queue_sql.INSERT_RECIPIENTS,
        (
            recipient(1, "c=gb;s=x", "mta-b", S.PENDING, next_attempt_at=at(30)),
            recipient(2, "c=gb;s=y", "local", S.DELIVERED, attempts=1, recipient_number=3),
            recipient(5, "c=gb;s=z", "mta-c", S.IN_FLIGHT, owner="o", last_error="e"),
        ),
        lambda _: insert(RECIPIENTS),
    ),
    InsertCase(
        received_sql.INSERT_NEW,
        (
            key("m1", "c=gb;s=a", 5),  # received before
            key("m1", "c=gb;s=new", 5, origin_peer="MTA-A"),
            key("m9", "c=gb;s=a", 6),
            key("m9", "c=gb;s=a", 7),  # again in the batch
        ),
        lambda dialect: _skipping(
            dialect, RECEIVED, ("mts_identifier", "recipient"), ("mts_identifier", "recipient")
        ),
    ),
    InsertCase(
        mailbox_sql.INSERT_NEW,
        (
            mailbox_row("m1", "c=gb;s=e"),  # delivered before
            mailbox_row("m2", "c=gb;s=e", read=True, kind=ApduKind.MESSAGE, subject=None),
            mailbox_row(
                "m2",
                "c=gb;s=f",
                apdu=b"",
                apdu_file="h.ber",
                originator="Smith",
                security_label="SECRET; privacy mark 'NATO'",
                message_type="operation",
            ),
        ),
        lambda dialect: _skipping(
            dialect, MAILBOX, ("mts_identifier", "user"), ("id", "mts_identifier", "user")
        ),
    ),
    InsertCase(
        mailbox_sql.INSERT_CONTENTS,
        (
            {"size": 3, "apdu_file": None, "apdu": b"\x01\x02\x03"},
            {"size": 70000, "apdu_file": "i.ber", "apdu": b""},
        ),
        lambda _: insert(table(MailboxContent)).returning(table(MailboxContent).c.id),
    ),
    InsertCase(
        audit_sql.INSERT,
        (
            {
                "at": at(1),
                "event": "received",
                "mts_identifier": "m1",
                "recipient": None,
                "peer": "MTA-A",
                "detail": None,
            },
            {
                "at": at(2),
                "event": "transferred",
                "mts_identifier": "m1",
                "recipient": "c=gb;s=a",
                "peer": "MTA-B",
                "detail": "2 recipients",
            },
        ),
        lambda _: insert(AUDIT),
    ),
)


def _without_ids(rows: list[tuple[Any, ...]], names: Sequence[str]) -> list[tuple[Any, ...]]:
    """(PostgreSQL does not roll its sequences back: the other way's ids are further on.)"""
    return [tuple(v for v, name in zip(row, names, strict=True) if name != "id") for row in rows]


@pytest.mark.parametrize("case", INSERTS, ids=lambda case: case.statement.table)
def test_an_insert_returns_and_stores_what_execute_does(filled: Engine, case: InsertCase) -> None:
    core = case.core(filled.dialect.name)

    def by_execute(connection: Connection) -> list[Any]:
        returned = [connection.execute(core, row) for row in case.rows]
        return [row for result in returned if result.returns_rows for row in result.all()]

    rows, tables = outcome(filled, lambda c: case.statement.insert(c, case.rows), ids=False)
    expected_rows, expected_tables = outcome(filled, by_execute, ids=False)
    names = list(case.statement.columns)
    assert _without_ids(rows, names) == _without_ids(expected_rows, names)
    assert tables == expected_tables


def test_inserted_ids_return_in_the_order_of_the_rows(filled: Engine) -> None:
    rows = [message(f"n{i}", ApduKind.MESSAGE, i % 6) for i in range(5)]
    with transaction(filled) as session:
        returned = queue_sql.INSERT_MESSAGES.insert(connection_of(session), rows)
    with filled.connect() as connection:
        ids = dict(connection.execute(select(M.mts_identifier, M.id).where(M.id > 5)).all())
    assert [row.id for row in returned] == [ids[row["mts_identifier"]] for row in rows]


def test_every_statement_of_the_store_is_compared() -> None:
    compared = {id(case.statement) for case in SELECTS} | {id(case.statement) for case in INSERTS}
    modules: tuple[ModuleType, ...] = (queue_sql, received_sql, mailbox_sql, audit_sql)
    made = {
        name: value
        for module in modules
        for name, value in vars(module).items()
        if isinstance(value, Statement)
    }
    assert {name for name, value in made.items() if id(value) not in compared} == set()


# --- the mechanism ----------------------------------------------------------------------------

SOME = Statement(
    """SELECT id, kind, arrival_time, apdu FROM messages
    WHERE id IN (:ids) AND precedence >= :lowest AND arrival_time > :after
    ORDER BY id""",
    {"ids": INTS, "lowest": INT, "after": TIME},
    {"id": INT, "kind": queue_sql.APDU_KIND, "arrival_time": TIME, "apdu": BYTES},
)


def test_rows_are_named_tuples_of_converted_values(filled: Engine) -> None:
    with filled.connect() as connection:
        (row,) = queue_sql.MESSAGES_BY_ID.rows(connection, {"ids": [1]})
        assert row.kind is ApduKind.MESSAGE
        assert row.arrival_time == T0 and row.arrival_time.tzinfo is UTC
        assert row.expiry_time == T0 + timedelta(hours=1)
        assert row.apdu == b"\x00\x01 apdu \xff"
        assert row[0] == row.id == 1
        assert queue_sql.BACKLOG.scalar(connection, DUE) == 4  # m1, m2, m3, m5
        assert queue_sql.NEXT_DUE.scalar(connection, {"route": "x", "precedences": [1]}) is None


def test_one_text_per_dialect_and_list_lengths() -> None:
    assert SOME.text("sqlite", (2,)) == (
        "SELECT id, kind, arrival_time, apdu FROM messages WHERE id IN (?, ?) "
        "AND precedence >= ? AND arrival_time > ? ORDER BY id"
    )
    assert "IN (%s) AND precedence >= %s" in SOME.text("postgresql", (1,))
    assert "IN (SELECT CAST(NULL AS BIGINT) WHERE 1 = 0)" in SOME.text("sqlite", (0,))
    assert SOME.text("sqlite", (2,)) is SOME.text("sqlite", (2,))  # kept
    assert queue_sql.CHOOSE.text("postgresql", (1, 0)).endswith(
        "LIMIT %s FOR UPDATE OF recipients SKIP LOCKED"
    )
    assert queue_sql.CHOOSE.text("sqlite", (1, 0)).endswith("LIMIT ?")
    with pytest.raises(NotImplementedError, match="not mysql"):
        SOME.text("mysql")


def test_a_template_names_exactly_its_parameters() -> None:
    with pytest.raises(ValueError, match=r"\['route'\] undeclared, \['limit'\] unused"):
        Statement("SELECT id FROM recipients WHERE route = :route", {"limit": INT})


def test_a_value_its_kind_refuses_is_a_statement_error(engine: Engine) -> None:
    naive = message("naive", ApduKind.MESSAGE, 1, arrival_time=datetime(2026, 3, 1, 12, 0))
    with pytest.raises(StatementError, match="naive datetime"), transaction(engine) as session:
        queue_sql.INSERT_MESSAGES.insert(connection_of(session), [naive])
    unknown = message("unknown", "letter", 1)  # type: ignore[arg-type]
    with pytest.raises(StatementError, match="letter"), transaction(engine) as session:
        queue_sql.INSERT_MESSAGES.insert(connection_of(session), [unknown])
    flag = mailbox_row("m1", "c=gb;s=a", read=2)
    with (
        pytest.raises(StatementError, match="not None, True, or False"),
        transaction(engine) as session,
    ):
        mailbox_sql.INSERT_NEW.insert(connection_of(session), [flag])


def test_a_parameter_not_given_is_named(engine: Engine) -> None:
    for ids in ([], [1], [1, 2]):
        with (
            pytest.raises(StatementError, match="parameter lowest is not given"),
            transaction(engine) as session,
        ):
            SOME.rows(connection_of(session), {"ids": ids, "after": T0})
    row = message("m", ApduKind.MESSAGE, 1)
    del row["apdu"]
    with (
        pytest.raises(StatementError, match="parameter apdu is not given"),
        transaction(engine) as session,
    ):
        queue_sql.INSERT_MESSAGES.insert(connection_of(session), [row])


def test_an_insert_refuses_a_column_it_would_leave_out(engine: Engine) -> None:
    row = {"mts_identifier": "m1", "recipient": "c=gb;s=jones", "received_at": T0}
    with transaction(engine) as session:
        connection = connection_of(session)
        with pytest.raises(ValueError, match=r"received rows give \['size'\], not inserted"):
            received_sql.INSERT_NEW.insert(connection, [{**row, "origin_peer": None, "size": 1}])
        inserted = received_sql.INSERT_NEW.insert(connection, [{**row, "origin_peer": None}])
        assert inserted == [("m1", "c=gb;s=jones")]
        assert received_sql.INSERT_NEW.insert(connection, [{**row, "origin_peer": None}]) == []
        assert received_sql.INSERT_NEW.insert(connection, []) == []


def test_a_driver_error_is_sqlalchemys(engine: Engine) -> None:
    orphan = recipient(1, "c=gb;s=a", "mta-b", S.PENDING) | {"message_id": 999_999}
    with pytest.raises(IntegrityError), transaction(engine) as session:
        queue_sql.INSERT_RECIPIENTS.insert(connection_of(session), [orphan])


def test_an_insert_in_a_savepoint_is_undone_with_it(engine: Engine) -> None:
    insert_ = queue_sql.INSERT_MESSAGES
    with transaction(engine) as session:
        insert_.insert(connection_of(session), [message("kept", ApduKind.MESSAGE, 1)])
        with pytest.raises(RuntimeError), session.begin_nested():
            insert_.insert(connection_of(session), [message("undone", ApduKind.MESSAGE, 1)])
            raise RuntimeError("the unit fails")
        insert_.insert(connection_of(session), [message("after", ApduKind.MESSAGE, 1)])
    with transaction(engine, read_only=True) as session:
        names = set(session.scalars(select(M.mts_identifier)))
    assert names == {"kept", "after"}


def test_the_connection_is_asked_for_once_per_transaction(engine: Engine) -> None:
    with transaction(engine) as session:
        first = connection_of(session)
        assert connection_of(session) is first
        with session.begin_nested():
            assert connection_of(session) is first  # the same connection, asked again
    with transaction(engine) as session:
        assert connection_of(session) is not first


def _name(statement: Statement) -> str:
    for module in (queue_sql, received_sql, mailbox_sql, audit_sql):
        for name, value in vars(module).items():
            if value is statement:
                return name
    return repr(statement)
