"""The resets attacker in CI: random cuts of our conversations, each reset, to a real
daemon with a fixed seed (:mod:`tests.fuzz.attack_resets`; its ``main`` is the long run).
Afterwards the daemon is up, its log holds no traceback and a bounded number of lines
(binds and messages aside), and a valid transfer is delivered."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.attack_resets import MAX_FAULT_LINES, Resetter, run_resets
from tests.fuzz.corpus import ours
from tests.fuzz.mutate import DEFAULT_SEED

pytestmark = pytest.mark.slow  # x400-mta as a process

CASES = 400
"""Connections reset: some 4 s."""


def test_cuts_follow_from_seed_and_number() -> None:
    records = ours()
    first, again = Resetter(records, 1), Resetter(records, 1)
    cuts = [first.cut(index) for index in range(200)]
    assert cuts == [again.cut(index) for index in range(200)]
    assert {cut.wait for cut in cuts} == {True, False}
    assert any(cut.octets == 0 for cut in cuts) or min(cut.octets for cut in cuts) < 20
    totals = {cut.record.name: sum(len(w) for w in cut.record.client) for cut in cuts}
    assert len(totals) == len(records)  # every conversation, cut anywhere in it
    assert any(cut.octets > totals[cut.record.name] // 2 for cut in cuts)


async def test_daemon_logs_resets_at_random_octets_without_a_traceback(tmp_path: Path) -> None:
    resetter = Resetter(ours(), DEFAULT_SEED)
    report = await run_resets((resetter.cut(i) for i in range(CASES)), tmp_path / "mta")
    assert report.cases == CASES, report.table()
    problems = report.problems(max_lines=MAX_FAULT_LINES)
    assert not problems, "\n".join([report.table(), *problems[:10]])
