"""The one way in: every APDU this MTA takes responsibility for passes here (X.411 14).

Four sources, one path each through the same three steps:

1. **plan and commit**: the unit of :class:`mta.intake.units.IntakeUnits` for the source
   (a peer's transfer, a local submission, a transfer too long to take in, one that
   cannot be taken in) runs in the database thread, group-committed with its neighbours;
2. **the store-fault rule**: when what the store stands on fails (a full disk, a
   database that does not answer, :func:`mta.faults.store_fault`), the APDU is refused as
   temporary (:class:`mta.transport.Refused`): nothing was confirmed, the peer or the
   user keeps it and tries again later, and the condition is logged once, not per APDU;
3. **after the commit**: the message log line, the local deliveries it made (their
   users' waits woken), and the channels that may carry it woken (:attr:`Intake.wake`).

Only then does the caller acknowledge (the transport confirms the transfer; the local
API answers the user with the MTS identifier).

Public API::

    Intake(db, units, *, watch, wake, claim_ahead, quarantine_bounds, flash_work=None)
        await .receive(apdu, peer)              a peer's transfer (mta.transport.InboundSink)
        await .receive_too_long(event, peer)    one over max_message_size
        await .submit(request) -> Submitted    a local submission
        .delivered(outcome)                     a local delivery was committed
        .queued(plan=None, *, delivered=None)   something was queued: wake who carries it
        .recent / .tolerated / .store / .metrics
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol, TypeVar

from sqlalchemy.orm import Session

from config.schema import QuarantineLimits
from mta import stages
from mta.database import Database, is_urgent
from mta.faults import LogLimiter, StoreCondition, store_fault
from mta.intake.journal import few, log_intake, log_non_delivery
from mta.intake.oversize import envelope_of, too_long_line
from mta.intake.plan import (
    ForeignOriginatorError,
    IntakeError,
    MalformedApduError,
    Plan,
    precedence_of,
)
from mta.intake.quarantine import full_refusal
from mta.intake.recent import RecentPrecedences
from mta.intake.routing import PeerRoute
from mta.intake.submission import SubmitRequest
from mta.intake.tolerance import ToleranceLog
from mta.intake.units import IntakeUnits, LocalOutcome
from mta.metrics import Metrics
from mta.transport import Refused
from p1.association.connection import TransferTooLong
from p1.errors import DecodeError
from p1.mts.envelope import (
    MessageEnvelope,
    Probe,
    Report,
    peek_envelope,
)
from p1.mts.orname import format_orname
from p1.mts.precedence import Precedence
from store import ApduKind, Enqueued

__all__ = ["Intake", "Submitted", "Wake", "Watchers"]

log = logging.getLogger("aiox400.mta")

_T = TypeVar("_T")

_PREPARED = 64
"""Recipients from which a transfer is planned and indexed outside the database thread
(below, the hand-over to a worker thread costs more than it spares)."""

Wake = Callable[[Plan | None, bool], None]
"""Wake whoever carries what was queued: the plan (None: anything may be due), and
whether its local recipients were delivered as it was taken in."""

FlashWork = Callable[[Precedence, Iterable[str]], contextlib.AbstractContextManager[None]]
"""Work at a precedence for these peers under way while its block runs
(:meth:`mta.outbound.giveway.GiveWay.during`)."""


def _no_hold(precedence: Precedence, peers: Iterable[str]) -> contextlib.nullcontext[None]:
    return contextlib.nullcontext()


class Watchers(Protocol):
    """The users waiting for their next delivery (:class:`mta.delivery.watch.MailboxWatch`)."""

    def stored(self, users: Iterable[str], at: datetime) -> None:
        """A delivery to ``users`` was committed at ``at``: wake whoever waits for one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Submitted:
    """A local submission, committed."""

    mts_identifier: str
    rejected: tuple[str, ...]
    """The recipients it was not taken for (no route, ...), as O/R name text."""


