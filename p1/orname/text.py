"""The two text forms of O/R names: parse and format (see :mod:`p1.mts.orname`).

Import the public names from :mod:`p1.mts.orname`; this module builds on its models.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Literal

from p1.errors import DecodeError
from p1.orname.model import (
    _SIMPLE,
    UB_ORGANIZATIONAL_UNITS,
    ExtensionAttribute,
    ORAddress,
    ORName,
    _render,
    _text_pairs,
    _written,
)

# --- text -----------------------------------------------------------------------------

Style = Literal["semicolon", "slash"]
_WHERE = "O/R name"

_KEYS: dict[str, str] = {
    alias: key
    for key, aliases in (
        ("C", "C"),
        ("ADMD", "ADMD A"),
        ("PRMD", "PRMD P"),
        ("O", "O"),
        ("OU", "OU"),
        *((f"OU{n}", f"OU{n}") for n in range(1, UB_ORGANIZATIONAL_UNITS + 1)),
        ("S", "S SURNAME"),
        ("G", "G GIVENNAME"),
        ("I", "I INITIALS"),
        ("Q", "Q GQ GENERATION"),
        ("CN", "CN"),
        ("X121", "X121 NA"),
        ("T-ID", "T-ID TID"),
        ("UA-ID", "UA-ID N-ID"),
        ("DN", "DN"),
    )
    for alias in aliases.split()
}
_FIELD_BY_KEY = {"C": "country", **{spec.key: spec.field for spec in _SIMPLE}}
_DDA_PREFIXES = frozenset({"DDA", "DD"})
_EXT_PREFIX = "EXT"

_Token = tuple[str, bool]  # a character and whether it was backslash-escaped


def _error(why: str) -> DecodeError:
    return DecodeError(why, where=_WHERE)


def _lex(text: str, separator: str) -> list[list[_Token]]:
    """Split ``text`` at unescaped ``separator``s, resolving backslash escapes."""
    segments: list[list[_Token]] = []
    current: list[_Token] = []
    position, end = 0, len(text)
    while position < end:
        char = text[position]
        position += 1
        if char == "\\":
            char, position = _unescape(text, position)
            current.append((char, True))
        elif char == separator:
            segments.append(current)
            current = []
        else:
            current.append((char, False))
    segments.append(current)
    return segments


_HEX_ESCAPES = {"x": 2, "u": 4}
"""``\\xHH`` and ``\\uHHHH``: the character of that code, as control characters are
written (:func:`p1.ber.values.escape_controls`)."""


def _unescape(text: str, position: int) -> tuple[str, int]:
    """The character a backslash just before ``position`` stands for, and where the text
    goes on: the next character, or the one ``\\xHH`` / ``\\uHHHH`` codes."""
    if position >= len(text):
        raise _error("the text ends with a lone backslash")
    char = text[position]
    digits = _HEX_ESCAPES.get(char)
    if digits is not None:
        code = text[position + 1 : position + 1 + digits]
        if len(code) == digits and all(c in _HEX_DIGITS for c in code):
            return chr(int(code, 16)), position + 1 + digits
    return char, position + 1


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _strip(tokens: list[_Token]) -> list[_Token]:
    start, end = 0, len(tokens)
    while start < end and not tokens[start][1] and tokens[start][0].isspace():
        start += 1
    while end > start and not tokens[end - 1][1] and tokens[end - 1][0].isspace():
        end -= 1
    return tokens[start:end]


def _join(tokens: list[_Token]) -> str:
    return "".join(char for char, _ in tokens)


def _find(tokens: list[_Token], chars: str) -> int | None:
    return next((i for i, (c, escaped) in enumerate(tokens) if c in chars and not escaped), None)


@dataclass(slots=True)
class _Builder:
    """Attributes collected from text, in the shapes ORName takes."""

    fields: dict[str, Any] = dataclasses.field(default_factory=dict)
    units: dict[int, str] = dataclasses.field(default_factory=dict)
    next_unit: int = 0
    domain_defined: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    extensions: list[ExtensionAttribute] = dataclasses.field(default_factory=list)

    def set_once(self, key: str, field: str, value: object) -> None:
        if field in self.fields:
            raise _error(f"`{key}` given twice")
        self.fields[field] = value

    def add_unit(self, key: str, value: str) -> None:
        index = self.next_unit if key == "OU" else int(key[2:]) - 1
        if index >= UB_ORGANIZATIONAL_UNITS:
            raise _error(f"more than {UB_ORGANIZATIONAL_UNITS} `OU` (ub-organizational-units)")
        if index in self.units:
            raise _error(f"`OU{index + 1}` given twice")
        self.units[index] = value
        self.next_unit = index + 1

    def organizational_units(self) -> tuple[str, ...]:
        for index in sorted(self.units):
            if index > 0 and index - 1 not in self.units:
                raise _error(f"`OU{index + 1}` without `OU{index}`")
        return tuple(self.units[index] for index in sorted(self.units))

    def build(self) -> ORName:
        return ORName(
            **self.fields,
            organizational_units=self.organizational_units(),
            domain_defined=tuple(self.domain_defined),
            extension_attributes=tuple(self.extensions),
        )


def _hex_value(key: str, value: str) -> bytes:
    if value.startswith("#"):
        try:
            return bytes.fromhex(value[1:])
        except ValueError:
            pass
    raise _error(f"value of `{key}` must be `#` followed by hex digits, not {value!r}")


def _take(builder: _Builder, key_tokens: list[_Token], value: str) -> None:
    """Record one ``key=value`` pair (dict dispatch on the key)."""
    raw_key = _join(key_tokens)
    key = _KEYS.get(raw_key.upper())
    if key is None:
        _take_prefixed(builder, key_tokens, raw_key, value)
    elif key == "OU" or key.startswith("OU"):
        builder.add_unit(key, value)
    elif key == "DN":
        builder.set_once(key, "directory_name", _hex_value(key, value))
    else:
        builder.set_once(key, _FIELD_BY_KEY[key], value)


def _take_prefixed(builder: _Builder, key_tokens: list[_Token], raw_key: str, value: str) -> None:
    mark = _find(key_tokens, ":.")
    prefix = _join(key_tokens[:mark]).upper() if mark is not None else None
    if mark is not None and prefix in _DDA_PREFIXES:
        dda_type = _join(_strip(key_tokens[mark + 1 :]))
        builder.domain_defined.append((dda_type, value))
    elif mark is not None and prefix == _EXT_PREFIX and key_tokens[mark][0] == ":":
        number = _join(key_tokens[mark + 1 :]).strip()
        if not (number.isascii() and number.isdigit()):
            raise _error(f"`{raw_key}` needs an extension attribute number, as in `EXT:7`")
        attribute_type = int(number)
        raw = _hex_value(raw_key, value)
        builder.extensions.append(ExtensionAttribute(type=attribute_type, value=raw))
    else:
        raise _error(f"unknown attribute `{raw_key}`")


_REMEMBERED_NAMES = 1024
"""How many texts :func:`parse_orname` remembers the names of (least recently used go)."""
_LONGEST_REMEMBERED_TEXT = 1024
"""Longer texts are parsed every time: the memory a remembered text takes stays bounded."""


def parse_orname(text: str) -> ORName:
    """An O/R name from its semicolon or slash text form (see the module docstring).

    Raises :class:`DecodeError` whose ``why`` names the attribute and the problem.
    A name is immutable, so a text parsed recently gives the same object again (a local
    submission names the same few users each time); an error is never remembered.
    """
    if type(text) is str and len(text) <= _LONGEST_REMEMBERED_TEXT:
        return _parse_remembered(text)
    return _parse(text)


def _parse(text: str) -> ORName:
    """:func:`parse_orname`, every time."""
    body = text.lstrip()
    separator = "/" if body.startswith("/") else ";"
    segments = _lex(body[1:] if separator == "/" else body, separator)
    builder = _Builder()
    for tokens in segments:
        if not _strip(tokens):
            continue  # empty segment: a trailing separator or a doubled one
        mark = _find(tokens, "=")
        if mark is None:
            raise _error(f"`{_join(tokens).strip()}` is not of the form key=value")
        key_tokens = _strip(tokens[:mark])
        value_tokens = _strip(tokens[mark + 1 :])
        value = _join(value_tokens)
        if not value:
            value = _blank_value(_join(key_tokens), tokens[mark + 1 :])
        _take(builder, key_tokens, value)
    if (
        not builder.fields
        and not builder.units
        and not builder.domain_defined
        and not builder.extensions
    ):
        raise _error("no attributes: an O/R name needs at least one")
    name = builder.build()
    problems = name.problems()
    if problems:
        raise _error(problems[0])
    return name


_parse_remembered = functools.lru_cache(maxsize=_REMEMBERED_NAMES)(_parse)


def _blank_value(raw_key: str, tokens: list[_Token]) -> str:
    """ADMD of spaces only is the single space "any ADMD"; other blank values are errors."""
    key = _KEYS.get(raw_key.upper(), raw_key)
    if key == "ADMD" and tokens:
        return " "
    raise _error(f"empty value for `{key}`")


def format_orname(name: ORAddress, style: Style = "semicolon") -> str:
    """The text form of an O/R name or address; :func:`parse_orname` reads it back.

    ``"semicolon"``: ``C=GB;ADMD= ;PRMD=NATO;O=ACT;S=Smith``;
    ``"slash"``: ``/C=GB/A= /P=NATO/O=ACT/S=Smith/``.
    """
    if style == "slash":
        parts = _render(_text_pairs(name, False, True), "/")
        return _written("/" + "".join(f"{part}/" for part in parts))
    if style == "semicolon":
        return _written(";".join(_render(_text_pairs(name, False, False), ";")))
    raise ValueError(f"style {style!r} is not 'semicolon' or 'slash'")
