"""P1 associations on asyncio streams: a thin adapter around :class:`P1Association`.

A :class:`Link` owns one TCP connection and one association.  It runs no task of its own:
whoever awaits :meth:`Link.next_event` reads the socket, feeds the association, writes what
the association queued and gets the association's events, in order.  So every byte is read
by exactly one coroutine, and a link that nobody awaits simply holds its socket.

Initiator::

    link = await open_link(host, port, argument, dscp=24, timeouts=Timeouts())
    await link.transfer(apdu)      # returns once the peer confirmed (it stored the message)
    await link.release()

Responder: :func:`serve_link` runs one accepted connection to its end, asking a
:class:`Responder` to decide binds and to store transfers before they are confirmed.

Public API::

    Timeouts(connect, bind, idle, release)
    LinkError, BindRefusedError(error), LinkClosedError, TransferRefusedError
    Link.next_event(timeout) / transfer(apdu) / release() / abort(why) / close()
    async open_link(host, port, argument, *, settings, dscp, timeouts) -> (Link, BindAccepted)
    Responder (Protocol): on_bind(event) -> MTABindResult | MTABindError; on_transfer(apdu)
    async serve_link(reader, writer, responder, *, settings, timeouts)
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from dataclasses import dataclass
from typing import Protocol

from mta import net
from p1.association.connection import (
    Aborted,
    AssociationSettings,
    BindAccepted,
    BindRefused,
    BindRequested,
    P1Association,
    Released,
    TransferConfirmed,
    TransferReceived,
)
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult
from p1.osi import Event, Role

log = logging.getLogger("aiox400.link")

READ_SIZE = 1 << 20
"""Bytes asked of the stream per read: everything it holds, for a 1 MB transfer in few reads
(the transport receives at most 256 KiB at a time; whatever it gathered is taken at once)."""


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


class LinkClosedError(LinkError):
    """The association is closed (aborted by either side, or the connection dropped)."""


class TransferRefusedError(LinkError):
    """Raised by a :class:`Responder` that cannot take a transfer: the association is
    aborted, so the peer keeps responsibility and tries again later."""


class Link:
    """One P1 association over one TCP connection."""

    def __init__(
        self,
        association: P1Association,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        peer: str,
    ) -> None:
        self.association = association
        self.peer = peer
        self._reader = reader
        self._writer = writer
        self._ready: collections.deque[Event] = collections.deque()

    async def flush(self) -> None:
        """Write what the association queued."""
        if self._write():
            await self._writer.drain()

    def _write(self) -> bool:
        """Hand what the association queued to the transport; whether there was any.

        (One write of the joined TPKTs: on Python 3.11 ``writelines`` would join them too.)
        """
        data = self.association.data_to_send()
        if data and not self._writer.is_closing():
            self._writer.write(data)
            return True
        return False

    async def next_event(self, timeout: float | None) -> Event:
        """The next event, reading the socket as needed; TimeoutError after ``timeout``."""
        if self._ready:  # (no timer to arm for an event already read)
            return self._ready.popleft()
        async with asyncio.timeout(timeout):
            while not self._ready:
                if self.association.closed:
                    raise LinkClosedError(f"association with {self.peer} is closed")
                await self._read_once()
        return self._ready.popleft()

    async def _read_once(self) -> None:
        try:
            data = await self._reader.read(READ_SIZE)
        except ConnectionError as error:
            data = b""
            log.info("%s: connection error: %s", self.peer, error)
        events = self.association.receive_data(data) if data else self.association.receive_eof()
        self._ready.extend(events)
        if self._write():  # (no drain to await when the read answers nothing)
            await self._writer.drain()

    async def transfer(self, apdu: bytes, *, timeout: float) -> int:
        """Send one MTS-APDU; return its transfer id once the peer confirmed it."""
        transfer_id = self.association.send_transfer(apdu)
        await self.flush()
        while True:
            event = await self.next_event(timeout)
            if isinstance(event, TransferConfirmed) and event.transfer_id == transfer_id:
                return transfer_id
            self._check_alive(event)

    async def ended(self) -> str:
        """Read until the peer ends the association (abort, release, or the connection
        closed); why.  For an idle association: cancelling it loses nothing read."""
        while True:
            try:
                self._check_alive(await self.next_event(None))
            except LinkClosedError as error:
                return f"the peer ended the idle association: {error}"

    def _check_alive(self, event: Event) -> None:
        if isinstance(event, Aborted):
            raise LinkClosedError(f"association with {self.peer} aborted: {event.why}")
        if isinstance(event, Released):
            raise LinkClosedError(f"association with {self.peer} released by the peer")

    async def release(self, *, timeout: float) -> None:
        """RT-CLOSE: release and wait for the peer's answer, then close the connection."""
        try:
            self.association.send_release()
            await self.flush()
            while True:
                event = await self.next_event(timeout)
                if isinstance(event, Released):
                    return
                self._check_alive(event)
        finally:
            await self.close()

    async def abort(self, why: str) -> None:
        """RT-U-ABORT: send the abort, then close the connection."""
        self.association.abort(why)
        with contextlib.suppress(ConnectionError):
            await self.flush()
        await self.close()

    async def close(self) -> None:
        """Close the TCP connection (after writing what is queued)."""
        with contextlib.suppress(ConnectionError):
            await self.flush()
        self._writer.close()
        with contextlib.suppress(ConnectionError):
            await self._writer.wait_closed()


