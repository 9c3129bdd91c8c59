"""P1 listeners: accept peers' connections, authenticate their MTA-bind, hand on transfers.

One marked listener per configured ``[[listeners]]`` entry (the DSCP is set before the
first accept, :mod:`mta.net`).  Each accepted connection is first admitted by the guard
(:mod:`mta.inbound.guard`), then served as one association (:func:`mta.link.serve_link`):
the peer authenticates in the MTA-bind (X.411 12.1.1: its name must be a configured
peer's, its password the one configured for it) and every transfer it makes goes to the
inbound sink (:class:`mta.transport.InboundSink`, intake); it is confirmed only once the
sink returned, so this MTA is responsible for it only once it is committed (X.411
12.2.1.1).  A :class:`mta.transport.Refused` becomes the association's refusal.

Passwords (X.411 12.1.1.1.1.2: ``Password ::= CHOICE { ia5-string IA5String,
octet-string OCTET STRING }``, each of 62 at most, in both modes; the codec refuses any
other type or length): both alternatives are the standard's, and PP 6.0 sends the
octet-string one, so a configured ``peer_password`` (ASCII text) matches either
alternative carrying its octets.  Strong credentials never match a configured password.
A peer configured without ``peer_password`` is not authenticated: its bind is accepted on
its name, and answered ``unauthenticated`` (NULL, X.411 12.1.1.2), so that neither this
MTA's name nor its password goes to whoever claims that name.

A reload that changes a peer's credentials (``peer_password``, or what this MTA presents
to it) ends its associations bound with the old ones: an idle one at once, one taking in
a transfer once that transfer is confirmed.  Each is aborted as temporary (a responder
cannot release, X.228 7.6): the peer keeps what it had not had confirmed and binds again,
with the credentials configured now.

A listener with ``tls = "required"`` completes a TLS handshake (:mod:`mta.net`) on each
connection the guard admitted before anything else is read: the handshake is held to the
pre-bind limits (its place among the unbound connections, ``bind_timeout``), and a
handshake that fails (a plaintext client, a certificate refused, garbage) is one
rate-limited line.  The peer named in the MTA-bind must then be the one the connection
proves: a peer with ``tls = "required"`` binds only over TLS with its own certificate
(:func:`mta.net.certificate_mismatch`), and a peer with ``addresses`` only from one of
them; otherwise the bind is refused as for a wrong password, and logged as such.  The
listeners' certificates and trusted CAs are read again at each reload.

A transfer with checkpoints that a lost connection (or this MTA's own abort) cuts off is
kept, up to its last confirmed checkpoint, for its sender to resume on a later
association (X.228 recovery, :mod:`p1.osi.rtse_recovery`): at most ``KEPT_TRANSFERS``
of them, together no more than a quarter of ``max_inbound_buffer``, each for
``KEEP_FOR`` seconds, each only for the peer that sent it.  A later association bound
to that peer may resume it (S-ACTIVITY-RESUME); an RT-OPEN ``recover`` naming the
connection it was cut off on is taken as that peer's bind, once the connection proves
what a bind from that peer must (its addresses, its TLS certificate), since it carries
no password: it must name the connection by the random reference of that connection's
CN.  When the association of the connection it names is still being served (a cut link
need not reset both ends at once), that association is ended first, as lost, and what
it had is kept.  Nothing of a transfer is confirmed before the whole of it is committed.

The configured peers' hosts are resolved at start and at each reload, and their
addresses handed to the guard (:meth:`mta.inbound.guard.Guard.know`): a peer's own
connections never wait behind strangers'.

Public API::

    Listeners(config, sink, *, guard, metrics, reachable, settings, timeouts)
        await .start() -> list[asyncio.Server]     .close()  await .stop()
        .reconfigure(config, settings, timeouts)   (a reload: new connections use them,
                                                    a peer's whose credentials changed end)
    listener_settings(base, listener) -> AssociationSettings
    await peer_addresses(config) -> set[str]       the configured peers' hosts, resolved
    KEPT_TRANSFERS, KEEP_FOR                       what is kept of interrupted transfers
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import ipaddress
import logging
import socket
import ssl
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, Final

from config.schema import Listener, MtaConfig, Peer, TlsMode
from config.values import Secret, Transport
from mta import net
from mta.faults import LogLimiter
from mta.inbound import sources
from mta.inbound.budget import InboundBudget
from mta.inbound.guard import Guard
from mta.link import Responder, Timeouts, TransferRefusedError, serve_link
from mta.metrics import Metrics
from mta.transport import InboundSink, Refused
from p1.association.connection import (
    AssociationSettings,
    BindRequested,
    RecoveryRequested,
    TransferTooLong,
)
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult
from p1.osi.rtse_recovery import (
    PartialTransfer,
    PartialTransfers,
    Resumption,
    SessionConnectionId,
)

__all__ = ["KEEP_FOR", "KEPT_TRANSFERS", "Listeners", "listener_settings", "peer_addresses"]

log = logging.getLogger("aiox400.mta")

RESOLVE_TIMEOUT: Final = 10.0
"""Seconds a peer's host may take to resolve (a host that does not is a stranger's)."""
TICK: Final = 5.0
"""Seconds between the guard's looks at the failed binds it counted."""
KEPT_TRANSFERS: Final = 8
"""Interrupted transfers kept at most, all peers together, for their senders to resume."""
KEEP_FOR: Final = 600.0
"""Seconds an interrupted transfer is kept for its sender to resume."""
HANDOVER_WAIT: Final = 5.0
"""Seconds a recovery waits for the association it recovers, still served, to end."""


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
        self.kept = PartialTransfers(
            max_count=KEPT_TRANSFERS,
            max_octets=_kept_octets(config),
            keep_for=KEEP_FOR,
        )
        """What lost connections left of transfers, for their senders to resume."""
        self._inbound: set[asyncio.Task[Any]] = set()
        self._serving: dict[asyncio.Task[Any], _Inbound] = {}  # (who each serves)
        self._chores: set[asyncio.Task[None]] = set()  # resolving peers, the guard's ticks
        self._tls: dict[Listener, ssl.SSLContext] = {}  # each TLS listener's context

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
        self._know_peers(self.config)
        self._tls = _contexts(self.config)
        keylog = net.keylog_path()
        if keylog is not None and (self._tls or any(p.uses_tls for p in self.config.peers)):
            log.warning(
                "SSLKEYLOGFILE is set: the TLS session secrets are written to %s, and "
                "whoever reads it can decrypt this MTA's traffic",
                keylog,
            )
        self._chore(self._tick())
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
        """Serve new connections and binds on ``config`` (listeners stay as they were);
        end the associations bound with credentials ``config`` changed."""
        old, self.config = self.config, config
        self.settings, self.timeouts = settings, timeouts
        self._end_changed(old, config)
        self.budget.resize(config.connection_limits.max_inbound_buffer)
        self.kept.max_octets = _kept_octets(config)
        self._know_peers(config)
        try:
            self._tls = _contexts(config)
        except (OSError, ValueError) as error:
            log.error(
                "reload: the listeners' TLS files cannot be read, kept as they were: %s", error
            )

    def _end_changed(self, old: MtaConfig, new: MtaConfig) -> None:
        """End each association whose peer's credentials differ in ``new`` (one line per
        peer); a removed peer's end as they would have."""
        ending: dict[str, int] = {}
        for inbound in self._serving.values():
            peer = inbound.peer
            now = _peer_named(new, peer.name) if peer is not None else None
            if peer is None or now is None or _credentials(old, peer) == _credentials(new, now):
                continue
            inbound.end("the peer's credentials changed")
            ending[peer.name] = ending.get(peer.name, 0) + 1
        for name, count in ending.items():
            log.info(
                "reload: %s's credentials changed: ending its %d association(s) bound with "
                "the old ones (each once its transfer in progress is confirmed)",
                name,
                count,
            )

    async def end_served(self, identifier: SessionConnectionId, asking: _Inbound) -> None:
        """End the association of session connection ``identifier`` if it is still
        served (its peer recovers it from another), as lost, and wait until it has ended
        and what it had of a transfer is kept."""
        served = [
            (task, inbound)
            for task, inbound in self._serving.items()
            if inbound is not asking and inbound.connection == identifier
        ]
        for _, inbound in served:
            log.info("%s: ending the association the peer recovers from another", inbound.host)
            inbound.end("the peer recovers this association from another connection")
        if served:
            await asyncio.wait([task for task, _ in served], timeout=HANDOVER_WAIT)

    def close(self) -> None:
        """Accept no more connections."""
        for server in self.servers:
            server.close()
        for chore in self._chores:
            chore.cancel()

    def _know_peers(self, config: MtaConfig) -> None:
        """Tell the guard the peers' addresses: those written as addresses at once, the
        rest once resolved."""
        for peer in config.peers:
            if peer.their_credentials.password is None and peer.transport is Transport.P1:
                log.warning(
                    "peer %s has no peer_password: its binds are accepted on its name "
                    "alone and answered unauthenticated (without this MTA's password)",
                    peer.name,
                )
        literal = _literal_addresses(config)
        if all(_literal(host) is not None for _, host in _peer_hosts(config)):
            self.guard.know(literal)
            return
        self.guard.know(literal | self.guard.known)  # (until resolved: none lost meanwhile)
        self._chore(self._resolve(config))

    async def _resolve(self, config: MtaConfig) -> None:
        addresses = await peer_addresses(config)
        if config is self.config:  # (not overtaken by a reload)
            self.guard.know(addresses)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK)
            self.guard.tick()
            self.kept.expire(asyncio.get_running_loop().time())

    def _chore(self, work: Coroutine[Any, Any, None]) -> None:
        task: asyncio.Task[None] = asyncio.create_task(work)
        self._chores.add(task)
        task.add_done_callback(self._chores.discard)

    async def stop(self) -> None:
        """End every association being served, and wait for the listeners to close."""
        self.close()
        tasks = [*self._inbound]
        for task in tasks:
            task.cancel()
        for task in [*tasks, *self._chores]:
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
        inbound = self._serving[task] = _Inbound(self, task, _host(writer))
        try:
            # Cancelled by stop(), or when the guard gives this unbound connection's place
            # to another: end quietly, as Python 3.11's streams would report a cancelled
            # connection handler to the loop's exception handler as an error.
            with contextlib.suppress(asyncio.CancelledError):
                if listener.tls is TlsMode.REQUIRED:
                    if not await self._handshake(listener, writer, ticket.warnings):
                        return
                    inbound.secured(writer.get_extra_info("ssl_object"))
                await serve_link(
                    reader,
                    writer,
                    inbound,
                    settings=listener_settings(self.settings, listener),
                    timeouts=self.timeouts,
                    ticket=ticket,
                    budget=self.budget,
                    recovery=inbound,
                )
        finally:
            ticket.release()
            self._inbound.discard(task)
            self._serving.pop(task, None)

    async def _handshake(
        self, listener: Listener, writer: asyncio.StreamWriter, notes: LogLimiter
    ) -> bool:
        """TLS on an admitted connection, within ``bind_timeout``; whether it completed
        (else it is logged, one line per kind of failure per interval, and closed)."""
        peer = _peer_label(writer)
        limit = self.timeouts.bind
        try:
            async with asyncio.timeout(limit):
                await writer.start_tls(self._tls[listener])
        except TimeoutError:
            notes.warning(log, "tls timeout", "%s: no TLS handshake within %g s", peer, limit)
        except (OSError, EOFError) as error:
            kind, words = net.handshake_failure(error)
            notes.warning(log, f"tls {kind}", "%s: TLS handshake failed: %s", peer, words)
        else:
            return True
        writer.transport.abort()
        return False


