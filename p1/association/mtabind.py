"""MTA bind values: MTABindArgument, MTABindResult and MTABindError (X.411 clause 12.1.1).

The MTA-bind of the MTS transfer protocol (X.419 clause 7) travels inside RTSE: the
argument in RT-OPEN request (RTORQapdu ``connectionDataRQ``), the result in RTOAC and
the error in RTORJ.  In 1988 normal mode each value is wrapped as the X.410 BIND macro
encodes it: ``[16] EXPLICIT`` argument, ``[17]`` result, ``[18]`` error.

Public API::

    MTABindArgument, MTABindResult      typed values (frozen dataclasses)
    MTABindError                        the bind error codes (IntEnum)
    encode_bind_argument(arg) -> bytes / decode_bind_argument(data) -> MTABindArgument
    encode_bind_result(res) -> bytes   / decode_bind_result(data) -> MTABindResult
    encode_bind_error(err) -> bytes    / decode_bind_error(data) -> MTABindError
    wrap_bind_argument / unwrap_bind_argument     the [16] EXPLICIT wrapper
    wrap_bind_result / unwrap_bind_result         the [17] EXPLICIT wrapper
    wrap_bind_error / unwrap_bind_error           the [18] EXPLICIT wrapper (or none)

``encode_*`` / ``decode_*`` handle the bytes of the MTA-bind types themselves
(``MTAAbstractService.MTABindArgument`` ...), without the wrapper.  Every malformed
input to a ``decode_*`` or ``unwrap_*`` function raises :class:`p1.errors.DecodeError`.

PP 6.0 (ISODE) refuses a bind with the MTABindError alone as RTORJ user data, a bare
INTEGER (``02 01 02``) without its ``[18]`` wrapper.  X.411 makes MTABindError an INTEGER,
so that is the only untagged form it can take: :func:`unwrap_bind_error` accepts it,
returns it as it is and appends a :class:`p1.ber.Deviation` to the caller's list.

Strong credentials and the security context are not modelled: they are kept as the BER
of ``MTSAbstractService.StrongCredentials`` / ``MTSAbstractService.SecurityContext``
(universal SET tag ``31``), byte for byte as received, so that signatures over them stay
verifiable.  They are written back byte for byte too.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from p1 import asn1
from p1.ber import Deviation, Deviations
from p1.errors import DecodeError, EncodeError

__all__ = [
    "MTABindArgument",
    "MTABindError",
    "MTABindResult",
    "decode_bind_argument",
    "decode_bind_error",
    "decode_bind_result",
    "encode_bind_argument",
    "encode_bind_error",
    "encode_bind_result",
    "unwrap_bind_argument",
    "unwrap_bind_error",
    "unwrap_bind_result",
    "wrap_bind_argument",
    "wrap_bind_error",
    "wrap_bind_result",
]

_MODULE = "MTAAbstractService"

# Identifier octets (X.690 8.1.2): context-specific constructed [n] is 0xA0 | n.
_TAG_INTEGER = 0x02  # MTABindError itself, when a product leaves its wrapper out
_TAG_NULL = 0x05
_TAG_SET = 0x31
_TAG_IA5 = 0x16
_TAG_OCTETS = 0x04
_TAG_NAME = 0x80  # initiator-name / responder-name [0] IMPLICIT MTAName
_TAG_AUTHENTICATED = 0xA1  # authenticated [1] SET
_TAG_CREDENTIALS = 0xA1  # initiator- / responder-credentials [1] (explicit: a CHOICE)
_TAG_STRONG = 0xA0  # Credentials.strong [0] StrongCredentials
_TAG_PROTECTED = 0xA1  # Credentials.protected [1] ProtectedPassword
_TAG_SECURITY_CONTEXT = 0xA2  # security-context [2] SecurityContext
# The X.410 (1984) BIND macro encoding, kept in 1988 normal mode (RTSE user data).
_WRAP_ARGUMENT = 0xB0  # [16] EXPLICIT
_WRAP_RESULT = 0xB1  # [17] EXPLICIT
_WRAP_ERROR = 0xB2  # [18] EXPLICIT
_ERROR_WRAPPER = "MTABindError wrapper [18]"
_RTORJ_USER_DATA = "RTORJapdu.userDataRJ"

Password = str | bytes
"""``Password ::= CHOICE { ia5-string IA5String, octet-string OCTET STRING }``"""


# MTABindError ::= INTEGER {busy(0), authentication-error(2),
#     unacceptable-dialogue-mode(3), unacceptable-security-context(4),
#     inadequate-association-confidentiality(5)}(0..ub-integer-options)
class MTABindError(enum.IntEnum):
    """Why an MTA refused a bind (X.411 clause 12.1.1.3)."""

    BUSY = 0
    AUTHENTICATION_ERROR = 2
    UNACCEPTABLE_DIALOGUE_MODE = 3
    UNACCEPTABLE_SECURITY_CONTEXT = 4
    INADEQUATE_ASSOCIATION_CONFIDENTIALITY = 5


def _check_credentials(who: str, name: str | None, password: Any, strong: Any) -> None:
    if name is None:
        if password is not None or strong is not None:
            raise ValueError(f"{who}: credentials without a name (unauthenticated has none)")
        return
    if (password is None) == (strong is None):
        raise ValueError(f"{who}: give exactly one of password and strong_credentials")
    if password is not None and not isinstance(password, str | bytes):
        raise TypeError(f"{who}: password must be str (IA5String) or bytes (OCTET STRING)")


# MTABindArgument ::= CHOICE {
#   unauthenticated  NULL, -- if no authentication is required
#   authenticated    [1] SET { -- if authentication is required
#     initiator-name         [0] MTAName,
#     initiator-credentials  [1] InitiatorCredentials (WITH COMPONENTS {..., protected ABSENT}),
#     security-context       [2] SecurityContext OPTIONAL } }
@dataclass(frozen=True, slots=True, kw_only=True)
class MTABindArgument:
    """The MTA-bind argument (X.411 clause 12.1.1.1).

    ``MTABindArgument()`` is the ``unauthenticated`` choice; with ``initiator_name``
    it is ``authenticated`` and needs exactly one of ``password`` (simple credentials:
    ``str`` for IA5String, ``bytes`` for OCTET STRING) and ``strong_credentials``.
    """

    initiator_name: str | None = None
    """The initiating MTA's name (MTAName, IA5String); None: unauthenticated."""
    password: Password | None = None
    """Simple credentials: ``str`` is sent as IA5String, ``bytes`` as OCTET STRING."""
    strong_credentials: bytes | None = None
    """BER of MTSAbstractService.StrongCredentials (tag 31), kept as received."""
    security_context: bytes | None = None
    """BER of MTSAbstractService.SecurityContext (tag 31), kept as received."""

    def __post_init__(self) -> None:
        _check_credentials(
            "MTABindArgument", self.initiator_name, self.password, self.strong_credentials
        )
        if self.initiator_name is None and self.security_context is not None:
            raise ValueError("MTABindArgument: a security context needs authentication")

    @property
    def authenticated(self) -> bool:
        """True for the ``authenticated`` choice."""
        return self.initiator_name is not None


