"""What the daemon says of values a peer sent outside the standard's form.

Other products write some fields in forms X.411 and X.420 do not allow: PP 6.0 a UTCTime
with a three-digit year and ``ExtensionField.type`` as an explicit CHOICE, many products
a UTCTime without its zone.  Where the MTA does not route on the field, the decoders read
it as best they can and list a :class:`p1.ber.Deviation`; the message is taken, and
relayed or stored as received (its octets are never rewritten).  This module logs each
one at WARNING with the peer, the message and the field, at most once an hour for the
same peer and field (a product writes every message the same way), the next line saying
how many were left out.

Public API::

    ToleranceLog(interval=3600.0).received(peer, identifier, deviations)
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable

from mta.faults import Clock, LogLimiter
from p1.ber import Deviation

log = logging.getLogger("aiox400.tolerance")

_INDEX = re.compile(r"\[\d+\]")


class ToleranceLog:
    """One WARNING per peer and field per ``interval`` seconds for tolerated values."""

    def __init__(self, *, interval: float = 3600.0, clock: Clock = time.monotonic) -> None:
        self._lines = LogLimiter(interval=interval, clock=clock)

    def received(self, peer: str, identifier: str, deviations: Iterable[Deviation]) -> None:
        """Log what ``peer`` sent in the APDU ``identifier`` outside the standard's form."""
        for deviation in deviations:
            # The same field of any element is one condition: trace-information[1] and [2].
            key = f"{peer} {_INDEX.sub('[]', deviation.field)}"
            self._lines.warning(
                log,
                key,
                "%s: %s: tolerated %s = %s, read as %s; kept as received",
                peer,
                identifier,
                deviation.field,
                deviation.found,
                deviation.read_as,
            )
