"""Routing by O/R address prefix: local delivery, a peer MTA, or no route (X.411 clause 14.3).

Routes come from the configuration: the local delivery domains and each peer's routes are
O/R address prefixes (C, ADMD, PRMD, O, OUs).  The most specific prefix that matches a
recipient wins (longest prefix); if none does, the default route (a peer) is taken when one
is configured.  A recipient with no route gets a non-delivery report with reason
unable-to-transfer and diagnostic unrecognised-OR-name.

When the configuration lists the local users (``local_users``), a recipient under a local
domain that is none of them has no route either (:data:`UNKNOWN_USER`): it names no user
of this MTA's, and gets the same report (X.411 14.3.1; reason and diagnostic codes, X.411
8.3.1.2.1.9-10).  Names are compared in their canonical form
(:attr:`p1.mts.orname.ORAddress.canonical`: case and redundant spaces ignored, as X.411
compares PrintableString attributes).  Without the list every name under a local domain
is a user, its mailbox named by that canonical form.

Pure: no I/O, no clock.

Public API::

    LocalRoute(), PeerRoute(peer), NoRoute(reason, diagnostic, why), UNKNOWN_USER
    Router(config).route(recipient) -> Route
    Router(config).split(recipients) -> dict[Route, list[ORName]]   recipients per route
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from config.schema import AddressPrefix, MtaConfig
from p1.mts.orname import ORAddress
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason


@dataclass(frozen=True, slots=True)
class LocalRoute:
    """Deliver into this MTA's message store."""


@dataclass(frozen=True, slots=True)
class PeerRoute:
    """Transfer to the peer MTA ``peer`` (its configured name)."""

    peer: str


@dataclass(frozen=True, slots=True)
class NoRoute:
    """No route: the recipient gets a non-delivery report with these codes."""

    reason: NonDeliveryReason = NonDeliveryReason.UNABLE_TO_TRANSFER
    diagnostic: NonDeliveryDiagnostic = NonDeliveryDiagnostic.UNRECOGNISED_OR_NAME
    why: str = "no route"
    """What the log says of the recipients it turns away."""


Route = LocalRoute | PeerRoute | NoRoute

_LOCAL = LocalRoute()
UNKNOWN_USER = NoRoute(why="not a local user")
"""The route of a name under a local domain that is none of the configured users."""


class Router:
    """Longest-prefix routing over one configuration's local domains and peer routes."""

    def __init__(self, config: MtaConfig) -> None:
        table: list[tuple[AddressPrefix, Route]] = [(p, _LOCAL) for p in config.local_domains]
        for peer in config.peers:
            table.extend((prefix, PeerRoute(peer.name)) for prefix in peer.routes)
        # Most specific first: the first match is the longest prefix.
        self._table = sorted(table, key=lambda entry: -entry[0].length)
        self._default: Route = (
            PeerRoute(config.default_route) if config.default_route is not None else NoRoute()
        )
        users = config.local_users
        self._users = None if users is None else frozenset(user.canonical for user in users)

    def route(self, recipient: ORAddress) -> Route:
        """Where ``recipient`` goes."""
        for prefix, route in self._table:
            if prefix.matches(recipient):
                if route is _LOCAL and not self.is_user(recipient):
                    return UNKNOWN_USER
                return route
        return self._default

    def is_user(self, name: ORAddress) -> bool:
        """Whether ``name``, under a local domain, names a local user (any name does when
        the configuration does not list them)."""
        return self._users is None or name.canonical in self._users

    def split(self, recipients: Iterable[ORAddress]) -> dict[Route, list[ORAddress]]:
        """The recipients grouped by route, in their original order within each group.

        Recipients behind one peer travel together in one transfer; those on different
        routes are split into separate copies of the message.
        """
        groups: dict[Route, list[ORAddress]] = {}
        for recipient in recipients:
            groups.setdefault(self.route(recipient), []).append(recipient)
        return groups
