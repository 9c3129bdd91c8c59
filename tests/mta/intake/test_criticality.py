"""Extension criticality (X.411 9.1): what an MTA does with an extension it does not
implement, according to the criticality the originator gave it.

A message marked critical for delivery with an extension this MTA does not implement is
not delivered: its originator gets a non-delivery report of unable-to-transfer and
unsupported-critical-function.  Marked critical for transfer, it is not transferred to a
peer unless the peer's configuration lists the extension (``supported_extensions``).  An
extension that is not critical, or critical only for the other step, changes nothing.

Two MTAs on loopback (:mod:`tests.support.sites`): A's messages are transferred into B by
hand (:func:`~tests.support.sites.transfer_as_a`) with the extensions each case needs; B
either delivers to Jones, or relays back to A (B routes A's domain to A, where the
message, having passed A already, is non-delivered as a loop), or non-delivers.  Every
report comes back to Smith at A.
"""

from __future__ import annotations

import dataclasses
import logging

import pytest

from mta.intake.routing import IMPLEMENTED_EXTENSIONS, extension_name
from p1.mts.envelope import Message, Report, decode_mts_apdu, encode_mts_apdu
from p1.mts.extensions import ExtensionField, ExtensionType, StandardExtension
from p1.mts.fields import Criticality
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason, NonDeliveryReport
from tests.support.sites import A, B, Lab, eventually, message_from_a, transfer_as_a

SMITH_AT_A = f"{A.domain};O=HQ;S=Smith"
JONES_AT_B = f"{B.domain};O=HQ;S=Jones"
SOMEONE_AT_A = f"{A.domain};O=HQ;S=Brown"
"""A recipient B relays to A."""
SECURITY_LABEL = int(StandardExtension.MESSAGE_SECURITY_LABEL)
"""A standard extension this MTA does not implement."""
UNKNOWN_STANDARD = 99
PRIVATE = "1.2.826.0.1.4242.1"
FOR_DELIVERY = Criticality(for_delivery=True)
FOR_TRANSFER = Criticality(for_transfer=True)
NULL = b"\x05\x00"


def with_extension(
    apdu: bytes, ext_type: ExtensionType, criticality: Criticality | None, *, per_recipient: bool
) -> bytes:
    """``apdu`` (a message) carrying one more extension, in its envelope or in its only
    recipient's fields."""
    message = decode_mts_apdu(apdu)
    assert isinstance(message, Message)
    extension = ExtensionField(type=ext_type, criticality=criticality, value=NULL)
    envelope = message.envelope
    if per_recipient:
        (recipient,) = envelope.recipients
        extensions = (*recipient.extensions, extension)
        recipients = (dataclasses.replace(recipient, extensions=extensions),)
        envelope = dataclasses.replace(envelope, recipients=recipients)
    else:
        envelope = dataclasses.replace(envelope, extensions=(*envelope.extensions, extension))
    return encode_mts_apdu(Message(envelope=envelope, content=message.content))


async def report_at_a(lab: Lab) -> NonDeliveryReport:
    """The one report Smith at A received: its only recipient's non-delivery."""
    (report,) = await eventually(
        lambda: lab.a.reports(SMITH_AT_A),
        lambda found: len(found) == 1,
        what="a report to Smith at A",
    )
    assert isinstance(report, Report)
    (recipient,) = report.content.recipients
    outcome = recipient.last_trace_information.report
    assert isinstance(outcome, NonDeliveryReport), outcome
    return outcome


NOT_SUPPORTED = NonDeliveryReport(
    reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
    diagnostic_code=NonDeliveryDiagnostic.UNSUPPORTED_CRITICAL_FUNCTION,
)
"""What X.411 9.1 prescribes for an unsupported critical extension."""


LOOPED = NonDeliveryReport(
    reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
    diagnostic_code=NonDeliveryDiagnostic.LOOP_DETECTED,
)
"""What A reports of a message B relayed back to it: B did transfer it."""


async def delivered_at_b(lab: Lab) -> None:
    await eventually(
        lambda: lab.b.inbox(JONES_AT_B), lambda found: len(found) == 1, what="Jones's at B"
    )


