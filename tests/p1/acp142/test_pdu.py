"""P_MUL PDUs (ACP 142 clause 3, Annex B-3): octet tables written from the layout, round
trips over every field's range, the checksum against one-octet damage, and each refusal
with its kind."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p1.acp142.pdu import (
    ADDRESS_OVERHEAD,
    DATA_OVERHEAD,
    DESTINATION_SIZE,
    HEADER_SIZE,
    AckInfo,
    AckPdu,
    AddressPdu,
    DataPdu,
    DestinationEntry,
    DiscardPdu,
    Pdu,
    PduError,
    PduType,
    ack_info_size,
    checksum,
    decode_pdu,
    encode_pdu,
    node_id,
    node_text,
)

A = node_id("10.0.0.1")
B = node_id("10.0.0.2")
C = node_id("10.0.0.3")
EXPIRY = 0x65000000


def _octets(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


# Each row: the PDU, then its octets written field by field (Length, Priority, MAP|Type,
# the type's 16-bit field, Checksum, then the type's fields).  The checksums were worked
# out apart from the module; test_the_tables_pass_the_iso_8473_check checks them again.
TABLE: list[tuple[Pdu, str]] = [
    (
        DataPdu(priority=5, source=A, message_id=0x01020304, sequence=2, fragment=b"abc"),
        "0013 05 00 0002 4e5b 0a000001 01020304 616263",
    ),
    (
        DataPdu(
            priority=255, source=0xFFFFFFFF, message_id=0xFFFFFFFF, sequence=0xFFFF, fragment=b""
        ),
        "0010 ff 00 ffff 9f50 ffffffff ffffffff",
    ),
    (
        AddressPdu(
            priority=3,
            source=A,
            message_id=7,
            expiry=EXPIRY,
            total=3,
            destinations=(DestinationEntry(B, 1), DestinationEntry(C, 9)),
        ),
        "0028 03 02 0003 40f2 0a000001 00000007 65000000 0002 0000"
        " 0a000002 00000001 0a000003 00000009",
    ),
    (
        AddressPdu(
            priority=3,
            source=A,
            message_id=8,
            expiry=EXPIRY,
            total=1,
            destinations=(DestinationEntry(B, 2, b"\xaa\xbb"),),
        ),
        "0022 03 02 0001 e502 0a000001 00000008 65000000 0001 0002 0a000002 00000002 aabb",
    ),
    (
        AckPdu(
            priority=0,
            node=B,
            entries=(AckInfo(A, 7), AckInfo(A, 8, (2, 4, 5, 6, 7, 9, 10))),
            timestamp=12345,
        ),
        # The second entry: 2 alone, 4-7 as the range 4, 0, 7, then 9 and 10 alone (a run of
        # two is shorter written as two numbers).
        "0036 00 01 0000 5299 0a000002 0002"
        " 000a 0a000001 00000007"
        " 0016 0a000001 00000008 0002 0004 0000 0007 0009 000a"
        " 0000000000003039",
    ),
    (AckPdu(priority=7, node=B, entries=()), "000e 07 01 0000 9647 0a000002 0000"),
    (
        DiscardPdu(priority=9, source=A, message_id=7),
        "0010 09 03 0000 ac25 0a000001 00000007",
    ),
]


def _iso_8473_check(octets: bytes) -> tuple[int, int]:
    """The receiver's check of ISO 8473 6.19: both running sums are zero on a good PDU."""
    c0 = c1 = 0
    for octet in octets:
        c0 = (c0 + octet) % 255
        c1 = (c1 + c0) % 255
    return c0, c1


@pytest.mark.parametrize(("pdu", "text"), TABLE)
def test_encode(pdu: Pdu, text: str) -> None:
    assert encode_pdu(pdu) == _octets(text)


@pytest.mark.parametrize(("pdu", "text"), TABLE)
def test_decode(pdu: Pdu, text: str) -> None:
    assert decode_pdu(_octets(text)) == pdu


@pytest.mark.parametrize(("pdu", "text"), TABLE)
def test_the_tables_pass_the_iso_8473_check(pdu: Pdu, text: str) -> None:
    octets = _octets(text)
    assert _iso_8473_check(octets) == (0, 0)
    zeroed = octets[:6] + b"\0\0" + octets[8:]
    assert checksum(zeroed) == int.from_bytes(octets[6:8], "big")


