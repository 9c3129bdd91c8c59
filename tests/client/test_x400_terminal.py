"""The installed ``x400`` and ``x400ctl`` commands in a terminal and in pipes: a reader
that goes away (``| head``), Ctrl-C, the progress bar of ``send --count`` (on standard
error, on a terminal only, never on standard output), and ``--help`` that reads.

Site A alone serves them, in this test's event loop, while the commands run as
processes of their own.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import tty
from pathlib import Path

import pytest

from client import x400, x400ctl
from client.cli import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED
from tests.support.sites import Site

BIN = Path(sys.executable).parent


def send_argv(site: Site, count: int) -> list[str]:
    return [
        str(BIN / "x400"),
        "send",
        "--socket",
        str(site.socket),
        "--from",
        site.address("Smith"),
        "--to",
        site.address("Jones"),
        "--body",
        "text",
        "--count",
        str(count),
    ]


@pytest.mark.slow
async def test_inbox_into_head_ends_quietly(site: Site) -> None:
    await site.send(site.address("Smith"), site.address("Jones"), count=30)
    inbox = f"{BIN / 'x400'} inbox --socket '{site.socket}' --user '{site.address('Jones')}'"
    shell = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        f'{inbox} | head -1; echo "x400 exited ${{PIPESTATUS[0]}}" >&2',
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await shell.communicate()
    assert out.decode().split()[:2] == ["ID", "PRECEDENCE"]
    assert len(out.splitlines()) == 1
    *others, status = err.decode().splitlines()
    assert others == []  # no traceback, no "Exception ignored"
    assert status in ("x400 exited 0", f"x400 exited {EXIT_BROKEN_PIPE}")


@pytest.mark.slow
@pytest.mark.parametrize("command", ["x400", "x400ctl"])
async def test_a_closed_pipe_ends_the_command_with_141_and_nothing_said(
    site: Site, command: str
) -> None:
    await site.send(site.address("Smith"), site.address("Jones"))
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the first write
    argv = {
        "x400": ["inbox", "--user", site.address("Jones")],
        "x400ctl": ["status"],
    }[command]
    process = await asyncio.create_subprocess_exec(
        str(BIN / command),
        *argv,
        "--socket",
        str(site.socket),
        stdout=write_end,
        stderr=asyncio.subprocess.PIPE,
    )
    os.close(write_end)
    _, err = await process.communicate()
    assert (process.returncode, err) == (EXIT_BROKEN_PIPE, b"")


async def test_ctrl_c_ends_send_count_with_130_and_one_line(site: Site) -> None:
    # A command started from a terminal gets Ctrl-C at its default; a test run started in
    # the background (nohup, `make check &`) ignores SIGINT, and its children would
    # inherit that.  A handled signal is reset to its default in the child.
    ours = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = await asyncio.create_subprocess_exec(
            *send_argv(site, 1_000_000),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    finally:
        signal.signal(signal.SIGINT, ours)
    assert process.stdout is not None
    first = await asyncio.wait_for(process.stdout.readline(), 60)
    assert first.startswith(b"[GB; ;SITEA;")  # submitting: each identifier as it comes
    process.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == EXIT_INTERRUPTED
    assert err.decode().splitlines() == ["x400: interrupted"]


@pytest.mark.slow
async def test_the_progress_bar_is_on_the_terminal_and_never_on_stdout(site: Site) -> None:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 columns
    try:
        process = await asyncio.create_subprocess_exec(
            *send_argv(site, 25),
            stdout=asyncio.subprocess.PIPE,
            stderr=slave,
        )
        out, _ = await asyncio.wait_for(process.communicate(), 120)
        # The slave stays open here until the terminal is read: Linux may drop what a
        # terminal holds once its last slave closes.
        terminal = await asyncio.to_thread(_read_until, master, "messages submitted in ")
    finally:
        os.close(slave)
        os.close(master)
    assert process.returncode == x400.EXIT_OK
    lines = out.decode().splitlines()
    assert len(lines) == 25
    assert all(line.startswith("[GB; ;SITEA;") and line.endswith("]") for line in lines)
    assert "/25" in terminal  # the bar, with its total
    assert "x400: 25 messages submitted in " in terminal


async def test_no_progress_bar_in_a_pipe(site: Site) -> None:
    process = await asyncio.create_subprocess_exec(
        *send_argv(site, 5),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert len(out.splitlines()) == 5
    (line,) = err.decode().splitlines()
    assert line.startswith("x400: 5 messages submitted in ")
    assert "\r" not in err.decode()


def _read_until(master: int, last: str) -> str:
    """What the terminal got, up to the line holding ``last`` (the child's last words),
    or what came within a generous bound."""
    got = b""
    while last.encode() not in got or not got.endswith(b"\n"):
        ready, _, _ = select.select([master], [], [], 30)
        if not ready:
            break
        got += os.read(master, 65536)
    return got.decode(errors="replace")


# --- help ------------------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


@pytest.mark.parametrize("tool", [x400, x400ctl])
def test_each_command_has_paragraphs_examples_and_every_option_explained(tool: object) -> None:
    parser = tool._parser()  # type: ignore[attr-defined]
    for name, sub in _subcommands(parser).items():
        if name == "quarantine":
            continue  # its actions have their own help
        assert sub.formatter_class is argparse.RawDescriptionHelpFormatter, name
        assert sub.description and "\n\n" in sub.description, name
        assert "example" in sub.description, name
        for action in sub._actions:
            assert action.help, (name, action.dest)


def test_send_help_is_paragraphs_not_one_run_on_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        x400._parser().parse_args(["send", "--help"])
    out = capsys.readouterr().out
    assert "\n\nexamples:\n  x400 send --from " in out
    assert max(len(line) for line in out.splitlines()) <= 100


# --- read --raw --------------------------------------------------------------------------


def _raw_argv(site: Site) -> list[str]:
    user = site.address("Jones")
    return [str(BIN / "x400"), "read", "1", "--raw", "--socket", str(site.socket), "-u", user]


async def _read_raw_on_a_terminal(site: Site, *extra: str) -> tuple[int | None, bytes, str]:
    """``x400 read 1 --raw`` with its standard output a terminal: the exit code, what
    the terminal got, standard error."""
    master, slave = pty.openpty()
    tty.setraw(slave)  # (the octets as written: no CR put before each LF)
    try:
        process = await asyncio.create_subprocess_exec(
            *_raw_argv(site), *extra, stdout=slave, stderr=asyncio.subprocess.PIPE
        )
        _, err = await asyncio.wait_for(process.communicate(), 60)
        terminal = await asyncio.to_thread(_drain, master)
    finally:
        os.close(slave)
        os.close(master)
    return process.returncode, terminal, err.decode()


def _drain(master: int) -> bytes:
    """What the terminal holds now (the writer has exited)."""
    got = b""
    while select.select([master], [], [], 0.5)[0]:
        got += os.read(master, 65536)
    return got


@pytest.mark.slow
async def test_read_raw_refuses_a_terminal_unless_forced(site: Site) -> None:
    await site.send(site.address("Smith"), site.address("Jones"))
    (entry,) = await site.inbox(site.address("Jones"))
    code, terminal, err = await _read_raw_on_a_terminal(site)
    assert code == x400.EXIT_USAGE
    assert terminal == b""
    assert err.startswith("x400: read --raw writes the message's binary BER, not text: pipe it")
    assert "--force" in err
    (still,) = await site.inbox(site.address("Jones"))
    assert still["read"] is False  # refused before asking the MTA: nothing marked read

    _, apdu = await site.read(site.address("Jones"), entry["id"])
    code, terminal, err = await _read_raw_on_a_terminal(site, "--force")
    assert (code, err) == (x400.EXIT_OK, "")
    assert terminal == apdu

    process = await asyncio.create_subprocess_exec(
        *_raw_argv(site), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err_bytes = await asyncio.wait_for(process.communicate(), 60)
    assert (process.returncode, out, err_bytes) == (x400.EXIT_OK, apdu, b"")
