"""O/R names are shown as they were given, though compared case-folded (X.411).

A message from ``S=McSmith`` at site A to ``S=DeJones;G=Anne`` at site B, both in mixed
case, travels A to B.  ``x400ctl track`` at both sites and the daemons' log lines
(submitted, received, delivered) show the names in the case they were submitted in, and
never the case-folded form the queue and the mailboxes are keyed by; B's mailbox is
found by the name in any case.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from p1.mts.orname import parse_orname
from tests.support.process import DEADLINE
from tests.support.sites import Lab, Site, eventually

pytestmark = pytest.mark.slow  # two sites and a transfer

X400CTL = Path(sys.executable).with_name("x400ctl")


async def _track(site: Site, identifier: str) -> str:
    done = await asyncio.to_thread(
        subprocess.run,
        [str(X400CTL), "track", "--socket", str(site.socket), identifier],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_track_and_the_log_show_names_as_submitted(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400")
    await lab.start()
    sender = lab.a.address("McSmith")
    recipient = lab.b.address("DeJones") + ";G=Anne"
    folded = {parse_orname(name).canonical for name in (sender, recipient)}
    assert all(name not in (sender, recipient) for name in folded)

    (identifier,) = await lab.a.send(sender, recipient)
    await eventually(
        lambda: lab.b.inbox(recipient.upper()), lambda found: len(found) == 1, what="delivered"
    )

    at_a, at_b = await _track(lab.a, identifier), await _track(lab.b, identifier)
    assert f"to {recipient}" in at_a  # submitted
    assert f"to {recipient}" in at_b  # received
    assert at_b.count(recipient) >= 3, at_b  # received, delivered, the queue's row
    assert recipient in at_a.split("now in the queue:")[1], at_a
    lines = [r.getMessage() for r in caplog.records if identifier in r.getMessage()]
    assert any(
        line.startswith("submitted ") and f"by {sender} " in line and f"{recipient} via" in line
        for line in lines
    ), lines
    assert any(line.startswith("received ") and f"{recipient} via local" in line for line in lines)
    assert any(line.startswith("delivered ") and line.endswith(f": {recipient}") for line in lines)
    for text in (at_a, at_b, *lines):
        assert not any(name in text for name in folded), text
