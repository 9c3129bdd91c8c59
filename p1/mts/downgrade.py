"""Down-grading an MTS-APDU for a peer MTA that speaks X.410-1984 mode (X.419 Annex B).

A 1988 MTA that transfers a message, probe or report to a 1984 MTA first removes what
X.411 (1984) cannot carry, or finds that the APDU cannot go at all.  X.419 (1988) Annex B
gives the rules; RFC 1328 (X.400 1988 to 1984 downgrading) comments on them and adds an
optional mapping of common names.  What 1984 can carry is the P1 module of X.411 (1984)
(UMPDUEnvelope, ProbeEnvelope, DeliveryReportEnvelope, DeliveryReportContent), quoted
above the functions below.

Rules (each removal is named in :attr:`Downgraded.removed`; [84] marks a rule that
follows from a member X.411 (1984) lacks, [choice] one this module decides)::

    1  extensions (envelope, per-recipient, report envelope, content and
       per-recipient) [84: 1984 has none]: one marked critical for transfer cannot be
       removed: the APDU (or the recipient, rule 7) cannot be down-graded.  Nor can
       one marked critical for delivery [choice: removing it would let the 1984
       domain deliver without the function X.411 clause 9.1 makes a condition of
       delivery].  Any other is removed, internal-trace-information among them.
    2  content-type [84: [APPLICATION 6] INTEGER only]: an extended (OBJECT IDENTIFIER)
       content type cannot be carried; the message or probe cannot be down-graded.
       Built-in 22 (interpersonal-messaging-1988) is unknown to 1984 [84: X.420 (1984)
       defines 2 only]: a message whose IPM uses nothing X.420 (1984) lacks goes as
       content type 2, its content octets as received; one whose IPM does (heading
       extensions, recipient extensions, extended, bilaterally defined or message body
       parts, O/R names with extension attributes or a directory name, an IPN: the list
       is in :mod:`p1.ipms.p2_1984`), or whose content does not decode, cannot be
       down-graded, and the first such field is named.  A probe's 22 becomes 2 [choice:
       a probe carries no content to judge; it asks about an IPM the 1984 side can
       receive as 2].
    3  O/R names [84: standard and domain-defined attributes only]: a name with an
       extension attribute (common-name included) cannot be down-graded (X.419 Annex B,
       as RFC 1328 section 3 reads it); nor can a numeric-form address with a private
       domain name (X.419 Annex B.2.8).  A directory name is removed when the name keeps
       an O/R address, else the name cannot be down-graded.  With
       ``common_name_as_dda`` a printable common-name becomes the domain-defined
       attribute "Common" instead (RFC 1328 section 3.2).
    4  trace and a report's subject-intermediate-trace [84: DomainSuppliedInfo]:
       other-actions is removed.
    5  encoded information types, original and converted [84: no [4]]:
       extended-encoded-information-types is removed.
    6  per-domain-bilateral-information [84: country and ADMD only]: an element
       naming a private domain is removed.
    7  recipients of a message or probe [choice: each judged alone, as X.411 reports
       each]: a responsible recipient that cannot be down-graded (rules 1 and 3) is
       left out and listed in :attr:`Downgraded.refused`, to be non-delivered with
       reason unable-to-transfer and diagnostic unable-to-downgrade (47); one the peer
       is not responsible for is left out silently.  When no responsible recipient is
       left, the whole APDU is :class:`NotDowngradable`.
    8  reports [84: DeliveryReportContent]: content-type and
       original-encoded-information-types are removed.  A report with anything rules 1
       and 3 refuse is :class:`ReportDiscarded` as a whole: no report is made on a
       report.

Values 1984 names fewer of but types as INTEGER or BIT STRING (reason and diagnostic
codes, type of user, explicit conversion, per-message indicator bits 4-7) are carried
as they are.  An APDU that needs nothing removed comes back as the very bytes given; one
that does keeps every other member's encoding as received (:mod:`p1.mts.envelope`'s
lossless relay, and a message's content octets untouched).

Public API::

    downgrade_to_1984(apdu, *, common_name_as_dda=False) -> Outcome
    Outcome = Downgraded | NotDowngradable | ReportDiscarded
    Downgraded(apdu, removed, refused), NotDowngradable(why, reason, diagnostic),
    ReportDiscarded(why)

Raises :class:`p1.errors.DecodeError` for an APDU that does not decode.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from p1 import ber
from p1.errors import DecodeError
from p1.ipms.p2_1984 import fields_1984_lacks
from p1.mts.envelope import (
    EncodedInformationTypes,
    ExtensionField,
    MessageEnvelope,
    OtherActions,
    Probe,
    RecipientField,
    StandardExtension,
    TraceEntry,
    encode_mts_apdu,
    message_content,
    peek_envelope,
    replace_message_envelope,
)
from p1.mts.fields import BuiltInContentType, ContentType
from p1.mts.orname import UB_DOMAIN_DEFINED_ATTRIBUTES, ORName
from p1.mts.report import (
    LastTraceInformation,
    NonDeliveryDiagnostic,
    NonDeliveryReason,
    Report,
    ReportContent,
    ReportEnvelope,
    ReportRecipientField,
)

__all__ = [
    "Downgraded",
    "NotDowngradable",
    "Outcome",
    "ReportDiscarded",
    "downgrade_to_1984",
]


@dataclass(frozen=True, slots=True)
class Downgraded:
    """The APDU as the 1984 peer may receive it (X.419 Annex B)."""

    apdu: bytes
    """The down-graded MTS-APDU (the bytes given when nothing needed removal)."""
    removed: tuple[str, ...] = ()
    """What was dropped, each ``"<where>: <what>"``, for one log line."""
    refused: tuple[int, ...] = ()
    """originally-specified-recipient-numbers of responsible recipients left out (rule
    7): non-deliver each with unable-to-transfer / unable-to-downgrade."""


@dataclass(frozen=True, slots=True)
class NotDowngradable:
    """The message or probe cannot be transferred to the 1984 peer: non-deliver every
    recipient the MTA is responsible for (X.411 clause 8.3.1.2.1.9-10)."""

    why: str
    """One line for the operator's log."""
    reason: int = NonDeliveryReason.UNABLE_TO_TRANSFER
    """NonDeliveryReasonCode for the non-delivery report."""
    diagnostic: int = NonDeliveryDiagnostic.UNABLE_TO_DOWNGRADE
    """NonDeliveryDiagnosticCode for the non-delivery report."""


