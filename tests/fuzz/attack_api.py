"""Local API abuse: an account hammers ``x400-mta``'s control socket while root asks it.

The daemon (:class:`ApiDaemon`, the fuzz daemon of :mod:`tests.fuzz.live` with
``[access]``: Alice is the account ``daemon``, the socket's folder is open to all) is
attacked from a forked process that has become another account (``nobody``, unmapped,
by default).  The attacker, driven by a seeded :class:`random.Random`:

- holds connections open (as many as the socket takes, up to :data:`HELD`);
- on some of them announces a message of ``max_message_size`` and sends all of it but
  the last octet, so that the daemon, reading it, would hold it;
- sends malformed requests: integers of thousands of digits, NaN, JSON nested past the
  parser's depth, octets that are not UTF-8, lines past the length limit, wrong field
  types for every operation, content lengths that lie.

Meanwhile the test's own process (root, an operator) asks ``status`` over and over and
the daemon's resident memory is sampled.  :class:`ApiReport` says how many of root's
requests were answered, how long they took, how far the memory grew, and what the log
holds (tracebacks, ERROR lines).

Public API::

    ApiDaemon(directory, *, users=None)     .start() .stop() .rss_kib()  (see live.Daemon)
    Attacker(uid, gid, seed, rounds, hold_seconds)
    main(argv)   the long run: python -m tests.fuzz.attack_api --rounds 5000 --hold 30
    await attack(daemon, attacker) -> ApiReport   (starts and stops the daemon)
            .problems(max_rss_growth_kib) .table()
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path

from client.api import call_async
from tests.fuzz.corpus import ALICE
from tests.fuzz.live import Daemon, read_log

HELD = 72
"""Connections the attacker tries to hold (more than ``max_api_connections``)."""
PENDING = 8
"""Connections on which it announces a message of the largest size."""
MESSAGE_SIZE = 64 * 1024 * 1024
"""The daemon's ``max_message_size`` (its default)."""
_CHUNK = 1024 * 1024
_OPS = (
    "submit",
    "status",
    "queue",
    "qshape",
    "messages",
    "channels",
    "hold",
    "release",
    "queue_delete",
    "flush",
    "track",
    "config",
    "quarantine",
    "quarantine_read",
    "quarantine_delete",
    "inbox",
    "wait",
    "read",
    "delete",
)
_FIELDS = (
    "id",
    "ids",
    "user",
    "after",
    "timeout",
    "limit",
    "originator",
    "recipients",
    "precedence",
    "content_type",
    "message_ids",
    "mts_identifiers",
    "peer",
    "all",
    "deferred_delivery_time",
    "latest_delivery_time",
    "mts_identifier",
    "unread_only",
)


class ApiDaemon(Daemon):
    """The fuzz daemon with ``[access]``: Alice is the account ``daemon``; its folder
    (and so its control socket) reachable by every account."""

    def __init__(self, directory: Path, *, access: bool = True) -> None:
        super().__init__(directory)
        self.access = access

    def _settings(self) -> dict[str, object]:
        settings = super()._settings()
        if self.access:
            settings["access"] = {"users": {"daemon": ALICE}}
        return settings

    async def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.directory.chmod(0o755)
        await super().start()


@dataclass(frozen=True, slots=True)
class Attacker:
    """Who attacks, how hard, and for how long it holds what it got."""

    uid: int = 65534
    gid: int = 65534
    seed: int = 1
    rounds: int = 200
    """Malformed requests sent, each on a connection of its own."""
    hold_seconds: float = 2.0
    """How long the connections are held once the malformed requests are sent."""


@dataclass(slots=True)
class Attacked:
    """What the attacker saw (sent back from its process)."""

    held: int = 0
    """Connections the daemon kept open (it had not closed them when the attack ended)."""
    pending_sent: int = 0
    """Octets of announced messages the daemon took off the socket."""
    answered: int = 0
    """Malformed requests answered with a refusal."""
    unanswered: int = 0
    error: str = ""


