"""A local submission names an originator under a local domain, unless the file accepts
foreign ones (``foreign_originators``).

Site A (local domain ``C=GB;ADMD= ;PRMD=SITEA``) runs; ``x400 send`` and ``x400ctl
probe`` from a name under site B's domain are refused with the reason, nothing is queued
and the daemon logs one WARNING for it; from A's own domain, in any letters' case, they
are taken.  With ``foreign_originators = "accept"`` the foreign originator is taken too.
With ``[access]``, a user's names are under the local domains already (the loader sees
to it), so the two rules agree; an operator, who may submit as anyone, is bounded by
``foreign_originators`` all the same.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from client import x400
from client.api import ApiError
from tests.support.sites import A, B, Site, solo_site

pytestmark = pytest.mark.slow  # daemons started, one with [access]

SMITH = f"{A.domain};O=HQ;S=Smith"
FOREIGN = f"{B.domain};O=HQ;S=Jones"


async def _send(site: Site, sender: str) -> tuple[int, str, str]:
    return await site.x400(
        "send", "--socket", str(site.socket), "--from", sender, "--to", SMITH, "--body", "hi"
    )


async def _queued(site: Site) -> int:
    response = await site.api({"op": "status"})
    return sum(int(n) for n in response["recipients"].values())


async def test_a_submission_from_under_no_local_domain_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400")
    site = solo_site(tmp_path / "a")
    await site.start()
    try:
        code, out, err = await _send(site, FOREIGN)
        assert code != x400.EXIT_OK and out == ""
        assert (
            f"originator {FOREIGN} is under none of this MTA's local domains ({A.domain}); "
            'foreign_originators = "accept" would take it'
        ) in err
        probe = {  # what x400ctl probe asks
            "op": "submit",
            "probe": True,
            "originator": FOREIGN,
            "recipients": [SMITH],
            "precedence": "routine",
            "content_type": 22,
            "probe_content_length": 10,
        }
        with pytest.raises(ApiError, match="is under none of this MTA's local domains"):
            await site.api(probe)
        assert await _queued(site) == 0
        refusals = [r for r in caplog.records if "refused a local submission" in r.getMessage()]
        assert len(refusals) == 1 and refusals[0].levelno == logging.WARNING

        code, out, err = await _send(site, SMITH.upper())
        assert code == x400.EXIT_OK, err
        assert await _queued(site) == 1
    finally:
        await site.stop()


async def test_foreign_originators_accept_takes_them(tmp_path: Path) -> None:
    site = solo_site(tmp_path / "a")
    site.settings["foreign_originators"] = "accept"
    await site.start()
    try:
        code, _, err = await _send(site, FOREIGN)
        assert code == x400.EXIT_OK, err
        assert await _queued(site) == 1
    finally:
        await site.stop()


async def test_under_access_an_operator_is_bounded_by_foreign_originators(
    tmp_path: Path,
) -> None:
    """The test's own account is the daemon's, an operator under [access], which lets an
    operator submit as anyone: foreign_originators bounds it all the same."""
    site = solo_site(tmp_path / "a")
    site.settings["access"] = {"users": {str(os.getuid() + 1): SMITH}}
    await site.start()
    try:
        code, _, err = await _send(site, FOREIGN)
        assert code != x400.EXIT_OK
        assert "is under none of this MTA's local domains" in err
    finally:
        await site.stop()
