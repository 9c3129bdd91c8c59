"""Sample STANAG 4406 messages for benchmarks and examples (one definition, many users)."""

from __future__ import annotations

from datetime import UTC, datetime

from p1.ipms.ipm import (
    IPM,
    P772_CONTENT_TYPE,
    ContentKind,
    Heading,
    IPMIdentifier,
    MessageType,
    ORDescriptor,
    Recipient,
    TextBodyPart,
    encode_ipm,
)
from p1.mts.envelope import (
    Message,
    MessageEnvelope,
    MTSIdentifier,
    PerRecipientIndicators,
    RecipientField,
    TraceEntry,
    encode_mts_apdu,
)
from p1.mts.fields import GlobalDomainIdentifier
from p1.mts.orname import ORName, parse_orname
from p1.mts.precedence import Precedence

DOMAIN = GlobalDomainIdentifier(country="GB", admd=" ", prmd="NATO")
SENT = datetime(2026, 11, 22, 9, 30, 0, tzinfo=UTC)
ORIGINATOR = parse_orname("C=GB;ADMD= ;PRMD=NATO;O=ACT;OU=J6;S=Smith;G=John")
RECIPIENTS = (
    parse_orname("C=GB;ADMD= ;PRMD=NATO;O=JFC;OU=J3;S=Jones;G=Anne"),
    parse_orname("C=GB;ADMD= ;PRMD=NATO;O=JFC;OU=J3;CN=Duty Officer"),
)


def body_text(size: int) -> bytes:
    """``size`` bytes of printable IA5 text in 72-character lines."""
    line = b"THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG 0123456789 ABCDEFGHIJKLMNOP\r\n"
    return (line * (size // len(line) + 1))[:size]


def p772_ipm(size: int, precedence: Precedence = Precedence.FLASH) -> IPM:
    """A military message with the usual P772 heading fields and a text body."""
    heading = Heading(
        this_ipm=IPMIdentifier(user=ORIGINATOR, user_relative_identifier="ACT-J6-0001"),
        originator=ORDescriptor(formal_name=ORIGINATOR),
        primary_recipients=tuple(Recipient(name=r) for r in RECIPIENTS),
        subject="SITREP 042 NORTHERN SECTOR",
        primary_precedence=precedence,
        copy_precedence=Precedence.ROUTINE,
        message_type=MessageType(type=0, identifier="EXERCISE STEADFAST"),
        originator_reference="J6/2026/042",
        handling_instructions=("EXERCISE ONLY",),
    )
    return IPM(heading=heading, body=(TextBodyPart(data=body_text(size)),))


def message(size: int, precedence: Precedence = Precedence.FLASH) -> Message:
    """An MTS message carrying :func:`p772_ipm` as its content."""
    envelope = MessageEnvelope(
        mts_identifier=MTSIdentifier(global_domain_identifier=DOMAIN, local_identifier="bench-1"),
        originator_name=ORIGINATOR,
        content_type=P772_CONTENT_TYPE,
        trace_information=(TraceEntry(global_domain_identifier=DOMAIN, arrival_time=SENT),),
        recipients=tuple(
            RecipientField(
                recipient_name=r,
                originally_specified_recipient_number=n,
                per_recipient_indicators=PerRecipientIndicators(responsibility=True),
            )
            for n, r in enumerate(RECIPIENTS, start=1)
        ),
    ).with_precedence(precedence)
    return Message(
        envelope=envelope, content=encode_ipm(p772_ipm(size, precedence), ContentKind.P772)
    )


def message_bytes(size: int, precedence: Precedence = Precedence.FLASH) -> bytes:
    """The BER of :func:`message`."""
    return encode_mts_apdu(message(size, precedence))


__all__ = ["ORName", "body_text", "message", "message_bytes", "p772_ipm"]
