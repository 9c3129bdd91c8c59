"""Typed configuration of one MTA, and the file's keys, each declared once on its field.

:func:`config.loader.load_config` returns an :class:`MtaConfig`.  Every value here has
been checked by the loader (ranges, cross-references, coverage of the six STANAG 4406
precedences by each peer's connection slots), so the daemon, the operator tool and the
client take them as they are.  Objects built directly in code are not checked: build them
through the loader, or keep to the rules the loader states.

Each field the file sets carries its key in its metadata (:mod:`config.declare`): its
name in the file, its kind (:mod:`config.kinds`: how it is read, written and described)
and what it means; the field's default is the key's.  The loader, ``x400ctl config`` and
docs/configuration.md (``python -m config.doc``) are all made from these declarations.

Times are seconds (float); sizes are octets; relative paths have already been resolved
against the directory of the configuration file.

Public API::

    MtaConfig            the whole file
    Listener             one local listening address, port, DSCP and the TSELs it serves
    TlsFiles, TlsMode    certificate, key and CA files (PEM); TLS required or off
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
    Minimize             MINIMIZE at start: the least precedence transferred, and submissions
    QueueClaims          how long a process's claim on queued work lasts unless renewed
    Retention            how long what the MTA has finished with is kept
    MetricsEndpoint      where the Prometheus endpoint listens (``[metrics]``), if anywhere
    Access, OperatorGroup, LocalAccount   who may use the local API for what (``[access]``)
    Security, NamedClearance   the security policy, the default label and the clearances
                         of mailboxes and peers (``[security]``), DEFAULT_SECURITY
    STACK_LIMITS, PRECEDENCE_DSCP        the ``[limits]`` keys of the stack, the ``[dscp]`` keys
    default_database(state_dir), default_control_socket(state_dir),
    default_local_domains(global_domain)  the defaults computed from other keys
    DEFAULT_STATE_DIR, DEFAULT_MAX_AGE, DEFAULT_RETRY, DEFAULT_CONNECTION_LIMITS,
    DEFAULT_QUARANTINE, DEFAULT_QUEUE, DEFAULT_RETENTION, DEFAULT_METRICS, DEFAULT_MINIMIZE
    DEFAULT_CONFIG_FILE   the file read when no configuration is named
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from config.declare import Foreign, Form, Key, foreign, inline, secret, section, tables, value
from config.kinds import (
    ACCOUNTS,
    ADDRESS_PREFIXES,
    BOOLEAN,
    CATEGORIES,
    CHECKPOINT_SIZE,
    CLASSIFICATION,
    CLEARANCE_NAME,
    CONGESTION,
    COUNT,
    DATABASE_URL,
    DSCP,
    DURATION,
    EXTENSION_TYPES,
    FACTOR,
    FILE_NAME,
    FINGERPRINT,
    FOREIGN_ORIGINATORS,
    FRACTION,
    GLOBAL_DOMAIN,
    HOST,
    HOSTS,
    IP_ADDRESS,
    LISTEN,
    LOG_LEVEL,
    METRICS_PATH,
    MINIMIZE_SUBMISSIONS,
    MTA_NAME,
    MULTICAST_GROUP,
    MULTICAST_GROUPS,
    NODE_ID,
    OPERATOR_GROUPS,
    OR_NAMES,
    OWN_EXTENSIONS,
    P1_PROTOCOL,
    PATH,
    PDU_SIZE,
    PEER_NAME,
    PORT,
    PRECEDENCE,
    PRECEDENCES,
    PSEL,
    PSELS,
    SECONDS,
    SIZE,
    SLOT_MODE,
    SOURCES,
    SSEL,
    SSELS,
    TLS_MODE,
    TPDU_SIZE,
    TRANSPORT,
    TSEL,
    TSELS,
)
from config.values import (
    AddressPrefix,
    ForeignOriginators,
    LocalAccount,
    LogLevel,
    MinimizeSubmissions,
    OperatorGroup,
    OwnExtension,
    P1Protocol,
    Secret,
    SlotMode,
    TlsMode,
    Transport,
)
from p1.mts.precedence import DEFAULT_TABLE, Precedence, PrecedenceTable
from p1.orname.model import ORAddress, ORName
from p1.orname.text import format_orname
from p1.osi import DEFAULT_LIMITS, StackLimits
from p1.security.spif import Clearance, SecurityPolicy

__all__ = [
    "DEFAULT_CONFIG_FILE",
    "DEFAULT_CONNECTION_LIMITS",
    "DEFAULT_MAX_AGE",
    "DEFAULT_METRICS",
    "DEFAULT_MINIMIZE",
    "DEFAULT_QUARANTINE",
    "DEFAULT_QUEUE",
    "DEFAULT_RETENTION",
    "DEFAULT_RETRY",
    "DEFAULT_SECURITY",
    "DEFAULT_STATE_DIR",
    "NO_SELECTORS",
    "NO_TLS_FILES",
    "PRECEDENCE_DSCP",
    "STACK_LIMITS",
    "Access",
    "AddressPrefix",
    "ConnectionLimits",
    "Credentials",
    "ForeignOriginators",
    "Listener",
    "LocalAccount",
    "LogLevel",
    "MaxAge",
    "MetricsEndpoint",
    "Minimize",
    "MinimizeSubmissions",
    "MtaConfig",
    "NamedClearance",
    "OperatorGroup",
    "P1Protocol",
    "Peer",
    "QuarantineLimits",
    "QueueClaims",
    "Retention",
    "RetryPolicy",
    "Secret",
    "Security",
    "Selectors",
    "Slot",
    "SlotMode",
    "TlsFiles",
    "TlsMode",
    "default_control_socket",
    "default_database",
    "default_local_domains",
]

DEFAULT_STATE_DIR = Path("/var/lib/aiox400")
"""Where the queue database and the control socket live unless configured otherwise."""

DEFAULT_CONFIG_FILE = Path("/etc/aiox400/mta.toml")
"""The configuration ``x400-mta``, ``x400`` and ``x400ctl`` read when none is named (the
path deploy/systemd/aiox400-mta.service gives the daemon)."""

_HOUR = 3600.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Credentials:
    """One side of an MTA-bind (X.411 clause 12.1.1): MTAName and simple credentials."""

    name: str
    """The MTAName (IA5String, 1..32 characters)."""
    password: Secret | None = None
    """The password; None: no password (an unauthenticated bind, or none checked)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsFiles:
    """This MTA's certificate and key, and the certificates it trusts, as PEM files."""

    certificate: Path | None = field(
        default=None,
        metadata=value(
            FILE_NAME,
            "PEM file of this MTA's certificate (followed by the intermediate CAs' ones, "
            "if any) presented in TLS handshakes.",
            derived="[tls]'s (for a listener or peer)",
        ),
    )
    key: Path | None = field(
        default=None,
        metadata=value(
            FILE_NAME,
            "PEM file of the private key of certificate (unencrypted: the daemon starts "
            "unattended; readable by the daemon's user alone).",
            derived="[tls]'s (for a listener or peer)",
        ),
    )
    ca: Path | None = field(
        default=None,
        metadata=value(
            FILE_NAME,
            "PEM file of the certificates trusted to have issued the other side's "
            "certificate (a self-signed certificate is its own CA).",
            derived="[tls]'s (for a listener or peer)",
        ),
    )


