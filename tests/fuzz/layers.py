"""One side of a P1 conversation cut into its layers, to be changed and put back together.

The fuzz harness changes a conversation at one layer and keeps every layer around it well
formed, so that the change reaches the layer it was aimed at: a changed MTA-bind argument
arrives inside a correct RTORQ, AARQ, CP, CN, DT and TPKT, because the lengths around it
are computed again when the stream is written (:func:`encode_stream`).  A length that a
mutation set on purpose is kept as set.

The model, outermost first::

    Stream     the octets one side sent: TPKTs (RFC 1006), then octets that are no TPKT
    Tpkt       version, reserved, length; one TPDU (X.224): its header (LI and what it
               counts) and its data
    Tsdu       DT TPDUs up to EOT joined; cut again as they were cut when written
    SpduNode   SI, LI, parameters (PGI 1 and 5 hold PIs; user data PGI 193 / 194 and DT's
               user information hold BER) (X.225 clause 8)
    BerNode    one TLV (X.690), children when constructed, the layer it belongs to

BER values are labelled with their layer as a P1 association nests them (X.419 clause 7):
the PPDU at the top of session user data; a PDV of context 1 holds ACSE, another RTSE; an
EXTERNAL's single-ASN1-type in ACSE holds RTSE; the [16] / [17] / [18] inside an RTSE APDU
is the MTA-bind value; an RTTR's octets hold the EXTERNAL around the MTS-APDU.

Public API::

    Layer (TPKT COTP SPDU PPDU ACSE RTSE MTA_BIND MTS_APDU)
    parse_stream(data) -> Stream      encode_stream(stream) -> bytes
    Stream.tpkts, .tail; Tpkt; Tsdu; SpduNode; Param; BerNode
    walk_ber(nodes) -> every BerNode under them; parse_ber(data, layer) -> list | None
    encode_ber(node) / length_octets(size)
    parse_spdus(tsdu) / encode_spdus(spdus); encode_params(params); tsdu_bytes(tsdu)
    ber_roots(stream), rttr_transfers(stream): the BER values of a stream to change
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field


class Layer(enum.Enum):
    """Where in the stack a part of a conversation belongs."""

    TPKT = "TPKT"
    COTP = "COTP"
    SPDU = "SPDU"
    PPDU = "PPDU"
    ACSE = "ACSE"
    RTSE = "RTSE"
    MTA_BIND = "MTA-bind"
    MTS_APDU = "MTS-APDU"


TPKT_HEADER = 4
DT = 0xF0
EOT = 0x80
_MAX_TPKT_DATA = 0xFFFF - TPKT_HEADER - 3  # DT header: LI, code, EOT
_PGI_WITH_PIS = frozenset({1, 5})  # connection identifier, connect / accept item
_USER_DATA_CODES = frozenset({193, 194})
_CATEGORY_0 = frozenset({1, 2})  # GT, PT
_SI_DT = 1
_MAX_DEPTH = 64  # BER nesting we take apart (a deeper value stays one opaque node)
_INDEFINITE = 0x80
_PDV_LIST = 0x30
_SINGLE_ASN1_TYPE = 0xA0
_EXTERNAL = 0x28
_INTEGER = 0x02
_BIND_TAGS = frozenset({0xB0, 0xB1, 0xB2})  # [16] argument, [17] result, [18] error
_ACSE_CONTEXT = 1


# --- BER ---------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class BerNode:
    """One TLV.  ``children`` is None for a primitive value (or one not taken apart), whose
    octets are ``content``; ``length`` overrides the length octets when set."""

    identifier: bytes
    layer: Layer
    content: bytes = b""
    children: list[BerNode] | None = None
    indefinite: bool = False
    length: bytes | None = None
    received: tuple[bytes, int] = (b"", -1)
    """The length octets as received and the size they gave: kept while the size holds,
    so that an unchanged value is written as it came (long forms included)."""
    raw: bytes | None = None
    """Octets written instead of the TLV (junk, or a value built elsewhere)."""

    @property
    def constructed(self) -> bool:
        return bool(self.identifier[:1]) and bool(self.identifier[0] & 0x20)


def length_octets(size: int) -> bytes:
    """X.690 8.1.3 definite length, short form when it fits."""
    if size < 0x80:
        return bytes((size,))
    body = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes((0x80 | len(body),)) + body


def encode_ber(node: BerNode) -> bytes:
    """The TLV, lengths computed from what it holds now (unless overridden)."""
    if node.raw is not None:
        return node.raw
    if node.children is None:
        body = node.content
    else:
        body = b"".join(encode_ber(child) for child in node.children)
    if node.indefinite:
        body += b"\x00\x00"
    if node.length is not None:
        length = node.length
    elif node.indefinite:
        length = bytes((_INDEFINITE,))
    elif node.received[1] == len(body):
        length = node.received[0]
    else:
        length = length_octets(len(body))
    return node.identifier + length + body


def _read_tlv(data: bytes, offset: int, end: int) -> tuple[bytes, int, int, bool, int] | None:
    """(identifier, content start, content end, indefinite, where the length octets start)
    of the TLV at ``offset``."""
    start = offset
    if offset >= end:
        return None
    if data[offset] & 0x1F == 0x1F:
        offset += 1
        while offset < end and data[offset] & 0x80:
            offset += 1
    offset += 1
    if offset >= end:
        return None
    identifier = data[start:offset]
    length_at = offset
    first = data[offset]
    offset += 1
    if first == _INDEFINITE:
        return (identifier, offset, -1, True, length_at) if identifier[0] & 0x20 else None
    if first & 0x80:
        count = first & 0x7F
        if count > 4 or offset + count > end:
            return None
        size = int.from_bytes(data[offset : offset + count], "big")
        offset += count
    else:
        size = first
    if offset + size > end:
        return None
    return identifier, offset, offset + size, False, length_at


def _parse(
    data: bytes, offset: int, end: int, layer: Layer, depth: int
) -> tuple[list[BerNode], int] | None:
    """The TLVs from ``offset`` up to ``end`` (or an end-of-contents when ``end`` is -1)."""
    nodes: list[BerNode] = []
    limit = len(data) if end < 0 else end
    while offset < limit:
        if end < 0 and data[offset : offset + 2] == b"\x00\x00":
            return nodes, offset + 2
        read = _read_tlv(data, offset, limit)
        if read is None:
            return None
        identifier, start, stop, indefinite, length_at = read
        node = BerNode(identifier, layer, indefinite=indefinite)
        if not indefinite:
            node.received = (data[length_at:start], stop - start)
        if identifier[0] & 0x20 and depth < _MAX_DEPTH:
            inner = _parse(data, start, stop, layer, depth + 1)
            if inner is None:
                return None
            node.children, stop = inner[0], (inner[1] if indefinite else stop)
        elif indefinite:
            return None
        else:
            node.content = data[start:stop]
        nodes.append(node)
        offset = stop
    return (nodes, offset) if end >= 0 else None


def parse_ber(data: bytes, layer: Layer) -> list[BerNode] | None:
    """The BER values that make up ``data`` exactly, labelled from ``layer`` down; None when
    ``data`` is not a sequence of whole TLVs."""
    if not data:
        return None
    parsed = _parse(data, 0, len(data), layer, 0)
    if parsed is None:
        return None
    nodes = parsed[0]
    for node in nodes:
        _label(node, layer, None)
    return nodes


def _label(node: BerNode, layer: Layer, parent: BerNode | None) -> None:
    node.layer = layer
    for child in node.children or ():
        _label(child, _child_layer(node, child, layer, parent), node)


def _child_layer(node: BerNode, child: BerNode, layer: Layer, parent: BerNode | None) -> Layer:
    tag = node.identifier[0]
    above = parent.identifier[0] if parent is not None else -1
    if layer is Layer.PPDU and tag == _SINGLE_ASN1_TYPE and above == _PDV_LIST:
        assert parent is not None
        return Layer.ACSE if _context_of(parent) == _ACSE_CONTEXT else Layer.RTSE
    if layer is Layer.ACSE and tag == _SINGLE_ASN1_TYPE and above == _EXTERNAL:
        return Layer.RTSE
    if layer is Layer.RTSE and child.identifier[0] in _BIND_TAGS and parent is not None:
        return Layer.MTA_BIND
    return layer


def _context_of(pdv_list: BerNode) -> int | None:
    for child in pdv_list.children or ():
        if child.identifier[0] == _INTEGER and child.children is None:
            return int.from_bytes(child.content, "big") if child.content else 0
    return None


def walk_ber(nodes: list[BerNode]) -> Iterator[BerNode]:
    """Every node under ``nodes``, parents before their children."""
    for node in nodes:
        yield node
        if node.children is not None:
            yield from walk_ber(node.children)


# --- session -------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class Param:
    """One PI or PGI unit: code and value (PIs inside, BER inside, or octets)."""

    code: int
    value: bytes = b""
    pis: list[Param] | None = None
    ber: list[BerNode] | None = None
    length: bytes | None = None  # overrides the length octets when set
    received: tuple[bytes, int] = (b"", -1)  # as BerNode.received


@dataclass(slots=True, eq=False)
class SpduNode:
    """One SPDU: SI, its parameters and (the last SPDU of a TSDU) what follows them."""

    si: int
    params: list[Param] = field(default_factory=list)
    tail: bytes = b""
    tail_ber: list[BerNode] | None = None
    length: bytes | None = None  # overrides LI when set
    received: tuple[bytes, int] = (b"", -1)  # as BerNode.received


def _x225_length(size: int, received: tuple[bytes, int] = (b"", -1)) -> bytes:
    """X.225 8.2.5: one octet up to 254, else FF and two octets (as received while the
    size is the one received)."""
    if received[1] == size:
        return received[0]
    if size < 0xFF:
        return bytes((size,))
    return b"\xff" + (size & 0xFFFF).to_bytes(2, "big")


def _read_x225_length(data: bytes, offset: int) -> tuple[int, int] | None:
    if offset >= len(data):
        return None
    if data[offset] != 0xFF:
        return data[offset], offset + 1
    if offset + 3 > len(data):
        return None
    return int.from_bytes(data[offset + 1 : offset + 3], "big"), offset + 3


def parse_params(data: bytes, nested: bool) -> list[Param] | None:
    params: list[Param] = []
    offset = 0
    while offset < len(data):
        read = _read_x225_length(data, offset + 1)
        if read is None or read[1] + read[0] > len(data):
            return None
        size, start = read
        code, value = data[offset], data[start : start + size]
        param = Param(code, value, received=(data[offset + 1 : start], size))
        if code in _PGI_WITH_PIS and not nested:
            param.pis = parse_params(value, nested=True)
        elif code in _USER_DATA_CODES:
            param.ber = parse_ber(value, Layer.PPDU)
        params.append(param)
        offset = start + size
    return params


def encode_params(params: list[Param]) -> bytes:
    out = bytearray()
    for param in params:
        if param.pis is not None:
            value = encode_params(param.pis)
        elif param.ber is not None:
            value = b"".join(encode_ber(node) for node in param.ber)
        else:
            value = param.value
        out.append(param.code & 0xFF)
        length = param.length
        out += length if length is not None else _x225_length(len(value), param.received)
        out += value
    return bytes(out)


def parse_spdus(tsdu: bytes) -> list[SpduNode] | None:
    spdus: list[SpduNode] = []
    offset = 0
    while offset < len(tsdu) and len(spdus) < 2:
        read = _read_x225_length(tsdu, offset + 1)
        if read is None or read[1] + read[0] > len(tsdu):
            return None
        size, start = read
        params = parse_params(tsdu[start : start + size], nested=False)
        if params is None:
            return None
        spdus.append(SpduNode(tsdu[offset], params, received=(tsdu[offset + 1 : start], size)))
        offset = start + size
        if spdus[0].si not in _CATEGORY_0:
            break
    if not spdus:
        return None
    last = spdus[-1]
    last.tail = tsdu[offset:]
    if last.tail and len(spdus) == 2 and last.si == _SI_DT:
        last.tail_ber = parse_ber(last.tail, Layer.PPDU)
    return spdus


def encode_spdus(spdus: list[SpduNode]) -> bytes:
    out = bytearray()
    for spdu in spdus:
        params = encode_params(spdu.params)
        out.append(spdu.si & 0xFF)
        length = spdu.length
        out += length if length is not None else _x225_length(len(params), spdu.received)
        out += params
        if spdu.tail_ber is not None:
            out += b"".join(encode_ber(node) for node in spdu.tail_ber)
        else:
            out += spdu.tail
    return bytes(out)


# --- transport -----------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class Tpkt:
    """One TPKT: its first two octets, a length that overrides the computed one when
    set, the TPDU header (LI and the octets it counts) and the TPDU's data."""

    start: bytes
    header: bytes
    data: bytes
    length: int | None = None

    @property
    def is_dt(self) -> bool:
        return len(self.header) == 3 and self.header[1] & 0xF0 == DT


