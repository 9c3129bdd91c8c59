"""ACSE APDUs, kernel functional unit (X.227 | ISO/IEC 8650-1, ACSE-1 module of X.227bis).

A P1 association is an A-ASSOCIATE whose user information carries the RT-OPEN (X.419
clause 7): AARQ and AARE in the CP and CPA / CPR, RLRQ and RLRE in the S-RELEASE user data,
ABRT in the S-U-ABORT user data, each one presentation data value in the ACSE context.
This module is their codec, written by hand on :mod:`p1.ber` with the member tables of
:mod:`p1.osi.presentation`.  AP titles, AE qualifiers and authentication values are kept as
the BER of the value inside their explicit tag; the higher-level-association and
context-negotiation members of the 1998 module are refused (P1 uses neither).

Public API::

    Source (SERVICE_USER, SERVICE_PROVIDER), AssociateResult (ACCEPTED, REJECTED_PERMANENT,
    REJECTED_TRANSIENT), UserDiagnostic, ProviderDiagnostic (NULL_DIAGNOSTIC,
    NO_REASON_GIVEN), ReleaseRequestReason, ReleaseResponseReason (RELEASE_NORMAL),
    AbortDiagnostic
    External(value, direct_reference, indirect_reference, descriptor, encoding)
    encode_external(external) -> bytes / decode_external(data) -> External
    Diagnostic(source, value), Aarq, Aare, Rlrq, Rlre, Abrt; AcseApdu (their union)
    encode_acse(apdu) -> bytes / decode_acse(data) -> AcseApdu

Every decoder raises only :class:`p1.errors.DecodeError`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final, TypeAlias

from p1 import ber
from p1.ber import Tlv, application, context
from p1.errors import DecodeError, EncodeError
from p1.osi.presentation import (
    EXPLICIT_INTEGER,
    EXPLICIT_OID,
    EXPLICIT_VALUE,
    IMPLICIT_FLAGS,
    IMPLICIT_INTEGER,
    IMPLICIT_OID,
    Codec,
    Encoding,
    Member,
    decode_members,
    encode_data_value,
    encode_members,
    read_data_value,
    unsupported,
)

__all__ = [
    "ACCEPTED",
    "NO_REASON_GIVEN",
    "NULL_DIAGNOSTIC",
    "REJECTED_PERMANENT",
    "REJECTED_TRANSIENT",
    "RELEASE_NORMAL",
    "SERVICE_PROVIDER",
    "SERVICE_USER",
    "Aare",
    "Aarq",
    "AbortDiagnostic",
    "Abrt",
    "AcseApdu",
    "AssociateResult",
    "Diagnostic",
    "External",
    "ProviderDiagnostic",
    "ReleaseRequestReason",
    "ReleaseResponseReason",
    "Rlre",
    "Rlrq",
    "Source",
    "UserDiagnostic",
    "decode_acse",
    "decode_external",
    "encode_acse",
    "encode_external",
]


class Source(enum.Enum):
    """Who gave a diagnostic or aborted: the ACSE service-user or the service-provider."""

    SERVICE_USER = "service-user"
    SERVICE_PROVIDER = "service-provider"


SERVICE_USER: Final = Source.SERVICE_USER
SERVICE_PROVIDER: Final = Source.SERVICE_PROVIDER


class AssociateResult(enum.IntEnum):
    """``Associate-result ::= INTEGER {accepted(0), rejected-permanent(1),
    rejected-transient(2)} (0..2, ...)``"""

    ACCEPTED = 0
    REJECTED_PERMANENT = 1
    REJECTED_TRANSIENT = 2


ACCEPTED: Final = AssociateResult.ACCEPTED
REJECTED_PERMANENT: Final = AssociateResult.REJECTED_PERMANENT
REJECTED_TRANSIENT: Final = AssociateResult.REJECTED_TRANSIENT


class UserDiagnostic(enum.IntEnum):
    """Associate-source-diagnostic ``service-user [1] INTEGER {...} (0..14, ...)``."""

    NULL = 0
    NO_REASON_GIVEN = 1
    APPLICATION_CONTEXT_NAME_NOT_SUPPORTED = 2
    CALLING_AP_TITLE_NOT_RECOGNIZED = 3
    CALLING_AP_INVOCATION_IDENTIFIER_NOT_RECOGNIZED = 4
    CALLING_AE_QUALIFIER_NOT_RECOGNIZED = 5
    CALLING_AE_INVOCATION_IDENTIFIER_NOT_RECOGNIZED = 6
    CALLED_AP_TITLE_NOT_RECOGNIZED = 7
    CALLED_AP_INVOCATION_IDENTIFIER_NOT_RECOGNIZED = 8
    CALLED_AE_QUALIFIER_NOT_RECOGNIZED = 9
    CALLED_AE_INVOCATION_IDENTIFIER_NOT_RECOGNIZED = 10
    AUTHENTICATION_MECHANISM_NAME_NOT_RECOGNIZED = 11
    AUTHENTICATION_MECHANISM_NAME_REQUIRED = 12
    AUTHENTICATION_FAILURE = 13
    AUTHENTICATION_REQUIRED = 14


class ProviderDiagnostic(enum.IntEnum):
    """Associate-source-diagnostic ``service-provider [2] INTEGER {...} (0..2, ...)``."""

    NULL = 0
    NO_REASON_GIVEN = 1
    NO_COMMON_ACSE_VERSION = 2


NULL_DIAGNOSTIC: Final = 0
"""null(0), the diagnostic of an accepted association (either source)."""
NO_REASON_GIVEN: Final = 1
"""no-reason-given(1) (either source)."""


class ReleaseRequestReason(enum.IntEnum):
    """``Release-request-reason ::= INTEGER {normal(0), urgent(1), user-defined(30)}``"""

    NORMAL = 0
    URGENT = 1
    USER_DEFINED = 30


class ReleaseResponseReason(enum.IntEnum):
    """``Release-response-reason ::= INTEGER {normal(0), not-finished(1), user-defined(30)}``"""

    NORMAL = 0
    NOT_FINISHED = 1
    USER_DEFINED = 30


RELEASE_NORMAL: Final = 0
"""normal(0), in RLRQ and RLRE alike."""


class AbortDiagnostic(enum.IntEnum):
    """``ABRT-diagnostic ::= ENUMERATED {...}``"""

    NO_REASON_GIVEN = 1
    PROTOCOL_ERROR = 2
    AUTHENTICATION_MECHANISM_NAME_NOT_RECOGNIZED = 3
    AUTHENTICATION_MECHANISM_NAME_REQUIRED = 4
    AUTHENTICATION_FAILURE = 5
    AUTHENTICATION_REQUIRED = 6


# --- EXTERNAL -------------------------------------------------------------------------

_EXTERNAL = ber.universal(8)
_DESCRIPTOR = ber.universal(7)


@dataclass(frozen=True, slots=True, kw_only=True)
class External:
    """One element of user-information (X.690 8.18, X.227 Association-information)::

        EXTERNAL ::= [UNIVERSAL 8] IMPLICIT SEQUENCE {
            direct-reference       OBJECT IDENTIFIER OPTIONAL,
            indirect-reference     INTEGER OPTIONAL,
            data-value-descriptor  ObjectDescriptor OPTIONAL,
            encoding CHOICE {
                single-ASN1-type  [0] ANY,
                octet-aligned     [1] IMPLICIT OCTET STRING,
                arbitrary         [2] IMPLICIT BIT STRING } }

    In P1 the indirect reference is the RTSE context (3) and the value an RTSE APDU.
    """

    value: bytes
    """single-ASN1-type: the value's TLV as received; otherwise its octets."""
    direct_reference: str | None = None
    """The transfer syntax (or abstract syntax) object identifier, dotted."""
    indirect_reference: int | None = None
    """The presentation context id of the value."""
    descriptor: str | None = None
    """data-value-descriptor (ObjectDescriptor text, ISO 8859-1)."""
    encoding: Encoding = Encoding.SINGLE_ASN1_TYPE
    """Which alternative of the encoding CHOICE."""


