"""Kinds of configuration value: how each is read from TOML, written back, and described.

A :class:`Kind` pairs the text that follows "expected" in a :class:`config.loader.ConfigError`
with a converter from the TOML value and a writer back to the TOML value in the file's own
units (a duration as ``"90s"``, a size as ``"64MiB"``, a code point as ``"CS3"``), so that
what ``x400ctl config`` writes loads to the same value.  A converter raises :class:`Invalid`
(optionally with a more precise description, and for a list or table the element it
refused) for a value it refuses.  Booleans are never taken for numbers.

Public API::

    Kind(expected, convert, write=, name=, path=), Invalid(expected="", at="", written=)
    list_of(kind, what, unique=False) -> Kind[tuple]
    MTA_NAME, PEER_NAME, HOST, HOSTS, IP_ADDRESS, PORT, COUNT, CHECKPOINT_SIZE, DURATION,
    SECONDS, SIZE,
    TPDU_SIZE, FRACTION, FACTOR, DSCP, PRECEDENCE, PRECEDENCES, SLOT_MODE, P1_PROTOCOL,
    FOREIGN_ORIGINATORS, LOG_LEVEL, PASSWORD, FILE_NAME, PATH, DATABASE_URL, ADDRESS_PREFIX,
    ADDRESS_PREFIXES,
    GLOBAL_DOMAIN, OR_NAME, OR_NAMES, EXTENSION_TYPES, OWN_EXTENSIONS, TSEL, SSEL, PSEL
    (selectors: text or hex:digits, "" for none), TSELS, SSELS, PSELS (a listener's),
    LISTEN, METRICS_PATH, CONGESTION, OPERATOR_GROUPS, ACCOUNTS ([access]), BOOLEAN
    CLEARANCE_NAME, CLASSIFICATION, CATEGORIES ([security]: names the policy's SPIF defines)
    TLS_MODE, FINGERPRINT, SOURCES (a peer's hosts, addresses or networks)
    TRANSPORT, NODE_ID, PDU_SIZE, MULTICAST_GROUP(S) ([acp142], [peers.acp142])
    hide_url_password(url) -> str
"""

from __future__ import annotations

import decimal
import enum
import grp
import ipaddress
import math
import pwd
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeGuard, TypeVar

from config.values import (
    HIDDEN,
    AddressPrefix,
    ForeignOriginators,
    LocalAccount,
    LogLevel,
    MinimizeSubmissions,
    OperatorGroup,
    OwnExtension,
    P1Protocol,
    Secret,
    SlotMode,
    TlsMode,
    Transport,
)
from p1.errors import DecodeError
from p1.mts.precedence import (
    InvalidDscpError,
    Precedence,
    UnknownPrecedenceError,
    dscp_name,
    parse_dscp,
    parse_precedence,
)
from p1.orname.model import ORName
from p1.orname.text import format_orname, parse_orname
from p1.osi.selectors import (
    HEX_PREFIX,
    MAX_PSEL,
    MAX_SSEL,
    MAX_TSEL,
    SelectorError,
    format_selector,
    parse_selector,
)

__all__ = [
    "ACCOUNTS",
    "ADDRESS_PREFIX",
    "ADDRESS_PREFIXES",
    "BOOLEAN",
    "CATEGORIES",
    "CLASSIFICATION",
    "CLEARANCE_NAME",
    "CONGESTION",
    "COUNT",
    "DATABASE_URL",
    "DSCP",
    "DURATION",
    "EXTENSION_TYPES",
    "FACTOR",
    "FILE_NAME",
    "FINGERPRINT",
    "FOREIGN_ORIGINATORS",
    "FRACTION",
    "GLOBAL_DOMAIN",
    "HOST",
    "HOSTS",
    "IP_ADDRESS",
    "LISTEN",
    "LOG_LEVEL",
    "METRICS_PATH",
    "MINIMIZE_SUBMISSIONS",
    "MTA_NAME",
    "MULTICAST_GROUP",
    "MULTICAST_GROUPS",
    "NODE_ID",
    "OPERATOR_GROUPS",
    "OR_NAME",
    "OR_NAMES",
    "OWN_EXTENSIONS",
    "P1_PROTOCOL",
    "PASSWORD",
    "PATH",
    "PDU_SIZE",
    "PEER_NAME",
    "PORT",
    "PRECEDENCE",
    "PRECEDENCES",
    "PSEL",
    "PSELS",
    "SECONDS",
    "SIZE",
    "SLOT_MODE",
    "SOURCES",
    "SSEL",
    "SSELS",
    "TLS_MODE",
    "TPDU_SIZE",
    "TRANSPORT",
    "TSEL",
    "TSELS",
    "Invalid",
    "Kind",
    "hide_url_password",
    "list_of",
]

