"""Security labels between two live sites, each with the same SPIF: a SECRET message a
peer transfers to site B is delivered to the mailbox cleared for it, non-delivered with
secure-messaging-error to the one that is not, and never transferred over a link not
accredited for it; a CONFIDENTIAL one crosses that link and is delivered at site A.  Each
decision is in B's audit log and refusals are counted; ``x400 read`` shows the SPIF's
display marking."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from client import x400
from p1.mts.envelope import Message, decode_mts_apdu, encode_mts_apdu
from p1.mts.extensions import with_extension
from p1.mts.fields import Criticality, GlobalDomainIdentifier
from p1.mts.orname import parse_orname
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason, NonDeliveryReport
from p1.mts.security_label import security_label_extension
from p1.mts.trace import TraceEntry
from tests.p1.security.policies import EXAMPLE_SPIF, label
from tests.support.sites import SENT, Lab, eventually, message_from_a, transfer_as_a

pytestmark = pytest.mark.slow  # two sites

SITE_C = GlobalDomainIdentifier(country="GB", admd=" ", prmd="SITEC")


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    made = Lab.create(tmp_path)
    spif = tmp_path / "policy.xml"
    shutil.copy(EXAMPLE_SPIF, spif)
    made.b.settings["security"] = {
        "policy": str(spif),
        "default_clearance": "basic",
        "clearances": [
            clearance("secret", "SECRET", made.b.address("Alice")),
            clearance("link", "CONFIDENTIAL"),
            clearance("basic", "UNCLASSIFIED"),
        ],
    }
    made.b.settings["peers"][0]["clearance"] = "link"
    made.a.settings["security"] = {
        "policy": str(spif),
        "clearances": [
            clearance("confidential", "CONFIDENTIAL", made.a.address("Jones")),
            clearance("link", "SECRET"),
        ],
    }
    made.a.settings["peers"][0]["clearance"] = "link"
    await made.start()
    try:
        yield made
    finally:
        await made.close()


def clearance(name: str, classification: str, *users: str) -> dict[str, Any]:
    return {
        "name": name,
        "classification": classification,
        "categories": ["GBR"],
        "users": list(users),
    }


def labelled(identifier: str, classification: str, recipients: list[str]) -> bytes:
    """A message from Smith at A that came in through site C, to ``recipients``, its
    label critical for delivery and transfer."""
    message = decode_mts_apdu(message_from_a(identifier, recipients[0]))
    assert isinstance(message, Message)
    first = message.envelope.recipients[0]
    extension = security_label_extension(
        label(classification, "GBR"), Criticality(for_delivery=True, for_transfer=True)
    )
    envelope = replace(
        message.envelope,
        trace_information=(TraceEntry(global_domain_identifier=SITE_C, arrival_time=SENT),),
        recipients=tuple(
            replace(first, recipient_name=parse_orname(r), originally_specified_recipient_number=n)
            for n, r in enumerate(recipients, 1)
        ),
        extensions=with_extension(message.envelope.extensions, extension),
    )
    return encode_mts_apdu(replace(message, envelope=envelope))


async def test_delivered_where_cleared_refused_elsewhere(lab: Lab) -> None:
    a, b = lab.a, lab.b
    alice, bob, jones = b.address("Alice"), b.address("Bob"), a.address("Jones")
    smith = a.address("Smith")

    await transfer_as_a(b, labelled("labels-secret", "SECRET", [alice, bob, jones]))
    await transfer_as_a(b, labelled("labels-confidential", "CONFIDENTIAL", [jones]))

    (delivered,) = await eventually(
        lambda: b.inbox(alice), lambda found: len(found) == 1, what="SECRET at Alice"
    )
    (crossed,) = await eventually(
        lambda: a.inbox(jones), lambda found: len(found) == 1, what="CONFIDENTIAL at A"
    )
    assert crossed["mts_identifier"].endswith(";labels-confidential]")
    (report,) = await eventually(
        lambda: a.reports(smith), lambda found: len(found) == 1, what="the NDR at Smith"
    )
    refused = {
        str(r.actual_recipient_name.canonical): r.last_trace_information.report
        for r in report.content.recipients
    }
    expected = NonDeliveryReport(
        reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
        diagnostic_code=NonDeliveryDiagnostic.SECURE_MESSAGING_ERROR,
    )
    assert refused == {
        parse_orname(bob).canonical: expected,
        parse_orname(jones).canonical: expected,
    }
    assert await b.inbox(bob) == []
    assert [m["mts_identifier"] for m in await a.inbox(jones)] == [crossed["mts_identifier"]]

    track = await b.api({"op": "track", "mts_identifier": delivered["mts_identifier"]})
    checks = {
        (e["recipient"], e["peer"], e["detail"])
        for e in track["events"]
        if e["event"] == "label-checked"
    }
    assert checks == {
        (
            parse_orname(alice).canonical,
            None,
            "allowed: EXAMPLE SECRET REL TO GBR: cleared for SECRET",
        ),
        (
            parse_orname(bob).canonical,
            None,
            "refused: EXAMPLE SECRET REL TO GBR: not cleared for SECRET",
        ),
        (
            parse_orname(jones).canonical,
            "MTA-A",
            "refused: EXAMPLE SECRET REL TO GBR: not cleared for SECRET",
        ),
    }
    metrics = b.running.metrics.registry
    assert (
        metrics.get_sample_value("aiox400_security_label_refusals_total", {"route": "local"}) == 1
    )
    assert (
        metrics.get_sample_value("aiox400_security_label_refusals_total", {"route": "MTA-A"}) == 1
    )

    code, out, err = await b.x400(
        "read", "--socket", str(b.socket), "--user", alice, str(delivered["id"])
    )
    assert code == x400.EXIT_OK, err
    assert "marking:        EXAMPLE SECRET REL TO GBR\n" in out
    assert "security label: SECRET; policy 1.3.6.1.4.1.32473.1;" in out
