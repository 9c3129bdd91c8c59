"""A P1 association between two MTAs: the whole upper-layer stack composed (X.419 clause 7).

One object per TCP connection, initiator or responder, sans-I/O: :meth:`receive_data` takes
the bytes TCP delivered and returns events; ``send_*`` methods queue bytes that
:meth:`data_to_send` hands back.  Inside, the layers are pumped in order::

    MTA-BIND / MTS-APDU          X.411, X.419  (p1.mtabind, p1.transfer)
    RTSE normal mode             X.228         (p1.rtse, p1.rtse_transfer)
    ACSE                         X.227         (p1.acse)
    presentation kernel          X.226         (p1.presentation)
    session version 2            X.225         (p1.session)
    transport class 0 + TPKT     X.224, RFC 1006 (p1.cotp, p1.tpkt)

Rules:

1. The bind is A-ASSOCIATE carrying RT-OPEN carrying MTA-BIND: CN{CP{AARQ{RTORQ{[16] arg}}}}
   answered by AC{CPA{AARE{RTOAC{[17] result}}}} or RF{CPR{AARE{RTORJ{[18] error}}}}.
2. A transfer is one session activity; the receiver gets :class:`TransferReceived` at the
   activity end and the sender's :class:`TransferConfirmed` comes only after the receiver's
   user called :meth:`confirm_transfer`, i.e. once the message is safely stored.
3. One transfer at a time per direction; only the side holding the turn (the session data
   and activity tokens) may transfer or release.  In monologue mode that is the initiator.
4. Any malformed PDU from the peer aborts the association with the abort its layer
   prescribes (ER, AB, ARP, or ABRT carrying RTAB) and returns :class:`Aborted`.

Public API::

    AssociationSettings(...)
    P1Association(role, settings)
        send_bind(argument)                  initiator: connect and bind
        accept_bind(result) / refuse_bind(error)     responder, after BindRequested
        send_transfer(apdu) -> transfer id   confirm_transfer(transfer id)
        request_turn(priority) / give_turn()
        send_release() / abort(why)
        receive_data(data) -> list[Event] / receive_eof() -> list[Event] / data_to_send()
    Events: BindRequested, BindAccepted, BindRefused, TransferReceived, TransferConfirmed,
            TurnRequested, TurnGiven, Released, Aborted
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from p1 import acse, ber, cotp, presentation, rtse, session
from p1.errors import DecodeError
from p1.mtabind import (
    MTABindArgument,
    MTABindError,
    MTABindResult,
    decode_bind_argument,
    decode_bind_error,
    decode_bind_result,
    encode_bind_argument,
    encode_bind_error,
    encode_bind_result,
    unwrap_bind_argument,
    unwrap_bind_error,
    unwrap_bind_result,
    wrap_bind_argument,
    wrap_bind_error,
    wrap_bind_result,
)
from p1.osi import DEFAULT_LIMITS, Event, LocalProtocolError, RemoteProtocolError, Role, StackLimits
from p1.rtse_transfer import InboundTransfer, OutboundTransfer, Piece, Sync
from p1.transfer import MTSE_CONTEXT, decode_transfer

_T = TypeVar("_T")

MTS_TRANSFER_CONTEXT = "2.6.0.1.6"
"""id-ac-mts-transfer: the application context of a 1988 P1 association (X.419 A.1)."""

_TURN_TOKENS = session.Token.DATA | session.Token.MINOR_SYNC | session.Token.MAJOR_ACTIVITY
_TURN_BITS = _TURN_TOKENS.value
_SUPPORTED_SYNTAXES = {
    presentation.ACSE_AS: presentation.BER,
    presentation.MTA_RTSE_AS: presentation.BER,
    presentation.MTSE_AS: presentation.BER,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class AssociationSettings:
    """How this end of an association behaves (both roles)."""

    dialogue_mode: rtse.DialogueMode = rtse.DialogueMode.MONOLOGUE
    """Initiator: the dialogue mode proposed (X.228 RTORQ dialogueMode)."""
    accepted_dialogue_modes: frozenset[rtse.DialogueMode] = frozenset(rtse.DialogueMode)
    """Responder: modes it accepts; another gives MTABindError unacceptable-dialogue-mode."""
    checkpoint_size: int = 0
    """Initiator: checkpoint size proposed, in units of 1024 octets (0: no checkpoints)."""
    window_size: int = 3
    """Initiator: window proposed (unconfirmed checkpoints at a time)."""
    calling_tsap: bytes = b""
    called_tsap: bytes = b""
    limits: StackLimits = DEFAULT_LIMITS


class State(enum.Enum):
    """Where the association is in its life."""

    # Members are singletons, so identity is equality: hash by identity, in C, rather than
    # by Enum's Python-level hash of the name (the table is looked up for every event).
    __hash__ = object.__hash__

    IDLE = "idle"
    CONNECTING = "connecting"  # initiator: CR sent
    BINDING = "binding"  # initiator: CN{AARQ{RTORQ}} sent
    AWAITING_BIND = "awaiting bind"  # responder: CC sent, CN awaited
    BIND_PENDING = "bind pending"  # responder: BindRequested given, its user decides
    OPEN = "open"
    RELEASING = "releasing"  # FN sent
    CLOSED = "closed"


class Input(enum.Enum):
    """What can happen to an association, by direction."""

    __hash__ = object.__hash__  # as State's

    SEND_BIND = "send bind"
    RECV_CONNECTED = "transport connected"
    RECV_BIND = "receive bind"
    RECV_TRANSPORT_CONNECT = "receive transport connect"
    RECV_BIND_ACCEPTED = "receive bind accepted"
    RECV_BIND_REFUSED = "receive bind refused"
    ACCEPT_BIND = "accept bind"
    REFUSE_BIND = "refuse bind"
    DATA_PHASE = "data phase"  # transfers, syncs, turn, in either direction
    SEND_RELEASE = "send release"
    RECV_RELEASE = "receive release"
    RECV_RELEASED = "receive released"


# One transition table for the association's life; a missing pair is a protocol error
# (from the peer) or a misuse (by our caller).  Aborts reach CLOSED from any state.
_TABLE: dict[tuple[State, Input], State] = {
    # initiator: transport, then session + bind
    (State.IDLE, Input.SEND_BIND): State.CONNECTING,
    (State.CONNECTING, Input.RECV_CONNECTED): State.BINDING,
    (State.BINDING, Input.RECV_BIND_ACCEPTED): State.OPEN,
    (State.BINDING, Input.RECV_BIND_REFUSED): State.CLOSED,
    # responder: transport, then the bind its user accepts or refuses
    (State.IDLE, Input.RECV_TRANSPORT_CONNECT): State.AWAITING_BIND,
    (State.AWAITING_BIND, Input.RECV_BIND): State.BIND_PENDING,
    (State.BIND_PENDING, Input.ACCEPT_BIND): State.OPEN,
    (State.BIND_PENDING, Input.REFUSE_BIND): State.CLOSED,
    # open: transfers and turn, then release by either side
    (State.OPEN, Input.DATA_PHASE): State.OPEN,
    (State.OPEN, Input.SEND_RELEASE): State.RELEASING,
    (State.OPEN, Input.RECV_RELEASE): State.CLOSED,
    (State.RELEASING, Input.RECV_RELEASED): State.CLOSED,
}


# --- events ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class BindRequested(Event):
    """MTA-BIND indication (X.411 12.1.1): answer with accept_bind or refuse_bind."""

    argument: MTABindArgument
    dialogue_mode: rtse.DialogueMode
    checkpoint_size: int
    window_size: int
    calling_tsap: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class BindAccepted(Event):
    """MTA-BIND confirmation, result accepted (X.411 12.1.1)."""

    result: MTABindResult
    dialogue_mode: rtse.DialogueMode
    checkpoint_size: int
    window_size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BindRefused(Event):
    """MTA-BIND confirmation, refused: the MTABindError, or None with ``why``."""

    error: MTABindError | None
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TransferReceived(Event):
    """RT-TRANSFER indication (X.228 7.5): an MTS-APDU; confirm it once stored."""

    transfer_id: int
    apdu: bytes


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


# --- the association ------------------------------------------------------------------


@dataclass(slots=True)
class _Negotiated:
    dialogue_mode: rtse.DialogueMode = rtse.DialogueMode.MONOLOGUE
    checkpoint_size: int = 0
    window_size: int = 3


@dataclass(slots=True)
class _Transfers:
    next_id: int = 1
    outbound: OutboundTransfer | None = None
    inbound: InboundTransfer | None = None
    unconfirmed: int | None = None  # received, awaiting confirm_transfer
    pending: list[Event] = field(default_factory=list)


class P1Association:
    """One P1 association over one TCP connection (see the module docstring)."""

    def __init__(self, role: Role, settings: AssociationSettings | None = None) -> None:
        self.role = role
        self.settings = settings or AssociationSettings()
        limits = self.settings.limits
        self.state = State.IDLE
        self._transport = cotp.TransportConnection(
            role,
            limits=limits,
            calling_tsap=self.settings.calling_tsap,
            called_tsap=self.settings.called_tsap,
        )
        # DT user data as views: one RTTR is read from it where it lies (p1.presentation
        # and p1.rtse read views too), so a large transfer is copied once on the way up.
        self._session = session.SessionConnection(role, limits=limits, data_views=True)
        self._bind_argument: MTABindArgument | None = None
        self._calling_tsap = b""
        self._agreed = _Negotiated()
        self._transfers = _Transfers()
        self._context_results: tuple[presentation.ContextResult, ...] = ()

    # --- state ----------------------------------------------------------------------

    def _move(self, what: Input) -> None:
        """Take ``what``; a pair missing from the table raises LocalProtocolError."""
        try:
            self.state = _TABLE[self.state, what]
        except KeyError:
            raise LocalProtocolError(
                f"{what.value} is not allowed in state {self.state.value}", layer="p1"
            ) from None

    def _expect(self, what: Input) -> None:
        """Take a peer's ``what``; a missing pair is the peer's protocol error."""
        try:
            self.state = _TABLE[self.state, what]
        except KeyError:
            raise RemoteProtocolError(
                f"{what.value} is not allowed in state {self.state.value}", layer="p1"
            ) from None

    @property
    def closed(self) -> bool:
        """True once the association has ended (released, refused or aborted)."""
        return self.state is State.CLOSED

    @property
    def has_turn(self) -> bool:
        """True when this end may transfer or release (it holds the session tokens)."""
        return self._session.tokens.value & _TURN_BITS == _TURN_BITS

    @property
    def busy(self) -> bool:
        """True while an outbound transfer waits for its confirmation."""
        return self._transfers.outbound is not None

    # --- sending ----------------------------------------------------------------------

    def send_bind(self, argument: MTABindArgument) -> None:
        """Initiator: open the transport, then A-ASSOCIATE + RT-OPEN carrying MTA-BIND."""
        if self.role is not Role.INITIATOR:
            raise LocalProtocolError("only the initiator binds", layer="p1")
        self._move(Input.SEND_BIND)
        self._bind_argument = argument
        self._transport.send_connect()

    def accept_bind(self, result: MTABindResult) -> None:
        """Responder: accept the bind with ``result`` (AC{CPA{AARE{RTOAC{[17] result}}}})."""
        self._move(Input.ACCEPT_BIND)
        open_data = wrap_bind_result(encode_bind_result(result))
        rtoac = rtse.Rtoac(
            checkpoint_size=self._agreed.checkpoint_size,
            window_size=self._agreed.window_size,
            open=open_data,
        )
        aare = acse.Aare(
            application_context=MTS_TRANSFER_CONTEXT,
            result=acse.ACCEPTED,
            diagnostic=acse.Diagnostic(source=acse.SERVICE_USER, value=acse.NULL_DIAGNOSTIC),
            user_information=(_external(rtse.encode_rtse(rtoac)),),
        )
        cpa = presentation.AcceptPpdu(
            results=self._context_results,
            user_data=(presentation.Pdv(presentation.ACSE_CONTEXT, acse.encode_acse(aare)),),
        )
        self._session.send_accept(presentation.encode_cpa(cpa))

    def refuse_bind(self, error: MTABindError) -> None:
        """Responder: refuse the bind (RF{CPR{AARE rejected{RTORJ{[18] error}}}})."""
        self._move(Input.REFUSE_BIND)
        self._refuse(error)

    def _refuse(self, error: MTABindError) -> None:
        rtorj = rtse.Rtorj(user_data=wrap_bind_error(encode_bind_error(error)))
        aare = acse.Aare(
            application_context=MTS_TRANSFER_CONTEXT,
            result=acse.REJECTED_PERMANENT,
            diagnostic=acse.Diagnostic(source=acse.SERVICE_USER, value=acse.NO_REASON_GIVEN),
            user_information=(_external(rtse.encode_rtse(rtorj)),),
        )
        cpr = presentation.RefusePpdu(
            results=self._context_results,
            user_data=(presentation.Pdv(presentation.ACSE_CONTEXT, acse.encode_acse(aare)),),
        )
        self._session.send_refuse(presentation.encode_cpr(cpr))
        self.state = State.CLOSED

    def send_transfer(self, apdu: bytes) -> int:
        """RT-TRANSFER request of one MTS-APDU; returns its transfer id."""
        self._check_transfer_allowed()
        self._move(Input.DATA_PHASE)
        transfers = self._transfers
        transfer_id = transfers.next_id
        transfers.next_id += 1
        transfers.outbound = OutboundTransfer(
            transfer_id,
            apdu,
            self._agreed.checkpoint_size,
            self._agreed.window_size,
            head=_transfer_head(apdu),
        )
        self._session.send_activity_start(ber.tlv(ber.INTEGER, ber.int_contents(transfer_id)))
        self._advance()
        return transfer_id

    def _check_transfer_allowed(self) -> None:
        if self._transfers.outbound is not None:
            raise LocalProtocolError("a transfer is already in progress", layer="rtse")
        if not self.has_turn:
            raise LocalProtocolError("this end does not hold the turn", layer="rtse")
        if self._transfers.inbound is not None or self._transfers.unconfirmed is not None:
            raise LocalProtocolError("an inbound transfer is not finished", layer="rtse")

    def _advance(self) -> None:
        outbound = self._transfers.outbound
        assert outbound is not None
        for step in outbound.steps():
            if isinstance(step, Piece):
                # P-DATA{RTTR{head + data}}: the headers are built alone and data, a view of
                # the MTS-APDU, is first copied when the transport's TPKTs are joined.
                prefix = _piece_prefix(len(step.head) + len(step.data))
                self._session.send_data(step.data, prefix=prefix + step.head)
            elif isinstance(step, Sync):
                self._session.send_minor_sync(confirm=True)
            else:
                self._session.send_activity_end()

    def confirm_transfer(self, transfer_id: int) -> None:
        """The message of ``transfer_id`` is safely stored: acknowledge the activity end."""
        if self._transfers.unconfirmed != transfer_id:
            raise LocalProtocolError(f"transfer {transfer_id} awaits no confirmation", layer="rtse")
        self._move(Input.DATA_PHASE)
        self._transfers.unconfirmed = None
        self._session.send_activity_end_response()

    def request_turn(self, priority: int = 0) -> None:
        """RT-TURN-PLEASE (S-TOKEN-PLEASE carrying RTTP with ``priority``)."""
        if self.has_turn:
            raise LocalProtocolError("this end already holds the turn", layer="rtse")
        self._move(Input.DATA_PHASE)
        rttp = rtse.encode_rtse(rtse.Rttp(priority=priority))
        self._session.send_token_please(
            _TURN_TOKENS, presentation.encode_pdv(presentation.RTSE_CONTEXT, rttp)
        )

    def give_turn(self) -> None:
        """RT-TURN-GIVE (S-CONTROL-GIVE): hand every token to the peer."""
        if self._transfers.outbound is not None:
            raise LocalProtocolError("cannot give the turn during a transfer", layer="rtse")
        self._move(Input.DATA_PHASE)
        self._session.send_control_give()

    def send_release(self) -> None:
        """RT-CLOSE request: A-RELEASE (FN{RLRQ})."""
        if self._transfers.outbound is not None or self._transfers.unconfirmed is not None:
            raise LocalProtocolError("cannot release during a transfer", layer="p1")
        self._move(Input.SEND_RELEASE)
        rlrq = acse.encode_acse(acse.Rlrq(reason=acse.RELEASE_NORMAL))
        self._session.send_release(presentation.encode_pdv(presentation.ACSE_CONTEXT, rlrq))

    def abort(self, why: str = "aborted by the MTA") -> list[Event]:
        """RT-U-ABORT: AB{ARU{ABRT{RTAB}}}; the adapter then writes and closes."""
        if self.state is State.CLOSED:
            return []
        rtab = rtse.encode_rtse(rtse.Rtab(abort_reason=rtse.AbortReason.USER_ERROR))
        self._send_abort(acse.Abrt(source=acse.SERVICE_USER, user_information=(_external(rtab),)))
        return [Aborted(by_peer=False, why=why)]

    def _send_abort(self, abrt: acse.Abrt) -> None:
        pdv = presentation.Pdv(presentation.ACSE_CONTEXT, acse.encode_acse(abrt))
        aru = presentation.encode_aru(presentation.AruPpdu(user_data=(pdv,)))
        if self.state in (State.BINDING, State.BIND_PENDING, State.OPEN, State.RELEASING):
            self._session.send_abort(aru)
        self.state = State.CLOSED

    def data_to_send(self) -> bytes:
        """The bytes to write to TCP now (possibly empty)."""
        self._flush()
        return self._transport.data_to_send()

    def _flush(self) -> None:
        for head, data in self._session.tsdu_parts_to_send():
            if data:
                self._transport.send_tsdu(data, prefix=head)
            else:
                self._transport.send_tsdu(head)

    # --- receiving --------------------------------------------------------------------

    def receive_eof(self) -> list[Event]:
        """TCP closed by the peer."""
        if self.state is State.CLOSED:
            return []
        self.state = State.CLOSED
        return [Aborted(by_peer=True, why="the peer closed the connection")]

    def receive_data(self, data: bytes) -> list[Event]:
        """Feed bytes from TCP; returns what happened, in order."""
        events: list[Event] = []
        for event in self._transport.receive_data(data):
            events.extend(self._on_transport(event))
        self._flush()
        return events

    def _on_transport(self, event: Event) -> list[Event]:
        if isinstance(event, cotp.TsduReceived):
            return self._on_tsdu(event.data)
        if isinstance(event, cotp.ConnectRequested):
            self._expect(Input.RECV_TRANSPORT_CONNECT)
            self._calling_tsap = event.calling_tsap
            self._transport.send_accept()
            return []
        if isinstance(event, cotp.Connected):
            self._expect(Input.RECV_CONNECTED)
            self._session.send_connect(self._connect_data())
            return []
        if isinstance(event, cotp.Disconnected):
            return self._on_gone(by_peer=event.by_peer, why=f"transport: {event.why}")
        return []

    def _on_gone(self, *, by_peer: bool, why: str) -> list[Event]:
        if self.state is State.CLOSED:
            return []
        was = self.state
        self.state = State.CLOSED
        if was is State.BINDING:
            return [BindRefused(error=None, why=why)]
        return [Aborted(by_peer=by_peer, why=why)]

    def _on_tsdu(self, tsdu: bytes) -> list[Event]:
        events: list[Event] = []
        for event in self._session.receive_tsdu(tsdu):
            handler = _SESSION_HANDLERS.get(type(event))
            if handler is None or self.state is State.CLOSED:
                continue
            try:
                events.extend(handler(self, event))
            except (RemoteProtocolError, DecodeError) as error:
                events.extend(self._upper_error(error))
        return events

    def _upper_error(self, error: RemoteProtocolError | DecodeError) -> list[Event]:
        """The peer broke a rule above the session: abort with the abort of that layer."""
        why = str(error)
        if self.state in (State.AWAITING_BIND, State.BIND_PENDING) and self.role is Role.RESPONDER:
            self._session.send_abort(presentation.encode_arp(presentation.ARP_PROTOCOL_ERROR))
            self.state = State.CLOSED
            return [Aborted(by_peer=False, why=why)]
        rtab = rtse.encode_rtse(rtse.Rtab(abort_reason=rtse.AbortReason.PROTOCOL_ERROR))
        self._send_abort(acse.Abrt(source=acse.SERVICE_USER, user_information=(_external(rtab),)))
        return [Aborted(by_peer=False, why=why)]

    # --- bind -------------------------------------------------------------------------

    def _connect_data(self) -> bytes:
        argument = self._bind_argument
        assert argument is not None
        rtorq = rtse.Rtorq(
            checkpoint_size=self.settings.checkpoint_size,
            window_size=self.settings.window_size,
            dialogue_mode=self.settings.dialogue_mode,
            open=wrap_bind_argument(encode_bind_argument(argument)),
        )
        aarq = acse.Aarq(
            application_context=MTS_TRANSFER_CONTEXT,
            user_information=(_external(rtse.encode_rtse(rtorq)),),
        )
        cp = presentation.ConnectPpdu(
            contexts=presentation.P1_CONTEXTS,
            user_data=(presentation.Pdv(presentation.ACSE_CONTEXT, acse.encode_acse(aarq)),),
        )
        return presentation.encode_cp(cp)

    def _on_connect_requested(self, event: session.ConnectRequested) -> list[Event]:
        self._expect(Input.RECV_BIND)
        cp = presentation.decode_cp(event.user_data)
        self._context_results = presentation.negotiate(cp.contexts, _SUPPORTED_SYNTAXES)
        rtorq = _rtorq_from(_acse_value(cp.user_data, acse.Aarq))
        refusal = self._refusal_for(rtorq, event)
        if refusal is not None:
            self._refuse(refusal)
            return []
        assert rtorq.open is not None
        argument = decode_bind_argument(unwrap_bind_argument(rtorq.open))
        self._agreed = _Negotiated(rtorq.dialogue_mode, rtorq.checkpoint_size, rtorq.window_size)
        return [
            BindRequested(
                argument=argument,
                dialogue_mode=rtorq.dialogue_mode,
                checkpoint_size=rtorq.checkpoint_size,
                window_size=rtorq.window_size,
                calling_tsap=self._calling_tsap,
            )
        ]

    def _refusal_for(
        self, rtorq: rtse.Rtorq, event: session.ConnectRequested
    ) -> MTABindError | None:
        """Why this bind is refused before the user sees it, or None."""
        if rtorq.open is None:
            # RT-OPEN with recover: we keep no checkpoints across associations (X.228 7.3).
            return MTABindError.BUSY
        if rtorq.dialogue_mode not in self.settings.accepted_dialogue_modes:
            return MTABindError.UNACCEPTABLE_DIALOGUE_MODE
        return None

    def _on_connect_accepted(self, event: session.ConnectAccepted) -> list[Event]:
        cpa = presentation.decode_cpa(event.user_data)
        aare = _acse_value(cpa.user_data, acse.Aare)
        if aare.result != acse.ACCEPTED:
            raise RemoteProtocolError("AC carries an AARE that is not accepted", layer="acse")
        rtoac = _rtse_value(aare.user_information, rtse.Rtoac)
        if rtoac.open is None:
            raise RemoteProtocolError("RTOAC without the MTA-bind result", layer="rtse")
        result = decode_bind_result(unwrap_bind_result(rtoac.open))
        self._expect(Input.RECV_BIND_ACCEPTED)
        self._agreed = _Negotiated(
            self.settings.dialogue_mode, rtoac.checkpoint_size, rtoac.window_size
        )
        return [
            BindAccepted(
                result=result,
                dialogue_mode=self.settings.dialogue_mode,
                checkpoint_size=rtoac.checkpoint_size,
                window_size=rtoac.window_size,
            )
        ]

    def _on_connect_refused(self, event: session.ConnectRefused) -> list[Event]:
        self._expect(Input.RECV_BIND_REFUSED)
        try:
            cpr = presentation.decode_cpr(event.user_data)
            aare = _acse_value(cpr.user_data, acse.Aare)
            rtorj = _rtse_value(aare.user_information, rtse.Rtorj)
            if rtorj.user_data is None:
                return [BindRefused(error=None, why="refused without an MTA-bind error")]
            error = decode_bind_error(unwrap_bind_error(rtorj.user_data))
        except (DecodeError, RemoteProtocolError) as problem:
            return [
                BindRefused(error=None, why=f"refused (session reason {event.reason}): {problem}")
            ]
        return [BindRefused(error=error, why=error.name.lower().replace("_", "-"))]

    # --- data phase -------------------------------------------------------------------

    def _on_activity_started(self, event: session.ActivityStarted) -> list[Event]:
        self._expect(Input.DATA_PHASE)
        transfers = self._transfers
        if transfers.inbound is not None or transfers.unconfirmed is not None:
            raise RemoteProtocolError("activity started before the last one ended", layer="rtse")
        transfers.inbound = InboundTransfer(
            _activity_number(event.activity_id), self.settings.limits.max_message_size
        )
        return []

    def _on_data(self, event: session.DataViewReceived) -> list[Event]:
        self._expect(Input.DATA_PHASE)
        inbound = self._transfers.inbound
        if inbound is None:
            raise RemoteProtocolError("P-DATA outside an activity", layer="rtse")
        single = presentation.decode_pdv_view(event.user_data)
        if single is not None:  # the usual P-DATA: one RTTR, read without copying it
            context_id, value = single
            _check_rtse_context(context_id)
            octets = rtse.decode_rttr_view(value)
            inbound.add(rtse.decode_rttr(value) if octets is None else octets)
            return []
        for pdv in presentation.decode_user_data(event.user_data):
            _check_rtse_context(pdv.context_id)
            inbound.add(rtse.decode_rttr(pdv.value))
        return []

    def _on_minor_sync(self, event: session.MinorSyncRequested) -> list[Event]:
        # Checkpoints are confirmed at once: a checkpoint only matters to recover a transfer
        # across associations, which we refuse; responsibility moves at the activity end.
        self._expect(Input.DATA_PHASE)
        if event.confirm_required:
            self._session.send_minor_sync_response(event.serial)
        return []

    def _on_minor_sync_confirmed(self, event: session.MinorSyncConfirmed) -> list[Event]:
        self._expect(Input.DATA_PHASE)
        outbound = self._transfers.outbound
        if outbound is None:
            raise RemoteProtocolError("minor sync confirmed outside a transfer", layer="rtse")
        outbound.confirm_sync()
        self._advance()
        return []

    def _on_activity_end(self, event: session.ActivityEndRequested) -> list[Event]:
        self._expect(Input.DATA_PHASE)
        inbound = self._transfers.inbound
        if inbound is None:
            raise RemoteProtocolError("activity end outside an activity", layer="rtse")
        self._transfers.inbound = None
        apdu = _plain_apdu(inbound)
        if apdu is None:
            transfer = decode_transfer(inbound.octets())
            if transfer.indirect_reference not in (None, MTSE_CONTEXT):
                raise RemoteProtocolError(
                    f"transfer labelled with context {transfer.indirect_reference}", layer="rtse"
                )
            apdu = transfer.apdu
        self._transfers.unconfirmed = inbound.transfer_id
        return [TransferReceived(transfer_id=inbound.transfer_id, apdu=apdu)]

    def _on_activity_ended(self, event: session.ActivityEnded) -> list[Event]:
        self._expect(Input.DATA_PHASE)
        outbound = self._transfers.outbound
        if outbound is None or not outbound.done:
            raise RemoteProtocolError("activity end confirmed that was never sent", layer="rtse")
        self._transfers.outbound = None
        return [TransferConfirmed(transfer_id=outbound.transfer_id)]

    def _on_tokens_requested(self, event: session.TokensRequested) -> list[Event]:
        self._expect(Input.DATA_PHASE)
        priority = 0
        for pdv in presentation.decode_user_data(event.user_data) if event.user_data else ():
            rttp = rtse.decode_rtse(pdv.value)
            if isinstance(rttp, rtse.Rttp):
                priority = rttp.priority
        return [TurnRequested(priority=priority)]

    def _on_control_given(self, event: session.ControlGiven) -> list[Event]:
        self._expect(Input.DATA_PHASE)
        return [TurnGiven()]

    # --- release and abort ------------------------------------------------------------

    def _on_release_requested(self, event: session.ReleaseRequested) -> list[Event]:
        self._expect(Input.RECV_RELEASE)
        _acse_value(presentation.decode_user_data(event.user_data), acse.Rlrq)
        rlre = acse.encode_acse(acse.Rlre(reason=acse.RELEASE_NORMAL))
        self._session.send_release_response(
            presentation.encode_pdv(presentation.ACSE_CONTEXT, rlre)
        )
        return [Released(by_peer=True)]

    def _on_released(self, event: session.Released) -> list[Event]:
        self._expect(Input.RECV_RELEASED)
        return [Released(by_peer=False)]

    def _on_session_aborted(self, event: session.Aborted) -> list[Event]:
        return self._on_gone(by_peer=event.by_peer, why=f"session: {event.why}")


# Session events by type, to the association's handler (a handler's argument is an instance
# of its key, which the dict type cannot say).
_SESSION_HANDLERS: dict[type[Event], Callable[[P1Association, Any], list[Event]]] = {
    session.ConnectRequested: P1Association._on_connect_requested,
    session.ConnectAccepted: P1Association._on_connect_accepted,
    session.ConnectRefused: P1Association._on_connect_refused,
    session.ActivityStarted: P1Association._on_activity_started,
    session.DataViewReceived: P1Association._on_data,
    session.MinorSyncRequested: P1Association._on_minor_sync,
    session.MinorSyncConfirmed: P1Association._on_minor_sync_confirmed,
    session.ActivityEndRequested: P1Association._on_activity_end,
    session.ActivityEnded: P1Association._on_activity_ended,
    session.TokensRequested: P1Association._on_tokens_requested,
    session.ControlGiven: P1Association._on_control_given,
    session.ReleaseRequested: P1Association._on_release_requested,
    session.Released: P1Association._on_released,
    session.Aborted: P1Association._on_session_aborted,
}


# --- helpers --------------------------------------------------------------------------


def _external(value: bytes) -> acse.External:
    """``EXTERNAL { direct-reference BER, indirect-reference 3, single-ASN1-type value }``."""
    return acse.External(
        direct_reference=presentation.BER,
        indirect_reference=presentation.RTSE_CONTEXT,
        value=value,
    )


def _acse_value(pdvs: tuple[presentation.Pdv, ...], kind: type[_T]) -> _T:
    for pdv in pdvs:
        if pdv.context_id == presentation.ACSE_CONTEXT:
            apdu = acse.decode_acse(pdv.value)
            if not isinstance(apdu, kind):
                raise RemoteProtocolError(
                    f"expected {kind.__name__}, found {type(apdu).__name__}", layer="acse"
                )
            return apdu
    raise RemoteProtocolError(f"no {kind.__name__} in the ACSE context", layer="acse")


def _rtse_value(externals: tuple[acse.External, ...], kind: type[_T]) -> _T:
    if len(externals) != 1:
        raise RemoteProtocolError(
            f"expected one EXTERNAL in user-information, found {len(externals)}", layer="rtse"
        )
    apdu = rtse.decode_rtse(externals[0].value)
    if not isinstance(apdu, kind):
        raise RemoteProtocolError(
            f"expected {kind.__name__}, found {type(apdu).__name__}", layer="rtse"
        )
    return apdu


def _rtorq_from(aarq: acse.Aarq) -> rtse.Rtorq:
    if aarq.application_context != MTS_TRANSFER_CONTEXT:
        raise RemoteProtocolError(
            f"application context {aarq.application_context} is not mts-transfer", layer="acse"
        )
    return _rtse_value(aarq.user_information, rtse.Rtorq)


@functools.lru_cache(maxsize=16)
def _piece_prefix(size: int) -> bytes:
    """The PDV and RTTR headers of a piece of ``size`` octets (pieces share a few sizes)."""
    rttr = rtse.rttr_header(size)
    return presentation.pdv_header(presentation.RTSE_CONTEXT, len(rttr) + size) + rttr


def _check_rtse_context(context_id: int) -> None:
    if context_id != presentation.RTSE_CONTEXT:
        raise RemoteProtocolError(f"P-DATA in presentation context {context_id}", layer="rtse")


_EXTERNAL = ber.identifier(ber.universal(8), constructed=True)
_SINGLE_ASN1_TYPE = ber.identifier(ber.context(0), constructed=True)
_MTSE_REFERENCE = ber.tlv(ber.INTEGER, ber.int_contents(MTSE_CONTEXT))


def _transfer_head(apdu: bytes) -> bytes:
    """What p1.transfer.encode_transfer puts before ``apdu`` (the EXTERNAL with indirect
    reference 5): the transfer path sends the two apart, so the APDU is not copied."""
    ber.check_single_tlv(apdu, "transfer EXTERNAL")
    single = _SINGLE_ASN1_TYPE + ber.length_octets(len(apdu))
    size = len(_MTSE_REFERENCE) + len(single) + len(apdu)
    return _EXTERNAL + ber.length_octets(size) + _MTSE_REFERENCE + single


def _plain_apdu(inbound: InboundTransfer) -> bytes | None:
    """The MTS-APDU of a transfer in the form :func:`_transfer_head` gives (what we send:
    ``28 L { 02 01 05  a0 L { apdu } }``, definite lengths), joined once from the pieces;
    None for any other form, which p1.transfer.decode_transfer reads (or refuses)."""
    size = inbound.size
    head = memoryview(inbound.head(_PLAIN_HEAD))
    if len(head) < _PLAIN_HEAD:  # (a transfer this short takes the general path)
        return None
    # read_definite reads only the headers from ``head``; their lengths are checked
    # against the size of the whole transfer.
    external = presentation.read_definite(head, 0, size)
    if external is None or external[0] != _EXTERNAL[0] or external[2] != size:
        return None
    start = external[1] + len(_MTSE_REFERENCE)
    if head[external[1] : start] != _MTSE_REFERENCE:
        return None
    single = presentation.read_definite(head, start, size)
    if single is None or single[0] != _SINGLE_ASN1_TYPE[0] or single[2] != size:
        return None
    apdu = inbound.octets_from(single[1])
    try:
        ber.read_single(apdu, "transfer EXTERNAL.single-ASN1-type")  # one value, as [0] holds
    except DecodeError:
        return None
    return apdu


_PLAIN_HEAD = 16  # EXTERNAL and [0] headers (at most 6 octets each) and the reference (3)


def _activity_number(activity_id: bytes) -> int:
    """The transfer number RTSE puts in the activity identifier (a BER INTEGER)."""
    try:
        return ber.read_int(ber.read_single(activity_id, "activity identifier"), "activity id")
    except DecodeError:
        return 0
