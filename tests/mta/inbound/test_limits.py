"""The daemon's ``[limits]`` against peers and local clients that take more than their share.

The guard's parts are tested alone with a hand-driven clock; then site B of the lab runs
with small limits and is flooded, fed without end, trickled at and guessed at over real
loopback sockets, while a real peer (MTA-A) still binds and transfers.  A raw initiator
(:class:`Initiator`) drives a P1 association by hand, so a test decides when each octet
goes and from which source address (127.0.0.2 and up are loopback too).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchmarks import samples
from client.api import ApiError, AsyncConnection
from config.schema import ConnectionLimits
from mta.faults import LogLimiter
from mta.inbound.guard import BindFailures, FailedBinds, Guard, Pace, Ticket, address_key
from mta.link import LinkError, open_link
from mta.operator.control import ControlError, JsonObject, serve_control
from p1.association.connection import (
    Aborted,
    BindAccepted,
    BindRefused,
    P1Association,
)
from p1.association.mtabind import MTABindArgument
from p1.mts.precedence import Precedence
from p1.osi import Event, Role
from p1.osi.tpkt import encode_tpkt
from tests.support.sites import DEADLINE, A, Lab, Site, eventually, solo_site, until

A_BINDS = MTABindArgument(initiator_name=A.name, password=A.password)
A_GUESSES = MTABindArgument(initiator_name=A.name, password="guess")


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- the guard alone -----------------------------------------------------------------------


def guard_of(clock: Clock, **limits: Any) -> Guard:
    return Guard(ConnectionLimits(**limits), clock=clock)


def admit(guard: Guard, host: str, closed: list[str] | None = None) -> Ticket | None:
    def close() -> None:
        if closed is not None:
            closed.append(host)

    return guard.admit((host, 40000), close)


def test_each_count_refuses_the_connection_over_it_when_all_are_bound() -> None:
    clock = Clock()
    guard = guard_of(clock, max_connections=4, max_connections_per_address=2, max_unbound=3)

    def bound(host: str) -> Ticket:
        ticket = admit(guard, host)
        assert ticket is not None
        ticket.bind_accepted()
        return ticket

    first, second = bound("10.0.0.1"), bound("10.0.0.1")
    assert admit(guard, "10.0.0.1") is None  # per address
    third, fourth = bound("10.0.0.2"), bound("10.0.0.3")
    assert admit(guard, "10.0.0.4") is None  # total
    for ticket in (first, second, third, fourth, first):  # (a second release: nothing)
        ticket.release()
    assert (guard.connections, guard.unbound) == (0, 0)


def test_an_unbound_place_goes_from_the_address_holding_the_most() -> None:
    clock = Clock()
    closed: list[str] = []
    guard = guard_of(clock, max_connections=10, max_unbound=4, max_unbound_per_address=3)
    flood = [admit(guard, "10.0.0.9", closed) for _ in range(3)]
    other = admit(guard, "10.0.0.8", closed)
    assert None not in flood and other is not None
    newcomers = [admit(guard, "10.0.0.1", closed) for _ in range(3)]
    assert None not in newcomers
    # 9 held three, then two: its oldest gave way twice; then 1 held as many as anyone
    # (two): its own oldest gave way.  The address holding one kept it.
    assert closed == ["10.0.0.9", "10.0.0.9", "10.0.0.1"]
    assert [t.released for t in flood if t] == [True, True, False]
    assert [t.released for t in newcomers if t] == [True, False, False]
    assert not other.released
    assert (guard.connections, guard.unbound) == (4, 4)
    assert newcomers[0] is not None
    newcomers[0].release()  # (its task ends later: counted once)
    assert (guard.connections, guard.unbound) == (4, 4)


def test_an_address_over_its_share_replaces_its_own_oldest() -> None:
    clock = Clock()
    closed: list[str] = []
    guard = guard_of(clock, max_unbound=32, max_unbound_per_address=2)
    tickets = [admit(guard, "10.0.0.5", closed) for _ in range(5)]
    others = [admit(guard, f"10.0.1.{n}", closed) for n in range(3)]
    assert None not in tickets and None not in others
    assert closed == ["10.0.0.5"] * 3
    assert [t.released for t in tickets if t] == [True, True, True, False, False]
    assert (guard.connections, guard.unbound) == (5, 5)


def test_a_known_peer_is_not_counted_against_max_unbound_and_never_gives_way() -> None:
    clock = Clock()
    closed: list[str] = []
    guard = guard_of(clock, max_connections=5, max_unbound=2, max_unbound_per_address=2)
    guard.know(["10.0.0.7", "::ffff:10.0.0.6"])
    assert guard.known == {"10.0.0.7", "10.0.0.6"}
    strangers = [admit(guard, "10.0.0.9", closed), admit(guard, "10.0.0.8", closed)]
    peers = [admit(guard, "10.0.0.7", closed) for _ in range(3)]
    assert None not in strangers and None not in peers and closed == []
    assert all(t.known for t in peers if t) and not any(t.known for t in strangers if t)
    assert (guard.connections, guard.unbound) == (5, 5)
    # All places taken: a stranger takes a stranger's, a peer too; never a peer's.
    assert admit(guard, "10.0.0.1", closed) is not None
    assert admit(guard, "10.0.0.6", closed) is not None
    assert closed == ["10.0.0.9", "10.0.0.8"]
    assert not any(t.released for t in peers if t)
    assert (guard.connections, guard.unbound) == (5, 5)


def test_a_bound_connection_never_gives_way() -> None:
    clock = Clock()
    guard = guard_of(clock, max_connections=2, max_connections_per_address=2)
    guard.know(["10.0.0.3"])
    for _ in range(2):
        ticket = admit(guard, "10.0.0.1")
        assert ticket is not None
        ticket.bind_accepted()
    clock.now += 3600
    assert admit(guard, "10.0.0.1") is None
    assert admit(guard, "10.0.0.2") is None
    assert admit(guard, "10.0.0.3") is None


def test_failed_binds_double_the_delay_up_to_the_maximum_per_address() -> None:
    clock = Clock()
    binds = FailedBinds(delay=1.0, maximum=5.0, clock=clock, capacity=3)
    assert binds.delay("10.0.0.1") == 0.0
    delays = []
    for _ in range(5):
        binds.failed("10.0.0.1", known=True)
        delays.append(binds.delay("10.0.0.1", known=True))
    assert delays == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert binds.delay("10.0.0.2") == 0.0
    binds.succeeded("10.0.0.1")
    assert binds.delay("10.0.0.1") == 0.0
    for host in ("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"):
        binds.failed(host, known=True)
    assert len(binds) == 3 and binds.delay("10.0.0.1") == 0.0  # the least recent went
    clock.now += 10_000
    assert binds.delay("10.0.0.4") == 0.0  # forgotten
    assert FailedBinds(delay=0.0, maximum=0.0).delay("10.0.0.1") == 0.0


def test_failed_binds_from_many_addresses_slow_every_strangers_bind() -> None:
    clock = Clock()
    binds = FailedBinds(delay=1.0, maximum=8.0, clock=clock, burst=3.0)
    delays = []
    for n in range(7):
        binds.failed(f"10.0.2.{n}")
        delays.append(binds.delay("10.0.9.9"))  # an address that never failed
    assert delays == [0.0, 0.0, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert binds.delay("10.0.9.9", known=True) == 0.0  # a peer's is not slowed
    assert binds.delay("10.0.2.0") == 8.0  # (its own would be 1 s)
    clock.now += 2.0  # two failures forgiven
    assert binds.global_delay() == 4.0
    clock.now += 5.0
    assert binds.global_delay() == 0.0
    binds.failed("10.0.0.1", known=True)  # a peer's failures cost only its address
    assert binds.global_delay() == 0.0
    quiet = FailedBinds(delay=0.0, maximum=0.0, clock=clock, burst=1.0)
    for n in range(5):
        quiet.failed(f"10.0.2.{n}")
    assert quiet.global_delay() == 0.0


def test_failed_binds_are_logged_as_a_count_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    failures = BindFailures(interval=60.0, clock=clock)
    failures.failed("10.0.0.1", "first one, in full", 0.0)
    for n in range(99):
        failures.failed(f"10.0.3.{n % 40}", "not said", 4.0)
        clock.now += 0.1
    failures.tick(4.0)  # (within the interval: nothing)
    clock.now += 60.0
    failures.tick(30.0)
    clock.now += 61.0
    failures.tick(0.0)  # a quiet interval: nothing, and the next is said at once
    failures.failed("10.0.0.2", "after the quiet, in full", 0.0)
    assert caplog.messages == [
        "first one, in full",
        "99 more failed bind(s) in the last 70 s from 40 address(es), the most (3) from "
        "10.0.3.0; a bind from an address not a peer's waits 30 s",
        "after the quiet, in full",
    ]


def test_log_limiter_writes_one_line_per_condition_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    notes = LogLimiter(interval=60.0, clock=clock)
    logger = logging.getLogger("aiox400.test")
    caplog.set_level(logging.INFO, logger="aiox400.test")
    written = [notes.warning(logger, "full", "full: %d", n) for n in range(4)]
    notes.warning(logger, "other", "other")
    clock.now += 61
    notes.warning(logger, "full", "full: %d", 4)
    assert written == [True, False, False, False]
    assert caplog.messages == ["full: 0", "other", "full: 4 (3 more suppressed)"]


def test_pace_allows_silence_when_idle_and_needs_progress_within_a_pdu() -> None:
    pace = Pace(idle=10.0, min_octets=100, interval=1.0, now=0.0)
    assert (pace.deadline(), pace.partial) == (10.0, False)
    pace.received(60, complete=False, now=2.0)
    assert pace.deadline() == 3.0
    pace.received(60, complete=False, now=2.5)
    assert pace.expired(3.0) is None  # 120 octets in the interval: the next begins
    assert pace.deadline() == 4.0
    pace.received(10, complete=False, now=3.5)
    assert pace.expired(4.0) == "sent 10 octet(s) of a PDU in 1 s, fewer than 100"
    pace.received(5, complete=True, now=4.0)
    assert (pace.deadline(), pace.partial) == (14.0, False)
    pace.waiting(6.0)  # (answering the PDU took 2 s: silence counts from then)
    assert pace.deadline() == 16.0
    assert pace.expired(16.0) == "silent for 10 s with nothing in progress"
    assert Pace(idle=None, min_octets=1, interval=1.0, now=0.0).deadline() is None


@pytest.mark.parametrize(
    ("host", "key"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff::9", "2001:db8:1:2::/64"),
        ("fe80::1%eth0", "fe80::/64"),
        ("not an address", "not an address"),
    ],
)
def test_sources_count_per_ipv4_address_and_per_ipv6_64(host: str, key: str) -> None:
    assert address_key(host) == key


def test_max_connections_is_fitted_into_the_open_file_limit() -> None:
    # In a child: the test runner's own limit is left alone.
    code = (
        "import resource\n"
        "from mta.inbound.guard import descriptor_cap\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (100, 1000))\n"
        "raised = descriptor_cap(256, 100)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (300, 300))\n"
        "capped = descriptor_cap(256, 100)\n"
        "print(raised.connections, raised.soft, raised.raised_from, "
        "capped.connections, capped.soft, capped.raised_from)\n"
    )
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["256", "356", "100", "200", "300", "None"]


# --- a raw initiator -------------------------------------------------------------------------


@dataclass
class Initiator:
    """One association driven by hand from a socket bound to ``source``."""

    sock: socket.socket
    association: P1Association
    name: str
    """How the responder names this peer in its log (address:port)."""

    @classmethod
    async def connect(cls, port: int, source: str = "127.0.0.1") -> Initiator:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.bind((source, 0))
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        except BaseException:
            sock.close()
            raise
        host, local_port = sock.getsockname()
        return cls(sock, P1Association(Role.INITIATOR), f"{host}:{local_port}")

    async def send(self, data: bytes) -> None:
        await asyncio.get_running_loop().sock_sendall(self.sock, data)

    async def flush(self) -> None:
        data = self.association.data_to_send()
        if data:
            with contextlib.suppress(ConnectionError):
                await self.send(data)

    async def receive(self, timeout: float = DEADLINE) -> bytes:
        """The next octets from the responder; b"" once it closed."""
        try:
            return await asyncio.wait_for(
                asyncio.get_running_loop().sock_recv(self.sock, 1 << 16), timeout
            )
        except ConnectionError:
            return b""

    async def events(self, timeout: float = DEADLINE) -> list[Event]:
        data = await self.receive(timeout)
        association = self.association
        events = association.receive_data(data) if data else association.receive_eof()
        await self.flush()
        return events

    async def until(self, *kinds: type[Event]) -> Event:
        while True:
            for event in await self.events():
                if isinstance(event, kinds):
                    return event

    async def bind(self, argument: MTABindArgument) -> Event:
        """BindAccepted, BindRefused or Aborted."""
        self.association.send_bind(argument)
        await self.flush()
        return await self.until(BindAccepted, BindRefused, Aborted)

    def close(self) -> None:
        self.sock.close()


async def timed_bind(port: int, argument: MTABindArgument, source: str) -> tuple[Event, float]:
    """The outcome of one bind from ``source`` and the seconds it took from the connect."""
    started = time.monotonic()
    peer = await Initiator.connect(port, source)
    try:
        outcome = await peer.bind(argument)
    finally:
        peer.close()
    return outcome, time.monotonic() - started


async def start_b(lab: Lab, **limits: object) -> int:
    """Start site B alone with ``[limits]`` ``limits``; the port of its first listener."""
    lab.b.settings["limits"] = limits
    await lab.b.start()
    return lab.b.running.listening_ports[0]


async def bind_and_transfer_as_a(port: int) -> float:
    """Bind to B as MTA-A, transfer a message, release; the seconds it took."""
    started = time.monotonic()
    link, _ = await open_link("127.0.0.1", port, A_BINDS)
    await link.transfer(samples.message_bytes(1024), timeout=DEADLINE)
    await link.release(timeout=DEADLINE)
    return time.monotonic() - started


async def try_bind_and_transfer_as_a(port: int) -> float | None:
    """:func:`bind_and_transfer_as_a`, or None when the connection was closed at once."""
    try:
        return await bind_and_transfer_as_a(port)
    except (LinkError, ConnectionError):
        return None


def messages(caplog: pytest.LogCaptureFixture, part: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if part in r.getMessage()]


# --- connections ------------------------------------------------------------------------------


async def read_to_end(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.read()
    except ConnectionError:
        return b""


@pytest.mark.slow
async def test_connections_over_the_cap_give_way_and_a_peer_still_binds(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    port = await start_b(
        lab, max_connections=20, max_unbound=20, max_unbound_per_address=20, bind_timeout="20s"
    )
    streams = [
        await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.2", 0))
        for _ in range(30)
    ]
    ends = [asyncio.create_task(read_to_end(reader)) for reader, _ in streams]

    def closed() -> list[int]:
        return [n for n, task in enumerate(ends) if task.done()]

    try:
        # Over max_connections, each newcomer took the place of the address's oldest ...
        await until(lambda: len(closed()) >= 10, what="ten connections closed", timeout=10.0)
        guard = lab.b.running.guard
        assert (closed(), guard.connections, guard.unbound) == ([*range(10)], 20, 20)
        # ... and the real peer, from its configured host, takes the oldest place left.
        assert await bind_and_transfer_as_a(port) < DEADLINE
        await until(
            lambda: (len(closed()), guard.connections, guard.unbound) == (11, 19, 19),
            what="the connection that gave way closed, the real peer's ended",
        )
        assert closed() == [*range(11)]
    finally:
        for task in ends:
            task.cancel()
        for _, writer in streams:
            writer.close()
    evicted = messages(caplog, "to admit one from 127.0.0.2")
    assert len(evicted) == 1  # one line for ten (a minute's worth)
    assert evicted[0].startswith("closed a connection from 127.0.0.2, unbound after ")
    assert len(messages(caplog, "to admit one from 127.0.0.1")) == 1


async def test_an_unbound_peer_streaming_a_large_tsdu_is_cut_off(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    port = await start_b(lab, max_bytes_before_bind="8KiB")
    peer = await Initiator.connect(port)
    peer.association.send_bind(A_BINDS)
    await peer.flush()  # CR
    assert await peer.receive()  # CC; then, instead of the CN, a TSDU without end
    dt = encode_tpkt(b"\x02\xf0\x00" + bytes(2045))  # DT, end of TSDU not set
    chunk = dt * 32
    sent = 0
    with pytest.raises(ConnectionError):
        while sent < 48 << 20:
            await peer.send(chunk)
            sent += len(chunk)
    peer.close()
    assert sent < 32 << 20  # what the kernel's socket buffers take, not the 64 MiB TSDU
    cut = messages(caplog, "more than 8192 octets without completing an MTA-bind")
    assert len(cut) == 1 and cut[0].startswith(f"{peer.name}: ")
    assert await bind_and_transfer_as_a(port) < DEADLINE


@pytest.mark.slow
async def test_a_bound_peer_that_trickles_is_aborted_after_the_progress_interval(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    port = await start_b(lab, min_progress="1KiB", progress_interval=0.3)
    peer = await Initiator.connect(port)
    try:
        assert isinstance(await peer.bind(A_BINDS), BindAccepted)
        # Silent with nothing in progress: idle, which progress_interval does not limit.
        with pytest.raises(TimeoutError):
            await peer.receive(timeout=1.0)
        peer.association.send_transfer(samples.message_bytes(1024))
        octets = peer.association.data_to_send()
        started = time.monotonic()
        answer = None
        for octet in octets:  # one octet every 20 ms: 50 octets a second
            await peer.send(bytes([octet]))
            try:
                answer = await peer.receive(timeout=0.02)
            except TimeoutError:
                if time.monotonic() - started < 10.0:
                    continue
            break
        elapsed = time.monotonic() - started
        events = peer.association.receive_data(answer) if answer else []
    finally:
        peer.close()
    assert 0.3 <= elapsed < 10.0
    assert [type(e) for e in events] == [Aborted]  # RT-U-ABORT, not a dropped connection
    [line] = messages(caplog, "of a PDU in 0.3 s, fewer than 1024")
    assert line.startswith(f"{peer.name}: sent ")
    assert line.endswith(", aborting")


@pytest.mark.slow
async def test_failed_binds_wait_longer_each_time_while_another_address_binds_at_once(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    port = await start_b(lab, failed_bind_delay="1s", failed_bind_delay_max="30s")
    accepted, _ = await timed_bind(port, A_BINDS, "127.0.0.3")  # (the codec is warm)
    assert isinstance(accepted, BindAccepted)
    times = []
    for _ in range(3):
        refused, elapsed = await timed_bind(port, A_GUESSES, "127.0.0.1")
        assert isinstance(refused, BindRefused)
        times.append(elapsed)
    assert times[0] < 1.0 <= times[1] < times[2]
    assert times[2] >= 2.0
    # From 127.0.0.1 the next bind would wait 4 s; from elsewhere a bind is not delayed.
    accepted, elapsed = await timed_bind(port, A_BINDS, "127.0.0.2")
    assert isinstance(accepted, BindAccepted)
    assert elapsed < 1.0
    [warning] = messages(caplog, "failed bind(s) in a row from 127.0.0.1")
    assert "refused: authentication-error; 1 failed bind(s)" in warning
    assert warning.endswith("the next bind from there waits 1 s")
    assert len(messages(caplog, "bind refused: wrong password from MTA-A")) == 1


# --- the local API --------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def solo_with(directory: Path, **limits: object) -> AsyncIterator[Site]:
    """Site A alone, started with ``[limits]`` ``limits``."""
    site = solo_site(directory)
    site.settings["limits"] = limits
    await site.start()
    try:
        yield site
    finally:
        await site.stop()


@pytest.fixture
async def impatient(tmp_path: Path) -> AsyncIterator[Site]:
    """Site A alone, closing local API connections idle for 0.3 s."""
    async with solo_with(tmp_path / "solo", api_idle_timeout=0.3) as site:
        yield site


@pytest.fixture
async def crowded(tmp_path: Path) -> AsyncIterator[Site]:
    """Site A alone, with three local API connections at most."""
    async with solo_with(
        tmp_path / "solo", max_api_connections=3, api_operator_connections=1
    ) as site:
        yield site


@pytest.mark.slow
async def test_an_idle_local_api_connection_is_closed_but_a_long_wait_is_not(
    impatient: Site,
) -> None:
    limited = impatient
    reader, writer = await asyncio.open_unix_connection(str(limited.socket))
    started = time.monotonic()
    assert await asyncio.wait_for(reader.read(), DEADLINE) == b""
    assert time.monotonic() - started >= 0.3
    writer.close()
    connection = await AsyncConnection.open(limited.socket)
    try:
        user = limited.address("Jones")
        answer, _ = await connection.call({"op": "wait", "user": user, "timeout": 1})
        assert answer["messages"] == []  # answered after 1 s: waiting is not idle
        status, _ = await connection.call({"op": "status"})
        assert status["ok"] is True
    finally:
        await connection.close()


async def test_local_api_connections_over_the_cap_are_told_and_closed(
    crowded: Site, caplog: pytest.LogCaptureFixture
) -> None:
    limited = crowded
    held = [await AsyncConnection.open(limited.socket) for _ in range(3)]
    try:
        for connection in held:
            assert (await connection.call({"op": "status"}))[0]["ok"] is True
        reader, writer = await asyncio.open_unix_connection(str(limited.socket))
        answer = json.loads(await asyncio.wait_for(reader.readline(), DEADLINE))
        assert await asyncio.wait_for(reader.read(), DEADLINE) == b""
        writer.close()
        assert answer == {
            "ok": False,
            "error": "the MTA has 3 local API connections open; try later (max_api_connections 3)",
        }
    finally:
        await held.pop().close()

    async def status() -> JsonObject:
        try:
            return await limited.api({"op": "status"})
        except ApiError as error:
            return {"ok": False, "error": str(error)}

    await eventually(status, lambda s: s["ok"] is True, what="a connection once one closed")
    for connection in held:
        await connection.close()
    assert len(messages(caplog, "(max_api_connections 3)")) == 1


class Recursing:
    """A handler that meets a request nested deeper than it can walk."""

    socket_mode = 0o660

    async def handle(
        self, request: JsonObject, payload: bytes, caller: object
    ) -> tuple[JsonObject, bytes]:
        if request["op"] == "refuse":
            raise ControlError("refused")
        raise RecursionError("maximum recursion depth exceeded")


async def test_a_request_nested_too_deeply_is_answered_with_a_clear_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = await serve_control(tmp_path / "api.sock", Recursing())
    async with server:
        reader, writer = await asyncio.open_unix_connection(str(tmp_path / "api.sock"))
        answers = []
        for line in (b'{"op": "walk", "x": [[[[]]]]}\n', b"[" * 60_000 + b"\n"):
            writer.write(line)
            answers.append(json.loads(await asyncio.wait_for(reader.readline(), DEADLINE)))
        writer.close()
    assert answers == [
        {"ok": False, "error": "request is nested too deeply"},
        {"ok": False, "error": "request is nested too deeply"},
    ]
    assert [r.exc_info for r in caplog.records if r.exc_info] == []
    assert len(caplog.records) <= 1


async def test_the_daemon_answers_a_deeply_nested_request_with_a_clear_error(
    crowded: Site,
) -> None:
    limited = crowded
    user = json.dumps(limited.address("Smith"))
    for depth in (900, 990, 30_000):
        nested = "[" * depth + "]" * depth
        line = (
            f'{{"op": "submit", "originator": {user}, "recipients": [{user}], '
            f'"content_type": 22, "precedence": {nested}}}\n'
        )
        reader, writer = await asyncio.open_unix_connection(str(limited.socket), limit=1 << 20)
        writer.write(line.encode())
        answer = json.loads(await asyncio.wait_for(reader.readline(), DEADLINE))
        writer.close()
        assert answer["ok"] is False
        assert "internal error" not in answer["error"]


@pytest.mark.slow
async def test_an_idle_permanent_association_ended_on_time_is_info_and_opened_again(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    """B ends the idle associations of A's permanent slots after its idle_timeout: that is
    housekeeping, logged at INFO on both sides, and A's slots connect again at once."""
    caplog.set_level(logging.INFO)
    lab.b.settings["limits"] = {"idle_timeout": 0.5}
    await lab.start()
    await until(
        lambda: len(messages(caplog, "silent for 0.5 s with nothing in progress, aborting")) >= 6,
        what="B ending A's three permanent associations twice",
    )
    await until(
        lambda: len(messages(caplog, "the peer ended the idle association")) >= 6,
        what="A seeing them ended",
    )
    flash = lab.a.runner(Precedence.FLASH)
    await until(
        lambda: [c.state for c in flash.snapshot().connections] == ["idle"],
        what="A's flash slot connected again",
    )
    noisy = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING
        and ("silent for" in r.getMessage() or "ended the idle" in r.getMessage())
    ]
    assert noisy == []
