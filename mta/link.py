"""P1 associations on asyncio streams: a thin adapter around :class:`P1Association`.

A :class:`Link` owns one TCP connection and one association.  It runs no task of its own:
whoever awaits :meth:`Link.next_event` reads the socket, feeds the association, writes what
the association queued and gets the association's events, in order.  So every byte is read
by exactly one coroutine, and a link that nobody awaits simply holds its socket.

Initiator::

    link = await open_link(host, port, argument, dscp=24, timeouts=Timeouts())
    await link.transfer(apdu)      # returns once the peer confirmed (it stored the message)
    await link.release()

A transfer that a lost connection cut off past a checkpoint the peer confirmed leaves
``link.association.resume_point``; the next link may open with ``recover`` naming it
(X.228 recovery: :mod:`p1.osi.rtse_recovery`) and :meth:`Link.resume` it, sending only
what follows the checkpoint.  A responder keeps what a lost connection left of a
transfer, and lets it be resumed, through an :class:`InboundRecovery`.

Responder: :func:`serve_link` runs one accepted connection to its end, asking a
:class:`Responder` to decide binds and to store transfers before they are confirmed, and
holding the peer to the daemon's limits (:mod:`mta.inbound.guard`): octets and time before the
bind, the delay failed binds earned, idle time and progress once bound.

The turn (two-way alternate mode, X.228 7.6, 7.7): a responder never transfers, so it
holds the turn a peer gave it only until the peer asks for it back, and gives it at once
then; the peer releases holding it (X.228 7.4).  An initiator link whose turn was given
away asks for it back before it transfers or releases, and while idle it gives the turn
to a peer that asks.  In monologue the turn never moves.

Public API::

    Timeouts(connect, bind, idle, transfer, release)
    LinkError, BindRefusedError(error), BindTimeoutError(timeout), LinkClosedError,
        TransferRefusedError, ResumeRefusedError,
        RefusedByPeerError(reason), SlowPeerError, TooMuchBeforeBindError, BufferSpentError
    Link(association, reader, writer, *, peer, before_bind=None)
        .next_event(timeout) / transfer(apdu) / resume(apdu, point) / release() / abort(why)
        / close()
        .give_turn() / take_turn(priority, timeout) / answer_turn_request()
        .bound(pace) / .is_bound / .tls_version
    protocol_settings(normal, protocol) -> AssociationSettings | X410Settings
    async open_link(host, port, argument, *, settings, dscp, timeouts, tls, identifier,
        recover) -> (Link, BindAccepted)
    session_identifier(now) -> SessionConnectionId      a new connection's name
    Responder (Protocol): on_bind(event) -> MTABindResult | MTABindError; on_transfer(apdu);
        on_transfer_too_long(event)
    InboundRecovery (Protocol): on_recover(event) -> Resumption | None; resumption();
        on_interrupted(partial)
    async serve_link(reader, writer, responder, *, settings, timeouts, ticket, budget,
        recovery)
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import functools
import logging
import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol

from config.schema import DEFAULT_CONNECTION_LIMITS, ConnectionLimits, P1Protocol
from mta import net, stages
from mta.faults import LogLimiter
from mta.inbound.budget import InboundBudget, Share
from mta.inbound.guard import Pace, Ticket
from mta.net import ClientTls
from p1.association.base import SessionAssociation
from p1.association.connection import (
    Aborted,
    AssociationSettings,
    BindAccepted,
    BindRefused,
    BindRequested,
    ConnectionRefused,
    P1Association,
    RecoveryRequested,
    Released,
    TransferConfirmed,
    TransferReceived,
    TransferResumed,
    TransferTooLong,
    TurnGiven,
    TurnRequested,
)
from p1.association.inbound import ConnectSniffer
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult
from p1.association.x410 import (
    X410Association,
    X410Settings,
    initiator_settings,
    settings_like,
)
from p1.association.x410_pdus import (
    ConnectMode,
)
from p1.osi import Event, Role, rtse
from p1.osi.rtse_recovery import PartialTransfer, ResumePoint, Resumption, SessionConnectionId
from p1.osi.selectors import format_selector

log = logging.getLogger("aiox400.link")

READ_SIZE = 1 << 20
"""Bytes asked of the stream per read: everything it holds, for a 1 MB transfer in few reads
(the transport receives at most 256 KiB at a time; whatever it gathered is taken at once)."""
WRITE_SIZE = 256 * 1024
"""Octets handed to the transport per write: what a TCP send takes at a time, so that
a large transfer goes out in writes of this size, each copying only what the socket did
not take into the transport's buffer."""
_DONTNEED: Final = getattr(mmap, "MADV_DONTNEED", None)
"""madvise(2)'s MADV_DONTNEED, where the system has it: a read-only file mapping's pages
leave the process (not the file cache) and are read again from the file when touched."""
BIND_READ_SIZE = 4096
"""Bytes asked of the stream per read before the MTA-bind is accepted (a bind takes a few
hundred octets)."""


TLS_CLOSE_WAIT: Final = 5.0
"""Seconds a closing TLS connection waits for the peer's close_notify before it is cut
(the standard library would wait 30)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeouts:
    """Seconds allowed for each phase of an association (None: no limit)."""

    connect: float = 10.0
    """TCP connect."""
    bind: float = 30.0
    """From TCP connected to the MTA-bind answer (or, responder, to the bind request)."""
    idle: float | None = 600.0
    """Silence from the peer while nothing is in progress."""
    transfer: float = 300.0
    """One transfer, from its first byte to the peer's confirmation."""
    release: float = 10.0
    """The peer's answer to our release."""


