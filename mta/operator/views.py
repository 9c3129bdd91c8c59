"""What the operator's side may see and do of a running daemon: narrow protocols.

The local API, the Prometheus endpoint, the reloader and the service manager's loop
(:mod:`mta.lifecycle`) are handed the daemon as one of these, never as the service
class: each states what it reads, and none of them imports the module that wires them
(so no import circle, at run time or for the type checker).

Public API::

    Daemon       .config  .db  .runners  .started  .frozen  .store  .parts  .guard
                 .metrics  .minimize  .delivery  .listening_ports  .controls  .notify()
                 .peer_reachable(peer)  .flush_peer(peer)
    Controls     .reload() -> Reloaded   .stop(why)   (SIGHUP and SIGTERM's way in)
    Reloaded(applied, restart, error)   .refused      what one reload did
    Submitter    await .submit(request) -> Submitted   (intake)
    Reconfigurable(Daemon)   .reconfigure(config, *, then=None)
    Served(Daemon)           await .start()  await .stop()
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from config.schema import MtaConfig
from mta.database import Database
from mta.delivery.local import Delivery
from mta.faults import StoreCondition
from mta.inbound.guard import Guard
from mta.intake.intake import Submitted
from mta.intake.submission import SubmitRequest
from mta.metrics import Metrics
from mta.operator.minimize import MinimizeState
from mta.supervisor import Supervisor
from mta.transport import Channel

__all__ = ["Controls", "Daemon", "Reconfigurable", "Reloaded", "Served", "Submitter"]


@dataclass(frozen=True, slots=True)
class Reloaded:
    """What one reload did (:mod:`mta.operator.reload`): the summary of what was
    applied and the keys that need a restart, or why nothing changed (the loader's
    message, naming file, key and value)."""

    applied: str = ""
    """What was applied, as the INFO line says it ("nothing to apply" when nothing)."""
    restart: tuple[str, ...] = ()
    """Changed keys that take effect only at the next start."""
    error: str | None = None
    """Why the new configuration was refused; None when it was taken."""

    @property
    def refused(self) -> bool:
        """The previous configuration stays in force."""
        return self.error is not None


class Controls(Protocol):
    """The service manager's loop (:mod:`mta.lifecycle`) as the local API reaches it:
    the same reload as SIGHUP, the same stop as SIGTERM."""

    def reload(self) -> Reloaded:
        """Re-read the configuration file now; what was done."""
        ...

    def stop(self, why: str) -> None:
        """Begin the graceful stop (``why`` is logged); returns at once."""
        ...


class Daemon(Protocol):
    """A running daemon, as the operator's modules read it."""

    @property
    def config(self) -> MtaConfig:
        """The configuration in force."""

    @property
    def db(self) -> Database:
        """The database thread (store work goes there)."""

    @property
    def runners(self) -> Sequence[Channel]:
        """Every connection slot of every peer."""

    @property
    def owner(self) -> str:
        """The owner of the queued work this process claims (``<name>/<instance>``)."""

    started: float
    """When it started (``time.monotonic()``)."""
    frozen: int
    """Objects of start-up left out of garbage collection (set by :mod:`mta.lifecycle`)."""

    @property
    def store(self) -> StoreCondition:
        """Whether the store takes work."""

    @property
    def parts(self) -> Supervisor:
        """The long-lived tasks (degraded ones listed)."""

    @property
    def guard(self) -> Guard:
        """Inbound connections admitted and refused."""

    @property
    def metrics(self) -> Metrics:
        """The counters."""

    @property
    def delivery(self) -> Delivery:
        """Local delivery and expiry (the operator's non-delivery goes the expirer's way)."""

    @property
    def minimize(self) -> MinimizeState:
        """The MINIMIZE in force (transfer limited to the more urgent precedences)."""

    @property
    def listening_ports(self) -> list[int]:
        """The TCP ports P1 is served on."""

    @property
    def controls(self) -> Controls | None:
        """Reload and stop, when the service manager's loop runs the daemon (None when
        it is run otherwise, as in a test)."""

    def notify(self) -> None:
        """Something may be due (held messages released, a flush): wake every slot."""

    def peer_reachable(self, peer: str) -> None:
        """``peer``'s slots stop waiting out their backoff."""

    def flush_peer(self, peer: str) -> None:
        """``peer``'s slots try again now, their backoff started anew (a flush)."""


class Submitter(Protocol):
    """Where the local API hands a user's submission (intake)."""

    async def submit(self, request: SubmitRequest) -> Submitted:
        """Take it in; return once committed (:class:`mta.intake.intake.Intake`)."""


class Reconfigurable(Daemon, Protocol):
    """A daemon that a reload may swap over to a new configuration."""

    def reconfigure(
        self, config: MtaConfig, *, then: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """Run on ``config`` from now on (:mod:`mta.operator.reload`)."""


class Served(Reconfigurable, Protocol):
    """A daemon the service manager's loop starts and stops (:mod:`mta.lifecycle`)."""

    def attach(self, controls: Controls) -> None:
        """Hand the local API the loop's reload and stop."""

    async def start(self) -> None:
        """Start every part; raises if one cannot start, having undone what started."""

    async def stop(self) -> None:
        """Stop every part; nothing committed is lost."""