T = TypeVar("T")
E = TypeVar("E", bound=enum.Enum)

_AS_GIVEN = object()


class Invalid(Exception):
    """A value a converter refuses; ``expected`` overrides the kind's own description.

    A list or table kind refusing one of its elements says which with ``at`` (``"[2]"``,
    ``".alice"``), appended to the key, and gives the element as ``written``.
    """

    def __init__(self, expected: str = "", *, at: str = "", written: object = _AS_GIVEN) -> None:
        super().__init__(expected)
        self.expected = expected
        self.at = at
        self.written = written

    def value(self, raw: object) -> object:
        """The value to show: the refused element, else the key's whole value."""
        return raw if self.written is _AS_GIVEN else self.written


def _same(value: object) -> object:
    return value


@dataclass(frozen=True, slots=True)
class Kind(Generic[T]):
    """A kind of value: how to describe it, convert a TOML value to it and write it back."""

    expected: str
    """What an error says was expected ("a port number 1..65535")."""
    convert: Callable[[object], T]
    """The TOML value to the typed value; :class:`Invalid` if refused."""
    write: Callable[[T], object] = _same
    """The typed value to the TOML value that converts back to it."""
    name: str = "string"
    """The kind in a word or two, for the reference (docs/configuration.md)."""
    path: bool = False
    """A path: a relative one is taken from the configuration file's directory."""


# --- converters -------------------------------------------------------------------------


def _is_int(raw: object) -> TypeGuard[int]:
    return isinstance(raw, int) and not isinstance(raw, bool)


def _text(raw: object) -> str:
    if isinstance(raw, str) and raw.strip() and "\0" not in raw:
        return raw
    raise Invalid()


def _boolean(raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    raise Invalid()


def _mta_name(raw: object) -> str:
    # X.411: MTAName ::= IA5String (SIZE (1..ub-mta-name-length)), ub-mta-name-length 32.
    if isinstance(raw, str) and 1 <= len(raw) <= 32 and raw.isascii() and raw.isprintable():
        return raw
    raise Invalid()


def _host(raw: object) -> str:
    if isinstance(raw, str) and raw and not any(char.isspace() for char in raw):
        return raw
    raise Invalid()


def _ipv4(raw: object) -> str:
    """An IPv4 address, written as the standard library writes it."""
    if not isinstance(raw, str):
        raise Invalid()
    try:
        return str(ipaddress.IPv4Address(raw))
    except ValueError:
        raise Invalid() from None


def _multicast(raw: object) -> str:
    """An IPv4 multicast address (224.0.0.0/4)."""
    address = _ipv4(raw)
    if not ipaddress.IPv4Address(address).is_multicast:
        raise Invalid()
    return address


def _pdu_size(raw: object) -> int:
    """A whole number of octets from 64 to 65535 (Length_of_PDU is 16 bits)."""
    if type(raw) is not int or not 64 <= raw <= 0xFFFF:
        raise Invalid()
    return raw


def _ip_address(raw: object) -> str:
    """An IPv4 or IPv6 address, written as the standard library writes it."""
    if not isinstance(raw, str):
        raise Invalid()
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        raise Invalid() from None


def _hosts(raw: object) -> tuple[str, ...]:
    """One host, or a non-empty list of hosts, each once in the order first written."""
    if not isinstance(raw, list):
        return (_host(raw),)
    if not raw:
        raise Invalid()
    for index, item in enumerate(raw):
        try:
            _host(item)
        except Invalid:
            raise Invalid("a host name or IP address", at=f"[{index}]", written=item) from None
    return tuple(dict.fromkeys(raw))


def _write_hosts(hosts: tuple[str, ...]) -> object:
    return hosts[0] if len(hosts) == 1 else list(hosts)


def _port(raw: object) -> int:
    if _is_int(raw) and 1 <= raw <= 65535:
        return int(raw)
    raise Invalid()


def _positive_int(raw: object) -> int:
    if _is_int(raw) and raw >= 1:
        return int(raw)
    raise Invalid()


MAX_CHECKPOINT_SIZE = 1 << 20
"""The largest checkpoint size taken, in units of 1024 octets (1 GiB: past any message)."""


def _checkpoint_size(raw: object) -> int:
    if _is_int(raw) and 0 <= raw <= MAX_CHECKPOINT_SIZE:
        return int(raw)
    raise Invalid()


def _number(raw: object) -> float | None:
    if isinstance(raw, int | float) and not isinstance(raw, bool) and math.isfinite(raw):
        return float(raw)
    return None


_DURATION_PART = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smhd])", re.IGNORECASE)
_DURATION_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