class _Inbound(Responder):
    """One inbound association: who the peer is, where its transfers go, and what is
    kept of one a lost connection cut off (an :class:`mta.link.InboundRecovery`)."""

    def __init__(self, listeners: Listeners, task: asyncio.Task[Any], host: str) -> None:
        self.listeners = listeners
        self.peer: Peer | None = None
        self.host = host
        """The address the connection comes from."""
        self.over_tls = False
        self.certificate: bytes | None = None
        """The client's certificate (DER), when it came over TLS with one."""
        self.connection: SessionConnectionId | None = None
        """The session connection identifier of the association, once bound."""
        self._task = task
        self._busy = False  # taking in a transfer
        self._ending: str | None = None  # why it ends once the transfer is confirmed

    def secured(self, ssl_object: ssl.SSLObject | None) -> None:
        """The connection completed a TLS handshake."""
        self.over_tls = True
        if ssl_object is not None:
            self.certificate = ssl_object.getpeercert(binary_form=True)

    def end(self, why: str) -> None:
        """End the association for ``why``: now when idle, else once the transfer in
        progress is confirmed (its confirmation is written before the cancellation lands,
        at the next wait for the peer)."""
        self._ending = why
        if not self._busy:
            self._task.cancel(why)

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
        if expected is not None:
            wrong = _wrong_password(expected, argument)
            if wrong is not None:
                notes.warning(
                    log, f"password {peer.name}", "bind refused: %s from %s", wrong, peer.name
                )
                metrics.bind_refused(peer.name, "in", "wrong-password")
                return MTABindError.AUTHENTICATION_ERROR
        refusal = await self._not_proven(peer)
        if refusal is not None:
            reason, why = refusal
            notes.warning(log, f"{reason} {peer.name}", "bind refused: %s from %s", why, peer.name)
            metrics.bind_refused(peer.name, "in", reason)
            return MTABindError.AUTHENTICATION_ERROR
        self.peer, self.connection = peer, event.connection
        self.listeners.reachable(peer.name)
        if expected is None:  # not authenticated: nothing of ours goes to it
            return MTABindResult()
        ours = peer.our_credentials
        password = ours.password or config.password
        return MTABindResult(
            responder_name=ours.name, password=password.reveal() if password else ""
        )

    async def _not_proven(self, peer: Peer) -> tuple[str, str] | None:
        """What the connection fails to prove of ``peer``: (metric reason, log words)."""
        if peer.addresses is not None and not await sources.admits(peer.addresses, self.host):
            return "wrong-address", f"address {self.host} is not among its addresses"
        if not peer.uses_tls:
            return None
        if not self.over_tls:
            return "no-tls", "bind without TLS (tls is required)"
        mismatch = net.certificate_mismatch(peer, self.certificate)
        if mismatch is not None:
            return "wrong-certificate", mismatch
        return None

    async def on_recover(self, event: RecoveryRequested) -> Resumption | None:
        """The peer that left a transfer on the connection ``event`` names, when this
        connection proves it as a bind from it must; then bound to it."""
        listeners = self.listeners
        await listeners.end_served(event.identifier, self)
        now = asyncio.get_running_loop().time()
        peer = _peer_called(listeners.config, listeners.kept.owner(event.identifier, now))
        if peer is None:
            return None
        refusal = await self._not_proven(peer)
        if refusal is not None:
            reason, why = refusal
            notes = listeners.guard.warnings
            notes.warning(
                log, f"{reason} {peer.name}", "recovery refused: %s from %s", why, peer.name
            )
            listeners.metrics.bind_refused(peer.name, "in", reason)
            return None
        self.peer, self.connection = peer, event.connection
        listeners.reachable(peer.name)
        return self.resumption()

    def resumption(self) -> Resumption | None:
        peer = self.peer
        return None if peer is None else _Kept(self.listeners.kept, peer.name)

    def on_interrupted(self, partial: PartialTransfer) -> None:
        peer = self.peer
        if peer is None:
            return
        now = asyncio.get_running_loop().time()
        if self.listeners.kept.keep(peer.name, partial, now):
            log.info(
                "%s: kept %d octets of the transfer cut off (to checkpoint %d), for %s to "
                "resume within %g s",
                self.host,
                len(partial.octets),
                max(partial.marks),
                peer.name,
                KEEP_FOR,
            )

    async def on_transfer(self, apdu: bytes) -> None:
        assert self.peer is not None, "transfers come only after an accepted bind"
        with self._transfer(), _refusal():
            await self.listeners.sink.receive(apdu, self.peer.name)

    async def on_transfer_too_long(self, event: TransferTooLong) -> None:
        assert self.peer is not None, "transfers come only after an accepted bind"
        with self._transfer(), _refusal():
            await self.listeners.sink.receive_too_long(event, self.peer.name)

    @contextlib.contextmanager
    def _transfer(self) -> Iterator[None]:
        """A transfer is taken in: an end asked meanwhile waits for its confirmation."""
        self._busy = True
        try:
            yield
        finally:
            self._busy = False
            if self._ending is not None:
                asyncio.get_running_loop().call_soon(self._task.cancel, self._ending)


