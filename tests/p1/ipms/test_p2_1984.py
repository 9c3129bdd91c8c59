"""p1.ipms.p2_1984: which 1988 IPMs are 1984 IPMs, and the down-grade built on it.

The reference is asn1tools reading the content with the X.420 module: a member of the
heading, a recipient or the body that X.420 (1984) lacks, found in what it decoded, must
be named, and nothing else; an IPM with none goes to a 1984 MTA as content type 2 and
decodes there to the same IPM.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p1 import asn1, ber
from p1.errors import DecodeError
from p1.ipms.ipm import (
    IPM,
    IPN,
    BinaryBodyPart,
    ContentKind,
    ExtendedBodyPart,
    ForwardedMessageBodyPart,
    Heading,
    IPMIdentifier,
    NotificationRequests,
    ORDescriptor,
    RawExtension,
    ReceiptFields,
    Recipient,
    TextBodyPart,
    TextKind,
    decode_content,
    encode_content,
    encode_ipm,
    encode_message_data,
)
from p1.ipms.p2_1984 import fields_1984_lacks
from p1.mts.downgrade import Downgraded, NotDowngradable, downgrade_to_1984
from p1.mts.envelope import (
    GlobalDomainIdentifier,
    Message,
    MessageEnvelope,
    MTSIdentifier,
    PerRecipientIndicators,
    RecipientField,
    TraceEntry,
    decode_mts_apdu,
    encode_mts_apdu,
    message_content,
)
from p1.mts.orname import ExtensionAttribute, ORName
from p1.mts.precedence import Precedence
from tests.p1 import strategies
from tests.p1.ipms.test_ipm import descriptors, ipm_identifiers
from tests.profiles import examples

P2 = ContentKind.P2
HERE = GlobalDomainIdentifier(country="GB", admd=" ", prmd="SITEA")
WHEN = datetime(2026, 11, 28, 10, 0, 0, tzinfo=UTC)
SMITH = ORName(country="GB", admd=" ", prmd="SITEA", surname="Smith")
JONES = ORName(country="GB", admd=" ", prmd="PPTEST", surname="Jones")
THIS = IPMIdentifier(user=SMITH, user_relative_identifier="1")
PLAIN = Heading(
    this_ipm=THIS,
    originator=ORDescriptor(formal_name=SMITH),
    primary_recipients=(Recipient(name=JONES),),
    subject="Lunch",
)
TEXT = TextBodyPart(data=b"At noon.\r\n")


def apdu(content: bytes, content_type: int = 22) -> bytes:
    envelope = MessageEnvelope(
        mts_identifier=MTSIdentifier(global_domain_identifier=HERE, local_identifier="m1"),
        originator_name=SMITH,
        content_type=content_type,
        trace_information=(TraceEntry(global_domain_identifier=HERE, arrival_time=WHEN),),
        recipients=(
            RecipientField(
                recipient_name=JONES,
                originally_specified_recipient_number=1,
                per_recipient_indicators=PerRecipientIndicators(responsibility=True),
            ),
        ),
    )
    return encode_mts_apdu(Message(envelope=envelope, content=content))


def ipm(heading: Heading = PLAIN, *body: Any) -> bytes:
    return encode_ipm(IPM(heading=heading, body=body or (TEXT,)), P2)


# --- one field at a time -----------------------------------------------------------------


def test_a_plain_ipm_goes_as_content_type_2_with_its_octets() -> None:
    content = ipm()
    assert fields_1984_lacks(content) == ()
    result = downgrade_to_1984(apdu(content))
    assert isinstance(result, Downgraded)
    assert result.removed == ("content-type: interpersonal-messaging-1988 (22) as 1984 (2)",)
    message = decode_mts_apdu(result.apdu)
    assert isinstance(message, Message)
    assert message.envelope.content_type == 2
    assert message.content == content
    assert result.apdu == apdu(content, content_type=2)


_COMMON = dataclasses.replace(JONES, common_name="Duty Officer")
_EXTENSION_ATTRIBUTE = dataclasses.replace(
    JONES, extension_attributes=(ExtensionAttribute(type=9, value=b"\x13\x01X"),)
)
_REQUESTS = NotificationRequests.RN | NotificationRequests.AN_SUPPORTED
_PRIVATE = RawExtension(type="1.2.3.4", value=b"\x05\x00")

ONE_FIELD = [
    (
        dataclasses.replace(PLAIN, primary_precedence=Precedence.FLASH),
        (TEXT,),
        "heading.extensions",
    ),
    (dataclasses.replace(PLAIN, other_extensions=(_PRIVATE,)), (TEXT,), "heading.extensions"),
    (
        dataclasses.replace(
            PLAIN, copy_recipients=(Recipient(name=JONES, extensions=(_PRIVATE,)),)
        ),
        (TEXT,),
        "heading.copy-recipients[0].recipient-extensions",
    ),
    (
        dataclasses.replace(
            PLAIN, primary_recipients=(Recipient(name=JONES, notification_requests=_REQUESTS),)
        ),
        (TEXT,),
        "heading.primary-recipients[0].notification-requests: an-supported/suppress-an",
    ),
    (
        dataclasses.replace(PLAIN, primary_recipients=(Recipient(name=_COMMON),)),
        (TEXT,),
        "heading.primary-recipients[0].formal-name: extension attribute common-name",
    ),
    (
        dataclasses.replace(PLAIN, originator=ORDescriptor(formal_name=_EXTENSION_ATTRIBUTE)),
        (TEXT,),
        "heading.originator.formal-name: extension attribute(s) 9",
    ),
    (
        dataclasses.replace(
            PLAIN, this_ipm=IPMIdentifier(user=_COMMON, user_relative_identifier="1")
        ),
        (TEXT,),
        "heading.this-IPM.user: extension attribute common-name",
    ),
    (PLAIN, (TEXT, BinaryBodyPart(data=b"\x01\x02")), "body[1]: bilaterally-defined"),
    (PLAIN, (TextBodyPart(data=b"x", extended=True),), "body[0]: extended"),
    (PLAIN, (TextBodyPart.from_text("Gr\xfc\xdfe"),), "body[0]: extended"),
    (
        PLAIN,
        (ExtendedBodyPart(data_type="1.2.3.4", data=b"\x05\x00"),),
        "body[0]: extended",
    ),
    (
        PLAIN,
        (ForwardedMessageBodyPart(message=encode_message_data(IPM(heading=PLAIN), P2)),),
        "body[0]: message (forwarded IPM)",
    ),
]


@pytest.mark.parametrize(("heading", "body", "field"), ONE_FIELD)
def test_a_1988_only_field_is_named_and_stops_the_downgrade(
    heading: Heading, body: tuple[Any, ...], field: str
) -> None:
    content = ipm(heading, *body)
    assert fields_1984_lacks(content) == (field,)
    outcome = downgrade_to_1984(apdu(content))
    assert outcome == NotDowngradable(f"content: X.420 (1984) lacks {field}")
    assert (outcome.reason, outcome.diagnostic) == (1, 47)  # unable-to-transfer, -downgrade


def test_explicit_empty_heading_extensions_are_1988_only() -> None:
    content = ipm()
    heading, body = ber.children(ber.read_single(content, "IPM"), "IPM")
    extensions = b"\xaf\x00"  # extensions [15] SET OF, empty: its DEFAULT, sent
    with_empty = ber.tlv_bytes(
        0xA0, ber.tlv_bytes(0x31, bytes(heading.contents()) + extensions) + body.raw()
    )
    assert decode_content(with_empty, P2) == decode_content(content, P2)
    assert fields_1984_lacks(with_empty) == ("heading.extensions",)


def test_an_ipn_is_not_downgraded() -> None:
    ipn = IPN(subject_ipm=THIS, fields=ReceiptFields(receipt_time=WHEN))
    outcome = downgrade_to_1984(apdu(encode_content(ipn, P2)))
    assert outcome == NotDowngradable("content: X.420 (1984) lacks ipn (an IP notification)")


@pytest.mark.parametrize("content", [b"", b"IPM", b"\xa0\x03\x31\x01", b"\xa2\x00"])
def test_content_that_does_not_decode_raises_decode_error(content: bytes) -> None:
    with pytest.raises(DecodeError):
        fields_1984_lacks(content)
    assert isinstance(downgrade_to_1984(apdu(content)), NotDowngradable)


# --- any IPM, against asn1tools ------------------------------------------------------------


def _lawful(name: ORName) -> ORName:
    return dataclasses.replace(name, common_name=None, extension_attributes=())


names_1984 = strategies.ornames().map(_lawful)
raw_extensions = st.builds(  # (definite lengths: asn1tools reads no other)
    RawExtension,
    type=st.sampled_from(["1.2.3.4", "2.6.1.5.1"]),
    value=strategies.optional(st.sampled_from([b"\x05\x00", b"\x04\x02\xab\xcd"])),
)
any_names = st.one_of(names_1984, names_1984, strategies.ornames())
recipients = st.builds(
    Recipient,
    name=strategies.optional(any_names),
    notification_requests=st.one_of(st.integers(0, 7), st.integers(0, 31)).map(
        NotificationRequests
    ),
    reply_requested=st.booleans(),
    extensions=st.one_of(st.just(()), strategies.tuples(raw_extensions, max_size=1)),
)
headings = st.builds(
    Heading,
    this_ipm=st.builds(
        IPMIdentifier,
        user=strategies.optional(any_names),
        user_relative_identifier=strategies.printable(0, 20),
    ),
    originator=strategies.optional(
        st.builds(ORDescriptor, formal_name=strategies.optional(any_names))
    ),
    authorizing_users=strategies.tuples(descriptors, max_size=1),
    primary_recipients=strategies.tuples(recipients, max_size=2),
    copy_recipients=strategies.tuples(recipients, max_size=1),
    related_ipms=strategies.tuples(ipm_identifiers, max_size=1),
    subject=strategies.optional(st.text(st.characters(max_codepoint=255), max_size=20)),
    primary_precedence=st.one_of(st.none(), st.none(), st.sampled_from(Precedence)),
    other_extensions=st.one_of(st.just(()), strategies.tuples(raw_extensions, max_size=1)),
)
parts = st.one_of(
    st.builds(TextBodyPart, data=st.binary(max_size=40).map(lambda b: bytes(c & 0x7F for c in b))),
    st.builds(TextBodyPart, data=st.binary(max_size=40), kind=st.just(TextKind.GENERAL)),
    st.builds(BinaryBodyPart, data=st.binary(max_size=40)),
    st.builds(ExtendedBodyPart, data_type=st.just("1.2.3.4"), data=st.just(b"\x05\x00")),
)
ipms = st.builds(
    IPM,
    heading=headings,
    body=st.one_of(
        strategies.tuples(parts.filter(lambda p: isinstance(p, TextBodyPart)), max_size=2),
        strategies.tuples(parts, max_size=3),
    ),
)


def _names_1988(value: object) -> Iterator[str]:
    """Every O/R name in asn1tools' decoded heading with what 1984 lacks."""
    if isinstance(value, dict):
        if "built-in-standard-attributes" in value and "extension-attributes" in value:
            yield "name"
        if "directory-name" in value:
            yield "name"
        for member in value.values():
            yield from _names_1988(member)
    elif isinstance(value, list | tuple):
        for member in value:
            yield from _names_1988(member)


