"""A P1 association between two MTAs: the whole upper-layer stack composed (X.419 clause 7).

One object per TCP connection, initiator or responder, sans-I/O: :meth:`receive_data` takes
the bytes TCP delivered and returns events; ``send_*`` methods queue bytes that
:meth:`data_to_send` hands back.  Inside, the layers are pumped in order::

    MTA-BIND / MTS-APDU          X.411, X.419  (p1.association.mtabind, p1.association.transfer)
    RTSE normal mode             X.228         (p1.osi.rtse, p1.osi.rtse_transfer)
    ACSE                         X.227         (p1.osi.acse)
    presentation kernel          X.226         (p1.osi.presentation)
    session version 2            X.225         (p1.osi.session)
    transport class 0 + TPKT     X.224, RFC 1006 (p1.osi.cotp, p1.osi.tpkt)

The PDUs across those layers are built and read by :mod:`p1.association.pdus`; the states
and transitions are :mod:`p1.association.machine`'s; the events :mod:`p1.association.events`'.

Rules:

1. The bind is A-ASSOCIATE carrying RT-OPEN carrying MTA-BIND: CN{CP{AARQ{RTORQ{[16] arg}}}}
   answered by AC{CPA{AARE{RTOAC{[17] result}}}} or RF{CPR{AARE{RTORJ{[18] error}}}}.  An
   AARQ for another application context is rejected by ACSE's user, before RTSE sees it.
2. A transfer is one session activity; the receiver gets :class:`TransferReceived` at the
   activity end and the sender's :class:`TransferConfirmed` comes only after the receiver's
   user called :meth:`confirm_transfer`, i.e. once the message is safely stored.  A transfer
   the sender discards or interrupts is dropped; one longer than ``max_message_size`` is
   read to its end, its first octets kept, and given as :class:`TransferTooLong`, confirmed
   the same way; one the receiver reports an exception against is not recovered on
   the same association: it is aborted.
3. One transfer at a time per direction; only the side holding the turn (the session data
   and activity tokens) may transfer.  The turn moves only in two-way alternate mode; in
   monologue the initiator keeps it.  Only the initiator releases (RT-CLOSE), holding the turn.
4. Any malformed PDU from the peer aborts the association with the abort its layer
   prescribes (ER, AB, ARP, or ABRT carrying RTAB) and returns :class:`Aborted`.
5. :meth:`receive_data` and :meth:`receive_eof` only return events, whatever the peer
   sent.  Once CLOSED they ignore what they are given; when a read ends in a TPDU that
   closes the transport, what the layers above answered to the earlier TPDUs of that read
   is not sent (the transport's ER is).
6. A ``send_*`` that raises LocalProtocolError changes nothing.  It raises only for our
   user's own mistake, never because of what the peer sent.
7. An association can end while its user is still answering the events of one read: a
   BindRequested or TransferReceived followed, in the same read, by the peer's abort, a
   malformed PDU or the end of the connection.  So once an abort (the peer's, ours, the
   transport's) has ended it, a ``send_*`` that the state it ended in allowed does nothing:
   accept_bind, refuse_bind and confirm_transfer answer an association that is gone;
   send_transfer returns an id that will never be confirmed.  The Aborted event that says
   how it ended is among those already returned.
8. Recovery (X.228): an initiator binds with ``identifier``, the session connection
   identifier its CN carries; after an abnormal end cut a transfer off, it may open the
   next association with ``recover`` (RTORQ connectionDataRQ naming the connection lost,
   no MTA-bind) and, once :class:`BindAccepted` says ``recovered``, resume the transfer
   from its :attr:`resume_point` (:meth:`resume_transfer`).  A peer that refuses the
   recovery gives :class:`BindRefused`; one that binds instead gives a BindAccepted not
   ``recovered``: the transfer then starts afresh.  A responder gives
   :class:`RecoveryRequested` for such an RT-OPEN; its user accepts it (with the
   :class:`~p1.osi.rtse_recovery.Resumption` of the peer it recovers) or refuses it.
   An S-ACTIVITY-RESUME may also follow an MTA-bind, its user having given the bound
   peer's Resumption to :meth:`accept_bind`.

Public API::

    AssociationSettings(...)
    P1Association(role, settings)
        .state .closed .has_turn .busy .dialogue_mode .giving_turn
        send_bind(argument, *, identifier=None, recover=None)   initiator: connect and bind
        accept_bind(result, *, resumption=None) -> [Aborted] / refuse_bind(error)
                                             responder, after BindRequested
        accept_recovery(resumption) -> [Aborted] / refuse_recovery()   after RecoveryRequested
        send_transfer(apdu) -> transfer id   confirm_transfer(transfer id)
        resume_transfer(apdu, resume_point) -> transfer id
        .interrupted_transfer / .resume_point          what an abnormal end left
        request_turn(priority) / give_turn()           two-way alternate only
        send_release() / abort(why)                    release: the initiator only
        receive_data(data) -> list[Event] / receive_eof() -> list[Event]
        data_to_send(max_size=None) -> bytes         all queued, or its first max_size octets
    Events: BindRequested, RecoveryRequested, BindAccepted, BindRefused, TransferReceived,
            TransferTooLong, TransferResumed, TransferConfirmed, TurnRequested, TurnGiven,
            Released, Aborted, ConnectionRefused
    State, MTS_TRANSFER_CONTEXT
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from p1.association.base import (
    TEMPORARILY_UNABLE,
    SessionAssociation,
    serves,
    session_refusal,
)
from p1.association.events import (
    Aborted,
    BindAccepted,
    BindRefused,
    BindRequested,
    ConnectionRefused,
    RecoveryRequested,
    Released,
    TransferConfirmed,
    TransferReceived,
    TransferResumed,
    TransferTooLong,
    TurnGiven,
    TurnRequested,
)
from p1.association.machine import Input, State
from p1.association.mtabind import (
    MTABindArgument,
    MTABindError,
    MTABindResult,
    decode_bind_argument,
    decode_bind_error,
    decode_bind_result,
    encode_bind_argument,
    encode_bind_result,
    unwrap_bind_argument,
    unwrap_bind_error,
    unwrap_bind_result,
    wrap_bind_argument,
    wrap_bind_result,
)
from p1.association.pdus import (
    MTS_TRANSFER_CONTEXT,
    SUPPORTED_SYNTAXES,
    abort_data,
    abort_reason,
    accept_data,
    acse_value,
    activity_identifier,
    bind_rejection,
    check_rtse_context,
    connect_data,
    context_rejection,
    describe_rejection,
    piece_prefix,
    plain_apdu,
    recovery_rejection,
    refuse_data,
    release_request_data,
    release_response_data,
    rtse_value,
    transfer_head,
    turn_please_data,
    turn_priority,
)
from p1.association.transfer import apdu_prefix, decode_transfer
from p1.errors import DecodeError
from p1.osi import (
    DEFAULT_LIMITS,
    Event,
    LocalProtocolError,
    RemoteProtocolError,
    Role,
    StackLimits,
    acse,
    cotp,
    presentation,
    rtse,
    session,
    tpdu,
)
from p1.osi.presentation import MTSE_CONTEXT
from p1.osi.rtse_recovery import Resumption, SessionConnectionId, decode_session_connection_id
from p1.osi.rtse_transfer import OutboundTransfer, Piece
from p1.osi.selectors import format_selector
from p1.osi.x225 import spdu

__all__ = [
    "MTS_TRANSFER_CONTEXT",
    "Aborted",
    "AssociationSettings",
    "BindAccepted",
    "BindRefused",
    "BindRequested",
    "ConnectionRefused",
    "P1Association",
    "RecoveryRequested",
    "Released",
    "State",
    "TransferConfirmed",
    "TransferReceived",
    "TransferResumed",
    "TransferTooLong",
    "TurnGiven",
    "TurnRequested",
]


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
    """Initiator: our TSAP selector, the CR's calling TSAP-ID (X.224 13.3.4 a, 0xC1);
    empty: left out."""
    called_tsap: bytes = b""
    """Initiator: the peer's TSAP selector, the CR's called TSAP-ID (0xC2)."""
    calling_ssap: bytes = b""
    """Initiator: our session selector, the CN's calling SSAP identifier (X.225, PI 51)."""
    called_ssap: bytes = b""
    """Initiator: the peer's session selector, the CN's called SSAP identifier (PI 52)."""
    calling_psap: bytes = b""
    """Initiator: our presentation selector, the CP's calling-presentation-selector
    (X.226 CP-type normal-mode-parameters [1])."""
    called_psap: bytes = b""
    """Initiator: the peer's presentation selector, called-presentation-selector [2]."""
    served_tsaps: frozenset[bytes] | None = None
    """Responder: the called TSAP selectors it serves (b"": a CR without one); a CR for
    another is refused with a DR, reason "address unknown".  None: every one."""
    served_ssaps: frozenset[bytes] | None = None
    """Responder: the called session selectors it serves (b"": a CN without PI 52); a
    CN for another is refused with an RF, reason 129 "session selector unknown" (X.225
    PI 50).  None: every one."""
    served_psaps: frozenset[bytes] | None = None
    """Responder: the called presentation selectors it serves (b"": a CP without one); a
    CP for another is refused with an RF{CPR}, provider-reason
    called-presentation-address-unknown (X.226 8.2).  None: every one."""
    limits: StackLimits = DEFAULT_LIMITS


