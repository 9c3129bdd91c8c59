"""Our whole P1 stack on the wire, refereed by tshark.

Two responders listen on loopback, one marked CS3 and one CS1 (RFC 2474), each accepting the
bind mta-a/a-pw as mta-b/b-pw and storing what it receives.  One link to each, proposing
checkpoints of 16 x 1024 octets and a window of 3 (X.228 RTORQ), carries STANAG 4406
messages of three precedences on the link its precedence's DSCP selects (DEFAULT_TABLE):
flash and override on CS3, a 1 MB priority message on CS1; a delivery report about the 1 MB
message follows it.  dumpcap captures both connections and tshark reads them: no decode
problems, the bind names, the X.411 priority and P772 precedence of each message, the report
as a report, and the DSCP of every packet by port and direction.  tshark does not judge RTSE
checkpointing, so the session SPDUs it decodes are counted here: the 1 MB transfer is cut by
confirmed minor synchronization points (X.225 MIP / MIA), never more than the window ahead.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import math
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from benchmarks import samples
from mta import link as links
from mta import net
from p1.association.connection import AssociationSettings, BindAccepted
from p1.association.transfer import encode_transfer
from p1.ipms.ipm import P772_CONTENT_TYPE
from p1.mts.envelope import (
    DeliveryReport,
    MTSIdentifier,
    Report,
    ReportContent,
    ReportEnvelope,
    ReportRecipientField,
    TraceEntry,
    encode_mts_apdu,
)
from p1.mts.precedence import DEFAULT_TABLE, Precedence, Priority
from p1.mts.report import LastTraceInformation
from p1.osi.rtse_transfer import CHECKPOINT_UNIT
from tests.support import tshark
from tests.support.tshark import Direction

pytestmark = pytest.mark.slow  # dumpcap, then tshark

LOOPBACK = "127.0.0.1"
ARGUMENT, RESULT, Store = tshark.ARGUMENT, tshark.RESULT, tshark.Store
CS3 = 24
CS1 = 8
SETTINGS = AssociationSettings(checkpoint_size=16, window_size=3)
TIMEOUT = tshark.TIMEOUT  # seconds; a bound against a hang, never a measurement

# tshark -T fields gives enumerations as numbers.
# MTS-APDU ::= CHOICE { message [0], report [1], probe [2] }  (X.411 12.2)
MESSAGE_APDU = "0"
REPORT_APDU = "1"
# ReportType ::= CHOICE { delivery [0] DeliveryReport, non-delivery [1] NonDeliveryReport }
DELIVERY = "0"

# X.225 SPDU identifiers (ses.type) of the transfer's activity and its checkpoints.
MAJOR_SYNC_POINT = 41  # MAP: the activity end
MAJOR_SYNC_ACK = 42  # MAA
MINOR_SYNC_POINT = 49  # MIP
MINOR_SYNC_ACK = 50  # MIA


@dataclass(frozen=True, slots=True)
class Sample:
    """One message to send: its MTS identifier, body size, precedence and the link's DSCP."""

    local_identifier: str
    size: int
    precedence: Precedence
    dscp: int


FLASH = Sample("flash-1k", 1024, Precedence.FLASH, CS3)
OVERRIDE = Sample("override-1k", 1024, Precedence.OVERRIDE, CS3)
LARGE = Sample("priority-1m", 1 << 20, Precedence.PRIORITY, CS1)
MESSAGES = (FLASH, OVERRIDE, LARGE)
REPORT_IDENTIFIER = "report-1"
REPORT_DSCP = LARGE.dscp  # a report travels at its subject's precedence


@functools.cache
def message_apdu(sample: Sample) -> bytes:
    """samples.message with the sample's own MTS identifier, so tshark's frames name it."""
    message = samples.message(sample.size, sample.precedence)
    identifier = dataclasses.replace(
        message.envelope.mts_identifier, local_identifier=sample.local_identifier
    )
    envelope = dataclasses.replace(message.envelope, mts_identifier=identifier)
    return encode_mts_apdu(dataclasses.replace(message, envelope=envelope))


