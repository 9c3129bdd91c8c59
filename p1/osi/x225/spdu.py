"""Session protocol data units: codes, parameters and encoding (X.225 / ISO 8327-1 clause 8).

A TSDU carries SPDUs under the basic concatenation rules (X.225 6.3.7, 8.1)::

    TSDU = category 1 SPDU                       CN OA CDO AC RF FN DN NF AB AA GTC GTA
         | category 0 SPDU                       GT or PT alone (giving or asking for tokens)
         | category 0 SPDU, category 2 SPDU      GT + DT MIP MAP(AE) AS AR AI AD
                                                 PT + MIA MAA(AEA) AIA ADA ER ED

GT and DT share SI 1, AB and AI 25, AA and AIA 26: the position in the TSDU tells them apart.
Established stacks (ISODE and those derived from it) accept only the pairs above, so that is
what we send; we accept either GT or PT before any category 2 SPDU.

Each SPDU (X.225 8.2)::

    SI (1 octet) | LI | parameter field of PGI and PI units | user information (DT only)
    unit         = code (1 octet) | LI | value        (PGI 1 and 5 hold PI units)
    LI           = 1 octet (0-254), or FF and 2 octets big endian (255-65535)

The user information of a DT is everything after its parameter field up to the end of the
TSDU.  A :class:`Spdu` keeps the parameters a kind defines, in the order X.225 lists them;
unknown parameters are skipped when decoding.  ``user_data`` is the SS-user data wherever the
SPDU keeps it: PGI 193 (or 194, extended, in CN and AC), PI 46 in MIA, the octets after the
reason code in RF, the user information of DT.

Public API::

    Kind                      the SPDU kinds; .si, .category
    Spdu(kind=..., ...)       one SPDU; ConnectionIdentifier, ConnectAcceptItem,
                              LinkingInformation (AR's PGI 33)
    decode_tsdu(tsdu) -> list[Spdu]          raises only p1.errors.DecodeError
    encode_spdu(spdu) -> bytes               one SPDU (raises p1.errors.EncodeError)
    encode_tsdu(spdu) -> bytes               with the GT / PT a category 2 SPDU needs
    encode_segments(spdu, limit) -> list[bytes]   segmented with the enclosure item (PI 25)
    the data phase's plain TSDUs, without a Spdu (the transfer path):
        DT_PREFIX (GT + DT, the user data follows), encode_serial_tsdu(kind, serial),
        encode_activity_start_tsdu(activity_id)
        decode_plain_tsdu(tsdu) -> PlainSpdu | None        None: ask decode_tsdu
    SEGMENTABLE                 the kinds encode_segments takes
    Requirement                 session functional units (PI 20 bits)
    the PI / PGI codes and the bits of PI 17, 22, 25 and 15 as constants
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Final

from p1.errors import DecodeError, EncodeError

# Parameter group and parameter identifiers (X.225 8.3).
PGI_CONNECTION_IDENTIFIER = 1
PGI_CONNECT_ACCEPT_ITEM = 5
PI_CALLED_SS_USER_REFERENCE = 9
PI_CALLING_SS_USER_REFERENCE = 10
PI_COMMON_REFERENCE = 11
PI_ADDITIONAL_REFERENCE_INFORMATION = 12
PI_SYNC_TYPE_ITEM = 15
PI_TOKEN_ITEM = 16
PI_TRANSPORT_DISCONNECT = 17
PI_PROTOCOL_OPTIONS = 19
PI_SESSION_USER_REQUIREMENTS = 20
PI_TSDU_MAXIMUM_SIZE = 21
PI_VERSION_NUMBER = 22
PI_INITIAL_SERIAL_NUMBER = 23
PI_ENCLOSURE_ITEM = 25
PI_TOKEN_SETTING_ITEM = 26
PGI_LINKING_INFORMATION = 33
PI_ACTIVITY_IDENTIFIER = 41
PI_SERIAL_NUMBER = 42
PI_MIA_USER_DATA = 46
PI_REFLECT_PARAMETER_VALUES = 49
PI_REASON_CODE = 50
PI_CALLING_SSAP = 51
PI_CALLED_SSAP = 52  # "responding SSAP" in AC
PI_DATA_OVERFLOW = 60
PGI_USER_DATA = 193
PGI_EXTENDED_USER_DATA = 194

USER_DATA_MAX = 512
"""Largest user data in PGI 193 of CN and AC; beyond it, PGI 194 (version 2)."""
EXTENDED_USER_DATA_MAX = 10240
"""Largest extended user data (PGI 194) in CN and AC; CN carries more with data overflow."""

VERSION_1 = 0x01
VERSION_2 = 0x02
"""Version number (PI 22) bits: the versions proposed (CN) or selected (AC)."""

TRANSPORT_RELEASED = 0x01
USER_ABORT = 0x02
PROTOCOL_ERROR = 0x04
NO_REASON = 0x08
IMPLEMENTATION_RESTRICTION = 0x10
"""Transport disconnect (PI 17) bits; bit 1 clear means the transport connection is kept."""

ENCLOSURE_BEGIN = 0x01
ENCLOSURE_END = 0x02
"""Enclosure item (PI 25) bits: this segment begins / ends the SSDU."""

SYNC_NO_CONFIRM = 0x01
"""Sync type item (PI 15) of MIP: no explicit confirmation.  In MAP: the activity goes on
(a major synchronization point, not an activity end)."""

MORE_DATA = 0x01
"""Data overflow (PI 60) of CN: more user data follows in CDO SPDUs."""

REFUSED_BY_USER = 2
"""RF reason code 2: rejection by the called SS-user; the rest of PI 50 is user data."""

SSAP_UNKNOWN = 129
"""RF reason code 129 (X.225, the RF SPDU's Reason Code, PI 50): session selector
unknown, a refusal by the session provider itself (no user data)."""

PROVIDER_REFUSALS: Final = {
    129: "session selector unknown",
    130: "SS-user not attached to SSAP",
    131: "SPM congestion at connect time",
    132: "proposed protocol versions not supported",
    133: "rejection by the SPM, no reason",
    134: "rejection by the SPM, implementation restriction",
}
"""RF reason codes of the session provider (X.225 PI 50), as an operator reads them."""

MAX_ACTIVITY_ID_SIZE = 6
"""Octets in an activity identifier (PI 41) at most (X.225 8.3.1.9)."""


class Requirement(enum.IntFlag):
    """Session functional units, as the session user requirements (PI 20) code them."""

    HALF_DUPLEX = 0x0001
    DUPLEX = 0x0002
    EXPEDITED_DATA = 0x0004
    MINOR_SYNC = 0x0008
    MAJOR_SYNC = 0x0010
    RESYNC = 0x0020
    ACTIVITY = 0x0040
    NEGOTIATED_RELEASE = 0x0080
    CAPABILITY_DATA = 0x0100
    EXCEPTIONS = 0x0200
    TYPED_DATA = 0x0400


class Kind(enum.Enum):
    """An SPDU kind: its SI code and its concatenation category (X.225 Table 7)."""

    # Members are singletons, so identity is equality: hash by identity, in C, rather than
    # by Enum's Python-level hash of the name (kinds key the tables used for every SPDU).
    __hash__ = object.__hash__

    CN = (13, 1)  # CONNECT
    OA = (16, 1)  # OVERFLOW ACCEPT
    CDO = (15, 1)  # CONNECT DATA OVERFLOW
    AC = (14, 1)  # ACCEPT
    RF = (12, 1)  # REFUSE
    FN = (9, 1)  # FINISH
    DN = (10, 1)  # DISCONNECT
    NF = (8, 1)  # NOT FINISHED
    AB = (25, 1)  # ABORT
    AA = (26, 1)  # ABORT ACCEPT
    GTC = (21, 1)  # GIVE TOKENS CONFIRM
    GTA = (22, 1)  # GIVE TOKENS ACK
    GT = (1, 0)  # GIVE TOKENS
    PT = (2, 0)  # PLEASE TOKENS
    DT = (1, 2)  # DATA TRANSFER
    MIP = (49, 2)  # MINOR SYNC POINT
    MIA = (50, 2)  # MINOR SYNC ACK
    MAP = (41, 2)  # MAJOR SYNC POINT, or ACTIVITY END without sync type item
    MAA = (42, 2)  # MAJOR SYNC ACK, or ACTIVITY END ACK
    AS = (45, 2)  # ACTIVITY START
    AR = (29, 2)  # ACTIVITY RESUME
    AI = (25, 2)  # ACTIVITY INTERRUPT
    AIA = (26, 2)  # ACTIVITY INTERRUPT ACK
    AD = (57, 2)  # ACTIVITY DISCARD
    ADA = (58, 2)  # ACTIVITY DISCARD ACK
    ER = (0, 2)  # EXCEPTION REPORT
    ED = (48, 2)  # EXCEPTION DATA

    @property
    def si(self) -> int:
        return self.value[0]

    @property
    def category(self) -> int:
        return self.value[1]


_BY_CATEGORY: dict[int, dict[int, Kind]] = {
    category: {kind.si: kind for kind in Kind if kind.category == category}
    for category in (0, 1, 2)
}

# The category 0 SPDU each category 2 SPDU is sent after: GT before what the token holder
# sends, PT before the answers.
PREFIX: dict[Kind, Kind] = {
    **dict.fromkeys((Kind.DT, Kind.MIP, Kind.MAP, Kind.AS, Kind.AR, Kind.AI, Kind.AD), Kind.GT),
    **dict.fromkeys((Kind.MIA, Kind.MAA, Kind.AIA, Kind.ADA, Kind.ER, Kind.ED), Kind.PT),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionIdentifier:
    """Connection identifier, PGI 1 (CN, AC, RF): references chosen by the SS-users."""

    called_ss_user_reference: bytes | None = None  # PI 9
    calling_ss_user_reference: bytes | None = None  # PI 10
    common_reference: bytes | None = None  # PI 11
    additional_reference_information: bytes | None = None  # PI 12


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectAcceptItem:
    """Connect/accept item, PGI 5 (CN, AC)."""

    protocol_options: int | None = None  # PI 19: bit 1 = extended concatenation received
    tsdu_maximum_size: tuple[int, int] | None = None  # PI 21: (initiator->, responder->)
    version_number: int | None = None  # PI 22: VERSION_1 | VERSION_2 bits
    initial_serial_number: int | None = None  # PI 23: ASCII digits
    token_setting: int | None = None  # PI 26: 2 bits a token (release .. data)


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkingInformation:
    """Linking information, PGI 33 (AR): the activity resumed and where it was left off
    (X.225 8.3.29).  The session connection on which it was interrupted is named by its
    connection identifier (PI 9 to 12, as in PGI 1); the old activity identifier (PI 41)
    and the serial number (PI 42) are mandatory."""

    connection_identifier: ConnectionIdentifier = ConnectionIdentifier()
    old_activity_identifier: bytes = b""  # PI 41
    serial_number: int = 0  # PI 42


@dataclass(frozen=True, slots=True, kw_only=True)
class Spdu:
    """One SPDU: its kind, the parameters it carried and its user data (see the module doc)."""

    kind: Kind
    connection_identifier: ConnectionIdentifier | None = None  # PGI 1
    connect_accept_item: ConnectAcceptItem | None = None  # PGI 5
    sync_type_item: int | None = None  # PI 15
    token_item: int | None = None  # PI 16: Token bits
    transport_disconnect: int | None = None  # PI 17
    session_user_requirements: int | None = None  # PI 20
    tsdu_maximum_size: tuple[int, int] | None = None  # PI 21 (OA; CN and AC: in PGI 5)
    version_number: int | None = None  # PI 22 (RF, OA; CN and AC: in PGI 5)
    enclosure_item: int | None = None  # PI 25
    linking_information: LinkingInformation | None = None  # PGI 33 (AR)
    activity_identifier: bytes | None = None  # PI 41 (AR: the new one)
    serial_number: int | None = None  # PI 42
    reflect_parameter_values: bytes | None = None  # PI 49
    reason_code: int | None = None  # PI 50, first octet
    calling_ssap: bytes | None = None  # PI 51
    called_ssap: bytes | None = None  # PI 52
    data_overflow: int | None = None  # PI 60
    user_data: bytes | memoryview = b""
    """SS-user data; for a decoded DT a view into the TSDU (one copy when it is kept)."""


# --- lengths and units ----------------------------------------------------------------


def _length(size: int) -> bytes:
    if size < 0xFF:
        return bytes((size,))
    if size <= 0xFFFF:
        return b"\xff" + size.to_bytes(2, "big")
    raise EncodeError(f"{size} octets do not fit an X.225 length (65,535 at most)")


def _unit(code: int, value: bytes | memoryview) -> bytes:
    return b"".join((bytes((code,)), _length(len(value)), value))


def _read_length(data: memoryview, offset: int, where: str) -> tuple[int, int]:
    if offset >= len(data):
        raise DecodeError("length missing", where=where)
    if data[offset] != 0xFF:
        return data[offset], offset + 1
    if offset + 3 > len(data):
        raise DecodeError("three-octet length cut short", where=where)
    return int.from_bytes(data[offset + 1 : offset + 3], "big"), offset + 3


def _units(data: memoryview, where: str) -> Iterator[tuple[int, memoryview]]:
    """The (code, value) units of a parameter field or of a PGI."""
    offset = 0
    while offset < len(data):
        code = data[offset]
        length, start = _read_length(data, offset + 1, f"{where} unit {code}")
        offset = start + length
        if offset > len(data):
            raise DecodeError(f"unit {code} runs past its field", where=where)
        yield code, data[start:offset]


# --- parameter values -----------------------------------------------------------------


def _octet(value: memoryview, where: str) -> int:
    if len(value) != 1:
        raise DecodeError(f"{len(value)} octets where 1 is expected", where=where)
    return value[0]


def _two_octets(value: memoryview, where: str) -> int:
    if len(value) != 2:
        raise DecodeError(f"{len(value)} octets where 2 are expected", where=where)
    return int.from_bytes(value, "big")


def _tsdu_sizes(value: memoryview, where: str) -> tuple[int, int]:
    if len(value) != 4:
        raise DecodeError(f"{len(value)} octets where 4 are expected", where=where)
    return int.from_bytes(value[:2], "big"), int.from_bytes(value[2:], "big")


def _octets(value: memoryview, where: str) -> bytes:
    return bytes(value)


def _serial(value: memoryview, where: str) -> int:
    # Serial numbers are decimal digits coded in IA5 (X.225 8.3.1.10), at most 6 unless an
    # upper limit serial number says otherwise; we take up to 10.
    text = bytes(value)
    if not 1 <= len(text) <= 10 or not text.isdigit():
        raise DecodeError(f"serial number {text!r} is not 1 to 10 decimal digits", where=where)
    return int(text)


def _write_octet(value: int) -> bytes:
    if not 0 <= value <= 0xFF:
        raise EncodeError(f"{value} does not fit one octet")
    return bytes((value,))


def _write_two_octets(value: int) -> bytes:
    if not 0 <= value <= 0xFFFF:
        raise EncodeError(f"{value} does not fit two octets")
    return value.to_bytes(2, "big")


def _write_tsdu_sizes(value: tuple[int, int]) -> bytes:
    return b"".join(_write_two_octets(size) for size in value)


def _write_serial(value: int) -> bytes:
    if value < 0:
        raise EncodeError(f"negative serial number {value}")
    return str(value).encode("ascii")


def _write_octets(value: bytes) -> bytes:
    return value


_Reader = Callable[[memoryview, str], Any]
_Writer = Callable[[Any], bytes]
_Field = tuple[str, _Reader, _Writer]

_OCTET: tuple[_Reader, _Writer] = (_octet, _write_octet)
_OCTETS: tuple[_Reader, _Writer] = (_octets, _write_octets)

# PI code -> (field name, reader, writer), inside PGI 1, inside PGI 5 and at the top level.
_REFERENCE_FIELDS: dict[int, _Field] = {
    PI_CALLED_SS_USER_REFERENCE: ("called_ss_user_reference", *_OCTETS),
    PI_CALLING_SS_USER_REFERENCE: ("calling_ss_user_reference", *_OCTETS),
    PI_COMMON_REFERENCE: ("common_reference", *_OCTETS),
    PI_ADDITIONAL_REFERENCE_INFORMATION: ("additional_reference_information", *_OCTETS),
}
_LINKING_FIELDS: dict[int, _Field] = {
    **_REFERENCE_FIELDS,
    PI_ACTIVITY_IDENTIFIER: ("old_activity_identifier", _octets, _write_octets),
    PI_SERIAL_NUMBER: ("serial_number", _serial, _write_serial),
}
_ITEM_FIELDS: dict[int, _Field] = {
    PI_PROTOCOL_OPTIONS: ("protocol_options", *_OCTET),
    PI_TSDU_MAXIMUM_SIZE: ("tsdu_maximum_size", _tsdu_sizes, _write_tsdu_sizes),
    PI_VERSION_NUMBER: ("version_number", *_OCTET),
    PI_INITIAL_SERIAL_NUMBER: ("initial_serial_number", _serial, _write_serial),
    PI_TOKEN_SETTING_ITEM: ("token_setting", *_OCTET),
}


def _read_group(value: memoryview, where: str, fields: dict[int, _Field]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for code, item in _units(value, where):
        if code in fields:
            name, reader, _ = fields[code]
            found[name] = reader(item, f"{where} PI {code}")
    return found


def _read_connection_identifier(value: memoryview, where: str) -> ConnectionIdentifier:
    return ConnectionIdentifier(**_read_group(value, where, _REFERENCE_FIELDS))


def _read_connect_accept_item(value: memoryview, where: str) -> ConnectAcceptItem:
    return ConnectAcceptItem(**_read_group(value, where, _ITEM_FIELDS))


def _read_linking_information(value: memoryview, where: str) -> LinkingInformation:
    found = _read_group(value, where, _LINKING_FIELDS)
    old, serial = found.pop("old_activity_identifier", None), found.pop("serial_number", None)
    if old is None or serial is None:
        raise DecodeError(
            "linking information without old activity identifier and serial number", where=where
        )
    return LinkingInformation(
        connection_identifier=ConnectionIdentifier(**found),
        old_activity_identifier=old,
        serial_number=serial,
    )


def _write_linking_information(value: LinkingInformation) -> bytes:
    return b"".join(
        (
            _write_group(value.connection_identifier, _REFERENCE_FIELDS),
            _unit(PI_ACTIVITY_IDENTIFIER, value.old_activity_identifier),
            _unit(PI_SERIAL_NUMBER, _write_serial(value.serial_number)),
        )
    )


def _write_group(value: object, fields: dict[int, _Field]) -> bytes:
    parts = []
    for code, (name, _, writer) in fields.items():
        item = getattr(value, name)
        if item is not None:
            parts.append(_unit(code, writer(item)))
    return b"".join(parts)


_FIELDS: dict[int, _Field] = {
    PGI_CONNECTION_IDENTIFIER: (
        "connection_identifier",
        _read_connection_identifier,
        lambda value: _write_group(value, _REFERENCE_FIELDS),
    ),
    PGI_CONNECT_ACCEPT_ITEM: (
        "connect_accept_item",
        _read_connect_accept_item,
        lambda value: _write_group(value, _ITEM_FIELDS),
    ),
    PI_SYNC_TYPE_ITEM: ("sync_type_item", *_OCTET),
    PI_TOKEN_ITEM: ("token_item", *_OCTET),
    PI_TRANSPORT_DISCONNECT: ("transport_disconnect", *_OCTET),
    PI_SESSION_USER_REQUIREMENTS: ("session_user_requirements", _two_octets, _write_two_octets),
    PI_TSDU_MAXIMUM_SIZE: ("tsdu_maximum_size", _tsdu_sizes, _write_tsdu_sizes),
    PI_VERSION_NUMBER: ("version_number", *_OCTET),
    PI_ENCLOSURE_ITEM: ("enclosure_item", *_OCTET),
    PGI_LINKING_INFORMATION: (
        "linking_information",
        _read_linking_information,
        _write_linking_information,
    ),
    PI_ACTIVITY_IDENTIFIER: ("activity_identifier", *_OCTETS),
    PI_SERIAL_NUMBER: ("serial_number", _serial, _write_serial),
    PI_REFLECT_PARAMETER_VALUES: ("reflect_parameter_values", *_OCTETS),
    PI_CALLING_SSAP: ("calling_ssap", *_OCTETS),
    PI_CALLED_SSAP: ("called_ssap", *_OCTETS),
    PI_DATA_OVERFLOW: ("data_overflow", *_OCTET),
}

# --- layouts --------------------------------------------------------------------------

_USER = -1  # where the user data goes: PGI 193 / 194, PI 46, after the RF reason, or DT's tail
_REASON = PI_REASON_CODE

# The parameters of each kind in the order X.225 8.3 lists them (and real stacks send them).
_LAYOUT: dict[Kind, tuple[int, ...]] = {
    Kind.CN: (
        PGI_CONNECTION_IDENTIFIER,
        PGI_CONNECT_ACCEPT_ITEM,
        PI_SESSION_USER_REQUIREMENTS,
        PI_CALLING_SSAP,
        PI_CALLED_SSAP,
        PI_DATA_OVERFLOW,
        _USER,
    ),
    Kind.OA: (PI_TSDU_MAXIMUM_SIZE, PI_VERSION_NUMBER),
    Kind.CDO: (PI_ENCLOSURE_ITEM, _USER),
    Kind.AC: (
        PGI_CONNECTION_IDENTIFIER,
        PGI_CONNECT_ACCEPT_ITEM,
        PI_TOKEN_ITEM,
        PI_SESSION_USER_REQUIREMENTS,
        PI_CALLING_SSAP,
        PI_CALLED_SSAP,
        PI_ENCLOSURE_ITEM,
        _USER,
    ),
    Kind.RF: (
        PGI_CONNECTION_IDENTIFIER,
        PI_TRANSPORT_DISCONNECT,
        PI_SESSION_USER_REQUIREMENTS,
        PI_VERSION_NUMBER,
        PI_ENCLOSURE_ITEM,
        _REASON,
    ),
    Kind.FN: (PI_TRANSPORT_DISCONNECT, PI_ENCLOSURE_ITEM, _USER),
    Kind.DN: (PI_ENCLOSURE_ITEM, _USER),
    Kind.NF: (PI_ENCLOSURE_ITEM, _USER),
    Kind.AB: (PI_TRANSPORT_DISCONNECT, PI_REFLECT_PARAMETER_VALUES, PI_ENCLOSURE_ITEM, _USER),
    Kind.AA: (),
    Kind.GTC: (),
    Kind.GTA: (),
    Kind.GT: (PI_TOKEN_ITEM,),
    Kind.PT: (PI_TOKEN_ITEM, PI_ENCLOSURE_ITEM, _USER),
    Kind.DT: (PI_ENCLOSURE_ITEM, _USER),
    Kind.MIP: (PI_SYNC_TYPE_ITEM, PI_SERIAL_NUMBER, PI_ENCLOSURE_ITEM, _USER),
    Kind.MIA: (PI_SERIAL_NUMBER, PI_ENCLOSURE_ITEM, _USER),
    Kind.MAP: (PI_SYNC_TYPE_ITEM, PI_SERIAL_NUMBER, PI_ENCLOSURE_ITEM, _USER),
    Kind.MAA: (PI_SERIAL_NUMBER, PI_ENCLOSURE_ITEM, _USER),
    Kind.AS: (PI_ACTIVITY_IDENTIFIER, PI_ENCLOSURE_ITEM, _USER),
    Kind.AR: (PGI_LINKING_INFORMATION, PI_ACTIVITY_IDENTIFIER, PI_ENCLOSURE_ITEM, _USER),
    Kind.AI: (_REASON, PI_ENCLOSURE_ITEM, _USER),
    Kind.AIA: (PI_ENCLOSURE_ITEM, _USER),
    Kind.AD: (_REASON, PI_ENCLOSURE_ITEM, _USER),
    Kind.ADA: (PI_ENCLOSURE_ITEM, _USER),
    Kind.ER: (PI_REFLECT_PARAMETER_VALUES,),
    Kind.ED: (_REASON, PI_ENCLOSURE_ITEM, _USER),
}

# Where user data may arrive: PGI 193 everywhere, 194 in CN and AC, PI 46 in MIA.
_USER_DATA_CODES = {PGI_USER_DATA, PGI_EXTENDED_USER_DATA, PI_MIA_USER_DATA}

# --- decoding -------------------------------------------------------------------------


def _parameters(kind: Kind, field: memoryview, where: str) -> dict[str, Any]:
    layout = _LAYOUT[kind]
    found: dict[str, Any] = {}
    for code, value in _units(field, where):
        if code in _USER_DATA_CODES and (_USER in layout or kind is Kind.RF):
            found["user_data"] = bytes(value)
        elif code == _REASON and _REASON in layout:
            if not value:
                raise DecodeError("empty reason code", where=where)
            found["reason_code"] = value[0]
            if kind is Kind.RF:
                found["user_data"] = bytes(value[1:])
        elif code in _FIELDS and code in layout:
            name, reader, _ = _FIELDS[code]
            found[name] = reader(value, f"{where} PI {code}")
        # anything else is a parameter this kind does not define: skipped
    return found


def _decode_one(kind: Kind, data: memoryview, offset: int, last: bool) -> tuple[Spdu, int]:
    where = f"{kind.name} SPDU"
    length, start = _read_length(data, offset + 1, where)
    end = start + length
    if end > len(data):
        raise DecodeError(f"LI {length} runs past the TSDU", where=where)
    fields = _parameters(kind, data[start:end], where)
    if kind is Kind.DT:
        fields["user_data"] = data[end:]  # the user information field: the rest of the TSDU
        end = len(data)
    elif last and end != len(data):
        raise DecodeError(f"{len(data) - end} octets after the last SPDU", where=where)
    return Spdu(kind=kind, **fields), end


def _kind(data: memoryview, offset: int, category: int) -> Kind:
    si = data[offset]
    kind = _BY_CATEGORY[category].get(si)
    if kind is None:
        place = "after a category 0 SPDU" if category == 2 else "starting a TSDU"
        raise DecodeError(f"SI {si} is not an SPDU we know {place}", where=f"octet {offset}")
    return kind


def decode_tsdu(tsdu: bytes | bytearray | memoryview) -> list[Spdu]:
    """The SPDUs of one TSDU (one, or a GT / PT and the SPDU concatenated with it)."""
    data = memoryview(tsdu).cast("B")
    if not data:
        raise DecodeError("empty TSDU")
    if data[0] not in _BY_CATEGORY[0]:
        first, _ = _decode_one(_kind(data, 0, 1), data, 0, last=True)
        return [first]
    first, end = _decode_one(_kind(data, 0, 0), data, 0, last=False)
    if end == len(data):
        return [first]
    second, _ = _decode_one(_kind(data, end, 2), data, end, last=True)
    return [first, second]


# --- encoding -------------------------------------------------------------------------


def _user_data_unit(spdu: Spdu) -> bytes:
    data = spdu.user_data
    if spdu.kind is Kind.MIA:
        return _unit(PI_MIA_USER_DATA, data)
    extended = spdu.kind in (Kind.CN, Kind.AC) and len(data) > USER_DATA_MAX
    return _unit(PGI_EXTENDED_USER_DATA if extended else PGI_USER_DATA, data)


def _reason_unit(spdu: Spdu) -> bytes:
    reason = _write_octet(spdu.reason_code) if spdu.reason_code is not None else b""
    tail = spdu.user_data if spdu.kind is Kind.RF else b""
    if not reason and tail:
        raise EncodeError("RF user data needs a reason code")
    return _unit(_REASON, b"".join((reason, tail))) if reason else b""


def _parameter_field(spdu: Spdu) -> bytes:
    parts = []
    for code in _LAYOUT[spdu.kind]:
        if code == _USER:
            if spdu.user_data and spdu.kind is not Kind.DT:
                parts.append(_user_data_unit(spdu))
        elif code == _REASON:
            parts.append(_reason_unit(spdu))
        else:
            name, _, writer = _FIELDS[code]
            value = getattr(spdu, name)
            if value is not None:
                parts.append(_unit(code, writer(value)))
    return b"".join(parts)


def _header(spdu: Spdu) -> bytes:
    field = _parameter_field(spdu)
    return b"".join((bytes((spdu.kind.si,)), _length(len(field)), field))


def encode_spdu(spdu: Spdu) -> bytes:
    """One SPDU; a DT carries its user data as the user information field."""
    if spdu.kind is Kind.DT:
        return b"".join((_header(spdu), spdu.user_data))
    return _header(spdu)


_EMPTY_GT = bytes((Kind.GT.si, 0))
_EMPTY_PT = bytes((Kind.PT.si, 0))
_EMPTY_PREFIX = {Kind.GT: _EMPTY_GT, Kind.PT: _EMPTY_PT}


def encode_tsdu(spdu: Spdu) -> bytes:
    """One TSDU: the SPDU, after the empty GT or PT a category 2 SPDU is concatenated with.

    A DT costs one copy of its user data: ``01 00 01 00`` and the data, joined once.
    """
    if spdu.kind.category != 2:
        return encode_spdu(spdu)
    prefix = _EMPTY_PREFIX[PREFIX[spdu.kind]]
    if spdu.kind is Kind.DT:
        return b"".join((prefix, _header(spdu), spdu.user_data))
    return b"".join((prefix, _header(spdu)))


# --- the data phase in its plain form -------------------------------------------------
#
# An RT-TRANSFER is GT + AS, GT + DT (and GT + MIP, PT + MIA with checkpoints), GT + MAP,
# PT + MAA, with no user data besides the DT's, no enclosure item and one-octet lengths.
# These code those TSDUs directly, without a Spdu (whose construction alone costs more
# than the rest of the layer); anything else takes the general codec above.

DT_PREFIX = bytes((Kind.GT.si, 0, Kind.DT.si, 0))
"""An empty GT, then a DT with an empty parameter field: the user information follows."""

_SI: dict[Kind, int] = {kind: kind.si for kind in Kind}
_PREFIX_SI: dict[Kind, int] = {kind: before.si for kind, before in PREFIX.items()}
_SERIAL_KINDS = frozenset({Kind.MIP, Kind.MIA, Kind.MAP, Kind.MAA})
_PLAIN_KINDS: dict[int, Kind] = {kind.si: kind for kind in (Kind.DT, Kind.AS, *_SERIAL_KINDS)}
# The parameters a plain SPDU may have; with any other, decode_tsdu reads the TSDU.  (MAP
# with a sync type item is a major synchronization point, which the general path takes.)
_PLAIN_PARAMETERS: dict[Kind, frozenset[int]] = {
    Kind.AS: frozenset({PI_ACTIVITY_IDENTIFIER}),
    Kind.MIP: frozenset({PI_SYNC_TYPE_ITEM, PI_SERIAL_NUMBER}),
    Kind.MIA: frozenset({PI_SERIAL_NUMBER}),
    Kind.MAP: frozenset({PI_SERIAL_NUMBER}),
    Kind.MAA: frozenset({PI_SERIAL_NUMBER}),
}
_MAX_SERIAL_DIGITS = 10

PlainSpdu = tuple[Kind, int | None, int | None, bytes | memoryview]
"""(kind, serial number, sync type item, data): data is a DT's user information (a view of
the TSDU) or an AS's activity identifier (bytes)."""


