"""The X.411 report as MTAs transfer it: report transfer envelope and content.

X.411 clause 12.2.1.3 (report-transfer), Annex A (MTAAbstractService) and, for the
meaning of the per-recipient fields, clause 8.3.1.2.1 (report-delivery).  A report
tells the originator's side whether a message (or probe) was delivered to each
recipient, or why it was not.  Decoding and encoding keep the received bytes as
:mod:`p1.mts.envelope` does (member order, explicit DEFAULTs, UTCTime text, extensions).

The report's times (trace, last-trace-information arrival-time, message-delivery-time)
are not routed on: they are read leniently (:func:`p1.ber.read_lenient_utctime`), and
what was tolerated, with PP's form of ``ExtensionField.type`` and long-form tags on the
members of the envelope and content SETs, is listed in the
``deviations`` of :class:`ReportEnvelope` and :class:`ReportContent` (both in
``Report.deviations``).  Names and identifiers stay strict.

Public API::

    Report(envelope=ReportEnvelope(...), content=ReportContent(...))
    ReportRecipientField, LastTraceInformation, DeliveryReport, NonDeliveryReport
    NonDeliveryReason, NonDeliveryDiagnostic, TypeOfMTSUser
    decode_report(tlv) / encode_report(report, tag)   (used by p1.mts.envelope's MTS-APDU codec)
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from datetime import datetime

from p1 import ber
from p1.ber import Deviation, Deviations, Tlv, application, context
from p1.errors import DecodeError, EncodeError
from p1.mts.extensions import (
    ExtensionField,
    ExtensionViews,
    check_known_extensions,
    decode_optional_extensions,
    encode_kept_extensions,
    with_internal_trace_entry,
)
from p1.mts.fields import (
    CONTENT_TYPE_TAGS,
    EIT_TAG,
    MTS_IDENTIFIER_TAG,
    ContentType,
    EncodedInformationTypes,
    MTSIdentifier,
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
from p1.mts.trace import (
    TRACE_TAG,
    InternalTraceEntry,
    TraceEntry,
    decode_trace,
    encode_trace,
)

UB_MTS_USER_TYPES = 256
UB_REASON_CODES = 32767
UB_DIAGNOSTIC_CODES = 32767
UB_SUPPLEMENTARY_INFO_LENGTH = 256


class NonDeliveryReason(enum.IntEnum):
    """``NonDeliveryReasonCode`` (X.411 clause 8.3.1.2.1.9)."""

    TRANSFER_FAILURE = 0
    UNABLE_TO_TRANSFER = 1
    CONVERSION_NOT_PERFORMED = 2
    PHYSICAL_RENDITION_NOT_PERFORMED = 3
    PHYSICAL_DELIVERY_NOT_PERFORMED = 4
    RESTRICTED_DELIVERY = 5
    DIRECTORY_OPERATION_UNSUCCESSFUL = 6
    DEFERRED_DELIVERY_NOT_PERFORMED = 7
    TRANSFER_FAILURE_FOR_SECURITY_REASON = 8


class NonDeliveryDiagnostic(enum.IntEnum):
    """``NonDeliveryDiagnosticCode`` (X.411 clause 8.3.1.2.1.10), the complete list."""

    UNRECOGNISED_OR_NAME = 0
    AMBIGUOUS_OR_NAME = 1
    MTS_CONGESTION = 2
    LOOP_DETECTED = 3
    RECIPIENT_UNAVAILABLE = 4
    MAXIMUM_TIME_EXPIRED = 5
    ENCODED_INFORMATION_TYPES_UNSUPPORTED = 6
    CONTENT_TOO_LONG = 7
    CONVERSION_IMPRACTICAL = 8
    IMPLICIT_CONVERSION_PROHIBITED = 9
    IMPLICIT_CONVERSION_NOT_SUBSCRIBED = 10
    INVALID_ARGUMENTS = 11
    CONTENT_SYNTAX_ERROR = 12
    SIZE_CONSTRAINT_VIOLATION = 13
    PROTOCOL_VIOLATION = 14
    CONTENT_TYPE_NOT_SUPPORTED = 15
    TOO_MANY_RECIPIENTS = 16
    NO_BILATERAL_AGREEMENT = 17
    UNSUPPORTED_CRITICAL_FUNCTION = 18
    CONVERSION_WITH_LOSS_PROHIBITED = 19
    LINE_TOO_LONG = 20
    PAGE_SPLIT = 21
    PICTORIAL_SYMBOL_LOSS = 22
    PUNCTUATION_SYMBOL_LOSS = 23
    ALPHABETIC_CHARACTER_LOSS = 24
    MULTIPLE_INFORMATION_LOSS = 25
    RECIPIENT_REASSIGNMENT_PROHIBITED = 26
    REDIRECTION_LOOP_DETECTED = 27
    DL_EXPANSION_PROHIBITED = 28
    NO_DL_SUBMIT_PERMISSION = 29
    DL_EXPANSION_FAILURE = 30
    PHYSICAL_RENDITION_ATTRIBUTES_NOT_SUPPORTED = 31
    UNDELIVERABLE_MAIL_PHYSICAL_DELIVERY_ADDRESS_INCORRECT = 32
    UNDELIVERABLE_MAIL_PHYSICAL_DELIVERY_OFFICE_INCORRECT_OR_INVALID = 33
    UNDELIVERABLE_MAIL_PHYSICAL_DELIVERY_ADDRESS_INCOMPLETE = 34
    UNDELIVERABLE_MAIL_RECIPIENT_UNKNOWN = 35
    UNDELIVERABLE_MAIL_RECIPIENT_DECEASED = 36
    UNDELIVERABLE_MAIL_ORGANIZATION_EXPIRED = 37
    UNDELIVERABLE_MAIL_RECIPIENT_REFUSED_TO_ACCEPT = 38
    UNDELIVERABLE_MAIL_RECIPIENT_DID_NOT_CLAIM = 39
    UNDELIVERABLE_MAIL_RECIPIENT_CHANGED_ADDRESS_PERMANENTLY = 40
    UNDELIVERABLE_MAIL_RECIPIENT_CHANGED_ADDRESS_TEMPORARILY = 41
    UNDELIVERABLE_MAIL_RECIPIENT_CHANGED_TEMPORARY_ADDRESS = 42
    UNDELIVERABLE_MAIL_NEW_ADDRESS_UNKNOWN = 43
    UNDELIVERABLE_MAIL_RECIPIENT_DID_NOT_WANT_FORWARDING = 44
    UNDELIVERABLE_MAIL_ORIGINATOR_PROHIBITED_FORWARDING = 45
    SECURE_MESSAGING_ERROR = 46
    UNABLE_TO_DOWNGRADE = 47
    UNABLE_TO_COMPLETE_TRANSFER = 48
    TRANSFER_ATTEMPTS_LIMIT_REACHED = 49
    INCORRECT_NOTIFICATION_TYPE = 50
    DL_EXPANSION_PROHIBITED_BY_SECURITY_POLICY = 51
    FORBIDDEN_ALTERNATE_RECIPIENT = 52
    SECURITY_POLICY_VIOLATION = 53
    SECURITY_SERVICES_REFUSAL = 54
    UNAUTHORISED_DL_MEMBER = 55
    UNAUTHORISED_DL_NAME = 56
    UNAUTHORISED_ORIGINALLY_INTENDED_RECIPIENT_NAME = 57
    UNAUTHORISED_ORIGINATOR_NAME = 58
    UNAUTHORISED_RECIPIENT_NAME = 59
    UNRELIABLE_SYSTEM = 60
    AUTHENTICATION_FAILURE_ON_SUBJECT_MESSAGE = 61
    DECRYPTION_FAILED = 62
    DECRYPTION_KEY_UNOBTAINABLE = 63
    DOUBLE_ENVELOPE_CREATION_FAILURE = 64
    DOUBLE_ENVELOPING_MESSAGE_RESTORING_FAILURE = 65
    FAILURE_OF_PROOF_OF_MESSAGE = 66
    INTEGRITY_FAILURE_ON_SUBJECT_MESSAGE = 67
    INVALID_SECURITY_LABEL = 68
    KEY_FAILURE = 69
    MANDATORY_PARAMETER_ABSENCE = 70
    OPERATION_SECURITY_FAILURE = 71
    REPUDIATION_FAILURE_OF_MESSAGE = 72
    SECURITY_CONTEXT_FAILURE = 73
    TOKEN_DECRYPTION_FAILED = 74
    TOKEN_ERROR = 75
    UNKNOWN_SECURITY_LABEL = 76
    UNSUPPORTED_ALGORITHM_IDENTIFIER = 77
    UNSUPPORTED_SECURITY_POLICY = 78


class TypeOfMTSUser(enum.IntEnum):
    """``TypeOfMTSUser`` (X.411 clause 8.3.1.2.1.8)."""

    PUBLIC = 0
    PRIVATE = 1
    MS = 2
    DL = 3
    PDAU = 4
    PHYSICAL_RECIPIENT = 5
    OTHER = 6


def _known(enum_type: type[enum.IntEnum], value: int) -> int:
    """The enumeration member for ``value`` when there is one, else ``value``."""
    try:
        return enum_type(value)
    except ValueError:
        return value


# --- report type -----------------------------------------------------------------------


# DeliveryReport ::= SET {
#   message-delivery-time  [0] MessageDeliveryTime,
#   type-of-MTS-user       [1] TypeOfMTSUser DEFAULT public }
@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveryReport:
    """The subject was delivered (X.411 clause 8.3.1.2.1.7-8)."""

    message_delivery_time: datetime
    type_of_mts_user: int = TypeOfMTSUser.PUBLIC
    """A :class:`TypeOfMTSUser` (other values up to 256 are kept as int)."""
    wire_order: tuple[str, ...] = field(default=(), compare=False, repr=False)


# NonDeliveryReport ::= SET {
#   non-delivery-reason-code      [0] NonDeliveryReasonCode,
#   non-delivery-diagnostic-code  [1] NonDeliveryDiagnosticCode OPTIONAL }
@dataclass(frozen=True, slots=True, kw_only=True)
class NonDeliveryReport:
    """The subject was not delivered, and why (X.411 clause 8.3.1.2.1.9-10)."""

    reason_code: int
    """A :class:`NonDeliveryReason` (other values are kept as int)."""
    diagnostic_code: int | None = None
    """A :class:`NonDeliveryDiagnostic` (other values are kept as int), or None."""
    wire_order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def reason_name(self) -> str:
        """The reason as X.411 names it (``unable-to-transfer``), or its number."""
        return _code_name(NonDeliveryReason, self.reason_code)

    @property
    def diagnostic_name(self) -> str | None:
        """The diagnostic as X.411 names it (``unrecognised-or-name``), its number, or None."""
        if self.diagnostic_code is None:
            return None
        return _code_name(NonDeliveryDiagnostic, self.diagnostic_code)


def _code_name(kind: type[enum.IntEnum], value: int) -> str:
    try:
        return kind(value).name.lower().replace("_", "-")
    except ValueError:
        return str(value)


_DELIVERY_MEMBERS = {context(0): "message_delivery_time", context(1): "type_of_mts_user"}
_NON_DELIVERY_MEMBERS = {context(0): "reason_code", context(1): "diagnostic_code"}


def _delivery(tlv: Tlv, what: str, deviations: Deviations) -> DeliveryReport:
    members = ber.split_set(tlv, _DELIVERY_MEMBERS, what)
    user = members.get("type_of_mts_user")
    return DeliveryReport(
        message_delivery_time=ber.read_lenient_utctime(
            members.need("message_delivery_time", what),
            f"{what}.message-delivery-time",
            deviations,
        ),
        type_of_mts_user=TypeOfMTSUser.PUBLIC
        if user is None
        else _known(
            TypeOfMTSUser,
            ber.read_bounded_int(user, f"{what}.type-of-MTS-user", 0, UB_MTS_USER_TYPES),
        ),
        wire_order=members.order,
    )


def _non_delivery(tlv: Tlv, what: str) -> NonDeliveryReport:
    members = ber.split_set(tlv, _NON_DELIVERY_MEMBERS, what)
    diagnostic = members.get("diagnostic_code")
    return NonDeliveryReport(
        reason_code=_known(
            NonDeliveryReason,
            ber.read_bounded_int(
                members.need("reason_code", what),
                f"{what}.non-delivery-reason-code",
                0,
                UB_REASON_CODES,
            ),
        ),
        diagnostic_code=None
        if diagnostic is None
        else _known(
            NonDeliveryDiagnostic,
            ber.read_bounded_int(
                diagnostic, f"{what}.non-delivery-diagnostic-code", 0, UB_DIAGNOSTIC_CODES
            ),
        ),
        wire_order=members.order,
    )


def _encode_delivery(report: DeliveryReport, what: str) -> bytes:
    order = report.wire_order
    user = ber.check_int(report.type_of_mts_user, f"{what}.type-of-MTS-user", 0, UB_MTS_USER_TYPES)
    return ber.encode_set(
        context(0),
        [
            (
                "message_delivery_time",
                ber.tlv(
                    context(0),
                    ber.utctime_contents(
                        report.message_delivery_time, f"{what}.message-delivery-time"
                    ),
                ),
            ),
            (
                "type_of_mts_user",
                ber.tlv(context(1), ber.int_contents(user))
                if ber.keep("type_of_mts_user", user == TypeOfMTSUser.PUBLIC, order)
                else None,
            ),
        ],
        order,
    )


def _encode_non_delivery(report: NonDeliveryReport, what: str) -> bytes:
    reason = ber.check_int(
        report.reason_code, f"{what}.non-delivery-reason-code", 0, UB_REASON_CODES
    )
    diagnostic = report.diagnostic_code
    return ber.encode_set(
        context(1),
        [
            ("reason_code", ber.tlv(context(0), ber.int_contents(reason))),
            (
                "diagnostic_code",
                None
                if diagnostic is None
                else ber.tlv(
                    context(1),
                    ber.int_contents(
                        ber.check_int(
                            diagnostic,
                            f"{what}.non-delivery-diagnostic-code",
                            0,
                            UB_DIAGNOSTIC_CODES,
                        )
                    ),
                ),
            ),
        ],
        report.wire_order,
    )


# ReportType ::= CHOICE { delivery [0] DeliveryReport, non-delivery [1] NonDeliveryReport }
def _report_type(tlv: Tlv, what: str, deviations: Deviations) -> DeliveryReport | NonDeliveryReport:
    inner = ber.only_child(tlv, what)
    if inner.tag == context(0):
        return _delivery(inner, f"{what}.delivery", deviations)
    if inner.tag == context(1):
        return _non_delivery(inner, f"{what}.non-delivery")
    raise DecodeError(
        f"{ber.tag_name(inner.tag)} is not delivery [0] or non-delivery [1]", where=what
    )


def _encode_report_type(report: DeliveryReport | NonDeliveryReport, what: str) -> bytes:
    if isinstance(report, DeliveryReport):
        return _encode_delivery(report, f"{what}.delivery")
    if isinstance(report, NonDeliveryReport):
        return _encode_non_delivery(report, f"{what}.non-delivery")
    raise EncodeError(f"{report!r} is not a DeliveryReport or NonDeliveryReport", where=what)


# --- last trace information ------------------------------------------------------------


# LastTraceInformation ::= SET {
#   arrival-time                         [0] ArrivalTime,
#   converted-encoded-information-types  ConvertedEncodedInformationTypes OPTIONAL,
#   report-type                          [1] ReportType }
@dataclass(frozen=True, slots=True, kw_only=True)
class LastTraceInformation:
    """When the subject arrived at the reporting domain, and the outcome."""

    arrival_time: datetime
    converted_encoded_information_types: EncodedInformationTypes | None = None
    report: DeliveryReport | NonDeliveryReport
    """report-type: delivery or non-delivery."""
    wire_order: tuple[str, ...] = field(default=(), compare=False, repr=False)


_LAST_TRACE_MEMBERS = {
    context(0): "arrival_time",
    EIT_TAG: "converted_encoded_information_types",
    context(1): "report",
}


def _last_trace(tlv: Tlv, what: str, deviations: Deviations) -> LastTraceInformation:
    members = ber.split_set(tlv, _LAST_TRACE_MEMBERS, what)
    eits = members.get("converted_encoded_information_types")
    return LastTraceInformation(
        arrival_time=ber.read_lenient_utctime(
            members.need("arrival_time", what), f"{what}.arrival-time", deviations
        ),
        converted_encoded_information_types=None if eits is None else decode_eits(eits, what),
        report=_report_type(members.need("report", what), f"{what}.report-type", deviations),
        wire_order=members.order,
    )


def _encode_last_trace(value: LastTraceInformation, what: str) -> bytes:
    if not isinstance(value, LastTraceInformation):
        raise EncodeError(f"{value!r} is not LastTraceInformation", where=what)
    eits = value.converted_encoded_information_types
    return ber.encode_set(
        context(3),
        [
            (
                "arrival_time",
                ber.tlv(
                    context(0), ber.utctime_contents(value.arrival_time, f"{what}.arrival-time")
                ),
            ),
            ("converted_encoded_information_types", None if eits is None else encode_eits(eits)),
            (
                "report",
                ber.constructed(
                    context(1), [_encode_report_type(value.report, f"{what}.report-type")]
                ),
            ),
        ],
        value.wire_order,
    )


# --- per-recipient fields --------------------------------------------------------------


# PerRecipientReportTransferFields ::= SET {
#   actual-recipient-name                  [0] MTAActualRecipientName,
#   originally-specified-recipient-number  [1] OriginallySpecifiedRecipientNumber,
#   per-recipient-indicators               [2] PerRecipientIndicators,
#   last-trace-information                 [3] LastTraceInformation,
#   originally-intended-recipient-name     [4] OriginallyIntendedRecipientName OPTIONAL,
#   supplementary-information              [5] SupplementaryInformation OPTIONAL,
#   extensions  [6] SET OF ExtensionField{{PerRecipientReportTransferExtensions}} DEFAULT {} }
@dataclass(frozen=True, slots=True, kw_only=True)
class ReportRecipientField:
    """What happened to one recipient of the subject (X.411 clause 12.2.1.3.1)."""

    actual_recipient_name: ORName
    originally_specified_recipient_number: int
    per_recipient_indicators: PerRecipientIndicators = field(default_factory=PerRecipientIndicators)
    last_trace_information: LastTraceInformation
    originally_intended_recipient_name: ORName | None = None
    supplementary_information: str | None = None
    extensions: tuple[ExtensionField, ...] = ()
    wire_order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def delivered(self) -> bool:
        """A delivery report (not a non-delivery report)."""
        return isinstance(self.last_trace_information.report, DeliveryReport)


_RECIPIENT_MEMBERS = {
    context(0): "actual_recipient_name",
    context(1): "originally_specified_recipient_number",
    context(2): "per_recipient_indicators",
    context(3): "last_trace_information",
    context(4): "originally_intended_recipient_name",
    context(5): "supplementary_information",
    context(6): "extensions",
}


def _recipient(tlv: Tlv, what: str, deviations: Deviations) -> ReportRecipientField:
    members = ber.split_set(ber.expect(tlv, ber.SET, what), _RECIPIENT_MEMBERS, what)
    intended = members.get("originally_intended_recipient_name")
    supplementary = members.get("supplementary_information")
    extensions = members.get("extensions")
    return ReportRecipientField(
        actual_recipient_name=decode_name(
            members.need("actual_recipient_name", what), f"{what}.actual-recipient-name"
        ),
        originally_specified_recipient_number=decode_recipient_number(
            members.need("originally_specified_recipient_number", what), what
        ),
        per_recipient_indicators=decode_bits(
            PerRecipientIndicators,
            members.need("per_recipient_indicators", what),
            f"{what}.per-recipient-indicators",
        ),
        last_trace_information=_last_trace(
            members.need("last_trace_information", what),
            f"{what}.last-trace-information",
            deviations,
        ),
        originally_intended_recipient_name=None
        if intended is None
        else decode_name(intended, f"{what}.originally-intended-recipient-name"),
        supplementary_information=None
        if supplementary is None
        else ber.read_text(supplementary, f"{what}.supplementary-information"),
        extensions=decode_optional_extensions(extensions, what, deviations),
        wire_order=members.order,
    )


def _encode_recipient(value: ReportRecipientField, what: str) -> bytes:
    if not isinstance(value, ReportRecipientField):
        raise EncodeError(f"{value!r} is not a ReportRecipientField", where=what)
    order = value.wire_order
    intended = value.originally_intended_recipient_name
    supplementary = value.supplementary_information
    return ber.encode_set(
        ber.SET,
        [
            ("actual_recipient_name", encode_name(value.actual_recipient_name, context(0))),
            (
                "originally_specified_recipient_number",
                encode_recipient_number(
                    value.originally_specified_recipient_number, context(1), what
                ),
            ),
            (
                "per_recipient_indicators",
                encode_bits(
                    value.per_recipient_indicators, context(2), f"{what}.per-recipient-indicators"
                ),
            ),
            (
                "last_trace_information",
                _encode_last_trace(value.last_trace_information, f"{what}.last-trace-information"),
            ),
            (
                "originally_intended_recipient_name",
                None if intended is None else encode_name(intended, context(4)),
            ),
            (
                "supplementary_information",
                None
                if supplementary is None
                else ber.tlv(
                    context(5),
                    ber.text_contents(supplementary, f"{what}.supplementary-information"),
                ),
            ),
            (
                "extensions",
                encode_kept_extensions(value.extensions, context(6), order),
            ),
        ],
        order,
    )


# --- envelope --------------------------------------------------------------------------


# ReportTransferEnvelope ::= SET {
#   report-identifier        ReportIdentifier,
#   report-destination-name  ReportDestinationName,
#   trace-information        TraceInformation,
#   extensions  [1] SET OF ExtensionField{{ReportTransferEnvelopeExtensions}} DEFAULT {} }
@dataclass(frozen=True, slots=True, kw_only=True)
class ReportEnvelope(ExtensionViews):
    """The report transfer envelope (X.411 clause 12.2.1.3.1): what routing needs."""

    report_identifier: MTSIdentifier
    report_destination_name: ORName
    """Where the report goes: the originator, or a DL's owner on the way back."""
    trace_information: tuple[TraceEntry, ...] = ()
    extensions: tuple[ExtensionField, ...] = ()
    wire_order: tuple[str, ...] = field(default=(), compare=False, repr=False)
    deviations: tuple[Deviation, ...] = field(default=(), compare=False, repr=False)
    """What the decoder tolerated (see the module's docstring); () when well formed."""


