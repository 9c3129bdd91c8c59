"""What a link holds of a large transfer, over real sockets: a sender writes it in
pieces (no joined copy of its TPKTs, no copy of them in the transport's buffer), and a
responder does not keep one transfer while it reads the next.  Bounds with margins,
measured with tracemalloc."""

from __future__ import annotations

import asyncio
import socket
import threading
import tracemalloc
from collections.abc import Iterator

import pytest

from benchmarks import samples
from mta import link as links
from tests.p1.association.pair import open_pair

SIZE = 8 * 1024 * 1024


@pytest.fixture
def sink() -> Iterator[socket.socket]:
    """One end of a socket pair, whose other end a thread reads and drops into a buffer
    of its own (it allocates nothing while it reads)."""
    ours, theirs = socket.socketpair()

    def drain() -> None:
        buffer = bytearray(1 << 16)
        with theirs:
            while theirs.recv_into(buffer):
                pass

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    yield ours
    ours.close()
    reader.join(timeout=10)


async def test_a_large_transfer_is_written_in_pieces(sink: socket.socket) -> None:
    pair = open_pair()
    reader, writer = await asyncio.open_connection(sock=sink)
    link = links.Link(pair.initiator, reader, writer, peer="sink")
    apdu = samples.message_bytes(SIZE)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        pair.initiator.send_transfer(apdu)
        await link.flush()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert pair.initiator.data_to_send() == b""  # all of it written
    # The TPKTs' views of the APDU and a piece or two, not the TPKTs joined (8 MB) nor
    # what the socket did not take copied into the transport's buffer.
    assert peak - before < SIZE // 4
    writer.close()
