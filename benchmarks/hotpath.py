"""What each feature added to a message's path costs, per message, in process.

    python benchmarks/hotpath.py [--runs 20000]

Each row is one check or hook that every 1 KB message passes at one of the two MTAs,
called as the daemon calls it, on the message ``samples.py`` builds (the flash P772
message of ``codec.py``), back to back after 1,000 untimed calls; the median of five
timings of ``--runs`` calls, in microseconds per call:

* local API access: :func:`mta.operator.access.grant` and ``refusal`` for a submission
  by a user of ``[access]`` (an operator is granted without a look at the policy);
* criticality: the envelope's extensions critical for transfer that this MTA does not
  interpret (X.411 9.1), on the decoded envelope;
* tolerance: the long-form tags of the envelope's members, noted as it is decoded;
* metrics: a transfer received and committed, and a transfer confirmed to a peer.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.samples import message_bytes  # noqa: E402
from mta.metrics import Metrics  # noqa: E402
from mta.operator.access import Caller, Policy, grant, refusal  # noqa: E402
from p1 import ber  # noqa: E402
from p1.mts.envelope import (  # noqa: E402
    _MESSAGE_MEMBERS,
    MessageEnvelope,
    _apdu_tlv,
    _message_parts,
    peek_envelope,
)
from p1.mts.precedence import Precedence  # noqa: E402

USER_UID = 1000


def microseconds(call: Callable[[], Any], runs: int) -> float:
    """Median of five timings of ``runs`` calls, per call."""
    for _ in range(1000):
        call()
    timings = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(runs):
            call()
        timings.append((time.perf_counter() - started) / runs * 1e6)
    return statistics.median(timings)


def rows() -> list[tuple[str, Callable[[], Any]]]:
    apdu = message_bytes(1024)
    envelope = peek_envelope(apdu)
    assert isinstance(envelope, MessageEnvelope)
    envelope_tlv, _ = _message_parts(_apdu_tlv(apdu), "Message")
    members = ber.split_set(envelope_tlv, _MESSAGE_MEMBERS, "envelope")
    policy = Policy(daemon_uid=0, users={USER_UID: ("C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=SMITH",)})
    caller = Caller(pid=1, uid=USER_UID, gid=USER_UID)

    def access() -> str | None:
        return refusal(policy, caller, grant(policy, caller), "submit")

    metrics = Metrics()
    entry = SimpleNamespace(
        precedence=Precedence.ROUTINE, apdu=apdu, arrival_time=datetime.now(UTC)
    )
    now = datetime.now(UTC)
    return [
        ("local API access (a user's submission)", access),
        ("criticality (X.411 9.1)", envelope.unsupported_critical_extensions),
        ("tolerance (long-form tags)", lambda: ber.note_long_tags(members, "envelope", [])),
        (
            "metrics: transfer received",
            lambda: metrics.received("MTA-A", Precedence.ROUTINE, len(apdu)),
        ),
        (
            "metrics: transfer confirmed",
            lambda: metrics.transferred("MTA-B", entry, 0.002, now),  # type: ignore[arg-type]
        ),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20000, help="calls per timing (20000)")
    args = parser.parse_args(argv)
    print(f"Hot-path features (Python {sys.version.split()[0]}), us per message\n")
    print("| feature | us |")
    print("|---|---:|")
    for name, call in rows():
        print(f"| {name} | {microseconds(call, args.runs):.1f} |")


if __name__ == "__main__":
    main()
