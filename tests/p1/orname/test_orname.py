"""O/R names: text forms, validation, comparison and BER (X.402 clause 18, X.411 18.5)."""

from __future__ import annotations

import contextlib
import dataclasses
import random
import string
from collections.abc import Callable, Iterator
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p1 import asn1
from p1.errors import DecodeError, EncodeError
from p1.mts import orname
from p1.mts.orname import (
    NUMERIC_CHARACTERS,
    PRINTABLE_CHARACTERS,
    ExtensionAttribute,
    ExtensionAttributeType,
    ORAddress,
    ORName,
    decode_oraddress,
    decode_orname,
    encode_oraddress,
    encode_orname,
    format_orname,
    oraddress_from_asn1,
    oraddress_to_asn1,
    orname_from_asn1,
    orname_to_asn1,
    parse_orname,
)
from tests.p1 import ber_forms
from tests.profiles import examples

SEMICOLON = "C=GB;ADMD= ;PRMD=NATO;O=ACT;OU=J6;S=Smith;G=John;CN=Duty Officer"
SLASH = "/C=gb/A= /P=smhs/O=percival/S=gal/"

EXAMPLE = ORName(
    country="GB",
    admd=" ",
    prmd="NATO",
    organization="ACT",
    organizational_units=("J6",),
    surname="Smith",
    given_name="John",
    common_name="Duty Officer",
)

# The example, encoded by hand from X.411 18.5 (MTSAbstractService is IMPLICIT TAGS;
# tags on the CHOICEs CountryName, AdministrationDomainName, PrivateDomainName and on
# the open type of extension-attribute-value are explicit).
EXAMPLE_BER = bytes.fromhex(
    "6046"  # ORName [APPLICATION 0]
    "302d"  # built-in-standard-attributes
    "6104130247 42"  # country-name [APPLICATION 1] { PrintableString "GB" }
    "6203130120"  # administration-domain-name [APPLICATION 2] { PrintableString " " }
    "a20613044e41544f"  # private-domain-name [2] { PrintableString "NATO" }
    "8303414354"  # organization-name [3] "ACT"
    "a50d8005536d69746881044a6f686e"  # personal-name [5] { surname [0], given-name [1] }
    "a60413024a36"  # organizational-unit-names [6] { "J6" }
    "3115"  # extension-attributes SET OF
    "3013800101a10e130c44757479204f666669636572".replace(  # { [0] 1, [1] { "Duty Officer" } }
        " ", ""
    )
)


def der(tag: int, body: bytes) -> bytes:
    """A definite short-form TLV."""
    assert len(body) < 0x80
    return bytes([tag, len(body)]) + body


# --- text forms -----------------------------------------------------------------------


def test_semicolon_form_parses_and_formats_back() -> None:
    name = parse_orname(SEMICOLON)
    assert name == EXAMPLE
    assert format_orname(name) == SEMICOLON


def test_slash_form_parses_and_formats_back() -> None:
    name = parse_orname(SLASH)
    assert name == ORName(
        country="gb", admd=" ", prmd="smhs", organization="percival", surname="gal"
    )
    assert format_orname(name, "slash") == SLASH
    assert format_orname(name) == "C=gb;ADMD= ;PRMD=smhs;O=percival;S=gal"


def test_slash_form_without_the_final_slash() -> None:
    assert parse_orname("/C=gb/A= /P=smhs/O=percival/S=gal") == parse_orname(SLASH)


def test_format_rejects_an_unknown_style() -> None:
    with pytest.raises(ValueError, match="style 'comma'"):
        format_orname(EXAMPLE, "comma")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "c=GB; admd= ; prmd=NATO; o=ACT; ou=J6; surname=Smith; givenname=John; cn=Duty Officer",
        "C=GB;A= ;P=NATO;O=ACT;OU1=J6;S=Smith;G=John;CN=Duty Officer;",
        "/C=GB/ADMD= /PRMD=NATO/O=ACT/OU=J6/S=Smith/G=John/CN=Duty Officer/",
        "  CN=Duty Officer ; G=John;S=Smith;;OU=J6;O=ACT;P=NATO;A=   ;C=GB  ",
    ],
)
def test_keys_are_case_insensitive_synonyms_in_any_order(text: str) -> None:
    assert parse_orname(text) == EXAMPLE


