"""Typed configuration of one MTA: what :func:`config.loader.load_config` returns.

Every value here has been checked by the loader (ranges, cross-references, coverage of
the six STANAG 4406 precedences by each peer's connection slots), so the daemon, the
operator tool and the client take them as they are.  Objects built directly in code
are not checked: build them through the loader, or keep to the rules the loader states.

Times are seconds (float); sizes are octets; relative paths have already been resolved
against the directory of the configuration file.

Public API::

    MtaConfig            the whole file
    Listener             one local listening address, port, DSCP and the TSELs it serves
    Peer, Slot, SlotMode a neighbouring MTA and the connection slots of its channel
    Selectors            transport, session and presentation selectors of a peer or slot
    NO_SELECTORS         none of them
    AddressPrefix        an O/R address prefix (route or local domain) and its route key
    Credentials, Secret  MTA-bind name and password; a Secret never shows its value
    RetryPolicy          backoff between attempts to reach a peer
    MaxAge               per-precedence age after which a message is non-delivered
    LogLevel             the daemon's log threshold
    ConnectionLimits     what peers and local clients may hold before and after binding
    QuarantineLimits     how much the quarantine keeps of what peers sent that cannot be taken
    MetricsEndpoint      where the Prometheus endpoint listens (``[metrics]``), if anywhere
    Access, OperatorGroup, LocalAccount   who may use the local API for what (``[access]``)
    DEFAULT_STATE_DIR, DEFAULT_MAX_AGE, DEFAULT_RETRY, DEFAULT_CONNECTION_LIMITS,
    DEFAULT_QUARANTINE, DEFAULT_METRICS
"""

from __future__ import annotations

import enum
import hmac
import math
from dataclasses import dataclass, field
from pathlib import Path

from p1.mts.orname import ORAddress, ORName
from p1.mts.precedence import DEFAULT_TABLE, Precedence, PrecedenceTable
from p1.osi import DEFAULT_LIMITS, StackLimits

__all__ = [
    "DEFAULT_CONNECTION_LIMITS",
    "DEFAULT_MAX_AGE",
    "DEFAULT_METRICS",
    "DEFAULT_QUARANTINE",
    "DEFAULT_RETENTION",
    "DEFAULT_RETRY",
    "DEFAULT_STATE_DIR",
    "NO_SELECTORS",
    "Access",
    "AddressPrefix",
    "ConnectionLimits",
    "Credentials",
    "Listener",
    "LocalAccount",
    "LogLevel",
    "MaxAge",
    "MetricsEndpoint",
    "MtaConfig",
    "OperatorGroup",
    "Peer",
    "QuarantineLimits",
    "Retention",
    "RetryPolicy",
    "Secret",
    "Selectors",
    "Slot",
    "SlotMode",
]

DEFAULT_STATE_DIR = Path("/var/lib/aiox400")
"""Where the queue database and the control socket live unless configured otherwise."""

_HOUR = 3600.0


