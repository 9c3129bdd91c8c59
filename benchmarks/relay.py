"""Relay benchmark: user -> MTA A -> MTA B -> B's message store, every step durable.

    python benchmarks/relay.py [--messages 2000] [--large 50] [--backlog 2000] [--flash 100]
                               [--huge 0] [--routine-connections N] [--tree DIR] [--json]

Two ``x400-mta`` processes on loopback (SQLite stores, WAL, synchronous FULL: every
acknowledgement follows a disk flush), configured like the two-site example (four slots,
DSCP CS0..CS3).  The benchmark submits through A's local API from several concurrent
clients, each on a connection it keeps (as a user agent does), and watches B's local API
until every message is in B's store.

Rows:

* throughput at 1 KB (routine), over ``--messages`` messages;
* throughput at 1 MB (routine), over ``--large`` messages;
* flash end-to-end latency, idle and with ``--backlog`` routine messages queued at A
  ahead of it (the routine backlog is submitted while B is stopped, then B is started and
  the flash messages are sent one by one), from the submission at A until the delivery is
  committed to B's store (the time B's event loop sees the commit, as a user agent
  waiting on B's mailbox is told of it); and, for comparison with earlier figures, until
  B received the transfer (the delivery stamp in B's mailbox, taken before B's commit);
* with ``--huge N``, throughput at 10 MB (routine), N messages from one client one after
  the other, in a pair of daemons of its own so that their peak memory is this row's.

Each row runs in two fresh daemons; each daemon's peak resident set size over its life
(proc(5) VmHWM) is read just before it is stopped and reported with the row.

``--json`` prints one JSON object with every figure instead of the Markdown table
(:mod:`benchmarks.compare` reads it); ``--tree DIR`` runs the daemons of another checkout
(``python -m`` its daemon module, with DIR first on ``PYTHONPATH``) under this checkout's
driver and interpreter.

Targets: >= 600 msgs/s at 1 KB, >= 100 MB/s at 1 MB, flash p99 <= 50 ms with 10,000
routine queued, idle <= 4 ms; peak RSS of each MTA during a 10 MB relay <= 100 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from client.api import AsyncConnection, call_async  # noqa: E402
from client.x400 import canned_body, text_ipm  # noqa: E402
from p1.ipms.ipm import P772_CONTENT_TYPE  # noqa: E402
from p1.mts.orname import parse_orname  # noqa: E402
from tests.fuzz.live import daemon_module  # noqa: E402

USER_A = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith"
USER_B = "C=GB;ADMD= ;PRMD=SITEB;O=FOB;S=Jones"
DUTY_B = "C=GB;ADMD= ;PRMD=SITEB;O=FOB;S=Duty"


def local_users(domain: str) -> list[str]:
    """The users (``local_users``) of the site of ``domain``: those messages and reports
    are sent to."""
    return [user for user in (USER_A, USER_B, DUTY_B) if user.startswith(domain + ";")]


"""The flash messages' recipient: a mailbox of their own, watched as ``x400 inbox
--follow`` does (the local API's ``wait``), so that the watch is woken by them alone."""
CLIENTS = 8
EXAMPLE = Path("config") / "examples" / "site-a.toml"
"""The example whose routine slot the benchmark's is, within a checkout."""


def shipped_connections(tree: Path) -> int:
    """Most connections of the routine slot in ``tree``'s config/examples: each commit is
    measured as it ships."""
    with (tree / EXAMPLE).open("rb") as file:
        slots = tomllib.load(file)["peers"][0]["slots"]
    (routine,) = [s for s in slots if "routine" in s["precedences"]]
    return int(routine.get("max_connections", 1))


ROUTINE_CONNECTIONS = shipped_connections(ROOT)
"""Most connections of the routine slot in this checkout's config/examples."""
FLASH_SPACING = 0.1
"""Seconds between two flash samples."""
MTA = str(Path(sys.executable).with_name("x400-mta"))
HUGE = 10 * 1024 * 1024
"""Body octets of a ``--huge`` message."""


_RESERVED: list[socket.socket] = []
"""The sockets holding the ports :func:`_free_ports` gave out, open until the benchmark ends."""


def _free_ports(count: int) -> list[int]:
    """``count`` distinct ports on 127.0.0.1, reserved for the daemons until this process
    ends (the two daemons must know each other's ports before either starts, and the
    configuration does not take port 0).

    Each is held by a socket bound with ``SO_REUSEADDR`` that never listens: on Linux no
    other bind to port 0 and no outgoing connection is given the port, while a daemon,
    whose asyncio listener sets ``SO_REUSEADDR`` too, can still listen on it.
    """
    sockets = [socket.socket() for _ in range(count)]
    _RESERVED.extend(sockets)
    for sock in sockets:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
    return [int(sock.getsockname()[1]) for sock in sockets]


def _config(
    name: str,
    domain: str,
    peer: str,
    peer_domain: str,
    ports: dict[str, int],
    peer_ports: dict[str, int],
    routine_connections: int,
) -> str:
    listeners = "".join(
        f'[[listeners]]\naddress = "127.0.0.1"\nport = {ports[d]}\ndscp = "{d}"\n\n'
        for d in ("CS0", "CS1", "CS2", "CS3")
    )
    slots = [
        (["override", "flash"], "CS3", "permanent", 1),
        (["immediate"], "CS2", "permanent", 1),
        (["priority"], "CS1", "permanent", 1),
        (["routine", "deferred"], "CS0", "on-demand", routine_connections),
    ]
    slot_text = "".join(
        f"[[peers.slots]]\nprecedences = {json.dumps(p)}\nport = {peer_ports[d]}\n"
        f'dscp = "{d}"\nmode = "{m}"\nmax_connections = {n}\nbacklog_threshold = 20\n\n'
        for p, d, m, n in slots
    )
    return (
        f'name = "{name}"\nglobal_domain = "{domain}"\npassword = "pw-{name}"\n'
        f'state_dir = "state-{name}"\nlocal_domains = ["{domain}"]\nlog_level = "warning"\n'
        f"local_users = {json.dumps(local_users(domain))}\n\n"
        f'{listeners}[[peers]]\nname = "{peer}"\nhost = "127.0.0.1"\n'
        f'routes = ["{peer_domain}"]\npeer_password = "pw-{peer}"\n\n{slot_text}'
    )


class Site:
    """One MTA process and its local API: the installed ``x400-mta``, or with ``tree`` the
    daemon module of that checkout."""

    def __init__(self, folder: Path, name: str, text: str, *, tree: Path | None = None) -> None:
        self.config = folder / f"{name}.toml"
        self.config.write_text(text)
        self.socket = folder / f"state-{name}" / "control.sock"
        self.log = folder / f"{name}.log"
        self.tree = tree
        self.process: subprocess.Popen[bytes] | None = None
        self.peak_rss_mib: float | None = None
        """The process's peak RSS (VmHWM), MiB, read as it was stopped."""

    async def start(self) -> None:
        command, environment = [MTA, "-c", str(self.config)], dict(os.environ)
        if self.tree is not None:
            # -P: python -m would put the working directory (a checkout, often this one)
            # before PYTHONPATH, and run its daemon instead of the tree's.
            module = daemon_module(self.tree)
            command = [sys.executable, "-P", "-m", module, "-c", str(self.config)]
            environment["PYTHONPATH"] = str(self.tree)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, stderr=log, env=environment)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.process.poll() is None:
            with contextlib.suppress(OSError):
                await api(self.socket, {"op": "status"})
                return
            await asyncio.sleep(0.05)
        ended = self.process.poll()
        how = "did not answer in 30 s" if ended is None else f"ended with status {ended}"
        raise RuntimeError(
            f"{self.config.name}: the daemon {how}; its log ends:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the daemon's log (its standard error)."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        if self.process is not None:
            with contextlib.suppress(OSError, RuntimeError):  # (it ended on its own)
                self.peak_rss_mib = peak_rss_mib(self.process.pid)
            self.process.terminate()
            self.process.wait(timeout=60)
            self.process = None

    async def delivered(self) -> int:
        response = await api(self.socket, {"op": "status"})
        return int(response["recipients"].get("delivered", 0))


async def api(path: Path, request: dict[str, Any], payload: bytes = b"") -> dict[str, Any]:
    """One local API request; its answer."""
    response, _ = await call_async(path, request, payload)
    return response


def content(size: int, precedence: str, to: str = USER_B) -> bytes:
    return text_ipm(
        parse_orname(USER_A), parse_orname(to), f"bench {precedence}", canned_body(size)
    )


def submission(precedence: str, to: str = USER_B) -> dict[str, Any]:
    return {
        "op": "submit",
        "originator": USER_A,
        "recipients": [to],
        "precedence": precedence,
        "content_type": P772_CONTENT_TYPE,
    }


async def submit_many(
    site: Site, count: int, size: int, precedence: str, *, clients: int = CLIENTS
) -> None:
    body = content(size, precedence)
    request = submission(precedence)
    numbers = iter(range(count))

    async def client() -> None:
        connection = await AsyncConnection.open(site.socket)  # kept, as a user agent does
        try:
            for _ in numbers:
                await connection.call(request, body)
        finally:
            await connection.close()

    await asyncio.gather(*(client() for _ in range(clients)))


async def wait_delivered(site: Site, target: int, *, poll: float = 0.05) -> float:
    while (await site.delivered()) < target:
        await asyncio.sleep(poll)
    return time.monotonic()


@contextlib.asynccontextmanager
async def two_sites(
    routine_connections: int = ROUTINE_CONNECTIONS, *, extra: str = "", tree: Path | None = None
) -> AsyncIterator[tuple[Site, Site]]:
    """Sites A and B, not started, in a folder removed afterwards; ``extra`` is added to
    both configuration files; ``tree`` is the checkout whose daemons run (see :class:`Site`)."""
    with tempfile.TemporaryDirectory(prefix="aiox400-relay-") as tmp:
        folder = Path(tmp)
        ports = iter(_free_ports(8))
        pa = {d: next(ports) for d in ("CS0", "CS1", "CS2", "CS3")}
        pb = {d: next(ports) for d in ("CS0", "CS1", "CS2", "CS3")}
        a = Site(
            folder,
            "MTA-A",
            _config(
                "MTA-A",
                "C=GB;ADMD= ;PRMD=SITEA",
                "MTA-B",
                "C=GB;ADMD= ;PRMD=SITEB",
                pa,
                pb,
                routine_connections,
            )
            + extra,
            tree=tree,
        )
        b = Site(
            folder,
            "MTA-B",
            _config(
                "MTA-B",
                "C=GB;ADMD= ;PRMD=SITEB",
                "MTA-A",
                "C=GB;ADMD= ;PRMD=SITEA",
                pb,
                pa,
                routine_connections,
            )
            + extra,
            tree=tree,
        )
        try:
            yield a, b
        finally:
            a.stop()
            b.stop()


@dataclass(frozen=True)
class Peaks:
    """Peak resident set size (VmHWM) of each daemon over its life, MiB."""

    a: float
    b: float

    @classmethod
    def of(cls, a: Site, b: Site) -> Peaks:
        """The peaks read as ``a`` and ``b`` were stopped."""
        if a.peak_rss_mib is None or b.peak_rss_mib is None:
            raise RuntimeError("a daemon ended before it was stopped: no peak RSS")
        return cls(a.peak_rss_mib, b.peak_rss_mib)


@dataclass(frozen=True)
class Throughput:
    """A throughput row: rates from the first submission to the last stored at B."""

    messages_per_second: float
    mb_per_second: float
    """Body octets, in units of 10**6."""
    peaks: Peaks


async def throughput(
    count: int,
    size: int,
    routine_connections: int = ROUTINE_CONNECTIONS,
    *,
    clients: int = CLIENTS,
    tree: Path | None = None,
) -> Throughput:
    """``count`` routine messages of ``size`` body octets from ``clients`` clients, from
    the first submission to the last stored at B, in daemons of their own."""
    async with two_sites(routine_connections, tree=tree) as (a, b):
        await b.start()
        await a.start()
        await permanent_slots_ready(a)  # measured from steady state, not from start-up
        started = time.monotonic()
        await submit_many(a, count, size, "routine", clients=clients)
        ended = await wait_delivered(b, count)
    seconds = ended - started
    return Throughput(count / seconds, count * size / seconds / 1e6, Peaks.of(a, b))


@dataclass(frozen=True)
class Latencies:
    """Flash latencies in milliseconds, one per sample, in the order sent."""

    stored: list[float]
    """Until the delivery was committed to B's store (``wait``'s ``stored_at``)."""
    received: list[float]
    """Until B received the transfer (its mailbox's delivery stamp, before its commit)."""
    late: int
    """Samples whose commit the watch saw only in a later answer: timed at that answer,
    an upper bound (0 unless B's local API fell behind)."""
    peaks: Peaks


async def flash_latency(
    backlog: int,
    samples: int,
    routine_connections: int = ROUTINE_CONNECTIONS,
    *,
    tree: Path | None = None,
) -> Latencies:
    """Latencies of ``samples`` flash messages from A to B's store.

    The flash messages are sent one every ``FLASH_SPACING`` seconds while the routine
    backlog (if any) drains; a watch on B's mailbox (the ``wait`` of ``x400 inbox
    --follow``) learns when each one's delivery is committed, and the delivery stamps are
    read from B's mailbox afterwards.
    """
    async with two_sites(routine_connections, tree=tree) as (a, b):
        await a.start()
        if backlog:
            await submit_many(a, backlog, 1024, "routine")
        await b.start()
        await flash_slot_ready(a)
        body = content(1024, "flash", DUTY_B)
        request = submission("flash", DUTY_B)
        sent: dict[str, datetime] = {}
        stored: dict[str, datetime] = {}
        # The watch's first request, on its own: compiling its query in B's database thread
        # as the first flash message arrives would be timed as that message's.
        await api(b.socket, {"op": "wait", "user": DUTY_B, "after": 0, "timeout": 0})
        watch = asyncio.create_task(watch_stored(b, DUTY_B, stored))
        await asyncio.sleep(FLASH_SPACING)  # (its request waiting at B)
        connection = await AsyncConnection.open(a.socket)  # the user agent's, kept open
        try:
            for _ in range(samples):
                started = datetime.now(UTC)
                response, _ = await connection.call(request, body)
                sent[response["mts_identifier"]] = started
                await asyncio.sleep(FLASH_SPACING)  # spacing between samples, not a wait
            await all_stored(stored, samples, watch)
        finally:
            await connection.close()
            watch.cancel()
        late = await watch  # (it ends on the cancellation, with its count)
        inbox = await api(b.socket, {"op": "inbox", "user": DUTY_B})
    received = {
        m["mts_identifier"]: datetime.fromisoformat(m["delivered_at"]) for m in inbox["messages"]
    }

    def ms(at: dict[str, datetime]) -> list[float]:
        return [(at[i] - sent[i]).total_seconds() * 1000 for i in sent]

    return Latencies(stored=ms(stored), received=ms(received), late=late, peaks=Peaks.of(a, b))


async def all_stored(
    stored: dict[str, datetime], samples: int, watch: asyncio.Task[int], *, within: float = 120
) -> None:
    """Wait until the watch has seen ``samples`` flash messages stored; RuntimeError if it
    ends first or they take longer than ``within`` seconds."""
    deadline = time.monotonic() + within
    while len(stored) < samples:
        if watch.done():
            raise RuntimeError(f"the watch on B's mailbox ended: {watch.exception()!r}")
        if time.monotonic() > deadline:
            missing = samples - len(stored)
            raise RuntimeError(f"{missing} flash message(s) not stored at B within {within:g} s")
        await asyncio.sleep(0.1)


async def watch_stored(site: Site, user: str, stored: dict[str, datetime]) -> int:
    """Record, by MTS identifier, when ``site`` saw each delivery to ``user`` committed
    (until cancelled); how many were found already there when a request started (timed
    at its answer instead, an upper bound)."""
    connection = await AsyncConnection.open(site.socket)
    after, late = 0, 0
    try:
        while True:
            wait = {"op": "wait", "user": user, "after": after, "timeout": 5}
            response, _ = await connection.call(wait)
            answered = datetime.now(UTC)
            at = response["stored_at"]
            for message in response["messages"]:
                late += at is None
                stored[message["mts_identifier"]] = datetime.fromisoformat(at) if at else answered
            after = response["after"]
    except asyncio.CancelledError:
        return late
    finally:
        await connection.close()


async def flash_slot_ready(site: Site) -> None:
    """Wait until the site's flash slot holds an open, idle connection (its permanent
    connection may be waiting out a reconnection backoff after the peer started)."""
    await slots_ready(site, lambda slot: "flash" in slot["precedences"])


async def permanent_slots_ready(site: Site) -> None:
    """Wait until each permanent slot of the site holds an open, idle connection (the
    on-demand routine slot connects when the first message waits, within the run)."""
    await slots_ready(site, lambda slot: slot["mode"] == "permanent")


async def slots_ready(site: Site, wanted: Callable[[dict[str, Any]], bool]) -> None:
    while True:
        slots = (await api(site.socket, {"op": "channels"}))["slots"]
        if all(
            any(c["state"] == "idle" for c in slot["connections"]) for slot in slots if wanted(slot)
        ):
            return
        await asyncio.sleep(0.05)


def rss_mib(pid: int) -> float:
    """Resident set size of process ``pid`` (proc(5) VmRSS), MiB."""
    return _status_mib(pid, "VmRSS")


def peak_rss_mib(pid: int) -> float:
    """Peak resident set size of process ``pid`` over its life so far (proc(5) VmHWM),
    MiB."""
    return _status_mib(pid, "VmHWM")


def _status_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"process {pid} has no {field}")


