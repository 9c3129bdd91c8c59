"""``x400ctl status|queue|channels|hold|release``: the operator's view of a running MTA.

These commands ask the daemon through its local API (``control_socket`` of the
configuration given with ``--config``, or ``--socket``):

    status     the MTA's name, uptime, recipients per queue state, slots connected,
               the garbage collector's work
    queue      recipients per route (peer or ``local``), precedence and state (qshape);
               with ``--list``, each waiting recipient with its message id (for hold)
    channels   every connection slot of every peer: precedences, port, DSCP, mode,
               backlog, and each connection's state, age, transfers and last error
    hold ID... / release ID...   keep queued messages from being sent / let them go

Public API::

    add_commands(subparsers)     the subcommands, for x400ctl's parser
    run(args, out) -> int        exit code (0 done, 1 the MTA refused or is not running)
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from typing import Any, TextIO

from client.api import call, socket_path

__all__ = ["COMMANDS", "add_commands", "run"]

COMMANDS = ("status", "queue", "channels", "hold", "release")

_STATES = ("pending", "in_flight", "held", "transferred", "delivered", "failed")


def add_commands(commands: Any) -> None:
    """Add the local-API subcommands to x400ctl's subparsers."""
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--config", "-c", metavar="FILE", help="the MTA's configuration file")
    where.add_argument("--socket", metavar="PATH", help="the MTA's control socket")
    commands.add_parser("status", parents=[where], help="the MTA's state in a few lines")
    queue = commands.add_parser(
        "queue", parents=[where], help="queued recipients by route, precedence and state"
    )
    queue.add_argument(
        "--list",
        nargs="?",
        const=100,
        type=int,
        metavar="N",
        help="list the first N (100) waiting recipients, most urgent first, with message ids",
    )
    commands.add_parser(
        "channels", parents=[where], help="each connection slot: port, DSCP, mode, connections"
    )
    for name, what in (("hold", "keep messages from being sent"), ("release", "let them go")):
        sub = commands.add_parser(name, parents=[where], help=what)
        sub.add_argument("ids", type=int, nargs="+", metavar="ID", help="queue message ids")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run one local-API command; raises ApiError when the MTA refuses or cannot be reached."""
    path = socket_path(args.config, args.socket)
    if args.command in ("hold", "release"):
        response, _ = call(path, {"op": args.command, "message_ids": args.ids})
        print(f"{args.command}: {response['changed']} recipient(s) changed", file=out)
        return 0
    if args.command == "queue" and args.list is not None:
        response, _ = call(path, {"op": "messages", "limit": args.list})
        _list(response, out)
        return 0
    response, _ = call(path, {"op": args.command})
    _SHOW[args.command](response, out)
    return 0


def _status(response: dict[str, Any], out: TextIO) -> None:
    states = response["recipients"]
    print(f"{response['name']}: up {response['uptime']:.0f} s", file=out)
    print(
        "recipients: " + ", ".join(f"{s} {states.get(s, 0)}" for s in _STATES),
        file=out,
    )
    print(f"slots: {response['slots_connected']} of {response['slots']} connected", file=out)
    if response.get("store"):
        print(f"STORE UNAVAILABLE: {response['store']} (transfers refused unconfirmed)", file=out)
    for part in response.get("degraded", ()):
        print(
            f"DEGRADED {part['part']}: {part['failures']} failure(s) in {part['since']:.0f} s, "
            f"last: {part['last_error']}",
            file=out,
        )
    gc = response.get("gc")
    if gc is not None:
        runs = " / ".join(str(count) for count in gc["collections"])
        print(
            f"garbage collector: {gc['frozen']:,} objects of start-up left out; "
            f"collections by generation {runs}",
            file=out,
        )


def _queue(response: dict[str, Any], out: TextIO) -> None:
    table: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for count in response["counts"]:
        table[(count["route"], count["precedence"])][count["state"]] = count["recipients"]
    if not table:
        print("the queue is empty", file=out)
        return
    print(f"{'ROUTE':<16} {'PRECEDENCE':<10} " + " ".join(f"{s:>11}" for s in _STATES), file=out)
    for (route, precedence), states in sorted(table.items()):
        cells = " ".join(f"{states.get(s, 0):>11}" for s in _STATES)
        print(f"{route:<16} {precedence:<10} {cells}", file=out)


def _list(response: dict[str, Any], out: TextIO) -> None:
    rows = response["recipients"]
    if not rows:
        print("nothing is waiting", file=out)
        return
    print(
        f"{'ID':>6} {'PRECEDENCE':<10} {'STATE':<9} {'TRIES':>5}  ROUTE / MTS IDENTIFIER", file=out
    )
    for r in rows:
        print(
            f"{r['message_id']:>6} {r['precedence']:<10} {r['state']:<9} {r['attempts']:>5}"
            f"  {r['route']}  {r['mts_identifier']}  to {r['recipient']}",
            file=out,
        )
        if r["last_error"]:
            print(f"{'':34}last error: {r['last_error']}", file=out)


def _channels(response: dict[str, Any], out: TextIO) -> None:
    slots = response["slots"]
    if not slots:
        print("no peers configured", file=out)
        return
    for slot in slots:
        print(
            f"{slot['peer']} {'+'.join(slot['precedences'])} {slot['state']}:"
            f" {slot['host']} port {slot['port']}"
            f" {slot['dscp']} {slot['mode']}, backlog {slot['backlog']},"
            f" {len(slot['connections'])} of {slot['max_connections']} connection(s)",
            file=out,
        )
        for c in slot["connections"]:
            error = f"  last error: {c['last_error']}" if c["last_error"] else ""
            print(
                f"  #{c['index']} {c['state']} for {c['since']:.0f} s,"
                f" {c['transfers']} transfer(s){error}",
                file=out,
            )


_SHOW = {"status": _status, "queue": _queue, "channels": _channels}
