"""Retries towards a peer that refuses transfers or drops its associations (mta.outbound.channels).

A transfer that fails on a connection that had idled is retried once at once, and that try
is not counted; every later failure is counted and waits ``retry.initial``, then
``initial * factor`` and so on, so a message delivered once the peer takes it again waits
about one retry interval, and the next message to fail starts again from ``initial``.
Connections are not opened in a tight loop either: not to a peer that drops every
association it accepts, nor while the peer binds to us again and again and our own
attempts to connect keep failing.

The peer is a real P1 responder on loopback (:func:`mta.link.serve_link`) that refuses
transfers while told to (:class:`mta.link.TransferRefusedError`: it aborts the
association, as a receiving MTA whose store fails does); site A is a real daemon.  Times
are asserted only from below (a retry never comes sooner than its delay), so a slow
machine does not fail these tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from config.schema import RetryPolicy
from mta.link import Link, TransferRefusedError, open_link, serve_link
from mta.outbound import channels
from p1.association.connection import BindRequested, P1Association, TransferTooLong
from p1.association.mtabind import MTABindArgument, MTABindResult
from p1.mts.envelope import Message, decode_mts_apdu
from p1.osi import Role
from tests.support.sites import B, Lab, SlotSpec, eventually, until

pytestmark = pytest.mark.slow  # real retry delays and backoffs of a second and more

RETRY = RetryPolicy(initial=0.2, maximum=300.0, factor=2.0, jitter=0.0)
"""Site A's ``[retry]``: quick, without jitter, and a maximum no test could wait out."""
RECONNECT = RetryPolicy(initial=0.05, maximum=0.2, factor=2.0, jitter=0.0)
"""A's backoff between connections, short, where a test is about messages."""
SLACK = 0.05
"""Seconds a measured gap may fall short of its delay: the daemon schedules by the wall
clock, the peer here notes times by the monotonic one."""
REFUSED = 5
"""Tries of a message the peer refuses before it takes it."""
EVERY_PRECEDENCE = ("override", "flash", "immediate", "priority", "routine", "deferred")
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
Seen = list[tuple[int, int]]
"""(attempts, tries) of a message as it was seen pending in A's queue."""


def clock() -> float:
    return asyncio.get_running_loop().time()


def gaps(times: list[float]) -> list[float]:
    return [later - earlier for earlier, later in itertools.pairwise(times)]


@dataclass
class Receiver:
    """Site B's side of A's slot: every bind accepted, every transfer refused for now
    (temporary-problem) while ``refusing``; when each bind and each try of each message came."""

    refusing: bool = False
    binds: list[float] = field(default_factory=list)
    tries: dict[str, list[float]] = field(default_factory=dict)
    stored: list[str] = field(default_factory=list)

    async def on_bind(self, event: BindRequested) -> MTABindResult:
        self.binds.append(clock())
        return MTABindResult(responder_name=B.name, password=B.password)

    async def on_transfer(self, apdu: bytes) -> None:
        message = decode_mts_apdu(apdu)
        assert isinstance(message, Message)
        name = message.envelope.mts_identifier.text
        self.tries.setdefault(name, []).append(clock())
        if self.refusing:
            raise TransferRefusedError("the message store is full", temporary=True)
        self.stored.append(name)

    async def on_transfer_too_long(self, event: TransferTooLong) -> None:
        raise TransferRefusedError(f"{event.size} octets: over max_message_size")