NO_TLS_FILES = TlsFiles()


@dataclass(frozen=True, slots=True, kw_only=True)
class Listener:
    """A local address the MTA accepts P1 connections on (RFC 1006 over TCP)."""

    address: str = field(
        default="0.0.0.0",
        metadata=value(HOST, 'IP address or host name to bind; "0.0.0.0" or "::" for all.'),
    )
    port: int = field(metadata=value(PORT, "TCP port."))
    dscp: int = field(
        default=0,
        metadata=value(
            DSCP,
            "Code point set on the listening socket before the first accept, so the "
            "connections it accepts answer with the same mark (one listener port per DSCP).",
        ),
    )
    tsels: frozenset[bytes] | None = field(
        default=None,
        metadata=value(
            TSELS,
            'The called TSAP selectors served (X.224 13.3.4 a); "" admits a CR without '
            'one.  A CR calling another is refused (DR "address unknown").  Not set: any.',
            name="tsel",
        ),
    )
    ssels: frozenset[bytes] | None = field(
        default=None,
        metadata=value(
            SSELS,
            'The called session selectors served (X.225 CN PI 52); "" admits a CN without '
            "one.  A CN calling another is refused (RF reason 129, session selector "
            "unknown), in either mode.  Not set: any.",
            name="ssel",
        ),
    )
    psels: frozenset[bytes] | None = field(
        default=None,
        metadata=value(
            PSELS,
            "The called presentation selectors served (X.226 CP called-presentation-"
            'selector); "" admits a CP without one.  A CP calling another is refused (CPR '
            "called-presentation-address-unknown).  Not in X.410-1984 mode, which has no "
            "presentation layer.  Not set: any.",
            name="psel",
        ),
    )
    tls: TlsMode = field(
        default=TlsMode.OFF,
        metadata=value(
            TLS_MODE,
            '"required": every connection begins with a TLS 1.2 or 1.3 handshake and RFC '
            '1006 runs inside it (port 3782, iso-tp0s, by convention); "off": plain TCP.',
        ),
    )
    tls_files: TlsFiles = field(
        default=NO_TLS_FILES,
        metadata=inline(
            TlsFiles,
            "This listener's certificate and key, and the CAs its clients' certificates "
            "are checked against (with every TLS peer's ca).",
            derived="[tls]",
        ),
    )
    client_certificate: TlsMode = field(
        default=TlsMode.REQUIRED,
        metadata=value(
            TLS_MODE,
            'With tls = "required": "required" refuses a handshake without a client '
            'certificate issued by a trusted CA (mutual authentication); "off" asks for '
            'none (then only peers with tls = "off" can bind over it).',
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Selectors:
    """The selectors of the connections to a peer (X.224 TSAP-IDs, X.225 SSAP
    identifiers, X.226 presentation selectors); empty: the parameter is left out."""

    tsel: bytes = field(
        default=b"",
        metadata=value(TSEL, 'The called TSAP selector: the peer\'s (PP routes by it: "x400").'),
    )
    ssel: bytes = field(
        default=b"", metadata=value(SSEL, "The called session selector (CN PI 52).")
    )
    psel: bytes = field(
        default=b"",
        metadata=value(PSEL, "The called presentation selector (CP called-presentation-selector)."),
    )
    calling_tsel: bytes = field(
        default=b"", metadata=value(TSEL, "Our TSAP selector, the CR's calling TSAP-ID.")
    )
    calling_ssel: bytes = field(
        default=b"", metadata=value(SSEL, "Our session selector (CN PI 51).")
    )
    calling_psel: bytes = field(
        default=b"",
        metadata=value(PSEL, "Our presentation selector (CP calling-presentation-selector)."),
    )


NO_SELECTORS = Selectors()


@dataclass(frozen=True, slots=True, kw_only=True)
class Slot:
    """A connection slot of a peer channel: which precedences it carries and how."""

    precedences: tuple[Precedence, ...] = field(
        metadata=value(
            PRECEDENCES,
            "The precedences this slot admits (its schedule); the slots of a peer admit "
            "each of the six exactly once.",
        )
    )
    port: int = field(metadata=value(PORT, "The peer's TCP port for this slot."))
    dscp: int = field(
        metadata=value(
            DSCP,
            "Code point of this slot's connections.",
            derived="the [dscp] code point of its most urgent precedence",
        )
    )
    mode: SlotMode = field(
        default=SlotMode.ON_DEMAND,
        metadata=value(
            SLOT_MODE,
            '"permanent": opened at start and re-opened with backoff whenever it drops; '
            '"on-demand": opened when a message is waiting, closed after idle_timeout.',
        ),
    )
    max_connections: int = field(
        default=1, metadata=value(COUNT, "Parallel connections this slot may hold.")
    )
    backlog_threshold: int = field(
        default=10,
        metadata=value(
            COUNT,
            "Messages waiting for this slot, per open connection, before one more "
            "connection opens: a second connection never opens for a single message.",
        ),
    )
    idle_timeout: float = field(
        default=300.0,
        metadata=value(
            DURATION,
            "Time without traffic after which an on-demand connection is closed, and after "
            "which a permanent slot closes the connections it opened beyond its first.",
        ),
    )
    connect_timeout: float = field(
        default=10.0,
        metadata=value(
            DURATION,
            "Time a connection of this slot allows for the TCP connection to the peer.  "
            "Over HF radio a SYN alone may take seconds on the air: at 75 bit/s one and "
            "its answer need well over 10 s.",
        ),
    )
    transfer_timeout: float = field(
        default=300.0,
        metadata=value(
            DURATION,
            "Time one transfer on this slot may take, from its first octet to the peer's "
            "confirmation, before the connection is given up and the message put back.",
        ),
    )
    source_address: str | None = field(
        default=None,
        metadata=value(
            IP_ADDRESS,
            "Local address this slot's connections come from, when it is not the peer's.",
            derived="the peer's source_address",
        ),
    )
    selectors: Selectors = field(
        default=NO_SELECTORS,
        metadata=inline(
            Selectors,
            "The selectors of this slot's connections: each the slot's own when it sets "
            "it, else its peer's.",
            derived="the peer's",
        ),
    )
    tls: TlsMode = field(
        metadata=value(
            TLS_MODE,
            "Whether this slot's connections run inside TLS.  A slot that requires it "
            "makes the peer's own binds require it too, as the peer's tls does: a link "
            "proven in one direction is not left open in the other.",
            derived="the peer's tls",
        ),
    )
    checkpoint_size: int = field(
        default=0,
        metadata=value(
            CHECKPOINT_SIZE,
            "Checkpoint size this slot's connections propose (X.228 checkpointSize), in "
            "units of 1024 octets: a transfer is cut into pieces of this size with a "
            "confirmed checkpoint between them, and one cut off by a lost connection goes "
            "on from its last confirmed checkpoint on the next connection instead of from "
            "its first octet (with a peer that recovers transfers, as this MTA does).  0: "
            "no checkpoints, each transfer in one piece, sent again whole after a loss.",
        ),
    )
    window_size: int = field(
        default=3,
        metadata=value(
            COUNT,
            "Checkpoints this slot's connections let go unconfirmed at a time (X.228 "
            "windowSize); with checkpoint_size 0, unused.",
        ),
    )

    def admits(self, precedence: Precedence) -> bool:
        """Whether messages of ``precedence`` travel on this slot."""
        return precedence in self.precedences


@dataclass(frozen=True, slots=True, kw_only=True)
class Acp142Endpoint:
    """This MTA's ACP 142 node (``[acp142]``): where it sends and receives P_MUL."""

    address: str = field(
        metadata=value(
            IP_ADDRESS,
            "The address P_MUL datagrams are received on and sent from (an IPv4 address: "
            "ACP 142 names nodes by their IPv4 address).",
        )
    )
    data_port: int = field(
        default=2753,
        metadata=value(
            PORT,
            "UDP port Address, Data and Discard_Message PDUs are received on (ACP 142 has "
            "no registered port; 2753 and 2754 are the data and acknowledgement ports "
            "ACP 142 implementations commonly use).",
        ),
    )
    ack_port: int = field(default=2754, metadata=value(PORT, "UDP port Ack_PDUs are received on."))
    node_id: str | None = field(
        default=None,
        metadata=value(
            NODE_ID,
            "This node's ID in the PDUs (Source_ID, Destination_ID).",
            derived="address",
        ),
    )
    rate: int = field(
        default=10_000_000,
        metadata=value(
            COUNT,
            "The link's rate in bit/s: datagrams are paced to it, most urgent first, so "
            "that a flash message overtakes a routine one already on the link and the "
            "radio's or the host's buffers do not overflow.",
        ),
    )
    max_pdu_size: int = field(
        default=1400,
        metadata=value(
            PDU_SIZE,
            "Largest PDU sent, in octets (one datagram each; 1400 fits an Ethernet MTU, an "
            "HF bearer wants its own size).",
        ),
    )
    ack_delay: float = field(
        default=1.0,
        metadata=value(
            DURATION,
            "How long after the last PDU of an incomplete message an Ack_PDU listing what "
            "is missing is sent (at least three PDUs' time at the rate).",
        ),
    )
    emcon: bool = field(
        default=False,
        metadata=value(
            BOOLEAN,
            "This node is in EMCON (radio silence): it receives and sends no "
            "acknowledgements; its peers must have emcon = true for it.",
        ),
    )
    groups: tuple[str, ...] = field(
        default=(),
        metadata=value(
            MULTICAST_GROUPS,
            "Multicast groups this node receives on (at data_port), joined on the "
            "interface of address: where peers send messages meant for several MTAs at once.",
        ),
    )
    multicast_ttl: int = field(
        default=8,
        metadata=value(COUNT, "The IP TTL of what this node sends to a multicast group."),
    )
    max_incomplete: int = field(
        default=64,
        metadata=value(
            COUNT,
            "Incomplete incoming messages held at a time; another one's Address_PDU is "
            "not taken until one completes or expires (its sender sends it again).",
        ),
    )

    @property
    def node(self) -> str:
        """The node ID, as an IPv4 address."""
        return self.node_id or self.address


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerAcp142:
    """How this MTA reaches one peer over ACP 142 (``[peers.acp142]``)."""

    data_port: int = field(
        default=2753, metadata=value(PORT, "UDP port the peer receives data PDUs on.")
    )
    ack_port: int = field(
        default=2754, metadata=value(PORT, "UDP port the peer receives Ack_PDUs on.")
    )
    node_id: str | None = field(
        default=None,
        metadata=value(
            NODE_ID,
            "The peer's node ID; PDUs naming another Source_ID from its address are not its.",
            derived="the peer's host (an IPv4 address)",
        ),
    )
    group: str | None = field(
        default=None,
        metadata=value(
            MULTICAST_GROUP,
            "A multicast group the peer receives on: a message for several peers with the "
            "same group goes once, to the group, naming each of them; each takes on the "
            "recipients it does not route to another of them.  The peers of one group "
            "share one data_port.  Not set: the peer's own address.",
        ),
    )
    emcon: bool = field(
        default=False,
        metadata=value(
            BOOLEAN,
            "The peer is in EMCON (radio silence): it sends no acknowledgements, so each "
            "message goes emcon_repetitions times and is then taken as transferred.",
        ),
    )
    emcon_repetitions: int = field(
        default=3,
        metadata=value(COUNT, "How many times a message goes to a peer in EMCON."),
    )
    emcon_interval: float = field(
        default=60.0,
        metadata=value(DURATION, "Time between the repetitions to a peer in EMCON."),
    )
    retransmission: float = field(
        default=30.0,
        metadata=value(
            DURATION,
            "How long after a message's PDUs left the link this MTA waits for the peer's "
            "acknowledgement before sending what is missing again (ACK_RE-TRANSMISSION_TIME).",
        ),
    )
    backoff: float = field(
        default=2.0,
        metadata=value(FACTOR, "Each further wait is the last one times this (BACK-OFF_FACTOR)."),
    )
    max_retransmission: float = field(
        default=600.0, metadata=value(DURATION, "The longest wait between retransmissions.")
    )
    give_up: float = field(
        default=3600.0,
        metadata=value(
            DURATION,
            "How long one attempt sends a message (its Expiry_Time, or the message's own "
            "expiry if sooner): then a Discard_Message_PDU ends it and the message waits "
            "for its next attempt ([retry]).",
        ),
    )
    window: int = field(
        default=8,
        metadata=value(COUNT, "Messages on their way to the peer at a time."),
    )


DEFAULT_PEER_ACP142 = PeerAcp142()


@dataclass(frozen=True, slots=True, kw_only=True)
class Peer:
    """A neighbouring MTA, the addresses routed to it, and its connection slots."""

    name: str = field(
        metadata=value(
            MTA_NAME,
            "The peer's MTAName: what it presents when it binds to us, and how "
            "default_route and the operator tool refer to it.",
        )
    )
    hosts: tuple[str, ...] = field(
        metadata=value(
            HOSTS,
            "Host name or IP address to connect to, or a list of them: the processes of a "
            "peer site that share its MTA name.  Each connection of a slot starts at a "
            "different one (by its index) and moves to the next when it cannot connect; "
            "binds from any of them are this peer's, and all are known peer addresses.",
            name="host",
        )
    )
    routes: tuple[AddressPrefix, ...] = field(
        default=(), metadata=value(ADDRESS_PREFIXES, "O/R address prefixes routed to this peer.")
    )
    our_credentials: Credentials = field(
        metadata=secret(
            "What we present in MTA-binds with this peer (with our name).",
            name="password",
            derived="the MTA's password",
        )
    )
    their_credentials: Credentials = field(
        metadata=secret(
            "What the peer must present in its MTA-binds (with its name).  Not set: the "
            "peer is not authenticated; its binds are accepted on its name and answered "
            "unauthenticated, without this MTA's password.",
            name="peer_password",
        )
    )
    supported_extensions: tuple[int | str, ...] = field(
        default=(),
        metadata=value(
            EXTENSION_TYPES,
            "Extension types (standard-extension numbers, private OIDs) this peer is known "
            "to support: a message carrying one marked critical for transfer is "
            "transferred to it although this MTA does not implement it (X.411 9.1).",
        ),
    )
    protocol: P1Protocol = field(
        default=P1Protocol.NORMAL,
        metadata=value(
            P1_PROTOCOL,
            'How this MTA calls the peer: "1988" (normal mode), "1988-x410" (X.410-1984 '
            'mode with 1988 P1) or "1984" (X.410-1984 mode to a 1984 MTA, down-graded). '
            "It answers either mode from anyone.",
        ),
    )
    omit_extensions: tuple[OwnExtension, ...] = field(
        default=(),
        metadata=value(
            OWN_EXTENSIONS,
            "Optional envelope extensions this MTA adds that are left out of what it "
            'transfers to this peer: "internal-trace" (its own internal-trace-information '
            'entries, X.411 standard-extension 38) and "priority-level-qualifier" (STANAG '
            "4406, on messages originated here), for a peer that aborts transfers it cannot "
            "parse.  Extensions other MTAs put in are relayed as received.  With protocol "
            '"1984" every extension is removed by the down-grade anyway.',
        ),
    )
    clearance: str | None = field(
        default=None,
        metadata=value(
            CLEARANCE_NAME,
            "What the link to this peer is accredited for: a message whose security label "
            "this clearance does not allow is never transferred to it, its recipients there "
            "are non-delivered (secure-messaging-error).  Not set, with a [security] policy: "
            "only messages without a label (and no default_label) are transferred to it.",
        ),
    )
    source_address: str | None = field(
        default=None,
        metadata=value(
            IP_ADDRESS,
            "Local IP address every connection this MTA opens to the peer comes from "
            "(bound before it connects): for a peer that tells MTAs apart by address, or "
            "routers that classify by source.  Not set: the address the system picks.  "
            "It must be an address of this host, of the family of the peer's addresses.",
        ),
    )
    selectors: Selectors = field(
        default=NO_SELECTORS,
        metadata=inline(Selectors, "The peer's selectors, which its slots inherit."),
    )
    addresses: tuple[str, ...] | None = field(
        default=None,
        metadata=value(
            SOURCES,
            "Hosts, IP addresses or networks (CIDR) the peer's connections may come from: "
            "a bind naming it from elsewhere is refused as for a wrong password.  Host "
            "names are resolved at each bind.  Not set: any address.",
        ),
    )
    tls: TlsMode = field(
        default=TlsMode.OFF,
        metadata=value(
            TLS_MODE,
            '"required": this MTA connects to the peer in TLS (each slot unless it says '
            "otherwise), and refuses the peer's binds made without TLS or with a "
            'certificate that is not its; "off": plain TCP, binds accepted either way.',
        ),
    )
    tls_files: TlsFiles = field(
        default=NO_TLS_FILES,
        metadata=inline(
            TlsFiles,
            "What this MTA presents to the peer, and the CA that issues the peer's certificate.",
            derived="[tls]",
        ),
    )
    fingerprint: str | None = field(
        default=None,
        metadata=value(
            FINGERPRINT,
            "The SHA-256 fingerprint of the peer's certificate: its certificate must be "
            "this one (then neither ca nor certificate_name is needed to connect to it).  "
            "Its binds to a listener that requires client certificates still need the "
            "certificate trusted there: issued by a CA in a ca file the listener trusts, "
            "or given itself as this peer's ca.",
        ),
    )
    certificate_name: str | None = field(
        default=None,
        metadata=value(
            HOST,
            "The DNS name or IP address the peer's certificate must carry in its subject "
            "alternative names, its issuer being in ca (unless fingerprint is set).",
            derived="the peer's first host",
        ),
    )
    transport: Transport = field(
        default=Transport.P1,
        metadata=value(
            TRANSPORT,
            '"p1": P1 over RFC 1006 through the peer\'s connection slots; "acp142": STANAG '
            "4406 Annex E over ACP 142 (UDP), with [acp142] and [peers.acp142] and no slots.",
        ),
    )
    acp142: PeerAcp142 = field(
        default=DEFAULT_PEER_ACP142,
        metadata=section(PeerAcp142, "How the peer is reached over ACP 142.", optional=True),
    )
    slots: tuple[Slot, ...] = field(
        default=(),
        metadata=tables(
            Slot,
            "Connection slots ([[peers.slots]]) of a P1 peer; together they admit each "
            "precedence once.",
        ),
    )

    @property
    def host(self) -> str:
        """The first of the peer's hosts."""
        return self.hosts[0]

    @property
    def tls_name(self) -> str:
        """The name the peer's certificate must carry (when it is not pinned)."""
        return self.certificate_name or self.host

    @property
    def uses_tls(self) -> bool:
        """Whether the peer or any of its slots requires TLS."""
        return TlsMode.REQUIRED in (self.tls, *(slot.tls for slot in self.slots))

    @property
    def node_id(self) -> str:
        """The peer's ACP 142 node ID (as an IPv4 address)."""
        return self.acp142.node_id or self.host

    def slot_for(self, precedence: Precedence) -> Slot:
        """The slot that carries ``precedence`` (the loader guarantees there is one)."""
        for slot in self.slots:
            if slot.admits(precedence):
                return slot
        raise LookupError(f"peer {self.name} has no slot for {precedence.label}")


def _age(hours: float, label: str) -> Any:
    return field(
        default=hours * _HOUR,
        metadata=value(DURATION, f"Age at which a waiting {label} message is non-delivered."),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class MaxAge:
    """Seconds a message may wait before the MTA gives up and reports non-delivery.

    The defaults follow the spirit of ACP 121 handling targets, with room for outages:
    override and flash 1 h, immediate 4 h, priority 12 h, routine 24 h, deferred 72 h.
    """

    override: float = _age(1, "override")
    flash: float = _age(1, "flash")
    immediate: float = _age(4, "immediate")
    priority: float = _age(12, "priority")
    routine: float = _age(24, "routine")
    deferred: float = _age(72, "deferred")

    def of(self, precedence: Precedence) -> float:
        """The maximum age of a message of ``precedence``."""
        value: float = getattr(self, precedence.label)
        return value


DEFAULT_MAX_AGE = MaxAge()


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """Backoff between attempts to reach a peer: grows by ``factor`` up to ``maximum``,
    spread by ``jitter`` so that a whole deferred queue does not come due at once."""

    initial: float = field(default=60.0, metadata=value(DURATION, "Wait before the first retry."))
    maximum: float = field(
        default=_HOUR,
        metadata=value(DURATION, "Longest wait between attempts (no shorter than initial)."),
    )
    factor: float = field(
        default=2.0, metadata=value(FACTOR, "Growth of the wait from one attempt to the next.")
    )
    jitter: float = field(
        default=0.2,
        metadata=value(FRACTION, "Fraction by which a wait is randomly lengthened or shortened."),
    )
    max_refusals: int = field(
        default=3,
        metadata=value(
            COUNT,
            "Transfers of a message a peer may refuse in a row the same way (it aborts the "
            "association after the whole message arrived, RTSE abortReason user-error, "
            "permanent-problem, invalid-parameter or protocol-error) before the message is "
            "non-delivered (unable-to-transfer, protocol-violation) rather than retried "
            "until it expires.  A lost connection or a temporary refusal is no refusal.",
        ),
    )

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

    max_connections: int = field(
        default=256,
        metadata=value(
            COUNT, "Inbound P1 connections at once, on all listeners; more are closed at accept."
        ),
    )
    max_connections_per_address: int = field(
        default=32, metadata=value(COUNT, "Inbound P1 connections at once from one IP address.")
    )
    max_unbound: int = field(
        default=32,
        metadata=value(
            COUNT,
            "Inbound P1 connections that have not yet completed an MTA-bind, from addresses "
            "other than the configured peers' hosts (theirs are never refused for it).",
        ),
    )
    max_unbound_per_address: int = field(
        default=4,
        metadata=value(
            COUNT,
            "Of those, from one IP address: a newcomer over it takes the place of that "
            "address's oldest unbound connection.",
        ),
    )
    max_bytes_before_bind: int = field(
        default=32 * 1024,
        metadata=value(SIZE, "Octets a peer may send before its MTA-bind is accepted."),
    )
    bind_timeout: float = field(
        default=30.0,
        metadata=value(
            DURATION,
            "Time from TCP accept to the MTA-bind request (and, as initiator, to its answer).",
        ),
    )
    idle_timeout: float = field(
        default=600.0,
        metadata=value(
            DURATION, "Time a bound association may stay silent with nothing in progress."
        ),
    )
    min_progress: int = field(
        default=1024,
        metadata=value(
            SIZE, "Octets a peer must send per progress_interval once a PDU has begun to arrive."
        ),
    )
    progress_interval: float = field(
        default=30.0, metadata=value(DURATION, "Time over which min_progress is measured.")
    )
    max_inbound_buffer: int = field(
        default=256 * 1024 * 1024,
        metadata=value(
            SIZE,
            "Octets of inbound PDUs not yet taken in that all bound peers together may make "
            "the daemon hold; a read past it aborts its association as a temporary problem "
            "(no less than max_tsdu_size + max_message_size).",
            derived="256 MiB, or max_tsdu_size + max_message_size when that is more",
        ),
    )
    failed_bind_delay: float = field(
        default=1.0,
        metadata=value(
            SECONDS,
            "Delay before answering a bind from an address whose last bind failed; doubles "
            'with each further failure from that address ("0s": no delay).',
        ),
    )
    failed_bind_delay_max: float = field(
        default=30.0,
        metadata=value(SECONDS, "Longest such delay (no shorter than failed_bind_delay)."),
    )
    max_api_connections: int = field(
        default=64, metadata=value(COUNT, "Local API (control socket) connections at once.")
    )
    api_idle_timeout: float = field(
        default=300.0,
        metadata=value(DURATION, "Time a local API connection may stay silent between requests."),
    )
    api_operator_connections: int = field(
        default=8,
        metadata=value(
            COUNT,
            "Of max_api_connections, the places only operators may take (root, the daemon's "
            "account and, with [access], its operators); less than max_api_connections.",
        ),
    )
    max_api_connections_per_uid: int = field(
        default=8,
        metadata=value(
            COUNT, "Local API connections at once of one account that is not an operator."
        ),
    )
    max_api_pending_per_uid: int = field(
        default=64 * 1024 * 1024,
        metadata=value(
            SIZE,
            "Content octets the requests of one account that is not an operator may hold "
            "in the daemon at once (being read or taken in); a request alone is held up "
            "to max_message_size.",
        ),
    )


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

    max_messages: int = field(default=1000, metadata=value(COUNT, "APDUs kept at most."))
    max_bytes: int = field(
        default=256 * 1024 * 1024, metadata=value(SIZE, "Octets of APDUs kept at most.")
    )


DEFAULT_QUARANTINE = QuarantineLimits()


@dataclass(frozen=True, slots=True, kw_only=True)
class Minimize:
    """MINIMIZE (``[minimize]``): transfer to every peer limited to the more urgent
    precedences, as an operator orders when links are scarce (Isode M-Switch, ACP 121).

    Messages below ``precedence`` stay queued, not transferred, until MINIMIZE is lifted;
    local delivery is not limited.  ``x400ctl minimize`` changes it while the daemon
    runs (switch-wide or per peer); that state is kept in the state directory and wins
    over this section at the next start unless this section was changed since.
    """

    precedence: Precedence | None = field(
        default=None,
        metadata=value(
            PRECEDENCE,
            "The least precedence transferred to any peer.  Not set: no MINIMIZE at start.",
        ),
    )
    submissions: MinimizeSubmissions = field(
        default=MinimizeSubmissions.HOLD,
        metadata=value(
            MINIMIZE_SUBMISSIONS,
            "A local submission below the switch-wide MINIMIZE precedence: refuse (the "
            "submitter is told why) or hold (queued, transferred once MINIMIZE is lifted).",
        ),
    )


DEFAULT_MINIMIZE = Minimize()


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueClaims:
    """How the processes of one site that share a queue database hold its work
    (``[queue]``).

    A process claims what it transfers or delivers under its own name and renews all its
    claims every third of ``lease``; a claim not renewed for ``lease`` (its process was
    killed, or stalled) is taken back by any live process of the site, which then sends
    it.  Read at start.
    """

    lease: float = field(
        default=30.0,
        metadata=value(
            DURATION,
            "How long a claim lasts unless its process renews it; a killed process's "
            "claims are sent by another within about 4/3 of it.  Longer than any stall of "
            "a live process (and than the clock difference between the hosts).",
        ),
    )


DEFAULT_QUEUE = QueueClaims()


@dataclass(frozen=True, slots=True, kw_only=True)
class Retention:
    """How long what the MTA has finished with is kept (``[retention]``).

    Pruned in batches of ``batch`` rows, one transaction each, every ``interval``
    seconds, off the transfer path.  Mailboxes are the users': never pruned here.
    """

    finished: float = field(
        default=24 * _HOUR,
        metadata=value(
            SECONDS,
            "A queued message whose every recipient reached a final state (transferred, "
            "delivered, failed) is deleted this long after the last of them, its APDU file "
            'with it ("0s": at the next pruning).  What happened to it stays in the audit log.',
        ),
    )
    received: float = field(
        default=7 * 24 * _HOUR,
        metadata=value(
            DURATION,
            "Duplicate-detection keys (MTS identifier, recipient) are kept this long: longer "
            "than a peer may go on retrying one transfer, or a late retry is delivered "
            "twice.  At least the longest [max_age].",
        ),
    )
    audit: float = field(
        default=30 * 24 * _HOUR,
        metadata=value(
            DURATION, "Audit-log records (what x400ctl track reads) are kept this long."
        ),
    )
    interval: float = field(default=300.0, metadata=value(DURATION, "Time between two prunings."))
    batch: int = field(default=500, metadata=value(COUNT, "Rows deleted per transaction at most."))


DEFAULT_RETENTION = Retention()


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricsEndpoint:
    """Where the daemon answers Prometheus scrapes (``[metrics]``; :mod:`mta.metrics`).

    Off unless the ``[metrics]`` table is there, and then ``listen`` is required (the
    loader refuses a table without it): figures about the queue and the peers are for
    the operator's network only, on the address the operator chose.
    """

    host: str | None = field(
        default=None,
        metadata=value(
            LISTEN,
            "Address and port to answer scrapes on (9464 is the port Prometheus' registry "
            "gives exporters that have none of their own).  Required in a [metrics] table: "
            "one without it is refused, since it would answer nowhere.",
            name="listen",
            into=("host", "port"),
        ),
    )
    """The address to listen on (an IPv6 one without its brackets); None: no endpoint."""
    port: int = 9464
    """TCP port, 1..65535 (set with ``host`` by ``listen``)."""
    path: str = field(
        default="/metrics",
        metadata=value(
            METRICS_PATH, "The one path answered (HTTP GET and HEAD); any other is 404."
        ),
    )

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
class Access:
    """Who may use the local API for what (``[access]``), from the caller's credentials
    (``SO_PEERCRED``): root, the daemon's own account and the members of ``operators``
    may do everything; an account of ``users`` may submit as its O/R names and use
    their mailboxes; any other account is refused every request."""

    operators: tuple[OperatorGroup, ...] | None = field(
        default=None,
        metadata=value(
            OPERATOR_GROUPS,
            "Groups (names on this host or numeric gids) whose members are operators.  "
            "Not set: the daemon's own primary group.",
        ),
    )
    users: tuple[LocalAccount, ...] = field(
        default=(),
        metadata=value(
            ACCOUNTS,
            "[access.users]: each account (a name on this host or a numeric uid) = its O/R "
            "name, or a list of them, each under a local domain: what it may submit as and "
            "whose mailboxes it may use.",
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class NamedClearance:
    """A clearance (X.501 Clearance: classifications and categories of the policy) by
    name, and the local users whose mailboxes hold it (``[[security.clearances]]``)."""

    name: str = field(
        metadata=value(CLEARANCE_NAME, "How a peer's clearance and default_clearance refer to it.")
    )
    classification: str = field(
        metadata=value(
            CLASSIFICATION,
            "The highest classification held, by its name in the policy: every one at or "
            "below it in the policy's hierarchy is held.",
        )
    )
    categories: tuple[str, ...] = field(
        default=(),
        metadata=value(
            CATEGORIES,
            "The categories held, by their names in the policy (a name two tag sets use "
            'is written "tag set/name").',
        ),
    )
    users: tuple[ORName, ...] = field(
        default=(),
        metadata=value(
            OR_NAMES,
            "Local users (O/R names under a local domain) whose mailboxes hold it; a user is "
            "in one clearance at most.",
        ),
    )
    clearance: Clearance | None = None
    """The clearance in the policy (the loader builds it)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Security:
    """Security labels enforced (``[security]``): the policy, the label of unlabelled
    messages, and what mailboxes and peers (``[[peers]] clearance``) are cleared for."""

    policy: Path | None = field(
        default=None,
        metadata=value(
            PATH,
            "The security policy: an Open XML SPIF file (classifications, categories, "
            "rules, markings).  Not set: labels are shown, never enforced.",
        ),
    )
    default_label: str | None = field(
        default=None,
        metadata=value(
            CLASSIFICATION,
            "The classification an unlabelled message is checked as, where the policy "
            "requires every message to have a label.  Not set: unlabelled messages go to "
            "every recipient and peer.",
        ),
    )
    default_clearance: str | None = field(
        default=None,
        metadata=value(
            CLEARANCE_NAME,
            "The clearance of the local mailboxes no clearance lists.  Not set: they have "
            "none, and get no labelled message.",
        ),
    )
    clearances: tuple[NamedClearance, ...] = field(
        default=(), metadata=tables(NamedClearance, "Clearances by name, and their mailboxes.")
    )
    spif: SecurityPolicy | None = None
    """The policy read from ``policy`` (the loader reads it)."""
    unlabelled: int | None = None
    """The LACV of ``default_label`` in the policy (the loader looks it up)."""

    @property
    def enforced(self) -> bool:
        """Whether labels are checked: a policy is configured."""
        return self.spif is not None

    def clearance_named(self, name: str | None) -> Clearance | None:
        """The clearance called ``name``; None for None or an unknown name."""
        found = next((c for c in self.clearances if c.name == name), None)
        return None if found is None else found.clearance

    def mailbox_clearance(self, canonical: str) -> Clearance | None:
        """The clearance of the local mailbox whose canonical O/R name is ``canonical``."""
        for named in self.clearances:
            if any(user.canonical == canonical for user in named.users):
                return named.clearance
        return self.clearance_named(self.default_clearance)


DEFAULT_SECURITY = Security()


def _stack_limits(keys: Mapping[str, Any]) -> StackLimits:
    return StackLimits(**keys)


def _stack_values(limits: StackLimits) -> Mapping[str, Any]:
    return dataclasses.asdict(limits)


STACK_LIMITS = Foreign(
    keys={
        "max_tpdu_size": Key(
            form=Form.VALUE, kind=TPDU_SIZE, doc="Largest TPDU proposed or accepted."
        ),
        "max_tsdu_size": Key(
            form=Form.VALUE, kind=SIZE, doc="Largest transport service data unit reassembled."
        ),
        "max_spdu_size": Key(form=Form.VALUE, kind=SIZE, doc="Largest session SPDU reassembled."),
        "max_message_size": Key(
            form=Form.VALUE,
            kind=SIZE,
            doc="Largest RT-TRANSFER (one MTS-APDU with its EXTERNAL) reassembled.",
        ),
        "max_connect_data_size": Key(
            form=Form.VALUE,
            kind=SIZE,
            doc="Largest connect-time user data (CN/AC/RF with extended user data).",
        ),
    },
    build=_stack_limits,
    values=_stack_values,
    default=DEFAULT_LIMITS,
)
"""The protocol stack's sizes (:class:`p1.osi.StackLimits`) in ``[limits]``."""


def _precedence_table(keys: Mapping[str, Any]) -> PrecedenceTable:
    overrides = {p: keys[p.label] for p in Precedence.most_urgent_first() if p.label in keys}
    return DEFAULT_TABLE.with_dscp(overrides) if overrides else DEFAULT_TABLE


def _precedence_dscps(table: PrecedenceTable) -> Mapping[str, Any]:
    return {p.label: table.dscp(p) for p in Precedence.most_urgent_first()}


PRECEDENCE_DSCP = Foreign(
    keys={
        p.label: Key(
            form=Form.VALUE,
            kind=DSCP,
            doc=f"Code point of {p.label} traffic: the default of a slot whose most urgent "
            "precedence it is.",
        )
        for p in Precedence.most_urgent_first()
    },
    build=_precedence_table,
    values=_precedence_dscps,
    default=DEFAULT_TABLE,
)
"""The precedence table's code points (:class:`p1.mts.precedence.PrecedenceTable`) in
``[dscp]``."""


def default_database(state_dir: Path) -> str:
    """The queue and store database unless ``database`` is set: SQLite in ``state_dir``."""
    return f"sqlite:///{state_dir / 'aiox400.db'}"


def default_control_socket(state_dir: Path) -> Path:
    """The control socket unless ``control_socket`` is set."""
    return state_dir / "control.sock"


def default_local_domains(global_domain: ORAddress) -> tuple[AddressPrefix, ...]:
    """The local domains unless ``local_domains`` is set: the global domain."""
    return (AddressPrefix(text=format_orname(global_domain), key=global_domain.route_key()),)


@dataclass(frozen=True, slots=True, kw_only=True)
class MtaConfig:
    """One MTA's configuration file, validated."""

    source: Path
    """The configuration file (absolute); relative paths in it were resolved against its
    directory."""
    name: str = field(metadata=value(MTA_NAME, "This MTA's MTAName (X.411 clause 12.1.1)."))
    global_domain: ORAddress = field(
        metadata=value(
            GLOBAL_DOMAIN,
            "The global domain identifier put in trace information: country, ADMD, "
            "optional PRMD (X.411 clause 12.2.1.1.1.10).",
        )
    )
    password: Secret | None = field(
        default=None,
        metadata=secret(
            "The password this MTA presents in MTA-binds unless a peer sets its own.  "
            "Not set: none."
        ),
    )
    state_dir: Path = field(
        default=DEFAULT_STATE_DIR,
        metadata=value(PATH, "Directory for the queue database, the control socket and state."),
    )
    database: str = field(
        repr=False,  # a server database URL may carry a password
        metadata=value(
            DATABASE_URL,
            "SQLAlchemy URL of the queue and store.  A relative SQLite path is taken from "
            "the configuration file's directory.",
            derived='"sqlite:///<state_dir>/aiox400.db"',
        ),
    )
    control_socket: Path = field(
        metadata=value(
            PATH,
            "Unix socket of the local control API (at most 107 octets).",
            derived='"<state_dir>/control.sock"',
        )
    )
    listeners: tuple[Listener, ...] = field(
        default=(),
        metadata=tables(Listener, "Where peers connect to us; none: this MTA only sends."),
    )
    local_domains: tuple[AddressPrefix, ...] = field(
        metadata=value(
            ADDRESS_PREFIXES,
            "O/R address prefixes delivered into the local message store.",
            derived="[global_domain]",
        )
    )
    local_users: tuple[ORName, ...] | None = field(
        default=None,
        metadata=value(
            OR_NAMES,
            "The users of the local domains (their mailboxes), each under one of them; a "
            "recipient there that is none of them is non-delivered (unable-to-transfer, "
            "unrecognised O/R name), so a mistyped name is reported to its sender.  "
            "Required unless accept_any_recipient = true: a file that sets neither is "
            "refused.",
        ),
    )
    accept_any_recipient: bool = field(
        default=False,
        metadata=value(
            BOOLEAN,
            "true: every O/R name under a local domain has a mailbox, made at its first "
            "delivery, a mistyped one too (a lab, a gateway that sorts mail itself); "
            "local_users must then be left out.  false: local_users lists the users.",
        ),
    )
    foreign_originators: ForeignOriginators = field(
        default=ForeignOriginators.REFUSE,
        metadata=value(
            FOREIGN_ORIGINATORS,
            "A local submission (x400 send, x400ctl probe) whose originator is under no "
            'local domain: "refuse" (the submitter is told why; nothing is queued) or '
            '"accept" (a gateway submitting on behalf of other domains).  With [access] '
            "a user submits only as its own names, which are under the local domains; "
            "this bounds the operators' submissions too.",
        ),
    )
    supported_extensions: tuple[int | str, ...] = field(
        default=(),
        metadata=value(
            EXTENSION_TYPES,
            "Extension types this MTA does not implement that its local delivery supports: "
            "a message carrying one marked critical for delivery is delivered instead of "
            "non-delivered (X.411 9.1).",
        ),
    )
    peers: tuple[Peer, ...] = field(
        default=(), metadata=tables(Peer, "Neighbouring MTAs, each with its connection slots.")
    )
    default_route: str | None = field(
        default=None,
        metadata=value(
            PEER_NAME,
            "The peer that gets addresses no route and no local domain matches.  Not set: "
            "such addresses are non-delivered (unable to transfer).",
        ),
    )
    max_age: MaxAge = field(
        default=DEFAULT_MAX_AGE,
        metadata=section(MaxAge, "Per-precedence age at which a waiting message is non-delivered."),
    )
    retry: RetryPolicy = field(
        default=DEFAULT_RETRY, metadata=section(RetryPolicy, "Backoff between attempts.")
    )
    precedence_table: PrecedenceTable = field(
        default=DEFAULT_TABLE,
        metadata=foreign(
            PRECEDENCE_DSCP, "Per-precedence code point overrides of the table.", name="dscp"
        ),
    )
    log_level: LogLevel = field(
        default=LogLevel.INFO, metadata=value(LOG_LEVEL, "The daemon's log threshold.")
    )
    limits: StackLimits = field(
        default=DEFAULT_LIMITS,
        metadata=foreign(STACK_LIMITS, "Sizes the protocol stack accepts.", name="limits"),
    )
    connection_limits: ConnectionLimits = field(
        default=DEFAULT_CONNECTION_LIMITS,
        metadata=section(
            ConnectionLimits,
            "Connections, unbound associations, slow peers, failed binds, local API clients.",
            name="limits",
        ),
    )
    quarantine: QuarantineLimits = field(
        default=DEFAULT_QUARANTINE,
        metadata=section(
            QuarantineLimits,
            "What is kept of the transfers that cannot be taken in (confirmed, not delivered).",
        ),
    )
    minimize: Minimize = field(
        default=DEFAULT_MINIMIZE,
        metadata=section(Minimize, "MINIMIZE at start: only the more urgent precedences sent."),
    )
    queue: QueueClaims = field(
        default=DEFAULT_QUEUE,
        metadata=section(QueueClaims, "Claims on queued work: their lease."),
    )
    retention: Retention = field(
        default=DEFAULT_RETENTION,
        metadata=section(Retention, "What is pruned when; mailboxes are never pruned."),
    )
    metrics: MetricsEndpoint = field(
        default=DEFAULT_METRICS,
        metadata=section(
            MetricsEndpoint,
            "The Prometheus endpoint.  Not set: no endpoint; a [metrics] table must set listen.",
            optional=True,
        ),
    )
    access: Access | None = field(
        default=None,
        metadata=section(
            Access,
            "Who may use the local API for what.  Not set: whoever can connect to the "
            "control socket (mode 0660: the daemon's user and group) is an operator.",
            optional=True,
        ),
    )
    security: Security = field(
        default=DEFAULT_SECURITY,
        metadata=section(
            Security,
            "Security labels enforced against clearances.  Not set: no policy; labels are "
            "shown, never enforced.",
            optional=True,
        ),
    )
    tls: TlsFiles = field(
        default=NO_TLS_FILES,
        metadata=section(
            TlsFiles,
            "The certificate, key and CA files every TLS listener and peer uses unless it "
            "names its own.",
            optional=True,
        ),
    )
    acp142: Acp142Endpoint | None = field(
        default=None,
        metadata=section(
            Acp142Endpoint,
            'This MTA\'s ACP 142 node, for peers with transport = "acp142".  Not set: '
            "none (such a peer is refused).",
            optional=True,
        ),
    )
    tcp_congestion: str | None = field(
        default=None,
        metadata=value(
            CONGESTION,
            "The TCP congestion control (TCP_CONGESTION) of every P1 socket, one of "
            "/proc/sys/net/ipv4/tcp_available_congestion_control.  Not set: the system's.",
        ),
    )

    def peer(self, name: str) -> Peer:
        """The peer called ``name``; :class:`KeyError` if there is none."""
        for peer in self.peers:
            if peer.name == name:
                return peer
        raise KeyError(name)
