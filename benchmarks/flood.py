"""Flood benchmark: one ``x400-mta`` process under connection and unbound-data floods.

    python benchmarks/flood.py [--nofile 1024] [--idle 1100] [--streamers 20]
                               [--stream-mib 60] [--tree DIR]

The daemon runs with the default ``[limits]`` and an open-file limit of ``--nofile``
(soft and hard, set in the child before it starts, as a systemd unit's LimitNOFILE
would), one P1 listener, and one peer, MTA-A, that this script plays.

Phases, each measured on the daemon's resident memory (VmRSS), its open descriptors, its
log (lines, tracebacks) and the time a real peer takes:

* idle flood: ``--idle`` connections opened, 64 at a time, from 40 loopback source
  addresses (127.0.2.1 ...) and left silent; meanwhile the local API's ``status`` and, once the
  flood's connections are 3.2 s old (past a tenth of ``bind_timeout``), MTA-A
  from 127.0.0.1: connect, bind, transfer a 1 KB message, release;
* unbound streamers: ``--streamers`` peers from 127.0.3.1 ... each send a CR, then,
  instead of their MTA-bind, DT TPDUs of one TSDU that never ends, up to
  ``--stream-mib`` MiB each; RSS before, at its peak during, and 5 s after they closed.

``--tree DIR`` runs ``x400-mta`` from another checkout instead of the
installed ``x400-mta`` (for figures of an earlier commit).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import samples  # noqa: E402
from benchmarks.relay import rss_mib  # noqa: E402
from client.api import call_async  # noqa: E402
from mta.link import LinkError, open_link  # noqa: E402
from p1.association.connection import P1Association  # noqa: E402
from p1.association.mtabind import MTABindArgument  # noqa: E402
from p1.osi import Role  # noqa: E402
from p1.osi.tpkt import encode_tpkt  # noqa: E402
from tests.fuzz.live import daemon_module  # noqa: E402

MTA = str(Path(sys.executable).with_name("x400-mta"))
A_NAME, A_PASSWORD = "MTA-A", "pw-MTA-A"
FLOOD_SOURCES = [f"127.0.2.{n}" for n in range(1, 41)]
CONNECTING = 64
"""Connections of the flood being opened at once (fewer than the listener's backlog of
100, so that each reaches the daemon rather than waiting in the kernel's queue)."""
DT_TPDU = encode_tpkt(b"\x02\xf0\x00" + bytes(2045))
"""A DT TPDU of 2,048 octets whose end-of-TSDU mark is not set."""


def _config(port: int, peer_port: int) -> str:
    return (
        'name = "MTA-B"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEB"\npassword = "pw-MTA-B"\n'
        'state_dir = "state"\nlog_level = "info"\naccept_any_recipient = true\n\n'
        f'[[listeners]]\naddress = "0.0.0.0"\nport = {port}\ndscp = "CS0"\n\n'
        f'[[peers]]\nname = "{A_NAME}"\nhost = "127.0.0.1"\n'
        f'routes = ["C=GB;ADMD= ;PRMD=SITEA"]\npeer_password = "{A_PASSWORD}"\n\n'
        '[[peers.slots]]\nprecedences = ["override", "flash", "immediate", "priority", '
        f'"routine", "deferred"]\nport = {peer_port}\ndscp = "CS0"\nmode = "on-demand"\n'
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Daemon:
    """The MTA under test, its log and its /proc entries."""

    folder: Path
    nofile: int
    tree: Path | None
    port: int = field(default_factory=_free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.folder / "mta.log"

    @property
    def socket(self) -> Path:
        return self.folder / "state" / "control.sock"

    def start(self) -> None:
        config = self.folder / "mta.toml"
        config.write_text(_config(self.port, _free_port()))
        command = [MTA, "-c", str(config)]
        environment = dict(os.environ)
        if self.tree is not None:
            command = [sys.executable, "-m", daemon_module(self.tree), "-c", str(config)]
            environment["PYTHONPATH"] = str(self.tree)
        limit = self.nofile

        def limited() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command, stderr=log, cwd=self.folder, env=environment, preexec_fn=limited
            )

    async def ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                await call_async(self.socket, {"op": "status"})
                return
            await asyncio.sleep(0.05)
        raise RuntimeError(f"the MTA did not start: see {self.log}")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=60)

    def rss_mib(self) -> float:
        assert self.process is not None
        return rss_mib(self.process.pid)

    def descriptors(self) -> int:
        assert self.process is not None
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def log_lines(self) -> tuple[int, int, int]:
        """Lines, tracebacks, octets of the log so far."""
        text = self.log.read_text(errors="replace")
        return text.count("\n"), text.count("Traceback"), len(text.encode())


def _since(daemon: Daemon, before: tuple[int, int, int]) -> tuple[int, int, int]:
    """Log lines, tracebacks and octets written since ``before``."""
    lines, tracebacks, octets = daemon.log_lines()
    return lines - before[0], tracebacks - before[1], octets - before[2]


@dataclass
class Row:
    phase: str
    figures: dict[str, str]


# --- the real peer ---------------------------------------------------------------------------


async def real_peer(port: int) -> float | None:
    """MTA-A from 127.0.0.1: bind, transfer 1 KB, release; seconds, or None if refused."""
    started = time.monotonic()
    argument = MTABindArgument(initiator_name=A_NAME, password=A_PASSWORD)
    try:
        link, _ = await open_link("127.0.0.1", port, argument)
        await link.transfer(samples.message_bytes(1024), timeout=30)
        await link.release(timeout=30)
    except (LinkError, OSError, TimeoutError):
        return None
    return time.monotonic() - started


async def real_peer_until_through(port: int, within: float) -> tuple[float | None, int]:
    """Try the real peer every 0.2 s for ``within`` seconds: its time, and attempts."""
    attempts = 0
    deadline = time.monotonic() + within
    while True:
        attempts += 1
        elapsed = await real_peer(port)
        if elapsed is not None or time.monotonic() > deadline:
            return elapsed, attempts
        await asyncio.sleep(0.2)


async def api_status(path: Path) -> float | None:
    started = time.monotonic()
    try:
        await asyncio.wait_for(call_async(path, {"op": "status"}), 10)
    except (OSError, TimeoutError):
        return None
    return time.monotonic() - started


# --- idle flood ------------------------------------------------------------------------------


async def open_idle(port: int, count: int) -> list[socket.socket]:
    """``count`` connections from the flood's sources, left silent (those the daemon
    closes stay closed)."""
    loop = asyncio.get_running_loop()
    connecting = asyncio.Semaphore(CONNECTING)

    async def one(source: str) -> socket.socket | None:
        sock = socket.socket()
        sock.setblocking(False)
        try:
            sock.bind((source, 0))
            async with connecting:
                await asyncio.wait_for(loop.sock_connect(sock, ("127.0.0.1", port)), 10)
        except (OSError, TimeoutError):
            sock.close()
            return None
        return sock

    sources = [FLOOD_SOURCES[n % len(FLOOD_SOURCES)] for n in range(count)]
    opened = await asyncio.gather(*(one(source) for source in sources))
    return [sock for sock in opened if sock is not None]


async def idle_flood(daemon: Daemon, count: int) -> Row:
    lines_before = daemon.log_lines()
    baseline = daemon.descriptors()
    started = time.monotonic()
    socks = await open_idle(daemon.port, count)
    opened = time.monotonic() - started
    await asyncio.sleep(1.0)
    descriptors = daemon.descriptors()
    status = await api_status(daemon.socket)
    # The real peer tries once the flood is 3.2 s old, so that a tree whose policy lets
    # an unbound connection give way only after a tenth of bind_timeout is measured too.
    await asyncio.sleep(max(0.0, 3.2 - (time.monotonic() - started)))
    elapsed, attempts = await real_peer_until_through(daemon.port, 30)
    descriptors = max(descriptors, daemon.descriptors())
    lines, tracebacks, octets = _since(daemon, lines_before)
    for sock in socks:
        sock.close()
    return Row(
        f"{count} idle connections",
        {
            "opened": f"{len(socks)} in {opened:.1f} s",
            "daemon descriptors, most seen": f"{descriptors} ({baseline} before)",
            "local API status": "refused" if status is None else f"{status * 1000:.0f} ms",
            "real peer bind+transfer": "failed" if elapsed is None else f"{elapsed:.3f} s",
            "real peer attempts": str(attempts),
            "log lines / tracebacks / KiB": f"{lines} / {tracebacks} / {octets / 1024:.0f}",
        },
    )


# --- unbound streamers -----------------------------------------------------------------------


async def stream_unbound(port: int, source: str, mib: int) -> int:
    """CR, then one never-ending TSDU; octets sent before the daemon cut it off."""
    loop = asyncio.get_running_loop()
    association = P1Association(Role.INITIATOR)
    association.send_bind(MTABindArgument(initiator_name=A_NAME, password=A_PASSWORD))
    sock = socket.socket()
    sock.setblocking(False)
    sent = 0
    try:
        sock.bind((source, 0))
        await loop.sock_connect(sock, ("127.0.0.1", port))
        await loop.sock_sendall(sock, association.data_to_send())  # CR
        await asyncio.wait_for(loop.sock_recv(sock, 4096), 30)  # CC
        chunk = DT_TPDU * 64
        while sent < mib << 20:
            await loop.sock_sendall(sock, chunk)
            sent += len(chunk)
        with contextlib.suppress(TimeoutError):  # held: wait to be cut off
            await asyncio.wait_for(loop.sock_recv(sock, 4096), 60)
    except (OSError, TimeoutError):
        pass
    finally:
        sock.close()
    return sent


async def sample_peak(rss: Callable[[], float], done: asyncio.Event) -> float:
    peak = 0.0
    while not done.is_set():
        peak = max(peak, rss())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), 0.02)
    return peak


