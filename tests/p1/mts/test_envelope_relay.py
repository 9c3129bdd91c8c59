"""p1.mts.relay: a received message's trace grown on its bytes, the rest as received."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p1 import ber
from p1.errors import DecodeError
from p1.mts.envelope import (
    Message,
    MessageEnvelope,
    decode_mts_apdu,
    encode_mts_apdu,
    replace_message_envelope,
)
from p1.mts.extensions import (
    ExtensionField,
    StandardExtension,
    find_extension,
    internal_trace_extension,
    with_internal_trace_entry,
)
from p1.mts.fields import GlobalDomainIdentifier
from p1.mts.relay import with_trace_added
from p1.mts.trace import InternalTraceEntry, RoutingAction, TraceEntry
from tests.p1 import strategies
from tests.p1.mts.test_envelope import GOLDEN_MESSAGE, GOLDEN_REPORT, make_envelope
from tests.profiles import examples

HYPOTHESIS = settings(max_examples=examples(2), suppress_health_check=[HealthCheck.too_slow])

HERE = GlobalDomainIdentifier(country="GB", admd=" ", prmd="SITEB")
NOW = datetime(2026, 11, 24, 10, 0, 0, tzinfo=UTC)
OURS = TraceEntry(global_domain_identifier=HERE, arrival_time=NOW)
INTERNAL = InternalTraceEntry(
    global_domain_identifier=HERE,
    mta_name="MTA-B",
    arrival_time=NOW,
    routing_action=RoutingAction.RELAYED,
)


def reencoded(apdu: bytes, trace: TraceEntry | None, internal: InternalTraceEntry) -> bytes:
    """What re-encoding the decoded envelope with the new entries gives."""
    message = decode_mts_apdu(apdu)
    assert isinstance(message, Message)
    envelope = message.envelope
    entries = envelope.trace_information + (() if trace is None else (trace,))
    grown = dataclasses.replace(
        envelope,
        trace_information=entries,
        extensions=with_internal_trace_entry(envelope.extensions, internal),
    )
    return replace_message_envelope(apdu, grown)


@pytest.mark.slow
@HYPOTHESIS
@given(
    strategies.message_envelopes(),
    st.binary(max_size=64),
    st.booleans(),
    strategies.internal_trace_entries(),
)
def test_the_trace_grown_on_the_bytes_is_what_re_encoding_gives(
    envelope: MessageEnvelope, content: bytes, domain_entry: bool, internal: InternalTraceEntry
) -> None:
    apdu = encode_mts_apdu(Message(envelope=envelope, content=content))
    trace = OURS if domain_entry else None
    assert with_trace_added(apdu, trace, internal) == reencoded(apdu, trace, internal)


def grown_envelope(apdu: bytes) -> MessageEnvelope:
    message = decode_mts_apdu(apdu)
    assert isinstance(message, Message)
    return message.envelope


def test_an_envelope_without_extensions_gets_an_internal_trace_at_the_end() -> None:
    envelope = make_envelope(extensions=())
    apdu = encode_mts_apdu(Message(envelope=envelope, content=b"body"))
    grown = grown_envelope(with_trace_added(apdu, OURS, INTERNAL))
    assert grown.trace_information == (*envelope.trace_information, OURS)
    assert grown.internal_trace == (INTERNAL,)
    assert grown.wire_order[-1] == "extensions"


def test_an_existing_internal_trace_keeps_its_place_and_entries() -> None:
    earlier = dataclasses.replace(INTERNAL, mta_name="MTA-A")
    unknown = ExtensionField(type=99, criticality=None, value=b"\x05\x00")
    extensions = (internal_trace_extension([earlier]), unknown)
    envelope = make_envelope(extensions=extensions)
    apdu = encode_mts_apdu(Message(envelope=envelope, content=b"body"))
    grown = grown_envelope(with_trace_added(apdu, None, INTERNAL))
    assert grown.trace_information == envelope.trace_information  # no entry of ours
    assert grown.internal_trace == (earlier, INTERNAL)
    assert [e.type for e in grown.extensions] == [
        StandardExtension.INTERNAL_TRACE_INFORMATION,
        99,
    ]
    assert find_extension(grown.extensions, 99) == unknown


def test_the_content_keeps_its_segments_and_indefinite_length() -> None:
    envelope = make_envelope()
    plain = encode_mts_apdu(Message(envelope=envelope, content=b"abcdef"))
    # The same message with its content as a constructed OCTET STRING of indefinite
    # length in two segments, as some products send large contents.
    segments = ber.tlv(ber.OCTET_STRING, b"abc") + ber.tlv(ber.OCTET_STRING, b"def")
    content = b"\x24\x80" + segments + b"\x00\x00"
    envelope_tlv = ber.children(ber.read_single(plain, "apdu"), "apdu")[0].raw()
    body = envelope_tlv + content
    apdu = plain[:1] + ber.length_octets(len(body)) + body
    grown = with_trace_added(apdu, OURS, INTERNAL)
    assert grown.endswith(content)
    assert grown == reencoded(apdu, OURS, INTERNAL)


def test_a_golden_message_keeps_every_octet_but_the_trace() -> None:
    grown = with_trace_added(GOLDEN_MESSAGE, OURS, INTERNAL)
    assert grown == reencoded(GOLDEN_MESSAGE, OURS, INTERNAL)
    assert grown.endswith(b"\x04\x05hello")  # the content as received


def test_a_report_is_refused() -> None:
    with pytest.raises(DecodeError, match="not a message"):
        with_trace_added(GOLDEN_REPORT, OURS, INTERNAL)


def test_bytes_that_are_no_apdu_are_refused() -> None:
    with pytest.raises(DecodeError):
        with_trace_added(b"\x04\x01x", OURS, INTERNAL)
