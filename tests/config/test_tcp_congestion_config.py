"""``tcp_congestion``: absent by default, an algorithm the kernel offers, a clear error else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from config import ConfigError, MtaConfig, load_config

HEAD = 'name = "MTA-A"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEA"\naccept_any_recipient = true\n'
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


def load(tmp_path: Path, text: str) -> MtaConfig:
    path = tmp_path / "site-a.toml"
    path.write_text(HEAD + text, encoding="utf-8")
    return load_config(path)


def offered() -> list[str]:
    try:
        return AVAILABLE.read_text().split()
    except OSError:
        return []


def test_absent_leaves_the_system_default(tmp_path: Path) -> None:
    assert load(tmp_path, "").tcp_congestion is None


def test_an_offered_algorithm_is_taken(tmp_path: Path) -> None:
    if not offered():
        pytest.skip(f"{AVAILABLE} is not readable here")
    name = offered()[0]
    assert load(tmp_path, f"tcp_congestion = {json.dumps(name)}\n").tcp_congestion == name


def test_an_algorithm_the_kernel_lacks_is_refused_with_what_it_offers(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, 'tcp_congestion = "nosuchcc"\n')
    text = str(caught.value)
    assert 'site-a.toml: tcp_congestion = "nosuchcc": expected a congestion control' in text
    for name in offered():
        assert name in text


@pytest.mark.parametrize("value", ["", "cu bic", "1", "[]"])
def test_a_value_that_is_no_name_is_refused(tmp_path: Path, value: str) -> None:
    raw = value if value in ("1", "[]") else json.dumps(value)
    with pytest.raises(ConfigError, match='expected a congestion control name such as "cubic"'):
        load(tmp_path, f"tcp_congestion = {raw}\n")
