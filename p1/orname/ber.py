"""O/R names in BER: the direct codec, and the asn1tools values it is checked against and
encodes through what it cannot write (see :mod:`p1.mts.orname`).

Import the public names from :mod:`p1.mts.orname`; this module builds on its models.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from p1 import asn1, ber
from p1.ber.values import numeric_text, printable_text
from p1.errors import CodecError, DecodeError
from p1.orname.model import (
    _A,
    _DEFAULTS,
    MODULE,
    ExtensionAttribute,
    ExtensionAttributeType,
    ORAddress,
    ORName,
    _is_numeric,
    _looks_numeric,
    _new,
)

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


def _directory_name_to_asn1(data: bytes) -> bytes:
    # ORName's ``directory-name [0] ANY`` in p1/asn1 (the standard's ``[0] Name``, the
    # same bytes): the value is the Name's BER, carried as it is.
    return data


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
    """The common name that ``raw`` encodes in any form (None: not a CommonName, keep raw)."""
    try:
        text = asn1.decode(MODULE, "CommonName", raw)
    except CodecError:
        return None
    return text if isinstance(text, str) else None


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
    if not isinstance(directory, bytes | bytearray):
        raise DecodeError("not the BER of a Name", where="ORName.directory-name")
    return bytes(directory)


# --- BER, directly --------------------------------------------------------------------
#
# encode_* and decode_* read and write the BER themselves: through asn1tools and the
# dict conversion above, a name costs some 30 us each way and an envelope carries
# several.  asn1tools stays the reference the tests check both directions against.
#
# The reader walks the name with p1.ber's reader and accepts every legal BER form:
# definite (short or long) and indefinite lengths, strings primitive or split into
# segments, members of a SEQUENCE in any order (each once: their tags differ).  The value
# read is the same whatever the form; a name that is not an O/R name raises DecodeError.
# Every attribute value is checked against its type's alphabet (PrintableString or
# NumericString, X.680 41.4) and its lower bound (X.411 18.5: SIZE (1..ub-...), but the
# ADMD's, which may be empty): a name a peer sends can then hold no control character
# and no empty attribute, whatever reaches a log line, a route or a mailbox name.  Upper
# bounds are not enforced here (ORAddress.problems() reports them): a relay passes such
# a name on as sent.
# The writer produces the bytes asn1tools writes (the tests compare the two); a value it
# cannot write (not ASCII, a personal-name without surname, a wrong type) goes to
# asn1tools, which encodes it or says what is wrong.

_ORNAME_OCTET = 0x60  # [APPLICATION 0], constructed
_SEQUENCE_OCTET = 0x30
_SET_OCTET = 0x31
_NUMERIC_OCTET = 0x12
_PRINTABLE_OCTET = 0x13
_DIRECTORY_NAME_OCTET = 0xA0  # [0] around an open type: explicit
_EXT_TYPE_OCTET = 0x80  # [0] INTEGER
_EXT_VALUE_OCTET = 0xA1  # [1] around an open type: explicit
_COMMON_NAME = int(ExtensionAttributeType.COMMON_NAME)
_PRIMITIVE = ~ber.CONSTRUCTED
"""Mask that clears the constructed bit: a string's key whichever form it was sent in."""


class _Unusual(Exception):
    """A value the direct writer leaves to asn1tools."""


_Fields = dict[str, Any]
"""The fields of the name being read (its instance dictionary): each at its default
until read, so ``fields[name] is None`` means "not read yet"."""
_Reader = Callable[[ber.View, ber.FlatTlv, _Fields, str], None]


def _only(view: ber.View, item: ber.FlatTlv, what: str) -> ber.FlatTlv:
    """The one value inside an explicit tag."""
    inner = ber.items(view, item, what)
    if len(inner) != 1:
        raise DecodeError(f"explicit tag holds {len(inner)} values, not one", where=what)
    return inner[0]


