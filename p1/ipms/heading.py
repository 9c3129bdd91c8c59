"""The IPM heading codec (X.420 clause 7.2; STANAG 4406 Annex A), by hand over BER.

The heading and the field types it shares with the IPN (IPMIdentifier, ORDescriptor,
IPMSExtension) are read with the reader of :mod:`p1.ber` and written directly, not
through asn1tools, which costs hundreds of microseconds per heading.  The ASN.1 modules
(IPMSInformationObjects, MMSHeadingExtensions) remain the definition, and the tests
check these bytes against them.  O/R names go through :mod:`p1.mts.orname`, which keeps
the names of the encodings it decoded lately.

Writing follows DER's order of SET members and leaves DEFAULT values out; reading
accepts any BER (members in any order, defaults present, indefinite lengths, segmented
strings).  A STANAG 4406 heading extension whose value does not read as its type is
kept as a :class:`RawExtension` in ``other_extensions``.  PrintableString values are
checked on writing; TeletexString (subject, free-form name) is ISO 8859-1 here.

Times (expiry-time, reply-time, extended-authorisation-info) are not routed on: they are
read leniently (:func:`p1.ber.parse_lenient_utctime`: a UTCTime without its zone, as
products write them, is taken as UTC), keep their received text for writing back, and
are appended as :class:`p1.ber.Deviation` to the ``deviations`` list the caller passes,
with members whose tag number below 31 is written in the long form.

API (``view`` and ``tlv`` as in the tuple form of :func:`p1.ber.read`)::

    decode_heading(view, tlv, deviations=None) -> Heading
                                                       encode_heading(heading) -> bytes
    decode_ipm_identifier(view, tlv) -> IPMIdentifier  encode_ipm_identifier(id, octet)
    decode_descriptor(view, tlv) -> ORDescriptor       encode_descriptor(d, octet)
    decode_extensions(view, tlv) -> (RawExtension...)  encode_extensions(exts, octet)
    read_enum(view, tlv, cls, what), printable(value, what, low, high), utctime_bytes
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, TypeVar, cast

from p1 import ber
from p1.ber import Deviations, FlatTlv, View, tlv_bytes
from p1.errors import DecodeError, EncodeError
from p1.ipms.models import (
    _HEADING_DEFAULTS,
    NO_REQUESTS,
    DistributionCodes,
    DistributionExtension,
    Heading,
    Importance,
    IPMIdentifier,
    MessageType,
    NotificationRequests,
    ORDescriptor,
    RawExtension,
    Recipient,
    Sensitivity,
)
from p1.mts.orname import ORName, decode_orname, encode_orname
from p1.mts.precedence import Precedence

__all__ = [
    "decode_descriptor",
    "decode_extensions",
    "decode_heading",
    "decode_ipm_identifier",
    "encode_descriptor",
    "encode_extensions",
    "encode_heading",
    "encode_ipm_identifier",
    "printable",
    "read_enum",
    "utctime_bytes",
]

ID_MM: Final = "1.3.26.0.4406.0.2"
"""STANAG 4406 MMSObjectIdentifiers id-mm: heading extensions id-nato-mmhs-mm-*."""

# Identifier octets (constructed bit clear when used as member keys).
SEQUENCE_OCTET: Final = 0x30
SET_OCTET: Final = 0x31
INSTANCE_OF_OCTET: Final = 0x28
IPM_IDENTIFIER_OCTET: Final = 0x6B  # [APPLICATION 11] SET
ORNAME_OCTET: Final = 0x60  # [APPLICATION 0] SEQUENCE
INTEGER_OCTET: Final = 0x02
OID_OCTET: Final = 0x06
PRINTABLE_OCTET: Final = 0x13
TELETEX_OCTET: Final = 0x14
UTCTIME_OCTET: Final = 0x17


_new = object.__new__
"""Makes a model the decoder fills in without its ``__init__`` (see Heading)."""


def context(number: int, constructed: bool = True) -> int:
    """The identifier octet of ``[number]`` (number below 31)."""
    return 0x80 | (ber.CONSTRUCTED if constructed else 0) | number


def _key(octet: int) -> int:
    return octet & ~ber.CONSTRUCTED


def _constructed(octet: int, parts: Iterable[bytes]) -> bytes:
    return tlv_bytes(octet, b"".join(parts))


# --- values ---------------------------------------------------------------------------

_PRINTABLE: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 '()+,-./:=?"
)


def printable(value: str, what: str, low: int, high: int) -> bytes:
    """The octets of a PrintableString of ``low``..``high`` characters (X.680 41.4)."""
    if not (isinstance(value, str) and low <= len(value) <= high and _PRINTABLE.issuperset(value)):
        raise EncodeError(f"{value!r} is not a PrintableString of {low}..{high}", where=what)
    return value.encode("ascii")


def _military(value: str, what: str) -> bytes:
    """MilitaryString ::= PrintableString (SIZE (1..ub-military-string)), 69."""
    return printable(value, what, 1, 69)


def _teletex(value: str, what: str) -> bytes:
    try:
        return value.encode("latin-1")
    except (UnicodeEncodeError, AttributeError):
        raise EncodeError(f"{value!r} is not ISO 8859-1 text", where=what) from None


def _integer(value: int, what: str) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int):
        raise EncodeError(f"{value!r} is not an integer", where=what)
    return ber.int_contents(value)


_E = TypeVar("_E")


def read_enum(view: View, tlv: FlatTlv, cls: Callable[[int], _E], what: str) -> _E:
    """An ENUMERATED (or INTEGER) as ``cls``; an unknown value is a DecodeError."""
    value = ber.integer(view, tlv, what)
    members = _ENUM_MEMBERS.get(cls)
    if members is not None:  # an enumeration seen before: a dict lookup, not cls(value)
        known: _E | None = members.get(value)
        if known is not None:
            return known
    try:
        member = cls(value)
    except ValueError:
        raise DecodeError(f"{value} is not a known value", where=what) from None
    if isinstance(cls, enum.EnumMeta) and members is None:
        _ENUM_MEMBERS[cls] = {each.value: each for each in cast(type[enum.Enum], cls)}
    return member


_ENUM_MEMBERS: dict[object, dict[object, Any]] = {}
"""The members of each enumeration read_enum has read, by value."""


def utctime_bytes(value: datetime, what: str) -> bytes:
    """UTCTime contents: the text received, else ``YYMMDDhhmmssZ``; naive is UTC."""
    if isinstance(value, datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return ber.utctime_contents(value, what)


# --- O/R names -------------------------------------------------------------------------


def _read_orname(view: View, tlv: FlatTlv) -> ORName:
    return decode_orname(bytes(view[tlv[1] : tlv[4]]))


def _write_orname(name: ORName, what: str = "ORDescriptor.formal-name") -> bytes:
    if not isinstance(name, ORName):
        raise EncodeError(f"{name!r} is not an ORName", where=what)
    return encode_orname(name)


# --- IPMIdentifier, ORDescriptor, IPMSExtension (X.420 7.1) ---------------------------

_IPM_IDENTIFIER: Final = {_key(ORNAME_OCTET): "user", PRINTABLE_OCTET: "local"}


def decode_ipm_identifier(view: View, tlv: FlatTlv) -> IPMIdentifier:
    """``IPMIdentifier ::= [APPLICATION 11] SET {user ORName OPTIONAL,
    user-relative-identifier LocalIPMIdentifier}`` (under any tag)."""
    found = ber.members(view, tlv, _IPM_IDENTIFIER, "IPMIdentifier")
    if "local" not in found:
        raise DecodeError("user-relative-identifier missing", where="IPMIdentifier")
    user = found.get("user")
    return IPMIdentifier(
        user=None if user is None else _read_orname(view, user),
        user_relative_identifier=ber.text(view, found["local"], "LocalIPMIdentifier"),
    )


def encode_ipm_identifier(ipm_id: IPMIdentifier, octet: int = IPM_IDENTIFIER_OCTET) -> bytes:
    """An IPMIdentifier under ``octet`` (implicit when not [APPLICATION 11])."""
    local = printable(ipm_id.user_relative_identifier, "LocalIPMIdentifier", 0, 64)
    parts = [tlv_bytes(PRINTABLE_OCTET, local)]  # DER: UNIVERSAL before APPLICATION
    if ipm_id.user is not None:
        parts.append(_write_orname(ipm_id.user, "IPMIdentifier.user"))
    return _constructed(octet, parts)


_DESCRIPTOR: Final = {
    _key(ORNAME_OCTET): "formal-name",
    context(0, False): "free-form-name",
    context(1, False): "telephone-number",
}


def decode_descriptor(view: View, tlv: FlatTlv) -> ORDescriptor:
    """``ORDescriptor ::= SET {formal-name ORName OPTIONAL, free-form-name [0]
    FreeFormName OPTIONAL, telephone-number [1] TelephoneNumber OPTIONAL}``."""
    name, free, phone = _descriptor_fields(view, tlv)
    return ORDescriptor(formal_name=name, free_form_name=free, telephone_number=phone)


def _descriptor_fields(view: View, tlv: FlatTlv) -> tuple[ORName | None, str | None, str | None]:
    """The formal name, free-form name and telephone number of an ORDescriptor."""
    found = ber.members(view, tlv, _DESCRIPTOR, "ORDescriptor")
    name = found.get("formal-name")
    free = found.get("free-form-name")
    phone = found.get("telephone-number")
    return (
        None if name is None else _read_orname(view, name),
        None if free is None else ber.text(view, free, "FreeFormName", "latin-1"),
        None if phone is None else ber.text(view, phone, "TelephoneNumber"),
    )


def encode_descriptor(descriptor: ORDescriptor, octet: int = SET_OCTET) -> bytes:
    """An ORDescriptor under ``octet`` (implicit when not SET)."""
    return _descriptor(
        octet, descriptor.formal_name, descriptor.free_form_name, descriptor.telephone_number
    )


def _descriptor(
    octet: int, formal_name: ORName | None, free_form_name: str | None, telephone: str | None
) -> bytes:
    if free_form_name is None and telephone is None:  # the usual: a formal name only
        return tlv_bytes(octet, b"" if formal_name is None else _write_orname(formal_name))
    parts = [] if formal_name is None else [_write_orname(formal_name)]
    if free_form_name is not None:
        parts.append(tlv_bytes(0x80, _teletex(free_form_name, "FreeFormName")))  # [0]
    if telephone is not None:
        parts.append(tlv_bytes(0x81, printable(telephone, "TelephoneNumber", 0, 32)))  # [1]
    return _constructed(octet, parts)


def _extension_parts(view: View, tlv: FlatTlv) -> tuple[str, FlatTlv | None]:
    if tlv[0] != SEQUENCE_OCTET:
        raise DecodeError("an IPMSExtension is a SEQUENCE", where="IPMSExtension")
    found = ber.items(view, tlv, "IPMSExtension")
    if not 1 <= len(found) <= 2:
        raise DecodeError(f"{len(found)} components, not 1 or 2", where="IPMSExtension")
    return ber.oid(view, found[0], "IPMSExtension.type"), found[1] if len(found) == 2 else None


def _decode_extension(view: View, tlv: FlatTlv) -> RawExtension:
    oid, value = _extension_parts(view, tlv)
    return RawExtension(type=oid, value=None if value is None else bytes(view[value[1] : value[4]]))


def decode_extensions(view: View, tlv: FlatTlv) -> tuple[RawExtension, ...]:
    """``SET OF IPMSExtension``, ``IPMSExtension ::= SEQUENCE {type OBJECT IDENTIFIER,
    value ANY DEFAULT NULL}`` (X.420 7.1.5)."""
    return tuple(_decode_extension(view, item) for item in ber.items(view, tlv, "extensions"))


def _encode_extension(extension: RawExtension) -> bytes:
    oid = ber.oid_tlv(extension.type)
    if extension.value is None:
        return tlv_bytes(SEQUENCE_OCTET, oid)
    value = _check_single(extension.value, "IPMSExtension.value")
    return _constructed(SEQUENCE_OCTET, (oid, value))


def encode_extensions(extensions: Iterable[RawExtension], octet: int) -> bytes:
    """A SET OF IPMSExtension under ``octet``."""
    return _constructed(octet, map(_encode_extension, extensions))


# --- RecipientSpecifier (X.420 7.1.2) -------------------------------------------------

_RECIPIENT: Final = {
    context(0, False): "recipient",
    context(1, False): "notification-requests",
    context(2, False): "reply-requested",
    context(3, False): "recipient-extensions",
}


def _decode_recipient(view: View, tlv: FlatTlv) -> Recipient:
    found = ber.members(view, tlv, _RECIPIENT, "RecipientSpecifier")
    if "recipient" not in found:
        raise DecodeError("recipient missing", where="RecipientSpecifier")
    name, free, phone = _descriptor_fields(view, found["recipient"])
    requests = found.get("notification-requests")
    reply = found.get("reply-requested")
    extensions = found.get("recipient-extensions")
    flags = ber.bits(view, requests, "NotificationRequests") if requests is not None else ()
    recipient = _new(Recipient)  # every field read: not through __init__ (see Heading)
    recipient.__dict__.update(
        name=name,
        free_form_name=free,
        telephone_number=phone,
        notification_requests=(
            NotificationRequests(sum(1 << bit for bit in flags if bit < len(NotificationRequests)))
            if flags
            else NO_REQUESTS
        ),
        reply_requested=reply is not None and ber.boolean(view, reply, "reply-requested"),
        extensions=() if extensions is None else decode_extensions(view, extensions),
    )
    return recipient


def _encode_recipient(recipient: Recipient) -> bytes:
    parts = [
        _descriptor(
            0xA0, recipient.name, recipient.free_form_name, recipient.telephone_number
        )  # [0] ORDescriptor
    ]
    requests = recipient.notification_requests
    if requests is not NO_REQUESTS:  # (the default: nothing to check or write)
        flags = NotificationRequests(requests)
        if flags:
            length = int(flags).bit_length()  # a named bit list ends at its last one bit
            bits = ber.numbers_to_bits((n for n in range(length) if flags >> n & 1), length)
            parts.append(tlv_bytes(0x81, ber.bits_contents(bits, length)))
    if recipient.reply_requested:
        parts.append(b"\x82\x01\xff")  # [2] BOOLEAN TRUE
    if recipient.extensions:
        parts.append(encode_extensions(recipient.extensions, 0xA3))
    return _constructed(SET_OCTET, parts)


# --- STANAG 4406 heading extension values ---------------------------------------------
# Each _load_* reads a value in place and raises DecodeError when it is not of its type.


def _expect(tlv: FlatTlv, octet: int, what: str) -> None:
    if tlv[0] != octet:
        raise DecodeError(f"expected tag 0x{octet:02x}", where=what)


def _load_precedence(view: View, tlv: FlatTlv) -> Precedence:
    if tlv[0] != INTEGER_OCTET:
        _expect(tlv, INTEGER_OCTET, "MMHSPrecedence")
    return read_enum(view, tlv, Precedence, "MMHSPrecedence")


def _dump_precedence(value: Precedence) -> bytes:
    if type(value) is not Precedence:  # (a member is one already: no lookup)
        value = Precedence(value)
    return tlv_bytes(INTEGER_OCTET, _integer(value, "MMHSPrecedence"))


def _load_string(view: View, tlv: FlatTlv) -> str:
    if tlv[0] & ~ber.CONSTRUCTED != PRINTABLE_OCTET:
        raise DecodeError("expected a PrintableString", where="MilitaryString")
    return ber.text(view, tlv, "MilitaryString")


def _dump_string(value: str) -> bytes:
    return tlv_bytes(PRINTABLE_OCTET, _military(value, "MilitaryString"))


def _strings(view: View, tlv: FlatTlv, what: str) -> tuple[str, ...]:
    return tuple(_load_string(view, item) for item in ber.items(view, tlv, what))


def _load_strings(view: View, tlv: FlatTlv) -> tuple[str, ...]:
    if tlv[0] != SEQUENCE_OCTET:
        _expect(tlv, SEQUENCE_OCTET, "SEQUENCE OF MilitaryString")
    return _strings(view, tlv, "SEQUENCE OF MilitaryString")


def _dump_strings(values: tuple[str, ...]) -> bytes:
    return _constructed(SEQUENCE_OCTET, map(_dump_string, values))


_MESSAGE_TYPE: Final = {context(0, False): "type", context(1, False): "identifier"}


def _load_message_type(view: View, tlv: FlatTlv) -> MessageType:
    if tlv[0] != SET_OCTET:
        _expect(tlv, SET_OCTET, "MessageType")
    found = ber.members(view, tlv, _MESSAGE_TYPE, "MessageType")
    if "type" not in found:
        raise DecodeError("type missing", where="MessageType")
    identifier = found.get("identifier")
    return MessageType(
        type=ber.integer(view, found["type"], "TypeMessage"),
        identifier=None if identifier is None else ber.text(view, identifier, "MessageIdentifier"),
    )


def _dump_message_type(value: MessageType) -> bytes:
    parts = [tlv_bytes(0x80, _integer(value.type, "TypeMessage"))]  # [0]
    if value.identifier is not None:
        identifier = _military(value.identifier, "MessageIdentifier")
        parts.append(tlv_bytes(0x81, identifier))  # [1]
    return _constructed(SET_OCTET, parts)


def _load_descriptors(view: View, tlv: FlatTlv) -> tuple[ORDescriptor, ...]:
    _expect(tlv, SEQUENCE_OCTET, "ExemptedAddressSeq")
    found = ber.items(view, tlv, "ExemptedAddressSeq")
    if any(item[0] != SET_OCTET for item in found):
        raise DecodeError("expected ORDescriptors", where="ExemptedAddressSeq")
    return tuple(decode_descriptor(view, item) for item in found)


def _dump_descriptors(values: tuple[ORDescriptor, ...]) -> bytes:
    return _constructed(SEQUENCE_OCTET, map(encode_descriptor, values))


def _load_time(view: View, tlv: FlatTlv, deviations: Deviations | None = None) -> datetime:
    what = "ExtendedAuthorisationInfo"
    if tlv[0] & ~ber.CONSTRUCTED != UTCTIME_OCTET:
        raise DecodeError("expected a UTCTime", where=what)
    return ber.parse_lenient_utctime(ber.text(view, tlv, what), what, deviations)


def _dump_time(value: datetime) -> bytes:
    return tlv_bytes(UTCTIME_OCTET, utctime_bytes(value, "ExtendedAuthorisationInfo"))


_DISTRIBUTION: Final = {context(0, False): "sics", context(1, False): "dist-Extensions"}


def _load_dist_extension(view: View, tlv: FlatTlv) -> DistributionExtension:
    what = "DistributionExtensionField"
    found = ber.items(view, tlv, what) if tlv[0] == INSTANCE_OF_OCTET else []
    if len(found) != 2 or found[1][0] != context(0):
        raise DecodeError("expected INSTANCE OF {type-id, [0] value}", where=what)
    value = ber.items(view, found[1], what)
    if len(value) != 1:
        raise DecodeError("[0] holds one value", where=what)
    return DistributionExtension(
        type_id=ber.oid(view, found[0], what), value=bytes(view[value[0][1] : value[0][4]])
    )


def _load_distribution(view: View, tlv: FlatTlv) -> DistributionCodes:
    _expect(tlv, SET_OCTET, "DistributionCodes")
    found = ber.members(view, tlv, _DISTRIBUTION, "DistributionCodes")
    sics = found.get("sics")
    extensions = found.get("dist-Extensions")
    return DistributionCodes(
        sics=() if sics is None else _strings(view, sics, "Sic"),
        dist_extensions=()
        if extensions is None
        else tuple(
            _load_dist_extension(view, item)
            for item in ber.items(view, extensions, "dist-Extensions")
        ),
    )


def _check_single(value: bytes, what: str) -> bytes:
    try:
        ber.single(value, what)
    except DecodeError as exc:
        raise EncodeError(f"not one BER value: {exc.why}", where=what) from None
    return value


def _dump_dist_extension(value: DistributionExtension) -> bytes:
    data = _check_single(value.value, "DistributionExtensionField.value")
    parts = (ber.oid_tlv(value.type_id), tlv_bytes(context(0), data))
    return _constructed(INSTANCE_OF_OCTET, parts)


def _dump_distribution(value: DistributionCodes) -> bytes:
    parts = []
    if value.sics:
        sics = (tlv_bytes(PRINTABLE_OCTET, printable(sic, "Sic", 3, 8)) for sic in value.sics)
        parts.append(_constructed(context(0), sics))
    if value.dist_extensions:
        parts.append(_constructed(context(1), map(_dump_dist_extension, value.dist_extensions)))
    return _constructed(SET_OCTET, parts)


@dataclass(frozen=True, slots=True)
class _Extension:
    """A STANAG 4406 heading extension modelled as a Heading field."""

    field: str
    oid: str
    load: Callable[[View, FlatTlv], Any]
    dump: Callable[[Any], bytes]
    oid_tlv: bytes = dataclasses.field(init=False)
    """The encoding of ``oid`` (written with every value)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "oid_tlv", ber.oid_tlv(self.oid))


