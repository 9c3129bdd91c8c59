"""``[limits] max_message_size`` between live daemons and for local submission.

B takes at most 64 KiB in one transfer; A sends Bob at B a message of about 100 KB.  B
does not abort: it reads the transfer to its end keeping the first 64 KiB, takes
responsibility and non-delivers the message with unable-to-transfer, content-too-long
(X.411 8.3.1.2.1.9, 8.3.1.2.1.10), so A marks it transferred (nothing waits to be tried
again) and Smith gets the report; one WARNING line at B says why, one at A names the
report.  A local submission over A's own limit is refused with the limit in the error and
nothing queued; a body larger than the local API takes ends in a clear error, never a
broken pipe.
"""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path

import pytest

from client import x400
from client.api import ApiError, AsyncConnection, call, call_async
from mta.link import LinkError
from p1 import localapi as framing
from p1.mts.precedence import Precedence
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason, NonDeliveryReport
from tests.support import store_samples
from tests.support.sites import B, Lab, eventually, message_from_a, transfer_as_a, until

_LIMIT = 64 * 1024
B_BOB = f"{B.domain};O=HQ;S=Bob"


def _lines(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if text in r.getMessage()]


async def _waiting(lab: Lab, identifier: str) -> list[object]:
    response = await lab.a.api({"op": "messages", "limit": 1000})
    return [r for r in response["recipients"] if r["mts_identifier"] == identifier]


