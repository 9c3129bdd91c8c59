"""Retention between live daemons: what is finished is pruned, mailboxes are not.

A sends five messages to B with short retention on both sides.  A's queue keeps nothing
once they are transferred (the rounds run in batches of two), B forgets the received
keys and audit records older than its windows, Bob's mailbox keeps all five, and each
site logs what it pruned.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from p1.mts.precedence import Precedence
from store.models import AuditEntry, QueuedMessage, QueuedRecipient, ReceivedKey
from tests.support.sites import Lab, Site, eventually

pytestmark = pytest.mark.slow  # a daemon pruning on its own schedule

SHORT = {"override": "2s", "flash": "2s", "immediate": "2s"}
SHORT |= {"priority": "2s", "routine": "2s", "deferred": "2s"}


async def _count(site: Site, model: Any) -> int:
    """Rows of ``model`` in the site's database, read by its own database thread."""

    def count(session: Session) -> int:
        return int(session.execute(select(func.count()).select_from(model)).scalar_one())

    return await site.running.db.batch(count, durable=False)


async def test_finished_messages_keys_and_audit_are_pruned_not_the_mailbox(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiox400.retention")
    lab.a.settings["retention"] = {"finished": "0s", "interval": "1s", "batch": 2}
    lab.b.settings["max_age"] = SHORT
    lab.b.settings["retention"] = {
        "finished": "0s",
        "received": "2s",
        "audit": "1s",
        "interval": "1s",
    }
    await lab.start()
    smith, bob = lab.a.address("Smith"), lab.b.address("Bob")
    sent = await lab.a.send(smith, bob, Precedence.PRIORITY, count=5)
    await eventually(lambda: lab.b.inbox(bob), lambda found: len(found) == 5, what="delivery")
    for model in (QueuedMessage, QueuedRecipient):
        await eventually(partial(_count, lab.a, model), lambda n: n == 0, what="A pruned")
    assert await _count(lab.a, AuditEntry) > 0  # A keeps its audit log 30 days
    for table in (QueuedMessage, ReceivedKey, AuditEntry):
        await eventually(partial(_count, lab.b, table), lambda n: n == 0, what="B pruned")
    inbox = await lab.b.inbox(bob)
    assert len(inbox) == 5
    lines = [r.getMessage() for r in caplog.records if r.name == "aiox400.retention"]
    pruned = sum(int(line.split("pruned ")[1].split()[0]) for line in lines)
    assert pruned == 10  # A's five after transfer, B's five after delivery
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == "aiox400.retention")
    assert len(sent) == 5
