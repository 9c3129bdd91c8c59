"""The operations of the daemon's local API (:mod:`mta.operator.control` describes the framing).

Each operation checks its arguments (a bad one is refused with a message that names it),
runs its store work in the database thread and answers JSON.  ``submit`` returns only
once the message is committed: the MTS identifier it prints is a promise kept across a
crash.

Every request is first authorised by its caller (:mod:`mta.operator.access`, ``[access]``): an
outsider is refused everything, a user every operator's operation, and a user's
``submit``, ``inbox``, ``wait``, ``read`` and ``delete`` must name one of its own O/R
names (``originator``, ``user``).  A user that leaves ``user`` out (or ``originator``,
of ``submit``) is taken to mean its own, when it has one O/R name; a ``read`` without
``user`` looks only in its own mailboxes.  A refusal is answered and logged at WARNING
(rate-limited), naming the account, its uid and the operation.  The policy is read at
start: a changed ``[access]`` needs a restart.

Public API::

    LocalApi(service)   .socket_mode   .handle(request, payload, caller) -> (response, payload)
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sqlalchemy import Engine

from config.schema import MinimizeSubmissions, Security
from config.view import effective_settings
from mta.delivery.watch import MailboxWatch, WatchClosedError
from mta.faults import LogLimiter, store_fault
from mta.intake.plan import IntakeError
from mta.intake.submission import SubmitRequest
from mta.operator import queued
from mta.operator.access import (
    NEEDS,
    Caller,
    Grant,
    Need,
    Policy,
    Role,
    grant,
    not_own_heading,
    not_own_mailbox,
    not_own_name,
    refusal,
)
from mta.operator.control import (
    OPEN_SOCKET_MODE,
    SOCKET_MODE,
    ControlError,
    JsonObject,
    sees_every_account,
)
from mta.operator.minimize import Floors, describe
from mta.operator.views import Controls, Daemon, Submitter
from mta.transport import ConnectionState, Refused, SlotSnapshot, SlotState
from p1.errors import DecodeError, EncodeError
from p1.mts.envelope import Report, peek_envelope
from p1.mts.fields import ContentType
from p1.mts.orname import ORName, parse_orname
from p1.mts.precedence import Precedence, PrecedenceError, parse_precedence
from p1.mts.security_label import SecurityLabel, message_security_label
from p1.security.clearance import display_marking
from p1.security.naming import UnknownName, label_from_names
from store import (
    LOCAL_ROUTE,
    AuditEvent,
    AuditLog,
    AuditRecord,
    MailboxSummary,
    MessageStore,
    Quarantine,
    QuarantinedApdu,
    QuarantineSummary,
    QuarantineTotals,
    QueueCount,
    TransitQueue,
    WaitingRecipient,
    transaction,
)
from store.figures import OwnerFigure, owner_figures
from store.queue import Deletion, SelectedRecipient, Selection, ShapeCount

__all__ = ["LocalApi"]

log = logging.getLogger("aiox400.api")

WAIT_TIMEOUT = 30.0
"""Seconds a ``wait`` request waits when it does not say."""
WAIT_TIMEOUT_MOST = 3600.0
"""Longest ``timeout`` a ``wait`` request may ask for."""
WAIT_LIMIT = 100
"""Most entries one ``wait`` answer carries (the next request, after the last, gets more)."""

_Operation = Callable[["LocalApi", JsonObject, bytes], Awaitable[tuple[JsonObject, bytes]]]


class LocalApi:
    """Answers local API requests for one daemon (:class:`mta.operator.views.Daemon`)."""

    def __init__(self, service: Daemon, intake: Submitter, watch: MailboxWatch) -> None:
        self.service = service
        self.intake = intake
        self.watch = watch
        config = service.config
        self.policy = Policy.of(config.access, config.source, os.getuid(), os.getgid())
        """Who may do what (``[access]``, as it was at start)."""
        self.socket_mode = OPEN_SOCKET_MODE if self.policy.enforced else SOCKET_MODE
        """Anyone may connect when each request is authorised; else the daemon's group."""
        self.refusals = LogLimiter()
        self.minimizing = asyncio.Lock()
        """One MINIMIZE change at a time (each reads the state the last one left)."""
        if self.policy.enforced and not sees_every_account():
            log.warning(
                "[access]: this process's user namespace does not map every account "
                "(systemd PrivateUsers=yes?): other accounts' requests show as the "
                "overflow uid and are refused"
            )

    async def handle(
        self, request: JsonObject, payload: bytes, caller: Caller
    ) -> tuple[JsonObject, bytes]:
        """Authorise ``caller``'s request, then dispatch on ``op``."""
        operation = _OPERATIONS.get(request["op"])
        if operation is None:
            raise ControlError(f"unknown op {request['op']!r}; known: {', '.join(_OPERATIONS)}")
        request = await self._authorised(request, caller, payload)
        try:
            return await operation(self, request, payload)
        except ControlError:
            raise
        except Exception as error:
            fault = store_fault(error)
            if fault is None:
                raise
            self.service.store.failed(fault)
            raise ControlError(_store_refusal(fault)) from error

    # --- access ------------------------------------------------------------------------

    async def _authorised(self, request: JsonObject, caller: Caller, payload: bytes) -> JsonObject:
        """``request`` as ``caller`` may ask it (a user's own name filled in where it
        left it out, its content's heading checked); ControlError, logged, if it may
        not."""
        op: str = request["op"]
        granted = grant(self.policy, caller)
        why = refusal(self.policy, caller, granted, op)
        if why is None and granted.role is Role.USER:
            request, why = await self._as_user(request, caller, granted)
            if why is None and op == "submit":
                why = not_own_heading(caller, granted, request.get("content_type"), payload)
        if why is not None:
            self.refusals.warning(
                log, f"{caller.uid}:{op}", "refused %s to %s: %s", op, caller.who, why
            )
            raise ControlError(why)
        return request

    async def _as_user(
        self, request: JsonObject, caller: Caller, granted: Grant
    ) -> tuple[JsonObject, str | None]:
        """A user's request with its own name filled in; or why it is refused."""
        key = "originator" if NEEDS[request["op"]] is Need.OWN_NAME else "user"
        if key not in request:
            if request["op"] == "read":
                return await self._own_entry(request, granted)
            if len(granted.names) > 1:
                raise ControlError(
                    f"say which of your O/R names is the {key}: {' or '.join(granted.shown)}"
                )
            return {**request, key: granted.shown[0]}, None
        name = _name(request, key)
        if granted.owns(name.canonical):
            return request, None
        if key == "originator":
            return request, not_own_name(caller, granted, request[key])
        return request, not_own_mailbox(caller, granted, request[key])

    async def _own_entry(self, request: JsonObject, granted: Grant) -> tuple[JsonObject, None]:
        """A user's ``read`` without ``user``: the mailbox of its own that holds the entry."""
        entry_id = _int(request, "id")
        db = self.service.db
        mailbox = await db.run(_holder, db.engine, granted.names, entry_id)
        if mailbox is None:
            raise ControlError(
                f"no message {entry_id} in the mailbox of {' or '.join(granted.shown)}"
            )
        return {**request, "user": mailbox}, None

    # --- submission --------------------------------------------------------------------

    async def submit(self, request: JsonObject, content: bytes) -> tuple[JsonObject, bytes]:
        probe = request.get("probe", False) is True
        submission = SubmitRequest(
            originator=_name(request, "originator"),
            recipients=tuple(_names(request, "recipients")),
            precedence=_precedence(request),
            content_type=_content_type(request),
            content=content,
            delivery_report=bool(request.get("delivery_report", False)),
            deferred_delivery_time=_time(request, "deferred_delivery_time"),
            latest_delivery_time=_time(request, "latest_delivery_time"),
            probe=probe,
            content_length=_probe_content_length(request),
            security_label=_label(request, self.service.config.security),
        )
        if probe and submission.security_label is not None:
            raise ControlError("a probe (probe: true) carries no security_label here")
        if probe and content:
            raise ControlError("a probe (probe: true) has no content after the request line")
        if not content and not probe:
            raise ControlError("submit needs the content after the request line")
        self._minimized(submission.precedence)
        try:
            submitted = await self.intake.submit(submission)
        except (IntakeError, EncodeError) as error:
            raise ControlError(f"message refused: {error}") from error
        except Refused as refused:
            raise ControlError(_store_refusal(refused.fault or str(refused))) from refused
        answer = {"mts_identifier": submitted.mts_identifier, "rejected": [*submitted.rejected]}
        return {"ok": True, **answer}, b""

    def _minimized(self, precedence: Precedence) -> None:
        """Refuse a submission below the switch-wide MINIMIZE, when so configured."""
        floor = self.service.minimize.floors.switch
        refuse = self.service.config.minimize.submissions is MinimizeSubmissions.REFUSE
        if refuse and floor is not None and precedence < floor:
            raise ControlError(
                f"message refused: MINIMIZE in force, only {floor.label} and above are "
                f"accepted (this one is {precedence.label})"
            )

    # --- operator ----------------------------------------------------------------------

    async def status(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        counts = await self._counts()
        quarantined = await self.service.db.run(_quarantine_totals, self.service.db.engine)
        bounds = self.service.config.quarantine
        states: dict[str, int] = {}
        for count in counts:
            states[count.state.value] = states.get(count.state.value, 0) + count.recipients
        slots = [runner.snapshot() for runner in self.service.runners]
        up = sum(1 for s in slots if s.state == SlotState.UP)
        closed = sum(1 for s in slots if s.state == SlotState.CLOSED)
        bound = sum(1 for s in slots for c in s.connections if c.state in _BOUND)
        return {
            "ok": True,
            "name": self.service.config.name,
            "owner": self.service.owner,
            "uptime": round(time.monotonic() - self.service.started, 1),
            "recipients": states,
            "in_flight": await self._owners(),
            "slots": len(slots),
            "slots_connected": up,
            "slots_closed": closed,
            "slots_down": _slots_down(slots),
            "connections": bound,
            "store": self.service.store.down,
            "minimize": _minimize(self.service.minimize.floors),
            "quarantine": {
                "messages": quarantined.messages,
                "octets": quarantined.octets,
                "max_messages": bounds.max_messages,
                "max_bytes": bounds.max_bytes,
            },
            "degraded": [
                {
                    "part": part.name,
                    "failures": part.failures,
                    "last_error": part.last_error,
                    "since": part.since,
                }
                for part in self.service.parts.degraded()
            ],
            "gc": {
                "frozen": self.service.frozen,
                "collections": [generation["collections"] for generation in gc.get_stats()],
            },
        }, b""

    async def queue(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        counts = await self._counts()
        return {
            "ok": True,
            "counts": [
                {
                    "route": c.route,
                    "precedence": c.precedence.label,
                    "state": c.state.value,
                    "recipients": c.recipients,
                }
                for c in counts
            ],
            "owner": self.service.owner,
            "in_flight": await self._owners(),
        }, b""

    async def messages(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        limit = request.get("limit", 100)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 10_000:
            raise ControlError("limit must be an integer from 1 to 10000")

        def waiting() -> tuple[WaitingRecipient, ...]:
            with transaction(self.service.db.engine, read_only=True) as session:
                return TransitQueue(session).waiting(limit)

        rows = await self.service.db.run(waiting)
        now = datetime.now(UTC)
        return {"ok": True, "recipients": [_queued(r, now) for r in rows]}, b""

    async def _counts(self) -> tuple[QueueCount, ...]:
        def counts() -> tuple[QueueCount, ...]:
            with transaction(self.service.db.engine, read_only=True) as session:
                return TransitQueue(session).counts()

        return await self.service.db.run(counts)

    async def _owners(self) -> list[JsonObject]:
        """Recipients in flight per owner: which process of the site holds what, and
        whether its lease has lapsed (a live process takes those back)."""

        def owners() -> tuple[OwnerFigure, ...]:
            with transaction(self.service.db.engine, read_only=True) as session:
                return owner_figures(session)

        now = datetime.now(UTC)
        return [
            {
                "owner": figure.owner,
                "recipients": figure.recipients,
                "lease_until": None
                if figure.lease_until is None
                else figure.lease_until.isoformat(),
                "lapsed": figure.lease_until is None or figure.lease_until <= now,
                "this_process": figure.owner == self.service.owner,
            }
            for figure in await self.service.db.run(owners)
        ]

    async def channels(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        slots = []
        for runner in self.service.runners:
            snap = runner.snapshot()
            slots.append(
                {
                    "peer": snap.peer,
                    "precedences": list(snap.precedences),
                    "host": snap.host,
                    "port": snap.port,
                    "dscp": snap.dscp,
                    "mode": snap.mode,
                    "tls": snap.tls,
                    "max_connections": snap.max_connections,
                    "backlog": snap.backlog,
                    "state": snap.state.value,
                    "connections": [
                        {
                            "index": c.index,
                            "state": c.state.value,
                            "since": c.since,
                            "transfers": c.transfers,
                            "last_error": c.last_error,
                            "tls_version": c.tls_version,
                        }
                        for c in snap.connections
                    ],
                }
            )
        return {"ok": True, "slots": slots}, b""

    async def hold(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        return await self._per_selection(request, release=False)

    async def release(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        return await self._per_selection(request, release=True)

    async def _per_selection(
        self, request: JsonObject, *, release: bool
    ) -> tuple[JsonObject, bytes]:
        selection = self._selection(request)
        event = AuditEvent.RELEASED if release else AuditEvent.HELD

        def change() -> tuple[SelectedRecipient, ...]:
            now = datetime.now(UTC)
            with transaction(self.service.db.engine) as session:
                queue = TransitQueue(session)
                changed = (queue.release_selected if release else queue.hold_selected)(
                    selection, now
                )
                AuditLog(session).record_many(_operator_records(event, changed, now))
                return changed

        changed = await self.service.db.run(change)
        log.info("%s %d recipient(s) (operator)", event, len(changed))
        if release:
            self.service.notify()
        return {"ok": True, "changed": len(changed), "recipients": _refs(changed)}, b""

    async def queue_delete(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        """Delete queued recipients; silently (no report: X.411 has no reason for it, and
        Postfix and Isode delete so too); each one is in the audit log."""
        selection = self._selection(request)

        def delete() -> Deletion:
            now = datetime.now(UTC)
            with transaction(self.service.db.engine) as session:
                deletion = TransitQueue(session).delete_selected(selection)
                records = _operator_records(AuditEvent.DELETED, deletion.deleted, now)
                AuditLog(session).record_many(records)
                return deletion

        deletion = await self.service.db.run(delete)
        for ref in deletion.deleted:
            log.info(
                "deleted %s for %s from the queue (operator; no report)",
                ref.mts_identifier,
                ref.recipient,
            )
        return {
            "ok": True,
            "deleted": len(deletion.deleted),
            "recipients": _refs(deletion.deleted),
            "busy": _refs(deletion.busy),
            "messages_removed": deletion.messages_removed,
        }, b""

    async def flush(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        """Retry now: what waits out a retry backoff (of one peer, or all) is due at once,
        and the peer's slots stop waiting out their connection backoff."""
        peer = request.get("peer")
        if peer is not None:
            peer = self._route(peer)

        def flush() -> int:
            with transaction(self.service.db.engine) as session:
                return TransitQueue(session).flush(peer, datetime.now(UTC))

        due = await self.service.db.run(flush)
        peers = [peer] if peer is not None else [p.name for p in self.service.config.peers]
        for name in peers:
            self.service.flush_peer(name)
        self.service.notify()
        log.info("flushed %s: %d recipient(s) due now (operator)", peer or "every route", due)
        return {"ok": True, "due": due}, b""

    async def minimize(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        """MINIMIZE at ``precedence`` (switch-wide, or for ``peer``), or off (``precedence``
        "off"); kept in the state directory, audited and logged once.  No ``precedence``:
        what is in force."""
        state = self.service.minimize
        if request.get("precedence") is None:
            return {"ok": True, "minimize": _minimize(state.floors)}, b""
        peer = None if request.get("peer") is None else self._peer(request["peer"])
        level = None if request["precedence"] == "off" else _precedence(request)
        async with self.minimizing:
            if level is None:
                floors = await asyncio.to_thread(state.lift, peer)
            else:
                floors = await asyncio.to_thread(state.set, level, peer)
        order = "off" if level is None else level.label
        detail = f"{order} ({'switch-wide' if peer is None else peer}): {describe(floors)}"
        await self.service.db.run(self._audit_minimize, peer, detail)
        level_of = logging.INFO if level is None else logging.WARNING
        log.log(level_of, "MINIMIZE %s (operator)", detail)
        if level is None:
            self.service.notify()
        return {"ok": True, "minimize": _minimize(floors)}, b""

    def _audit_minimize(self, peer: str | None, detail: str) -> None:
        with transaction(self.service.db.engine) as session:
            AuditLog(session).record(
                AuditEvent.MINIMIZED, datetime.now(UTC), peer=peer, detail=detail
            )

    def _peer(self, peer: object) -> str:
        """A configured peer's name; refused otherwise, naming the known."""
        known = [p.name for p in self.service.config.peers]
        if peer in known:
            return str(peer)
        raise ControlError(f"no peer {peer!r}; known: {', '.join(known) or 'none'}")

    async def track(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        """Every audit entry of one message at this MTA, oldest first, and where each of
        its recipients stands in the queue now."""
        identifier = request.get("mts_identifier")
        if not isinstance(identifier, str) or not identifier:
            raise ControlError("mts_identifier must be an MTS identifier as text")

        def history() -> tuple[tuple[AuditRecord, ...], tuple[WaitingRecipient, ...]]:
            with transaction(self.service.db.engine, read_only=True) as session:
                queued = TransitQueue(session).recipients_of(identifier)
                return AuditLog(session).history(identifier), queued

        entries, queued = await self.service.db.run(history)
        now = datetime.now(UTC)
        return {
            "queue": [_queued(r, now) for r in queued],
            "ok": True,
            "events": [
                {
                    "at": e.at.isoformat(),
                    "event": str(e.event),
                    "recipient": e.recipient,
                    "peer": e.peer,
                    "detail": e.detail,
                }
                for e in entries
            ],
        }, b""

    async def qshape(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        """Waiting recipients per route, precedence and age bucket."""
        edges = tuple(timedelta(minutes=m) for m in QSHAPE_MINUTES)

        def shape() -> tuple[ShapeCount, ...]:
            with transaction(self.service.db.engine, read_only=True) as session:
                return TransitQueue(session).shape(datetime.now(UTC), edges)

        counts = await self.service.db.run(shape)
        return {
            "ok": True,
            "minutes": list(QSHAPE_MINUTES),
            "counts": [
                {
                    "route": c.route,
                    "precedence": c.precedence.label,
                    "bucket": c.bucket,
                    "recipients": c.recipients,
                }
                for c in counts
            ],
            "owner": self.service.owner,
            "in_flight": await self._owners(),
        }, b""

    async def config(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        """The running daemon's configuration, secrets hidden (:mod:`config.view`)."""
        settings = effective_settings(self.service.config)
        return {"ok": True, "settings": [[key, value] for key, value in settings]}, b""

    def _selection(self, request: JsonObject) -> Selection:
        """The recipients a hold, release or delete request names; refused if none."""
        identifiers = request.get("mts_identifiers", [])
        if not isinstance(identifiers, list) or not all(isinstance(i, str) for i in identifiers):
            raise ControlError("mts_identifiers must be a list of MTS identifiers as text")
        peer = request.get("peer")
        precedence = request.get("precedence")
        selection = Selection(
            message_ids=tuple(_ints(request, "message_ids")) if "message_ids" in request else (),
            mts_identifiers=tuple(identifiers),
            route=None if peer is None else self._route(peer),
            precedence=None if precedence is None else _precedence(request),
            everything=request.get("all") is True,
        )
        if selection.empty:
            raise ControlError(
                "say which: message ids, MTS identifiers, a peer, a precedence or all"
            )
        return selection

    def _route(self, peer: object) -> str:
        """A configured peer's name (or ``local``); refused otherwise, naming the known."""
        known = [p.name for p in self.service.config.peers]
        if peer == LOCAL_ROUTE or peer in known:
            return str(peer)
        raise ControlError(f"no peer {peer!r}; known: {', '.join([*known, LOCAL_ROUTE])}")

    async def queue_show(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        """One queued message and its APDU (``x400ctl show``), by id or MTS identifier."""
        if "message_id" in request:
            found = await queued.show(self.service, message_id=_int(request, "message_id"))
        else:
            identifier = request.get("mts_identifier")
            if not isinstance(identifier, str) or not identifier:
                raise ControlError("say which: message_id, or mts_identifier as text")
            found = await queued.show(self.service, mts_identifier=identifier)
        answer, apdu = found
        marking = _security_marking(self.service.config.security, apdu)
        if marking is not None:
            answer["message"]["security_marking"] = marking
        return answer, apdu

    async def non_deliver(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        """Non-deliver the selected waiting recipients, reporting to the originators
        (:func:`mta.operator.queued.non_deliver`)."""
        reason = queued.check_reason(request.get("reason"))
        return await queued.non_deliver(self.service, self._selection(request), reason), b""

    async def track_find(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        """The messages with a recipient, from an originator, seen since a time."""
        recipient = _name(request, "recipient").canonical if "recipient" in request else None
        originator = _name(request, "originator").canonical if "originator" in request else None
        since = _time(request, "since")
        if recipient is None and originator is None and since is None:
            raise ControlError("say which: recipient, originator or since")
        found = await queued.find(
            self.service, recipient=recipient, originator=originator, since=since
        )
        return found, b""

    # --- the daemon's life -------------------------------------------------------------

    async def reload(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        """Re-read the configuration file, as SIGHUP does (the same handler)."""
        done = self._controls().reload()
        if done.error is not None:
            raise ControlError(
                f"reload refused, the previous configuration stays in force: {done.error}"
            )
        return {"ok": True, "applied": done.applied, "restart": [*done.restart]}, b""

    async def stop(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        """Stop gracefully, as SIGTERM does (the same path); answered before it begins."""
        self._controls().stop("request of the local API (x400ctl stop)")
        return {"ok": True, "pid": os.getpid()}, b""

    def _controls(self) -> Controls:
        controls = self.service.controls
        if controls is None:
            raise ControlError("this MTA is not run by x400-mta: it can neither reload nor stop")
        return controls

    # --- quarantine --------------------------------------------------------------------

    async def quarantine(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        def listing() -> tuple[QuarantineSummary, ...]:
            with transaction(self.service.db.engine, read_only=True) as session:
                return Quarantine(session).list()

        entries = await self.service.db.run(listing)
        return {"ok": True, "entries": [_quarantined(e) for e in entries]}, b""

    async def quarantine_read(
        self, request: JsonObject, payload: bytes
    ) -> tuple[JsonObject, bytes]:
        entry_id = _int(request, "id")

        def read() -> QuarantinedApdu | None:
            with transaction(self.service.db.engine, read_only=True) as session:
                return Quarantine(session).read(entry_id)

        entry = await self.service.db.run(read)
        if entry is None:
            raise ControlError(f"no entry {entry_id} in the quarantine")
        return {"ok": True, "entry": _quarantined(entry)}, entry.apdu

    async def quarantine_delete(
        self, request: JsonObject, payload: bytes
    ) -> tuple[JsonObject, bytes]:
        ids = _ints(request, "ids")

        def delete() -> int:
            with transaction(self.service.db.engine) as session:
                return Quarantine(session).delete(ids)

        deleted = await self.service.db.run(delete)
        log.info("deleted %d of the quarantine's entries %s", deleted, ids)
        return {"ok": True, "deleted": deleted}, b""

    # --- message store -----------------------------------------------------------------

    async def inbox(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        user = _name(request, "user").canonical
        unread_only = bool(request.get("unread_only", False))

        def listing() -> tuple[tuple[MailboxSummary, ...], int]:
            with transaction(self.service.db.engine, read_only=True) as session:
                store = MessageStore(session)
                return store.list(user, unread_only=unread_only), store.newest_id(user)

        entries, newest = await self.service.db.run(listing)
        messages = [_summary(e) for e in entries]
        return {"ok": True, "user": user, "messages": messages, "newest": newest}, b""

    async def wait(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        """A user's entries numbered above ``after`` (given, or the newest now), once
        there are any or ``timeout`` seconds have passed; ``stored_at``: when the daemon
        saw committed the delivery that woke the request (None if none did)."""
        user = _name(request, "user").canonical
        after = _int(request, "after") if request.get("after") is not None else None
        timeout = _seconds(request, "timeout", default=WAIT_TIMEOUT, most=WAIT_TIMEOUT_MOST)
        db = self.service.db
        deadline = time.monotonic() + timeout
        stored_at: datetime | None = None
        while True:
            with self.watch.watching(user) as stored:
                if after is None:
                    after = await db.run(_newest_id, db.engine, user)
                else:
                    entries = await db.run(_since, db.engine, user, after)
                    if entries:
                        break
                try:
                    stored_at = await asyncio.wait_for(stored, deadline - time.monotonic())
                except TimeoutError:
                    entries = ()
                    break
                except WatchClosedError as error:
                    raise ControlError("the MTA is stopping") from error
        messages = [_summary(e) for e in entries]
        return {
            "ok": True,
            "user": user,
            "after": max((e.id for e in entries), default=after),
            "messages": messages,
            "stored_at": None if stored_at is None else stored_at.isoformat(),
        }, b""

    async def read(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        user = _name(request, "user").canonical if "user" in request else None
        entry_id = _int(request, "id")

        def read_and_mark() -> Any:
            with transaction(self.service.db.engine) as session:
                store = MessageStore(session)
                message = store.read(user, entry_id)
                if message is not None:
                    store.mark_read(message.user, [entry_id])
                return message

        message = await self.service.db.run(read_and_mark)
        if message is None:
            where = "any mailbox" if user is None else f"the mailbox of {user}"
            raise ControlError(f"no message {entry_id} in {where}")
        summary = _summary(message)
        marking = _security_marking(self.service.config.security, message.apdu)
        if marking is not None:
            summary["security_marking"] = marking
        return {"ok": True, "message": summary}, message.apdu

    async def delete(self, request: JsonObject, payload: bytes) -> tuple[JsonObject, bytes]:
        user = _name(request, "user").canonical
        ids = _ints(request, "ids")

        def delete() -> int:
            with transaction(self.service.db.engine) as session:
                return MessageStore(session).delete(user, ids)

        return {"ok": True, "deleted": await self.service.db.run(delete)}, b""


_OPERATIONS: dict[str, _Operation] = {
    "submit": LocalApi.submit,
    "status": LocalApi.status,
    "queue": LocalApi.queue,
    "messages": LocalApi.messages,
    "channels": LocalApi.channels,
    "hold": LocalApi.hold,
    "release": LocalApi.release,
    "queue_delete": LocalApi.queue_delete,
    "flush": LocalApi.flush,
    "minimize": LocalApi.minimize,
    "track": LocalApi.track,
    "qshape": LocalApi.qshape,
    "config": LocalApi.config,
    "quarantine": LocalApi.quarantine,
    "quarantine_read": LocalApi.quarantine_read,
    "quarantine_delete": LocalApi.quarantine_delete,
    "queue_show": LocalApi.queue_show,
    "non_deliver": LocalApi.non_deliver,
    "track_find": LocalApi.track_find,
    "reload": LocalApi.reload,
    "stop": LocalApi.stop,
    "inbox": LocalApi.inbox,
    "wait": LocalApi.wait,
    "read": LocalApi.read,
    "delete": LocalApi.delete,
}


QSHAPE_MINUTES = (5, 10, 20, 40, 80)
"""Upper edges of ``qshape``'s age buckets, in minutes (the last bucket: older)."""

_BOUND = frozenset({ConnectionState.IDLE, ConnectionState.TRANSFERRING})
"""States of an outbound connection with an association up."""


def _store_refusal(fault: str) -> str:
    return f"the store cannot take this now ({fault}); try again later"


def _operator_records(
    event: AuditEvent, changed: tuple[SelectedRecipient, ...], now: datetime
) -> list[AuditRecord]:
    return [
        AuditRecord(
            at=now,
            event=event,
            mts_identifier=ref.mts_identifier,
            recipient=ref.recipient,
            peer=None if ref.route == LOCAL_ROUTE else ref.route,
            detail="by the operator",
        )
        for ref in changed
    ]


def _queued(r: WaitingRecipient, now: datetime) -> JsonObject:
    """One recipient in the queue, as ``messages`` and ``track`` answer it."""
    return {
        "message_id": r.message_id,
        "mts_identifier": r.mts_identifier,
        "kind": r.kind.value,
        "precedence": r.precedence.label,
        "arrival_time": r.arrival_time.isoformat(),
        "recipient": r.recipient,
        "route": r.route,
        "state": r.state.value,
        "attempts": r.attempts,
        "next_attempt_at": r.next_attempt_at.isoformat(),
        "last_error": r.last_error,
        "size": r.size,
        "age": round((now - r.arrival_time).total_seconds(), 1),
    }


def _refs(refs: tuple[SelectedRecipient, ...]) -> list[JsonObject]:
    return [
        {
            "message_id": r.message_id,
            "mts_identifier": r.mts_identifier,
            "recipient": r.recipient,
            "route": r.route,
        }
        for r in refs
    ]


# --- argument checks -------------------------------------------------------------------


def _name(request: JsonObject, key: str) -> ORName:
    value = request.get(key)
    if not isinstance(value, str):
        raise ControlError(f"{key} must be an O/R address in text form")
    try:
        return parse_orname(value)
    except (DecodeError, ValueError) as error:
        raise ControlError(f"{key} {value!r}: {error}") from error


def _names(request: JsonObject, key: str) -> list[ORName]:
    values = request.get(key)
    if not isinstance(values, list) or not values:
        raise ControlError(f"{key} must be a non-empty list of O/R addresses")
    return [_name({key: v}, key) for v in values]


def _minimize(floors: Floors) -> JsonObject:
    """The MINIMIZE in force as the local API answers it."""
    return {**floors.to_json(), "shown": describe(floors)}


def _precedence(request: JsonObject) -> Precedence:
    value = request.get("precedence", "routine")
    if not isinstance(value, str):
        raise ControlError("precedence must be a name (flash) or a number (0-127) as a string")
    try:
        return parse_precedence(value)
    except PrecedenceError as error:
        raise ControlError(str(error)) from error


_OBJECT_IDENTIFIER: Final = re.compile(r"[0-2](\.(0|[1-9][0-9]{0,38})){2,30}")
"""A content type's dotted object identifier: arcs no longer than a UUID's (X.667)."""


def _label(request: JsonObject, security: Security) -> SecurityLabel | None:
    """``security_label`` ({"classification", "categories", "privacy_mark"}, by the
    names of the configured policy) as the label it names; ControlError naming what the
    policy does not define."""
    given = request.get("security_label")
    if given is None:
        return None
    if not isinstance(given, dict) or not isinstance(given.get("classification"), str):
        raise ControlError("security_label must be an object with classification as text")
    categories = given.get("categories", [])
    mark = given.get("privacy_mark")
    if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
        raise ControlError("security_label categories must be a list of names")
    if mark is not None and not isinstance(mark, str):
        raise ControlError("security_label privacy_mark must be text")
    try:
        return label_from_names(security.spif, given["classification"], categories, mark)
    except UnknownName as error:
        raise ControlError(f"message refused: security label: {error}") from None


def _content_type(request: JsonObject) -> ContentType:
    value = request.get("content_type")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _OBJECT_IDENTIFIER.fullmatch(value):
        return value
    raise ControlError("content_type must be a built-in number (22) or an object identifier")


def _probe_content_length(request: JsonObject) -> int | None:
    """A probe's content-length (X.411 12.2.1.2.1.3: 0 to 2**31-1 octets), if given."""
    value = request.get("probe_content_length")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        raise ControlError("probe_content_length must be 0..2147483647, an integer")
    return value


def _time(request: JsonObject, key: str) -> datetime | None:
    value = request.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ControlError(f"{key} must be an ISO 8601 time as a string")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as error:
        raise ControlError(f"{key} {value!r} is not an ISO 8601 time") from error
    if moment.tzinfo is None:
        raise ControlError(f"{key} {value!r} needs a time zone")
    return moment


def _seconds(request: JsonObject, key: str, *, default: float, most: float) -> float:
    value = request.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= most:
        raise ControlError(f"{key} must be a number of seconds from 0 to {most:g}")
    return float(value)


def _holder(engine: Engine, mailboxes: tuple[str, ...], entry_id: int) -> str | None:
    """Which of ``mailboxes`` holds entry ``entry_id``; None if none does."""
    with transaction(engine, read_only=True) as session:
        message = MessageStore(session).read(None, entry_id)
    if message is None or message.user not in mailboxes:
        return None
    return message.user


def _newest_id(engine: Engine, user: str) -> int:
    with transaction(engine, read_only=True) as session:
        return MessageStore(session).newest_id(user)


def _since(engine: Engine, user: str, after: int) -> tuple[MailboxSummary, ...]:
    with transaction(engine, read_only=True) as session:
        return MessageStore(session).since(user, after, limit=WAIT_LIMIT)


def _quarantine_totals(engine: Engine) -> QuarantineTotals:
    with transaction(engine, read_only=True) as session:
        return Quarantine(session).totals()


def _quarantined(entry: QuarantineSummary) -> JsonObject:
    return {
        "id": entry.id,
        "peer": entry.peer,
        "received_at": entry.received_at.isoformat(),
        "reason": entry.reason,
        "size": entry.size,
    }


def _int(request: JsonObject, key: str) -> int:
    value = request.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ControlError(f"{key} must be an integer")
    return value


def _ints(request: JsonObject, key: str) -> list[int]:
    values = request.get(key)
    if not isinstance(values, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in values
    ):
        raise ControlError(f"{key} must be a list of integers")
    return values


def _security_marking(security: Security, apdu: bytes) -> str | None:
    """The display marking of a stored message's security label under the configured
    policy (the SPIF's), or None without a policy or a label."""
    if security.spif is None:
        return None
    try:
        read = peek_envelope(apdu)
        envelope = read.envelope if isinstance(read, Report) else read
        label = message_security_label(envelope.extensions)
    except DecodeError:
        return None  # (the client shows the label's octets and why they do not decode)
    return None if label is None else display_marking(security.spif, label)


def _summary(entry: MailboxSummary) -> JsonObject:
    return {
        "id": entry.id,
        "mts_identifier": entry.mts_identifier,
        "kind": entry.kind.value,
        "precedence": entry.precedence.label,
        "subject": entry.subject,
        "originator": entry.originator,
        "security_label": entry.security_label,
        "message_type": entry.message_type,
        "delivered_at": entry.delivered_at.isoformat(),
        "read": entry.read,
        "size": entry.size,
    }


def _slots_down(slots: list[SlotSnapshot]) -> list[JsonObject]:
    """The slots with no connection bound whose connections failed (waiting out a backoff
    or trying again), each with the last error (a refused bind stays shown until a bind
    is accepted)."""
    down: list[JsonObject] = []
    for slot in slots:
        errors = [c.last_error for c in slot.connections if c.last_error]
        if slot.state != SlotState.UP and errors:
            down.append({"slot": f"{slot.peer}/{'+'.join(slot.precedences)}", "error": errors[0]})
    return down
