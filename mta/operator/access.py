"""Who may do what on the daemon's local API, from the caller's credentials (``[access]``).

The control socket (:mod:`mta.operator.control`) reads each connection's credentials once
(``SO_PEERCRED``, unix(7): pid, uid, gid; the supplementary groups from
``SO_PEERGROUPS``) into a :class:`Caller`; the rules here say what that caller may do.
They are pure functions of the caller, the policy and the request's names: no sockets,
no databases, no clock.

Rules:

1. Without ``[access]`` every caller is an operator: the socket's mode (0660, the
   daemon's user and group) decides who may connect.
2. Root (uid 0) and the daemon's own account are operators.  So is every member of an
   operators group (its primary gid or one of its supplementary groups).
3. An account of ``[access.users]`` is a user: it may submit with one of its O/R names as
   originator, and list, wait on, read and delete the entries of the mailboxes of those
   names (a mailbox is named by its O/R name's canonical form, as the store names it).
4. Anyone else is refused every request, with an answer saying how to get access.
5. A user's submitted IPM (P2 or P772 content, X.420 clause 7.2.1; STANAG 4406 Annex A)
   names as its heading's originator one of the user's O/R names, or none (an IPN its
   ipn-originator, X.420 clause 8.2.1): the originator a recipient's listing shows is
   the one the MTA vouches for, as in the envelope.  An originator given only as a
   free-form name, and a heading that does not decode, are refused; content of another
   type carries no heading and is not read.

Each operation needs one of three things (:data:`NEEDS`); an operation not in the table
is for operators only.

A connection is judged before its first request is read (:func:`standing`): root and
the daemon's own account, and with ``[access]`` the operators, take the places kept for
operators and are not bounded per account; with ``[access]`` a user is bounded per
account (:mod:`mta.operator.admission`) and anyone else is answered its refusal and
closed at once, holding nothing; without ``[access]`` every other caller is bounded per
account (the socket's mode let it connect).

Public API::

    Role.OPERATOR | Role.USER | Role.OUTSIDER
    Standing.OPERATOR | Standing.BOUNDED | Standing.REFUSED
    Need.OPERATOR | Need.OWN_NAME | Need.OWN_MAILBOX       NEEDS: op -> Need
    Caller(pid, uid, gid, groups, account, groups_known)    .who
    Policy(daemon_uid, operator_gids, operator_groups, users, display, source)  .enforced
        Policy.open(daemon_uid)                             no [access]: all are operators
        Policy.of(access, source, daemon_uid, daemon_gid)   from the configuration
    Grant(role, names, shown)                               .owns(canonical)
    grant(policy, caller) -> Grant
    standing(policy, caller) -> Standing                    at the connection's accept
    unwelcome(policy, caller) -> str                        why a connection is refused
    refusal(policy, caller, grant, op) -> str | None        why the op is refused
    not_own_name(caller, grant, name) -> str                a submission as another
    not_own_mailbox(caller, grant, mailbox) -> str          another's mailbox
    not_own_heading(caller, grant, content_type, content) -> str | None   rule 5
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Final

from config.schema import Access
from p1.errors import DecodeError
from p1.ipms.ipm import IPN, ContentKind, decode_content_heading
from p1.mts.orname import ORName, format_orname

__all__ = [
    "NEEDS",
    "Caller",
    "Grant",
    "Need",
    "Policy",
    "Role",
    "Standing",
    "grant",
    "not_own_heading",
    "not_own_mailbox",
    "not_own_name",
    "refusal",
    "standing",
    "unwelcome",
]


class Role(enum.Enum):
    """What a caller is to the MTA."""

    OPERATOR = "operator"
    """May do everything."""
    USER = "user"
    """May submit as its own O/R names and use their mailboxes."""
    OUTSIDER = "outsider"
    """May do nothing."""


class Standing(enum.Enum):
    """How a connection is admitted to the local API, from its caller alone."""

    OPERATOR = "operator"
    """May take the places kept for operators; not bounded per account."""
    BOUNDED = "bounded"
    """Bounded per account (connections, content held), outside the operators' places."""
    REFUSED = "refused"
    """Told why and closed before any request is read."""