def _expect(item: ber.FlatTlv, key: int, what: str) -> None:
    """A DecodeError unless ``item`` has ``key`` (either form of a string's tag)."""
    if item[0] & _PRIMITIVE != key & _PRIMITIVE:
        found = ber.tag_name(ber.tag_of(item[0]))
        raise DecodeError(f"expected {ber.tag_name(ber.tag_of(key))}, found {found}", where=what)


_NUMERIC_FLAGS = {"country": "country_numeric", "admd": "admd_numeric", "prmd": "prmd_numeric"}


def _read_choice(view: ber.View, item: ber.FlatTlv, fields: _Fields, name: str) -> None:
    """CountryName, AdministrationDomainName, PrivateDomainName: an explicit tag around
    CHOICE { NumericString, PrintableString } (X.411 18.5)."""
    inner = _only(view, item, name)
    kind = inner[0] & _PRIMITIVE
    if kind == _PRINTABLE_OCTET:
        value = printable_text(view, inner, name)
    elif kind == _NUMERIC_OCTET:
        value = numeric_text(view, inner, name)
    else:
        found = ber.tag_name(ber.tag_of(inner[0]))
        raise DecodeError(f"expected a NumericString or PrintableString, found {found}", where=name)
    if not value and name != "admd":  # AdministrationDomainName is SIZE (0..16)
        raise _empty(name)
    fields[name] = value
    numeric = kind == _NUMERIC_OCTET
    if numeric != _looks_numeric(value):
        fields[_NUMERIC_FLAGS[name]] = numeric  # only where the value does not imply it


def _empty(what: str) -> DecodeError:
    return DecodeError("an empty value (X.411 bounds its size from 1)", where=what)


_PERSONAL_MEMBERS = {
    0x80: "surname",
    0x81: "given_name",
    0x82: "initials",
    0x83: "generation_qualifier",
}


def _read_personal(view: ber.View, item: ber.FlatTlv, fields: _Fields, _: str) -> None:
    """PersonalName: a SET, members in any order, surname required (X.411 18.5)."""
    for name, member in ber.members(view, item, _PERSONAL_MEMBERS, "personal-name").items():
        value = fields[name] = printable_text(view, member, name)
        if not value:
            raise _empty(name)
    if fields["surname"] is None:
        raise DecodeError("missing surname", where="personal-name")


def _read_units(view: ber.View, item: ber.FlatTlv, fields: _Fields, _: str) -> None:
    """OrganizationalUnitNames: a SEQUENCE OF PrintableString."""
    what = "organizational-unit-names"
    units = []
    for unit in ber.items(view, item, what):
        _expect(unit, _PRINTABLE_OCTET, what)
        value = printable_text(view, unit, what)
        if not value:
            raise _empty(what)
        units.append(value)
    fields["organizational_units"] = tuple(units)


def _read_printable(view: ber.View, item: ber.FlatTlv, fields: _Fields, name: str) -> None:
    """A member that is an implicitly tagged PrintableString."""
    value = fields[name] = printable_text(view, item, name)
    if not value:
        raise _empty(name)


def _read_numeric(view: ber.View, item: ber.FlatTlv, fields: _Fields, name: str) -> None:
    """A member that is an implicitly tagged NumericString."""
    value = fields[name] = numeric_text(view, item, name)
    if not value:
        raise _empty(name)


# BuiltInStandardAttributes members by key with the constructed bit clear: (field, reader).
_STANDARD: dict[int, tuple[str, _Reader]] = {
    0x41: ("country", _read_choice),  # [APPLICATION 1]
    0x42: ("admd", _read_choice),  # [APPLICATION 2]
    0x80: ("network_address", _read_numeric),  # X121Address
    0x81: ("terminal_identifier", _read_printable),
    0x82: ("prmd", _read_choice),
    0x83: ("organization", _read_printable),
    0x84: ("numeric_user_identifier", _read_numeric),
    0x85: ("personal-name", _read_personal),
    0x86: ("organizational-unit-names", _read_units),
}
_EXPLICIT = frozenset(
    key
    for key, (_, reader) in _STANDARD.items()
    if reader is not _read_printable and reader is not _read_numeric
)
"""The members that must be constructed: explicit tags, personal-name and the units."""


