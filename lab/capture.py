"""Packet captures at the router: where a small message's time goes, and what the shaper
let through for each connection.

The router sees every packet of a transfer twice: when it arrives from site A on ``ra``
and when its shaper lets it out toward site B on ``rb`` (a capture on an egress interface
is taken as the packet is handed to the device, after the qdisc).  With the submission
time at A and the commit time at B (one clock: one host), a message's time from
submission to B's store falls into three parts:

    MTA A       submission at A -> its first data packet reaches the router
    link        that packet reaches the router -> the message's last data packet leaves it
                (waiting behind other traffic, and the message's own octets at the shaped
                rate once the shaper's burst is spent)
    MTA B       the last data packet leaves the router -> B has committed the delivery

A data packet is a TCP segment with payload from A to B's listener ``port``; a message's
packets are those that reached the router between its submission and its commit (the lab
sends one message at a time on that port).  ``link_octets`` counts each such packet as the
shaper does (IP packet, plus 14 octets of Ethernet header on a veth).

The captures are made with tcpdump (``-Q in`` on ``ra``, ``-Q out`` on ``rb``) into pcap
files, read here without any other library (pcap: the libpcap file format, 24-octet
header, 16-octet record headers; link types Ethernet and raw IP).

Public API::

    Packet                              one captured TCP segment
    read_pcap(path) -> list[Packet]
    Capture(topology, ports, folder)    async with: tcpdump on both router interfaces
        .arrived, .left                 packets, once the capture has ended
    Parts                               one message's time, split
    split(submitted, stored, arrived, left, port) -> Parts | None
    cumulative(packets, ports, start, interval) -> [(seconds, {name: octets})]
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from lab.topology import LabError, Topology

ETHERNET = 1
RAW_IP = (101, 12, 14)
"""Link types of raw IPv4/IPv6 packets (LINKTYPE_RAW and the DLT_RAW values libpcap may
write)."""
ETHERNET_HEADER = 14
SNAPLEN = 160
"""Octets kept of each packet: the Ethernet, IP and TCP headers, never the payload."""
START_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Packet:
    """One captured IPv4 TCP segment."""

    at: float
    """Capture time, seconds since the epoch."""
    source_port: int
    destination_port: int
    payload: int
    """TCP payload octets."""
    link_octets: int
    """What the shaper counts: the IP packet's length, plus the link header on Ethernet."""


def read_pcap(path: Path) -> list[Packet]:
    """The IPv4 TCP segments of a pcap file, in capture order (others are skipped)."""
    data = path.read_bytes()
    if len(data) < 24:
        return []  # (tcpdump stopped before writing its header: nothing captured)
    magic = data[:4]
    orders = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">"}
    nano = {b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">"}
    order = orders.get(magic) or nano.get(magic)
    if order is None:
        raise LabError(f"{path}: not a pcap file (magic {magic.hex()})")
    fraction = 1e-9 if magic in nano else 1e-6
    (link_type,) = struct.unpack_from(order + "I", data, 20)
    if link_type != ETHERNET and link_type not in RAW_IP:
        raise LabError(f"{path}: link type {link_type} is not Ethernet or raw IP")
    packets = []
    offset = 24
    while offset + 16 <= len(data):
        seconds, part, kept, _ = struct.unpack_from(order + "IIII", data, offset)
        frame = data[offset + 16 : offset + 16 + kept]
        offset += 16 + kept
        packet = _segment(frame, link_type, seconds + part * fraction)
        if packet is not None:
            packets.append(packet)
    return packets


def _segment(frame: bytes, link_type: int, at: float) -> Packet | None:
    header = 0
    if link_type == ETHERNET:
        if len(frame) < ETHERNET_HEADER or frame[12:14] != b"\x08\x00":
            return None
        header = ETHERNET_HEADER
    ip = frame[header:]
    if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
        return None
    ip_header = (ip[0] & 0x0F) * 4
    (total,) = struct.unpack_from(">H", ip, 2)
    if len(ip) < ip_header + 13:
        return None
    source, destination = struct.unpack_from(">HH", ip, ip_header)
    tcp_header = (ip[ip_header + 12] >> 4) * 4
    return Packet(at, source, destination, total - ip_header - tcp_header, total + header)


