"""Read one MTA's TOML configuration and validate it into :class:`config.schema.MtaConfig`.

The keys, their kinds, defaults and meanings are declared once, on the schema's fields
(:mod:`config.declare`); docs/configuration.md lists them all (``python -m config.doc``
writes it).  The loader walks those declarations: each key is read by its kind
(:mod:`config.kinds`), and what ties keys together (derived defaults, cross-checks) is
done here.

Every problem raises :class:`ConfigError`, naming the file, the key (``peers[0].slots[1]
.dscp``), the value as written and what was expected::

    site-a.toml: peers[0].slots[1].dscp = "CS9": expected CS0..CS7, EF, AFxy or 0..63

Unknown keys are errors, so a misspelt key never silently leaves a default in place.
Passwords never appear in messages.  Relative paths (``state_dir``, ``database`` for
SQLite, ``control_socket``, ``password_file``) are resolved against the directory of the
configuration file.  Apart from reading the file, the password files and the security
policy it names and the kernel's list of congestion controls, the loader does no I/O: it
creates no directory and opens no socket.

Cross-checks: a peer's slots admit each of the six precedences exactly once (an error
names the unrouted ones); listener address and port pairs (a wildcard address takes the
port on every address), peer names and routed prefixes (local domains included) are
unique; ``default_route`` names a peer; ``local_users`` is set (local users under local
domains) or else ``accept_any_recipient = true``, not both;
``[security] policy`` is an Open XML SPIF (read here) and every classification and
category ``[security]`` names is the policy's; a peer's ``clearance`` and
``default_clearance`` name a ``[[security.clearances]]`` table;
``retry.maximum >= retry.initial``; ``retention.received`` is at least the longest
``[max_age]``.  A password file must exist and give group and others no access
(``mode & 0o077 == 0``); one trailing newline is dropped.

Public API::

    load_config(path) -> MtaConfig
    load_control_socket(path) -> Path            the control socket alone (no secret read)
    read_password_file(path) -> Secret           one password file, by the same rules
    ConfigError(file, key, value, expected)      .file .key .value .expected .missing
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import ipaddress
import json
import os
import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from config.declare import FILE_SUFFIX, Form, Key, declared, file_keys, section_keys
from config.kinds import FILE_NAME, OR_NAME, PASSWORD, UB_PASSWORD_LENGTH, Invalid, Kind
from config.schema import (
    DEFAULT_CONNECTION_LIMITS,
    DEFAULT_STATE_DIR,
    NO_SELECTORS,
    NO_TLS_FILES,
    Acp142Endpoint,
    AddressPrefix,
    ConnectionLimits,
    Credentials,
    Listener,
    MaxAge,
    MetricsEndpoint,
    MtaConfig,
    NamedClearance,
    Peer,
    PeerAcp142,
    Retention,
    RetryPolicy,
    Secret,
    Security,
    Selectors,
    Slot,
    TlsFiles,
    TlsMode,
    default_control_socket,
    default_database,
    default_local_domains,
)
from config.tls import check_identity, check_trust, resolve_files
from config.values import HIDDEN, Transport
from p1.mts.precedence import Precedence, PrecedenceTable
from p1.orname.model import ORName
from p1.osi import DEFAULT_LIMITS, StackLimits
from p1.security.spif import (
    CategoryRef,
    Classification,
    SecurityPolicy,
    SpifError,
    clearance_up_to,
    parse_spif,
)

__all__ = ["ConfigError", "load_config", "load_control_socket", "read_password_file"]

T = TypeVar("T")


# --- the error ------------------------------------------------------------------------


class _Missing(enum.Enum):
    MISSING = "missing"


MISSING: Final = _Missing.MISSING
"""``ConfigError.value`` of a required key that is absent."""


class _Hidden:
    """Stands in for a secret in an error, so the error never holds the secret."""

    def __repr__(self) -> str:
        return HIDDEN


_HIDDEN_VALUE: Final = _Hidden()

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
    if word.endswith(FILE_SUFFIX):
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
        shown = _HIDDEN_VALUE if _looks_secret(name) and value is not MISSING else value
        return ConfigError(self.file, self.key(name), shown, expected)

    def has(self, name: str) -> bool:
        return name in self.data

    def get(self, name: str, kind: Kind[T]) -> T:
        """The converted value of ``name``; an error if it is absent or refused."""
        if name not in self.data:
            raise self.error(name, MISSING, kind.expected)
        raw = self.data[name]
        try:
            return kind.convert(raw)
        except Invalid as bad:
            raise self.error(name + bad.at, bad.value(raw), bad.expected or kind.expected) from None

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


_Read = dict[str, Any]
"""The values a table gives the declared fields of a dataclass, by field name; a field
the table leaves to its default is absent.  TABLES fields hold ``[(table, _Read)]``."""

_AVAILABLE_CONGESTION = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
"""The congestion control algorithms this kernel offers, space-separated."""

# A Unix socket path is at most sizeof(sun_path) - 1 = 107 octets on Linux.
_MAX_SOCKET_PATH = 107
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})
_SLOTS_EXPECTED = "[[peers.slots]] tables admitting all six precedences"


def _same_endpoint(one: Listener, other: Listener) -> bool:
    """Whether two listeners would bind the same port (a wildcard address takes them all)."""
    addresses = {one.address, other.address}
    return one.port == other.port and (len(addresses) == 1 or bool(addresses & _WILDCARDS))


def _under_local_domains(
    table: _Table, key: str, written: object, name: ORName, domains: Sequence[AddressPrefix]
) -> None:
    if not any(domain.matches(name) for domain in domains):
        raise table.error(
            key,
            written,
            f"an O/R name under one of the local domains ({', '.join(d.text for d in domains)})",
        )


# --- password files -------------------------------------------------------------------


class _BadPasswordFile(Exception):
    """A password file that cannot be used; ``expected`` says what it should be."""

    def __init__(self, expected: str) -> None:
        super().__init__(expected)
        self.expected = expected


def read_password_file(path: str | os.PathLike[str]) -> Secret:
    """The password in the file at ``path``, by the rules the configuration's password
    files follow (see the module docstring); :class:`ConfigError` naming the file if it
    breaks them.  For a tool given ``--password-file``."""
    file = Path(path)
    try:
        return _password_file(file)
    except _BadPasswordFile as bad:
        raise ConfigError(file, "", None, bad.expected) from None


def _password_file(path: Path) -> Secret:
    try:
        with path.open("rb") as stream:
            mode = os.fstat(stream.fileno()).st_mode
            if mode & 0o077:
                raise _BadPasswordFile(
                    f"a file only its owner can access ({path} has mode "
                    f"{mode & 0o777:04o}; chmod 600 it)"
                )
            data = stream.read()
    except FileNotFoundError:
        raise _BadPasswordFile(f"an existing file ({path} does not exist)") from None
    except OSError as error:
        raise _BadPasswordFile(f"a readable file ({path}: {error.strerror})") from None
    text = data.decode("latin-1").removesuffix("\n").removesuffix("\r")
    if not text:
        raise _BadPasswordFile(f"a file holding a password ({path} is empty)")
    if not text.isascii():
        raise _BadPasswordFile(f"an ASCII password in {path} (X.411 simple credentials are IA5)")
    if len(text) > UB_PASSWORD_LENGTH:
        raise _BadPasswordFile(
            f"a password of {UB_PASSWORD_LENGTH} characters at most in {path} "
            f"(X.411 ub-password-length), not {len(text)}"
        )
    return Secret(text, source=path)


# --- the loader -----------------------------------------------------------------------


def load_config(path: str | os.PathLike[str]) -> MtaConfig:
    """Read and validate the configuration file at ``path``; :class:`ConfigError` if bad."""
    file = Path(path)
    return _Loader(file).load(_top_table(file))


_SOCKET_KEYS: Final = ("state_dir", "control_socket")
"""The fields that say where the control socket is."""


def load_control_socket(path: str | os.PathLike[str]) -> Path:
    """The control socket the configuration at ``path`` names (``control_socket``, else
    ``control.sock`` in ``state_dir``), read without the rest of the file: no password
    file is opened, so a client allowed to read the MTA's file but not its secrets finds
    the socket.  :class:`ConfigError` for a file that does not parse, an unknown top key,
    or a bad value of these two keys."""
    file = Path(path)
    top = _top_table(file)
    loader = _Loader(file)
    read: _Read = {}
    for f, key in declared(MtaConfig):
        if f.name in _SOCKET_KEYS:
            read.update(loader.value(top, f, key, key.file_name(f.name)))
    state_dir: Path = read.get("state_dir", DEFAULT_STATE_DIR)
    return loader.control_socket(top, read.get("control_socket"), state_dir)


def _top_table(file: Path) -> _Table:
    """The file's top table, parsed, its keys checked."""
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
    return _checked_table(file, "", data, file_keys(MtaConfig))