def _external_body(external: External, what: str) -> list[bytes]:
    parts = []
    if external.direct_reference is not None:
        where = f"{what}.direct-reference"
        parts.append(IMPLICIT_OID.write(ber.OBJECT_IDENTIFIER, external.direct_reference, where))
    if external.indirect_reference is not None:
        where = f"{what}.indirect-reference"
        parts.append(IMPLICIT_INTEGER.write(ber.INTEGER, external.indirect_reference, where))
    if external.descriptor is not None:
        where = f"{what}.data-value-descriptor"
        parts.append(_GRAPHIC.write(_DESCRIPTOR, external.descriptor, where))
    parts.append(encode_data_value(external.encoding, external.value, f"{what}.encoding"))
    return parts


def _write_external(external: object, what: str) -> bytes:
    if not isinstance(external, External):
        raise EncodeError(f"{external!r} is not an External", where=what)
    return ber.constructed(_EXTERNAL, _external_body(external, what))


# The members before the encoding, in this order, each optional.
_DIRECT, _INDIRECT, _DESCRIPTOR_RANK = 1, 2, 3
_HEAD_RANKS = {
    ber.OBJECT_IDENTIFIER: _DIRECT,
    ber.INTEGER: _INDIRECT,
    _DESCRIPTOR: _DESCRIPTOR_RANK,
}


