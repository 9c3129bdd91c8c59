"""The daemon's local API: JSON requests on a unix socket (``control_socket``).

The local user agent (``x400``) and the operator's tool (``x400ctl``) talk to the daemon
through this socket.  The kernel's record of who connected (``SO_PEERCRED``: pid, uid,
gid; ``SO_PEERGROUPS``: the supplementary groups) is read once per connection into a
:class:`mta.operator.access.Caller` and handed to the handler with every request: with
``[access]`` the handler authorises each request by it (:mod:`mta.operator.access`) and the
socket is open to all (mode 0666); without, the socket's mode (0660, the daemon's user
and group) alone decides who may.
A connection carries one request after another, each answered before the next is read
(a user agent that submits many messages keeps its connection; a one-shot tool closes
it after the answer):

    request   one line of JSON (UTF-8, at most 64 KiB) with "op", then, when it has
              "content_length": N, exactly N octets (a submitted message's content)
    response  one line of JSON, {"ok": true, ...} or {"ok": false, "error": "why"}, then,
              when it has "content_length": N, exactly N octets (a read message)

Operations (answered by :class:`mta.operator.operations.LocalApi`; with ``[access]``, submit,
inbox, wait, read and delete are also a user's, on its own O/R names, the others only an
operator's):

    submit    originator, recipients [..], precedence, content_type, delivery_report,
              deferred_delivery_time?, latest_delivery_time?, + content  -> mts_identifier
    status    -> name, uptime, queue counts by state, channels up/total, connections
                 bound, garbage collector (objects of start-up left out of it,
                 collections per generation), quarantine {messages, octets,
                 max_messages, max_bytes}
    queue     -> counts [{route, precedence, state, recipients}]
    qshape    -> minutes [5, 10, ...], counts [{route, precedence, bucket, recipients}]
              (waiting recipients by age: bucket i arrived less than minutes[i] ago)
    messages  limit? -> recipients [{message_id, mts_identifier, precedence, recipient,
              route, state, attempts, next_attempt_at, last_error, size, age, ...}]
              (service order)
    channels  -> slots [{peer, precedences, host, port, dscp, mode, backlog, connections}]
    hold / release / queue_delete   a selection: message_ids [..]?, mts_identifiers [..]?,
              peer?, precedence?, all? (recipients meeting every condition given)
              -> changed | deleted, recipients [..]; queue_delete also busy [..] (in
              flight: not deleted) and messages_removed.  A deletion sends no report;
              the audit log records it
    flush     peer? -> due (recipients waiting out a retry made due now; slots woken)
    track     mts_identifier -> events [{at, event, recipient, peer, detail}] (oldest first),
              queue [as messages' recipients] (every state, until retention prunes it)
    config    -> settings [[key, value], ...] (passwords hidden)
    quarantine       -> entries [{id, peer, received_at, reason, size}]  (oldest first):
                     transfers kept because they could not be taken in (mta.intake.quarantine)
    quarantine_read  id -> entry + content (the APDU's octets as received)
    quarantine_delete  ids [..] -> deleted
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

At most ``max_api_connections`` connections at once (one more gets an error and is
closed); one silent for ``api_idle_timeout`` between requests is closed (``[limits]``).

Public API::

    Handler (Protocol): .socket_mode
                        async handle(request, payload, caller) -> (response, payload)
    async serve_control(path, handler, *, max_connections, idle_timeout) -> asyncio.Server
    peer_caller(sock) -> Caller       who is at the other end of a unix socket
    sees_every_account() -> bool      whether this process's user namespace maps every uid
    SocketFile.of(path) -> SocketFile | None     .remove() (only while it is still this one)
    ControlError       a request the handler refuses (its message is the answer)
    ControlSocketInUseError   another process answers on the socket's path

The socket gets the handler's ``socket_mode`` before it listens, whatever the umask:
0660 (``SOCKET_MODE``: the daemon's group, the operators, may connect, nobody else) or
0666 (``OPEN_SOCKET_MODE``: anyone may connect; each request is authorised).  A folder
the daemon makes for it is 0750, or 0755 when the socket is open to all.

Supplementary groups come from ``SO_PEERGROUPS`` (Linux 4.13 and later: the groups the
caller had when it connected); where the kernel lacks it, from the group database
(``getgrouplist`` of the caller's account), which misses a group the process dropped or
was given after login.

The bytes are delimited by :mod:`p1.localapi`, which the clients use too.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import errno
import logging
import os
import pwd
import socket
import struct
from pathlib import Path
from typing import Final, Protocol

from config.schema import DEFAULT_CONNECTION_LIMITS
from mta.faults import LogLimiter
from mta.operator.access import Caller
from p1 import localapi as framing
from p1.localapi import MAX_LINE, MAX_PAYLOAD, JsonObject

__all__ = [
    "MAX_LINE",
    "MAX_PAYLOAD",
    "OPEN_SOCKET_MODE",
    "SOCKET_MODE",
    "ControlError",
    "ControlSocketInUseError",
    "Handler",
    "JsonObject",
    "SocketFile",
    "peer_caller",
    "sees_every_account",
    "serve_control",
]

log = logging.getLogger("aiox400.control")

SOCKET_MODE: Final = 0o660
"""The control socket's mode: the daemon's user and group may connect (unix(7))."""
OPEN_SOCKET_MODE: Final = 0o666
"""The control socket's mode with ``[access]``: anyone may connect, and each request is
authorised by the caller's credentials."""
_FOLDER_MODE: Final = 0o750
"""Mode of the socket's folder when the daemon makes it."""
_OPEN_FOLDER_MODE: Final = 0o755
"""Mode of the socket's folder when the daemon makes it for a socket open to all."""
_SO_PEERGROUPS: Final = getattr(socket, "SO_PEERGROUPS", 59)
"""socket(7) SO_PEERGROUPS (Linux 4.13, <asm-generic/socket.h>), which the socket module
may not name."""
_PEERCRED: Final = struct.Struct("3i")
"""struct ucred (socket(7)): pid, uid, gid."""
_GROUPS_MOST: Final = 65536
"""NGROUPS_MAX on Linux: the longest list SO_PEERGROUPS can return."""
_PROBE_TIMEOUT: Final = 5.0
"""Seconds to wait for an answer on an existing socket before calling it in use."""


