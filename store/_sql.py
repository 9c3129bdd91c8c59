"""Statement helpers the repositories share (not public)."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, TypeAlias, TypeVar

from sqlalchemy import Connection, Insert, Row, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, SessionTransaction

from store._prepared import Prepared
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


def insert_new(
    connection: Connection,
    model: type[Base],
    rows: Sequence[Mapping[str, Any]],
    key: tuple[str, ...],
    returning: tuple[str, ...],
) -> list[tuple[Any, ...]]:
    """Insert ``rows``, skipping those whose unique ``key`` exists; ``returning`` of the new.

    ``INSERT ... ON CONFLICT DO NOTHING RETURNING``: atomic on both databases, also
    against a concurrent insert of the same key (PostgreSQL waits for the other
    transaction, then skips), so a duplicate never aborts the transaction it is in.
    Every row gives the same columns; what returns are tuples in ``returning`` order.
    """
    if not rows:
        return []
    prepared = _insert_new(connection.dialect.name, model, key, returning, tuple(rows[0]))
    return prepared.insert(connection, rows)


@functools.cache
def _insert_new(
    dialect: str,
    model: type[Base],
    key: tuple[str, ...],
    returning: tuple[str, ...],
    given: tuple[str, ...],
) -> Prepared:
    target = table(model)
    columns = [target.c[name] for name in returning]
    statement: Insert
    if dialect == "postgresql":
        pg = postgresql.insert(target).on_conflict_do_nothing(index_elements=list(key))
        statement = pg.returning(*columns)
    elif dialect == "sqlite":
        lite = sqlite.insert(target).on_conflict_do_nothing(index_elements=list(key))
        statement = lite.returning(*columns)
    else:
        raise NotImplementedError(f"the store supports SQLite and PostgreSQL, not {dialect}")
    return Prepared(statement, given)