@dataclasses.dataclass(frozen=True, slots=True)
class _Kept:
    """The interrupted transfers kept for one peer (a Resumption)."""

    kept: PartialTransfers
    peer: str

    def take(self, identifier: SessionConnectionId, activity_id: bytes) -> PartialTransfer | None:
        now = asyncio.get_running_loop().time()
        return self.kept.take(self.peer, identifier, activity_id, now)


def _kept_octets(config: MtaConfig) -> int:
    """What the interrupted transfers kept may hold together."""
    return config.connection_limits.max_inbound_buffer // 4


@contextlib.contextmanager
def _refusal() -> Iterator[None]:
    """The sink's :class:`Refused` as the association's refusal (the peer keeps it)."""
    try:
        yield
    except Refused as refused:
        raise TransferRefusedError(str(refused), temporary=refused.temporary) from refused


def _credentials(config: MtaConfig, peer: Peer) -> tuple[object, ...]:
    """What an association with ``peer`` was bound with: what it presents and must
    prove, and what this MTA answers (its own password unless the peer sets one)."""
    ours = peer.our_credentials
    proof = (peer.addresses, peer.tls, peer.fingerprint, peer.tls_name, peer.tls_files.ca)
    return (peer.their_credentials, *proof, ours.name, ours.password or config.password)


