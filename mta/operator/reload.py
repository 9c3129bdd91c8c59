"""Re-reading the configuration file on SIGHUP (``systemctl reload``, systemd.service(5)
``ExecReload=``).

The new file is loaded and validated first; a file that no longer loads is reported as
the loader says it (file, key, value, what was expected) in one ERROR line and nothing
changes.  Then what can change in a running daemon without risk is applied at once,
every part swapped together (:meth:`mta.operator.views.Reconfigurable.reconfigure`):
should anything
fail there, one ERROR line says so and the daemon keeps the configuration it had.  A
reload never stops the daemon.

Applied:

    peers         a slot added (with its peer or not) gets its runner, a slot removed
                  loses it, and a slot whose settings changed (port, DSCP, mode,
                  precedences, max_connections, backlog_threshold, idle_timeout,
                  selectors), or whose peer's did (host, selectors, protocol,
                  credentials), gets a new one; a retired runner finishes the transfer
                  in progress, puts back what it claimed and did not send (the new
                  runner sends it: nothing is sent twice, nothing is lost) and releases
                  its association (:meth:`mta.outbound.channels.SlotRunner.retire`).  A slot left
                  as it was keeps its runner and its connections, also when its peer's
                  routes or supported_extensions changed.  A removed peer can no longer
                  bind to this MTA; its associations up end as they would have.
    routes        the router is rebuilt from the peers' routes, ``default_route``,
                  ``local_domains``, ``local_users``, ``accept_any_recipient``,
                  ``foreign_originators`` and ``supported_extensions``; it routes (and
                  judges the originators of) what is taken in from now on.
                  Recipients already queued keep the route they were given when they
                  were taken in: re-routing them could send a message twice, once on
                  each route.  Those of a removed
                  peer stay queued under its name (a WARNING counts them): they leave if
                  a peer of that name is configured again, else they are non-delivered
                  at their ``max_age``, or ``x400ctl delete --peer`` removes them.
    limits        ``[limits]``: the connection limits apply to the inbound connections
                  accepted and the binds answered from now on, the stack's limits and
                  timeouts to the associations that begin from now on; the associations
                  up keep theirs.  The ``api`` keys (``max_api_connections``,
                  ``api_idle_timeout``, ...) belong to the local API's server: they
                  need a restart.
    retention     ``[retention]``, from the next pruning round
    max_age       for what is taken in from now on (a queued message keeps its expiry)
    retry         for the next failed transfer
    dscp          the precedence table, for what is submitted from now on
    log_level     the threshold of every logger (unless ``--log-level`` overrides it)
    quarantine    the bounds of what is kept of transfers that cannot be taken in
    TLS files     every certificate, key and CA file is read again (the listeners'
                  too): connections made from now on present and check the files on
                  disk now; a listener's ``tls`` and its files' paths need a restart

Every other key that changed is named in one WARNING line each ("needs a restart"): the
listeners, the database, the state directory, the control socket, the MTA's name, global
domain and password, and any section not listed above.  One INFO line sums up what was
applied ("reloaded FILE: peers added X, changed Y, removed Z; limits; retention").

The same reload answers ``x400ctl reload`` (the local API's ``reload``, through
:mod:`mta.lifecycle`, the one way in): the :class:`Reloaded` it returns says what was
applied, what needs a restart, or why the file was refused.

Public API::

    Reloader(service, *, level_override=None)    called on SIGHUP -> Reloaded
    Reloaded (:class:`mta.operator.views.Reloaded`)
    compare(old, new) -> Changes(applied, restart)
    compare_peers(old, new) -> PeerChanges(added, changed, removed, routed)
    applied_config(old, new) -> MtaConfig       ``new`` with what needs a restart kept ``old``
    APPLIED
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from sqlalchemy import Engine

from config.loader import ConfigError, load_config
from config.schema import ConnectionLimits, MtaConfig, Peer
from mta.operator.views import Reconfigurable, Reloaded
from store import RecipientState, TransitQueue, transaction

__all__ = [
    "APPLIED",
    "Changes",
    "PeerChanges",
    "Reloaded",
    "Reloader",
    "applied_config",
    "compare",
    "compare_peers",
]

log = logging.getLogger("aiox400.mta")

APPLIED: Final = (
    "local_domains",
    "local_users",
    "accept_any_recipient",
    "foreign_originators",
    "supported_extensions",
    "peers",
    "default_route",
    "max_age",
    "retry",
    "precedence_table",
    "log_level",
    "limits",
    "connection_limits",
    "quarantine",
    "retention",
)
"""The :class:`MtaConfig` fields a reload applies (any other needs a restart)."""
_API_LIMITS: Final = (
    "max_api_connections",
    "api_idle_timeout",
    "api_operator_connections",
    "max_api_connections_per_uid",
    "max_api_pending_per_uid",
)
"""``[limits]`` keys of the local API's server, which is built at start."""
_UNCOMPARED: Final = frozenset({"source"})
_KEYS: Final = {"precedence_table": "dscp", "connection_limits": "limits"}
"""Fields whose key in the file has another name (both kinds of limits are ``[limits]``)."""
_OWED: Final = frozenset({RecipientState.PENDING, RecipientState.IN_FLIGHT, RecipientState.HELD})