class _Loader:
    """Builds the schema objects from the checked tables of one file."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.base = file.absolute().parent

    def resolve(self, text: str) -> Path:
        """``text`` as a path, relative ones taken from the configuration's directory."""
        return Path(os.path.normpath(self.base / text))

    # --- the walk ---------------------------------------------------------------------

    def read(self, cls: type, table: _Table) -> _Read:
        """The values ``table`` gives the declared fields of ``cls``, in declaration order
        (so the first error reported is the first a reader of the file would meet)."""
        values: _Read = {}
        for f, key in declared(cls):
            name = key.file_name(f.name)
            if key.form is Form.VALUE:
                values.update(self.value(table, f, key, name))
            elif key.form is Form.SECRET:
                secret = self.secret(table, name, name + FILE_SUFFIX)
                values.update({f.name: secret} if secret is not None else {})
            elif key.form is Form.SECTION and (table.has(name) or not key.optional):
                values[f.name] = self.section(key, table.table(name, section_keys(cls, name)))
            elif key.form is Form.TABLES and key.of is not None:
                known = file_keys(key.of)
                values[f.name] = [(t, self.read(key.of, t)) for t in table.tables(name, known)]
            elif key.form is Form.INLINE and key.of is not None:
                values[f.name] = self.read(key.of, table)
        return values

    def value(
        self, table: _Table, f: dataclasses.Field[Any], key: Key, name: str
    ) -> Mapping[str, Any]:
        """One key's value, by field name; nothing when it is absent and has a default."""
        assert key.kind is not None
        if not table.has(name):
            required = f.default is dataclasses.MISSING and not key.derived
            if required:
                raise table.error(name, MISSING, key.kind.expected)
            return {}
        converted = table.get(name, key.kind)
        if key.kind.path:
            converted = self.resolve(converted)
        if key.into:
            return dict(zip(key.into, converted, strict=True))
        return {f.name: converted}

    def section(self, key: Key, table: _Table) -> object:
        """A ``[section]``: its dataclass from the keys it sets, checked."""
        if key.spec is not None:
            keys = key.spec.keys.items()
            return key.spec.build(
                {n: table.get(n, k.kind) for n, k in keys if table.has(n) and k.kind}
            )
        assert key.of is not None
        built = key.of(**self.read(key.of, table))
        _CHECKS.get(key.of, _unchecked)(table, built)
        return built

    # --- the whole file ---------------------------------------------------------------

    def load(self, top: _Table) -> MtaConfig:
        read = self.read(MtaConfig, top)
        state_dir: Path = read.setdefault("state_dir", DEFAULT_STATE_DIR)
        read["database"] = self.database(read.get("database"), state_dir)
        read["control_socket"] = self.control_socket(top, read.get("control_socket"), state_dir)
        domains = read.setdefault("local_domains", default_local_domains(read["global_domain"]))
        if "local_users" in read:
            self.check_users(top, domains)
        self.check_recipients(top, read)
        if "access" in read:
            self.check_accounts(top, domains)
        self.check_retention(top, read)
        self.check_inbound_buffer(top, read)
        tls: TlsFiles = read.get("tls", NO_TLS_FILES)
        read["listeners"] = self.listeners(read.get("listeners", []), tls)
        table = read.get("precedence_table", PrecedenceTable())
        read["peers"] = self.peers(
            read.get("peers", []), read["name"], read.get("password"), table, tls
        )
        _check_listener_trust(top, read["listeners"], read["peers"])
        _check_acp142(top, read)
        self.check_routes(top, domains, read["peers"])
        if "default_route" in read:
            self.check_default_route(top, read["default_route"], read["peers"])
        if "tcp_congestion" in read:
            self.check_congestion(top, read["tcp_congestion"])
        if "security" in read:
            read["security"] = self.security(top, read["security"], domains)
        self.check_peer_clearances(top, read["peers"], read.get("security"))
        return MtaConfig(source=self.file.absolute(), **read)

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
        try:
            return _password_file(self.resolve(name))
        except _BadPasswordFile as bad:
            raise table.error(key, name, bad.expected) from None

    # --- paths ------------------------------------------------------------------------

    def database(self, written: str | None, state_dir: Path) -> str:
        if written is None:
            return default_database(state_dir)
        scheme, _, rest = written.partition("://")
        if scheme.split("+")[0].lower() != "sqlite" or not rest.startswith("/"):
            return written
        # SQLAlchemy: sqlite:///relative.db is relative, sqlite:////absolute.db is not.
        path, mark, query = rest[1:].partition("?")
        if path and path != ":memory:" and not path.startswith(("/", "file:")):
            path = str(self.resolve(path))
        return f"{scheme}:///{path}{mark}{query}"

    def control_socket(self, top: _Table, written: Path | None, state_dir: Path) -> Path:
        path = default_control_socket(state_dir) if written is None else written
        if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
            shown = top.data.get("control_socket", str(path))
            raise top.error(
                "control_socket",
                shown,
                f"a socket path of at most {_MAX_SOCKET_PATH} octets ({path} is longer; "
                "set control_socket or a shorter state_dir)",
            )
        return path

    # --- cross-checks -----------------------------------------------------------------

    def check_recipients(self, top: _Table, read: _Read) -> None:
        """Either ``local_users`` lists the mailboxes or ``accept_any_recipient`` is
        true: never a mailbox made for a mistyped name unless the file says so."""
        listed = "local_users" in read
        accept_any = read.get("accept_any_recipient", False)
        if listed and accept_any:
            raise top.error(
                "accept_any_recipient",
                True,
                "false or not set when local_users lists the users (a recipient not "
                "listed is non-delivered): set one of the two",
            )
        if not listed and not accept_any:
            raise top.error(
                "local_users",
                MISSING,
                "the O/R names of the local users, which have mailboxes (list them), or "
                "accept_any_recipient = true to give every O/R name under a local domain "
                "one, a mistyped name too",
            )

    def check_users(self, top: _Table, domains: Sequence[AddressPrefix]) -> None:
        """Each local user is under a local domain."""
        written = top.data["local_users"]
        assert isinstance(written, list)  # (the kind took it)
        for index, text in enumerate(written):
            name = OR_NAME.convert(text)
            _under_local_domains(top, f"local_users[{index}]", text, name, domains)

    def check_accounts(self, top: _Table, domains: Sequence[AddressPrefix]) -> None:
        """Each O/R name of an account in ``[access.users]`` is under a local domain."""
        raw = top.data["access"]
        written = raw.get("users", {}) if isinstance(raw, dict) else {}
        users = _Table(self.file, "access.users", written)
        for account, value in written.items():
            texts = (
                [(account, value)]
                if isinstance(value, str)
                else [(f"{account}[{index}]", text) for index, text in enumerate(value)]
            )
            for key, text in texts:
                _under_local_domains(users, key, text, OR_NAME.convert(text), domains)

    def check_retention(self, top: _Table, read: _Read) -> None:
        retention: Retention = read.get("retention", Retention())
        max_age: MaxAge = read.get("max_age", MaxAge())
        longest = max(max_age.of(precedence) for precedence in Precedence)
        if retention.received < longest:
            table = _Table(self.file, "retention", {})
            raw = top.data.get("retention", {})
            shown = raw.get("received", retention.received) if isinstance(raw, dict) else None
            raise table.error(
                "received",
                shown,
                f"a duration no shorter than the longest [max_age] ({longest:g} s): a peer "
                "may retry a transfer that long, and a retry after its key is forgotten "
                "is delivered twice",
            )

    def check_inbound_buffer(self, top: _Table, read: _Read) -> None:
        """The buffer of all bound peers holds one association's largest PDU; unset, it is
        raised to that when the stack's sizes are."""
        limits: ConnectionLimits = read.get("connection_limits", DEFAULT_CONNECTION_LIMITS)
        stack: StackLimits = read.get("limits", DEFAULT_LIMITS)
        least = stack.max_tsdu_size + stack.max_message_size
        if limits.max_inbound_buffer >= least:
            return
        raw = top.data.get("limits", {})
        if not isinstance(raw, dict) or "max_inbound_buffer" not in raw:
            read["connection_limits"] = dataclasses.replace(limits, max_inbound_buffer=least)
            return
        raise _Table(self.file, "limits", raw).error(
            "max_inbound_buffer",
            raw["max_inbound_buffer"],
            f"a size no less than max_tsdu_size + max_message_size ({least} octets): "
            "one association may hold that much of a PDU",
        )

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

    def check_default_route(self, top: _Table, name: str, peers: tuple[Peer, ...]) -> None:
        names = [peer.name for peer in peers]
        if name not in names:
            known = ", ".join(names) or "none are configured"
            raise top.error("default_route", name, f"the name of a peer ({known})")

    def check_congestion(self, top: _Table, name: str) -> None:
        """``tcp_congestion``: an algorithm this kernel offers (read from /proc)."""
        try:
            available = _AVAILABLE_CONGESTION.read_text().split()
        except OSError:
            available = []
        if name not in available:
            offered = ", ".join(available) or f"none listed in {_AVAILABLE_CONGESTION}"
            raise top.error(
                "tcp_congestion", name, f"a congestion control this kernel offers ({offered})"
            )

    # --- [security] -------------------------------------------------------------------

    def security(
        self, top: _Table, security: Security, domains: Sequence[AddressPrefix]
    ) -> Security:
        """The policy read and every name in ``[security]`` looked up in it."""
        raw = top.data["security"]
        assert isinstance(raw, dict)  # (the walk took it as a table)
        table = _Table(self.file, "security", raw)
        if security.policy is None:
            needing = [k for k in ("default_label", "default_clearance", "clearances") if k in raw]
            if needing:
                raise table.error(
                    "policy", MISSING, f"an Open XML SPIF file ({needing[0]} needs one)"
                )
            return dataclasses.replace(security, clearances=())
        policy = self.read_policy(table, security.policy)
        unlabelled = None
        if security.default_label is not None:
            unlabelled = _classification(
                table, "default_label", policy, security.default_label
            ).lacv
        read: Any = security.clearances  # (the walk's tables, not yet built)
        clearances = self.clearances(policy, read, domains)
        security = dataclasses.replace(
            security, spif=policy, unlabelled=unlabelled, clearances=clearances
        )
        if security.default_clearance is not None:
            _check_clearance_name(table, "default_clearance", security.default_clearance, security)
        return security

    def read_policy(self, table: _Table, path: Path) -> SecurityPolicy:
        written = table.data["policy"]
        try:
            data = path.read_bytes()
        except OSError as error:
            raise table.error(
                "policy", written, f"a readable file ({path}: {error.strerror})"
            ) from None
        try:
            return parse_spif(data, str(path))
        except SpifError as error:
            raise table.error("policy", written, f"an Open XML SPIF ({error})") from None

    def clearances(
        self,
        policy: SecurityPolicy,
        read: Sequence[tuple[_Table, _Read]],
        domains: Sequence[AddressPrefix],
    ) -> tuple[NamedClearance, ...]:
        """The ``[[security.clearances]]`` tables (as the walk read them) in the policy."""
        built: list[NamedClearance] = []
        holder: dict[str, str] = {}
        for table, values in read:
            entry = NamedClearance(**values)
            if any(other.name == entry.name for other in built):
                raise table.error("name", entry.name, "a name no other clearance has")
            top = _classification(table, "classification", policy, entry.classification)
            refs = [
                _category(table, f"categories[{number}]", policy, name)
                for number, name in enumerate(entry.categories)
            ]
            for number, user in enumerate(entry.users):
                key, written = f"users[{number}]", _written(table, "users", number)
                _under_local_domains(table, key, written, user, domains)
                if user.canonical in holder:
                    expected = f"a user no other clearance lists ({holder[user.canonical]})"
                    raise table.error(key, written, expected)
                holder[user.canonical] = table.path
            clearance = clearance_up_to(policy, top, refs, name=entry.name)
            built.append(dataclasses.replace(entry, clearance=clearance))
        return tuple(built)

    def check_peer_clearances(
        self, top: _Table, peers: Sequence[Peer], security: Security | None
    ) -> None:
        """Each peer's clearance names a ``[[security.clearances]]`` table."""
        raw_peers = top.data.get("peers", [])
        assert isinstance(raw_peers, list)
        for index, peer in enumerate(peers):
            if peer.clearance is None:
                continue
            table = _Table(self.file, f"peers[{index}]", raw_peers[index])
            if security is None or security.spif is None:
                raise table.error(
                    "clearance", peer.clearance, "no clearance without a [security] policy"
                )
            _check_clearance_name(table, "clearance", peer.clearance, security)

    # --- listeners and peers ----------------------------------------------------------

    def listeners(self, read: list[tuple[_Table, _Read]], tls: TlsFiles) -> tuple[Listener, ...]:
        result: list[tuple[_Table, Listener]] = []
        for table, values in read:
            files = resolve_files(TlsFiles(**values["tls_files"]), tls)
            listener = Listener(**values | {"tls_files": files})
            if listener.tls is TlsMode.REQUIRED:
                _check_files(table, files, identity=True, trust=False)
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

    def peers(
        self,
        read: list[tuple[_Table, _Read]],
        own_name: str,
        mta_password: Secret | None,
        table: PrecedenceTable,
        tls: TlsFiles,
    ) -> tuple[Peer, ...]:
        peers: list[Peer] = []
        for peer_table, values in read:
            peer = self.peer(peer_table, values, own_name, mta_password, table, tls)
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
        self,
        peer: _Table,
        values: _Read,
        own_name: str,
        mta_password: Secret | None,
        table: PrecedenceTable,
        tls: TlsFiles,
    ) -> Peer:
        name: str = values["name"]
        ours = values.get("our_credentials", mta_password)
        theirs = values.get("their_credentials")
        selectors = dataclasses.replace(NO_SELECTORS, **values["selectors"])
        mode: TlsMode = values.get("tls", TlsMode.OFF)
        slots = self.peer_slots(peer, values, table, selectors, mode)
        files = resolve_files(TlsFiles(**values["tls_files"]), tls)
        built = Peer(
            **values
            | {
                "our_credentials": Credentials(name=own_name, password=ours),
                "their_credentials": Credentials(name=name, password=theirs),
                "selectors": selectors,
                "slots": slots,
                "tls_files": files,
            }
        )
        if built.uses_tls:
            _check_files(peer, files, identity=False, trust=built.fingerprint is None)
        return built

    def peer_slots(
        self,
        peer: _Table,
        values: _Read,
        table: PrecedenceTable,
        selectors: Selectors,
        mode: TlsMode,
    ) -> tuple[Slot, ...]:
        """A P1 peer's slots (required); an ACP 142 peer has none, and an IPv4 node ID."""
        if values.get("transport", Transport.P1) is Transport.ACP142:
            if peer.has("slots"):
                raise peer.error(
                    "transport", "acp142", '"p1" ([[peers.slots]] are for P1 peers only)'
                )
            _check_node_id(peer, values)
            return ()
        if not peer.has("slots"):
            raise peer.error("slots", MISSING, _SLOTS_EXPECTED)
        return self.slots(peer, values["slots"], table, selectors, mode)

    def slots(
        self,
        peer: _Table,
        read: list[tuple[_Table, _Read]],
        table: PrecedenceTable,
        selectors: Selectors,
        tls: TlsMode,
    ) -> tuple[Slot, ...]:
        slots: list[Slot] = []
        owner: dict[Precedence, str] = {}
        for slot_table, values in read:
            precedences: tuple[Precedence, ...] = values["precedences"]
            slot = Slot(
                **values
                | {
                    "dscp": values.get("dscp", table.dscp(precedences[0])),
                    "selectors": dataclasses.replace(selectors, **values["selectors"]),
                    "tls": values.get("tls", tls),
                }
            )
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
            raise peer.error("slots", None, f"{_SLOTS_EXPECTED} (unrouted: {', '.join(unrouted)})")
        return tuple(slots)


