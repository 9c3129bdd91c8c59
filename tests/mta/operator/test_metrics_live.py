"""The Prometheus endpoint of a live daemon, scraped over real HTTP.

Site A serves ``[metrics]``; B is down while A queues messages at two precedences, so
A's queue gauges show them waiting and its slots show no bound connection; once B is
up they are transferred, and the counters, the latency histogram and the connection
gauges move as they must.  Binds refused both ways are counted; the endpoint answers
only GET on its path; a daemon without ``[metrics]`` listens on nothing more, and one
whose ``[metrics]`` table has no ``listen`` does not start.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from mta.daemon import EXIT_CONFIG
from mta.link import BindRefusedError, open_link
from mta.operator.scrape import MAX_CLIENTS, MetricsServer
from p1.association.mtabind import MTABindArgument
from p1.mts.precedence import Precedence
from tests.support.process import MTA
from tests.support.sites import Lab, ReservedPorts, Site, eventually, solo_site

Labels = frozenset[tuple[str, str]]


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Scrape:
    """One scrape's samples: (sample name, labels) -> value, and the family types."""

    samples: dict[tuple[str, Labels], float]
    types: dict[str, str]

    def value(self, name: str, **labels: str) -> float:
        return self.samples.get((name, frozenset(labels.items())), 0.0)

    def total(self, name: str, **labels: str) -> float:
        """The sum over every series of ``name`` whose labels include ``labels``."""
        wanted = set(labels.items())
        return sum(v for (n, found), v in self.samples.items() if n == name and wanted <= found)

    def names(self) -> set[str]:
        """Every sample name the families define, whether or not they have series yet."""
        suffixes = {
            "counter": ("_total", "_created"),
            "histogram": ("_bucket", "_count", "_sum", "_created"),
            "gauge": ("",),
            "info": ("_info",),
        }
        return {name + s for name, kind in self.types.items() for s in suffixes.get(kind, ("",))}


async def http(port: int, request: bytes) -> Answer:
    """Send ``request`` to 127.0.0.1:``port``; the answer, read to the end."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        data = await reader.read()
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("ascii").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    assert int(headers["content-length"]) == len(body)
    return Answer(int(status_line.split(" ")[1]), headers, body)


async def scrape(port: int, path: str = "/metrics") -> Scrape:
    answer = await http(port, f"GET {path} HTTP/1.1\r\nHost: mta\r\n\r\n".encode())
    assert answer.status == 200, answer
    assert answer.headers["content-type"] == CONTENT_TYPE_LATEST
    samples: dict[tuple[str, Labels], float] = {}
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(answer.body.decode("utf-8")):
        types[family.name] = family.type
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return Scrape(samples, types)


@pytest.fixture
async def metrics_port(lab: Lab) -> AsyncIterator[int]:
    """A port for A's endpoint, held for the test; A configured to serve on it."""
    reserved = ReservedPorts(1)
    port = reserved.ports[0]
    lab.a.settings["metrics"] = {"listen": f"127.0.0.1:{port}"}
    try:
        yield port
    finally:
        await lab.stop()
        reserved.close()


def _queued(at: Scrape, precedence: Precedence, state: str) -> float:
    return at.value(
        "aiox400_queue_recipients", peer="MTA-B", precedence=precedence.label, state=state
    )


def _out(at: Scrape, precedence: Precedence, outcome: str = "confirmed") -> float:
    labels = {"peer": "MTA-B", "precedence": precedence.label}
    return at.value("aiox400_transfers_total", **labels, direction="out", outcome=outcome)


