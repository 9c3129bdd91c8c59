"""``x400-mta --help``, ``--version`` and bad arguments are answered before the daemon is
imported: the entry point pyproject.toml installs parses the arguments first, and the
protocol stack, the store and asyncio are imported only to run."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from client.cli import EXIT_OK, EXIT_USAGE
from config.schema import DEFAULT_CONFIG_FILE
from mta import command

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "asyncio",
    "sqlalchemy",
    "p1.asn1",
    "p1.osi",
    "p1.association",
    "p1.mts",
    "config.loader",
    "store",
    "mta.daemon",
    "mta.service",
)
"""What running the MTA needs and answering --help does not."""


def entry_point() -> tuple[str, str]:
    """The module and function pyproject.toml installs as ``x400-mta``."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, function = scripts["x400-mta"].partition(":")
    return module, function


@pytest.mark.parametrize(
    ("argv", "status"),
    [(["--help"], EXIT_OK), (["--version"], EXIT_OK), (["--no-such-option"], EXIT_USAGE)],
)
def test_the_entry_point_answers_without_importing_the_daemon(argv: list[str], status: int) -> None:
    module, function = entry_point()
    probe = (
        "import sys\n"
        f"from {module} import {function}\n"
        "try:\n"
        f"    {function}({argv!r})\n"
        "except SystemExit as end:\n"
        "    code = end.code\n"
        f"print(code, sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.stdout.splitlines()[-1] == f"{status} []"


def test_the_default_file_is_the_schemas() -> None:
    assert command.DEFAULT_CONFIG_FILE == DEFAULT_CONFIG_FILE


def test_help_names_every_option_the_daemon_reads() -> None:
    text = command.parser().format_help()
    for option in ("--config", "--log-level", "--no-timestamps", "--log-prefix-priorities"):
        assert option in text
    assert "--check" in text and "exit codes:" in text


def test_no_config_and_no_default_file_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(command, "DEFAULT_CONFIG_FILE", tmp_path / "mta.toml")
    with pytest.raises(SystemExit) as end:
        command.main([])
    assert end.value.code == EXIT_USAGE
    assert "--config" in capsys.readouterr().err