def encode_serial_tsdu(kind: Kind, serial: int) -> bytes:
    """GT + MIP (confirmed) or MAP (activity end), PT + MIA or MAA: only a serial number."""
    tsdu = _SERIAL_TSDUS.get((kind, serial))
    if tsdu is not None:
        return tsdu
    if kind not in _SERIAL_KINDS or serial < 0:
        raise EncodeError(f"no plain {kind.name} with serial number {serial}")
    digits = b"%d" % serial
    size = len(digits)
    tsdu = bytes((_PREFIX_SI[kind], 0, _SI[kind], size + 2, PI_SERIAL_NUMBER, size)) + digits
    if serial < _CACHED_SERIALS:
        _SERIAL_TSDUS[kind, serial] = tsdu
    return tsdu


# Serial numbers restart at 1 with each activity: the first few are coded once.
_CACHED_SERIALS = 1024
_SERIAL_TSDUS: dict[tuple[Kind, int], bytes] = {}


def encode_activity_start_tsdu(activity_id: bytes) -> bytes:
    """GT + AS with an activity identifier and no user data."""
    size = len(activity_id)
    if size > MAX_ACTIVITY_ID_SIZE:
        raise EncodeError(f"an activity identifier of {size} octets")
    return bytes((Kind.GT.si, 0, Kind.AS.si, size + 2, PI_ACTIVITY_IDENTIFIER, size)) + activity_id


