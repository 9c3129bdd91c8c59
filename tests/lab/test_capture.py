"""lab.capture without a network: pcap files of every byte order, time resolution and link
type the lab meets are read back packet for packet, a message's time is split into parts
that add up to it, from the right packets only, and the readings of what went toward each
port count every payload octet once."""

from __future__ import annotations

import struct
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.capture import ETHERNET, Packet, cumulative, read_pcap, split
from lab.topology import LabError

PORT = 5003


def _frame(packet: Packet, link_type: int, payload_filler: bool) -> bytes:
    """An IPv4 TCP segment as captured (headers only, as the lab's snap length keeps)."""
    tcp = struct.pack(">HHIIBBHHH", packet.source_port, packet.destination_port, 1, 1,
                      5 << 4, 0x18, 1000, 0, 0)  # fmt: skip
    header = 14 if link_type == ETHERNET else 0
    total = packet.link_octets - header
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, 6, 0,
                     bytes([198, 18, 1, 2]), bytes([198, 18, 2, 2]))  # fmt: skip
    frame = ip + tcp + (b"x" * 8 if payload_filler else b"")
    if link_type == ETHERNET:
        frame = b"\x02" * 12 + b"\x08\x00" + frame
    return frame


def _pcap(packets: list[Packet], link_type: int, order: str, nano: bool) -> bytes:
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = [struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 160, link_type)]
    for packet in packets:
        seconds = int(packet.at)
        part = round((packet.at - seconds) * (1e9 if nano else 1e6))
        frame = _frame(packet, link_type, payload_filler=True)
        out.append(struct.pack(order + "IIII", seconds, part, len(frame), packet.link_octets))
        out.append(frame)
    return b"".join(out)


packets_strategy = st.lists(
    st.builds(
        lambda at, sport, dport, payload: (at, sport, dport, payload),
        st.integers(1_700_000_000_000_000, 1_900_000_000_000_000),  # microseconds
        st.integers(1, 65535),
        st.integers(1, 65535),
        st.integers(0, 1448),
    ),
    max_size=30,
)


@given(
    raw=packets_strategy,
    link_type=st.sampled_from([ETHERNET, 101, 12, 14]),
    order=st.sampled_from(["<", ">"]),
    nano=st.booleans(),
)
def test_a_pcap_file_reads_back_packet_for_packet(
    tmp_path_factory: pytest.TempPathFactory,
    raw: list[tuple[int, int, int, int]],
    link_type: int,
    order: str,
    nano: bool,
) -> None:
    header = 14 if link_type == ETHERNET else 0
    packets = [
        Packet(us / 1e6, sport, dport, payload, payload + 40 + header)
        for us, sport, dport, payload in raw
    ]
    path = tmp_path_factory.mktemp("pcap") / "x.pcap"
    path.write_bytes(_pcap(packets, link_type, order, nano))
    read = read_pcap(path)
    assert [(p.source_port, p.destination_port, p.payload, p.link_octets) for p in read] == [
        (p.source_port, p.destination_port, p.payload, p.link_octets) for p in packets
    ]
    for got, sent in zip(read, packets, strict=True):
        assert got.at == pytest.approx(sent.at, abs=2e-6)


def test_other_frames_are_skipped_and_a_foreign_file_is_refused(tmp_path: Path) -> None:
    arp = b"\x02" * 12 + b"\x08\x06" + b"\x00" * 28
    udp = bytearray(_frame(Packet(1.0, 1, 2, 0, 74), ETHERNET, False))
    udp[14 + 9] = 17
    good = Packet(1.0, 40000, PORT, 100, 154)
    body = b"".join(
        struct.pack("<IIII", 1, 0, len(f), len(f)) + f
        for f in (arp, bytes(udp), _frame(good, ETHERNET, False))
    )
    path = tmp_path / "mixed.pcap"
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 160, ETHERNET) + body)
    assert read_pcap(path) == [good]
    (tmp_path / "empty.pcap").write_bytes(b"")
    assert read_pcap(tmp_path / "empty.pcap") == []
    (tmp_path / "text.pcap").write_bytes(b"this is not a capture file at all")
    with pytest.raises(LabError, match="not a pcap file"):
        read_pcap(tmp_path / "text.pcap")


