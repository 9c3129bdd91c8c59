"""The X.410 (1984) reliable transfer server's PDUs and the 1984 MTA bind, coded over p1.ber.

In X.410-1984 mode (X.419 clause 7 and Annex A's interworking with 1984 systems; X.228 Annex B)
there is no ACSE and no presentation layer: the S-CONNECT user data of the session (X.225)
is the RTS's PConnect, answered by PAccept in the AC or PRefuse in the RF, and a provider's
abort carries AbortInformation in the AB.  X.226 defines its X.410-1984 mode so that these
are the same octets as its CP-type / CPA-PPDU / CPR-PPDU / ARU-PPDU in that mode: the
DataTransferSyntax below is X.226's ``mode-selector { mode-value x410-1984-mode(0) }``.

The module, as X.410 (1984) writes it (transcribed in ISODE's OACS module, acsap/acsold.py)::

    PConnect ::= SET {
        dataTransferSyntax [0] IMPLICIT DataTransferSyntax,
        pUserData [1] IMPLICIT SET {
            checkpointSize [0] IMPLICIT INTEGER DEFAULT 0,
            windowSize [1] IMPLICIT INTEGER DEFAULT 3,
            dialogueMode [2] IMPLICIT INTEGER { monologue(0), twa(1) } DEFAULT monologue,
            connectionDataRQ [3] ConnectionData,
            applicationProtocol [4] IMPLICIT INTEGER OPTIONAL } }
    PAccept ::= SET {
        dataTransferSyntax [0] IMPLICIT DataTransferSyntax,
        pUserData [1] IMPLICIT SET {
            checkpointSize [0] IMPLICIT INTEGER DEFAULT 0,
            windowSize [1] IMPLICIT INTEGER DEFAULT 3,
            connectionDataAC [2] ConnectionData } }
    PRefuse ::= SET { refuseReason [0] IMPLICIT RefuseReason }
    DataTransferSyntax ::= SET { [0] IMPLICIT INTEGER { x409(0) } }
    ConnectionData ::= CHOICE {
        open [0] ANY,                     -- P1: the 1984 MTA bind, below
        recover [1] IMPLICIT SessionConnectionIdentifier }
    RefuseReason ::= INTEGER { rtsBusy(0), cannotRecover(1), validationFailure(2),
                               unacceptableDialogueMode(3) }
    AbortInformation ::= SET {
        abortReason [0] IMPLICIT AbortReason OPTIONAL,
        reflectedParameter [1] IMPLICIT BIT STRING OPTIONAL }
    AbortReason ::= INTEGER { localSystemProblem(0), invalidParameter(1),
                              unrecognizedActivity(2), temporaryProblem(3), protocolError(4) }

    -- the open value of P1 (X.411 1984), as 1988's MTABindArgument / MTABindResult
    -- without strong credentials and security context:
    --   CHOICE { NULL, [1] IMPLICIT SET { mTAName [0] IMPLICIT IA5String,
    --                                     password [1] CHOICE { IA5String, OCTET STRING } } }
    -- read with 1988's decoder (the password's two alternatives kept apart, each within
    -- ub-password-length); strong credentials or a security context are refused.

``applicationProtocol`` 1 is the 1984 MTS transfer protocol (P1), 12 the 1988 MTS transfer
protocol in X.410-1984 mode (X.419); ISODE reads an absent one as 1 and also knows a
``protocolVersion [5] IMPLICIT INTEGER OPTIONAL``, which is read and ignored here.

Decoders read every legal BER form (:mod:`p1.ber`) and raise only DecodeError; encoders
write DER-like definite lengths and raise EncodeError.  A DataTransferSyntax sent as the bare
``[0] IMPLICIT INTEGER`` (no inner SET) is also read, as a deviation.

Public API::

    ConnectMode.NORMAL | ConnectMode.X410_1984; connect_mode(cn_user_data) -> ConnectMode
    APPLICATION_P1_1984 = 1, APPLICATION_P1_1988_X410 = 12
    RefuseReason, AbortReason (IntEnum)
    PConnect(checkpoint_size, window_size, dialogue_mode, open, recover, application_protocol)
    PAccept(checkpoint_size, window_size, open)
    encode_pconnect / decode_pconnect, encode_paccept / decode_paccept
    encode_prefuse(reason) / decode_prefuse(data) -> RefuseReason | int
    encode_abort_information(reason) / decode_abort_information(data) -> int | None
    encode_bind_argument_1984(arg) / encode_bind_result_1984(res)      (no 1988-only fields)
    decode_bind_argument_1984(data) / decode_bind_result_1984(data)
    refuse_reason_of(error) -> RefuseReason / bind_error_of(reason) -> MTABindError | None
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from p1 import ber
from p1.association.mtabind import (
    MTABindArgument,
    MTABindError,
    MTABindResult,
    decode_bind_argument,
    decode_bind_result,
    encode_bind_argument,
    encode_bind_result,
)
from p1.errors import DecodeError, EncodeError
from p1.osi.rtse import DialogueMode, RefuseReason

__all__ = [
    "APPLICATION_P1_1984",
    "APPLICATION_P1_1988_X410",
    "AbortReason",
    "ConnectMode",
    "PAccept",
    "PConnect",
    "RefuseReason",
    "bind_error_of",
    "connect_mode",
    "decode_abort_information",
    "decode_bind_argument_1984",
    "decode_bind_result_1984",
    "decode_paccept",
    "decode_pconnect",
    "decode_prefuse",
    "encode_abort_information",
    "encode_bind_argument_1984",
    "encode_bind_result_1984",
    "encode_paccept",
    "encode_pconnect",
    "encode_prefuse",
    "refuse_reason_of",
]

APPLICATION_P1_1984 = 1
"""applicationProtocol of the 1984 MTS transfer protocol (P1)."""
APPLICATION_P1_1988_X410 = 12
"""applicationProtocol of the 1988 MTS transfer protocol in X.410-1984 mode (X.419)."""
X409 = 0
"""DataTransferSyntax x409(0): BER (X.409 1984), the only one."""
_NORMAL_MODE = 1  # X.226 mode-value normal-mode(1)
_INT_RANGE = 0x7FFFFFFF

_C0, _C1, _C2, _C3, _C4, _C5 = (ber.context(n) for n in range(6))


class ConnectMode(enum.Enum):
    """How a peer connects: 1988 normal mode (presentation, ACSE, RTSE) or X.410-1984."""

    NORMAL = "1988-normal"
    X410_1984 = "1984"


class AbortReason(enum.IntEnum):
    """Why an RTS aborts (X.410 1984 AbortInformation abortReason)."""

    LOCAL_SYSTEM_PROBLEM = 0
    INVALID_PARAMETER = 1
    UNRECOGNIZED_ACTIVITY = 2
    TEMPORARY_PROBLEM = 3
    PROTOCOL_ERROR = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class PConnect:
    """The X.410 (1984) PConnect: the RTS connect, with the P1 bind in ``open``.

    Exactly one of ``open`` (the BER of the open value, without its ``[0]``) and
    ``recover`` (the BER of the SessionConnectionIdentifier's contents) is given.
    """

    checkpoint_size: int = 0
    window_size: int = 3
    dialogue_mode: DialogueMode = DialogueMode.MONOLOGUE
    open: bytes | None = None
    recover: bytes | None = None
    application_protocol: int | None = APPLICATION_P1_1984


@dataclass(frozen=True, slots=True, kw_only=True)
class PAccept:
    """The X.410 (1984) PAccept, with the P1 bind result (BER, without ``[0]``) in ``open``."""

    checkpoint_size: int = 0
    window_size: int = 3
    open: bytes


# --- telling the modes apart -----------------------------------------------------------


def connect_mode(user_data: bytes | memoryview) -> ConnectMode:
    """Whether a session CN's user data is an X.410-1984 PConnect or not.

    Both modes send a SET whose ``[0]`` is X.226's mode selector (X.410's DataTransferSyntax):
    mode-value 0 is X.410-1984 mode, 1 normal mode.  A PConnect is also recognised by its
    ``[1]`` pUserData without normal mode's ``[2]``.  Anything else (including what cannot
    be read) is left to the normal-mode machine, which answers it as X.226 prescribes.
    """
    try:
        members = _members(ber.read_single(user_data, "CN user data"), "CN user data")
    except DecodeError:
        return ConnectMode.NORMAL
    selector = members.get(_C0)
    if selector is not None:
        try:
            value = _data_transfer_syntax(selector, "mode-selector")
        except DecodeError:
            return ConnectMode.NORMAL
        return ConnectMode.X410_1984 if value == X409 else ConnectMode.NORMAL
    if _C1 in members and _C2 not in members:
        return ConnectMode.X410_1984
    return ConnectMode.NORMAL


def _members(tlv: ber.Tlv, what: str) -> dict[int, ber.Tlv]:
    """The members of a SET by tag; a repeated tag is an error."""
    ber.expect(tlv, ber.SET, what)
    return _implicit_members(tlv, what)


def _implicit_members(tlv: ber.Tlv, what: str) -> dict[int, ber.Tlv]:
    """The members of an IMPLICIT SET (any tag)."""
    found: dict[int, ber.Tlv] = {}
    for child in ber.children(tlv, what):
        if child.tag in found:
            raise DecodeError(f"{ber.tag_name(child.tag)} appears twice", where=what)
        found[child.tag] = child
    return found


# --- DataTransferSyntax ----------------------------------------------------------------


def _data_transfer_syntax(tlv: ber.Tlv, what: str) -> int:
    """``[0] IMPLICIT SET { [0] IMPLICIT INTEGER }``; a bare ``[0] INTEGER`` is read too."""
    if not tlv.constructed:
        return ber.read_int(tlv, what)
    inner = _implicit_members(tlv, what).get(_C0)
    if inner is None:
        raise DecodeError("DataTransferSyntax without its value", where=what)
    return ber.read_int(inner, what)


def _check_x409(tlv: ber.Tlv | None, what: str) -> None:
    if tlv is None:
        raise DecodeError("missing dataTransferSyntax", where=what)
    value = _data_transfer_syntax(tlv, f"{what}.dataTransferSyntax")
    if value != X409:
        raise DecodeError(f"dataTransferSyntax {value}, not x409(0)", where=what)


_DATA_TRANSFER_SYNTAX = ber.tlv(_C0, ber.tlv(_C0, ber.int_contents(X409)), constructed=True)


# --- PConnect ----------------------------------------------------------------------------


def _integer(tag: int, value: int, what: str) -> bytes:
    return ber.tlv(tag, ber.int_contents(ber.check_int(value, what, 0, _INT_RANGE)))


def _connection_data(tag: int, open_value: bytes | None, recover: bytes | None) -> bytes:
    """``[tag] ConnectionData`` (explicit: a CHOICE): open ``[0] ANY`` or recover ``[1]``."""
    if (open_value is None) == (recover is None):
        raise EncodeError("give exactly one of open and recover", where="ConnectionData")
    if open_value is not None:
        ber.check_single_tlv(open_value, "ConnectionData.open")
        choice = ber.tlv(_C0, open_value, constructed=True)
    else:
        assert recover is not None
        choice = ber.tlv(_C1, recover, constructed=True)
    return ber.tlv(tag, choice, constructed=True)


def encode_pconnect(value: PConnect) -> bytes:
    """BER of a PConnect; DEFAULT members are left out when they hold their default."""
    parts = []
    if value.checkpoint_size:
        parts.append(_integer(_C0, value.checkpoint_size, "checkpointSize"))
    if value.window_size != 3:
        parts.append(_integer(_C1, value.window_size, "windowSize"))
    if value.dialogue_mode is not DialogueMode.MONOLOGUE:
        parts.append(_integer(_C2, int(value.dialogue_mode), "dialogueMode"))
    parts.append(_connection_data(_C3, value.open, value.recover))
    if value.application_protocol is not None:
        parts.append(_integer(_C4, value.application_protocol, "applicationProtocol"))
    user_data = ber.tlv(_C1, b"".join(parts), constructed=True)
    return ber.tlv(ber.SET, _DATA_TRANSFER_SYNTAX + user_data, constructed=True)


def decode_pconnect(data: bytes | memoryview) -> PConnect:
    """Decode a PConnect; raises only DecodeError."""
    where = "PConnect.pUserData"
    fields = _user_data(data, "PConnect", {_C0, _C1, _C2, _C3, _C4, _C5})
    open_value, recover = _read_connection_data(fields.get(_C3), f"{where}.connectionDataRQ")
    protocol = fields.get(_C4)
    return PConnect(
        checkpoint_size=_read_size(fields.get(_C0), 0, f"{where}.checkpointSize"),
        window_size=_read_size(fields.get(_C1), 3, f"{where}.windowSize"),
        dialogue_mode=_read_mode(fields.get(_C2), f"{where}.dialogueMode"),
        open=open_value,
        recover=recover,
        application_protocol=(
            APPLICATION_P1_1984
            if protocol is None
            else ber.read_bounded_int(protocol, f"{where}.applicationProtocol", 0, _INT_RANGE)
        ),
    )


def _user_data(data: bytes | memoryview, what: str, known: set[int]) -> dict[int, ber.Tlv]:
    """The members of the pUserData of a PConnect or PAccept ``SET { dataTransferSyntax
    [0], pUserData [1] }`` by tag, after checking the syntax is x409; a member not in
    ``known`` is an error."""
    members = _members(ber.read_single(data, what), what)
    _check_x409(members.get(_C0), what)
    user_data = members.get(_C1)
    if user_data is None:
        raise DecodeError("missing pUserData", where=what)
    where = f"{what}.pUserData"
    fields = _implicit_members(user_data, where)
    unknown = set(fields) - known
    if unknown:
        raise DecodeError(f"unexpected {ber.tag_name(min(unknown))}", where=where)
    return fields


def _read_size(tlv: ber.Tlv | None, default: int, what: str) -> int:
    return default if tlv is None else ber.read_bounded_int(tlv, what, 0, _INT_RANGE)


def _read_mode(tlv: ber.Tlv | None, what: str) -> DialogueMode:
    if tlv is None:
        return DialogueMode.MONOLOGUE
    return DialogueMode(ber.read_bounded_int(tlv, what, 0, 1))


def _read_connection_data(tlv: ber.Tlv | None, what: str) -> tuple[bytes | None, bytes | None]:
    """(open value, None) or (None, recover contents) of ``[n] ConnectionData``."""
    if tlv is None:
        raise DecodeError("missing ConnectionData", where=what)
    choice = ber.only_child(tlv, what)
    if choice.tag == _C0:
        return ber.only_child(choice, f"{what}.open").raw(), None
    if choice.tag == _C1:
        return None, bytes(ber.constructed_contents(choice, f"{what}.recover"))
    raise DecodeError(f"unexpected {ber.tag_name(choice.tag)}", where=what)


# --- PAccept ----------------------------------------------------------------------------


def encode_paccept(value: PAccept) -> bytes:
    """BER of a PAccept; checkpointSize and windowSize are always written, as ISODE does."""
    parts = [
        _integer(_C0, value.checkpoint_size, "checkpointSize"),
        _integer(_C1, value.window_size, "windowSize"),
        _connection_data(_C2, value.open, None),
    ]
    user_data = ber.tlv(_C1, b"".join(parts), constructed=True)
    return ber.tlv(ber.SET, _DATA_TRANSFER_SYNTAX + user_data, constructed=True)


def decode_paccept(data: bytes | memoryview) -> PAccept:
    """Decode a PAccept; raises only DecodeError (a recover answer is one too)."""
    where = "PAccept.pUserData"
    fields = _user_data(data, "PAccept", {_C0, _C1, _C2})
    open_value, _ = _read_connection_data(fields.get(_C2), f"{where}.connectionDataAC")
    if open_value is None:
        raise DecodeError("connectionDataAC is not open", where=where)
    return PAccept(
        checkpoint_size=_read_size(fields.get(_C0), 0, f"{where}.checkpointSize"),
        window_size=_read_size(fields.get(_C1), 3, f"{where}.windowSize"),
        open=open_value,
    )


# --- PRefuse and AbortInformation -------------------------------------------------------


def encode_prefuse(reason: RefuseReason) -> bytes:
    """BER of ``PRefuse ::= SET { [0] IMPLICIT RefuseReason }``."""
    return ber.tlv(ber.SET, _integer(_C0, int(reason), "refuseReason"), constructed=True)


def decode_prefuse(data: bytes | memoryview) -> RefuseReason | int:
    """The refuse reason of a PRefuse (an unknown value is returned as an int)."""
    what = "PRefuse"
    members = _members(ber.read_single(data, what), what)
    tlv = members.get(_C0)
    if tlv is None or len(members) != 1:
        raise DecodeError("PRefuse holds one refuseReason [0]", where=what)
    value = ber.read_int(tlv, f"{what}.refuseReason")
    return RefuseReason(value) if value in RefuseReason._value2member_map_ else value


def encode_abort_information(reason: AbortReason) -> bytes:
    """BER of ``AbortInformation ::= SET { [0] IMPLICIT AbortReason }``."""
    return ber.tlv(ber.SET, _integer(_C0, int(reason), "abortReason"), constructed=True)


def decode_abort_information(data: bytes | memoryview) -> int | None:
    """The abortReason of an AbortInformation, None when absent."""
    what = "AbortInformation"
    members = _members(ber.read_single(data, what), what)
    unknown = set(members) - {_C0, _C1}
    if unknown:
        raise DecodeError(f"unexpected {ber.tag_name(min(unknown))}", where=what)
    if _C1 in members:
        ber.read_bits(members[_C1], f"{what}.reflectedParameter")
    tlv = members.get(_C0)
    return None if tlv is None else ber.read_int(tlv, f"{what}.abortReason")


# --- the 1984 MTA bind ------------------------------------------------------------------


def encode_bind_argument_1984(argument: MTABindArgument) -> bytes:
    """The open value of a 1984 PConnect: 1988's MTABindArgument without its extensions."""
    if argument.strong_credentials is not None or argument.security_context is not None:
        raise EncodeError(
            "strong credentials and security contexts are 1988 only", where="1984 bind argument"
        )
    return encode_bind_argument(argument)


