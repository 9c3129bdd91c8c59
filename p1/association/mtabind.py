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
verifiable.  They are written back byte for byte too.  Their structure is checked both
ways: the security context is a SET OF SecurityLabel (:mod:`p1.mts.security_label`), the
strong credentials a SET of bind-token [0] (a Token: [0] OBJECT IDENTIFIER, [1] its
value), certificate [1] and certificate-selector [2], each constructed and present once,
and, the SET being extensible, members of later versions.

The values are read and written with :mod:`p1.ber` (every legal BER form is read);
the ASN.1 in ``p1/asn1/MTAAbstractService.asn`` is the definition the tests check these
bytes against.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from p1 import ber
from p1.ber import Deviation, Deviations, Tlv
from p1.errors import DecodeError, EncodeError
from p1.mts.security_label import decode_security_label

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

# Identifier octets (X.690 8.1.2) of the X.410 (1984) BIND macro encoding, kept in 1988
# normal mode (RTSE user data): context-specific constructed [n] is 0xA0 | n.
_WRAP_ARGUMENT = 0xB0  # [16] EXPLICIT
_WRAP_RESULT = 0xB1  # [17] EXPLICIT
_WRAP_ERROR = 0xB2  # [18] EXPLICIT
_BARE_ERROR = 0x02  # MTABindError itself (an INTEGER), when a product leaves its wrapper out
_ERROR_WRAPPER = "MTABindError wrapper [18]"
_RTORJ_USER_DATA = "RTORJapdu.userDataRJ"

# Tags of the MTA-bind types (X.411 clause 12.1.1; IMPLICIT TAGS but for the CHOICE).
_AUTHENTICATED = ber.context(1)  # authenticated [1] SET
_NAME = ber.context(0)  # initiator-name / responder-name [0] MTAName (IA5String)
_CREDENTIALS = ber.context(1)  # initiator- / responder-credentials [1]: explicit, a CHOICE
_STRONG = ber.context(0)  # Credentials.strong [0] StrongCredentials
_PROTECTED = ber.context(1)  # Credentials.protected [1] ProtectedPassword
_SECURITY_CONTEXT = ber.context(2)  # security-context [2] SecurityContext
_ARGUMENT_MEMBERS = {
    _NAME: "initiator-name",
    _CREDENTIALS: "initiator-credentials",
    _SECURITY_CONTEXT: "security-context",
}
_RESULT_MEMBERS = {_NAME: "responder-name", _CREDENTIALS: "responder-credentials"}
_STRONG_MEMBERS = {0: "bind-token", 1: "certificate", 2: "certificate-selector"}
"""StrongCredentials ::= SET {bind-token [0] Token OPTIONAL, certificate [1]
Certificates OPTIONAL, ..., certificate-selector [2] CertificateAssertion OPTIONAL}"""
_NULL = b"\x05\x00"  # unauthenticated NULL

Password = str | bytes
"""``Password ::= CHOICE { ia5-string IA5String (SIZE (0..ub-password-length)),
octet-string OCTET STRING (SIZE (0..ub-password-length)) }``: a ``str`` is the first
alternative, ``bytes`` the second; they are different values, never equal to each other."""
UB_PASSWORD_LENGTH = 62
"""``ub-password-length`` (X.411 Annex B, MTSUpperBounds): characters or octets."""


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
        return _NULL
    where = "MTABindArgument.authenticated"
    parts = _authenticated(
        argument.initiator_name,
        argument.password,
        argument.strong_credentials,
        where,
        ("initiator-name", "initiator-credentials"),
    )
    if argument.security_context is not None:
        context = _checked_set(argument.security_context, f"{where}.security-context")
        _check_security_context(context, f"{where}.security-context", EncodeError)
        parts.append(ber.retag(argument.security_context, _SECURITY_CONTEXT))
    return ber.constructed(_AUTHENTICATED, parts)


def encode_bind_result(result: MTABindResult) -> bytes:
    """BER of ``MTAAbstractService.MTABindResult``; raises :class:`EncodeError`."""
    if result.responder_name is None:
        return _NULL
    where = "MTABindResult.authenticated"
    parts = _authenticated(
        result.responder_name,
        result.password,
        result.strong_credentials,
        where,
        ("responder-name", "responder-credentials"),
    )
    return ber.constructed(_AUTHENTICATED, parts)


def encode_bind_error(error: MTABindError) -> bytes:
    """BER of ``MTAAbstractService.MTABindError`` (an INTEGER)."""
    try:
        code = int(MTABindError(error))
    except ValueError:
        raise EncodeError(f"unknown MTA-bind error {error!r}", where="MTABindError") from None
    return ber.tlv(ber.INTEGER, ber.int_contents(code))


def _authenticated(
    name: str, password: Password | None, strong: bytes | None, where: str, names: tuple[str, str]
) -> list[bytes]:
    """The name [0] and credentials [1] of the ``authenticated`` SET."""
    name_where, credentials_where = f"{where}.{names[0]}", f"{where}.{names[1]}"
    return [
        ber.tlv(_NAME, ber.text_contents(name, name_where)),
        ber.tlv(_CREDENTIALS, _credentials(password, strong, credentials_where), True),
    ]