@pytest.mark.slow
async def test_the_figures_move_with_a_transfer(lab: Lab, metrics_port: int) -> None:
    a = await lab.a.start()  # B is down: what A queues waits
    first = await scrape(metrics_port)
    assert _out(first, Precedence.FLASH) == 0
    assert _queued(first, Precedence.FLASH, "pending") == 0
    assert first.value("aiox400_store_up") == 1
    assert first.value("aiox400_store_bytes", part="database") > 0
    smith, bob = lab.a.address("Smith"), lab.b.address("Bob")
    await lab.a.send(smith, bob, Precedence.FLASH, count=3)
    await lab.a.send(smith, bob, Precedence.ROUTINE, count=2)
    held = await scrape(metrics_port)
    waiting = {p: _queued(held, p, "pending") + _queued(held, p, "in_flight") for p in Precedence}
    assert waiting[Precedence.FLASH] == 3
    assert waiting[Precedence.ROUTINE] == 2
    assert waiting[Precedence.IMMEDIATE] == 0
    age = held.value("aiox400_queue_oldest_age_seconds", peer="MTA-B", precedence="flash")
    assert 0 < age < 600
    assert held.value("aiox400_queue_oldest_age_seconds", peer="MTA-B", precedence="immediate") == 0
    assert held.total("aiox400_slot_connections", peer="MTA-B", state="idle") == 0
    assert held.total("aiox400_slot_connections", peer="MTA-B", state="transferring") == 0
    assert held.value("aiox400_slot_state", peer="MTA-B", slot="override+flash", state="up") == 0

    await lab.b.start()

    async def settled() -> Scrape:
        return await scrape(metrics_port)

    def counted(s: Scrape) -> bool:
        # (a confirmation is marked in the queue with the connection's next claim, a
        # moment after the transfer is counted; and each permanent slot binds again once
        # its own reconnection backoff ends, which may be after the transfers)
        sent = ((Precedence.FLASH, 3), (Precedence.ROUTINE, 2))
        marked = all(_out(s, p) == n and _queued(s, p, "transferred") == n for p, n in sent)
        permanent = ("override+flash", "immediate", "priority")
        up = all(s.value("aiox400_slot_state", peer="MTA-B", slot=k, state="up") for k in permanent)
        return marked and up

    after = await eventually(
        settled, counted, what="five transfers counted and marked, the permanent slots up"
    )
    for precedence, sent in ((Precedence.FLASH, 3), (Precedence.ROUTINE, 2)):
        labels = {"peer": "MTA-B", "precedence": precedence.label}
        assert after.value("aiox400_transfer_duration_seconds_count", **labels) == sent
        assert 0 < after.value("aiox400_transfer_duration_seconds_sum", **labels) < 60 * sent
        inf = after.value("aiox400_transfer_duration_seconds_bucket", **labels, le="+Inf")
        assert inf == sent
        assert after.value("aiox400_queue_wait_seconds_count", **labels) == sent
        assert _queued(after, precedence, "pending") == 0
        assert _queued(after, precedence, "transferred") == sent
        octets = after.value("aiox400_transferred_bytes_total", **labels, direction="out")
        assert 300 * sent < octets < 5000 * sent  # (a short IPM each)
    assert _out(after, Precedence.FLASH, "failed") == 0
    assert after.value("aiox400_queue_oldest_age_seconds", peer="MTA-B", precedence="flash") == 0
    # The three permanent slots hold a bound connection (idle, or finishing a transfer).
    for slot in ("override+flash", "immediate", "priority"):
        bound = sum(
            after.value("aiox400_slot_connections", peer="MTA-B", slot=slot, state=state)
            for state in ("idle", "transferring")
        )
        assert bound == 1, slot
        assert after.value("aiox400_slot_state", peer="MTA-B", slot=slot, state="up") == 1
    # B's permanent slots bound to A: inbound connections, all bound.
    assert after.value("aiox400_inbound_connections", state="bound") >= 3
    assert after.value("aiox400_inbound_connections", state="unbound") == 0
    assert after.value("aiox400_store_bytes", part="database") > 0
    assert after.value("process_resident_memory_bytes") > 0
    assert after.value("aiox400_build_info", version=_version_of(after)) == 1
    assert a.metrics.registry is not lab.b.running.metrics.registry


def _version_of(at: Scrape) -> str:
    for name, labels in at.samples:
        if name == "aiox400_build_info":
            return dict(labels)["version"]
    raise AssertionError("no aiox400_build_info")


