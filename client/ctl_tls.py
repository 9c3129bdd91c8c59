"""``x400ctl tls``: look at a TLS listener's certificate, and make a pair for a lab.

``x400ctl tls show HOST [PORT]`` completes a TLS handshake with HOST (port 3782, IANA's
iso-tp0s, unless given) and prints the certificate it presented: subject, subject
alternative names, issuer, validity, and its SHA-256 fingerprint as a peer's
``fingerprint`` key takes it, so that the line can be pasted into the configuration
once the fingerprint was checked with the peer's operator by other means.  Nothing is
verified unless ``--ca`` is given (then the chain, and the name with ``--name``): a
listener's certificate is shown whatever it is.  A listener that requires client
certificates answers the handshake all the same (TLS 1.3 asks for one only after the
server's certificate was sent).

``x400ctl tls selfsigned --name NAME --out DIR`` writes ``DIR/NAME.pem`` and
``DIR/NAME.key`` (mode 0600): an EC P-256 key and a self-signed certificate for NAME
(and ``--address`` IPs) in its subject alternative names, valid ``--days``.  For a lab or
a pair of sites that pin each other's certificate, not for a CA's place.

Exit codes: 0 done; 2 bad arguments, or a file of ``--out`` exists; 3 HOST cannot be
reached; 4 the handshake failed or the certificate did not verify.

Public API::

    add_command(commands)      the ``tls`` subcommand on x400ctl's subparsers
    run(args, out) -> int      run it (``args.command == "tls"``)
    DEFAULT_PORT               3782
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import socket
import ssl
import sys
from pathlib import Path
from typing import Any, Final, TextIO

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from client.cli import EXIT_OK, EXIT_PEER, EXIT_UNREACHABLE, EXIT_USAGE
from config.tls import fingerprint

__all__ = ["DEFAULT_PORT", "add_command", "run"]

DEFAULT_PORT: Final = 3782
"""iso-tp0s: RFC 1006 inside TLS."""


_DESCRIPTION = """\
show: complete a TLS handshake with HOST (port 3782, iso-tp0s, unless given) and print
the certificate it presents, its SHA-256 fingerprint as a peer's fingerprint key takes
it.  Nothing is verified unless --ca is given (and the name with --name).

selfsigned: write DIR/NAME.pem and DIR/NAME.key (mode 0600), an EC P-256 key and a
self-signed certificate for NAME and each --address, for a lab or two sites that pin
each other's certificate.

examples:
  x400ctl tls show mta-b.example
  x400ctl tls show 192.0.2.2 3782 --ca /etc/aiox400/ca.pem --name mta-b.example
  x400ctl tls selfsigned --name mta-a.example --address 192.0.2.1 --out /etc/aiox400/tls
