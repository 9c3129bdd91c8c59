"""Two MTAs on loopback for the daemon's tests: site A and site B of the lab.

Each site's configuration is a plain dict that a test may change before the site starts;
every O/R name under a site's domain is one of its users (``accept_any_recipient``) unless
the test lists them (:meth:`Site.list_users`);
:meth:`Site.start` writes it as TOML into the test's directory and reads it back with
:func:`config.loader.load_config`, so the daemon runs exactly as an operator's file would
configure it.  B's listener ports are in A's slots and A's in B's, one listener and one
slot per DSCP, as in ``config/examples``, so both must be known before either file is
written; and some tests start A while B is down, or restart B, so B's ports must stay
B's while nothing listens on them.  The loader refuses port 0, so the lab reserves its
ports (:class:`ReservedPorts`) for as long as it exists; a test that needs a port the
running daemon bound reads it back (``Service.listening_ports``).

The local API is called with the client's own code, which blocks on its socket: it runs
in a worker thread (:func:`asyncio.to_thread`) so the event loop keeps serving the
daemons.  Nothing here sleeps to synchronise: :func:`eventually` polls a condition until
a deadline that only a failing test reaches.

Public API::

    Lab.create(directory, slots=LAB_SLOTS) -> Lab(a, b)      both sites, not started
        await .start() / .stop() / .close()   (close: stopped for good, ports given back)
    solo_site(directory) -> Site                             one MTA without peers
    Site.start() / .stop() / .service / .runner(...) / .address(surname) / .list_users(*names)
        await .api(request, payload) / .inbox(user) / .read(user, id) / .x400(*argv)
        await .send(sender, recipient, precedence, ...) -> [MTS identifiers]
    SlotSpec, LAB_SLOTS, A, B (site identities)
    site_settings(me, ports, slots) / peer_settings(them, ports, slots)   configuration dicts
    to_toml(data) -> str
    ReservedPorts(count) .ports / .close()   ports held for the lab's daemons
    message_from_a(local_identifier, recipient, *, internal_trace, subject, originator)
                                              a message as MTA-A transfers it to B
    await transfer_as_a(site, apdu)           bind to ``site`` as MTA-A, transfer, release
    await eventually(probe, ok, *, what, timeout) -> the probe's last value
    await until(condition, *, what, timeout)
"""

from __future__ import annotations

import asyncio
import io
import json
import socket
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from client import x400
from client.api import call
from config.loader import load_config
from mta.intake.plan import domain_of
from mta.link import open_link
from mta.outbound.channels import SlotRunner
from mta.service import Service
from p1.association.mtabind import MTABindArgument
from p1.ipms.ipm import (
    IPM,
    P772_CONTENT_TYPE,
    ContentKind,
    Heading,
    IPMIdentifier,
    ORDescriptor,
    Recipient,
    TextBodyPart,
    encode_ipm,
)
from p1.mts.envelope import (
    Message,
    MessageEnvelope,
    MTSIdentifier,
    PerRecipientIndicators,
    RecipientField,
    Report,
    TraceEntry,
    decode_mts_apdu,
    encode_mts_apdu,
)
from p1.mts.orname import ORName, parse_orname
from p1.mts.precedence import Precedence
from p1.mts.trace import InternalTraceEntry

T = TypeVar("T")
JsonObject = dict[str, Any]

DEADLINE = 30.0
"""Seconds a condition may take to come true: reached only when a test fails."""
_POLL = 0.02


# --- polling -----------------------------------------------------------------------------