def test_all_attributes() -> None:
    text = (
        "C=234;ADMD=ADMD1;PRMD=0042;O=Org;OU=a;OU=b;OU=c;OU=d;S=Smith;G=John;I=JQ;Q=III;"
        "CN=Duty;X121=1234 5;T-ID=term-1;UA-ID=987;DDA:RFC-822=a(a)b.c;DDA:x=y;"
        "EXT:4=#3103800141;DN=#300c310a30080603550403130178"
    )
    name = parse_orname(text)
    assert name == ORName(
        country="234",
        admd="ADMD1",
        prmd="0042",
        organization="Org",
        organizational_units=("a", "b", "c", "d"),
        surname="Smith",
        given_name="John",
        initials="JQ",
        generation_qualifier="III",
        common_name="Duty",
        network_address="1234 5",
        terminal_identifier="term-1",
        numeric_user_identifier="987",
        domain_defined=(("RFC-822", "a(a)b.c"), ("x", "y")),
        extension_attributes=(ExtensionAttribute(type=4, value=bytes.fromhex("3103800141")),),
        directory_name=bytes.fromhex("300c310a30080603550403130178"),
    )
    assert format_orname(name) == text
    assert name.is_numeric("country") and name.is_numeric("prmd")
    assert not name.is_numeric("admd")


def test_more_synonyms() -> None:
    long_form = parse_orname("S=a;I=b;GQ=jr;NA=123;TID=t;N-ID=9;DD.k=v;OU1=x;OU2=y")
    assert long_form == ORName(
        surname="a",
        initials="b",
        generation_qualifier="jr",
        network_address="123",
        terminal_identifier="t",
        numeric_user_identifier="9",
        domain_defined=(("k", "v"),),
        organizational_units=("x", "y"),
    )
    assert parse_orname("S=a;INITIALS=b;GENERATION=jr") == parse_orname("S=a;I=b;Q=jr")


def test_numbered_units_may_come_in_any_order() -> None:
    assert parse_orname("OU3=c;OU1=a;OU2=b").organizational_units == ("a", "b", "c")


# --- escaping: a backslash makes the next character literal ---------------------------


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("/O=a\\/b/S=x/", ORName(organization="a/b", surname="x")),
        ("O=a/b;S=x", ORName(organization="a/b", surname="x")),
        ("S=\\ lead;G=trail\\ ", ORName(surname=" lead", given_name="trail ")),
        ("S=\\ ", ORName(surname=" ")),
        ("DDA:a\\=b=c=d", ORName(domain_defined=(("a=b", "c=d"),))),
        ("O=x\\y", ORName(organization="xy")),
    ],
)
def test_escapes(text: str, name: ORName) -> None:
    assert parse_orname(text) == name
    assert parse_orname(format_orname(name)) == name
    assert parse_orname(format_orname(name, "slash")) == name


def test_format_escapes_separators_and_backslashes() -> None:
    # Values like these only arrive from BER (they are not PrintableString): the text
    # still shows them unambiguously.
    name = ORName(organization="a;b\\c/d", surname=" s ")
    assert format_orname(name) == "O=a\\;b\\\\c/d;S=\\ s\\ "
    assert format_orname(name, "slash") == "/O=a;b\\\\c\\/d/S=\\ s\\ /"


