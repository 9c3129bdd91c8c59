"""Literal SQL per dialect, run on the driver's cursor of the caller's connection.

SQLAlchemy's ``Connection.execute`` spends 50-80 us of Python per statement (execution
context, events, parameter and result processing), more than SQLite takes to insert a
small row or claim a recipient; a transfer received costs five statements and a claim
four.  The store's hot statements are therefore written here as SQL and run on the DBAPI
cursor of the caller's connection, in the caller's transaction.

A :class:`Statement` is one template, written for both dialects: SQL with ``:name``
placeholders, the :class:`Kind` of each parameter and of each result column.  For a
dialect it becomes the text the driver takes (``?`` for sqlite3, ``%s`` for psycopg),
and each kind gives the conversions that dialect needs, those the schema's column types
(:mod:`store.models`) apply::

    TIME      aware datetime; naive refused; UTC.  SQLite: text
              'YYYY-MM-DD HH:MM:SS.ffffff' without zone (text order is time order),
              read back with the zone set.  PostgreSQL: timestamptz, read back in UTC.
    enum(E)   a member or its value goes as the value; an unknown one is refused; read
              back as the member
    BOOL      True, False (or 1, 0) only; SQLite stores 1 or 0 and reads back a bool
    INT, TEXT, BYTES   as they are
    INTS      a list of integers, for ``IN (:name)``: one placeholder per element, an
              empty list a subquery of no rows; one text is kept per list length

A template holds no colon but its placeholders.  ``skip_locked`` names the tables whose
rows a PostgreSQL statement locks, skipping those another transaction holds
(``FOR UPDATE OF ... SKIP LOCKED``); SQLite's transaction holds the whole database.
``sqlite_index`` (table, index) has SQLite read the table through that index
(``INDEXED BY``), where its planner, without statistics, would choose one that reads
far more rows; PostgreSQL's planner has them.

Rows are named tuples (``row.id``, ``row[0]``).  A driver error is raised as
SQLAlchemy's :class:`~sqlalchemy.exc.DBAPIError` subclass (``IntegrityError``,
``OperationalError``...) and a parameter that is missing or that its kind refuses as
:class:`~sqlalchemy.exc.StatementError`, as ``Connection.execute`` raises them.

:func:`warm` runs every statement that reads or updates once, with sample values that
match no row, so that the driver has met each before the first message: sqlite3 keeps
the compiled statement in the connection's cache, psycopg its parsed query.

Public API (within the store)::

    Kind, INT, TEXT, BYTES, BOOL, TIME, INTS, enum_kind(enum) -> Kind
    Statement(sql, parameters, columns={}, *, skip_locked=None, sqlite_index=None)
        .rows(connection, parameters) -> list[Row]
        .scalar(connection, parameters) -> first column of the first row, or None
        .text(dialect, lengths=()) -> str        the SQL the driver gets
        .sample() -> parameters                  values of the kinds' samples
    Insert(table, columns, *, returning={}, skip_existing=())     a Statement
        .insert(connection, rows) -> list[Row]   what RETURNING gives, in the rows' order
    warm(connection) -> int                      statements run
    literal(text) -> str                         a quoted SQL string literal
    Row                                          a named tuple
"""

from __future__ import annotations

import collections
import enum
import re
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Final, NamedTuple, TypeAlias

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError, StatementError

from store.models import from_utc, to_utc

__all__ = [
    "BOOL",
    "BYTES",
    "INT",
    "INTS",
    "TEXT",
    "TIME",
    "Insert",
    "Kind",
    "Row",
    "Statement",
    "enum_kind",
    "literal",
    "warm",
]

Convert: TypeAlias = Callable[[Any], Any]
"""A conversion of one value, on its way to the driver or back from it."""
Row: TypeAlias = Any
"""A named tuple of a statement's result columns."""

_NOTHING: Final[Mapping[str, Any]] = MappingProxyType({})


# --- kinds -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Kind:
    """A value's type as the driver sees it: its conversions per dialect (a dialect not
    named passes the value as it is) and a sample value that matches no row."""

    name: str
    sample: Any
    to_driver: Mapping[str, Convert] = field(default_factory=dict)
    from_driver: Mapping[str, Convert] = field(default_factory=dict)
    many: bool = False
    """A list of values, for ``IN (:name)``: one placeholder per element."""


def _time_text(value: datetime | None) -> str | None:
    """SQLite's storage of a time: UTC text without zone, always with microseconds."""
    if value is None:
        return None
    return to_utc(value).replace(tzinfo=None).isoformat(" ", "microseconds")


