"""P_MUL PDUs (ACP 142 clause 3 and Annex B): their octets, their checksum.

One PDU is one UDP datagram.  Every PDU starts with the same eight octets: Length_of_PDU
(16 bits, the whole PDU), Priority (8 bits; unused in the dynamic-group PDUs), MAP (2
bits: not first / not last PDU of an Address_PDU sequence) with PDU_Type (6 bits), a
16-bit field whose meaning depends on the type (Total_Number_of_PDUs in an Address_PDU,
Sequence_Number_of_PDU in a Data_PDU, unused elsewhere), and the Checksum (16 bits, ACP
142 Annex B-3: an ISO 8473 Fletcher sum over the whole PDU with its own field zero).

This module writes and reads the four PDUs a message transfer uses:

- Address_PDU: Source_ID, Message_ID, Expiry_Time (seconds since 1970, UTC), the
  destinations (Destination_ID and Message_Sequence_Number each, and a reserved field of
  a length given once) and the number of Data_PDUs that follow;
- Data_PDU: Source_ID, Message_ID and one fragment of the message (numbered from 1);
- Ack_PDU: the acknowledging node's ID and one Ack_Info_Entry per message, each listing
  the Data_PDUs still missing (none: the whole message was received), single numbers or
  ranges written ``first, 0, last``, and an optional timestamp (tenths of a second);
- Discard_Message_PDU: the sender gave up the message (it expired).

The types of the dynamic multicast groups (Announce, Request, Reject, Release) and the
extra and FEC Address_PDUs are recognised and refused with :class:`PduError` ``"type"``:
this implementation uses static groups only.

Node IDs are 32-bit numbers, conventionally the node's IPv4 address
(:func:`node_id` / :func:`node_text`).

Public API::

    PduType                       the PDU_Type values
    DestinationEntry(node, sequence, reserved=b"")
    AddressPdu, DataPdu, AckInfo, AckPdu, DiscardPdu     (frozen dataclasses)
    Pdu = AddressPdu | DataPdu | AckPdu | DiscardPdu
    encode_pdu(pdu) -> bytes      decode_pdu(datagram) -> Pdu   (raises PduError)
    checksum(pdu_octets) -> int   the Annex B-3 value for octets whose field is zero
    ack_info_size(info) -> int    the octets of an Ack_Info_Entry
    PduError(kind, why)           kind: "short", "length", "checksum", "type", "field"
    node_id(text) -> int          node_text(number) -> str
    HEADER_SIZE, DATA_OVERHEAD, ADDRESS_OVERHEAD, DESTINATION_SIZE
"""

from __future__ import annotations

import enum
import ipaddress
import struct
from dataclasses import dataclass

__all__ = [
    "ADDRESS_OVERHEAD",
    "DATA_OVERHEAD",
    "DESTINATION_SIZE",
    "HEADER_SIZE",
    "AckInfo",
    "AckPdu",
    "AddressPdu",
    "DataPdu",
    "DestinationEntry",
    "DiscardPdu",
    "Pdu",
    "PduError",
    "PduType",
    "ack_info_size",
    "checksum",
    "decode_pdu",
    "encode_pdu",
    "node_id",
    "node_text",
]

HEADER_SIZE = 8
"""Length, Priority, MAP/PDU_Type, the type's 16-bit field, Checksum."""
DATA_OVERHEAD = HEADER_SIZE + 8
"""A Data_PDU's octets besides its fragment (Source_ID, Message_ID)."""
ADDRESS_OVERHEAD = HEADER_SIZE + 16
"""An Address_PDU's octets besides its destination entries."""
DESTINATION_SIZE = 8
"""One destination entry without a reserved field."""
MAX_PDU = 0xFFFF
"""Length_of_PDU is 16 bits."""
_CHECKSUM_AT = 6
_ACK_INFO_HEAD = 10
_U16 = 0xFFFF
_U32 = 0xFFFFFFFF