def encode_bind_result_1984(result: MTABindResult) -> bytes:
    """The open value of a 1984 PAccept: 1988's MTABindResult without strong credentials."""
    if result.strong_credentials is not None:
        raise EncodeError("strong credentials are 1988 only", where="1984 bind result")
    return encode_bind_result(result)


def decode_bind_argument_1984(data: bytes) -> MTABindArgument:
    """The 1984 bind argument (NULL or name and password); raises only DecodeError, also
    for strong credentials or a security context, which the 1984 value has no place for."""
    argument = decode_bind_argument(data)
    if argument.strong_credentials is not None or argument.security_context is not None:
        raise DecodeError(
            "strong credentials and security contexts are 1988 only", where="1984 bind argument"
        )
    return argument


def decode_bind_result_1984(data: bytes) -> MTABindResult:
    """The 1984 bind result (NULL or name and password); raises only DecodeError, also
    for strong credentials, which the 1984 value has no place for."""
    result = decode_bind_result(data)
    if result.strong_credentials is not None:
        raise DecodeError("strong credentials are 1988 only", where="1984 bind result")
    return result


_REFUSALS = {
    MTABindError.BUSY: RefuseReason.RTS_BUSY,
    MTABindError.UNACCEPTABLE_DIALOGUE_MODE: RefuseReason.UNACCEPTABLE_DIALOGUE_MODE,
}
_ERRORS = {
    RefuseReason.RTS_BUSY: MTABindError.BUSY,
    RefuseReason.VALIDATION_FAILURE: MTABindError.AUTHENTICATION_ERROR,
    RefuseReason.UNACCEPTABLE_DIALOGUE_MODE: MTABindError.UNACCEPTABLE_DIALOGUE_MODE,
}


def refuse_reason_of(error: MTABindError) -> RefuseReason:
    """The PRefuse reason for an MTA-bind error; the 1988-only security errors and an
    authentication error are a validation failure."""
    return _REFUSALS.get(error, RefuseReason.VALIDATION_FAILURE)


def bind_error_of(reason: RefuseReason | int) -> MTABindError | None:
    """The MTA-bind error a PRefuse reason stands for (None: cannotRecover or unknown)."""
    return _ERRORS.get(reason) if isinstance(reason, RefuseReason) else None