def _time_from_text(value: str | None) -> datetime | None:
    return None if value is None else from_utc(datetime.fromisoformat(value))


def _time_utc(value: datetime | None) -> datetime | None:
    return None if value is None else to_utc(value)


def _time_read(value: datetime | None) -> datetime | None:
    return None if value is None else from_utc(value)


_BOOLEANS: Final = frozenset({None, True, False})


def _strict_bool(value: Any) -> bool | None:
    """``value`` when it is None, True or False (1 and 0 compare equal to them)."""
    if value not in _BOOLEANS:
        if not isinstance(value, int):
            raise TypeError(f"Not a boolean value: {value!r}")
        raise ValueError(f"Value {value!r} is not None, True, or False")
    return None if value is None else bool(value)


def _bool_as_int(value: Any) -> int | None:
    checked = _strict_bool(value)
    return None if checked is None else int(checked)


def _int_as_bool(value: int | None) -> bool | None:
    return None if value is None else bool(value)


INT: Final = Kind("integer", 0)
TEXT: Final = Kind("text", "")
BYTES: Final = Kind("bytes", b"")
INTS: Final = Kind("integers", [0], many=True)
BOOL: Final = Kind(
    "boolean",
    False,
    to_driver={"sqlite": _bool_as_int, "postgresql": _strict_bool},
    from_driver={"sqlite": _int_as_bool},
)
TIME: Final = Kind(
    "time",
    datetime(1970, 1, 1, tzinfo=UTC),
    to_driver={"sqlite": _time_text, "postgresql": _time_utc},
    from_driver={"sqlite": _time_from_text, "postgresql": _time_read},
)


def enum_kind(kind: type[enum.StrEnum]) -> Kind:
    """Members of ``kind`` stored as their values; any other value is refused."""
    values: dict[Any, str | None] = {member.value: member.value for member in kind}
    values[None] = None
    members: dict[str | None, enum.StrEnum | None] = {member.value: member for member in kind}
    members[None] = None

    def to_value(value: Any) -> str | None:
        try:
            return values[value]  # a StrEnum member is equal to its value
        except KeyError:
            raise LookupError(f"{value!r} is not a {kind.__name__}: {sorted(kind)}") from None

    def to_member(value: str | None) -> enum.StrEnum | None:
        try:
            return members[value]
        except KeyError:
            raise LookupError(f"{value!r} is not a {kind.__name__}: {sorted(kind)}") from None

    both = ("sqlite", "postgresql")
    return Kind(
        kind.__name__,
        next(iter(kind)),
        to_driver=dict.fromkeys(both, to_value),
        from_driver=dict.fromkeys(both, to_member),
    )


def literal(text: str) -> str:
    """``text`` as a quoted SQL string literal (for the enums' values in templates)."""
    return "'" + text.replace("'", "''") + "'"


# --- forms: a statement for one dialect ----------------------------------------------------

_PLACEHOLDERS: Final = {"sqlite": "?", "postgresql": "%s"}
_EMPTY_LIST: Final = "SELECT CAST(NULL AS BIGINT) WHERE 1 = 0"
"""What ``IN (...)`` holds for an empty list: a subquery of no rows (``x IN`` it is
false, ``x NOT IN`` it true), which both dialects take."""
_PLACEHOLDER: Final = re.compile(r":(\w+)")


class _Slot(NamedTuple):
    """One placeholder of a template: whose value, converted how."""

    name: str
    convert: Convert | None
    many: bool