def _mm(arc: int) -> str:
    return f"{ID_MM}.{arc}"


# STANAG 4406 Annex A: id-nato-mmhs-mm-<name> = {id-mm n}, in the order written.
_EXTENSIONS: Final = (
    _Extension("primary_precedence", _mm(0), _load_precedence, _dump_precedence),
    _Extension("copy_precedence", _mm(1), _load_precedence, _dump_precedence),
    _Extension("message_type", _mm(2), _load_message_type, _dump_message_type),
    _Extension("exempted_addresses", _mm(4), _load_descriptors, _dump_descriptors),
    _Extension("extended_authorisation_info", _mm(5), _load_time, _dump_time),
    _Extension("distribution_codes", _mm(6), _load_distribution, _dump_distribution),
    _Extension("handling_instructions", _mm(7), _load_strings, _dump_strings),
    _Extension("message_instructions", _mm(8), _load_strings, _dump_strings),
    _Extension("originator_reference", _mm(10), _load_string, _dump_string),
    _Extension("acp127_message_identifier", _mm(13), _load_string, _dump_string),
    _Extension("originator_plad", _mm(14), _load_string, _dump_string),
)
_EXTENSIONS_BY_OID: Final = {extension.oid: extension for extension in _EXTENSIONS}
_EXTENSIONS_BY_TLV: Final = {extension.oid_tlv: extension for extension in _EXTENSIONS}