@dataclass(slots=True)
class ApiReport:
    attacked: Attacked
    status_ok: int = 0
    status_failed: int = 0
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    rss_before_kib: int = 0
    rss_peak_kib: int = 0
    tracebacks: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    daemon_up: bool = False

    def problems(self, *, max_rss_growth_kib: int) -> list[str]:
        found = [f"traceback: {t}" for t in self.tracebacks]
        found += [f"ERROR line: {e}" for e in self.errors]
        if self.status_failed:
            found.append(f"root's status refused or failed {self.status_failed} times")
            found += self.failures[:3]
        if not self.status_ok:
            found.append("root's status was never answered")
        growth = self.rss_peak_kib - self.rss_before_kib
        if growth > max_rss_growth_kib:
            found.append(f"daemon memory grew by {growth} KiB (bound {max_rss_growth_kib})")
        if not self.daemon_up:
            found.append("the daemon is down")
        if self.attacked.error:
            found.append(f"the attacker failed: {self.attacked.error}")
        return found

    def table(self) -> str:
        latencies = sorted(self.latencies) or [0.0]
        rows = [
            ("attacker: connections held", str(self.attacked.held)),
            ("attacker: content octets taken", str(self.attacked.pending_sent)),
            (
                "attacker: requests answered / not",
                f"{self.attacked.answered} / {self.attacked.unanswered}",
            ),
            ("root status answered / failed", f"{self.status_ok} / {self.status_failed}"),
            (
                "root status latency median / max",
                f"{statistics.median(latencies) * 1000:.1f} / {latencies[-1] * 1000:.1f} ms",
            ),
            (
                "daemon RSS before / peak",
                f"{self.rss_before_kib // 1024} / {self.rss_peak_kib // 1024} MiB",
            ),
            ("tracebacks / ERROR lines", f"{len(self.tracebacks)} / {len(self.errors)}"),
        ]
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"  {name:<{width}}  {value}" for name, value in rows)


# --- the attacker's process ------------------------------------------------------------


def _malformed(rng: random.Random) -> bytes:
    """One malformed request: its line and what follows it."""
    op = rng.choice(_OPS)
    kind = rng.randrange(9)
    if kind == 0:
        return b'{"op": "%s", "id": %s}\n' % (op.encode(), b"9" * rng.choice((20, 5000, 60000)))
    if kind == 1:
        return b'{"op": "%s", "timeout": %s}\n' % (op.encode(), rng.choice((b"NaN", b"1e999")))
    if kind == 2:
        depth = rng.choice((100, 2000, 30000))
        return b'{"op": "%s", "x": %s%s}\n' % (op.encode(), b"[" * depth, b"]" * depth)
    if kind == 3:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))) + b"\n"
    if kind == 4:
        return b'{"op": "status", "pad": "' + b"x" * 70_000 + b'"}\n'
    if kind == 5:  # a content length that lies: more than is sent
        return b'{"op": "submit", "content_length": %d}\nabc' % rng.randrange(4, 10_000_000)
    if kind == 6:
        return b'{"op": "submit", "content_length": %d}\n' % (2**30 + rng.randrange(2**32))
    values: list[object] = [None, True, -1, 2**63 - 1, -(2**63), 1.5, "", "x" * 5000, [], {}]
    value = rng.choice([*values, [[[]]], "C=ZZ"])
    request: dict[str, object] = {"op": op, rng.choice(_FIELDS): value}
    if kind == 7:
        request[rng.choice(_FIELDS)] = [value] * rng.randrange(1, 1000)
    return json.dumps(request).encode() + b"\n"


def _connect(path: str) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def _closed_by_daemon(sock: socket.socket) -> bool:
    """Whether the daemon closed (or answered and closed) ``sock``."""
    sock.setblocking(False)
    try:
        data = sock.recv(65536)
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        sock.setblocking(True)
    return data == b"" or data.endswith(b"\n")


def _send_pending(sock: socket.socket) -> int:
    """Announce a message of the largest size and send all but its last octet; the
    octets the daemon took."""
    sent = 0
    try:
        sock.sendall(b'{"op": "submit", "content_type": 22, "content_length": %d}\n' % MESSAGE_SIZE)
        sock.settimeout(5.0)
        chunk = b"\x00" * _CHUNK
        while sent < MESSAGE_SIZE - 1:
            sent += sock.send(chunk[: min(_CHUNK, MESSAGE_SIZE - 1 - sent)])
    except OSError:
        pass
    finally:
        sock.settimeout(None)
    return sent


def _request(path: str, data: bytes, outcome: Attacked) -> None:
    sock = _connect(path)
    if sock is None:
        outcome.unanswered += 1
        return
    with sock:
        sock.settimeout(10.0)
        with contextlib.suppress(OSError):  # closed early: the answer is still there
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        try:
            answer = sock.makefile("rb").readline()
        except OSError:
            answer = b""
    if answer.startswith(b'{"ok": false'):
        outcome.answered += 1
    else:
        outcome.unanswered += 1