def _read_standard(view: ber.View, item: ber.FlatTlv, fields: _Fields) -> None:
    """BuiltInStandardAttributes (X.411 18.5)."""
    what = "built-in-standard-attributes"
    _expect(item, _SEQUENCE_OCTET, what)
    seen: set[int] = set()
    for member in ber.items(view, item, what):
        key = member[0] & _PRIMITIVE
        entry = _STANDARD.get(key)
        if entry is None:
            raise DecodeError(f"unexpected {ber.tag_name(ber.tag_of(member[0]))}", where=what)
        if key in seen:
            raise DecodeError(f"{entry[0].replace('_', '-')} appears twice", where=what)
        if key in _EXPLICIT and not member[0] & ber.CONSTRUCTED:
            raise DecodeError(f"{entry[0].replace('_', '-')} must be constructed", where=what)
        seen.add(key)
        entry[1](view, member, fields, entry[0])


def _read_domain_defined(view: ber.View, item: ber.FlatTlv, fields: _Fields) -> None:
    """BuiltInDomainDefinedAttributes: SEQUENCE OF SEQUENCE { type, value }."""
    what = "built-in-domain-defined-attributes"
    pairs = []
    for attribute in ber.items(view, item, what):
        _expect(attribute, _SEQUENCE_OCTET, what)
        pair = ber.items(view, attribute, what)
        if len(pair) != 2:
            raise DecodeError(f"an attribute of {len(pair)} values, not two", where=what)
        for part in pair:
            _expect(part, _PRINTABLE_OCTET, what)
        kind, value = printable_text(view, pair[0], what), printable_text(view, pair[1], what)
        if not (kind and value):
            raise _empty(what)
        pairs.append((kind, value))
    fields["domain_defined"] = tuple(pairs)


def _read_extensions(view: ber.View, item: ber.FlatTlv, fields: _Fields) -> None:
    """ExtensionAttributes: SET OF { [0] type, [1] value }; common-name (type 1, a
    PrintableString) is read into its field, the others are kept as received."""
    what = "extension-attributes"
    kept = []
    for index, attribute in enumerate(ber.items(view, item, what)):
        kind, value = _extension(view, attribute, what)
        common_name = None
        if kind == _COMMON_NAME and fields["common_name"] is None:
            common_name = _common_name(view, value)
        if common_name is not None:
            fields["common_name"] = common_name
            if index:  # (0, the first, is the default: None)
                fields["common_name_position"] = index
        else:
            kept.append(ExtensionAttribute(type=kind, value=bytes(view[value[1] : value[4]])))
    fields["extension_attributes"] = tuple(kept)


def _extension(view: ber.View, attribute: ber.FlatTlv, what: str) -> tuple[int, ber.FlatTlv]:
    """The type and the value's TLV of one ExtensionAttribute."""
    _expect(attribute, _SEQUENCE_OCTET, what)
    pair = ber.items(view, attribute, what)
    if len(pair) != 2 or pair[0][0] != _EXT_TYPE_OCTET or pair[1][0] != _EXT_VALUE_OCTET:
        raise DecodeError("an attribute is SEQUENCE { [0] INTEGER, [1] value }", where=what)
    return ber.integer(view, pair[0], what), _only(view, pair[1], what)


def _common_name(view: ber.View, value: ber.FlatTlv) -> str | None:
    """CommonName, a PrintableString in any form, checked as the other attributes; None
    for a value of another type (then the attribute is kept as received)."""
    if value[0] & _PRIMITIVE != _PRINTABLE_OCTET:
        return None
    text = printable_text(view, value, "common-name")
    if not text:
        raise _empty("common-name")
    return text


def _read_directory_name(view: ber.View, item: ber.FlatTlv, fields: _Fields) -> None:
    """directory-name [0]: an explicit tag around a Name, kept as received."""
    inner = _only(view, item, "directory-name")
    fields["directory_name"] = bytes(view[inner[1] : inner[4]])


