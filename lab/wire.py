"""The lab's user-space wire between two namespaces: a fixed delay, or an HF radio link.

Two TUN devices in two namespaces, joined by one process that hands each packet over after
a fixed delay, or as an HF radio link would (:mod:`lab.hf`).

``python -m lab.wire --delay-ms D --here ra --there a0 --there-netns /run/netns/NS``,
started inside the namespace of ``--here`` (``ip netns exec``): it creates the TUN device
``here`` there, enters the namespace ``there-netns`` and creates ``there`` in it, prints
``ready`` and then moves packets until it is stopped.

- The delay (``--delay-ms``): each packet read from one device is written to the other
  ``D`` milliseconds later (one FIFO per direction: the order is kept, nothing is dropped
  or reordered by the wire; the devices' queues before it are where any shaping happens).
- The HF profile (``--hf-rate BIT/S`` and the options after it): the packets go through
  :class:`lab.hf.Channel`, one half-duplex channel at that rate with its turnaround, its
  longest transmission, random bit errors and a bounded queue at each end; the process
  sleeps until the channel's next event.  ``here`` is the channel's end 0, ``there`` its
  end 1.

Its counters (packets and octets offered, sent, lost, dropped, the turnarounds and the
air time, per direction by the device each came in on) are one line of JSON, written on
SIGTERM (then the wire ends) and on SIGUSR1 (it goes on), to the file ``--counters`` (the
line replaces the file's content) or else to standard output.  The devices are not
persistent: they go when the process ends, and the process ends when its parent (the lab)
does (``PR_SET_PDEATHSIG``), on SIGTERM, or when a device goes with its namespace.

Both devices are layer 3 (``IFF_TUN``, no packet information header): addresses, routes
and MTUs are the caller's to set, no ARP crosses the wire.

Public API::

    open_tun(name) -> int            the file descriptor of a new TUN device ``name``
    enter_netns(path)                this process's network namespace becomes ``path``'s
    Link                             what carries the packets (Protocol): DelayLink, HfLink
    forward(fds, link, *, wakeup=None, report=None)
                                     move packets between two descriptors until one is gone
                                     or SIGTERM comes through ``wakeup``
    DeviceGone                       a descriptor reached its end (OSError)
    parser(), hf_settings(args) -> HfSettings | None
    nonnegative(kind, what)          an argparse type: a number of 0 or more
    hf_options(settings) -> list[str]   the command-line options of an HF profile
    main(argv) -> int
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import dataclasses
import errno
import fcntl
import json
import os
import select
import signal
import struct
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from lab.hf import (
    MAX_TRANSMISSION,
    QUEUE_PACKETS,
    RATE_MAX,
    RATE_MIN,
    TURNAROUND,
    Channel,
    Delivered,
    HfSettings,
)

TUNSETIFF = 0x400454CA
"""ioctl(2) number of TUNSETIFF, linux/if_tun.h."""
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
MAX_PACKET = 65536


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def open_tun(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def enter_netns(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc().setns(fd, CLONE_NEWNET) != 0:
            number = ctypes.get_errno()
            raise OSError(number, f"setns {path}: {os.strerror(number)}")
    finally:
        os.close(fd)


# --- what carries the packets ----------------------------------------------------------------


class Link(Protocol):
    """Packets in at end 0 or 1 (a descriptor of :func:`forward`), out at the other one."""

    def offer(self, end: int, packet: bytes, now: float) -> None:
        """``packet`` was read from end ``end`` at ``now``."""

    def next_event(self) -> float | None:
        """When :meth:`due` may next have something (None: not until an offer)."""

    def due(self, now: float) -> list[tuple[int, bytes]]:
        """The packets to write by ``now``, oldest first, each with the end it goes out at."""

    def counters(self, now: float) -> dict[str, object]:
        """Plain data for the counters' line."""


class DelayLink:
    """Each packet leaves ``delay`` seconds after it came, one FIFO per direction."""

    def __init__(self, delay: float, names: tuple[str, str]) -> None:
        self.delay = delay
        self.names = names
        self._waiting: tuple[collections.deque[tuple[float, bytes]], ...] = (
            collections.deque(),
            collections.deque(),
        )  # came in at end e: (due at, packet), oldest first
        self._counts = [[0, 0], [0, 0]]  # end: [packets, octets]

    def offer(self, end: int, packet: bytes, now: float) -> None:
        self._waiting[end].append((now + self.delay, packet))
        self._counts[end][0] += 1
        self._counts[end][1] += len(packet)

    def next_event(self) -> float | None:
        dues = [queue[0][0] for queue in self._waiting if queue]
        return min(dues) if dues else None

    def due(self, now: float) -> list[tuple[int, bytes]]:
        out = []
        for end, queue in enumerate(self._waiting):
            while queue and queue[0][0] <= now:
                out.append((1 - end, queue.popleft()[1]))
        return out

    def counters(self, now: float) -> dict[str, object]:
        return {
            "at": now,
            "delay": self.delay,
            "from": {
                name: {"offered_packets": count[0], "offered_octets": count[1]}
                for name, count in zip(self.names, self._counts, strict=True)
            },
        }