async def eventually(
    probe: Callable[[], Awaitable[T]],
    ok: Callable[[T], bool],
    *,
    what: str,
    timeout: float = DEADLINE,
) -> T:
    """Poll ``probe`` every 20 ms until ``ok`` holds for its value; that value.

    Fails the test, showing the last value, when ``timeout`` seconds pass first.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await probe()
        if ok(value):
            return value
        if loop.time() > deadline:
            pytest.fail(f"not within {timeout:g} s: {what}; last seen: {value!r}")
        await asyncio.sleep(_POLL)


async def until(condition: Callable[[], bool], *, what: str, timeout: float = DEADLINE) -> None:
    """Poll ``condition`` every 20 ms until it holds; fail the test after ``timeout``."""

    async def probe() -> bool:
        return condition()

    await eventually(probe, bool, what=what, timeout=timeout)


# --- configuration -----------------------------------------------------------------------


class ReservedPorts:
    """``count`` distinct TCP ports on 127.0.0.1, held until :meth:`close` (or until the
    object is collected) for daemons that must be configured with them before they listen.

    Each port is held by a socket bound with ``SO_REUSEADDR`` that never listens.  On
    Linux, such a socket keeps its port out of the kernel's choices for any other bind to
    port 0 and for the local port of outgoing connections, and a connection to it is
    refused, as to a port nobody serves; yet a server that sets ``SO_REUSEADDR`` too (as
    asyncio's do) can bind the port and listen on it, as often as it is started again.
    So no other test can take a lab's port between the moment it is chosen and the
    moment the daemon listens, nor while the daemon is stopped.
    """

    def __init__(self, count: int) -> None:
        sockets: list[socket.socket] = []
        self._finalizer = weakref.finalize(self, _close_all, sockets)
        try:
            for _ in range(count):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sockets.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", 0))
        except BaseException:
            self.close()
            raise
        self.ports: list[int] = [int(sock.getsockname()[1]) for sock in sockets]

    def close(self) -> None:
        """Give the ports back (once their daemons are stopped for good)."""
        self._finalizer()


def _close_all(sockets: list[socket.socket]) -> None:
    for sock in sockets:
        sock.close()


def to_toml(data: Mapping[str, Any], prefix: str = "") -> str:
    """``data`` as TOML: strings, numbers, booleans, lists of those, tables and arrays of
    tables (nested, like ``[[peers.slots]]``)."""
    lines = [f"{key} = {_toml_value(value)}" for key, value in data.items() if _is_scalar(value)]
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            lines += ["", f"[{name}]", to_toml(value, f"{name}.")]
        elif not _is_scalar(value):
            for item in value:
                lines += ["", f"[[{name}]]", to_toml(item, f"{name}.")]
    return "\n".join(lines)


def _is_scalar(value: object) -> bool:
    if isinstance(value, Mapping):
        return False
    return not (isinstance(value, list) and value and isinstance(value[0], Mapping))


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string for the text used here
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a site is: MTA name, global domain, the password it presents."""

    name: str
    domain: str
    password: str


A = Identity("MTA-A", "C=GB;ADMD= ;PRMD=SITEA", "secret-a")
B = Identity("MTA-B", "C=GB;ADMD= ;PRMD=SITEB", "secret-b")


@dataclass(frozen=True, slots=True)
class SlotSpec:
    """One connection slot (and the listener of the same DSCP on the other side)."""

    precedences: tuple[str, ...]
    dscp: str
    mode: str = "permanent"
    max_connections: int = 1
    backlog_threshold: int = 10
    idle_timeout: str = "5m"

    def settings(self, port: int) -> JsonObject:
        return {
            "precedences": list(self.precedences),
            "port": port,
            "dscp": self.dscp,
            "mode": self.mode,
            "max_connections": self.max_connections,
            "backlog_threshold": self.backlog_threshold,
            "idle_timeout": self.idle_timeout,
        }


LAB_SLOTS = (
    SlotSpec(("override", "flash"), "CS3"),
    SlotSpec(("immediate",), "CS2"),
    SlotSpec(("priority",), "CS1"),
    SlotSpec(
        ("routine", "deferred"),
        "CS0",
        mode="on-demand",
        max_connections=2,
        backlog_threshold=20,
    ),
)
"""The slots of ``config/examples``: three permanent, routine and deferred on demand (here
on two connections at most, where the example has four)."""


def site_settings(me: Identity, ports: Sequence[int], slots: Sequence[SlotSpec]) -> JsonObject:
    """A site's configuration: one listener per port, its DSCP the slot spec's; no peers."""
    return {
        "name": me.name,
        "global_domain": me.domain,
        "password": me.password,
        "state_dir": "state",
        "control_socket": "control.sock",
        "log_level": "debug",
        # Tests send to whatever names they need; local_users is set where one is tested.
        "accept_any_recipient": True,
        "listeners": [
            {"address": "127.0.0.1", "port": port, "dscp": spec.dscp}
            for port, spec in zip(ports, slots, strict=True)
        ],
        # Failed transfers come back soon: tests wait for them.
        "retry": {"initial": "1s", "maximum": "5s"},
    }


def peer_settings(them: Identity, ports: Sequence[int], slots: Sequence[SlotSpec]) -> JsonObject:
    """A ``[[peers]]`` table for ``them``: its domain routed, one slot per port."""
    return {
        "name": them.name,
        "host": "127.0.0.1",
        "routes": [them.domain],
        "peer_password": them.password,
        "slots": [spec.settings(port) for port, spec in zip(ports, slots, strict=True)],
    }


# --- sites -------------------------------------------------------------------------------


@dataclass
class Site:
    """One MTA: its configuration (a dict until started) and, once started, its Service."""

    identity: Identity
    directory: Path
    settings: JsonObject
    expiry_interval: float = 5.0
    service: Service | None = None
    _file: Path | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.identity.name

    @property
    def config_file(self) -> Path:
        """The TOML file (written on first use; later changes to ``settings`` rewrite it
        only at the next :meth:`start`)."""
        if self._file is None:
            self.write()
        assert self._file is not None
        return self._file

    @property
    def socket(self) -> Path:
        return self.directory / "control.sock"

    def write(self) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._file = self.directory / "mta.toml"
        self._file.write_text(to_toml(self.settings) + "\n", encoding="utf-8")
        return self._file

    def address(self, surname: str) -> str:
        """The O/R address of a user of this site."""
        return f"{self.identity.domain};O=HQ;S={surname}"

    def list_users(self, *names: str) -> None:
        """Make ``names`` the site's only users (``local_users``, in place of the
        ``accept_any_recipient`` the lab's sites start with), from its next start."""
        self.settings.pop("accept_any_recipient", None)
        self.settings["local_users"] = list(names)

    # life

    async def start(self) -> Service:
        """Write the configuration, load it, start the MTA (same database every time)."""
        assert self.service is None, f"{self.name} is running already"
        service = Service(load_config(self.write()), expiry_interval=self.expiry_interval)
        await service.start()
        self.service = service
        return service

    async def stop(self) -> None:
        if self.service is not None:
            service, self.service = self.service, None
            await service.stop()

    @property
    def running(self) -> Service:
        assert self.service is not None, f"{self.name} is not running"
        return self.service

    def runner(self, *precedences: Precedence) -> SlotRunner:
        """The slot runner (to the one peer) that admits ``precedences``."""
        for runner in self.running.slot_runners:
            if set(precedences) <= set(runner.slot.precedences):
                return runner
        raise LookupError(f"no slot of {self.name} admits {precedences}")

    def transfers(self, runner: SlotRunner) -> int:
        """Transfers done by the connections the slot holds now."""
        return sum(c.transfers for c in runner.snapshot().connections)

    # the local API, from a worker thread

    async def api(self, request: JsonObject, payload: bytes = b"") -> JsonObject:
        response, _ = await asyncio.to_thread(call, self.socket, request, payload)
        return response

    async def inbox(self, user: str) -> list[JsonObject]:
        response = await self.api({"op": "inbox", "user": user})
        messages: list[JsonObject] = response["messages"]
        return messages

    async def read(self, user: str, entry_id: int) -> tuple[JsonObject, bytes]:
        request = {"op": "read", "user": user, "id": entry_id}
        response, apdu = await asyncio.to_thread(call, self.socket, request)
        return response["message"], apdu

    async def reports(self, user: str) -> list[Report]:
        """The reports in ``user``'s mailbox, decoded."""
        found = []
        for entry in await self.inbox(user):
            if entry["kind"] == "report":
                _, apdu = await self.read(user, entry["id"])
                report = decode_mts_apdu(apdu)
                assert isinstance(report, Report)
                found.append(report)
        return found

    async def x400(self, *argv: str) -> tuple[int, str, str]:
        """Run the ``x400`` client against this site: exit code, standard output, error."""
        out, err = io.StringIO(), io.StringIO()
        code = await asyncio.to_thread(x400.main, list(argv), out=out, err=err)
        return code, out.getvalue(), err.getvalue()

    async def send(
        self,
        sender: str,
        recipient: str,
        precedence: Precedence = Precedence.ROUTINE,
        *,
        delivery_report: bool = False,
        count: int = 1,
        subject: str = "test",
    ) -> list[str]:
        """``x400 send`` one message (or ``count``); the MTS identifiers it printed."""
        argv = ["send", "--socket", str(self.socket), "--from", sender, "--to", recipient]
        argv += ["--precedence", precedence.label, "--subject", subject, "--body", "text"]
        argv += ["--count", str(count)] + (["--delivery-report"] if delivery_report else [])
        code, out, err = await self.x400(*argv)
        assert code == x400.EXIT_OK, err
        identifiers = out.splitlines()
        assert len(identifiers) == count, out
        return identifiers


@dataclass
class Lab:
    """Site A and site B, each the other's peer, on ports reserved for the lab's life."""

    a: Site
    b: Site
    reserved: ReservedPorts = field(repr=False)

    @classmethod
    def create(cls, directory: Path, slots: Sequence[SlotSpec] = LAB_SLOTS) -> Lab:
        reserved = ReservedPorts(2 * len(slots))
        ports_a, ports_b = reserved.ports[: len(slots)], reserved.ports[len(slots) :]
        settings_a = site_settings(A, ports_a, slots) | {
            "peers": [peer_settings(B, ports_b, slots)]
        }
        settings_b = site_settings(B, ports_b, slots) | {
            "peers": [peer_settings(A, ports_a, slots)]
        }
        return cls(
            a=Site(A, directory / "a", settings_a),
            b=Site(B, directory / "b", settings_b),
            reserved=reserved,
        )

    async def start(self) -> None:
        await self.b.start()
        await self.a.start()

    async def stop(self) -> None:
        """Stop both sites (either may be started again: the ports stay reserved)."""
        await self.a.stop()
        await self.b.stop()

    async def close(self) -> None:
        """Stop both sites for good and give the ports back."""
        await self.stop()
        self.reserved.close()


def solo_site(directory: Path) -> Site:
    """Site A alone: no peers, no listeners; local delivery and the local API only."""
    settings = site_settings(A, (), ())
    return Site(A, directory, settings)


# --- what a peer transfers ---------------------------------------------------------------

SENT = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
"""When the messages :func:`message_from_a` makes were sent."""


def message_from_a(
    local_identifier: str,
    recipient: str | ORName,
    *,
    internal_trace: tuple[InternalTraceEntry, ...] = (),
    subject: str = "from a peer",
    originator: ORDescriptor | None = None,
) -> bytes:
    """A message as MTA-A transfers it: A's trace, B's user, non-delivery reports asked;
    from Smith at A unless ``originator`` says otherwise in the heading."""
    domain = domain_of(parse_orname(A.domain))
    identifier = MTSIdentifier(global_domain_identifier=domain, local_identifier=local_identifier)
    smith = parse_orname(f"{A.domain};O=HQ;S=Smith")
    to = parse_orname(recipient) if isinstance(recipient, str) else recipient
    envelope = MessageEnvelope(
        mts_identifier=identifier,
        originator_name=smith,
        content_type=P772_CONTENT_TYPE,
        trace_information=(TraceEntry(global_domain_identifier=domain, arrival_time=SENT),),
        recipients=(
            RecipientField(
                recipient_name=to,
                originally_specified_recipient_number=1,
                per_recipient_indicators=PerRecipientIndicators(
                    responsibility=True, originating_mta_non_delivery_report=True
                ),
            ),
        ),
    ).with_precedence(Precedence.PRIORITY)
    for entry in internal_trace:
        envelope = envelope.with_internal_trace(entry)
    heading = Heading(
        this_ipm=IPMIdentifier(user=smith, user_relative_identifier="from a peer"),
        originator=originator or ORDescriptor(formal_name=smith),
        primary_recipients=(Recipient(name=to),),
        subject=subject,
        primary_precedence=Precedence.PRIORITY,
    )
    content = encode_ipm(
        IPM(heading=heading, body=(TextBodyPart.from_text("text"),)), ContentKind.P772
    )
    return encode_mts_apdu(Message(envelope=envelope, content=content))


async def transfer_as_a(site: Site, apdu: bytes) -> None:
    """Bind to ``site`` as MTA-A, transfer ``apdu``, release."""
    port = site.running.listening_ports[2]
    argument = MTABindArgument(initiator_name=A.name, password=A.password)
    link, _ = await open_link("127.0.0.1", port, argument)
    try:
        await link.transfer(apdu, timeout=30)
        await link.release(timeout=10)
    finally:
        await link.close()