@contextlib.asynccontextmanager
async def listening(port: int, handler: Handler) -> AsyncIterator[None]:
    """``handler`` serves each connection to ``port`` (B's, reserved by the lab) until the
    block ends; then the connections still open are closed and their handlers awaited."""
    served: list[tuple[asyncio.Task[None], asyncio.StreamWriter]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        served.append((task, writer))
        await handler(reader, writer)

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    try:
        yield
    finally:
        server.close()
        await server.wait_closed()
        for _, writer in served:
            writer.close()
        await asyncio.gather(*(task for task, _ in served), return_exceptions=True)


def serving(receiver: Receiver) -> Handler:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await serve_link(reader, writer, receiver)

    return handle


@pytest.fixture
async def lab(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Lab]:
    """A with one slot (every precedence, ``request.param`` connections, one more per
    message waiting) to B, whose port nothing serves yet; B is never started."""
    connections = getattr(request, "param", 1)
    slot = SlotSpec(EVERY_PRECEDENCE, "CS0", max_connections=connections, backlog_threshold=1)
    sites = Lab.create(tmp_path, slots=(slot,))
    sites.a.settings["retry"] = {
        "initial": RETRY.initial,
        "maximum": RETRY.maximum,
        "factor": RETRY.factor,
        "jitter": RETRY.jitter,
    }
    try:
        yield sites
    finally:
        await sites.close()


def b_port(lab: Lab) -> int:
    port: int = lab.a.settings["peers"][0]["slots"][0]["port"]
    return port


def a_port(lab: Lab) -> int:
    port: int = lab.a.settings["listeners"][0]["port"]
    return port


async def send(lab: Lab, count: int = 1) -> list[str]:
    a, b = lab.a, lab.b
    return await a.send(a.address("Smith"), b.address("Jones"), count=count)


def idle_connections(lab: Lab) -> int:
    runner = lab.a.running.runners[0]
    return sum(c.state == "idle" for c in runner.snapshot().connections)


async def queued(lab: Lab, name: str) -> tuple[str, int] | None:
    """(state, attempts) of the message's recipient in A's queue; None once it left."""
    rows = (await lab.a.api({"op": "messages"}))["recipients"]
    for row in rows:
        if row["mts_identifier"] == name:
            return row["state"], row["attempts"]
    return None


async def refused(lab: Lab, receiver: Receiver, name: str, tries: int) -> Seen:
    """Wait until the peer has refused ``name`` ``tries`` times and A has counted every try
    but the one at once; each (attempts, tries) seen meanwhile with the message pending.
    Tries are counted after the attempts were read, so a try under way may be counted
    in ``tries`` before A records its failure, never the other way round."""
    seen: Seen = []

    async def look() -> tuple[int, int] | None:
        row = await queued(lab, name)
        done = len(receiver.tries.get(name, ()))
        if row is None or row[0] != "pending":
            return None
        seen.append((row[1], done))
        return row[1], done

    def counted(found: tuple[int, int] | None) -> bool:
        return found is not None and found[1] >= tries and found[0] == found[1] - 1

    await eventually(look, counted, what=f"{tries} tries, each but the first counted")
    return seen


def logged(caplog: pytest.LogCaptureFixture, name: str) -> tuple[int, list[tuple[int, float]]]:
    """What A logged of putting ``name`` back: retries at once, and each deferral's
    (attempt, delay)."""
    at_once = 0
    deferrals: list[tuple[int, float]] = []
    for record in caplog.records:
        text = record.getMessage()
        if text.startswith(f"retrying {name} "):
            at_once += 1
        found = re.match(
            rf"deferred {re.escape(name)} .*; attempt (\d+), next in ([\d.]+) s$", text
        )
        if found:
            deferrals.append((int(found[1]), float(found[2])))
    return at_once, deferrals


def scheduled(count: int) -> list[tuple[int, float]]:
    """The deferrals a message refused ``count`` times (once at once) logs."""
    return [(attempt, round(RETRY.nominal(attempt), 1)) for attempt in range(1, count)]


def check(caplog: pytest.LogCaptureFixture, receiver: Receiver, name: str, seen: Seen) -> None:
    """``name`` was refused, retried once at once, then after initial, initial * factor,
    ... (never sooner), counted once per try but the one at once; then taken."""
    tries = receiver.tries[name]
    waited = gaps(tries)[1:]
    assert all(
        gap >= RETRY.nominal(attempt) - SLACK for attempt, gap in enumerate(waited, start=1)
    ), gaps(tries)
    assert all(attempts <= done - 1 for attempts, done in seen), seen
    assert logged(caplog, name) == (1, scheduled(len(tries) - 1))
    assert receiver.stored.count(name) == 1


# --- a transfer the peer refuses ----------------------------------------------------------


@pytest.mark.parametrize("lab", [1, 2], indirect=True, ids=["one connection", "two connections"])
async def test_a_refused_message_is_retried_once_at_once_then_backs_off_from_initial(
    lab: Lab, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400.channel")
    monkeypatch.setattr(channels, "_RECONNECT", RECONNECT)
    monkeypatch.setattr(channels, "DEFERRAL_LOG_INTERVAL", 0.0)  # each deferral, to read
    connections = lab.a.settings["peers"][0]["slots"][0]["max_connections"]
    receiver = Receiver()
    await lab.a.start()
    warm = await send(lab, count=connections)  # B down: the slot wants every connection
    runner = lab.a.running.runners[0]
    await until(lambda: len(runner.snapshot().connections) == connections, what="connecting")
    async with listening(b_port(lab), serving(receiver)):
        await until(
            lambda: (
                sorted(receiver.stored) == sorted(warm) and idle_connections(lab) == connections
            ),
            what="every connection idle after a transfer",
        )
        receiver.refusing = True
        (name,) = await send(lab)  # for a connection that has idled
        seen = await refused(lab, receiver, name, REFUSED)
        receiver.refusing = False
        # Due again after the last delay at most; a few seconds more only when failing.
        await until(
            lambda: name in receiver.stored,
            what="transferred once the peer takes it",
            timeout=RETRY.nominal(REFUSED) + 10.0,
        )
        await until(lambda: idle_connections(lab) == connections, what="idle again")

        # The next message refused starts from ``initial`` again.
        receiver.refusing = True
        (after,) = await send(lab)
        seen_after = await refused(lab, receiver, after, 2)
        receiver.refusing = False
        await until(lambda: after in receiver.stored, what="the next message transferred")

    check(caplog, receiver, name, seen)
    check(caplog, receiver, after, seen_after)
    assert await queued(lab, name) is None  # transferred: out of the queue


# --- connections ----------------------------------------------------------------------------


async def test_a_peer_that_drops_every_association_it_accepts_is_not_called_in_a_loop(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    reconnect = RetryPolicy(initial=0.2, maximum=0.4, factor=2.0, jitter=0.0)
    monkeypatch.setattr(channels, "_RECONNECT", reconnect)
    binds: list[float] = []

    async def drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        link = Link(P1Association(Role.RESPONDER), reader, writer, peer="MTA-A")
        try:
            await link.next_event(10.0)  # the bind
            binds.append(clock())
            link.association.accept_bind(MTABindResult(responder_name=B.name, password=""))
            await link.flush()
            await link.abort("going away")
        finally:
            await link.close()

    async with listening(b_port(lab), drop):
        await lab.a.start()
        await until(lambda: len(binds) >= 4, what="four associations dropped")
        await lab.a.stop()
    # The first is opened again at once (the peer may just have restarted), the next ones
    # after the backoff between connections.
    assert all(gap >= reconnect.initial - SLACK for gap in gaps(binds)[1:]), gaps(binds)


async def test_binds_from_the_peer_do_not_turn_a_backoff_into_a_burst_of_attempts(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the peer's binds end this backoff: A's slot tries again only when woken.
    monkeypatch.setattr(channels, "_RECONNECT", RetryPolicy(initial=3600.0, maximum=3600.0))
    accepted: list[float] = []

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(clock())  # A's attempt to connect, refused before its bind
        writer.close()
        await writer.wait_closed()

    async def bind_again_and_again() -> None:
        argument = MTABindArgument(initiator_name=B.name, password=B.password)
        while True:
            link, _ = await open_link("127.0.0.1", a_port(lab), argument)
            await link.abort("that was all")
            await asyncio.sleep(0.05)

    async with listening(b_port(lab), hang_up):
        await lab.a.start()
        binding = asyncio.create_task(bind_again_and_again())
        try:
            await until(lambda: len(accepted) >= 3, what="three attempts to connect")
        finally:
            binding.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await binding
        await lab.a.stop()
    least = channels._LEAST_BACKOFF
    assert all(gap >= least - SLACK for gap in gaps(accepted)), gaps(accepted)
