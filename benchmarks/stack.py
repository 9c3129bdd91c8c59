"""Stack benchmark: P1 transfers through the whole OSI stack, in memory and over loopback.

    python benchmarks/stack.py            (or: make bench)

One association, one message at a time (RT-TRANSFER is one session activity: the next starts
only after the receiver confirmed the last), the receiver confirming each at once.  The
message is a STANAG 4406 P772 MTS-APDU with a 1 KB or 1 MB body (benchmarks/samples.py).

* *in memory*: an initiator and a responder
  :class:`p1.association.connection.P1Association` with the bytes handed from one to the
  other in the same thread: the stack's own cost.
* *loopback*: :func:`mta.link.open_link` against :func:`mta.link.serve_link` over TCP on
  127.0.0.1 in one event loop: the stack plus asyncio and the kernel.

Each row also runs with checkpoints (checkpoint size 16 KB, window 3) where that changes
the work.  Targets: >= 2,000 messages/s at 1 KB and >= 200 MB/s at 1 MB over loopback.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import samples  # noqa: E402
from mta import link as links  # noqa: E402
from mta import net  # noqa: E402
from p1.association.connection import (  # noqa: E402
    AssociationSettings,
    BindAccepted,
    BindRequested,
    P1Association,
    TransferConfirmed,
    TransferReceived,
    TransferTooLong,
)
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult  # noqa: E402
from p1.osi import Event, Role  # noqa: E402

ARGUMENT = MTABindArgument(initiator_name="bench-a", password="secret")
RESULT = MTABindResult(responder_name="bench-b", password="secret")


@dataclass(frozen=True)
class Case:
    label: str
    size: int
    count: int
    checkpoint_size: int


CASES = (
    Case("1 KB", 1024, 3000, 0),
    Case("1 MB", 1024**2, 60, 0),
    Case("1 MB, checkpoints 16 KB", 1024**2, 60, 16),
)


# --- in memory ------------------------------------------------------------------------


def _pump(source: P1Association, target: P1Association) -> list[Event]:
    data = source.data_to_send()
    return target.receive_data(data) if data else []


def _bound_pair(checkpoint_size: int) -> tuple[P1Association, P1Association]:
    initiator = P1Association(Role.INITIATOR, AssociationSettings(checkpoint_size=checkpoint_size))
    responder = P1Association(Role.RESPONDER)
    initiator.send_bind(ARGUMENT)
    for _ in range(4):
        for event in _pump(initiator, responder):
            if isinstance(event, BindRequested):
                responder.accept_bind(RESULT)
        if any(isinstance(e, BindAccepted) for e in _pump(responder, initiator)):
            return initiator, responder
    raise RuntimeError("the in-memory bind did not complete")


def in_memory(case: Case, apdu: bytes) -> float:
    """Seconds for ``case.count`` transfers between two associations in memory."""
    initiator, responder = _bound_pair(case.checkpoint_size)
    started = time.perf_counter()
    for _ in range(case.count):
        initiator.send_transfer(apdu)
        confirmed = False
        while not confirmed:
            for event in _pump(initiator, responder):
                if isinstance(event, TransferReceived):
                    responder.confirm_transfer(event.transfer_id)
            confirmed = any(isinstance(e, TransferConfirmed) for e in _pump(responder, initiator))
    return time.perf_counter() - started


# --- loopback -------------------------------------------------------------------------


class _Confirmer:
    """Accepts every bind and confirms every transfer at once."""

    async def on_bind(self, event: BindRequested) -> MTABindResult | MTABindError:
        return RESULT

    async def on_transfer(self, apdu: bytes) -> None:
        return None

    async def on_transfer_too_long(self, event: TransferTooLong) -> None:
        raise links.TransferRefusedError(f"{event.size} octets: over max_message_size")


async def _loopback(case: Case, apdu: bytes) -> float:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await links.serve_link(reader, writer, _Confirmer())

    server = await net.start_marked_server(handle, "127.0.0.1", 0, dscp=0)
    async with server:
        settings = AssociationSettings(checkpoint_size=case.checkpoint_size)
        link, _ = await links.open_link(
            "127.0.0.1", net.bound_port(server), ARGUMENT, settings=settings
        )
        started = time.perf_counter()
        for _ in range(case.count):
            await link.transfer(apdu, timeout=60)
        elapsed = time.perf_counter() - started
        await link.release(timeout=10)
    return elapsed


def loopback(case: Case, apdu: bytes) -> float:
    """Seconds for ``case.count`` transfers over TCP on 127.0.0.1."""
    return asyncio.run(_loopback(case, apdu))


# --- table ----------------------------------------------------------------------------


def _rate(case: Case, wire: int, seconds: float) -> str:
    per_second = case.count / seconds
    return f"{per_second:9,.0f} msg/s {per_second * wire / 1e6:8.1f} MB/s"


def main() -> None:
    print(f"{'message':<26} {'wire bytes':>10}  {'in memory':>30}  {'loopback TCP':>30}")
    for case in CASES:
        apdu = samples.message_bytes(case.size)
        memory = in_memory(case, apdu)
        tcp = loopback(case, apdu)
        print(
            f"{case.label:<26} {len(apdu):>10,}  {_rate(case, len(apdu), memory):>30}  "
            f"{_rate(case, len(apdu), tcp):>30}"
        )


if __name__ == "__main__":
    main()
