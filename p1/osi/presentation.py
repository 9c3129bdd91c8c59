"""Presentation PPDUs, normal mode, kernel functional unit (X.226 | ISO/IEC 8823-1 clause 8).

A P1 association (X.419 clause 7) uses the presentation layer to name three presentation
contexts in its CP (ACSE 1, the RTSE + MTA-bind abstract syntax 3, the MTS-APDU 5, all in
BER) and to label every presentation data value (PDV) with its context.  This module is
the codec of the PPDUs that carry them: CP, CPA, CPR, ARU, ARP and the User-data of P-DATA,
written by hand on :mod:`p1.ber` so that error messages name the field and a PDV's value
is copied once.  The X.410-1984 mode (no ACSE, an RTORQ inside the CP) is recognised and
refused.  :func:`negotiate` is the responder's decision on the proposed contexts; the
state machine that uses it lives in :mod:`p1.association.connection`.

Public API::

    BER, ACSE_AS, MTA_RTSE_AS, MTSE_AS               object identifiers (dotted text)
    ACSE_CONTEXT = 1, RTSE_CONTEXT = 3, MTSE_CONTEXT = 5
    ContextDefinition(identifier, abstract_syntax, transfer_syntaxes), P1_CONTEXTS
    ContextResult(result, transfer_syntax, provider_reason), Result, ContextReason
    negotiate(proposed, supported) -> tuple[ContextResult, ...]
    Encoding, Pdv(context_id, value, *, encoding, transfer_syntax)
    encode_user_data(pdvs) / decode_user_data(data) -> tuple[Pdv, ...]
    encode_pdv(context_id, value) -> bytes           one PDV, one copy of value
    pdv_header(context_id, value_size) -> bytes      the same without the value (no copy)
    decode_pdv_view(data) -> (context_id, memoryview) | None    one PDV, value not copied
    read_definite(view, offset, end) -> (octet, body, end) | None    the quick TLV reader
    ConnectPpdu   encode_cp / decode_cp
    AcceptPpdu    encode_cpa / decode_cpa
    RefusePpdu    encode_cpr / decode_cpr            ProviderReason
    AruPpdu       encode_aru / decode_aru
    ArpPpdu       encode_arp / decode_arp            AbortReason, ARP_PROTOCOL_ERROR
    decode_abort(data) -> AruPpdu | ArpPpdu          the user data of S-U-ABORT
    read_data_value / encode_data_value              the [0] / [1] / [2] encoding CHOICE
    read_flags / flags_contents                      named-bit BIT STRINGs as ints

Member tables (the SET / SEQUENCE codec :mod:`p1.osi.acse` and :mod:`p1.osi.rtse` share)::

    Codec(read, write), Member(tag, name, attribute, codec, required, default)
    decode_members(tlv, model, members, what) / encode_members(tag, value, members, what)
    IMPLICIT_INTEGER, EXPLICIT_INTEGER, IMPLICIT_FLAGS, EXPLICIT_FLAGS, IMPLICIT_OCTETS,
    IMPLICIT_OID, EXPLICIT_OID, EXPLICIT_VALUE, IGNORED
    explicit(codec, inner_tag), bounded(low, high), unsupported(why)

Every decoder raises only :class:`p1.errors.DecodeError`; encoders raise
:class:`p1.errors.EncodeError` for values they cannot encode.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Final, NamedTuple, TypeAlias, TypeVar

from p1 import ber
from p1.ber import Tlv, application, context
from p1.errors import DecodeError, EncodeError

__all__ = [
    "ACSE_AS",
    "ACSE_CONTEXT",
    "ARP_PROTOCOL_ERROR",
    "BER",
    "EXPLICIT_FLAGS",
    "EXPLICIT_INTEGER",
    "EXPLICIT_OID",
    "EXPLICIT_VALUE",
    "IGNORED",
    "IMPLICIT_FLAGS",
    "IMPLICIT_INTEGER",
    "IMPLICIT_OCTETS",
    "IMPLICIT_OID",
    "MTA_RTSE_AS",
    "MTSE_AS",
    "MTSE_CONTEXT",
    "P1_CONTEXTS",
    "RTSE_CONTEXT",
    "AbortReason",
    "AcceptPpdu",
    "ArpPpdu",
    "AruPpdu",
    "Codec",
    "ConnectPpdu",
    "ContextDefinition",
    "ContextReason",
    "ContextResult",
    "Encoding",
    "Member",
    "Pdv",
    "ProviderReason",
    "RefusePpdu",
    "Result",
    "bounded",
    "decode_abort",
    "decode_arp",
    "decode_aru",
    "decode_cp",
    "decode_cpa",
    "decode_cpr",
    "decode_members",
    "decode_pdv_view",
    "decode_user_data",
    "encode_arp",
    "encode_aru",
    "encode_cp",
    "encode_cpa",
    "encode_cpr",
    "encode_data_value",
    "encode_members",
    "encode_pdv",
    "encode_user_data",
    "explicit",
    "flags_contents",
    "negotiate",
    "pdv_header",
    "read_data_value",
    "read_definite",
    "read_flags",
    "unsupported",
]

_T = TypeVar("_T")
_Chunk: TypeAlias = bytes | memoryview
"""A piece of an encoding, joined once at the end (a value is not copied before that)."""

# --- object identifiers and the contexts of P1 ------------------------------------------

BER: Final = "2.1.1"
"""The basic encoding rules {joint-iso-itu-t asn1(1) basic-encoding(1)}: P1's transfer syntax."""
ACSE_AS: Final = "2.2.1.0.1"
"""acse-as-id, the abstract syntax of the ACSE APDUs (X.227)."""
MTA_RTSE_AS: Final = "2.6.0.2.12"
"""id-as-mta-rtse: the RTSE APDUs with the MTA-bind values (X.419 A.1)."""
MTSE_AS: Final = "2.6.0.2.7"
"""id-as-mtse: the MTS-APDU (X.419 A.1)."""
ACSE_CONTEXT: Final = 1
"""The presentation context id of ACSE in a P1 association."""
RTSE_CONTEXT: Final = 3
"""The presentation context id of id-as-mta-rtse in a P1 association."""
MTSE_CONTEXT: Final = 5
"""The presentation context id of id-as-mtse (2.6.0.2.7) in a P1 association (X.419)."""

_NORMAL_MODE = 1
_X410_MODE = 0
_MAX_FLAG_BITS = 64
"""The named-bit strings of X.226 and X.227 have at most 13 bits; more is not a flag set."""


