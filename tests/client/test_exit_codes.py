"""The exit codes of the four installed commands (``x400-mta``, ``x400``, ``x400ctl``,
``x400-dump``), one table (:data:`client.cli.EXIT_CODES`): each command run as a process,
in pipes whose reader goes away early under ``pipefail``, and interrupted."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import samples
from client.cli import (
    EXIT_BROKEN_PIPE,
    EXIT_CODES_HELP,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
)
from tests.support.sites import Site

BIN = Path(sys.executable).parent
COMMANDS = ("x400-mta", "x400", "x400ctl", "x400-dump")
NO_MTA = {k: v for k, v in os.environ.items() if k != "AIOX400_CONFIG"}


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / argv[0]), *argv[1:]],
        capture_output=True,
        text=True,
        env=NO_MTA,
        check=False,
        timeout=120,
    )


def pipefail(command: str) -> subprocess.CompletedProcess[str]:
    """``command`` in bash under ``pipefail``: its status is the writer's when the writer
    fails, as in deploy/demo.sh."""
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        capture_output=True,
        text=True,
        env=NO_MTA,
        check=False,
        timeout=120,
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_every_help_ends_with_the_one_table(command: str) -> None:
    done = run(command, "--help")
    assert done.returncode == EXIT_OK, done.stderr
    assert done.stdout.rstrip().endswith(EXIT_CODES_HELP.rstrip())


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_a_version_needing_nothing_else(command: str) -> None:
    done = run(command, "--version")
    assert (done.returncode, done.stderr) == (EXIT_OK, "")
    name, number = done.stdout.split()
    assert name == command
    assert number[0].isdigit()


def test_x400_mta_without_a_configuration_is_a_usage_error() -> None:
    done = run("x400-mta")
    assert done.returncode == EXIT_USAGE
    assert "--config" in done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ("x400ctl", "hold", "--socket", "/nonexistent"),
        ("x400ctl", "hold", "--precedence", "bogus", "--socket", "/nonexistent"),
        ("x400ctl", "status"),
        ("x400", "inbox", "--user", "C=GB;ADMD= ;PRMD=SITEA;S=Smith"),
        ("x400-dump",),
    ],
    ids=["hold-nothing", "hold-bogus-precedence", "status-no-mta", "inbox-no-mta", "dump"],
)
def test_usage_errors_exit_2(argv: tuple[str, ...]) -> None:
    done = run(*argv)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ("x400ctl", "status"),
        ("x400", "inbox", "--user", "C=GB;ADMD= ;PRMD=SITEA;S=Smith"),
        ("x400", "delete", "1", "--user", "C=GB;ADMD= ;PRMD=SITEA;S=Smith"),
    ],
)
def test_an_mta_not_running_exits_3(argv: tuple[str, ...], tmp_path: Path) -> None:
    done = run(*argv, "--socket", str(tmp_path / "none.sock"))
    assert done.returncode == EXIT_UNREACHABLE, done.stderr
    assert "not running" in done.stderr


def test_x400_dump_of_no_pdu_exits_1(tmp_path: Path) -> None:
    junk = tmp_path / "junk.ber"
    junk.write_bytes(b"\x30\x05\x01")
    assert run("x400-dump", str(junk)).returncode == EXIT_REFUSED


@pytest.mark.parametrize("form", ["--full", "--json --full"])
def test_x400_dump_into_head_ends_quietly_with_141(tmp_path: Path, form: str) -> None:
    big = tmp_path / "big.ber"
    big.write_bytes(samples.message_bytes(2_000_000))
    done = pipefail(f"{BIN / 'x400-dump'} {form} '{big}' | head -1")
    assert (done.returncode, done.stderr) == (EXIT_BROKEN_PIPE, "")
    assert len(done.stdout.splitlines()) == 1


@pytest.mark.slow
async def test_nothing_matched_exits_1_for_every_delete(site: Site) -> None:
    socket = str(site.socket)
    jones = site.address("Jones")
    for argv in (
        ("x400", "delete", "99999", "--user", jones),
        ("x400ctl", "delete", "99999"),
        ("x400ctl", "quarantine", "delete", "1"),
    ):
        done = await asyncio.to_thread(run, *argv, "--socket", socket)
        assert done.returncode == EXIT_REFUSED, (argv, done.stdout, done.stderr)


@pytest.mark.slow
async def test_a_large_inbox_into_head_ends_quietly_with_141(site: Site) -> None:
    # More than a pipe buffer (64 KiB) of listing: the writer meets the closed pipe.
    await site.send(site.address("Smith"), site.address("Jones"), count=800)
    inbox = f"{BIN / 'x400'} inbox --socket '{site.socket}' --user '{site.address('Jones')}'"
    done = await asyncio.to_thread(pipefail, f"{inbox} | head -1")
    assert (done.returncode, done.stderr) == (EXIT_BROKEN_PIPE, "")
    assert done.stdout.split()[:2] == ["ID", "PRECEDENCE"]


@pytest.mark.slow
async def test_inbox_follow_interrupted_exits_130(site: Site) -> None:
    process = await asyncio.create_subprocess_exec(
        str(BIN / "x400"),
        "inbox",
        "--follow",
        "--socket",
        str(site.socket),
        "--user",
        site.address("Jones"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert process.stderr is not None
    line = await asyncio.wait_for(process.stderr.readline(), 60)
    assert b"following the mailbox" in line
    process.send_signal(signal.SIGINT)
    _, rest = await asyncio.wait_for(process.communicate(), 60)
    assert (process.returncode, rest) == (EXIT_INTERRUPTED, b"x400: interrupted\n")


@pytest.mark.parametrize(
    ("module", "call"),
    [("client.entry", "x400"), ("client.entry", "x400ctl"), ("client.dump", "main")],
)
def test_version_imports_no_protocol_stack(module: str, call: str) -> None:
    heavy = ("asyncio", "sqlalchemy", "p1.asn1", "p1.mts.envelope", "client.api")
    probe = (
        "import sys, contextlib\n"
        f"from {module} import {call}\n"
        "with contextlib.suppress(SystemExit):\n"
        f"    {call}(['--version'])\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.splitlines()[-1] == "[]"


def test_the_installed_clients_start_at_the_light_entry_points() -> None:
    for command in ("x400", "x400ctl"):
        assert "from client.entry import" in (BIN / command).read_text()
