"""Connection churn: idle connections from one or many addresses, each replaced young.

The attacker of the daemon's admission (:mod:`mta.inbound.guard`): it keeps ``places``
connections open to a listener, each from a source address drawn from ``sources``
(loopback aliases, 127.0.0.2 and up, need no setup on Linux).  Each sends nothing, or a
random prefix of a transport CR (X.224 13.3), and is closed (by FIN or by RST) after a
random lifetime below ``lifetime``, or as soon as the daemon closes it; another takes its
place at once.  Nothing it does ever binds, so every connection it holds is unbound.

While it runs, a real peer binds and transfers (:func:`transfers`): the share of its
transfers served and their latency are what the admission policy is judged by.  The
random choices come from one seed, so a run repeats.

Public API::

    Churn(port, sources, *, places=32, lifetime=(0.5, 2.5), seed=DEFAULT_SEED)
        await .run(stop: asyncio.Event) -> ChurnFigures(opened, cut_short)
    await transfers(port, count, *, source="127.0.0.1", argument, pause=0.0,
                    timeout=10.0) -> Served(served, failed, latencies)
    await bind_and_transfer(port, source, argument, timeout) -> seconds it took
    Served .share .median .worst      ChurnFigures
    SOURCES_ONE, SOURCES_MANY          the two attackers' addresses
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import statistics
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks import samples
from mta.link import Link, LinkError
from p1.association.connection import Aborted, BindAccepted, BindRefused, P1Association
from p1.association.mtabind import MTABindArgument
from p1.osi import Role

DEFAULT_SEED = 29
SOURCES_ONE = ("127.0.0.2",)
"""One host churning."""
SOURCES_MANY = tuple(f"127.0.4.{n}" for n in range(1, 201))
"""Two hundred hosts churning."""
_CR = bytes.fromhex("0300001611e00000000100c1020001c2020001c0010d")
"""A TPKT holding a class 0 transport CR (X.224 13.3) with both TSELs: what a peer sends
first; the attacker sends a prefix of it at most."""


@dataclass(slots=True)
class ChurnFigures:
    """What one churn run did."""

    opened: int = 0
    """Connections the attacker opened (the daemon accepted the TCP connection)."""
    cut_short: int = 0
    """Of those, closed by the daemon before the attacker closed them (refused at accept,
    or giving way to another)."""
    failed: int = 0
    """Connects that failed (the listener's queue was full)."""


@dataclass(slots=True)
class Served:
    """What a real peer got while the attacker churned."""

    served: int = 0
    failed: int = 0
    latencies: list[float] = field(default_factory=list)
    """Seconds from connect to the release's answer, for each transfer served."""
    errors: list[str] = field(default_factory=list)
    """Why each failed transfer failed."""

    @property
    def share(self) -> float:
        total = self.served + self.failed
        return self.served / total if total else 0.0

    @property
    def median(self) -> float:
        return statistics.median(self.latencies) if self.latencies else float("nan")

    @property
    def worst(self) -> float:
        return max(self.latencies, default=float("nan"))


class Churn:
    """Idle connections to ``port`` from ``sources``, ``places`` at once, each replaced
    once its random lifetime is over or the daemon closed it."""

    def __init__(
        self,
        port: int,
        sources: Sequence[str],
        *,
        places: int = 32,
        lifetime: tuple[float, float] = (0.5, 2.5),
        seed: int = DEFAULT_SEED,
    ) -> None:
        self.port = port
        self.sources = tuple(sources)
        self.places = places
        self.lifetime = lifetime
        self.figures = ChurnFigures()
        self._random = random.Random(seed)

    async def run(self, stop: asyncio.Event) -> ChurnFigures:
        """Churn until ``stop`` is set; what was done."""
        holders = [asyncio.create_task(self._hold(stop)) for _ in range(self.places)]
        try:
            await stop.wait()
        finally:
            for holder in holders:
                holder.cancel()
            for holder in holders:
                with contextlib.suppress(asyncio.CancelledError):
                    await holder
        return self.figures

    async def _hold(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            source = self._random.choice(self.sources)
            prefix = _CR[: self._random.choice((0, 0, 1, 5, len(_CR) - 1))]
            hold = self._random.uniform(*self.lifetime)
            reset = self._random.random() < 0.5
            try:
                await self._one(source, prefix, hold, reset)
            except OSError:
                self.figures.failed += 1
                await asyncio.sleep(0.01)

    async def _one(self, source: str, prefix: bytes, hold: float, reset: bool) -> None:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", self.port, local_addr=(source, 0)
        )
        self.figures.opened += 1
        try:
            if prefix:
                writer.write(prefix)
            try:
                closed = await asyncio.wait_for(reader.read(1), hold) == b""
            except TimeoutError:
                closed = False
            except ConnectionError:
                closed = True
            if closed:
                self.figures.cut_short += 1
        finally:
            if reset:  # RST, as a host that vanishes would
                sock = writer.get_extra_info("socket")
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
            writer.close()


async def bind_and_transfer(
    port: int, source: str, argument: MTABindArgument, timeout: float
) -> float:
    """Connect from ``source``, bind with ``argument``, transfer a 1 KB message and
    release; the seconds it took.  Raises LinkError, OSError or TimeoutError."""
    started = time.monotonic()
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        link = Link(P1Association(Role.INITIATOR), reader, writer, peer=f"127.0.0.1:{port}")
        try:
            link.association.send_bind(argument)
            await link.flush()
            while True:
                event = await link.next_event(None)
                if isinstance(event, BindAccepted):
                    break
                if isinstance(event, BindRefused | Aborted):
                    raise LinkError(f"bind not accepted: {event}")
            await link.transfer(samples.message_bytes(1024), timeout=timeout)
            await link.release(timeout=timeout)
        finally:
            writer.close()
    return time.monotonic() - started


async def transfers(
    port: int,
    count: int,
    *,
    argument: MTABindArgument,
    source: str = "127.0.0.1",
    pause: float = 0.0,
    timeout: float = 10.0,
) -> Served:
    """``count`` binds and transfers from ``source``, one after another (``pause``
    seconds apart); how many were served and how long each took."""
    served = Served()
    for _ in range(count):
        try:
            served.latencies.append(await bind_and_transfer(port, source, argument, timeout))
            served.served += 1
        except (LinkError, OSError, TimeoutError) as error:
            served.failed += 1
            served.errors.append(f"{type(error).__name__}: {error}")
        await asyncio.sleep(pause)
    return served
