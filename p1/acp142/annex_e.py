"""STANAG 4406 Annex E: the MTS-APDU as one ACP 142 message, in a CDT CompressedData.

What one P_MUL message carries between two MTAs is one MTS-APDU (a message, a report or
a probe, X.411 12.2), BER as P1 would transfer it, compressed with zlib and wrapped in
the Compressed Data Type of STANAG 4406 Annex E::

    CompressedData ::= SEQUENCE {
        compressionAlgorithm   CompressionAlgorithmIdentifier,
        compressedContentInfo  CompressedContentInfo }
    CompressionAlgorithmIdentifier ::= CHOICE {
        algorithmID-ShortForm  [0] IMPLICIT INTEGER { zlibCompress (0) },
        algorithmID-OID        [1] IMPLICIT OBJECT IDENTIFIER }
    CompressedContentInfo ::= SEQUENCE {
        contentType CHOICE {
            contentType-ShortForm [0] IMPLICIT INTEGER { unidentified (0), external (1),
                                      p1 (2), p3 (3), p7 (4), mtf (25) },
            contentType-OID       [1] IMPLICIT OBJECT IDENTIFIER },
        compressedContent [0] EXPLICIT OCTET STRING }

We write the short forms (zlibCompress, p1) and read either form of each; a content
type other than the short form p1 (an OID is named in the refusal), or an algorithm
other than zlib, is refused with the reason.  The
inflated size is bounded by the caller's limit, so a small datagram cannot inflate
without end.

Public API::

    wrap_apdu(apdu, level=9) -> bytes
    unwrap_apdu(data, limit) -> bytes          raises p1.errors.DecodeError
    ZLIB_OID, P1_CONTENT
"""

from __future__ import annotations

import zlib

from p1 import ber
from p1.errors import DecodeError

__all__ = ["P1_CONTENT", "ZLIB_OID", "unwrap_apdu", "wrap_apdu"]

ZLIB_OID = "1.2.840.113549.1.9.16.3.8"
"""id-alg-zlibCompress (RFC 3274), the algorithm's long form."""
P1_CONTENT = 2
"""ContentType-ShortForm p1."""
_ZLIB_SHORT = 0
_WHAT = "CompressedData"


def wrap_apdu(apdu: bytes, level: int = 9) -> bytes:
    """``apdu`` compressed and wrapped as Annex E says."""
    algorithm = ber.tlv(ber.context(0), ber.int_contents(_ZLIB_SHORT))
    content = ber.tlv(ber.OCTET_STRING, zlib.compress(apdu, level))
    info = ber.constructed(
        ber.SEQUENCE,
        (
            ber.tlv(ber.context(0), ber.int_contents(P1_CONTENT)),
            ber.constructed(ber.context(0), (content,)),
        ),
    )
    return ber.constructed(ber.SEQUENCE, (algorithm, info))


def unwrap_apdu(data: bytes, limit: int) -> bytes:
    """The MTS-APDU inside ``data``, at most ``limit`` octets once inflated."""
    top = ber.expect(ber.read_single(data, _WHAT), ber.SEQUENCE, _WHAT)
    parts = ber.children(top, _WHAT)
    if len(parts) != 2:
        raise DecodeError(f"{len(parts)} components, not 2", where=_WHAT)
    _check_algorithm(parts[0])
    info = ber.expect(parts[1], ber.SEQUENCE, f"{_WHAT}.compressedContentInfo")
    content_type, content = _info_parts(info)
    _check_content_type(content_type)
    where = f"{_WHAT}.compressedContentInfo.compressedContent"
    inner = ber.expect(ber.only_child(content, where), ber.OCTET_STRING, where)
    return _inflate(ber.read_octets(inner, where), limit)


def _info_parts(info: ber.Tlv) -> tuple[ber.Tlv, ber.Tlv]:
    where = f"{_WHAT}.compressedContentInfo"
    parts = ber.children(info, where)
    if len(parts) != 2:
        raise DecodeError(f"{len(parts)} components, not 2", where=where)
    content = parts[1]
    if content.tag != ber.context(0) or not content.constructed:
        raise DecodeError("compressedContent must be [0] EXPLICIT", where=where)
    return parts[0], content


def _untagged(tlv: ber.Tlv, where: str) -> ber.Tlv:
    """A CHOICE alternative tagged implicitly (as written here) or explicitly (as some
    write it): the tag with the value's own contents."""
    if not tlv.constructed:
        return tlv
    inner = ber.only_child(tlv, where)
    return tlv._replace(
        body=inner.body, end=inner.end, stop=inner.stop, constructed=inner.constructed
    )


def _check_algorithm(tlv: ber.Tlv) -> None:
    where = f"{_WHAT}.compressionAlgorithm"
    tlv = _untagged(tlv, where)
    if tlv.tag == ber.context(0) and not tlv.constructed:
        number = ber.read_int(tlv, where)
        if number != _ZLIB_SHORT:
            raise DecodeError(f"algorithm {number}, not zlibCompress (0)", where=where)
        return
    if tlv.tag == ber.context(1) and not tlv.constructed:
        found = ber.oid_text(bytes(tlv.contents()), where)
        if found != ZLIB_OID:
            raise DecodeError(f"algorithm {found}, not zlibCompress", where=where)
        return
    raise DecodeError(f"{ber.tag_name(tlv.tag)} is no CompressionAlgorithmIdentifier", where=where)


def _check_content_type(tlv: ber.Tlv) -> None:
    where = f"{_WHAT}.compressedContentInfo.contentType"
    tlv = _untagged(tlv, where)
    if tlv.tag == ber.context(0) and not tlv.constructed:
        number = ber.read_int(tlv, where)
        if number != P1_CONTENT:
            raise DecodeError(f"content type {number}, not p1 (2)", where=where)
        return
    if tlv.tag == ber.context(1) and not tlv.constructed:
        found = ber.oid_text(bytes(tlv.contents()), where)
        raise DecodeError(f"content type {found}, not p1 (2)", where=where)
    raise DecodeError(f"{ber.tag_name(tlv.tag)}: the content must be p1 (2)", where=where)


def _inflate(compressed: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj()
    try:
        apdu = inflater.decompress(compressed, limit + 1)
    except zlib.error as error:
        raise DecodeError(f"zlib: {error}", where=_WHAT) from None
    if len(apdu) > limit:
        raise DecodeError(f"inflates to more than {limit} octets", where=_WHAT)
    if not inflater.eof or inflater.unused_data:
        raise DecodeError("the zlib stream is cut short or followed by data", where=_WHAT)
    return apdu
