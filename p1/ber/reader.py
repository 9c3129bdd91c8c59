"""The BER reader: one walk over the received bytes, every legal form (X.690 8.1.2 to
8.1.5, 8.7, 8.21).

:func:`read` is the only function that parses identifier and length octets.  It returns a
TLV as a plain tuple ``(key, start, body, end, stop)`` over the caller's bytes or view,
without copying them:

- ``key`` is the identifier octet; for a tag number above 30 it is
  ``0x100 | first octet | number << 9`` (never equal to a one-octet identifier).  A tag
  number below 31 written in the high-number form (``9f 08`` for ``[8]``) gets the key of
  its one-octet form: the value read is the same whatever the form.
- the contents are ``body:end``; ``stop`` is just past the value (past the end-of-contents
  octets of an indefinite length), so ``start:stop`` is the value exactly as received.

Definite short and long lengths, indefinite lengths and constructed (segmented) strings are
accepted.  :class:`Tlv` is the same TLV with its view and its tag as an object, for the
envelope and OSI codecs; :func:`read_tlv` makes one from :func:`read`.

Part of :mod:`p1.ber`, which re-exports its public names.
"""

from __future__ import annotations

from typing import NamedTuple, TypeAlias

from p1.ber.tags import (
    CONSTRUCTED,
    MAX_DEPTH,
    MAX_LENGTH_OCTETS,
    MAX_TAG_NUMBER,
    tag_name,
)
from p1.errors import DecodeError, EncodeError

FlatTlv: TypeAlias = tuple[int, int, int, int, int]
"""(key, start, body, end, stop)."""
View: TypeAlias = bytes | memoryview
"""What the reader reads: a view, or the bytes themselves (cheaper to slice)."""

OCTET_STRING_KEY = 0x04
"""The identifier of a primitive OCTET STRING, the segment of every string type."""
BIT_STRING_KEY = 0x03
"""The identifier of a primitive BIT STRING, the segment of a constructed one."""

LOW_TAGS: tuple[tuple[int, bool] | None, ...] = tuple(
    None if first & 0x1F == 0x1F else ((first & 0xC0) << 24 | first & 0x1F, first & 0x20 != 0)
    for first in range(256)
)
"""(tag, constructed) of each identifier octet with a low tag number; None: a high one."""
LOW_TAG_FORM: tuple[bool, ...] = tuple(low is not None for low in LOW_TAGS)
"""Whether each identifier octet has a low tag number."""


# --- the reader ------------------------------------------------------------------------


def read(view: View, pos: int, end: int, depth: int = 0) -> FlatTlv:
    """The TLV at ``pos``, which must end by ``end``."""
    if pos + 2 <= end:
        key = view[pos]
        length = view[pos + 1]
        if length < 0x80 and LOW_TAG_FORM[key]:
            stop = pos + 2 + length
            if stop <= end:
                return key, pos, pos + 2, stop, stop
    return _read_any(view, pos, end, depth)


def _read_any(view: View, pos: int, end: int, depth: int) -> FlatTlv:
    """:func:`read` for every form: tag numbers above 30, long and indefinite lengths."""
    key, p, length = read_header(view, pos, end)
    if length is None:
        return _indefinite(view, key, pos, p, end, depth)
    stop = p + length
    if stop > end:
        raise DecodeError(
            f"truncated: {length} content octets announced, {end - p} present",
            where=f"{tag_name(tag_of(key))} at offset {pos}",
        )
    return key, pos, p, stop, stop


