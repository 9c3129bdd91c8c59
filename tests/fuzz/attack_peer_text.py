"""A peer's hostile text on an operator's terminal: random control characters in every
field a peer chooses, through every way the commands show it.

Each case is a message MTA-A transfers whose MTS identifier (IA5String), subject and
originator's free-form name (TeletexString, ISO 8859-1 here) and body (general text in
UTF-8) are drawn from an alphabet heavy in C0 and C1 controls, DEL, terminal escape
sequences, CR and LF, the line and paragraph separators and the bidirectional formatting
characters.  It is encoded as a peer sends it, decoded again, and shown as the commands
show it, each through :class:`client.cli.TerminalText`: ``x400 read`` and ``inbox``,
``x400ctl queue --list``, ``track`` and ``quarantine list`` (fed the fields as the daemon
answers them), ``x400-dump``'s text, and the daemon's log line
(:class:`mta.daemon.LineFormatter`).  Nothing may write a control character other than a
tab or a line end, nor a line more than the command writes for a tame message.

    python -m tests.fuzz.attack_peer_text --cases 100000 --seed 7     the long run

Public API::

    hostile_message(local_user, remote_user, *, local_identifier, subject, free_form, body)
        -> (apdu, MTS identifier text)
    run(seed, cases) -> Outcome(cases, problems)
    RAW: the characters that must not reach a terminal
"""

from __future__ import annotations

import argparse
import io
import logging
import random
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from client import ctl_local, x400
from client.cli import terminal_text
from client.dump import decode_any
from mta.daemon import LineFormatter
from mta.intake.plan import domain_of
from p1.ipms.ipm import (
    IPM,
    P772_CONTENT_TYPE,
    ContentKind,
    Heading,
    IPMIdentifier,
    ORDescriptor,
    Recipient,
    TextBodyPart,
    encode_ipm,
)
from p1.mts.envelope import (
    Message,
    MessageEnvelope,
    MTSIdentifier,
    PerRecipientIndicators,
    RecipientField,
    TraceEntry,
    decode_mts_apdu,
    encode_mts_apdu,
)
from p1.mts.orname import ORName, parse_orname
from p1.mts.precedence import Precedence
from p1.render import to_text
from tests.support.sites import SENT, A

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
"""What must not reach a terminal: every control character but tab and line feed (a CR
counts only as part of CR LF, see :func:`raw_controls`)."""

_ESCAPES = ("\x1b[2J", "\x1b]0;title\x07", "\x1b[31m", "\x9b6n", "\r\n", "\r", "\n", "\x1bP")
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_OTHER = "\u2028\u2029\u00e9\u6771\ufffd"


def raw_controls(text: str) -> list[str]:
    """The control characters of ``text`` a terminal would act on (CR LF is a line end)."""
    return RAW.findall(text.replace("\r\n", "\n"))


def hostile_message(
    local_user: ORName,
    remote_user: ORName,
    *,
    local_identifier: str,
    subject: str,
    free_form: str,
    body: str,
) -> tuple[bytes, str]:
    """The message MTA-A transfers to ``local_user`` and ``remote_user``, from S=Eve (an
    O/R name's attributes are PrintableString, read strictly: its free-form name is
    where a name carries text); and its MTS identifier's text."""
    domain = domain_of(parse_orname(A.domain))
    identifier = MTSIdentifier(global_domain_identifier=domain, local_identifier=local_identifier)
    eve = parse_orname(f"{A.domain};O=HQ;S=Eve")
    indicators = PerRecipientIndicators(
        responsibility=True, originating_mta_non_delivery_report=True
    )
    envelope = MessageEnvelope(
        mts_identifier=identifier,
        originator_name=eve,
        content_type=P772_CONTENT_TYPE,
        trace_information=(TraceEntry(global_domain_identifier=domain, arrival_time=SENT),),
        recipients=tuple(
            RecipientField(
                recipient_name=name,
                originally_specified_recipient_number=number,
                per_recipient_indicators=indicators,
            )
            for number, name in enumerate((local_user, remote_user), start=1)
        ),
    ).with_precedence(Precedence.PRIORITY)
    heading = Heading(
        this_ipm=IPMIdentifier(user=eve, user_relative_identifier="x"),
        originator=ORDescriptor(formal_name=eve, free_form_name=free_form),
        primary_recipients=(Recipient(name=local_user), Recipient(name=remote_user)),
        subject=subject,
        primary_precedence=Precedence.PRIORITY,
    )
    content = encode_ipm(
        IPM(heading=heading, body=(TextBodyPart.from_text(body),)), ContentKind.P772
    )
    return encode_mts_apdu(Message(envelope=envelope, content=content)), identifier.text


# --- the cases -----------------------------------------------------------------------------