def _read_external(tlv: Tlv, what: str) -> External:
    items = ber.children(ber.expect(tlv, _EXTERNAL, what), what)
    if not items:
        raise DecodeError("no encoding", where=what)
    direct = descriptor = None
    indirect = None
    last = 0
    for item in items[:-1]:
        rank = _HEAD_RANKS.get(item.tag, 0)
        if rank <= last:
            raise DecodeError(f"unexpected {ber.tag_name(item.tag)}", where=what)
        last = rank
        if rank == _DIRECT:
            direct = ber.read_oid(item, f"{what}.direct-reference")
        elif rank == _INDIRECT:
            indirect = ber.read_int(item, f"{what}.indirect-reference")
        else:
            descriptor = _read_latin1(item, f"{what}.data-value-descriptor")
    encoding, value = read_data_value(items[-1], f"{what}.encoding")
    return External(
        value=value,
        direct_reference=direct,
        indirect_reference=indirect,
        descriptor=descriptor,
        encoding=encoding,
    )


def _read_latin1(tlv: Tlv, what: str) -> str:
    return ber.read_octets(tlv, what).decode("latin-1")


def _latin1(text: object, what: str) -> bytes:
    if isinstance(text, str):
        try:
            return text.encode("latin-1")
        except UnicodeEncodeError:
            pass
    raise EncodeError(f"{text!r} is not ISO 8859-1 text", where=what)


def encode_external(external: External) -> bytes:
    """One EXTERNAL; raises EncodeError."""
    return _write_external(external, "EXTERNAL")


def decode_external(data: bytes | bytearray | memoryview) -> External:
    """Decode one EXTERNAL (definite or indefinite lengths)."""
    return _read_external(ber.read_single(data, "EXTERNAL"), "EXTERNAL")


#   Association-information ::= SEQUENCE OF EXTERNAL   -- user-information [30] IMPLICIT
def _read_externals(tlv: Tlv, what: str) -> tuple[External, ...]:
    return tuple(
        _read_external(item, f"{what}[{index}]")
        for index, item in enumerate(ber.children(tlv, what))
    )


def _write_externals(tag: int, value: object, what: str) -> bytes:
    if not isinstance(value, tuple | list):
        raise EncodeError("expected a tuple of External", where=what)
    return ber.constructed(
        tag, [_write_external(item, f"{what}[{index}]") for index, item in enumerate(value)]
    )


_USER_INFORMATION = Member(
    context(30), "user-information", "user_information", Codec(_read_externals, _write_externals)
)


# --- the members shared by the APDUs --------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnostic:
    """``result-source-diagnostic [3] Associate-source-diagnostic`` of an AARE::

    Associate-source-diagnostic ::= CHOICE {
        service-user      [1] INTEGER {null(0), no-reason-given(1), ...} (0..14, ...),
        service-provider  [2] INTEGER {null(0), no-reason-given(1),
                                       no-common-acse-version(2)} (0..2, ...) }
    """

    source: Source
    """Which alternative: who gave the diagnostic."""
    value: int
    """:class:`UserDiagnostic` or :class:`ProviderDiagnostic`."""


_DIAGNOSTIC_TAGS = {context(1): Source.SERVICE_USER, context(2): Source.SERVICE_PROVIDER}
_DIAGNOSTIC_SOURCES = {source: tag for tag, source in _DIAGNOSTIC_TAGS.items()}


def _read_diagnostic(tlv: Tlv, what: str) -> Diagnostic:
    choice = ber.only_child(tlv, what)
    source = _DIAGNOSTIC_TAGS.get(choice.tag)
    if source is None:
        raise DecodeError(f"unexpected {ber.tag_name(choice.tag)}", where=what)
    where = f"{what}.{source.value}"
    value = ber.read_int(ber.expect(ber.only_child(choice, where), ber.INTEGER, where), where)
    return Diagnostic(source=source, value=value)


