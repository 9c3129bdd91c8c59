"""Fixtures: every store test runs on a fresh SQLite file and on PostgreSQL.

PostgreSQL: ``AIOX400_TEST_POSTGRES_URL`` (default
``postgresql+psycopg://postgres@127.0.0.1:5432/test``); each test gets its own schema,
dropped afterwards, so tests never see each other's rows.  When the server cannot be
reached the PostgreSQL runs skip, saying why; with ``AIOX400_REQUIRE_POSTGRES=1`` they
fail instead (CI must run them).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, make_url

from store.db import DatabaseUnavailableError, open_database

POSTGRES_URL = os.environ.get(
    "AIOX400_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


@pytest.fixture(scope="session")
def postgres_admin() -> Iterator[Engine]:
    """An engine on the test database's default schema, for creating test schemas."""
    try:
        admin = open_database(POSTGRES_URL, create=False)
    except DatabaseUnavailableError as exc:
        why = f"PostgreSQL is not reachable ({exc}); set AIOX400_TEST_POSTGRES_URL"
        if os.environ.get("AIOX400_REQUIRE_POSTGRES") == "1":
            pytest.fail(why)  # CI must run the PostgreSQL tests, never skip them
        pytest.skip(why)
    yield admin
    admin.dispose()


@pytest.fixture
def postgres_url(postgres_admin: Engine) -> Iterator[str]:
    """The URL of a fresh, empty schema (search_path) in the test database."""
    schema = f"aiox400_test_{uuid.uuid4().hex[:12]}"
    with postgres_admin.begin() as connection:
        connection.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    url = make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    yield url.render_as_string(hide_password=False)
    with postgres_admin.begin() as connection:
        connection.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')


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
