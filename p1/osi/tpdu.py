"""TPDUs of the transport protocol, class 0 (ITU-T X.224 | ISO/IEC 8073 clause 13), as RFC 1006
carries them over TCP.

Every TPDU starts with a length indicator LI (the header length after LI itself, 0 ... 254),
then a fixed part whose first octet is the TPDU code, then a variable part of parameters
(code, length, value), then user data up to the end of the TPKT (13.2).  Class 0 uses CR, CC,
DR, DT and ER; the other TPDUs are rejected with "invalid TPDU type".

Decoding follows 13.2.3: a parameter X.224 does not define is ignored in a CR and is an
error elsewhere; parameters X.224 defines for other classes are ignored, so that a CR whose
preferred class is above 0 can still be answered in class 0.

Public API::

    ConnectionRequest, ConnectionConfirm, DisconnectRequest, DataTpdu, ErrorTpdu
    encode_cr(cr) / encode_cc(cc) / encode_dr(dr) / encode_er(er) -> bytes
    encode_dt(data, *, eot=True) -> bytes          dt_header(eot) -> bytes
    decode_tpdu(tpdu) -> Tpdu (any of the five); decode_cr / decode_cc / decode_dr / decode_er /
    decode_dt(tpdu) for one expected kind; tpdu_code(tpdu) -> int (LI checked)
    tpdu_size_code(size) -> int / tpdu_size_of(code) -> int      # 13.3.4 b)
    InvalidTpdu(why, cause=..., octet=...)   # a RemoteProtocolError carrying the ER reject cause
    TPDU codes, parameter codes, DR reasons (13.5.3 d) and ER reject causes (13.12.3 c)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from p1.errors import EncodeError
from p1.osi import RemoteProtocolError

# --- TPDU codes (13.2.2.2, bits 8-5 of octet 2; CR / CC carry the credit in bits 4-1) ---------
CR = 0xE0
CC = 0xD0
DR = 0x80
DC = 0xC0
DT = 0xF0
ED = 0x10
AK = 0x60
EA = 0x20
RJ = 0x50
ER = 0x70

EOT = 0x80
"""DT octet 3, bit 8: this is the last DT TPDU of the TSDU."""

# --- parameter codes (13.3.4, 13.5.4, 13.12.4) ------------------------------------------------
TPDU_SIZE = 0xC0
CALLING_TSAP = 0xC1
CALLED_TSAP = 0xC2  # also the responding TSAP in a CC
CHECKSUM = 0xC3
VERSION_NUMBER = 0xC4
PROTECTION = 0xC5
ADDITIONAL_OPTIONS = 0xC6
ALTERNATIVE_CLASSES = 0xC7
ACKNOWLEDGEMENT_TIME = 0x85
RESIDUAL_ERROR_RATE = 0x86
PRIORITY = 0x87
TRANSIT_DELAY = 0x88
THROUGHPUT = 0x89
SUBSEQUENCE_NUMBER = 0x8A
REASSIGNMENT_TIME = 0x8B
FLOW_CONTROL_CONFIRMATION = 0x8C
SELECTIVE_ACKNOWLEDGEMENT = 0x8F
PREFERRED_MAX_TPDU_SIZE = 0xF0
INACTIVITY_TIMER = 0xF2
ADDITIONAL_INFORMATION = 0xE0  # DR
INVALID_TPDU = 0xC1  # ER: the rejected header up to the octet in error (mandatory in class 0)

DEFINED_PARAMETERS = frozenset(
    {
        TPDU_SIZE,
        CALLING_TSAP,
        CALLED_TSAP,
        CHECKSUM,
        VERSION_NUMBER,
        PROTECTION,
        ADDITIONAL_OPTIONS,
        ALTERNATIVE_CLASSES,
        ACKNOWLEDGEMENT_TIME,
        RESIDUAL_ERROR_RATE,
        PRIORITY,
        TRANSIT_DELAY,
        THROUGHPUT,
        SUBSEQUENCE_NUMBER,
        REASSIGNMENT_TIME,
        FLOW_CONTROL_CONFIRMATION,
        SELECTIVE_ACKNOWLEDGEMENT,
        PREFERRED_MAX_TPDU_SIZE,
        INACTIVITY_TIMER,
        ADDITIONAL_INFORMATION,
    }
)
"""Every parameter code X.224 defines for any TPDU of any class."""

# --- DR reasons (13.5.3 d): 0-3 for every class, 128 + n for classes 1-4 -----------------------
REASON_NOT_SPECIFIED = 0
REASON_CONGESTION_AT_TSAP = 1
REASON_NOT_ATTACHED_TO_TSAP = 2
REASON_ADDRESS_UNKNOWN = 3
REASON_NORMAL = 128
REASON_NEGOTIATION_FAILED = 130  # proposed class(es) not supported
REASON_PROTOCOL_ERROR = 133

# --- ER reject causes (13.12.3 c) -------------------------------------------------------------
CAUSE_NOT_SPECIFIED = 0
CAUSE_INVALID_PARAMETER_CODE = 1
CAUSE_INVALID_TPDU_TYPE = 2
CAUSE_INVALID_PARAMETER_VALUE = 3

MAX_LI = 254
MIN_TPDU_SIZE = 128
MAX_TPDU_SIZE = 8192  # largest size code X.224 defines (13); class 0 stops at 2048
_MIN_SIZE_CODE = 7
_MAX_SIZE_CODE = 13
MAX_CLASS = 4

_CONNECTION_FIXED = 7  # LI, code, DST-REF, SRC-REF, class option
_DR_FIXED = 7  # LI, code, DST-REF, SRC-REF, reason
_ER_FIXED = 5  # LI, code, DST-REF, reject cause
DT_HEADER_SIZE = 3  # LI (= 2), code, EOT / TPDU-NR


class InvalidTpdu(RemoteProtocolError):
    """A TPDU X.224 does not allow: ``reason`` is the ER reject cause, ``octet`` the index of
    the octet in error (the ER quotes the TPDU up to and including it)."""

    def __init__(self, why: str, *, cause: int = CAUSE_NOT_SPECIFIED, octet: int = 0) -> None:
        super().__init__(why, layer="cotp", reason=cause)
        self.octet = octet


def tpdu_size_code(size: int) -> int:
    """The TPDU size parameter's value for ``size`` octets: 128 -> 7 ... 8192 -> 13."""
    code = size.bit_length() - 1
    if not _MIN_SIZE_CODE <= code <= _MAX_SIZE_CODE or size != 1 << code:
        raise EncodeError(f"TPDU size {size} is not a power of two in 128 ... 8192", "TPDU size")
    return code


