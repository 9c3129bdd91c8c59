"""The many-recipients attacker: messages for thousands of local users, large bodies.

A bound peer (MTA-A) transfers to MTA-B messages whose envelopes name many of B's users
(each responsible, each named again in the heading's primary recipients), some named
twice, some under a domain B has no route for, with bodies above the spool's threshold,
while another association of the same peer transfers a one-recipient message.  What
the daemon must show afterwards (:meth:`Outcome.problems`):

- each message stored once, however many users it went to: content rows (and spool
  files) no more than the distinct messages delivered;
- every named user of B holding each message once;
- the one-recipient message sent while the first large one was being taken in is
  delivered (its transfer is not refused nor lost behind the large ones);
- no log line longer than :data:`MAX_LINE` characters, no traceback;
- the daemon still answering its local API.

:func:`cases` draws the messages from a seed; :func:`run_attack` plays them to a daemon
(:class:`tests.fuzz.live.Daemon` is not used: this attack needs its own configuration,
written by :func:`daemon_config`); ``benchmarks/recipients.py`` is the long run and the
measured one.

Public API::

    Case(identifier, users, foreign, body_octets)       one message, drawn by cases()
    cases(seed, count, *, most=2000, body=(65_536, 200_000)) -> list[Case]
    many_recipient_apdu(identifier, users, body_octets) -> bytes
    one_recipient_apdu(identifier, user) -> bytes
    daemon_config(directory, port, peer_port) -> Path
    await transfer(port, apdu, *, timeout) -> None
    await run_attack(directory, cases, *, command) -> Outcome
    await answers(control) -> bool   await wait_answering(control, process)
    Outcome .problems() -> list[str]
    A_DOMAIN, B_DOMAIN, A_NAME, A_PASSWORD, MAX_LINE, user_name(n)
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from client.api import call_async
from mta.link import open_link
from p1.association.mtabind import MTABindArgument
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
from p1.mts.fields import GlobalDomainIdentifier
from p1.mts.orname import parse_orname
from p1.mts.precedence import Precedence
from tests.fuzz.live import daemon_module

A_NAME: Final = "MTA-A"
A_PASSWORD: Final = "pw-MTA-A"
A_DOMAIN: Final = GlobalDomainIdentifier(country="GB", admd=" ", prmd="SITEA")
B_DOMAIN: Final = "C=GB;ADMD= ;PRMD=SITEB"
FOREIGN_DOMAIN: Final = "C=FR;ADMD= ;PRMD=NOWHERE"
MAX_LINE: Final = 2000
"""Characters a log line may hold: one naming recipients gives a count and a few."""
SENT: Final = datetime(2026, 11, 28, 9, 0, 0, tzinfo=UTC)
_ORIGINATOR = parse_orname("C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith")


ONE_RECIPIENT: Final = 99_999
"""The number of the user the one-recipient message is for (none of the attack's)."""


def user_name(number: int) -> str:
    """The O/R address of B's user ``number``."""
    return f"{B_DOMAIN};O=HQ;S=User{number:05}"


@dataclass(frozen=True, slots=True)
class Case:
    """One message of the attack."""

    identifier: str
    users: tuple[int, ...]
    """B's users it names, by number (a number may come twice)."""
    foreign: int
    """Recipients under a domain B has no route for (non-delivered)."""
    body_octets: int


def cases(
    seed: int, count: int, *, most: int = 2000, body: tuple[int, int] = (65_536, 200_000)
) -> list[Case]:
    """``count`` messages drawn from ``seed``: up to ``most`` users each (the first one
    ``most`` exactly), a few named twice, a few foreign, bodies in ``body``."""
    draw = random.Random(seed)
    made = []
    for index in range(count):
        size = most if index == 0 else draw.randint(1, most)
        users = draw.sample(range(most * 2), size)
        users += draw.sample(users, min(len(users), draw.randint(0, 3)))  # named twice
        made.append(
            Case(
                identifier=f"many-{seed}-{index}",
                users=tuple(users),
                foreign=draw.randint(0, 3),
                body_octets=draw.randint(*body),
            )
        )
    return made


def many_recipient_apdu(
    identifier: str, users: Sequence[str], body_octets: int, *, heading: bool = True
) -> bytes:
    """A message from MTA-A to ``users`` (each responsible, non-delivery reports asked),
    named also in the heading's primary recipients unless ``heading`` is False, with a
    text body of ``body_octets``."""
    names = [parse_orname(user) for user in users]
    envelope = MessageEnvelope(
        mts_identifier=MTSIdentifier(
            global_domain_identifier=A_DOMAIN, local_identifier=identifier
        ),
        originator_name=_ORIGINATOR,
        content_type=P772_CONTENT_TYPE,
        trace_information=(TraceEntry(global_domain_identifier=A_DOMAIN, arrival_time=SENT),),
        recipients=tuple(
            RecipientField(
                recipient_name=name,
                originally_specified_recipient_number=number,
                per_recipient_indicators=PerRecipientIndicators(
                    responsibility=True, originating_mta_non_delivery_report=True
                ),
            )
            for number, name in enumerate(names, start=1)
        ),
    ).with_precedence(Precedence.ROUTINE)
    line = b"MANY RECIPIENTS, ONE COPY: THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG\r\n"
    text = (line * (body_octets // len(line) + 1))[:body_octets]
    ipm = IPM(
        heading=Heading(
            this_ipm=IPMIdentifier(user=_ORIGINATOR, user_relative_identifier=identifier[:64]),
            originator=ORDescriptor(formal_name=_ORIGINATOR),
            primary_recipients=tuple(Recipient(name=n) for n in names) if heading else (),
            subject=f"to {len(names)} recipients",
            primary_precedence=Precedence.ROUTINE,
        ),
        body=(TextBodyPart(data=text),),
    )
    content = encode_ipm(ipm, ContentKind.P772)
    return encode_mts_apdu(Message(envelope=envelope, content=content))


def one_recipient_apdu(identifier: str, user: str) -> bytes:
    """A small message from MTA-A to ``user``."""
    return many_recipient_apdu(identifier, [user], 200)


def case_apdu(case: Case) -> bytes:
    names = [user_name(n) for n in case.users]
    names += [f"{FOREIGN_DOMAIN};O=X;S=Far{n}" for n in range(case.foreign)]
    return many_recipient_apdu(case.identifier, names, case.body_octets)


# --- the daemon --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def daemon_config(directory: Path, port: int, peer_port: int) -> Path:
    """MTA-B's configuration: one listener, MTA-A its peer, every name under its domain
    a user (``accept_any_recipient``)."""
    config = directory / "mta.toml"
    config.write_text(
        'name = "MTA-B"\n'
        f'global_domain = "{B_DOMAIN}"\n'
        'password = "pw-MTA-B"\n'
        'state_dir = "state"\n'
        'log_level = "info"\n'
        "accept_any_recipient = true\n\n"
        f'[[listeners]]\naddress = "127.0.0.1"\nport = {port}\ndscp = "CS0"\n\n'
        f'[[peers]]\nname = "{A_NAME}"\nhost = "127.0.0.1"\n'
        f'routes = ["C=GB;ADMD= ;PRMD=SITEA"]\npeer_password = "{A_PASSWORD}"\n\n'
        '[[peers.slots]]\nprecedences = ["override", "flash", "immediate", "priority", '
        f'"routine", "deferred"]\nport = {peer_port}\ndscp = "CS0"\nmode = "on-demand"\n',
        encoding="utf-8",
    )
    return config


async def transfer(port: int, apdu: bytes, *, timeout: float = 600.0) -> None:
    """Bind to MTA-B as MTA-A, transfer ``apdu``, release."""
    argument = MTABindArgument(initiator_name=A_NAME, password=A_PASSWORD)
    link, _ = await open_link("127.0.0.1", port, argument)
    try:
        await link.transfer(apdu, timeout=timeout)
        await link.release(timeout=timeout)
    finally:
        await link.close()


@dataclass
class Outcome:
    """What the attack left behind."""

    messages: int = 0
    """Messages delivered to at least one user."""
    contents: int = 0
    """Content rows (-1: the store has no contents table)."""
    mailbox_rows: int = 0
    expected_rows: int = 0
    """Distinct (message, user) pairs the attack named."""
    spool_files: int = 0
    longest_line: int = 0
    tracebacks: int = 0
    answering: bool = False
    one_recipient_delivered: bool = False
    notes: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        found = []
        if self.contents < 0 or self.contents > self.messages:
            found.append(f"{self.contents} content rows for {self.messages} messages")
        if self.spool_files > self.messages:
            found.append(f"{self.spool_files} spool files for {self.messages} messages")
        if self.mailbox_rows != self.expected_rows:
            found.append(f"{self.mailbox_rows} mailbox entries, {self.expected_rows} expected")
        if self.longest_line > MAX_LINE:
            found.append(f"a log line of {self.longest_line} characters")
        if self.tracebacks:
            found.append(f"{self.tracebacks} tracebacks in the log")
        if not self.answering:
            found.append("the daemon does not answer its local API")
        if not self.one_recipient_delivered:
            found.append("the one-recipient message was not delivered")
        return found + self.notes


async def run_attack(
    directory: Path, attack: Sequence[Case], *, command: Sequence[str] = ()
) -> Outcome:
    """Start MTA-B in ``directory`` (``command``: how, else ``x400-mta``),
    transfer ``attack`` one after the other on one association each, and a one-recipient
    message on another association once the first large transfer has begun; stop it and
    say what it stored and logged."""
    port = free_port()
    config = daemon_config(directory, port, free_port())
    log = directory / "mta.log"
    run = list(command) or [sys.executable, "-m", daemon_module()]
    with log.open("ab") as out:
        process = subprocess.Popen(
            [*run, "--config", str(config)], stdout=out, stderr=out, cwd=directory
        )
    outcome = Outcome()
    try:
        control = directory / "state" / "control.sock"
        await wait_answering(control, process)
        apdus = [case_apdu(case) for case in attack]
        large = asyncio.ensure_future(_all(port, apdus))
        await asyncio.sleep(0)  # (the first large transfer is on its way: ordering only)
        small = one_recipient_apdu("one-recipient", user_name(ONE_RECIPIENT))
        with contextlib.suppress(Exception):
            await transfer(port, small)
            outcome.one_recipient_delivered = True
        await large
        outcome.answering = await answers(control)
    finally:
        process.terminate()
        process.wait(timeout=120)
    _read_store(directory, attack, outcome)
    _read_log(log, outcome)
    return outcome


async def _all(port: int, apdus: Sequence[bytes]) -> None:
    for apdu in apdus:
        await transfer(port, apdu)


async def wait_answering(control: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while not await answers(control):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("MTA-B did not start")
        await asyncio.sleep(0.05)


async def answers(control: Path) -> bool:
    try:
        response, _ = await asyncio.wait_for(call_async(control, {"op": "status"}), 60)
    except (OSError, TimeoutError):
        return False
    return bool(response.get("ok"))


def _read_store(directory: Path, attack: Sequence[Case], outcome: Outcome) -> None:
    database = directory / "state" / "aiox400.db"
    with contextlib.closing(sqlite3.connect(database)) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
        outcome.contents = (
            connection.execute("SELECT count(*) FROM contents").fetchone()[0]
            if "contents" in tables
            else -1
        )
        outcome.messages = connection.execute(
            "SELECT count(DISTINCT mts_identifier) FROM mailbox"
        ).fetchone()[0]
        outcome.mailbox_rows = connection.execute("SELECT count(*) FROM mailbox").fetchone()[0]
    outcome.expected_rows = sum(len(set(case.users)) for case in attack) + 1
    spool = directory / "state" / "aiox400.db-apdus"
    if spool.exists():
        outcome.spool_files = sum(1 for path in spool.iterdir() if path.stat().st_size)


def _read_log(log: Path, outcome: Outcome) -> None:
    text = log.read_text(encoding="utf-8", errors="replace")
    outcome.longest_line = max((len(line) for line in text.splitlines()), default=0)
    outcome.tracebacks = text.count("Traceback")