async def open_link(
    host: str,
    port: int,
    argument: MTABindArgument,
    *,
    settings: AssociationSettings | None = None,
    dscp: int = 0,
    timeouts: Timeouts | None = None,
) -> tuple[Link, BindAccepted]:
    """Connect (marked ``dscp``), bind with ``argument``; the link and the bind result.

    Raises ``TimeoutError`` (connect or bind), ``OSError`` (connect), BindRefusedError or
    LinkClosedError.
    """
    timeouts = timeouts or Timeouts()
    reader, writer = await net.open_marked_connection(
        host, port, dscp=dscp, timeout=timeouts.connect
    )
    link = Link(P1Association(Role.INITIATOR, settings), reader, writer, peer=f"{host}:{port}")
    try:
        link.association.send_bind(argument)
        await link.flush()
        accepted = await _await_bind(link, timeouts.bind)
    except BaseException:
        await link.abort("bind did not complete")
        raise
    return link, accepted


async def _await_bind(link: Link, timeout: float) -> BindAccepted:
    async with asyncio.timeout(timeout):
        while True:
            event = await link.next_event(None)
            if isinstance(event, BindAccepted):
                return event
            if isinstance(event, BindRefused):
                raise BindRefusedError(event.error, event.why)
            link._check_alive(event)


class Responder(Protocol):
    """What a responding MTA decides: binds, and storing what it receives."""

    async def on_bind(self, event: BindRequested) -> MTABindResult | MTABindError:
        """Accept (with our result) or refuse (with the error) an MTA-bind."""
        ...

    async def on_transfer(self, apdu: bytes) -> None:
        """Store ``apdu`` durably; return only once it is safe (then it is confirmed)."""
        ...


async def serve_link(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    responder: Responder,
    *,
    settings: AssociationSettings | None = None,
    timeouts: Timeouts | None = None,
) -> None:
    """Run one inbound association to its end; never raises for the peer's faults."""
    timeouts = timeouts or Timeouts()
    peer = _peer_name(writer)
    link = Link(P1Association(Role.RESPONDER, settings), reader, writer, peer=peer)
    try:
        await _serve(link, responder, timeouts)
    except TimeoutError:
        log.warning("%s: timed out, aborting", peer)
        await link.abort("timed out")
    except TransferRefusedError as error:
        log.warning("%s: transfer refused, aborting: %s", peer, error)
        await link.abort(str(error))
    except LinkClosedError as error:
        log.info("%s: %s", peer, error)
    except Exception:  # the daemon serves on: nothing was confirmed, the peer retries
        log.exception("%s: failed while serving, aborting", peer)
        await link.abort("responder failure")
    finally:
        await link.close()


async def _serve(link: Link, responder: Responder, timeouts: Timeouts) -> None:
    timeout: float | None = timeouts.bind
    while True:
        event = await link.next_event(timeout)
        timeout = timeouts.idle
        if isinstance(event, BindRequested):
            await _answer_bind(link, responder, event)
        elif isinstance(event, TransferReceived):
            await responder.on_transfer(event.apdu)
            link.association.confirm_transfer(event.transfer_id)
            await link.flush()
        elif isinstance(event, Released | Aborted):
            log.info("%s: %s", link.peer, _ended(event))
            return
        if link.association.closed:
            return


async def _answer_bind(link: Link, responder: Responder, event: BindRequested) -> None:
    answer = await responder.on_bind(event)
    if isinstance(answer, MTABindError):
        log.warning(
            "%s: bind from %r refused: %s",
            link.peer,
            event.argument.initiator_name,
            answer.name.lower().replace("_", "-"),
        )
        link.association.refuse_bind(answer)
    else:
        log.info("%s: bind from %r accepted", link.peer, event.argument.initiator_name)
        link.association.accept_bind(answer)
    await link.flush()


def _ended(event: Released | Aborted) -> str:
    if isinstance(event, Released):
        return "released"
    return f"aborted ({'by the peer' if event.by_peer else 'by us'}): {event.why}"


def _peer_name(writer: asyncio.StreamWriter) -> str:
    address = writer.get_extra_info("peername")
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return str(address)