class Intake:
    """The one way in (see the module docstring)."""

    def __init__(
        self,
        db: Database,
        units: IntakeUnits,
        *,
        watch: Watchers,
        wake: Wake,
        claim_ahead: Callable[[Iterable[str], Precedence], None],
        quarantine_bounds: Callable[[], QuarantineLimits],
        flash_work: FlashWork | None = None,
    ) -> None:
        self.db = db
        self.units = units
        self.watch = watch
        self.wake = wake
        self.claim_ahead = claim_ahead
        """An idle connection to each of these peers claims behind a submission."""
        self.quarantine_bounds = quarantine_bounds
        self.flash_work: FlashWork = flash_work or _no_hold
        """Holds the peers' routine transfers back while a submission at flash is taken in
        for them (:meth:`mta.outbound.giveway.GiveWay.during`)."""
        self.recent = RecentPrecedences()
        """The precedences of the messages taken in lately (a report's unit is scheduled
        at its subject's)."""
        self.tolerated = ToleranceLog()
        """What peers sent outside the standard's form and was read anyway."""
        self.store = StoreCondition()
        """Whether the store takes work (a full disk, a database that does not answer)."""
        self._refusals = LogLimiter()

    @property
    def metrics(self) -> Metrics:
        """The daemon's counters."""
        return self.units.metrics

    # --- the four sources --------------------------------------------------------------

    async def receive(self, apdu: bytes, peer: str) -> None:
        """Take a transfer from ``peer``; return once committed (then it is confirmed).

        An APDU whose own octets keep it from being taken in is committed to the
        quarantine instead, with the non-delivery report its envelope allows, unless the
        quarantine is full (then refused).
        """
        now = datetime.now(UTC)
        envelope = _peek(apdu)  # (on the loop: the busier database thread is spared it)
        precedence = precedence_of(envelope, self.units.site, self.recent.of)
        stages.urgent_here(is_urgent(precedence))
        stages.mark("intake.peeked")
        try:
            unit = await self._receiving_unit(apdu, peer, now, envelope, precedence)
            plan, result, delivered = await self._commit(unit, urgent=is_urgent(precedence))
            stages.mark("intake.settled")
            self._tell_users(delivered)
        except MalformedApduError as error:
            await self._quarantine(apdu, peer, str(error), now)
            self.metrics.received(peer, precedence, len(apdu), outcome="quarantined")
            return
        except IntakeError as error:
            raise Refused(str(error)) from error
        if envelope is not None:
            self._tolerated(apdu, envelope, peer)
        if delivered is not None and delivered.deviations:  # (its heading, read to deliver)
            self.tolerated.received(peer, delivered.mts_identifier, delivered.deviations)
        log_intake("received", plan, result, f"from {peer}")
        self.metrics.received(peer, precedence, len(apdu))
        if isinstance(envelope, Report) and result is not None and result.queued:
            log_non_delivery(envelope, peer)
        self._after(plan, delivered, told=True)
        stages.mark("intake.done")

    async def _receiving_unit(
        self,
        apdu: bytes,
        peer: str,
        now: datetime,
        envelope: MessageEnvelope | Probe | Report | None,
        precedence: Precedence,
    ) -> Callable[[Session], tuple[Plan, Enqueued | None, LocalOutcome | None]]:
        """The database unit taking a transfer in.  A message for many recipients is
        planned and indexed in a worker thread first, so that the database thread only
        writes it (others' units are not held up by its routing and its heading)."""
        units = self.units
        if isinstance(envelope, MessageEnvelope) and len(envelope.recipients) >= _PREPARED:
            prepared = await asyncio.to_thread(
                units.prepare,
                apdu=apdu,
                now=now,
                origin_peer=peer,
                envelope=envelope,
                precedence=precedence,
            )
            return functools.partial(units.take_prepared_in, prepared=prepared, now=now)
        return functools.partial(
            units.receive_and_deliver_in,
            apdu=apdu,
            now=now,
            origin_peer=peer,
            envelope=envelope,
            precedence=precedence,
        )

    async def receive_too_long(self, event: TransferTooLong, peer: str) -> None:
        """Take a transfer from ``peer`` over ``max_message_size``; return once the
        non-delivery report on its message is committed (then it is confirmed).
        :class:`Refused` when it is not a message whose envelope its first octets hold
        (:func:`mta.intake.oversize.envelope_of`)."""
        envelope = envelope_of(event)
        unit = functools.partial(
            self.units.too_long_in, subject=envelope, peer=peer, now=datetime.now(UTC)
        )
        urgent = is_urgent(precedence_of(envelope, self.units.site))
        reported, report = await self._commit(unit, urgent=urgent)
        log.warning(too_long_line(envelope, event, peer, report))
        if reported:
            self.queued()

    async def submit(self, request: SubmitRequest) -> Submitted:
        """Take a local submission in; return once committed.  Its recipients are routed
        here, once: the plan takes these routes, and an idle connection to each peer
        among them claims right behind the submission's unit (:attr:`claim_ahead`).
        :class:`mta.intake.plan.IntakeError` when it cannot be taken (its originator
        under no local domain, unless foreign ones are accepted: one WARNING a minute);
        :class:`Refused` (temporary) on a store fault."""
        router = self.units.site.router
        why = router.foreign_originator(request.originator)
        if why is not None:
            self._refusals.warning(log, "foreign originator", "refused a local submission: %s", why)
            raise ForeignOriginatorError(why)
        routes = {name.canonical: router.route(name) for name in request.recipients}
        unit = functools.partial(
            self.units.submit_in, request=request, now=datetime.now(UTC), routes=routes
        )
        urgent = is_urgent(request.precedence)
        stages.urgent_here(urgent)
        peers = {route.peer for route in routes.values() if isinstance(route, PeerRoute)}
        with self.flash_work(request.precedence, peers):
            queued = self.db.enqueue(unit, urgent=urgent)
            stages.mark("intake.queued")
            self.claim_ahead(peers, request.precedence)
            identifier, plan, result, delivered = await self._settled(queued)
        stages.mark("intake.settled")
        log_intake("submitted", plan, result, f"by {format_orname(request.originator)}")
        self._after(plan, delivered)
        return Submitted(
            mts_identifier=identifier,
            rejected=tuple(format_orname(o.recipient) for o in plan.rejected),
        )

    async def _quarantine(self, apdu: bytes, peer: str, reason: str, now: datetime) -> None:
        """Keep ``apdu`` in the quarantine, with the non-delivery report its envelope
        allows, or refuse it when the quarantine is full."""
        bounds = self.quarantine_bounds()
        unit = functools.partial(
            self.units.quarantine_in, apdu=apdu, peer=peer, reason=reason, now=now, bounds=bounds
        )
        kept = await self._commit(unit)
        if kept.entry_id is None:
            raise Refused(full_refusal(kept, len(apdu), reason, bounds))
        log.warning(
            "%s: transfer of %d octets kept in quarantine as #%d, not delivered: %s; %s",
            peer,
            len(apdu),
            kept.entry_id,
            reason,
            kept.report,
        )
        if kept.reported:
            self.queued()

    # --- the store-fault rule ----------------------------------------------------------

    async def _commit(self, unit: Callable[[Session], _T], *, urgent: bool = False) -> _T:
        """``unit``, group-committed (:meth:`_settled`)."""
        return await self._settled(self.db.enqueue(unit, urgent=urgent))

    async def _settled(self, queued: Awaitable[_T]) -> _T:
        """What a queued unit returned; a store fault refuses the APDU as temporary."""
        try:
            result = await queued
        except Exception as error:
            fault = store_fault(error)
            if fault is None:
                raise
            self.store.failed(fault)
            raise Refused(f"cannot store: {fault}", temporary=True, fault=fault) from error
        self.store.succeeded()
        return result

    # --- after the commit --------------------------------------------------------------

    def _after(self, plan: Plan, delivered: LocalOutcome | None, *, told: bool = False) -> None:
        self.delivered(delivered, told=told)
        self.queued(plan, delivered=delivered)

    def queued(self, plan: Plan | None = None, *, delivered: LocalOutcome | None = None) -> None:
        """Something was queued: note a message's precedence (:attr:`recent`, for its
        reports) and wake whoever carries it.  ``delivered``: the plan's local recipients
        were delivered as it was taken in."""
        message = plan.message if plan is not None else None
        if message is not None and message.kind is not ApduKind.REPORT:
            self.recent.note(message.mts_identifier, message.precedence)
        self.wake(plan, delivered is not None)

    def delivered(self, outcome: LocalOutcome | None, *, told: bool = False) -> None:
        """A local delivery was committed: log it, wake its users' waits (unless
        ``told`` already, :meth:`_tell_users`), send on the delivery report it queued."""
        if outcome is None:
            return
        if not told:
            self._tell_users(outcome)
        log.info(
            "delivered %s %s (%s) to %d user(s): %s%s",
            outcome.kind.value,
            outcome.mts_identifier,
            outcome.precedence.label,
            len(outcome.users),
            few(outcome.shown or outcome.users),
            "; delivery report queued" if outcome.reported else "",
        )
        if outcome.reported:
            self.queued()

    def _tell_users(self, outcome: LocalOutcome | None) -> None:
        """Wake the waits of the users a committed delivery reached: the first thing
        done after a transfer's commit (a user waiting on a mailbox is told before the
        lines and counters of the transfer are written)."""
        if outcome is not None:
            self.watch.stored(outcome.users, datetime.now(UTC))

    def _tolerated(
        self, apdu: bytes, envelope: MessageEnvelope | Probe | Report, peer: str
    ) -> None:
        """Log what the envelope of an APDU taken in held outside the standard's form."""
        deviations = envelope.deviations
        if deviations:
            self.tolerated.received(peer, envelope.mts_identifier.text, deviations)


def _peek(apdu: bytes) -> MessageEnvelope | Probe | Report | None:
    """The APDU's envelope, or None if it does not decode (the unit then refuses it)."""
    try:
        return peek_envelope(apdu)
    except DecodeError:
        return None