def _text(rng: random.Random, size: int, ceiling: int) -> str:
    """Up to ``size`` characters below ``ceiling``, heavy in controls and escapes."""
    parts: list[str] = []
    while sum(map(len, parts)) < size:
        pick = rng.random()
        if pick < 0.3:
            parts.append(rng.choice(_ESCAPES))
        elif pick < 0.55:
            parts.append(chr(rng.choice([*range(0x20), 0x7F, *range(0x80, 0xA0)])))
        elif pick < 0.7:
            parts.append(rng.choice(_BIDI + _OTHER))
        else:
            parts.append(chr(rng.randrange(0x20, 0x7F)))
    text = "".join(parts)[:size]
    return "".join(c for c in text if ord(c) < ceiling) or "x"


@dataclass(frozen=True, slots=True)
class Fields:
    local_identifier: str
    subject: str
    free_form: str
    body: str


def draw(rng: random.Random) -> Fields:
    return Fields(
        local_identifier=_text(rng, rng.randint(1, 32), 0x80),
        subject=_text(rng, rng.randint(0, 60), 0x100),
        free_form=_text(rng, rng.randint(1, 30), 0x100),
        body=_text(rng, rng.randint(0, 200), 0x110000),
    )


# --- the ways the commands show them ---------------------------------------------------------

JONES = parse_orname("C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones")
SMITH = parse_orname(f"{A.domain};O=HQ;S=Smith")


def _shown(show: Callable[[Any], None]) -> str:
    buffer = io.StringIO()
    out = terminal_text(buffer)
    show(out)
    out.flush()
    return buffer.getvalue()


def _views(apdu: bytes, identifier: str, fields: Fields) -> dict[str, tuple[str, int]]:
    """What each command writes of the case, and the lines it writes for a tame one."""
    message = decode_mts_apdu(apdu)
    row = {
        "message_id": 1,
        "precedence": "priority",
        "state": "pending",
        "attempts": 1,
        "route": "MTA-A",
        "mts_identifier": identifier,
        "recipient": "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith",
        "last_error": f"transfer failed: {fields.free_form}",
    }
    event = {
        "at": "2026-11-28T12:00:00+00:00",
        "event": "received",
        "recipient": None,
        "peer": "MTA-A",
        "detail": fields.subject,
    }
    entry = {
        "id": 1,
        "received_at": "2026-11-28T12:00:00+00:00",
        "peer": "MTA-A",
        "size": len(apdu),
        "reason": fields.subject,
    }
    inbox = {
        "id": 1,
        "read": False,
        "precedence": "priority",
        "kind": "message",
        "delivered_at": "2026-11-28T12:00:00+00:00",
        "originator": fields.free_form,
        "subject": fields.subject,
    }
    record = logging.LogRecord("aiox400.mta", logging.INFO, "", 0, "took %s", (identifier,), None)
    return {
        "x400 read": (_shown(lambda out: x400._show_apdu(message, out)), 0),
        "x400 inbox": (_shown(lambda out: x400._inbox_line(inbox, out)), 2),
        "x400ctl queue --list": (
            _shown(lambda out: ctl_local._list({"recipients": [row]}, out)),
            3,
        ),
        "x400ctl track": (_shown(lambda out: ctl_local._events([event], out)), 2),
        "x400ctl quarantine list": (
            _shown(lambda out: ctl_local._quarantine_list([entry], out)),
            2,
        ),
        "x400-dump": (_shown(lambda out: print(to_text(decode_any(apdu).plain), file=out)), 0),
        "log line": (LineFormatter("%(message)s").format(record) + "\n", 1),
    }


@dataclass
class Outcome:
    cases: int = 0
    problems: list[str] = field(default_factory=list)


def run(seed: int, cases: int) -> Outcome:
    """``cases`` random messages from ``seed``; what any command wrote wrong."""
    rng = random.Random(seed)
    outcome = Outcome()
    for number in range(cases):
        fields = draw(rng)
        apdu, identifier = hostile_message(
            JONES,
            SMITH,
            local_identifier=fields.local_identifier,
            subject=fields.subject,
            free_form=fields.free_form,
            body=fields.body,
        )
        for command, (text, lines) in _views(apdu, identifier, fields).items():
            found = raw_controls(text)
            if found:
                outcome.problems.append(f"case {number}: {command} wrote {found[:5]!r}")
            if lines and text.count("\n") != lines:
                outcome.problems.append(f"case {number}: {command} wrote {text!r}")
        outcome.cases += 1
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.attack_peer_text")
    parser.add_argument("--cases", type=int, default=10_000, help="hostile messages shown")
    parser.add_argument("--seed", type=int, default=7, help="the random seed (7)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    outcome = run(args.seed, args.cases)
    elapsed = time.monotonic() - started
    print(
        f"seed {args.seed}: {outcome.cases} cases in {elapsed:.1f} s, "
        f"{len(outcome.problems)} problem(s)"
    )
    for problem in outcome.problems[:20]:
        print(f"  {problem}")
    return 1 if outcome.problems else 0


if __name__ == "__main__":
    sys.exit(main())
