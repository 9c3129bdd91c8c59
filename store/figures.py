"""What the store holds, counted for monitoring (the daemon's Prometheus endpoint).

Read-only and cheap enough to run at every scrape: one grouped query over the
recipients (the index on their state serves it), one over those in flight per owner
(the process of the site holding them: ``x400ctl status`` shows it too), the quarantine's
totals, and the size
of what the store occupies: for SQLite its file, write-ahead log and APDU folder (read
from the file system, not the database), for PostgreSQL ``pg_database_size``.

Public API::

    queue_figures(session) -> tuple[QueueFigure, ...]
    QueueFigure(route, precedence, state, recipients, oldest)
    owner_figures(session) -> tuple[OwnerFigure, ...]   in flight per owner (process)
    OwnerFigure(owner, recipients, lease_until)
    database_bytes(session) -> int | None       PostgreSQL's size of the database
    file_bytes(url) -> dict[str, int]           SQLite: "database", "wal", "spool" octets
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import func, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from p1.mts.precedence import Precedence
from store._sql import connection_of
from store.db import spool_folder, sqlite_file
from store.models import RecipientState, from_utc
from store.sql.queue import RECIPIENTS

__all__ = [
    "OwnerFigure",
    "QueueFigure",
    "database_bytes",
    "file_bytes",
    "owner_figures",
    "queue_figures",
]

_r = RECIPIENTS.c


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueFigure:
    """Recipients of one route, precedence and state, and when the oldest arrived."""

    route: str
    precedence: Precedence
    state: RecipientState
    recipients: int
    oldest: datetime
    """Arrival time (UTC) of the oldest of them."""


_FIGURES = (
    select(_r.route, _r.precedence, _r.state, func.count(), func.min(_r.arrival_time))
    .group_by(_r.route, _r.precedence, _r.state)
    .order_by(_r.route, _r.precedence.desc(), _r.state)
)


def queue_figures(session: Session) -> tuple[QueueFigure, ...]:
    """Recipients per route, precedence and state, with the oldest one's arrival."""
    rows = connection_of(session).execute(_FIGURES)
    return tuple(
        QueueFigure(
            route=route,
            precedence=Precedence(precedence),
            state=RecipientState(state),
            recipients=int(count),
            oldest=from_utc(_as_datetime(oldest)),
        )
        for route, precedence, state, count, oldest in rows
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnerFigure:
    """Recipients in flight under one owner's claims (one process of the site)."""

    owner: str | None
    """``<MTA name>/<instance>``; None for claims made without an owner."""
    recipients: int
    lease_until: datetime | None
    """When the latest of its leases lapses unless renewed (UTC); None: not leased."""


_OWNERS = (
    select(_r.owner, func.count(), func.max(_r.lease_until))
    .where(_r.state == RecipientState.IN_FLIGHT)
    .group_by(_r.owner)
    .order_by(_r.owner)
)


def owner_figures(session: Session) -> tuple[OwnerFigure, ...]:
    """Recipients in flight per owner, each owner once, in the order of their names."""
    rows = connection_of(session).execute(_OWNERS)
    return tuple(
        OwnerFigure(
            owner=owner,
            recipients=int(count),
            lease_until=None if until is None else from_utc(_as_datetime(until)),
        )
        for owner, count, until in rows
    )


def _as_datetime(value: object) -> datetime:
    """MIN() over a SQLite column comes back as its stored text, not through the type."""
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def database_bytes(session: Session) -> int | None:
    """The size PostgreSQL gives the database (None on another dialect)."""
    connection = connection_of(session)
    if connection.dialect.name != "postgresql":
        return None
    size = connection.execute(text("SELECT pg_database_size(current_database())")).scalar()
    return int(size or 0)


def file_bytes(url: str) -> dict[str, int]:
    """For a SQLite database in a file: the octets of the file, its write-ahead log and
    its APDU folder (``{}`` for any other database).  A file that is not there counts 0."""
    file = sqlite_file(make_url(url))
    if file is None:
        return {}
    folder = spool_folder(url)
    return {
        "database": _size(file),
        "wal": _size(file.with_name(file.name + "-wal")),
        "spool": _folder_size(folder) if folder is not None else 0,
    }


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _folder_size(folder: Path) -> int:
    total = 0
    try:
        entries = os.scandir(folder)
    except OSError:
        return 0
    with entries:
        for entry in entries:
            try:
                total += entry.stat(follow_symlinks=False).st_size
            except OSError:  # removed meanwhile
                continue
    return total
