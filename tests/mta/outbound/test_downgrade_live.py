"""Down-grading between live daemons: A calls B as a 1984 MTA (X.419 Annex B).

A's peer B is configured ``protocol = "1984"``: A speaks X.410-1984 mode to it with
applicationProtocol 1 and down-grades what it transfers.  A STANAG 4406 (P772) message
has an extended (OBJECT IDENTIFIER) content type that 1984 cannot carry: A non-delivers
it with unable-to-transfer / unable-to-downgrade and Smith gets the report; B never sees
it.  A P2 message loses its envelope extensions (precedence, A's internal trace), goes
as content type 2 (the 1984 IPM, X.420 1984) and reaches Bob, who reads it; B's delivery
report comes back to Smith.  A P2 message with a body part X.420 (1984) lacks (general
text, for text beyond ASCII) is non-delivered like the P772 one, and the log names it.
"""

from __future__ import annotations

import logging

import pytest

from p1.mts.envelope import Message, decode_mts_apdu
from p1.mts.precedence import Precedence
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason, NonDeliveryReport
from tests.support.sites import Lab, eventually

pytestmark = pytest.mark.slow  # two daemons, a second or more each


def _a_calls_b_as_1984(lab: Lab) -> None:
    lab.a.settings["peers"][0]["protocol"] = "1984"


async def test_a_p772_message_cannot_be_down_graded_and_is_non_delivered(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    _a_calls_b_as_1984(lab)
    await lab.start()
    smith, bob = lab.a.address("Smith"), lab.b.address("Bob")
    (identifier,) = await lab.a.send(smith, bob, Precedence.FLASH)
    reports = await eventually(
        lambda: lab.a.reports(smith), lambda found: len(found) == 1, what="the NDR"
    )
    assert reports[0].content.subject_identifier.text == identifier
    (recipient,) = reports[0].content.recipients
    outcome = recipient.last_trace_information.report
    assert isinstance(outcome, NonDeliveryReport)
    assert outcome.reason_code == NonDeliveryReason.UNABLE_TO_TRANSFER
    assert outcome.diagnostic_code == NonDeliveryDiagnostic.UNABLE_TO_DOWNGRADE
    assert await lab.b.inbox(bob) == []
    lines = [r for r in caplog.records if f"non-delivered {identifier}" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    assert "extended content type" in lines[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info]


async def test_a_p2_message_is_down_graded_delivered_and_reported(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    _a_calls_b_as_1984(lab)
    await lab.start()
    smith, bob = lab.a.address("Smith"), lab.b.address("Bob")
    code, out, err = await lab.a.x400(
        *("send", "--socket", str(lab.a.socket), "--from", smith, "--to", bob, "--p2"),
        *("--precedence", "immediate", "--subject", "old", "--body", "hi", "-r"),
    )
    assert code == 0, err
    identifier = out.strip()

    async def inbox() -> list[dict[str, object]]:
        return await lab.b.inbox(bob)

    (entry,) = await eventually(inbox, lambda found: len(found) == 1, what="delivered to Bob")
    _, apdu = await lab.b.read(bob, int(str(entry["id"])))
    message = decode_mts_apdu(apdu)
    assert isinstance(message, Message)
    assert message.envelope.mts_identifier.text == identifier
    assert message.envelope.content_type == 2
    assert entry["subject"] == "old"
    code, out, err = await lab.b.x400(
        "read", "--socket", str(lab.b.socket), "--user", bob, str(entry["id"])
    )
    assert code == 0, err
    assert "subject:        old" in out
    assert out.endswith("\n\nhi\n")  # the body, after the heading
    down = [r.getMessage() for r in caplog.records if "down-graded for MTA-B" in r.getMessage()]
    assert len(down) == 1 and identifier in down[0]
    assert "interpersonal-messaging-1988 (22) as 1984 (2)" in down[0]
    reports = await eventually(
        lambda: lab.a.reports(smith), lambda found: len(found) == 1, what="the delivery report"
    )
    assert reports[0].content.recipients[0].delivered
    connected = [r.getMessage() for r in caplog.records if "MTA-B/" in r.getMessage()]
    assert any("X.410-1984 mode, P1 1984" in line for line in connected)


async def test_a_p2_message_with_a_1988_body_part_is_non_delivered_naming_it(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    _a_calls_b_as_1984(lab)
    await lab.start()
    smith, bob = lab.a.address("Smith"), lab.b.address("Bob")
    code, out, err = await lab.a.x400(
        *("send", "--socket", str(lab.a.socket), "--from", smith, "--to", bob, "--p2"),
        *("--subject", "umlaut", "--body", "Gr\u00fc\u00dfe"),
    )
    assert code == 0, err
    identifier = out.strip()
    reports = await eventually(
        lambda: lab.a.reports(smith), lambda found: len(found) == 1, what="the NDR"
    )
    assert reports[0].content.subject_identifier.text == identifier
    outcome = reports[0].content.recipients[0].last_trace_information.report
    assert isinstance(outcome, NonDeliveryReport)
    assert outcome.reason_code == NonDeliveryReason.UNABLE_TO_TRANSFER
    assert outcome.diagnostic_code == NonDeliveryDiagnostic.UNABLE_TO_DOWNGRADE
    assert await lab.b.inbox(bob) == []
    lines = [r for r in caplog.records if f"non-delivered {identifier}" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    assert "X.420 (1984) lacks body[0]: extended" in lines[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info]
