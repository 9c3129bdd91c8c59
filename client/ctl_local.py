"""``x400ctl status|queue|qshape|channels|show|hold|release|delete|non-deliver|flush|minimize|
track|probe|config|quarantine|reload|stop``: the operator's view of a running MTA.

These commands ask the daemon through its local API (``control_socket`` of the
configuration given with ``--config``, or ``--socket``):

    status     the MTA's name, uptime, recipients per queue state, slots and connections
               up, what the quarantine holds, parts degraded
    queue      recipients per route (peer or ``local``), precedence (most urgent first:
               override, flash, immediate, priority, routine, deferred) and state; with
               ``--list``, each waiting recipient with its message id, age and size
    qshape     waiting recipients per route and precedence by age (Postfix's qshape)
    show ID|MTSID [--raw [--force]]   one queued message (Postfix's postcat -q): its
               recipients' states, envelope, heading and body (:mod:`client.ctl_queued`)
    channels   every connection slot of every peer: precedences, port, DSCP, TLS, mode,
               backlog, and each connection's state, TLS version, age, transfers and
               last error
    hold / release / delete   the recipients selected by message id, MTS identifier,
               ``--peer``, ``--precedence`` or ``--all`` (every condition given must
               hold); delete sends no report and never touches a message in flight
    non-deliver SELECTION --reason TEXT   the waiting recipients selected fail, with a
               non-delivery report to the originator carrying TEXT; those in flight
               are named and left alone
    flush [PEER]   retry now what waits out a retry backoff
    minimize [PRECEDENCE|off] [--peer NAME]   transfer only PRECEDENCE and above (to
                   every peer, or to NAME), or again everything; alone: what is in force
    track MTSID    the message's every event at this MTA (the audit log), in order, and
                   its recipients' states in the queue now; ``--recipient``,
                   ``--originator``, ``--since``: the messages found (one: tracked)
    probe --from OR --to OR...   submit a probe (X.411 8.2.1.2): would a message reach
                   them?  The probe report comes to the --from mailbox
    config [--defaults]   the effective configuration as TOML, passwords hidden (from
                   the file with ``--config``, from the running daemon with ``--socket``
                   alone)
    quarantine list|show|delete   transfers kept because they could not be taken in
    reload     re-read the configuration file, as SIGHUP does: what changed, or why
               the file is refused (exit 1)
    stop [--wait]   stop gracefully, as SIGTERM does; ``--wait``: until the socket is gone

Public API::

    add_commands(subparsers)     the subcommands, for x400ctl's parser
    run(args, out, raw=None) -> int   exit code (0 done; 1 the MTA refused or is not
                                 running, or nothing matched); ``raw``: where octets go
    table(header, rows, *, right=()) -> list[str]   columns as wide as their content
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from client import ctl_queued
from client.api import ApiUsageError, call, configuration, socket_path
from client.cli import EXIT_CODES_HELP
from client.tables import recipients_table, table, utc
from config.loader import ConfigError, load_config
from config.view import effective_settings, render
from p1.ber.values import escape_controls
from p1.mts.precedence import PrecedenceError, parse_precedence

__all__ = ["COMMANDS", "add_commands", "run", "table"]

COMMANDS = (
    "status",
    "queue",
    "qshape",
    "channels",
    "show",
    "hold",
    "release",
    "delete",
    "non-deliver",
    "flush",
    "minimize",
    "track",
    "probe",
    "config",
    "quarantine",
    "reload",
    "stop",
)

EXIT_OK = 0
EXIT_NOTHING = 1
"""Nothing matched (or what matched could not be changed)."""

_STATES = ("pending", "in_flight", "held", "transferred", "delivered", "failed")
_FORMATTER = argparse.RawDescriptionHelpFormatter


def add_commands(commands: Any, where: argparse.ArgumentParser) -> None:
    """Add the local-API subcommands to x400ctl's subparsers; ``where``: the parent
    parser of ``--config`` and ``--socket``."""
    for name, (summary, text) in _HELP.items():
        sub = commands.add_parser(
            name,
            parents=[where],
            help=summary,
            description=text,
            epilog=EXIT_CODES_HELP,
            formatter_class=_FORMATTER,
        )
        _ARGUMENTS.get(name, _no_arguments)(sub)
    _add_quarantine(commands, where)


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    """A command without arguments of its own."""


def _queue_arguments(queue: argparse.ArgumentParser) -> None:
    queue.add_argument(
        "--list",
        nargs="?",
        const=100,
        type=int,
        metavar="N",
        help="list the first N (default 100) waiting recipients, most urgent first, with "
        "their message ids (what hold, release and delete take), age and size",
    )


def _selection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "messages",
        nargs="*",
        metavar="ID|MTSID",
        help="messages by queue id (a number, from queue --list) or MTS identifier "
        "(as printed by x400 send, quoted)",
    )
    parser.add_argument("--peer", metavar="NAME", help="only recipients routed to this peer")
    parser.add_argument(
        "--precedence",
        metavar="LEVEL",
        type=_precedence_name,
        help="only messages of this precedence: override, flash, immediate, priority, "
        "routine or deferred",
    )
    parser.add_argument(
        "--all", action="store_true", help="every waiting recipient (with no other selector)"
    )


def _precedence_name(text: str) -> str:
    """``text`` as a STANAG 4406 precedence's name; a bad one is a usage error (exit 2)."""
    try:
        return parse_precedence(text).label
    except PrecedenceError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _flush_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "peer", nargs="?", metavar="PEER", help="the peer to retry now (default: every route)"
    )


