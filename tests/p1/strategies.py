"""Hypothesis strategies for the p1 models (test helper, not a test module).

Valid values of the X.411 envelope models: O/R names, domain identifiers, MTS
identifiers, UTCTime values (plain datetimes and ones that remember unusual text),
named bit strings, encoded information types, extension fields (unknown standard and
private ones, raw, and the typed ones), trace, recipients, message envelopes, messages,
probes and reports; and the values of the STANAG 4406 Annex A heading extensions the
IPM heading types (address lists, codress, other recipients, pilot forwarding
information, security information labels).  Every value encodes; its decoding equals
it and re-encodes to the same bytes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any, TypeVar

from hypothesis import strategies as st

from p1 import ber
from p1.ipms.models import (
    AddressListDesignator,
    BodyPartSecurityLabel,
    ORDescriptor,
    OtherRecipientDesignator,
    PilotInformation,
    SecurityInformationLabels,
)
from p1.mts.envelope import (
    Criticality,
    DeliveryReport,
    EncodedInformationTypes,
    ExtensionField,
    GlobalDomainIdentifier,
    InternalTraceEntry,
    LastTraceInformation,
    Message,
    MessageEnvelope,
    MTSIdentifier,
    NamedBits,
    NonDeliveryReport,
    OtherActions,
    PerMessageIndicators,
    PerRecipientIndicators,
    Probe,
    RecipientField,
    Report,
    ReportContent,
    ReportEnvelope,
    ReportRecipientField,
    RoutingAction,
    TraceEntry,
)
from p1.mts.extensions import (
    StandardExtension,
    internal_trace_extension,
    latest_delivery_time_extension,
    priority_level_qualifier_extension,
    prohibition_extension,
)
from p1.mts.fields import BuiltInEncodedInformationTypes
from p1.mts.orname import ExtensionAttribute, ORName
from p1.mts.precedence import PRIORITY_LEVEL_QUALIFIER_OID, LevelQualifier, Priority
from p1.mts.security_label import SecurityCategory, SecurityLabel

T = TypeVar("T")

PRINTABLE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 '()+,-./:=?"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
IA5 = "".join(chr(c) for c in range(32, 127))


def printable(min_size: int = 1, max_size: int = 16) -> st.SearchStrategy[str]:
    """PrintableString text that does not start or end with a space."""
    return st.text(PRINTABLE, min_size=min_size, max_size=max_size).filter(
        lambda s: s == s.strip() and bool(s)
    )


def optional(strategy: st.SearchStrategy[T]) -> st.SearchStrategy[T | None]:
    """``strategy`` or None."""
    return st.one_of(st.none(), strategy)


def tuples(
    strategy: st.SearchStrategy[T], max_size: int = 3, min_size: int = 0
) -> st.SearchStrategy[tuple[T, ...]]:
    """Tuples of ``strategy`` values."""
    return st.lists(strategy, min_size=min_size, max_size=max_size).map(tuple)


# --- names and identifiers -------------------------------------------------------------

countries = st.one_of(
    st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=2, max_size=2),
    st.text(DIGITS, min_size=3, max_size=3),
)
admds = st.one_of(st.just(" "), printable(1, 16), st.text(DIGITS, min_size=1, max_size=16))
prmds = st.one_of(printable(1, 16), st.text(DIGITS, min_size=1, max_size=16))


@st.composite
def global_domain_identifiers(draw: st.DrawFn) -> GlobalDomainIdentifier:
    """GlobalDomainIdentifier, sometimes with a digit string sent as PrintableString."""
    prmd = draw(optional(prmds))
    prmd_numeric = draw(st.sampled_from([None, False])) if prmd and prmd.isdigit() else None
    return GlobalDomainIdentifier(
        country=draw(countries), admd=draw(admds), prmd=prmd, prmd_numeric=prmd_numeric
    )


mts_identifiers = st.builds(
    MTSIdentifier,
    global_domain_identifier=global_domain_identifiers(),
    local_identifier=st.text(IA5, min_size=1, max_size=32),
)


def _ber_printable(text: str) -> bytes:
    return ber.tlv(ber.PRINTABLE_STRING, text.encode("ascii"))


unknown_extension_attributes = st.builds(
    ExtensionAttribute,
    type=st.sampled_from([7, 9, 22, 23, 41, 99]),
    value=printable(1, 20).map(_ber_printable),
)


@st.composite
def ornames(draw: st.DrawFn) -> ORName:
    """O/R names with the common attributes and sometimes an unknown extension attribute."""
    surname = draw(optional(printable(1, 40)))
    return ORName(
        country=draw(countries),
        admd=draw(admds),
        prmd=draw(optional(printable(1, 16))),
        organization=draw(optional(printable(1, 64))),
        organizational_units=draw(tuples(printable(1, 32), max_size=4)),
        surname=surname,
        given_name=draw(optional(printable(1, 16))) if surname else None,
        common_name=draw(optional(printable(1, 64))),
        extension_attributes=draw(tuples(unknown_extension_attributes, max_size=2)),
    )


# --- times -----------------------------------------------------------------------------

offsets = st.sampled_from(
    [UTC, timezone(timedelta(hours=2)), timezone(-timedelta(hours=5, minutes=30))]
)


@st.composite
def plain_times(draw: st.DrawFn) -> datetime:
    """Aware datetimes in UTCTime's range, whole seconds, in some time zone."""
    naive = draw(st.datetimes(min_value=datetime(1951, 1, 1), max_value=datetime(2048, 12, 31)))
    return naive.replace(microsecond=0, tzinfo=UTC).astimezone(draw(offsets))