T0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def _at(ms: float) -> float:
    return (T0 + timedelta(milliseconds=ms)).timestamp()


def test_the_parts_come_from_the_message_packets_only() -> None:
    arrived = [
        Packet(_at(-50), 40000, PORT, 1448, 1514),  # an earlier message
        Packet(_at(3), 40000, PORT, 1448, 1514),
        Packet(_at(3.1), 40000, PORT, 50, 116),
        Packet(_at(4), 40000, 5000, 1448, 1514),  # another listener's
        Packet(_at(9), 40000, PORT, 0, 66),  # a bare acknowledgement
        Packet(_at(500), 40000, PORT, 1448, 1514),  # a later message
    ]
    left = [
        Packet(_at(3.2), 40000, PORT, 1448, 1514),
        Packet(_at(28), 40000, PORT, 50, 116),
        Packet(_at(29), 40000, PORT, 0, 66),
    ]
    parts = split(T0, T0 + timedelta(milliseconds=31), arrived, left, PORT)
    assert parts is not None
    assert parts.total == pytest.approx(0.031, abs=1e-6)
    assert parts.mta_a == pytest.approx(0.003, abs=1e-6)
    assert parts.link == pytest.approx(0.025, abs=1e-6)
    assert parts.mta_b == pytest.approx(0.003, abs=1e-6)
    assert (parts.packets, parts.link_octets) == (2, 1630)
    assert split(T0, T0 + timedelta(milliseconds=2), arrived, left, PORT) is None


@given(
    times=st.lists(st.floats(0, 1000), min_size=2, max_size=20),
    forward=st.floats(0, 100),
)
def test_the_parts_add_up_to_the_total(times: list[float], forward: float) -> None:
    """Whatever the packets, the three parts of a message found add up to its time."""
    times.sort()
    end = times[-1] + forward + 1
    arrived = [Packet(_at(t), 1, PORT, 10, 60) for t in times]
    left = [Packet(_at(t + forward), 1, PORT, 10, 60) for t in times]
    parts = split(T0, T0 + timedelta(milliseconds=end), arrived, left, PORT)
    assert parts is not None
    assert parts.mta_a + parts.link + parts.mta_b == pytest.approx(parts.total, abs=1e-6)
    assert min(parts.mta_a, parts.mta_b) >= -1e-6


@given(
    raw=st.lists(
        st.tuples(st.floats(-1, 20), st.sampled_from([5000, 5003, 9, 443]), st.integers(0, 1448)),
        max_size=60,
    ),
    interval=st.sampled_from([0.25, 0.5, 1.0]),
)
def test_the_readings_count_each_octet_toward_each_port_once(
    raw: list[tuple[float, int, int]], interval: float
) -> None:
    ports = {"routine": 5000, "flash": 5003}
    packets = [Packet(_at(s * 1000), 40000, port, payload, payload + 54) for s, port, payload in
               sorted(raw)]  # fmt: skip
    readings = cumulative(packets, ports, T0, interval)
    after = [p for p in packets if p.at >= T0.timestamp()]
    for name, port in ports.items():
        assert readings[-1][1][name] == sum(p.payload for p in after if p.destination_port == port)
        values = [octets[name] for _, octets in readings]
        assert values == sorted(values)
    times = [seconds for seconds, _ in readings]
    assert times == [interval * i for i in range(len(times))]
    assert times[0] == 0.0
    origin = T0.timestamp()
    for seconds, octets in readings:  # each reading holds what came up to its time
        for name, port in ports.items():
            upto = [p for p in after if p.destination_port == port and p.at - origin <= seconds]
            assert octets[name] == sum(p.payload for p in upto)
