"""``[retention]``: the documented defaults, each key, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import ConfigError, MtaConfig, load_config
from config.schema import Retention

HEAD = 'name = "MTA-A"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEA"\naccept_any_recipient = true\n'


def load(tmp_path: Path, text: str) -> MtaConfig:
    path = tmp_path / "site-a.toml"
    path.write_text(HEAD + text, encoding="utf-8")
    return load_config(path)


def test_the_defaults_are_the_documented_ones(tmp_path: Path) -> None:
    retention = load(tmp_path, "").retention
    assert retention == Retention()
    assert (retention.finished, retention.received) == (24 * 3600, 7 * 24 * 3600)
    assert (retention.audit, retention.interval, retention.batch) == (30 * 24 * 3600, 300, 500)


def test_each_key_is_read(tmp_path: Path) -> None:
    text = '[retention]\nfinished = "0s"\nreceived = "4d"\naudit = "90d"\n'
    text += 'interval = "30s"\nbatch = 50\n'
    assert load(tmp_path, text).retention == Retention(
        finished=0, received=4 * 86400, audit=90 * 86400, interval=30, batch=50
    )


def test_received_may_be_shorter_when_max_age_is(tmp_path: Path) -> None:
    ages = "".join(
        f'{p} = "1h"\n' for p in ("override", "flash", "immediate", "priority", "routine")
    )
    text = f'[max_age]\n{ages}deferred = "2h"\n[retention]\nreceived = "2h"\n'
    assert load(tmp_path, text).retention.received == 7200


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[retention]\nreceived = "1d"\n',
            'retention.received = "1d": expected a duration no shorter than the longest '
            "[max_age] (259200 s)",
        ),
        ("[retention]\nbatch = 0\n", "retention.batch = 0: expected an integer >= 1"),
        ('[retention]\nfinished = "soon"\n', 'retention.finished = "soon": expected a duration'),
        ('[retention]\ninterval = "0s"\n', 'retention.interval = "0s": expected a duration > 0'),
        ('[retention]\nmailboxes = "1d"\n', "retention.mailboxes"),
    ],
)
def test_a_bad_value_names_file_key_and_value(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, text)
    assert str(raised.value).startswith(f"{tmp_path / 'site-a.toml'}: {message}"), str(raised.value)
