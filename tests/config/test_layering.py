"""config/ imports only the standard library and p1's pure parsers (O/R names,
precedence, selectors, and the stack's size limits), never the daemon, the store or a
third-party package."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED_P1 = {
    "p1.errors",
    "p1.orname.model",
    "p1.orname.text",
    "p1.mts.precedence",
    "p1.osi.selectors",
    "p1.osi",  # StackLimits, the [limits] sizes
    "p1.security.spif",  # the [security] policy and clearances
}


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_config_imports_only_the_stdlib_and_p1s_parsers() -> None:
    for path in sorted((ROOT / "config").glob("*.py")):
        for name in imported(path):
            top = name.split(".")[0]
            allowed = (
                top in sys.stdlib_module_names
                or top == "config"
                or name in ALLOWED_P1
                or name == "__future__"
            )
            assert allowed, f"{path.relative_to(ROOT)} imports {name}"


def test_loading_config_brings_in_no_other_package() -> None:
    code = (
        "import sys, config, config.view, config.doc, config.loader\n"
        "print(sorted({m.split('.')[0] for m in sys.modules if not m.startswith('_')}"
        " - set(sys.stdlib_module_names)))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert run.stdout.strip() == "['config', 'p1']"
