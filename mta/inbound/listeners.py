"""P1 listeners: accept peers' connections, authenticate their MTA-bind, hand on transfers.

One marked listener per configured ``[[listeners]]`` entry (the DSCP is set before the
first accept, :mod:`mta.net`).  Each accepted connection is first admitted by the guard
(:mod:`mta.inbound.guard`), then served as one association (:func:`mta.link.serve_link`):
the peer authenticates in the MTA-bind (X.411 12.1.1: its name must be a configured
peer's, its password the one configured for it) and every transfer it makes goes to the
inbound sink (:class:`mta.transport.InboundSink`, intake); it is confirmed only once the
sink returned, so this MTA is responsible for it only once it is committed (X.411
12.2.1.1).  A :class:`mta.transport.Refused` becomes the association's refusal.

Public API::

    Listeners(config, sink, *, guard, metrics, reachable, settings, timeouts)
        await .start() -> list[asyncio.Server]     .close()  await .stop()
        .reconfigure(config, settings, timeouts)   (a reload: new connections use them)
    listener_settings(base, listener) -> AssociationSettings
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
from collections.abc import Callable, Iterator
from typing import Any

from config.schema import Listener, MtaConfig, Peer
from mta import net
from mta.inbound.budget import InboundBudget
from mta.inbound.guard import Guard
from mta.link import Responder, Timeouts, TransferRefusedError, serve_link
from mta.metrics import Metrics
from mta.transport import InboundSink, Refused
from p1.association.connection import AssociationSettings, BindRequested, TransferTooLong
from p1.association.mtabind import MTABindError, MTABindResult

__all__ = ["Listeners", "listener_settings"]

log = logging.getLogger("aiox400.mta")


class Listeners:
    """The P1 listeners of one MTA, and the associations they serve."""

    def __init__(
        self,
        config: MtaConfig,
        sink: InboundSink,
        *,
        guard: Guard,
        metrics: Metrics,
        reachable: Callable[[str], None],
        settings: AssociationSettings,
        timeouts: Timeouts,
    ) -> None:
        self.config = config
        self.sink = sink
        self.guard = guard
        self.metrics = metrics
        self.reachable = reachable
        """Called with a peer's name once it bound: its channels try again now."""
        self.settings = settings
        self.timeouts = timeouts
        self.servers: list[asyncio.Server] = []
        self.budget = InboundBudget(config.connection_limits.max_inbound_buffer)
        """What every inbound association's PDUs may hold together."""
        self._inbound: set[asyncio.Task[Any]] = set()

    @property
    def associations(self) -> set[asyncio.Task[Any]]:
        """The tasks serving inbound associations now."""
        return self._inbound

    @property
    def ports(self) -> list[int]:
        """The TCP ports P1 is served on (useful when configured as 0)."""
        return [net.bound_port(server) for server in self.servers]

    async def start(self) -> None:
        """Listen on every configured address (raises if one cannot be bound)."""
        for listener in self.config.listeners:
            server = await net.start_marked_server(
                functools.partial(self._accept, listener),
                listener.address,
                listener.port,
                dscp=listener.dscp,
                congestion=self.config.tcp_congestion,
            )
            self.servers.append(server)

    def reconfigure(
        self, config: MtaConfig, settings: AssociationSettings, timeouts: Timeouts
    ) -> None:
        """Serve new connections and binds on ``config`` (listeners stay as they were)."""
        self.config, self.settings, self.timeouts = config, settings, timeouts
        self.budget.resize(config.connection_limits.max_inbound_buffer)

    def close(self) -> None:
        """Accept no more connections."""
        for server in self.servers:
            server.close()

    async def stop(self) -> None:
        """End every association being served, and wait for the listeners to close."""
        self.close()
        tasks = [*self._inbound]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for server in self.servers:
            await server.wait_closed()
        self.servers.clear()

    async def _accept(
        self,
        listener: Listener,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        task = asyncio.current_task()
        assert task is not None

        def close() -> None:
            writer.transport.abort()
            task.cancel()

        ticket = self.guard.admit(writer.get_extra_info("peername"), close)
        if ticket is None:  # over a limit: closed before anything is read
            writer.transport.abort()
            return
        self._inbound.add(task)
        try:
            # Cancelled by stop(), or when the guard gives this unbound connection's place
            # to another: end quietly, as Python 3.11's streams would report a cancelled
            # connection handler to the loop's exception handler as an error.
            with contextlib.suppress(asyncio.CancelledError):
                await serve_link(
                    reader,
                    writer,
                    _Inbound(self),
                    settings=listener_settings(self.settings, listener),
                    timeouts=self.timeouts,
                    ticket=ticket,
                    budget=self.budget,
                )
        finally:
            ticket.release()
            self._inbound.discard(task)


class _Inbound(Responder):
    """One inbound association: who the peer is, and where its transfers go."""

    def __init__(self, listeners: Listeners) -> None:
        self.listeners = listeners
        self.peer: Peer | None = None

    async def on_bind(self, event: BindRequested) -> MTABindResult | MTABindError:
        config, metrics = self.listeners.config, self.listeners.metrics
        argument = event.argument
        peer = _peer_named(config, argument.initiator_name)
        notes = self.listeners.guard.warnings  # (anyone can make these lines: rate-limited)
        if peer is None:
            notes.warning(
                log, "unknown MTA", "bind refused: unknown MTA %r", argument.initiator_name
            )
            metrics.bind_refused("", "in", "unknown-mta")
            return MTABindError.AUTHENTICATION_ERROR
        expected = peer.their_credentials.password
        if expected is not None and not expected.matches(argument.password or ""):
            notes.warning(
                log, f"password {peer.name}", "bind refused: wrong password from %s", peer.name
            )
            metrics.bind_refused(peer.name, "in", "wrong-password")
            return MTABindError.AUTHENTICATION_ERROR
        self.peer = peer
        self.listeners.reachable(peer.name)
        ours = peer.our_credentials
        password = ours.password or config.password
        return MTABindResult(
            responder_name=ours.name, password=password.reveal() if password else ""
        )

    async def on_transfer(self, apdu: bytes) -> None:
        assert self.peer is not None, "transfers come only after an accepted bind"
        with _refusal():
            await self.listeners.sink.receive(apdu, self.peer.name)

    async def on_transfer_too_long(self, event: TransferTooLong) -> None:
        assert self.peer is not None, "transfers come only after an accepted bind"
        with _refusal():
            await self.listeners.sink.receive_too_long(event, self.peer.name)


@contextlib.contextmanager
def _refusal() -> Iterator[None]:
    """The sink's :class:`Refused` as the association's refusal (the peer keeps it)."""
    try:
        yield
    except Refused as refused:
        raise TransferRefusedError(str(refused), temporary=refused.temporary) from refused


def _peer_named(config: MtaConfig, name: str | None) -> Peer | None:
    if name is None:
        return None
    return next((p for p in config.peers if p.their_credentials.name == name), None)


def listener_settings(base: AssociationSettings, listener: Listener) -> AssociationSettings:
    """``base`` serving only the called selectors ``listener`` accepts: a CR for another
    TSEL is refused with DR "address unknown" (X.224 13.3.4 a), a CN for another SSEL
    with RF "session selector unknown" (X.225), a CP for another PSEL with CPR
    called-presentation-address-unknown (X.226)."""
    return dataclasses.replace(
        base,
        served_tsaps=listener.tsels,
        served_ssaps=listener.ssels,
        served_psaps=listener.psels,
    )
