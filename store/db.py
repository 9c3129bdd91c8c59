"""Opening the store's database by URL: SQLite (the embedded default) or PostgreSQL.

``sqlite:////var/lib/aiox400/store.db`` or
``postgresql+psycopg://mta@db.example/aiox400``.  The schema is created when missing; a
database made by an earlier release gets the columns added since that may be empty
(``ALTER TABLE ... ADD COLUMN``); one that lacks any other column is refused.

A SQLite database file is created mode 0600, whatever the umask; SQLite gives its
``-wal`` and ``-shm`` files the database file's mode.

A SQLite database in a file keeps APDUs of 64 KiB and more in files of its spool folder,
``<database>-apdus`` (:mod:`store.spool`); :func:`sweep_spool` removes the files no row
names, when the MTA starts.

SQLite: every connection gets ``journal_mode = WAL`` (readers never block the writer),
``synchronous = FULL`` (a commit is on disk when it returns, also after a power cut),
``foreign_keys = ON`` and a busy timeout; and every transaction starts with
``BEGIN IMMEDIATE``, so it takes the write lock when it starts, never half way through
(where WAL would fail it at once, whatever the busy timeout, because its snapshot is
stale).  One process uses a SQLite queue; its transactions are serialised.

PostgreSQL: READ COMMITTED; the transit queue claims with ``FOR UPDATE SKIP LOCKED``, so
several MTA processes may share one queue.

The API is synchronous: the daemon calls it from a worker thread, one session (one
transaction) at a time per thread.  Nothing is committed except by :func:`transaction`,
so a caller that acknowledges after the ``with`` block acknowledges only what is on disk.

Durability.  A transaction is durable by default: its commit survives a power cut.  One
opened with ``durable=False`` is committed as atomically and is as safe against a crash
of the MTA process (SQLite's WAL, PostgreSQL's WAL buffers, are the kernel's or the
server's then), but a power cut or an operating-system crash may undo it: SQLite runs it
with ``synchronous = NORMAL``, PostgreSQL with ``synchronous_commit = off``.  A later
durable commit makes it durable too.  Use it only for work that is redone when lost and
that nothing outside has been told about.

Public API::

    open_database(url, *, create=True, busy_timeout=30.0, spool=True) -> Engine
    sweep_spool(engine) -> int
    transaction(engine, *, read_only=False, durable=True) -> context manager giving a Session;
                           commits on exit, rolls back on an exception
    StoreError, DatabaseUnavailableError
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Column, Engine, Table, create_engine, event, inspect, make_url, select, text
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
from sqlalchemy.orm import Session
from sqlalchemy.pool import ConnectionPoolEntry

from store._sql import table as core_table
from store.models import Base, MailboxContent, MailboxEntry, QuarantineEntry, QueuedMessage
from store.spool import SPOOL_OPTION, Spool, SpoolError

__all__ = [
    "DEFAULT_BUSY_TIMEOUT",
    "DatabaseUnavailableError",
    "StoreError",
    "open_database",
    "sweep_spool",
    "transaction",
]

DEFAULT_BUSY_TIMEOUT: Final = 30.0
"""Seconds a SQLite connection waits for another's write lock before failing."""

DATABASE_MODE: Final = 0o600
"""Mode of a SQLite database file this module creates (its -wal and -shm follow it)."""

_POSTGRES_CONNECT_TIMEOUT: Final = 10
"""Seconds to reach a PostgreSQL server, unless the URL says otherwise."""


_READ_ONLY: Final = "aiox400_read_only"
"""Execution option :func:`transaction` sets on a read-only transaction's engine."""
_LAZY: Final = "aiox400_not_durable"
"""Execution option :func:`transaction` sets on a transaction opened with durable=False."""
_SYNCHRONOUS: Final = "aiox400_synchronous"
"""Key of a SQLite connection's current ``synchronous`` level in its pool record's info
(so that a transaction sets it only when it differs from the last one's)."""


class StoreError(Exception):
    """Base of the store's own errors."""


class DatabaseUnavailableError(StoreError):
    """The database named by a URL cannot be opened (the message names the URL)."""


