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

``x400ctl reload`` and ``x400ctl stop`` come the same way: the loop hands the daemon its
:class:`mta.operator.views.Controls` (:meth:`Served.attach`), whose ``reload`` is the
SIGHUP handler (returning what the reload did) and whose ``stop`` is what SIGTERM sets
off.  One reload path, one stop path, whoever asks.

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
from mta.operator.views import Reloaded, Served
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
    reload: Callable[[], Reloaded] | None = None,
) -> None:
    """Start ``service``, serve until SIGTERM or SIGINT or the local API's ``stop``
    (reloading on SIGHUP or the local API's ``reload``), stop it."""
    notifier = notifier or Notifier.from_environment()
    controls = _Controls(_reloader(notifier, reload))
    loop = asyncio.get_running_loop()
    for signum in _STOP_SIGNALS:
        loop.add_signal_handler(signum, controls.stop, f"signal {signum.name}")
    loop.add_signal_handler(signal.SIGHUP, controls.reload)
    service.attach(controls)
    try:
        await service.start()
        await _serve_started(service, notifier, controls)
    finally:
        for signum in (*_STOP_SIGNALS, signal.SIGHUP):
            loop.remove_signal_handler(signum)


class _Controls:
    """What a signal or the local API sets off (:class:`mta.operator.views.Controls`)."""

    def __init__(self, reload: Callable[[], Reloaded]) -> None:
        self.reload = reload
        self.stopping = asyncio.Event()
        self.why = ""
        """What asked for the stop (for the log line)."""

    def stop(self, why: str) -> None:
        if not self.stopping.is_set():
            self.why = why
        self.stopping.set()


async def _serve_started(service: Served, notifier: Notifier, controls: _Controls) -> None:
    """From readiness to the end of the stop."""
    tasks: list[asyncio.Task[None]] = []
    try:
        service.frozen = _freeze_start_up()
        notifier.ready(await status_line(service))
        tasks.append(asyncio.create_task(_refresh_status(service, notifier)))
        interval = watchdog_interval()
        if interval is not None and notifier.enabled:
            tasks.append(asyncio.create_task(_keep_alive(notifier, interval)))
        await controls.stopping.wait()
        log.info("stopping on %s", controls.why)
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


def _reloader(notifier: Notifier, reload: Callable[[], Reloaded] | None) -> Callable[[], Reloaded]:
    """The SIGHUP handler (run by the event loop, not in the signal's context), which
    the local API's ``reload`` calls too."""

    def reload_now() -> Reloaded:
        notifier.reloading()
        if reload is None:
            done = Reloaded(error="this MTA reloads nothing; restart it to apply changes")
            log.warning("reload: %s", done.error)
        else:
            done = reload()
        notifier.send(READY="1")
        return done

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
