"""RTSE APDUs in normal mode (X.228 | ISO/IEC 9066-2, module Reliable-Transfer-APDU).

In a P1 association (X.419 clause 7) RT-OPEN rides on A-ASSOCIATE: the RTORQ is the AARQ's
user information and carries the ``[16]``-wrapped MTA-bind argument, the RTOAC (``[17]``
result) or RTORJ (``[18]`` error) comes back in the AARE.  Afterwards every P-DATA in the
RTSE context holds one RTTR (an OCTET STRING: a piece of the transfer's octets), an RTTP
asks for the turn, and an RTAB inside an ACSE ABRT aborts.  This module is their codec,
written by hand on :mod:`p1.ber` with the member tables of :mod:`p1.osi.presentation`.

What we write matches what real MTAs send: an RTORQ or RTOAC carries checkpointSize when
it is not 0 and windowSize when it is not 3 (their DEFAULTs), and an RTORQ always carries
dialogueMode, even monologue (0).

Public API::

    DialogueMode, RefuseReason, AbortReason
    Rtorq(checkpoint_size, window_size, dialogue_mode, open, recover, application_protocol)
    Rtoac(checkpoint_size, window_size, open, recover)
    Rtorj(refuse_reason, user_data), Rttp(priority), Rttr(data),
    Rtab(abort_reason, reflected_parameter, user_data); RtseApdu (their union)
    encode_rtse(apdu) -> bytes / decode_rtse(data) -> RtseApdu
    encode_rttr(chunk) -> bytes / decode_rttr(value) -> bytes     the transfer path
    rttr_header(size) -> bytes / decode_rttr_view(value) -> memoryview | None   without copies

Every decoder raises only :class:`p1.errors.DecodeError`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final, TypeAlias

from p1 import ber
from p1.ber import Tlv, context
from p1.errors import DecodeError, EncodeError
from p1.osi.presentation import (
    EXPLICIT_VALUE,
    IMPLICIT_INTEGER,
    Codec,
    Member,
    bounded,
    decode_members,
    encode_members,
    read_definite,
)

__all__ = [
    "AbortReason",
    "DialogueMode",
    "RefuseReason",
    "Rtab",
    "Rtoac",
    "Rtorj",
    "Rtorq",
    "RtseApdu",
    "Rttp",
    "Rttr",
    "decode_rtse",
    "decode_rttr",
    "encode_rtse",
    "encode_rttr",
]

_MAX_SIZE: Final = 2**31 - 1
"""Largest checkpointSize / windowSize read or written (the INTEGER a C stack holds)."""
DEFAULT_WINDOW_SIZE: Final = 3
"""windowSize's DEFAULT."""


class DialogueMode(enum.IntEnum):
    """``dialogueMode [2] IMPLICIT INTEGER {monologue(0), twa(1)} DEFAULT monologue``"""

    MONOLOGUE = 0
    """Only the initiator transfers (it holds the turn throughout)."""
    TWA = 1
    """Two-way alternate: the turn passes between the two."""


class RefuseReason(enum.IntEnum):
    """``RefuseReason`` of an RTORJ in X.410-1984 mode, and of X.410 (1984)'s PRefuse."""

    RTS_BUSY = 0
    CANNOT_RECOVER = 1
    VALIDATION_FAILURE = 2
    UNACCEPTABLE_DIALOGUE_MODE = 3


class AbortReason(enum.IntEnum):
    """``AbortReason`` of an RTAB."""

    LOCAL_SYSTEM_PROBLEM = 0
    INVALID_PARAMETER = 1
    """reflectedParameter supplied."""
    UNRECOGNIZED_ACTIVITY = 2
    TEMPORARY_PROBLEM = 3
    PROTOCOL_ERROR = 4
    PERMANENT_PROBLEM = 5
    USER_ERROR = 6
    """RT-U-ABORT: userdataAB may follow."""
    TRANSFER_COMPLETED = 7


