"""The configuration loader: the example sites, every error message, secrets, paths, defaults."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config import (
    DEFAULT_CONNECTION_LIMITS,
    DEFAULT_MAX_AGE,
    DEFAULT_QUARANTINE,
    DEFAULT_RETRY,
    ConfigError,
    LogLevel,
    MaxAge,
    MtaConfig,
    QuarantineLimits,
    RetryPolicy,
    Secret,
    SlotMode,
    load_config,
)
from config.schema import ForeignOriginators
from config.view import effective_settings
from p1.mts.orname import format_orname, parse_orname
from p1.mts.precedence import DEFAULT_TABLE, Precedence, dscp_name
from p1.osi import DEFAULT_LIMITS
from tests.profiles import examples

EXAMPLES = Path(__file__).resolve().parents[2] / "config" / "examples"

NAMED = 'name = "MTA-A"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEA"\n'
HEAD = NAMED + "accept_any_recipient = true\n"
PEER = '[[peers]]\nname = "MTA-B"\nhost = "127.0.0.1"\n'
ALL = '"override", "flash", "immediate", "priority", "routine", "deferred"'
SLOT = f"[[peers.slots]]\nprecedences = [{ALL}]\nport = 5000\n"
LISTENER = '[[listeners]]\naddress = "127.0.0.1"\nport = 5100\n'

TOP_KEYS = (
    "name, global_domain, password, password_file, state_dir, database, control_socket, "
    "listeners, local_domains, local_users, accept_any_recipient, foreign_originators, "
    "supported_extensions, peers, default_route, max_age, retry, dscp, log_level, limits, "
    "quarantine, minimize, queue, retention, metrics, access, security, tls, acp142, tcp_congestion"
)
PREFIX = "an O/R address prefix such as C=GB;ADMD= ;PRMD=SITEB"
GLOBAL = "a global domain: C, ADMD and optional PRMD, such as C=GB;ADMD= ;PRMD=SITEA"
NAME = "an MTA name: 1 to 32 printable ASCII characters (X.411 MTAName)"
PORT = "a port number 1..65535"
DSCP = "CS0..CS7, EF, AFxy or 0..63"
DURATION = "a duration > 0: seconds, or text such as 90s, 15m, 4h, 3d"
PRECEDENCES = (
    "a non-empty list of precedences: override, flash, immediate, priority, routine, deferred"
)
SLOTS = "[[peers.slots]] tables admitting all six precedences"


def write(tmp_path: Path, text: str, name: str = "site-a.toml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def load_text(tmp_path: Path, text: str) -> MtaConfig:
    return load_config(write(tmp_path, text))


def slot_table(config: MtaConfig, peer: int = 0) -> list[tuple[tuple[str, ...], int, str, str]]:
    return [
        (tuple(p.label for p in slot.precedences), slot.port, dscp_name(slot.dscp), slot.mode.value)
        for slot in config.peers[peer].slots
    ]


# --- the example sites ----------------------------------------------------------------------

SEED_TABLE = [  # precedences, DSCP, mode: the seed's table
    (("override", "flash"), "CS3", "permanent"),
    (("immediate",), "CS2", "permanent"),
    (("priority",), "CS1", "permanent"),
    (("routine", "deferred"), "CS0", "on-demand"),
]


@pytest.mark.parametrize(
    ("site", "name", "peer", "own_ports", "peer_ports"),
    [
        ("site-a.toml", "MTA-A", "MTA-B", (5103, 5102, 5101, 5100), (5003, 5002, 5001, 5000)),
        ("site-b.toml", "MTA-B", "MTA-A", (5003, 5002, 5001, 5000), (5103, 5102, 5101, 5100)),
    ],
)
def test_example_has_the_seed_table(
    site: str, name: str, peer: str, own_ports: tuple[int, ...], peer_ports: tuple[int, ...]
) -> None:
    config = load_config(EXAMPLES / site)
    assert config.name == name
    assert [p.name for p in config.peers] == [peer]
    assert config.peers[0].host == "127.0.0.1"
    assert slot_table(config) == [
        (precedences, port, dscp, mode)
        for (precedences, dscp, mode), port in zip(SEED_TABLE, peer_ports, strict=True)
    ]
    listeners = {(listener.port, dscp_name(listener.dscp)) for listener in config.listeners}
    assert listeners == {
        (port, dscp) for port, (_, dscp, _) in zip(own_ports, SEED_TABLE, strict=True)
    }
    assert {listener.address for listener in config.listeners} == {"127.0.0.1"}
    assert config.default_route is None
    assert config.precedence_table == DEFAULT_TABLE


def test_examples_mirror_each_other() -> None:
    a = load_config(EXAMPLES / "site-a.toml")
    b = load_config(EXAMPLES / "site-b.toml")
    for here, there in ((a, b), (b, a)):
        peer = here.peer(there.name)
        # Each slot connects to a listener of the other site that carries the same mark.
        listeners = {listener.port: listener.dscp for listener in there.listeners}
        assert {slot.port: slot.dscp for slot in peer.slots} == listeners
        # Routes to the peer are the peer's local domains.
        assert [r.key for r in peer.routes] == [d.key for d in there.local_domains]
        assert peer.routes[0].matches(parse_orname(f"{peer.routes[0].text};O=HQ;S=Smith"))
        # What we present is what the other side checks, both ways.
        assert peer.our_credentials.name == here.name
        assert peer.their_credentials.name == there.name
        assert there.password is not None and peer.their_credentials.password is not None
        assert peer.their_credentials.password.reveal() == there.password.reveal()
        assert peer.our_credentials.password == here.password


def test_examples_keep_state_beside_the_files() -> None:
    config = load_config(EXAMPLES / "site-a.toml")
    assert config.source == EXAMPLES / "site-a.toml"
    assert config.state_dir == EXAMPLES / "state" / "site-a"
    assert config.database == f"sqlite:///{EXAMPLES / 'state' / 'site-a' / 'aiox400.db'}"
    assert config.control_socket == EXAMPLES / "state" / "site-a" / "control.sock"
    assert config.global_domain.route_key() == ("gb", " ", "sitea")
    assert [d.text for d in config.local_domains] == ["C=GB;ADMD= ;PRMD=SITEA"]


def test_every_precedence_has_exactly_one_slot_in_the_examples() -> None:
    for site in ("site-a.toml", "site-b.toml"):
        peer = load_config(EXAMPLES / site).peers[0]
        for precedence in Precedence:
            assert [s.admits(precedence) for s in peer.slots].count(True) == 1
            assert peer.slot_for(precedence).admits(precedence)


# --- every error, with its message ----------------------------------------------------------

ERRORS: list[tuple[str, str, str]] = [
    # (case id, file text, expected message after "<file>: ")
    # unknown keys
    (
        "top-typo",
        HEAD + 'nmae = "x"\n',
        f'nmae = "x": expected one of the keys {TOP_KEYS} (did you mean "name"?)',
    ),
    (
        "slot-typo",
        HEAD + PEER + SLOT + "prot = 5003\n",
        "peers[0].slots[0].prot = 5003: expected one of the keys precedences, port, dscp, mode, "
        "max_connections, backlog_threshold, idle_timeout, connect_timeout, transfer_timeout, "
        "source_address, tsel, ssel, psel, calling_tsel, calling_ssel, calling_psel, tls, "
        "checkpoint_size, window_size "
        '(did you mean "port"?)',
    ),
    (
        "unknown-no-guess",
        HEAD + "[retry]\nzzz = 1\n",
        "retry.zzz = 1: expected one of the keys initial, maximum, factor, jitter, max_refusals",
    ),
    (
        "secret-typo-hidden",
        HEAD + 'pasword = "s3cret"\n',
        f'pasword = <hidden>: expected one of the keys {TOP_KEYS} (did you mean "password"?)',
    ),
    # identity
    ("name-missing", 'global_domain = "C=GB;ADMD= ;PRMD=X"\n', f"name is missing: expected {NAME}"),
    ("name-long", f'name = "{"M" * 33}"\n', f'name = "{"M" * 33}": expected {NAME}'),
    ("name-type", "name = 7\n", f"name = 7: expected {NAME}"),
    ("name-control", 'name = "A\\tB"\n', f'name = "A\\tB": expected {NAME}'),
    ("domain-missing", 'name = "MTA-A"\n', f"global_domain is missing: expected {GLOBAL}"),
    (
        "domain-no-admd",
        'name = "A"\nglobal_domain = "C=GB"\n',
        f'global_domain = "C=GB": expected {GLOBAL}',
    ),
    (
        "domain-organization",
        'name = "A"\nglobal_domain = "C=GB;ADMD= ;PRMD=P;O=X"\n',
        f'global_domain = "C=GB;ADMD= ;PRMD=P;O=X": expected {GLOBAL}',
    ),
    (
        "domain-bad",
        'name = "A"\nglobal_domain = "C=GB;Q"\n',
        f'global_domain = "C=GB;Q": expected {GLOBAL}',
    ),
    # secrets and paths
    (
        "password-non-ascii",
        HEAD + 'password = "pässword"\n',
        "password = <hidden>: expected a non-empty ASCII password "
        "(X.411 simple credentials are an IA5String)",
    ),
    (
        "password-too-long",
        HEAD + f'password = "{"p" * 63}"\n',
        "password = <hidden>: expected a password of 62 characters at most "
        "(X.411 ub-password-length), not 63",
    ),
    (
        "password-empty",
        HEAD + 'password = ""\n',
        "password = <hidden>: expected a non-empty ASCII password "
        "(X.411 simple credentials are an IA5String)",
    ),
    (
        "password-both",
        HEAD + 'password = "x"\npassword_file = "a.pass"\n',
        'password_file = "a.pass": expected either password or password_file, not both',
    ),
    ("password-file-type", HEAD + "password_file = 3\n", "password_file = 3: expected a file name"),
    ("state-dir-type", HEAD + "state_dir = []\n", "state_dir = []: expected a path"),
    (
        "state-dir-nul",
        HEAD + 'state_dir = "a\\u0000b"\n',
        'state_dir = "a\\u0000b": expected a path',
    ),
    (
        "database",
        HEAD + 'database = "queue.db"\n',
        'database = "queue.db": expected a database URL such as sqlite:///state/aiox400.db '
        "or postgresql+psycopg://host/aiox400",
    ),
    (
        "control-socket-long",
        HEAD + f'control_socket = "/{"s" * 107}"\n',
        f'control_socket = "/{"s" * 107}": expected a socket path of at most 107 octets '
        f"(/{'s' * 107} is longer; set control_socket or a shorter state_dir)",
    ),
    (
        "log-level",
        HEAD + 'log_level = "verbose"\n',
        'log_level = "verbose": expected one of debug, info, warning, error, critical',
    ),
    # local domains and routes
    (
        "local-not-list",
        HEAD + 'local_domains = "C=GB"\n',
        'local_domains = "C=GB": expected a list of O/R address prefixes',
    ),
    ("local-type", HEAD + "local_domains = [5]\n", f"local_domains[0] = 5: expected {PREFIX}"),
    (
        "local-gap",
        HEAD + 'local_domains = ["C=GB;PRMD=X"]\n',
        'local_domains[0] = "C=GB;PRMD=X": expected an O/R address prefix without gaps '
        "(ADMD is missing)",
    ),
    (
        "local-no-country",
        HEAD + 'local_domains = ["ADMD=X"]\n',
        'local_domains[0] = "ADMD=X": expected an O/R address prefix without gaps (C is missing)',
    ),
    (
        "local-personal",
        HEAD + 'local_domains = ["C=GB;ADMD= ;S=Smith"]\n',
        'local_domains[0] = "C=GB;ADMD= ;S=Smith": expected an O/R address prefix of '
        "C, ADMD, PRMD, O and OU only",
    ),
    (
        "local-unparsable",
        HEAD + 'local_domains = ["C=GB;XX=1"]\n',
        f'local_domains[0] = "C=GB;XX=1": expected {PREFIX} (unknown attribute `XX`)',
    ),
    (
        "local-twice",
        HEAD + 'local_domains = ["C=GB;ADMD= ;PRMD=X", "c=gb;admd= ;prmd=x"]\n',
        'local_domains[1] = "c=gb;admd= ;prmd=x": expected a prefix not already routed by '
        "local_domains[0]",
    ),
    (
        "route-is-local",
        HEAD + PEER + 'routes = ["C=GB;ADMD= ;PRMD=SITEA"]\n' + SLOT,
        'peers[0].routes[0] = "C=GB;ADMD= ;PRMD=SITEA": expected a prefix not already routed by '
        "global_domain",
    ),
    (
        "route-two-peers",
        HEAD
        + PEER
        + 'routes = ["C=GB;ADMD= ;PRMD=B"]\n'
        + SLOT
        + '[[peers]]\nname = "MTA-C"\nhost = "c"\nroutes = ["C=GB;ADMD= ;PRMD=B"]\n'
        + SLOT,
        'peers[1].routes[0] = "C=GB;ADMD= ;PRMD=B": expected a prefix not already routed by '
        "peers[0].routes[0]",
    ),
    # listeners
    ("listeners-type", HEAD + "listeners = 5\n", "listeners = 5: expected [[listeners]] tables"),
    (
        "listener-port-missing",
        HEAD + "[[listeners]]\n",
        f"listeners[0].port is missing: expected {PORT}",
    ),
    (
        "listener-port-0",
        HEAD + "[[listeners]]\nport = 0\n",
        f"listeners[0].port = 0: expected {PORT}",
    ),
    (
        "listener-port-high",
        HEAD + "[[listeners]]\nport = 65536\n",
        f"listeners[0].port = 65536: expected {PORT}",
    ),
    (
        "listener-port-text",
        HEAD + '[[listeners]]\nport = "5000"\n',
        f'listeners[0].port = "5000": expected {PORT}',
    ),
    (
        "listener-port-bool",
        HEAD + "[[listeners]]\nport = true\n",
        f"listeners[0].port = true: expected {PORT}",
    ),
    (
        "listener-dscp",
        HEAD + LISTENER + 'dscp = "CS9"\n',
        f'listeners[0].dscp = "CS9": expected {DSCP}',
    ),
    (
        "listener-dscp-64",
        HEAD + LISTENER + "dscp = 64\n",
        f"listeners[0].dscp = 64: expected {DSCP}",
    ),
    (
        "listener-address",
        HEAD + '[[listeners]]\naddress = "127.0.0.1 x"\nport = 1\n',
        'listeners[0].address = "127.0.0.1 x": expected a host name or IP address',
    ),
    (
        "listener-duplicate",
        HEAD + LISTENER + LISTENER,
        "listeners[1].port = 5100: expected a port no other listener uses on 127.0.0.1 "
        "(listeners[0] listens on 127.0.0.1 port 5100)",
    ),
    (
        "listener-wildcard-clash",
        HEAD + "[[listeners]]\nport = 5100\n" + LISTENER,
        "listeners[1].port = 5100: expected a port no other listener uses on 127.0.0.1 "
        "(listeners[0] listens on 0.0.0.0 port 5100)",
    ),
    # retry, ages, code points, limits
    ("retry-type", HEAD + "retry = 3\n", "retry = 3: expected a [retry] table"),
    ("retry-zero", HEAD + "[retry]\ninitial = 0\n", f"retry.initial = 0: expected {DURATION}"),
    (
        "retry-unit",
        HEAD + '[retry]\ninitial = "5x"\n',
        f'retry.initial = "5x": expected {DURATION}',
    ),
    (
        "retry-bare",
        HEAD + '[retry]\ninitial = "90"\n',
        f'retry.initial = "90": expected {DURATION}',
    ),
    (
        "retry-trailing",
        HEAD + '[retry]\ninitial = "1m junk"\n',
        f'retry.initial = "1m junk": expected {DURATION}',
    ),
    (
        "retry-infinite",
        HEAD + f'[retry]\ninitial = "{"9" * 400}s"\n',
        f'retry.initial = "{"9" * 116}...: expected {DURATION}',
    ),
    (
        "retry-bool",
        HEAD + "[retry]\ninitial = true\n",
        f"retry.initial = true: expected {DURATION}",
    ),
    (
        "retry-jitter",
        HEAD + "[retry]\njitter = 1.0\n",
        "retry.jitter = 1.0: expected a fraction from 0 up to (not including) 1",
    ),
    (
        "retry-factor",
        HEAD + "[retry]\nfactor = 0.5\n",
        "retry.factor = 0.5: expected a number >= 1",
    ),
    (
        "retry-maximum",
        HEAD + '[retry]\ninitial = "10m"\nmaximum = "5m"\n',
        'retry.maximum = "5m": expected a duration no shorter than retry.initial (600 s)',
    ),
    ("max-age", HEAD + "[max_age]\nflash = -1\n", f"max_age.flash = -1: expected {DURATION}"),
    (
        "max-age-key",
        HEAD + '[max_age]\nurgent = "1h"\n',
        'max_age.urgent = "1h": expected one of the keys override, flash, immediate, priority, '
        "routine, deferred",
    ),
    ("dscp-override", HEAD + '[dscp]\nflash = "CS9"\n', f'dscp.flash = "CS9": expected {DSCP}'),
    (
        "tpdu-size",
        HEAD + "[limits]\nmax_tpdu_size = 4096\n",
        "limits.max_tpdu_size = 4096: expected a TPDU size of 128, 256, 512, 1024 or 2048 "
        "(X.224 class 0)",
    ),
    (
        "message-size-unit",
        HEAD + '[limits]\nmax_message_size = "64MB"\n',
        'limits.max_message_size = "64MB": expected a size in octets >= 1, '
        "or text such as 512KiB, 64MiB",
    ),
    (
        "message-size-zero",
        HEAD + "[limits]\nmax_message_size = 0\n",
        "limits.max_message_size = 0: expected a size in octets >= 1, "
        "or text such as 512KiB, 64MiB",
    ),
    # peers
    ("peers-type", HEAD + "[peers]\nname = 1\n", "peers = { name = 1 }: expected [[peers]] tables"),
    (
        "peer-host-missing",
        HEAD + '[[peers]]\nname = "MTA-B"\n' + SLOT,
        "peers[0].host is missing: expected a host name or IP address, or a non-empty list of them",
    ),
    (
        "peer-hosts-empty",
        HEAD + '[[peers]]\nname = "MTA-B"\nhost = []\n' + SLOT,
        "peers[0].host = []: expected a host name or IP address, or a non-empty list of them",
    ),
    (
        "peer-hosts-element",
        HEAD + '[[peers]]\nname = "MTA-B"\nhost = ["b1", "b 2"]\n' + SLOT,
        'peers[0].host[1] = "b 2": expected a host name or IP address',
    ),
    (
        "peer-hosts-number",
        HEAD + '[[peers]]\nname = "MTA-B"\nhost = ["b1", 2]\n' + SLOT,
        "peers[0].host[1] = 2: expected a host name or IP address",
    ),
    (
        "peer-source-address",
        HEAD + '[[peers]]\nname = "MTA-B"\nhost = "b"\nsource_address = "b.example"\n' + SLOT,
        'peers[0].source_address = "b.example": expected an IPv4 or IPv6 address',
    ),
    (
        "slot-source-address",
        HEAD + '[[peers]]\nname = "MTA-B"\nhost = "b"\n' + SLOT + 'source_address = "10.0.0.300"\n',
        'peers[0].slots[0].source_address = "10.0.0.300": expected an IPv4 or IPv6 address',
    ),
    (
        "peer-name-missing",
        HEAD + '[[peers]]\nhost = "b"\n',
        f"peers[0].name is missing: expected {NAME}",
    ),
    (
        "peer-is-self",
        HEAD + '[[peers]]\nname = "MTA-A"\nhost = "b"\n' + SLOT,
        'peers[0].name = "MTA-A": expected a name other than this MTA\'s own',
    ),
    (
        "peer-twice",
        HEAD + PEER + SLOT + PEER + SLOT,
        'peers[1].name = "MTA-B": expected a name no other peer has (peers[0])',
    ),
    (
        "peer-routes-type",
        HEAD + PEER + 'routes = "C=GB"\n' + SLOT,
        'peers[0].routes = "C=GB": expected a list of O/R address prefixes',
    ),
    (
        "peer-password-hidden",
        HEAD + PEER + "peer_password = 42\n" + SLOT,
        "peers[0].peer_password = <hidden>: expected a non-empty ASCII password "
        "(X.411 simple credentials are an IA5String)",
    ),
    (
        "peer-omit-extensions",
        HEAD + PEER + 'omit_extensions = ["internal-trace", "content-correlator"]\n' + SLOT,
        'peers[0].omit_extensions[1] = "content-correlator": expected one of '
        '"internal-trace", "priority-level-qualifier"',
    ),
    # slots
    (
        "slots-table",
        HEAD + PEER + "[peers.slots]\nport = 5000\n",
        "peers[0].slots = { port = 5000 }: expected [[peers.slots]] tables",
    ),
    ("slots-missing", HEAD + PEER, f"peers[0].slots is missing: expected {SLOTS}"),
    (
        "slots-empty",
        HEAD + PEER + "slots = []\n",
        f"peers[0].slots: expected {SLOTS} "
        "(unrouted: override, flash, immediate, priority, routine, deferred)",
    ),
    (
        "slots-unrouted",
        HEAD
        + PEER
        + '[[peers.slots]]\nprecedences = ["flash", "override"]\nport = 5003\n'
        + '[[peers.slots]]\nprecedences = ["immediate", "priority"]\nport = 5002\n',
        f"peers[0].slots: expected {SLOTS} (unrouted: routine, deferred)",
    ),
    (
        "slots-overlap",
        HEAD + PEER + SLOT + '[[peers.slots]]\nprecedences = ["routine", "flash"]\nport = 5003\n',
        'peers[0].slots[1].precedences = ["routine", "flash"]: expected precedences no other '
        "slot admits (flash is in peers[0].slots[0])",
    ),
    (
        "slot-dscp",  # the form the project's brief quotes
        HEAD
        + PEER
        + '[[peers.slots]]\nprecedences = ["flash", "override", "immediate"]\nport = 5003\n'
        + '[[peers.slots]]\nprecedences = ["priority", "routine", "deferred"]\nport = 5000\n'
        + 'dscp = "CS9"\n',
        f'peers[0].slots[1].dscp = "CS9": expected {DSCP}',
    ),
    (
        "slot-precedences-missing",
        HEAD + PEER + "[[peers.slots]]\nport = 5000\n",
        f"peers[0].slots[0].precedences is missing: expected {PRECEDENCES}",
    ),
    (
        "slot-precedences-empty",
        HEAD + PEER + "[[peers.slots]]\nprecedences = []\nport = 5000\n",
        f"peers[0].slots[0].precedences = []: expected {PRECEDENCES}",
    ),
    (
        "slot-precedence-unknown",
        HEAD + PEER + '[[peers.slots]]\nprecedences = ["urgent"]\nport = 5000\n',
        f'peers[0].slots[0].precedences = ["urgent"]: expected {PRECEDENCES}',
    ),
    (
        "slot-precedence-number",
        HEAD + PEER + "[[peers.slots]]\nprecedences = [6]\nport = 5000\n",
        f"peers[0].slots[0].precedences = [6]: expected {PRECEDENCES}",
    ),
    (
        "slot-precedence-twice",
        HEAD + PEER + '[[peers.slots]]\nprecedences = ["flash", "FLASH"]\nport = 5000\n',
        'peers[0].slots[0].precedences = ["flash", "FLASH"]: expected each precedence once '
        "(flash is repeated)",
    ),
    (
        "slot-port-missing",
        HEAD + PEER + f"[[peers.slots]]\nprecedences = [{ALL}]\n",
        f"peers[0].slots[0].port is missing: expected {PORT}",
    ),
    (
        "slot-mode",
        HEAD + PEER + SLOT + 'mode = "sometimes"\n',
        'peers[0].slots[0].mode = "sometimes": expected one of permanent, on-demand',
    ),
    (
        "slot-max-connections",
        HEAD + PEER + SLOT + "max_connections = 0\n",
        "peers[0].slots[0].max_connections = 0: expected an integer >= 1",
    ),
    (
        "slot-backlog-threshold",
        HEAD + PEER + SLOT + "backlog_threshold = 0\n",
        "peers[0].slots[0].backlog_threshold = 0: expected an integer >= 1",
    ),
    (
        "slot-backlog-float",
        HEAD + PEER + SLOT + "backlog_threshold = 2.5\n",
        "peers[0].slots[0].backlog_threshold = 2.5: expected an integer >= 1",
    ),
    (
        "slot-idle-timeout",
        HEAD + PEER + SLOT + 'mode = "on-demand"\nidle_timeout = 0\n',
        f"peers[0].slots[0].idle_timeout = 0: expected {DURATION}",
    ),
    # default route
    (
        "default-route-unknown",
        HEAD + 'default_route = "MTA-X"\n' + PEER + SLOT,
        'default_route = "MTA-X": expected the name of a peer (MTA-B)',
    ),
    (
        "default-route-no-peers",
        HEAD + 'default_route = "MTA-X"\n',
        'default_route = "MTA-X": expected the name of a peer (none are configured)',
    ),
]


@pytest.mark.parametrize(
    ("text", "message"), [case[1:] for case in ERRORS], ids=[case[0] for case in ERRORS]
)
def test_error_message(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: {message}"
    assert caught.value.file == path
    assert caught.value.key == message.split(" ")[0].removesuffix(":")


def test_error_fields_of_a_missing_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_text(tmp_path, 'name = "MTA-A"\n')
    assert caught.value.missing
    assert (caught.value.key, caught.value.expected) == ("global_domain", GLOBAL)


def test_long_values_are_cut_short(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_text(tmp_path, HEAD + f'log_level = "{"v" * 300}"\n')
    assert f'log_level = "{"v" * 116}...: expected one of' in str(caught.value)


def test_invalid_toml(tmp_path: Path) -> None:
    path = write(tmp_path, "name = \n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: expected valid TOML: Invalid value (at line 1")
    assert caught.value.key == ""


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "site-a.toml"
    path.write_bytes(b'name = "\xff"\n')
    with pytest.raises(ConfigError, match=r": expected UTF-8 text \(invalid start byte\)$"):
        load_config(path)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: expected a readable file (No such file or directory)"


# --- password files -------------------------------------------------------------------------


def secret_file(tmp_path: Path, name: str, content: bytes, mode: int = 0o600) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    path.chmod(mode)
    return path


def test_password_file_is_read_relative_to_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = secret_file(tmp_path, "etc/secrets/a.pass", b"file-secret\n")
    peer_secret = secret_file(tmp_path, "etc/secrets/b.pass", b"peer-secret\r\n")
    write(
        tmp_path,
        HEAD
        + 'password_file = "secrets/a.pass"\n'
        + PEER
        + 'peer_password_file = "secrets/b.pass"\n'
        + SLOT,
        "etc/site-a.toml",
    )
    monkeypatch.chdir(tmp_path)  # relative to the file, not to the working directory
    config = load_config("etc/site-a.toml")
    assert config.password is not None
    assert config.password.reveal() == "file-secret"
    assert config.password.source == secret
    peer = config.peers[0]
    assert peer.our_credentials.password == config.password
    assert peer.their_credentials.password is not None
    assert peer.their_credentials.password.reveal() == "peer-secret"
    assert peer.their_credentials.password.source == peer_secret


def test_password_file_keeps_inner_spaces(tmp_path: Path) -> None:
    secret_file(tmp_path, "a.pass", b" two words \n")
    config = load_text(tmp_path, HEAD + 'password_file = "a.pass"\n')
    assert config.password is not None and config.password.reveal() == " two words "


def test_peer_password_overrides_the_mta_password(tmp_path: Path) -> None:
    config = load_text(tmp_path, HEAD + 'password = "mta"\n' + PEER + 'password = "own"\n' + SLOT)
    assert config.password is not None and config.password.reveal() == "mta"
    ours = config.peers[0].our_credentials.password
    assert ours is not None and ours.reveal() == "own"


@pytest.mark.parametrize(
    ("content", "mode", "expected"),
    [
        (b"pw\n", 0o640, "a file only its owner can access ({path} has mode 0640; chmod 600 it)"),
        (b"pw\n", 0o604, "a file only its owner can access ({path} has mode 0604; chmod 600 it)"),
        (b"pw\n", 0o610, "a file only its owner can access ({path} has mode 0610; chmod 600 it)"),
        (b"", 0o600, "a file holding a password ({path} is empty)"),
        (b"\n", 0o400, "a file holding a password ({path} is empty)"),
        (b"p\xe4ss\n", 0o600, "an ASCII password in {path} (X.411 simple credentials are IA5)"),
        (
            b"p" * 63 + b"\n",
            0o600,
            "a password of 62 characters at most in {path} (X.411 ub-password-length), not 63",
        ),
    ],
)
def test_bad_password_file(tmp_path: Path, content: bytes, mode: int, expected: str) -> None:
    secret = secret_file(tmp_path, "secrets/a.pass", content, mode)
    path = write(tmp_path, HEAD + PEER + 'password_file = "secrets/a.pass"\n' + SLOT)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = f'peers[0].password_file = "secrets/a.pass": expected {expected.format(path=secret)}'
    assert str(caught.value) == f"{path}: {message}"


def test_missing_password_file(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD + 'password_file = "nowhere/a.pass"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f'{path}: password_file = "nowhere/a.pass": expected an existing file '
        f"({tmp_path / 'nowhere' / 'a.pass'} does not exist)"
    )


def test_password_file_that_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "a.pass").mkdir()
    path = write(tmp_path, HEAD + 'password_file = "a.pass"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f'{path}: password_file = "a.pass": expected a readable file '
        f"({tmp_path / 'a.pass'}: Is a directory)"
    )


# --- secrets stay secret --------------------------------------------------------------------


def test_secrets_never_show(tmp_path: Path) -> None:
    secret_file(tmp_path, "b.pass", b"from-a-file\n")
    config = load_text(
        tmp_path,
        HEAD
        + 'password = "inline-secret"\n'
        + 'database = "postgresql://mta:db-secret@db/aiox400"\n'
        + PEER
        + 'peer_password_file = "b.pass"\n'
        + SLOT,
    )
    shown = repr(config) + str(config)
    for secret in ("inline-secret", "from-a-file", "db-secret"):
        assert secret not in shown
    assert repr(config.password) == "Secret(<hidden>, inline)"
    assert str(config.peers[0].their_credentials.password) == (
        f"Secret(<hidden>, from {str(tmp_path / 'b.pass')!r})"
    )
    assert config.database == "postgresql://mta:db-secret@db/aiox400"


def test_secret_matches_in_constant_time_terms() -> None:
    secret = Secret("b-pw")
    assert secret.matches("b-pw") and secret.matches(b"b-pw")
    assert not secret.matches("b-pW") and not secret.matches("") and not secret.matches("b-pw€")


def test_error_never_holds_a_secret(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_text(tmp_path, HEAD + PEER + "password = ['top-secret']\n" + SLOT)
    assert "top-secret" not in str(caught.value) + repr(caught.value.value)


# --- relative paths -------------------------------------------------------------------------


def test_relative_paths_resolve_against_the_config_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        tmp_path,
        HEAD
        + 'state_dir = "../var/state"\n'
        + 'database = "sqlite:///db/queue.db?timeout=5"\n'
        + 'control_socket = "run/control.sock"\n',
        "etc/site-a.toml",
    )
    monkeypatch.chdir(tmp_path)
    config = load_config(Path("etc") / "site-a.toml")
    etc = tmp_path / "etc"
    assert config.source == etc / "site-a.toml"
    assert config.state_dir == tmp_path / "var" / "state"
    assert config.database == f"sqlite:///{etc / 'db' / 'queue.db'}?timeout=5"
    assert config.control_socket == etc / "run" / "control.sock"


def test_state_dir_places_the_default_database_and_socket(tmp_path: Path) -> None:
    config = load_text(tmp_path, HEAD + 'state_dir = "state"\n')
    assert config.state_dir == tmp_path / "state"
    assert config.database == f"sqlite:///{tmp_path / 'state' / 'aiox400.db'}"
    assert config.control_socket == tmp_path / "state" / "control.sock"


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:////var/lib/aiox400/queue.db",
        "sqlite://",
        "sqlite:///:memory:",
        "postgresql+psycopg://mta@db.example/aiox400",
        "sqlite+pysqlite:////abs/q.db",
    ],
)
def test_database_urls_kept_as_given(tmp_path: Path, url: str) -> None:
    assert load_text(tmp_path, HEAD + f'database = "{url}"\n').database == url


def test_relative_sqlite_with_a_driver(tmp_path: Path) -> None:
    config = load_text(tmp_path, HEAD + 'database = "sqlite+pysqlite:///q.db"\n')
    assert config.database == f"sqlite+pysqlite:///{tmp_path / 'q.db'}"


# --- defaults and accepted forms ------------------------------------------------------------


def test_defaults(tmp_path: Path) -> None:
    config = load_text(tmp_path, HEAD)
    assert config.name == "MTA-A"
    assert config.password is None
    assert config.state_dir == Path("/var/lib/aiox400")
    assert config.database == "sqlite:////var/lib/aiox400/aiox400.db"
    assert config.control_socket == Path("/var/lib/aiox400/control.sock")
    assert [(d.text, d.key) for d in config.local_domains] == [
        ("C=GB;ADMD= ;PRMD=SITEA", ("gb", " ", "sitea"))
    ]
    assert config.listeners == ()
    assert config.peers == ()
    assert config.default_route is None
    assert config.max_age == DEFAULT_MAX_AGE
    assert config.retry == DEFAULT_RETRY
    assert config.precedence_table == DEFAULT_TABLE
    assert config.log_level is LogLevel.INFO
    assert config.limits == DEFAULT_LIMITS
    assert config.connection_limits == DEFAULT_CONNECTION_LIMITS
    assert config.quarantine == DEFAULT_QUARANTINE
    assert config.local_users is None


def test_default_max_ages() -> None:
    hours = {p.label: DEFAULT_MAX_AGE.of(p) / 3600 for p in Precedence}
    assert hours == {
        "override": 1,
        "flash": 1,
        "immediate": 4,
        "priority": 12,
        "routine": 24,
        "deferred": 72,
    }


def test_slot_and_listener_defaults(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        HEAD
        + "[[listeners]]\nport = 5100\n"
        + PEER
        + '[[peers.slots]]\nprecedences = ["priority", "flash", "override"]\nport = 5003\n'
        + '[[peers.slots]]\nprecedences = ["routine", "deferred", "immediate"]\nport = 5000\n',
    )
    listener = config.listeners[0]
    assert (listener.address, listener.port, listener.dscp) == ("0.0.0.0", 5100, 0)
    first, second = config.peers[0].slots
    assert first.precedences == (Precedence.OVERRIDE, Precedence.FLASH, Precedence.PRIORITY)
    # A slot's default mark is the table's for its most urgent precedence.
    assert (dscp_name(first.dscp), dscp_name(second.dscp)) == ("CS3", "CS2")
    assert first.mode is SlotMode.ON_DEMAND
    assert (first.max_connections, first.backlog_threshold, first.idle_timeout) == (1, 10, 300.0)
    peer = config.peers[0]
    assert peer.routes == ()
    assert peer.our_credentials.password is None and peer.their_credentials.password is None
    assert peer.slot_for(Precedence.IMMEDIATE) is second


def test_dscp_overrides_reach_the_table_and_slot_defaults(tmp_path: Path) -> None:
    config = load_text(tmp_path, HEAD + '[dscp]\nflash = "EF"\noverride = 46\n' + PEER + SLOT)
    assert config.precedence_table == DEFAULT_TABLE.with_dscp(
        {Precedence.FLASH: 46, Precedence.OVERRIDE: 46}
    )
    assert config.peers[0].slots[0].dscp == 46


def test_accepted_forms(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        HEAD
        + 'log_level = "DEBUG"\n'
        + 'local_domains = ["/C=GB/A= /P=SITEA/O=HQ/", "C=GB;ADMD= ;PRMD=SITEA;O=HQ;OU=J6;OU=X"]\n'
        + '[retry]\ninitial = "1m30s"\nmaximum = 7200\nfactor = 1\njitter = 0\n'
        + '[max_age]\nflash = "1.5h"\ndeferred = "3d"\n'
        + '[limits]\nmax_message_size = "128MiB"\nmax_tsdu_size = "1GiB"\nmax_tpdu_size = 512\n'
        + PEER
        + '[[peers.slots]]\nprecedences = [5, "Flash", " 3"]\nport = 5003\n'
        + 'dscp = "af41"\nmode = "Permanent"\nmax_connections = 3\nidle_timeout = 0.5\n'
        + '[[peers.slots]]\nprecedences = ["priority", "ROUTINE", "0"]\nport = 5000\ndscp = 10\n',
    )
    assert config.log_level is LogLevel.DEBUG
    assert [d.key for d in config.local_domains] == [
        ("gb", " ", "sitea", "hq"),
        ("gb", " ", "sitea", "hq", "j6", "x"),
    ]
    assert config.retry == RetryPolicy(initial=90.0, maximum=7200.0, factor=1.0, jitter=0.0)
    assert config.max_age == MaxAge(flash=5400.0, deferred=259200.0)
    assert config.limits.max_message_size == 128 << 20
    assert config.limits.max_tsdu_size == 1 << 30
    assert config.limits.max_tpdu_size == 512
    assert config.limits.max_spdu_size == DEFAULT_LIMITS.max_spdu_size
    first, second = config.peers[0].slots
    assert first.precedences == (Precedence.OVERRIDE, Precedence.FLASH, Precedence.IMMEDIATE)
    assert (first.dscp, first.mode, first.max_connections, first.idle_timeout) == (
        34,
        SlotMode.PERMANENT,
        3,
        0.5,
    )
    assert second.precedences == (Precedence.PRIORITY, Precedence.ROUTINE, Precedence.DEFERRED)
    assert second.dscp == 10


def test_default_route_names_a_peer(tmp_path: Path) -> None:
    config = load_text(tmp_path, HEAD + 'default_route = "MTA-B"\n' + PEER + SLOT)
    assert config.default_route == "MTA-B"
    assert config.peer("MTA-B") is config.peers[0]
    with pytest.raises(KeyError):
        config.peer("MTA-C")


# --- helpers of the schema ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "address", "matches"),
    [
        ("C=GB;ADMD= ;PRMD=SITEB", "C=gb;ADMD= ;PRMD=siteb;O=HQ;S=Smith", True),
        ("C=GB;ADMD= ;PRMD=SITEB", "C=GB;ADMD= ;PRMD=SITEB", True),
        ("C=GB;ADMD= ;PRMD=SITEB", "C=GB;ADMD= ;PRMD=SITEBX;S=Smith", False),
        ("C=GB;ADMD= ;PRMD=SITEB;O=HQ", "C=GB;ADMD= ;PRMD=SITEB;S=Smith", False),
        ("C=GB", "C=GB;ADMD=BT;S=Smith", True),
        ("C=GB;ADMD= ;PRMD=Site  B", "C=GB;ADMD= ;PRMD=site b;S=Smith", True),
    ],
)
def test_prefix_matching(tmp_path: Path, prefix: str, address: str, matches: bool) -> None:
    config = load_text(tmp_path, HEAD + f'local_domains = ["{prefix}"]\n')
    domain = config.local_domains[0]
    assert domain.matches(parse_orname(address)) is matches
    assert domain.length == len(domain.key)


def test_retry_delay_grows_to_the_maximum_with_jitter() -> None:
    policy = RetryPolicy(initial=60.0, maximum=600.0, factor=2.0, jitter=0.25)
    assert [policy.delay(n, 0.5) for n in range(1, 7)] == [60, 120, 240, 480, 600, 600]
    assert policy.delay(1, 0.0) == 45.0
    assert policy.delay(1, 1.0) == 75.0
    assert policy.delay(0, 0.5) == 60.0


def test_config_objects_are_frozen_and_hashable() -> None:
    config = load_config(EXAMPLES / "site-a.toml")
    assert hash(config) == hash(load_config(EXAMPLES / "site-a.toml"))
    with pytest.raises(AttributeError):
        config.name = "other"  # type: ignore[misc]


def test_loading_writes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD + 'state_dir = "state"\n')
    load_config(path)
    assert sorted(os.listdir(tmp_path)) == ["site-a.toml"]


# --- whatever the values, only ConfigError ------------------------------------------------


def toml_value(value: object) -> str:
    """A Python value as a TOML inline value (strings as JSON, which TOML reads alike)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


