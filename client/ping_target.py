"""Whom ``x400ctl ping`` binds to, and as whom: the command line, or a configured peer.

With ``--peer NAME`` the peer's entry in the MTA's configuration (``--config``,
``$AIOX400_CONFIG`` or the default file, :func:`client.api.configuration`) gives what this
MTA's own connections to it would use: its first host, a slot (the first; or the one
``--precedence`` travels on, or the one on ``--port``), that slot's port, DSCP and
selectors, the peer's ``protocol``, and our credentials, the MTA name and the password we
present to that peer (its ``password`` or ``password_file``, else the MTA's).  Anything
given on the command line wins.  Without ``--peer``, HOST, ``--mta-name`` and a password
are needed.  ``--password-file`` follows the rules of the configuration's password files
(:func:`config.loader.read_password_file`); ``--password`` works but shows the password
to every user of the host (ps, /proc), and says so.

TLS (RFC 1006 inside TLS) runs when the chosen slot's ``tls`` is ``"required"`` or with
``--tls``, with the context the daemon would make (:class:`config.tls.ClientTls`): the
peer's ``certificate`` and ``key`` presented, its ``ca``, ``fingerprint`` and
``certificate_name`` checked, each overridden by ``--certificate``, ``--key``, ``--ca``,
``--fingerprint`` and ``--certificate-name``.  Without --peer, the name checked is HOST,
the CAs trusted those of the system unless ``--ca`` is given, and the port is 3782
(iso-tp0s).  A file that cannot be used is a usage error naming the option.

Public API::

    Target(host, port, mta_name, password, dscp, protocol, selectors, label, tls)
    target(args, warn) -> Target     TargetError (a usage error) when it cannot say
    TLS_OPTIONS                      the options of TLS, each with its argparse dest
"""

from __future__ import annotations

import argparse
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from client import ctl_tls
from client.api import ApiUsageError, configuration
from config.loader import ConfigError, load_config, read_password_file
from config.schema import (
    NO_SELECTORS,
    NO_TLS_FILES,
    MtaConfig,
    P1Protocol,
    Peer,
    Selectors,
    Slot,
    TlsFiles,
    TlsMode,
)
from config.tls import ClientTls, check_identity, check_trust
from p1.mts.precedence import InvalidDscpError, Precedence, parse_dscp

__all__ = ["DEFAULT_PORT", "SELECTOR_FIELDS", "TLS_OPTIONS", "Target", "TargetError", "target"]

DEFAULT_PORT: Final = 102
"""The P1 port without --peer or PORT (RFC 1006's)."""

SELECTOR_FIELDS: Final = ("tsel", "ssel", "psel", "calling_tsel", "calling_ssel", "calling_psel")
"""The :class:`config.schema.Selectors` fields, each an option of ping's."""

TLS_OPTIONS: Final = (
    ("--ca", "ca"),
    ("--certificate", "certificate"),
    ("--key", "key"),
    ("--fingerprint", "fingerprint"),
    ("--certificate-name", "certificate_name"),
)
"""The options that say how TLS runs, and their argparse dests."""

PASSWORD_SHOWN: Final = (
    "--password is visible to every user of this host (ps, /proc): prefer --password-file FILE"
)


class TargetError(Exception):
    """The arguments do not say whom to bind to, or as whom (exit 2)."""


@dataclass(frozen=True, slots=True)
class Target:
    """One bind's address, credentials and association settings."""

    host: str
    port: int
    mta_name: str
    password: str
    dscp: int
    protocol: P1Protocol
    selectors: Selectors
    label: str
    """How messages name the target: ``HOST port PORT``, after the peer's name."""
    tls: ClientTls | None = None
    """How TLS runs; None: in the clear."""


def target(args: argparse.Namespace, warn: Callable[[str], None]) -> Target:
    """The target ``args`` describe (``warn``: a line for standard error)."""
    config, peer = _peer(args)
    slot = _slot(args, peer) if peer is not None else None
    host = args.host or (peer.host if peer is not None else None)
    if host is None:
        raise TargetError("say which MTA: HOST, or --peer NAME of the configuration")
    secured = _secured(args, slot)
    default = ctl_tls.DEFAULT_PORT if secured else DEFAULT_PORT
    port = args.port_option or args.port or (slot.port if slot else default)
    where = f"{host} port {port}"
    return Target(
        host=host,
        port=port,
        mta_name=_mta_name(args, peer),
        password=_password(args, config, peer, warn),
        dscp=_dscp(args, slot),
        protocol=P1Protocol(args.protocol) if args.protocol else _protocol(peer),
        selectors=_selectors(args, slot),
        label=f"{peer.name} ({where})" if peer is not None else where,
        tls=_tls(args, peer, host) if secured else None,
    )


