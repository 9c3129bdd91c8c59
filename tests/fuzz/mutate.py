"""Mutations of a P1 conversation aimed at one layer, the layers around it kept well formed.

A :class:`Case` is one side of one conversation of the corpus, changed at one layer (now
and then at two or three), then cut into the reads a peer's TCP would deliver.  The
changes per layer:

=========  ===============================================================================
TPKT       length field (off by a few, below 7, 65535, random), version and reserved
           octets, a TPKT duplicated, dropped, swapped, truncated; junk between TPKTs
COTP       TPDU header octets, LI, TPDU code, EOT, CR / CC / DR parameters; a TSDU cut in
           other DT sizes, split by an early EOT, left without EOT; TPDUs class 0 lacks
SPDU       SI, LI, a PI / PGI code, length or value, parameters dropped, repeated, added,
           reordered; an SPDU dropped or repeated; a TSDU dropped, repeated, or taken
           from another conversation (a PDU in the wrong state)
PPDU ...   (PPDU, ACSE, RTSE, MTA-bind, MTS-APDU: BER values labelled by
MTS-APDU   :mod:`tests.fuzz.layers`) a tag, a length (off by one, indefinite on a
           primitive, 2**32 - 1, nine length octets), contents (bit flips, octets set,
           inserted, deleted, truncated, extreme integers, long strings), children
           dropped, repeated, swapped, junk added; a value dropped, repeated, replaced by
           one of another conversation, or nested thousands deep
=========  ===============================================================================

Reads: the whole side in one read (a bind and a bad TPKT together), the writes as they
were made, random chunks, or (short sides) one octet at a time.

Every case follows from ``(seed, index)`` alone, so one failing case is replayed by its
number.

Public API::

    Case(index, conversation, from_client, layer, changes, reads)   .data, .describe()
    Mutator(corpus, seed, *, layers=None).case(index, *, from_client=True) -> Case
    LAYERS, DEFAULT_SEED
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from p1.association import pdus, transfer
from p1.errors import EncodeError
from p1.osi import presentation, rtse
from p1.osi.x225 import spdu
from tests.fuzz.corpus import Recorded, message_apdu
from tests.fuzz.layers import (
    DT,
    EOT,
    BerNode,
    Layer,
    Param,
    SpduNode,
    Stream,
    Tpkt,
    Tsdu,
    ber_roots,
    encode_ber,
    encode_params,
    encode_spdus,
    encode_stream,
    length_octets,
    parse_ber,
    parse_spdus,
    parse_stream,
    rttr_transfers,
    tsdu_bytes,
    walk_ber,
)

LAYERS = tuple(Layer)
DEFAULT_SEED = 20260601
"""The seed of the bounded run in CI and, unless told otherwise, of the long run."""
_BER_LAYERS = (Layer.PPDU, Layer.ACSE, Layer.RTSE, Layer.MTA_BIND)
_TPDU_CODES = (0xE0, 0xD0, 0x80, 0xC0, 0xF0, 0x10, 0x60, 0x20, 0x50, 0x70, 0x00, 0xFF)
_SPDU_SIS = (1, 2, 5, 8, 9, 10, 12, 13, 14, 15, 16, 21, 22, 25, 26, 33, 34, 41, 42, 45, 48)
_SPDU_SIS_MORE = (49, 50, 53, 57, 58, 61, 62, 0, 255)
_PARAM_CODES = (1, 5, 9, 10, 11, 12, 15, 16, 17, 19, 20, 21, 22, 23, 25, 26, 41, 42, 46, 49)
_PARAM_CODES_MORE = (50, 51, 52, 60, 193, 194, 0, 255)
_INTEGERS = (
    b"",
    b"\x00",
    b"\xff",
    b"\x80",
    b"\x7f",
    b"\x00\x80",
    b"\x7f\xff\xff\xff",
    b"\x80\x00\x00\x00",
    b"\xff" * 9,
    b"\x00" * 20 + b"\x01",
    b"\x01" + b"\x00" * 40,
)
_LENGTHS = (
    b"\x80",
    b"\x81",
    b"\x84\xff\xff\xff\xff",
    b"\x84\x7f\xff\xff\xff",
    b"\x89\x01\x00\x00\x00\x00\x00\x00\x00\x00",
    b"\x85\x01\x00\x00\x00\x00",
    b"\xff",
    b"\x82\x00",
    b"\x00",
)
_DEEP = (2, 30, 200, 2000, 20000)
_MAX_BYTEWISE = 3000
_MAX_READ = 700
_MAX_STACKED = 128 * 1024  # octets of a case beyond which no further change is made
_MAX_REPEATED = 256 * 1024  # octets a value or TSDU repeated may take
_MAX_DT_DATA = 0xFFFF - 7  # TPKT and DT headers


@dataclass(frozen=True, slots=True)
class Case:
    """One mutated side of one conversation, as the reads that deliver it."""

    index: int
    conversation: str
    from_client: bool
    layer: Layer
    changes: tuple[str, ...]
    reads: tuple[bytes, ...]
    lockstep: bool = False
    """The reads are the writes as they were made: a live peer waits for the answer to
    each before the next (as the original peer did)."""

    @property
    def data(self) -> bytes:
        return b"".join(self.reads)

    def describe(self) -> str:
        side = "initiator" if self.from_client else "responder"
        return (
            f"case {self.index}: {self.conversation} ({side} side), {self.layer.value}: "
            f"{'; '.join(self.changes)}; {len(self.reads)} read(s), {len(self.data)} octets"
        )


class _Target:
    """What one mutation works on: the stream, a random source and the other streams."""

    def __init__(self, stream: Stream, rng: random.Random, donors: Sequence[Stream]) -> None:
        self.stream = stream
        self.rng = rng
        self.donors = donors


_Op = Callable[[_Target], str | None]
"""A mutation: changes the target, says what it did (None: it found nothing to change)."""


class Mutator:
    """Cases for a corpus, each from ``(seed, index)``."""

    def __init__(
        self,
        conversations: Sequence[Recorded],
        seed: int,
        *,
        layers: dict[Layer, float] | None = None,
    ) -> None:
        if not conversations:
            raise ValueError("an empty corpus")
        self.conversations = list(conversations)
        self.seed = seed
        self._layers = list(layers or dict.fromkeys(LAYERS, 1.0))
        self._layer_weights = list((layers or dict.fromkeys(LAYERS, 1.0)).values())
        # Ours go through every phase (transfers, checkpoints, the turn): three times as
        # often as a capture, most of which only bind.
        self._weights = [3 if c.name.startswith("ours:") else 1 for c in self.conversations]

    def case(self, index: int, *, from_client: bool = True) -> Case:
        """Case ``index``: a conversation, a layer, one to three changes, reads."""
        rng = random.Random(f"{self.seed}:{index}:{from_client}")
        (record,) = rng.choices(self.conversations, self._weights)
        record = record.numbered(index)
        writes = record.client if from_client else record.server
        if not writes:
            writes = (b"",)
        stream = parse_stream(b"".join(writes))
        donors = [
            parse_stream(b"".join(other.client if rng.random() < 0.7 else other.server))
            for other in rng.sample(self.conversations, min(2, len(self.conversations)))
        ]
        target = _Target(stream, rng, donors)
        (layer,) = rng.choices(self._layers, self._layer_weights)
        changes: list[str] = []
        for _ in range(rng.choice((1, 1, 1, 1, 2, 3))):
            layer_now = layer if not changes else rng.choice(LAYERS)
            change = _mutate(target, layer_now)
            if change is not None:
                changes.append(f"{layer_now.value} {change}" if changes else change)
            if len(encode_stream(stream)) > _MAX_STACKED:
                break  # (big enough: another change could multiply it)
        if not changes:  # (nothing of that layer in this conversation)
            layer = Layer.TPKT
            changes.append(_mutate(target, layer) or "unchanged")
        data = encode_stream(stream)
        # A change of a transfer's contents mostly arrives as the peer wrote it, waiting
        # for each answer: so it gets through the bind to the MTA that stores it.
        as_written = layer is Layer.MTS_APDU and rng.random() < 0.8
        reads, lockstep = _reads(rng, data, [len(w) for w in writes], as_written=as_written)
        return Case(index, record.name, from_client, layer, tuple(changes), reads, lockstep)


def _mutate(target: _Target, layer: Layer) -> str | None:
    ops = _OPS[layer]
    for _ in range(4):  # an op may find nothing to change: try another
        change = target.rng.choice(ops)(target)
        if change is not None:
            return change
    return None


# --- reads --------------------------------------------------------------------------------


def _reads(
    rng: random.Random, data: bytes, writes: list[int], *, as_written: bool
) -> tuple[tuple[bytes, ...], bool]:
    """How ``data`` arrives (``as_written``: as the writes were made): the reads, and
    whether they are the writes as made."""
    how = rng.random()
    if (how < 0.3 and not as_written) or not data:
        return (data,), False
    if how < 0.7 or as_written:  # where the writes were cut, where the data is that long
        reads, offset = [], 0
        for size in writes[:-1]:
            reads.append(data[offset : offset + size])
            offset += size
        reads.append(data[offset:])
        return tuple(r for r in reads if r) or (data,), True
    if how < 0.95 or len(data) > _MAX_BYTEWISE:
        reads, offset = [], 0
        while offset < len(data):
            size = rng.randint(1, _MAX_READ)
            reads.append(data[offset : offset + size])
            offset += size
        return tuple(reads), False
    return tuple(data[i : i + 1] for i in range(len(data))), False


# --- octets -------------------------------------------------------------------------------


def _junk(rng: random.Random, low: int = 1, high: int = 32) -> bytes:
    return rng.randbytes(rng.randint(low, high))


def _changed(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """``data`` with one generic change, and its name."""
    how = rng.randrange(9)
    at = rng.randrange(len(data)) if data else 0
    if how == 0 and data:
        bit = rng.randrange(8)
        return data[:at] + bytes((data[at] ^ (1 << bit),)) + data[
            at + 1 :
        ], f"bit {bit} of octet {at} flipped"
    if how == 1 and data:
        value = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))
        return data[:at] + bytes((value,)) + data[at + 1 :], f"octet {at} set to {value:#04x}"
    if how == 2:
        junk = _junk(rng, 1, 8)
        return data[:at] + junk + data[at:], f"{len(junk)} octets inserted at {at}"
    if how == 3 and data:
        count = rng.randint(1, 8)
        return data[:at] + data[at + count :], f"{count} octets deleted at {at}"
    if how == 4 and data:
        return data[:at], f"truncated to {at} octets"
    if how == 5:
        return b"", "emptied"
    if how == 6:
        junk = _junk(rng, 1, 64)
        return junk, f"replaced by {len(junk)} random octets"
    if how == 7:
        return data + data, "doubled"
    size = rng.choice((300, 4096, 70000))
    return data + bytes(rng.randrange(256) for _ in range(16)) * (
        size // 16
    ), f"grown by {size} octets"


# --- TPKT -------------------------------------------------------------------------------------

_Framed = tuple[list[bytes], bytes, str]
"""TPKTs as framed, the octets after them, and what was changed."""


def _tpkt_list(stream: Stream) -> tuple[list[bytes], bytes]:
    """The encoded stream as separate TPKTs (as framed) and the octets after them."""
    data = encode_stream(stream)
    tpkts, offset = [], 0
    while offset + 4 <= len(data):
        size = int.from_bytes(data[offset + 2 : offset + 4], "big")
        if size < 4 or offset + size > len(data):
            break
        tpkts.append(data[offset : offset + size])
        offset += size
    return tpkts, data[offset:]


def _raw_stream(stream: Stream, tpkts: list[bytes], tail: bytes) -> None:
    """Make ``stream`` write exactly ``tpkts`` then ``tail`` (no layer is taken apart)."""
    stream.units = []
    stream.tail = b"".join(tpkts) + tail


def _tpkt_op(
    change: Callable[[random.Random, list[bytes], bytes], _Framed | None],
) -> _Op:
    def op(target: _Target) -> str | None:
        tpkts, tail = _tpkt_list(target.stream)
        if not tpkts:
            return None
        done = change(target.rng, tpkts, tail)
        if done is None:
            return None
        _raw_stream(target.stream, done[0], done[1])
        return done[2]

    return op


def _tpkt_length(rng: random.Random, tpkts: list[bytes], tail: bytes) -> _Framed:
    at = rng.randrange(len(tpkts))
    size = len(tpkts[at])
    value = rng.choice(
        (
            size - 1,
            size + 1,
            size - rng.randint(2, 9),
            size + rng.randint(2, 300),
            0,
            3,
            4,
            5,
            6,
            0xFFFF,
            rng.randrange(0x10000),
        )
    )
    value &= 0xFFFF
    tpkts[at] = tpkts[at][:2] + value.to_bytes(2, "big") + tpkts[at][4:]
    return tpkts, tail, f"TPKT {at} length {size} -> {value}"


def _tpkt_header(rng: random.Random, tpkts: list[bytes], tail: bytes) -> _Framed:
    at = rng.randrange(len(tpkts))
    octet = rng.randrange(2)
    value = rng.choice((0, 1, 2, 4, 0x83, 0xFF, rng.randrange(256)))
    tpkts[at] = tpkts[at][:octet] + bytes((value,)) + tpkts[at][octet + 1 :]
    return tpkts, tail, f"TPKT {at} {'version' if octet == 0 else 'reserved'} octet -> {value:#04x}"


def _tpkt_duplicate(rng: random.Random, tpkts: list[bytes], tail: bytes) -> _Framed:
    at = rng.randrange(len(tpkts))
    count = rng.choice((1, 1, 2, 50))
    tpkts[at:at] = [tpkts[at]] * count
    return tpkts, tail, f"TPKT {at} repeated {count} time(s)"


def _tpkt_drop(rng: random.Random, tpkts: list[bytes], tail: bytes) -> _Framed:
    at = rng.randrange(len(tpkts))
    del tpkts[at]
    return tpkts, tail, f"TPKT {at} dropped"


def _tpkt_swap(rng: random.Random, tpkts: list[bytes], tail: bytes) -> _Framed | None:
    if len(tpkts) < 2:
        return None
    at = rng.randrange(len(tpkts) - 1)
    tpkts[at], tpkts[at + 1] = tpkts[at + 1], tpkts[at]
    return tpkts, tail, f"TPKTs {at} and {at + 1} swapped"


def _tpkt_truncate(rng: random.Random, tpkts: list[bytes], tail: bytes) -> _Framed:
    at = rng.randrange(len(tpkts))
    keep = rng.randrange(len(tpkts[at]))
    return tpkts[:at], tpkts[at][:keep], f"stream cut {keep} octets into TPKT {at}"


def _tpkt_junk(rng: random.Random, tpkts: list[bytes], tail: bytes) -> _Framed:
    at = rng.randrange(len(tpkts) + 1)
    junk = rng.choice(
        (_junk(rng), b"\x03\x00", b"\x03\x00\x00", b"\x03\x00\x00\x07\x02\xf0", b"\x00" * 8)
    )
    tpkts.insert(at, junk)
    return tpkts, tail, f"{len(junk)} junk octets before TPKT {at}"


def _tpkt_tiny(rng: random.Random, tpkts: list[bytes], tail: bytes) -> _Framed:
    at = rng.randrange(len(tpkts) + 1)
    unit = rng.choice(
        (
            b"\x03\x00\x00\x04",
            b"\x03\x00\x00\x05\x00",
            b"\x03\x00\x00\x07\x02\xf0\x80",
            b"\x03\x00\xff\xff" + bytes(65531),
        )
    )
    tpkts.insert(at, unit)
    return tpkts, tail, f"a TPKT of {len(unit)} octets inserted before TPKT {at}"


# --- COTP -------------------------------------------------------------------------------------


def _cotp_header(target: _Target) -> str | None:
    tpkts = [u for u in target.stream.units if isinstance(u, Tpkt)]
    if not tpkts:
        return None
    rng = target.rng
    tpkt = rng.choice(tpkts)
    how = rng.randrange(4)
    if how == 0:
        tpkt.header, what = _changed(rng, tpkt.header)
        return f"{_tpdu_name(tpkt)} header: {what}"
    if how == 1 and tpkt.header:
        value = rng.choice((0, 1, 2, 6, 7, 0xFE, 0xFF, len(tpkt.header) & 0xFF, rng.randrange(256)))
        tpkt.header = bytes((value,)) + tpkt.header[1:]
        return f"{_tpdu_name(tpkt)} LI -> {value}"
    if how == 2 and len(tpkt.header) > 1:
        name = _tpdu_name(tpkt)
        code = rng.choice(_TPDU_CODES) | rng.choice((0, 0, rng.randrange(16)))
        tpkt.header = tpkt.header[:1] + bytes((code,)) + tpkt.header[2:]
        return f"{name} TPDU code -> {code:#04x}"
    tpkt.data, what = _changed(rng, tpkt.data)
    return f"{_tpdu_name(tpkt)} user data: {what}"


def _tpdu_name(tpkt: Tpkt) -> str:
    names = {0xE0: "CR", 0xD0: "CC", 0x80: "DR", 0x70: "ER", 0xF0: "DT"}
    code = tpkt.header[1] & 0xF0 if len(tpkt.header) > 1 else -1
    return names.get(code, "TPDU")


def _cotp_parameters(target: _Target) -> str | None:
    """CR / CC / DR / ER parameters (after the fixed part)."""
    rng = target.rng
    fixed = {0xE0: 7, 0xD0: 7, 0x80: 7, 0x70: 5}
    tpkts = [
        u
        for u in target.stream.units
        if isinstance(u, Tpkt) and len(u.header) > 1 and u.header[1] & 0xF0 in fixed
    ]
    if not tpkts:
        return None
    tpkt = rng.choice(tpkts)
    start = fixed[tpkt.header[1] & 0xF0]
    head, params = tpkt.header[:start], tpkt.header[start:]
    how = rng.randrange(3)
    if how == 0:
        code = rng.choice((0xC0, 0xC1, 0xC2, 0xC7, 0xC0, 0x85, 0xE0, 0xC3, rng.randrange(256)))
        value = rng.choice((b"", b"\x00", b"\x0b", b"\x07", b"\x0e", b"\x01", _junk(rng, 1, 20)))
        params += bytes((code, len(value))) + value
        what = f"parameter {code:#04x} of {len(value)} octets added"
    elif how == 1:
        params = params[:-1] + b"\x40" if params else b"\xc0"
        what = "last parameter's value / length broken"
    else:
        params, what = _changed(rng, params)
        what = f"parameters: {what}"
    header = head + params
    tpkt.header = bytes(((len(header) - 1) & 0xFF,)) + header[1:]
    return f"{_tpdu_name(tpkt)} {what}"


def _cotp_cuts(target: _Target) -> str | None:
    tsdus = target.stream.tsdus()
    if not tsdus:
        return None
    rng = target.rng
    tsdu = rng.choice(tsdus)
    size = max(1, len(tsdu.data))
    how = rng.randrange(3)
    if how == 0:
        piece = rng.choice((1, 2, 7, 128, rng.randint(1, size)))
        tsdu.cuts = [piece] * (size // piece + 1)
        return f"a TSDU of {size} octets sent in DTs of {piece}"
    units = target.stream.units
    at = units.index(tsdu)
    data = tsdu_bytes(tsdu)
    if how == 1:  # no DT with EOT: the TSDU never ends
        pieces = [data[i : i + 1024] for i in range(0, len(data), 1024)] or [b""]
        units[at : at + 1] = [Tpkt(b"\x03\x00", bytes((2, DT, 0)), part) for part in pieces]
        return f"a TSDU of {size} octets without EOT"
    cut = rng.randint(0, min(size, _MAX_DT_DATA))
    rest = data[cut:][:_MAX_DT_DATA]
    units[at : at + 1] = [
        Tpkt(b"\x03\x00", bytes((2, DT, EOT)), part) for part in (data[:cut], rest)
    ]
    return f"a TSDU of {size} octets ended early, at {cut}"


def _cotp_insert(target: _Target) -> str | None:
    rng = target.rng
    tpdus = {
        "CR": b"\x0e\xe0\x00\x00\x00\x01\x00\xc0\x01\x0b\xc2\x02\x00\x01",
        "CC": b"\x0e\xd0\x00\x01\x00\x01\x00\xc0\x01\x0b\xc2\x02\x00\x01",
        "DR": b"\x06\x80\x00\x01\x00\x00\x00",
        "ER": b"\x04\x70\x00\x01\x00",
        "DT no EOT": b"\x02\xf0\x00",
        "DT empty": b"\x02\xf0\x80",
        "DT LI 3": b"\x03\xf0\x80\x00",
        "ED": b"\x04\x10\x00\x01\x80",
        "AK": b"\x04\x60\x00\x01\x00",
        "DC": b"\x06\xc0\x00\x01\x00\x01",
        "RJ": b"\x04\x50\x00\x01\x00",
        "junk": _junk(rng, 3, 40),
    }
    name = rng.choice(sorted(tpdus))
    tpdu = tpdus[name]
    header_size = min(tpdu[0] + 1, len(tpdu))
    units = target.stream.units
    at = rng.randrange(len(units) + 1)
    units.insert(at, Tpkt(b"\x03\x00", tpdu[:header_size], tpdu[header_size:]))
    return f"{name} TPDU inserted before unit {at}"


# --- SPDU -------------------------------------------------------------------------------------


def _spdu_tsdus(stream: Stream) -> list[Tsdu]:
    return [t for t in stream.tsdus() if t.spdus]


def _spdu_field(target: _Target) -> str | None:
    tsdus = _spdu_tsdus(target.stream)
    if not tsdus:
        return None
    rng = target.rng
    tsdu = rng.choice(tsdus)
    assert tsdu.spdus is not None
    index = rng.randrange(len(tsdu.spdus))
    spdu = tsdu.spdus[index]
    how = rng.randrange(4)
    if how == 0:
        si = rng.choice(_SPDU_SIS + _SPDU_SIS_MORE)
        old, spdu.si = spdu.si, si
        return f"SPDU {index} (SI {old}) SI -> {si}"
    if how == 1:
        size = len(encode_params(spdu.params))
        length = rng.choice((size - 1, size + 1, 0, 0xFE, size + 50))
        spdu.length = rng.choice(
            (
                bytes((length & 0xFF,)),
                b"\xff" + (length & 0xFFFF).to_bytes(2, "big"),
                b"\xff\x00",
                b"\xff",
            )
        )
        return f"SPDU {index} (SI {spdu.si}) LI -> {spdu.length.hex()} for {size}"
    if how == 2 and spdu.tail_ber is None:
        spdu.tail, what = _changed(rng, spdu.tail)
        return f"SPDU {index} (SI {spdu.si}) user information: {what}"
    if index == 0 and len(tsdu.spdus) == 2 and rng.random() < 0.5:
        del tsdu.spdus[0]
        return f"the GT / PT in front of SI {tsdu.spdus[0].si} dropped"
    tsdu.spdus.insert(index, _copy_spdu(spdu))
    return f"SPDU {index} (SI {spdu.si}) repeated"


def _copy_spdu(spdu: SpduNode) -> SpduNode:
    copied = parse_spdus(encode_spdus([spdu]))
    return copied[0] if copied else SpduNode(spdu.si)


def _param_lists(spdu: SpduNode) -> list[list[Param]]:
    lists = [spdu.params]
    lists += [p.pis for p in spdu.params if p.pis is not None]
    return lists


def _spdu_parameter(target: _Target) -> str | None:
    tsdus = _spdu_tsdus(target.stream)
    if not tsdus:
        return None
    rng = target.rng
    tsdu = rng.choice(tsdus)
    assert tsdu.spdus is not None
    spdu = rng.choice(tsdu.spdus)
    params = rng.choice(_param_lists(spdu))
    where = f"SI {spdu.si}"
    how = rng.randrange(7)
    if how == 0 or not params:
        code = rng.choice(_PARAM_CODES + _PARAM_CODES_MORE)
        value = rng.choice((b"", b"\x00", b"\xff", b"\x01\x02", _junk(rng), b"9" * 12))
        params.insert(rng.randrange(len(params) + 1), Param(code, value))
        return f"{where}: parameter {code} of {len(value)} octets added"
    param = rng.choice(params)
    if how == 1:
        params.remove(param)
        return f"{where}: parameter {param.code} dropped"
    if how == 2:
        params.insert(params.index(param), Param(param.code, _value_of(param)))
        return f"{where}: parameter {param.code} repeated"
    if how == 3:
        old, param.code = param.code, rng.choice(_PARAM_CODES + _PARAM_CODES_MORE)
        return f"{where}: parameter code {old} -> {param.code}"
    if how == 4:
        param.length = rng.choice(
            (b"\x00", b"\xfe", b"\xff", b"\xff\xff\xff", bytes((rng.randrange(256),)))
        )
        return f"{where}: parameter {param.code} length -> {param.length.hex()}"
    if how == 5:
        rng.shuffle(params)
        return f"{where}: parameters reordered"
    param.value, what = _changed(rng, _value_of(param))
    param.pis = param.ber = None
    param.received = (b"", -1)
    return f"{where}: parameter {param.code} value {what}"


def _spdu_synthetic(target: _Target) -> str | None:
    """A well-formed SPDU of any kind, with plausible parameters and user data, where the
    conversation has none: the session machine (and what rides on it) in every state."""
    rng = target.rng
    kind = rng.choice(list(spdu.Kind))
    user_data = rng.choice(_user_data_samples(rng)) if kind not in _NO_USER_DATA else b""
    unit = spdu.Spdu(
        kind=kind,
        serial_number=rng.choice((None, 0, 1, 2, 3, rng.randrange(1, 1_000_000))),
        activity_identifier=rng.choice((None, b"\x02\x01\x01", b"\x02\x01\x07", b"")),
        token_item=rng.choice((None, 0, 0x01, 0x15, 0x55, 0xFF)),
        sync_type_item=rng.choice((None, None, 1)),
        transport_disconnect=rng.choice((None, 0, 1, 3, 5)),
        reason_code=rng.choice((None, 0, 1, 2, 3, 255)) if kind in _REASONED else None,
        enclosure_item=rng.choice((None, None, 1, 2, 3)) if kind in spdu.SEGMENTABLE else None,
        user_data=user_data,
    )
    try:
        tsdu = spdu.encode_tsdu(unit)
    except EncodeError:
        return None
    units = target.stream.units
    at = rng.randrange(len(units) + 1)
    cut = len(tsdu) // 2 if rng.random() < 0.1 else len(tsdu)
    units.insert(at, Tsdu([cut, len(tsdu)], parse_spdus(tsdu), tsdu))
    return f"{kind.name} SPDU ({len(user_data)} octets of user data) inserted before unit {at}"


def _spdu_sequence(target: _Target) -> str | None:
    """The conversation from some unit on replaced by a run of well-formed data-phase
    SPDUs, serial numbers counting as X.225 7.20 has them: activities, checkpoints, the
    turn, exceptions, interruptions, release and abort, in an order the fuzzer picks."""
    rng = target.rng
    units = target.stream.units
    tsdus = [i for i, unit in enumerate(units) if isinstance(unit, Tsdu)]
    bound = tsdus[0] + 1 if tsdus and rng.random() < 0.9 else 0  # after the CN or AC
    at = rng.randint(bound, len(units))
    serial = 1
    names = []
    run: list[Tsdu | Tpkt] = []
    kinds = [spdu.Kind.AS] if rng.random() < 0.7 else []
    kinds += [rng.choice(_WITHIN) for _ in range(rng.randint(0, 5))]
    kinds += [rng.choice(_ENDING)]
    kinds += [rng.choice(_ANY) for _ in range(rng.choice((0, 0, 1, 2)))]
    for kind in kinds:
        if kind is spdu.Kind.AS:
            serial = 1
        unit = spdu.Spdu(
            kind=kind,
            serial_number=serial if kind in _SERIAL else None,
            activity_identifier=b"\x02\x01\x01" if kind is spdu.Kind.AS else None,
            token_item=0x15 if kind in (spdu.Kind.PT, spdu.Kind.GT) else None,
            transport_disconnect=1 if kind in (spdu.Kind.AB, spdu.Kind.FN) else None,
            reason_code=rng.choice((0, 1, 3)) if kind in _REASONED else None,
            user_data=_sequence_data(rng, kind),
        )
        if kind in (spdu.Kind.MIP, spdu.Kind.MAP) and rng.random() < 0.8:
            serial += 1
        tsdu = spdu.encode_tsdu(unit)
        run.append(Tsdu([len(tsdu)], parse_spdus(tsdu), tsdu))
        names.append(kind.name)
    units[at:] = run
    return f"from unit {at} on: {' '.join(names)}"


# A run: an activity start (mostly), what happens within it, how it ends, then anything.
_K = spdu.Kind
_WITHIN = (_K.DT, _K.DT, _K.DT, _K.MIP, _K.MIP, _K.MIA, _K.MAA, _K.PT, _K.GT)
_ENDING = (_K.MAP, _K.MAP, _K.AI, _K.AD, _K.ED, _K.ER, _K.AB, _K.FN, _K.GTC, _K.AIA, _K.ADA)
_ANY = (*_WITHIN, *_ENDING, _K.AS, _K.DN, _K.NF, _K.AA, _K.GTA)
_SERIAL = frozenset({spdu.Kind.MIP, spdu.Kind.MIA, spdu.Kind.MAP, spdu.Kind.MAA})
_TRANSFER = transfer.encode_transfer(message_apdu("fuzz-sequence"))


def _sequence_data(rng: random.Random, kind: spdu.Kind) -> bytes:
    if kind is spdu.Kind.DT:
        start = rng.choice((0, 0, rng.randrange(len(_TRANSFER))))
        piece = _TRANSFER[start : start + rng.choice((len(_TRANSFER), 1024, 7))]
        return presentation.encode_pdv(presentation.RTSE_CONTEXT, rtse.encode_rttr(piece))
    if kind is spdu.Kind.PT:
        return pdus.turn_please_data(rng.randrange(3))
    if kind is spdu.Kind.AB:
        return pdus.abort_data(rng.choice(list(rtse.AbortReason)))
    if kind is spdu.Kind.FN:
        return pdus.release_request_data()
    if kind is spdu.Kind.DN:
        return pdus.release_response_data()
    return b""


_NO_USER_DATA = frozenset({spdu.Kind.GT, spdu.Kind.GTC, spdu.Kind.GTA, spdu.Kind.ADA})
_REASONED = frozenset({spdu.Kind.RF, spdu.Kind.AI, spdu.Kind.AD, spdu.Kind.ED})


def _user_data_samples(rng: random.Random) -> tuple[bytes, ...]:
    """SS-user data a P1 association carries, and some it does not."""
    return (
        b"",
        presentation.encode_pdv(presentation.RTSE_CONTEXT, rtse.encode_rttr(_junk(rng, 0, 40))),
        pdus.turn_please_data(rng.randrange(10)),
        pdus.abort_data(rng.choice(list(rtse.AbortReason))),
        pdus.release_request_data(),
        pdus.release_response_data(),
        _junk(rng, 1, 24),
    )


def _value_of(param: Param) -> bytes:
    """The octets of a parameter's value as it stands."""
    if param.pis is not None:
        return encode_params(param.pis)
    if param.ber is not None:
        return b"".join(encode_ber(node) for node in param.ber)
    return param.value


