"""``x400ctl``: the operator's tool.

``x400ctl ping HOST [PORT]`` binds to an MTA over P1 (X.411 MTA-bind on RFC 1006), reports
the responder's name and the bind round-trip time, and releases.  ``--tsel``, ``--ssel`` and
``--psel`` give the responder's selectors (X.224 CR called TSAP-ID, X.225 CN called SSAP
identifier, X.226 CP called-presentation-selector), ``--calling-tsel`` and so on ours: text
such as ``x400`` or hex such as ``hex:0591`` (:mod:`p1.osi.selectors`).  ``--protocol``
picks the mode as a peer's ``protocol`` does: ``1988`` (normal mode, the default),
``1988-x410`` or ``1984`` (X.410-1984 mode, applicationProtocol 12 or 1).
``x400ctl ping --peer NAME`` takes all of it, and our credentials, from the configured
peer (:mod:`client.ping_target`); ``--password-file`` gives a password without showing
it in ``ps``.  ``--tls`` (or a peer's slot with ``tls = "required"``) runs the bind inside
TLS as the daemon would (``--ca``, ``--certificate``, ``--key``, ``--fingerprint``,
``--certificate-name``), and the TLS version is printed with the round-trip.

``x400ctl status|queue|qshape|channels|show|hold|release|delete|non-deliver|flush|track|
config|quarantine|probe|minimize|reload|stop`` ask a running MTA through its local API
(:mod:`client.ctl_local`, :mod:`client.ctl_queued`); ``x400ctl tls show|selfsigned``
looks at a TLS listener's certificate or makes a lab's pair (:mod:`client.ctl_tls`).
``--config`` and ``--socket`` may come before or after the command; without either,
``$AIOX400_CONFIG`` or /etc/aiox400/mta.toml (:func:`client.api.configuration`);
``--version`` prints the installed package's version.

Exit codes (:data:`client.cli.EXIT_CODES`): 0 done (bound and released); 1 the peer
refused the bind (the MTABindError is printed), or the MTA refused the request, or
nothing matched; 2 bad arguments (among them no MTA named, a selection naming nothing);
3 the MTA is not running or does not answer (ping: not within ``--timeout``); 4 a
connection, TLS or protocol error (ping), or the responder's name is not the one expected with
``--peer-name``; 130 interrupted (Ctrl-C); 141 standard output's reader went away.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
from collections.abc import Sequence
from typing import Final

from client import cli, ctl_local, ctl_tls
from client.api import ApiError, ApiUnreachable, ApiUsageError
from client.bind import AssociationError, BindRefusedError, Bound, bind_and_release
from client.cli import (
    EXIT_CODES_HELP,
    EXIT_INTERRUPTED,
    EXIT_PEER,
    add_version,
    quiet_broken_pipe,
    terminal_text,
)
from client.ping_target import DEFAULT_PORT, TargetError, target
from config.kinds import FINGERPRINT, Invalid
from config.schema import P1Protocol, Selectors
from config.tls import ClientTls
from p1.association.connection import AssociationSettings
from p1.association.mtabind import MTABindArgument
from p1.association.x410 import X410Settings, initiator_settings
from p1.ber.values import escape_controls
from p1.mts.precedence import Precedence, PrecedenceError, dscp_name, parse_precedence
from p1.osi.selectors import MAX_PSEL, MAX_SSEL, MAX_TSEL, SelectorError, parse_selector

EXIT_OK: Final = cli.EXIT_OK
EXIT_REFUSED: Final = cli.EXIT_REFUSED
EXIT_UNREACHABLE: Final = cli.EXIT_UNREACHABLE
EXIT_USAGE: Final = cli.EXIT_USAGE
EXIT_TIMEOUT: Final = EXIT_UNREACHABLE
"""Ping: the MTA pinged did not answer in time."""
EXIT_FAILED: Final = EXIT_PEER
"""Ping: a connection or protocol error, or not the responder expected."""


_DESCRIPTION = """\
Operator's tool for aiox400 MTAs.

