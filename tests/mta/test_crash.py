"""Crash tests: two real ``x400-mta`` processes, one of them killed with SIGKILL mid-traffic.

The design's promise (docs/design.md, "Message flow"): nothing is acknowledged before it
is on disk, so a crash at any point loses nothing and duplicates nothing the peer has
already taken responsibility for.  Here site A and site B of the lab
(:mod:`tests.support.sites`: four slots, one per DSCP, routine on demand with two
connections) run as separate daemons on SQLite files; 1,000 routine 1 KB messages go
from a user of A to a user of B, and one site is killed with ``kill -9`` while they are
on their way, then started again on the same configuration and database.  Afterwards
every MTS identifier A's ``submit`` returned must be in B's mailbox exactly once, and
nothing else.

- B killed: B dies with transfers arriving, perhaps one committed but not yet
  confirmed, and messages received but not yet delivered; A re-sends what B had not
  confirmed, B's duplicate keys must keep what it had stored from being taken twice, and
  the restarted B must deliver what it had taken before the crash.
- A killed: A dies with transfers in flight, some of them already confirmed by B but not
  yet marked transferred at A; the restarted A re-sends them and B must drop them as
  duplicates.

The victim is killed once B has delivered ``KILL_AFTER`` messages, with most of the
1,000 still to go (the test fails if B had them all: the crash would have hit nothing).
The daemons are driven through their local API only (a small asyncio client on the unix
socket, with the framing of ``mta/control.py``).  Every wait polls with a deadline that
only a failing run reaches; a failure names the identifiers that are missing, duplicated
or unexpected and shows the end of both daemons' logs.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

from client.api import ApiError, call_async
from client.x400 import canned_body, text_ipm
from p1.ipms.ipm import (
    P772_CONTENT_TYPE,
)
from p1.mts.orname import parse_orname
from tests.support.sites import Lab, Site

pytestmark = pytest.mark.slow  # kill -9 of x400-mta processes in the middle of a thousand transfers

T = TypeVar("T")
JsonObject = dict[str, Any]

MESSAGES = 1000
"""Routine messages sent from A to B in each scenario."""
BODY_SIZE = 1024
KILL_AFTER = 100
"""The victim is killed once B has delivered at least this many (but not all)."""
LARGE_MESSAGES = 200
LARGE_BODY = 128 * 1024
"""Large enough for the APDU to be kept in a file of its own (store/spool.py)."""
CLIENTS = 8
"""Concurrent submissions at A."""
DEADLINE = 180.0
"""Seconds any one wait may take: reached only when the test fails."""
POLL = 0.02
LOG_TAIL = 40
"""Lines of each daemon's log shown with a failure."""
STORIES = 5
"""Wrong identifiers whose log lines a failure shows."""

MTA = Path(sys.executable).with_name("x400-mta")
BUSY_STATES = ("pending", "in_flight", "held")
"""Queue states of recipients the MTA still owes something."""


# --- the local API, from asyncio ---------------------------------------------------------


async def api(path: Path, request: JsonObject, payload: bytes = b"") -> JsonObject:
    """One local API request; ApiError if refused, OSError when nothing listens on ``path``
    (the daemon is starting, or dead)."""
    response, _ = await call_async(path, request, payload)
    return response


# --- one daemon --------------------------------------------------------------------------


