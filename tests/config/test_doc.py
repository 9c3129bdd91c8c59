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


def leaf_keys(cls: type) -> set[str]:
    """The keys of ``cls`` and of its tables that hold values, not tables."""
    keys = set(file_keys(cls))
    for f, key in declared(cls):
        if key.form in (Form.SECTION, Form.TABLES):
            keys.discard(key.file_name(f.name))
            keys |= (
                leaf_keys(key.of) if key.of is not None else set(key.spec.keys if key.spec else ())
            )
    return keys


def test_every_key_has_a_row_with_a_kind_and_a_meaning() -> None:
    rows = re.findall(r"^\| `([a-z_]+)` \| ([^|]+) \| ([^|]+) \| ([^|]+) \|$", reference(), re.M)
    assert leaf_keys(MtaConfig) == {name for name, *_ in rows}
    assert all(
        kind.strip() and default.strip() and meaning.strip() for _, kind, default, meaning in rows
    )