def _write_diagnostic(tag: int, value: object, what: str) -> bytes:
    if not isinstance(value, Diagnostic) or value.source not in _DIAGNOSTIC_SOURCES:
        raise EncodeError(f"{value!r} is not a Diagnostic", where=what)
    choice = EXPLICIT_INTEGER.write(_DIAGNOSTIC_SOURCES[value.source], value.value, what)
    return ber.tlv(tag, choice, constructed=True)


#   ABRT-source ::= INTEGER {service-user(0), service-provider(1)} (0..1, ...)
_ABORT_SOURCES = (Source.SERVICE_USER, Source.SERVICE_PROVIDER)


def _read_abort_source(tlv: Tlv, what: str) -> Source:
    return _ABORT_SOURCES[ber.read_bounded_int(tlv, what, 0, 1)]


def _write_abort_source(tag: int, value: object, what: str) -> bytes:
    if not isinstance(value, Source):
        raise EncodeError(f"{value!r} is not a Source", where=what)
    return IMPLICIT_INTEGER.write(tag, _ABORT_SOURCES.index(value), what)


def _write_graphic(tag: int, value: object, what: str) -> bytes:
    return ber.tlv(tag, _latin1(value, what))


_DIAGNOSTIC = Codec(_read_diagnostic, _write_diagnostic)
_ABORT_SOURCE = Codec(_read_abort_source, _write_abort_source)
_GRAPHIC = Codec(_read_latin1, _write_graphic)
_HIGHER_LEVEL = unsupported("the higher-level association functional unit is not supported")
_NEGOTIATION = unsupported("application context negotiation is not supported")


def _title_members(first: int, side: str, prefix: str) -> tuple[Member, ...]:
    """AP-title, AE-qualifier, AP- and AE-invocation-identifier at tags first..first+3."""
    return (
        Member(context(first), f"{side}-AP-title", f"{prefix}_ap_title", EXPLICIT_VALUE),
        Member(
            context(first + 1), f"{side}-AE-qualifier", f"{prefix}_ae_qualifier", EXPLICIT_VALUE
        ),
        Member(
            context(first + 2),
            f"{side}-AP-invocation-identifier",
            f"{prefix}_ap_invocation",
            EXPLICIT_INTEGER,
        ),
        Member(
            context(first + 3),
            f"{side}-AE-invocation-identifier",
            f"{prefix}_ae_invocation",
            EXPLICIT_INTEGER,
        ),
    )


# --- AARQ, AARE -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Aarq:
    """A-ASSOCIATE request (X.227 clause 9)::

        AARQ-apdu ::= [APPLICATION 0] IMPLICIT SEQUENCE {
            protocol-version [0] IMPLICIT BIT STRING {version1(0)} DEFAULT {version1},
            aSO-context-name [1] ASO-context-name,
            called-AP-title [2] AP-title OPTIONAL, called-AE-qualifier [3] AE-qualifier OPTIONAL,
            called-AP-invocation-identifier [4] ... OPTIONAL,
            called-AE-invocation-identifier [5] ... OPTIONAL,
            calling-AP-title [6] ..., calling-AE-qualifier [7] ...,
            calling-AP-invocation-identifier [8] ..., calling-AE-invocation-identifier [9] ...,
            sender-acse-requirements [10] IMPLICIT ACSE-requirements OPTIONAL,
            mechanism-name [11] IMPLICIT Mechanism-name OPTIONAL,
            calling-authentication-value [12] EXPLICIT Authentication-value OPTIONAL,
            implementation-information [29] IMPLICIT Implementation-data OPTIONAL,
            user-information [30] IMPLICIT Association-information OPTIONAL }

    Titles, qualifiers and the authentication value are the BER of the value inside the
    explicit tag (an AP-title is a CHOICE of Name, OBJECT IDENTIFIER, ...), kept as sent.
    """

    application_context: str
    """aSO-context-name: id-ac-mts-transfer 2.6.0.1.6 for P1."""
    protocol_version: int | None = None
    """version1 = 1; None: absent (the DEFAULT {version1})."""
    called_ap_title: bytes | None = None
    called_ae_qualifier: bytes | None = None
    called_ap_invocation: int | None = None
    called_ae_invocation: int | None = None
    calling_ap_title: bytes | None = None
    calling_ae_qualifier: bytes | None = None
    calling_ap_invocation: int | None = None
    calling_ae_invocation: int | None = None
    acse_requirements: int | None = None
    """sender-acse-requirements: authentication 1, aSO-context-negotiation 2, ..."""
    mechanism_name: str | None = None
    """The authentication mechanism's object identifier."""
    authentication_value: bytes | None = None
    """calling-authentication-value: the Authentication-value CHOICE's TLV."""
    implementation_information: str | None = None
    """GraphicString, read as ISO 8859-1."""
    user_information: tuple[External, ...] = ()
    """The RTORQ in P1 (indirect-reference 3)."""