async def streamers(daemon: Daemon, count: int, mib: int) -> Row:
    before = daemon.rss_mib()
    lines_before = daemon.log_lines()
    done = asyncio.Event()
    peak_task = asyncio.create_task(sample_peak(daemon.rss_mib, done))
    started = time.monotonic()
    sources = [f"127.0.3.{n + 1}" for n in range(count)]
    sent = await asyncio.gather(*(stream_unbound(daemon.port, s, mib) for s in sources))
    elapsed = time.monotonic() - started
    done.set()
    peak = await peak_task
    await asyncio.sleep(5.0)
    after = daemon.rss_mib()
    peer = await real_peer(daemon.port)
    lines, tracebacks, octets = _since(daemon, lines_before)
    median = sorted(sent)[len(sent) // 2]
    return Row(
        f"{count} unbound streamers of {mib} MiB",
        {
            "sent per peer before the cut (median)": f"{median / 2**20:.2f} MiB",
            "streaming took": f"{elapsed:.1f} s",
            "RSS before / peak / 5 s after": f"{before:.0f} / {peak:.0f} / {after:.0f} MiB",
            "RSS growth at peak / after": f"{peak - before:.0f} / {after - before:.0f} MiB",
            "real peer bind+transfer after": "failed" if peer is None else f"{peer:.3f} s",
            "log lines / tracebacks / KiB": f"{lines} / {tracebacks} / {octets / 1024:.0f}",
        },
    )


# --- main -------------------------------------------------------------------------------------


@contextlib.contextmanager
def own_descriptors(wanted: int) -> Iterator[None]:
    """Enough open files for this process's side of the flood."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def run(args: argparse.Namespace) -> list[Row]:
    with tempfile.TemporaryDirectory() as folder:
        daemon = Daemon(Path(folder), args.nofile, args.tree)
        daemon.start()
        try:
            await daemon.ready()
            start_rss = daemon.rss_mib()
            warm = await real_peer(daemon.port)  # (the codec loads at the first bind)
            rows = [
                Row(
                    "started",
                    {
                        "RSS": f"{start_rss:.0f} MiB",
                        "descriptors": str(daemon.descriptors()),
                        "first bind+transfer": "failed" if warm is None else f"{warm:.3f} s",
                    },
                )
            ]
            rows.append(await idle_flood(daemon, args.idle))
            await asyncio.sleep(1.0)
            rows.append(await streamers(daemon, args.streamers, args.stream_mib))
        finally:
            daemon.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nofile", type=int, default=1024)
    parser.add_argument("--idle", type=int, default=1100)
    parser.add_argument("--streamers", type=int, default=20)
    parser.add_argument("--stream-mib", type=int, default=60)
    parser.add_argument("--tree", type=Path, default=None)
    args = parser.parse_args()
    with own_descriptors(args.idle + 256):
        rows = asyncio.run(run(args))
    print(f"| phase | figure | value |  (RLIMIT_NOFILE {args.nofile})")
    print("|---|---|---:|")
    for row in rows:
        for name, value in row.figures.items():
            print(f"| {row.phase} | {name} | {value} |")


if __name__ == "__main__":
    main()
