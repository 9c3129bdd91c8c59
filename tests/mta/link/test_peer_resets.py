"""A peer that resets its connection at any stage costs one rate-limited line, never a
traceback: at a live daemon (raw sockets, RST by ``SO_LINGER`` 0) and at our initiator
(a responder that resets us)."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from config.schema import ConnectionLimits
from mta import link as links
from mta import net
from mta.inbound.guard import Guard
from p1.association.connection import BindRequested, TransferTooLong
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult
from tests.fuzz.attack_resets import MAX_FAULT_LINES, Cut, run_resets, stage_cuts
from tests.fuzz.corpus import message_apdu, ours

ROUNDS = 8
"""Times each stage of each conversation is played (some 900 resets in all)."""


@pytest.mark.slow
async def test_resets_at_every_stage_make_no_traceback_and_a_bounded_log(
    tmp_path: Path,
) -> None:
    stages = [cut for record in ours() for cut in stage_cuts(record)]
    cuts = [
        Cut(cut.record.numbered(number), cut.octets, cut.wait)
        for number, cut in enumerate(stages * ROUNDS)
    ]
    report = await run_resets(cuts, tmp_path / "mta")
    assert report.cases == len(cuts), report.table()
    assert not report.log.tracebacks, report.table()
    assert not report.problems(max_lines=MAX_FAULT_LINES), report.table()


@pytest.mark.slow
async def test_a_cr_then_a_reset_many_times_is_a_line_a_minute(tmp_path: Path) -> None:
    """The CR alone, and the CR and the CN, each reset before and after the answer."""
    (monologue, *_) = ours()
    cr, cn = monologue.client[0], monologue.client[1]
    early = [Cut(monologue, len(cr), wait) for wait in (False, True)]
    early += [Cut(monologue, len(cr) + len(cn), wait) for wait in (False, True)]
    report = await run_resets(early * 150, tmp_path / "mta")
    assert report.cases == 600
    assert not report.log.tracebacks, report.table()
    assert not report.problems(max_lines=10), report.table()


# --- our initiator, reset by the responder ------------------------------------------------

ARGUMENT = MTABindArgument(initiator_name="mta-a", password="a-pw")
RESULT = MTABindResult(responder_name="mta-b", password="b-pw")


def _reset(writer: asyncio.StreamWriter) -> None:
    writer.get_extra_info("socket").setsockopt(
        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
    )
    writer.transport.abort()


class _ResetsOnTransfer:
    """Accepts any bind; resets the connection when a transfer arrives."""

    def __init__(self) -> None:
        self.writer: asyncio.StreamWriter | None = None

    async def on_bind(self, event: BindRequested) -> MTABindResult | MTABindError:
        return RESULT

    async def on_transfer(self, apdu: bytes) -> None:
        assert self.writer is not None
        _reset(self.writer)

    async def on_transfer_too_long(self, event: TransferTooLong) -> None:
        raise AssertionError("not sent")


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], object]


async def _server(handle: Handler) -> AsyncIterator[int]:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await handle(reader, writer)  # type: ignore[misc]

    server = await net.start_marked_server(serve, "127.0.0.1", 0, dscp=0)
    async with server:
        yield net.bound_port(server)


@pytest.fixture
async def resets_after_cr() -> AsyncIterator[int]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        _reset(writer)

    async for port in _server(handle):
        yield port


@pytest.fixture
async def resets_on_transfer() -> AsyncIterator[int]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        responder = _ResetsOnTransfer()
        responder.writer = writer
        await links.serve_link(reader, writer, responder)

    async for port in _server(handle):
        yield port


def _initiator_lines(caplog: pytest.LogCaptureFixture, port: int) -> list[str]:
    """What our initiator's link logged about the responder on ``port`` (the responder's
    lines name the initiator's port)."""
    lines = [r.getMessage() for r in caplog.records if r.name == "aiox400.link"]
    return [line for line in lines if line.startswith(f"127.0.0.1:{port}:")]


async def test_a_responder_resetting_our_bind_is_the_error_raised_and_no_line(
    resets_after_cr: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(links.LinkClosedError, match="reset"):
        await links.open_link("127.0.0.1", resets_after_cr, ARGUMENT)
    assert _initiator_lines(caplog, resets_after_cr) == []  # (the caller's line is its own)


async def test_a_responder_resetting_a_transfer_is_the_error_raised_and_no_line(
    resets_on_transfer: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    link, _ = await links.open_link("127.0.0.1", resets_on_transfer, ARGUMENT)
    with pytest.raises(links.LinkClosedError, match="reset"):
        await link.transfer(message_apdu("reset-me"), timeout=10)
    await link.close()
    assert not any(r.exc_info for r in caplog.records)
    assert _initiator_lines(caplog, resets_on_transfer) == []


# --- our own bug: a traceback, rate-limited -----------------------------------------------


class _Broken(_ResetsOnTransfer):
    async def on_transfer(self, apdu: bytes) -> None:
        raise RuntimeError("a bug of ours")


@pytest.fixture
async def broken() -> AsyncIterator[int]:
    guard = Guard(ConnectionLimits(failed_bind_delay=0.0))

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ticket = guard.admit(writer.get_extra_info("peername"), writer.transport.abort)
        assert ticket is not None
        try:
            await links.serve_link(reader, writer, _Broken(), ticket=ticket)
        finally:
            ticket.release()

    async for port in _server(handle):
        yield port


async def test_our_bug_is_a_traceback_once_a_minute_however_often_a_peer_meets_it(
    broken: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    for number in range(5):
        link, _ = await links.open_link("127.0.0.1", broken, ARGUMENT)
        with pytest.raises(links.LinkClosedError):
            await link.transfer(message_apdu(f"bug-{number}"), timeout=10)
        await link.close()
    failures = [r for r in caplog.records if "failed while serving" in r.getMessage()]
    assert len(failures) == 1
    assert failures[0].levelno == logging.ERROR and failures[0].exc_info is not None
