"""The security categories of a label as policies define them: the tag encodings of
SDN.801c and ACP 145(A), which the Open XML SPIF's tag types name.

A SecurityCategory (X.411 8.5.9, RFC 2634 5.3) is a type OID and a value; these types'
values name a tag set (an OID of the SPIF) and its categories by LACV::

    restrictiveBitMap   2.16.840.1.101.2.1.8.3.0  RestrictiveTag ::= SEQUENCE {
                                                      tagName OBJECT IDENTIFIER,
                                                      attributeFlags BIT STRING }
    enumeratedPermissive 2.16.840.1.101.2.1.8.3.1 EnumeratedTag ::= SEQUENCE {
                                                      tagName OBJECT IDENTIFIER,
                                                      attributeList SET OF INTEGER }
    permissiveBitMap    2.16.840.1.101.2.1.8.3.2  PermissiveTag ::= SEQUENCE {
                                                      tagName OBJECT IDENTIFIER,
                                                      attributeFlags BIT STRING }
    informative         2.16.840.1.101.2.1.8.3.3  InformativeTag ::= SEQUENCE {
                                                      tagName OBJECT IDENTIFIER,
                                                      field CHOICE { bitSetAttributes
                                                      BIT STRING, securityAttributes
                                                      SET OF INTEGER } }
    enumeratedRestrictive 2.16.840.1.101.2.1.8.3.4 EnumeratedTag

Public API::

    decode_categories(categories) -> frozenset[CategoryRef]      (DecodeError)
    encode_categories(refs) -> tuple[SecurityCategory, ...]
    TAG_TYPE_OIDS
"""

from __future__ import annotations

from collections.abc import Iterable

from p1 import ber
from p1.ber import Tlv
from p1.errors import DecodeError
from p1.mts.security_label import SecurityCategory
from p1.security.spif import CategoryRef, TagType

__all__ = ["TAG_TYPE_OIDS", "decode_categories", "encode_categories"]

_ARC = "2.16.840.1.101.2.1.8.3"
TAG_TYPE_OIDS = {
    TagType.RESTRICTIVE: f"{_ARC}.0",
    TagType.ENUMERATED_PERMISSIVE: f"{_ARC}.1",
    TagType.PERMISSIVE: f"{_ARC}.2",
    TagType.INFORMATIVE: f"{_ARC}.3",
    TagType.ENUMERATED_RESTRICTIVE: f"{_ARC}.4",
}
"""The SecurityCategory type of each tag type (ACP 145(A))."""
_TYPES = {oid: tag_type for tag_type, oid in TAG_TYPE_OIDS.items()}
_BIT_MAPS = (TagType.RESTRICTIVE, TagType.PERMISSIVE)
_MAX_LACV = 1 << 16
"""The highest LACV a bit map or list is read to: a label naming more is refused."""


def decode_categories(categories: Iterable[SecurityCategory]) -> frozenset[CategoryRef]:
    """Every category the label's SecurityCategories name; a category of a type that is
    none of the five, or a value that does not parse, raises DecodeError."""
    found: set[CategoryRef] = set()
    for index, category in enumerate(categories):
        what = f"security-categories[{index}]"
        tag_type = _TYPES.get(category.type)
        if tag_type is None:
            raise DecodeError(f"category type {category.type} is not one a SPIF defines", what)
        found.update(_decode_value(tag_type, category.value, what))
    return frozenset(found)


def _decode_value(tag_type: TagType, value: bytes, what: str) -> Iterable[CategoryRef]:
    parts = ber.children(ber.expect(ber.read_single(value, what), ber.SEQUENCE, what), what)
    if len(parts) != 2:
        raise DecodeError(f"{len(parts)} members, not tagName and its attributes", what)
    tag_set = ber.read_oid(ber.expect(parts[0], ber.OBJECT_IDENTIFIER, what), f"{what}.tagName")
    lacvs = _attributes(tag_type, parts[1], f"{what}.attributes")
    return (CategoryRef(tag_set, tag_type, lacv) for lacv in lacvs)


def _attributes(tag_type: TagType, tlv: Tlv, what: str) -> frozenset[int]:
    if tag_type in _BIT_MAPS or (tag_type is TagType.INFORMATIVE and tlv.tag == ber.BIT_STRING):
        octets, length = ber.read_bits(ber.expect(tlv, ber.BIT_STRING, what), what)
        if length > _MAX_LACV:
            raise DecodeError(f"a bit map of {length} bits", what)
        return ber.bits_to_numbers(octets, length)
    items = ber.children(ber.expect(tlv, ber.SET, what), what)
    numbers = [ber.read_int(ber.expect(i, ber.INTEGER, what), what) for i in items]
    if any(not 0 <= n <= _MAX_LACV for n in numbers):
        raise DecodeError(f"a security attribute outside 0..{_MAX_LACV}", what)
    return frozenset(numbers)


def encode_categories(refs: Iterable[CategoryRef]) -> tuple[SecurityCategory, ...]:
    """SecurityCategories naming ``refs``: one per tag set and type, in DER."""
    groups: dict[tuple[str, TagType], set[int]] = {}
    for ref in refs:
        groups.setdefault((ref.tag_set, ref.tag_type), set()).add(ref.lacv)
    ordered = sorted(groups.items(), key=lambda item: (item[0][0], item[0][1].value))
    return tuple(
        SecurityCategory(TAG_TYPE_OIDS[tag_type], _encode_value(tag_set, tag_type, lacvs))
        for (tag_set, tag_type), lacvs in ordered
    )


def _encode_value(tag_set: str, tag_type: TagType, lacvs: set[int]) -> bytes:
    name = ber.oid_tlv(tag_set)
    if tag_type in _BIT_MAPS:
        length = max(lacvs) + 1  # DER: no trailing zero bits
        bits = ber.bits_contents(ber.numbers_to_bits(lacvs, length), length)
        return ber.constructed(ber.SEQUENCE, (name, ber.tlv(ber.BIT_STRING, bits)))
    # DER sorts a SET OF by its elements' encodings
    values = sorted(ber.tlv(ber.INTEGER, ber.int_contents(n)) for n in lacvs)
    return ber.constructed(ber.SEQUENCE, (name, ber.constructed(ber.SET, values)))
