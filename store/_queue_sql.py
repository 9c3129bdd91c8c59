"""The transit queue's statements, built once (not public).

The queue manager runs these several times per message; building a statement costs more
than running it on SQLite, so each is built here once, with bound parameters, and the
repository only executes them.  Those run for every message (enqueue, claim, state
changes) are :class:`store._prepared.Prepared`, run on the driver's cursor.  Names of
the parameters are those of the ``bindparam`` calls below.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import (
    Column,
    Delete,
    Select,
    Update,
    bindparam,
    case,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.sql import ColumnElement

from store._prepared import Prepared
from store._sql import table
from store.models import (
    FINAL_STATES,
    ApduKind,
    QueuedMessage,
    QueuedRecipient,
    ReceivedKey,
    RecipientState,
    UtcDateTime,
)

MESSAGES: Final = table(QueuedMessage)
RECIPIENTS: Final = table(QueuedRecipient)
RECEIVED: Final = table(ReceivedKey)
_m = MESSAGES.c
_r = RECIPIENTS.c
_S = RecipientState

EXPIRED_ERROR: Final = "expired"
"""``last_error`` of a recipient failed because its message expired."""

RECIPIENT_COLUMNS: Final[tuple[Column[Any], ...]] = (
    _r.id,
    _r.message_id,
    _r.recipient,
    _r.route,
    _r.state,
    _r.attempts,
    _r.next_attempt_at,
    _r.last_error,
    _r.report_request,
    _r.recipient_number,
)

MESSAGE_COLUMNS: Final[tuple[Column[Any], ...]] = (
    _m.id,
    _m.mts_identifier,
    _m.kind,
    _m.precedence,
    _m.originator,
    _m.apdu,
    _m.arrival_time,
    _m.expiry_time,
    _m.origin_peer,
    _m.envelope_recipients,
    _m.apdu_file,
)


def _time(name: str) -> Any:
    return bindparam(name, type_=UtcDateTime())


def _ids(name: str) -> Any:
    return bindparam(name, expanding=True)


# --- enqueue -------------------------------------------------------------------------------

INSERT_MESSAGES: Final = Prepared(
    insert(MESSAGES).returning(_m.id),
    (
        "mts_identifier",
        "kind",
        "apdu",
        "apdu_file",
        "size",
        "precedence",
        "originator",
        "arrival_time",
        "expiry_time",
        "origin_peer",
        "envelope_recipients",
    ),
)
"""Returns each message's id, in the order of the rows."""
INSERT_RECIPIENTS: Final = Prepared(
    insert(RECIPIENTS),
    (
        "message_id",
        "recipient",
        "route",
        "state",
        "precedence",
        "arrival_time",
        "attempts",
        "next_attempt_at",
        "last_error",
        "report_request",
        "recipient_number",
        "owner",
        "updated_at",
    ),
)

# --- claim: route, precedences, now --------------------------------------------------------

_DUE: Final[tuple[ColumnElement[bool], ...]] = (
    _r.route == bindparam("route"),
    _r.state == _S.PENDING,
    _r.precedence.in_(_ids("precedences")),
    _r.next_attempt_at <= _time("now"),
)

CHOOSE: Final = Prepared(
    select(_r.id, _r.message_id)
    .where(*_DUE, _r.message_id.not_in(_ids("taken")))
    .order_by(_r.precedence.desc(), _r.arrival_time, _r.message_id, _r.id)
    .limit(bindparam("limit"))
    .with_for_update(skip_locked=True)
)
"""The next due recipients in service order, skipping rows another claimer holds."""

SIBLINGS: Final = Prepared(
    select(_r.id)
    .where(_r.message_id.in_(_ids("messages")), *_DUE)
    .with_for_update(skip_locked=True)
)
"""The other due recipients, on the same route, of the messages chosen."""

BACKLOG: Final = Prepared(select(func.count(func.distinct(_r.message_id))).where(*_DUE))

NEXT_DUE: Final = Prepared(
    select(func.min(_r.next_attempt_at)).where(
        _r.route == bindparam("route"),
        _r.state == _S.PENDING,
        _r.precedence.in_(_ids("precedences")),
    )
)

SIZES: Final = Prepared(select(_m.id, _m.size).where(_m.id.in_(_ids("ids"))))
"""(id, APDU size) of messages ``ids``."""