class _Form:
    """A statement's SQL for one dialect: its texts (one per list lengths), the
    conversions of its parameters and result columns."""

    __slots__ = (
        "expands",
        "loads",
        "make",
        "pieces",
        "placeholder",
        "returns",
        "slots",
        "suffix",
        "texts",
    )

    def __init__(self, statement: Statement, dialect: str) -> None:
        placeholder = _PLACEHOLDERS.get(dialect)
        if placeholder is None:
            raise NotImplementedError(f"the store supports SQLite and PostgreSQL, not {dialect}")
        self.placeholder = placeholder
        escape = (lambda text: text.replace("%", "%%")) if placeholder == "%s" else str
        self.pieces = tuple(escape(piece) for piece in statement.pieces)
        if statement.sqlite_index is not None and dialect == "sqlite":
            table, index = statement.sqlite_index
            self.pieces = tuple(
                piece.replace(f"FROM {table} ", f"FROM {table} INDEXED BY {index} ", 1)
                for piece in self.pieces
            )
        self.slots = tuple(
            _Slot(name, kind.to_driver.get(dialect), kind.many)
            for name, kind in ((n, statement.parameters[n]) for n in statement.names)
        )
        self.expands = any(slot.many for slot in self.slots)
        self.loads = tuple(
            (index, kind.from_driver[dialect])
            for index, kind in enumerate(statement.columns.values())
            if dialect in kind.from_driver
        )
        self.make: Callable[[Any], Row] = statement.row_type._make
        self.returns = bool(statement.columns)
        locked = statement.skip_locked
        self.suffix = (
            f" FOR UPDATE OF {locked} SKIP LOCKED" if locked and dialect != "sqlite" else ""
        )
        self.texts: dict[tuple[int, ...], str] = {}

    def text(self, lengths: tuple[int, ...]) -> str:
        """The SQL for lists of these lengths (in the order of their placeholders)."""
        return self.texts.get(lengths) or self.render(lengths)

    def render(self, lengths: tuple[int, ...]) -> str:
        """Write the SQL for lists of these lengths, and keep it."""
        counts = iter(lengths)
        parts = [self.pieces[0]]
        for slot, piece in zip(self.slots, self.pieces[1:], strict=True):
            parts.append(self._placeholders(next(counts)) if slot.many else self.placeholder)
            parts.append(piece)
        text = "".join(parts) + self.suffix
        self.texts[lengths] = text
        return text

    def _placeholders(self, count: int) -> str:
        return ", ".join([self.placeholder] * count) if count else _EMPTY_LIST

    def bind(self, parameters: Mapping[str, Any]) -> tuple[list[Any], tuple[int, ...]]:
        """The driver's values, in placeholder order, and the lengths of the lists."""
        if not self.expands:
            return [
                parameters[name] if convert is None else convert(parameters[name])
                for name, convert, _ in self.slots
            ], ()
        values: list[Any] = []
        lengths: list[int] = []
        for name, convert, many in self.slots:
            value = parameters[name]
            if many:
                lengths.append(len(value))
                values.extend(value)
            else:
                values.append(value if convert is None else convert(value))
        return values, tuple(lengths)

    def load(self, rows: Sequence[Sequence[Any]]) -> list[Row]:
        """The driver's rows as named tuples of converted values."""
        make = self.make
        if not self.loads:
            return [make(row) for row in rows]
        loaded: list[Row] = []
        for row in rows:
            values = list(row)
            for index, convert in self.loads:
                values[index] = convert(values[index])
            loaded.append(make(values))
        return loaded


# --- statements ----------------------------------------------------------------------------


class Statement:
    """One statement written for both dialects (module docstring)."""

    def __init__(
        self,
        sql: str,
        parameters: Mapping[str, Kind],
        columns: Mapping[str, Kind] = _NOTHING,
        *,
        skip_locked: str | None = None,
        sqlite_index: tuple[str, str] | None = None,
    ) -> None:
        self.sql = " ".join(sql.split())
        self.parameters = dict(parameters)
        self.columns = dict(columns)
        self.skip_locked = skip_locked
        self.sqlite_index = sqlite_index
        if sqlite_index is not None and f"FROM {sqlite_index[0]} " not in self.sql:
            raise ValueError(f"{self.sql}: no FROM {sqlite_index[0]} to read by an index")
        split = _PLACEHOLDER.split(self.sql)
        self.pieces: tuple[str, ...] = tuple(split[0::2])
        self.names: tuple[str, ...] = tuple(split[1::2])
        unknown = sorted(set(self.names) - set(self.parameters))
        unused = sorted(set(self.parameters) - set(self.names))
        if unknown or unused:
            raise ValueError(f"{self.sql}: placeholders {unknown} undeclared, {unused} unused")
        make_type = collections.namedtuple  # called through a name: the fields are not literals
        self.row_type: Any = make_type("Row", list(self.columns), rename=True)
        self._forms: dict[str, _Form] = {}
        _MADE.add(self)

    def rows(self, connection: Connection, parameters: Mapping[str, Any]) -> list[Row]:
        """Run the statement once with ``parameters``; the rows it returns."""
        form = self._form(connection.dialect.name)
        values, lengths = self._bound(form, parameters)
        return _execute(connection, form, form.text(lengths), [values])

    def scalar(self, connection: Connection, parameters: Mapping[str, Any]) -> Any:
        """The first column of the first row, or None."""
        rows = self.rows(connection, parameters)
        return rows[0][0] if rows else None

    def text(self, dialect: str, lengths: tuple[int, ...] = ()) -> str:
        """The SQL ``dialect``'s driver gets, for lists of these lengths."""
        return self._form(dialect).text(lengths)

    def sample(self) -> dict[str, Any]:
        """Parameters of the kinds' sample values: the statement matches no row."""
        return {name: kind.sample for name, kind in self.parameters.items()}

    def _form(self, dialect: str) -> _Form:
        form = self._forms.get(dialect)
        if form is None:
            form = self._forms[dialect] = _Form(self, dialect)
        return form

    def _bound(
        self, form: _Form, parameters: Mapping[str, Any]
    ) -> tuple[list[Any], tuple[int, ...]]:
        """:meth:`_Form.bind`, its errors raised as ``Connection.execute`` raises them."""
        try:
            return form.bind(parameters)
        except KeyError as error:
            message = f"parameter {error.args[0]} is not given"
            raise StatementError(message, self.sql, None, error) from error
        except Exception as error:  # a value its kind refuses: naive time, unknown state...
            raise StatementError(str(error), self.sql, None, error) from error

    def __repr__(self) -> str:
        return f"Statement({self.sql[:60]!r})"


