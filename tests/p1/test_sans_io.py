"""p1/ is sans-I/O: none of its modules imports a network, clock, event-loop or database
module (style rule 1), checked on the source so a lazy import cannot hide one."""

from __future__ import annotations

import ast
from pathlib import Path

import p1

FORBIDDEN = {"asyncio", "socket", "selectors", "ssl", "time", "sqlalchemy", "threading", "logging"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_p1_imports_no_io_module() -> None:
    root = Path(p1.__file__).parent
    sources = sorted(root.rglob("*.py"))
    assert sources, "p1 has no modules"
    offenders = {
        str(path.relative_to(root)): sorted(_imports(path) & FORBIDDEN) for path in sources
    }
    assert {k: v for k, v in offenders.items() if v} == {}
