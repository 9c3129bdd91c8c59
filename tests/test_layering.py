"""The layering the design states, held by the imports themselves.

Read from the source with :mod:`ast`, function-level and TYPE_CHECKING imports included:

- ``p1/`` imports none of the other packages (``config``'s own rule is in
  ``tests/config/test_layering.py``);
- ``p1/osi`` (the OSI layers under P1) imports nothing above it: neither the composed
  associations nor the MTS and IPM models;
- ``store/`` imports neither the daemon nor the clients;
- ``client/`` imports no daemon module (the local API's framing is ``p1.localapi``);
- nothing but the daemon's entry point imports ``mta.service``, the module that wires it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RULES = {
    "p1": ("mta", "store", "client", "config"),
    "p1/osi": ("p1.association", "p1.mts", "p1.ipms", "p1.render"),
    "store": ("mta", "client"),
    "client": ("mta", "store"),
    "mta": ("mta.service",),
}
WIRING = {"mta/daemon.py", "mta/service.py"}


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and not node.level:
            names.add(node.module)
    return names


def crossings(place: str, forbidden: tuple[str, ...]) -> set[str]:
    return {
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / place).rglob("*.py"))
        if str(path.relative_to(ROOT)) not in WIRING
        for name in imported(path)
        if name in forbidden or name.startswith(tuple(f"{f}." for f in forbidden))
    }


@pytest.mark.parametrize(("place", "forbidden"), RULES.items())
def test_no_import_crosses_the_layering(place: str, forbidden: tuple[str, ...]) -> None:
    assert crossings(place, forbidden) == set()


def test_the_check_sees_a_function_level_import_from_above(tmp_path: Path) -> None:
    module = tmp_path / "layer.py"
    module.write_text("def f() -> None:\n    from p1.association.transfer import Transfer\n")
    assert "p1.association.transfer" in imported(module)
