"""Reading what a non-delivery report needs from an envelope the strict decoder refuses
(:mod:`p1.mts.salvage`): the same values as the strict decoder for a well-formed
message or probe, the same again with a malformed member elsewhere, nothing from a
report, and what is missing when the essentials cannot be read.  Never an exception."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p1.errors import DecodeError
from p1.mts.envelope import (
    Message,
    MessageEnvelope,
    Probe,
    RecipientField,
    Report,
    decode_mts_apdu,
    encode_mts_apdu,
    peek_envelope,
)
from p1.mts.extensions import ExtensionField, StandardExtension
from p1.mts.orname import ORName
from p1.mts.salvage import salvage_subject
from tests.p1.strategies import messages, probes, reports

NULL = b"\x05\x00"
BAD_LATEST_DELIVERY_TIME = ExtensionField(
    type=int(StandardExtension.LATEST_DELIVERY_TIME), criticality=None, value=NULL
)
"""A NULL where a UTCTime belongs: the strict decoder refuses the envelope."""
AT_SIGN = ORName(country="GB", admd=" ", prmd="SITEB", organization="HQ", surname="Jo@nes")
"""A PrintableString holding '@': no O/R name decodes with it."""


def essentials(subject: MessageEnvelope | Probe) -> tuple[object, ...]:
    """What a non-delivery report on ``subject`` is made of."""
    recipients = tuple(
        (r.recipient_name, r.originally_specified_recipient_number, r.per_recipient_indicators)
        for r in subject.recipients
    )
    priority = subject.priority if isinstance(subject, MessageEnvelope) else None
    return (
        subject.mts_identifier,
        subject.originator_name,
        subject.content_type,
        priority,
        recipients,
    )


def strictly(data: bytes) -> MessageEnvelope | Probe:
    """The envelope as the strict decoder reads it."""
    envelope = peek_envelope(data)
    assert isinstance(envelope, MessageEnvelope | Probe)
    return envelope


def with_bad_extension(apdu: bytes) -> bytes:
    decoded = decode_mts_apdu(apdu)
    assert isinstance(decoded, Message | Probe)
    envelope = decoded.envelope if isinstance(decoded, Message) else decoded
    kept = tuple(e for e in envelope.extensions if e.type != BAD_LATEST_DELIVERY_TIME.type)
    replaced = dataclasses.replace(envelope, extensions=(*kept, BAD_LATEST_DELIVERY_TIME))
    if isinstance(decoded, Message):
        assert isinstance(replaced, MessageEnvelope)
        return encode_mts_apdu(Message(envelope=replaced, content=decoded.content))
    assert isinstance(replaced, Probe)
    return encode_mts_apdu(replaced)


@pytest.mark.slow
@given(st.one_of(messages, probes))
def test_a_well_formed_subject_salvages_as_it_decodes(apdu: Message | Probe) -> None:
    data = encode_mts_apdu(apdu)
    salvage = salvage_subject(data)
    assert salvage.subject is not None, salvage.why
    assert salvage.why == ""
    assert essentials(salvage.subject) == essentials(strictly(data))


@pytest.mark.slow
@given(st.one_of(messages, probes))
def test_a_malformed_extension_is_left_out(apdu: Message | Probe) -> None:
    data = with_bad_extension(encode_mts_apdu(apdu))
    with pytest.raises(DecodeError, match="latest-delivery-time"):
        peek_envelope(data)
    salvage = salvage_subject(data)
    assert salvage.subject is not None
    assert salvage.subject.extensions == ()
    assert salvage.subject.trace_information == ()
    assert essentials(salvage.subject) == essentials(strictly(encode_mts_apdu(apdu)))


@pytest.mark.slow
@given(reports)
def test_nothing_is_salvaged_from_a_report(report: Report) -> None:
    salvage = salvage_subject(encode_mts_apdu(report))
    assert salvage.subject is None
    assert salvage.why == "a report is not reported on"


@given(st.binary(max_size=200))
def test_any_octets_salvage_without_an_exception(data: bytes) -> None:
    salvage = salvage_subject(data)
    assert (salvage.subject is None) != (salvage.why == "")


@pytest.mark.slow
@given(messages, st.integers(min_value=1, max_value=400))
def test_a_truncated_message_salvages_or_says_what_is_missing(message: Message, cut: int) -> None:
    salvage = salvage_subject(encode_mts_apdu(message)[:-cut])
    assert (salvage.subject is None) != (salvage.why == "")


@pytest.mark.slow
@given(messages)
def test_a_recipient_whose_name_does_not_decode_is_left_out(message: Message) -> None:
    first = message.envelope.recipients[0]
    broken = dataclasses.replace(first, recipient_name=AT_SIGN)
    recipients = (broken, *message.envelope.recipients)
    envelope = dataclasses.replace(message.envelope, recipients=recipients)
    data = encode_mts_apdu(Message(envelope=envelope, content=message.content))
    salvage = salvage_subject(data)
    assert salvage.subject is not None
    assert salvage.subject.recipients == tuple(
        RecipientField(
            recipient_name=r.recipient_name,
            originally_specified_recipient_number=r.originally_specified_recipient_number,
            per_recipient_indicators=r.per_recipient_indicators,
        )
        for r in message.envelope.recipients
    )


@pytest.mark.slow
@given(messages)
def test_an_originator_that_does_not_decode_leaves_nothing(message: Message) -> None:
    envelope = dataclasses.replace(message.envelope, originator_name=AT_SIGN)
    data = encode_mts_apdu(Message(envelope=envelope, content=message.content))
    assert salvage_subject(data).subject is None
    assert salvage_subject(data).why == "originator not readable"


@pytest.mark.slow
@given(messages)
def test_no_recipient_readable_leaves_nothing(message: Message) -> None:
    recipients = tuple(
        dataclasses.replace(r, recipient_name=AT_SIGN) for r in message.envelope.recipients
    )
    envelope = dataclasses.replace(message.envelope, recipients=recipients)
    data = encode_mts_apdu(Message(envelope=envelope, content=message.content))
    assert salvage_subject(data).why == "no recipient readable"


def test_what_cannot_be_read_is_named() -> None:
    assert salvage_subject(b"").why == "the MTS-APDU not readable"
    assert salvage_subject(b"\x04\x00").why == "not a message, probe or report"
    assert salvage_subject(b"\xa0\x00").why == "the MTS-APDU not readable"
    assert salvage_subject(b"\xa0\x02\x31\x00").why == "message-identifier not readable"
    assert salvage_subject(b"\xa2\x02\x31\x00").why == "probe-identifier not readable"
