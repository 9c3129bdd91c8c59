"""Primitive values read and written: INTEGER, ENUMERATED, BOOLEAN, BIT STRING, OBJECT
IDENTIFIER, the ASCII string types and UTCTime (X.690 8.2, 8.3, 8.4, 8.6, 8.19, 8.21;
X.680 41, 47).

Each value is decided in one function, which both forms of a TLV reach: the object
(:class:`p1.ber.Tlv`: :func:`read_int`, :func:`read_bits`, :func:`read_oid`,
:func:`read_text`...) and the tuple form of :func:`p1.ber.read` (:func:`integer`,
:func:`bit_string` / :func:`bits`, :func:`oid`, :func:`text`...).  Strings, times and
BIT STRINGs are read in any form, segments nested at any depth
(:func:`p1.ber.segments`).

Character strings: PrintableString and NumericString are read strictly, their alphabets
(X.680 41.4) checked as they are read (:func:`read_text` by the value's universal tag or
the type it is given, :func:`printable_text` / :func:`numeric_text` for the tuple form);
the other string types may carry control characters (IA5String: the whole of ISO 646;
TeletexString, UniversalString, BMPString: theirs), which :func:`escape_controls`
writes out wherever such text is shown or stored as text (a log line, a mailbox name,
a listing).

UTCTime: :func:`parse_utctime` / :func:`read_utctime` read the standard's forms;
:func:`parse_lenient_utctime` / :func:`read_lenient_utctime`, for fields an MTA does not
route on, also the forms other products write (no zone, a three-digit year), listing each
as a :class:`Deviation` in the caller's list (:func:`note_long_tag` does the same for a
tag number written in the long form).

Part of :mod:`p1.ber`, which re-exports its public names but the string checks
(``PRINTABLE_OCTETS``, ``NUMERIC_OCTETS``, :func:`printable_text`, :func:`numeric_text`)
and :func:`escape_controls` / :func:`escape_text` / :func:`is_control`: import those from
this module.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, TypeVar

from p1.ber.reader import (
    BIT_STRING_KEY,
    FlatTlv,
    Tlv,
    View,
    flat,
    octets,
    read_octets,
    segments,
)
from p1.ber.tags import (
    CONSTRUCTED,
    MAX_INT_OCTETS,
    NUMERIC_STRING,
    PRINTABLE_STRING,
    tag_name,
)
from p1.ber.writer import tlv_bytes
from p1.errors import DecodeError, EncodeError

OID_KEY = 0x06
"""The identifier of an OBJECT IDENTIFIER (universal, primitive)."""

# --- INTEGER, ENUMERATED, NULL ---------------------------------------------------------


def read_int(tlv: Tlv, what: str) -> int:
    """The value of a primitive INTEGER or ENUMERATED (any tag)."""
    return _int(tlv[0], tlv[2], tlv[3], tlv[6], what)


def integer(view: View, tlv: FlatTlv, what: str) -> int:
    """:func:`read_int` in the tuple form."""
    return _int(view, tlv[2], tlv[3], tlv[0] & CONSTRUCTED, what)


def _int(view: View, body: int, end: int, is_constructed: int | bool, what: str) -> int:
    """An INTEGER or ENUMERATED from its contents ``body:end`` (X.690 8.3, 8.4)."""
    if is_constructed:
        raise DecodeError("an integer must be primitive", where=what)
    if not 0 < end - body <= MAX_INT_OCTETS:
        why = f"integer of {end - body} octets is out of range"
        if body == end:
            why = "an integer needs at least one content octet (X.690 8.3.1)"
        raise DecodeError(why, where=what)
    return int.from_bytes(view[body:end], "big", signed=True)


def boolean(view: View, tlv: FlatTlv, what: str) -> bool:
    """A BOOLEAN: any non-zero octet is TRUE (X.690 8.2)."""
    if tlv[0] & CONSTRUCTED:
        raise DecodeError("a BOOLEAN must be primitive", where=what)
    if tlv[3] - tlv[2] != 1:
        raise DecodeError("a BOOLEAN has one content octet", where=what)
    return view[tlv[2]] != 0


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
    return bit_string(tlv.data, flat(tlv), what)


def bits(view: View, tlv: FlatTlv, what: str) -> frozenset[int]:
    """The numbers of the one bits of a BIT STRING (X.690 8.6), in any form."""
    return bits_to_numbers(*bit_string(view, tlv, what))


def bit_string(view: View, tlv: FlatTlv, what: str) -> tuple[bytes, int]:
    """``(octets, number of bits)`` of a BIT STRING in the tuple form, primitive or
    segmented at any depth (X.690 8.6.4: only the last segment may have unused bits);
    unused trailing bits are cleared."""
    if not tlv[0] & CONSTRUCTED:
        return _bit_segment(view[tlv[2] : tlv[3]], what)
    pieces = [_bit_segment(piece, what) for piece in segments(view, tlv, BIT_STRING_KEY, what)]
    if any(length % 8 for _, length in pieces[:-1]):
        raise DecodeError("only the last BIT STRING segment may have unused bits", where=what)
    return b"".join(p[0] for p in pieces), sum(p[1] for p in pieces)


def _bit_segment(contents: View, what: str) -> tuple[bytes, int]:
    """The bits of one primitive BIT STRING (segment) from its contents (X.690 8.6.2)."""
    if not contents:
        raise DecodeError("a BIT STRING needs its unused-bits octet", where=what)
    unused = contents[0]
    if unused > 7 or (unused and len(contents) == 1):
        raise DecodeError(
            f"{unused} unused bits in a BIT STRING of {len(contents) - 1} octets", where=what
        )
    octets = bytearray(contents[1:])
    if unused:
        octets[-1] &= (0xFF << unused) & 0xFF
    return bytes(octets), (len(contents) - 1) * 8 - unused


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
    return oid_text(bytes(tlv.data[tlv.body : tlv.end]), what)


def oid(view: View, tlv: FlatTlv, what: str) -> str:
    """An OBJECT IDENTIFIER (universal tag) in the tuple form, as dotted text."""
    if tlv[0] != OID_KEY:
        raise DecodeError(f"expected an OBJECT IDENTIFIER, found tag 0x{tlv[0]:02x}", where=what)
    return oid_text(bytes(view[tlv[2] : tlv[3]]), what)


def oid_text(contents: bytes, what: str) -> str:
    """Dotted text of the OBJECT IDENTIFIER with contents octets ``contents``."""
    dotted = _OID_TEXTS.get(contents)
    if dotted is None:
        dotted = _read_oid_contents(contents, what)
        if len(contents) <= _OID_CACHE_OCTETS:
            _OID_TEXTS.remember(contents, dotted)
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


@functools.lru_cache(maxsize=1024)
def oid_tlv(dotted: str) -> bytes:
    """An OBJECT IDENTIFIER TLV; raises :class:`p1.errors.EncodeError`."""
    return tlv_bytes(OID_KEY, oid_contents(dotted, "OBJECT IDENTIFIER"))


def is_oid(text: str) -> bool:
    """``text`` is a dotted object identifier."""
    return bool(_OID_TEXT.match(text))


# --- character strings -----------------------------------------------------------------

PRINTABLE_OCTETS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 '()+,-./:=?"
"""The PrintableString alphabet (X.680 41.4): letters, digits, space and
``'()+,-./:=?``."""
NUMERIC_OCTETS = b"0123456789 "
"""The NumericString alphabet (X.680 41.4): digits and space."""
_ALPHABETS = {
    PRINTABLE_STRING: (PRINTABLE_OCTETS, "PrintableString", bytes.isalnum),
    NUMERIC_STRING: (NUMERIC_OCTETS, "NumericString", bytes.isdigit),
}
"""Per checked string type: its alphabet, its name and a quick test that passes most
values (``isalnum()``, ASCII letters and digits only, takes a tenth of the time
``translate()`` takes to list the octets outside the alphabet)."""


