"""Interleaved rounds of the relay benchmark: this checkout against another commit, Postfix,
or both, so that a regression is seen before it lands.

    python benchmarks/compare.py [--against REF] [--postfix] [--rounds 4]
                                 [--messages 2000] [--large 50] [--backlog 2000] [--flash 100]
                                 [--huge 0] [--routine-connections N]
                                 [--postfix-tool PATH] [--timeout 1800]

Contestants, each run with the same sizes:

* this tree: :mod:`benchmarks.relay` ``--json --tree`` this checkout, as it is on disk
  (uncommitted changes included);
* ``--against REF``: the same driver with ``--tree`` a temporary ``git worktree`` of commit
  REF (detached; removed afterwards), so both are measured by the same code and interpreter;
* ``--postfix``: ``postfix_relay.py run --messages --large --samples`` (two Postfix
  instances: SMTP to A, relayed to B's Maildir; 1 KB msgs/s, 1 MB MB/s and idle
  end-to-end latency), after its ``setup`` if the instances are not there yet.  Postfix is
  stopped after each of its runs, so it does not idle beside the other contestants.

Each round runs every contestant once; the one that goes first moves one place each round
(A B C, B C A, C A B, ...).  The machine's speed drifts, so only figures of the same
interleaved rounds compare.  Printed, in Markdown: the CPU check of each run (relay.py's
own; the same check around each Postfix run), then per figure each contestant's median
over the rounds with its range, and the ratio of the medians, this tree over each other
contestant, with the direction that is better; then every round's figures.

Exit status 0; 1 if a contestant failed (the tail of its standard error is shown); 2 on a
usage error; 130 on Ctrl-C or SIGTERM, once the contestant's processes are stopped, the
worktree removed and the Postfix instances stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.relay import cpu_check  # noqa: E402

RELAY = ROOT / "benchmarks" / "relay.py"
POSTFIX_TOOL = ROOT.parent / "shared" / "tools" / "postfix_relay.py"
"""Default ``--postfix-tool``: the Postfix driver beside the checkout."""
POSTFIX_BASE = Path("/var/tmp/pfbench")
"""Where ``postfix_relay.py setup`` configures its two instances (``a/``, ``b/``)."""
GRACE = 30.0
"""Seconds a contestant's processes have to end after SIGINT before SIGKILL."""
TAIL = 30
"""Lines of a failed contestant's standard error shown."""

T = TypeVar("T")


@dataclass(frozen=True)
class Figure:
    """A row of the table: a key of the contestants' JSON, and which way is better."""

    key: str
    label: str
    unit: str
    higher_is_better: bool


FIGURES: tuple[Figure, ...] = (
    Figure("kb_msgs_s", "1 KB relay, 8 clients", "msgs/s", True),
    Figure("mb_MB_s", "1 MB relay, 8 clients", "MB/s", True),
    Figure("idle_p50_ms", "idle, end to end, p50", "ms", False),
    Figure("idle_p99_ms", "idle, end to end, p99", "ms", False),
    Figure("queued_p50_ms", "flash, routine backlog queued, end to end, p50", "ms", False),
    Figure("queued_p99_ms", "flash, routine backlog queued, end to end, p99", "ms", False),
    Figure("queued_over_idle_p99", "flash p99 queued / idle p99, in one run", "x", False),
    Figure("huge_MB_s", "10 MB relay, one client", "MB/s", True),
    Figure("huge_rss_a_mib", "peak RSS of A, 10 MB relay", "MiB", False),
    Figure("huge_rss_b_mib", "peak RSS of B, 10 MB relay", "MiB", False),
    Figure("rss_a_mib", "peak RSS of A, other rows (most)", "MiB", False),
    Figure("rss_b_mib", "peak RSS of B, other rows (most)", "MiB", False),
)
"""Postfix gives the first four; relay.py all, the 10 MB ones with ``--huge``."""

Run = Mapping[str, float]
"""One contestant's figures of one round, by key."""


