"""Selectors between real sockets: a daemon's listener that serves only some called TSELs,
and a peer's selectors in the CR, CN and CP its slots send, read back by tshark.

The daemon "aiox" listens on one port serving the called TSELs PP uses for 1988 normal mode
("591" and "x400", pcaps/pp/README.md); a CR for another TSEL gets a DR with reason 3,
"address unknown" (X.224 13.5.3 d), and one rate-limited WARNING.  A second daemon, "mta-a",
has aiox as a peer with TSEL "x400", SSEL and PSEL set on the peer and a calling TSEL on its
slot: its message reaches aiox, and tshark reads those selectors in the CR (cotp.dst-tsap),
CN (ses.called_session_selector) and CP (pres.called_presentation_selector) on the wire.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mta.link import BindRefusedError, LinkClosedError, open_link
from p1.association.connection import AssociationSettings
from p1.association.mtabind import MTABindArgument
from p1.mts.precedence import Precedence
from p1.osi import tpdu as x224
from tests.support import tshark
from tests.support.sites import Identity, ReservedPorts, Site, eventually

AIOX = Identity("aiox", "C=GB;ADMD= ;PRMD=AIOX", "aiox-secret")
MTA_A = Identity("mta-a", "C=GB;ADMD= ;PRMD=SITEA", "a-secret")
ALL = ["override", "flash", "immediate", "priority", "routine", "deferred"]
AS_A = MTABindArgument(initiator_name=MTA_A.name, password=MTA_A.password)


def _site(identity: Identity, them: Identity, listen: int, peer_port: int) -> dict[str, Any]:
    return {
        "name": identity.name,
        "global_domain": identity.domain,
        "password": identity.password,
        "state_dir": "state",
        "control_socket": "control.sock",
        "log_level": "debug",
        "accept_any_recipient": True,
        "listeners": [{"address": "127.0.0.1", "port": listen}],
        "retry": {"initial": "1s", "maximum": "5s"},
        "peers": [
            {
                "name": them.name,
                "host": "127.0.0.1",
                "routes": [them.domain],
                "peer_password": them.password,
                "slots": [{"precedences": ALL, "port": peer_port, "mode": "on-demand"}],
            }
        ],
    }


@dataclasses.dataclass
class Sites:
    aiox: Site
    a: Site
    aiox_port: int
    a_port: int


@pytest.fixture
async def sites(tmp_path: Path) -> AsyncIterator[Sites]:
    """aiox serving TSELs "591" and "x400"; mta-a calling it with selectors; both started."""
    ports = ReservedPorts(2)
    aiox_port, a_port = ports.ports
    aiox = _site(AIOX, MTA_A, aiox_port, a_port)
    aiox["listeners"][0].update(
        tsel=["591", "x400"], ssel=["hex:0001", ""], psel=["hex:00000001", ""]
    )
    a = _site(MTA_A, AIOX, a_port, aiox_port)
    a["peers"][0].update(tsel="x400", ssel="hex:0001", psel="hex:00000001")
    a["peers"][0]["slots"][0]["calling_tsel"] = "mta-a"
    running = Sites(
        Site(AIOX, tmp_path / "aiox", aiox), Site(MTA_A, tmp_path / "a", a), *ports.ports
    )
    await running.aiox.start()
    await running.a.start()
    try:
        yield running
    finally:
        await running.a.stop()
        await running.aiox.stop()
        ports.close()


async def _cr_answer(port: int, called: bytes) -> bytes:
    """Send a CR calling ``called``; the TPDU that answers it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        cr = x224.encode_cr(
            x224.ConnectionRequest(source_reference=0x4242, called_tsap=called, tpdu_size=2048)
        )
        writer.write(bytes((3, 0, 0, 4 + len(cr))) + cr)
        header = await reader.readexactly(4)
        return await reader.readexactly(int.from_bytes(header[2:], "big") - 4)
    finally:
        writer.close()