@st.composite
def wire_times(draw: st.DrawFn) -> datetime:
    """UTCTime text as peers send it: seconds or not, Z or an offset."""
    when = draw(st.datetimes(min_value=datetime(1951, 1, 1), max_value=datetime(2048, 12, 31)))
    seconds = draw(st.sampled_from(["", f"{when.second:02d}"]))
    zone = draw(st.sampled_from(["Z", "+0100", "-0430", "+0000"]))
    return ber.parse_utctime(when.strftime("%y%m%d%H%M") + seconds + zone)


times = st.one_of(plain_times(), wire_times())


# --- bit strings -----------------------------------------------------------------------

_B = TypeVar("_B", bound=NamedBits)


@st.composite
def named_bits(draw: st.DrawFn, cls: type[_B], spare: range) -> _B:
    """A NamedBits value with random named bits, spare bits and wire length."""
    flags: dict[str, Any] = {name: draw(st.booleans()) for name in cls.NAMES if name}
    other = tuple(draw(st.lists(st.sampled_from(list(spare)), max_size=2))) if spare else ()
    value = cls(**flags, other_bits=other)
    needed = value.bit_string()[1]
    length = draw(optional(st.integers(min_value=needed, max_value=max(needed, 32))))
    return cls(**flags, other_bits=other, length=length)


per_message_indicators = named_bits(PerMessageIndicators, range(8, 16))
per_recipient_indicators = named_bits(PerRecipientIndicators, range(5, 16))
criticalities = named_bits(Criticality, range(3, 8))
other_actions = named_bits(OtherActions, range(2, 4))

object_identifiers = st.builds(
    lambda arcs: "1.3." + ".".join(str(a) for a in arcs),
    st.lists(st.integers(min_value=0, max_value=2**32), min_size=1, max_size=6),
)


encoded_information_types = st.builds(
    EncodedInformationTypes,
    built_in=named_bits(BuiltInEncodedInformationTypes, range(10, 12)),
    g3_facsimile=optional(st.just(bytes.fromhex("00c0000000"))),
    teletex=optional(st.just(bytes.fromhex("800130"))),
    extended=tuples(object_identifiers, max_size=2),
)


