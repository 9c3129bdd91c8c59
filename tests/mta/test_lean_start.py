"""What a daemon loads: two MTAs that relay a message without TLS and without showing an
extension never import asn1tools (with its parser and codecs, about 28 MB of a daemon's
memory) nor cryptography (about 11 MB); each is imported when first needed, and the code
that needs it still works (tests/p1 for asn1tools, tests/mta/tls for cryptography).

The sites run in a fresh interpreter (this test process has imported both long before).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two daemons in a fresh interpreter

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("asn1tools", "pyparsing", "cryptography")

SCRIPT = """
import asyncio, json, sys, tempfile
from pathlib import Path
from tests.support.sites import Lab, eventually

async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        lab = Lab.create(Path(folder))
        await lab.start()
        try:
            await lab.a.send(lab.a.address("Smith"), lab.b.address("Jones"))
            await eventually(
                lambda: lab.b.inbox(lab.b.address("Jones")),
                lambda got: len(got) == 1,
                what="the message in B's mailbox",
            )
        finally:
            await lab.close()
    print(json.dumps(sorted(name for name in %r if name in sys.modules)))

asyncio.run(main())
"""


def test_a_relay_without_tls_imports_neither_asn1tools_nor_cryptography() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT % (HEAVY,)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == []
