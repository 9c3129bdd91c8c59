"""``[metrics]``: off by default, the listen address in its forms (required in the table),
and clear errors."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from config import ConfigError, MtaConfig, load_config
from config.schema import MetricsEndpoint

HEAD = 'name = "MTA-A"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEA"\naccept_any_recipient = true\n'


def load(tmp_path: Path, text: str) -> MtaConfig:
    path = tmp_path / "site-a.toml"
    path.write_text(HEAD + text, encoding="utf-8")
    return load_config(path)


def test_there_is_no_endpoint_by_default(tmp_path: Path) -> None:
    metrics = load(tmp_path, "").metrics
    assert metrics == MetricsEndpoint()
    assert not metrics.enabled
    assert metrics.path == "/metrics"


@pytest.mark.parametrize("table", ["[metrics]\n", '[metrics]\npath = "/m"\n'])
def test_a_table_without_listen_is_refused_naming_file_and_key(tmp_path: Path, table: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load(tmp_path, table)
    assert str(refused.value).startswith(f"{tmp_path / 'site-a.toml'}: metrics.listen is missing")
    assert "would answer nowhere" in str(refused.value)


@pytest.mark.parametrize(
    ("listen", "host", "port", "url"),
    [
        ("127.0.0.1:9464", "127.0.0.1", 9464, "http://127.0.0.1:9464/metrics"),
        ("0.0.0.0:1", "0.0.0.0", 1, "http://0.0.0.0:1/metrics"),
        ("[::1]:9464", "::1", 9464, "http://[::1]:9464/metrics"),
        ("[::]:65535", "::", 65535, "http://[::]:65535/metrics"),
        ("[fe80::1:2]:80", "fe80::1:2", 80, "http://[fe80::1:2]:80/metrics"),
        ("localhost:9464", "localhost", 9464, "http://localhost:9464/metrics"),
        (
            "mta-a.example.org:9100",
            "mta-a.example.org",
            9100,
            "http://mta-a.example.org:9100/metrics",
        ),
    ],
)
def test_listen_is_an_address_and_a_port(
    tmp_path: Path, listen: str, host: str, port: int, url: str
) -> None:
    metrics = load(tmp_path, f'[metrics]\nlisten = "{listen}"\n').metrics
    assert (metrics.host, metrics.port, metrics.enabled) == (host, port, True)
    assert metrics.url == url


def test_the_path_may_be_another(tmp_path: Path) -> None:
    text = '[metrics]\nlisten = "127.0.0.1:9464"\npath = "/x400/metrics"\n'
    metrics = load(tmp_path, text).metrics
    assert metrics.path == "/x400/metrics"
    assert metrics.url == "http://127.0.0.1:9464/x400/metrics"


_EXPECTED = 'expected an address and port, such as "127.0.0.1:9464"'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('listen = "9464"', f'metrics.listen = "9464": {_EXPECTED}'),
        ('listen = "127.0.0.1"', f'metrics.listen = "127.0.0.1": {_EXPECTED}'),
        ('listen = "::1:9464"', f'metrics.listen = "::1:9464": {_EXPECTED}'),
        ('listen = "[::1]"', f'metrics.listen = "[::1]": {_EXPECTED}'),
        ('listen = "[localhost]:9464"', f'metrics.listen = "[localhost]:9464": {_EXPECTED}'),
        ('listen = "127.0.0.1:0"', 'metrics.listen = "127.0.0.1:0": expected an address and '),
        ('listen = "127.0.0.1:70000"', 'metrics.listen = "127.0.0.1:70000": expected an '),
        ('listen = "127.0.0.1:port"', 'metrics.listen = "127.0.0.1:port": expected'),
        ('listen = "a b:9464"', 'metrics.listen = "a b:9464": expected'),
        ('listen = "-bad-:9464"', 'metrics.listen = "-bad-:9464": expected'),
        ("listen = 9464", "metrics.listen = 9464: expected"),
        ('listen = ""', 'metrics.listen = "": expected'),
        ('path = "metrics"', 'metrics.path = "metrics": expected an absolute URL path'),
        ('path = "/metrics?x=1"', 'metrics.path = "/metrics?x=1": expected an absolute URL'),
        ('path = "/a b"', 'metrics.path = "/a b": expected an absolute URL path'),
        ("port = 9464", "metrics.port = 9464: expected one of the keys listen, path"),
    ],
)
def test_a_bad_value_names_file_key_and_value(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, f"[metrics]\n{text}\n")
    assert str(raised.value).startswith(f"{tmp_path / 'site-a.toml'}: {message}")


def test_metrics_must_be_a_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"metrics = 1: expected a \[metrics\] table"):
        load(tmp_path, "metrics = 1\n")


@given(
    host=st.ip_addresses(),
    port=st.integers(min_value=1, max_value=65535),
)
def test_every_ip_address_and_port_reads_back(host: object, port: int) -> None:
    text = str(host)
    written = f"[{text}]:{port}" if ":" in text else f"{text}:{port}"
    with tempfile.TemporaryDirectory() as folder:
        metrics = load(Path(folder), f'[metrics]\nlisten = "{written}"\n').metrics
    assert (metrics.host, metrics.port) == (text, port)
    assert metrics.url == f"http://{written}/metrics"


@given(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30))
def test_any_text_is_read_or_refused_with_a_config_error(text: str) -> None:
    written = json.dumps(text, ensure_ascii=False)
    with tempfile.TemporaryDirectory() as folder:
        try:
            metrics = load(Path(folder), f"[metrics]\nlisten = {written}\n").metrics
        except ConfigError as error:
            assert error.key == "metrics.listen"
            return
    assert metrics.host is not None and 1 <= metrics.port <= 65535
    assert text.endswith(f":{metrics.port}")
