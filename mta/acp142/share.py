"""The recipients one MTA takes on of a message multicast to several (STANAG 4406 Annex E).

A message sent once to a multicast group names several receiving MTAs in its
Address_PDU, and each of them gets the same envelope, the responsibility bit (X.411
12.2.1.1.1.3) set for every recipient any of them is to take on.  Each receiving MTA
takes on the recipients it would not itself hand to another of those MTAs (or back to
the sender): it delivers its own and relays those behind it, and leaves the others to
the MTA that routes them; their bits are cleared before intake sees the message, so it
neither delivers nor relays them twice.

Public API::

    own_share(apdu, route, others) -> bytes
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection

from mta.intake.routing import PeerRoute, Route
from p1.mts.envelope import (
    MessageEnvelope,
    Probe,
    RecipientField,
    encode_mts_apdu,
    peek_envelope,
    replace_message_envelope,
)
from p1.orname.model import ORName

__all__ = ["own_share"]


def own_share(apdu: bytes, route: Callable[[ORName], Route], others: Collection[str]) -> bytes:
    """``apdu`` with the responsibility of each recipient ``route`` sends to one of the
    peers ``others`` cleared (a report, or nothing to clear: ``apdu`` as it is).
    Raises p1.errors.DecodeError."""
    envelope = peek_envelope(apdu)
    if not isinstance(envelope, MessageEnvelope | Probe):
        return apdu
    recipients = tuple(_share(r, route, others) for r in envelope.recipients)
    if recipients == envelope.recipients:
        return apdu
    if isinstance(envelope, MessageEnvelope):
        return replace_message_envelope(apdu, dataclasses.replace(envelope, recipients=recipients))
    return encode_mts_apdu(dataclasses.replace(envelope, recipients=recipients))


def _share(
    recipient: RecipientField, route: Callable[[ORName], Route], others: Collection[str]
) -> RecipientField:
    indicators = recipient.per_recipient_indicators
    if not indicators.responsibility:
        return recipient
    where = route(recipient.recipient_name)
    if not (isinstance(where, PeerRoute) and where.peer in others):
        return recipient
    return dataclasses.replace(
        recipient, per_recipient_indicators=dataclasses.replace(indicators, responsibility=False)
    )