# MTABindResult ::= CHOICE {
#   unauthenticated  NULL, -- if no authentication is required
#   authenticated    [1] SET { -- if authentication is required
#     responder-name         [0] MTAName,
#     responder-credentials  [1] ResponderCredentials (WITH COMPONENTS {..., protected ABSENT}) } }
@dataclass(frozen=True, slots=True, kw_only=True)
class MTABindResult:
    """The MTA-bind result (X.411 clause 12.1.1.2); fields as in :class:`MTABindArgument`."""

    responder_name: str | None = None
    """The responding MTA's name (MTAName, IA5String); None: unauthenticated."""
    password: Password | None = None
    """Simple credentials: ``str`` is sent as IA5String, ``bytes`` as OCTET STRING."""
    strong_credentials: bytes | None = None
    """BER of MTSAbstractService.StrongCredentials (tag 31), kept as received."""

    def __post_init__(self) -> None:
        _check_credentials(
            "MTABindResult", self.responder_name, self.password, self.strong_credentials
        )

    @property
    def authenticated(self) -> bool:
        """True for the ``authenticated`` choice."""
        return self.responder_name is not None


# --- encoding ---------------------------------------------------------------------------


def encode_bind_argument(argument: MTABindArgument) -> bytes:
    """BER of ``MTAAbstractService.MTABindArgument``; raises :class:`EncodeError`."""
    if argument.initiator_name is None:
        return bytes([_TAG_NULL, 0])
    where = "MTABindArgument.authenticated"
    parts = [
        _tlv(_TAG_NAME, _ia5(argument.initiator_name, f"{where}.initiator-name")),
        _tlv(
            _TAG_CREDENTIALS,
            _credentials(
                argument.password, argument.strong_credentials, f"{where}.initiator-credentials"
            ),
        ),
    ]
    if argument.security_context is not None:
        parts.append(
            _retag(
                argument.security_context,
                "SecurityContext",
                _TAG_SECURITY_CONTEXT,
                f"{where}.security-context",
            )
        )
    return _checked(_tlv(_TAG_AUTHENTICATED, b"".join(parts)), "MTABindArgument")


