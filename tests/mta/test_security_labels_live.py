"""Security labels between two live sites, each with the same SPIF: a SECRET message a
peer transfers to site B is delivered to the mailbox cleared for it, non-delivered with
secure-messaging-error to the one that is not, and never transferred over a link not
accredited for it; a CONFIDENTIAL one crosses that link and is delivered at site A.  Each
decision is in B's audit log and refusals are counted; ``x400 read`` shows the SPIF's
display marking.  A table of labels (classifications, restrictive, permissive and
enumerated categories, the SPIF's excluded and required ones, another policy, none) sent
to three mailboxes shows who gets each."""

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
from p1.mts.security_label import SecurityLabel, security_label_extension
from p1.mts.trace import TraceEntry
from tests.p1.security.policies import EXAMPLE_SPIF, label
from tests.support.sites import SENT, Lab, Site, eventually, message_from_a, transfer_as_a

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
            clearance("secret", "SECRET", made.b.address("Alice"), also=["ALPHA"]),
            clearance("link", "CONFIDENTIAL"),
            clearance("basic", "UNCLASSIFIED"),
            {
                **clearance("carol", "CONFIDENTIAL", made.b.address("Carol")),
                "categories": ["USA", "STAFF"],
            },
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


def clearance(
    name: str, classification: str, *users: str, also: list[str] | None = None
) -> dict[str, Any]:
    return {
        "name": name,
        "classification": classification,
        "categories": ["GBR", *(also or [])],
        "users": list(users),
    }


def labelled(identifier: str, classification: str, recipients: list[str]) -> bytes:
    """A message from Smith at A that came in through site C, to ``recipients``, labelled
    ``classification`` releasable to GBR, the label critical for delivery and transfer."""
    return carrying(identifier, label(classification, "GBR"), recipients)


def carrying(identifier: str, security_label: SecurityLabel | None, recipients: list[str]) -> bytes:
    """The same with any label, or none; the subject is the identifier."""
    message = decode_mts_apdu(message_from_a(identifier, recipients[0], subject=identifier))
    assert isinstance(message, Message)
    first = message.envelope.recipients[0]
    extensions = message.envelope.extensions
    if security_label is not None:
        critical = Criticality(for_delivery=True, for_transfer=True)
        extensions = with_extension(extensions, security_label_extension(security_label, critical))
    envelope = replace(
        message.envelope,
        trace_information=(TraceEntry(global_domain_identifier=SITE_C, arrival_time=SENT),),
        recipients=tuple(
            replace(first, recipient_name=parse_orname(r), originally_specified_recipient_number=n)
            for n, r in enumerate(recipients, 1)
        ),
        extensions=extensions,
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


# A table of cases against the live daemon: each message goes to three mailboxes of B
# (Alice SECRET with GBR and ALPHA, Carol CONFIDENTIAL with USA and STAFF, Bob the default
# UNCLASSIFIED); who gets it is the SPIF's rules at work.
CASES = [
    # (subject, label, the mailboxes that get it)
    ("secret-gbr", label("SECRET", "GBR"), {"Alice"}),
    ("confidential-rel-usa-fra", label("CONFIDENTIAL", "USA", "FRA"), {"Carol"}),
    ("restricted-rel-gbr-usa", label("RESTRICTED", "GBR", "USA"), {"Alice", "Carol"}),
    ("unclassified-no-category", label("UNCLASSIFIED"), {"Alice", "Bob", "Carol"}),
    ("secret-alpha", label("SECRET", "ALPHA", "GBR"), {"Alice"}),
    ("confidential-staff", label("CONFIDENTIAL", "STAFF", "USA"), {"Carol"}),
    ("excluded-class", label("UNCLASSIFIED", "ALPHA"), set()),
    ("excluded-category", label("SECRET", "ALPHA", "EXERCISE", "GBR"), set()),
    ("required-missing", label("TOP SECRET"), set()),
    ("other-policy", SecurityLabel(policy="1.2.3", classification=1), set()),
    ("unlabelled", None, {"Alice", "Bob", "Carol"}),
]


async def test_a_table_of_labels_against_the_live_daemon(lab: Lab) -> None:
    b = lab.b
    people = ("Alice", "Bob", "Carol")
    for subject, security_label, _ in CASES:
        mailboxes = [b.address(name) for name in people]
        await transfer_as_a(b, carrying(f"table-{subject}", security_label, mailboxes))

    expected = {name: {s for s, _, to in CASES if name in to} for name in people}
    await eventually(
        lambda: _subjects(b, people),
        lambda seen: seen == {n: {f"table-{s}" for s in e} for n, e in expected.items()},
        what="each mailbox holding what its clearance allows",
    )
    refusals = b.running.metrics.registry.get_sample_value(
        "aiox400_security_label_refusals_total", {"route": "local"}
    )
    assert refusals == sum(len(people) - len(to) for _, _, to in CASES)


async def _subjects(site: Site, people: tuple[str, ...]) -> dict[str, set[str]]:
    return {
        name: {str(m["subject"]) for m in await site.inbox(site.address(name))} for name in people
    }
