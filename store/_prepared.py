"""Hot statements run on the driver's cursor, compiled once per dialect (not public).

SQLAlchemy's ``Connection.execute`` spends 50-80 us of Python per statement (execution
context, events, parameter and result processing), more than SQLite takes to insert a
small row or claim a recipient; a transfer received costs five statements and a claim
four.  :class:`Prepared` keeps what SQLAlchemy's compiler made of one Core statement for
the engine's dialect (the SQL text, the order of its parameters, each parameter's bind
processor, each result column's result processor) and runs it on the DBAPI cursor of
the caller's connection, in the caller's transaction: the same SQL with the same
converted values that ``Connection.execute`` would send, and the same converted values
back (the store's tests run every such statement on SQLite and on PostgreSQL).

Expanding parameters (``IN`` lists) are supported: one form is kept per dialect and
combination of list lengths, as SQLAlchemy renders them.  Literal values in the statement
(``state = 'pending'``) are bound from the statement itself.

Limits, checked when a form is first built: statements whose parameters are all given by
the caller or the statement, without parameters rendered into the SQL text; an INSERT's
rows give every column that has a Python-side default (it would not be applied), and a
column they leave out is not inserted.  A driver error is raised as SQLAlchemy's
:class:`~sqlalchemy.exc.DBAPIError` subclass and a value no bind processor takes (a naive
datetime, an unknown state) as :class:`~sqlalchemy.exc.StatementError`, as
``Connection.execute`` raises them.

Compiling a form costs 0.2-0.6 ms, and the first message after a start needs about
twenty: :func:`warm` builds, for a dialect, the form of every statement made so far (an
INSERT's, and a statement's with each list of one element, as a single message claims),
so that the daemon pays for them before it takes its first message, not during it.

Public API (within the store)::

    Prepared(statement, columns=(), *, dialect=None)   columns: what an INSERT's rows
                                         give; dialect: the only one it is written for
        .insert(connection, rows) -> list[row]     rows RETURNING gives, in rows' order
        .rows(connection, parameters) -> list[row]
        .scalar(connection, parameters) -> first column of the first row, or None
        .warm(dialect) -> int                      forms built now
    warm(dialect) -> int                 every Prepared made so far
    rows are named tuples: row.id, row[0]
"""

from __future__ import annotations

import collections
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, Dialect, Executable, Insert, Select
from sqlalchemy.exc import DBAPIError, StatementError
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.dml import UpdateBase

__all__ = ["Prepared", "warm"]

_Processor = Callable[[Any], Any] | None
_GIVEN: Any = object()
"""The value of a parameter the caller gives (as opposed to a literal of the statement)."""


@dataclass(frozen=True, slots=True)
class _Slot:
    """Where one placeholder's value comes from."""

    name: str
    """The placeholder's name in the SQL (for a named paramstyle)."""
    source: str
    """The parameter's name (an expanded list's, for one of its elements)."""
    index: int | None
    """Which element of an expanded list; None for a plain parameter."""
    literal: Any
    """The statement's own value, or ``_GIVEN``."""
    process: _Processor


@dataclass(frozen=True, slots=True)
class _Form:
    """One statement as compiled for one dialect (and lengths of its lists)."""

    sql: str
    slots: tuple[_Slot, ...]
    positional: bool
    results: tuple[_Processor, ...]
    """One per result column (empty: the statement returns nothing)."""
    row: Callable[[Iterable[Any]], tuple[Any, ...]]


