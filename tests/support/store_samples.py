"""Times, names and MTS-APDUs for the store tests."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from p1.ipms.ipm import (
    IPM,
    IPN,
    ContentKind,
    Heading,
    IPMIdentifier,
    MessageType,
    ORDescriptor,
    ReceiptFields,
    Recipient,
    TextBodyPart,
    encode_content,
)
from p1.mts.envelope import (
    DeliveryReport,
    LastTraceInformation,
    Message,
    MessageEnvelope,
    MTSIdentifier,
    PerRecipientIndicators,
    Probe,
    RecipientField,
    Report,
    ReportContent,
    ReportEnvelope,
    ReportRecipientField,
    TraceEntry,
    encode_mts_apdu,
)
from p1.mts.extensions import ExtensionField
from p1.mts.fields import GlobalDomainIdentifier
from p1.mts.orname import ORName, parse_orname
from p1.mts.precedence import Precedence
from store.models import ApduKind
from store.queue import NewMessage, NewRecipient

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
DOMAIN = GlobalDomainIdentifier(country="GB", admd=" ", prmd="NATO")

SMITH = parse_orname("C=GB;ADMD= ;PRMD=NATO;O=ACT;S=Smith;G=John")
JONES = parse_orname("C=GB;ADMD= ;PRMD=NATO;O=JFC;S=Jones;G=Anne")
BROWN = parse_orname("C=GB;ADMD= ;PRMD=NATO;O=JFC;S=Brown")


def at(seconds: float) -> datetime:
    """``seconds`` after :data:`T0`."""
    return T0 + timedelta(seconds=seconds)


def mts_id(local: str) -> MTSIdentifier:
    return MTSIdentifier(global_domain_identifier=DOMAIN, local_identifier=local)


def new_message(
    local: str,
    *recipients: tuple[str, str],
    precedence: Precedence = Precedence.ROUTINE,
    expiry_time: datetime | None = None,
    not_before: datetime | None = None,
    origin_peer: str | None = None,
) -> NewMessage:
    """A message to queue; ``recipients`` are (name, route) pairs (default: one to mta-b)."""
    pairs = recipients or (("c=gb;s=jones", "mta-b"),)
    return NewMessage(
        mts_identifier=mts_id(local).text,
        kind=ApduKind.MESSAGE,
        apdu=f"apdu {local}".encode(),
        precedence=precedence,
        originator="c=gb;s=smith",
        recipients=tuple(
            NewRecipient(recipient=name, route=route, report_request=0b11000, recipient_number=n)
            for n, (name, route) in enumerate(pairs, start=1)
        ),
        expiry_time=expiry_time,
        not_before=not_before,
        origin_peer=origin_peer,
    )


def envelope(
    local: str, content_type: int | str, precedence: Precedence = Precedence.PRIORITY
) -> MessageEnvelope:
    return MessageEnvelope(
        mts_identifier=mts_id(local),
        originator_name=SMITH,
        content_type=content_type,
        trace_information=(TraceEntry(global_domain_identifier=DOMAIN, arrival_time=T0),),
        recipients=tuple(
            RecipientField(
                recipient_name=name,
                originally_specified_recipient_number=n,
                per_recipient_indicators=PerRecipientIndicators(responsibility=True),
            )
            for n, name in enumerate((JONES, BROWN), start=1)
        ),
    ).with_precedence(precedence)


def ipm_apdu(
    local: str,
    *,
    subject: str = "SITREP 042",
    primary: tuple[ORName, ...] = (JONES,),
    copies: tuple[ORName, ...] = (BROWN,),
    primary_precedence: Precedence | None = Precedence.FLASH,
    copy_precedence: Precedence | None = Precedence.ROUTINE,
    originator: ORDescriptor | None = None,
    kind: ContentKind = ContentKind.P772,
    message_type: MessageType | None = None,
    expiry_time: datetime | None = None,
    envelope_extensions: tuple[ExtensionField, ...] = (),
) -> bytes:
    """A message whose content is an IPM (P772 by default) from Smith; the envelope
    carries ``envelope_extensions`` besides those of its precedence."""
    heading = Heading(
        this_ipm=IPMIdentifier(user=SMITH, user_relative_identifier=local),
        originator=ORDescriptor(formal_name=SMITH) if originator is None else originator,
        primary_recipients=tuple(Recipient(name=n) for n in primary),
        copy_recipients=tuple(Recipient(name=n) for n in copies),
        subject=subject,
        primary_precedence=primary_precedence,
        copy_precedence=copy_precedence,
        message_type=message_type,
        expiry_time=expiry_time,
    )
    ipm = IPM(heading=heading, body=(TextBodyPart.from_text("Nothing to report."),))
    plain = envelope(local, kind.value)
    extended = dataclasses.replace(plain, extensions=plain.extensions + envelope_extensions)
    return encode_mts_apdu(Message(envelope=extended, content=encode_content(ipm, kind)))


def ipn_apdu(local: str) -> bytes:
    """A receipt notification from Jones."""
    ipn = IPN(
        subject_ipm=IPMIdentifier(user=SMITH, user_relative_identifier="m1"),
        fields=ReceiptFields(receipt_time=T0),
        ipn_originator=ORDescriptor(free_form_name="Anne Jones"),
    )
    content = encode_content(ipn, ContentKind.P2)
    return encode_mts_apdu(Message(envelope=envelope(local, 22), content=content))


def raw_apdu(local: str, content_type: int | str, content: bytes) -> bytes:
    """A message with any content type and content octets."""
    return encode_mts_apdu(Message(envelope=envelope(local, content_type), content=content))


def report_apdu(local: str) -> bytes:
    """A delivery report for message m1, to Smith."""
    report = Report(
        envelope=ReportEnvelope(
            report_identifier=mts_id(local),
            report_destination_name=SMITH,
            trace_information=(TraceEntry(global_domain_identifier=DOMAIN, arrival_time=T0),),
        ),
        content=ReportContent(
            subject_identifier=mts_id("m1"),
            recipients=(
                ReportRecipientField(
                    actual_recipient_name=JONES,
                    originally_specified_recipient_number=1,
                    last_trace_information=LastTraceInformation(
                        arrival_time=T0, report=DeliveryReport(message_delivery_time=T0)
                    ),
                ),
            ),
        ),
    )
    return encode_mts_apdu(report)


def probe_apdu(local: str) -> bytes:
    probe = Probe(
        probe_identifier=mts_id(local),
        originator_name=SMITH,
        content_type=22,
        trace_information=(TraceEntry(global_domain_identifier=DOMAIN, arrival_time=T0),),
        recipients=(RecipientField(recipient_name=JONES, originally_specified_recipient_number=1),),
    )
    return encode_mts_apdu(probe)