@dataclass(frozen=True, slots=True)
class Changes:
    """What differs between two configurations, as keys of the file."""

    applied: tuple[str, ...]
    """Changed keys applied in place."""
    restart: tuple[str, ...]
    """Changed keys that take effect only at the next start."""


@dataclass(frozen=True, slots=True)
class PeerChanges:
    """How the peers of two configurations differ, by name."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    """Peers whose connections are set up otherwise: they get new runners."""
    removed: tuple[str, ...] = ()
    routed: tuple[str, ...] = ()
    """Peers whose routes or supported extensions alone changed: the router's business."""

    def __str__(self) -> str:
        parts = [
            f"{what} {', '.join(names)}"
            for what, names in (
                ("added", self.added),
                ("changed", self.changed),
                ("removed", self.removed),
                ("re-routed", self.routed),
            )
            if names
        ]
        return "peers " + ", ".join(parts) if parts else ""


def compare(old: MtaConfig, new: MtaConfig) -> Changes:
    """The keys whose values differ between ``old`` and ``new``."""
    applied: list[str] = []
    restart: list[str] = []
    for field in dataclasses.fields(MtaConfig):
        if field.name in _UNCOMPARED or getattr(old, field.name) == getattr(new, field.name):
            continue
        key = _KEYS.get(field.name, field.name)
        if field.name == "connection_limits":
            _compare_limits(old, new, applied, restart)
            continue
        bucket = applied if field.name in APPLIED else restart
        if key not in bucket:
            bucket.append(key)
    return Changes(applied=tuple(applied), restart=tuple(restart))


def _compare_limits(old: MtaConfig, new: MtaConfig, applied: list[str], restart: list[str]) -> None:
    """``[limits]``: the local API's keys need a restart, the others are applied."""
    before, after = old.connection_limits, new.connection_limits
    for name in _API_LIMITS:
        if getattr(before, name) != getattr(after, name):
            restart.append(f"limits.{name}")
    if _without_api(before, after) != before and "limits" not in applied:
        applied.append("limits")


def _without_api(old: ConnectionLimits, new: ConnectionLimits) -> ConnectionLimits:
    """``new`` with the local API's limits of ``old``."""
    return dataclasses.replace(new, **{name: getattr(old, name) for name in _API_LIMITS})


def compare_peers(old: Sequence[Peer], new: Sequence[Peer]) -> PeerChanges:
    """Which peers ``new`` adds, changes, removes or only routes otherwise, in the
    order of the files."""
    before = {peer.name: peer for peer in old}
    after = {peer.name: peer for peer in new}
    changed = [n for n, p in after.items() if n in before and _channel(before[n]) != _channel(p)]
    routed = [n for n, p in after.items() if n in before and n not in changed and before[n] != p]
    return PeerChanges(
        added=tuple(n for n in after if n not in before),
        changed=tuple(changed),
        removed=tuple(n for n in before if n not in after),
        routed=tuple(routed),
    )


