"""Statement helpers the repositories share (not public)."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, TypeAlias, TypeVar

from sqlalchemy import Connection, Executable, Row, Table
from sqlalchemy.dialects import postgresql, sqlite

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
) -> list[AnyRow]:
    """Insert ``rows``, skipping those whose unique ``key`` exists; ``returning`` of the new.

    ``INSERT ... ON CONFLICT DO NOTHING RETURNING``: atomic on both databases, also
    against a concurrent insert of the same key (PostgreSQL waits for the other
    transaction, then skips), so a duplicate never aborts the transaction it is in.
    """
    if not rows:
        return []
    statement = _insert_new(connection.dialect.name, model, key, returning)
    return list(connection.execute(statement, list(rows)))


@functools.cache
def _insert_new(
    dialect: str, model: type[Base], key: tuple[str, ...], returning: tuple[str, ...]
) -> Executable:
    target = table(model)
    columns = [target.c[name] for name in returning]
    if dialect == "postgresql":
        pg = postgresql.insert(target).on_conflict_do_nothing(index_elements=list(key))
        return pg.returning(*columns)
    if dialect == "sqlite":
        lite = sqlite.insert(target).on_conflict_do_nothing(index_elements=list(key))
        return lite.returning(*columns)
    raise NotImplementedError(f"the store supports SQLite and PostgreSQL, not {dialect}")
