"""``python -m docgen``: write the manual pages under man/ and the bash completion under
completion/ (from the top of the checkout), or with ``--check`` only say which differ
(exit 1)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from docgen.completion import scripts
from docgen.manpages import pages

REGENERATE = "python -m docgen"
"""The command that writes the files."""


def generated() -> dict[Path, str]:
    """Each file's path from the top of the checkout, and its text."""
    made = {Path("man") / name: text for name, text in pages().items()}
    made.update({Path("completion") / name: text for name, text in scripts().items()})
    return made


def stale(root: Path) -> list[Path]:
    """The files under ``root`` that are missing or differ from :func:`generated`."""
    return [
        path
        for path, text in generated().items()
        if not (root / path).is_file() or (root / path).read_text(encoding="utf-8") != text
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=REGENERATE, description=__doc__)
    parser.add_argument("--root", type=Path, default=Path(), help="the checkout (default .)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    if args.check:
        differ = stale(args.root)
        for path in differ:
            print(f"{path} is stale: run `{REGENERATE}`", file=sys.stderr)
        return 1 if differ else 0
    for path, text in generated().items():
        (args.root / path).parent.mkdir(parents=True, exist_ok=True)
        (args.root / path).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
