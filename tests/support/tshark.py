"""Wireshark as a referee for the bytes on the wire (test helper, not a test module).

Wireshark's dissectors for RFC 1006, X.224, X.225, X.226 (presentation), X.227 (ACSE), X.228
(RTSE), X.880 (ROS), X.411 (P1), X.420 (P22) and STANAG 4406 (P772) are a reading of our PDUs
written by other people.  ``dumpcap`` captures loopback traffic and ``tshark`` decodes it into
typed records; the decode problems are the ones shared/tools/x400-referee counts.

Public API::

    require_tshark()                            skip the test without tshark and dumpcap
                                                (fail instead when AIOX400_REQUIRE_TSHARK=1)
    LoopbackCapture(pcap, ports, protocol="tcp")   dumpcap on lo; start() / stop(), with,
                                                async with
    decode(pcap, ports, keylog=None) -> Decoded frames, X.400 fields, problems (keylog: the
                                                SSLKEYLOGFILE of TLS on those ports)
    matching(pcap, ports, display_filter)       numbers of the frames a display filter selects
    fields(pcap, ports, display_filter, names)  those frames' values of some fields
    Decoded.values(field), Decoded.dscp_by_port()
    bpf(ports), is_server_port(port, ports)

``ports`` is a comma list of TCP ports and ranges, as tshark takes it: ``"102,5000-5003"``.
Every capture is decoded with ``-o tpkt.tcp.port:<ports>``, so RFC 1006 is recognised on them.
"""

from __future__ import annotations

import asyncio
import enum
import json
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from mta import link as links
from p1.association.connection import BindRequested, TransferTooLong
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult

TOOLS = ("tshark", "dumpcap")
TIMEOUT = 30.0  # seconds any one tshark or dumpcap step may take before the test fails
# dumpcap's kernel buffer, MiB.  Its default (2 MiB) holds some thirty 64 KiB loopback
# frames: a 1 MB transfer overflowed it now and then, and the kernel dropped frames.
BUFFER_MIB = 64

# The referee's X.411 (P1), P772 and P22 fields, plus the ACSE and presentation context names.
X400_FIELDS = (
    "acse.aSO_context_name",
    "pres.abstract_syntax_name",
    "p1.MTABindArgument",
    "p1.MTABindResult",
    "p1.MTABindError",
    "p1.authenticated.initiator-name",
    "p1.authenticated.responder-name",
    "p1.MTS_APDU",
    "p1.local_identifier",
    "p1.priority",
    "p1.content_type",
    "p1.built_in",
    "p1.extended",
    "p1.mta_name",
    "p1.arrival_time",
    "p1.routing_action",
    "p1.report_type",
    "p772.PrimaryPrecedence",
    "p772.CopyPrecedence",
    "p772.PriorityLevelQualifier",
    "p22.subject",
)
_FRAME_FIELDS = (
    "frame.number",
    "tcp.srcport",
    "tcp.dstport",
    "ip.dsfield.dscp",
    "ipv6.tclass.dscp",
    "_ws.col.Protocol",
    "_ws.col.Info",
    *X400_FIELDS,
)
_PROBLEM_FIELDS = ("frame.number", "_ws.col.Protocol", "_ws.col.Info", "_ws.expert.message")

# What x400-referee counts as an OSI / X.400 decode problem; any expert Error counts too.
X400_PROBLEMS = " || ".join(
    (
        "_ws.malformed",
        "ros.unknown_ros_pdu",
        "rtse.unknown_rtse_pdu",
        "rtse.dissector_oid_not_implemented",
        "rtse.bad_abstract_syntax",
        "ros.dissector_oid_not_implemented",
        "pres.dissector_not_available",
        "pres.invalid_offset",
        "pres.wrong_spdu_type",
        "acse.dissector_not_available",
        "acse.malformed",
        "p1.unsupported_pdu",
        "p1.zero_pdu",
        "p1.unknown.built_in_content_type",
        "p1.unknown.standard_extension",
        "p1.unknown.extension_attribute_type",
        "ber.error.oid_not_implemented",
        "ber.error.syntax_not_implemented",
        "ber.error.unknown_field.set",
        "ber.error.unknown_field.sequence",
        "ber.error.missing_field.set",
        "ses.bad_length",
        "ses.bad_parameter_length",
    )
)
PROBLEMS = f'{X400_PROBLEMS} || _ws.expert.severity == "Error"'