# The optional members after built-in-standard-attributes, by key: (name, reader).
_OPTIONAL: dict[int, tuple[str, Callable[[ber.View, ber.FlatTlv, _Fields], None]]] = {
    _SEQUENCE_OCTET: ("built-in-domain-defined-attributes", _read_domain_defined),
    _SET_OCTET: ("extension-attributes", _read_extensions),
    _DIRECTORY_NAME_OCTET: ("directory-name", _read_directory_name),
}


def _read_address(data: bytes | bytearray | memoryview, cls: type[_A], outer: int) -> _A:
    """The ORName (or ORAddress) that ``data`` holds, the identifier octet ``outer``
    first (X.411 18.5); raises :class:`DecodeError`."""
    what = cls.__name__
    view, tlv = ber.single(data, what)
    if tlv[0] != outer:
        found = ber.tag_name(ber.tag_of(tlv[0]))
        raise DecodeError(f"expected {ber.tag_name(ber.tag_of(outer))}, found {found}", where=what)
    parts = ber.items(view, tlv, what)
    if not parts:
        raise DecodeError("missing built-in-standard-attributes", where=what)
    value = _new(cls)  # (not through __init__: see _DEFAULTS)
    fields: _Fields = value.__dict__
    fields.update(_DEFAULTS[cls])
    _read_standard(view, parts[0], fields)
    seen: set[int] = set()
    for part in parts[1:]:
        entry = _OPTIONAL.get(part[0])
        if entry is None or (cls is not ORName and part[0] == _DIRECTORY_NAME_OCTET):
            raise DecodeError(f"unexpected {ber.tag_name(ber.tag_of(part[0]))}", where=what)
        if part[0] in seen:
            raise DecodeError(f"{entry[0]} appears twice", where=what)
        seen.add(part[0])
        entry[1](view, part, fields)
    return value


# The writers below build the usual short TLVs from precomputed headers (indexed by
# length, see ber.short_headers) and their contents: half the cost of formatting them.
_tlv = ber.tlv_bytes
_PRINTABLE_HEADERS = ber.short_headers(_PRINTABLE_OCTET)
_ORGANIZATION_HEADERS = ber.short_headers(0x83)
_PERSONAL_NAME_HEADERS = ber.short_headers(0xA5)
_UNITS_HEADERS = ber.short_headers(0xA6)
_STANDARD_HEADERS = ber.short_headers(_SEQUENCE_OCTET)
_SURNAME_HEADERS = ber.short_headers(0x80)
_GIVEN_NAME_HEADERS = ber.short_headers(0x81)


def _string(octet: int, value: str) -> bytes:
    contents = value.encode("ascii")  # AttributeError, UnicodeEncodeError: see _TROUBLE
    return _tlv(octet, contents)


def _printable(value: str) -> bytes:
    """``_string(_PRINTABLE_OCTET, value)``: organizational units, common name."""
    contents = value.encode("ascii")  # AttributeError, UnicodeEncodeError: see _TROUBLE
    length = len(contents)
    return (
        _PRINTABLE_HEADERS[length] + contents if length < 0x80 else _tlv(_PRINTABLE_OCTET, contents)
    )


def _open(octet: int, value: bytes) -> bytes:
    """An open type's BER (ANY) under an explicit tag, as given."""
    if not isinstance(value, bytes | bytearray | memoryview):
        raise _Unusual
    return _tlv(octet, bytes(value))


def _form(flag: bool | None, value: str) -> int:
    """The identifier octet of a CHOICE { NumericString, PrintableString } value."""
    numeric = flag if flag is not None else _looks_numeric(value)
    return _NUMERIC_OCTET if numeric else _PRINTABLE_OCTET


def _choice_headers(octet: int) -> tuple[tuple[bytes, bytes], ...]:
    """By length (below 0x7E, both lengths short): the headers of a NumericString and of
    a PrintableString of that length in the explicit tag ``octet``."""
    return tuple(
        (bytes((octet, n + 2, _NUMERIC_OCTET, n)), bytes((octet, n + 2, _PRINTABLE_OCTET, n)))
        for n in range(0x7E)
    )