@dataclass(frozen=True, slots=True)
class ReportDiscarded:
    """The report cannot be transferred to the 1984 peer and is discarded: no report is
    made on a report."""

    why: str
    """One line for the operator's log."""


Outcome = Downgraded | NotDowngradable | ReportDiscarded


class _Blocked(Exception):
    """Something that cannot be down-graded, and why (caught inside this module)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


_Removed = list[str]


def downgrade_to_1984(apdu: bytes, *, common_name_as_dda: bool = False) -> Outcome:
    """Down-grade ``apdu`` (the BER of an MTS-APDU) for an X.410-1984 mode peer.

    ``common_name_as_dda`` maps a common-name to the domain-defined attribute "Common"
    (RFC 1328 section 3.2, which every 1988 system of the community must agree on);
    by default such a name cannot be down-graded.  See the module's docstring for the
    rules; raises DecodeError only.
    """
    envelope = peek_envelope(apdu)
    if isinstance(envelope, Report):
        return _downgrade_report(apdu, envelope, common_name_as_dda)
    return _downgrade_transfer(apdu, envelope, common_name_as_dda)


# --- messages and probes ---------------------------------------------------------------


def _downgrade_transfer(
    apdu: bytes, envelope: MessageEnvelope | Probe, cn_as_dda: bool
) -> Downgraded | NotDowngradable:
    removed: _Removed = []
    try:
        content_type = _content_type(apdu, envelope, removed)
        new, refused = _transfer_envelope(envelope, removed, cn_as_dda)
        new = dataclasses.replace(new, content_type=content_type)
    except _Blocked as blocked:
        return NotDowngradable(blocked.why)
    if not removed:
        return Downgraded(apdu=bytes(apdu))
    if isinstance(new, MessageEnvelope):
        data = replace_message_envelope(apdu, new)
    else:
        data = encode_mts_apdu(new)
    return Downgraded(apdu=data, removed=tuple(removed), refused=refused)


_IPM_1988 = BuiltInContentType.INTERPERSONAL_MESSAGING_1988
_IPM_1984 = BuiltInContentType.INTERPERSONAL_MESSAGING_1984


def _content_type(apdu: bytes, envelope: MessageEnvelope | Probe, removed: _Removed) -> ContentType:
    """Rule 2: the content type the 1984 peer gets; raises _Blocked when there is none."""
    kind = envelope.content_type
    if isinstance(kind, str):
        raise _Blocked(f"content-type: extended content type {kind}")
    if kind != _IPM_1988:
        return kind
    if isinstance(envelope, MessageEnvelope):
        try:
            lacking = fields_1984_lacks(message_content(apdu))
        except DecodeError as error:
            why = f"content: an IPM of content type 22 that does not decode: {error}"
            raise _Blocked(why) from error
        if lacking:
            shown = "; ".join(lacking[:3]) + ("; ..." if len(lacking) > 3 else "")
            raise _Blocked(f"content: X.420 (1984) lacks {shown}")
    removed.append("content-type: interpersonal-messaging-1988 (22) as 1984 (2)")
    return _IPM_1984


# UMPDUEnvelope (X.411 1984) ::= SET { mpduID MPDUIdentifier, originator ORName,
#   original EncodedInformationTypes OPTIONAL, ContentType, UAContentId OPTIONAL,
#   Priority DEFAULT normal, PerMessageFlag DEFAULT {}, deferredDelivery [0] Time OPTIONAL,
#   [1] SEQUENCE OF PerDomainBilateralInfo OPTIONAL, [2] SEQUENCE OF RecipientInfo,
#   TraceInformation }
# ProbeEnvelope (X.411 1984): the same but priority and deferredDelivery, with
#   contentLength [0] INTEGER OPTIONAL.
def _transfer_envelope(
    envelope: MessageEnvelope | Probe, removed: _Removed, cn_as_dda: bool
) -> tuple[MessageEnvelope | Probe, tuple[int, ...]]:
    """The envelope without what 1984 lacks, and the responsible recipients left out."""
    originator = _name(envelope.originator_name, "originator-name", removed, cn_as_dda)
    order = _drop_extensions(envelope.extensions, envelope.wire_order, "extensions", removed)
    recipients, refused = _recipients(envelope.recipients, removed, cn_as_dda)
    new = dataclasses.replace(
        envelope,
        originator_name=originator,
        original_encoded_information_types=_eits(
            envelope.original_encoded_information_types,
            "original-encoded-information-types",
            removed,
        ),
        per_domain_bilateral_information=_bilateral(
            envelope.per_domain_bilateral_information, removed
        ),
        trace_information=_trace(envelope.trace_information, "trace-information", removed),
        extensions=(),
        recipients=recipients,
        wire_order=order,
    )
    return new, refused


def _recipients(
    recipients: Sequence[RecipientField], removed: _Removed, cn_as_dda: bool
) -> tuple[tuple[RecipientField, ...], tuple[int, ...]]:
    """Rule 7: each recipient down-graded or left out; the responsible ones left out."""
    kept: list[RecipientField] = []
    refused: list[int] = []
    failures: list[str] = []
    for index, recipient in enumerate(recipients):
        where = f"per-recipient-fields[{index}]"
        try:
            kept.append(_recipient(recipient, where, removed, cn_as_dda))
        except _Blocked as blocked:
            number = recipient.originally_specified_recipient_number
            if recipient.responsible:
                refused.append(number)
            failures.append(blocked.why)
            removed.append(f"recipient {number} left out ({blocked.why})")
    if not kept or (refused and not any(r.responsible for r in kept)):
        raise _Blocked(f"no recipient can be down-graded: {failures[0]}")
    return tuple(kept), tuple(refused)


# RecipientInfo (X.411 1984) ::= SET { recipient ORName, [0] ExtensionIdentifier,
#   [1] PerRecipientFlag, [2] ExplicitConversion DEFAULT {} }
def _recipient(
    recipient: RecipientField, where: str, removed: _Removed, cn_as_dda: bool
) -> RecipientField:
    notes: _Removed = []  # (kept only when the recipient is: one left out has one note)
    name = _name(recipient.recipient_name, f"{where}.recipient-name", notes, cn_as_dda)
    order = _drop_extensions(
        recipient.extensions, recipient.wire_order, f"{where}.extensions", notes
    )
    removed.extend(notes)
    return dataclasses.replace(recipient, recipient_name=name, extensions=(), wire_order=order)


# --- reports ---------------------------------------------------------------------------


def _downgrade_report(apdu: bytes, report: Report, cn_as_dda: bool) -> Downgraded | ReportDiscarded:
    removed: _Removed = []
    try:
        new = Report(
            envelope=_report_envelope(report.envelope, removed, cn_as_dda),
            content=_report_content(report.content, removed, cn_as_dda),
        )
    except _Blocked as blocked:
        return ReportDiscarded(blocked.why)
    if not removed:
        return Downgraded(apdu=bytes(apdu))
    return Downgraded(apdu=encode_mts_apdu(new), removed=tuple(removed))


# DeliveryReportEnvelope (X.411 1984) ::= SET { report MPDUIdentifier,
#   originator ORName, TraceInformation }
def _report_envelope(
    envelope: ReportEnvelope, removed: _Removed, cn_as_dda: bool
) -> ReportEnvelope:
    where = "report-destination-name"
    order = _drop_extensions(
        envelope.extensions, envelope.wire_order, "envelope.extensions", removed
    )
    return dataclasses.replace(
        envelope,
        report_destination_name=_name(envelope.report_destination_name, where, removed, cn_as_dda),
        trace_information=_trace(envelope.trace_information, "trace-information", removed),
        extensions=(),
        wire_order=order,
    )


# DeliveryReportContent (X.411 1984) ::= SET { original MPDUIdentifier,
#   intermediate TraceInformation OPTIONAL, UAContentId OPTIONAL,
#   [0] IMPLICIT SEQUENCE OF ReportedRecipientInfo, returned [1] IMPLICIT UMPDUContent
#   OPTIONAL, billingInformation [2] ANY OPTIONAL }
def _report_content(content: ReportContent, removed: _Removed, cn_as_dda: bool) -> ReportContent:
    order = _drop_extensions(content.extensions, content.wire_order, "content.extensions", removed)
    if content.content_type is not None:
        removed.append(f"content.content-type: {content.content_type}")
    if content.original_encoded_information_types is not None:
        removed.append("content.original-encoded-information-types")
    absent = ("content_type", "original_encoded_information_types")
    return dataclasses.replace(
        content,
        subject_intermediate_trace_information=_trace(
            content.subject_intermediate_trace_information,
            "subject-intermediate-trace-information",
            removed,
        ),
        original_encoded_information_types=None,
        content_type=None,
        extensions=(),
        recipients=tuple(
            _report_recipient(r, f"per-recipient-fields[{i}]", removed, cn_as_dda)
            for i, r in enumerate(content.recipients)
        ),
        wire_order=tuple(name for name in order if name not in absent),
    )


# ReportedRecipientInfo (X.411 1984) ::= SET { recipient [0] ORName,
#   [1] ExtensionIdentifier, [2] PerRecipientFlag, [3] LastTraceInformation,
#   intendedRecipient [4] ORName OPTIONAL, [5] SupplementaryInformation OPTIONAL }
def _report_recipient(
    recipient: ReportRecipientField, where: str, removed: _Removed, cn_as_dda: bool
) -> ReportRecipientField:
    intended = recipient.originally_intended_recipient_name
    order = _drop_extensions(
        recipient.extensions, recipient.wire_order, f"{where}.extensions", removed
    )
    return dataclasses.replace(
        recipient,
        actual_recipient_name=_name(
            recipient.actual_recipient_name, f"{where}.actual-recipient-name", removed, cn_as_dda
        ),
        originally_intended_recipient_name=None
        if intended is None
        else _name(intended, f"{where}.originally-intended-recipient-name", removed, cn_as_dda),
        last_trace_information=_last_trace(
            recipient.last_trace_information, f"{where}.last-trace-information", removed
        ),
        extensions=(),
        wire_order=order,
    )


def _last_trace(value: LastTraceInformation, where: str, removed: _Removed) -> LastTraceInformation:
    eits = _eits(
        value.converted_encoded_information_types,
        f"{where}.converted-encoded-information-types",
        removed,
    )
    return dataclasses.replace(value, converted_encoded_information_types=eits)


# --- rule 1: extensions ----------------------------------------------------------------


def _drop_extensions(
    extensions: Sequence[ExtensionField], order: tuple[str, ...], where: str, removed: _Removed
) -> tuple[str, ...]:
    """Rule 1: the member order without ``extensions``, each extension noted as removed.

    One critical for transfer or for delivery (X.411 clause 9.1) blocks: removing it
    would let the 1984 side transfer or deliver without the function its originator
    declared indispensable.  An empty ``extensions`` sent explicitly (its ``DEFAULT
    {}``) is removed too: 1984 has no such member."""
    for extension in extensions:
        if extension.critical_for_transfer or extension.critical_for_delivery:
            raise _Blocked(f"{where}: {_extension_name(extension)} is critical")
    removed.extend(f"{where}: {_extension_name(e)}" for e in extensions)
    if not extensions and "extensions" in order:
        removed.append(f"{where}: empty, sent explicitly")
    return _without(order, "extensions")


def _extension_name(extension: ExtensionField) -> str:
    kind = extension.type
    if isinstance(kind, str):
        return f"private-extension {kind}"
    try:
        return StandardExtension(kind).name.lower().replace("_", "-")
    except ValueError:
        return f"standard-extension {kind}"


def _without(order: tuple[str, ...], member: str) -> tuple[str, ...]:
    return order if member not in order else tuple(name for name in order if name != member)


# --- rules 2 and 3: O/R names ----------------------------------------------------------


# ORName (X.411 1984) ::= [APPLICATION 0] SEQUENCE { standard StandardAttributeList,
#   domaindefined DomainDefinedAttributeList OPTIONAL }
def _name(name: ORName, where: str, removed: _Removed, cn_as_dda: bool) -> ORName:
    """Rule 3: ``name`` as 1984 can carry it; raises _Blocked when it cannot."""
    if name.extension_attributes:
        kinds = ", ".join(str(a.type) for a in name.extension_attributes)
        raise _Blocked(f"{where}: extension attribute(s) {kinds}")
    if name.numeric_user_identifier is not None and name.prmd is not None:
        raise _Blocked(f"{where}: numeric form with a private domain name")
    if name.directory_name is not None:
        name = _without_directory_name(name, where, removed)
    if name.common_name is not None:
        name = _common_name(name, name.common_name, where, removed, cn_as_dda)
    return name


def _without_directory_name(name: ORName, where: str, removed: _Removed) -> ORName:
    address = dataclasses.replace(name, directory_name=None)
    if address == _NO_NAME:
        raise _Blocked(f"{where}: a directory name without an O/R address")
    removed.append(f"{where}: directory-name")
    return address


_NO_NAME = ORName()
_COMMON_DDA = "Common"
"""RFC 1328 section 3.2: the domain-defined attribute type a common-name becomes."""


def _common_name(
    name: ORName, common_name: str, where: str, removed: _Removed, cn_as_dda: bool
) -> ORName:
    if not cn_as_dda:
        raise _Blocked(f"{where}: extension attribute common-name")
    if len(name.domain_defined) >= UB_DOMAIN_DEFINED_ATTRIBUTES:
        raise _Blocked(f"{where}: common-name, and no room for another domain-defined attribute")
    removed.append(f"{where}: common-name, as DDA {_COMMON_DDA}")
    return dataclasses.replace(
        name,
        common_name=None,
        common_name_position=None,
        domain_defined=(*name.domain_defined, (_COMMON_DDA, common_name)),
    )


# --- rules 4 to 6: trace, encoded information types, bilateral information -------------


# DomainSuppliedInfo (X.411 1984) ::= SET { arrival [0] Time, deferred [1] Time OPTIONAL,
#   action [2] INTEGER { relayed(0), rerouted(1) }, converted EncodedInformationTypes
#   OPTIONAL, previous GlobalDomainIdentifier OPTIONAL }
def _trace(entries: Sequence[TraceEntry], where: str, removed: _Removed) -> tuple[TraceEntry, ...]:
    return tuple(_trace_entry(e, f"{where}[{i}]", removed) for i, e in enumerate(entries))


def _trace_entry(entry: TraceEntry, where: str, removed: _Removed) -> TraceEntry:
    order = entry.wire_order
    if not entry.other_actions.is_empty or "other_actions" in order:
        removed.append(f"{where}: other-actions")
    eits = _eits(
        entry.converted_encoded_information_types,
        f"{where}.converted-encoded-information-types",
        removed,
    )
    return dataclasses.replace(
        entry,
        other_actions=_NO_ACTIONS,
        converted_encoded_information_types=eits,
        wire_order=_without(order, "other_actions"),
    )


_NO_ACTIONS = OtherActions()


# EncodedInformationTypes (X.411 1984) ::= [APPLICATION 5] IMPLICIT SET {
#   [0] IMPLICIT BIT STRING {...}, [1] IMPLICIT G3NonBasicParams OPTIONAL,
#   [2] IMPLICIT TeletexNonBasicParams OPTIONAL, [3] PresentationCapabilities OPTIONAL }
def _eits(
    eits: EncodedInformationTypes | None, where: str, removed: _Removed
) -> EncodedInformationTypes | None:
    if eits is None or not (eits.extended or "extended" in eits.wire_order):
        return eits
    removed.append(f"{where}: extended-encoded-information-types")
    return dataclasses.replace(eits, extended=(), wire_order=_without(eits.wire_order, "extended"))


# PerDomainBilateralInfo (X.411 1984) ::= SEQUENCE { country CountryName,
#   AdministrationDomainName, BilateralInfo }; 1988 lets the second be
#   private-domain SEQUENCE { [0] AdministrationDomainName, [1] PrivateDomainIdentifier }.
def _bilateral(items: Sequence[bytes], removed: _Removed) -> tuple[bytes, ...]:
    kept = tuple(item for item in items if not _names_private_domain(item))
    if len(kept) != len(items):
        removed.append(f"per-domain-bilateral-information: {len(items) - len(kept)} for a PRMD")
    return kept


def _names_private_domain(item: bytes) -> bool:
    what = "per-domain-bilateral-information"
    parts = ber.children(ber.read_single(item, what), what)
    return len(parts) > 1 and parts[1].tag == ber.SEQUENCE
