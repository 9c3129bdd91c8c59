"""Values and writers for TLVs in the tuple form of :func:`p1.ber.reader.read` (the IPM
codecs; X.690 8.1 to 8.23).

Part of :mod:`p1.ber`, which re-exports its public names.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime
from typing import Final

from p1.ber.reader import FlatTlv, View, octets, read, read_single
from p1.ber.tags import CONSTRUCTED, MAX_INT_OCTETS
from p1.ber.values import bits_to_numbers, oid_contents, parse_utctime, read_oid
from p1.ber.writer import SHORT_HEADERS, length_octets, short_headers
from p1.errors import DecodeError

_OID_OCTET: Final = 0x06


def members(view: View, tlv: FlatTlv, names: Mapping[int, str], what: str) -> dict[str, FlatTlv]:
    """The members of a SET by name; ``names`` maps identifier octets (constructed bit
    clear) to names.  An unknown or repeated member is an error."""
    key, _, pos, end, _ = tlv
    if not key & CONSTRUCTED:
        raise DecodeError("a constructed value was expected", where=what)
    found: dict[str, FlatTlv] = {}
    get = names.get
    problem = ""
    while pos < end:
        item = read(view, pos, end, 1)
        key = item[0]
        name = get(key & ~CONSTRUCTED)
        if name is None or name in found:
            # (Reported once every member has been read, as items() then the check would.)
            problem = problem or (
                f"unexpected member with tag 0x{view[pos]:02x}"
                if name is None
                else f"{name} appears twice"
            )
        else:
            found[name] = item
        pos = item[4]
    if problem:
        raise DecodeError(problem, where=what)
    return found


def exact(view: View, tlv: FlatTlv) -> bool:
    """The header is the one this package writes: one identifier octet and the
    shortest definite length."""
    key, start, body, end, stop = tlv
    return key < 0x100 and stop == end and body - start == _header_size(end - body)


def _header_size(length: int) -> int:
    return 2 if length < 0x80 else 2 + (length.bit_length() + 7) // 8


# --- primitive values -------------------------------------------------------------------


def text(view: View, tlv: FlatTlv, what: str, encoding: str = "ascii") -> str:
    """A character string (PrintableString, IA5String: ASCII; Teletex: ``latin-1``)."""
    try:
        return octets(view, tlv, what).decode(encoding)
    except UnicodeDecodeError as exc:
        raise DecodeError(
            f"octet 0x{exc.object[exc.start]:02x} is not {encoding}", where=what
        ) from None


def _primitive(view: View, tlv: FlatTlv, what: str) -> View:
    if tlv[0] & CONSTRUCTED:
        raise DecodeError("a primitive value was expected", where=what)
    return view[tlv[2] : tlv[3]]


def integer(view: View, tlv: FlatTlv, what: str) -> int:
    """An INTEGER or ENUMERATED (X.690 8.3, 8.4)."""
    key, _, body, end, _ = tlv
    if key & CONSTRUCTED:
        _primitive(view, tlv, what)  # (says what is wrong)
    contents = view[body:end]
    if not 0 < len(contents) <= MAX_INT_OCTETS:
        raise DecodeError(f"an integer of {len(contents)} octets", where=what)
    return int.from_bytes(contents, "big", signed=True)


def boolean(view: View, tlv: FlatTlv, what: str) -> bool:
    """A BOOLEAN: any non-zero octet is TRUE (X.690 8.2)."""
    contents = _primitive(view, tlv, what)
    if len(contents) != 1:
        raise DecodeError("a BOOLEAN has one content octet", where=what)
    return contents[0] != 0


@functools.lru_cache(maxsize=1024)
def _oid_text(contents: bytes) -> str:
    return read_oid(read_single(_oid_tlv(contents), "oid"), "oid")


def _oid_tlv(contents: bytes) -> bytes:
    return bytes((_OID_OCTET,)) + length_octets(len(contents)) + contents


def oid(view: View, tlv: FlatTlv, what: str) -> str:
    """An OBJECT IDENTIFIER as dotted text (X.690 8.19)."""
    if tlv[0] != _OID_OCTET:
        raise DecodeError(f"expected an OBJECT IDENTIFIER, found tag 0x{tlv[0]:02x}", where=what)
    try:
        return _oid_text(bytes(view[tlv[2] : tlv[3]]))
    except DecodeError as exc:
        raise DecodeError(exc.why, where=what) from None


def utctime(view: View, tlv: FlatTlv, what: str) -> datetime:
    """A UTCTime; the datetime remembers its text (:class:`p1.WireTime`)."""
    return parse_utctime(text(view, tlv, what), what)


def bits(view: View, tlv: FlatTlv, what: str) -> frozenset[int]:
    """The numbers of the one bits of a primitive BIT STRING (X.690 8.6)."""
    contents = _primitive(view, tlv, what)
    if not contents or contents[0] > 7 or (contents[0] and len(contents) == 1):
        raise DecodeError("malformed BIT STRING", where=what)
    length = (len(contents) - 1) * 8 - contents[0]
    return bits_to_numbers(bytes(contents[1:]), length)


# --- flat writers ----------------------------------------------------------------------


def header(octet: int, length: int) -> bytes:
    """A one-octet identifier and the shortest definite length (X.690 8.1.3)."""
    if length < 0x80:
        return (SHORT_HEADERS.get(octet) or short_headers(octet))[length]
    size = (length.bit_length() + 7) // 8
    return bytes((octet, 0x80 | size)) + length.to_bytes(size, "big")


def tlv_bytes(octet: int, contents: bytes) -> bytes:
    """One TLV."""
    length = len(contents)
    if length < 0x80:  # (see short_headers)
        return (SHORT_HEADERS.get(octet) or short_headers(octet))[length] + contents
    return header(octet, length) + contents


def wrap(octet: int, chunks: list[bytes]) -> list[bytes]:
    """A TLV around ``chunks`` as a list of chunks: the chunks are not copied."""
    return [header(octet, sum(map(len, chunks))), *chunks]


@functools.lru_cache(maxsize=1024)
def oid_tlv(dotted: str) -> bytes:
    """An OBJECT IDENTIFIER TLV; raises :class:`p1.errors.EncodeError`."""
    return _oid_tlv(oid_contents(dotted, "OBJECT IDENTIFIER"))