# Forms a sender may write that we would write otherwise: each decodes to the value.
DECODE_ONLY: list[tuple[str, Pdu]] = [
    # A run of two written as a range, a range of everything, numbers out of order, one twice.
    (
        "0022 00 01 0000 0000 0a000002 0001 0016 0a000001 00000007 0003 0000 0004 0009 0001 0009",
        AckPdu(priority=0, node=B, entries=(AckInfo(A, 7, (1, 3, 4, 9)),)),
    ),
    # The MAP bits mean nothing in a Data_PDU.
    (
        "0011 01 c0 0001 0000 0a000001 00000001 7a",
        DataPdu(priority=1, source=A, message_id=1, sequence=1, fragment=b"z"),
    ),
]


def _sealed(octets: bytes) -> bytes:
    """``octets`` with their Length_of_PDU and Checksum fields set."""
    body = bytearray(octets)
    struct.pack_into("!H", body, 0, len(body))
    struct.pack_into("!H", body, 6, 0)
    struct.pack_into("!H", body, 6, checksum(body))
    return bytes(body)


@pytest.mark.parametrize(("text", "pdu"), DECODE_ONLY)
def test_decode_forms_we_do_not_write(text: str, pdu: Pdu) -> None:
    assert decode_pdu(_sealed(_octets(text))) == pdu


def test_sizes() -> None:
    assert HEADER_SIZE == 8
    assert len(_octets(TABLE[1][1])) == DATA_OVERHEAD
    assert len(_octets(TABLE[2][1])) - 2 * DESTINATION_SIZE == ADDRESS_OVERHEAD


def test_node_ids_are_ipv4_addresses() -> None:
    assert node_id("10.0.0.1") == 0x0A000001
    assert node_text(0x0A000001) == "10.0.0.1"
    assert node_text(node_id("255.255.255.255")) == "255.255.255.255"


# --- round trips ------------------------------------------------------------------------

U8 = st.integers(0, 0xFF)
U16 = st.integers(0, 0xFFFF)
U32 = st.integers(0, 0xFFFFFFFF)
NUMBER = st.integers(1, 0xFFFF)
"""A Data_PDU's sequence number."""


@st.composite
def addresses(draw: st.DrawFn) -> AddressPdu:
    reserved = draw(st.integers(0, 12))
    count = draw(st.integers(0, 12))
    destinations = tuple(
        DestinationEntry(
            draw(U32), draw(U32), draw(st.binary(min_size=reserved, max_size=reserved))
        )
        for _ in range(count)
    )
    return AddressPdu(
        priority=draw(U8),
        source=draw(U32),
        message_id=draw(U32),
        expiry=draw(U32),
        total=draw(U16),
        destinations=destinations,
    )


@st.composite
def missing_lists(draw: st.DrawFn) -> tuple[int, ...]:
    """Sequence numbers in runs (written as ranges) and alone, unsorted, some twice."""
    numbers: list[int] = []
    for _ in range(draw(st.integers(0, 8))):
        first = draw(NUMBER)
        run = draw(st.integers(1, 40))
        numbers += range(first, min(first + run, 0xFFFF + 1))
    numbers += draw(st.lists(NUMBER, max_size=8))
    return tuple(draw(st.permutations(numbers)))


acks = st.builds(
    AckPdu,
    priority=U8,
    node=U32,
    entries=st.lists(st.builds(AckInfo, U32, U32, missing_lists()), max_size=6).map(tuple),
    timestamp=st.none() | st.integers(0, 2**64 - 1),
)
datas = st.builds(
    DataPdu,
    priority=U8,
    source=U32,
    message_id=U32,
    sequence=NUMBER,
    fragment=st.binary(max_size=300),
)
discards = st.builds(DiscardPdu, priority=U8, source=U32, message_id=U32)
pdus = st.one_of(datas, addresses(), acks, discards)


def _as_read(pdu: Pdu) -> Pdu:
    """What decoding gives back: missing numbers sorted, each once."""
    if isinstance(pdu, AckPdu):
        entries = tuple(
            AckInfo(e.source, e.message_id, tuple(sorted(set(e.missing)))) for e in pdu.entries
        )
        return AckPdu(
            priority=pdu.priority, node=pdu.node, entries=entries, timestamp=pdu.timestamp
        )
    return pdu


@given(pdus)
def test_round_trip(pdu: Pdu) -> None:
    octets = encode_pdu(pdu)
    assert int.from_bytes(octets[:2], "big") == len(octets)
    assert _iso_8473_check(octets) == (0, 0)
    assert decode_pdu(octets) == _as_read(pdu)


