"""Timestamps of the stages a message passes in the daemon, for the relay's profile.

Off unless the environment variable ``AIOX400_STAGES`` is set when the daemon starts: it
names a file prefix, and the daemon then keeps, for every :func:`mark`, the stage's name
and the time (``time.monotonic_ns``: the system's monotonic clock, the same in every
process of the machine, so that the marks of two daemons and of the client that drives
them fall on one time line).  They are written, one ``nanoseconds stage`` line each, to
``PREFIX.PID`` when the process exits.  ``benchmarks/stages.py`` reads them back.

Off, a mark costs one call and one test of a module global; nothing is kept.  The marks
carry no key: the profile sends one message at a time and groups the marks by time.

Public API::

    mark(stage)          note that ``stage`` was reached now (when enabled)
    enabled() -> bool    whether marks are kept in this process
"""

from __future__ import annotations

import atexit
import os
import time

__all__ = ["enabled", "mark"]

VARIABLE = "AIOX400_STAGES"

_marks: list[tuple[int, str]] | None = None


def enabled() -> bool:
    """Whether this process keeps its marks (``AIOX400_STAGES`` was set at import)."""
    return _marks is not None


def mark(stage: str) -> None:
    """Note that ``stage`` was reached now."""
    if _marks is not None:
        _marks.append((time.monotonic_ns(), stage))


def _write(prefix: str) -> None:
    assert _marks is not None
    lines = "".join(f"{at} {stage}\n" for at, stage in _marks)
    with open(f"{prefix}.{os.getpid()}", "w", encoding="ascii") as out:
        out.write(lines)


def _start() -> None:
    global _marks
    prefix = os.environ.get(VARIABLE)
    if prefix:
        _marks = []
        atexit.register(_write, prefix)


_start()
