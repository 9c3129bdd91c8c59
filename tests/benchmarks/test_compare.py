"""benchmarks/compare.py's own parts, without a daemon: the order of the rounds, the JSON
line a contestant prints, the table of medians, ranges and ratios, and a contestant's
failure or overrun (real processes: the tail of its standard error is shown, and what it
started is stopped with it); and relay.py's figures as ``--json`` gives them."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchmarks.compare import (
    Contestant,
    ContestantFailed,
    parse_json_line,
    parser,
    ratio,
    rotation,
    run_contestant,
    sizes,
    spread,
    summary_table,
)
from benchmarks.relay import (
    Latencies,
    Peaks,
    Results,
    Site,
    Throughput,
    figures,
    peak_rss_mib,
    rss_mib,
    shipped_connections,
)


def test_each_round_runs_everyone_once_and_the_first_moves_on() -> None:
    orders = [rotation(["this", "ref", "postfix"], n) for n in range(4)]
    assert orders == [
        ["this", "ref", "postfix"],
        ["ref", "postfix", "this"],
        ["postfix", "this", "ref"],
        ["this", "ref", "postfix"],
    ]
    assert [rotation(["this", "ref"], n)[0] for n in range(4)] == ["this", "ref", "this", "ref"]


def test_the_figures_are_the_numbers_of_the_last_json_line() -> None:
    stdout = textwrap.dedent("""\
        aiox400 relay benchmark
        {"kb_msgs_s": 1.0}
        {"tree": "/x", "messages": 20, "kb_msgs_s": 650.5, "idle_p99_ms": 7, "late": true}
    """)
    assert parse_json_line(stdout) == {"messages": 20.0, "kb_msgs_s": 650.5, "idle_p99_ms": 7.0}


@pytest.mark.parametrize("stdout", ["", "a table\n| x | y |\n", '{"kb_msgs_s": 6', "[1, 2]\n"])
def test_output_without_a_json_object_is_refused(stdout: str) -> None:
    with pytest.raises(ValueError):
        parse_json_line(stdout)


def test_medians_ranges_and_ratios_of_the_rounds() -> None:
    this = [
        {"kb_msgs_s": 600.0, "idle_p99_ms": 8.0, "queued_p99_ms": 16.0},
        {"kb_msgs_s": 700.0, "idle_p99_ms": 6.0, "queued_p99_ms": 12.0},
        {"kb_msgs_s": 650.0, "idle_p99_ms": 7.0, "queued_p99_ms": 20.0},
    ]
    postfix = [{"kb_msgs_s": 1300.0, "idle_p99_ms": 14.0}, {"kb_msgs_s": 1250.0}]
    kb = spread(this, "kb_msgs_s")
    assert kb is not None and (kb.median, kb.low, kb.high) == (650.0, 600.0, 700.0)
    assert spread(postfix, "queued_p99_ms") is None
    assert ratio(kb, spread(postfix, "kb_msgs_s")) == pytest.approx(650 / 1275)
    assert ratio(spread(this, "idle_p99_ms"), spread(postfix, "idle_p99_ms")) == 0.5
    assert ratio(kb, None) is None

    names = ["this tree (abc1234)", "HEAD~1 (def5678)", "Postfix 3.7.11"]
    ref = [{"kb_msgs_s": 500.0, "idle_p99_ms": 7.0, "queued_p99_ms": 8.0}]
    lines = summary_table(names, {names[0]: this, names[1]: ref, names[2]: postfix})
    assert lines[0] == (
        "| figure | better | this tree (abc1234) | HEAD~1 (def5678) | Postfix 3.7.11 |"
        " this tree / HEAD~1 | this tree / Postfix |"
    )
    rows = {line.split(" | ")[0].lstrip("| "): line.strip("| ").split(" | ") for line in lines[2:]}
    assert set(rows) == {
        "1 KB relay, 8 clients, msgs/s",
        "idle, end to end, p99, ms",
        "flash, routine backlog queued, end to end, p99, ms",
    }  # no row for figures nobody has
    assert rows["1 KB relay, 8 clients, msgs/s"][1:] == [
        "higher", "650 (600-700)", "500 (500-500)", "1,275 (1,250-1,300)", "1.30", "0.51"
    ]  # fmt: skip
    assert rows["idle, end to end, p99, ms"][1:] == [
        "lower", "7.00 (6.00-8.00)", "7.00 (7.00-7.00)", "14.0 (14.0-14.0)", "1.00", "0.50"
    ]  # fmt: skip
    queued = rows["flash, routine backlog queued, end to end, p99, ms"]
    assert queued[-3:] == ["n/a", "2.00", "n/a"]


def _python(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", textwrap.dedent(code))


def test_a_contestant_s_figures_with_the_cpu_check_taken_around_it() -> None:
    contestant = Contestant("p", _python('print("warming up"); print(\'{"kb_msgs_s": 9}\')'), False)
    result = run_contestant(contestant, timeout=60)
    assert result["kb_msgs_s"] == 9.0
    assert result["cpu_before_s"] > 0 and result["cpu_after_s"] > 0


def test_a_failed_contestant_shows_the_tail_of_its_standard_error() -> None:
    code = """
        import sys
        for n in range(100):
            print(f"line {n}", file=sys.stderr)
        sys.exit(3)
    """
    with pytest.raises(ContestantFailed) as failed:
        run_contestant(Contestant("ref", _python(code), True), timeout=60)
    message = str(failed.value)
    assert message.startswith("ref: exit status 3; its standard error ends:")
    assert "line 99" in message and "line 70" in message and "line 69" not in message


def test_a_contestant_without_figures_fails() -> None:
    with pytest.raises(ContestantFailed, match="ref: no JSON object in its output"):
        run_contestant(Contestant("ref", _python('print("| table |")'), True), timeout=60)


def _gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status  # ended, not yet reaped by its new parent


def test_an_overrunning_contestant_is_stopped_with_what_it_started() -> None:
    code = """
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        print(f"child {child.pid}", file=sys.stderr, flush=True)
        time.sleep(120)
    """
    with pytest.raises(ContestantFailed, match=r"ref: no figures in 3 s") as failed:
        run_contestant(Contestant("ref", _python(code), True), timeout=3)
    child = int(str(failed.value).rsplit("child ", 1)[1].split()[0])
    assert child != os.getpid()
    # The signal reached the whole session; the grandchild may take a moment to end
    # after its parent did (bounded, with a wide margin).
    deadline = time.monotonic() + 20
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child)


def test_relay_s_json_figures() -> None:
    idle = Latencies([5.0, 6.0, 9.0], [3.0, 4.0, 5.0], late=0, peaks=Peaks(90, 91))
    queued = Latencies([7.0, 8.0, 27.0], [4.0, 5.0, 6.0], late=1, peaks=Peaks(92, 93))
    small, large = Throughput(650.0, 0.67, Peaks(95, 94)), Throughput(130.0, 136.3, Peaks(99, 98))
    without = figures(Results(0.3, 0.31, small, large, idle, queued, None))
    assert without["kb_msgs_s"] == 650.0 and without["mb_MB_s"] == 136.3
    assert (without["idle_p50_ms"], without["idle_p99_ms"]) == (6.0, 9.0)
    assert (without["queued_received_p50_ms"], without["queued_late"]) == (5.0, 1)
    assert without["queued_over_idle_p99"] == 3.0
    assert (without["rss_a_mib"], without["rss_b_mib"]) == (99.0, 98.0)
    assert not any(key.startswith("huge") for key in without)

    huge = Throughput(4.0, 41.9, Peaks(130, 128))
    withhuge = figures(Results(0.3, 0.31, small, large, idle, queued, huge))
    assert (withhuge["huge_MB_s"], withhuge["huge_rss_a_mib"], withhuge["huge_rss_b_mib"]) == (
        41.9, 130.0, 128.0
    )  # fmt: skip
    assert (withhuge["rss_a_mib"], withhuge["rss_b_mib"]) == (99.0, 98.0)  # the 10 MB row apart


def test_the_peak_rss_is_read_from_proc() -> None:
    ballast = bytearray(64 * 1024 * 1024)  # touched: resident, then let go
    for offset in range(0, len(ballast), 4096):
        ballast[offset] = 1
    del ballast
    assert peak_rss_mib(os.getpid()) >= rss_mib(os.getpid()) + 32


async def test_a_tree_runs_its_own_daemon_whatever_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A checkout whose daemon only says where it is and ends; run from this checkout, as
    # compare.py runs relay.py, so that the working directory holds a daemon too.
    tree = tmp_path / "tree"
    (tree / "mta").mkdir(parents=True)
    (tree / "mta" / "__init__.py").write_text("")
    (tree / "mta" / "command.py").write_text(
        'import sys\nif __name__ == "__main__":\n'
        '    print("daemon of", __file__, file=sys.stderr)\n    sys.exit(3)\n'
    )
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    site = Site(tmp_path, "MTA-A", "", tree=tree)
    with pytest.raises(RuntimeError, match="ended with status 3") as raised:
        await site.start()
    assert f"daemon of {tree / 'mta' / 'command.py'}" in str(raised.value)


def test_each_tree_runs_its_routine_slot_as_shipped_unless_told() -> None:
    assert not [o for o in sizes(parser().parse_args([])) if "routine" in o]
    told = sizes(parser().parse_args(["--routine-connections", "3"]))
    assert "--routine-connections=3" in told


@pytest.mark.parametrize("line", ["max_connections = 3\n", ""])
def test_the_routine_slots_connections_are_read_from_the_trees_example(
    tmp_path: Path, line: str
) -> None:
    example = tmp_path / "config" / "examples" / "site-a.toml"
    example.parent.mkdir(parents=True)
    slot = '[[peers.slots]]\nprecedences = ["{}"]\n'
    example.write_text(
        '[[peers]]\nname = "MTA-B"\n\n'
        + slot.format("flash")
        + "max_connections = 2\n"
        + slot.format('routine", "deferred')
        + line
    )
    assert shipped_connections(tmp_path) == (3 if line else 1)
