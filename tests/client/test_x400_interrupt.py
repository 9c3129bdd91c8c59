"""Ctrl-C during ``x400 send --count``: every submission the MTA answered has its MTS
identifier printed before the command ends with 130, and none is printed that the MTA
did not take in.

The command runs as a process of its own (the interrupt is a real SIGINT) against site
A, served in this test's event loop.  What the MTA took in is counted where it answers:
the intake's submissions, wrapped to record each one begun and each one committed.  Once
the command has exited and every submission begun is settled, the identifiers printed
must be those committed, and the recipient's mailbox must hold exactly them.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest

from client.cli import EXIT_INTERRUPTED
from mta.intake.intake import Submitted
from mta.intake.submission import SubmitRequest
from p1.localapi import JsonObject
from tests.support.sites import Site, eventually, until

BIN = Path(sys.executable).parent


class _Counted:
    """The submissions the MTA began and those it committed (their identifiers)."""

    def __init__(self, site: Site) -> None:
        self.begun = 0
        self.committed: list[str] = []
        intake = site.running.intake
        submit = intake.submit

        async def counted(request: SubmitRequest) -> Submitted:
            self.begun += 1
            submitted = await submit(request)
            self.committed.append(submitted.mts_identifier)
            return submitted

        intake.submit = counted  # type: ignore[method-assign]


async def _interrupted_send(site: Site, recipient: str, after: int) -> list[str]:
    """``x400 send --count`` interrupted once it printed ``after`` identifiers; the
    identifiers it printed in all."""
    argv = ["send", "--socket", str(site.socket), "--from", site.address("Smith")]
    argv += ["--to", recipient, "--body", "text", "--count", "1000000"]
    # A test run started in the background ignores SIGINT, and its children would
    # inherit that; a handled signal is reset to its default in the child.
    ours = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = await asyncio.create_subprocess_exec(
            str(BIN / "x400"),
            *argv,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    finally:
        signal.signal(signal.SIGINT, ours)
    assert process.stdout is not None
    printed = [await asyncio.wait_for(process.stdout.readline(), 60) for _ in range(after)]
    process.send_signal(signal.SIGINT)
    rest, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == EXIT_INTERRUPTED, err
    assert err.decode().splitlines() == ["x400: interrupted"]
    return [line.decode().rstrip("\n") for line in printed] + rest.decode().splitlines()


async def _delivered(site: Site, recipient: str, count: int) -> list[JsonObject]:
    """``recipient``'s mailbox once it holds ``count`` entries or more."""
    return await eventually(
        lambda: site.inbox(recipient),
        lambda entries: len(entries) >= count,
        what="every committed message delivered",
    )


@pytest.mark.slow
async def test_ctrl_c_prints_every_identifier_the_mta_answered(site: Site) -> None:
    counted = _Counted(site)
    for run, after in enumerate((1, 3, 10, 25, 60)):
        recipient = site.address(f"Jones{run}")
        before = len(counted.committed)
        printed = await _interrupted_send(site, recipient, after)
        await until(
            lambda: counted.begun == len(counted.committed),
            what="every submission begun settled",
        )
        committed = counted.committed[before:]
        assert printed == committed, f"interrupted after {after}"
        stored = await _delivered(site, recipient, len(committed))
        assert sorted(e["mts_identifier"] for e in stored) == sorted(printed)