class LinkError(Exception):
    """An association ended otherwise than its user asked (the message says how)."""


class BindRefusedError(LinkError):
    """The peer refused our MTA-bind; ``error`` is its MTABindError when it gave one."""

    def __init__(self, error: MTABindError | None, why: str) -> None:
        self.error = error
        super().__init__(why)


class BindTimeoutError(TimeoutError):
    """The peer did not answer our MTA-bind in time (a connect that timed out is a plain
    TimeoutError): a peer delays its answers to an address whose binds it refused."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(
            f"the peer did not answer our bind within {timeout:g} s (a peer delays its "
            "answers after failed binds: check the password)"
        )


class LinkClosedError(LinkError):
    """The association is closed (aborted by either side, or the connection dropped)."""


class RefusedByPeerError(LinkClosedError):
    """The peer aborted the association after our whole transfer was sent, with an RTSE
    abortReason (X.228 RTAB) that refuses rather than defers: ``reason`` is one of
    :data:`REFUSING`."""

    def __init__(self, why: str, *, reason: str) -> None:
        self.reason = reason
        super().__init__(why)


REFUSING = frozenset({"user-error", "permanent-problem", "invalid-parameter", "protocol-error"})
"""The abortReasons by which a peer refuses what it was sent; the others
(temporary-problem, local-system-problem) say its trouble is its own and passing."""


class ResumeRefusedError(LinkClosedError):
    """The peer has nothing of the transfer we resumed (it aborted with RTSE's
    unrecognized-activity, X.228): it is to be sent afresh."""


UNRECOGNIZED_ACTIVITY: Final = "unrecognized-activity"


class SlowPeerError(LinkError):
    """A bound peer stayed silent past the idle time (``idle``), or sent a PDU too
    slowly."""

    def __init__(self, why: str, *, idle: bool) -> None:
        super().__init__(why)
        self.idle = idle


class TooMuchBeforeBindError(LinkError):
    """A peer sent more than it may before its MTA-bind was accepted."""


class BufferSpentError(LinkError):
    """A bound peer's read would take the octets of PDUs held for all peers past
    ``max_inbound_buffer`` (:mod:`mta.inbound.budget`)."""


class TransferRefusedError(LinkError):
    """Raised by a :class:`Responder` that cannot take a transfer: the association is
    aborted, so the peer keeps responsibility and tries again later.  ``temporary``: the
    fault is ours and passing (a full disk), not the message's; the responder has
    logged the condition, so each refusal is logged at INFO only."""

    def __init__(self, why: str, *, temporary: bool = False) -> None:
        self.temporary = temporary
        super().__init__(why)


@dataclass(frozen=True, slots=True)
class Sniffing:
    """An inbound connection whose mode is not known yet: ``sniffer`` reads it until the
    CN, then ``build`` makes the responder of the mode told (X.419 7)."""

    sniffer: ConnectSniffer
    build: Callable[[ConnectMode], SessionAssociation]


class Link:
    """One P1 association over one TCP connection, in either mode."""

    def __init__(
        self,
        association: SessionAssociation,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        peer: str,
        before_bind: int | None = None,
        sniffing: Sniffing | None = None,
        share: Share | None = None,
    ) -> None:
        """``before_bind``: octets the peer may send until :meth:`bound` (None: no bound).
        Until then the connection is read only while the association asks for more, at
        most BIND_READ_SIZE at a time: what a peer sends beyond waits in the kernel's
        socket buffer, not in ours, and past the bound the peer is cut off.

        ``sniffing`` (responder): the connection's mode is told from its CN first, and
        ``association`` (the normal-mode responder) replaced by the X.410-1984 one when
        the CN is of that mode.

        ``share`` (responder): once bound, what is read is held against it until the
        PDU it makes was answered (the next read); BufferSpentError when it cannot be."""
        self.association = association
        self._sniffing = sniffing
        self.peer = peer
        self._reader = reader
        self._writer = writer
        self._ready: collections.deque[Event] = collections.deque()
        self._allowance = before_bind
        self._before_bind = before_bind
        self._pace: Pace | None = None
        self._turn_asked = False  # the peer's RT-TURN-PLEASE, not answered yet
        self._lost: str | None = None  # why the connection failed under us, when it did
        self._share = share
        self._answered = False  # the last read's events were answered: its octets are free
        self._mapped: mmap.mmap | None = None  # the mapped APDU being transferred, if one is
        ssl_object = writer.get_extra_info("ssl_object")  # (not to be asked once closed)
        self._tls_version = str(ssl_object.version()) if ssl_object is not None else None
        transport = writer.transport
        self._transport = transport if isinstance(transport, asyncio.ReadTransport) else None
        if before_bind is not None and self._transport is not None:
            self._transport.pause_reading()

    @property
    def is_bound(self) -> bool:
        """True once :meth:`bound` was called (or there never was a bound to lift)."""
        return self._allowance is None

    @property
    def tls_version(self) -> str | None:
        """The TLS version the connection runs inside ("TLSv1.3"); None: plain TCP."""
        return self._tls_version

    @property
    def writable(self) -> bool:
        """The connection is still open for writing (not closed by either side)."""
        return not self._writer.transport.is_closing()

    def bound(self, pace: Pace | None) -> None:
        """The MTA-bind is accepted: read at full size from now on, and hold the peer to
        ``pace`` (None: it may be as slow as it likes)."""
        self._allowance = None
        self._pace = pace
        if self._transport is not None:
            self._transport.resume_reading()

    async def flush(self) -> None:
        """Write what the association queued, WRITE_SIZE octets at a time, each once the
        transport's buffer is under its high-water mark: a large transfer is never joined
        whole nor copied whole into that buffer.  LinkClosedError when the connection is
        lost (reset by the peer) meanwhile; cancelled, what is not written yet stays
        queued in the association, for the next flush."""
        wrote = False
        while True:
            written = self._write()
            if not written:
                break
            wrote = True
            self._let_go()
            if written < WRITE_SIZE:
                break
            await self._drain()  # (at once while under the high-water mark)
        if wrote:
            await self._drain()

    def _let_go(self) -> None:
        """Drop the pages of the mapped APDU being transferred that this process touched
        (those just copied into a write): they stay in the system's file cache, and a
        later piece or a resumption reads them again from there, so the process holds
        no more of a spooled APDU than what one write copies."""
        if self._mapped is not None and _DONTNEED is not None:
            self._mapped.madvise(_DONTNEED)

    async def _drain(self) -> None:
        try:
            await self._writer.drain()
        except ConnectionError as error:
            self._lost = self._lost or _connection_error(error)
            # The association ends as the connection did, lost (what a transfer reached
            # is then left for recovery); the events say nothing the error does not.
            self.association.receive_eof()
            raise LinkClosedError(f"the connection was lost: {self._lost}") from None

    def _write(self) -> int:
        """Hand at most WRITE_SIZE octets of what the association queued to the
        transport, as one write; how many (0: nothing queued, or the connection is
        closing).  WRITE_SIZE of them: more may be queued."""
        sniffing = self._sniffing
        data = (
            self.association.data_to_send(WRITE_SIZE)
            if sniffing is None
            else sniffing.sniffer.data_to_send()
        )
        if data and not self._writer.is_closing():
            self._writer.write(data)
            return len(data)
        return 0

    async def next_event(self, timeout: float | None) -> Event:
        """The next event, reading the socket as needed; TimeoutError after ``timeout``.

        SlowPeerError when the peer breaks its pace (:meth:`bound`); before that,
        TooMuchBeforeBindError when it sends more than ``before_bind`` octets.
        """
        if self._ready:  # (no timer to arm for an event already read)
            return self._ready.popleft()
        if self._pace is not None:
            self._pace.waiting(asyncio.get_running_loop().time())
        async with asyncio.timeout(timeout):
            while not self._ready:
                if self.association.closed:
                    raise LinkClosedError(f"association with {self.peer} is closed")
                await self._read_once()
        return self._ready.popleft()

    @property
    def has_events(self) -> bool:
        """True when events already read wait for :meth:`next_event`."""
        return bool(self._ready)

    def queue(self, events: list[Event]) -> None:
        """Hand ``events`` (returned by a call into the association) to :meth:`next_event`,
        after those already read."""
        self._ready.extend(events)

    async def _read_once(self) -> None:
        data = self._held(await self._receive())
        if self._sniffing is not None:
            events = self._sniff(data)
        elif data:
            events = self.association.receive_data(data)
        else:
            events = self.association.receive_eof()
        self._ready.extend(self._with_loss(events))
        self._answered = bool(events)
        if self._pace is not None:
            now = asyncio.get_running_loop().time()
            self._pace.received(len(data), complete=bool(events), now=now)
        await self.flush()  # (no drain to await when the read answers nothing)

    def _held(self, data: bytes) -> bytes:
        """``data``, held against the share once bound; the octets of the PDU the last
        read completed are given back first (its events were answered before this read)."""
        share = self._share
        if share is None or not self.is_bound:
            return data
        if self._answered:
            share.give_back()
        if not share.take(len(data)):
            raise BufferSpentError(
                "max_inbound_buffer is spent: the PDUs of bound peers hold all of it"
            )
        return data

    def _with_loss(self, events: list[Event]) -> list[Event]:
        """``events``, the abort of a lost connection saying why it was lost."""
        if self._lost is None:
            return events
        why = f"the connection was lost: {self._lost}"
        return [
            dataclasses.replace(e, why=why) if type(e) is Aborted and e.by_peer else e
            for e in events
        ]

    def _sniff(self, data: bytes) -> list[Event]:
        """Read ``data`` for the connection's mode; once told, the association's events."""
        assert self._sniffing is not None
        mode = self._sniffing.sniffer.receive_data(data) if data else ConnectMode.NORMAL
        if mode is None:
            return []
        events = self._settle(mode)
        return events + self.association.receive_eof() if not data else events

    def _settle(self, mode: ConnectMode) -> list[Event]:
        """Hand the connection to the responder of ``mode``: the events of what it read."""
        sniffing, self._sniffing = self._sniffing, None
        assert sniffing is not None
        if mode is not ConnectMode.NORMAL:
            self.association = sniffing.build(mode)
        return sniffing.sniffer.replay(self.association)

    async def _receive(self) -> bytes:
        """The next octets from the peer (b"" at the end), within the bounds set."""
        if self._allowance is not None:
            return await self._receive_unbound(self._allowance)
        if self._pace is None:
            return await self._read(READ_SIZE)
        while True:
            try:
                async with asyncio.timeout_at(self._pace.deadline()):
                    return await self._read(READ_SIZE)
            except TimeoutError:  # (only the pace's deadline: another would cancel)
                idle = self._pace.idle_now
                why = self._pace.expired(asyncio.get_running_loop().time())
                if why is not None:
                    raise SlowPeerError(why, idle=idle) from None

    async def _receive_unbound(self, allowance: int) -> bytes:
        if allowance <= 0:
            raise TooMuchBeforeBindError(
                f"more than {self._before_bind} octets without completing an MTA-bind"
            )
        if self._transport is not None:
            self._transport.resume_reading()
        try:
            data = await self._read(min(allowance, BIND_READ_SIZE))
        finally:
            if self._transport is not None:
                self._transport.pause_reading()
        self._allowance = allowance - len(data)
        return data

    async def _read(self, size: int) -> bytes:
        """Up to ``size`` octets; b"" at the end, a reset included (the association's
        end says which, once: :meth:`_with_loss`)."""
        try:
            return await self._reader.read(size)
        except ConnectionError as error:
            self._lost = _connection_error(error)
            return b""

    async def transfer(self, apdu: bytes | mmap.mmap, *, timeout: float) -> int:
        """Send one MTS-APDU; return its transfer id once the peer confirmed it.  A turn
        given away is asked for back first.  ``apdu`` may be a spooled file's read-only
        mapping (:meth:`store.spool.Spool.mapped`): it is sent from the mapping, and the
        pages each write copied are let go (:meth:`_let_go`)."""
        if not self.association.has_turn:
            await self.take_turn(timeout=timeout)
        with self._sending(apdu) as octets:
            transfer_id = self.association.send_transfer(octets)
            stages.mark("transfer.encoded")
            await self.flush()
            confirmed = await self._confirmation(transfer_id, timeout)
        stages.mark("transfer.confirmed")
        return confirmed

    async def resume(self, apdu: bytes | mmap.mmap, point: ResumePoint, *, timeout: float) -> int:
        """Go on with the transfer of ``apdu`` that an earlier association cut off at
        ``point`` (S-ACTIVITY-RESUME, then the octets after the checkpoint); as
        :meth:`transfer`.  ResumeRefusedError when the peer kept nothing of it."""
        if not self.association.has_turn:
            await self.take_turn(timeout=timeout)
        with self._sending(apdu) as octets:
            transfer_id = self.association.resume_transfer(octets, point)
            await self.flush()
            return await self._confirmation(transfer_id, timeout)

    @contextlib.contextmanager
    def _sending(self, apdu: bytes | mmap.mmap) -> Iterator[bytes | memoryview]:
        """``apdu`` as the association takes it; a mapped one is noted for :meth:`_let_go`
        until its transfer ends (its pieces go out as the peer's confirmations come, with
        a window of checkpoints)."""
        if type(apdu) is bytes:
            yield apdu
            return
        assert isinstance(apdu, mmap.mmap)
        self._mapped = apdu
        try:
            yield memoryview(apdu)
        finally:
            self._mapped = None

    async def _confirmation(self, transfer_id: int, timeout: float) -> int:
        while True:
            event = await self.next_event(timeout)
            if isinstance(event, TransferConfirmed) and event.transfer_id == transfer_id:
                return transfer_id
            if isinstance(event, Aborted) and event.by_peer and event.reason in REFUSING:
                assert event.reason is not None
                why = f"the peer aborted the transfer: {event.why}"
                raise RefusedByPeerError(why, reason=event.reason)
            if isinstance(event, Aborted) and event.reason == UNRECOGNIZED_ACTIVITY:
                raise ResumeRefusedError(f"the peer kept nothing to resume: {event.why}")
            self._check_alive(event)

    async def ended(self) -> str:
        """Read until the peer ends the association (abort, release, or the connection
        closed); why.  For an idle association: cancelling it loses nothing read."""
        while True:
            try:
                if self._turn_asked:  # (asked while we were transferring)
                    await self.answer_turn_request()
                self._check_alive(await self.next_event(None))
            except LinkClosedError as error:
                return f"the peer ended the idle association: {error}"

    def _check_alive(self, event: Event) -> None:
        """Raise LinkClosedError for the association's end; note a turn request, which
        :meth:`answer_turn_request` answers once nothing is in progress."""
        if isinstance(event, Aborted):
            raise LinkClosedError(f"association with {self.peer} aborted: {event.why}")
        if isinstance(event, Released):
            raise LinkClosedError(f"association with {self.peer} released by the peer")
        if isinstance(event, TurnRequested):
            self._turn_asked = True

    # --- the turn (two-way alternate, X.228 7.6, 7.7) ---------------------------------

    async def give_turn(self) -> None:
        """RT-TURN-GIVE (X.228 7.7): hand the turn to the peer."""
        self.association.give_turn()
        self._turn_asked = False
        await self.flush()

    async def answer_turn_request(self) -> bool:
        """Answer the peer's RT-TURN-PLEASE (X.228 7.6): give the turn when this end holds
        it in two-way alternate mode and has no transfer of its own in progress (one in
        progress keeps the request for later); whether it was given."""
        association = self.association
        if association.busy and not association.closed:
            self._turn_asked = True
            return False
        self._turn_asked = False
        if association.closed or not association.has_turn:
            return False  # (a request that crossed our RT-TURN-GIVE)
        if association.dialogue_mode is not rtse.DialogueMode.TWA:
            return False  # in monologue the turn never moves
        await self.give_turn()
        return True

    async def take_turn(self, *, priority: int = 0, timeout: float) -> None:
        """RT-TURN-PLEASE with ``priority`` (X.228 7.6), then wait for the peer's
        RT-TURN-GIVE; returns at once when this end holds the turn.  A turn we gave is
        asked back only once the peer's session acknowledged it (GTA, X.225)."""
        async with asyncio.timeout(timeout):
            while self.association.giving_turn:
                await self._read_once()
            if self.association.closed:
                raise LinkClosedError(f"association with {self.peer} is closed")
            if self.association.has_turn:
                return
            self.association.request_turn(priority)
            await self.flush()
            while True:
                event = await self.next_event(None)
                if isinstance(event, TurnGiven):
                    return
                self._check_alive(event)

    async def release(self, *, timeout: float) -> None:
        """RT-CLOSE: release and wait for the peer's answer, then close the connection.
        The association-initiator releases holding the turn (X.228 7.4): a turn given
        away is asked for back first."""
        try:
            if not self.association.has_turn:
                await self.take_turn(timeout=timeout)
            self.association.send_release()
            await self.flush()
            while True:
                event = await self.next_event(timeout)
                if isinstance(event, Released):
                    return
                self._check_alive(event)
        finally:
            await self.close()

    async def abort(self, why: str, *, temporary: bool = False) -> None:
        """RT-U-ABORT: send the abort (``temporary``: of reason temporary-problem), then
        close the connection.  Before the peer's CN told the mode, the connection is the
        normal-mode machine's (which answers as it always did)."""
        if self._sniffing is not None:
            self._settle(ConnectMode.NORMAL)
        self.association.abort(why, temporary=temporary)
        with contextlib.suppress(ConnectionError):
            await self.flush()
        await self.close()

    async def close(self) -> None:
        """Close the TCP connection (after writing what is queued)."""
        if self._share is not None:
            self._share.give_back()
        with contextlib.suppress(ConnectionError, LinkClosedError):
            await self.flush()
        self._writer.close()
        try:
            async with asyncio.timeout(TLS_CLOSE_WAIT if self.tls_version else None):
                await self._writer.wait_closed()
        except TimeoutError:  # a TLS peer that does not answer our close_notify
            self._writer.transport.abort()
        except ConnectionError:
            pass


