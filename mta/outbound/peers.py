"""Every peer's channel: the slot runners by peer, woken by what is queued for them.

The queue manager's view of the outbound side: which runner carries what was just
queued (its routes at its precedence), which idle connection claims behind a
submission, which slots stop waiting out a backoff when a peer is seen to answer, and
how a reload swaps runners without sending anything twice (a slot whose settings are
unchanged keeps its runner and its connections; a retired runner hands back what it
claimed and did not send before its successor starts).

Public API::

    Peers(*, parts, local, others=None)   (others: the runners of non-P1 peers)
        .build(config, context) -> runners by peer    .start(runners)  await .stop()
        .runners -> list[Runner]   .of(peer) -> list[Runner]
        .wake(plan=None, delivered=False)    something was queued
        .claim_ahead(peers, precedence)      a submission for them is being committed
        .peer_reachable(peer)    .flush(peer)        the operator: try again now
        .swap(runners, context, config, then)   a reload's hand-over
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable

from config.schema import MtaConfig, Peer
from config.values import Transport
from mta.intake.plan import Plan
from mta.outbound.channels import ChannelContext, SlotRunner
from mta.supervisor import Supervisor
from mta.transport import Runner
from p1.mts.precedence import Precedence
from store import LOCAL_ROUTE

__all__ = ["Peers"]

log = logging.getLogger("aiox400.mta")


Others = Callable[[ChannelContext, Peer, Iterable[Runner]], list[Runner]]
"""Builds a non-P1 peer's runners from the context, the peer and today's runners."""


class Peers:
    """The slot runners of every peer (see the module docstring)."""

    def __init__(
        self,
        *,
        parts: Supervisor,
        local: Callable[[], None],
        others: Others | None = None,
    ) -> None:
        self.parts = parts
        self.local = local
        self.others = others
        """Builds the runners of a peer of another transport (ACP 142), keeping one of
        the given ones that still serves it."""
        """Wakes the local deliverer (something for a local recipient was queued)."""
        self._runners: dict[str, list[Runner]] = {}
        self._leaving: dict[Runner, None] = {}  # retired by a reload, not yet ended
        self._handover: asyncio.Task[None] | None = None

    @property
    def runners(self) -> list[Runner]:
        """Every slot runner, peer by peer (a channel several peers share, once)."""
        every = [runner for runners in self._runners.values() for runner in runners]
        return list(dict.fromkeys(every))

    def of(self, peer: str) -> list[Runner]:
        """``peer``'s slot runners (none for an unknown peer)."""
        return self._runners.get(peer, [])

    def build(self, config: MtaConfig, context: ChannelContext) -> dict[str, list[Runner]]:
        """The runners ``config`` asks for, keeping each of today's that serves its slot
        as it is (:meth:`SlotRunner.serves`); new ones are not started."""
        return {p.name: self._channel(context, p, self.of(p.name)) for p in config.peers}

    def start(self, runners: dict[str, list[Runner]]) -> None:
        """Serve with ``runners`` (at start)."""
        self._runners = runners
        for runner in self.runners:  # (once each, though several peers may share one)
            runner.start()

    async def stop(self) -> None:
        """End every runner's connections (a hand-over under way first)."""
        if self._handover is not None:
            self._handover.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._handover
        for runner in [*self.runners, *self._leaving]:
            await runner.stop()

    def _channel(self, context: ChannelContext, peer: Peer, kept: Iterable[Runner]) -> list[Runner]:
        if peer.transport is not Transport.P1:
            if self.others is None:
                raise ValueError(f"peer {peer.name}: no {peer.transport.value} transport here")
            return self.others(context, peer, kept)
        reachable = functools.partial(self.peer_reachable, peer.name)
        slot_runners = [r for r in kept if isinstance(r, SlotRunner)]
        return [
            next((r for r in slot_runners if r.serves(peer, slot)), None)
            or SlotRunner(context, peer, slot, on_connected=reachable, parts=self.parts)
            for slot in peer.slots
        ]

    # --- a reload ----------------------------------------------------------------------

    def swap(
        self,
        runners: dict[str, list[Runner]],
        context: ChannelContext,
        config: MtaConfig,
        then: Callable[[], Awaitable[None]] | None,
    ) -> None:
        """Serve with ``runners`` (from :meth:`build`) from now on: the kept ones are
        reconfigured at once, the others hand over in a task, which then awaits
        ``then()``.  Nothing here fails or awaits."""
        kept = {r for rs in runners.values() for r in rs} & set(self.runners)
        leaving = [r for r in self.runners if r not in kept]
        fresh = list(dict.fromkeys(r for rs in runners.values() for r in rs if r not in kept))
        for peer in config.peers:
            for runner in runners[peer.name]:
                if runner in kept:
                    runner.reconfigure(context, peer)
        self._runners = runners
        self._leaving.update(dict.fromkeys(leaving))
        previous = self._handover
        self._handover = asyncio.create_task(
            self._hand_over(previous, leaving, fresh, then), name="reload hand-over"
        )
        self._handover.add_done_callback(_hand_over_ended)

    async def _hand_over(
        self,
        previous: asyncio.Task[None] | None,
        leaving: list[Runner],
        fresh: list[Runner],
        then: Callable[[], Awaitable[None]] | None,
    ) -> None:
        """The runners ``leaving`` stop opening connections, ``fresh`` start (a slot's
        new runner only once its old one's supervisor has ended: they share its name),
        and what ``leaving`` claimed and did not send is pending again for them."""
        if previous is not None:
            await asyncio.wait((previous,))  # (one reload's hand-over after another's)
        for runner in leaving:
            await runner.retire()
        for runner in fresh:
            runner.start()
        for runner in leaving:
            await runner.drain()
            self._leaving.pop(runner, None)
        if leaving:
            self.wake()  # (what they put back is due for the runners that replace them)
        if then is not None:
            await then()

    # --- wake-ups ----------------------------------------------------------------------

    def wake(self, plan: Plan | None = None, delivered: bool = False) -> None:
        """Something was queued: wake whoever serves its routes at its precedence
        (everyone if unsure).  ``delivered``: the plan's local recipients were delivered
        as it was taken in, so the local deliverer has nothing to do for it."""
        message = plan.message if plan is not None else None
        precedence = message.precedence if message is not None else None
        routes = {r.route for r in message.recipients} if message is not None else None
        if routes is None or plan is None or plan.rejected:
            routes, precedence = {LOCAL_ROUTE, *self._runners}, None
        elif delivered:
            routes.discard(LOCAL_ROUTE)
        if LOCAL_ROUTE in routes:
            self.local()
        for route in routes:
            for runner in self.of(route):
                if precedence is None or runner.admits(precedence):
                    runner.wake()  # (a slot that does not carry it would claim nothing)

    def claim_ahead(self, peers: Iterable[str], precedence: Precedence) -> None:
        """A submission at ``precedence`` for ``peers`` is queued for commit: for each, an
        idle connection of a slot carrying that precedence queues its claim right behind
        it (:meth:`SlotRunner.claim_ahead`)."""
        for peer in peers:
            for runner in self.of(peer):
                if runner.admits(precedence) and runner.claim_ahead():
                    break

    def flush(self, peer: str) -> None:
        """The operator asks ``peer``'s slots to try again now (:meth:`SlotRunner.flush`)."""
        for runner in self.of(peer):
            runner.flush()

    def peer_reachable(self, peer: str) -> None:
        """``peer`` answers (a slot bound to it, or it bound to us): every slot of its
        channel that waits out a backoff tries again now, the urgent ones included."""
        for runner in self.of(peer):
            runner.peer_reachable()


def _hand_over_ended(task: asyncio.Task[None]) -> None:
    """Log a reload's hand-over that failed (its runners are stopped with the service)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("reload: the hand-over of the channels failed", exc_info=task.exception())