@dataclass(frozen=True)
class Contestant:
    """A command that prints one JSON object of figures as its last line."""

    name: str
    command: tuple[str, ...]
    checks_cpu: bool
    """Its JSON has the CPU check (``cpu_before_s``, ``cpu_after_s``); else it is taken
    here around the run."""
    after: tuple[str, ...] = ()
    """A command run after each of its runs, if any (stopping Postfix)."""
    stop_signal: signal.Signals = signal.SIGINT
    """What stops it early: SIGINT for relay.py, which then stops its daemons and removes
    its folder; SIGTERM where there is nothing to clean up (postfix_relay.py, whose
    submitting threads would finish their work first on SIGINT)."""


class ContestantFailed(Exception):
    """A contestant ended without figures."""

    def __init__(self, name: str, what: str, stderr: str) -> None:
        tail = "\n".join(stderr.rstrip().splitlines()[-TAIL:])
        super().__init__(
            f"{name}: {what}" + (f"; its standard error ends:\n{tail}" if tail else "")
        )


class UsageError(Exception):
    """Options this script cannot act on (exit status 2)."""


# --- pure parts ---------------------------------------------------------------------------


def rotation(contestants: Sequence[T], round_number: int) -> list[T]:
    """The order of round ``round_number`` (from 0): each contestant once, the first moving
    one place each round."""
    shift = round_number % len(contestants)
    return [*contestants[shift:], *contestants[:shift]]


def parse_json_line(stdout: str) -> dict[str, float]:
    """The numbers of the last line of ``stdout`` that is a JSON object, by key (other
    values left out); ValueError if there is none."""
    for line in reversed(stdout.splitlines()):
        if not line.lstrip().startswith("{"):
            continue
        value = json.loads(line)
        if isinstance(value, dict):
            return {
                key: float(number)
                for key, number in value.items()
                if isinstance(number, int | float) and not isinstance(number, bool)
            }
    raise ValueError("no JSON object in its output")


@dataclass(frozen=True)
class Spread:
    """A figure over the rounds of one contestant."""

    median: float
    low: float
    high: float


def spread(runs: Sequence[Run], key: str) -> Spread | None:
    """``key`` over ``runs`` (those that have it); None if none has it."""
    values = [run[key] for run in runs if key in run]
    if not values:
        return None
    return Spread(statistics.median(values), min(values), max(values))


def ratio(mine: Spread | None, theirs: Spread | None) -> float | None:
    """The ratio of the medians, this tree's over another's; None if either is missing or
    the other's is 0."""
    if mine is None or theirs is None or theirs.median == 0:
        return None
    return mine.median / theirs.median


def short(name: str) -> str:
    """A contestant's name without its commit or version: ``this tree``, ``HEAD~1``."""
    base = name.split(" (")[0]
    return "Postfix" if base.startswith("Postfix") else base


