"""Plain renderings of the p1 models for people and for JSON.

``to_plain(value)`` turns any model (frozen dataclasses, enums, O/R names, times, bytes)
into JSON-ready lists, dicts, strings and numbers: O/R names in their text form,
enumerations by name, times in ISO 8601, short byte strings in hex and long ones as their
length and a hex prefix.  ``to_text(plain)`` lays the same out as indented ``key: value``
lines.  Nothing here knows a particular model: new fields appear without changes.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from collections.abc import Mapping, Sequence

Plain = None | bool | int | float | str | list["Plain"] | dict[str, "Plain"]

HEX_LIMIT = 64  # byte strings longer than this are summarised


def to_plain(value: object, *, full_bytes: bool = False) -> Plain:
    """A JSON-ready form of ``value`` (see the module docstring)."""
    formatted = _format_hook(value)
    if formatted is not None:
        return formatted
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return value.name.lower().replace("_", "-")
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return _plain_bytes(bytes(value), full_bytes)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain_dataclass(value, full_bytes)
    if isinstance(value, Mapping):
        return {str(k): to_plain(v, full_bytes=full_bytes) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [to_plain(item, full_bytes=full_bytes) for item in value]
    return str(value)


def _format_hook(value: object) -> str | None:
    """O/R names render as text: the one form operators read and type."""
    from p1.orname import ORAddress, format_orname

    if isinstance(value, ORAddress):
        return format_orname(value)
    return None


def _plain_bytes(data: bytes, full: bool) -> Plain:
    if full or len(data) <= HEX_LIMIT:
        return data.hex()
    return {"length": len(data), "hex-prefix": data[:HEX_LIMIT].hex()}


def _plain_dataclass(value: object, full_bytes: bool) -> Plain:
    out: dict[str, Plain] = {}
    for field in dataclasses.fields(value):  # type: ignore[arg-type]
        item = getattr(value, field.name)
        if item is None or item == () or item == []:
            continue  # absent optional fields are left out, as on the wire
        out[field.name.replace("_", "-")] = to_plain(item, full_bytes=full_bytes)
    kind = type(value).__name__
    return {"type": kind, **out} if out else {"type": kind}


def to_text(plain: Plain, indent: int = 0) -> str:
    """Indented ``key: value`` lines of a plain value."""
    return "\n".join(_text_lines(plain, indent))


def _text_lines(plain: Plain, indent: int) -> list[str]:
    pad = "  " * indent
    if isinstance(plain, dict):
        lines: list[str] = []
        for key, item in plain.items():
            if isinstance(item, dict | list) and item:
                lines.append(f"{pad}{key}:")
                lines.extend(_text_lines(item, indent + 1))
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}")
        return lines
    if isinstance(plain, list):
        lines = []
        for item in plain:
            sub = _text_lines(item, indent + 1)
            first = sub[0].lstrip() if sub else ""
            lines.append(f"{pad}- {first}")
            lines.extend(sub[1:])
        return lines
    return [f"{pad}{_scalar(plain)}"]


def _scalar(item: Plain) -> str:
    if item is None:
        return "-"
    if isinstance(item, bool):
        return "yes" if item else "no"
    if isinstance(item, dict | list):
        return "{}" if isinstance(item, dict) else "[]"
    return str(item)
