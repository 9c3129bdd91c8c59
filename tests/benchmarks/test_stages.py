"""The stage profile (benchmarks/stages.py) and the daemon's marks (mta.stages): marks are
kept only when asked for and written where asked, each sample is followed stage by stage
in order, the tables add up, and (slow) a real pair of daemons leaves every mark of the
flash path in every sample."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import stages
from benchmarks.stages import CLIENT, FLASH_PATH, Mark, follow, samples
from mta.stages import VARIABLE

ROOT = Path(__file__).resolve().parents[2]


def _run_marking(environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = "import mta.stages as s; print(s.enabled()); s.mark('one'); s.mark('two')"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )


def test_marks_are_written_to_the_prefix_and_pid_when_asked_for(tmp_path: Path) -> None:
    prefix = tmp_path / "marks"
    done = _run_marking({**os.environ, VARIABLE: str(prefix)})
    assert done.stdout.strip() == "True"
    (written,) = tmp_path.glob("marks.*")
    assert written.name.split(".")[1].isdigit()
    lines = [line.split(" ") for line in written.read_text().splitlines()]
    assert [stage for _, stage in lines] == ["one", "two"]
    assert int(lines[0][0]) <= int(lines[1][0])


_URGENT_CODE = """
import asyncio
import mta.stages as s

async def flash():
    s.mark("before")
    s.urgent_here()
    s.mark("flash")
    await asyncio.create_task(child())

async def child():
    s.mark("child")

async def routine():
    await asyncio.sleep(0)
    s.mark("routine")
    s.mark("said", urgent=True)
    s.urgent_here()
    s.mark("then")
    s.urgent_here(False)
    s.mark("again")

async def main():
    at = s.clock()
    await asyncio.gather(flash(), routine())
    s.mark("late", at=at)

