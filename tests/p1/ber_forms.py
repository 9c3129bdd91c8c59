"""Legal BER forms of a value, for property tests: the same value, written the other ways
X.690 allows a sender to write it.

:func:`reform` takes a DER encoding (low tag numbers, shortest definite lengths, as our
encoder and asn1tools write) and writes it again with choices drawn at random for each
TLV:

- the length: short, long form with extra leading zero octets (X.690 8.1.3.5: up to
  three mostly, now and then a dozen), or indefinite for a constructed value (8.1.3.6);
- a primitive string split into OCTET STRING segments, possibly nested (8.7.3.2, 8.23.6;
  UTCTime and GeneralizedTime too, VisibleStrings by X.680 46.3 and 47.3);
- a primitive BIT STRING split into BIT STRING segments, possibly nested, only the last
  with unused bits (8.6.4);
- the tag number below 31 in the high-number form (8.1.2.4), when asked for.

The parser here is independent of :mod:`p1.ber`: it is the yardstick, not the thing
measured.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass

Path = tuple[int, ...]
"""The identifier octets of the enclosing TLVs, outermost first."""


@dataclass(frozen=True)
class Rules:
    """What may change where: ``string(path, octet)`` says whether a primitive value is a
    string (may be split in OCTET STRING segments), ``bits(path, octet)`` whether it is a
    BIT STRING (may be split in BIT STRING segments; by default the universal ones),
    ``opaque(path, octet, contents)`` keeps a subtree as it is (values the decoder keeps
    as received, such as open types)."""

    string: Callable[[Path, int], bool]
    opaque: Callable[[Path, int, bytes], bool] = lambda path, octet, contents: False
    high_tags: bool = False
    bits: Callable[[Path, int], bool] = lambda path, octet: octet == BIT_STRING


BIT_STRING = 0x03
"""The identifier of a primitive universal BIT STRING."""
TIMES = frozenset({0x17, 0x18})
"""UTCTime and GeneralizedTime: restricted strings, segmented as the others are."""


def parse_der(data: bytes, pos: int = 0) -> tuple[int, bytes, int]:
    """(identifier octet, contents, next offset) of the DER TLV at ``pos``."""
    octet = data[pos]
    assert octet & 0x1F != 0x1F, "low tag numbers only"
    first = data[pos + 1]
    body = pos + 2
    length = first
    if first & 0x80:
        count = first & 0x7F
        assert 0 < count <= 4
        length = int.from_bytes(data[body : body + count], "big")
        body += count
    assert body + length <= len(data), "truncated DER"
    return octet, data[body : body + length], body + length


def parse_all(data: bytes) -> list[tuple[int, bytes]]:
    """Every TLV that ``data`` holds, in order."""
    found = []
    pos = 0
    while pos < len(data):
        octet, contents, pos = parse_der(data, pos)
        found.append((octet, contents))
    return found


def reform(data: bytes, rnd: random.Random, rules: Rules) -> bytes:
    """``data`` (one DER TLV) written again in randomly chosen legal BER forms."""
    octet, contents, end = parse_der(data)
    assert end == len(data), "one TLV"
    return _reform(octet, contents, (), rnd, rules)


def _reform(octet: int, contents: bytes, path: Path, rnd: random.Random, rules: Rules) -> bytes:
    if rules.opaque(path, octet, contents):
        return _definite(octet, contents, rnd, rules)
    if octet & 0x20:
        inner = (*path, octet)
        parts = [_reform(o, c, inner, rnd, rules) for o, c in parse_all(contents)]
        body = b"".join(parts)
        if rnd.random() < 0.3:
            return _identifier(octet, rnd, rules) + b"\x80" + body + b"\x00\x00"
        return _definite(octet, body, rnd, rules)
    if rules.string(path, octet) and rnd.random() < 0.4:
        return _identifier(octet | 0x20, rnd, rules) + _segments(contents, rnd, 0)
    if rules.bits(path, octet) and contents and rnd.random() < 0.4:
        body = _bit_segments(contents[1:], contents[0], rnd, 0)
        return _identifier(octet | 0x20, rnd, rules) + _wrapped(body, rnd)
    return _definite(octet, contents, rnd, rules)


def _segments(contents: bytes, rnd: random.Random, depth: int) -> bytes:
    """Length and contents of a constructed string holding ``contents`` in segments."""
    cuts = sorted(rnd.sample(range(len(contents) + 1), min(len(contents) + 1, rnd.randint(1, 3))))
    bounds = [0, *cuts, len(contents)]
    pieces = []
    for start, stop in itertools.pairwise(bounds):
        piece = contents[start:stop]
        if depth < 2 and rnd.random() < 0.2:
            pieces.append(b"\x24" + _segments(piece, rnd, depth + 1))
        else:
            pieces.append(b"\x04" + _length(len(piece), rnd) + piece)
    return _wrapped(b"".join(pieces), rnd)


def _bit_segments(data: bytes, unused: int, rnd: random.Random, depth: int) -> bytes:
    """BIT STRING segments (TLVs) holding the bits of ``data`` but its last ``unused``:
    whole octets in each segment, the unused bits in the last (X.690 8.6.4.2)."""
    # Cut between octets; with unused bits, the last octet stays in the last segment.
    last = len(data) - 1 if unused else len(data)
    count = min(last + 1, rnd.randint(1, 3))
    cuts = sorted(rnd.sample(range(last + 1), count)) if last >= 0 else []
    bounds = [0, *cuts, len(data)]
    pieces = []
    for index, (start, stop) in enumerate(itertools.pairwise(bounds)):
        piece_unused = unused if index == len(bounds) - 2 else 0
        piece = data[start:stop]
        if depth < 2 and rnd.random() < 0.2:
            inner = _bit_segments(piece, piece_unused, rnd, depth + 1)
            pieces.append(b"\x23" + _wrapped(inner, rnd))
        else:
            contents = bytes((piece_unused,)) + piece
            pieces.append(b"\x03" + _length(len(contents), rnd) + contents)
    return b"".join(pieces)


def _wrapped(body: bytes, rnd: random.Random) -> bytes:
    """Length and contents of a constructed value holding ``body``, either length form."""
    if rnd.random() < 0.3:
        return b"\x80" + body + b"\x00\x00"
    return _length(len(body), rnd) + body


def _definite(octet: int, contents: bytes, rnd: random.Random, rules: Rules) -> bytes:
    return _identifier(octet, rnd, rules) + _length(len(contents), rnd) + contents


def _identifier(octet: int, rnd: random.Random, rules: Rules) -> bytes:
    if rules.high_tags and rnd.random() < 0.2:
        return bytes((octet | 0x1F, octet & 0x1F))
    return bytes((octet,))


def _length(length: int, rnd: random.Random) -> bytes:
    if length < 0x80 and rnd.random() < 0.6:
        return bytes((length,))
    extra = rnd.randint(0, 3) if rnd.random() < 0.95 else rnd.randint(4, 12)
    size = max(1, (length.bit_length() + 7) // 8) + extra
    return bytes((0x80 | size,)) + length.to_bytes(size, "big")
