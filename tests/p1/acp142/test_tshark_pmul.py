"""Wireshark's reading of our P_MUL PDUs (its p_mul, cdt and p1 dissectors).

A capture file written here holds, as UDP over IPv4, the datagrams that reached their
nodes in a transfer of a real MTS-APDU (STANAG 4406 Annex E) from one Node to two others,
one of which lost Data_PDUs in the first burst and acknowledged what it missed; a message
that expired and was discarded; and PDUs written with encode_pdu for what the nodes do
not send (an Address_PDU with several destinations and reserved fields, Ack_PDUs with
ranges, several entries and a timestamp).  tshark must read every frame as P_MUL with a
good checksum, no malformed or warning expert item, the PDU types, Message_IDs and
numbers we wrote, and each reassembled message as CDT content p1 and an MTS-APDU; and a
damaged checksum and a backward range as the problems they are.
"""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from p1.acp142.annex_e import wrap_apdu
from p1.acp142.node import Node
from p1.acp142.pdu import (
    AckInfo,
    AckPdu,
    AddressPdu,
    DataPdu,
    DestinationEntry,
    DiscardPdu,
    Pdu,
    checksum,
    encode_pdu,
    node_id,
)
from p1.acp142.sender import Destination, SenderTimers, fragments_of
from tests.p1.acp142.network import T0, Faults, Network
from tests.p1.acp142.samples import APDU
from tests.support import tshark

pytestmark = pytest.mark.slow

PORT = 7401
A = node_id("10.0.0.1")
B = node_id("10.0.0.2")
C = node_id("10.0.0.3")
D = node_id("10.0.0.4")
TIMERS = SenderTimers(retransmission=2.0, backoff=2.0, max_retransmission=30.0)
MAX_PDU = 80
OPTIONS = (
    "-d",
    f"udp.port=={PORT},p_mul",
    "-o",
    "p_mul.decode:cdt",
    "-o",
    "p_mul.relative_msgid:FALSE",
    "-o",
    "p_mul.reassemble:TRUE",
)
TYPES = {DataPdu: 0, AckPdu: 1, AddressPdu: 2, DiscardPdu: 3}
EXPERT_WARNING = 0x00600000
"""PI_WARN: expert items at this severity or above count as problems."""


# --- a capture file --------------------------------------------------------------------


def _sum16(octets: bytes) -> int:
    if len(octets) % 2:
        octets += b"\0"
    total: int = sum(struct.unpack(f"!{len(octets) // 2}H", octets))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def _frame(source: int, to: int, payload: bytes) -> bytes:
    """Ethernet, IPv4 and UDP around ``payload``, their checksums set."""
    udp_length = 8 + len(payload)
    pseudo = struct.pack("!IIBBH", source, to, 0, 17, udp_length)
    udp = struct.pack("!HHHH", PORT, PORT, udp_length, 0) + payload
    udp_sum = (~_sum16(pseudo + udp) & 0xFFFF) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", udp_sum) + udp[8:]
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + udp_length, 0, 0, 64, 17, 0, source, to)
    ip = ip[:10] + struct.pack("!H", ~_sum16(ip) & 0xFFFF) + ip[12:]
    ethernet = bytes.fromhex("020000000002 020000000001 0800")
    return ethernet + ip + udp