class Insert(Statement):
    """``INSERT INTO table (columns) VALUES (...)``: every row gives exactly ``columns``.

    ``skip_existing``: a unique key; a row whose key exists is skipped
    (``ON CONFLICT (key) DO NOTHING``: atomic on both databases, also against a
    concurrent insert of the same key, which PostgreSQL waits for, so a duplicate never
    aborts the transaction).  ``returning``: the columns each inserted row returns.
    """

    def __init__(
        self,
        table: str,
        columns: Mapping[str, Kind],
        *,
        returning: Mapping[str, Kind] = _NOTHING,
        skip_existing: Sequence[str] = (),
    ) -> None:
        names = ", ".join(_quoted(name) for name in columns)
        values = ", ".join(f":{name}" for name in columns)
        sql = f"INSERT INTO {_quoted(table)} ({names}) VALUES ({values})"
        if skip_existing:
            sql += f" ON CONFLICT ({', '.join(_quoted(n) for n in skip_existing)}) DO NOTHING"
        if returning:
            sql += f" RETURNING {', '.join(_quoted(name) for name in returning)}"
        super().__init__(sql, columns, returning)
        self.table = table
        self._given = frozenset(columns)

    def insert(self, connection: Connection, rows: Sequence[Mapping[str, Any]]) -> list[Row]:
        """Insert ``rows`` (one statement per row with RETURNING, else one batch); the
        rows RETURNING gives, in the order of ``rows``.

        Raises ValueError for a column the rows give that is not inserted; one they lack
        is a StatementError that names it.
        """
        if not rows:
            return []
        extra = rows[0].keys() - self._given
        if extra:
            raise ValueError(f"{self.table} rows give {sorted(extra)}, not inserted")
        form = self._form(connection.dialect.name)
        values = [self._bound(form, row)[0] for row in rows]
        return _execute(connection, form, form.text(()), values)


_RESERVED: Final = frozenset({"user"})
"""Names of the store's columns that SQL reserves: quoted in the inserts' text."""


def _quoted(name: str) -> str:
    return f'"{name}"' if name in _RESERVED else name


# --- running -------------------------------------------------------------------------------


def _execute(connection: Connection, form: _Form, sql: str, batches: list[list[Any]]) -> list[Row]:
    """Run ``sql`` once per list of values on the driver's cursor of ``connection``; the
    rows returned, converted.  Without result columns a batch goes as one executemany."""
    dialect = connection.dialect
    driver = connection.connection.driver_connection
    assert driver is not None
    cursor = driver.cursor()
    try:
        if not form.returns:
            if len(batches) == 1:
                cursor.execute(sql, batches[0])
            else:
                cursor.executemany(sql, batches)
            return []
        rows: list[Row] = []
        for values in batches:
            cursor.execute(sql, values)
            rows += form.load(cursor.fetchall())
        return rows
    except dialect.loaded_dbapi.Error as error:
        raise DBAPIError.instance(
            sql, batches, error, dialect.loaded_dbapi.Error, dialect=dialect
        ) from error
    finally:
        cursor.close()


_MADE: Final[weakref.WeakSet[Statement]] = weakref.WeakSet()
"""Every :class:`Statement` made so far (the store's are module constants)."""


def warm(connection: Connection) -> int:
    """Run every statement made so far that reads or updates, once, with its sample
    values (it matches no row), on ``connection``; how many ran.  Inserts are left out:
    a warm-up inserts real rows, in a transaction it rolls back."""
    ran = 0
    for statement in sorted(_MADE, key=lambda s: s.sql):
        if not isinstance(statement, Insert):
            statement.rows(connection, statement.sample())
            ran += 1
    return ran