def decode_plain_tsdu(tsdu: bytes) -> PlainSpdu | None:
    """A data-phase TSDU in its plain form (see above), or None: then :func:`decode_tsdu`.

    None is also the answer for every malformed TSDU, so that the general decoder is the one
    that says what is wrong with it.
    """
    if len(tsdu) < 4 or tsdu[1] or not 1 <= tsdu[0] <= 2:  # an empty GT or PT first
        return None
    kind = _PLAIN_KINDS.get(tsdu[2])
    if kind is None:
        return None
    size = tsdu[3]
    if kind is Kind.DT:
        return (kind, None, None, memoryview(tsdu)[4:]) if size == 0 else None
    end = 4 + size
    if end != len(tsdu):  # also a three-octet length (0xFF)
        return None
    if size > 2 and size == tsdu[5] + 2 and tsdu[4] == PI_SERIAL_NUMBER and kind in _SERIAL_KINDS:
        # Only a serial number, the usual MIP, MIA, MAP and MAA: no loop.
        digits = tsdu[6:]
        if size - 2 <= _MAX_SERIAL_DIGITS and digits.isdigit():
            return kind, int(digits), None, b""
        return None
    allowed = _PLAIN_PARAMETERS[kind]
    serial = sync = identifier = None
    offset = 4
    while offset < end:
        if offset + 2 > end:
            return None
        code, length = tsdu[offset], tsdu[offset + 1]
        start, offset = offset + 2, offset + 2 + length
        if offset > end or code not in allowed:
            return None
        value = tsdu[start:offset]
        if code == PI_SERIAL_NUMBER:
            if serial is not None or not 0 < length <= _MAX_SERIAL_DIGITS or not value.isdigit():
                return None
            serial = int(value)
        elif code == PI_SYNC_TYPE_ITEM:
            if sync is not None or length != 1:
                return None
            sync = value[0]
        else:
            if identifier is not None:
                return None
            identifier = value
    if kind is Kind.AS:
        return None if identifier is None else (kind, None, None, identifier)
    return None if serial is None else (kind, serial, sync, b"")


