"""The local API abused by an unmapped account, with a fixed seed, against ``x400-mta``.

:mod:`tests.fuzz.attack_api` holds connections, offers eight messages of the largest
size and sends malformed requests as ``nobody``, which ``[access]`` does not map, while
root asks ``status``: root is answered every time, the daemon's memory stays within one
message's size of where it was, and its log holds no traceback and no ERROR line.
``python -m tests.fuzz.attack_api`` is the long run of the same.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.fuzz.attack_api import MESSAGE_SIZE, ApiDaemon, Attacker, attack

pytestmark = [
    pytest.mark.slow,  # x400-mta as a process
    pytest.mark.skipif(os.geteuid() != 0, reason="becoming another account needs root"),
]

SEED = 29
ROUNDS = 300


async def test_an_unmapped_account_abusing_the_local_api() -> None:
    directory = Path(tempfile.mkdtemp(prefix="aiox400-api-fuzz-", dir="/tmp"))
    report = await attack(ApiDaemon(directory), Attacker(seed=SEED, rounds=ROUNDS))
    assert report.problems(max_rss_growth_kib=MESSAGE_SIZE // 1024) == [], report.table()
    assert report.attacked.held == 0 and report.status_ok > 0, report.table()
