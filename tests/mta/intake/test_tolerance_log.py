"""mta.intake.tolerance: one WARNING per peer and field an hour for values read outside the
standard's form, whatever element of a list the field is in."""

from __future__ import annotations

import logging

import pytest

from mta.intake.tolerance import ToleranceLog
from p1.ber import Deviation

TRACE = "MessageTransferEnvelope.trace-information[{}].domain-supplied-information.arrival-time"
YEAR = Deviation(TRACE.format(1), "1261124205142Z", "2026-11-24T20:51:42+00:00")


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "aiox400.tolerance"]


def test_each_peer_and_field_is_logged_once_an_hour(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="aiox400.tolerance")
    now = [0.0]
    tolerated = ToleranceLog(clock=lambda: now[0])
    other_element = Deviation(TRACE.format(2), "1261124205143Z", "2026-11-24T20:51:43+00:00")
    tolerated.received("pp.test", "[id-1]", [YEAR, other_element])
    tolerated.received("pp.test", "[id-2]", [YEAR])
    tolerated.received("other", "[id-3]", [YEAR])
    assert lines(caplog) == [
        f"pp.test: [id-1]: tolerated {YEAR.field} = 1261124205142Z, read as "
        "2026-11-24T20:51:42+00:00; kept as received",
        f"other: [id-3]: tolerated {YEAR.field} = 1261124205142Z, read as "
        "2026-11-24T20:51:42+00:00; kept as received",
    ]
    now[0] = 3600.0
    tolerated.received("pp.test", "[id-4]", [YEAR])
    assert lines(caplog)[-1].startswith("pp.test: [id-4]: tolerated ")
    assert lines(caplog)[-1].endswith("kept as received (2 more suppressed)")