_COUNTRY_HEADERS = _choice_headers(0x61)
_ADMD_HEADERS = _choice_headers(0x62)
_PRMD_HEADERS = _choice_headers(0xA2)


def _choice(
    octet: int, headers: tuple[tuple[bytes, bytes], ...], flag: bool | None, value: str
) -> bytes:
    """``_tlv(octet, _string(_form(flag, value), value))``, in one call, ``headers``
    being ``_choice_headers(octet)``: CountryName, AdministrationDomainName and
    PrivateDomainName (every name has two or three)."""
    contents = value.encode("ascii")  # AttributeError, UnicodeEncodeError: see _TROUBLE
    numeric = flag if flag is not None else contents.isdigit()  # ASCII: as _looks_numeric
    length = len(contents)
    if length < 0x7E:
        return headers[length][0 if numeric else 1] + contents
    return _tlv(octet, _string(_form(flag, value), value))


def _write_standard(address: ORAddress) -> bytes:
    # BuiltInStandardAttributes, member by member in the standard's order, the usual
    # short strings written inline (_string, _choice): every name has half a dozen.
    parts: list[bytes] = []
    append = parts.append
    if address.country is not None:
        append(_choice(0x61, _COUNTRY_HEADERS, address.country_numeric, address.country))
    if address.admd is not None:
        append(_choice(0x62, _ADMD_HEADERS, address.admd_numeric, address.admd))
    if address.network_address is not None:
        append(_string(0x80, address.network_address))
    if address.terminal_identifier is not None:
        append(_string(0x81, address.terminal_identifier))
    if address.prmd is not None:
        append(_choice(0xA2, _PRMD_HEADERS, address.prmd_numeric, address.prmd))
    value = address.organization
    if value is not None:
        contents = value.encode("ascii")  # AttributeError, UnicodeEncodeError: see _TROUBLE
        length = len(contents)
        append(_ORGANIZATION_HEADERS[length] + contents if length < 0x80 else _tlv(0x83, contents))
    if address.numeric_user_identifier is not None:
        append(_string(0x84, address.numeric_user_identifier))
    surname = address.surname
    if surname is not None:
        personal = _personal(surname, address)
        length = len(personal)
        append(_PERSONAL_NAME_HEADERS[length] + personal if length < 0x80 else _tlv(0xA5, personal))
    elif address.given_name is not None or address.initials is not None:
        raise _Unusual  # personal-name needs a surname
    elif address.generation_qualifier is not None:
        raise _Unusual
    units = address.organizational_units
    if units:
        contents = b"".join([_printable(unit) for unit in units])
        length = len(contents)
        append(_UNITS_HEADERS[length] + contents if length < 0x80 else _tlv(0xA6, contents))
    contents = b"".join(parts)
    length = len(contents)
    return _STANDARD_HEADERS[length] + contents if length < 0x80 else _tlv(0x30, contents)


def _personal(surname: str, address: ORAddress) -> bytes:
    """The contents of PersonalName: surname [0], given-name [1], initials [2],
    generation-qualifier [3]."""
    contents = surname.encode("ascii")
    length = len(contents)
    personal = _SURNAME_HEADERS[length] + contents if length < 0x80 else _tlv(0x80, contents)
    value = address.given_name
    if value is not None:
        contents = value.encode("ascii")
        length = len(contents)
        personal += (
            _GIVEN_NAME_HEADERS[length] + contents if length < 0x80 else _tlv(0x81, contents)
        )
    if address.initials is not None:
        personal += _string(0x82, address.initials)
    if address.generation_qualifier is not None:
        personal += _string(0x83, address.generation_qualifier)
    return personal


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


