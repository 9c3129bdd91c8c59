"""Recipients are checked against the local users unless the file says to accept any.

- ``x400-mta`` with a file that neither lists ``local_users`` nor sets
  ``accept_any_recipient = true`` does not start: exit 3, one line naming the file and
  the key, and no state directory made.
- Site B with the users of ``config/examples/site-b.toml``: a message from site A to a
  mistyped name at B comes back as a non-delivery report (unable-to-transfer,
  unrecognised-OR-name), not a delivery report, and B makes no mailbox for it; the same
  user's name in other letters' case is delivered (names match case-folded, X.411).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from config.loader import load_config
from mta.daemon import EXIT_CONFIG
from p1.mts.orname import format_orname
from p1.mts.report import (
    DeliveryReport,
    NonDeliveryDiagnostic,
    NonDeliveryReason,
    NonDeliveryReport,
    Report,
)
from tests.support.process import DEADLINE, MTA
from tests.support.sites import Lab, eventually, solo_site

EXAMPLES = Path(__file__).resolve().parents[2] / "config" / "examples"

pytestmark = pytest.mark.slow  # a daemon process; two sites and a report's round trip


def test_a_file_without_local_users_or_accept_any_recipient_does_not_start(
    tmp_path: Path,
) -> None:
    site = solo_site(tmp_path / "a")
    del site.settings["accept_any_recipient"]
    config = site.write()
    done = subprocess.run(
        [str(MTA), "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == EXIT_CONFIG, done.stderr
    assert done.stderr.startswith(f"x400-mta: {config}: local_users is missing: expected ")
    assert "accept_any_recipient = true" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert not (site.directory / "state").exists()


def _outcome(report: Report) -> DeliveryReport | NonDeliveryReport:
    (recipient,) = report.content.recipients
    return recipient.last_trace_information.report


async def test_a_mistyped_recipient_at_a_site_with_the_example_users_is_non_delivered(
    lab: Lab,
) -> None:
    users = load_config(EXAMPLES / "site-b.toml").local_users
    assert users, "config/examples/site-b.toml lists its users"
    lab.b.list_users(*(format_orname(user) for user in users))
    await lab.start()
    smith = lab.a.address("Smith")
    jones = lab.b.address("Jones")
    assert jones in lab.b.settings["local_users"]
    typo = lab.b.address("Jnoes")
    (mistyped,) = await lab.a.send(smith, typo, delivery_report=True)
    (shouted,) = await lab.a.send(smith, jones.upper(), delivery_report=True)

    reports = await eventually(
        lambda: lab.a.reports(smith), lambda found: len(found) == 2, what="two reports at A"
    )
    outcomes = {r.content.subject_identifier.text: _outcome(r) for r in reports}
    assert outcomes[mistyped] == NonDeliveryReport(
        reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
        diagnostic_code=NonDeliveryDiagnostic.UNRECOGNISED_OR_NAME,
    )
    assert isinstance(outcomes[shouted], DeliveryReport)
    assert await lab.b.inbox(typo) == []
    assert len(await lab.b.inbox(jones)) == 1
