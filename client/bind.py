"""An MTA-bind and its release on a blocking socket: what ``x400ctl ping`` does.

The association is the sans-I/O stack's (:class:`p1.association.connection.P1Association`
in the 1988 normal mode, :class:`p1.association.x410.X410Association` in the X.410-1984
mode); this module only moves its octets.  It connects with the DiffServ mark set before
the SYN (RFC 2474: ``IP_TOS`` / ``IPV6_TCLASS`` hold ``dscp << 2``), with ``tls`` runs
TLS on that socket (RFC 1006 inside TLS, the daemon's contexts: :mod:`config.tls`), sends
the MTA-bind (X.411 12.1.1), reads until the bind is answered, then releases (RT-CLOSE,
X.228 7.4) and waits for the peer's answer.  One deadline covers every step.

Public API::

    bind_and_release(host, port, argument, *, settings=None, dscp=0, timeout=10.0,
                     tls=None) -> Bound
    Bound(responder_name, bind_seconds, tls_version)
    BindRefusedError(error, why)     the peer refused the bind
    AssociationError                 it ended otherwise (aborted, the connection closed
                                     without an answer, an answer that breaks the
                                     protocol): a peer or protocol error, not a refusal
    TlsError (config.tls)            the handshake failed, or the certificate is not the
                                     one pinned
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass
from typing import Final, TypeVar

from config.tls import ClientTls, TlsError, handshake_failure
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

_TLS_HINT: Final = "a listener that requires TLS closes a plaintext connection so: try --tls"
"""Why a peer may close a plaintext connection before it answers the bind."""


class AssociationError(Exception):
    """The association ended otherwise than asked (the message says how)."""


class _ClosedError(AssociationError):
    """The peer closed (or reset) the connection instead of answering."""

    def __init__(self, why: str, *, silent: bool) -> None:
        self.silent = silent
        """It sent nothing at all: it did not even answer the transport connection."""
        super().__init__(why)


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
    tls_version: str | None = None
    """The TLS version negotiated ("TLSv1.3"), None in the clear."""


def bind_and_release(
    host: str,
    port: int,
    argument: MTABindArgument,
    *,
    settings: AssociationSettings | X410Settings | None = None,
    dscp: int = 0,
    timeout: float = 10.0,
    tls: ClientTls | None = None,
) -> Bound:
    """Bind to ``host:port`` with ``argument`` (in TLS with ``tls``), release; who
    answered, and how long the bind took.  ``TimeoutError`` past ``timeout`` seconds,
    :class:`config.tls.TlsError` when the handshake or the certificate fails, ``OSError``
    when no address answers, :class:`BindRefusedError`, :class:`AssociationError`."""
    deadline = time.monotonic() + timeout
    association: SessionAssociation = (
        X410Association(Role.INITIATOR, settings)
        if isinstance(settings, X410Settings)
        else P1Association(Role.INITIATOR, settings)
    )
    started = time.perf_counter()
    sock = _connect(host, port, dscp, timeout)
    if tls is not None:
        sock = _secure(sock, tls)
    with sock:
        association.send_bind(argument)
        accepted = _bind(sock, association, deadline, plaintext=tls is None)
        bound = Bound(
            accepted.result.responder_name,
            time.perf_counter() - started,
            sock.version() if isinstance(sock, ssl.SSLSocket) else None,
        )
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


def _secure(sock: socket.socket, tls: ClientTls) -> ssl.SSLSocket:
    """TLS on the connected ``sock`` (within its timeout), the peer's certificate checked."""
    try:
        secured = tls.context.wrap_socket(sock, server_hostname=tls.server_hostname)
    except (ssl.SSLError, ConnectionError) as error:
        sock.close()
        raise TlsError(f"TLS handshake failed: {handshake_failure(error)[1]}") from None
    except BaseException:
        sock.close()
        raise
    try:
        tls.check(secured)
    except TlsError as error:
        secured.close()
        raise TlsError(f"TLS: {error}") from None
    return secured


def _bind(
    sock: socket.socket, association: SessionAssociation, deadline: float, *, plaintext: bool
) -> BindAccepted:
    """The bind's answer; a plaintext connection that the peer ends before it said
    anything says why it may be."""
    try:
        return _until(sock, association, deadline, BindAccepted)
    except _ClosedError as error:
        if not (plaintext and error.silent):
            raise
        raise AssociationError(f"{error} ({_TLS_HINT})") from None


def _until(
    sock: socket.socket, association: SessionAssociation, deadline: float, wanted: type[_E]
) -> _E:
    """Write what the association queued and feed it what comes back, until ``wanted``."""
    silent = True  # nothing received yet
    while True:
        data = association.data_to_send()
        if data:
            sock.sendall(data)
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        try:
            received = sock.recv(_READ)
        except ConnectionResetError:
            why = f"the peer reset the connection without answering the {_ASKED[wanted]}"
            raise _ClosedError(why, silent=silent) from None
        if not received:
            association.receive_eof()
            why = f"the peer closed the connection without answering the {_ASKED[wanted]}"
            raise _ClosedError(why, silent=silent)
        silent = False
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
