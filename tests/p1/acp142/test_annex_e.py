"""STANAG 4406 Annex E: the MTS-APDU in a CDT CompressedData, written and read; the
forms a peer may write, and each refusal, the inflation bound among them."""

from __future__ import annotations

import random
import re
import tracemalloc
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p1 import ber
from p1.acp142.annex_e import P1_CONTENT, ZLIB_OID, unwrap_apdu, wrap_apdu
from p1.errors import DecodeError
from tests.p1 import ber_forms
from tests.p1.acp142.samples import APDU

MB = 1024 * 1024


def _length(n: int) -> str:
    return f"{n:02x}" if n < 0x80 else f"81{n:02x}" if n < 0x100 else f"82{n:04x}"


def _hand_written(apdu: bytes, level: int = 9) -> bytes:
    """CompressedData as Annex E lays it out, written octet by octet."""
    stream = zlib.compress(apdu, level)
    octets = "04" + _length(len(stream)) + stream.hex()
    content = "a0" + _length(len(octets) // 2) + octets  # compressedContent [0] EXPLICIT
    info = "800102" + content  # contentType-ShortForm [0] IMPLICIT INTEGER p1 (2)
    info = "30" + _length(len(info) // 2) + info
    body = "800100" + info  # algorithmID-ShortForm [0] IMPLICIT INTEGER zlibCompress (0)
    return bytes.fromhex("30" + _length(len(body) // 2) + body)


def test_the_choices_tagged_explicitly_are_read_too() -> None:
    # As some write Annex E's CHOICE alternatives (RFC 8494's sample among them):
    # [0] EXPLICIT INTEGER rather than [0] IMPLICIT INTEGER.
    stream = zlib.compress(APDU)
    octets = "04" + _length(len(stream)) + stream.hex()
    content = "a0" + _length(len(octets) // 2) + octets
    info = "a003020102" + content
    info = "30" + _length(len(info) // 2) + info
    body = "a003020100" + info
    assert unwrap_apdu(bytes.fromhex("30" + _length(len(body) // 2) + body), MB) == APDU


@pytest.mark.parametrize("apdu", [b"", b"\x30\x00", APDU, APDU * 40])
def test_wrap_writes_the_short_forms(apdu: bytes) -> None:
    assert wrap_apdu(apdu) == _hand_written(apdu)
    assert unwrap_apdu(_hand_written(apdu), len(apdu)) == apdu


@given(st.binary(max_size=5000), st.integers(0, 9))
def test_round_trip(apdu: bytes, level: int) -> None:
    assert unwrap_apdu(wrap_apdu(apdu, level), len(apdu)) == apdu


def _compressed_data(algorithm: bytes, content_type: bytes, content: bytes) -> bytes:
    info = ber.constructed(ber.SEQUENCE, (content_type, content))
    return ber.constructed(ber.SEQUENCE, (algorithm, info))


SHORT_ZLIB = ber.tlv(ber.context(0), ber.int_contents(0))
SHORT_P1 = ber.tlv(ber.context(0), ber.int_contents(P1_CONTENT))


def _content(stream: bytes) -> bytes:
    return ber.constructed(ber.context(0), (ber.tlv(ber.OCTET_STRING, stream),))


def test_the_algorithm_oid_is_read() -> None:
    algorithm = ber.tlv(ber.context(1), ber.oid_contents(ZLIB_OID, "test"))
    assert algorithm.hex() == "810b2a864886f70d0109100308"
    data = _compressed_data(algorithm, SHORT_P1, _content(zlib.compress(APDU)))
    assert unwrap_apdu(data, len(APDU)) == APDU


@pytest.mark.parametrize(
    ("algorithm", "why"),
    [
        (ber.tlv(ber.context(0), ber.int_contents(1)), r"algorithm 1, not zlibCompress \(0\)"),
        (
            ber.tlv(ber.context(1), ber.oid_contents("1.2.840.113549.1.9.16.3.9", "test")),
            r"algorithm 1\.2\.840\.113549\.1\.9\.16\.3\.9, not zlibCompress",
        ),
        (ber.tlv(ber.context(2), b"\x00"), "no CompressionAlgorithmIdentifier"),
        (ber.tlv(ber.INTEGER, b"\x00"), "no CompressionAlgorithmIdentifier"),
    ],
)
def test_other_algorithms_are_refused(algorithm: bytes, why: str) -> None:
    data = _compressed_data(algorithm, SHORT_P1, _content(zlib.compress(APDU)))
    with pytest.raises(DecodeError, match=why) as refused:
        unwrap_apdu(data, len(APDU))
    assert "compressionAlgorithm" in refused.value.where


@pytest.mark.parametrize(
    ("content_type", "why"),
    [
        (ber.tlv(ber.context(0), ber.int_contents(0)), r"content type 0, not p1 \(2\)"),
        (ber.tlv(ber.context(0), ber.int_contents(3)), r"content type 3, not p1 \(2\)"),
        (ber.tlv(ber.context(0), ber.int_contents(25)), r"content type 25, not p1 \(2\)"),
        (ber.tlv(ber.INTEGER, ber.int_contents(2)), r"the content must be p1 \(2\)"),
    ],
)
def test_other_content_types_are_refused(content_type: bytes, why: str) -> None:
    data = _compressed_data(SHORT_ZLIB, content_type, _content(zlib.compress(APDU)))
    with pytest.raises(DecodeError, match=why) as refused:
        unwrap_apdu(data, len(APDU))
    assert refused.value.where.endswith("contentType")


@pytest.mark.parametrize("oid", ["1.3.26.0.4406.0.4.1", "2.6.1.4.0"])
def test_a_content_type_oid_is_read_and_refused_by_name(oid: str) -> None:
    content_type = ber.tlv(ber.context(1), ber.oid_contents(oid, "test"))
    data = _compressed_data(SHORT_ZLIB, content_type, _content(zlib.compress(APDU)))
    with pytest.raises(DecodeError, match=rf"content type {re.escape(oid)}, not p1 \(2\)"):
        unwrap_apdu(data, len(APDU))


def test_a_content_type_oid_that_is_no_oid() -> None:
    content_type = ber.tlv(ber.context(1), b"\x80")
    data = _compressed_data(SHORT_ZLIB, content_type, _content(zlib.compress(APDU)))
    with pytest.raises(DecodeError) as refused:
        unwrap_apdu(data, len(APDU))
    assert refused.value.where.endswith("contentType")


def test_the_bytes_must_be_a_compressed_data() -> None:
    good = wrap_apdu(APDU)
    cases = [
        (b"", "truncated"),
        (ber.tlv(ber.OCTET_STRING, b"x"), r"expected \[UNIVERSAL 16\], found \[UNIVERSAL 4\]"),
        (good + b"\x00", "1 trailing byte"),
        (ber.constructed(ber.SEQUENCE, (SHORT_ZLIB,)), "1 components, not 2"),
        (
            ber.constructed(ber.SEQUENCE, (SHORT_ZLIB, ber.constructed(ber.SEQUENCE, (SHORT_P1,)))),
            "1 components, not 2",
        ),
        (
            _compressed_data(SHORT_ZLIB, SHORT_P1, ber.tlv(ber.context(0), b"\x04\x00")),
            "must be \\[0\\] EXPLICIT",
        ),
        (
            _compressed_data(
                SHORT_ZLIB,
                SHORT_P1,
                ber.constructed(ber.context(0), (ber.tlv(ber.INTEGER, b"\x01"),)),
            ),
            r"expected \[UNIVERSAL 4\], found \[UNIVERSAL 2\]",
        ),
    ]
    for data, why in cases:
        with pytest.raises(DecodeError, match=why):
            unwrap_apdu(data, MB)


def test_a_stream_that_is_not_zlib_is_refused() -> None:
    data = _compressed_data(SHORT_ZLIB, SHORT_P1, _content(b"not zlib at all"))
    with pytest.raises(DecodeError, match="zlib: "):
        unwrap_apdu(data, MB)


def test_a_stream_cut_short_is_refused() -> None:
    stream = zlib.compress(APDU)
    for cut in (2, len(stream) // 2, len(stream) - 1):
        data = _compressed_data(SHORT_ZLIB, SHORT_P1, _content(stream[:cut]))
        with pytest.raises(DecodeError, match="cut short or followed by data"):
            unwrap_apdu(data, MB)


@pytest.mark.parametrize("tail", [b"\x00", b"junk", zlib.compress(b"a second stream")])
def test_data_after_the_stream_is_refused(tail: bytes) -> None:
    data = _compressed_data(SHORT_ZLIB, SHORT_P1, _content(zlib.compress(APDU) + tail))
    with pytest.raises(DecodeError, match="cut short or followed by data"):
        unwrap_apdu(data, MB)


def test_the_limit_is_the_largest_apdu_taken() -> None:
    data = wrap_apdu(APDU)
    assert unwrap_apdu(data, len(APDU)) == APDU
    with pytest.raises(DecodeError, match=f"inflates to more than {len(APDU) - 1} octets"):
        unwrap_apdu(data, len(APDU) - 1)
    with pytest.raises(DecodeError, match="more than 0 octets"):
        unwrap_apdu(data, 0)
    assert unwrap_apdu(wrap_apdu(b""), 0) == b""


def _zero_bomb(size: int) -> bytes:
    """A zlib stream of ``size`` zero octets, made a megabyte at a time."""
    squeeze = zlib.compressobj(9)
    chunk = bytes(MB)
    parts = [squeeze.compress(chunk) for _ in range(size // MB)]
    return b"".join(parts) + squeeze.flush()


def test_a_bomb_stops_at_the_limit() -> None:
    stream = _zero_bomb(100 * MB)
    assert len(stream) < MB // 4
    data = _compressed_data(SHORT_ZLIB, SHORT_P1, _content(stream))
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError, match=f"inflates to more than {MB} octets"):
            unwrap_apdu(data, MB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Inflating it all would take 100 MB; stopping at the limit takes about one.
    assert peak < 4 * MB


def _reformed(data: bytes, seed: int) -> bytes:
    rules = ber_forms.Rules(string=lambda path, octet: octet == 0x04)
    return ber_forms.reform(data, random.Random(seed), rules)


@given(st.binary(max_size=3000), st.integers(0, 2**32))
def test_every_legal_ber_form_is_read(apdu: bytes, seed: int) -> None:
    # Long and indefinite lengths, the zlib stream in OCTET STRING segments.
    assert unwrap_apdu(_reformed(wrap_apdu(apdu), seed), len(apdu)) == apdu


def test_long_lengths_with_leading_zeros() -> None:
    stream = zlib.compress(APDU)
    octets = b"\x04\x84" + len(stream).to_bytes(4, "big") + stream
    content = b"\xa0\x83" + len(octets).to_bytes(3, "big") + octets
    info = b"\x80\x81\x01\x02" + content
    info = b"\x30\x82" + len(info).to_bytes(2, "big") + info
    body = b"\x80\x82\x00\x01\x00" + info
    data = b"\x30\x80" + body + b"\x00\x00"
    assert unwrap_apdu(data, len(APDU)) == APDU
