"""The SQL of the transit queue's tables, ``messages`` and ``recipients``.

The statements the queue manager runs for every message (enqueue, claim, state changes)
are :class:`store.sql.statement.Statement` templates, run on the driver's cursor; the
operator's and housekeeping ones (hold, release, recovery, counts, purge) are SQLAlchemy
Core statements for ``Connection.execute``.  Parameter names are those of the templates'
placeholders and of the ``bindparam`` calls.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import Select, Update, bindparam, case, delete, func, or_, select, update

from store._sql import table
from store.models import (
    FINAL_STATES,
    ApduKind,
    QueuedMessage,
    QueuedRecipient,
    RecipientState,
    UtcDateTime,
)
from store.sql.statement import BYTES, INT, INTS, TEXT, TIME, Insert, Kind, Statement, enum_kind
from store.sql.statement import literal as _literal

MESSAGES: Final = table(QueuedMessage)
RECIPIENTS: Final = table(QueuedRecipient)
_m = MESSAGES.c
_r = RECIPIENTS.c
_S = RecipientState

EXPIRED_ERROR: Final = "expired"
"""``last_error`` of a recipient failed because its message expired."""

APDU_KIND: Final = enum_kind(ApduKind)
STATE: Final = enum_kind(RecipientState)

# --- enqueue -------------------------------------------------------------------------------

INSERT_MESSAGES: Final = Insert(
    "messages",
    {
        "mts_identifier": TEXT,
        "kind": APDU_KIND,
        "size": INT,
        "precedence": INT,
        "originator": TEXT,
        "arrival_time": TIME,
        "expiry_time": TIME,
        "origin_peer": TEXT,
        "envelope_recipients": INT,
        "apdu_file": TEXT,
        "apdu": BYTES,
    },
    returning={"id": INT},
)
"""Returns each message's id, in the order of the rows."""

INSERT_RECIPIENTS: Final = Insert(
    "recipients",
    {
        "message_id": INT,
        "recipient": TEXT,
        "shown": TEXT,
        "route": TEXT,
        "state": STATE,
        "precedence": INT,
        "arrival_time": TIME,
        "attempts": INT,
        "next_attempt_at": TIME,
        "last_error": TEXT,
        "report_request": INT,
        "recipient_number": INT,
        "owner": TEXT,
        "updated_at": TIME,
    },
)

# --- claim: route, precedences, now --------------------------------------------------------


def _state(*states: RecipientState) -> str:
    """``state IN (...)`` of these states, as literals."""
    return f"state IN ({', '.join(_literal(state.value) for state in states)})"


_PENDING: Final = f"state = {_literal(_S.PENDING.value)}"
_DUE: Final = (
    f"route = :route AND {_PENDING} AND precedence IN (:precedences) AND next_attempt_at <= :now"
)
_DUE_PARAMETERS: Final[dict[str, Kind]] = {"route": TEXT, "precedences": INTS, "now": TIME}

CHOOSE: Final = Statement(
    f"""SELECT id, message_id FROM recipients
    WHERE route = :route AND {_PENDING} AND precedence = :precedence
    AND next_attempt_at <= :now AND message_id NOT IN (:taken)
    ORDER BY arrival_time, message_id, next_attempt_at, id
    LIMIT :limit""",
    {"route": TEXT, "precedence": INT, "now": TIME, "taken": INTS, "limit": INT},
    {"id": INT, "message_id": INT},
    skip_locked="recipients",
)
"""The next due recipients of one precedence, oldest first, skipping rows another claimer
holds.  One precedence at a time, in the order of ``ix_recipients_ready``: the rows come
from the index as they are and the reading stops at the limit, where an order over
several precedences has SQLite sort every due row of the route first (1.5 ms of a claim
at 10,000 due)."""

SIBLINGS: Final = Statement(
    f"SELECT id FROM recipients WHERE message_id IN (:messages) AND {_DUE}",
    {"messages": INTS, **_DUE_PARAMETERS},
    {"id": INT},
    skip_locked="recipients",
    sqlite_index=("recipients", "ix_recipients_message_id"),
)
"""The other due recipients, on the same route, of the messages chosen: found through the
messages' ids (SQLite, which keeps no statistics here, would otherwise read every due
row of the route through ``ix_recipients_ready``)."""

BACKLOG: Final = Statement(
    f"SELECT count(DISTINCT message_id) FROM recipients WHERE {_DUE}",
    _DUE_PARAMETERS,
    {"count": INT},
)
"""How many messages are due on the route at these precedences."""

NEXT_DUE: Final = Statement(
    f"""SELECT min(next_attempt_at) FROM recipients
    WHERE route = :route AND {_PENDING} AND precedence IN (:precedences)""",
    {"route": TEXT, "precedences": INTS},
    {"next_due": TIME},
)

# --- messages ------------------------------------------------------------------------------