Which MTA, the first given of: --config FILE (its control_socket), --socket PATH,
the file in $AIOX400_CONFIG, /etc/aiox400/mta.toml when it exists; --config and
--socket go before or after the command.  For the local API only the control_socket
is read from the file; ping --peer reads the whole file, password files included.

examples:
  x400ctl -c /etc/aiox400/mta.toml status
  x400ctl queue --list 20
  x400ctl hold --peer MTA-B --precedence routine
  x400ctl track '[GB; ;SITEA;e6c4...]'

"""


def _where(*, suppress: bool) -> argparse.ArgumentParser:
    """``--config`` and ``--socket``.  Their defaults are left unset (SUPPRESS) so that a
    value given before the command is not overwritten by the subcommand's default."""
    where = argparse.ArgumentParser(add_help=False)
    default = argparse.SUPPRESS if suppress else None
    where.add_argument(
        "--config",
        "-c",
        metavar="FILE",
        default=default,
        help="the MTA's configuration file (default $AIOX400_CONFIG, else /etc/aiox400/mta.toml)",
    )
    where.add_argument("--socket", metavar="PATH", default=default, help="the MTA's control socket")
    return where


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="x400ctl",
        description=_DESCRIPTION,
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[_where(suppress=True)],
    )
    add_version(parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ping = commands.add_parser(
        "ping",
        help="bind to an MTA over P1, report its name and the bind time, release",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=_PING_HELP,
        parents=[_where(suppress=True)],
    )
    _add_ping_arguments(ping)
    ctl_local.add_commands(commands, _where(suppress=True))
    ctl_tls.add_command(commands)
    return parser


_PING_HELP: Final = """\
Open a P1 association (RFC 1006, X.224 class 0, session, presentation, ACSE, RTSE),
bind, print the responder's MTA name and the bind round-trip time, then release.

With --peer NAME, everything comes from that peer in the MTA's configuration (--config,
$AIOX400_CONFIG or /etc/aiox400/mta.toml; the whole file is read, password files
included): its first host, its first slot's port, DSCP and selectors (--precedence
LEVEL or --port PORT picks another slot), its protocol, and our MTA name and the
password we present to it.  What the command line gives wins.

Without --peer: HOST [PORT], --mta-name and --password-file FILE (a file only its owner
may read, one password, as the configuration's password files).  --password PW works
too but shows the password to every user of the host (ps, /proc): x400ctl warns.

TLS (RFC 1006 inside TLS): with --peer, when the slot's tls is "required", with the
peer's certificate, key, ca, fingerprint and certificate_name; else with --tls (default
port 3782), checking the certificate against --ca (else the system's CAs) for
--certificate-name (else HOST), or against the pinned --fingerprint; --certificate and
--key present ours.  The options override the peer's.  A certificate that fails the
check is exit 4; the TLS version is printed with the round-trip.

examples:
  sudo -u aiox400 x400ctl ping --peer MTA-B
  sudo -u aiox400 x400ctl ping --peer MTA-B --precedence flash
  x400ctl ping mta-b.example 102 --mta-name MTA-A --password-file ~/mta-a.password
  x400ctl ping pp.example --mta-name MTA-A --password-file pw --tsel x400 --protocol 1984
  x400ctl ping mta-b.example --tls --ca ca.pem --certificate a.pem --key a.key \
      --mta-name MTA-A --password-file pw
"""

_SELECTORS = (
    ("tsel", "tsel", MAX_TSEL, "the responder's TSEL, the CR's called TSAP-ID (X.224)"),
    ("ssel", "ssel", MAX_SSEL, "the responder's session selector (X.225 CN, PI 52)"),
    ("psel", "psel", MAX_PSEL, "the responder's presentation selector (X.226 CP)"),
    ("calling-tsel", "calling_tsel", MAX_TSEL, "our TSEL, the CR's calling TSAP-ID"),
    ("calling-ssel", "calling_ssel", MAX_SSEL, "our session selector (CN, PI 51)"),
    ("calling-psel", "calling_psel", MAX_PSEL, "our presentation selector (CP)"),
)
"""Option, :class:`config.schema.Selectors` field, most octets, help: the selectors ping
sends."""


def _selector(limit: int, text: str) -> bytes:
    try:
        return parse_selector(text, limit=limit)
    except SelectorError as error:
        raise argparse.ArgumentTypeError(f"{text!r}: expected {error.why}") from None


def _precedence(text: str) -> Precedence:
    try:
        return parse_precedence(text)
    except PrecedenceError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _fingerprint(text: str) -> str:
    try:
        return FINGERPRINT.convert(text)
    except Invalid:
        raise argparse.ArgumentTypeError(f"{text!r}: expected {FINGERPRINT.expected}") from None


def _add_ping_arguments(ping: argparse.ArgumentParser) -> None:
    ping.add_argument(
        "host", metavar="HOST", nargs="?", help="the MTA's host name or address (or --peer)"
    )
    ping.add_argument(
        "port",
        metavar="PORT",
        type=int,
        nargs="?",
        help=f"its P1 port (default {DEFAULT_PORT}; with --peer, --port)",
    )
    ping.add_argument("--peer", metavar="NAME", help="a peer of the configuration: see above")
    ping.add_argument(
        "--port",
        dest="port_option",
        metavar="PORT",
        type=int,
        help="the port; with --peer, the slot on this port",
    )
    ping.add_argument(
        "--precedence",
        metavar="LEVEL",
        type=_precedence,
        help="with --peer, the slot carrying this precedence (flash, routine, ...)",
    )
    ping.add_argument("--mta-name", help="our MTA name in the bind (with --peer: the MTA's)")
    secret = ping.add_mutually_exclusive_group()
    secret.add_argument(
        "--password-file",
        metavar="FILE",
        help="our bind password, read from FILE (mode 0600; one trailing newline dropped)",
    )
    secret.add_argument(
        "--password",
        metavar="PW",
        help="our bind password (IA5String): visible in ps, prefer --password-file",
    )
    ping.add_argument("--peer-name", help="fail (exit 4) unless the responder names itself so")
    ping.add_argument(
        "--dscp",
        help="DiffServ mark of the connection: CS0..CS7, EF, AFxy, 0..63 (default: the"
        " slot's with --peer, else CS0)",
    )
    ping.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="seconds for the connect and, separately, for the bind (default 10)",
    )
    ping.add_argument(
        "--protocol",
        choices=[p.value for p in P1Protocol],
        help="1988 (normal mode; default unless --peer's protocol says otherwise), "
        "1988-x410 or 1984 (X.410-1984 mode, applicationProtocol 12 or 1; no presentation "
        "selectors)",
    )
    _add_tls_arguments(ping)
    forms = 'text such as "x400" or hex such as "hex:0591"'
    for option, field, limit, what in _SELECTORS:
        ping.add_argument(
            f"--{option}",
            dest=field,
            metavar="SEL",
            type=functools.partial(_selector, limit),
            help=f"{what}: {forms}, up to {limit} octets (default: the slot's with --peer,"
            " else none)",
        )