def _duration(raw: object) -> float:
    """Seconds from a number or from text such as ``90s``, ``1h30m``, ``3d``; > 0."""
    seconds = _seconds(raw)
    if seconds == 0:
        raise Invalid()
    return seconds


def _seconds(raw: object) -> float:
    """Seconds from a number or from text such as ``90s``, ``1h30m``, ``3d``; >= 0."""
    seconds = _number(raw)
    if isinstance(raw, str) and raw.strip():
        seconds, position = 0.0, 0
        for match in _DURATION_PART.finditer(raw):
            if match.start() != position:
                break
            seconds += float(match.group(1)) * _DURATION_UNITS[match.group(2).lower()]
            position = match.end()
        if raw[position:].strip():
            raise Invalid()
    if seconds is None or not 0 <= seconds < math.inf:
        raise Invalid()
    return seconds


def _write_seconds(seconds: float) -> object:
    """``"90s"``, ``"15m"``, ``"4h"``, ``"3d"``: the largest unit that holds ``seconds``
    whole; a fraction of a second in decimal seconds; the number itself if no text reads
    back the same."""
    text = f"{decimal.Decimal(repr(seconds)):f}s"
    if seconds == 0:
        text = "0s"
    elif seconds.is_integer():
        unit, size = next((u, n) for u, n in _DURATION_UNITS.items() if seconds % n == 0)
        text = f"{int(seconds // size)}{unit}"
    try:
        return text if _seconds(text) == seconds else seconds
    except Invalid:
        return seconds


_SIZE = re.compile(r"\s*([0-9]+)\s*(B|KiB|MiB|GiB)?\s*")
_SIZE_UNITS = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def _size(raw: object) -> int:
    """Octets from an integer or from text such as ``512KiB``, ``64MiB``; >= 1."""
    if _is_int(raw):
        size = int(raw)
    elif isinstance(raw, str) and (match := _SIZE.fullmatch(raw)):
        size = int(match.group(1)) * _SIZE_UNITS[match.group(2)]
    else:
        raise Invalid()
    if size < 1:
        raise Invalid()
    return size


def _write_size(size: int) -> object:
    """``"64MiB"``: the largest binary unit that holds ``size`` whole, else octets."""
    for unit in ("GiB", "MiB", "KiB"):
        if size % _SIZE_UNITS[unit] == 0:
            return f"{size // _SIZE_UNITS[unit]}{unit}"
    return size


def _tpdu_size(raw: object) -> int:
    # X.224 class 0 TPDU sizes are 128, 256, 512, 1024 or 2048 octets.
    size = _size(raw)
    if size not in (128, 256, 512, 1024, 2048):
        raise Invalid()
    return size


def _fraction(raw: object) -> float:
    value = _number(raw)
    if value is None or not 0.0 <= value < 1.0:
        raise Invalid()
    return value


def _factor(raw: object) -> float:
    value = _number(raw)
    if value is None or value < 1.0:
        raise Invalid()
    return value


def _dscp(raw: object) -> int:
    if _is_int(raw) and 0 <= raw <= 63:
        return int(raw)
    if isinstance(raw, str):
        try:
            return parse_dscp(raw)
        except InvalidDscpError:
            pass
    raise Invalid()


def _write_dscp(value: int) -> object:
    """The code point's name (``"CS3"``, ``"EF"``), else its number."""
    name = dscp_name(value)
    return int(name) if name.isdigit() else name


