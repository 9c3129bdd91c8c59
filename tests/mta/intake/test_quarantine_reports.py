"""The report on a quarantined transfer (X.411 14.3.2): the originator of a message or
probe kept in the quarantine learns that it was not delivered, when its envelope still
names the originator, the identifier and a recipient; otherwise, and for a report,
nothing is reported and the log says why.

Two MTAs on loopback (:mod:`tests.support.sites`): A's transfers are made into B by hand
(:func:`~tests.support.sites.transfer_as_a`) with an envelope member the strict decoder
refuses; B keeps them and reports back to Smith at A over the sites' own connections.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3

import pytest

from mta.intake.reports import Outcome, build_report
from p1.mts.envelope import (
    Message,
    MessageEnvelope,
    MTSIdentifier,
    Probe,
    Report,
    decode_mts_apdu,
    encode_mts_apdu,
)
from p1.mts.extensions import ExtensionField, StandardExtension
from p1.mts.fields import GlobalDomainIdentifier
from p1.mts.orname import ORName, parse_orname
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason, NonDeliveryReport
from tests.support.sites import SENT, A, B, Lab, eventually, message_from_a, transfer_as_a
from tests.support.sites import Site as LabSite

SMITH_AT_A = f"{A.domain};O=HQ;S=Smith"
JONES_AT_B = f"{B.domain};O=HQ;S=Jones"
BAD_LATEST_DELIVERY_TIME = ExtensionField(
    type=int(StandardExtension.LATEST_DELIVERY_TIME), criticality=None, value=b"\x05\x00"
)
"""A NULL where a UTCTime belongs: B's strict decoder refuses the envelope."""
REFUSED = "the MTS-APDU does not decode: latest-delivery-time: expected [UNIVERSAL 23], found "
AT_SIGN = ORName(country="GB", admd=" ", prmd="SITEA", organization="HQ", surname="Sm@th")
"""A PrintableString holding '@': no O/R name decodes with it."""
INVALID = NonDeliveryReport(
    reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
    diagnostic_code=NonDeliveryDiagnostic.INVALID_ARGUMENTS,
)


def envelope_of(apdu: bytes) -> tuple[MessageEnvelope, bytes]:
    message = decode_mts_apdu(apdu)
    assert isinstance(message, Message)
    return message.envelope, message.content


def with_bad_extension(apdu: bytes) -> bytes:
    """``apdu`` (a message) whose envelope carries :data:`BAD_LATEST_DELIVERY_TIME`."""
    envelope, content = envelope_of(apdu)
    extensions = (*envelope.extensions, BAD_LATEST_DELIVERY_TIME)
    return encode_mts_apdu(
        Message(envelope=dataclasses.replace(envelope, extensions=extensions), content=content)
    )


def probe_with_bad_extension(local_identifier: str) -> bytes:
    """A probe from Smith at A to Jones at B, with :data:`BAD_LATEST_DELIVERY_TIME`."""
    envelope, _ = envelope_of(message_from_a(local_identifier, JONES_AT_B))
    probe = Probe(
        probe_identifier=envelope.mts_identifier,
        originator_name=envelope.originator_name,
        content_type=envelope.content_type,
        trace_information=envelope.trace_information,
        extensions=(BAD_LATEST_DELIVERY_TIME,),
        recipients=envelope.recipients,
    )
    return encode_mts_apdu(probe)


def kept_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "kept in quarantine" in r.getMessage()]


def audit_events(site: LabSite) -> list[str]:
    with sqlite3.connect(site.directory / "state" / "aiox400.db") as database:
        rows = database.execute("SELECT event FROM audit ORDER BY id").fetchall()
    return [str(event) for (event,) in rows]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["message", "probe"])
