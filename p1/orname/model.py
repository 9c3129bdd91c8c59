"""O/R name models: ORAddress, ORName, ExtensionAttribute, validation and canonical forms.

X.402 clause 18, X.411 clause 18.5.  Import from :mod:`p1.mts.orname`, which documents the
whole API and re-exports these with the text forms (:mod:`p1.orname.text`) and the BER
codec (:mod:`p1.orname.ber`).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from p1.ber.reader import read_single
from p1.ber.values import escape_controls, is_control
from p1.errors import DecodeError

MODULE = "MTSAbstractService"
NAME_MODULE = "InformationFramework"  # X.501: where MTSAbstractService imports Name from

# X.411 annex B, MTSUpperBounds.
UB_COUNTRY_NAME_ALPHA_LENGTH = 2
UB_COUNTRY_NAME_NUMERIC_LENGTH = 3
UB_DOMAIN_NAME_LENGTH = 16
UB_ORGANIZATION_NAME_LENGTH = 64
UB_ORGANIZATIONAL_UNIT_NAME_LENGTH = 32
UB_ORGANIZATIONAL_UNITS = 4
UB_SURNAME_LENGTH = 40
UB_GIVEN_NAME_LENGTH = 16
UB_INITIALS_LENGTH = 5
UB_GENERATION_QUALIFIER_LENGTH = 3
UB_COMMON_NAME_LENGTH = 64
UB_X121_ADDRESS_LENGTH = 16
UB_TERMINAL_ID_LENGTH = 24
UB_NUMERIC_USER_ID_LENGTH = 32
UB_DOMAIN_DEFINED_ATTRIBUTES = 4
UB_DOMAIN_DEFINED_ATTRIBUTE_TYPE_LENGTH = 8
UB_DOMAIN_DEFINED_ATTRIBUTE_VALUE_LENGTH = 128
UB_EXTENSION_ATTRIBUTES = 256

# X.680 41.4 (PrintableString) and 41.2 (NumericString).
PRINTABLE_CHARACTERS = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 '()+,-./:=?"
)
NUMERIC_CHARACTERS = frozenset("0123456789 ")
_DIGITS = frozenset("0123456789")


# X.411 clause 18.5: ExtensionAttributeType ::= INTEGER { common-name (1),
# teletex-common-name (2), ... universal-local-postal-attributes (40) }: numbered from 1
# in the order listed here.
ExtensionAttributeType = enum.IntEnum(
    "ExtensionAttributeType",
    (
        "COMMON_NAME TELETEX_COMMON_NAME TELETEX_ORGANIZATION_NAME TELETEX_PERSONAL_NAME "
        "TELETEX_ORGANIZATIONAL_UNIT_NAMES TELETEX_DOMAIN_DEFINED_ATTRIBUTES PDS_NAME "
        "PHYSICAL_DELIVERY_COUNTRY_NAME POSTAL_CODE PHYSICAL_DELIVERY_OFFICE_NAME "
        "PHYSICAL_DELIVERY_OFFICE_NUMBER EXTENSION_OR_ADDRESS_COMPONENTS "
        "PHYSICAL_DELIVERY_PERSONAL_NAME PHYSICAL_DELIVERY_ORGANIZATION_NAME "
        "EXTENSION_PHYSICAL_DELIVERY_ADDRESS_COMPONENTS UNFORMATTED_POSTAL_ADDRESS "
        "STREET_ADDRESS POST_OFFICE_BOX_ADDRESS POSTE_RESTANTE_ADDRESS UNIQUE_POSTAL_NAME "
        "LOCAL_POSTAL_ATTRIBUTES EXTENDED_NETWORK_ADDRESS TERMINAL_TYPE "
        "UNIVERSAL_COMMON_NAME UNIVERSAL_ORGANIZATION_NAME UNIVERSAL_PERSONAL_NAME "
        "UNIVERSAL_ORGANIZATIONAL_UNIT_NAMES UNIVERSAL_DOMAIN_DEFINED_ATTRIBUTES "
        "UNIVERSAL_PHYSICAL_DELIVERY_OFFICE_NAME "
        "UNIVERSAL_PHYSICAL_DELIVERY_OFFICE_NUMBER "
        "UNIVERSAL_EXTENSION_OR_ADDRESS_COMPONENTS "
        "UNIVERSAL_PHYSICAL_DELIVERY_PERSONAL_NAME "
        "UNIVERSAL_PHYSICAL_DELIVERY_ORGANIZATION_NAME "
        "UNIVERSAL_EXTENSION_PHYSICAL_DELIVERY_ADDRESS_COMPONENTS "
        "UNIVERSAL_UNFORMATTED_POSTAL_ADDRESS UNIVERSAL_STREET_ADDRESS "
        "UNIVERSAL_POST_OFFICE_BOX_ADDRESS UNIVERSAL_POSTE_RESTANTE_ADDRESS "
        "UNIVERSAL_UNIQUE_POSTAL_NAME UNIVERSAL_LOCAL_POSTAL_ATTRIBUTES"
    ),
)


# ExtensionAttribute ::= SEQUENCE {
#   extension-attribute-type  [0] EXTENSION-ATTRIBUTE.&id({ExtensionAttributeTable}),
#   extension-attribute-value [1] EXTENSION-ATTRIBUTE.&Type
#                                   ({ExtensionAttributeTable}{@extension-attribute-type}) }
@dataclass(frozen=True, slots=True, kw_only=True)
class ExtensionAttribute:
    """An extension attribute not modelled here, kept byte-exact (X.411 clause 18.5)."""

    type: int
    """The ExtensionAttributeType number (see :class:`ExtensionAttributeType`)."""
    value: bytes
    """The BER of the value, without the ``[1]`` tag around it."""


# ORAddress ::= SEQUENCE {
#   built-in-standard-attributes        BuiltInStandardAttributes,
#   built-in-domain-defined-attributes  BuiltInDomainDefinedAttributes OPTIONAL,
#   extension-attributes                ExtensionAttributes OPTIONAL }
# BuiltInStandardAttributes ::= SEQUENCE {
#   country-name CountryName OPTIONAL, administration-domain-name AdministrationDomainName
#   OPTIONAL, network-address [0] NetworkAddress OPTIONAL, terminal-identifier [1]
#   TerminalIdentifier OPTIONAL, private-domain-name [2] PrivateDomainName OPTIONAL,
#   organization-name [3] OrganizationName OPTIONAL, numeric-user-identifier [4]
#   NumericUserIdentifier OPTIONAL, personal-name [5] PersonalName OPTIONAL,
#   organizational-unit-names [6] OrganizationalUnitNames OPTIONAL }
# PersonalName ::= SET { surname [0] ..., given-name [1] ... OPTIONAL,
#   initials [2] ... OPTIONAL, generation-qualifier [3] ... OPTIONAL }
@dataclass(frozen=True, kw_only=True)
class ORAddress:
    """An O/R address (X.402 clause 18.3, X.411 clause 18.5).

    Values are kept exactly as given or received; :meth:`problems` lists what breaks
    X.411's upper bounds and alphabets, and :attr:`canonical` is the comparison form.
    """

    country: str | None = None
    """country-name: ISO 3166 alpha-2 code or X.121 DCC (three digits)."""
    admd: str | None = None
    """administration-domain-name; a single space means any ADMD."""
    prmd: str | None = None
    """private-domain-name."""
    organization: str | None = None
    organizational_units: tuple[str, ...] = ()
    """organizational-unit-names, the highest unit first (at most four)."""
    surname: str | None = None
    given_name: str | None = None
    initials: str | None = None
    generation_qualifier: str | None = None
    common_name: str | None = None
    """The common-name extension attribute (type 1), a PrintableString."""
    network_address: str | None = None
    """network-address, an X.121 address (NumericString)."""
    terminal_identifier: str | None = None
    numeric_user_identifier: str | None = None
    domain_defined: tuple[tuple[str, str], ...] = ()
    """built-in-domain-defined-attributes as (type, value) pairs, in order."""
    extension_attributes: tuple[ExtensionAttribute, ...] = ()
    """Extension attributes other than common-name, in the order received."""
    country_numeric: bool | None = None
    """Whether country travels as NumericString; None: digits are numeric, others not."""
    admd_numeric: bool | None = None
    """As ``country_numeric``, for the ADMD."""
    prmd_numeric: bool | None = None
    """As ``country_numeric``, for the PRMD."""
    common_name_position: int | None = None
    """Index of common-name among the extension attributes on the wire; None: first."""

    def __post_init__(self) -> None:
        # Store each form flag only where it departs from what the value implies, so
        # an address read from text equals the same address decoded from BER.  (The
        # quick tests first: names are built by the thousand.)
        if not (
            self.country_numeric is None and self.admd_numeric is None and self.prmd_numeric is None
        ):
            for value_field, flag_field in _FORM_FLAGS:
                value = getattr(self, value_field)
                flag = getattr(self, flag_field)
                if flag is not None and (value is None or flag == _looks_numeric(value)):
                    object.__setattr__(self, flag_field, None)
        position = self.common_name_position
        if position is not None and (self.common_name is None or position == 0):
            object.__setattr__(self, "common_name_position", None)
        if not (
            isinstance(self.organizational_units, tuple)
            and isinstance(self.domain_defined, tuple)
            and isinstance(self.extension_attributes, tuple)
        ):
            for name in ("organizational_units", "domain_defined", "extension_attributes"):
                value = getattr(self, name)
                if not isinstance(value, tuple):
                    object.__setattr__(self, name, tuple(value))

    def is_numeric(self, value_field: Literal["country", "admd", "prmd"]) -> bool:
        """Whether ``value_field`` is (to be) encoded as NumericString."""
        return _is_numeric(self, value_field)

    def problems(self) -> tuple[str, ...]:
        """What breaks X.411's upper bounds, alphabets and structure; empty if nothing."""
        return tuple(_problems(self))

    @functools.cached_property
    def canonical(self) -> str:
        """The comparison and routing key: fixed order, case folded, spaces collapsed.

        Computed once per object (a name is immutable), then read from the instance.
        """
        return _canonical(self)

    def same_as(self, other: ORAddress) -> bool:
        """Whether X.411 would consider the two the same name (compares :attr:`canonical`)."""
        return self.canonical == other.canonical

    def route_key(self) -> tuple[str, ...]:
        """(C, ADMD, PRMD, O, OU1, ...) folded as in :attr:`canonical`, for prefix routing.

        An absent component inside the tuple is ``""``; trailing absent ones are left out.
        Computed once per object, like :attr:`canonical`: a router matches it against
        every prefix.
        """
        key: tuple[str, ...] | None = self.__dict__.get(_ROUTE_KEY)
        if key is None:
            key = self.__dict__[_ROUTE_KEY] = _route_key(self)
        return key