@dataclass(slots=True, eq=False)
class Tsdu:
    """DT data joined up to EOT: SPDUs when they parse, else octets; the sizes the DT
    TPDUs had, to cut it the same way again."""

    cuts: list[int]
    spdus: list[SpduNode] | None
    data: bytes


@dataclass(slots=True, eq=False)
class Stream:
    """One direction of a conversation: units (TPKTs that are no DT, and TSDUs) in order,
    then octets that do not make a TPKT."""

    units: list[Tpkt | Tsdu]
    tail: bytes = b""

    def tpkts(self) -> list[Tpkt]:
        return [unit for unit in self.units if isinstance(unit, Tpkt)]

    def tsdus(self) -> list[Tsdu]:
        return [unit for unit in self.units if isinstance(unit, Tsdu)]


def parse_stream(data: bytes) -> Stream:
    """Cut ``data`` into TPKTs and TSDUs (anything after the last whole TPKT is the tail)."""
    units: list[Tpkt | Tsdu] = []
    pending: list[bytes] = []
    offset = 0
    while offset + TPKT_HEADER <= len(data):
        size = int.from_bytes(data[offset + 2 : offset + 4], "big")
        if data[offset] != 3 or size < TPKT_HEADER + 2 or offset + size > len(data):
            break
        tpdu = data[offset + TPKT_HEADER : offset + size]
        header_size = min(tpdu[0] + 1, len(tpdu))
        tpkt = Tpkt(data[offset : offset + 2], tpdu[:header_size], tpdu[header_size:])
        offset += size
        if tpkt.is_dt:
            pending.append(tpkt.data)
            if tpkt.header[2] & EOT:
                joined = b"".join(pending)
                units.append(Tsdu([len(p) for p in pending], parse_spdus(joined), joined))
                pending = []
            continue
        units.append(tpkt)
    if pending:  # DTs without EOT: kept as TPKTs
        units += [Tpkt(b"\x03\x00", bytes((2, DT, 0)), part) for part in pending]
    return Stream(units, data[offset:])