PLAUSIBLE = st.sampled_from(
    ["CS3", "EF", "flash", "on-demand", "90s", "0s", "64MiB", "C=GB;ADMD= ;PRMD=X", "0", "", "."]
)
VALUES = st.recursive(
    st.one_of(
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**63 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
        PLAUSIBLE,
    ),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["port", "dscp", "flash", "x"]), inner, max_size=2)
    ),
    max_leaves=6,
)
PLACES = st.one_of(
    st.tuples(st.just("top"), st.sampled_from([*TOP_KEYS.split(", "), "bogus"])),
    st.tuples(st.just("listener"), st.sampled_from(["address", "port", "dscp"])),
    st.tuples(
        st.just("peer"),
        st.sampled_from(["name", "host", "routes", "password", "peer_password", "slots"]),
    ),
    st.tuples(
        st.just("slot"),
        st.sampled_from(["precedences", "port", "dscp", "mode", "max_connections", "idle_timeout"]),
    ),
)


@settings(max_examples=examples(3), suppress_health_check=[HealthCheck.too_slow])
@given(place=PLACES, value=VALUES)
def test_any_value_loads_or_raises_config_error(
    tmp_path_factory: pytest.TempPathFactory, place: tuple[str, str], value: object
) -> None:
    slot: dict[str, object] = {"precedences": [p.label for p in Precedence], "port": 5000}
    peer: dict[str, object] = {"name": "MTA-B", "host": "b", "slots": [slot]}
    listener: dict[str, object] = {"port": 5100}
    top: dict[str, object] = {
        "name": "MTA-A",
        "global_domain": "C=GB;ADMD= ;PRMD=SITEA",
        "state_dir": "/var/lib/aiox400",
        "listeners": [listener],
        "peers": [peer],
    }
    section, key = place
    {"top": top, "listener": listener, "peer": peer, "slot": slot}[section][key] = value
    text = "".join(f"{k} = {toml_value(v)}\n" for k, v in top.items())
    path = tmp_path_factory.getbasetemp() / "fuzzed.toml"
    path.write_text(text, encoding="utf-8")
    try:
        config = load_config(path)
    except ConfigError as error:
        assert str(error).startswith(f"{path}: ")
    else:
        assert config.name == top["name"] or section == "top"


