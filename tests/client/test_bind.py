"""client.bind: the connection x400ctl ping opens is marked before its SYN, and a peer that
ends the association otherwise than asked is an AssociationError, never a traceback."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from client import bind
from p1.association.mtabind import MTABindArgument


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server


def test_the_connection_carries_the_dscp_from_the_start(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    with bind._connect("127.0.0.1", port, 26, 5.0) as sock:  # AF41
        assert sock.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) == 26 << 2
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_a_peer_that_closes_at_once_is_an_association_error(listener: socket.socket) -> None:
    port = listener.getsockname()[1]

    def close_at_once() -> None:
        conn, _ = listener.accept()
        conn.recv(1024)
        conn.close()

    peer = threading.Thread(target=close_at_once)
    peer.start()
    argument = MTABindArgument(initiator_name="mta-a", password="pw")
    with pytest.raises(bind.AssociationError):
        bind.bind_and_release("127.0.0.1", port, argument, timeout=5.0)
    peer.join()


def test_a_silent_peer_times_out(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    argument = MTABindArgument(initiator_name="mta-a", password="pw")
    with pytest.raises(TimeoutError):
        bind.bind_and_release("127.0.0.1", port, argument, timeout=0.3)
