"""The transit queue: MTS-APDUs this MTA is responsible for, per recipient.

Modelled on Postfix's queue manager (``qmgr``): an APDU is visible to the queue manager
only once committed; each recipient is pending, in flight (claimed by one connection or
by the local deliverer), then transferred, delivered or failed; a deferred recipient is
pending again with a later ``next_attempt_at``; on restart, what was in flight goes back
to pending (Postfix's active -> incoming), and the peer's duplicate detection (the
``received`` keys) keeps the re-sent copy from being delivered twice.

Claims are leased: a claim names its owner (one process) and when it lapses; the owner
renews all its claims at once while it lives (:meth:`TransitQueue.renew_claims`), and
any process of the site takes back those whose lease lapsed
(:meth:`TransitQueue.take_back_lapsed`): a process that died or stalled holds nothing
for longer than its lease.  A process recovers only its own claims at start and stop.

Service order within a route: highest precedence first, then oldest arrival; only
precedences the connection slot admits; only recipients whose next attempt is due.  On
PostgreSQL the claim locks with ``FOR UPDATE SKIP LOCKED``, so several MTA processes may
share one queue and two claims never return the same recipient; on SQLite one process
owns the queue and the claim is a plain (``BEGIN IMMEDIATE``) transaction.

A claim returns whole messages with every due recipient they have on that route, so one
transfer carries them all; only when another process already holds some of those
recipients does a message go in two transfers, each with its own recipients (X.411
allows it: the transfer sets the responsibility bit for the claimed recipients only).
Attempts are counted at the claim, so a message that keeps crashing the MTA shows; the
count is taken back for a claim never attempted (:meth:`TransitQueue.unclaim`) and for a
transfer retried at once because its connection had gone stale while idle
(:meth:`TransitQueue.retry_at_once`), so it counts the real tries that the retry backoff
grows with.

Duplicates: every enqueued (MTS identifier, recipient) is kept in ``received``, also
after the message itself is purged, until :meth:`TransitQueue.forget_received` (the
duplicate-detection window); a recipient already there is reported as a duplicate and not
queued.  Check the trace for loops before enqueueing: a looping message comes back with
the same key and would be taken for a duplicate.

Every method runs inside the caller's transaction (see :func:`store.db.transaction`) and
commits nothing: the caller commits, then acknowledges.  Batch methods exist so that the
daemon can commit many messages with one disk flush.  Time is always passed in.

Public API::

    TransitQueue(session)
        .enqueue(message, now) -> Enqueued
        .enqueue_many(messages, now, *, delivered_route=None) -> tuple[Enqueued, ...]
        .claim_next(route, precedences, now, *, limit=1, owner=None, lease=None,
                    max_octets=None, floor=None) -> tuple[QueueEntry, ...]
        .mark_transferred(recipient_ids, now) -> int
        .mark_delivered(recipient_ids, now) -> int
        .defer(recipient_ids, *, next_attempt_at, error, now) -> int
        .unclaim(recipient_ids, now) -> int
        .retry_at_once(recipient_ids, *, error, now) -> int
        .fail(recipient_ids, *, error, now) -> int
        .hold(message_ids, now) -> int          .release(message_ids, now) -> int
        .hold_selected(selection, now) / .release_selected(selection, now)
            -> tuple[SelectedRecipient, ...]
        .delete_selected(selection) -> Deletion
        .fail_selected(selection, *, error, now) -> Failure
        .flush(route, now) -> int
        .shape(now, edges) -> tuple[ShapeCount, ...]
        .expire_due(now, *, limit=1000) -> tuple[QueueEntry, ...]
        .recover_in_flight(now, *, owner=None) -> int
        .renew_claims(owner, until) -> int     .take_back_lapsed(now) -> int
        .counts() -> tuple[QueueCount, ...]
        .waiting(limit=100) -> tuple[WaitingRecipient, ...]
        .matching(*, recipient=None, originator=None, since=None, limit=1000)
            -> tuple[WaitingRecipient, ...]    (x400ctl track's search)
        .backlog(route, precedences, now, *, floor=None) -> int
        .next_due(route, precedences) -> datetime | None
        .get(message_id) -> QueueEntry | None
        .subject_precedence(mts_identifier) -> Precedence | None
        .is_probe(mts_identifier) -> bool   (a report on it is a probe report)
        .purge_finished(before) -> int          .forget_received(before) -> int
        .record_received(mts_identifier, recipients, origin_peer, now) -> set[str]
    NewMessage, NewRecipient, Enqueued, QueueEntry, QueueRecipient, QueueCount
    Selection, SelectedRecipient, Deletion, Failure, ShapeCount
    EXPIRED_ERROR
"""

from __future__ import annotations

import mmap
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    CursorResult,
    Executable,
    and_,
    case,
    delete,
    false,
    func,
    literal,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.orm import Session

from p1.mts.precedence import Precedence
from store._sql import chunks, connection_of
from store.models import ApduKind, RecipientState, UtcDateTime
from store.spool import apdu_columns, as_bytes, spool_of, stored_apdu
from store.sql import queue as sql
from store.sql import received
from store.sql.queue import EXPIRED_ERROR
from store.sql.statement import Row, Statement

