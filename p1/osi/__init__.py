"""What every layer of the OSI upper-layer stack shares: roles, events, limits and errors.

The stack (the modules of this package: ``tpkt``, ``cotp``, ``session``, ``presentation``,
``acse``, ``rtse``; composed in :mod:`p1.association.connection`) is sans-I/O: each layer
takes bytes or the lower layer's units in and gives events out; ``send_*`` methods queue
what is to be sent.

Errors follow h11/h2: :class:`LocalProtocolError` when our own caller misuses a layer (raised
from ``send_*``), :class:`RemoteProtocolError` when the peer breaks the protocol (raised only
inside ``receive_*``).  A layer absorbs a remote error before it reaches its caller: it goes
to its closed state, queues the abort its standard prescribes and returns an abort event, so
the I/O adapter has one path: write what is queued, then close.

Public API::

    Role.INITIATOR | Role.RESPONDER
    Event                                 # base of every layer's events
    StackLimits(max_tpdu_size=..., max_tsdu_size=..., ...), DEFAULT_LIMITS
    ProtocolError, LocalProtocolError, RemoteProtocolError(why, reason=..., layer=...)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Role(enum.Enum):
    """Which end of a connection: the one that connected, or the one that accepted."""

    INITIATOR = "initiator"
    RESPONDER = "responder"


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of every event a layer returns; subclasses are named in the past tense."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StackLimits:
    """Sizes that bound what a peer can make us hold in memory (configurable per association).

    The defaults admit everything the standards and established products send while keeping
    one association's memory bounded.
    """

    max_tpdu_size: int = 2048
    """Largest TPDU we propose or accept (X.224 class 0: 128 ... 2048 octets)."""
    max_tsdu_size: int = 64 * 1024 * 1024
    """Largest transport service data unit we reassemble from DT TPDUs."""
    max_spdu_size: int = 64 * 1024 * 1024
    """Largest session SPDU we reassemble (several TSDUs with enclosure items)."""
    max_message_size: int = 64 * 1024 * 1024
    """Largest RT-TRANSFER (one MTS-APDU with its EXTERNAL) we reassemble."""
    max_connect_data_size: int = 64 * 1024
    """Largest connect-time user data (CN/AC/RF with extended user data and overflow)."""


DEFAULT_LIMITS = StackLimits()


class ProtocolError(Exception):
    """Base of the stack's protocol errors: *why*, the *layer* and the wire *reason* code.

    ``reason`` is the code the layer puts in the abort or refusal it sends (for example the
    X.225 AB reason, the X.224 ER reject cause or the X.226 ARP provider reason), or ``None``
    when the layer has none.
    """

    def __init__(self, why: str, *, layer: str = "", reason: int | None = None) -> None:
        self.why = why
        self.layer = layer
        self.reason = reason
        super().__init__(f"{layer}: {why}" if layer else why)


class LocalProtocolError(ProtocolError):
    """Our own code called a layer in a way its state or the standard does not allow."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something malformed, too large or not allowed in the current state."""
