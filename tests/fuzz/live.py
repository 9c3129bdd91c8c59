"""Mutated conversations played over TCP to a real daemon, and what they did to it.

A :class:`Daemon` is ``x400-mta`` run as a subprocess (``python -m mta.command``) with a
configuration of its own: the domain of the captured aiox400 site, the local users the
corpus writes to (:data:`tests.fuzz.corpus.LOCAL_USERS`), one listener, and every MTA the
corpus binds as for a peer with its password, so that a replayed bind is accepted and the
transfer phase is reached.  Failed binds cost no delay (``failed_bind_delay = 0``): the
fuzz binds with wrong passwords all the time.

:func:`run_live` plays the initiator side of each case over its own connection, several at
once: the reads as they come, waiting for the daemon's answer between them when they are
the writes the original peer made (``Case.lockstep``); then it half-closes, or (now and
then) waits for the daemon to end the association.  Afterwards it binds and transfers one
valid message with the MTA's own initiator (:func:`mta.link.open_link`) and waits for its
delivery through the local API.  The :class:`LiveReport` says what happened:

- the daemon still up (its process alive, its local API answering);
- its resident memory and open file descriptors before the fuzz (after a first bind
  compiled the ASN.1 specification) and after it;
- its log lines by level, every traceback with the log line before it and the case whose
  connection it names (``127.0.0.1:<our port>``), CRITICAL lines;
- what was stored: mailbox entries per user (all of them users of the configuration: a
  name the fuzz invented is a finding), messages taken in, audit events by kind;
- whether the valid transfer afterwards was delivered;
- whether the local API refuses malformed requests (JSON nested past the parser's
  recursion limit, octets that are not UTF-8, ...) with an answer rather than a traceback.

Public API::

    Daemon(directory)  await .start() / .stop(); .pid .port .rss_kib() .open_fds()
    await run_live(cases, directory, *, concurrency=8) -> LiveReport
    LiveReport .problems() -> list[str]   .table() -> str
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from client.api import call_async
from mta.link import Timeouts, open_link
from p1.association.mtabind import MTABindArgument
from p1.mts.orname import parse_orname
from tests.fuzz.corpus import (
    ALICE,
    DOMAIN,
    FUZZ_PASSWORD,
    FUZZ_PEER,
    KNOWN_PEERS,
    LOCAL_USERS,
    message_apdu,
)
from tests.fuzz.mutate import Case
from tests.support.sites import ReservedPorts, to_toml

PRECEDENCES = ["override", "flash", "immediate", "priority", "routine", "deferred"]
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_START_TIMEOUT = 60.0
_STOP_TIMEOUT = 30.0
_ANSWER_WAIT = 0.4
"""Seconds a lock-step replay waits for the daemon's answer before its next write."""
_END_WAIT = 3.0
"""Seconds a replay waits for the daemon to close the connection at the end."""
_DELIVERY_TIMEOUT = 30.0
_PEER_NAME = re.compile(r"127\.0\.0\.1:(\d+)")


# --- the daemon ------------------------------------------------------------------------


def daemon_module(tree: Path | None = None) -> str:
    """The module ``python -m`` runs ``x400-mta`` from in checkout ``tree`` (this one by
    default): mta.command, or mta.daemon in a checkout from before command.py ran it."""
    command = (tree or Path(__file__).resolve().parents[2]) / "mta" / "command.py"
    text = command.read_text(encoding="utf-8") if command.exists() else ""
    return "mta.command" if '__name__ == "__main__"' in text else "mta.daemon"


