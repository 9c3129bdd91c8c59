"""The EXTERNAL around an MTS-APDU in RT-TRANSFER, in the forms real stacks send."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import samples
from p1 import asn1, ber
from p1.association.transfer import Transfer, decode_transfer, encode_transfer
from p1.errors import DecodeError
from p1.mts.envelope import Message, decode_mts_apdu
from p1.osi.presentation import MTSE_CONTEXT
from tests.profiles import examples

APDU = samples.message_bytes(200)


def _indefinite(tag: str, *parts: bytes) -> bytes:
    return bytes.fromhex(tag + "80") + b"".join(parts) + b"\0\0"


def test_we_send_indirect_reference_5_and_single_asn1_type() -> None:
    wire = encode_transfer(APDU)
    assert wire.startswith(bytes.fromhex("28"))
    assert decode_transfer(wire) == Transfer(apdu=APDU, indirect_reference=MTSE_CONTEXT)
    # The project's ACSE module (EXTERNAL written out) reads it the same way.
    value = asn1.decode("ACSE-1", "EXTERNAL-type", wire)
    assert value["indirect-reference"] == 5
    assert value["encoding"] == ("single-ASN1-type", APDU)


def test_indefinite_lengths_as_real_stacks_send_them() -> None:
    # 28 80 02 01 05 a0 80 <apdu> 00 00 00 00
    wire = _indefinite("28", bytes.fromhex("020105"), _indefinite("a0", APDU))
    got = decode_transfer(wire)
    assert got.apdu == APDU and got.indirect_reference == 5
    assert isinstance(decode_mts_apdu(got.apdu), Message)


def test_without_indirect_reference_and_with_direct_reference() -> None:
    bare = encode_transfer(APDU, indirect_reference=None)
    assert decode_transfer(bare) == Transfer(apdu=APDU, indirect_reference=None)
    oid = bytes.fromhex("060456000207")  # 2.6.0.2.7, id-as-mtse
    inner = ber.read_single(bare, "t").contents().tobytes()
    direct = ber.tlv(ber.universal(8), oid + inner, constructed=True)
    got = decode_transfer(direct)
    assert got.direct_reference == "2.6.0.2.7" and got.apdu == APDU


def test_octet_aligned_primitive_and_segmented() -> None:
    primitive = ber.constructed(ber.universal(8), [ber.tlv(ber.context(1), APDU)])
    assert decode_transfer(primitive).apdu == APDU
    half = len(APDU) // 2
    segments = [ber.tlv(ber.universal(4), APDU[:half]), ber.tlv(ber.universal(4), APDU[half:])]
    segmented = ber.constructed(ber.universal(8), [ber.constructed(ber.context(1), segments)])
    assert decode_transfer(segmented).apdu == APDU


@pytest.mark.parametrize(
    ("wire", "why"),
    [
        ("3000", "expected"),
        ("2800", "no encoding"),
        ("2803020105", "unknown encoding"),
        ("2805a303020105", "unknown encoding"),
        ("28048202ffff", "arbitrary"),
        ("2806a0043002", "truncated"),
    ],
)
def test_malformed_externals(wire: str, why: str) -> None:
    with pytest.raises(DecodeError, match=why):
        decode_transfer(bytes.fromhex(wire))


@settings(max_examples=examples(3))
@given(st.data())
def test_mutated_transfers_give_a_value_or_decode_error(data: st.DataObject) -> None:
    wire = bytearray(encode_transfer(APDU))
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(wire) - 1))
        wire[index] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(wire)))
    try:
        got = decode_transfer(bytes(wire[:cut]) if data.draw(st.booleans()) else bytes(wire))
        decode_mts_apdu(got.apdu)
    except DecodeError:
        pass
