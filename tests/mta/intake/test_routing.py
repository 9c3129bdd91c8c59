"""Routing by O/R address prefix over the example two-site configuration (its
``local_users`` replaced by ``accept_any_recipient`` where any name must be local)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from config.loader import load_config
from config.schema import MtaConfig
from mta.intake.routing import UNKNOWN_USER, LocalRoute, NoRoute, PeerRoute, Router
from p1.mts.orname import parse_orname
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason

EXAMPLES = Path(__file__).resolve().parents[3] / "config" / "examples"


@pytest.fixture(scope="module")
def example_a() -> MtaConfig:
    return load_config(EXAMPLES / "site-a.toml")


@pytest.fixture(scope="module")
def site_a(example_a: MtaConfig) -> MtaConfig:
    return replace(example_a, local_users=None, accept_any_recipient=True)


@pytest.mark.parametrize(
    ("recipient", "expected"),
    [
        ("C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith", LocalRoute()),
        ("C=GB;ADMD= ;PRMD=SiteA;O=HQ;S=Smith", LocalRoute()),  # compared case-folded
        ("C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones", PeerRoute("MTA-B")),
        ("C=GB;ADMD= ;PRMD=SITEC;O=HQ;S=Brown", NoRoute()),
        ("C=FR;ADMD= ;PRMD=SITEA;S=Martin", NoRoute()),
    ],
)
def test_route_by_prefix(site_a: MtaConfig, recipient: str, expected: object) -> None:
    assert Router(site_a).route(parse_orname(recipient)) == expected


def test_no_route_carries_the_non_delivery_codes() -> None:
    assert NoRoute().reason is NonDeliveryReason.UNABLE_TO_TRANSFER
    assert NoRoute().diagnostic is NonDeliveryDiagnostic.UNRECOGNISED_OR_NAME


def test_default_route_takes_what_no_prefix_matches(site_a: MtaConfig) -> None:
    router = Router(replace(site_a, default_route="MTA-B"))
    assert router.route(parse_orname("C=US;ADMD= ;PRMD=X;S=Doe")) == PeerRoute("MTA-B")
    assert router.route(parse_orname("C=GB;ADMD= ;PRMD=SITEA;S=Smith")) == LocalRoute()


def test_longest_prefix_wins(site_a: MtaConfig) -> None:
    # A more specific local prefix inside the peer's PRMD keeps that O local.
    (local,) = site_a.local_domains
    peer_prefix = site_a.peers[0].routes[0]
    specific = replace(
        peer_prefix, text=peer_prefix.text + ";O=LOCALHQ", key=(*peer_prefix.key, "localhq")
    )
    router = Router(replace(site_a, local_domains=(local, specific)))
    assert router.route(parse_orname("C=GB;ADMD= ;PRMD=SITEB;O=LocalHQ;S=X")) == LocalRoute()
    assert router.route(parse_orname("C=GB;ADMD= ;PRMD=SITEB;O=Other;S=X")) == PeerRoute("MTA-B")


def test_split_groups_recipients_by_route_in_order(site_a: MtaConfig) -> None:
    names = [
        "C=GB;ADMD= ;PRMD=SITEB;S=B1",
        "C=GB;ADMD= ;PRMD=SITEA;S=A1",
        "C=GB;ADMD= ;PRMD=SITEB;S=B2",
        "C=GB;ADMD= ;PRMD=NOWHERE;S=N1",
    ]
    groups = Router(site_a).split(parse_orname(n) for n in names)
    assert {route: [r.canonical for r in rs] for route, rs in groups.items()} == {
        PeerRoute("MTA-B"): [
            parse_orname(names[0]).canonical,
            parse_orname(names[2]).canonical,
        ],
        LocalRoute(): [parse_orname(names[1]).canonical],
        NoRoute(): [parse_orname(names[3]).canonical],
    }


# --- local users -----------------------------------------------------------------------

USERS = ("C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith", "C=GB;ADMD= ;PRMD=SITEA;CN=Duty Officer")


def test_with_accept_any_recipient_every_name_under_a_local_domain_is_local(
    site_a: MtaConfig,
) -> None:
    assert site_a.accept_any_recipient
    router = Router(site_a)
    assert router.route(parse_orname("C=GB;ADMD= ;PRMD=SITEA;CN=anyone")) == LocalRoute()
    assert router.is_user(parse_orname("C=GB;ADMD= ;PRMD=SITEA;CN=anyone"))


@pytest.mark.parametrize(
    ("recipient", "expected"),
    [
        ("C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith", LocalRoute()),
        ("/c=gb/a= /p=SiteA/o=hq/s=SMITH/", LocalRoute()),  # compared case-folded
        ("C=GB;ADMD= ;PRMD=SITEA;CN=Duty   Officer ", LocalRoute()),  # spaces collapsed
        ("C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Jones", UNKNOWN_USER),
        ("C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith;G=John", UNKNOWN_USER),  # another name
        ("C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones", PeerRoute("MTA-B")),  # peers as before
        ("C=GB;ADMD= ;PRMD=SITEC;O=HQ;S=Brown", NoRoute()),
    ],
)
def test_with_local_users_a_name_under_a_local_domain_that_is_none_of_them_has_no_route(
    site_a: MtaConfig, recipient: str, expected: object
) -> None:
    users = tuple(parse_orname(u) for u in USERS)
    router = Router(replace(site_a, local_users=users, accept_any_recipient=False))
    assert router.route(parse_orname(recipient)) == expected


def test_the_example_lists_its_users_and_a_typo_has_no_route(example_a: MtaConfig) -> None:
    router = Router(example_a)
    assert router.route(parse_orname("C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=smith")) == LocalRoute()
    assert router.route(parse_orname("C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smiht")) == UNKNOWN_USER


def test_a_configuration_built_without_users_or_accept_any_recipient_has_no_user(
    site_a: MtaConfig,
) -> None:
    """The loader refuses such a file; built in code, it turns every local name away."""
    router = Router(replace(site_a, local_users=None, accept_any_recipient=False))
    assert router.route(parse_orname("C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith")) == UNKNOWN_USER


def test_an_unknown_local_user_gets_unrecognised_or_name() -> None:
    assert UNKNOWN_USER.reason is NonDeliveryReason.UNABLE_TO_TRANSFER
    assert UNKNOWN_USER.diagnostic is NonDeliveryDiagnostic.UNRECOGNISED_OR_NAME
    assert UNKNOWN_USER.why == "not a local user"
