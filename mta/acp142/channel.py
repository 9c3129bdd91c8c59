"""The channel to one ACP 142 peer: queued messages handed to the link, their outcomes
marked (the outbound side of the transport seam, :mod:`mta.transport`).

One :class:`Acp142Channel` per peer with ``transport = "acp142"``.  It claims the most
urgent, oldest messages for the peer, at most ``[peers.acp142] window`` on their way at a
time, and the urgent precedences (immediate and above) a window of their own besides, so
that a flash message is never kept waiting behind large routine ones: the link then sends
its PDUs first.  Each message goes as :mod:`mta.outbound.outgoing` makes it for the peer
(its label checked against the link's clearance, responsibility for the claimed
recipients), and:

- when the peer acknowledged the whole of it (or, for a peer in EMCON, once its
  repetitions were sent) it is marked transferred with the next claim: X.411
  responsibility has passed;
- when it expired on the link first (``give_up``, or its own expiry), it is put back for
  its next attempt after the ``[retry]`` delay, as a failed P1 transfer is; the message's
  own expiry turns it into a non-delivery report as for any peer.

Nothing is marked transferred before the peer acknowledged it.  On a stop or a reload the
messages on their way are no longer sent and stay claimed: the MTA puts them back, and
a peer that had them already does not deliver them twice (intake knows the MTS
identifier).

Public API::

    Acp142Channel(context, peer, link, *, parts)
        .start() / .stop() / .wake() / .peer_reachable() / .flush() / .snapshot()
        .admits(precedence) / .claim_ahead() -> bool
        .reconfigure(context, peer)   .retire() / .drain()   .retiring
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from config.schema import Peer
from mta.acp142.link import Acp142Link, Sending
from mta.database import is_urgent
from mta.outbound.channels import ChannelContext, retry_delay
from mta.outbound.outgoing import LinkClearance, outgoing
from mta.supervisor import Supervisor
from mta.transport import ConnectionSnapshot, ConnectionState, SlotSnapshot
from p1.mts.precedence import Precedence
from store import QueueEntry

__all__ = ["Acp142Channel"]

log = logging.getLogger("aiox400.mta")

_POLL = 1.0
"""Seconds between looks at the queue when nothing wakes the channel."""
_ALL = tuple(Precedence.most_urgent_first())
_URGENT = tuple(p for p in _ALL if is_urgent(p))


@dataclass(slots=True)
class _OnItsWay:
    entry: QueueEntry
    sending: Sending
    started: float


class Acp142Channel:
    """The channel to one ACP 142 peer (see the module docstring)."""

    def __init__(
        self, context: ChannelContext, peer: Peer, link: Acp142Link, *, parts: Supervisor
    ) -> None:
        self.context = context
        self.peer = peer
        self.link = link
        self._parts = parts
        self.name = f"{peer.name}/acp142"
        self._wakes = 0
        self._woken = asyncio.Event()
        self._on_its_way: dict[int, _OnItsWay] = {}
        self._confirmed: list[QueueEntry] = []
        self._retiring = False
        self._state = ConnectionState.IDLE
        self._since = time.monotonic()
        self._transfers = 0
        self._last_error: str | None = None
        self._ended = asyncio.Event()

    # --- life ------------------------------------------------------------------------------

    @property
    def part(self) -> str:
        """The name of the channel's task among the daemon's parts."""
        return f"channel {self.name}"

    @property
    def retiring(self) -> bool:
        """Whether :meth:`retire` was called."""
        return self._retiring

    def start(self) -> None:
        """Start claiming and sending."""
        self._parts.start(self.part, self._run)

    async def stop(self) -> None:
        """Stop: what the peer acknowledged is marked; the rest stays claimed."""
        await self._parts.stop(self.part)
        self._abandon()
        if self._confirmed:
            await self._put_back(None, ())

    async def retire(self) -> None:
        """A reload replaces or removes the peer: stop sending, put back the rest."""
        self._retiring = True
        await self._parts.stop(self.part)
        unsent = self._abandon()
        await self._put_back(None, unsent)
        self._ended.set()

    async def drain(self) -> None:
        """Wait until :meth:`retire` is done."""
        await self._ended.wait()

    def reconfigure(self, context: ChannelContext, peer: Peer) -> None:
        """Take a reloaded configuration for the same peer and link settings."""
        self.context = context
        self.peer = peer

    def _abandon(self) -> tuple[QueueEntry, ...]:
        """Send nothing more; what was on its way (claimed, not acknowledged)."""
        entries = tuple(way.entry for way in self._on_its_way.values())
        for way in self._on_its_way.values():
            self.link.cancel(way.sending)
        self._on_its_way.clear()
        return entries

    # --- wake-ups --------------------------------------------------------------------------

    def wake(self) -> None:
        """A message may be waiting."""
        self._wakes += 1
        self._woken.set()
        self._woken = asyncio.Event()

    def admits(self, precedence: Precedence) -> bool:
        """Every precedence goes over the one link."""
        return True

    def claim_ahead(self) -> bool:
        """Claims are not queued behind submissions here (the link is slower than that)."""
        return False

    def peer_reachable(self) -> None:
        """Nothing waits on a connection here."""

    def flush(self) -> None:
        """The operator asks to try again now: look at the queue."""
        self.wake()

    # --- the work --------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            woken = self._woken
            await self._claim()
            waits: list[asyncio.Future[object]] = [asyncio.ensure_future(woken.wait())]
            waits += [way.sending.outcome for way in self._on_its_way.values()]  # type: ignore[misc]
            await asyncio.wait(waits, timeout=_POLL, return_when=asyncio.FIRST_COMPLETED)
            waits[0].cancel()
            await self._outcomes()

    async def _claim(self) -> None:
        window = self.peer.acp142.window
        urgent = sum(1 for w in self._on_its_way.values() if is_urgent(w.entry.precedence))
        claimed = await self._claim_of(_URGENT, window - urgent)
        claimed += await self._claim_of(_ALL, window - len(self._on_its_way) - len(claimed))
        for entry in claimed:
            await self._send(entry)

    async def _claim_of(
        self, precedences: tuple[Precedence, ...], limit: int
    ) -> tuple[QueueEntry, ...]:
        if limit <= 0 and not self._confirmed:
            return ()
        confirmed, self._confirmed = self._confirmed, []
        return await asyncio.shield(
            self.context.queue.claim(
                self.peer.name,
                precedences,
                limit=max(0, limit),
                transferred=confirmed,
                max_octets=None,
                urgent=True,
            )
        )

    async def _send(self, claimed: QueueEntry) -> None:
        wire = outgoing(claimed, self.peer.protocol, None, self._clearance())
        if wire.refused is not None:
            done, self._confirmed = self._confirmed, []
            await asyncio.shield(
                self.context.queue.non_deliver(
                    wire.refused, wire.report, why=wire.why, peer=self.peer.name, transferred=done
                )
            )
            log.warning(
                "non-delivered %s to %s: %s", claimed.mts_identifier, self.peer.name, wire.why
            )
        if wire.entry is None:
            return
        sending = self.link.send(self.peer, wire.apdu, claimed.precedence, self._expiry(claimed))
        self._on_its_way[sending.message_id] = _OnItsWay(wire.entry, sending, time.monotonic())
        self._enter(ConnectionState.TRANSFERRING)

    def _clearance(self) -> LinkClearance | None:
        security = self.context.config.security
        if not security.enforced:
            return None
        return LinkClearance(
            security=security, clearance=security.clearance_named(self.peer.clearance)
        )

    def _expiry(self, entry: QueueEntry) -> int:
        """The Expiry_Time of this attempt: ``give_up`` from now, or the message's own."""
        until = time.time() + self.peer.acp142.give_up
        if entry.expiry_time is not None:
            until = min(until, entry.expiry_time.timestamp())
        return int(until) + 1

    async def _outcomes(self) -> None:
        for message_id, way in list(self._on_its_way.items()):
            outcome = way.sending.outcome
            if not outcome.done():
                continue
            del self._on_its_way[message_id]
            if outcome.cancelled():
                continue
            if outcome.result():
                self._arrived(way)
            else:
                await self._expired(way)
        if not self._on_its_way and self._state is ConnectionState.TRANSFERRING:
            self._enter(ConnectionState.IDLE)

    def _arrived(self, way: _OnItsWay) -> None:
        self._confirmed.append(way.entry)
        self._transfers += 1
        took = time.monotonic() - way.started
        self.context.metrics.transferred(self.peer.name, way.entry, took, datetime.now(UTC))
        log.info(
            "transferred %s (%s, %d recipient(s), %d octets) to %s over ACP 142 in %.1f s",
            way.entry.mts_identifier,
            way.entry.precedence.label,
            len(way.entry.recipients),
            len(way.entry.apdu),
            self.peer.name,
            took,
        )

    async def _expired(self, way: _OnItsWay) -> None:
        self._last_error = "not acknowledged before its Expiry_Time on the link"
        self.context.metrics.transfer_failed(self.peer.name, way.entry.precedence)
        await self._put_back(way.entry, ())
        self._enter(ConnectionState.BACKOFF)

    async def _put_back(self, failed: QueueEntry | None, unsent: tuple[QueueEntry, ...]) -> None:
        done, self._confirmed = self._confirmed, []
        why = self._last_error or "the channel stopped"
        delay = None
        if failed is not None:
            policy = self.context.config.retry
            delay = retry_delay(failed, idled=False, policy=policy, draw=random.random())
        now = datetime.now(UTC)
        await asyncio.shield(
            self.context.queue.put_back(
                peer=self.peer.name,
                transferred=done,
                failed=failed,
                error=why,
                next_attempt_at=None if delay is None else now + timedelta(seconds=delay),
                unsent=unsent,
            )
        )
        if failed is not None:
            self.context.notes.warning(
                log,
                f"deferred to {self.peer.name}",
                "deferred %s to %s: %s; next in %.1f s",
                failed.mts_identifier,
                self.peer.name,
                why,
                delay or 0.0,
            )

    # --- what the operator sees ------------------------------------------------------------

    def _enter(self, state: ConnectionState) -> None:
        if state is not self._state:
            self._state = state
            self._since = time.monotonic()

    def snapshot(self) -> SlotSnapshot:
        """The channel as one slot with one pseudo-connection (the link)."""
        endpoint = self.peer.acp142
        return SlotSnapshot(
            peer=self.peer.name,
            precedences=tuple(p.label for p in _ALL),
            host=", ".join(self.peer.hosts),
            port=endpoint.data_port,
            dscp="-",
            mode="acp142" + (" emcon" if endpoint.emcon else ""),
            tls=False,
            max_connections=endpoint.window,
            backlog=len(self._on_its_way),
            connections=(
                ConnectionSnapshot(
                    index=0,
                    state=self._state,
                    since=time.monotonic() - self._since,
                    transfers=self._transfers,
                    last_error=self._last_error,
                ),
            ),
        )
