"""TLS under RFC 1006: the contexts, the checks of a peer's certificate, and the words
for a handshake that failed.

TPKT (RFC 1006) runs unchanged inside TLS 1.2 (RFC 5246) or 1.3 (RFC 8446), as IANA's
iso-tp0s (port 3782) names it; the connection's socket, and so its DSCP mark
(:mod:`mta.net`), stays the one TCP gave.  The standard library's :mod:`ssl` does the
handshake; ``cryptography`` reads certificates for what ``ssl`` does not tell: the names
a client's certificate carries and which CA issued it.

A peer proves itself in one of two ways (``[[peers]]``):

- ``fingerprint``: its certificate is the one whose SHA-256 digest is pinned;
- ``ca`` and ``certificate_name`` (by default its first host): its certificate was issued
  by a certificate in ``ca`` and carries the name in its subject alternative names.

An initiator checks the listener's certificate in the handshake (the CA and the name, by
``ssl``), and the pin just after it.  A listener checks in its handshake that a client's
certificate chains to a CA it trusts (its own ``ca`` and every TLS peer's); which peer the
certificate is that of is known only once the peer names itself in the MTA-bind, and is
checked there (:func:`certificate_mismatch`).

``SSLKEYLOGFILE`` in the environment (as curl and browsers read it) makes every context
write its session secrets there, for Wireshark; unset, nothing is written.

Public API::

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

import ipaddress
import os
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from config.schema import Listener, Peer, TlsMode
from config.tls import fingerprint

__all__ = [
    "MINIMUM_VERSION",
    "ClientTls",
    "TlsError",
    "certificate_mismatch",
    "fingerprint",
    "handshake_failure",
    "keylog_path",
    "server_context",
    "subject_names",
]

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