def _write_common_name(value: str) -> bytes:
    """The common-name extension attribute: ``_write_extension(_COMMON_NAME,
    _printable(value))``, the usual short one from a precomputed header."""
    contents = value.encode("ascii")  # AttributeError, UnicodeEncodeError: see _TROUBLE
    length = len(contents)
    if length < 0x79:
        return _COMMON_NAME_HEADERS[length] + contents
    return _write_extension(_COMMON_NAME, _printable(value))


_COMMON_NAME_HEADERS = tuple(
    bytes((_SEQUENCE_OCTET, n + 7, _EXT_TYPE_OCTET, 1, _COMMON_NAME, _EXT_VALUE_OCTET, n + 2))
    + bytes((_PRINTABLE_OCTET, n))
    for n in range(0x79)
)
"""By length (below 0x79, every length short): SEQUENCE { [0] 1, [1] PrintableString }."""


def _write_extensions(address: ORAddress) -> bytes:
    out = [_write_extension(a.type, a.value) for a in address.extension_attributes]
    if address.common_name is not None:
        position = min(address.common_name_position or 0, len(out))
        out.insert(position, _write_common_name(address.common_name))
    return _tlv(_SET_OCTET, b"".join(out)) if out else b""


def _write_address(address: ORAddress) -> bytes:
    """The contents octets of an ORAddress (the start of an ORName's)."""
    standard = _write_standard(address)
    if address.domain_defined:
        standard += _write_domain_defined(address)
    if address.extension_attributes:
        standard += _write_extensions(address)
    elif address.common_name is not None:  # the usual extension attribute, alone
        standard += _tlv(_SET_OCTET, _write_common_name(address.common_name))
    return standard


def _write_name(name: ORName) -> bytes:
    directory_name = name.directory_name
    if directory_name is None:
        return _tlv(_ORNAME_OCTET, _write_address(name))
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
    return _read_address(data, ORAddress, _SEQUENCE_OCTET)


def encode_orname(name: ORName) -> bytes:
    """BER of ``MTSAbstractService.ORName`` (``[APPLICATION 0]``); raises :class:`EncodeError`.

    The encoding of a name without a directory name is kept in the instance (a name is
    immutable): a local submission encodes the same few names in every envelope.
    """
    if type(name) is ORName and name.directory_name is None:
        fields = name.__dict__
        encoded: bytes | None = fields.get(_ENCODING)
        if encoded is None:
            encoded = fields[_ENCODING] = _encode_orname(name)
        return encoded
    return _encode_orname(name)


_ENCODING = "_encoding"
"""Where :func:`encode_orname` keeps a name's BER in its instance dictionary (not a
field: equality, hashing, ``repr`` and ``dataclasses.replace`` never see it).  A name
with a directory name is encoded every time: how depends on the ASN.1 module."""


def _encode_orname(name: ORName) -> bytes:
    """:func:`encode_orname`, every time."""
    try:
        if name.directory_name is None:  # (_write_name, inline: most names have none)
            return _tlv(_ORNAME_OCTET, _write_address(name))
        return _write_name(name)
    except _TROUBLE:
        return asn1.encode(MODULE, "ORName", orname_to_asn1(name))


def decode_orname(data: bytes) -> ORName:
    """An :class:`ORName` from its BER; raises :class:`DecodeError` only.

    The names of the last few thousand encodings seen are kept and handed out again (a
    name is immutable): an MTA decodes the same originators and recipients in every
    envelope and trace, and a name handed out again keeps its computed canonical text.
    """
    known = _DECODED.get(data) if type(data) is bytes else None
    if known is not None:
        return known
    name = _decode_orname(data)
    if type(data) is bytes:
        if len(_DECODED) >= _DECODED_MOST:
            _DECODED.clear()  # simpler than LRU; refilled within a few messages
        _DECODED[data] = name
    return name


_DECODED: dict[bytes, ORName] = {}
_DECODED_MOST: Final = 4096
"""Most encodings :func:`decode_orname` keeps (each a few hundred bytes with its name)."""


def _decode_orname(data: bytes) -> ORName:
    """:func:`decode_orname`, every time."""
    return _read_address(data, ORName, _ORNAME_OCTET)
