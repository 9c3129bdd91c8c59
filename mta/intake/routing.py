"""Routing by O/R address prefix: local delivery, a peer MTA, or no route (X.411 clause 14.3).

Routes come from the configuration: the local delivery domains and each peer's routes are
O/R address prefixes (C, ADMD, PRMD, O, OUs).  The most specific prefix that matches a
recipient wins (longest prefix); if none does, the default route (a peer) is taken when one
is configured.  A recipient with no route gets a non-delivery report with reason
unable-to-transfer and diagnostic unrecognised-OR-name.

A recipient under a local domain that is none of the local users (``local_users``) has
no route either (:data:`UNKNOWN_USER`): it names no user of this MTA's, and gets the same
report (X.411 14.3.1; reason and diagnostic codes, X.411 8.3.1.2.1.9-10).  Names are
compared in their canonical form (:attr:`p1.mts.orname.ORAddress.canonical`: case and
redundant spaces ignored, as X.411 compares PrintableString attributes).  Only with
``accept_any_recipient`` is every name under a local domain a user, its mailbox named by
that canonical form; a configuration built in code that sets neither has no local user.

Extension criticality (X.411 9.1, 12.2.1.1.1.x): a message or probe that carries an
extension marked critical for delivery, which this MTA does not implement
(:data:`IMPLEMENTED_EXTENSIONS`) and the configuration does not declare supported
(``supported_extensions``), is not delivered locally; one marked critical for transfer is
not transferred to a peer unless this MTA implements it or the peer's configuration lists
it.  :meth:`Router.admit` gives such a recipient a :class:`NoRoute` of unable-to-transfer
and unsupported-critical-function instead of its route.

A local submission's originator must be under a local domain (:meth:`Router.is_local`:
the most specific prefix that matches it is a local domain's) unless the configuration
accepts foreign originators (``foreign_originators = "accept"``): an MTA vouches for the
originators of what it submits, and a user agent on this host speaks for this domain.

Pure: no I/O, no clock.

Public API::

    LocalRoute(), PeerRoute(peer), NoRoute(reason, diagnostic, why), UNKNOWN_USER
    Router(config).route(recipient) -> Route
    Router(config).admit(route, extensions) -> Route    criticality (X.411 9.1)
    IMPLEMENTED_EXTENSIONS, extension_name(type) -> str    for the log
    Router(config).split(recipients) -> dict[Route, list[ORName]]   recipients per route
    Router(config).is_local(name) -> bool          under a local domain (longest prefix)
    Router(config).foreign_originator(name) -> str | None   why a submission is refused
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from config.schema import AddressPrefix, ForeignOriginators, MtaConfig
from p1.mts.extension_view import extension_label
from p1.mts.extensions import (
    INTERPRETED_EXTENSIONS,
    ExtensionField,
    ExtensionType,
    StandardExtension,
)
from p1.mts.orname import ORAddress, format_orname
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason

IMPLEMENTED_EXTENSIONS: frozenset[ExtensionType] = frozenset(
    {*INTERPRETED_EXTENSIONS, StandardExtension.CONTENT_CORRELATOR}
)
"""The extension types this MTA implements: those it reads and acts on (the
prohibitions, latest-delivery-time, internal trace, STANAG 4406's
priority-level-qualifier) and the content-correlator it copies into reports."""


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
        users = config.local_users or ()
        self._users = (
            None if config.accept_any_recipient else frozenset(user.canonical for user in users)
        )
        self._local_domains = config.local_domains
        self._foreign = config.foreign_originators
        self._delivers = IMPLEMENTED_EXTENSIONS | frozenset(config.supported_extensions)
        self._transfers = {
            peer.name: IMPLEMENTED_EXTENSIONS | frozenset(peer.supported_extensions)
            for peer in config.peers
        }

    def route(self, recipient: ORAddress) -> Route:
        """Where ``recipient`` goes."""
        for prefix, route in self._table:
            if prefix.matches(recipient):
                if route is _LOCAL and not self.is_user(recipient):
                    return UNKNOWN_USER
                return route
        return self._default

    def admit(self, route: Route, extensions: Iterable[ExtensionField]) -> Route:
        """``route``, unless ``extensions`` (the envelope's and the recipient's) hold one
        critical for what the route does that is not supported there: then a
        :class:`NoRoute` of unsupported-critical-function (X.411 9.1)."""
        if isinstance(route, NoRoute):
            return route
        if isinstance(route, PeerRoute):
            known = self._transfers.get(route.peer, IMPLEMENTED_EXTENSIONS)
            refused = [e for e in extensions if e.critical_for_transfer and e.type not in known]
            where = f"for transfer to {route.peer}"
        else:
            known = self._delivers
            refused = [e for e in extensions if e.critical_for_delivery and e.type not in known]
            where = "for delivery"
        if not refused:
            return route
        return NoRoute(
            diagnostic=NonDeliveryDiagnostic.UNSUPPORTED_CRITICAL_FUNCTION,
            why=f"{extension_name(refused[0].type)} is critical {where}, and not supported",
        )

    def is_user(self, name: ORAddress) -> bool:
        """Whether ``name``, under a local domain, names a local user (any name does with
        ``accept_any_recipient``)."""
        return self._users is None or name.canonical in self._users

    def is_local(self, name: ORAddress) -> bool:
        """Whether ``name`` is under a local domain: the most specific prefix that
        matches it is a local domain's (a user listed or not)."""
        for prefix, route in self._table:
            if prefix.matches(name):
                return route is _LOCAL
        return False

    def foreign_originator(self, originator: ORAddress) -> str | None:
        """Why a local submission from ``originator`` is refused, or None: it is under a
        local domain, or the configuration accepts foreign originators."""
        if self._foreign is ForeignOriginators.ACCEPT or self.is_local(originator):
            return None
        domains = ", ".join(domain.text for domain in self._local_domains)
        return (
            f"originator {format_orname(originator)} is under none of this MTA's local "
            f'domains ({domains}); foreign_originators = "accept" would take it'
        )

    def split(self, recipients: Iterable[ORAddress]) -> dict[Route, list[ORAddress]]:
        """The recipients grouped by route, in their original order within each group.

        Recipients behind one peer travel together in one transfer; those on different
        routes are split into separate copies of the message.
        """
        groups: dict[Route, list[ORAddress]] = {}
        for recipient in recipients:
            groups.setdefault(self.route(recipient), []).append(recipient)
        return groups


def extension_name(ext_type: ExtensionType) -> str:
    """``standard-extension 20 (message-security-label)``, ``private-extension
    1.3.26.0.4406.0.8.0 (priority-level-qualifier)`` or ``private-extension 1.2.3`` for
    the log (names: :func:`p1.mts.extension_view.extension_label`)."""
    label = extension_label(ext_type)
    if isinstance(ext_type, str):
        return f"private-extension {ext_type}" + ("" if label == ext_type else f" ({label})")
    named = not label.startswith("standard-extension")
    return f"standard-extension {ext_type}" + (f" ({label})" if named else "")
