"""``x400ctl show|non-deliver|reload|stop`` and ``track``'s search: the operator's look
at one queued message, its non-delivery of queued recipients, and the daemon's reload
and stop (:mod:`client.ctl_local` parses the command line and calls these).

    show ID|MTSID [--raw [--force]]   a queued message (Postfix's ``postcat -q``): the
               queue's record and each recipient's state, the envelope (content type,
               trace, security label and its marking under the MTA's policy) and the
               content's heading and body, decoded as ``x400 read`` and
               ``x400-dump`` decode them; ``--raw`` writes the stored MTS-APDU's octets
               (not to a terminal unless ``--force``)
    non-deliver SELECTION --reason TEXT   the waiting recipients selected fail, each
               reported to its originator with TEXT in the report
    track --recipient OR | --originator OR | --since TIME   the messages found; one
               found is tracked as ``track MTSID`` tracks it
    reload     re-read the configuration file (as SIGHUP)
    stop [--wait [--timeout S]]   stop gracefully (as SIGTERM)

Public API::

    ARGUMENTS, HELP     show's, reload's and stop's arguments and help, for the parser
    show(path, args, out, raw) -> int      non_deliver(path, args, out, selection) -> int
    find(path, args, out, track) -> int    reload(path, out) -> int
    stop(path, args, out) -> int           parse_since(text, now) -> datetime
    Nothing             nothing matched, or refused: exit 1

The decoders are imported when ``show`` runs: every other command starts without them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO, Final, TextIO

from client.api import ApiError, call
from client.tables import recipients_table, table, utc
from p1.ber.values import escape_controls
from p1.errors import DecodeError

__all__ = [
    "ARGUMENTS",
    "HELP",
    "Nothing",
    "find",
    "non_deliver",
    "parse_since",
    "reload",
    "show",
    "stop",
]

EXIT_OK: Final = 0
EXIT_NOTHING: Final = 1
BODY_LINES: Final = 12
"""Lines of a text body part ``show`` prints before it says how many more there are."""
_RELATIVE: Final = re.compile(r"(\d+)([smhd])")
_UNITS: Final = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_POLL: Final = 0.1


class Nothing(ApiError):
    """Nothing matched, or the request was refused: exit 1."""


# --- the command line ------------------------------------------------------------------


def _show_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "message", metavar="ID|MTSID", help="queue id (from queue --list) or MTS identifier"
    )
    parser.add_argument(
        "--raw",
        action="store_true",
        help="write the stored MTS-APDU's octets to standard output (e.g. | x400-dump -)",
    )
    parser.add_argument(
        "--force", action="store_true", help="with --raw: write them even to a terminal"
    )


def _stop_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait", action="store_true", help="return once the MTA has stopped (its socket gone)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=90.0,
        metavar="SECONDS",
        help="with --wait: give up waiting (exit 1) after this long (default 90)",
    )


ARGUMENTS: Final[dict[str, Callable[[argparse.ArgumentParser], None]]] = {
    "show": _show_arguments,
    "stop": _stop_arguments,
}
"""Each command's own arguments (:func:`client.ctl_local.add_commands` adds them)."""

HELP: Final[dict[str, tuple[str, str]]] = {
    "show": (
        "one queued message: recipients, envelope, heading, body",
        "The queue's record of the message (by queue id, or the newest of that MTS\n"
        "identifier): precedence, security marking (the label as the MTA's policy shows\n"
        "it), originator, arrival, expiry, size, and each recipient's state, route,\n"
        "tries, next attempt and last error; then its envelope's content type, trace\n"
        "and security label, and the content's heading and body (decoded as x400 read\n"
        "and x400-dump decode them; long text bodies cut short).  Postfix's postcat -q.\n"
        "--raw writes the stored MTS-APDU instead, as octets: not to a terminal unless\n"
        "--force.  Exit 1 when the queue has no such message.\n\n"
        "examples:\n  x400ctl show 12\n  x400ctl show '[GB; ;SITEA;e6c4...]'\n"
        "  x400ctl show 12 --raw | x400-dump -",
    ),
    "reload": (
        "re-read the configuration file (as SIGHUP)",
        "The running MTA re-reads its configuration file and applies what it can, the\n"
        "same way as on SIGHUP (systemctl reload).  Prints what was applied and each\n"
        "changed key that needs a restart.  A file that does not load is refused and\n"
        "the configuration in force stays: the error names the file, the key and the\n"
        "value, and the exit is 1.\n\n"
        "example:\n  x400ctl reload -c /etc/aiox400/mta.toml",
    ),
    "stop": (
        "stop the MTA gracefully (as SIGTERM)",
        "The running MTA stops as on SIGTERM (systemctl stop): listeners close,\n"
        "transfers in progress end, what was in flight goes back to the queue.\n"
        "Returns once the MTA has acknowledged; with --wait, once it has stopped (its\n"
        "control socket gone), exit 1 if that takes longer than --timeout.  Under\n"
        "systemd, prefer systemctl stop: a service stopped otherwise counts as ended.\n\n"
        "examples:\n  x400ctl stop\n  x400ctl stop --wait --timeout 30",
    ),
}
"""Each command's summary and description."""


