"""The value types a configuration key converts to, besides numbers and text.

They live apart from :mod:`config.schema` so that :mod:`config.kinds` (how each key is
read and written) can build them and the schema can declare its keys with those kinds.
:mod:`config.schema` re-exports them.

Public API::

    Secret               a password; never shown by repr or str
    AddressPrefix        an O/R address prefix (route or local domain) and its route key
    SlotMode             permanent or on-demand connection slot
    MinimizeSubmissions  what MINIMIZE does to a local submission below its precedence
    ForeignOriginators   whether a local submission may name an originator outside the
                         local domains
    P1Protocol           how this MTA speaks P1 when it calls a peer (X.419 clause 7)
    LogLevel             the daemon's log threshold
    TlsMode              whether connections run inside TLS
    OperatorGroup, LocalAccount   a group of operators and a local user (``[access]``)
    HIDDEN               what ``x400ctl config`` writes in place of a secret
"""

from __future__ import annotations

import enum
import hmac
from dataclasses import dataclass
from pathlib import Path

from p1.orname.model import ORAddress, ORName

__all__ = [
    "HIDDEN",
    "AddressPrefix",
    "ForeignOriginators",
    "LocalAccount",
    "LogLevel",
    "MinimizeSubmissions",
    "OperatorGroup",
    "OwnExtension",
    "P1Protocol",
    "Secret",
    "SlotMode",
    "TlsMode",
]

HIDDEN = "<hidden>"
"""Written in place of a password (and of a database URL's password) by ``x400ctl
config``; the loader refuses it, so a pasted configuration never runs with it."""


class MinimizeSubmissions(enum.Enum):
    """What MINIMIZE does to a local submission below its precedence."""

    REFUSE = "refuse"
    """Refused, the reason naming the precedence in force."""
    HOLD = "hold"
    """Accepted and queued; transferred once MINIMIZE is lifted."""


class ForeignOriginators(enum.Enum):
    """What becomes of a local submission whose originator is under no local domain."""

    REFUSE = "refuse"
    """Refused, the submitter told why: this MTA originates for its own domains only."""
    ACCEPT = "accept"
    """Taken (a gateway or a relay host that submits on others' behalf)."""


class Transport(enum.Enum):
    """How this MTA carries messages to and from a peer."""

    P1 = "p1"
    """P1 over RFC 1006 (TCP), the peer's connection slots ([[peers.slots]])."""
    ACP142 = "acp142"
    """STANAG 4406 Annex E over ACP 142 (P_MUL over UDP): for HF radio and other
    constrained or multicast links ([acp142], [peers.acp142])."""


class SlotMode(enum.Enum):
    """How a connection slot keeps its connections."""

    PERMANENT = "permanent"
    """Opened at start and re-opened with backoff whenever it drops."""
    ON_DEMAND = "on-demand"
    """Opened when a message is waiting; closed after the slot's idle timeout."""


class TlsMode(enum.Enum):
    """Whether a listener, peer or slot's connections run inside TLS (RFC 8446, RFC 5246)."""

    REQUIRED = "required"
    """TLS 1.2 or 1.3 from the first octet; a connection that does not complete the
    handshake carries nothing."""
    OFF = "off"
    """Plain TCP (RFC 1006 as it always was)."""


class OwnExtension(enum.Enum):
    """An optional envelope extension this MTA adds, as ``omit_extensions`` names it."""

    INTERNAL_TRACE = "internal-trace"
    """This MTA's entries of internal-trace-information (X.411 standard-extension 38)."""
    PRIORITY_LEVEL_QUALIFIER = "priority-level-qualifier"
    """STANAG 4406 priority-level-qualifier, on messages originated here."""


class P1Protocol(enum.Enum):
    """How this MTA speaks P1 when it calls a peer (X.419 clause 7).  As responder it
    serves either mode on any listener, told from the peer's connect."""

    NORMAL = "1988"
    """1988 normal mode: RTSE, ACSE and presentation on the session (X.419 7.1)."""
    X410_1988 = "1988-x410"
    """X.410-1984 mode carrying 1988 P1 (applicationProtocol 12): for a 1988 MTA that
    speaks only that mode; nothing is down-graded."""
    X410_1984 = "1984"
    """X.410-1984 mode to a 1984 MTA (applicationProtocol 1): what is transferred is
    down-graded first (X.419 Annex B), or non-delivered when it cannot be."""

    @property
    def x410(self) -> bool:
        """True for the two X.410-1984 mode protocols (no ACSE, no presentation)."""
        return self is not P1Protocol.NORMAL


class LogLevel(enum.StrEnum):
    """The daemon's log threshold; ``level.name`` is the :mod:`logging` level name."""

    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"


@dataclass(frozen=True, slots=True, repr=False)
class Secret:
    """A password.  ``repr`` and ``str`` never show it; :meth:`reveal` does.

    X.411 simple credentials travel as an IA5String, so the loader only admits ASCII.
    """

    value: str
    """The password itself: read it with :meth:`reveal`, which says why at the call."""
    source: Path | None = None
    """The file it was read from; None: written inline in the configuration."""

    def reveal(self) -> str:
        """The password, for the MTA-bind that sends it."""
        return self.value

    def matches(self, candidate: str | bytes) -> bool:
        """Whether a password a peer presented is this one (constant-time comparison)."""
        if isinstance(candidate, str):
            candidate = candidate.encode("utf-8", "surrogatepass")
        return hmac.compare_digest(candidate, self.value.encode("utf-8", "surrogatepass"))

    def __repr__(self) -> str:
        where = "inline" if self.source is None else f"from {str(self.source)!r}"
        return f"Secret(<hidden>, {where})"

    __str__ = __repr__


@dataclass(frozen=True, slots=True, kw_only=True)
class AddressPrefix:
    """An O/R address prefix: C, then ADMD, PRMD, O and OUs, none skipped.

    Matching compares route keys (X.411 comparison form: case folded, spaces collapsed),
    so ``C=GB;ADMD= ;PRMD=SiteB`` matches every address in that PRMD.
    """

    text: str
    """The prefix as written in the configuration."""
    key: tuple[str, ...]
    """:meth:`p1.mts.orname.ORAddress.route_key` of the prefix: (c, admd, prmd, o, ou1, ...)."""

    def matches(self, address: ORAddress) -> bool:
        """Whether ``address`` lies under this prefix."""
        return address.route_key()[: len(self.key)] == self.key

    @property
    def length(self) -> int:
        """Number of components: the longest matching prefix is the most specific route."""
        return len(self.key)


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorGroup:
    """A group whose members are the MTA's operators (``[access] operators``)."""

    name: str
    """The group as written: a name in the group database, or a numeric gid."""
    gid: int
    """Its group id, looked up when the file was loaded."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalAccount:
    """A local account that is a user of the MTA (``[access.users]``)."""

    name: str
    """The account as written: a name in the password database, or a numeric uid."""
    uid: int
    """Its user id, looked up when the file was loaded."""
    names: tuple[ORName, ...]
    """Its O/R names: what it may submit as, and whose mailboxes it may read."""