def number(value: float) -> str:
    """``value`` with three significant digits or so, thousands separated."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def summary_table(names: Sequence[str], runs: Mapping[str, Sequence[Run]]) -> list[str]:
    """Per figure any contestant has: each one's median (min-max) and the ratios of this
    tree (``names[0]``) over each other contestant."""
    mine, others = names[0], names[1:]
    columns = [*names, *(f"{short(mine)} / {short(other)}" for other in others)]
    lines = [
        "| figure | better | " + " | ".join(columns) + " |",
        "|---|---|" + "---:|" * len(columns),
    ]
    for figure in FIGURES:
        spreads = {name: spread(runs[name], figure.key) for name in names}
        if all(s is None for s in spreads.values()):
            continue
        cells = [
            "n/a" if s is None else f"{number(s.median)} ({number(s.low)}-{number(s.high)})"
            for s in spreads.values()
        ]
        ratios = [ratio(spreads[mine], spreads[other]) for other in others]
        cells += ["n/a" if r is None else f"{r:.2f}" for r in ratios]
        better = "higher" if figure.higher_is_better else "lower"
        lines.append(f"| {figure.label}, {figure.unit} | {better} | " + " | ".join(cells) + " |")
    return lines


def rounds_table(names: Sequence[str], runs: Mapping[str, Sequence[Run]]) -> list[str]:
    """Every round's value of each figure, per contestant (``r1 / r2 / ...``)."""
    lines = ["| figure | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for figure in FIGURES:
        cells = [
            " / ".join(number(run[figure.key]) if figure.key in run else "-" for run in runs[name])
            for name in names
        ]
        if any(cell.strip(" /-") for cell in cells):
            lines.append(f"| {figure.label}, {figure.unit} | " + " | ".join(cells) + " |")
    return lines


def cpu_table(
    names: Sequence[str], orders: Sequence[Sequence[str]], runs: Mapping[str, Sequence[Run]]
) -> list[str]:
    """The CPU check before / after each run, a row per round."""
    lines = ["| round | order | " + " | ".join(names) + " |", "|---:|---|" + "---:|" * len(names)]
    for index, order in enumerate(orders):
        cells = [_cpu(runs[name][index]) for name in names]
        shown = ", ".join(short(name) for name in order)
        lines.append(f"| {index + 1} | {shown} | " + " | ".join(cells) + " |")
    return lines


def _cpu(run: Run) -> str:
    if "cpu_before_s" not in run or "cpu_after_s" not in run:
        return "-"
    return f"{run['cpu_before_s']:.2f} / {run['cpu_after_s']:.2f} s"


# --- contestants --------------------------------------------------------------------------


def sizes(args: argparse.Namespace) -> list[str]:
    """The relay benchmark's options, the same for every round.  Without
    ``--routine-connections``, each tree runs with its routine slot as in its own
    config/examples (:func:`benchmarks.relay.shipped_connections`)."""
    connections = args.routine_connections
    return [
        f"--messages={args.messages}",
        f"--large={args.large}",
        f"--backlog={args.backlog}",
        f"--flash={args.flash}",
        f"--huge={args.huge}",
    ] + ([] if connections is None else [f"--routine-connections={connections}"])


def relay_contestant(name: str, tree: Path, args: argparse.Namespace) -> Contestant:
    command = (sys.executable, str(RELAY), "--json", f"--tree={tree}", *sizes(args))
    return Contestant(name, command, checks_cpu=True)


def postfix_contestant(args: argparse.Namespace) -> Contestant:
    tool = str(args.postfix_tool)
    options = (f"--messages={args.messages}", f"--large={args.large}", f"--samples={args.flash}")
    command = (sys.executable, tool, "run", *options)
    stop = (sys.executable, tool, "stop")
    name = f"Postfix {postfix_version()}".rstrip()
    return Contestant(name, command, False, stop, signal.SIGTERM)


def run_contestant(contestant: Contestant, timeout: float) -> dict[str, float]:
    """Run ``contestant`` once in a session of its own; its figures.  On any exception
    (Ctrl-C included) its processes are stopped first."""
    before = None if contestant.checks_cpu else cpu_check()
    process = subprocess.Popen(
        contestant.command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,  # Ctrl-C reaches this script alone, which stops the group
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stdout, stderr = stop_group(process, contestant.stop_signal)
        raise ContestantFailed(contestant.name, f"no figures in {timeout:g} s", stderr) from None
    except BaseException:
        stop_group(process, contestant.stop_signal)
        raise
    if process.returncode != 0:
        raise ContestantFailed(contestant.name, f"exit status {process.returncode}", stderr)
    try:
        figures = parse_json_line(stdout)
    except ValueError as error:
        raise ContestantFailed(contestant.name, str(error), stderr + stdout) from None
    if before is not None:
        figures.update(cpu_before_s=before, cpu_after_s=cpu_check())
    return figures


def stop_group(
    process: subprocess.Popen[str], first: signal.Signals = signal.SIGINT
) -> tuple[str, str]:
    """Stop ``process`` and what it started in its session: ``first`` (on SIGINT relay.py
    stops its daemons, and they stop cleanly), SIGKILL after :data:`GRACE` seconds.  What
    it had written."""
    for signum in (first, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signum)
        try:
            return process.communicate(timeout=GRACE)
        except subprocess.TimeoutExpired:
            continue
    return "", ""


def run_rounds(
    contestants: Sequence[Contestant], rounds: int, timeout: float
) -> tuple[list[list[str]], dict[str, list[Run]]]:
    """``rounds`` interleaved rounds: each round's order, and each contestant's figures."""
    orders: list[list[str]] = []
    runs: dict[str, list[Run]] = {c.name: [] for c in contestants}
    for index in range(rounds):
        order = rotation(contestants, index)
        orders.append([c.name for c in order])
        for contestant in order:
            say(f"round {index + 1}/{rounds}: {contestant.name} ...")
            started = time.monotonic()
            runs[contestant.name].append(run_contestant(contestant, timeout))
            seconds = time.monotonic() - started
            say(f"round {index + 1}/{rounds}: {contestant.name} done in {seconds:.0f} s")
            if contestant.after:
                subprocess.run(contestant.after, check=False, capture_output=True)
    return orders, runs


def say(text: str) -> None:
    """A line of progress, on standard error (standard output has the tables alone)."""
    print(text, file=sys.stderr, flush=True)


# --- the commit to compare with, and Postfix ----------------------------------------------


def git(*arguments: str) -> str:
    """``git`` in this checkout; its output, stripped (CalledProcessError on failure)."""
    done = subprocess.run(
        ["git", "-C", str(ROOT), *arguments], check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def this_tree_name() -> str:
    """``this tree (<short commit>)``, with ``+changes`` if tracked files differ from it."""
    short = git("rev-parse", "--short", "HEAD")
    changed = git("status", "--porcelain", "--untracked-files=no")
    return f"this tree ({short}{'+changes' if changed else ''})"


@contextlib.contextmanager
def worktree(ref: str) -> Iterator[tuple[Path, str]]:
    """A detached worktree of commit ``ref`` in a temporary folder, and its short commit;
    removed afterwards."""
    try:
        commit = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except subprocess.CalledProcessError:
        raise UsageError(f"--against {ref}: no such commit in {ROOT}") from None
    folder = Path(tempfile.mkdtemp(prefix="aiox400-compare-"))
    tree = folder / "tree"
    try:
        say(f"worktree of {ref} ({commit[:10]}) in {tree}")
        git("worktree", "add", "--detach", "--quiet", str(tree), commit)
        yield tree, git("rev-parse", "--short", commit)
    finally:
        try:
            git("worktree", "remove", "--force", str(tree))
        except subprocess.CalledProcessError as error:
            if tree.exists():
                say(f"could not remove the worktree {tree}: {error.stderr.strip()}")
        shutil.rmtree(folder, ignore_errors=True)


def postfix_ready() -> bool:
    """Whether Postfix is installed and ``postfix_relay.py setup`` has made its two
    instances."""
    made = all((POSTFIX_BASE / name / "main.cf").exists() for name in ("a", "b"))
    return shutil.which("postfix") is not None and made


def postfix_setup(tool: Path) -> None:
    """``setup`` (it installs Postfix with apt-get if missing) unless already done; the
    instances it starts are stopped, each run starts them."""
    if not postfix_ready():
        say(f"{tool} setup (installs Postfix if missing) ...")
        done = subprocess.run([sys.executable, str(tool), "setup"], capture_output=True, text=True)
        if done.returncode != 0:
            what = f"setup: exit status {done.returncode} (apt-get update may be wanted)"
            raise ContestantFailed("Postfix", what, done.stderr)
    subprocess.run([sys.executable, str(tool), "stop"], check=False, capture_output=True)


def postfix_version() -> str:
    """Postfix's version (``postconf -d mail_version``), or "" if it cannot be read."""
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        return subprocess.run(
            ["postconf", "-d", "-h", "mail_version"], check=True, capture_output=True, text=True
        ).stdout.strip()
    return ""


# --- the whole ----------------------------------------------------------------------------


def machine() -> str:
    """The host's name, processor model and count, and the interpreter."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip() + ", "
                break
    return (
        f"{platform.node()} ({model}{os.cpu_count()} CPUs, {platform.system()}"
        f" {platform.release()}, Python {platform.python_version()})"
    )


def compare(args: argparse.Namespace, stack: contextlib.ExitStack) -> int:
    """Set up the contestants, run the rounds and print the tables."""
    contestants = [relay_contestant(this_tree_name(), ROOT, args)]
    if args.against is not None:
        tree, short = stack.enter_context(worktree(args.against))
        name = args.against if args.against == short else f"{args.against} ({short})"
        contestants.append(relay_contestant(name, tree, args))
    if args.postfix:
        stack.callback(
            subprocess.run,
            [sys.executable, str(args.postfix_tool), "stop"],
            check=False,
            capture_output=True,
        )
        postfix_setup(args.postfix_tool)
        contestants.append(postfix_contestant(args))
    names = [c.name for c in contestants]
    if len(set(names)) != len(names):
        raise UsageError(f"two contestants of one name: {names}")
    started = datetime.now(UTC)
    orders, runs = run_rounds(contestants, args.rounds, args.timeout)
    print(
        f"Relay benchmark, {args.rounds} interleaved rounds, {started:%Y-%m-%d %H:%M} UTC on"
        f" {machine()}: {' '.join(sizes(args))}\n"
    )
    print("CPU check (10 million additions), before / after each run:\n")
    print("\n".join(cpu_table(names, orders, runs)) + "\n")
    print("Medians over the rounds (min-max); ratios of the medians:\n")
    print("\n".join(summary_table(names, runs)) + "\n")
    print("Every round, in order:\n")
    print("\n".join(rounds_table(names, runs)))
    return 0


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.against is None and not args.postfix:
        parser().error("nothing to compare with: give --against REF, --postfix or both")
    if args.postfix and not args.postfix_tool.is_file():
        parser().error(f"--postfix-tool {args.postfix_tool}: no such file")
    signal.signal(signal.SIGINT, _interrupted)  # (even where started with SIGINT ignored)
    signal.signal(signal.SIGTERM, _interrupted)
    stack = contextlib.ExitStack()
    try:
        return compare(args, stack)
    except UsageError as error:
        say(f"compare.py: {error}")
        return 2
    except ContestantFailed as failure:
        say(f"compare.py: {failure}")
        return 1
    except KeyboardInterrupt:
        say("compare.py: interrupted; stopping what runs and cleaning up")
        return 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the clean-up is not cut short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stack.close()


def parser() -> argparse.ArgumentParser:
    make = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    make.add_argument("--against", metavar="REF", help="a commit of this repository to compare")
    make.add_argument(
        "--postfix", action="store_true", help="compare with Postfix (postfix_relay.py)"
    )
    make.add_argument("--rounds", type=positive, default=4, help="interleaved rounds (4)")
    make.add_argument("--messages", type=positive, default=2000, help="1 KB messages (2000)")
    make.add_argument("--large", type=positive, default=50, help="1 MB messages (50)")
    make.add_argument(
        "--backlog", type=positive, default=2000, help="routine queued ahead of flash (2000)"
    )
    make.add_argument(
        "--flash", type=positive, default=100, help="flash samples per latency row (100)"
    )
    make.add_argument(
        "--huge", type=int, default=0, help="10 MB messages of their own row (0: none)"
    )
    make.add_argument(
        "--routine-connections",
        type=positive,
        default=None,
        help="of the routine slot, for every tree (default: each as in its config/examples)",
    )
    make.add_argument(
        "--postfix-tool",
        type=Path,
        default=POSTFIX_TOOL,
        help=f"the Postfix driver (default {POSTFIX_TOOL})",
    )
    make.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        help="seconds a contestant's run may take before it counts as failed (1800)",
    )
    return make


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: at least 1")
    return value


if __name__ == "__main__":
    sys.exit(main())