class ControlError(Exception):
    """A request that is refused; the message says why (it is sent to the client)."""


class ControlSocketInUseError(OSError):
    """Another process answers on the control socket's path: it is left alone."""


class Handler(Protocol):
    """What answers the requests, and says who may connect."""

    @property
    def socket_mode(self) -> int:
        """The socket file's mode: :data:`SOCKET_MODE` or :data:`OPEN_SOCKET_MODE`."""
        ...

    async def handle(
        self, request: JsonObject, payload: bytes, caller: Caller
    ) -> tuple[JsonObject, bytes]:
        """The response and its payload (b"" for none) to ``caller``'s request;
        ControlError to refuse."""
        ...


async def serve_control(
    path: Path,
    handler: Handler,
    *,
    max_connections: int = DEFAULT_CONNECTION_LIMITS.max_api_connections,
    idle_timeout: float | None = DEFAULT_CONNECTION_LIMITS.api_idle_timeout,
    max_payload: int = MAX_PAYLOAD,
) -> asyncio.Server:
    """Listen on the unix socket ``path`` (replacing a stale socket file).

    A socket file on which another process answers is not replaced:
    :class:`ControlSocketInUseError`.  At most ``max_connections`` at once: one more is
    told so and closed.  A connection that sends no request for ``idle_timeout``
    seconds (or does not read its answer for as long) is closed; a request being
    answered, such as a long ``wait``, is not idle.  A request's content over
    ``max_payload`` octets (the daemon gives its ``max_message_size``) is read and
    discarded, then refused, so that the client, which wrote it all, reads the answer;
    one announcing more than :data:`MAX_PAYLOAD` is refused and its connection closed.
    """
    await _remove_stale(path)
    mode = handler.socket_mode
    folder_mode = _OPEN_FOLDER_MODE if mode & 0o007 else _FOLDER_MODE
    path.parent.mkdir(mode=folder_mode, parents=True, exist_ok=True)
    if mode & 0o007:
        _warn_if_closed(path.parent)
    clients = _Clients(max_connections, idle_timeout, min(max_payload, MAX_PAYLOAD))

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if clients.admit():
                try:
                    caller = await _caller(writer, clients)
                    while caller and await _answer(reader, writer, handler, caller, clients):
                        pass
                finally:
                    clients.release()
            else:
                await _send(writer, clients.refusal(), b"", clients)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    sock = _bound(path, mode)
    try:
        return await asyncio.start_unix_server(connected, sock=sock, limit=MAX_LINE + 1)
    except BaseException:
        sock.close()
        raise