def protocol_settings(
    normal: AssociationSettings, protocol: P1Protocol
) -> AssociationSettings | X410Settings:
    """The initiator's settings for ``protocol`` (:func:`p1.association.x410
    .initiator_settings`)."""
    return initiator_settings(normal, x410=protocol.x410, p1_1984=protocol is P1Protocol.X410_1984)


async def open_link(
    host: str,
    port: int,
    argument: MTABindArgument,
    *,
    settings: AssociationSettings | X410Settings | None = None,
    dscp: int = 0,
    timeouts: Timeouts | None = None,
    congestion: str | None = None,
    source: str | None = None,
    tls: ClientTls | None = None,
    identifier: SessionConnectionId | None = None,
    recover: SessionConnectionId | None = None,
) -> tuple[Link, BindAccepted]:
    """Connect (marked ``dscp``; TCP congestion control ``congestion``, None: the system's;
    from the local address ``source``, None: the system's choice; inside TLS with
    ``tls``), bind with ``argument``; the link and the bind result.
    The mode is the settings': X410Settings for X.410-1984 mode, else normal mode.
    Normal mode only: ``identifier`` names the session connection in its CN (for a
    transfer it may cut off to be resumed); ``recover``: recover the association of that
    session connection instead of binding (the result says whether the peer did).

    Raises ``TimeoutError`` (connect; BindTimeoutError: the bind's answer), ``OSError``
    (connect), BindRefusedError or LinkClosedError.
    """
    timeouts = timeouts or Timeouts()
    reader, writer = await net.open_marked_connection(
        host,
        port,
        dscp=dscp,
        timeout=timeouts.connect,
        congestion=congestion,
        source=source,
        tls=tls,
    )
    association: SessionAssociation
    if isinstance(settings, X410Settings):
        association = X410Association(Role.INITIATOR, settings)
    else:
        association = P1Association(Role.INITIATOR, settings)
    link = Link(association, reader, writer, peer=f"{host}:{port}")
    try:
        if isinstance(association, P1Association):
            association.send_bind(argument, identifier=identifier, recover=recover)
        else:
            association.send_bind(argument)
        await link.flush()
        accepted = await _await_bind(link, timeouts.bind)
    except BaseException:
        await link.abort("bind did not complete")
        raise
    return link, accepted