def _attack(path: str, attacker: Attacker, pipe: Connection) -> None:
    """The attacker's process: become the account, attack, report, hold, then go."""
    outcome = Attacked()
    held: list[socket.socket] = []
    try:
        os.setgroups([])
        os.setgid(attacker.gid)
        os.setuid(attacker.uid)
        rng = random.Random(attacker.seed)
        for index in range(HELD):
            sock = _connect(path)
            if sock is None:
                break
            held.append(sock)
            if index < PENDING:
                outcome.pending_sent += _send_pending(sock)
        for _ in range(attacker.rounds):
            _request(path, _malformed(rng), outcome)
        outcome.held = sum(1 for sock in held if not _closed_by_daemon(sock))
    except BaseException as error:  # reported to the test, which fails with it
        outcome.error = repr(error)
    pipe.send(outcome)
    with contextlib.suppress(EOFError):
        pipe.poll(attacker.hold_seconds + 60.0)
    for sock in held:
        sock.close()


# --- the attack as the test sees it ------------------------------------------------------


async def attack(daemon: ApiDaemon, attacker: Attacker) -> ApiReport:
    """Start ``daemon``, run ``attacker`` against it while root asks ``status``; the
    daemon is stopped at the end and its log read."""
    await daemon.start()
    deadline = time.monotonic() + 60.0
    while not await daemon.api_answers():  # a first answer: the daemon has settled
        if time.monotonic() > deadline:
            raise RuntimeError(f"the daemon's local API does not answer: {daemon.log}")
        await asyncio.sleep(0.05)
    rss_before = daemon.rss_kib()
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe()
    process = context.Process(target=_attack, args=(str(daemon.socket), attacker, child))
    process.start()
    child.close()
    report = ApiReport(Attacked(), rss_before_kib=rss_before, rss_peak_kib=rss_before)
    try:
        done = asyncio.get_running_loop().run_in_executor(None, _receive, parent)
        while not done.done():
            await _ask(daemon, report)
        report.attacked = await done
        deadline = time.monotonic() + attacker.hold_seconds
        while time.monotonic() < deadline:
            await _ask(daemon, report)
        report.daemon_up = daemon.running and await daemon.api_answers()
    finally:
        with contextlib.suppress(OSError):
            parent.send("stop")
        await asyncio.to_thread(process.join, 60)
        if process.is_alive():
            process.kill()
        await daemon.stop()
    log = read_log(daemon.log, {})
    report.tracebacks = [f"{t.error} after {t.message!r}" for t in log.tracebacks]
    report.errors = log.errors
    return report


def _receive(pipe: Connection) -> Attacked:
    if not pipe.poll(600):
        return Attacked(error="the attacker did not report within 600 s")
    outcome: Attacked = pipe.recv()
    return outcome


async def _ask(daemon: ApiDaemon, report: ApiReport) -> None:
    """One ``status`` as root, timed; the daemon's memory sampled after it."""
    started = time.monotonic()
    try:
        answer = await _status(daemon)
    except Exception as error:  # counted and shown: the finding is whether root gets in
        report.status_failed += 1
        report.failures.append(repr(error))
    else:
        if answer.get("ok") is True:
            report.status_ok += 1
            report.latencies.append(time.monotonic() - started)
        else:
            report.status_failed += 1
            report.failures.append(str(answer.get("error")))
    report.rss_peak_kib = max(report.rss_peak_kib, daemon.rss_kib())
    await asyncio.sleep(0.05)


async def _status(daemon: ApiDaemon) -> dict[str, object]:
    answer, _ = await asyncio.wait_for(call_async(daemon.socket, {"op": "status"}), 30)
    return answer


def main(argv: list[str] | None = None) -> int:
    """The long run: ``python -m tests.fuzz.attack_api --rounds 5000 --hold 30``."""
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.attack_api")
    parser.add_argument("--rounds", type=int, default=5000, help="malformed requests sent")
    parser.add_argument("--seed", type=int, default=1, help="the random seed (1)")
    parser.add_argument("--hold", type=float, default=30.0, help="seconds to hold after")
    parser.add_argument("--uid", type=int, default=65534, help="the attacker's uid (nobody)")
    parser.add_argument("--gid", type=int, default=65534, help="the attacker's gid")
    parser.add_argument("--no-access", action="store_true", help="run without [access]")
    args = parser.parse_args(argv)
    directory = Path(tempfile.mkdtemp(prefix="aiox400-api-abuse-", dir="/tmp"))
    attacker = Attacker(args.uid, args.gid, args.seed, args.rounds, args.hold)
    report = asyncio.run(attack(ApiDaemon(directory, access=not args.no_access), attacker))
    print(f"local API abuse, {args.rounds} requests, seed {args.seed}, in {directory}")
    print(report.table())
    problems = report.problems(max_rss_growth_kib=3 * MESSAGE_SIZE // 1024)
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
