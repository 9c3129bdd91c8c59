"""``x400-mta`` as a real process for the tests of its life: signals, locks, sd_notify.

Public API::

    MTA                                   the installed command
    Daemon(config, log, env=None, args=(), command=(MTA,))
        .start() .stop() -> exit code .signal(signum) .kill()
        .answers() -> bool   .wait_answering()   .wait_exit() -> code   .text() -> log
        .wait_for_line(text) -> the log line
    DEADLINE                              seconds any wait may take (reached on failure)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from client.api import ApiError, call
from config.loader import load_config

MTA = Path(sys.executable).with_name("x400-mta")
DEADLINE = 60.0
"""Seconds a condition may take to come true: reached only when a test fails."""
_POLL = 0.05


@dataclass
class Daemon:
    """One ``x400-mta --config config`` process; standard error appended to ``log``."""

    config: Path
    log: Path
    env: Mapping[str, str] | None = None
    args: tuple[str, ...] = ()
    command: tuple[str, ...] = (str(MTA),)
    """What runs the daemon (a launcher may come before the command)."""
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    socket: Path = field(init=False, repr=False)
    """The control socket, as the file said when the daemon started."""

    @property
    def pid(self) -> int:
        assert self.process is not None, "not started"
        return self.process.pid

    def start(self) -> Daemon:
        self.socket = load_config(self.config).control_socket
        environment = dict(os.environ if self.env is None else self.env)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [*self.command, "--config", str(self.config), *self.args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=environment,
            )
        return self

    def signal(self, signum: signal.Signals) -> None:
        assert self.process is not None, "not started"
        self.process.send_signal(signum)

    def stop(self) -> int:
        """SIGTERM, then the exit code (SIGKILL after the deadline)."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.terminate()
        return self.wait_exit()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def wait_exit(self) -> int:
        assert self.process is not None, "not started"
        try:
            return self.process.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"x400-mta did not exit within {DEADLINE:g} s:\n{self.text()}")

    def text(self) -> str:
        try:
            return self.log.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def answers(self) -> bool:
        """Whether ``status`` is answered on the control socket."""
        try:
            response, _ = call(self.socket, {"op": "status"})
        except (ApiError, OSError):
            return False
        return bool(response.get("ok"))

    def wait_answering(self) -> None:
        self._until(self.answers, "the daemon answers status")

    def wait_for_line(self, text: str) -> str:
        """The first log line holding ``text`` (waited for)."""
        self._until(lambda: text in self.text(), f"a log line with {text!r}")
        return next(line for line in self.text().splitlines() if text in line)

    def _until(self, condition: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + DEADLINE
        while not condition():
            if self.process is not None and self.process.poll() is not None:
                pytest.fail(f"x400-mta exited ({self.process.returncode}):\n{self.text()}")
            if time.monotonic() > deadline:
                pytest.fail(f"not within {DEADLINE:g} s: {what}\n{self.text()}")
            time.sleep(_POLL)
