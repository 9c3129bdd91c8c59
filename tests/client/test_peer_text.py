"""A peer's text on an operator's terminal: every command, run as the installed process,
shows the control characters a peer put in a message escaped.

MTA-A transfers to site B (A itself stays down) a message whose MTS identifier,
originator's free-form name, subject and body hold terminal escapes, CR and LF, C1
controls and bidirectional overrides (:func:`tests.fuzz.attack_peer_text.hostile_message`);
one recipient is B's, the other A's, so the message is both in B's mailbox and waiting
in B's queue.  A second transfer does not decode and goes to the quarantine.
Then ``x400 inbox`` and ``read``, ``x400-dump`` of the stored octets, ``x400ctl queue``
(each form), ``track``, ``status``, ``channels`` and ``quarantine`` (each form) must
write no control character but the line feeds between lines (and tabs); nor may the
daemon's log lines.
"""

from __future__ import annotations

import asyncio
import io
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mta.daemon import log_handler
from p1.mts.orname import parse_orname
from tests.fuzz import attack_peer_text
from tests.fuzz.attack_peer_text import hostile_message
from tests.support.sites import Lab, eventually, transfer_as_a

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
    return attack_peer_text.raw_controls(output.decode("utf-8"))


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
    apdu, mts_identifier = hostile_message(
        parse_orname(jones),
        parse_orname(lab.a.address("X")),
        local_identifier=LOCAL_IDENTIFIER,
        subject=SUBJECT,
        free_form=FREE_FORM,
        body=BODY,
    )
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
