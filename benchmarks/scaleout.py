"""Scale-out benchmark: site A as one or two ``x400-mta`` processes sending to one site B.

    python benchmarks/scaleout.py [--messages 1000] [--rounds 3]
                                  [--postgres postgresql+psycopg://postgres@127.0.0.1/test]

Three configurations of A, run in interleaved rounds (each round runs each once, on fresh
sites), so that a drift of the shared machine's speed touches them alike:

* ``sqlite-1``: one process of A on its SQLite store;
* ``pg-1``: one process of A on PostgreSQL (a fresh schema of the given database);
* ``pg-2``: two processes of A (same name, their own state directories, listeners on
  127.0.0.1 and 127.0.0.2) on one PostgreSQL schema, the queue shared.

B is one process on SQLite; its peer entry for A names both of A's hosts.  Each run
submits ``--messages`` messages of 1 KB (routine) through A's local API, split evenly
over A's processes (8 clients each, as in :mod:`benchmarks.relay`), and times from the
first submission to the last delivery committed at B.  Besides msgs/s it prints the CPU
seconds B and A's processes used in the run, which shows which side is the cap.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, make_url  # noqa: E402

from benchmarks.relay import (  # noqa: E402
    MTA,
    Site,
    _free_ports,
    local_users,
    permanent_slots_ready,
    submit_many,
    wait_delivered,
)

DSCPS = ("CS0", "CS1", "CS2", "CS3")
SLOTS = (
    (["override", "flash"], "CS3", "permanent", 1),
    (["immediate"], "CS2", "permanent", 1),
    (["priority"], "CS1", "permanent", 1),
    (["routine", "deferred"], "CS0", "on-demand", 2),
)
A_HOSTS = ("127.0.0.1", "127.0.0.2")
CONFIGURATIONS = ("sqlite-1", "pg-1", "pg-2")


def config_text(
    name: str,
    label: str,
    address: str,
    ports: dict[str, int],
    peer: str,
    peer_hosts: tuple[str, ...],
    peer_ports: dict[str, int],
    database: str | None,
) -> str:
    """One process's file: ``name`` is the site's, ``label`` the process's own (its
    state directory)."""
    domain, peer_domain = (f"C=GB;ADMD= ;PRMD=SITE{n[-1]}" for n in (name, peer))
    listeners = "".join(
        f'[[listeners]]\naddress = "{address}"\nport = {ports[d]}\ndscp = "{d}"\n\n' for d in DSCPS
    )
    slots = "".join(
        f"[[peers.slots]]\nprecedences = {json.dumps(p)}\nport = {peer_ports[d]}\n"
        f'dscp = "{d}"\nmode = "{m}"\nmax_connections = {n}\nbacklog_threshold = 20\n\n'
        for p, d, m, n in SLOTS
    )
    stored = f"database = {json.dumps(database)}\n" if database else ""
    return (
        f'name = "{name}"\nglobal_domain = "{domain}"\npassword = "pw-{name}"\n'
        f'state_dir = "state-{label}"\nlocal_domains = ["{domain}"]\nlog_level = "warning"\n'
        f"local_users = {json.dumps(local_users(domain))}\n"
        f'{stored}\n{listeners}[[peers]]\nname = "{peer}"\nhost = {json.dumps(list(peer_hosts))}\n'
        f'routes = ["{peer_domain}"]\npeer_password = "pw-{peer}"\n\n{slots}'
    )


@asynccontextmanager
async def schema(url: str) -> AsyncIterator[str]:
    """A fresh PostgreSQL schema of ``url``'s database, dropped afterwards; its URL."""
    name = f"aiox400_scaleout_{uuid.uuid4().hex[:10]}"
    admin = create_engine(url)
    with admin.begin() as connection:
        connection.exec_driver_sql(f'CREATE SCHEMA "{name}"')
    try:
        yield (
            make_url(url)
            .update_query_dict({"options": f"-csearch_path={name}"})
            .render_as_string(hide_password=False)
        )
    finally:
        with admin.begin() as connection:
            connection.exec_driver_sql(f'DROP SCHEMA "{name}" CASCADE')
        admin.dispose()


