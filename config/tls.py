"""The TLS files a configuration names: their checks, made once at load (and at each
reload), and the ``ssl`` contexts they make, for the daemon and ``x400ctl ping`` alike.

A listener or peer that requires TLS must name files the standard library's ``ssl`` can
use: a PEM certificate chain with its private key (``SSLContext.load_cert_chain``) and
PEM trust anchors (``SSLContext.load_verify_locations``).  The loader turns each
problem found here into a :class:`config.loader.ConfigError` naming the file, the key and
the value; nothing is left to fail at the first connection.

Public API::

    TlsProblem(key, value, expected)
    check_identity(files) -> TlsProblem | None     certificate and key, together
    check_trust(files) -> TlsProblem | None        ca
    resolve_files(own, defaults) -> TlsFiles       each file its own, else [tls]'s
    fingerprint(der) -> str        a certificate's SHA-256, as ``fingerprint`` is written

The contexts, for RFC 1006 inside TLS 1.2 (RFC 5246) or 1.3 (RFC 8446).  Only the
standard library's :mod:`ssl` is used here: what needs a certificate parsed (a client's
names, its issuer) is the listener's, in :mod:`mta.net`.  ``SSLKEYLOGFILE`` in the
environment (as curl and browsers read it) makes every context append its session
secrets there, the file created for its owner alone; unset, nothing is written::

    MINIMUM_VERSION                      TLS 1.2
    keylog_path() -> str | None          SSLKEYLOGFILE, when set
    server_context(listener, peers) -> ssl.SSLContext
    ClientTls.for_peer(peer) -> ClientTls(context, server_hostname, fingerprint)
    ClientTls.create(files, name=, fingerprint=) -> ClientTls    (x400ctl ping HOST --tls)
        .check(ssl_object)               the pin, after the handshake (TlsError)
    TlsError(OSError)                    a handshake or a certificate that failed
    handshake_failure(error) -> (kind, words)         a failed handshake, in one line
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from config.schema import Listener, Peer, TlsFiles, TlsMode

__all__ = [
    "KEYLOG_VARIABLE",
    "MINIMUM_VERSION",
    "ClientTls",
    "TlsError",
    "TlsProblem",
    "check_identity",
    "check_trust",
    "fingerprint",
    "handshake_failure",
    "keylog_path",
    "resolve_files",
    "server_context",
]


def fingerprint(der: bytes) -> str:
    """The SHA-256 fingerprint of a DER certificate, as a peer's ``fingerprint`` is
    written (and ``openssl x509 -noout -fingerprint -sha256`` prints it)."""
    digest = hashlib.sha256(der).hexdigest().upper()
    return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))


@dataclass(frozen=True, slots=True)
class TlsProblem:
    """What is wrong with one key of a table's TLS files."""

    key: str
    value: object
    expected: str


def resolve_files(own: TlsFiles, defaults: TlsFiles) -> TlsFiles:
    """``own`` with each file it does not name taken from ``defaults`` (``[tls]``)."""
    return dataclasses.replace(
        own,
        **{
            f.name: getattr(defaults, f.name)
            for f in dataclasses.fields(own)
            if getattr(own, f.name) is None
        },
    )


def check_identity(files: TlsFiles, *, required: bool) -> TlsProblem | None:
    """Whether ``files`` name a certificate and the key that goes with it (``required``:
    they must; else either both or neither)."""
    certificate, key = files.certificate, files.key
    if certificate is None and key is None and not required:
        return None
    if certificate is None:
        return TlsProblem("certificate", None, "a PEM certificate file (here or in [tls])")
    if key is None:
        return TlsProblem("key", None, "the PEM file of certificate's private key")
    for name, path in (("certificate", certificate), ("key", key)):
        if not path.exists():
            return TlsProblem(name, str(path), f"an existing file ({path} does not exist)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(certificate, key)
    except ssl.SSLError as error:
        return TlsProblem(
            "certificate",
            str(certificate),
            f"a PEM certificate whose private key is in {key} ({_reason(error)})",
        )
    except OSError as error:
        return TlsProblem(
            "certificate", str(certificate), f"readable files ({error.strerror or error})"
        )
    return None


def check_trust(files: TlsFiles, *, required: bool) -> TlsProblem | None:
    """Whether ``files`` name a readable PEM file of trusted certificates (``required``:
    it must name one)."""
    if files.ca is None:
        if required:
            return TlsProblem("ca", None, "a PEM file of trusted certificates (here or in [tls])")
        return None
    if not files.ca.exists():
        return TlsProblem("ca", str(files.ca), f"an existing file ({files.ca} does not exist)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(cafile=files.ca)
    except ssl.SSLError as error:
        return TlsProblem("ca", str(files.ca), f"a file of PEM certificates ({_reason(error)})")
    except OSError as error:
        return TlsProblem("ca", str(files.ca), f"a readable file ({error.strerror or error})")
    return None


def _reason(error: ssl.SSLError) -> str:
    """OpenSSL's reason in words ("key values mismatch")."""
    reason = error.reason or str(error)
    return reason.lower().replace("_", " ")


# --- contexts ---------------------------------------------------------------------------

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
        return cls.create(peer.tls_files, name=peer.tls_name, fingerprint=peer.fingerprint)

    @classmethod
    def create(cls, files: TlsFiles, *, name: str, fingerprint: str | None) -> ClientTls:
        """Presenting ``files``' certificate (when it names one), and trusting a peer
        whose certificate is the one ``fingerprint`` pins, or else was issued by a CA in
        ``files.ca`` (the system's CAs without one) for ``name``.  ``OSError`` or
        ``ssl.SSLError`` when a file cannot be used."""
        context = _context(ssl.PROTOCOL_TLS_CLIENT)
        if files.certificate is not None and files.key is not None:
            context.load_cert_chain(files.certificate, files.key)
        if fingerprint is not None:
            context.check_hostname = False  # the pin names the certificate itself
            if files.ca is None:
                context.verify_mode = ssl.CERT_NONE  # checked by check(), after the handshake
        if files.ca is not None:
            context.load_verify_locations(cafile=files.ca)
        elif fingerprint is None:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        return cls(context, name, fingerprint)

    def check(self, ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> None:
        """Raise :class:`TlsError` when the peer's certificate is not the pinned one."""
        if self.fingerprint is None:
            return
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if der is None:
            raise TlsError("the peer presented no certificate")
        found = fingerprint(der)
        if found != self.fingerprint:
            raise TlsError(f"certificate fingerprint {found} is not the pinned one")


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
            return "certificate", f"certificate refused ({_reason(error)})"
        return "handshake", _reason(error) if reason else str(error)
    if isinstance(error, ConnectionError | EOFError):
        return "closed", "connection closed during the TLS handshake"
    return "handshake", str(error) or type(error).__name__
