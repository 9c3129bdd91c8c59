"""What a P1 association does on the session layer, whatever its mode (X.419 clause 7).

The 1988 normal-mode association (:class:`p1.association.connection.P1Association`: RTSE,
ACSE and presentation on session) and the X.410-1984 mode one
(:class:`p1.association.x410.X410Association`: the RTS on session itself) differ in their
bind and in how a transfer's octets are wrapped; the rest is the same and is here: the
state table of :mod:`p1.association.machine` with rule 7 (a call after an abort that its
state allowed does nothing), transport class 0 and session pumped in order, one transfer
as one session activity (checkpoints confirmed at once, the activity end answered only
once the user confirmed the transfer, a discarded or interrupted activity dropped, one
longer than ``max_message_size`` read to its end with its first octets kept), the
turn as the data, minor synchronize and activity tokens, and the end of the connection.

Recovery (X.228, :mod:`p1.osi.rtse_recovery`): an association that ends abnormally (the
connection lost, the peer's provider abort or temporary abort, our own abort) in the
middle of a transfer with confirmed checkpoints leaves, on the receiving side, the
:attr:`interrupted_transfer` (its octets up to the last checkpoint confirmed, for the
user to keep) and, on the sending side, the :attr:`resume_point`; a later association
resumes it (:meth:`resume_transfer`, S-ACTIVITY-RESUME), and the receiver goes on from
what its user's :class:`~p1.osi.rtse_recovery.Resumption` kept, or, when nothing was,
aborts with RTSE's unrecognized-activity.

A subclass gives its handler tables (``_TRANSPORT_HANDLERS``, ``_SESSION_HANDLERS``: the
events of the layers below by type), the layer named in its errors (``_TABLE_LAYER`` for
the state table's, ``_TRANSFER_LAYER`` for the transfer's), the session versions its CN
proposes, ``_connect_data()`` (the CN's user data) and ``_upper_error()``, how it wraps a
piece of a transfer (``_send_piece``) and the turn's priority (``_turn_please_data``,
``_turn_priority``, with ``_TURN_PLEASE`` and ``_TURN_GIVE`` naming them), and the calls
an MTA makes whatever the mode (bind, transfer, the turn, release, abort), declared here so
that one driver (:mod:`mta.link`) serves both.  A mode that recovers transfers also gives
what it puts before an MTS-APDU (``_transfer_head``), the checkpointing agreed
(``_checkpointing``), its abort for a resumption of nothing kept (``_abort_unrecognized``),
and a handler of S-ACTIVITY-RESUME (``_on_activity_resumed``, here) in its table, and names
its session connections (``_identifier``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from p1.association.events import (
    Aborted,
    BindRefused,
    ConnectionRefused,
    Released,
    TransferConfirmed,
    TransferResumed,
    TransferTooLong,
    TurnGiven,
    TurnRequested,
)
from p1.association.machine import DISCARDED, TABLE, Input, State
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult
from p1.association.pdus import activity_identifier, activity_number
from p1.errors import DecodeError
from p1.osi import (
    Event,
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    Role,
    StackLimits,
    cotp,
    session,
)
from p1.osi.rtse import DialogueMode
from p1.osi.rtse_recovery import PartialTransfer, ResumePoint, Resumption, SessionConnectionId
from p1.osi.rtse_transfer import InboundTransfer, OutboundTransfer, Piece, Sync
from p1.osi.selectors import format_selector
from p1.osi.x225 import spdu
from p1.osi.x225.machine import State as SessionState

__all__ = [
    "TEMPORARILY_UNABLE",
    "TURN_TOKENS",
    "SessionAssociation",
    "Transfers",
    "serves",
    "session_refusal",
]

TURN_TOKENS: Final = session.Token.DATA | session.Token.MINOR_SYNC | session.Token.MAJOR_ACTIVITY
"""The session tokens that make the turn (X.228 7.6): whoever holds them transfers."""
_TURN_BITS = TURN_TOKENS.value
# Where the session connection exists, so that an abort is told to the peer (AB).
_SESSION_STATES = frozenset({State.BINDING, State.BIND_PENDING, State.OPEN, State.RELEASING})
TEMPORARILY_UNABLE: Final = 1
"""The reason code (PI 50) of an ED saying "temporarily unable to continue" (X.225)."""
PASSING: Final = frozenset({None, "temporary-problem", "local-system-problem"})
"""The peer's abort reasons (X.228 RTAB; None: none given) after which a transfer it cut
off may be resumed: its trouble was passing, it did not give the transfer up."""

_Handler = Callable[[Any, Any], list[Event]]
"""A handler of an event of a layer below (its argument is an instance of its key)."""


def session_refusal(reason: int) -> str:
    """Why the peer's session provider refused a CN (X.225 RF reason code, PI 50)."""
    name = spdu.PROVIDER_REFUSALS.get(reason, f"reason code {reason}")
    return f"refused by the peer's session provider: {name}"


