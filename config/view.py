"""The effective configuration as TOML in the file's own names and units, secrets hidden
(``x400ctl config``, in the manner of Postfix's ``postconf -n``).

:func:`effective_settings` walks the schema's declarations (:mod:`config.declare`) over a
loaded :class:`config.schema.MtaConfig` and gives every key as ``(key, value)``: the key
as an error would name it (``peers[0].slots[1].dscp``; a key that is not a bare TOML key
is quoted), the value as TOML text in the file's units (``"90s"``, ``"64MiB"``, ``"CS3"``,
O/R names and selectors in text form).  A key at its default has :data:`DEFAULT_MARK`
after its value; an optional key left out has the value :data:`NOT_SET`; an optional
table present with every key at its default (``[access]``) is the pair ``(name, "{}")``.
These pairs are what the daemon's local API answers, so the operator tool shows a running
MTA's configuration the same way.

:func:`render` writes the pairs as a TOML document: by default only the keys set away
from their defaults, with ``defaults=True`` every key.  Loaded back, the document gives
the same configuration, but for secrets: a password written in the file shows as
``"<hidden>"`` (a password file by its path), a database URL's password too, and the
loader refuses ``"<hidden>"``, so a pasted copy runs only once they are filled in again.

Public API::

    effective_settings(config) -> list[tuple[str, str]]     (key, value) in file order
    render(settings, defaults=False) -> str                 the TOML document
    toml_value(value) -> str                                one value as TOML text
    NOT_SET, DEFAULT_MARK
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from config.declare import FILE_SUFFIX, Form, Key, declared
from config.kinds import Kind
from config.schema import (
    MtaConfig,
    Peer,
    Secret,
    Selectors,
    Slot,
    default_control_socket,
    default_database,
    default_local_domains,
)
from config.values import HIDDEN

__all__ = ["DEFAULT_MARK", "NOT_SET", "effective_settings", "render", "toml_value"]

NOT_SET = ""
"""The value of an optional key the file leaves out."""

DEFAULT_MARK = "  # default"
"""Follows the value of a key at its default."""

_PRESENT = "{}"
"""The value of an optional table that is there with every key at its default."""

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SEGMENT = re.compile(r'(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*")(?:\[(\d+)\])?')


def effective_settings(config: MtaConfig) -> list[tuple[str, str]]:
    """Every key of ``config`` as ``(key, TOML value)``, in file order."""
    writer = _Writer(config)
    writer.fields(
        config,
        MtaConfig,
        "",
        defaults={
            "database": default_database(config.state_dir),
            "control_socket": default_control_socket(config.state_dir),
            "local_domains": default_local_domains(config.global_domain),
        },
    )
    return writer.settings


# --- the walk -----------------------------------------------------------------------------


class _Writer:
    """Collects the settings of one configuration."""

    def __init__(self, config: MtaConfig) -> None:
        self.config = config
        self.settings: list[tuple[str, str]] = []

    def add(self, key: str, value: str, *, default: bool) -> None:
        if default and value not in (NOT_SET, _PRESENT):
            value += DEFAULT_MARK
        self.settings.append((key, value))

    def fields(
        self,
        obj: object,
        cls: type,
        path: str,
        *,
        values: Mapping[str, Any] | None = None,
        defaults: Mapping[str, Any] | None = None,
    ) -> None:
        """The keys of ``obj`` (of the declared dataclass ``cls``) under ``path``;
        ``values`` and ``defaults`` stand in for the field's own, by field name."""
        for f, key in declared(cls):
            value = (values or {}).get(f.name, getattr(obj, f.name))
            default = (defaults or {}).get(f.name, f.default)
            if key.into and value is not None:  # one key for several fields
                value = tuple(getattr(obj, name) for name in key.into)
            self.field(f, key, path, value, default)

    def field(
        self, f: dataclasses.Field[Any], key: Key, path: str, value: Any, default: Any
    ) -> None:
        name = path + _segment(key.file_name(f.name))
        if key.form is Form.VALUE and key.kind is not None:
            self.value(name, key.kind, value, default)
        elif key.form is Form.SECRET:
            self.secret(name, value, default)
        elif key.form is Form.SECTION:
            self.section(name, key, value, default)
        elif key.form is Form.TABLES:
            for index, item in enumerate(value):
                self.table(f"{name}[{index}].", item)
        elif key.form is Form.INLINE and key.of is not None:
            inherited = {n.name: getattr(default, n.name) for n in dataclasses.fields(key.of)}
            self.fields(value, key.of, path, defaults=inherited)

    def value(self, name: str, kind: Kind[Any], value: Any, default: Any) -> None:
        if value is None:
            self.add(name, NOT_SET, default=default is None)
            return
        written = kind.write(value)
        if isinstance(written, dict):
            for account, item in written.items():
                self.add(f"{name}.{_segment(account)}", toml_value(item), default=False)
            if not written:
                self.add(name, NOT_SET, default=True)
            return
        self.add(name, toml_value(written), default=value == default)

    def secret(self, name: str, secret: Secret | None, default: Secret | None) -> None:
        if secret is None:
            self.add(name, NOT_SET, default=default is None)
        elif secret.source is not None:
            self.add(name + FILE_SUFFIX, toml_value(str(secret.source)), default=secret == default)
        else:
            self.add(name, toml_value(HIDDEN), default=secret == default)

    def section(self, name: str, key: Key, value: Any, default: Any) -> None:
        if value is None or (key.optional and value == default):
            self.add(name, NOT_SET, default=True)  # an optional table left out
        elif key.spec is not None:
            given, defaults = key.spec.values(value), key.spec.values(key.spec.default)
            for item, item_key in key.spec.keys.items():
                assert item_key.kind is not None
                self.value(f"{name}.{item}", item_key.kind, given[item], defaults[item])
        elif key.of is not None:
            if key.optional:
                self.settings.append((name, _PRESENT))
            self.fields(value, key.of, name + ".")

    def table(self, path: str, item: object) -> None:
        """One of ``[[listeners]]``, ``[[peers]]``, ``[[peers.slots]]``."""
        if isinstance(item, Peer):
            self.peer(path, item)
        else:
            self.fields(item, type(item), path)

    def peer(self, path: str, peer: Peer) -> None:
        self.fields(
            peer,
            Peer,
            path,
            values={
                "our_credentials": peer.our_credentials.password,
                "their_credentials": peer.their_credentials.password,
                "slots": (),
            },
            defaults={"our_credentials": self.config.password, "their_credentials": None},
        )
        for index, slot in enumerate(peer.slots):
            self.slot(f"{path}slots[{index}].", slot, peer.selectors)

    def slot(self, path: str, slot: Slot, inherited: Selectors) -> None:
        table = self.config.precedence_table
        defaults = {"dscp": table.dscp(slot.precedences[0]), "selectors": inherited}
        self.fields(slot, Slot, path, defaults=defaults)