def encode_bind_result(result: MTABindResult) -> bytes:
    """BER of ``MTAAbstractService.MTABindResult``; raises :class:`EncodeError`."""
    if result.responder_name is None:
        return bytes([_TAG_NULL, 0])
    where = "MTABindResult.authenticated"
    parts = [
        _tlv(_TAG_NAME, _ia5(result.responder_name, f"{where}.responder-name")),
        _tlv(
            _TAG_CREDENTIALS,
            _credentials(
                result.password, result.strong_credentials, f"{where}.responder-credentials"
            ),
        ),
    ]
    return _checked(_tlv(_TAG_AUTHENTICATED, b"".join(parts)), "MTABindResult")


def encode_bind_error(error: MTABindError) -> bytes:
    """BER of ``MTAAbstractService.MTABindError`` (an INTEGER)."""
    try:
        code = int(MTABindError(error))
    except ValueError:
        raise EncodeError(f"unknown MTA-bind error {error!r}", where="MTABindError") from None
    return asn1.encode(_MODULE, "MTABindError", code)


def _credentials(password: Password | None, strong: bytes | None, where: str) -> bytes:
    # Credentials ::= CHOICE { simple Password, strong [0] StrongCredentials, ... }
    if strong is not None:
        return _retag(strong, "StrongCredentials", _TAG_STRONG, f"{where}.strong")
    if isinstance(password, str):
        return _tlv(_TAG_IA5, _ia5(password, f"{where}.simple.ia5-string"))
    if isinstance(password, bytes):
        return _tlv(_TAG_OCTETS, password)
    raise EncodeError("no credentials", where=where)


def _ia5(text: str, where: str) -> bytes:
    try:
        return text.encode("ascii")
    except UnicodeEncodeError as exc:
        raise EncodeError(f"not an IA5String: {text!r}", where=where) from exc


def _retag(raw: bytes, type_name: str, tag: int, where: str) -> bytes:
    """Give the BER of a SET-typed value (tag 31) its context tag, contents unchanged."""
    try:
        asn1.decode("MTSAbstractService", type_name, raw)
    except DecodeError as exc:
        raise EncodeError(f"not a valid {type_name}: {exc.why}", where=where) from exc
    if raw[0] != _TAG_SET:
        raise EncodeError(f"{type_name} must start with the SET tag 31", where=where)
    return bytes([tag]) + raw[1:]


def _checked(encoded: bytes, type_name: str) -> bytes:
    # The value was assembled by hand to keep the raw parts byte for byte; the
    # compiled type checks the result.
    try:
        asn1.decode(_MODULE, type_name, encoded)
    except DecodeError as exc:  # pragma: no cover - the parts were checked above
        raise EncodeError(exc.why, where=type_name) from exc
    return encoded


def _tlv(tag: int, contents: bytes) -> bytes:
    return bytes([tag]) + _length(len(contents)) + contents


def _length(size: int) -> bytes:
    if size < 0x80:
        return bytes([size])
    octets = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(octets)]) + octets


# --- decoding ---------------------------------------------------------------------------


def decode_bind_argument(data: bytes) -> MTABindArgument:
    """Decode ``MTAAbstractService.MTABindArgument``; raises only :class:`DecodeError`."""
    data = bytes(data)
    kind, body = asn1.decode(_MODULE, "MTABindArgument", data)
    if kind == "unauthenticated":
        return MTABindArgument()
    where = "MTABindArgument.authenticated"
    password, strong = _decode_credentials(
        data, body["initiator-credentials"], f"{where}.initiator-credentials"
    )
    context = None
    if "security-context" in body:
        context = _raw_set(data, _TAG_SECURITY_CONTEXT)
    return MTABindArgument(
        initiator_name=body["initiator-name"],
        password=password,
        strong_credentials=strong,
        security_context=context,
    )