def read_text(tlv: Tlv, what: str, string_type: int | None = None) -> str:
    """An IA5String, PrintableString or NumericString: ASCII, primitive or constructed.

    ``string_type``, the universal tag of the value's type, defaults to the value's own
    tag; an implicitly tagged PrintableString or NumericString needs it to have its
    alphabet checked.  The alphabets of those two are checked (X.680 41.4): an octet
    outside raises a DecodeError naming it; IA5String takes any ASCII octet.
    """
    contents = read_octets(tlv, what)
    alphabet = _ALPHABETS.get(tlv.tag if string_type is None else string_type)
    return _decoded(contents, "ascii", what) if alphabet is None else _in(contents, alphabet, what)


def text(view: View, tlv: FlatTlv, what: str, encoding: str = "ascii") -> str:
    """A character string in the tuple form (any tag, primitive or segmented), decoded
    with ``encoding`` (IA5String: ``ascii``; TeletexString: ``latin-1``)."""
    return _decoded(octets(view, tlv, what), encoding, what)


def printable_text(view: View, tlv: FlatTlv, what: str) -> str:
    """A PrintableString in the tuple form (any tag, primitive or segmented), its
    alphabet checked (X.680 41.4)."""
    return _in(octets(view, tlv, what), _ALPHABETS[PRINTABLE_STRING], what)