# --- TOML text ------------------------------------------------------------------------------


def _segment(name: str) -> str:
    """A key as TOML writes it: bare when it can be, else quoted."""
    return name if _BARE_KEY.fullmatch(name) else _string(name)


def _string(text: str) -> str:
    # JSON's escapes are TOML's, but for DEL, which TOML wants escaped.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_value(value: object) -> str:
    """A value as TOML text."""
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


# --- the document ---------------------------------------------------------------------------


def render(settings: Sequence[tuple[str, str]], *, defaults: bool = False) -> str:
    """``settings`` as a TOML document: the keys away from their defaults, or every key.

    A key left out is a comment (``# default_route is not set``); with ``defaults``, a key
    at its default is followed by ``# default``.
    """
    groups: dict[str, list[str]] = {"": []}
    present: list[str] = []
    for key, value in settings:
        table, name = _split(key)
        if value == _PRESENT:
            present.append(key)
        elif defaults or not (value == NOT_SET or value.endswith(DEFAULT_MARK)):
            line = f"# {name} is not set" if value == NOT_SET else f"{name} = {value}"
            groups.setdefault(table, []).append(line)
    for key in present:
        if not any(table == key or table.startswith(key + ".") for table in groups):
            groups[""].append(f"{_split(key)[1]} = {_PRESENT}")
    return "\n".join(_document(groups)) + "\n"


def _document(groups: Mapping[str, list[str]]) -> Iterator[str]:
    yield from groups[""]
    opened: set[str] = set()
    for table, lines in groups.items():
        if not table:
            continue
        for parent in _array_parents(table):
            if parent not in opened:
                opened.add(parent)
                yield from ("", _header(parent))
        if table not in opened:
            opened.add(table)
            yield from ("", _header(table))
        yield from lines


def _split(key: str) -> tuple[str, str]:
    """``peers[0].slots[1].dscp`` as (``peers[0].slots[1]``, ``dscp``)."""
    segments = _segments(key)
    return ".".join(segments[:-1]), segments[-1]


def _segments(key: str) -> list[str]:
    segments: list[str] = []
    position = 0
    while position < len(key):
        found = _SEGMENT.match(key, position)
        if found is None:
            raise ValueError(f"not a configuration key: {key!r}")
        segments.append(found.group())
        position = found.end() + 1  # the dot after it
    return segments


def _array_parents(table: str) -> list[str]:
    """The array elements above ``table``: ``peers[0]`` above ``peers[0].slots[1]``."""
    segments = _segments(table)
    return [
        ".".join(segments[: index + 1])
        for index, segment in enumerate(segments[:-1])
        if segment.endswith("]")
    ]


def _header(table: str) -> str:
    """``[[peers.slots]]`` for ``peers[0].slots[1]``, ``[access.users]`` for itself."""
    segments = _segments(table)
    names = ".".join(re.sub(r"\[\d+\]$", "", segment) for segment in segments)
    return f"[[{names}]]" if segments[-1].endswith("]") else f"[{names}]"
