"""Plain renderings of the p1 models for people and for JSON.

``to_plain(value)`` turns any model (frozen dataclasses, enums, O/R names, times, bytes)
into JSON-ready lists, dicts, strings and numbers: O/R names in their text form,
enumerations by name, times in ISO 8601, text-like byte strings as text and others in
hex, long ones summarised by length and a prefix.  Fields at their default value are left
out, as on the wire; each model carries its class under ``@type``.  ``to_text(plain)``
lays the same out as indented ``key: value`` lines, every control character of a value
escaped (:func:`p1.ber.values.escape_controls`: a peer's text stays on its line).
Nothing here knows a particular model: new fields appear without changes.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from collections.abc import Mapping, Sequence

from p1.ber.values import escape_controls

Plain = None | bool | int | float | str | list["Plain"] | dict[str, "Plain"]

HEX_LIMIT = 64  # longer binary strings are summarised unless full output is asked for
TEXT_LIMIT = 4096  # longer text is summarised likewise
_TEXT_BYTES = frozenset(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D}


def to_plain(value: object, *, full_bytes: bool = False) -> Plain:
    """A JSON-ready form of ``value`` (see the module docstring)."""
    formatted = _format_hook(value)
    if formatted is not None:
        return formatted
    if isinstance(value, enum.Enum):  # before int: IntEnums print by name
        return _enum_name(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
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


def _enum_name(value: enum.Enum) -> str:
    if isinstance(value, enum.Flag):
        names = [m.name for m in type(value) if m.name and m.value and m in value]
        return ",".join(n.lower().replace("_", "-") for n in names) or "none"
    return (value.name or str(value.value)).lower().replace("_", "-")


def _format_hook(value: object) -> str | None:
    """O/R names and MTS identifiers render as text: the forms operators read and type."""
    from p1.mts.fields import GlobalDomainIdentifier, MTSIdentifier
    from p1.mts.orname import ORAddress, format_orname

    if isinstance(value, ORAddress):
        return format_orname(value)
    if isinstance(value, MTSIdentifier | GlobalDomainIdentifier):
        return value.text
    return None


def _plain_bytes(data: bytes, full: bool) -> Plain:
    is_text = bool(data) and _TEXT_BYTES.issuperset(data)
    if is_text and (full or len(data) <= TEXT_LIMIT):
        return data.decode("ascii")
    if full or len(data) <= HEX_LIMIT:
        return data.hex()
    if is_text:
        return {"length": len(data), "text-prefix": data[:HEX_LIMIT].decode("ascii")}
    return {"length": len(data), "hex-prefix": data[:HEX_LIMIT].hex()}


def _is_default(field: dataclasses.Field[object], item: object) -> bool:
    if item is None or item == () or item == []:
        return True
    if field.default is not dataclasses.MISSING:
        return bool(item == field.default)
    if field.default_factory is not dataclasses.MISSING:
        return bool(item == field.default_factory())
    return False


def _plain_dataclass(value: object, full_bytes: bool) -> Plain:
    out: dict[str, Plain] = {"@type": type(value).__name__}
    for field in dataclasses.fields(value):  # type: ignore[arg-type]
        item = getattr(value, field.name)
        if not field.repr or _is_default(field, item):
            continue  # bookkeeping (wire order and the like) and defaults are not news
        out[field.name.replace("_", "-")] = to_plain(item, full_bytes=full_bytes)
    return out


def to_text(plain: Plain, indent: int = 0) -> str:
    """Indented ``key: value`` lines of a plain value."""
    return "\n".join(_text_lines(plain, indent))


def _text_lines(plain: Plain, indent: int) -> list[str]:
    pad = "  " * indent
    if isinstance(plain, dict):
        lines: list[str] = []
        for key, item in plain.items():
            if key == "@type":
                continue  # the field name says what it is; list items show their type
            if isinstance(item, dict | list) and _has_content(item):
                lines.append(f"{pad}{key}:{_type_suffix(item)}")
                lines.extend(_text_lines(item, indent + 1))
            elif isinstance(item, str) and "\n" in item:
                lines.append(f"{pad}{key}: |")  # text bodies keep their lines
                lines.extend(f"{pad}  {escape_controls(line)}" for line in _lines(item))
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}")
        return lines
    if isinstance(plain, list):
        lines = []
        for item in plain:
            sub = _text_lines(item, indent + 1)
            head = _type_suffix(item).strip()
            if head:
                lines.append(f"{pad}- {head}")
                lines.extend(sub)
            else:
                lines.append(f"{pad}- {sub[0].lstrip() if sub else _scalar(item)}")
                lines.extend(sub[1:])
        return lines
    return [f"{pad}{_scalar(plain)}"]


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").split("\n")


def _has_content(item: dict[str, Plain] | list[Plain]) -> bool:
    return bool(item) and item.keys() != {"@type"} if isinstance(item, dict) else bool(item)


def _type_suffix(item: Plain) -> str:
    if isinstance(item, dict) and isinstance(item.get("@type"), str):
        return f" ({item['@type']})"
    return ""


def _scalar(item: Plain) -> str:
    if item is None:
        return "-"
    if isinstance(item, bool):
        return "yes" if item else "no"
    if isinstance(item, dict):
        return str(item.get("@type", "{}"))
    if isinstance(item, list):
        return "[]"
    if isinstance(item, str) and (item != item.strip() or item == ""):
        return repr(item)  # a lone space (ADMD " ") must stay visible
    return escape_controls(item if isinstance(item, str) else str(item))
