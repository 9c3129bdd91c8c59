"""The TLV reader: bounds-checked, definite and indefinite lengths, constructed strings
(X.690 8.1.2 to 8.1.5, 8.7, 8.21).

Part of :mod:`p1.ber`, which re-exports its public names.
"""

from __future__ import annotations

from typing import NamedTuple

from p1.ber.tags import (
    CONSTRUCTED,
    MAX_DEPTH,
    MAX_LENGTH_OCTETS,
    MAX_TAG_NUMBER,
    OCTET_STRING,
    tag_name,
)
from p1.errors import DecodeError, EncodeError

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


def read_tag(data: memoryview, offset: int, limit: int) -> tuple[int, bool, int]:
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
            if number > MAX_TAG_NUMBER:  # the class lives in the bits above
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
    if count > MAX_LENGTH_OCTETS or first == 0xFF:
        raise DecodeError(f"length of {count} octets", where=f"offset {offset - 1}")
    if offset + count > limit:
        raise DecodeError("truncated length", where=f"offset {offset - 1}")
    return int.from_bytes(data[offset : offset + count], "big"), offset + count


new_tlv = tuple.__new__  # Tlv(...) without the Python-level __new__ of a NamedTuple

LOW_TAGS: tuple[tuple[int, bool] | None, ...] = tuple(
    None if first & 0x1F == 0x1F else ((first & 0xC0) << 24 | first & 0x1F, first & 0x20 != 0)
    for first in range(256)
)
"""(tag, constructed) of each identifier octet with a low tag number; None: a high one."""
LOW_TAG_FORM: tuple[bool, ...] = tuple(low is not None for low in LOW_TAGS)
"""Whether each identifier octet has a low tag number."""


def read_tlv(data: memoryview, offset: int, limit: int, depth: int = 0) -> Tlv:
    """The TLV that starts at ``offset`` and must end by ``limit``."""
    body = offset + 2
    if body <= limit:
        low = LOW_TAGS[data[offset]]
        length = data[offset + 1]
        if low is not None and length < 0x80 and body + length <= limit:
            # The common case, inline: low tag number, short definite length.
            end = body + length
            return new_tlv(Tlv, (data, offset, body, end, end, low[0], low[1]))
    return read_tlv_at(data, offset, limit, depth)


def read_tlv_at(data: memoryview, offset: int, limit: int, depth: int) -> Tlv:
    if offset + 2 <= limit:
        # Next most common: a low tag number and a long definite length.
        low = LOW_TAGS[data[offset]]
        count = data[offset + 1] - 0x80
        body = offset + 2 + count
        if low is not None and 0 < count <= MAX_LENGTH_OCTETS and body <= limit:
            end = body + int.from_bytes(data[offset + 2 : body], "big")
            if end <= limit:
                return new_tlv(Tlv, (data, offset, body, end, end, low[0], low[1]))
    start = offset
    tag, constructed, offset = read_tag(data, offset, limit)
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
            length = 0x80  # (truncated: read_tlv_at says so)
        low = LOW_TAGS[first]
        if length < 0x80 and low is not None:
            body = offset + 2
            stop = body + length
            if stop <= end:  # (past ``end``, read_tlv_at says what is wrong)
                append(new_tlv(Tlv, (data, offset, body, stop, stop, low[0], low[1])))
                offset = stop
                continue
        child = read_tlv_at(data, offset, end, 1)
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
        low = LOW_TAGS[data[body]]
        if low is not None and data[body + 1] < 0x80 and body + 2 + data[body + 1] == end:
            return new_tlv(Tlv, (data, body, body + 2, end, end, low[0], low[1]))
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
    if type(data) is bytes and 2 <= size < 0x82 and data[1] == size - 2 and LOW_TAG_FORM[data[0]]:
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