def _modelled(view: View, tlv: FlatTlv) -> tuple[_Extension, FlatTlv] | None:
    """A modelled extension and its value, when the IPMSExtension is a SEQUENCE of a
    known OBJECT IDENTIFIER (found by its encoding) and one value; None: not one of
    those, for :func:`_extension_parts` to read (and to refuse, in its words)."""
    key, _, body, end, _ = tlv
    if key != SEQUENCE_OCTET or body + 2 > end or view[body + 1] > 0x7F:
        return None
    start = body + 2 + view[body + 1]  # the value's (past the identifier)
    extension = _EXTENSIONS_BY_TLV.get(bytes(view[body:start])) if start < end else None
    if extension is None:
        return None
    length = end - start - 2  # the value's, if it fills the rest with a short length
    if 0 <= length < 0x80 and view[start + 1] == length and view[start] & 0x1F != 0x1F:
        return extension, (view[start], start, start + 2, end, end)  # (as items() reads it)
    value = ber.read(view, start, end, 1)
    return (extension, value) if value[4] == end else None


def _heading_extensions(
    view: View, tlv: FlatTlv, deviations: Deviations | None = None
) -> dict[str, Any]:
    """Heading keyword arguments from ``extensions [15]``: the modelled extensions,
    each read in place, and ``other_extensions``; a tolerated time is appended to
    ``deviations``."""
    fields: dict[str, Any] = {}
    others: list[RawExtension] = []
    for item in ber.items(view, tlv, "extensions"):
        modelled = _modelled(view, item)  # (the usual: no OID to decode)
        if modelled is None:
            oid, value = _extension_parts(view, item)
            extension = _EXTENSIONS_BY_OID.get(oid)
        else:
            extension, value = modelled
            oid = extension.oid
        if extension is not None and value is not None and extension.field not in fields:
            try:
                if extension.load is _load_time:  # (the one that may tolerate a form)
                    loaded = _load_time(view, value, deviations)
                else:
                    loaded = extension.load(view, value)
            except (DecodeError, ValueError):
                loaded = None  # not a value of the extension's type: kept raw
            if loaded is not None:
                fields[extension.field] = loaded
                continue
        others.append(RawExtension(type=oid, value=None if value is None else _raw(view, value)))
    fields["other_extensions"] = tuple(others)
    return fields


