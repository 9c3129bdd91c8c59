"""The quarantine: MTS-APDUs a peer transferred that this MTA could not take in.

Responsibility for a message passes to this MTA when it confirms the transfer (X.411
12.2.1.1; RT-TRANSFER confirmation, X.228).  A transfer refused unconfirmed is sent
again by the peer, and one whose own octets are at fault (an envelope that does not
decode, X.411 clause 12.2 and X.690; a value that cannot be written back with this
MTA's trace, 12.2.1.1.1.10) would be refused each time, holding up everything queued
behind it at that peer.  Such an APDU is confirmed and kept here instead, as received,
with why it could not be taken in, until the operator looks at it and deletes it.

Large APDUs go to the spool folder as the transit queue's and the mailbox's do
(:func:`store.spool.apdu_columns`); a deleted entry's file is removed once the deletion
commits.  The caller bounds what is kept (:meth:`Quarantine.totals`).

Every method runs inside the caller's transaction (see :func:`store.db.transaction`) and
commits nothing; time is passed in.

Public API::

    Quarantine(session)
        .keep(apdu, *, peer, reason, now) -> int          the new entry's number
        .totals() -> QuarantineTotals
        .list() -> tuple[QuarantineSummary, ...]          oldest first
        .read(entry_id) -> QuarantinedApdu | None
        .delete(entry_ids) -> int
    QuarantineTotals(messages, octets), QuarantineSummary, QuarantinedApdu
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from p1.ber.values import escape_controls
from store._sql import AnyRow, chunks, connection_of
from store.spool import apdu_columns, spool_of, stored_apdu
from store.sql import quarantine as sql

__all__ = ["Quarantine", "QuarantineSummary", "QuarantineTotals", "QuarantinedApdu"]


@dataclass(frozen=True, slots=True, kw_only=True)
class QuarantineTotals:
    """What the quarantine holds."""

    messages: int
    octets: int


@dataclass(frozen=True, slots=True, kw_only=True)
class QuarantineSummary:
    """One kept APDU without its octets."""

    id: int
    peer: str
    received_at: datetime
    reason: str
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class QuarantinedApdu(QuarantineSummary):
    """One kept APDU with its octets as received."""

    apdu: bytes


class Quarantine:
    """The quarantine, in the caller's session (the caller commits)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.spool = spool_of(session)

    def keep(self, apdu: bytes, *, peer: str, reason: str, now: datetime) -> int:
        """Keep ``apdu`` as ``peer`` transferred it, with ``reason``; its number."""
        row = {
            "peer": peer,
            "received_at": now,
            "reason": escape_controls(reason),
            "size": len(apdu),
            **apdu_columns(self.spool, self.session, apdu),
        }
        (inserted,) = sql.INSERT.insert(connection_of(self.session), [row])
        return int(inserted.id)

    def totals(self) -> QuarantineTotals:
        """How many APDUs are kept, and their octets."""
        row = self.session.execute(sql.totals()).one()
        return QuarantineTotals(messages=int(row[0]), octets=int(row[1] or 0))

    def list(self) -> tuple[QuarantineSummary, ...]:
        """Every kept APDU, oldest first."""
        return tuple(
            QuarantineSummary(**_summary_fields(row)) for row in self.session.execute(sql.listing())
        )

    def read(self, entry_id: int) -> QuarantinedApdu | None:
        """Entry ``entry_id`` with its octets, or None."""
        row = self.session.execute(sql.entry(entry_id)).first()
        if row is None:
            return None
        what = f"quarantine entry {row.id}"
        return QuarantinedApdu(
            **_summary_fields(row), apdu=stored_apdu(self.spool, row.apdu, row.apdu_file, what)
        )

    def delete(self, entry_ids: Sequence[int]) -> int:
        """Delete entries; how many were deleted (their files go once this commits)."""
        files: list[str | None] = []
        for part in chunks(sorted(set(entry_ids))):
            result = self.session.execute(sql.delete_entries(part))
            files += [row.apdu_file for row in result]
        if self.spool is not None:
            self.spool.discard_after_commit(self.session, files)
        return len(files)


def _summary_fields(row: AnyRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "peer": row.peer,
        "received_at": row.received_at,
        "reason": row.reason,
        "size": row.size,
    }
