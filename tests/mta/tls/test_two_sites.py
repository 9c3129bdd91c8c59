"""Two live sites relaying over TLS with mutual certificates (RFC 1006 inside TLS)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from p1.mts.precedence import Precedence
from tests.mta.tls.pki import Pki, secure
from tests.support.sites import A, Lab, eventually

pytestmark = pytest.mark.slow  # two daemons


def _lines(caplog: pytest.LogCaptureFixture, pattern: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if re.search(pattern, r.getMessage())]


@pytest.mark.parametrize("pin", [False, True], ids=["ca-and-name", "pinned"])
async def test_every_precedence_is_delivered_over_tls(
    lab: Lab, tmp_path: Path, caplog: pytest.LogCaptureFixture, pin: bool
) -> None:
    caplog.set_level(logging.INFO)
    secure(lab, Pki.create(tmp_path / "pki"), pin=pin)
    await lab.start()
    bob = lab.b.address("Bob")
    for precedence in Precedence:
        await lab.a.send(lab.a.address("Smith"), bob, precedence)
    await eventually(lambda: lab.b.inbox(bob), lambda found: len(found) == 6, what="delivery")
    # Every slot of A's connected in TLS, each with its own DSCP ...
    connected = _lines(caplog, r"connected to 127\.0\.0\.1 port \d+ \(CS\d, [a-z-]+, TLSv1\.3")
    assert {line.split("(")[1][:3] for line in connected} == {"CS0", "CS1", "CS2", "CS3"}
    # ... and B took each of A's binds over TLS, none in the clear.
    accepted = _lines(caplog, rf"bind from '{A.name}' accepted")
    assert accepted and all("TLSv1.3" in line for line in accepted)
