"""``x400-mta``: run one MTA in the foreground (as systemd's ``Type=exec`` service expects).

    x400-mta --config /etc/aiox400/mta.toml [--log-level LEVEL] [--check]

Logs go to standard error, one line per event (systemd's journal adds the time when
``--no-timestamps`` is given).  Whatever a record's message holds, it is one line: its
control characters are written as ``\\xHH`` (:class:`LineFormatter`), so a name or an
identifier a peer sent cannot start a line of its own.  SIGTERM and SIGINT stop the MTA
cleanly: listeners close, connections end, what was in flight is put back in the queue,
nothing is lost.

Exit codes: 0 stopped on a signal (or ``--check`` found the configuration good); 2 bad
arguments; 3 the configuration is invalid (the message names the file, key and value);
4 a part could not start (database, listener port).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from types import TracebackType
from typing import TextIO, TypeAlias

from config.loader import ConfigError, load_config
from config.schema import MtaConfig
from mta.service import Service
from p1.ber.values import escape_controls
from store import DatabaseUnavailableError

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_START = 4

log = logging.getLogger("aiox400.mta")

_ExcInfo: TypeAlias = (
    tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="x400-mta",
        description=(
            "Run an aiox400 X.400 / STANAG 4406 MTA in the foreground: P1 listeners, peer "
            "channels with their precedence slots and DSCP marks, the priority queue "
            "manager, local delivery into the message store, and the local API used by "
            "x400 and x400ctl.  Stop it with SIGTERM or Ctrl-C."
        ),
    )
    parser.add_argument("--config", "-c", required=True, metavar="FILE", help="the MTA's TOML file")
    parser.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error", "critical"],
        help="override the configuration's log_level",
    )
    parser.add_argument(
        "--no-timestamps",
        action="store_true",
        help="leave the time out of log lines (the systemd journal adds its own)",
    )
    parser.add_argument("--check", action="store_true", help="validate the configuration and exit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``x400-mta``."""
    args = _parser().parse_args(argv)
    try:
        config = load_config(args.config)
    except ConfigError as error:
        print(f"x400-mta: {error}", file=sys.stderr)
        return EXIT_CONFIG
    except OSError as error:
        print(f"x400-mta: cannot read {args.config}: {error.strerror}", file=sys.stderr)
        return EXIT_CONFIG
    if args.check:
        print(f"{config.source}: configuration of {config.name} is valid")
        return EXIT_OK
    _configure_logging(config, args.log_level, timestamps=not args.no_timestamps)
    try:
        asyncio.run(Service(config).run())
    except DatabaseUnavailableError as error:
        log.critical("cannot start: %s", error)
        return EXIT_START
    except OSError as error:
        log.critical("cannot start: %s", error)
        return EXIT_START
    return EXIT_OK


def _configure_logging(config: MtaConfig, level: str | None, *, timestamps: bool) -> None:
    handler = log_handler(sys.stderr, timestamps=timestamps)
    logging.basicConfig(
        level=(level or config.log_level.value).upper(), handlers=[handler], force=True
    )


def log_handler(stream: TextIO, *, timestamps: bool) -> logging.Handler:
    """The daemon's log handler: one line per record on ``stream``."""
    form = "%(levelname)s %(name)s: %(message)s"
    if timestamps:
        form = "%(asctime)s " + form
    handler = logging.StreamHandler(stream)
    handler.setFormatter(LineFormatter(form))
    return handler


class LineFormatter(logging.Formatter):
    """A formatter that keeps each record's message on its line.

    Control characters in the formatted message (line breaks, carriage returns, terminal
    escapes...) are written as ``\\xHH`` (:func:`p1.ber.values.escape_controls`), so
    that text from a peer, wherever a message quotes it, can neither forge a line nor
    hide one.  A traceback keeps its lines, each escaped the same way.
    """

    def formatMessage(self, record: logging.LogRecord) -> str:
        return escape_controls(super().formatMessage(record))

    def formatException(self, ei: _ExcInfo) -> str:
        return _escape_lines(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return _escape_lines(super().formatStack(stack_info))


def _escape_lines(text: str) -> str:
    return "\n".join(escape_controls(line) for line in text.split("\n"))


if __name__ == "__main__":
    sys.exit(main())
