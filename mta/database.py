"""The daemon's database thread: store work runs off the event loop, one unit at a time.

The store's API is synchronous (SQLAlchemy sessions).  The daemon runs every unit of
work in one dedicated thread, so the event loop never waits on a disk flush and units
never contend for SQLite's single writer.  A unit's result is only seen by the caller
after its transaction committed.

Public API::

    Database(engine)
        await .run(function, *args) -> result
        .close()
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from sqlalchemy import Engine

__all__ = ["Database"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


class Database:
    """Runs synchronous store work in one worker thread."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="aiox400-db"
        )

    async def run(self, function: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """``function(*args, **kwargs)`` in the database thread; its result or exception.

        A caller cancelled while the unit runs does not stop it: the unit completes (and
        commits) in its thread, so work is never left half done.
        """
        loop = asyncio.get_running_loop()
        call = functools.partial(function, *args, **kwargs)
        return await loop.run_in_executor(self._executor, call)

    def close(self) -> None:
        """Wait for the unit in progress, then release the thread and the engine."""
        self._executor.shutdown(wait=True)
        self.engine.dispose()