def _contexts(config: MtaConfig) -> dict[Listener, ssl.SSLContext]:
    """The TLS context of each TLS listener, its files read now."""
    return {
        listener: net.server_context(listener, config.peers)
        for listener in config.listeners
        if listener.tls is TlsMode.REQUIRED
    }


def _host(writer: asyncio.StreamWriter) -> str:
    address = writer.get_extra_info("peername")
    return str(address[0]) if isinstance(address, tuple) else str(address)


def _peer_label(writer: asyncio.StreamWriter) -> str:
    address = writer.get_extra_info("peername")
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return str(address)


def _wrong_password(expected: Secret, argument: MTABindArgument) -> str | None:
    """What is wrong with the password ``argument`` presents, or None when it is the
    configured one, in either alternative of Password (X.411 12.1.1.1.1.2)."""
    presented = argument.password
    if presented is None:
        return "strong credentials where a password is configured"
    return None if expected.matches(presented) else "wrong password"


def _literal(host: str) -> str | None:
    """``host`` as an IP address, when it is written as one."""
    try:
        return str(ipaddress.ip_address(host.partition("%")[0]))
    except ValueError:
        return None


def _peer_hosts(config: MtaConfig) -> list[tuple[Peer, str]]:
    """Every host of every peer, each with its peer."""
    return [(peer, host) for peer in config.peers for host in peer.hosts]


def _literal_addresses(config: MtaConfig) -> set[str]:
    return {address for _, host in _peer_hosts(config) if (address := _literal(host)) is not None}


async def peer_addresses(config: MtaConfig) -> set[str]:
    """The addresses of ``config``'s peers' hosts; a host that cannot be resolved within
    RESOLVE_TIMEOUT is left out, with a WARNING (its connections are then a stranger's)."""
    loop = asyncio.get_running_loop()
    addresses = _literal_addresses(config)
    for peer, host in _peer_hosts(config):
        if _literal(host) is not None:
            continue
        try:
            async with asyncio.timeout(RESOLVE_TIMEOUT):
                found = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (OSError, TimeoutError) as error:
            log.warning(
                "cannot resolve peer %s's host %r (%s): its connections are admitted as "
                "a stranger's",
                peer.name,
                host,
                str(error) or "timed out",
            )
            continue
        addresses.update(str(info[4][0]) for info in found)
    return addresses


def _peer_called(config: MtaConfig, name: str | None) -> Peer | None:
    """The configured peer of that (configuration) name."""
    return next((p for p in config.peers if p.name == name), None)


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