class Capture:
    """tcpdump in the router's namespace: what arrives on ``ra`` from A and what leaves
    ``rb`` toward B, of the TCP ``ports``, for as long as the context is open."""

    def __init__(self, topology: Topology, ports: tuple[int, ...], folder: Path) -> None:
        self.topology = topology
        self.ports = ports
        self.folder = folder
        self.arrived: list[Packet] = []
        self.left: list[Packet] = []
        self._dumps: list[tuple[asyncio.subprocess.Process, Path]] = []

    async def __aenter__(self) -> Capture:
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            for interface, direction in (("ra", "in"), ("rb", "out")):
                await self._start(interface, direction)
        except BaseException:
            await self._stop()
            raise
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        files = await self._stop()
        if kind is None:
            self.arrived, self.left = (read_pcap(path) for path in files)

    async def _start(self, interface: str, direction: str) -> None:
        path = self.folder / f"{interface}-{direction}.pcap"
        process = await asyncio.create_subprocess_exec(
            *self.topology.exec_prefix(self.topology.router),
            "tcpdump", "-i", interface, "-Q", direction, "-n", "-U", "--immediate-mode",
            "-Z", "root",
            "-s", str(SNAPLEN), "-w", str(path),
            f"tcp and ({' or '.join(f'port {port}' for port in self.ports)})",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        self._dumps.append((process, path))
        assert process.stderr is not None
        try:  # tcpdump says "listening on ..." once its filter is in place
            async with asyncio.timeout(START_TIMEOUT):
                line = await process.stderr.readline()
        except TimeoutError:
            raise LabError(
                f"tcpdump on {interface} did not start within {START_TIMEOUT:g} s"
            ) from None
        if b"listening on" not in line:
            rest = await process.stderr.read()
            raise LabError(f"tcpdump on {interface}: {(line + rest).decode().strip()}")

    async def _stop(self) -> list[Path]:
        dumps, self._dumps = self._dumps, []
        for process, _ in dumps:
            if process.returncode is None:
                process.terminate()  # (tcpdump writes what it has and exits)
        for process, _ in dumps:
            await process.wait()
        return [path for _, path in dumps]


@dataclass(frozen=True, slots=True)
class Parts:
    """One message's time from submission at A to B's store, in seconds, split."""

    total: float
    mta_a: float
    link: float
    mta_b: float
    packets: int
    link_octets: int


def split(
    submitted: datetime,
    stored: datetime,
    arrived: list[Packet],
    left: list[Packet],
    port: int,
) -> Parts | None:
    """The parts of one message's time; None when no data packet of it was captured."""
    start, end = _epoch(submitted), _epoch(stored)
    mine = [p for p in arrived if p.destination_port == port and p.payload and start <= p.at]
    mine = [p for p in mine if p.at <= end]
    out = [p for p in left if p.destination_port == port and p.payload and start <= p.at]
    out = [p for p in out if p.at <= end]
    if not mine or not out:
        return None
    first_in, last_out = mine[0].at, out[-1].at
    return Parts(
        total=end - start,
        mta_a=first_in - start,
        link=last_out - first_in,
        mta_b=end - last_out,
        packets=len(mine),
        link_octets=sum(p.link_octets for p in mine),
    )


def _epoch(moment: datetime) -> float:
    return moment.astimezone(UTC).timestamp()


def cumulative(
    packets: list[Packet], ports: dict[str, int], start: datetime, interval: float
) -> list[tuple[float, dict[str, int]]]:
    """(seconds since ``start``, name -> TCP payload octets toward its port so far), at
    ``start`` and every ``interval`` after it until the last packet: what the shaper let through
    for each, retransmissions included."""
    origin = _epoch(start)
    names = {port: name for name, port in ports.items()}
    mine = [p for p in packets if p.destination_port in names and p.payload and p.at >= origin]
    totals = dict.fromkeys(ports, 0)
    readings: list[tuple[float, dict[str, int]]] = []
    due = 0.0
    for packet in mine:
        while packet.at - origin > due:
            readings.append((due, dict(totals)))
            due += interval
        totals[names[packet.destination_port]] += packet.payload
    readings.append((due, dict(totals)))
    return readings
