"""The precedences of the messages this MTA took in lately, by MTS identifier.

A report's envelope carries no priority (X.411 12.2.1.3): it travels at its subject's
precedence, which the store gives inside the report's unit of work
(:func:`mta.intake.plan.plan_intake`).  To schedule that unit, before the store is asked, the
event loop looks its subject up here: a delivery report for a flash message this MTA
sent a moment ago is urgent in the database thread, as the message was.  A subject not
found (taken in long ago, or before a restart) is scheduled as routine; only the
scheduling depends on this table, never what is stored.

Public API::

    RecentPrecedences(size=10_000)
        .note(mts_identifier, precedence)      a message was taken in
        .of(mts_identifier) -> Precedence | None
        len(recent)
"""

from __future__ import annotations

import collections

from p1.mts.precedence import Precedence

__all__ = ["RecentPrecedences"]

RECENT = 10_000
"""Messages remembered (the oldest is forgotten first): some minutes of traffic."""


class RecentPrecedences:
    """A bounded table of MTS identifier -> precedence, oldest out first."""

    def __init__(self, size: int = RECENT) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, not {size}")
        self._size = size
        self._table: collections.OrderedDict[str, Precedence] = collections.OrderedDict()

    def note(self, mts_identifier: str, precedence: Precedence) -> None:
        """``mts_identifier`` was taken in at ``precedence``."""
        self._table[mts_identifier] = precedence
        self._table.move_to_end(mts_identifier)
        if len(self._table) > self._size:
            self._table.popitem(last=False)

    def of(self, mts_identifier: str) -> Precedence | None:
        """The precedence noted for ``mts_identifier``; None if not (or no longer) known."""
        return self._table.get(mts_identifier)

    def __len__(self) -> int:
        return len(self._table)
