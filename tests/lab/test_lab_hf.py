"""The lab over its HF wire, as root: one tiny case of the HF scenario (``python -m lab
--hf-scenario``; 1 KB at 57,600 bit/s with a 0.5 s turnaround) goes from site A to site B
within what the link can carry, its P1 confirmation comes back after a turnaround, a clear
channel loses nothing, and nothing of the run remains, the wire included.  Over ACP 142
the same message puts fewer octets on the air; and a message of 60 KB survives B's
daemon being stopped and started again while it is on the air (the lab's sites and wire
driven from the test, as ``python -m lab`` drives them).

Bounds only (the link's rate, the order of events), never absolute times.  Without root
or the tools the lab needs, the tests skip saying so; with ``AIOX400_REQUIRE_LAB=1`` they
fail instead.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from client.api import call_async
from lab.__main__ import IP_UDP_HEADERS
from lab.hf import HfSettings
from lab.hf_scenario import SITE_A, binary_ipm
from lab.sites import USER_A, USER_B, Acp142Link, Site, Watch, submit, two_sites
from lab.topology import Topology
from p1.ipms.ipm import ContentKind, decode_ipm
from p1.ipms.models import BinaryBodyPart
from p1.mts.envelope import Message, decode_mts_apdu
from p1.mts.precedence import Precedence
from tests.lab.as_root import (
    assert_nothing_left,
    lab_namespaces,
    require_lab,
    run_lab,
    veths,
    wires,
)

T = TypeVar("T")

pytestmark = pytest.mark.slow  # root, network namespaces, about a minute

RATE = 57_600
TURNAROUND = 0.5
SIZE = 1000


@pytest.fixture(autouse=True)
def _lab_possible() -> None:
    require_lab()


HfRun = tuple[dict[str, Any], subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def hf_run(tmp_path_factory: pytest.TempPathFactory) -> HfRun:
    figures = tmp_path_factory.mktemp("lab-hf") / "hf.json"
    done = run_lab(
        [
            "--hf-rate", str(RATE), "--hf-turnaround", str(TURNAROUND),
            "--hf-scenario", str(SIZE / 1000), "--json", str(figures),
        ],
        900,
    )  # fmt: skip
    return json.loads(figures.read_text()), done


def _message(hf_run: HfRun) -> dict[str, Any]:
    message: dict[str, Any]
    (message,) = hf_run[0]["messages"]
    assert message["size"] == SIZE
    return message


def test_the_wire_runs_the_profile_asked_for(hf_run: HfRun) -> None:
    profile = hf_run[0]["hf"]
    assert (profile["rate"], profile["turnaround"], profile["ber"]) == (RATE, TURNAROUND, 0)


def test_the_message_crossed_the_air_within_the_link_s_rate(hf_run: HfRun) -> None:
    message = _message(hf_run)
    assert 0 < message["link_use"] <= 1
    assert message["air_a"] >= SIZE * 8 / RATE  # (the payload at least went on the air)
    assert message["octets_a"] > SIZE


def test_the_confirmation_came_back_after_a_turnaround(hf_run: HfRun) -> None:
    message = _message(hf_run)
    assert message["turnarounds"] >= 1 and message["air_b"] > 0
    assert message["turnaround_seconds"] > 0  # (B answered within a turnaround of A's data)
    assert message["quiet"] > message["seconds"]
    assert message["link_use_quiet"] < message["link_use"]


def test_a_clear_channel_loses_nothing(hf_run: HfRun) -> None:
    message = _message(hf_run)
    assert message["lost"] == message["dropped"] == 0


def test_the_report_has_the_hf_table(hf_run: HfRun) -> None:
    report = hf_run[1].stdout
    assert "(h) One message at a time from A to B over the HF wire" in report
    assert re.search(r"^\| 1 KB \| [0-9.]+ \| [0-9.]+ % \|", report, re.MULTILINE), report


def test_no_wire_remains(hf_run: HfRun) -> None:
    said = re.search(r"lab: namespaces (\S+), (\S+), (\S+)", hf_run[1].stderr)
    assert said is not None, hf_run[1].stderr
    assert wires(set(said.groups())) == []


@pytest.fixture(scope="module")
def acp142_run(tmp_path_factory: pytest.TempPathFactory) -> HfRun:
    figures = tmp_path_factory.mktemp("lab-hf-acp142") / "hf.json"
    done = run_lab(
        [
            "--hf-rate", str(RATE), "--hf-turnaround", str(TURNAROUND),
            "--hf-scenario", str(SIZE / 1000), "--hf-transport", "acp142",
            "--json", str(figures),
        ],
        900,
    )  # fmt: skip
    return json.loads(figures.read_text()), done


def test_over_acp142_the_message_crosses_the_same_air(acp142_run: HfRun) -> None:
    assert acp142_run[0]["transport"] == "acp142"
    message = _message(acp142_run)
    assert 0 < message["link_use"] <= 1
    assert message["air_a"] >= SIZE * 8 / RATE
    assert message["lost"] == message["dropped"] == 0
    assert "STANAG 4406 Annex E over ACP 142" in acp142_run[1].stdout


def test_acp142_puts_fewer_octets_on_the_air_than_p1(hf_run: HfRun, acp142_run: HfRun) -> None:
    # The same message: one Address_PDU and a Data_PDU, compressed, against the OSI
    # stack's PDUs, the TCP segments and their acknowledgements.
    assert _message(acp142_run)["octets_a"] < _message(hf_run)["octets_a"]


# --- ACP 142 through the wire, its receiver restarted mid-transfer -----------------------

RESTART_SIZE = 60_000
"""Random octets: about 8.5 s on the air at 57,600 bit/s."""
STOP_AFTER = 12_000
"""Octets A has put on the air when B's daemon is stopped."""
RETRANSMISSION = 5.0
"""A waits this long after its PDUs left before it sends again what B has not
acknowledged: short, so that the test is."""


