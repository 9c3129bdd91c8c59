"""TPKT framing (RFC 1006 clause 6): header bytes, the reader fed whole, one byte at a time and
with trailing bytes, bad headers, and the TPKTs of a real product's captures."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p1.errors import EncodeError
from p1.osi import RemoteProtocolError
from p1.osi.tpkt import FramingError, TpktReader, encode_tpkt, tpkt_header
from tests.profiles import examples
from tests.support import golden

DT_EOT = bytes.fromhex("02f080")

ENCODED = [
    (DT_EOT, "0300000702f080"),
    (DT_EOT + b"hello", "0300000c02f08068656c6c6f"),
    (bytes.fromhex("06d017c4034c00"), "0300000b06d017c4034c00"),
    (b"\x02\xf0\x80" + bytes(65528), "03 00 ff ff 02 f0 80" + "00" * 65528),
]


@pytest.mark.parametrize(("tpdu", "expected"), ENCODED)
def test_encode_tpkt(tpdu: bytes, expected: str) -> None:
    assert encode_tpkt(tpdu) == bytes.fromhex(expected)
    assert encode_tpkt(memoryview(tpdu)) == bytes.fromhex(expected)
    assert tpkt_header(len(tpdu)) == bytes.fromhex(expected)[:4]


@pytest.mark.parametrize("size", [0, 1, 2, 65532, 70000])
def test_encode_tpkt_refuses_what_does_not_fit(size: int) -> None:
    with pytest.raises(EncodeError, match="does not fit a TPKT"):
        encode_tpkt(bytes(size))


def _stream(tpdus: list[bytes]) -> bytes:
    return b"".join(encode_tpkt(t) for t in tpdus)


TPDUS = [DT_EOT, DT_EOT + b"x" * 300, bytes.fromhex("06d017c4034c00"), DT_EOT + bytes(2045)]


def test_feed_whole_buffer() -> None:
    assert TpktReader().feed(_stream(TPDUS)) == TPDUS


def test_feed_one_byte_at_a_time() -> None:
    reader = TpktReader()
    out: list[bytes] = []
    stream = _stream(TPDUS)
    for index in range(len(stream)):
        got = reader.feed(stream[index : index + 1])
        # A TPDU comes out exactly when its last octet arrives.
        assert len(got) <= 1
        out += got
    assert out == TPDUS


def test_feed_with_trailing_bytes_keeps_them_for_the_next_feed() -> None:
    reader = TpktReader()
    stream = _stream(TPDUS)
    assert reader.feed(stream + stream[:5]) == TPDUS
    assert reader.feed(stream[5:6]) == []  # the first TPKT is 7 octets long
    assert reader.feed(stream[6:]) == TPDUS


def test_feed_empty_gives_nothing() -> None:
    reader = TpktReader()
    assert reader.feed(b"") == []
    assert reader.feed(b"\x03\x00") == []
    assert reader.feed(b"") == []
    assert reader.feed(b"\x00\x07\x02\xf0\x80") == [DT_EOT]


@settings(max_examples=examples(2))
@given(
    st.lists(st.binary(min_size=3, max_size=3000), min_size=1, max_size=12),
    st.lists(st.integers(min_value=1, max_value=5000), max_size=30),
)
def test_any_split_gives_the_same_tpdus(tpdus: list[bytes], cuts: list[int]) -> None:
    stream = _stream(tpdus)
    reader = TpktReader()
    out: list[bytes] = []
    offset = 0
    for cut in [*cuts, len(stream)]:
        out += reader.feed(stream[offset : offset + cut])
        offset += cut
    out += reader.feed(stream[offset:])
    assert out == tpdus


def test_buffer_stays_bounded_over_a_long_stream() -> None:
    # 4 MB of 2 KB TPKTs delivered in 1000-octet reads: only the incomplete tail is kept.
    stream = _stream([DT_EOT + bytes(2045)] * 2048)
    reader = TpktReader()
    count = 0
    largest = 0
    for offset in range(0, len(stream), 1000):
        count += len(reader.feed(stream[offset : offset + 1000]))
        largest = max(largest, len(reader._buffer))
    assert count == 2048
    assert largest < 64 * 1024 + 4096


BAD_HEADERS = [
    ("0400000702f080", "TPKT version 4, expected 3"),
    ("0301000702f080", "TPKT reserved octet 0x01, expected 0"),
    ("0300000602f0", "TPKT length 6 outside 7 ... 65535"),
    ("03000000", "TPKT length 0 outside 7 ... 65535"),
    ("474554202f20485454502f312e310d0a", "TPKT version 71, expected 3"),  # "GET / HTTP/1.1"
]


@pytest.mark.parametrize(("data", "why"), BAD_HEADERS)
def test_bad_header_raises_framing_error(data: str, why: str) -> None:
    reader = TpktReader()
    good = _stream(TPDUS)
    with pytest.raises(FramingError) as raised:
        reader.feed(good + bytes.fromhex(data))
    error = raised.value
    assert isinstance(error, RemoteProtocolError)
    assert error.layer == "tpkt"
    assert error.why == why
    assert error.tpdus == TPDUS  # what came before the bad header is not lost
    assert error.header == bytes.fromhex(data)[:4]
    # The stream cannot be followed any further: every later feed raises, with nothing new.
    with pytest.raises(FramingError) as again:
        reader.feed(good)
    assert again.value.tpdus == []


def test_bad_header_after_buffered_bytes() -> None:
    reader = TpktReader()
    assert reader.feed(b"\x03\x00\x00\x0a\x02\xf0") == []
    with pytest.raises(FramingError, match="version 5") as raised:
        reader.feed(b"\x80\x41\x42\x43" + b"\x05\x00\x00\x07")
    assert raised.value.tpdus == [b"\x02\xf0\x80ABC"]


def test_max_size() -> None:
    reader = TpktReader(max_size=1000)
    assert reader.feed(encode_tpkt(DT_EOT + bytes(993))) == [DT_EOT + bytes(993)]
    with pytest.raises(FramingError, match=re.escape("TPKT length 1001 outside 7 ... 1000")):
        reader.feed(encode_tpkt(DT_EOT + bytes(994)))


@pytest.mark.parametrize("size", [6, 65536])
def test_max_size_must_be_a_tpkt_size(size: int) -> None:
    with pytest.raises(ValueError, match="max_size"):
        TpktReader(max_size=size)


@pytest.mark.parametrize("capture", golden.CAPTURES)
def test_golden_streams_cut_into_the_captured_tpdus(capture: str) -> None:
    records = golden.load_tpkts(capture)
    for port in {r["src_port"] for r in records}:
        mine = [r for r in records if r["src_port"] == port]
        sent = [bytes.fromhex(r["hex"]) for r in mine]
        assert [len(t) for t in sent] == [r["tpkt_len"] for r in mine]
        stream = b"".join(sent)
        expected = [t[4:] for t in sent]
        assert TpktReader().feed(stream) == expected
        reader = TpktReader()
        assert [t for i in range(len(stream)) for t in reader.feed(stream[i : i + 1])] == expected