async def _caller(writer: asyncio.StreamWriter, clients: _Clients) -> Caller | None:
    """Who connected; None (and a rate-limited line) if the kernel cannot say."""
    try:
        return await asyncio.to_thread(peer_caller, writer.get_extra_info("socket"))
    except OSError as error:
        clients.notes.warning(log, "credentials", "local API caller unknown (%s): closed", error)
        return None


def _bound(path: Path, mode: int) -> socket.socket:
    """A unix stream socket bound to ``path``, mode ``mode``, not listening yet: nobody
    can connect before its mode is set."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        os.chmod(path, mode)
    except BaseException:
        sock.close()
        raise
    return sock


async def _remove_stale(path: Path) -> None:
    """Remove the socket file ``path`` left by a process that is gone; raise
    :class:`ControlSocketInUseError` if a process answers on it."""
    if not path.is_socket():
        return
    if await _answers(path):
        raise ControlSocketInUseError(
            f"control socket {path} is in use: another process answers on it"
        )
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


async def _answers(path: Path) -> bool:
    """Whether a process accepts connections on the socket ``path`` (one that cannot be
    asked, for want of permission or time, counts as answering)."""
    try:
        async with asyncio.timeout(_PROBE_TIMEOUT):
            _, writer = await asyncio.open_unix_connection(str(path))
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except (OSError, TimeoutError):
        return True
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()
    return True


class SocketFile:
    """The control socket's file as bound by this process (its device and inode)."""

    def __init__(self, path: Path, device: int, inode: int) -> None:
        self.path = path
        self.identity = (device, inode)

    @classmethod
    def of(cls, path: Path) -> SocketFile | None:
        """The socket file now at ``path``; None if there is none."""
        try:
            info = path.lstat()
        except FileNotFoundError:
            return None
        return cls(path, info.st_dev, info.st_ino)

    def remove(self) -> bool:
        """Remove the file if it is still this one (not another process's since);
        whether it was removed."""
        current = SocketFile.of(self.path)
        if current is None or current.identity != self.identity:
            return False
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        return True


class _Clients:
    """The local API's connections: how many are open, how long they may idle."""

    def __init__(self, most: int, idle: float | None, max_payload: int) -> None:
        self.most = most
        self.idle = idle
        self.max_payload = max_payload
        """The most content octets a request may carry (more is read, discarded, refused)."""
        self.open = 0
        self.notes = LogLimiter()

    def admit(self) -> bool:
        """Count one more connection; False (and a rate-limited line) when it is one too
        many."""
        if self.open >= self.most:
            self.notes.warning(
                log,
                "full",
                "closed a local API connection at once: max_api_connections (%d)",
                self.most,
            )
            return False
        self.open += 1
        return True

    def release(self) -> None:
        """One connection fewer."""
        self.open -= 1

    def refusal(self) -> JsonObject:
        return {
            "ok": False,
            "error": f"the MTA has {self.most} local API connections open; try later",
        }


async def _answer(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    handler: Handler,
    caller: Caller,
    clients: _Clients,
) -> bool:
    """Answer the next request; whether the connection may carry another."""
    framed = True  # a refused request whose content was not read ends the connection
    try:
        async with asyncio.timeout(clients.idle):
            request, payload = await _read_request(reader, clients.max_payload)
    except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
        return False  # idle too long, or gone
    except _FramingError as error:
        framed = False
        response, data = _error(error), b""
    except ControlError as error:
        response, data = _error(error), b""
    else:
        response, data = await _handle(handler, request, payload, caller, clients)
    return await _send(writer, response, data, clients) and framed


async def _handle(
    handler: Handler, request: JsonObject, payload: bytes, caller: Caller, clients: _Clients
) -> tuple[JsonObject, bytes]:
    try:
        return await handler.handle(request, payload, caller)
    except ControlError as error:
        return _error(error), b""
    except RecursionError:  # nested past what the code walking it can follow
        clients.notes.warning(log, "nested", "local API request nested too deeply: refused")
        return {"ok": False, "error": "request is nested too deeply"}, b""
    except Exception as error:  # a bug must not take the daemon down: say so, log it
        log.exception("control request failed")
        kind = type(error).__name__
        return {"ok": False, "error": f"internal error ({kind}): see the daemon's log"}, b""


