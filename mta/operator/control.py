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
              deferred_delivery_time?, latest_delivery_time?, security_label?
              {classification, categories [..]?, privacy_mark?} (names of the
              [security] policy's SPIF), + content  -> mts_identifier
    status    -> name, uptime, queue counts by state, slots connected (a connection bound)
                 / closed (on demand) / total, slots down [{slot, error}], connections
                 bound, garbage collector (objects of start-up left out of it,
                 collections per generation), quarantine {messages, octets,
                 max_messages, max_bytes}
    queue     -> counts [{route, precedence, state, recipients}]
    qshape    -> minutes [5, 10, ...], counts [{route, precedence, bucket, recipients}]
              (waiting recipients by age: bucket i arrived less than minutes[i] ago)
    messages  limit? -> recipients [{message_id, mts_identifier, precedence, recipient,
              route, state, attempts, next_attempt_at, last_error, size, age, ...}]
              (service order)
    channels  -> slots [{peer, precedences, host, port, dscp, mode, tls, backlog,
              connections [{index, state, since, transfers, last_error, tls_version}]}]
    hold / release / queue_delete   a selection: message_ids [..]?, mts_identifiers [..]?,
              peer?, precedence?, all? (recipients meeting every condition given)
              -> changed | deleted, recipients [..]; queue_delete also busy [..] (in
              flight: not deleted) and messages_removed.  A deletion sends no report;
              the audit log records it
    non_deliver  a selection (as hold's) + reason (a PrintableString of 1..256) ->
              non_delivered, recipients [..], busy [..] (in flight: left alone).  Each
              is reported to its originator as expiry reports (unable-to-transfer, the
              reason as supplementary-information) and audited
    queue_show   message_id | mts_identifier -> message {message_id, mts_identifier,
              kind, precedence, originator, arrival_time, expiry_time, origin_peer,
              size, security_marking? (with a [security] policy), recipients
              [{recipient, route, state, attempts, next_attempt_at, last_error}]}
              + content (the stored MTS-APDU)
    flush     peer? -> due (recipients waiting out a retry made due now; slots woken)
    track     mts_identifier -> events [{at, event, recipient, peer, detail}] (oldest first),
              queue [as messages' recipients] (every state, until retention prunes it)
    track_find   recipient?, originator?, since? (ISO 8601) -> matches [{mts_identifier,
              first, last, originator, states {state: recipients}}] (oldest first, at
              most 100), more (whether there were more)
    reload    -> applied, restart [..] (keys that need a restart); refused, the file
              refused (its error names file, key and value): SIGHUP's reload
    stop      -> pid; the stop SIGTERM begins, answered before it begins
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
import dataclasses
import errno
import logging
import os
import pwd
import socket
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Final, NoReturn, Protocol

from config.schema import DEFAULT_CONNECTION_LIMITS
from mta import stages
from mta.faults import LogLimiter
from mta.operator import access
from mta.operator.access import Caller, Policy, Standing
from mta.operator.admission import ApiLimits, Places
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
    "peer_credentials",
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
    policy: Policy | None = None,
    limits: ApiLimits | None = None,
    idle_timeout: float | None = DEFAULT_CONNECTION_LIMITS.api_idle_timeout,
    max_payload: int = MAX_PAYLOAD,
) -> asyncio.Server:
    """Listen on the unix socket ``path`` (replacing a stale socket file).

    A socket file on which another process answers is not replaced:
    :class:`ControlSocketInUseError`.  Each connection is judged by its caller's
    credentials under ``policy`` (default: no ``[access]``, :func:`Policy.open` for this
    process's uid) before anything is read from it (:func:`mta.operator.access.standing`):
    a refused caller is told why and closed; the others are counted in ``limits``'s
    places (:mod:`mta.operator.admission`), one too many being told so and closed.  A
    connection that sends no request for ``idle_timeout`` seconds (or does not read its
    answer for as long) is closed; a request being answered, such as a long ``wait``, is
    not idle.  A request's content over ``max_payload`` octets (the daemon gives its
    ``max_message_size``) is, from an operator, read and discarded, then refused, so that
    the client, which wrote it all, reads the answer; from another caller, and over what
    its account may hold, it is refused unread and the connection closed; one announcing
    more than :data:`MAX_PAYLOAD` is refused and its connection closed.
    """
    await _remove_stale(path)
    mode = handler.socket_mode
    folder_mode = _OPEN_FOLDER_MODE if mode & 0o007 else _FOLDER_MODE
    path.parent.mkdir(mode=folder_mode, parents=True, exist_ok=True)
    if mode & 0o007:
        _warn_if_closed(path.parent)
    clients = _Clients(
        policy or Policy.open(os.getuid()),
        Places(limits or ApiLimits()),
        idle_timeout,
        min(max_payload, MAX_PAYLOAD),
    )

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                await _serve(reader, writer, handler, clients)
            finally:
                writer.close()
                with contextlib.suppress(ConnectionError):
                    await writer.wait_closed()
        except asyncio.CancelledError:
            # The loop ends (the daemon stops) with this connection still open, as the
            # one that asked for the stop is: it ends here, quietly.  (Python 3.11's
            # stream server asks a cancelled handler for its exception, and would log
            # the CancelledError that raises as an error with a traceback.)
            return

    sock = _bound(path, mode)
    try:
        return await asyncio.start_unix_server(connected, sock=sock, limit=MAX_LINE + 1)
    except BaseException:
        sock.close()
        raise


async def _serve(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    handler: Handler,
    clients: _Clients,
) -> None:
    """One connection: judged and counted at once (no await before it is counted, so
    that a flood of connections cannot pass the bounds), then its requests answered."""
    caller = _credentials(writer, clients)
    if caller is None:
        return
    if not caller.groups_known and clients.policy.enforced:
        caller = await _named(caller)  # a kernel without SO_PEERGROUPS: ask the database
    standing = access.standing(clients.policy, caller)
    if standing is Standing.REFUSED:
        await _refuse(writer, caller, clients)
        return
    why = clients.places.enter(caller.uid, standing)
    if why is not None:
        clients.notes.warning(
            log,
            f"full:{caller.uid}",
            "closed a local API connection of uid %d at once: %s",
            caller.uid,
            why,
        )
        await _send(writer, {"ok": False, "error": why}, b"", clients)
        return
    try:
        caller = await _named(caller)
        session = _Session(caller, standing)
        while await _answer(reader, writer, handler, session, clients):
            pass
    finally:
        clients.places.leave(caller.uid)


async def _refuse(writer: asyncio.StreamWriter, caller: Caller, clients: _Clients) -> None:
    """Tell a caller ``[access]`` does not know why it may not use the MTA, reading
    nothing.  Its account's name is looked up for the answer while fewer than
    ``max_api_connections`` refusals are under way; past that (a flood of connections)
    it is closed without one."""
    quiet = clients.refusing >= clients.places.limits.connections
    if not quiet:
        clients.refusing += 1
        try:
            caller = await _named(caller)
        finally:
            clients.refusing -= 1
    why = access.unwelcome(clients.policy, caller)
    clients.notes.warning(log, f"refused:{caller.uid}", "refused a local API connection: %s", why)
    if not quiet:
        await _send(writer, {"ok": False, "error": why}, b"", clients)


def _credentials(writer: asyncio.StreamWriter, clients: _Clients) -> Caller | None:
    """Who connected, as the kernel recorded it (no account name yet); None (and a
    rate-limited line) if the kernel cannot say."""
    try:
        return peer_credentials(writer.get_extra_info("socket"))
    except OSError as error:
        clients.notes.warning(log, "credentials", "local API caller unknown (%s): closed", error)
        return None


async def _named(caller: Caller) -> Caller:
    """``caller`` with its account's name (and, where the kernel did not give them, its
    groups) from the databases, read off the event loop."""
    return await asyncio.to_thread(_with_account, caller)


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
    """The local API's connections: who may connect, what each account holds, how long
    a connection may idle."""

    def __init__(
        self, policy: Policy, places: Places, idle: float | None, max_payload: int
    ) -> None:
        self.policy = policy
        self.places = places
        self.idle = idle
        self.max_payload = max_payload
        """The most content octets a request may carry (more is refused)."""
        self.refusing = 0
        """Refused connections whose account's name is being looked up."""
        self.notes = LogLimiter()


@dataclass(frozen=True, slots=True)
class _Session:
    """One admitted connection's caller and how it was admitted."""

    caller: Caller
    standing: Standing


async def _answer(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    handler: Handler,
    session: _Session,
    clients: _Clients,
) -> bool:
    """Answer the next request; whether the connection may carry another."""
    framed = True  # a refused request whose content was not read ends the connection
    held = 0
    try:
        async with asyncio.timeout(clients.idle):
            request, held = await _read_header(reader, session, clients)
            payload = await reader.readexactly(held) if held else b""
    except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
        clients.places.release(session.caller.uid, held)
        return False  # idle too long, or gone
    except _FramingError as error:
        framed = False
        response, data = _refused(error, session, clients), b""
    except ControlError as error:
        response, data = _refused(error, session, clients), b""
    else:
        stages.urgent_here(False)  # (until the request is read: a flash submission says so)
        stages.mark("api.request")
        try:
            response, data = await _handle(handler, request, payload, session.caller, clients)
        finally:
            clients.places.release(session.caller.uid, held)
    sent = await _send(writer, response, data, clients)
    stages.mark("api.answered")
    return sent and framed


def _refused(error: ControlError, session: _Session, clients: _Clients) -> JsonObject:
    """The answer to a request refused before it reached the handler; a caller that is
    not an operator gets one rate-limited line for it (an operator's own tools are
    trusted to say so)."""
    if session.standing is Standing.BOUNDED:
        caller = session.caller
        clients.notes.warning(
            log,
            f"request:{caller.uid}",
            "refused a local API request of %s: %s",
            caller.who,
            error,
        )
    return _error(error)


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


async def _read_header(
    reader: asyncio.StreamReader, session: _Session, clients: _Clients
) -> tuple[JsonObject, int]:
    """The next request's header and the content octets that follow it, counted as the
    account's (:meth:`Places.hold`) until the caller releases them."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError as error:
        raise _FramingError(f"request line longer than {MAX_LINE} octets") from error
    try:
        request, size = framing.parse_header(line, max_payload=MAX_PAYLOAD)
    except framing.FramingError as error:
        raise _FramingError(str(error)) from error
    if not isinstance(request.get("op"), str):
        await _skip(reader, size, session, 'request must be a JSON object with "op"')
    if size > clients.max_payload:
        too_large = framing.PayloadTooLargeError(size, clients.max_payload)
        await _skip(reader, size, session, str(too_large))
    over = clients.places.hold(session.caller.uid, session.standing, size)
    if over is not None:
        raise _FramingError(over)
    return request, size


async def _skip(reader: asyncio.StreamReader, size: int, session: _Session, why: str) -> NoReturn:
    """Refuse a request, passing over its content: an operator's is read and discarded
    (its client reads the answer after writing it all) and the connection kept; another
    caller's is left unread and the connection closed after the answer."""
    if session.standing is not Standing.OPERATOR and size:
        raise _FramingError(why)
    await _discard(reader, size)
    raise ControlError(why)


# --- who called ------------------------------------------------------------------------


def peer_caller(sock: socket.socket) -> Caller:
    """The process at the other end of the connected unix socket ``sock``, as the kernel
    recorded it at connect (``SO_PEERCRED``); its supplementary groups from
    ``SO_PEERGROUPS``, else from the group database; its account's name from the password
    database.  Blocking (the databases may be remote): call it off the event loop."""
    return _with_account(peer_credentials(sock))


def peer_credentials(sock: socket.socket) -> Caller:
    """What the kernel says of the process at the other end of ``sock``, without asking
    any database: pid, uid, gid (``SO_PEERCRED``) and the supplementary groups
    (``SO_PEERGROUPS``; none where the kernel does not say, see :func:`peer_caller`).
    Two system calls: fit for the event loop."""
    pid, uid, gid = _PEERCRED.unpack(
        sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    )
    groups = _peer_groups(sock)
    return Caller(
        pid=pid, uid=uid, gid=gid, groups=groups or frozenset(), groups_known=groups is not None
    )


def _with_account(caller: Caller) -> Caller:
    """``caller`` with its account's name from the password database, and its groups
    from the group database if the kernel did not give them.  Blocking."""
    try:
        account: str | None = pwd.getpwuid(caller.uid).pw_name
    except KeyError:
        account = None
    groups = caller.groups if caller.groups_known else _account_groups(account, caller.gid)
    return dataclasses.replace(caller, account=account, groups=groups, groups_known=True)


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
