"""Read one MTA's TOML configuration and validate it into :class:`config.schema.MtaConfig`.

Every problem raises :class:`ConfigError`, naming the file, the key (``peers[0].slots[1]
.dscp``), the value as written and what was expected::

    site-a.toml: peers[0].slots[1].dscp = "CS9": expected CS0..CS7, EF, AFxy or 0..63

Unknown keys are errors, so a misspelt key never silently leaves a default in place.
Passwords never appear in messages.  Relative paths (``state_dir``, ``database`` for
SQLite, ``control_socket``, ``password_file``) are resolved against the directory of the
configuration file.  Apart from reading the file and the password files it names, the
loader does no I/O: it creates no directory and opens no socket.

The file (``*`` marks a required key; durations are seconds or text such as ``90s``,
``15m``, ``4h``, ``3d``; sizes are octets or text such as ``512KiB``, ``64MiB``)::

    name*            MTAName of this MTA (1..32 IA5 characters)
    global_domain*   C, ADMD and optional PRMD, e.g. "C=GB;ADMD= ;PRMD=SITEA"
    password | password_file   what this MTA presents in MTA-binds (default: nothing)
    state_dir        "/var/lib/aiox400"
    database         "sqlite:///<state_dir>/aiox400.db"
    control_socket   "<state_dir>/control.sock"
    local_domains    [global_domain]    O/R address prefixes delivered locally
    local_users      none               O/R names of the local users; when set, any other
                                        recipient under a local domain is non-delivered
    supported_extensions  []            extension types (standard numbers or private
                                        OIDs) delivered locally although marked critical
                                        for delivery and not implemented by this MTA
    default_route    none               a peer name
    log_level        "info"             debug, info, warning, error, critical
    tcp_congestion   none (the system's) TCP congestion control of every P1 socket, one
                                        of /proc/sys/net/ipv4/tcp_available_congestion_control
    [[listeners]]    address ("0.0.0.0"), port*, dscp ("CS0"), tsel, ssel, psel (each
                     any: the called TSEL / SSEL / PSEL, or list of them, a CR / CN / CP
                     must carry; "" admits one without)
    [retry]          initial ("1m"), maximum ("1h"), factor (2.0), jitter (0.2)
    [max_age]        override, flash ("1h"), immediate ("4h"), priority ("12h"),
                     routine ("24h"), deferred ("72h")
    [dscp]           per-precedence code point overrides, e.g. flash = "EF"
    [limits]         max_message_size, max_tsdu_size, max_spdu_size ("64MiB" each),
                     max_tpdu_size (2048), max_connect_data_size ("64KiB");
                     max_connections (256), max_connections_per_address (32),
                     max_unbound (32), max_bytes_before_bind ("32KiB"),
                     bind_timeout ("30s"), idle_timeout ("10m"), min_progress
                     ("1KiB") per progress_interval ("30s"), failed_bind_delay ("1s")
                     doubling up to failed_bind_delay_max ("30s"; "0s": no delay),
                     max_api_connections (64), api_idle_timeout ("5m")
    [quarantine]     max_messages (1000), max_bytes ("256MiB"): what is kept of the
                     transfers that cannot be taken in (confirmed, not delivered)
    [retention]      finished ("24h": a message every recipient of which is done, and
                     its APDU file), received ("7d": duplicate-detection keys; at least
                     the longest [max_age]), audit ("30d"), interval ("5m"), batch (500
                     rows per transaction); mailboxes are never pruned
    [metrics]        listen (none: no endpoint; "127.0.0.1:9464", "[::1]:9464"), path
                     ("/metrics"): the Prometheus endpoint
    [access]         operators (the daemon's own group): groups whose members may do
                     everything; [access.users]: account = "O/R name" (or a list of
                     them), what each user may submit as and whose mailboxes it may use;
                     accounts and groups are names on this host or numeric ids ("1001").
                     Absent: whoever can connect to the control socket is an operator
    [[peers]]        name*, host*, routes ([]), password | password_file (the MTA's),
                     peer_password | peer_password_file (none: not checked),
                     supported_extensions ([]: extension types critical for transfer
                     that the peer is known to support); selectors (none): tsel, ssel,
                     psel (the peer's, called), calling_tsel, calling_ssel, calling_psel
                     (ours), each text ("x400") or hex ("hex:0591"), "" for none;
                     protocol ("1988": normal mode; "1988-x410": X.410-1984 mode with
                     1988 P1; "1984": X.410-1984 mode to a 1984 MTA, down-graded), how
                     this MTA calls the peer (it answers either mode from anyone)
    [[peers.slots]]  precedences*, port*, dscp (the table's, for the most urgent
                     precedence), mode ("on-demand" | "permanent"), max_connections (1),
                     backlog_threshold (10), idle_timeout ("5m"); the six selector
                     keys of [[peers]] (the peer's value when absent)

Cross-checks: a peer's slots admit each of the six precedences exactly once (an error
names the unrouted ones); listener address and port pairs (a wildcard address takes the
port on every address), peer names and routed prefixes (local domains included) are
unique; ``default_route`` names a peer; ``retry.maximum >= retry.initial``; counts are
>= 1 and durations > 0.  A password file must exist and give group and others no access
(``mode & 0o077 == 0``); one trailing newline is dropped.

How each kind of value is read and described lives in :mod:`config.kinds`.

Public API::

    load_config(path) -> MtaConfig
    ConfigError(file, key, value, expected)      .file .key .value .expected .missing
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import grp
import ipaddress
import json
import os
import pwd
import re
import tomllib
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from config.kinds import (
    ADDRESS_PREFIX,
    COUNT,
    DATABASE_URL,
    DSCP,
    DURATION,
    EXTENSION_TYPE,
    FACTOR,
    FILE_NAME,
    FRACTION,
    GLOBAL_DOMAIN,
    HOST,
    LOG_LEVEL,
    MTA_NAME,
    OR_NAME,
    P1_PROTOCOL,
    PASSWORD,
    PATH,
    PEER_NAME,
    PORT,
    PRECEDENCES,
    PSEL,
    PSELS,
    SECONDS,
    SIZE,
    SLOT_MODE,
    SSEL,
    SSELS,
    TPDU_SIZE,
    TSEL,
    TSELS,
    Invalid,
    Kind,
)
from config.schema import (
    DEFAULT_STATE_DIR,
    Access,
    AddressPrefix,
    ConnectionLimits,
    Credentials,
    Listener,
    LocalAccount,
    LogLevel,
    MaxAge,
    MetricsEndpoint,
    MtaConfig,
    OperatorGroup,
    P1Protocol,
    Peer,
    QuarantineLimits,
    Retention,
    RetryPolicy,
    Secret,
    Selectors,
    Slot,
)
from p1.mts.orname import ORName
from p1.mts.precedence import DEFAULT_TABLE, Precedence, PrecedenceTable
from p1.osi import StackLimits

__all__ = ["ConfigError", "load_config"]

T = TypeVar("T")


# --- the error ------------------------------------------------------------------------


class _Missing(enum.Enum):
    MISSING = "missing"


MISSING: Final = _Missing.MISSING
"""``ConfigError.value`` of a required key that is absent."""


class _Hidden:
    """Stands in for a secret in an error, so the error never holds the secret."""

    def __repr__(self) -> str:
        return "<hidden>"


HIDDEN: Final = _Hidden()

_SHOW_LIMIT = 120


def _show(value: object) -> str:
    """A value as TOML would write it (strings quoted), cut short when long."""
    text = _render(value)
    return text if len(text) <= _SHOW_LIMIT else text[: _SHOW_LIMIT - 3] + "..."


def _render(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_render(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_render(v)}" for k, v in value.items()) + " }"
    return str(value)  # numbers, TOML dates and times, <hidden>


class ConfigError(ValueError):
    """A configuration that cannot be used: the file, the key, its value, what was expected.

    ``key`` is empty for a problem with the file as a whole; ``value`` is :data:`MISSING`
    for an absent required key and ``None`` when the problem is not one value's (a peer
    whose slots leave a precedence unrouted).  Secrets are replaced by ``<hidden>``.
    """

    def __init__(self, file: Path | str, key: str, value: object, expected: str) -> None:
        self.file = Path(file)
        self.key = key
        self.value = value
        self.expected = expected
        super().__init__(self._message())

    @property
    def missing(self) -> bool:
        """Whether a required key is absent."""
        return self.value is MISSING

    def _message(self) -> str:
        if not self.key:
            return f"{self.file}: expected {self.expected}"
        if self.value is MISSING:
            return f"{self.file}: {self.key} is missing: expected {self.expected}"
        if self.value is None:
            return f"{self.file}: {self.key}: expected {self.expected}"
        return f"{self.file}: {self.key} = {_show(self.value)}: expected {self.expected}"


# --- tables ---------------------------------------------------------------------------


_SECRET_KEYS = ("password", "peer_password")
_SECRET_WORDS = ("pass", "pw", "secret", "cred")


def _looks_secret(name: str) -> bool:
    """Whether a key, known or misspelt, may hold a password: its value is never shown."""
    word = name.lower()
    if word.endswith("_file"):
        return False
    close = difflib.get_close_matches(word, _SECRET_KEYS, n=1, cutoff=0.7)
    return bool(close) or any(part in word for part in _SECRET_WORDS)


@dataclass(frozen=True, slots=True)
class _Table:
    """One TOML table and where it sits (``peers[0].slots[1]``)."""

    file: Path
    path: str
    data: Mapping[str, object]

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def error(self, name: str, value: object, expected: str) -> ConfigError:
        shown = HIDDEN if _looks_secret(name) and value is not MISSING else value
        return ConfigError(self.file, self.key(name), shown, expected)

    def has(self, name: str) -> bool:
        return name in self.data

    def get(self, name: str, kind: Kind[T], default: T | _Missing = MISSING) -> T:
        """The converted value of ``name``, or ``default``; an error if neither."""
        if name not in self.data:
            if isinstance(default, _Missing):
                raise self.error(name, MISSING, kind.expected)
            return default
        raw = self.data[name]
        try:
            return kind.convert(raw)
        except Invalid as bad:
            raise self.error(name, raw, bad.expected or kind.expected) from None

    def table(self, name: str, known: Sequence[str]) -> _Table:
        """The sub-table ``[name]`` (empty when absent)."""
        raw = self.data.get(name, {})
        if not isinstance(raw, dict):
            raise self.error(name, raw, f"a [{_header(self.key(name))}] table")
        return _checked_table(self.file, self.key(name), raw, known)

    def tables(self, name: str, known: Sequence[str]) -> Iterator[_Table]:
        """The array of tables ``[[name]]`` (none when absent)."""
        raw = self.data.get(name, [])
        if not (isinstance(raw, list) and all(isinstance(item, dict) for item in raw)):
            raise self.error(name, raw, f"[[{_header(self.key(name))}]] tables")
        for index, item in enumerate(raw):
            yield _checked_table(self.file, f"{self.key(name)}[{index}]", item, known)

    def items(self, name: str, kind: Kind[T], what: str) -> list[T]:
        """The list ``name`` of values of ``kind`` (empty when absent)."""
        raw = self.data.get(name, [])
        if not isinstance(raw, list):
            raise self.error(name, raw, f"a list of {what}")
        elements = _Table(self.file, self.path, {f"{name}[{i}]": v for i, v in enumerate(raw)})
        return [elements.get(f"{name}[{index}]", kind) for index in range(len(raw))]


def _header(key: str) -> str:
    """The TOML table header of a key: ``peers[0].slots`` is ``peers.slots``."""
    return re.sub(r"\[\d+\]", "", key)


def _checked_table(
    file: Path, path: str, data: Mapping[str, object], known: Sequence[str]
) -> _Table:
    """A table whose keys are all known: a typo must not leave a default in place."""
    table = _Table(file, path, data)
    for name, value in data.items():
        if name not in known:
            guess = difflib.get_close_matches(name, known, n=1)
            hint = f' (did you mean "{guess[0]}"?)' if guess else ""
            raise table.error(name, value, f"one of the keys {', '.join(known)}{hint}")
    return table


# --- tcp_congestion ---------------------------------------------------------------------

_AVAILABLE_CONGESTION = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
"""The congestion control algorithms this kernel offers, space-separated."""


def _congestion_name(raw: object) -> str:
    if isinstance(raw, str) and raw.isascii() and raw.isidentifier():
        return raw
    raise Invalid()


_CONGESTION_NAME = Kind('a congestion control name such as "cubic"', _congestion_name)


def _tcp_congestion(top: _Table) -> str | None:
    """``tcp_congestion``: an algorithm this kernel offers (it is read from /proc, the one
    file besides the configuration and password files the loader reads), or None."""
    if not top.has("tcp_congestion"):
        return None
    name = top.get("tcp_congestion", _CONGESTION_NAME)
    try:
        available = _AVAILABLE_CONGESTION.read_text().split()
    except OSError:
        available = []
    if name not in available:
        offered = ", ".join(available) or f"none listed in {_AVAILABLE_CONGESTION}"
        raise top.error(
            "tcp_congestion", name, f"a congestion control this kernel offers ({offered})"
        )
    return name


# --- keys -----------------------------------------------------------------------------

_TOP_KEYS = (
    "name",
    "global_domain",
    "password",
    "password_file",
    "state_dir",
    "database",
    "control_socket",
    "local_domains",
    "local_users",
    "supported_extensions",
    "default_route",
    "log_level",
    "tcp_congestion",
    "listeners",
    "retry",
    "max_age",
    "dscp",
    "limits",
    "quarantine",
    "retention",
    "metrics",
    "peers",
    "access",
)
_LISTENER_KEYS = ("address", "port", "dscp", "tsel", "ssel", "psel")
_SELECTOR_KINDS: dict[str, Kind[bytes]] = {
    "tsel": TSEL,
    "ssel": SSEL,
    "psel": PSEL,
    "calling_tsel": TSEL,
    "calling_ssel": SSEL,
    "calling_psel": PSEL,
}
"""The selector keys of ``[[peers]]`` and ``[[peers.slots]]`` (:class:`Selectors` fields)."""
_PEER_KEYS = (
    "name",
    "host",
    "routes",
    "password",
    "password_file",
    "peer_password",
    "peer_password_file",
    "supported_extensions",
    "protocol",
    *_SELECTOR_KINDS,
    "slots",
)
_SLOT_KEYS = (
    *("precedences", "port", "dscp", "mode", "max_connections", "backlog_threshold"),
    "idle_timeout",
    *_SELECTOR_KINDS,
)
_RETRY_KEYS = tuple(f.name for f in dataclasses.fields(RetryPolicy))
_PRECEDENCE_KEYS = tuple(p.label for p in Precedence.most_urgent_first())
_STACK_LIMIT_KEYS = tuple(f.name for f in dataclasses.fields(StackLimits))
_CONNECTION_LIMIT_KINDS: dict[str, Kind[int] | Kind[float]] = {
    "max_connections": COUNT,
    "max_connections_per_address": COUNT,
    "max_unbound": COUNT,
    "max_bytes_before_bind": SIZE,
    "bind_timeout": DURATION,
    "idle_timeout": DURATION,
    "min_progress": SIZE,
    "progress_interval": DURATION,
    "failed_bind_delay": SECONDS,
    "failed_bind_delay_max": SECONDS,
    "max_api_connections": COUNT,
    "api_idle_timeout": DURATION,
}
"""The ``[limits]`` keys of :class:`ConnectionLimits`, with how each is read."""
_LIMIT_KEYS = (*_STACK_LIMIT_KEYS, *_CONNECTION_LIMIT_KINDS)
_QUARANTINE_KEYS = tuple(f.name for f in dataclasses.fields(QuarantineLimits))
_RETENTION_KEYS = tuple(f.name for f in dataclasses.fields(Retention))
_METRICS_KEYS = ("listen", "path")
_ACCESS_KEYS = ("operators", "users")

# A Unix socket path is at most sizeof(sun_path) - 1 = 107 octets on Linux.
_MAX_SOCKET_PATH = 107
_SLOT_DEFAULTS = Slot(precedences=(), port=1, dscp=0)
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def _same_endpoint(one: Listener, other: Listener) -> bool:
    """Whether two listeners would bind the same port (a wildcard address takes them all)."""
    addresses = {one.address, other.address}
    return one.port == other.port and (len(addresses) == 1 or bool(addresses & _WILDCARDS))


def _selectors(table: _Table, inherited: Selectors) -> Selectors:
    """The selector keys of ``table``, each the ``inherited`` value when absent."""
    kinds = _SELECTOR_KINDS.items()
    given = {name: table.get(name, kind) for name, kind in kinds if table.has(name)}
    return dataclasses.replace(inherited, **given)


# --- [metrics] ------------------------------------------------------------------------

_LISTEN = re.compile(
    r"\[(?P<v6>[0-9A-Fa-f:.]+)\]:(?P<v6port>\d{1,5})|(?P<host>[^\s:\[\]]+):(?P<port>\d{1,5})"
)
_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
_METRICS_PATH = re.compile(r"/[A-Za-z0-9._~!$&'()*+,;=:@%/-]{0,255}")


def _listen(raw: object) -> tuple[str, int]:
    """``address:port`` (an IPv6 address in brackets) as (host, port)."""
    found = _LISTEN.fullmatch(raw) if isinstance(raw, str) else None
    if found is None:
        raise Invalid()
    host, port = found["v6"] or found["host"], int(found["v6port"] or found["port"])
    if not 1 <= port <= 65535:
        raise Invalid("an address and a port 1..65535")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if found["v6"] or not _HOST_NAME.fullmatch(host):
            raise Invalid() from None
    return host, port


def _metrics_path(raw: object) -> str:
    if isinstance(raw, str) and _METRICS_PATH.fullmatch(raw):
        return raw
    raise Invalid()


LISTEN: Final = Kind(
    'an address and port, such as "127.0.0.1:9464", "[::1]:9464" or "localhost:9464"', _listen
)
METRICS_PATH: Final = Kind('an absolute URL path such as "/metrics" (no query)', _metrics_path)


def _metrics(table: _Table) -> MetricsEndpoint:
    """``[metrics]``: no endpoint unless ``listen`` is given."""
    path = table.get("path", METRICS_PATH, MetricsEndpoint().path)
    if not table.has("listen"):
        return MetricsEndpoint(path=path)
    host, port = table.get("listen", LISTEN)
    return MetricsEndpoint(host=host, port=port, path=path)


# --- the loader -----------------------------------------------------------------------


def load_config(path: str | os.PathLike[str]) -> MtaConfig:
    """Read and validate the configuration file at ``path``; :class:`ConfigError` if bad."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as error:
        raise ConfigError(file, "", None, f"a readable file ({error.strerror})") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(file, "", None, f"UTF-8 text ({error.reason})") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(file, "", None, f"valid TOML: {error}") from None
    return _Loader(file).load(_checked_table(file, "", data, _TOP_KEYS))