def decode_bind_result(data: bytes) -> MTABindResult:
    """Decode ``MTAAbstractService.MTABindResult``; raises only :class:`DecodeError`."""
    data = bytes(data)
    kind, body = asn1.decode(_MODULE, "MTABindResult", data)
    if kind == "unauthenticated":
        return MTABindResult()
    password, strong = _decode_credentials(
        data, body["responder-credentials"], "MTABindResult.authenticated.responder-credentials"
    )
    return MTABindResult(
        responder_name=body["responder-name"], password=password, strong_credentials=strong
    )


def decode_bind_error(data: bytes) -> MTABindError:
    """Decode ``MTAAbstractService.MTABindError``; raises only :class:`DecodeError`."""
    data = bytes(data)
    code = asn1.decode(_MODULE, "MTABindError", data)
    _, contents_start, contents_end, _ = _header(data, 0, len(data))
    if contents_start == contents_end:  # (the compiled codec would read it as busy)
        raise DecodeError("an INTEGER needs a contents octet (X.690 8.3.1)", where="MTABindError")
    try:
        return MTABindError(code)
    except ValueError:
        raise DecodeError(f"unknown MTA-bind error {code}", where="MTABindError") from None


def _decode_credentials(
    data: bytes, value: tuple[str, Any], where: str
) -> tuple[Password | None, bytes | None]:
    kind, inner = value
    if kind == "simple":
        secret = inner[1]
        return (secret if isinstance(secret, str) else bytes(secret)), None
    if kind == "strong":
        credentials = _only_child(data, _child(data, _TAG_CREDENTIALS, where), where)
        return None, bytes([_TAG_SET]) + data[credentials[0] + 1 : credentials[2]]
    # X.411 12.1.1.1.1.2: an MTA bind carries simple or strong credentials only.
    raise DecodeError(f"{kind} credentials are not allowed in an MTA bind", where=where)


def _raw_set(data: bytes, tag: int) -> bytes:
    start, _, end = _child(data, tag, "MTABindArgument.authenticated")
    return bytes([_TAG_SET]) + data[start + 1 : end]


def _child(data: bytes, tag: int, where: str) -> tuple[int, int, int]:
    """The member of the outer ``authenticated`` SET that has identifier octet ``tag``."""
    _, contents_start, contents_end, _ = _header(data, 0, len(data))
    for child in _children(data, contents_start, contents_end):
        if data[child[0]] == tag:
            return child
    raise DecodeError(f"no member with tag {tag:#04x}", where=where)


def _only_child(data: bytes, element: tuple[int, int, int], where: str) -> tuple[int, int, int]:
    start, _, end = element
    _, contents_start, contents_end, _ = _header(data, start, end)
    children = list(_children(data, contents_start, contents_end))
    if len(children) != 1:
        raise DecodeError(f"expected one value, found {len(children)}", where=where)
    return children[0]


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int]]:
    """(start, contents-start, end) of each TLV in ``data[start:end]``."""
    children = []
    while start < end:
        _, contents_start, _, tlv_end = _header(data, start, end)
        children.append((start, contents_start, tlv_end))
        start = tlv_end
    return children


def _header(data: bytes, offset: int, limit: int) -> tuple[int, int, int, int]:
    """(tag-end, contents-start, contents-end, tlv-end) of the TLV at ``offset``.

    Follows X.690 8.1: multi-octet tags, short, long and indefinite lengths (the
    contents of an indefinite-length value end before its end-of-contents octets).
    """
    position = _skip_tag(data, offset, limit)
    first = _octet(data, position, limit)
    position += 1
    if first == 0x80:
        if not data[offset] & 0x20:
            raise DecodeError("indefinite length on a primitive value", where=f"offset {offset}")
        contents_end = position
        while data[contents_end : contents_end + 2] != b"\x00\x00":
            contents_end = _header(data, contents_end, limit)[3]
        return position, position, contents_end, contents_end + 2
    size = first
    if first & 0x80:
        count = first & 0x7F
        if position + count > limit or count > 8:
            raise DecodeError("bad length octets", where=f"offset {offset}")
        size = int.from_bytes(data[position : position + count], "big")
        position += count
    if position + size > limit:
        raise DecodeError("value runs past its container", where=f"offset {offset}")
    return position, position, position + size, position + size