def open_database(
    url: str | URL,
    *,
    create: bool = True,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    spool: bool = True,
) -> Engine:
    """An engine for ``url``, connected once to prove it works, schema created if missing.

    ``spool``: a SQLite database in a file keeps large APDUs in its spool folder
    (module docstring); False keeps every APDU in its row.

    Raises :class:`DatabaseUnavailableError` naming the URL (password hidden) when the URL
    is malformed, its driver is missing, the database cannot be reached or its spool
    folder cannot be made.
    """
    parsed = _parse(url)
    shown = parsed.render_as_string(hide_password=True)
    if create:
        _create_private(sqlite_file(parsed))
    try:
        engine = _engine(parsed, busy_timeout)
    except (ArgumentError, NoSuchModuleError, ImportError) as exc:
        raise DatabaseUnavailableError(f"cannot open database {shown}: {exc}") from exc
    try:
        with engine.connect():
            pass
        if create:
            Base.metadata.create_all(engine)
            _add_missing_columns(engine, shown)
            _add_missing_indexes(engine)
        folder = spool_folder(parsed) if spool else None
        if folder is not None:
            engine = engine.execution_options(**{SPOOL_OPTION: _open_spool(folder, shown)})
    except DBAPIError as exc:
        engine.dispose()
        reason = str(exc.orig).strip() or type(exc.orig).__name__
        raise DatabaseUnavailableError(f"cannot open database {shown}: {reason}") from exc
    except DatabaseUnavailableError:
        engine.dispose()
        raise
    return engine


def spool_folder(url: str | URL) -> Path | None:
    """The spool folder of a SQLite database in a file (``<file>-apdus``), else None."""
    file = sqlite_file(_parse(url))
    return None if file is None else file.with_name(file.name + "-apdus")


def sqlite_file(url: URL) -> Path | None:
    """The file of a SQLite database in a file, else None."""
    name = url.database
    if url.get_backend_name() != "sqlite" or not name or name == ":memory:":
        return None
    if name.startswith("file:") or url.query.get("mode") == "memory":
        return None
    return Path(name)


def _create_private(file: Path | None) -> None:
    """Create ``file``, empty (SQLite takes it as a new database), mode
    :data:`DATABASE_MODE` whatever the umask; an existing file is left as it is.  A file
    that cannot be created is left to SQLite's open to report, naming the URL."""
    if file is None:
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        descriptor = os.open(file, flags, DATABASE_MODE)
    except OSError:
        return
    try:
        os.fchmod(descriptor, DATABASE_MODE)
    finally:
        os.close(descriptor)


def _open_spool(folder: Path, shown: str) -> Spool:
    try:
        return Spool(folder)
    except OSError as exc:
        raise DatabaseUnavailableError(
            f"cannot open database {shown}: cannot make its APDU folder {folder}: {exc.strerror}"
        ) from exc


def sweep_spool(engine: Engine) -> int:
    """Remove the spool files that no row names; how many (0 without a spool).

    For the start of the one process that owns the database: a file being written for
    a transaction not yet committed is named by no row either.
    """
    spool = engine.get_execution_options().get(SPOOL_OPTION)
    if not isinstance(spool, Spool):
        return 0
    named: set[str] = set()
    with engine.connect() as connection:
        for model in (QueuedMessage, MailboxContent, MailboxEntry, QuarantineEntry):
            column = core_table(model).c.apdu_file
            rows = connection.execute(select(column).where(column.is_not(None)))
            named.update(str(row[0]) for row in rows)
    try:
        return spool.sweep(named)
    except OSError as exc:
        raise SpoolError(f"cannot sweep APDU folder {spool.folder}: {exc.strerror}") from exc


def _add_missing_columns(engine: Engine, shown: str) -> None:
    """Bring a database made by an earlier release up to this schema: create_all adds
    missing tables, never missing columns.  Columns that may be empty are added; a
    missing column that may not is refused, naming it."""
    inspector = inspect(engine)
    for table in Base.metadata.sorted_tables:
        present = {column["name"] for column in inspector.get_columns(table.name)}
        missing = [column for column in table.columns if column.name not in present]
        refused = [column.name for column in missing if not column.nullable]
        if refused:
            raise DatabaseUnavailableError(
                f"cannot use database {shown}: its table {table.name} lacks "
                f"{', '.join(refused)}: it was made by an earlier release of aiox400, "
                "whose schema is not migrated; move it away to start afresh"
            )
        for column in missing:
            _add_column(engine, table, column)