def test_connection_limits_share_the_limits_table(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        HEAD
        + '[limits]\nmax_message_size = "5MiB"\nmax_connections = 40\n'
        + 'max_bytes_before_bind = "8KiB"\nbind_timeout = "10s"\n'
        + 'failed_bind_delay = "0s"\nfailed_bind_delay_max = 0\n'
        + 'api_idle_timeout = "2m"\n',
    )
    assert config.limits == dataclasses.replace(DEFAULT_LIMITS, max_message_size=5 << 20)
    assert config.connection_limits == dataclasses.replace(
        DEFAULT_CONNECTION_LIMITS,
        max_connections=40,
        max_bytes_before_bind=8192,
        bind_timeout=10.0,
        failed_bind_delay=0.0,
        failed_bind_delay_max=0.0,
        api_idle_timeout=120.0,
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[limits]\nmax_connections = 0\n",
            "limits.max_connections = 0: expected an integer >= 1",
        ),
        (
            '[limits]\nbind_timeout = "0s"\n',
            f'limits.bind_timeout = "0s": expected {DURATION}',
        ),
        (
            '[limits]\nfailed_bind_delay = "-1s"\n',
            'limits.failed_bind_delay = "-1s": expected a duration >= 0: seconds, '
            "or text such as 90s, 15m, 4h, 3d",
        ),
        (
            '[limits]\nfailed_bind_delay = "10s"\nfailed_bind_delay_max = "5s"\n',
            'limits.failed_bind_delay_max = "5s": expected a duration no shorter than '
            "limits.failed_bind_delay (10 s)",
        ),
        (
            'local_users = ["C=GB;ADMD= ;PRMD=SITEB;CN=bob"]\n',
            'local_users[0] = "C=GB;ADMD= ;PRMD=SITEB;CN=bob": expected an O/R name under '
            "one of the local domains (C=GB;ADMD= ;PRMD=SITEA)",
        ),
        (
            'local_users = ["C=GB;ADMD= ;PRMD=SITEA;XX=1"]\n',
            'local_users[0] = "C=GB;ADMD= ;PRMD=SITEA;XX=1": expected an O/R name such as',
        ),
    ],
)
def test_limit_and_user_errors(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, (NAMED if text.startswith("local_users") else HEAD) + text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: {message}")


EXTENSION = (
    "an extension type: a standard-extension number 0..256 (such as 20) or an object "
    'identifier in dotted form (such as "1.3.26.0.4406.0.8.0")'
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("supported_extensions = 20\n", "supported_extensions = 20: expected a list of"),
        ("supported_extensions = [257]\n", f"supported_extensions[0] = 257: expected {EXTENSION}"),
        (
            "supported_extensions = [true]\n",
            f"supported_extensions[0] = true: expected {EXTENSION}",
        ),
        (
            'supported_extensions = [20, "1.2.03"]\n',
            f'supported_extensions[1] = "1.2.03": expected {EXTENSION}',
        ),
        (
            PEER + 'supported_extensions = ["security-label"]\n' + SLOT,
            f'peers[0].supported_extensions[0] = "security-label": expected {EXTENSION}',
        ),
    ],
)
def test_extension_type_errors(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, HEAD + text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: {message}")


def test_supported_extensions_are_read_once_each(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        HEAD
        + 'supported_extensions = [20, "1.3.26.0.4406.0.8.0", 20]\n'
        + PEER
        + "supported_extensions = [99]\n"
        + SLOT,
    )
    assert config.supported_extensions == (20, "1.3.26.0.4406.0.8.0")
    assert config.peers[0].supported_extensions == (99,)
    assert load_text(tmp_path, HEAD).supported_extensions == ()


def test_local_users_are_parsed_and_deduplicated(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        NAMED
        + 'local_users = ["C=GB;ADMD= ;PRMD=SITEA;O=HQ;CN=alice", '
        + '"/C=GB/ADMD= /PRMD=SITEA/O=HQ/CN=alice/", "C=GB;ADMD= ;PRMD=SITEA;CN=bob"]\n',
    )
    assert config.local_users is not None
    assert [format_orname(user) for user in config.local_users] == [
        "C=GB;ADMD= ;PRMD=SITEA;O=HQ;CN=alice",
        "C=GB;ADMD= ;PRMD=SITEA;CN=bob",
    ]


def test_a_file_that_neither_lists_the_users_nor_accepts_any_recipient_is_refused(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, NAMED)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert (caught.value.key, caught.value.missing) == ("local_users", True)
    assert str(caught.value).startswith(
        f"{path}: local_users is missing: expected the O/R names of the local users"
    )
    assert "or accept_any_recipient = true" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'local_users = ["C=GB;ADMD= ;PRMD=SITEA;S=Smith"]\naccept_any_recipient = true\n',
            "accept_any_recipient = true: expected false or not set when local_users lists",
        ),
        ("accept_any_recipient = 1\n", "accept_any_recipient = 1: expected true or false"),
        ('accept_any_recipient = "yes"\n', 'accept_any_recipient = "yes": expected true or'),
    ],
)
def test_accept_any_recipient_errors(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, NAMED + text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert f"{path}: {message}" in str(caught.value)


def test_foreign_originators_is_refuse_unless_set(tmp_path: Path) -> None:
    assert load_text(tmp_path, HEAD).foreign_originators is ForeignOriginators.REFUSE
    accepting = load_text(tmp_path, HEAD + 'foreign_originators = "Accept"\n')
    assert accepting.foreign_originators is ForeignOriginators.ACCEPT
    path = write(tmp_path, HEAD + 'foreign_originators = "maybe"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f'{path}: foreign_originators = "maybe": expected one of refuse, accept'
    )


def test_either_local_users_or_accept_any_recipient_loads(tmp_path: Path) -> None:
    listed = load_text(tmp_path, NAMED + 'local_users = ["C=GB;ADMD= ;PRMD=SITEA;S=Smith"]\n')
    assert not listed.accept_any_recipient
    assert load_text(tmp_path, NAMED + "local_users = []\n").local_users == ()
    anyone = load_text(tmp_path, NAMED + "accept_any_recipient = true\n")
    assert (anyone.local_users, anyone.accept_any_recipient) == (None, True)


# --- [queue] --------------------------------------------------------------------------------


def test_queue_lease_default_value_and_refusal(tmp_path: Path) -> None:
    assert load_text(tmp_path, HEAD).queue.lease == 30.0
    assert load_text(tmp_path, HEAD + '[queue]\nlease = "2s"\n').queue.lease == 2.0
    with pytest.raises(ConfigError, match=r"queue\.lease = 0: expected a duration > 0"):
        load_text(tmp_path, HEAD + "[queue]\nlease = 0\n")


# --- [quarantine] ---------------------------------------------------------------------------


def test_quarantine_defaults_and_values(tmp_path: Path) -> None:
    assert QuarantineLimits(max_messages=1000, max_bytes=256 << 20) == DEFAULT_QUARANTINE
    config = load_text(tmp_path, HEAD + '[quarantine]\nmax_messages = 20\nmax_bytes = "64KiB"\n')
    assert config.quarantine == QuarantineLimits(max_messages=20, max_bytes=65536)
    config = load_text(tmp_path, HEAD + "[quarantine]\nmax_bytes = 5000\n")
    assert config.quarantine == QuarantineLimits(max_messages=1000, max_bytes=5000)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[quarantine]\nmax_messages = 0\n",
            "quarantine.max_messages = 0: expected an integer >= 1",
        ),
        (
            '[quarantine]\nmax_messages = "10"\n',
            'quarantine.max_messages = "10": expected an integer >= 1',
        ),
        (
            '[quarantine]\nmax_bytes = "1 TB"\n',
            'quarantine.max_bytes = "1 TB": expected a size in octets >= 1, '
            "or text such as 512KiB, 64MiB",
        ),
        (
            "[quarantine]\nmax_bytes = true\n",
            "quarantine.max_bytes = true: expected a size in octets >= 1, "
            "or text such as 512KiB, 64MiB",
        ),
        (
            "[quarantine]\nmax_message = 5\n",
            "quarantine.max_message = 5: expected one of the keys max_messages, max_bytes "
            '(did you mean "max_messages"?)',
        ),
        (
            "quarantine = 5\n",
            "quarantine = 5: expected a [quarantine] table",
        ),
    ],
)
def test_quarantine_errors(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, HEAD + text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: {message}"
    assert caught.value.file == path


@pytest.mark.parametrize(
    ("written", "hosts", "shown"),
    [
        ('"b1.example"', ("b1.example",), '"b1.example"'),
        ('["b1.example"]', ("b1.example",), '"b1.example"'),
        (
            '["b1.example", "192.0.2.7", "b1.example"]',
            ("b1.example", "192.0.2.7"),
            '["b1.example", "192.0.2.7"]',
        ),
    ],
)
def test_peer_host_may_be_a_list(
    tmp_path: Path, written: str, hosts: tuple[str, ...], shown: str
) -> None:
    """A peer reachable at several hosts under one name: each host once, in order; the
    effective configuration writes one host as a string."""
    text = HEAD + f'[[peers]]\nname = "MTA-B"\nhost = {written}\n' + SLOT
    config = load_config(write(tmp_path, text))
    assert config.peers[0].hosts == hosts
    assert config.peers[0].host == hosts[0]
    assert dict(effective_settings(config))["peers[0].host"] == shown