@pytest.mark.slow
async def test_a_message_over_the_peers_limit_comes_back_as_a_non_delivery_report(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    lab.b.settings["limits"] = {"max_message_size": "64KiB"}
    await lab.start()
    smith, bob = lab.a.address("Smith"), lab.b.address("Bob")
    code, out, err = await lab.a.x400(
        *("send", "--socket", str(lab.a.socket), "--from", smith, "--to", bob),
        *("--precedence", Precedence.FLASH.label, "--subject", "big", "--size", "100k"),
    )
    assert code == x400.EXIT_OK, err
    identifier = out.strip()
    reports = await eventually(
        lambda: lab.a.reports(smith), lambda found: len(found) == 1, what="the NDR at A"
    )
    assert reports[0].content.subject_identifier.text == identifier
    (recipient,) = reports[0].content.recipients
    outcome = recipient.last_trace_information.report
    assert isinstance(outcome, NonDeliveryReport)
    assert outcome.reason_code == NonDeliveryReason.UNABLE_TO_TRANSFER
    assert outcome.diagnostic_code == NonDeliveryDiagnostic.CONTENT_TOO_LONG
    assert await lab.b.inbox(bob) == []
    await eventually(lambda: _waiting(lab, identifier), lambda found: found == [], what="no retry")

    at_b = _lines(caplog, f"message {identifier} from MTA-A is ")
    assert len(at_b) == 1 and at_b[0].levelno == logging.WARNING
    assert re.search(
        rf"is \d+ octets, over max_message_size {_LIMIT}: non-delivered \(content-too-long\)",
        at_b[0].getMessage(),
    )
    at_a = _lines(caplog, f"on {identifier}, reported by MTA-B")
    assert len(at_a) == 1 and at_a[0].levelno == logging.WARNING
    assert "unable-to-transfer, content-too-long" in at_a[0].getMessage()
    assert not _lines(caplog, "transfer refused")
    assert not _lines(caplog, "aborted")
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.slow
async def test_a_delivery_report_stays_at_info(lab: Lab, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    await lab.start()
    smith, bob = lab.a.address("Smith"), lab.b.address("Bob")
    (identifier,) = await lab.a.send(smith, bob, Precedence.FLASH, delivery_report=True)
    await eventually(
        lambda: lab.a.reports(smith), lambda found: len(found) == 1, what="the delivery report"
    )
    assert not _lines(caplog, f"on {identifier}, reported by")
    assert not [
        r for r in caplog.records if r.name == "aiox400.mta" and r.levelno >= logging.WARNING
    ]


async def test_a_submission_over_the_own_limit_is_refused_and_nothing_queued(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    lab.a.settings["limits"] = {"max_message_size": "64KiB"}
    await lab.start()
    smith, bob = lab.a.address("Smith"), lab.b.address("Bob")
    code, out, err = await lab.a.x400(
        *("send", "--socket", str(lab.a.socket), "--from", smith, "--to", bob),
        *("--subject", "big", "--size", "100k"),
    )
    assert code != x400.EXIT_OK and out == ""
    assert re.fullmatch(
        rf"x400: message refused: message is \d+ octets; this MTA accepts at most {_LIMIT} "
        r"\(max_message_size\)\n",
        err,
    ), err
    assert (await lab.a.api({"op": "messages"}))["recipients"] == []
    counts = (await lab.a.api({"op": "queue"}))["counts"]
    assert counts == []
    (identifier,) = await lab.a.send(smith, bob)  # a small one still goes
    assert identifier


async def test_a_body_over_the_default_limit_is_refused_in_the_same_words(
    lab: Lab, tmp_path: Path
) -> None:
    await lab.a.start()
    body = tmp_path / "body.bin"
    with body.open("wb") as file:
        file.truncate(70 * 1000 * 1000)
    smith, bob = lab.a.address("Smith"), lab.b.address("Bob")
    code, out, err = await lab.a.x400(
        *("send", "--socket", str(lab.a.socket), "--from", smith, "--to", bob),
        *("--body-file", str(body)),
    )
    assert code == x400.EXIT_FAILED and out == ""
    assert re.fullmatch(
        r"x400: message refused: message is 70000\d\d\d octets; this MTA accepts at most "
        r"67108864 \(max_message_size\)\n",
        err,
    ), err
    assert (await lab.a.api({"op": "messages"}))["recipients"] == []


@pytest.mark.parametrize(
    ("apdu", "why"),
    [
        (store_samples.report_apdu("r1"), "the MTS-APDU is a report, not a message"),
        (store_samples.probe_apdu("p1"), "the MTS-APDU is a probe, not a message"),
        (
            message_from_a("too-long-envelope", B_BOB),
            "MessageTransferEnvelope: the envelope does not end within the first",
        ),
    ],
    ids=["report", "probe", "envelope-cut"],
)
async def test_what_cannot_be_reported_on_is_refused_with_one_warning(
    lab: Lab, caplog: pytest.LogCaptureFixture, apdu: bytes, why: str
) -> None:
    caplog.set_level(logging.INFO)
    lab.b.settings["limits"] = {"max_message_size": 100}
    await lab.b.start()
    with pytest.raises(LinkError):
        await transfer_as_a(lab.b, apdu)
    await until(lambda: bool(_lines(caplog, "transfer refused, aborting")), what="B's refusal")
    refused = _lines(caplog, "transfer refused, aborting")
    assert len(refused) == 1
    line = refused[0].getMessage()
    assert refused[0].levelno == logging.WARNING
    assert re.search(r"127\.0\.0\.1:\d+: transfer refused, aborting: transfer of \d+ octets", line)
    assert "is over max_message_size 100, and " in line and why in line, line
    assert await lab.b.inbox(B_BOB) == []


async def test_content_over_max_message_size_is_refused_and_the_connection_kept(
    lab: Lab,
) -> None:
    lab.a.settings["limits"] = {"max_message_size": "4KiB"}
    await lab.a.start()
    request = {"op": "submit", "originator": lab.a.address("Smith"), "recipients": []}
    refusal = (
        "message refused: message is 65536 octets; this MTA accepts at most 4096 (max_message_size)"
    )
    connection = await AsyncConnection.open(lab.a.socket)
    try:
        with pytest.raises(ApiError) as caught:
            await connection.call(request, bytes(65536))
        assert str(caught.value) == refusal
        answer, _ = await connection.call({"op": "status"})  # (the content was read)
        assert answer["ok"] is True
    finally:
        await connection.close()
    with pytest.raises(ApiError) as caught:
        await asyncio.to_thread(call, lab.a.socket, request, bytes(65536))
    assert str(caught.value) == refusal
    assert (await lab.a.api({"op": "queue"}))["counts"] == []


async def test_the_async_client_refuses_content_over_what_a_request_may_announce(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    await lab.a.start()
    monkeypatch.setattr(framing, "MAX_PAYLOAD", 1000)
    request = {"op": "submit", "originator": lab.a.address("Smith"), "recipients": []}
    with pytest.raises(ApiError) as caught:
        await call_async(lab.a.socket, request, bytes(1001))
    assert str(caught.value) == (
        "message refused: message is 1001 octets; this MTA accepts at most 1000 (max_message_size)"
    )


async def test_a_message_over_the_limit_sent_again_is_confirmed_and_reported_on_once(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    """A peer whose confirmation was lost sends the same message again: B confirms it
    again and queues no second report (the recipients' duplicate-detection keys were
    recorded with the first one)."""
    caplog.set_level(logging.INFO)
    lab.b.settings["limits"] = {"max_message_size": 1024}
    await lab.b.start()
    apdu = message_from_a("twice-too-long", B_BOB, subject="x" * 4000)
    assert len(apdu) > 4000
    await transfer_as_a(lab.b, apdu)
    await transfer_as_a(lab.b, apdu)  # (no LinkError: confirmed both times)
    queued = (await lab.b.api({"op": "messages", "limit": 1000}))["recipients"]
    to_smith = [r for r in queued if "s=smith" in r["recipient"].lower()]
    assert len(to_smith) == 1, queued
    lines = [r.getMessage() for r in _lines(caplog, "non-delivered (content-too-long)")]
    assert len(lines) == 2, lines
    assert lines[0].endswith("non-delivery report queued")
    assert lines[1].endswith("no report: a copy received again, reported on when first received")
    assert await lab.b.inbox(B_BOB) == []
