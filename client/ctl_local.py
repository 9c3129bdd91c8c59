"""``x400ctl status|queue|channels|hold|release|quarantine``: the operator's view of a
running MTA.

These commands ask the daemon through its local API (``control_socket`` of the
configuration given with ``--config``, or ``--socket``):

    status     the MTA's name, uptime, recipients per queue state, slots connected,
               what the quarantine holds, the garbage collector's work
    queue      recipients per route (peer or ``local``), precedence and state (qshape);
               with ``--list``, each waiting recipient with its message id (for hold)
    channels   every connection slot of every peer: precedences, port, DSCP, mode,
               backlog, and each connection's state, age, transfers and last error
    hold ID... / release ID...   keep queued messages from being sent / let them go
    quarantine list              the transfers confirmed and kept because they could not
                                 be taken in (:mod:`mta.quarantine`): id, when, peer,
                                 size, why
    quarantine show ID [--raw]   one of them; ``--raw``: its octets as received, to
                                 standard output (``| x400-dump -``)
    quarantine delete ID...      remove them

Public API::

    add_commands(subparsers)     the subcommands, for x400ctl's parser
    run(args, out, raw=None) -> int   exit code (0 done, 1 the MTA refused or is not
                                 running); ``raw``: where octets go (show --raw)
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from client.api import call, socket_path

__all__ = ["COMMANDS", "add_commands", "run"]

COMMANDS = ("status", "queue", "channels", "hold", "release", "quarantine")

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
    _add_quarantine(commands, where)


def _add_quarantine(commands: Any, where: argparse.ArgumentParser) -> None:
    quarantine = commands.add_parser(
        "quarantine",
        help="transfers confirmed and kept because they could not be taken in",
        description=(
            "A transfer whose MTS-APDU does not decode, or cannot be written with this "
            "MTA's trace, is confirmed to the peer and kept here as received, not "
            "delivered. When the quarantine is full ([quarantine] max_messages, "
            "max_bytes), such transfers are refused: delete what has been dealt with."
        ),
    )
    actions = quarantine.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser(
        "list", parents=[where], help="each kept transfer: id, received, peer, size, reason"
    )
    show = actions.add_parser("show", parents=[where], help="one kept transfer")
    show.add_argument("id", type=int, metavar="ID", help="its id (from quarantine list)")
    show.add_argument(
        "--raw",
        action="store_true",
        help="write its octets as received to standard output (e.g. | x400-dump -)",
    )
    delete = actions.add_parser("delete", parents=[where], help="remove kept transfers")
    delete.add_argument("ids", type=int, nargs="+", metavar="ID", help="their ids")


def run(args: argparse.Namespace, out: TextIO, raw: BinaryIO | None = None) -> int:
    """Run one local-API command; raises ApiError when the MTA refuses or cannot be reached.
    ``raw``: where ``quarantine show --raw`` writes the octets (default ``out``'s buffer)."""
    path = socket_path(args.config, args.socket)
    if args.command == "quarantine":
        return _quarantine(path, args, out, raw)
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
    quarantine = response.get("quarantine")
    if quarantine is not None:
        print(
            f"quarantine: {quarantine['messages']} of {quarantine['max_messages']} messages, "
            f"{quarantine['octets']:,} of {quarantine['max_bytes']:,} octets",
            file=out,
        )
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


def _quarantine(path: Path, args: argparse.Namespace, out: TextIO, raw: BinaryIO | None) -> int:
    if args.action == "list":
        response, _ = call(path, {"op": "quarantine"})
        _quarantine_list(response["entries"], out)
    elif args.action == "show":
        response, apdu = call(path, {"op": "quarantine_read", "id": args.id})
        if args.raw:
            sink = raw if raw is not None else out.buffer
            sink.write(apdu)
            sink.flush()
        else:
            _quarantine_entry(response["entry"], out)
    else:
        response, _ = call(path, {"op": "quarantine_delete", "ids": args.ids})
        print(f"deleted {response['deleted']} of {len(set(args.ids))}", file=out)
    return 0


def _quarantine_list(entries: list[dict[str, Any]], out: TextIO) -> None:
    if not entries:
        print("the quarantine is empty", file=out)
        return
    print(f"{'ID':>6} {'RECEIVED':<25} {'PEER':<16} {'OCTETS':>9}  REASON", file=out)
    for e in entries:
        print(
            f"{e['id']:>6} {e['received_at']:<25} {e['peer']:<16} {e['size']:>9}  {e['reason']}",
            file=out,
        )


def _quarantine_entry(entry: dict[str, Any], out: TextIO) -> None:
    print(f"id:       {entry['id']}", file=out)
    print(f"received: {entry['received_at']}", file=out)
    print(f"peer:     {entry['peer']}", file=out)
    print(f"octets:   {entry['size']}", file=out)
    print(f"reason:   {entry['reason']}", file=out)
    print(f"the octets: x400ctl quarantine show {entry['id']} --raw | x400-dump -", file=out)


_SHOW = {"status": _status, "queue": _queue, "channels": _channels}