def _raw(view: View, tlv: FlatTlv) -> bytes:
    return bytes(view[tlv[1] : tlv[4]])


def _heading_extension_bytes(heading: Heading) -> list[bytes]:
    encoded = []
    for extension in _EXTENSIONS:
        value = getattr(heading, extension.field)
        if value is not None and value != ():
            encoded.append(tlv_bytes(SEQUENCE_OCTET, extension.oid_tlv + extension.dump(value)))
    if heading.other_extensions:
        encoded.extend(map(_encode_extension, heading.other_extensions))
    return encoded


# --- Heading (X.420 7.2) --------------------------------------------------------------

_HEADING_FIELDS: Final = (
    "originator", "authorizing-users", "primary-recipients", "copy-recipients",
    "blind-copy-recipients", "replied-to-IPM", "obsoleted-IPMs", "related-IPMs", "subject",
    "expiry-time", "reply-time", "reply-recipients", "importance", "sensitivity",
    "auto-forwarded", "extensions",
)  # fmt: skip
_HEADING: Final = {
    _key(IPM_IDENTIFIER_OCTET): "this-IPM",
    **{context(number, False): name for number, name in enumerate(_HEADING_FIELDS)},
}


def _subject(view: View, tlv: FlatTlv) -> str:
    inner = ber.items(view, tlv, "subject")
    if len(inner) != 1:
        raise DecodeError("[8] holds one TeletexString", where="subject")
    return ber.text(view, inner[0], "subject", "latin-1")