def tsdu_bytes(tsdu: Tsdu) -> bytes:
    return encode_spdus(tsdu.spdus) if tsdu.spdus is not None else tsdu.data


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` in pieces of the sizes in ``cuts`` (the last takes the rest), each small
    enough for a TPKT."""
    pieces: list[bytes] = []
    offset = 0
    for size in cuts[:-1]:
        if offset >= len(data):
            break
        pieces.append(data[offset : offset + size])
        offset += size
    rest = data[offset:]
    while len(rest) > _MAX_TPKT_DATA:
        pieces.append(rest[:_MAX_TPKT_DATA])
        rest = rest[_MAX_TPKT_DATA:]
    pieces.append(rest)
    return pieces


def encode_tpkt(tpkt: Tpkt) -> bytes:
    size = TPKT_HEADER + len(tpkt.header) + len(tpkt.data)
    length = size if tpkt.length is None else tpkt.length
    return tpkt.start + (length & 0xFFFF).to_bytes(2, "big") + tpkt.header + tpkt.data


def encode_stream(stream: Stream) -> bytes:
    """The octets of ``stream`` as it stands now."""
    out = bytearray()
    for unit in stream.units:
        if isinstance(unit, Tpkt):
            out += encode_tpkt(unit)
            continue
        pieces = _cut(tsdu_bytes(unit), unit.cuts)
        for index, piece in enumerate(pieces):
            eot = EOT if index == len(pieces) - 1 else 0
            out += encode_tpkt(Tpkt(b"\x03\x00", bytes((2, DT, eot)), piece))
    out += stream.tail
    return bytes(out)


def ber_roots(stream: Stream) -> Iterator[list[BerNode]]:
    """Every list of top-level BER values in the stream's SPDUs (each a list to change)."""
    for tsdu in stream.tsdus():
        for spdu in tsdu.spdus or ():
            for param in spdu.params:
                if param.ber is not None:
                    yield param.ber
            if spdu.tail_ber is not None:
                yield spdu.tail_ber


def rttr_transfers(stream: Stream) -> Iterator[BerNode]:
    """The RTTRs (OCTET STRINGs at the top of the RTSE context) of the stream: their
    octets are (pieces of) the EXTERNAL around an MTS-APDU."""
    for roots in ber_roots(stream):
        for node in walk_ber(roots):
            if node.layer is Layer.RTSE and node.raw is None and node.identifier[:1] == b"\x04":
                yield node
