"""A responder that cannot store a transfer for now aborts with RTAB temporary-problem
(X.228 AbortReason), so the sender keeps the message and tries again later."""

from __future__ import annotations

from p1.association.connection import Aborted, TransferReceived
from p1.osi.rtse import AbortReason
from tests.p1.association.pair import apdu, feed, open_pair, user_abort_rtab


def test_a_temporary_abort_during_a_transfer_carries_temporary_problem() -> None:
    pair = open_pair(checkpoint_size=1, window_size=1)
    pair.initiator.send_transfer(apdu(3000))
    pumped = pair.pump()
    assert any(isinstance(event, TransferReceived) for event in pumped.responder)
    events = pair.responder.abort("cannot store: disk full", temporary=True)
    assert events == [Aborted(by_peer=False, why="cannot store: disk full")]
    wire = pair.responder.data_to_send()
    assert user_abort_rtab(wire).abort_reason == AbortReason.TEMPORARY_PROBLEM
    (aborted,) = feed(pair.initiator, wire)
    assert isinstance(aborted, Aborted) and aborted.by_peer
    assert pair.initiator.closed and pair.responder.closed
