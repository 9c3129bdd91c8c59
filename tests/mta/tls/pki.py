"""The lab's two sites in TLS: a CA, a certificate for each MTA, and the settings that
make every listener and slot run RFC 1006 inside TLS with mutual authentication.

Public API::

    Pki.create(directory) -> Pki(directory, ca, a, b)   (a, b: the sites' Credentials)
    Pki.files(stem) -> {"certificate", "key", "ca"}   a site's files ("a" or "b")
    secure(lab, pki, *, pin=False)   both sites' settings: TLS listeners, TLS peers
    A_NAME, B_NAME   the names the sites' certificates carry
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from config.tls import fingerprint
from tests.support.certs import Credential, issue, make_ca
from tests.support.sites import Lab, Site

A_NAME = "mta-a.lab.test"
B_NAME = "mta-b.lab.test"


@dataclass
class Pki:
    directory: Path
    ca: Credential
    a: Credential
    b: Credential

    @classmethod
    def create(cls, directory: Path) -> Pki:
        ca = make_ca("lab CA")
        pki = cls(
            directory,
            ca,
            issue(ca, A_NAME, sans=(A_NAME, "127.0.0.1")),
            issue(ca, B_NAME, sans=(B_NAME, "127.0.0.1")),
        )
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "ca.pem").write_bytes(ca.pem)
        pki.a.write(directory, "a")
        pki.b.write(directory, "b")
        return pki

    def files(self, stem: str) -> dict[str, str]:
        return {
            "certificate": str(self.directory / f"{stem}.pem"),
            "key": str(self.directory / f"{stem}.key"),
            "ca": str(self.directory / "ca.pem"),
        }


def _secure_site(site: Site, pki: Pki, me: str, their_name: str) -> None:
    settings = site.settings
    settings["tls"] = pki.files(me)
    for listener in settings["listeners"]:
        listener["tls"] = "required"
    for peer in settings["peers"]:
        peer["tls"] = "required"
        peer["certificate_name"] = their_name


def secure(lab: Lab, pki: Pki, *, pin: bool = False) -> None:
    """Every listener and slot of both sites in TLS; each peer proven by CA and name, or
    (``pin``) by its certificate's fingerprint."""
    _secure_site(lab.a, pki, "a", B_NAME)
    _secure_site(lab.b, pki, "b", A_NAME)
    if pin:
        lab.a.settings["peers"][0]["fingerprint"] = fingerprint(pki.b.der)
        lab.b.settings["peers"][0]["fingerprint"] = fingerprint(pki.a.der)
