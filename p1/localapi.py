"""The local API's framing, sans-I/O: what the daemon and both clients write and read.

A message on the control socket, in either direction, is one line of JSON (a UTF-8 object)
and, when the object has ``"content_length": N``, exactly N octets after the newline (a
submitted or a read MTS-APDU).  The operations are listed in :mod:`mta.operator.control`; this
module only delimits them, so :mod:`mta.operator.control` (asyncio, server side) and
:mod:`client.api` (a blocking socket, or asyncio) share one reading of the bytes.

Public API::

    encode(header, payload=b"") -> bytes      header line (+ content_length) and payload
    parse_header(line, *, max_payload, what) -> (header, content octets that follow)
    FramingError                              the line cannot be read as a header
    PayloadTooLargeError(FramingError)        ... it announces more content than allowed
    MAX_LINE, MAX_PAYLOAD                     the most a request's line and content may be
    INTEGER_RANGE                             the integers a header may hold

A header is JSON as RFC 8259 defines it: ``NaN`` and ``Infinity`` are refused, and so are
a number too large for a float and an integer outside :data:`INTEGER_RANGE` (a signed
64-bit integer, what the store's columns hold), before it is converted: the digits of a
longer one are never read as a number.
"""

from __future__ import annotations

import json
import math
from typing import Any, NoReturn

__all__ = [
    "INTEGER_RANGE",
    "MAX_LINE",
    "MAX_PAYLOAD",
    "FramingError",
    "JsonObject",
    "PayloadTooLargeError",
    "encode",
    "parse_header",
]

MAX_LINE = 64 * 1024
"""Longest request line the daemon reads."""
MAX_PAYLOAD = 1024 * 1024 * 1024
"""Most content a request may announce.  The daemon takes at most its
``max_message_size``: content over that (up to this) is read, discarded and refused, so
the client reads the answer; a request announcing more is refused and its connection
closed."""

INTEGER_RANGE = range(-(2**63), 2**63)
"""The integers a header may hold: a signed 64-bit integer."""
_INTEGER_DIGITS = len(str(2**63))
"""Digits of the longest integer in :data:`INTEGER_RANGE`."""
_SHOWN = 24
"""Characters of a refused number shown in the refusal."""

JsonObject = dict[str, Any]

CONTENT_LENGTH = "content_length"


class FramingError(ValueError):
    """A header line that is not a JSON object with a valid ``content_length``: what
    follows it on the connection cannot be delimited."""


class PayloadTooLargeError(FramingError):
    """A header announcing more content than the reader takes.  Up to
    :data:`MAX_PAYLOAD` the daemon reads the content, discards it and answers, keeping the
    connection; over it, the daemon answers before it closes the connection, and a
    client that was still writing the content reads that answer (:mod:`client.api`)."""

    def __init__(self, size: int, limit: int) -> None:
        self.size, self.limit = size, limit
        super().__init__(
            f"message refused: message is {size} octets; this MTA accepts at most {limit} "
            "(max_message_size)"
        )


def encode(header: JsonObject, payload: bytes = b"") -> bytes:
    """``header`` as one JSON line, with ``content_length`` when there is a payload, then
    the payload."""
    if payload:
        header = {**header, CONTENT_LENGTH: len(payload)}
    return json.dumps(header).encode() + b"\n" + payload


def parse_header(
    line: bytes, *, max_payload: int | None, what: str = "request"
) -> tuple[JsonObject, int]:
    """The JSON object of ``line`` and how many content octets follow it (at most
    ``max_payload``; None: any number).  FramingError, its message naming ``what``, when
    the line is not one; PayloadTooLargeError when it announces more than
    ``max_payload``."""
    try:
        header = json.loads(line, parse_int=_integer, parse_float=_real, parse_constant=_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FramingError(f"{what} is not JSON: {error}") from error
    except RecursionError as error:
        raise FramingError(f"{what} is nested too deeply") from error
    except _NumberError as error:
        raise FramingError(f"{what} holds {error}") from error
    if not isinstance(header, dict):
        raise FramingError(f"{what} is not a JSON object")
    size = header.get(CONTENT_LENGTH, 0)
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        upper = "" if max_payload is None else str(max_payload)
        raise FramingError(f"{CONTENT_LENGTH} must be 0..{upper}, an integer")
    if max_payload is not None and size > max_payload:
        raise PayloadTooLargeError(size, max_payload)
    return header, size


class _NumberError(ValueError):
    """A number the header may not hold (raised from the JSON reader's hooks)."""


def _integer(text: str) -> int:
    """An integer of the header, read only when it can be in :data:`INTEGER_RANGE`."""
    digits = text.lstrip("-")
    if len(digits) <= _INTEGER_DIGITS:
        value = int(text)
        if value in INTEGER_RANGE:
            return value
    shown = text if len(text) <= _SHOWN else f"{text[:_SHOWN]}... ({len(digits)} digits)"
    raise _NumberError(
        f"the integer {shown}, outside {INTEGER_RANGE.start}..{INTEGER_RANGE.stop - 1}"
    )


def _real(text: str) -> float:
    """A number with a fraction or exponent, refused when it overflows to infinity."""
    value = float(text)
    if math.isinf(value):
        shown = text if len(text) <= _SHOWN else f"{text[:_SHOWN]}..."
        raise _NumberError(f"the number {shown}, too large")
    return value


def _constant(text: str) -> NoReturn:
    """``NaN``, ``Infinity``, ``-Infinity``: not JSON (RFC 8259 clause 6)."""
    raise _NumberError(f"{text}, which is not a JSON number")