async def test_a_quarantined_transfer_is_reported_to_its_originator(
    lab: Lab, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    await lab.start()
    local_identifier = f"invalid-{kind}"
    if kind == "message":
        apdu = with_bad_extension(message_from_a(local_identifier, JONES_AT_B))
    else:
        apdu = probe_with_bad_extension(local_identifier)
    await transfer_as_a(lab.b, apdu)

    (report,) = await eventually(
        lambda: lab.a.reports(SMITH_AT_A),
        lambda found: len(found) == 1,
        what="a report to Smith at A",
    )
    assert report.content.subject_identifier.local_identifier == local_identifier
    (recipient,) = report.content.recipients
    assert recipient.actual_recipient_name == parse_orname(JONES_AT_B)
    assert recipient.originally_specified_recipient_number == 1
    assert recipient.last_trace_information.report == INVALID
    (entry,) = (await lab.b.api({"op": "quarantine"}))["entries"]
    assert entry["reason"].startswith(REFUSED)
    (line,) = kept_lines(caplog)
    assert line.startswith(f"{A.name}: transfer of {len(apdu)} octets kept in quarantine as #")
    assert line.endswith("; non-delivery report queued")
    assert {"quarantined", "failed", "reported"} <= set(audit_events(lab.b))
    assert await lab.b.inbox(JONES_AT_B) == []


@pytest.mark.slow
async def test_a_quarantined_message_sent_again_is_kept_again_and_reported_on_once(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    """A's confirmation was lost and it sends the same transfer again: B keeps the copy
    too (the operator sees both) but Smith gets one report."""
    caplog.set_level(logging.INFO)
    await lab.start()
    apdu = with_bad_extension(message_from_a("invalid-twice", JONES_AT_B))
    await transfer_as_a(lab.b, apdu)
    await transfer_as_a(lab.b, apdu)

    assert len((await lab.b.api({"op": "quarantine"}))["entries"]) == 2
    first, second = kept_lines(caplog)
    assert first.endswith("; non-delivery report queued")
    assert second.endswith("; no report: a copy received again, reported on when first received")
    await eventually(
        lambda: lab.b.api({"op": "messages", "limit": 100}),
        lambda found: found["recipients"] == [],
        what="B's queue emptied (every report confirmed by A)",
    )
    assert len(await lab.a.reports(SMITH_AT_A)) == 1


async def test_no_report_when_the_originator_cannot_be_read(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    await lab.start()
    envelope, content = envelope_of(message_from_a("no-originator", JONES_AT_B))
    unreadable = dataclasses.replace(envelope, originator_name=AT_SIGN)
    apdu = encode_mts_apdu(Message(envelope=unreadable, content=content))
    await transfer_as_a(lab.b, apdu)  # committed, then confirmed

    assert len((await lab.b.api({"op": "quarantine"}))["entries"]) == 1
    (line,) = kept_lines(caplog)
    assert line.endswith("; no report: originator not readable")
    events = audit_events(lab.b)
    assert "quarantined" in events
    assert "reported" not in events
    assert "failed" not in events


async def test_a_quarantined_report_is_not_reported_on(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    await lab.start()
    envelope, _ = envelope_of(message_from_a("subject", JONES_AT_B))
    jones_at_b = parse_orname(JONES_AT_B)
    unreadable = dataclasses.replace(jones_at_b, surname="Jo@nes")
    subject = dataclasses.replace(envelope, originator_name=unreadable)
    outcome = Outcome(
        recipient=parse_orname(SMITH_AT_A),
        number=1,
        indicators=envelope.recipients[0].per_recipient_indicators,
        report=INVALID,
    )
    domain = GlobalDomainIdentifier(country="GB", admd=" ", prmd="SITEA")
    report = build_report(
        subject,
        (outcome,),
        identifier=MTSIdentifier(global_domain_identifier=domain, local_identifier="report"),
        domain=domain,
        arrival=SENT,
        now=SENT,
    )
    assert isinstance(report, Report)
    apdu = encode_mts_apdu(report)
    await transfer_as_a(lab.b, apdu)

    assert len((await lab.b.api({"op": "quarantine"}))["entries"]) == 1
    (line,) = kept_lines(caplog)
    assert line.endswith("; no report: a report is not reported on")
    assert "reported" not in audit_events(lab.b)