_ENVELOPE_MEMBERS = {
    MTS_IDENTIFIER_TAG: "report_identifier",
    application(0): "report_destination_name",
    TRACE_TAG: "trace_information",
    context(1): "extensions",
}


def _envelope(tlv: Tlv, what: str = "ReportTransferEnvelope") -> ReportEnvelope:
    members = ber.split_set(ber.expect(tlv, ber.SET, what), _ENVELOPE_MEMBERS, what)
    deviations: Deviations = []
    ber.note_long_tags(members, what, deviations)
    extensions = members.get("extensions")
    decoded = decode_optional_extensions(extensions, what, deviations)
    check_known_extensions(decoded, deviations, f"{what}.extensions")
    trace = decode_trace(
        members.need("trace_information", what), f"{what}.trace-information", deviations
    )
    return ReportEnvelope(
        report_identifier=decode_mts_identifier(
            members.need("report_identifier", what), f"{what}.report-identifier"
        ),
        report_destination_name=decode_name(
            members.need("report_destination_name", what), f"{what}.report-destination-name"
        ),
        trace_information=trace,
        extensions=decoded,
        wire_order=members.order,
        deviations=tuple(deviations),
    )


def _encode_envelope(value: ReportEnvelope) -> bytes:
    what = "ReportTransferEnvelope"
    if not isinstance(value, ReportEnvelope):
        raise EncodeError(f"{value!r} is not a ReportEnvelope", where=what)
    order = value.wire_order
    return ber.encode_set(
        ber.SET,
        [
            ("report_identifier", encode_mts_identifier(value.report_identifier)),
            ("report_destination_name", encode_name(value.report_destination_name)),
            ("trace_information", encode_trace(value.trace_information)),
            (
                "extensions",
                encode_kept_extensions(value.extensions, context(1), order),
            ),
        ],
        order,
    )


