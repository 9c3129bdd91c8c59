"""Session layer: one X.225 (ISO 8327-1) version 2 session connection, sans I/O.

Units in: TSDUs from the transport (``receive_tsdu``); units out: TSDUs (``tsdus_to_send``).
SPDUs are coded by :mod:`p1.osi.x225.spdu`.  The rules this machine follows:

1. States and inputs are enums; ``TABLE`` maps (state, input) to the next state (X.225
   Annex A names the states).  A pair missing from it is a protocol error: a ``send_*``
   raises LocalProtocolError and changes nothing; a received SPDU closes the connection
   with AB (transport released, protocol error) and returns ``Aborted(by_peer=False)``.
2. Functional units are the AND of both sides' requirements (PI 20); an input whose unit
   was not selected is a protocol error.  RTSE needs half-duplex, minor synchronize,
   activity management and exceptions: ``RTSE_REQUIREMENTS``.
3. Tokens (X.225 5.6): a token exists when its unit was selected; PI 26 says where each
   starts.  Only the holder of the data token sends DT; MIP needs the minor synchronize
   token, AS and AE (MAP) the major/activity token, each also the data and minor tokens
   when they exist; FN and GTC need every token that exists; ED is for the side without
   the data token.  The interrupt or discard of an activity leaves every token with the
   side that asked for it.
4. Serial numbers (X.225 7.20-7.23): an activity starts at 1; MIP carries V(M) and
   increments it; several MIPs may wait for their MIA; AE carries V(M) and AEA echoes it.
5. Category 2 SPDUs travel after an empty GT or PT in the same TSDU (p1.osi.x225.spdu); a lone GT
   or PT gives or asks for tokens.  SPDUs still in flight when this side has asked for a
   recovery (ED sent, AI / AD sent, GTC sent) are discarded, as X.225 prescribes.
6. When a TSDU maximum size (PI 21) was agreed, DT SPDUs carry the enclosure item and
   longer SPDUs are segmented; segments received are joined up to limits.max_spdu_size.
   CN user data beyond 10,240 octets travels in CDO SPDUs after the responder's OA.

Public API (the events are those of :mod:`p1.osi.x225.events`, the state machine's data
that of :mod:`p1.osi.x225.machine`)::

    RTSE_REQUIREMENTS = 0x0249; Token (Flag: DATA, MINOR_SYNC, MAJOR_ACTIVITY, RELEASE)
    SessionConnection(role, *, limits=DEFAULT_LIMITS, tsdu_maximum_size=0, data_views=False)
        .state .requirements .tokens .available_tokens .version .closed .accept_room
        send_connect / send_accept / send_refuse / send_data(user_data, *, prefix=b"")
        send_activity_start / send_activity_resume / send_activity_end
        send_activity_end_response
        send_minor_sync / send_minor_sync_response
        send_token_please / send_give_tokens / send_control_give
        send_activity_interrupt(_response) / send_activity_discard(_response)
        send_exception_report / send_release / send_release_response / send_release_refuse
        send_abort; receive_tsdu(tsdu) -> list[Event]; tsdus_to_send() -> list[bytes]
        tsdu_parts_to_send() -> list[(head, data)]     the TSDUs unjoined: data not copied
    With ``data_views``, DT user data arrives as DataViewReceived (a view of the TSDU, not
    a copy) instead of DataReceived: for a user that reads it once and keeps what it needs.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from dataclasses import replace

from p1.errors import DecodeError, EncodeError
from p1.osi import (
    DEFAULT_LIMITS,
    Event,
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    Role,
    StackLimits,
)
from p1.osi.x225 import spdu as codec
from p1.osi.x225.connect import MIN_TSDU_SIZE, Agreement, Establishment, Gathered
from p1.osi.x225.events import (
    Aborted,
    ActivityDiscardConfirmed,
    ActivityDiscarded,
    ActivityEnded,
    ActivityEndRequested,
    ActivityInterruptConfirmed,
    ActivityInterrupted,
    ActivityResumed,
    ActivityStarted,
    ConnectAccepted,
    ConnectRefused,
    ConnectRequested,
    ControlGiven,
    DataReceived,
    DataViewReceived,
    ExceptionReported,
    MinorSyncConfirmed,
    MinorSyncRequested,
    Released,
    ReleaseRefused,
    ReleaseRequested,
    TokensGiven,
    TokensRequested,
)
from p1.osi.x225.machine import (
    ALL_ON_INITIATOR,
    DATA_BIT,
    DISCARDED,
    MAJOR_ACTIVITY_BIT,
    MINOR_SYNC_BIT,
    RTSE_REQUIREMENTS,
    TABLE,
    UNIT_OF,
    Input,
    State,
    Token,
    available_token_bits,
    input_of,
    token_bits_of,
    token_names,
)
from p1.osi.x225.spdu import ConnectionIdentifier, Kind, LinkingInformation, Requirement, Spdu

__all__ = [
    "RTSE_REQUIREMENTS",
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
    "SessionConnection",
    "Token",
    "TokensGiven",
    "TokensRequested",
]

_S, _I = State, Input
_ACTIVITY_ID_MAX = codec.MAX_ACTIVITY_ID_SIZE
_ACTIVITY = int(Requirement.ACTIVITY)
_PROTOCOL_ERROR = codec.TRANSPORT_RELEASED | codec.PROTOCOL_ERROR
_LAYER = "session"


class SessionConnection:
    """The session protocol machine of one connection (see the module docstring)."""

    def __init__(
        self,
        role: Role,
        *,
        limits: StackLimits = DEFAULT_LIMITS,
        tsdu_maximum_size: int = 0,
        data_views: bool = False,
    ) -> None:
        if tsdu_maximum_size and not MIN_TSDU_SIZE <= tsdu_maximum_size <= 0xFFFF:
            raise ValueError(f"TSDU maximum size {tsdu_maximum_size} outside 64..65535")
        self.role = role
        self.limits = limits
        self.data_views = data_views
        self.state = State.IDLE
        # Tokens are kept as PI 16 bits (see session_machine): those that exist, ours.
        self._requirements = 0
        self._available = 0
        self._held = 0
        self.version = 2
        self._setup = Establishment(role, limits, tsdu_maximum_size)
        self._send_limit = 0  # TSDU maximum size for what we send; 0: none
        self._segments: Gathered | None = None  # an SPDU arriving in segments
        # TSDUs to send; a DT's user data is kept apart (head, data), not yet copied.
        self._outbox: list[bytes | tuple[bytes, bytes | memoryview]] = []
        self._in_activity = False
        self._vm = 0  # V(M): serial number of the next synchronization point
        self._va = 0  # V(A): lowest serial number not yet confirmed
        self._syncs_from_peer = False  # the points in V(A)..V(M) were set by the peer

    # --- state ---------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once the connection is released, refused or aborted."""
        return self.state is State.CLOSED

    @property
    def requirements(self) -> int:
        """The functional units agreed (PI 20 bits; 0 before the connection)."""
        return self._requirements

    @requirements.setter
    def requirements(self, requirements: int) -> None:
        self._requirements = requirements
        self._available = available_token_bits(requirements)

    @property
    def tokens(self) -> Token:
        """The tokens this side holds."""
        return Token(self._held)

    @tokens.setter
    def tokens(self, tokens: Token) -> None:
        self._held = tokens.value

    @property
    def available_tokens(self) -> Token:
        """The tokens that exist on this connection (from the functional units)."""
        return Token(self._available)

    def _next(self, what: Input, error: type[ProtocolError]) -> State:
        after = TABLE.get((self.state, what))
        if after is None:
            raise error(f"{what.value} is not allowed in state {self.state.name}", layer=_LAYER)
        unit = UNIT_OF.get(what)
        if unit is not None and not self._requirements & unit:
            raise error(f"{what.value} needs the {Requirement(unit).name} unit", layer=_LAYER)
        return after

    def _advance(self, what: Input) -> State:
        return self._next(what, LocalProtocolError)

    def _emit(self, unit: Spdu) -> None:
        """Queue ``unit``: one TSDU, or its segments when a TSDU maximum size applies."""
        try:
            tsdus = self._encode(unit)
        except EncodeError as error:
            raise LocalProtocolError(f"{unit.kind.name}: {error}", layer=_LAYER) from None
        self._outbox.extend(tsdus)

    def _encode(self, unit: Spdu) -> list[bytes]:
        limit = self._send_limit
        if not limit or unit.kind not in codec.SEGMENTABLE:
            return [codec.encode_tsdu(unit)]
        if unit.kind is not Kind.DT:  # DT always carries the enclosure item under a limit
            try:
                whole = codec.encode_tsdu(unit)
            except EncodeError:  # longer than one SPDU can be: segment it
                whole = b""
            if whole and len(whole) <= limit:
                return [whole]
        return codec.encode_segments(unit, limit)

    def _emit_plain(self, kind: Kind, serial: int) -> None:
        """Queue ``kind`` with only ``serial``, coded directly (a plain TSDU, see x225.spdu)."""
        try:
            self._outbox.append(codec.encode_serial_tsdu(kind, serial))
        except EncodeError as error:
            raise LocalProtocolError(f"{kind.name}: {error}", layer=_LAYER) from None

    def tsdus_to_send(self) -> list[bytes]:
        """The TSDUs queued so far, in order (the queue is emptied)."""
        tsdus, self._outbox = self._outbox, []
        return [tsdu if isinstance(tsdu, bytes) else tsdu[0] + tsdu[1] for tsdu in tsdus]

    def tsdu_parts_to_send(self) -> list[tuple[bytes, bytes | memoryview]]:
        """:meth:`tsdus_to_send` without joining: each TSDU is ``head + data`` (data often
        empty), for a transport that frames the two without copying ``data``."""
        tsdus, self._outbox = self._outbox, []
        return [(tsdu, b"") if isinstance(tsdu, bytes) else tsdu for tsdu in tsdus]

    # --- token and activity rules ----------------------------------------------------

    def _require_tokens(self, needed: int, what: str) -> None:
        missing = needed & ~self._held
        if missing:
            raise LocalProtocolError(f"{what} needs the {token_names(missing)} token", layer=_LAYER)

    def _require_peer_tokens(self, needed: int, what: str) -> None:
        mine = needed & self._held
        if mine:
            raise RemoteProtocolError(f"{what} while we hold {token_names(mine)}", layer=_LAYER)

    def _check_activity(self, inside: bool, what: str, error: type[ProtocolError]) -> None:
        if self._requirements & _ACTIVITY and self._in_activity is not inside:
            where = "outside" if inside else "inside"
            raise error(f"{what} is not allowed {where} an activity", layer=_LAYER)

    def _sync_tokens(self) -> int:
        """The tokens a major point or activity start needs: major, and data and minor."""
        return MAJOR_ACTIVITY_BIT | (self._available & (DATA_BIT | MINOR_SYNC_BIT))

    def _end_activity(self) -> None:
        """The activity is over: no minor synchronization point is left to confirm."""
        self._in_activity = False
        self._va = self._vm

    def _start_activity(self, by_peer: bool, serial: int = 0) -> None:
        """An activity starts (``serial`` 0) or resumes after its point ``serial``:
        V(A) and V(M) are ``serial + 1`` (X.225 7.30, 7.31)."""
        self._in_activity = True
        self._vm = self._va = serial + 1
        self._syncs_from_peer = by_peer

    def _set_point(self, by_peer: bool) -> int:
        """A synchronization point: V(A) restarts when the other side set the last ones."""
        if self._syncs_from_peer is not by_peer:
            self._va = self._vm
            self._syncs_from_peer = by_peer
        serial = self._vm
        self._vm += 1
        return serial

    def _check_confirm(self, serial: int, points_by_peer: bool, error: type[ProtocolError]) -> None:
        if self._syncs_from_peer is not points_by_peer or not self._va <= serial < self._vm:
            raise error(f"no minor sync point {serial} to confirm", layer=_LAYER)

    # --- connection establishment (the negotiation itself: p1.osi.x225.connect) ---------

    def send_connect(
        self,
        user_data: bytes,
        *,
        requirements: int = RTSE_REQUIREMENTS,
        calling_ssap: bytes = b"",
        called_ssap: bytes = b"",
        token_setting: int = ALL_ON_INITIATOR,
        connection_id: codec.ConnectionIdentifier | None = None,
        versions: int = codec.VERSION_2,
    ) -> None:
        """S-CONNECT request: CN, and CDO SPDUs after OA for user data beyond 10,240.
        ``versions``: the version number bits proposed (PI 22; X.410-1984 peers know 1)."""
        if self.role is not Role.INITIATOR:
            raise LocalProtocolError("only the initiator sends CN", layer=_LAYER)
        overflow = len(user_data) > codec.EXTENDED_USER_DATA_MAX
        after = self._advance(_I.SEND_CN_OVERFLOW if overflow else _I.SEND_CN)
        cn = self._setup.connect_spdu(
            user_data,
            requirements=requirements,
            calling_ssap=calling_ssap,
            called_ssap=called_ssap,
            token_setting=token_setting,
            connection_id=connection_id,
            versions=versions,
        )
        self._emit(cn)
        self._setup.connected(requirements, token_setting, user_data)
        self.state = after

    def _receive_cn(self, unit: Spdu) -> list[Event]:
        oa = self._setup.receive_connect(unit)
        if oa is not None:
            self._emit(oa)
            return []
        return [self._setup.connect_requested()]

    def _receive_cdo(self, unit: Spdu) -> list[Event]:
        last = self._setup.receive_connect_data(unit)
        return [self._setup.connect_requested()] if last else []

    def _receive_oa(self, unit: Spdu) -> list[Event]:
        for cdo in self._setup.overflow_spdus(unit):
            self._emit(cdo)
        return []

    @property
    def accept_room(self) -> int:
        """The most user data :meth:`send_accept` may carry: 512 octets when the CN asked
        for version 1, 10,240 in version 2 (X.225 8.3.4)."""
        return self._setup.accept_room

    def send_accept(self, user_data: bytes, *, requirements: int | None = None) -> None:
        """S-CONNECT response, accepted: AC.  Default units: those proposed that we support."""
        after = self._advance(_I.SEND_AC)
        ac, agreement = self._setup.accept(user_data, requirements)
        self._emit(ac)
        self._open(agreement)
        self.state = after

    def send_refuse(self, user_data: bytes = b"", *, reason: int = codec.REFUSED_BY_USER) -> None:
        """S-CONNECT response, refused: RF; the connection is closed."""
        after = self._advance(_I.SEND_RF)
        self._emit(self._setup.refuse(user_data, reason))
        self.state = after

    def _receive_ac(self, unit: Spdu) -> list[Event]:
        agreement, asked = self._setup.receive_accept(unit)
        self._open(agreement)
        accepted = ConnectAccepted(
            user_data=bytes(unit.user_data),
            requirements=agreement.requirements,
            token_setting=agreement.token_setting,
        )
        asked_held = asked.value & self._held
        if asked_held:  # the AC's token item asks for tokens we start with
            return [accepted, TokensRequested(tokens=Token(asked_held), user_data=b"")]
        return [accepted]

    def _open(self, agreement: Agreement) -> None:
        self.requirements = agreement.requirements
        self.version = agreement.version
        self._held = token_bits_of(agreement.token_setting, agreement.requirements, self.role)
        self._send_limit = agreement.send_limit
        self._vm = self._va = agreement.initial_serial

    def _receive_rf(self, unit: Spdu) -> list[Event]:
        self._setup.check_connect_data(unit.user_data)
        return [ConnectRefused(user_data=bytes(unit.user_data), reason=unit.reason_code)]

    # --- data and tokens ---------------------------------------------------------------

    def send_data(self, user_data: bytes | memoryview, *, prefix: bytes = b"") -> None:
        """S-DATA request of ``prefix + user_data``: GT + DT.

        ``user_data`` is not copied here when it is immutable (bytes, or a view of bytes):
        the TSDU refers to it until it is taken (one copy when it is joined, none when the
        transport frames :meth:`tsdu_parts_to_send`).  ``prefix`` (the headers of the layers
        above) spares the caller a copy of a large ``user_data``.
        """
        after = self._advance(_I.SEND_DT)
        self._require_tokens(self._available & DATA_BIT, "S-DATA")
        if self._send_limit:
            data = prefix + user_data if prefix else user_data
            self._emit(Spdu(kind=Kind.DT, user_data=data))
        else:
            self._outbox.append((codec.DT_PREFIX + prefix, _immutable(user_data)))
        self.state = after

    def _receive_dt(self, unit: Spdu) -> list[Event]:
        return self._data_received(unit.user_data)

    def _data_received(self, user_data: bytes | memoryview) -> list[Event]:
        self._require_peer_tokens(self._available & DATA_BIT, "DT")
        if self.data_views:
            return [DataViewReceived(user_data=memoryview(user_data))]
        return [DataReceived(user_data=bytes(user_data))]

    def send_token_please(self, tokens: Token, user_data: bytes = b"") -> None:
        """S-TOKEN-PLEASE request: a lone PT asking for ``tokens``."""
        after = self._advance(_I.SEND_PT)
        asked = tokens.value
        if not asked or asked & ~self._available or asked & self._held:
            raise LocalProtocolError(
                f"cannot ask for {token_names(tokens) or 'no'} tokens", layer=_LAYER
            )
        self._emit(Spdu(kind=Kind.PT, token_item=asked, user_data=user_data))
        self.state = after

    def _receive_pt(self, unit: Spdu) -> list[Event]:
        asked = (unit.token_item or 0) & 0x55 & self._available
        return [TokensRequested(tokens=Token(asked), user_data=bytes(unit.user_data))]

    def send_give_tokens(self, tokens: Token) -> None:
        """S-TOKEN-GIVE request: a lone GT with ``tokens``."""
        after = self._advance(_I.SEND_GT)
        given = tokens.value
        if not given:
            raise LocalProtocolError("no tokens to give", layer=_LAYER)
        self._require_tokens(given, "S-TOKEN-GIVE")
        if self.state is _S.EXCEPTION_RECEIVED and not given & DATA_BIT:
            raise LocalProtocolError(
                "recovery from an exception gives the data token", layer=_LAYER
            )
        self._emit(Spdu(kind=Kind.GT, token_item=given))
        self._held &= ~given
        self.state = after

    def _receive_gt(self, unit: Spdu) -> list[Event]:
        given = (unit.token_item or 0) & 0x55
        if given & ~self._available:
            raise RemoteProtocolError(
                f"GT gives {token_names(given)}, which do not exist", layer=_LAYER
            )
        self._require_peer_tokens(given, "GT")
        if self.state is _S.EXCEPTION_SENT and not given & DATA_BIT:
            raise RemoteProtocolError("recovery GT without the data token", layer=_LAYER)
        self._held |= given
        return [TokensGiven(tokens=Token(given))] if given else []

    def send_control_give(self) -> None:
        """S-CONTROL-GIVE request: GTC hands every token over; GTA answers."""
        after = self._advance(_I.SEND_GTC)
        self._require_tokens(self._available, "S-CONTROL-GIVE")
        self._check_activity(False, "S-CONTROL-GIVE", LocalProtocolError)
        self._emit(Spdu(kind=Kind.GTC))
        self._held = 0
        self.state = after

    def _receive_gtc(self, unit: Spdu) -> list[Event]:
        self._require_peer_tokens(self._available, "GTC")
        self._check_activity(False, "GTC", RemoteProtocolError)
        self._emit(Spdu(kind=Kind.GTA))
        self._held = self._available
        return [ControlGiven()]

    # --- activities and synchronization ----------------------------------------------
    #
    # With no user data, the SPDUs of this section are queued as plain TSDUs (p1.osi.x225.spdu),
    # the data phase's common case; the receivers share their checks with the plain path.

    def send_activity_start(self, activity_id: bytes, user_data: bytes = b"") -> None:
        """S-ACTIVITY-START request: GT + AS; serial numbers restart at 1."""
        after = self._advance(_I.SEND_AS)
        if len(activity_id) > _ACTIVITY_ID_MAX:
            raise LocalProtocolError("an activity identifier has at most 6 octets", layer=_LAYER)
        self._require_tokens(self._sync_tokens(), "S-ACTIVITY-START")
        self._check_activity(False, "S-ACTIVITY-START", LocalProtocolError)
        if user_data:
            self._emit(Spdu(kind=Kind.AS, activity_identifier=activity_id, user_data=user_data))
        else:
            self._outbox.append(codec.encode_activity_start_tsdu(activity_id))
        self._start_activity(by_peer=False)
        self.state = after

    def _receive_as(self, unit: Spdu) -> list[Event]:
        return self._activity_started(unit.activity_identifier, bytes(unit.user_data))

    def _activity_started(self, activity_id: bytes | None, user_data: bytes) -> list[Event]:
        self._require_peer_tokens(MAJOR_ACTIVITY_BIT, "AS")
        self._check_activity(False, "AS", RemoteProtocolError)
        if activity_id is None:
            raise RemoteProtocolError("AS without activity identifier", layer=_LAYER)
        self._start_activity(by_peer=True)
        return [ActivityStarted(activity_id=activity_id, user_data=user_data)]

    def send_activity_resume(
        self,
        activity_id: bytes,
        *,
        old_activity_id: bytes,
        serial: int,
        connection_identifier: ConnectionIdentifier,
        user_data: bytes = b"",
    ) -> None:
        """S-ACTIVITY-RESUME request: GT + AR; the activity ``old_activity_id`` of the
        session connection ``connection_identifier`` goes on as ``activity_id`` after its
        point ``serial``, and the next point is ``serial + 1`` (X.225 7.31)."""
        after = self._advance(_I.SEND_AR)
        for identifier in (activity_id, old_activity_id):
            if len(identifier) > _ACTIVITY_ID_MAX:
                raise LocalProtocolError(
                    "an activity identifier has at most 6 octets", layer=_LAYER
                )
        if serial < 0:
            raise LocalProtocolError(f"serial number {serial}", layer=_LAYER)
        self._require_tokens(self._sync_tokens(), "S-ACTIVITY-RESUME")
        self._check_activity(False, "S-ACTIVITY-RESUME", LocalProtocolError)
        linking = LinkingInformation(
            connection_identifier=connection_identifier,
            old_activity_identifier=old_activity_id,
            serial_number=serial,
        )
        self._emit(
            Spdu(
                kind=Kind.AR,
                linking_information=linking,
                activity_identifier=activity_id,
                user_data=user_data,
            )
        )
        self._start_activity(by_peer=False, serial=serial)
        self.state = after

    def _receive_ar(self, unit: Spdu) -> list[Event]:
        self._require_peer_tokens(MAJOR_ACTIVITY_BIT, "AR")
        self._check_activity(False, "AR", RemoteProtocolError)
        linking = unit.linking_information
        if unit.activity_identifier is None or linking is None:
            raise RemoteProtocolError(
                "AR without activity identifier and linking information", layer=_LAYER
            )
        self._start_activity(by_peer=True, serial=linking.serial_number)
        return [
            ActivityResumed(
                activity_id=unit.activity_identifier,
                old_activity_id=linking.old_activity_identifier,
                serial=linking.serial_number,
                connection_identifier=linking.connection_identifier,
                user_data=bytes(unit.user_data),
            )
        ]

    def send_minor_sync(self, *, confirm: bool = True, user_data: bytes = b"") -> int:
        """S-SYNC-MINOR request: GT + MIP; returns its serial number."""
        after = self._advance(_I.SEND_MIP)
        self._require_tokens(MINOR_SYNC_BIT | (self._available & DATA_BIT), "S-SYNC-MINOR")
        self._check_activity(True, "S-SYNC-MINOR", LocalProtocolError)
        if confirm and not user_data:
            self._emit_plain(Kind.MIP, self._vm)
        else:
            self._emit(
                Spdu(
                    kind=Kind.MIP,
                    sync_type_item=None if confirm else codec.SYNC_NO_CONFIRM,
                    serial_number=self._vm,
                    user_data=user_data,
                )
            )
        self.state = after
        return self._set_point(by_peer=False)

    def _receive_mip(self, unit: Spdu) -> list[Event]:
        return self._minor_sync_point(
            unit.serial_number, unit.sync_type_item, bytes(unit.user_data)
        )

    def _minor_sync_point(
        self, serial: int | None, sync_type: int | None, user_data: bytes
    ) -> list[Event]:
        self._require_peer_tokens(MINOR_SYNC_BIT | (self._available & DATA_BIT), "MIP")
        self._check_activity(True, "MIP", RemoteProtocolError)
        self._check_serial("MIP", serial, self._vm)
        point = self._set_point(by_peer=True)
        no_confirm = (sync_type or 0) & codec.SYNC_NO_CONFIRM
        return [
            MinorSyncRequested(serial=point, confirm_required=not no_confirm, user_data=user_data)
        ]

    def _check_serial(self, name: str, serial: int | None, expected: int) -> None:
        if serial != expected:
            raise RemoteProtocolError(f"{name} serial {serial}, not {expected}", layer=_LAYER)

    def send_minor_sync_response(self, serial: int, user_data: bytes = b"") -> None:
        """S-SYNC-MINOR response: PT + MIA confirming every point up to ``serial``."""
        after = self._advance(_I.SEND_MIA)
        self._check_confirm(serial, points_by_peer=True, error=LocalProtocolError)
        if user_data:
            self._emit(Spdu(kind=Kind.MIA, serial_number=serial, user_data=user_data))
        else:
            self._emit_plain(Kind.MIA, serial)
        self._va = serial + 1
        self.state = after

    def _receive_mia(self, unit: Spdu) -> list[Event]:
        return self._minor_sync_ack(unit.serial_number, bytes(unit.user_data))

    def _minor_sync_ack(self, serial: int | None, user_data: bytes) -> list[Event]:
        if serial is None:
            raise RemoteProtocolError("MIA without serial number", layer=_LAYER)
        self._check_confirm(serial, points_by_peer=False, error=RemoteProtocolError)
        self._va = serial + 1
        return [MinorSyncConfirmed(serial=serial, user_data=user_data)]

    def send_activity_end(self, user_data: bytes = b"") -> int:
        """S-ACTIVITY-END request: GT + MAP without sync type item; returns its serial."""
        after = self._advance(_I.SEND_AE)
        self._require_tokens(self._sync_tokens(), "S-ACTIVITY-END")
        self._check_activity(True, "S-ACTIVITY-END", LocalProtocolError)
        if user_data:
            self._emit(Spdu(kind=Kind.MAP, serial_number=self._vm, user_data=user_data))
        else:
            self._emit_plain(Kind.MAP, self._vm)
        self.state = after
        return self._set_point(by_peer=False)

    def _receive_ae(self, unit: Spdu) -> list[Event]:
        return self._activity_end(unit.serial_number, bytes(unit.user_data))

    def _activity_end(self, serial: int | None, user_data: bytes) -> list[Event]:
        self._require_peer_tokens(self._sync_tokens(), "AE")
        self._check_activity(True, "AE", RemoteProtocolError)
        self._check_serial("MAP", serial, self._vm)
        point = self._set_point(by_peer=True)
        return [ActivityEndRequested(serial=point, user_data=user_data)]

    def send_activity_end_response(self, user_data: bytes = b"") -> None:
        """S-ACTIVITY-END response: PT + MAA echoing the activity end's serial number."""
        after = self._advance(_I.SEND_AEA)
        if user_data:
            self._emit(Spdu(kind=Kind.MAA, serial_number=self._vm - 1, user_data=user_data))
        else:
            self._emit_plain(Kind.MAA, self._vm - 1)
        self._end_activity()
        self.state = after

    def _receive_aea(self, unit: Spdu) -> list[Event]:
        return self._activity_end_ack(unit.serial_number, bytes(unit.user_data))

    def _activity_end_ack(self, serial: int | None, user_data: bytes) -> list[Event]:
        self._check_serial("MAA", serial, self._vm - 1)
        self._end_activity()
        return [ActivityEnded(serial=self._vm - 1, user_data=user_data)]

    def send_activity_interrupt(self, reason: int) -> None:
        """S-ACTIVITY-INTERRUPT request: GT + AI."""
        self._send_stop(_I.SEND_AI, Kind.AI, reason)

    def send_activity_discard(self, reason: int) -> None:
        """S-ACTIVITY-DISCARD request: GT + AD."""
        self._send_stop(_I.SEND_AD, Kind.AD, reason)

    def _send_stop(self, what: Input, kind: Kind, reason: int) -> None:
        after = self._advance(what)
        self._require_tokens(MAJOR_ACTIVITY_BIT, what.value)
        self._check_activity(True, what.value, LocalProtocolError)
        self._emit(Spdu(kind=kind, reason_code=reason))
        self.state = after

    def _receive_ai(self, unit: Spdu) -> list[Event]:
        self._check_stop(unit)
        return [ActivityInterrupted(reason=unit.reason_code)]

    def _receive_ad(self, unit: Spdu) -> list[Event]:
        self._check_stop(unit)
        return [ActivityDiscarded(reason=unit.reason_code)]

    def _check_stop(self, unit: Spdu) -> None:
        self._require_peer_tokens(MAJOR_ACTIVITY_BIT, unit.kind.name)
        self._check_activity(True, unit.kind.name, RemoteProtocolError)

    def send_activity_interrupt_response(self) -> None:
        """S-ACTIVITY-INTERRUPT response: PT + AIA; every token goes to the peer."""
        self._send_stopped(_I.SEND_AIA, Kind.AIA)

    def send_activity_discard_response(self) -> None:
        """S-ACTIVITY-DISCARD response: PT + ADA; every token goes to the peer."""
        self._send_stopped(_I.SEND_ADA, Kind.ADA)

    def _send_stopped(self, what: Input, kind: Kind) -> None:
        after = self._advance(what)
        self._emit(Spdu(kind=kind))
        self._end_activity()
        self._held = 0
        self.state = after

    def _receive_aia(self, unit: Spdu) -> list[Event]:
        self._stopped()
        return [ActivityInterruptConfirmed()]

    def _receive_ada(self, unit: Spdu) -> list[Event]:
        self._stopped()
        return [ActivityDiscardConfirmed()]

    def _stopped(self) -> None:
        self._end_activity()
        self._held = self._available

    # --- exceptions -------------------------------------------------------------------

    def send_exception_report(self, reason: int, user_data: bytes = b"") -> None:
        """S-U-EXCEPTION-REPORT request: PT + ED, by the side without the data token."""
        after = self._advance(_I.SEND_ED)
        if not self._available & DATA_BIT or self._held & DATA_BIT:
            raise LocalProtocolError("ED is for the side without the data token", layer=_LAYER)
        self._emit(Spdu(kind=Kind.ED, reason_code=reason, user_data=user_data))
        self.state = after

    def _receive_ed(self, unit: Spdu) -> list[Event]:
        self._hold_data_token(unit)
        data = bytes(unit.user_data)
        return [ExceptionReported(reason=unit.reason_code, user_data=data, by_provider=False)]

    def _receive_er(self, unit: Spdu) -> list[Event]:
        self._hold_data_token(unit)
        return [ExceptionReported(reason=None, user_data=b"", by_provider=True)]

    def _hold_data_token(self, unit: Spdu) -> None:
        if not self._held & DATA_BIT:
            raise RemoteProtocolError(
                f"{unit.kind.name} to the side without the data token", layer=_LAYER
            )

    # --- release and abort ------------------------------------------------------------

    def send_release(self, user_data: bytes = b"") -> None:
        """S-RELEASE request: FN (transport to be released); needs every token."""
        after = self._advance(_I.SEND_FN)
        self._require_tokens(self._available, "S-RELEASE")
        self._check_activity(False, "S-RELEASE", LocalProtocolError)
        fn = Spdu(kind=Kind.FN, transport_disconnect=codec.TRANSPORT_RELEASED, user_data=user_data)
        self._emit(fn)
        self.state = after

    def _receive_fn(self, unit: Spdu) -> list[Event]:
        self._require_peer_tokens(self._available, "FN")
        self._check_activity(False, "FN", RemoteProtocolError)
        return [ReleaseRequested(user_data=bytes(unit.user_data))]

    def send_release_response(self, user_data: bytes = b"") -> None:
        """S-RELEASE response, accepted: DN; the connection is closed."""
        after = self._advance(_I.SEND_DN)
        self._emit(Spdu(kind=Kind.DN, user_data=user_data))
        self.state = after

    def send_release_refuse(self, user_data: bytes = b"") -> None:
        """S-RELEASE response, rejected: NF (negotiated release only)."""
        after = self._advance(_I.SEND_NF)
        self._emit(Spdu(kind=Kind.NF, user_data=user_data))
        self.state = after

    def _receive_dn(self, unit: Spdu) -> list[Event]:
        return [Released(user_data=bytes(unit.user_data))]

    def _receive_nf(self, unit: Spdu) -> list[Event]:
        return [ReleaseRefused(user_data=bytes(unit.user_data))]

    def send_abort(
        self, user_data: bytes = b"", *, reason: int = codec.TRANSPORT_RELEASED | codec.USER_ABORT
    ) -> None:
        """S-U-ABORT request: AB with transport disconnect ``reason``; the connection closes."""
        after = self._advance(_I.SEND_AB)
        if self.state is not State.IDLE:  # before the CN there is no one to tell
            self._emit(Spdu(kind=Kind.AB, transport_disconnect=reason, user_data=user_data))
        self.state = after

    def _receive_ab(self, unit: Spdu) -> list[Event]:
        reason = unit.transport_disconnect
        if reason is not None and not reason & codec.TRANSPORT_RELEASED:
            self._emit(Spdu(kind=Kind.AA))  # the peer keeps the transport: acknowledge
        why = "aborted by the peer"
        if reason is not None and not reason & codec.USER_ABORT:
            why = f"aborted by the peer's session provider (transport disconnect {reason:#04x})"
        return [Aborted(reason=reason, user_data=bytes(unit.user_data), by_peer=True, why=why)]

    def _receive_nothing(self, unit: Spdu) -> list[Event]:
        return []

    # --- receiving --------------------------------------------------------------------

    def receive_tsdu(self, tsdu: bytes) -> list[Event]:
        """Everything one TSDU from the peer means.  A protocol error closes with AB."""
        if self.state is State.CLOSED:
            return []  # the transport is being closed; nothing more counts
        try:
            plain = (
                codec.decode_plain_tsdu(tsdu)
                if type(tsdu) is bytes and self._segments is None
                else None
            )
            if plain is not None:
                return self._receive_plain(plain)
            events: list[Event] = []
            for unit in self._units_of(codec.decode_tsdu(tsdu)):
                events.extend(self._receive(unit))
            return events
        except (DecodeError, RemoteProtocolError) as error:
            return self._protocol_error(error)

    def _receive_plain(self, plain: codec.PlainSpdu) -> list[Event]:
        """:meth:`_receive` for a data-phase SPDU in its plain form (no Spdu is built)."""
        kind, serial, sync_type, data = plain
        what = _PLAIN_INPUTS[kind]
        after = self._next(what, RemoteProtocolError)
        if (self.state, what) in DISCARDED:
            return []
        if kind is Kind.DT:
            events = self._data_received(data)
        elif kind is Kind.AS:
            events = self._activity_started(bytes(data), b"")
        elif kind is Kind.MIP:
            events = self._minor_sync_point(serial, sync_type, b"")
        elif kind is Kind.MIA:
            events = self._minor_sync_ack(serial, b"")
        elif kind is Kind.MAP:
            events = self._activity_end(serial, b"")
        else:
            events = self._activity_end_ack(serial, b"")
        self.state = after
        return events

    def _units_of(self, spdus: list[Spdu]) -> list[Spdu]:
        """Drop the empty GT or PT in front of a category 2 SPDU: it only concatenates."""
        first = spdus[0]
        if len(spdus) == 2 and not first.token_item and not first.user_data:
            return spdus[1:]
        return spdus

    def _receive(self, unit: Spdu) -> list[Event]:
        whole = self._reassemble(unit)
        if whole is None:
            return []
        what = input_of(whole)
        after = self._next(what, RemoteProtocolError)
        if (self.state, what) in DISCARDED:
            return []
        events = _RECEIVERS[whole.kind](self, whole)
        self.state = after
        return events

    def _reassemble(self, unit: Spdu) -> Spdu | None:
        """A whole SPDU, or None while segments (enclosure item, PI 25) are arriving."""
        enclosure = unit.enclosure_item
        gathered = self._segments
        whole = codec.ENCLOSURE_BEGIN | codec.ENCLOSURE_END
        if unit.kind is Kind.CDO or enclosure is None or (enclosure & whole == whole):
            if gathered is not None and unit.kind not in (Kind.AB, Kind.PT):
                raise RemoteProtocolError(f"{unit.kind.name} between segments", layer=_LAYER)
            return unit
        if enclosure & codec.ENCLOSURE_BEGIN:
            if gathered is not None:
                raise RemoteProtocolError("a segmented SPDU begins twice", layer=_LAYER)
            gathered = Gathered(unit, self.limits.max_spdu_size, "segmented SPDU")
            self._segments = gathered
        elif gathered is None or gathered.first.kind is not unit.kind:
            raise RemoteProtocolError(f"{unit.kind.name} segment out of place", layer=_LAYER)
        gathered.add(unit.user_data)
        if not enclosure & codec.ENCLOSURE_END:
            return None
        self._segments = None
        return replace(gathered.first, enclosure_item=None, user_data=gathered.joined())

    def _protocol_error(self, error: DecodeError | RemoteProtocolError) -> list[Event]:
        """X.225 7.9: on a protocol error, AB (transport released, protocol error)."""
        reason = _PROTOCOL_ERROR
        if isinstance(error, RemoteProtocolError) and error.reason is not None:
            reason = error.reason
        self._outbox.append(codec.encode_tsdu(Spdu(kind=Kind.AB, transport_disconnect=reason)))
        self.state = State.CLOSED
        why = error.why if isinstance(error, ProtocolError) else str(error)
        return [Aborted(reason=reason, user_data=b"", by_peer=False, why=why)]