def numeric_text(view: View, tlv: FlatTlv, what: str) -> str:
    """A NumericString in the tuple form, its alphabet checked (X.680 41.4)."""
    return _in(octets(view, tlv, what), _ALPHABETS[NUMERIC_STRING], what)


def _decoded(contents: bytes, encoding: str, what: str) -> str:
    """``contents`` decoded, or a DecodeError naming the first octet that is not."""
    try:
        return contents.decode(encoding)
    except UnicodeDecodeError as exc:
        octet = f"0x{contents[exc.start]:02x}"
        if encoding == "ascii":
            raise DecodeError(f"non-ASCII octet at {exc.start} ({octet})", where=what) from None
        raise DecodeError(f"octet {octet} at {exc.start} is not {encoding}", where=what) from None


def _in(contents: bytes, alphabet: tuple[bytes, str, Callable[[bytes], bool]], what: str) -> str:
    """``contents`` as text if every octet is in the ``alphabet`` (octets, type name,
    quick test)."""
    octets, type_name, quick = alphabet
    if not quick(contents) and contents.translate(None, octets):
        index = next(i for i, octet in enumerate(contents) if octet not in octets)
        octet = contents[index]
        shown = f"'{chr(octet)}'" if 0x20 < octet < 0x7F else f"0x{octet:02x}"
        raise DecodeError(f"{shown} at {index} is not a {type_name} character", where=what)
    return contents.decode("ascii")


def text_contents(text: str, what: str) -> bytes:
    """ASCII contents octets of ``text``."""
    if not isinstance(text, str):
        raise EncodeError(f"{text!r} is not text", where=what)
    try:
        return text.encode("ascii")
    except UnicodeEncodeError as exc:
        raise EncodeError(f"non-ASCII character at {exc.start} of {text!r}", where=what) from None


_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
"""Control characters (C0, DEL, C1), the Unicode line and paragraph separators and the
bidirectional formatting characters (Unicode Standard Annex 9: the marks U+061C,
U+200E, U+200F, the embeddings, overrides and isolates U+202A-U+202E, U+2066-U+2069):
what would end a line of a log or a listing, act on a terminal, or make text read in
another order than it is stored (the "Trojan Source" reordering)."""

_CONTROLS_BUT_LINES = re.compile(
    r"\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]"
)
""":data:`_CONTROLS` but tab and the line ends (LF, CR LF): what :func:`escape_text`
escapes."""


def escape_controls(text: str) -> str:
    """``text`` with each control character written as ``\\xHH`` (C0, DEL and C1) or
    ``\\uHHHH`` (line and paragraph separators, bidirectional formatting), everything
    else as it is: text a peer sent stays on one line and shows what it holds.  (The O/R
    name text form reads these escapes back, see :mod:`p1.mts.orname`.)"""
    if text.isprintable():  # (the usual case: one C call)
        return text
    return _CONTROLS.sub(_control_escape, text)


def escape_text(text: str) -> str:
    """Text of many lines (a body part, a listing) as :func:`escape_controls` writes one
    line: its line ends kept (LF and CR LF), and tabs, every other control character
    escaped, so that a lone CR cannot overwrite what a line showed."""
    if text.isprintable():
        return text
    return _CONTROLS_BUT_LINES.sub(_control_escape, text)


def _control_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def is_control(char: str) -> bool:
    """Whether :func:`escape_controls` escapes ``char``."""
    return _CONTROLS.fullmatch(char) is not None


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
    # (A text read by parse_lenient_utctime is written back as received too.)
    try:
        parsed = parse_lenient_utctime(text, "UTCTime", None)
    except DecodeError:
        return False
    return parsed == value and parsed.utcoffset() == value.utcoffset()


def utctime_contents(value: datetime, what: str) -> bytes:
    """Contents octets of a UTCTime."""
    return utctime_text(value, what).encode("ascii")


