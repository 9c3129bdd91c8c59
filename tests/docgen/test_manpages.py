"""The manual pages under man/ are what ``python -m docgen`` writes from the commands'
parsers and the configuration schema, every subcommand and option is on its page, groff
reads them without a warning, and ``man`` finds them for a venv whose bin/ is on PATH."""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from client.cli import EXIT_CODES
from config import doc
from docgen.__main__ import REGENERATE, generated, stale
from docgen.manpages import COMMANDS, CONFIG_PAGE, Command, command_page, config_page, pages
from docgen.roff import commands, escape, options

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SECTIONS = ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "FILES", "SEE ALSO")


def test_the_committed_files_are_what_the_command_writes() -> None:
    assert stale(ROOT) == [], f"regenerate with `{REGENERATE}` and commit the result"
    assert {ROOT / p for p in generated()} <= set((ROOT / "man").iterdir()) | set(
        (ROOT / "completion").iterdir()
    )


@pytest.mark.slow
def test_the_command_writes_every_page(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "docgen", "--root", str(tmp_path)], cwd=ROOT, check=True
    )
    assert run.returncode == 0
    assert (tmp_path / "man" / "x400ctl.1").read_text() == pages()["x400ctl.1"]
    fresh = subprocess.run([sys.executable, "-m", "docgen", "--root", str(tmp_path), "--check"])
    assert fresh.returncode == 0
    (tmp_path / "man" / "x400.1").write_text("stale\n")
    check = subprocess.run(
        [sys.executable, "-m", "docgen", "--root", str(tmp_path), "--check"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 1 and "man/x400.1 is stale" in check.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_each_command_page_has_the_sections(command: Command) -> None:
    text = pages()[f"{command.name}.1"]
    headings = re.findall(r'^\.SH "?([^"\n]+)"?$', text, re.M)
    assert [h for h in headings if h in SECTIONS] == list(SECTIONS)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_every_subcommand_and_option_is_on_the_page(command: Command) -> None:
    parser: argparse.ArgumentParser = command.parser()
    text = pages()[f"{command.name}.1"]
    for path, sub in _every_parser(parser):
        if path:
            assert f'.SS "{escape(path)}"' in text
        for option in options(sub):
            for flag in option.flags:
                assert f"\\fB{escape(flag)}\\fR" in text, (path, flag)


def _every_parser(
    parser: argparse.ArgumentParser, path: str = ""
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for name, _, sub in commands(parser):
        found += _every_parser(sub, f"{path} {name}".strip())
    return found


def test_x400ctl_lists_its_local_api_commands() -> None:
    text = pages()["x400ctl.1"]
    for name in ("ping", "status", "queue", "hold", "minimize", "probe", "quarantine show"):
        assert f'.SS "{name}"' in text


def test_exit_status_is_the_shared_table() -> None:
    for text in pages().values():
        if '.SH "EXIT STATUS"' in text:
            section = text.split('.SH "EXIT STATUS"')[1].split(".SH")[0]
            assert re.findall(r"^\\fB(\d+)\\fR$", section, re.M) == [str(c) for c, _ in EXIT_CODES]


def test_a_subcommand_added_to_a_parser_is_on_the_page() -> None:
    base = COMMANDS[2]

    def grown() -> argparse.ArgumentParser:
        parser = base.parser()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                sub = action.add_parser("frobnicate", help="turn the frob")
                sub.add_argument("--widget", metavar="W", help="which widget")
        return parser

    text = command_page(dataclasses.replace(base, parser=grown))
    assert '.SS "frobnicate"' in text and "\\fB\\-\\-widget\\fR \\fIW\\fR" in text
    assert "Turn the frob" in text


def test_the_configuration_page_has_every_key() -> None:
    text = config_page()
    for section in doc.sections():
        for key, *_ in section.rows:
            assert f"\\fB{escape(key)}\\fR (" in text
    assert pages()[f"{CONFIG_PAGE}.5"] == text
    headings = re.findall(r'^\.SH "?([^"\n]+)"?$', text, re.M)
    expected = ["NAME", "SYNOPSIS", "DESCRIPTION", "FILES", "SEE ALSO"]
    assert [h for h in headings if h in SECTIONS] == expected


def test_roff_escapes_what_would_be_a_request() -> None:
    assert escape(".TH no\n'also\\here-") == "\\&.TH no\n\\&'also\\ehere\\-"


def test_groff_reads_every_page_without_a_warning(tmp_path: Path) -> None:
    groff = _tool_or_skip("groff")
    for name, text in pages().items():
        (tmp_path / name).write_text(text)
        run = subprocess.run(
            [groff, "-man", "-Tutf8", "-ww", "-z", str(tmp_path / name)],
            capture_output=True,
            text=True,
        )
        assert (run.returncode, run.stderr) == (0, ""), name


def _tool_or_skip(tool: str) -> str:
    """The path of ``tool`` (man-db's man, or groff); a skip saying it is missing, or a
    failure when ``AIOX400_REQUIRE_MAN`` is set (CI)."""
    found = shutil.which(tool)
    if found is None:
        if os.environ.get("AIOX400_REQUIRE_MAN"):
            pytest.fail(f"{tool} is missing and AIOX400_REQUIRE_MAN is set")
        pytest.skip(f"{tool} is missing (Debian package man-db)")
    return found


@pytest.mark.slow
@pytest.mark.parametrize("page", [*(f"1 {c.name}" for c in COMMANDS), f"5 {CONFIG_PAGE}"])
def test_man_finds_the_installed_page_from_path(page: str) -> None:
    """man-db derives its search path from PATH: <prefix>/bin gives <prefix>/share/man,
    where the package's data-files (pip install .) or make install's links put the pages."""
    man = _tool_or_skip("man")
    section, name = page.split()
    environ = {k: v for k, v in os.environ.items() if k not in ("MANPATH", "MANOPT")}
    environ |= {"PATH": f"{BIN}:/usr/bin:/bin", "MANWIDTH": "80", "MANPAGER": "cat"}
    found = subprocess.run(
        [man, "-w", section, name], env=environ, capture_output=True, text=True, check=True
    )
    assert Path(found.stdout.strip()).read_text() == pages()[f"{name}.{section}"]
    shown = subprocess.run(
        [man, section, name], env=environ, capture_output=True, text=True, check=True
    )
    assert shown.stdout.lstrip().startswith(f"{name.upper()}({section})")
    assert "EXIT STATUS" in shown.stdout or section == "5"