@dataclass(slots=True)
class _Negotiated:
    dialogue_mode: rtse.DialogueMode = rtse.DialogueMode.MONOLOGUE
    checkpoint_size: int = 0
    window_size: int = 3


class P1Association(SessionAssociation):
    """One P1 association over one TCP connection (see the module docstring)."""

    MODE = "normal"
    _TABLE_LAYER = "p1"
    _TRANSFER_LAYER = "rtse"
    _TURN_PLEASE = "RT-TURN-PLEASE"
    _TURN_GIVE = "RT-TURN-GIVE"

    def __init__(self, role: Role, settings: AssociationSettings | None = None) -> None:
        self.settings = settings or AssociationSettings()
        super().__init__(
            role,
            self.settings.limits,
            calling_tsap=self.settings.calling_tsap,
            called_tsap=self.settings.called_tsap,
            calling_ssap=self.settings.calling_ssap,
            called_ssap=self.settings.called_ssap,
        )
        # (DT user data comes as views: one RTTR is read from it where it lies;
        # p1.osi.presentation and p1.osi.rtse read views too.)
        self._bind_argument: MTABindArgument | None = None
        self._recover: SessionConnectionId | None = None  # initiator: the connection recovered
        self._called_psap: bytes | None = None  # responder: the CP's, echoed in the CPA
        self._agreed = _Negotiated()
        self._context_results: tuple[presentation.ContextResult, ...] = ()

    # --- state ----------------------------------------------------------------------

    @property
    def dialogue_mode(self) -> rtse.DialogueMode:
        """The dialogue mode agreed by RT-OPEN (X.228 7.3, RTORQ dialogueMode); monologue
        until the bind is made."""
        return self._agreed.dialogue_mode

    # --- bind -------------------------------------------------------------------------

    def send_bind(
        self,
        argument: MTABindArgument,
        *,
        identifier: SessionConnectionId | None = None,
        recover: SessionConnectionId | None = None,
    ) -> None:
        """Initiator: open the transport, then A-ASSOCIATE + RT-OPEN carrying MTA-BIND.

        ``identifier``: the session connection identifier the CN carries (X.225 PGI 1),
        which names this connection should it be lost in the middle of a transfer.
        ``recover``: instead of binding, recover the association of that session
        connection (RTORQ connectionDataRQ ``recover``, X.228): ``argument`` is then not
        sent."""
        if self.role is not Role.INITIATOR:
            raise LocalProtocolError("only the initiator binds", layer="p1")
        after = self._move(Input.SEND_BIND)
        if after is None:
            return
        self._transport.send_connect()
        self._bind_argument = argument
        self._identifier = identifier
        self._recover = recover
        self.state = after

    def accept_bind(
        self, result: MTABindResult, *, resumption: Resumption | None = None
    ) -> list[Event]:
        """Responder: accept the bind with ``result`` (AC{CPA{AARE{RTOAC{[17] result}}}}).

        Returns the events of the association's end when the peer's CN leaves no room for
        the answer: an AC in session version 1 carries 512 octets, which the CPA answering
        a CP of dozens of presentation contexts outgrows; the association is aborted (ARP)
        instead.  Does nothing when the association was aborted while its user decided
        (rule 7).  ``resumption``: where the bound peer's partial transfers are, for an
        S-ACTIVITY-RESUME (None: every resumption is refused)."""
        after = self._move(Input.ACCEPT_BIND)
        if after is None:
            return []
        self._resumption = resumption
        return self._accept(after, open=wrap_bind_result(encode_bind_result(result)))

    def accept_recovery(self, resumption: Resumption) -> list[Event]:
        """Responder, after RecoveryRequested: the association recovers the one lost
        (RTOAC connectionDataAC ``recover``, naming it again); S-ACTIVITY-RESUME finds
        what was kept in ``resumption``.  As :meth:`accept_bind` otherwise."""
        after = self._move(Input.ACCEPT_RECOVERY)
        if after is None:
            return []
        assert self._recover is not None  # (the RTORQ named it)
        self._resumption = resumption
        return self._accept(after, recover=self._recover.encode())

    def refuse_recovery(self) -> None:
        """Responder, after RecoveryRequested: nothing to recover (RF{CPR{AARE
        rejected-permanent{RTORJ}}}, with no MTA-bind error since there was no bind); the
        peer binds afresh."""
        self._refuse(recovery_rejection())

    def _accept(
        self, after: State, *, open: bytes | None = None, recover: bytes | None = None
    ) -> list[Event]:
        rtoac = rtse.Rtoac(
            checkpoint_size=self._agreed.checkpoint_size,
            window_size=self._agreed.window_size,
            open=open,
            recover=recover,
        )
        data = accept_data(self._context_results, rtoac, self._called_psap)
        room = self._session.accept_room
        if len(data) > room:
            why = (
                f"the CN leaves {room} octets for the AC's user data; the answer needs {len(data)}"
            )
            return self._upper_error(RemoteProtocolError(why, layer="session"))
        self._session.send_accept(data)
        self.state = after
        return []

    def refuse_bind(self, error: MTABindError) -> None:
        """Responder: refuse the bind (RF{CPR{AARE rejected{RTORJ{[18] error}}}}).  Does
        nothing when the association was aborted while its user decided (rule 7)."""
        self._refuse(bind_rejection(error))

    def _refuse(self, aare: acse.Aare) -> None:
        after = self._move(Input.REFUSE_BIND)
        if after is None:
            return
        self._session.send_refuse(refuse_data(self._context_results, aare))
        self.state = after

    def _connect_data(self) -> bytes:
        argument = self._bind_argument
        assert argument is not None
        settings, recover = self.settings, self._recover
        rtorq = rtse.Rtorq(
            checkpoint_size=settings.checkpoint_size,
            window_size=settings.window_size,
            dialogue_mode=settings.dialogue_mode,
            open=None if recover else wrap_bind_argument(encode_bind_argument(argument)),
            recover=recover.encode() if recover else None,
        )
        return connect_data(rtorq, settings.calling_psap, settings.called_psap)

    def _on_connect_requested(self, event: session.ConnectRequested) -> list[Event]:
        self._expect(Input.RECV_BIND)
        if not serves(self.settings.served_ssaps, event.called_ssap):
            return self._refuse_session_address(event)
        _check_units(event.requirements, "CN proposes")
        cp = presentation.decode_cp(event.user_data)
        self._called_psap = cp.called_selector
        if not serves(self.settings.served_psaps, cp.called_selector or b""):
            return self._refuse_presentation_address(cp)
        self._context_results = presentation.negotiate(cp.contexts, SUPPORTED_SYNTAXES)
        aarq = acse_value(cp.user_data, acse.Aarq)
        if aarq.application_context != MTS_TRANSFER_CONTEXT:
            self._refuse(context_rejection())  # refused before its user is asked
            return []
        rtorq = rtse_value(aarq.user_information, rtse.Rtorq)
        self._identifier = SessionConnectionId.of(event.connection_identifier)
        if rtorq.dialogue_mode not in self.settings.accepted_dialogue_modes:
            self._refuse(bind_rejection(MTABindError.UNACCEPTABLE_DIALOGUE_MODE))
            return []
        if rtorq.recover is not None:
            return self._recovery_requested(rtorq, rtorq.recover)
        argument = _bind_argument_of(rtorq)
        self._agreed = _negotiated(rtorq.dialogue_mode, rtorq.checkpoint_size, rtorq.window_size)
        return [
            BindRequested(
                argument=argument,
                dialogue_mode=rtorq.dialogue_mode,
                checkpoint_size=rtorq.checkpoint_size,
                window_size=rtorq.window_size,
                calling_tsap=self._calling_tsap,
                connection=self._identifier,
            )
        ]

    def _refuse_presentation_address(self, cp: presentation.ConnectPpdu) -> list[Event]:
        """S-CONNECT refuse from the presentation provider: CPR, provider-reason
        called-presentation-address-unknown (X.226 CPR-PPDU), and no ACSE or RTSE
        answer, since no user here was offered the connection."""
        reason = presentation.ProviderReason.CALLED_PRESENTATION_ADDRESS_UNKNOWN
        self._session.send_refuse(
            presentation.encode_cpr(presentation.RefusePpdu(provider_reason=reason))
        )
        self.state = self._next(Input.REFUSE_BIND)
        called = format_selector(cp.called_selector) if cp.called_selector else "none"
        return [
            ConnectionRefused(
                by_peer=False,
                why=f"presentation: called PSEL {called!r} is not served here; "
                "CPR called-presentation-address-unknown",
                layer="presentation",
                called=cp.called_selector or b"",
                calling=cp.calling_selector or b"",
            )
        ]

    def _recovery_requested(self, rtorq: rtse.Rtorq, recover: bytes) -> list[Event]:
        """RT-OPEN ``recover`` (X.228): the user decides whether it has anything of
        that session connection's to go on with."""
        identifier = decode_session_connection_id(recover)
        self._recover = identifier
        self._agreed = _negotiated(rtorq.dialogue_mode, rtorq.checkpoint_size, rtorq.window_size)
        return [
            RecoveryRequested(
                identifier=identifier,
                dialogue_mode=rtorq.dialogue_mode,
                checkpoint_size=rtorq.checkpoint_size,
                window_size=rtorq.window_size,
                calling_tsap=self._calling_tsap,
                connection=self._identifier,
            )
        ]

    def _on_connect_accepted(self, event: session.ConnectAccepted) -> list[Event]:
        cpa = presentation.decode_cpa(event.user_data)
        aare = acse_value(cpa.user_data, acse.Aare)
        if aare.result != acse.ACCEPTED:
            raise RemoteProtocolError("AC carries an AARE that is not accepted", layer="acse")
        rtoac = rtse_value(aare.user_information, rtse.Rtoac)
        # Our RT-OPEN recover is answered by RTOAC recover (or open without user data);
        # an MTA-bind result instead says the peer bound us afresh.
        recovered = self._recover is not None and (rtoac.recover is not None or not rtoac.open)
        if rtoac.open is None and not recovered:
            raise RemoteProtocolError("RTOAC without the MTA-bind result", layer="rtse")
        result = (
            MTABindResult()
            if rtoac.open is None
            else decode_bind_result(unwrap_bind_result(rtoac.open))
        )
        self._check_session_agreed()
        self._expect(Input.RECV_BIND_ACCEPTED)
        mode = self.settings.dialogue_mode
        self._agreed = _negotiated(mode, rtoac.checkpoint_size, rtoac.window_size)
        return [
            BindAccepted(
                result=result,
                dialogue_mode=mode,
                checkpoint_size=rtoac.checkpoint_size,
                window_size=rtoac.window_size,
                recovered=recovered,
            )
        ]

    def _check_session_agreed(self) -> None:
        """RTSE runs on half-duplex, minor synchronize, activity management and exceptions
        (X.228's use of the session service), and our RT-OPEN gave the initial turn to the
        association-initiator (every token on our side, PI 26): an AC that selects fewer
        units, or keeps a token on the responder's side, leaves an association that can
        never transfer."""
        _check_units(self._session.requirements, "AC selects")
        if not self.has_turn:
            raise RemoteProtocolError(
                "AC keeps the initial turn on the responder's side", layer="rtse"
            )

    def _on_connect_refused(self, event: session.ConnectRefused) -> list[Event]:
        self._expect(Input.RECV_BIND_REFUSED)
        if event.reason is not None and event.reason in spdu.PROVIDER_REFUSALS:
            return [BindRefused(error=None, why=session_refusal(event.reason))]
        try:
            cpr = presentation.decode_cpr(event.user_data)
            if cpr.provider_reason is not None:
                return [BindRefused(error=None, why=_presentation_refusal(cpr.provider_reason))]
            aare = acse_value(cpr.user_data, acse.Aare)
            if not aare.user_information:  # rejected by ACSE's user: no RT-OPEN answer
                return [BindRefused(error=None, why=describe_rejection(aare))]
            rtorj = rtse_value(aare.user_information, rtse.Rtorj)
            if rtorj.user_data is None:
                return [BindRefused(error=None, why="refused without an MTA-bind error")]
            error = decode_bind_error(unwrap_bind_error(rtorj.user_data))
        except (DecodeError, RemoteProtocolError) as problem:
            return [
                BindRefused(error=None, why=f"refused (session reason {event.reason}): {problem}")
            ]
        return [BindRefused(error=error, why=error.name.lower().replace("_", "-"))]

    # --- transfers (RT-TRANSFER, X.228 7.5) -------------------------------------------

    def send_transfer(self, apdu: bytes | memoryview) -> int:
        """RT-TRANSFER request of one MTS-APDU; returns its transfer id (one that is never
        confirmed when the association was aborted meanwhile, rule 7)."""
        self._check_transfer_allowed()
        after = self._move(Input.DATA_PHASE)
        head = transfer_head(apdu)  # (EncodeError for what is not one BER value)
        transfers = self._transfers
        transfer_id = transfers.next_id
        if after is None:
            transfers.next_id += 1
            return transfer_id
        outbound = OutboundTransfer(
            transfer_id,
            apdu,
            self._agreed.checkpoint_size,
            self._agreed.window_size,
            head=head,
        )
        activity = activity_identifier(transfer_id)
        self._session.send_activity_start(activity)
        transfers.next_id += 1
        transfers.outbound = outbound
        transfers.outbound_activity = activity
        transfers.resumed_from = None
        self.state = after
        self._advance()
        return transfer_id

    def _transfer_head(self, apdu: bytes | memoryview) -> bytes:
        return transfer_head(apdu)

    @property
    def _checkpointing(self) -> tuple[int, int]:
        return self._agreed.checkpoint_size, self._agreed.window_size

    def _abort_unrecognized(self, why: str) -> list[Event]:
        """RTSE's abort, abortReason unrecognized-activity (X.228 RTAB): the peer's
        S-ACTIVITY-RESUME names a transfer this end kept nothing of."""
        return self._rtse_abort(rtse.AbortReason.UNRECOGNIZED_ACTIVITY, f"rtse: {why}")

    def _send_piece(self, piece: Piece) -> None:
        """P-DATA{RTTR{head + data}}: the headers are built alone and data, a view of the
        MTS-APDU, is first copied when the transport's TPKTs are joined."""
        prefix = piece_prefix(len(piece.head) + len(piece.data))
        self._session.send_data(piece.data, prefix=prefix + piece.head)

    def _on_data(self, event: session.DataViewReceived) -> list[Event]:
        self._expect(Input.DATA_PHASE)
        inbound = self._transfers.inbound
        if inbound is None:
            raise RemoteProtocolError("P-DATA outside an activity", layer="rtse")
        single = presentation.decode_pdv_view(event.user_data)
        if single is not None:  # the usual P-DATA: one RTTR, read without copying it
            context_id, value = single
            check_rtse_context(context_id)
            octets = rtse.decode_rttr_view(value)
            inbound.add(rtse.decode_rttr(value) if octets is None else octets)
            return []
        for pdv in presentation.decode_user_data(event.user_data):
            check_rtse_context(pdv.context_id)
            inbound.add(rtse.decode_rttr(pdv.value))
        return []

    def _on_activity_end(self, event: session.ActivityEndRequested) -> list[Event]:
        inbound = self._ended_inbound()
        if inbound.too_long:
            return self._received_too_long(inbound, _apdu_prefix(inbound.prefix()))
        apdu = plain_apdu(inbound)
        if apdu is None:
            transfer = decode_transfer(inbound.octets())
            if transfer.indirect_reference not in (None, MTSE_CONTEXT):
                raise RemoteProtocolError(
                    f"transfer labelled with context {transfer.indirect_reference}", layer="rtse"
                )
            apdu = transfer.apdu
        self._transfers.unconfirmed = inbound.transfer_id
        return [TransferReceived(transfer_id=inbound.transfer_id, apdu=apdu)]

    def _on_exception_reported(self, event: session.ExceptionReported) -> list[Event]:
        """S-U-EXCEPTION-REPORT or S-P-EXCEPTION-REPORT indication (X.225 7.27-7.28): the
        receiver cannot go on.  With no checkpoint to resume the transfer from, RTSE gives
        up: RTAB (X.228 RT-P-ABORT); the transfer stays unconfirmed for its sender to retry."""
        who = "the peer's session provider" if event.by_provider else "the peer"
        why = f"rtse: exception reported by {who} (reason {event.reason})"
        return self._rtse_abort(_exception_abort_reason(event), why)

    # --- the turn (X.228 7.6, 7.7) ----------------------------------------------------

    def _turn_please_data(self, priority: int) -> bytes:
        """RT-TURN-PLEASE: P-DATA{RTTP} with ``priority``, as the S-TOKEN-PLEASE's user
        data (X.228 7.6)."""
        return turn_please_data(priority)

    def _turn_priority(self, user_data: bytes) -> int:
        """The RTTP's priority (X.228 7.6)."""
        return turn_priority(user_data)

    # --- release and abort ------------------------------------------------------------

    def send_release(self) -> None:
        """RT-CLOSE request: A-RELEASE (FN{RLRQ}), by the association-initiator holding the
        turn (X.228 7.4)."""
        if self.role is not Role.INITIATOR:
            raise LocalProtocolError("only the association-initiator releases", layer="rtse")
        if self._transfers.outbound is not None or self._transfers.unconfirmed is not None:
            raise LocalProtocolError("cannot release during a transfer", layer="p1")
        if not self.has_turn:
            raise LocalProtocolError("this end does not hold the turn", layer="rtse")
        after = self._move(Input.SEND_RELEASE)
        if after is None:
            return
        self._session.send_release(release_request_data())
        self.state = after

    def _on_release_requested(self, event: session.ReleaseRequested) -> list[Event]:
        if self.role is Role.INITIATOR:
            raise RemoteProtocolError(
                "S-RELEASE from the association-responder: RT-CLOSE is the initiator's",
                layer="rtse",
            )
        after = self._next(Input.RECV_RELEASE, RemoteProtocolError)
        acse_value(presentation.decode_user_data(event.user_data), acse.Rlrq)
        self._session.send_release_response(release_response_data())
        self.state = after
        return [Released(by_peer=True)]

    def abort(self, why: str = "aborted by the MTA", *, temporary: bool = False) -> list[Event]:
        """RT-U-ABORT: AB{ARU{ABRT{RTAB}}}; the adapter then writes and closes.

        ``temporary``: this system cannot go on for now (its store is full, say), so
        the RTAB's abortReason is temporary-problem (X.228) instead of user-error
        and the peer tries again later."""
        if self.state is State.CLOSED:
            return []
        reason = rtse.AbortReason.TEMPORARY_PROBLEM if temporary else rtse.AbortReason.USER_ERROR
        self._send_abort(abort_data(reason), recoverable=True)
        return [Aborted(by_peer=False, why=why)]

    def _rtse_abort(self, reason: rtse.AbortReason, why: str) -> list[Event]:
        """RTSE's own abort (ABRT{RTAB ``reason``}), for the peer's error or a lost transfer."""
        self._send_abort(abort_data(reason))
        return [Aborted(by_peer=False, why=why)]

    def _upper_error(self, error: RemoteProtocolError | DecodeError) -> list[Event]:
        """The peer broke a rule above the session: abort with the abort of that layer."""
        why = str(error)
        if self.state in (State.AWAITING_BIND, State.BIND_PENDING) and self.role is Role.RESPONDER:
            # No presentation connection yet: presentation's own abort (X.226 ARP).
            self._session.send_abort(presentation.encode_arp(presentation.ARP_PROTOCOL_ERROR))
            self._close()
            return [Aborted(by_peer=False, why=why)]
        return self._rtse_abort(rtse.AbortReason.PROTOCOL_ERROR, why)

    def _on_session_aborted(self, event: session.Aborted) -> list[Event]:
        """S-U-ABORT or S-P-ABORT; the peer's RT-U-ABORT or RTSE abort says its reason
        (X.228 RTAB abortReason: temporary-problem means try again later)."""
        why = f"session: {event.why}"
        reason = abort_reason(event.user_data) if event.by_peer and event.user_data else None
        named = None if reason is None else reason.name.lower().replace("_", "-")
        if named is not None:
            why = f"{why} ({named})"
        return self._on_gone(by_peer=event.by_peer, why=why, reason=named)

    # --- bytes in and out -------------------------------------------------------------

    def _on_transport_connect(self, event: cotp.ConnectRequested) -> list[Event]:
        self._expect(Input.RECV_TRANSPORT_CONNECT)
        self._calling_tsap = event.calling_tsap
        if self._transport.closed:  # (a bad TPDU after the CR, in the same read)
            return []
        served = self.settings.served_tsaps
        if served is not None and event.called_tsap not in served:
            return self._refuse_transport(event)
        self._transport.send_accept()
        return []

    def _refuse_transport(self, event: cotp.ConnectRequested) -> list[Event]:
        """T-DISCONNECT request for a TSAP we do not serve: DR "address unknown" (X.224
        13.5.3 d, a reason class 0 may give), as a product routing by TSEL answers."""
        self._transport.send_refuse(tpdu.REASON_ADDRESS_UNKNOWN)
        self._close()
        called = format_selector(event.called_tsap) if event.called_tsap else "none"
        return [
            ConnectionRefused(
                by_peer=False,
                why=f"transport: called TSEL {called!r} is not served here; DR address unknown",
                layer="transport",
                called=event.called_tsap,
                calling=event.calling_tsap,
            )
        ]


