"""A refused MTA-bind between two live sites of the lab, as the operator sees it.

B delays its answers to an address whose binds it refused (``failed_bind_delay``), longer
than A waits for a bind's answer (``bind_timeout``): A's binds after the first refusal
are not answered in time.  ``x400ctl channels`` and ``x400ctl status`` keep showing the
refusal's reason, not the timeouts it causes; once B's password for A is fixed and B
reloaded, ``x400ctl flush`` at A brings A's slots up on their first attempt after it.

A reload of B that changes A's ``peer_password`` ends B's associations bound by A with
the old one (one line says so); A's binds with the old password are then refused, and a
message sent meanwhile waits at A until A presents the new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging

import pytest

from client import x400ctl
from mta.operator.reload import Reloader
from p1.mts.precedence import Precedence
from tests.support.sites import Lab, Site, eventually, until

CHANNEL = "aiox400.channel"
PERMANENT = (Precedence.FLASH, Precedence.IMMEDIATE, Precedence.PRIORITY)


def _run_x400ctl(argv: list[str]) -> tuple[int, str]:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out):
        code = x400ctl.main(argv)
    out.flush()
    assert isinstance(out.buffer, io.BytesIO)
    return code, out.buffer.getvalue().decode()


async def _x400ctl(site: Site, *argv: str) -> str:
    """``x400ctl`` against the site's control socket: what it printed (it succeeded)."""
    code, out = await asyncio.to_thread(_run_x400ctl, [*argv, "--socket", str(site.socket)])
    assert code == 0, out
    return out


def _failures(caplog: pytest.LogCaptureFixture, since: int) -> list[str]:
    """A's failed connection attempts logged since record ``since``."""
    return [
        r.getMessage()
        for r in caplog.records[since:]
        if r.name == CHANNEL
        and r.getMessage().startswith("MTA-B/")
        and ("next attempt in" in r.getMessage() or "failed the same way" in r.getMessage())
    ]


@pytest.mark.slow
async def test_a_refused_bind_is_shown_as_refused_and_a_flush_brings_the_slots_back(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    # B's delay after failed binds soon exceeds A's bind timeout (0.5, 1, 2, 4 s > 1 s).
    lab.b.settings["limits"] = {
        "failed_bind_delay": "0.5s",
        "failed_bind_delay_max": "4s",
    }
    lab.a.settings["limits"] = {"bind_timeout": "1s", "failed_bind_delay_max": "4s"}
    right = lab.b.settings["peers"][0]["peer_password"]
    lab.b.settings["peers"][0]["peer_password"] = "not-what-a-says"
    await lab.start()
    flash = lab.a.runner(Precedence.FLASH)

    def refused_often() -> bool:
        counts = lab.b.running.guard.failed_binds
        return len(_failures(caplog, 0)) >= 6 and len(counts) >= 1

    await until(refused_often, what="several failed attempts at A")
    channels = await _x400ctl(lab.a, "channels")
    status = await _x400ctl(lab.a, "status")
    for text in (channels, status):
        assert "bind refused: authentication-error" in text, text
        assert "TimeoutError" not in text, text
    # No slot retrying after a refusal counts as connected; each says why it is not.
    assert "slots: 0 of 4 connected (1 on demand, closed)" in status, status
    for slot in ("override+flash", "immediate", "priority"):
        assert f"down MTA-B/{slot}: bind refused: authentication-error" in status, status
    snapshot = flash.snapshot()
    assert all("bind refused" in (c.last_error or "") for c in snapshot.connections)

    lab.b.settings["peers"][0]["peer_password"] = right
    lab.b.write()
    Reloader(lab.b.running)()
    since = len(caplog.records)
    await _x400ctl(lab.a, "flush", "MTA-B")
    runners = [lab.a.runner(p) for p in PERMANENT]
    await until(lambda: all(r.snapshot().state == "up" for r in runners), what="A's slots up again")
    # Each slot bound on its first attempt after the flush: none failed in between.
    assert _failures(caplog, since) == []


@pytest.mark.slow
async def test_a_reload_that_changes_a_peers_password_ends_its_associations(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    # B's delay after A's refused binds (doubling per refusal, 30 s at most by default)
    # is the subject of the test above; here it is kept short, so that A's first bind
    # with the new password is answered within the wait for delivery.
    lab.b.settings["limits"] = {"failed_bind_delay_max": "2s"}
    await lab.start()
    runners = [lab.a.runner(p) for p in PERMANENT]
    await until(lambda: all(r.snapshot().state == "up" for r in runners), what="A's slots up")
    await until(lambda: len(lab.b.running.listeners.associations) == 3, what="B serves A's 3")
    old = set(lab.b.running.listeners.associations)
    # B expects a new password from A; A still presents the old one.
    lab.b.settings["peers"][0]["peer_password"] = "rotated-secret"
    lab.b.write()
    Reloader(lab.b.running)()
    await until(
        lambda: not old & lab.b.running.listeners.associations, what="the old associations end"
    )
    lines = [r.getMessage() for r in caplog.records]
    ending = [m for m in lines if m.startswith("reload: MTA-A's credentials changed")]
    assert len(ending) == 1, ending  # one line for the peer
    assert "ending its 3 association(s)" in ending[0]
    flash = lab.a.runner(Precedence.FLASH)
    await until(
        lambda: any("bind refused" in (c.last_error or "") for c in flash.snapshot().connections),
        what="A's new binds refused",
    )
    bob = lab.b.address("Bob")
    since = len(caplog.records)
    await lab.a.send(lab.a.address("Smith"), bob, Precedence.FLASH)
    # The message waits at A: no association bound with the old password is left to carry
    # it, and A's next attempts are refused.
    await until(lambda: len(_failures(caplog, since)) >= 2, what="A refused after the send")
    assert await lab.b.inbox(bob) == []
    # A takes the new password: its slots bind again and the message goes.
    lab.a.settings["peers"][0]["password"] = "rotated-secret"
    lab.a.write()
    Reloader(lab.a.running)()
    await _x400ctl(lab.a, "flush", "MTA-B")
    await eventually(lambda: lab.b.inbox(bob), lambda found: len(found) == 1, what="delivery")