class PduType(enum.IntEnum):
    """PDU_Type (6 bits)."""

    DATA = 0
    ACK = 1
    ADDRESS = 2
    DISCARD_MESSAGE = 3
    ANNOUNCE = 4
    REQUEST = 5
    REJECT = 6
    RELEASE = 7
    FEC_ADDRESS = 8
    EXTRA_ADDRESS = 0x12
    EXTRA_FEC_ADDRESS = 0x18


class PduError(ValueError):
    """A datagram that is not a P_MUL PDU this implementation takes."""

    def __init__(self, kind: str, why: str) -> None:
        super().__init__(why)
        self.kind = kind
        """"short", "length", "checksum", "type" or "field": what is wrong, for a counter."""


@dataclass(frozen=True, slots=True)
class DestinationEntry:
    """One destination of an Address_PDU."""

    node: int
    sequence: int
    """Message_Sequence_Number: this message's number among those sent to the node."""
    reserved: bytes = b""


@dataclass(frozen=True, slots=True, kw_only=True)
class AddressPdu:
    """Announces a message: who it is for, how many Data_PDUs carry it, until when."""

    priority: int
    source: int
    message_id: int
    expiry: int
    """Expiry_Time: seconds since 1970-01-01 UTC."""
    total: int
    """Total_Number_of_PDUs: the Data_PDUs of the message."""
    destinations: tuple[DestinationEntry, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DataPdu:
    """One fragment of a message."""

    priority: int
    source: int
    message_id: int
    sequence: int
    """Sequence_Number_of_PDU, 1 to the Address_PDU's total."""
    fragment: bytes


@dataclass(frozen=True, slots=True)
class AckInfo:
    """What one node has of one message: ``missing`` empty means all of it."""

    source: int
    message_id: int
    missing: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AckPdu:
    """A node's acknowledgements, one entry per message."""

    priority: int
    node: int
    """Source_ID_of_Ack_Sender."""
    entries: tuple[AckInfo, ...]
    timestamp: int | None = None
    """Tenths of a second (the Ack_PDU's timestamp option), or None."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscardPdu:
    """The sender stopped sending a message (it expired before every node had it)."""

    priority: int
    source: int
    message_id: int


Pdu = AddressPdu | DataPdu | AckPdu | DiscardPdu


# --- node IDs ------------------------------------------------------------------------


def node_id(text: str) -> int:
    """The 32-bit node ID written as an IPv4 address (``"10.0.0.1"``)."""
    return int(ipaddress.IPv4Address(text))


def node_text(number: int) -> str:
    """A node ID as an IPv4 address."""
    return str(ipaddress.IPv4Address(number & _U32))


# --- checksum (Annex B-3) --------------------------------------------------------------


def checksum(octets: bytes | bytearray) -> int:
    """The Checksum field's value for ``octets`` (a whole PDU whose field is zero)."""
    c0 = c1 = 0
    for octet in octets:
        c0 = (c0 + octet) % 255
        c1 = (c1 + c0) % 255
    n = len(octets) - _CHECKSUM_AT - 1
    x = (n * c0 - c1) % 255
    y = (c1 - (n + 1) * c0) % 255
    return x << 8 | y


def _seal(body: bytearray) -> bytes:
    """Set the Length and Checksum fields of a PDU written with both zero."""
    if len(body) > MAX_PDU:
        raise ValueError(f"a P_MUL PDU holds at most {MAX_PDU} octets, not {len(body)}")
    struct.pack_into("!H", body, 0, len(body))
    struct.pack_into("!H", body, _CHECKSUM_AT, checksum(body))
    return bytes(body)


# --- encoding --------------------------------------------------------------------------


def _head(priority: int, kind: PduType, field: int, map_bits: int = 0) -> bytearray:
    return bytearray(struct.pack("!HBBHH", 0, priority, map_bits | kind, field, 0))


def encode_pdu(pdu: Pdu) -> bytes:
    """The octets of ``pdu``; ValueError for a field out of range."""
    try:
        return _encode(pdu)
    except struct.error as error:
        raise ValueError(f"a field out of range: {error}") from None


def _encode(pdu: Pdu) -> bytes:
    if isinstance(pdu, DataPdu):
        return _encode_data(pdu)
    if isinstance(pdu, AddressPdu):
        return _encode_address(pdu)
    if isinstance(pdu, AckPdu):
        return _encode_ack(pdu)
    return _encode_discard(pdu)


def _encode_data(pdu: DataPdu) -> bytes:
    if pdu.sequence == 0:
        raise ValueError("Data_PDUs are numbered from 1")
    body = _head(pdu.priority, PduType.DATA, pdu.sequence)
    body += struct.pack("!II", pdu.source, pdu.message_id)
    body += pdu.fragment
    return _seal(body)


def _encode_address(pdu: AddressPdu) -> bytes:
    reserved = {len(d.reserved) for d in pdu.destinations} or {0}
    if len(reserved) != 1:
        raise ValueError("the destinations' reserved fields must be of one length")
    body = _head(pdu.priority, PduType.ADDRESS, pdu.total)
    body += struct.pack("!III", pdu.source, pdu.message_id, pdu.expiry)
    body += struct.pack("!HH", len(pdu.destinations), reserved.pop())
    for entry in pdu.destinations:
        body += struct.pack("!II", entry.node, entry.sequence) + entry.reserved
    return _seal(body)


def _encode_ack(pdu: AckPdu) -> bytes:
    body = _head(pdu.priority, PduType.ACK, 0)
    body += struct.pack("!IH", pdu.node, len(pdu.entries))
    for entry in pdu.entries:
        missing = _missing_octets(entry.missing)
        body += struct.pack("!HII", _ACK_INFO_HEAD + len(missing), entry.source, entry.message_id)
        body += missing
    if pdu.timestamp is not None:
        body += struct.pack("!Q", pdu.timestamp)
    return _seal(body)


def _encode_discard(pdu: DiscardPdu) -> bytes:
    body = _head(pdu.priority, PduType.DISCARD_MESSAGE, 0)
    body += struct.pack("!II", pdu.source, pdu.message_id)
    return _seal(body)


def ack_info_size(info: AckInfo) -> int:
    """The octets of ``info``'s Ack_Info_Entry, its missing numbers written short."""
    return _ACK_INFO_HEAD + len(_missing_octets(info.missing))


def _missing_octets(missing: tuple[int, ...]) -> bytes:
    """Missing sequence numbers, runs of three or more written as ``first, 0, last``."""
    numbers = sorted(set(missing))
    if numbers and not 1 <= numbers[0] <= numbers[-1] <= _U16:
        raise ValueError("a missing sequence number out of range (1 to 65535)")
    out = bytearray()
    start = 0
    while start < len(numbers):
        end = start
        while end + 1 < len(numbers) and numbers[end + 1] == numbers[end] + 1:
            end += 1
        if end - start >= 2:
            out += struct.pack("!HHH", numbers[start], 0, numbers[end])
        else:
            out += b"".join(struct.pack("!H", n) for n in numbers[start : end + 1])
        start = end + 1
    return bytes(out)


# --- decoding --------------------------------------------------------------------------


def decode_pdu(datagram: bytes) -> Pdu:
    """The PDU one datagram holds; :class:`PduError` for anything else."""
    if len(datagram) < HEADER_SIZE:
        raise PduError("short", f"{len(datagram)} octets, fewer than a P_MUL header")
    length, priority, type_octet, field, sent = struct.unpack_from("!HBBHH", datagram)
    if length != len(datagram):
        raise PduError("length", f"Length_of_PDU {length} in a datagram of {len(datagram)}")
    zeroed = bytearray(datagram)
    zeroed[_CHECKSUM_AT : _CHECKSUM_AT + 2] = b"\0\0"
    if checksum(zeroed) != sent:
        raise PduError("checksum", f"checksum {sent:#06x}, not {checksum(zeroed):#06x}")
    kind = type_octet & 0x3F
    reader = _READERS.get(kind)
    if reader is None:
        raise PduError("type", f"PDU_Type {_type_name(kind)} is not taken here")
    try:
        return reader(datagram, priority, field, type_octet)
    except struct.error:
        raise PduError("field", f"{_type_name(kind)} cut short at {len(datagram)} octets") from None


def _type_name(kind: int) -> str:
    try:
        return PduType(kind).name
    except ValueError:
        return str(kind)


def _read_data(datagram: bytes, priority: int, field: int, type_octet: int) -> Pdu:
    source, message_id = struct.unpack_from("!II", datagram, HEADER_SIZE)
    if field == 0:
        raise PduError("field", "a Data_PDU numbered 0 (they are numbered from 1)")
    return DataPdu(
        priority=priority,
        source=source,
        message_id=message_id,
        sequence=field,
        fragment=datagram[DATA_OVERHEAD:],
    )


def _read_address(datagram: bytes, priority: int, field: int, type_octet: int) -> Pdu:
    if type_octet & 0xC0:
        raise PduError("type", "an Address_PDU in a sequence of several (MAP bits set)")
    source, message_id, expiry, count, reserved = struct.unpack_from("!IIIHH", datagram, 8)
    at = ADDRESS_OVERHEAD
    entries = []
    for _ in range(count):
        node, sequence = struct.unpack_from("!II", datagram, at)
        tail = datagram[at + 8 : at + 8 + reserved]
        if len(tail) != reserved:
            raise struct.error
        entries.append(DestinationEntry(node, sequence, tail))
        at += DESTINATION_SIZE + reserved
    if at != len(datagram):
        raise PduError("field", f"{len(datagram) - at} octets after the destinations")
    return AddressPdu(
        priority=priority,
        source=source,
        message_id=message_id,
        expiry=expiry,
        total=field,
        destinations=tuple(entries),
    )


def _read_ack(datagram: bytes, priority: int, field: int, type_octet: int) -> Pdu:
    node, count = struct.unpack_from("!IH", datagram, HEADER_SIZE)
    at = HEADER_SIZE + 6
    entries = []
    for _ in range(count):
        size, source, message_id = struct.unpack_from("!HII", datagram, at)
        if size < _ACK_INFO_HEAD or size % 2 or at + size > len(datagram):
            raise PduError("field", f"an Ack_Info_Entry of {size} octets")
        numbers = struct.unpack_from(f"!{(size - _ACK_INFO_HEAD) // 2}H", datagram, at + 10)
        entries.append(AckInfo(source, message_id, _missing_numbers(numbers)))
        at += size
    rest = len(datagram) - at
    if rest not in (0, 8):
        raise PduError("field", f"{rest} octets after the Ack_Info_Entries")
    timestamp = struct.unpack_from("!Q", datagram, at)[0] if rest else None
    return AckPdu(priority=priority, node=node, entries=tuple(entries), timestamp=timestamp)


def _missing_numbers(numbers: tuple[int, ...]) -> tuple[int, ...]:
    """Sequence numbers from their written form (``first, 0, last`` is a range)."""
    out: list[int] = []
    index = 0
    while index < len(numbers):
        first = numbers[index]
        if first == 0:
            raise PduError("field", "a missing sequence number 0 outside a range")
        ranged = index + 2 < len(numbers) and numbers[index + 1] == 0
        if ranged:
            last = numbers[index + 2]
            if last <= first:
                raise PduError("field", f"a missing range {first}-{last}")
            out.extend(range(first, last + 1))
            index += 3
        else:
            out.append(first)
            index += 1
    return tuple(sorted(set(out)))


def _read_discard(datagram: bytes, priority: int, field: int, type_octet: int) -> Pdu:
    source, message_id = struct.unpack_from("!II", datagram, HEADER_SIZE)
    if len(datagram) != HEADER_SIZE + 8:
        raise PduError("field", f"a Discard_Message_PDU of {len(datagram)} octets")
    return DiscardPdu(priority=priority, source=source, message_id=message_id)


_READERS = {
    PduType.DATA: _read_data,
    PduType.ADDRESS: _read_address,
    PduType.ACK: _read_ack,
    PduType.DISCARD_MESSAGE: _read_discard,
}