SIZES: Final = Statement(
    "SELECT id, size FROM messages WHERE id IN (:ids)", {"ids": INTS}, {"id": INT, "size": INT}
)
"""(id, APDU size) of messages ``ids``."""

MESSAGE_COLUMNS: Final[dict[str, Kind]] = {
    "id": INT,
    "mts_identifier": TEXT,
    "kind": APDU_KIND,
    "precedence": INT,
    "originator": TEXT,
    "apdu": BYTES,
    "arrival_time": TIME,
    "expiry_time": TIME,
    "origin_peer": TEXT,
    "envelope_recipients": INT,
    "apdu_file": TEXT,
}

MESSAGES_BY_ID: Final = Statement(
    f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM messages WHERE id IN (:ids)",
    {"ids": INTS},
    MESSAGE_COLUMNS,
)

SUBJECT_PRECEDENCE: Final = Statement(
    f"""SELECT max(precedence) FROM messages
    WHERE mts_identifier = :mts_identifier AND kind = {_literal(ApduKind.MESSAGE.value)}""",
    {"mts_identifier": TEXT},
    {"precedence": INT},
)
"""The precedence this MTA queued message ``mts_identifier`` at (None: not queued here)."""

SUBJECT_PROBES: Final = Statement(
    f"""SELECT count(*) FROM messages
    WHERE mts_identifier = :mts_identifier AND kind = {_literal(ApduKind.PROBE.value)}""",
    {"mts_identifier": TEXT},
    {"count": INT},
)
"""How many probes of identifier ``mts_identifier`` this MTA queued (0: none, or purged)."""

# --- recipients ----------------------------------------------------------------------------

RECIPIENT_COLUMNS: Final[dict[str, Kind]] = {
    "id": INT,
    "message_id": INT,
    "recipient": TEXT,
    "shown": TEXT,
    "route": TEXT,
    "state": STATE,
    "attempts": INT,
    "next_attempt_at": TIME,
    "last_error": TEXT,
    "report_request": INT,
    "recipient_number": INT,
}

RECIPIENTS_OF: Final = Statement(
    f"SELECT {', '.join(RECIPIENT_COLUMNS)} FROM recipients WHERE message_id = :message_id",
    {"message_id": INT},
    RECIPIENT_COLUMNS,
)

# --- state changes: ids, at ----------------------------------------------------------------


def _transition(
    from_states: tuple[RecipientState, ...],
    to_state: RecipientState,
    changes: str = "",
    parameters: dict[str, Kind] | None = None,
) -> Statement:
    """Recipients ``ids`` still in ``from_states`` move to ``to_state`` (and ``changes``,
    SQL assignments); their rows as now stored return."""
    assignments = f"state = {_literal(to_state.value)}, {changes + ', ' if changes else ''}"
    return Statement(
        f"""UPDATE recipients SET {assignments}updated_at = :at
        WHERE id IN (:ids) AND {_state(*from_states)}
        RETURNING {", ".join(RECIPIENT_COLUMNS)}""",
        {"ids": INTS, "at": TIME, **(parameters or {})},
        RECIPIENT_COLUMNS,
    )


TO_IN_FLIGHT: Final = _transition(
    (_S.PENDING,),
    _S.IN_FLIGHT,
    "attempts = attempts + 1, owner = :new_owner, lease_until = :lease_until",
    {"new_owner": TEXT, "lease_until": TIME},
)
TO_TRANSFERRED: Final = _transition((_S.IN_FLIGHT,), _S.TRANSFERRED)
TO_DELIVERED: Final = _transition((_S.IN_FLIGHT,), _S.DELIVERED)
TO_DEFERRED: Final = _transition(
    (_S.IN_FLIGHT,),
    _S.PENDING,
    "next_attempt_at = :next_attempt, last_error = :error, owner = NULL",
    {"next_attempt": TIME, "error": TEXT},
)
_UNCOUNTED: Final = "attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END"
"""The attempt the claim counted, taken back."""
TO_UNCLAIMED: Final = _transition((_S.IN_FLIGHT,), _S.PENDING, f"{_UNCOUNTED}, owner = NULL")
"""Claimed but never attempted: pending again at once, the claim's attempt not counted."""
TO_RETRIED_AT_ONCE: Final = _transition(
    (_S.IN_FLIGHT,),
    _S.PENDING,
    f"{_UNCOUNTED}, next_attempt_at = :at, last_error = :error, owner = NULL",
    {"error": TEXT},
)
"""Failed on a connection that had idled: pending again, due at once, the claim's attempt
not counted, the error kept (it tells the next failure not to be retried at once)."""
TO_FAILED: Final = _transition(
    (_S.IN_FLIGHT, _S.PENDING, _S.HELD),
    _S.FAILED,
    "last_error = :error, owner = NULL",
    {"error": TEXT},
)
TO_NON_DELIVERED: Final = _transition(
    (_S.PENDING, _S.HELD),
    _S.FAILED,
    "last_error = :error, owner = NULL",
    {"error": TEXT},
)
"""The operator's non-delivery: waiting recipients not in flight fail."""
TO_EXPIRED: Final = _transition(
    (_S.PENDING,), _S.FAILED, f"last_error = {_literal(EXPIRED_ERROR)}, owner = NULL"
)

