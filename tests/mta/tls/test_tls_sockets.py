"""TLS connections as sockets: the DSCP mark stays on them, SSLKEYLOGFILE is honoured only
when set, and a reload (SIGHUP) makes a listener present the certificate now on disk."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from config.tls import fingerprint
from mta import net
from mta.link import Link
from mta.net import ClientTls
from mta.operator.reload import Reloader
from p1.association.connection import P1Association
from p1.osi import Role
from tests.mta.tls.pki import B_NAME, Pki
from tests.mta.tls.test_refusals import bind_over_tls, client_tls, start_b
from tests.support.certs import issue
from tests.support.sites import Lab

EF, AF41 = 46, 34


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki.create(tmp_path / "pki")


async def test_both_ends_of_a_tls_connection_keep_their_dscp(pki: Pki) -> None:
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pki.directory / "b.pem", pki.directory / "b.key")
    accepted: asyncio.Queue[tuple[int, str | None]] = asyncio.Queue()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await writer.start_tls(server)
        sock = writer.get_extra_info("socket")
        await accepted.put((net.socket_dscp(sock), writer.get_extra_info("ssl_object").version()))
        await reader.read()
        writer.close()

    listener = await net.start_marked_server(handler, "127.0.0.1", 0, dscp=AF41)
    async with listener:
        tls = ClientTls(client_tls(pki, None).context, B_NAME, fingerprint(pki.b.der))
        _, writer = await net.open_marked_connection(
            "127.0.0.1", net.bound_port(listener), dscp=EF, timeout=10, tls=tls
        )
        try:
            assert writer.get_extra_info("ssl_object").version() == "TLSv1.3"
            assert net.socket_dscp(writer.get_extra_info("socket")) == EF
            assert await accepted.get() == (AF41, "TLSv1.3")
        finally:
            writer.close()


@pytest.mark.parametrize("keylog", [True, False], ids=["SSLKEYLOGFILE", "unset"])
async def test_session_keys_are_written_only_where_sslkeylogfile_says(
    lab: Lab, pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keylog: bool
) -> None:
    path = tmp_path / "keys.log"
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)
    if keylog:
        monkeypatch.setenv("SSLKEYLOGFILE", str(path))
    port, _ = await start_b(lab, pki)
    await bind_over_tls(port, client_tls(pki, pki.a))
    if keylog:
        labels = {line.split()[0] for line in path.read_text().splitlines() if line.strip()}
        assert {"CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0"} <= labels
        assert path.stat().st_mode & 0o777 == 0o600  # the secrets are the traffic's
    else:
        assert not path.exists()


async def _presented(port: int, pki: Pki) -> str:
    """The fingerprint of the certificate B's TLS listener presents now."""
    tls = ClientTls(client_tls(pki, pki.a).context, B_NAME, None)
    _, writer = await net.open_marked_connection("127.0.0.1", port, dscp=0, timeout=10, tls=tls)
    try:
        return fingerprint(writer.get_extra_info("ssl_object").getpeercert(binary_form=True))
    finally:
        writer.close()


async def test_a_reload_presents_the_certificate_now_on_disk(lab: Lab, pki: Pki) -> None:
    port, _ = await start_b(lab, pki)
    assert await _presented(port, pki) == fingerprint(pki.b.der)
    renewed = issue(pki.ca, B_NAME, sans=(B_NAME, "127.0.0.1"))
    renewed.write(pki.directory, "b")  # the same files, new contents
    assert await _presented(port, pki) == fingerprint(pki.b.der)  # until the reload
    Reloader(lab.b.running)()
    assert await _presented(port, pki) == fingerprint(renewed.der)


@pytest.mark.slow
async def test_closing_does_not_wait_for_a_tls_peer_that_never_answers(pki: Pki) -> None:
    """A peer that stops reading once the handshake is done never answers our
    close_notify: the link is cut after a few seconds, not the standard library's 30."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pki.directory / "b.pem", pki.directory / "b.key")
    handshaken = asyncio.Event()

    async def deaf(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await writer.start_tls(server)
        transport = writer.transport
        assert isinstance(transport, asyncio.ReadTransport)
        transport.pause_reading()
        handshaken.set()
        await asyncio.Event().wait()  # until the server closes

    listener = await net.start_marked_server(deaf, "127.0.0.1", 0, dscp=0)
    async with listener:
        tls = ClientTls(client_tls(pki, None).context, B_NAME, None)
        reader, writer = await net.open_marked_connection(
            "127.0.0.1", net.bound_port(listener), dscp=0, timeout=10, tls=tls
        )
        link = Link(P1Association(Role.INITIATOR), reader, writer, peer="deaf")
        await handshaken.wait()
        loop = asyncio.get_running_loop()
        started = loop.time()
        await link.close()
        assert loop.time() - started < 20  # 30 s without the bound