class Daemon:
    """``x400-mta`` in a subprocess, configured in ``directory`` (see the module doc)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.ports = ReservedPorts(1 + len(KNOWN_PEERS))
        self.port = self.ports.ports[0]
        self.config = directory / "mta.toml"
        self.log = directory / "mta.log"
        self.socket = directory / "control.sock"
        self.database = directory / "state" / "aiox400.db"
        self._process: asyncio.subprocess.Process | None = None

    def _settings(self) -> dict[str, object]:
        peer_ports = self.ports.ports[1:]
        return {
            "name": "fuzz-mta",
            "global_domain": DOMAIN,
            "password": "aiox-secret",
            "state_dir": "state",
            "control_socket": "control.sock",
            "local_users": list(LOCAL_USERS),
            "log_level": "info",
            "listeners": [{"address": "127.0.0.1", "port": self.port, "dscp": "CS0"}],
            "retry": {"initial": "1s", "maximum": "5s"},
            "limits": {"failed_bind_delay": "0s", "max_connections_per_address": 256},
            "peers": [
                {
                    "name": name,
                    "host": "127.0.0.1",
                    "peer_password": password,
                    "slots": [{"precedences": PRECEDENCES, "port": port, "mode": "on-demand"}],
                }
                for (name, password), port in zip(KNOWN_PEERS.items(), peer_ports, strict=True)
            ],
        }

    @property
    def pid(self) -> int:
        assert self._process is not None, "the daemon is not started"
        return self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self) -> None:
        """Write the configuration, start the daemon, wait until it accepts connections."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.config.write_text(to_toml(self._settings()) + "\n", encoding="utf-8")
        argv = [sys.executable, "-m", daemon_module(), "--config", str(self.config)]
        with self.log.open("ab") as log:
            self._process = await asyncio.create_subprocess_exec(
                *argv, "--no-timestamps", stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log
            )
        deadline = time.monotonic() + _START_TIMEOUT
        while True:
            if not self.running:
                raise RuntimeError(f"x400-mta exited at start: {self.log.read_text()[-2000:]}")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)
                continue
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return

    async def api_answers(self) -> bool:
        """Whether the local API answers a status request."""
        try:
            response, _ = await asyncio.wait_for(call_async(self.socket, {"op": "status"}), 10)
        except (OSError, TimeoutError, Exception):
            return False
        return bool(response.get("ok", True))

    async def stop(self) -> int | None:
        """SIGTERM, then wait; the exit code (None if it had to be killed)."""
        process = self._process
        if process is None or process.returncode is not None:
            return None if process is None else process.returncode
        process.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(process.wait(), _STOP_TIMEOUT)
        except TimeoutError:
            process.kill()
            await process.wait()
            return None
        finally:
            self.ports.close()

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return -1

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))


# --- what the daemon logged and stored ----------------------------------------------------


@dataclass(slots=True)
class Traceback:
    """One traceback in the log: the line logged with it, its last line, the case."""

    message: str
    error: str
    case: Case | None


@dataclass(slots=True)
class LogReport:
    levels: Counter[str] = field(default_factory=Counter)
    tracebacks: list[Traceback] = field(default_factory=list)
    critical: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def read_log(path: Path, by_port: dict[int, Case]) -> LogReport:
    """Lines by level (``LEVEL name: message``), tracebacks, CRITICAL and ERROR lines."""
    report = LogReport()
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    last_message = ""
    index = 0
    while index < len(lines):
        line = lines[index]
        level = line.split(" ", 1)[0]
        if level in LEVELS:
            report.levels[level] += 1
            last_message = line
            if level == "CRITICAL":
                report.critical.append(line)
            elif level == "ERROR":
                report.errors.append(line)
        elif line.startswith("Traceback (most recent call last):"):
            end = index + 1
            while end < len(lines) and (lines[end].startswith(" ") or not lines[end].strip()):
                end += 1
            error = lines[end] if end < len(lines) else lines[end - 1]
            found = _PEER_NAME.search(last_message)
            case = by_port.get(int(found.group(1))) if found else None
            report.tracebacks.append(Traceback(last_message, error, case))
            index = end
        index += 1
    return report


@dataclass(slots=True)
class StoreReport:
    mailboxes: dict[str, int] = field(default_factory=dict)
    invented: list[str] = field(default_factory=list)
    messages: int = 0
    audit: Counter[str] = field(default_factory=Counter)


def read_store(database: Path) -> StoreReport:
    """Mailbox entries per user, messages taken in and audit events, read from the
    daemon's SQLite file once it has stopped."""
    report = StoreReport()
    if not database.exists():
        return report
    known = {parse_orname(user).canonical for user in LOCAL_USERS}
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        for user, count in db.execute("SELECT user, count(*) FROM mailbox GROUP BY user"):
            report.mailboxes[str(user)] = int(count)
            if user not in known:
                report.invented.append(str(user))
        report.messages = int(db.execute("SELECT count(*) FROM messages").fetchone()[0])
        for event, count in db.execute("SELECT event, count(*) FROM audit GROUP BY event"):
            report.audit[str(event)] = int(count)
    return report


# --- playing the cases -------------------------------------------------------------------


@dataclass(slots=True)
class Played:
    """One case over one connection: the port we connected from, what came back."""

    local_port: int
    received: int
    closed_by_daemon: bool