def _check_node_id(peer: _Table, values: _Read) -> None:
    """An ACP 142 peer's node ID defaults to its host, which must then be IPv4."""
    given: PeerAcp142 | None = values.get("acp142")
    if given is not None and given.node_id is not None:
        return
    host: str = values["hosts"][0]
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        raise peer.error(
            "host", host, "an IPv4 address, or [peers.acp142] node_id (ACP 142 names nodes by IPv4)"
        ) from None


def _check_acp142(top: _Table, read: _Read) -> None:
    """ACP 142 peers need this MTA's node, whose ID defaults to its IPv4 address."""
    peers = [p for p in read["peers"] if p.transport is Transport.ACP142]
    endpoint: Acp142Endpoint | None = read.get("acp142")
    if peers and endpoint is None:
        raise top.error(
            "acp142", MISSING, f"an [acp142] table (peer {peers[0].name} uses transport acp142)"
        )
    grouped: dict[str, Peer] = {}
    for index, peer in enumerate(read["peers"]):
        group = peer.acp142.group
        if peer.transport is not Transport.ACP142 or group is None:
            continue
        first = grouped.setdefault(group, peer)
        if first.acp142.data_port != peer.acp142.data_port:
            table = list(top.tables("peers", file_keys(Peer)))[index]
            raise table.table("acp142", section_keys(Peer, "acp142")).error(
                "data_port",
                peer.acp142.data_port,
                f"data_port {first.acp142.data_port}, as peer {first.name} of group {group}",
            )
    if endpoint is not None and endpoint.node_id is None:
        try:
            ipaddress.IPv4Address(endpoint.address)
        except ValueError:
            raise top.table("acp142", section_keys(MtaConfig, "acp142")).error(
                "address", endpoint.address, "an IPv4 address, or node_id"
            ) from None