class Result(enum.IntEnum):
    """``Result ::= INTEGER {acceptance(0), user-rejection(1), provider-rejection(2)}``"""

    ACCEPTANCE = 0
    USER_REJECTION = 1
    PROVIDER_REJECTION = 2


class ContextReason(enum.IntEnum):
    """Why the provider rejected one context (Result-list ``provider-reason``, X.226 8.2)."""

    REASON_NOT_SPECIFIED = 0
    ABSTRACT_SYNTAX_NOT_SUPPORTED = 1
    PROPOSED_TRANSFER_SYNTAXES_NOT_SUPPORTED = 2
    LOCAL_LIMIT_ON_DCS_EXCEEDED = 3


class ProviderReason(enum.IntEnum):
    """``Provider-reason``: why the presentation provider refused a connection (CPR)."""

    REASON_NOT_SPECIFIED = 0
    TEMPORARY_CONGESTION = 1
    LOCAL_LIMIT_EXCEEDED = 2
    CALLED_PRESENTATION_ADDRESS_UNKNOWN = 3
    PROTOCOL_VERSION_NOT_SUPPORTED = 4
    DEFAULT_CONTEXT_NOT_SUPPORTED = 5
    USER_DATA_NOT_READABLE = 6
    NO_PSAP_AVAILABLE = 7


class AbortReason(enum.IntEnum):
    """``Abort-reason``: why the presentation provider aborted (ARP)."""

    REASON_NOT_SPECIFIED = 0
    UNRECOGNIZED_PPDU = 1
    UNEXPECTED_PPDU = 2
    UNEXPECTED_SESSION_SERVICE_PRIMITIVE = 3
    UNRECOGNIZED_PPDU_PARAMETER = 4
    UNEXPECTED_PPDU_PARAMETER = 5
    INVALID_PPDU_PARAMETER_VALUE = 6


class Encoding(enum.Enum):
    """How a presentation data value (or an EXTERNAL) carries its value (X.226 8.4.2)."""

    SINGLE_ASN1_TYPE = "single-ASN1-type"
    """``[0] ABSTRACT-SYNTAX.&Type``: the value's own TLV (what P1 sends)."""
    OCTET_ALIGNED = "octet-aligned"
    """``[1] IMPLICIT OCTET STRING``: the value's encoding as octets."""
    ARBITRARY = "arbitrary"
    """``[2] IMPLICIT BIT STRING``: the value's encoding as bits (whole octets here)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextDefinition:
    """One presentation context the initiator proposes (X.226 8.2, CP)::

    Context-list ::= SEQUENCE OF SEQUENCE {
        presentation-context-identifier  Presentation-context-identifier,
        abstract-syntax-name             Abstract-syntax-name,
        transfer-syntax-name-list        SEQUENCE OF Transfer-syntax-name }
    """

    identifier: int
    """``Presentation-context-identifier ::= INTEGER (1..127, ..., 128..MAX)``, odd in a CP."""
    abstract_syntax: str
    """The abstract syntax's object identifier (dotted text)."""
    transfer_syntaxes: tuple[str, ...] = (BER,)
    """The transfer syntaxes offered, the preferred first."""


