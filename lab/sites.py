"""The two MTAs of the lab: ``x400-mta`` in each site's namespace, driven by its local API.

The configurations are config/examples/site-a.toml and site-b.toml with the loopback
addresses replaced by the sites' (listeners and peer host), the state directories moved
into the lab's temporary folder, the first retry after a failed connect shortened to one
second (a permanent slot that started before its peer waits no longer) and
``tcp_congestion = "cubic"``: the router's sharing of the link depends on the senders'
congestion control, and the host's default (often BBR) cannot be changed by sysctl inside
a namespace.  Over an HF wire (``slow_link``) only A's flash slot is permanent (the others,
and all of B's, are on demand: connections set up at once flood a slow half-duplex link),
the first retry stays at 30 s (``SLOW_LINK_RETRY``), and the daemons allow ten minutes for
a bind and for a peer's progress (``SLOW_LINK_LIMITS``): a round trip there is two
turnarounds and more, and a transmission the other way may hold a PDU for two minutes.
The unix sockets of the local API live in that folder, on the host's file
system, so the lab process reaches them from outside the namespaces.

A transfer is timed from just before the ``submit`` request at A to the moment B saw the
delivery committed to its store (the ``stored_at`` of B's ``wait`` answer, on the same
clock, as ``x400 inbox --follow`` learns of it).  Its goodput counts the message body's
octets only (the IA5 text of ``canned_body``), not the IPM heading, the P1 envelope or the
OSI and TCP/IP headers: what a user sent, per second of what a user waits.

Public API::

    site_config(example_text, *, address, peer_address, folder, name, slow_link=False) -> str
    over_acp142(config_text, *, address, peer_address, link) -> str   the peer over ACP 142
    flash_on_demand(config_text, idle_timeout) -> str   the flash slot made on-demand
    Site(name, namespace, folder)           .start(), .stop(), .api(request, payload)
        await .reload(config_text, mode)    SIGHUP with a new file; until the flash slot is in mode
        await .flash_slot() -> dict         the flash slot's ``channels`` entry
    two_sites(topology, folder) -> async context manager of (Site, Site)
    Watch(site, user)                       async with: when each delivery was committed
    Transfer                                one message: size, precedence, times
    async submit(a, watch, size, precedence, content=None, *, delivery_report=False)
        -> Pending   (.stored(watch, timeout))
    async send(a, watch, size, precedence, timeout, content=None) -> Transfer
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from client.api import AsyncConnection, call_async
from client.x400 import canned_body, text_ipm
from lab.topology import LabError, Topology
from lab.topology import Site as Place
from p1.ipms.ipm import P772_CONTENT_TYPE
from p1.mts.orname import parse_orname

EXAMPLES = Path(__file__).resolve().parents[1] / "config" / "examples"
MTA = str(Path(sys.executable).with_name("x400-mta"))
USER_A = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Smith"
USER_B = "C=GB;ADMD= ;PRMD=SITEB;O=FOB;S=Jones"
CONGESTION = "cubic"
START_TIMEOUT = 60.0
"""Seconds a daemon may take to answer its local API after it was started."""
SLOTS_TIMEOUT = 60.0
"""Seconds A's permanent slots may take to connect and bind."""
SLOW_SLOTS_TIMEOUT = 900.0
"""The same over an HF wire (several round trips of two turnarounds each, per slot)."""
SLOW_LINK_RETRY = "30s"
"""The first retry of a message over an HF wire (the example's own)."""
SLOW_LINK_LIMITS = """
[limits]
bind_timeout = "10m"
progress_interval = "10m"
"""
"""Appended to both sites' configurations over an HF wire."""
SLOW_SLOT_TIMEOUTS = 'connect_timeout = "2m"\ntransfer_timeout = "2h"\n'
"""Each slot's over an HF wire: at 75 bit/s a SYN and its answer alone take over 10 s (the
default connect_timeout), and a transfer of 1 MB takes hours at the lowest rates."""


