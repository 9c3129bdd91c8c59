"""Relay benchmark: user -> MTA A -> MTA B -> B's message store, every step durable.

    python benchmarks/relay.py [--messages 2000] [--large 50] [--backlog 2000] [--flash 100]
                               [--routine-connections 2]

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
  B received the transfer (the delivery stamp in B's mailbox, taken before B's commit).

Targets: >= 600 msgs/s at 1 KB, >= 100 MB/s at 1 MB, flash p99 <= 50 ms with 10,000
routine queued, idle <= 4 ms.
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
ROUTINE_CONNECTIONS = 2
"""Default most connections of the routine slot, as in config/examples
(--routine-connections)."""
FLASH_SPACING = 0.1
"""Seconds between two flash samples."""
MTA = str(Path(sys.executable).with_name("x400-mta"))


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
    """One MTA process and its local API."""

    def __init__(self, folder: Path, name: str, text: str) -> None:
        self.config = folder / f"{name}.toml"
        self.config.write_text(text)
        self.socket = folder / f"state-{name}" / "control.sock"
        self.log = folder / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    async def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen([MTA, "-c", str(self.config)], stderr=log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                await api(self.socket, {"op": "status"})
                return
            await asyncio.sleep(0.05)
        raise RuntimeError(f"{self.config.name} did not start: see {self.log}")

    def stop(self) -> None:
        if self.process is not None:
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


async def submit_many(site: Site, count: int, size: int, precedence: str) -> None:
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

    await asyncio.gather(*(client() for _ in range(CLIENTS)))


async def wait_delivered(site: Site, target: int, *, poll: float = 0.05) -> float:
    while (await site.delivered()) < target:
        await asyncio.sleep(poll)
    return time.monotonic()


@contextlib.asynccontextmanager
async def two_sites(
    routine_connections: int = ROUTINE_CONNECTIONS, *, extra: str = ""
) -> AsyncIterator[tuple[Site, Site]]:
    """Sites A and B, not started, in a folder removed afterwards; ``extra`` is added to
    both configuration files."""
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
        )
        try:
            yield a, b
        finally:
            a.stop()
            b.stop()


async def throughput(
    count: int, size: int, routine_connections: int = ROUTINE_CONNECTIONS
) -> tuple[float, float]:
    """(messages/s, MB/s of body) from the first submission to the last stored at B."""
    async with two_sites(routine_connections) as (a, b):
        await b.start()
        await a.start()
        await permanent_slots_ready(a)  # measured from steady state, not from start-up
        started = time.monotonic()
        await submit_many(a, count, size, "routine")
        ended = await wait_delivered(b, count)
    seconds = ended - started
    return count / seconds, count * size / seconds / 1e6


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


async def flash_latency(
    backlog: int, samples: int, routine_connections: int = ROUTINE_CONNECTIONS
) -> Latencies:
    """Latencies of ``samples`` flash messages from A to B's store.

    The flash messages are sent one every ``FLASH_SPACING`` seconds while the routine
    backlog (if any) drains; a watch on B's mailbox (the ``wait`` of ``x400 inbox
    --follow``) learns when each one's delivery is committed, and the delivery stamps are
    read from B's mailbox afterwards.
    """
    async with two_sites(routine_connections) as (a, b):
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

    return Latencies(stored=ms(stored), received=ms(received), late=late)


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
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"process {pid} has no VmRSS")


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


async def main(args: argparse.Namespace) -> None:
    if not os.access(MTA, os.X_OK):
        raise SystemExit(f"{MTA} is missing: run 'make install' first")
    print(
        f"aiox400 relay benchmark (Python {sys.version.split()[0]}, {os.cpu_count()} CPUs,"
        f" SQLite, synchronous FULL; routine slot of up to {args.routine_connections}"
        " connections)\n"
    )
    before = cpu_check()
    connections = args.routine_connections
    small = await throughput(args.messages, 1024, connections)
    large = await throughput(args.large, 1024 * 1024, connections)
    idle = await flash_latency(0, args.flash, connections)
    loaded = await flash_latency(args.backlog, args.flash, connections)
    print(f"CPU check (10 million additions): {before:.2f} s before, {cpu_check():.2f} s after\n")
    print("| measure | result | target |")
    print("|---|---:|---:|")
    print(f"| 1 KB messages, {args.messages} | {small[0]:,.0f} msgs/s | >= 600 msgs/s |")
    print(f"| 1 MB messages, {args.large} | {large[1]:,.1f} MB/s | >= 100 MB/s |")
    for name, latencies, target in (
        ("idle", idle, "p99 <= 4 ms"),
        (f"{args.backlog:,} routine queued", loaded, "p99 <= 50 ms (10,000 queued)"),
    ):
        stored, received = _p50_p99(latencies.stored), _p50_p99(latencies.received)
        print(f"| flash latency, {name}, to stored at B: p50 / p99 | {stored} | {target} |")
        print(f"| flash latency, {name}, to received at B: p50 / p99 | {received} | |")
    for name, latencies in (("idle", idle), ("queued", loaded)):
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
        default=ROUTINE_CONNECTIONS,
        help="most connections of the routine slot (default 2, as in config/examples); P1"
        " over RTSE carries one transfer at a time per connection",
    )
    asyncio.run(main(parser.parse_args()))