def _importance(view: View, tlv: FlatTlv) -> Importance:
    return read_enum(view, tlv, Importance, "importance")


def _sensitivity(view: View, tlv: FlatTlv) -> Sensitivity:
    return read_enum(view, tlv, Sensitivity, "sensitivity")


def _auto_forwarded(view: View, tlv: FlatTlv) -> bool:
    return ber.boolean(view, tlv, "auto-forwarded")


# The members after this-IPM but the times and extensions (read with the caller's
# deviations list), in the order they are read: (member, Heading field, reader, SEQUENCE
# OF).
_HEADING_READERS: Final[tuple[tuple[str, str, Callable[[View, FlatTlv], Any], bool], ...]] = (
    ("originator", "originator", decode_descriptor, False),
    ("authorizing-users", "authorizing_users", decode_descriptor, True),
    ("primary-recipients", "primary_recipients", _decode_recipient, True),
    ("copy-recipients", "copy_recipients", _decode_recipient, True),
    ("blind-copy-recipients", "blind_copy_recipients", _decode_recipient, True),
    ("replied-to-IPM", "replied_to_ipm", decode_ipm_identifier, False),
    ("obsoleted-IPMs", "obsoleted_ipms", decode_ipm_identifier, True),
    ("related-IPMs", "related_ipms", decode_ipm_identifier, True),
    ("subject", "subject", _subject, False),
    ("reply-recipients", "reply_recipients", decode_descriptor, True),
    ("importance", "importance", _importance, False),
    ("sensitivity", "sensitivity", _sensitivity, False),
    ("auto-forwarded", "auto_forwarded", _auto_forwarded, False),
)
_HEADING_TIMES: Final = (("expiry-time", "expiry_time"), ("reply-time", "reply_time"))