def _add_tls_arguments(ping: argparse.ArgumentParser) -> None:
    tls = ping.add_argument_group("TLS", "default: the slot's with --peer, else none")
    tls.add_argument(
        "--tls", action="store_true", help="bind inside TLS (RFC 1006 inside TLS, port 3782)"
    )
    tls.add_argument("--ca", metavar="FILE", help="PEM certificates trusted to issue the MTA's")
    tls.add_argument("--certificate", metavar="FILE", help="our PEM certificate, to present")
    tls.add_argument("--key", metavar="FILE", help="the PEM private key of --certificate")
    tls.add_argument(
        "--fingerprint",
        metavar="SHA256",
        type=_fingerprint,
        help="the SHA-256 fingerprint the MTA's certificate must have (x400ctl tls show)",
    )
    tls.add_argument(
        "--certificate-name",
        metavar="NAME",
        help="the DNS name or address the MTA's certificate must carry (default HOST)",
    )


def ping(
    host: str,
    port: int,
    *,
    mta_name: str,
    password: str,
    dscp: int,
    timeout: float,
    settings: AssociationSettings | X410Settings | None = None,
    tls: ClientTls | None = None,
) -> Bound:
    """Bind to ``host:port`` (inside TLS with ``tls``), release, and say who answered and
    how long the bind took; ``settings`` carries the selectors to send (and,
    X410Settings, the X.410-1984 mode)."""
    argument = MTABindArgument(initiator_name=mta_name, password=password)
    return bind_and_release(
        host, port, argument, settings=settings, dscp=dscp, timeout=timeout, tls=tls
    )