@given(st.builds(AckInfo, U32, U32, missing_lists()))
def test_missing_numbers_are_written_short(info: AckInfo) -> None:
    # Every run of three or more is one range (6 octets); the rest are 2 octets each.
    numbers = sorted(set(info.missing))
    runs: list[list[int]] = []
    for n in numbers:
        if runs and runs[-1][-1] == n - 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    expected = sum(6 if len(run) >= 3 else 2 * len(run) for run in runs)
    octets = encode_pdu(AckPdu(priority=0, node=B, entries=(info,)))
    assert struct.unpack_from("!H", octets, 14)[0] == 10 + expected
    assert ack_info_size(info) == 10 + expected


def test_the_reserved_fields_must_be_of_one_length() -> None:
    pdu = AddressPdu(
        priority=0,
        source=A,
        message_id=1,
        expiry=EXPIRY,
        total=1,
        destinations=(DestinationEntry(B, 1, b"x"), DestinationEntry(C, 1, b"yy")),
    )
    with pytest.raises(ValueError, match="one length"):
        encode_pdu(pdu)


def test_a_pdu_holds_at_most_65535_octets() -> None:
    data = DataPdu(priority=0, source=A, message_id=1, sequence=1, fragment=bytes(0xFFFF - 16))
    assert len(encode_pdu(data)) == 0xFFFF
    with pytest.raises(ValueError, match="at most 65535"):
        encode_pdu(
            DataPdu(priority=0, source=A, message_id=1, sequence=1, fragment=bytes(0xFFFF - 15))
        )


OUT_OF_RANGE: list[Pdu] = [
    DataPdu(priority=256, source=A, message_id=1, sequence=1, fragment=b""),
    DataPdu(priority=-1, source=A, message_id=1, sequence=1, fragment=b""),
    DataPdu(priority=0, source=2**32, message_id=1, sequence=1, fragment=b""),
    DataPdu(priority=0, source=A, message_id=1, sequence=0, fragment=b""),
    DataPdu(priority=0, source=A, message_id=1, sequence=0x10000, fragment=b""),
    AddressPdu(priority=0, source=A, message_id=1, expiry=2**32, total=1, destinations=()),
    AddressPdu(priority=0, source=A, message_id=1, expiry=0, total=0x10000, destinations=()),
    AddressPdu(
        priority=0,
        source=A,
        message_id=1,
        expiry=0,
        total=1,
        destinations=(DestinationEntry(B, 2**32),),
    ),
    AckPdu(priority=0, node=B, entries=(AckInfo(A, 1, (0,)),)),
    AckPdu(priority=0, node=B, entries=(AckInfo(A, 1, (5, 0x10000)),)),
    AckPdu(priority=0, node=B, entries=(AckInfo(A, 1, (-3, 5)),)),
    AckPdu(priority=0, node=B, entries=(AckInfo(A, 2**32),)),
    AckPdu(priority=0, node=B, entries=(), timestamp=2**64),
    AckPdu(priority=0, node=B, entries=(), timestamp=-1),
    DiscardPdu(priority=0, source=A, message_id=-1),
]


@pytest.mark.parametrize("pdu", OUT_OF_RANGE)
def test_a_field_out_of_range_is_a_value_error(pdu: Pdu) -> None:
    # Never octets the decoder would refuse, never struct.error.
    with pytest.raises(ValueError, match=r"out of range|numbered from 1"):
        encode_pdu(pdu)
    if isinstance(pdu, AckPdu) and pdu.entries and pdu.entries[0].missing:
        with pytest.raises(ValueError, match="out of range"):
            ack_info_size(pdu.entries[0])


# --- damage -------------------------------------------------------------------------------


def _decode_kind(octets: bytes) -> str | None:
    try:
        decode_pdu(octets)
    except PduError as error:
        return error.kind
    return None