# --- content ---------------------------------------------------------------------------


# ReportTransferContent ::= SET {
#   COMPONENTS OF PerReportTransferFields,
#   per-recipient-fields [0] SEQUENCE SIZE (1..ub-recipients) OF
#                            PerRecipientReportTransferFields }
# PerReportTransferFields ::= SET {
#   subject-identifier                      SubjectIdentifier,
#   subject-intermediate-trace-information  SubjectIntermediateTraceInformation OPTIONAL,
#   original-encoded-information-types      OriginalEncodedInformationTypes OPTIONAL,
#   content-type                            ContentType OPTIONAL,
#   content-identifier                      ContentIdentifier OPTIONAL,
#   returned-content                        [1] Content OPTIONAL,
#   additional-information                  [2] AdditionalInformation OPTIONAL,
#   extensions  [3] SET OF ExtensionField{{ReportTransferContentExtensions}} DEFAULT {} }
@dataclass(frozen=True, slots=True, kw_only=True)
class ReportContent:
    """The report transfer content (X.411 clause 12.2.1.3.1): the outcome per recipient."""

    subject_identifier: MTSIdentifier
    """The message or probe this report is about."""
    subject_intermediate_trace_information: tuple[TraceEntry, ...] = ()
    original_encoded_information_types: EncodedInformationTypes | None = None
    content_type: ContentType | None = None
    content_identifier: str | None = None
    returned_content: bytes | None = None
    additional_information: bytes | None = None
    """The BER of the value inside ``[2]``, kept as received (deprecated by X.411)."""
    extensions: tuple[ExtensionField, ...] = ()
    recipients: tuple[ReportRecipientField, ...] = ()
    """per-recipient-fields."""
    wire_order: tuple[str, ...] = field(default=(), compare=False, repr=False)
    deviations: tuple[Deviation, ...] = field(default=(), compare=False, repr=False)
    """What the decoder tolerated (see the module's docstring); () when well formed."""


