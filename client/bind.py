"""An MTA-bind and its release on a blocking socket: what ``x400ctl ping`` does.

The association is the sans-I/O stack's (:class:`p1.association.connection.P1Association`
in the 1988 normal mode, :class:`p1.association.x410.X410Association` in the X.410-1984
mode); this module only moves its octets.  It connects with the DiffServ mark set before
the SYN (RFC 2474: ``IP_TOS`` / ``IPV6_TCLASS`` hold ``dscp << 2``), sends the MTA-bind
(X.411 12.1.1), reads until the bind is answered, then releases (RT-CLOSE, X.228 7.4)
and waits for the peer's answer.  One deadline covers every step.

Public API::

    bind_and_release(host, port, argument, *, settings=None, dscp=0, timeout=10.0) -> Bound
    Bound(responder_name, bind_seconds)
    BindRefusedError(error, why)     the peer refused the bind
    AssociationError                 it ended otherwise (aborted, the connection closed
                                     without an answer, an answer that breaks the
                                     protocol): a peer or protocol error, not a refusal
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from typing import TypeVar

from p1.association.base import SessionAssociation
from p1.association.connection import AssociationSettings, P1Association
from p1.association.events import Aborted, BindAccepted, BindRefused, Released
from p1.association.mtabind import MTABindArgument, MTABindError
from p1.association.x410 import X410Association, X410Settings
from p1.osi import Event, Role

__all__ = ["AssociationError", "BindRefusedError", "Bound", "bind_and_release"]

_E = TypeVar("_E", bound=Event)

_READ = 65536
"""Most octets read at once."""

_ASKED: dict[type[Event], str] = {BindAccepted: "bind", Released: "release"}
"""What was awaited, for the message when the peer closes the connection instead."""


class AssociationError(Exception):
    """The association ended otherwise than asked (the message says how)."""


class BindRefusedError(AssociationError):
    """The peer refused the MTA-bind; ``error`` is its MTABindError when it gave one."""

    def __init__(self, error: MTABindError | None, why: str) -> None:
        self.error = error
        super().__init__(why)


@dataclass(frozen=True, slots=True)
class Bound:
    """What a bind found out."""

    responder_name: str | None
    bind_seconds: float


def bind_and_release(
    host: str,
    port: int,
    argument: MTABindArgument,
    *,
    settings: AssociationSettings | X410Settings | None = None,
    dscp: int = 0,
    timeout: float = 10.0,
) -> Bound:
    """Bind to ``host:port`` with ``argument``, release; who answered, and how long the
    bind took.  ``TimeoutError`` past ``timeout`` seconds, ``OSError`` when no address
    answers, :class:`BindRefusedError`, :class:`AssociationError`."""
    deadline = time.monotonic() + timeout
    association: SessionAssociation = (
        X410Association(Role.INITIATOR, settings)
        if isinstance(settings, X410Settings)
        else P1Association(Role.INITIATOR, settings)
    )
    started = time.perf_counter()
    with _connect(host, port, dscp, timeout) as sock:
        association.send_bind(argument)
        accepted = _until(sock, association, deadline, BindAccepted)
        bound = Bound(accepted.result.responder_name, time.perf_counter() - started)
        if association.has_turn:  # (the initiator holds it after a bind in TWA mode)
            association.send_release()
            _until(sock, association, deadline, Released)
    return bound


def _connect(host: str, port: int, dscp: int, timeout: float) -> socket.socket:
    """A TCP connection to ``host:port`` marked ``dscp`` from its SYN on."""
    errors: list[str] = []
    for family, kind, proto, _name, address in socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM
    ):
        sock = socket.socket(family, kind, proto)
        try:
            level, option = (
                (socket.IPPROTO_IPV6, socket.IPV6_TCLASS)
                if family == socket.AF_INET6
                else (socket.IPPROTO_IP, socket.IP_TOS)
            )
            sock.setsockopt(level, option, dscp << 2)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(timeout)
            sock.connect(address)
        except TimeoutError:
            sock.close()
            raise
        except OSError as error:
            sock.close()
            errors.append(error.strerror or str(error))
            continue
        return sock
    raise OSError(f"cannot connect: {'; '.join(dict.fromkeys(errors)) or 'no address'}")


def _until(
    sock: socket.socket, association: SessionAssociation, deadline: float, wanted: type[_E]
) -> _E:
    """Write what the association queued and feed it what comes back, until ``wanted``."""
    while True:
        data = association.data_to_send()
        if data:
            sock.sendall(data)
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        received = sock.recv(_READ)
        if not received:
            association.receive_eof()
            raise AssociationError(
                f"the peer closed the connection without answering the {_ASKED[wanted]}"
            )
        for event in association.receive_data(received):
            if isinstance(event, wanted):
                return event
            _check(event)
        if association.closed:
            raise AssociationError("the association is closed")


def _check(event: Event) -> None:
    """Raise for an event that ends the association."""
    if isinstance(event, BindRefused) and not event.by_peer:
        raise AssociationError(f"protocol error in the bind's answer: {event.why}")
    if isinstance(event, BindRefused):
        raise BindRefusedError(event.error, event.why)
    if isinstance(event, Aborted):
        raise AssociationError(f"aborted{' by the peer' if event.by_peer else ''}: {event.why}")
    if isinstance(event, Released):
        raise AssociationError("released by the peer")
