"""Kinds of configuration value: how each is described in errors and read from TOML.

A :class:`Kind` pairs the text that follows "expected" in a :class:`config.loader.ConfigError`
with a converter from the TOML value; a converter raises :class:`Invalid` (optionally with a
more precise description) for a value it refuses.  Booleans are never taken for numbers.

Public API::

    Kind(expected, convert), Invalid(expected="")
    MTA_NAME, PEER_NAME, HOST, PORT, COUNT, DURATION, SIZE, TPDU_SIZE, FRACTION, FACTOR,
    DSCP, PRECEDENCE, PRECEDENCES, SLOT_MODE, P1_PROTOCOL, LOG_LEVEL, PASSWORD, FILE_NAME, PATH,
    DATABASE_URL, ADDRESS_PREFIX, GLOBAL_DOMAIN, OR_NAME, SECONDS, EXTENSION_TYPE,
    TSEL, SSEL, PSEL (selectors: text or hex:digits, "" for none), TSELS, SSELS, PSELS
    (a listener's)
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeGuard, TypeVar

from config.schema import AddressPrefix, LogLevel, P1Protocol, Secret, SlotMode
from p1.errors import DecodeError
from p1.mts.orname import ORName, parse_orname
from p1.mts.precedence import (
    InvalidDscpError,
    Precedence,
    UnknownPrecedenceError,
    parse_dscp,
    parse_precedence,
)
from p1.osi.selectors import (
    HEX_PREFIX,
    MAX_PSEL,
    MAX_SSEL,
    MAX_TSEL,
    SelectorError,
    parse_selector,
)

__all__ = [
    "ADDRESS_PREFIX",
    "COUNT",
    "DATABASE_URL",
    "DSCP",
    "DURATION",
    "EXTENSION_TYPE",
    "FACTOR",
    "FILE_NAME",
    "FRACTION",
    "GLOBAL_DOMAIN",
    "HOST",
    "LOG_LEVEL",
    "MTA_NAME",
    "P1_PROTOCOL",
    "PASSWORD",
    "PATH",
    "PEER_NAME",
    "PORT",
    "PRECEDENCE",
    "PRECEDENCES",
    "PSEL",
    "PSELS",
    "SIZE",
    "SLOT_MODE",
    "SSEL",
    "SSELS",
    "TPDU_SIZE",
    "TSEL",
    "TSELS",
    "Invalid",
    "Kind",
]

T = TypeVar("T")
E = TypeVar("E", bound=enum.Enum)


class Invalid(Exception):
    """A value a converter refuses; ``expected`` overrides the kind's own description."""

    def __init__(self, expected: str = "") -> None:
        super().__init__(expected)
        self.expected = expected


@dataclass(frozen=True, slots=True)
class Kind(Generic[T]):
    """A kind of value: how to describe it and how to convert a TOML value to it."""

    expected: str
    convert: Callable[[object], T]


# --- converters -------------------------------------------------------------------------


def _is_int(raw: object) -> TypeGuard[int]:
    return isinstance(raw, int) and not isinstance(raw, bool)


def _text(raw: object) -> str:
    if isinstance(raw, str) and raw.strip() and "\0" not in raw:
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


def _port(raw: object) -> int:
    if _is_int(raw) and 1 <= raw <= 65535:
        return int(raw)
    raise Invalid()


def _positive_int(raw: object) -> int:
    if _is_int(raw) and raw >= 1:
        return int(raw)
    raise Invalid()


def _number(raw: object) -> float | None:
    if isinstance(raw, int | float) and not isinstance(raw, bool) and math.isfinite(raw):
        return float(raw)
    return None


_DURATION_PART = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smhd])", re.IGNORECASE)
_DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


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


def _password(raw: object) -> Secret:
    if isinstance(raw, str) and raw and raw.isascii():
        return Secret(raw)
    raise Invalid()


def _database(raw: object) -> str:
    if isinstance(raw, str) and re.match(r"[A-Za-z][A-Za-z0-9+.\-]*://", raw):
        return raw
    raise Invalid()


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


def _orname(raw: object) -> ORName:
    if not isinstance(raw, str):
        raise Invalid()
    try:
        return parse_orname(raw)
    except DecodeError as error:
        raise Invalid(f"an O/R name such as {_NAME_EXAMPLE} ({error.why})") from None


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