def reference(content: bytes) -> set[str]:
    """What asn1tools finds in ``content`` that X.420 (1984) lacks, by kind."""
    choice, value = asn1.decode("IPMSInformationObjects", "InformationObject", content)
    assert choice == "ipm"
    heading, found = value["heading"], set()
    if heading.get("extensions"):
        found.add("extensions")
    for where in ("primary-recipients", "copy-recipients", "blind-copy-recipients"):
        for recipient in heading.get(where, []):
            if "recipient-extensions" in recipient:
                found.add("recipient-extensions")
            bits, length = recipient.get("notification-requests", (b"", 0))
            if any(
                int.from_bytes(bits, "big") >> (len(bits) * 8 - 1 - n) & 1 for n in range(3, length)
            ):
                found.add("notification-requests")
    found.update(_names_1988(heading))
    for form, part in value["body"]:
        if form == "extended":
            found.add("extended")
        elif part[0] in ("bilaterally-defined", "message"):
            found.add(part[0])
    return found


def kind_of(field: str) -> str:
    """The kind of a field :func:`fields_1984_lacks` names, as :func:`reference` says it."""
    for mark, kind in (
        ("heading.extensions", "extensions"),
        ("recipient-extensions", "recipient-extensions"),
        ("notification-requests", "notification-requests"),
        (": extension attribute", "name"),
        (": directory-name", "name"),
        (": bilaterally-defined", "bilaterally-defined"),
        (": extended", "extended"),
        (": message", "message"),
    ):
        if mark in field:
            return kind
    raise AssertionError(f"unexpected field {field!r}")


@pytest.mark.slow
@given(ipms)
@settings(max_examples=examples(2), suppress_health_check=[HealthCheck.too_slow])
def test_any_ipm_goes_as_2_and_reads_the_same_or_is_refused_naming_a_1988_field(
    value: IPM,
) -> None:
    content = encode_ipm(value, P2)
    expected = reference(content)
    lacking = fields_1984_lacks(content)
    assert {kind_of(field) for field in lacking} == expected
    outcome = downgrade_to_1984(apdu(content))
    if expected:
        assert isinstance(outcome, NotDowngradable)
        assert outcome.why.startswith(f"content: X.420 (1984) lacks {lacking[0]}")
        return
    assert isinstance(outcome, Downgraded)
    message = decode_mts_apdu(outcome.apdu)
    assert isinstance(message, Message)
    assert message.envelope.content_type == 2
    assert message_content(outcome.apdu) == content
    assert decode_content(message.content, message.envelope.content_type) == value