def _add_missing_indexes(engine: Engine) -> None:
    """Create the indexes this schema has and a database made by an earlier release lacks
    (create_all makes a table's indexes only with the table)."""
    inspector = inspect(engine)
    for table in Base.metadata.sorted_tables:
        present = {index["name"] for index in inspector.get_indexes(table.name)}
        for index in sorted(table.indexes, key=lambda index: str(index.name)):
            if index.name not in present:
                index.create(engine)


def _add_column(engine: Engine, table: Table, column: Column[Any]) -> None:
    preparer = engine.dialect.identifier_preparer
    kind = column.type.compile(dialect=engine.dialect)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            f"ALTER TABLE {preparer.format_table(table)} "
            f"ADD COLUMN {preparer.format_column(column)} {kind}"
        )


@contextmanager
def transaction(
    engine: Engine, *, read_only: bool = False, durable: bool = True
) -> Iterator[Session]:
    """One transaction: commits when the block ends, rolls back if it raises.

    ``read_only``: the block only reads (a listing, counts); on SQLite it then begins
    DEFERRED and holds no write lock, so it does not hold up the MTA's writers.
    ``durable``: False for work that may be undone by a power cut (module docstring).
    """
    options = {_READ_ONLY: read_only, _LAZY: not durable}
    bind = engine.execution_options(**options) if read_only or not durable else engine
    with Session(bind, expire_on_commit=False) as session, session.begin():
        if not durable and engine.dialect.name == "postgresql":
            session.execute(text("SET LOCAL synchronous_commit = off"))
        yield session


def _parse(url: str | URL) -> URL:
    try:
        return make_url(url)
    except ArgumentError as exc:
        raise DatabaseUnavailableError(f"{str(url)!r} is not a database URL: {exc}") from exc


def _engine(url: URL, busy_timeout: float) -> Engine:
    backend = url.get_backend_name()
    if backend == "sqlite":
        engine = create_engine(url)
        _configure_sqlite(engine, busy_timeout)
        return engine
    connect_args: dict[str, Any] = {}
    if backend == "postgresql" and "connect_timeout" not in url.query:
        connect_args["connect_timeout"] = _POSTGRES_CONNECT_TIMEOUT
    return create_engine(url, pool_pre_ping=True, connect_args=connect_args)


def _configure_sqlite(engine: Engine, busy_timeout: float) -> None:
    milliseconds = int(busy_timeout * 1000)

    def on_connect(connection: Any, record: ConnectionPoolEntry) -> None:
        assert isinstance(connection, sqlite3.Connection)
        # sqlite3 would BEGIN (DEFERRED) only before DML; we BEGIN ourselves, below.
        connection.isolation_level = None
        for pragma in (
            f"busy_timeout = {milliseconds}",  # first: changing the journal mode may wait
            "journal_mode = WAL",
            "synchronous = FULL",
            "foreign_keys = ON",
        ):
            connection.execute(f"PRAGMA {pragma}").close()
        record.info[_SYNCHRONOUS] = "FULL"

    def on_begin(connection: Connection) -> None:
        options = connection.get_execution_options()
        # The flush level is the connection's, so each transaction sets its own.
        level = "NORMAL" if options.get(_LAZY, False) else "FULL"
        pooled = connection.connection  # its info stays with the DBAPI connection
        driver = pooled.driver_connection
        assert isinstance(driver, sqlite3.Connection)
        statements = (
            [] if pooled.info.get(_SYNCHRONOUS) == level else [f"PRAGMA synchronous = {level}"]
        )
        statements.append("BEGIN" if options.get(_READ_ONLY, False) else "BEGIN IMMEDIATE")
        # On the driver itself: a transaction starts for every batch of the daemon, and
        # SQLAlchemy's execution of two fixed statements costs more than SQLite's.
        for statement in statements:
            try:
                driver.execute(statement).close()
            except sqlite3.Error as error:  # raised as SQLAlchemy raises it ("locked")
                raise DBAPIError.instance(
                    statement, None, error, sqlite3.Error, dialect=engine.dialect
                ) from error
        pooled.info[_SYNCHRONOUS] = level

    event.listen(engine, "connect", on_connect)
    event.listen(engine, "begin", on_begin)
