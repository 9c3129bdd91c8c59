"""The audit log: what happened to which message, when, with which peer.

Entries are written in the same transaction as the change they record, so the log says
exactly what was committed (an entry for an acknowledgement that never happened cannot
exist).  Time is passed in.

Public API::

    AuditLog(session)
        .record(event, now, *, mts_identifier=None, recipient=None, peer=None, detail=None)
        .record_many(records)
        .recent(limit=100, *, mts_identifier=None) -> tuple[AuditRecord, ...]  (newest first)
        .history(mts_identifier, *, limit=10000) -> tuple[AuditRecord, ...]     (oldest first)
        .messages(*, recipient=None, since=None, limit=1000) -> tuple[Seen, ...]
        .purge(before) -> int
    AuditEvent, AuditRecord, Seen
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, func, select
from sqlalchemy.orm import Session

from store._sql import connection_of
from store.models import AuditEntry
from store.sql import audit as sql

__all__ = ["AuditEvent", "AuditLog", "AuditRecord", "Seen"]


class AuditEvent(enum.StrEnum):
    """What happened (past tense, as the log reads)."""

    SUBMITTED = "submitted"
    """Accepted from a local user and queued."""
    RECEIVED = "received"
    """Taken from a peer MTA and queued."""
    DUPLICATE = "duplicate"
    """A transfer of something already received: acknowledged, not queued again."""
    TRANSFERRED = "transferred"
    DELIVERED = "delivered"
    DEFERRED = "deferred"
    FAILED = "failed"
    EXPIRED = "expired"
    HELD = "held"
    RELEASED = "released"
    DELETED = "deleted"
    """Removed from the queue by the operator (``x400ctl delete``), without a report."""
    NON_DELIVERED = "non-delivered"
    """Non-delivered by the operator (``x400ctl non-deliver``), with a report to the
    originator when asked for; ``detail`` holds the operator's reason."""
    RECOVERED = "recovered"
    """Back to pending after a restart found it in flight."""
    REPORTED = "reported"
    """A delivery or non-delivery report was generated."""
    LOOP = "loop"
    """Refused: the trace shows it passed this MTA before."""
    MINIMIZED = "minimized"
    """The operator changed MINIMIZE (``x400ctl minimize``): ``detail`` says what is in
    force, ``peer`` whose it was (none: switch-wide)."""
    LABEL_CHECKED = "label-checked"
    """A recipient's security label checked against the clearance of its mailbox, or of
    the link to ``peer`` (X.411 8.5.9): ``detail`` says allowed or refused, the label's
    display marking and why."""
    QUARANTINED = "quarantined"
    """Taken from a peer MTA although it cannot be handled: kept in the quarantine
    (:mod:`store.quarantine`), not delivered."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditRecord:
    """One audit entry."""

    at: datetime
    event: AuditEvent
    mts_identifier: str | None = None
    recipient: str | None = None
    peer: str | None = None
    detail: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """A message the audit log has entries of (``x400ctl track``'s search)."""

    mts_identifier: str
    first: datetime
    """Its first entry that met the search's conditions."""
    last: datetime
    """Its last such entry."""


class AuditLog:
    """The audit log, in the caller's session (the caller commits)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def record(
        self,
        event: AuditEvent,
        now: datetime,
        *,
        mts_identifier: str | None = None,
        recipient: str | None = None,
        peer: str | None = None,
        detail: str | None = None,
    ) -> None:
        """Add one entry."""
        self.record_many(
            (
                AuditRecord(
                    at=now,
                    event=event,
                    mts_identifier=mts_identifier,
                    recipient=recipient,
                    peer=peer,
                    detail=detail,
                ),
            )
        )

    def record_many(self, records: Iterable[AuditRecord]) -> None:
        """Add several entries with one statement."""
        rows = [
            {
                "at": r.at,
                "event": str(r.event),
                "mts_identifier": r.mts_identifier,
                "recipient": r.recipient,
                "peer": r.peer,
                "detail": r.detail,
            }
            for r in records
        ]
        if rows:
            sql.INSERT.insert(connection_of(self.session), rows)

    def recent(
        self, limit: int = 100, *, mts_identifier: str | None = None
    ) -> tuple[AuditRecord, ...]:
        """The latest entries, newest first; only one message's when ``mts_identifier``."""
        statement = sql.recent(limit, mts_identifier)
        return tuple(_record(entry) for entry in self.session.scalars(statement))

    def history(self, mts_identifier: str, *, limit: int = 10_000) -> tuple[AuditRecord, ...]:
        """The first ``limit`` entries of message ``mts_identifier``, oldest first (in
        the order they were recorded when several share a time)."""
        statement = (
            select(AuditEntry)
            .where(AuditEntry.mts_identifier == mts_identifier)
            .order_by(AuditEntry.at, AuditEntry.id)
            .limit(limit)
        )
        return tuple(_record(entry) for entry in self.session.scalars(statement))

    def messages(
        self, *, recipient: str | None = None, since: datetime | None = None, limit: int = 1000
    ) -> tuple[Seen, ...]:
        """The messages with an entry naming ``recipient`` and recorded at or after
        ``since`` (each condition given), by their first such entry, at most ``limit``."""
        first = func.min(AuditEntry.at)
        statement = select(AuditEntry.mts_identifier, first, func.max(AuditEntry.at)).where(
            AuditEntry.mts_identifier.is_not(None)
        )
        if recipient is not None:
            statement = statement.where(AuditEntry.recipient == recipient)
        if since is not None:
            statement = statement.where(AuditEntry.at >= since)
        statement = (
            statement.group_by(AuditEntry.mts_identifier)
            .order_by(first, AuditEntry.mts_identifier)
            .limit(limit)
        )
        return tuple(
            Seen(mts_identifier=str(identifier), first=earliest, last=latest)
            for identifier, earliest, latest in self.session.execute(statement)
        )

    def purge(self, before: datetime) -> int:
        """Delete entries older than ``before``; how many."""
        result = self.session.execute(sql.purge(before))
        return cast(CursorResult[Any], result).rowcount


def _record(entry: AuditEntry) -> AuditRecord:
    return AuditRecord(
        at=entry.at,
        event=AuditEvent(entry.event),
        mts_identifier=entry.mts_identifier,
        recipient=entry.recipient,
        peer=entry.peer,
        detail=entry.detail,
    )
