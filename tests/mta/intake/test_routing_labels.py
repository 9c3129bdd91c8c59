"""Security labels judged where a recipient's route goes (X.411 8.5.9): the clearance of
its mailbox or of its peer's link, with a policy; nothing judged without one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from config.loader import load_config
from config.schema import MtaConfig
from mta.intake.routing import LabelDecision, LocalRoute, NoRoute, PeerRoute, Router
from p1.mts.extensions import ExtensionField, StandardExtension
from p1.mts.fields import Criticality
from p1.mts.orname import parse_orname
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason
from p1.mts.security_label import SecurityLabel, security_label_extension
from tests.p1.security.policies import EXAMPLE_SPIF, label

ALICE = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Alice"  # cleared SECRET, GBR
BOB = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Bob"  # the default: UNCLASSIFIED
FAR = "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones"  # behind MTA-B: CONFIDENTIAL
HEAD = """name = "MTA-A"
global_domain = "C=GB;ADMD= ;PRMD=SITEA"
accept_any_recipient = true

[[peers]]
name = "MTA-B"
host = "127.0.0.1"
routes = ["C=GB;ADMD= ;PRMD=SITEB"]
{clearance}
[[peers.slots]]
port = 1102
precedences = ["override", "flash", "immediate", "priority", "routine", "deferred"]
"""
SECURITY = f"""
[security]
policy = "policy.xml"
default_clearance = "basic"
{{default_label}}
[[security.clearances]]
name = "secret"
classification = "SECRET"
categories = ["GBR"]
users = ["{ALICE}"]

[[security.clearances]]
name = "link"
classification = "CONFIDENTIAL"
categories = ["GBR"]

[[security.clearances]]
name = "basic"
classification = "UNCLASSIFIED"
"""


def configure(tmp_path: Path, *, security: bool = True, default_label: str = "") -> MtaConfig:
    shutil.copy(EXAMPLE_SPIF, tmp_path / "policy.xml")
    text = HEAD.format(clearance='clearance = "link"' if security else "")
    if security:
        text += SECURITY.format(default_label=default_label)
    (tmp_path / "mta.toml").write_text(text)
    return load_config(tmp_path / "mta.toml")


def judge(
    config: MtaConfig, recipient: str, extensions: tuple[ExtensionField, ...]
) -> tuple[object, LabelDecision | None]:
    router = Router(config)
    name = parse_orname(recipient)
    return router.judge(router.route(name), extensions, name)


def labelled(classification: str, *categories: str) -> tuple[ExtensionField, ...]:
    return (security_label_extension(label(classification, *categories)),)


REFUSED = NoRoute(
    reason=NonDeliveryReason.UNABLE_TO_TRANSFER,
    diagnostic=NonDeliveryDiagnostic.SECURE_MESSAGING_ERROR,
)


@pytest.mark.parametrize(
    ("recipient", "extensions", "allowed", "reason"),
    [
        (ALICE, labelled("SECRET", "GBR"), True, "cleared for SECRET"),
        (BOB, labelled("SECRET", "GBR"), False, "not cleared for SECRET"),
        (BOB, labelled("UNCLASSIFIED"), True, "cleared for UNCLASSIFIED"),
        (FAR, labelled("CONFIDENTIAL", "USA", "GBR"), True, "cleared for CONFIDENTIAL"),
        (FAR, labelled("SECRET", "GBR"), False, "not cleared for SECRET"),
        (FAR, labelled("CONFIDENTIAL", "USA"), False, "not cleared for any of Releasable To"),
    ],
)
def test_each_recipient_is_judged_by_where_it_goes(
    tmp_path: Path,
    recipient: str,
    extensions: tuple[ExtensionField, ...],
    allowed: bool,
    reason: str,
) -> None:
    route, decision = judge(configure(tmp_path), recipient, extensions)
    assert decision is not None
    assert (decision.allowed, decision.reason) == (allowed, reason)
    assert decision.peer == ("MTA-B" if recipient == FAR else None)
    if allowed:
        assert route == (PeerRoute("MTA-B") if recipient == FAR else LocalRoute())
    else:
        assert isinstance(route, NoRoute)
        assert (route.reason, route.diagnostic) == (REFUSED.reason, REFUSED.diagnostic)
        where = "the link to MTA-B" if recipient == FAR else "the mailbox"
        assert route.why == f"security label {decision.marking} refused for {where}: {reason}"


def test_the_decision_carries_the_display_marking(tmp_path: Path) -> None:
    _, decision = judge(configure(tmp_path), ALICE, labelled("SECRET", "GBR"))
    assert decision is not None and decision.marking == "EXAMPLE SECRET REL TO GBR"


def test_an_unlabelled_message_is_judged_by_the_default_label(tmp_path: Path) -> None:
    plain = configure(tmp_path)
    assert judge(plain, BOB, ()) == (LocalRoute(), None)
    strict = configure(tmp_path, default_label='default_label = "CONFIDENTIAL"')
    route, decision = judge(strict, BOB, ())
    assert isinstance(route, NoRoute) and decision is not None
    assert (decision.allowed, decision.marking) == (False, "EXAMPLE CONFIDENTIAL")


def test_an_unreadable_label_goes_nowhere(tmp_path: Path) -> None:
    broken = ExtensionField(
        type=StandardExtension.MESSAGE_SECURITY_LABEL,
        criticality=Criticality(for_delivery=True),
        value=b"\x31\x03\x02\x01",
    )
    route, decision = judge(configure(tmp_path), ALICE, (broken,))
    assert isinstance(route, NoRoute) and decision is not None
    assert decision.reason.startswith("the label does not decode (")


def test_a_label_of_another_policy_goes_nowhere(tmp_path: Path) -> None:
    other = (security_label_extension(SecurityLabel(policy="1.2.3", classification=1)),)
    route, decision = judge(configure(tmp_path), ALICE, other)
    assert isinstance(route, NoRoute) and decision is not None
    assert decision.reason == "the label is of policy 1.2.3, not 1.3.6.1.4.1.32473.1"


def test_with_a_policy_the_critical_label_is_supported(tmp_path: Path) -> None:
    """The extension marked critical for delivery and transfer (as STANAG 4406 traffic
    usually is) is acted on, not refused as unsupported."""
    critical = (
        security_label_extension(
            label("UNCLASSIFIED"), Criticality(for_delivery=True, for_transfer=True)
        ),
    )
    config = configure(tmp_path)
    assert judge(config, BOB, critical)[0] == LocalRoute()
    assert judge(config, FAR, critical)[0] == PeerRoute("MTA-B")


def test_without_a_policy_nothing_is_judged(tmp_path: Path) -> None:
    route, decision = judge(configure(tmp_path, security=False), ALICE, labelled("TOP SECRET"))
    assert decision is None
    assert isinstance(route, NoRoute)  # critical for delivery, and not supported
    assert route.diagnostic is NonDeliveryDiagnostic.UNSUPPORTED_CRITICAL_FUNCTION


def test_two_labels_are_refused_whichever_comes_first(tmp_path: Path) -> None:
    config = configure(tmp_path)
    low, high = labelled("UNCLASSIFIED")[0], labelled("SECRET", "GBR")[0]
    router = Router(config)
    name = parse_orname(BOB)
    # One router for all: a verdict remembered for one label must not answer for two.
    assert router.judge(router.route(name), (low,), name)[0] == LocalRoute()
    for extensions in ((low, high), (high, low)):
        route, decision = router.judge(router.route(name), extensions, name)
        assert isinstance(route, NoRoute) and decision is not None
        assert "2 message-security-label extensions" in decision.reason
