"""``x400-mta``: run one MTA in the foreground (a systemd ``Type=notify`` service).

    x400-mta [--config /etc/aiox400/mta.toml] [--log-level LEVEL] [--check]
             [--no-timestamps] [--log-prefix-priorities]

Without ``--config``, the configuration is /etc/aiox400/mta.toml
(:data:`config.schema.DEFAULT_CONFIG_FILE`), the unit's file, when it exists
(:func:`mta.command.parse`).

Logs go to standard error, one line per event (systemd's journal adds the time when
``--no-timestamps`` is given).  Whatever a record's message holds, it is one line: its
control characters are written as ``\\xHH`` (:class:`LineFormatter`), so a name or an
identifier a peer sent cannot start a line of its own.  When standard error is the
journal (``$JOURNAL_STREAM`` names it, systemd.exec(5)) or ``--log-prefix-priorities``
asks, each line starts with its syslog priority, ``<4>`` for a warning (sd-daemon(3)),
so the journal files it at that priority.

SIGTERM and SIGINT stop the MTA cleanly: listeners close, connections end, what was in
flight is put back in the queue, nothing is lost.  SIGHUP re-reads the configuration
file (:mod:`mta.operator.reload`).  Readiness, status and the watchdog are told to systemd
(:mod:`mta.lifecycle`).  One daemon runs per state directory (:mod:`mta.instance`).

Exit codes (the table of :data:`client.cli.EXIT_CODES`): 0 stopped on a signal (or
``--check`` found the configuration good); 2 bad arguments; 3 the configuration is
invalid (the message names the file, key and value); 4 a part could not start (another
daemon runs on the state directory, database, listener port).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import syslog
from collections.abc import Mapping
from types import TracebackType
from typing import Final, TextIO, TypeAlias

from config.loader import ConfigError, load_config
from config.schema import MtaConfig
from mta.instance import StateDirInUseError
from mta.lifecycle import serve
from mta.memory import give_back_large_buffers
from mta.operator.reload import Reloader
from mta.service import Service
from p1.ber.values import escape_controls
from store import DatabaseUnavailableError

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_START = 4

log = logging.getLogger("aiox400.mta")

JOURNAL_STREAM: Final = "JOURNAL_STREAM"
"""Set by systemd to ``device:inode`` of the journal's stream on stdout and stderr
(systemd.exec(5))."""
_PRIORITIES: Final = (
    (logging.CRITICAL, syslog.LOG_CRIT),
    (logging.ERROR, syslog.LOG_ERR),
    (logging.WARNING, syslog.LOG_WARNING),
    (logging.INFO, syslog.LOG_INFO),
)
"""The syslog priority (syslog(3)) of each logging level and those above it; below
them all, LOG_DEBUG."""

_ExcInfo: TypeAlias = (
    tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]
)


def run(args: argparse.Namespace) -> int:
    """Run the MTA as the parsed arguments ``args`` of :func:`mta.command.parser` say."""
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
    priorities = args.log_prefix_priorities or stderr_is_journal()
    _configure_logging(
        config, args.log_level, timestamps=not args.no_timestamps, priorities=priorities
    )
    give_back_large_buffers()
    service = Service(config)
    try:
        asyncio.run(serve(service, reload=Reloader(service, level_override=args.log_level)))
    except StateDirInUseError as error:
        log.critical("cannot start: %s", error)
        return EXIT_START
    except DatabaseUnavailableError as error:
        log.critical("cannot start: %s", error)
        return EXIT_START
    except OSError as error:
        log.critical("cannot start: %s", error)
        return EXIT_START
    return EXIT_OK


def _configure_logging(
    config: MtaConfig, level: str | None, *, timestamps: bool, priorities: bool = False
) -> None:
    handler = log_handler(sys.stderr, timestamps=timestamps, priorities=priorities)
    logging.basicConfig(
        level=(level or config.log_level.value).upper(), handlers=[handler], force=True
    )


def log_handler(stream: TextIO, *, timestamps: bool, priorities: bool = False) -> logging.Handler:
    """The daemon's log handler: one line per record on ``stream``, each starting with
    its syslog priority when ``priorities`` is set."""
    form = "%(levelname)s %(name)s: %(message)s"
    if timestamps:
        form = "%(asctime)s " + form
    handler = logging.StreamHandler(stream)
    handler.setFormatter(LineFormatter(form, priorities=priorities))
    return handler


def stderr_is_journal(environ: Mapping[str, str] = os.environ, descriptor: int = 2) -> bool:
    """Whether ``descriptor`` (standard error) is the stream ``$JOURNAL_STREAM`` names:
    its device and inode numbers, in decimal, joined by a colon (systemd.exec(5))."""
    device, colon, inode = environ.get(JOURNAL_STREAM, "").partition(":")
    if not (colon and device.isdigit() and inode.isdigit()):
        return False
    try:
        status = os.fstat(descriptor)
    except OSError:
        return False
    return (int(device), int(inode)) == (status.st_dev, status.st_ino)


def syslog_priority(level: int) -> int:
    """The syslog priority of a logging level: debug 7, info 6, warning 4, error 3,
    critical 2 (syslog(3))."""
    return next((priority for floor, priority in _PRIORITIES if level >= floor), syslog.LOG_DEBUG)


class LineFormatter(logging.Formatter):
    """A formatter that keeps each record's message on its line.

    Control characters in the formatted message (line breaks, carriage returns, terminal
    escapes...) are written as ``\\xHH`` (:func:`p1.ber.values.escape_controls`), so
    that text from a peer, wherever a message quotes it, can neither forge a line nor
    hide one.  A traceback keeps its lines, each escaped the same way.

    ``priorities``: every line of a record starts with ``<N>``, its syslog priority
    (:func:`syslog_priority`), the prefix the journal reads (sd-daemon(3)).
    """

    def __init__(self, form: str, *, priorities: bool = False) -> None:
        super().__init__(form)
        self.priorities = priorities

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if not self.priorities:
            return text
        prefix = f"<{syslog_priority(record.levelno)}>"
        return "\n".join(prefix + line for line in text.split("\n"))

    def formatMessage(self, record: logging.LogRecord) -> str:
        return escape_controls(super().formatMessage(record))

    def formatException(self, ei: _ExcInfo) -> str:
        return _escape_lines(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return _escape_lines(super().formatStack(stack_info))


def _escape_lines(text: str) -> str:
    return "\n".join(escape_controls(line) for line in text.split("\n"))