@functools.cache
def report_apdu() -> bytes:
    """A delivery report on LARGE, to its originator, one delivery per recipient."""
    delivered = LastTraceInformation(
        arrival_time=samples.SENT, report=DeliveryReport(message_delivery_time=samples.SENT)
    )
    report = Report(
        envelope=ReportEnvelope(
            report_identifier=MTSIdentifier(
                global_domain_identifier=samples.DOMAIN, local_identifier=REPORT_IDENTIFIER
            ),
            report_destination_name=samples.ORIGINATOR,
            trace_information=(
                TraceEntry(global_domain_identifier=samples.DOMAIN, arrival_time=samples.SENT),
            ),
        ),
        content=ReportContent(
            subject_identifier=MTSIdentifier(
                global_domain_identifier=samples.DOMAIN, local_identifier=LARGE.local_identifier
            ),
            content_type=P772_CONTENT_TYPE,
            recipients=tuple(
                ReportRecipientField(
                    actual_recipient_name=name,
                    originally_specified_recipient_number=number,
                    last_trace_information=delivered,
                )
                for number, name in enumerate(samples.RECIPIENTS, start=1)
            ),
        ),
    )
    return encode_mts_apdu(report)


def sent_on(dscp: int) -> list[bytes]:
    """The MTS-APDUs the link marked ``dscp`` carries, in order."""
    apdus = [message_apdu(sample) for sample in MESSAGES if sample.dscp == dscp]
    if dscp == REPORT_DSCP:
        apdus.append(report_apdu())  # after its subject
    return apdus


# --- the run --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionFrame:
    """The X.225 SPDU types tshark found in one frame, in order."""

    src_port: int
    dst_port: int
    types: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """One capture of the whole exchange, decoded, and what each side ended up with."""

    port: dict[int, int]  # server port by DSCP
    accepted: dict[int, BindAccepted]  # by DSCP
    stored: dict[int, list[bytes]]  # by DSCP
    decoded: tshark.Decoded
    sessions: tuple[SessionFrame, ...]