# --- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("C=GB;XYZ=1", "unknown attribute `XYZ`"),
        ("C=GB;S=", "empty value for `S`"),
        ("C=GB;S=  ", "empty value for `S`"),
        ("ADMD=", "empty value for `ADMD`"),
        ("OU=a;OU=b;OU=c;OU=d;OU=e", "more than 4 `OU` (ub-organizational-units)"),
        ("OU2=b", "`OU2` without `OU1`"),
        ("OU=a;OU1=b", "`OU1` given twice"),
        ("C=GB;G=John", "`G` without `S` (personal-name needs a surname)"),
        ("I=J", "`I` without `S` (personal-name needs a surname)"),
        ("S=a;S=b", "`S` given twice"),
        ("S=a;SURNAME=b", "`S` given twice"),
        ("C=GB;foo", "`foo` is not of the form key=value"),
        ("S=abc\\", "the text ends with a lone backslash"),
        ("", "no attributes: an O/R name needs at least one"),
        (" ; ", "no attributes: an O/R name needs at least one"),
        ("C=GBR", "value of `C` must be 2 letters (ISO 3166) or 3 digits (X.121 DCC), not 'GBR'"),
        ("C=12", "value of `C` must be 3 digits (X.121 DCC) or 2 letters (ISO 3166), not '12'"),
        ("C=G!", "value of `C` has characters outside PrintableString: '!'"),
        (
            "PRMD=" + "p" * 17,
            "value of `PRMD` is 17 characters, more than ub-domain-name-length (16)",
        ),
        (
            "ADMD=" + "a" * 17,
            "value of `ADMD` is 17 characters, more than ub-domain-name-length (16)",
        ),
        (
            "O=" + "o" * 65,
            "value of `O` is 65 characters, more than ub-organization-name-length (64)",
        ),
        (
            "OU=" + "u" * 33,
            "value of `OU` is 33 characters, more than ub-organizational-unit-name-length (32)",
        ),
        ("S=" + "s" * 41, "value of `S` is 41 characters, more than ub-surname-length (40)"),
        ("S=a;G=" + "g" * 17, "value of `G` is 17 characters, more than ub-given-name-length (16)"),
        ("S=a;I=ABCDEF", "value of `I` is 6 characters, more than ub-initials-length (5)"),
        (
            "S=a;Q=IIII",
            "value of `Q` is 4 characters, more than ub-generation-qualifier-length (3)",
        ),
        ("CN=" + "c" * 65, "value of `CN` is 65 characters, more than ub-common-name-length (64)"),
        ("O=a@b_c", "value of `O` has characters outside PrintableString: '@', '_'"),
        ("S=Müller", "value of `S` has characters outside PrintableString: 'ü'"),
        ("X121=12a", "value of `X121` has characters outside NumericString: 'a'"),
        ("UA-ID=x", "value of `UA-ID` has characters outside NumericString: 'x'"),
        (
            "DDA:toolongtype=v",
            "value of `DDA type` is 11 characters, more than "
            "ub-domain-defined-attribute-type-length (8)",
        ),
        ("DDA:t=", "empty value for `DDA:t`"),
        ("DDA:=v", "empty value for `DDA type`"),
        (
            "DDA:a=1;DDA:b=2;DDA:c=3;DDA:d=4;DDA:e=5",
            "more than 4 `DDA` (ub-domain-defined-attributes)",
        ),
        ("EXT:x=#00", "`EXT:x` needs an extension attribute number, as in `EXT:7`"),
        (
            "EXT:4=3103800141",
            "value of `EXT:4` must be `#` followed by hex digits, not '3103800141'",
        ),
        ("EXT:4=#31038001", "value of `EXT:4` is not one BER value"),
        ("EXT:300=#0500", "extension attribute type 300 is outside 0..256"),
        ("DN=#zz", "value of `DN` must be `#` followed by hex digits, not '#zz'"),
        ("DN=#30000500", "value of `DN` is not one BER value"),
        ("DN=#300c310a30080603550403130178;DN=#3000", "`DN` given twice"),
    ],
)
def test_parse_errors(text: str, why: str) -> None:
    with pytest.raises(DecodeError) as info:
        parse_orname(text)
    assert info.value.why == why
    assert info.value.where == "O/R name"


def test_problems_of_a_constructed_address() -> None:
    assert EXAMPLE.problems() == ()
    bad = ORAddress(country="GB", given_name="J", organizational_units=("a",) * 5)
    assert bad.problems() == (
        "more than 4 `OU` (ub-organizational-units)",
        "`G` without `S` (personal-name needs a surname)",
    )
    # AdministrationDomainName is SIZE (0..16): empty is legal on the wire.
    assert ORAddress(admd="").problems() == ()
    assert ORAddress(admd="12 3", admd_numeric=True).problems() == ()
    assert ORAddress(admd="1a", admd_numeric=True).problems() == (
        "value of `ADMD` has characters outside NumericString: 'a'",
    )


# --- comparison -----------------------------------------------------------------------


def test_canonical_folds_case_and_spaces_in_a_fixed_order() -> None:
    name = parse_orname("CN=Duty   Officer;S=SMITH;G=John;OU=J6;O=Act;P=Nato;A= ;C=gb")
    assert name.canonical == "C=gb;ADMD= ;PRMD=nato;O=act;OU=j6;S=smith;G=john;CN=duty officer"
    assert name.same_as(EXAMPLE)
    assert name != EXAMPLE  # equality is on the exact values
    assert not name.same_as(parse_orname("C=GB;ADMD= ;PRMD=NATO;O=ACT;OU=J6;S=Smith"))


def test_canonical_ignores_string_forms_and_extension_order() -> None:
    a = ORAddress(
        prmd="12",
        prmd_numeric=False,
        extension_attributes=(
            ExtensionAttribute(type=9, value=b"\x12\x01\x31"),
            ExtensionAttribute(type=4, value=b"\x31\x03\x80\x01\x41"),
        ),
    )
    b = ORAddress(prmd="12", extension_attributes=tuple(reversed(a.extension_attributes)))
    assert a != b
    assert a.same_as(b)
    assert a.canonical == "PRMD=12;EXT:4=#3103800141;EXT:9=#120131"


def test_canonical_leaves_out_the_directory_name_unless_it_is_all_there_is() -> None:
    dn = bytes.fromhex("300c310a30080603550403130178")
    with_dn = ORName.from_address(EXAMPLE, directory_name=dn)
    assert with_dn.canonical == EXAMPLE.canonical
    assert ORName(directory_name=dn).canonical == "DN=#300c310a30080603550403130178"


