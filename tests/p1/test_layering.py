"""The layering the design states, held by the imports themselves.

``p1/osi`` (the OSI layers under P1) imports nothing above it: neither the composed
associations (``p1/association``) nor the MTS and IPM models.  Read from the source with
:mod:`ast`, function-level and TYPE_CHECKING imports included.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ABOVE_OSI = ("p1.association", "p1.mts", "p1.ipms", "p1.render", "mta", "store", "client")


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
    return names


def test_the_osi_layers_import_nothing_above_them() -> None:
    found = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "p1" / "osi").rglob("*.py"))
        for name in imported(path)
        if name.startswith(ABOVE_OSI)
    }
    assert found == set()


def test_the_check_sees_an_import_from_above(tmp_path: Path) -> None:
    module = tmp_path / "layer.py"
    module.write_text("def f() -> None:\n    from p1.association.transfer import Transfer\n")
    assert "p1.association.transfer" in imported(module)
