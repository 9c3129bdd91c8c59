"""The SQL of ``received``: the duplicate-detection keys of the transit queue."""

from __future__ import annotations

from typing import Final

from sqlalchemy import Delete, bindparam, delete

from store._sql import table
from store.models import ReceivedKey, UtcDateTime
from store.sql.statement import TEXT, TIME, Insert

RECEIVED: Final = table(ReceivedKey)

INSERT_NEW: Final = Insert(
    "received",
    {"mts_identifier": TEXT, "recipient": TEXT, "received_at": TIME, "origin_peer": TEXT},
    returning={"mts_identifier": TEXT, "recipient": TEXT},
    skip_existing=("mts_identifier", "recipient"),
)
"""Duplicate-detection keys, those already there skipped; returns the keys inserted."""

FORGET: Final[Delete] = delete(RECEIVED).where(
    RECEIVED.c.received_at < bindparam("before", type_=UtcDateTime())
)
"""Keys received before ``before`` (Core)."""