def cpu_seconds(site: Site) -> float:
    """User and system CPU seconds the site's process has used (proc(5) stat)."""
    assert site.process is not None
    fields = Path(f"/proc/{site.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(configuration: str, count: int, postgres: str) -> tuple[float, float, float]:
    """One run: (msgs/s, B's CPU seconds, A's CPU seconds, all its processes)."""
    processes = 2 if configuration.endswith("-2") else 1
    with tempfile.TemporaryDirectory(prefix="aiox400-scaleout-") as tmp:
        folder = Path(tmp)
        ports = iter(_free_ports(8))
        pa = {d: next(ports) for d in DSCPS}
        pb = {d: next(ports) for d in DSCPS}
        async with _database(configuration, postgres) as database:
            b = Site(
                folder,
                "B",
                config_text("MTA-B", "B", "127.0.0.1", pb, "MTA-A", A_HOSTS[:processes], pa, None),
            )
            sites = [
                Site(
                    folder,
                    f"A{i + 1}",
                    config_text(
                        "MTA-A", f"A{i + 1}", A_HOSTS[i], pa, "MTA-B", ("127.0.0.1",), pb, database
                    ),
                )
                for i in range(processes)
            ]
            try:
                await b.start()
                for site in sites:
                    await site.start()
                for site in sites:
                    await permanent_slots_ready(site)
                b_cpu, a_cpu = cpu_seconds(b), sum(map(cpu_seconds, sites))
                started = time.monotonic()
                shares = [count // processes + (i < count % processes) for i in range(processes)]
                await asyncio.gather(
                    *(
                        submit_many(s, n, 1024, "routine")
                        for s, n in zip(sites, shares, strict=True)
                    )
                )
                ended = await wait_delivered(b, count)
                b_cpu = cpu_seconds(b) - b_cpu
                a_cpu = sum(map(cpu_seconds, sites)) - a_cpu
            finally:
                for site in sites:
                    site.stop()
                b.stop()
    return count / (ended - started), b_cpu, a_cpu


@asynccontextmanager
async def _database(configuration: str, postgres: str) -> AsyncIterator[str | None]:
    if configuration.startswith("sqlite"):
        yield None
        return
    async with schema(postgres) as url:
        yield url


async def main(args: argparse.Namespace) -> None:
    if not os.access(MTA, os.X_OK):
        raise SystemExit(f"{MTA} is missing: run 'make install' first")
    print(
        f"aiox400 scale-out benchmark (Python {sys.version.split()[0]}, {os.cpu_count()} CPUs;"
        f" {args.messages} messages of 1 KB per run, {args.rounds} interleaved rounds)\n"
    )
    results: dict[str, list[tuple[float, float, float]]] = {c: [] for c in CONFIGURATIONS}
    for round_number in range(args.rounds):
        for configuration in CONFIGURATIONS:
            figures = await run(configuration, args.messages, args.postgres)
            results[configuration].append(figures)
            rate, b_cpu, a_cpu = figures
            print(
                f"round {round_number + 1} {configuration}: {rate:,.0f} msgs/s, CPU s: "
                f"B {b_cpu:.1f}, A {a_cpu:.1f}",
                flush=True,
            )
    print("\n| A | msgs/s per round | median | CPU s per run, B / A (median) |")
    print("|---|---|---:|---:|")
    for configuration, runs in results.items():
        rates = ", ".join(f"{r[0]:,.0f}" for r in runs)
        median = statistics.median(r[0] for r in runs)
        b_cpu = statistics.median(r[1] for r in runs)
        a_cpu = statistics.median(r[2] for r in runs)
        print(f"| {configuration} | {rates} | {median:,.0f} | {b_cpu:.1f} / {a_cpu:.1f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1000, help="1 KB messages per run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each running every A")
    parser.add_argument(
        "--postgres",
        default=os.environ.get(
            "AIOX400_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
        ),
        help="a PostgreSQL database A's runs on PostgreSQL make a schema in",
    )
    asyncio.run(main(parser.parse_args()))
