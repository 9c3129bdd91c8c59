"""What the command-line tools share: how they end on Ctrl-C and on a closed pipe, and
how their text reaches a terminal.

Text a peer chose (an MTS identifier, an O/R name, a subject, a body, a reason) may hold
terminal escapes, carriage returns, C1 controls or bidirectional overrides.  Each field
shown on a line of its own is escaped where it is written
(:func:`p1.ber.values.escape_controls`); and every tool writes its text through
:class:`TerminalText`, the one boundary that escapes whatever control character is left
(:func:`p1.ber.values.escape_text`: all but tab and line feed), so that no output path can
hand one to the terminal.  JSON output needs neither: ``json.dumps`` writes every control
and non-ASCII character as a ``\\uHHHH`` escape, so a value stays whole and valid.

Public API::

    EXIT_INTERRUPTED (130), EXIT_BROKEN_PIPE (141)
    quiet_broken_pipe() -> int     standard output's reader went away: EXIT_BROKEN_PIPE
    TerminalText(stream)           a text stream that escapes control characters
    terminal_text(stream) -> TerminalText   ``stream`` wrapped once
"""

from __future__ import annotations

import io
import os
import sys
from typing import BinaryIO, Final, TextIO

from p1.ber.values import escape_text

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERRUPTED",
    "TerminalText",
    "quiet_broken_pipe",
    "terminal_text",
]

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


class TerminalText(io.TextIOBase, TextIO):
    """A text stream writing to ``stream`` every control character but tab and line
    feed escaped (:func:`p1.ber.values.escape_text`); octets written to :attr:`buffer`
    pass as they are (``--raw`` output is asked for as it is)."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(escape_text(text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    def writable(self) -> bool:
        return True

    @property
    def buffer(self) -> BinaryIO:
        return self.stream.buffer


def terminal_text(stream: TextIO) -> TerminalText:
    """``stream`` behind a :class:`TerminalText` (itself when it is one already)."""
    return stream if isinstance(stream, TerminalText) else TerminalText(stream)
