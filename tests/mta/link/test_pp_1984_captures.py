"""PP 6.0's X.410-1984 mode transfers (``pcaps/pp/live3/41``), replayed at a live daemon.

PP's first connection of the capture carries a probe and its 1984 P2 message (content
type 2, urgent, a delivery report asked) to S=alice.  Replayed TPKT by TPKT over a real
socket to a daemon configured as the capture's "aiox", the message is confirmed, stored,
listed by ``x400 inbox`` with its subject and read by ``x400 read`` and ``x400-dump``
with its subject and body, as a P22 message is.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from client import dump
from tests.mta.link.test_pp_captures import AIOX, aiox, confirmed, read_tpkt
from tests.support.golden import load_tpkts
from tests.support.sites import Site, eventually

__all__ = ["aiox"]  # (the fixture, imported for these tests)

CAPTURE = "pp/live3/41-84-pp-to-aiox"
PP_PORT = 1024  # PP's source port towards aiox (127.0.0.48:5400) in the capture
ALICE = f"{AIOX.domain};S=alice"
SUBJECT = "PP84 urgent with DR"
BODY = "Hello alice, from PP 6.0 in X.410-1984 mode (x400out84)."


async def replay_first_connection(port: int) -> list[bytes]:
    """Send PP's TPKTs of its first connection to aiox in the capture (up to its DR) to
    ``port``; the TPKTs the daemon answered with, as many as aiox sent in the capture."""
    records = [
        r
        for r in load_tpkts(CAPTURE)
        if PP_PORT in (r["src_port"], r["dst_port"]) and 5400 in (r["src_port"], r["dst_port"])
    ]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answers: list[bytes] = []
    try:
        for record in records:
            if record["src_port"] == PP_PORT:
                if record.get("cotp") == "DR":
                    break
                writer.write(bytes.fromhex(record["hex"]))
                await writer.drain()
            else:
                answers.append(await read_tpkt(reader))
    finally:
        writer.close()
    return answers


async def test_pps_1984_p2_message_is_listed_and_read_like_p22(
    aiox: tuple[Site, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site, port = aiox
    answers = await replay_first_connection(port)
    data = [tpkt for tpkt in answers if tpkt[5] == 0xF0]  # (after the CC)
    assert sum(map(confirmed, data)) == 2, [tpkt.hex() for tpkt in data]  # probe, message
    (entry,) = await eventually(
        lambda: site.inbox(ALICE), lambda found: len(found) == 1, what="alice's message"
    )
    assert entry["kind"] == "message"
    assert entry["subject"] == SUBJECT
    code, out, err = await site.x400("inbox", "--socket", str(site.socket), "--user", ALICE)
    assert code == 0, err
    assert SUBJECT in out
    code, out, err = await site.x400(
        "read", "--socket", str(site.socket), "--user", ALICE, str(entry["id"])
    )
    assert code == 0, err
    assert "does not decode" not in out
    assert f"subject:        {SUBJECT}" in out
    assert "from:           C=GB;ADMD= ;PRMD=PPTEST;S=root" in out
    assert BODY in out
    _, apdu = await site.read(ALICE, int(entry["id"]))
    raw = tmp_path / "pp84.ber"
    raw.write_bytes(apdu)
    capsys.readouterr()
    assert dump.main([str(raw)]) == 0
    shown = capsys.readouterr().out
    assert "content-type: interpersonal-messaging-1984" in shown
    assert f"subject: {SUBJECT}" in shown
    assert BODY in shown
    assert "ia5-text" in shown
