"""What a TLS listener refuses, and how it says so, over real loopback sockets to site B.

B's first listener requires TLS with client certificates, its second is plain TCP; B
knows MTA-A as a TLS peer proven by the lab CA and the name ``mta-a.lab.test``.  Each
refusal is one rate-limited line, never a traceback: a plaintext client, garbage for a
handshake, a client that never handshakes (cut at ``bind_timeout``), a certificate of
another CA or an expired one, a certificate of the right CA for another name, MTA-A's
bind made without TLS.  Outbound, an initiator refuses a listener whose certificate is
not the pinned one or does not carry the expected name.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from config.tls import fingerprint
from mta.link import BindRefusedError, LinkError, open_link
from mta.net import ClientTls, TlsError
from p1.association.connection import BindAccepted
from p1.association.mtabind import MTABindError
from tests.mta.inbound.test_limits import A_BINDS, Initiator, messages
from tests.mta.tls.pki import A_NAME, B_NAME, Pki, secure
from tests.support.certs import Credential, issue, make_ca
from tests.support.sites import DEADLINE, Lab

TLS, PLAIN = 0, 1  # B's listeners


async def start_b(lab: Lab, pki: Pki, **limits: object) -> tuple[int, int]:
    """Site B alone, its first listener in TLS, its second plain; their ports."""
    secure(lab, pki)
    lab.b.settings["listeners"][PLAIN]["tls"] = "off"
    lab.b.settings["limits"] = {"failed_bind_delay": "0s", **limits}
    await lab.b.start()
    ports = lab.b.running.listening_ports
    return ports[TLS], ports[PLAIN]


def client_tls(pki: Pki, credential: Credential | None, *, name: str = B_NAME) -> ClientTls:
    """How an initiator presenting ``credential`` (None: nothing) reaches B."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cafile=pki.directory / "ca.pem")
    if credential is not None:
        certificate, key = credential.write(pki.directory / "clients", f"c{id(credential)}")
        context.load_cert_chain(certificate, key)
    return ClientTls(context, name, None)


async def bind_over_tls(port: int, tls: ClientTls) -> BindAccepted:
    link, accepted = await open_link("127.0.0.1", port, A_BINDS, tls=tls)
    await link.release(timeout=DEADLINE)
    return accepted


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki.create(tmp_path / "pki")


async def test_mta_a_with_its_certificate_binds(lab: Lab, pki: Pki) -> None:
    port, _ = await start_b(lab, pki)
    accepted = await bind_over_tls(port, client_tls(pki, pki.a))
    assert accepted.result.responder_name == lab.b.name


async def test_plaintext_to_a_tls_listener_is_closed_with_one_line(
    lab: Lab, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    port, _ = await start_b(lab, pki)
    for _ in range(3):
        peer = await Initiator.connect(port)
        try:
            outcome = await peer.bind(A_BINDS)
        finally:
            peer.close()
        assert not isinstance(outcome, BindAccepted)
    [line] = messages(caplog, "TLS handshake failed")
    assert line.endswith("not a TLS handshake (a plaintext client?)")
    assert not [r for r in caplog.records if r.exc_info]


async def test_garbage_for_a_handshake_is_one_line(
    lab: Lab, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    port, _ = await start_b(lab, pki)
    # A TLS record header (handshake, TLS 1.0) followed by what is no ClientHello.
    garbage = b"\x16\x03\x01\x00\x10" + b"\xff" * 16
    for _ in range(2):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(garbage)
        assert await asyncio.wait_for(reader.read(), DEADLINE) == b""  # closed by B
        writer.close()
    [line] = messages(caplog, "TLS handshake failed")
    assert line.startswith("127.0.0.1:") and line.endswith(
        "TLS handshake failed: unexpected message"
    )
    assert not [r for r in caplog.records if r.exc_info]


async def test_a_client_that_never_handshakes_is_cut_at_bind_timeout(
    lab: Lab, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    port, _ = await start_b(lab, pki, bind_timeout="1s")
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        assert await asyncio.wait_for(reader.read(), DEADLINE) == b""  # closed by B
    finally:
        writer.close()
    [line] = messages(caplog, "no TLS handshake within")
    assert line.endswith("no TLS handshake within 1 s")


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda pki: issue(make_ca("another CA"), A_NAME), "unable to get local issuer"),
        (lambda pki: issue(pki.ca, A_NAME, expired=True), "certificate has expired"),
    ],
    ids=["another-ca", "expired"],
)
async def test_a_certificate_the_listener_does_not_trust_ends_the_handshake(
    lab: Lab, pki: Pki, caplog: pytest.LogCaptureFixture, make: object, said: str
) -> None:
    port, _ = await start_b(lab, pki)
    credential = make(pki)  # type: ignore[operator]
    with pytest.raises((OSError, LinkError)):
        await bind_over_tls(port, client_tls(pki, credential))
    [line] = messages(caplog, "TLS handshake failed")
    assert f"TLS handshake failed: certificate refused: {said}" in line
    assert not [r for r in caplog.records if r.exc_info]