async def _send(
    writer: asyncio.StreamWriter, response: JsonObject, data: bytes, clients: _Clients
) -> bool:
    """Write the answer; whether the client took it in time."""
    try:
        encoded = framing.encode(response, data)
    except (RecursionError, TypeError, ValueError) as error:
        log.error("local API answer cannot be encoded: %s", error)
        encoded = framing.encode({"ok": False, "error": "internal error: answer not encodable"})
    try:
        writer.write(encoded)
        async with asyncio.timeout(clients.idle):
            await writer.drain()
    except (ConnectionError, TimeoutError):
        return False
    return True


def _error(error: ControlError) -> JsonObject:
    return {"ok": False, "error": str(error)}


class _FramingError(ControlError):
    """The request cannot be delimited: nothing after it on the connection can be read."""


async def _read_request(reader: asyncio.StreamReader, max_payload: int) -> tuple[JsonObject, bytes]:
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError as error:
        raise _FramingError(f"request line longer than {MAX_LINE} octets") from error
    try:
        request, size = framing.parse_header(line, max_payload=MAX_PAYLOAD)
    except framing.FramingError as error:
        raise _FramingError(str(error)) from error
    if size > max_payload:
        await _discard(reader, size)
        raise ControlError(str(framing.PayloadTooLargeError(size, max_payload)))
    payload = await reader.readexactly(size) if size else b""
    if not isinstance(request.get("op"), str):
        raise ControlError('request must be a JSON object with "op"')
    return request, payload


# --- who called ------------------------------------------------------------------------


def peer_caller(sock: socket.socket) -> Caller:
    """The process at the other end of the connected unix socket ``sock``, as the kernel
    recorded it at connect (``SO_PEERCRED``); its supplementary groups from
    ``SO_PEERGROUPS``, else from the group database; its account's name from the password
    database.  Blocking (the databases may be remote): call it off the event loop."""
    pid, uid, gid = _PEERCRED.unpack(
        sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    )
    try:
        account: str | None = pwd.getpwuid(uid).pw_name
    except KeyError:
        account = None
    groups = _peer_groups(sock)
    if groups is None:
        groups = _account_groups(account, gid)
    return Caller(pid=pid, uid=uid, gid=gid, groups=groups, account=account)


def _peer_groups(sock: socket.socket) -> frozenset[int] | None:
    """The caller's supplementary groups (``SO_PEERGROUPS``); None where the kernel does
    not say."""
    size = 64
    while True:
        try:
            data = sock.getsockopt(socket.SOL_SOCKET, _SO_PEERGROUPS, 4 * size)
        except OSError as error:
            if error.errno == errno.ERANGE and size < _GROUPS_MOST:
                size = _GROUPS_MOST
                continue
            return None
        gids = array.array("I")
        gids.frombytes(data[: len(data) - len(data) % gids.itemsize])
        return frozenset(gids)


def _account_groups(account: str | None, gid: int) -> frozenset[int]:
    """The groups the group database gives ``account`` (none for a uid without one)."""
    if account is None:
        return frozenset()
    try:
        return frozenset(os.getgrouplist(account, gid))
    except OSError:
        return frozenset()


def sees_every_account() -> bool:
    """Whether this process's user namespace maps every uid as it is outside: when not
    (systemd's ``PrivateUsers=yes``), a caller from outside it shows the overflow uid
    (65534, nobody) and cannot be told apart.  True where there is no ``uid_map``."""
    try:
        text = Path("/proc/self/uid_map").read_text(encoding="ascii")
    except OSError:
        return True
    for line in text.splitlines():
        parts = line.split()
        if parts[:2] == ["0", "0"] and len(parts) == 3 and int(parts[2]) >= 0xFFFFFFFF:
            return True
    return False


def _warn_if_closed(folder: Path) -> None:
    """Warn when a process that is not the daemon's cannot reach a socket open to all:
    a folder above it that others may not enter."""
    for place in (folder, *folder.parents):
        try:
            mode = place.stat().st_mode
        except OSError:
            return
        if not mode & 0o001:
            log.warning(
                "control socket in %s: others may not enter %s (mode %04o), so the "
                "[access] users cannot connect; chmod o+x it or move control_socket",
                folder,
                place,
                mode & 0o7777,
            )
            return


_DISCARD_CHUNK: Final = 1024 * 1024


async def _discard(reader: asyncio.StreamReader, size: int) -> None:
    """Read ``size`` octets and keep none of them."""
    while size:
        size -= len(await reader.readexactly(min(size, _DISCARD_CHUNK)))
