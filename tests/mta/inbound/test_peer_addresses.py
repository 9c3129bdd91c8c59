"""A peer's ``addresses``: the right name and password from elsewhere are refused as a
wrong password would be, and logged as such (over real sockets, from 127.0.0.x)."""

from __future__ import annotations

import pytest

from p1.association.connection import BindAccepted, BindRefused
from p1.association.mtabind import MTABindError
from tests.mta.inbound.test_bind_auth import bind_once
from tests.mta.inbound.test_limits import A_BINDS, messages, start_b
from tests.support.sites import Lab


@pytest.mark.parametrize(
    ("addresses", "allowed", "refused"),
    [
        (["127.0.0.2"], "127.0.0.2", "127.0.0.1"),
        (["127.0.3.0/24", "192.0.2.1"], "127.0.3.7", "127.0.4.7"),
        (["localhost"], "127.0.0.1", "127.0.0.9"),
    ],
    ids=["address", "network", "host"],
)
async def test_a_bind_from_an_address_not_listed_is_refused_as_a_wrong_password(
    lab: Lab,
    caplog: pytest.LogCaptureFixture,
    addresses: list[str],
    allowed: str,
    refused: str,
) -> None:
    lab.b.settings["peers"][0]["addresses"] = addresses
    port = await start_b(lab, failed_bind_delay="0s")
    assert isinstance(await bind_once(port, A_BINDS, allowed), BindAccepted)
    outcome = await bind_once(port, A_BINDS, refused)
    assert isinstance(outcome, BindRefused)
    assert outcome.error is MTABindError.AUTHENTICATION_ERROR
    [line] = messages(caplog, "bind refused")
    assert line == f"bind refused: address {refused} is not among its addresses from MTA-A"