# --- tolerated deviations ----------------------------------------------------------------
#
# Other products write some values outside the standard's form (a UTCTime without its
# zone, PP's three-digit year).  Where the MTA does not route on the field, the decoders
# read such a value as best they can and list a Deviation, so that the caller can log it
# and relay the value as received; in a field it routes on, the value is still an error.


@dataclass(frozen=True, slots=True)
class Deviation:
    """A value received outside the standard's form and read anyway.

    ``field`` is where it was (the path a DecodeError would name, e.g.
    ``MessageTransferEnvelope.trace-information[1].domain-supplied-information.arrival-time``),
    ``found`` the value as received (text, or hex of the octets), with control characters
    escaped, and ``read_as`` what it was taken for.
    """

    field: str
    found: str
    read_as: str


Deviations = list[Deviation]
"""What a decoder appends the deviations it meets to (the caller's list: no global state)."""

_LENIENT_UTCTIME = re.compile(r"^(\d{2,3})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)?(Z|[+-]\d\d\d\d)?$")
"""UTCTime as products write it: a three-digit year (years since 1900, PP) and the zone
left out (taken as UTC) are accepted besides the standard's forms."""


def parse_lenient_utctime(text: str, what: str, deviations: Deviations | None) -> WireTime:
    """:func:`parse_utctime`, also accepting a UTCTime without its zone (read as UTC) or
    with a three-digit year (years since 1900: ``126`` is 2026), which X.680 clause 47.3
    does not allow.  Such a value is appended to ``deviations`` (when not None) and
    remembers its text, so it is written back as received; any other malformed text
    raises the DecodeError of :func:`parse_utctime`."""
    try:
        return parse_utctime(text, what)
    except DecodeError as error:
        value = _lenient_utctime(text)
        if value is None:
            raise error from None
    if deviations is not None:
        deviations.append(Deviation(what, escape_controls(text), value.isoformat()))
    return value


def _lenient_utctime(text: str) -> WireTime | None:
    """``text`` in one of the tolerated forms, or None."""
    match = _LENIENT_UTCTIME.match(text) if text.isascii() else None
    if match is None:
        return None
    yy, month, day, hour, minute, second, zone = match.groups()
    # (three digits: years since 1900, as PP counts them)
    year = int(yy) + (2000 if len(yy) == 2 and int(yy) < UTCTIME_PIVOT else 1900)
    try:
        tz = UTC if zone is None or zone == "Z" else _offset(zone)
        value = WireTime(
            year, int(month), int(day), int(hour), int(minute), int(second or 0), tzinfo=tz
        )
    except ValueError:
        return None
    value.utctime = text
    return value


def read_lenient_utctime(tlv: Tlv, what: str, deviations: Deviations | None) -> WireTime:
    """A UTCTime value (under any tag) read by :func:`parse_lenient_utctime`."""
    return parse_lenient_utctime(read_text(tlv, what), what, deviations)


def note_long_tag(data: View, start: int, tag: int, what: str, deviations: Deviations) -> None:
    """Append a Deviation when the identifier at ``start`` writes a tag number below 31
    in the high-tag-number form (``9f 08`` for ``[8]``), which X.690 clause 8.1.2.2
    reserves for numbers above 30.  (The reader reads it as the tag it stands for.)"""
    if data[start] & 0x1F == 0x1F and tag & 0xFFFFFF < 0x1F:
        found = bytes(data[start : start + 2]).hex(" ")
        read_as = f"{tag_name(tag)} ({bytes((data[start] & 0xE0 | tag & 0x1F,)).hex()})"
        deviations.append(Deviation(f"{what} tag", found, read_as))


def note_long_tags(members: Mapping[str, Tlv], what: str, deviations: Deviations) -> None:
    """:func:`note_long_tag` for each member of a SET read by :func:`p1.ber.split_set`.
    (It runs for every envelope: one octet looked at per member, by tuple index.)"""
    for tlv in members.values():
        if tlv[0][tlv[1]] & 0x1F == 0x1F:
            _note_long_tags(members, what, deviations)
            return


def _note_long_tags(members: Mapping[str, Tlv], what: str, deviations: Deviations) -> None:
    for name, tlv in members.items():
        where = f"{what}.{name.replace('_', '-')}"
        note_long_tag(tlv.data, tlv.start, tlv.tag, where, deviations)
