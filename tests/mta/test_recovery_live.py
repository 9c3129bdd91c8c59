"""Recovery live (X.228): a 1 MB message over a connection cut twice mid-transfer.

Site A's routine slot reaches site B through a TCP proxy (:mod:`tests.support.proxy`)
that counts the octets A sends and cuts (resets) the connection after a set number of
them, twice.  With
a ``checkpoint_size`` on the slot, each connection lost goes on from the last confirmed
checkpoint on the next one (RT-OPEN recover, S-ACTIVITY-RESUME); without one, each
attempt sends the message again from its first octet.  Either way B delivers it once,
and A sends fewer octets with recovery than without (an ordering, not a time).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from p1.mts.envelope import Message, decode_mts_apdu
from tests.support.proxy import CuttingProxy
from tests.support.sites import Lab, eventually

ROUTINE_SLOT = 3
"""The lab's routine slot (LAB_SLOTS): on demand, the one the message travels on."""
CUTS = (400_000, 400_000)
"""Octets from A after which the proxy cuts the first and the second connection."""


async def proxied_lab(directory: Path, *, half_open: bool = False) -> tuple[Lab, CuttingProxy]:
    """A lab whose A reaches B's routine listener through a proxy cutting twice."""
    lab = Lab.create(directory)
    slot = lab.a.settings["peers"][0]["slots"][ROUTINE_SLOT]
    proxy = CuttingProxy(upstream=slot["port"], cuts=CUTS, half_open=half_open)
    slot["port"] = await proxy.start()
    return lab, proxy


async def send_a_megabyte(lab: Lab) -> str:
    """1 MB from Smith at A to Jones at B, routine; its MTS identifier once B has it,
    delivered once and whole."""
    smith, jones = lab.a.address("Smith"), lab.b.address("Jones")
    argv = ["send", "--socket", str(lab.a.socket), "--from", smith, "--to", jones]
    code, out, err = await lab.a.x400(*argv, "--subject", "big", "--size", "1M")
    assert code == 0, err
    identifier = out.strip()
    (entry,) = await eventually(
        lambda: lab.b.inbox(jones), lambda found: len(found) >= 1, what="1 MB at B"
    )
    _, apdu = await lab.b.read(jones, entry["id"])
    message = decode_mts_apdu(apdu)
    assert isinstance(message, Message)
    assert message.envelope.mts_identifier.text == identifier
    assert len(message.content) > 1024 * 1024 and entry["size"] == len(apdu)
    return identifier


async def octets_for_a_megabyte(
    directory: Path, *, checkpoint_size: int, half_open: bool = False
) -> int:
    """Send the megabyte on a slot of ``checkpoint_size`` (0: none) whose connection is
    cut twice; the octets A sent, once B delivered it, once."""
    lab, proxy = await proxied_lab(directory, half_open=half_open)
    try:
        lab.a.settings["peers"][0]["slots"][ROUTINE_SLOT]["checkpoint_size"] = checkpoint_size
        await lab.start()
        await send_a_megabyte(lab)
        await eventually(
            lambda: lab.a.api({"op": "queue"}),
            lambda answer: all(c["state"] == "transferred" for c in answer["counts"]),
            what="A's queue done",
        )
        assert len(await lab.b.inbox(lab.b.address("Jones"))) == 1
        assert proxy.sent[: len(CUTS)] == list(CUTS)  # both cuts happened
        return proxy.total
    finally:
        await proxy.close()
        await lab.close()


async def test_a_megabyte_cut_twice_arrives_once_and_recovery_sends_less(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    resumed = await octets_for_a_megabyte(tmp_path / "resumed", checkpoint_size=16)
    restarted = await octets_for_a_megabyte(tmp_path / "restarted", checkpoint_size=0)
    record_property("octets sent, with recovery", resumed)
    record_property("octets sent, without recovery", restarted)
    print(f"1 MB cut twice: {resumed} octets sent with recovery, {restarted} without")
    assert resumed < restarted
    # Without recovery the whole message went once more after the cuts; with it, what
    # followed the last confirmed checkpoint only.
    assert restarted > sum(CUTS) + 1024 * 1024 > resumed


async def test_a_receiver_that_has_not_seen_the_cut_hands_the_transfer_over(
    tmp_path: Path,
) -> None:
    # B's end of each cut connection stays open: the recovery that names it ends it, as
    # lost, and goes on from what it had.
    resumed = await octets_for_a_megabyte(tmp_path, checkpoint_size=16, half_open=True)
    assert resumed < sum(CUTS) + 1024 * 1024