def _minimize_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "level",
        nargs="?",
        metavar="PRECEDENCE|off",
        help="the least precedence transferred (e.g. immediate), or off; "
        "left out: show what is in force",
    )
    parser.add_argument(
        "--peer", metavar="NAME", help="only this peer (default: every peer, switch-wide)"
    )


def _track_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "mts_identifier",
        nargs="?",
        metavar="MTSID",
        help="the message's MTS identifier, quoted (or search with the options below)",
    )
    parser.add_argument(
        "--recipient", metavar="OR", help="messages to this O/R name (queue and audit log)"
    )
    parser.add_argument(
        "--originator",
        metavar="OR",
        help="messages from this O/R name (the queue's, until retention prunes them)",
    )
    parser.add_argument(
        "--since",
        metavar="TIME",
        type=_since,
        help="messages seen since TIME: ISO 8601 (UTC unless it says) or an age, e.g. 30m, 1h, 2d",
    )


def _since(text: str) -> datetime:
    return ctl_queued.parse_since(text, datetime.now(UTC))


def _non_deliver_arguments(parser: argparse.ArgumentParser) -> None:
    _selection_arguments(parser)
    parser.add_argument(
        "--reason",
        required=True,
        metavar="TEXT",
        help="why, for the originator: the report's supplementary-information (1 to 256 "
        "letters, digits, spaces and '()+,-./:=?)",
    )


def _probe_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="sender", required=True, metavar="OR", help="originator")
    parser.add_argument(
        "--to", required=True, action="append", metavar="OR", help="a recipient (repeatable)"
    )
    parser.add_argument(
        "--p2", action="store_true", help="about an X.420 (P2) message (default: P772)"
    )
    parser.add_argument(
        "--size", type=int, default=0, metavar="OCTETS", help="content length asked about"
    )


def _config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--defaults",
        action="store_true",
        help='every key, those at their defaults marked "# default" (postconf without -n)',
    )


_ARGUMENTS = {
    "config": _config_arguments,
    "queue": _queue_arguments,
    "hold": _selection_arguments,
    "release": _selection_arguments,
    "delete": _selection_arguments,
    "flush": _flush_arguments,
    "minimize": _minimize_arguments,
    "track": _track_arguments,
    "probe": _probe_arguments,
    "non-deliver": _non_deliver_arguments,
    **ctl_queued.ARGUMENTS,
}

_SELECTORS_HELP = """\
Select by queue id or MTS identifier (any of those listed), --peer, --precedence, or
--all; a recipient must meet every condition given.  Exit 1 when nothing matched.
"""

