"""The life of a P1 association as data: states, inputs and transitions (X.419 clause 7).

:class:`p1.association.connection.P1Association` takes an input for every call of its user and every
event of the layers below, and moves as :data:`TABLE` says.  Rules:

1. A pair missing from :data:`TABLE` is a protocol error: a ``send_*`` raises
   LocalProtocolError and changes nothing; a received PDU aborts the association.  Once an
   abort ended the association, a ``send_*`` whose pair the state it ended in had does
   nothing instead (its user was answering what the association said before the end).
2. A ``send_*`` looks its next state up first and takes it only once the layers below
   accepted the request, so a refused call leaves no trace.
3. Aborts (ours, the peer's, the transport's) reach CLOSED from any state but CLOSED.
4. A pair in :data:`DISCARDED` is the peer's PDU that crossed ours and is moot now: it is
   dropped without an event (a turn request crossing our release, X.228 7.4 / X.225 STA03).

Public API::

    State, Input, TABLE, DISCARDED
"""

from __future__ import annotations

import enum


class State(enum.Enum):
    """Where the association is in its life."""

    # Members are singletons, so identity is equality: hash by identity, in C, rather than
    # by Enum's Python-level hash of the name (the table is looked up for every event).
    __hash__ = object.__hash__

    IDLE = "idle"
    CONNECTING = "connecting"  # initiator: CR sent
    BINDING = "binding"  # initiator: CN{AARQ{RTORQ}} sent
    AWAITING_BIND = "awaiting bind"  # responder: CC sent, CN awaited
    BIND_PENDING = "bind pending"  # responder: BindRequested (RecoveryRequested) given
    OPEN = "open"
    RELEASING = "releasing"  # FN sent
    CLOSED = "closed"


class Input(enum.Enum):
    """What can happen to an association, by direction."""

    __hash__ = object.__hash__  # as State's

    SEND_BIND = "send bind"
    RECV_CONNECTED = "transport connected"
    RECV_BIND = "receive bind"  # RT-OPEN: a bind, or the recovery of an association
    RECV_TRANSPORT_CONNECT = "receive transport connect"
    RECV_BIND_ACCEPTED = "receive bind accepted"
    RECV_BIND_REFUSED = "receive bind refused"
    ACCEPT_BIND = "accept bind"
    ACCEPT_RECOVERY = "accept recovery"
    REFUSE_BIND = "refuse bind"
    DATA_PHASE = "data phase"  # transfers, syncs, the turn given, in either direction
    RECV_TURN_PLEASE = "receive turn please"
    SEND_RELEASE = "send release"
    RECV_RELEASE = "receive release"
    RECV_RELEASED = "receive released"
    ABORT = "abort"  # sent, received, or the transport gone


_S, _I = State, Input

# One transition table for the association's life, grouped by phase.
TABLE: dict[tuple[State, Input], State] = {
    # initiator: transport, then session + bind
    (_S.IDLE, _I.SEND_BIND): _S.CONNECTING,
    (_S.CONNECTING, _I.RECV_CONNECTED): _S.BINDING,
    (_S.BINDING, _I.RECV_BIND_ACCEPTED): _S.OPEN,
    (_S.BINDING, _I.RECV_BIND_REFUSED): _S.CLOSED,
    # responder: transport, then the bind its user (or the association itself) decides
    (_S.IDLE, _I.RECV_TRANSPORT_CONNECT): _S.AWAITING_BIND,
    (_S.AWAITING_BIND, _I.RECV_BIND): _S.BIND_PENDING,
    (_S.BIND_PENDING, _I.ACCEPT_BIND): _S.OPEN,
    (_S.BIND_PENDING, _I.ACCEPT_RECOVERY): _S.OPEN,
    (_S.BIND_PENDING, _I.REFUSE_BIND): _S.CLOSED,
    # open: transfers and turn, then release by the initiator
    (_S.OPEN, _I.DATA_PHASE): _S.OPEN,
    (_S.OPEN, _I.RECV_TURN_PLEASE): _S.OPEN,
    (_S.OPEN, _I.SEND_RELEASE): _S.RELEASING,
    (_S.OPEN, _I.RECV_RELEASE): _S.CLOSED,
    # releasing: the responder's DN; a turn request it sent before it saw our FN
    (_S.RELEASING, _I.RECV_RELEASED): _S.CLOSED,
    (_S.RELEASING, _I.RECV_TURN_PLEASE): _S.RELEASING,
    # abort, from anywhere
    **{(state, _I.ABORT): _S.CLOSED for state in State if state is not _S.CLOSED},
}

DISCARDED = frozenset({(_S.RELEASING, _I.RECV_TURN_PLEASE)})
"""Inputs from the peer that crossed ours and no longer matter: dropped without an event."""
