"""What a peer must present in its MTA-bind, what it is sent back, and what guessing costs.

Over real loopback sockets to site B, with a raw initiator
(:class:`tests.mta.inbound.test_limits.Initiator`) choosing each bind's value and source
address: the password's CHOICE alternatives and bounds (X.411 12.1.1.1.1.2), a peer
configured without ``peer_password`` (answered unauthenticated, never with B's password),
and guesses from many addresses, slowed as a whole and logged as counts.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from p1 import ber
from p1.association import connection
from p1.association.connection import BindAccepted, BindRefused
from p1.association.mtabind import MTABindArgument, MTABindResult
from tests.mta.inbound.test_limits import (
    A_BINDS,
    A_GUESSES,
    Initiator,
    messages,
    start_b,
    timed_bind,
)
from tests.support.sites import A, B, Lab


async def bind_once(port: int, argument: MTABindArgument, source: str = "127.0.0.1") -> object:
    peer = await Initiator.connect(port, source)
    try:
        return await peer.bind(argument)
    finally:
        peer.close()


async def test_a_password_is_taken_in_either_alternative_x411_allows(lab: Lab) -> None:
    """``Password ::= CHOICE { ia5-string IA5String, octet-string OCTET STRING }``, both
    of 62 at most: PP 6.0 sends the second."""
    port = await start_b(lab, failed_bind_delay="0s")
    octets = MTABindArgument(initiator_name=A.name, password=A.password.encode())
    assert isinstance(await bind_once(port, octets), BindAccepted)
    assert isinstance(await bind_once(port, A_BINDS), BindAccepted)
    wrong = MTABindArgument(initiator_name=A.name, password=b"secret-b")
    assert isinstance(await bind_once(port, wrong), BindRefused)


UTF8_STRING = 12
"""The universal tag of UTF8String (X.680 8.6): not a type Password allows."""


def _bind_with_password(tag: int, octets: bytes) -> bytes:
    """MTABindArgument naming MTA-A, its password of type ``tag`` holding ``octets``."""
    return ber.constructed(
        ber.context(1),
        [
            ber.tlv(ber.context(0), A.name.encode()),
            ber.tlv(ber.context(1), ber.tlv(tag, octets), True),
        ],
    )


@pytest.mark.parametrize(
    ("tag", "octets"),
    [
        (UTF8_STRING, A.password.encode()),  # the right password, of another type
        (ber.OCTET_STRING, b"p" * 63),  # over ub-password-length
    ],
    ids=["UTF8String", "63 octets"],
)
async def test_a_password_x411_does_not_allow_is_malformed_and_aborted(
    lab: Lab, monkeypatch: pytest.MonkeyPatch, tag: int, octets: bytes
) -> None:
    port = await start_b(lab, failed_bind_delay="0s")
    crafted = _bind_with_password(tag, octets)
    monkeypatch.setattr(connection, "encode_bind_argument", lambda argument: crafted)
    outcome = await bind_once(port, A_BINDS)
    # Not answered: the association is aborted, no MTABindError given.
    assert isinstance(outcome, BindRefused), outcome
    assert outcome.error is None and "aborted by the peer" in outcome.why


async def test_a_peer_without_peer_password_is_never_sent_ours(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    del lab.b.settings["peers"][0]["peer_password"]
    port = await start_b(lab)
    for argument in (A_GUESSES, A_BINDS):
        accepted = await bind_once(port, argument)
        assert isinstance(accepted, BindAccepted)
        assert accepted.result == MTABindResult()  # unauthenticated: no name, no password
        assert accepted.result.password != B.password
    [warning] = messages(caplog, "has no peer_password")
    assert warning.startswith("peer MTA-A has no peer_password: its binds are accepted")


@pytest.mark.slow
async def test_guesses_from_many_addresses_slow_every_strangers_bind_not_a_peers(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    port = await start_b(lab, failed_bind_delay="1s", failed_bind_delay_max="2s")
    guesses = await asyncio.gather(
        *(timed_bind(port, A_GUESSES, f"127.0.5.{n}") for n in range(1, 31))
    )
    assert all(isinstance(outcome, BindRefused) for outcome, _ in guesses)
    # Thirty failures, each from an address of its own: every stranger's bind now
    # waits failed_bind_delay_max, even from an address that never failed ...
    refused, elapsed = await timed_bind(port, A_GUESSES, "127.0.5.99")
    assert isinstance(refused, BindRefused) and elapsed >= 2.0
    # ... while a peer binding from its configured host is not slowed by them.
    accepted, elapsed = await timed_bind(port, A_BINDS, "127.0.0.1")
    assert isinstance(accepted, BindAccepted) and elapsed < 2.0
    # One line for the first failure; the rest are counted for the interval's line.
    assert len(messages(caplog, "failed bind(s) in a row from")) == 1