_HELP: dict[str, tuple[str, str]] = {
    "status": (
        "the MTA's state in a few lines",
        "Name and uptime, this process's name in the shared queue, recipients per queue\n"
        "state (those in flight per process holding them, with its lease), slots and\n"
        "connections up, the quarantine, and any part that is degraded (with its last\n"
        "error).\n\n"
        "example:\n  x400ctl status -c /etc/aiox400/mta.toml",
    ),
    "queue": (
        "queued recipients by route, precedence and state",
        "A table of recipients per route (peer or local), precedence and state, then\n"
        "those in flight per process of the site holding them, with its lease.\n"
        "With --list, the waiting recipients themselves, most urgent first: queue id,\n"
        "precedence, state, tries, age, octets, route, MTS identifier, recipient.\n\n"
        "examples:\n  x400ctl queue\n  x400ctl queue --list 20",
    ),
    "qshape": (
        "waiting recipients by route, precedence and age",
        "Postfix's qshape for this MTA: one row per route and precedence, the recipients\n"
        "still waiting (pending, in flight, held) counted by how long ago their message\n"
        "arrived here: 0-5m, 5-10m, 10-20m, 20-40m, 40-80m, 80m+; a TOTAL row first.\n\n"
        "example:\n  x400ctl qshape",
    ),
    "channels": (
        "each connection slot: port, DSCP, TLS, mode, connections",
        "Every slot of every peer: precedences, state, host and port, DSCP, TLS (for a\n"
        "slot whose connections run inside TLS), mode, backlog, and each connection's\n"
        "state (with the TLS version once bound), age, transfers and last error.\n\n"
        "example:\n  x400ctl channels -c /etc/aiox400/mta.toml",
    ),
    "hold": (
        "keep queued messages from being sent",
        "Pending recipients selected are held: not sent until released.  Those in\n"
        "flight finish their attempt.\n\n" + _SELECTORS_HELP + "\nexamples:\n"
        "  x400ctl hold 12 13\n  x400ctl hold '[GB; ;SITEA;e6c4...]'\n"
        "  x400ctl hold --peer MTA-B --precedence routine",
    ),
    "release": (
        "let held messages go (due at once)",
        "Held recipients selected are pending again, due at once.\n\n"
        + _SELECTORS_HELP
        + "\nexamples:\n  x400ctl release 12\n  x400ctl release --all",
    ),
    "delete": (
        "remove queued messages (no report)",
        "The waiting recipients selected are removed from the queue; a message left\n"
        "with nothing to send goes with its APDU.  No non-delivery report is sent (X.411\n"
        "has no reason for an operator's deletion; Postfix and Isode delete silently);\n"
        "the audit log records each recipient deleted (x400ctl track).  A message with\n"
        "a selected recipient in flight (being transferred now) is left whole and\n"
        "named: hold it, or try again once its transfer ended.\n\n"
        + _SELECTORS_HELP
        + "\nexamples:\n  x400ctl delete 12\n  x400ctl delete --peer MTA-B --precedence deferred",
    ),
    "flush": (
        "retry now what waits for a peer",
        "Every recipient of PEER (or of every route) waiting out a retry backoff is due\n"
        "at once, and the peer's slots stop waiting out their reconnection backoff.\n"
        "A message whose deferred-delivery-time has not come keeps waiting.\n\n"
        "examples:\n  x400ctl flush MTA-B\n  x400ctl flush",
    ),
    "minimize": (
        "transfer only the more urgent precedences (MINIMIZE)",
        "MINIMIZE: messages below PRECEDENCE stay queued and are not transferred (to\n"
        "every peer, or to --peer NAME only) until MINIMIZE is lifted; the more urgent\n"
        "flow as ever.  A peer's limit is the higher of the switch-wide one and its own.\n"
        "What waits still expires at its own latest delivery time or [max_age].  Local\n"
        "delivery is not limited.  A local submission below the switch-wide precedence is\n"
        "held, or refused when [minimize] submissions = \"refuse\".  'off' lifts it (with\n"
        "--peer, only that peer's own) and wakes the slots.  Kept across a restart;\n"
        "recorded in the audit log; shown by status.\n\n"
        "examples:\n  x400ctl minimize immediate\n  x400ctl minimize flash --peer MTA-B\n"
        "  x400ctl minimize off\n  x400ctl minimize",
    ),
    "non-deliver": (
        "fail queued recipients, reporting to the originator",
        "The waiting recipients selected (pending or held) fail now, as expiry fails\n"
        "them: each is reported to its originator (if its report request asks for\n"
        "non-delivery reports) in an X.411 non-delivery report, reason\n"
        "unable-to-transfer, no diagnostic, and --reason TEXT as the report's\n"
        "supplementary-information.  The audit log records each one (x400ctl track).\n"
        "A recipient in flight (being transferred now) is named and left alone, and\n"
        "the exit is 1: try again once its transfer ended.\n\n"
        + _SELECTORS_HELP
        + "\nexamples:\n  x400ctl non-deliver 12 --reason 'recipient left: use J. Brown'\n"
        "  x400ctl non-deliver --peer MTA-B --reason 'MTA-B withdrawn from service'",
    ),
    "probe": (
        "ask whether a message would be delivered (a probe)",
        "Submit a probe (X.411 8.2.1.2) from --from to each --to: no content, only whether\n"
        "a message of that content type (P772, or P2 with --p2) and --size octets would\n"
        "be delivered.  Prints its MTS identifier; the probe report comes to the --from\n"
        "mailbox (x400 inbox lists it as a probe report).  x400 send --probe does the\n"
        "same with the load options.\n\n"
        "example:\n"
        "  x400ctl probe --from 'C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith' \\\n"
        "                --to 'C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones' --size 1048576",
    ),
    "track": (
        "a message's events at this MTA, in order; or find messages",
        "Every entry of the audit log for the message: time (UTC), event, recipient,\n"
        "peer and detail, oldest first; then where each of its recipients stands in the\n"
        "queue now (state, route, tries, next attempt, last error), until retention\n"
        "prunes it ([retention] finished).  Exit 1 when neither has it.\n\n"
        "Without MTSID, --recipient, --originator and --since find messages (every\n"
        "condition given must hold): by recipient in the queue and the audit log, by\n"
        "originator in the queue only (the audit log does not name originators), since\n"
        "a time by their arrival or events.  Several are listed (the first 100, oldest\n"
        "first); one is tracked as with its MTSID.  Exit 1 when none is found.\n\n"
        "examples:\n  x400ctl track '[GB; ;SITEA;e6c4...]'\n"
        "  x400ctl track --recipient 'C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones' --since 1h\n"
        "  x400ctl track --originator 'C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith'",
    ),
    "config": (
        "the effective configuration as TOML, passwords hidden",
        "The keys set away from their defaults (with --defaults every key, defaults\n"
        'marked "# default", keys left out as comments), in the file\'s own names and\n'
        "units, as TOML that loads to the same configuration.  Passwords are never shown:\n"
        'one written in the file (and a database URL\'s) shows as "<hidden>", which the\n'
        "MTA refuses until the password is put back; a password_file shows by its path.\n"
        "Relative paths show resolved.  With --config, read from the file (the MTA need\n"
        "not run); with --socket alone, the running MTA's.  Every key is described in\n"
        "docs/configuration.md.\n\n"
        "examples:\n  x400ctl config -c /etc/aiox400/mta.toml\n"
        "  x400ctl config --defaults -c /etc/aiox400/mta.toml",
    ),
}


