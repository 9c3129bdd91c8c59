"""The client side of the MTA's local API (its operations: :mod:`mta.operator.control`; its framing,
shared with the daemon: :mod:`p1.localapi`).

Requests on the daemon's unix socket: a JSON line (plus content), then a JSON line (plus
content) back, as often as wanted on one connection.  A request the daemon refuses at its
line is answered, and the connection closed, while the content may still be on its way:
:class:`Connection` reads that answer and raises it as :class:`ApiError`, rather than
the broken pipe its writing met.  Content over the daemon's ``max_message_size`` is read
and discarded by the daemon before it answers, so both clients read the refusal.  (An
asyncio stream drops what it read once a write failed, so :class:`AsyncConnection`
refuses content over :data:`p1.localapi.MAX_PAYLOAD` before sending it.)
Standard library only, for command-line tools (synchronous) and asyncio programs.

Public API::

    socket_path(config_file, socket) -> Path   where the daemon listens
    configuration(config_file) -> Path         --config, $AIOX400_CONFIG or DEFAULT_CONFIG
    Connection(path, *, timeout)  .call(request, payload=b"") -> (response, payload)  .close()
    call(path, request, payload=b"", *, timeout) -> (response, payload)   one request
    await AsyncConnection.open(path)  await .call(request, payload=b"")  await .close()
    await call_async(path, request, payload=b"") -> (response, payload)   one request
    ApiError            the daemon refused (its message), or could not be reached:
      ApiUnreachable    ... not running, not answering, or its socket not permitted
      ApiUsageError     ... bad arguments: no MTA named, a configuration that does not serve
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from config.loader import ConfigError, load_control_socket
from config.schema import DEFAULT_CONFIG_FILE
from p1 import localapi as framing
from p1.localapi import JsonObject

__all__ = [
    "ApiError",
    "ApiUnreachable",
    "ApiUsageError",
    "AsyncConnection",
    "Connection",
    "call",
    "call_async",
    "configuration",
    "socket_path",
]

_ASYNC_LIMIT = 1 << 24
"""Longest answer line :func:`call_async` reads (a listing of thousands of messages)."""


class ApiError(Exception):
    """The request failed; the message says why, for the user."""


class ApiUsageError(ApiError):
    """Bad arguments found once parsed: no MTA named, a configuration file that does not
    serve, a selection that names nothing."""


class ApiUnreachable(ApiError):
    """The MTA is not running, does not answer, or its socket may not be used."""


DEFAULT_CONFIG: Path = DEFAULT_CONFIG_FILE
"""The configuration read when none is named, if it exists."""


def socket_path(config_file: str | None, explicit: str | None) -> Path:
    """The control socket: the ``control_socket`` of ``--config``'s file, else
    ``--socket``, else that of ``$AIOX400_CONFIG``'s file or of :data:`DEFAULT_CONFIG`
    (:func:`configuration`).  Only the socket is read from the file
    (:func:`config.loader.load_control_socket`): not the password files it names,
    which an operator may not read."""
    if explicit and not config_file:
        return Path(explicit)
    file = configuration(config_file)
    try:
        return load_control_socket(file)
    except ConfigError as error:
        raise ApiUsageError(str(error)) from error


def configuration(config_file: str | None) -> Path:
    """The configuration file: ``config_file`` (``--config``), else ``$AIOX400_CONFIG``,
    else :data:`DEFAULT_CONFIG` when it exists; ApiUsageError saying what was tried when
    none is."""
    given = config_file or os.environ.get("AIOX400_CONFIG")
    if given:
        return Path(given)
    if DEFAULT_CONFIG.exists():
        return DEFAULT_CONFIG
    raise ApiUsageError(
        "say which MTA: --config FILE, --socket PATH or $AIOX400_CONFIG"
        f" (none given, and no {DEFAULT_CONFIG})"
    )


class Connection:
    """A connection to the daemon's local API carrying one request after another (a
    user agent submitting many messages keeps one); a context manager."""

    def __init__(self, path: Path, *, timeout: float = 60.0) -> None:
        self.path, self.timeout = path, timeout
        with _errors(path, timeout):
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self._socket.settimeout(timeout)
                self._socket.connect(str(path))
            except OSError:
                self._socket.close()
                raise
        self._stream = self._socket.makefile("rb")

    def call(self, request: JsonObject, payload: bytes = b"") -> tuple[JsonObject, bytes]:
        """Send one request and return the daemon's answer; ApiError if it refused."""
        with _errors(self.path, self.timeout):
            try:
                self._socket.sendall(framing.encode(request, payload))
            except (BrokenPipeError, ConnectionResetError) as error:
                return _answer(_answer_before_close(self._stream, error)), b""
            response, data = _read_response(self._stream)
        return _answer(response), data

    def close(self) -> None:
        self._stream.close()
        self._socket.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@contextlib.contextmanager