def read_header(view: View, pos: int, end: int) -> tuple[int, int, int | None]:
    """The identifier and length octets at ``pos`` (X.690 8.1.2, 8.1.3): the key, the
    offset of the contents and their length (None: indefinite).  The contents need not
    be there: this reads the start of a value that was cut short."""
    key, p = read_identifier(view, pos, end)
    if p >= end:
        raise DecodeError("truncated: a length was expected", where=f"offset {p}")
    first = view[p]
    p += 1
    if first == 0x80:
        return key, p, None
    if first < 0x80:
        return key, p, first
    if first == 0xFF:  # reserved for extension (X.690 8.1.3.5 c)
        raise DecodeError("length octet 0xff is reserved", where=f"offset {p - 1}")
    count = first & 0x7F
    if p + count > end:
        raise DecodeError("truncated length", where=f"offset {p - 1}")
    # Any number of leading zero octets is BER (X.690 8.1.3.5); what is left must fit.
    length = int.from_bytes(view[p : p + count], "big")
    if length.bit_length() > 8 * MAX_LENGTH_OCTETS:
        raise DecodeError(f"a length of {length.bit_length()} bits", where=f"offset {p - 1}")
    return key, p + count, length


def _indefinite(view: View, key: int, pos: int, body: int, end: int, depth: int) -> FlatTlv:
    """A value of indefinite length: constructed, ended by two zero octets (X.690 8.1.3.6)."""
    if not key & CONSTRUCTED:
        raise DecodeError("indefinite length on a primitive value", where=f"offset {pos}")
    if depth >= MAX_DEPTH:
        raise DecodeError(f"nested deeper than {MAX_DEPTH} levels", where=f"offset {pos}")
    q = body
    while True:
        if q + 2 > end:
            where = f"{tag_name(tag_of(key))} at offset {pos}"
            raise DecodeError("missing end-of-contents", where=where)
        if view[q] == 0:
            if view[q + 1] != 0:
                raise DecodeError("malformed end-of-contents", where=f"offset {q}")
            return key, pos, body, q, q + 2
        q = read(view, q, end, depth + 1)[4]


def read_identifier(view: View, pos: int, end: int) -> tuple[int, int]:
    """The key of the identifier octets at ``pos`` and the offset past them (X.690 8.1.2)."""
    if pos >= end:
        raise DecodeError("truncated: a tag was expected", where=f"offset {pos}")
    first = view[pos]
    if first & 0x1F != 0x1F:
        return first, pos + 1
    number = 0
    p = pos + 1
    for count in range(4):
        if p >= end:
            raise DecodeError("truncated tag number", where=f"offset {p}")
        octet = view[p]
        p += 1
        if count == 0 and octet == 0x80:
            raise DecodeError("tag number with a leading zero septet", where=f"offset {p - 1}")
        number = (number << 7) | (octet & 0x7F)
        if not octet & 0x80:
            if number > MAX_TAG_NUMBER:  # the class lives in the bits above
                raise DecodeError("tag number too large", where=f"offset {p - 1}")
            if number < 0x1F:
                return first & 0xE0 | number, p
            return 0x100 | first | number << 9, p
    raise DecodeError("tag number longer than four octets", where=f"offset {p}")


def tag_of(key: int) -> int:
    """The tag (class and number, as :mod:`p1.ber.tags` writes them) of a key."""
    if key < 0x100:
        return (key & 0xC0) << 24 | key & 0x1F
    return (key & 0xC0) << 24 | key >> 9


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
        raise DecodeError(f"{tag_name(tag_of(key))} must be constructed", where=what)
    return _walk(view, pos, end)


def _walk(view: View, pos: int, end: int) -> list[FlatTlv]:
    """The TLVs that fill ``pos:end``."""
    found: list[FlatTlv] = []
    append = found.append
    while pos < end:
        item = read(view, pos, end, 1)
        append(item)
        pos = item[4]
    return found


def octets(view: View, tlv: FlatTlv, what: str) -> bytes:
    """The octets of a string type, primitive or segmented (X.690 8.7.3, 8.23.6): the
    segments of every restricted character string, UTCTime and GeneralizedTime too
    (X.680 43.3, 46.3), are OCTET STRINGs."""
    if not tlv[0] & CONSTRUCTED:
        return bytes(view[tlv[2] : tlv[3]])
    return b"".join(segments(view, tlv, OCTET_STRING_KEY, what))