async def play(case: Case, port: int) -> Played:
    """Write the case's reads to the daemon; read what it answers until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    local_port = int(writer.get_extra_info("sockname")[1])
    received = 0
    closed = False
    try:
        for index, data in enumerate(case.reads):
            writer.write(data)
            await writer.drain()
            if case.lockstep and index < len(case.reads) - 1:
                answer = await _read(reader, _ANSWER_WAIT)
                if answer is None:
                    closed = True
                    break
                received += len(answer)
        if not closed and case.index % 5:  # now and then the daemon ends it by itself
            writer.write_eof()
        while not closed:
            answer = await _read(reader, _END_WAIT)
            if not answer:
                closed = answer is None
                break
            received += len(answer)
    except OSError:
        closed = True  # (reset by the daemon: it closed first)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return Played(local_port, received, closed)


async def _read(reader: asyncio.StreamReader, wait: float) -> bytes | None:
    """What the daemon sends within ``wait`` seconds (b"": nothing), None at its EOF."""
    try:
        data = await asyncio.wait_for(reader.read(1 << 16), wait)
    except TimeoutError:
        return b""
    return data if data else None


# --- the run ---------------------------------------------------------------------------


@dataclass(slots=True)
class LiveReport:
    cases: int = 0
    seconds: float = 0.0
    daemon_up: bool = False
    exit_code: int | None = None
    rss_before_kib: int = 0
    rss_after_kib: int = 0
    fds_before: int = 0
    fds_after: int = 0
    closed_by_daemon: int = 0
    log: LogReport = field(default_factory=LogReport)
    store: StoreReport = field(default_factory=StoreReport)
    delivered_after: bool = False
    connect_errors: int = 0
    api_problems: list[str] = field(default_factory=list)

    def problems(self, *, max_rss_growth_kib: int = 64 * 1024, max_fd_growth: int = 4) -> list[str]:
        """What the run found wrong (empty: nothing)."""
        found = []
        if not self.daemon_up:
            found.append("the daemon is down after the fuzz")
        if self.exit_code not in (0, None) or (self.exit_code is None and self.daemon_up):
            found.append(f"the daemon's exit code on SIGTERM: {self.exit_code}")
        for traceback in self.log.tracebacks:
            case = traceback.case.describe() if traceback.case else "no case found"
            found.append(f"traceback {traceback.error} after {traceback.message!r} ({case})")
        found += [f"CRITICAL: {line}" for line in self.log.critical]
        if self.store.invented:
            found.append(f"mailboxes of users nobody configured: {self.store.invented}")
        if not self.delivered_after:
            found.append("the valid transfer after the fuzz was not delivered")
        found += self.api_problems
        if self.fds_after > self.fds_before + max_fd_growth:
            found.append(f"open descriptors {self.fds_before} -> {self.fds_after}")
        if self.rss_after_kib > self.rss_before_kib + max_rss_growth_kib:
            found.append(f"resident memory {self.rss_before_kib} -> {self.rss_after_kib} KiB")
        return found

    def table(self) -> str:
        rate = self.cases / self.seconds if self.seconds else 0.0
        levels = ", ".join(f"{level} {self.log.levels[level]}" for level in LEVELS)
        stored = ", ".join(f"{user}: {n}" for user, n in sorted(self.store.mailboxes.items()))
        audit = ", ".join(f"{event} {n}" for event, n in sorted(self.store.audit.items()))
        rows = [
            ("cases (connections)", f"{self.cases} in {self.seconds:.1f} s"),
            ("connections/s", f"{rate:.1f}"),
            ("closed by the daemon", str(self.closed_by_daemon)),
            ("daemon up", "yes" if self.daemon_up else "NO"),
            ("exit code on SIGTERM", str(self.exit_code)),
            ("RSS before / after", f"{self.rss_before_kib} / {self.rss_after_kib} KiB"),
            ("open fds before / after", f"{self.fds_before} / {self.fds_after}"),
            ("log lines", levels),
            ("tracebacks", str(len(self.log.tracebacks))),
            ("messages taken in", str(self.store.messages)),
            ("mailbox entries", stored or "none"),
            ("mailboxes nobody configured", ", ".join(self.store.invented) or "none"),
            ("audit events", audit or "none"),
            ("valid transfer afterwards", "delivered" if self.delivered_after else "NOT delivered"),
            ("local API probes", "; ".join(self.api_problems) or f"{len(_API_PROBES)} refused"),
        ]
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


async def _valid_transfer(daemon: Daemon, local_id: str) -> None:
    """Bind as the fuzz peer with the MTA's own initiator, transfer one message, release."""
    argument = MTABindArgument(initiator_name=FUZZ_PEER, password=FUZZ_PASSWORD)
    link, _ = await open_link("127.0.0.1", daemon.port, argument, timeouts=Timeouts(bind=20))
    await link.transfer(message_apdu(local_id), timeout=30)
    await link.release(timeout=10)