# --- extensions ------------------------------------------------------------------------

_TYPED = {1, 3, 4, 5, 38}
unknown_standard_types = st.integers(min_value=0, max_value=300).filter(lambda n: n not in _TYPED)
unknown_private_types = object_identifiers.filter(lambda oid: oid != PRIORITY_LEVEL_QUALIFIER_OID)
raw_values = st.one_of(
    st.binary(max_size=20).map(lambda b: ber.tlv(ber.OCTET_STRING, b)),
    printable(1, 20).map(lambda t: ber.tlv(ber.SEQUENCE, _ber_printable(t), constructed=True)),
    st.just(b"\x05\x00"),
)

unknown_extensions = st.builds(
    ExtensionField,
    type=st.one_of(unknown_standard_types, unknown_private_types),
    criticality=optional(criticalities),
    value=optional(raw_values),
)


@st.composite
def internal_trace_entries(draw: st.DrawFn) -> InternalTraceEntry:
    """InternalTraceEntry with an attempted MTA, an attempted domain or neither."""
    attempted = draw(st.sampled_from(["mta", "domain", None]))
    return InternalTraceEntry(
        global_domain_identifier=draw(global_domain_identifiers()),
        mta_name=draw(st.text(IA5, min_size=1, max_size=32)),
        arrival_time=draw(times),
        routing_action=draw(st.sampled_from(RoutingAction)),
        attempted_mta=draw(st.text(IA5, min_size=1, max_size=32)) if attempted == "mta" else None,
        attempted_domain=draw(global_domain_identifiers()) if attempted == "domain" else None,
        deferred_time=draw(optional(times)),
        converted_encoded_information_types=draw(optional(encoded_information_types)),
        other_actions=draw(other_actions),
    )


known_extensions = st.one_of(
    st.sampled_from(LevelQualifier).map(priority_level_qualifier_extension),
    times.map(latest_delivery_time_extension),
    st.builds(
        prohibition_extension,
        st.sampled_from(
            [
                StandardExtension.RECIPIENT_REASSIGNMENT_PROHIBITED,
                StandardExtension.DL_EXPANSION_PROHIBITED,
                StandardExtension.CONVERSION_WITH_LOSS_PROHIBITED,
            ]
        ),
        st.booleans(),
    ),
    tuples(internal_trace_entries(), min_size=1, max_size=2).map(internal_trace_extension),
)


def _unique_types(fields: list[ExtensionField]) -> bool:
    keys = [(type(f.type) is str, f.type) for f in fields]
    return len(set(keys)) == len(keys)


extension_lists = (
    st.lists(st.one_of(unknown_extensions, known_extensions), max_size=4)
    .filter(_unique_types)
    .map(tuple)
)
recipient_extension_lists = tuples(unknown_extensions, max_size=2).filter(
    lambda t: _unique_types(list(t))
)


# --- trace and recipients --------------------------------------------------------------

trace_entries = st.builds(
    TraceEntry,
    global_domain_identifier=global_domain_identifiers(),
    arrival_time=times,
    routing_action=st.sampled_from(RoutingAction),
    attempted_domain=optional(global_domain_identifiers()),
    deferred_time=optional(times),
    converted_encoded_information_types=optional(encoded_information_types),
    other_actions=other_actions,
)

recipient_fields = st.builds(
    RecipientField,
    recipient_name=ornames(),
    originally_specified_recipient_number=st.integers(min_value=1, max_value=32767),
    per_recipient_indicators=per_recipient_indicators,
    explicit_conversion=optional(st.integers(min_value=0, max_value=17)),
    extensions=recipient_extension_lists,
)

content_types = st.one_of(
    st.sampled_from([0, 1, 2, 22, 35, 40, 1000]), st.just("1.3.26.0.4406.0.4.1"), object_identifiers
)

