"""Checks of the TLS files a configuration names, made once at load (and at each reload).

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
"""

from __future__ import annotations

import dataclasses
import hashlib
import ssl
from dataclasses import dataclass

from config.schema import TlsFiles

__all__ = ["TlsProblem", "check_identity", "check_trust", "fingerprint", "resolve_files"]


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
