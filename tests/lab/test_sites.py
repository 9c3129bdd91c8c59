"""lab.sites' configurations without a network: over the HF wire (``slow_link``) only
site A's flash slot stays permanent, the daemons allow a slow bind and a slow peer, and
the files are still valid configurations; without it they are as the DiffServ lab has
them."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from config.loader import load_config
from lab.sites import EXAMPLES, site_config


def _config(name: str, tmp_path: Path, slow_link: bool) -> str:
    return site_config(
        (EXAMPLES / f"{name}.toml").read_text(),
        address="198.18.1.2",
        peer_address="198.18.2.2",
        folder=tmp_path,
        name=name,
        slow_link=slow_link,
    )


def _modes(text: str) -> dict[str, str]:
    slots = tomllib.loads(text)["peers"][0]["slots"]
    return {slot["precedences"][-1]: slot["mode"] for slot in slots}


@pytest.mark.parametrize("name", ["site-a", "site-b"])
def test_over_hf_one_permanent_slot_and_slow_limits(name: str, tmp_path: Path) -> None:
    text = _config(name, tmp_path, slow_link=True)
    permanent = {p for p, mode in _modes(text).items() if mode == "permanent"}
    assert permanent == ({"flash"} if name == "site-a" else set())
    table = tomllib.loads(text)
    assert table["limits"] == {"bind_timeout": "10m", "progress_interval": "10m"}
    assert table["retry"]["initial"] == "30s"
    slots = table["peers"][0]["slots"]
    assert {(s["connect_timeout"], s["transfer_timeout"]) for s in slots} == {("2m", "2h")}
    (tmp_path / f"{name}.toml").write_text(text)
    config = load_config(tmp_path / f"{name}.toml")  # (raises on an invalid file)
    assert {slot.connect_timeout for slot in config.peers[0].slots} == {120.0}


@pytest.mark.parametrize("name", ["site-a", "site-b"])
def test_without_hf_the_slots_are_the_example_s(name: str, tmp_path: Path) -> None:
    text = _config(name, tmp_path, slow_link=False)
    example = (EXAMPLES / f"{name}.toml").read_text()
    assert _modes(text) == _modes(example)
    assert "limits" not in tomllib.loads(text)
    assert "connect_timeout" not in text
    assert re.search(r'^initial = "1s"$', text, re.MULTILINE)