@dataclass(frozen=True, slots=True, kw_only=True)
class Rtorq:
    """RT-OPEN request (X.228 clause 9)::

        RTORQapdu ::= [16] IMPLICIT SET {
            checkpointSize    [0] IMPLICIT INTEGER DEFAULT 0,
            windowSize        [1] IMPLICIT INTEGER DEFAULT 3,
            dialogueMode      [2] IMPLICIT INTEGER {monologue(0), twa(1)} DEFAULT monologue,
            connectionDataRQ  [3] ConnectionData,
            applicationProtocol [4] IMPLICIT INTEGER OPTIONAL }  -- X.410-1984 mode only
        ConnectionData ::= CHOICE {
            open     [0] OPEN.&Type,   -- [0] IMPLICIT NULL when there is no user data
            recover  [1] IMPLICIT SessionConnectionIdentifier }

    ``open`` is the RTSE user data's TLV (in P1 the ``[16]``-wrapped MTABindArgument);
    ``recover`` the BER of the SessionConnectionIdentifier (a SEQUENCE).  Neither: the
    ``open`` alternative without user data.
    """

    checkpoint_size: int = 0
    """Checkpoint every this many 1024-octet units; 0: no checkpointing."""
    window_size: int = DEFAULT_WINDOW_SIZE
    """Unconfirmed checkpoints allowed at a time."""
    dialogue_mode: DialogueMode = DialogueMode.MONOLOGUE
    open: bytes | None = None
    recover: bytes | None = None
    application_protocol: int | None = None
    """X.410-1984 mode only; kept if a peer sends it anyway."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Rtoac:
    """RT-OPEN accept (X.228 clause 9)::

        RTOACapdu ::= [17] IMPLICIT SET {
            checkpointSize    [0] IMPLICIT INTEGER DEFAULT 0,
            windowSize        [1] IMPLICIT INTEGER DEFAULT 3,
            connectionDataAC  [2] ConnectionData }

    ``open`` is the ``[17]``-wrapped MTABindResult in P1; as in :class:`Rtorq`.
    """

    checkpoint_size: int = 0
    window_size: int = DEFAULT_WINDOW_SIZE
    open: bytes | None = None
    recover: bytes | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Rtorj:
    """RT-OPEN reject (X.228 clause 9)::

    RTORJapdu ::= [18] IMPLICIT SET {
        refuseReason  [0] IMPLICIT RefuseReason OPTIONAL,  -- X.410-1984 mode only
        userDataRJ    [1] OPEN.&Type OPTIONAL }            -- normal mode only
    """

    refuse_reason: int | None = None
    """:class:`RefuseReason`."""
    user_data: bytes | None = None
    """userDataRJ's TLV: the ``[18]``-wrapped MTABindError in P1."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Rttp:
    """RT-TURN-PLEASE: ``RTTPapdu ::= INTEGER -- priority``"""

    priority: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Rttr:
    """RT-TRANSFER: ``RTTRapdu ::= OCTET STRING`` (see :func:`encode_rttr` for the fast path)."""

    data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Rtab:
    """RT-ABORT (X.228 clause 9)::

    RTABapdu ::= [22] IMPLICIT SET {
        abortReason         [0] IMPLICIT AbortReason OPTIONAL,
        reflectedParameter  [1] IMPLICIT BIT STRING OPTIONAL,  -- 8 bits maximum
        userdataAB          [2] OPEN.&Type OPTIONAL }          -- if abortReason is userError
    """

    abort_reason: int | None = None
    """:class:`AbortReason`."""
    reflected_parameter: int | None = None
    """The (at most 8) bits as an octet, the first bit the most significant."""
    user_data: bytes | None = None
    """userdataAB's TLV."""


RtseApdu: TypeAlias = Rtorq | Rtoac | Rtorj | Rttp | Rttr | Rtab
"""``RTSE-apdus ::= CHOICE { rtorq-apdu [16], rtoac-apdu [17], rtorj-apdu [18],
rttp-apdu RTTPapdu, rttr-apdu RTTRapdu, rtab-apdu [22] }``"""


# --- member codecs --------------------------------------------------------------------

_OPEN = context(0)
_RECOVER = context(1)
_OPEN_WITHOUT_DATA = bytes.fromhex("8000")  # [0] IMPLICIT NULL


