"""O/R names and O/R addresses (X.402 clause 18, X.411 clause 18.5).

Models::

    ExtensionAttribute(type=int, value=bytes)   an extension attribute kept as received
    ORAddress(country=..., admd=..., ..., common_name=..., extension_attributes=(...))
    ORName(ORAddress) + directory_name          (ORName subclasses ORAddress)

Text forms (:func:`parse_orname`, :func:`format_orname`)::

    C=GB;ADMD= ;PRMD=NATO;O=ACT;OU=J6;S=Smith;G=John;CN=Duty Officer     "semicolon"
    /C=gb/A= /P=smhs/O=percival/S=gal/                                   "slash"

Keys are case-insensitive: C, ADMD or A, PRMD or P, O, OU (repeated, up to four) or
OU1..OU4, S or SURNAME, G or GIVENNAME, I or INITIALS, Q or GQ or GENERATION, CN, X121 or
NA, T-ID or TID, UA-ID or N-ID, ``DDA:type=value`` (also ``DD.type``) for a
domain-defined attribute, ``EXT:n=#hex`` for an extension attribute held as its BER
value, and ``DN=#hex`` for the directory name (BER of the X.500 Name).  The slash form
starts with ``/``; its final ``/`` is optional.

Escaping: a backslash makes the next character literal, so ``\\;`` and ``\\/`` put a
separator inside a value, ``\\\\`` is a backslash, and ``\\ `` keeps a leading or
trailing space (unescaped spaces around keys and values are dropped).  An ADMD of a
single space (``ADMD= ``, "any ADMD") is written and read as is.  Empty values are
errors.  Text does not say whether a digit string travels as NumericString or
PrintableString: digits are read as NumericString (see ``*_numeric`` below).

Comparison (``canonical``, ``same_as``, ``route_key``): X.411 compares these
attributes ignoring case and redundant spaces, so the canonical form folds case,
collapses runs of spaces and lists attributes in a fixed order.

BER (MTSAbstractService.ORName / ORAddress) and the asn1tools values of the same::

    encode_orname(name) -> bytes      decode_orname(data) -> ORName
    encode_oraddress(addr) -> bytes   decode_oraddress(data) -> ORAddress
    orname_to_asn1(name) -> dict      orname_from_asn1(value) -> ORName
    oraddress_to_asn1(addr) -> dict   oraddress_from_asn1(value) -> ORAddress

``encode_*`` and ``decode_*`` read and write the BER directly (an envelope or heading
holds several names, and asn1tools costs several times as much); encodings the direct
reader does not take (indefinite lengths, segmented strings, members out of order,
and every malformed one) are decoded by asn1tools, so both give the same results.

A decoded value re-encodes to the bytes received when those were definite-length,
minimal BER (what DER senders produce): the string form of country and domain names
(``country_numeric``, ``admd_numeric``, ``prmd_numeric``), the position of common-name
among the extension attributes (``common_name_position``) and every extension
attribute we do not model (raw, in order) are recorded.  A common-name whose encoding
we would not reproduce is kept raw too.  The directory name is carried as BER bytes;
while the module types ``directory-name`` as ``Name`` the codec re-encodes it, which
is exact for DER Names only (a Name sent with a DEFAULT value present, for instance,
comes back without it); as ``[0] ANY`` it is passed through untouched.  Decoding is
liberal: values beyond the upper bounds decode, and :meth:`ORAddress.problems` says
what is wrong with them.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from p1 import asn1
from p1 import envelope_ber as ber
from p1.errors import CodecError, DecodeError, EncodeError

__all__ = [
    "ExtensionAttribute",
    "ExtensionAttributeType",
    "ORAddress",
    "ORName",
    "decode_oraddress",
    "decode_orname",
    "encode_oraddress",
    "encode_orname",
    "format_orname",
    "oraddress_from_asn1",
    "oraddress_to_asn1",
    "orname_from_asn1",
    "orname_to_asn1",
    "parse_orname",
]

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
@dataclass(frozen=True, slots=True, kw_only=True)
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

    @property
    def canonical(self) -> str:
        """The comparison and routing key: fixed order, case folded, spaces collapsed."""
        return _canonical(self)

    def same_as(self, other: ORAddress) -> bool:
        """Whether X.411 would consider the two the same name (compares :attr:`canonical`)."""
        return self.canonical == other.canonical

    def route_key(self) -> tuple[str, ...]:
        """(C, ADMD, PRMD, O, OU1, ...) folded as in :attr:`canonical`, for prefix routing.

        An absent component inside the tuple is ``""``; trailing absent ones are left out.
        """
        parts = [self.country, self.admd, self.prmd, self.organization, *self.organizational_units]
        key = ["" if part is None else _fold(part) for part in parts]
        while key and key[-1] == "":
            key.pop()
        return tuple(key)


# ORName ::= [APPLICATION 0] SEQUENCE {
#   COMPONENTS OF ORAddress,
#   directory-name [0] Name OPTIONAL }
@dataclass(frozen=True, slots=True, kw_only=True)
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


_SIMPLE = (
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


def _tlv_end(data: bytes, offset: int) -> int:
    """Offset just past the BER TLV at ``offset`` (X.690 8.1); raises ValueError."""
    first = data[offset]
    offset += 1
    if first & 0x1F == 0x1F:
        while data[offset] & 0x80:
            offset += 1
        offset += 1
    length = data[offset]
    offset += 1
    if length == 0x80:
        if not first & 0x20:
            raise ValueError("indefinite length on a primitive value")
        while data[offset : offset + 2] != b"\0\0":
            offset = _tlv_end(data, offset)
        return offset + 2
    if length & 0x80:
        count = length & 0x7F
        if offset + count > len(data):
            raise ValueError("truncated length")
        length = int.from_bytes(data[offset : offset + count], "big")
        offset += count
    if offset + length > len(data):
        raise ValueError("truncated value")
    return offset + length


def _is_single_tlv(data: bytes) -> bool:
    try:
        return bool(data) and _tlv_end(data, 0) == len(data)
    except (ValueError, IndexError, RecursionError):
        return False


# --- text -----------------------------------------------------------------------------

Style = Literal["semicolon", "slash"]
_WHERE = "O/R name"

_KEYS: dict[str, str] = {
    alias: key
    for key, aliases in (
        ("C", "C"),
        ("ADMD", "ADMD A"),
        ("PRMD", "PRMD P"),
        ("O", "O"),
        ("OU", "OU"),
        *((f"OU{n}", f"OU{n}") for n in range(1, UB_ORGANIZATIONAL_UNITS + 1)),
        ("S", "S SURNAME"),
        ("G", "G GIVENNAME"),
        ("I", "I INITIALS"),
        ("Q", "Q GQ GENERATION"),
        ("CN", "CN"),
        ("X121", "X121 NA"),
        ("T-ID", "T-ID TID"),
        ("UA-ID", "UA-ID N-ID"),
        ("DN", "DN"),
    )
    for alias in aliases.split()
}
_FIELD_BY_KEY = {"C": "country", **{spec.key: spec.field for spec in _SIMPLE}}
_DDA_PREFIXES = frozenset({"DDA", "DD"})
_EXT_PREFIX = "EXT"

_Token = tuple[str, bool]  # a character and whether it was backslash-escaped


def _error(why: str) -> DecodeError:
    return DecodeError(why, where=_WHERE)


def _lex(text: str, separator: str) -> list[list[_Token]]:
    """Split ``text`` at unescaped ``separator``s, resolving backslash escapes."""
    segments: list[list[_Token]] = []
    current: list[_Token] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            escaped = next(chars, None)
            if escaped is None:
                raise _error("the text ends with a lone backslash")
            current.append((escaped, True))
        elif char == separator:
            segments.append(current)
            current = []
        else:
            current.append((char, False))
    segments.append(current)
    return segments


def _strip(tokens: list[_Token]) -> list[_Token]:
    start, end = 0, len(tokens)
    while start < end and not tokens[start][1] and tokens[start][0].isspace():
        start += 1
    while end > start and not tokens[end - 1][1] and tokens[end - 1][0].isspace():
        end -= 1
    return tokens[start:end]


def _join(tokens: list[_Token]) -> str:
    return "".join(char for char, _ in tokens)


def _find(tokens: list[_Token], chars: str) -> int | None:
    return next((i for i, (c, escaped) in enumerate(tokens) if c in chars and not escaped), None)


@dataclass(slots=True)
class _Builder:
    """Attributes collected from text, in the shapes ORName takes."""

    fields: dict[str, Any] = dataclasses.field(default_factory=dict)
    units: dict[int, str] = dataclasses.field(default_factory=dict)
    next_unit: int = 0
    domain_defined: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    extensions: list[ExtensionAttribute] = dataclasses.field(default_factory=list)

    def set_once(self, key: str, field: str, value: object) -> None:
        if field in self.fields:
            raise _error(f"`{key}` given twice")
        self.fields[field] = value

    def add_unit(self, key: str, value: str) -> None:
        index = self.next_unit if key == "OU" else int(key[2:]) - 1
        if index >= UB_ORGANIZATIONAL_UNITS:
            raise _error(f"more than {UB_ORGANIZATIONAL_UNITS} `OU` (ub-organizational-units)")
        if index in self.units:
            raise _error(f"`OU{index + 1}` given twice")
        self.units[index] = value
        self.next_unit = index + 1

    def organizational_units(self) -> tuple[str, ...]:
        for index in sorted(self.units):
            if index > 0 and index - 1 not in self.units:
                raise _error(f"`OU{index + 1}` without `OU{index}`")
        return tuple(self.units[index] for index in sorted(self.units))

    def build(self) -> ORName:
        return ORName(
            **self.fields,
            organizational_units=self.organizational_units(),
            domain_defined=tuple(self.domain_defined),
            extension_attributes=tuple(self.extensions),
        )


def _hex_value(key: str, value: str) -> bytes:
    if value.startswith("#"):
        try:
            return bytes.fromhex(value[1:])
        except ValueError:
            pass
    raise _error(f"value of `{key}` must be `#` followed by hex digits, not {value!r}")


def _take(builder: _Builder, key_tokens: list[_Token], value: str) -> None:
    """Record one ``key=value`` pair (dict dispatch on the key)."""
    raw_key = _join(key_tokens)
    key = _KEYS.get(raw_key.upper())
    if key is None:
        _take_prefixed(builder, key_tokens, raw_key, value)
    elif key == "OU" or key.startswith("OU"):
        builder.add_unit(key, value)
    elif key == "DN":
        builder.set_once(key, "directory_name", _hex_value(key, value))
    else:
        builder.set_once(key, _FIELD_BY_KEY[key], value)


def _take_prefixed(builder: _Builder, key_tokens: list[_Token], raw_key: str, value: str) -> None:
    mark = _find(key_tokens, ":.")
    prefix = _join(key_tokens[:mark]).upper() if mark is not None else None
    if mark is not None and prefix in _DDA_PREFIXES:
        dda_type = _join(_strip(key_tokens[mark + 1 :]))
        builder.domain_defined.append((dda_type, value))
    elif mark is not None and prefix == _EXT_PREFIX and key_tokens[mark][0] == ":":
        number = _join(key_tokens[mark + 1 :]).strip()
        if not (number.isascii() and number.isdigit()):
            raise _error(f"`{raw_key}` needs an extension attribute number, as in `EXT:7`")
        attribute_type = int(number)
        raw = _hex_value(raw_key, value)
        builder.extensions.append(ExtensionAttribute(type=attribute_type, value=raw))
    else:
        raise _error(f"unknown attribute `{raw_key}`")


def parse_orname(text: str) -> ORName:
    """An O/R name from its semicolon or slash text form (see the module docstring).

    Raises :class:`DecodeError` whose ``why`` names the attribute and the problem.
    """
    body = text.lstrip()
    separator = "/" if body.startswith("/") else ";"
    segments = _lex(body[1:] if separator == "/" else body, separator)
    builder = _Builder()
    for tokens in segments:
        if not _strip(tokens):
            continue  # empty segment: a trailing separator or a doubled one
        mark = _find(tokens, "=")
        if mark is None:
            raise _error(f"`{_join(tokens).strip()}` is not of the form key=value")
        key_tokens = _strip(tokens[:mark])
        value_tokens = _strip(tokens[mark + 1 :])
        value = _join(value_tokens)
        if not value:
            value = _blank_value(_join(key_tokens), tokens[mark + 1 :])
        _take(builder, key_tokens, value)
    if (
        not builder.fields
        and not builder.units
        and not builder.domain_defined
        and not builder.extensions
    ):
        raise _error("no attributes: an O/R name needs at least one")
    name = builder.build()
    problems = name.problems()
    if problems:
        raise _error(problems[0])
    return name


def _blank_value(raw_key: str, tokens: list[_Token]) -> str:
    """ADMD of spaces only is the single space "any ADMD"; other blank values are errors."""
    key = _KEYS.get(raw_key.upper(), raw_key)
    if key == "ADMD" and tokens:
        return " "
    raise _error(f"empty value for `{key}`")


def _escape(value: str, separator: str, specials: str = "") -> str:
    escape = {"\\", separator, *specials}
    out = ["\\" + char if char in escape else char for char in value]
    if value and value[0].isspace():
        out[0] = "\\" + value[0]
    if value and value[-1].isspace():
        out[-1] = "\\" + value[-1]
    return "".join(out)


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


def format_orname(name: ORAddress, style: Style = "semicolon") -> str:
    """The text form of an O/R name or address; :func:`parse_orname` reads it back.

    ``"semicolon"``: ``C=GB;ADMD= ;PRMD=NATO;O=ACT;S=Smith``;
    ``"slash"``: ``/C=GB/A= /P=NATO/O=ACT/S=Smith/``.
    """
    if style == "slash":
        return "/" + "".join(f"{part}/" for part in _render(_text_pairs(name, False, True), "/"))
    if style == "semicolon":
        return ";".join(_render(_text_pairs(name, False, False), ";"))
    raise ValueError(f"style {style!r} is not 'semicolon' or 'slash'")


def _canonical(address: ORAddress) -> str:
    return ";".join(_render(_text_pairs(address, True, False), ";"))


# --- codec edge -----------------------------------------------------------------------
#
# asn1tools values: SEQUENCE and SET as dicts keyed by the ASN.1 member names, CHOICE as
# (alternative, value) tuples, SEQUENCE OF / SET OF as lists, ANY as the raw BER bytes.

_CHOICES = (
    # member of BuiltInStandardAttributes, field, (numeric alternative, printable one)
    ("country-name", "country", ("x121-dcc-code", "iso-3166-alpha2-code")),
    ("administration-domain-name", "admd", ("numeric", "printable")),
    ("private-domain-name", "prmd", ("numeric", "printable")),
)
_PLAIN = (
    ("network-address", "network_address"),
    ("terminal-identifier", "terminal_identifier"),
    ("organization-name", "organization"),
    ("numeric-user-identifier", "numeric_user_identifier"),
)
_PERSONAL = (
    ("surname", "surname"),
    ("given-name", "given_name"),
    ("initials", "initials"),
    ("generation-qualifier", "generation_qualifier"),
)
_EXT_TYPE = "extension-attribute-type"
_EXT_VALUE = "extension-attribute-value"
_ASN1_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError)


def _standard_to_asn1(address: ORAddress) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for member, field, (numeric, printable) in _CHOICES:
        value = getattr(address, field)
        if value is not None:
            out[member] = (numeric if _is_numeric(address, field) else printable, value)
    for member, field in _PLAIN:
        value = getattr(address, field)
        if value is not None:
            out[member] = value
    personal = {m: getattr(address, f) for m, f in _PERSONAL if getattr(address, f) is not None}
    if personal:
        out["personal-name"] = personal
    if address.organizational_units:
        out["organizational-unit-names"] = list(address.organizational_units)
    return out


def _extensions_to_asn1(address: ORAddress) -> list[dict[str, Any]]:
    out = [{_EXT_TYPE: a.type, _EXT_VALUE: a.value} for a in address.extension_attributes]
    if address.common_name is not None:
        raw = asn1.encode(MODULE, "CommonName", address.common_name)
        position = min(address.common_name_position or 0, len(out))
        out.insert(position, {_EXT_TYPE: int(ExtensionAttributeType.COMMON_NAME), _EXT_VALUE: raw})
    return out


def oraddress_to_asn1(address: ORAddress) -> dict[str, Any]:
    """The asn1tools value of ``MTSAbstractService.ORAddress``; raises :class:`EncodeError`."""
    value: dict[str, Any] = {"built-in-standard-attributes": _standard_to_asn1(address)}
    if address.domain_defined:
        value["built-in-domain-defined-attributes"] = [
            {"type": dda_type, "value": dda_value} for dda_type, dda_value in address.domain_defined
        ]
    extensions = _extensions_to_asn1(address)
    if extensions:
        value["extension-attributes"] = extensions
    return value


def orname_to_asn1(name: ORName) -> dict[str, Any]:
    """The asn1tools value of ``MTSAbstractService.ORName``; raises :class:`EncodeError`."""
    value = oraddress_to_asn1(name)
    if name.directory_name is not None:
        value["directory-name"] = _directory_name_to_asn1(name.directory_name)
    return value


def _directory_name_to_asn1(data: bytes) -> Any:
    if _directory_name_is_open_type():
        return data
    try:
        return asn1.decode(NAME_MODULE, "Name", data)
    except DecodeError as exc:
        raise EncodeError(f"directory name is not a BER Name: {exc.why}", where="ORName") from exc


@functools.cache
def _directory_name_is_open_type() -> bool:
    """Whether the module declares ``directory-name [0] ANY`` (then values are raw BER)."""
    try:
        members = asn1.codec(MODULE, "ORName")._type.root_members
        member = next(m for m in members if m.name == "directory-name")
        return type(member.inner).__name__ == "Any"
    except (AttributeError, StopIteration, KeyError):
        return False


def _standard_from_asn1(standard: dict[str, Any]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for member, field, (numeric, _printable) in _CHOICES:
        if member in standard:
            alternative, text = standard[member]
            kwargs[field] = _text(text)
            kwargs[f"{field}_numeric"] = alternative == numeric
    for member, field in _PLAIN:
        if member in standard:
            kwargs[field] = _text(standard[member])
    personal = standard.get("personal-name", {})
    for member, field in _PERSONAL:
        if member in personal:
            kwargs[field] = _text(personal[member])
    kwargs["organizational_units"] = tuple(
        _text(unit) for unit in standard.get("organizational-unit-names", ())
    )
    return kwargs


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _common_name_from_ber(raw: bytes) -> str | None:
    """The common name, if ``raw`` is the encoding we would write for it (else keep raw)."""
    try:
        text = asn1.decode(MODULE, "CommonName", raw)
        return text if asn1.encode(MODULE, "CommonName", text) == raw else None
    except CodecError:
        return None


def _extensions_from_asn1(attributes: list[dict[str, Any]]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    kept: list[ExtensionAttribute] = []
    for index, attribute in enumerate(attributes):
        kind, raw = int(attribute[_EXT_TYPE]), bytes(attribute[_EXT_VALUE])
        if kind == ExtensionAttributeType.COMMON_NAME and "common_name" not in kwargs:
            common_name = _common_name_from_ber(raw)
            if common_name is not None:
                kwargs["common_name"] = common_name
                kwargs["common_name_position"] = index
                continue
        kept.append(ExtensionAttribute(type=kind, value=raw))
    kwargs["extension_attributes"] = tuple(kept)
    return kwargs


def _address_kwargs(value: dict[str, Any]) -> dict[str, Any]:
    kwargs = _standard_from_asn1(value["built-in-standard-attributes"])
    kwargs["domain_defined"] = tuple(
        (_text(dda["type"]), _text(dda["value"]))
        for dda in value.get("built-in-domain-defined-attributes", ())
    )
    kwargs.update(_extensions_from_asn1(value.get("extension-attributes", [])))
    return kwargs


def oraddress_from_asn1(value: dict[str, Any]) -> ORAddress:
    """An :class:`ORAddress` from the asn1tools value; raises :class:`DecodeError`."""
    try:
        return ORAddress(**_address_kwargs(value))
    except _ASN1_ERRORS as exc:
        raise DecodeError(f"unexpected value shape ({exc})", where="ORAddress") from exc


def orname_from_asn1(value: dict[str, Any]) -> ORName:
    """An :class:`ORName` from the asn1tools value; raises :class:`DecodeError`."""
    try:
        kwargs = _address_kwargs(value)
        directory = value.get("directory-name")
    except _ASN1_ERRORS as exc:
        raise DecodeError(f"unexpected value shape ({exc})", where="ORName") from exc
    if directory is not None:
        kwargs["directory_name"] = _directory_name_from_asn1(directory)
    return ORName(**kwargs)


def _directory_name_from_asn1(directory: Any) -> bytes:
    if isinstance(directory, bytes | bytearray):
        return bytes(directory)
    try:
        return asn1.encode(NAME_MODULE, "Name", directory)
    except EncodeError as exc:
        raise DecodeError(f"directory name: {exc.why}", where="ORName.directory-name") from exc


# --- BER, directly --------------------------------------------------------------------
#
# encode_* and decode_* read and write the BER themselves: through asn1tools and the
# dict conversion above, a name costs some 30 us each way and an envelope carries
# several.  asn1tools stays the reference.  The writer produces the bytes asn1tools
# writes (the tests compare the two); a value it cannot write (not ASCII, a
# personal-name without surname, a wrong type) goes to asn1tools, which encodes it or
# says what is wrong.  The reader takes the forms senders use (definite lengths, low
# tag numbers, primitive ASCII strings, members in the standard's order); any other
# encoding, and so every malformed one, goes to asn1tools.  Values, bytes and errors
# are therefore the same whichever path ran.

_ORNAME_OCTET = 0x60  # [APPLICATION 0], constructed
_SEQUENCE_OCTET = 0x30
_SET_OCTET = 0x31
_NUMERIC_OCTET = 0x12
_PRINTABLE_OCTET = 0x13
_DIRECTORY_NAME_OCTET = 0xA0  # [0] around an open type: explicit
_EXT_TYPE_OCTET = 0x80  # [0] INTEGER
_EXT_VALUE_OCTET = 0xA1  # [1] around an open type: explicit
_COMMON_NAME = int(ExtensionAttributeType.COMMON_NAME)


class _Unusual(Exception):
    """An encoding the direct reader leaves to asn1tools."""


_UNUSUAL = (_Unusual, ValueError, IndexError)
"""What sends a name to asn1tools: _Unusual, a non-ASCII string (UnicodeDecodeError,
which the readers let through) and, defensively, any slip of the direct reader."""


_Item = tuple[int, int, int]
"""A TLV: (identifier octet, contents start, contents end)."""

# The readers below walk TLVs inline, in the same three steps everywhere:
#
#     octet, length, body = data[start], data[start + 1], start + 2
#     if length > 0x7F:
#         body, length = _long_form(data, start, end)
#     stop = body + length  (then: stop <= end, or _Unusual)
#
# A high tag number is never taken for the identifier octet a reader expects, and an
# index past the data is an IndexError: both send the name to asn1tools.  (Walking
# inline rather than through a function per TLV halves the time of a name.)


def _long_form(data: bytes, start: int, end: int) -> tuple[int, int]:
    """(contents start, length) of the TLV at ``start`` whose length is in long form."""
    count = data[start + 1] & 0x7F
    body = start + 2 + count
    if not 0 < count <= 4 or body > end:
        raise _Unusual  # indefinite, or longer than any name
    return body, int.from_bytes(data[start + 2 : body], "big")


def _items(data: bytes, start: int, end: int) -> list[_Item]:
    """The TLVs that fill ``start:end`` exactly."""
    found = []
    while start < end:
        octet, length, body = data[start], data[start + 1], start + 2
        if length > 0x7F:
            body, length = _long_form(data, start, end)
        start = body + length
        found.append((octet, body, start))
    if start != end:
        raise _Unusual
    return found


def _only(data: bytes, start: int, end: int) -> _Item:
    """The one TLV that fills ``start:end`` (the contents of an explicit tag)."""
    octet, length, body = data[start], data[start + 1], start + 2
    if length > 0x7F:
        body, length = _long_form(data, start, end)
    if body + length != end or octet & 0x1F == 0x1F:
        raise _Unusual
    return octet, body, end


_Fields = dict[str, Any]


def _read_choice(data: bytes, start: int, end: int, fields: _Fields, name: str) -> None:
    # CountryName, AdministrationDomainName and PrivateDomainName: an explicit tag
    # around CHOICE { NumericString, PrintableString }.
    octet, body, stop = _only(data, start, end)
    if octet != _NUMERIC_OCTET and octet != _PRINTABLE_OCTET:
        raise _Unusual
    value = fields[name] = data[body:stop].decode("ascii")
    numeric = octet == _NUMERIC_OCTET
    if numeric != value.isdigit():  # ASCII: as _looks_numeric, faster
        fields[name + "_numeric"] = numeric  # only where the value does not imply it


def _read_string(data: bytes, start: int, end: int, fields: _Fields, name: str) -> None:
    fields[name] = data[start:end].decode("ascii")


_PERSONAL_OCTETS = {
    0x80: "surname",
    0x81: "given_name",
    0x82: "initials",
    0x83: "generation_qualifier",
}


def _read_personal(data: bytes, start: int, end: int, fields: _Fields, _: str) -> None:
    # A SET: members in any order, each once, surname required.
    while start < end:
        octet, length, body = data[start], data[start + 1], start + 2
        if length > 0x7F:
            body, length = _long_form(data, start, end)
        start = body + length
        name = _PERSONAL_OCTETS.get(octet)
        if name is None or name in fields or start > end:
            raise _Unusual
        fields[name] = data[body:start].decode("ascii")
    if "surname" not in fields:
        raise _Unusual


def _read_units(data: bytes, start: int, end: int, fields: _Fields, _: str) -> None:
    units = []
    while start < end:
        octet, length, body = data[start], data[start + 1], start + 2
        if length > 0x7F:
            body, length = _long_form(data, start, end)
        start = body + length
        if octet != _PRINTABLE_OCTET or start > end:
            raise _Unusual
        units.append(data[body:start].decode("ascii"))
    fields["organizational_units"] = tuple(units)


_Reader = Callable[[bytes, int, int, _Fields, str], None]

# BuiltInStandardAttributes members by identifier octet: (rank, reader, field).
_STANDARD_READERS: dict[int, tuple[int, _Reader, str]] = {
    octet: (rank, reader, field)
    for rank, (octet, reader, field) in enumerate(
        (
            (0x61, _read_choice, "country"),
            (0x62, _read_choice, "admd"),
            (0x80, _read_string, "network_address"),
            (0x81, _read_string, "terminal_identifier"),
            (0xA2, _read_choice, "prmd"),
            (0x83, _read_string, "organization"),
            (0x84, _read_string, "numeric_user_identifier"),
            (0xA5, _read_personal, ""),
            (0xA6, _read_units, ""),
        )
    )
}
_NOT_STANDARD = (-1, _read_string, "")


def _read_standard(data: bytes, start: int, end: int, fields: _Fields) -> None:
    last = -1
    while start < end:
        octet, length, body = data[start], data[start + 1], start + 2
        if length > 0x7F:
            body, length = _long_form(data, start, end)
        start = body + length
        rank, reader, field = _STANDARD_READERS.get(octet, _NOT_STANDARD)
        if rank <= last or start > end:
            raise _Unusual  # unknown, repeated or out of order; or overrunning
        last = rank
        reader(data, body, start, fields, field)


def _read_domain_defined(data: bytes, start: int, end: int, fields: _Fields) -> None:
    pairs = []
    for octet, body, stop in _items(data, start, end):
        pair = _items(data, body, stop)
        if octet != _SEQUENCE_OCTET or len(pair) != 2:
            raise _Unusual
        (type_octet, type_body, type_end), (value_octet, value_body, value_end) = pair
        if type_octet != _PRINTABLE_OCTET or value_octet != _PRINTABLE_OCTET:
            raise _Unusual
        pairs.append(
            (data[type_body:type_end].decode("ascii"), data[value_body:value_end].decode("ascii"))
        )
    fields["domain_defined"] = tuple(pairs)


def _common_name_of(raw: bytes) -> str | None:
    """The common name, if ``raw`` (one TLV) is the encoding we would write for it."""
    octet, body, _ = _only(raw, 0, len(raw))
    if octet != _PRINTABLE_OCTET:
        return None
    try:
        text = raw[body:].decode("ascii")
    except UnicodeDecodeError:
        return None
    return text if raw[1:body] == ber.length_octets(len(text)) else None


def _read_extensions(data: bytes, start: int, end: int, fields: _Fields) -> None:
    kept = []
    for index, (octet, body, stop) in enumerate(_items(data, start, end)):
        pair = _items(data, body, stop)
        if octet != _SEQUENCE_OCTET or len(pair) != 2:
            raise _Unusual
        (type_octet, type_body, type_end), (value_octet, value_body, value_end) = pair
        if type_octet != _EXT_TYPE_OCTET or value_octet != _EXT_VALUE_OCTET:
            raise _Unusual
        _only(data, value_body, value_end)
        kind = int.from_bytes(data[type_body:type_end], "big", signed=True)
        raw = data[value_body:value_end]
        common_name = (
            _common_name_of(raw) if kind == _COMMON_NAME and "common_name" not in fields else None
        )
        if common_name is None:
            kept.append(ExtensionAttribute(type=kind, value=raw))
        else:
            fields["common_name"] = common_name
            fields["common_name_position"] = index
    fields["extension_attributes"] = tuple(kept)


def _read_directory_name(data: bytes, start: int, end: int, fields: _Fields) -> None:
    if not _directory_name_is_open_type():
        raise _Unusual
    _only(data, start, end)
    fields["directory_name"] = data[start:end]


# ORName members after built-in-standard-attributes, in order: (octet, reader).
_OPTIONAL_READERS = (
    (_SEQUENCE_OCTET, _read_domain_defined),
    (_SET_OCTET, _read_extensions),
    (_DIRECTORY_NAME_OCTET, _read_directory_name),
)


def _read_address(data: bytes, outer: int, directory: bool) -> _Fields:
    """The fields of the ORName (or ORAddress) that ``data`` holds; raises _Unusual."""
    whole = _only(data, 0, len(data))
    parts = _items(data, whole[1], whole[2])
    if whole[0] != outer or not parts or parts[0][0] != _SEQUENCE_OCTET:
        raise _Unusual
    fields: _Fields = {}
    _read_standard(data, parts[0][1], parts[0][2], fields)
    readers = _OPTIONAL_READERS if directory else _OPTIONAL_READERS[:2]
    index = 0
    for octet, body, stop in parts[1:]:
        while index < len(readers) and readers[index][0] != octet:
            index += 1
        if index == len(readers):
            raise _Unusual  # unknown, repeated or out of order
        readers[index][1](data, body, stop, fields)
        index += 1
    return fields


def _as_bytes(data: object) -> bytes | None:
    return bytes(data) if isinstance(data, bytes | bytearray | memoryview) else None


def _tlv(octet: int, contents: bytes) -> bytes:
    length = len(contents)
    if length < 0x80:
        return b"%c%c%s" % (octet, length, contents)
    return b"%c%s%s" % (octet, ber.length_octets(length), contents)


def _string(octet: int, value: str) -> bytes:
    contents = value.encode("ascii")  # AttributeError, UnicodeEncodeError: see _TROUBLE
    length = len(contents)
    if length < 0x80:
        return b"%c%c%s" % (octet, length, contents)  # _tlv, inline: names are mostly this
    return b"%c%s%s" % (octet, ber.length_octets(length), contents)


def _open(octet: int, value: bytes) -> bytes:
    """An open type's BER (ANY) under an explicit tag, as given."""
    if not isinstance(value, bytes | bytearray | memoryview):
        raise _Unusual
    return _tlv(octet, bytes(value))


