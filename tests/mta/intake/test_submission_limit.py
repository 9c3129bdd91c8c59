"""A local submission over ``[limits] max_message_size`` (:func:`mta.intake.plan.plan_submission`).

The content alone, or the MTS-APDU with envelope and trace, longer than the limit is
refused with :class:`mta.intake.plan.TooLongError`, which names both sizes; at the limit it is
planned as usual.  Pure: no store.
"""

from __future__ import annotations

import dataclasses

import pytest

from mta.intake.plan import TooLongError, plan_submission
from tests.mta.intake.test_intake import NOW, site_b, submit


def _apdu_size() -> int:
    plan = plan_submission(submit(), site_b(), now=NOW)
    assert plan.message is not None
    return len(plan.message.apdu)


def test_at_the_limit_the_message_is_planned() -> None:
    size = _apdu_size()
    site = dataclasses.replace(site_b(), max_message_size=size)
    plan = plan_submission(submit(), site, now=NOW)
    assert plan.message is not None and len(plan.message.apdu) == size


def test_an_apdu_one_octet_over_is_refused_though_its_content_fits() -> None:
    size = _apdu_size()
    site = dataclasses.replace(site_b(), max_message_size=size - 1)
    with pytest.raises(TooLongError) as caught:
        plan_submission(submit(), site, now=NOW)
    assert (caught.value.size, caught.value.limit) == (size, size - 1)
    assert str(caught.value) == (
        f"message is {size} octets; this MTA accepts at most {size - 1} (max_message_size)"
    )


def test_a_content_over_the_limit_is_refused_before_it_is_encoded() -> None:
    site = dataclasses.replace(site_b(), max_message_size=5)
    content = b"\x04\x06opaque"
    with pytest.raises(TooLongError) as caught:
        plan_submission(submit(content=content), site, now=NOW)
    assert caught.value.size == len(content)
