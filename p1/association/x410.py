"""A P1 association in X.410-1984 mode: the RTS directly on the session layer, sans-I/O.

X.419 clause 7 lets a 1988 MTA talk P1 to a 1984 one in X.410-1984 mode (X.228 Annex B, the
differences from X.410 1984): no ACSE, no presentation; the reliable transfer server of
X.410 (1984) uses the session service (X.225; the kernel, half-duplex, minor synchronize,
activity management and exceptions units) itself::

    MPDU (UMPDU / DMPDU / probe) = 1988 MTS-APDU     X.411 (1984), X.419
    RTS (X.410 1984) over session                    p1.association.x410_pdus
    session, transport class 0, TPKT                 p1.osi.session, p1.osi.cotp

Rules:

1. The bind is the session connect: CN{PConnect{open: MTA name + password}} answered by
   AC{PAccept{open: MTA name + password}} or RF{PRefuse{reason}} (session reason 2,
   rejection by the called SS-user).  The CN proposes session versions 1 and 2.
2. A transfer is one session activity: S-ACTIVITY-START whose identifier is the BER INTEGER
   of the transfer number, the MPDU's octets in S-DATA (no RTTR, no presentation), cut into
   checkpointSize x 1024 octet pieces with confirmed S-SYNC-MINOR between them, at most
   windowSize unconfirmed; S-ACTIVITY-END.  The receiver answers the activity end (AEA)
   only once its user called :meth:`X410Association.confirm_transfer`.
3. One transfer at a time per direction; only the holder of the turn (the session tokens)
   transfers.  In monologue the initiator keeps the turn; in two-way alternate it moves
   with S-TOKEN-PLEASE (user data: the priority, a BER INTEGER) and S-CONTROL-GIVE.
4. Release is S-RELEASE without user data (FN, DN), by the initiator holding the turn.
5. Our user's abort is S-U-ABORT without user data, or with AbortInformation
   ``temporaryProblem`` when asked; a protocol error from the peer aborts with
   AbortInformation ``protocolError`` and returns :class:`Aborted` (``by_peer=False``).
6. The states and their table are :mod:`p1.association.machine`'s, the events
   :mod:`p1.association.events`', as for the 1988 association, so that an MTA drives both
   alike; ``send_*`` raise LocalProtocolError only for our user's mistakes, and after an
   abort a call its state allowed does nothing (as P1Association's rule 7).

Public API::

    X410Settings(...) / settings_like(normal_settings, application_protocol=1)
    X410Association(role, settings)
        .state .closed .has_turn .busy .dialogue_mode .giving_turn .application_protocol
        send_bind(argument)                          initiator
        accept_bind(result) / refuse_bind(error)     responder, after BindRequested
        send_transfer(apdu) -> transfer id / confirm_transfer(transfer id)
        request_turn(priority) / give_turn()          two-way alternate only
        send_release() / abort(why, temporary=False)
        receive_data(data) / receive_eof() -> list[Event]; data_to_send(max_size=None) -> bytes
    (p1.association.inbound.ConnectSniffer tells an inbound connection's mode first)
    Events: BindRequested, BindAccepted, BindRefused, TransferReceived, TransferTooLong,
            TransferConfirmed, TurnRequested, TurnGiven, Released, Aborted
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from p1 import ber
from p1.association import x410_pdus as pdus
from p1.association.base import (
    TEMPORARILY_UNABLE,
    SessionAssociation,
    serves,
    session_refusal,
)
from p1.association.connection import AssociationSettings
from p1.association.events import (
    Aborted,
    BindAccepted,
    BindRefused,
    BindRequested,
    Released,
    TransferConfirmed,
    TransferReceived,
    TurnGiven,
    TurnRequested,
)
from p1.association.machine import Input, State
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult
from p1.association.pdus import activity_identifier
from p1.association.x410_pdus import AbortReason, RefuseReason
from p1.errors import DecodeError, EncodeError
from p1.osi import (
    DEFAULT_LIMITS,
    Event,
    LocalProtocolError,
    RemoteProtocolError,
    Role,
    StackLimits,
    cotp,
    session,
)
from p1.osi.rtse import DialogueMode
from p1.osi.rtse_transfer import OutboundTransfer, Piece
from p1.osi.x225 import spdu

__all__ = [
    "Aborted",
    "BindAccepted",
    "BindRefused",
    "BindRequested",
    "Released",
    "TransferConfirmed",
    "TransferReceived",
    "TurnGiven",
    "TurnRequested",
    "X410Association",
    "X410Settings",
    "settings_like",
]

_LAYER = "rts"
_VERSIONS = spdu.VERSION_1 | spdu.VERSION_2
# MPDU ::= CHOICE { [0] UserMPDU, [1] DeliveryReportMPDU, [2] ProbeMPDU }  (X.411 1984),
# the same tags as 1988's MTS-APDU { message [0], report [1], probe [2] }.
_MPDU_TAGS = frozenset(ber.context(n) for n in range(3))


@dataclass(frozen=True, slots=True, kw_only=True)
class X410Settings:
    """How this end of an X.410-1984 mode association behaves (both roles)."""

    dialogue_mode: DialogueMode = DialogueMode.MONOLOGUE
    """Initiator: the dialogue mode proposed (PConnect dialogueMode)."""
    accepted_dialogue_modes: frozenset[DialogueMode] = frozenset(DialogueMode)
    """Responder: modes it accepts; another is refused (unacceptableDialogueMode)."""
    checkpoint_size: int = 0
    """Initiator: checkpoint size proposed, in units of 1024 octets (0: none)."""
    window_size: int = 3
    """Initiator: window proposed (unconfirmed checkpoints at a time)."""
    application_protocol: int = pdus.APPLICATION_P1_1984
    """Initiator: the applicationProtocol sent (1: P1 1984; 12: P1 1988 in X.410 mode)."""
    accepted_application_protocols: frozenset[int] = frozenset(
        {pdus.APPLICATION_P1_1984, pdus.APPLICATION_P1_1988_X410}
    )
    """Responder: applicationProtocol values served; another is refused as a validation
    failure (RefuseReason has no better code)."""
    calling_tsap: bytes = b""
    called_tsap: bytes = b""
    calling_ssap: bytes = b""
    called_ssap: bytes = b""
    served_ssaps: frozenset[bytes] | None = None
    """Responder: the called session selectors it serves (None: any); a CN for another
    is refused with an RF, reason 129 "session selector unknown" (X.225 PI 50)."""
    limits: StackLimits = DEFAULT_LIMITS


def initiator_settings(
    normal: AssociationSettings, *, x410: bool, p1_1984: bool
) -> AssociationSettings | X410Settings:
    """An initiator's settings for the mode it calls in (X.419 7): ``normal`` itself in
    normal mode; else the X.410-1984 mode ones (no presentation selectors; the PConnect
    names applicationProtocol 1, P1 1984, or 12, 1988 P1 in that mode)."""
    if not x410:
        return normal
    application = pdus.APPLICATION_P1_1984 if p1_1984 else pdus.APPLICATION_P1_1988_X410
    return settings_like(normal, application_protocol=application)


def settings_like(
    normal: AssociationSettings, *, application_protocol: int = pdus.APPLICATION_P1_1984
) -> X410Settings:
    """The X.410-1984 mode settings that match ``normal``'s: dialogue modes, checkpoint
    and window, the transport and session selectors, the session selectors served
    (X.410-1984 mode has no presentation layer, so none of its selectors) and the
    limits; ``application_protocol`` for an initiator (1: P1 1984; 12: P1 1988 in
    X.410-1984 mode, X.419 7)."""
    return X410Settings(
        dialogue_mode=normal.dialogue_mode,
        accepted_dialogue_modes=normal.accepted_dialogue_modes,
        checkpoint_size=normal.checkpoint_size,
        window_size=normal.window_size,
        application_protocol=application_protocol,
        calling_tsap=normal.calling_tsap,
        called_tsap=normal.called_tsap,
        calling_ssap=normal.calling_ssap,
        called_ssap=normal.called_ssap,
        served_ssaps=normal.served_ssaps,
        limits=normal.limits,
    )


@dataclass(slots=True)
class _Agreed:
    dialogue_mode: DialogueMode = DialogueMode.MONOLOGUE
    checkpoint_size: int = 0
    window_size: int = 3
    application_protocol: int = pdus.APPLICATION_P1_1984


class X410Association(SessionAssociation):
    """One P1 association in X.410-1984 mode over one TCP connection (module docstring)."""

    MODE = "X.410-1984"
    _TABLE_LAYER = _LAYER
    _TRANSFER_LAYER = _LAYER
    _TURN_PLEASE = "turn please"
    _TURN_GIVE = "turn give"
    _SESSION_VERSIONS = _VERSIONS

    def __init__(self, role: Role, settings: X410Settings | None = None) -> None:
        self.settings = settings or X410Settings()
        super().__init__(
            role,
            self.settings.limits,
            calling_tsap=self.settings.calling_tsap,
            called_tsap=self.settings.called_tsap,
            calling_ssap=self.settings.calling_ssap,
            called_ssap=self.settings.called_ssap,
        )
        self._argument: MTABindArgument | None = None
        self._agreed = _Agreed()

    # --- state ----------------------------------------------------------------------

    @property
    def dialogue_mode(self) -> DialogueMode:
        """The dialogue mode of the PConnect (monologue until the bind is made)."""
        return self._agreed.dialogue_mode

    @property
    def application_protocol(self) -> int:
        """The PConnect's applicationProtocol (1 until the bind is made)."""
        return self._agreed.application_protocol

    # --- bind -------------------------------------------------------------------------

    def send_bind(self, argument: MTABindArgument) -> None:
        """Initiator: open the transport, then the session with PConnect carrying the bind."""
        if self.role is not Role.INITIATOR:
            raise LocalProtocolError("only the initiator binds", layer=_LAYER)
        after = self._move(Input.SEND_BIND)
        if after is None:
            return
        try:
            pdus.encode_bind_argument_1984(argument)
        except EncodeError as error:
            raise LocalProtocolError(str(error), layer=_LAYER) from None
        self._transport.send_connect()
        self._argument = argument
        self.state = after

    def _connect_data(self) -> bytes:
        argument = self._argument
        assert argument is not None
        settings = self.settings
        return pdus.encode_pconnect(
            pdus.PConnect(
                checkpoint_size=settings.checkpoint_size,
                window_size=settings.window_size,
                dialogue_mode=settings.dialogue_mode,
                open=pdus.encode_bind_argument_1984(argument),
                application_protocol=settings.application_protocol,
            )
        )

    def _on_connect_requested(self, event: session.ConnectRequested) -> list[Event]:
        self._expect(Input.RECV_BIND)
        if not serves(self.settings.served_ssaps, event.called_ssap):
            return self._refuse_session_address(event)
        _check_units(event.requirements, "CN proposes")
        pconnect = pdus.decode_pconnect(event.user_data)
        if pconnect.window_size < 1:
            raise RemoteProtocolError("windowSize 0: no checkpoint could be sent", layer=_LAYER)
        self._agreed = _Agreed(
            pconnect.dialogue_mode,
            pconnect.checkpoint_size,
            pconnect.window_size,
            pconnect.application_protocol or pdus.APPLICATION_P1_1984,
        )
        refusal = self._refusal(pconnect)
        if refusal is not None:
            self._send_refuse(refusal)
            return []
        assert pconnect.open is not None
        argument = pdus.decode_bind_argument_1984(pconnect.open)
        agreed = self._agreed
        return [
            BindRequested(
                argument=argument,
                dialogue_mode=agreed.dialogue_mode,
                checkpoint_size=agreed.checkpoint_size,
                window_size=agreed.window_size,
                calling_tsap=self._calling_tsap,
            )
        ]

    def _refusal(self, pconnect: pdus.PConnect) -> RefuseReason | None:
        """What the RTS itself refuses before its user sees the bind."""
        if pconnect.recover is not None:
            return RefuseReason.CANNOT_RECOVER  # we keep no checkpoints across connections
        if pconnect.dialogue_mode not in self.settings.accepted_dialogue_modes:
            return RefuseReason.UNACCEPTABLE_DIALOGUE_MODE
        if self._agreed.application_protocol not in self.settings.accepted_application_protocols:
            return RefuseReason.VALIDATION_FAILURE
        return None

    def _send_refuse(self, reason: RefuseReason) -> None:
        self._session.send_refuse(pdus.encode_prefuse(reason))
        self.state = self._next(Input.REFUSE_BIND)

    def accept_bind(self, result: MTABindResult) -> list[Event]:
        """Responder: accept with ``result`` (AC{PAccept}).  Does nothing once aborted."""
        after = self._move(Input.ACCEPT_BIND)
        if after is None:
            return []
        try:
            open_value = pdus.encode_bind_result_1984(result)
        except EncodeError as error:
            raise LocalProtocolError(str(error), layer=_LAYER) from None
        agreed = self._agreed
        data = pdus.encode_paccept(
            pdus.PAccept(
                checkpoint_size=agreed.checkpoint_size,
                window_size=agreed.window_size,
                open=open_value,
            )
        )
        self._session.send_accept(data)
        self.state = after
        return []

    def refuse_bind(self, error: MTABindError) -> None:
        """Responder: refuse (RF{PRefuse}); an authentication error is validationFailure.
        Does nothing once aborted."""
        after = self._move(Input.REFUSE_BIND)
        if after is None:
            return
        self._session.send_refuse(pdus.encode_prefuse(pdus.refuse_reason_of(error)))
        self.state = after

    def _on_connect_accepted(self, event: session.ConnectAccepted) -> list[Event]:
        paccept = pdus.decode_paccept(event.user_data)
        result = pdus.decode_bind_result_1984(paccept.open)
        _check_units(self._session.requirements, "AC selects")
        if not self.has_turn:
            raise RemoteProtocolError("AC keeps the turn on the responder's side", layer=_LAYER)
        if paccept.window_size < 1:
            raise RemoteProtocolError("windowSize 0: no checkpoint could be sent", layer=_LAYER)
        self._expect(Input.RECV_BIND_ACCEPTED)
        settings = self.settings
        self._agreed = _Agreed(
            settings.dialogue_mode,
            paccept.checkpoint_size,
            paccept.window_size,
            settings.application_protocol,
        )
        return [
            BindAccepted(
                result=result,
                dialogue_mode=settings.dialogue_mode,
                checkpoint_size=paccept.checkpoint_size,
                window_size=paccept.window_size,
            )
        ]

    def _on_connect_refused(self, event: session.ConnectRefused) -> list[Event]:
        self._expect(Input.RECV_BIND_REFUSED)
        if event.reason is not None and event.reason in spdu.PROVIDER_REFUSALS:
            return [BindRefused(error=None, why=session_refusal(event.reason))]
        try:
            reason = pdus.decode_prefuse(event.user_data)
        except DecodeError as problem:
            return [
                BindRefused(error=None, why=f"refused (session reason {event.reason}): {problem}")
            ]
        name = reason.name.lower() if isinstance(reason, RefuseReason) else str(reason)
        return [BindRefused(error=pdus.bind_error_of(reason), why=f"PRefuse {name}")]

    # --- transfers --------------------------------------------------------------------

    def send_transfer(self, apdu: bytes | memoryview) -> int:
        """Transfer one MPDU (an MTS-APDU); its transfer id, confirmed later."""
        self._check_transfer_allowed()
        after = self._move(Input.DATA_PHASE)
        ber.check_single_tlv(apdu, "MPDU")
        transfers = self._transfers
        transfer_id = transfers.next_id
        transfers.next_id += 1
        if after is None:
            return transfer_id
        agreed = self._agreed
        outbound = OutboundTransfer(transfer_id, apdu, agreed.checkpoint_size, agreed.window_size)
        self._session.send_activity_start(activity_identifier(transfer_id))
        transfers.outbound = outbound
        self.state = after
        self._advance()
        return transfer_id

    def _send_piece(self, piece: Piece) -> None:
        """S-DATA of the MPDU's octets as they are: no presentation or RTSE around them."""
        self._session.send_data(piece.data, prefix=piece.head)

    def _on_data(self, event: session.DataViewReceived) -> list[Event]:
        self._expect(Input.DATA_PHASE)
        inbound = self._transfers.inbound
        if inbound is None:
            raise RemoteProtocolError("S-DATA outside an activity", layer=_LAYER)
        inbound.add(event.user_data)
        return []

    def _on_activity_end(self, event: session.ActivityEndRequested) -> list[Event]:
        inbound = self._ended_inbound()
        if inbound.too_long:  # (the MPDU is not wrapped: its first octets are the kept ones)
            return self._received_too_long(inbound, inbound.prefix())
        apdu = bytes(inbound.octets())
        tlv = ber.read_single(apdu, "MPDU")
        if tlv.tag not in _MPDU_TAGS or not tlv.constructed:
            raise RemoteProtocolError(f"MPDU tagged {ber.tag_name(tlv.tag)}", layer=_LAYER)
        self._transfers.unconfirmed = inbound.transfer_id
        return [TransferReceived(transfer_id=inbound.transfer_id, apdu=apdu)]

    def _on_exception_reported(self, event: session.ExceptionReported) -> list[Event]:
        """An exception report: with no checkpoint to resume from, the RTS aborts."""
        reason = AbortReason.PROTOCOL_ERROR
        if not event.by_provider:
            temporary = event.reason == TEMPORARILY_UNABLE
            reason = (
                AbortReason.TEMPORARY_PROBLEM if temporary else AbortReason.LOCAL_SYSTEM_PROBLEM
            )
        return self._rts_abort(reason, f"exception reported (reason {event.reason})")

    # --- the turn ---------------------------------------------------------------------

    def _turn_please_data(self, priority: int) -> bytes:
        """X.410 Priority ::= INTEGER, as the S-TOKEN-PLEASE's user data."""
        return ber.tlv(ber.INTEGER, ber.int_contents(priority))

    def _turn_priority(self, user_data: bytes) -> int:
        if not user_data:
            return 0
        return ber.read_int(ber.read_single(user_data, "Priority"), "Priority")

    # --- release and abort ------------------------------------------------------------

    def send_release(self) -> None:
        """S-RELEASE (FN without user data), by the initiator holding the turn."""
        if self.role is not Role.INITIATOR:
            raise LocalProtocolError("only the initiator releases", layer=_LAYER)
        if self._transfers.outbound is not None or self._transfers.unconfirmed is not None:
            raise LocalProtocolError("cannot release during a transfer", layer=_LAYER)
        if not self.has_turn:
            raise LocalProtocolError("this end does not hold the turn", layer=_LAYER)
        after = self._move(Input.SEND_RELEASE)
        if after is None:
            return
        self._session.send_release()
        self.state = after

    def _on_release_requested(self, event: session.ReleaseRequested) -> list[Event]:
        if self.role is Role.INITIATOR:
            raise RemoteProtocolError("S-RELEASE from the responder", layer=_LAYER)
        after = self._next(Input.RECV_RELEASE, RemoteProtocolError)
        self._session.send_release_response()
        self.state = after
        return [Released(by_peer=True)]

    def abort(self, why: str = "aborted by the MTA", *, temporary: bool = False) -> list[Event]:
        """S-U-ABORT: no user data, or AbortInformation temporaryProblem (``temporary``)."""
        if self.state is State.CLOSED:
            return []
        data = pdus.encode_abort_information(AbortReason.TEMPORARY_PROBLEM) if temporary else b""
        self._send_abort(data)
        return [Aborted(by_peer=False, why=why)]

    def _rts_abort(self, reason: AbortReason, why: str) -> list[Event]:
        self._send_abort(pdus.encode_abort_information(reason))
        return [Aborted(by_peer=False, why=f"{_LAYER}: {why}")]

    def _upper_error(self, error: RemoteProtocolError | DecodeError) -> list[Event]:
        return self._rts_abort(AbortReason.PROTOCOL_ERROR, str(error))

    def _on_session_aborted(self, event: session.Aborted) -> list[Event]:
        why = f"session: {event.why}"
        if event.by_peer and event.user_data:
            why += f" ({_describe_abort(event.user_data)})"
        return self._on_gone(by_peer=event.by_peer, why=why)

    # --- bytes in and out -------------------------------------------------------------

    def _on_transport_connect(self, event: cotp.ConnectRequested) -> list[Event]:
        self._expect(Input.RECV_TRANSPORT_CONNECT)
        self._calling_tsap = event.calling_tsap
        if not self._transport.closed:
            self._transport.send_accept()
        return []