class TsharkError(Exception):
    """tshark or dumpcap failed; the message holds the command and what it said."""


# --- availability ---------------------------------------------------------------------


def require_tshark() -> None:
    """Skip the calling test when tshark or dumpcap is missing (fail when it is required)."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if not missing:
        return
    why = f"{' and '.join(missing)} not found (install the tshark package; .ci/run does)"
    if os.environ.get("AIOX400_REQUIRE_TSHARK", "") not in ("", "0"):
        pytest.fail(why)  # CI must judge the traffic, never skip it
    pytest.skip(why)


# --- ports ----------------------------------------------------------------------------


def _ranges(ports: str) -> list[tuple[int, int]]:
    """``"102,5000-5003"`` -> ``[(102, 102), (5000, 5003)]``."""
    ranges = []
    for part in ports.split(","):
        low, _, high = part.strip().partition("-")
        ranges.append((int(low), int(high or low)))
    return ranges


def bpf(ports: str, protocol: str = "tcp") -> str:
    """The capture filter for TCP (or ``protocol``) on ``ports``: ``tcp port 102 or tcp
    portrange 5000-5003``."""
    return " or ".join(
        f"{protocol} port {low}" if low == high else f"{protocol} portrange {low}-{high}"
        for low, high in _ranges(ports)
    )


def is_server_port(port: int, ports: str) -> bool:
    return any(low <= port <= high for low, high in _ranges(ports))


# --- capture --------------------------------------------------------------------------


class LoopbackCapture:
    """``dumpcap`` writing the TCP traffic of ``ports`` on ``lo`` to ``pcap`` (libpcap format).

    ``start()`` returns once dumpcap captures: it names its file on standard error only after
    the interface is open with its filter set and the file header is written.  ``stop()``
    returns once every packet sent before it is in the file, and dumpcap has exited.
    """

    def __init__(self, pcap: Path, ports: str, protocol: str = "tcp") -> None:
        self.pcap = pcap
        self.ports = ports
        self.protocol = protocol
        # The end-of-capture marker is a datagram to this socket itself: nothing answers it,
        # and decode() reads only TCP frames, so it never shows in the results.
        self._marker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._token = b"aiox400 end of capture " + secrets.token_hex(8).encode()
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr = b""

    def start(self) -> None:
        self._marker.bind(("127.0.0.1", 0))
        marker_port = self._marker.getsockname()[1]
        capture_filter = f"({bpf(self.ports, self.protocol)}) or (udp dst port {marker_port})"
        argv = ["dumpcap", "-P", "-i", "lo", "-B", str(BUFFER_MIB), "-f", capture_filter]
        argv += ["-w", str(self.pcap)]
        self._process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self._read_until(lambda: b"\nFile: " in self._stderr, "start capturing")

    def stop(self) -> None:
        """Wait until dumpcap has written a marker sent now, then end it with SIGINT."""
        # On SIGINT dumpcap drops the packets the kernel still buffers for it (its "flushed"
        # count), so first wait for a datagram sent after all our traffic to reach the file.
        self._marker.sendto(self._token, self._marker.getsockname())
        self._read_until(self._marker_written, "write the end-of-capture marker")
        process = self._running()
        process.send_signal(signal.SIGINT)
        self._end(process)
        if process.returncode != 0:
            raise TsharkError(f"dumpcap exited with {process.returncode}: {self._said()}")

    def abort(self) -> None:
        """End dumpcap without waiting for the packets in flight (after a failure)."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._end(self._process)
        self._marker.close()

    def _running(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            raise TsharkError("the capture was not started")
        return self._process

    def _marker_written(self) -> bool:
        return self._token in self.pcap.read_bytes()

    def _read_until(self, done: Callable[[], bool], what: str) -> None:
        """Read dumpcap's standard error until ``done()``; each packet count follows a flush."""
        process = self._running()
        assert process.stderr is not None
        deadline = time.monotonic() + TIMEOUT
        while not done():
            ready, _, _ = select.select(
                [process.stderr], [], [], max(0.0, deadline - time.monotonic())
            )
            chunk = os.read(process.stderr.fileno(), 4096) if ready else b""
            if not chunk:
                self.abort()
                raise TsharkError(f"dumpcap did not {what}: {self._said()}")
            self._stderr += chunk

    def _end(self, process: subprocess.Popen[bytes]) -> None:
        try:
            _, rest = process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            _, rest = process.communicate()
        self._stderr += rest or b""
        self._marker.close()

    def _said(self) -> str:
        return self._stderr.decode(errors="replace").replace("\r", "\n").strip()

    def __enter__(self) -> LoopbackCapture:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if kind is None:
            self.stop()
        else:
            self.abort()

    async def __aenter__(self) -> LoopbackCapture:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.abort if kind is not None else self.stop)


