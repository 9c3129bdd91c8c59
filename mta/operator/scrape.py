"""The Prometheus endpoint (``[metrics]``): HTTP/1.1 GET of one path, on the daemon's loop.

Why on the event loop and not the client library's own server thread: the gauges must
say what the queue holds now, and the queue is read in the database thread
(:class:`mta.database.Database`), which only the loop may hand work to.  A library
thread would render a snapshot the loop refreshed some time before, so a scrape could
show a queue emptied seconds ago.  Here a scrape awaits the store's figures (one
grouped query, run like the local API's ``queue``), reads the slots and the guard on
the loop, and renders the registry (:meth:`mta.metrics.Metrics.render`); nothing
blocks the loop but that rendering, a few kilobytes of text.

The server is small and strict: a request head of at most ``MAX_REQUEST`` octets within
``REQUEST_TIMEOUT`` seconds, ``MAX_CLIENTS`` connections at once, one request per
connection (``Connection: close``).  Each connection is served by a task of its own.  A
connection beyond ``MAX_CLIENTS`` takes the place of the one that has waited longest
for its request head (that one is closed): a scraper sends its request as soon as it
connects, so connections that say nothing cannot keep it out, however many there are;
it is refused only while every place is answering a request already.  GET on the configured path
answers 200 with :data:`prometheus_client.CONTENT_TYPE_LATEST`; another path 404,
another method 405, a malformed head 400, one too long 431.  HEAD is answered as GET is,
the same status and headers (Content-Length that of the body GET would get) without the
body (RFC 9110 9.3.2), as ``curl -I`` and health checks ask.  A scrape that cannot read
the store answers 503, with one log line per minute (:class:`mta.inbound.guard.LogLimiter`),
never a traceback.

Public API::

    await MetricsServer.start(service) -> MetricsServer | None     (None: [metrics] off)
        .port   .url   await .close()
    await read_figures(service) -> Figures
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Final

from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import Engine

from mta import net
from mta.faults import LogLimiter
from mta.metrics import Figures, SlotFigure
from mta.operator.views import Daemon
from mta.transport import Channel, ConnectionState, SlotState
from store import LOCAL_ROUTE, Quarantine, QuarantineTotals, transaction
from store.figures import (
    OwnerFigure,
    QueueFigure,
    database_bytes,
    file_bytes,
    owner_figures,
    queue_figures,
)

__all__ = ["MetricsServer", "read_figures"]

log = logging.getLogger("aiox400.metrics")

MAX_REQUEST: Final = 8192
"""Octets of a request head at most (a scraper sends a few hundred)."""
REQUEST_TIMEOUT: Final = 10.0
"""Seconds for the request head to arrive, and for the answer to be taken."""
MAX_CLIENTS: Final = 8
"""Scrapes served at once (Prometheus sends one at a time per target)."""
_ANSWERED: Final = ("GET", "HEAD")
"""The methods answered on the path; any other is 405."""


class MetricsServer:
    """The endpoint of one daemon (see the module docstring)."""

    def __init__(self, service: Daemon, server: asyncio.Server) -> None:
        self.service = service
        self._server = server
        self._clients: set[asyncio.Task[None]] = set()
        self._waiting: dict[asyncio.Task[None], None] = {}
        """The clients that have not sent their request head yet, oldest first."""
        self._notes = LogLimiter()

    @classmethod
    async def start(cls, service: Daemon) -> MetricsServer | None:
        """Listen where ``[metrics] listen`` says (None when it says nothing); OSError
        naming the address when it cannot."""
        endpoint = service.config.metrics
        if endpoint.host is None:
            return None
        holder: list[MetricsServer] = []

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await holder[0]._serve(reader, writer)

        try:
            server = await asyncio.start_server(
                serve, endpoint.host, endpoint.port, limit=MAX_REQUEST
            )
        except OSError as error:
            raise OSError(
                error.errno, f"cannot listen for metrics on {endpoint.url}: {error.strerror}"
            ) from error
        holder.append(cls(service, server))
        log.info("metrics on %s", holder[0].url)
        return holder[0]

    @property
    def port(self) -> int:
        """The TCP port listened on."""
        return net.bound_port(self._server)

    @property
    def url(self) -> str:
        endpoint = self.service.config.metrics
        host = endpoint.host or ""
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}{endpoint.path}"

    async def close(self) -> None:
        """Stop listening; end the scrapes under way and wait for them."""
        self._server.close()
        clients = list(self._clients)
        for task in clients:
            task.cancel()
        for task in clients:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._server.wait_closed()

    # --- one connection ----------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self._clients) >= MAX_CLIENTS and not self._make_room():
            writer.transport.abort()
            return
        self._clients.add(task)
        self._waiting[task] = None
        try:
            # Cancelled by close() or to make room: end quietly (Python 3.11's streams
            # would report a cancelled handler to the loop's exception handler as an error).
            with contextlib.suppress(asyncio.CancelledError):
                await self._exchange(reader, writer)
        finally:
            self._clients.discard(task)
            self._waiting.pop(task, None)
            writer.transport.abort()

    def _make_room(self) -> bool:
        """Close the connection that has waited longest for its request head; False
        when every connection is being answered."""
        if not self._waiting:
            return False
        oldest = next(iter(self._waiting))
        del self._waiting[oldest]
        self._clients.discard(oldest)
        oldest.cancel()
        self._notes.warning(
            log,
            "displaced",
            "metrics: %d connections at once: closed the one idle longest",
            MAX_CLIENTS,
        )
        return True

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT):
                head = await reader.readuntil(b"\r\n\r\n")
            self._answering(asyncio.current_task())
        except asyncio.LimitOverrunError:
            await _send(writer, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE)
            return
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            return  # nothing sensible to answer: the client went, or said nothing
        request = _request_line(head)
        status, body = await self._answer(request)
        head_only = request is not None and request[0] == "HEAD"
        await _send(writer, status, body, with_body=not head_only)

    def _answering(self, task: asyncio.Task[None] | None) -> None:
        """``task`` has its request: it keeps its place until answered."""
        if task is not None:
            self._waiting.pop(task, None)

    async def _answer(self, request: tuple[str, str] | None) -> tuple[HTTPStatus, bytes]:
        """The status and body for ``request`` (method, path), None when malformed."""
        if request is None:
            return HTTPStatus.BAD_REQUEST, b"malformed request\n"
        method, path = request
        if path != self.service.config.metrics.path:
            return HTTPStatus.NOT_FOUND, b"not found\n"
        if method not in _ANSWERED:
            return HTTPStatus.METHOD_NOT_ALLOWED, b"only GET and HEAD\n"
        try:
            figures = await read_figures(self.service)
        except Exception as error:
            self._notes.warning(
                log, "store", "metrics: cannot read the store, answered 503: %s", error
            )
            return HTTPStatus.SERVICE_UNAVAILABLE, b"the store cannot be read now\n"
        return HTTPStatus.OK, self.service.metrics.render(figures)


def _request_line(head: bytes) -> tuple[str, str] | None:
    """(method, path without its query) of an HTTP/1.x request head, or None."""
    line = head.split(b"\r\n", 1)[0]
    parts = line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return None
    try:
        method, target = parts[0].decode("ascii"), parts[1].decode("ascii")
    except UnicodeDecodeError:
        return None
    if not method.isalpha() or not target.startswith("/"):
        return None
    return method, target.split("?", 1)[0]


async def _send(
    writer: asyncio.StreamWriter, status: HTTPStatus, body: bytes = b"", *, with_body: bool = True
) -> None:
    """Answer ``status`` with ``body``; ``with_body`` False (HEAD): the same head, its
    Content-Length the body's, and no body."""
    content_type = CONTENT_TYPE_LATEST if status is HTTPStatus.OK else "text/plain; charset=utf-8"
    headers = [
        f"HTTP/1.1 {status.value} {status.phrase}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    if status is HTTPStatus.METHOD_NOT_ALLOWED:
        headers.append(f"Allow: {', '.join(_ANSWERED)}")
    head = ("\r\n".join(headers) + "\r\n\r\n").encode("ascii")
    writer.write(head + body if with_body else head)
    with contextlib.suppress(TimeoutError, ConnectionError):
        async with asyncio.timeout(REQUEST_TIMEOUT):
            await writer.drain()


# --- the figures ----------------------------------------------------------------------


async def read_figures(service: Daemon) -> Figures:
    """What a scrape shows: the store's figures (in the database thread; its files'
    sizes in a worker thread), the slots' and the guard's (on the loop)."""
    queue, owners, database, quarantine = await service.db.run(_store_figures, service.db.engine)
    sizes = await asyncio.to_thread(file_bytes, service.config.database)
    if database is not None:
        sizes["database"] = database
    guard = service.guard
    return Figures(
        now=datetime.now(UTC),
        routes=(*(peer.name for peer in service.config.peers), LOCAL_ROUTE),
        queue=queue,
        slots=tuple(map(_slot, service.runners)),
        slot_states=tuple(state.value for state in SlotState),
        inbound=guard.connections,
        unbound=guard.unbound,
        store_bytes=sizes,
        quarantine_messages=quarantine.messages,
        quarantine_bytes=quarantine.octets,
        store_up=service.store.down is None,
        degraded=len(service.parts.degraded()),
        owner=service.owner,
        owners=owners,
        minimize={
            peer.name: int(service.minimize.floor(peer.name) or 0) for peer in service.config.peers
        },
    )


def _store_figures(
    engine: Engine,
) -> tuple[tuple[QueueFigure, ...], tuple[OwnerFigure, ...], int | None, QuarantineTotals]:
    with transaction(engine, read_only=True) as session:
        return (
            queue_figures(session),
            owner_figures(session),
            database_bytes(session),
            Quarantine(session).totals(),
        )


def _slot(runner: Channel) -> SlotFigure:
    """A slot runner's figures; read at each scrape, as a reload may replace runners."""
    snapshot = runner.snapshot()
    connections = dict.fromkeys((state.value for state in ConnectionState), 0)
    for connection in snapshot.connections:
        connections[connection.state.value] += 1
    return SlotFigure(
        peer=snapshot.peer,
        slot="+".join(snapshot.precedences),
        state=snapshot.state.value,
        backlog=snapshot.backlog,
        connections=connections,
    )