def _read_connection_data(tlv: Tlv, what: str) -> tuple[bytes | None, bytes | None]:
    choice = ber.only_child(tlv, what)
    if choice.tag == _OPEN:
        if choice.constructed:
            return ber.only_child(choice, f"{what}.open").raw(), None
        if choice.end != choice.body:
            raise DecodeError("open without user data must be [0] IMPLICIT NULL", what)
        return None, None
    if choice.tag == _RECOVER:
        ber.children(choice, f"{what}.recover")  # validates the SEQUENCE's members
        return None, ber.retag(choice.raw(), ber.SEQUENCE)
    raise DecodeError(f"unexpected {ber.tag_name(choice.tag)}", where=what)


def _write_connection_data(tag: int, value: object, what: str) -> bytes:
    assert isinstance(value, tuple)
    open_data, recover = value
    if open_data is not None and recover is not None:
        raise EncodeError("give open or recover, not both", where=what)
    if recover is not None:
        inner = _recover_tlv(recover, f"{what}.recover")
    elif open_data is not None:
        inner = EXPLICIT_VALUE.write(_OPEN, open_data, f"{what}.open")
    else:
        inner = _OPEN_WITHOUT_DATA
    return ber.tlv(tag, inner, constructed=True)


def _recover_tlv(recover: object, what: str) -> bytes:
    if not isinstance(recover, bytes):
        raise EncodeError(f"{recover!r} is not bytes", where=what)
    try:
        tlv = ber.read_single(recover, what)
    except DecodeError as exc:
        raise EncodeError(exc.why, where=what) from None
    if tlv.tag != ber.SEQUENCE or not tlv.constructed:
        raise EncodeError("a SessionConnectionIdentifier is a SEQUENCE", where=what)
    return ber.retag(recover, _RECOVER)


def _read_dialogue_mode(tlv: Tlv, what: str) -> DialogueMode:
    return DialogueMode(ber.read_bounded_int(tlv, what, 0, 1))


def _write_dialogue_mode(tag: int, value: object, what: str) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int) or value not in (0, 1):
        raise EncodeError(f"{value!r} is neither monologue (0) nor twa (1)", where=what)
    return IMPLICIT_INTEGER.write(tag, int(value), what)


def _read_reflected(tlv: Tlv, what: str) -> int:
    octets, length = ber.read_bits(tlv, what)
    if length > 8:
        raise DecodeError(f"{length} bits, at most 8", where=what)
    return octets[0] if octets else 0


def _write_reflected(tag: int, value: object, what: str) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 0xFF:
        raise EncodeError(f"{value!r} is not an octet (0..255)", where=what)
    return ber.tlv(tag, bytes((0, value)))


_SIZE = bounded(0, _MAX_SIZE)
_CONNECTION_DATA = Codec(_read_connection_data, _write_connection_data)
_DIALOGUE_MODE = Codec(_read_dialogue_mode, _write_dialogue_mode)
_REFLECTED = Codec(_read_reflected, _write_reflected)
_SIZES = (
    Member(context(0), "checkpointSize", "checkpoint_size", _SIZE, default=0),
    Member(context(1), "windowSize", "window_size", _SIZE, default=DEFAULT_WINDOW_SIZE),
)
_CONNECTION = ("open", "recover")

_RTORQ_MEMBERS = (
    *_SIZES,
    Member(context(2), "dialogueMode", "dialogue_mode", _DIALOGUE_MODE),  # always written
    Member(context(3), "connectionDataRQ", _CONNECTION, _CONNECTION_DATA, required=True),
    Member(context(4), "applicationProtocol", "application_protocol", IMPLICIT_INTEGER),
)
_RTOAC_MEMBERS = (
    *_SIZES,
    Member(context(2), "connectionDataAC", _CONNECTION, _CONNECTION_DATA, required=True),
)
_RTORJ_MEMBERS = (
    Member(context(0), "refuseReason", "refuse_reason", IMPLICIT_INTEGER),
    Member(context(1), "userDataRJ", "user_data", EXPLICIT_VALUE),
)
_RTAB_MEMBERS = (
    Member(context(0), "abortReason", "abort_reason", IMPLICIT_INTEGER),
    Member(context(1), "reflectedParameter", "reflected_parameter", _REFLECTED),
    Member(context(2), "userdataAB", "user_data", EXPLICIT_VALUE),
)