def _peer(args: argparse.Namespace) -> tuple[MtaConfig | None, Peer | None]:
    if args.peer is None:
        if args.precedence is not None:
            raise TargetError("--precedence chooses a slot of --peer NAME: give the peer")
        return None, None
    if args.port is not None:
        raise TargetError("with --peer, choose the slot by --port PORT or --precedence LEVEL")
    try:
        config = load_config(configuration(getattr(args, "config", None)))
    except (ConfigError, ApiUsageError) as error:
        raise TargetError(str(error)) from error
    for peer in config.peers:
        if peer.name == args.peer and not peer.slots:
            raise TargetError(
                f"peer {peer.name} is reached over {peer.transport.value}: "
                "ping binds with P1, so only P1 peers can be pinged"
            )
        if peer.name == args.peer:
            return config, peer
    known = ", ".join(p.name for p in config.peers) or "none"
    raise TargetError(f"no peer {args.peer!r} in {config.source} (its peers: {known})")


def _slot(args: argparse.Namespace, peer: Peer) -> Slot:
    precedence: Precedence | None = args.precedence
    if precedence is not None and args.port_option is not None:
        raise TargetError("choose the slot by --port or by --precedence, not both")
    if precedence is not None:
        return peer.slot_for(precedence)
    if args.port_option is None:
        return peer.slots[0]
    for slot in peer.slots:
        if slot.port == args.port_option:
            return slot
    ports = ", ".join(str(s.port) for s in peer.slots)
    raise TargetError(f"peer {peer.name} has no slot on port {args.port_option} (its: {ports})")


def _mta_name(args: argparse.Namespace, peer: Peer | None) -> str:
    if args.mta_name:
        return str(args.mta_name)
    if peer is not None:
        return peer.our_credentials.name
    raise TargetError("say our MTA name: --mta-name NAME, or --peer NAME of the configuration")


def _password(
    args: argparse.Namespace,
    config: MtaConfig | None,
    peer: Peer | None,
    warn: Callable[[str], None],
) -> str:
    if args.password_file is not None:
        try:
            return read_password_file(args.password_file).reveal()
        except ConfigError as error:
            raise TargetError(f"--password-file: {error}") from error
    if args.password is not None:
        warn(PASSWORD_SHOWN)
        return str(args.password)
    if peer is not None and config is not None:
        ours = peer.our_credentials.password or config.password
        return ours.reveal() if ours is not None else ""
    raise TargetError("say our password: --password-file FILE, or --peer NAME")


def _dscp(args: argparse.Namespace, slot: Slot | None) -> int:
    if args.dscp is None:
        return slot.dscp if slot is not None else 0
    try:
        return parse_dscp(args.dscp)
    except InvalidDscpError as error:
        raise TargetError(f"--dscp: {error}") from error


def _protocol(peer: Peer | None) -> P1Protocol:
    return peer.protocol if peer is not None else P1Protocol.NORMAL


def _selectors(args: argparse.Namespace, slot: Slot | None) -> Selectors:
    configured = slot.selectors if slot is not None else NO_SELECTORS
    given = {name: getattr(args, name) for name in SELECTOR_FIELDS}
    return Selectors(**{name: _chosen(configured, name, given[name]) for name in SELECTOR_FIELDS})


def _chosen(configured: Selectors, name: str, given: bytes | None) -> bytes:
    """A selector: the command line's when given (even empty), else the slot's."""
    return given if given is not None else bytes(getattr(configured, name))


def _secured(args: argparse.Namespace, slot: Slot | None) -> bool:
    """Whether the ping runs TLS: ``--tls``, or the slot's ``tls``."""
    if args.tls or (slot is not None and slot.tls is TlsMode.REQUIRED):
        return True
    for option, dest in TLS_OPTIONS:
        if getattr(args, dest) is not None:
            raise TargetError(f"{option} is for TLS, which this ping does not run: add --tls")
    return False


def _tls(args: argparse.Namespace, peer: Peer | None, host: str) -> ClientTls:
    """The peer's TLS settings (none without --peer), each one the command line gives
    overriding the peer's."""
    configured = peer.tls_files if peer is not None else NO_TLS_FILES
    files = TlsFiles(
        certificate=_path(args.certificate) or configured.certificate,
        key=_path(args.key) or configured.key,
        ca=_path(args.ca) or configured.ca,
    )
    problem = check_identity(files, required=False) or check_trust(files, required=False)
    if problem is not None:
        given = "" if problem.value is None else f" {problem.value}"
        raise TargetError(f"{_origin(args, peer, problem.key)}{given}: expected {problem.expected}")
    pinned = peer.fingerprint if peer is not None else None
    named = peer.certificate_name if peer is not None else None
    try:
        return ClientTls.create(
            files,
            name=args.certificate_name or named or host,
            fingerprint=args.fingerprint or pinned,
        )
    except (OSError, ssl.SSLError) as error:
        raise TargetError(f"TLS files: {error}") from error


def _origin(args: argparse.Namespace, peer: Peer | None, key: str) -> str:
    """Where a TLS file came from: its option, or the peer's key."""
    if getattr(args, key) is None and peer is not None:
        return f"peer {peer.name}'s {key}"
    return f"--{key}"


def _path(text: str | None) -> Path | None:
    return Path(text) if text is not None else None