_AARQ_MEMBERS = (
    Member(context(0), "protocol-version", "protocol_version", IMPLICIT_FLAGS),
    Member(context(1), "aSO-context-name", "application_context", EXPLICIT_OID, required=True),
    *_title_members(2, "called", "called"),
    *_title_members(6, "calling", "calling"),
    Member(context(10), "sender-acse-requirements", "acse_requirements", IMPLICIT_FLAGS),
    Member(context(11), "mechanism-name", "mechanism_name", IMPLICIT_OID),
    Member(context(12), "calling-authentication-value", "authentication_value", EXPLICIT_VALUE),
    Member(context(13), "aSO-context-name-list", "", _NEGOTIATION),
    Member(context(29), "implementation-information", "implementation_information", _GRAPHIC),
    Member(context(14), "p-context-definition-list", "", _HIGHER_LEVEL),
    Member(context(15), "called-asoi-tag", "", _HIGHER_LEVEL),
    Member(context(16), "calling-asoi-tag", "", _HIGHER_LEVEL),
    _USER_INFORMATION,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Aare:
    """A-ASSOCIATE response (X.227 clause 9)::

    AARE-apdu ::= [APPLICATION 1] IMPLICIT SEQUENCE {
        protocol-version [0] IMPLICIT BIT STRING {version1(0)} DEFAULT {version1},
        aSO-context-name [1] ASO-context-name,
        result [2] Associate-result,
        result-source-diagnostic [3] Associate-source-diagnostic,
        responding-AP-title [4] ..., responding-AE-qualifier [5] ...,
        responding-AP-invocation-identifier [6] ...,
        responding-AE-invocation-identifier [7] ...,
        responder-acse-requirements [8] IMPLICIT ACSE-requirements OPTIONAL,
        mechanism-name [9] IMPLICIT Mechanism-name OPTIONAL,
        responding-authentication-value [10] EXPLICIT Authentication-value OPTIONAL,
        implementation-information [29] IMPLICIT Implementation-data OPTIONAL,
        user-information [30] IMPLICIT Association-information OPTIONAL }
    """

    application_context: str
    """aSO-context-name (the one requested, or the responder's choice)."""
    result: int
    """:class:`AssociateResult`."""
    diagnostic: Diagnostic
    """result-source-diagnostic."""
    protocol_version: int | None = None
    """version1 = 1; None: absent (the DEFAULT {version1})."""
    responding_ap_title: bytes | None = None
    responding_ae_qualifier: bytes | None = None
    responding_ap_invocation: int | None = None
    responding_ae_invocation: int | None = None
    acse_requirements: int | None = None
    """responder-acse-requirements."""
    mechanism_name: str | None = None
    authentication_value: bytes | None = None
    """responding-authentication-value: the Authentication-value CHOICE's TLV."""
    implementation_information: str | None = None
    user_information: tuple[External, ...] = ()
    """The RTOAC or RTORJ in P1 (indirect-reference 3)."""


_AARE_MEMBERS = (
    Member(context(0), "protocol-version", "protocol_version", IMPLICIT_FLAGS),
    Member(context(1), "aSO-context-name", "application_context", EXPLICIT_OID, required=True),
    Member(context(2), "result", "result", EXPLICIT_INTEGER, required=True),
    Member(context(3), "result-source-diagnostic", "diagnostic", _DIAGNOSTIC, required=True),
    *_title_members(4, "responding", "responding"),
    Member(context(8), "responder-acse-requirements", "acse_requirements", IMPLICIT_FLAGS),
    Member(context(9), "mechanism-name", "mechanism_name", IMPLICIT_OID),
    Member(context(10), "responding-authentication-value", "authentication_value", EXPLICIT_VALUE),
    Member(context(11), "aSO-context-name-list", "", _NEGOTIATION),
    Member(context(29), "implementation-information", "implementation_information", _GRAPHIC),
    Member(context(12), "p-context-result-list", "", _HIGHER_LEVEL),
    Member(context(13), "called-asoi-tag", "", _HIGHER_LEVEL),
    Member(context(14), "calling-asoi-tag", "", _HIGHER_LEVEL),
    _USER_INFORMATION,
)


# --- RLRQ, RLRE, ABRT -----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Rlrq:
    """A-RELEASE request (X.227 clause 9)::

    RLRQ-apdu ::= [APPLICATION 2] IMPLICIT SEQUENCE {
        reason            [0] IMPLICIT Release-request-reason OPTIONAL,
        user-information  [30] IMPLICIT Association-information OPTIONAL }
    """

    reason: int | None = None
    """:class:`ReleaseRequestReason`; P1 sends normal (0)."""
    user_information: tuple[External, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Rlre:
    """A-RELEASE response (X.227 clause 9)::

    RLRE-apdu ::= [APPLICATION 3] IMPLICIT SEQUENCE {
        reason            [0] IMPLICIT Release-response-reason OPTIONAL,
        user-information  [30] IMPLICIT Association-information OPTIONAL }
    """

    reason: int | None = None
    """:class:`ReleaseResponseReason`; P1 sends normal (0)."""
    user_information: tuple[External, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Abrt:
    """A-ABORT (X.227 clause 9)::

    ABRT-apdu ::= [APPLICATION 4] IMPLICIT SEQUENCE {
        abort-source      [0] IMPLICIT ABRT-source,
        abort-diagnostic  [1] IMPLICIT ABRT-diagnostic OPTIONAL,
        user-information  [30] IMPLICIT Association-information OPTIONAL }
    """

    source: Source
    """abort-source."""
    diagnostic: int | None = None
    """abort-diagnostic (:class:`AbortDiagnostic`), not sent by the kernel."""
    user_information: tuple[External, ...] = ()
    """An RTAB in P1 (indirect-reference 3)."""


_RELEASE_MEMBERS = (
    Member(context(0), "reason", "reason", IMPLICIT_INTEGER),
    Member(context(13), "aso-qualifier", "", _HIGHER_LEVEL),
    Member(context(14), "asoi-identifier", "", _HIGHER_LEVEL),
    _USER_INFORMATION,
)
_ABRT_MEMBERS = (
    Member(context(0), "abort-source", "source", _ABORT_SOURCE, required=True),
    Member(context(1), "abort-diagnostic", "diagnostic", IMPLICIT_INTEGER),
    *_RELEASE_MEMBERS[1:],
)

AcseApdu: TypeAlias = Aarq | Aare | Rlrq | Rlre | Abrt
"""``ACSE-apdu ::= CHOICE { aarq, aare, rlrq, rlre, abrt, ... }``"""

# Each APDU: its [APPLICATION n] tag, its ASN.1 name and its member table.
_APDUS: dict[type[AcseApdu], tuple[int, str, tuple[Member, ...]]] = {
    Aarq: (application(0), "AARQ-apdu", _AARQ_MEMBERS),
    Aare: (application(1), "AARE-apdu", _AARE_MEMBERS),
    Rlrq: (application(2), "RLRQ-apdu", _RELEASE_MEMBERS),
    Rlre: (application(3), "RLRE-apdu", _RELEASE_MEMBERS),
    Abrt: (application(4), "ABRT-apdu", _ABRT_MEMBERS),
}
_BY_TAG = {tag: (model, name, members) for model, (tag, name, members) in _APDUS.items()}
_HIGHER_LEVEL_APDUS = {application(5): "A-DT", application(6): "ACRQ", application(7): "ACRP"}


def encode_acse(apdu: AcseApdu) -> bytes:
    """The BER of an ACSE APDU; raises :class:`EncodeError`."""
    entry = _APDUS.get(type(apdu))
    if entry is None:
        raise EncodeError(f"{apdu!r} is not an ACSE APDU", where="ACSE-apdu")
    tag, name, members = entry
    return encode_members(tag, apdu, members, name)


def decode_acse(data: bytes | bytearray | memoryview) -> AcseApdu:
    """Decode an ACSE APDU (definite or indefinite lengths); raises only DecodeError."""
    tlv = ber.read_single(data, "ACSE-apdu")
    entry = _BY_TAG.get(tlv.tag)
    if entry is None:
        other = _HIGHER_LEVEL_APDUS.get(tlv.tag)
        why = f"{other} (higher-level association) is not supported" if other else "unknown APDU"
        raise DecodeError(f"{ber.tag_name(tlv.tag)}: {why}", where="ACSE-apdu")
    model, name, members = entry
    result: AcseApdu = decode_members(tlv, model, members, name)
    return result
