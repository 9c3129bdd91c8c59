"""Users waiting for their next delivery: the local API's ``wait`` (``x400 inbox --follow``).

A local delivery is committed first; only then does the service tell the watch
(:meth:`mta.intake.intake.Intake.delivered`), so that a user agent woken here finds its new
entries in the message store.  A waiter registers before it reads the store, so a
delivery committed between its read and its wait still wakes it.

Public API::

    MailboxWatch()
        with .watching(user) as stored: await stored -> datetime   (the next commit for
                                                                   the user; WatchClosedError)
        .stored(users, at)      a delivery to ``users`` was committed (seen at ``at``)
        .close()                the daemon stops: every waiter gets WatchClosedError
        .waiting -> int         waiters now
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Iterator
from datetime import datetime

__all__ = ["MailboxWatch", "WatchClosedError"]


class WatchClosedError(Exception):
    """The daemon stops: nothing more will be delivered to wait for."""


class MailboxWatch:
    """The futures of the users waiting for a delivery, by user (canonical O/R text).

    Event-loop only: not thread-safe.
    """

    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Future[datetime]]] = {}
        self._closed = False

    @property
    def waiting(self) -> int:
        """How many waiters are registered."""
        return sum(len(futures) for futures in self._waiting.values())

    @contextlib.contextmanager
    def watching(self, user: str) -> Iterator[asyncio.Future[datetime]]:
        """A future set to the time of the next delivery committed for ``user``; it is
        forgotten when the block ends, whatever happened to it."""
        future: asyncio.Future[datetime] = asyncio.get_running_loop().create_future()
        if self._closed:
            future.set_exception(WatchClosedError())
        else:
            self._waiting.setdefault(user, set()).add(future)
        try:
            yield future
        finally:
            futures = self._waiting.get(user)
            if futures is not None:
                futures.discard(future)
                if not futures:
                    del self._waiting[user]
            if future.done() and not future.cancelled():
                future.exception()  # (retrieved: an unread one would be logged at exit)

    def stored(self, users: Iterable[str], at: datetime) -> None:
        """Deliveries to ``users`` were committed: wake their waiters with ``at``."""
        for user in users:
            for future in self._waiting.pop(user, ()):
                if not future.done():
                    future.set_result(at)

    def close(self) -> None:
        """No more deliveries: every waiter, now and later, gets WatchClosedError."""
        self._closed = True
        waiting, self._waiting = self._waiting, {}
        for futures in waiting.values():
            for future in futures:
                if not future.done():
                    future.set_exception(WatchClosedError())