def decode_heading(view: View, tlv: FlatTlv, deviations: Deviations | None = None) -> Heading:
    """``Heading ::= SET {this-IPM ThisIPMField, originator [0] ..., ...,
    extensions [15] ExtensionsField DEFAULT {}}``; what was tolerated (a time's form, a
    member's tag in the long form) is appended to ``deviations`` when it is given."""
    found = ber.members(view, tlv, _HEADING, "Heading")
    this_ipm = found.get("this-IPM")
    if this_ipm is None:
        raise DecodeError("this-IPM missing", where="Heading")
    fields: dict[str, Any] = {"this_ipm": decode_ipm_identifier(view, this_ipm)}
    get = found.get
    for name, field, read, many in _HEADING_READERS:
        member = get(name)
        if member is None:
            continue  # absent: the field's default
        if many:
            fields[field] = tuple([read(view, item) for item in ber.items(view, member, name)])
        else:
            fields[field] = read(view, member)
    for name, field in _HEADING_TIMES:
        member = get(name)
        if member is not None:
            text = ber.text(view, member, name)
            fields[field] = ber.parse_lenient_utctime(text, name, deviations)
    extensions = get("extensions")
    if extensions is not None:
        fields.update(_heading_extensions(view, extensions, deviations))
    if deviations is not None:
        _note_long_tags(view, found, deviations)
    heading = _new(Heading)  # (not through __init__: see _HEADING_DEFAULTS)
    values = heading.__dict__
    values.update(_HEADING_DEFAULTS)
    values.update(fields)
    return heading


