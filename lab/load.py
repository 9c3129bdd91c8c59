"""Background load: a UDP stream of a given rate and DSCP from site A to a sink at site B.

Like the field test's dummy load, it does not back off when packets are dropped: it keeps
sending at its rate whatever the router does with it.  The generator paces 1000-octet
datagrams by the clock (a burst catches up after a late wake-up, never more than 50 ms of
them); the sink reads and discards.  Both are small Python processes in the sites'
namespaces, stopped (and reaped) when the context ends.

Public API::

    UdpLoad(topology, rate_kbit, dscp, port=9000)   async with
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from types import TracebackType

from lab.topology import Topology

DATAGRAM = 1000
"""Octets of UDP payload per datagram."""

_SINK = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    s.recv(65536)
"""

_GENERATOR = """
import socket, sys, time
host, port, rate, tos, size = sys.argv[1], *map(float, sys.argv[2:6])
port, tos, size = int(port), int(tos), int(size)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
payload = bytes(size)
interval = size * 8 / rate
start, sent = time.monotonic(), 0
while True:
    due = int((time.monotonic() - start) / interval) + 1
    for _ in range(min(due - sent, max(1, int(0.05 / interval)))):
        try:
            s.sendto(payload, (host, port))
        except OSError:
            pass
    sent = due
    time.sleep(interval)
"""


class UdpLoad:
    """A UDP stream of ``rate_kbit`` marked ``dscp`` from site A to site B."""

    def __init__(self, topology: Topology, rate_kbit: int, dscp: int, port: int = 9000):
        self.topology = topology
        self.rate_kbit = rate_kbit
        self.dscp = dscp
        self.port = port
        self._processes: list[subprocess.Popen[bytes]] = []

    def _start(self, namespace: str, code: str, *args: str) -> None:
        self._processes.append(
            subprocess.Popen(
                [*self.topology.exec_prefix(namespace), sys.executable, "-c", code, *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )

    async def __aenter__(self) -> UdpLoad:
        b, a = self.topology.site_b, self.topology.site_a
        try:
            self._start(b.namespace, _SINK, b.address, str(self.port))
            await asyncio.sleep(0.3)
            self._start(
                a.namespace, _GENERATOR, b.address, str(self.port),
                str(self.rate_kbit * 1000), str(self.dscp << 2), str(DATAGRAM),
            )  # fmt: skip
            await asyncio.sleep(1.0)  # (the router's queue fills)
        except BaseException:
            self.stop()
            raise
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop both processes; safe to call again."""
        while self._processes:
            process = self._processes.pop()
            if process.poll() is None:
                process.kill()
            process.wait()
