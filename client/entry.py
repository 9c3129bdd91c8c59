"""The installed entry points of ``x400`` and ``x400ctl``: ``--version`` answered before
the protocol stack is imported (a script asking for it waits for nothing else); every
other call handed to the command's module.

Public API::

    x400() -> int       ``x400`` (client.x400.main)
    x400ctl() -> int    ``x400ctl`` (client.x400ctl.main)
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from client.cli import EXIT_OK, version

__all__ = ["x400", "x400ctl"]


def _version_only(argv: Sequence[str]) -> bool:
    """``--version`` asked for before any command (as argparse would answer it)."""
    for word in argv:
        if word == "--version":
            return True
        if not word.startswith("-"):
            return False
    return False


def x400(argv: Sequence[str] | None = None) -> int:
    """``x400``: its version at once, or :func:`client.x400.main`."""
    words = sys.argv[1:] if argv is None else list(argv)
    if _version_only(words):
        print(version("x400"))
        return EXIT_OK
    from client.x400 import main

    return main(words)


def x400ctl(argv: Sequence[str] | None = None) -> int:
    """``x400ctl``: its version at once, or :func:`client.x400ctl.main`."""
    words = sys.argv[1:] if argv is None else list(argv)
    if _version_only(words):
        print(version("x400ctl"))
        return EXIT_OK
    from client.x400ctl import main

    return main(words)
