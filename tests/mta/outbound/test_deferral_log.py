"""A peer that refuses every transfer (its disk full) costs a line a minute, not a line
per deferred transfer: the WARNING about deferrals is rate-limited per peer, and the next
line counts those left out.

Live: site A's one slot leads to the test responder (another process) refusing each
transfer as temporary; A defers its messages again and again.  Then the same lines from
one slot runner with a clock the test turns, for the count.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from config import load_config
from mta.faults import LOG_INTERVAL, LogLimiter
from mta.metrics import Metrics
from mta.outbound.channels import ChannelContext, SlotRunner
from p1.mts.precedence import Precedence
from tests.support.sites import B, Site, SlotSpec, eventually, peer_settings, solo_site

ROOT = Path(__file__).resolve().parents[3]
DEFERRED = "deferred "
EVERY = SlotSpec(("override", "flash", "immediate", "priority", "routine", "deferred"), "CS0")


@pytest.fixture
def refusing() -> Iterator[int]:
    """The responder, as MTA-B, refusing every transfer (temporary); its port."""
    argv = ["--name", B.name, "--password", B.password, "--accept", "MTA-A:secret-a"]
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.responder", *argv, "--refuse-transfers"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.strip().isdigit():
        process.kill()
        pytest.fail(f"the test responder did not start: {line!r}")
    yield int(line)
    process.terminate()
    process.wait(timeout=10)


def _deferral_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "aiox400.channel" and r.getMessage().startswith(DEFERRED)
    ]


async def _attempts(site: Site) -> int:
    response = await site.api({"op": "messages", "limit": 100})
    return sum(int(r["attempts"]) for r in response["recipients"])


@pytest.mark.slow
async def test_a_peer_refusing_every_transfer_costs_one_line(
    tmp_path: Path, refusing: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400")
    site = solo_site(tmp_path)
    site.settings["peers"] = [peer_settings(B, [refusing], [EVERY])]
    site.settings["retry"] = {"initial": "0.1s", "maximum": "0.2s"}
    await site.start()
    started = time.monotonic()
    try:
        await site.send(site.address("Smith"), "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones", count=3)
        await eventually(
            lambda: _attempts(site), lambda n: n >= 12, what="a dozen deferred transfers"
        )
    finally:
        await site.stop()
    minutes = int((time.monotonic() - started) // LOG_INTERVAL)
    lines = _deferral_lines(caplog)
    assert 1 <= len(lines) <= 1 + minutes, lines  # a line a minute, the others counted
    assert "to MTA-B: transfer failed:" in lines[0]


def test_the_next_line_counts_the_deferrals_left_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = load_config(_config_file(tmp_path))
    now = [0.0]
    notes = LogLimiter(clock=lambda: now[0])
    context = ChannelContext(queue=cast(Any, None), metrics=Metrics(), config=config, notes=notes)
    runners = [SlotRunner(context, peer, peer.slots[0]) for peer in config.peers]
    entry = cast(Any, _Entry())
    for _ in range(500):
        for runner in runners:
            runner._log_put_back(entry, "transfer failed: the store is full", 0.1)
    now[0] += LOG_INTERVAL
    for runner in runners:
        runner._log_put_back(entry, "transfer failed: the store is full", 0.1)
    lines = _deferral_lines(caplog)
    assert len(lines) == 4  # two peers: a line each, then a line each with the count
    assert lines[2].endswith("attempt 2, next in 0.1 s (499 more suppressed)")
    assert " to MTA-B: " in lines[0] and " to MTA-C: " in lines[1]


class _Entry:
    mts_identifier = "[GB; ;SITEA;1]"
    recipients = (SimpleNamespace(attempts=2),)
    precedence = Precedence.ROUTINE


def _config_file(tmp_path: Path) -> Path:
    site = solo_site(tmp_path)
    c = dict(peer_settings(B, [102], [EVERY]))
    c |= {"name": "MTA-C", "routes": ["C=GB;ADMD= ;PRMD=SITEC"]}
    site.settings["peers"] = [peer_settings(B, [102], [EVERY]), c]
    return site.write()
