"""``x400 send --label`` against a live site with the test SPIF: the MTA looks the names
up in its policy and writes the label into the envelope, and the label is then checked
as any other: delivered to the mailbox cleared for it, non-delivered with
secure-messaging-error to the one that is not.  A name the policy does not have, or no
policy at all, refuses the message and queues nothing.  ``x400ctl show`` of a held
labelled message gives its display marking, as ``x400 read`` does.

Site A runs with the policy; its peer B is down, so what A sends to B waits."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from client import x400, x400ctl
from p1.mts.envelope import Message, decode_mts_apdu
from p1.mts.orname import parse_orname
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason, NonDeliveryReport
from p1.mts.security_label import SecurityLabel, message_security_label
from tests.mta.test_security_labels_live import clearance
from tests.p1.security.policies import EXAMPLE_SPIF, label
from tests.support.sites import Lab, Site, eventually, solo_site

pytestmark = pytest.mark.slow  # a live site

JONES_AT_B = "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones"


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    """Site A with the policy: Smith and Alice cleared SECRET, every other mailbox
    UNCLASSIFIED, the link to B SECRET; B configured but down."""
    made = Lab.create(tmp_path)
    spif = tmp_path / "policy.xml"
    shutil.copy(EXAMPLE_SPIF, spif)
    a = made.a
    a.settings["security"] = {
        "policy": str(spif),
        "default_clearance": "basic",
        "clearances": [
            clearance("secret", "SECRET", a.address("Smith"), a.address("Alice")),
            clearance("basic", "UNCLASSIFIED"),
            clearance("link", "SECRET"),
        ],
    }
    a.settings["peers"][0]["clearance"] = "link"
    await a.start()
    try:
        yield made
    finally:
        await made.close()


async def send(site: Site, *argv: str) -> tuple[int, str, str]:
    """``x400 send --socket <site's> --from Smith ARGV...``."""
    smith = site.address("Smith")
    return await site.x400("send", "--socket", str(site.socket), "--from", smith, *argv)


async def test_a_label_by_name_goes_to_the_cleared_and_not_to_the_uncleared(lab: Lab) -> None:
    a = lab.a
    alice, bob, smith = a.address("Alice"), a.address("Bob"), a.address("Smith")

    code, out, err = await send(a, "--to", alice, "--to", bob, "--label", "secret", "-s", "x")
    assert code == x400.EXIT_OK, err
    identifier = out.strip()

    (delivered,) = await eventually(
        lambda: a.inbox(alice), lambda found: len(found) == 1, what="the message at Alice"
    )
    assert delivered["mts_identifier"] == identifier
    (report,) = await eventually(
        lambda: a.reports(smith), lambda found: len(found) == 1, what="the NDR at Smith"
    )
    refused = {
        r.actual_recipient_name.canonical: r.last_trace_information.report
        for r in report.content.recipients
    }
    assert refused == {
        parse_orname(bob).canonical: NonDeliveryReport(
            reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
            diagnostic_code=NonDeliveryDiagnostic.SECURE_MESSAGING_ERROR,
        )
    }
    assert await a.inbox(bob) == []

    summary, apdu = await a.read(alice, delivered["id"])
    message = decode_mts_apdu(apdu)
    assert isinstance(message, Message)
    assert message_security_label(message.envelope.extensions) == label("SECRET")
    assert summary["security_marking"] == "EXAMPLE SECRET"


async def test_a_name_the_policy_does_not_have_refuses_the_message(
    lab: Lab, tmp_path: Path
) -> None:
    a = lab.a
    alice = a.address("Alice")

    code, out, err = await send(a, "--to", alice, "--label", "COSMIC", "-s", "x")
    assert (code, out) == (x400.EXIT_FAILED, "")
    assert "classification 'COSMIC' is not in policy EXAMPLE" in err
    code, out, err = await send(a, "--to", JONES_AT_B, "--label", "SECRET", "--category", "MARS")
    assert (code, out) == (x400.EXIT_FAILED, "")
    assert (
        err == "x400: message refused: security label: category 'MARS' is not in policy EXAMPLE\n"
    )

    assert (await a.api({"op": "messages"}))["recipients"] == []
    assert await a.inbox(alice) == []

    plain = solo_site(tmp_path / "plain")
    await plain.start()
    try:
        code, out, err = await send(plain, "--to", plain.address("Alice"), "--label", "SECRET")
        assert (code, out) == (x400.EXIT_FAILED, "")
        assert "no security policy is configured" in err
        assert await plain.inbox(plain.address("Alice")) == []
    finally:
        await plain.stop()


async def test_show_of_a_held_labelled_message_gives_its_marking(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    a = lab.a
    argv = ["--to", JONES_AT_B, "--label", "SECRET", "--category", "GBR"]
    code, out, err = await send(a, *argv, "--privacy-mark", "EYES ONLY", "-s", "held")
    assert code == x400.EXIT_OK, err
    identifier = out.strip()

    code = await asyncio.to_thread(x400ctl.main, ["hold", identifier, "--socket", str(a.socket)])
    assert code == x400ctl.EXIT_OK, capsys.readouterr().err
    capsys.readouterr()
    code = await asyncio.to_thread(x400ctl.main, ["show", identifier, "--socket", str(a.socket)])
    shown = capsys.readouterr()
    assert code == x400ctl.EXIT_OK, shown.err
    lines = shown.out.splitlines()
    assert "marking:        EXAMPLE SECRET REL TO GBR" in lines
    expected = SecurityLabel(
        policy=label("SECRET").policy,
        classification=4,
        privacy_mark="EYES ONLY",
        categories=label("SECRET", "GBR").categories,
    )
    assert f"security label: {expected.describe()}" in lines
    # The queue shows a recipient as the envelope gave it.
    (recipient,) = (line for line in lines if line.lstrip().startswith(JONES_AT_B))
    assert recipient.split()[-5:-3] == ["held", "MTA-B"]
