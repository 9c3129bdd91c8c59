"""BER reading and writing (X.690 clause 8): the project's BER toolkit.

The envelope codec (:mod:`p1.mts.envelope`, :mod:`p1.mts.report`) walks the MTS-APDU's TLVs itself
instead of handing whole PDUs to asn1tools, because a relaying MTA must re-encode what it
received unchanged: asn1tools re-sorts SET members into tag order, drops members that
were sent explicitly with their DEFAULT value, rewrites UTCTime text, and copies the
content octets once per nesting level.  This module has the pieces: a bounds-checked TLV
reader that accepts definite and indefinite lengths and constructed strings, minimal
definite-length writers, the primitive value codecs (INTEGER, ENUMERATED, BIT STRING,
OBJECT IDENTIFIER, the ASCII string types, UTCTime), and the SET helpers that keep the
member order and the explicit DEFAULT members of a received SET.

Every malformed input raises :class:`p1.errors.DecodeError` (with where/why); values
that cannot be encoded raise :class:`p1.errors.EncodeError`.

Public API::

    Tlv, read_tlv(data, offset, limit), read_single(data, what), children(tlv)
    universal(n), application(n), context(n), tag_name(tag)
    identifier(tag, constructed) -> bytes, length_octets(n) -> bytes
    tlv(tag, contents, constructed=False) -> bytes
    read_int / int_contents, read_bits / bits_contents, read_oid / oid_contents,
    read_text / text_contents, read_octets
    WireTime, read_utctime(tlv) -> WireTime, utctime_text(datetime) -> str
    SetReader: split a SET by member tag, keeping the received member order
    encode_set(tag, members, wire_order) -> bytes

Flat reader (the IPM codecs; a TLV is a plain tuple, see the section below)::

    FlatTlv, View (bytes or memoryview), read(view, pos, end), single(data, what) -> (view, tlv),
    items(view, tlv, what)
    members(view, tlv, names, what) -> {name: tlv}      a SET by member tag
    exact(view, tlv) -> bool                            the header is the one we write
    octets / text / integer / boolean / oid / utctime / bits   primitive values
    header(octet, length), tlv_bytes(octet, contents), wrap(octet, chunks), oid_tlv(oid)
    short_headers(octet) -> header(octet, n) by n, for the short lengths
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Final, NamedTuple, TypeAlias, TypeVar

from p1.errors import DecodeError, EncodeError

UNIVERSAL = 0x00
APPLICATION = 0x40
CONTEXT = 0x80
PRIVATE = 0xC0
CONSTRUCTED: Final = 0x20
"""The constructed bit of an identifier octet (X.690 8.1.2.5)."""

MAX_DEPTH = 64
"""Deepest nesting walked in an indefinite-length value (a guard, not a protocol limit)."""

_MAX_INT_OCTETS = 16
_MAX_LENGTH_OCTETS = 8


def universal(number: int) -> int:
    """The tag key of ``[UNIVERSAL number]``."""
    return (UNIVERSAL << 24) | number


def application(number: int) -> int:
    """The tag key of ``[APPLICATION number]``."""
    return (APPLICATION << 24) | number


def context(number: int) -> int:
    """The tag key of a context-specific ``[number]``."""
    return (CONTEXT << 24) | number


_MAX_TAG_NUMBER = 0xFFFFFF
"""Largest tag number read; no X.400 or OSI module comes near it."""

_CLASS_NAMES = {
    UNIVERSAL: "UNIVERSAL ",
    APPLICATION: "APPLICATION ",
    CONTEXT: "",
    PRIVATE: "PRIVATE ",
}


def tag_name(tag: int) -> str:
    """``[APPLICATION 4]``, ``[2]``, ``[UNIVERSAL 16]``: a tag key for error messages."""
    return f"[{_CLASS_NAMES[tag >> 24]}{tag & 0xFFFFFF}]"


# Universal tags used by the envelope.
INTEGER = universal(2)
BIT_STRING = universal(3)
OCTET_STRING = universal(4)
NULL = universal(5)
OBJECT_IDENTIFIER = universal(6)
ENUMERATED = universal(10)
SEQUENCE = universal(16)
SET = universal(17)
NUMERIC_STRING = universal(18)
PRINTABLE_STRING = universal(19)
IA5_STRING = universal(22)
UTC_TIME = universal(23)


# --- reading ---------------------------------------------------------------------------


class Tlv(NamedTuple):
    """One BER value inside ``data``: identifier at ``start``, contents ``body:end``.

    ``stop`` is just past the value (past the end-of-contents octets when the length was
    indefinite).  (A NamedTuple: envelopes hold dozens of values and this is made for each.)
    """

    data: memoryview
    start: int
    body: int
    end: int
    stop: int
    tag: int
    constructed: bool

    @property
    def definite(self) -> bool:
        """The length was given (not the indefinite form)."""
        return self.stop == self.end

    def contents(self) -> memoryview:
        """The contents octets (without the end-of-contents octets)."""
        return self.data[self.body : self.end]

    def raw(self) -> bytes:
        """The whole encoding, identifier to end, as received."""
        return bytes(self.data[self.start : self.stop])

    def raw_view(self) -> memoryview:
        """The whole encoding, as a view (no copy)."""
        return self.data[self.start : self.stop]


def _read_tag(data: memoryview, offset: int, limit: int) -> tuple[int, bool, int]:
    if offset >= limit:
        raise DecodeError("truncated: a tag was expected", where=f"offset {offset}")
    first = data[offset]
    cls = first & 0xC0
    constructed = bool(first & CONSTRUCTED)
    number = first & 0x1F
    offset += 1
    if number != 0x1F:
        return (cls << 24) | number, constructed, offset
    number = 0
    for count in range(4):
        if offset >= limit:
            raise DecodeError("truncated tag number", where=f"offset {offset}")
        octet = data[offset]
        offset += 1
        if count == 0 and octet == 0x80:
            raise DecodeError("tag number with a leading zero septet", where=f"offset {offset - 1}")
        number = (number << 7) | (octet & 0x7F)
        if not octet & 0x80:
            if number > _MAX_TAG_NUMBER:  # the class lives in the bits above
                raise DecodeError("tag number too large", where=f"offset {offset - 1}")
            return (cls << 24) | number, constructed, offset
    raise DecodeError("tag number longer than four octets", where=f"offset {offset}")


def _read_length(data: memoryview, offset: int, limit: int) -> tuple[int | None, int]:
    if offset >= limit:
        raise DecodeError("truncated: a length was expected", where=f"offset {offset}")
    first = data[offset]
    offset += 1
    if first < 0x80:
        return first, offset
    if first == 0x80:
        return None, offset
    count = first & 0x7F
    if count > _MAX_LENGTH_OCTETS or first == 0xFF:
        raise DecodeError(f"length of {count} octets", where=f"offset {offset - 1}")
    if offset + count > limit:
        raise DecodeError("truncated length", where=f"offset {offset - 1}")
    return int.from_bytes(data[offset : offset + count], "big"), offset + count


_new_tlv = tuple.__new__  # Tlv(...) without the Python-level __new__ of a NamedTuple

_LOW_TAGS: tuple[tuple[int, bool] | None, ...] = tuple(
    None if first & 0x1F == 0x1F else ((first & 0xC0) << 24 | first & 0x1F, first & 0x20 != 0)
    for first in range(256)
)
"""(tag, constructed) of each identifier octet with a low tag number; None: a high one."""
_LOW_TAG_FORM: tuple[bool, ...] = tuple(low is not None for low in _LOW_TAGS)
"""Whether each identifier octet has a low tag number."""


def read_tlv(data: memoryview, offset: int, limit: int, depth: int = 0) -> Tlv:
    """The TLV that starts at ``offset`` and must end by ``limit``."""
    body = offset + 2
    if body <= limit:
        low = _LOW_TAGS[data[offset]]
        length = data[offset + 1]
        if low is not None and length < 0x80 and body + length <= limit:
            # The common case, inline: low tag number, short definite length.
            end = body + length
            return _new_tlv(Tlv, (data, offset, body, end, end, low[0], low[1]))
    return _read_tlv(data, offset, limit, depth)


def _read_tlv(data: memoryview, offset: int, limit: int, depth: int) -> Tlv:
    if offset + 2 <= limit:
        # Next most common: a low tag number and a long definite length.
        low = _LOW_TAGS[data[offset]]
        count = data[offset + 1] - 0x80
        body = offset + 2 + count
        if low is not None and 0 < count <= _MAX_LENGTH_OCTETS and body <= limit:
            end = body + int.from_bytes(data[offset + 2 : body], "big")
            if end <= limit:
                return _new_tlv(Tlv, (data, offset, body, end, end, low[0], low[1]))
    start = offset
    tag, constructed, offset = _read_tag(data, offset, limit)
    length, body = _read_length(data, offset, limit)
    if length is not None:
        end = body + length
        if end > limit:
            raise DecodeError(
                f"truncated: {length} content octets announced, {limit - body} present",
                where=f"{tag_name(tag)} at offset {start}",
            )
        return Tlv(data, start, body, end, end, tag, constructed)
    if not constructed:
        raise DecodeError("indefinite length on a primitive value", where=f"offset {start}")
    if depth >= MAX_DEPTH:
        raise DecodeError(f"nested deeper than {MAX_DEPTH} levels", where=f"offset {start}")
    position = body
    while True:
        if position + 2 > limit:
            raise DecodeError("missing end-of-contents", where=f"{tag_name(tag)} at offset {start}")
        if data[position] == 0:
            if data[position + 1] != 0:
                raise DecodeError("malformed end-of-contents", where=f"offset {position}")
            return Tlv(data, start, body, position, position + 2, tag, constructed)
        position = read_tlv(data, position, limit, depth + 1).stop


def as_view(data: bytes | bytearray | memoryview) -> memoryview:
    """A flat byte view of ``data`` (no copy)."""
    view = memoryview(data)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def read_single(data: bytes | bytearray | memoryview, what: str) -> Tlv:
    """The one TLV that ``data`` holds; trailing bytes are an error."""
    view = as_view(data)
    tlv = read_tlv(view, 0, len(view))
    if tlv.stop != len(view):
        raise DecodeError(f"{len(view) - tlv.stop} trailing byte(s) after the value", where=what)
    return tlv


def children(tlv: Tlv, what: str) -> list[Tlv]:
    """The TLVs inside a constructed value."""
    data, _, offset, end, _, tag, is_constructed = tlv
    if not is_constructed:
        raise DecodeError(f"{tag_name(tag)} must be constructed", where=what)
    found: list[Tlv] = []
    append = found.append
    while offset < end:
        # read_tlv's common case, inline: most of an envelope's decoding is spent here.
        first = data[offset]
        try:
            length = data[offset + 1]
        except IndexError:
            length = 0x80  # (truncated: _read_tlv says so)
        low = _LOW_TAGS[first]
        if length < 0x80 and low is not None:
            body = offset + 2
            stop = body + length
            if stop <= end:  # (past ``end``, _read_tlv says what is wrong)
                append(_new_tlv(Tlv, (data, offset, body, stop, stop, low[0], low[1])))
                offset = stop
                continue
        child = _read_tlv(data, offset, end, 1)
        append(child)
        offset = child.stop
    return found


def expect(tlv: Tlv, tag: int, what: str) -> Tlv:
    """``tlv`` if it has ``tag``, else a DecodeError naming both tags."""
    if tlv.tag != tag:
        raise DecodeError(f"expected {tag_name(tag)}, found {tag_name(tlv.tag)}", where=what)
    return tlv


def only_child(tlv: Tlv, what: str) -> Tlv:
    """The single value inside an explicit tag."""
    data, _, body, end, _, _, is_constructed = tlv
    if is_constructed and body + 2 <= end:
        # The common case, inline: one value with a low tag and a short length.
        low = _LOW_TAGS[data[body]]
        if low is not None and data[body + 1] < 0x80 and body + 2 + data[body + 1] == end:
            return _new_tlv(Tlv, (data, body, body + 2, end, end, low[0], low[1]))
    inner = children(tlv, what)
    if len(inner) != 1:
        raise DecodeError(f"explicit tag holds {len(inner)} values, not one", where=what)
    return inner[0]


def constructed_contents(tlv: Tlv, what: str) -> memoryview:
    """The contents of a value that must be constructed (a SET kept as received)."""
    if not tlv.constructed:
        raise DecodeError(f"{tag_name(tlv.tag)} must be constructed", where=what)
    children(tlv, what)  # validates the TLVs inside
    return tlv.contents()


def check_single_tlv(data: bytes | bytearray | memoryview, what: str) -> None:
    """An EncodeError unless ``data`` is exactly one BER value."""
    size = len(data)
    if type(data) is bytes and 2 <= size < 0x82 and data[1] == size - 2 and _LOW_TAG_FORM[data[0]]:
        return  # a low tag number, a short length that spans the rest: as read_single finds
    try:
        read_single(data, what)
    except DecodeError as exc:
        raise EncodeError(f"not one BER value: {exc.why}", where=what) from None


def read_octets(tlv: Tlv, what: str) -> bytes:
    """The octets of an OCTET STRING (or string type) in primitive or constructed form."""
    if not tlv.constructed:
        return bytes(tlv.data[tlv.body : tlv.end])
    return b"".join(_segments(tlv, what, OCTET_STRING, 0))


def _segments(tlv: Tlv, what: str, segment_tag: int, depth: int) -> list[memoryview]:
    pieces: list[memoryview] = []
    for child in children(tlv, what):
        expect(child, segment_tag, what)
        if child.constructed:
            if depth >= MAX_DEPTH:
                raise DecodeError("string segments nested too deep", where=what)
            pieces.extend(_segments(child, what, segment_tag, depth + 1))
        else:
            pieces.append(child.contents())
    return pieces


# --- writing ---------------------------------------------------------------------------


def length_octets(length: int) -> bytes:
    """The definite length in its shortest form (X.690 8.1.3)."""
    if length < 0x80:
        return bytes((length,))
    body = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes((0x80 | len(body),)) + body


def identifier(tag: int, constructed: bool) -> bytes:
    """The identifier octets of ``tag``."""
    cls = tag >> 24
    number = tag & 0xFFFFFF
    first = cls | (CONSTRUCTED if constructed else 0)
    if number < 0x1F:
        return bytes((first | number,))
    septets = [number & 0x7F]
    number >>= 7
    while number:
        septets.append(0x80 | (number & 0x7F))
        number >>= 7
    return bytes((first | 0x1F, *reversed(septets)))


_IDENTIFIERS: dict[int, bytes] = {
    (cls << 24 | number) << 1 | form: identifier(cls << 24 | number, bool(form))
    for cls in _CLASS_NAMES
    for number in range(0x1F)
    for form in (0, 1)
}
"""identifier() of every low tag number, by ``tag << 1 | constructed``."""


def short_headers(octet: int) -> tuple[bytes, ...]:
    """``header(octet, n)`` for each length ``n`` below 0x80, by ``n``.  A writer
    indexes these and adds the contents: half the cost of formatting the three parts
    together, for the many short values.  (ValueError if ``octet`` is not 0..255.)"""
    headers = _SHORT_HEADERS.get(octet)
    if headers is None:
        headers = tuple(bytes((octet, n)) for n in range(0x80))
        _SHORT_HEADERS[octet] = headers
    return headers


_SHORT_HEADERS: dict[int, tuple[bytes, ...]] = {}
"""short_headers() by identifier octet, each made when first asked for (at most 256;
the codecs use a few dozen, some 4 KB each)."""


def tlv(tag: int, contents: bytes | bytearray | memoryview, constructed: bool = False) -> bytes:
    """One definite-length TLV."""
    key = tag << 1 | 1 if constructed else tag << 1
    if type(contents) is not bytes:
        contents = bytes(contents)
    length = len(contents)
    head = _IDENTIFIERS.get(key)
    if head is None:
        head = identifier(tag, constructed)
    elif length < 0x80:  # one identifier octet and a short length: tlv_bytes, inline
        return (_SHORT_HEADERS.get(head[0]) or short_headers(head[0]))[length] + contents
    if length < 0x80:
        return b"%s%c%s" % (head, length, contents)  # one copy of the contents
    return b"%s%s%s" % (head, length_octets(length), contents)


def constructed(tag: int, parts: Iterable[bytes]) -> bytes:
    """A constructed definite-length TLV holding ``parts`` in order."""
    return tlv(tag, b"".join(parts), True)


def retag(encoding: bytes, tag: int) -> bytes:
    """``encoding`` with its outermost tag replaced by ``tag`` (an IMPLICIT tag)."""
    view = as_view(encoding)
    _, is_constructed, after = _read_tag(view, 0, len(view))
    return identifier(tag, is_constructed) + encoding[after:]


# --- INTEGER, ENUMERATED, NULL ---------------------------------------------------------


def read_int(tlv: Tlv, what: str) -> int:
    """The value of a primitive INTEGER or ENUMERATED (any tag)."""
    data, _, start, end, _, _, is_constructed = tlv
    if is_constructed:
        raise DecodeError("an integer must be primitive", where=what)
    body = data[start:end]
    if not body:
        raise DecodeError("an integer needs at least one content octet", where=what)
    if len(body) > _MAX_INT_OCTETS:
        raise DecodeError(f"integer of {len(body)} octets is out of range", where=what)
    return int.from_bytes(body, "big", signed=True)


def int_contents(value: int) -> bytes:
    """Two's complement contents octets of ``value``, shortest form (X.690 8.3)."""
    if isinstance(value, int) and 0 <= value < 0x80:
        return _ONE_OCTET[value]  # (numbers, enumerations and flags are mostly small)
    return value.to_bytes((value + (value < 0)).bit_length() // 8 + 1, "big", signed=True)


_ONE_OCTET = tuple(bytes((n,)) for n in range(0x80))


def read_bounded_int(tlv: Tlv, what: str, low: int, high: int) -> int:
    """An integer that must lie in ``low..high``."""
    value = read_int(tlv, what)
    if not low <= value <= high:
        raise DecodeError(f"{value} is outside {low}..{high}", where=what)
    return value


def check_int(value: int, what: str, low: int, high: int) -> int:
    """``value`` if it lies in ``low..high``, else an EncodeError."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise EncodeError(f"{value!r} is not an integer in {low}..{high}", where=what)
    return value


# --- BIT STRING ------------------------------------------------------------------------


def read_bits(tlv: Tlv, what: str) -> tuple[bytes, int]:
    """``(octets, number of bits)`` of a BIT STRING; unused trailing bits are cleared."""
    if tlv.constructed:
        pieces = [_bit_segment(child, what) for child in children(tlv, what)]
        if any(length % 8 for _, length in pieces[:-1]):
            raise DecodeError("only the last BIT STRING segment may have unused bits", where=what)
        return b"".join(p[0] for p in pieces), sum(p[1] for p in pieces)
    return _bit_segment_body(tlv.data[tlv.body : tlv.end], what)


def _bit_segment(tlv: Tlv, what: str) -> tuple[bytes, int]:
    expect(tlv, BIT_STRING, what)
    if tlv.constructed:
        raise DecodeError("nested constructed BIT STRING segments", where=what)
    return _bit_segment_body(tlv.contents(), what)


def _bit_segment_body(body: memoryview, what: str) -> tuple[bytes, int]:
    if not body:
        raise DecodeError("a BIT STRING needs its unused-bits octet", where=what)
    unused = body[0]
    if unused > 7 or (unused and len(body) == 1):
        raise DecodeError(
            f"{unused} unused bits in a BIT STRING of {len(body) - 1} octets", where=what
        )
    octets = bytearray(body[1:])
    if unused:
        octets[-1] &= (0xFF << unused) & 0xFF
    return bytes(octets), (len(body) - 1) * 8 - unused


def bits_contents(octets: bytes, length: int) -> bytes:
    """Contents octets of a BIT STRING of ``length`` bits held in ``octets``."""
    count = (length + 7) // 8
    body = bytearray(octets[:count].ljust(count, b"\0"))
    unused = count * 8 - length
    if unused:
        body[-1] &= (0xFF << unused) & 0xFF
    return bytes((unused,)) + bytes(body)


def bits_to_numbers(octets: bytes, length: int) -> frozenset[int]:
    """The numbers of the bits that are one (bit 0 is the first, most significant)."""
    count = (length + 7) // 8
    if length <= 0 or len(octets) < count:
        return frozenset(n for n in range(length) if octets[n // 8] & (0x80 >> (n % 8)))
    # The first ``length`` bits as one integer, then its one bits, lowest first.
    value = int.from_bytes(octets[:count], "big") >> (count * 8 - length)
    numbers = []
    while value:
        lowest = value & -value
        numbers.append(length - lowest.bit_length())
        value ^= lowest
    return frozenset(numbers)


def numbers_to_bits(numbers: Iterable[int], length: int) -> bytes:
    """Octets holding ``length`` bits with the given bits set."""
    body = bytearray((length + 7) // 8)
    for n in numbers:
        body[n // 8] |= 0x80 >> (n % 8)
    return bytes(body)


# --- OBJECT IDENTIFIER -----------------------------------------------------------------

_OID_TEXT = re.compile(r"^(0|1|2)(\.(0|[1-9][0-9]*))+$")


_K = TypeVar("_K")
_V = TypeVar("_V")


class Memo(dict[_K, _V]):
    """Decoded values from a small vocabulary (OIDs, domain identifiers, flag sets) by
    their encoding, emptied when full so a peer cannot make it grow.  Only immutable
    values are kept; reads are plain ``dict.get`` on the hot path."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def remember(self, key: _K, value: _V) -> _V:
        """Keep ``value`` under ``key`` and return it."""
        if len(self) >= self.size:
            self.clear()
        self[key] = value
        return value


_OID_TEXTS: Memo[bytes, str] = Memo(1024)
"""read_oid() results by contents octets (a handful of OIDs recur in every envelope)."""
_OID_CONTENTS: Memo[str, bytes] = Memo(1024)
"""oid_contents() results by dotted text."""
_OID_CACHE_OCTETS = 64
"""Longer OIDs (rare, and a peer could send huge ones) are not cached."""


def read_oid(tlv: Tlv, what: str) -> str:
    """Dotted text of a primitive OBJECT IDENTIFIER (X.690 8.19)."""
    if tlv.constructed:
        raise DecodeError("an OBJECT IDENTIFIER must be primitive", where=what)
    key = bytes(tlv.data[tlv.body : tlv.end])
    dotted = _OID_TEXTS.get(key)
    if dotted is None:
        dotted = _read_oid_contents(key, what)
        if len(key) <= _OID_CACHE_OCTETS:
            _OID_TEXTS.remember(key, dotted)
    return dotted


def _read_oid_contents(body: bytes, what: str) -> str:
    if not body or body[-1] & 0x80:
        raise DecodeError("truncated OBJECT IDENTIFIER", where=what)
    arcs: list[int] = []
    value = 0  # the arc so far, shifted; zero exactly at the start of an arc
    for octet in body:
        if octet < 0x80:
            arcs.append(value | octet)
            value = 0
        elif value or octet != 0x80:
            value = (value | octet & 0x7F) << 7
        else:
            raise DecodeError("OBJECT IDENTIFIER arc with a leading zero septet", where=what)
    first = min(arcs[0] // 40, 2)
    arcs[0] -= 40 * first
    return f"{first}." + ".".join(map(str, arcs))


def oid_contents(text: str, what: str) -> bytes:
    """Contents octets of the OBJECT IDENTIFIER ``text`` ("1.3.26.0.4406.0.8.0")."""
    if type(text) is not str:
        return _oid_contents(text, what)
    found = _OID_CONTENTS.get(text)
    if found is not None:
        return found
    contents = _oid_contents(text, what)
    if len(contents) <= _OID_CACHE_OCTETS:
        _OID_CONTENTS.remember(text, contents)
    return contents


def _oid_contents(text: str, what: str) -> bytes:
    if not isinstance(text, str) or not _OID_TEXT.match(text):
        raise EncodeError(f"{text!r} is not a dotted object identifier", where=what)
    arcs = list(map(int, text.split(".")))
    if arcs[0] < 2 and arcs[1] > 39:
        raise EncodeError(f"{text!r}: second arc above 39 under arc {arcs[0]}", where=what)
    arcs[1] += 40 * arcs[0]
    del arcs[0]
    out = bytearray()
    for arc in arcs:
        if arc >= 0x80:
            # Base 128, most significant septet first, the high bit set on all but the last.
            for shift in range((arc.bit_length() - 1) // 7 * 7, 0, -7):
                out.append(0x80 | (arc >> shift) & 0x7F)
        out.append(arc & 0x7F)
    return bytes(out)


def is_oid(text: str) -> bool:
    """``text`` is a dotted object identifier."""
    return bool(_OID_TEXT.match(text))


# --- character strings -----------------------------------------------------------------


def read_text(tlv: Tlv, what: str) -> str:
    """An IA5String, PrintableString or NumericString: ASCII, primitive or constructed.

    The alphabet of Printable and Numeric strings is not checked: what a peer sent is
    relayed as sent.
    """
    try:
        if not tlv.constructed:
            return str(tlv.data[tlv.body : tlv.end], "ascii")
        return read_octets(tlv, what).decode("ascii")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"non-ASCII octet at {exc.start}", where=what) from None


def text_contents(text: str, what: str) -> bytes:
    """ASCII contents octets of ``text``."""
    if not isinstance(text, str):
        raise EncodeError(f"{text!r} is not text", where=what)
    try:
        return text.encode("ascii")
    except UnicodeEncodeError as exc:
        raise EncodeError(f"non-ASCII character at {exc.start} of {text!r}", where=what) from None


# --- UTCTime ---------------------------------------------------------------------------

_UTCTIME = re.compile(r"^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)?(Z|[+-]\d\d\d\d)$")
UTCTIME_PIVOT = 50
"""Two-digit years below 50 are 20YY, the others 19YY (as RFC 5280 4.1.2.5.1 reads UTCTime)."""


class WireTime(datetime):
    """A timezone-aware datetime that remembers the UTCTime text it was decoded from.

    It compares, hashes and computes as a plain datetime; re-encoding writes the
    remembered text (``YYMMDDhhmmZ``, ``+hhmm`` offsets...) so a relayed envelope keeps
    its bytes.  Any derived datetime (``replace``, arithmetic) forgets the text.
    """

    __slots__ = ("utctime",)
    utctime: str

    def __reduce_ex__(self, protocol: object) -> tuple[Any, ...]:
        # Pickle and copy keep the text (datetime's own reduction would drop it).
        text = getattr(self, "utctime", None)
        if text is None:
            return (
                datetime,
                (
                    self.year,
                    self.month,
                    self.day,
                    self.hour,
                    self.minute,
                    self.second,
                    self.microsecond,
                    self.tzinfo,
                ),
            )
        return (parse_utctime, (text,))


def parse_utctime(text: str, what: str = "UTCTime") -> WireTime:
    """``YYMMDDhhmm[ss](Z|+hhmm|-hhmm)`` as an aware datetime (X.680 clause 47)."""
    if len(text) == 13 and text[12] == "Z" and text.isascii() and text[:12].isdigit():
        quick = _quick_utctime(text)  # the usual form, YYMMDDhhmmssZ
        if quick is not None:
            return quick
    return _parse_utctime(text, what)


def _parse_utctime(text: str, what: str) -> WireTime:
    """parse_utctime's general path: every form, and the errors."""
    match = _UTCTIME.match(text)
    if match is None:
        raise DecodeError(f"{text!r} is not YYMMDDhhmm[ss] followed by Z or +-hhmm", where=what)
    yy, month, day, hour, minute, second, zone = match.groups()
    year = int(yy) + (2000 if int(yy) < UTCTIME_PIVOT else 1900)
    try:
        tz = UTC if zone == "Z" else _offset(zone)
        value = WireTime(
            year, int(month), int(day), int(hour), int(minute), int(second or 0), tzinfo=tz
        )
    except ValueError as exc:
        raise DecodeError(f"{text!r}: {exc}", where=what) from None
    value.utctime = text
    return value


def _quick_utctime(text: str) -> WireTime | None:
    """``YYMMDDhhmmssZ`` (ASCII digits) read by datetime's own ISO 8601 parser, which
    checks the ranges as the constructor does; None where it refuses the value (the
    general path then says why, in its words)."""
    century = "20" if text[0] < "5" else "19"  # UTCTIME_PIVOT
    try:
        value = WireTime.fromisoformat(f"{century}{text[:6]}T{text[6:12]}Z")
    except ValueError:
        return None
    value.utctime = text
    return value


def _offset(zone: str) -> timezone:
    hours, minutes = int(zone[1:3]), int(zone[3:5])
    if hours > 23 or minutes > 59:
        raise ValueError(f"offset {zone} out of range")
    delta = timedelta(hours=hours, minutes=minutes)
    return timezone(-delta if zone[0] == "-" else delta)


def read_utctime(tlv: Tlv, what: str) -> WireTime:
    """A UTCTime value (under any tag)."""
    return parse_utctime(read_text(tlv, what), what)


def utctime_text(value: datetime, what: str) -> str:
    """The UTCTime text for ``value``: as received, else ``YYMMDDhhmmssZ`` in UTC.

    Fractions of a second are dropped (UTCTime has none).  A naive datetime, or one
    outside 1950..2049, is an EncodeError.
    """
    if not isinstance(value, datetime):
        raise EncodeError(f"{value!r} is not a datetime", where=what)
    # (A plain datetime has no text to remember: no failed attribute lookup for it.)
    remembered = None if type(value) is datetime else getattr(value, "utctime", None)
    if remembered is not None and _still_matches(value, remembered):
        return str(remembered)
    offset = value.utcoffset()
    if offset is None:
        raise EncodeError(f"{value.isoformat()} has no time zone", where=what)
    utc = value - offset if offset else value  # (the usual: already UTC)
    if not 1900 + UTCTIME_PIVOT <= utc.year < 2000 + UTCTIME_PIVOT:
        raise EncodeError(f"{value.isoformat()} is outside UTCTime's 1950..2049", where=what)
    return _UTCTIME_TEXT % (utc.year % 100, utc.month, utc.day, utc.hour, utc.minute, utc.second)


_UTCTIME_TEXT = "%02d%02d%02d%02d%02d%02dZ"
"""YYMMDDhhmmssZ (what ``strftime("%y%m%d%H%M%SZ")`` writes, in a fraction of the time)."""


def _still_matches(value: datetime, text: str) -> bool:
    try:
        parsed = parse_utctime(text)
    except DecodeError:
        return False
    return parsed == value and parsed.utcoffset() == value.utcoffset()


def utctime_contents(value: datetime, what: str) -> bytes:
    """Contents octets of a UTCTime."""
    return utctime_text(value, what).encode("ascii")


# --- SET members -----------------------------------------------------------------------


class SetMembers(dict[str, Tlv]):
    """The members of a received SET by name, and their order on the wire.

    A dict (name -> TLV) so that ``get`` costs no Python call: envelopes have dozens.
    """

    __slots__ = ("order",)
    order: tuple[str, ...]

    def __init__(self, found: Mapping[str, Tlv] | None = None, order: tuple[str, ...] = ()) -> None:
        super().__init__(found or {})
        self.order = order

    @property
    def found(self) -> Mapping[str, Tlv]:
        """The members present, by name."""
        return self

    def need(self, name: str, what: str) -> Tlv:
        """The member's TLV; a DecodeError when it is absent."""
        member = self.get(name)
        if member is None:
            raise DecodeError(f"missing {name.replace('_', '-')}", where=what)
        return member


def split_set(tlv: Tlv, members: Mapping[int, str], what: str) -> SetMembers:
    """Sort the children of a SET (or SEQUENCE read as a SET) into named members.

    ``members`` maps each tag to a member name (an untagged CHOICE member appears once
    per alternative).  An unknown tag or a repeated member is an error.
    """
    data, _, offset, end, _, tag, is_constructed = tlv
    if not is_constructed:
        raise DecodeError(f"{tag_name(tag)} must be constructed", where=what)
    found = _new_members(SetMembers)  # (no Python-level __init__)
    get = members.get
    problem = ""
    while offset < end:
        # children(), inline: an envelope has a SET per recipient and per trace entry.
        first = data[offset]
        try:
            length = data[offset + 1]
        except IndexError:
            length = 0x80  # (truncated: _read_tlv says so)
        low = _LOW_TAGS[first]
        stop = offset + 2 + length
        if length < 0x80 and low is not None and stop <= end:
            child = _new_tlv(Tlv, (data, offset, offset + 2, stop, stop, low[0], low[1]))
        else:
            child = _read_tlv(data, offset, end, 1)
            stop = child.stop
        name = get(child[5])
        if name is None or name in found:
            # (Reported once every member has been read, as children() then the check would.)
            problem = problem or (
                f"unexpected {tag_name(child.tag)}"
                if name is None
                else f"{name.replace('_', '-')} appears twice"
            )
        else:
            found[name] = child
        offset = stop
    if problem:
        raise DecodeError(problem, where=what)
    found.order = tuple(found)  # a dict keeps the order of insertion: the wire order
    return found


_new_members = dict.__new__


Member = tuple[str, bytes | None]
"""A SET member to encode: its name and its TLV (None: absent)."""


def encode_set(tag: int, members: Sequence[Member], wire_order: Sequence[str]) -> bytes:
    """A SET with its present members: those in ``wire_order`` first, in that order,
    then the others in the order given (the standard's definition order)."""
    if not wire_order:  # a value built in code: the definition order
        return constructed(tag, [encoding for _, encoding in members if encoding is not None])
    rank = {name: index for index, name in enumerate(wire_order)}
    last = len(rank)
    present = [
        (rank.get(name, last), index, encoding)
        for index, (name, encoding) in enumerate(members)
        if encoding is not None
    ]
    present.sort(key=lambda item: (item[0], item[1]))
    return constructed(tag, (item[2] for item in present))


def keep(name: str, is_default: bool, wire_order: Sequence[str]) -> bool:
    """Whether a DEFAULT (or empty OPTIONAL) member is encoded: when it is not the
    default, or when it was received explicitly."""
    return not is_default or name in wire_order


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
        if count > _MAX_LENGTH_OCTETS or p + count > end:
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
        if first < 0x80 and _LOW_TAG_FORM[key]:
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
        if first < 0x80 and _LOW_TAG_FORM[key] and stop <= end:
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
    if not 0 < len(contents) <= _MAX_INT_OCTETS:
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
        return (_SHORT_HEADERS.get(octet) or short_headers(octet))[length]
    size = (length.bit_length() + 7) // 8
    return bytes((octet, 0x80 | size)) + length.to_bytes(size, "big")


def tlv_bytes(octet: int, contents: bytes) -> bytes:
    """One TLV."""
    length = len(contents)
    if length < 0x80:  # (see short_headers)
        return (_SHORT_HEADERS.get(octet) or short_headers(octet))[length] + contents
    return header(octet, length) + contents


def wrap(octet: int, chunks: list[bytes]) -> list[bytes]:
    """A TLV around ``chunks`` as a list of chunks: the chunks are not copied."""
    return [header(octet, sum(map(len, chunks))), *chunks]


@functools.lru_cache(maxsize=1024)
def oid_tlv(dotted: str) -> bytes:
    """An OBJECT IDENTIFIER TLV; raises :class:`p1.errors.EncodeError`."""
    return _oid_tlv(oid_contents(dotted, "OBJECT IDENTIFIER"))