# The SET APDUs: their [n] IMPLICIT tag, ASN.1 name and member table.
_SETS: dict[type[RtseApdu], tuple[int, str, tuple[Member, ...]]] = {
    Rtorq: (context(16), "RTORQapdu", _RTORQ_MEMBERS),
    Rtoac: (context(17), "RTOACapdu", _RTOAC_MEMBERS),
    Rtorj: (context(18), "RTORJapdu", _RTORJ_MEMBERS),
    Rtab: (context(22), "RTABapdu", _RTAB_MEMBERS),
}
_SETS_BY_TAG = {tag: (model, name, members) for model, (tag, name, members) in _SETS.items()}
_OCTET_STRING_OCTET = 0x04
_RTTR = "RTTRapdu"


# --- APDUs ----------------------------------------------------------------------------


def encode_rtse(apdu: RtseApdu) -> bytes:
    """The BER of an RTSE APDU; raises :class:`EncodeError`."""
    if isinstance(apdu, Rttp):
        return IMPLICIT_INTEGER.write(ber.INTEGER, apdu.priority, "RTTPapdu")
    if isinstance(apdu, Rttr):
        return encode_rttr(apdu.data)
    entry = _SETS.get(type(apdu))
    if entry is None:
        raise EncodeError(f"{apdu!r} is not an RTSE APDU", where="RTSE-apdus")
    tag, name, members = entry
    return encode_members(tag, apdu, members, name)


def decode_rtse(data: bytes | bytearray | memoryview) -> RtseApdu:
    """Decode an RTSE APDU (definite or indefinite lengths); raises only DecodeError."""
    tlv = ber.read_single(data, "RTSE-apdus")
    if tlv.tag == ber.INTEGER:
        return Rttp(priority=ber.read_int(tlv, "RTTPapdu"))
    if tlv.tag == ber.OCTET_STRING:
        return Rttr(data=ber.read_octets(tlv, "RTTRapdu"))
    entry = _SETS_BY_TAG.get(tlv.tag)
    if entry is None:
        raise DecodeError(f"{ber.tag_name(tlv.tag)} is not an RTSE APDU", where="RTSE-apdus")
    model, name, members = entry
    apdu: RtseApdu = decode_members(tlv, model, members, name)
    return apdu


def encode_rttr(chunk: bytes | memoryview) -> bytes:
    """``RTTRapdu ::= OCTET STRING`` around ``chunk``, copied once (the transfer path)."""
    if isinstance(chunk, memoryview):
        chunk = ber.as_view(chunk)  # len() in octets
    return b"".join((ber.header(_OCTET_STRING_OCTET, len(chunk)), chunk))


def rttr_header(size: int) -> bytes:
    """What :func:`encode_rttr` puts before a chunk of ``size`` octets (the transfer path
    sends the two apart, so the chunk is not copied here)."""
    return ber.header(_OCTET_STRING_OCTET, size)


def decode_rttr_view(value: bytes | memoryview) -> memoryview | None:
    """The octets of a primitive RTTR as a view of ``value`` (not copied); None for any
    other value, which :func:`decode_rttr` reads (or refuses)."""
    view = ber.as_view(value)
    tlv = read_definite(view, 0, len(view))
    if tlv is None or tlv[0] != _OCTET_STRING_OCTET or tlv[2] != len(view):
        return None
    return view[tlv[1] :]


def decode_rttr(value: bytes | bytearray | memoryview) -> bytes:
    """The octets of an RTTR (a PDV's value), primitive or segmented, copied once."""
    tlv = ber.expect(ber.read_single(value, _RTTR), ber.OCTET_STRING, _RTTR)
    return ber.read_octets(tlv, _RTTR)
