"""A peer's protocol in the configuration: the default, each value, and a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import ConfigError, MtaConfig, load_config
from config.schema import P1Protocol

HEAD = 'name = "MTA-A"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEA"\naccept_any_recipient = true\n'
ALL = '"override", "flash", "immediate", "priority", "routine", "deferred"'
PEER = '[[peers]]\nname = "OLD"\nhost = "127.0.0.1"\n{}[[peers.slots]]\nprecedences = [{}]\n'


def load(tmp_path: Path, line: str) -> MtaConfig:
    path = tmp_path / "site-a.toml"
    path.write_text(HEAD + PEER.format(line, ALL) + "port = 5000\n", encoding="utf-8")
    return load_config(path)


def test_a_peer_is_called_in_normal_mode_unless_told(tmp_path: Path) -> None:
    assert load(tmp_path, "").peers[0].protocol is P1Protocol.NORMAL
    assert not P1Protocol.NORMAL.x410


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1988", P1Protocol.NORMAL),
        ("1988-x410", P1Protocol.X410_1988),
        ("1984", P1Protocol.X410_1984),
    ],
)
def test_each_protocol_is_read(tmp_path: Path, value: str, expected: P1Protocol) -> None:
    protocol = load(tmp_path, f'protocol = "{value}"\n').peers[0].protocol
    assert protocol is expected
    assert protocol.x410 is (expected is not P1Protocol.NORMAL)


@pytest.mark.parametrize("value", ['"1992"', "1984", '"x410"'])
def test_another_protocol_names_the_file_key_and_value(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, f"protocol = {value}\n")
    text = str(raised.value)
    assert text.startswith(f"{tmp_path / 'site-a.toml'}: peers[0].protocol = ")
    assert 'expected one of "1988" (normal mode), "1988-x410"' in text