def site_config(
    example: str,
    *,
    address: str,
    peer_address: str,
    folder: Path,
    name: str,
    slow_link: bool = False,
) -> str:
    """The example site's configuration text, moved into the lab (see the module's text)."""
    state = folder / name
    replacements = (
        ('address = "127.0.0.1"', f'address = "{address}"'),
        ('host = "127.0.0.1"', f'host = "{peer_address}"'),
        (f'state_dir = "state/{name}"', f'state_dir = "{state}"'),
        (f'"sqlite:///state/{name}/aiox400.db"', f'"sqlite:///{state}/aiox400.db"'),
        ('log_level = "info"', f'log_level = "warning"\ntcp_congestion = "{CONGESTION}"'),
        ('initial = "30s"', f'initial = "{SLOW_LINK_RETRY if slow_link else "1s"}"'),
    )
    text = example
    for old, new in replacements:
        if old not in text:
            raise LabError(f"config/examples/{name}.toml no longer has {old}: update lab/sites.py")
        text = text.replace(old, new)
    if slow_link:
        if "\n[limits]" in text:
            raise LabError(f"config/examples/{name}.toml has [limits] now: update lab/sites.py")
        text = _one_permanent_slot(text, keep_flash=name == "site-a") + SLOW_LINK_LIMITS
    return text


@dataclass(frozen=True, slots=True, kw_only=True)
class Acp142Link:
    """How the sites speak ACP 142 to each other (``[acp142]``, ``[peers.acp142]``)."""

    rate: int
    """bit/s the link carries: each site paces its datagrams to it."""
    max_pdu_size: int
    ack_delay: float
    retransmission: float


def over_acp142(text: str, *, address: str, peer_address: str, link: Acp142Link) -> str:
    """A site's configuration ``text`` with its peer reached over ACP 142 (STANAG 4406
    Annex E) instead of its P1 slots: same peer, same routes, node IDs from the addresses."""
    start = text.find("\n[[peers.slots]]")
    if start < 0 or "\n[[peers]]" not in text[:start]:
        raise LabError("config/examples' peers have no slots: update lab/sites.py")
    tail = text.find("\n# Who may use", start)
    kept = text[:start] + (text[tail:] if tail >= 0 else "")
    kept = kept.replace("\n[[peers]]\n", '\n[[peers]]\ntransport = "acp142"\n', 1)
    return (
        kept
        + f"""
[peers.acp142]
retransmission = {link.retransmission:g}

[acp142]
address = "{address}"
rate = {link.rate}
max_pdu_size = {link.max_pdu_size}
ack_delay = {link.ack_delay:g}
"""
    )


def _one_permanent_slot(text: str, *, keep_flash: bool) -> str:
    """Every permanent slot on demand, but the flash slot when ``keep_flash``: over a slow
    half-duplex link six connections set up at once, each given up after 10 s, flood it
    (at 1,200 bit/s none of them came up in minutes)."""
    slots = text.split("[[peers.slots]]")
    for i, slot in enumerate(slots[1:], start=1):
        if not (keep_flash and slot.startswith("\n" + _FLASH_SLOT)):
            slot = slot.replace('mode = "permanent"', 'mode = "on-demand"')
        slots[i] = re.sub(r'(\nmode = "[a-z-]+"\n)', r"\1" + SLOW_SLOT_TIMEOUTS, slot, count=1)
    return "[[peers.slots]]".join(slots)


_FLASH_SLOT = 'precedences = ["override", "flash"]\nport = 5003\ndscp = "CS3"\nmode = "permanent"\n'


def flash_on_demand(text: str, idle_timeout: float) -> str:
    """Site A's configuration ``text`` with its flash slot ``on-demand``, closing its
    connection after ``idle_timeout`` seconds without traffic."""
    if _FLASH_SLOT not in text:
        raise LabError("config/examples/site-a.toml's flash slot changed: update lab/sites.py")
    on_demand = _FLASH_SLOT.replace(
        'mode = "permanent"', f'mode = "on-demand"\nidle_timeout = {idle_timeout:g}'
    )
    return text.replace(_FLASH_SLOT, on_demand)