def session_identifier(now: datetime) -> SessionConnectionId:
    """A new session connection identifier (X.225 PGI 1, X.228): a calling SS-user
    reference of random octets, which only the two ends (and whoever reads the CN)
    know, and ``now`` as the common reference (UTCTime)."""
    return SessionConnectionId(
        calling_reference=os.urandom(16),
        common_reference=now.strftime("%y%m%d%H%M%SZ").encode("ascii"),
    )


async def _await_bind(link: Link, timeout: float) -> BindAccepted:
    try:
        async with asyncio.timeout(timeout):
            while True:
                event = await link.next_event(None)
                if isinstance(event, BindAccepted):
                    return event
                if isinstance(event, BindRefused):
                    raise BindRefusedError(event.error, event.why)
                link._check_alive(event)
    except TimeoutError as error:
        raise BindTimeoutError(timeout) from error


class InboundRecovery(Protocol):
    """What a responding MTA keeps of the transfers lost connections cut off, so that
    their senders may resume them (X.228 recovery)."""

    async def on_recover(self, event: RecoveryRequested) -> Resumption | None:
        """An RT-OPEN ``recover``: where the transfers kept for the peer that left one
        on that session connection are (the association is then bound to that peer),
        or None to refuse it."""
        ...

    def resumption(self) -> Resumption | None:
        """Where the transfers kept for the peer the association is bound to are."""
        ...

    def on_interrupted(self, partial: PartialTransfer) -> None:
        """The association ended abnormally in the middle of a transfer: keep what came."""
        ...


