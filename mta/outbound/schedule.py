"""The queue manager's decisions as pure functions of state and an injected clock.

Postfix's queue manager is the model (style guide, section 6): what to send next, how many
connections a slot should hold open, when a failed attempt is retried and when a recipient
expires are decided here without sockets or a database, so they are tested with plain
values.  The asyncio code in :mod:`mta` applies them.

Rules:

1. Within a peer, the next message for a slot is the most urgent precedence the slot
   admits, then the oldest (the store orders its claims so).
2. A permanent slot holds one connection open at all times; an on-demand slot opens one
   only while messages wait for it and closes it after ``idle_timeout`` without traffic.
3. A second (third, ...) connection in a slot opens only when the slot's backlog reaches
   ``backlog_threshold`` per open connection, never merely because a message waits, and
   never beyond ``max_connections``.  Extra connections close after ``idle_timeout``.
4. A connection claims several messages at once (its window, sent one after another and
   marked transferred with its next claim) only on a slot that carries nothing more
   urgent than routine, so that an urgent message never waits behind messages claimed
   before it arrived, and only as many as its share of the slot's backlog, so that the
   slot's connections share the work.
5. Temporary failures retry after ``RetryPolicy.delay``: growing, capped, jittered.
6. A recipient expires at its envelope's latest-delivery-time, or at arrival plus the
   maximum age configured for its precedence, whichever comes first.

Public API::

    connections_wanted(slot, backlog) -> int
    should_close(slot, index, idle_for, backlog) -> bool
    transfer_window(slot, backlog) -> int
"""

from __future__ import annotations

from config.schema import Slot, SlotMode
from mta.database import is_urgent


def connections_wanted(slot: Slot, backlog: int) -> int:
    """How many connections ``slot`` should have open with ``backlog`` messages waiting.

    ``backlog`` counts the messages waiting for the slot: due in the queue, or claimed
    into a connection's window behind the transfer in progress.
    """
    if backlog <= 0:
        return 1 if slot.mode is SlotMode.PERMANENT else 0
    return min(slot.max_connections, 1 + backlog // slot.backlog_threshold)


def should_close(slot: Slot, index: int, idle_for: float, backlog: int) -> bool:
    """Whether connection number ``index`` (0 = the first) of ``slot`` should close now.

    A connection closes once it has been idle for ``idle_timeout`` and the slot no longer
    wants it: the first connection of a permanent slot never closes for idleness.
    """
    if idle_for < slot.idle_timeout:
        return False
    return index >= connections_wanted(slot, backlog)


MAX_WINDOW = 16
"""Most messages one connection claims at once: enough to spread the cost of a claim
(one transaction) over many transfers, few enough that a connection that fails puts
back little."""

MAX_WINDOW_OCTETS = 8 * 1024 * 1024
"""Most octets of APDUs a window holds beyond its first message: a connection holds its
window (and, on routine slots, the next one) in memory, and sixteen 10 MB messages
would be 160 MB per connection."""


def transfer_window(slot: Slot, backlog: int) -> int:
    """How many messages a connection of ``slot`` claims at once with ``backlog`` waiting.

    One on a slot that admits anything above routine; else the connection's share of
    the backlog, between 1 and :data:`MAX_WINDOW`.
    """
    if any(is_urgent(p) for p in slot.precedences):
        return 1
    share = backlog // max(1, connections_wanted(slot, backlog))
    return max(1, min(MAX_WINDOW, share))