def _form(flag: bool | None, value: str) -> int:
    """The identifier octet of a CHOICE { NumericString, PrintableString } value."""
    numeric = flag if flag is not None else _looks_numeric(value)
    return _NUMERIC_OCTET if numeric else _PRINTABLE_OCTET


def _write_standard(address: ORAddress) -> bytes:
    # BuiltInStandardAttributes, member by member in the standard's order.
    parts = []
    if address.country is not None:
        value = _string(_form(address.country_numeric, address.country), address.country)
        parts.append(_tlv(0x61, value))
    if address.admd is not None:
        parts.append(_tlv(0x62, _string(_form(address.admd_numeric, address.admd), address.admd)))
    if address.network_address is not None:
        parts.append(_string(0x80, address.network_address))
    if address.terminal_identifier is not None:
        parts.append(_string(0x81, address.terminal_identifier))
    if address.prmd is not None:
        parts.append(_tlv(0xA2, _string(_form(address.prmd_numeric, address.prmd), address.prmd)))
    if address.organization is not None:
        parts.append(_string(0x83, address.organization))
    if address.numeric_user_identifier is not None:
        parts.append(_string(0x84, address.numeric_user_identifier))
    personal = (address.surname, address.given_name, address.initials, address.generation_qualifier)
    if personal != (None, None, None, None):
        if address.surname is None:
            raise _Unusual  # personal-name needs a surname
        members = [
            _string(0x80 + n, value) for n, value in enumerate(personal) if value is not None
        ]
        parts.append(_tlv(0xA5, b"".join(members)))
    if address.organizational_units:
        units = [_string(_PRINTABLE_OCTET, unit) for unit in address.organizational_units]
        parts.append(_tlv(0xA6, b"".join(units)))
    return _tlv(_SEQUENCE_OCTET, b"".join(parts))