class Responder(Protocol):
    """What a responding MTA decides: binds, and storing what it receives."""

    async def on_bind(self, event: BindRequested) -> MTABindResult | MTABindError:
        """Accept (with our result) or refuse (with the error) an MTA-bind."""
        ...

    async def on_transfer(self, apdu: bytes) -> None:
        """Store ``apdu`` durably; return only once it is safe (then it is confirmed)."""
        ...

    async def on_transfer_too_long(self, event: TransferTooLong) -> None:
        """Take responsibility for a transfer over ``max_message_size``, of which only
        the first octets were kept (store the non-delivery report on it); return once
        that is safe (then it is confirmed), or raise TransferRefusedError."""
        ...


async def serve_link(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    responder: Responder,
    *,
    settings: AssociationSettings | None = None,
    timeouts: Timeouts | None = None,
    ticket: Ticket | None = None,
    budget: InboundBudget | None = None,
    recovery: InboundRecovery | None = None,
) -> None:
    """Run one inbound association to its end; never raises for the peer's faults.

    Until its MTA-bind is accepted, the peer may send ``max_bytes_before_bind`` octets
    and take ``timeouts.bind`` seconds, and a bind from an address whose binds failed is
    answered only after the delay they earned.  Once bound, it is held to a :class:`Pace`
    of ``timeouts.idle`` and ``min_progress`` per ``progress_interval``.  The limits are
    ``ticket``'s (the daemon's ``[limits]``; the defaults without one), and so is the log
    of what unbound peers do, rate-limited.  What a bound peer sends is held against
    ``budget`` (:mod:`mta.inbound.budget`; None: no bound).  ``recovery`` keeps what
    an abnormal end leaves of a transfer, and lets a peer resume it (None: nothing is
    kept, and an RT-OPEN ``recover`` is refused).
    """
    timeouts = timeouts or Timeouts()
    limits = ticket.limits if ticket is not None else DEFAULT_CONNECTION_LIMITS
    peer = _peer_name(writer)
    normal = settings or AssociationSettings()
    sniffing = Sniffing(
        ConnectSniffer(normal.limits, normal.served_tsaps), functools.partial(_responder, normal)
    )
    link = Link(
        P1Association(Role.RESPONDER, normal),
        reader,
        writer,
        peer=peer,
        before_bind=limits.max_bytes_before_bind,
        sniffing=sniffing,
        share=_share(budget, normal),
    )
    notes = ticket.warnings if ticket is not None else LogLimiter(interval=0.0)
    serving = _Serving(link, responder, timeouts, limits, ticket, notes, recovery)
    try:
        await _serve(serving)
    except TimeoutError:
        if link.is_bound:
            serving.fault(logging.WARNING, "timed-out", "%s: timed out, aborting", peer)
        else:
            notes.warning(log, "bind-timeout", "%s: no MTA-bind within %g s", peer, timeouts.bind)
        await link.abort("timed out")
    except SlowPeerError as error:
        # An idle bound association ended on time is housekeeping (a permanent slot's
        # initiator connects again at once); a PDU sent too slowly is the peer's fault.
        if error.idle:
            log.info("%s: %s, aborting", peer, error)
        else:
            serving.fault(logging.WARNING, "slow", "%s: %s, aborting", peer, error)
        await link.abort(str(error))
    except TooMuchBeforeBindError as error:
        notes.warning(log, "before-bind", "%s: %s, closing", peer, error)
        await link.abort(str(error))
    except BufferSpentError as error:
        notes.warning(log, "inbound-buffer", "%s: %s; aborted, to be retried later", peer, error)
        await link.abort(str(error), temporary=True)
    except TransferRefusedError as error:
        log.log(
            logging.INFO if error.temporary else logging.WARNING,
            "%s: transfer refused, aborting: %s",
            peer,
            error,
        )
        await link.abort(str(error), temporary=error.temporary)
    except LinkClosedError as error:
        serving.fault(logging.INFO, "lost", "%s: %s", peer, error)
    except asyncio.CancelledError as error:  # the MTA is stopping (or the peer changed)
        await abort_on_stop(link, str(error.args[0]) if error.args else "the MTA is stopping")
        raise
    except Exception:  # a bug of ours; the daemon serves on: nothing was confirmed
        notes.log(
            log,
            logging.ERROR,
            "responder-failure",
            "%s: failed while serving, aborting",
            peer,
            exc_info=True,
        )
        await link.abort("responder failure")
    finally:
        _keep_interrupted(serving)
        await link.close()


