"""The X.411 MTS-APDU: message, probe and report as an MTA transfers them.

X.411 clause 12.2 (transfer port: message-transfer, probe-transfer, report-transfer),
Annex A (MTAAbstractService) and X.419 (the MTS-APDU carried by RTSE).  An MTA routes
and schedules from the envelope alone: the content octets of a message are passed
through untouched and never decoded here.

Lossless relay: a decoded MTS-APDU re-encodes to the bytes received (for definite-length
input with shortest length octets and primitive strings): SET members keep their order,
DEFAULT members sent explicitly are sent again, UTCTime text is kept, and unknown
extensions (standard or private), per-recipient extensions and O/R name extension
attributes are kept byte-exact.  Values built in code are encoded in the standard's
definition order with DEFAULT values left out.  :func:`replace_message_envelope` goes
further and keeps the content's encoding exactly as received.

Public API::

    Message(envelope=MessageEnvelope(...), content=b"...")
    MessageEnvelope   .precedence, .latest_delivery_time, .internal_trace, ...
                      .with_trace(entry), .with_internal_trace(entry), .with_precedence(p)
    RecipientField    per-recipient fields of a message or probe
    Probe             the probe transfer envelope
    Report, ReportEnvelope, ReportContent, ReportRecipientField, DeliveryReport,
        NonDeliveryReport, NonDeliveryReason, NonDeliveryDiagnostic, TypeOfMTSUser
        (from p1.mts.report)
    encode_mts_apdu(apdu) -> bytes          decode_mts_apdu(data) -> Message | Report | Probe
    encode_message_envelope(env) -> bytes   decode_message_envelope(data) -> MessageEnvelope
    peek_envelope(data) -> MessageEnvelope | Probe | Report   (a message's content not copied)
    envelope_from_prefix(prefix) -> MessageEnvelope   a message's, from its first octets only
    replace_message_envelope(data, envelope) -> bytes         (content bytes kept as received)
    message_content(data) -> bytes                             (the envelope skipped)
    message_content_view(data) -> bytes | memoryview            (the same, not copied)
    and the shared fields of p1.mts.fields (MTSIdentifier, TraceEntry, ExtensionField...)

Tolerance.  A value outside the standard's form in a field the MTA does not route on
(a trace time without its zone or with PP's three-digit year, PP's form of
``ExtensionField.type``, a tag number below 31 in the long form on a member of an
envelope SET) is read as best it can be, keeps its received octets for the
relay, and is listed in ``deviations`` (a tuple of :class:`p1.ber.Deviation`, empty for
well-formed input) of the decoded :class:`MessageEnvelope`, :class:`Probe`,
:class:`ReportEnvelope` and :class:`ReportContent`; :class:`Message` and :class:`Report`
give them all as ``.deviations`` too.  The fields routed or scheduled on (names,
identifiers, recipients, priority, deferred-delivery-time, latest-delivery-time) stay
strict.

Every other malformed input raises :class:`p1.errors.DecodeError`; every value that cannot
be encoded raises :class:`p1.errors.EncodeError`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypedDict

from p1 import ber
from p1.ber import Deviation, Deviations, Tlv, application, context
from p1.errors import DecodeError, EncodeError
from p1.mts.extensions import (
    ExtensionField,
    ExtensionType,
    ExtensionViews,
    StandardExtension,
    check_known_extensions,
    decode_optional_extensions,
    encode_kept_extensions,
    find_extension,
    internal_trace_extension,
    latest_delivery_time_extension,
    priority_level_qualifier_extension,
    prohibition_extension,
    with_extension,
    with_internal_trace_entry,
    without_extension,
)
from p1.mts.fields import (
    CONTENT_TYPE_TAGS,
    EIT_TAG,
    MTS_IDENTIFIER_TAG,
    ORNAME_TAG,
    UB_INTEGER_OPTIONS,
    BuiltInContentType,
    BuiltInEncodedInformationTypes,
    ContentType,
    Criticality,
    EncodedInformationTypes,
    GlobalDomainIdentifier,
    MTSIdentifier,
    NamedBits,
    OtherActions,
    PerMessageIndicators,
    PerRecipientIndicators,
    decode_bits,
    decode_content_type,
    decode_eits,
    decode_mts_identifier,
    decode_name,
    decode_recipient_number,
    encode_bits,
    encode_content_type,
    encode_eits,
    encode_mts_identifier,
    encode_name,
    encode_recipient_number,
)
from p1.mts.orname import ORName
from p1.mts.precedence import (
    DEFAULT_TABLE,
    PRIORITY_LEVEL_QUALIFIER_OID,
    LevelQualifier,
    Precedence,
    PrecedenceTable,
    Priority,
)
from p1.mts.report import (
    DeliveryReport,
    LastTraceInformation,
    NonDeliveryDiagnostic,
    NonDeliveryReason,
    NonDeliveryReport,
    Report,
    ReportContent,
    ReportEnvelope,
    ReportRecipientField,
    TypeOfMTSUser,
    decode_report,
    encode_report,
)
from p1.mts.trace import (
    TRACE_TAG,
    InternalTraceEntry,
    RoutingAction,
    TraceEntry,
    decode_trace,
    encode_trace,
)

__all__ = [
    "DEFAULT_TABLE",
    "PRIORITY_LEVEL_QUALIFIER_OID",
    "BuiltInContentType",
    "BuiltInEncodedInformationTypes",
    "ContentType",
    "Criticality",
    "DeliveryReport",
    "Deviation",
    "EncodedInformationTypes",
    "ExtensionField",
    "ExtensionType",
    "GlobalDomainIdentifier",
    "InternalTraceEntry",
    "LastTraceInformation",
    "LevelQualifier",
    "MTSApdu",
    "MTSIdentifier",
    "Message",
    "MessageEnvelope",
    "NamedBits",
    "NonDeliveryDiagnostic",
    "NonDeliveryReason",
    "NonDeliveryReport",
    "OtherActions",
    "PerMessageIndicators",
    "PerRecipientIndicators",
    "Precedence",
    "Priority",
    "Probe",
    "RecipientField",
    "Report",
    "ReportContent",
    "ReportEnvelope",
    "ReportRecipientField",
    "RoutingAction",
    "StandardExtension",
    "TraceEntry",
    "TypeOfMTSUser",
    "decode_message_envelope",
    "decode_mts_apdu",
    "encode_message_envelope",
    "encode_mts_apdu",
    "find_extension",
    "internal_trace_extension",
    "latest_delivery_time_extension",
    "message_content",
    "message_content_view",
    "peek_envelope",
    "priority_level_qualifier_extension",
    "prohibition_extension",
    "replace_message_envelope",
    "with_extension",
    "without_extension",
]


_new = object.__new__
"""Makes a model the decoder fills in without its ``__init__`` (see MessageEnvelope)."""


# --- per-recipient fields --------------------------------------------------------------


# PerRecipientMessageTransferFields ::= SET {
#   recipient-name                         MTARecipientName,
#   originally-specified-recipient-number  [0] OriginallySpecifiedRecipientNumber,
#   per-recipient-indicators               [1] PerRecipientIndicators,
#   explicit-conversion                    [2] ExplicitConversion OPTIONAL,
#   extensions  [3] SET OF ExtensionField{{PerRecipientMessageTransferExtensions}} DEFAULT {} }
# PerRecipientProbeTransferFields has the same members.
@dataclass(frozen=True, kw_only=True)
class RecipientField:
    """One recipient of a message or probe (X.411 clause 12.2.1.1.1 / 12.2.1.2.1).
    (Not slots: the decoder fills it in at once, as a :class:`MessageEnvelope`.)"""

    recipient_name: ORName
    originally_specified_recipient_number: int
    """1..32767: the recipient's position in the originator's submission."""
    per_recipient_indicators: PerRecipientIndicators = field(default_factory=PerRecipientIndicators)
    explicit_conversion: int | None = None
    """ExplicitConversion code (X.411: ia5-text-to-teletex(0), ...), None when absent."""
    extensions: tuple[ExtensionField, ...] = ()
    wire_order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def responsible(self) -> bool:
        """The receiving MTA is responsible for this recipient (responsibility bit)."""
        return self.per_recipient_indicators.responsibility


# The tags of a recipient's members (extensions [3] is an envelope's member too).
_NUMBER_TAG = context(0)
_RECIPIENT_INDICATORS_TAG = context(1)
_CONVERSION_TAG = context(2)
_EXTENSIONS_TAG = context(3)
_RECIPIENT_MEMBERS = {
    ORNAME_TAG: "recipient_name",
    _NUMBER_TAG: "originally_specified_recipient_number",
    _RECIPIENT_INDICATORS_TAG: "per_recipient_indicators",
    _CONVERSION_TAG: "explicit_conversion",
    _EXTENSIONS_TAG: "extensions",
}


def _decode_recipient(tlv: Tlv, what: str, deviations: Deviations) -> RecipientField:
    if tlv.tag != ber.SET:
        ber.expect(tlv, ber.SET, what)
    members = ber.split_set(tlv, _RECIPIENT_MEMBERS, what)
    conversion = members.get("explicit_conversion")
    extensions = members.get("extensions")
    recipient = _new(RecipientField)  # every field read: not through __init__ (see there)
    recipient.__dict__.update(
        recipient_name=decode_name(members.need("recipient_name", what), f"{what}.recipient-name"),
        originally_specified_recipient_number=decode_recipient_number(
            members.need("originally_specified_recipient_number", what), what
        ),
        per_recipient_indicators=decode_bits(
            PerRecipientIndicators,
            members.need("per_recipient_indicators", what),
            f"{what}.per-recipient-indicators",
        ),
        explicit_conversion=None
        if conversion is None
        else ber.read_bounded_int(conversion, f"{what}.explicit-conversion", 0, UB_INTEGER_OPTIONS),
        extensions=decode_optional_extensions(extensions, what, deviations),
        wire_order=members.order,
    )
    return recipient


def _encode_recipient(recipient: RecipientField, what: str) -> bytes:
    if not isinstance(recipient, RecipientField):
        raise EncodeError(f"{recipient!r} is not a RecipientField", where=what)
    order = recipient.wire_order
    conversion = recipient.explicit_conversion
    return ber.encode_set(
        ber.SET,
        [
            ("recipient_name", encode_name(recipient.recipient_name, ORNAME_TAG)),
            (
                "originally_specified_recipient_number",
                encode_recipient_number(
                    recipient.originally_specified_recipient_number, _NUMBER_TAG, what
                ),
            ),
            (
                "per_recipient_indicators",
                encode_bits(
                    recipient.per_recipient_indicators,
                    _RECIPIENT_INDICATORS_TAG,
                    f"{what}.per-recipient-indicators",
                ),
            ),
            (
                "explicit_conversion",
                None
                if conversion is None
                else ber.tlv(
                    _CONVERSION_TAG,
                    ber.int_contents(
                        ber.check_int(
                            conversion, f"{what}.explicit-conversion", 0, UB_INTEGER_OPTIONS
                        )
                    ),
                ),
            ),
            (
                "extensions",
                encode_kept_extensions(recipient.extensions, _EXTENSIONS_TAG, order),
            ),
        ],
        order,
    )


def _decode_recipients(tlv: Tlv, what: str, deviations: Deviations) -> tuple[RecipientField, ...]:
    return tuple(
        _decode_recipient(child, f"{what}[{index}]", deviations)
        for index, child in enumerate(ber.children(tlv, what))
    )


def _encode_recipients(recipients: Sequence[RecipientField], what: str) -> bytes:
    return ber.constructed(
        _RECIPIENTS_TAG,
        [_encode_recipient(r, f"{what}[{index}]") for index, r in enumerate(recipients)],
    )


# --- message envelope ------------------------------------------------------------------


# MessageTransferEnvelope ::= SET {
#   COMPONENTS OF PerMessageTransferFields,
#   per-recipient-fields [2] SEQUENCE SIZE (1..ub-recipients) OF
#                            PerRecipientMessageTransferFields }
# PerMessageTransferFields ::= SET {
#   message-identifier                  MessageIdentifier,
#   originator-name                     MTAOriginatorName,
#   original-encoded-information-types  OriginalEncodedInformationTypes OPTIONAL,
#   content-type                        ContentType,
#   content-identifier                  ContentIdentifier OPTIONAL,
#   priority                            Priority DEFAULT normal,
#   per-message-indicators              PerMessageIndicators DEFAULT {},
#   deferred-delivery-time              [0] DeferredDeliveryTime OPTIONAL,
#   per-domain-bilateral-information    [1] SEQUENCE SIZE (1..ub-transfers) OF
#                                           PerDomainBilateralInformation OPTIONAL,
#   trace-information                   TraceInformation,
#   extensions  [3] SET OF ExtensionField{{MessageTransferExtensions}} DEFAULT {} }
@dataclass(frozen=True, kw_only=True)
class MessageEnvelope(ExtensionViews):
    """The message transfer envelope (X.411 clause 12.2.1.1.1).  (Not slots: the decoder
    sets every field in the instance dictionary at once, not through the generated
    ``__init__``, which makes one ``object.__setattr__`` call per field.)"""

    mts_identifier: MTSIdentifier
    """message-identifier."""
    originator_name: ORName
    original_encoded_information_types: EncodedInformationTypes | None = None
    content_type: ContentType
    """Built-in (int, e.g. 22 for P2) or extended (OID text, e.g. P772's)."""
    content_identifier: str | None = None
    priority: Priority = Priority.NORMAL
    per_message_indicators: PerMessageIndicators = field(default_factory=PerMessageIndicators)
    deferred_delivery_time: datetime | None = None
    per_domain_bilateral_information: tuple[bytes, ...] = ()
    """Each PerDomainBilateralInformation as received (BER of the SEQUENCE)."""
    trace_information: tuple[TraceEntry, ...] = ()
    extensions: tuple[ExtensionField, ...] = ()
    recipients: tuple[RecipientField, ...] = ()
    """per-recipient-fields."""
    wire_order: tuple[str, ...] = field(default=(), compare=False, repr=False)
    deviations: tuple[Deviation, ...] = field(default=(), compare=False, repr=False)
    """What the decoder tolerated (see the module's docstring); () when well formed."""

    @property
    def precedence(self) -> Precedence:
        """The precedence the priority and priority-level-qualifier stand for
        (:data:`p1.mts.precedence.DEFAULT_TABLE`)."""
        return self.precedence_in(DEFAULT_TABLE)

    def precedence_in(self, table: PrecedenceTable) -> Precedence:
        """The precedence under a configured table."""
        return table.from_mts(self.priority, self.priority_level_qualifier)

    def with_precedence(
        self, precedence: Precedence, table: PrecedenceTable = DEFAULT_TABLE
    ) -> MessageEnvelope:
        """A copy whose priority and priority-level-qualifier express ``precedence``."""
        priority, qualifier = table.to_mts(precedence)
        extensions = with_extension(self.extensions, priority_level_qualifier_extension(qualifier))
        return dataclasses.replace(self, priority=priority, extensions=extensions)

    def with_trace(self, entry: TraceEntry) -> MessageEnvelope:
        """A copy with ``entry`` appended to trace-information."""
        return dataclasses.replace(self, trace_information=(*self.trace_information, entry))

    def with_internal_trace(self, entry: InternalTraceEntry) -> MessageEnvelope:
        """A copy with ``entry`` appended to internal-trace-information."""
        return dataclasses.replace(
            self, extensions=with_internal_trace_entry(self.extensions, entry)
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """``Message ::= SEQUENCE { envelope MessageTransferEnvelope, content Content }``.

    The content octets are carried as they are; the MTA never decodes them to relay.
    """

    envelope: MessageEnvelope
    content: bytes

    @property
    def precedence(self) -> Precedence:
        """The envelope's precedence."""
        return self.envelope.precedence

    @property
    def deviations(self) -> tuple[Deviation, ...]:
        """What the decoder tolerated in the envelope (the content is not decoded)."""
        return self.envelope.deviations


_CONTENT_IDENTIFIER_TAG = application(10)
_PRIORITY_TAG = application(7)
_MESSAGE_INDICATORS_TAG = application(8)
_DEFERRED_TAG = context(0)
_BILATERAL_TAG = context(1)
_RECIPIENTS_TAG = context(2)

_MESSAGE_MEMBERS = {
    MTS_IDENTIFIER_TAG: "mts_identifier",
    ORNAME_TAG: "originator_name",
    EIT_TAG: "original_encoded_information_types",
    **{tag: "content_type" for tag in CONTENT_TYPE_TAGS},
    _CONTENT_IDENTIFIER_TAG: "content_identifier",
    _PRIORITY_TAG: "priority",
    _MESSAGE_INDICATORS_TAG: "per_message_indicators",
    _DEFERRED_TAG: "deferred_delivery_time",
    _BILATERAL_TAG: "per_domain_bilateral_information",
    TRACE_TAG: "trace_information",
    _EXTENSIONS_TAG: "extensions",
    _RECIPIENTS_TAG: "recipients",
}


def _decode_priority(tlv: Tlv | None, what: str) -> Priority:
    if tlv is None:
        return Priority.NORMAL
    return _PRIORITIES[ber.read_bounded_int(tlv, what, 0, 2)]


_PRIORITIES = {int(priority): priority for priority in Priority}
_NO_INDICATORS = PerMessageIndicators()  # the DEFAULT (models are immutable: one is enough)


def _decode_bilateral(tlv: Tlv | None, what: str) -> tuple[bytes, ...]:
    if tlv is None:
        return ()
    return tuple(ber.expect(child, ber.SEQUENCE, what).raw() for child in ber.children(tlv, what))


def _optional_text(tlv: Tlv | None, what: str) -> str | None:
    return None if tlv is None else ber.read_text(tlv, what)


def _optional_time(tlv: Tlv | None, what: str) -> datetime | None:
    return None if tlv is None else ber.read_utctime(tlv, what)


class _Common(TypedDict):
    originator_name: ORName
    original_encoded_information_types: EncodedInformationTypes | None
    content_type: ContentType
    content_identifier: str | None
    per_message_indicators: PerMessageIndicators
    per_domain_bilateral_information: tuple[bytes, ...]
    trace_information: tuple[TraceEntry, ...]
    extensions: tuple[ExtensionField, ...]
    recipients: tuple[RecipientField, ...]
    wire_order: tuple[str, ...]
    deviations: tuple[Deviation, ...]


def _decode_common(members: ber.SetMembers, what: str, deviations: Deviations) -> _Common:
    """The members a message envelope and a probe share; what was tolerated is appended
    to ``deviations``, whose tuple is the result's ``deviations``."""
    eits = members.get("original_encoded_information_types")
    indicators = members.get("per_message_indicators")
    extensions = members.get("extensions")
    fields: _Common = {
        "originator_name": decode_name(
            members.need("originator_name", what), f"{what}.originator-name"
        ),
        "original_encoded_information_types": None
        if eits is None
        else decode_eits(eits, f"{what}.original-encoded-information-types"),
        "content_type": decode_content_type(
            members.need("content_type", what), f"{what}.content-type"
        ),
        "content_identifier": _optional_text(
            members.get("content_identifier"), f"{what}.content-identifier"
        ),
        "per_message_indicators": _NO_INDICATORS
        if indicators is None
        else decode_bits(PerMessageIndicators, indicators, f"{what}.per-message-indicators"),
        "per_domain_bilateral_information": _decode_bilateral(
            members.get("per_domain_bilateral_information"),
            f"{what}.per-domain-bilateral-information",
        ),
        "trace_information": decode_trace(
            members.need("trace_information", what), f"{what}.trace-information", deviations
        ),
        "extensions": decode_optional_extensions(extensions, what, deviations),
        "recipients": _decode_recipients(
            members.need("recipients", what), f"{what}.per-recipient-fields", deviations
        ),
        "wire_order": members.order,
        "deviations": (),
    }
    check_known_extensions(fields["extensions"], deviations, f"{what}.extensions")
    if deviations:
        fields["deviations"] = tuple(deviations)
    return fields


def _message_envelope(tlv: Tlv, what: str = "MessageTransferEnvelope") -> MessageEnvelope:
    if tlv.tag != ber.SET:
        ber.expect(tlv, ber.SET, what)
    members = ber.split_set(tlv, _MESSAGE_MEMBERS, what)
    deviations: Deviations = []
    ber.note_long_tags(members, what, deviations)
    fields = {
        "mts_identifier": decode_mts_identifier(
            members.need("mts_identifier", what), f"{what}.message-identifier"
        ),
        "priority": _decode_priority(members.get("priority"), f"{what}.priority"),
        "deferred_delivery_time": _optional_time(
            members.get("deferred_delivery_time"), f"{what}.deferred-delivery-time"
        ),
    }
    fields.update(_decode_common(members, what, deviations))
    envelope = _new(MessageEnvelope)  # every field read: not through __init__ (see there)
    envelope.__dict__.update(fields)
    return envelope


def _encode_bilateral(items: Sequence[bytes], order: Sequence[str], what: str) -> bytes | None:
    if not ber.keep("per_domain_bilateral_information", not items, order):
        return None
    for item in items:
        ber.check_single_tlv(item, what)
    return ber.constructed(_BILATERAL_TAG, items)


def _encode_common(value: MessageEnvelope | Probe, what: str) -> dict[str, bytes | None]:
    order = value.wire_order
    eits = value.original_encoded_information_types
    return {
        "originator_name": encode_name(value.originator_name, ORNAME_TAG),
        "original_encoded_information_types": None if eits is None else encode_eits(eits),
        "content_type": encode_content_type(value.content_type, f"{what}.content-type"),
        "content_identifier": None
        if value.content_identifier is None
        else ber.tlv(
            _CONTENT_IDENTIFIER_TAG,
            ber.text_contents(value.content_identifier, f"{what}.content-identifier"),
        ),
        "per_message_indicators": encode_bits(
            value.per_message_indicators, _MESSAGE_INDICATORS_TAG, f"{what}.per-message-indicators"
        )
        if ber.keep("per_message_indicators", value.per_message_indicators.is_empty, order)
        else None,
        "per_domain_bilateral_information": _encode_bilateral(
            value.per_domain_bilateral_information,
            order,
            f"{what}.per-domain-bilateral-information",
        ),
        "trace_information": encode_trace(value.trace_information),
        "extensions": encode_kept_extensions(value.extensions, _EXTENSIONS_TAG, order),
        "recipients": _encode_recipients(value.recipients, f"{what}.per-recipient-fields"),
    }


def encode_message_envelope(envelope: MessageEnvelope) -> bytes:
    """BER of the MessageTransferEnvelope (a SET); raises EncodeError."""
    what = "MessageTransferEnvelope"
    if not isinstance(envelope, MessageEnvelope):
        raise EncodeError(f"{envelope!r} is not a MessageEnvelope", where=what)
    common = _encode_common(envelope, what)
    order = envelope.wire_order
    priority = ber.check_int(envelope.priority, f"{what}.priority", 0, 2)
    deferred = envelope.deferred_delivery_time
    members: list[ber.Member] = [
        ("mts_identifier", encode_mts_identifier(envelope.mts_identifier)),
        ("originator_name", common["originator_name"]),
        ("original_encoded_information_types", common["original_encoded_information_types"]),
        ("content_type", common["content_type"]),
        ("content_identifier", common["content_identifier"]),
        (
            "priority",
            ber.tlv(_PRIORITY_TAG, ber.int_contents(priority))
            if ber.keep("priority", priority == Priority.NORMAL, order)
            else None,
        ),
        ("per_message_indicators", common["per_message_indicators"]),
        (
            "deferred_delivery_time",
            None
            if deferred is None
            else ber.tlv(
                _DEFERRED_TAG, ber.utctime_contents(deferred, f"{what}.deferred-delivery-time")
            ),
        ),
        ("per_domain_bilateral_information", common["per_domain_bilateral_information"]),
        ("trace_information", common["trace_information"]),
        ("extensions", common["extensions"]),
        ("recipients", common["recipients"]),
    ]
    return ber.encode_set(ber.SET, members, order)


def decode_message_envelope(data: bytes | bytearray | memoryview) -> MessageEnvelope:
    """A MessageTransferEnvelope from its BER (a SET); raises DecodeError only."""
    return _message_envelope(ber.read_single(data, "MessageTransferEnvelope"))


# --- probe -----------------------------------------------------------------------------


# Probe ::= ProbeTransferEnvelope
# ProbeTransferEnvelope ::= SET {
#   COMPONENTS OF PerProbeTransferFields,
#   per-recipient-fields [2] SEQUENCE SIZE (1..ub-recipients) OF
#                            PerRecipientProbeTransferFields }
# PerProbeTransferFields ::= SET {
#   probe-identifier                    ProbeIdentifier,
#   originator-name                     MTAOriginatorName,
#   original-encoded-information-types  OriginalEncodedInformationTypes OPTIONAL,
#   content-type                        ContentType,
#   content-identifier                  ContentIdentifier OPTIONAL,
#   content-length                      [0] ContentLength OPTIONAL,
#   per-message-indicators              PerMessageIndicators DEFAULT {},
#   per-domain-bilateral-information    [1] SEQUENCE SIZE (1..ub-transfers) OF
#                                           PerDomainBilateralInformation OPTIONAL,
#   trace-information                   TraceInformation,
#   extensions  [3] SET OF ExtensionField{{ProbeTransferExtensions}} DEFAULT {} }
@dataclass(frozen=True, slots=True, kw_only=True)
class Probe(ExtensionViews):
    """The probe transfer envelope (X.411 clause 12.2.1.2.1): a probe has no content."""

    probe_identifier: MTSIdentifier
    originator_name: ORName
    original_encoded_information_types: EncodedInformationTypes | None = None
    content_type: ContentType
    content_identifier: str | None = None
    content_length: int | None = None
    """Length in octets of the content a message would have (0..2**31-1)."""
    per_message_indicators: PerMessageIndicators = field(default_factory=PerMessageIndicators)
    per_domain_bilateral_information: tuple[bytes, ...] = ()
    trace_information: tuple[TraceEntry, ...] = ()
    extensions: tuple[ExtensionField, ...] = ()
    recipients: tuple[RecipientField, ...] = ()
    wire_order: tuple[str, ...] = field(default=(), compare=False, repr=False)
    deviations: tuple[Deviation, ...] = field(default=(), compare=False, repr=False)
    """What the decoder tolerated (see the module's docstring); () when well formed."""

    @property
    def mts_identifier(self) -> MTSIdentifier:
        """The probe-identifier (the MTS identifier of every MTS-APDU kind)."""
        return self.probe_identifier

    def with_trace(self, entry: TraceEntry) -> Probe:
        """A copy with ``entry`` appended to trace-information."""
        return dataclasses.replace(self, trace_information=(*self.trace_information, entry))

    def with_internal_trace(self, entry: InternalTraceEntry) -> Probe:
        """A copy with ``entry`` appended to internal-trace-information."""
        return dataclasses.replace(
            self, extensions=with_internal_trace_entry(self.extensions, entry)
        )


UB_CONTENT_LENGTH = 2**31 - 1

_PROBE_MEMBERS = {
    **{
        tag: name
        for tag, name in _MESSAGE_MEMBERS.items()
        if name not in ("priority", "deferred_delivery_time", "mts_identifier")
    },
    MTS_IDENTIFIER_TAG: "probe_identifier",
    context(0): "content_length",
}


def _probe(tlv: Tlv, what: str = "ProbeTransferEnvelope") -> Probe:
    members = ber.split_set(tlv, _PROBE_MEMBERS, what)
    deviations: Deviations = []
    ber.note_long_tags(members, what, deviations)
    length = members.get("content_length")
    return Probe(
        probe_identifier=decode_mts_identifier(
            members.need("probe_identifier", what), f"{what}.probe-identifier"
        ),
        content_length=None
        if length is None
        else ber.read_bounded_int(length, f"{what}.content-length", 0, UB_CONTENT_LENGTH),
        **_decode_common(members, what, deviations),
    )


def _encode_probe(probe: Probe, tag: int) -> bytes:
    what = "ProbeTransferEnvelope"
    common = _encode_common(probe, what)
    length = probe.content_length
    members: list[ber.Member] = [
        ("probe_identifier", encode_mts_identifier(probe.probe_identifier)),
        ("originator_name", common["originator_name"]),
        ("original_encoded_information_types", common["original_encoded_information_types"]),
        ("content_type", common["content_type"]),
        ("content_identifier", common["content_identifier"]),
        (
            "content_length",
            None
            if length is None
            else ber.tlv(
                context(0),
                ber.int_contents(
                    ber.check_int(length, f"{what}.content-length", 0, UB_CONTENT_LENGTH)
                ),
            ),
        ),
        ("per_message_indicators", common["per_message_indicators"]),
        ("per_domain_bilateral_information", common["per_domain_bilateral_information"]),
        ("trace_information", common["trace_information"]),
        ("extensions", common["extensions"]),
        ("recipients", common["recipients"]),
    ]
    return ber.encode_set(tag, members, probe.wire_order)


# --- MTS-APDU --------------------------------------------------------------------------

# MTS-APDU ::= CHOICE { message [0] Message, probe [2] Probe, report [1] Report }
MTSApdu = Message | Report | Probe
"""What one RT-TRANSFER between MTAs carries (X.419 clause 7)."""

_MESSAGE_TAG = context(0)
_REPORT_TAG = context(1)
_PROBE_TAG = context(2)


def _message_parts(tlv: Tlv, what: str) -> tuple[Tlv, Tlv]:
    parts = ber.children(tlv, what)
    if len(parts) != 2:
        raise DecodeError(f"{len(parts)} components, expected envelope and content", where=what)
    return parts[0], ber.expect(parts[1], ber.OCTET_STRING, f"{what}.content")


def _message(tlv: Tlv) -> Message:
    what = "Message"
    envelope, content = _message_parts(tlv, what)
    return Message(
        envelope=_message_envelope(envelope), content=ber.read_octets(content, f"{what}.content")
    )


_DECODERS: dict[int, Callable[[Tlv], MTSApdu]] = {
    _MESSAGE_TAG: _message,
    _REPORT_TAG: decode_report,
    _PROBE_TAG: _probe,
}


def _apdu_tlv(data: bytes | bytearray | memoryview) -> Tlv:
    tlv = ber.read_single(data, "MTS-APDU")
    if tlv.tag not in _DECODERS:
        raise DecodeError(
            f"{ber.tag_name(tlv.tag)} is not message [0], report [1] or probe [2]", where="MTS-APDU"
        )
    return tlv


def decode_mts_apdu(data: bytes | bytearray | memoryview) -> MTSApdu:
    """A message, report or probe from the BER of an MTS-APDU; raises DecodeError only.

    A message's content is copied once out of ``data`` (joined once if segmented).
    """
    tlv = _apdu_tlv(data)
    return _DECODERS[tlv.tag](tlv)


def _encode_message(message: Message) -> bytes:
    if not isinstance(message.content, bytes | bytearray | memoryview):
        raise EncodeError("content must be bytes", where="Message.content")
    envelope = encode_message_envelope(message.envelope)
    content_header = _CONTENT_IDENTIFIER + ber.length_octets(len(message.content))
    return _wrap_message(envelope, content_header, message.content)


def _wrap_message(
    envelope: bytes, content_header: bytes, content: bytes | bytearray | memoryview
) -> bytes:
    # One join: the content octets are copied exactly once.
    length = len(envelope) + len(content_header) + len(content)
    head = _MESSAGE_IDENTIFIER + ber.length_octets(length)
    return b"".join((head, envelope, content_header, content))


_CONTENT_IDENTIFIER = ber.identifier(ber.OCTET_STRING, False)
_MESSAGE_IDENTIFIER = ber.identifier(_MESSAGE_TAG, True)


def encode_mts_apdu(apdu: MTSApdu) -> bytes:
    """BER of the MTS-APDU for a message, report or probe; raises EncodeError."""
    if isinstance(apdu, Message):
        return _encode_message(apdu)
    if isinstance(apdu, Probe):
        return _encode_probe(apdu, _PROBE_TAG)
    if isinstance(apdu, Report):
        return encode_report(apdu, _REPORT_TAG)
    raise EncodeError(f"{type(apdu).__name__} is not a Message, Report or Probe", where="MTS-APDU")


def peek_envelope(data: bytes | bytearray | memoryview) -> MessageEnvelope | Probe | Report:
    """The envelope of an MTS-APDU, enough to route and schedule it.

    For a message the content is skipped, not copied; a probe or report is decoded
    whole (they are small).  Raises DecodeError only.
    """
    tlv = _apdu_tlv(data)
    if tlv.tag == _MESSAGE_TAG:
        envelope, _ = _message_parts(tlv, "Message")
        return _message_envelope(envelope)
    decoded = _DECODERS[tlv.tag](tlv)
    assert isinstance(decoded, Probe | Report)
    return decoded


_KINDS = {_MESSAGE_TAG: "a message", _REPORT_TAG: "a report", _PROBE_TAG: "a probe"}


def envelope_from_prefix(prefix: bytes | bytearray | memoryview) -> MessageEnvelope:
    """The envelope of the message whose MTS-APDU begins with ``prefix``, the rest of it
    (the content) cut off: ``message [0] IMPLICIT SEQUENCE { envelope
    MessageTransferEnvelope, content }`` (X.411 12.2.1.1) puts the envelope first, so the
    first octets of a message too long to be taken in still say whom to report to.

    Definite and indefinite lengths are read alike.  Raises DecodeError, saying why,
    when ``prefix`` is not the start of a message (a report, a probe) or ends before
    its envelope does."""
    view = ber.as_view(prefix)
    key, body, length = ber.read_header(view, 0, len(view))
    tag = ber.tag_of(key)
    if tag != _MESSAGE_TAG or not key & ber.CONSTRUCTED:
        kind = _KINDS.get(tag, ber.tag_name(tag))
        raise DecodeError(f"the MTS-APDU is {kind}, not a message", where="MTS-APDU")
    end = len(view) if length is None else min(len(view), body + length)
    try:
        envelope = ber.read_tlv(view, body, end)
    except DecodeError as error:
        raise DecodeError(
            f"the envelope does not end within the first {len(view)} octets ({error})",
            where="MessageTransferEnvelope",
        ) from error
    return _message_envelope(envelope)


def message_content(data: bytes | bytearray | memoryview) -> bytes:
    """The content octets of the message in ``data``, its envelope skipped, not decoded
    (X.411 12.2.1.1: ``Message ::= SEQUENCE { envelope, content }``).

    Raises DecodeError when ``data`` is not a message.
    """
    tlv = _apdu_tlv(data)
    if tlv.tag != _MESSAGE_TAG:
        raise DecodeError("the MTS-APDU is not a message", where="MTS-APDU")
    _, content = _message_parts(tlv, "Message")
    return ber.read_octets(content, "Message.content")


def message_content_view(data: bytes | bytearray | memoryview) -> bytes | memoryview:
    """:func:`message_content` without a copy where the content is one primitive
    OCTET STRING (as every sender writes it): a view into ``data``, to read the heading
    of a message of megabytes without another megabytes beside it."""
    tlv = _apdu_tlv(data)
    if tlv.tag != _MESSAGE_TAG:
        raise DecodeError("the MTS-APDU is not a message", where="MTS-APDU")
    _, content = _message_parts(tlv, "Message")
    if content.constructed:
        return ber.read_octets(content, "Message.content")
    return memoryview(content.data)[content.body : content.end]


def replace_message_envelope(
    data: bytes | bytearray | memoryview, envelope: MessageEnvelope
) -> bytes:
    """The message in ``data`` with ``envelope`` in place of its own.

    The content's encoding (segmentation, indefinite lengths) is kept exactly as
    received and copied once: the way to relay after adding trace.
    """
    tlv = _apdu_tlv(data)
    if tlv.tag != _MESSAGE_TAG:
        raise DecodeError("the MTS-APDU is not a message", where="MTS-APDU")
    _, content = _message_parts(tlv, "Message")
    encoded = encode_message_envelope(envelope)
    return _wrap_message(encoded, b"", content.raw_view())