"""


def add_command(commands: Any) -> None:
    """Add ``tls show`` and ``tls selfsigned`` to x400ctl's subparsers."""
    tls = commands.add_parser(
        "tls",
        help="show a TLS listener's certificate, or make a self-signed pair for a lab",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = tls.add_subparsers(
        dest="tls_command", required=True, metavar="ACTION", help="show or selfsigned"
    )
    show = actions.add_parser("show", help="print the certificate HOST presents")
    show.add_argument("host", metavar="HOST", help="the listener's host name or address")
    show.add_argument(
        "port",
        metavar="PORT",
        type=int,
        nargs="?",
        default=DEFAULT_PORT,
        help=f"its port (default {DEFAULT_PORT})",
    )
    show.add_argument("--ca", type=Path, help="verify the chain against this PEM file")
    show.add_argument("--name", help="with --ca: the name the certificate must carry")
    show.add_argument("--timeout", type=float, default=10.0, help="seconds (default 10)")
    made = actions.add_parser("selfsigned", help="write NAME.pem and NAME.key into DIR")
    made.add_argument("--name", required=True, help="the host name the certificate carries")
    made.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="where the two files go"
    )
    made.add_argument("--address", action="append", default=[], help="an IP address it carries too")
    made.add_argument("--days", type=int, default=365, help="validity (default 365)")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``x400ctl tls ...``; the exit code."""
    if args.tls_command == "show":
        return _show(args, out)
    return _selfsigned(args, out)


# --- show ------------------------------------------------------------------------------


def _show(args: argparse.Namespace, out: TextIO) -> int:
    try:
        context = _context(args.ca, args.name)
    except (OSError, ssl.SSLError) as error:
        return _fail(f"--ca {args.ca}: {error}", EXIT_USAGE)
    try:
        sock = socket.create_connection((args.host, args.port), timeout=args.timeout)
    except OSError as error:
        return _fail(f"cannot connect to {args.host} port {args.port}: {error}", EXIT_UNREACHABLE)
    try:
        with context.wrap_socket(sock, server_hostname=args.name or args.host) as secured:
            der = secured.getpeercert(binary_form=True)
            version = secured.version()
    except ssl.SSLCertVerificationError as error:
        return _fail(f"certificate refused: {error.verify_message}", EXIT_PEER)
    except (OSError, ssl.SSLError) as error:
        return _fail(f"TLS handshake with {args.host} port {args.port} failed: {error}", EXIT_PEER)
    if der is None:
        return _fail(f"{args.host} port {args.port} presented no certificate", EXIT_PEER)
    try:
        _describe(x509.load_der_x509_certificate(der), der, version, out)
    except ValueError as error:  # (one OpenSSL accepted and cryptography does not read)
        print(f'fingerprint = "{fingerprint(der)}"', file=out)
        return _fail(f"{args.host} port {args.port}: certificate not readable: {error}", EXIT_PEER)
    return EXIT_OK


def _context(ca: Path | None, name: str | None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if ca is None:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # shown, not judged
    else:
        context.load_verify_locations(cafile=ca)
        context.check_hostname = name is not None
    return context


def _describe(certificate: x509.Certificate, der: bytes, version: str | None, out: TextIO) -> None:
    start, end = certificate.not_valid_before_utc, certificate.not_valid_after_utc
    now = datetime.datetime.now(datetime.UTC)
    state = "EXPIRED" if now > end else "not yet valid" if now < start else "valid"
    print(f"subject:    {certificate.subject.rfc4514_string()}", file=out)
    print(f"names:      {', '.join(_names(certificate)) or '(none)'}", file=out)
    print(f"issuer:     {certificate.issuer.rfc4514_string()}", file=out)
    print(f"validity:   {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC ({state})", file=out)
    print(f"protocol:   {version or '?'}", file=out)
    print(f'fingerprint = "{fingerprint(der)}"', file=out)


def _names(certificate: x509.Certificate) -> list[str]:
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [f"DNS:{n}" for n in names.get_values_for_type(x509.DNSName)] + [
        f"IP:{a}" for a in names.get_values_for_type(x509.IPAddress)
    ]


# --- selfsigned ---------------------------------------------------------------------------


def _selfsigned(args: argparse.Namespace, out: TextIO) -> int:
    try:
        names = _alternative_names(args.name, args.address)
    except ValueError as error:
        return _fail(str(error), EXIT_USAGE)
    if args.days < 1:
        return _fail(f"--days {args.days}: expected a number of days >= 1", EXIT_USAGE)
    certificate_file, key_file = args.out / f"{args.name}.pem", args.out / f"{args.name}.key"
    existing = [str(f) for f in (certificate_file, key_file) if f.exists()]
    if existing:
        return _fail(f"{', '.join(existing)} exists: not overwritten", EXIT_USAGE)
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = _certificate(args.name, names, key, args.days)
    args.out.mkdir(parents=True, exist_ok=True)
    _write(key_file, _key_pem(key), 0o600)
    _write(certificate_file, certificate.public_bytes(serialization.Encoding.PEM), 0o644)
    print(f"certificate: {certificate_file}", file=out)
    print(f"key:         {key_file}", file=out)
    der = certificate.public_bytes(serialization.Encoding.DER)
    print(f'fingerprint = "{fingerprint(der)}"', file=out)
    return EXIT_OK


def _alternative_names(name: str, addresses: list[str]) -> list[x509.GeneralName]:
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"--name {name!r}: expected a host name")
    found: list[x509.GeneralName] = []
    for text in [name, *addresses]:
        try:
            found.append(x509.IPAddress(ipaddress.ip_address(text)))
        except ValueError:
            if text is not name:
                raise ValueError(f"--address {text!r}: expected an IP address") from None
            found.append(x509.DNSName(text))
    return found


def _certificate(
    name: str, names: list[x509.GeneralName], key: ec.EllipticCurvePrivateKey, days: int
) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    usage = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        # Not a CA: the other site trusts this very certificate (its ca, its pin), and it
        # can sign no other, even in a ca file several peers share.
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
        .sign(key, hashes.SHA256())
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes, mode: int) -> None:
    """``data`` into a new file created with ``mode`` (a key is never readable by others,
    not even for a moment)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(data)


def _fail(message: str, code: int) -> int:
    print(f"x400ctl tls: {message}", file=sys.stderr)
    return code
