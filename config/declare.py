"""How a schema field is declared as keys of the configuration file, once.

Each field of a :mod:`config.schema` dataclass that the file sets carries, in its
``dataclasses.field`` metadata, one :class:`Key`: its form in the file (one value, a
password or its file, a ``[table]``, ``[[tables]]``, or keys of the enclosing table), the
:class:`config.kinds.Kind` that reads and writes it, and its meaning.  The field's own
default is the key's default.  The loader (:mod:`config.loader`), ``x400ctl config``
(:mod:`config.view`) and the reference (:mod:`config.doc`, docs/configuration.md) all walk
these declarations.

A table whose type is declared elsewhere (the protocol stack's :class:`p1.osi.StackLimits`,
the precedence table) is a :class:`Foreign` section: its keys, and how to build the value
from them and take them back.

Public API::

    Form, Key, Foreign
    value(kind, doc, name=, derived=, into=)    secret(doc, name=, derived=)
    section(of, doc, name=, optional=)          tables(of, doc, name=, required=)
    inline(of, doc, derived=)                   foreign(spec, doc, name)
    declared(cls) -> [(field, Key)]             file_keys(cls) -> [name]
    section_keys(cls, name) -> [name]           FILE_SUFFIX
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from config.kinds import PASSWORD, Kind

__all__ = [
    "FILE_SUFFIX",
    "Foreign",
    "Form",
    "Key",
    "declared",
    "file_keys",
    "foreign",
    "inline",
    "secret",
    "section",
    "section_keys",
    "tables",
    "value",
]

_KEY = "config.key"
"""Where a field's :class:`Key` sits in its metadata."""

FILE_SUFFIX = "_file"
"""A password key's companion naming the file it is read from (``password_file``)."""


class Form(enum.Enum):
    """How a field is written in the file."""

    VALUE = "value"
    """One key, read by the key's kind."""
    SECRET = "secret"
    """A password: the key (inline) or the key with ``_file`` (read from that file)."""
    SECTION = "section"
    """A ``[name]`` table of the field's dataclass (several fields may share one)."""
    TABLES = "tables"
    """An array of ``[[name]]`` tables of the field's dataclass."""
    INLINE = "inline"
    """The keys of the field's dataclass, in the enclosing table."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Foreign:
    """A section whose type has no declarations of its own."""

    keys: Mapping[str, Key]
    """Its keys, in file order."""
    build: Callable[[Mapping[str, Any]], object]
    """The value from the keys the file sets (the others keep their defaults)."""
    values: Callable[[Any], Mapping[str, Any]]
    """A value's keys, each typed as its kind converts it."""
    default: object
    """The value when the file sets none of the keys."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Key:
    """One field's declaration: its form, kind and meaning."""

    form: Form
    doc: str
    """What it means, for the reference."""
    kind: Kind[Any] | None = None
    """How a VALUE or SECRET is read, written and described."""
    name: str = ""
    """Its name in the file; empty: the field's."""
    of: type | None = None
    """The dataclass of a SECTION, TABLES or INLINE field."""
    spec: Foreign | None = None
    """A foreign SECTION's keys."""
    derived: str = ""
    """A default computed from other keys, as the reference describes it."""
    into: tuple[str, ...] = ()
    """Fields a VALUE's converted tuple is spread over (``listen`` is host and port)."""
    optional: bool = False
    """A SECTION whose absence is None, not the defaults."""
    required: bool = False
    """TABLES that must be there."""

    def file_name(self, field_name: str) -> str:
        return self.name or field_name


def value(
    kind: Kind[Any], doc: str, *, name: str = "", derived: str = "", into: tuple[str, ...] = ()
) -> Mapping[str, Key]:
    """Metadata of a field that is one key of the kind ``kind``."""
    return {_KEY: Key(form=Form.VALUE, kind=kind, doc=doc, name=name, derived=derived, into=into)}


def secret(doc: str, *, name: str = "", derived: str = "") -> Mapping[str, Key]:
    """Metadata of a password: ``name`` inline, or ``name_file``."""
    return {_KEY: Key(form=Form.SECRET, kind=PASSWORD, doc=doc, name=name, derived=derived)}


def section(of: type, doc: str, *, name: str = "", optional: bool = False) -> Mapping[str, Key]:
    """Metadata of a field that is the ``[name]`` table of the dataclass ``of``."""
    return {_KEY: Key(form=Form.SECTION, of=of, doc=doc, name=name, optional=optional)}


def foreign(spec: Foreign, doc: str, *, name: str) -> Mapping[str, Key]:
    """Metadata of a field that is the ``[name]`` table described by ``spec``."""
    return {_KEY: Key(form=Form.SECTION, spec=spec, doc=doc, name=name)}


def tables(of: type, doc: str, *, name: str = "", required: bool = False) -> Mapping[str, Key]:
    """Metadata of a field that is the ``[[name]]`` tables of the dataclass ``of``."""
    return {_KEY: Key(form=Form.TABLES, of=of, doc=doc, name=name, required=required)}


def inline(of: type, doc: str, *, derived: str = "") -> Mapping[str, Key]:
    """Metadata of a field whose dataclass's keys are keys of the enclosing table;
    ``derived``: where each takes its default from, if not from the dataclass."""
    return {_KEY: Key(form=Form.INLINE, of=of, doc=doc, derived=derived)}


def declared(cls: type) -> list[tuple[dataclasses.Field[Any], Key]]:
    """The fields of the dataclass ``cls`` that the file sets, in order, with their keys."""
    return [(f, f.metadata[_KEY]) for f in dataclasses.fields(cls) if _KEY in f.metadata]


def file_keys(cls: type) -> list[str]:
    """The keys a table of ``cls`` may hold, in declaration order, each once."""
    names: list[str] = []
    for f, key in declared(cls):
        name = key.file_name(f.name)
        if key.form is Form.SECRET:
            names += [name, name + FILE_SUFFIX]
        elif key.form is Form.INLINE and key.of is not None:
            names += file_keys(key.of)
        else:
            names.append(name)
    return list(dict.fromkeys(names))


def section_keys(cls: type, name: str) -> list[str]:
    """The keys of the section ``[name]`` of ``cls``: those of every field it holds."""
    names: list[str] = []
    for f, key in declared(cls):
        if key.form is Form.SECTION and key.file_name(f.name) == name:
            names += list(key.spec.keys) if key.spec is not None else file_keys(_of(key))
    return names


def _of(key: Key) -> type:
    if key.of is None:
        raise TypeError(f"{key.form.value} key without a type")
    return key.of