P1_CONTEXTS: Final = (
    ContextDefinition(identifier=ACSE_CONTEXT, abstract_syntax=ACSE_AS),
    ContextDefinition(identifier=RTSE_CONTEXT, abstract_syntax=MTA_RTSE_AS),
    ContextDefinition(identifier=MTSE_CONTEXT, abstract_syntax=MTSE_AS),
)
"""The contexts of a 1988 P1 association, as real MTAs propose them (X.419 clause 7)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextResult:
    """The responder's answer for one proposed context, in the order proposed (X.226 8.2)::

    Result-list ::= SEQUENCE OF SEQUENCE {
        result                [0] IMPLICIT Result,
        transfer-syntax-name  [1] IMPLICIT Transfer-syntax-name OPTIONAL,
        provider-reason       [2] IMPLICIT INTEGER {reason-not-specified(0),
            abstract-syntax-not-supported(1), proposed-transfer-syntaxes-not-supported(2),
            local-limit-on-DCS-exceeded(3)} OPTIONAL }
    """

    result: int
    """:class:`Result`."""
    transfer_syntax: str | None = None
    """The transfer syntax chosen (with acceptance)."""
    provider_reason: int | None = None
    """:class:`ContextReason` (with provider-rejection)."""


@dataclass(frozen=True, slots=True)
class Pdv:
    """One presentation data value and its context (X.226 8.4.2)::

        PDV-list ::= SEQUENCE {
            transfer-syntax-name             Transfer-syntax-name OPTIONAL,
            presentation-context-identifier  Presentation-context-identifier,
            presentation-data-values CHOICE {
                single-ASN1-type  [0] ABSTRACT-SYNTAX.&Type,
                octet-aligned     [1] IMPLICIT OCTET STRING,
                arbitrary         [2] IMPLICIT BIT STRING } }

    ``Pdv(context_id, value)``: the first two fields may be positional (one is made per
    P-DATA on the transfer path); the others are keyword-only.
    """

    context_id: int
    """The presentation context the value belongs to."""
    value: bytes
    """single-ASN1-type: the value's TLV as received; otherwise the octets (or bits)."""
    _: KW_ONLY
    encoding: Encoding = Encoding.SINGLE_ASN1_TYPE
    """Which alternative of presentation-data-values carried it."""
    transfer_syntax: str | None = None
    """transfer-syntax-name, sent only when the context offered several."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectPpdu:
    """The CP PPDU in normal mode (X.226 8.2, P-CONNECT request)::

        CP-type ::= SET {
            mode-selector           [0] IMPLICIT Mode-selector,   -- normal-mode(1)
            normal-mode-parameters  [2] IMPLICIT SEQUENCE {
                protocol-version [0] IMPLICIT Protocol-version DEFAULT {version-1},
                calling-presentation-selector [1] IMPLICIT Calling-presentation-selector OPTIONAL,
                called-presentation-selector [2] IMPLICIT Called-presentation-selector OPTIONAL,
                presentation-context-definition-list [4] IMPLICIT Context-list OPTIONAL,
                presentation-requirements [8] IMPLICIT Presentation-requirements OPTIONAL,
                user-session-requirements [9] IMPLICIT User-session-requirements OPTIONAL,
                protocol-options [11] Protocol-options DEFAULT {},
                user-data User-data OPTIONAL, ... } }

    Bit strings are ints: bit n (the n-th named bit) is ``1 << n``, so user session
    requirements use the X.225 values (half-duplex 0x0001 ... exceptions 0x0200).  None
    is an absent member; an empty tuple an absent list.
    """

    contexts: tuple[ContextDefinition, ...] = ()
    """presentation-context-definition-list."""
    calling_selector: bytes | None = None
    """calling-presentation-selector."""
    called_selector: bytes | None = None
    """called-presentation-selector."""
    protocol_version: int | None = None
    """protocol-version (version-1 = 1); None: absent, the DEFAULT {version-1}."""
    presentation_requirements: int | None = None
    """context-management 1, restoration 2; the kernel asks for none."""
    user_session_requirements: int | None = None
    """The session functional units asked for, X.225 bit values."""
    protocol_options: int | None = None
    """nominated-context 1, short-encoding 2, packed-encoding-rules 4."""
    user_data: tuple[Pdv, ...] = ()
    """user-data as fully-encoded-data (the AARQ in the ACSE context)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceptPpdu:
    """The CPA PPDU in normal mode (X.226 8.2, P-CONNECT accept)::

    CPA-PPDU ::= SET {
        mode-selector           [0] IMPLICIT Mode-selector,   -- normal-mode(1)
        normal-mode-parameters  [2] IMPLICIT SEQUENCE {
            protocol-version [0] IMPLICIT Protocol-version DEFAULT {version-1},
            responding-presentation-selector [3] IMPLICIT ... OPTIONAL,
            presentation-context-definition-result-list [5] IMPLICIT Result-list OPTIONAL,
            presentation-requirements [8] IMPLICIT Presentation-requirements OPTIONAL,
            user-session-requirements [9] IMPLICIT User-session-requirements OPTIONAL,
            protocol-options [11] Protocol-options DEFAULT {},
            user-data User-data OPTIONAL } }
    """

    results: tuple[ContextResult, ...] = ()
    """presentation-context-definition-result-list, one per proposed context."""
    responding_selector: bytes | None = None
    """responding-presentation-selector."""
    protocol_version: int | None = None
    """protocol-version; None: absent (version-1)."""
    presentation_requirements: int | None = None
    """As in :class:`ConnectPpdu`."""
    user_session_requirements: int | None = None
    """As in :class:`ConnectPpdu`."""
    protocol_options: int | None = None
    """As in :class:`ConnectPpdu`."""
    user_data: tuple[Pdv, ...] = ()
    """user-data (the AARE in the ACSE context)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RefusePpdu:
    """The CPR PPDU in normal mode (X.226 8.2, P-CONNECT reject)::

    CPR-PPDU ::= CHOICE { ..., normal-mode-parameters SEQUENCE {
        protocol-version [0] IMPLICIT Protocol-version DEFAULT {version-1},
        responding-presentation-selector [3] IMPLICIT ... OPTIONAL,
        presentation-context-definition-result-list [5] IMPLICIT Result-list OPTIONAL,
        default-context-result [7] IMPLICIT Default-context-result OPTIONAL,
        provider-reason [10] IMPLICIT Provider-reason OPTIONAL,
        user-data User-data OPTIONAL } }
    """

    results: tuple[ContextResult, ...] = ()
    """presentation-context-definition-result-list."""
    responding_selector: bytes | None = None
    """responding-presentation-selector."""
    protocol_version: int | None = None
    """protocol-version; None: absent (version-1)."""
    default_context_result: int | None = None
    """default-context-result (:class:`Result`)."""
    provider_reason: int | None = None
    """:class:`ProviderReason` when the provider refused; None when the user did."""
    user_data: tuple[Pdv, ...] = ()
    """user-data (the AARE in the ACSE context)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AruPpdu:
    """The ARU PPDU in normal mode (X.226 8.3, P-U-ABORT)::

    ARU-PPDU ::= CHOICE { ..., normal-mode-parameters [0] IMPLICIT SEQUENCE {
        presentation-context-identifier-list [0] IMPLICIT SEQUENCE OF SEQUENCE {
            presentation-context-identifier  Presentation-context-identifier,
            transfer-syntax-name             Transfer-syntax-name } OPTIONAL,
        user-data User-data OPTIONAL } }
    """

    contexts: tuple[tuple[int, str], ...] = ()
    """presentation-context-identifier-list: (context id, transfer syntax) pairs."""
    user_data: tuple[Pdv, ...] = ()
    """user-data (the ABRT in the ACSE context)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ArpPpdu:
    """The ARP PPDU (X.226 8.3, P-P-ABORT)::

    ARP-PPDU ::= SEQUENCE {
        provider-reason   [0] IMPLICIT Abort-reason OPTIONAL,
        event-identifier  [1] IMPLICIT Event-identifier OPTIONAL }
    """

    provider_reason: int | None = None
    """:class:`AbortReason`."""
    event_identifier: int | None = None
    """The PPDU or session event that caused it (cp-PPDU 0, cpa-PPDU 1, ...)."""


ARP_PROTOCOL_ERROR: Final = ArpPpdu(provider_reason=AbortReason.INVALID_PPDU_PARAMETER_VALUE)
"""The provider abort for a PPDU whose parameters (user data included) could not be used."""


# --- member tables --------------------------------------------------------------------
#
# The SETs and SEQUENCEs of X.226, X.227 and X.228 are tagged members with optional or
# DEFAULT values: one table per type names each member's tag, its ASN.1 name (for error
# messages) and the model attribute, and one pair of functions walks it.  Members are
# matched by tag, so a SET in any order is read; they are written in table order.


class Codec(NamedTuple):
    """How a member's value is read from its TLV and written under its tag."""

    read: Callable[[Tlv, str], object]
    write: Callable[[int, object, str], bytes]


class Member(NamedTuple):
    """One member of a SET or SEQUENCE and the model attribute(s) that hold it."""

    tag: int
    name: str
    attribute: str | tuple[str, ...]
    """The attribute; several when the codec reads a tuple; "" when the model keeps none."""
    codec: Codec
    required: bool = False
    default: object = None
    """A value that is not written (the DEFAULT, when it is left out on the wire)."""


