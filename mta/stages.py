"""Timestamps of the stages a message passes in the daemon, for the relay's profile.

Off unless the environment variable ``AIOX400_STAGES`` is set when the daemon starts: it
names a file prefix, and the daemon then keeps, for every :func:`mark`, the stage's name
and the time (``time.monotonic_ns``: the system's monotonic clock, the same in every
process of the machine, so that the marks of two daemons and of the client that drives
them fall on one time line).  They are written, one ``nanoseconds stage`` line each, to
``PREFIX.PID`` when the process exits.  ``benchmarks/stages.py`` reads them back.

Off, a mark costs one call and one test of a module global; nothing is kept.  The marks
carry no message's key: the profile sends one urgent message at a time and groups the
marks by time.  A mark made for urgent work (above routine: a flash message crossing a
routine backlog) is kept as ``stage!``: the caller says so, or the task it runs in was
said to do urgent work (:func:`urgent_here`: a slot that carries flash, the connection
a flash transfer came on), so that the profile can tell the flash message's stages from
the routine traffic's.

Public API::

    mark(stage, urgent=None, *, at=None)
                               note that ``stage`` was reached now, or at ``at`` (a
                               clock() taken earlier), when enabled; urgent None: as
                               the current task was said to be
    clock() -> int             the marks' clock now (0 when disabled)
    urgent_here(urgent=True)   the current task (and those it starts) does urgent work
                               (or, False, routine work) from now on
    enabled() -> bool          whether marks are kept in this process
"""

from __future__ import annotations

import atexit
import contextvars
import os
import time

__all__ = ["enabled", "mark", "urgent_here"]

VARIABLE = "AIOX400_STAGES"

_marks: list[tuple[int, str]] | None = None

_urgent: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "aiox400_stages_urgent", default=False
)
"""Whether the current task does urgent work (:func:`urgent_here`)."""


def enabled() -> bool:
    """Whether this process keeps its marks (``AIOX400_STAGES`` was set at import)."""
    return _marks is not None


def mark(stage: str, urgent: bool | None = None, *, at: int | None = None) -> None:
    """Note that ``stage`` was reached now, or at ``at`` (:func:`clock`, for a stage whose
    work is known to be urgent only later); for urgent work (``urgent``, or when None
    the current task's :func:`urgent_here`) as ``stage!``."""
    if _marks is not None:
        if urgent if urgent is not None else _urgent.get():
            stage += "!"
        _marks.append((time.monotonic_ns() if at is None else at, stage))


def clock() -> int:
    """The marks' clock (nanoseconds), or 0 when no mark is kept."""
    return time.monotonic_ns() if _marks is not None else 0


def urgent_here(urgent: bool = True) -> None:
    """Have the marks of the current task, and of the tasks it starts from now on, kept
    as urgent work or (``urgent`` False) as routine work, when enabled."""
    if _marks is not None:
        _urgent.set(urgent)


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
