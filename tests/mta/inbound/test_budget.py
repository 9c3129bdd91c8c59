"""The inbound buffer's accounting (:mod:`mta.inbound.budget`), and a link held to it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from mta import link as links
from mta import net
from mta.inbound.budget import InboundBudget
from p1.association.connection import BindRequested, TransferTooLong
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult
from tests.fuzz.corpus import message_apdu


def test_shares_take_from_one_budget_until_it_is_spent() -> None:
    budget = InboundBudget(100)
    first, second = budget.share(1000), budget.share(1000)
    assert first.take(60) and budget.used == 60
    assert not second.take(41)  # (nothing taken)
    assert (second.held, budget.used) == (0, 60)
    assert second.take(40) and budget.used == 100
    first.give_back()
    assert (first.held, budget.used) == (0, 40)
    assert first.take(60)


def test_a_share_holds_no_more_than_its_most() -> None:
    budget = InboundBudget(100)
    share = budget.share(30)
    assert share.take(25) and share.take(25)  # (the second counts 5)
    assert (share.held, budget.used) == (30, 30)
    assert share.take(1000) and budget.used == 30


def test_a_smaller_budget_refuses_new_takes_and_keeps_what_is_held() -> None:
    budget = InboundBudget(100)
    share = budget.share(1000)
    assert share.take(80)
    budget.resize(50)
    assert not budget.share(1000).take(1)
    share.give_back()
    assert budget.used == 0 and budget.share(1000).take(50)


# --- on a link: a read past the buffer -------------------------------------------------


class _Taker:
    """Accepts any bind, takes every transfer."""

    def __init__(self) -> None:
        self.stored: list[bytes] = []

    async def on_bind(self, event: BindRequested) -> MTABindResult | MTABindError:
        return MTABindResult(responder_name="mta-b", password="b-pw")

    async def on_transfer(self, apdu: bytes) -> None:
        self.stored.append(apdu)

    async def on_transfer_too_long(self, event: TransferTooLong) -> None:
        raise links.TransferRefusedError("not expected")


@pytest.fixture
async def served() -> AsyncIterator[tuple[int, InboundBudget, _Taker, list[asyncio.Task[None]]]]:
    budget, taker, tasks = InboundBudget(256 * 1024), _Taker(), []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.append(task)
        await links.serve_link(reader, writer, taker, budget=budget)

    server = await net.start_marked_server(handle, "127.0.0.1", 0, dscp=0)
    async with server:
        yield net.bound_port(server), budget, taker, tasks


async def test_a_read_past_the_buffer_aborts_as_temporary_and_gives_its_share_back(
    served: tuple[int, InboundBudget, _Taker, list[asyncio.Task[None]]],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    port, budget, taker, tasks = served
    aborts: list[tuple[str, bool]] = []
    abort = links.Link.abort

    async def recorded(link: links.Link, why: str, *, temporary: bool = False) -> None:
        aborts.append((why, temporary))
        await abort(link, why, temporary=temporary)

    monkeypatch.setattr(links.Link, "abort", recorded)
    argument = MTABindArgument(initiator_name="mta-a", password="a-pw")
    link, _ = await links.open_link("127.0.0.1", port, argument)
    with pytest.raises((links.LinkError, OSError)):
        await link.transfer(message_apdu("large", size=2 << 20), timeout=20)
    await link.close()
    await asyncio.wait_for(asyncio.gather(*tasks), 20)
    assert [temporary for why, temporary in aborts if "max_inbound_buffer" in why] == [True]
    assert budget.used == 0 and taker.stored == []
    spent = [r for r in caplog.records if "max_inbound_buffer is spent" in r.getMessage()]
    assert len(spent) == 1 and spent[0].levelno == logging.WARNING
    link, _ = await links.open_link("127.0.0.1", port, argument)  # (its own link: a new task)
    await link.transfer(message_apdu("small"), timeout=20)
    await link.release(timeout=10)
    assert len(taker.stored) == 1 and budget.used == 0