class SlotMode(enum.Enum):
    """How a connection slot keeps its connections."""

    PERMANENT = "permanent"
    """Opened at start and re-opened with backoff whenever it drops."""
    ON_DEMAND = "on-demand"
    """Opened when a message is waiting; closed after the slot's idle timeout."""


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
class Credentials:
    """One side of an MTA-bind (X.411 clause 12.1.1): MTAName and simple credentials."""

    name: str
    """The MTAName (IA5String, 1..32 characters)."""
    password: Secret | None = None
    """The password; None: no password (an unauthenticated bind, or none checked)."""


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
class Listener:
    """A local address the MTA accepts P1 connections on (RFC 1006 over TCP)."""

    address: str
    """IP address or host name to bind; ``0.0.0.0`` or ``::`` for every interface."""
    port: int
    """TCP port, 1..65535."""
    dscp: int = 0
    """Code point (0..63) set on the listening socket before the first accept, so the
    connections it accepts answer with the same mark (one listener port per DSCP)."""
    tsels: frozenset[bytes] | None = None
    """The called TSAP selectors served (X.224 13.3.4 a); b"" stands for a CR without
    one.  A CR calling another is refused (DR "address unknown").  None: any."""
    ssels: frozenset[bytes] | None = None
    """The called session selectors served (X.225 CN PI 52); b"" stands for a CN without
    one.  A CN calling another is refused (RF reason 129, session selector unknown), in
    either mode.  None: any."""
    psels: frozenset[bytes] | None = None
    """The called presentation selectors served (X.226 CP called-presentation-selector);
    b"" stands for a CP without one.  A CP calling another is refused (CPR
    called-presentation-address-unknown).  X.410-1984 mode has no presentation layer:
    this does not apply to it.  None: any."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Selectors:
    """The selectors of the connections to a peer (X.224 TSAP-IDs, X.225 SSAP
    identifiers, X.226 presentation selectors); empty: the parameter is left out."""

    tsel: bytes = b""
    """The called TSAP selector: the peer's (PP routes by it: "591", "x400", ...)."""
    ssel: bytes = b""
    """The called session selector (CN PI 52)."""
    psel: bytes = b""
    """The called presentation selector (CP called-presentation-selector)."""
    calling_tsel: bytes = b""
    """Our TSAP selector, the CR's calling TSAP-ID."""
    calling_ssel: bytes = b""
    """Our session selector (CN PI 51)."""
    calling_psel: bytes = b""
    """Our presentation selector (CP calling-presentation-selector)."""


NO_SELECTORS = Selectors()


@dataclass(frozen=True, slots=True, kw_only=True)
class Slot:
    """A connection slot of a peer channel: which precedences it carries and how."""

    precedences: tuple[Precedence, ...]
    """The precedences this slot admits (its schedule), most urgent first."""
    port: int
    """The peer's TCP port for this slot, 1..65535."""
    dscp: int
    """Code point (0..63) of this slot's connections; by default the precedence table's
    code point of the slot's most urgent precedence."""
    mode: SlotMode = SlotMode.ON_DEMAND
    """Permanent (kept open) or on demand (opened for waiting messages)."""
    max_connections: int = 1
    """Parallel connections this slot may hold (>= 1)."""
    backlog_threshold: int = 10
    """Messages waiting for this slot, per open connection, before one more connection
    opens (>= 1): a second connection is never opened for a single waiting message."""
    idle_timeout: float = 300.0
    """Seconds without traffic after which an on-demand connection is closed, and after
    which a permanent slot closes the connections it opened beyond its first (> 0)."""
    selectors: Selectors = NO_SELECTORS
    """The selectors of this slot's connections: each the slot's own when it sets it,
    else its peer's."""

    def admits(self, precedence: Precedence) -> bool:
        """Whether messages of ``precedence`` travel on this slot."""
        return precedence in self.precedences


@dataclass(frozen=True, slots=True, kw_only=True)
class Peer:
    """A neighbouring MTA, the addresses routed to it, and its connection slots."""

    name: str
    """The peer's MTAName: what it presents when it binds to us, and how
    ``default_route`` and the operator tool refer to it."""
    host: str
    """Host name or IP address to connect to."""
    routes: tuple[AddressPrefix, ...] = ()
    """O/R address prefixes routed to this peer."""
    our_credentials: Credentials
    """What we present in MTA-binds with this peer (our name; the peer's ``password``,
    else the MTA's)."""
    their_credentials: Credentials
    """What the peer must present: its name and, when set, its ``peer_password``."""
    slots: tuple[Slot, ...]
    """Connection slots; together they admit each precedence exactly once."""
    selectors: Selectors = NO_SELECTORS
    """The peer's selectors, which its slots inherit unless they set their own."""
    protocol: P1Protocol = P1Protocol.NORMAL
    """How this MTA speaks P1 to the peer when it calls it."""
    supported_extensions: tuple[int | str, ...] = ()
    """Extension types (standard-extension numbers, private OIDs) the operator knows
    this peer supports: a message carrying one marked critical for transfer is transferred
    to it although this MTA does not implement it (X.411 9.1)."""

    def slot_for(self, precedence: Precedence) -> Slot:
        """The slot that carries ``precedence`` (the loader guarantees there is one)."""
        for slot in self.slots:
            if slot.admits(precedence):
                return slot
        raise LookupError(f"peer {self.name} has no slot for {precedence.label}")