def _ping_command(args: argparse.Namespace) -> int:
    try:
        chosen = target(args, lambda line: print(f"x400ctl ping: {line}", file=sys.stderr))
    except TargetError as error:
        print(f"x400ctl ping: {error}", file=sys.stderr)
        return EXIT_USAGE
    where = chosen.label
    try:
        result = ping(
            chosen.host,
            chosen.port,
            mta_name=chosen.mta_name,
            password=chosen.password,
            dscp=chosen.dscp,
            timeout=args.timeout,
            settings=_settings(chosen.selectors, chosen.protocol),
            tls=chosen.tls,
        )
    except BindRefusedError as error:
        print(f"x400ctl ping: {where} refused the bind: {error}", file=sys.stderr)
        return EXIT_REFUSED
    except TimeoutError:
        print(f"x400ctl ping: {where} did not answer within {args.timeout:g} s", file=sys.stderr)
        return EXIT_TIMEOUT
    except (OSError, AssociationError) as error:
        print(f"x400ctl ping: {where}: {error}", file=sys.stderr)
        return EXIT_FAILED
    name = escape_controls(result.responder_name or "(unauthenticated)")
    tls = "" if result.tls_version is None else f", {result.tls_version}"
    print(
        f"{where}: bound to {name} in {result.bind_seconds * 1000:.1f} ms "
        f"(DSCP {dscp_name(chosen.dscp)}{tls}), released"
    )
    if args.peer_name is not None and result.responder_name != args.peer_name:
        print(
            f"x400ctl ping: expected the responder {args.peer_name!r}, it named itself {name!r}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


def _settings(selectors: Selectors, protocol: P1Protocol) -> AssociationSettings | X410Settings:
    """The initiator's settings: ``selectors`` sent, in the mode of ``protocol``."""
    normal = AssociationSettings(
        called_tsap=selectors.tsel,
        called_ssap=selectors.ssel,
        called_psap=selectors.psel,
        calling_tsap=selectors.calling_tsel,
        calling_ssap=selectors.calling_ssel,
        calling_psap=selectors.calling_psel,
    )
    return initiator_settings(normal, x410=protocol.x410, p1_1984=protocol is P1Protocol.X410_1984)


def main(argv: Sequence[str] | None = None) -> int:
    """Run x400ctl with ``argv`` (default: the command line); returns the exit code.

    Ctrl-C ends it with one line and 130; a reader that went away (``| head``) ends it
    quietly with 141, as SIGPIPE would.  Everything it prints goes through
    :class:`client.cli.TerminalText`: a peer's text reaches no terminal raw."""
    try:
        with (
            contextlib.redirect_stdout(terminal_text(sys.stdout)),
            contextlib.redirect_stderr(terminal_text(sys.stderr)),
        ):
            code = _main(argv)
            sys.stdout.flush()
    except KeyboardInterrupt:
        print("x400ctl: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return quiet_broken_pipe()
    return code


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        return int(stop.code or 0)
    if args.command == "ping":
        return _ping_command(args)
    if args.command == "tls":
        return ctl_tls.run(args, sys.stdout)
    if args.command in ctl_local.COMMANDS:
        try:
            return ctl_local.run(args, sys.stdout, sys.stdout.buffer)
        except ApiError as error:
            print(f"x400ctl {args.command}: {error}", file=sys.stderr)
            return _api_exit(error)
    parser.error(f"unknown command {args.command}")
    return EXIT_USAGE


def _api_exit(error: ApiError) -> int:
    """The exit code of a local-API command that failed with ``error``."""
    if isinstance(error, ApiUsageError):
        return EXIT_USAGE
    if isinstance(error, ApiUnreachable):
        return EXIT_UNREACHABLE
    return EXIT_REFUSED


if __name__ == "__main__":
    sys.exit(main())
