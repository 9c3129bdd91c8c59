"""TCP_CONGESTION pinned on P1 sockets: the connected one, the listener and accepted ones."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mta import net

AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


def _other_than_default() -> str:
    """An offered algorithm that is not the system's default, so inheritance cannot fake
    the result."""
    try:
        offered = AVAILABLE.read_text().split()
        default = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    except OSError:
        pytest.skip("the kernel's congestion control lists are not readable here")
    others = [name for name in offered if name != default]
    if not others:
        pytest.skip(f"this kernel offers no congestion control besides {default}")
    return others[0]


async def test_connected_accepted_and_listening_sockets_carry_it() -> None:
    algorithm = _other_than_default()
    accepted: asyncio.Queue[str] = asyncio.Queue()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accepted.put(net.socket_congestion(writer.get_extra_info("socket")))
        writer.close()
        await writer.wait_closed()

    server = await net.start_marked_server(handler, "127.0.0.1", 0, dscp=24, congestion=algorithm)
    async with server:
        reader, writer = await net.open_marked_connection(
            "127.0.0.1", net.bound_port(server), dscp=24, timeout=5, congestion=algorithm
        )
        connected = net.socket_congestion(writer.get_extra_info("socket"))
        assert await reader.read() == b""
        writer.close()
        await writer.wait_closed()
        listening = net.socket_congestion(server.sockets[0])
        assert (connected, await accepted.get(), listening) == (algorithm,) * 3


async def test_without_it_the_system_default_stays() -> None:
    default = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    server = await net.start_marked_server(
        lambda reader, writer: asyncio.sleep(0), "127.0.0.1", 0, dscp=0
    )
    async with server:
        _, writer = await net.open_marked_connection(
            "127.0.0.1", net.bound_port(server), dscp=0, timeout=5
        )
        assert net.socket_congestion(writer.get_extra_info("socket")) == default
        writer.close()
        await writer.wait_closed()


def test_an_unknown_algorithm_is_an_os_error() -> None:
    import socket

    with socket.socket() as sock, pytest.raises(OSError):
        net.set_congestion(sock, "nosuchcc")
