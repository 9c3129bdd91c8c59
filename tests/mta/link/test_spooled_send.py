"""What the sending process holds while a link sends a spooled APDU of 10 MB: claimed to be
sent (``mapped``), the APDU is its spool file's mapping, and the link lets go of the
pages each write copied (:meth:`mta.link.Link.transfer`), so the process's peak resident
set grows by a fraction of the APDU, where a claim that reads the file holds all of it.

Measured in a fresh interpreter set up as the daemon is (:mod:`mta.memory`): the peak
resident set size (proc(5) VmHWM, reset through ``/proc/self/clear_refs``) from just
before the claim until the last octet was read at the other end of the socket."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SIZE = 10 * 1024 * 1024
"""Body octets: the 10 MB message of ``benchmarks/relay.py --huge``."""


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/self/status")


async def measure(folder: str, mode: str) -> dict[str, int]:
    """Queue a 10 MB APDU in a SQLite store in ``folder``, then claim it and send it over
    a link to a socket whose other end a thread reads and drops; how much the peak
    resident set grew meanwhile.  ``mode``: "mapped" (a claim to send, as the outbound
    channel makes), "kept" (the same, the link keeping the pages it read), "read" (a
    claim reading the file whole)."""
    from benchmarks import samples
    from mta import link as links
    from mta.memory import give_back_large_buffers
    from p1.mts.precedence import Precedence
    from store.db import open_database, transaction
    from store.queue import TransitQueue
    from tests.p1.association.pair import open_pair
    from tests.support.store_samples import T0, at, new_message

    give_back_large_buffers()
    engine = open_database(f"sqlite:///{Path(folder) / 'store.db'}")
    apdu = samples.message_bytes(SIZE)
    size = len(apdu)
    with transaction(engine) as session:
        TransitQueue(session).enqueue_many([dataclasses.replace(new_message("big"), apdu=apdu)], T0)
    del apdu
    if mode == "kept":
        links._DONTNEED = None  # type: ignore[misc]

    ours, theirs = socket.socketpair()
    received = 0
    everything = threading.Event()

    def drain() -> None:  # (into a buffer of its own: it allocates nothing while it reads)
        nonlocal received
        buffer = bytearray(1 << 16)
        with theirs:
            while count := theirs.recv_into(buffer):
                received += count
                if received >= size:
                    everything.set()

    reader_thread = threading.Thread(target=drain, daemon=True)
    reader_thread.start()
    reader, writer = await asyncio.open_connection(sock=ours)
    link = links.Link(open_pair().initiator, reader, writer, peer="sink")

    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    start = _status("VmHWM")
    with transaction(engine) as session:
        (entry,) = TransitQueue(session).claim_next(
            "mta-b", {Precedence.ROUTINE}, at(1), mapped=mode != "read"
        )
    # (The sink confirms nothing: the transfer waits for a confirmation until cancelled.)
    sending = asyncio.create_task(link.transfer(entry.apdu, timeout=60))
    while not everything.is_set():
        await asyncio.sleep(0.01)
    grown = _status("VmHWM") - start
    sending.cancel()
    await asyncio.gather(sending, return_exceptions=True)
    writer.close()
    await writer.wait_closed()  # (then the thread reads the end)
    reader_thread.join(timeout=10)
    engine.dispose()
    return {"grown": grown, "size": size, "mapped": int(type(entry.apdu) is not bytes)}


def _grown(tmp_path: Path, mode: str) -> dict[str, int]:
    folder = tmp_path / mode
    folder.mkdir()
    script = (
        "import asyncio, json, sys\n"
        "from tests.mta.link.test_spooled_send import measure\n"
        "print(json.dumps(asyncio.run(measure(sys.argv[1], sys.argv[2]))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(folder), mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.slow
def test_a_spooled_apdu_is_sent_without_the_process_holding_it(tmp_path: Path) -> None:
    mapped = _grown(tmp_path, "mapped")
    assert mapped["mapped"] == 1
    # A write of 256 KiB touches one or two of the file's folios, which the system may
    # map whole (up to 2 MiB each on ext4): about 5 MB there, 1 MB where folios are pages.
    assert mapped["grown"] < mapped["size"] * 3 // 4
    # What the measure sees: a claim that reads the file holds all of it while it is
    # sent, and so does a mapping whose pages the link keeps once it read them.
    read = _grown(tmp_path, "read")
    assert read["mapped"] == 0
    assert read["grown"] > read["size"] * 9 // 10
    kept = _grown(tmp_path, "kept")
    assert kept["mapped"] == 1
    assert kept["grown"] > kept["size"] * 9 // 10
