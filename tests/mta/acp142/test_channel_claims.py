"""An ACP 142 channel shared by the peers of a multicast group (mta.acp142.channel) claims
for all of them in one go: every peer's claim is queued before any is awaited, so that
the claims share one transaction and a message for several of the peers is claimed for
all of them at once, and sent once.  (Claimed peer by peer, with an await between, a
submission committed between two claims was split into one transmission per peer.)"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, cast

from mta.acp142.channel import Acp142Channel
from p1.mts.precedence import Precedence
from store import ApduKind, QueueEntry


def _entry(message_id: int) -> QueueEntry:
    return QueueEntry(
        message_id=message_id,
        mts_identifier=f"m{message_id}",
        kind=ApduKind.MESSAGE,
        precedence=Precedence.ROUTINE,
        originator="C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith",
        apdu=b"",
        arrival_time=datetime(2026, 11, 29, tzinfo=UTC),
        expiry_time=None,
        origin_peer=None,
        recipients=(),
    )


class Queue:
    """Claims queued, each answered only when the test says."""

    def __init__(self) -> None:
        self.claims: list[tuple[str, asyncio.Future[tuple[QueueEntry, ...]]]] = []

    def claim(self, peer: str, *_: Any, **__: Any) -> asyncio.Future[tuple[QueueEntry, ...]]:
        future: asyncio.Future[tuple[QueueEntry, ...]] = asyncio.get_running_loop().create_future()
        self.claims.append((peer, future))
        return future


async def test_every_peer_s_claim_is_queued_before_any_is_awaited() -> None:
    queue = Queue()
    peers = [SimpleNamespace(name=name, acp142=SimpleNamespace(window=8)) for name in ("B", "C")]
    context = SimpleNamespace(queue=queue)
    channel = Acp142Channel(
        cast(Any, context), cast(Any, peers), cast(Any, None), parts=cast(Any, None)
    )
    sent: list[dict[str, QueueEntry]] = []

    async def send(parts: dict[str, QueueEntry]) -> None:
        sent.append(parts)

    channel._send = send  # type: ignore[method-assign,assignment]
    claiming = asyncio.create_task(channel._claim())
    await asyncio.sleep(0)
    # Both peers' claims (urgent, then all precedences) are queued before the first answer.
    assert [peer for peer, _ in queue.claims] == ["B", "B", "C", "C"]
    # One routine message for both peers, committed before this transaction: each peer's
    # claim of every precedence finds its part of it.
    message = _entry(7)
    for number, (_, future) in enumerate(queue.claims):
        future.set_result((message,) if number % 2 else ())
    await claiming
    assert [sorted(parts) for parts in sent] == [["B", "C"]]
