"""Hypothesis profiles for the whole suite, and the PostgreSQL fixtures shared by the store
and the daemon tests.

Hypothesis: ``AIOX400_HYPOTHESIS_PROFILE`` picks the profile, ``dev`` unless set:

- ``dev``: a quarter of the examples, random each run (failures are kept in
  ``.hypothesis/`` and tried first next time), for a quick edit-test loop;
- ``ci``: the full number of examples, derandomized (each test's examples follow from its
  own code, no example database), so that a CI run can be repeated exactly.

Neither has a deadline: a slow machine must not turn a correct example into a failure.  A
test whose examples cost much more or much less than most sets its own number relative to
the profile (:func:`tests.profiles.examples`), never as a constant.

PostgreSQL: ``AIOX400_TEST_POSTGRES_URL`` (default
``postgresql+psycopg://postgres@127.0.0.1:5432/test``); each test gets schemas of its own,
dropped afterwards, so tests never see each other's rows.  When the server cannot be
reached the PostgreSQL runs skip, saying why; with ``AIOX400_REQUIRE_POSTGRES=1`` they
fail instead (CI must run them).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import pytest
from hypothesis import settings
from sqlalchemy import Engine, make_url

from store.db import DatabaseUnavailableError, open_database

settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("AIOX400_HYPOTHESIS_PROFILE", "dev"))

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
def postgres_schemas(postgres_admin: Engine) -> Iterator[Callable[[], str]]:
    """Gives the URL of a fresh, empty schema (search_path) in the test database, as
    often as called; they are all dropped after the test."""
    made: list[str] = []

    def new() -> str:
        schema = f"aiox400_test_{uuid.uuid4().hex[:12]}"
        with postgres_admin.begin() as connection:
            connection.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
        made.append(schema)
        url = make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={schema}"})
        return url.render_as_string(hide_password=False)

    yield new
    with postgres_admin.begin() as connection:
        for schema in made:
            connection.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def postgres_url(postgres_schemas: Callable[[], str]) -> str:
    """The URL of a fresh, empty schema in the test database."""
    return postgres_schemas()
