"""Probes from the client (``x400 send --probe``) between two live daemons (X.411 8.2.1.2).

Smith at site A probes users of site B, whose ``local_users`` name Bob only: a probe is
submitted through the local API without content, transferred to B, which answers it (a
probe is never delivered): for Bob with a delivery report, "would be delivered"; for an
unknown name with a non-delivery report.  Smith's ``x400 inbox`` lists each as a probe
report (a report whose subject is a probe: A queued it), ``x400 read`` shows it as a
report.  The XUXA-style options work with probes: precedence, --count, --size (the
content-length asked about).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from client import x400
from tests.support.sites import Lab, eventually

pytestmark = pytest.mark.slow  # two daemons


async def _probe(lab: Lab, to: str, *options: str) -> list[str]:
    code, out, err = await lab.a.x400(
        *("send", "--socket", str(lab.a.socket), "--from", lab.a.address("Smith")),
        *("--to", to, "--probe", *options),
    )
    assert code == x400.EXIT_OK, err
    return out.splitlines()


async def _reports(lab: Lab, count: int) -> list[dict[str, Any]]:
    smith = lab.a.address("Smith")
    return await eventually(
        lambda: lab.a.inbox(smith), lambda found: len(found) == count, what="the probe reports"
    )


async def _read(lab: Lab, entry: dict[str, Any]) -> str:
    smith = lab.a.address("Smith")
    code, out, err = await lab.a.x400(
        "read", "--socket", str(lab.a.socket), "--user", smith, str(entry["id"])
    )
    assert code == x400.EXIT_OK, err
    return out


async def test_a_probe_to_a_user_of_b_gets_would_be_delivered(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    bob = lab.b.address("Bob")
    lab.b.list_users(bob)
    await lab.start()
    (identifier,) = await _probe(lab, bob, "--precedence", "flash", "--p2")
    (entry,) = await _reports(lab, 1)
    assert entry["kind"] == "report"
    assert entry["subject"] == f"probe report on {identifier}: would be delivered"
    code, out, err = await lab.a.x400(
        "inbox", "--socket", str(lab.a.socket), "--user", lab.a.address("Smith")
    )
    assert code == x400.EXIT_OK, err
    assert f"probe report on {identifier}: would be delivered" in out
    shown = await _read(lab, entry)
    assert f"report:         probe report on {identifier}: would be delivered" in shown
    assert f"report on:      {identifier}" in shown
    assert "S=Bob: delivered" in shown
    assert await lab.b.inbox(bob) == []  # a probe is answered, never delivered
    submitted = [
        r.getMessage() for r in caplog.records if f"submitted probe {identifier}" in r.getMessage()
    ]
    assert len(submitted) == 1 and "(flash," in submitted[0], submitted


async def test_a_probe_to_an_unknown_name_gets_would_not_be_delivered(lab: Lab) -> None:
    lab.b.list_users(lab.b.address("Bob"))
    await lab.start()
    (identifier,) = await _probe(lab, lab.b.address("Nobody"))
    (entry,) = await _reports(lab, 1)
    assert entry["subject"] == f"probe report on {identifier}: would not be delivered"
    shown = await _read(lab, entry)
    assert "S=Nobody: not delivered: unable-to-transfer" in shown


async def test_probes_take_count_and_size(lab: Lab) -> None:
    await lab.start()
    bob = lab.b.address("Bob")
    identifiers = await _probe(lab, bob, "--count", "3", "--size", "1M", "-p", "immediate")
    assert len(set(identifiers)) == 3
    reports = await _reports(lab, 3)
    subjects = sorted(entry["subject"] for entry in reports)
    assert subjects == sorted(f"probe report on {i}: would be delivered" for i in identifiers)
