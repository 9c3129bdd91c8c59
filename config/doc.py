"""The configuration reference, docs/configuration.md, made from the schema's declarations.

``python -m config.doc > docs/configuration.md`` writes it; a test compares the file with
:func:`reference`, so the reference never drifts from what the loader reads.

Public API::

    reference() -> str          the Markdown text
    REGENERATE                  the command that writes the file
    sections() -> list[Section] its sections in file order (also aiox400.toml(5)'s)
    VALUES                      how values are written (Markdown)
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Any

from config.declare import FILE_SUFFIX, Form, Key, declared
from config.schema import MtaConfig
from config.values import HIDDEN
from config.view import toml_value

__all__ = ["REGENERATE", "VALUES", "Section", "reference", "sections"]

REGENERATE = "python -m config.doc > docs/configuration.md"

_INTRO = f"""\
# Configuration reference

<!-- Generated from the declarations in config/schema.py by `{REGENERATE}`;
     do not edit by hand: a test compares this file with what the command writes. -->

"""

VALUES = f"""\
One TOML file per MTA; `config/examples/site-a.toml` and `site-b.toml` are the two lab
sites.  Unknown keys are errors, so a misspelt key never leaves a default in place, and
every error names the file, the key (`peers[0].slots[1].dscp`), the value as written and
what was expected.  `x400ctl config` prints a configuration in this form: the keys set away
from their defaults (`--defaults`: every key), as TOML that loads to the same configuration.

How values are written:

- **duration**: seconds (a number), or text such as `"90s"`, `"15m"`, `"4h"`, `"3d"`,
  `"1h30m"`.
- **size**: octets (an integer), or text such as `"512KiB"`, `"64MiB"`, `"1GiB"`.
- **DSCP**: `"CS0"`..`"CS7"`, `"EF"`, `"AF11"`..`"AF43"`, or 0..63.
- **O/R names** and **O/R prefixes**: the text form, such as
  `"C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith"`; a prefix is C, ADMD, PRMD, O and OUs, in order,
  none skipped.
- **selectors**: printable text such as `"x400"`, or `"hex:"` and hexadecimal digits such
  as `"hex:0591"`; `""` for none.
- **paths**: a relative path is taken from the directory of the configuration file.
- **passwords**: inline (`password`), or read from a file (`password_file`) that gives
  group and others no access (mode 0600); one trailing newline is dropped.  Never shown:
  `x400ctl config` writes `"{HIDDEN}"` for an inline one, which the loader refuses.
"""


@dataclass
class Section:
    """A table of the file: its header, the paragraphs before its keys, and one row per
    key (name, kind, default, meaning; Markdown)."""

    header: str
    intro: list[str] = field(default_factory=list)
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)


def reference() -> str:
    """docs/configuration.md."""
    return "\n".join([_INTRO + VALUES, *(_markdown(section) for section in sections())])


def sections() -> list[Section]:
    """The top-level keys, then each table, in file order."""
    found = {"": Section("Top-level keys")}
    _walk(MtaConfig, found[""], found, prefix="")
    return list(found.values())


def _walk(
    cls: type, here: Section, sections: dict[str, Section], *, prefix: str, derived: str = ""
) -> None:
    """The keys of ``cls`` into ``here``; its tables into ``sections``, in file order."""
    for f, key in declared(cls):
        name = key.file_name(f.name)
        if key.form is Form.VALUE and key.kind is not None:
            here.rows.append((name, key.kind.name, _default(f, key, derived), key.doc))
        elif key.form is Form.SECRET:
            here.rows += _secret_rows(name, key)
        elif key.form is Form.SECTION:
            section = sections.setdefault(prefix + name, Section(f"[{prefix}{name}]"))
            section.intro.append(key.doc)
            if key.spec is not None:
                defaults = key.spec.values(key.spec.default)
                section.rows += [
                    (item, k.kind.name, _shown(k.kind.write(defaults[item])), k.doc)
                    for item, k in key.spec.keys.items()
                    if k.kind is not None
                ]
            elif key.of is not None:
                _walk(key.of, section, sections, prefix=f"{prefix}{name}.")
        elif key.form is Form.TABLES and key.of is not None:
            header = f"{prefix}{name}"
            section = sections.setdefault(header, Section(f"[[{header}]]", [key.doc]))
            _walk(key.of, section, sections, prefix=f"{header}.")
        elif key.form is Form.INLINE and key.of is not None:
            _walk(key.of, here, sections, prefix=prefix, derived=key.derived)


def _secret_rows(name: str, key: Key) -> list[tuple[str, str, str, str]]:
    default = key.derived or "not set"  # a password is never required
    return [
        (name, "password", default, key.doc),
        (name + FILE_SUFFIX, "path", "not set", f"The file `{name}` is read from instead."),
    ]


def _default(f: dataclasses.Field[Any], key: Key, derived: str) -> str:
    if key.derived or derived:
        return key.derived or derived
    if f.default is dataclasses.MISSING:
        return "required"
    if f.default is None:
        return "not set"
    assert key.kind is not None
    return _shown(key.kind.write(f.default))


def _shown(written: object) -> str:
    if isinstance(written, dict):
        return "none" if not written else ", ".join(written)
    return f"`{toml_value(written)}`"


def _markdown(section: Section) -> str:
    lines = [f"## {section.header}", ""]
    if section.intro:
        lines += [" ".join(section.intro), ""]
    lines += ["| key | kind | default | meaning |", "|---|---|---|---|"]
    for name, kind, default, meaning in section.rows:
        cells = (f"`{name}`", kind, default, meaning)
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(reference())
