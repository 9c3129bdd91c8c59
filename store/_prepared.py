"""INSERT statements run on the driver's cursor, compiled once per dialect (not public).

SQLAlchemy's ``Connection.execute`` spends 50-80 us of Python per statement (execution
context, events, parameter and result processing), more than SQLite takes to insert a
small row; a transfer received costs five inserts.  :class:`Prepared` keeps what the
compiler made of one INSERT for the engine's dialect (the SQL text, parameter order,
each parameter's bind processor and each returned column's result processor) and runs it
on the DBAPI cursor of the caller's connection, in the caller's transaction: the same SQL
with the same converted values as ``Connection.execute`` would send (the store's tests
run every insert through it, on SQLite and PostgreSQL).

Limits, checked when a dialect's form is first built: INSERT only, no expanding
parameters, and the rows give every column that has a Python-side default (it would not
be applied); a column left out is not inserted, as with ``Connection.execute``.  A
driver error is raised as SQLAlchemy's :class:`~sqlalchemy.exc.DBAPIError` subclass and a
value no bind processor takes (a naive datetime, an unknown state) as
:class:`~sqlalchemy.exc.StatementError`, as ``Connection.execute`` raises them.

Public API (within the store)::

    Prepared(statement, columns)
        .insert(connection, rows) -> list[tuple]     rows returned, in the order of rows
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Dialect, Insert
from sqlalchemy.exc import DBAPIError, StatementError
from sqlalchemy.sql.compiler import SQLCompiler

__all__ = ["Prepared"]

_Processor = Callable[[Any], Any] | None


@dataclass(frozen=True, slots=True)
class _Form:
    """One statement as compiled for one dialect."""

    sql: str
    names: tuple[str, ...]
    """Parameter names in the order of the placeholders."""
    positional: bool
    binds: tuple[_Processor, ...]
    results: tuple[_Processor, ...]
    """One per returned column (empty: the statement returns nothing)."""


class Prepared:
    """An INSERT of rows that give exactly ``columns``, compiled once per dialect."""

    def __init__(self, statement: Insert, columns: Sequence[str]) -> None:
        self.statement = statement
        self.columns = tuple(columns)
        self._forms: dict[str, _Form] = {}

    def insert(
        self, connection: Connection, rows: Sequence[Mapping[str, Any]]
    ) -> list[tuple[Any, ...]]:
        """Insert ``rows`` in the connection's transaction; the rows RETURNING gives,
        in the order of ``rows`` (empty without RETURNING)."""
        if not rows:
            return []
        dialect = connection.dialect
        form = self._forms.get(dialect.name) or self._compile(dialect)
        try:
            values = [_bound(form, row) for row in rows]
        except (TypeError, ValueError, LookupError) as error:  # as execute() reports them
            raise StatementError(str(error), form.sql, None, error) from error
        cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
        try:
            if not form.results:
                cursor.executemany(form.sql, values)
                return []
            returned: list[tuple[Any, ...]] = []
            for value in values:
                cursor.execute(form.sql, value)
                returned += (_converted(form, row) for row in cursor.fetchall())
            return returned
        except dialect.loaded_dbapi.Error as error:
            raise DBAPIError.instance(
                form.sql, values, error, dialect.loaded_dbapi.Error, dialect=dialect
            ) from error
        finally:
            cursor.close()

    def _compile(self, dialect: Dialect) -> _Form:
        # for_executemany: no RETURNING of the key unless the statement asks (PostgreSQL
        # would add one to a single-row insert).
        compiled = self.statement.compile(
            dialect=dialect, column_keys=list(self.columns), for_executemany=True
        )
        assert isinstance(compiled, SQLCompiler)
        into = f"INSERT INTO {self.statement.table}"
        if compiled.post_compile_params or compiled.literal_execute_params:
            raise ValueError(f"{into}: has expanding parameters, cannot be prepared")
        names = tuple(compiled.positiontup or ()) if compiled.positional else tuple(compiled.binds)
        missing = sorted(set(names) - set(self.columns))
        if missing:
            raise ValueError(
                f"{into}: the rows must give {', '.join(missing)} (column defaults are not applied)"
            )
        binds = tuple(
            compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect)
            for name in names
        )
        results = tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in compiled.effective_returning or ()
        )
        form = _Form(compiled.string, names, compiled.positional, binds, results)
        self._forms[dialect.name] = form
        return form


def _bound(form: _Form, row: Mapping[str, Any]) -> Sequence[Any] | dict[str, Any]:
    values = [
        row[name] if process is None else process(row[name])
        for name, process in zip(form.names, form.binds, strict=True)
    ]
    return values if form.positional else dict(zip(form.names, values, strict=True))


def _converted(form: _Form, row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(
        value if process is None else process(value)
        for value, process in zip(row, form.results, strict=True)
    )