def _credentials(password: Password | None, strong: bytes | None, where: str) -> bytes:
    # Credentials ::= CHOICE { simple Password, strong [0] StrongCredentials, ... }
    if strong is not None:
        _check_strong(_checked_set(strong, f"{where}.strong"), f"{where}.strong", EncodeError)
        return ber.retag(strong, _STRONG)
    if password is None:
        raise EncodeError("no credentials", where=where)
    if len(password) > UB_PASSWORD_LENGTH:
        raise EncodeError(f"a password is {UB_PASSWORD_LENGTH} long at most", where=where)
    if isinstance(password, str):
        return ber.tlv(ber.IA5_STRING, ber.text_contents(password, f"{where}.simple.ia5-string"))
    return ber.tlv(ber.OCTET_STRING, password)


def _checked_set(raw: bytes, where: str) -> Tlv:
    """The one BER value ``raw`` holds, which must be a SET; an EncodeError if not."""
    try:
        tlv = ber.read_single(raw, where)
    except DecodeError as exc:
        raise EncodeError(f"not one BER value: {exc.why}", where=where) from None
    if tlv.tag != ber.SET or not tlv.constructed:
        raise EncodeError(f"expected a SET, found {ber.tag_name(tlv.tag)}", where=where)
    return tlv


# --- decoding ---------------------------------------------------------------------------


def decode_bind_argument(data: bytes) -> MTABindArgument:
    """Decode ``MTAAbstractService.MTABindArgument``; raises only :class:`DecodeError`."""
    members = _authenticated_members(data, "MTABindArgument", _ARGUMENT_MEMBERS)
    if members is None:
        return MTABindArgument()
    where = "MTABindArgument.authenticated"
    name = _name(members, "initiator-name", where)
    password, strong = _decode_credentials(members, "initiator-credentials", where)
    context = members.get("security-context")
    if context is not None:
        _check_security_context(context, f"{where}.security-context", DecodeError)
    return MTABindArgument(
        initiator_name=name,
        password=password,
        strong_credentials=strong,
        security_context=None if context is None else ber.retag(context.raw(), ber.SET),
    )


def decode_bind_result(data: bytes) -> MTABindResult:
    """Decode ``MTAAbstractService.MTABindResult``; raises only :class:`DecodeError`."""
    members = _authenticated_members(data, "MTABindResult", _RESULT_MEMBERS)
    if members is None:
        return MTABindResult()
    where = "MTABindResult.authenticated"
    name = _name(members, "responder-name", where)
    password, strong = _decode_credentials(members, "responder-credentials", where)
    return MTABindResult(responder_name=name, password=password, strong_credentials=strong)


def decode_bind_error(data: bytes) -> MTABindError:
    """Decode ``MTAAbstractService.MTABindError``; raises only :class:`DecodeError`."""
    tlv = ber.expect(ber.read_single(data, "MTABindError"), ber.INTEGER, "MTABindError")
    code = ber.read_int(tlv, "MTABindError")
    try:
        return MTABindError(code)
    except ValueError:
        raise DecodeError(f"unknown MTA-bind error {code}", where="MTABindError") from None


def _authenticated_members(
    data: bytes, type_name: str, names: dict[int, str]
) -> ber.SetMembers | None:
    """The members of the ``authenticated`` SET; None for ``unauthenticated`` (NULL)."""
    tlv = ber.read_single(data, type_name)
    if tlv.tag == ber.NULL:
        if tlv.constructed or tlv.body != tlv.end:
            raise DecodeError("a NULL has no contents", where=f"{type_name}.unauthenticated")
        return None
    if tlv.tag != _AUTHENTICATED:
        found = ber.tag_name(tlv.tag)
        raise DecodeError(f"expected NULL or [1], found {found}", where=type_name)
    return ber.split_set(tlv, names, f"{type_name}.authenticated")


def _name(members: ber.SetMembers, name: str, where: str) -> str:
    """The MTAName ([0] IA5String) of the ``authenticated`` SET."""
    return ber.read_text(members.need(name, where), f"{where}.{name}", ber.IA5_STRING)


def _decode_credentials(
    members: ber.SetMembers, name: str, where: str
) -> tuple[Password | None, bytes | None]:
    """The password or strong credentials of ``[1] Credentials`` (X.411 12.1.1.1.1.2)."""
    where = f"{where}.{name}"
    choice = ber.only_child(members.need(name, where), where)
    if choice.tag == ber.IA5_STRING:
        return _bounded(ber.read_text(choice, f"{where}.simple.ia5-string"), where), None
    if choice.tag == ber.OCTET_STRING:
        return _bounded(ber.read_octets(choice, f"{where}.simple.octet-string"), where), None
    if choice.tag == _STRONG:
        _check_strong(choice, f"{where}.strong", DecodeError)
        return None, ber.retag(choice.raw(), ber.SET)
    if choice.tag == _PROTECTED:
        # X.411 12.1.1.1.1.2: an MTA bind carries simple or strong credentials only.
        raise DecodeError("protected credentials are not allowed in an MTA bind", where=where)
    raise DecodeError(f"unexpected {ber.tag_name(choice.tag)}", where=where)