# --- expiry --------------------------------------------------------------------------------

EXPIRED: Final = Statement(
    f"""SELECT recipients.id, recipients.message_id
    FROM recipients JOIN messages ON messages.id = recipients.message_id
    WHERE recipients.{_PENDING} AND messages.expiry_time <= :now
    ORDER BY messages.expiry_time, recipients.message_id, recipients.id
    LIMIT :limit""",
    {"now": TIME, "limit": INT},
    {"id": INT, "message_id": INT},
    skip_locked="recipients",
)
"""Pending recipients of messages expired at ``now``, the first to expire first."""

# --- per message, for the operator: message_ids, at (Core) ---------------------------------


def _time(name: str) -> Any:
    return bindparam(name, type_=UtcDateTime())


def _ids(name: str) -> Any:
    return bindparam(name, expanding=True)


HOLD: Final[Update] = (
    update(RECIPIENTS)
    .where(_r.message_id.in_(_ids("message_ids")), _r.state == _S.PENDING)
    .values(state=_S.HELD, updated_at=_time("at"))
)
RELEASE: Final[Update] = (
    update(RECIPIENTS)
    .where(_r.message_id.in_(_ids("message_ids")), _r.state == _S.HELD)
    .values(state=_S.PENDING, next_attempt_at=_time("at"), updated_at=_time("at"))
)

# --- recovery (Core) -----------------------------------------------------------------------

RECOVER_ALL: Final[Update] = (
    update(RECIPIENTS)
    .where(_r.state == _S.IN_FLIGHT)
    .values(state=_S.PENDING, owner=None, lease_until=None, updated_at=_time("at"))
)
RECOVER_OWNER: Final[Update] = RECOVER_ALL.where(_r.owner == bindparam("of_owner"))
TAKE_BACK_LAPSED: Final[Update] = RECOVER_ALL.where(
    or_(_r.lease_until.is_(None), _r.lease_until <= _time("at"))
)
"""In flight under a claim whose lease lapsed at ``at`` (or that has none): pending again.
On PostgreSQL a row another process changes meanwhile is read again once it commits, so
two processes taking back at once count each recipient once."""

# --- leases (Core) -------------------------------------------------------------------------

RENEW: Final[Update] = (
    update(RECIPIENTS)
    .where(_r.state == _S.IN_FLIGHT, _r.owner == bindparam("of_owner"))
    .values(lease_until=_time("until"))
)
"""Every claim of one owner lasts until ``until``: one statement however many."""

# --- views and housekeeping (Core) ---------------------------------------------------------

COUNTS: Final[Select[Any]] = (
    select(_r.route, _r.precedence, _r.state, func.count())
    .group_by(_r.route, _r.precedence, _r.state)
    .order_by(_r.route, _r.precedence.desc(), _r.state)
)

_QUEUED: Final[Select[Any]] = select(
    _m.id,
    _m.mts_identifier,
    _m.kind,
    _m.precedence,
    _m.arrival_time,
    _m.size,
    _m.originator,
    func.coalesce(_r.shown, _r.recipient).label("recipient"),
    _r.route,
    _r.state,
    _r.attempts,
    _r.next_attempt_at,
    _r.last_error,
).join(MESSAGES, _m.id == _r.message_id)

QUEUED: Final[Select[Any]] = _QUEUED
"""Every recipient in the queue with its message (conditions and order added by the
caller)."""

WAITING: Final[Select[Any]] = (
    _QUEUED.where(_r.state.in_((_S.PENDING, _S.IN_FLIGHT, _S.HELD)))
    .order_by(_r.precedence.desc(), _r.arrival_time, _r.message_id, _r.id)
    .limit(bindparam("limit"))
)
"""The recipients the MTA still owes something, in service order (the operator's list)."""

OF_MESSAGE: Final[Select[Any]] = _QUEUED.where(
    _m.mts_identifier == bindparam("mts_identifier")
).order_by(_m.arrival_time, _m.id, _r.id)
"""Every recipient still in the queue of the APDUs with one MTS identifier, whatever its
state (``x400ctl track``)."""

_FINISHED: Final = (
    select(_r.message_id)
    .group_by(_r.message_id)
    .having(
        func.sum(case((_r.state.in_(sorted(FINAL_STATES)), 0), else_=1)) == 0,
        func.max(_r.updated_at) < _time("before"),
    )
)
PURGE_FINISHED: Final = delete(MESSAGES).where(_m.id.in_(_FINISHED)).returning(_m.id, _m.apdu_file)
"""Messages whose every recipient reached a final state before ``before``; their
recipients go with them (foreign key ON DELETE CASCADE).  Returns their spool files."""