# ORName ::= [APPLICATION 0] SEQUENCE {
#   COMPONENTS OF ORAddress,
#   directory-name [0] Name OPTIONAL }
@dataclass(frozen=True, kw_only=True)
class ORName(ORAddress):
    """An O/R name: an O/R address and optionally a directory name (X.411 clause 18.5).

    ORName subclasses :class:`ORAddress`: every address attribute is read directly
    (``name.surname``).  The address is semantically absent when it has no attribute.
    """

    directory_name: bytes | None = None
    """The BER of the X.500 Name (X.501 clause 9.2), as received or given."""

    @property
    def address(self) -> ORAddress:
        """The O/R address part, as an :class:`ORAddress`."""
        return ORAddress(**_address_fields(self))

    @classmethod
    def from_address(cls, address: ORAddress, directory_name: bytes | None = None) -> ORName:
        """An O/R name from an address and an optional directory name."""
        return cls(**_address_fields(address), directory_name=directory_name)


_FORM_FLAGS = (
    ("country", "country_numeric"),
    ("admd", "admd_numeric"),
    ("prmd", "prmd_numeric"),
)
_ADDRESS_FIELDS = tuple(f.name for f in dataclasses.fields(ORAddress))


_A = TypeVar("_A", bound=ORAddress)
_DEFAULTS: dict[type[ORAddress], dict[str, Any]] = {
    cls: {f.name: f.default for f in dataclasses.fields(cls)} for cls in (ORAddress, ORName)
}
"""Every field's default, by class.  The BER reader makes a name with ``_new(cls)``,
copies these into its instance dictionary and sets the fields it reads there, as
``__post_init__`` would leave them: the generated ``__init__`` of a frozen dataclass
sets its twenty-odd fields one ``object.__setattr__`` call at a time, and an envelope
and its heading decode several names.  (This is why the two classes keep a
``__dict__`` rather than slots; values derived from the fields, such as
:attr:`ORAddress.canonical`, are kept there too once computed.)"""

