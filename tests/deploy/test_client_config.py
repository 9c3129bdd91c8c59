"""The operators' client configuration of deploy/README.md: the control socket and no
secret is all ``x400ctl`` needs."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.process import DEADLINE
from tests.support.sites import A, solo_site

pytestmark = pytest.mark.slow  # the installed x400ctl as a process

X400CTL = Path(sys.executable).with_name("x400ctl")


async def test_x400ctl_status_with_a_client_file_that_holds_no_secret(tmp_path: Path) -> None:
    site = solo_site(tmp_path / "site")
    await site.start()
    client = tmp_path / "client.toml"
    client.write_text(
        f'name = "{A.name}"\nglobal_domain = "{A.domain}"\ncontrol_socket = "{site.socket}"\n'
        "accept_any_recipient = true\n"
    )
    try:
        done = await asyncio.to_thread(
            subprocess.run,
            [str(X400CTL), "status", "-c", str(client)],
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
        )
    finally:
        await site.stop()
    assert done.returncode == 0, done.stderr
    assert A.name in done.stdout
