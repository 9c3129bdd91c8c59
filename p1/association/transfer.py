"""The MTS-APDU as RT-TRANSFER carries it: an EXTERNAL (X.419 clause 7, X.228, X.690 8.18).

The octets of an RT-TRANSFER are, concatenated, the BER of::

    EXTERNAL ::= [UNIVERSAL 8] IMPLICIT SEQUENCE {
        direct-reference      OBJECT IDENTIFIER OPTIONAL,
        indirect-reference    INTEGER OPTIONAL,        -- 5: the id-as-mtse context
        data-value-descriptor ObjectDescriptor OPTIONAL,
        encoding CHOICE {
            single-ASN1-type  [0] ANY,                  -- the MTS-APDU
            octet-aligned     [1] IMPLICIT OCTET STRING,
            arbitrary         [2] IMPLICIT BIT STRING } }

We send ``indirect-reference 5, single-ASN1-type``.  We accept what real stacks send:
indefinite lengths (``28 80 a0 80 ... 00 00``), no indirect-reference, a
direct-reference, and the octet-aligned form (primitive or segmented).

Public API::

    encode_transfer(apdu: bytes, indirect_reference=5) -> bytes
    decode_transfer(data) -> Transfer(apdu, indirect_reference, direct_reference)
    apdu_prefix(data) -> bytes     the MTS-APDU's first octets, from a transfer cut short
"""

from __future__ import annotations

from dataclasses import dataclass

from p1 import ber
from p1.errors import DecodeError
from p1.osi.presentation import MTSE_CONTEXT

_EXTERNAL = ber.universal(8)
_OID = ber.universal(6)
_INTEGER = ber.universal(2)
_DESCRIPTOR = ber.universal(7)
_SINGLE = ber.context(0)
_OCTET_ALIGNED = ber.context(1)
_ARBITRARY = ber.context(2)
_WHAT = "transfer EXTERNAL"


@dataclass(frozen=True, slots=True, kw_only=True)
class Transfer:
    """The MTS-APDU of one RT-TRANSFER and how it was labelled."""

    apdu: bytes
    """The MTS-APDU's BER, as received (``p1.mts.envelope.decode_mts_apdu`` reads it)."""
    indirect_reference: int | None = MTSE_CONTEXT
    direct_reference: str | None = None


def encode_transfer(apdu: bytes, indirect_reference: int | None = MTSE_CONTEXT) -> bytes:
    """``EXTERNAL { indirect-reference n, single-ASN1-type [0] apdu }`` (one copy of apdu)."""
    ber.check_single_tlv(apdu, _WHAT)
    parts = (
        []
        if indirect_reference is None
        else [ber.tlv(_INTEGER, ber.int_contents(indirect_reference))]
    )
    return ber.constructed(_EXTERNAL, [*parts, ber.tlv(_SINGLE, apdu, constructed=True)])


def decode_transfer(data: bytes | bytearray | memoryview) -> Transfer:
    """Read the EXTERNAL around an MTS-APDU; raises only :class:`DecodeError`."""
    outer = ber.expect(ber.read_single(data, _WHAT), _EXTERNAL, _WHAT)
    direct: str | None = None
    indirect: int | None = None
    items = ber.children(outer, _WHAT)
    for item in items[:-1]:
        if item.tag == _OID and direct is None and indirect is None:
            direct = ber.read_oid(item, f"{_WHAT}.direct-reference")
        elif item.tag == _INTEGER and indirect is None:
            indirect = ber.read_int(item, f"{_WHAT}.indirect-reference")
        elif item.tag != _DESCRIPTOR:
            raise DecodeError(f"unexpected {ber.tag_name(item.tag)}", where=_WHAT)
    if not items:
        raise DecodeError("no encoding", where=_WHAT)
    return Transfer(apdu=_encoding(items[-1]), indirect_reference=indirect, direct_reference=direct)


def _encoding(choice: ber.Tlv) -> bytes:
    if choice.tag == _SINGLE:
        return ber.only_child(choice, f"{_WHAT}.single-ASN1-type").raw()
    if choice.tag == _OCTET_ALIGNED:
        octets = ber.read_octets(choice, f"{_WHAT}.octet-aligned")
        ber.read_single(octets, f"{_WHAT}.octet-aligned")  # one whole BER value inside
        return octets
    if choice.tag == _ARBITRARY:
        raise DecodeError("the arbitrary (BIT STRING) encoding is not used by P1", where=_WHAT)
    raise DecodeError(f"unknown encoding {ber.tag_name(choice.tag)}", where=_WHAT)


_REFERENCES = frozenset({_OID, _INTEGER, _DESCRIPTOR})


def apdu_prefix(data: bytes | bytearray | memoryview) -> bytes:
    """The first octets of the MTS-APDU, read from the first octets of a transfer (a
    transfer too long to be taken in whole): the EXTERNAL's headers and references are
    skipped, the rest need not be there.  single-ASN1-type and a primitive octet-aligned
    encoding are read; raises only :class:`DecodeError`."""
    view = ber.as_view(data)
    end = len(view)
    key, pos, _ = ber.read_header(view, 0, end)
    if ber.tag_of(key) != _EXTERNAL or not key & ber.CONSTRUCTED:
        raise DecodeError(f"{ber.tag_name(ber.tag_of(key))} is not an EXTERNAL", where=_WHAT)
    while True:
        key, body, _ = ber.read_header(view, pos, end)
        tag = ber.tag_of(key)
        if tag in _REFERENCES:
            pos = ber.read(view, pos, end)[4]
        elif tag == _SINGLE or (tag == _OCTET_ALIGNED and not key & ber.CONSTRUCTED):
            return bytes(view[body:])
        else:
            raise DecodeError(f"{ber.tag_name(tag)} cannot be read from a part", where=_WHAT)
