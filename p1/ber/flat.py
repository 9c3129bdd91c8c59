"""The flat reader and writers: a TLV as a plain tuple over a view, for the IPM codecs
(X.690 8.1).

Part of :mod:`p1.ber`, which re-exports its public names.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime
from typing import Final, TypeAlias

from p1.ber.reader import LOW_TAG_FORM, as_view, read_single
from p1.ber.tags import CONSTRUCTED, MAX_DEPTH, MAX_INT_OCTETS, MAX_LENGTH_OCTETS
from p1.ber.values import bits_to_numbers, oid_contents, parse_utctime, read_oid
from p1.ber.writer import SHORT_HEADERS, length_octets, short_headers
from p1.errors import DecodeError

# --- flat reader -----------------------------------------------------------------------
#
# A lighter reader for the IPM codecs.  A TLV is a plain tuple
# ``(key, start, body, end, stop)`` over a memoryview: ``key`` is the identifier octet (for a
# tag number above 30, a value above 0xFF that no one-octet identifier equals), the contents
# are ``body:end``, and ``stop`` is just past the value (past the end-of-contents octets of an
# indefinite length).  An IPM heading has a hundred TLVs; reading each into a plain tuple
# costs a tenth of building an object.  Definite and indefinite lengths and segmented
# (constructed) strings are accepted.

FlatTlv: TypeAlias = tuple[int, int, int, int, int]
"""(key, start, body, end, stop)."""
View: TypeAlias = bytes | memoryview
"""What the flat reader reads: a view, or the bytes themselves (cheaper to slice: a
decoder given ``bytes`` reads those, with the offsets of the view :func:`single` made)."""
_OID_OCTET: Final = 0x06


def _error(why: str, pos: int) -> DecodeError:
    return DecodeError(why, where=f"offset {pos}")


def _high_tag(view: View, pos: int, end: int) -> tuple[int, int]:
    number = 0
    p = pos + 1
    for _ in range(4):
        if p >= end:
            break
        octet = view[p]
        p += 1
        number = number << 7 | octet & 0x7F
        if not octet & 0x80:
            return 0x100 | view[pos] | number << 9, p
    raise _error("truncated or over-long tag number", pos)


def read(view: View, pos: int, end: int, depth: int = 0) -> FlatTlv:
    """The TLV at ``pos``, which must end by ``end`` (X.690 8.1.2 to 8.1.5)."""
    if pos + 2 > end:
        raise _error("truncated: a tag and length were expected", pos)
    key = view[pos]
    p = pos + 1
    if key & 0x1F == 0x1F:
        key, p = _high_tag(view, pos, end)
        if p >= end:
            raise _error("truncated length", pos)
    first = view[p]
    p += 1
    if first < 0x80:
        stop = p + first
    elif first == 0x80:
        return _indefinite(view, key, pos, p, end, depth)
    else:
        count = first & 0x7F
        if count > MAX_LENGTH_OCTETS or p + count > end:
            raise _error(f"bad or truncated length of {count} octets", pos)
        stop = p + count + int.from_bytes(view[p : p + count], "big")
        p += count
    if stop > end:
        raise _error(f"{stop - p} content octets announced, {end - p} present", pos)
    return key, pos, p, stop, stop


def _indefinite(view: View, key: int, pos: int, body: int, end: int, depth: int) -> FlatTlv:
    if not key & CONSTRUCTED:
        raise _error("indefinite length on a primitive value", pos)
    if depth >= MAX_DEPTH:
        raise _error(f"nested deeper than {MAX_DEPTH} levels", pos)
    q = body
    while True:
        if q + 2 > end:
            raise _error("missing end-of-contents", pos)
        if view[q] == 0 and view[q + 1] == 0:
            return key, pos, body, q, q + 2
        q = read(view, q, end, depth + 1)[4]


def single(data: bytes | bytearray | memoryview, what: str) -> tuple[memoryview, FlatTlv]:
    """The one TLV ``data`` holds (trailing bytes are an error), and the view on it."""
    view = as_view(data)
    tlv = read(view, 0, len(view))
    if tlv[4] != len(view):
        raise DecodeError(f"{len(view) - tlv[4]} trailing byte(s) after the value", where=what)
    return view, tlv


def items(view: View, tlv: FlatTlv, what: str) -> list[FlatTlv]:
    """The TLVs inside a constructed value."""
    key, _, pos, end, _ = tlv
    if not key & CONSTRUCTED:
        raise DecodeError("a constructed value was expected", where=what)
    found: list[FlatTlv] = []
    append = found.append
    while pos < end:
        # Inline the common case (low tag number, short definite length) of read().
        key = view[pos]
        try:
            first = view[pos + 1]
        except IndexError:
            first = 0x80  # (truncated: read() says so)
        if first < 0x80 and LOW_TAG_FORM[key]:
            body = pos + 2
            stop = body + first
            if stop <= end:  # (past ``end``, read() says what is wrong)
                append((key, pos, body, stop, stop))
                pos = stop
                continue
        item = read(view, pos, end, 1)
        append(item)
        pos = item[4]
    return found


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
        # items(), inline: a heading and each of its descriptors is a SET.
        key = view[pos]
        try:
            first = view[pos + 1]
        except IndexError:
            first = 0x80  # (truncated: read() says so)
        stop = pos + 2 + first
        if first < 0x80 and LOW_TAG_FORM[key] and stop <= end:
            item = (key, pos, pos + 2, stop, stop)
        else:
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


# --- flat reader: primitive values -----------------------------------------------------


def octets(view: View, tlv: FlatTlv, what: str) -> bytes:
    """The octets of a string type, primitive or segmented (X.690 8.7.3, 8.23.6)."""
    if not tlv[0] & CONSTRUCTED:
        return bytes(view[tlv[2] : tlv[3]])
    return b"".join(_flat_segments(view, tlv, what, 0))


def _flat_segments(view: View, tlv: FlatTlv, what: str, depth: int) -> list[View]:
    pieces = []
    for item in items(view, tlv, what):
        if not item[0] & CONSTRUCTED:
            pieces.append(view[item[2] : item[3]])
        elif depth < MAX_DEPTH:
            pieces.extend(_flat_segments(view, item, what, depth + 1))
        else:
            raise DecodeError("string segments nested too deep", where=what)
    return pieces


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
