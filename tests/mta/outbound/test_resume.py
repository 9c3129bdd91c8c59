"""A slot's connection resumes a transfer its last link's loss cut off (X.228 recovery):
it holds the message, still claimed, opens the next link with RT-OPEN recover and resumes
it from the checkpoint, and falls back on sending it afresh, or putting it back, when the
peer cannot resume it."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

import pytest

from config.loader import load_config
from mta.link import BindRefusedError, LinkClosedError, ResumeRefusedError
from mta.outbound import channels
from mta.outbound.channels import ChannelContext, SlotRunner
from p1.association.events import BindAccepted
from p1.association.mtabind import MTABindResult
from p1.mts.precedence import Precedence
from p1.osi.rtse import DialogueMode
from p1.osi.rtse_recovery import ResumePoint, SessionConnectionId
from tests.mta.outbound.test_channels import EXAMPLE, Queue, queued

LOST = SessionConnectionId(calling_reference=b"lost", common_reference=b"260422101500Z")
POINT = ResumePoint(identifier=LOST, activity_id=b"\x02\x01\x01", serial=3, offset=49152)
FURTHER = dataclasses.replace(POINT, serial=5, offset=81920)


@dataclass
class CutLink:
    """A link whose transfers of ``cut`` are cut off, leaving ``leaves`` to resume."""

    events: list[str]
    cut: set[bytes] = field(default_factory=set)
    leaves: ResumePoint | None = None
    kept_nothing: bool = False
    association: Any = field(default_factory=lambda: SimpleNamespace(resume_point=None))
    tls_version: str | None = None

    async def transfer(self, apdu: bytes, *, timeout: float) -> int:
        return self._end(apdu, "sent whole")

    async def resume(self, apdu: bytes, point: ResumePoint, *, timeout: float) -> int:
        if self.kept_nothing:
            self.events.append(f"{apdu.decode()} unrecognized")
            raise ResumeRefusedError("the peer kept nothing to resume")
        return self._end(apdu, f"resumed after {point.serial}")

    def _end(self, apdu: bytes, how: str) -> int:
        if apdu in self.cut:
            self.events.append(f"{apdu.decode()} cut")
            self.association.resume_point = self.leaves
            raise LinkClosedError("the connection was lost: reset by the peer")
        self.events.append(f"{apdu.decode()} {how}")
        return 1

    async def ended(self) -> str:
        return "the peer ended the idle association"


def runner_and_queue(count: int) -> tuple[SlotRunner, Queue]:
    """The routine slot with checkpoints, ``count`` messages queued for it."""
    config = load_config(EXAMPLE)
    peer = config.peers[0]
    (slot,) = [s for s in peer.slots if Precedence.ROUTINE in s.precedences]
    slot = dataclasses.replace(slot, checkpoint_size=16)
    queue = Queue([queued(f"m{n}") for n in range(1, count + 1)])
    context = ChannelContext(queue=queue, metrics=queue.metrics, config=config)
    runner = SlotRunner(context, peer, slot)
    runner._backlog = 4
    return runner, queue


def accepted(*, recovered: bool) -> BindAccepted:
    return BindAccepted(
        result=MTABindResult(),
        dialogue_mode=DialogueMode.MONOLOGUE,
        checkpoint_size=16,
        window_size=3,
        recovered=recovered,
    )


@dataclass
class Opener:
    """open_link's stand-in: each call's ``recover``, answered by the next link given."""

    links: list[tuple[CutLink, bool]]
    refuse_recovery: bool = False
    asked: list[SessionConnectionId | None] = field(default_factory=list)
    named: list[SessionConnectionId | None] = field(default_factory=list)

    async def __call__(self, host: str, port: int, argument: object, **options: Any) -> Any:
        recover = options["recover"]
        self.asked.append(recover)
        self.named.append(options["identifier"])
        if recover is not None and self.refuse_recovery:
            raise BindRefusedError(None, "refused without an MTA-bind error")
        link, recovered = self.links.pop(0)
        return link, accepted(recovered=recovered and recover is not None)


async def cut_off(runner: SlotRunner, queue: Queue, leaves: ResumePoint | None) -> Any:
    """The first connection's first transfer (m1) is cut off, leaving ``leaves``."""
    connection = channels._Connection(0)
    link = CutLink(queue.events, cut={b"m1"}, leaves=leaves)
    assert not await runner._serve(connection, cast(Any, link))
    return connection


async def test_a_transfer_cut_off_is_held_and_resumed_on_a_recovered_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner, queue = runner_and_queue(2)
    connection = await cut_off(runner, queue, POINT)
    assert connection.interrupted is not None and connection.interrupted.point == POINT
    assert queue.events == ["mark -, claim m1,m2", "m1 cut", "mark -, defer -, unclaim m2"]
    assert connection.waiting() == 1  # (held: the slot still wants the connection)
    opener = Opener([(CutLink(queue.events), True)])
    monkeypatch.setattr(channels, "open_link", opener)
    link = await runner._connect(connection)
    assert link is not None and connection.recovered
    assert opener.asked == [LOST] and opener.named[0] not in (None, LOST)
    assert not await runner._serve(connection, link)
    # (m2, made pending again, is the queue's to claim again: this one's stand-in
    # keeps no pending list)
    assert queue.events[3:] == ["m1 resumed after 3", "mark m1, claim -", "mark -, claim -"]
    assert connection.interrupted is None