def _write_domain_defined(address: ORAddress) -> bytes:
    pairs = [
        _tlv(_SEQUENCE_OCTET, _string(_PRINTABLE_OCTET, kind) + _string(_PRINTABLE_OCTET, value))
        for kind, value in address.domain_defined
    ]
    return _tlv(_SEQUENCE_OCTET, b"".join(pairs))


def _write_extension(kind: int, value: bytes) -> bytes:
    if not isinstance(kind, int):
        raise _Unusual
    number = _tlv(_EXT_TYPE_OCTET, ber.int_contents(kind))
    return _tlv(_SEQUENCE_OCTET, number + _open(_EXT_VALUE_OCTET, value))


def _write_extensions(address: ORAddress) -> bytes:
    out = [_write_extension(a.type, a.value) for a in address.extension_attributes]
    if address.common_name is not None:
        raw = _string(_PRINTABLE_OCTET, address.common_name)
        position = min(address.common_name_position or 0, len(out))
        out.insert(position, _write_extension(_COMMON_NAME, raw))
    return _tlv(_SET_OCTET, b"".join(out)) if out else b""


def _write_address(address: ORAddress) -> bytes:
    """The contents octets of an ORAddress (the start of an ORName's)."""
    standard = _write_standard(address)
    domain_defined = _write_domain_defined(address) if address.domain_defined else b""
    return standard + domain_defined + _write_extensions(address)


