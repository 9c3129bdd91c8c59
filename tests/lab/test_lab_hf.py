"""The lab over its HF wire, as root: one tiny case of the HF scenario (``python -m lab
--hf-scenario``; 1 KB at 57,600 bit/s with a 0.5 s turnaround) goes from site A to site B
within what the link can carry, its P1 confirmation comes back after a turnaround, a clear
channel loses nothing, and nothing of the run remains, the wire included.

Bounds only (the link's rate, the order of events), never absolute times.  Without root
or the tools the lab needs, the tests skip saying so; with ``AIOX400_REQUIRE_LAB=1`` they
fail instead.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest

from tests.lab.as_root import require_lab, run_lab, wires

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
