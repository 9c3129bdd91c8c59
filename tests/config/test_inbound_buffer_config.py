"""``[limits] max_inbound_buffer``: its default, its reading, and the least it may be."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import ConfigError, MtaConfig, load_config

HEAD = 'name = "MTA-A"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEA"\naccept_any_recipient = true\n'
MIB = 1 << 20


def load(tmp_path: Path, text: str) -> MtaConfig:
    path = tmp_path / "site-a.toml"
    path.write_text(HEAD + text, encoding="utf-8")
    return load_config(path)


def test_the_default_is_256_mib(tmp_path: Path) -> None:
    assert load(tmp_path, "").connection_limits.max_inbound_buffer == 256 * MIB


def test_it_may_be_as_small_as_a_tsdu_and_a_message(tmp_path: Path) -> None:
    text = '[limits]\nmax_tsdu_size = "1MiB"\nmax_message_size = "2MiB"\n'
    text += 'max_inbound_buffer = "3MiB"\n'
    assert load(tmp_path, text).connection_limits.max_inbound_buffer == 3 * MIB


def test_less_than_a_tsdu_and_a_message_names_the_key_and_the_least(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, '[limits]\nmax_inbound_buffer = "100MiB"\n')
    message = str(raised.value)
    assert 'site-a.toml: limits.max_inbound_buffer = "100MiB": expected a size no less ' in message
    assert f"max_tsdu_size + max_message_size ({128 * MIB} octets)" in message


def test_unset_it_follows_the_stack_sizes(tmp_path: Path) -> None:
    text = '[limits]\nmax_tsdu_size = "200MiB"\nmax_message_size = "100MiB"\n'
    assert load(tmp_path, text).connection_limits.max_inbound_buffer == 300 * MIB
