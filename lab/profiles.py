"""The router's queuing profiles: HTB trees on each router egress interface.

Every profile is an HTB root with ``default`` set (so nothing bypasses the shaper, which is
what an HTB without one does to unclassified packets), an explicit ``quantum`` on every
class (no r2q guesswork) and one ``pfifo limit 64`` per leaf (the default limit of 1000
packets is 23 s of queue at 512 kbit/s).  Classification is by DSCP with u32
(``match ip dsfield``, ``match ip6 priority``): the kernels this lab runs on lack the
flower and basic classifiers, and prio, sfq, fq_codel, drr and hfsc.

``fifo``      control: one class at the link rate, one FIFO for everything.
``strict``    strict priority: each code point a class with a tiny guaranteed rate that
              borrows the rest of the link by ``prio`` (CS3 first, CS0 last).
``weighted``  precedence-weighted fair queuing: all classes at the same ``prio``, borrowing
              in proportion to their ``quantum``, precedence+1 (CS0:CS1:CS2:CS3 =
              1:2:3:4, so CS3 against CS0 gets 4/5 = 80 %).
``reserved``  class-based reservations like the 2007 field test's router: CS1 50 %, CS2
              50 %, every other code point (CS0 and CS3 among them) one shared class
              without a reservation (a token rate).

Public API::

    PROFILES                          the names, in the order the lab runs them
    tc_commands(device, profile, rate_kbit) -> list[list[str]]   the ``tc`` argument lists
    CLASS_OF_DSCP                     the leaf (minor number) each code point goes to
"""

from __future__ import annotations

from collections.abc import Iterator

PROFILES = ("fifo", "strict", "weighted", "reserved")

MTU_QUANTUM = 1514
"""One full Ethernet frame: the smallest quantum that lets a class send a packet a round."""
TOKEN_RATE_KBIT = 8
"""The guaranteed rate of a class that should live on borrowed bandwidth alone."""
QUEUE_LIMIT = 64
"""Packets per leaf FIFO."""

CLASS_OF_DSCP = {0: 10, 8: 11, 16: 12, 24: 13}
"""Code point -> leaf minor: CS0 1:10 (also every unlisted code point: the default), CS1
1:11, CS2 1:12, CS3 1:13."""

_STRICT_PRIO = {10: 3, 11: 2, 12: 1, 13: 0}
"""HTB ``prio`` of each leaf under ``strict``: lower borrows first."""


def tc_commands(device: str, profile: str, rate_kbit: int) -> list[list[str]]:
    """The ``tc`` invocations (without the leading ``tc``) that install ``profile`` on
    ``device`` shaped to ``rate_kbit``; ValueError for an unknown profile."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}: expected one of {', '.join(PROFILES)}")
    rate = f"{rate_kbit}kbit"
    root = ["qdisc", "add", "dev", device, "root", "handle", "1:", "htb"]
    commands = [[*root, "default", "10", "r2q", "10"]]
    if profile == "fifo":
        commands.append(_class(device, "1:", "1:10", rate, rate, MTU_QUANTUM))
        commands.append(_leaf(device, 10))
        return commands
    commands.append(_class(device, "1:", "1:1", rate, rate, MTU_QUANTUM))
    leaves = dict(_leaves(profile, rate_kbit))
    for minor, options in leaves.items():
        commands.append(_class(device, "1:1", f"1:{minor}", *options))
        commands.append(_leaf(device, minor))
    commands.extend(_filters(device, set(leaves)))
    return commands


def _leaves(profile: str, rate_kbit: int) -> Iterator[tuple[int, tuple[str, str, int, int]]]:
    """(minor, (rate, ceil, quantum, prio)) of each leaf."""
    ceil = f"{rate_kbit}kbit"
    token = f"{TOKEN_RATE_KBIT}kbit"
    for minor in sorted(CLASS_OF_DSCP.values()):
        weight = minor - 9  # CS0 1, CS1 2, CS2 3, CS3 4: precedence + 1
        if profile == "strict":
            yield minor, (token, ceil, MTU_QUANTUM, _STRICT_PRIO[minor])
        elif profile == "weighted":
            yield minor, (token, ceil, MTU_QUANTUM * weight, 0)
        elif minor in (11, 12):  # reserved: CS1 and CS2 half the link each
            yield minor, (f"{rate_kbit // 2}kbit", ceil, MTU_QUANTUM, 0)
        elif minor == 10:  # reserved: everything else, no reservation
            yield minor, (token, ceil, MTU_QUANTUM, 0)


def _class(
    device: str, parent: str, classid: str, rate: str, ceil: str, quantum: int, prio: int = 0
) -> list[str]:
    return [
        "class", "add", "dev", device, "parent", parent, "classid", classid, "htb",
        "rate", rate, "ceil", ceil, "prio", str(prio), "quantum", str(quantum),
    ]  # fmt: skip


def _leaf(device: str, minor: int) -> list[str]:
    return [
        "qdisc", "add", "dev", device, "parent", f"1:{minor}", "handle", f"{minor}:",
        "pfifo", "limit", str(QUEUE_LIMIT),
    ]  # fmt: skip


def _filters(device: str, leaves: set[int]) -> Iterator[list[str]]:
    """u32 filters by DSCP for IPv4 (the TOS octet) and IPv6 (the traffic class) to the
    ``leaves`` there are; CS0, unlisted code points and those of a profile without their
    own class fall to the default class."""
    for dscp, minor in CLASS_OF_DSCP.items():
        if minor == 10 or minor not in leaves:
            continue
        value = f"{dscp << 2:#04x}"
        for protocol, prio, match in (
            ("ip", "1", ["ip", "dsfield"]),
            ("ipv6", "2", ["ip6", "priority"]),
        ):
            yield [
                "filter", "add", "dev", device, "parent", "1:", "protocol", protocol,
                "prio", prio, "u32", "match", *match, value, "0xfc", "flowid", f"1:{minor}",
            ]  # fmt: skip