def _skip_tag(data: bytes, offset: int, limit: int) -> int:
    if _octet(data, offset, limit) & 0x1F != 0x1F:
        return offset + 1
    position = offset + 1
    while _octet(data, position, limit) & 0x80:
        position += 1
    return position + 1


def _octet(data: bytes, position: int, limit: int) -> int:
    if position >= limit:
        raise DecodeError("truncated value", where=f"offset {position}")
    return data[position]


# --- the X.410 BIND macro wrappers ------------------------------------------------------


def wrap_bind_argument(encoded: bytes) -> bytes:
    """``[16] EXPLICIT`` around an encoded MTABindArgument (RTORQ user data)."""
    return _tlv(_WRAP_ARGUMENT, bytes(encoded))


def wrap_bind_result(encoded: bytes) -> bytes:
    """``[17] EXPLICIT`` around an encoded MTABindResult (RTOAC user data)."""
    return _tlv(_WRAP_RESULT, bytes(encoded))


def wrap_bind_error(encoded: bytes) -> bytes:
    """``[18] EXPLICIT`` around an encoded MTABindError (RTORJ user data)."""
    return _tlv(_WRAP_ERROR, bytes(encoded))


def unwrap_bind_argument(data: bytes) -> bytes:
    """The MTABindArgument inside ``[16] EXPLICIT``; raises only :class:`DecodeError`."""
    return _unwrap(bytes(data), _WRAP_ARGUMENT, "MTABindArgument wrapper [16]")


def unwrap_bind_result(data: bytes) -> bytes:
    """The MTABindResult inside ``[17] EXPLICIT``; raises only :class:`DecodeError`."""
    return _unwrap(bytes(data), _WRAP_RESULT, "MTABindResult wrapper [17]")


def unwrap_bind_error(data: bytes, deviations: Deviations | None = None) -> bytes:
    """The MTABindError inside ``[18] EXPLICIT``; raises only :class:`DecodeError`.

    A bare MTABindError (an INTEGER, identifier ``0x02``), as PP 6.0 writes it in RTORJ
    user data, is checked (one INTEGER naming a known error), returned as it is and
    appended to ``deviations`` when not None: X.411 clause 12.1.1.3 gives the same value,
    only the X.410 BIND-macro tag is missing.
    """
    data = bytes(data)
    if data[:1] == bytes([_TAG_INTEGER]):
        return _bare_error(data, deviations)
    if data[:1] != bytes([_WRAP_ERROR]):
        found = f"{data[0]:#04x}" if data else "nothing"
        why = f"expected identifier {_WRAP_ERROR:#04x} or a bare INTEGER {_TAG_INTEGER:#04x}"
        raise DecodeError(f"{why}, found {found}", where=_ERROR_WRAPPER)
    return _unwrap(data, _WRAP_ERROR, _ERROR_WRAPPER)


def _bare_error(data: bytes, deviations: Deviations | None) -> bytes:
    """RTORJ user data holding the MTABindError INTEGER without its ``[18]`` wrapper."""
    end = _header(data, 0, len(data))[3]
    if end != len(data):
        raise DecodeError(f"{len(data) - end} trailing byte(s)", where=_ERROR_WRAPPER)
    error = decode_bind_error(data)
    if deviations is not None:
        name = error.name.lower().replace("_", "-")
        deviations.append(Deviation(_RTORJ_USER_DATA, data.hex(" "), f"MTABindError {name}"))
    return data


def _unwrap(data: bytes, tag: int, where: str) -> bytes:
    if not data or data[0] != tag:
        found = f"{data[0]:#04x}" if data else "nothing"
        raise DecodeError(f"expected identifier {tag:#04x}, found {found}", where=where)
    try:
        _, contents_start, contents_end, end = _header(data, 0, len(data))
        children = _children(data, contents_start, contents_end)
    except RecursionError:
        raise DecodeError("nesting too deep", where=where) from None
    if end != len(data):
        raise DecodeError(f"{len(data) - end} trailing byte(s)", where=where)
    if len(children) != 1:
        raise DecodeError(f"expected one value, found {len(children)}", where=where)
    return data[contents_start:contents_end]