def _precedence(raw: object) -> Precedence:
    try:
        if _is_int(raw):
            return Precedence(raw)
        if isinstance(raw, str):
            return parse_precedence(raw)
    except (ValueError, UnknownPrecedenceError):
        pass
    raise Invalid()


def _precedences(raw: object) -> tuple[Precedence, ...]:
    if not isinstance(raw, list) or not raw:
        raise Invalid()
    found = [_precedence(item) for item in raw]
    repeated = sorted({p for p in found if found.count(p) > 1}, reverse=True)
    if repeated:
        raise Invalid(f"each precedence once ({repeated[0].label} is repeated)")
    return tuple(sorted(found, reverse=True))


def _choice(enum_type: type[E]) -> Callable[[object], E]:
    def convert(raw: object) -> E:
        if isinstance(raw, str):
            for member in enum_type:
                if member.value == raw.strip().lower():
                    return member
        raise Invalid()

    return convert


def _enum_value(member: enum.Enum) -> object:
    return member.value


def _password(raw: object) -> Secret:
    if raw == HIDDEN:
        raise Invalid(f"the password itself ({HIDDEN} is what x400ctl config shows for it)")
    if isinstance(raw, str) and raw and raw.isascii():
        if len(raw) > UB_PASSWORD_LENGTH:
            raise Invalid(_TOO_LONG.format(length=len(raw)))
        return Secret(raw)
    raise Invalid()


UB_PASSWORD_LENGTH = 62
"""X.411's ub-password-length: the longest password an MTA-bind carries."""
_TOO_LONG = "a password of 62 characters at most (X.411 ub-password-length), not {length}"


def _hidden_secret(value: Secret) -> object:
    return HIDDEN


def _database(raw: object) -> str:
    if isinstance(raw, str) and re.match(r"[A-Za-z][A-Za-z0-9+.\-]*://", raw):
        if urllib.parse.urlsplit(raw).password == HIDDEN:
            raise Invalid(
                f"the database URL with its password ({HIDDEN} is what x400ctl config shows for it)"
            )
        return raw
    raise Invalid()


