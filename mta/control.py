"""The daemon's local API: JSON requests on a unix socket (``control_socket``).

The local user agent (``x400``) and the operator's tool (``x400ctl``) talk to the daemon
through this socket; the file's permissions (0660, the daemon's group) decide who may.
A connection carries one request after another, each answered before the next is read
(a user agent that submits many messages keeps its connection; a one-shot tool closes
it after the answer):

    request   one line of JSON (UTF-8, at most 64 KiB) with "op", then, when it has
              "content_length": N, exactly N octets (a submitted message's content)
    response  one line of JSON, {"ok": true, ...} or {"ok": false, "error": "why"}, then,
              when it has "content_length": N, exactly N octets (a read message)

Operations (answered by :class:`mta.service.Service`):

    submit    originator, recipients [..], precedence, content_type, delivery_report,
              deferred_delivery_time?, latest_delivery_time?, + content  -> mts_identifier
    status    -> name, uptime, queue counts by state, channels up/total, garbage collector
                 (objects of start-up left out of it, collections per generation)
    queue     -> counts [{route, precedence, state, recipients}]
    messages  limit? -> recipients [{message_id, mts_identifier, precedence, recipient,
              route, state, attempts, next_attempt_at, last_error, ...}]  (service order)
    channels  -> slots [{peer, precedences, host, port, dscp, mode, backlog, connections}]
    hold / release   message_ids [..] -> changed
    inbox     user, unread_only? -> messages [{id, mts_identifier, kind, precedence, ...}],
              newest (the number of the user's newest entry, read or not; 0 if none)
    wait      user, after?, timeout? (seconds, default 30) -> after, messages [..] (the
              user's entries numbered above after, or above the newest when it is not
              given, in delivery order, once there are any), stored_at (when the daemon
              saw committed the delivery that woke it; null if none did).  Woken by this
              daemon's deliveries; entry numbers follow its commits, as it writes through
              one thread.  With several daemons sharing one PostgreSQL store, another
              daemon's delivery is found at the timeout at the latest, and one committed
              after a higher number was seen is not returned (inbox lists it)
    read      id, user? -> message + content (the MTS-APDU); marks it read
              (without user: the entry of whichever mailbox holds it)
    delete    user, ids [..] -> deleted

Public API::

    Handler (Protocol): async handle(request, payload) -> (response, payload)
    async serve_control(path, handler) -> asyncio.Server
    ControlError       a request the handler refuses (its message is the answer)

The bytes are delimited by :mod:`mta.framing`, which the clients use too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import Protocol

from mta import framing
from mta.framing import MAX_LINE, MAX_PAYLOAD, JsonObject

__all__ = ["MAX_LINE", "MAX_PAYLOAD", "ControlError", "Handler", "JsonObject", "serve_control"]

log = logging.getLogger("aiox400.control")


class ControlError(Exception):
    """A request that is refused; the message says why (it is sent to the client)."""


class Handler(Protocol):
    """What answers the requests."""

    async def handle(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        """The response and its payload (b"" for none); ControlError to refuse."""
        ...


async def serve_control(path: Path, handler: Handler) -> asyncio.Server:
    """Listen on the unix socket ``path`` (replacing a stale socket file)."""
    with contextlib.suppress(FileNotFoundError):
        if path.is_socket():
            path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await _answer(reader, writer, handler):
                pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    server = await asyncio.start_unix_server(connected, path=str(path), limit=MAX_LINE + 1)
    os.chmod(path, 0o660)
    return server


async def _answer(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, handler: Handler
) -> bool:
    """Answer the next request; whether the connection may carry another."""
    framed = True  # a refused request whose content was not read ends the connection
    try:
        request, payload = await _read_request(reader)
        response, data = await handler.handle(request, payload)
    except _FramingError as error:
        framed = False
        response, data = {"ok": False, "error": str(error)}, b""
    except ControlError as error:
        response, data = {"ok": False, "error": str(error)}, b""
    except (ConnectionError, asyncio.IncompleteReadError):
        return False
    except Exception as error:  # a bug must not take the daemon down: say so, log it
        log.exception("control request failed")
        response, data = {"ok": False, "error": f"internal error: {error}"}, b""
    try:
        writer.write(framing.encode(response, data))
        await writer.drain()
    except ConnectionError:
        return False
    return framed


class _FramingError(ControlError):
    """The request cannot be delimited: nothing after it on the connection can be read."""


async def _read_request(reader: asyncio.StreamReader) -> tuple[JsonObject, bytes]:
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError as error:
        raise _FramingError(f"request line longer than {MAX_LINE} octets") from error
    try:
        request, size = framing.parse_header(line, max_payload=MAX_PAYLOAD)
    except framing.FramingError as error:
        raise _FramingError(str(error)) from error
    payload = await reader.readexactly(size) if size else b""
    if not isinstance(request.get("op"), str):
        raise ControlError('request must be a JSON object with "op"')
    return request, payload
