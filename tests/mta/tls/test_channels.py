"""``x400ctl channels`` against a daemon whose slots run inside TLS: each slot says TLS after
its DSCP, and each bound connection the TLS version it negotiated."""

from __future__ import annotations

import asyncio
import contextlib
import io
from pathlib import Path

import pytest

from client import x400ctl
from tests.mta.tls.pki import Pki, secure
from tests.support.sites import Lab, Site, eventually

pytestmark = pytest.mark.slow  # two daemons


def _channels(site: Site) -> str:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out):
        code = x400ctl.main(["channels", "--socket", str(site.socket)])
    out.flush()
    assert isinstance(out.buffer, io.BytesIO)
    text = out.buffer.getvalue().decode()
    assert code == x400ctl.EXIT_OK, text
    return text


async def test_channels_show_tls_slots_and_the_version_of_bound_connections(
    lab: Lab, tmp_path: Path
) -> None:
    secure(lab, Pki.create(tmp_path / "pki"))
    await lab.start()

    async def channels() -> str:
        return await asyncio.to_thread(_channels, lab.a)

    out = await eventually(
        channels, lambda text: text.count(" in TLSv1.3 for ") >= 3, what="three TLS slots up"
    )
    slots = [line for line in out.splitlines() if line.startswith("MTA-B ")]
    assert [line.split(" port ")[1].split(",")[0].split()[1:] for line in slots] == [
        ["CS3", "TLS", "permanent"],
        ["CS2", "TLS", "permanent"],
        ["CS1", "TLS", "permanent"],
        ["CS0", "TLS", "on-demand"],
    ]
    bound = [line for line in out.splitlines() if line.startswith("  #")]
    assert len(bound) == 3 and all(" in TLSv1.3 for " in line for line in bound), out
