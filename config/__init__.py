"""Configuration of one MTA: a TOML file validated at start into frozen typed objects.

The same file drives the daemon, ``x400ctl`` and the client.  Every error names the file,
the key, the value and what was expected; unknown keys are errors; passwords may live in
files only their owner can read and never appear in a ``repr`` or an error.  Each key is
declared once, on its field in :mod:`config.schema`; docs/configuration.md lists them all
(``python -m config.doc`` writes it) and :mod:`config.view` writes a configuration back as
TOML (``x400ctl config``); ``config/examples/`` holds the two-site lab (one connection slot
per precedence group, each with its own DSCP).

Public API::

    load_config(path) -> MtaConfig                        config.loader
    ConfigError(file, key, value, expected)               .file .key .value .expected .missing

    MtaConfig(source, name, global_domain, password, state_dir, database, control_socket,
              listeners, local_domains, local_users, accept_any_recipient, peers,
              default_route, max_age, retry, precedence_table, log_level, limits,
              connection_limits, quarantine)
                                                          .peer(name) -> Peer
    Listener(address, port, dscp, tls, tls_files, client_certificate)
    Peer(name, hosts, routes, our_credentials, their_credentials, addresses, tls,
         tls_files, fingerprint, certificate_name, slots)
                                                          .slot_for(precedence) -> Slot
    Slot(precedences, port, dscp, mode, max_connections, backlog_threshold, idle_timeout,
         tls)
                                                          .admits(precedence) -> bool
    SlotMode.PERMANENT | SlotMode.ON_DEMAND
    AddressPrefix(text, key)                              .matches(address), .length
    Credentials(name, password)
    Secret(value, source)                                 .reveal(), .matches(candidate)
    RetryPolicy(initial, maximum, factor, jitter)         .delay(attempt, draw)
    MaxAge(override, flash, immediate, priority, routine, deferred)   .of(precedence)
    LogLevel.DEBUG ... LogLevel.CRITICAL
    ConnectionLimits(max_connections, max_connections_per_address, max_unbound,
                     max_unbound_per_address, max_bytes_before_bind, bind_timeout,
                     idle_timeout, min_progress, progress_interval, failed_bind_delay,
                     failed_bind_delay_max, max_api_connections, api_idle_timeout,
                     api_operator_connections, max_api_connections_per_uid,
                     max_api_pending_per_uid)
    QuarantineLimits(max_messages, max_bytes)
    DEFAULT_STATE_DIR, DEFAULT_MAX_AGE, DEFAULT_RETRY, DEFAULT_CONNECTION_LIMITS,
    DEFAULT_QUARANTINE
"""

from __future__ import annotations

from config.loader import ConfigError as ConfigError
from config.loader import load_config as load_config
from config.schema import DEFAULT_CONNECTION_LIMITS as DEFAULT_CONNECTION_LIMITS
from config.schema import DEFAULT_MAX_AGE as DEFAULT_MAX_AGE
from config.schema import DEFAULT_QUARANTINE as DEFAULT_QUARANTINE
from config.schema import DEFAULT_RETRY as DEFAULT_RETRY
from config.schema import DEFAULT_STATE_DIR as DEFAULT_STATE_DIR
from config.schema import AddressPrefix as AddressPrefix
from config.schema import ConnectionLimits as ConnectionLimits
from config.schema import Credentials as Credentials
from config.schema import Listener as Listener
from config.schema import LogLevel as LogLevel
from config.schema import MaxAge as MaxAge
from config.schema import MtaConfig as MtaConfig
from config.schema import Peer as Peer
from config.schema import QuarantineLimits as QuarantineLimits
from config.schema import RetryPolicy as RetryPolicy
from config.schema import Secret as Secret
from config.schema import Slot as Slot
from config.schema import SlotMode as SlotMode

__all__ = [
    "DEFAULT_CONNECTION_LIMITS",
    "DEFAULT_MAX_AGE",
    "DEFAULT_QUARANTINE",
    "DEFAULT_RETRY",
    "DEFAULT_STATE_DIR",
    "AddressPrefix",
    "ConfigError",
    "ConnectionLimits",
    "Credentials",
    "Listener",
    "LogLevel",
    "MaxAge",
    "MtaConfig",
    "Peer",
    "QuarantineLimits",
    "RetryPolicy",
    "Secret",
    "Slot",
    "SlotMode",
    "load_config",
]