class _Loader:
    """Builds the schema objects from the checked tables of one file."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.base = file.absolute().parent

    def resolve(self, text: str) -> Path:
        """``text`` as a path, relative ones taken from the configuration's directory."""
        return Path(os.path.normpath(self.base / text))

    def load(self, top: _Table) -> MtaConfig:
        # Keys are read in the order the file's reference lists them, so the first error
        # reported is the first a reader of the file would meet.
        name = top.get("name", MTA_NAME)
        global_domain = top.get("global_domain", GLOBAL_DOMAIN)
        password = self.secret(top, "password", "password_file")
        state_dir = self.resolve(top.get("state_dir", PATH, str(DEFAULT_STATE_DIR)))
        database = self.database(top, state_dir)
        control_socket = self.control_socket(top, state_dir)
        local_domains = self.local_domains(top, global_domain)
        local_users = self.local_users(top, local_domains)
        log_level = top.get("log_level", LOG_LEVEL, LogLevel.INFO)
        listeners = self.listeners(top)
        retry = self.retry(top.table("retry", _RETRY_KEYS))
        max_age = self.max_age(top.table("max_age", _PRECEDENCE_KEYS))
        table = self.precedence_table(top.table("dscp", _PRECEDENCE_KEYS))
        limits_table = top.table("limits", _LIMIT_KEYS)
        limits = self.limits(limits_table)
        connection_limits = self.connection_limits(limits_table)
        quarantine = self.quarantine(top.table("quarantine", _QUARANTINE_KEYS))
        retention = self.retention(top.table("retention", _RETENTION_KEYS), max_age)
        metrics = _metrics(top.table("metrics", _METRICS_KEYS))
        peers = self.peers(top, name, password, table)
        self.check_routes(top, local_domains, peers)
        access = self.access(top, local_domains)
        return MtaConfig(
            source=self.file.absolute(),
            name=name,
            global_domain=global_domain,
            password=password,
            state_dir=state_dir,
            database=database,
            control_socket=control_socket,
            listeners=listeners,
            local_domains=local_domains,
            local_users=local_users,
            supported_extensions=self.extension_types(top),
            peers=peers,
            default_route=self.default_route(top, peers),
            max_age=max_age,
            retry=retry,
            precedence_table=table,
            log_level=log_level,
            limits=limits,
            connection_limits=connection_limits,
            quarantine=quarantine,
            retention=retention,
            metrics=metrics,
            access=access,
            tcp_congestion=_tcp_congestion(top),
        )

    # --- secrets ----------------------------------------------------------------------

    def secret(self, table: _Table, inline: str, file_key: str) -> Secret | None:
        """A password given inline or in a file only its owner may read."""
        if table.has(inline) and table.has(file_key):
            raise table.error(
                file_key, table.data[file_key], f"either {inline} or {file_key}, not both"
            )
        if table.has(file_key):
            return self.read_secret(table, file_key, table.get(file_key, FILE_NAME))
        if table.has(inline):
            return table.get(inline, PASSWORD)
        return None

    def read_secret(self, table: _Table, key: str, name: str) -> Secret:
        path = self.resolve(name)
        try:
            with path.open("rb") as stream:
                mode = os.fstat(stream.fileno()).st_mode
                if mode & 0o077:
                    raise table.error(
                        key,
                        name,
                        f"a file only its owner can access ({path} has mode "
                        f"{mode & 0o777:04o}; chmod 600 it)",
                    )
                data = stream.read()
        except FileNotFoundError:
            raise table.error(key, name, f"an existing file ({path} does not exist)") from None
        except OSError as error:
            raise table.error(key, name, f"a readable file ({path}: {error.strerror})") from None
        text = data.decode("latin-1").removesuffix("\n").removesuffix("\r")
        if not text:
            raise table.error(key, name, f"a file holding a password ({path} is empty)")
        if not text.isascii():
            raise table.error(
                key, name, f"an ASCII password in {path} (X.411 simple credentials are IA5)"
            )
        return Secret(text, source=path)

    # --- paths ------------------------------------------------------------------------

    def database(self, top: _Table, state_dir: Path) -> str:
        url = top.get("database", DATABASE_URL, f"sqlite:///{state_dir / 'aiox400.db'}")
        scheme, _, rest = url.partition("://")
        if scheme.split("+")[0].lower() != "sqlite" or not rest.startswith("/"):
            return url
        # SQLAlchemy: sqlite:///relative.db is relative, sqlite:////absolute.db is not.
        path, mark, query = rest[1:].partition("?")
        if path and path != ":memory:" and not path.startswith(("/", "file:")):
            path = str(self.resolve(path))
        return f"{scheme}:///{path}{mark}{query}"

    def control_socket(self, top: _Table, state_dir: Path) -> Path:
        if not top.has("control_socket"):
            path = state_dir / "control.sock"
        else:
            path = self.resolve(top.get("control_socket", PATH))
        if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
            shown = top.data.get("control_socket", str(path))
            raise top.error(
                "control_socket",
                shown,
                f"a socket path of at most {_MAX_SOCKET_PATH} octets ({path} is longer; "
                "set control_socket or a shorter state_dir)",
            )
        return path

    # --- tables -----------------------------------------------------------------------

    def precedence_table(self, dscp: _Table) -> PrecedenceTable:
        overrides = {
            p: dscp.get(p.label, DSCP) for p in Precedence.most_urgent_first() if dscp.has(p.label)
        }
        return DEFAULT_TABLE.with_dscp(overrides) if overrides else DEFAULT_TABLE

    def max_age(self, table: _Table) -> MaxAge:
        defaults = MaxAge()
        return MaxAge(**{k: table.get(k, DURATION, getattr(defaults, k)) for k in table.data})

    def retry(self, table: _Table) -> RetryPolicy:
        defaults = RetryPolicy()
        policy = RetryPolicy(
            initial=table.get("initial", DURATION, defaults.initial),
            maximum=table.get("maximum", DURATION, defaults.maximum),
            factor=table.get("factor", FACTOR, defaults.factor),
            jitter=table.get("jitter", FRACTION, defaults.jitter),
        )
        if policy.maximum < policy.initial:
            raise table.error(
                "maximum",
                table.data.get("maximum", policy.maximum),
                f"a duration no shorter than {table.key('initial')} ({policy.initial:g} s)",
            )
        return policy

    def limits(self, table: _Table) -> StackLimits:
        values = {
            name: table.get(name, TPDU_SIZE if name == "max_tpdu_size" else SIZE)
            for name in table.data
            if name in _STACK_LIMIT_KEYS
        }
        return StackLimits(**values)

    def connection_limits(self, table: _Table) -> ConnectionLimits:
        values: dict[str, Any] = {
            name: table.get(name, kind)  # type: ignore[misc]
            for name, kind in _CONNECTION_LIMIT_KINDS.items()
            if table.has(name)
        }
        limits = ConnectionLimits(**values)
        if limits.failed_bind_delay_max < limits.failed_bind_delay:
            raise table.error(
                "failed_bind_delay_max",
                table.data.get("failed_bind_delay_max", limits.failed_bind_delay_max),
                f"a duration no shorter than {table.key('failed_bind_delay')} "
                f"({limits.failed_bind_delay:g} s)",
            )
        return limits

    def quarantine(self, table: _Table) -> QuarantineLimits:
        defaults = QuarantineLimits()
        return QuarantineLimits(
            max_messages=table.get("max_messages", COUNT, defaults.max_messages),
            max_bytes=table.get("max_bytes", SIZE, defaults.max_bytes),
        )

    def retention(self, table: _Table, max_age: MaxAge) -> Retention:
        defaults = Retention()
        retention = Retention(
            finished=table.get("finished", SECONDS, defaults.finished),
            received=table.get("received", DURATION, defaults.received),
            audit=table.get("audit", DURATION, defaults.audit),
            interval=table.get("interval", DURATION, defaults.interval),
            batch=table.get("batch", COUNT, defaults.batch),
        )
        longest = max(max_age.of(precedence) for precedence in Precedence)
        if retention.received < longest:
            raise table.error(
                "received",
                table.data.get("received", retention.received),
                f"a duration no shorter than the longest [max_age] ({longest:g} s): a peer "
                "may retry a transfer that long, and a retry after its key is forgotten "
                "is delivered twice",
            )
        return retention

    def local_users(
        self, top: _Table, local_domains: tuple[AddressPrefix, ...]
    ) -> tuple[ORName, ...] | None:
        if not top.has("local_users"):
            return None
        users = top.items("local_users", OR_NAME, "O/R names")
        written = typing.cast(list[object], top.data["local_users"])  # (items() checked it)
        for index, user in enumerate(users):
            if not any(domain.matches(user) for domain in local_domains):
                raise top.error(
                    f"local_users[{index}]",
                    written[index],
                    "an O/R name under one of the local domains "
                    f"({', '.join(d.text for d in local_domains)})",
                )
        return tuple(dict.fromkeys(users))

    def local_domains(self, top: _Table, global_domain: ORName) -> tuple[AddressPrefix, ...]:
        if not top.has("local_domains"):
            text = str(top.data["global_domain"])
            return (AddressPrefix(text=text, key=global_domain.route_key()),)
        return tuple(top.items("local_domains", ADDRESS_PREFIX, "O/R address prefixes"))

    def listeners(self, top: _Table) -> tuple[Listener, ...]:
        result: list[tuple[_Table, Listener]] = []
        for table in top.tables("listeners", _LISTENER_KEYS):
            listener = Listener(
                address=table.get("address", HOST, "0.0.0.0"),
                port=table.get("port", PORT),
                dscp=table.get("dscp", DSCP, 0),
                tsels=table.get("tsel", TSELS) if table.has("tsel") else None,
                ssels=table.get("ssel", SSELS) if table.has("ssel") else None,
                psels=table.get("psel", PSELS) if table.has("psel") else None,
            )
            for other_table, other in result:
                if _same_endpoint(other, listener):
                    raise table.error(
                        "port",
                        table.data["port"],
                        f"a port no other listener uses on {listener.address} "
                        f"({other_table.path} listens on {other.address} port {other.port})",
                    )
            result.append((table, listener))
        return tuple(listener for _, listener in result)

    # --- peers ------------------------------------------------------------------------

    def peers(
        self, top: _Table, own_name: str, mta_password: Secret | None, table: PrecedenceTable
    ) -> tuple[Peer, ...]:
        peers: list[Peer] = []
        for peer_table in top.tables("peers", _PEER_KEYS):
            peer = self.peer(peer_table, own_name, mta_password, table)
            if peer.name == own_name:
                raise peer_table.error("name", peer.name, "a name other than this MTA's own")
            for index, other in enumerate(peers):
                if other.name == peer.name:
                    raise peer_table.error(
                        "name", peer.name, f"a name no other peer has (peers[{index}])"
                    )
            peers.append(peer)
        return tuple(peers)

    def peer(
        self, peer: _Table, own_name: str, mta_password: Secret | None, table: PrecedenceTable
    ) -> Peer:
        name = peer.get("name", MTA_NAME)
        host = peer.get("host", HOST)
        routes = tuple(peer.items("routes", ADDRESS_PREFIX, "O/R address prefixes"))
        ours = self.secret(peer, "password", "password_file") or mta_password
        theirs = self.secret(peer, "peer_password", "peer_password_file")
        selectors = _selectors(peer, Selectors())
        return Peer(
            name=name,
            host=host,
            routes=routes,
            our_credentials=Credentials(name=own_name, password=ours),
            their_credentials=Credentials(name=name, password=theirs),
            selectors=selectors,
            protocol=peer.get("protocol", P1_PROTOCOL, P1Protocol.NORMAL),
            slots=self.slots(peer, table, selectors),
            supported_extensions=self.extension_types(peer),
        )

    def extension_types(self, table: _Table) -> tuple[int | str, ...]:
        """``supported_extensions``: extension types, each once."""
        kinds = "extension types"
        return tuple(dict.fromkeys(table.items("supported_extensions", EXTENSION_TYPE, kinds)))

    def slots(self, peer: _Table, table: PrecedenceTable, selectors: Selectors) -> tuple[Slot, ...]:
        expected = "[[peers.slots]] tables admitting all six precedences"
        if not peer.has("slots"):
            raise peer.error("slots", MISSING, expected)
        slots: list[Slot] = []
        owner: dict[Precedence, str] = {}
        for slot_table in peer.tables("slots", _SLOT_KEYS):
            slot = self.slot(slot_table, table, selectors)
            taken = [p for p in slot.precedences if p in owner]
            if taken:
                raise slot_table.error(
                    "precedences",
                    slot_table.data["precedences"],
                    f"precedences no other slot admits ({taken[0].label} is in {owner[taken[0]]})",
                )
            owner.update(dict.fromkeys(slot.precedences, slot_table.path))
            slots.append(slot)
        unrouted = [p.label for p in Precedence.most_urgent_first() if p not in owner]
        if unrouted:
            raise peer.error("slots", None, f"{expected} (unrouted: {', '.join(unrouted)})")
        return tuple(slots)

    def slot(self, slot: _Table, table: PrecedenceTable, selectors: Selectors) -> Slot:
        precedences = slot.get("precedences", PRECEDENCES)
        return Slot(
            precedences=precedences,
            port=slot.get("port", PORT),
            dscp=slot.get("dscp", DSCP, table.dscp(precedences[0])),
            mode=slot.get("mode", SLOT_MODE, _SLOT_DEFAULTS.mode),
            max_connections=slot.get("max_connections", COUNT, _SLOT_DEFAULTS.max_connections),
            backlog_threshold=slot.get(
                "backlog_threshold", COUNT, _SLOT_DEFAULTS.backlog_threshold
            ),
            idle_timeout=slot.get("idle_timeout", DURATION, _SLOT_DEFAULTS.idle_timeout),
            selectors=_selectors(slot, selectors),
        )

    # --- routing ----------------------------------------------------------------------

    def check_routes(
        self, top: _Table, local_domains: tuple[AddressPrefix, ...], peers: tuple[Peer, ...]
    ) -> None:
        """Each prefix is routed once: to the local store or to one peer."""
        claims = [(f"local_domains[{index}]", prefix) for index, prefix in enumerate(local_domains)]
        if not top.has("local_domains"):
            claims = [("global_domain", local_domains[0])]
        for number, peer in enumerate(peers):
            claims += [
                (f"peers[{number}].routes[{index}]", prefix)
                for index, prefix in enumerate(peer.routes)
            ]
        seen: dict[tuple[str, ...], str] = {}
        for key, prefix in claims:
            if prefix.key in seen:
                raise ConfigError(
                    top.file, key, prefix.text, f"a prefix not already routed by {seen[prefix.key]}"
                )
            seen[prefix.key] = key

    def default_route(self, top: _Table, peers: tuple[Peer, ...]) -> str | None:
        if not top.has("default_route"):
            return None
        name = top.get("default_route", PEER_NAME)
        names = [peer.name for peer in peers]
        if name not in names:
            known = ", ".join(names) or "none are configured"
            raise top.error("default_route", name, f"the name of a peer ({known})")
        return name

    # --- access -----------------------------------------------------------------------

    def access(self, top: _Table, local_domains: tuple[AddressPrefix, ...]) -> Access | None:
        """``[access]``: None when the file has none (the socket's mode decides who may)."""
        if not top.has("access"):
            return None
        table = top.table("access", _ACCESS_KEYS)
        operators = None
        if table.has("operators"):
            operators = tuple(self.operator_groups(table))
        return Access(operators=operators, users=tuple(self.accounts(table, local_domains)))

    def operator_groups(self, table: _Table) -> Iterator[OperatorGroup]:
        raw = table.data["operators"]
        if not isinstance(raw, list):
            raise table.error("operators", raw, "a list of group names or numeric gids")
        for index, written in enumerate(raw):
            key = f"operators[{index}]"
            gid = _local_id(written, _gid_of)
            if gid is None:
                raise table.error(key, written, _UNKNOWN_GROUP)
            yield OperatorGroup(name=str(written), gid=gid)

    def accounts(
        self, table: _Table, local_domains: tuple[AddressPrefix, ...]
    ) -> Iterator[LocalAccount]:
        raw = table.data.get("users", {})
        if not isinstance(raw, dict):
            raise table.error("users", raw, "an [access.users] table: account = O/R name(s)")
        users = _Table(self.file, table.key("users"), raw)
        seen: dict[int, str] = {}
        for account, value in raw.items():
            uid = _local_id(account, _uid_of)
            if uid is None:
                raise ConfigError(self.file, users.key(account), value, _UNKNOWN_ACCOUNT)
            if uid in seen:
                raise users.error(
                    account, value, f"an account not already listed (uid {uid} is {seen[uid]})"
                )
            seen[uid] = account
            names = self.account_names(users, account, value, local_domains)
            yield LocalAccount(name=account, uid=uid, names=names)

    def account_names(
        self,
        users: _Table,
        account: str,
        value: object,
        local_domains: tuple[AddressPrefix, ...],
    ) -> tuple[ORName, ...]:
        """An account's O/R names: one, or a non-empty list, each under a local domain."""
        if isinstance(value, str):
            written: list[object] = [value]
            names = [users.get(account, OR_NAME)]
        elif isinstance(value, list) and value:
            written, names = value, users.items(account, OR_NAME, "O/R names")
        else:
            raise users.error(account, value, "an O/R name or a non-empty list of them")
        for index, name in enumerate(names):
            if not any(domain.matches(name) for domain in local_domains):
                key = account if isinstance(value, str) else f"{account}[{index}]"
                raise users.error(
                    key,
                    written[index],
                    "an O/R name under one of the local domains "
                    f"({', '.join(d.text for d in local_domains)})",
                )
        return tuple(dict.fromkeys(names))


_UNKNOWN_GROUP = 'the name of a group on this host (getent group) or a numeric gid such as "1001"'
_UNKNOWN_ACCOUNT = (
    'the name of an account on this host (getent passwd) or a numeric uid such as "1001"'
)


def _local_id(written: object, look_up: typing.Callable[[str], int | None]) -> int | None:
    """A uid or gid written as a name or as digits (an int or a string of them); None if
    it is neither a number nor a name the database knows."""
    if isinstance(written, int) and not isinstance(written, bool):
        return written if 0 <= written < 2**32 - 1 else None
    if not isinstance(written, str) or not written:
        return None
    if written.isascii() and written.isdigit():
        number = int(written)
        return number if number < 2**32 - 1 else None
    return look_up(written)


def _gid_of(name: str) -> int | None:
    try:
        return grp.getgrnam(name).gr_gid
    except (KeyError, UnicodeEncodeError, ValueError):
        return None


def _uid_of(name: str) -> int | None:
    try:
        return pwd.getpwnam(name).pw_uid
    except (KeyError, UnicodeEncodeError, ValueError):
        return None
