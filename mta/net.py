"""TCP sockets for P1 connections: marked with a DiffServ code point (RFC 2474), and TLS.

The mark must be on the socket before the first packet: a client socket is marked before
``connect()`` so its SYN carries the mark; a listening socket is marked before it accepts, so
the sockets it accepts inherit the mark and the return direction (SYN-ACK included) carries it
too.  IPv4 uses ``IP_TOS`` and IPv6 ``IPV6_TCLASS``, both holding ``dscp << 2`` (the two ECN
bits stay clear).  Sockets we create ourselves do not get asyncio's automatic TCP_NODELAY, so
it is set here: without it every small PDU waits for Nagle and the delayed ACK.  TLS
(below) runs on that same socket, so its records carry the mark too.

A congestion control algorithm (``tcp_congestion`` in the configuration, e.g. ``"cubic"``)
is pinned per socket with ``TCP_CONGESTION``, on the client socket before it connects and on
the listener and every socket it accepts; None leaves the system's default.  How a router's
queues share a link between flows depends on it (a FIFO shares very differently under BBR
and under cubic), and the default cannot be changed inside a network namespace.

Public API::

    mark_socket(sock, dscp)                     IP_TOS or IPV6_TCLASS, by the socket's family
    socket_dscp(sock) -> int                    the code point a socket carries
    set_congestion(sock, name)                  TCP_CONGESTION (e.g. "cubic")
    socket_congestion(sock) -> str              the algorithm a socket uses
    async open_marked_connection(host, port, *, dscp, timeout, congestion, source, tls)
        -> (reader, writer)         (tls: a ClientTls, the handshake on the marked socket)
    async start_marked_server(handler, host, port, *, dscp, backlog, congestion)
        -> asyncio.Server
    bound_port(server) -> int

TLS under RFC 1006: TPKT runs unchanged inside TLS 1.2 (RFC 5246) or 1.3 (RFC 8446), as
IANA's iso-tp0s (port 3782) names it, on the marked socket TCP gave.  The standard
library's :mod:`ssl` does the handshake, with the contexts :mod:`config.tls` makes from
the configuration (``x400ctl ping`` makes the same ones); ``cryptography`` reads
certificates for what ``ssl`` does not tell: the names a client's certificate carries and
which CA issued it.  A peer proves itself in one of two ways (``[[peers]]``):
``fingerprint``, its certificate is the one whose SHA-256 digest is pinned; or ``ca`` and
``certificate_name`` (by default its first host), its certificate was issued by a
certificate in ``ca`` and carries the name in its subject alternative names.  An
initiator checks the listener's certificate in the handshake (CA and name, by ``ssl``),
and the pin just after it.  A listener checks in its handshake that a client's
certificate chains to a CA it trusts (its own ``ca`` and every TLS peer's); which peer
the certificate must be that of is known only once the peer names itself in the
MTA-bind, and is checked there (:func:`certificate_mismatch`)::

    ClientTls, TlsError, server_context, keylog_path, handshake_failure, fingerprint,
    MINIMUM_VERSION, KEYLOG_VARIABLE     :mod:`config.tls`'s, for the daemon's modules
    subject_names(certificate) -> [str]  its DNS names and IP addresses (SAN)
    certificate_mismatch(peer, der) -> str | None     why a client is not ``peer``
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from config.schema import Peer
from config.tls import KEYLOG_VARIABLE as KEYLOG_VARIABLE
from config.tls import MINIMUM_VERSION as MINIMUM_VERSION
from config.tls import ClientTls as ClientTls
from config.tls import TlsError as TlsError
from config.tls import fingerprint as fingerprint
from config.tls import handshake_failure as handshake_failure
from config.tls import keylog_path as keylog_path
from config.tls import server_context as server_context

if TYPE_CHECKING:
    from cryptography import x509


class MarkableSocket(Protocol):
    """What marking needs of a socket: ``socket.socket`` and asyncio's ``TransportSocket``."""

    @property
    def family(self) -> int: ...

    def setsockopt(self, level: int, option: int, value: int, /) -> None: ...

    def getsockopt(self, level: int, option: int, /) -> int: ...


class TunableSocket(Protocol):
    """What pinning a congestion control needs of a socket (byte-valued options)."""

    def setsockopt(self, level: int, option: int, value: bytes, /) -> None: ...

    def getsockopt(self, level: int, option: int, length: int, /) -> bytes: ...


StreamHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

STREAM_LIMIT = 1 << 20
"""Read buffer of the streams we create (bytes); reads take up to this much at a time."""


def mark_socket(sock: MarkableSocket, dscp: int) -> None:
    """Set the DiffServ code point ``dscp`` (0..63) on ``sock`` (IPv4 or IPv6)."""
    if not 0 <= dscp <= 63:
        raise ValueError(f"DSCP {dscp} is outside 0..63")
    if sock.family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, dscp << 2)
        # An IPv6 socket may also carry IPv4-mapped traffic; mark that path too.
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, dscp << 2)
    else:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, dscp << 2)


def socket_dscp(sock: MarkableSocket) -> int:
    """The code point ``sock`` marks its packets with."""
    if sock.family == socket.AF_INET6:
        return sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS) >> 2
    return sock.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) >> 2


_CONGESTION_NAME_MAX = 16
"""TCP_CA_NAME_MAX of the kernel: the longest congestion control name, NUL included."""


def set_congestion(sock: TunableSocket, name: str) -> None:
    """Make ``sock`` use the congestion control algorithm ``name`` (``TCP_CONGESTION``).

    Raises ``OSError`` when the kernel does not offer it (ENOENT) or does not let this
    process use it (EPERM: not in ``tcp_allowed_congestion_control``).
    """
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, name.encode("ascii"))


def socket_congestion(sock: TunableSocket) -> str:
    """The congestion control algorithm ``sock`` uses."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, _CONGESTION_NAME_MAX)
    return raw.split(b"\0", 1)[0].decode("ascii")


async def open_marked_connection(
    host: str,
    port: int,
    *,
    dscp: int,
    timeout: float,
    congestion: str | None = None,
    source: str | None = None,
    tls: ClientTls | None = None,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect to ``host:port`` with every packet, the SYN included, marked ``dscp``, and
    with the congestion control ``congestion`` (None: the system's default), from the
    local IP address ``source`` (None: the one the system picks); with ``tls``, complete
    a TLS handshake on that socket and check the peer's certificate.

    Tries each address ``host`` resolves to in turn (with ``source``, those of its family
    only); raises ``TimeoutError`` when the whole attempt takes longer than ``timeout``
    seconds, :class:`TlsError` when the handshake fails or the certificate is
    not the peer's, and ``OSError`` when no address answers or ``source`` cannot be used.
    """
    async with asyncio.timeout(timeout):
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        errors: list[OSError] = []
        for family, kind, proto, _name, address in _from_family(infos, source, errors):
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                mark_socket(sock, dscp)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if congestion is not None:
                    set_congestion(sock, congestion)
                if source is not None:
                    _bind_source(sock, source)
                await loop.sock_connect(sock, address)
            except OSError as error:
                sock.close()
                errors.append(error)
                continue
            except BaseException:
                sock.close()
                raise
            if tls is None:
                return await asyncio.open_connection(sock=sock, limit=STREAM_LIMIT)
            return await _handshake(sock, tls, f"{host} port {port}")
        raise OSError(f"cannot connect to {host} port {port}: {_reasons(errors)}")


