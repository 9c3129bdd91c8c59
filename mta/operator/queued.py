"""The operator's look at queued messages and its non-delivery of them: the answers of
the local API's ``queue_show``, ``non_deliver`` and ``track_find``
(:mod:`mta.operator.operations` checks the requests and calls these).

- ``queue_show`` (``x400ctl show``, Postfix's ``postcat -q``): one queued message's
  queue record, each recipient's state, and its stored MTS-APDU as the payload; the
  client decodes the envelope and content with the decoders ``x400 read`` and
  ``x400-dump`` use.
- ``non_deliver`` (``x400ctl non-deliver``): the selected waiting recipients fail, each
  reported to the originator through the expirer's path
  (:meth:`mta.delivery.local.Delivery.non_deliver`; reason and diagnostic:
  :data:`mta.delivery.units.OPERATOR_NON_DELIVERY`), the operator's reason in each
  report's supplementary-information (X.411 SupplementaryInformation, a PrintableString
  of 1 to 256 characters).
- ``track_find`` (``x400ctl track --recipient/--originator/--since``): the messages the
  queue or the audit log holds that meet every condition given.  The audit log names
  recipients, not originators: by originator only the queue is searched, which keeps a
  finished message until ``[retention] finished``.

Public API::

    show(service, *, message_id=None, mts_identifier=None) -> (answer, apdu)
    non_deliver(service, selection, reason) -> answer
    check_reason(text) -> str          ControlError unless a SupplementaryInformation
    find(service, *, recipient=None, originator=None, since=None) -> answer
    FIND_LIMIT
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Final

from sqlalchemy import Engine

from mta.operator.control import ControlError, JsonObject
from mta.operator.views import Daemon
from p1.errors import DecodeError, EncodeError
from p1.ipms.fields import printable
from p1.mts.envelope import Message, Probe, decode_mts_apdu
from p1.mts.orname import format_orname
from store import AuditLog, TransitQueue, WaitingRecipient, transaction
from store.audit import Seen
from store.queue import QueueEntry, QueueRecipient, SelectedRecipient, Selection

__all__ = ["FIND_LIMIT", "check_reason", "find", "non_deliver", "show"]

FIND_LIMIT: Final = 100
"""Most messages one ``track_find`` answer lists (the first, oldest first)."""
UB_SUPPLEMENTARY_INFO_LENGTH: Final = 256
"""ub-supplementary-info-length (X.411 MTSUpperBounds)."""


# --- show ------------------------------------------------------------------------------


async def show(
    service: Daemon, *, message_id: int | None = None, mts_identifier: str | None = None
) -> tuple[JsonObject, bytes]:
    """The queued message ``message_id`` (or the newest with ``mts_identifier``) and its
    APDU; ControlError when the queue has none."""
    entry = await service.db.run(_entry, service.db.engine, message_id, mts_identifier)
    if entry is None:
        named = message_id if mts_identifier is None else mts_identifier
        raise ControlError(f"no message {named} in the queue")
    message = _message(entry) | {"originator": await asyncio.to_thread(_originator, entry)}
    return {"ok": True, "message": message}, entry.apdu_bytes


def _originator(entry: QueueEntry) -> str:
    """The originator as the envelope gives it (its letters' case kept); the queue's
    folded form when the APDU is gone or does not decode."""
    if not entry.apdu:
        return entry.originator
    try:
        decoded = decode_mts_apdu(entry.apdu_bytes)
    except DecodeError:
        return entry.originator
    if isinstance(decoded, Message):
        return format_orname(decoded.envelope.originator_name)
    if isinstance(decoded, Probe):
        return format_orname(decoded.originator_name)
    return entry.originator  # a report: its originator is the MTA that made it


def _entry(engine: Engine, message_id: int | None, mts_identifier: str | None) -> QueueEntry | None:
    with transaction(engine, read_only=True) as session:
        queue = TransitQueue(session)
        if mts_identifier is not None:
            ids = [r.message_id for r in queue.recipients_of(mts_identifier)]
            message_id = max(ids, default=None)
        return None if message_id is None else queue.get(message_id)


def _message(entry: QueueEntry) -> JsonObject:
    return {
        "message_id": entry.message_id,
        "mts_identifier": entry.mts_identifier,
        "kind": entry.kind.value,
        "precedence": entry.precedence.label,
        "originator": entry.originator,
        "arrival_time": entry.arrival_time.isoformat(),
        "expiry_time": None if entry.expiry_time is None else entry.expiry_time.isoformat(),
        "origin_peer": entry.origin_peer,
        "size": len(entry.apdu),
        "recipients": [_recipient(r) for r in entry.recipients],
    }


def _recipient(r: QueueRecipient) -> JsonObject:
    return {
        "recipient": r.display,
        "route": r.route,
        "state": r.state.value,
        "attempts": r.attempts,
        "next_attempt_at": r.next_attempt_at.isoformat(),
        "last_error": r.last_error,
    }


# --- non-delivery ----------------------------------------------------------------------


def check_reason(text: object) -> str:
    """``text`` if it can be a report's supplementary-information (a PrintableString
    of 1 to 256 characters: letters, digits, space and ``'()+,-./:=?``)."""
    if not isinstance(text, str):
        raise ControlError("reason must be text")
    try:
        printable(text, "reason", 1, UB_SUPPLEMENTARY_INFO_LENGTH)
    except EncodeError as error:
        raise ControlError(
            f"reason {text!r}: the report carries it as X.411 SupplementaryInformation, "
            f"1 to {UB_SUPPLEMENTARY_INFO_LENGTH} of the letters, digits, space and "
            "'()+,-./:=?"
        ) from error
    return text


async def non_deliver(service: Daemon, selection: Selection, reason: str) -> JsonObject:
    """Non-deliver the selected waiting recipients with their reports; those in flight
    are named as busy and left alone."""
    failure = await service.delivery.non_deliver(selection, reason)
    return {
        "ok": True,
        "non_delivered": sum(len(entry.recipients) for entry in failure.failed),
        "recipients": [
            {
                "message_id": entry.message_id,
                "mts_identifier": entry.mts_identifier,
                "recipient": r.recipient,
                "route": r.route,
            }
            for entry in failure.failed
            for r in entry.recipients
        ],
        "busy": [_ref(r) for r in failure.busy],
    }


def _ref(r: SelectedRecipient) -> JsonObject:
    return {
        "message_id": r.message_id,
        "mts_identifier": r.mts_identifier,
        "recipient": r.recipient,
        "route": r.route,
    }


# --- search ----------------------------------------------------------------------------


async def find(
    service: Daemon,
    *,
    recipient: str | None = None,
    originator: str | None = None,
    since: datetime | None = None,
) -> JsonObject:
    """The messages meeting every condition given, oldest first (module docstring)."""
    queued, seen = await service.db.run(_search, service.db.engine, recipient, originator, since)
    found: dict[str, JsonObject] = {}
    for r in queued:
        match = found.setdefault(r.mts_identifier, _match(r.mts_identifier, r.arrival_time))
        match["originator"] = r.originator
        match["states"][r.state.value] = match["states"].get(r.state.value, 0) + 1
    for s in seen:
        match = found.setdefault(s.mts_identifier, _match(s.mts_identifier, s.first))
        match["first"] = min(match["first"], s.first.isoformat())
        match["last"] = s.last.isoformat()
    matches = sorted(found.values(), key=lambda m: (m["first"], m["mts_identifier"]))
    return {"ok": True, "matches": matches[:FIND_LIMIT], "more": len(matches) > FIND_LIMIT}


def _match(mts_identifier: str, first: datetime) -> JsonObject:
    return {
        "mts_identifier": mts_identifier,
        "first": first.astimezone(UTC).isoformat(),
        "last": None,
        "originator": None,
        "states": {},
    }


def _search(
    engine: Engine, recipient: str | None, originator: str | None, since: datetime | None
) -> tuple[tuple[WaitingRecipient, ...], tuple[Seen, ...]]:
    limit = FIND_LIMIT * 10
    with transaction(engine, read_only=True) as session:
        queued = TransitQueue(session).matching(
            recipient=recipient, originator=originator, since=since, limit=limit
        )
        if originator is not None:  # the audit log does not name originators
            return queued, ()
        return queued, AuditLog(session).messages(recipient=recipient, since=since, limit=limit)
