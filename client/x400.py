"""``x400``: the user's client (in the manner of XUXA): send, list and read messages.

    x400 send --from OR --to OR [--to OR ...] [--cc OR ...] --precedence LEVEL --subject S
              (--body TEXT | --body-file F | --size 1k|10k|100k|1M|10M)
              [--delivery-report] [--count N] [--p2]
              [--label CLASSIFICATION [--category NAME ...] [--privacy-mark TEXT]]
    x400 inbox --user OR [--unread] [--follow]      most urgent first, then oldest first
    x400 read ID --user OR [--raw [--force]]
    x400 delete ID [ID ...] --user OR

Messages are STANAG 4406 (P772) military messages unless ``--p2``: the heading carries
the primary precedence, the envelope the matching P1 priority and priority-level-qualifier.
``send`` prints the MTS identifier of each message once the MTA has it safely on disk;
on Ctrl-C it submits nothing more and waits for the answer to the message in flight, so
that every identifier the MTA answered is printed before it exits with 130 (a second
Ctrl-C exits at once).
``--count`` sends N copies (a progress bar on a terminal) for load tests, and ``--size``
gives the body a canned size (k = 1024 octets, M = 1024 k).  ``inbox --follow`` goes on
printing each message or report as it is delivered, until interrupted.  ``read`` shows
the envelope's security label (X.411 clause 8.5.9: classification, policy, privacy mark,
categories) when there is one.  ``send --label`` gives the message a security label by
the names of the MTA's policy (its SPIF): the MTA looks them up and writes the label
into the envelope; this client knows no policy.

Which MTA, the first given of: ``--config FILE`` (its ``control_socket``), ``--socket
PATH``, the file in ``$AIOX400_CONFIG``, /etc/aiox400/mta.toml when it exists
(:func:`client.api.socket_path`).  ``--user`` defaults to ``$X400_USER``.

Exit codes (:data:`client.cli.EXIT_CODES`): 0 done; 1 the MTA refused, or nothing
matched (``delete`` of numbers not in the mailbox); 2 bad arguments (no MTA or user
named); 3 the MTA is not running or does not answer; 130 interrupted (Ctrl-C, one line;
``inbox --follow`` too); 141 the reader of the output went away (``| head``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final, NoReturn, TextIO

from tqdm import tqdm

from client import cli
from client.api import ApiError, ApiUnreachable, ApiUsageError, Connection, call, socket_path
from client.cli import (
    EXIT_CODES_HELP,
    EXIT_INTERRUPTED,
    TerminalText,
    add_version,
    held_interrupt,
    quiet_broken_pipe,
    terminal_text,
)
from p1.ber.values import escape_controls, escape_text
from p1.errors import DecodeError
from p1.ipms.ipm import (
    IPM,
    P2_CONTENT_TYPE,
    P772_CONTENT_TYPE,
    BinaryBodyPart,
    BodyPart,
    ContentKind,
    ForwardedMessageBodyPart,
    Heading,
    IPMIdentifier,
    ORDescriptor,
    RawBodyPart,
    Recipient,
    TextBodyPart,
    decode_content,
    encode_ipm,
)
from p1.ipms.models import ADatP3BodyPart, body_part_text, body_part_type
from p1.mts.envelope import Message, decode_mts_apdu
from p1.mts.extension_view import describe_extension
from p1.mts.extensions import ExtensionField, StandardExtension, find_extension
from p1.mts.orname import ORName, format_orname, parse_orname
from p1.mts.precedence import (
    PRIORITY_LEVEL_QUALIFIER_OID,
    Precedence,
    PrecedenceError,
    parse_precedence,
)
from p1.mts.report import DeliveryReport, NonDeliveryReport, Report
from p1.mts.security_label import decode_security_label_extension
from p1.render import Plain, to_plain, to_text

EXIT_OK: Final = cli.EXIT_OK
EXIT_REFUSED: Final = cli.EXIT_REFUSED
EXIT_UNREACHABLE: Final = cli.EXIT_UNREACHABLE
EXIT_USAGE: Final = cli.EXIT_USAGE
EXIT_FAILED: Final = EXIT_REFUSED

_SIZE = re.compile(r"(\d+)\s*([kKmM]?)[iI]?[bB]?")
_LINE = b"THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG 0123456789 ABCDEFGHIJKLMNOP\r\n"


class UsageError(Exception):
    """A bad argument (exit 2)."""


def parse_size(text: str) -> int:
    """``1k`` -> 1024, ``10M`` -> 10485760, ``500`` -> 500."""
    match = _SIZE.fullmatch(text.strip())
    if not match:
        raise UsageError(f"--size {text!r}: expected a number with k or M, e.g. 1k, 10M")
    unit = {"": 1, "k": 1024, "m": 1024 * 1024}[match.group(2).lower()]
    return int(match.group(1)) * unit


def canned_body(size: int) -> bytes:
    """``size`` octets of IA5 text in 72-character lines (load-test bodies)."""
    return (_LINE * (size // len(_LINE) + 1))[:size]


def text_ipm(
    originator: ORName, recipient: ORName, subject: str, body: bytes, *, p2: bool = False
) -> bytes:
    """A plain IPM (P772 unless ``p2``) with one primary recipient and a text body."""
    heading = Heading(
        this_ipm=IPMIdentifier(user=originator, user_relative_identifier=subject[:64] or "-"),
        primary_recipients=(Recipient(name=recipient),),
        subject=subject,
    )
    kind = ContentKind.P2 if p2 else ContentKind.P772
    return encode_ipm(IPM(heading=heading, body=(TextBodyPart(data=body),)), kind)


# --- send --------------------------------------------------------------------------------


def build_ipm(args: argparse.Namespace, originator: ORName, number: int) -> bytes:
    """The content to submit: an IPM (P772 unless ``--p2``)."""
    kind = ContentKind.P2 if args.p2 else ContentKind.P772
    precedence: Precedence = args.precedence
    heading = Heading(
        this_ipm=IPMIdentifier(
            user=originator, user_relative_identifier=f"{int(time.time())}-{os.getpid()}-{number}"
        ),
        originator=ORDescriptor(formal_name=originator),
        primary_recipients=tuple(Recipient(name=name) for name in args.to),
        copy_recipients=tuple(Recipient(name=name) for name in args.cc),
        subject=args.subject,
        primary_precedence=None if args.p2 else precedence,
        copy_precedence=None if args.p2 or not args.cc else precedence,
    )
    return encode_ipm(IPM(heading=heading, body=(_body(args),)), kind)


def _body(args: argparse.Namespace) -> TextBodyPart | BinaryBodyPart:
    if args.size is not None:
        return TextBodyPart(data=canned_body(args.size))
    if args.body_file is not None:
        data = _read_file(args.body_file)
        try:
            return TextBodyPart.from_text(data.decode("utf-8"))
        except UnicodeDecodeError:
            return BinaryBodyPart(data=data)
    return TextBodyPart.from_text(args.body or "")


def _read_file(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(name).read_bytes()
    except OSError as error:
        raise UsageError(f"--body-file {name}: {error.strerror}") from error


def send(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    path = socket_path(args.config, args.socket)
    originator: ORName = args.sender
    request: dict[str, Any] = {
        "op": "submit",
        "originator": format_orname(originator),
        "recipients": [format_orname(name) for name in (*args.to, *args.cc)],
        "precedence": args.precedence.label,
        "content_type": P2_CONTENT_TYPE if args.p2 else P772_CONTENT_TYPE,
        "delivery_report": args.delivery_report,
    }
    if args.probe:
        request["probe"] = True
        request["probe_content_length"] = probe_content_length(args, originator)
    if args.label is not None:
        request["security_label"] = _label_request(args)
    elif args.category or args.privacy_mark is not None:
        raise UsageError("--category and --privacy-mark are parts of a label: give --label")
    started = time.monotonic()
    with (
        held_interrupt() as interrupted,
        Connection(path) as connection,
        _progress(args.count, err) as progress,
    ):
        for number in range(1, args.count + 1):
            if interrupted():
                raise KeyboardInterrupt  # (each answered submission's identifier is out)
            content = b"" if args.probe else build_ipm(args, originator, number)
            response, _ = connection.call(request, content)
            _say(progress, response["mts_identifier"], out)
            for rejected in response.get("rejected", ()):
                _say(progress, f"x400: no route to {rejected}: a non-delivery report follows", err)
            progress.update()
        if interrupted():
            raise KeyboardInterrupt
    if args.count > 1:
        elapsed = time.monotonic() - started
        print(
            f"x400: {args.count} {'probes' if args.probe else 'messages'} submitted in"
            f" {elapsed:.2f} s "
            f"({args.count / elapsed:.0f} msg/s)",
            file=err,
        )
    return EXIT_OK


def _label_request(args: argparse.Namespace) -> dict[str, Any]:
    """The label by names, for the MTA to look up in its policy."""
    if args.probe:
        raise UsageError("--label: a probe carries no security label")
    label: dict[str, Any] = {"classification": args.label, "categories": args.category}
    if args.privacy_mark is not None:
        label["privacy_mark"] = args.privacy_mark
    return label


def probe_content_length(args: argparse.Namespace, originator: ORName) -> int:
    """The content-length a probe asks about (X.411 12.2.1.2.1.3): ``--size`` when
    given, else the length of the IPM ``send`` would submit."""
    if args.size is not None:
        return int(args.size)
    return len(build_ipm(args, originator, 1))


def _progress(total: int, err: TextIO) -> tqdm[NoReturn]:
    """A progress bar on ``err`` for ``--count``, shown only when ``err`` is a terminal
    (nothing in a pipe or a log)."""
    return tqdm(
        total=total,
        file=_unescaped(err),  # the bar is drawn with CR and escapes of its own
        unit="msg",
        disable=total < 2 or not err.isatty(),
        leave=False,
        dynamic_ncols=True,
    )


def _say(progress: tqdm[NoReturn], line: str, stream: TextIO) -> None:
    """Print ``line`` on ``stream`` (flushed: a reader of the pipe gets each identifier
    as the MTA commits it), clearing the progress bar first and drawing it again after,
    so that the two never share a line of the terminal."""
    if progress.disable:
        print(line, file=stream, flush=True)
    else:
        progress.write(escape_controls(line), file=_unescaped(stream))
        stream.flush()


def _unescaped(stream: TextIO) -> TextIO:
    """The stream behind a :class:`client.cli.TerminalText`, for the progress bar."""
    return stream.stream if isinstance(stream, TerminalText) else stream


# --- inbox / read / delete ---------------------------------------------------------------


def inbox(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    path = socket_path(args.config, args.socket)
    user = _user(args)
    request = {"op": "inbox", "user": format_orname(user), "unread_only": args.unread}
    with Connection(path, timeout=FOLLOW_WAIT + 15) as connection:
        response, _ = connection.call(request)
        messages = response["messages"]
        if messages or args.follow:
            _inbox_heading(out)
        else:
            shown = format_orname(user)  # as given: the daemon answers with the folded form
            print(f"no {'unread ' if args.unread else ''}messages for {shown}", file=out)
        for m in messages:
            _inbox_line(m, out)
        if args.follow:
            _follow(connection, response["user"], response["newest"], out, err)
    return EXIT_OK


FOLLOW_WAIT = 30.0
"""Seconds one ``wait`` request of ``inbox --follow`` asks the MTA to hold."""


def _follow(connection: Connection, user: str, after: int, out: TextIO, err: TextIO) -> None:
    """Print each entry delivered to ``user`` from now on, until interrupted (Ctrl-C
    ends the command with 130, as any other)."""
    print(f"following the mailbox of {user}; Ctrl-C to stop", file=err)
    out.flush()
    while True:
        request = {"op": "wait", "user": user, "after": after, "timeout": FOLLOW_WAIT}
        response, _ = connection.call(request)
        for m in response["messages"]:
            _inbox_line(m, out)
        out.flush()
        after = response["after"]


def _inbox_heading(out: TextIO) -> None:
    print(
        f"{'ID':>5}  {'':1} {'PRECEDENCE':<10} {'KIND':<7} {'DELIVERED':<19}  FROM / SUBJECT",
        file=out,
    )


def _inbox_line(m: dict[str, Any], out: TextIO) -> None:
    when = datetime.fromisoformat(m["delivered_at"]).strftime("%Y-%m-%d %H:%M:%S")
    flag = " " if m["read"] else "N"
    origin = escape_controls(m["originator"] or "-")
    details = [escape_controls(detail) for detail in (m["subject"] or "", *_marks(m))]
    print(
        f"{m['id']:>5}  {flag} {m['precedence']:<10} {m['kind']:<7} {when}  {origin}"
        + "".join(f"\n{'':47}{line}" for line in details if line),
        file=out,
    )


def _marks(m: dict[str, Any]) -> list[str]:
    """The inbox's line of the security label and P772 message type, when present
    (absent from an older daemon's answer)."""
    marks = []
    if m.get("security_label"):
        marks.append(f"[{m['security_label']}]")
    if m.get("message_type"):
        marks.append(f"({m['message_type']})")
    return [" ".join(marks)] if marks else []


def read(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.raw and not args.force and sys.stdout.isatty():
        raise UsageError(
            "read --raw writes the message's binary BER, not text: pipe it"
            " (x400 read ID --raw | x400-dump -) or redirect it to a file;"
            " --force writes it to the terminal all the same"
        )
    path = socket_path(args.config, args.socket)
    request: dict[str, Any] = {"op": "read", "id": args.id}
    user = args.user or os.environ.get("X400_USER")
    if user:
        request["user"] = format_orname(_orname(user))
    response, apdu = call(path, request)
    if args.raw:
        sys.stdout.buffer.write(apdu)
        return EXIT_OK
    summary = response["message"]
    print(f"MTS identifier: {escape_controls(summary['mts_identifier'])}", file=out)
    print(f"delivered:      {summary['delivered_at']}", file=out)
    print(f"precedence:     {summary['precedence']}", file=out)
    if summary.get("security_marking"):  # (with a [security] policy at the daemon)
        print(f"marking:        {escape_controls(summary['security_marking'])}", file=out)
    if summary.get("kind") == "report" and summary.get("subject"):
        # What the MTA knows and the report does not say: whether its subject is a probe.
        print(f"report:         {escape_controls(summary['subject'])}", file=out)
    try:
        _show_apdu(decode_mts_apdu(apdu), out)
    except DecodeError as error:
        print(f"(the stored message does not decode: {escape_controls(str(error))})", file=out)
    return EXIT_OK


def _show_apdu(apdu: object, out: TextIO) -> None:
    if isinstance(apdu, Report):
        content = apdu.content
        print(f"report on:      {escape_controls(content.subject_identifier.text)}", file=out)
        _show_security_label(apdu.envelope.extensions, out)
        _show_extensions(apdu.envelope.extensions, out)
        for r in content.recipients:
            outcome = _non_delivery(r.last_trace_information.report)
            print(f"  {format_orname(r.actual_recipient_name)}: {outcome}", file=out)
        return
    assert isinstance(apdu, Message)
    print(f"originator:     {format_orname(apdu.envelope.originator_name)}", file=out)
    _show_security_label(apdu.envelope.extensions, out)
    _show_extensions(apdu.envelope.extensions, out)
    ipm = decode_content(apdu.content, apdu.envelope.content_type)
    if not isinstance(ipm, IPM):
        print("content:        an IP notification", file=out)
        return
    heading = ipm.heading
    if heading.originator is not None:
        print(f"from:           {_descriptor(heading.originator)}", file=out)
    print(f"to:             {_names(heading.primary_recipients)}", file=out)
    if heading.copy_recipients:
        print(f"cc:             {_names(heading.copy_recipients)}", file=out)
    print(f"subject:        {escape_controls(heading.subject or '')}", file=out)
    for line in heading_lines(heading):
        print(line, file=out)
    print(file=out)
    for part in ipm.body:
        print(format_body_part(part), file=out)


_HEADING_SHOWN: Final = frozenset(
    {"@type", "originator", "primary-recipients", "copy-recipients", "subject"}
)
"""Heading fields ``read`` shows on lines of their own."""


def heading_lines(heading: Heading) -> list[str]:
    """The rest of an IPM heading (X.420 7.2 and the STANAG 4406 Annex A heading
    extensions: precedence, message type, handling instructions, ...) as ``heading:``
    and indented ``field: value`` lines; an extension this MTA does not model shows its
    identifier and hex.  Control characters a peer sent are shown escaped."""
    plain = to_plain(heading)
    assert isinstance(plain, dict)
    rest: dict[str, Plain] = {k: v for k, v in plain.items() if k not in _HEADING_SHOWN}
    if not rest:
        return []
    return ["heading:", *(escape_controls(line) for line in to_text(rest, 1).split("\n"))]


def _descriptor(descriptor: ORDescriptor) -> str:
    """An ORDescriptor (X.420 7.1.3) as its formal name, free-form name or both."""
    parts = []
    if descriptor.formal_name is not None:
        parts.append(format_orname(descriptor.formal_name))
    if descriptor.free_form_name:
        parts.append(f"({escape_controls(descriptor.free_form_name)})")
    return " ".join(parts) or "-"


def _show_extensions(extensions: Sequence[ExtensionField], out: TextIO) -> None:
    """The envelope's other extensions (X.411 9.1), one line each, by name and value
    (the security label has its own line; the priority-level-qualifier is in the
    precedence)."""
    shown = [e for e in extensions if not _on_a_line_of_its_own(e)]
    if shown:
        print("extensions:", file=out)
    for extension in shown:
        print(f"  {escape_controls(describe_extension(extension))}", file=out)


def _on_a_line_of_its_own(extension: ExtensionField) -> bool:
    return extension.type in (
        StandardExtension.MESSAGE_SECURITY_LABEL,
        PRIORITY_LEVEL_QUALIFIER_OID,
    )


def _show_security_label(extensions: Sequence[ExtensionField], out: TextIO) -> None:
    shown = format_security_label(extensions)
    if shown is not None:
        print(f"security label: {escape_controls(shown)}", file=out)


def format_security_label(extensions: Sequence[ExtensionField]) -> str | None:
    """How ``read`` shows the envelope's message-security-label (X.411 clause 8.5.9):
    ``SECRET; policy ...; privacy mark '...'``; one that does not decode as its type,
    hex and the reason; None when there is none."""
    extension = find_extension(extensions, StandardExtension.MESSAGE_SECURITY_LABEL)
    if extension is None:
        return None
    try:
        return decode_security_label_extension(extension).describe()
    except DecodeError as exc:
        value = "-" if extension.value is None else extension.value.hex()
        return f"message-security-label {value} (does not decode: {exc})"


def format_body_part(part: BodyPart) -> str:
    """How ``read`` shows a body part: the text of a text-like one (IA5 or general text,
    ADatP-3, ACP 127 data, corrections, teletex, videotex), its lines kept and every
    other control character escaped (:func:`p1.ber.values.escape_text`); else its type
    and size."""
    text = body_part_text(part)
    if text is not None:
        return escape_text(text)
    return f"[{body_part_type(part)} body part: {body_part_size(part)} octets]"


def body_part_size(part: BodyPart) -> int:
    """The octets a body part holds: its data, its forwarded message, or (kept as
    received) its whole encoding."""
    if isinstance(part, RawBodyPart):
        return len(part.encoding)
    if isinstance(part, ForwardedMessageBodyPart):
        return len(part.message)
    if isinstance(part, ADatP3BodyPart) and part.sets is not None:
        return sum(map(len, part.sets))
    return len(part.data)


def _names(recipients: Sequence[Recipient]) -> str:
    return ", ".join(format_orname(r.name) for r in recipients if r.name is not None)


def _non_delivery(report: DeliveryReport | NonDeliveryReport) -> str:
    if isinstance(report, DeliveryReport):
        return "delivered"
    diagnostic = report.diagnostic_name
    text = f"not delivered: {report.reason_name}"
    return text if diagnostic is None else f"{text} ({diagnostic})"


def delete(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    path = socket_path(args.config, args.socket)
    response, _ = call(path, {"op": "delete", "user": format_orname(_user(args)), "ids": args.ids})
    print(f"deleted {response['deleted']} message(s)", file=out)
    return EXIT_OK if response["deleted"] else EXIT_REFUSED


def _user(args: argparse.Namespace) -> ORName:
    text = args.user or os.environ.get("X400_USER")
    if not text:
        raise UsageError("say whose mailbox: --user OR-ADDRESS or $X400_USER")
    return _orname(text)


# --- arguments ---------------------------------------------------------------------------


def _orname(text: str) -> ORName:
    try:
        return parse_orname(text)
    except (DecodeError, ValueError) as error:
        raise UsageError(f"{text!r}: {error}") from error


def _precedence(text: str) -> Precedence:
    try:
        return parse_precedence(text)
    except PrecedenceError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="x400",
        description=_HELP["x400"],
        epilog=EXIT_CODES_HELP,
        formatter_class=_FORMATTER,
    )
    add_version(parser)
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument(
        "--config",
        "-c",
        metavar="FILE",
        help="the MTA's configuration, for its control socket (default $AIOX400_CONFIG,"
        " else /etc/aiox400/mta.toml)",
    )
    where.add_argument("--socket", metavar="PATH", help="the MTA's control socket")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    send_p = _command(commands, where, "send", "submit a message")
    send_p.add_argument(
        "--from",
        dest="sender",
        required=True,
        type=_orname_arg,
        metavar="OR",
        help="originator O/R address, e.g. 'C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith'",
    )
    send_p.add_argument(
        "--to",
        action="append",
        required=True,
        type=_orname_arg,
        metavar="OR",
        help="primary recipient (repeat for more)",
    )
    send_p.add_argument(
        "--cc",
        action="append",
        default=[],
        type=_orname_arg,
        metavar="OR",
        help="copy recipient (repeat for more)",
    )
    send_p.add_argument(
        "--precedence",
        "-p",
        type=_precedence,
        default=Precedence.ROUTINE,
        metavar="LEVEL",
        help="deferred, routine (default), priority, immediate, flash or override",
    )
    send_p.add_argument("--subject", "-s", default="", help="subject line")
    body = send_p.add_mutually_exclusive_group()
    body.add_argument("--body", "-b", help="body text")
    body.add_argument(
        "--body-file",
        metavar="FILE",
        help="body from a file ('-': standard input); text if UTF-8, else binary",
    )
    body.add_argument(
        "--size", type=_size_arg, help="canned body of this size: 1k, 10k, 100k, 1M, 10M"
    )
    send_p.add_argument(
        "--delivery-report",
        "-r",
        action="store_true",
        help="ask for a delivery report (non-delivery reports always come)",
    )
    send_p.add_argument(
        "--count",
        "-n",
        type=_count_arg,
        default=1,
        metavar="N",
        help="send N copies (load test): one identifier per line, a progress bar on a"
        " terminal, the rate at the end",
    )
    send_p.add_argument(
        "--p2",
        action="store_true",
        help="send a plain X.420 (P2) IPM instead of STANAG 4406 (P772)",
    )
    send_p.add_argument(
        "--probe",
        action="store_true",
        help="send a probe instead: would such a message be delivered? (the report"
        " answers; --size sets the content length it asks about)",
    )
    _label_arguments(send_p)
    send_p.set_defaults(run=send)
    inbox_p = _command(commands, where, "inbox", "list a mailbox")
    inbox_p.add_argument("--user", "-u", metavar="OR", help="whose mailbox (default $X400_USER)")
    inbox_p.add_argument("--unread", action="store_true", help="unread messages only")
    inbox_p.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="after the listing, print each message or report as it is delivered, until"
        " Ctrl-C (or the MTA stops)",
    )
    inbox_p.set_defaults(run=inbox)
    read_p = _command(commands, where, "read", "show one message and mark it read")
    read_p.add_argument("id", type=int, metavar="ID", help="the message number inbox shows")
    read_p.add_argument(
        "--user",
        "-u",
        metavar="OR",
        help="read it only if it is in this user's mailbox (default $X400_USER; without"
        " either, the message number alone says which)",
    )
    read_p.add_argument(
        "--raw",
        action="store_true",
        help="write the MTS-APDU's BER to standard output (for x400-dump); refused when"
        " standard output is a terminal, unless --force",
    )
    read_p.add_argument(
        "--force",
        action="store_true",
        help="with --raw, write the binary to standard output even when it is a terminal",
    )
    read_p.set_defaults(run=read)
    delete_p = _command(commands, where, "delete", "delete messages from a mailbox")
    delete_p.add_argument(
        "ids", type=int, nargs="+", metavar="ID", help="message numbers, as inbox shows them"
    )
    delete_p.add_argument("--user", "-u", metavar="OR", help="whose mailbox (default $X400_USER)")
    delete_p.set_defaults(run=delete)
    return parser


def _label_arguments(send_p: argparse.ArgumentParser) -> None:
    label = send_p.add_argument_group(
        "security label", "by the names of the MTA's security policy ([security] policy)"
    )
    label.add_argument(
        "--label",
        metavar="CLASSIFICATION",
        help="the classification, e.g. SECRET (a number: its value in the policy)",
    )
    label.add_argument(
        "--category",
        action="append",
        default=[],
        metavar="NAME",
        help="with --label: a security category, e.g. GBR (repeat for more)",
    )
    label.add_argument(
        "--privacy-mark", metavar="TEXT", help="with --label: the label's privacy mark"
    )


_FORMATTER = argparse.RawDescriptionHelpFormatter


def _command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    where: argparse.ArgumentParser,
    name: str,
    summary: str,
) -> argparse.ArgumentParser:
    """The subcommand ``name``: ``summary`` in the command list, its paragraphs of
    :data:`_HELP` in its own ``--help``, the MTA's address options shared."""
    return commands.add_parser(
        name, parents=[where], help=summary, description=_HELP[name], formatter_class=_FORMATTER
    )


