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
trailing space (unescaped spaces around keys and values are dropped); ``\\xHH`` and
``\\uHHHH`` (hex digits) stand for the character of that code.  The text forms and
``canonical`` write every control character so (C0, DEL, C1, U+2028, U+2029): however a
name was made, its text never holds one (no value X.411 allows has one).  An ADMD of a
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
holds several names, and asn1tools costs several times as much).  The reader takes every
legal BER form (long and indefinite lengths, strings in segments, high-number tags) and
gives the same value whatever the form; a malformed name raises ``DecodeError``.  The
asn1tools conversions are the reference the tests check the codec against.

A decoded value re-encodes to the bytes received when those were definite-length,
minimal BER (what DER senders produce): the string form of country and domain names
(``country_numeric``, ``admd_numeric``, ``prmd_numeric``), the position of common-name
among the extension attributes (``common_name_position``) and every extension
attribute we do not model (raw, in order) are recorded.  Other forms re-encode minimal;
a relaying MTA passes the received envelope on unchanged, so they reach the next MTA
as sent.  A common-name that is not a PrintableString is kept raw.  The directory name is
carried as BER bytes (``directory-name [0] ANY``), passed through untouched.  Decoding
checks each value's alphabet (PrintableString, NumericString: X.680 41.4) and refuses
an empty one (X.411 18.5 bounds every attribute's size from 1, but the ADMD's): a
character outside, or an empty value, is a ``DecodeError`` naming the attribute.  Upper
bounds are liberal: longer values decode, and :meth:`ORAddress.problems` says what is
wrong with them.

The models, their validation and canonical forms live in :mod:`p1.orname.model`, the text
forms in :mod:`p1.orname.text` and the BER codec in :mod:`p1.orname.ber`; this module is
the public face of all three.
"""

from __future__ import annotations

from p1.orname.ber import (
    decode_oraddress as decode_oraddress,
)
from p1.orname.ber import (
    decode_orname as decode_orname,
)
from p1.orname.ber import (
    encode_oraddress as encode_oraddress,
)
from p1.orname.ber import (
    encode_orname as encode_orname,
)
from p1.orname.ber import (
    oraddress_from_asn1 as oraddress_from_asn1,
)
from p1.orname.ber import (
    oraddress_to_asn1 as oraddress_to_asn1,
)
from p1.orname.ber import (
    orname_from_asn1 as orname_from_asn1,
)
from p1.orname.ber import (
    orname_to_asn1 as orname_to_asn1,
)
from p1.orname.model import (
    MODULE as MODULE,
)
from p1.orname.model import (
    NAME_MODULE as NAME_MODULE,
)
from p1.orname.model import (
    NUMERIC_CHARACTERS as NUMERIC_CHARACTERS,
)
from p1.orname.model import (
    PRINTABLE_CHARACTERS as PRINTABLE_CHARACTERS,
)
from p1.orname.model import (
    UB_COMMON_NAME_LENGTH as UB_COMMON_NAME_LENGTH,
)
from p1.orname.model import (
    UB_COUNTRY_NAME_ALPHA_LENGTH as UB_COUNTRY_NAME_ALPHA_LENGTH,
)
from p1.orname.model import (
    UB_COUNTRY_NAME_NUMERIC_LENGTH as UB_COUNTRY_NAME_NUMERIC_LENGTH,
)
from p1.orname.model import (
    UB_DOMAIN_DEFINED_ATTRIBUTE_TYPE_LENGTH as UB_DOMAIN_DEFINED_ATTRIBUTE_TYPE_LENGTH,
)
from p1.orname.model import (
    UB_DOMAIN_DEFINED_ATTRIBUTE_VALUE_LENGTH as UB_DOMAIN_DEFINED_ATTRIBUTE_VALUE_LENGTH,
)
from p1.orname.model import (
    UB_DOMAIN_DEFINED_ATTRIBUTES as UB_DOMAIN_DEFINED_ATTRIBUTES,
)
from p1.orname.model import (
    UB_DOMAIN_NAME_LENGTH as UB_DOMAIN_NAME_LENGTH,
)
from p1.orname.model import (
    UB_EXTENSION_ATTRIBUTES as UB_EXTENSION_ATTRIBUTES,
)
from p1.orname.model import (
    UB_GENERATION_QUALIFIER_LENGTH as UB_GENERATION_QUALIFIER_LENGTH,
)
from p1.orname.model import (
    UB_GIVEN_NAME_LENGTH as UB_GIVEN_NAME_LENGTH,
)
from p1.orname.model import (
    UB_INITIALS_LENGTH as UB_INITIALS_LENGTH,
)
from p1.orname.model import (
    UB_NUMERIC_USER_ID_LENGTH as UB_NUMERIC_USER_ID_LENGTH,
)
from p1.orname.model import (
    UB_ORGANIZATION_NAME_LENGTH as UB_ORGANIZATION_NAME_LENGTH,
)
from p1.orname.model import (
    UB_ORGANIZATIONAL_UNIT_NAME_LENGTH as UB_ORGANIZATIONAL_UNIT_NAME_LENGTH,
)
from p1.orname.model import (
    UB_ORGANIZATIONAL_UNITS as UB_ORGANIZATIONAL_UNITS,
)
from p1.orname.model import (
    UB_SURNAME_LENGTH as UB_SURNAME_LENGTH,
)
from p1.orname.model import (
    UB_TERMINAL_ID_LENGTH as UB_TERMINAL_ID_LENGTH,
)
from p1.orname.model import (
    UB_X121_ADDRESS_LENGTH as UB_X121_ADDRESS_LENGTH,
)
from p1.orname.model import (
    ExtensionAttribute as ExtensionAttribute,
)
from p1.orname.model import (
    ExtensionAttributeType as ExtensionAttributeType,
)
from p1.orname.model import (
    ORAddress as ORAddress,
)
from p1.orname.model import (
    ORName as ORName,
)
from p1.orname.text import Style as Style
from p1.orname.text import format_orname as format_orname
from p1.orname.text import parse_orname as parse_orname

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
