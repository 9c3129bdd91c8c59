"""The daemon's life under a service manager: signals, readiness, watchdog, status.

:func:`serve` starts a daemon (:class:`mta.operator.views.Served`), serves until SIGTERM
or SIGINT and
stops it, telling systemd how it fares (sd_notify(3), :mod:`mta.systemd`):

- ``READY=1`` once started (listeners bound, the control socket up), with a ``STATUS=``
  line such as ``serving: 4 listeners, 1 peer, queue 12`` that is refreshed every
  :data:`STATUS_INTERVAL` seconds;
- ``WATCHDOG=1`` every half ``$WATCHDOG_USEC``, from the event loop itself, so a loop
  that is stuck stops the keep-alives and the manager restarts the service
  (systemd.service(5), ``WatchdogSec=``);
- on SIGHUP ``RELOADING=1``, the ``reload`` callback (the daemon re-reads its file:
  :mod:`mta.operator.reload`), then ``READY=1`` again;
- ``STOPPING=1`` when a stop begins.

A daemon that cannot start (its state directory locked by another,
:class:`mta.instance.StateDirInUseError`; a port in use; a store it cannot open) has
undone what it started before the error reaches the caller (:meth:`mta.service.Service.start`),
which says why in one line: it is not stopped as a started one would be.

Public API::

    await serve(service, *, notifier=None, reload=None)
    STATUS_INTERVAL
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from mta.faults import store_fault
from mta.operator.views import Served
from mta.systemd import Notifier, watchdog_interval
from store import RecipientState, TransitQueue, transaction

if TYPE_CHECKING:
    from sqlalchemy import Engine

__all__ = ["STATUS_INTERVAL", "serve"]

log = logging.getLogger("aiox400.mta")

STATUS_INTERVAL: Final = 30.0
"""Seconds between refreshes of the ``STATUS=`` line."""
_COUNT_TIMEOUT: Final = 10.0
"""Seconds the queue count of a status line may take (a busy store is not waited for)."""
_OWED: Final = frozenset({RecipientState.PENDING, RecipientState.IN_FLIGHT, RecipientState.HELD})
"""Queue states of recipients the MTA still owes something (the status line's queue)."""
_STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)


async def serve(
    service: Served,
    *,
    notifier: Notifier | None = None,
    reload: Callable[[], None] | None = None,
) -> None:
    """Start ``service``, serve until SIGTERM or SIGINT (reloading on SIGHUP), stop it."""
    notifier = notifier or Notifier.from_environment()
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in _STOP_SIGNALS:
        loop.add_signal_handler(signum, stopping.set)
    loop.add_signal_handler(signal.SIGHUP, _reloader(service, notifier, reload))
    try:
        await service.start()
        await _serve_started(service, notifier, stopping)
    finally:
        for signum in (*_STOP_SIGNALS, signal.SIGHUP):
            loop.remove_signal_handler(signum)


async def _serve_started(service: Served, notifier: Notifier, stopping: asyncio.Event) -> None:
    """From readiness to the end of the stop."""
    tasks: list[asyncio.Task[None]] = []
    try:
        service.frozen = _freeze_start_up()
        notifier.ready(await status_line(service))
        tasks.append(asyncio.create_task(_refresh_status(service, notifier)))
        interval = watchdog_interval()
        if interval is not None and notifier.enabled:
            tasks.append(asyncio.create_task(_keep_alive(notifier, interval)))
        await stopping.wait()
        log.info("stopping on signal")
    finally:
        notifier.stopping()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await service.stop()


def _freeze_start_up() -> int:
    """Leave what start-up made out of the garbage collector's full collections.

    Modules, the configuration, the schema, the prepared statements: some 90,000 objects
    that live as long as the process.  Every full collection would walk them all, a pause
    of tens of milliseconds under a large backlog that holds up a flash message in
    flight.  ``gc.freeze`` moves them to a generation no collection visits.  (The
    compiled ASN.1 specification is not among them: it is loaded at the first MTA-bind,
    after this.)
    """
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()  # (it counts them one by one: asked once, here)
    log.debug("%d objects of start-up left out of garbage collection", frozen)
    return frozen


def _reloader(
    service: Served, notifier: Notifier, reload: Callable[[], None] | None
) -> Callable[[], None]:
    """The SIGHUP handler (run by the event loop, not in the signal's context)."""

    def reload_now() -> None:
        notifier.reloading()
        if reload is None:
            log.warning("SIGHUP: this MTA reloads nothing; restart it to apply changes")
        else:
            reload()
        notifier.send(READY="1")

    return reload_now


async def _keep_alive(notifier: Notifier, interval: float) -> None:
    """``WATCHDOG=1`` every ``interval`` seconds, for as long as the loop turns."""
    while True:
        notifier.watchdog()
        await asyncio.sleep(interval)


async def _refresh_status(service: Served, notifier: Notifier) -> None:
    while True:
        await asyncio.sleep(STATUS_INTERVAL)
        notifier.status(await status_line(service))


async def status_line(service: Served) -> str:
    """``serving: 4 listeners, 1 peer, queue 12``: what ``systemctl status`` shows."""
    listeners = len(service.listening_ports)
    peers = len(service.config.peers)
    try:
        async with asyncio.timeout(_COUNT_TIMEOUT):
            queue = str(await service.db.run(_owed, service.db.engine))
    except TimeoutError:
        queue = "not counted (the store is busy)"
    except Exception as error:
        fault = store_fault(error)
        if fault is None:
            raise
        queue = f"not counted ({fault})"
    return f"serving: {_count(listeners, 'listener')}, {_count(peers, 'peer')}, queue {queue}"


def _owed(engine: Engine) -> int:
    """Recipients the MTA still owes something (pending, in flight, held)."""
    with transaction(engine, read_only=True) as session:
        counts = TransitQueue(session).counts()
    return sum(count.recipients for count in counts if count.state in _OWED)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
