"""Military precedence (STANAG 4406) and its MTS-level and network-level mappings.

STANAG 4406 Annex A carries the originator's precedence in the IPM heading as
``MMHSPrecedence``; an MTA must schedule by precedence without opening the content, so
the precedence is also expressed on the P1 envelope as the X.411 ``Priority`` (clause
12.2.1.1.1.8) refined by the STANAG 4406 envelope extension ``priority-level-qualifier``
(OID 1.3.26.0.4406.0.8.0).  Three priorities times two qualifiers give six MTS levels,
one per precedence.  Each precedence also selects a DiffServ code point (RFC 2474) for
the connections that carry it.

Public API::

    Precedence, Priority, LevelQualifier          the three integer enumerations
    PRIORITY_LEVEL_QUALIFIER_OID                  "1.3.26.0.4406.0.8.0"
    PrecedenceTable(mts=..., unqualified=..., dscps=...)
        .to_mts(p) -> (Priority, LevelQualifier)
        .from_mts(priority, qualifier | None) -> Precedence
        .dscp(p) -> int
        .with_dscp({Precedence: int}) -> PrecedenceTable
        .with_mts({Precedence: (Priority, LevelQualifier)}) -> PrecedenceTable
    DEFAULT_TABLE
    parse_precedence(text) -> Precedence   (names, case-insensitive, or digits)
    parse_dscp(text) -> int                (CS0..CS7, EF, AF11..AF43, or 0..63)
    dscp_name(value) -> str                ("CS1", "EF", "AF41", or the decimal value)
    PrecedenceError(ValueError) and its subclasses
        UnknownPrecedenceError, InvalidDscpError, InvalidMtsLevelError, InvalidTableError

Precedence is ordered by urgency (``Precedence.FLASH > Precedence.ROUTINE``); X.411
Priority is not (normal 0, non-urgent 1, urgent 2): compare priorities with
:attr:`Priority.rank`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

__all__ = [
    "DEFAULT_TABLE",
    "DSCP_MAX",
    "PRIORITY_LEVEL_QUALIFIER_OID",
    "InvalidDscpError",
    "InvalidMtsLevelError",
    "InvalidTableError",
    "LevelQualifier",
    "Precedence",
    "PrecedenceError",
    "PrecedenceTable",
    "Priority",
    "UnknownPrecedenceError",
    "dscp_name",
    "parse_dscp",
    "parse_precedence",
]

PRIORITY_LEVEL_QUALIFIER_OID = "1.3.26.0.4406.0.8.0"
"""STANAG 4406 Annex A, envelope private extension ``priority-level-qualifier``."""

DSCP_MAX = 63
"""A DiffServ code point is six bits (RFC 2474 clause 3)."""


# --- errors ---------------------------------------------------------------------------


class PrecedenceError(ValueError):
    """A precedence, priority, qualifier, DSCP or table that is not acceptable."""


class UnknownPrecedenceError(PrecedenceError):
    """Text or a number that names no precedence level."""


class InvalidDscpError(PrecedenceError):
    """Text or a number that is not a DiffServ code point."""


class InvalidMtsLevelError(PrecedenceError):
    """A P1 priority or priority-level-qualifier value outside its enumeration."""


class InvalidTableError(PrecedenceError):
    """A precedence table that does not map every level one to one."""


# --- enumerations ---------------------------------------------------------------------


class Precedence(enum.IntEnum):
    """STANAG 4406 Annex A.

    ``MMHSPrecedence ::= INTEGER { deferred(0), routine(1), priority(2), immediate(3),
    flash(4), override(5) }`` -- 16 to 31 are reserved for national use and are not
    modelled here.  Higher values are more urgent, so the integer order is the
    scheduling order.
    """

    DEFERRED = 0
    ROUTINE = 1
    PRIORITY = 2
    IMMEDIATE = 3
    FLASH = 4
    OVERRIDE = 5

    @property
    def label(self) -> str:
        """The ASN.1 identifier: ``"flash"``."""
        return self.name.lower()

    @classmethod
    def most_urgent_first(cls) -> tuple[Precedence, ...]:
        """All levels, override first, deferred last (the queue service order)."""
        return tuple(sorted(cls, reverse=True))

    @classmethod
    def sort_key(cls, precedence: Precedence) -> int:
        """Key that sorts the most urgent level first: ``sorted(ps, key=Precedence.sort_key)``."""
        return -int(precedence)


class Priority(enum.IntEnum):
    """X.411 clause 12.2.1.1.1.8.

    ``Priority ::= [APPLICATION 7] ENUMERATED { normal(0), non-urgent(1), urgent(2) }``.
    The integer values are NOT in order of urgency; use :attr:`rank` to compare.
    """

    NORMAL = 0
    NON_URGENT = 1
    URGENT = 2

    @property
    def label(self) -> str:
        """The ASN.1 identifier: ``"non-urgent"``."""
        return self.name.lower().replace("_", "-")

    @property
    def rank(self) -> int:
        """Urgency order: non-urgent 0 < normal 1 < urgent 2."""
        return _PRIORITY_RANK[self]


_PRIORITY_RANK: dict[Priority, int] = {
    Priority.NON_URGENT: 0,
    Priority.NORMAL: 1,
    Priority.URGENT: 2,
}


class LevelQualifier(enum.IntEnum):
    """STANAG 4406 Annex A: ``PriorityLevelQualifier ::= ENUMERATED { low(0), high(1) }``."""

    LOW = 0
    HIGH = 1

    @property
    def label(self) -> str:
        """The ASN.1 identifier: ``"high"``."""
        return self.name.lower()


_E = TypeVar("_E", bound=enum.IntEnum)


def _accepted(enum_type: type[enum.IntEnum]) -> str:
    return ", ".join(
        f"{member.value} ({member.name.lower().replace('_', '-')})" for member in enum_type
    )


def _member(enum_type: type[_E], value: object) -> _E | None:
    """The member of ``enum_type`` whose value is the int ``value`` (bools excluded)."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return enum_type(value)
        except ValueError:
            return None
    return None