# --- names the security policy defines ---------------------------------------------------


def _classification(table: _Table, key: str, policy: SecurityPolicy, name: str) -> Classification:
    found = policy.classification_named(name)
    if found is None:
        names = ", ".join(c.name for c in policy.classifications)
        raise table.error(key, name, f"a classification of policy {policy.name} ({names})")
    return found


def _category(table: _Table, key: str, policy: SecurityPolicy, name: str) -> CategoryRef:
    found = policy.categories_named(name)
    if len(found) == 1:
        return found[0].ref
    if not found:
        raise table.error(key, name, f"a category of policy {policy.name}")
    where = ", ".join(
        f"{_tag_set_name(policy, c.ref.tag_set)}/{c.tag_name}/{c.name}" for c in found
    )
    raise table.error(key, name, f"one category: write which ({where})")


def _tag_set_name(policy: SecurityPolicy, oid: str) -> str:
    return next(t.name for t in policy.tag_sets if t.id == oid)


def _written(table: _Table, key: str, index: int) -> object:
    """Element ``index`` of the list ``key`` as the file wrote it."""
    raw = table.data.get(key)
    return raw[index] if isinstance(raw, list) and index < len(raw) else None


def _check_clearance_name(table: _Table, key: str, name: str, security: Security) -> None:
    names = [c.name for c in security.clearances]
    if name not in names:
        known = ", ".join(names) or "none are configured"
        raise table.error(key, name, f"the name of a [[security.clearances]] table ({known})")