# --- delivery ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("ext_type", [SECURITY_LABEL, UNKNOWN_STANDARD, PRIVATE])
@pytest.mark.parametrize("per_recipient", [False, True], ids=["envelope", "per-recipient"])
async def test_an_unimplemented_extension_critical_for_delivery_is_non_delivered(
    lab: Lab, ext_type: ExtensionType, per_recipient: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400.queue")
    await lab.start()
    apdu = message_from_a("critical-delivery", JONES_AT_B)
    await transfer_as_a(
        lab.b, with_extension(apdu, ext_type, FOR_DELIVERY, per_recipient=per_recipient)
    )
    assert await report_at_a(lab) == NOT_SUPPORTED
    assert await lab.b.inbox(JONES_AT_B) == []
    why = f"{extension_name(ext_type)} is critical for delivery, and not supported"
    lines = [r.getMessage() for r in caplog.records if r.name == "aiox400.queue"]
    assert [line for line in lines if "critical-delivery" in line and why in line], lines


@pytest.mark.parametrize(
    "criticality", [None, Criticality(), FOR_TRANSFER], ids=["absent", "none", "for-transfer"]
)
async def test_an_extension_not_critical_for_delivery_is_delivered(
    lab: Lab, criticality: Criticality | None
) -> None:
    await lab.start()
    apdu = message_from_a("not-critical", JONES_AT_B)
    await transfer_as_a(
        lab.b, with_extension(apdu, UNKNOWN_STANDARD, criticality, per_recipient=False)
    )
    await delivered_at_b(lab)
    assert await lab.a.reports(SMITH_AT_A) == []


async def test_an_extension_the_operator_declares_supported_is_delivered(lab: Lab) -> None:
    lab.b.settings["supported_extensions"] = [SECURITY_LABEL, PRIVATE]
    await lab.start()
    for ext_type in (SECURITY_LABEL, PRIVATE):
        apdu = message_from_a(f"declared-{ext_type}", JONES_AT_B)
        await transfer_as_a(
            lab.b, with_extension(apdu, ext_type, FOR_DELIVERY, per_recipient=False)
        )
    await eventually(
        lambda: lab.b.inbox(JONES_AT_B), lambda found: len(found) == 2, what="both at B"
    )
    assert await lab.a.reports(SMITH_AT_A) == []


async def test_an_implemented_extension_critical_for_delivery_is_delivered(lab: Lab) -> None:
    assert StandardExtension.CONTENT_CORRELATOR in IMPLEMENTED_EXTENSIONS
    await lab.start()
    apdu = message_from_a("implemented", JONES_AT_B)
    ext_type = int(StandardExtension.CONTENT_CORRELATOR)
    correlated = with_extension(apdu, ext_type, FOR_DELIVERY, per_recipient=False)
    await transfer_as_a(lab.b, correlated)
    await delivered_at_b(lab)


# --- transfer ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("ext_type", [UNKNOWN_STANDARD, PRIVATE])
async def test_an_unimplemented_extension_critical_for_transfer_is_not_relayed(
    lab: Lab, ext_type: ExtensionType
) -> None:
    await lab.start()
    apdu = message_from_a("critical-transfer", SOMEONE_AT_A)
    await transfer_as_a(lab.b, with_extension(apdu, ext_type, FOR_TRANSFER, per_recipient=True))
    assert await report_at_a(lab) == NOT_SUPPORTED


@pytest.mark.slow
async def test_a_peer_that_supports_the_extension_is_given_the_message(lab: Lab) -> None:
    lab.b.settings["peers"][0]["supported_extensions"] = [UNKNOWN_STANDARD]
    await lab.start()
    apdu = message_from_a("peer-supports", SOMEONE_AT_A)
    await transfer_as_a(
        lab.b, with_extension(apdu, UNKNOWN_STANDARD, FOR_TRANSFER, per_recipient=False)
    )
    assert await report_at_a(lab) == LOOPED  # B transferred it; A saw itself in the trace


@pytest.mark.slow
async def test_critical_for_delivery_only_does_not_stop_a_transfer(lab: Lab) -> None:
    await lab.start()
    apdu = message_from_a("relayed", SOMEONE_AT_A)
    await transfer_as_a(
        lab.b, with_extension(apdu, UNKNOWN_STANDARD, FOR_DELIVERY, per_recipient=False)
    )
    assert await report_at_a(lab) == LOOPED


def test_extension_names_for_the_log() -> None:
    assert extension_name(SECURITY_LABEL) == "standard-extension 20 (message-security-label)"
    assert extension_name(UNKNOWN_STANDARD) == "standard-extension 99"
    assert extension_name(PRIVATE) == f"private-extension {PRIVATE}"
    plq = "1.3.26.0.4406.0.8.0"
    assert extension_name(plq) == f"private-extension {plq} (priority-level-qualifier)"