def _coerce(enum_type: type[_E], value: object, what: str) -> _E:
    """``enum_type(value)``, else :class:`InvalidMtsLevelError` naming both."""
    member = _member(enum_type, value)
    if member is None:
        raise InvalidMtsLevelError(f"{what} {value!r} is not one of {_accepted(enum_type)}")
    return member


# --- DSCP names (RFC 2474 class selectors, RFC 3246 EF, RFC 2597 AFxy) -----------------

_DSCP_NAMES: dict[str, int] = {
    **{f"CS{n}": 8 * n for n in range(8)},
    "EF": 46,
    **{f"AF{x}{y}": 8 * x + 2 * y for x in range(1, 5) for y in range(1, 4)},
}
_DSCP_BY_VALUE: dict[int, str] = {value: name for name, value in _DSCP_NAMES.items()}
_DSCP_ACCEPTED = "CS0..CS7, EF, AF11..AF43 (AFxy with x 1-4, y 1-3) or 0..63"


def parse_dscp(text: str) -> int:
    """A DiffServ code point from ``CS0``..``CS7``, ``EF``, ``AFxy`` or a decimal 0..63.

    Names are case-insensitive; surrounding whitespace is ignored.  Raises
    :class:`InvalidDscpError`.
    """
    word = text.strip().upper()
    if word in _DSCP_NAMES:
        return _DSCP_NAMES[word]
    if word.isascii() and word.isdigit() and int(word) <= DSCP_MAX:
        return int(word)
    raise InvalidDscpError(f"DSCP {text!r} is not one of {_DSCP_ACCEPTED}")


