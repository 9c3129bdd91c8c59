"""Fields shared by the X.411 transfer envelopes: identifiers, flags, EITs, content type.

X.411 clause 12.2 (MTAAbstractService, Figure 4 / Annex A) and the common parameter
types of MTSAbstractService.  These models are used by :mod:`p1.mts.envelope` (message and
probe) and :mod:`p1.mts.report`.

Conventions:

* Models are frozen dataclasses; ASN.1 names are translated here, once.
* A model may carry encoding details that value equality ignores or normalises:
  ``wire_order`` (the member order of a received SET and which DEFAULT members were
  sent explicitly), ``length`` of a bit string, the string form (Numeric or Printable)
  of domain names, and the UTCTime text of times (:class:`p1.ber.WireTime`).
  They make a decoded value re-encode to the bytes received; a value built in code
  leaves them empty and is encoded in the standard's definition order with DEFAULT
  values omitted.

Extension fields are in :mod:`p1.mts.extensions`, trace in :mod:`p1.mts.trace`.

Public API::

    GlobalDomainIdentifier, MTSIdentifier (text form "[C;ADMD;PRMD;local-id]")
    NamedBits and PerMessageIndicators, PerRecipientIndicators, Criticality,
        OtherActions, BuiltInEncodedInformationTypes
    EncodedInformationTypes
    BuiltInContentType, ContentType (= int | str)
    decode_* / encode_* of each (TLV level, for p1.mts.envelope and p1.mts.report), and
    decode_name / encode_name for O/R names under any tag
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, TypeVar

from p1 import ber
from p1.ber import Tlv, application, context
from p1.errors import DecodeError, EncodeError
from p1.mts.orname import ORName, decode_orname, encode_orname

# X.411 annex B, MTSUpperBounds.
UB_BIT_OPTIONS = 16
UB_CONTENT_ID_LENGTH = 16
UB_DOMAIN_NAME_LENGTH = 16
UB_INTEGER_OPTIONS = 256
UB_LOCAL_ID_LENGTH = 32
UB_MTA_NAME_LENGTH = 32
UB_RECIPIENTS = 32767
UB_TRANSFERS = 512
UB_BUILT_IN_CONTENT_TYPE = 32767

_DIGITS = frozenset("0123456789")

MAX_BITS = 1024
"""Longest bit string accepted: a sanity bound.  The standard's bounds (16 bits for
most, 32 for built-in EITs) are not enforced on input, so a peer that exceeds them is
still relayed."""


# --- domain identifiers ----------------------------------------------------------------


# GlobalDomainIdentifier ::= [APPLICATION 3] SEQUENCE {
#   country-name                CountryName,
#   administration-domain-name  AdministrationDomainName,
#   private-domain-identifier   PrivateDomainIdentifier OPTIONAL }
# CountryName ::= [APPLICATION 1] CHOICE {
#   x121-dcc-code NumericString, iso-3166-alpha2-code PrintableString }
# AdministrationDomainName ::= [APPLICATION 2] CHOICE {
#   numeric NumericString, printable PrintableString }
# PrivateDomainIdentifier ::= CHOICE { numeric NumericString, printable PrintableString }
@dataclass(frozen=True, slots=True, kw_only=True)
class GlobalDomainIdentifier:
    """A management domain: country, ADMD and optional PRMD (X.411 clause 18.3.1)."""

    country: str
    """ISO 3166 alpha-2 code, or X.121 DCC (three digits)."""
    admd: str
    """Administration domain name; a single space means any ADMD."""
    prmd: str | None = None
    """Private domain identifier."""
    country_numeric: bool | None = None
    """Whether country travels as NumericString; None: when it is all digits."""
    admd_numeric: bool | None = None
    """As ``country_numeric``, for the ADMD."""
    prmd_numeric: bool | None = None
    """As ``country_numeric``, for the PRMD."""

    def __post_init__(self) -> None:
        # A form flag is kept only where it departs from what the text implies.
        if self.country_numeric is None and self.admd_numeric is None and self.prmd_numeric is None:
            return  # nothing to normalise (the usual case, checked quickly)
        for name in ("country", "admd", "prmd"):
            value = getattr(self, name)
            flag = getattr(self, f"{name}_numeric")
            if flag is not None and (value is None or flag == _looks_numeric(value)):
                object.__setattr__(self, f"{name}_numeric", None)

    def is_numeric(self, name: str) -> bool:
        """Whether ``country``, ``admd`` or ``prmd`` is (to be) a NumericString."""
        flag: bool | None = getattr(self, f"{name}_numeric")
        value: str | None = getattr(self, name)
        return flag if flag is not None else value is not None and _looks_numeric(value)

    @property
    def text(self) -> str:
        """``GB;ADMD;NATO`` (``GB;ADMD;`` without PRMD)."""
        return f"{self.country};{self.admd};{self.prmd or ''}"

    def __str__(self) -> str:
        return self.text

    @classmethod
    def parse(cls, text: str) -> GlobalDomainIdentifier:
        """The inverse of :attr:`text`; raises DecodeError."""
        parts = text.split(";")
        if len(parts) != 3 or not parts[0] or not parts[1]:
            raise DecodeError(f"{text!r} is not COUNTRY;ADMD;PRMD", where="GlobalDomainIdentifier")
        return cls(country=parts[0], admd=parts[1], prmd=parts[2] or None)


def _looks_numeric(value: str) -> bool:
    if type(value) is str:
        return value.isascii() and value.isdigit()  # the same test, faster
    return bool(value) and set(value) <= _DIGITS


# MTSIdentifier ::= [APPLICATION 4] SEQUENCE {
#   global-domain-identifier  GlobalDomainIdentifier,
#   local-identifier          LocalIdentifier }
# LocalIdentifier ::= IA5String (SIZE (1..ub-local-id-length))
@dataclass(frozen=True, slots=True, kw_only=True)
class MTSIdentifier:
    """A message, probe or report identifier (X.411 clause 18.3.2).

    Text form (:attr:`text`, a database key): ``[C;ADMD;PRMD;local-id]`` with the PRMD
    empty when absent, e.g. ``[GB; ;NATO;3f2a-1]``.  Country and domain names cannot
    hold ``;`` (PrintableString, NumericString); the local identifier is everything
    after the third ``;`` up to the final ``]``, so it may hold any character.  The
    string form (Numeric or Printable) of the names is not part of the key.
    """

    global_domain_identifier: GlobalDomainIdentifier
    local_identifier: str

    @property
    def text(self) -> str:
        """``[C;ADMD;PRMD;local-id]``."""
        return f"[{self.global_domain_identifier.text};{self.local_identifier}]"

    def __str__(self) -> str:
        return self.text

    @classmethod
    def parse(cls, text: str) -> MTSIdentifier:
        """The inverse of :attr:`text`; raises DecodeError."""
        if not (text.startswith("[") and text.endswith("]")):
            raise DecodeError(f"{text!r} is not [C;ADMD;PRMD;local-id]", where="MTSIdentifier")
        parts = text[1:-1].split(";", 3)
        if len(parts) != 4 or not parts[3]:
            raise DecodeError(f"{text!r} is not [C;ADMD;PRMD;local-id]", where="MTSIdentifier")
        domain = GlobalDomainIdentifier.parse(";".join(parts[:3]))
        return cls(global_domain_identifier=domain, local_identifier=parts[3])


GDI_TAG = application(3)
MTS_IDENTIFIER_TAG = application(4)
_COUNTRY_TAG = application(1)
_ADMD_TAG = application(2)
_NAME_FORMS = {ber.NUMERIC_STRING: True, ber.PRINTABLE_STRING: False}


def _read_domain_name(tlv: Tlv, what: str) -> tuple[str, bool | None]:
    """The text and its form flag, None where the text implies the form."""
    numeric = _NAME_FORMS.get(tlv.tag)
    if numeric is None:
        raise DecodeError(
            f"expected NumericString or PrintableString, found {ber.tag_name(tlv.tag)}", where=what
        )
    text = ber.read_text(tlv, what)
    # read_text gives ASCII, where isdigit() is _looks_numeric (and faster).
    return text, None if numeric == text.isdigit() else numeric


_DECODED_GDIS: ber.Memo[bytes, GlobalDomainIdentifier] = ber.Memo(256)
"""Identifiers already decoded, by contents octets (immutable; a few domains recur in
every envelope: the MTS identifier's and each trace entry's)."""
_DECODED_GDI_OCTETS = 128


def decode_gdi(tlv: Tlv, what: str = "GlobalDomainIdentifier") -> GlobalDomainIdentifier:
    """GlobalDomainIdentifier (the TLV's own tag is not checked: it may be implicit)."""
    if not tlv.constructed:
        return _decode_gdi(tlv, what)  # (an error)
    key = bytes(tlv.data[tlv.body : tlv.end])
    value = _DECODED_GDIS.get(key)
    if value is None:
        value = _decode_gdi(tlv, what)
        if len(key) <= _DECODED_GDI_OCTETS:
            _DECODED_GDIS.remember(key, value)
    return value


def _decode_gdi(tlv: Tlv, what: str) -> GlobalDomainIdentifier:
    parts = ber.children(tlv, what)
    if len(parts) not in (2, 3):
        raise DecodeError(f"{len(parts)} components, expected 2 or 3", where=what)
    # (The paths for errors are built only on error: this runs for every trace entry.)
    if parts[0].tag != _COUNTRY_TAG:
        ber.expect(parts[0], _COUNTRY_TAG, f"{what}.country-name")
    country, country_numeric = _read_domain_name(ber.only_child(parts[0], what), what)
    if parts[1].tag != _ADMD_TAG:
        ber.expect(parts[1], _ADMD_TAG, f"{what}.administration-domain-name")
    admd, admd_numeric = _read_domain_name(ber.only_child(parts[1], what), what)
    prmd, prmd_numeric = (
        _read_domain_name(parts[2], f"{what}.private-domain-identifier")
        if len(parts) == 3
        else (None, None)
    )
    return GlobalDomainIdentifier(
        country=country,
        admd=admd,
        prmd=prmd,
        country_numeric=country_numeric,
        admd_numeric=admd_numeric,
        prmd_numeric=prmd_numeric,
    )


def _domain_name(value: str, flag: bool | None, what: str) -> bytes:
    # As GlobalDomainIdentifier.is_numeric, without the lookups by name.
    numeric = flag if flag is not None else value is not None and _looks_numeric(value)
    tag = ber.NUMERIC_STRING if numeric else ber.PRINTABLE_STRING
    return ber.tlv(tag, ber.text_contents(value, what))


def encode_gdi(gdi: GlobalDomainIdentifier, tag: int = GDI_TAG) -> bytes:
    """GlobalDomainIdentifier under ``tag``."""
    key = (gdi, tag)
    try:
        encoded = _ENCODED_GDIS.get(key)
    except TypeError:  # not hashable: not a GlobalDomainIdentifier either
        encoded = None
    if encoded is None:
        encoded = _encode_gdi(gdi, tag)
        if type(gdi) is GlobalDomainIdentifier:  # (immutable, its fields plain text)
            _ENCODED_GDIS.remember(key, encoded)
    return encoded


_ENCODED_GDIS: ber.Memo[tuple[GlobalDomainIdentifier, int], bytes] = ber.Memo(256)
"""encode_gdi() results by value and tag (the same few domains in every envelope)."""


def _encode_gdi(gdi: GlobalDomainIdentifier, tag: int) -> bytes:
    what = "GlobalDomainIdentifier"
    parts = [
        ber.tlv(_COUNTRY_TAG, _domain_name(gdi.country, gdi.country_numeric, what), True),
        ber.tlv(_ADMD_TAG, _domain_name(gdi.admd, gdi.admd_numeric, what), True),
    ]
    if gdi.prmd is not None:
        parts.append(_domain_name(gdi.prmd, gdi.prmd_numeric, what))
    return ber.constructed(tag, parts)


def decode_mts_identifier(tlv: Tlv, what: str = "MTSIdentifier") -> MTSIdentifier:
    """MTSIdentifier (under any tag)."""
    parts = ber.children(tlv, what)
    if len(parts) != 2:
        raise DecodeError(f"{len(parts)} components, expected 2", where=what)
    domain, local = parts
    if domain.tag != GDI_TAG:  # (ber.expect only to say what is wrong: a call saved)
        ber.expect(domain, GDI_TAG, what)
    gdi = decode_gdi(domain, what)
    if local.tag != ber.IA5_STRING:
        ber.expect(local, ber.IA5_STRING, what)
    text = ber.read_text(local, f"{what}.local-identifier")
    return MTSIdentifier(global_domain_identifier=gdi, local_identifier=text)


def encode_mts_identifier(value: MTSIdentifier, tag: int = MTS_IDENTIFIER_TAG) -> bytes:
    """MTSIdentifier under ``tag``."""
    if not isinstance(value, MTSIdentifier):
        raise EncodeError(f"{value!r} is not an MTSIdentifier", where="MTSIdentifier")
    local = ber.tlv(ber.IA5_STRING, ber.text_contents(value.local_identifier, "local-identifier"))
    return ber.constructed(tag, [encode_gdi(value.global_domain_identifier), local])


# --- named bit strings -----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class NamedBits:
    """A BIT STRING with named bits: one boolean field per named bit.

    ``other_bits`` holds the numbers of set bits that have no field; ``length`` is the
    number of bits on the wire (None: the fewest that hold the set bits, at least the
    type's minimum).  ``length`` does not take part in equality.
    """

    other_bits: tuple[int, ...] = ()
    """Numbers of the set bits without a name, ascending."""
    length: int | None = field(default=None, compare=False, repr=False)

    NAMES: ClassVar[tuple[str | None, ...]] = ()
    MIN_LENGTH: ClassVar[int] = 0

    def __post_init__(self) -> None:
        # Normalise: ascending, no repeats, and a named bit given by number sets its flag.
        if self.other_bits == () and isinstance(self.other_bits, tuple):
            return  # the usual case: nothing to normalise
        other: list[int] = []
        for number in sorted(set(self.other_bits)):
            if not isinstance(number, int) or number < 0:
                raise ValueError(f"other_bits must be bit numbers, got {self.other_bits!r}")
            name = self.NAMES[number] if number < len(self.NAMES) else None
            if name:
                object.__setattr__(self, name, True)
            else:
                other.append(number)
        object.__setattr__(self, "other_bits", tuple(other))

    def numbers(self) -> frozenset[int]:
        """The numbers of all bits that are one."""
        named = {n for n, name in enumerate(self.NAMES) if name and getattr(self, name)}
        return frozenset(named).union(self.other_bits)

    def bit_string(self) -> tuple[bytes, int]:
        """``(octets, number of bits)`` to encode."""
        numbers = self.numbers()
        needed = max(numbers) + 1 if numbers else 0
        length = max(needed, self.MIN_LENGTH if self.length is None else self.length)
        return ber.numbers_to_bits(numbers, length), length

    @property
    def is_empty(self) -> bool:
        """No bit is one (the value of ``DEFAULT {}``)."""
        cls = type(self)
        empty = _EMPTY_BITS.get(cls)
        if empty is None:
            empty = _EMPTY_BITS[cls] = cls()
        return self == empty or not self.numbers()  # (equality: the usual case, quickly)

    @classmethod
    def from_bit_string(cls, octets: bytes, length: int) -> Self:
        """The flags of a received bit string."""
        named: dict[str, Any] = dict(_flags_off(cls))
        other: list[int] = []
        names = cls.NAMES
        for number in sorted(ber.bits_to_numbers(octets, length)):
            name = names[number] if number < len(names) else None
            if name:
                named[name] = True
            else:
                other.append(number)
        return cls(**named, other_bits=tuple(other), length=length)


_EMPTY_BITS: dict[type[NamedBits], NamedBits] = {}
"""The empty value of each NamedBits class."""
_FLAGS_OFF: dict[type[NamedBits], dict[str, bool]] = {}


def _flags_off(cls: type[NamedBits]) -> dict[str, bool]:
    """Every named bit of ``cls`` off (copied, then the received ones set)."""
    flags = _FLAGS_OFF.get(cls)
    if flags is None:
        flags = _FLAGS_OFF[cls] = {name: False for name in cls.NAMES if name}
    return flags


_Bits = TypeVar("_Bits", bound="NamedBits")


_DECODED_BITS: ber.Memo[tuple[type[NamedBits], bytes], Any] = ber.Memo(256)
"""Values already decoded, by class and contents octets (they are immutable, and the
same few recur in every envelope)."""


def decode_bits(cls: type[_Bits], tlv: Tlv, what: str) -> _Bits:
    """A :class:`NamedBits` subclass from a BIT STRING TLV (any tag)."""
    data, _, body, end, _, _, is_constructed = tlv
    if is_constructed:  # segmented (rare): not kept
        return _read_bits(cls, tlv, what)
    key = (cls, bytes(data[body:end]))
    value: _Bits | None = _DECODED_BITS.get(key)
    if value is None:  # (the contents decide the value: checked once)
        value = _DECODED_BITS.remember(key, _read_bits(cls, tlv, what))
    return value


def _read_bits(cls: type[_Bits], tlv: Tlv, what: str) -> _Bits:
    octets, length = ber.read_bits(tlv, what)
    if length > MAX_BITS:
        raise DecodeError(f"{length} bits is too long", where=what)
    return cls.from_bit_string(octets, length)


def encode_bits(value: NamedBits, tag: int, what: str) -> bytes:
    """A BIT STRING TLV under ``tag``."""
    if not isinstance(value, NamedBits):
        raise EncodeError(f"{value!r} is not a bit string model", where=what)
    key = (value, value.length, tag)  # (``length`` takes no part in equality)
    try:
        encoded = _ENCODED_BITS.get(key)
    except TypeError:  # a field holds something unhashable: encode it, do not keep it
        octets, length = value.bit_string()
        return ber.tlv(tag, ber.bits_contents(octets, length))
    if encoded is None:
        octets, length = value.bit_string()
        encoded = _ENCODED_BITS.remember(key, ber.tlv(tag, ber.bits_contents(octets, length)))
    return encoded


_ENCODED_BITS: ber.Memo[tuple[NamedBits, int | None, int], bytes] = ber.Memo(256)
"""encode_bits() results by value, length and tag (a few flag sets recur everywhere)."""


# PerMessageIndicators ::= [APPLICATION 8] BIT STRING {
#   disclosure-of-other-recipients(0), implicit-conversion-prohibited(1),
#   alternate-recipient-allowed(2), content-return-request(3), reserved(4),
#   bit-5(5), bit-6(6), service-message(7) } (SIZE (0..ub-bit-options))
@dataclass(frozen=True, slots=True, kw_only=True)
class PerMessageIndicators(NamedBits):
    """X.411 clause 8.2.1.1.1 / 12.2.1.1.1: per-message indicators (DEFAULT {})."""

    disclosure_of_other_recipients: bool = False
    implicit_conversion_prohibited: bool = False
    alternate_recipient_allowed: bool = False
    content_return_request: bool = False
    reserved: bool = False
    bit_5: bool = False
    bit_6: bool = False
    service_message: bool = False

    NAMES: ClassVar[tuple[str | None, ...]] = (
        "disclosure_of_other_recipients",
        "implicit_conversion_prohibited",
        "alternate_recipient_allowed",
        "content_return_request",
        "reserved",
        "bit_5",
        "bit_6",
        "service_message",
    )

    @property
    def notification_type(self) -> int:
        """0 (none), or notification type 1 (bit 6), 2 (bit 5) or 3 (both)."""
        return (2 if self.bit_5 else 0) + (1 if self.bit_6 else 0)


# PerRecipientIndicators ::= BIT STRING {
#   responsibility(0), originating-MTA-report(1), originating-MTA-non-delivery-report(2),
#   originator-report(3), originator-non-delivery-report(4),
#   reserved-5(5), reserved-6(6), reserved-7(7) } (SIZE (8..ub-bit-options))
@dataclass(frozen=True, slots=True, kw_only=True)
class PerRecipientIndicators(NamedBits):
    """X.411 clause 12.2.1.1.1: per-recipient-indicators (at least 8 bits).

    ``responsibility``: this MTA is responsible for the recipient.  Originating-MTA
    report request: report (bit 1), non-delivery-report (bit 2), audited-report (both).
    Originator report request: report (bit 3), non-delivery-report (bit 4), neither:
    no-report.  Reserved bits 5-7 are kept in ``other_bits``.
    """

    responsibility: bool = False
    originating_mta_report: bool = False
    originating_mta_non_delivery_report: bool = False
    originator_report: bool = False
    originator_non_delivery_report: bool = False

    NAMES: ClassVar[tuple[str | None, ...]] = (
        "responsibility",
        "originating_mta_report",
        "originating_mta_non_delivery_report",
        "originator_report",
        "originator_non_delivery_report",
    )
    MIN_LENGTH: ClassVar[int] = 8


# Criticality ::= BIT STRING { for-submission(0), for-transfer(1), for-delivery(2) }
#   (SIZE (0..ub-bit-options)) -- critical 'one', non-critical 'zero'
@dataclass(frozen=True, slots=True, kw_only=True)
class Criticality(NamedBits):
    """X.411 clause 9.1 / Table 27: for which steps an extension is critical."""

    for_submission: bool = False
    for_transfer: bool = False
    for_delivery: bool = False

    NAMES: ClassVar[tuple[str | None, ...]] = ("for_submission", "for_transfer", "for_delivery")


# OtherActions ::= BIT STRING { redirected(0), dl-operation(1) } (SIZE (0..ub-bit-options))
@dataclass(frozen=True, slots=True, kw_only=True)
class OtherActions(NamedBits):
    """X.411 clause 12.2.1.1.1: trace other-actions (DEFAULT {})."""

    redirected: bool = False
    dl_operation: bool = False

    NAMES: ClassVar[tuple[str | None, ...]] = ("redirected", "dl_operation")


# BuiltInEncodedInformationTypes ::= BIT STRING { unknown(0), ia5-text(2),
#   g3-facsimile(3), g4-class-1(4), teletex(5), videotex(6), voice(7), sfd(8),
#   mixed-mode(9) } (SIZE (0..ub-built-in-encoded-information-types))
@dataclass(frozen=True, slots=True, kw_only=True)
class BuiltInEncodedInformationTypes(NamedBits):
    """X.411 clause 18.4 (built-in encoded information types)."""

    unknown: bool = False
    ia5_text: bool = False
    g3_facsimile: bool = False
    g4_class_1: bool = False
    teletex: bool = False
    videotex: bool = False
    voice: bool = False
    sfd: bool = False
    mixed_mode: bool = False

    NAMES: ClassVar[tuple[str | None, ...]] = (
        "unknown",
        None,
        "ia5_text",
        "g3_facsimile",
        "g4_class_1",
        "teletex",
        "videotex",
        "voice",
        "sfd",
        "mixed_mode",
    )


# --- encoded information types ---------------------------------------------------------


# EncodedInformationTypes ::= [APPLICATION 5] SET {
#   built-in-encoded-information-types  [0] BuiltInEncodedInformationTypes,
#   -- non-basic-parameters -- COMPONENTS OF NonBasicParameters,
#     -- g3-facsimile [1] G3FacsimileNonBasicParameters DEFAULT {},
#     -- teletex      [2] TeletexNonBasicParameters DEFAULT {}
#   extended-encoded-information-types  [4] ExtendedEncodedInformationTypes OPTIONAL }
@dataclass(frozen=True, slots=True, kw_only=True)
class EncodedInformationTypes:
    """X.411 clause 18.4: the encoded information types of a content.

    The non-basic parameters are kept as received: ``g3_facsimile`` is the contents of
    the ``[1]`` BIT STRING (unused-bits octet first), ``teletex`` the contents of the
    ``[2]`` SET.
    """

    built_in: BuiltInEncodedInformationTypes = field(default_factory=BuiltInEncodedInformationTypes)
    g3_facsimile: bytes | None = None
    teletex: bytes | None = None
    extended: tuple[str, ...] = ()
    """Extended EITs, object identifiers in dotted form."""
    wire_order: tuple[str, ...] = field(default=(), compare=False, repr=False)


EIT_TAG = application(5)
_EIT_MEMBERS = {
    context(0): "built_in",
    context(1): "g3_facsimile",
    context(2): "teletex",
    context(4): "extended",
}


def decode_eits(tlv: Tlv, what: str = "EncodedInformationTypes") -> EncodedInformationTypes:
    """EncodedInformationTypes (under any tag)."""
    members = ber.split_set(tlv, _EIT_MEMBERS, what)
    g3 = members.get("g3_facsimile")
    teletex = members.get("teletex")
    extended = members.get("extended")
    if g3 is not None:
        ber.read_bits(g3, f"{what}.g3-facsimile")  # validate only; kept as received
    return EncodedInformationTypes(
        built_in=decode_bits(
            BuiltInEncodedInformationTypes,
            members.need("built_in", what),
            f"{what}.built-in-encoded-information-types",
        ),
        g3_facsimile=None if g3 is None else _primitive_body(g3, what),
        teletex=None if teletex is None else bytes(ber.constructed_contents(teletex, what)),
        extended=()
        if extended is None
        else tuple(
            ber.read_oid(ber.expect(child, ber.OBJECT_IDENTIFIER, what), what)
            for child in ber.children(extended, what)
        ),
        wire_order=members.order,
    )


def _primitive_body(tlv: Tlv, what: str) -> bytes:
    if tlv.constructed:
        raise DecodeError("expected a primitive value", where=what)
    return bytes(tlv.contents())


def encode_eits(value: EncodedInformationTypes, tag: int = EIT_TAG) -> bytes:
    """EncodedInformationTypes under ``tag``."""
    what = "EncodedInformationTypes"
    if not isinstance(value, EncodedInformationTypes):
        raise EncodeError(f"{value!r} is not EncodedInformationTypes", where=what)
    order = value.wire_order
    extended = [
        ber.tlv(ber.OBJECT_IDENTIFIER, ber.oid_contents(oid, what)) for oid in value.extended
    ]
    return ber.encode_set(
        tag,
        [
            ("built_in", encode_bits(value.built_in, context(0), what)),
            (
                "g3_facsimile",
                None if value.g3_facsimile is None else ber.tlv(context(1), value.g3_facsimile),
            ),
            (
                "teletex",
                None
                if value.teletex is None
                else ber.tlv(context(2), value.teletex, constructed=True),
            ),
            (
                "extended",
                ber.constructed(context(4), extended)
                if ber.keep("extended", not extended, order)
                else None,
            ),
        ],
        order,
    )


# --- content type ----------------------------------------------------------------------

# ContentType ::= CHOICE { built-in BuiltInContentType, extended ExtendedContentType }
# BuiltInContentType ::= [APPLICATION 6] INTEGER { unidentified(0), external(1),
#   interpersonal-messaging-1984(2), interpersonal-messaging-1988(22),
#   edi-messaging(35), voice-messaging(40) } (0..ub-built-in-content-type)
# ExtendedContentType ::= OBJECT IDENTIFIER
ContentType = int | str
"""A built-in content type (int) or an extended one (dotted object identifier)."""


class BuiltInContentType(enum.IntEnum):
    """X.411 clause 8.2.1.1.1: the built-in content types."""

    UNIDENTIFIED = 0
    EXTERNAL = 1
    INTERPERSONAL_MESSAGING_1984 = 2
    INTERPERSONAL_MESSAGING_1988 = 22
    EDI_MESSAGING = 35
    VOICE_MESSAGING = 40


BUILT_IN_CONTENT_TYPE_TAG = application(6)
CONTENT_TYPE_TAGS = (BUILT_IN_CONTENT_TYPE_TAG, ber.OBJECT_IDENTIFIER)


def decode_content_type(tlv: Tlv, what: str = "content-type") -> ContentType:
    """ContentType: an int (built-in) or a dotted OID (extended)."""
    if tlv.tag == ber.OBJECT_IDENTIFIER:
        return ber.read_oid(tlv, what)
    value = ber.read_bounded_int(
        ber.expect(tlv, BUILT_IN_CONTENT_TYPE_TAG, what), what, 0, UB_BUILT_IN_CONTENT_TYPE
    )
    return _BUILT_IN_CONTENT_TYPES.get(value, value)


_BUILT_IN_CONTENT_TYPES: dict[int, int] = {int(kind): kind for kind in BuiltInContentType}


def encode_content_type(value: ContentType, what: str = "content-type") -> bytes:
    """ContentType: ``[APPLICATION 6] INTEGER`` or OBJECT IDENTIFIER."""
    if isinstance(value, str):
        return ber.tlv(ber.OBJECT_IDENTIFIER, ber.oid_contents(value, what))
    number = ber.check_int(value, what, 0, UB_BUILT_IN_CONTENT_TYPE)
    return ber.tlv(BUILT_IN_CONTENT_TYPE_TAG, ber.int_contents(number))


# --- O/R names -------------------------------------------------------------------------

ORNAME_TAG = application(0)


def decode_name(tlv: Tlv, what: str) -> ORName:
    """An ORName under its own ``[APPLICATION 0]`` or an implicit tag."""
    if not tlv.constructed:
        raise DecodeError("an O/R name must be constructed", where=what)
    raw = bytes(tlv.data[tlv.start : tlv.stop])  # (Tlv.raw, inline)
    try:
        return decode_orname(raw if tlv.tag == ORNAME_TAG else ber.retag(raw, ORNAME_TAG))
    except DecodeError as exc:
        raise DecodeError(exc.why, where=f"{what}: {exc.where}" if exc.where else what) from None


def encode_name(name: ORName, tag: int = ORNAME_TAG) -> bytes:
    """An ORName under ``tag`` (implicit when not ``[APPLICATION 0]``)."""
    if not isinstance(name, ORName):
        raise EncodeError(f"{name!r} is not an ORName", where="ORName")
    data = encode_orname(name)
    return data if tag == ORNAME_TAG else ber.retag(data, tag)


# OriginallySpecifiedRecipientNumber ::= INTEGER (1..ub-recipients)
def decode_recipient_number(tlv: Tlv, what: str) -> int:
    """The originally-specified-recipient-number of a recipient (X.411 clause 12.2.1.1.1)."""
    data, _, body, end, _, _, is_constructed = tlv
    if not is_constructed and 0 < end - body <= 2:  # the usual, read directly
        number = int.from_bytes(data[body:end], "big", signed=True)
        if number >= 1:  # (two octets hold at most UB_RECIPIENTS)
            return number
    return ber.read_bounded_int(
        tlv, f"{what}.originally-specified-recipient-number", 1, UB_RECIPIENTS
    )


def encode_recipient_number(number: int, tag: int, what: str) -> bytes:
    """An originally-specified-recipient-number under ``tag``; EncodeError if out of range."""
    checked = ber.check_int(
        number, f"{what}.originally-specified-recipient-number", 1, UB_RECIPIENTS
    )
    return ber.tlv(tag, ber.int_contents(checked))