bilateral_information = st.builds(
    lambda country, admd, data: ber.constructed(
        ber.SEQUENCE,
        [
            ber.constructed(ber.application(1), [_ber_printable(country)]),
            ber.constructed(ber.application(2), [_ber_printable(admd)]),
            ber.tlv(ber.OCTET_STRING, data),
        ],
    ),
    st.text(LETTERS, min_size=2, max_size=2),
    printable(1, 16),
    st.binary(max_size=8),
)


# --- envelopes -------------------------------------------------------------------------

MESSAGE_MEMBERS = (
    "mts_identifier",
    "originator_name",
    "original_encoded_information_types",
    "content_type",
    "content_identifier",
    "priority",
    "per_message_indicators",
    "deferred_delivery_time",
    "per_domain_bilateral_information",
    "trace_information",
    "extensions",
    "recipients",
)


@st.composite
def message_envelopes(draw: st.DrawFn) -> MessageEnvelope:
    """Message envelopes; some name a member order and explicit DEFAULT members."""
    order = draw(st.one_of(st.just(()), st.permutations(MESSAGE_MEMBERS).map(tuple)))
    return MessageEnvelope(
        mts_identifier=draw(mts_identifiers),
        originator_name=draw(ornames()),
        original_encoded_information_types=draw(optional(encoded_information_types)),
        content_type=draw(content_types),
        content_identifier=draw(optional(printable(1, 16))),
        priority=draw(st.sampled_from(Priority)),
        per_message_indicators=draw(per_message_indicators),
        deferred_delivery_time=draw(optional(times)),
        per_domain_bilateral_information=draw(tuples(bilateral_information, max_size=2)),
        trace_information=draw(tuples(trace_entries, min_size=1, max_size=3)),
        extensions=draw(extension_lists),
        recipients=draw(tuples(recipient_fields, min_size=1, max_size=3)),
        wire_order=order,
    )


messages = st.builds(Message, envelope=message_envelopes(), content=st.binary(max_size=64))

probes = st.builds(
    Probe,
    probe_identifier=mts_identifiers,
    originator_name=ornames(),
    original_encoded_information_types=optional(encoded_information_types),
    content_type=content_types,
    content_identifier=optional(printable(1, 16)),
    content_length=optional(st.integers(min_value=0, max_value=2**31 - 1)),
    per_message_indicators=per_message_indicators,
    per_domain_bilateral_information=tuples(bilateral_information, max_size=1),
    trace_information=tuples(trace_entries, min_size=1, max_size=2),
    extensions=extension_lists,
    recipients=tuples(recipient_fields, min_size=1, max_size=2),
)


# --- reports ---------------------------------------------------------------------------

delivery_reports = st.builds(
    DeliveryReport,
    message_delivery_time=times,
    type_of_mts_user=st.integers(min_value=0, max_value=8),
)
non_delivery_reports = st.builds(
    NonDeliveryReport,
    reason_code=st.integers(min_value=0, max_value=10),
    diagnostic_code=optional(st.integers(min_value=0, max_value=80)),
)

last_trace_information = st.builds(
    LastTraceInformation,
    arrival_time=times,
    converted_encoded_information_types=optional(encoded_information_types),
    report=st.one_of(delivery_reports, non_delivery_reports),
)

report_recipient_fields = st.builds(
    ReportRecipientField,
    actual_recipient_name=ornames(),
    originally_specified_recipient_number=st.integers(min_value=1, max_value=32767),
    per_recipient_indicators=per_recipient_indicators,
    last_trace_information=last_trace_information,
    originally_intended_recipient_name=optional(ornames()),
    supplementary_information=optional(printable(1, 64)),
    extensions=recipient_extension_lists,
)

