"""Connections from a chosen local address (mta.net.open_marked_connection's ``source``)
on real loopback sockets: the listener sees the connection come from it, still marked;
an address this host does not have, or of the wrong family, is one clear OSError."""

from __future__ import annotations

import asyncio

import pytest

from mta import net


async def _source_seen(source: str | None) -> tuple[str, int]:
    """Connect to a listener on 127.0.0.1 from ``source``: the address the listener saw
    and the client socket's mark."""
    seen: asyncio.Queue[str] = asyncio.Queue()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await seen.put(writer.get_extra_info("peername")[0])
        writer.close()
        await writer.wait_closed()

    server = await net.start_marked_server(handler, "127.0.0.1", 0, dscp=0)
    async with server:
        _reader, writer = await net.open_marked_connection(
            "127.0.0.1", net.bound_port(server), dscp=40, timeout=5, source=source
        )
        mark = net.socket_dscp(writer.get_extra_info("socket"))
        writer.close()
        await writer.wait_closed()
        return await seen.get(), mark


async def test_the_listener_sees_the_source_address() -> None:
    assert await _source_seen("127.0.0.42") == ("127.0.0.42", 40)


async def test_without_a_source_the_system_chooses() -> None:
    assert (await _source_seen(None))[0] == "127.0.0.1"


async def test_an_address_this_host_does_not_have_is_named() -> None:
    with pytest.raises(OSError, match=r"source_address 192\.0\.2\.1: cannot assign requested"):
        await _source_seen("192.0.2.1")


async def test_a_source_of_the_other_family_is_named() -> None:
    with pytest.raises(OSError, match=r"source_address ::1 is not of the peer's address family"):
        await _source_seen("::1")