class Need(enum.Enum):
    """What an operation needs of its caller."""

    OPERATOR = "operator"
    """An operator."""
    OWN_NAME = "own name"
    """An operator, or a user whose O/R name is the request's originator."""
    OWN_MAILBOX = "own mailbox"
    """An operator, or a user whose O/R name names the request's mailbox."""


NEEDS: Final[Mapping[str, Need]] = MappingProxyType(
    {
        # a user agent's operations
        "submit": Need.OWN_NAME,
        "inbox": Need.OWN_MAILBOX,
        "wait": Need.OWN_MAILBOX,
        "read": Need.OWN_MAILBOX,
        "delete": Need.OWN_MAILBOX,
        # the operator's: the queue, the channels, the audit log, the configuration
        "status": Need.OPERATOR,
        "queue": Need.OPERATOR,
        "qshape": Need.OPERATOR,
        "messages": Need.OPERATOR,
        "channels": Need.OPERATOR,
        "hold": Need.OPERATOR,
        "release": Need.OPERATOR,
        "queue_delete": Need.OPERATOR,
        "flush": Need.OPERATOR,
        "minimize": Need.OPERATOR,
        "track": Need.OPERATOR,
        "config": Need.OPERATOR,
        "quarantine": Need.OPERATOR,
        "quarantine_read": Need.OPERATOR,
        "quarantine_delete": Need.OPERATOR,
        "queue_show": Need.OPERATOR,
        "non_deliver": Need.OPERATOR,
        "track_find": Need.OPERATOR,
        # the daemon's life: the same as SIGHUP and SIGTERM
        "reload": Need.OPERATOR,
        "stop": Need.OPERATOR,
    }
)
"""What each operation needs; one not listed needs an operator."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Caller:
    """The process at the other end of a local API connection, as the kernel saw it
    when it connected (``SO_PEERCRED``, ``SO_PEERGROUPS``)."""

    pid: int
    uid: int
    gid: int
    """Its primary (effective) group."""
    groups: frozenset[int] = frozenset()
    """Its supplementary groups."""
    account: str | None = None
    """Its account's name in the password database; None when the uid has none (or
    it was not looked up yet)."""
    groups_known: bool = True
    """Whether ``groups`` holds the caller's supplementary groups (False: the kernel did
    not say, and the group database was not read yet)."""

    @property
    def who(self) -> str:
        """The caller in an answer or a log line: ``account bob (uid 1001)``."""
        if self.account is None:
            return f"uid {self.uid} (no account)"
        return f"account {self.account} (uid {self.uid})"


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """``[access]`` resolved for one running daemon."""

    daemon_uid: int
    """The daemon's own uid: always an operator."""
    operator_gids: frozenset[int] = frozenset()
    operator_groups: str = "none"
    """The operators groups as the configuration names them (for answers)."""
    users: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    """The users' uids, each with the canonical forms of its O/R names."""
    display: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    """The same O/R names as the configuration writes them (for answers)."""
    source: Path | None = None
    """The configuration file (named in answers); None: no ``[access]``, all may."""

    @classmethod
    def open(cls, daemon_uid: int) -> Policy:
        """No ``[access]``: every caller is an operator."""
        return cls(daemon_uid=daemon_uid)

    @classmethod
    def of(cls, access: Access | None, source: Path, daemon_uid: int, daemon_gid: int) -> Policy:
        """The policy of a configuration's ``[access]`` for a daemon running as
        ``daemon_uid``:``daemon_gid`` (whose group is the operators' by default)."""
        if access is None:
            return cls.open(daemon_uid)
        if access.operators is None:
            gids, groups = frozenset({daemon_gid}), f"the MTA's own group, gid {daemon_gid}"
        else:
            gids = frozenset(group.gid for group in access.operators)
            names = ", ".join(group.name for group in access.operators)
            groups = f"groups {names}" if names else "none"
        return cls(
            daemon_uid=daemon_uid,
            operator_gids=gids,
            operator_groups=groups,
            users={a.uid: tuple(n.canonical for n in a.names) for a in access.users},
            display={a.uid: tuple(format_orname(n) for n in a.names) for a in access.users},
            source=source,
        )

    @property
    def enforced(self) -> bool:
        """Whether requests are authorised (there is an ``[access]``)."""
        return self.source is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    """What one caller may do."""

    role: Role
    names: tuple[str, ...] = ()
    """A user's O/R names, canonical (an operator's and an outsider's: none)."""
    shown: tuple[str, ...] = ()
    """The same names as the configuration writes them."""

    def owns(self, canonical: str) -> bool:
        """Whether the caller may act as the O/R name whose canonical form is given."""
        return self.role is Role.OPERATOR or canonical in self.names


