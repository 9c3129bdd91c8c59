"""The STANAG 4406 Annex A heading extensions typed after the first eleven
(MMSHeadingExtensions): address-list-indicator {id-mm 3}, codress-message {id-mm 9},
other-recipients-indicator {id-mm 11}, pilot-forwarding-info {id-mm 12} and the
deprecated security-information-labels {id-mm 17}.

Each round-trips through the heading codec, and asn1tools, compiled from the modules,
reads our bytes to the same values and writes them back unchanged.  Every legal BER form
of a heading holding them reads to the same heading; a value not of its type stays a
RawExtension; values outside the named ones (national use) are kept.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p1 import asn1, ber
from p1.errors import EncodeError
from p1.ipms.heading import decode_heading, encode_descriptor, encode_heading
from p1.ipms.models import (
    AddressListDesignator,
    AddressListRequest,
    AddressListType,
    BodyPartSecurityLabel,
    Heading,
    IPMIdentifier,
    ORDescriptor,
    OtherRecipientDesignator,
    OtherRecipientType,
    PilotInformation,
    RawExtension,
    SecurityInformationLabels,
)
from p1.mts.orname import parse_orname
from p1.mts.precedence import Precedence
from p1.mts.security_label import SecurityCategory, SecurityLabel
from tests.p1 import ber_forms, strategies
from tests.p1.test_forms_pdus import IPMS_FORMS
from tests.profiles import examples

IPMS = "IPMSInformationObjects"
MMHS = "MMSHeadingExtensions"
ID_MM = "1.3.26.0.4406.0.2"
THIS_IPM = IPMIdentifier(user_relative_identifier="1")
NAME = parse_orname("C=GB;ADMD= ;PRMD=NATO;O=ACT;S=Smith")
LABEL = SecurityLabel(
    policy="1.3.26.0.4406.0.5.1",
    classification=4,
    privacy_mark="NATO",
    categories=(SecurityCategory("1.2.3", b"\x02\x01\x05"),),
)

# The ASN.1 type of each extension's value, by arc.
VALUE_TYPES = {
    3: "AddressListDesignatorSeq",
    9: "CodressMessage",
    11: "OtherRecipientDesignatorSeq",
    12: "PilotInformationSeq",
    17: "SecurityInformationLabels",
}
FIELDS = {
    3: "address_list_indicator",
    9: "codress_message",
    11: "other_recipients_indicator",
    12: "pilot_forwarding_info",
    17: "security_information_labels",
}


def decode(data: bytes) -> Heading:
    return decode_heading(data, ber.read(data, 0, len(data)))


def asn1_values(encoded: bytes) -> dict[int, Any]:
    """The heading read by asn1tools, and each typed extension's value read as its
    MMSHeadingExtensions type, by arc; asn1tools writes every one back unchanged."""
    heading = asn1.decode(IPMS, "Heading", encoded)
    assert asn1.encode(IPMS, "Heading", heading) == encoded
    values = {}
    for extension in heading.get("extensions", []):
        arc = int(extension["type"].removeprefix(ID_MM + "."))
        value = asn1.decode(MMHS, VALUE_TYPES[arc], extension["value"])
        assert asn1.encode(MMHS, VALUE_TYPES[arc], value) == extension["value"]
        values[arc] = value
    return values


# --- our values in asn1tools' form -----------------------------------------------------


def _present(**members: Any) -> dict[str, Any]:
    """The members that are present (not None, not an empty tuple)."""
    return {name: value for name, value in members.items() if value is not None and value != ()}


def label_form(label: SecurityLabel) -> dict[str, Any]:
    categories = [{"type": c.type, "value": c.value} for c in label.categories]
    return _present(
        **{
            "security-policy-identifier": label.policy,
            "security-classification": label.classification,
            "privacy-mark": label.privacy_mark,
            "security-categories": categories or None,
        }
    )


def descriptor_form(descriptor: ORDescriptor) -> Any:
    """An ORDescriptor as asn1tools reads it (its codec has its own tests)."""
    return asn1.decode(IPMS, "ORDescriptor", encode_descriptor(descriptor))


def address_list_form(value: AddressListDesignator) -> dict[str, Any]:
    return _present(
        type=value.type,
        listName=descriptor_form(value.list_name),
        notificationRequest=value.notification_request,
        replyRequest=value.reply_request,
    )


def other_recipient_form(value: OtherRecipientDesignator) -> dict[str, Any]:
    return {"type": value.type, "designator": value.designator}


def pilot_form(value: PilotInformation) -> dict[str, Any]:
    return _present(
        pilotPrecedence=value.precedence,
        pilotRecipient=[descriptor_form(d) for d in value.recipients] or None,
        pilotSecurity=None if value.security_label is None else label_form(value.security_label),
        pilotHandling=list(value.handling) or None,
    )


def body_part_label_form(value: BodyPartSecurityLabel) -> dict[str, Any]:
    return _present(
        **{
            "body-part-security-label": label_form(value.security_label),
            "body-part-sequence-number": value.sequence_number,
        }
    )


def information_labels_form(value: SecurityInformationLabels) -> dict[str, Any]:
    heading = value.heading_security_label
    parts = [body_part_label_form(part) for part in value.body_part_security_labels]
    return _present(
        **{
            "content-security-label": label_form(value.content_security_label),
            "heading-security-label": None if heading is None else label_form(heading),
            "body-part-security-labels": parts or None,
        }
    )


def asn1_form(arc: int, value: Any) -> Any:
    """A Heading field's value as asn1tools reads the extension's value."""
    if arc == 3:
        return [address_list_form(item) for item in value]
    if arc == 11:
        return [other_recipient_form(item) for item in value]
    if arc == 12:
        return [pilot_form(item) for item in value]
    if arc == 17:
        return information_labels_form(value)
    return value


def check_against_modules(heading: Heading) -> bytes:
    """Encode, decode (the same heading), and let asn1tools read the same values."""
    encoded = encode_heading(heading)
    assert decode(encoded) == heading
    values = asn1_values(encoded)
    for arc, field in FIELDS.items():
        value = getattr(heading, field)
        if value is None or value == ():
            assert arc not in values
        else:
            assert values[arc] == asn1_form(arc, value), field
    return encoded


# --- round trips, one property per type -------------------------------------------------


@given(strategies.tuples(strategies.address_list_designators, min_size=1, max_size=2))
def test_address_list_indicator_round_trip(value: tuple[AddressListDesignator, ...]) -> None:
    check_against_modules(Heading(this_ipm=THIS_IPM, address_list_indicator=value))


@given(st.integers(-(2**100), 2**100))
def test_codress_message_round_trip(value: int) -> None:
    check_against_modules(Heading(this_ipm=THIS_IPM, codress_message=value))


@given(strategies.tuples(strategies.other_recipient_designators, min_size=1))
def test_other_recipients_indicator_round_trip(
    value: tuple[OtherRecipientDesignator, ...],
) -> None:
    check_against_modules(Heading(this_ipm=THIS_IPM, other_recipients_indicator=value))


@given(strategies.tuples(strategies.pilot_informations(), min_size=1, max_size=2))
def test_pilot_forwarding_info_round_trip(value: tuple[PilotInformation, ...]) -> None:
    check_against_modules(Heading(this_ipm=THIS_IPM, pilot_forwarding_info=value))


@given(strategies.security_information_labels())
def test_security_information_labels_round_trip(value: SecurityInformationLabels) -> None:
    check_against_modules(Heading(this_ipm=THIS_IPM, security_information_labels=value))


@settings(max_examples=examples(0.5), suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries(strategies.mm_heading_extensions()))
def test_all_of_them_together(fields: dict[str, Any]) -> None:
    encoded = check_against_modules(Heading(this_ipm=THIS_IPM, **fields))
    arcs = [arc for arc, field in FIELDS.items() if fields[field] not in (None, ())]
    assert list(asn1_values(encoded)) == arcs  # in the order of their identifiers


# --- exact bytes ------------------------------------------------------------------------

_FORMAL = encode_descriptor(ORDescriptor(formal_name=NAME), 0xA1).hex()


@pytest.mark.parametrize(
    ("field", "value", "hex_"),
    [
        ("codress_message", 5, "020105"),
        ("codress_message", -1, "0201ff"),
        (
            "address_list_indicator",
            (
                AddressListDesignator(
                    type=AddressListType.COPY_ADDRESS_LIST,
                    list_name=ORDescriptor(free_form_name="L"),
                    reply_request=AddressListRequest.BOTH,
                ),
            ),
            # SEQUENCE { SET { [0] 1, [1] { [0] "L" }, [3] 2 } }
            "300d310b800101a10380014c830102",
        ),
        (
            "other_recipients_indicator",
            (OtherRecipientDesignator(type=OtherRecipientType.COPY, designator="RUAB"),),
            "300b3109800101810452554142",  # SEQUENCE { SET { [0] 1, [1] "RUAB" } }
        ),
        (
            "pilot_forwarding_info",
            (
                PilotInformation(
                    precedence=Precedence.FLASH,
                    security_label=SecurityLabel(classification=2),
                    handling=("X",),
                ),
                PilotInformation(),
            ),
            # SEQUENCE { SEQUENCE { [0] 4, [2] { INTEGER 2 }, [3] { "X" } }, SEQUENCE {} }
            "3011300d800104a203020102a3031301583000",
        ),
        (
            "security_information_labels",
            SecurityInformationLabels(
                content_security_label=SecurityLabel(privacy_mark="P"),
                body_part_security_labels=(
                    BodyPartSecurityLabel(security_label=SecurityLabel(), sequence_number=1),
                ),
            ),
            # SEQUENCE { [0] { "P" }, [2] { SET { [0] {}, [1] 1 } } }
            "300ea003130150a2073105a000810101",
        ),
    ],
)
def test_exact_bytes(field: str, value: Any, hex_: str) -> None:
    encoded = check_against_modules(Heading(this_ipm=THIS_IPM, **{field: value}))
    arc = next(arc for arc, name in FIELDS.items() if name == field)
    value_bytes = bytes.fromhex(hex_.replace(" ", ""))
    extension = RawExtension(type=f"{ID_MM}.{arc}", value=value_bytes)
    expected = encode_heading(Heading(this_ipm=THIS_IPM, other_extensions=(extension,)))
    assert encoded == expected


def test_the_list_name_is_an_implicit_descriptor() -> None:
    designator = AddressListDesignator(type=0, list_name=ORDescriptor(formal_name=NAME))
    encoded = encode_heading(Heading(this_ipm=THIS_IPM, address_list_indicator=(designator,)))
    assert bytes.fromhex(_FORMAL) in encoded  # [1] holding the SET's contents


# --- national values -------------------------------------------------------------------


def test_national_values_round_trip() -> None:
    designator = AddressListDesignator(
        type=7, list_name=ORDescriptor(formal_name=NAME), notification_request=9, reply_request=1
    )
    other = OtherRecipientDesignator(type=5, designator="RUABC")
    pilot = PilotInformation(precedence=20)
    heading = Heading(
        this_ipm=THIS_IPM,
        address_list_indicator=(designator,),
        other_recipients_indicator=(other,),
        pilot_forwarding_info=(pilot,),
    )
    decoded = decode(check_against_modules(heading))
    (designator,) = decoded.address_list_indicator
    assert (designator.type, designator.named_type) == (7, None)
    assert designator.named_notification_request is None
    assert designator.named_reply_request is AddressListRequest.INFO
    assert decoded.other_recipients_indicator[0].named_type is None
    assert decoded.pilot_forwarding_info[0].precedence == 20
    assert decoded.pilot_forwarding_info[0].named_precedence is None


def test_named_values() -> None:
    designator = AddressListDesignator(type=1, list_name=ORDescriptor())
    assert designator.named_type is AddressListType.COPY_ADDRESS_LIST
    assert designator.named_notification_request is None  # absent
    assert OtherRecipientDesignator(type=0, designator="A").named_type is OtherRecipientType.PRIMARY
    assert PilotInformation(precedence=5).named_precedence is Precedence.OVERRIDE
    assert PilotInformation().named_precedence is None


# --- values not of their type stay raw ----------------------------------------------------

_WRONG = [
    (3, "3000"),  # an empty SEQUENCE OF: the model could not tell it from absent
    (3, "3003020101"),  # not a SET
    (3, "30053103800101"),  # listName missing
    (3, "300a3108800101a1008a0100"),  # an unknown member [10]
    (3, "30073105800101 8100"),  # listName primitive
    (9, "130135"),  # not an INTEGER
    (9, "0200"),  # an INTEGER without contents
    (11, "30053103800101"),  # designator missing
    (11, "300a3108800101a1031301 41"),  # designator constructed but not a string
    (12, "30023100"),  # a PilotInformation is a SEQUENCE
    (12, "300a3008a3031301588001 04"),  # members out of order
    (12, "30043002a100"),  # an empty pilotRecipient
    (12, "30073005a2030201ff"),  # classification -1
    (12, "3007300582030201 01"),  # pilotSecurity primitive
    (17, "30023000"),  # not a SEQUENCE of labels
    (17, "3000"),  # content-security-label missing
    (17, "3004a100a000"),  # members out of order
    (17, "3006a000a2023000"),  # a body part label is a SET
    (17, "3008a000a2043102a100"),  # body-part-security-label missing
]


@pytest.mark.parametrize(("arc", "hex_"), _WRONG)
def test_a_value_not_of_its_type_stays_raw(arc: int, hex_: str) -> None:
    extension = RawExtension(type=f"{ID_MM}.{arc}", value=bytes.fromhex(hex_.replace(" ", "")))
    heading = Heading(this_ipm=THIS_IPM, subject="kept", other_extensions=(extension,))
    encoded = encode_heading(heading)
    decoded = decode(encoded)
    assert decoded == heading
    assert getattr(decoded, FIELDS[arc]) in (None, ())
    assert encode_heading(decoded) == encoded


def test_a_second_occurrence_stays_raw() -> None:
    second = RawExtension(type=f"{ID_MM}.9", value=b"\x02\x01\x07")
    heading = Heading(this_ipm=THIS_IPM, codress_message=3, other_extensions=(second,))
    decoded = decode(encode_heading(heading))
    assert decoded.codress_message == 3
    assert decoded.other_extensions == (second,)


@pytest.mark.parametrize(
    "heading",
    [
        Heading(
            this_ipm=THIS_IPM,
            other_recipients_indicator=(OtherRecipientDesignator(type=0, designator="a_b"),),
        ),
        Heading(
            this_ipm=THIS_IPM,
            other_recipients_indicator=(OtherRecipientDesignator(type=0, designator=""),),
        ),
        Heading(this_ipm=THIS_IPM, pilot_forwarding_info=(PilotInformation(handling=("x" * 70,)),)),
        Heading(this_ipm=THIS_IPM, codress_message=True),
        Heading(
            this_ipm=THIS_IPM,
            pilot_forwarding_info=(
                PilotInformation(security_label=SecurityLabel(classification=257)),
            ),
        ),
        Heading(
            this_ipm=THIS_IPM,
            security_information_labels=SecurityInformationLabels(
                content_security_label=SecurityLabel(privacy_mark="")
            ),
        ),
    ],
)
def test_values_that_cannot_be_written(heading: Heading) -> None:
    with pytest.raises(EncodeError):
        encode_heading(heading)


# --- every legal BER form ---------------------------------------------------------------

_TYPED_OIDS = tuple(ber.oid_tlv(f"{ID_MM}.{arc}") for arc in range(18))


def _category_value(path: ber_forms.Path, octet: int) -> bool:
    """A security category's value [1]: kept as received, so not reformed."""
    return octet == 0xA1 and path[-2:] == (0x31, 0x30)