_CONTENT_MEMBERS = {
    MTS_IDENTIFIER_TAG: "subject_identifier",
    TRACE_TAG: "subject_intermediate_trace_information",
    EIT_TAG: "original_encoded_information_types",
    **{tag: "content_type" for tag in CONTENT_TYPE_TAGS},
    application(10): "content_identifier",
    context(1): "returned_content",
    context(2): "additional_information",
    context(3): "extensions",
    context(0): "recipients",
}


def _content(tlv: Tlv, what: str = "ReportTransferContent") -> ReportContent:
    m = ber.split_set(ber.expect(tlv, ber.SET, what), _CONTENT_MEMBERS, what)
    trace, eits, ctype, cid, returned, additional, extensions = (
        m.get(name)
        for name in (
            "subject_intermediate_trace_information",
            "original_encoded_information_types",
            "content_type",
            "content_identifier",
            "returned_content",
            "additional_information",
            "extensions",
        )
    )
    deviations: Deviations = []
    ber.note_long_tags(m, what, deviations)
    decoded = decode_optional_extensions(extensions, what, deviations)
    check_known_extensions(decoded, deviations, f"{what}.extensions")
    return ReportContent(
        subject_identifier=decode_mts_identifier(
            m.need("subject_identifier", what), f"{what}.subject-identifier"
        ),
        subject_intermediate_trace_information=()
        if trace is None
        else decode_trace(trace, f"{what}.subject-intermediate-trace-information", deviations),
        original_encoded_information_types=None if eits is None else decode_eits(eits, what),
        content_type=None if ctype is None else decode_content_type(ctype, what),
        content_identifier=None if cid is None else ber.read_text(cid, what),
        returned_content=None
        if returned is None
        else ber.read_octets(returned, f"{what}.returned-content"),
        additional_information=None
        if additional is None
        else ber.only_child(additional, f"{what}.additional-information").raw(),
        extensions=decoded,
        recipients=_recipients(m.need("recipients", what), what, deviations),
        wire_order=m.order,
        deviations=tuple(deviations),
    )