def grant(policy: Policy, caller: Caller) -> Grant:
    """What ``caller`` may do under ``policy`` (rules 1 to 4)."""
    if not policy.enforced or caller.uid in (0, policy.daemon_uid):
        return Grant(role=Role.OPERATOR)
    if caller.gid in policy.operator_gids or caller.groups & policy.operator_gids:
        return Grant(role=Role.OPERATOR)
    names = policy.users.get(caller.uid)
    if names is None:
        return Grant(role=Role.OUTSIDER)
    return Grant(role=Role.USER, names=names, shown=policy.display.get(caller.uid, names))


def standing(policy: Policy, caller: Caller) -> Standing:
    """How ``caller``'s connection is admitted (the module's connection rule)."""
    if caller.uid in (0, policy.daemon_uid):
        return Standing.OPERATOR
    if not policy.enforced:
        return Standing.BOUNDED
    role = grant(policy, caller).role
    if role is Role.OPERATOR:
        return Standing.OPERATOR
    return Standing.BOUNDED if role is Role.USER else Standing.REFUSED


def unwelcome(policy: Policy, caller: Caller) -> str:
    """The answer to a caller that ``[access]`` neither maps nor makes an operator."""
    return (
        f"{caller.who} may not use this MTA: it is neither in an operators group "
        f"({policy.operator_groups}) nor in [access.users] of {policy.source}"
    )


def refusal(policy: Policy, caller: Caller, grant: Grant, op: str) -> str | None:
    """Why ``op`` is refused to ``caller`` whatever its arguments; None if it may be
    asked (a user's request is then checked against its names)."""
    if grant.role is Role.OPERATOR:
        return None
    if grant.role is Role.OUTSIDER:
        return unwelcome(policy, caller)
    if NEEDS.get(op, Need.OPERATOR) is Need.OPERATOR:
        return f"{caller.who} may not {op}: only operators ({policy.operator_groups}) may"
    return None


def not_own_name(caller: Caller, grant: Grant, name: str) -> str:
    """The answer to a user submitting as ``name``, which is not one of its own."""
    return (
        f"{caller.who} may submit only as {_either(grant.shown)} "
        f"(its O/R names in [access.users]), not as {name}"
    )


def not_own_mailbox(caller: Caller, grant: Grant, mailbox: str) -> str:
    """The answer to a user asking for the mailbox ``mailbox``, which is not its own."""
    return f"{caller.who} may use only the mailbox of {_either(grant.shown)}, not that of {mailbox}"


_IPM_CONTENT_TYPES: Final = frozenset(kind.value for kind in ContentKind)


def not_own_heading(
    caller: Caller, grant: Grant, content_type: object, content: bytes
) -> str | None:
    """Why a user may not submit ``content`` of ``content_type`` (rule 5); None if it
    may."""
    if grant.role is Role.OPERATOR or content_type not in _IPM_CONTENT_TYPES:
        return None
    assert isinstance(content_type, int | str)
    try:
        heading = decode_content_heading(content, content_type)
    except DecodeError as error:
        return f"{caller.who} may submit only an IPM whose heading reads: {error}"
    field = "ipn-originator" if isinstance(heading, IPN) else "originator"
    descriptor = heading.ipn_originator if isinstance(heading, IPN) else heading.originator
    if descriptor is None:
        return None
    name = descriptor.formal_name
    if name is not None and grant.owns(name.canonical):
        return None
    shown = f"the free-form name {descriptor.free_form_name!r}" if name is None else _shown(name)
    return (
        f"{caller.who} may give as the heading's {field} only {_either(grant.shown)} "
        f"(its O/R names in [access.users]), not {shown}"
    )


def _shown(name: ORName) -> str:
    try:
        return format_orname(name)
    except (DecodeError, ValueError):
        return name.canonical


def _either(names: tuple[str, ...]) -> str:
    return " or ".join(names)