def _keep_interrupted(serving: _Serving) -> None:
    """What the association's abnormal end left of a transfer, to the keep."""
    partial = serving.link.association.interrupted_transfer
    if partial is not None and serving.recovery is not None:
        serving.recovery.on_interrupted(partial)


def _share(budget: InboundBudget | None, settings: AssociationSettings) -> Share | None:
    """A share of ``budget`` for an association on ``settings``: it keeps at most a TSDU
    being reassembled and the transfer it adds to."""
    if budget is None:
        return None
    return budget.share(settings.limits.max_tsdu_size + settings.limits.max_message_size)


def _responder(settings: AssociationSettings, mode: ConnectMode) -> SessionAssociation:
    """The responder of an inbound connection of ``mode`` (X.419 7: a 1984 MTA's CN, or
    a 1988 MTA's in X.410-1984 mode, is served in that mode on any listener)."""
    if mode is ConnectMode.X410_1984:
        return X410Association(Role.RESPONDER, settings_like(settings))
    return P1Association(Role.RESPONDER, settings)


STOP_ABORT_WAIT: Final = 1.0
"""Seconds a stopping MTA waits for its abort to be written to a peer that reads slowly."""


async def abort_on_stop(link: Link, why: str = "the MTA is stopping") -> None:
    """The MTA stops (or ends the association for ``why``) while a peer's association is
    open: abort it with the RTSE reason temporary-problem (X.228 RTAB; X.225 AB under
    it), so the peer sees why, keeps what it had not had confirmed and tries again later,
    rather than finding the connection gone.  (A responder cannot release: RT-CLOSE is
    the initiator's, X.228 7.6.)"""
    if link.association.closed or not link.writable:  # (one the guard closed, say)
        return
    log.info("%s: aborting: %s", link.peer, why)
    with contextlib.suppress(TimeoutError, ConnectionError, OSError):
        await asyncio.wait_for(link.abort(why, temporary=True), STOP_ABORT_WAIT)


