"""The many-recipients attacker (:mod:`tests.fuzz.attack_many_recipients`), bounded, with
a fixed seed: messages for hundreds of a live MTA-B's users, some named twice, some
foreign, bodies over the spool's threshold, and a one-recipient transfer meanwhile.
``benchmarks/recipients.py`` is the long run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.fuzz.attack_many_recipients import cases, run_attack

pytestmark = pytest.mark.slow  # x400-mta as a process

SEED = 29
MESSAGES = 4
MOST = 300
"""Recipients of the largest message: a few seconds in all."""


def test_many_recipient_messages_are_each_stored_once(tmp_path: Path) -> None:
    outcome = asyncio.run(run_attack(tmp_path, cases(SEED, MESSAGES, most=MOST)))
    assert outcome.messages == MESSAGES + 1
    assert outcome.problems() == []