def _presentation_refusal(reason: int) -> str:
    """Why the peer's presentation provider refused (X.226 CPR provider-reason)."""
    try:
        name = presentation.ProviderReason(reason).name.lower().replace("_", "-")
    except ValueError:
        name = f"provider-reason {reason}"
    return f"refused by the peer's presentation provider: {name}"


# Events of the layers below by type, to the association's handler (a handler's argument is
# an instance of its key, which the dict type cannot say).
_Handler = Callable[[P1Association, Any], list[Event]]
_TRANSPORT_HANDLERS: dict[type[Event], _Handler] = {
    cotp.TsduReceived: P1Association._on_tsdu,
    cotp.ConnectRequested: P1Association._on_transport_connect,
    cotp.Connected: P1Association._on_transport_connected,
    cotp.Disconnected: P1Association._on_transport_gone,
}
_SESSION_HANDLERS: dict[type[Event], _Handler] = {
    session.ConnectRequested: P1Association._on_connect_requested,
    session.ConnectAccepted: P1Association._on_connect_accepted,
    session.ConnectRefused: P1Association._on_connect_refused,
    session.ActivityStarted: P1Association._on_activity_started,
    session.ActivityResumed: P1Association._on_activity_resumed,
    session.DataViewReceived: P1Association._on_data,
    session.MinorSyncRequested: P1Association._on_minor_sync,
    session.MinorSyncConfirmed: P1Association._on_minor_sync_confirmed,
    session.ActivityEndRequested: P1Association._on_activity_end,
    session.ActivityEnded: P1Association._on_activity_ended,
    session.ActivityDiscarded: P1Association._on_activity_discarded,
    session.ActivityInterrupted: P1Association._on_activity_interrupted,
    session.ExceptionReported: P1Association._on_exception_reported,
    session.TokensRequested: P1Association._on_tokens_requested,
    session.ControlGiven: P1Association._on_control_given,
    session.ReleaseRequested: P1Association._on_release_requested,
    session.Released: P1Association._on_released,
    session.Aborted: P1Association._on_session_aborted,
}
P1Association._TRANSPORT_HANDLERS = _TRANSPORT_HANDLERS
P1Association._SESSION_HANDLERS = _SESSION_HANDLERS


