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

Public API::

    Target(host, port, mta_name, password, dscp, protocol, selectors, label)
    target(args, warn) -> Target     TargetError (a usage error) when it cannot say
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from client.api import ApiUsageError, configuration
from config.loader import ConfigError, load_config, read_password_file
from config.schema import NO_SELECTORS, MtaConfig, P1Protocol, Peer, Selectors, Slot
from p1.mts.precedence import InvalidDscpError, Precedence, parse_dscp

__all__ = ["DEFAULT_PORT", "SELECTOR_FIELDS", "Target", "TargetError", "target"]

DEFAULT_PORT: Final = 102
"""The P1 port without --peer or PORT (RFC 1006's)."""

SELECTOR_FIELDS: Final = ("tsel", "ssel", "psel", "calling_tsel", "calling_ssel", "calling_psel")
"""The :class:`config.schema.Selectors` fields, each an option of ping's."""

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


def target(args: argparse.Namespace, warn: Callable[[str], None]) -> Target:
    """The target ``args`` describe (``warn``: a line for standard error)."""
    config, peer = _peer(args)
    slot = _slot(args, peer) if peer is not None else None
    host = args.host or (peer.host if peer is not None else None)
    if host is None:
        raise TargetError("say which MTA: HOST, or --peer NAME of the configuration")
    port = args.port_option or args.port or (slot.port if slot else DEFAULT_PORT)
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