_new = object.__new__


_ROUTE_KEY = "_route_key"
"""Where :meth:`ORAddress.route_key` keeps its value in the instance dictionary (not a
field: equality, hashing, ``repr`` and ``dataclasses.replace`` never see it)."""


def _route_key(address: ORAddress) -> tuple[str, ...]:
    units = address.organizational_units
    parts = [address.country, address.admd, address.prmd, address.organization, *units]
    key = ["" if part is None else _fold(part) for part in parts]
    while key and key[-1] == "":
        key.pop()
    return tuple(key)


def _address_fields(address: ORAddress) -> dict[str, Any]:
    return {name: getattr(address, name) for name in _ADDRESS_FIELDS}


def _is_numeric(address: ORAddress, value_field: str) -> bool:
    flag: bool | None = getattr(address, f"{value_field}_numeric")
    value: str | None = getattr(address, value_field)
    return flag if flag is not None else value is not None and _looks_numeric(value)


def _looks_numeric(value: str) -> bool:
    if type(value) is str:
        return value.isascii() and value.isdigit()  # the same test, faster
    return bool(value) and set(value) <= _DIGITS


def _fold(value: str) -> str:
    """X.411 comparison form: case folded, runs of spaces collapsed, ends trimmed.

    A value of spaces only (the "any ADMD" single space) stays one space.
    """
    words = value.casefold().split(" ")
    joined = " ".join(word for word in words if word)
    return joined if joined or not value else " "