def _channel(peer: Peer) -> Peer:
    """What of ``peer`` its runners use."""
    return dataclasses.replace(peer, routes=(), supported_extensions=())


def applied_config(old: MtaConfig, new: MtaConfig) -> MtaConfig:
    """``old`` with the keys a reload applies taken from ``new`` (the local API's limits
    stay ``old``'s)."""
    config = dataclasses.replace(old, **{name: getattr(new, name) for name in APPLIED})
    limits = _without_api(old.connection_limits, new.connection_limits)
    return dataclasses.replace(config, connection_limits=limits)


class Reloader:
    """Re-reads the service's configuration file and applies what it safely can."""

    def __init__(self, service: Reconfigurable, *, level_override: str | None = None) -> None:
        self.service = service
        self.level_override = level_override
        """The ``--log-level`` given: it wins over the file's ``log_level``."""

    def __call__(self) -> Reloaded:
        """Reload now (module docstring); logs what happened and returns it, never
        raises for a bad file or a failure to apply it."""
        old = self.service.config
        try:
            new = load_config(old.source)
        except ConfigError as error:
            log.error("reload refused, the previous configuration stays in force: %s", error)
            return Reloaded(error=str(error))
        changes = compare(old, new)
        peers = compare_peers(old.peers, new.peers)
        failure = self._apply(old, new, peers)
        if failure is not None:
            return Reloaded(error=failure)
        for key in changes.restart:
            log.warning("reload: %s: %s changed: needs a restart to take effect", old.source, key)
        self._apply_level(old, new)
        summary = _summary(changes, peers)
        log.info("reloaded %s: %s", old.source, summary)
        return Reloaded(applied=summary, restart=changes.restart)

    def _apply(self, old: MtaConfig, new: MtaConfig, peers: PeerChanges) -> str | None:
        """Swap the service's parts over to ``new``; None when done, else why not."""
        then = None
        if peers.removed:
            then = functools.partial(self._count_left, old, peers.removed)
        try:
            self.service.reconfigure(applied_config(old, new), then=then)
        except Exception as error:  # (a fault of ours: the daemon goes on as it was)
            log.debug("reload: the failure to apply", exc_info=error)
            why = f"{type(error).__name__}: {error}"
            log.error("reload failed, the previous configuration stays in force: %s", why)
            return f"{old.source}: could not be applied: {why}"
        return None

    async def _count_left(self, old: MtaConfig, removed: tuple[str, ...]) -> None:
        """Once the removed peers' runners ended: say how many recipients still wait
        for each, and what becomes of them."""
        owed = await self.service.db.run(_owed_on, self.service.db.engine, removed)
        for name in removed:
            if owed.get(name):
                log.warning(
                    "reload: %s: peer %s removed: %d recipient(s) queued for it have no peer "
                    "now; they stay queued under its name, leave if a peer %s is configured "
                    "again, else are non-delivered at their max_age (x400ctl delete --peer "
                    "%s removes them now, without a report)",
                    old.source,
                    name,
                    owed[name],
                    name,
                    name,
                )

    def _apply_level(self, old: MtaConfig, new: MtaConfig) -> None:
        if old.log_level == new.log_level:
            return
        if self.level_override is not None:
            log.info("reload: log_level stays %s, as --log-level says", self.level_override)
            return
        logging.getLogger().setLevel(new.log_level.name)
        log.info("reload: log_level is %s now (was %s)", new.log_level, old.log_level)


def _summary(changes: Changes, peers: PeerChanges) -> str:
    """What was applied, for the INFO line."""
    parts = [str(peers) if key == "peers" else key for key in changes.applied]
    return "; ".join(part for part in parts if part) or "nothing to apply"


def _owed_on(engine: Engine, routes: Sequence[str]) -> dict[str, int]:
    """Recipients the MTA still owes something (pending, in flight, held) per route."""
    with transaction(engine, read_only=True) as session:
        counts = TransitQueue(session).counts()
    owed: dict[str, int] = {}
    for count in counts:
        if count.route in routes and count.state in _OWED:
            owed[count.route] = owed.get(count.route, 0) + count.recipients
    return owed
