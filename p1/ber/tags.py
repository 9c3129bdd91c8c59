"""Identifier octets: tag classes, tag numbers and the universal tags (X.690 8.1.2).

Part of :mod:`p1.ber`, which re-exports its public names.
"""

from __future__ import annotations

from typing import Final

UNIVERSAL = 0x00
APPLICATION = 0x40
CONTEXT = 0x80
PRIVATE = 0xC0
CONSTRUCTED: Final = 0x20
"""The constructed bit of an identifier octet (X.690 8.1.2.5)."""

MAX_DEPTH = 64
"""Deepest nesting walked in an indefinite-length value (a guard, not a protocol limit)."""

MAX_INT_OCTETS = 16
MAX_LENGTH_OCTETS = 8
"""Most significant octets in a definite length read (leading zero octets aside)."""


def universal(number: int) -> int:
    """The tag key of ``[UNIVERSAL number]``."""
    return (UNIVERSAL << 24) | number


def application(number: int) -> int:
    """The tag key of ``[APPLICATION number]``."""
    return (APPLICATION << 24) | number


def context(number: int) -> int:
    """The tag key of a context-specific ``[number]``."""
    return (CONTEXT << 24) | number


MAX_TAG_NUMBER = 0xFFFFFF
"""Largest tag number read; no X.400 or OSI module comes near it."""

CLASS_NAMES = {
    UNIVERSAL: "UNIVERSAL ",
    APPLICATION: "APPLICATION ",
    CONTEXT: "",
    PRIVATE: "PRIVATE ",
}


def tag_name(tag: int) -> str:
    """``[APPLICATION 4]``, ``[2]``, ``[UNIVERSAL 16]``: a tag key for error messages."""
    return f"[{CLASS_NAMES[tag >> 24]}{tag & 0xFFFFFF}]"


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