def _opaque(path: ber_forms.Path, octet: int, contents: bytes) -> bool:
    if _category_value(path, octet):
        return True
    if octet == 0x30 and contents.startswith(_TYPED_OIDS):
        return False  # a typed extension (IPMS_FORMS keeps some id-mm types opaque)
    return IPMS_FORMS.opaque(path, octet, contents)


FORMS = ber_forms.Rules(
    string=IPMS_FORMS.string, opaque=_opaque, high_tags=True, bits=IPMS_FORMS.bits
)


@pytest.mark.slow
@settings(max_examples=examples(1), suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries(strategies.mm_heading_extensions()), st.randoms(use_true_random=False))
def test_every_legal_form_decodes_to_the_same_heading(
    fields: dict[str, Any], rnd: random.Random
) -> None:
    heading = Heading(this_ipm=THIS_IPM, **fields)
    received = ber_forms.reform(encode_heading(heading), rnd, FORMS)
    assert decode(received) == heading


def test_decode_only_forms() -> None:
    # address-list-indicator: indefinite lengths, the SET's members in reverse order,
    # listName [1] and type [0] with long-form lengths.
    value = bytes.fromhex("30803180830102a18103800158808200010100000000")
    extension = RawExtension(type=f"{ID_MM}.3", value=value)
    decoded = decode(encode_heading(Heading(this_ipm=THIS_IPM, other_extensions=(extension,))))
    assert decoded.other_extensions == ()
    assert decoded.address_list_indicator == (
        AddressListDesignator(type=1, list_name=ORDescriptor(free_form_name="X"), reply_request=2),
    )
    # pilotHandling: a segmented PrintableString.
    value = bytes.fromhex("30093007a3053303040141")
    extension = RawExtension(type=f"{ID_MM}.12", value=value)
    decoded = decode(encode_heading(Heading(this_ipm=THIS_IPM, other_extensions=(extension,))))
    assert decoded.pilot_forwarding_info == (PilotInformation(handling=("A",)),)


def test_the_modules_check_pilot_security() -> None:
    # MMSHeadingExtensions writes pilotSecurity's type as "--Message--SecurityLabel": the
    # comment ends at the second "--", so the type is SecurityLabel, which asn1tools reads.
    heading = Heading(
        this_ipm=THIS_IPM, pilot_forwarding_info=(PilotInformation(security_label=LABEL),)
    )
    values = asn1_values(encode_heading(heading))
    assert values[12] == [{"pilotSecurity": label_form(LABEL)}]
