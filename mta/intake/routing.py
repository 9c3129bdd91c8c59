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

Security labels (X.411 8.5.9, with a ``[security]`` policy): the message-security-label
extension is then supported wherever it is critical, and :meth:`Router.judge` checks each
recipient's label (the envelope's, or the configured ``default_label`` for an unlabelled
message) against the clearance of where its route goes: the recipient's mailbox
(``[[security.clearances]] users``, else ``default_clearance``) or the peer's link
(``[[peers]] clearance``).  A label the clearance does not allow, or one that does not read
under the policy, turns the route into a :class:`NoRoute` of unable-to-transfer and
secure-messaging-error: the recipient is never delivered to or transferred.  Each decision
is returned as a :class:`LabelDecision`, for the audit log.

A local submission's originator must be under a local domain (:meth:`Router.is_local`:
the most specific prefix that matches it is a local domain's) unless the configuration
accepts foreign originators (``foreign_originators = "accept"``): an MTA vouches for the
originators of what it submits, and a user agent on this host speaks for this domain.

Pure: no I/O, no clock.

Public API::

    LocalRoute(), PeerRoute(peer), NoRoute(reason, diagnostic, why), UNKNOWN_USER
    Router(config).route(recipient) -> Route
    Router(config).admit(route, extensions) -> Route    criticality (X.411 9.1)
    Router(config).judge(route, extensions, recipient) -> (Route, LabelDecision | None)
                                    criticality, then the security label (X.411 8.5.9)
    LabelDecision(recipient, peer, allowed, reason, marking)
    check_label(security, extensions, clearance) -> LabelVerdict(allowed, reason, marking) | None
    IMPLEMENTED_EXTENSIONS, extension_name(type) -> str    for the log
    Router(config).split(recipients) -> dict[Route, list[ORName]]   recipients per route
    Router(config).is_local(name) -> bool          under a local domain (longest prefix)
    Router(config).foreign_originator(name) -> str | None   why a submission is refused
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from config.schema import AddressPrefix, ForeignOriginators, MtaConfig, Security
from p1.errors import DecodeError
from p1.mts.extension_view import extension_label
from p1.mts.extensions import (
    INTERPRETED_EXTENSIONS,
    ExtensionField,
    ExtensionType,
    StandardExtension,
)
from p1.mts.orname import ORAddress, format_orname
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason
from p1.mts.security_label import SecurityLabel, is_message_security_label, message_security_label
from p1.security.clearance import Clearance, decide, display_marking

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


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelVerdict:
    """A security label judged against one clearance."""

    allowed: bool
    reason: str
    marking: str
    """The label's display marking under the policy."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelDecision:
    """One recipient's security label checked against a clearance (for the audit log)."""

    recipient: str
    """The recipient's canonical O/R name."""
    peer: str | None
    """The peer whose link was judged; None: the recipient's local mailbox."""
    allowed: bool
    reason: str
    marking: str
    """The label's display marking under the policy."""


