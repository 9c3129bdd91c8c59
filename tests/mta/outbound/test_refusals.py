"""Refusals in a row, read back from the recipients' last error (mta.outbound.refusals)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from mta.outbound.refusals import refusal_error, refusals_so_far
from store import QueueEntry

WHY = "the peer aborted the transfer: session: aborted by the peer (user-error)"


def _entry(*errors: str | None) -> QueueEntry:
    recipients = tuple(SimpleNamespace(last_error=error) for error in errors)
    return cast(QueueEntry, cast(Any, SimpleNamespace(recipients=recipients)))


def test_the_count_goes_on_only_from_a_refusal_of_the_same_kind() -> None:
    assert refusal_error(WHY, 1) == f"refused 1 time in a row: {WHY}"
    assert refusals_so_far(_entry(None), WHY) == 0
    assert refusals_so_far(_entry(refusal_error(WHY, 1)), WHY) == 1
    assert refusals_so_far(_entry(refusal_error(WHY, 2), None), WHY) == 2  # the most of them
    # Another failure, or a refusal of another kind, starts again.
    assert refusals_so_far(_entry("transfer failed: the connection was lost: reset"), WHY) == 0
    other = "the peer aborted the transfer: session: aborted by the peer (protocol-error)"
    assert refusals_so_far(_entry(refusal_error(other, 2)), WHY) == 0
    assert refusals_so_far(_entry(f"{refusal_error(WHY, 2)} and more"), WHY) == 0
