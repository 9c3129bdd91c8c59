"""Transport, session and presentation selectors: the octets that name a service access point
within an address (X.213 Annex A; ITU-T X.224 13.3.4 a, X.225 8.3.1 (CN), X.226 clause 8 (CP-type)).

A selector is an octet string; products write them as text (PP/ISODE's "591" or "x400", the
octets of the ASCII characters) or as hexadecimal.  Here a selector is written either way::

    x400        the four octets 78 34 30 30 (printable ASCII, taken as it is)
    hex:0591    the two octets 05 91 (an even number of hexadecimal digits)
    ""          no selector: the parameter is left out

Bounds: X.225 limits a session selector (PI 51, 52) to 16 octets.  X.224 bounds a TSAP-ID
parameter only by the header (LI <= 254); 32 octets is the bound kept here, as Wireshark's
COTP dissector and the products we meet use far shorter ones.  X.226 leaves the presentation
selector an unbounded OCTET STRING; 64 octets is ours.

Public API::

    MAX_TSEL, MAX_SSEL, MAX_PSEL
    parse_selector(text, *, limit) -> bytes       SelectorError(why) for what it refuses
    format_selector(value) -> str                  the written form parse_selector reads back
"""

from __future__ import annotations

import string

__all__ = ["MAX_PSEL", "MAX_SSEL", "MAX_TSEL", "SelectorError", "format_selector", "parse_selector"]

MAX_TSEL = 32
"""Octets of a TSAP selector (X.224 13.3.4 a: calling 0xC1, called 0xC2)."""
MAX_SSEL = 16
"""Octets of a session selector (X.225 8.3.1, CN: PI 51 calling, PI 52 called)."""
MAX_PSEL = 64
"""Octets of a presentation selector (X.226 CP-type normal-mode-parameters [1]/[2])."""

HEX_PREFIX = "hex:"
_PRINTABLE = frozenset(string.printable) - frozenset("\t\n\r\x0b\x0c")
_HEX_DIGITS = frozenset(string.hexdigits)


class SelectorError(ValueError):
    """A written selector that cannot be read; ``why`` says what is wrong with it."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def parse_selector(text: str, *, limit: int) -> bytes:
    """The octets of a selector written as printable ASCII text or ``hex:`` digits; b"" for
    the empty string (no selector).  At most ``limit`` octets."""
    if text.startswith(HEX_PREFIX):
        value = _hex(text[len(HEX_PREFIX) :])
    elif all(char in _PRINTABLE for char in text):
        value = text.encode("ascii")
    else:
        raise SelectorError("printable ASCII text, or hex: and hexadecimal digits")
    if len(value) > limit:
        raise SelectorError(f"at most {limit} octets ({len(value)} given)")
    return value


def _hex(digits: str) -> bytes:
    if not digits or len(digits) % 2 or not all(char in _HEX_DIGITS for char in digits):
        raise SelectorError("an even, non-zero number of hexadecimal digits after hex:")
    return bytes.fromhex(digits)


def format_selector(value: bytes) -> str:
    """``value`` as :func:`parse_selector` reads it: text when that reads back the same
    octets, else ``hex:`` digits."""
    text = value.decode("latin-1")
    if all(char in _PRINTABLE for char in text) and not text.startswith(HEX_PREFIX):
        return text
    return HEX_PREFIX + value.hex()