_HELP.update(ctl_queued.HELP)


def _add_quarantine(commands: Any, where: argparse.ArgumentParser) -> None:
    quarantine = commands.add_parser(
        "quarantine",
        help="transfers confirmed and kept because they could not be taken in",
        description=(
            "A transfer whose MTS-APDU does not decode, or cannot be written with this "
            "MTA's trace, is confirmed to the peer and kept here as received, not "
            "delivered. When the quarantine is full ([quarantine] max_messages, "
            "max_bytes), such transfers are refused: delete what has been dealt with."
        ),
    )
    actions = quarantine.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser(
        "list", parents=[where], help="each kept transfer: id, received, peer, size, reason"
    )
    show = actions.add_parser("show", parents=[where], help="one kept transfer")
    show.add_argument("id", type=int, metavar="ID", help="its id (from quarantine list)")
    show.add_argument(
        "--raw",
        action="store_true",
        help="write its octets as received to standard output (e.g. | x400-dump -)",
    )
    delete = actions.add_parser("delete", parents=[where], help="remove kept transfers")
    delete.add_argument("ids", type=int, nargs="+", metavar="ID", help="their ids")


# --- running ---------------------------------------------------------------------------


def run(args: argparse.Namespace, out: TextIO, raw: BinaryIO | None = None) -> int:
    """Run one local-API command; raises ApiError when the MTA refuses or cannot be reached.
    ``raw``: where ``quarantine show --raw`` writes the octets (default ``out``'s buffer)."""
    config_file = getattr(args, "config", None)
    explicit_socket = getattr(args, "socket", None)
    if args.command in _SELECTING:
        _selection(args)  # a selection that names nothing is refused before anything else
    if args.command == "track":
        _track_request(args)
    if args.command == "config" and not explicit_socket:
        return _config_from_file(config_file, args, out)
    path = socket_path(config_file, explicit_socket)
    if args.command == "quarantine":
        return _quarantine(path, args, out, raw)
    if args.command == "show":
        return ctl_queued.show(path, args, out, raw)
    if args.command in _SELECTING:
        return _SELECTING[args.command](path, args, out)
    if args.command == "queue" and args.list is not None:
        response, _ = call(path, {"op": "messages", "limit": args.list})
        _list(response, out)
        return EXIT_OK
    if args.command in _ASKING:
        return _ASKING[args.command](path, args, out)
    response, _ = call(path, {"op": args.command})
    _SHOW[args.command](response, out)
    return EXIT_OK


