"""The field codecs the IPM heading, its STANAG 4406 extensions and the IPN share
(X.420 clause 7.1), by hand over BER: IPMIdentifier, ORDescriptor, IPMSExtension, and
the checks of the values they hold.

Part of the heading codec (:mod:`p1.ipms.heading`, which re-exports the public names
the IPN codec uses).  Writing follows DER's order of SET members; reading accepts any
BER.  PrintableString values are checked on writing; TeletexString (free-form name) is
ISO 8859-1 here.  O/R names go through :mod:`p1.mts.orname`.

API (``view`` and ``tlv`` as in the tuple form of :func:`p1.ber.read`)::

    decode_ipm_identifier(view, tlv) -> IPMIdentifier  encode_ipm_identifier(id, octet)
    decode_descriptor(view, tlv) -> ORDescriptor       encode_descriptor(d, octet)
    descriptor_fields(view, tlv) -> (name, free, phone) descriptor_bytes(octet, ...)
    decode_extensions(view, tlv) -> (RawExtension...)  encode_extensions(exts, octet)
    extension_parts(view, tlv) -> (oid, value tlv)     encode_extension(ext)
    printable, military, teletex, integer_bytes, utctime_bytes   (values to octets)
    read_enum(view, tlv, cls, what), expect_octet, check_single, value_bytes
    context(number, constructed), member_key(octet), constructed(octet, parts)
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Final, TypeVar, cast

from p1 import ber
from p1.ber import FlatTlv, View, tlv_bytes
from p1.errors import DecodeError, EncodeError
from p1.ipms.models import IPMIdentifier, ORDescriptor, RawExtension
from p1.mts.orname import ORName, decode_orname, encode_orname

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


def context(number: int, constructed: bool = True) -> int:
    """The identifier octet of ``[number]`` (number below 31)."""
    return 0x80 | (ber.CONSTRUCTED if constructed else 0) | number


def member_key(octet: int) -> int:
    """``octet`` with the constructed bit clear: how SET members are looked up."""
    return octet & ~ber.CONSTRUCTED


def constructed(octet: int, parts: Iterable[bytes]) -> bytes:
    """A definite-length TLV under ``octet`` holding ``parts`` in order."""
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


def military(value: str, what: str) -> bytes:
    """MilitaryString ::= PrintableString (SIZE (1..ub-military-string)), 69."""
    return printable(value, what, 1, 69)


def teletex(value: str, what: str) -> bytes:
    """TeletexString octets: ISO 8859-1 here."""
    try:
        return value.encode("latin-1")
    except (UnicodeEncodeError, AttributeError):
        raise EncodeError(f"{value!r} is not ISO 8859-1 text", where=what) from None


def integer_bytes(value: int, what: str) -> bytes:
    """The contents of an INTEGER (X.690 8.3); a bool or non-integer is an EncodeError."""
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

_IPM_IDENTIFIER: Final = {member_key(ORNAME_OCTET): "user", PRINTABLE_OCTET: "local"}


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
    return constructed(octet, parts)


_DESCRIPTOR: Final = {
    member_key(ORNAME_OCTET): "formal-name",
    context(0, False): "free-form-name",
    context(1, False): "telephone-number",
}


def decode_descriptor(view: View, tlv: FlatTlv) -> ORDescriptor:
    """``ORDescriptor ::= SET {formal-name ORName OPTIONAL, free-form-name [0]
    FreeFormName OPTIONAL, telephone-number [1] TelephoneNumber OPTIONAL}``."""
    name, free, phone = descriptor_fields(view, tlv)
    return ORDescriptor(formal_name=name, free_form_name=free, telephone_number=phone)


def descriptor_fields(view: View, tlv: FlatTlv) -> tuple[ORName | None, str | None, str | None]:
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
    return descriptor_bytes(
        octet, descriptor.formal_name, descriptor.free_form_name, descriptor.telephone_number
    )


def descriptor_bytes(
    octet: int, formal_name: ORName | None, free_form_name: str | None, telephone: str | None
) -> bytes:
    """An ORDescriptor under ``octet`` from its three members."""
    if free_form_name is None and telephone is None:  # the usual: a formal name only
        return tlv_bytes(octet, b"" if formal_name is None else _write_orname(formal_name))
    parts = [] if formal_name is None else [_write_orname(formal_name)]
    if free_form_name is not None:
        parts.append(tlv_bytes(0x80, teletex(free_form_name, "FreeFormName")))  # [0]
    if telephone is not None:
        parts.append(tlv_bytes(0x81, printable(telephone, "TelephoneNumber", 0, 32)))  # [1]
    return constructed(octet, parts)


def extension_parts(view: View, tlv: FlatTlv) -> tuple[str, FlatTlv | None]:
    """The type of an IPMSExtension and its value (None when absent)."""
    if tlv[0] != SEQUENCE_OCTET:
        raise DecodeError("an IPMSExtension is a SEQUENCE", where="IPMSExtension")
    found = ber.items(view, tlv, "IPMSExtension")
    if not 1 <= len(found) <= 2:
        raise DecodeError(f"{len(found)} components, not 1 or 2", where="IPMSExtension")
    return ber.oid(view, found[0], "IPMSExtension.type"), found[1] if len(found) == 2 else None


def _decode_extension(view: View, tlv: FlatTlv) -> RawExtension:
    oid, value = extension_parts(view, tlv)
    return RawExtension(type=oid, value=None if value is None else bytes(view[value[1] : value[4]]))


def decode_extensions(view: View, tlv: FlatTlv) -> tuple[RawExtension, ...]:
    """``SET OF IPMSExtension``, ``IPMSExtension ::= SEQUENCE {type OBJECT IDENTIFIER,
    value ANY DEFAULT NULL}`` (X.420 7.1.5)."""
    return tuple(_decode_extension(view, item) for item in ber.items(view, tlv, "extensions"))


def encode_extension(extension: RawExtension) -> bytes:
    """One IPMSExtension SEQUENCE; the value must be one BER value."""
    oid = ber.oid_tlv(extension.type)
    if extension.value is None:
        return tlv_bytes(SEQUENCE_OCTET, oid)
    value = check_single(extension.value, "IPMSExtension.value")
    return constructed(SEQUENCE_OCTET, (oid, value))


def encode_extensions(extensions: Iterable[RawExtension], octet: int) -> bytes:
    """A SET OF IPMSExtension under ``octet``."""
    return constructed(octet, map(encode_extension, extensions))


def expect_octet(tlv: FlatTlv, octet: int, what: str) -> None:
    """A DecodeError unless the value's identifier octet is ``octet``."""
    if tlv[0] != octet:
        raise DecodeError(f"expected tag 0x{octet:02x}", where=what)


def check_single(value: bytes, what: str) -> bytes:
    """``value`` when it is one BER value, else an EncodeError."""
    try:
        ber.single(value, what)
    except DecodeError as exc:
        raise EncodeError(f"not one BER value: {exc.why}", where=what) from None
    return value


def value_bytes(view: View, tlv: FlatTlv) -> bytes:
    """The value exactly as received: identifier, length, contents (and end octets)."""
    return bytes(view[tlv[1] : tlv[4]])
