"""Two sites and a DiffServ router in network namespaces on one Linux machine.

::

     namespace lab-a-XXXX          namespace lab-r-XXXX                namespace lab-b-XXXX
    +-------------------+      +---------------------------+      +-------------------+
    | MTA-A             |      |  HTB on both egresses:    |      | MTA-B             |
    | a0 198.18.1.2/24  |======| ra 198.18.1.1  rb 198.18.2.1 |======| b0 198.18.2.2/24  |
    +-------------------+ veth +---------------------------+ veth +-------------------+
                         <-- shaped (ACKs)     shaped (data) -->

With a one-way delay (``delay_ms``), the A side's veth pair is replaced by two TUN devices
with the same names and addresses, ``a0`` in site A and ``ra`` in the router, joined by a
user-space wire (:mod:`lab.wire`, a process in the router's namespace) that hands each
packet over ``delay_ms`` later, in each direction: the round trip between the sites grows
by twice the delay, and the router still shapes on ``ra`` and ``rb`` as without it.  With
an HF profile (``hf``) the same wire carries the packets as an HF radio link would
(:mod:`lab.hf`: half duplex at the profile's rate, turnarounds, bit errors, a modem queue
at each end); the two devices' MTU is lowered when a 1500-octet packet would not fit in
one transmission, and the wire's counters can be read at any time
(:meth:`Topology.link_counters`).

Addresses come from the benchmarking range 198.18.0.0/15 (RFC 2544), never from the
private ranges a host may already route.  Offloads (TSO, GSO, GRO) are off on every veth,
or the router would forward 64 KB super-packets past its shaper.  The sites reflect the
DSCP of what they receive in their SYN-ACKs and ACKs (``tcp_reflect_tos``) and keep no
per-destination TCP metrics between runs (``tcp_no_metrics_save``).

:class:`Topology` is an async context manager: everything it creates lives in its three
namespaces, whose deletion (at the end, after an exception or a cancellation such as
Ctrl-C) removes the veths, routes and qdiscs with them.  :meth:`Topology.close` is
idempotent.

Public API::

    check_host() -> None             raises LabError naming what is missing (root, a tool)
    Topology(rate_kbit, delay_ms=0, hf=None)
                                     async with: three namespaces, two veth pairs (or a veth
                                     pair and a delay or HF wire), forwarding
        .site_a / .site_b            Site (namespace, interface, address)
        .router                      the router's namespace
        await .shape(profile, rate_kbit=None)   install a profile on both router egresses
        .exec_prefix(namespace) -> list[str]    ["ip", "netns", "exec", namespace]
        await .round_trip() -> float            seconds from A's SYN to B's RST, the least of 5
        await .link_counters() -> dict          the wire's counters now (lab.wire's line)
        .close()                     synchronous, idempotent
    lab_namespaces() -> list[str]    namespaces of this lab that exist (for leak checks)
    LabError
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from lab.hf import HfSettings, air_time, largest_packet
from lab.profiles import tc_commands
from lab.wire import hf_options

ROOT = Path(__file__).resolve().parents[1]
"""The repository: where ``python -m lab.wire`` is found."""
NETNS_DIR = "/run/netns"
"""Where ``ip netns add`` keeps the namespaces' files."""

NAMESPACE_PREFIX = "aiox400-lab-"
"""Every namespace the lab creates starts with this."""
MTU = 1500
"""Of the veths, and of the wire's TUN devices unless an HF transmission holds less."""
IPV6_MIN_MTU = 1280
"""RFC 8200 clause 5: a link of a smaller MTU carries no IPv6."""
WIRE_STOP = 5.0
"""Seconds the wire has to write its last counters after SIGTERM before it is killed."""

TOOLS = {
    "ip": "iproute2",
    "tc": "iproute2",
    "ethtool": "ethtool",
    "sysctl": "procps",
    "tcpdump": "tcpdump",
}
"""Command -> the Debian package that provides it."""