def _selection(args: argparse.Namespace) -> dict[str, Any]:
    """The selection request of hold, release or delete; ApiError if it names nothing."""
    ids = [int(m) for m in args.messages if m.isdigit()]
    identifiers = [m for m in args.messages if not m.isdigit()]
    if not (ids or identifiers or args.peer or args.precedence or args.all):
        raise ApiUsageError("say which: ID or MTSID..., --peer NAME, --precedence LEVEL or --all")
    if args.all and (ids or identifiers or args.peer or args.precedence):
        raise ApiUsageError("--all selects everything: give it alone")
    request: dict[str, Any] = {"message_ids": ids, "mts_identifiers": identifiers}
    if args.peer:
        request["peer"] = args.peer
    if args.precedence:
        request["precedence"] = args.precedence
    if args.all:
        request["all"] = True
    return request


def _hold_or_release(path: Path, args: argparse.Namespace, out: TextIO) -> int:
    response, _ = call(path, {"op": args.command, **_selection(args)})
    if not response["changed"]:
        state = "pending" if args.command == "hold" else "held"
        raise _Nothing(f"no {state} recipient matches")
    done = "held" if args.command == "hold" else "released"
    print(f"{done} {_recipients_of_messages(response['recipients'])}", file=out)
    return EXIT_OK


def _delete(path: Path, args: argparse.Namespace, out: TextIO) -> int:
    response, _ = call(path, {"op": "queue_delete", **_selection(args)})
    busy: list[dict[str, Any]] = response["busy"]
    if response["deleted"]:
        print(
            f"deleted {_recipients_of_messages(response['recipients'])}; "
            f"{response['messages_removed']} message(s) removed, no report sent",
            file=out,
        )
    for message_id in sorted({b["message_id"] for b in busy}):
        identifier = escape_controls(
            next(b["mts_identifier"] for b in busy if b["message_id"] == message_id)
        )
        print(
            f"x400ctl delete: message {message_id} {identifier} is being transferred now: "
            "not deleted (hold it, or try again once the transfer ended)",
            file=sys.stderr,
        )
    if not response["deleted"] and not busy:
        raise _Nothing("no waiting recipient matches")
    return EXIT_NOTHING if busy else EXIT_OK


def _recipients_of_messages(refs: list[dict[str, Any]]) -> str:
    messages = len({r["message_id"] for r in refs})
    return f"{len(refs)} recipient(s) of {messages} message(s)"


def _flush(path: Path, args: argparse.Namespace, out: TextIO) -> int:
    request: dict[str, Any] = {"op": "flush"}
    if args.peer:
        request["peer"] = args.peer
    response, _ = call(path, request)
    what = args.peer or "every route"
    print(f"flush {what}: {response['due']} recipient(s) due now; slots woken", file=out)
    return EXIT_OK