_HELP: Final = {
    "x400": """\
Send, list and read X.400 / STANAG 4406 messages through a local aiox400 MTA.

Which MTA, the first given of: --config FILE (its control_socket), --socket PATH,
the file in $AIOX400_CONFIG, /etc/aiox400/mta.toml when it exists (only its
control_socket is read: no password file).  Whose mailbox: --user, or $X400_USER.

examples:
  x400 send --from 'C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith' \\
            --to 'C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones' -p flash -s 'SITREP' -b 'All quiet.'
  x400 inbox --user 'C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones'
  x400 read 3
""",
    "send": """\
Submit a message to the MTA and print its MTS identifier once the MTA has it safely
on disk (a promise kept across a crash).

The message is a STANAG 4406 (P772) military message unless --p2: its heading
carries the primary precedence, its envelope the matching P1 priority and
priority-level-qualifier.  The body is --body, --body-file, or a canned text of
--size octets (k = 1024 octets, M = 1024 k).

--count N sends N copies for load tests: one identifier per line on standard output,
a progress bar on standard error when it is a terminal, the rate at the end.

Ctrl-C: x400 submits nothing more, waits for the MTA's answer to the message it is
submitting (60 s at most), prints that identifier, and exits with 130.  So the
identifiers printed are those of every message the MTA answered: no more, no fewer.
A second Ctrl-C exits at once, and the message then in flight may be on disk without
its identifier printed; so may one whose answer never came (the MTA stopped: exit 3).

--probe sends a probe instead (X.411): no content, only whether a message of this
content type and length (--size, else the message's own) would be delivered to each
recipient; the answer is a probe report in the originator's inbox, one report per
probe.  --precedence, --count and --size work with it as with messages.

--label CLASSIFICATION gives the message a security label (X.411), with --category
NAME (repeat for more) and --privacy-mark TEXT: the MTA looks the names up in its
security policy (the SPIF of [security] policy), writes the label into the envelope,
and then checks it as it checks every message: a recipient not cleared for it gets a
non-delivery report (secure-messaging-error).  A name the policy does not have refuses
the message (exit 1); an MTA without a policy takes only a number, as the
classification alone, and refuses any name.

examples:
  x400 send --from 'C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith' \\
            --to 'C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones' \\
            --precedence flash --subject 'SITREP 42' --body 'All quiet.' -r
  x400 send --from ... --to ... --size 100k --count 1000 > identifiers.txt
  x400 send --from ... --to ... --probe --size 1M
  x400 send --from ... --to ... --label SECRET --category GBR -s 'SITREP' -b 'All quiet.'
""",
    "inbox": """\
List the messages and reports delivered to a user; N marks those unread.  The most
urgent come first (override, flash, immediate, priority, routine, deferred), and within
a precedence the oldest first: the order in which they are to be dealt with.  With
--follow, go on printing each one as it is delivered, at the end, until Ctrl-C.

examples:
  x400 inbox --user 'C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones'
  X400_USER='C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones' x400 inbox --unread --follow
""",
    "read": """\
Show a delivered message (envelope, security label, heading and body) or report, and
mark it read.  --raw writes the MTS-APDU as stored, for x400-dump: binary, so it is
refused (exit 2, nothing read or marked) when standard output is a terminal, unless
--force.

examples:
  x400 read 3 --user 'C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones'
  x400 read 3 --raw | x400-dump -
""",
    "delete": """\
Delete messages from a user's mailbox.

example:
  x400 delete 3 4 --user 'C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones'
""",
}
"""The description of each command's --help."""


def _orname_arg(text: str) -> ORName:
    try:
        return _orname(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _size_arg(text: str) -> int:
    try:
        return parse_size(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _count_arg(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a count of 1 or more")
    return int(text)


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Entry point of ``x400``.

    Ctrl-C ends it with one line and 130; a reader of the output that went away
    (``x400 inbox | head``) ends it quietly with 141, as SIGPIPE would."""
    out = terminal_text(out or sys.stdout)
    err = terminal_text(err or sys.stderr)
    try:
        args = _parser().parse_args(argv)
        result: int = args.run(args, out, err)
        out.flush()
    except UsageError as error:
        print(f"x400: {error}", file=err)
        return EXIT_USAGE
    except ApiUsageError as error:
        print(f"x400: {error}", file=err)
        return EXIT_USAGE
    except ApiUnreachable as error:
        print(f"x400: {error}", file=err)
        return EXIT_UNREACHABLE
    except ApiError as error:
        print(f"x400: {error}", file=err)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("x400: interrupted", file=err)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return quiet_broken_pipe()
    return result


if __name__ == "__main__":
    sys.exit(main())
