"""systemd's service notification protocol, without libsystemd (sd_notify(3)).

A service of ``Type=notify`` tells the service manager how it fares by sending
newline-separated ``KEY=VALUE`` assignments in one datagram to the AF_UNIX socket named
by ``$NOTIFY_SOCKET``; a name starting with ``@`` is in the abstract namespace (the
``@`` stands for the leading NUL octet, unix(7)).  When the variable is unset the
process is not supervised and every call does nothing.

The assignments used here (sd_notify(3), "Well-known assignments")::

    READY=1           start-up finished (listeners bound, control socket up)
    RELOADING=1       reloading the configuration (with MONOTONIC_USEC=, then READY=1)
    STOPPING=1        shutting down
    STATUS=text       one line for ``systemctl status``
    WATCHDOG=1        keep-alive, at least every ``$WATCHDOG_USEC`` microseconds when
                      ``WatchdogSec=`` is set (sd_watchdog_enabled(3))

Public API::

    Notifier(address)               .send(**fields) -> bool
        .ready(status) / .reloading() / .stopping() / .status(text) / .watchdog()
        .enabled -> bool
    Notifier.from_environment(environ=os.environ) -> Notifier
    watchdog_interval(environ=os.environ, pid=os.getpid()) -> float | None
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from typing import Final

__all__ = ["Notifier", "watchdog_interval"]

NOTIFY_SOCKET: Final = "NOTIFY_SOCKET"
"""Environment variable naming the manager's notification socket (sd_notify(3))."""
WATCHDOG_USEC: Final = "WATCHDOG_USEC"
"""Environment variable: the watchdog timeout in microseconds (sd_watchdog_enabled(3))."""
WATCHDOG_PID: Final = "WATCHDOG_PID"
"""Environment variable: the process the watchdog timeout is meant for, when set."""
_ABSTRACT: Final = "@"
"""First character of an abstract socket name in ``$NOTIFY_SOCKET``."""


class Notifier:
    """Sends state changes to the service manager at ``address`` (None: to nobody)."""

    def __init__(self, address: str | None) -> None:
        self.address = address or None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> Notifier:
        """The notifier ``$NOTIFY_SOCKET`` names; one that sends nothing when unset."""
        return cls(environ.get(NOTIFY_SOCKET))

    @property
    def enabled(self) -> bool:
        """Whether a service manager listens."""
        return self.address is not None

    def send(self, **fields: str) -> bool:
        """Send ``KEY=VALUE`` lines in one datagram; whether it was sent.

        A manager that went away is no reason to stop serving: an error is swallowed
        (sd_notify(3) returns it; the daemon would only log it).
        """
        if self.address is None:
            return False
        message = "\n".join(f"{key}={_one_line(value)}" for key, value in fields.items())
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto(message.encode("utf-8"), _socket_address(self.address))
        except OSError:
            return False
        return True

    def ready(self, status: str) -> bool:
        """Start-up (or a reload) is finished."""
        return self.send(READY="1", STATUS=status)

    def reloading(self) -> bool:
        """A reload starts; :meth:`ready` ends it (MONOTONIC_USEC: CLOCK_MONOTONIC now)."""
        return self.send(RELOADING="1", MONOTONIC_USEC=str(time.monotonic_ns() // 1000))

    def stopping(self) -> bool:
        """Shutting down."""
        return self.send(STOPPING="1", STATUS="stopping")

    def status(self, text: str) -> bool:
        """What ``systemctl status`` shows."""
        return self.send(STATUS=text)

    def watchdog(self) -> bool:
        """The watchdog keep-alive."""
        return self.send(WATCHDOG="1")


def watchdog_interval(
    environ: Mapping[str, str] = os.environ, pid: int | None = None
) -> float | None:
    """Seconds between keep-alives: half of ``$WATCHDOG_USEC``, as sd_watchdog_enabled(3)
    advises; None when no watchdog is set for this process (``$WATCHDOG_PID`` names
    another, or a value is malformed)."""
    owner = environ.get(WATCHDOG_PID)
    if owner is not None and owner != str(os.getpid() if pid is None else pid):
        return None
    try:
        microseconds = int(environ.get(WATCHDOG_USEC, ""))
    except ValueError:
        return None
    return microseconds / 2_000_000 if microseconds > 0 else None


def _socket_address(name: str) -> str | bytes:
    """The address to send to: a path, or an abstract name (a leading NUL octet)."""
    if name.startswith(_ABSTRACT):
        return b"\0" + name[1:].encode("utf-8")
    return name


def _one_line(value: str) -> str:
    """``value`` without line breaks, which would end the assignment early."""
    return " ".join(value.splitlines())
