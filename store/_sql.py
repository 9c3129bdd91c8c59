"""Statement helpers the repositories share (not public)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, TypeAlias, TypeVar

from sqlalchemy import Connection, Dialect, Insert, Row, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, SessionTransaction

from store._prepared import Prepared
from store._prepared import warm as warm_prepared
from store.models import Base

_T = TypeVar("_T")

AnyRow: TypeAlias = Row[*tuple[Any, ...]]
"""A result row of any shape."""

CHUNK: Final = 500
"""Ids per ``IN (...)`` list: far below SQLite's and PostgreSQL's parameter limits."""


def chunks(items: Sequence[_T], size: int = CHUNK) -> Iterator[Sequence[_T]]:
    """``items`` in slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def connection_of(session: Session) -> Connection:
    """``session.connection()``, asked of the session once per transaction or savepoint.

    The session's own lookup costs as much as a small insert, and a transfer received
    makes several.  A savepoint is sent to the database only when its connection is first
    asked for, so a new savepoint asks again.
    """
    current = session.get_nested_transaction() or session.get_transaction()
    known: tuple[SessionTransaction, Connection] | None = session.info.get(_CONNECTION)
    if current is not None and known is not None and known[0] is current:
        return known[1]
    connection = session.connection()
    if current is not None:
        session.info[_CONNECTION] = (current, connection)
    return connection


_CONNECTION: Final = "aiox400.connection"
"""Where :func:`connection_of` keeps (transaction, its connection) in ``session.info``."""


def table(model: type[Base]) -> Table:
    """The Core table of a model.

    The repositories run Core statements: the ORM's per-row bookkeeping costs more than
    the disk flush of a small transaction, and they return plain values anyway.
    """
    mapped = model.__table__
    assert isinstance(mapped, Table)
    return mapped


class InsertNew:
    """``INSERT ... ON CONFLICT (key) DO NOTHING RETURNING``: insert rows, skipping those
    whose unique ``key`` exists; atomic on both databases, also against a concurrent
    insert of the same key (PostgreSQL waits for the other transaction, then skips), so
    a duplicate never aborts the transaction it is in.

    Every row gives the ``given`` columns (and only those are inserted); what returns
    are tuples in ``returning`` order.  The statement differs per dialect, so it is
    built per dialect, once (:func:`warm` builds it for the dialect in use).
    """

    def __init__(
        self,
        model: type[Base],
        *,
        key: tuple[str, ...],
        returning: tuple[str, ...],
        given: tuple[str, ...],
    ) -> None:
        self.model, self.key, self.returning, self.given = model, key, returning, given
        self._given = frozenset(given)
        self._prepared: dict[str, Prepared] = {}
        _INSERTS.append(self)

    def insert(
        self, connection: Connection, rows: Sequence[Mapping[str, Any]]
    ) -> list[tuple[Any, ...]]:
        """The rows inserted (those already there are skipped), as ``returning`` says.

        Raises ValueError for a column the rows give that is not in ``given`` (it would
        not be inserted); one they lack is a StatementError that names it.
        """
        if not rows:
            return []
        extra = rows[0].keys() - self._given
        if extra:
            raise ValueError(f"{self.model.__name__} rows give {sorted(extra)}, not inserted")
        return self.prepared(connection.dialect.name).insert(connection, rows)

    def prepared(self, dialect: str) -> Prepared:
        """The statement for ``dialect``, built on first use."""
        found = self._prepared.get(dialect)
        if found is None:
            found = self._prepared[dialect] = self._build(dialect)
        return found

    def _build(self, dialect: str) -> Prepared:
        target = table(self.model)
        columns = [target.c[name] for name in self.returning]
        statement: Insert
        if dialect == "postgresql":
            pg = postgresql.insert(target).on_conflict_do_nothing(index_elements=list(self.key))
            statement = pg.returning(*columns)
        elif dialect == "sqlite":
            lite = sqlite.insert(target).on_conflict_do_nothing(index_elements=list(self.key))
            statement = lite.returning(*columns)
        else:
            raise NotImplementedError(f"the store supports SQLite and PostgreSQL, not {dialect}")
        return Prepared(statement, self.given, dialect=dialect)


_INSERTS: Final[list[InsertNew]] = []


def warm(dialect: Dialect) -> int:
    """Build every statement of the store for ``dialect`` now (module docstring of
    :mod:`store._prepared`); how many forms were built."""
    for insert in _INSERTS:
        insert.prepared(dialect.name)
    return warm_prepared(dialect)