def session_frames(pcap: Path, ports: str) -> tuple[SessionFrame, ...]:
    """Every frame holding SPDUs, with each SPDU's type (decode() keeps only X.400 fields)."""
    argv = ["tshark", "-n", "-r", str(pcap), "-o", f"tpkt.tcp.port:{ports}", "-Y", "ses"]
    argv += ["-T", "fields", "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "ses.type"]
    argv += ["-E", "occurrence=a", "-E", "aggregator=,"]
    done = subprocess.run(argv, capture_output=True, timeout=tshark.TIMEOUT, check=False)
    if done.returncode != 0:
        raise tshark.TsharkError(f"{' '.join(argv)}: {done.stderr.decode(errors='replace')}")
    frames = []
    for line in done.stdout.decode().splitlines():
        src, dst, types = line.split("\t")
        parsed = tuple(int(t) for t in types.split(","))
        frames.append(SessionFrame(src_port=int(src), dst_port=int(dst), types=parsed))
    return tuple(frames)


async def exchange(port: dict[int, int]) -> dict[int, BindAccepted]:
    """Bind on both links, transfer everything, release both; the bind results by DSCP."""
    async with contextlib.AsyncExitStack() as opened:
        accepted: dict[int, BindAccepted] = {}
        used: dict[int, links.Link] = {}
        for dscp in (CS3, CS1):
            link, accepted[dscp] = await links.open_link(
                LOOPBACK, port[dscp], ARGUMENT, settings=SETTINGS, dscp=dscp
            )
            opened.push_async_callback(link.close)  # after a failure; a no-op once released
            used[dscp] = link
        for dscp, link in used.items():
            for apdu in sent_on(dscp):
                await link.transfer(apdu, timeout=TIMEOUT)
        for link in used.values():
            await link.release(timeout=TIMEOUT)
    return accepted


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tshark.require_tshark()
    pcap = tmp_path_factory.mktemp("stack") / "stack.pcap"
    stores = {CS3: Store(), CS1: Store()}
    servers = {
        dscp: await net.start_marked_server(store.serve, LOOPBACK, 0, dscp=dscp)
        for dscp, store in stores.items()
    }
    port = {dscp: net.bound_port(server) for dscp, server in servers.items()}
    ports = f"{port[CS3]},{port[CS1]}"
    try:
        async with tshark.LoopbackCapture(pcap, ports), asyncio.timeout(TIMEOUT):
            accepted = await exchange(port)
            # Both responders saw the release and closed: all their packets precede stop().
            await asyncio.gather(*(task for store in stores.values() for task in store.served))
    finally:
        for server in servers.values():
            server.close()
            await server.wait_closed()
    return Run(
        port=port,
        accepted=accepted,
        stored={dscp: store.stored for dscp, store in stores.items()},
        decoded=tshark.decode(pcap, ports),
        sessions=session_frames(pcap, ports),
    )


def apdu_frame(run: Run, kind: str, local_identifier: str) -> tshark.Frame:
    """The one frame in which tshark read the MTS-APDU ``kind`` named ``local_identifier``."""
    found = [
        frame
        for frame in run.decoded.frames
        if frame.fields.get("p1.MTS_APDU") == (kind,)
        and frame.fields.get("p1.local_identifier", ("",))[0] == local_identifier
    ]
    assert len(found) == 1, f"{local_identifier}: frames {[f.number for f in found]}"
    return found[0]


# --- what tshark reads ----------------------------------------------------------------


def test_ports_are_free_high_ports(run: Run) -> None:
    assert len(set(run.port.values())) == 2
    assert all(port > 1023 for port in run.port.values())


def test_tshark_finds_no_decode_problem(run: Run) -> None:
    assert run.decoded.problems == ()


@pytest.mark.parametrize("dscp", [CS3, CS1])
def test_each_connection_binds_mta_a_to_mta_b(run: Run, dscp: int) -> None:
    port = run.port[dscp]
    (argument,) = (
        f for f in run.decoded.frames if "p1.MTABindArgument" in f.fields and f.dst_port == port
    )
    (result,) = (
        f for f in run.decoded.frames if "p1.MTABindResult" in f.fields and f.src_port == port
    )
    assert argument.fields["p1.authenticated.initiator-name"] == ("mta-a",)
    assert result.fields["p1.authenticated.responder-name"] == ("mta-b",)
    assert run.accepted[dscp].result == RESULT
    accepted = run.accepted[dscp]
    assert (accepted.checkpoint_size, accepted.window_size) == (
        SETTINGS.checkpoint_size,
        SETTINGS.window_size,
    )


@pytest.mark.parametrize("sample", MESSAGES, ids=lambda s: s.local_identifier)
def test_each_message_carries_its_precedence(run: Run, sample: Sample) -> None:
    assert DEFAULT_TABLE.dscp(sample.precedence) == sample.dscp
    frame = apdu_frame(run, MESSAGE_APDU, sample.local_identifier)
    assert frame.dst_port == run.port[sample.dscp]
    priority, qualifier = DEFAULT_TABLE.to_mts(sample.precedence)
    # Priority is DEFAULT normal: an envelope built in code leaves it out, so tshark shows none.
    shown = () if priority is Priority.NORMAL else (str(int(priority)),)
    assert frame.fields.get("p1.priority", ()) == shown
    assert frame.fields["p1.extended"] == (P772_CONTENT_TYPE,)
    assert frame.fields["p772.PrimaryPrecedence"] == (str(int(sample.precedence)),)
    assert frame.fields["p772.CopyPrecedence"] == (str(int(Precedence.ROUTINE)),)
    assert frame.fields["p772.PriorityLevelQualifier"] == (str(int(qualifier)),)
    assert frame.fields["p22.subject"] == ("SITREP 042 NORTHERN SECTOR",)


def test_the_precedences_cover_both_qualifiers_and_two_priorities() -> None:
    levels = {DEFAULT_TABLE.to_mts(sample.precedence) for sample in MESSAGES}
    assert len(levels) == len(MESSAGES)
    assert {qualifier for _, qualifier in levels} == {0, 1}
    assert {priority for priority, _ in levels} == {Priority.URGENT, Priority.NORMAL}


def test_the_report_is_read_as_a_delivery_report_on_its_subject(run: Run) -> None:
    frame = apdu_frame(run, REPORT_APDU, REPORT_IDENTIFIER)
    assert frame.dst_port == run.port[REPORT_DSCP]
    # report-identifier, then the subject-identifier in the content
    assert frame.fields["p1.local_identifier"] == (REPORT_IDENTIFIER, LARGE.local_identifier)
    assert frame.fields["p1.report_type"] == (DELIVERY,) * len(samples.RECIPIENTS)
    assert frame.fields["p1.extended"] == (P772_CONTENT_TYPE,)
    assert "p772.PrimaryPrecedence" not in frame.fields


def test_dscp_per_port_and_direction(run: Run) -> None:
    assert run.decoded.dscp_by_port() == {
        (run.port[CS3], Direction.TO_SERVER): {CS3},
        (run.port[CS3], Direction.TO_CLIENT): {CS3},
        (run.port[CS1], Direction.TO_SERVER): {CS1},
        (run.port[CS1], Direction.TO_CLIENT): {CS1},
    }


# --- what our side did ----------------------------------------------------------------


@pytest.mark.parametrize("dscp", [CS3, CS1])
def test_each_store_received_its_apdus_byte_exact(run: Run, dscp: int) -> None:
    assert run.stored[dscp] == sent_on(dscp)


def _spdus(run: Run, dscp: int, direction: Direction) -> Counter[int]:
    port = run.port[dscp]
    towards = direction is Direction.TO_SERVER
    return Counter(
        kind
        for frame in run.sessions
        if (frame.dst_port if towards else frame.src_port) == port
        for kind in frame.types
    )


def test_the_large_transfer_is_checkpointed(run: Run) -> None:
    piece = SETTINGS.checkpoint_size * CHECKPOINT_UNIT
    pieces = math.ceil(len(encode_transfer(message_apdu(LARGE))) / piece)
    assert pieces > 60  # 1 MB in pieces of 16 KB
    # One confirmed minor synchronization point between consecutive pieces; none after the
    # last, which the activity end closes.  The small transfers fit in one piece each.
    sent, answered = (_spdus(run, CS1, d) for d in (Direction.TO_SERVER, Direction.TO_CLIENT))
    assert sent[MINOR_SYNC_POINT] == answered[MINOR_SYNC_ACK] == pieces - 1
    assert sent[MAJOR_SYNC_POINT] == answered[MAJOR_SYNC_ACK] == len(sent_on(CS1))
    assert _spdus(run, CS3, Direction.TO_SERVER)[MINOR_SYNC_POINT] == 0


def test_the_sender_never_runs_more_than_the_window_ahead(run: Run) -> None:
    # The capture sees each answer before the sender can read it, so the points unanswered
    # in capture order are never more than the sender counted: the window bounds them too.
    port = run.port[CS1]
    ahead = most = 0
    for frame in run.sessions:
        if frame.dst_port == port:
            ahead += sum(kind in (MINOR_SYNC_POINT, MAJOR_SYNC_POINT) for kind in frame.types)
        elif frame.src_port == port:
            ahead -= sum(kind in (MINOR_SYNC_ACK, MAJOR_SYNC_ACK) for kind in frame.types)
        assert ahead >= 0
        most = max(most, ahead)
    assert 1 <= most <= SETTINGS.window_size
    assert ahead == 0