def decode_members(tlv: Tlv, model: type[_T], members: Sequence[Member], what: str) -> _T:
    """Read the members of a SET or SEQUENCE into a ``model`` instance."""
    found = ber.split_set(tlv, {member.tag: member.name for member in members}, what)
    values: dict[str, object] = {}
    for member in members:
        item = found.get(member.name)
        if item is None:
            if member.required:
                raise DecodeError(f"missing {member.name}", where=what)
            continue
        value = member.codec.read(item, f"{what}.{member.name}")
        if isinstance(member.attribute, tuple):
            assert isinstance(value, tuple)
            values.update(zip(member.attribute, value, strict=True))
        elif member.attribute:
            values[member.attribute] = value
    return model(**values)


def encode_members(tag: int, value: object, members: Sequence[Member], what: str) -> bytes:
    """Write the members of ``value`` that are present, in table order, under ``tag``."""
    parts = []
    for member in members:
        attribute = member.attribute
        if not attribute:
            continue
        if isinstance(attribute, tuple):
            field: object = tuple(getattr(value, name) for name in attribute)
        else:
            field = getattr(value, attribute)
        if not member.required and (field is None or field == () or field == member.default):
            continue
        parts.append(member.codec.write(member.tag, field, f"{what}.{member.name}"))
    return ber.constructed(tag, parts)


