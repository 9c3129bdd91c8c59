"""MINIMIZE: transfer limited to the more urgent precedences, switch-wide or per peer.

When links are scarce an operator orders MINIMIZE (ACP 121; Isode M-Switch "limit message
processing by priority, across the whole switch or for selected channels"): messages
below a precedence stay queued and are not transferred until it is lifted; the more
urgent ones flow as ever.  A peer's floor is the higher of the switch-wide one and its
own.  Local delivery is not limited.

The state set by the operator (``x400ctl minimize``) is kept in
``<state_dir>/minimize.json``, written atomically, so that it survives a restart.  The
``[minimize]`` section gives the state at start; the file wins over it unless the section
was changed since the file was written (the file records the section it started from).

Public API::

    Floors(switch=None, peers={})     .floor(route) -> Precedence | None   .active
    MinimizeState.load(state_dir, configured) -> MinimizeState
        .floors   .floor(route)   .set(precedence, peer=None) -> Floors   .lift(peer=None) -> Floors
    describe(floors) -> str     "immediate and above to every peer; flash and above to b"
    FILE_NAME
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from p1.mts.precedence import Precedence, PrecedenceError, parse_precedence

__all__ = ["FILE_NAME", "Floors", "MinimizeState", "describe"]

log = logging.getLogger("aiox400.minimize")

FILE_NAME: Final = "minimize.json"
"""The state file in the state directory."""


@dataclass(frozen=True, slots=True)
class Floors:
    """The least precedence transferred: switch-wide, and per peer."""

    switch: Precedence | None = None
    peers: Mapping[str, Precedence] = field(default_factory=lambda: MappingProxyType({}))

    def floor(self, route: str) -> Precedence | None:
        """The least precedence transferred to ``route`` (None: every precedence)."""
        floors = [p for p in (self.switch, self.peers.get(route)) if p is not None]
        return max(floors, default=None)

    @property
    def active(self) -> bool:
        """Whether any MINIMIZE is in force."""
        return self.switch is not None or bool(self.peers)

    def to_json(self) -> dict[str, Any]:
        return {
            "switch": None if self.switch is None else self.switch.label,
            "peers": {name: p.label for name, p in sorted(self.peers.items())},
        }


class MinimizeState:
    """The MINIMIZE in force in one daemon, kept in its state directory."""

    def __init__(self, path: Path, configured: Precedence | None, floors: Floors) -> None:
        self.path = path
        self.configured = configured
        self.floors = floors

    @classmethod
    def load(cls, state_dir: Path, configured: Precedence | None) -> MinimizeState:
        """The state of the file in ``state_dir``; ``configured`` (``[minimize]
        precedence``) when there is none, it cannot be read, or the section changed."""
        path = state_dir / FILE_NAME
        start = Floors(switch=configured)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(path, configured, start)
        except (OSError, ValueError) as error:
            log.warning("%s cannot be read (%s): MINIMIZE as configured", path, error)
            return cls(path, configured, start)
        try:
            was_configured, floors = _parse(raw)
        except (KeyError, TypeError, AttributeError, PrecedenceError) as error:
            log.warning("%s is not a MINIMIZE state (%s): MINIMIZE as configured", path, error)
            return cls(path, configured, start)
        if was_configured != configured:
            return cls(path, configured, start)
        return cls(path, configured, floors)

    def floor(self, route: str) -> Precedence | None:
        """The least precedence transferred to ``route`` now."""
        return self.floors.floor(route)

    def set(self, precedence: Precedence, peer: str | None = None) -> Floors:
        """MINIMIZE at ``precedence``, switch-wide or for ``peer``; kept before it holds."""
        if peer is None:
            floors = Floors(switch=precedence, peers=self.floors.peers)
        else:
            floors = Floors(
                switch=self.floors.switch,
                peers=MappingProxyType({**self.floors.peers, peer: precedence}),
            )
        return self._keep(floors)

    def lift(self, peer: str | None = None) -> Floors:
        """MINIMIZE off: everywhere, or only ``peer``'s own."""
        if peer is None:
            return self._keep(Floors())
        peers = {name: p for name, p in self.floors.peers.items() if name != peer}
        return self._keep(Floors(switch=self.floors.switch, peers=MappingProxyType(peers)))

    def _keep(self, floors: Floors) -> Floors:
        configured = None if self.configured is None else self.configured.label
        text = json.dumps({"configured": configured, **floors.to_json()}, indent=1) + "\n"
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        with open(temporary, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)
        self.floors = floors
        return floors


def describe(floors: Floors) -> str:
    """The MINIMIZE in force, as the log and ``x400ctl`` say it."""
    parts = [] if floors.switch is None else [f"{floors.switch.label} and above to every peer"]
    parts += [f"{p.label} and above to {name}" for name, p in sorted(floors.peers.items())]
    return "; ".join(parts) or "off"


def _parse(raw: Any) -> tuple[Precedence | None, Floors]:
    configured = _optional(raw["configured"])
    switch = _optional(raw["switch"])
    peers = {str(name): parse_precedence(str(p)) for name, p in raw["peers"].items()}
    return configured, Floors(switch=switch, peers=MappingProxyType(peers))


def _optional(label: object) -> Precedence | None:
    return None if label is None else parse_precedence(str(label))
