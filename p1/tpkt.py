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

# A buffer whose consumed prefix grows past this is compacted before it is appended to.
_COMPACT_AT = 64 * 1024


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

    Bytes are parsed straight from what :meth:`feed` is given when nothing is pending, so a
    large read is copied once (into the TPDUs); only an incomplete TPKT at the end is kept.
    A bad header raises :class:`FramingError` and stays at the front of the buffer, so every
    later :meth:`feed` raises again: the stream is lost.
    """

    def __init__(self, *, max_size: int = MAX_TPKT_SIZE) -> None:
        if not MIN_TPKT_SIZE <= max_size <= MAX_TPKT_SIZE:
            raise ValueError(f"max_size must be {MIN_TPKT_SIZE} ... {MAX_TPKT_SIZE}")
        self.max_size = max_size
        self._buffer = bytearray()
        self._offset = 0  # start of the first unconsumed octet in _buffer

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return the TPDUs now complete, in order, without their headers."""
        if self._offset == len(self._buffer):
            self._buffer.clear()
            self._offset = 0
            with memoryview(data) as view:
                tpdus, used, error = self._cut(view, 0)
                if used < len(view):
                    self._buffer += view[used:]
        else:
            if self._offset > _COMPACT_AT:
                del self._buffer[: self._offset]
                self._offset = 0
            self._buffer += data
            with memoryview(self._buffer) as view:
                tpdus, self._offset, error = self._cut(view, self._offset)
        if error:
            header = bytes(self._buffer[self._offset : self._offset + HEADER_SIZE])
            raise FramingError(error, tpdus=tpdus, header=header)
        return tpdus

    def _cut(self, view: memoryview, offset: int) -> tuple[list[bytes], int, str]:
        """The complete TPDUs from ``offset``, where parsing stopped, and why if on an error."""
        tpdus: list[bytes] = []
        end = len(view)
        while end - offset >= HEADER_SIZE:
            version, reserved, size = _HEADER.unpack_from(view, offset)
            if version != VERSION or reserved != 0 or not MIN_TPKT_SIZE <= size <= self.max_size:
                return tpdus, offset, self._why(version, reserved, size)
            if end - offset < size:
                break
            tpdus.append(bytes(view[offset + HEADER_SIZE : offset + size]))
            offset += size
        return tpdus, offset, ""

    def _why(self, version: int, reserved: int, size: int) -> str:
        if version != VERSION:
            return f"TPKT version {version}, expected {VERSION}"
        if reserved != 0:
            return f"TPKT reserved octet {reserved:#04x}, expected 0"
        return f"TPKT length {size} outside {MIN_TPKT_SIZE} ... {self.max_size}"
