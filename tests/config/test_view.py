"""``x400ctl config``'s TOML (:mod:`config.view`): written to a file and loaded, it is the
same configuration; only keys away from their defaults unless asked; secrets never shown."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config import ConfigError, MtaConfig, load_config
from config.values import HIDDEN
from config.view import DEFAULT_MARK, NOT_SET, effective_settings, render
from tests.p1.security.policies import EXAMPLE_SPIF
from tests.support.certs import issue, make_ca

EXAMPLES = Path(__file__).resolve().parents[2] / "config" / "examples"
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
ALL = ["override", "flash", "immediate", "priority", "routine", "deferred"]


def congestion() -> str | None:
    try:
        offered = AVAILABLE.read_text().split()
    except OSError:
        return None
    return offered[0] if offered else None


def secret_file(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text + "\n")
    path.chmod(0o600)
    return path


def with_secrets_put_back(config: MtaConfig, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """What an operator does with a pasted copy: the hidden passwords written in again."""
    secrets = {"password": config.password}
    for index, peer in enumerate(config.peers):
        secrets[f"peers[{index}].password"] = peer.our_credentials.password
        secrets[f"peers[{index}].peer_password"] = peer.their_credentials.password
    filled = []
    for key, value in pairs:
        if value.startswith(json.dumps(HIDDEN)):
            secret = secrets[key]
            assert secret is not None
            value = json.dumps(secret.reveal()) + value.removeprefix(json.dumps(HIDDEN))
        filled.append((key, value))
    return filled


def reloaded(config: MtaConfig, directory: Path, *, defaults: bool) -> MtaConfig:
    """``config`` shown, pasted into a new file elsewhere (secrets put back), and loaded."""
    text = render(with_secrets_put_back(config, effective_settings(config)), defaults=defaults)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "pasted.toml"
    path.write_text(text, encoding="utf-8")
    return dataclasses.replace(load_config(path), source=config.source)


# --- the examples and a file that sets every key --------------------------------------------


@pytest.mark.parametrize("site", ["site-a.toml", "site-b.toml"])
@pytest.mark.parametrize("defaults", [False, True])
def test_the_examples_load_back_the_same(tmp_path: Path, site: str, defaults: bool) -> None:
    config = load_config(EXAMPLES / site)
    assert reloaded(config, tmp_path / "elsewhere", defaults=defaults) == config


def every_key(directory: Path) -> Path:
    """A configuration that sets every key away from its default."""
    mta = secret_file(directory, "mta.pass", "mta-secret")
    theirs = secret_file(directory, "b.pass", "b-secret")
    algorithm = congestion()
    ca = make_ca("every-key CA")
    (directory / "ca.pem").write_bytes(ca.pem)
    issue(ca, "mta-a.example").write(directory, "mta-a")
    issue(ca, "mta-a.example").write(directory, "listener")
    issue(ca, "mta-a.example").write(directory, "to-b")
    (directory / "b-ca.pem").write_bytes(make_ca("site B CA").pem)
    text = f"""
name = "MTA-A"
global_domain = "C=GB;ADMD= ;PRMD=SITEA"
password_file = "mta.pass"
state_dir = "state"
database = "sqlite:///db/queue.db"
control_socket = "run/ctl.sock"
local_domains = ["C=GB;ADMD= ;PRMD=SITEA", "C=GB;ADMD= ;PRMD=SITEA2;O=Ops"]
local_users = ["C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith"]
foreign_originators = "accept"
supported_extensions = [20, "1.3.26.0.4406.0.8.0"]
default_route = "MTA-B"
log_level = "debug"
{f"tcp_congestion = {json.dumps(algorithm)}" if algorithm else ""}

[[listeners]]
address = "127.0.0.1"
port = 5100
dscp = "AF41"
tsel = ["x400", "hex:0591", ""]
ssel = "S1"
psel = ["P", "hex:00ff"]
tls = "required"
certificate = "listener.pem"
key = "listener.key"
ca = "ca.pem"
client_certificate = "off"

[tls]
certificate = "mta-a.pem"
key = "mta-a.key"
ca = "ca.pem"