def _write_name(name: ORName) -> bytes:
    directory_name = name.directory_name
    if directory_name is None:
        return _tlv(_ORNAME_OCTET, _write_address(name))
    if not _directory_name_is_open_type():
        raise _Unusual  # a Name to re-encode: asn1tools' job
    return _tlv(_ORNAME_OCTET, _write_address(name) + _open(_DIRECTORY_NAME_OCTET, directory_name))


_TROUBLE = (_Unusual, ValueError, TypeError, AttributeError)
"""What sends a value to asn1tools to be encoded, or refused in its words: a value that
is not ASCII text, a personal-name without surname, a value of the wrong type..."""


def encode_oraddress(address: ORAddress) -> bytes:
    """BER of ``MTSAbstractService.ORAddress``; raises :class:`EncodeError`."""
    try:
        return _tlv(_SEQUENCE_OCTET, _write_address(address))
    except _TROUBLE:
        return asn1.encode(MODULE, "ORAddress", oraddress_to_asn1(address))


def decode_oraddress(data: bytes) -> ORAddress:
    """An :class:`ORAddress` from its BER; raises :class:`DecodeError` only."""
    view = _as_bytes(data)
    if view is not None:
        try:
            return ORAddress(**_read_address(view, _SEQUENCE_OCTET, False))
        except _UNUSUAL:
            pass
    return oraddress_from_asn1(asn1.decode(MODULE, "ORAddress", data))


def encode_orname(name: ORName) -> bytes:
    """BER of ``MTSAbstractService.ORName`` (``[APPLICATION 0]``); raises :class:`EncodeError`."""
    try:
        return _write_name(name)
    except _TROUBLE:
        return asn1.encode(MODULE, "ORName", orname_to_asn1(name))


def decode_orname(data: bytes) -> ORName:
    """An :class:`ORName` from its BER; raises :class:`DecodeError` only."""
    view = _as_bytes(data)
    if view is not None:
        try:
            return ORName(**_read_address(view, _ORNAME_OCTET, True))
        except _UNUSUAL:
            pass
    return orname_from_asn1(asn1.decode(MODULE, "ORName", data))