# --- show ------------------------------------------------------------------------------


def show(path: Path, args: argparse.Namespace, out: TextIO, raw: BinaryIO | None) -> int:
    """A queued message, decoded; with ``--raw`` its octets."""
    if args.raw and not args.force and _is_terminal(raw, out):
        raise Nothing(
            "--raw writes the MTS-APDU's octets: not to a terminal (pipe it, e.g. "
            "| x400-dump -, or redirect it; --force writes it anyway)"
        )
    request: dict[str, Any] = {"op": "queue_show"}
    if args.message.isdigit():
        request["message_id"] = int(args.message)
    else:
        request["mts_identifier"] = args.message
    response, apdu = call(path, request)
    if args.raw:
        sink = raw if raw is not None else out.buffer
        sink.write(apdu)
        sink.flush()
        return EXIT_OK
    _record(response["message"], out)
    _decoded(apdu, out)
    return EXIT_OK


def _is_terminal(raw: BinaryIO | None, out: TextIO) -> bool:
    stream = raw if raw is not None else out
    try:
        return stream.isatty()
    except ValueError:  # closed
        return False


def _record(message: dict[str, Any], out: TextIO) -> None:
    """What the queue keeps of the message, and where each recipient stands."""
    origin = message["origin_peer"]
    lines = [
        ("message", f"{message['message_id']} ({message['kind']})"),
        ("MTS identifier", message["mts_identifier"]),
        ("precedence", message["precedence"]),
        ("originator", message["originator"]),
        (
            "arrived",
            f"{utc(message['arrival_time'])} UTC, "
            + (f"from {origin}" if origin else "submitted here"),
        ),
        (
            "expires",
            "-" if message["expiry_time"] is None else f"{utc(message['expiry_time'])} UTC",
        ),
        ("octets", str(message["size"])),
    ]
    if message.get("security_marking"):  # (with a [security] policy at the daemon)
        lines.insert(3, ("marking", message["security_marking"]))
    for label, value in lines:
        print(f"{label + ':':<16}{escape_controls(str(value))}", file=out)
    print("recipients:", file=out)
    for line in recipients_table(message["recipients"]):
        print(f"  {line}", file=out)


def _decoded(apdu: bytes, out: TextIO) -> None:
    """The envelope and content, decoded as ``x400 read`` and ``x400-dump`` do."""
    from p1.mts.envelope import Message, Probe, decode_mts_apdu

    if not apdu:
        print("(the APDU is no longer kept: nothing is left to transfer)", file=out)
        return
    try:
        decoded = decode_mts_apdu(apdu)
    except DecodeError as error:
        print(f"(the stored APDU does not decode: {escape_controls(str(error))})", file=out)
        return
    from p1.render import to_plain, to_text

    envelope = decoded if isinstance(decoded, Probe) else decoded.envelope

    if isinstance(decoded, Message):
        print(f"{'content type:':<16}{_content_type(decoded.envelope.content_type)}", file=out)
    trace = envelope.trace_information
    if trace:
        print("trace:", file=out)
        print(_escaped_lines(to_text(to_plain(list(trace)), 1)), file=out)
    if isinstance(decoded, Message):
        _content(decoded, out)


def _escaped_lines(text: str) -> str:
    """``text``'s lines, each with its control characters escaped."""
    return "\n".join(escape_controls(line) for line in text.split("\n"))


def _content_type(content_type: int | str) -> str:
    from p1.ipms.models import P772_CONTENT_TYPE

    names = {22: "P2", P772_CONTENT_TYPE: "P772"}
    name = names.get(content_type)
    return str(content_type) if name is None else f"{name} ({content_type})"


def _content(message: Any, out: TextIO) -> None:
    """The IPM's heading and a summary of its body (``x400 read``'s rendering)."""
    from client.x400 import format_body_part, format_security_label, heading_lines
    from p1.ipms.ipm import IPM, decode_content
    from p1.mts.orname import format_orname

    label = format_security_label(message.envelope.extensions)
    if label is not None:
        print(f"{'security label:':<16}{escape_controls(label)}", file=out)
    try:
        ipm = decode_content(message.content, message.envelope.content_type)
    except DecodeError as error:
        print(f"(the content does not decode: {escape_controls(str(error))})", file=out)
        return
    except ValueError:
        print("(content of a type this MTA does not read)", file=out)
        return
    if not isinstance(ipm, IPM):
        print("content:        an IP notification", file=out)
        return
    heading = ipm.heading
    to = ", ".join(format_orname(r.name) for r in heading.primary_recipients if r.name)
    print(f"{'to:':<16}{escape_controls(to)}", file=out)
    print(f"{'subject:':<16}{escape_controls(heading.subject or '')}", file=out)
    for line in heading_lines(heading):
        print(line, file=out)
    print(f"body: {len(ipm.body)} part(s)", file=out)
    for part in ipm.body:
        print(_summary(format_body_part(part)), file=out)


