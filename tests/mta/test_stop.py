"""A stopping MTA ends each association a peer holds to it with an abort of reason
temporary-problem (X.228 RTAB under the session's AB), not a bare close of the TCP
connection: the peer learns why and tries again later."""

from __future__ import annotations

import asyncio
import logging

import pytest

from mta.link import open_link
from p1.association.events import Aborted
from p1.association.mtabind import MTABindArgument
from p1.association.pdus import abort_data, abort_reason
from p1.osi import rtse
from tests.support.sites import A, Lab

WAIT = 30.0
"""Bound on what the test waits for (a margin: the abort is written at once)."""


async def test_a_peers_bound_association_is_aborted_as_temporary_at_stop(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400.link")
    await lab.b.start()
    port = lab.b.running.listening_ports[2]
    argument = MTABindArgument(initiator_name=A.name, password=A.password)
    link, _ = await open_link("127.0.0.1", port, argument)
    try:
        waiting = asyncio.create_task(link.next_event(WAIT))
        await asyncio.sleep(0)  # (reading before B stops)
        await lab.b.stop()
        event = await waiting
    finally:
        await link.close()

    assert isinstance(event, Aborted)
    assert event.by_peer
    assert "temporary-problem" in event.why
    assert any("aborting: the MTA is stopping" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("reason", list(rtse.AbortReason))
def test_the_abort_reason_is_read_from_the_abort_written(reason: rtse.AbortReason) -> None:
    assert abort_reason(abort_data(reason)) is reason


@pytest.mark.parametrize("data", [b"", b"\x05\x00", bytes.fromhex("a0 03 80 01 06"), b"\xff"])
def test_an_abort_without_an_rtab_has_no_reason(data: bytes) -> None:
    assert abort_reason(data) is None