def _write_pcap(path: Path, frames: list[tuple[float, int, int, bytes]]) -> None:
    """A libpcap file (Ethernet link type) of ``(time, source, to, datagram)``."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)]
    for time, source, to, payload in frames:
        frame = _frame(source, to, payload)
        seconds = int(time)
        micros = round((time - seconds) * 1_000_000)
        out.append(struct.pack("<IIII", seconds, micros, len(frame), len(frame)) + frame)
    path.write_bytes(b"".join(out))


# --- what goes into it ------------------------------------------------------------------


def _transfer() -> tuple[Network, int, int]:
    """A's Annex E message to B and C (C loses Data_PDUs 2, 3, 4 and 6 of the first
    burst), then a message that nobody gets before it expires."""
    first_burst = {"over": False}

    def cut(time: float, source: int, to: int, pdu: Pdu) -> bool:
        if isinstance(pdu, AddressPdu) and pdu.message_id == expiring:
            return False
        if isinstance(pdu, DataPdu) and pdu.message_id == expiring:
            return True
        if time > T0 + 1.0:
            first_burst["over"] = True
        lost = isinstance(pdu, DataPdu) and pdu.sequence in (2, 3, 4, 6)
        return to == C and lost and not first_burst["over"]

    expiring = 0
    nodes = [Node(A, first_message_id=0x10000), Node(B, first_message_id=1), Node(C)]
    net = Network(nodes, Faults(cut=cut), rate=100_000.0, delay=0.002)
    data = wrap_apdu(APDU)
    assert len(fragments_of(data, MAX_PDU)) >= 6
    message = net.send(A, data, [Destination(B), Destination(C)], max_pdu=MAX_PDU, timers=TIMERS)
    net.run(60.0)
    expiring = net.send(
        A, b"expires", [Destination(B), Destination(C)], max_pdu=MAX_PDU, timers=TIMERS, expiry=70.0
    )
    net.run(80.0)
    return net, message, expiring


def _crafted(at: float) -> list[tuple[float, int, int, Pdu]]:
    """PDUs the nodes never write: D's message to three nodes with a symmetric-key field,
    its two Data_PDUs, and Ack_PDUs with ranges, entries for several messages and a
    timestamp."""
    data = wrap_apdu(APDU)
    half = len(data) // 2
    address = AddressPdu(
        priority=5,
        source=D,
        message_id=0x20000,
        expiry=int(T0) + 3600,
        total=2,
        destinations=tuple(
            DestinationEntry(n, 40 + i, bytes((i,)) * 4) for i, n in enumerate((A, B, C))
        ),
    )
    pieces = (data[:half], data[half:])
    datas = [
        DataPdu(priority=5, source=D, message_id=0x20000, sequence=n, fragment=piece)
        for n, piece in enumerate(pieces, start=1)
    ]
    acks = [
        AckPdu(
            priority=5,
            node=B,
            entries=(AckInfo(D, 0x20001, (1, 3, 4, 5, 6, 7, 9, 20, 21)), AckInfo(D, 0x20002)),
            timestamp=12345,
        ),
        AckPdu(priority=0, node=C, entries=(AckInfo(D, 0x20003, (2, 3, 4)),), timestamp=1),
    ]
    pdus: list[tuple[int, int, Pdu]] = [(D, B, address), (D, B, datas[0]), (D, B, datas[1])]
    pdus += [(B, D, acks[0]), (C, D, acks[1])]
    return [(at + 0.01 * i, source, to, pdu) for i, (source, to, pdu) in enumerate(pdus)]


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Pdu], int]:
    tshark.require_tshark()
    net, message, _ = _transfer()
    frames = [(d.time, d.source, d.to, d.pdu) for d in net.delivered]
    frames += _crafted(net.now + 1.0)
    kinds = {type(pdu) for _, _, _, pdu in frames}
    assert kinds == {AddressPdu, DataPdu, AckPdu, DiscardPdu}
    path = tmp_path_factory.mktemp("pmul") / "pmul.pcap"
    _write_pcap(path, [(t, s, to, encode_pdu(pdu)) for t, s, to, pdu in frames])
    return path, [pdu for _, _, _, pdu in frames], message


# --- tshark -----------------------------------------------------------------------------

FIELDS = (
    "frame.number",
    "p_mul.pdu_type_value",
    "p_mul.checksum_good",
    "p_mul.message_id",
    "p_mul.seq_no",
    "p_mul.no_pdus",
    "p_mul.dest_id",
    "p_mul.msg_seq_no",
    "p_mul.source_id_ack",
    "p_mul.missing_seq_no",
    "p_mul.missing_seq_range.from",
    "p_mul.missing_seq_range.to",
    "p_mul.no_missing_seq_no",
    "p_mul.timestamp",
    "p_mul.reassembled.in",
    "cdt.algorithmID_ShortForm",
    "cdt.contentType_ShortForm",
    "p1.MTS_APDU",
    "_ws.malformed",
    "_ws.expert.severity",
    "_ws.expert.message",
)


def _read(pcap: Path, display_filter: str = "") -> list[dict[str, list[str]]]:
    argv = ["tshark", "-n", "-r", str(pcap), *OPTIONS, "-T", "json"]
    if display_filter:
        argv += ["-Y", display_filter]
    for name in FIELDS:
        argv += ["-e", name]
    done = subprocess.run(argv, capture_output=True, timeout=tshark.TIMEOUT, check=False)
    if done.returncode != 0:
        raise tshark.TsharkError(f"{' '.join(argv)}: {done.stderr.decode(errors='replace')}")
    packets: list[dict[str, Any]] = json.loads(done.stdout)
    return [
        {str(k): [str(v) for v in values] for k, values in p["_source"]["layers"].items()}
        for p in packets
    ]


@pytest.fixture(scope="module")
def frames(capture: tuple[Path, list[Pdu], int]) -> list[dict[str, list[str]]]:
    return _read(capture[0])


def test_every_frame_is_p_mul_with_a_good_checksum(
    capture: tuple[Path, list[Pdu], int], frames: list[dict[str, list[str]]]
) -> None:
    pdus = capture[1]
    assert len(frames) == len(pdus)
    assert _read(capture[0], f"!p_mul || !(udp.port == {PORT})") == []
    for frame in frames:
        assert frame["p_mul.checksum_good"] in (["1"], ["True"]), frame


def test_no_problem_wireshark_sees(frames: list[dict[str, list[str]]]) -> None:
    assert [f["frame.number"] for f in frames if "_ws.malformed" in f] == []
    assert _problems(frames) == []
    # The notes it gives (retransmissions, missing numbers, the discard) are not problems.
    assert any("_ws.expert.severity" in f for f in frames)


def test_types_ids_and_numbers_as_we_wrote_them(
    capture: tuple[Path, list[Pdu], int], frames: list[dict[str, list[str]]]
) -> None:
    for frame, pdu in zip(frames, capture[1], strict=True):
        assert frame["p_mul.pdu_type_value"] == [str(TYPES[type(pdu)])]
        if isinstance(pdu, AckPdu):
            assert frame["p_mul.source_id_ack"] == [_ip(pdu.node)]
            assert frame["p_mul.message_id"] == [str(e.message_id) for e in pdu.entries]
            singles, ranges = _written(pdu)
            assert frame.get("p_mul.missing_seq_no", []) == [str(n) for n in singles]
            assert frame.get("p_mul.missing_seq_range.from", []) == [str(r[0]) for r in ranges]
            assert frame.get("p_mul.missing_seq_range.to", []) == [str(r[-1]) for r in ranges]
            count = sum(len(e.missing) for e in pdu.entries)
            assert frame.get("p_mul.no_missing_seq_no", []) == ([str(count)] if count else [])
            timestamp = [] if pdu.timestamp is None else [str(pdu.timestamp)]
            assert frame.get("p_mul.timestamp", []) == timestamp
            continue
        assert frame["p_mul.message_id"] == [str(pdu.message_id)]
        if isinstance(pdu, DataPdu):
            assert frame["p_mul.seq_no"] == [str(pdu.sequence)]
        if isinstance(pdu, AddressPdu):
            assert frame["p_mul.no_pdus"] == [str(pdu.total)]
            assert frame["p_mul.dest_id"] == [_ip(d.node) for d in pdu.destinations]
            assert frame["p_mul.msg_seq_no"] == [str(d.sequence) for d in pdu.destinations]


def _written(pdu: AckPdu) -> tuple[list[int], list[list[int]]]:
    """The missing numbers written alone, and the runs written as ranges (three or more)."""
    singles: list[int] = []
    ranges: list[list[int]] = []
    for entry in pdu.entries:
        runs: list[list[int]] = []
        for n in entry.missing:
            if runs and runs[-1][-1] == n - 1:
                runs[-1].append(n)
            else:
                runs.append([n])
        ranges += [run for run in runs if len(run) >= 3]
        singles += [n for run in runs if len(run) < 3 for n in run]
    return singles, ranges


def _ip(node: int) -> str:
    return ".".join(str(b) for b in node.to_bytes(4, "big"))


def test_acknowledgements_with_missing_numbers_were_read(
    capture: tuple[Path, list[Pdu], int],
) -> None:
    # C's Ack_PDU of the first burst: 2-4 as a range, 6 alone.
    message = capture[2]
    nacks = [
        p
        for p in capture[1]
        if isinstance(p, AckPdu) and p.node == C and any(e.missing for e in p.entries)
    ]
    assert [e.missing for p in nacks for e in p.entries if e.message_id == message][:1] == [
        (2, 3, 4, 6)
    ]


def test_each_message_is_reassembled_as_cdt_p1_and_an_mts_apdu(
    capture: tuple[Path, list[Pdu], int], frames: list[dict[str, list[str]]]
) -> None:
    # A's message at B and at C, and D's at B.
    reassembled = [f for f in frames if "cdt.contentType_ShortForm" in f]
    assert len(reassembled) == 3
    for frame in reassembled:
        assert frame["cdt.algorithmID_ShortForm"] == ["0"]
        assert frame["cdt.contentType_ShortForm"] == ["2"]
        assert "p1.MTS_APDU" in frame


def _problems(frames: list[dict[str, list[str]]]) -> list[str]:
    return [
        message
        for f in frames
        for severity, message in zip(
            f.get("_ws.expert.severity", []), f.get("_ws.expert.message", []), strict=True
        )
        if int(severity, 0) >= EXPERT_WARNING
    ]


def test_damage_shows(tmp_path: Path) -> None:
    # So that "no problem" above means something: a damaged checksum and a range written
    # backwards are problems to tshark.
    tshark.require_tshark()
    good = encode_pdu(DiscardPdu(priority=1, source=A, message_id=9))
    damaged = good[:-1] + bytes((good[-1] ^ 1,))
    backwards = bytearray(
        encode_pdu(AckPdu(priority=0, node=B, entries=(AckInfo(A, 9, (3, 4, 5)),)))
    )
    backwards[24:30] = bytes.fromhex("000500000003")
    backwards[6:8] = b"\0\0"
    backwards[6:8] = checksum(backwards).to_bytes(2, "big")
    pcap = tmp_path / "damaged.pcap"
    _write_pcap(pcap, [(T0, A, B, damaged), (T0 + 1, B, A, bytes(backwards))])
    frames = _read(pcap)
    assert [f["p_mul.checksum_good"] for f in frames] == [["0"], ["1"]]
    assert _problems(frames) == ["Bad checksum", "Invalid missing sequence range"]
