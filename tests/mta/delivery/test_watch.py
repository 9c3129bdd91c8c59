"""The mailbox watch: waiters woken by the commits for their user, forgotten after, and
told when the daemon stops."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mta.delivery.watch import MailboxWatch, WatchClosedError

AT = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


async def test_a_commit_wakes_the_waiters_of_its_users_only() -> None:
    watch = MailboxWatch()
    with watch.watching("anne") as anne, watch.watching("anne") as again:
        with watch.watching("bob") as bob:
            assert watch.waiting == 3
            watch.stored(["anne", "carol"], AT)
            assert (await anne, await again) == (AT, AT)
            assert not bob.done()
        assert watch.waiting == 0


async def test_a_waiter_is_forgotten_when_its_block_ends() -> None:
    watch = MailboxWatch()
    with watch.watching("anne") as first:
        pass
    assert watch.waiting == 0 and not first.done()
    watch.stored(["anne"], AT)  # nobody left to wake
    assert not first.done()
    with watch.watching("anne") as second:
        watch.stored(["anne"], AT)
        assert second.result() == AT


async def test_close_tells_every_waiter_now_and_later() -> None:
    watch = MailboxWatch()
    with watch.watching("anne") as waiting:
        watch.close()
        with pytest.raises(WatchClosedError):
            await waiting
    with watch.watching("bob") as later, pytest.raises(WatchClosedError):
        await later
    assert watch.waiting == 0