def test_route_key() -> None:
    assert EXAMPLE.route_key() == ("gb", " ", "nato", "act", "j6")
    assert parse_orname("C=GB;O=Org;S=x").route_key() == ("gb", "", "", "org")
    assert parse_orname("S=x").route_key() == ()
    routes = [parse_orname("C=GB;ADMD= ;PRMD=NATO").route_key(), ("fr",)]
    key = EXAMPLE.route_key()
    assert [r for r in routes if key[: len(r)] == r] == [("gb", " ", "nato")]


def test_address_and_from_address() -> None:
    dn = bytes.fromhex("3000")
    name = ORName.from_address(EXAMPLE.address, directory_name=dn)
    assert type(EXAMPLE.address) is ORAddress
    assert name.address == EXAMPLE.address
    assert name.directory_name == dn
    assert ORName.from_address(EXAMPLE.address) == EXAMPLE


def test_form_flags_are_stored_only_when_they_differ_from_the_value() -> None:
    assert ORAddress(prmd="12", prmd_numeric=True) == ORAddress(prmd="12")
    assert ORAddress(prmd="x", prmd_numeric=False).prmd_numeric is None
    assert ORAddress(prmd="12", prmd_numeric=False).prmd_numeric is False
    assert ORAddress(common_name="x", common_name_position=0).common_name_position is None
    assert ORAddress(common_name_position=2).common_name_position is None


# --- BER ------------------------------------------------------------------------------


def test_example_encodes_to_the_expected_bytes() -> None:
    assert encode_orname(EXAMPLE) == EXAMPLE_BER
    assert decode_orname(EXAMPLE_BER) == EXAMPLE


def test_oraddress_codec() -> None:
    data = encode_oraddress(EXAMPLE.address)
    assert data == b"\x30\x46" + EXAMPLE_BER[2:]
    assert decode_oraddress(data) == EXAMPLE.address


def test_numeric_and_printable_forms_re_encode_exactly() -> None:
    data = bytes.fromhex(
        "601b3019"
        "61051203323334"  # country x121-dcc-code NumericString "234"
        "620413023132"  # ADMD PrintableString "12" (digits, but printable)
        "a2051203 313233"  # PRMD NumericString "123"
        "a5038001 78".replace(" ", "")  # surname "x"
    )
    name = decode_orname(data)
    assert (name.country, name.admd, name.prmd) == ("234", "12", "123")
    assert name.is_numeric("country") and not name.is_numeric("admd")
    assert name.is_numeric("prmd")
    assert name.admd_numeric is False
    assert encode_orname(name) == data


def test_unknown_extension_attributes_re_encode_byte_exact() -> None:
    attributes = [
        # teletex-personal-name (4): TeletexPersonalName SET { surname [0] "ZZ" }
        "300b800104a106310480025a5a",
        # common-name (1) "Ops", after the teletex one (as a DER sorter places it)
        "300a800101a10513034f7073",
        # a type no standard defines (200) holding SEQUENCE { INTEGER 1, OCTET STRING }
        "3010800200c8a10a300802010104037a7a7a",
        # common-name (1) again: only the first is modelled, this one is kept raw
        "3009800101a10413027878",
    ]
    body = bytes.fromhex("".join(attributes))
    standard = bytes.fromhex("300b610413024742a503800178")  # C=GB, S=x
    inner = standard + der(0x31, body)
    data = der(0x60, inner)
    name = decode_orname(data)
    assert name.common_name == "Ops"
    assert name.common_name_position == 1
    assert name.extension_attributes == (
        ExtensionAttribute(type=4, value=bytes.fromhex("310480025a5a")),
        ExtensionAttribute(type=200, value=bytes.fromhex("300802010104037a7a7a")),
        ExtensionAttribute(type=1, value=bytes.fromhex("13027878")),
    )
    assert encode_orname(name) == data
    assert format_orname(name) == (
        "C=GB;S=x;CN=Ops;EXT:4=#310480025a5a;EXT:200=#300802010104037a7a7a;EXT:1=#13027878"
    )
    assert parse_orname(format_orname(name)) == dataclasses.replace(name, common_name_position=None)