__all__ = [
    "EXPIRED_ERROR",
    "Deletion",
    "Enqueued",
    "Failure",
    "NewMessage",
    "NewRecipient",
    "QueueCount",
    "QueueEntry",
    "QueueRecipient",
    "SelectedRecipient",
    "Selection",
    "ShapeCount",
    "TransitQueue",
    "WaitingRecipient",
]

_S = RecipientState


# --- values in and out -----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class NewRecipient:
    """A recipient to queue, with the route the router chose for it."""

    recipient: str
    """Canonical O/R name."""
    route: str
    """:data:`store.models.LOCAL_ROUTE` or a peer MTA's name."""
    shown: str | None = None
    """The O/R name as given (its letters' case kept), for display; None: ``recipient``."""
    report_request: int = 0
    """per-recipient-indicators bits, bit n as ``1 << n``."""
    recipient_number: int | None = None
    """originally-specified-recipient-number."""

    @property
    def display(self) -> str:
        """The O/R name to show: as given, else canonical."""
        return self.shown or self.recipient


@dataclass(frozen=True, slots=True, kw_only=True)
class NewMessage:
    """An MTS-APDU to queue, with what the router read from its envelope."""

    mts_identifier: str
    """:attr:`p1.mts.envelope.MTSIdentifier.text`."""
    kind: ApduKind
    apdu: bytes
    precedence: Precedence
    originator: str
    """Canonical O/R name."""
    recipients: tuple[NewRecipient, ...]
    """The recipients this MTA takes responsibility for (at least one)."""
    expiry_time: datetime | None = None
    not_before: datetime | None = None
    """First attempt not before this time (deferred delivery); None: at once."""
    origin_peer: str | None = None
    envelope_recipients: int | None = None
    """How many recipients the envelope names when each has the responsibility bit set
    (None otherwise, or unknown): see :attr:`QueueEntry.envelope_recipients`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Enqueued:
    """What :meth:`TransitQueue.enqueue` did with one message."""

    message_id: int | None
    """None when every recipient was a duplicate (nothing was queued)."""
    queued: tuple[str, ...]
    duplicates: tuple[str, ...]
    """Recipients already received under this MTS identifier: not queued again."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueRecipient:
    """One queued recipient as the queue manager sees it."""

    id: int
    recipient: str
    route: str
    state: RecipientState
    attempts: int
    next_attempt_at: datetime
    last_error: str | None
    report_request: int
    recipient_number: int | None
    shown: str | None = None
    """The O/R name as given, for display; None: ``recipient``."""

    @property
    def display(self) -> str:
        """The O/R name to show: as given, else canonical."""
        return self.shown or self.recipient


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueEntry:
    """A queued APDU with (some of) its recipients: one transfer's worth when claimed."""

    message_id: int
    mts_identifier: str
    kind: ApduKind
    precedence: Precedence
    originator: str
    apdu: bytes | mmap.mmap
    """The MTS-APDU; a claim made to send (``mapped``) gives a large spooled one as a
    read-only mapping of its file (:meth:`store.spool.Spool.mapped`)."""
    arrival_time: datetime
    expiry_time: datetime | None
    origin_peer: str | None
    recipients: tuple[QueueRecipient, ...]
    envelope_recipients: int | None = None
    """How many recipients the envelope names when each has the responsibility bit set,
    else None: an entry with that many distinct recipient numbers is the whole envelope,
    every bit already set, so its APDU is transferred as queued."""

    @property
    def recipient_ids(self) -> tuple[int, ...]:
        """The ids to pass to mark_transferred, defer, fail..."""
        return tuple(r.id for r in self.recipients)

    @property
    def apdu_bytes(self) -> bytes:
        """The MTS-APDU as bytes, for what decodes or stores it: a mapped one is copied
        (what sends it sends the mapping)."""
        return as_bytes(self.apdu)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueCount:
    """How many recipients of one route, precedence and state (``qshape``)."""

    route: str
    precedence: Precedence
    state: RecipientState
    recipients: int


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitingRecipient:
    """One recipient in the queue with its message (``x400ctl queue``: those the MTA
    still owes something; ``x400ctl track``: any)."""

    message_id: int
    """What ``hold`` and ``release`` take."""
    mts_identifier: str
    kind: ApduKind
    precedence: Precedence
    arrival_time: datetime
    recipient: str
    """The O/R name as the envelope gave it (canonical for a row of an earlier release)."""
    route: str
    state: RecipientState
    attempts: int
    next_attempt_at: datetime
    last_error: str | None
    size: int = 0
    """Octets of the message's APDU."""
    originator: str = ""
    """Canonical O/R name of the message's originator (a report's: its destination)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Selection:
    """Which waiting recipients an operator's command acts on: those that meet every
    condition given.  A message is named by its id or its MTS identifier (either one of
    those listed); ``everything`` with no condition selects every waiting recipient."""

    message_ids: tuple[int, ...] = ()
    mts_identifiers: tuple[str, ...] = ()
    route: str | None = None
    """A peer's name, or :data:`store.models.LOCAL_ROUTE`."""
    precedence: Precedence | None = None
    everything: bool = False

    @property
    def empty(self) -> bool:
        """Whether it names nothing at all (a command refuses to act on that)."""
        named = self.message_ids or self.mts_identifiers
        return not (named or self.everything) and self.route is None and self.precedence is None


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectedRecipient:
    """A recipient an operator's command changed (or could not change), with its message."""

    message_id: int
    mts_identifier: str
    recipient: str
    """As the envelope gave it (its letters' case kept)."""
    route: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Deletion:
    """What :meth:`TransitQueue.delete_selected` did."""

    deleted: tuple[SelectedRecipient, ...]
    busy: tuple[SelectedRecipient, ...]
    """Recipients in flight (being transferred or delivered now): neither they nor the
    other recipients of their messages were deleted."""
    messages_removed: int
    """Messages left with nothing to send, removed with their APDUs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """What :meth:`TransitQueue.fail_selected` did."""

    failed: tuple[QueueEntry, ...]
    """The recipients failed, under their messages (APDUs with them, for the reports)."""
    busy: tuple[SelectedRecipient, ...]
    """Selected recipients in flight (being transferred or delivered now): untouched."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShapeCount:
    """How many waiting recipients of one route and precedence arrived within one age
    bucket (``qshape``)."""

    route: str
    precedence: Precedence
    bucket: int
    """Index into the edges given to :meth:`TransitQueue.shape`; ``len(edges)``: older
    than the last edge."""
    recipients: int


