"""Codec benchmark: encode and decode of a whole STANAG 4406 message (P1 + P772).

    python benchmarks/codec.py            (or: make bench)

For bodies of 1 KB, 1 MB and 10 MB it times *encode* (IPM content, then the MTS-APDU
around it) and *decode* (the MTS-APDU, then its IPM content) as the MTA and the message
store do them, and measures the peak extra memory of each with tracemalloc in separate
runs (tracemalloc slows the code it watches).  It also times the ASN.1 start-up: a cold
compile of the modules and a warm load from the on-disk cache in a fresh process.
*MTA relay* is what a relaying MTA does per message: read the envelope (the content is
skipped, not decoded), add a trace entry, and write the envelope before the content's
octets as received.

Values from small vocabularies (object identifiers, global domain identifiers, named-bit
sets) and the last 4,096 O/R name encodings decoded are memoised by the codec, as in steady
operation (a repeated run reads its O/R names from that memo); times and everything else
are decoded afresh on every run.  Times are the median of repeated runs; the
project's targets: 1 KB encode + decode <= 200 us; 10 MB encode + decode <= 50 ms and
peak extra memory <= 3x the body.
"""

from __future__ import annotations

import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import samples  # noqa: E402
from p1 import asn1  # noqa: E402
from p1.ipms.ipm import IPM, ContentKind, decode_ipm, encode_ipm  # noqa: E402
from p1.mts.envelope import (  # noqa: E402
    Message,
    MessageEnvelope,
    TraceEntry,
    decode_mts_apdu,
    encode_mts_apdu,
    peek_envelope,
    replace_message_envelope,
)

SIZES = (("1 KB", 1024, 2000), ("1 MB", 1024**2, 30), ("10 MB", 10 * 1024**2, 8))


@dataclass(frozen=True)
class Row:
    label: str
    wire_bytes: int
    encode_us: float
    decode_us: float
    relay_us: float
    encode_peak: int
    decode_peak: int
    relay_peak: int
    body: int


def encode_message(message: Message, ipm: IPM) -> bytes:
    """What a submitting client does: the IPM content, then the APDU around it."""
    content = encode_ipm(ipm, ContentKind.P772)
    return encode_mts_apdu(Message(envelope=message.envelope, content=content))


def decode_message(wire: bytes) -> IPM:
    """What the message store does on delivery: the APDU, then its IPM content."""
    apdu = decode_mts_apdu(wire)
    assert isinstance(apdu, Message)
    return decode_ipm(apdu.content, apdu.envelope.content_type)


RELAY_TRACE = TraceEntry(global_domain_identifier=samples.DOMAIN, arrival_time=samples.SENT)


def relay_message(wire: bytes) -> bytes:
    """What a relaying MTA does: read the envelope, add trace, send the content as is."""
    envelope = peek_envelope(wire)
    assert isinstance(envelope, MessageEnvelope)
    return replace_message_envelope(wire, envelope.with_trace(RELAY_TRACE))


def median_us(action: Callable[[], object], repeat: int) -> float:
    action()  # warm caches
    samples_ns = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        action()
        samples_ns.append(time.perf_counter_ns() - start)
    return statistics.median(samples_ns) / 1000


def peak_bytes(action: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = action()
        peak = tracemalloc.get_traced_memory()[1] - base
        del result
        return peak
    finally:
        tracemalloc.stop()


def measure(label: str, size: int, repeat: int) -> Row:
    message = samples.message(size)
    ipm = samples.p772_ipm(size)
    wire = encode_message(message, ipm)
    assert decode_message(wire) == ipm, "round trip changed the IPM"
    return Row(
        label=label,
        wire_bytes=len(wire),
        encode_us=median_us(lambda: encode_message(message, ipm), repeat),
        decode_us=median_us(lambda: decode_message(wire), repeat),
        relay_us=median_us(lambda: relay_message(wire), repeat),
        encode_peak=peak_bytes(lambda: encode_message(message, ipm)),
        decode_peak=peak_bytes(lambda: decode_message(wire)),
        relay_peak=peak_bytes(lambda: relay_message(wire)),
        body=size,
    )


def startup() -> tuple[float, float]:
    """Seconds for a cold compile, and for a warm cached load in a new process."""
    start = time.perf_counter()
    asn1.compile_uncached()
    cold = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, AIOX400_CACHE_DIR=cache)
        program = (
            f"import time, sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from p1.asn1 import spec\n"
            "t = time.perf_counter(); spec(); print(time.perf_counter() - t)\n"
        )
        run = [sys.executable, "-c", program]
        subprocess.run(run, env=env, check=True, capture_output=True)  # fills the cache
        warm = float(subprocess.run(run, env=env, check=True, capture_output=True).stdout)
    return cold, warm


def fmt_time(us: float) -> str:
    return f"{us:,.0f} us" if us < 10_000 else f"{us / 1000:,.1f} ms"


def main() -> None:
    asn1.spec()
    rows = [measure(*size) for size in SIZES]
    print(f"aiox400 codec benchmark (Python {sys.version.split()[0]}, {os.cpu_count()} CPUs)\n")
    print(
        "| P772 message body | bytes on the wire | encode | decode | encode + decode "
        "| MTA relay | peak extra memory (encode / decode / relay) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        peaks = " / ".join(
            f"{peak / r.body:.1f}x" for peak in (r.encode_peak, r.decode_peak, r.relay_peak)
        )
        print(
            f"| {r.label} | {r.wire_bytes:,} | {fmt_time(r.encode_us)} | "
            f"{fmt_time(r.decode_us)} | {fmt_time(r.encode_us + r.decode_us)} | "
            f"{fmt_time(r.relay_us)} | {peaks} the body |"
        )
    cold, warm = startup()
    print(f"\nASN.1 start-up: cold compile {cold:.2f} s; warm load from cache {warm * 1000:.0f} ms")


if __name__ == "__main__":
    main()
