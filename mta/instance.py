"""One daemon per state directory: an exclusive lock on ``<state_dir>/x400-mta.lock``.

The daemon takes the lock (flock(2), ``LOCK_EX | LOCK_NB``) before it touches anything
else: the database, the APDU spool's sweep, the control socket, the listeners.  A second
daemon started on the same state directory finds the lock held and stops there, naming
the process that holds it, so it neither sweeps the first one's APDU files nor takes its
control socket.  The lock is the open file's: it lasts as long as the process keeps the
file open and ends with it, whatever the way the process ends (a crash leaves no stale
lock).  The file holds the holder's PID (for the message, and for the operator); it is
never removed, as removing it would let two processes each lock a different file of
the same name.

The state directory also names the process among those of its site that share one
queue database: ``<state_dir>/instance`` holds a name made once, at the first start
(the host's name and a random part), and the process claims queued work as
``<MTA name>/<that name>`` (:meth:`StateLock.claim_owner`).  One daemon per state
directory makes it one live process per name; a restart on the same directory is the
same owner, so it recovers its own claims at once.

Public API::

    StateLock.acquire(state_dir) -> StateLock      .path .release()
        .claim_owner(mta_name) -> str              the owner of this process's claims
    StateDirInUseError(state_dir, pid)             the message names both
    LOCK_NAME, LOCK_MODE
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import socket
from pathlib import Path
from typing import Final

__all__ = ["LOCK_MODE", "LOCK_NAME", "StateDirInUseError", "StateLock"]

LOCK_NAME: Final = "x400-mta.lock"
"""The lock file's name in the state directory."""
LOCK_MODE: Final = 0o640
INSTANCE_NAME: Final = "instance"
"""The file in the state directory that names this process among its site's."""
_MAX_INSTANCE_TEXT: Final = 80
"""The lock file's mode: the operator's group may read the PID."""
STATE_DIR_MODE: Final = 0o750
"""Mode of a state directory the daemon creates (the group traverses to the socket)."""
_MAX_PID_TEXT: Final = 32


class StateDirInUseError(Exception):
    """Another process holds the state directory's lock."""

    def __init__(self, state_dir: Path, pid: int | None) -> None:
        holder = f"process {pid}" if pid is not None else "another process"
        super().__init__(
            f"{holder} holds {state_dir / LOCK_NAME}: another x400-mta runs on the state "
            f"directory {state_dir}; nothing was changed"
        )
        self.state_dir = state_dir
        self.pid = pid


class StateLock:
    """The held lock of one state directory (module docstring)."""

    def __init__(self, path: Path, descriptor: int) -> None:
        self.path = path
        self._descriptor: int | None = descriptor

    @classmethod
    def acquire(cls, state_dir: Path) -> StateLock:
        """Lock ``state_dir`` (made, mode 0750, if missing) and write our PID in the lock
        file; :class:`StateDirInUseError` if another process holds it."""
        state_dir.mkdir(mode=STATE_DIR_MODE, parents=True, exist_ok=True)
        path = state_dir / LOCK_NAME
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        descriptor = os.open(path, flags, LOCK_MODE)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(descriptor)
            os.close(descriptor)
            raise StateDirInUseError(state_dir, pid) from None
        except BaseException:
            os.close(descriptor)
            raise
        _write_pid(descriptor)
        return cls(path, descriptor)

    @property
    def held(self) -> bool:
        """Whether the lock is still held (not released)."""
        return self._descriptor is not None

    def claim_owner(self, mta_name: str) -> str:
        """``<mta_name>/<instance>``: the owner of the queued work this process claims
        (at most 32 + 1 + 80 characters), its instance made once and kept."""
        path = self.path.with_name(INSTANCE_NAME)
        with contextlib.suppress(FileNotFoundError, UnicodeDecodeError):
            kept = path.read_text("ascii").strip()[:_MAX_INSTANCE_TEXT]
            if kept:
                return f"{mta_name}/{kept}"
        host = socket.gethostname()[:60].encode("ascii", "replace").decode("ascii")
        instance = f"{host}:{secrets.token_hex(6)}"
        path.write_text(instance + "\n", "ascii")
        return f"{mta_name}/{instance}"

    def release(self) -> None:
        """Give the lock up (the file stays, see the module docstring)."""
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is not None:
            os.close(descriptor)


def _write_pid(descriptor: int) -> None:
    """Our PID as the file's text; its mode set whatever the umask was."""
    os.fchmod(descriptor, LOCK_MODE)
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, f"{os.getpid()}\n".encode("ascii"), 0)


def _read_pid(descriptor: int) -> int | None:
    """The PID the holder wrote, or None (being written, or not a number)."""
    with contextlib.suppress(OSError, ValueError):
        return int(os.pread(descriptor, _MAX_PID_TEXT, 0).decode("ascii").strip())
    return None
