"""How the operator's tool lays out what the daemon answers: tables sized to their
content, times in UTC.

Public API::

    table(header, rows, *, right=()) -> list[str]   columns as wide as their content
    utc(iso) -> str                                 an ISO time as YYYY-MM-DD HH:MM:SS.mmm
    recipients_table(recipients) -> list[str]       queued recipients and where each stands
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime

from p1.ber.values import escape_controls

__all__ = ["recipients_table", "table", "utc"]


def table(
    header: Sequence[str], rows: Sequence[Sequence[object]], *, right: Collection[int] = ()
) -> list[str]:
    """``header`` and ``rows`` as lines of columns as wide as their widest cell, two
    spaces apart; the columns numbered in ``right`` aligned right.  A cell's control
    characters are escaped (:func:`p1.ber.values.escape_controls`): a peer's text stays
    in its cell."""
    cells = [[escape_controls(str(cell)) for cell in row] for row in (header, *rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return [
        "  ".join(
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in cells
    ]


def utc(iso: str) -> str:
    """An ISO time from the daemon as ``YYYY-MM-DD HH:MM:SS.mmm`` (UTC)."""
    moment = datetime.fromisoformat(iso)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


_WAITING = frozenset({"pending", "held", "in_flight"})
"""The states whose next attempt is worth showing."""


def recipients_table(recipients: Iterable[Mapping[str, object]]) -> list[str]:
    """Queued recipients as the daemon gives them (``recipient``, ``state``, ``route``,
    ``attempts``, ``next_attempt_at``, ``last_error``), one line each under a header."""
    header = ("RECIPIENT", "STATE", "ROUTE", "TRIES", "NEXT ATTEMPT (UTC)", "LAST ERROR")
    rows = [
        (
            r["recipient"],
            r["state"],
            r["route"],
            r["attempts"],
            utc(str(r["next_attempt_at"])) if r["state"] in _WAITING else "-",
            r["last_error"] or "",
        )
        for r in recipients
    ]
    return table(header, rows, right=(3,))