@pytest.mark.slow
async def test_refused_binds_are_counted_both_ways(lab: Lab, metrics_port: int) -> None:
    # B expects another password of A: A's binds to B are refused.
    lab.b.settings["peers"][0]["peer_password"] = "not-what-a-sends"
    await lab.b.start()
    await lab.a.start()
    port = lab.a.running.listening_ports[0]
    for name, password in (("MTA-B", "wrong"), ("MTA-X", "secret-b")):
        argument = MTABindArgument(initiator_name=name, password=password)
        with pytest.raises(BindRefusedError):
            await open_link("127.0.0.1", port, argument)

    async def now() -> Scrape:
        return await scrape(metrics_port)

    seen = await eventually(
        now,
        lambda s: s.total("aiox400_bind_failures_total", direction="out") >= 3,
        what="A's binds refused by B, one per permanent slot",
    )
    labels = {"direction": "in", "reason": "wrong-password"}
    assert seen.value("aiox400_bind_failures_total", peer="MTA-B", **labels) == 1
    unknown = {"direction": "in", "reason": "unknown-mta"}
    assert seen.value("aiox400_bind_failures_total", peer="", **unknown) == 1
    refused = seen.total(
        "aiox400_bind_failures_total", peer="MTA-B", direction="out", reason="authentication-error"
    )
    assert refused >= 3
    assert seen.total("aiox400_slot_connections", peer="MTA-B", state="idle") == 0


async def test_only_get_on_the_path_is_answered(lab: Lab, metrics_port: int) -> None:
    await lab.a.start()
    cases = [
        (b"GET /other HTTP/1.1\r\n\r\n", 404),
        (b"GET / HTTP/1.0\r\n\r\n", 404),
        (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405),
        (b"GET /metrics\r\n\r\n", 400),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400),
        (b"GET /metrics HTTP/1.1\r\nX-Long: " + b"x" * 20000 + b"\r\n\r\n", 431),
    ]
    for request, status in cases:
        answer = await http(metrics_port, request)
        assert answer.status == status, request[:40]
        assert not answer.body.startswith(b"# HELP"), request[:40]
    allowed = await http(metrics_port, b"PUT /metrics HTTP/1.1\r\n\r\n")
    assert allowed.headers["allow"] == "GET, HEAD"
    with_query = await http(metrics_port, b"GET /metrics?name[]=x HTTP/1.1\r\n\r\n")
    assert with_query.status == 200
    assert b"aiox400_queue_recipients" in with_query.body


async def test_head_is_answered_as_get_without_the_body(lab: Lab, metrics_port: int) -> None:
    """HEAD (curl -I, health checks) gets GET's status and headers and no body: the
    connection closes right after the head."""
    await lab.a.start()
    for path, status, content_type in (
        ("/metrics", 200, CONTENT_TYPE_LATEST),
        ("/other", 404, "text/plain; charset=utf-8"),
    ):
        reader, writer = await asyncio.open_connection("127.0.0.1", metrics_port)
        try:
            writer.write(f"HEAD {path} HTTP/1.1\r\nHost: mta\r\n\r\n".encode())
            await writer.drain()
            data = await reader.read()
        finally:
            writer.close()
        head, _, body = data.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("ascii").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        assert (int(status_line.split(" ")[1]), body) == (status, b""), data[:200]
        assert headers["content-type"] == content_type
        assert int(headers["content-length"]) > 0
    got = await http(metrics_port, b"GET /metrics HTTP/1.1\r\n\r\n")
    assert got.status == 200 and got.body.startswith(b"# HELP")


