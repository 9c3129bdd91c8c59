"""Certificates made at test time with ``cryptography``: a CA and the certificates it
issues, expired ones among them.  No key is ever committed; each test makes its own.

Public API::

    Credential(certificate, key)   .pem .key_pem .der
                                   .write(directory, stem) -> (certificate, key) paths
    make_ca(name) -> Credential
    issue(ca, name, *, sans=(name,), days=30, expired=False) -> Credential
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_Key = ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class Credential:
    certificate: x509.Certificate
    key: _Key

    @property
    def pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    @property
    def der(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.DER)

    def write(self, directory: Path, stem: str) -> tuple[Path, Path]:
        """``stem.pem`` (the certificate) and ``stem.key`` (mode 0600) in ``directory``."""
        directory.mkdir(parents=True, exist_ok=True)
        certificate, key = directory / f"{stem}.pem", directory / f"{stem}.key"
        certificate.write_bytes(self.pem)
        key.write_bytes(self.key_pem)
        key.chmod(0o600)
        return certificate, key


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _san(names: tuple[str, ...]) -> x509.SubjectAlternativeName:
    general: list[x509.GeneralName] = []
    for name in names:
        try:
            general.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            general.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(general)


def _builder(
    subject: str, issuer: x509.Name, key: _Key, *, days: int, expired: bool
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    start = now - datetime.timedelta(days=2 * days if expired else 1)
    end = now - datetime.timedelta(days=1) if expired else now + datetime.timedelta(days=days)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
    )


def make_ca(name: str) -> Credential:
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (
        _builder(name, _name(name), key, days=365, expired=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    return Credential(certificate, key)


def issue(
    ca: Credential,
    name: str,
    *,
    sans: tuple[str, ...] | None = None,
    days: int = 30,
    expired: bool = False,
) -> Credential:
    """A certificate for ``name`` (server and client authentication) signed by ``ca``."""
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (
        _builder(name, ca.certificate.subject, key, days=days, expired=expired)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_san(sans or (name,)), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), False
        )
        .sign(ca.key, hashes.SHA256())
    )
    return Credential(certificate, key)