@dataclass(slots=True)
class _Serving:
    """One inbound association being served, and the limits it is held to."""

    link: Link
    responder: Responder
    timeouts: Timeouts
    limits: ConnectionLimits
    ticket: Ticket | None
    notes: LogLimiter
    recovery: InboundRecovery | None = None

    def info(self, message: str, *args: object) -> None:
        """Log at INFO; rate-limited while the peer is unbound (anyone can make those)."""
        if self.link.is_bound:
            log.info(message, *args)
        else:
            self.notes.log(log, logging.INFO, "unbound-end", message, *args)

    def fault(self, level: int, kind: str, message: str, *args: object) -> None:
        """Log the peer's fault of ``kind`` (a reset, a timeout, a protocol error): one line
        per interval for every unbound peer together (anyone can make those), and per
        source address for a bound one."""
        if not self.link.is_bound:
            self.notes.log(log, level, f"unbound {kind}", message, *args)
            return
        source = self.ticket.address if self.ticket is not None else self.link.peer
        self.notes.log(log, level, f"{kind} {source}", message, *args)


async def _serve(serving: _Serving) -> None:
    """Answer the peer's events in order until its association ends.

    An event read together with the one that ended the association (a bind or a transfer
    followed by garbage) is not acted on: a bind is not accepted, a transfer not stored,
    since neither could be answered; the end is logged once, as it happened."""
    link = serving.link
    event = await link.next_event(serving.timeouts.bind)
    while True:
        if isinstance(event, ConnectionRefused):
            _refused_address(serving, event)
            return
        if isinstance(event, Released):
            serving.info("%s: released", link.peer)
            return
        if isinstance(event, Aborted):
            serving.fault(logging.INFO, "aborted", "%s: %s", link.peer, _ended(event))
            return
        if not link.association.closed:  # (else the event that ended it is queued next)
            await _answer(serving, event)
        if link.association.closed and not link.has_events:
            return  # the bind was refused: said in _refused
        # Not kept while the next one is read: a transfer's APDU goes once it is stored.
        del event
        # Once bound, the pace bounds silence and slowness (Link.bound).
        event = await link.next_event(None if link.is_bound else serving.timeouts.bind)


async def _answer(serving: _Serving, event: Event) -> None:
    """Act on one event of a live inbound association: a bind is decided, a transfer
    stored then confirmed, a turn request answered by giving the turn (X.228 7.6, 7.7:
    we have nothing to transfer, and the peer needs the turn to transfer or release)."""
    link = serving.link
    if isinstance(event, BindRequested):
        link.queue(await _answer_bind(serving, event))
    elif isinstance(event, RecoveryRequested):
        link.queue(await _answer_recovery(serving, event))
    elif isinstance(event, TransferResumed):
        log.info(
            "%s: transfer resumed after checkpoint %d, %d octets kept",
            link.peer,
            event.serial,
            event.offset,
        )
    elif isinstance(event, TransferReceived):
        received = stages.clock()
        await serving.responder.on_transfer(event.apdu)
        stages.mark("transfer.received", at=received)  # (urgent or not: known once read)
        link.association.confirm_transfer(event.transfer_id)
        await link.flush()
        stages.mark("confirm.written")
    elif isinstance(event, TransferTooLong):
        await serving.responder.on_transfer_too_long(event)
        link.association.confirm_transfer(event.transfer_id)
        await link.flush()
    elif isinstance(event, TurnGiven):
        log.debug("%s: the peer gave us the turn; it is given back when asked for", link.peer)
    elif isinstance(event, TurnRequested) and await link.answer_turn_request():
        log.debug("%s: turn given back on request (priority %d)", link.peer, event.priority)