def _bounded(password: Password, where: str) -> Password:
    """``password`` within SIZE (0..ub-password-length), else a DecodeError."""
    if len(password) > UB_PASSWORD_LENGTH:
        raise DecodeError(
            f"a password of {len(password)}, over ub-password-length ({UB_PASSWORD_LENGTH})",
            where=f"{where}.simple",
        )
    return password


# --- the parts kept as received ---------------------------------------------------------


def _check_security_context(tlv: Tlv, where: str, error: type[DecodeError | EncodeError]) -> None:
    """``SecurityContext ::= SET SIZE (1..ub-security-labels) OF SecurityLabel``."""
    try:
        labels = ber.children(tlv, where)
        if not labels:
            raise DecodeError("a security context holds at least one label", where=where)
        for index, label in enumerate(labels):
            decode_security_label(label.raw(), f"{where}[{index}]")
    except DecodeError as exc:
        raise error(exc.why, where=exc.where or where) from None


def _check_strong(tlv: Tlv, where: str, error: type[DecodeError | EncodeError]) -> None:
    """StrongCredentials: its known members constructed and present once, a bind-token
    a Token (``[0] OBJECT IDENTIFIER``, ``[1]`` its value)."""
    try:
        seen: set[int] = set()
        for member in ber.children(tlv, where):
            number = member.tag & 0xFFFFFF
            name = _STRONG_MEMBERS.get(number) if member.tag >> 24 == ber.CONTEXT else None
            if name is None:
                continue  # an extension addition of a later version (X.680 52)
            if number in seen:
                raise DecodeError(f"{name} appears twice", where=where)
            seen.add(number)
            if number == 0:
                _check_token(member, f"{where}.{name}")
            else:
                ber.children(member, f"{where}.{name}")
    except DecodeError as exc:
        raise error(exc.why, where=exc.where or where) from None


def _check_token(tlv: Tlv, where: str) -> None:
    """``Token ::= SEQUENCE {token-type-identifier [0] OBJECT IDENTIFIER, token [1] ...}``"""
    parts = ber.children(tlv, where)
    if len(parts) != 2 or parts[0].tag != ber.context(0) or parts[1].tag != ber.context(1):
        raise DecodeError("a Token is [0] OBJECT IDENTIFIER and [1] its value", where=where)
    ber.read_oid(parts[0], f"{where}.token-type-identifier")
    ber.only_child(parts[1], f"{where}.token")


# --- the X.410 BIND macro wrappers ------------------------------------------------------


def wrap_bind_argument(encoded: bytes) -> bytes:
    """``[16] EXPLICIT`` around an encoded MTABindArgument (RTORQ user data)."""
    return ber.tlv_bytes(_WRAP_ARGUMENT, bytes(encoded))


def wrap_bind_result(encoded: bytes) -> bytes:
    """``[17] EXPLICIT`` around an encoded MTABindResult (RTOAC user data)."""
    return ber.tlv_bytes(_WRAP_RESULT, bytes(encoded))


def wrap_bind_error(encoded: bytes) -> bytes:
    """``[18] EXPLICIT`` around an encoded MTABindError (RTORJ user data)."""
    return ber.tlv_bytes(_WRAP_ERROR, bytes(encoded))


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
    if data[:1] == bytes([_BARE_ERROR]):
        return _bare_error(data, deviations)
    if data[:1] != bytes([_WRAP_ERROR]):
        found = f"{data[0]:#04x}" if data else "nothing"
        why = f"expected identifier {_WRAP_ERROR:#04x} or a bare INTEGER {_BARE_ERROR:#04x}"
        raise DecodeError(f"{why}, found {found}", where=_ERROR_WRAPPER)
    return _unwrap(data, _WRAP_ERROR, _ERROR_WRAPPER)


def _bare_error(data: bytes, deviations: Deviations | None) -> bytes:
    """RTORJ user data holding the MTABindError INTEGER without its ``[18]`` wrapper."""
    error = decode_bind_error(data)
    if deviations is not None:
        name = error.name.lower().replace("_", "-")
        deviations.append(Deviation(_RTORJ_USER_DATA, data.hex(" "), f"MTABindError {name}"))
    return data


def _unwrap(data: bytes, octet: int, where: str) -> bytes:
    """The one value inside the explicit tag whose identifier octet is ``octet``."""
    if not data or data[0] != octet:
        found = f"{data[0]:#04x}" if data else "nothing"
        raise DecodeError(f"expected identifier {octet:#04x}, found {found}", where=where)
    return ber.only_child(ber.read_single(data, where), where).raw()