@dataclass
class Daemon:
    """An ``x400-mta`` process for one site of the lab; its output appended to ``log``."""

    site: Site
    log: Path
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def name(self) -> str:
        return self.site.name

    def start(self) -> None:
        """Start the daemon (the same configuration file and database every time)."""
        assert self.process is None, f"{self.name} is running already"
        self.starts += 1
        config = self.site.config_file
        with self.log.open("ab") as log:
            log.write(f"=== {self.name}: start {self.starts} ===\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [str(MTA), "--config", str(config), "--log-level", "info"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def kill(self) -> None:
        """SIGKILL, and reap the process."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
        if process is not None:
            process.wait()
            with self.log.open("ab") as log:
                log.write(f"=== {self.name}: killed (exit {process.returncode}) ===\n".encode())

    def exited(self) -> str | None:
        """Why the daemon is not running although it should be, or None."""
        if self.process is None:
            return None
        code = self.process.poll()
        return None if code is None else f"{self.name} exited with code {code}"

    def lines(self) -> list[str]:
        try:
            return self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return ["(no log)"]

    def tail(self, count: int = LOG_TAIL) -> str:
        return "\n".join(self.lines()[-count:])

    async def api(self, request: JsonObject, payload: bytes = b"") -> JsonObject:
        return await api(self.site.socket, request, payload)

    async def counts(self) -> dict[str, int]:
        """Queue recipients by state (``status``)."""
        recipients: dict[str, int] = (await self.api({"op": "status"}))["recipients"]
        return recipients

    async def delivered(self) -> int:
        return (await self.counts()).get("delivered", 0)

    async def mailbox(self, user: str) -> list[JsonObject]:
        messages: list[JsonObject] = (await self.api({"op": "inbox", "user": user}))["messages"]
        return messages


# --- the two sites -----------------------------------------------------------------------


@dataclass
class CrashLab:
    """Site A and site B as daemons, with waits that watch both processes."""

    a: Daemon
    b: Daemon
    timings: dict[str, float] = field(default_factory=dict)
    _started: float = field(default_factory=time.monotonic)

    @property
    def sender(self) -> str:
        return self.a.site.address("Smith")

    @property
    def recipient(self) -> str:
        return self.b.site.address("Jones")

    def mark(self, phase: str) -> None:
        """Note when ``phase`` ended (seconds since the lab was made), for failure reports."""
        self.timings[phase] = round(time.monotonic() - self._started, 2)

    def kill_all(self) -> None:
        self.a.kill()
        self.b.kill()

    def fail(self, why: str) -> NoReturn:
        """Fail the test with ``why``, the phases reached and both daemons' last log lines."""
        logs = "\n".join(
            f"\n--- last {LOG_TAIL} lines of {d.name}'s log ({d.log}) ---\n{d.tail()}"
            for d in (self.a, self.b)
        )
        pytest.fail(f"{why}\nphases (s): {self.timings}\n{logs}", pytrace=False)

    def stories(self, identifiers: Iterable[str]) -> str:
        """What both daemons logged about each of ``identifiers`` (its story)."""
        logs = [(d.name, d.lines()) for d in (self.a, self.b)]
        parts = []
        for identifier in identifiers:
            story = [
                f"{name}: {line}" for name, lines in logs for line in lines if identifier in line
            ]
            parts.append(f"\n--- {identifier} in the logs ---\n" + "\n".join(story or ["(none)"]))
        return "\n".join(parts)

    def check_running(self) -> None:
        for daemon in (self.a, self.b):
            why = daemon.exited()
            if why is not None:
                self.fail(f"{why} unexpectedly")

    async def until(
        self,
        probe: Callable[[], Awaitable[T]],
        ok: Callable[[T], bool],
        *,
        what: str,
        timeout: float = DEADLINE,
    ) -> T:
        """Poll ``probe`` until ``ok`` holds for its value; that value.

        A daemon that should be running and has exited fails the test at once; a probe
        that cannot reach a daemon (it is starting) is tried again.
        """
        deadline = time.monotonic() + timeout
        last: object = "nothing yet"
        while True:
            self.check_running()
            try:
                value = await probe()
            except (OSError, ApiError) as error:
                last = f"{type(error).__name__}: {error}"
            else:
                if ok(value):
                    return value
                last = value
            if time.monotonic() > deadline:
                self.fail(f"not within {timeout:g} s: {what}; last seen: {last!r}")
            await asyncio.sleep(POLL)

    async def start(self, daemon: Daemon) -> None:
        """Start ``daemon`` and wait until its local API answers."""
        daemon.start()
        await self.until(lambda: daemon.api({"op": "status"}), bool, what=f"{daemon.name} answers")

    async def submit(self, count: int, size: int = BODY_SIZE) -> list[str]:
        """Submit ``count`` routine messages (bodies of ``size`` octets) at A, ``CLIENTS``
        at a time; their identifiers."""
        content = _content(self.sender, self.recipient, size)
        request = {
            "op": "submit",
            "originator": self.sender,
            "recipients": [self.recipient],
            "precedence": "routine",
            "content_type": P772_CONTENT_TYPE,
        }
        identifiers: list[str] = []
        errors: list[str] = []
        numbers = iter(range(count))

        async def client() -> None:
            for number in numbers:
                if errors:
                    return  # the first failure stops every client
                try:
                    response = await self.a.api(request, content)
                except (OSError, ApiError, ValueError) as error:
                    errors.append(f"submission {number} at {self.a.name} failed: {error!r}")
                    return
                identifiers.append(response["mts_identifier"])

        await asyncio.gather(*(client() for _ in range(CLIENTS)))
        if errors:
            self.fail(f"{errors[0]} (after {len(identifiers)} submitted)")
        repeated = [i for i, n in Counter(identifiers).items() if n > 1]
        if repeated:
            self.fail(f"{self.a.name} gave the same MTS identifier twice: {repeated}")
        return identifiers

    async def kill_in_the_middle(
        self, victim: Daemon, *, after: int = KILL_AFTER, of: int = MESSAGES
    ) -> int:
        """SIGKILL ``victim`` once B has delivered ``after`` (of ``of``); B's count then."""
        delivered = await self.until(
            self.b.delivered,
            lambda n: n >= after,
            what=f"{self.b.name} delivers {after} messages",
        )
        victim.kill()
        self.mark(f"{victim.name} killed at {delivered} delivered")
        if delivered >= of:
            self.fail(
                f"{self.b.name} had delivered all {delivered} messages before {victim.name} "
                "was killed: the crash hit no transfer"
            )
        return delivered

    async def settle(self) -> tuple[dict[str, int], dict[str, int]]:
        """Wait until neither queue owes anything (nothing pending, in flight or held).

        The queue counts of A and B then.  Not failing on the deadline: the mailbox check
        that follows says best what went wrong.
        """

        async def both() -> tuple[dict[str, int], dict[str, int]]:
            return await self.a.counts(), await self.b.counts()

        def idle(counts: tuple[dict[str, int], dict[str, int]]) -> bool:
            return not any(c.get(state) for c in counts for state in BUSY_STATES)

        deadline = time.monotonic() + DEADLINE
        last: tuple[dict[str, int], dict[str, int]] = ({}, {})
        while time.monotonic() < deadline:
            self.check_running()
            with contextlib.suppress(OSError, ApiError):
                last = await both()
                if idle(last):
                    break
            await asyncio.sleep(POLL)
        self.mark("queues settled")
        return last

    async def check_mailbox(self, identifiers: Iterable[str]) -> None:
        """Every identifier exactly once in the recipient's mailbox, nothing else; the
        queues of both sites settled with every recipient done."""
        counts_a, counts_b = await self.settle()
        expected = list(identifiers)
        entries = await self.b.mailbox(self.recipient)
        found = Counter(entry["mts_identifier"] for entry in entries)
        wanted = set(expected)
        missing = [i for i in expected if i not in found]
        duplicated = {i: n for i, n in found.items() if n > 1}
        unexpected = sorted(i for i in found if i not in wanted)
        reports = [e["mts_identifier"] for e in entries if e["kind"] != "message"]
        problems = []
        if missing:
            problems.append(f"{len(missing)} missing: {_some(missing)}")
        if duplicated:
            problems.append(f"{len(duplicated)} duplicated (id: times): {duplicated}")
        if unexpected:
            problems.append(f"{len(unexpected)} not submitted: {_some(unexpected)}")
        if reports:
            problems.append(f"{len(reports)} reports: {_some(reports)}")
        if problems:
            self.fail(
                f"{self.b.name}'s mailbox of {self.recipient} has {len(entries)} entries for "
                f"{len(expected)} submitted messages: " + "; ".join(problems) + "\n"
                f"queue of {self.a.name}: {counts_a}; queue of {self.b.name}: {counts_b}\n"
                + self.stories([*missing, *duplicated, *unexpected][:STORIES])
            )
        settled = ({"transferred": len(expected)}, {"delivered": len(expected)})
        if (counts_a, counts_b) != settled:
            self.fail(
                f"the mailbox is right but the queues are not done: {self.a.name} "
                f"{counts_a}, {self.b.name} {counts_b}; expected {settled}"
            )


def _some(identifiers: list[str], shown: int = 20) -> str:
    more = len(identifiers) - shown
    return ", ".join(identifiers[:shown]) + (f" and {more} more" if more > 0 else "")


def _content(sender: str, recipient: str, size: int = BODY_SIZE) -> bytes:
    """A P772 IPM from ``sender`` to ``recipient`` with a body of ``size`` octets."""
    return text_ipm(parse_orname(sender), parse_orname(recipient), "crash test", canned_body(size))


@pytest.fixture
async def crash_lab(tmp_path: Path) -> AsyncIterator[CrashLab]:
    """Sites A and B configured as daemons (not started); both killed after the test, and
    the lab's ports given back."""
    assert MTA.exists(), f"{MTA} is not installed next to the interpreter"
    lab = Lab.create(tmp_path)
    crash = CrashLab(
        a=Daemon(lab.a, tmp_path / "mta-a.log"),
        b=Daemon(lab.b, tmp_path / "mta-b.log"),
    )
    try:
        yield crash
    finally:
        crash.kill_all()
        await lab.close()


# --- the scenarios -----------------------------------------------------------------------


async def test_kill_9_of_site_b_in_the_middle_of_1000_transfers(crash_lab: CrashLab) -> None:
    lab = crash_lab
    await lab.start(lab.b)
    await lab.start(lab.a)
    lab.mark("started")
    # B takes transfers while the messages are submitted; relaying is slower than
    # submitting (two commits at A per transfer), so B is far from done when A has them all.
    identifiers = await lab.submit(MESSAGES)
    lab.mark("submitted")
    await lab.kill_in_the_middle(lab.b)
    await lab.start(lab.b)
    lab.mark(f"{lab.b.name} restarted")
    await lab.check_mailbox(identifiers)


async def test_kill_9_of_site_a_in_the_middle_of_1000_transfers(crash_lab: CrashLab) -> None:
    lab = crash_lab
    # Everything is submitted (and acknowledged) before B is up, so that A is sure to be
    # killed with transfers to come and no submission is left without its answer.
    await lab.start(lab.a)
    identifiers = await lab.submit(MESSAGES)
    lab.mark("submitted")
    await lab.start(lab.b)
    await lab.kill_in_the_middle(lab.a)
    await lab.start(lab.a)
    lab.mark(f"{lab.a.name} restarted")
    await lab.check_mailbox(identifiers)


async def test_kill_9_of_site_b_while_large_messages_go_through_its_apdu_files(
    crash_lab: CrashLab,
) -> None:
    """Messages large enough to be kept in files (store/spool.py): after B's restart each
    is in the mailbox once and reads back whole, and B's APDU folder holds exactly the
    files its mailbox names (what the crash left half written is gone)."""
    lab = crash_lab
    await lab.start(lab.a)
    identifiers = await lab.submit(LARGE_MESSAGES, LARGE_BODY)
    lab.mark("submitted")
    await lab.start(lab.b)
    await lab.kill_in_the_middle(lab.b, after=LARGE_MESSAGES // 5, of=LARGE_MESSAGES)
    await lab.start(lab.b)
    lab.mark(f"{lab.b.name} restarted")
    await lab.check_mailbox(identifiers)
    entries = await lab.b.mailbox(lab.recipient)
    for entry in entries:
        request = {"op": "read", "user": lab.recipient, "id": entry["id"]}
        _, apdu = await call_async(lab.b.site.socket, request)
        if len(apdu) != entry["size"] or len(apdu) < LARGE_BODY:
            lab.fail(f"entry {entry['id']} reads back {len(apdu)} octets of {entry['size']}")
    folder = lab.b.site.directory / "state" / "aiox400.db-apdus"
    written = [path for path in folder.iterdir() if path.stat().st_size]
    assert len(written) == len(entries), f"{len(written)} APDU files for {len(entries)} entries"
