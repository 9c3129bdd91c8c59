"""The effective configuration as ``key = value`` lines, secrets hidden (``x400ctl config``,
in the manner of Postfix's ``postconf``).

Every field of :class:`config.schema.MtaConfig`, defaults included, is one line named by
its path (``peers[0].slots[1].dscp``).  A password is never shown: ``(set)`` when it is
written in the configuration, ``(file /path)`` when it is read from a file; a database
URL shows ``***`` in place of its password.  Precedences are named, DSCP values too,
selectors as text or ``hex:...`` (their configuration forms).

Public API::

    effective_settings(config) -> list[tuple[str, str]]     (key, value) in field order
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from config.schema import AddressPrefix, MtaConfig, Secret
from p1.mts.orname_model import ORAddress
from p1.mts.orname_text import format_orname
from p1.mts.precedence import Precedence, dscp_name

__all__ = ["effective_settings"]

_DSCP_KEYS = frozenset({"dscp", "dscps"})
"""Fields whose integers are DSCP values (shown by name, CS3, EF...)."""


def effective_settings(config: MtaConfig) -> list[tuple[str, str]]:
    """The configuration's every setting, in field order: ``(key, value)``."""
    lines: list[tuple[str, str]] = []
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if field.name == "database":
            lines.append(("database", _hide_url_password(value)))
        else:
            _walk(field.name, value, lines)
    return lines


def _walk(key: str, value: object, lines: list[tuple[str, str]]) -> None:
    """Lines for ``value`` under ``key``: one per leaf."""
    if _is_leaf(value):
        lines.append((key, _leaf(key, value)))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            _walk(f"{key}.{field.name}", getattr(value, field.name), lines)
    elif isinstance(value, Mapping):
        for name, item in value.items():
            _walk(f"{key}.{_leaf(key, name)}", item, lines)
    elif isinstance(value, tuple | list) and value and not all(map(_is_leaf, value)):
        for index, item in enumerate(value):
            _walk(f"{key}[{index}]", item, lines)
    else:
        lines.append((key, _leaf(key, value)))


def _is_leaf(value: object) -> bool:
    return value is None or isinstance(
        value, Secret | AddressPrefix | ORAddress | str | bytes | int | float | Path | enum.Enum
    )


def _leaf(key: str, value: object) -> str:
    """How one value is shown."""
    name = key.rsplit(".", 1)[-1].split("[", 1)[0]
    if value is None:
        return "(none)"
    if isinstance(value, Secret):
        return "(set)" if value.source is None else f"(file {value.source})"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and name in _DSCP_KEYS:
        return dscp_name(value)
    return _plain(value)


def _plain(value: object) -> str:
    if isinstance(value, Precedence):
        return value.label
    if isinstance(value, AddressPrefix):
        return value.text
    if isinstance(value, ORAddress):
        return format_orname(value)
    if isinstance(value, bytes):
        return _selector(value)
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, frozenset | set):
        return "[" + ", ".join(sorted(_plain(item) for item in value)) + "]"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_plain(item) for item in value) + "]"
    return str(value)


def _selector(value: bytes) -> str:
    """A selector in the form the configuration takes: printable text, else ``hex:``."""
    if value and value.isascii() and value.decode().isprintable():
        return f'"{value.decode()}"'
    return f"hex:{value.hex()}" if value else '""'


def _hide_url_password(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "(not a URL)"