async def _handshake(
    sock: socket.socket, tls: ClientTls, where: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """TLS on the connected ``sock``; the streams once the peer's certificate passed."""
    try:
        reader, writer = await asyncio.open_connection(
            sock=sock, limit=STREAM_LIMIT, ssl=tls.context, server_hostname=tls.server_hostname
        )
    except (ssl.SSLError, ConnectionError) as error:
        sock.close()
        raise TlsError(
            f"TLS handshake with {where} failed: {handshake_failure(error)[1]}"
        ) from None
    try:
        tls.check(writer.get_extra_info("ssl_object"))
    except TlsError as error:
        writer.transport.abort()
        raise TlsError(f"TLS with {where}: {error}") from None
    return reader, writer


_Info = TypeVar("_Info", bound=tuple[Any, ...])


def _from_family(infos: list[_Info], source: str | None, errors: list[OSError]) -> list[_Info]:
    """The addresses of ``infos`` (getaddrinfo's) a socket bound to ``source`` can reach
    (all of them when it is None); when none can, ``errors`` says why."""
    if source is None:
        return infos
    family = socket.AF_INET6 if ":" in source else socket.AF_INET
    usable = [info for info in infos if info[0] == family]
    if not usable and infos:
        errors.append(OSError(f"source_address {source} is not of the peer's address family"))
    return usable


def _bind_source(sock: socket.socket, source: str) -> None:
    """Bind ``sock`` to ``source``, any port, saying which address failed."""
    try:
        sock.bind((source, 0))
    except OSError as error:
        raise OSError(f"source_address {source}: {_reason(error)}") from error


def _reasons(errors: list[OSError]) -> str:
    """Why each address failed, as the system names it ("connection refused")."""
    return "; ".join(_reason(error) for error in errors) or "no address"


def _reason(error: OSError) -> str:
    if error.errno is None:
        return str(error)
    return os.strerror(error.errno).lower()


async def start_marked_server(
    handler: StreamHandler,
    host: str,
    port: int,
    *,
    dscp: int,
    backlog: int = 100,
    congestion: str | None = None,
) -> asyncio.Server:
    """Listen on ``host:port`` with the listening sockets marked ``dscp`` before any accept.

    Accepted sockets inherit the mark; ``handler`` also gets TCP_NODELAY on its socket, and
    the congestion control ``congestion`` (None: the system's default), set on the listener
    too.  The server is created without serving, marked, then started.
    """

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if congestion is not None:
                set_congestion(sock, congestion)
        await handler(reader, writer)

    server = await asyncio.start_server(
        accepted, host, port, backlog=backlog, limit=STREAM_LIMIT, start_serving=False
    )
    try:
        for sock in server.sockets:
            mark_socket(sock, dscp)
            if congestion is not None:
                set_congestion(sock, congestion)
    except BaseException:
        server.close()
        raise
    await server.start_serving()
    return server


def bound_port(server: asyncio.Server) -> int:
    """The TCP port ``server`` listens on (useful after binding port 0)."""
    return int(server.sockets[0].getsockname()[1])


# --- TLS under RFC 1006 ---------------------------------------------------------------


def certificate_mismatch(peer: Peer, der: bytes | None) -> str | None:
    """Why the certificate ``der`` a client presented is not ``peer``'s, or None when it
    is (the handshake has already checked its chain and validity)."""
    if der is None:
        return "no certificate presented"
    if peer.fingerprint is not None:
        found = fingerprint(der)
        return None if found == peer.fingerprint else f"certificate {found} is not the pinned one"
    from cryptography import x509  # (only here: cryptography adds 11 MB to every process)

    try:
        certificate = x509.load_der_x509_certificate(der)
        names = subject_names(certificate)
    except ValueError as error:  # (one OpenSSL accepted and cryptography does not read)
        return f"certificate not readable: {error}"
    if not _carries(names, peer.tls_name):
        return f"certificate for {', '.join(names) or 'no name'} does not carry {peer.tls_name}"
    ca = peer.tls_files.ca
    if ca is not None and not _issued_by(certificate, ca):
        return f"certificate not issued by a CA in {ca}"
    return None


def subject_names(certificate: x509.Certificate) -> list[str]:
    """The DNS names and IP addresses of a certificate's subject alternative names."""
    from cryptography import x509

    try:
        extension = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    names = extension.value
    return [
        *names.get_values_for_type(x509.DNSName),
        *(str(address) for address in names.get_values_for_type(x509.IPAddress)),
    ]


def _carries(names: list[str], wanted: str) -> bool:
    try:
        address = ipaddress.ip_address(wanted)
    except ValueError:
        return wanted.lower().rstrip(".") in {name.lower().rstrip(".") for name in names}
    return str(address) in names


def _issued_by(certificate: x509.Certificate, ca: Path) -> bool:
    """Whether ``certificate`` is in the PEM file ``ca`` itself, or was signed by a CA
    certificate (basic constraints cA) in it.  A certificate that is no CA signs nothing
    here, so a peer's own certificate in a shared file cannot vouch for another name."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature

    try:
        issuers = x509.load_pem_x509_certificates(ca.read_bytes())
    except (OSError, ValueError):
        return False
    for issuer in issuers:
        if issuer == certificate:
            return True
        if not _is_ca(issuer):
            continue
        try:
            certificate.verify_directly_issued_by(issuer)
        except (InvalidSignature, ValueError, TypeError):  # (not its issuer)
            continue
        return True
    return False


def _is_ca(certificate: x509.Certificate) -> bool:
    from cryptography import x509

    try:
        constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints)
    except (x509.ExtensionNotFound, ValueError):
        return False
    return constraints.value.ca