async def test_a_peer_that_refuses_the_recovery_is_bound_afresh_and_sent_it_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner, queue = runner_and_queue(1)
    connection = await cut_off(runner, queue, POINT)
    opener = Opener([(CutLink(queue.events), True)], refuse_recovery=True)
    monkeypatch.setattr(channels, "open_link", opener)
    link = await runner._connect(connection)
    assert link is not None and not connection.recovered
    assert opener.asked == [LOST, None]  # refused, then bound at once
    assert connection.bind_refused is None  # (not a refused bind)
    assert not await runner._serve(connection, link)
    assert "m1 sent whole" in queue.events and "mark m1, claim -" in queue.events


async def test_a_peer_that_kept_nothing_gets_it_afresh_on_the_next_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner, queue = runner_and_queue(1)
    connection = await cut_off(runner, queue, POINT)
    opener = Opener(
        [(CutLink(queue.events, kept_nothing=True), True), (CutLink(queue.events), True)]
    )
    monkeypatch.setattr(channels, "open_link", opener)
    link = await runner._connect(connection)
    assert link is not None
    assert not await runner._serve(connection, link)
    assert connection.interrupted is not None and connection.interrupted.point is None
    link = await runner._connect(connection)
    assert link is not None and opener.asked == [LOST, None]
    assert not await runner._serve(connection, link)
    assert queue.events[2:] == [
        "m1 unrecognized",
        "m1 sent whole",
        "mark m1, claim -",
        "mark -, claim -",
    ]


async def test_a_resumption_cut_off_again_goes_on_from_the_further_checkpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner, queue = runner_and_queue(1)
    connection = await cut_off(runner, queue, POINT)
    again = CutLink(queue.events, cut={b"m1"}, leaves=FURTHER)
    opener = Opener([(again, True), (CutLink(queue.events), True)])
    monkeypatch.setattr(channels, "open_link", opener)
    for _ in range(2):
        link = await runner._connect(connection)
        assert link is not None
        assert not await runner._serve(connection, link)
    assert opener.asked == [LOST, LOST]  # (FURTHER names it too)
    assert queue.events[2:] == [
        "m1 cut",
        "m1 resumed after 5",
        "mark m1, claim -",
        "mark -, claim -",
    ]


async def test_a_resumption_that_gets_no_further_goes_back_to_the_queue(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner, queue = runner_and_queue(1)
    connection = await cut_off(runner, queue, POINT)
    again = CutLink(queue.events, cut={b"m1"}, leaves=POINT)  # no checkpoint further
    monkeypatch.setattr(channels, "open_link", Opener([(again, True)]))
    link = await runner._connect(connection)
    assert link is not None
    assert not await runner._serve(connection, link)
    assert connection.interrupted is None
    assert queue.events[2:] == ["m1 cut", "mark -, defer m1, unclaim -"]


async def test_without_a_checkpoint_confirmed_a_failed_transfer_goes_back_as_before() -> None:
    runner, queue = runner_and_queue(2)
    connection = await cut_off(runner, queue, None)
    assert connection.interrupted is None
    assert queue.events[-1] == "mark -, defer m1, unclaim m2"


async def test_a_peer_refusing_the_transfer_is_not_resumed() -> None:
    runner, queue = runner_and_queue(1)
    connection = channels._Connection(0)
    connection.refused = "user-error"  # (set by the failing transfer in real life)
    link = CutLink(queue.events, leaves=POINT)
    link.association.resume_point = POINT
    assert not runner._hold(connection, cast(Any, link), queued("m1"), b"m1")


async def test_a_retiring_slot_puts_what_it_held_back_as_it_was() -> None:
    runner, queue = runner_and_queue(1)
    connection = await cut_off(runner, queue, POINT)
    await runner._hand_over_held(connection)
    assert connection.interrupted is None
    assert queue.events[-1] == "mark -, defer -, unclaim m1"


async def test_a_peer_not_reached_again_in_time_gets_it_back_in_the_queue(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner, queue = runner_and_queue(1)
    connection = await cut_off(runner, queue, POINT)
    assert not runner._held_too_long(connection)
    monkeypatch.setattr(channels, "_RESUME_HOLD", -1.0)
    assert runner._held_too_long(connection)
    await runner._give_up_resuming(connection)
    assert queue.events[-1] == "mark -, defer m1, unclaim -"


async def test_a_routine_resumption_waits_for_flash_work_for_the_peer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner, queue = runner_and_queue(1)
    connection = await cut_off(runner, queue, POINT)
    opener = Opener([(CutLink(queue.events), True)])
    monkeypatch.setattr(channels, "open_link", opener)
    link = await runner._connect(connection)
    assert link is not None
    give_way = runner.context.give_way
    give_way.hold = 3600.0
    with give_way.during(Precedence.FLASH, [runner.peer.name]):
        serving = asyncio.create_task(runner._serve(connection, link))
        for _ in range(20):
            await asyncio.sleep(0)
        queue.events.append("flash work ends")
    async with asyncio.timeout(30):
        assert not await serving
    assert queue.events == [
        "mark -, claim m1",
        "m1 cut",
        "flash work ends",
        "m1 resumed after 3",
        "mark m1, claim -",
        "mark -, claim -",
    ]