class HfLink:
    """The HF channel of :mod:`lab.hf`; its deliveries, the rest counted there."""

    def __init__(self, settings: HfSettings, names: tuple[str, str]) -> None:
        self.channel = Channel(settings)
        self.names = names

    def offer(self, end: int, packet: bytes, now: float) -> None:
        self.channel.offer(end, packet, now)  # (a drop is counted by the channel)

    def next_event(self) -> float | None:
        return self.channel.next_event()

    def due(self, now: float) -> list[tuple[int, bytes]]:
        return [
            (1 - event.source, event.packet)
            for event in self.channel.advance(now)
            if isinstance(event, Delivered)
        ]

    def counters(self, now: float) -> dict[str, object]:
        counters = self.channel.counters(now)
        s = self.channel.settings
        return {
            "at": counters.at,
            "rate": s.rate,
            "turnaround": s.turnaround,
            "max_transmission": s.max_transmission,
            "ber": s.ber,
            "turnarounds": counters.turnarounds,
            "turnaround_seconds": counters.turnaround_seconds,
            "on_air": None if counters.on_air is None else self.names[counters.on_air],
            "last_ended": counters.last_ended,
            "from": {
                name: dataclasses.asdict(end)
                for name, end in zip(self.names, counters.ends, strict=True)
            },
        }


# --- the process -----------------------------------------------------------------------------


class DeviceGone(OSError):
    """A descriptor of the wire reached its end (a socket's peer closed)."""


def forward(
    fds: tuple[int, int],
    link: Link,
    *,
    wakeup: int | None = None,
    report: Callable[[float], None] | None = None,
) -> None:
    """Move packets between ``fds`` (ends 0 and 1 of ``link``), sleeping until the link's
    next event; returns when SIGTERM comes through ``wakeup`` (``signal.set_wakeup_fd``),
    after which SIGUSR1 calls ``report(now)``.  OSError when a device is gone."""
    ends = {fd: end for end, fd in enumerate(fds)}
    watched = [*fds, *([] if wakeup is None else [wakeup])]
    while True:
        now = time.monotonic()
        for end, packet in link.due(now):
            _write(fds[end], packet)
        due = link.next_event()
        timeout = None if due is None else max(0.0, due - now)
        readable, _, _ = select.select(watched, [], [], timeout)
        for fd in readable:
            if fd == wakeup:
                for number in os.read(fd, 64):
                    if number == signal.SIGTERM:
                        return
                    if number == signal.SIGUSR1 and report is not None:
                        report(time.monotonic())
                continue
            for packet in _drain(fd):
                link.offer(ends[fd], packet, time.monotonic())


def _drain(fd: int) -> list[bytes]:
    packets: list[bytes] = []
    while True:
        try:
            packet = os.read(fd, MAX_PACKET)
        except BlockingIOError:
            return packets
        if not packet:
            raise DeviceGone(f"descriptor {fd} reached its end")
        packets.append(packet)


def _write(fd: int, packet: bytes) -> None:
    try:
        os.write(fd, packet)
    except BlockingIOError:
        pass  # (the stack's backlog is full: a drop)
    except OSError as error:
        if error.errno != errno.EIO:
            raise
        # (the device is down, not yet up at the start: a drop)


def _reporter(link: Link, path: Path | None) -> Callable[[float], None]:
    """Writes the counters' line, numbered from 1 (``report``), to ``path`` or stdout."""
    sequence = [0]

    def report(now: float) -> None:
        sequence[0] += 1
        line = json.dumps({"report": sequence[0], **link.counters(now)}) + "\n"
        if path is None:
            sys.stdout.write(line)
            sys.stdout.flush()
            return
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(line)
        os.replace(partial, path)  # (a reader sees the old line or the new one)

    return report


# --- the command line ------------------------------------------------------------------------