[retry]
initial = "45s"
maximum = "2h"
factor = 1.5
max_refusals = 2
jitter = 0.1

[max_age]
override = "30m"
flash = "45m"
immediate = "5h"
priority = "13h"
routine = "2d"
deferred = "4d"

[dscp]
override = "EF"
flash = "CS5"
immediate = "AF31"
priority = 9
routine = "CS1"
deferred = "CS2"

[limits]
max_tpdu_size = 1024
max_tsdu_size = "32MiB"
max_spdu_size = "48MiB"
max_message_size = 1000001
max_connect_data_size = "32KiB"
max_connections = 100
max_connections_per_address = 8
max_unbound = 9
max_unbound_per_address = 3
max_bytes_before_bind = "16KiB"
bind_timeout = "20s"
idle_timeout = "20m"
min_progress = 512
progress_interval = "1m"
max_inbound_buffer = "200MiB"
failed_bind_delay = 0.5
failed_bind_delay_max = "1m"
max_api_connections = 7
api_idle_timeout = "90s"
api_operator_connections = 2
max_api_connections_per_uid = 3
max_api_pending_per_uid = "8MiB"

[quarantine]
max_messages = 50
max_bytes = "1GiB"

[minimize]
precedence = "immediate"
submissions = "refuse"

[queue]
lease = "12s"

[retention]
finished = "0s"
received = "10d"
audit = "60d"
interval = "1m30s"
batch = 100

[metrics]
listen = "[::1]:9100"
path = "/x400/metrics"

[[peers]]
name = "MTA-B"
host = "mta-b.example"
routes = ["C=GB;ADMD= ;PRMD=SITEB"]
password = "our-secret-for-b"
peer_password_file = "{theirs}"
supported_extensions = ["1.2.3"]
protocol = "1988-x410"
omit_extensions = ["internal-trace"]
source_address = "192.0.2.7"
clearance = "link"
tsel = "x400"
ssel = "hex:0001"
psel = "PSEL"
calling_tsel = "us"
calling_ssel = "hex:02"
calling_psel = "our-psel"
addresses = ["mta-b.example", "192.0.2.9", "2001:db8:b::/48"]
tls = "required"
certificate = "to-b.pem"
key = "to-b.key"
ca = "b-ca.pem"
fingerprint = "{"AB:" * 31}AB"
certificate_name = "mta-b.lab.example"

[[peers.slots]]
precedences = ["override", "flash", "immediate"]
port = 5003
tls = "off"
dscp = "CS4"
mode = "permanent"
max_connections = 3
backlog_threshold = 5
idle_timeout = "1h"
connect_timeout = "2m"
transfer_timeout = "1h"
source_address = "2001:db8::7"
tsel = "x400-urgent"
ssel = "S2"
psel = "P2"
calling_tsel = "us2"
calling_ssel = "hex:03"
calling_psel = "ours2"
checkpoint_size = 16
window_size = 5

[[peers.slots]]
precedences = ["priority", "routine", "deferred"]
port = 5000

[access]
operators = ["4242", 50]

[access.users]
"1001" = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith"
"1002" = ["C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Jones", "C=GB;ADMD= ;PRMD=SITEA2;O=Ops;S=Duty"]

[[peers]]
name = "MTA-HF"
host = "10.9.0.2"
routes = ["C=GB;ADMD= ;PRMD=HF"]
transport = "acp142"

[peers.acp142]
data_port = 3001
ack_port = 3002
node_id = "10.9.0.20"
group = "239.1.2.3"
emcon = true
emcon_repetitions = 5
emcon_interval = "2m"
retransmission = "45s"
backoff = 1.5
max_retransmission = "20m"
give_up = "2h"
window = 3

[acp142]
address = "10.9.0.1"
data_port = 3003
ack_port = 3004
node_id = "10.9.0.10"
rate = 9600
max_pdu_size = 1024
ack_delay = "5s"
emcon = true
groups = ["239.1.2.3"]
multicast_ttl = 2
max_incomplete = 16

[security]
policy = "policy.xml"
default_label = "UNCLASSIFIED"
default_clearance = "link"

