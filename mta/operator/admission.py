"""What each account may hold of the local API: connections and content, per uid.

The control socket (:mod:`mta.operator.control`) asks here before it keeps a connection
and before it reads a request's content; the caller's :class:`mta.operator.access.Standing`
(from its ``SO_PEERCRED`` credentials, judged at accept) decides which bounds apply:

- every connection counts against ``max_api_connections``;
- a bounded caller (a user with ``[access]``; anyone but root and the daemon's account
  without it) may not take the last ``api_operator_connections`` places, which are kept
  for operators, nor hold more than ``max_api_connections_per_uid`` connections of its
  account at once;
- a bounded caller's requests may hold at most ``max_api_pending_per_uid`` content octets
  of its account at once (the content is read into memory, then taken in); a request of
  an account that holds nothing is admitted up to ``max_message_size`` whatever the
  bound, so that one message of the largest size always gets through;
- an operator is bounded only by ``max_api_connections`` and ``max_message_size``.

Memory held for bounded callers is therefore at most, per account,
``max(max_api_pending_per_uid, max_message_size)`` octets of content and
``max_api_connections_per_uid`` request lines.  The counting is pure: no sockets, no
clock, no logging; a refusal is a sentence for the caller.

Public API::

    ApiLimits(connections, operator_places, per_uid, pending_per_uid)
        ApiLimits.of(connection_limits)
    Places(limits)
        .enter(uid, standing) -> str | None        why a connection may not be kept
        .leave(uid, standing)
        .hold(uid, standing, size) -> str | None   why a request's content may not be read
        .release(uid, size)
        .open  .of(uid) -> connections  .pending(uid) -> octets
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from config.schema import DEFAULT_CONNECTION_LIMITS, ConnectionLimits
from mta.operator.access import Standing

__all__ = ["ApiLimits", "Places"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiLimits:
    """The ``[limits]`` keys of the local API (:class:`config.schema.ConnectionLimits`)."""

    connections: int = DEFAULT_CONNECTION_LIMITS.max_api_connections
    operator_places: int = DEFAULT_CONNECTION_LIMITS.api_operator_connections
    per_uid: int = DEFAULT_CONNECTION_LIMITS.max_api_connections_per_uid
    pending_per_uid: int = DEFAULT_CONNECTION_LIMITS.max_api_pending_per_uid

    @classmethod
    def of(cls, limits: ConnectionLimits) -> ApiLimits:
        return cls(
            connections=limits.max_api_connections,
            operator_places=limits.api_operator_connections,
            per_uid=limits.max_api_connections_per_uid,
            pending_per_uid=limits.max_api_pending_per_uid,
        )


class Places:
    """The connections open and the content held, per account."""

    def __init__(self, limits: ApiLimits) -> None:
        self.limits = limits
        self.open = 0
        self._connections: Counter[int] = Counter()
        self._pending: Counter[int] = Counter()

    def of(self, uid: int) -> int:
        """Connections the account ``uid`` holds."""
        return self._connections[uid]

    def pending(self, uid: int) -> int:
        """Content octets the account ``uid``'s requests hold."""
        return self._pending[uid]

    def enter(self, uid: int, standing: Standing) -> str | None:
        """Count a connection of ``uid``; why not (counting nothing) when it may not be
        kept."""
        limits = self.limits
        if standing is Standing.REFUSED:
            return "the caller may not use this MTA"
        if self.open >= limits.connections:
            return (
                f"the MTA has {limits.connections} local API connections open; try later "
                f"(max_api_connections {limits.connections})"
            )
        if standing is Standing.BOUNDED:
            others = limits.connections - limits.operator_places
            if self.open >= others:
                return (
                    f"the MTA has {self.open} local API connections open, and the last "
                    f"{limits.operator_places} are kept for operators; try later "
                    "(api_operator_connections)"
                )
            if self._connections[uid] >= limits.per_uid:
                return (
                    f"uid {uid} has {self._connections[uid]} local API connections open, "
                    "the most one account may (max_api_connections_per_uid); close one"
                )
        self.open += 1
        self._connections[uid] += 1
        return None

    def leave(self, uid: int) -> None:
        """A connection of ``uid`` closed."""
        self.open -= 1
        self._connections[uid] -= 1
        if not self._connections[uid]:
            del self._connections[uid]

    def hold(self, uid: int, standing: Standing, size: int) -> str | None:
        """Count ``size`` content octets of a request of ``uid``, about to be read; why
        not (counting nothing) when they are more than the account may hold."""
        held = self._pending[uid]
        if standing is Standing.BOUNDED and held and held + size > self.limits.pending_per_uid:
            return (
                f"uid {uid} has requests holding {held} octets of content in the MTA; with "
                f"these {size} that is over max_api_pending_per_uid "
                f"({self.limits.pending_per_uid}): try again once they are answered"
            )
        self._pending[uid] += size
        return None

    def release(self, uid: int, size: int) -> None:
        """The ``size`` octets a request of ``uid`` held are given back."""
        self._pending[uid] -= size
        if not self._pending[uid]:
            del self._pending[uid]
