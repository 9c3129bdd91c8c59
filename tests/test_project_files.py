"""The files a user of the source reads first: LICENSE is the Apache License 2.0 that
pyproject.toml names, and CHANGELOG.md keeps the Keep a Changelog form."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")
"""The kinds of change Keep a Changelog 1.1.0 sorts entries by."""


def test_the_license_is_the_one_pyproject_names() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text
    sections = re.findall(r"^ {0,6}(\d)\. (\w[\w ]*)\.", text, re.M)
    assert [n for n, _ in sections] == [str(n) for n in range(1, 10)]


def test_the_changelog_has_an_unreleased_section_sorted_by_kind() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## \[([^]]+)\]", text, re.M)
    assert releases[0] == "Unreleased"
    unreleased = text.split("## [Unreleased]")[1].split("\n## ")[0]
    kinds = re.findall(r"^### (.+)$", unreleased, re.M)
    assert kinds and all(kind in KINDS for kind in kinds)
    assert len(re.findall(r"^- ", unreleased, re.M)) >= 10
