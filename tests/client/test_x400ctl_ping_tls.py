"""``x400ctl ping`` inside TLS (RFC 1006 inside TLS), against the lab's site B running with
TLS listeners that require client certificates (:func:`tests.mta.tls.pki.secure`).  Site A
is not started: ``--peer MTA-B`` reads its configuration, TLS files included, as
``sudo -u aiox400 x400ctl ping --peer MTA-B`` reads the MTA's.  ``x400ctl.main`` blocks on
its socket, so it runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from client import x400ctl
from config.tls import fingerprint
from tests.client.test_x400ctl_ping_peer import b_port
from tests.mta.tls.pki import A_NAME, B_NAME, Pki, secure
from tests.support.certs import make_ca
from tests.support.sites import A, Lab


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki.create(tmp_path / "pki")


@pytest.fixture
async def lab(tmp_path: Path, pki: Pki) -> AsyncIterator[Lab]:
    """B running, every listener in TLS; A configured in TLS towards it, not running."""
    lab = Lab.create(tmp_path)
    secure(lab, pki)
    await lab.b.start()
    try:
        yield lab
    finally:
        await lab.close()


async def ping(lab: Lab, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``x400ctl -c <A's file> ping ARGV...``: exit code, output, errors."""
    command = ["-c", str(lab.a.write()), "ping", *argv]
    code = await asyncio.to_thread(x400ctl.main, command)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def as_a(tmp_path: Path) -> list[str]:
    """Our MTA name and password file, as site A's (for a ping without --peer)."""
    secret = tmp_path / "a.password"
    secret.write_text(A.password + "\n", encoding="ascii")
    secret.chmod(0o600)
    return ["--mta-name", A.name, "--password-file", str(secret)]


@pytest.mark.slow
async def test_ping_peer_runs_tls_as_the_configuration_says(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await ping(lab, capsys, "--peer", "MTA-B", "--peer-name", "MTA-B")
    assert (code, err) == (x400ctl.EXIT_OK, "")
    port = b_port(lab, "override")
    assert out.startswith(f"MTA-B (127.0.0.1 port {port}): bound to MTA-B in ")
    # B accepted the bind only with A's certificate, which it checks against MTA-A.
    assert out.endswith(" ms (DSCP CS3, TLSv1.3), released\n")


@pytest.mark.slow
async def test_ping_peer_with_the_wrong_pin_fails_after_the_handshake(
    lab: Lab, pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = fingerprint(pki.a.der)  # A's own certificate, not B's
    code, out, err = await ping(lab, capsys, "--peer", "MTA-B", "--fingerprint", wrong)
    port = b_port(lab, "override")
    assert (code, out) == (x400ctl.EXIT_FAILED, "")
    assert err == (
        f"x400ctl ping: MTA-B (127.0.0.1 port {port}): TLS: certificate fingerprint "
        f"{fingerprint(pki.b.der)} is not the pinned one\n"
    )
    # The pin configured for the peer is checked the same way.
    lab.a.settings["peers"][0]["fingerprint"] = wrong
    code, _, err = await ping(lab, capsys, "--peer", "MTA-B")
    assert code == x400ctl.EXIT_FAILED
    assert err.endswith("is not the pinned one\n")
    # ... and the right one passes.
    lab.a.settings["peers"][0]["fingerprint"] = fingerprint(pki.b.der)
    code, out, _ = await ping(lab, capsys, "--peer", "MTA-B")
    assert code == x400ctl.EXIT_OK, out


@pytest.mark.slow
async def test_ping_host_with_tls_options_and_a_certificate_that_fails(
    lab: Lab, pki: Pki, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    port = str(b_port(lab, "routine"))
    files = pki.files("a")
    ours = ["--certificate", files["certificate"], "--key", files["key"]]
    host = ["127.0.0.1", port, *as_a(tmp_path), "--tls", *ours]

    code, out, err = await ping(
        lab, capsys, *host, "--ca", files["ca"], "--certificate-name", B_NAME
    )
    assert (code, err) == (x400ctl.EXIT_OK, "")
    assert out.endswith(" ms (DSCP CS0, TLSv1.3), released\n")

    # Issued by the CA, but not for this name.
    code, out, err = await ping(
        lab, capsys, *host, "--ca", files["ca"], "--certificate-name", A_NAME
    )
    assert (code, out) == (x400ctl.EXIT_FAILED, "")
    assert err.startswith(
        f"x400ctl ping: 127.0.0.1 port {port}: TLS handshake failed: certificate refused: "
    )
    assert "Hostname mismatch" in err and "Traceback" not in err

    # Issued by a CA we do not trust (B sends the lab CA too: OpenSSL completes its
    # chain from the CAs it trusts).
    other = tmp_path / "other-ca.pem"
    other.write_bytes(make_ca("another CA").pem)
    code, out, err = await ping(lab, capsys, *host, "--ca", str(other))
    assert (code, out) == (x400ctl.EXIT_FAILED, "")
    assert err == (
        f"x400ctl ping: 127.0.0.1 port {port}: TLS handshake failed: certificate refused: "
        "self-signed certificate in certificate chain\n"
    )


@pytest.mark.slow
async def test_a_plaintext_ping_to_a_tls_listener_says_why_it_may_have_failed(
    lab: Lab, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    port = b_port(lab, "routine")
    code, out, err = await ping(lab, capsys, "127.0.0.1", str(port), *as_a(tmp_path))
    assert (code, out) == (x400ctl.EXIT_FAILED, "")
    assert err.startswith(f"x400ctl ping: 127.0.0.1 port {port}: the peer ")
    assert err.endswith(
        "(a listener that requires TLS closes a plaintext connection so: try --tls)\n"
    )


async def test_tls_options_without_tls_or_with_unusable_files_are_usage_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pki: Pki
) -> None:
    host = ["ping", "192.0.2.1", *as_a(tmp_path)]
    assert x400ctl.main([*host, "--ca", str(pki.directory / "ca.pem")]) == x400ctl.EXIT_USAGE
    assert capsys.readouterr().err == (
        "x400ctl ping: --ca is for TLS, which this ping does not run: add --tls\n"
    )
    missing = tmp_path / "missing.pem"
    assert x400ctl.main([*host, "--tls", "--ca", str(missing)]) == x400ctl.EXIT_USAGE
    assert capsys.readouterr().err == (
        f"x400ctl ping: --ca {missing}: expected an existing file ({missing} does not exist)\n"
    )
    certificate = str(pki.directory / "a.pem")
    assert x400ctl.main([*host, "--tls", "--certificate", certificate]) == x400ctl.EXIT_USAGE
    assert capsys.readouterr().err.startswith("x400ctl ping: --key: expected the PEM file")
    assert x400ctl.main([*host, "--tls", "--fingerprint", "AB:CD"]) == x400ctl.EXIT_USAGE
    assert "--fingerprint: 'AB:CD': expected a SHA-256" in capsys.readouterr().err
