"""IPM and IPN content (X.420 clause 7; STANAG 4406 Annex A): models and codecs."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p1 import asn1, ber
from p1.errors import DecodeError, EncodeError
from p1.ipms.ipm import (
    IPM,
    IPN,
    P2_CONTENT_TYPE,
    P772_CONTENT_TYPE,
    AcknowledgmentMode,
    BinaryBodyPart,
    BodyPart,
    ContentKind,
    DiscardReason,
    DistributionCodes,
    DistributionExtension,
    ExtendedBodyPart,
    ForwardedForm,
    ForwardedMessageBodyPart,
    Heading,
    Importance,
    IPMIdentifier,
    MessageType,
    NonReceiptFields,
    NonReceiptReason,
    NotificationKind,
    NotificationRequests,
    ORDescriptor,
    OtherNotificationFields,
    RawBodyPart,
    RawExtension,
    ReceiptFields,
    Recipient,
    Repertoire,
    Sensitivity,
    TextBodyPart,
    TextKind,
    TypeMessage,
    decode_content,
    decode_content_heading,
    decode_ipm,
    decode_ipn,
    decode_message_data,
    encode_content,
    encode_ipm,
    encode_ipn,
    encode_message_data,
)
from p1.ipms.models import ACP127DataBodyPart
from p1.mts.orname import parse_orname
from p1.mts.precedence import Precedence
from tests.p1 import strategies
from tests.profiles import examples

P2 = ContentKind.P2
P772 = ContentKind.P772
KINDS = [P2, P772]

ORIGINATOR = parse_orname("C=GB;ADMD= ;PRMD=NATO;O=ACT;OU=J6;S=Smith;G=John")
RECIPIENT = parse_orname("C=US;ADMD= ;PRMD=NATO;O=JFC;S=Doe;G=Jane")
THIS_IPM = IPMIdentifier(user=ORIGINATOR, user_relative_identifier="0001 240102030405Z")
WHEN = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)

FULL_HEADING = Heading(
    this_ipm=THIS_IPM,
    originator=ORDescriptor(formal_name=ORIGINATOR),
    authorizing_users=(ORDescriptor(free_form_name="Chief of Staff", telephone_number="+32 2"),),
    primary_recipients=(
        Recipient(
            name=RECIPIENT,
            notification_requests=NotificationRequests.RN | NotificationRequests.NRN,
            reply_requested=True,
        ),
    ),
    copy_recipients=(Recipient(name=ORIGINATOR, free_form_name="J6 desk"),),
    blind_copy_recipients=(
        Recipient(
            name=RECIPIENT,
            extensions=(RawExtension(type="1.3.26.0.4406.0.2.15", value=b"\x03\x02\x05\xa0"),),
        ),
    ),
    replied_to_ipm=IPMIdentifier(user_relative_identifier="0000 231231235959Z"),
    obsoleted_ipms=(IPMIdentifier(user=RECIPIENT, user_relative_identifier="7"),),
    related_ipms=(IPMIdentifier(user_relative_identifier="8"),),
    subject="Exercise BRAVO: status \xe9t\xe9",
    expiry_time=datetime(2024, 1, 3, 4, 5, 6, tzinfo=UTC),
    reply_time=datetime(2024, 1, 2, 4, 0, 30, tzinfo=UTC),
    reply_recipients=(ORDescriptor(formal_name=ORIGINATOR),),
    importance=Importance.HIGH,
    sensitivity=Sensitivity.COMPANY_CONFIDENTIAL,
    auto_forwarded=True,
    primary_precedence=Precedence.FLASH,
    copy_precedence=Precedence.ROUTINE,
    message_type=MessageType(type=TypeMessage.EXERCISE, identifier="BRAVO"),
    exempted_addresses=(ORDescriptor(free_form_name="Registry"),),
    extended_authorisation_info=WHEN,
    distribution_codes=DistributionCodes(
        sics=("ABC", "DEFGH"),
        dist_extensions=(DistributionExtension(type_id="1.2.3", value=b"\x05\x00"),),
    ),
    handling_instructions=("NO FORN", "EYES ONLY"),
    message_instructions=("ZNR",),
    originator_reference="REF 1/24",
    acp127_message_identifier="RUABC 0001 0021234",
    originator_plad="HQ ACT NORFOLK",
    other_extensions=(
        RawExtension(type="2.6.1.5.2", value=b"\x0a\x01\x01"),  # X.420 auto-submitted
        RawExtension(type="1.2.3.4"),
    ),
)

BODY: tuple[BodyPart, ...] = (
    TextBodyPart(data=b"Line one\r\nLine two\r\n"),
    TextBodyPart(data=b"telex", repertoire=Repertoire.ITA2),
    TextBodyPart.from_text("Gr\xfc\xdfe"),
    BinaryBodyPart(data=bytes(range(256))),
    ACP127DataBodyPart(data=b"ZZZ", parameters=0),
    ExtendedBodyPart(data_type="2.6.1.4.18", data=b"\x30\x03\x06\x01\x00"),
)


def full_ipm() -> IPM:
    forwarded = ForwardedMessageBodyPart(
        message=encode_message_data(IPM(heading=Heading(this_ipm=THIS_IPM), body=BODY[:1]), P2)
    )
    return IPM(heading=FULL_HEADING, body=(*BODY, forwarded))


# --- strategies -----------------------------------------------------------------------

printable = strategies.printable
optional = strategies.optional
tuples = strategies.tuples

descriptors = st.builds(
    ORDescriptor,
    formal_name=optional(strategies.ornames()),
    free_form_name=optional(st.text(st.characters(max_codepoint=255), max_size=20)),
    telephone_number=optional(printable(1, 20)),
)
ipm_identifiers = st.builds(
    IPMIdentifier, user=optional(strategies.ornames()), user_relative_identifier=printable(0, 64)
)
raw_extensions = st.builds(
    RawExtension,
    type=st.sampled_from(["1.2.3.4", "2.6.1.5.1", "1.3.26.0.4406.0.2.3"]),
    value=optional(
        st.sampled_from([b"\x05\x00", b"\x04\x02\xab\xcd", b"\x30\x80\x05\x00\x00\x00"])
    ),
)
recipients = st.builds(
    Recipient,
    name=optional(strategies.ornames()),
    free_form_name=optional(printable(1, 20)),
    notification_requests=st.integers(0, 31).map(NotificationRequests),
    reply_requested=st.booleans(),
    extensions=tuples(raw_extensions, max_size=2),
)
headings = st.builds(
    Heading,
    this_ipm=ipm_identifiers,
    originator=optional(descriptors),
    primary_recipients=tuples(recipients),
    copy_recipients=tuples(recipients, max_size=2),
    subject=optional(st.text(st.characters(max_codepoint=255), max_size=40)),
    expiry_time=optional(strategies.plain_times()),
    importance=st.sampled_from(Importance),
    sensitivity=optional(st.sampled_from(Sensitivity)),
    auto_forwarded=st.booleans(),
    primary_precedence=optional(st.sampled_from(Precedence)),
    copy_precedence=optional(st.sampled_from(Precedence)),
    message_type=optional(
        st.builds(MessageType, type=st.integers(0, 255), identifier=optional(printable(1, 69)))
    ),
    handling_instructions=tuples(printable(1, 69)),
    acp127_message_identifier=optional(printable(1, 69)),
    other_extensions=tuples(raw_extensions, max_size=2),
    **strategies.mm_heading_extensions(categories=False),
)


def body_parts(kind: ContentKind) -> st.SearchStrategy[BodyPart]:
    """Body parts as decoding ``kind`` gives them: ``extended`` is None for the form the
    kind prescribes, so only the other form is ever named."""
    other_form = optional(st.just(kind is P2))
    return st.one_of(
        st.builds(
            TextBodyPart,
            data=st.binary(max_size=300).map(lambda b: bytes(c & 0x7F for c in b)),
            repertoire=st.sampled_from(Repertoire),
            extended=other_form,
        ),
        st.builds(
            TextBodyPart,
            data=st.binary(max_size=50),
            kind=st.just(TextKind.GENERAL),
            character_sets=tuples(st.integers(1, 32767)),
        ),
        st.builds(BinaryBodyPart, data=st.binary(max_size=300), extended=other_form),
        st.builds(
            ExtendedBodyPart,
            data_type=st.just("1.2.3.4"),
            data=st.sampled_from([b"\x05\x00", b"\x04\x81\x80" + bytes(128)]),
        ),
    )


kinds_and_ipms = st.sampled_from(KINDS).flatmap(
    lambda kind: st.tuples(
        st.just(kind), st.builds(IPM, heading=headings, body=tuples(body_parts(kind), max_size=4))
    )
)


# --- round trips ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_full_ipm_round_trip(kind: ContentKind) -> None:
    ipm = full_ipm()
    encoded = encode_ipm(ipm, kind)
    decoded = decode_ipm(encoded, kind)
    assert decoded == ipm
    assert encode_ipm(decoded, kind) == encoded
    # Any bytes-like input.
    assert decode_ipm(bytearray(encoded), kind) == ipm
    assert decode_ipm(memoryview(encoded), kind) == ipm


@pytest.mark.parametrize("kind", KINDS)
def test_encoding_agrees_with_the_asn1_modules(kind: ContentKind) -> None:
    """asn1tools, compiled from the X.420 / STANAG 4406 modules, reads the same IPM."""
    encoded = encode_ipm(full_ipm(), kind)
    module = "IPMSInformationObjects" if kind is P2 else "MMSInformationObjects"
    choice, value = asn1.decode(module, "InformationObject", encoded)
    assert choice == ("ipm" if kind is P2 else "mm")
    heading = value["heading" if kind is P2 else "mmheading"]
    assert heading["subject"] == FULL_HEADING.subject
    assert heading["importance"] == "high"
    assert heading["primary-recipients"][0]["notification-requests"] == (b"\xc0", 2)
    precedence = {e["type"]: e.get("value") for e in heading["extensions"]}
    primary = asn1.decode(
        "MMSHeadingExtensions", "PrimaryPrecedence", precedence["1.3.26.0.4406.0.2.0"]
    )
    assert primary == Precedence.FLASH
    codes = asn1.decode(
        "MMSHeadingExtensions", "DistributionCodes", precedence["1.3.26.0.4406.0.2.6"]
    )
    assert codes["sics"] == ["ABC", "DEFGH"]
    forms = [part[0] for part in value["body" if kind is P2 else "mmbody"]]
    # ia5, ia5 (ita2), general text, bilateral, ACP127 data, PKCS 7, forwarded message
    basic, extended = "basic", "extended"
    p2 = [basic, basic, extended, basic, extended, extended, basic]
    assert forms == (p2 if kind is P2 else [extended] * 7)
    # asn1tools re-encodes the heading it decoded to the same bytes: DER member order.
    heading_bytes = asn1.encode("IPMSInformationObjects", "Heading", heading)
    assert heading_bytes in encoded


def test_times_keep_their_text() -> None:
    """A UTCTime without seconds, as asn1tools and many peers write it, comes back as sent."""
    heading = {
        "this-IPM": {"user-relative-identifier": "1"},
        "reply-time": datetime(2024, 1, 2, 4, 0),
    }
    ipm = ("ipm", {"heading": heading, "body": []})
    encoded = asn1.encode("IPMSInformationObjects", "InformationObject", ipm)
    assert b"2401020400Z" in encoded
    decoded = decode_ipm(encoded, P2)
    assert decoded.heading.reply_time == datetime(2024, 1, 2, 4, 0, tzinfo=UTC)
    assert encode_ipm(decoded, P2) == encoded


def test_small_p2_ipm_golden() -> None:
    ipm = IPM(
        heading=Heading(this_ipm=IPMIdentifier(user_relative_identifier="1"), subject="Hi"),
        body=(TextBodyPart(data=b"Hello"),),
    )
    encoded = encode_ipm(ipm, P2_CONTENT_TYPE)
    assert encoded.hex() == (
        "a01a"  # ipm [0] IPM
        "310b" "6b03130131" "a80414024869"  # heading: this-IPM "1", subject [8] "Hi"
        "300b" "a009" "3100" "160548656c6c6f"  # body: ia5-text [0] {SET {}, "Hello"}
    )  # fmt: skip
    assert decode_ipm(encoded, P2_CONTENT_TYPE) == ipm


def test_small_p772_ipm_golden() -> None:
    ipm = IPM(
        heading=Heading(
            this_ipm=IPMIdentifier(user_relative_identifier="1"),
            subject="Hi",
            primary_precedence=Precedence.FLASH,
        ),
        body=(TextBodyPart(data=b"Hello"),),
    )
    encoded = encode_ipm(ipm, P772_CONTENT_TYPE)
    assert encoded.hex() == (
        "a03f"  # mm [0] MM
        "311c" "6b03130131" "a80414024869"
        "af0f" "300d" "06082b1a00a236000200" "020104"  # primary-precedence flash
        "301f" "af1d"  # body: extended [15]
        "a00a" "060456010b00" "a0023100"  # parameters: id-ep-ia5-text, SET {}
        "280f" "060456010400" "a007" "160548656c6c6f"  # data: id-et-ia5-text, "Hello"
    )  # fmt: skip
    assert decode_ipm(encoded, P772_CONTENT_TYPE) == ipm


@pytest.mark.slow
@given(kinds_and_ipms)
@settings(max_examples=examples(0.6), suppress_health_check=[HealthCheck.too_slow])
def test_any_ipm_round_trips(kind_and_ipm: tuple[ContentKind, IPM]) -> None:
    kind, ipm = kind_and_ipm
    encoded = encode_ipm(ipm, kind)
    decoded = decode_ipm(encoded, kind)
    assert decoded == ipm
    assert encode_ipm(decoded, kind) == encoded
    assert decode_content(encoded, kind) == ipm
    assert decode_content_heading(encoded, kind) == ipm.heading


def test_the_heading_reads_without_decoding_the_body() -> None:
    ipm = full_ipm()
    encoded = encode_ipm(ipm, P772)
    view, outer = ber.single(encoded, "IPM")
    _, (tag, _, start, end, _) = ber.items(view, outer, "IPM")
    assert tag == 0x30  # the body SEQUENCE: its contents made unreadable, lengths kept
    broken = encoded[:start] + b"\xff" * (end - start) + encoded[end:]
    with pytest.raises(DecodeError):
        decode_ipm(broken, P772)
    assert decode_content_heading(broken, P772) == ipm.heading
    with pytest.raises(DecodeError):
        decode_content_heading(encoded[:-1], P772)


def test_content_kind_from_the_envelope_value() -> None:
    assert ContentKind(22) is P2
    assert ContentKind("1.3.26.0.4406.0.4.1") is P772
    ipm = IPM(heading=Heading(this_ipm=THIS_IPM))
    assert encode_ipm(ipm, 22) == encode_ipm(ipm, P2)
    assert ContentKind(2) is ContentKind.P2_1984  # the 1984 IPM: P22's syntax, basic forms
    assert encode_ipm(ipm, 2) == encode_ipm(ipm, P2)
    with pytest.raises(EncodeError):
        encode_ipm(ipm, 3)
    with pytest.raises(DecodeError):
        decode_ipm(encode_ipm(ipm, P2), "1.2.3")


# --- forms of body parts --------------------------------------------------------------


@pytest.mark.parametrize(
    ("part", "p2_octet", "p772_octet"),
    [
        (TextBodyPart(data=b"x"), 0xA0, 0xAF),
        (BinaryBodyPart(data=b"x"), 0x8E, 0xAF),
        (ForwardedMessageBodyPart(message=b"\x30\x00"), 0xA9, 0xAF),
        (TextBodyPart(data=b"x", kind=TextKind.GENERAL, character_sets=(1, 6)), 0xAF, 0xAF),
    ],
)
def test_each_kind_prescribes_its_form(part: BodyPart, p2_octet: int, p772_octet: int) -> None:
    for kind, octet in ((P2, p2_octet), (P772, p772_octet)):
        encoded = encode_ipm(IPM(heading=Heading(this_ipm=THIS_IPM), body=(part,)), kind)
        assert body_octets(encoded) == [octet]
        assert decode_ipm(encoded, kind).body == (part,)


@pytest.mark.parametrize(
    ("part", "under_p772"),
    [
        (TextBodyPart(data=b"x", extended=True), TextBodyPart(data=b"x")),
        (BinaryBodyPart(data=b"x", extended=True), BinaryBodyPart(data=b"x")),
        (
            ForwardedMessageBodyPart(message=b"\x30\x00", form=ForwardedForm.EXTENDED),
            ForwardedMessageBodyPart(message=b"\x30\x00"),
        ),
        (
            ForwardedMessageBodyPart(message=b"\x30\x00", form=ForwardedForm.MM_MESSAGE),
            ForwardedMessageBodyPart(message=b"\x30\x00", form=ForwardedForm.MM_MESSAGE),
        ),
    ],
)
def test_the_other_form_is_kept(part: BodyPart, under_p772: BodyPart) -> None:
    ipm = IPM(heading=Heading(this_ipm=THIS_IPM), body=(part,))
    encoded = encode_ipm(ipm, P2)
    assert decode_ipm(encoded, P2) == ipm
    # Under P772 the extended form is the prescribed one: the field reads None there.
    assert decode_ipm(encoded, P772).body == (under_p772,)


def test_mm_message_body_part_bytes() -> None:
    forwarded = encode_message_data(IPM(heading=Heading(this_ipm=THIS_IPM)), P772)
    part = ForwardedMessageBodyPart(message=forwarded, form=ForwardedForm.MM_MESSAGE)
    encoded = encode_ipm(IPM(heading=Heading(this_ipm=THIS_IPM), body=(part,)), P772)
    # parameters {id-nato-mmhs-et-mm-message-parameters, [0] SET {}}
    assert bytes.fromhex("a00e06082b1a00a23600070aa0023100") in encoded
    decoded = decode_ipm(encoded, P772)
    assert decoded.body == (part,)
    assert decode_message_data(part.message, P772) == IPM(heading=Heading(this_ipm=THIS_IPM))


def test_text_helpers() -> None:
    assert TextBodyPart.from_text("plain").kind is TextKind.IA5
    latin = TextBodyPart.from_text("caf\xe9")
    assert (latin.kind, latin.character_sets, latin.data) == (
        TextKind.GENERAL,
        (1, 6, 100),
        b"caf\xe9",
    )
    assert latin.text == "caf\xe9"
    utf8 = TextBodyPart.from_text("\u0416")
    assert utf8.character_sets == (1, 6, 196)
    assert utf8.text == "\u0416"


# --- what we do not model survives byte-exact -----------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_unknown_heading_extension_preserved(kind: ContentKind) -> None:
    odd = RawExtension(type="1.2.840.113549.1.9.16.2.2", value=bytes.fromhex("30800201010000"))
    ipm = IPM(heading=Heading(this_ipm=THIS_IPM, other_extensions=(odd,)))
    encoded = encode_ipm(ipm, kind)
    assert odd.value is not None and odd.value in encoded  # indefinite length, as given
    decoded = decode_ipm(encoded, kind)
    assert decoded.heading.other_extensions == (odd,)
    assert encode_ipm(decoded, kind) == encoded


@pytest.mark.parametrize(
    "extension",
    [
        RawExtension(type="1.3.26.0.4406.0.2.0", value=b"\x02\x01\x10"),  # national precedence 16
        RawExtension(type="1.3.26.0.4406.0.2.0", value=b"\x13\x01A"),  # not an INTEGER
        RawExtension(type="1.3.26.0.4406.0.2.7", value=b"\x30\x03\x02\x01\x01"),  # not strings
        RawExtension(type="1.3.26.0.4406.0.2.10"),  # no value at all
    ],
)
def test_military_extension_that_does_not_read_is_kept_raw(extension: RawExtension) -> None:
    ipm = IPM(heading=Heading(this_ipm=THIS_IPM, other_extensions=(extension,)))
    encoded = encode_ipm(ipm, P772)
    decoded = decode_ipm(encoded, P772)
    assert decoded.heading.primary_precedence is None
    assert decoded.heading.other_extensions == (extension,)
    assert encode_ipm(decoded, P772) == encoded


def wrap(octet: int, contents: bytes) -> bytes:
    """A short TLV, for hand-made test input."""
    assert len(contents) < 0x80
    return bytes((octet, len(contents))) + contents


def body_octets(encoded: bytes) -> list[int]:
    """The identifier octet of each body part in IPM content octets."""
    view, outer = ber.single(encoded, "test")
    _, body = ber.items(view, outer, "test")
    return [item[0] for item in ber.items(view, body, "test")]


def _content_with_body_part(part: bytes, kind: ContentKind) -> bytes:
    heading = encode_ipm(
        IPM(heading=Heading(this_ipm=IPMIdentifier(user_relative_identifier="1"))), kind
    )
    return wrap(0xA0, heading[2:-2] + wrap(0x30, part))  # a0 L heading, then our body


@pytest.mark.parametrize(
    ("part", "typed"),
    [
        (wrap(0xA5, wrap(0x31, b"") + wrap(0x30, wrap(0x14, b"abc"))), RawBodyPart),  # teletex
        # extended ia5 text without its parameters: not the type's syntax
        (
            wrap(
                0xAF,
                wrap(0x28, bytes.fromhex("060456010400") + wrap(0xA0, b"\x36\x80\x04\x01A\0\0")),
            ),
            ExtendedBodyPart,
        ),
        # other forms than ours of the types we model: typed, and written back as received
        (bytes.fromhex("a080310016034142430000"), TextBodyPart),  # indefinite length
        (bytes.fromhex("a0810731001603414243"), TextBodyPart),  # long-form length
        (bytes.fromhex("a00a31038001051603414243"), TextBodyPart),  # repertoire ia5 sent
        (bytes.fromhex("ae0704034142430400"), BinaryBodyPart),  # segmented
    ],
)
@pytest.mark.parametrize("kind", KINDS)
def test_body_part_we_would_not_write_is_written_back_whole(
    part: bytes, typed: type, kind: ContentKind
) -> None:
    content = _content_with_body_part(part, kind)
    decoded = decode_ipm(content, kind)
    assert len(decoded.body) == 1
    assert type(decoded.body[0]) is typed
    assert encode_ipm(decoded, kind) == content


def test_extended_body_part_of_unknown_type() -> None:
    part = ExtendedBodyPart(
        data_type="1.3.26.0.4406.0.7.0",
        data=b"\xa0\x03\x16\x01A",
        parameters_type="1.3.26.0.4406.0.7.2",
        parameters=b"\x02\x01\x00",
    )
    ipm = IPM(heading=Heading(this_ipm=THIS_IPM), body=(part,))
    for kind in KINDS:
        assert decode_ipm(encode_ipm(ipm, kind), kind) == ipm


# --- notifications --------------------------------------------------------------------

IPNS = [
    IPN(
        subject_ipm=THIS_IPM,
        ipn_originator=ORDescriptor(formal_name=RECIPIENT),
        fields=ReceiptFields(
            receipt_time=WHEN,
            acknowledgment_mode=AcknowledgmentMode.AUTOMATIC,
            suppl_receipt_info="read by duty officer",
        ),
    ),
    IPN(
        subject_ipm=THIS_IPM,
        ipm_intended_recipient=ORDescriptor(formal_name=RECIPIENT),
        conversion_eits=bytes.fromhex("650480020520"),  # built-in EITs {ia5-text(2)}
        notification_extensions=(RawExtension(type="1.2.3", value=b"\x05\x00"),),
        fields=NonReceiptFields(
            non_receipt_reason=NonReceiptReason.IPM_DISCARDED,
            discard_reason=DiscardReason.IPM_EXPIRED,
            auto_forward_comment="gone",
            returned_ipm=encode_message_data(IPM(heading=Heading(this_ipm=THIS_IPM)), P2),
        ),
    ),
    IPN(
        subject_ipm=THIS_IPM,
        fields=OtherNotificationFields(
            extensions=(RawExtension(type="1.3.26.0.4406.0.2.16", value=b"\x31\x00"),)
        ),
    ),
]


@pytest.mark.parametrize("ipn", IPNS)
def test_ipn_round_trip(ipn: IPN) -> None:
    encoded = encode_ipn(ipn)
    assert encoded[0] == 0xA1
    assert decode_ipn(encoded) == ipn
    assert encode_ipn(decode_ipn(encoded)) == encoded
    assert decode_content(encoded, P772) == ipn
    assert decode_content_heading(encoded, P772) == ipn
    assert encode_content(ipn, P2) == encoded
    # The X.420 module reads it, and asn1tools writes the same bytes back.
    choice, value = asn1.decode("IPMSInformationObjects", "InformationObject", encoded)
    assert choice == "ipn"
    assert asn1.encode("IPMSInformationObjects", "InformationObject", (choice, value)) == encoded


def test_ipn_kind_and_returned_ipm() -> None:
    assert [ipn.kind for ipn in IPNS] == [
        NotificationKind.RECEIPT,
        NotificationKind.NON_RECEIPT,
        NotificationKind.OTHER,
    ]
    fields = decode_ipn(encode_ipn(IPNS[1])).fields
    assert isinstance(fields, NonReceiptFields) and fields.returned_ipm is not None
    assert decode_message_data(fields.returned_ipm, P2).heading.this_ipm == THIS_IPM


# --- malformed input and bad values ---------------------------------------------------


def _with_replaced(data: bytes, old: bytes, new: bytes) -> bytes:
    """``data`` (DER) with the TLV ``old`` written as ``new``, the lengths around it
    written again."""
    tlv = ber.read_single(data, "value")
    if tlv.raw() == old:
        return new
    if not tlv.constructed:
        return data
    children = ber.children(tlv, "value")
    return ber.constructed(tlv.tag, [_with_replaced(c.raw(), old, new) for c in children])


# notification-requests [1] BIT STRING {rn(0), nrn(1), ipm-return(2), ...} in the forms
# X.690 8.6.4 allows: the bits in segments, nested, only the last with unused bits.
_RN_NRN_RETURN = bytes.fromhex("810205e0")  # rn, nrn, ipm-return: 3 bits
_SEGMENTED_REQUESTS = [
    "a1070301000302" + "05e0",  # an empty segment, then the bits
    "a180" + "2380030100" + "0000" + "030205e0" + "0000",  # nested, indefinite lengths
    "a1090303" + "00e000" + "03020400",  # 16 bits in two octets, then 4 more: 20 bits
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("segmented", _SEGMENTED_REQUESTS)
def test_notification_requests_in_a_constructed_bit_string(
    kind: ContentKind, segmented: str
) -> None:
    flags = NotificationRequests.RN | NotificationRequests.NRN | NotificationRequests.IPM_RETURN
    heading = Heading(
        this_ipm=THIS_IPM,
        primary_recipients=(Recipient(name=RECIPIENT, notification_requests=flags),),
    )
    ipm = IPM(heading=heading)
    encoded = encode_ipm(ipm, kind)
    assert _RN_NRN_RETURN in encoded
    received = _with_replaced(encoded, _RN_NRN_RETURN, bytes.fromhex(segmented))
    assert received != encoded
    assert decode_ipm(received, kind) == ipm


def test_only_the_last_notification_requests_segment_has_unused_bits() -> None:
    heading = Heading(
        this_ipm=THIS_IPM,
        primary_recipients=(
            Recipient(name=RECIPIENT, notification_requests=NotificationRequests.RN),
        ),
    )
    encoded = encode_ipm(IPM(heading=heading), P2)
    received = _with_replaced(
        encoded, bytes.fromhex("81020780"), bytes.fromhex("a1080302078003020780")
    )
    with pytest.raises(DecodeError, match="only the last BIT STRING segment may have unused bits"):
        decode_ipm(received, P2)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "truncated"),
        (b"\xa0", "truncated"),
        (b"\xa0\x05\x31\x00", "announced"),
        (b"\x30\x02\x31\x00", "expected tag 0xa0"),
        (b"\xa0\x02\x31\x00\x00", "trailing"),
        (b"\xa0\x04\x31\x00\x31\x00", "heading SET and a body SEQUENCE"),
        (b"\xa0\x04\x31\x00\x30\x00", "this-IPM missing"),
        (bytes.fromhex("a00b31076b0313013194003000"), "unexpected [20]"),
    ],
)
def test_malformed_ipm_names_the_problem(data: bytes, why: str) -> None:
    with pytest.raises(DecodeError) as caught:
        decode_ipm(data, P2)
    assert why in str(caught.value)


@given(st.data())
@settings(max_examples=examples(3))
def test_corrupted_content_raises_only_decode_error(data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(KINDS))
    good = encode_ipm(full_ipm(), kind) if data.draw(st.booleans()) else encode_ipn(IPNS[1])
    mutated = bytearray(good)
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(mutated) - 1))
        mutated[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(mutated)))
    for candidate in (bytes(mutated), bytes(mutated[:cut])):
        with contextlib.suppress(DecodeError):
            decode_content(candidate, kind)


@given(st.binary(max_size=64))
def test_random_bytes_raise_only_decode_error(data: bytes) -> None:
    for decode in (
        lambda: decode_ipm(data, P2),
        lambda: decode_ipn(data),
        lambda: decode_message_data(data, P772),
    ):
        with contextlib.suppress(DecodeError):
            decode()


@pytest.mark.parametrize(
    "heading",
    [
        Heading(this_ipm=IPMIdentifier(user_relative_identifier="not_printable!")),
        Heading(this_ipm=THIS_IPM, handling_instructions=("",)),
        Heading(this_ipm=THIS_IPM, originator_reference="x" * 70),
        Heading(this_ipm=THIS_IPM, subject="\u0416"),
        Heading(this_ipm=THIS_IPM, distribution_codes=DistributionCodes(sics=("AB",))),
        Heading(this_ipm=THIS_IPM, other_extensions=(RawExtension(type="1.2", value=b"\x02"),)),
        Heading(this_ipm=THIS_IPM, other_extensions=(RawExtension(type="one.two"),)),
    ],
)
def test_bad_heading_values_raise_encode_error(heading: Heading) -> None:
    with pytest.raises(EncodeError):
        encode_ipm(IPM(heading=heading), P772)


@pytest.mark.parametrize(
    "part",
    [
        TextBodyPart(data=b"caf\xe9"),  # IA5 is seven bits
        TextBodyPart(data=b"x", kind=TextKind.GENERAL, extended=False),
        TextBodyPart(data=b"x", kind=TextKind.GENERAL, character_sets=(0,)),
        ForwardedMessageBodyPart(message=b"\x31\x00"),
        ExtendedBodyPart(data_type="1.2.3", data=b"\x05\x00", parameters=b"\x05\x00"),
    ],
)
def test_bad_body_parts_raise_encode_error(part: BodyPart) -> None:
    with pytest.raises(EncodeError):
        encode_ipm(IPM(heading=Heading(this_ipm=THIS_IPM), body=(part,)), P2)


# --- size -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_ten_megabyte_bodies(kind: ContentKind) -> None:
    text = TextBodyPart(data=b"0123456789abcdef" * 655_360)
    binary = BinaryBodyPart(data=bytes(10 * 1024 * 1024))
    ipm = IPM(heading=Heading(this_ipm=THIS_IPM), body=(text, binary))
    encoded = encode_ipm(ipm, kind)
    assert len(encoded) < len(text.data) + len(binary.data) + 200
    decoded = decode_ipm(memoryview(encoded), kind)
    assert decoded == ipm
    assert all(type(part.data) is bytes for part in decoded.body)  # type: ignore[union-attr]
