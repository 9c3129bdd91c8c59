"""A peer's message whose content does not decode is taken, confirmed and delivered with
the mark :data:`store.mailbox.UNDECODABLE`: a fault of the peer's data, logged as one
line a minute, never as a traceback (X.411 12.2.1.1: the MTA that confirmed a message is
responsible for it, whatever its content holds)."""

from __future__ import annotations

import logging

import pytest

from p1.errors import DecodeError
from p1.mts.envelope import message_content
from store import MessageStore, RecipientState, transaction
from store.mailbox import UNDECODABLE
from tests.mta.intake.test_intake import CONTENT, JONES, NOW, apdu, envelope, identifier, recipient
from tests.mta.intake.test_units import Units, states, units  # noqa: F401 (the fixture)

_BAD_CONTENT = b"\x24\x08" + bytes.fromhex("0101000101000500")
"""A content that is no OCTET STRING: a constructed one holding two BOOLEANs and a NULL
(X.690 8.7.3.2: its segments must be OCTET STRINGs)."""


def _undecodable(local: str) -> bytes:
    """A message to Jones whose content is :data:`_BAD_CONTENT`."""
    good = apdu(envelope(recipient(JONES), mts_identifier=identifier(local)))
    assert good.endswith(b"\x04\x08" + CONTENT)
    return good[: -len(CONTENT) - 2] + _BAD_CONTENT


def test_the_content_is_undecodable() -> None:
    with pytest.raises(DecodeError):
        message_content(_undecodable("probe"))


def test_undecodable_content_is_delivered_marked_with_no_traceback_and_few_lines(
    units: Units,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    names = [f"undecodable-{n}" for n in range(5)]
    for name in names:
        with transaction(units.engine) as session:
            _, result, _ = units.intake.receive_and_deliver_in(
                session, apdu=_undecodable(name), now=NOW, origin_peer="MTA-A"
            )
        assert result is not None and result.queued
        with transaction(units.engine) as session:
            units.delivery.deliver_local_in(session, now=NOW)
    assert set(states(units.engine).values()) == {RecipientState.DELIVERED}
    with transaction(units.engine, read_only=True) as session:
        listed = MessageStore(session).list(JONES.canonical)
    assert sorted(m.mts_identifier for m in listed) == sorted(
        identifier(name).text for name in names
    )
    assert {m.subject for m in listed} == {UNDECODABLE}
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    about = [r for r in caplog.records if "decode" in r.getMessage()]
    assert len(about) <= 1, [r.getMessage() for r in about]
    assert all(r.levelno in (logging.INFO, logging.WARNING) for r in about)
