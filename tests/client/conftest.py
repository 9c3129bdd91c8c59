"""Fixtures of the client tests: a live MTA to talk to."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.sites import Site, solo_site


@pytest.fixture
async def site(tmp_path: Path) -> AsyncIterator[Site]:
    """Site A alone (local delivery and the local API), started."""
    mta = solo_site(tmp_path / "a")
    await mta.start()
    try:
        yield mta
    finally:
        await mta.stop()
