"""Session connection establishment: CN, OA, CDO, AC and RF (X.225 7.1-7.5), sans I/O.

What the two sides agree on, and how:

- functional units: the AND of both sides' session user requirements (PI 20; absent means
  ``DEFAULT_REQUIREMENTS``); a responder accepts at most what it implements and picks
  half-duplex when both half-duplex and duplex were proposed;
- the protocol version (PI 22): 2 when proposed, else 1;
- where each token starts (PI 26); "called SS-user's choice" settles on the initiator's
  side, where RTSE's turn starts;
- the TSDU maximum size per direction (PI 21): the smaller of both; a direction the
  initiator proposed no limit for stays unlimited (as ISODE reads it); sizes below 64
  mean no limit;
- CN user data beyond 10,240 octets: the CN carries the first 10,240 in PGI 194 with data
  overflow (PI 60); the responder answers OA; the rest follows in CDO SPDUs whose last
  has the end bit of the enclosure item (X.225 7.2, 7.3).

:class:`Establishment` builds the SPDUs and reads the peer's; p1.osi.session drives it and
owns the state.  Builders never change anything, so a send that fails changes nothing.

Public API::

    MIN_TSDU_SIZE; usable_size(size) -> int
    Gathered(first, limit, what): .add(piece), .joined()    bounded joining of user data
    Agreement(requirements, token_setting, send_limit, version, initial_serial)
    Establishment(role, limits, tsdu_maximum_size)
        connect_spdu(...) -> Spdu / connected(requirements, token_setting, user_data)
        overflow_spdus(oa) -> list[Spdu]
        receive_connect(cn) -> Spdu | None / receive_connect_data(cdo) -> bool
        connect_requested() -> ConnectRequested
        accept(user_data, requirements) -> (Spdu, Agreement) / refuse(user_data, reason)
        accept_room: the most user data the AC may carry (by the version agreed)
        receive_accept(ac) -> (Agreement, Token asked for)
    echoed_identifier(cn) -> ConnectionIdentifier | None    what our AC or RF carries
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p1.osi import LocalProtocolError, RemoteProtocolError, Role, StackLimits
from p1.osi.x225 import spdu as codec
from p1.osi.x225.events import ConnectRequested
from p1.osi.x225.machine import (
    ALL_ON_INITIATOR,
    DEFAULT_REQUIREMENTS,
    SUPPORTED_REQUIREMENTS,
    Token,
    available_tokens,
    resolve_setting,
)
from p1.osi.x225.spdu import Kind, Requirement, Spdu

MIN_TSDU_SIZE = 64
"""A TSDU maximum size below this is treated as no limit (as ISODE does)."""
_LAYER = "session"
_NO_SIZES = (0, 0)


def usable_size(size: int) -> int:
    """A negotiated TSDU maximum size as a limit to segment by (0: none)."""
    return size if size >= MIN_TSDU_SIZE else 0


@dataclass(slots=True)
class Gathered:
    """User data arriving in several SPDUs (segments, or a CN and its CDOs), bounded."""

    first: Spdu
    limit: int
    what: str
    pieces: list[bytes | memoryview] = field(default_factory=list)
    size: int = 0

    def add(self, piece: bytes | memoryview) -> None:
        self.size += len(piece)
        if self.size > self.limit:
            raise RemoteProtocolError(f"{self.what} exceeds {self.limit} octets", layer=_LAYER)
        self.pieces.append(piece)

    def joined(self) -> bytes:
        """The pieces in one bytes object: the only copy of them."""
        return b"".join(self.pieces)


@dataclass(frozen=True, slots=True, kw_only=True)
class Agreement:
    """What establishment settled for the data transfer phase."""

    requirements: int
    token_setting: int
    send_limit: int  # TSDU maximum size for what this side sends; 0: none
    version: int
    initial_serial: int = 0


def _version_bits(version: int) -> int:
    return codec.VERSION_2 if version == 2 else codec.VERSION_1


class Establishment:
    """Both sides of S-CONNECT: the CN / AC / RF (and OA / CDO) a connection exchanges."""

    def __init__(self, role: Role, limits: StackLimits, tsdu_maximum_size: int) -> None:
        self.role = role
        self.limits = limits
        self.tsdu_maximum_size = tsdu_maximum_size
        self.version = 2
        self.proposed = 0  # the requirements in the CN
        self.setting = ALL_ON_INITIATOR  # the token setting in the CN
        self._peer_sizes: tuple[int, int] | None = None
        self._connect: Spdu | None = None  # responder: the CN being answered
        self._data: Gathered | None = None  # responder: CN and CDO user data
        self._overflow = memoryview(b"")  # initiator: CN user data for the CDOs

    # --- initiator ---------------------------------------------------------------------

    def connect_spdu(
        self,
        user_data: bytes,
        *,
        requirements: int,
        calling_ssap: bytes,
        called_ssap: bytes,
        token_setting: int,
        connection_id: codec.ConnectionIdentifier | None,
        versions: int = codec.VERSION_2,
    ) -> Spdu:
        """The CN; with data overflow when the user data does not fit 10,240 octets."""
        if not 0 <= requirements <= 0xFFFF:
            raise LocalProtocolError(f"requirements {requirements:#x} out of range", layer=_LAYER)
        size = self.tsdu_maximum_size
        item = codec.ConnectAcceptItem(
            protocol_options=0,
            tsdu_maximum_size=(size, size) if size else None,
            version_number=versions,
            token_setting=token_setting if available_tokens(requirements) else None,
        )
        overflow = len(user_data) > codec.EXTENDED_USER_DATA_MAX
        return Spdu(
            kind=Kind.CN,
            connection_identifier=connection_id,
            connect_accept_item=item,
            session_user_requirements=requirements,
            calling_ssap=calling_ssap or None,
            called_ssap=called_ssap or None,
            data_overflow=codec.MORE_DATA if overflow else None,
            user_data=user_data[: codec.EXTENDED_USER_DATA_MAX],
        )

    def connected(self, requirements: int, token_setting: int, user_data: bytes) -> None:
        """The CN went out: remember what it proposed and the data left for CDOs."""
        self.proposed, self.setting = requirements, token_setting
        self._overflow = memoryview(user_data)[codec.EXTENDED_USER_DATA_MAX :]

    def overflow_spdus(self, oa: Spdu) -> list[Spdu]:
        """The CDO SPDUs the OA invites, each within the TSDU size the OA states."""
        limit = usable_size((oa.tsdu_maximum_size or _NO_SIZES)[0])
        room = min(codec.EXTENDED_USER_DATA_MAX, limit - 16) if limit else None
        room = room or codec.EXTENDED_USER_DATA_MAX
        data, self._overflow = self._overflow, memoryview(b"")
        chunks = [data[offset : offset + room] for offset in range(0, len(data), room)]
        ends = [0] * (len(chunks) - 1) + [codec.ENCLOSURE_END]
        return [
            Spdu(kind=Kind.CDO, enclosure_item=end, user_data=bytes(chunk))
            for chunk, end in zip(chunks, ends, strict=True)
        ]

    def receive_accept(self, ac: Spdu) -> tuple[Agreement, Token]:
        """Read the AC: what was agreed, and the tokens the responder asks for (PI 16)."""
        item = ac.connect_accept_item or codec.ConnectAcceptItem()
        offered = ac.session_user_requirements
        selected = (DEFAULT_REQUIREMENTS if offered is None else offered) & self.proposed
        setting = self.setting if item.token_setting is None else item.token_setting
        if item.version_number is not None and not item.version_number & codec.VERSION_2:
            self.version = 1
        self.check_connect_data(ac.user_data)
        agreement = Agreement(
            requirements=selected,
            token_setting=resolve_setting(setting),
            send_limit=usable_size((item.tsdu_maximum_size or _NO_SIZES)[0]),
            version=self.version,
        )
        return agreement, Token((ac.token_item or 0) & 0x55)

    def check_connect_data(self, data: bytes | memoryview) -> None:
        if len(data) > self.limits.max_connect_data_size:
            raise RemoteProtocolError(f"{len(data)} octets of connect data", layer=_LAYER)

    # --- responder ---------------------------------------------------------------------

    def receive_connect(self, cn: Spdu) -> Spdu | None:
        """Read the CN; returns the OA to send when more user data is to come."""
        if self.role is not Role.RESPONDER:
            raise RemoteProtocolError("CN received by the initiator", layer=_LAYER)
        item = cn.connect_accept_item or codec.ConnectAcceptItem()
        versions = codec.VERSION_1 if item.version_number is None else item.version_number
        if not versions & (codec.VERSION_1 | codec.VERSION_2):
            raise RemoteProtocolError(f"no version we know in {versions:#x}", layer=_LAYER)
        self.version = 2 if versions & codec.VERSION_2 else 1
        requirements = cn.session_user_requirements
        self.proposed = DEFAULT_REQUIREMENTS if requirements is None else requirements
        self.setting = item.token_setting or ALL_ON_INITIATOR
        self._peer_sizes = item.tsdu_maximum_size
        self._connect = cn
        self._data = Gathered(cn, self.limits.max_connect_data_size, "CN user data")
        self._data.add(cn.user_data)
        if not cn.data_overflow:
            return None
        version = _version_bits(self.version)
        return Spdu(kind=Kind.OA, tsdu_maximum_size=self._sizes(), version_number=version)

    def receive_connect_data(self, cdo: Spdu) -> bool:
        """Add a CDO's user data; True once the last one has arrived."""
        assert self._data is not None  # set by the CN that announced the overflow
        self._data.add(cdo.user_data)
        return bool((cdo.enclosure_item or 0) & codec.ENCLOSURE_END)

    def connect_requested(self) -> ConnectRequested:
        """S-CONNECT indication, once all the CN user data is here."""
        data, cn = self._data, self._connect
        assert data is not None and cn is not None
        self._data = None
        return ConnectRequested(
            user_data=data.joined(),
            requirements=self.proposed,
            token_setting=self.setting,
            calling_ssap=cn.calling_ssap or b"",
            called_ssap=cn.called_ssap or b"",
            version=self.version,
            connection_identifier=cn.connection_identifier,
        )

    @property
    def accept_room(self) -> int:
        """The most user data the AC may carry: 512 octets in version 1, 10,240 in version 2
        (X.225 8.3.4, the user data and extended user data parameters)."""
        return codec.EXTENDED_USER_DATA_MAX if self.version == 2 else codec.USER_DATA_MAX

    def _sizes(self) -> tuple[int, int] | None:
        own = self.tsdu_maximum_size
        sizes = [min(size, own) if own else size for size in self._peer_sizes or _NO_SIZES]
        return (sizes[0], sizes[1]) if any(sizes) else None

    def accept(self, user_data: bytes, requirements: int | None) -> tuple[Spdu, Agreement]:
        """The AC and what it agrees (nothing changes here: the caller sends, then opens)."""
        selected = self._select(requirements)
        if len(user_data) > self.accept_room:
            raise LocalProtocolError(f"{len(user_data)} octets of AC user data", layer=_LAYER)
        setting = resolve_setting(self.setting)
        sizes = self._sizes()
        assert self._connect is not None  # the CN this AC answers
        item = codec.ConnectAcceptItem(
            protocol_options=0,
            tsdu_maximum_size=sizes,
            version_number=_version_bits(self.version),
            token_setting=setting if available_tokens(selected) else None,
        )
        ac = Spdu(
            kind=Kind.AC,
            connection_identifier=echoed_identifier(self._connect),
            connect_accept_item=item,
            session_user_requirements=selected,
            called_ssap=self._connect.called_ssap or b"",  # the responding SSAP
            user_data=user_data,
        )
        item_in = self._connect.connect_accept_item or codec.ConnectAcceptItem()
        agreement = Agreement(
            requirements=selected,
            token_setting=setting,
            send_limit=usable_size(sizes[1]) if sizes else 0,
            version=self.version,
            initial_serial=item_in.initial_serial_number or 0,
        )
        return ac, agreement

    def _select(self, requirements: int | None) -> int:
        proposed = self.proposed
        if requirements is None:
            selected = proposed & SUPPORTED_REQUIREMENTS
            if selected & Requirement.HALF_DUPLEX:
                selected &= ~Requirement.DUPLEX  # one of the two: half-duplex, as RTSE needs
            return int(selected)
        if requirements & ~proposed or requirements & ~SUPPORTED_REQUIREMENTS:
            raise LocalProtocolError(
                f"requirements {requirements:#06x} not within {proposed:#06x} and supported",
                layer=_LAYER,
            )
        return requirements

    def refuse(self, user_data: bytes, reason: int) -> Spdu:
        """The RF; user data only with reason 2 (rejection by the called SS-user)."""
        if user_data and reason != codec.REFUSED_BY_USER:
            raise LocalProtocolError("RF carries user data with reason 2 only", layer=_LAYER)
        return Spdu(
            kind=Kind.RF,
            connection_identifier=echoed_identifier(self._connect),
            transport_disconnect=codec.TRANSPORT_RELEASED,
            session_user_requirements=int(self.proposed & SUPPORTED_REQUIREMENTS),
            reason_code=reason,
            user_data=user_data,
        )


def echoed_identifier(cn: Spdu | None) -> codec.ConnectionIdentifier | None:
    """The connection identifier (PGI 1) of our AC or RF answering ``cn`` (X.225 8.3.2,
    8.3.3): the CN's common reference and additional reference information, and the
    calling SS-user reference as the called one, as the products we meet answer (none
    when the CN had none)."""
    asked = cn.connection_identifier if cn is not None else None
    if asked is None:
        return None
    echoed = codec.ConnectionIdentifier(
        called_ss_user_reference=asked.calling_ss_user_reference,
        common_reference=asked.common_reference,
        additional_reference_information=asked.additional_reference_information,
    )
    return None if echoed == codec.ConnectionIdentifier() else echoed