@given(pdus, st.data())
def test_every_one_octet_change_is_refused(pdu: Pdu, data: st.DataObject) -> None:
    octets = encode_pdu(pdu)
    at = data.draw(st.integers(0, len(octets) - 1), label="at")
    old = octets[at]
    new = data.draw(st.integers(0, 255).filter(lambda v: v != old), label="new")
    damaged = octets[:at] + bytes((new,)) + octets[at + 1 :]
    kind = _decode_kind(damaged)
    if {old, new} == {0x00, 0xFF} and at not in (0, 1, 6, 7):
        # The Fletcher sum is modulo 255: 0x00 and 0xFF weigh the same, so this one change
        # is the single-octet damage the Annex B-3 checksum cannot see.
        assert _iso_8473_check(damaged) == (0, 0)
        return
    assert kind is not None, f"octet {at} {old:#04x} -> {new:#04x} accepted"
    if at in (0, 1):
        assert kind == "length"
    elif at >= 2:
        assert kind == "checksum"


def test_every_one_octet_change_of_each_table_pdu_is_refused() -> None:
    for _, text in TABLE:
        octets = _octets(text)
        for at in range(len(octets)):
            for new in range(256):
                old = octets[at]
                if new == old or ({old, new} == {0, 0xFF} and at not in (0, 1, 6, 7)):
                    continue
                damaged = octets[:at] + bytes((new,)) + octets[at + 1 :]
                assert _decode_kind(damaged) == ("length" if at < 2 else "checksum")


def test_the_checksum_does_not_see_0x00_for_0xff() -> None:
    # Annex B-3's sums are modulo 255: a priority of 0 damaged to 255 passes the check.
    # This is the standard's checksum, kept as it is for interworking.
    octets = bytearray(_octets(TABLE[6][1]))
    octets[2] = 0
    octets[6:8] = b"\0\0"
    octets[6:8] = checksum(octets).to_bytes(2, "big")
    octets[2] = 0xFF
    assert decode_pdu(bytes(octets)) == DiscardPdu(priority=255, source=A, message_id=7)


@given(pdus, st.data())
def test_truncations_are_refused(pdu: Pdu, data: st.DataObject) -> None:
    octets = encode_pdu(pdu)
    cut = data.draw(st.integers(0, len(octets) - 1))
    with pytest.raises(PduError) as refused:
        decode_pdu(octets[:cut])
    assert refused.value.kind == ("short" if cut < HEADER_SIZE else "length")


@pytest.mark.parametrize(("pdu", "text"), TABLE)
def test_truncations_with_their_length_and_checksum_set_again(pdu: Pdu, text: str) -> None:
    octets = _octets(text)
    for cut in range(HEADER_SIZE, len(octets)):
        shorter = _sealed(octets[:cut])
        if isinstance(pdu, DataPdu) and cut >= DATA_OVERHEAD:
            assert decode_pdu(shorter) == DataPdu(
                priority=pdu.priority,
                source=pdu.source,
                message_id=pdu.message_id,
                sequence=pdu.sequence,
                fragment=pdu.fragment[: cut - DATA_OVERHEAD],
            )
        elif isinstance(pdu, AckPdu) and pdu.timestamp is not None and cut == len(octets) - 8:
            assert decode_pdu(shorter) == AckPdu(
                priority=pdu.priority, node=pdu.node, entries=pdu.entries
            )
        else:
            with pytest.raises(PduError) as refused:
                decode_pdu(shorter)
            assert refused.value.kind == "field", (cut, str(refused.value))


def test_trailing_octets_with_their_length_and_checksum_set_again() -> None:
    for pdu, text in TABLE:
        longer = _sealed(_octets(text) + b"\x01")
        if isinstance(pdu, DataPdu):
            assert decode_pdu(longer) == DataPdu(
                priority=pdu.priority,
                source=pdu.source,
                message_id=pdu.message_id,
                sequence=pdu.sequence,
                fragment=pdu.fragment + b"\x01",
            )
            continue
        with pytest.raises(PduError) as refused:
            decode_pdu(longer)
        assert refused.value.kind == "field"


@pytest.mark.parametrize("kind", [4, 5, 6, 7, 8, 0x12, 0x18, 9, 0x11, 0x3F])
def test_types_not_taken_here(kind: int) -> None:
    octets = _sealed(bytes((0, 0, 1, kind)) + bytes(20))
    with pytest.raises(PduError, match="is not taken here") as refused:
        decode_pdu(octets)
    assert refused.value.kind == "type"
    if kind in set(PduType):
        assert PduType(kind).name in str(refused.value)


def test_an_address_pdu_in_a_sequence_of_several_is_refused() -> None:
    octets = bytearray(_octets(TABLE[2][1]))
    for map_bits in (0x40, 0x80, 0xC0):
        octets[3] = PduType.ADDRESS | map_bits
        with pytest.raises(PduError, match="MAP bits") as refused:
            decode_pdu(_sealed(bytes(octets)))
        assert refused.value.kind == "type"