def _immutable(data: bytes | memoryview) -> bytes | memoryview:
    """``data``, or a copy of it when what it shows may change before it is sent.  A
    read-only view of a file mapping is not copied: the file it maps (a spooled APDU) is
    not written again while it is sent."""
    if type(data) is bytes:
        return data
    if isinstance(data, memoryview):
        shown = type(data.obj)
        if shown is bytes or (shown is mmap.mmap and data.readonly):
            return data
    return bytes(data)


# The input each plain SPDU is (a plain MAP has no sync type item: an activity end).
_PLAIN_INPUTS: dict[Kind, Input] = {
    Kind.DT: _I.RECV_DT,
    Kind.AS: _I.RECV_AS,
    Kind.MIP: _I.RECV_MIP,
    Kind.MIA: _I.RECV_MIA,
    Kind.MAP: _I.RECV_AE,
    Kind.MAA: _I.RECV_AEA,
}

_Receiver = Callable[[SessionConnection, Spdu], list[Event]]
SC = SessionConnection
_RECEIVERS: dict[Kind, _Receiver] = {
    Kind.CN: SC._receive_cn,
    Kind.OA: SC._receive_oa,
    Kind.CDO: SC._receive_cdo,
    Kind.AC: SC._receive_ac,
    Kind.RF: SC._receive_rf,
    Kind.FN: SC._receive_fn,
    Kind.DN: SC._receive_dn,
    Kind.NF: SC._receive_nf,
    Kind.AB: SC._receive_ab,
    Kind.AA: SC._receive_nothing,
    Kind.GTC: SC._receive_gtc,
    Kind.GTA: SC._receive_nothing,
    Kind.GT: SC._receive_gt,
    Kind.PT: SC._receive_pt,
    Kind.DT: SC._receive_dt,
    Kind.MIP: SC._receive_mip,
    Kind.MIA: SC._receive_mia,
    Kind.MAP: SC._receive_ae,  # a major sync point (RECV_MAP) never gets this far
    Kind.MAA: SC._receive_aea,
    Kind.AS: SC._receive_as,
    Kind.AR: SC._receive_ar,
    Kind.AI: SC._receive_ai,
    Kind.AIA: SC._receive_aia,
    Kind.AD: SC._receive_ad,
    Kind.ADA: SC._receive_ada,
    Kind.ER: SC._receive_er,
    Kind.ED: SC._receive_ed,
}