def _minimize(path: Path, args: argparse.Namespace, out: TextIO) -> int:
    request: dict[str, Any] = {"op": "minimize"}
    if args.level is not None:
        request["precedence"] = args.level.strip().lower()
    if args.peer:
        request["peer"] = args.peer
    response, _ = call(path, request)
    print(f"MINIMIZE: {escape_controls(response['minimize']['shown'])}", file=out)
    return EXIT_OK


def _probe(path: Path, args: argparse.Namespace, out: TextIO) -> int:
    """Submit a probe; print its MTS identifier (its report goes to --from's mailbox)."""
    request = {
        "op": "submit",
        "probe": True,
        "originator": args.sender,
        "recipients": args.to,
        "precedence": "routine",
        "content_type": 22 if args.p2 else "1.3.26.0.4406.0.4.1",
        "probe_content_length": args.size,
    }
    response, _ = call(path, request)
    print(escape_controls(response["mts_identifier"]), file=out)
    for rejected in response.get("rejected", ()):
        print(f"no route to {escape_controls(rejected)}: a probe report follows", file=out)
    return EXIT_OK


def _track_request(args: argparse.Namespace) -> None:
    """An MTSID, or a search: ApiUsageError for neither or both."""
    searching = args.recipient or args.originator or args.since is not None
    if args.mts_identifier is None and not searching:
        raise ApiUsageError("say which: MTSID, or --recipient, --originator or --since")
    if args.mts_identifier is not None and searching:
        raise ApiUsageError("MTSID names one message: give it without --recipient, ...")


def _track(path: Path, args: argparse.Namespace, out: TextIO) -> int:
    if args.mts_identifier is None:
        return ctl_queued.find(path, args, out, _track_one)
    return _track_one(path, args.mts_identifier, out)


def _track_one(path: Path, mts_identifier: str, out: TextIO) -> int:
    response, _ = call(path, {"op": "track", "mts_identifier": mts_identifier})
    events, queued = response["events"], response.get("queue", [])
    if not events and not queued:
        raise _Nothing(f"neither the audit log nor the queue has {mts_identifier}")
    _events(events, out)
    if queued:
        print(file=out)
        _now(queued, out)
    return EXIT_OK


def _now(queued: list[dict[str, Any]], out: TextIO) -> None:
    """Where each recipient of a tracked message stands in the queue."""
    print("now in the queue:", file=out)
    for line in recipients_table(queued):
        print(line, file=out)


def _events(events: list[dict[str, Any]], out: TextIO) -> None:
    if not events:
        print("the audit log has no event of it", file=out)
        return
    rows = [
        (
            utc(e["at"]),
            e["event"],
            e["recipient"] or "-",
            e["peer"] or "-",
            e["detail"] or "",
        )
        for e in events
    ]
    for line in table(("TIME (UTC)", "EVENT", "RECIPIENT", "PEER", "DETAIL"), rows):
        print(line, file=out)


def _config_from_file(config_file: str | None, args: argparse.Namespace, out: TextIO) -> int:
    try:
        config = load_config(configuration(config_file))
    except ConfigError as error:
        raise ApiUsageError(str(error)) from error
    out.write(render(effective_settings(config), defaults=args.defaults))
    return EXIT_OK


def _config_from_daemon(path: Path, args: argparse.Namespace, out: TextIO) -> int:
    response, _ = call(path, {"op": "config"})
    settings = [(str(key), str(value)) for key, value in response["settings"]]
    out.write(render(settings, defaults=args.defaults))
    return EXIT_OK


_Nothing = ctl_queued.Nothing
"""Nothing matched: exit 1, the message on standard error."""


# --- showing ---------------------------------------------------------------------------