def nonnegative(kind: type[float] | type[int], what: str) -> Callable[[str], float]:
    """An argparse type: a ``kind`` of 0 or more, else an error naming ``what``."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {what}") from None
        if not value >= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {what}, 0 or more")
        return value

    return parse


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lab.wire", description=__doc__.split("\n")[0])
    p.add_argument("--here", required=True, help="the TUN device in this namespace (end 0)")
    p.add_argument("--there", required=True, help="the TUN device in the other namespace")
    p.add_argument("--there-netns", required=True, help="the other namespace's file")
    p.add_argument(
        "--delay-ms", type=nonnegative(float, "milliseconds"), default=0.0,
        help="one-way delay of each packet, each direction (0)",
    )  # fmt: skip
    p.add_argument(
        "--counters", type=Path, metavar="FILE",
        help="write the counters' line (JSON) here on SIGTERM and SIGUSR1, not to stdout",
    )  # fmt: skip
    hf = p.add_argument_group("HF profile (lab.hf), instead of --delay-ms")
    hf.add_argument(
        "--hf-rate", type=nonnegative(float, "bit/s"), metavar="BIT/S",
        help=f"bit rate on the air, {RATE_MIN:g} to {RATE_MAX:g}: turns the profile on",
    )  # fmt: skip
    hf.add_argument(
        "--turnaround", type=nonnegative(float, "seconds"), default=TURNAROUND, metavar="S",
        help=f"seconds before the other end may transmit ({TURNAROUND:g})",
    )  # fmt: skip
    hf.add_argument(
        "--max-transmission", type=nonnegative(float, "seconds"), default=MAX_TRANSMISSION,
        metavar="S", help=f"longest transmission, seconds ({MAX_TRANSMISSION:g})",
    )  # fmt: skip
    hf.add_argument(
        "--ber", type=nonnegative(float, "a bit error rate"), default=0.0, metavar="X",
        help="random bit error rate, such as 1e-6 or 1e-5 (0: clear)",
    )  # fmt: skip
    hf.add_argument("--seed", type=int, default=0, metavar="N", help="of the bit errors (0)")
    hf.add_argument(
        "--framing", type=nonnegative(int, "octets"), default=0, metavar="OCTETS",
        help="octets the modem adds to each packet on the air (0)",
    )  # fmt: skip
    hf.add_argument(
        "--queue-packets", type=nonnegative(int, "packets"), default=QUEUE_PACKETS, metavar="N",
        help=f"most packets waiting at each end, drop-tail; 0: no limit ({QUEUE_PACKETS})",
    )  # fmt: skip
    hf.add_argument(
        "--queue-octets", type=nonnegative(int, "octets"), default=0, metavar="N",
        help="most octets waiting at each end, drop-tail; 0: no limit (0)",
    )  # fmt: skip
    return p


HF_OPTIONS = ("turnaround", "max_transmission", "ber", "seed", "framing", "queue_packets",
              "queue_octets")  # fmt: skip
"""The options of the HF profile beside --hf-rate, by their argparse names."""


def hf_settings(args: argparse.Namespace) -> HfSettings | None:
    """The HF profile of parsed arguments (None: not asked for); ValueError when out of
    range."""
    if args.hf_rate is None:
        return None
    return HfSettings(
        rate=args.hf_rate,
        turnaround=args.turnaround,
        max_transmission=args.max_transmission,
        ber=args.ber,
        seed=args.seed,
        framing=int(args.framing),
        queue_packets=int(args.queue_packets) or None,
        queue_octets=int(args.queue_octets) or None,
    )


def hf_options(settings: HfSettings) -> list[str]:
    """The options that give the wire ``settings`` (hf_settings' inverse)."""
    return [
        "--hf-rate", repr(settings.rate), "--turnaround", repr(settings.turnaround),
        "--max-transmission", repr(settings.max_transmission), "--ber", repr(settings.ber),
        "--seed", str(settings.seed), "--framing", str(settings.framing),
        "--queue-packets", str(settings.queue_packets or 0),
        "--queue-octets", str(settings.queue_octets or 0),
    ]  # fmt: skip


def _arguments(argv: Sequence[str] | None) -> tuple[argparse.Namespace, HfSettings | None]:
    p = parser()
    args = p.parse_args(argv)
    defaults = p.parse_args(["--here", "-", "--there", "-", "--there-netns", "-"])
    if args.hf_rate is None:
        changed = [o for o in HF_OPTIONS if getattr(args, o) != getattr(defaults, o)]
        if changed:
            p.error(f"--{changed[0].replace('_', '-')} needs --hf-rate")
        return args, None
    if args.delay_ms:
        p.error("--delay-ms and --hf-rate are two kinds of wire: give one")
    try:
        return args, hf_settings(args)
    except ValueError as error:
        p.error(str(error))


def main(argv: Sequence[str] | None = None) -> int:
    args, settings = _arguments(argv)
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    here = open_tun(args.here)
    enter_netns(args.there_netns)
    there = open_tun(args.there)
    names = (args.here, args.there)
    link: Link = (
        DelayLink(args.delay_ms / 1000, names) if settings is None else HfLink(settings, names)
    )
    report = _reporter(link, args.counters)
    wakeup = _signals()
    print("ready", flush=True)
    try:
        forward((here, there), link, wakeup=wakeup, report=report)
    except OSError:
        return 0  # (a device went with its namespace: the lab is over)
    report(time.monotonic())  # (SIGTERM)
    return 0


def _signals() -> int:
    """SIGTERM and SIGUSR1 come as their numbers on the descriptor returned."""
    readable, writable = os.pipe()
    for fd in (readable, writable):
        os.set_blocking(fd, False)
    for number in (signal.SIGTERM, signal.SIGUSR1):
        signal.signal(number, lambda *_: None)
    signal.set_wakeup_fd(writable)
    return readable


if __name__ == "__main__":
    sys.exit(main())
