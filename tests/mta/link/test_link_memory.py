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
from dataclasses import dataclass

import pytest

from benchmarks import samples
from mta import link as links
from p1.association.connection import BindRequested, TransferTooLong
from p1.association.mtabind import MTABindArgument, MTABindResult
from tests.p1.association.pair import open_pair

SIZE = 8 * 1024 * 1024
ARGUMENT = MTABindArgument(initiator_name="mta-a", password="a-pw")
RESULT = MTABindResult(responder_name="mta-b", password="b-pw")


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


@dataclass
class Forgetful:
    """Accepts every bind; counts the transfers it is given and keeps none of them."""

    stored: int = 0

    async def on_bind(self, event: BindRequested) -> MTABindResult:
        return RESULT

    async def on_transfer(self, apdu: bytes) -> None:
        self.stored += 1

    async def on_transfer_too_long(self, event: TransferTooLong) -> None:
        raise links.TransferRefusedError("too long")


async def test_a_responder_keeps_nothing_of_a_stored_transfer_while_it_waits() -> None:
    store = Forgetful()
    server = await asyncio.start_server(lambda r, w: links.serve_link(r, w, store), "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        link, _ = await links.open_link("127.0.0.1", port, ARGUMENT)
        apdu = samples.message_bytes(SIZE)
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            await link.transfer(apdu, timeout=60)
            del apdu
            for _ in range(3):  # (the responder reads again before the confirmation is seen)
                await asyncio.sleep(0)
            after, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert store.stored == 1
        # Neither end holds the 8 MB APDU, nor the TSDU it came in, once it was stored.
        assert after - before < SIZE // 4
        await link.release(timeout=10)
