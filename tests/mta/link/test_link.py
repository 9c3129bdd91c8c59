"""P1 associations over real loopback TCP: bind, transfers, refusal, timeouts, aborts, and
the turn in two-way alternate mode (X.228 7.6, 7.7)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from benchmarks import samples
from mta import link as links
from mta import net
from p1.association.connection import (
    Aborted,
    AssociationSettings,
    BindAccepted,
    BindRequested,
    P1Association,
    TransferConfirmed,
    TransferTooLong,
    TurnGiven,
)
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult
from p1.mts.envelope import Message, decode_mts_apdu
from p1.mts.precedence import Precedence
from p1.osi import Event, LocalProtocolError, Role
from p1.osi.rtse import DialogueMode

ARGUMENT = MTABindArgument(initiator_name="mta-a", password="a-pw")
RESULT = MTABindResult(responder_name="mta-b", password="b-pw")


@dataclass
class Store:
    """Accepts mta-a/a-pw; keeps what it is given, in order."""

    binds: list[BindRequested] = field(default_factory=list)
    stored: list[bytes] = field(default_factory=list)
    gate: asyncio.Event | None = None

    async def on_bind(self, event: BindRequested) -> MTABindResult | MTABindError:
        self.binds.append(event)
        if (event.argument.initiator_name, event.argument.password) != ("mta-a", "a-pw"):
            return MTABindError.AUTHENTICATION_ERROR
        return RESULT

    async def on_transfer(self, apdu: bytes) -> None:
        if self.gate is not None:
            await self.gate.wait()
        self.stored.append(apdu)

    async def on_transfer_too_long(self, event: TransferTooLong) -> None:
        raise links.TransferRefusedError(f"{event.size} octets: over max_message_size")


@dataclass
class Peer:
    store: Store
    port: int
    served: list[asyncio.Task[None]]


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    store = Store()
    served: list[asyncio.Task[None]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        served.append(task)
        await links.serve_link(reader, writer, store)

    server = await net.start_marked_server(handle, "127.0.0.1", 0, dscp=24)
    async with server:
        yield Peer(store, net.bound_port(server), served)


async def test_bind_transfer_three_messages_and_release(peer: Peer) -> None:
    settings = AssociationSettings(checkpoint_size=16, window_size=2)
    link, accepted = await links.open_link(
        "127.0.0.1", peer.port, ARGUMENT, settings=settings, dscp=24
    )
    assert accepted.result == RESULT
    assert (accepted.checkpoint_size, accepted.window_size) == (16, 2)
    messages = [
        samples.message_bytes(1024, Precedence.FLASH),
        samples.message_bytes(2048, Precedence.ROUTINE),
        samples.message_bytes(1024**2, Precedence.PRIORITY),
    ]
    ids = [await link.transfer(m, timeout=30) for m in messages]
    await link.release(timeout=10)
    assert ids == [1, 2, 3]
    assert peer.store.stored == messages  # byte for byte, in order, each once
    decoded = [decode_mts_apdu(m) for m in peer.store.stored]
    precedences = [m.envelope.precedence for m in decoded if isinstance(m, Message)]
    assert precedences == [Precedence.FLASH, Precedence.ROUTINE, Precedence.PRIORITY]


async def test_transfer_is_confirmed_only_after_the_store_returns(peer: Peer) -> None:
    peer.store.gate = asyncio.Event()
    link, _ = await links.open_link("127.0.0.1", peer.port, ARGUMENT)
    transfer = asyncio.create_task(link.transfer(samples.message_bytes(1024), timeout=30))
    try:
        await asyncio.sleep(0)  # let the transfer start; it cannot complete while gated
        done, _ = await asyncio.wait({transfer}, timeout=0.2)
        assert not done and peer.store.stored == []
        peer.store.gate.set()
        assert await transfer == 1
        assert len(peer.store.stored) == 1
    finally:
        transfer.cancel()
    await link.release(timeout=10)


async def test_wrong_password_is_refused_with_authentication_error(peer: Peer) -> None:
    wrong = MTABindArgument(initiator_name="mta-a", password="nope")
    with pytest.raises(links.BindRefusedError) as refused:
        await links.open_link("127.0.0.1", peer.port, wrong)
    assert refused.value.error is MTABindError.AUTHENTICATION_ERROR
    assert peer.store.binds[0].argument.password == "nope"


async def test_bind_times_out_on_a_silent_peer() -> None:
    ended = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # says nothing; returns when the client gives up and closes
        writer.close()
        ended.set()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        with pytest.raises(TimeoutError):
            await links.open_link("127.0.0.1", port, ARGUMENT, timeouts=links.Timeouts(bind=0.3))
        await ended.wait()  # the client closed its connection after the timeout


async def test_garbage_from_the_peer_closes_the_link_without_a_crash() -> None:
    ended = asyncio.Event()

    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(4096)
        writer.write(b"\x03\x00\x00\x08\xff\xff\xff\xff")  # a TPKT holding no valid TPDU
        await writer.drain()
        await reader.read()
        writer.close()
        ended.set()

    server = await asyncio.start_server(garbage, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        with pytest.raises(links.LinkError):
            await links.open_link("127.0.0.1", port, ARGUMENT)
        await ended.wait()


async def test_responder_survives_garbage_and_serves_the_next_peer(peer: Peer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", peer.port)
    writer.write(b"GET / HTTP/1.0\r\n\r\n")
    await writer.drain()
    assert await reader.read() is not None  # the responder closes the connection
    writer.close()
    link, accepted = await links.open_link("127.0.0.1", peer.port, ARGUMENT)
    assert accepted.result == RESULT
    await link.release(timeout=10)
    await asyncio.gather(*peer.served)  # every served connection ended without an exception


async def test_transfer_on_a_link_the_peer_dropped_raises(peer: Peer) -> None:
    link, _ = await links.open_link("127.0.0.1", peer.port, ARGUMENT)
    for task in peer.served:
        task.cancel()
    await asyncio.gather(*peer.served, return_exceptions=True)
    with pytest.raises(links.LinkClosedError):
        await link.transfer(samples.message_bytes(1024), timeout=10)
    await link.close()


BAD_TPKT = b"\x04\x00\x00\x08\x02\xf0\x80\x00"
"""A TPKT of version 4 (RFC 1006 has only 3): the byte stream is lost."""


Raw = tuple[P1Association, asyncio.StreamReader, asyncio.StreamWriter]


async def raw_bind(port: int, then: bytes) -> Raw:
    """Connect to ``port`` as an initiator association driven by hand, and write its CN
    (mta-a's bind) and ``then`` in one write."""
    association = P1Association(Role.INITIATOR)
    association.send_bind(ARGUMENT)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(association.data_to_send())  # CR
    connect = b""
    while not connect:  # CC in; the CN queued
        data = await asyncio.wait_for(reader.read(65536), 10)
        assert data, "the responder closed before its CC"
        assert association.receive_data(data) == []
        connect = association.data_to_send()
    writer.write(connect + then)
    await writer.drain()
    return association, reader, writer


async def read_to_end(association: P1Association, reader: asyncio.StreamReader) -> list[object]:
    """Feed ``association`` all the responder sends until it closes; the events."""
    events: list[object] = []
    while data := await asyncio.wait_for(reader.read(65536), 10):
        events.extend(association.receive_data(data))
    return events


def link_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "aiox400.link"]