def _enclosure(index: int, count: int) -> int:
    return (ENCLOSURE_BEGIN if index == 0 else 0) | (ENCLOSURE_END if index == count - 1 else 0)


SEGMENTABLE = frozenset(
    {*(kind for kind in PREFIX if kind is not Kind.ER), Kind.PT, Kind.FN, Kind.DN, Kind.NF, Kind.AB}
)
"""The kinds that may be segmented (their layout has the enclosure item)."""


def encode_segments(spdu: Spdu, limit: int) -> list[bytes]:
    """The SPDU cut into TSDUs of at most ``limit`` octets, each with an enclosure item.

    The first segment carries every parameter, the others only the enclosure item and
    their piece of the user data (X.225 7.11 and 7.37, segmenting).  A DT always gets an
    enclosure item, even in one segment: peers that agreed a TSDU maximum size expect it.
    """
    if spdu.kind not in SEGMENTABLE:
        raise EncodeError(f"{spdu.kind.name} is not segmented")
    first = replace(spdu, user_data=b"", enclosure_item=ENCLOSURE_BEGIN | ENCLOSURE_END)
    # Room for the longest SPDU and user data lengths (3 octets each) besides the header.
    overhead = len(encode_tsdu(first)) + (0 if spdu.kind is Kind.DT else 2 + 4)
    room = limit - overhead
    if room < 1:
        raise EncodeError(f"{spdu.kind.name} parameters do not fit a {limit}-octet TSDU")
    data = memoryview(spdu.user_data).cast("B")
    count = max(1, -(-len(data) // room))
    segments = []
    for index in range(count):
        base = spdu if index == 0 else Spdu(kind=spdu.kind)
        piece = data[index * room : (index + 1) * room]
        segments.append(
            encode_tsdu(replace(base, enclosure_item=_enclosure(index, count), user_data=piece))
        )
    return segments