def _note_long_tags(view: View, found: dict[str, FlatTlv], deviations: Deviations) -> None:
    """List the heading's members whose tag number is written in the long form."""
    for name, item in found.items():
        if view[item[1]] & 0x1F == 0x1F:
            ber.note_long_tag(view, item[1], ber.tag_of(item[0]), f"Heading.{name}", deviations)


def _many(octet: int, items: tuple[Any, ...], write: Callable[[Any], bytes]) -> bytes:
    return tlv_bytes(octet, b"".join(map(write, items)))


def encode_heading(heading: Heading) -> bytes:
    """The Heading SET, members in DER order, DEFAULT values left out."""
    # Straight through, context tags written out: most members are absent.
    parts = [encode_ipm_identifier(heading.this_ipm)]
    append = parts.append
    if heading.originator is not None:
        append(encode_descriptor(heading.originator, 0xA0))  # [0]
    if heading.authorizing_users:
        append(_many(0xA1, heading.authorizing_users, encode_descriptor))
    if heading.primary_recipients:
        append(_many(0xA2, heading.primary_recipients, _encode_recipient))
    if heading.copy_recipients:
        append(_many(0xA3, heading.copy_recipients, _encode_recipient))
    if heading.blind_copy_recipients:
        append(_many(0xA4, heading.blind_copy_recipients, _encode_recipient))
    if heading.replied_to_ipm is not None:
        append(encode_ipm_identifier(heading.replied_to_ipm, 0xA5))
    if heading.obsoleted_ipms:
        append(_many(0xA6, heading.obsoleted_ipms, encode_ipm_identifier))
    if heading.related_ipms:
        append(_many(0xA7, heading.related_ipms, encode_ipm_identifier))
    if heading.subject is not None:
        append(tlv_bytes(0xA8, tlv_bytes(TELETEX_OCTET, _teletex(heading.subject, "subject"))))
    if heading.expiry_time is not None:
        append(tlv_bytes(0x89, utctime_bytes(heading.expiry_time, "expiry-time")))
    if heading.reply_time is not None:
        append(tlv_bytes(0x8A, utctime_bytes(heading.reply_time, "reply-time")))
    if heading.reply_recipients:
        append(_many(0xAB, heading.reply_recipients, encode_descriptor))
    if heading.importance != _NORMAL:
        append(tlv_bytes(0x8C, _integer(Importance(heading.importance), "importance")))
    if heading.sensitivity is not None:
        append(tlv_bytes(0x8D, _integer(Sensitivity(heading.sensitivity), "sensitivity")))
    if heading.auto_forwarded:
        append(b"\x8e\x01\xff")  # [14] BOOLEAN TRUE
    extensions = _heading_extension_bytes(heading)
    if extensions:
        append(_constructed(0xAF, extensions))  # [15]
    return _constructed(SET_OCTET, parts)


_NORMAL: Final = Importance.NORMAL