def tpdu_size_of(code: int) -> int:
    """The size in octets a TPDU size code stands for (inverse of :func:`tpdu_size_code`)."""
    if not _MIN_SIZE_CODE <= code <= _MAX_SIZE_CODE:
        raise ValueError(f"TPDU size code {code:#04x} is not 7 ... 13")
    return 1 << code


# --- the TPDUs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionTpdu:
    """What CR and CC share: references, class, TSAP selectors, TPDU size (13.3, 13.4)."""

    destination_reference: int = 0
    source_reference: int
    protocol_class: int = 0
    options: int = 0
    """Bits 4-1 of the class option octet; not significant in class 0."""
    calling_tsap: bytes | None = None
    called_tsap: bytes | None = None
    tpdu_size: int | None = None
    """Octets (128 ... 8192); ``None`` when the parameter is absent, meaning 128."""
    other_parameters: tuple[tuple[int, bytes], ...] = ()
    """Parameters kept as received, in order, after the ones above."""
    user_data: bytes = b""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionRequest(ConnectionTpdu):
    """CR TPDU (13.3)::

    LI | E0 (CR, CDT) | DST-REF 0000 | SRC-REF | class, options | parameters | user data
    """

    alternative_classes: tuple[int, ...] = ()
    """The classes of the alternative protocol class parameter (0xC7), if any."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionConfirm(ConnectionTpdu):
    """CC TPDU (13.4)::

    LI | D0 (CC, CDT) | DST-REF (the CR's SRC-REF) | SRC-REF | class, options | parameters
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class DisconnectRequest:
    """DR TPDU (13.5); class 0 sends it only to refuse a CR::

    LI | 80 | DST-REF | SRC-REF (0: unassigned) | reason | parameters | user data
    """

    destination_reference: int
    source_reference: int = 0
    reason: int = REASON_NOT_SPECIFIED
    additional_information: bytes | None = None
    other_parameters: tuple[tuple[int, bytes], ...] = ()
    user_data: bytes = b""


@dataclass(frozen=True, slots=True, kw_only=True)
class DataTpdu:
    """DT TPDU, class 0 normal format (13.7)::

    02 | F0 | EOT, TPDU-NR (not significant in class 0) | user data
    """

    eot: bool
    data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorTpdu:
    """ER TPDU (13.12)::

    LI | 70 | DST-REF | reject cause | C1 len <the rejected TPDU up to the octet in error>
    """

    destination_reference: int
    cause: int = CAUSE_NOT_SPECIFIED
    invalid_tpdu: bytes | None = None
    other_parameters: tuple[tuple[int, bytes], ...] = ()


Tpdu = ConnectionRequest | ConnectionConfirm | DisconnectRequest | DataTpdu | ErrorTpdu


# --- encoding ----------------------------------------------------------------------------------


def _parameter(code: int, value: bytes) -> bytes:
    if len(value) > MAX_LI:
        raise EncodeError(f"parameter {code:#04x} of {len(value)} octets", "TPDU parameter")
    return bytes((code, len(value))) + value


def _header(fixed: bytes, parameters: list[bytes]) -> bytes:
    """LI, then the fixed part, then the parameters: LI counts everything after itself."""
    body = fixed + b"".join(parameters)
    if len(body) > MAX_LI:
        raise EncodeError(f"TPDU header of {len(body)} octets (at most {MAX_LI})", "TPDU")
    return bytes((len(body),)) + body


def _reference(value: int) -> bytes:
    if not 0 <= value <= 0xFFFF:
        raise EncodeError(f"reference {value} is not 0 ... 65535", "TPDU")
    return value.to_bytes(2, "big")


def _references(destination: int, source: int) -> bytes:
    return _reference(destination) + _reference(source)


def _connection(code: int, tpdu: ConnectionTpdu, extra: list[bytes]) -> bytes:
    if not 0 <= tpdu.protocol_class <= MAX_CLASS or not 0 <= tpdu.options <= 0x0F:
        raise EncodeError(f"class {tpdu.protocol_class}, options {tpdu.options}", "TPDU")
    references = _references(tpdu.destination_reference, tpdu.source_reference)
    fixed = bytes((code,)) + references + bytes((tpdu.protocol_class << 4 | tpdu.options,))
    parameters = []
    if tpdu.calling_tsap is not None:
        parameters.append(_parameter(CALLING_TSAP, tpdu.calling_tsap))
    if tpdu.called_tsap is not None:
        parameters.append(_parameter(CALLED_TSAP, tpdu.called_tsap))
    if tpdu.tpdu_size is not None:
        parameters.append(_parameter(TPDU_SIZE, bytes((tpdu_size_code(tpdu.tpdu_size),))))
    parameters += extra
    parameters += [_parameter(code, value) for code, value in tpdu.other_parameters]
    return _header(fixed, parameters) + tpdu.user_data


def encode_cr(cr: ConnectionRequest) -> bytes:
    """CR TPDU: C1 calling, C2 called, C0 size, C7 alternative classes, then the others."""
    extra = []
    if cr.alternative_classes:
        extra.append(_parameter(ALTERNATIVE_CLASSES, bytes(c << 4 for c in cr.alternative_classes)))
    return _connection(CR, cr, extra)


def encode_cc(cc: ConnectionConfirm) -> bytes:
    """CC TPDU, parameters in the order of :func:`encode_cr`."""
    return _connection(CC, cc, [])


def encode_dr(dr: DisconnectRequest) -> bytes:
    """DR TPDU."""
    if not 0 <= dr.reason <= 0xFF:
        raise EncodeError(f"DR reason {dr.reason}", "DR")
    fixed = bytes((DR,)) + _references(dr.destination_reference, dr.source_reference)
    parameters = []
    if dr.additional_information is not None:
        parameters.append(_parameter(ADDITIONAL_INFORMATION, dr.additional_information))
    parameters += [_parameter(code, value) for code, value in dr.other_parameters]
    return _header(fixed + bytes((dr.reason,)), parameters) + dr.user_data


def encode_er(er: ErrorTpdu) -> bytes:
    """ER TPDU."""
    if not 0 <= er.cause <= 0xFF:
        raise EncodeError(f"ER reject cause {er.cause}", "ER")
    fixed = bytes((ER,)) + _reference(er.destination_reference) + bytes((er.cause,))
    parameters = []
    if er.invalid_tpdu is not None:
        parameters.append(_parameter(INVALID_TPDU, er.invalid_tpdu))
    parameters += [_parameter(code, value) for code, value in er.other_parameters]
    return _header(fixed, parameters)


_DT_HEADERS = {True: bytes((2, DT, EOT)), False: bytes((2, DT, 0))}


def dt_header(eot: bool) -> bytes:
    """The three header octets of a class 0 DT TPDU."""
    return _DT_HEADERS[eot]


def encode_dt(data: bytes | memoryview, *, eot: bool = True) -> bytes:
    """DT TPDU: header, then ``data``."""
    return _DT_HEADERS[eot] + data


# --- decoding ----------------------------------------------------------------------------------


def _parameters(tpdu: bytes, start: int, end: int) -> list[tuple[int, int, bytes]]:
    """(offset of the code, code, value) of each parameter in ``tpdu[start:end]``."""
    found = []
    offset = start
    while offset < end:
        if offset + 2 > end:
            raise InvalidTpdu(
                "parameter without a length", cause=CAUSE_INVALID_PARAMETER_VALUE, octet=offset
            )
        code, length = tpdu[offset], tpdu[offset + 1]
        if offset + 2 + length > end:
            raise InvalidTpdu(
                f"parameter {code:#04x} of {length} octets overruns the header",
                cause=CAUSE_INVALID_PARAMETER_VALUE,
                octet=offset + 1,
            )
        found.append((offset, code, tpdu[offset + 2 : offset + 2 + length]))
        offset += 2 + length
    return found


def _size(offset: int, value: bytes) -> int:
    if len(value) != 1 or not _MIN_SIZE_CODE <= value[0] <= _MAX_SIZE_CODE:
        raise InvalidTpdu(
            f"TPDU size parameter {value.hex()} is not one octet 07 ... 0d",
            cause=CAUSE_INVALID_PARAMETER_VALUE,
            octet=offset + 2,
        )
    return 1 << value[0]


def _class(offset: int, value: int) -> int:
    protocol_class = value >> 4
    if protocol_class > MAX_CLASS:
        raise InvalidTpdu(
            f"protocol class {protocol_class}", cause=CAUSE_INVALID_PARAMETER_VALUE, octet=offset
        )
    return protocol_class


def _alternatives(offset: int, value: bytes) -> tuple[int, ...]:
    return tuple(_class(offset + 2 + i, octet) for i, octet in enumerate(value))


def _decode_connection(
    tpdu: bytes, li: int, is_cr: bool
) -> tuple[ConnectionConfirm, tuple[int, ...]]:
    """CR and CC (as a CC, with the CR's alternative classes): fixed part, then the
    parameters; the rest of the TPKT is user data."""
    name = "CR" if is_cr else "CC"
    _expect_fixed(tpdu, li, _CONNECTION_FIXED, name)
    calling = called = None
    size = None
    alternatives: tuple[int, ...] = ()
    others = []
    for offset, code, value in _parameters(tpdu, _CONNECTION_FIXED, li + 1):
        if code == CALLING_TSAP:
            calling = value
        elif code == CALLED_TSAP:
            called = value
        elif code == TPDU_SIZE:
            size = _size(offset, value)
        elif code == ALTERNATIVE_CLASSES and is_cr:
            alternatives = _alternatives(offset, value)
        elif is_cr or code in DEFINED_PARAMETERS:
            others.append((code, value))
        else:
            raise InvalidTpdu(
                f"{name} parameter {code:#04x} is not defined",
                cause=CAUSE_INVALID_PARAMETER_CODE,
                octet=offset,
            )
    cc = ConnectionConfirm(
        destination_reference=int.from_bytes(tpdu[2:4], "big"),
        source_reference=int.from_bytes(tpdu[4:6], "big"),
        protocol_class=_class(6, tpdu[6]),
        options=tpdu[6] & 0x0F,
        calling_tsap=calling,
        called_tsap=called,
        tpdu_size=size,
        other_parameters=tuple(others),
        user_data=tpdu[li + 1 :],
    )
    return cc, alternatives


def _as_cr(cc: ConnectionConfirm, alternatives: tuple[int, ...]) -> ConnectionRequest:
    return ConnectionRequest(
        destination_reference=cc.destination_reference,
        source_reference=cc.source_reference,
        protocol_class=cc.protocol_class,
        options=cc.options,
        calling_tsap=cc.calling_tsap,
        called_tsap=cc.called_tsap,
        tpdu_size=cc.tpdu_size,
        other_parameters=cc.other_parameters,
        user_data=cc.user_data,
        alternative_classes=alternatives,
    )


def _decode_cr(tpdu: bytes, li: int) -> ConnectionRequest:
    return _as_cr(*_decode_connection(tpdu, li, is_cr=True))


def _decode_cc(tpdu: bytes, li: int) -> ConnectionConfirm:
    return _decode_connection(tpdu, li, is_cr=False)[0]


def _decode_dr(tpdu: bytes, li: int) -> DisconnectRequest:
    _expect_fixed(tpdu, li, _DR_FIXED, "DR")
    information = None
    others = []
    for _offset, code, value in _parameters(tpdu, _DR_FIXED, li + 1):
        if code == ADDITIONAL_INFORMATION:
            information = value
        else:
            others.append((code, value))
    return DisconnectRequest(
        destination_reference=int.from_bytes(tpdu[2:4], "big"),
        source_reference=int.from_bytes(tpdu[4:6], "big"),
        reason=tpdu[6],
        additional_information=information,
        other_parameters=tuple(others),
        user_data=tpdu[li + 1 :],
    )


def _decode_er(tpdu: bytes, li: int) -> ErrorTpdu:
    _expect_fixed(tpdu, li, _ER_FIXED, "ER")
    invalid = None
    others = []
    for _offset, code, value in _parameters(tpdu, _ER_FIXED, li + 1):
        if code == INVALID_TPDU:
            invalid = value
        else:
            others.append((code, value))
    return ErrorTpdu(
        destination_reference=int.from_bytes(tpdu[2:4], "big"),
        cause=tpdu[4],
        invalid_tpdu=invalid,
        other_parameters=tuple(others),
    )


def _decode_dt(tpdu: bytes, li: int) -> DataTpdu:
    if li != DT_HEADER_SIZE - 1:
        raise InvalidTpdu(f"DT with LI {li}: class 0 has no other", octet=0)
    return DataTpdu(eot=bool(tpdu[2] & EOT), data=tpdu[DT_HEADER_SIZE:])


def _expect_fixed(tpdu: bytes, li: int, fixed: int, name: str) -> None:
    if li + 1 < fixed:
        raise InvalidTpdu(f"{name} with LI {li}: the fixed part needs {fixed - 1}", octet=0)


_DECODERS: dict[int, Callable[[bytes, int], Tpdu]] = {
    CR: _decode_cr,
    CC: _decode_cc,
    DR: _decode_dr,
    DT: _decode_dt,
    ER: _decode_er,
}
_NOT_CLASS_0 = {DC: "DC", ED: "ED", AK: "AK", EA: "EA", RJ: "RJ"}


def tpdu_code(tpdu: bytes) -> int:
    """The TPDU code of octet 2 (a CR's or CC's credit masked off), once LI is checked.

    Raises :class:`InvalidTpdu` for a bad LI and for a TPDU class 0 does not use.
    """
    if len(tpdu) < 2:
        raise InvalidTpdu(f"TPDU of {len(tpdu)} octets", octet=0)
    li = tpdu[0]
    if not 1 <= li <= MAX_LI or li + 1 > len(tpdu):
        raise InvalidTpdu(f"LI {li} in a TPDU of {len(tpdu)} octets", octet=0)
    code = tpdu[1]
    if code & 0xF0 in (CR, CC):
        code &= 0xF0
    if code not in _DECODERS:
        name = _NOT_CLASS_0.get(code & 0xF0)
        why = f"{name} TPDU is not used in class 0" if name else f"unknown TPDU code {code:#04x}"
        raise InvalidTpdu(why, cause=CAUSE_INVALID_TPDU_TYPE, octet=1)
    return code


def decode_tpdu(tpdu: bytes) -> Tpdu:
    """Decode one TPDU (a TPKT's contents); raises only :class:`InvalidTpdu`."""
    return _DECODERS[tpdu_code(tpdu)](tpdu, tpdu[0])


def _expect_code(tpdu: bytes, code: int, name: str) -> None:
    if tpdu_code(tpdu) != code:
        raise InvalidTpdu(f"not a {name} TPDU", cause=CAUSE_INVALID_TPDU_TYPE, octet=1)


def decode_cr(tpdu: bytes) -> ConnectionRequest:
    """Decode a CR TPDU; raises only :class:`InvalidTpdu`."""
    _expect_code(tpdu, CR, "CR")
    return _decode_cr(tpdu, tpdu[0])


def decode_cc(tpdu: bytes) -> ConnectionConfirm:
    """Decode a CC TPDU; raises only :class:`InvalidTpdu`."""
    _expect_code(tpdu, CC, "CC")
    return _decode_cc(tpdu, tpdu[0])


def decode_dr(tpdu: bytes) -> DisconnectRequest:
    """Decode a DR TPDU; raises only :class:`InvalidTpdu`."""
    _expect_code(tpdu, DR, "DR")
    return _decode_dr(tpdu, tpdu[0])


def decode_er(tpdu: bytes) -> ErrorTpdu:
    """Decode an ER TPDU; raises only :class:`InvalidTpdu`."""
    _expect_code(tpdu, ER, "ER")
    return _decode_er(tpdu, tpdu[0])


def decode_dt(tpdu: bytes) -> DataTpdu:
    """Decode a DT TPDU; raises only :class:`InvalidTpdu`."""
    _expect_code(tpdu, DT, "DT")
    return _decode_dt(tpdu, tpdu[0])
