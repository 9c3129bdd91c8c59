"""Fixtures shared by the daemon's tests (the sites are in :mod:`tests.support.sites`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.sites import Lab


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    """Sites A and B, configured, not started; stopped after the test, ports given back."""
    sites = Lab.create(tmp_path)
    try:
        yield sites
    finally:
        await sites.close()