# --- decode ---------------------------------------------------------------------------


class Direction(enum.Enum):
    TO_SERVER = "client->server"
    TO_CLIENT = "server->client"


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """One TCP frame as tshark reads it; ``fields`` holds the X.400 fields present in it."""

    number: int
    src_port: int
    dst_port: int
    dscp: int | None  # IPv4 DSCP, else IPv6 traffic-class DSCP
    protocol: str
    info: str
    fields: dict[str, tuple[str, ...]]  # every occurrence, in tshark's order, as tshark -T fields


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """A frame matching ``PROBLEMS``, with its Info column and its expert messages."""

    number: int
    protocol: str
    info: str
    expert: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Decoded:
    ports: str
    frames: tuple[Frame, ...]
    problems: tuple[Problem, ...]

    def values(self, field: str) -> tuple[str, ...]:
        """Every occurrence of an X.400 field, over all frames in order."""
        return tuple(value for frame in self.frames for value in frame.fields.get(field, ()))

    def frame(self, number: int) -> Frame:
        return next(frame for frame in self.frames if frame.number == number)

    def dscp_by_port(self) -> dict[tuple[int, Direction], set[int]]:
        """The DSCP values seen per (server port, direction)."""
        seen: dict[tuple[int, Direction], set[int]] = {}
        for frame in self.frames:
            key = _role(frame, self.ports)
            if key is not None and frame.dscp is not None:
                seen.setdefault(key, set()).add(frame.dscp)
        return seen


def _role(frame: Frame, ports: str) -> tuple[int, Direction] | None:
    if is_server_port(frame.dst_port, ports):
        return frame.dst_port, Direction.TO_SERVER
    if is_server_port(frame.src_port, ports):
        return frame.src_port, Direction.TO_CLIENT
    return None


Layers = dict[str, list[str]]


def _tshark(
    pcap: Path,
    ports: str,
    display_filter: str,
    fields: Iterable[str],
    keylog: Path | None = None,
) -> list[Layers]:
    """One tshark pass: the ``fields`` of each frame ``display_filter`` selects."""
    argv = ["tshark", "-n", "-r", str(pcap), "-o", f"tpkt.tcp.port:{ports}"]
    if keylog is not None:
        argv += _inside_tls(ports, keylog)
    argv += ["-Y", display_filter, "-T", "json"]
    for name in fields:
        argv += ["-e", name]
    done = subprocess.run(argv, capture_output=True, timeout=TIMEOUT, check=False)
    if done.returncode != 0:
        raise TsharkError(f"{' '.join(argv)}: {done.stderr.decode(errors='replace').strip()}")
    packets: list[dict[str, Any]] = json.loads(done.stdout)
    return [_layers(packet["_source"]["layers"]) for packet in packets]


