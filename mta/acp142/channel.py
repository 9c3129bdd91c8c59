"""The channel to ACP 142 peers: queued messages handed to the link, their outcomes
marked (the outbound side of the transport seam, :mod:`mta.transport`).

One :class:`Acp142Channel` per peer with ``transport = "acp142"``, or per multicast group
for the peers that share one (``[peers.acp142] group``): a message queued for several of
them goes once, to the group, naming each (:mod:`mta.acp142.share` says what each takes
on), and each peer's part is marked as that peer acknowledges it.  It claims the most
urgent, oldest messages for its peers, at most ``[peers.acp142] window`` on their way at a
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

    Acp142Channel(context, peers, link, *, parts)     .peers  .key
        .start() / .stop() / .wake() / .peer_reachable() / .flush() / .snapshot()
        .admits(precedence) / .claim_ahead() -> bool
        .reconfigure(context, peer)   .retire() / .drain()   .retiring
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from config.schema import Peer
from config.values import P1Protocol
from mta.acp142.link import Acp142Link, Sending
from mta.database import is_urgent
from mta.outbound.channels import ChannelContext, retry_delay
from mta.outbound.outgoing import LinkClearance, Outgoing, outgoing, transfer_apdu
from mta.supervisor import Supervisor
from mta.transport import ConnectionSnapshot, ConnectionState, SlotSnapshot
from p1.mts.precedence import Precedence
from store import QueueEntry
from store.spool import as_bytes

__all__ = ["Acp142Channel"]

log = logging.getLogger("aiox400.mta")

_POLL = 1.0
"""Seconds between looks at the queue when nothing wakes the channel."""
_ALL = tuple(Precedence.most_urgent_first())
_URGENT = tuple(p for p in _ALL if is_urgent(p))


@dataclass(slots=True)
class _OnItsWay:
    parts: dict[str, QueueEntry]
    """What each peer is to take on, by peer name."""
    sending: Sending
    started: float


def channel_key(peers: Sequence[Peer]) -> tuple[tuple[str, object], ...]:
    """What a channel serves: its peers' names and ACP 142 settings (a reload that
    leaves them as they are keeps the channel)."""
    return tuple((p.name, p.acp142) for p in peers)


class Acp142Channel:
    """The channel to ACP 142 peers (see the module docstring)."""

    def __init__(
        self,
        context: ChannelContext,
        peers: Sequence[Peer],
        link: Acp142Link,
        *,
        parts: Supervisor,
    ) -> None:
        self.context = context
        self.peers = tuple(peers)
        self.key = channel_key(self.peers)
        self.link = link
        self._parts = parts
        self.name = "+".join(p.name for p in self.peers) + "/acp142"
        self._wakes = 0
        self._woken = asyncio.Event()
        self._on_its_way: dict[int, _OnItsWay] = {}
        self._confirmed: dict[str, list[QueueEntry]] = {p.name: [] for p in self.peers}
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
        """Stop: what the peers acknowledged is marked; the rest stays claimed."""
        await self._parts.stop(self.part)
        self._abandon()
        for peer in self.peers:
            if self._confirmed[peer.name]:
                await self._put_back(peer.name, None, ())

    async def retire(self) -> None:
        """A reload replaces or removes the peers: stop sending, put back the rest."""
        self._retiring = True
        await self._parts.stop(self.part)
        unsent = self._abandon()
        for peer in self.peers:
            await self._put_back(peer.name, None, unsent.get(peer.name, ()))
        self._ended.set()

    async def drain(self) -> None:
        """Wait until :meth:`retire` is done."""
        await self._ended.wait()

    def reconfigure(self, context: ChannelContext, peer: Peer) -> None:
        """Take a reloaded configuration that leaves the peers' ACP 142 settings as they
        are (their routes may differ)."""
        self.context = context
        self.peers = tuple(peer if p.name == peer.name else p for p in self.peers)

    def _abandon(self) -> dict[str, tuple[QueueEntry, ...]]:
        """Send nothing more; what was on its way (claimed, not acknowledged), by peer."""
        unsent: dict[str, list[QueueEntry]] = {}
        for way in self._on_its_way.values():
            self.link.cancel(way.sending)
            for name, entry in way.parts.items():
                outcome = way.sending.outcomes[name]
                if outcome.done() and not outcome.cancelled() and outcome.result():
                    self._confirmed[name].append(entry)
                else:
                    unsent.setdefault(name, []).append(entry)
        self._on_its_way.clear()
        return {name: tuple(entries) for name, entries in unsent.items()}

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
            for way in self._on_its_way.values():
                waits += way.sending.outcomes.values()  # type: ignore[arg-type]
            await asyncio.wait(waits, timeout=_POLL, return_when=asyncio.FIRST_COMPLETED)
            waits[0].cancel()
            await self._outcomes()

    async def _claim(self) -> None:
        """Claim for every peer, then send each message claimed once for all the peers
        it was claimed for.  Every claim is queued before any is awaited, so that they
        share one transaction: a message for several of the peers is claimed for all of
        them or for none (a submission committed between two peers' claims would be sent
        once per peer)."""
        window = self.peers[0].acp142.window
        ways = self._on_its_way.values()
        urgent = sum(1 for w in ways if is_urgent(next(iter(w.parts.values())).precedence))
        spare = window - len(self._on_its_way)
        claims = [
            (peer.name, self._claim_of(peer.name, precedences, limit))
            for peer in self.peers
            for precedences, limit in ((_URGENT, window - urgent), (_ALL, spare))
        ]
        claimed: dict[int, dict[str, QueueEntry]] = {}
        for name, claim in claims:
            for entry in await claim:
                claimed.setdefault(entry.message_id, {})[name] = entry
        for parts in sorted(claimed.values(), key=_urgency):
            await self._send(parts)

    def _claim_of(
        self, peer: str, precedences: tuple[Precedence, ...], limit: int
    ) -> Awaitable[tuple[QueueEntry, ...]]:
        """The claim of up to ``limit`` messages for ``peer``, queued now (with the
        peer's acknowledged messages to mark); nothing is queued when there is neither."""
        confirmed = self._confirmed[peer]
        if limit <= 0 and not confirmed:
            nothing: asyncio.Future[tuple[QueueEntry, ...]] = (
                asyncio.get_running_loop().create_future()
            )
            nothing.set_result(())
            return nothing
        self._confirmed[peer] = []
        return asyncio.shield(
            self.context.queue.claim(
                peer,
                precedences,
                limit=max(0, limit),
                transferred=confirmed,
                max_octets=None,
                urgent=True,
            )
        )

    async def _send(self, claimed: dict[str, QueueEntry]) -> None:
        """One message claimed for one or more of the peers: each part checked for its
        link, the rest sent once."""
        wires: dict[str, Outgoing] = {}
        for name, entry in claimed.items():
            wire = outgoing(entry, P1Protocol.NORMAL, None, self._clearance(self._peer(name)))
            if wire.refused is not None:
                await self._non_deliver(name, wire)
            if wire.entry is not None:
                wires[name] = wire
        if not wires:
            return
        parts = {name: wire.entry for name, wire in wires.items() if wire.entry is not None}
        # (An ACP 142 claim is not mapped: the P_MUL link takes the APDU as bytes.)
        apdu = _together(parts) if len(parts) > 1 else as_bytes(next(iter(wires.values())).apdu)
        peers = [self._peer(name) for name in parts]
        first = next(iter(parts.values()))
        sending = self.link.send(peers, apdu, first.precedence, self._expiry(first, peers[0]))
        self._on_its_way[sending.message_id] = _OnItsWay(parts, sending, time.monotonic())
        self._enter(ConnectionState.TRANSFERRING)

    async def _non_deliver(self, peer: str, wire: Outgoing) -> None:
        assert wire.refused is not None
        done, self._confirmed[peer] = self._confirmed[peer], []
        await asyncio.shield(
            self.context.queue.non_deliver(
                wire.refused, wire.report, why=wire.why, peer=peer, transferred=done
            )
        )
        log.warning("non-delivered %s to %s: %s", wire.refused.mts_identifier, peer, wire.why)

    def _peer(self, name: str) -> Peer:
        return next(p for p in self.peers if p.name == name)

    def _clearance(self, peer: Peer) -> LinkClearance | None:
        security = self.context.config.security
        if not security.enforced:
            return None
        return LinkClearance(security=security, clearance=security.clearance_named(peer.clearance))

    def _expiry(self, entry: QueueEntry, peer: Peer) -> int:
        """The Expiry_Time of this attempt: ``give_up`` from now, or the message's own."""
        until = time.time() + peer.acp142.give_up
        if entry.expiry_time is not None:
            until = min(until, entry.expiry_time.timestamp())
        return int(until) + 1

    async def _outcomes(self) -> None:
        for message_id, way in list(self._on_its_way.items()):
            for name, outcome in list(way.sending.outcomes.items()):
                if not outcome.done() or name not in way.parts:
                    continue
                entry = way.parts.pop(name)
                if outcome.cancelled():
                    continue
                if outcome.result():
                    self._arrived(name, entry, way.started)
                else:
                    await self._expired(name, entry)
            if not way.parts:
                del self._on_its_way[message_id]
        if not self._on_its_way and self._state is ConnectionState.TRANSFERRING:
            self._enter(ConnectionState.IDLE)

    def _arrived(self, peer: str, entry: QueueEntry, started: float) -> None:
        self._confirmed[peer].append(entry)
        self._transfers += 1
        took = time.monotonic() - started
        self.context.metrics.transferred(peer, entry, took, datetime.now(UTC))
        log.info(
            "transferred %s (%s, %d recipient(s), %d octets) to %s over ACP 142 in %.1f s",
            entry.mts_identifier,
            entry.precedence.label,
            len(entry.recipients),
            len(entry.apdu),
            peer,
            took,
        )

    async def _expired(self, peer: str, entry: QueueEntry) -> None:
        self._last_error = "not acknowledged before its Expiry_Time on the link"
        self.context.metrics.transfer_failed(peer, entry.precedence)
        await self._put_back(peer, entry, ())
        self._enter(ConnectionState.BACKOFF)

    async def _put_back(
        self, peer: str, failed: QueueEntry | None, unsent: tuple[QueueEntry, ...]
    ) -> None:
        done, self._confirmed[peer] = self._confirmed[peer], []
        if failed is None and not unsent and not done:
            return
        why = self._last_error or "the channel stopped"
        delay = None
        if failed is not None:
            policy = self.context.config.retry
            delay = retry_delay(failed, idled=False, policy=policy, draw=random.random())
        now = datetime.now(UTC)
        await asyncio.shield(
            self.context.queue.put_back(
                peer=peer,
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
                f"deferred to {peer}",
                "deferred %s to %s: %s; next in %.1f s",
                failed.mts_identifier,
                peer,
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
        settings = self.peers[0].acp142
        group = settings.group if len(self.peers) > 1 else None
        return SlotSnapshot(
            peer=", ".join(p.name for p in self.peers),
            precedences=tuple(p.label for p in _ALL),
            host=group or ", ".join(h for p in self.peers for h in p.hosts),
            port=settings.data_port,
            dscp="-",
            mode="acp142" + (" emcon" if any(p.acp142.emcon for p in self.peers) else ""),
            tls=False,
            max_connections=1,  # (the link: there are no connections)
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


def _urgency(parts: dict[str, QueueEntry]) -> tuple[int, float]:
    """Most urgent first, then oldest."""
    entry = next(iter(parts.values()))
    return -int(entry.precedence), entry.arrival_time.timestamp()


def _together(parts: dict[str, QueueEntry]) -> bytes:
    """The APDU that makes each peer of a group responsible for its part: the
    responsibility bit set for every part's recipients (each peer takes on its own,
    :mod:`mta.acp142.share`)."""
    entries = list(parts.values())
    recipients = tuple(r for entry in entries for r in entry.recipients)
    return as_bytes(transfer_apdu(dataclasses.replace(entries[0], recipients=recipients)))