def cpu_check() -> float:
    """Seconds this interpreter takes for 10 million additions in a loop.

    Printed before and after the runs: on a shared machine the CPU's speed drifts (here by
    up to 1.7x within an hour), and the figures move with it.
    """
    started = time.perf_counter()
    total = 0
    for number in range(10_000_000):
        total += number
    return time.perf_counter() - started


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile: the smallest value at least ``fraction`` of the
    values do not exceed (p99 of 100 samples is the 99th smallest, of 20 the largest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


@dataclass(frozen=True)
class Results:
    """Every row of one run, with the CPU check before and after."""

    cpu_before: float
    cpu_after: float
    small: Throughput
    large: Throughput
    idle: Latencies
    loaded: Latencies
    huge: Throughput | None


ROWS = ("kb", "mb", "idle", "queued", "huge")
"""The prefixes of the figures of each row (``--json``), in the order run."""


def figures(results: Results) -> dict[str, float]:
    """Every figure of ``results`` by the name ``--json`` gives it: rates (``kb_msgs_s``,
    ``mb_MB_s``, ``huge_MB_s``), flash latencies to stored and to received at B in ms
    (``idle_p50_ms``, ``queued_received_p99_ms`` ...), the queued p99 over the idle p99
    (``queued_over_idle_p99``), each row's peak RSS of A and B in MiB (``kb_rss_a_mib``
    ...) and the most of them outside the 10 MB row (``rss_a_mib``, ``rss_b_mib``)."""
    out: dict[str, float] = {
        "cpu_before_s": round(results.cpu_before, 3),
        "cpu_after_s": round(results.cpu_after, 3),
        "kb_msgs_s": round(results.small.messages_per_second, 1),
        "kb_MB_s": round(results.small.mb_per_second, 2),
        "mb_msgs_s": round(results.large.messages_per_second, 2),
        "mb_MB_s": round(results.large.mb_per_second, 1),
    }
    for name, latencies in (("idle", results.idle), ("queued", results.loaded)):
        for kind, values in (("", latencies.stored), ("received_", latencies.received)):
            out[f"{name}_{kind}p50_ms"] = round(statistics.median(values), 2)
            out[f"{name}_{kind}p99_ms"] = round(percentile(values, 0.99), 2)
        out[f"{name}_late"] = latencies.late
    out["queued_over_idle_p99"] = round(
        percentile(results.loaded.stored, 0.99) / percentile(results.idle.stored, 0.99), 2
    )
    rows = [results.small.peaks, results.large.peaks, results.idle.peaks, results.loaded.peaks]
    if results.huge is not None:
        out["huge_msgs_s"] = round(results.huge.messages_per_second, 3)
        out["huge_MB_s"] = round(results.huge.mb_per_second, 1)
        rows.append(results.huge.peaks)
    for row, peaks in zip(ROWS, rows, strict=False):
        out[f"{row}_rss_a_mib"] = round(peaks.a, 1)
        out[f"{row}_rss_b_mib"] = round(peaks.b, 1)
    out["rss_a_mib"] = round(max(peaks.a for peaks in rows[:4]), 1)
    out["rss_b_mib"] = round(max(peaks.b for peaks in rows[:4]), 1)
    return out


def table(args: argparse.Namespace, results: Results) -> list[str]:
    """The Markdown table of ``results``."""
    lines = [
        "| measure | result | target |",
        "|---|---:|---:|",
        f"| 1 KB messages, {args.messages} | {results.small.messages_per_second:,.0f} msgs/s"
        " | >= 600 msgs/s |",
        f"| 1 MB messages, {args.large} | {results.large.mb_per_second:,.1f} MB/s | >= 100 MB/s |",
    ]
    for name, latencies, target in (
        ("idle", results.idle, "p99 <= 4 ms"),
        (f"{args.backlog:,} routine queued", results.loaded, "p99 <= 50 ms (10,000 queued)"),
    ):
        stored, received = _p50_p99(latencies.stored), _p50_p99(latencies.received)
        lines.append(f"| flash latency, {name}, to stored at B: p50 / p99 | {stored} | {target} |")
        lines.append(f"| flash latency, {name}, to received at B: p50 / p99 | {received} | |")
    if results.huge is not None:
        rate = f"{results.huge.mb_per_second:,.1f} MB/s"
        lines.append(f"| 10 MB messages, {args.huge}, one client | {rate} | |")
    rows = [
        ("1 KB", results.small.peaks),
        ("1 MB", results.large.peaks),
        ("flash idle", results.idle.peaks),
        ("flash queued", results.loaded.peaks),
    ]
    if results.huge is not None:
        rows.append(("10 MB", results.huge.peaks))
    for name, peaks in rows:
        target = "each <= 100 MB (95.4 MiB)" if name == "10 MB" else ""
        lines.append(
            f"| peak RSS of A / B, {name} row | {peaks.a:.1f} / {peaks.b:.1f} MiB | {target} |"
        )
    return lines


async def run(args: argparse.Namespace) -> Results:
    """Every row of the benchmark, each in daemons of its own, between two CPU checks."""
    tree, connections = args.tree, args.routine_connections
    before = cpu_check()
    small = await throughput(args.messages, 1024, connections, tree=tree)
    large = await throughput(args.large, 1024 * 1024, connections, tree=tree)
    idle = await flash_latency(0, args.flash, connections, tree=tree)
    loaded = await flash_latency(args.backlog, args.flash, connections, tree=tree)
    huge = None
    if args.huge:
        huge = await throughput(args.huge, HUGE, connections, clients=1, tree=tree)
    return Results(before, cpu_check(), small, large, idle, loaded, huge)


async def main(args: argparse.Namespace) -> None:
    if args.tree is None and not os.access(MTA, os.X_OK):
        raise SystemExit(f"{MTA} is missing: run 'make install' first")
    if args.tree is not None and not (args.tree / "mta").is_dir():
        raise SystemExit(f"--tree {args.tree}: no mta/ there, not a checkout of this project")
    if args.routine_connections is None:
        args.routine_connections = shipped_connections(args.tree or ROOT)
    if not args.json:
        print(
            f"aiox400 relay benchmark (Python {sys.version.split()[0]}, {os.cpu_count()} CPUs,"
            f" SQLite, synchronous FULL; routine slot of up to {args.routine_connections}"
            " connections)\n"
        )
    results = await run(args)
    if args.json:
        options = {k: v for k, v in vars(args).items() if k not in ("json", "tree")}
        tree = str(args.tree.resolve()) if args.tree is not None else str(ROOT)
        print(json.dumps({"tree": tree, **options, **figures(results)}))
        return
    print(
        f"CPU check (10 million additions): {results.cpu_before:.2f} s before,"
        f" {results.cpu_after:.2f} s after\n"
    )
    print("\n".join(table(args, results)))
    for name, latencies in (("idle", results.idle), ("queued", results.loaded)):
        if latencies.late:
            print(f"\n{name}: {latencies.late} sample(s) timed at the watch's answer (upper bound)")


def _p50_p99(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} / {percentile(values, 0.99):.1f} ms"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--messages", type=int, default=2000, help="1 KB messages of the throughput run"
    )
    parser.add_argument("--large", type=int, default=50, help="1 MB messages of the MB/s run")
    parser.add_argument(
        "--backlog", type=int, default=2000, help="routine messages queued ahead of flash"
    )
    parser.add_argument(
        "--flash", type=int, default=100, help="flash samples per latency row (p99: nearest rank)"
    )
    parser.add_argument(
        "--routine-connections",
        type=int,
        default=None,
        help="most connections of the routine slot (default: as in the measured tree's"
        " config/examples); P1 over RTSE carries one transfer at a time per connection",
    )
    parser.add_argument(
        "--huge",
        type=int,
        default=0,
        help="10 MB messages of a row of their own, from one client (default 0: no such row)",
    )
    parser.add_argument(
        "--tree", type=Path, default=None, help="run the daemons of the checkout DIR"
    )
    parser.add_argument(
        "--json", action="store_true", help="one JSON object with every figure, no table"
    )
    try:
        asyncio.run(main(parser.parse_args()))
    except RuntimeError as error:  # a daemon that did not start or deliver: no traceback
        raise SystemExit(f"relay.py: {error}") from None