class Prepared:
    """A Core statement run on the driver's cursor (module docstring)."""

    def __init__(
        self, statement: Executable, columns: Sequence[str] = (), *, dialect: str | None = None
    ) -> None:
        self.statement = statement
        self.columns = tuple(columns)
        self.dialect = dialect
        """The only dialect the statement is written for (None: any)."""
        self._compiled: dict[str, SQLCompiler] = {}
        self._forms: dict[tuple[Any, ...], _Form] = {}
        _MADE.add(self)

    def insert(
        self, connection: Connection, rows: Sequence[Mapping[str, Any]]
    ) -> list[tuple[Any, ...]]:
        """Insert ``rows`` in the connection's transaction; the rows RETURNING gives,
        in the order of ``rows`` (empty without RETURNING)."""
        if not rows:
            return []
        dialect = connection.dialect
        form = self._forms.get((dialect.name,)) or self._compile_insert(dialect)
        values = [self._bound(form, row) for row in rows]
        if not form.results:
            self._run(connection, form, values, many=True)
            return []
        returned: list[tuple[Any, ...]] = []
        for value in values:
            returned += self._run(connection, form, [value], many=False)
        return returned

    def rows(self, connection: Connection, parameters: Mapping[str, Any]) -> list[Any]:
        """Run the statement once with ``parameters``; the rows it returns."""
        dialect = connection.dialect
        key = self._key(dialect, parameters)
        form = self._forms.get(key) or self._compile(dialect, key, parameters)
        return self._run(connection, form, [self._bound(form, parameters)], many=False)

    def scalar(self, connection: Connection, parameters: Mapping[str, Any]) -> Any:
        """The first column of the first row, or None."""
        rows = self.rows(connection, parameters)
        return rows[0][0] if rows else None

    def warm(self, dialect: Dialect) -> int:
        """Build the form a single message uses on ``dialect`` now: an INSERT's, or the
        statement's with each list of one element; how many were built (0: known, or
        the statement is written for another dialect)."""
        if self.dialect not in (None, dialect.name):
            return 0
        known = len(self._forms)
        if isinstance(self.statement, Insert):
            if (dialect.name,) not in self._forms:
                self._compile_insert(dialect)
            return len(self._forms) - known
        compiled = self._compiled.get(dialect.name) or self._compile_plain(dialect)
        expanding = {bind.key for bind in compiled.post_compile_params}
        parameters = {
            bind.key: [None] if bind.key in expanding else None
            for bind in compiled.binds.values()
            if bind.required
        }
        key = self._key(dialect, parameters)
        if key not in self._forms:
            self._compile(dialect, key, parameters)
        return len(self._forms) - known

    # forms

    def _key(self, dialect: Dialect, parameters: Mapping[str, Any]) -> tuple[Any, ...]:
        compiled = self._compiled.get(dialect.name) or self._compile_plain(dialect)
        lengths = tuple(
            len(parameters[bind.key]) if bind.key in parameters else -1
            for bind in compiled.post_compile_params
        )
        return (dialect.name, *lengths)

    def _compile_plain(self, dialect: Dialect) -> SQLCompiler:
        compiled = self.statement.compile(dialect=dialect)  # type: ignore[attr-defined]
        assert isinstance(compiled, SQLCompiler)
        if compiled.literal_execute_params:
            raise ValueError(f"{self._what()}: renders parameters into its SQL text")
        self._compiled[dialect.name] = compiled
        return compiled

    def _compile(
        self, dialect: Dialect, key: tuple[Any, ...], parameters: Mapping[str, Any]
    ) -> _Form:
        compiled = self._compiled[dialect.name]
        for bind in compiled.binds.values():
            if bind.required and bind.key not in parameters:
                message = f"parameter {bind.key} is not given"
                raise StatementError(message, compiled.string, None, None)
        expanded = compiled.construct_expanded_state(dict(parameters))
        origin: dict[str, tuple[str, int | None]] = {
            element: (name, index)
            for name, elements in expanded.parameter_expansion.items()
            for index, element in enumerate(elements)
        }
        names = (
            tuple(expanded.positiontup or ()) if compiled.positional else tuple(expanded.parameters)
        )
        slots = tuple(
            self._slot(compiled, dialect, name, *origin.get(name, (name, None)), parameters)
            for name in names
        )
        form = _Form(
            expanded.statement, slots, compiled.positional, *self._results(compiled, dialect)
        )
        self._forms[key] = form
        return form

    def _compile_insert(self, dialect: Dialect) -> _Form:
        if not isinstance(self.statement, Insert):
            raise TypeError(f"{self._what()}: insert() needs an INSERT")
        # for_executemany: no RETURNING of the key unless the statement asks (PostgreSQL
        # would add one to a single-row insert).
        compiled = self.statement.compile(
            dialect=dialect, column_keys=list(self.columns), for_executemany=True
        )
        assert isinstance(compiled, SQLCompiler)
        if compiled.post_compile_params or compiled.literal_execute_params:
            raise ValueError(f"{self._what()}: has expanding parameters, cannot be prepared")
        names = tuple(compiled.positiontup or ()) if compiled.positional else tuple(compiled.binds)
        missing = sorted(set(names) - set(self.columns))
        if missing:
            raise ValueError(
                f"{self._what()}: the rows must give {', '.join(missing)} (column defaults "
                "are not applied)"
            )
        given = dict.fromkeys(self.columns)
        slots = tuple(self._slot(compiled, dialect, n, n, None, given) for n in names)
        form = _Form(compiled.string, slots, compiled.positional, *self._results(compiled, dialect))
        self._forms[(dialect.name,)] = form
        return form

    def _slot(
        self,
        compiled: SQLCompiler,
        dialect: Dialect,
        name: str,
        source: str,
        index: int | None,
        parameters: Mapping[str, Any],
    ) -> _Slot:
        bind = compiled.binds[source]
        literal: Any = _GIVEN
        if source not in parameters and not bind.required:
            literal = bind.effective_value
            if index is not None:
                literal = literal[index]
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if literal is not _GIVEN and process is not None:
            literal, process = process(literal), None
        return _Slot(name, source, index, literal, process)

    def _results(
        self, compiled: SQLCompiler, dialect: Dialect
    ) -> tuple[tuple[_Processor, ...], Callable[[Iterable[Any]], tuple[Any, ...]]]:
        columns: Sequence[ColumnElement[Any]]
        if isinstance(self.statement, Select):
            columns = list(self.statement.selected_columns)
            names = list(self.statement.selected_columns.keys())
        elif isinstance(self.statement, UpdateBase):
            columns = list(compiled.effective_returning or ())
            names = [str(getattr(column, "key", f"c{i}")) for i, column in enumerate(columns)]
        else:
            raise TypeError(f"{self._what()}: neither a SELECT nor an INSERT, UPDATE or DELETE")
        processors = tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns
        )
        row_type = collections.namedtuple("Row", names, rename=True)  # type: ignore[misc]
        return processors, row_type._make

    # running

    def _bound(self, form: _Form, parameters: Mapping[str, Any]) -> Any:
        try:
            values = [_value(slot, parameters) for slot in form.slots]
        except KeyError as error:
            message = f"parameter {error.args[0]} is not given"
            raise StatementError(message, form.sql, None, error) from error
        except (TypeError, ValueError, LookupError) as error:  # as execute() reports them
            raise StatementError(str(error), form.sql, None, error) from error
        if form.positional:
            return values
        return {slot.name: value for slot, value in zip(form.slots, values, strict=True)}

    def _run(
        self, connection: Connection, form: _Form, values: list[Any], *, many: bool
    ) -> list[Any]:
        dialect = connection.dialect
        driver = connection.connection.driver_connection
        assert driver is not None
        cursor = driver.cursor()
        try:
            if many:
                cursor.executemany(form.sql, values)
                return []
            cursor.execute(form.sql, values[0])
            if not form.results:
                return []
            return [form.row(map(_apply, form.results, row)) for row in cursor.fetchall()]
        except dialect.loaded_dbapi.Error as error:
            raise DBAPIError.instance(
                form.sql, values, error, dialect.loaded_dbapi.Error, dialect=dialect
            ) from error
        finally:
            cursor.close()

    def _what(self) -> str:
        return " ".join(str(self.statement).split())[:80]


_MADE: weakref.WeakSet[Prepared] = weakref.WeakSet()
"""Every :class:`Prepared` made so far (module constants, and those built per dialect)."""


def warm(dialect: Dialect) -> int:
    """:meth:`Prepared.warm` of every statement made so far; how many forms were built."""
    return sum(prepared.warm(dialect) for prepared in list(_MADE))


def _value(slot: _Slot, parameters: Mapping[str, Any]) -> Any:
    if slot.literal is not _GIVEN:
        return slot.literal
    value = parameters[slot.source]
    if slot.index is not None:
        value = value[slot.index]
    return value if slot.process is None else slot.process(value)


def _apply(process: _Processor, value: Any) -> Any:
    return value if process is None else process(value)