# --- validation -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Simple:
    """A single-valued text attribute: its key, field, alphabet and upper bound."""

    key: str
    field: str
    alphabet: Literal["printable", "numeric", "domain"]
    bound: int
    bound_name: str
    slash_key: str = ""


_SIMPLE: tuple[_Simple, ...] = (
    _Simple("ADMD", "admd", "domain", UB_DOMAIN_NAME_LENGTH, "ub-domain-name-length", "A"),
    _Simple("PRMD", "prmd", "domain", UB_DOMAIN_NAME_LENGTH, "ub-domain-name-length", "P"),
    _Simple(
        "O", "organization", "printable", UB_ORGANIZATION_NAME_LENGTH,
        "ub-organization-name-length",
    ),
    _Simple("S", "surname", "printable", UB_SURNAME_LENGTH, "ub-surname-length"),
    _Simple("G", "given_name", "printable", UB_GIVEN_NAME_LENGTH, "ub-given-name-length"),
    _Simple("I", "initials", "printable", UB_INITIALS_LENGTH, "ub-initials-length"),
    _Simple(
        "Q", "generation_qualifier", "printable", UB_GENERATION_QUALIFIER_LENGTH,
        "ub-generation-qualifier-length",
    ),
    _Simple("CN", "common_name", "printable", UB_COMMON_NAME_LENGTH, "ub-common-name-length"),
    _Simple(
        "X121", "network_address", "numeric", UB_X121_ADDRESS_LENGTH, "ub-x121-address-length"
    ),
    _Simple(
        "T-ID", "terminal_identifier", "printable", UB_TERMINAL_ID_LENGTH,
        "ub-terminal-id-length",
    ),
    _Simple(
        "UA-ID", "numeric_user_identifier", "numeric", UB_NUMERIC_USER_ID_LENGTH,
        "ub-numeric-user-id-length",
    ),
)  # fmt: skip
# Text order: C, then these, then the OUs, then the rest.
_BEFORE_UNITS, _AFTER_UNITS = _SIMPLE[:3], _SIMPLE[3:]