def serves(served: frozenset[bytes] | None, called: bytes) -> bool:
    """True when a responder serving the selectors ``served`` (None: any) answers a
    connection calling ``called`` (b"": none)."""
    return served is None or called in served


@dataclass(slots=True)
class Transfers:
    """The transfers of an association: at most one each way, and one received whole
    that awaits its user's confirmation."""

    next_id: int = 1
    outbound: OutboundTransfer | None = None
    inbound: InboundTransfer | None = None
    unconfirmed: int | None = None  # received, awaiting confirm_transfer
    outbound_activity: bytes = b""  # the activity identifiers of the two in progress
    inbound_activity: bytes = b""
    resumed_from: ResumePoint | None = None  # the outbound one's, when it was resumed
    inbound_aliases: tuple[tuple[SessionConnectionId, bytes], ...] = ()  # its names before


class SessionAssociation:
    """The part of a P1 association common to both modes (see the module docstring)."""

    _TRANSPORT_HANDLERS: ClassVar[Mapping[type[Event], _Handler]]
    _SESSION_HANDLERS: ClassVar[Mapping[type[Event], _Handler]]
    _TABLE_LAYER: ClassVar[str]
    _TRANSFER_LAYER: ClassVar[str]
    _TURN_PLEASE: ClassVar[str]
    _TURN_GIVE: ClassVar[str]
    """How the mode names a turn please and a turn give in its errors."""
    _SESSION_VERSIONS: ClassVar[int] = spdu.VERSION_2
    MODE: ClassVar[str]
    """The mode's name for the operator's log: "normal" or "X.410-1984"."""

    def __init__(
        self,
        role: Role,
        limits: StackLimits,
        *,
        calling_tsap: bytes,
        called_tsap: bytes,
        calling_ssap: bytes,
        called_ssap: bytes,
    ) -> None:
        """``*_tsap``: the CR's TSAP-IDs (X.224 13.3.4 a); ``*_ssap``: the CN's SSAP
        identifiers (X.225 PI 51, 52); initiator only."""
        self.role = role
        self.state = State.IDLE
        self._limits = limits
        self._ssaps = (calling_ssap, called_ssap)
        self._transport = cotp.TransportConnection(
            role, limits=limits, calling_tsap=calling_tsap, called_tsap=called_tsap
        )
        # DT user data as views: a transfer's octets are read from it where they lie, so a
        # large transfer is copied once on the way up.
        self._session = session.SessionConnection(role, limits=limits, data_views=True)
        self._calling_tsap = b""
        self._transfers = Transfers()
        self._aborted_in: State | None = None  # where an abort ended the association
        # Recovery: this session connection's identifier (ours in the CN, or the peer's),
        # where the receiver finds what it kept, and what an abnormal end left.
        self._identifier: SessionConnectionId | None = None
        self._resumption: Resumption | None = None
        self._interrupted: PartialTransfer | None = None
        self._resume_point: ResumePoint | None = None

    def _connect_data(self) -> bytes:
        """The user data of the CN that binds (initiator)."""
        raise NotImplementedError

    def _upper_error(self, error: RemoteProtocolError | DecodeError) -> list[Event]:
        """The peer broke a rule above the session: abort as the mode prescribes."""
        raise NotImplementedError

    # --- what an MTA calls, whatever the mode -----------------------------------------

    @property
    def dialogue_mode(self) -> DialogueMode:
        """The dialogue mode agreed at bind (monologue until the bind is made)."""
        raise NotImplementedError

    def send_bind(self, argument: MTABindArgument) -> None:
        """Initiator: connect and bind with ``argument``."""
        raise NotImplementedError

    def accept_bind(self, result: MTABindResult) -> list[Event]:
        """Responder: accept the bind with ``result``; the events of an end it met."""
        raise NotImplementedError

    def refuse_bind(self, error: MTABindError) -> None:
        """Responder: refuse the bind with ``error``."""
        raise NotImplementedError

    def send_transfer(self, apdu: bytes | memoryview) -> int:
        """Transfer one MTS-APDU; its transfer id, confirmed later."""
        raise NotImplementedError

    def request_turn(self, priority: int = 0) -> None:
        """S-TOKEN-PLEASE for every token, ``priority`` in its user data: ask the peer
        for the turn (two-way alternate: X.228 7.6 RT-TURN-PLEASE; X.410 (1984) turn
        please)."""
        layer = self._TRANSFER_LAYER
        if self.has_turn:
            raise LocalProtocolError("this end already holds the turn", layer=layer)
        if self.giving_turn:
            raise LocalProtocolError("the turn given is not acknowledged yet", layer=layer)
        self._check_two_way_alternate(self._TURN_PLEASE)
        after = self._move(Input.DATA_PHASE)
        if after is None:
            return
        self._session.send_token_please(TURN_TOKENS, self._turn_please_data(priority))
        self.state = after

    def _turn_please_data(self, priority: int) -> bytes:
        """The S-TOKEN-PLEASE's user data carrying ``priority``, as the mode writes it."""
        raise NotImplementedError

    def give_turn(self) -> None:
        """S-CONTROL-GIVE: every token, so the turn, to the peer (two-way alternate:
        X.228 7.7 RT-TURN-GIVE; X.410 (1984) turn give)."""
        if self._transfers.outbound is not None:
            raise LocalProtocolError(
                "cannot give the turn during a transfer", layer=self._TRANSFER_LAYER
            )
        self._check_two_way_alternate(self._TURN_GIVE)
        after = self._move(Input.DATA_PHASE)
        if after is None:
            return
        self._session.send_control_give()
        self.state = after

    def _check_two_way_alternate(self, what: str) -> None:
        """The turn moves only in two-way alternate mode; in monologue the initiator
        holds it throughout (X.228 7.6, 7.7; the bind's dialogueMode)."""
        if self.dialogue_mode is not DialogueMode.TWA:
            raise LocalProtocolError(
                f"{what} is for two-way alternate mode only", layer=self._TRANSFER_LAYER
            )

    def _on_tokens_requested(self, event: session.TokensRequested) -> list[Event]:
        """S-TOKEN-PLEASE for the turn: the peer asks it back, with a priority."""
        after = self._next(Input.RECV_TURN_PLEASE, RemoteProtocolError)
        if (self.state, Input.RECV_TURN_PLEASE) in DISCARDED:
            self.state = after  # it crossed our FN: the DN to come ends the association
            return []
        priority = self._turn_priority(event.user_data)
        self.state = after
        return [TurnRequested(priority=priority)]

    def _turn_priority(self, user_data: bytes) -> int:
        """The priority an S-TOKEN-PLEASE's user data carries (0: none)."""
        raise NotImplementedError

    def send_release(self) -> None:
        """Initiator holding the turn: release."""
        raise NotImplementedError

    def abort(self, why: str = "aborted by the MTA", *, temporary: bool = False) -> list[Event]:
        """Abort (``temporary``: with the mode's temporary-problem reason)."""
        raise NotImplementedError

    # --- state ----------------------------------------------------------------------

    def _next(self, what: Input, error: type[ProtocolError] = LocalProtocolError) -> State:
        """The state ``what`` leads to (not taken yet); a pair missing from the table
        raises ``error``: LocalProtocolError for our user's call, else the peer's."""
        after = TABLE.get((self.state, what))
        if after is None:
            raise error(
                f"{what.value} is not allowed in state {self.state.value}", layer=self._TABLE_LAYER
            )
        return after

    def _move(self, what: Input) -> State | None:
        """The state our user's ``what`` leads to (not taken yet); None when an abort ended
        the association in a state that allowed ``what``: the call then does nothing
        (rule 7).  Otherwise a pair missing from the table raises LocalProtocolError."""
        aborted_in = self._aborted_in
        if aborted_in is not None and (aborted_in, what) in TABLE:
            return None
        return self._next(what)

    def _expect(self, what: Input) -> None:
        """Take a peer's ``what``; a missing pair is the peer's protocol error."""
        self.state = self._next(what, RemoteProtocolError)

    def _close(self, *, recoverable: bool = False) -> State:
        """Take an abort (from any state but CLOSED); the state it ended.  A transfer in
        either direction is given up (rule 2): only one received whole still awaits its
        user's confirmation, which will do nothing.  ``recoverable``: the end does not
        give the transfers up, so what they reached is left for a later association."""
        was = self.state
        self.state = TABLE[was, Input.ABORT]
        self._aborted_in = was
        if recoverable:
            self._leave_for_recovery()
        self._transfers.inbound = self._transfers.outbound = None
        return was

    def _leave_for_recovery(self) -> None:
        """What the transfers in progress reached, past their first confirmed checkpoint
        on a session connection with an identifier: the part received, where to resume."""
        identifier, transfers = self._identifier, self._transfers
        if identifier is None:
            return
        inbound, outbound = transfers.inbound, transfers.outbound
        if inbound is not None and not inbound.too_long and inbound.marks:
            serial = max(inbound.marks)
            self._interrupted = PartialTransfer(
                identifier=identifier,
                activity_id=transfers.inbound_activity,
                octets=inbound.kept(serial),
                marks=inbound.marks,
                aliases=transfers.inbound_aliases,
            )
        if outbound is None:
            return
        serial, offset = outbound.confirmed
        resumed_from = transfers.resumed_from
        if resumed_from is not None and serial == resumed_from.serial:
            # No checkpoint confirmed since it resumed: the peer may not even have had
            # the S-ACTIVITY-RESUME, so it is named as it was then (the peer knows both).
            self._resume_point = resumed_from
        elif serial > 0:
            self._resume_point = ResumePoint(
                identifier=identifier,
                activity_id=transfers.outbound_activity,
                serial=serial,
                offset=offset,
            )

    @property
    def interrupted_transfer(self) -> PartialTransfer | None:
        """Receiving side, once an abnormal end cut a transfer off past a confirmed
        checkpoint: the part of it to keep for the sender to resume (X.228 recovery)."""
        return self._interrupted

    @property
    def resume_point(self) -> ResumePoint | None:
        """Sending side, once an abnormal end cut a transfer off past a checkpoint the
        peer confirmed: where it may go on, on a later association (X.228 recovery)."""
        return self._resume_point

    def _refuse_session_address(self, event: session.ConnectRequested) -> list[Event]:
        """S-CONNECT refuse from the session provider: RF, reason 129 "session selector
        unknown" (X.225 PI 50), for a CN calling an SSAP this responder does not serve."""
        self._session.send_refuse(reason=spdu.SSAP_UNKNOWN)
        self.state = self._next(Input.REFUSE_BIND)
        called = format_selector(event.called_ssap) if event.called_ssap else "none"
        return [
            ConnectionRefused(
                by_peer=False,
                why=f"session: called SSEL {called!r} is not served here; RF session "
                "selector unknown",
                layer="session",
                called=event.called_ssap,
                calling=event.calling_ssap,
            )
        ]

    @property
    def closed(self) -> bool:
        """True once the association has ended (released, refused or aborted)."""
        return self.state is State.CLOSED

    @property
    def has_turn(self) -> bool:
        """True when this end may transfer or release (it holds the session's data, minor
        synchronize and activity tokens)."""
        return self._session.tokens.value & _TURN_BITS == _TURN_BITS

    @property
    def giving_turn(self) -> bool:
        """True from our turn give (S-CONTROL-GIVE, GTC) until the peer's session
        acknowledged it (GTA, X.225): only then may the turn be asked for back."""
        return self._session.state is SessionState.WAIT_GTA

    @property
    def busy(self) -> bool:
        """True while an outbound transfer waits for its confirmation."""
        return self._transfers.outbound is not None

    # --- transfer ---------------------------------------------------------------------

    def _check_transfer_allowed(self) -> None:
        layer = self._TRANSFER_LAYER
        if self._transfers.outbound is not None:
            raise LocalProtocolError("a transfer is already in progress", layer=layer)
        if not self.has_turn:
            raise LocalProtocolError("this end does not hold the turn", layer=layer)
        if self._transfers.inbound is not None or self._transfers.unconfirmed is not None:
            raise LocalProtocolError("an inbound transfer is not finished", layer=layer)

    def _advance(self) -> None:
        """Send what the outbound transfer's window allows: its pieces, a minor
        synchronize asking confirmation at each checkpoint, then the activity end."""
        outbound = self._transfers.outbound
        assert outbound is not None
        for step in outbound.steps():
            if isinstance(step, Piece):
                self._send_piece(step)
            elif isinstance(step, Sync):
                self._session.send_minor_sync(confirm=True)
            else:
                self._session.send_activity_end()

    def _send_piece(self, piece: Piece) -> None:
        """S-DATA carrying one piece of the outbound transfer, as the mode wraps it."""
        raise NotImplementedError

    def _ended_inbound(self) -> InboundTransfer:
        """The inbound transfer an S-ACTIVITY-END indication ends, no longer current."""
        self._expect(Input.DATA_PHASE)
        inbound = self._transfers.inbound
        if inbound is None:
            raise RemoteProtocolError(
                "activity end outside an activity", layer=self._TRANSFER_LAYER
            )
        self._transfers.inbound = None
        return inbound

    def confirm_transfer(self, transfer_id: int) -> None:
        """The message of ``transfer_id`` is safely stored: acknowledge the activity end.
        Does nothing when the association was aborted before it was stored (rule 7)."""
        if self._transfers.unconfirmed != transfer_id:
            raise LocalProtocolError(
                f"transfer {transfer_id} awaits no confirmation", layer=self._TRANSFER_LAYER
            )
        after = self._move(Input.DATA_PHASE)
        self._transfers.unconfirmed = None
        if after is None:
            return
        self._session.send_activity_end_response()
        self.state = after

    def _on_activity_started(self, event: session.ActivityStarted) -> list[Event]:
        self._expect(Input.DATA_PHASE)
        transfers = self._transfers
        if transfers.inbound is not None or transfers.unconfirmed is not None:
            raise RemoteProtocolError(
                "activity started before the last one ended", layer=self._TRANSFER_LAYER
            )
        transfers.inbound = InboundTransfer(
            activity_number(event.activity_id), self._limits.max_message_size
        )
        transfers.inbound_activity = event.activity_id
        transfers.inbound_aliases = ()
        return []

    def _on_activity_resumed(self, event: session.ActivityResumed) -> list[Event]:
        """S-ACTIVITY-RESUME indication (X.225 7.31): the peer goes on with a transfer an
        earlier association cut off, after its checkpoint ``serial``.  It goes on from
        what this end's user kept of it up to that checkpoint; when nothing was kept, the
        peer is told so (RTSE abortReason unrecognized-activity) and sends it afresh."""
        self._expect(Input.DATA_PHASE)
        transfers = self._transfers
        if transfers.inbound is not None or transfers.unconfirmed is not None:
            raise RemoteProtocolError(
                "activity resumed before the last one ended", layer=self._TRANSFER_LAYER
            )
        identifier = SessionConnectionId.of(event.connection_identifier)
        resumption = self._resumption
        partial = None
        if identifier is not None and resumption is not None:
            partial = resumption.take(identifier, event.old_activity_id)
        found = partial.at(event.serial) if partial is not None else None
        if found is None:
            why = f"no transfer kept to resume after checkpoint {event.serial}"
            return self._abort_unrecognized(why)
        octets, marks = found
        number = activity_number(event.activity_id)
        limit = self._limits.max_message_size
        transfers.inbound = InboundTransfer.resumed(number, limit, octets, marks)
        transfers.inbound_activity = event.activity_id
        transfers.inbound_aliases = partial.names if partial is not None else ()
        return [TransferResumed(transfer_id=number, serial=event.serial, offset=len(octets))]

    def _abort_unrecognized(self, why: str) -> list[Event]:
        """Abort: an S-ACTIVITY-RESUME names a transfer this end has nothing of."""
        raise NotImplementedError

    def resume_transfer(self, apdu: bytes | memoryview, point: ResumePoint) -> int:
        """RT-TRANSFER request of ``apdu`` that goes on from ``point``, where an earlier
        association cut it off: S-ACTIVITY-RESUME naming its activity, its checkpoint and
        its session connection (X.225 7.31), then the octets after the checkpoint only.
        Its transfer id, confirmed as :meth:`send_transfer`'s."""
        self._check_transfer_allowed()
        after = self._move(Input.DATA_PHASE)
        head = self._transfer_head(apdu)
        transfers = self._transfers
        transfer_id = transfers.next_id
        if after is None:
            transfers.next_id += 1
            return transfer_id
        agreed_size, agreed_window = self._checkpointing
        outbound = OutboundTransfer.resumed(
            transfer_id,
            apdu,
            agreed_size,
            agreed_window,
            serial=point.serial,
            offset=point.offset,
            head=head,
        )
        activity = activity_identifier(transfer_id)
        self._session.send_activity_resume(
            activity,
            old_activity_id=point.activity_id,
            serial=point.serial,
            connection_identifier=point.identifier.connection_identifier(),
        )
        transfers.next_id += 1
        transfers.outbound = outbound
        transfers.outbound_activity = activity
        transfers.resumed_from = point
        self.state = after
        self._advance()
        return transfer_id

    def _transfer_head(self, apdu: bytes | memoryview) -> bytes:
        """What the mode puts before an MTS-APDU in a transfer's octets."""
        raise NotImplementedError

    @property
    def _checkpointing(self) -> tuple[int, int]:
        """The checkpoint size and window agreed."""
        raise NotImplementedError

    def _received_too_long(self, inbound: InboundTransfer, prefix: bytes | None) -> list[Event]:
        """A transfer ended that was longer than ``max_message_size``: its first octets
        (``prefix``, the MTS-APDU's) go to the user, who confirms it like any other once
        the originator's report is stored, or aborts."""
        self._transfers.unconfirmed = inbound.transfer_id
        limit = inbound.limit
        return [
            TransferTooLong(
                transfer_id=inbound.transfer_id, size=inbound.size, limit=limit, prefix=prefix
            )
        ]

    def _on_minor_sync(self, event: session.MinorSyncRequested) -> list[Event]:
        # Checkpoints are confirmed at once, where they fall noted: they only matter to
        # recover a transfer across associations; responsibility moves at the activity end.
        self._expect(Input.DATA_PHASE)
        inbound = self._transfers.inbound
        if inbound is not None:
            inbound.mark(event.serial)
        if event.confirm_required:
            self._session.send_minor_sync_response(event.serial)
        return []

    def _on_minor_sync_confirmed(self, event: session.MinorSyncConfirmed) -> list[Event]:
        self._expect(Input.DATA_PHASE)
        outbound = self._transfers.outbound
        if outbound is None:
            raise RemoteProtocolError(
                "minor sync confirmed outside a transfer", layer=self._TRANSFER_LAYER
            )
        outbound.confirm_sync(event.serial)  # every checkpoint up to it (X.225 7.21)
        self._advance()
        return []

    def _on_activity_ended(self, event: session.ActivityEnded) -> list[Event]:
        self._expect(Input.DATA_PHASE)
        outbound = self._transfers.outbound
        if outbound is None or not outbound.done:
            raise RemoteProtocolError(
                "activity end confirmed that was never sent", layer=self._TRANSFER_LAYER
            )
        self._transfers.outbound = None
        return [TransferConfirmed(transfer_id=outbound.transfer_id)]

    def _on_activity_discarded(self, event: session.ActivityDiscarded) -> list[Event]:
        """S-ACTIVITY-DISCARD indication (X.225 7.34): the sender gave the transfer up;
        what arrived of it is dropped, and the discard confirmed (ADA)."""
        self._expect(Input.DATA_PHASE)
        self._transfers.inbound = None
        self._session.send_activity_discard_response()
        return []

    def _on_activity_interrupted(self, event: session.ActivityInterrupted) -> list[Event]:
        """S-ACTIVITY-INTERRUPT indication (X.225 7.32): confirmed (AIA); what arrived is
        dropped too, since we keep no partial transfer for the sender to resume."""
        self._expect(Input.DATA_PHASE)
        self._transfers.inbound = None
        self._session.send_activity_interrupt_response()
        return []

    def _on_control_given(self, event: session.ControlGiven) -> list[Event]:
        self._expect(Input.DATA_PHASE)
        return [TurnGiven()]

    # --- the end ----------------------------------------------------------------------

    def _on_released(self, event: session.Released) -> list[Event]:
        self._expect(Input.RECV_RELEASED)
        return [Released(by_peer=False)]

    def _send_abort(self, user_data: bytes, *, recoverable: bool = False) -> None:
        """S-U-ABORT with ``user_data`` where a session connection exists; closed."""
        if self.state in _SESSION_STATES and not self._session.closed:
            self._session.send_abort(user_data)
        self._close(recoverable=recoverable)

    def _on_gone(self, *, by_peer: bool, why: str, reason: str | None = None) -> list[Event]:
        """The peer, the connection or a layer below ended the association; what a
        transfer reached is left for recovery unless this end's own layers found the
        peer at fault, or the peer gave its abort a reason other than a passing one."""
        if self.state is State.CLOSED:
            return []
        if self._close(recoverable=by_peer and reason in PASSING) is State.BINDING:
            return [BindRefused(error=None, why=why, by_peer=by_peer)]
        return [Aborted(by_peer=by_peer, why=why, reason=reason)]

    # --- bytes in and out -------------------------------------------------------------

    def data_to_send(self, max_size: int | None = None) -> bytes:
        """The bytes to write to TCP now (possibly empty): all of them, or at most
        ``max_size`` (exactly that many while more are queued)."""
        self._flush()
        return self._transport.data_to_send(max_size)

    def _flush(self) -> None:
        parts = self._session.tsdu_parts_to_send()
        if self._transport.closed:
            # A later TPDU of the same read broke the transport: it queued its ER, and
            # what the session answered to the earlier ones cannot be sent any more.
            return
        for head, data in parts:
            if data:
                self._transport.send_tsdu(data, prefix=head)
            else:
                self._transport.send_tsdu(head)

    def receive_eof(self) -> list[Event]:
        """TCP closed by the peer."""
        if self.state is State.CLOSED:
            return []
        self._close(recoverable=True)
        return [Aborted(by_peer=True, why="the peer closed the connection")]

    def receive_data(self, data: bytes) -> list[Event]:
        """Feed bytes from TCP; returns what happened, in order.  Ignored once CLOSED."""
        if self.state is State.CLOSED:
            return []
        events: list[Event] = []
        handlers = self._TRANSPORT_HANDLERS
        for event in self._transport.receive_data(data):
            if self.closed:
                break  # (the rest of the read no longer counts)
            handler = handlers.get(type(event))
            if handler is not None:
                events.extend(handler(self, event))
        self._flush()
        return events

    def _on_transport_connected(self, event: cotp.Connected) -> list[Event]:
        self._expect(Input.RECV_CONNECTED)
        calling, called = self._ssaps
        identifier = self._identifier
        self._session.send_connect(
            self._connect_data(),
            calling_ssap=calling,
            called_ssap=called,
            versions=self._SESSION_VERSIONS,
            connection_id=None if identifier is None else identifier.connection_identifier(),
        )
        return []

    def _on_transport_gone(self, event: cotp.Disconnected) -> list[Event]:
        return self._on_gone(by_peer=event.by_peer, why=f"transport: {event.why}")

    def _on_tsdu(self, event: cotp.TsduReceived) -> list[Event]:
        events: list[Event] = []
        handlers = self._SESSION_HANDLERS
        for unit in self._session.receive_tsdu(event.data):
            handler = handlers.get(type(unit))
            if handler is None or self.closed:
                continue
            try:
                events.extend(handler(self, unit))
            except (RemoteProtocolError, DecodeError) as error:
                events.extend(self._upper_error(error))
        return events