async def _answer_bind(serving: _Serving, event: BindRequested) -> list[Event]:
    """Refuse or accept the bind; the events of the association's end when accepting
    ended it instead (:meth:`P1Association.accept_bind`)."""
    link, ticket = serving.link, serving.ticket
    delay = ticket.bind_delay() if ticket is not None else 0.0
    if delay:  # before any answer: a refusal must come no sooner than an acceptance
        await asyncio.sleep(delay)
    answer = await serving.responder.on_bind(event)
    name = event.argument.initiator_name
    ended: list[Event] = []
    if isinstance(answer, MTABindError):
        _refused(serving, name, answer)
        link.association.refuse_bind(answer)
    else:
        recovery = serving.recovery
        resumption = recovery.resumption() if recovery is not None else None
        association = link.association
        if isinstance(association, P1Association):
            ended = association.accept_bind(answer, resumption=resumption)
        else:
            ended = association.accept_bind(answer)
        if not link.association.closed:
            log.info("%s: bind from %r accepted%s", link.peer, name, _mode(link, event))
            if ticket is not None:
                ticket.bind_accepted()
            link.bound(_pace(serving))
    await link.flush()
    return ended


async def _answer_recovery(serving: _Serving, event: RecoveryRequested) -> list[Event]:
    """Accept an RT-OPEN ``recover`` as the bind of the peer that left a transfer on
    that connection, or refuse it (nothing kept, or the connection does not prove that
    peer); the events of the association's end when accepting ended it."""
    link, ticket = serving.link, serving.ticket
    association = link.association
    assert isinstance(association, P1Association)  # (only normal mode recovers)
    delay = ticket.bind_delay() if ticket is not None else 0.0
    if delay:
        await asyncio.sleep(delay)
    recovery = serving.recovery
    resumption = await recovery.on_recover(event) if recovery is not None else None
    ended: list[Event] = []
    if resumption is None:
        why = "recovery refused: nothing kept of that connection"
        if ticket is None or ticket.known:
            log.info("%s: %s", link.peer, why)
        else:
            ticket.bind_refused(f"{link.peer}: {why}")
        association.refuse_recovery()
    else:
        ended = association.accept_recovery(resumption)
        if not association.closed:
            log.info("%s: association recovered (X.228), its transfer to be resumed", link.peer)
            if ticket is not None:
                ticket.bind_accepted()
            link.bound(_pace(serving))
    await link.flush()
    return ended


_REFUSED_ADDRESS: Final = {
    "transport": ("TSEL", "transport disconnect (DR address unknown)"),
    "session": ("SSEL", "session refused (RF session selector unknown)"),
    "presentation": ("PSEL", "presentation refused (CPR called-presentation-address-unknown)"),
}


def _refused_address(serving: _Serving, event: ConnectionRefused) -> None:
    """One line, rate-limited like every pre-bind line: a peer calling a selector this
    listener does not serve is most often one configured for another product's."""
    name, answer = _REFUSED_ADDRESS[event.layer]
    serving.notes.warning(
        log,
        "selector-refused",
        "%s: called %s %s, calling %s %s: not served on this listener; %s",
        serving.link.peer,
        name,
        _selector(event.called),
        name,
        _selector(event.calling),
        answer,
    )


def _selector(value: bytes) -> str:
    return repr(format_selector(value)) if value else "none"


def _refused(serving: _Serving, name: str | None, error: MTABindError) -> None:
    peer, ticket = serving.link.peer, serving.ticket
    why = error.name.lower().replace("_", "-")
    if ticket is None:
        log.warning("%s: bind from %r refused: %s", peer, name, why)
        return
    ticket.bind_refused(f"{peer}: bind from {name!r} refused: {why}")  # (counted, logged)


def _pace(serving: _Serving) -> Pace:
    limits = serving.limits
    return Pace(
        idle=serving.timeouts.idle,
        min_octets=limits.min_progress,
        interval=limits.progress_interval,
        now=asyncio.get_running_loop().time(),
    )


def _mode(link: Link, event: BindRequested) -> str:
    association = link.association
    notes = [] if link.tls_version is None else [link.tls_version]
    if association.MODE != P1Association.MODE:
        notes.append(f"{association.MODE} mode")
    if event.dialogue_mode is rtse.DialogueMode.TWA:
        notes.append("two-way alternate: the turn is given back whenever the peer asks")
    return f" ({'; '.join(notes)})" if notes else ""


def _ended(event: Aborted) -> str:
    return f"aborted ({'by the peer' if event.by_peer else 'by us'}): {event.why}"


def _connection_error(error: ConnectionError) -> str:
    """What a system error on a peer's connection says ("connection reset by peer");
    asyncio's own, which names no system error, is a reset met while writing."""
    return error.strerror.lower() if error.strerror else "reset by the peer"


def _peer_name(writer: asyncio.StreamWriter) -> str:
    address = writer.get_extra_info("peername")
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return str(address)