MESSAGES_BY_ID: Final = Prepared(select(*MESSAGE_COLUMNS).where(_m.id.in_(_ids("ids"))))

SUBJECT_PRECEDENCE: Final = Prepared(
    select(func.max(_m.precedence)).where(
        _m.mts_identifier == bindparam("mts_identifier"), _m.kind == ApduKind.MESSAGE
    )
)
"""The precedence this MTA queued message ``mts_identifier`` at (None: not queued here)."""

RECIPIENTS_OF: Final = Prepared(
    select(*RECIPIENT_COLUMNS).where(_r.message_id == bindparam("message_id"))
)

# --- state changes: ids, at ------------------------------------------------------------------


def _transition(from_states: tuple[RecipientState, ...], **values: Any) -> Prepared:
    """Recipients ``ids`` still in ``from_states`` move; their rows as now stored return."""
    return Prepared(
        update(RECIPIENTS)
        .where(_r.id.in_(_ids("ids")), _r.state.in_(from_states))
        .values(updated_at=_time("at"), **values)
        .returning(*RECIPIENT_COLUMNS)
    )


TO_IN_FLIGHT: Final = _transition(
    (_S.PENDING,),
    state=_S.IN_FLIGHT,
    attempts=_r.attempts + 1,
    owner=bindparam("new_owner"),
)
TO_TRANSFERRED: Final = _transition((_S.IN_FLIGHT,), state=_S.TRANSFERRED)
TO_DELIVERED: Final = _transition((_S.IN_FLIGHT,), state=_S.DELIVERED)
TO_DEFERRED: Final = _transition(
    (_S.IN_FLIGHT,),
    state=_S.PENDING,
    next_attempt_at=_time("next_attempt"),
    last_error=bindparam("error"),
    owner=None,
)
TO_UNCLAIMED: Final = _transition(
    (_S.IN_FLIGHT,),
    state=_S.PENDING,
    attempts=case((_r.attempts > 0, _r.attempts - 1), else_=0),
    owner=None,
)
"""Claimed but never attempted: pending again at once, the claim's attempt not counted."""
TO_FAILED: Final = _transition(
    (_S.IN_FLIGHT, _S.PENDING, _S.HELD),
    state=_S.FAILED,
    last_error=bindparam("error"),
    owner=None,
)
TO_EXPIRED: Final = _transition(
    (_S.PENDING,), state=_S.FAILED, last_error=EXPIRED_ERROR, owner=None
)

# --- per message: message_ids, at ------------------------------------------------------------

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

# --- recovery and expiry -------------------------------------------------------------------

RECOVER_ALL: Final[Update] = (
    update(RECIPIENTS)
    .where(_r.state == _S.IN_FLIGHT)
    .values(state=_S.PENDING, owner=None, updated_at=_time("at"))
)
RECOVER_OWNER: Final[Update] = RECOVER_ALL.where(_r.owner == bindparam("of_owner"))

EXPIRED: Final = Prepared(
    select(_r.id, _r.message_id)
    .join(MESSAGES, _m.id == _r.message_id)
    .where(_r.state == _S.PENDING, _m.expiry_time <= _time("now"))
    .order_by(_m.expiry_time, _r.message_id, _r.id)
    .limit(bindparam("limit"))
    .with_for_update(skip_locked=True, of=RECIPIENTS)
)

# --- views and housekeeping ------------------------------------------------------------------

COUNTS: Final[Select[Any]] = (
    select(_r.route, _r.precedence, _r.state, func.count())
    .group_by(_r.route, _r.precedence, _r.state)
    .order_by(_r.route, _r.precedence.desc(), _r.state)
)

WAITING: Final[Select[Any]] = (
    select(
        _m.id,
        _m.mts_identifier,
        _m.kind,
        _m.precedence,
        _m.arrival_time,
        _r.recipient,
        _r.route,
        _r.state,
        _r.attempts,
        _r.next_attempt_at,
        _r.last_error,
    )
    .join(MESSAGES, _m.id == _r.message_id)
    .where(_r.state.in_((_S.PENDING, _S.IN_FLIGHT, _S.HELD)))
    .order_by(_r.precedence.desc(), _r.arrival_time, _r.message_id, _r.id)
    .limit(bindparam("limit"))
)
"""The recipients the MTA still owes something, in service order (the operator's list)."""

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

FORGET_RECEIVED: Final[Delete] = delete(RECEIVED).where(RECEIVED.c.received_at < _time("before"))
