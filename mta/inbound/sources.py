"""Where a peer's connections may come from: its ``addresses`` (hosts, addresses, networks).

A peer whose MTA-bind arrives from an address none of its ``addresses`` covers is refused
as for a wrong password (:mod:`mta.inbound.listeners`).  An entry is an IP address, an IP
network in CIDR form, or a host name, resolved when a bind is checked (a name that does
not resolve in time admits nothing).  An IPv4 address seen as IPv4-mapped IPv6
(``::ffff:192.0.2.1``, on a dual-stack listener) is compared as the IPv4 address it is.

Public API::

    await admits(entries, host) -> bool
    RESOLVE_TIMEOUT
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from typing import Final

__all__ = ["RESOLVE_TIMEOUT", "admits"]

RESOLVE_TIMEOUT: Final = 5.0
"""Seconds a host name of ``addresses`` may take to resolve at a bind."""

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _address(text: str) -> _Address | None:
    try:
        address = ipaddress.ip_address(text.partition("%")[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


async def admits(entries: Iterable[str], host: str) -> bool:
    """Whether a connection from ``host`` (an IP address) is one ``entries`` allow."""
    source = _address(host)
    if source is None:
        return False
    names: list[str] = []
    for entry in entries:
        if "/" in entry:
            if source in ipaddress.ip_network(entry):
                return True
        elif (address := _address(entry)) is not None:
            if address == source:
                return True
        else:
            names.append(entry)
    for name in names:
        if source in await _resolved(name):
            return True
    return False


async def _resolved(name: str) -> set[_Address]:
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(RESOLVE_TIMEOUT):
            found = await loop.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError):
        return set()
    return {address for info in found if (address := _address(str(info[4][0]))) is not None}
