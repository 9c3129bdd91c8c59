"""``x400ctl status|queue|channels|hold|release`` against a running MTA (its local API).

Site A runs and site B does not, so A's messages to B wait in the queue and A's slots
to B cannot connect: what an operator looks at when a peer is down.  ``x400ctl.main``
blocks on the daemon's socket, so it runs in a worker thread while the event loop
serves the daemon.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from client import x400ctl
from config.schema import RetryPolicy
from p1.mts.precedence import Precedence
from tests.mta.sites import Lab, Site, eventually


@pytest.fixture
async def site_a(tmp_path: Path) -> AsyncIterator[Site]:
    """Site A started; its peer B configured but down."""
    lab = Lab.create(tmp_path)
    await lab.a.start()
    try:
        yield lab.a
    finally:
        await lab.stop()


async def ctl(site: Site, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``x400ctl ARGV... --socket <site's>``: exit code, output, errors."""
    code = await asyncio.to_thread(x400ctl.main, [*argv, "--socket", str(site.socket)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def queue_to_b(site: Site) -> list[str]:
    jones_at_b = "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones"
    return await site.send(site.address("Smith"), jones_at_b, Precedence.FLASH, count=2)


async def test_status_names_the_mta_and_counts_what_waits(
    site_a: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    await queue_to_b(site_a)
    code, out, err = await ctl(site_a, capsys, "status")
    assert code == x400ctl.EXIT_OK, err
    assert out.startswith("MTA-A: up ")
    assert "pending 2" in out
    assert "slots: 0 of 4 connected" in out or "of 4 connected" in out
    assert "garbage collector: " in out


async def test_status_names_a_degraded_part_with_its_last_error(
    site_a: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    parts = site_a.running.parts
    parts.backoff = RetryPolicy(initial=3600.0, maximum=3600.0, factor=1.0, jitter=0.0)
    broken = asyncio.Event()

    async def fails() -> None:
        broken.set()
        raise OSError(28, "No space left on device")

    parts.start("mailbox watch", fails)
    await asyncio.wait_for(broken.wait(), 10)
    await asyncio.sleep(0)
    code, out, err = await ctl(site_a, capsys, "status")
    assert code == x400ctl.EXIT_OK, err
    [line] = [line for line in out.splitlines() if line.startswith("DEGRADED")]
    assert line.startswith("DEGRADED mailbox watch: 1 failure(s) in ")
    assert line.endswith("last: no space left on device")
    assert "STORE UNAVAILABLE: no space left on device (transfers refused unconfirmed)" in out


async def test_queue_shows_recipients_by_route_precedence_and_state(
    site_a: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    await queue_to_b(site_a)
    code, out, err = await ctl(site_a, capsys, "queue")
    assert code == x400ctl.EXIT_OK, err
    header, *rows = out.splitlines()
    assert header.split()[:3] == ["ROUTE", "PRECEDENCE", "pending"]
    assert rows == [
        f"{'MTA-B':<16} {'flash':<10} " + " ".join(f"{n:>11}" for n in (2, 0, 0, 0, 0, 0))
    ]


async def test_an_empty_queue_says_so(site_a: Site, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = await ctl(site_a, capsys, "queue")
    assert (code, out) == (x400ctl.EXIT_OK, "the queue is empty\n")


async def test_channels_show_each_slot_with_its_port_dscp_mode_and_error(
    site_a: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    # The permanent slots try to reach B, which is down: each shows why it failed.
    async def refused() -> str:
        return (await ctl(site_a, capsys, "channels"))[1]

    out = await eventually(
        refused, lambda text: text.count("cannot connect") >= 3, what="three slots refused"
    )
    lines = out.splitlines()
    slots = [line for line in lines if line.startswith("MTA-B ")]
    assert [line.split()[1] for line in slots] == [
        "override+flash",
        "immediate",
        "priority",
        "routine+deferred",
    ]
    # A permanent slot that cannot reach B is down (or trying again); the on-demand one,
    # with nothing to send, has no connection.
    states = [line.split()[2] for line in slots]
    assert all(state in {"down:", "connecting:"} for state in states[:3]), states
    assert states[3] == "closed:"
    assert [line.split()[6] for line in slots] == ["CS3", "CS2", "CS1", "CS0"]
    assert ["permanent," in line for line in slots] == [True, True, True, False]
    assert "on-demand," in slots[3]


async def test_hold_and_release_change_the_queued_recipients(
    site_a: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    await queue_to_b(site_a)
    code, out, err = await ctl(site_a, capsys, "hold", "1", "2")
    assert (code, out) == (x400ctl.EXIT_OK, "hold: 2 recipient(s) changed\n"), err
    _, queued, _ = await ctl(site_a, capsys, "queue")
    assert queued.splitlines()[1].split()[2:5] == ["0", "0", "2"]  # pending, in flight, held
    code, out, _ = await ctl(site_a, capsys, "release", "1", "2")
    assert (code, out) == (x400ctl.EXIT_OK, "release: 2 recipient(s) changed\n")


async def test_a_stopped_mta_is_reported_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = await asyncio.to_thread(
        x400ctl.main, ["status", "--socket", str(tmp_path / "nothing.sock")]
    )
    err = capsys.readouterr().err
    assert code == x400ctl.EXIT_REFUSED
    assert "x400ctl status: the MTA is not running" in err


async def test_queue_list_gives_the_message_ids_that_hold_takes(
    site_a: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    identifiers = await queue_to_b(site_a)
    code, out, err = await ctl(site_a, capsys, "queue", "--list")
    assert code == x400ctl.EXIT_OK, err
    header, *rows = out.splitlines()
    assert header.split()[:4] == ["ID", "PRECEDENCE", "STATE", "TRIES"]
    listed = {i: row.split()[0] for i in identifiers for row in rows if f"  {i}  " in row}
    assert set(listed) == set(identifiers)
    assert all(row.split()[2] == "pending" for row in rows)
    first = listed[identifiers[0]]
    code, out, _ = await ctl(site_a, capsys, "hold", first)
    assert out == "hold: 1 recipient(s) changed\n"
    _, out, _ = await ctl(site_a, capsys, "queue", "--list")
    held = [row for row in out.splitlines() if identifiers[0] in row]
    assert held and held[0].split()[2] == "held"
