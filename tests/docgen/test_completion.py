"""The bash completion under completion/ completes each command's subcommands, options and
choices as its parser has them: bash run with a script loaded, its completion function
called the way bash calls it on TAB (``COMP_WORDS``, ``COMP_CWORD``), ``COMPREPLY`` read
back."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

import pytest

from client.dump import KINDS
from docgen.completion import script, scripts
from docgen.manpages import COMMANDS
from mta.command import LOG_LEVELS

ROOT = Path(__file__).resolve().parents[2]
BASH = shutil.which("bash") or "/bin/bash"


def complete(source: Path, line: str, cwd: Path = ROOT) -> list[str]:
    """What TAB offers at the end of ``line`` with the script ``source`` loaded."""
    words = line.split(" ")
    program = (
        f"source {str(source)!r}\n"
        f"function=$(complete -p {words[0]} | sed -E 's/.*-F ([^ ]+).*/\\1/')\n"
        'COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}\n'
        '"$function" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"\n'
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    run = subprocess.run(
        [BASH, "--norc", "--noprofile", "-c", program, "bash", *words],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=True,
    )
    assert run.stderr == ""
    return sorted(filter(None, run.stdout.split("\n")))


def loaded(name: str) -> Path:
    return ROOT / "completion" / name


@pytest.mark.parametrize(
    ("line", "offered"),
    [
        ("x400ctl qu", ["quarantine", "queue"]),
        ("x400ctl hold --pr", ["--precedence"]),
        ("x400ctl -c site.toml qu", ["quarantine", "queue"]),
        ("x400ctl --socket /run/x.sock hold --peer MTA-B --a", ["--all"]),
        ("x400ctl quarantine s", ["show"]),
        ("x400ctl quarantine show 3 --r", ["--raw"]),
        ("x400ctl ping --protocol 1988", ["1988", "1988-x410"]),
        ("x400ctl ping host --peer-name ", []),
        ("x400 s", ["send"]),
        ("x400 send --deliv", ["--delivery-report"]),
        ("x400-mta --log-level w", ["warning"]),
        ("x400-mta --ch", ["--check"]),
    ],
)
def test_tab_offers(line: str, offered: list[str]) -> None:
    assert complete(loaded(line.split(" ")[0]), line) == offered


def test_every_choice_of_an_option_is_offered() -> None:
    assert complete(loaded("x400-mta"), "x400-mta --log-level ") == sorted(LOG_LEVELS)
    assert complete(loaded("x400-dump"), "x400-dump --as ") == sorted(KINDS)


def test_a_file_argument_completes_file_names(tmp_path: Path) -> None:
    (tmp_path / "bind.ber").write_bytes(b"")
    (tmp_path / "site-a.toml").write_text("")
    assert complete(loaded("x400-dump"), "x400-dump bi", cwd=tmp_path) == ["bind.ber"]
    assert complete(loaded("x400ctl"), "x400ctl status -c si", cwd=tmp_path) == ["site-a.toml"]
    assert complete(loaded("x400"), "x400 send --body-file b", cwd=tmp_path) == ["bind.ber"]


def test_a_subcommand_added_to_a_parser_is_completed(tmp_path: Path) -> None:
    parser = COMMANDS[2].parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            sub = action.add_parser("frobnicate", help="turn the frob")
            sub.add_argument("--widget", choices=["left", "right"])
    source = tmp_path / "x400ctl"
    source.write_text(script("x400ctl", parser))
    assert complete(source, "x400ctl fro") == ["frobnicate"]
    assert complete(source, "x400ctl frobnicate --widget l") == ["left"]


def test_the_committed_scripts_are_current() -> None:
    for name, text in scripts().items():
        assert loaded(name).read_text() == text, f"regenerate with `python -m docgen`: {name}"
