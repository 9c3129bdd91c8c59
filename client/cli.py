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

Every command (``x400-mta``, ``x400``, ``x400ctl``, ``x400-dump``) ends with one of the
exit codes of :data:`EXIT_CODES`, the table its ``--help`` shows (:data:`EXIT_CODES_HELP`)
and docs/operating.md repeats.

Public API::

    EXIT_OK (0), EXIT_REFUSED (1), EXIT_USAGE (2), EXIT_UNREACHABLE (3),
    EXIT_PEER (4), EXIT_INTERRUPTED (130), EXIT_BROKEN_PIPE (141)
    EXIT_CODES, EXIT_CODES_HELP    the table, and its text for an epilog
    version(prog) -> str           ``prog`` and the installed package's version
    add_version(parser)            ``--version``, the version looked up only when asked
    quiet_broken_pipe() -> int     standard output's reader went away: EXIT_BROKEN_PIPE
    TerminalText(stream)           a text stream that escapes control characters
    terminal_text(stream) -> TerminalText   ``stream`` wrapped once
    held_interrupt() -> context manager giving interrupted() -> bool
                                   a first Ctrl-C noted, not raised, within the block
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import BinaryIO, Final, TextIO

from p1.ber.values import escape_text

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_CODES",
    "EXIT_CODES_HELP",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PEER",
    "EXIT_REFUSED",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "TerminalText",
    "add_version",
    "held_interrupt",
    "quiet_broken_pipe",
    "terminal_text",
    "version",
]

EXIT_OK: Final = 0
"""Done."""
EXIT_REFUSED: Final = 1
"""Nothing matched, or the request or input was refused."""
EXIT_USAGE: Final = 2
"""Bad arguments."""
EXIT_UNREACHABLE: Final = 3
"""The MTA daemon could not be reached (or, for ``x400-mta``, could not be configured)."""
EXIT_PEER: Final = 4
"""A peer or protocol error (for ``x400-mta``, a part could not start)."""
EXIT_INTERRUPTED: Final = 130
"""Ctrl-C (128 + SIGINT), as a shell reports it."""
EXIT_BROKEN_PIPE: Final = 141
"""The reader of standard output went away (128 + SIGPIPE), as a shell reports it."""

EXIT_CODES: Final = (
    (EXIT_OK, "done"),
    (EXIT_REFUSED, "nothing matched, or refused (by the MTA, the peer, or as input)"),
    (EXIT_USAGE, "bad arguments"),
    (EXIT_UNREACHABLE, "the MTA is not running or does not answer (x400-mta: bad configuration)"),
    (EXIT_PEER, "peer or protocol error (x400-mta: a part could not start)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
    (EXIT_BROKEN_PIPE, "the reader of the output went away (| head)"),
)
"""Every command's exit codes, one table."""

EXIT_CODES_HELP: Final = "exit codes:\n" + "".join(
    f"  {code:<4} {meaning}\n" for code, meaning in EXIT_CODES
)
"""The table for the end of a ``--help`` (RawDescriptionHelpFormatter)."""


def version(prog: str) -> str:
    """``prog`` and the version of the installed package, for ``--version``."""
    from importlib import metadata  # only when asked: it costs every other call

    try:
        return f"{prog} {metadata.version('aiox400')}"
    except metadata.PackageNotFoundError:
        return f"{prog} unknown (not installed)"


class _Version(argparse.Action):
    """``--version``: print :func:`version` and exit 0."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        print(version(parser.prog))
        parser.exit()


def add_version(parser: argparse.ArgumentParser) -> None:
    """Give ``parser`` a ``--version`` option."""
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")


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


@contextlib.contextmanager
def held_interrupt() -> Iterator[Callable[[], bool]]:
    """Within the block, a first Ctrl-C is noted instead of raised: the function given
    says whether one came, so that the caller finishes the step under way (a submission
    the MTA is answering) and stops before the next.  A second Ctrl-C raises
    KeyboardInterrupt at once.  Nothing changes outside the main thread, or where SIGINT
    is not Python's own handler (ignored, or the program's)."""
    noted = threading.Event()
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield noted.is_set
        return

    def note(signum: int, frame: FrameType | None) -> None:
        if noted.is_set():
            raise KeyboardInterrupt
        noted.set()

    signal.signal(signal.SIGINT, note)
    try:
        yield noted.is_set
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
