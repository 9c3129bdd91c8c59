"""Runtime fixes to asn1tools 0.169.0's BER codec, applied explicitly by :func:`apply`.

Each fix corrects a defect that changes or rejects bytes on the wire; each has a test in
``tests/p1/test_asn1_fixes.py`` showing the bytes before and after.

B1  X.680 31.2.7: a tag on an open type (ANY) or on a CHOICE is always explicit, whatever
    the module's default.  asn1tools treats ``[2] ANY`` in an IMPLICIT TAGS module as
    implicit and writes ``30 03 02 01 05`` where ``a2 03 02 01 05`` is due.
B2  X.680 8.6 / X.690 8.11: a SET may hold an untagged CHOICE (or ANY) member; its
    canonical position is that of its smallest alternative tag.  asn1tools crashes while
    sorting such a SET (``'NoneType' object is not subscriptable``).
B6  X.690 8.1.3.6: an open type may arrive with indefinite length (``28 80 a0 80 ...``);
    asn1tools' ANY decoder insists on a definite length.
B7  X.690 8.1.3.6: a SEQUENCE or SET with an extension marker may arrive with indefinite
    length.  After the root members asn1tools has consumed the end-of-contents octets and
    then reads the extension additions from the bytes of the *enclosing* value, so
    ``Outer{x Inner{a, ..., b [5]}, y [5]}`` decodes ``y`` into ``x.b``.
B8  An extension addition whose value cannot be encoded is silently left out of the
    SEQUENCE or SET (asn1tools swallows the error, and every later addition with it).
    Now only additions the value does not carry are left out; a bad one is an error.
P1  Encoding copies every nested value three times (contents, tag+length+contents,
    extend); with a 10 MB body nested eight deep that is the whole cost.  The fixed
    encoder writes each level once.

asn1tools' internals are patched, so :func:`apply` refuses any release but the one
these fixes were written and tested against.
"""

from __future__ import annotations

from typing import Any

import asn1tools
from asn1tools.codecs import ber
from asn1tools.codecs import compiler as base_compiler

ASN1TOOLS_VERSION = "0.169.0"
FIXES_VERSION = "3"

_applied = False


def apply() -> None:
    """Install all fixes into asn1tools (idempotent)."""
    global _applied
    if _applied:
        return
    if asn1tools.__version__ != ASN1TOOLS_VERSION:
        raise RuntimeError(
            f"p1.asn1.fixes were written for asn1tools {ASN1TOOLS_VERSION}, "
            f"found {asn1tools.__version__}: pin asn1tools=={ASN1TOOLS_VERSION}"
        )
    _fix_b1_open_type_tags_explicit()
    _fix_b2_set_order_untagged_choice()
    _fix_b6_indefinite_any()
    _fix_b7_indefinite_extensible_members()
    _fix_b8_additions_fail_loudly()
    _fix_p1_single_copy_encode()
    _applied = True


# --- B1 -------------------------------------------------------------------------------

_ALWAYS_EXPLICIT = frozenset({"CHOICE", "ANY", "ANY DEFINED BY"})


def _fix_b1_open_type_tags_explicit() -> None:
    original = base_compiler.Compiler.pre_process_tags_type

    def pre_process_tags_type(
        self: Any, type_descriptor: dict[str, Any], module_tags: str, module_name: str
    ) -> Any:
        tag = type_descriptor.get("tag")
        if tag is not None and "kind" not in tag:
            resolved = self.resolve_type_name(type_descriptor["type"], module_name)
            if resolved in _ALWAYS_EXPLICIT:
                tag["kind"] = "EXPLICIT"
        return original(self, type_descriptor, module_tags, module_name)

    base_compiler.Compiler.pre_process_tags_type = pre_process_tags_type


# --- B2 -------------------------------------------------------------------------------

_LAST = b"\xff\xff\xff\xff"  # sorts an ANY member after every real tag


def _member_sort_key(member: Any) -> bytes:
    """The canonical-order key of a SET member: its tag, primitive form (X.690 8.11)."""
    inner = member
    if isinstance(inner, ber.Recursive):
        if inner.tag_number is not None:
            return _member_sort_key_from_tag(ber.encode_tag(inner.tag_number, inner.tag_flags))
        inner = inner.inner if inner.inner is not None else inner
    if inner.tag is not None:
        return _member_sort_key_from_tag(inner.tag)
    if isinstance(inner, ber.Choice):
        keys = [_member_sort_key_from_tag(t) for t in inner.tag_to_member]
        return min(keys) if keys else _LAST
    return _LAST


def _member_sort_key_from_tag(tag: bytes | bytearray) -> bytes:
    return bytes([tag[0] & ~ber.Encoding.CONSTRUCTED]) + bytes(tag[1:])


def _fix_b2_set_order_untagged_choice() -> None:
    ber.get_tag_no_encoding = _member_sort_key


# --- B6 -------------------------------------------------------------------------------


def _end_of_value(data: bytearray, offset: int) -> int:
    """Offset just past the TLV at ``offset``, walking indefinite-length values."""
    offset = ber.skip_tag(data, offset)
    length, offset = ber.decode_length(data, offset, enforce_definite=False)
    if length is not None:
        return int(offset + length)
    while not ber.detect_end_of_contents_tag(data, offset):
        offset = _end_of_value(data, offset)
    return offset + 2


def _any_decode(self: Any, data: bytearray, offset: int, values: Any = None) -> Any:
    end = _end_of_value(data, offset)
    return bytes(data[offset:end]), end


def _fix_b6_indefinite_any() -> None:
    ber.Any.decode = _any_decode


# --- B7 -------------------------------------------------------------------------------


def _members_decode_content(self: Any, data: bytearray, offset: int, length: int | None) -> Any:
    end = None if length is None else offset + length
    values: dict[str, Any] = {}
    offset, out_of_data = self.decode_members(self.root_members, data, values, offset, end)
    if self.additions:
        if out_of_data and end is None:
            # The end-of-contents octets are behind us: what follows is not ours.
            _fill_defaults(ber.flatten(self.additions), values)
        else:
            offset, out_of_data = self.decode_members(
                ber.flatten(self.additions), data, values, offset, end, ignore_missing=True
            )
    if out_of_data:
        return values, offset
    if end is None:
        raise ber.NoEndOfContentsTagError(
            "Could not find end-of-contents tag for indefinite length field.", offset=offset
        )
    return values, end


def _fill_defaults(members: Any, values: dict[str, Any]) -> None:
    for member in members:
        if member.has_default():
            values[member.name] = member.get_default()


def _fix_b7_indefinite_extensible_members() -> None:
    ber.MembersType.decode_content = _members_decode_content


# --- B8 -------------------------------------------------------------------------------


def _encode_additions(self: Any, data: dict[str, Any], encoded: bytearray) -> None:
    for addition in self.additions:
        members = addition if isinstance(addition, list) else [addition]
        if not any(member.name in data for member in members):
            continue  # a value from an earlier version carries none of this addition
        for member in members:
            self.encode_member(member, data, encoded)


def _fix_b8_additions_fail_loudly() -> None:
    ber.MembersType.encode_additions = _encode_additions


# --- P1 -------------------------------------------------------------------------------


def _standard_encode(self: Any, data: Any, encoded: bytearray, values: Any = None) -> None:
    contents = self.encode_content(data, values=values)
    encoded += self.tag
    encoded += ber.encode_length_definite(len(contents))
    encoded.extend(contents)  # contents may be a list of ints (OBJECT IDENTIFIER)


def _fix_p1_single_copy_encode() -> None:
    ber.StandardEncodeMixin.encode = _standard_encode