async def test_a_bind_read_with_the_garbage_after_it_is_not_accepted(
    peer: Peer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400.link")
    association, reader, _ = await raw_bind(peer.port, then=BAD_TPKT)
    events = await read_to_end(association, reader)
    await asyncio.gather(*peer.served)
    assert not any(isinstance(event, BindAccepted) for event in events), events
    assert peer.store.binds == []  # never asked: the association had ended
    (line,) = link_lines(caplog)
    assert "aborted (by us): transport: tpkt: TPKT version 4" in line, line


async def test_a_transfer_read_with_the_garbage_after_it_is_not_stored(
    peer: Peer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400.link")
    association, reader, writer = await raw_bind(peer.port, then=b"")
    accepted: list[Event] = []
    while not accepted:
        accepted = association.receive_data(await asyncio.wait_for(reader.read(65536), 10))
    assert isinstance(accepted[0], BindAccepted), accepted
    association.send_transfer(samples.message_bytes(1024))
    writer.write(association.data_to_send() + BAD_TPKT)
    events = await read_to_end(association, reader)
    await asyncio.gather(*peer.served)
    assert not any(isinstance(event, TransferConfirmed) for event in events), events
    assert peer.store.stored == []  # it could not have been confirmed: the peer retries
    accepted_line, ended = link_lines(caplog)
    assert "accepted" in accepted_line
    assert "aborted (by us): transport: tpkt: TPKT version 4" in ended, ended


async def slow_transfer(port: int, apdu: bytes, *, chunk: int, pause: float) -> list[object]:
    """Bind as mta-a, then send one transfer ``chunk`` octets every ``pause`` seconds; the
    events that follow it, up to its confirmation or the end of the association."""
    association = P1Association(Role.INITIATOR)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    events: list[object] = []

    async def read() -> None:
        data = await reader.read(1 << 16)
        association_events = association.receive_data(data) if data else association.receive_eof()
        events.extend(association_events)
        writer.write(association.data_to_send())

    try:
        association.send_bind(ARGUMENT)
        writer.write(association.data_to_send())
        while not any(isinstance(e, BindAccepted) for e in events):
            await read()
        association.send_transfer(apdu)
        octets = association.data_to_send()
        for start in range(0, len(octets), chunk):
            writer.write(octets[start : start + chunk])
            await writer.drain()
            await asyncio.sleep(pause)
        while not any(isinstance(e, TransferConfirmed | Aborted) for e in events):
            await read()
    finally:
        writer.close()
    return events


@pytest.mark.slow
async def test_a_transfer_longer_than_the_idle_time_is_served_while_it_progresses() -> None:
    store = Store()
    served: list[asyncio.Task[object]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        served.append(task)
        # Idle for 0.5 s at most; the default progress, 1 KiB per 30 s, while a PDU arrives.
        await links.serve_link(reader, writer, store, timeouts=links.Timeouts(idle=0.5))

    server = await net.start_marked_server(handle, "127.0.0.1", 0, dscp=0)
    async with server:
        apdu = samples.message_bytes(64 * 1024)
        started = asyncio.get_running_loop().time()
        # 4 KiB every 0.1 s: some 1.7 s in all, more than three times the idle time.
        events = await slow_transfer(net.bound_port(server), apdu, chunk=4096, pause=0.1)
        elapsed = asyncio.get_running_loop().time() - started
        await asyncio.gather(*served)  # (it ends when it reads that the client closed)
    assert [type(e) for e in events] == [BindAccepted, TransferConfirmed]
    assert store.stored == [apdu]
    assert elapsed > 0.5


# --- the turn in two-way alternate mode (X.228 7.6, 7.7) -------------------------------

TWA = AssociationSettings(dialogue_mode=DialogueMode.TWA)
TURN_BOUND = 10.0
"""Seconds a whole two-way alternate exchange may take: a bound against a deadlock."""


async def test_twa_turn_given_is_given_back_on_request_then_released(
    peer: Peer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400.link")
    first, second = samples.message_bytes(1024), samples.message_bytes(2048)
    async with asyncio.timeout(TURN_BOUND):
        link, accepted = await links.open_link("127.0.0.1", peer.port, ARGUMENT, settings=TWA)
        assert accepted.dialogue_mode is DialogueMode.TWA
        await link.transfer(first, timeout=TURN_BOUND)
        await link.give_turn()  # RT-TURN-GIVE: the responder holds the turn now
        assert not link.association.has_turn
        with pytest.raises(LocalProtocolError):
            link.association.send_release()  # RT-CLOSE needs the turn
        await link.take_turn(priority=3, timeout=TURN_BOUND)  # RT-TURN-PLEASE, given back
        assert link.association.has_turn
        await link.transfer(second, timeout=TURN_BOUND)
        await link.release(timeout=TURN_BOUND)
        await asyncio.gather(*peer.served)
    assert peer.store.stored == [first, second]
    accepted_line, ended = link_lines(caplog)
    assert "two-way alternate" in accepted_line, accepted_line
    assert ended.endswith(": released"), ended


async def test_twa_release_asks_for_the_turn_back_first(peer: Peer) -> None:
    async with asyncio.timeout(TURN_BOUND):
        link, _ = await links.open_link("127.0.0.1", peer.port, ARGUMENT, settings=TWA)
        await link.give_turn()
        await link.release(timeout=TURN_BOUND)  # RT-TURN-PLEASE, RT-TURN-GIVE, RT-CLOSE
        await asyncio.gather(*peer.served)
    assert link.association.closed


async def test_twa_transfer_asks_for_the_turn_back_first(peer: Peer) -> None:
    apdu = samples.message_bytes(1024)
    async with asyncio.timeout(TURN_BOUND):
        link, _ = await links.open_link("127.0.0.1", peer.port, ARGUMENT, settings=TWA)
        for _ in range(3):  # the turn goes and comes back, each time on request
            await link.give_turn()
            await link.transfer(apdu, timeout=TURN_BOUND)
        await link.release(timeout=TURN_BOUND)
        await asyncio.gather(*peer.served)
    assert peer.store.stored == [apdu] * 3


async def test_twa_turn_request_by_hand_is_answered_by_rt_turn_give(peer: Peer) -> None:
    """The peer drives its association itself: GTC, then (once the GTA came) PT with an
    RTTP; the responder's GTC must come back without anything else from the peer."""
    association = P1Association(Role.INITIATOR, TWA)
    reader, writer = await asyncio.open_connection("127.0.0.1", peer.port)
    events: list[Event] = []

    async def read() -> None:
        data = await reader.read(1 << 16)
        assert data, "the responder closed the connection"
        events.extend(association.receive_data(data))
        writer.write(association.data_to_send())

    try:
        async with asyncio.timeout(TURN_BOUND):
            association.send_bind(ARGUMENT)
            writer.write(association.data_to_send())
            while not any(isinstance(e, BindAccepted) for e in events):
                await read()
            association.give_turn()
            writer.write(association.data_to_send())
            while association.giving_turn:  # until the responder's GTA
                await read()
            association.request_turn(5)
            writer.write(association.data_to_send())
            while not any(isinstance(e, TurnGiven) for e in events):
                await read()
            association.send_release()
            writer.write(association.data_to_send())
            while not association.closed:
                await read()
            await asyncio.gather(*peer.served)
    finally:
        writer.close()
    assert [type(e).__name__ for e in events] == ["BindAccepted", "TurnGiven", "Released"]