async def test_a_certificate_for_another_name_cannot_bind_as_mta_a(
    lab: Lab, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    port, _ = await start_b(lab, pki)
    intruder = issue(pki.ca, "intruder.lab.test")
    with pytest.raises(BindRefusedError) as refused:
        await bind_over_tls(port, client_tls(pki, intruder))
    assert refused.value.error is MTABindError.AUTHENTICATION_ERROR
    [line] = messages(caplog, "bind refused: certificate for")
    assert line == (
        f"bind refused: certificate for intruder.lab.test does not carry {A_NAME} from MTA-A"
    )


async def test_mta_a_binding_without_tls_is_refused(
    lab: Lab, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    _, plain = await start_b(lab, pki)
    with pytest.raises(BindRefusedError) as refused:
        await open_link("127.0.0.1", plain, A_BINDS)
    assert refused.value.error is MTABindError.AUTHENTICATION_ERROR
    assert messages(caplog, "bind refused: bind without TLS (tls is required) from MTA-A")


async def test_a_pinned_peer_must_present_that_very_certificate(
    lab: Lab, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    secure(lab, pki, pin=True)  # (start_b keeps the pins)
    port, _ = await start_b(lab, pki)
    assert lab.b.running.config.peers[0].fingerprint == fingerprint(pki.a.der)
    await bind_over_tls(port, client_tls(pki, pki.a))
    twin = issue(pki.ca, A_NAME, sans=(A_NAME, "127.0.0.1"))  # same CA, same name
    with pytest.raises(BindRefusedError):
        await bind_over_tls(port, client_tls(pki, twin))
    [line] = messages(caplog, "is not the pinned one")
    assert line.startswith(f"bind refused: certificate {fingerprint(twin.der)} is not")


async def test_an_initiator_refuses_a_listener_that_is_not_the_pinned_one(
    lab: Lab, pki: Pki
) -> None:
    port, _ = await start_b(lab, pki)
    tls = client_tls(pki, pki.a)
    wrong = ClientTls(tls.context, B_NAME, fingerprint(pki.a.der))  # A's, not B's
    with pytest.raises(TlsError, match="is not the pinned one"):
        await open_link("127.0.0.1", port, A_BINDS, tls=wrong)
    right = ClientTls(tls.context, B_NAME, fingerprint(pki.b.der))
    await bind_over_tls(port, right)


async def test_an_initiator_refuses_a_listener_without_the_expected_name(
    lab: Lab, pki: Pki
) -> None:
    port, _ = await start_b(lab, pki)
    with pytest.raises(TlsError, match="certificate refused: Hostname mismatch"):
        await open_link("127.0.0.1", port, A_BINDS, tls=client_tls(pki, pki.a, name="mta-c"))


async def test_a_stranger_stalling_handshakes_holds_only_its_unbound_places(
    lab: Lab, pki: Pki
) -> None:
    """Connections that never complete a handshake are unbound ones: a stranger's next
    takes the place of its own oldest (long before bind_timeout), and MTA-A still binds."""
    port, _ = await start_b(lab, pki, max_unbound_per_address=2, bind_timeout="5m")
    stalled = [
        await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.5", 0))
        for _ in range(3)
    ]
    try:
        oldest, _ = stalled[0]
        assert await asyncio.wait_for(oldest.read(), DEADLINE) == b""  # gave way to the third
        await bind_over_tls(port, client_tls(pki, pki.a))
    finally:
        for _, writer in stalled:
            writer.close()


async def test_a_peer_whose_slot_requires_tls_binds_in_tls_only(
    lab: Lab, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    secure(lab, pki)
    peer = lab.b.settings["peers"][0]
    peer["tls"] = "off"
    peer["slots"][0]["tls"] = "required"  # B reaches A in TLS on this slot alone
    lab.b.settings["listeners"][PLAIN]["tls"] = "off"
    lab.b.settings["limits"] = {"failed_bind_delay": "0s"}
    await lab.b.start()
    tls_port, plain = lab.b.running.listening_ports[TLS], lab.b.running.listening_ports[PLAIN]
    with pytest.raises(BindRefusedError):
        await open_link("127.0.0.1", plain, A_BINDS)
    assert messages(caplog, "bind refused: bind without TLS (tls is required) from MTA-A")
    await bind_over_tls(tls_port, client_tls(pki, pki.a))
