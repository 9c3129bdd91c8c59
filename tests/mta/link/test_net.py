"""Marked sockets on real loopback connections: the mark is on the client socket before it
connects and on the accepted socket through inheritance from the listener."""

from __future__ import annotations

import asyncio
import socket

import pytest

from mta import net


async def _echo_pair(host: str, dscp_server: int, dscp_client: int) -> tuple[int, int, int]:
    accepted: asyncio.Queue[int] = asyncio.Queue()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        await accepted.put(net.socket_dscp(sock))
        writer.write(await reader.readexactly(4))
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await net.start_marked_server(handler, host, 0, dscp=dscp_server)
    async with server:
        reader, writer = await net.open_marked_connection(
            host, net.bound_port(server), dscp=dscp_client, timeout=5
        )
        writer.write(b"ping")
        assert await reader.readexactly(4) == b"ping"
        client_sock = writer.get_extra_info("socket")
        nodelay = client_sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        client_dscp = net.socket_dscp(client_sock)
        writer.close()
        await writer.wait_closed()
        server_dscp = await accepted.get()
        listener_dscp = net.socket_dscp(server.sockets[0])
    assert nodelay == 1
    return client_dscp, server_dscp, listener_dscp


async def test_ipv4_marks_client_and_accepted_socket() -> None:
    client, accepted, listener = await _echo_pair("127.0.0.1", 24, 16)
    assert (client, accepted, listener) == (16, 24, 24)


async def test_ipv6_marks_with_traffic_class() -> None:
    if not socket.has_ipv6:
        pytest.skip("this kernel has no IPv6")
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError as error:
        pytest.skip(f"no IPv6 loopback here: {error}")
    client, accepted, listener = await _echo_pair("::1", 8, 46)
    assert (client, accepted, listener) == (46, 8, 8)


async def test_refused_connection_names_host_and_port() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with pytest.raises(OSError, match=f"port {port}"):
        await net.open_marked_connection("127.0.0.1", port, dscp=0, timeout=5)


def test_out_of_range_dscp_is_refused() -> None:
    with socket.socket() as sock, pytest.raises(ValueError, match="64"):
        net.mark_socket(sock, 64)