@pytest.mark.parametrize(
    "raw_cn",
    [
        "13034f7073",  # as we write it
        "1381034f7073",  # long-form length
        "33070401 4f04 027073",  # two segments
        "3380 04014f 04027073 0000",  # two segments, indefinite length
    ],
)
def test_common_name_in_any_form_reads_as_its_text(raw_cn: str) -> None:
    # A name keyed on its common name must route the same whatever the sender's form.
    cn_value = bytes.fromhex(raw_cn.replace(" ", ""))
    attribute = der(0x30, b"\x80\x01\x01" + der(0xA1, cn_value))
    inner = bytes.fromhex("3000") + b"\x31" + bytes([len(attribute)]) + attribute
    data = b"\x60" + bytes([len(inner)]) + inner
    name = decode_orname(data)
    assert name == ORName(common_name="Ops")
    assert format_orname(name) == "CN=Ops"
    assert encode_orname(name) == encode_orname(ORName(common_name="Ops"))


def test_a_common_name_that_is_not_a_printable_string_is_kept_as_received() -> None:
    raw_cn = bytes.fromhex("14034f7073")  # TeletexString: not CommonName's type
    attribute = der(0x30, b"\x80\x01\x01" + der(0xA1, raw_cn))
    inner = bytes.fromhex("3000") + b"\x31" + bytes([len(attribute)]) + attribute
    data = b"\x60" + bytes([len(inner)]) + inner
    name = decode_orname(data)
    assert name.common_name is None
    assert name.extension_attributes == (ExtensionAttribute(type=1, value=raw_cn),)
    assert encode_orname(name) == data


def test_empty_standard_attributes_with_a_domain_defined_attribute() -> None:
    name = ORName(domain_defined=(("RFC-822", "a(a)b.c"),))
    data = encode_orname(name)
    assert data.hex() == "601830003014301213075246432d383232130761286129622e63"
    assert decode_orname(data) == name


def test_asn1_value_shape() -> None:
    value = orname_to_asn1(EXAMPLE)
    assert value == {
        "built-in-standard-attributes": {
            "country-name": ("iso-3166-alpha2-code", "GB"),
            "administration-domain-name": ("printable", " "),
            "private-domain-name": ("printable", "NATO"),
            "organization-name": "ACT",
            "personal-name": {"surname": "Smith", "given-name": "John"},
            "organizational-unit-names": ["J6"],
        },
        "extension-attributes": [
            {"extension-attribute-type": 1, "extension-attribute-value": b"\x13\x0cDuty Officer"}
        ],
    }
    assert orname_from_asn1(value) == EXAMPLE


def test_from_asn1_rejects_a_wrong_shape() -> None:
    with pytest.raises(DecodeError, match="unexpected value shape"):
        orname_from_asn1({"built-in-standard-attributes": {"organization-name": 5}})
    with pytest.raises(DecodeError, match="unexpected value shape"):
        orname_from_asn1({})


def test_encode_errors_are_encode_errors() -> None:
    with pytest.raises(EncodeError):
        encode_orname(ORName(given_name="no surname"))
    with pytest.raises(EncodeError):
        encode_orname(ORName(surname="Müller"))