def _exception_abort_reason(event: session.ExceptionReported) -> rtse.AbortReason:
    """The RTAB reason for giving a transfer up on an exception report: a provider's report
    (ER) is a protocol error; a user's (ED) a problem, temporary if its reason says so."""
    if event.by_provider:
        return rtse.AbortReason.PROTOCOL_ERROR
    if event.reason == TEMPORARILY_UNABLE:
        return rtse.AbortReason.TEMPORARY_PROBLEM
    return rtse.AbortReason.PERMANENT_PROBLEM


def _check_units(requirements: int, what: str) -> None:
    """RTSE needs the session's half-duplex, minor synchronize, activity management and
    exceptions functional units (X.228's use of the session service): without them no
    transfer can be made, and established stacks refuse such an association too."""
    if requirements & session.RTSE_REQUIREMENTS != session.RTSE_REQUIREMENTS:
        raise RemoteProtocolError(
            f"{what} session functional units {requirements:#06x}, not RTSE's "
            f"{session.RTSE_REQUIREMENTS:#06x}",
            layer="rtse",
        )


def _negotiated(mode: rtse.DialogueMode, checkpoint_size: int, window_size: int) -> _Negotiated:
    """The RT-OPEN parameters the peer sent, once checked: a windowSize of 0 would let no
    checkpoint be unconfirmed, so no transfer could be sent (X.228 7.5: RTSE may send
    windowSize checkpoints before it waits for their confirmation)."""
    if window_size < 1:
        raise RemoteProtocolError(f"windowSize {window_size}: at least 1 is needed", layer="rtse")
    return _Negotiated(mode, checkpoint_size, window_size)


def _bind_argument_of(rtorq: rtse.Rtorq) -> MTABindArgument:
    """The MTA-bind argument, RT-OPEN's user data (X.419 clause 7).  Even an unauthenticated
    bind sends one (``[16] NULL``): an RT-OPEN without user data is the peer's error."""
    if rtorq.open is None:
        raise RemoteProtocolError("RT-OPEN without an MTA-bind argument", layer="rtse")
    return decode_bind_argument(unwrap_bind_argument(rtorq.open))


def _apdu_prefix(octets: bytes) -> bytes | None:
    """The MTS-APDU's first octets in a transfer's first ``octets``; None if the EXTERNAL
    around it cannot be read from them."""
    try:
        return apdu_prefix(octets)
    except DecodeError:
        return None