@dataclass(frozen=True, slots=True, kw_only=True)
class MaxAge:
    """Seconds a message may wait before the MTA gives up and reports non-delivery.

    The defaults follow the spirit of ACP 121 handling targets, with room for outages:
    override and flash 1 h, immediate 4 h, priority 12 h, routine 24 h, deferred 72 h.
    """

    override: float = 1 * _HOUR
    flash: float = 1 * _HOUR
    immediate: float = 4 * _HOUR
    priority: float = 12 * _HOUR
    routine: float = 24 * _HOUR
    deferred: float = 72 * _HOUR

    def of(self, precedence: Precedence) -> float:
        """The maximum age of a message of ``precedence``."""
        value: float = getattr(self, precedence.label)
        return value


DEFAULT_MAX_AGE = MaxAge()


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """Backoff between attempts to reach a peer: grows by ``factor`` up to ``maximum``,
    spread by ``jitter`` so that a whole deferred queue does not come due at once."""

    initial: float = 60.0
    """Seconds before the first retry (> 0)."""
    maximum: float = _HOUR
    """Longest wait between attempts (>= initial)."""
    factor: float = 2.0
    """Growth of the wait from one attempt to the next (>= 1)."""
    jitter: float = 0.2
    """Fraction (0 <= jitter < 1) by which a wait is randomly lengthened or shortened."""

    def delay(self, attempt: int, draw: float) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1, 2, ...).

        ``draw`` is a random number in [0, 1) supplied by the caller, so the policy stays
        a pure function: 0.5 gives the nominal wait, 0 and 1 its ends.
        """
        return self.nominal(attempt) * (1.0 + self.jitter * (2.0 * draw - 1.0))

    def nominal(self, attempt: int) -> float:
        """The wait after attempt ``attempt`` before jitter: ``initial * factor ** (attempt
        - 1)``, capped at ``maximum``.  Attempts past the one that reaches the cap are not
        raised to a power at all, so no attempt number overflows the arithmetic."""
        steps = max(0, attempt - 1)
        if steps == 0 or self.factor <= 1.0 or self.initial >= self.maximum:
            return min(self.maximum, self.initial)
        if steps >= math.log(self.maximum / self.initial) / math.log(self.factor):
            return self.maximum
        return min(self.maximum, self.initial * self.factor**steps)


DEFAULT_RETRY = RetryPolicy()


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionLimits:
    """What a peer (bound or not) and a local API client may make the daemon hold.

    Read from ``[limits]`` beside the protocol stack's sizes.  The defaults let every
    legitimate peer of a site through while a flood of connections, unbound associations,
    slow writers or password guesses costs the daemon little and returns what it took.
    """

    max_connections: int = 256
    """Inbound P1 connections at once, on all listeners; more are closed at accept."""
    max_connections_per_address: int = 32
    """Inbound P1 connections at once from one IP address."""
    max_unbound: int = 32
    """Inbound P1 connections that have not yet completed an MTA-bind."""
    max_bytes_before_bind: int = 32 * 1024
    """Octets a peer may send before its MTA-bind is accepted (a bind takes a few KiB)."""
    bind_timeout: float = 30.0
    """Seconds from TCP accept to the MTA-bind request (and, initiator, to its answer)."""
    idle_timeout: float = 600.0
    """Seconds a bound association may stay silent with nothing in progress."""
    min_progress: int = 1024
    """Octets a peer must send per ``progress_interval`` once a PDU has begun to arrive."""
    progress_interval: float = 30.0
    """Seconds over which ``min_progress`` is measured."""
    failed_bind_delay: float = 1.0
    """Delay before answering a bind from an address whose last bind failed; doubles with
    each further failure from that address."""
    failed_bind_delay_max: float = 30.0
    """Longest such delay."""
    max_api_connections: int = 64
    """Local API (control socket) connections at once."""
    api_idle_timeout: float = 300.0
    """Seconds a local API connection may stay silent between requests."""


DEFAULT_CONNECTION_LIMITS = ConnectionLimits()


@dataclass(frozen=True, slots=True, kw_only=True)
class QuarantineLimits:
    """How much the quarantine may hold (``[quarantine]``).

    A transfer whose MTS-APDU cannot be taken in (it does not decode, or its envelope
    cannot be written with this MTA's trace, X.411 12.2.1.1.1.10) is confirmed and kept
    there, so that one bad message does not hold up a peer's link.  The bounds keep a
    broken or hostile peer from filling the disk: a transfer that would take the
    quarantine past either is refused unconfirmed (the peer keeps it and tries again).
    """

    max_messages: int = 1000
    """APDUs kept at most (>= 1)."""
    max_bytes: int = 256 * 1024 * 1024
    """Octets of APDUs kept at most (>= 1)."""


DEFAULT_QUARANTINE = QuarantineLimits()


@dataclass(frozen=True, slots=True, kw_only=True)
class Retention:
    """How long what the MTA has finished with is kept (``[retention]``).

    Pruned in batches of ``batch`` rows, one transaction each, every ``interval``
    seconds, off the transfer path.  Mailboxes are the users': never pruned here.
    """

    finished: float = 24 * _HOUR
    """A queued message whose every recipient reached a final state (transferred,
    delivered, failed) is deleted this long after the last of them, its APDU file with
    it (0: at the next pruning).  What happened to it stays in the audit log."""
    received: float = 7 * 24 * _HOUR
    """Duplicate-detection keys (MTS identifier, recipient) are kept this long: longer
    than a peer may go on retrying one transfer, or a late retry is delivered twice.
    At least the longest ``[max_age]``."""
    audit: float = 30 * 24 * _HOUR
    """Audit-log records (what ``x400ctl track`` reads) are kept this long."""
    interval: float = 300.0
    """Seconds between two prunings."""
    batch: int = 500
    """Rows deleted per transaction at most."""


DEFAULT_RETENTION = Retention()


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricsEndpoint:
    """Where the daemon answers Prometheus scrapes (``[metrics]``; :mod:`mta.metrics`).

    Off unless ``listen`` is configured: figures about the queue and the peers are for
    the operator's network only.
    """

    host: str | None = None
    """The address to listen on (an IPv6 one without its brackets); None: no endpoint."""
    port: int = 9464
    """TCP port, 1..65535 (9464 is the port Prometheus' registry gives exporters that
    have none of their own)."""
    path: str = "/metrics"
    """The one path answered (HTTP GET); any other is 404 Not Found."""

    @property
    def enabled(self) -> bool:
        """Whether the endpoint is served."""
        return self.host is not None

    @property
    def url(self) -> str:
        """``http://host:port/path``, an IPv6 address in brackets."""
        host = f"[{self.host}]" if self.host and ":" in self.host else self.host
        return f"http://{host}:{self.port}{self.path}"


DEFAULT_METRICS = MetricsEndpoint()


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Access:
    """Who may use the local API for what (``[access]``), from the caller's credentials
    (``SO_PEERCRED``): root, the daemon's own account and the members of ``operators``
    may do everything; an account of ``users`` may submit as its O/R names and use
    their mailboxes; any other account is refused every request."""

    operators: tuple[OperatorGroup, ...] | None = None
    """Groups whose members are operators; None: the daemon's own primary group."""
    users: tuple[LocalAccount, ...] = ()
    """The accounts that are users, each with its O/R names."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MtaConfig:
    """One MTA's configuration file, validated."""

    source: Path
    """The configuration file (absolute); relative paths in it were resolved against its
    directory."""
    name: str
    """This MTA's MTAName (X.411 clause 12.1.1), 1..32 IA5 characters."""
    global_domain: ORAddress
    """The global domain identifier put in trace information: country, ADMD, optional
    PRMD (X.411 clause 12.2.1.1.1.10)."""
    password: Secret | None = None
    """The password this MTA presents in MTA-binds unless a peer sets its own."""
    state_dir: Path = DEFAULT_STATE_DIR
    """Directory for the queue database, the control socket and other state."""
    database: str = field(repr=False)
    """SQLAlchemy URL of the queue and store; default a SQLite file in ``state_dir``.
    A relative SQLite path is resolved against the configuration file's directory.  Left
    out of ``repr``: a server database URL may carry a password."""
    control_socket: Path
    """Unix socket of the local control API; default ``state_dir/control.sock``."""
    listeners: tuple[Listener, ...] = ()
    """Where peers connect to us; none: this MTA only sends."""
    local_domains: tuple[AddressPrefix, ...]
    """Address prefixes delivered into the local message store; default the global
    domain."""
    local_users: tuple[ORName, ...] | None = None
    """The users of the local domains; a recipient there that is none of them is
    non-delivered (unrecognised O/R name).  None: every O/R name under a local domain
    has a mailbox, named by its canonical text form."""
    supported_extensions: tuple[int | str, ...] = ()
    """Extension types this MTA does not implement that the operator declares its local
    delivery supports: a message carrying one marked critical for delivery is delivered
    instead of non-delivered (X.411 9.1)."""
    peers: tuple[Peer, ...] = ()
    """Neighbouring MTAs."""
    default_route: str | None = None
    """Name of the peer that gets addresses no route and no local domain matches;
    None: such addresses are non-delivered (unable to transfer)."""
    max_age: MaxAge = DEFAULT_MAX_AGE
    """Per-precedence age at which a waiting message is non-delivered."""
    retry: RetryPolicy = DEFAULT_RETRY
    """Backoff between attempts to reach a peer."""
    precedence_table: PrecedenceTable = DEFAULT_TABLE
    """Precedence to P1 priority and DSCP mapping, with the configured DSCP overrides."""
    log_level: LogLevel = LogLevel.INFO
    """The daemon's log threshold."""
    limits: StackLimits = field(default=DEFAULT_LIMITS)
    """Sizes the protocol stack accepts from a peer (largest message and so on)."""
    connection_limits: ConnectionLimits = field(default=DEFAULT_CONNECTION_LIMITS)
    """Connections, unbound associations, slow peers, failed binds, local API clients."""
    quarantine: QuarantineLimits = field(default=DEFAULT_QUARANTINE)
    """How many transfers that cannot be taken in, and how many octets of them, are kept."""
    retention: Retention = field(default=DEFAULT_RETENTION)
    """What is pruned when (``[retention]``)."""
    metrics: MetricsEndpoint = field(default=DEFAULT_METRICS)
    """The Prometheus endpoint (``[metrics]``); off by default."""
    access: Access | None = None
    """Who may use the local API for what (``[access]``); None: every process that can
    connect to the control socket (mode 0660: the daemon's user and group) is an
    operator."""
    tcp_congestion: str | None = None
    """The TCP congestion control (``TCP_CONGESTION``, e.g. ``"cubic"``) of every P1
    socket this MTA creates or accepts; None: the system's default."""

    def peer(self, name: str) -> Peer:
        """The peer called ``name``; :class:`KeyError` if there is none."""
        for peer in self.peers:
            if peer.name == name:
                return peer
        raise KeyError(name)
