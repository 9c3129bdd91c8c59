"""Fixtures: every store test runs on a fresh SQLite file and on PostgreSQL (in a schema
of its own: ``postgres_url`` in ``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from store.db import open_database


@pytest.fixture
def postgres_engine(postgres_url: str) -> Iterator[Engine]:
    """The store on PostgreSQL, in a schema of its own."""
    engine = open_database(postgres_url)
    yield engine
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """The store on a fresh SQLite file, then on PostgreSQL."""
    if request.param == "sqlite":
        sqlite = open_database(f"sqlite:///{tmp_path / 'store.db'}")
        yield sqlite
        sqlite.dispose()
    else:
        yield request.getfixturevalue("postgres_engine")
