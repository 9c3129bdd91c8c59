"""Faults of what the store stands on, and conditions logged once, not per event.

Such a fault is not a bug of ours and says nothing about the message at hand: a transfer
the store cannot take is refused before it is confirmed, so the peer keeps the message
and tries again later (X.411 clause 12.2.1.1: responsibility passes only with the
confirmation); a long-lived part that meets one waits and starts again.  Neither needs a
traceback, and a condition that lasts minutes must not write a line per transfer:
:class:`StoreCondition` logs when the store stops taking work and when it takes work
again, with what was refused meanwhile.  :class:`LogLimiter` does the same for any
condition a peer or a user can repeat at will (a refused bind, a malformed request): one
line per condition per interval, the next one counting what was left out.

Public API::

    store_fault(error) -> str | None        why, when ``error`` is such a fault
    StoreCondition(clock=time.monotonic)
        .failed(reason, refused=True)   .succeeded()   .down -> str | None   .refused
    LogLimiter(*, interval=60.0, clock=time.monotonic, conditions=1024)
        .log(logger, level, key, message, *args, exc_info=False) -> bool   .warning(...)
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sqlalchemy import exc as sa_exc

__all__ = ["StoreCondition", "store_fault"]

log = logging.getLogger("aiox400.store")

_ENVIRONMENT = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EMFILE, errno.ENFILE, errno.ENOMEM}
)
"""System errors that say the machine, not the message, is the problem."""


def store_fault(error: BaseException) -> str | None:
    """Why the store cannot take work now, when ``error`` (or what caused it) is a fault
    of the disk or of the database server; None for anything else (a bug of ours)."""
    for cause in _chain(error):
        if isinstance(cause, OSError) and cause.errno in _ENVIRONMENT:
            return os.strerror(cause.errno).lower()
        if isinstance(cause, sa_exc.OperationalError | sa_exc.InterfaceError):
            return _first_line(cause.orig) if cause.orig is not None else _first_line(cause)
        if isinstance(cause, sa_exc.DisconnectionError | sqlite3.OperationalError):
            return _first_line(cause)
    return None


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and its causes, outermost first (at most a few: chains are short)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


class StoreCondition:
    """Whether the store takes work, logged once per change of condition."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._since = 0.0
        self.down: str | None = None
        """Why the store does not take work now; None while it does."""
        self.refused = 0
        """Transfers and submissions refused since the store stopped taking work."""

    def failed(self, reason: str, *, refused: bool = True) -> None:
        """Work failed because of ``reason`` (from :func:`store_fault`); ``refused``: it
        was a transfer or a submission, refused (not a part of the daemon's own)."""
        if self.down is None:
            self._since = self._clock()
            self.refused = 0
            log.error(
                "the store cannot take work: %s; transfers are refused unconfirmed "
                "(peers keep them and retry) until it can",
                reason,
            )
        elif reason != self.down:
            log.error("the store still cannot take work, now: %s", reason)
        self.down = reason
        self.refused += refused

    def succeeded(self) -> None:
        """Work was committed: if the store was down, it is back."""
        if self.down is None:
            return
        log.warning(
            "the store takes work again after %.0f s; %d transfer(s) or submission(s) "
            "were refused meanwhile",
            self._clock() - self._since,
            self.refused,
        )
        self.down = None


Clock = Callable[[], float]

LOG_INTERVAL = 60.0
"""Seconds between two lines about one condition (the lines between are counted)."""
LOG_CONDITIONS = 1024
"""Conditions a :class:`LogLimiter` remembers; the least recently logged goes first."""


@dataclass(slots=True)
class _Quiet:
    until: float
    left_out: int = 0


class LogLimiter:
    """At most one log line per condition (a key) per ``interval`` seconds; the next line
    of that condition says how many were left out."""

    def __init__(
        self,
        *,
        interval: float = LOG_INTERVAL,
        clock: Clock = time.monotonic,
        conditions: int = LOG_CONDITIONS,
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._conditions = conditions
        self._quiet: dict[str, _Quiet] = {}

    def log(
        self,
        logger: logging.Logger,
        level: int,
        key: str,
        message: str,
        *args: object,
        exc_info: bool = False,
    ) -> bool:
        """``logger.log(level, message, *args, exc_info=exc_info)`` unless ``key`` was
        logged within the interval; whether the line was written."""
        if not logger.isEnabledFor(level):
            return False
        now = self._clock()
        quiet = self._quiet.pop(key, None)
        if quiet is not None and now < quiet.until:
            quiet.left_out += 1
            self._quiet[key] = quiet
            return False
        self._quiet[key] = _Quiet(now + self.interval)
        if len(self._quiet) > self._conditions:
            del self._quiet[next(iter(self._quiet))]
        if quiet is not None and quiet.left_out:
            message += " (%d more suppressed)"
            args = (*args, quiet.left_out)
        logger.log(level, message, *args, exc_info=exc_info or None)
        return True

    def warning(self, logger: logging.Logger, key: str, message: str, *args: object) -> bool:
        """:meth:`log` at WARNING."""
        return self.log(logger, logging.WARNING, key, message, *args)
