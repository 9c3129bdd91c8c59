"""PP 6.0's transfers, replayed from the captures against a live daemon.

``../shared/reference/pcaps/pp/`` holds PP (an independent MTA on ISODE) transferring a
delivery report (20) and an X.420 message to S=bob (21) to an MTA named "aiox" of domain
PRMD=AIOX.  Each capture's initiator TPKTs are sent, in order, over a real socket to a
daemon configured as that MTA; after each of them the daemon's answers are read up to the
next TPKT PP sent in the capture.  PP writes fields in forms X.411 does not (an
ExtensionField type as an explicit CHOICE, a UTCTime with a three-digit year; see the
captures' README): the daemon confirms the transfer (it answers the activity end with
its acknowledgement, not an abort), stores what came in readable, and logs what it
tolerated once at WARNING, naming the peer and the field.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from p1.association import x410_pdus
from p1.mts.envelope import Report, decode_mts_apdu
from p1.mts.orname import format_orname
from p1.osi.x225 import spdu
from tests.support.golden import load_tpkts, spdus, transferred_apdus
from tests.support.sites import DEADLINE, Identity, ReservedPorts, Site, eventually

AIOX = Identity("aiox", "C=GB;ADMD= ;PRMD=AIOX", "aiox-secret")
PP = Identity("pp.test", "C=GB;ADMD= ;PRMD=PPTEST", "pp-secret")
BOB = f"{AIOX.domain};S=bob"


@pytest.fixture
async def aiox(tmp_path: Path) -> AsyncIterator[tuple[Site, int]]:
    """The capture's MTA "aiox", which PP binds to as pp.test/pp-secret; started."""
    ports = ReservedPorts(2)
    listen, dead = ports.ports
    settings: dict[str, Any] = {
        "name": AIOX.name,
        "global_domain": AIOX.domain,
        "password": AIOX.password,
        "state_dir": "state",
        "control_socket": "control.sock",
        "log_level": "debug",
        "accept_any_recipient": True,
        "listeners": [{"address": "127.0.0.1", "port": listen}],
        "peers": [
            {
                "name": PP.name,
                "host": "127.0.0.1",
                "routes": [PP.domain],
                "peer_password": PP.password,
                "slots": [
                    {
                        "precedences": [
                            "override",
                            "flash",
                            "immediate",
                            "priority",
                            "routine",
                            "deferred",
                        ],
                        "port": dead,
                        "mode": "on-demand",
                    }
                ],
            }
        ],
    }
    site = Site(AIOX, tmp_path / "aiox", settings)
    await site.start()
    try:
        yield site, listen
    finally:
        await site.stop()
        ports.close()


async def read_tpkt(reader: asyncio.StreamReader) -> bytes:
    header = await asyncio.wait_for(reader.readexactly(4), DEADLINE)
    length = int.from_bytes(header[2:4], "big")
    return header + await asyncio.wait_for(reader.readexactly(length - 4), DEADLINE)


async def replay(capture: str, port: int) -> list[bytes]:
    """Send PP's TPKTs of ``capture`` to ``port`` (up to its disconnect); the TPKTs the
    daemon answered with, as many as the responder sent in the capture."""
    records = load_tpkts(f"pp/{capture}")
    initiator = records[0]["src_port"]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answers: list[bytes] = []
    try:
        for record in records:
            if record["src_port"] == initiator:
                if record.get("cotp") == "DR":
                    break  # PP's end of the connection: ours closes it instead
                writer.write(bytes.fromhex(record["hex"]))
                await writer.drain()
            else:
                answers.append(await read_tpkt(reader))
    finally:
        writer.close()
    return answers


def confirmed(tpkt: bytes) -> bool:
    """Whether the DT TPKT ``tpkt`` holds an ACTIVITY END ACK (the transfer confirmed,
    X.225 7.33), not an ABORT."""
    assert tpkt[5] == 0xF0, tpkt.hex()  # X.224 class 0 DT
    kinds = [unit.si for unit in spdus(tpkt[7:])]
    return spdu.Kind.MAA.value[0] in kinds and spdu.Kind.AB.value[0] not in kinds


def tolerated(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "tolerated" in r.getMessage()
    ]


async def test_pp_delivery_report_is_confirmed_and_stored(
    aiox: tuple[Site, int], caplog: pytest.LogCaptureFixture
) -> None:
    site, port = aiox
    (apdu,) = transferred_apdus("pp/20-pp-to-aiox-dr")
    report = decode_mts_apdu(apdu)
    assert isinstance(report, Report)
    destination = format_orname(report.envelope.report_destination_name)
    answers = await replay("20-pp-to-aiox-dr", port)
    assert confirmed(answers[-1]), answers[-1].hex()
    (entry,) = await eventually(
        lambda: site.inbox(destination), lambda found: len(found) == 1, what="the report"
    )
    assert entry["kind"] == "report", entry
    code, out, err = await site.x400(
        "read", "--socket", str(site.socket), "--user", destination, str(entry["id"])
    )
    assert code == 0, err
    assert "report on:      [GB; ;AIOX;9d86a43fe8ce72199510]" in out
    assert "C=GB;ADMD= ;PRMD=PPTEST;O=pp;S=alice: delivered" in out
    lines = tolerated(caplog)
    assert any("pp.test" in line and "extensions[0].type" in line for line in lines), lines


async def test_pp_message_to_bob_is_confirmed_and_readable(
    aiox: tuple[Site, int], caplog: pytest.LogCaptureFixture
) -> None:
    site, port = aiox
    answers = await replay("21-pp-to-aiox-p22", port)
    assert confirmed(answers[-1]), answers[-1].hex()
    (entry,) = await eventually(
        lambda: site.inbox(BOB), lambda found: len(found) == 1, what="bob's message"
    )
    assert entry["subject"] == "PP to aiox400 test"
    code, out, err = await site.x400(
        "read", "--socket", str(site.socket), "--user", BOB, str(entry["id"])
    )
    assert code == 0, err
    assert "PP to aiox400 test" in out
    assert "this is PP 6.0 speaking X.400 P1 1988." in out
    lines = tolerated(caplog)
    assert any("pp.test" in line and "arrival-time" in line for line in lines), lines


async def test_pps_x410_mode_connect_gets_a_1984_accept(
    aiox: tuple[Site, int], caplog: pytest.LogCaptureFixture
) -> None:
    """Capture 30: PP connects in X.410-1984 mode (CN carrying a PConnect); the daemon
    answered it with a normal-mode presentation abort, which PP cannot read.  It now
    answers with an AC carrying a PAccept whose bind result names it (X.410 1984)."""
    caplog.set_level(logging.INFO)
    _, port = aiox
    cc, answer = await replay("30-pp-to-aiox-x410-mode", port)
    assert cc[5] == 0xD0  # X.224 CC
    assert answer[5] == 0xF0  # X.224 DT
    (ac,) = spdu.decode_tsdu(answer[7:])
    assert ac.kind is spdu.Kind.AC
    assert x410_pdus.connect_mode(ac.user_data) is x410_pdus.ConnectMode.X410_1984
    result = x410_pdus.decode_bind_result_1984(x410_pdus.decode_paccept(ac.user_data).open)
    assert result.responder_name == AIOX.name
    lines = [r.getMessage() for r in caplog.records if "accepted" in r.getMessage()]
    assert any(f"bind from {PP.name!r} accepted (X.410-1984 mode)" in line for line in lines)
