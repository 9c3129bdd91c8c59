"""The bounded fuzz run: mutated real conversations, to the stack and to a real daemon.

Real conversations (the reference captures and our own initiator talking to our own
responder, :mod:`tests.fuzz.corpus`) are changed at one layer at a time, TPKT to MTS-APDU
(:mod:`tests.fuzz.mutate`), with a fixed seed, and played:

- sans-I/O, to a fresh responder (the initiator's side) and a fresh initiator (the
  responder's side): nothing may raise, and the association must say how it ended
  (:mod:`tests.fuzz.drive`);
- over TCP to ``x400-mta`` in a subprocess: afterwards it is up, its log holds no
  traceback and no CRITICAL line, its memory and descriptors did not grow, no mailbox
  exists that the configuration does not name, and a valid transfer is delivered
  (:mod:`tests.fuzz.live`).

The captures are in ``<shared>/reference/pcaps``; without them only our own
conversations are played, unless ``AIOX400_REQUIRE_SHARED`` is set (CI), which makes
their absence a failure.  ``python -m tests.fuzz`` is the long run of the same.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.fuzz.corpus import Recorded, captured, corpus, shared_pcaps
from tests.fuzz.drive import run_cases
from tests.fuzz.layers import Layer, encode_stream, parse_stream
from tests.fuzz.live import run_live
from tests.fuzz.mutate import DEFAULT_SEED, Mutator
from tests.fuzz.pcap import read_conversations

pytestmark = pytest.mark.slow  # thousands of mutated conversations, and x400-mta as a process

SANS_IO_CASES = 4000
"""Per side: some 5 s each."""
LIVE_CASES = 1500
"""Connections to the daemon: some 30 s."""
_SHOWN = 10


def _pcaps() -> Path:
    pcaps = shared_pcaps()
    if pcaps is None:
        why = "the reference captures (<shared>/reference/pcaps) are absent"
        if os.environ.get("AIOX400_REQUIRE_SHARED"):
            pytest.fail(why)  # CI must read them, never skip
        pytest.skip(why)
    return pcaps


@pytest.fixture(scope="module")
def conversations() -> list[Recorded]:
    try:
        return corpus(require_shared=bool(os.environ.get("AIOX400_REQUIRE_SHARED")))
    except FileNotFoundError as error:
        pytest.fail(str(error))  # CI must fuzz with the captures, never without


@pytest.fixture(scope="module")
def mutator(conversations: list[Recorded]) -> Mutator:
    return Mutator(conversations, DEFAULT_SEED)


# --- the harness itself -----------------------------------------------------------------


def test_pcap_reader_gives_the_tpkts_tshark_saw() -> None:
    for path in sorted(_pcaps().rglob("*.pcap")):
        records = [
            json.loads(line)
            for line in path.with_suffix(".tpkts.jsonl").read_text().splitlines()
            if line.strip()
        ]
        for conversation in read_conversations(path):
            ports = (conversation.client_port, conversation.server_port)
            forward = [r["hex"] for r in records if (r["src_port"], r["dst_port"]) == ports]
            back = [r["hex"] for r in records if (r["dst_port"], r["src_port"]) == ports]
            assert conversation.client_data.hex() == "".join(forward), conversation.name
            assert conversation.server_data.hex() == "".join(back), conversation.name


def test_every_conversation_is_written_back_as_it_came(conversations: list[Recorded]) -> None:
    for record in conversations:
        for writes in (record.client, record.server):
            data = b"".join(writes)
            assert encode_stream(parse_stream(data)) == data, record.name


def test_captures_are_in_the_corpus() -> None:
    names = {record.name for record in captured(_pcaps())}
    assert "21-pp-to-aiox-p22#1" in names and "x400-ping-success#1" in names


def test_cases_follow_from_seed_and_number(conversations: list[Recorded]) -> None:
    first, again = Mutator(conversations, 1), Mutator(conversations, 1)
    for index in range(50):
        assert first.case(index) == again.case(index)
    layers = {Mutator(conversations, 1).case(index).layer for index in range(400)}
    assert layers == set(Layer)


# --- level 1: the stack -------------------------------------------------------------------


@pytest.mark.parametrize("from_client", [True, False], ids=["to-responder", "to-initiator"])
def test_mutated_conversations_give_the_stack_only_events(
    mutator: Mutator, from_client: bool
) -> None:
    failures = run_cases(mutator, range(SANS_IO_CASES), from_client=from_client)
    shown = "\n".join(f.describe(mutator.seed) for f in failures[:_SHOWN])
    assert not failures, f"{len(failures)} of {SANS_IO_CASES} cases failed:\n{shown}"


# --- level 2: a real daemon ---------------------------------------------------------------


async def test_daemon_serves_on_through_mutated_conversations(
    mutator: Mutator, tmp_path: Path
) -> None:
    cases = (mutator.case(index) for index in range(LIVE_CASES))
    report = await run_live(cases, tmp_path / "mta")
    problems = report.problems()
    assert report.cases == LIVE_CASES, report.table()
    assert not problems, "\n".join([report.table(), *problems[:_SHOWN]])
