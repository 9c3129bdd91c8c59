"""Session service events: what a session connection tells its user (X.215 / X.225).

Each event is an indication or confirm of an X.215 primitive, named in the past tense;
p1.osi.session returns them from ``receive_tsdu`` and re-exports them.

Public API::

    ConnectRequested ConnectAccepted ConnectRefused DataReceived DataViewReceived ActivityStarted
    ActivityResumed ActivityEndRequested ActivityEnded MinorSyncRequested MinorSyncConfirmed
    TokensRequested TokensGiven ControlGiven ActivityInterrupted ActivityInterruptConfirmed
    ActivityDiscarded ActivityDiscardConfirmed ExceptionReported ReleaseRequested
    ReleaseRefused Released Aborted
"""

from __future__ import annotations

from dataclasses import dataclass

from p1.osi import Event
from p1.osi.x225.machine import Token
from p1.osi.x225.spdu import ConnectionIdentifier

__all__ = [
    "Aborted",
    "ActivityDiscardConfirmed",
    "ActivityDiscarded",
    "ActivityEndRequested",
    "ActivityEnded",
    "ActivityInterruptConfirmed",
    "ActivityInterrupted",
    "ActivityResumed",
    "ActivityStarted",
    "ConnectAccepted",
    "ConnectRefused",
    "ConnectRequested",
    "ControlGiven",
    "DataReceived",
    "DataViewReceived",
    "ExceptionReported",
    "MinorSyncConfirmed",
    "MinorSyncRequested",
    "ReleaseRefused",
    "ReleaseRequested",
    "Released",
    "TokensGiven",
    "TokensRequested",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectRequested(Event):
    """S-CONNECT indication (X.225 7.1): answer with send_accept or send_refuse."""

    user_data: bytes
    requirements: int
    token_setting: int
    calling_ssap: bytes
    called_ssap: bytes
    version: int
    connection_identifier: ConnectionIdentifier | None = None
    """The CN's connection identifier (PGI 1), when it carried one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectAccepted(Event):
    """S-CONNECT confirm, accepted (X.225 7.4)."""

    user_data: bytes
    requirements: int
    token_setting: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectRefused(Event):
    """S-CONNECT confirm, refused (X.225 7.5): the connection is closed."""

    user_data: bytes
    reason: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class DataReceived(Event):
    """S-DATA indication (X.225 7.11)."""

    user_data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class DataViewReceived(Event):
    """S-DATA indication (X.225 7.11) for a connection made with ``data_views=True``: the
    user data is a view of the TSDU that carried it, not a copy."""

    user_data: memoryview


@dataclass(frozen=True, slots=True, kw_only=True)
class ActivityStarted(Event):
    """S-ACTIVITY-START indication (X.225 7.30)."""

    activity_id: bytes
    user_data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class ActivityResumed(Event):
    """S-ACTIVITY-RESUME indication (X.225 7.31): the activity ``old_activity_id`` of the
    session connection ``connection_identifier`` goes on, as ``activity_id``, after its
    synchronization point ``serial`` (the next point is ``serial + 1``)."""

    activity_id: bytes
    old_activity_id: bytes
    serial: int
    connection_identifier: ConnectionIdentifier
    user_data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class ActivityEndRequested(Event):
    """S-ACTIVITY-END indication (X.225 7.35): answer with send_activity_end_response."""

    serial: int
    user_data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class ActivityEnded(Event):
    """S-ACTIVITY-END confirm (X.225 7.36)."""

    serial: int
    user_data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class MinorSyncRequested(Event):
    """S-SYNC-MINOR indication (X.225 7.20): confirm with send_minor_sync_response."""

    serial: int
    confirm_required: bool
    user_data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class MinorSyncConfirmed(Event):
    """S-SYNC-MINOR confirm (X.225 7.21): every point up to ``serial`` is confirmed."""

    serial: int
    user_data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class TokensRequested(Event):
    """S-TOKEN-PLEASE indication (X.225 7.17)."""

    tokens: Token
    user_data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class TokensGiven(Event):
    """S-TOKEN-GIVE indication (X.225 7.16): this side now holds ``tokens`` too."""

    tokens: Token


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlGiven(Event):
    """S-CONTROL-GIVE indication (X.225 7.18): every token is here; GTA was queued."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ActivityInterrupted(Event):
    """S-ACTIVITY-INTERRUPT indication (X.225 7.32): answer with its response."""

    reason: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ActivityInterruptConfirmed(Event):
    """S-ACTIVITY-INTERRUPT confirm (X.225 7.33): every token is here."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ActivityDiscarded(Event):
    """S-ACTIVITY-DISCARD indication (X.225 7.34): answer with its response."""

    reason: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ActivityDiscardConfirmed(Event):
    """S-ACTIVITY-DISCARD confirm (X.225 7.34): every token is here."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExceptionReported(Event):
    """S-U-EXCEPTION-REPORT (ED) or S-P-EXCEPTION-REPORT (ER) indication (X.225 7.27-7.28).

    This side holds the data token: recover with send_activity_interrupt,
    send_activity_discard, send_give_tokens(Token.DATA) or send_abort.
    """

    reason: int | None
    user_data: bytes
    by_provider: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseRequested(Event):
    """S-RELEASE indication (X.225 7.6): answer with send_release_response (or refuse)."""

    user_data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseRefused(Event):
    """S-RELEASE confirm, rejected (NF, X.225 7.8): the connection goes on."""

    user_data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Released(Event):
    """S-RELEASE confirm, accepted (DN, X.225 7.7): the connection is closed."""

    user_data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Aborted(Event):
    """S-U-ABORT or S-P-ABORT indication (X.225 7.9): the connection is closed.

    ``reason`` is the transport disconnect (PI 17) of the AB received or sent.
    """

    reason: int | None
    user_data: bytes
    by_peer: bool
    why: str
