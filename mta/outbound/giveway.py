"""Routine transfers give way to flash work for the same peer.

STANAG 4406 Annex A ranks flash and override above every other precedence.  A slot that
carries nothing above routine may hold several connections, each taking its share of a
backlog; their transfers share the daemon's event loop and database thread (and the
peer's) with the one flash message that arrives meanwhile.  So a routine connection, before
it starts its next transfer, waits while flash work for its peer is under way: a flash or
override submission routed to that peer being taken in, or a transfer of such a message to
it.  It waits :data:`HOLD` at most, so that routine traffic is slowed, never stopped, by a
stream of flash work.  A transfer already started is never held: only the gap between two.

The scope is the peer: flash work over a slow link to one peer does not hold routine
traffic to the others.

Public API::

    HOLD                                   the longest a routine transfer waits
    GiveWay(hold=HOLD)
        .during(precedence, peers) -> context   work at precedence for peers is under
                                                way while it runs (counted if flash)
        await .wait(peer)     until no flash work is under way for peer, or hold passed
        .under_way(peer) -> bool
    is_flash(precedence) -> bool           work that routine transfers give way to
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Iterable, Iterator
from typing import Final

from p1.mts.precedence import Precedence

__all__ = ["HOLD", "GiveWay", "is_flash"]

HOLD: Final = 0.05
"""Seconds a routine transfer waits at most for flash work to its peer to end."""


def is_flash(precedence: Precedence) -> bool:
    """Whether work at ``precedence`` holds routine transfers back: flash and override."""
    return precedence >= Precedence.FLASH


class GiveWay:
    """Flash work under way, counted by peer (module docstring)."""

    def __init__(self, hold: float = HOLD) -> None:
        self.hold = hold
        """Seconds a routine transfer waits at most."""
        self._counts: collections.Counter[str] = collections.Counter()
        self._ended: dict[str, asyncio.Event] = {}

    def under_way(self, peer: str) -> bool:
        """Whether flash work for ``peer`` is under way."""
        return self._counts[peer] > 0

    @contextlib.contextmanager
    def during(self, precedence: Precedence, peers: Iterable[str]) -> Iterator[None]:
        """Work at ``precedence`` for each of ``peers`` is under way while the block runs:
        counted if it is flash work (:func:`is_flash`)."""
        named = tuple(dict.fromkeys(peers)) if is_flash(precedence) else ()
        for peer in named:
            self._counts[peer] += 1
        try:
            yield
        finally:
            for peer in named:
                self._counts[peer] -= 1
                if self._counts[peer] <= 0:
                    del self._counts[peer]
                    ended = self._ended.pop(peer, None)
                    if ended is not None:
                        ended.set()

    async def wait(self, peer: str) -> None:
        """Return once no flash work for ``peer`` is under way, or :attr:`hold` seconds
        on."""
        if not self.under_way(peer):
            return
        ended = self._ended.setdefault(peer, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.hold):
                await ended.wait()