def _alphabet_problem(key: str, value: str, numeric: bool) -> str | None:
    allowed, name = (
        (NUMERIC_CHARACTERS, "NumericString")
        if numeric
        else (PRINTABLE_CHARACTERS, "PrintableString")
    )
    bad = sorted(set(value) - allowed)
    if not bad:
        return None
    return f"value of `{key}` has characters outside {name}: {', '.join(map(repr, bad))}"


def _string_problem(
    key: str, value: str, bound: int, bound_name: str, numeric: bool, may_be_empty: bool = False
) -> str | None:
    if not value and not may_be_empty:
        return f"empty value for `{key}`"
    if len(value) > bound:
        return f"value of `{key}` is {len(value)} characters, more than {bound_name} ({bound})"
    return _alphabet_problem(key, value, numeric)


def _country_problem(address: ORAddress) -> str | None:
    value = address.country
    if value is None:
        return None
    if address.is_numeric("country"):
        if len(value) != UB_COUNTRY_NAME_NUMERIC_LENGTH:
            return (
                f"value of `C` must be 3 digits (X.121 DCC) or 2 letters (ISO 3166), not {value!r}"
            )
        return _alphabet_problem("C", value, numeric=True)
    if len(value) != UB_COUNTRY_NAME_ALPHA_LENGTH:
        return f"value of `C` must be 2 letters (ISO 3166) or 3 digits (X.121 DCC), not {value!r}"
    return _alphabet_problem("C", value, numeric=False)


def _simple_problems(address: ORAddress) -> Iterable[str | None]:
    for spec in _SIMPLE:
        value = getattr(address, spec.field)
        if value is None:
            continue
        numeric = spec.alphabet == "numeric" or (
            spec.alphabet == "domain" and _is_numeric(address, spec.field)
        )
        # AdministrationDomainName is SIZE (0..ub-domain-name-length).
        yield _string_problem(
            spec.key, value, spec.bound, spec.bound_name, numeric, may_be_empty=spec.key == "ADMD"
        )


def _unit_problems(address: ORAddress) -> Iterable[str | None]:
    if len(address.organizational_units) > UB_ORGANIZATIONAL_UNITS:
        yield f"more than {UB_ORGANIZATIONAL_UNITS} `OU` (ub-organizational-units)"
    for unit in address.organizational_units:
        yield _string_problem(
            "OU", unit, UB_ORGANIZATIONAL_UNIT_NAME_LENGTH, "ub-organizational-unit-name-length",
            numeric=False,
        )  # fmt: skip


def _personal_problems(address: ORAddress) -> Iterable[str | None]:
    if address.surname is None:
        for key, value in (
            ("G", address.given_name),
            ("I", address.initials),
            ("Q", address.generation_qualifier),
        ):
            if value is not None:
                yield f"`{key}` without `S` (personal-name needs a surname)"


def _dda_problems(address: ORAddress) -> Iterable[str | None]:
    if len(address.domain_defined) > UB_DOMAIN_DEFINED_ATTRIBUTES:
        yield f"more than {UB_DOMAIN_DEFINED_ATTRIBUTES} `DDA` (ub-domain-defined-attributes)"
    for dda_type, dda_value in address.domain_defined:
        yield _string_problem(
            "DDA type", dda_type, UB_DOMAIN_DEFINED_ATTRIBUTE_TYPE_LENGTH,
            "ub-domain-defined-attribute-type-length", numeric=False,
        )  # fmt: skip
        yield _string_problem(
            f"DDA:{dda_type}", dda_value, UB_DOMAIN_DEFINED_ATTRIBUTE_VALUE_LENGTH,
            "ub-domain-defined-attribute-value-length", numeric=False,
        )  # fmt: skip