def _recipients(tlv: Tlv, what: str, deviations: Deviations) -> tuple[ReportRecipientField, ...]:
    return tuple(
        _recipient(child, f"{what}.per-recipient-fields[{index}]", deviations)
        for index, child in enumerate(ber.children(tlv, what))
    )


def _encode_content(value: ReportContent) -> bytes:
    what = "ReportTransferContent"
    if not isinstance(value, ReportContent):
        raise EncodeError(f"{value!r} is not a ReportContent", where=what)
    order = value.wire_order
    trace = value.subject_intermediate_trace_information
    eits = value.original_encoded_information_types
    return ber.encode_set(
        ber.SET,
        [
            ("subject_identifier", encode_mts_identifier(value.subject_identifier)),
            (
                "subject_intermediate_trace_information",
                encode_trace(trace)
                if ber.keep("subject_intermediate_trace_information", not trace, order)
                else None,
            ),
            ("original_encoded_information_types", None if eits is None else encode_eits(eits)),
            (
                "content_type",
                None
                if value.content_type is None
                else encode_content_type(value.content_type, f"{what}.content-type"),
            ),
            (
                "content_identifier",
                None
                if value.content_identifier is None
                else ber.tlv(application(10), ber.text_contents(value.content_identifier, what)),
            ),
            (
                "returned_content",
                None
                if value.returned_content is None
                else ber.tlv(context(1), value.returned_content),
            ),
            ("additional_information", _additional(value.additional_information, what)),
            (
                "extensions",
                encode_kept_extensions(value.extensions, context(3), order),
            ),
            (
                "recipients",
                ber.constructed(
                    context(0),
                    (
                        _encode_recipient(r, f"{what}.per-recipient-fields[{index}]")
                        for index, r in enumerate(value.recipients)
                    ),
                ),
            ),
        ],
        order,
    )


