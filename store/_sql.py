"""Helpers the repositories share: the session's connection, chunks of ids, Core tables
(not public)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final, TypeAlias, TypeVar

from sqlalchemy import Connection, Row, Table
from sqlalchemy.orm import Session, SessionTransaction

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

    The repositories run Core statements (:mod:`store.sql`): the ORM's per-row
    bookkeeping costs more than the disk flush of a small transaction, and they return
    plain values anyway.
    """
    mapped = model.__table__
    assert isinstance(mapped, Table)
    return mapped
