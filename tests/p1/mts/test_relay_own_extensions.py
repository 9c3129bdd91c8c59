"""This MTA's own extensions left out (p1.mts.relay): only ours, the rest as received."""

from __future__ import annotations

from datetime import UTC, datetime

from p1.mts.envelope import Message, decode_mts_apdu, encode_mts_apdu
from p1.mts.extensions import ExtensionField, internal_trace, priority_level_qualifier
from p1.mts.fields import GlobalDomainIdentifier
from p1.mts.precedence import Precedence
from p1.mts.relay import Ours, without_own
from p1.mts.trace import InternalTraceEntry
from tests.support.sites import message_from_a

HERE = GlobalDomainIdentifier(country="GB", admd=" ", prmd="SITEB")
THERE = GlobalDomainIdentifier(country="GB", admd=" ", prmd="SITEA")
AT = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _entry(name: str, domain: GlobalDomainIdentifier) -> InternalTraceEntry:
    return InternalTraceEntry(global_domain_identifier=domain, mta_name=name, arrival_time=AT)


def _message(*entries: InternalTraceEntry) -> bytes:
    """A message from MTA-A with ``entries`` of internal trace and a qualifier (flash)."""
    apdu = message_from_a("x1", "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Bob", internal_trace=entries)
    message = decode_mts_apdu(apdu)
    assert isinstance(message, Message)
    envelope = message.envelope.with_precedence(Precedence.FLASH)
    return encode_mts_apdu(Message(envelope=envelope, content=message.content))


def _extensions(apdu: bytes) -> tuple[ExtensionField, ...]:
    message = decode_mts_apdu(apdu)
    assert isinstance(message, Message)
    return message.envelope.extensions


def test_only_our_internal_trace_entries_go_the_others_keep_their_bytes() -> None:
    theirs, ours = _entry("MTA-A", THERE), _entry("MTA-B", HERE)
    apdu = _message(theirs, ours)
    me = Ours(name="MTA-B", domain=HERE, originated=False)
    left = without_own(apdu, me, internal_trace=True, qualifier=True)
    assert internal_trace(_extensions(left)) == (theirs,)
    # Nothing of ours: the same APDU, not a copy.
    assert without_own(left, me, internal_trace=True, qualifier=True) is left
    # Ours alone: the extension goes.
    only = _message(ours)
    left = without_own(only, me, internal_trace=True, qualifier=False)
    assert internal_trace(_extensions(left)) == ()
    # Not asked: kept.
    assert without_own(only, me, internal_trace=False, qualifier=True) is only


def test_the_qualifier_goes_only_from_a_message_originated_here() -> None:
    qualified = _message()
    assert priority_level_qualifier(_extensions(qualified)) is not None
    relayed = Ours(name="MTA-B", domain=HERE, originated=False)
    assert without_own(qualified, relayed, internal_trace=False, qualifier=True) is qualified
    originated = Ours(name="MTA-A", domain=THERE, originated=True)
    left = without_own(qualified, originated, internal_trace=False, qualifier=True)
    assert priority_level_qualifier(_extensions(left)) is None
    after, before = decode_mts_apdu(left), decode_mts_apdu(qualified)
    assert isinstance(after, Message) and isinstance(before, Message)
    assert after.content == before.content
    assert after.envelope.priority == before.envelope.priority  # the P1 priority stays
