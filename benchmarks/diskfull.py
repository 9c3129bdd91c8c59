"""A full disk under the receiving MTA: what B logs, and how it recovers.

Two MTAs of the test lab on loopback; B's state directory is on a tmpfs of its own that
is filled to a few hundred KiB before A submits the messages.  B refuses transfers
unconfirmed while it cannot store them; the filler file is then removed, and the run
measures how long B takes to have every message, exactly once, without a restart.

Run as root (it mounts a tmpfs)::

    .venv/bin/python -m benchmarks.diskfull --messages 3000

Prints one table: messages, transfers refused, seconds full, seconds to recover after
space returned to the first and to the last delivery (and A's retry interval, the bound
the first should meet), delivered and
duplicates, and the log lines of both sites by logger and level, with tracebacks.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.sites import Lab, eventually, until


class _Lines(logging.Handler):
    """Log lines of both sites by logger and level, and the tracebacks among them."""

    def __init__(self) -> None:
        super().__init__()
        self.levels: collections.Counter[str] = collections.Counter()
        self.tracebacks = 0
        self.samples: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.levels[f"{record.name.removeprefix('aiox400.')} {record.levelname}"] += 1
        self.tracebacks += record.exc_info is not None
        if record.levelno >= logging.WARNING and len(self.samples) < 12:
            self.samples.append(f"{record.levelname} {record.getMessage()[:120]}")


async def run(messages: int, size: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="aiox400-diskfull-") as name:
        directory = Path(name)
        disk = directory / "disk"
        disk.mkdir()
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)], check=True
        )
        try:
            return await _measure(directory, disk, messages)
        finally:
            subprocess.run(["umount", "-l", str(disk)], check=False)


async def _measure(directory: Path, disk: Path, messages: int) -> dict[str, object]:
    lines = _Lines()
    root = logging.getLogger()
    root.addHandler(lines)
    root.setLevel(logging.INFO)
    lab = Lab.create(directory / "lab")
    lab.b.settings["state_dir"] = str(disk / "state")
    lab.b.settings["log_level"] = "info"
    lab.a.settings["log_level"] = "info"
    await lab.start()
    try:
        bob = lab.b.address("bob")
        filler = disk / "filler"
        stat = os.statvfs(disk)
        with filler.open("wb") as stream:
            stream.write(b"\0" * (stat.f_bavail * stat.f_frsize - 300_000))
        full_at = time.monotonic()
        sent = await lab.a.send(lab.a.address("alice"), bob, count=messages)
        b = lab.b.running
        await until(lambda: b.store.refused >= 50, what="B refusing", timeout=300)
        await asyncio.sleep(10)
        refused = b.store.refused
        before = len(await lab.b.inbox(bob))
        filler.unlink()
        freed_at = time.monotonic()
        await eventually(
            lambda: lab.b.inbox(bob), lambda found: len(found) > before, what="one", timeout=600
        )
        first = time.monotonic() - freed_at
        entries = await eventually(
            lambda: lab.b.inbox(bob), lambda found: len(found) >= messages, what="all", timeout=600
        )
        recovered = time.monotonic() - freed_at
        identifiers = [entry["mts_identifier"] for entry in entries]
        return {
            "messages": messages,
            "refused while full": refused,
            "seconds full": round(freed_at - full_at, 1),
            "delivered before space returned": before,
            "seconds to the first delivery after": round(first, 1),
            "seconds to the last delivery after": round(recovered, 1),
            "A's retry interval (s)": f"{lab.a.running.config.retry.initial:g}"
            f"..{lab.a.running.config.retry.maximum:g}",
            "delivered": len(set(identifiers)),
            "duplicates": len(identifiers) - len(set(identifiers)),
            "missing": len(set(sent) - set(identifiers)),
            "log lines": dict(sorted(lines.levels.items())),
            "tracebacks": lines.tracebacks,
            "warnings and errors (first)": lines.samples,
        }
    finally:
        await lab.close()
        root.removeHandler(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=3000, help="messages A sends (3000)")
    parser.add_argument("--disk", default="32m", help="size of B's tmpfs (32m)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("run as root: it mounts a tmpfs for B's state")
    result = asyncio.run(run(args.messages, args.disk))
    for key, value in result.items():
        if isinstance(value, list):
            print(f"{key}:")
            for line in value:
                print(f"    {line}")
        else:
            print(f"{key:32} {value}")


if __name__ == "__main__":
    main()
