"""Routing by O/R address prefix: local delivery, a peer MTA, or no route (X.411 clause 14.3).

Routes come from the configuration: the local delivery domains and each peer's routes are
O/R address prefixes (C, ADMD, PRMD, O, OUs).  The most specific prefix that matches a
recipient wins (longest prefix); if none does, the default route (a peer) is taken when one
is configured.  A recipient with no route gets a non-delivery report with reason
unable-to-transfer and diagnostic unrecognised-OR-name.

Pure: no I/O, no clock.

Public API::

    LocalRoute(), PeerRoute(peer), NoRoute(reason, diagnostic, why)
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
    why: str = "no route to this O/R address"


Route = LocalRoute | PeerRoute | NoRoute

_LOCAL = LocalRoute()


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

    def route(self, recipient: ORAddress) -> Route:
        """Where ``recipient`` goes."""
        for prefix, route in self._table:
            if prefix.matches(recipient):
                return route
        return self._default

    def split(self, recipients: Iterable[ORAddress]) -> dict[Route, list[ORAddress]]:
        """The recipients grouped by route, in their original order within each group.

        Recipients behind one peer travel together in one transfer; those on different
        routes are split into separate copies of the message.
        """
        groups: dict[Route, list[ORAddress]] = {}
        for recipient in recipients:
            groups.setdefault(self.route(recipient), []).append(recipient)
        return groups