def _summary(text: str) -> str:
    lines = text.split("\n")
    if len(lines) <= BODY_LINES:
        return text
    return "\n".join([*lines[:BODY_LINES], f"[... {len(lines) - BODY_LINES} more line(s)]"])


# --- non-delivery ----------------------------------------------------------------------


def non_deliver(
    path: Path, args: argparse.Namespace, out: TextIO, selection: dict[str, Any]
) -> int:
    """Non-deliver the selection; in-flight recipients named on standard error."""
    response, _ = call(path, {"op": "non_deliver", "reason": args.reason, **selection})
    busy: list[dict[str, Any]] = response["busy"]
    done = response["recipients"]
    if done:
        messages = len({r["message_id"] for r in done})
        print(
            f"non-delivered {len(done)} recipient(s) of {messages} message(s); "
            "non-delivery reports to their originators where asked for",
            file=out,
        )
    for ref in busy:
        print(
            f"x400ctl non-deliver: message {ref['message_id']} "
            f"{escape_controls(ref['mts_identifier'])} to {escape_controls(ref['recipient'])} "
            "is being transferred now: left alone (try again once the transfer ended)",
            file=sys.stderr,
        )
    if not done and not busy:
        raise Nothing("no waiting recipient matches")
    return EXIT_NOTHING if busy else EXIT_OK


# --- track's search --------------------------------------------------------------------


def parse_since(text: str, now: datetime) -> datetime:
    """``--since``: an ISO 8601 time (UTC unless it says its zone) or an age such as
    ``90s``, ``30m``, ``1h``, ``2d`` (before ``now``)."""
    relative = _RELATIVE.fullmatch(text.strip())
    if relative is not None:
        number, unit = relative.groups()
        return now - timedelta(**{_UNITS[unit]: int(number)})
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected an ISO 8601 time (2026-11-28T09:30Z) or an age (90s, 30m, 1h, 2d)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def find(
    path: Path,
    args: argparse.Namespace,
    out: TextIO,
    track: Callable[[Path, str, TextIO], int],
) -> int:
    """The messages found; one alone is tracked (``track``)."""
    request: dict[str, Any] = {"op": "track_find"}
    if args.recipient:
        request["recipient"] = args.recipient
    if args.originator:
        request["originator"] = args.originator
    if args.since is not None:
        request["since"] = args.since.isoformat()
    response, _ = call(path, request)
    matches: list[dict[str, Any]] = response["matches"]
    if not matches:
        raise Nothing("neither the audit log nor the queue has a message that matches")
    if len(matches) == 1:
        return track(path, matches[0]["mts_identifier"], out)
    _matches(matches, out)
    if response["more"]:
        print(f"(the first {len(matches)} shown: narrow it with --since)", file=out)
    print("x400ctl track MTSID: one message's events", file=out)
    return EXIT_OK


def _matches(matches: list[dict[str, Any]], out: TextIO) -> None:
    rows = [
        (
            utc(m["first"]),
            m["mts_identifier"],
            m["originator"] or "-",
            ", ".join(f"{state} {n}" for state, n in sorted(m["states"].items())) or "-",
        )
        for m in matches
    ]
    header = ("FIRST SEEN (UTC)", "MTS IDENTIFIER", "ORIGINATOR", "IN THE QUEUE")
    for line in table(header, rows):
        print(line, file=out)


# --- the daemon's life -----------------------------------------------------------------


def reload(path: Path, out: TextIO) -> int:
    """Reload; what was applied and what needs a restart."""
    response, _ = call(path, {"op": "reload"})
    print(f"reloaded: {escape_controls(response['applied'])}", file=out)
    for key in response["restart"]:
        print(f"{escape_controls(key)} changed: needs a restart to take effect", file=out)
    return EXIT_OK


def stop(path: Path, args: argparse.Namespace, out: TextIO) -> int:
    """Ask for the stop; with ``--wait``, return once the socket is gone."""
    before = _identity(path)
    response, _ = call(path, {"op": "stop"})
    print(f"stopping (pid {response['pid']})", file=out)
    if not args.wait:
        return EXIT_OK
    deadline = time.monotonic() + args.timeout
    while _identity(path) == before and before is not None:
        if time.monotonic() > deadline:
            raise Nothing(f"{path} still there after {args.timeout:g} s: the stop goes on")
        time.sleep(_POLL)
    print("stopped", file=out)
    return EXIT_OK


def _identity(path: Path) -> tuple[int, int] | None:
    """The socket file's device and inode (None once gone): another daemon's socket at
    the same path is not the one that stopped."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return info.st_dev, info.st_ino