def _integer(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise EncodeError(f"{value!r} is not an integer", where=what)
    return value


def _octets(value: object, what: str) -> bytes | memoryview:
    if not isinstance(value, bytes | memoryview):
        raise EncodeError(f"{value!r} is not bytes", where=what)
    return value


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise EncodeError(f"{value!r} is not text", where=what)
    return value


def _items(value: object, kind: type[_T], what: str) -> list[_T]:
    if not isinstance(value, tuple | list) or not all(isinstance(v, kind) for v in value):
        raise EncodeError(f"expected a tuple of {kind.__name__}", where=what)
    return list(value)


def _write_integer(tag: int, value: object, what: str) -> bytes:
    return ber.tlv(tag, ber.int_contents(_integer(value, what)))


def _write_octets(tag: int, value: object, what: str) -> bytes:
    return ber.tlv(tag, _octets(value, what))


def _oid_tlv(value: object, what: str) -> bytes:
    return ber.tlv(ber.OBJECT_IDENTIFIER, ber.oid_contents(_text(value, what), what))


def _write_oid(tag: int, value: object, what: str) -> bytes:
    return ber.tlv(tag, ber.oid_contents(_text(value, what), what))


def _read_value(tlv: Tlv, what: str) -> bytes:
    return ber.only_child(tlv, what).raw()


def _write_value(tag: int, value: object, what: str) -> bytes:
    data = _octets(value, what)
    ber.check_single_tlv(data, what)
    return ber.tlv(tag, data, constructed=True)


def read_flags(tlv: Tlv, what: str) -> int:
    """A named-bit BIT STRING as an int: named bit n is ``1 << n``."""
    octets, length = ber.read_bits(tlv, what)
    if length > _MAX_FLAG_BITS:
        raise DecodeError(f"{length} bits, at most {_MAX_FLAG_BITS} expected", where=what)
    return sum(1 << number for number in ber.bits_to_numbers(octets, length))


def flags_contents(value: int, what: str) -> bytes:
    """BIT STRING contents of named bits ``value``, trailing zero bits left out."""
    if _integer(value, what) < 0:
        raise EncodeError(f"{value} is not a set of named bits", where=what)
    length = value.bit_length()
    numbers = [number for number in range(length) if value >> number & 1]
    return ber.bits_contents(ber.numbers_to_bits(numbers, length), length)


def _write_flags(tag: int, value: object, what: str) -> bytes:
    return ber.tlv(tag, flags_contents(_integer(value, what), what))


def explicit(codec: Codec, inner: int) -> Codec:
    """``[n] EXPLICIT`` around a value that ``codec`` reads under the tag ``inner``."""

    def read(tlv: Tlv, what: str) -> object:
        return codec.read(ber.expect(ber.only_child(tlv, what), inner, what), what)

    def write(tag: int, value: object, what: str) -> bytes:
        return ber.tlv(tag, codec.write(inner, value, what), constructed=True)

    return Codec(read, write)


def bounded(low: int, high: int) -> Codec:
    """``[n] IMPLICIT INTEGER`` that must lie in ``low..high``."""

    def read(tlv: Tlv, what: str) -> object:
        return ber.read_bounded_int(tlv, what, low, high)

    def write(tag: int, value: object, what: str) -> bytes:
        return ber.tlv(tag, ber.int_contents(ber.check_int(_integer(value, what), what, low, high)))

    return Codec(read, write)


def unsupported(why: str) -> Codec:
    """A member this implementation refuses to read (a functional unit it lacks)."""

    def read(tlv: Tlv, what: str) -> object:
        raise DecodeError(why, where=what)

    def write(tag: int, value: object, what: str) -> bytes:
        raise EncodeError(why, where=what)

    return Codec(read, write)


IMPLICIT_INTEGER: Final = Codec(ber.read_int, _write_integer)
"""``[n] IMPLICIT INTEGER`` (or ENUMERATED)."""
EXPLICIT_INTEGER: Final = explicit(IMPLICIT_INTEGER, ber.INTEGER)
"""``[n] INTEGER`` in a module with explicit tags."""
IMPLICIT_FLAGS: Final = Codec(read_flags, _write_flags)
"""``[n] IMPLICIT BIT STRING {named bits}`` as an int."""
EXPLICIT_FLAGS: Final = explicit(IMPLICIT_FLAGS, ber.BIT_STRING)
"""``[n] BIT STRING {named bits}`` with an explicit tag."""
IMPLICIT_OCTETS: Final = Codec(ber.read_octets, _write_octets)
"""``[n] IMPLICIT OCTET STRING`` (constructed accepted)."""
IMPLICIT_OID: Final = Codec(ber.read_oid, _write_oid)
"""``[n] IMPLICIT OBJECT IDENTIFIER``."""
EXPLICIT_OID: Final = explicit(IMPLICIT_OID, ber.OBJECT_IDENTIFIER)
"""``[n] OBJECT IDENTIFIER`` with an explicit tag."""
EXPLICIT_VALUE: Final = Codec(_read_value, _write_value)
"""``[n] EXPLICIT`` ANY or open type: the inner value's TLV, kept as received."""
IGNORED: Final = Codec(lambda tlv, what: None, unsupported("not written").write)
"""A member read and dropped (an empty extension container)."""


# --- presentation data values ---------------------------------------------------------

_SIMPLY_ENCODED = application(0)
_FULLY_ENCODED = application(1)
_FULLY_ENCODED_OCTET = 0x61
_SEQUENCE_OCTET = 0x30
_INTEGER_OCTET = 0x02
_ENCODING_OCTETS = {
    Encoding.SINGLE_ASN1_TYPE: 0xA0,
    Encoding.OCTET_ALIGNED: 0x81,
    Encoding.ARBITRARY: 0x82,
}


def read_data_value(tlv: Tlv, what: str) -> tuple[Encoding, bytes]:
    """The encoding CHOICE of a PDV-list or an EXTERNAL; the value is copied once."""
    tag = tlv.tag
    if tag == context(0):
        inner = ber.only_child(tlv, f"{what}.single-ASN1-type")
        return Encoding.SINGLE_ASN1_TYPE, bytes(inner.raw_view())
    if tag == context(1):
        return Encoding.OCTET_ALIGNED, ber.read_octets(tlv, f"{what}.octet-aligned")
    if tag == context(2):
        octets, length = ber.read_bits(tlv, f"{what}.arbitrary")
        if length % 8:
            # BER, the transfer syntax of every context here, produces whole octets.
            raise DecodeError(f"{length} bits is not whole octets", where=f"{what}.arbitrary")
        return Encoding.ARBITRARY, octets
    raise DecodeError(f"unknown encoding {ber.tag_name(tag)}", where=what)


def _data_value_chunks(encoding: Encoding, value: _Chunk, what: str) -> list[_Chunk]:
    octet = _ENCODING_OCTETS.get(encoding)
    if octet is None:
        raise EncodeError(f"unknown encoding {encoding!r}", where=what)
    value = _octets(value, what)
    if encoding is Encoding.SINGLE_ASN1_TYPE:
        ber.check_single_tlv(value, f"{what}.single-ASN1-type")
    elif encoding is Encoding.ARBITRARY:
        return [ber.header(octet, len(value) + 1), b"\0", value]  # no unused bits
    return [ber.header(octet, len(value)), value]


def encode_data_value(encoding: Encoding, value: bytes | memoryview, what: str) -> bytes:
    """The encoding CHOICE as a TLV: ``[0] value``, ``[1] octets`` or ``[2] bits``."""
    return b"".join(_data_value_chunks(encoding, value, what))


def _wrapped(octet: int, chunks: list[_Chunk]) -> list[_Chunk]:
    return [ber.header(octet, sum(map(len, chunks))), *chunks]


def _context_id(value: object, what: str) -> int:
    identifier = _integer(value, what)
    if identifier < 1:
        raise EncodeError(f"presentation context identifier {identifier} is not positive", what)
    return identifier


def _read_context_id(tlv: Tlv, what: str) -> int:
    identifier = ber.read_int(ber.expect(tlv, ber.INTEGER, what), what)
    if identifier < 1:
        raise DecodeError(f"presentation context identifier {identifier}", where=what)
    return identifier


#   PDV-list ::= SEQUENCE { transfer-syntax-name Transfer-syntax-name OPTIONAL,
#       presentation-context-identifier Presentation-context-identifier,
#       presentation-data-values CHOICE { single-ASN1-type [0] ..., octet-aligned [1] ...,
#           arbitrary [2] ... } }
def _pdv_chunks(
    context_id: int, value: _Chunk, encoding: Encoding, syntax: str | None, what: str
) -> list[_Chunk]:
    parts: list[_Chunk] = []
    if syntax is not None:
        parts.append(_oid_tlv(syntax, f"{what}.transfer-syntax-name"))
    identifier = _context_id(context_id, f"{what}.presentation-context-identifier")
    parts.append(ber.tlv(ber.INTEGER, ber.int_contents(identifier)))
    parts += _data_value_chunks(encoding, value, f"{what}.presentation-data-values")
    return _wrapped(_SEQUENCE_OCTET, parts)


def _read_pdv(tlv: Tlv, what: str) -> Pdv:
    items = ber.children(ber.expect(tlv, ber.SEQUENCE, what), what)
    syntax = None
    if len(items) == 3 and items[0].tag == ber.OBJECT_IDENTIFIER:
        syntax = ber.read_oid(items[0], f"{what}.transfer-syntax-name")
        items = items[1:]
    if len(items) != 2:
        raise DecodeError("expected a context identifier and a value", where=what)
    identifier = _read_context_id(items[0], f"{what}.presentation-context-identifier")
    encoding, value = read_data_value(items[1], f"{what}.presentation-data-values")
    return Pdv(identifier, value, encoding=encoding, transfer_syntax=syntax)


#   User-data ::= CHOICE { simply-encoded-data [APPLICATION 0] IMPLICIT OCTET STRING,
#       fully-encoded-data [APPLICATION 1] IMPLICIT SEQUENCE SIZE (1, ..., 2..MAX) OF PDV-list }
def _user_data_chunks(pdvs: object, what: str) -> list[_Chunk]:
    where = f"{what}.fully-encoded-data"
    body: list[_Chunk] = []
    for index, pdv in enumerate(_items(pdvs, Pdv, where)):
        item = f"{where}[{index}]"
        body += _pdv_chunks(pdv.context_id, pdv.value, pdv.encoding, pdv.transfer_syntax, item)
    if not body:
        raise EncodeError("fully-encoded-data needs a presentation data value", where=where)
    return _wrapped(_FULLY_ENCODED_OCTET, body)


def _read_user_data(tlv: Tlv, what: str) -> tuple[Pdv, ...]:
    if tlv.tag == _SIMPLY_ENCODED:
        # Only for a connection with no presentation context (X.226 8.4.1); P1 defines three.
        raise DecodeError("simply-encoded-data is not used with contexts", where=what)
    ber.expect(tlv, _FULLY_ENCODED, what)
    where = f"{what}.fully-encoded-data"
    lists = ber.children(tlv, where)
    if not lists:
        raise DecodeError("no PDV-list", where=where)
    return tuple(_read_pdv(item, f"{where}[{index}]") for index, item in enumerate(lists))


def encode_user_data(pdvs: Sequence[Pdv]) -> bytes:
    """User-data as fully-encoded-data (P-DATA and the PPDUs' user-data); raises EncodeError."""
    return b"".join(_user_data_chunks(tuple(pdvs), "User-data"))


def decode_user_data(data: bytes | bytearray | memoryview) -> tuple[Pdv, ...]:
    """The PDVs of a User-data value; each value is copied once from ``data``."""
    return _read_user_data(ber.read_single(data, "User-data"), "User-data")


def encode_pdv(context_id: int, value: bytes | memoryview) -> bytes:
    """User-data holding one single-ASN1-type PDV: ``61 L 30 L 02 01 id a0 L value``.

    The transfer path: ``value`` (one TLV, e.g. an RTTR of a megabyte) is copied once.
    """
    where = "User-data.fully-encoded-data"
    pdv = _pdv_chunks(context_id, value, Encoding.SINGLE_ASN1_TYPE, None, f"{where}[0]")
    return b"".join(_wrapped(_FULLY_ENCODED_OCTET, pdv))


def pdv_header(context_id: int, value_size: int) -> bytes:
    """What :func:`encode_pdv` puts before a value of ``value_size`` octets: the transfer
    path sends the two apart, so the value is not copied here."""
    what = "User-data.fully-encoded-data[0]"
    identifier = _context_id(context_id, f"{what}.presentation-context-identifier")
    parts = [ber.tlv(ber.INTEGER, ber.int_contents(identifier)), ber.header(0xA0, value_size)]
    pdv_size = sum(map(len, parts)) + value_size
    parts.insert(0, ber.header(_SEQUENCE_OCTET, pdv_size))
    parts.insert(0, ber.header(_FULLY_ENCODED_OCTET, len(parts[0]) + pdv_size))
    return b"".join(parts)


def read_definite(view: memoryview, offset: int, end: int) -> tuple[int, int, int] | None:
    """(identifier octet, contents start, contents end) of the TLV at ``offset`` when it has
    a low tag number and a definite length and ends by ``end``; None for anything else.

    The quick reader of the transfer path, where each value is of a known shape: a caller
    that gets None hands the value to the full decoder, which says what is wrong with it.
    """
    if offset >= min(end, len(view)) or view[offset] & 0x1F == 0x1F:
        return None  # (a tag number in the long form: the general path's)
    try:
        octet, body, length = ber.read_header(view, offset, min(end, len(view)))
    except DecodeError:
        return None
    if length is None or body + length > end:
        return None
    return octet, body, body + length


def decode_pdv_view(data: bytes | memoryview) -> tuple[int, memoryview] | None:
    """The context and value of User-data holding one single-ASN1-type PDV with definite
    lengths (P-DATA as RTSE sends it), the value a view of ``data`` (not copied); None for
    any other User-data, which :func:`decode_user_data` reads (or refuses).

    ``61 L { 30 L { 02 01 id  a0 L { value } } }``, every value ending where ``data`` ends.
    """
    view = ber.as_view(data)
    end = len(view)
    head = bytes(view[:_PDV_HEAD])  # the headers, read from a few bytes (quicker than a view)
    offset = 0
    context_id = 0
    for octet in _PDV_OCTETS:  # (read_definite inline: this runs for every P-DATA)
        if offset + 3 > len(head) or head[offset] != octet:
            return None
        if octet == _INTEGER_OCTET:  # a context identifier of one octet
            context_id = head[offset + 2] if head[offset + 1] == 1 else 0
            if not 0 < context_id < 0x80:
                return None
            offset += 3
            continue
        length = head[offset + 1]
        offset += 2
        if length & 0x80:
            count = length & 0x7F
            if not 0 < count <= 4:
                return None
            length = int.from_bytes(head[offset : offset + count], "big")
            offset += count
        if offset + length != end:
            return None
    inner = read_definite(view, offset, end)
    if inner is None or inner[2] != end:
        return None
    return context_id, view[offset:]


_PDV_HEAD = 3 * 6 + 3  # three headers of at most 6 octets (61, 30, a0), and 02 01 id
# The identifier octets of User-data, PDV-list, context identifier and single-ASN1-type.
_PDV_OCTETS = (_FULLY_ENCODED_OCTET, _SEQUENCE_OCTET, _INTEGER_OCTET, 0xA0)


def _write_user_data(tag: int, value: object, what: str) -> bytes:
    return b"".join(_user_data_chunks(value, what))


_USER_DATA = Codec(_read_user_data, _write_user_data)
_NO_SIMPLY_ENCODED = unsupported("simply-encoded-data is not used with presentation contexts")


# --- context lists --------------------------------------------------------------------


def _read_context(tlv: Tlv, what: str) -> ContextDefinition:
    items = ber.children(ber.expect(tlv, ber.SEQUENCE, what), what)
    if len(items) != 3:
        raise DecodeError(f"{len(items)} members, expected 3", where=what)
    identifier = _read_context_id(items[0], f"{what}.presentation-context-identifier")
    abstract = f"{what}.abstract-syntax-name"
    syntaxes = f"{what}.transfer-syntax-name-list"
    return ContextDefinition(
        identifier=identifier,
        abstract_syntax=ber.read_oid(
            ber.expect(items[1], ber.OBJECT_IDENTIFIER, abstract), abstract
        ),
        transfer_syntaxes=tuple(
            ber.read_oid(ber.expect(item, ber.OBJECT_IDENTIFIER, syntaxes), syntaxes)
            for item in ber.children(ber.expect(items[2], ber.SEQUENCE, syntaxes), syntaxes)
        ),
    )


def _read_context_list(tlv: Tlv, what: str) -> tuple[ContextDefinition, ...]:
    contexts = tuple(
        _read_context(item, f"{what}[{index}]")
        for index, item in enumerate(ber.children(tlv, what))
    )
    seen: set[int] = set()
    for definition in contexts:
        if definition.identifier in seen:
            raise DecodeError(f"context {definition.identifier} is defined twice", where=what)
        seen.add(definition.identifier)
    return contexts


def _write_context_list(tag: int, value: object, what: str) -> bytes:
    entries = []
    for index, definition in enumerate(_items(value, ContextDefinition, what)):
        where = f"{what}[{index}]"
        identifier = _context_id(definition.identifier, f"{where}.presentation-context-identifier")
        syntaxes = [
            _oid_tlv(name, f"{where}.transfer-syntax-name-list")
            for name in definition.transfer_syntaxes
        ]
        entry = [
            ber.tlv(ber.INTEGER, ber.int_contents(identifier)),
            _oid_tlv(definition.abstract_syntax, f"{where}.abstract-syntax-name"),
            ber.constructed(ber.SEQUENCE, syntaxes),
        ]
        entries.append(ber.constructed(ber.SEQUENCE, entry))
    return ber.constructed(tag, entries)


_RESULT_MEMBERS = (
    Member(context(0), "result", "result", IMPLICIT_INTEGER, required=True),
    Member(context(1), "transfer-syntax-name", "transfer_syntax", IMPLICIT_OID),
    Member(context(2), "provider-reason", "provider_reason", IMPLICIT_INTEGER),
)


def _read_result_list(tlv: Tlv, what: str) -> tuple[ContextResult, ...]:
    return tuple(
        decode_members(ber.expect(item, ber.SEQUENCE, where), ContextResult, _RESULT_MEMBERS, where)
        for index, item in enumerate(ber.children(tlv, what))
        for where in (f"{what}[{index}]",)
    )


def _write_result_list(tag: int, value: object, what: str) -> bytes:
    return ber.constructed(
        tag,
        [
            encode_members(ber.SEQUENCE, result, _RESULT_MEMBERS, f"{what}[{index}]")
            for index, result in enumerate(_items(value, ContextResult, what))
        ],
    )


def _read_identifier_list(tlv: Tlv, what: str) -> tuple[tuple[int, str], ...]:
    pairs = []
    for index, item in enumerate(ber.children(tlv, what)):
        where = f"{what}[{index}]"
        members = ber.children(ber.expect(item, ber.SEQUENCE, where), where)
        if len(members) != 2:
            raise DecodeError(f"{len(members)} members, expected 2", where=where)
        identifier = _read_context_id(members[0], f"{where}.presentation-context-identifier")
        syntax = ber.expect(members[1], ber.OBJECT_IDENTIFIER, f"{where}.transfer-syntax-name")
        pairs.append((identifier, ber.read_oid(syntax, f"{where}.transfer-syntax-name")))
    return tuple(pairs)


def _write_identifier_list(tag: int, value: object, what: str) -> bytes:
    entries = []
    for index, pair in enumerate(_items(value, tuple, what)):
        where = f"{what}[{index}]"
        if len(pair) != 2:
            raise EncodeError("expected (context id, transfer syntax)", where=where)
        identifier = ber.tlv(ber.INTEGER, ber.int_contents(_context_id(pair[0], where)))
        entries.append(ber.constructed(ber.SEQUENCE, [identifier, _oid_tlv(pair[1], where)]))
    return ber.constructed(tag, entries)


_CONTEXT_LIST = Codec(_read_context_list, _write_context_list)
_RESULT_LIST = Codec(_read_result_list, _write_result_list)
_IDENTIFIER_LIST = Codec(_read_identifier_list, _write_identifier_list)


def negotiate(
    proposed: Iterable[ContextDefinition], supported: Mapping[str, str | Collection[str]]
) -> tuple[ContextResult, ...]:
    """The responder's result for each proposed context, in the order proposed (X.226 6.2.2).

    ``supported`` maps each abstract syntax we know to the transfer syntax(es) we accept for
    it.  A context is accepted with the first of the proposer's transfer syntaxes that we
    accept; otherwise it is rejected by the provider, saying why.
    """
    return tuple(_negotiate_one(definition, supported) for definition in proposed)


def _negotiate_one(
    definition: ContextDefinition, supported: Mapping[str, str | Collection[str]]
) -> ContextResult:
    ours = supported.get(definition.abstract_syntax)
    if ours is None:
        return ContextResult(
            result=Result.PROVIDER_REJECTION,
            provider_reason=ContextReason.ABSTRACT_SYNTAX_NOT_SUPPORTED,
        )
    accepted = (ours,) if isinstance(ours, str) else ours
    for syntax in definition.transfer_syntaxes:  # the proposer's order of preference
        if syntax in accepted:
            return ContextResult(result=Result.ACCEPTANCE, transfer_syntax=syntax)
    return ContextResult(
        result=Result.PROVIDER_REJECTION,
        provider_reason=ContextReason.PROPOSED_TRANSFER_SYNTAXES_NOT_SUPPORTED,
    )


# --- CP, CPA, CPR ---------------------------------------------------------------------

_PROTOCOL_VERSION = Member(context(0), "protocol-version", "protocol_version", IMPLICIT_FLAGS)
_REQUIREMENTS = (
    Member(context(8), "presentation-requirements", "presentation_requirements", IMPLICIT_FLAGS),
    Member(context(9), "user-session-requirements", "user_session_requirements", IMPLICIT_FLAGS),
    Member(context(11), "protocol-options", "protocol_options", EXPLICIT_FLAGS),
)
_USER_DATA_MEMBERS = (
    Member(_FULLY_ENCODED, "user-data", "user_data", _USER_DATA),
    Member(_SIMPLY_ENCODED, "simply-encoded-data", "", _NO_SIMPLY_ENCODED),
)
_NOMINATED = unsupported("nominated contexts are not used (no protocol-options offered them)")

_CP_MEMBERS = (
    _PROTOCOL_VERSION,
    Member(context(1), "calling-presentation-selector", "calling_selector", IMPLICIT_OCTETS),
    Member(context(2), "called-presentation-selector", "called_selector", IMPLICIT_OCTETS),
    Member(context(4), "presentation-context-definition-list", "contexts", _CONTEXT_LIST),
    Member(
        context(6),
        "default-context-name",
        "",
        unsupported("a default context is not used: P1 defines its contexts"),
    ),
    *_REQUIREMENTS,
    Member(context(12), "initiators-nominated-context", "", _NOMINATED),
    Member(context(14), "extensions", "", IGNORED),
    *_USER_DATA_MEMBERS,
)
_CPA_MEMBERS = (
    _PROTOCOL_VERSION,
    Member(context(3), "responding-presentation-selector", "responding_selector", IMPLICIT_OCTETS),
    Member(context(5), "presentation-context-definition-result-list", "results", _RESULT_LIST),
    *_REQUIREMENTS,
    Member(context(13), "responders-nominated-context", "", _NOMINATED),
    *_USER_DATA_MEMBERS,
)
_CPR_MEMBERS = (
    _PROTOCOL_VERSION,
    Member(context(3), "responding-presentation-selector", "responding_selector", IMPLICIT_OCTETS),
    Member(context(5), "presentation-context-definition-result-list", "results", _RESULT_LIST),
    Member(context(7), "default-context-result", "default_context_result", IMPLICIT_INTEGER),
    Member(context(10), "provider-reason", "provider_reason", IMPLICIT_INTEGER),
    *_USER_DATA_MEMBERS,
)

#   Mode-selector ::= SET { mode-value [0] IMPLICIT INTEGER {x410-1984-mode(0), normal-mode(1)} }
_MODE_NORMAL = bytes.fromhex("a003800101")  # mode-selector [0] { mode-value [0] normal-mode }
_MODE_MEMBERS = {
    context(0): "mode-selector",
    context(1): "x410-mode-parameters",
    context(2): "normal-mode-parameters",
}
_X410_UNSUPPORTED = "unsupported X.410-1984 mode: only normal mode is implemented"


def _normal_mode_parameters(data: bytes | bytearray | memoryview, what: str) -> Tlv | None:
    """The normal-mode-parameters of a CP-type or CPA-PPDU SET (None: absent)."""
    found = ber.split_set(
        ber.expect(ber.read_single(data, what), ber.SET, what), _MODE_MEMBERS, what
    )
    where = f"{what}.mode-selector"
    selector = ber.split_set(found.need("mode-selector", what), {context(0): "mode-value"}, where)
    mode = ber.read_int(selector.need("mode-value", where), f"{where}.mode-value")
    if mode == _X410_MODE or "x410-mode-parameters" in found:
        raise DecodeError(_X410_UNSUPPORTED, where=where)
    if mode != _NORMAL_MODE:
        raise DecodeError(f"mode-value {mode} is neither x410 (0) nor normal (1)", where=where)
    return found.get("normal-mode-parameters")


def _decode_mode_set(
    data: bytes | bytearray | memoryview, model: type[_T], members: Sequence[Member], what: str
) -> _T:
    normal = _normal_mode_parameters(data, what)
    if normal is None:
        return model()
    return decode_members(normal, model, members, f"{what}.normal-mode-parameters")


def _encode_mode_set(value: object, members: Sequence[Member], what: str) -> bytes:
    normal = encode_members(context(2), value, members, f"{what}.normal-mode-parameters")
    return ber.constructed(ber.SET, [_MODE_NORMAL, normal])


def encode_cp(cp: ConnectPpdu) -> bytes:
    """CP-type in normal mode (the S-CONNECT user data); raises EncodeError."""
    return _encode_mode_set(cp, _CP_MEMBERS, "CP-type")


def decode_cp(data: bytes | bytearray | memoryview) -> ConnectPpdu:
    """Decode a CP-type (definite or indefinite lengths); X.410-1984 mode is a DecodeError."""
    return _decode_mode_set(data, ConnectPpdu, _CP_MEMBERS, "CP-type")


def encode_cpa(cpa: AcceptPpdu) -> bytes:
    """CPA-PPDU in normal mode (the S-CONNECT accept user data); raises EncodeError."""
    return _encode_mode_set(cpa, _CPA_MEMBERS, "CPA-PPDU")


def decode_cpa(data: bytes | bytearray | memoryview) -> AcceptPpdu:
    """Decode a CPA-PPDU; X.410-1984 mode is a DecodeError."""
    return _decode_mode_set(data, AcceptPpdu, _CPA_MEMBERS, "CPA-PPDU")


def encode_cpr(cpr: RefusePpdu) -> bytes:
    """CPR-PPDU normal-mode-parameters (the S-CONNECT refuse user data); raises EncodeError."""
    return encode_members(ber.SEQUENCE, cpr, _CPR_MEMBERS, "CPR-PPDU.normal-mode-parameters")


def decode_cpr(data: bytes | bytearray | memoryview) -> RefusePpdu:
    """Decode a CPR-PPDU; its X.410-1984 form (an RTORJ SET) is a DecodeError."""
    tlv = ber.read_single(data, "CPR-PPDU")
    if tlv.tag == ber.SET:
        raise DecodeError(_X410_UNSUPPORTED, where="CPR-PPDU.x400-mode-parameters")
    what = "CPR-PPDU.normal-mode-parameters"
    return decode_members(ber.expect(tlv, ber.SEQUENCE, what), RefusePpdu, _CPR_MEMBERS, what)


# --- ARU, ARP -------------------------------------------------------------------------

_ARU_TAG = context(0)
_ARU_WHAT = "ARU-PPDU.normal-mode-parameters"
_ARU_MEMBERS = (
    Member(context(0), "presentation-context-identifier-list", "contexts", _IDENTIFIER_LIST),
    *_USER_DATA_MEMBERS,
)
_ARP_MEMBERS = (
    Member(context(0), "provider-reason", "provider_reason", IMPLICIT_INTEGER),
    Member(context(1), "event-identifier", "event_identifier", IMPLICIT_INTEGER),
)


def encode_aru(aru: AruPpdu) -> bytes:
    """Abort-type aru-ppdu in normal mode (S-U-ABORT user data); raises EncodeError."""
    return encode_members(_ARU_TAG, aru, _ARU_MEMBERS, _ARU_WHAT)


def decode_aru(data: bytes | bytearray | memoryview) -> AruPpdu:
    """Decode an ARU PPDU in normal mode; its X.410-1984 form is a DecodeError."""
    abort = decode_abort(data)
    if not isinstance(abort, AruPpdu):
        raise DecodeError("a provider abort (ARP), not a user abort", where="Abort-type")
    return abort


def encode_arp(arp: ArpPpdu) -> bytes:
    """Abort-type arp-ppdu (S-U-ABORT user data of a provider abort); raises EncodeError."""
    return encode_members(ber.SEQUENCE, arp, _ARP_MEMBERS, "ARP-PPDU")


def decode_arp(data: bytes | bytearray | memoryview) -> ArpPpdu:
    """Decode an ARP PPDU."""
    abort = decode_abort(data)
    if not isinstance(abort, ArpPpdu):
        raise DecodeError("a user abort (ARU), not a provider abort", where="Abort-type")
    return abort


def decode_abort(data: bytes | bytearray | memoryview) -> AruPpdu | ArpPpdu:
    """Decode an Abort-type: ``[0]`` ARU (normal mode) or ``SEQUENCE`` ARP."""
    tlv = ber.read_single(data, "Abort-type")
    if tlv.tag == _ARU_TAG:
        return decode_members(tlv, AruPpdu, _ARU_MEMBERS, _ARU_WHAT)
    if tlv.tag == ber.SEQUENCE:
        return decode_members(tlv, ArpPpdu, _ARP_MEMBERS, "ARP-PPDU")
    if tlv.tag == ber.SET:  # ARU-PPDU x400-mode-parameters: an RTABapdu
        raise DecodeError(_X410_UNSUPPORTED, where="ARU-PPDU.x400-mode-parameters")
    raise DecodeError(f"{ber.tag_name(tlv.tag)} is neither ARU nor ARP", where="Abort-type")
