"""A transfer cut off and resumed (X.228 recovery) on the wire, refereed by tshark.

A responder listens on loopback, keeping what a lost connection leaves of a transfer; an
initiator proposing checkpoints of 4 x 1024 octets reaches it through a proxy that resets
its first connection after 100,000 octets.  The next connection recovers it (RT-OPEN
recover naming the first connection's session connection identifier) and resumes the
transfer (S-ACTIVITY-RESUME), and the message arrives once.  dumpcap captures the
responder's side of both connections and tshark reads them: the RTORQ's and the RTOAC's
recover alternative naming the first connection, and the AR SPDU with its linking
information (that connection's references, the old activity identifier, the checkpoint's
serial number).  tshark joins an RT-TRANSFER's pieces only within one association, so
it cannot read the resumed transfer's rest as an EXTERNAL: that is the one problem it
reports, at the resumed activity's end.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
import pytest_asyncio

from benchmarks import samples
from mta import link as links
from mta import net
from p1.association.connection import AssociationSettings, BindRequested, RecoveryRequested
from p1.association.mtabind import MTABindError, MTABindResult
from p1.mts.envelope import encode_mts_apdu
from p1.mts.precedence import Precedence
from p1.osi.rtse_recovery import (
    PartialTransfer,
    PartialTransfers,
    ResumePoint,
    Resumption,
    SessionConnectionId,
)
from tests.support import tshark
from tests.support.proxy import CuttingProxy

pytestmark = pytest.mark.slow  # dumpcap, then tshark

LOOPBACK = "127.0.0.1"
SETTINGS = AssociationSettings(checkpoint_size=4, window_size=3)
TIMEOUT = tshark.TIMEOUT
ACTIVITY_RESUME = 29  # X.225 SPDU identifier of AR (ses.type)


@dataclass
class Keeping(tshark.Store):
    """tshark's Store, keeping what lost connections leave (an InboundRecovery)."""

    kept: PartialTransfers = field(
        default_factory=lambda: PartialTransfers(max_count=2, max_octets=1 << 24, keep_for=60.0)
    )
    bound: str | None = None

    async def on_bind(self, event: BindRequested) -> MTABindResult | MTABindError:
        answer = await super().on_bind(event)
        self.bound = "mta-a" if isinstance(answer, MTABindResult) else None
        return answer

    async def on_recover(self, event: RecoveryRequested) -> Resumption | None:
        now = asyncio.get_running_loop().time()
        self.bound = self.kept.owner(event.identifier, now)
        return self.resumption()

    def resumption(self) -> Resumption | None:
        return None if self.bound is None else _Kept(self.kept, self.bound)

    def on_interrupted(self, partial: PartialTransfer) -> None:
        if self.bound is not None:
            self.kept.keep(self.bound, partial, asyncio.get_running_loop().time())

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.served.append(task)
        await links.serve_link(reader, writer, self, recovery=self)


@dataclass(frozen=True)
class _Kept:
    kept: PartialTransfers
    peer: str

    def take(self, identifier: SessionConnectionId, activity_id: bytes) -> PartialTransfer | None:
        return self.kept.take(self.peer, identifier, activity_id, asyncio.get_running_loop().time())


@dataclass(frozen=True)
class Run:
    apdu: bytes
    stored: list[bytes]
    point: ResumePoint
    ports: str
    pcap: Path


async def cut_and_resumed(port: int, apdu: bytes) -> ResumePoint:
    """The transfer of ``apdu`` through a proxy that cuts the first connection, then
    resumed on a connection recovering it; the first connection's identifier."""
    proxy = CuttingProxy(upstream=port, cuts=(100_000,))
    proxy_port = await proxy.start()
    first = links.session_identifier(datetime.now(UTC))
    try:
        link, _ = await links.open_link(
            LOOPBACK, proxy_port, tshark.ARGUMENT, settings=SETTINGS, identifier=first
        )
        with pytest.raises(links.LinkClosedError):
            await link.transfer(apdu, timeout=TIMEOUT)
        await link.close()
        point = link.association.resume_point
        assert point is not None and point.identifier == first
        second = links.session_identifier(datetime.now(UTC))
        link, accepted = await links.open_link(
            LOOPBACK,
            proxy_port,
            tshark.ARGUMENT,
            settings=SETTINGS,
            identifier=second,
            recover=first,
        )
        assert accepted.recovered
        await link.resume(apdu, point, timeout=TIMEOUT)
        await link.release(timeout=TIMEOUT)
    finally:
        await proxy.close()
    return point


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tshark.require_tshark()
    pcap = tmp_path_factory.mktemp("recovery") / "recovery.pcap"
    store = Keeping()
    server = await net.start_marked_server(store.serve, LOOPBACK, 0, dscp=0)
    port = net.bound_port(server)
    apdu = encode_mts_apdu(samples.message(200_000, Precedence.PRIORITY))
    try:
        async with tshark.LoopbackCapture(pcap, str(port)), asyncio.timeout(TIMEOUT):
            point = await cut_and_resumed(port, apdu)
            await asyncio.gather(*store.served)
    finally:
        server.close()
        await server.wait_closed()
    return Run(apdu=apdu, stored=store.stored, point=point, ports=str(port), pcap=pcap)


def test_the_message_arrives_once_whole(run: Run) -> None:
    assert run.stored == [run.apdu]


def test_tshark_finds_no_decode_problem_but_the_resumed_transfers_rest(run: Run) -> None:
    (resume,) = tshark.matching(run.pcap, run.ports, f"ses.type == {ACTIVITY_RESUME}")
    problems = tshark.decode(run.pcap, run.ports).problems
    assert [(p.protocol, p.number > resume) for p in problems] == [("RTSE", True)]


def test_tshark_reads_the_recovery_naming_the_first_connection(run: Run) -> None:
    # The recovering RTORQ, and the RTOAC accepting it.
    found = tshark.fields(run.pcap, run.ports, "rtse.recover_element", ["rtse.octetString"])
    reference = run.point.identifier.calling_reference.hex()
    assert [layers["rtse.octetString"] for layers in found] == [[reference], [reference]]


def test_tshark_reads_the_resumption_and_its_linking_information(run: Run) -> None:
    names = ["ses.calling_ss_user_reference", "ses.activity_identifier", "ses.serial_number"]
    (found,) = tshark.fields(run.pcap, run.ports, f"ses.type == {ACTIVITY_RESUME}", names)
    point = run.point
    assert found["ses.calling_ss_user_reference"] == [point.identifier.calling_reference.hex()]
    # The old activity identifier (linking information), then the new one.
    assert found["ses.activity_identifier"] == [point.activity_id.hex(), "020101"]
    # The AR's serial number first (the checkpoints that follow it share its frame).
    assert found["ses.serial_number"][0] == str(point.serial)