def _status(response: dict[str, Any], out: TextIO) -> None:
    states = response["recipients"]
    print(f"{response['name']}: up {_age(response['uptime'])}", file=out)
    if response.get("owner"):
        print(f"process: {escape_controls(response['owner'])}", file=out)
    print(
        "recipients: " + ", ".join(f"{s} {states.get(s, 0)}" for s in _STATES),
        file=out,
    )
    for owner in response.get("in_flight", ()):
        print(f"  in flight {escape_controls(_holder(owner))}", file=out)
    closed = response.get("slots_closed", 0)
    print(
        f"slots: {response['slots_connected']} of {response['slots']} connected"
        + (f" ({closed} on demand, closed)" if closed else "")
        + f", {response.get('connections', 0)} connection(s) bound",
        file=out,
    )
    for slot in response.get("slots_down", ()):
        print(f"  down {escape_controls(slot['slot'])}: {escape_controls(slot['error'])}", file=out)
    quarantine = response.get("quarantine")
    if quarantine is not None:
        print(
            f"quarantine: {quarantine['messages']} of {quarantine['max_messages']} messages, "
            f"{quarantine['octets']:,} of {quarantine['max_bytes']:,} octets",
            file=out,
        )
    minimize = response.get("minimize")
    if minimize is not None and minimize["shown"] != "off":
        print(f"MINIMIZE: {escape_controls(minimize['shown'])}", file=out)
    if response.get("store"):
        store = escape_controls(response["store"])
        print(f"STORE UNAVAILABLE: {store} (transfers refused unconfirmed)", file=out)
    for part in response.get("degraded", ()):
        print(
            f"DEGRADED {part['part']}: {part['failures']} failure(s) in {part['since']:.0f} s, "
            f"last: {escape_controls(part['last_error'])}",
            file=out,
        )


def _queue(response: dict[str, Any], out: TextIO) -> None:
    counts: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for count in response["counts"]:
        counts[(count["route"], count["precedence"])][count["state"]] = count["recipients"]
    if not counts:
        print("the queue is empty", file=out)
        return
    rows = [
        (route, precedence, *(states.get(s, 0) for s in _STATES))
        for (route, precedence), states in sorted(counts.items(), key=_urgent_first)
    ]
    right = range(2, 2 + len(_STATES))
    for line in table(("ROUTE", "PRECEDENCE", *_STATES), rows, right=right):
        print(line, file=out)
    holders = response.get("in_flight", ())
    if holders:
        print(file=out)
        held = [(_owner_name(h), str(h["recipients"]), _lease(h)) for h in holders]
        for line in table(("IN FLIGHT BY", "RECIPIENTS", "LEASE"), held, right=(1,)):
            print(line, file=out)


def _urgent_first(row: tuple[tuple[str, str], object]) -> tuple[str, int]:
    """Rows by route, then precedence, the most urgent first (override ... deferred):
    the order of service, not the alphabet's."""
    (route, precedence), _ = row
    try:
        level = int(parse_precedence(precedence))
    except PrecedenceError:
        level = -1
    return route, -level


def _owner_name(holder: dict[str, Any]) -> str:
    """The process holding claims; this one marked."""
    name = str(holder["owner"]) if holder["owner"] else "(no owner)"
    return name + (" (this process)" if holder.get("this_process") else "")


def _lease(holder: dict[str, Any]) -> str:
    if holder["lapsed"]:
        return "lapsed: a live process takes them back"
    return f"until {utc(holder['lease_until'])}"


def _holder(holder: dict[str, Any]) -> str:
    """``in flight`` line of ``status``: whose, how many, its lease."""
    return f"{holder['recipients']} by {_owner_name(holder)}, lease {_lease(holder)}"


def _qshape(response: dict[str, Any], out: TextIO) -> None:
    edges: list[int] = response["minutes"]
    labels = [f"{low}-{high}m" for low, high in zip([0, *edges], edges, strict=False)]
    labels.append(f"{edges[-1]}m+")
    shape: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0] * len(labels))
    for count in response["counts"]:
        shape[(count["route"], count["precedence"])][count["bucket"]] += count["recipients"]
    if not shape:
        print("nothing is waiting", file=out)
        return
    totals = [sum(column) for column in zip(*shape.values(), strict=True)]
    rows = [("TOTAL", "", sum(totals), *totals)]
    rows += [(r, p, sum(b), *b) for (r, p), b in sorted(shape.items(), key=_urgent_first)]
    right = range(2, 3 + len(labels))
    for line in table(("ROUTE", "PRECEDENCE", "TOTAL", *labels), rows, right=right):
        print(line, file=out)


