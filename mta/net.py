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
library's :mod:`ssl` does the handshake; ``cryptography`` reads certificates for what
``ssl`` does not tell: the names a client's certificate carries and which CA issued it.
A peer proves itself in one of two ways (``[[peers]]``): ``fingerprint``, its
certificate is the one whose SHA-256 digest is pinned; or ``ca`` and
``certificate_name`` (by default its first host), its certificate was issued by a
certificate in ``ca`` and carries the name in its subject alternative names.  An
initiator checks the listener's certificate in the handshake (CA and name, by ``ssl``),
and the pin just after it.  A listener checks in its handshake that a client's
certificate chains to a CA it trusts (its own ``ca`` and every TLS peer's); which peer
the certificate must be that of is known only once the peer names itself in the
MTA-bind, and is checked there (:func:`certificate_mismatch`).  ``SSLKEYLOGFILE`` in the
environment (as curl and browsers read it) makes every context append its session
secrets there, the file created for its owner alone; unset, nothing is written::

    MINIMUM_VERSION                      TLS 1.2
    keylog_path() -> str | None          SSLKEYLOGFILE, when set
    server_context(listener, peers) -> ssl.SSLContext
    ClientTls.for_peer(peer) -> ClientTls(context, server_hostname, fingerprint)
        .check(ssl_object)               the pin, after the handshake (TlsError)
    TlsError(OSError)                    a handshake or a certificate that failed
    fingerprint(der) -> str              SHA-256, "AB:CD:..." as the configuration takes it
                                         (:func:`config.tls.fingerprint`)
    subject_names(certificate) -> [str]  its DNS names and IP addresses (SAN)
    certificate_mismatch(peer, der) -> str | None     why a client is not ``peer``
    handshake_failure(error) -> (kind, words)         a failed handshake, in one line
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol, TypeVar

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from config.schema import Listener, Peer, TlsMode
from config.tls import fingerprint


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

MINIMUM_VERSION: Final = ssl.TLSVersion.TLSv1_2
KEYLOG_VARIABLE: Final = "SSLKEYLOGFILE"


class TlsError(OSError):
    """A TLS handshake that failed, or a certificate that is not the peer's."""


def keylog_path() -> str | None:
    """Where session secrets are written (``SSLKEYLOGFILE``); None: nowhere."""
    return os.environ.get(KEYLOG_VARIABLE) or None


def _context(purpose: int) -> ssl.SSLContext:
    context = ssl.SSLContext(purpose)
    context.minimum_version = MINIMUM_VERSION
    keylog = keylog_path()
    if keylog is not None:
        # Whoever reads these secrets reads the traffic: the file is created for its
        # owner alone (ssl would create it with the umask's mode).
        os.close(os.open(keylog, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        context.keylog_filename = keylog
    return context


def server_context(listener: Listener, peers: Sequence[Peer]) -> ssl.SSLContext:
    """The context of a TLS listener: its certificate, and, when it requires client
    certificates, every CA it trusts to have issued one (its own and its TLS peers')."""
    files = listener.tls_files
    assert files.certificate is not None and files.key is not None  # (the loader's check)
    context = _context(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(files.certificate, files.key)
    if listener.client_certificate is TlsMode.REQUIRED:
        context.verify_mode = ssl.CERT_REQUIRED
        for ca in _anchors(listener, peers):
            context.load_verify_locations(cafile=ca)
    return context


def _anchors(listener: Listener, peers: Sequence[Peer]) -> list[Path]:
    found = [listener.tls_files.ca] + [p.tls_files.ca for p in peers if p.uses_tls]
    return list(dict.fromkeys(ca for ca in found if ca is not None))


@dataclass(frozen=True, slots=True)
class ClientTls:
    """How to open TLS towards one peer."""

    context: ssl.SSLContext
    server_hostname: str
    """Sent in SNI, and (without a pin) the name the peer's certificate must carry."""
    fingerprint: str | None
    """The pinned SHA-256 fingerprint of the peer's certificate, if any."""

    @classmethod
    def for_peer(cls, peer: Peer) -> ClientTls:
        """A fresh context (the files read now: a reload's new certificates count)."""
        files = peer.tls_files
        context = _context(ssl.PROTOCOL_TLS_CLIENT)
        if files.certificate is not None and files.key is not None:
            context.load_cert_chain(files.certificate, files.key)
        if peer.fingerprint is not None:
            context.check_hostname = False  # the pin names the certificate itself
            if files.ca is None:
                context.verify_mode = ssl.CERT_NONE  # checked by check(), after the handshake
        if files.ca is not None:
            context.load_verify_locations(cafile=files.ca)
        return cls(context, peer.tls_name, peer.fingerprint)

    def check(self, ssl_object: ssl.SSLObject | None) -> None:
        """Raise :class:`TlsError` when the peer's certificate is not the pinned one."""
        if self.fingerprint is None:
            return
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if der is None:
            raise TlsError("the peer presented no certificate")
        found = fingerprint(der)
        if found != self.fingerprint:
            raise TlsError(f"certificate fingerprint {found} is not the pinned one")


def certificate_mismatch(peer: Peer, der: bytes | None) -> str | None:
    """Why the certificate ``der`` a client presented is not ``peer``'s, or None when it
    is (the handshake has already checked its chain and validity)."""
    if der is None:
        return "no certificate presented"
    if peer.fingerprint is not None:
        found = fingerprint(der)
        return None if found == peer.fingerprint else f"certificate {found} is not the pinned one"
    certificate = x509.load_der_x509_certificate(der)
    names = subject_names(certificate)
    if not _carries(names, peer.tls_name):
        return f"certificate for {', '.join(names) or 'no name'} does not carry {peer.tls_name}"
    ca = peer.tls_files.ca
    if ca is not None and not _issued_by(certificate, ca):
        return f"certificate not issued by a CA in {ca}"
    return None


def subject_names(certificate: x509.Certificate) -> list[str]:
    """The DNS names and IP addresses of a certificate's subject alternative names."""
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
    """Whether a certificate in the PEM file ``ca`` signed ``certificate``."""
    try:
        issuers = x509.load_pem_x509_certificates(ca.read_bytes())
    except (OSError, ValueError):
        return False
    for issuer in issuers:
        try:
            certificate.verify_directly_issued_by(issuer)
        except (InvalidSignature, ValueError, TypeError):  # (not its issuer)
            continue
        return True
    return False


_PLAINTEXT_REASONS: Final = frozenset(
    {"WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNKNOWN_PROTOCOL", "RECORD_LAYER_FAILURE"}
)


def handshake_failure(error: BaseException) -> tuple[str, str]:
    """A failed TLS handshake: its kind (for rate-limiting its lines) and what to say."""
    if isinstance(error, ssl.SSLCertVerificationError):
        return "certificate", f"certificate refused: {error.verify_message}"
    if isinstance(error, ssl.SSLError):
        reason = error.reason or ""
        if reason in _PLAINTEXT_REASONS:
            return "not-tls", "not a TLS handshake (a plaintext client?)"
        if "CERTIFICATE" in reason:
            return "certificate", f"certificate refused ({_words(reason)})"
        return "handshake", _words(reason) if reason else str(error)
    if isinstance(error, ConnectionError | EOFError):
        return "closed", "connection closed during the TLS handshake"
    return "handshake", str(error) or type(error).__name__


def _words(reason: str) -> str:
    return reason.lower().replace("_", " ")
