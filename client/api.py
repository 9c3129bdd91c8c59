"""The client side of the MTA's local API (the framing is described in ``mta/control.py``).

One request per connection on the daemon's unix socket: a JSON line (plus content), then
a JSON line (plus content) back.  Synchronous and dependency-free, for command-line tools.

Public API::

    socket_path(config_file, socket) -> Path   where the daemon listens
    call(path, request, payload=b"", *, timeout) -> (response, payload)
    await call_async(path, request, payload=b"") -> (response, payload)   for asyncio programs
    ApiError            the daemon refused (its message), or could not be reached
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from pathlib import Path
from typing import Any

from config.loader import ConfigError, load_config

__all__ = ["ApiError", "call", "call_async", "socket_path"]

_ASYNC_LIMIT = 1 << 24
"""Longest answer line :func:`call_async` reads (a listing of thousands of messages)."""

JsonObject = dict[str, Any]


class ApiError(Exception):
    """The request failed; the message says why, for the user."""


def socket_path(config_file: str | None, explicit: str | None) -> Path:
    """The control socket: ``--socket``, else the configuration's ``control_socket``
    (``--config`` or ``$AIOX400_CONFIG``)."""
    if explicit:
        return Path(explicit)
    config_file = config_file or os.environ.get("AIOX400_CONFIG")
    if not config_file:
        raise ApiError("say which MTA: --config FILE, --socket PATH or $AIOX400_CONFIG")
    try:
        return load_config(config_file).control_socket
    except ConfigError as error:
        raise ApiError(str(error)) from error
    except OSError as error:
        raise ApiError(f"cannot read {config_file}: {error.strerror}") from error


def call(
    path: Path, request: JsonObject, payload: bytes = b"", *, timeout: float = 60.0
) -> tuple[JsonObject, bytes]:
    """Send one request and return the daemon's answer; ApiError if it refused."""
    if payload:
        request = {**request, "content_length": len(payload)}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(str(path))
            sock.sendall(json.dumps(request).encode() + b"\n" + payload)
            with sock.makefile("rb") as stream:
                response, data = _read_response(stream)
    except FileNotFoundError as error:
        raise ApiError(f"the MTA is not running (no socket {path})") from error
    except ConnectionRefusedError as error:
        raise ApiError(f"the MTA is not running (nothing listens on {path})") from error
    except PermissionError as error:
        raise ApiError(f"no permission to use {path}: ask for the MTA's group") from error
    except TimeoutError as error:
        raise ApiError(f"the MTA did not answer within {timeout:g} s") from error
    except OSError as error:
        raise ApiError(f"cannot talk to the MTA on {path}: {error}") from error
    if not response.get("ok"):
        raise ApiError(str(response.get("error", "the MTA refused the request")))
    return response, data


def _read_response(stream: Any) -> tuple[JsonObject, bytes]:
    line = stream.readline()
    if not line:
        raise ApiError("the MTA closed the connection without answering")
    try:
        response = json.loads(line)
    except json.JSONDecodeError as error:
        raise ApiError(f"the MTA's answer is not JSON: {error}") from error
    if not isinstance(response, dict):
        raise ApiError("the MTA's answer is not a JSON object")
    size = response.get("content_length", 0)
    data: bytes = stream.read(size) if size else b""
    if len(data) != size:
        raise ApiError("the MTA's answer was cut short")
    return response, data


async def call_async(
    path: Path, request: JsonObject, payload: bytes = b""
) -> tuple[JsonObject, bytes]:
    """:func:`call` for asyncio programs (load generators, tests): ApiError when the MTA
    refuses; OSError, as raised, when nothing listens on ``path`` (starting, or dead)."""
    if payload:
        request = {**request, "content_length": len(payload)}
    reader, writer = await asyncio.open_unix_connection(str(path), limit=_ASYNC_LIMIT)
    try:
        writer.write(json.dumps(request).encode() + b"\n" + payload)
        await writer.drain()
        line = await reader.readline()
        if not line:
            raise ConnectionResetError(f"{path}: closed without an answer")
        response = json.loads(line)
        size = response.get("content_length", 0) if isinstance(response, dict) else 0
        data = await reader.readexactly(size) if size else b""
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    if not isinstance(response, dict) or not response.get("ok"):
        error = response.get("error") if isinstance(response, dict) else response
        raise ApiError(str(error or "the MTA refused the request"))
    return response, data
