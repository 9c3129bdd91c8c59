"""Before each transfer, the security label against the clearance of the link to the
peer (X.411 8.5.9): what the link is not accredited for is non-delivered, never sent,
whatever was decided when the message was taken in."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from config.schema import P1Protocol
from mta.outbound.outgoing import LinkClearance, outgoing, transfer_apdu
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason, NonDeliveryReport
from tests.mta.intake.test_routing_labels import configure
from tests.mta.outbound.test_pp_extension_policy import _queued
from tests.mta.test_security_labels_live import labelled

JONES = "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones"


def link(tmp_path: Path, clearance: str | None) -> LinkClearance:
    security = configure(tmp_path).security
    return LinkClearance(security=security, clearance=security.clearance_named(clearance))


def test_a_label_the_link_is_not_cleared_for_is_not_sent(tmp_path: Path) -> None:
    entry = _queued(labelled("secret", "SECRET", [JONES]), None)
    wire = outgoing(entry, P1Protocol.NORMAL, None, link(tmp_path, "link"))
    assert (wire.entry, wire.apdu, wire.refused) == (None, b"", entry)
    assert wire.report == NonDeliveryReport(
        reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
        diagnostic_code=NonDeliveryDiagnostic.SECURE_MESSAGING_ERROR,
    )
    assert wire.why == (
        "security label EXAMPLE SECRET REL TO GBR refused for the link: not cleared for SECRET"
    )


def test_a_link_without_clearance_takes_no_label(tmp_path: Path) -> None:
    entry = _queued(labelled("low", "UNCLASSIFIED", [JONES]), None)
    wire = outgoing(entry, P1Protocol.NORMAL, None, link(tmp_path, None))
    assert wire.refused == entry and wire.why.endswith(": no clearance")


def test_what_the_link_is_cleared_for_goes_as_it_would(tmp_path: Path) -> None:
    entry = _queued(labelled("conf", "CONFIDENTIAL", [JONES]), None)
    wire = outgoing(entry, P1Protocol.NORMAL, None, link(tmp_path, "link"))
    assert (wire.entry, wire.apdu, wire.refused) == (entry, transfer_apdu(entry), None)
    assert outgoing(entry, P1Protocol.NORMAL).apdu == wire.apdu


def test_an_envelope_that_does_not_decode_is_not_sent_unjudged(tmp_path: Path) -> None:
    entry = _queued(labelled("conf", "CONFIDENTIAL", [JONES]), None)
    broken = replace(entry, apdu=entry.apdu[: len(entry.apdu) // 2])
    wire = outgoing(broken, P1Protocol.NORMAL, None, link(tmp_path, "link"))
    assert (wire.entry, wire.apdu, wire.refused) == (None, b"", broken)
    assert wire.why.startswith("the envelope does not decode, so its label cannot be judged")
