"""Re-reading the configuration file on SIGHUP (``systemctl reload``, systemd.service(5)
``ExecReload=``).

What can change in a running daemon without risk is applied at once:

    log_level     the threshold of every logger (unless ``--log-level`` overrides it)
    quarantine    the bounds of what is kept of transfers that cannot be taken in

Every other key that changed is named in one WARNING line each ("needs a restart"): the
listeners, the database, the state directory, the control socket, the peers and their
slots, passwords, routes and limits are wired into the parts when they start.  A file
that no longer loads is reported as the loader says it (file, key, value, what was
expected) and the daemon keeps its configuration: a reload never stops it.

Public API::

    Reloader(service, *, level_override=None)    called on SIGHUP
    compare(old, new) -> Changes(applied, restart)
    APPLIED
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from config.loader import ConfigError, load_config
from config.schema import MtaConfig

if TYPE_CHECKING:
    from mta.service import Service

__all__ = ["APPLIED", "Changes", "Reloader", "compare"]

log = logging.getLogger("aiox400.mta")

APPLIED: Final = ("log_level", "quarantine")
"""The :class:`MtaConfig` fields a reload applies."""
_UNCOMPARED: Final = frozenset({"source"})
_KEYS: Final = {"precedence_table": "dscp", "connection_limits": "limits"}
"""Fields whose key in the file has another name (both kinds of limits are ``[limits]``)."""


@dataclass(frozen=True, slots=True)
class Changes:
    """What differs between two configurations, as keys of the file."""

    applied: tuple[str, ...]
    """Changed keys applied in place."""
    restart: tuple[str, ...]
    """Changed keys that take effect only at the next start."""


def compare(old: MtaConfig, new: MtaConfig) -> Changes:
    """The keys whose values differ between ``old`` and ``new``."""
    applied: list[str] = []
    restart: list[str] = []
    for field in dataclasses.fields(MtaConfig):
        if field.name in _UNCOMPARED or getattr(old, field.name) == getattr(new, field.name):
            continue
        key = _KEYS.get(field.name, field.name)
        bucket = applied if field.name in APPLIED else restart
        if key not in bucket:
            bucket.append(key)
    return Changes(applied=tuple(applied), restart=tuple(restart))


class Reloader:
    """Re-reads the service's configuration file and applies what it safely can."""

    def __init__(self, service: Service, *, level_override: str | None = None) -> None:
        self.service = service
        self.level_override = level_override
        """The ``--log-level`` given: it wins over the file's ``log_level``."""

    def __call__(self) -> None:
        """Reload now (module docstring); logs what happened, never raises for a bad
        file."""
        old = self.service.config
        try:
            new = load_config(old.source)
        except ConfigError as error:
            log.error("reload refused, the previous configuration stays in force: %s", error)
            return
        changes = compare(old, new)
        for key in changes.restart:
            log.warning("reload: %s: %s changed: needs a restart to take effect", old.source, key)
        self.service.config = dataclasses.replace(
            old, log_level=new.log_level, quarantine=new.quarantine
        )
        self._apply_level(old, new)
        applied = ", ".join(changes.applied) or "nothing to apply"
        log.info("reloaded %s: %s", old.source, applied)

    def _apply_level(self, old: MtaConfig, new: MtaConfig) -> None:
        if old.log_level == new.log_level:
            return
        if self.level_override is not None:
            log.info("reload: log_level stays %s, as --log-level says", self.level_override)
            return
        logging.getLogger().setLevel(new.log_level.name)
        log.info("reload: log_level is %s now (was %s)", new.log_level, old.log_level)