@pytest.mark.parametrize(
    ("hex_data", "why"),
    [
        ("", "truncated: a tag was expected"),
        ("60", "truncated: a length was expected"),
        ("6000", "missing built-in-standard-attributes"),
        ("3000", "expected [APPLICATION 0], found [UNIVERSAL 16]"),
        ("60023000ff", "1 trailing byte(s) after the value"),
        ("6004300261", "truncated: 4 content octets announced, 3 present"),
        ("6006300461021600", "expected a NumericString or PrintableString, found [UNIVERSAL 22]"),
        ("60083006a50481024142", "missing surname"),  # personal-name without surname
        ("600a30086106130141130142", "explicit tag holds 2 values, not one"),
        ("6007300561031301e9", "0xe9 at 0 is not a PrintableString character"),
        ("600630048102ff00", "0xff at 0 is not a PrintableString character"),
        ("6006300487020000", "unexpected [7]"),
        ("6008300683014183 0142", "organization appears twice"),
        ("6006300441021300", "country must be constructed"),
        ("6008300031043002 8000".replace(" ", ""), "an attribute is SEQUENCE"),
        ("6080 3000", "missing end-of-contents"),
    ],
)
def test_malformed_encodings(hex_data: str, why: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_orname(bytes.fromhex(hex_data.replace(" ", "")))
    assert why in info.value.why


def test_out_of_bounds_values_are_decoded_and_reported() -> None:
    # Be liberal in what you accept: a country of one letter decodes, and problems()
    # says why it would not be sent.  (An empty one does not: see test_orname_alphabets.)
    name = decode_orname(bytes.fromhex("600730056103130147"))
    assert name.country == "G"
    assert name.problems() == (
        "value of `C` must be 2 letters (ISO 3166) or 3 digits (X.121 DCC), not 'G'",
    )


def test_extension_attribute_type_names() -> None:
    named = (
        ExtensionAttributeType.COMMON_NAME,
        ExtensionAttributeType.TELETEX_PERSONAL_NAME,
        ExtensionAttributeType.TERMINAL_TYPE,
        ExtensionAttributeType.UNIVERSAL_LOCAL_POSTAL_ATTRIBUTES,
    )
    assert [int(member) for member in named] == [1, 4, 23, 40]
    assert len(ExtensionAttributeType) == 40


# --- properties -----------------------------------------------------------------------

PRINTABLE = "".join(sorted(PRINTABLE_CHARACTERS))
DIGITS = string.digits


def printable(max_size: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=PRINTABLE, min_size=1, max_size=max_size)


def optional(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[str | None]:
    return st.none() | strategy


def short_tlv() -> st.SearchStrategy[bytes]:
    return st.binary(max_size=20).map(lambda body: b"\x04" + bytes([len(body)]) + body)


def directory_names() -> st.SearchStrategy[bytes]:
    """DER X.500 Names: RDNs of one commonName/organizationName PrintableString each."""
    ava = st.tuples(st.sampled_from([b"\x55\x04\x03", b"\x55\x04\x0a"]), printable(8)).map(
        lambda pair: der(0x30, der(0x06, pair[0]) + der(0x13, pair[1].encode()))
    )
    rdns = st.lists(ava.map(lambda a: der(0x31, a)), max_size=3)
    return rdns.map(lambda items: der(0x30, b"".join(items)))


@st.composite
def ornames(draw: st.DrawFn, *, wire_forms: bool = False, with_dn: bool = False) -> ORName:
    surname = draw(optional(printable(40)))
    country = draw(
        optional(st.text(alphabet=string.ascii_letters, min_size=2, max_size=2))
        | st.text(alphabet=DIGITS, min_size=3, max_size=3)
    )
    admd = draw(optional(st.just(" ") | printable(16)))
    prmd = draw(optional(printable(16)))
    extensions = draw(
        st.lists(
            st.builds(ExtensionAttribute, type=st.integers(2, 256), value=short_tlv()),
            max_size=3,
        )
    )
    common_name = draw(optional(printable(64)))
    fields: dict[str, object] = {}
    if wire_forms:
        for field, value in (("admd", admd), ("prmd", prmd)):
            if value is not None and set(value) <= NUMERIC_CHARACTERS:
                fields[f"{field}_numeric"] = draw(st.booleans())
        if common_name is not None:
            fields["common_name_position"] = draw(st.integers(0, len(extensions)))
    name = ORName(
        country=country,
        admd=admd,
        prmd=prmd,
        organization=draw(optional(printable(64))),
        organizational_units=tuple(draw(st.lists(printable(32), max_size=4))),
        surname=surname,
        given_name=draw(optional(printable(16))) if surname else None,
        initials=draw(optional(printable(5))) if surname else None,
        generation_qualifier=draw(optional(printable(3))) if surname else None,
        common_name=common_name,
        network_address=draw(optional(st.text(alphabet=DIGITS + " ", min_size=1, max_size=16))),
        terminal_identifier=draw(optional(printable(24))),
        numeric_user_identifier=draw(optional(st.text(alphabet=DIGITS, min_size=1, max_size=32))),
        domain_defined=tuple(draw(st.lists(st.tuples(printable(8), printable(128)), max_size=4))),
        extension_attributes=tuple(extensions),
        directory_name=draw(directory_names()) if with_dn else None,
        **fields,  # type: ignore[arg-type]
    )
    assert name.problems() == ()
    return name


def has_attributes(name: ORName) -> bool:
    return bool(format_orname(name))


@settings(max_examples=examples(3), suppress_health_check=[HealthCheck.too_slow])
@given(ornames(), st.sampled_from(["semicolon", "slash"]))
def test_text_round_trip(name: ORName, style: str) -> None:
    if not has_attributes(name):
        return
    text = format_orname(name, style)  # type: ignore[arg-type]
    assert parse_orname(text) == name
    assert parse_orname(text).canonical == name.canonical


@pytest.mark.slow
@settings(max_examples=examples(3), suppress_health_check=[HealthCheck.too_slow])
@given(ornames(wire_forms=True))
def test_ber_round_trip(name: ORName) -> None:
    data = encode_orname(name)
    decoded = decode_orname(data)
    assert decoded == name
    assert encode_orname(decoded) == data


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(ornames(wire_forms=True, with_dn=True))
def test_ber_round_trip_with_directory_name(name: ORName) -> None:
    data = encode_orname(name)
    assert decode_orname(data) == name
    assert data.endswith(
        b"\xa0" + bytes([len(name.directory_name or b"")]) + (name.directory_name or b"")
    )


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(ornames(with_dn=True))
def test_text_round_trip_with_directory_name(name: ORName) -> None:
    assert parse_orname(format_orname(name)) == name


@settings(max_examples=examples(5))
@given(
    st.sampled_from(["flip", "delete", "insert", "truncate"]),
    st.integers(min_value=0),
    st.integers(min_value=0, max_value=255),
)
def test_mutated_encodings_give_an_orname_or_decode_error(
    mutation: str, position: int, byte: int
) -> None:
    data = bytearray(EXAMPLE_BER)
    index = position % len(data)
    if mutation == "flip":
        data[index] ^= byte or 1
    elif mutation == "delete":
        del data[index]
    elif mutation == "insert":
        data.insert(index, byte)
    else:
        del data[index:]
    try:
        result = decode_orname(bytes(data))
    except DecodeError:
        return
    assert isinstance(result, ORName)


# --- the direct BER codec against asn1tools -------------------------------------------
#
# encode_orname / decode_orname read and write the BER themselves; the compiled module
# (MTSAbstractService.ORName) is the reference they must agree with, both ways.


def asn1_encode(name: ORName) -> bytes:
    return asn1.encode(orname.MODULE, "ORName", orname_to_asn1(name))


def asn1_decode(data: bytes) -> ORName:
    return orname_from_asn1(asn1.decode(orname.MODULE, "ORName", data))


@contextlib.contextmanager
def asn1tools_forbidden() -> Iterator[None]:
    """Fail if a name is handed to asn1tools instead of read directly."""
    with mock.patch.object(asn1, "decode", side_effect=AssertionError("asn1tools")):
        yield


def outcome(action: Callable[[], object]) -> object:
    """The value, or the codec error's class and text."""
    try:
        return action()
    except (DecodeError, EncodeError) as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.slow
@settings(max_examples=examples(3), suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans().flatmap(lambda dn: ornames(wire_forms=True, with_dn=dn)))
def test_direct_codec_agrees_with_asn1tools(name: ORName) -> None:
    data = encode_orname(name)
    assert data == asn1_encode(name)
    assert asn1.decode(orname.MODULE, "ORName", data) == orname_to_asn1(name)
    with asn1tools_forbidden():
        decoded = decode_orname(data)
    assert decoded == asn1_decode(data) == name
    address = name.address
    address_data = encode_oraddress(address)
    assert address_data == asn1.encode(orname.MODULE, "ORAddress", oraddress_to_asn1(address))
    with asn1tools_forbidden():
        assert decode_oraddress(address_data) == address


ANY_TEXT = st.text(max_size=140)  # any characters; past 127 octets the length is long-form
TEXT_FIELDS = (
    "country",
    "admd",
    "prmd",
    "organization",
    "surname",
    "given_name",
    "initials",
    "generation_qualifier",
    "common_name",
    "network_address",
    "terminal_identifier",
    "numeric_user_identifier",
)


@st.composite
def any_ornames(draw: st.DrawFn) -> ORName:
    """O/R names with any text, extension attributes and directory name (valid or not)."""
    name = draw(st.booleans().flatmap(lambda dn: ornames(wire_forms=True, with_dn=dn)))
    changes: dict[str, object] = {
        field: draw(st.none() | ANY_TEXT)
        for field in draw(st.sets(st.sampled_from(TEXT_FIELDS), max_size=4))
    }
    if draw(st.booleans()):
        changes["organizational_units"] = tuple(draw(st.lists(ANY_TEXT, max_size=5)))
    if draw(st.booleans()):
        changes["domain_defined"] = tuple(draw(st.lists(st.tuples(ANY_TEXT, ANY_TEXT), max_size=5)))
    if draw(st.booleans()):
        extension = st.builds(
            ExtensionAttribute, type=st.integers(-(2**70), 2**70), value=st.binary(max_size=200)
        )
        changes["extension_attributes"] = tuple(draw(st.lists(extension, max_size=3)))
        changes["common_name_position"] = draw(st.integers(-3, 4))
    if draw(st.booleans()):
        changes["directory_name"] = draw(st.binary(max_size=200))
    return dataclasses.replace(name, **changes)  # type: ignore[arg-type]


@pytest.mark.slow
@settings(max_examples=examples(5), suppress_health_check=[HealthCheck.too_slow])
@given(any_ornames())
def test_direct_encoder_agrees_with_asn1tools_on_any_value(name: ORName) -> None:
    assert outcome(lambda: encode_orname(name)) == outcome(lambda: asn1_encode(name))


@pytest.mark.slow
@settings(max_examples=examples(5), suppress_health_check=[HealthCheck.too_slow])
@given(any_ornames(), st.data())
def test_damaged_input_is_a_decode_error_or_the_value_asn1tools_reads(
    name: ORName, data: st.DataObject
) -> None:
    try:
        encoded = bytearray(asn1_encode(name))
    except EncodeError:
        return
    for _ in range(data.draw(st.integers(0, 3))):
        position = data.draw(st.integers(0, len(encoded)))
        damage = data.draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
        if damage == "flip" and position < len(encoded):
            encoded[position] ^= 1 << data.draw(st.integers(0, 7))
        elif damage == "cut":
            del encoded[position:]
        elif damage == "insert":
            encoded[position:position] = data.draw(st.binary(min_size=1, max_size=3))
        else:
            del encoded[position : position + 1]
    damaged = bytes(encoded)
    as_address = b"\x30" + damaged[1:]
    for ours, reference in (
        (outcome(lambda: decode_orname(damaged)), outcome(lambda: asn1_decode(damaged))),
        (
            outcome(lambda: decode_oraddress(as_address)),
            outcome(
                lambda: oraddress_from_asn1(asn1.decode(orname.MODULE, "ORAddress", as_address))
            ),
        ),
    ):
        # Only DecodeError escapes; where both read a value, it is the same value.
        assert isinstance(ours, ORAddress) or (isinstance(ours, tuple) and ours[0] == "DecodeError")
        if isinstance(ours, ORAddress) and isinstance(reference, ORAddress):
            assert ours == reference


SMITH = ORName(country="GB", surname="Smith")


@pytest.mark.parametrize(
    ("data", "name"),
    [
        # indefinite length
        (b"\x60\x80" + EXAMPLE_BER[2:] + b"\0\0", EXAMPLE),
        # surname as a segmented (constructed) string
        (
            der(
                0x60,
                der(
                    0x30,
                    der(0x61, der(0x13, b"GB"))
                    + der(0xA5, der(0xA0, der(0x04, b"Sm") + der(0x04, b"ith"))),
                ),
            ),
            SMITH,
        ),
        # personal-name before country-name: their tags differ, so the order is no doubt
        (der(0x60, der(0x30, der(0xA5, der(0x80, b"Smith")) + der(0x61, der(0x13, b"GB")))), SMITH),
        # a constructed country name inside its explicit tag, a high-number tag for [5]
        (
            der(
                0x60,
                der(
                    0x30,
                    der(0x61, der(0x33, der(0x04, b"G") + der(0x04, b"B")))
                    + b"\xbf\x05\x07"
                    + der(0x80, b"Smith"),
                ),
            ),
            SMITH,
        ),
    ],
)
def test_every_legal_form_is_read_directly(data: bytes, name: ORName) -> None:
    with asn1tools_forbidden():
        assert decode_orname(data) == name


def _orname_string(path: ber_forms.Path, octet: int) -> bool:
    """Every primitive in an O/R name is a string, but an extension attribute's type."""
    return not (octet == 0x80 and path[-2:] == (0x31, 0x30))


def _orname_opaque(path: ber_forms.Path, octet: int, contents: bytes) -> bool:
    """Kept as received: the directory name and extension attributes but common-name."""
    if octet == 0xA0 and len(path) == 1:
        return True
    return octet == 0x30 and path[-1:] == (0x31,) and not contents.startswith(b"\x80\x01\x01")


ORNAME_FORMS = ber_forms.Rules(string=_orname_string, opaque=_orname_opaque, high_tags=True)


@pytest.mark.slow
@settings(max_examples=examples(10), suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans().flatmap(lambda dn: ornames(wire_forms=True, with_dn=dn)), st.randoms())
def test_any_legal_ber_form_decodes_to_the_same_name(name: ORName, rnd: random.Random) -> None:
    data = ber_forms.reform(encode_orname(name), rnd, ORNAME_FORMS)
    with asn1tools_forbidden():
        assert decode_orname(data) == name
        address = ber_forms.reform(encode_oraddress(name.address), rnd, ORNAME_FORMS)
        assert decode_oraddress(address) == name.address


def test_long_form_lengths_are_read_directly() -> None:
    data = b"\x60\x81\x46" + EXAMPLE_BER[2:]  # not minimal, but the direct reader's form
    with asn1tools_forbidden():
        assert decode_orname(data) == EXAMPLE
    long_name = dataclasses.replace(EXAMPLE, domain_defined=(("t", "v" * 128),))
    encoded = encode_orname(long_name)
    assert encoded[:2] == b"\x60\x81" and encoded == asn1_encode(long_name)
    with asn1tools_forbidden():
        assert decode_orname(encoded) == long_name