# --- the checks of a section's keys together --------------------------------------------


def _check_files(table: _Table, files: TlsFiles, *, identity: bool, trust: bool) -> None:
    """The TLS files of a listener or peer that requires TLS can be used; ``identity``:
    it must present a certificate; ``trust``: it must name a CA."""
    problem = check_identity(files, required=identity) or check_trust(files, required=trust)
    if problem is not None:
        shown = problem.value if problem.value is not None else MISSING
        expected = f"{problem.expected} (tls is required)"
        raise table.error(problem.key, shown, expected)


def _check_listener_trust(
    top: _Table, listeners: Sequence[Listener], peers: Sequence[Peer]
) -> None:
    """A TLS listener asking for client certificates trusts some CA: its own, or a TLS
    peer's (each of which it trusts as well)."""
    anchors = [p.tls_files.ca for p in peers if p.uses_tls and p.tls_files.ca is not None]
    if anchors:
        return
    for index, listener in enumerate(listeners):
        asks = TlsMode.REQUIRED is listener.tls is listener.client_certificate
        if asks and listener.tls_files.ca is None:
            raise top.error(
                f"listeners[{index}].ca",
                MISSING,
                "a PEM file of the CAs that issue peers' certificates (or a TLS "
                "peer's ca), since client_certificate is required",
            )


