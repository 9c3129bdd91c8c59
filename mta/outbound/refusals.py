"""How many times in a row a peer has refused a message, kept in its recipients' last error.

A peer that aborts a transfer after the whole APDU was sent, with an RTSE abortReason that
refuses (X.228 RTAB user-error, say: :class:`mta.link.RefusedByPeerError`), will most
likely refuse the same APDU again: retrying it until it expires only fills the peer's log
and delays the originator's report.  The refusal is recorded as the recipients' last error
(shown by ``x400ctl queue``), numbered: ``refused 2 times in a row: <why>``.  The next
refusal of the same kind (the same ``why``) counts on from it; any other failure (a lost
connection, a temporary refusal, a timeout) writes another error and so starts the count
again, and a stop of this MTA writes none, so it neither counts nor resets.  At
``[retry] max_refusals`` the recipients are non-delivered: unable-to-transfer,
protocol-violation (X.411 8.3.1.2.1.9-10; the peer's parser refused what it got).

Public API::

    refusal_error(why, count) -> str        the last error of a refusal numbered ``count``
    refusals_so_far(entry, why) -> int      refusals of this kind in a row, before this one
    REFUSED                                  the non-delivery report
"""

from __future__ import annotations

import re

from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason, NonDeliveryReport
from store import QueueEntry

__all__ = ["REFUSED", "refusal_error", "refusals_so_far"]

_NUMBERED = re.compile(r"refused ([0-9]{1,9}) times? in a row: (.*)", re.DOTALL)

REFUSED = NonDeliveryReport(
    reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
    diagnostic_code=NonDeliveryDiagnostic.PROTOCOL_VIOLATION,
)
"""What the originator is told of a message its next hop refused every time."""


def refusal_error(why: str, count: int) -> str:
    """The last error of the ``count``-th refusal in a row, for ``why``."""
    return f"refused {count} {'time' if count == 1 else 'times'} in a row: {why}"


def refusals_so_far(entry: QueueEntry, why: str) -> int:
    """How many times in a row ``entry``'s recipients were refused for ``why`` before this
    refusal (the most any of them was: they travel together); 0 when their last error
    was something else."""
    counts = [0]
    for recipient in entry.recipients:
        found = _NUMBERED.fullmatch(recipient.last_error or "")
        if found is not None and found.group(2) == why:
            counts.append(int(found.group(1)))
    return max(counts)