class Site:
    """One MTA process in a namespace, and its local API."""

    def __init__(self, name: str, place: Place, topology: Topology, folder: Path, text: str):
        self.name = name
        self.place = place
        self.prefix = topology.exec_prefix(place.namespace)
        self.config = folder / f"{name}.toml"
        self.config.write_text(text)
        self.socket = folder / name / "control.sock"
        self.log = folder / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    async def start(self) -> None:
        with self.log.open("ab") as log:
            # "ip netns exec" execs the daemon: the process is the daemon's own.
            self.process = subprocess.Popen(
                [*self.prefix, MTA, "-c", str(self.config), "--no-timestamps"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # (a Ctrl-C is the lab's to handle, in order)
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LabError(f"{self.name} exited at start: see {self.log}")
            with contextlib.suppress(OSError):
                await self.api({"op": "status"})
                return
            await asyncio.sleep(0.1)
        raise LabError(f"{self.name} did not answer within {START_TIMEOUT:g} s: see {self.log}")

    def stop(self) -> None:
        """Stop the daemon (SIGTERM, then SIGKILL after 30 s); safe to call again."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    async def reload(self, text: str, mode: str, timeout: float = 30.0) -> None:
        """Write ``text`` as the configuration and reload it (SIGHUP); returns once the
        flash slot runs in ``mode``."""
        if self.process is None:
            raise LabError(f"{self.name} is not running")
        self.config.write_text(text)
        self.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + timeout
        while (await self.flash_slot())["mode"] != mode:
            if time.monotonic() > deadline:
                raise LabError(f"{self.name} did not reload its flash slot: see {self.log}")
            await asyncio.sleep(0.1)

    async def flash_slot(self) -> dict[str, Any]:
        """The flash slot's entry of the ``channels`` answer (mode, connections)."""
        slots = (await self.api({"op": "channels"}))["slots"]
        return next(slot for slot in slots if "flash" in slot["precedences"])

    async def api(self, request: dict[str, Any], payload: bytes = b"") -> dict[str, Any]:
        response, _ = await call_async(self.socket, request, payload)
        return response

    async def slots_ready(self, timeout: float = SLOTS_TIMEOUT) -> None:
        """Until each permanent slot holds an open, idle connection."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            slots = (await self.api({"op": "channels"}))["slots"]
            if all(
                any(c["state"] == "idle" for c in slot["connections"])
                for slot in slots
                if slot["mode"] == "permanent"
            ):
                return
            await asyncio.sleep(0.1)
        raise LabError(f"{self.name}'s permanent slots did not connect: see {self.log}")


@contextlib.asynccontextmanager
async def two_sites(
    topology: Topology, folder: Path, acp142: Acp142Link | None = None
) -> AsyncIterator[tuple[Site, Site]]:
    """MTA-A in site A's namespace, MTA-B in site B's, running; both stopped at the end.
    ``acp142``: each reaches the other over ACP 142 instead of P1."""
    a_place, b_place = topology.site_a, topology.site_b
    slow = topology.hf is not None

    def text(name: str, me: Place, them: Place) -> str:
        written = site_config(
            (EXAMPLES / f"{name}.toml").read_text(),
            address=me.address,
            peer_address=them.address,
            folder=folder,
            name=name,
            slow_link=slow,
        )
        if acp142 is None:
            return written
        return over_acp142(written, address=me.address, peer_address=them.address, link=acp142)

    a = Site("site-a", a_place, topology, folder, text("site-a", a_place, b_place))
    b = Site("site-b", b_place, topology, folder, text("site-b", b_place, a_place))
    try:
        await b.start()
        await a.start()
        if acp142 is None:
            await a.slots_ready(SLOW_SLOTS_TIMEOUT if slow else SLOTS_TIMEOUT)
        yield a, b
    finally:
        a.stop()
        b.stop()


@dataclass(frozen=True, slots=True)
class Transfer:
    """One message from A's submission to B's store."""

    size: int
    """Body octets."""
    precedence: str
    submitted: datetime
    """Just before the submit request was sent to A."""
    stored: datetime
    """When B saw its delivery committed."""

    @property
    def seconds(self) -> float:
        return (self.stored - self.submitted).total_seconds()

    @property
    def kbit_s(self) -> float:
        """Goodput: body bits per second of the transfer's time, in kbit/s (1000 bit/s)."""
        return self.size * 8 / self.seconds / 1000


class Watch:
    """When B saw each delivery to ``user`` committed, by MTS identifier (``wait``)."""

    def __init__(self, site: Site, user: str = USER_B) -> None:
        self.site = site
        self.user = user
        self.stored: dict[str, datetime] = {}
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Watch:
        first = await self.site.api({"op": "wait", "user": self.user, "timeout": 0})
        self._task = asyncio.create_task(self._run(int(first["after"])))
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self, after: int) -> None:
        connection = await AsyncConnection.open(self.site.socket)
        try:
            while True:
                request = {"op": "wait", "user": self.user, "after": after, "timeout": 30}
                response, _ = await connection.call(request)
                answered = datetime.now(UTC)
                at = response["stored_at"]
                async with self._changed:
                    for message in response["messages"]:
                        when = datetime.fromisoformat(at) if at else answered
                        self.stored[message["mts_identifier"]] = when
                    self._changed.notify_all()
                after = int(response["after"])
        finally:
            await connection.close()

    async def stored_at(self, mts_identifier: str, timeout: float) -> datetime:
        async with asyncio.timeout(timeout), self._changed:
            while mts_identifier not in self.stored:
                if self._task is not None and self._task.done():
                    raise LabError(f"the watch on {self.site.name} ended: see {self.site.log}")
                await self._changed.wait()
            return self.stored[mts_identifier]


@dataclass(frozen=True, slots=True)
class Pending:
    """A message submitted at A, not yet known stored at B."""

    mts_identifier: str
    size: int
    precedence: str
    submitted: datetime

    async def stored(self, watch: Watch, timeout: float) -> Transfer:
        """Its transfer once B stored it; TimeoutError after ``timeout`` seconds."""
        at = await watch.stored_at(self.mts_identifier, timeout)
        return Transfer(
            size=self.size, precedence=self.precedence, submitted=self.submitted, stored=at
        )


async def submit(
    a: Site,
    watch: Watch,
    size: int,
    precedence: str,
    content: bytes | None = None,
    *,
    delivery_report: bool = False,
) -> Pending:
    """Submit a message of ``size`` body octets at ``precedence`` at A, to ``watch``'s user:
    ``content`` (an encoded IPM with a body of ``size`` octets), by default one of canned
    IA5 text; ``delivery_report``: its originator asks for one."""
    body = content or text_ipm(
        parse_orname(USER_A), parse_orname(watch.user), f"lab {precedence}", canned_body(size)
    )
    request = {
        "op": "submit",
        "originator": USER_A,
        "recipients": [watch.user],
        "precedence": precedence,
        "content_type": P772_CONTENT_TYPE,
        "delivery_report": delivery_report,
    }
    submitted = datetime.now(UTC)
    response = await a.api(request, body)  # (ApiError if A refuses it)
    return Pending(str(response["mts_identifier"]), size, precedence, submitted)


async def send(
    a: Site,
    watch: Watch,
    size: int,
    precedence: str,
    *,
    timeout: float,
    content: bytes | None = None,
) -> Transfer:
    """Submit a message of ``size`` body octets at ``precedence`` at A (``content``, as for
    :func:`submit`); its transfer once B stored it (LabError when that takes longer than
    ``timeout`` seconds)."""
    pending = await submit(a, watch, size, precedence, content)
    try:
        return await pending.stored(watch, timeout)
    except TimeoutError:
        raise LabError(
            f"a {precedence} message of {size} octets was not stored at B within {timeout:g} s"
        ) from None