def _spdu_units(target: _Target) -> str | None:
    """TSDUs dropped, repeated, swapped, or brought in from another conversation."""
    rng = target.rng
    units = target.stream.units
    tsdus = target.stream.tsdus()
    how = rng.randrange(4)
    if how == 0:
        donors = [t for donor in target.donors for t in donor.tsdus()]
        if not donors:
            return None
        tsdu = rng.choice(donors)
        at = rng.randrange(len(units) + 1)
        units.insert(at, tsdu)
        return f"a TSDU of another conversation ({_kinds(tsdu)}) inserted before unit {at}"
    if not tsdus:
        return None
    tsdu = rng.choice(tsdus)
    at = units.index(tsdu)
    if how == 1:
        del units[at]
        return f"TSDU {at} ({_kinds(tsdu)}) dropped"
    if how == 2:
        count = rng.choice((1, 1, 3, 100))
        copy = encode_stream(Stream([tsdu]))
        count = min(count, max(1, _MAX_REPEATED // len(copy)))
        units[at:at] = [unit for _ in range(count) for unit in parse_stream(copy).units]
        return f"TSDU {at} ({_kinds(tsdu)}) repeated {count} time(s)"
    if at + 1 >= len(units):
        return None
    units[at], units[at + 1] = units[at + 1], units[at]
    return f"TSDU {at} ({_kinds(tsdu)}) swapped with the unit after it"


def _kinds(tsdu: Tsdu) -> str:
    return "+".join(f"SI {s.si}" for s in tsdu.spdus or ()) or "no SPDU"


# --- BER layers -------------------------------------------------------------------------------


def _containers(roots: list[BerNode]) -> list[tuple[list[BerNode], BerNode]]:
    """Each TLV that was taken apart (not junk put in), with the list that holds it."""
    pairs = [(roots, node) for node in roots]
    for node in walk_ber(roots):
        if node.children is not None:
            pairs += [(node.children, child) for child in node.children]
    return [(container, node) for container, node in pairs if node.raw is None]


def _ber_op(layer: Layer) -> _Op:
    def op(target: _Target) -> str | None:
        places = [
            (container, node)
            for roots in ber_roots(target.stream)
            for container, node in _containers(roots)
            if node.layer is layer
        ]
        if not places:
            return None
        container, node = target.rng.choice(places)
        return _ber_change(target, container, node)

    return op


def _mts_apdu(target: _Target) -> str | None:
    """The octets of an RTTR: the EXTERNAL around the MTS-APDU (or a piece of it)."""
    rttrs = list(rttr_transfers(target.stream))
    if not rttrs:
        return None
    rng = target.rng
    rttr = rng.choice(rttrs)
    inner = parse_ber(rttr.content, Layer.MTS_APDU) if rttr.children is None else None
    if inner is None or rng.random() < 0.15:
        rttr.content, what = _changed(rng, rttr.content)
        rttr.children = None
        return f"RTTR octets {what}"
    container, node = rng.choice(_containers(inner))
    change = _ber_change(target, container, node)
    rttr.content = b"".join(encode_ber(n) for n in inner)
    return change


def _ber_change(target: _Target, container: list[BerNode], node: BerNode) -> str:
    rng = target.rng
    name = f"value {node.identifier.hex() or '(raw)'}"
    how = rng.randrange(10)
    if how == 0:
        old = node.identifier
        node.identifier = rng.choice(
            (
                bytes((old[0] ^ (1 << rng.randrange(8)),)) + old[1:],
                bytes((rng.randrange(256),)),
                bytes((old[0] | 0x1F,)) + b"\x81\x80\x80\x80\x80\x00",
                bytes((old[0] | 0x1F,)) + b"\xff\xff",
                bytes((old[0] ^ 0x20,)) + old[1:],
            )
        )
        return f"{name}: tag -> {node.identifier.hex()}"
    if how == 1:
        size = (
            len(encode_ber(node))
            - len(node.identifier)
            - len(node.received[0] if node.received[1] >= 0 else b"")
        )
        size = max(size, 0)
        node.length = rng.choice(
            (
                *_LENGTHS,
                length_octets(size + 1),
                length_octets(max(size - 1, 0)),
                b"\x84" + size.to_bytes(4, "big"),
            )
        )
        return f"{name}: length -> {node.length.hex()}"
    if how in (2, 3):
        return f"{name}: {_contents(rng, node)}"
    if how == 4:
        container.remove(node)
        return f"{name} dropped"
    if how == 5:
        count = rng.choice((1, 1, 2, 1000))
        at = container.index(node)
        copy = BerNode(b"", node.layer, raw=encode_ber(node))  # (junk now: left alone)
        count = min(count, max(1, _MAX_REPEATED // len(copy.raw or b"-")))
        container[at:at] = [copy] * count
        return f"{name} repeated {count} time(s)"
    if how == 6:
        junk = BerNode(
            b"",
            node.layer,
            raw=rng.choice((_junk(rng), b"\x00\x00", b"\x05\x00", b"\x30\x80", b"\x04\x81")),
        )
        container.insert(rng.randrange(len(container) + 1), junk)
        return f"junk {junk.raw.hex() if junk.raw else ''} beside {name}"
    if how == 7:
        donors = [
            n for donor in target.donors for roots in ber_roots(donor) for n in walk_ber(roots)
        ]
        if not donors:
            return _contents(rng, node)
        other = rng.choice(donors)
        node.raw = encode_ber(other)
        return f"{name} replaced by {other.layer.value} value {other.identifier.hex()}"
    if how == 8:
        depth = rng.choice(_DEEP)
        node.raw = _nested(rng, encode_ber(node), depth)
        return f"{name} nested {depth} deep"
    node.indefinite = node.constructed and not node.indefinite
    node.length = None if node.constructed else b"\x80"
    return f"{name}: {'indefinite length' if node.indefinite else 'length form changed'}"


def _contents(rng: random.Random, node: BerNode) -> str:
    children = node.children
    if children:
        how = rng.randrange(4)
        if how == 0:
            child = rng.choice(children)
            children.remove(child)
            return "a child dropped"
        if how == 1 and len(children) > 1:
            i, j = rng.sample(range(len(children)), 2)
            children[i], children[j] = children[j], children[i]
            return f"children {i} and {j} swapped"
        if how == 2:
            junk = BerNode(bytes((rng.randrange(256),)), node.layer, content=_junk(rng, 0, 12))
            children.insert(rng.randrange(len(children) + 1), junk)
            return f"a child {junk.identifier.hex()} added"
        node.content = b"".join(encode_ber(c) for c in children)
        node.children = None
    if rng.random() < 0.3 and len(node.content) <= 8:
        node.content = rng.choice(_INTEGERS)
        return f"contents -> {node.content.hex() or 'empty'}"
    node.content, what = _changed(rng, node.content)
    return f"contents {what}"


def _nested(rng: random.Random, inner: bytes, depth: int) -> bytes:
    tag = rng.choice((b"\x30", b"\xa0", b"\x61", b"\x28"))
    if rng.random() < 0.5:  # indefinite: no length to compute
        return (tag + b"\x80") * depth + inner + b"\x00\x00" * depth
    for _ in range(depth):
        inner = tag + length_octets(len(inner)) + inner
    return inner


_OPS: dict[Layer, tuple[_Op, ...]] = {
    Layer.TPKT: tuple(
        _tpkt_op(change)
        for change in (
            _tpkt_length,
            _tpkt_length,
            _tpkt_header,
            _tpkt_duplicate,
            _tpkt_drop,
            _tpkt_swap,
            _tpkt_truncate,
            _tpkt_junk,
            _tpkt_tiny,
        )
    ),
    Layer.COTP: (_cotp_header, _cotp_header, _cotp_parameters, _cotp_cuts, _cotp_insert),
    Layer.SPDU: (
        _spdu_field,
        _spdu_parameter,
        _spdu_parameter,
        _spdu_units,
        _spdu_synthetic,
        _spdu_sequence,
        _spdu_sequence,
    ),
    **{layer: (_ber_op(layer),) for layer in _BER_LAYERS},
    Layer.MTS_APDU: (_mts_apdu,),
}
