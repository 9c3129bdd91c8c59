"""The command line of ``x400-mta``: its options, and the installed entry point, which
answers ``--help``, ``--version`` and bad arguments before the daemon is imported (a
script or a unit asking for them waits for nothing else; the protocol stack, the store
and asyncio cost seconds on a cold cache).

The parser is also what the man page and the shell completion are made from
(``python -m docgen``).

Public API::

    parser() -> ArgumentParser    x400-mta's options
    main(argv) -> int             ``x400-mta``: the arguments parsed, then mta.daemon.run
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from client.cli import EXIT_CODES_HELP, add_version

__all__ = ["main", "parser"]

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
DEFAULT_CONFIG_FILE = Path("/etc/aiox400/mta.toml")
""":data:`config.schema.DEFAULT_CONFIG_FILE`, the unit's file, named here again because
importing anything of ``config`` loads the schema and p1's parsers with it;
tests/mta/test_command.py holds the two equal."""


def parser() -> argparse.ArgumentParser:
    """The options of ``x400-mta``."""
    command = argparse.ArgumentParser(
        prog="x400-mta",
        description=(
            "Run an aiox400 X.400 / STANAG 4406 MTA in the foreground: P1 listeners, peer "
            "channels with their precedence slots and DSCP marks, the priority queue "
            "manager, local delivery into the message store, and the local API used by "
            "x400 and x400ctl.  Stop it with SIGTERM or Ctrl-C; SIGHUP re-reads the "
            "configuration."
        ),
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_version(command)
    command.add_argument(
        "--config",
        "-c",
        metavar="FILE",
        help=f"the MTA's TOML file (default {DEFAULT_CONFIG_FILE}, when it exists)",
    )
    command.add_argument(
        "--log-level", choices=LOG_LEVELS, help="override the configuration's log_level"
    )
    command.add_argument(
        "--no-timestamps",
        action="store_true",
        help="leave the time out of log lines (the systemd journal adds its own)",
    )
    command.add_argument(
        "--log-prefix-priorities",
        action="store_true",
        help="start each log line with its syslog priority, <4> for a warning (done "
        "anyway when standard error is the systemd journal)",
    )
    command.add_argument("--check", action="store_true", help="validate the configuration and exit")
    return command


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """``argv`` parsed, ``--config`` defaulted to :data:`DEFAULT_CONFIG_FILE` when that
    exists; ``--help``, ``--version`` and bad arguments end the process here."""
    command = parser()
    args = command.parse_args(argv)
    if args.config is None and not DEFAULT_CONFIG_FILE.exists():
        command.error(f"say which configuration: --config FILE (there is no {DEFAULT_CONFIG_FILE})")
    args.config = args.config or str(DEFAULT_CONFIG_FILE)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``x400-mta``."""
    args = parse(sys.argv[1:] if argv is None else argv)
    from mta.daemon import run  # the stack, the store and asyncio: only to run

    return run(args)


if __name__ == "__main__":
    sys.exit(main())