def check_dscp(value: object, what: str = "DSCP") -> int:
    """``value`` if it is an int in 0..63, else :class:`InvalidDscpError`."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= DSCP_MAX:
        return value
    raise InvalidDscpError(f"{what} {value!r} is out of range: accepted {_DSCP_ACCEPTED}")


def dscp_name(value: int) -> str:
    """The conventional name of a code point (``"CS3"``, ``"EF"``), else its decimal value."""
    return _DSCP_BY_VALUE.get(check_dscp(value), str(value))


# --- precedence names -----------------------------------------------------------------

_PRECEDENCE_ACCEPTED = ", ".join(f"{p.label} ({p.value})" for p in Precedence)


def parse_precedence(text: str) -> Precedence:
    """A precedence from its name (case-insensitive: ``"Flash"``) or value (``"4"``).

    Raises :class:`UnknownPrecedenceError` naming the text and the accepted values.
    """
    word = text.strip()
    if word.isascii() and word.isdigit():
        try:
            return Precedence(int(word))
        except ValueError:
            pass
    elif word.upper() in Precedence.__members__:
        return Precedence[word.upper()]
    raise UnknownPrecedenceError(f"precedence {text!r} is not one of {_PRECEDENCE_ACCEPTED}")


# --- the table ------------------------------------------------------------------------

MtsLevel = tuple[Priority, LevelQualifier]
"""A precedence as the P1 envelope carries it: X.411 priority + STANAG 4406 qualifier."""

_DEFAULT_MTS: dict[Precedence, MtsLevel] = {
    Precedence.DEFERRED: (Priority.NON_URGENT, LevelQualifier.LOW),
    Precedence.ROUTINE: (Priority.NON_URGENT, LevelQualifier.HIGH),
    Precedence.PRIORITY: (Priority.NORMAL, LevelQualifier.LOW),
    Precedence.IMMEDIATE: (Priority.NORMAL, LevelQualifier.HIGH),
    Precedence.FLASH: (Priority.URGENT, LevelQualifier.LOW),
    Precedence.OVERRIDE: (Priority.URGENT, LevelQualifier.HIGH),
}

# A peer that sends no priority-level-qualifier means the middle reading of its priority.
_DEFAULT_UNQUALIFIED: dict[Priority, Precedence] = {
    Priority.NON_URGENT: Precedence.ROUTINE,
    Priority.NORMAL: Precedence.PRIORITY,
    Priority.URGENT: Precedence.FLASH,
}

_DEFAULT_DSCPS: dict[Precedence, int] = {
    Precedence.DEFERRED: _DSCP_NAMES["CS0"],
    Precedence.ROUTINE: _DSCP_NAMES["CS0"],
    Precedence.PRIORITY: _DSCP_NAMES["CS1"],
    Precedence.IMMEDIATE: _DSCP_NAMES["CS2"],
    Precedence.FLASH: _DSCP_NAMES["CS3"],
    Precedence.OVERRIDE: _DSCP_NAMES["CS3"],
}


def _check_keys(keys: Iterable[object], enum_type: type[enum.IntEnum], what: str) -> None:
    """Every member of ``enum_type`` is a key, and nothing else is."""
    got = {_member(enum_type, key) for key in keys}
    missing = [m.name.lower() for m in enum_type if m not in got]
    if missing or None in got:
        extra = [repr(key) for key in keys if _member(enum_type, key) is None]
        raise InvalidTableError(
            f"{what} must map each of {_accepted(enum_type)}: "
            f"missing {', '.join(missing) or 'none'}, unexpected {', '.join(extra) or 'none'}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PrecedenceTable:
    """How each precedence travels on the P1 envelope and on the network.

    STANAG 4406 Annex A defines the qualifier but leaves the pairing with X.411 priority
    to the domain; :data:`DEFAULT_TABLE` holds the common reading.  A table must map the
    six precedences one to one onto the six (priority, qualifier) pairs, so
    :meth:`from_mts` inverts :meth:`to_mts`.
    """

    mts: Mapping[Precedence, MtsLevel] = field(default_factory=lambda: dict(_DEFAULT_MTS))
    """Precedence -> (X.411 priority, priority-level-qualifier) sent on the envelope."""
    unqualified: Mapping[Priority, Precedence] = field(
        default_factory=lambda: dict(_DEFAULT_UNQUALIFIED)
    )
    """Precedence assumed for an envelope that carries a priority but no qualifier."""
    dscps: Mapping[Precedence, int] = field(default_factory=lambda: dict(_DEFAULT_DSCPS))
    """DiffServ code point (0..63) of connections carrying each precedence."""
    _reverse: Mapping[MtsLevel, Precedence] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        mts = self._checked_mts(self.mts)
        reverse: dict[MtsLevel, Precedence] = {}
        for precedence, level in mts.items():
            if level in reverse:
                raise InvalidTableError(
                    f"{reverse[level].label} and {precedence.label} both map to "
                    f"({level[0].label}, {level[1].label}); each precedence needs its own pair"
                )
            reverse[level] = precedence
        unqualified = self._checked_unqualified(self.unqualified, mts)
        dscps = self._checked_dscps(self.dscps)
        object.__setattr__(self, "mts", MappingProxyType(mts))
        object.__setattr__(self, "unqualified", MappingProxyType(unqualified))
        object.__setattr__(self, "dscps", MappingProxyType(dscps))
        object.__setattr__(self, "_reverse", MappingProxyType(reverse))

    def __hash__(self) -> int:
        return hash(
            (
                tuple(sorted(self.mts.items())),
                tuple(sorted(self.unqualified.items())),
                tuple(sorted(self.dscps.items())),
            )
        )

    @staticmethod
    def _checked_mts(raw: Mapping[Precedence, MtsLevel]) -> dict[Precedence, MtsLevel]:
        _check_keys(raw, Precedence, "mts")
        result: dict[Precedence, MtsLevel] = {}
        for key, pair in raw.items():
            precedence = Precedence(key)
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise InvalidTableError(
                    f"mts[{precedence.label}] = {pair!r} is not a (priority, qualifier) pair"
                )
            result[precedence] = (
                _coerce(Priority, pair[0], f"mts[{precedence.label}] priority"),
                _coerce(LevelQualifier, pair[1], f"mts[{precedence.label}] qualifier"),
            )
        return result

    @staticmethod
    def _checked_unqualified(
        raw: Mapping[Priority, Precedence], mts: Mapping[Precedence, MtsLevel]
    ) -> dict[Priority, Precedence]:
        _check_keys(raw, Priority, "unqualified")
        result: dict[Priority, Precedence] = {}
        for key, value in raw.items():
            priority = Priority(key)
            precedence = _member(Precedence, value)
            if precedence is None:
                raise InvalidTableError(
                    f"unqualified[{priority.label}] = {value!r} "
                    f"is not one of {_PRECEDENCE_ACCEPTED}"
                )
            if mts[precedence][0] is not priority:
                raise InvalidTableError(
                    f"unqualified[{priority.label}] = {precedence.label}, but {precedence.label} "
                    f"is sent as priority {mts[precedence][0].label}"
                )
            result[priority] = precedence
        return result

    @staticmethod
    def _checked_dscps(raw: Mapping[Precedence, int]) -> dict[Precedence, int]:
        _check_keys(raw, Precedence, "dscps")
        return {
            Precedence(key): check_dscp(value, f"{Precedence(key).label} DSCP")
            for key, value in raw.items()
        }

    def to_mts(self, precedence: Precedence) -> MtsLevel:
        """The (X.411 priority, priority-level-qualifier) to put on the envelope."""
        return self.mts[_coerce_precedence(precedence)]

    def from_mts(self, priority: Priority, qualifier: LevelQualifier | None) -> Precedence:
        """The precedence an envelope's priority and optional qualifier stand for.

        Raises :class:`InvalidMtsLevelError` for a value outside the enumerations (a
        peer's envelope may carry anything).
        """
        checked = _coerce(Priority, priority, "priority")
        if qualifier is None:
            return self.unqualified[checked]
        level = _coerce(LevelQualifier, qualifier, "priority-level-qualifier")
        return self._reverse[(checked, level)]

    def dscp(self, precedence: Precedence) -> int:
        """The DiffServ code point for connections carrying ``precedence``."""
        return self.dscps[_coerce_precedence(precedence)]

    def with_dscp(self, overrides: Mapping[Precedence, int]) -> PrecedenceTable:
        """A copy with some code points replaced; the others are kept."""
        dscps = dict(self.dscps)
        for key, value in overrides.items():
            dscps[_coerce_precedence(key)] = value
        return PrecedenceTable(mts=self.mts, unqualified=self.unqualified, dscps=dscps)

    def with_mts(
        self,
        overrides: Mapping[Precedence, MtsLevel],
        unqualified: Mapping[Priority, Precedence] | None = None,
    ) -> PrecedenceTable:
        """A copy with some envelope pairs (and optionally the unqualified readings) replaced."""
        mts = dict(self.mts)
        for key, value in overrides.items():
            mts[_coerce_precedence(key)] = value
        return PrecedenceTable(
            mts=mts,
            unqualified=self.unqualified if unqualified is None else unqualified,
            dscps=self.dscps,
        )


def _coerce_precedence(value: object) -> Precedence:
    precedence = _member(Precedence, value)
    if precedence is not None:
        return precedence
    raise UnknownPrecedenceError(f"precedence {value!r} is not one of {_PRECEDENCE_ACCEPTED}")


DEFAULT_TABLE = PrecedenceTable()
"""The common STANAG 4406 reading and class-selector DSCPs (CS0, CS0, CS1, CS2, CS3, CS3)."""
