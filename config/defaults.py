"""Where the configuration is when none is named, in a module of its own that imports
nothing: ``x400-mta`` reads it before deciding whether to load the daemon at all
(:mod:`mta.command`).  :mod:`config.schema` re-exports it.

Public API::

    DEFAULT_CONFIG_FILE   the file read when no configuration is named
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEFAULT_CONFIG_FILE"]

DEFAULT_CONFIG_FILE = Path("/etc/aiox400/mta.toml")
"""The configuration ``x400-mta``, ``x400`` and ``x400ctl`` read when none is named (the
path deploy/systemd/aiox400-mta.service gives the daemon)."""