def hide_url_password(url: str) -> str:
    """``url`` with the password of its ``user:password@`` part replaced by ``<hidden>``."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    user, _, host = parts.netloc.rpartition("@")
    name = user.partition(":")[0]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{name}:{HIDDEN}@{host}"))


_PREFIX_LEVELS = ("C", "ADMD", "PRMD", "O", "OU1", "OU2", "OU3", "OU4")
_PREFIX_EXAMPLE = "C=GB;ADMD= ;PRMD=SITEB"
_NAME_EXAMPLE = "C=GB;ADMD= ;PRMD=SITEB;O=HQ;CN=duty officer"


def _prefix(raw: object) -> AddressPrefix:
    """An O/R address prefix: the routing attributes only, in order, none skipped."""
    if not isinstance(raw, str):
        raise Invalid()
    try:
        name = parse_orname(raw)
    except DecodeError as error:
        raise Invalid(f"an O/R address prefix such as {_PREFIX_EXAMPLE} ({error.why})") from None
    routing = ORName(
        country=name.country,
        admd=name.admd,
        prmd=name.prmd,
        organization=name.organization,
        organizational_units=name.organizational_units,
    )
    if routing.canonical != name.canonical or name.directory_name is not None:
        raise Invalid("an O/R address prefix of C, ADMD, PRMD, O and OU only")
    key = name.route_key()
    for label, part in zip(_PREFIX_LEVELS, key, strict=False):
        if part == "":
            raise Invalid(f"an O/R address prefix without gaps ({label} is missing)")
    return AddressPrefix(text=raw, key=key)


def _prefix_text(prefix: AddressPrefix) -> object:
    return prefix.text


def _orname(raw: object) -> ORName:
    if not isinstance(raw, str):
        raise Invalid()
    try:
        return parse_orname(raw)
    except DecodeError as error:
        raise Invalid(f"an O/R name such as {_NAME_EXAMPLE} ({error.why})") from None


def _orname_text(name: ORName) -> object:
    return format_orname(name)


_OID = re.compile(r"[0-2](\.(0|[1-9][0-9]*))+")
_UB_EXTENSION_TYPES = 256
"""X.411 MTSUpperBounds: standard-extension INTEGER (0..ub-extension-types)."""


def _extension_type(raw: object) -> int | str:
    # X.411 9.1: ExtensionType ::= CHOICE { standard-extension [0] INTEGER
    # (0..ub-extension-types), private-extension [3] OBJECT IDENTIFIER }
    if _is_int(raw) and 0 <= raw <= _UB_EXTENSION_TYPES:
        return int(raw)
    if isinstance(raw, str) and _OID.fullmatch(raw):
        return raw
    raise Invalid()


def _global_domain(raw: object) -> ORName:
    # GlobalDomainIdentifier ::= [APPLICATION 3] SEQUENCE {
    #   country-name CountryName, administration-domain-name AdministrationDomainName,
    #   private-domain-identifier PrivateDomainIdentifier OPTIONAL }
    try:
        prefix = _prefix(raw)
    except Invalid:
        raise Invalid() from None  # the kind's description says what a domain is
    if not 2 <= prefix.length <= 3:
        raise Invalid()
    return parse_orname(prefix.text)


def _selector(limit: int, name: str) -> Callable[[object], bytes]:
    """A selector (p1.osi.selectors): printable ASCII text, or ``hex:`` and digits."""

    def convert(raw: object) -> bytes:
        if not isinstance(raw, str):
            raise Invalid()
        try:
            return parse_selector(raw, limit=limit)
        except SelectorError as error:
            raise Invalid(f"{name}: {error.why}") from None

    return convert


def _write_selector(value: bytes) -> object:
    return format_selector(value)


_SELECTOR_FORMS = f'text such as "x400" or {HEX_PREFIX} and hexadecimal digits such as "hex:0591"'
_tsel = _selector(MAX_TSEL, f"a TSEL (X.224 TSAP-ID, up to {MAX_TSEL} octets)")
_ssel = _selector(MAX_SSEL, f"an SSEL (X.225 session selector, up to {MAX_SSEL} octets)")
_psel = _selector(MAX_PSEL, f"a PSEL (X.226 presentation selector, up to {MAX_PSEL} octets)")


def _selector_set(one: Callable[[object], bytes]) -> Callable[[object], frozenset[bytes]]:
    """One selector or a non-empty list of them; "" is a connect without that selector."""

    def convert(raw: object) -> frozenset[bytes]:
        if isinstance(raw, str):
            return frozenset({one(raw)})
        if not isinstance(raw, list) or not raw:
            raise Invalid()
        return frozenset(one(item) for item in raw)

    return convert


def _write_selector_set(values: frozenset[bytes]) -> object:
    written = sorted(format_selector(value) for value in values)
    return written[0] if len(written) == 1 else written


# --- lists --------------------------------------------------------------------------------


def list_of(kind: Kind[T], what: str, *, unique: bool = False) -> Kind[tuple[T, ...]]:
    """A list of values of ``kind`` (``what``, plural, for errors); ``unique``: each once,
    in the order first written."""

    def convert(raw: object) -> tuple[T, ...]:
        if not isinstance(raw, list):
            raise Invalid()
        items: list[T] = []
        for index, item in enumerate(raw):
            try:
                items.append(kind.convert(item))
            except Invalid as bad:
                expected = bad.expected or kind.expected
                raise Invalid(expected, at=f"[{index}]", written=item) from None
        return tuple(dict.fromkeys(items)) if unique else tuple(items)

    def write(values: tuple[T, ...]) -> object:
        return [kind.write(value) for value in values]

    return Kind(f"a list of {what}", convert, write, name=f"list of {what}")


# --- [metrics] and tcp_congestion -----------------------------------------------------------

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


def _write_listen(endpoint: tuple[str, int]) -> object:
    host, port = endpoint
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _metrics_path(raw: object) -> str:
    if isinstance(raw, str) and _METRICS_PATH.fullmatch(raw):
        return raw
    raise Invalid()


_FINGERPRINT = re.compile(r"(?:sha256[:=])?((?:[0-9A-Fa-f]{2}:?){31}[0-9A-Fa-f]{2})", re.IGNORECASE)


def _fingerprint(raw: object) -> str:
    """A SHA-256 certificate fingerprint, written as ``openssl x509 -fingerprint -sha256``
    prints it (32 colon-separated pairs of upper-case hexadecimal digits)."""
    match = _FINGERPRINT.fullmatch(raw.strip()) if isinstance(raw, str) else None
    if match is None:
        raise Invalid()
    digits = match.group(1).replace(":", "").upper()
    if len(digits) != 64:
        raise Invalid()
    return ":".join(digits[i : i + 2] for i in range(0, 64, 2))


def _source(raw: object) -> str:
    """A host name, an IP address or an IP network (CIDR), as the standard library writes
    addresses and networks."""
    if not isinstance(raw, str):
        raise Invalid()
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        pass
    if "/" in raw:
        try:
            return str(ipaddress.ip_network(raw, strict=False))
        except ValueError:
            raise Invalid() from None
    if _HOST_NAME.fullmatch(raw):
        return raw
    raise Invalid()


def _congestion_name(raw: object) -> str:
    if isinstance(raw, str) and raw.isascii() and raw.isidentifier():
        return raw
    raise Invalid()


# --- [access] -------------------------------------------------------------------------------

_UNKNOWN_GROUP = 'the name of a group on this host (getent group) or a numeric gid such as "1001"'
_UNKNOWN_ACCOUNT = (
    'the name of an account on this host (getent passwd) or a numeric uid such as "1001"'
)


def _local_id(written: object, look_up: Callable[[str], int | None]) -> int | None:
    """A uid or gid written as a name or as digits (an int or a string of them); None if
    it is neither a number nor a name the database knows."""
    if _is_int(written):
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


def _group(raw: object) -> OperatorGroup:
    gid = _local_id(raw, _gid_of)
    if gid is None:
        raise Invalid(_UNKNOWN_GROUP)
    return OperatorGroup(name=str(raw), gid=gid)


def _group_name(group: OperatorGroup) -> object:
    return group.name


def _accounts(raw: object) -> tuple[LocalAccount, ...]:
    """``[access.users]``: account = O/R name, or a non-empty list of them; each account
    once (by uid)."""
    if not isinstance(raw, dict):
        raise Invalid()
    seen: dict[int, str] = {}
    accounts: list[LocalAccount] = []
    for account, value in raw.items():
        uid = _local_id(account, _uid_of)
        if uid is None:
            raise Invalid(_UNKNOWN_ACCOUNT, at=f".{account}", written=value)
        if uid in seen:
            expected = f"an account not already listed (uid {uid} is {seen[uid]})"
            raise Invalid(expected, at=f".{account}", written=value)
        seen[uid] = account
        accounts.append(LocalAccount(name=account, uid=uid, names=_account_names(account, value)))
    return tuple(accounts)


def _account_names(account: str, value: object) -> tuple[ORName, ...]:
    if isinstance(value, str):
        try:
            return (OR_NAME.convert(value),)
        except Invalid as bad:
            expected = bad.expected or OR_NAME.expected
            raise Invalid(expected, at=f".{account}", written=value) from None
    if not isinstance(value, list) or not value:
        raise Invalid("an O/R name or a non-empty list of them", at=f".{account}", written=value)
    try:
        return OR_NAMES.convert(value)
    except Invalid as bad:
        raise Invalid(bad.expected, at=f".{account}{bad.at}", written=bad.written) from None


def _write_accounts(accounts: tuple[LocalAccount, ...]) -> object:
    written: dict[str, object] = {}
    for account in accounts:
        names = [format_orname(name) for name in account.names]
        written[account.name] = names[0] if len(names) == 1 else names
    return written


# --- the kinds, with how they are described in errors -----------------------------------

MTA_NAME = Kind(
    "an MTA name: 1 to 32 printable ASCII characters (X.411 MTAName)", _mta_name, name="MTA name"
)
BOOLEAN = Kind("true or false", _boolean, name="boolean")
HOST = Kind("a host name or IP address", _host, name="host")
HOSTS = Kind(
    "a host name or IP address, or a non-empty list of them",
    _hosts,
    _write_hosts,
    name="host or list of hosts",
)
IP_ADDRESS = Kind("an IPv4 or IPv6 address", _ip_address, name="IP address")
PORT = Kind("a port number 1..65535", _port, name="port")
COUNT = Kind("an integer >= 1", _positive_int, name="integer >= 1")
CHECKPOINT_SIZE = Kind(
    f"an integer from 0 to {MAX_CHECKPOINT_SIZE}: units of 1024 octets (0: no checkpoints)",
    _checkpoint_size,
    name="checkpoint size",
)
DURATION = Kind(
    "a duration > 0: seconds, or text such as 90s, 15m, 4h, 3d",
    _duration,
    _write_seconds,
    name="duration > 0",
)
SECONDS = Kind(
    "a duration >= 0: seconds, or text such as 90s, 15m, 4h, 3d",
    _seconds,
    _write_seconds,
    name="duration >= 0",
)
SIZE = Kind("a size in octets >= 1, or text such as 512KiB, 64MiB", _size, _write_size, name="size")
TPDU_SIZE = Kind(
    "a TPDU size of 128, 256, 512, 1024 or 2048 (X.224 class 0)", _tpdu_size, name="TPDU size"
)
FRACTION = Kind("a fraction from 0 up to (not including) 1", _fraction, name="fraction")
FACTOR = Kind("a number >= 1", _factor, name="number >= 1")
DSCP = Kind("CS0..CS7, EF, AFxy or 0..63", _dscp, _write_dscp, name="DSCP")
PRECEDENCE = Kind(
    "a precedence: override, flash, immediate, priority, routine or deferred",
    _precedence,
    lambda precedence: precedence.label,
    name="precedence",
)
PRECEDENCES = Kind(
    "a non-empty list of precedences: override, flash, immediate, priority, routine, deferred",
    _precedences,
    lambda precedences: [p.label for p in precedences],
    name="list of precedences",
)
TRANSPORT: Kind[Transport] = Kind(
    'one of "p1" (P1 over RFC 1006), "acp142" (STANAG 4406 Annex E over ACP 142)',
    _choice(Transport),
    _enum_value,
    name="transport",
)
NODE_ID = Kind("an ACP 142 node ID written as an IPv4 address", _ipv4, name="node ID")
PDU_SIZE = Kind("a P_MUL PDU size in octets, 64..65535", _pdu_size, name="PDU size")
MULTICAST_GROUP = Kind(
    "an IPv4 multicast address (224.0.0.0 to 239.255.255.255)", _multicast, name="multicast group"
)
MULTICAST_GROUPS = list_of(MULTICAST_GROUP, "IPv4 multicast addresses", unique=True)
SLOT_MODE: Kind[SlotMode] = Kind(
    "one of permanent, on-demand", _choice(SlotMode), _enum_value, name="slot mode"
)
MINIMIZE_SUBMISSIONS: Kind[MinimizeSubmissions] = Kind(
    "one of refuse, hold", _choice(MinimizeSubmissions), _enum_value, name="minimize submissions"
)
FOREIGN_ORIGINATORS: Kind[ForeignOriginators] = Kind(
    "one of refuse, accept", _choice(ForeignOriginators), _enum_value, name="refuse or accept"
)
P1_PROTOCOL: Kind[P1Protocol] = Kind(
    'one of "1988" (normal mode), "1988-x410" (X.410-1984 mode, 1988 P1), '
    '"1984" (X.410-1984 mode, down-graded)',
    _choice(P1Protocol),
    _enum_value,
    name="P1 protocol",
)
LOG_LEVEL: Kind[LogLevel] = Kind(
    "one of debug, info, warning, error, critical", _choice(LogLevel), _enum_value, name="level"
)
PASSWORD = Kind(
    "a non-empty ASCII password (X.411 simple credentials are an IA5String)",
    _password,
    _hidden_secret,
    name="password",
)
FILE_NAME = Kind("a file name", _text, str, name="file name", path=True)
PATH = Kind("a path", _text, str, name="path", path=True)
DATABASE_URL = Kind(
    "a database URL such as sqlite:///state/aiox400.db or postgresql+psycopg://host/aiox400",
    _database,
    hide_url_password,
    name="database URL",
)
ADDRESS_PREFIX = Kind(
    f"an O/R address prefix such as {_PREFIX_EXAMPLE}", _prefix, _prefix_text, name="O/R prefix"
)
ADDRESS_PREFIXES = list_of(ADDRESS_PREFIX, "O/R address prefixes")
GLOBAL_DOMAIN = Kind(
    "a global domain: C, ADMD and optional PRMD, such as C=GB;ADMD= ;PRMD=SITEA",
    _global_domain,
    _orname_text,
    name="global domain",
)
PEER_NAME = Kind("the name of a peer", _text, name="peer name")
CLEARANCE_NAME = Kind("the name of a [[security.clearances]] table", _text, name="clearance name")
CLASSIFICATION = Kind(
    'a classification the security policy names, such as "SECRET"', _text, name="classification"
)
CATEGORIES = list_of(
    Kind(
        'a category the security policy names, such as "NATO" or "Releasable To/NATO"',
        _text,
        name="category",
    ),
    "categories",
    unique=True,
)
OR_NAME = Kind(f"an O/R name such as {_NAME_EXAMPLE}", _orname, _orname_text, name="O/R name")
OR_NAMES = list_of(OR_NAME, "O/R names", unique=True)
EXTENSION_TYPES = list_of(
    Kind(
        "an extension type: a standard-extension number 0..256 (such as 20) or an object "
        'identifier in dotted form (such as "1.3.26.0.4406.0.8.0")',
        _extension_type,
        name="extension type",
    ),
    "extension types",
    unique=True,
)
OWN_EXTENSIONS = list_of(
    Kind(
        'one of "internal-trace", "priority-level-qualifier"',
        _choice(OwnExtension),
        _enum_value,
        name="extension of ours",
    ),
    "extensions this MTA adds",
    unique=True,
)
TSEL = Kind(
    f'a TSEL (X.224 TSAP-ID, up to {MAX_TSEL} octets): {_SELECTOR_FORMS}, or "" for none',
    _tsel,
    _write_selector,
    name="selector",
)
SSEL = Kind(
    f'an SSEL (X.225 session selector, up to {MAX_SSEL} octets): {_SELECTOR_FORMS}, or "" for none',
    _ssel,
    _write_selector,
    name="selector",
)
PSEL = Kind(
    f'a PSEL (X.226 presentation selector, up to {MAX_PSEL} octets): {_SELECTOR_FORMS}, or "" '
    "for none",
    _psel,
    _write_selector,
    name="selector",
)
TSELS = Kind(
    f"a TSEL or a non-empty list of TSELs (up to {MAX_TSEL} octets each): {_SELECTOR_FORMS}; "
    '"" admits a CR without a called TSEL',
    _selector_set(_tsel),
    _write_selector_set,
    name="selector(s)",
)
SSELS = Kind(
    f"an SSEL or a non-empty list of SSELs (up to {MAX_SSEL} octets each): {_SELECTOR_FORMS}; "
    '"" admits a CN without a called SSEL',
    _selector_set(_ssel),
    _write_selector_set,
    name="selector(s)",
)
PSELS = Kind(
    f"a PSEL or a non-empty list of PSELs (up to {MAX_PSEL} octets each): {_SELECTOR_FORMS}; "
    '"" admits a CP without a called PSEL',
    _selector_set(_psel),
    _write_selector_set,
    name="selector(s)",
)
LISTEN = Kind(
    'an address and port, such as "127.0.0.1:9464", "[::1]:9464" or "localhost:9464"',
    _listen,
    _write_listen,
    name="address:port",
)
METRICS_PATH = Kind(
    'an absolute URL path such as "/metrics" (no query)', _metrics_path, name="URL path"
)
TLS_MODE: Kind[TlsMode] = Kind(
    'one of "required", "off"', _choice(TlsMode), _enum_value, name="TLS mode"
)
FINGERPRINT = Kind(
    "a SHA-256 certificate fingerprint: 64 hexadecimal digits, in pairs separated by "
    'colons or not (as "openssl x509 -noout -fingerprint -sha256" or "x400ctl tls show" '
    "print it)",
    _fingerprint,
    name="SHA-256 fingerprint",
)
SOURCES = list_of(
    Kind(
        'a host name, an IP address or an IP network such as "192.0.2.0/24"',
        _source,
        name="host, address or network",
    ),
    "hosts, addresses or networks",
    unique=True,
)
CONGESTION = Kind(
    'a congestion control name such as "cubic"', _congestion_name, name="congestion control"
)
OPERATOR_GROUPS = list_of(
    Kind(_UNKNOWN_GROUP, _group, _group_name, name="group"), "group names or numeric gids"
)
ACCOUNTS = Kind(
    "an [access.users] table: account = O/R name(s)",
    _accounts,
    _write_accounts,
    name="account = O/R name(s)",
)