async def _delivered(daemon: Daemon, local_id: str) -> bool:
    deadline = time.monotonic() + _DELIVERY_TIMEOUT
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            response, _ = await call_async(daemon.socket, {"op": "inbox", "user": ALICE})
            if any(local_id in m["mts_identifier"] for m in response.get("messages", [])):
                return True
        await asyncio.sleep(0.2)
    return False


async def run_live(
    cases: Iterable[Case],
    directory: Path,
    *,
    concurrency: int = 8,
    progress: bool = False,
) -> LiveReport:
    """Start a daemon in ``directory``, play ``cases`` to it, check it, stop it."""
    daemon = Daemon(directory)
    report = LiveReport()
    by_port: dict[int, Case] = {}
    await daemon.start()
    try:
        await _valid_transfer(daemon, "warm-up")  # (the ASN.1 specification is compiled)
        report.rss_before_kib, report.fds_before = daemon.rss_kib(), daemon.open_fds()
        queue = iter(cases)
        started = time.monotonic()

        async def worker() -> None:
            for case in queue:
                try:
                    played = await play(case, daemon.port)
                except OSError:
                    report.connect_errors += 1
                    continue
                by_port[played.local_port] = case
                report.cases += 1
                report.closed_by_daemon += played.closed_by_daemon
                if progress and report.cases % 1000 == 0:
                    print(f"  {report.cases} cases, {time.monotonic() - started:.0f} s", flush=True)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        report.seconds = time.monotonic() - started
        local_id = f"fuzz-after-{report.cases}"
        with contextlib.suppress(Exception):
            await _valid_transfer(daemon, local_id)
        report.delivered_after = await _delivered(daemon, local_id)
        report.api_problems = await probe_local_api(daemon.socket)
        await _settle(daemon, report.fds_before)
        report.rss_after_kib, report.fds_after = daemon.rss_kib(), daemon.open_fds()
        report.daemon_up = daemon.running and await daemon.api_answers()
    finally:
        report.exit_code = await daemon.stop()
    report.log = read_log(daemon.log, by_port)
    report.store = read_store(daemon.database)
    return report


_SUBMIT = (
    b'{"op": "submit", "originator": "%s", "recipients": ["%s"], "content_type": 22, '
    b'"%%s": %%s, "content_length": 2}\n\x30\x00' % (ALICE.encode(), ALICE.encode())
)
_API_PROBES = {
    "a line of 60000 nested arrays": b"[" * 60_000 + b"\n",
    "a user nested 20000 deep": b'{"op": "inbox", "user": %s}\n' % (b"[" * 20_000 + b"]" * 20_000),
    "a user nested 900 deep": b'{"op": "inbox", "user": %s1%s}\n' % (b'{"a": ' * 900, b"}" * 900),
    "a precedence nested 900 deep": _SUBMIT % (b"precedence", b"[" * 900 + b"]" * 900),
    "a time nested 900 deep": _SUBMIT % (b"deferred_delivery_time", b"[" * 900 + b"]" * 900),
    "octets that are not UTF-8": b'{"op": "\xff\xfe"}\n',
    "a content_length beyond the limit": b'{"op": "submit", "content_length": 99999999999}\n',
    "no op": b'{"user": "x"}\n',
}
"""Requests the local API must refuse with an answer, never with a traceback."""


async def probe_local_api(socket: Path) -> list[str]:
    """Each of :data:`_API_PROBES` on a connection of its own; what went wrong."""
    found = []
    for name, request in _API_PROBES.items():
        try:
            reader, writer = await asyncio.open_unix_connection(str(socket), limit=1 << 20)
            writer.write(request)
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), 10)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        except (OSError, TimeoutError) as error:
            found.append(f"local API, {name}: {error!r}")
            continue
        answer = json.loads(line) if line.strip() else None
        if not isinstance(answer, dict) or answer.get("ok") is not False:
            found.append(f"local API, {name}: answered {line[:200]!r}")
        elif "internal error" in str(answer.get("error")):
            found.append(f"local API, {name}: {answer['error']}")
    return found


async def _settle(daemon: Daemon, fds: int) -> None:
    """Give the daemon a moment to close what the last connections left open."""
    deadline = time.monotonic() + 10
    while daemon.running and daemon.open_fds() > fds and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