async def _octets_from_a(topology: Topology) -> float:
    return float((await topology.link_counters())["from"][SITE_A]["sent_octets"])


async def _until(probe: Callable[[], Awaitable[T]], done: Callable[[T], bool], what: str) -> T:
    """``probe()`` again every 0.2 s until ``done`` with it (a minute at most)."""
    deadline = time.monotonic() + 60
    while True:
        value = await probe()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"not within 60 s: {what} (last: {value!r})"
        await asyncio.sleep(0.2)


async def _entries(site: Site, user: str, kind: str) -> list[dict[str, Any]]:
    entries = (await site.api({"op": "inbox", "user": user}))["messages"]
    return [entry for entry in entries if entry["kind"] == kind]


async def _waiting(site: Site) -> list[dict[str, Any]]:
    """What ``site`` still holds, not yet transferred (acknowledged), delivered or failed."""
    counts = (await site.api({"op": "queue"}))["counts"]
    return [c for c in counts if c["state"] in ("pending", "in_flight", "held")]


async def _failed(site: Site) -> list[dict[str, Any]]:
    counts = (await site.api({"op": "queue"}))["counts"]
    return [c for c in counts if c["state"] == "failed"]


async def test_acp142_over_the_wire_survives_the_receiver_restarting(tmp_path: Path) -> None:
    """B's daemon is stopped while A's message is on the air and started again: the message
    is in B's store once, byte for byte, and A has it acknowledged; then a message of every
    precedence crosses once, each with its delivery report back over the wire (the only
    way from B to A)."""
    before = (lab_namespaces(), veths())
    hf = HfSettings(rate=RATE, turnaround=TURNAROUND)
    async with Topology(4000, hf=hf) as topology:
        pdu = topology.mtu - IP_UDP_HEADERS
        link = Acp142Link(rate=RATE, max_pdu_size=pdu, ack_delay=1.0, retransmission=RETRANSMISSION)
        async with two_sites(topology, tmp_path, link) as (a, b):
            start = await _octets_from_a(topology)
            content = binary_ipm(RESTART_SIZE, seed=7)
            await submit(a, Watch(b), RESTART_SIZE, "routine", content)
            await _until(
                lambda: _octets_from_a(topology), lambda n: n - start >= STOP_AFTER, "on air"
            )
            assert await _entries(b, USER_B, "message") == []
            b.stop()
            missed = await _octets_from_a(topology) - start
            assert missed < RESTART_SIZE  # (B had not all of it)
            await b.start()
            (stored,) = await _until(
                lambda: _entries(b, USER_B, "message"), bool, "the message in B's store"
            )
            await _until(lambda: _waiting(a), lambda left: not left, "acknowledged to A")
            _, apdu = await call_async(b.socket, {"op": "read", "user": USER_B, "id": stored["id"]})
            delivered = decode_mts_apdu(apdu)
            assert isinstance(delivered, Message)
            assert bytes(delivered.content) == content
            (part,) = decode_ipm(delivered.content, ContentKind.P772).body
            assert isinstance(part, BinaryBodyPart)
            assert part.data == random.Random(7).randbytes(RESTART_SIZE)
            assert len(await _entries(b, USER_B, "message")) == 1  # (once, resent or not)
            # What B missed while it was down went on the air again.
            assert await _octets_from_a(topology) - start >= RESTART_SIZE + missed

            precedences = [p.label for p in Precedence.most_urgent_first()]
            for label in precedences:
                await submit(a, Watch(b), 100, label, delivery_report=True)
            arrived = await _until(
                lambda: _entries(b, USER_B, "message"),
                lambda got: len(got) >= 1 + len(precedences),
                "a message of each precedence at B",
            )
            reports = await _until(
                lambda: _entries(a, USER_A, "report"),
                lambda got: len(got) >= len(precedences),
                "their delivery reports at A",
            )
            await _until(lambda: _waiting(a), lambda left: not left, "all acknowledged to A")
            await _until(lambda: _waiting(b), lambda left: not left, "the reports acknowledged")
            assert len(await _entries(b, USER_B, "message")) == len(arrived) == 7
            assert len(await _entries(a, USER_A, "report")) == len(reports) == len(precedences)
            subjects = sorted(entry["subject"] for entry in arrived if entry["id"] != stored["id"])
            assert subjects == sorted(f"lab {label}" for label in precedences)
            assert await _failed(a) == [] and await _failed(b) == []
    assert_nothing_left(before)
