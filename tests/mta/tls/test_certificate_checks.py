"""Which peer a client certificate proves, after the handshake accepted its chain
(:func:`mta.net.certificate_mismatch`): the name the peer must carry, issued by a CA in
that peer's own ``ca`` file, or that very certificate in it.  A certificate that is no CA
vouches for nothing, even when it sits in the file (several peers' self-signed
certificates gathered in one bundle)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

from config.schema import Peer
from mta.net import certificate_mismatch
from tests.support.certs import Credential, issue, make_ca

A_NAME = "mta-a.example"


def peer_trusting(tmp_path: Path, *trusted: Credential) -> Peer:
    ca = tmp_path / "ca.pem"
    ca.write_bytes(b"".join(c.pem for c in trusted))
    files = SimpleNamespace(ca=ca)
    return cast(Peer, SimpleNamespace(fingerprint=None, tls_name=A_NAME, tls_files=files))


def test_a_certificate_of_the_peers_ca_with_its_name_is_the_peer(tmp_path: Path) -> None:
    ca = make_ca("Site A CA")
    assert certificate_mismatch(peer_trusting(tmp_path, ca), issue(ca, A_NAME).der) is None


def test_another_ca_does_not_vouch_for_the_peer(tmp_path: Path) -> None:
    ours, other = make_ca("Site A CA"), make_ca("Site C CA")
    why = certificate_mismatch(peer_trusting(tmp_path, ours), issue(other, A_NAME).der)
    assert why is not None and why.startswith("certificate not issued by a CA in")


def test_a_certificate_that_is_no_ca_signs_nothing_even_in_the_file(tmp_path: Path) -> None:
    # Site C's own certificate sits in the bundle beside A's; C signs one for A's name.
    ca = make_ca("Lab CA")
    site_a, site_c = issue(ca, A_NAME), issue(ca, "mta-c.example")
    forged = issue(site_c, A_NAME)
    why = certificate_mismatch(peer_trusting(tmp_path, site_a, site_c), forged.der)
    assert why is not None and why.startswith("certificate not issued by a CA in")
    assert certificate_mismatch(peer_trusting(tmp_path, site_a, site_c), site_a.der) is None


def test_an_unreadable_certificate_is_a_refusal_not_a_fault(tmp_path: Path) -> None:
    ca = make_ca("Site A CA")
    why = certificate_mismatch(peer_trusting(tmp_path, ca), b"\x30\x03\x02\x01\x00")
    assert why is not None and why.startswith("certificate not readable")