reports = st.builds(
    Report,
    envelope=st.builds(
        ReportEnvelope,
        report_identifier=mts_identifiers,
        report_destination_name=ornames(),
        trace_information=tuples(trace_entries, min_size=1, max_size=2),
        extensions=extension_lists,
    ),
    content=st.builds(
        ReportContent,
        subject_identifier=mts_identifiers,
        subject_intermediate_trace_information=tuples(trace_entries, max_size=2),
        original_encoded_information_types=optional(encoded_information_types),
        content_type=optional(content_types),
        content_identifier=optional(printable(1, 16)),
        returned_content=optional(st.binary(max_size=32)),
        additional_information=optional(raw_values),
        extensions=tuples(unknown_extensions, max_size=2).filter(lambda t: _unique_types(list(t))),
        recipients=tuples(report_recipient_fields, min_size=1, max_size=2),
    ),
)

mts_apdus = st.one_of(messages, probes, reports)


# --- STANAG 4406 heading extensions (IPM heading) --------------------------------------

or_descriptors = st.builds(
    ORDescriptor,
    formal_name=optional(ornames()),
    free_form_name=optional(st.text(st.characters(max_codepoint=255), max_size=20)),
    telephone_number=optional(printable(1, 20)),
)
military_strings = printable(1, 69)
named_or_national = st.integers(min_value=-300, max_value=300)
"""An INTEGER with named values: the named ones, and others for national use."""
category_values = st.one_of(
    st.just(b"\x05\x00"),
    st.binary(max_size=8).map(lambda b: ber.tlv(ber.OCTET_STRING, b)),
    st.integers(-1000, 1000).map(lambda n: ber.tlv(ber.INTEGER, ber.int_contents(n))),
)


def security_labels(categories: bool = True) -> st.SearchStrategy[SecurityLabel]:
    """X.411 8.5.9 SecurityLabel values; without security categories when
    ``categories`` is false (their values are kept as received, in any form)."""
    return st.builds(
        SecurityLabel,
        policy=optional(object_identifiers),
        classification=optional(st.integers(0, 256)),
        privacy_mark=optional(printable(1, 128)),
        categories=tuples(st.builds(SecurityCategory, object_identifiers, category_values))
        if categories
        else st.just(()),
    )


address_list_designators = st.builds(
    AddressListDesignator,
    type=named_or_national,
    list_name=or_descriptors,
    notification_request=optional(named_or_national),
    reply_request=optional(named_or_national),
)
other_recipient_designators = st.builds(
    OtherRecipientDesignator, type=named_or_national, designator=military_strings
)


def pilot_informations(categories: bool = True) -> st.SearchStrategy[PilotInformation]:
    """PilotInformation, precedences 0..31 (16..31 national); see :func:`security_labels`."""
    return st.builds(
        PilotInformation,
        precedence=optional(st.integers(0, 31)),
        recipients=tuples(or_descriptors, max_size=2),
        security_label=optional(security_labels(categories)),
        handling=tuples(military_strings),
    )


def security_information_labels(
    categories: bool = True,
) -> st.SearchStrategy[SecurityInformationLabels]:
    """SecurityInformationLabels; see :func:`security_labels`."""
    labels = security_labels(categories)
    return st.builds(
        SecurityInformationLabels,
        content_security_label=labels,
        heading_security_label=optional(labels),
        body_part_security_labels=tuples(
            st.builds(
                BodyPartSecurityLabel,
                security_label=labels,
                sequence_number=optional(st.integers(-(2**31), 2**31)),
            ),
            max_size=2,
        ),
    )


def mm_heading_extensions(categories: bool = True) -> dict[str, st.SearchStrategy[Any]]:
    """Keyword strategies for the Heading fields of the STANAG 4406 heading extensions
    typed after the first eleven: each present or absent."""
    return {
        "address_list_indicator": tuples(address_list_designators, max_size=2),
        "codress_message": optional(st.integers(-(2**63), 2**63)),
        "other_recipients_indicator": tuples(other_recipient_designators),
        "pilot_forwarding_info": tuples(pilot_informations(categories), max_size=2),
        "security_information_labels": optional(security_information_labels(categories)),
    }
