"""What a P1 association tells its user: MTA-BIND, RT-TRANSFER, turn, close and abort.

Each event is an indication or confirmation of an X.411 / X.218 primitive, named in the past
tense; :class:`p1.association.connection.P1Association` returns them from ``receive_data`` (and
``abort``) and :mod:`p1.association.connection` re-exports them.

Public API::

    BindRequested RecoveryRequested BindAccepted BindRefused TransferReceived TransferTooLong
    TransferResumed TransferConfirmed TurnRequested TurnGiven Released Aborted
    ConnectionRefused (an Aborted)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult
from p1.osi import Event, rtse
from p1.osi.rtse_recovery import SessionConnectionId

__all__ = [
    "Aborted",
    "BindAccepted",
    "BindRefused",
    "BindRequested",
    "ConnectionRefused",
    "RecoveryRequested",
    "Released",
    "TransferConfirmed",
    "TransferReceived",
    "TransferResumed",
    "TransferTooLong",
    "TurnGiven",
    "TurnRequested",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class BindRequested(Event):
    """MTA-BIND indication (X.411 12.1.1): answer with accept_bind or refuse_bind."""

    argument: MTABindArgument
    dialogue_mode: rtse.DialogueMode
    checkpoint_size: int
    window_size: int
    calling_tsap: bytes
    connection: SessionConnectionId | None = None
    """This session connection's identifier, when the CN carried one (X.225 PGI 1): what
    a later association names to recover it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoveryRequested(Event):
    """RT-OPEN indication recovering the association of the session connection
    ``identifier`` (X.228: RTORQ connectionDataRQ ``recover``): there is no MTA-bind; the
    association goes on as bound to the peer that left a transfer on that connection.
    Answer with accept_recovery, or refuse_recovery."""

    identifier: SessionConnectionId
    dialogue_mode: rtse.DialogueMode
    checkpoint_size: int
    window_size: int
    calling_tsap: bytes
    connection: SessionConnectionId | None = None
    """This session connection's own identifier, as BindRequested's."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BindAccepted(Event):
    """MTA-BIND confirmation, result accepted (X.411 12.1.1)."""

    result: MTABindResult
    dialogue_mode: rtse.DialogueMode
    checkpoint_size: int
    window_size: int
    recovered: bool = False
    """The peer accepted our RT-OPEN ``recover``: the association recovers the one lost
    (there was no MTA-bind; ``result`` is empty), and the transfer it cut off may be
    resumed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BindRefused(Event):
    """MTA-BIND confirmation, refused: the MTABindError, or None with ``why``.

    ``by_peer`` False: no refusal came; the peer's answer broke the protocol (a malformed
    AC, CPA, AARE or bind result) and this end gave the bind up."""

    error: MTABindError | None
    why: str
    by_peer: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class TransferReceived(Event):
    """RT-TRANSFER indication (X.228 7.5): an MTS-APDU; confirm it once stored."""

    transfer_id: int
    apdu: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class TransferTooLong(Event):
    """RT-TRANSFER indication (X.228 7.5) of a transfer longer than this end takes
    (``StackLimits.max_message_size``): only its first octets were kept.  Confirm it
    once the originator's non-delivery report is stored (X.411 8.3.1.2.1.10,
    content-too-long), or abort."""

    transfer_id: int
    size: int
    """Octets the transfer had (its EXTERNAL included, in normal mode)."""
    limit: int
    """The most octets this end takes in one transfer."""
    prefix: bytes | None
    """The first octets of the MTS-APDU, from its identifier octets on; None when the
    EXTERNAL around it cannot be read from the octets kept."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TransferResumed(Event):
    """S-ACTIVITY-RESUME indication (X.225 7.31) of a transfer this end kept a part of:
    transfer ``transfer_id`` goes on after checkpoint ``serial``, from the ``offset``
    octets kept; TransferReceived (or TransferTooLong) follows at its end."""

    transfer_id: int
    serial: int
    offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TransferConfirmed(Event):
    """RT-TRANSFER confirmation (X.228 7.5): the peer took responsibility."""

    transfer_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRequested(Event):
    """RT-TURN-PLEASE indication (X.228 7.6) with the peer's priority."""

    priority: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnGiven(Event):
    """RT-TURN-GIVE indication (X.228 7.7): we hold the turn now."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Released(Event):
    """RT-CLOSE indication or confirmation (X.228 7.4): the association ended normally."""

    by_peer: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Aborted(Event):
    """RT-U-ABORT / RT-P-ABORT indication (X.228 7.8-7.9), or an abort we sent."""

    by_peer: bool
    why: str
    reason: str | None = None
    """The abortReason of the peer's RTSE abort (X.228 RTAB), named as the standard
    names it ("user-error", "temporary-problem"); None when the peer gave none (a lost
    connection, a provider abort, X.410-1984 mode) or for an abort we sent."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionRefused(Aborted):
    """A connection refused for its called address: the selector of ``layer`` is not one
    this responder serves.  Transport: a DR answering the CR (X.224 13.5, reason 3
    "address unknown"); session: an RF, reason 129 "session selector unknown" (X.225 PI
    50); presentation: an RF carrying a CPR, provider-reason
    called-presentation-address-unknown (X.226 8.2).  Empty selectors: absent."""

    layer: Literal["transport", "session", "presentation"]
    called: bytes
    calling: bytes
