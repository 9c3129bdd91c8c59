"""The TCP conversations of a capture file, read without tshark (fuzz harness helper).

A classic libpcap file (microsecond or nanosecond timestamps, either byte order) is a
24-octet header, then per packet a 16-octet record header and the captured octets.  Only
what the reference captures hold is read: Ethernet II (link type 1, with 802.1Q tags),
Linux cooked capture (113), BSD loopback (0) and raw IP (101); IPv4 and IPv6; TCP.  Each
TCP connection's payload is kept per direction, in sequence order, retransmissions
dropped, so that it can be played again: the side that sent the SYN (or, when the capture
missed it, the first payload) is the client.

Public API::

    Segment(from_client, data)
    Conversation(name, client_port, server_port, segments)
        .client_data / .server_data           each direction's payload joined
    read_conversations(path) -> list[Conversation]   (in the order they began)
    PcapError
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

_MAGIC = {
    b"\xd4\xc3\xb2\xa1": "<",  # microseconds, little endian
    b"\xa1\xb2\xc3\xd4": ">",
    b"\x4d\x3c\xb2\xa1": "<",  # nanoseconds
    b"\xa1\xb2\x3c\x4d": ">",
}
_FILE_HEADER = 24
_RECORD_HEADER = 16
_LINK_ETHERNET = 1
_LINK_NULL = 0
_LINK_RAW = 101
_LINK_LINUX_SLL = 113
_ETHERTYPE_IPV4 = 0x0800
_ETHERTYPE_IPV6 = 0x86DD
_ETHERTYPE_VLAN = (0x8100, 0x88A8)
_PROTOCOL_TCP = 6
_TCP_SYN = 0x02
_TCP_ACK = 0x10
_IPV6_HEADER = 40
_IPV6_EXTENSIONS = (0, 43, 60)  # hop-by-hop, routing, destination options


class PcapError(ValueError):
    """A file that is not a capture this reader understands."""


@dataclass(frozen=True, slots=True)
class Segment:
    """Payload octets of one TCP segment and which side sent them."""

    from_client: bool
    data: bytes


@dataclass(slots=True)
class Conversation:
    """One TCP connection of a capture: its payload, segment by segment, in order."""

    name: str
    client_port: int
    server_port: int
    segments: list[Segment] = field(default_factory=list)

    @property
    def client_data(self) -> bytes:
        return b"".join(s.data for s in self.segments if s.from_client)

    @property
    def server_data(self) -> bytes:
        return b"".join(s.data for s in self.segments if not s.from_client)


@dataclass(frozen=True, slots=True)
class _Packet:
    source: tuple[bytes, int]
    destination: tuple[bytes, int]
    sequence: int
    flags: int
    payload: bytes


@dataclass(slots=True)
class _Stream:
    conversation: Conversation
    client: tuple[bytes, int]
    next_sequence: dict[bool, int] = field(default_factory=dict)


def read_conversations(path: Path) -> list[Conversation]:
    """Every TCP connection in the capture at ``path`` that carried payload."""
    streams: dict[frozenset[tuple[bytes, int]], _Stream] = {}
    for packet in _packets(path.read_bytes()):
        key = frozenset((packet.source, packet.destination))
        stream = streams.get(key)
        if stream is None:
            if not packet.payload and not packet.flags & _TCP_SYN:
                continue
            # A SYN without ACK comes from the client; a SYN-ACK from the server.
            from_client = not (packet.flags & _TCP_SYN and packet.flags & _TCP_ACK)
            client = packet.source if from_client else packet.destination
            server = packet.destination if from_client else packet.source
            name = f"{path.stem}#{len(streams) + 1}"
            stream = _Stream(Conversation(name, client[1], server[1]), client)
            streams[key] = stream
        _add(stream, packet)
    return [s.conversation for s in streams.values() if s.conversation.segments]


def _add(stream: _Stream, packet: _Packet) -> None:
    from_client = packet.source == stream.client
    expected = stream.next_sequence.get(from_client)
    sequence = packet.sequence + (1 if packet.flags & _TCP_SYN else 0)
    if expected is None:
        expected = sequence
    data = packet.payload
    skip = (expected - sequence) & 0xFFFFFFFF
    if skip >= 1 << 31:  # a gap: the capture lost octets; keep what came
        skip = 0
        expected = sequence
    if skip >= len(data):
        stream.next_sequence[from_client] = expected
        return  # a retransmission of what we have
    data = data[skip:]
    stream.next_sequence[from_client] = (expected + len(data)) & 0xFFFFFFFF
    segments = stream.conversation.segments
    segments.append(Segment(from_client, data))


def _packets(capture: bytes) -> list[_Packet]:
    order = _MAGIC.get(capture[:4])
    if order is None or len(capture) < _FILE_HEADER:
        raise PcapError("not a libpcap capture (pcapng is not read)")
    link = struct.unpack_from(order + "I", capture, 20)[0] & 0xFFFF
    packets = []
    offset = _FILE_HEADER
    while offset + _RECORD_HEADER <= len(capture):
        included = struct.unpack_from(order + "I", capture, offset + 8)[0]
        frame = capture[offset + _RECORD_HEADER : offset + _RECORD_HEADER + included]
        offset += _RECORD_HEADER + included
        packet = _tcp(*_network(link, frame, order))
        if packet is not None:
            packets.append(packet)
    return packets


def _network(link: int, frame: bytes, order: str) -> tuple[int, bytes]:
    """(ethertype, the IP packet) of one frame; ethertype 0 for what is not IP."""
    if link == _LINK_ETHERNET:
        ethertype, offset = int.from_bytes(frame[12:14], "big"), 14
        while ethertype in _ETHERTYPE_VLAN:
            ethertype, offset = int.from_bytes(frame[offset + 2 : offset + 4], "big"), offset + 4
        return ethertype, frame[offset:]
    if link == _LINK_LINUX_SLL:
        return int.from_bytes(frame[14:16], "big"), frame[16:]
    if link == _LINK_NULL:
        family = struct.unpack_from(order + "I", frame)[0]
        return (_ETHERTYPE_IPV4 if family == 2 else _ETHERTYPE_IPV6), frame[4:]
    if link == _LINK_RAW:
        return (_ETHERTYPE_IPV4 if frame[0] >> 4 == 4 else _ETHERTYPE_IPV6), frame
    raise PcapError(f"link type {link} is not read")


def _tcp(ethertype: int, ip: bytes) -> _Packet | None:
    if ethertype == _ETHERTYPE_IPV4 and len(ip) >= 20:
        header = (ip[0] & 0x0F) * 4
        total = int.from_bytes(ip[2:4], "big")
        protocol, addresses = ip[9], (ip[12:16], ip[16:20])
        segment = ip[header:total]
    elif ethertype == _ETHERTYPE_IPV6 and len(ip) >= _IPV6_HEADER:
        protocol, addresses = ip[6], (ip[8:24], ip[24:40])
        end = _IPV6_HEADER + int.from_bytes(ip[4:6], "big")
        offset = _IPV6_HEADER
        while protocol in _IPV6_EXTENSIONS:
            protocol = ip[offset]
            offset += (ip[offset + 1] + 1) * 8
        segment = ip[offset:end]
    else:
        return None
    if protocol != _PROTOCOL_TCP or len(segment) < 20:
        return None
    source_port, destination_port, sequence = struct.unpack_from(">HHI", segment)
    data_offset = (segment[12] >> 4) * 4
    return _Packet(
        source=(addresses[0], source_port),
        destination=(addresses[1], destination_port),
        sequence=sequence,
        flags=segment[13],
        payload=segment[data_offset:],
    )
