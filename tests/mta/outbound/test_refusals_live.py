"""A peer that refuses a message every time gets it ``[retry] max_refusals`` times, then
the originator gets a non-delivery report and the log one line saying why.

Live: site A's one slot leads to the test responder (another process) as MTA-B.  With
``--abort-transfers`` it aborts each transfer once it has arrived (RTSE user-error, as
PP 6.0 aborts an envelope it cannot parse): after three tries the message is
non-delivered, unable-to-transfer / protocol-violation.  With ``--refuse-transfers`` (a
full disk: temporary-problem) the refusals are not counted and the message is deferred
again and again, as before its expiry it should be.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason, NonDeliveryReport
from tests.support.sites import B, Site, SlotSpec, eventually, peer_settings, solo_site

pytestmark = pytest.mark.slow  # a daemon and a responder process

ROOT = Path(__file__).resolve().parents[3]
EVERY = SlotSpec(("override", "flash", "immediate", "priority", "routine", "deferred"), "CS0")
JONES = "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones"


def _responder(option: str) -> Iterator[int]:
    argv = ["--name", B.name, "--password", B.password, "--accept", "MTA-A:secret-a", option]
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.responder", *argv],
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


@pytest.fixture
def aborting() -> Iterator[int]:
    """MTA-B aborting every transfer once it arrived (user-error); its port."""
    yield from _responder("--abort-transfers")


@pytest.fixture
def full() -> Iterator[int]:
    """MTA-B refusing every transfer for now (temporary-problem); its port."""
    yield from _responder("--refuse-transfers")


def _site(tmp_path: Path, port: int) -> Site:
    site = solo_site(tmp_path)
    site.settings["peers"] = [peer_settings(B, [port], [EVERY])]
    site.settings["retry"] = {"initial": "0.1s", "maximum": "0.2s", "max_refusals": 3}
    return site


async def _attempts(site: Site, name: str) -> int:
    """The attempts of the message's recipient, in any state (``x400ctl track``)."""
    response = await site.api({"op": "track", "mts_identifier": name})
    return sum(int(r["attempts"]) for r in response["queue"])


async def test_a_message_refused_three_times_is_non_delivered_with_one_line(
    tmp_path: Path, aborting: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400")
    site = _site(tmp_path, aborting)
    await site.start()
    smith = site.address("Smith")
    try:
        (name,) = await site.send(smith, JONES)
        (report,) = await eventually(
            lambda: site.reports(smith), lambda found: len(found) == 1, what="the NDR"
        )
        attempts = await _attempts(site, name)
    finally:
        await site.stop()
    assert report.content.subject_identifier.text == name
    outcome = report.content.recipients[0].last_trace_information.report
    assert isinstance(outcome, NonDeliveryReport)
    assert outcome.reason_code == NonDeliveryReason.UNABLE_TO_TRANSFER
    assert outcome.diagnostic_code == NonDeliveryDiagnostic.PROTOCOL_VIOLATION
    # Three refusals; the first may have met a connection that had idled (it waited for
    # the message to fall due), whose first failure is retried at once and not counted
    # (mta.outbound.channels): which, depends on how fast the daemon came up.
    assert attempts in (2, 3)
    lines = [r for r in caplog.records if r.getMessage().startswith(f"non-delivered {name}")]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING, lines
    line = lines[0].getMessage()
    assert " to MTA-B " in line and "refused 3 times in a row" in line, line
    assert "user-error" in line, line
    assert not [r for r in caplog.records if r.exc_info]


async def test_a_temporary_refusal_is_not_counted(
    tmp_path: Path, full: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400")
    site = _site(tmp_path, full)
    await site.start()
    smith = site.address("Smith")
    try:
        (name,) = await site.send(smith, JONES)
        await eventually(
            lambda: _attempts(site, name), lambda n: n >= 8, what="eight deferred transfers"
        )
        reports = await site.reports(smith)
    finally:
        await site.stop()
    assert reports == []
    assert not [r for r in caplog.records if r.getMessage().startswith("non-delivered")]
