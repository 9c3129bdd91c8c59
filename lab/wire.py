"""A delay wire: two TUN devices in two namespaces, joined by a process that hands each
packet over after a fixed delay, in each direction (the kernel here has no netem).

``python -m lab.wire --delay-ms D --here ra --there a0 --there-netns /run/netns/NS``,
started inside the namespace of ``--here`` (``ip netns exec``): it creates the TUN device
``here`` there, enters the namespace ``there-netns`` and creates ``there`` in it, prints
``ready`` and then moves packets until it is killed.  Each packet read from one device is
written to the other ``D`` milliseconds later (one FIFO per direction: the order is kept,
nothing is dropped or reordered by the wire; the devices' queues before it are where any
shaping happens).  The devices are not persistent: they go when the process ends, and
the process ends when its parent (the lab) does (``PR_SET_PDEATHSIG``), or when a device
goes with its namespace.

Both devices are layer 3 (``IFF_TUN``, no packet information header): addresses and
routes are the caller's to set, no ARP crosses the wire.

Public API::

    open_tun(name) -> int            the file descriptor of a new TUN device ``name``
    enter_netns(path)                this process's network namespace becomes ``path``'s
    forward(fds, delay)              move packets between two TUN descriptors for ever
    main(argv) -> int
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import ctypes
import fcntl
import os
import select
import signal
import struct
import sys
import time
from collections.abc import Sequence

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


def forward(fds: tuple[int, int], delay: float) -> None:
    """Packets read from one descriptor are written to the other ``delay`` seconds later;
    returns when a device is gone."""
    other = {fds[0]: fds[1], fds[1]: fds[0]}
    waiting: dict[int, collections.deque[tuple[float, bytes]]] = {
        fd: collections.deque() for fd in fds
    }  # read from fd: (due at, packet), oldest first
    while True:
        now = time.monotonic()
        for source, queue in waiting.items():
            while queue and queue[0][0] <= now:
                _write(other[source], queue.popleft()[1])
        dues = [queue[0][0] for queue in waiting.values() if queue]
        timeout = max(0.0, min(dues) - now) if dues else None
        readable, _, _ = select.select(list(fds), [], [], timeout)
        for fd in readable:
            for packet in _drain(fd):
                waiting[fd].append((time.monotonic() + delay, packet))


def _drain(fd: int) -> list[bytes]:
    packets = []
    while True:
        try:
            packets.append(os.read(fd, MAX_PACKET))
        except BlockingIOError:
            return packets


def _write(fd: int, packet: bytes) -> None:
    with contextlib.suppress(BlockingIOError):  # (the stack's backlog is full: a drop)
        os.write(fd, packet)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.wire", description=__doc__.split("\n")[0])
    p.add_argument("--delay-ms", type=float, required=True)
    p.add_argument("--here", required=True, help="the TUN device in this namespace")
    p.add_argument("--there", required=True, help="the TUN device in the other namespace")
    p.add_argument("--there-netns", required=True, help="the other namespace's file")
    args = p.parse_args(argv)
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    here = open_tun(args.here)
    enter_netns(args.there_netns)
    there = open_tun(args.there)
    print("ready", flush=True)
    try:
        forward((here, there), args.delay_ms / 1000)
    except OSError:
        return 0  # (a device went with its namespace: the lab is over)
    return 0


if __name__ == "__main__":
    sys.exit(main())