def segments(view: View, tlv: FlatTlv, segment_key: int, what: str) -> list[View]:
    """The contents of the primitive segments of a string value, in order, whatever its
    form: the value's own contents when it is primitive, else those of its segments,
    nested to any depth (X.690 8.6.4, 8.7.3.2); every segment has the identifier
    ``segment_key`` (primitive or constructed)."""
    if not tlv[0] & CONSTRUCTED:
        return [view[tlv[2] : tlv[3]]]
    pieces: list[View] = []
    _segments(view, tlv, segment_key, what, 0, pieces)
    return pieces


def _segments(
    view: View, tlv: FlatTlv, segment_key: int, what: str, depth: int, pieces: list[View]
) -> None:
    for item in _walk(view, tlv[2], tlv[3]):
        key = item[0]
        if key & ~CONSTRUCTED != segment_key:
            expected = tag_name(tag_of(segment_key))
            raise DecodeError(f"expected {expected}, found {tag_name(tag_of(key))}", where=what)
        if not key & CONSTRUCTED:
            pieces.append(view[item[2] : item[3]])
        elif depth < MAX_DEPTH:
            _segments(view, item, segment_key, what, depth + 1, pieces)
        else:
            raise DecodeError("string segments nested too deep", where=what)


def as_view(data: bytes | bytearray | memoryview) -> memoryview:
    """A flat byte view of ``data`` (no copy)."""
    view = memoryview(data)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


# --- the same TLV as an object ---------------------------------------------------------


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


new_tlv = tuple.__new__  # Tlv(...) without the Python-level __new__ of a NamedTuple


def read_tlv(data: memoryview, offset: int, limit: int, depth: int = 0) -> Tlv:
    """The TLV that starts at ``offset`` and must end by ``limit``, as a :class:`Tlv`."""
    return tlv_of(data, read(data, offset, limit, depth))


def tlv_of(data: memoryview, item: FlatTlv) -> Tlv:
    """The TLV ``item`` (the tuple form) of ``data`` as a :class:`Tlv`."""
    key, start, body, end, stop = item
    low = LOW_TAGS[key] if key < 0x100 else None
    if low is not None:
        return new_tlv(Tlv, (data, start, body, end, stop, low[0], low[1]))
    return new_tlv(Tlv, (data, start, body, end, stop, tag_of(key), key & CONSTRUCTED != 0))


def read_single(data: bytes | bytearray | memoryview, what: str) -> Tlv:
    """The one TLV that ``data`` holds; trailing bytes are an error."""
    return tlv_of(*single(data, what))


def children(tlv: Tlv, what: str) -> list[Tlv]:
    """The TLVs inside a constructed value."""
    data, _, offset, end, _, tag, is_constructed = tlv
    if not is_constructed:
        raise DecodeError(f"{tag_name(tag)} must be constructed", where=what)
    return [tlv_of(data, item) for item in _walk(data, offset, end)]


def expect(tlv: Tlv, tag: int, what: str) -> Tlv:
    """``tlv`` if it has ``tag``, else a DecodeError naming both tags."""
    if tlv.tag != tag:
        raise DecodeError(f"expected {tag_name(tag)}, found {tag_name(tlv.tag)}", where=what)
    return tlv


def only_child(tlv: Tlv, what: str) -> Tlv:
    """The single value inside an explicit tag."""
    data, _, body, end, _, _, is_constructed = tlv
    if is_constructed and body < end:
        inner = read_tlv(data, body, end, 1)
        if inner[4] == end:
            return inner
    count = len(children(tlv, what))
    raise DecodeError(f"explicit tag holds {count} values, not one", where=what)


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
    return octets(tlv.data, flat(tlv), what)


def flat(tlv: Tlv) -> FlatTlv:
    """``tlv`` in the tuple form (its key has the identifier's class, form and number)."""
    _, start, body, end, stop, tag, is_constructed = tlv
    key = (tag >> 24) | (CONSTRUCTED if is_constructed else 0)
    number = tag & 0xFFFFFF
    key |= number if number < 0x1F else 0x11F | number << 9
    return key, start, body, end, stop