def _inside_tls(ports: str, keylog: Path) -> list[str]:
    """TLS on ``ports``, decrypted with the secrets in ``keylog``, RFC 1006 inside it."""
    argv = ["-o", f"tls.keylog_file:{keylog}"]
    for low, high in _ranges(ports):
        for port in range(low, high + 1):
            argv += ["-d", f"tcp.port=={port},tls", "-d", f"tls.port=={port},tpkt"]
    return argv


def _layers(layers: dict[str, Any]) -> Layers:
    return {str(name): [str(value) for value in values] for name, values in layers.items()}


def _first(layers: Layers, *names: str) -> str | None:
    return next((layers[name][0] for name in names if name in layers), None)


def _frame(layers: Layers) -> Frame:
    dscp = _first(layers, "ip.dsfield.dscp", "ipv6.tclass.dscp")
    return Frame(
        number=int(layers["frame.number"][0]),
        src_port=int(layers["tcp.srcport"][0]),
        dst_port=int(layers["tcp.dstport"][0]),
        dscp=None if dscp is None else int(dscp),
        protocol=_first(layers, "_ws.col.Protocol") or "",
        info=_first(layers, "_ws.col.Info") or "",
        fields={name: tuple(layers[name]) for name in X400_FIELDS if name in layers},
    )


def _problem(layers: Layers) -> Problem:
    return Problem(
        number=int(layers["frame.number"][0]),
        protocol=_first(layers, "_ws.col.Protocol") or "",
        info=_first(layers, "_ws.col.Info") or "",
        expert=tuple(layers.get("_ws.expert.message", ())),
    )


def decode(pcap: Path, ports: str, keylog: Path | None = None) -> Decoded:
    """Every TCP frame of ``pcap`` with its X.400 fields, and the frames with problems;
    with ``keylog``, the traffic on ``ports`` is TLS, decrypted with its secrets."""
    frames = tuple(_frame(layers) for layers in _tshark(pcap, ports, "tcp", _FRAME_FIELDS, keylog))
    problems = tuple(
        _problem(layers) for layers in _tshark(pcap, ports, PROBLEMS, _PROBLEM_FIELDS, keylog)
    )
    return Decoded(ports=ports, frames=frames, problems=problems)


def matching(pcap: Path, ports: str, display_filter: str) -> tuple[int, ...]:
    """The numbers of the frames ``display_filter`` selects (tshark resolves value names)."""
    found = _tshark(pcap, ports, display_filter, ("frame.number",))
    return tuple(int(layers["frame.number"][0]) for layers in found)


# --- a responder for the referee's runs ---------------------------------------------------

ARGUMENT = MTABindArgument(initiator_name="mta-a", password="a-pw")
"""What the referee's initiators bind with."""
RESULT = MTABindResult(responder_name="mta-b", password="b-pw")
"""What :class:`Store` answers a bind with ``ARGUMENT``."""


@dataclass
class Store:
    """A responder that accepts ``ARGUMENT`` as ``RESULT`` and keeps every MTS-APDU it
    is given, in order (a :class:`mta.link.Responder`)."""

    stored: list[bytes] = field(default_factory=list)
    served: list[asyncio.Task[None]] = field(default_factory=list)

    async def on_bind(self, event: BindRequested) -> MTABindResult | MTABindError:
        if (event.argument.initiator_name, event.argument.password) != (
            ARGUMENT.initiator_name,
            ARGUMENT.password,
        ):
            return MTABindError.AUTHENTICATION_ERROR
        return RESULT

    async def on_transfer(self, apdu: bytes) -> None:
        self.stored.append(apdu)

    async def on_transfer_too_long(self, event: TransferTooLong) -> None:
        raise links.TransferRefusedError(f"{event.size} octets: over max_message_size")

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.served.append(task)
        await links.serve_link(reader, writer, self)


def fields(pcap: Path, ports: str, display_filter: str, names: Iterable[str]) -> list[Layers]:
    """The ``names`` fields of each frame ``display_filter`` selects, as tshark writes them
    (one list of values per field present; bytes as hex digits)."""
    return _tshark(pcap, ports, display_filter, names)
