"""An MTS-APDU for the ACP 142 tests: the project's sample P772 message."""

from __future__ import annotations

from pathlib import Path

SAMPLE = Path(__file__).parent.parent / "samples" / "p772-message.hex"
APDU = bytes.fromhex(SAMPLE.read_text())
"""A P772 message, as P1 transfers it (tests/p1/samples/p772-message.hex)."""