[[security.clearances]]
name = "link"
classification = "SECRET"
categories = ["NATO", "STAFF"]
users = ["C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith"]
"""
    assert mta.exists()
    shutil.copy(EXAMPLE_SPIF, directory / "policy.xml")
    path = directory / "every-key.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_every_key_file_sets_every_key(tmp_path: Path) -> None:
    """So the round trip below covers every key; a key added to the schema must be set here."""
    shown = effective_settings(load_config(every_key(tmp_path)))
    at_default = [
        key
        for key, value in shown
        if value == NOT_SET or value.endswith(DEFAULT_MARK)
        if not key.startswith("peers[0].slots[1].")  # the second slot keeps the defaults
        if not key.startswith(("peers[0].transport", "peers[0].acp142"))  # a P1 peer
        if not key.startswith("peers[1].")
        or key.startswith(("peers[1].transport", "peers[1].acp142."))
        if not (key == "tcp_congestion" and congestion() is None)
        if key != "accept_any_recipient"  # true only without local_users, which is set
    ]
    assert at_default == []
    assert len(shown) > 100


@pytest.mark.parametrize("defaults", [False, True])
def test_every_key_loads_back_the_same(tmp_path: Path, defaults: bool) -> None:
    config = load_config(every_key(tmp_path))
    assert reloaded(config, tmp_path / "elsewhere", defaults=defaults) == config


def test_the_files_units_and_forms_are_kept(tmp_path: Path) -> None:
    text = render(effective_settings(load_config(every_key(tmp_path))))
    for line in [
        'maximum = "2h"',
        'interval = "90s"',
        'max_tsdu_size = "32MiB"',
        "max_message_size = 1000001",
        'dscp = "AF41"',
        "priority = 9",
        'tsel = ["", "hex:0591", "x400"]',
        'listen = "[::1]:9100"',
        'precedences = ["override", "flash", "immediate"]',
        '1002 = ["C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Jones", "C=GB;ADMD= ;PRMD=SITEA2;O=Ops;S=Duty"]',
        'operators = ["4242", "50"]',
        f'password_file = "{tmp_path / "mta.pass"}"',
        f'peer_password_file = "{tmp_path / "b.pass"}"',
        'password = "<hidden>"',
        f'database = "sqlite:///{tmp_path / "db" / "queue.db"}"',
    ]:
        assert line in text.splitlines(), line
    for header in ("[[peers]]", "[[peers.slots]]", "[access]", "[access.users]", "[limits]"):
        assert header in text.splitlines()


# --- defaults, secrets ----------------------------------------------------------------------

HEAD = 'name = "MTA-A"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEA"\naccept_any_recipient = true\n'


def shown(tmp_path: Path, text: str, *, defaults: bool = False) -> str:
    path = tmp_path / "mta.toml"
    path.write_text(text, encoding="utf-8")
    return render(effective_settings(load_config(path)), defaults=defaults)


def test_only_keys_away_from_their_defaults_by_default(tmp_path: Path) -> None:
    text = shown(
        tmp_path, HEAD + f'state_dir = "{tmp_path}"\n[retry]\ninitial = "1m"\njitter = 0.5\n'
    )
    assert text == (
        f'name = "MTA-A"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEA"\nstate_dir = "{tmp_path}"\n'
        "accept_any_recipient = true\n\n[retry]\njitter = 0.5\n"
    )


def test_defaults_shows_every_key_and_marks_the_defaults(tmp_path: Path) -> None:
    text = shown(tmp_path, HEAD + "[retry]\njitter = 0.5\n", defaults=True)
    lines = text.splitlines()
    assert 'initial = "1m"  # default' in lines
    assert "jitter = 0.5" in lines
    assert "# default_route is not set" in lines
    assert 'max_message_size = "64MiB"  # default' in lines
    assert 'state_dir = "/var/lib/aiox400"  # default' in lines
    assert tomllib.loads(text)["retry"] == {
        "initial": "1m",
        "maximum": "1h",
        "factor": 2.0,
        "jitter": 0.5,
        "max_refusals": 3,
    }


def test_an_empty_access_table_is_kept(tmp_path: Path) -> None:
    config = load_config(every_key(tmp_path))
    for access in ("[access]\n", ""):
        path = tmp_path / "access.toml"
        path.write_text(HEAD + access, encoding="utf-8")
        loaded = load_config(path)
        assert reloaded(loaded, tmp_path / "elsewhere", defaults=False) == loaded
    assert config.access is not None


def test_passwords_never_show(tmp_path: Path) -> None:
    secret = secret_file(tmp_path, "mta.pass", "do-not-show-me")
    text = shown(
        tmp_path,
        HEAD
        + f'password_file = "{secret}"\n'
        + 'database = "postgresql+psycopg://mta:db-secret@db.example/aiox400"\n'
        + '[[peers]]\nname = "B"\nhost = "b"\npassword = "inline-secret"\n'
        + f"[[peers.slots]]\nprecedences = {json.dumps(ALL)}\nport = 1\n",
        defaults=True,
    )
    assert "do-not-show-me" not in text and "db-secret" not in text
    assert "inline-secret" not in text
    assert f'password_file = "{secret}"' in text.splitlines()
    assert 'database = "postgresql+psycopg://mta:<hidden>@db.example/aiox400"' in text
    assert 'password = "<hidden>"' in text.splitlines()


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (HEAD + 'password = "<hidden>"\n', "password = <hidden>"),
        (
            HEAD + 'database = "postgresql://mta:<hidden>@db/x"\n',
            'database = "postgresql://mta:<hidden>@db/x"',
        ),
    ],
)
def test_a_pasted_hidden_secret_is_refused(tmp_path: Path, text: str, key: str) -> None:
    path = tmp_path / "pasted.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert f"{path}: {key}: expected the " in str(raised.value)
    assert "x400ctl config shows for it" in str(raised.value)


# --- any configuration ----------------------------------------------------------------------

names = st.text(alphabet="ABCXYZ-19", min_size=1, max_size=8)
durations = st.one_of(
    st.integers(1, 10**7),
    st.floats(0.001, 1e7, allow_nan=False, allow_infinity=False),
    st.sampled_from(["90s", "15m", "4h", "3d", "1h30m", "0.25s", "2.5m"]),
)
ages = st.one_of(  # no longer than retention.received's default, which must cover them
    st.integers(1, 7 * 86400),
    st.floats(0.001, 7 * 86400, allow_nan=False),
    st.sampled_from(["90s", "15m", "4h", "3d", "1h30m", "0.25s"]),
)
sizes = st.one_of(st.integers(1, 2**40), st.sampled_from(["512KiB", "64MiB", "1GiB", "10B"]))
dscps = st.one_of(st.integers(0, 63), st.sampled_from(["CS0", "CS7", "EF", "AF11", "af43"]))
selectors = st.one_of(
    st.sampled_from(["", "x400", "hex:0591", "hex:00"]), st.text("ab1", max_size=4)
)


@st.composite
def slot_tables(draw: st.DrawFn) -> list[dict[str, Any]]:
    order = draw(st.permutations(ALL))
    cuts = sorted(draw(st.sets(st.integers(1, 5), max_size=3)))
    groups = [order[a:b] for a, b in zip([0, *cuts], [*cuts, 6], strict=True)]
    slots = []
    for port, group in enumerate(groups, start=5000):
        slot: dict[str, Any] = {"precedences": list(group), "port": port}
        optional = {
            "dscp": dscps,
            "mode": st.sampled_from(["permanent", "on-demand", "Permanent"]),
            "max_connections": st.integers(1, 9),
            "backlog_threshold": st.integers(1, 99),
            "idle_timeout": durations,
            "tsel": selectors,
            "calling_psel": selectors,
        }
        for key, strategy in optional.items():
            if draw(st.booleans()):
                slot[key] = draw(strategy)
        slots.append(slot)
    return slots


@st.composite
def configurations(draw: st.DrawFn) -> dict[str, Any]:
    data: dict[str, Any] = {"name": "MTA-A", "global_domain": "C=GB;ADMD= ;PRMD=SITEA"}
    optional: Mapping[str, st.SearchStrategy[Any]] = {
        "password": st.text("abcXYZ019-!", min_size=1, max_size=8),
        "state_dir": st.sampled_from(["state", "/var/lib/x", "./a/../b"]),
        "database": st.sampled_from(
            ["sqlite:///q.db", "sqlite:////tmp/q.db", "postgresql+psycopg://db.example/x"]
        ),
        "log_level": st.sampled_from(["debug", "INFO", "error"]),
        "local_users": st.lists(
            st.sampled_from(["C=GB;ADMD= ;PRMD=SITEA;S=Smith", "C=GB;ADMD= ;PRMD=SITEA;O=X;S=J"]),
            max_size=3,
        ),
        "supported_extensions": st.lists(st.one_of(st.integers(0, 256), st.just("1.2.3"))),
        "retry": st.fixed_dictionaries(
            {}, optional={"factor": st.floats(1, 10), "jitter": st.floats(0, 0.99)}
        ),
        "max_age": st.dictionaries(st.sampled_from(ALL), ages, max_size=3),
        "dscp": st.dictionaries(st.sampled_from(ALL), dscps, max_size=3),
        "limits": st.fixed_dictionaries(
            {},
            optional={
                "max_message_size": sizes,
                "max_tpdu_size": st.sampled_from([128, 2048, "1KiB"]),
                "bind_timeout": durations,
                "min_progress": sizes,
                "failed_bind_delay": st.just(0),
            },
        ),
        "quarantine": st.fixed_dictionaries({}, optional={"max_bytes": sizes}),
        "retention": st.fixed_dictionaries(
            {},
            optional={
                "finished": st.sampled_from([0, "0s", 12.5, "2h"]),
                "batch": st.integers(1, 9),
            },
        ),
        "metrics": st.fixed_dictionaries(
            {"listen": st.sampled_from(["127.0.0.1:1", "[::]:9464", "host-a:80"])},
            optional={"path": st.sampled_from(["/m", "/metrics"])},
        ),
        "listeners": st.lists(
            st.fixed_dictionaries(
                {"port": st.integers(1, 65535)},
                optional={
                    "dscp": dscps,
                    "tsel": st.one_of(selectors, st.lists(selectors, min_size=1)),
                },
            ),
            max_size=3,
            unique_by=lambda listener: listener["port"],
        ),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            data[key] = draw(strategy)
    if "local_users" not in data:
        data["accept_any_recipient"] = True
    if draw(st.booleans()):
        peer: dict[str, Any] = {"name": draw(names), "host": "b", "slots": draw(slot_tables())}
        for key, strategy in {
            "protocol": st.sampled_from(["1984", "1988", "1988-x410"]),
            "tsel": selectors,
            "ssel": selectors,
            "peer_password": st.text("pq", min_size=1, max_size=3),
            "routes": st.just(["C=GB;ADMD= ;PRMD=SITEB"]),
        }.items():
            if draw(st.booleans()):
                peer[key] = draw(strategy)
        data["peers"] = [peer]
    return data


def to_toml(data: Mapping[str, Any]) -> str:
    """A generated configuration as a file, tables of tables in TOML's array form."""
    lines = [f"{key} = {json.dumps(value)}" for key, value in data.items() if not _is_table(value)]
    for key, value in data.items():
        if isinstance(value, dict):
            lines += [f"[{key}]", *(f"{k} = {json.dumps(v)}" for k, v in value.items())]
        elif _is_table(value):
            for item in value:
                lines += [f"[[{key}]]"]
                lines += [f"{k} = {json.dumps(v)}" for k, v in item.items() if k != "slots"]
                for slot in item.get("slots", []):
                    lines += [
                        "[[peers.slots]]",
                        *(f"{k} = {json.dumps(v)}" for k, v in slot.items()),
                    ]
    return "\n".join(lines) + "\n"


def _is_table(value: object) -> bool:
    return isinstance(value, dict) or (
        isinstance(value, list) and bool(value) and isinstance(value[0], dict)
    )


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=configurations(), defaults=st.booleans())
def test_any_configuration_loads_back_the_same(
    tmp_path: Path, data: dict[str, Any], defaults: bool
) -> None:
    path = tmp_path / "generated.toml"
    path.write_text(to_toml(data), encoding="utf-8")
    config = load_config(path)
    assert reloaded(config, tmp_path / "elsewhere", defaults=defaults) == config
