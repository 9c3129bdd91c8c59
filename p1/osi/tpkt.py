"""TPKT framing of TPDUs on a TCP byte stream (RFC 1006 clause 6, "ISO transport services on top
of the TCP").

Each TPDU travels in one TPKT::

    octet 1      version   = 3
    octet 2      reserved  = 0
    octets 3-4   length    (big endian, the whole packet including these four octets)
    octets 5-n   the TPDU

The smallest TPKT holds the smallest class 0 TPDU (DT: three octets), so a length below 7 is
malformed; the largest is 65535 octets.

Public API::

    encode_tpkt(tpdu) -> bytes
    tpkt_header(tpdu_length) -> bytes
    TpktReader(*, max_size=65535).feed(data) -> list[bytes]     # complete TPDUs, header stripped
        .feed_views(data) -> list[memoryview]                   # the same, not copied
    FramingError (a RemoteProtocolError, layer "tpkt")
"""

from __future__ import annotations

import struct

from p1.errors import EncodeError
from p1.osi import RemoteProtocolError

VERSION = 3
HEADER_SIZE = 4
MIN_TPKT_SIZE = HEADER_SIZE + 3  # DT class 0: LI, code, EOT/NR
MAX_TPKT_SIZE = 0xFFFF

_HEADER = struct.Struct(">BBH")


class FramingError(RemoteProtocolError):
    """A TPKT header that is not RFC 1006's: the byte stream cannot be followed any further.

    ``tpdus`` holds the complete TPDUs that came before the bad header in the same
    :meth:`TpktReader.feed`, so that nothing the peer sent correctly is lost; ``header`` holds
    the offending header octets.
    """

    def __init__(self, why: str, *, tpdus: list[bytes], header: bytes) -> None:
        super().__init__(why, layer="tpkt")
        self.tpdus = tpdus
        self.header = header


def tpkt_header(tpdu_length: int) -> bytes:
    """The four octets that precede a TPDU of ``tpdu_length`` octets."""
    size = tpdu_length + HEADER_SIZE
    if not MIN_TPKT_SIZE <= size <= MAX_TPKT_SIZE:
        raise EncodeError(
            f"a TPDU of {tpdu_length} octets does not fit a TPKT "
            f"({MIN_TPKT_SIZE - HEADER_SIZE} ... {MAX_TPKT_SIZE - HEADER_SIZE})",
            where="TPKT",
        )
    return _HEADER.pack(VERSION, 0, size)


def encode_tpkt(tpdu: bytes | memoryview) -> bytes:
    """``03 00 LL LL`` + ``tpdu``."""
    return tpkt_header(len(tpdu)) + tpdu


class TpktReader:
    """Cuts a TCP byte stream into TPDUs.

    TPDUs are cut straight from what :meth:`feed` is given: only a TPKT that straddles two
    feeds is assembled in a buffer, which holds nothing else (so at most one TPKT).  A bad
    header raises :class:`FramingError` and stays at the front of the buffer, so every
    later :meth:`feed` raises again: the stream is lost.
    """

    def __init__(self, *, max_size: int = MAX_TPKT_SIZE) -> None:
        if not MIN_TPKT_SIZE <= max_size <= MAX_TPKT_SIZE:
            raise ValueError(f"max_size must be {MIN_TPKT_SIZE} ... {MAX_TPKT_SIZE}")
        self.max_size = max_size
        self._buffer = bytearray()  # the start of a TPKT the next feed completes

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return the TPDUs now complete, in order, without their headers."""
        return [bytes(tpdu) for tpdu in self.feed_views(data)]

    def feed_views(self, data: bytes) -> list[memoryview]:
        """:meth:`feed`, each TPDU a view (of ``data``, or of a TPKT assembled across feeds):
        a large read is not copied here at all."""
        tpdus: list[memoryview] = []
        view = memoryview(data).cast("B")
        if not view.readonly:  # views must not change under their holder: copy, once
            view = memoryview(bytes(view))
        offset = self._complete(view, tpdus) if self._buffer else 0
        end = len(view)
        error = ""
        while end - offset >= HEADER_SIZE:
            version, reserved, size = _HEADER.unpack_from(view, offset)
            if version != VERSION or reserved != 0 or not MIN_TPKT_SIZE <= size <= self.max_size:
                error = self._why(version, reserved, size)
                break
            if end - offset < size:
                break
            tpdus.append(view[offset + HEADER_SIZE : offset + size])
            offset += size
        if offset < end:
            self._buffer += view[offset:]
        if error or (len(self._buffer) >= HEADER_SIZE and self._bad_buffer()):
            self._raise(tpdus)
        return tpdus

    def _complete(self, view: memoryview, tpdus: list[memoryview]) -> int:
        """Complete the buffered TPKT from ``view``; how many octets of it were used."""
        buffer = self._buffer
        used = 0
        if len(buffer) < HEADER_SIZE:
            used = min(HEADER_SIZE - len(buffer), len(view))
            buffer += view[:used]
            if len(buffer) < HEADER_SIZE:
                return used
        if self._bad_buffer():
            return len(view)  # the stream is lost: nothing more is kept
        size: int = _HEADER.unpack_from(buffer)[2]
        more = min(size - len(buffer), len(view) - used)
        buffer += view[used : used + more]
        used += more
        if len(buffer) == size:
            tpdus.append(memoryview(bytes(buffer))[HEADER_SIZE:])
            buffer.clear()
        return used

    def _bad_buffer(self) -> bool:
        version, reserved, size = _HEADER.unpack_from(self._buffer)
        return version != VERSION or reserved != 0 or not MIN_TPKT_SIZE <= size <= self.max_size

    def _raise(self, tpdus: list[memoryview]) -> None:
        header = bytes(self._buffer[:HEADER_SIZE])
        why = self._why(*_HEADER.unpack_from(header))
        raise FramingError(why, tpdus=[bytes(tpdu) for tpdu in tpdus], header=header)

    def _why(self, version: int, reserved: int, size: int) -> str:
        if version != VERSION:
            return f"TPKT version {version}, expected {VERSION}"
        if reserved != 0:
            return f"TPKT reserved octet {reserved:#04x}, expected 0"
        return f"TPKT length {size} outside {MIN_TPKT_SIZE} ... {self.max_size}"