# --- the repository --------------------------------------------------------------------


class TransitQueue:
    """The transit queue, in the caller's session (the caller commits)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        # Core statements on the session's connection: the session's own execute() adds
        # bookkeeping to every statement that these plain statements do not need.
        self.connection = connection_of(session)
        self.spool = spool_of(session)

    # enqueue

    def enqueue(self, message: NewMessage, now: datetime) -> Enqueued:
        """Queue ``message`` unless each of its recipients was received before."""
        return self.enqueue_many((message,), now)[0]

    def enqueue_many(
        self, messages: Sequence[NewMessage], now: datetime, *, delivered_route: str | None = None
    ) -> tuple[Enqueued, ...]:
        """Queue several messages in the caller's transaction (in one disk flush).

        Each (MTS identifier, recipient) is recorded in ``received`` first; a recipient
        whose key exists already (a peer re-sending after a lost acknowledgement) is
        reported in ``duplicates`` and not queued again.

        ``delivered_route``: recipients on this route (the local one) are recorded as
        delivered at once, attempted once: the caller puts them in their mailboxes in
        this same transaction.  A message left with nothing to transfer keeps no copy of
        its APDU here (its mailbox entries hold it): its row says ``size`` only.
        """
        for message in messages:
            _check(message)
        fresh = self._record_received(messages, now)
        plans = [_split(message, fresh) for message in messages]
        queued = [(m, q) for m, (q, _) in zip(messages, plans, strict=True) if q]
        ids = self._insert_messages([(m, _keeps_apdu(q, delivered_route)) for m, q in queued], now)
        self._insert_recipients(
            [(i, m, q) for i, (m, q) in zip(ids, queued, strict=True)], now, delivered_route
        )
        next_id = iter(ids)
        return tuple(
            Enqueued(
                message_id=next(next_id) if q else None,
                queued=tuple(r.recipient for r in q),
                duplicates=duplicates,
            )
            for q, duplicates in plans
        )

    def record_received(
        self, mts_identifier: str, recipients: Sequence[str], origin_peer: str | None, now: datetime
    ) -> set[str]:
        """Record the duplicate-detection keys of a message taken responsibility for and
        not queued (non-delivered at once); the recipients whose key was new (a peer
        re-sending after a lost acknowledgement finds none)."""
        keys = [(mts_identifier, recipient, origin_peer) for recipient in recipients]
        return {recipient for _, recipient in self._insert_keys(keys, now)}

    def _record_received(
        self, messages: Sequence[NewMessage], now: datetime
    ) -> set[tuple[str, str]]:
        keys = [
            (m.mts_identifier, r.recipient, m.origin_peer) for m in messages for r in m.recipients
        ]
        return self._insert_keys(keys, now)

    def _insert_keys(
        self, keys: Sequence[tuple[str, str, str | None]], now: datetime
    ) -> set[tuple[str, str]]:
        """Insert (MTS identifier, recipient, origin peer) keys received at ``now``; the
        (MTS identifier, recipient) of those that were new."""
        rows = [
            {"mts_identifier": m, "recipient": r, "received_at": now, "origin_peer": peer}
            for m, r, peer in keys
        ]
        return {(row[0], row[1]) for row in received.INSERT_NEW.insert(self.connection, rows)}

    def _insert_messages(
        self, messages: Sequence[tuple[NewMessage, bool]], now: datetime
    ) -> list[int]:
        if not messages:
            return []
        rows = [
            {
                "mts_identifier": m.mts_identifier,
                "kind": m.kind,
                **apdu_columns(self.spool, self.session, m.apdu if keep else b""),
                "size": len(m.apdu),
                "precedence": int(m.precedence),
                "originator": m.originator,
                "arrival_time": now,
                "expiry_time": m.expiry_time,
                "origin_peer": m.origin_peer,
                "envelope_recipients": m.envelope_recipients,
            }
            for m, keep in messages
        ]
        return [row[0] for row in sql.INSERT_MESSAGES.insert(self.connection, rows)]

    def _insert_recipients(
        self,
        plan: Sequence[tuple[int, NewMessage, Sequence[NewRecipient]]],
        now: datetime,
        delivered_route: str | None,
    ) -> None:
        rows = [
            {
                "message_id": message_id,
                "recipient": r.recipient,
                "shown": r.shown,
                "route": r.route,
                "state": _S.DELIVERED if r.route == delivered_route else _S.PENDING,
                "precedence": int(m.precedence),
                "arrival_time": now,
                "attempts": 1 if r.route == delivered_route else 0,
                "next_attempt_at": now if m.not_before is None else max(now, m.not_before),
                "last_error": None,
                "report_request": r.report_request,
                "recipient_number": r.recipient_number,
                "owner": None,
                "updated_at": now,
            }
            for message_id, m, recipients in plan
            for r in recipients
        ]
        if rows:
            sql.INSERT_RECIPIENTS.insert(self.connection, rows)

    # claim

    def claim_next(
        self,
        route: str,
        precedences: Collection[Precedence],
        now: datetime,
        *,
        limit: int = 1,
        owner: str | None = None,
        lease: timedelta | None = None,
        max_octets: int | None = None,
        floor: Precedence | None = None,
        mapped: bool = False,
    ) -> tuple[QueueEntry, ...]:
        """Claim up to ``limit`` messages due on ``route``: most urgent first, then oldest.

        Every due pending recipient of a chosen message on this route comes with it (one
        transfer carries them all), unless another process holds it locked.  Claimed
        recipients are in flight, their attempts counted, ``owner`` recorded, their claim
        leased until ``now + lease`` (None: no lease, the claim counts as lapsed for
        :meth:`take_back_lapsed`).
        ``max_octets``: the messages after the first stop where their APDUs would come to
        more than this (what a claim holds in memory, for large messages).
        ``floor``: only precedences at least this urgent are claimed (MINIMIZE); the others
        stay pending, their expiry running as ever.
        ``mapped`` (a claim to send): a large spooled APDU comes as its file's mapping
        (:meth:`store.spool.Spool.mapped`), not read.
        """
        levels = _levels(precedences, floor)
        if limit < 1 or not levels:
            return ()
        due = {"route": route, "precedences": levels, "now": now}
        order, ids = self._choose(due, limit)
        if max_octets is not None and len(order) > 1:
            order, ids = self._within(order, ids, max_octets)
        if not order:
            return ()
        siblings = [
            row.id for row in sql.SIBLINGS.rows(self.connection, {**due, "messages": order})
        ]
        recipients = [i for i, _ in ids]
        taken = set(recipients)
        recipients += [i for i in siblings if i not in taken]
        until = None if lease is None else now + lease
        claimed = self._transition(
            sql.TO_IN_FLIGHT, recipients, now, new_owner=owner, lease_until=until
        )
        return self._entries(order, claimed, mapped=mapped)

    def _choose(
        self, due: Mapping[str, Any], limit: int
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """The first ``limit`` messages in service order (most urgent first, then oldest),
        with the (recipient id, message id) of the recipients locked."""
        order: list[int] = []
        ids: list[tuple[int, int]] = []
        level = {"route": due["route"], "now": due["now"]}
        for precedence in sorted(due["precedences"], reverse=True):
            level["precedence"] = precedence
            while len(order) < limit:
                # Rows are recipients: ask again for the messages still missing when
                # several rows were recipients of one message.
                wanted = limit - len(order)
                parameters = {**level, "taken": order, "limit": wanted}
                rows = sql.CHOOSE.rows(self.connection, parameters)
                ids += [(row.id, row.message_id) for row in rows]
                fresh = dict.fromkeys(row.message_id for row in rows)
                order += [m for m in fresh if m not in order]
                if len(rows) < wanted:
                    break
            if len(order) >= limit:
                break
        return order, ids

    def _within(
        self, order: list[int], ids: list[tuple[int, int]], max_octets: int
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """The first messages of ``order`` whose sizes add up to at most ``max_octets``
        (the first one whatever its size), and their recipients of ``ids``.  Those left
        out stay pending (on PostgreSQL their rows stay locked until the claim commits)."""
        rows = sql.SIZES.rows(self.connection, {"ids": order})
        sizes: dict[int, int] = {int(row.id): int(row.size) for row in rows}
        kept: list[int] = []
        total = 0
        for message_id in order:
            total += sizes.get(message_id, 0)
            if kept and total > max_octets:
                break
            kept.append(message_id)
        chosen = set(kept)
        return kept, [pair for pair in ids if pair[1] in chosen]

    # state changes

    def mark_transferred(self, recipient_ids: Sequence[int], now: datetime) -> int:
        """In-flight recipients a peer MTA has taken responsibility for."""
        return len(self._transition(sql.TO_TRANSFERRED, recipient_ids, now))

    def mark_delivered(self, recipient_ids: Sequence[int], now: datetime) -> int:
        """In-flight local recipients now in their mailbox."""
        return len(self._transition(sql.TO_DELIVERED, recipient_ids, now))

    def defer(
        self,
        recipient_ids: Sequence[int],
        *,
        next_attempt_at: datetime,
        error: str,
        now: datetime,
    ) -> int:
        """In-flight recipients that failed for now: pending again from ``next_attempt_at``."""
        changed = self._transition(
            sql.TO_DEFERRED, recipient_ids, now, next_attempt=next_attempt_at, error=error
        )
        return len(changed)

    def unclaim(self, recipient_ids: Sequence[int], now: datetime) -> int:
        """In-flight recipients claimed but never attempted (their connection failed on an
        earlier message of the same claim): pending again as they were, due at once, the
        attempt their claim counted taken back."""
        return len(self._transition(sql.TO_UNCLAIMED, recipient_ids, now))

    def retry_at_once(self, recipient_ids: Sequence[int], *, error: str, now: datetime) -> int:
        """In-flight recipients whose transfer failed on a connection that had idled (a
        connection dropped unseen while idle fails its first transfer, through no fault of
        the message): pending again and due at once, the attempt their claim counted taken
        back, and ``error`` recorded, so that the caller defers them (:meth:`defer`) if
        they fail again rather than retrying them at once once more."""
        return len(self._transition(sql.TO_RETRIED_AT_ONCE, recipient_ids, now, error=error))

    def fail(self, recipient_ids: Sequence[int], *, error: str, now: datetime) -> int:
        """Recipients that will never be transferred or delivered (permanent failure)."""
        return len(self._transition(sql.TO_FAILED, recipient_ids, now, error=error))

    def hold(self, message_ids: Sequence[int], now: datetime) -> int:
        """Operator hold: pending recipients of these messages are not claimed until released.

        In-flight recipients finish their attempt; hold again afterwards if need be.
        """
        return self._per_message(sql.HOLD, message_ids, now)

    def release(self, message_ids: Sequence[int], now: datetime) -> int:
        """Held recipients of these messages become pending and due at once."""
        return self._per_message(sql.RELEASE, message_ids, now)

    def recover_in_flight(self, now: datetime, *, owner: str | None = None) -> int:
        """At start: what was in flight is pending again (Postfix: active -> incoming).

        ``owner`` None recovers every in-flight recipient (one process owns the queue);
        with a name, only those that process held (processes sharing a PostgreSQL queue
        each recover their own, under a name that survives their restart).
        """
        if owner is None:
            return self._count(sql.RECOVER_ALL, {"at": now})
        return self._count(sql.RECOVER_OWNER, {"at": now, "of_owner": owner})

    def renew_claims(self, owner: str, until: datetime) -> int:
        """Every recipient ``owner`` holds in flight stays its own until ``until`` (the
        owner renews its lease while it lives); how many, in one statement."""
        return self._count(sql.RENEW, {"of_owner": owner, "until": until})

    def take_back_lapsed(self, now: datetime) -> int:
        """Recipients in flight whose claim's lease lapsed by ``now`` (their owner died or
        stalled) are pending again, due as they were, to be claimed, held, deleted or
        expired like any other; how many.  The attempts their claim counted stay counted
        (a message that kills the processes that claim it shows)."""
        return self._count(sql.TAKE_BACK_LAPSED, {"at": now})

    def expire_due(self, now: datetime, *, limit: int = 1000) -> tuple[QueueEntry, ...]:
        """Fail pending recipients whose message expired; what expired, for the reports.

        Held recipients wait for the operator; in-flight ones finish their attempt.
        """
        rows = sql.EXPIRED.rows(self.connection, {"now": now, "limit": limit})
        failed = self._transition(sql.TO_EXPIRED, [row.id for row in rows], now)
        return self._entries(list(dict.fromkeys(row.message_id for row in rows)), failed)

    # the operator's, by selection

    def hold_selected(self, selection: Selection, now: datetime) -> tuple[SelectedRecipient, ...]:
        """Operator hold of the selected pending recipients (in flight ones finish their
        attempt); those held."""
        return self._change_selected(selection, _S.PENDING, {"state": _S.HELD}, now)

    def release_selected(
        self, selection: Selection, now: datetime
    ) -> tuple[SelectedRecipient, ...]:
        """The selected held recipients become pending and due at once; those released."""
        values = {"state": _S.PENDING, "next_attempt_at": now}
        return self._change_selected(selection, _S.HELD, values, now)

    def flush(self, route: str | None, now: datetime) -> int:
        """Retry now: pending recipients on ``route`` (every route when None) waiting out
        a retry backoff are due at ``now``; how many.  Those never attempted keep their
        time: it is a deferred-delivery-time their originator asked for."""
        statement = (
            update(sql.RECIPIENTS)
            .where(_c.state == _S.PENDING, _c.attempts > 0, _c.next_attempt_at > now)
            .values(next_attempt_at=now, updated_at=now)
        )
        if route is not None:
            statement = statement.where(_c.route == route)
        return _rowcount(self.connection.execute(statement))

    def delete_selected(self, selection: Selection) -> Deletion:
        """Delete the selected waiting recipients, except from messages with a selected
        recipient in flight (a transfer or delivery in progress is never cut short: try
        again once it ended).  A message left with nothing to send goes too, its APDU
        file once the caller commits.  No report is made here."""
        rows = self.connection.execute(
            select(_c.id, _c.message_id, _c.state, _SHOWN, _c.route)
            .where(_c.state.in_(_WAITING), _selected(selection))
            .with_for_update()
        ).all()
        identifiers = self._identifiers({row.message_id for row in rows})
        busy_messages = {row.message_id for row in rows if row.state == _S.IN_FLIGHT}
        doomed = [row for row in rows if row.message_id not in busy_messages]
        for part in chunks([row.id for row in doomed]):
            self.connection.execute(delete(sql.RECIPIENTS).where(_c.id.in_(part)))
        removed = self._remove_finished({row.message_id for row in doomed})
        return Deletion(
            deleted=tuple(_selected_recipient(row, identifiers) for row in doomed),
            busy=tuple(
                _selected_recipient(row, identifiers) for row in rows if row.state == _S.IN_FLIGHT
            ),
            messages_removed=removed,
        )

    def fail_selected(self, selection: Selection, *, error: str, now: datetime) -> Failure:
        """Fail the selected pending and held recipients (the operator's non-delivery;
        ``error`` is their last error); those in flight finish their attempt and are
        returned as busy.  No report is made here."""
        rows = self.connection.execute(
            select(_c.id, _c.message_id, _c.state, _SHOWN, _c.route)
            .where(_c.state.in_(_WAITING), _selected(selection))
            .with_for_update()
        ).all()
        idle = [row for row in rows if row.state != _S.IN_FLIGHT]
        failed = self._transition(sql.TO_NON_DELIVERED, [row.id for row in idle], now, error=error)
        in_flight = [row for row in rows if row.state == _S.IN_FLIGHT]
        identifiers = self._identifiers({row.message_id for row in in_flight})
        return Failure(
            failed=self._entries(list(dict.fromkeys(row.message_id for row in idle)), failed),
            busy=tuple(_selected_recipient(row, identifiers) for row in in_flight),
        )

    def _change_selected(
        self,
        selection: Selection,
        state: RecipientState,
        values: Mapping[str, Any],
        now: datetime,
    ) -> tuple[SelectedRecipient, ...]:
        statement = (
            update(sql.RECIPIENTS)
            .where(_c.state == state, _selected(selection))
            .values(**values, updated_at=now)
            .returning(_c.id, _c.message_id, _SHOWN, _c.route)
        )
        rows = self.connection.execute(statement).all()
        identifiers = self._identifiers({row.message_id for row in rows})
        return tuple(_selected_recipient(row, identifiers) for row in sorted(rows))

    def _identifiers(self, message_ids: Collection[int]) -> dict[int, str]:
        """The MTS identifiers of messages ``message_ids``."""
        found: dict[int, str] = {}
        for part in chunks(sorted(message_ids)):
            query = select(_m.id, _m.mts_identifier).where(_m.id.in_(part))
            found.update((row.id, row.mts_identifier) for row in self.connection.execute(query))
        return found

    def _remove_finished(self, message_ids: Collection[int]) -> int:
        """Delete those of ``message_ids`` with no recipient left waiting (their other
        recipients with them); their spool files go once the caller commits."""
        still_waiting = select(_c.id).where(_c.message_id == _m.id, _c.state.in_(_WAITING)).exists()
        removed = 0
        for part in chunks(sorted(message_ids)):
            statement = (
                delete(sql.MESSAGES)
                .where(_m.id.in_(part), ~still_waiting)
                .returning(_m.id, _m.apdu_file)
            )
            rows = self.connection.execute(statement).all()
            if self.spool is not None:
                self.spool.discard_after_commit(self.session, (row.apdu_file for row in rows))
            removed += len(rows)
        return removed

    def shape(self, now: datetime, edges: Sequence[timedelta]) -> tuple[ShapeCount, ...]:
        """Waiting recipients (pending, in flight, held) per route, precedence and age
        bucket (Postfix's ``qshape``): bucket ``i`` holds those that arrived less than
        ``edges[i]`` ago (and not less than ``edges[i - 1]``), bucket ``len(edges)`` the
        older ones."""
        bucket = case(
            *(
                (_c.arrival_time > literal(now - edge, UtcDateTime()), index)
                for index, edge in enumerate(edges)
            ),
            else_=len(edges),
        )
        aged = (
            select(_c.route, _c.precedence, bucket.label("bucket"))
            .where(_c.state.in_(_WAITING))
            .subquery()
        )
        query = select(aged.c.route, aged.c.precedence, aged.c.bucket, func.count()).group_by(
            aged.c.route, aged.c.precedence, aged.c.bucket
        )
        return tuple(
            ShapeCount(route=route, precedence=Precedence(p), bucket=int(b), recipients=n)
            for route, p, b, n in self.connection.execute(query)
        )

    # views

    def counts(self) -> tuple[QueueCount, ...]:
        """Recipients per route, precedence and state (the operator's ``qshape``)."""
        return tuple(
            QueueCount(route=route, precedence=Precedence(p), state=state, recipients=n)
            for route, p, state, n in self.connection.execute(sql.COUNTS)
        )

    def waiting(self, limit: int = 100) -> tuple[WaitingRecipient, ...]:
        """Up to ``limit`` recipients still pending, in flight or held, in service order."""
        rows = self.connection.execute(sql.WAITING, {"limit": limit})
        return tuple(_waiting(row) for row in rows)

    def recipients_of(self, mts_identifier: str) -> tuple[WaitingRecipient, ...]:
        """Every recipient still in the queue of the message, probe or report with this
        MTS identifier, in any state (finished ones until retention prunes them)."""
        rows = self.connection.execute(sql.OF_MESSAGE, {"mts_identifier": mts_identifier})
        return tuple(_waiting(row) for row in rows)

    def matching(
        self,
        *,
        recipient: str | None = None,
        originator: str | None = None,
        since: datetime | None = None,
        limit: int = 1000,
    ) -> tuple[WaitingRecipient, ...]:
        """Recipients in the queue (any state) of the messages that have ``recipient``
        among theirs, come from ``originator`` and arrived at or after ``since`` (each
        condition given), oldest first, at most ``limit``."""
        query = sql.QUEUED
        if recipient is not None:
            named = select(_c.message_id).where(_c.recipient == recipient)
            query = query.where(_m.id.in_(named))
        if originator is not None:
            query = query.where(_m.originator == originator)
        if since is not None:
            query = query.where(_m.arrival_time >= literal(since, UtcDateTime()))
        query = query.order_by(_m.arrival_time, _m.id, _c.id).limit(limit)
        return tuple(_waiting(row) for row in self.connection.execute(query))

    def backlog(
        self,
        route: str,
        precedences: Collection[Precedence],
        now: datetime,
        *,
        floor: Precedence | None = None,
    ) -> int:
        """Messages due on ``route`` at these precedences (to decide on a second connection);
        ``floor`` as for :meth:`claim_next`."""
        levels = _levels(precedences, floor)
        if not levels:
            return 0
        due = {"route": route, "precedences": levels, "now": now}
        return int(sql.BACKLOG.scalar(self.connection, due) or 0)

    def next_due(self, route: str, precedences: Collection[Precedence]) -> datetime | None:
        """When the next pending recipient on ``route`` at these precedences falls due."""
        if not precedences:
            return None
        parameters = {"route": route, "precedences": _levels(precedences)}
        return cast(datetime | None, sql.NEXT_DUE.scalar(self.connection, parameters))

    def get(self, message_id: int) -> QueueEntry | None:
        """A queued message with all its recipients, or None."""
        rows = sql.RECIPIENTS_OF.rows(self.connection, {"message_id": message_id})
        entries = self._entries([message_id], rows)
        return entries[0] if entries else None

    def subject_precedence(self, mts_identifier: str) -> Precedence | None:
        """The precedence of message ``mts_identifier`` as queued here, for a report on it
        (X.411 12.2.1.3: a report's envelope carries none); None if it is not in the queue
        (never here, or purged)."""
        level = sql.SUBJECT_PRECEDENCE.scalar(self.connection, {"mts_identifier": mts_identifier})
        return None if level is None else Precedence(level)

    def is_probe(self, mts_identifier: str) -> bool:
        """Whether ``mts_identifier`` names a probe queued here: a report on it is a probe
        report (X.411 8.3.1.2); False once the probe is purged."""
        count = sql.SUBJECT_PROBES.scalar(self.connection, {"mts_identifier": mts_identifier})
        return bool(count)

    # housekeeping

    def purge_finished(self, before: datetime) -> int:
        """Delete messages whose every recipient reached a final state before ``before``
        (their spool files go once the caller commits)."""
        rows = self.connection.execute(sql.PURGE_FINISHED, {"before": before}).all()
        if self.spool is not None:
            self.spool.discard_after_commit(self.session, (row.apdu_file for row in rows))
        return len(rows)

    def forget_received(self, before: datetime) -> int:
        """Drop duplicate-detection keys received before ``before`` (the dedup window)."""
        return self._count(received.FORGET, {"before": before})

    # helpers

    def _transition(
        self, statement: Statement, recipient_ids: Sequence[int], now: datetime, **values: Any
    ) -> list[Row]:
        rows: list[Row] = []
        for part in chunks(sorted(set(recipient_ids))):
            rows += statement.rows(self.connection, {"ids": list(part), "at": now, **values})
        return rows

    def _per_message(self, statement: Executable, message_ids: Sequence[int], now: datetime) -> int:
        return sum(
            self._count(statement, {"message_ids": list(part), "at": now})
            for part in chunks(sorted(set(message_ids)))
        )

    def _count(self, statement: Executable, parameters: Mapping[str, Any]) -> int:
        # UPDATE and DELETE give a CursorResult; its rowcount is the rows matched.
        result = self.connection.execute(statement, parameters)
        return cast(CursorResult[Any], result).rowcount

    def _entries(
        self, order: Sequence[int], rows: Sequence[Row], *, mapped: bool = False
    ) -> tuple[QueueEntry, ...]:
        """Group recipient rows under their messages, messages in ``order``."""
        grouped: dict[int, list[QueueRecipient]] = {}
        for row in sorted(rows, key=lambda r: r.id):
            grouped.setdefault(row.message_id, []).append(_recipient(row))
        wanted = [i for i in order if i in grouped]
        messages = {m.id: m for m in self._messages(wanted)}
        return tuple(
            _entry(messages[i], self._apdu(messages[i], mapped=mapped), grouped[i]) for i in wanted
        )

    def _apdu(self, message: Row, *, mapped: bool) -> bytes | mmap.mmap:
        what = f"message {message.id}"
        return stored_apdu(
            self.spool, message.apdu, message.apdu_file, what, self.session, mapped=mapped
        )

    def _messages(self, message_ids: Sequence[int]) -> Iterator[Row]:
        for part in chunks(message_ids):
            yield from sql.MESSAGES_BY_ID.rows(self.connection, {"ids": list(part)})


_c = sql.RECIPIENTS.c
_m = sql.MESSAGES.c
_SHOWN = func.coalesce(_c.shown, _c.recipient).label("recipient")
"""A recipient as the envelope gave it, for what an operator's command answers."""
_WAITING = (_S.PENDING, _S.IN_FLIGHT, _S.HELD)
"""The states of a recipient the MTA still owes something."""


def _selected(selection: Selection) -> ColumnElement[bool]:
    """The recipients ``selection`` names, as a WHERE condition."""
    conditions: list[ColumnElement[bool]] = []
    named: list[ColumnElement[bool]] = []
    if selection.message_ids:
        named.append(_c.message_id.in_(selection.message_ids))
    if selection.mts_identifiers:
        by_identifier = select(_m.id).where(_m.mts_identifier.in_(selection.mts_identifiers))
        named.append(_c.message_id.in_(by_identifier))
    if named:
        conditions.append(or_(*named))
    if selection.route is not None:
        conditions.append(_c.route == selection.route)
    if selection.precedence is not None:
        conditions.append(_c.precedence == int(selection.precedence))
    if not conditions and not selection.everything:
        return false()
    return and_(true(), *conditions)


def _selected_recipient(row: Any, identifiers: Mapping[int, str]) -> SelectedRecipient:
    return SelectedRecipient(
        message_id=row.message_id,
        mts_identifier=identifiers.get(row.message_id, ""),
        recipient=row.recipient,
        route=row.route,
    )


def _rowcount(result: Any) -> int:
    # UPDATE and DELETE give a CursorResult; its rowcount is the rows matched.
    return cast(CursorResult[Any], result).rowcount


def _levels(precedences: Collection[Precedence], floor: Precedence | None = None) -> list[int]:
    least = -1 if floor is None else int(floor)
    return sorted({int(p) for p in precedences if int(p) >= least})


def _recipient(row: Row) -> QueueRecipient:
    return QueueRecipient(
        id=row.id,
        recipient=row.recipient,
        shown=row.shown,
        route=row.route,
        state=row.state,
        attempts=row.attempts,
        next_attempt_at=row.next_attempt_at,
        last_error=row.last_error,
        report_request=row.report_request,
        recipient_number=row.recipient_number,
    )


def _entry(
    message: Row, apdu: bytes | mmap.mmap, recipients: Sequence[QueueRecipient]
) -> QueueEntry:
    return QueueEntry(
        message_id=message.id,
        mts_identifier=message.mts_identifier,
        kind=message.kind,
        precedence=Precedence(message.precedence),
        originator=message.originator,
        apdu=apdu,
        arrival_time=message.arrival_time,
        expiry_time=message.expiry_time,
        origin_peer=message.origin_peer,
        recipients=tuple(recipients),
        envelope_recipients=message.envelope_recipients,
    )


def _keeps_apdu(queued: Sequence[NewRecipient], delivered_route: str | None) -> bool:
    """Whether a message whose ``queued`` recipients are these still needs its APDU."""
    return any(r.route != delivered_route for r in queued)


def _check(message: NewMessage) -> None:
    if not message.recipients:
        raise ValueError(f"message {message.mts_identifier} has no recipient to queue")


def _split(
    message: NewMessage, fresh: set[tuple[str, str]]
) -> tuple[list[NewRecipient], tuple[str, ...]]:
    """The recipients of ``message`` to queue and the duplicates.

    A new key is taken from ``fresh`` by its first occurrence, so a name repeated in one
    batch is queued once.
    """
    queued: list[NewRecipient] = []
    duplicates: list[str] = []
    for r in message.recipients:
        key = (message.mts_identifier, r.recipient)
        if key in fresh:
            fresh.discard(key)
            queued.append(r)
        else:
            duplicates.append(r.recipient)
    return queued, tuple(duplicates)


def _waiting(row: Any) -> WaitingRecipient:
    return WaitingRecipient(
        message_id=row.id,
        mts_identifier=row.mts_identifier,
        kind=ApduKind(row.kind),
        precedence=Precedence(row.precedence),
        arrival_time=row.arrival_time,
        recipient=row.recipient,
        route=row.route,
        state=RecipientState(row.state),
        attempts=row.attempts,
        next_attempt_at=row.next_attempt_at,
        last_error=row.last_error,
        size=row.size,
        originator=row.originator,
    )