SITE_SYSCTLS = (
    "net.ipv4.tcp_reflect_tos=1",
    "net.ipv4.tcp_no_metrics_save=1",
)


class LabError(Exception):
    """The lab cannot run here (the message says why and what to do)."""


@dataclass(frozen=True, slots=True)
class Site:
    """One site's end of the topology."""

    namespace: str
    interface: str
    address: str
    gateway: str


def check_host() -> None:
    """Raise :class:`LabError` unless this process is root and every tool is installed."""
    if os.geteuid() != 0:
        raise LabError("the lab needs root (network namespaces): run it with sudo or as root")
    missing = sorted({package for tool, package in TOOLS.items() if not shutil.which(tool)})
    if missing:
        raise LabError(
            f"missing tool(s) from {', '.join(missing)}: apt-get install -y {' '.join(missing)}"
        )


async def run(*argv: str, check: bool = True) -> str:
    """Run a command; its standard output.  :class:`LabError` with its error output when it
    fails and ``check``."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    if check and process.returncode != 0:
        text = err.decode(errors="replace").strip()
        raise LabError(f"{' '.join(argv)}: {_explain(text)}")
    return out.decode(errors="replace")


def _explain(text: str) -> str:
    if "Specified qdisc kind is unknown" in text or "Unknown qdisc" in text:
        return f"{text} (this kernel lacks the qdisc: the lab needs HTB and pfifo built in)"
    if "Unknown filter" in text or "Specified filter kind is unknown" in text:
        return f"{text} (this kernel lacks the u32 classifier the lab needs)"
    return text


def _counters(path: Path) -> dict[str, Any] | None:
    """The wire's last counters' line (None: none yet); the wire replaces the file whole."""
    try:
        line: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    return line


async def lab_namespaces() -> list[str]:
    """The namespaces of any lab that exist now."""
    listing = await run("ip", "netns", "list")
    names = [line.split()[0] for line in listing.splitlines() if line.strip()]
    return [name for name in names if name.startswith(NAMESPACE_PREFIX)]


class Topology:
    """Site A, router, site B: three namespaces joined by two veth pairs (IPv4)."""

    def __init__(self, rate_kbit: int, delay_ms: float = 0, hf: HfSettings | None = None) -> None:
        suffix = secrets.token_hex(3)
        self.rate_kbit = rate_kbit
        self.delay_ms = delay_ms
        """One-way delay of the wire between site A and the router (0: a veth pair)."""
        self.hf = hf
        """The HF profile of the wire between site A and the router (None: no HF wire)."""
        self.router = f"{NAMESPACE_PREFIX}r-{suffix}"
        self.site_a = Site(f"{NAMESPACE_PREFIX}a-{suffix}", "a0", "198.18.1.2", "198.18.1.1")
        self.site_b = Site(f"{NAMESPACE_PREFIX}b-{suffix}", "b0", "198.18.2.2", "198.18.2.1")
        self.router_links = (("ra", "198.18.1.1"), ("rb", "198.18.2.1"))
        """The router's interfaces toward A and toward B, and their addresses."""
        self.profile: str | None = None
        self._created: list[str] = []
        self._wire: subprocess.Popen[bytes] | None = None
        self._wire_folder: Path | None = None
        """Where the wire writes its counters."""

    @property
    def namespaces(self) -> tuple[str, str, str]:
        return (self.site_a.namespace, self.router, self.site_b.namespace)

    def exec_prefix(self, namespace: str) -> list[str]:
        return ["ip", "netns", "exec", namespace]

    async def __aenter__(self) -> Topology:
        try:
            await self._build()
        except BaseException:
            self.close()
            raise
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    async def _build(self) -> None:
        for namespace in self.namespaces:
            await run("ip", "netns", "add", namespace)
            self._created.append(namespace)
            await run("ip", "-n", namespace, "link", "set", "lo", "up")
        for site, (router_if, router_address) in zip(
            (self.site_a, self.site_b), self.router_links, strict=True
        ):
            if site is self.site_a and (self.delay_ms > 0 or self.hf is not None):
                await self._wire_link(site, router_if, router_address)
            else:
                await self._link(site, router_if, router_address)
        await self._in(self.router, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        for site in (self.site_a, self.site_b):
            for setting in SITE_SYSCTLS:
                await self._in(site.namespace, "sysctl", "-qw", setting)
        await self.shape("fifo")
        await self._ping()

    async def _link(self, site: Site, router_if: str, router_address: str) -> None:
        await run(
            "ip", "-n", site.namespace, "link", "add", site.interface, "type", "veth",
            "peer", "name", router_if, "netns", self.router,
        )  # fmt: skip
        for namespace, interface, address in (
            (site.namespace, site.interface, site.address),
            (self.router, router_if, router_address),
        ):
            await run("ip", "-n", namespace, "addr", "add", f"{address}/24", "dev", interface)
            await run("ip", "-n", namespace, "link", "set", interface, "up")
            await self._in(
                namespace, "ethtool", "-K", interface, "tso", "off", "gso", "off", "gro", "off"
            )
        await run("ip", "-n", site.namespace, "route", "add", "default", "via", site.gateway)

    def _wire_options(self) -> list[str]:
        if self.hf is None:
            return ["--delay-ms", f"{self.delay_ms:g}"]
        self._wire_folder = Path(tempfile.mkdtemp(prefix="aiox400-lab-wire-"))
        return [*hf_options(self.hf), "--counters", str(self._wire_folder / "counters.json")]

    @property
    def mtu(self) -> int:
        """Of the wire's devices: what one HF transmission holds, at most MTU."""
        return MTU if self.hf is None else min(MTU, largest_packet(self.hf))

    async def _wire_link(self, site: Site, router_if: str, router_address: str) -> None:
        """TUN ``router_if`` in the router, TUN ``site.interface`` in the site, joined by
        :mod:`lab.wire` (it creates both; they go when it ends)."""
        self._wire = subprocess.Popen(
            [
                *self.exec_prefix(self.router), sys.executable, "-m", "lab.wire",
                *self._wire_options(), "--here", router_if,
                "--there", site.interface, "--there-netns", f"{NETNS_DIR}/{site.namespace}",
            ],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,  # (a Ctrl-C is the lab's to handle, in order)
        )  # fmt: skip
        for namespace, interface in ((self.router, router_if), (site.namespace, site.interface)):
            await self._until_link(namespace, interface)
        for namespace, interface, address in (
            (site.namespace, site.interface, site.address),
            (self.router, router_if, router_address),
        ):
            await run("ip", "-n", namespace, "addr", "add", f"{address}/24", "dev", interface)
            await run("ip", "-n", namespace, "link", "set", interface, "mtu", str(self.mtu))
            # No IPv6 autoconfiguration on the air: IPv4 only.  (Below IPv6's least MTU,
            # 1280, the kernel gives the device no IPv6 at all: nothing to turn off.)
            if self.hf is not None and self.mtu >= IPV6_MIN_MTU:
                await self._in(
                    namespace, "sysctl", "-qw", f"net.ipv6.conf.{interface}.disable_ipv6=1"
                )
            await run("ip", "-n", namespace, "link", "set", interface, "up")
        await run("ip", "-n", site.namespace, "route", "add", "default", "via", site.gateway)

    async def link_counters(self, timeout: float = 30.0) -> dict[str, Any]:
        """The HF wire's counters now (:mod:`lab.wire`'s line): asks it (SIGUSR1) and waits
        for the line it writes."""
        wire, folder = self._wire, self._wire_folder
        if wire is None or folder is None:
            raise LabError("there is no HF wire to read counters from")
        path = folder / "counters.json"
        before = _counters(path)
        wire.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while True:
            line = _counters(path)
            if line is not None and (before is None or line["report"] > before["report"]):
                return line
            if wire.poll() is not None or time.monotonic() > deadline:
                raise LabError(f"the HF wire wrote no counters within {timeout:g} s")
            await asyncio.sleep(0.02)

    async def _until_link(self, namespace: str, interface: str) -> None:
        for _ in range(100):
            if self._wire is not None and self._wire.poll() is not None:
                raise LabError(f"the delay wire exited ({self._wire.returncode}) at start")
            if await run("ip", "-n", namespace, "link", "show", interface, check=False):
                return
            await asyncio.sleep(0.05)
        raise LabError(f"the delay wire did not create {interface} within 5 s")

    async def round_trip(self) -> float:
        """Seconds from a SYN of site A to the RST of site B (a closed port), the least of
        five: the network's round trip, as a ping's but over the path TCP takes."""
        probe = (
            "import socket,time\n"
            "best=9.0\n"
            "for _ in range(5):\n"
            " s=socket.socket(); s.settimeout(5); t=time.monotonic()\n"
            f" s.connect_ex(('{self.site_b.address}', 9)); best=min(best,time.monotonic()-t)\n"
            " s.close(); time.sleep(0.1)\n"
            "print(best)\n"
        )
        out = await self._in(self.site_a.namespace, sys.executable, "-c", probe)
        return float(out)

    async def _in(self, namespace: str, *argv: str) -> str:
        return await run(*self.exec_prefix(namespace), *argv)

    async def _ping(self) -> None:
        """Wait until A reaches B through the router (ARP and forwarding in place)."""
        wait, tries = 0.2, 50
        if self.hf is not None:
            # Few probes with long waits: over HF each one's SYNs, retransmitted from 1 s,
            # hold the air, and a RST comes a turnaround after A's transmission ends.
            round_trip = 2 * air_time(60, self.hf) + self.hf.turnaround
            wait, tries = 4 * round_trip + 30, 3
        for _ in range(tries):
            probe = await asyncio.create_subprocess_exec(
                *self.exec_prefix(self.site_a.namespace),
                "python3", "-c",
                f"import socket,sys; s=socket.socket(); s.settimeout({wait:g});"
                f"sys.exit(s.connect_ex(('{self.site_b.address}', 9)) not in (111,))",
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            if await probe.wait() == 0:  # refused: B answered with a RST
                return
            await asyncio.sleep(0.1)
        raise LabError(f"site A cannot reach {self.site_b.address} through the router")

    async def shape(self, profile: str, rate_kbit: int | None = None) -> None:
        """Install ``profile`` at ``rate_kbit`` (default: the topology's) on both router
        egress interfaces, replacing what was there."""
        rate = rate_kbit or self.rate_kbit
        for interface, _ in self.router_links:
            await run(
                *self.exec_prefix(self.router),
                "tc",
                "qdisc",
                "del",
                "dev",
                interface,
                "root",
                check=False,
            )  # fmt: skip (a fresh veth has no root qdisc to delete)
            for argv in tc_commands(interface, profile, rate):
                await self._in(self.router, "tc", *argv)
        self.profile, self.rate_kbit = profile, rate

    async def qdisc_stats(self, interface: str = "rb") -> str:
        """``tc -s class show`` of a router interface (for a report of drops)."""
        return await self._in(self.router, "tc", "-s", "class", "show", "dev", interface)

    def close(self) -> None:
        """Stop the wire (SIGTERM, then SIGKILL after WIRE_STOP seconds), and delete every
        namespace this topology created (and with them its veths, routes and qdiscs);
        safe to call again.  Synchronous on purpose: a second Ctrl-C or a cancellation
        cannot interrupt it half-way (it takes well under a second)."""
        wire, self._wire = self._wire, None
        if wire is not None:
            if wire.poll() is None:
                wire.terminate()
            try:
                wire.wait(WIRE_STOP)
            except subprocess.TimeoutExpired:
                wire.kill()
                wire.wait()
        folder, self._wire_folder = self._wire_folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        while self._created:
            namespace = self._created.pop()
            subprocess.run(
                ["ip", "netns", "del", namespace],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
