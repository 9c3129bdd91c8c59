"""Retention: deleting what the MTA has finished with, a batch at a time (``[retention]``).

Three kinds of rows grow with every message and are worth nothing after a while: a
queued message every recipient of which reached a final state (with its APDU file in the
spool), the duplicate-detection keys of what was received (:mod:`store.queue`), and the
audit log.  Each call here deletes at most ``limit`` of one kind, oldest first, inside
the caller's transaction (spool files go once it commits), so the daemon can prune in
short transactions between transfers.  Mailboxes belong to their users: not pruned here.

Public API::

    Pruner(session)
        .finished(before, limit) -> Pruned       .received(before, limit) -> int
        .audit(before, limit) -> int
    Pruned(messages, octets)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, Delete
from sqlalchemy.orm import Session

from store._sql import connection_of
from store.spool import spool_of
from store.sql import retention as sql

__all__ = ["Pruned", "Pruner"]


@dataclass(frozen=True, slots=True)
class Pruned:
    """Finished messages deleted in one batch."""

    messages: int
    octets: int
    """Their APDUs' sizes, summed."""


class Pruner:
    """Batch deletions of finished rows, in the caller's transaction."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def finished(self, before: datetime, limit: int) -> Pruned:
        """Delete at most ``limit`` messages whose every recipient reached a final state
        before ``before``, oldest first; their spool files go once the caller commits."""
        rows = connection_of(self.session).execute(
            sql.PRUNE_FINISHED, {"before": before, "limit": limit}
        )
        found = rows.all()
        spool = spool_of(self.session)
        if spool is not None:
            spool.discard_after_commit(self.session, (row.apdu_file for row in found))
        return Pruned(messages=len(found), octets=sum(row.size for row in found))

    def received(self, before: datetime, limit: int) -> int:
        """Delete at most ``limit`` duplicate-detection keys received before ``before``."""
        return self._count(sql.PRUNE_RECEIVED, before, limit)

    def audit(self, before: datetime, limit: int) -> int:
        """Delete at most ``limit`` audit records written before ``before``."""
        return self._count(sql.PRUNE_AUDIT, before, limit)

    def _count(self, statement: Delete, before: datetime, limit: int) -> int:
        result = connection_of(self.session).execute(statement, {"before": before, "limit": limit})
        return cast(CursorResult[Any], result).rowcount