_LOCAL = LocalRoute()
UNKNOWN_USER = NoRoute(why="not a local user")
"""The route of a name under a local domain that is none of the configured users."""
_VERDICTS_KEPT = 1024
"""Label decisions a router remembers (per label and clearance) before it starts over."""
_VerdictKey = tuple[tuple[bytes | None, ...], Clearance | None]
"""A cached verdict's key: the values of the envelope's label extensions, the clearance."""


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
        self._security = config.security if config.security.enforced else None
        self._links: dict[str, Clearance | None] = {}
        if self._security is not None:
            # With a policy, this MTA acts on the label wherever it is critical.
            label = frozenset({StandardExtension.MESSAGE_SECURITY_LABEL})
            self._delivers |= label
            self._transfers = {name: known | label for name, known in self._transfers.items()}
            self._links = {
                peer.name: self._security.clearance_named(peer.clearance) for peer in config.peers
            }
        security = config.security
        self._mailboxes = {
            user.canonical: named.clearance for named in security.clearances for user in named.users
        }
        self._default_mailbox = security.clearance_named(security.default_clearance)
        self._verdicts: dict[
            tuple[tuple[bytes | None, ...], Clearance | None], LabelVerdict | None
        ] = {}

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

    def judge(
        self, route: Route, extensions: Iterable[ExtensionField], recipient: ORAddress
    ) -> tuple[Route, LabelDecision | None]:
        """:meth:`admit`, then the security label against the clearance of where the route
        goes (X.411 8.5.9); the decision, if a label was checked."""
        route = self.admit(route, extensions)
        if self._security is None or isinstance(route, NoRoute):
            return route, None
        peer = route.peer if isinstance(route, PeerRoute) else None
        decision = self._decide(self._security, extensions, recipient, peer)
        if decision is None or decision.allowed:
            return route, decision
        where = "the link to " + peer if peer is not None else "the mailbox"
        refused = NoRoute(
            diagnostic=NonDeliveryDiagnostic.SECURE_MESSAGING_ERROR,
            why=f"security label {decision.marking} refused for {where}: {decision.reason}",
        )
        return refused, decision

    def _decide(
        self,
        security: Security,
        extensions: Iterable[ExtensionField],
        recipient: ORAddress,
        peer: str | None,
    ) -> LabelDecision | None:
        if peer is not None:
            clearance = self._links.get(peer)
        else:
            clearance = self._mailboxes.get(recipient.canonical, self._default_mailbox)
        verdict = self._verdict(security, tuple(extensions), clearance)
        if verdict is None:
            return None
        return LabelDecision(
            recipient=recipient.canonical,
            peer=peer,
            allowed=verdict.allowed,
            reason=verdict.reason,
            marking=verdict.marking,
        )

    def _verdict(
        self,
        security: Security,
        extensions: tuple[ExtensionField, ...],
        clearance: Clearance | None,
    ) -> LabelVerdict | None:
        """:func:`check_label`, once per label and clearance: the recipients of one
        message share both, often by the thousand."""
        labels = tuple(e.value for e in extensions if is_message_security_label(e))
        key = (labels, clearance)
        if key not in self._verdicts:
            if len(self._verdicts) >= _VERDICTS_KEPT:
                self._verdicts.clear()
            self._verdicts[key] = check_label(security, extensions, clearance)
        return self._verdicts[key]

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


def check_label(
    security: Security, extensions: Iterable[ExtensionField], clearance: Clearance | None
) -> LabelVerdict | None:
    """The envelope's security label (or the default label) judged against ``clearance``
    under the configured policy; None when there is no policy, or no label and no
    default label."""
    if security.spif is None:
        return None
    try:
        label = message_security_label(extensions)
    except DecodeError as exc:
        reason = f"the label does not decode ({exc})"
        return LabelVerdict(allowed=False, reason=reason, marking="(unreadable)")
    if label is None and security.unlabelled is None:
        return None
    if label is None:
        label = SecurityLabel(policy=security.spif.id, classification=security.unlabelled)
    decision = decide(security.spif, label, clearance)
    marking = display_marking(security.spif, label)
    return LabelVerdict(allowed=decision.allowed, reason=decision.reason, marking=marking)


def extension_name(ext_type: ExtensionType) -> str:
    """``standard-extension 20 (message-security-label)``, ``private-extension
    1.3.26.0.4406.0.8.0 (priority-level-qualifier)`` or ``private-extension 1.2.3`` for
    the log (names: :func:`p1.mts.extension_view.extension_label`)."""
    label = extension_label(ext_type)
    if isinstance(ext_type, str):
        return f"private-extension {ext_type}" + ("" if label == ext_type else f" ({label})")
    named = not label.startswith("standard-extension")
    return f"standard-extension {ext_type}" + (f" ({label})" if named else "")