def _errors(path: Path, timeout: float) -> Iterator[None]:
    """OSError on the socket as ApiError, saying what the user can do about it."""
    try:
        yield
    except FileNotFoundError as error:
        raise ApiUnreachable(f"the MTA is not running (no socket {path})") from error
    except ConnectionRefusedError as error:
        raise ApiUnreachable(f"the MTA is not running (nothing listens on {path})") from error
    except PermissionError as error:
        raise ApiUnreachable(f"no permission to use {path}: ask for the MTA's group") from error
    except TimeoutError as error:
        raise ApiUnreachable(f"the MTA did not answer within {timeout:g} s") from error
    except OSError as error:
        raise ApiUnreachable(f"cannot talk to the MTA on {path}: {error}") from error


def call(
    path: Path, request: JsonObject, payload: bytes = b"", *, timeout: float = 60.0
) -> tuple[JsonObject, bytes]:
    """Send one request on a connection of its own and return the daemon's answer;
    ApiError if it refused."""
    with Connection(path, timeout=timeout) as connection:
        return connection.call(request, payload)


def _read_response(stream: BinaryIO) -> tuple[JsonObject, bytes]:
    line = stream.readline()
    if not line:
        raise ApiError("the MTA closed the connection without answering")
    response, size = _header(line)
    data = stream.read(size) if size else b""
    if len(data) != size:
        raise ApiError("the MTA's answer was cut short")
    return response, data


def _answer_before_close(stream: BinaryIO, error: OSError) -> JsonObject:
    """The answer the daemon wrote before it closed a connection we were still writing
    to (a request it refused at its header line: one announcing more content than it
    takes); ``error`` again if it left none."""
    try:
        response, _ = _read_response(stream)
    except (ApiError, OSError):
        raise error from None
    return response


def _header(line: bytes) -> tuple[JsonObject, int]:
    try:
        return framing.parse_header(line, max_payload=None, what="the MTA's answer")
    except framing.FramingError as error:
        raise ApiError(str(error)) from error


def _answer(response: JsonObject) -> JsonObject:
    """``response`` if the MTA granted the request; else ApiError with its reason."""
    if not response.get("ok"):
        raise ApiError(str(response.get("error") or "the MTA refused the request"))
    return response


class AsyncConnection:
    """:class:`Connection` for asyncio programs (load generators, tests)."""

    def __init__(self, path: Path, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.path, self._reader, self._writer = path, reader, writer

    @classmethod
    async def open(cls, path: Path) -> AsyncConnection:
        """Connect; OSError, as raised, when nothing listens on ``path``."""
        reader, writer = await asyncio.open_unix_connection(str(path), limit=_ASYNC_LIMIT)
        return cls(path, reader, writer)

    async def call(self, request: JsonObject, payload: bytes = b"") -> tuple[JsonObject, bytes]:
        """One request and its answer: ApiError when the MTA refuses; OSError when the
        connection fails."""
        if len(payload) > framing.MAX_PAYLOAD:  # (asyncio loses the daemon's answer to it)
            raise ApiError(str(framing.PayloadTooLargeError(len(payload), framing.MAX_PAYLOAD)))
        self._writer.write(framing.encode(request, payload))
        await self._writer.drain()
        line = await self._reader.readline()
        if not line:
            raise ConnectionResetError(f"{self.path}: closed without an answer")
        response, size = _header(line)
        data = await self._reader.readexactly(size) if size else b""
        return _answer(response), data

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()


async def call_async(
    path: Path, request: JsonObject, payload: bytes = b""
) -> tuple[JsonObject, bytes]:
    """:func:`call` for asyncio programs: ApiError when the MTA refuses; OSError, as
    raised, when nothing listens on ``path`` (starting, or dead)."""
    connection = await AsyncConnection.open(path)
    try:
        return await connection.call(request, payload)
    finally:
        await connection.close()
