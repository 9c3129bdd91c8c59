"""docs/configuration.md is what ``python -m config.doc`` writes from the declarations,
and every key the loader takes is in it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from config.declare import Form, declared, file_keys
from config.doc import REGENERATE, reference
from config.schema import MtaConfig

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "configuration.md"


def test_the_reference_is_up_to_date() -> None:
    assert DOC.read_text(encoding="utf-8") == reference(), (
        f"{DOC.relative_to(ROOT)} is stale: regenerate it with `{REGENERATE}` "
        "(from the top of the checkout) and commit it"
    )


def test_the_command_writes_the_reference() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "config.doc"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert run.stdout == reference()


def test_its_first_lines_say_how_it_is_made() -> None:
    assert REGENERATE in "".join(DOC.read_text(encoding="utf-8").splitlines(keepends=True)[:4])


def expected_keys(cls: type, header: str, into: dict[str, set[str]], prefix: str = "") -> None:
    """The value keys of ``cls`` under ``header``, and those of its tables under theirs."""
    for f, key in declared(cls):
        name = key.file_name(f.name)
        if key.form is Form.SECTION and key.spec:
            into.setdefault(f"[{name}]", set()).update(key.spec.keys)
        elif key.form is Form.SECTION and key.of is not None:
            into.setdefault(f"[{prefix}{name}]", set())
            expected_keys(key.of, f"[{prefix}{name}]", into, f"{prefix}{name}.")
        elif key.form is Form.TABLES and key.of is not None:
            expected_keys(key.of, f"[[{prefix}{name}]]", into, f"{prefix}{name}.")
        else:
            into.setdefault(header, set()).update(
                file_keys(key.of) if key.form is Form.INLINE and key.of else [name]
            )
            if key.form is Form.SECRET:
                into[header].add(name + "_file")


def documented_keys(text: str) -> dict[str, set[str]]:
    sections: dict[str, set[str]] = {}
    for part in text.split("\n## ")[1:]:
        header, _, table = part.partition("\n")
        sections[header] = set(re.findall(r"^\| `([a-z_]+)` \|", table, re.M))
    return sections


def test_every_key_has_a_row_with_a_kind_a_default_and_a_meaning() -> None:
    expected: dict[str, set[str]] = {}
    expected_keys(MtaConfig, "Top-level keys", expected)
    assert documented_keys(reference()) == expected
    rows = re.findall(r"^\| `[a-z_]+` \| ([^|]+) \| ([^|]+) \| ([^|]+) \|$", reference(), re.M)
    assert rows and all(all(cell.strip() for cell in row) for row in rows)
