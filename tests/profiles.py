"""Numbers of Hypothesis examples relative to the profile in force (``tests/conftest.py``).

A test whose examples are much cheaper than most asks for several times the profile's
number, one whose examples are dear for a fraction of it; either way the profile (``dev``
or ``ci``) scales every test alike.

Public API::

    examples(scale) -> int    the profile's max_examples times ``scale``, at least 1
"""

from __future__ import annotations

from hypothesis import settings


def examples(scale: float) -> int:
    """``scale`` times the profile's ``max_examples`` (read when the test is defined, so
    the profile must be loaded first: the suite's conftest does it)."""
    profile = settings.default
    assert profile is not None, "no Hypothesis profile is loaded"
    return max(1, int(profile.max_examples * scale))