@pytest.mark.parametrize("delta", [-3, -1, 1, 2, 0x100])
def test_length_of_pdu_other_than_the_datagram(delta: int) -> None:
    octets = bytearray(_octets(TABLE[0][1]))
    struct.pack_into("!H", octets, 0, (len(octets) + delta) & 0xFFFF)
    with pytest.raises(PduError, match="Length_of_PDU") as refused:
        decode_pdu(bytes(octets))
    assert refused.value.kind == "length"


def test_a_bad_checksum_names_both_values() -> None:
    octets = bytearray(_octets(TABLE[0][1]))
    octets[6:8] = b"\x12\x34"
    with pytest.raises(PduError, match=r"checksum 0x1234, not 0x4e5b") as refused:
        decode_pdu(bytes(octets))
    assert refused.value.kind == "checksum"


# Ack_PDU bodies after the header (Source_ID_of_Ack_Sender, Count_of_Ack_Info_Entries, ...),
# each sealed into a PDU, and what the refusal says.
BAD_ACKS = [
    ("0a000002 0001 0008 0a000001 00000007", "an Ack_Info_Entry of 8 octets"),
    ("0a000002 0001 000b 0a000001 00000007 00", "an Ack_Info_Entry of 11 octets"),
    ("0a000002 0001 000e 0a000001 00000007 0002", "an Ack_Info_Entry of 14 octets"),
    ("0a000002 0002 000a 0a000001 00000007", "cut short"),
    ("0a000002 0001 000a 0a000001 00000007 0000", "2 octets after the Ack_Info_Entries"),
    ("0a000002 0001 000c 0a000001 00000007 0000", "a missing sequence number 0 outside a range"),
    ("0a000002 0001 0010 0a000001 00000007 0005 0000 0005", "a missing range 5-5"),
    ("0a000002 0001 0010 0a000001 00000007 0009 0000 0003", "a missing range 9-3"),
    ("0a000002 0001 000e 0a000001 00000007 0004 0000", "a missing sequence number 0 outside"),
    ("0a000002", "cut short"),
]


@pytest.mark.parametrize(("body", "why"), BAD_ACKS)
def test_bad_ack_pdus(body: str, why: str) -> None:
    octets = _sealed(_octets("0000 00 01 0000 0000") + _octets(body))
    with pytest.raises(PduError, match=why) as refused:
        decode_pdu(octets)
    assert refused.value.kind == "field"


BAD_OTHERS = [
    ("0000 00 00 0000 0000 0a000001 00000001", "numbered 0"),
    ("0000 00 00 0001 0000 0a000001 000000", "cut short"),
    ("0000 00 03 0000 0000 0a000001 00000001 00", "a Discard_Message_PDU of 17 octets"),
    ("0000 00 03 0000 0000 0a000001 000000", "cut short"),
    ("0000 00 02 0001 0000 0a000001 00000007 65000000 0001 0000 0a000002", "cut short"),
    (
        "0000 00 02 0001 0000 0a000001 00000007 65000000 0001 0003 0a000002 00000001 aabb",
        "cut short",
    ),
    ("0000 00 02 0001 0000 0a000001 00000007 65000000 0000 0000 00", "1 octets after"),
]


@pytest.mark.parametrize(("text", "why"), BAD_OTHERS)
def test_bad_data_discard_and_address_pdus(text: str, why: str) -> None:
    with pytest.raises(PduError, match=why) as refused:
        decode_pdu(_sealed(_octets(text)))
    assert refused.value.kind == "field"


@given(st.binary(max_size=80))
def test_any_datagram_gives_a_pdu_or_a_pdu_error(datagram: bytes) -> None:
    try:
        decode_pdu(datagram)
    except PduError as error:
        assert error.kind in {"short", "length", "checksum", "type", "field"}


@given(st.binary(min_size=HEADER_SIZE, max_size=120), U8)
def test_sealed_junk_gives_a_pdu_or_a_pdu_error(tail: bytes, kind: int) -> None:
    # Junk with a good length and checksum reaches the readers of each type.
    octets = _sealed(tail[:3] + bytes((kind,)) + tail[4:])
    try:
        pdu = decode_pdu(octets)
    except PduError as error:
        assert error.kind in {"type", "field"}
    else:
        assert decode_pdu(encode_pdu(pdu)) == pdu
