"""Minimal definite-length writers: identifiers, lengths, TLVs (X.690 8.1, DER 10.1),
by tag (:func:`tlv`, :func:`constructed`) or by identifier octet (:func:`tlv_bytes`,
:func:`header`, :func:`wrap`, for the tuple form of :func:`p1.ber.read`); and
:func:`exact`, whether a TLV read has the header these write.

Part of :mod:`p1.ber`, which re-exports its public names.
"""

from __future__ import annotations

from collections.abc import Iterable

from p1.ber.reader import FlatTlv, as_view, read_identifier
from p1.ber.tags import CLASS_NAMES, CONSTRUCTED

# --- writing ---------------------------------------------------------------------------


def length_octets(length: int) -> bytes:
    """The definite length in its shortest form (X.690 8.1.3)."""
    if length < 0x80:
        return bytes((length,))
    size = (length.bit_length() + 7) // 8
    return bytes((0x80 | size,)) + length.to_bytes(size, "big")


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
    for cls in CLASS_NAMES
    for number in range(0x1F)
    for form in (0, 1)
}
"""identifier() of every low tag number, by ``tag << 1 | constructed``."""


def short_headers(octet: int) -> tuple[bytes, ...]:
    """``header(octet, n)`` for each length ``n`` below 0x80, by ``n``.  A writer
    indexes these and adds the contents: half the cost of formatting the three parts
    together, for the many short values.  (ValueError if ``octet`` is not 0..255.)"""
    headers = SHORT_HEADERS.get(octet)
    if headers is None:
        headers = tuple(bytes((octet, n)) for n in range(0x80))
        SHORT_HEADERS[octet] = headers
    return headers


SHORT_HEADERS: dict[int, tuple[bytes, ...]] = {}
"""short_headers() by identifier octet, each made when first asked for (at most 256;
the codecs use a few dozen, some 4 KB each)."""


def tlv(tag: int, contents: bytes | bytearray | memoryview, constructed: bool = False) -> bytes:
    """One definite-length TLV."""
    key = tag << 1 | 1 if constructed else tag << 1
    if type(contents) is not bytes:
        contents = bytes(contents)
    head = _IDENTIFIERS.get(key)
    if head is not None:
        return tlv_bytes(head[0], contents)
    return b"%s%s%s" % (identifier(tag, constructed), length_octets(len(contents)), contents)


def header(octet: int, length: int) -> bytes:
    """A one-octet identifier and the shortest definite length (X.690 8.1.3)."""
    if length < 0x80:
        return (SHORT_HEADERS.get(octet) or short_headers(octet))[length]
    return bytes((octet,)) + length_octets(length)


def tlv_bytes(octet: int, contents: bytes) -> bytes:
    """One TLV with a one-octet identifier."""
    length = len(contents)
    if length < 0x80:  # (see short_headers)
        return (SHORT_HEADERS.get(octet) or short_headers(octet))[length] + contents
    return b"%c%s%s" % (octet, length_octets(length), contents)  # one copy of the contents


def wrap(octet: int, chunks: list[bytes]) -> list[bytes]:
    """A TLV around ``chunks`` as a list of chunks: the chunks are not copied."""
    return [header(octet, sum(map(len, chunks))), *chunks]


def exact(tlv: FlatTlv) -> bool:
    """The header of ``tlv`` is the one this module writes: one identifier octet and
    the shortest definite length."""
    key, start, body, end, stop = tlv
    return key < 0x100 and stop == end and body - start == 1 + len(length_octets(end - body))


def constructed(tag: int, parts: Iterable[bytes]) -> bytes:
    """A constructed definite-length TLV holding ``parts`` in order."""
    return tlv(tag, b"".join(parts), True)


def retag(encoding: bytes, tag: int) -> bytes:
    """``encoding`` with its outermost tag replaced by ``tag`` (an IMPLICIT tag)."""
    view = as_view(encoding)
    key, after = read_identifier(view, 0, len(view))
    return identifier(tag, key & 0x20 != 0) + encoding[after:]