# --- the kinds, with how they are described in errors -----------------------------------

MTA_NAME = Kind("an MTA name: 1 to 32 printable ASCII characters (X.411 MTAName)", _mta_name)
HOST = Kind("a host name or IP address", _host)
PORT = Kind("a port number 1..65535", _port)
COUNT = Kind("an integer >= 1", _positive_int)
DURATION = Kind("a duration > 0: seconds, or text such as 90s, 15m, 4h, 3d", _duration)
SIZE = Kind("a size in octets >= 1, or text such as 512KiB, 64MiB", _size)
TPDU_SIZE = Kind("a TPDU size of 128, 256, 512, 1024 or 2048 (X.224 class 0)", _tpdu_size)
FRACTION = Kind("a fraction from 0 up to (not including) 1", _fraction)
FACTOR = Kind("a number >= 1", _factor)
DSCP = Kind("CS0..CS7, EF, AFxy or 0..63", _dscp)
PRECEDENCE = Kind(
    "a precedence: override, flash, immediate, priority, routine or deferred", _precedence
)
PRECEDENCES = Kind(
    "a non-empty list of precedences: override, flash, immediate, priority, routine, deferred",
    _precedences,
)
SLOT_MODE: Kind[SlotMode] = Kind("one of permanent, on-demand", _choice(SlotMode))
P1_PROTOCOL: Kind[P1Protocol] = Kind(
    'one of "1988" (normal mode), "1988-x410" (X.410-1984 mode, 1988 P1), '
    '"1984" (X.410-1984 mode, down-graded)',
    _choice(P1Protocol),
)
LOG_LEVEL: Kind[LogLevel] = Kind("one of debug, info, warning, error, critical", _choice(LogLevel))
PASSWORD = Kind("a non-empty ASCII password (X.411 simple credentials are an IA5String)", _password)
FILE_NAME = Kind("a file name", _text)
PATH = Kind("a path", _text)
DATABASE_URL = Kind(
    "a database URL such as sqlite:///state/aiox400.db or postgresql+psycopg://host/aiox400",
    _database,
)
ADDRESS_PREFIX = Kind(f"an O/R address prefix such as {_PREFIX_EXAMPLE}", _prefix)
GLOBAL_DOMAIN = Kind(
    "a global domain: C, ADMD and optional PRMD, such as C=GB;ADMD= ;PRMD=SITEA",
    _global_domain,
)
PEER_NAME = Kind("the name of a peer", _text)
OR_NAME = Kind(f"an O/R name such as {_NAME_EXAMPLE}", _orname)
SECONDS = Kind("a duration >= 0: seconds, or text such as 90s, 15m, 4h, 3d", _seconds)
EXTENSION_TYPE = Kind(
    "an extension type: a standard-extension number 0..256 (such as 20) or an object "
    'identifier in dotted form (such as "1.3.26.0.4406.0.8.0")',
    _extension_type,
)
TSEL = Kind(
    f'a TSEL (X.224 TSAP-ID, up to {MAX_TSEL} octets): {_SELECTOR_FORMS}, or "" for none',
    _tsel,
)
SSEL = Kind(
    f'an SSEL (X.225 session selector, up to {MAX_SSEL} octets): {_SELECTOR_FORMS}, or "" for none',
    _ssel,
)
PSEL = Kind(
    f'a PSEL (X.226 presentation selector, up to {MAX_PSEL} octets): {_SELECTOR_FORMS}, or "" '
    "for none",
    _psel,
)
TSELS = Kind(
    f"a TSEL or a non-empty list of TSELs (up to {MAX_TSEL} octets each): {_SELECTOR_FORMS}; "
    '"" admits a CR without a called TSEL',
    _selector_set(_tsel),
)
SSELS = Kind(
    f"an SSEL or a non-empty list of SSELs (up to {MAX_SSEL} octets each): {_SELECTOR_FORMS}; "
    '"" admits a CN without a called SSEL',
    _selector_set(_ssel),
)
PSELS = Kind(
    f"a PSEL or a non-empty list of PSELs (up to {MAX_PSEL} octets each): {_SELECTOR_FORMS}; "
    '"" admits a CP without a called PSEL',
    _selector_set(_psel),
)