def _unchecked(table: _Table, built: Any) -> None:
    """A section whose keys are independent of each other."""


def _check_retry(table: _Table, policy: RetryPolicy) -> None:
    if policy.maximum < policy.initial:
        raise table.error(
            "maximum",
            table.data.get("maximum", policy.maximum),
            f"a duration no shorter than {table.key('initial')} ({policy.initial:g} s)",
        )


def _check_connection_limits(table: _Table, limits: ConnectionLimits) -> None:
    if limits.api_operator_connections >= limits.max_api_connections:
        raise table.error(
            "api_operator_connections",
            table.data.get("api_operator_connections", limits.api_operator_connections),
            f"an integer less than {table.key('max_api_connections')} "
            f"({limits.max_api_connections})",
        )
    if limits.failed_bind_delay_max < limits.failed_bind_delay:
        raise table.error(
            "failed_bind_delay_max",
            table.data.get("failed_bind_delay_max", limits.failed_bind_delay_max),
            f"a duration no shorter than {table.key('failed_bind_delay')} "
            f"({limits.failed_bind_delay:g} s)",
        )


def _check_metrics(table: _Table, endpoint: MetricsEndpoint) -> None:
    if not endpoint.enabled:
        raise table.error(
            "listen",
            MISSING,
            'address:port, as in listen = "127.0.0.1:9464" (a [metrics] table without '
            "listen would answer nowhere; leave the table out for no endpoint)",
        )


_CHECKS: Mapping[type, Any] = {
    RetryPolicy: _check_retry,
    ConnectionLimits: _check_connection_limits,
    MetricsEndpoint: _check_metrics,
}