asyncio.run(main())
"""


def test_urgent_work_is_marked_apart_from_the_rest(tmp_path: Path) -> None:
    """A task said to do urgent work marks as ``stage!``, and so do the tasks it starts;
    other tasks do not, unless the mark says so; a mark may carry a time taken earlier."""
    prefix = tmp_path / "marks"
    subprocess.run(
        [sys.executable, "-c", _URGENT_CODE],
        cwd=ROOT,
        env={**os.environ, VARIABLE: str(prefix)},
        check=True,
    )
    (written,) = tmp_path.glob("marks.*")
    lines = [line.split(" ") for line in written.read_text().splitlines()]
    kept = {stage: int(at) for at, stage in lines}
    assert set(kept) == {"before", "flash!", "child!", "routine", "said!", "then!", "again", "late"}
    assert kept["late"] <= kept["before"]  # (its time is the one taken before the others)


def test_no_mark_is_kept_or_written_otherwise(tmp_path: Path) -> None:
    environment = {k: v for k, v in os.environ.items() if k != VARIABLE}
    done = _run_marking({**environment, "TMPDIR": str(tmp_path)})
    assert done.stdout.strip() == "False"
    assert list(tmp_path.iterdir()) == []


def _flash_sample(start: int, step: int) -> list[Mark]:
    """One sample whose stages follow ``FLASH_PATH`` ``step`` ns apart, with noise: an
    idle poll's database marks at A before the submission's, and B's marks of an
    earlier message."""
    marks = [Mark(start + n * step, site, stage) for n, (site, stage, _) in enumerate(FLASH_PATH)]
    noise = [
        Mark(start + 1, "A", "db.units"),  # before A's db.begin: not the submission's
        Mark(start + 2, "B", "intake.settled"),  # long before B received anything
        Mark(start + 3, CLIENT, "client.answer"),
    ]
    return sorted(marks + noise, key=lambda m: m.at)


def test_a_sample_is_followed_stage_by_stage_past_marks_out_of_order() -> None:
    sample = _flash_sample(1_000, 100)
    times = follow(sample, FLASH_PATH)
    assert times == [1_000 + n * 100 for n in range(len(FLASH_PATH))]


def test_routine_work_between_the_stages_is_not_taken_for_the_flash_messages() -> None:
    """Under a backlog, each stage's routine twin comes between the flash message's marks:
    only the urgent marks (``!``) are followed."""
    urgent = _flash_sample(1_000, 100)
    routine = [
        Mark(m.at - 50, m.site, m.stage.rstrip("!")) for m in urgent if m.stage.endswith("!")
    ]
    assert routine, "the flash path has urgent marks"
    sample = sorted([*urgent, *routine], key=lambda m: m.at)
    assert follow(sample, FLASH_PATH) == [1_000 + n * 100 for n in range(len(FLASH_PATH))]
    assert follow(sorted(routine, key=lambda m: m.at), FLASH_PATH) is None


def test_a_sample_missing_a_stage_is_not_followed() -> None:
    sample = [m for m in _flash_sample(0, 10) if m.stage != "transfer.received!"]
    assert follow(sample, FLASH_PATH) is None


def test_marks_are_cut_into_samples_at_each_submission() -> None:
    marks = _flash_sample(0, 10) + _flash_sample(10_000, 20)
    cut = list(samples(marks))
    assert len(cut) == 2
    assert cut[0][0].at == 0 and cut[1][0].at == 10_000
    assert all(m.at < 10_000 for m in cut[0])


def test_the_flash_table_gives_each_stage_and_the_whole() -> None:
    marks = [m for start in range(5) for m in _flash_sample(start * 10**8, 2_000)]
    lines = stages.flash_table(marks)
    assert lines[0] == "One idle 1 KB flash message, 5 samples"
    rows = [line for line in lines if line.startswith("| ") and " us " not in line]
    stage_rows = [row for row in rows if "**" not in row and "client.answer" not in row]
    assert len(stage_rows) == len(FLASH_PATH) - 1
    assert all(row.endswith("| 2 | 2 |") for row in stage_rows)  # 2,000 ns = 2 us
    whole = 2 * (len(FLASH_PATH) - 1)
    assert any(f"**{whole}**" in row and "whole" in row for row in rows)


def test_transactions_and_transfers_are_measured_from_their_marks() -> None:
    marks = [
        Mark(0, "A", "db.begin"),
        Mark(300, "A", "db.units"),
        Mark(1_000, "A", "db.committed"),
        Mark(1_100, "A", "transfer.start"),
        Mark(5_100, "A", "transfer.confirmed"),
        Mark(5_150, "A", "transfer.start"),
        Mark(6_000, "A", "db.begin"),  # a transaction that failed: no units mark
        Mark(6_500, "A", "db.committed"),
        Mark(8_150, "A", "transfer.confirmed"),
    ]
    assert stages._transactions(marks) == ([300], [700])
    assert stages._transfers(marks) == ([4_000, 3_000], [50])


@pytest.mark.slow
def test_two_daemons_leave_every_mark_of_the_flash_path(tmp_path: Path) -> None:
    """Run the benchmark small: every sample is followed from the client to B's store,
    idle and behind a routine backlog (the daemons mark the flash message's stages as
    urgent work, from its submission to its delivery), and the relay's table has both
    sites."""
    done = subprocess.run(
        [
            sys.executable,
            "benchmarks/stages.py",
            *("--samples", "5", "--messages", "40", "--backlog", "200"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "One idle 1 KB flash message, 5 samples\n" in done.stdout
    assert "One 1 KB flash message, 200 routine queued, 5 samples\n" in done.stdout
    assert "1 KB relay: 40 messages" in done.stdout
    assert "| A |" in done.stdout and "| B |" in done.stdout
    assert "A's transfers: 40;" in done.stdout


def test_urgent_transactions_and_transfers_count_in_the_relay_profile() -> None:
    marks = [
        Mark(0, "A", "db.begin!"),
        Mark(300, "A", "db.units!"),
        Mark(1_000, "A", "db.committed!"),
        Mark(1_100, "A", "transfer.start!"),
        Mark(5_100, "A", "transfer.confirmed!"),
    ]
    assert stages._transactions(marks) == ([300], [700])
    assert stages._transfers(marks) == ([4_000], [])
