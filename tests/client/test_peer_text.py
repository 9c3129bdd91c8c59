"""A peer's text on an operator's terminal: every command, run as the installed process,
shows the control characters a peer put in a message escaped.

MTA-A transfers to site B (A itself stays down) a message whose MTS identifier, O/R
names, subject and body hold terminal escapes, CR and LF, C1 controls and bidirectional
overrides; one recipient is B's, the other A's, so the message is both in B's mailbox and
waiting in B's queue.  A second transfer does not decode and goes to the quarantine.
Then ``x400 inbox`` and ``read``, ``x400-dump`` of the stored octets, ``x400ctl queue``
(each form), ``track``, ``status``, ``channels`` and ``quarantine`` (each form) must
write no control character but the line feeds between lines (and tabs); nor may the
daemon's log lines.
"""

from __future__ import annotations

import asyncio
import io
import logging
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mta.daemon import log_handler
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
    encode_mts_apdu,
)
from p1.mts.orname import ORName, parse_orname
from p1.mts.precedence import Precedence
from tests.support.sites import SENT, A, Lab, eventually, transfer_as_a

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent

LOCAL_IDENTIFIER = "\x1b[2J\x1b]0;pwned\x07\r\nFAKE\x7f"
"""IA5String: C0 controls, an OSC title escape, a line break and DEL."""
SUBJECT = "\x1b[31mURGENT\r\nfrom: S=commander\x9b2J\x85"
"""TeletexString (ISO 8859-1 here): C0, a line break and C1 (CSI, NEL)."""
FREE_FORM = "Eve\x1b[8m\rhidden\x90"
"""The heading originator's free-form name (TeletexString): an O/R name's attributes
are PrintableString, read strictly, so a descriptor's free-form name is where a name
carries text."""
BODY = "line one\r\nline two\x1b[2J\roverwritten\x85 \u202egnp.exe\u2066x\u2069\u200f"
"""General text in UTF-8: a lone CR, C1 and the bidirectional formatting characters."""

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
"""What must not reach a terminal: every control character but tab and line feed."""


def hostile_message(local_user: ORName, remote_user: ORName) -> tuple[bytes, str]:
    """The message MTA-A transfers, and its MTS identifier's text."""
    domain = domain_of(parse_orname(A.domain))
    identifier = MTSIdentifier(global_domain_identifier=domain, local_identifier=LOCAL_IDENTIFIER)
    eve = parse_orname(f"{A.domain};O=HQ;S=Eve")  # (PrintableString: no control characters)
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
        originator=ORDescriptor(formal_name=eve, free_form_name=FREE_FORM),
        primary_recipients=(Recipient(name=local_user), Recipient(name=remote_user)),
        subject=SUBJECT,
        primary_precedence=Precedence.PRIORITY,
    )
    body = (TextBodyPart.from_text(BODY),)
    content = encode_ipm(IPM(heading=heading, body=body), ContentKind.P772)
    return encode_mts_apdu(Message(envelope=envelope, content=content)), identifier.text


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    lab = Lab.create(tmp_path)
    await lab.b.start()  # A stays down: what B routes to A waits in B's queue
    try:
        yield lab
    finally:
        await lab.close()


async def run(*argv: str, stdin: bytes = b"") -> tuple[bytes, bytes]:
    """An installed command: its standard output and error (it must not fail)."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), 60)
    assert process.returncode == 0, (argv, out, err)
    return out, err


def raw_controls(output: bytes) -> list[str]:
    """The control characters in ``output`` that are not tab or line feed (CR LF
    counts as a line end)."""
    return RAW.findall(output.decode("utf-8").replace("\r\n", "\n"))


async def test_no_command_shows_a_peers_control_characters(lab: Lab) -> None:
    site = lab.b
    log = io.StringIO()
    handler = log_handler(log, timestamps=False)
    logger = logging.getLogger("aiox400")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)  # the lines that quote a transfer's identifier
    try:
        await _transfer_and_show(lab, log)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert site.running is not None


async def _transfer_and_show(lab: Lab, log: io.StringIO) -> None:
    site = lab.b
    jones = site.address("Jones")
    apdu, mts_identifier = hostile_message(parse_orname(jones), parse_orname(lab.a.address("X")))
    await transfer_as_a(site, apdu)
    as_printable = apdu.replace(b"\x16\x15\x1b[2J", b"\x13\x15\x1b[2J", 1)  # IA5 -> Printable
    assert as_printable != apdu
    await transfer_as_a(site, as_printable)  # does not decode: quarantined
    inbox = await eventually(
        lambda: site.inbox(jones), lambda found: len(found) == 1, what="the message delivered"
    )
    entry = str(inbox[0]["id"])
    where = ("--socket", str(site.socket))
    stored, _ = await run(str(BIN / "x400"), "read", entry, "--user", jones, "--raw", *where)
    shown = {
        "x400 inbox": await run(str(BIN / "x400"), "inbox", "--user", jones, *where),
        "x400 read": await run(str(BIN / "x400"), "read", entry, "--user", jones, *where),
        "x400-dump": await run(str(BIN / "x400-dump"), "-", stdin=stored),
    }
    for label, command in (
        ("queue", ("queue",)),
        ("queue --list", ("queue", "--list")),
        ("qshape", ("qshape",)),
        ("track", ("track", mts_identifier)),
        ("status", ("status",)),
        ("channels", ("channels",)),
        ("quarantine list", ("quarantine", "list")),
        ("quarantine show", ("quarantine", "show", "1")),
    ):
        shown[f"x400ctl {label}"] = await run(str(BIN / "x400ctl"), *command, *where)
    _assert_escaped(shown, log.getvalue())


def _assert_escaped(shown: dict[str, tuple[bytes, bytes]], log: str) -> None:
    read_out = shown["x400 read"][0].decode()
    assert "\\x1b[2J\\x1b]0;pwned\\x07\\x0d\\x0aFAKE\\x7f" in read_out  # the identifier
    assert "\\x1b[31mURGENT\\x0d\\x0afrom: S=commander\\x9b2J\\x85" in read_out  # subject
    assert "line two\\x1b[2J\\x0doverwritten\\x85 \\u202egnp.exe" in read_out  # body
    assert "FAKE" in shown["x400ctl queue --list"][0].decode()
    assert "received" in shown["x400ctl track"][0].decode()
    assert "URGENT" in shown["x400 inbox"][0].decode()
    assert "gnp.exe" in shown["x400-dump"][0].decode()
    found = {
        f"{command} ({stream})": raw_controls(output)
        for command, outputs in shown.items()
        for stream, output in zip(("stdout", "stderr"), outputs, strict=True)
    }
    found["the daemon's log"] = raw_controls(log.encode())
    assert {where: chars for where, chars in found.items() if chars} == {}
    assert "FAKE" in log  # the log quotes the identifier, escaped
