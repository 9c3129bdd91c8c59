"""The local API under abuse by one account, against ``x400-mta`` as a process.

An account holds every connection it can, announces messages of the largest size and
sends all but their last octet on eight of them, and sends integers of 5,000 digits
(:mod:`tests.fuzz.attack_api`); meanwhile root asks ``status``.  Root must be answered
every time, the daemon's memory must stay far below the 512 MiB those messages would
take, and its log must hold no traceback and no ERROR line:

- an account ``[access]`` does not map (``nobody``) is refused at accept and holds
  nothing;
- Alice, a mapped user, holds at most ``max_api_connections_per_uid`` connections and
  one message's content;
- without ``[access]``, an account the socket's mode lets in (a member of the daemon's
  group) is bounded the same way.
"""

from __future__ import annotations

import os
import pwd
import tempfile
from pathlib import Path

import pytest

from config.schema import DEFAULT_CONNECTION_LIMITS
from tests.fuzz.attack_api import MESSAGE_SIZE, PENDING, ApiDaemon, Attacker, attack

pytestmark = [
    pytest.mark.slow,  # x400-mta as a process, 512 MiB offered to it
    pytest.mark.skipif(os.geteuid() != 0, reason="becoming other accounts needs root"),
]

GROWTH_KIB = 2 * MESSAGE_SIZE // 1024 + 64 * 1024
"""Memory the daemon may grow by: one message's content held, with room for its reading
(the attack offers it ``PENDING`` = 8 of them)."""
ALICE_UID = pwd.getpwnam("daemon").pw_uid


def _directory() -> Path:
    return Path(tempfile.mkdtemp(prefix="aiox400-abuse-", dir="/tmp"))


async def test_an_unmapped_account_is_refused_before_it_holds_anything() -> None:
    report = await attack(ApiDaemon(_directory()), Attacker(rounds=40, seed=3))
    assert report.problems(max_rss_growth_kib=GROWTH_KIB) == [], report.table()
    assert report.attacked.held == 0, report.table()
    assert report.attacked.answered >= 20, report.table()  # told why (some lost in the close)


async def test_a_mapped_user_is_bounded_per_account() -> None:
    assert PENDING * MESSAGE_SIZE // 1024 > 2 * GROWTH_KIB  # the bound can fail
    attacker = Attacker(uid=ALICE_UID, gid=ALICE_UID, rounds=40, seed=4)
    report = await attack(ApiDaemon(_directory()), attacker)
    assert report.problems(max_rss_growth_kib=GROWTH_KIB) == [], report.table()
    assert 1 <= report.attacked.held <= DEFAULT_CONNECTION_LIMITS.max_api_connections_per_uid
    assert report.attacked.answered >= 20, report.table()


async def test_without_access_an_account_of_the_group_is_bounded_per_account() -> None:
    attacker = Attacker(uid=65534, gid=os.getgid(), rounds=40, seed=5)
    report = await attack(ApiDaemon(_directory(), access=False), attacker)
    assert report.problems(max_rss_growth_kib=GROWTH_KIB) == [], report.table()
    assert 1 <= report.attacked.held <= DEFAULT_CONNECTION_LIMITS.max_api_connections_per_uid