def _list(response: dict[str, Any], out: TextIO) -> None:
    recipients = response["recipients"]
    if not recipients:
        print("nothing is waiting", file=out)
        return
    header = ("ID", "PRECEDENCE", "STATE", "TRIES", "AGE", "OCTETS", "ROUTE", "MTS IDENTIFIER")
    rows = [
        (
            r["message_id"],
            r["precedence"],
            r["state"],
            r["attempts"],
            _age(r.get("age", 0.0)),
            r.get("size", 0),
            r["route"],
            r["mts_identifier"],
            f"to {r['recipient']}",
        )
        for r in recipients
    ]
    lines = table((*header, "RECIPIENT"), rows, right=(0, 3, 4, 5))
    print(lines[0], file=out)
    for line, r in zip(lines[1:], recipients, strict=True):
        print(line, file=out)
        if r["last_error"]:
            print(f"    last error: {escape_controls(r['last_error'])}", file=out)


def _channels(response: dict[str, Any], out: TextIO) -> None:
    slots = response["slots"]
    if not slots:
        print("no peers configured", file=out)
        return
    for slot in slots:
        print(
            f"{slot['peer']} {'+'.join(slot['precedences'])} {slot['state']}:"
            f" {slot['host']} port {slot['port']}"
            f" {slot['dscp']}{' TLS' if slot.get('tls') else ''} {slot['mode']},"
            f" backlog {slot['backlog']},"
            f" {len(slot['connections'])} of {slot['max_connections']} connection(s)",
            file=out,
        )
        for c in slot["connections"]:
            error = f"  last error: {escape_controls(c['last_error'])}" if c["last_error"] else ""
            version = f" in {c['tls_version']}" if c.get("tls_version") else ""
            print(
                f"  #{c['index']} {c['state']}{version} for {c['since']:.0f} s,"
                f" {c['transfers']} transfer(s){error}",
                file=out,
            )


def _age(seconds: float) -> str:
    """``45s``, ``12m05s``, ``3h07m``, ``2d04h``: how long, to the unit that matters."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d{whole % 86400 // 3600:02d}h"


def _quarantine(path: Path, args: argparse.Namespace, out: TextIO, raw: BinaryIO | None) -> int:
    if args.action == "list":
        response, _ = call(path, {"op": "quarantine"})
        _quarantine_list(response["entries"], out)
    elif args.action == "show":
        response, apdu = call(path, {"op": "quarantine_read", "id": args.id})
        if args.raw:
            sink = raw if raw is not None else out.buffer
            sink.write(apdu)
            sink.flush()
        else:
            _quarantine_entry(response["entry"], out)
    else:
        response, _ = call(path, {"op": "quarantine_delete", "ids": args.ids})
        print(f"deleted {response['deleted']} of {len(set(args.ids))}", file=out)
        if not response["deleted"]:
            return EXIT_NOTHING
    return EXIT_OK


def _quarantine_list(entries: list[dict[str, Any]], out: TextIO) -> None:
    if not entries:
        print("the quarantine is empty", file=out)
        return
    rows = [(e["id"], e["received_at"], e["peer"], e["size"], e["reason"]) for e in entries]
    for line in table(("ID", "RECEIVED", "PEER", "OCTETS", "REASON"), rows, right=(0, 3)):
        print(line, file=out)


def _quarantine_entry(entry: dict[str, Any], out: TextIO) -> None:
    print(f"id:       {entry['id']}", file=out)
    print(f"received: {entry['received_at']}", file=out)
    print(f"peer:     {escape_controls(entry['peer'])}", file=out)
    print(f"octets:   {entry['size']}", file=out)
    print(f"reason:   {escape_controls(entry['reason'])}", file=out)
    print(f"the octets: x400ctl quarantine show {entry['id']} --raw | x400-dump -", file=out)


_SHOW = {"status": _status, "queue": _queue, "qshape": _qshape, "channels": _channels}


def _non_deliver(path: Path, args: argparse.Namespace, out: TextIO) -> int:
    return ctl_queued.non_deliver(path, args, out, _selection(args))


def _reload(path: Path, args: argparse.Namespace, out: TextIO) -> int:
    return ctl_queued.reload(path, out)


_SELECTING = {
    "hold": _hold_or_release,
    "release": _hold_or_release,
    "delete": _delete,
    "non-deliver": _non_deliver,
}
_ASKING = {
    "flush": _flush,
    "minimize": _minimize,
    "track": _track,
    "probe": _probe,
    "config": _config_from_daemon,
    "reload": _reload,
    "stop": ctl_queued.stop,
}
