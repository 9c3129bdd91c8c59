"""A transfer longer than this MTA takes: non-delivered with content-too-long, not refused.

A receiving MTA that aborts an association because a transfer is over its
``[limits] max_message_size`` gains nothing: the sender keeps the message and tries
again until it expires, and its originator learns nothing for a day.  X.411 has the
answer every sending MTA understands: take responsibility for the message and
non-deliver it, reason unable-to-transfer, diagnostic content-too-long (X.411
8.3.1.2.1.9, 8.3.1.2.1.10), reported to its originator like any non-delivery.

So the association reads such a transfer to its end keeping only its first
``max_message_size`` octets (:class:`p1.association.events.TransferTooLong`); since a
message's envelope comes before its content (X.411 12.2.1.1), those octets say whom to
report on.  The transfer is confirmed once the report is committed
(:meth:`mta.intake.units.IntakeUnits.too_long_in`).  What cannot be reported on so, a report or a
probe over the limit (a report is never reported on; neither is long enough to
matter) or a message whose envelope the kept octets do not hold, is refused as before:
the association is aborted, with one WARNING line naming the size, the limit and the
peer.

Pure: no I/O.

Public API::

    envelope_of(event) -> MessageEnvelope     raises mta.transport.Refused
    too_long_line(envelope, event, peer, report) -> str    the WARNING line
"""

from __future__ import annotations

from mta.transport import Refused
from p1.association.events import TransferTooLong
from p1.errors import DecodeError
from p1.mts.envelope import MessageEnvelope, envelope_from_prefix

__all__ = ["envelope_of", "too_long_line"]


def envelope_of(event: TransferTooLong) -> MessageEnvelope:
    """The envelope of the message ``event`` kept the first octets of; else
    :class:`mta.transport.Refused`, saying why it cannot be reported on."""
    over = f"transfer of {event.size} octets is over max_message_size {event.limit}"
    if event.prefix is None:
        raise Refused(f"{over}, and the EXTERNAL around its MTS-APDU is unreadable")
    try:
        return envelope_from_prefix(event.prefix)
    except DecodeError as error:
        why = f"{over}, and no message envelope is read from it: {error}"
        raise Refused(why) from error


def too_long_line(envelope: MessageEnvelope, event: TransferTooLong, peer: str, report: str) -> str:
    """What the operator reads when a message from ``peer`` was non-delivered for its
    size (``report``: what became of the report on it)."""
    return (
        f"message {envelope.mts_identifier.text} from {peer} is {event.size} octets, over "
        f"max_message_size {event.limit}: non-delivered (content-too-long); {report}"
    )