async def test_a_scrape_that_cannot_read_the_store_answers_503(
    lab: Lab, metrics_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    service = await lab.a.start()

    def broken(*args: object) -> None:
        raise OSError(5, "Input/output error")

    original = service.db.run

    async def failing(function: object, *args: object) -> object:
        return await original(broken)

    service.db.run = failing  # type: ignore[method-assign, assignment]
    try:
        for _ in range(3):
            answer = await http(metrics_port, b"GET /metrics HTTP/1.1\r\n\r\n")
            assert answer.status == 503
    finally:
        service.db.run = original  # type: ignore[method-assign]
    lines = [r for r in caplog.records if r.name == "aiox400.metrics" and "503" in r.getMessage()]
    assert len(lines) == 1  # rate-limited
    assert lines[0].exc_info is None
    assert (await scrape(metrics_port)).value("aiox400_store_up") == 1


def _listening_sockets() -> set[int]:
    """Inodes of the TCP sockets this process has listening."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        found = re.fullmatch(r"socket:\[(\d+)\]", target)
        if found:
            mine.add(int(found[1]))
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                listening.add(int(fields[9]))
    return mine & listening


async def test_without_metrics_nothing_more_listens(tmp_path: Path) -> None:
    before = _listening_sockets()
    site: Site = solo_site(tmp_path / "off")
    service = await site.start()
    try:
        assert _listening_sockets() == before
        assert not service.config.metrics.enabled
    finally:
        await site.stop()
    reserved = ReservedPorts(1)
    on = solo_site(tmp_path / "on")
    on.settings["metrics"] = {"listen": f"127.0.0.1:{reserved.ports[0]}"}
    await on.start()
    try:
        assert len(_listening_sockets() - before) == 1
        assert (await scrape(reserved.ports[0])).value("aiox400_store_up") == 1
    finally:
        await on.stop()
        reserved.close()
    assert _listening_sockets() == before


@pytest.mark.slow
async def test_idle_connections_do_not_keep_a_scrape_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    reserved = ReservedPorts(1)
    port = reserved.ports[0]
    site = solo_site(tmp_path)
    site.settings["metrics"] = {"listen": f"127.0.0.1:{port}"}
    service = await site.start()
    idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3 * MAX_CLIENTS)]
    try:
        server = service._scrape
        assert server is not None
        await eventually(  # the server has taken them: every place is held by one
            lambda: _accepted(server), lambda n: n >= MAX_CLIENTS, what="idle connections"
        )
        url = f"http://127.0.0.1:{port}/metrics"
        for _ in range(3):  # as a scraper does, again and again while they stay
            with await asyncio.to_thread(urllib.request.urlopen, url, timeout=30) as answer:
                assert answer.status == 200
                assert b"aiox400_store_up 1.0" in await asyncio.to_thread(answer.read)
        assert len(server._clients) <= MAX_CLIENTS
        displaced = [r for r in caplog.records if "closed the one idle longest" in r.message]
        assert len(displaced) == 1  # one line a minute, however many were displaced
    finally:
        for _, writer in idle:
            writer.close()
        await site.stop()
        reserved.close()


async def _accepted(server: MetricsServer) -> int:
    return len(server._clients)


@pytest.mark.slow
def test_a_metrics_table_without_listen_stops_the_start(tmp_path: Path) -> None:
    site = solo_site(tmp_path)
    site.settings["metrics"] = {}
    config = site.write()
    assert "\n[metrics]\n" in config.read_text()
    done = subprocess.run([str(MTA), "--config", str(config)], capture_output=True, timeout=60)
    assert done.returncode == EXIT_CONFIG, done.stderr
    assert f"{config}: metrics.listen is missing: expected address:port" in done.stderr.decode()
    assert b"Traceback" not in done.stderr


DASHBOARD = Path(__file__).parents[3] / "deploy" / "grafana" / "aiox400.json"
_NAME = re.compile(r"\b(?:aiox400|process)_[a-z0-9_]+\b")


def _queries(node: object) -> list[str]:
    """Every PromQL text of a Grafana dashboard: the panels' and the variables'."""
    if isinstance(node, dict):
        found = [v for k, v in node.items() if k in ("expr", "definition") and isinstance(v, str)]
        return found + [q for v in node.values() for q in _queries(v)]
    if isinstance(node, list):
        return [q for item in node for q in _queries(item)]
    return []


async def test_the_dashboard_asks_only_for_what_the_daemon_exports(
    lab: Lab, metrics_port: int
) -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert dashboard["__inputs"][0]["name"] == "DS_PROMETHEUS"
    assert {v["name"] for v in dashboard["templating"]["list"]} >= {"peer"}
    asked = {name for query in _queries(dashboard) for name in _NAME.findall(query)}
    assert len(asked) >= 10
    await lab.a.start()
    exported = (await scrape(metrics_port)).names()
    assert asked - exported == set()
    assert "aiox400_queue_recipients" in asked
