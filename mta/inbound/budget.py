"""The memory bound peers may fill together: octets of inbound PDUs not yet taken in.

A bound peer may send a PDU of up to ``max_message_size`` octets, and the stack holds
every octet of it until the PDU is complete (X.224 clause 8: class 0 reassembles a TSDU before
the session sees any of it); ``max_connections_per_address`` peers at once may each do so.
The :class:`InboundBudget` is the bound on all of them together (``[limits]
max_inbound_buffer``): each association's :class:`Share` takes the octets it reads from
the budget, and gives them all back when the PDU they made was answered (a transfer stored
and confirmed) or the association ended.  A share holds no more than the most one
association can keep of a PDU (``max_tsdu_size + max_message_size``: a TSDU being
reassembled and the transfer it adds to), so a transfer longer than ``max_message_size``,
of which only the first octets are kept, is read to its end.

When the budget is spent, the association whose read would go past it is aborted with
the RTSE reason temporary-problem (X.228 RTAB: the peer keeps what it had not had
confirmed and tries again later), and one line a minute says so.  The other way, to stop
reading that association until the budget frees, is not taken: every association
holding a part of a PDU would wait for the others to complete theirs, none could, and
the pace (``min_progress``) would end them all with a reason that does not say why.
Aborting one frees its share at once, so the others complete.

Public API::

    InboundBudget(octets)  .share(most) -> Share  .resize(octets)  .used  .octets
    Share  .take(octets) -> bool  .give_back()  .held
"""

from __future__ import annotations

__all__ = ["InboundBudget", "Share"]


class InboundBudget:
    """Octets of inbound PDUs that all associations together may hold."""

    def __init__(self, octets: int) -> None:
        self.octets = octets
        """The bound (``max_inbound_buffer``)."""
        self.used = 0
        """Octets the shares hold."""

    def share(self, most: int) -> Share:
        """A share for one association that keeps at most ``most`` octets of a PDU."""
        return Share(self, most)

    def resize(self, octets: int) -> None:
        """Bound further takes by ``octets`` (a reload); what is held stays held."""
        self.octets = octets


class Share:
    """What one association holds of an :class:`InboundBudget`."""

    def __init__(self, budget: InboundBudget, most: int) -> None:
        self._budget = budget
        self._most = most
        self.held = 0
        """Octets this share holds."""

    def take(self, octets: int) -> bool:
        """Hold ``octets`` more (no more than the share's most); False, nothing taken,
        when the budget cannot spare them."""
        budget = self._budget
        octets = max(0, min(octets, self._most - self.held))
        if budget.used + octets > budget.octets:
            return False
        budget.used += octets
        self.held += octets
        return True

    def give_back(self) -> None:
        """Give back all that is held (the PDU was answered, or the association ended)."""
        self._budget.used -= self.held
        self.held = 0
