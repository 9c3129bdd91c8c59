"""The queue's side of sending to a peer: claim, confirm, put back, give up (X.411 12.2.1.1).

Units the database thread runs (:class:`mta.database.Database`) for a transport's
connections.  A connection claims a few messages at a time (in flight, owned by this
process), transfers them, and marks them transferred once the peer has confirmed: only
then has responsibility passed (X.411 12.2.1.1).  What fails goes back: deferred with
backoff, or pending again at once when it was never attempted.  A message the peer can
never take (it cannot be down-graded for a 1984 MTA) is non-delivered, its report entering
the queue through intake (:meth:`mta.intake.units.IntakeUnits.report`).

Claims, confirmations and defers are not flushed on their own (``durable=False``): a
crash of the process keeps them, a power cut may undo them, and undone they are simply
redone (a message sent again is dropped by the peer as a duplicate).

Public API::

    OutboundUnits(engine, intake, *, owner=None, lease=None, floor=None)
        .claim_in(session, *, peer, precedences, now, limit, transferred, max_octets, mapped)
                    -> tuple[QueueEntry, ...]
        .transferred_in(session, *, entries, peer, now)
        .backlog(peer, precedences, now) -> int
        .put_back(*, transferred, failed, error, next_attempt_at, now, peer, unsent)
        .non_deliver(entry, report, *, why, now, peer, transferred) -> bool
    TransferQueue(db, units)      the same, awaited on the loop (mta.transport.OutboundQueue)
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from mta.database import Database
from mta.intake.units import IntakeUnits, outcome_for, subject_of
from p1.mts.precedence import Precedence
from p1.mts.report import NonDeliveryReport
from store import AuditEvent, AuditLog, QueueEntry, TransitQueue, transaction
from store.audit import AuditRecord

__all__ = ["OutboundUnits", "TransferQueue"]


class OutboundUnits:
    """The transfer side of one store, for one MTA (see the module docstring)."""

    def __init__(
        self,
        engine: Engine,
        intake: IntakeUnits,
        *,
        owner: str | None = None,
        lease: timedelta | None = None,
        floor: Callable[[str], Precedence | None] | None = None,
    ) -> None:
        self.engine = engine
        self.intake = intake
        self.owner = owner
        self.lease = lease
        self.floor = floor or _no_floor
        """The least precedence claimed for a peer (MINIMIZE, :mod:`mta.operator.minimize`)."""

    def claim_in(
        self,
        session: Session,
        *,
        peer: str,
        precedences: Collection[Precedence],
        now: datetime,
        limit: int = 1,
        transferred: Sequence[QueueEntry] = (),
        max_octets: int | None = None,
        mapped: bool = False,
    ) -> tuple[QueueEntry, ...]:
        """Claim up to ``limit`` messages for ``peer`` at these precedences (most urgent,
        oldest first), first marking ``transferred`` as :meth:`transferred_in` does: a
        connection's next claim commits with its last confirmations (one transaction per
        claim instead of one per message).
        ``max_octets``, ``mapped``: see :meth:`store.queue.TransitQueue.claim_next`."""
        if transferred:
            self.transferred_in(session, entries=transferred, peer=peer, now=now)
        return TransitQueue(session).claim_next(
            peer,
            precedences,
            now,
            limit=limit,
            owner=self.owner,
            lease=self.lease,
            max_octets=max_octets,
            floor=self.floor(peer),
            mapped=mapped,
        )

    def backlog(self, peer: str, precedences: Collection[Precedence], now: datetime) -> int:
        """Messages due for ``peer`` at these precedences."""
        with transaction(self.engine, read_only=True) as session:
            return TransitQueue(session).backlog(peer, precedences, now, floor=self.floor(peer))

    def transferred_in(
        self, session: Session, *, entries: Sequence[QueueEntry], peer: str, now: datetime
    ) -> None:
        """The peer confirmed the transfer of ``entries``: it is responsible now."""
        TransitQueue(session).mark_transferred(
            [i for entry in entries for i in entry.recipient_ids], now
        )
        AuditLog(session).record_many(
            AuditRecord(
                at=now,
                event=AuditEvent.TRANSFERRED,
                mts_identifier=entry.mts_identifier,
                peer=peer,
                detail=f"{len(entry.recipients)} recipient(s)",
            )
            for entry in entries
        )

    def put_back(
        self,
        *,
        transferred: Sequence[QueueEntry],
        failed: QueueEntry | None,
        error: str,
        next_attempt_at: datetime | None,
        now: datetime,
        peer: str = "",
        unsent: Sequence[QueueEntry] = (),
    ) -> None:
        """A connection failed while transferring ``failed``: mark what the peer confirmed
        before, defer ``failed`` until ``next_attempt_at`` (None: retry it at once, its
        attempt not counted, :meth:`store.queue.TransitQueue.retry_at_once`), and make
        ``unsent`` (claimed with it, never attempted) pending again at once.  ``failed``
        None: the connection failed before any of its claim was attempted."""
        with transaction(self.engine, durable=False) as session:
            if transferred:
                self.transferred_in(session, entries=transferred, peer=peer, now=now)
            queue = TransitQueue(session)
            if failed is not None:
                self._defer(queue, failed, error, next_attempt_at, now)
                AuditLog(session).record(
                    AuditEvent.DEFERRED, now, mts_identifier=failed.mts_identifier, detail=error
                )
            queue.unclaim([i for entry in unsent for i in entry.recipient_ids], now)

    def non_deliver(
        self,
        entry: QueueEntry,
        report: NonDeliveryReport | None,
        *,
        why: str,
        now: datetime,
        peer: str,
        transferred: Sequence[QueueEntry] = (),
    ) -> bool:
        """The claimed ``entry`` can never be transferred to ``peer`` (it cannot be
        down-graded for a 1984 MTA, say): its recipients fail with ``report``, reported
        to the originator when asked (None, and for a report: no report), in the same
        transaction that marks ``transferred`` (confirmed before it) done.  Whether a
        report was queued."""
        with transaction(self.engine, durable=False) as session:
            if transferred:
                self.transferred_in(session, entries=transferred, peer=peer, now=now)
            TransitQueue(session).fail(entry.recipient_ids, error=why, now=now)
            journal: list[AuditRecord] = []
            subject = subject_of(entry)
            queued = False
            if subject is not None and report is not None:
                outcomes = [outcome_for(r, subject, report) for r in entry.recipients]
                queued = self.intake.report(
                    session, subject, outcomes, entry.arrival_time, now, journal
                )
            else:
                journal.append(
                    AuditRecord(
                        at=now,
                        event=AuditEvent.FAILED,
                        mts_identifier=entry.mts_identifier,
                        peer=peer,
                        detail=why,
                    )
                )
            AuditLog(session).record_many(journal)
        return queued

    @staticmethod
    def _defer(
        queue: TransitQueue,
        failed: QueueEntry,
        error: str,
        next_attempt_at: datetime | None,
        now: datetime,
    ) -> None:
        ids = failed.recipient_ids
        if next_attempt_at is None:
            queue.retry_at_once(ids, error=error, now=now)
        else:
            queue.defer(ids, next_attempt_at=next_attempt_at, error=error, now=now)


class TransferQueue:
    """The loop's side of :class:`OutboundUnits`: what a transport's channels ask of the
    queue (:class:`mta.transport.OutboundQueue`), each call a unit of the database thread."""

    def __init__(self, db: Database, units: OutboundUnits) -> None:
        self.db = db
        self.units = units

    def claim(
        self,
        peer: str,
        precedences: Collection[Precedence],
        *,
        limit: int,
        transferred: Sequence[QueueEntry],
        max_octets: int | None,
        urgent: bool,
        mapped: bool = False,
    ) -> asyncio.Future[tuple[QueueEntry, ...]]:
        """Queue a group-committed claim (a cancelled caller does not stop it)."""
        unit = functools.partial(
            self.units.claim_in,
            peer=peer,
            precedences=precedences,
            now=datetime.now(UTC),
            limit=limit,
            transferred=transferred,
            max_octets=max_octets,
            mapped=mapped,
        )
        return self.db.enqueue(unit, durable=False, urgent=urgent)

    async def backlog(self, peer: str, precedences: Collection[Precedence]) -> int:
        return await self.db.run(self.units.backlog, peer, precedences, datetime.now(UTC))

    async def put_back(
        self,
        *,
        peer: str,
        transferred: Sequence[QueueEntry],
        failed: QueueEntry | None,
        error: str,
        next_attempt_at: datetime | None,
        unsent: Sequence[QueueEntry],
    ) -> None:
        await self.db.run(
            functools.partial(
                self.units.put_back,
                transferred=transferred,
                failed=failed,
                error=error,
                next_attempt_at=next_attempt_at,
                now=datetime.now(UTC),
                peer=peer,
                unsent=unsent,
            )
        )

    async def non_deliver(
        self,
        entry: QueueEntry,
        report: NonDeliveryReport | None,
        *,
        why: str,
        peer: str,
        transferred: Sequence[QueueEntry],
    ) -> bool:
        return await self.db.run(
            functools.partial(
                self.units.non_deliver,
                entry,
                report,
                why=why,
                now=datetime.now(UTC),
                peer=peer,
                transferred=transferred,
            )
        )


def _no_floor(peer: str) -> Precedence | None:
    return None
