"""``x400 send --probe``: what it asks the MTA, and a probe at one site.

The request of a probe is ``submit`` with ``probe: true``, the content type and
``probe_content_length`` (X.411 12.2.1.2.1.3), and no content after the line; the load
options (precedence, --count, --size) apply to it.  Between two sites it is
``tests/mta/operator/test_probe_live.py``.
"""

from __future__ import annotations

import asyncio
import io
from typing import Any, ClassVar

import pytest

from client import x400, x400ctl
from mta.intake.submission import SubmitRequest, build_probe
from p1.ipms.ipm import P2_CONTENT_TYPE, P772_CONTENT_TYPE
from p1.mts.envelope import MTSIdentifier, decode_mts_apdu, encode_mts_apdu
from p1.mts.fields import GlobalDomainIdentifier
from p1.mts.orname import parse_orname
from p1.mts.precedence import Precedence
from tests.support.sites import Site, eventually

SMITH = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith"
JONES = "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Jones"


class Recorder:
    """Stands for :class:`client.api.Connection`: keeps each request and its payload."""

    calls: ClassVar[list[tuple[dict[str, Any], bytes]]] = []

    def __init__(self, path: object, timeout: float = 60.0) -> None:
        pass

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    def call(self, request: dict[str, Any], payload: bytes = b"") -> tuple[dict[str, Any], bytes]:
        Recorder.calls.append((dict(request), payload))
        return {"ok": True, "mts_identifier": f"id{len(Recorder.calls)}"}, b""


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[dict[str, Any], bytes]]:
    Recorder.calls = []
    monkeypatch.setattr(x400, "Connection", Recorder)
    return Recorder.calls


def send(*options: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["send", "--socket", "/nonexistent", "--from", SMITH, "--to", JONES, *options]
    code = x400.main(argv, out=out, err=err)
    return code, out.getvalue() + err.getvalue()


def test_probe_asks_with_no_content_and_the_size_as_content_length(
    recorded: list[tuple[dict[str, Any], bytes]],
) -> None:
    code, shown = send("--probe", "--size", "1M", "--count", "2", "-p", "flash", "--p2")
    assert code == x400.EXIT_OK, shown
    assert shown.startswith("id1\nid2\n")
    assert "x400: 2 probes submitted in " in shown
    assert len(recorded) == 2
    for request, payload in recorded:
        assert payload == b""
        assert request["op"] == "submit"
        assert request["probe"] is True
        assert request["probe_content_length"] == 1024 * 1024
        assert request["precedence"] == "flash"
        assert request["content_type"] == P2_CONTENT_TYPE


def test_probe_without_size_asks_about_the_message_it_would_send(
    recorded: list[tuple[dict[str, Any], bytes]],
) -> None:
    assert send("--probe", "--subject", "s", "--body", "b")[0] == x400.EXIT_OK
    assert send("--subject", "s", "--body", "b")[0] == x400.EXIT_OK
    (probe, _), (message, content) = recorded
    assert probe["content_type"] == P772_CONTENT_TYPE
    assert probe["probe_content_length"] == len(content) > 0
    assert "probe" not in message


def test_the_probe_envelope_carries_the_content_length() -> None:
    request = SubmitRequest(
        originator=parse_orname(SMITH),
        recipients=(parse_orname(JONES),),
        precedence=Precedence.FLASH,
        content_type=22,
        content=b"",
        probe=True,
        content_length=1024 * 1024,
    )
    here = GlobalDomainIdentifier(country="GB", admd=" ", prmd="SITEA")
    probe = build_probe(
        request, identifier=MTSIdentifier(global_domain_identifier=here, local_identifier="p1")
    )
    decoded = decode_mts_apdu(encode_mts_apdu(probe))
    assert decoded == probe
    assert probe.content_length == 1024 * 1024
    assert probe.content_type == 22
    (recipient,) = probe.recipients
    indicators = recipient.per_recipient_indicators
    assert indicators.originator_report and indicators.originating_mta_report


async def test_a_probe_to_a_local_user_is_answered_not_delivered(site: Site) -> None:
    smith, jones = site.address("Smith"), site.address("Jones")
    code, out, err = await site.x400(
        "send", "--socket", str(site.socket), "--from", smith, "--to", jones, "--probe"
    )
    assert code == x400.EXIT_OK, err
    identifier = out.strip()
    (entry,) = await eventually(
        lambda: site.inbox(smith), lambda found: len(found) == 1, what="the probe report"
    )
    assert entry["subject"] == f"probe report on {identifier}: would be delivered"
    assert await site.inbox(jones) == []


async def test_x400ctl_probe_submits_one_whose_report_comes_to_the_originator(
    site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    smith, nobody = site.address("Smith"), "C=FR;ADMD= ;PRMD=NOWHERE;O=X;S=Nobody"
    argv = ["probe", "--socket", str(site.socket), "--from", smith, "--to", site.address("Jones")]
    code = await asyncio.to_thread(x400ctl.main, [*argv, "--to", nobody, "--size", "4096"])
    assert code == 0
    printed = capsys.readouterr().out.splitlines()
    identifier = printed[0]
    assert printed[1:] == [f"no route to {nobody}: a probe report follows"]
    reports = await eventually(
        lambda: site.inbox(smith), lambda found: len(found) == 2, what="the probe reports"
    )
    assert sorted(entry["subject"] for entry in reports) == [
        f"probe report on {identifier}: would be delivered",  # Jones
        f"probe report on {identifier}: would not be delivered",  # no route to Nobody
    ]
