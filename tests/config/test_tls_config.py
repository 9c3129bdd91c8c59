"""TLS keys: ``tls``, the certificate, key and CA files (each its own or ``[tls]``'s), a
peer's ``fingerprint``, ``certificate_name`` and ``addresses``; every bad file or value
named at load with its file, key and value."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import ConfigError, MtaConfig, load_config
from config.schema import TlsMode
from config.tls import fingerprint
from tests.support.certs import issue, make_ca

HEAD = 'name = "MTA-A"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEA"\naccept_any_recipient = true\n'
ALL = '"override", "flash", "immediate", "priority", "routine", "deferred"'
PEER = '[[peers]]\nname = "MTA-B"\nhost = "mta-b.example"\n'
SLOT = f"[[peers.slots]]\nprecedences = [{ALL}]\nport = 3782\n"
LISTENER = '[[listeners]]\naddress = "127.0.0.1"\nport = 3782\ntls = "required"\n'
FILES = '[tls]\ncertificate = "a.pem"\nkey = "a.key"\nca = "ca.pem"\n'


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    ca = make_ca("CA")
    (tmp_path / "ca.pem").write_bytes(ca.pem)
    issue(ca, "mta-a.example").write(tmp_path, "a")
    issue(ca, "mta-a.example").write(tmp_path, "other")
    return tmp_path


def load(directory: Path, text: str) -> MtaConfig:
    path = directory / "mta.toml"
    path.write_text(HEAD + text, encoding="utf-8")
    return load_config(path)


def error(directory: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(directory, text)
    return str(caught.value).removeprefix(str(directory / "mta.toml") + ": ")


def test_a_tls_listener_and_peer_take_the_tls_sections_files(directory: Path) -> None:
    config = load(directory, FILES + LISTENER + PEER + 'tls = "required"\n' + SLOT)
    [listener], [peer] = config.listeners, config.peers
    assert listener.tls is TlsMode.REQUIRED and peer.tls is TlsMode.REQUIRED
    assert listener.tls_files.certificate == directory / "a.pem"
    assert peer.tls_files.ca == directory / "ca.pem"
    assert peer.slots[0].tls is TlsMode.REQUIRED  # the peer's, unless the slot says
    assert peer.tls_name == "mta-b.example"  # its host, unless certificate_name says


def test_off_by_default(directory: Path) -> None:
    config = load(directory, LISTENER.replace('tls = "required"\n', "") + PEER + SLOT)
    assert config.listeners[0].tls is TlsMode.OFF
    assert config.peers[0].tls is TlsMode.OFF and config.peers[0].slots[0].tls is TlsMode.OFF


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            LISTENER,
            "listeners[0].certificate is missing: expected a PEM certificate file (here or "
            "in [tls]) (tls is required)",
        ),
        (
            FILES.replace("a.key", "other.key") + LISTENER,
            'listeners[0].certificate = "{d}/a.pem": expected a PEM certificate whose private '
            "key is in {d}/other.key (key values mismatch) (tls is required)",
        ),
        (
            FILES.replace('"a.pem"', '"missing.pem"') + LISTENER,
            'listeners[0].certificate = "{d}/missing.pem": expected an existing file '
            "({d}/missing.pem does not exist) (tls is required)",
        ),
        (
            FILES.replace('ca = "ca.pem"', 'ca = "a.key"') + PEER + 'tls = "required"\n' + SLOT,
            'peers[0].ca = "{d}/a.key": expected a file of PEM certificates (no certificate '
            "or crl found) (tls is required)",
        ),
        (
            PEER + 'tls = "required"\n' + SLOT,
            "peers[0].ca is missing: expected a PEM file of trusted certificates (here or in "
            "[tls]) (tls is required)",
        ),
        (
            FILES.replace('ca = "ca.pem"\n', "") + LISTENER,
            "listeners[0].ca is missing: expected a PEM file of the CAs that issue peers' "
            "certificates (or a TLS peer's ca), since client_certificate is required",
        ),
        (
            PEER + 'fingerprint = "AB:CD"\n' + SLOT,
            'peers[0].fingerprint = "AB:CD": expected a SHA-256 certificate fingerprint',
        ),
        (
            PEER + 'addresses = ["10.0.0.0/33"]\n' + SLOT,
            'peers[0].addresses[0] = "10.0.0.0/33": expected a host name, an IP address or '
            'an IP network such as "192.0.2.0/24"',
        ),
        (
            PEER + 'tls = "yes"\n' + SLOT,
            'peers[0].tls = "yes": expected one of "required", "off"',
        ),
    ],
    ids=[
        "no-certificate",
        "key-of-another",
        "missing-file",
        "ca-not-pem",
        "peer-without-ca",
        "listener-without-ca",
        "short-fingerprint",
        "bad-network",
        "bad-mode",
    ],
)
def test_bad_tls_settings_name_the_file_key_and_value(
    directory: Path, text: str, expected: str
) -> None:
    assert error(directory, text).startswith(expected.format(d=directory))


def test_a_pinned_peer_needs_no_ca_and_its_fingerprint_is_normalised(directory: Path) -> None:
    der = issue(make_ca("B's CA"), "mta-b.example").der
    written = fingerprint(der).replace(":", "").lower()
    config = load(directory, PEER + f'tls = "required"\nfingerprint = "{written}"\n' + SLOT)
    assert config.peers[0].fingerprint == fingerprint(der)
    assert config.peers[0].tls_files.ca is None


def test_addresses_are_written_as_the_standard_library_writes_them(directory: Path) -> None:
    text = PEER + 'addresses = ["10.1.2.3/8", "2001:DB8::1", "mta-b.example"]\n' + SLOT
    assert load(directory, text).peers[0].addresses == (
        "10.0.0.0/8",
        "2001:db8::1",
        "mta-b.example",
    )
