"""``x400ctl status|queue|channels|hold|release|quarantine`` against a running MTA (its
local API).

Site A runs and site B does not, so A's messages to B wait in the queue and A's slots
to B cannot connect: what an operator looks at when a peer is down.  ``x400ctl.main``
blocks on the daemon's socket, so it runs in a worker thread while the event loop
serves the daemon.  For the quarantine, the test binds to A as B would and transfers
what A cannot take in.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from client import api, x400ctl
from config.schema import RetryPolicy
from mta.link import open_link
from p1.association.mtabind import MTABindArgument
from p1.mts.orname import ORName
from p1.mts.precedence import Precedence
from tests.support.sites import B, Lab, Site, eventually, message_from_a


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


async def test_status_finds_the_mta_by_the_default_configuration(
    site_a: Site, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AIOX400_CONFIG", raising=False)
    monkeypatch.setattr(api, "DEFAULT_CONFIG", site_a.config_file)
    code = await asyncio.to_thread(x400ctl.main, ["status"])
    captured = capsys.readouterr()
    assert (code, captured.err) == (x400ctl.EXIT_OK, "")
    assert captured.out.startswith("MTA-A: up ")


async def test_status_names_the_mta_and_counts_what_waits(
    site_a: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    await queue_to_b(site_a)
    code, out, err = await ctl(site_a, capsys, "status")
    assert code == x400ctl.EXIT_OK, err
    assert out.startswith("MTA-A: up ")
    assert "pending 2" in out
    assert "of 4 connected" in out
    assert "garbage" not in out  # the daemon's internals are not the operator's


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
    assert [row.split() for row in rows] == [["MTA-B", "flash", "2", "0", "0", "0", "0", "0"]]


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
    assert not any(" TLS " in line for line in slots)  # (plain TCP: no TLS said)


async def test_hold_and_release_change_the_queued_recipients(
    site_a: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    await queue_to_b(site_a)
    code, out, err = await ctl(site_a, capsys, "hold", "1", "2")
    assert (code, out) == (x400ctl.EXIT_OK, "held 2 recipient(s) of 2 message(s)\n"), err
    _, queued, _ = await ctl(site_a, capsys, "queue")
    assert queued.splitlines()[1].split()[2:5] == ["0", "0", "2"]  # pending, in flight, held
    code, out, _ = await ctl(site_a, capsys, "release", "1", "2")
    assert (code, out) == (x400ctl.EXIT_OK, "released 2 recipient(s) of 2 message(s)\n")


async def test_a_stopped_mta_is_reported_with_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = await asyncio.to_thread(
        x400ctl.main, ["status", "--socket", str(tmp_path / "nothing.sock")]
    )
    err = capsys.readouterr().err
    assert code == x400ctl.EXIT_UNREACHABLE == 3
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
    assert out == "held 1 recipient(s) of 1 message(s)\n"
    _, out, _ = await ctl(site_a, capsys, "queue", "--list")
    held = [row for row in out.splitlines() if identifiers[0] in row]
    assert held and held[0].split()[2] == "held"


# --- quarantine ------------------------------------------------------------------------------

AT_SIGN = ORName(country="GB", admd=" ", prmd="SITEA", organization="HQ", surname="Jo@nes")
"""Encoded as given: a PrintableString holding '@', so the envelope does not decode."""


async def transfer_as_b(site: Site, *apdus: bytes) -> None:
    """Bind to ``site`` as its peer MTA-B, transfer ``apdus`` (each confirmed), release."""
    argument = MTABindArgument(initiator_name=B.name, password=B.password)
    link, _ = await open_link("127.0.0.1", site.running.listening_ports[2], argument)
    try:
        for apdu in apdus:
            await link.transfer(apdu, timeout=30)
        await link.release(timeout=10)
    finally:
        await link.close()


async def test_quarantine_list_show_and_delete(
    site_a: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await ctl(site_a, capsys, "quarantine", "list")
    assert (code, out) == (x400ctl.EXIT_OK, "the quarantine is empty\n"), err
    bad = [message_from_a(f"bad-{n}", AT_SIGN) for n in range(2)]
    await transfer_as_b(site_a, *bad)

    code, out, err = await ctl(site_a, capsys, "quarantine", "list")
    assert code == x400ctl.EXIT_OK, err
    header, *rows = out.splitlines()
    assert header.split() == ["ID", "RECEIVED", "PEER", "OCTETS", "REASON"]
    assert len(rows) == 2
    ids = [row.split()[0] for row in rows]
    assert int(ids[0]) < int(ids[1])
    for row, apdu in zip(rows, bad, strict=True):
        fields = row.split(maxsplit=4)
        assert fields[2:4] == ["MTA-B", str(len(apdu))]
        assert fields[4].startswith("the MTS-APDU does not decode: ")
        assert "surname: '@' at 2 is not a PrintableString character" in fields[4]

    code, out, err = await ctl(site_a, capsys, "quarantine", "show", ids[1])
    assert code == x400ctl.EXIT_OK, err
    lines = out.splitlines()
    assert lines[0] == f"id:       {ids[1]}"
    assert lines[2:4] == ["peer:     MTA-B", f"octets:   {len(bad[1])}"]
    assert lines[-1] == f"the octets: x400ctl quarantine show {ids[1]} --raw | x400-dump -"

    code, out, err = await ctl(site_a, capsys, "status")
    assert f"quarantine: 2 of 1000 messages, {len(bad[0]) + len(bad[1]):,} of " in out, err

    code, out, err = await ctl(site_a, capsys, "quarantine", "delete", ids[0], "999999")
    assert (code, out) == (x400ctl.EXIT_OK, "deleted 1 of 2\n"), err
    _, out, _ = await ctl(site_a, capsys, "quarantine", "list")
    assert [row.split()[0] for row in out.splitlines()[1:]] == [ids[1]]
    code, _, err = await ctl(site_a, capsys, "quarantine", "show", ids[0])
    assert code == x400ctl.EXIT_REFUSED
    assert err == f"x400ctl quarantine: no entry {ids[0]} in the quarantine\n"


@pytest.mark.slow
async def test_quarantine_show_raw_gives_the_octets_to_x400_dump(site_a: Site) -> None:
    bad = message_from_a("bad-raw", AT_SIGN)
    await transfer_as_b(site_a, bad)
    (entry,) = (await site_a.api({"op": "quarantine"}))["entries"]
    bin_dir = Path(sys.executable).parent
    show = await asyncio.create_subprocess_exec(
        str(bin_dir / "x400ctl"),
        "quarantine",
        "show",
        str(entry["id"]),
        "--raw",
        "--socket",
        str(site_a.socket),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    raw, err = await show.communicate()
    assert (show.returncode, err) == (x400ctl.EXIT_OK, b"")
    assert raw == bad
    dump = await asyncio.create_subprocess_exec(
        str(bin_dir / "x400-dump"),
        "-",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, why = await dump.communicate(raw)
    assert dump.returncode == 1  # not a valid PDU: it says why and where
    assert b"surname: '@' at 2 is not a PrintableString character" in why


def test_quarantine_help_names_its_actions(capsys: pytest.CaptureFixture[str]) -> None:
    assert x400ctl.main(["quarantine", "--help"]) == x400ctl.EXIT_OK
    out = capsys.readouterr().out
    actions = [line.split()[0] for line in out.splitlines() if line.startswith("    ")]
    assert actions == ["list", "show", "delete"]
    assert "([quarantine] max_messages, max_bytes)" in " ".join(out.split())
    assert x400ctl.main(["quarantine"]) == x400ctl.EXIT_USAGE
