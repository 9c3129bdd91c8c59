"""``x400ctl tls``: a lab's self-signed pairs, and the certificate a listener presents.

The walk-through of docs/security.md as a test: each site makes its pair with ``x400ctl
tls selfsigned``, each pins the other's certificate (its ``ca`` the other's file, its
``fingerprint`` the line selfsigned printed), ``x400ctl tls show`` against B's TLS
listener prints that very line, and a message crosses.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from client.x400ctl import main
from config.tls import fingerprint
from p1.mts.precedence import Precedence
from tests.support.sites import Lab, eventually


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    sites = Lab.create(tmp_path / "lab")
    try:
        yield sites
    finally:
        await sites.close()


def selfsigned(capsys: pytest.CaptureFixture[str], name: str, out: Path) -> str:
    """Run ``x400ctl tls selfsigned``; the fingerprint line it printed."""
    assert (
        main(["tls", "selfsigned", "--name", name, "--address", "127.0.0.1", "--out", str(out)])
        == 0
    )
    [line] = [
        line for line in capsys.readouterr().out.splitlines() if line.startswith("fingerprint")
    ]
    return line


def test_selfsigned_writes_a_private_key_and_prints_the_certificates_fingerprint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = selfsigned(capsys, "mta-a.example", tmp_path)
    pem = (tmp_path / "mta-a.example.pem").read_bytes()
    certificate = x509.load_pem_x509_certificate(pem)
    der = certificate.public_bytes(serialization.Encoding.DER)
    assert line == f'fingerprint = "{fingerprint(der)}"'
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["mta-a.example"]
    assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert (tmp_path / "mta-a.example.key").stat().st_mode & 0o777 == 0o600
    # Never over an existing pair.
    assert main(["tls", "selfsigned", "--name", "mta-a.example", "--out", str(tmp_path)]) == 2
    assert "exists: not overwritten" in capsys.readouterr().err
    assert (tmp_path / "mta-a.example.pem").read_bytes() == pem


def test_show_says_why_it_cannot(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    assert main(["tls", "show", "127.0.0.1", str(port), "--timeout", "5"]) == 3
    assert capsys.readouterr().err.startswith(
        f"x400ctl tls: cannot connect to 127.0.0.1 port {port}"
    )


@pytest.mark.slow
async def test_two_sites_pinning_each_others_selfsigned_certificate(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pins = {}
    for site, name in ((lab.a, "mta-a.example"), (lab.b, "mta-b.example")):
        pins[site.name] = selfsigned(capsys, name, tmp_path / site.name)
        site.settings["tls"] = {
            "certificate": str(tmp_path / site.name / f"{name}.pem"),
            "key": str(tmp_path / site.name / f"{name}.key"),
        }
        for listener in site.settings["listeners"]:
            listener["tls"] = "required"
    for site, other, other_name in (
        (lab.a, lab.b, "mta-b.example"),
        (lab.b, lab.a, "mta-a.example"),
    ):
        peer = site.settings["peers"][0]
        peer["tls"] = "required"
        peer["ca"] = str(tmp_path / other.name / f"{other_name}.pem")
        peer["fingerprint"] = pins[other.name].split('"')[1]
    await lab.start()
    b_port = lab.b.running.listening_ports[0]
    assert await asyncio.to_thread(main, ["tls", "show", "127.0.0.1", str(b_port)]) == 0
    shown = capsys.readouterr().out
    assert pins[lab.b.name] in shown.splitlines()
    assert "names:      DNS:mta-b.example, IP:127.0.0.1" in shown
    bob = lab.b.address("Bob")
    await lab.a.send(lab.a.address("Smith"), bob, Precedence.FLASH)
    await eventually(lambda: lab.b.inbox(bob), lambda found: len(found) == 1, what="delivery")