def _extension_problems(address: ORAddress) -> Iterable[str | None]:
    count = len(address.extension_attributes) + (address.common_name is not None)
    if count > UB_EXTENSION_ATTRIBUTES:
        yield f"more than {UB_EXTENSION_ATTRIBUTES} extension attributes (ub-extension-attributes)"
    for attribute in address.extension_attributes:
        if not 0 <= attribute.type <= UB_EXTENSION_ATTRIBUTES:
            yield f"extension attribute type {attribute.type} is outside 0..256"
        if not _is_single_tlv(attribute.value):
            yield f"value of `EXT:{attribute.type}` is not one BER value"


_CHECKS: tuple[Callable[[ORAddress], Iterable[str | None]], ...] = (
    lambda address: (_country_problem(address),),
    _simple_problems,
    _unit_problems,
    _personal_problems,
    _dda_problems,
    _extension_problems,
)


def _problems(address: ORAddress) -> Iterable[str]:
    for check in _CHECKS:
        yield from (problem for problem in check(address) if problem is not None)
    directory_name = address.directory_name if isinstance(address, ORName) else None
    if directory_name is not None and not _is_single_tlv(directory_name):
        yield "value of `DN` is not one BER value"


def _is_single_tlv(data: bytes) -> bool:
    """``data`` is exactly one BER value (X.690 8.1), in any legal form."""
    try:
        read_single(data, "DN")
    except DecodeError:
        return False
    return True


# --- canonical forms ----------------------------------------------------------------


def _escape(value: str, separator: str, specials: str = "") -> str:
    """``value`` as the text forms write it: a backslash before a backslash, the
    separator and ``specials``, and before a space (or other white space) at either end
    but a control character, which :func:`_written` escapes in the whole text."""
    escape = {"\\", separator, *specials}
    out = ["\\" + char if char in escape else char for char in value]
    if value and value[0].isspace() and not is_control(value[0]):
        out[0] = "\\" + value[0]
    if value and value[-1].isspace() and not is_control(value[-1]):
        out[-1] = "\\" + value[-1]
    return "".join(out)


def _written(text: str) -> str:
    """A text form as written: every control character as ``\\xHH`` or ``\\uHHHH``
    (:func:`p1.ber.values.escape_controls`, which the parser reads back), so that no
    text form holds one, whatever the name was made from.  (:func:`_escape` leaves
    them alone: none needs a backslash of its own.)"""
    return escape_controls(text)


def _text_pairs(address: ORAddress, fold: bool, short: bool) -> list[tuple[str, str, bool]]:
    """(key, value, key needs escaping) in the fixed text order."""
    norm: Callable[[str], str] = _fold if fold else str
    pairs: list[tuple[str, str, bool]] = []
    if address.country is not None:
        pairs.append(("C", norm(address.country), False))
    for spec in _BEFORE_UNITS:
        value = getattr(address, spec.field)
        if value is not None:
            pairs.append(((short and spec.slash_key) or spec.key, norm(value), False))
    pairs.extend(("OU", norm(unit), False) for unit in address.organizational_units)
    for spec in _AFTER_UNITS:
        value = getattr(address, spec.field)
        if value is not None:
            pairs.append((spec.key, norm(value), False))
    pairs.extend(("DDA:" + norm(t), norm(v), True) for t, v in address.domain_defined)
    extensions = address.extension_attributes
    if fold:
        extensions = tuple(sorted(extensions, key=lambda a: (a.type, a.value)))
    pairs.extend((f"EXT:{a.type}", "#" + a.value.hex(), False) for a in extensions)
    directory_name = address.directory_name if isinstance(address, ORName) else None
    if directory_name is not None and not (fold and pairs):
        pairs.append(("DN", "#" + directory_name.hex(), False))
    return pairs


def _render(pairs: list[tuple[str, str, bool]], separator: str) -> list[str]:
    rendered = []
    for key, value, escape_key in pairs:
        shown_key = "DDA:" + _escape(key[4:], separator, "=") if escape_key else key
        any_admd = key in ("ADMD", "A") and value == " "
        rendered.append(f"{shown_key}={' ' if any_admd else _escape(value, separator)}")
    return rendered


def _canonical(address: ORAddress) -> str:
    return _written(";".join(_render(_text_pairs(address, True, False), ";")))
