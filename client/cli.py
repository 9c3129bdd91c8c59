"""What the command-line tools share: how they end on Ctrl-C and on a closed pipe.

Public API::

    EXIT_INTERRUPTED (130), EXIT_BROKEN_PIPE (141)
    quiet_broken_pipe() -> int     standard output's reader went away: EXIT_BROKEN_PIPE
"""

from __future__ import annotations

import os
import sys
from typing import Final

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_INTERRUPTED", "quiet_broken_pipe"]

EXIT_INTERRUPTED: Final = 130
"""Ctrl-C (128 + SIGINT), as a shell reports it."""
EXIT_BROKEN_PIPE: Final = 141
"""The reader of standard output went away (128 + SIGPIPE), as a shell reports it."""


def quiet_broken_pipe() -> int:
    """Standard output's reader has gone: point standard output at /dev/null, so that
    the flush at exit does not fail again (the recipe of the Python documentation's
    ``signal`` module, "Note on SIGPIPE"); :data:`EXIT_BROKEN_PIPE`."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass  # standard output is not a file (captured): nothing is flushed at exit
    finally:
        os.close(devnull)
    return EXIT_BROKEN_PIPE