async def test_a_listener_refuses_a_tsel_it_does_not_serve(
    sites: Sites, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="aiox400.link")
    for _ in range(3):  # the refusals of one minute make one line
        dr = x224.decode_dr(await _cr_answer(sites.aiox_port, b"nochannel"))
        assert (dr.reason, dr.destination_reference) == (x224.REASON_ADDRESS_UNKNOWN, 0x4242)
    settings = AssociationSettings(called_tsap=b"592")
    with pytest.raises(LinkClosedError, match="DR received: address unknown"):
        await open_link("127.0.0.1", sites.aiox_port, AS_A, settings=settings)
    lines = [r for r in caplog.records if "not served on this listener" in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].levelno == logging.WARNING
    assert "called TSEL 'nochannel', calling TSEL none" in lines[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.parametrize(
    ("settings", "why", "line"),
    [
        (
            AssociationSettings(called_tsap=b"x400", called_ssap=b"SS"),
            "refused by the peer's session provider: session selector unknown",
            "called SSEL 'SS', calling SSEL none: not served on this listener; session refused",
        ),
        (
            AssociationSettings(called_tsap=b"x400", called_psap=b"PS", calling_psap=b"me"),
            "refused by the peer's presentation provider: called-presentation-address-unknown",
            "called PSEL 'PS', calling PSEL 'me': not served on this listener; presentation "
            "refused",
        ),
    ],
)
async def test_a_listener_refuses_an_ssel_or_psel_it_does_not_serve(
    sites: Sites,
    caplog: pytest.LogCaptureFixture,
    settings: AssociationSettings,
    why: str,
    line: str,
) -> None:
    caplog.set_level(logging.DEBUG, logger="aiox400.link")
    with pytest.raises(BindRefusedError) as refused:
        await open_link("127.0.0.1", sites.aiox_port, AS_A, settings=settings)
    assert (refused.value.error, str(refused.value)) == (None, why)
    lines = [r for r in caplog.records if "not served on this listener" in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].levelno == logging.WARNING
    assert line in lines[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info]
    served = dataclasses.replace(settings, called_ssap=b"\x00\x01", called_psap=b"\0\0\0\1")
    link, accepted = await open_link("127.0.0.1", sites.aiox_port, AS_A, settings=served)
    assert accepted.result.responder_name == AIOX.name
    await link.release(timeout=10)


async def test_a_listener_serves_its_tsels(sites: Sites) -> None:
    assert x224.tpdu_code(await _cr_answer(sites.aiox_port, b"591")) == x224.CC
    for tsel in (b"591", b"x400"):
        settings = AssociationSettings(called_tsap=tsel)
        link, accepted = await open_link("127.0.0.1", sites.aiox_port, AS_A, settings=settings)
        assert accepted.result.responder_name == AIOX.name
        await link.release(timeout=10)


async def test_a_listener_without_tsel_serves_any(sites: Sites) -> None:
    assert x224.tpdu_code(await _cr_answer(sites.a_port, b"anything")) == x224.CC


@pytest.mark.slow
async def test_a_peers_selectors_are_on_the_wire(sites: Sites, tmp_path: Path) -> None:
    tshark.require_tshark()
    pcap = tmp_path / "selectors.pcap"
    ports = str(sites.aiox_port)
    async with tshark.LoopbackCapture(pcap, ports):
        (identifier,) = await sites.a.send(
            sites.a.address("smith"), sites.aiox.address("bob"), Precedence.FLASH
        )

        async def delivered() -> int:
            return len(await sites.aiox.inbox(sites.aiox.address("bob")))

        await eventually(delivered, lambda n: n == 1, what=f"{identifier} delivered")
    decoded = tshark.decode(pcap, ports)
    assert decoded.problems == ()
    found = tshark.fields(
        pcap,
        ports,
        "cotp.type == 0x0e || ses.type == 13",
        (
            "cotp.dst-tsap-bytes",
            "cotp.src-tsap-bytes",
            "ses.called_session_selector",
            "ses.calling_session_selector",
            "pres.called_presentation_selector",
        ),
    )
    seen = {name: values for layers in found for name, values in layers.items()}
    assert seen["cotp.dst-tsap-bytes"] == ["78343030"]  # "x400"
    assert seen["cotp.src-tsap-bytes"] == ["6d74612d61"]  # "mta-a", the slot's own
    assert seen["ses.called_session_selector"] == ["0001"]
    assert "ses.calling_session_selector" not in seen
    assert seen["pres.called_presentation_selector"] == ["00000001"]