def _additional(value: bytes | None, what: str) -> bytes | None:
    if value is None:
        return None
    ber.check_single_tlv(value, f"{what}.additional-information")
    return ber.tlv(context(2), value, constructed=True)


# --- report ----------------------------------------------------------------------------


# Report ::= SEQUENCE { envelope ReportTransferEnvelope, content ReportTransferContent }
@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """A report in transfer (X.411 clause 12.2.1.3)."""

    envelope: ReportEnvelope
    content: ReportContent

    @property
    def mts_identifier(self) -> MTSIdentifier:
        """The report-identifier (the MTS identifier of every MTS-APDU kind)."""
        return self.envelope.report_identifier

    @property
    def deviations(self) -> tuple[Deviation, ...]:
        """What the decoder tolerated in the envelope, then in the content."""
        return self.envelope.deviations + self.content.deviations

    def with_trace(self, entry: TraceEntry) -> Report:
        """A copy with ``entry`` appended to the envelope's trace-information."""
        return dataclasses.replace(
            self,
            envelope=dataclasses.replace(
                self.envelope, trace_information=(*self.envelope.trace_information, entry)
            ),
        )

    def with_internal_trace(self, entry: InternalTraceEntry) -> Report:
        """A copy with ``entry`` appended to the envelope's internal-trace-information."""
        return dataclasses.replace(
            self,
            envelope=dataclasses.replace(
                self.envelope, extensions=with_internal_trace_entry(self.envelope.extensions, entry)
            ),
        )


def decode_report(tlv: Tlv) -> Report:
    """The Report inside its MTS-APDU tag (``[1]``); raises DecodeError only."""
    what = "Report"
    parts = ber.children(tlv, what)
    if len(parts) != 2:
        raise DecodeError(f"{len(parts)} components, expected envelope and content", where=what)
    return Report(envelope=_envelope(parts[0]), content=_content(parts[1]))


def encode_report(report: Report, tag: int) -> bytes:
    """The Report under ``tag`` (``[1]`` in an MTS-APDU); raises EncodeError."""
    if not isinstance(report, Report):
        raise EncodeError(f"{report!r} is not a Report", where="Report")
    return ber.constructed(
        tag, [_encode_envelope(report.envelope), _encode_content(report.content)]
    )