_Handler = Callable[[X410Association, Any], list[Event]]
_TRANSPORT_HANDLERS: dict[type[Event], _Handler] = {
    cotp.TsduReceived: X410Association._on_tsdu,
    cotp.ConnectRequested: X410Association._on_transport_connect,
    cotp.Connected: X410Association._on_transport_connected,
    cotp.Disconnected: X410Association._on_transport_gone,
}
_SESSION_HANDLERS: dict[type[Event], _Handler] = {
    session.ConnectRequested: X410Association._on_connect_requested,
    session.ConnectAccepted: X410Association._on_connect_accepted,
    session.ConnectRefused: X410Association._on_connect_refused,
    session.ActivityStarted: X410Association._on_activity_started,
    session.DataViewReceived: X410Association._on_data,
    session.MinorSyncRequested: X410Association._on_minor_sync,
    session.MinorSyncConfirmed: X410Association._on_minor_sync_confirmed,
    session.ActivityEndRequested: X410Association._on_activity_end,
    session.ActivityEnded: X410Association._on_activity_ended,
    session.ActivityDiscarded: X410Association._on_activity_discarded,
    session.ActivityInterrupted: X410Association._on_activity_interrupted,
    session.ExceptionReported: X410Association._on_exception_reported,
    session.TokensRequested: X410Association._on_tokens_requested,
    session.ControlGiven: X410Association._on_control_given,
    session.ReleaseRequested: X410Association._on_release_requested,
    session.Released: X410Association._on_released,
    session.Aborted: X410Association._on_session_aborted,
}
X410Association._TRANSPORT_HANDLERS = _TRANSPORT_HANDLERS
X410Association._SESSION_HANDLERS = _SESSION_HANDLERS


def _check_units(requirements: int, what: str) -> None:
    """The RTS needs half-duplex, minor synchronize, activity management and exceptions."""
    if requirements & session.RTSE_REQUIREMENTS != session.RTSE_REQUIREMENTS:
        raise RemoteProtocolError(
            f"{what} session functional units {requirements:#06x}, not the RTS's "
            f"{session.RTSE_REQUIREMENTS:#06x}",
            layer=_LAYER,
        )


def _describe_abort(user_data: bytes) -> str:
    """The peer's AbortInformation, in words (what cannot be read is said so)."""
    try:
        reason = pdus.decode_abort_information(user_data)
    except DecodeError as problem:
        return f"unreadable AbortInformation: {problem}"
    if reason is None:
        return "AbortInformation without a reason"
    if reason in AbortReason._value2member_map_:
        return f"abortReason {AbortReason(reason).name.lower()}"
    return f"abortReason {reason}"
