"""P1 in X.410-1984 mode between live daemons, on real sockets (X.419 7, X.410 1984).

Sites A and B of the lab, each configured to call the other with ``protocol =
"1988-x410"``: every connection either opens is in X.410-1984 mode (a CN carrying a
PConnect, the RTS on the session, no ACSE or presentation), and each listener tells that
mode from the CN and serves it.  A message crosses A -> B and its delivery report B -> A;
a probe transferred by a 1984 initiator to B is answered by a report that B sends A in
that mode; a bind with the wrong password is refused the 1984 way (PRefuse), and a
release is answered.  The same listeners still serve normal mode.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from mta.intake.plan import domain_of
from mta.link import BindRefusedError, open_link
from p1.association.mtabind import MTABindArgument, MTABindError
from p1.association.x410 import X410Settings
from p1.association.x410_pdus import APPLICATION_P1_1984
from p1.mts.envelope import (
    MTSIdentifier,
    PerRecipientIndicators,
    Probe,
    RecipientField,
    TraceEntry,
    encode_mts_apdu,
)
from p1.mts.orname import parse_orname
from p1.mts.precedence import Precedence
from p1.osi.rtse import DialogueMode
from tests.support.sites import A, B, Lab, eventually, message_from_a

X410 = X410Settings(application_protocol=APPLICATION_P1_1984)
AS_A = MTABindArgument(initiator_name=A.name, password=A.password)


def _x410(lab: Lab) -> None:
    for site in (lab.a, lab.b):
        site.settings["peers"][0]["protocol"] = "1988-x410"


def _accepted_in_x410(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if f"bind from {name!r} accepted (X.410-1984 mode" in r.getMessage()
    ]


@pytest.mark.slow
async def test_a_message_and_its_delivery_report_cross_in_x410_mode(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    _x410(lab)
    await lab.start()
    smith, bob = lab.a.address("Smith"), lab.b.address("Bob")
    (identifier,) = await lab.a.send(smith, bob, Precedence.FLASH, delivery_report=True)

    async def inbox() -> int:
        return len(await lab.b.inbox(bob))

    await eventually(inbox, lambda n: n == 1, what=f"{identifier} delivered to Bob")
    reports = await eventually(
        lambda: lab.a.reports(smith), lambda found: len(found) == 1, what="the delivery report"
    )
    (recipient,) = reports[0].content.recipients
    assert recipient.delivered
    assert reports[0].content.subject_identifier.text == identifier
    # Both ways in X.410-1984 mode: B accepted A's bind in it, A accepted B's.
    assert _accepted_in_x410(caplog, A.name)
    assert _accepted_in_x410(caplog, B.name)
    connected = [r.getMessage() for r in caplog.records if "connected to" in r.getMessage()]
    assert connected and all("X.410-1984 mode, P1 1988-x410" in line for line in connected)
    assert not [r for r in caplog.records if r.exc_info]


async def test_a_1984_probe_is_answered_by_a_report_in_x410_mode(lab: Lab) -> None:
    _x410(lab)
    await lab.start()
    smith, bob = lab.a.address("Smith"), lab.b.address("Bob")
    domain = domain_of(parse_orname(A.domain))
    probe = Probe(
        probe_identifier=MTSIdentifier(global_domain_identifier=domain, local_identifier="p-1"),
        originator_name=parse_orname(smith),
        content_type=2,  # built-in P2: the 1984 form
        trace_information=(
            TraceEntry(global_domain_identifier=domain, arrival_time=datetime.now(UTC)),
        ),
        recipients=(
            RecipientField(
                recipient_name=parse_orname(bob),
                originally_specified_recipient_number=1,
                per_recipient_indicators=PerRecipientIndicators(
                    responsibility=True, originating_mta_report=True, originator_report=True
                ),
            ),
        ),
    )
    port = lab.b.running.listening_ports[0]
    link, accepted = await open_link("127.0.0.1", port, AS_A, settings=X410)
    assert accepted.result.responder_name == B.name
    assert link.association.MODE == "X.410-1984"
    await link.transfer(encode_mts_apdu(probe), timeout=30)
    await link.release(timeout=10)
    reports = await eventually(
        lambda: lab.a.reports(smith), lambda found: len(found) == 1, what="the probe's report"
    )
    assert reports[0].content.subject_identifier.local_identifier == "p-1"
    (recipient,) = reports[0].content.recipients
    assert recipient.delivered


async def test_a_1984_transfer_and_release_reach_the_daemon(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    await lab.b.start()  # B calls A in normal mode: the listener serves both
    bob = lab.b.address("Bob")
    port = lab.b.running.listening_ports[2]
    link, _ = await open_link("127.0.0.1", port, AS_A, settings=X410Settings())
    await link.transfer(message_from_a("x410-1", bob), timeout=30)
    await link.release(timeout=10)

    async def inbox() -> int:
        return len(await lab.b.inbox(bob))

    await eventually(inbox, lambda n: n == 1, what="the message delivered")
    normal, _ = await open_link("127.0.0.1", port, AS_A)
    assert normal.association.MODE == "normal"
    await normal.release(timeout=10)
    await eventually(lambda: _released(caplog), lambda n: n == 2, what="both associations released")
    assert len(_accepted_in_x410(caplog, A.name)) == 1


async def _released(caplog: pytest.LogCaptureFixture) -> int:
    return sum(1 for r in caplog.records if r.getMessage().endswith(": released"))


async def test_a_1984_bind_with_the_wrong_password_is_refused_the_1984_way(lab: Lab) -> None:
    await lab.b.start()
    port = lab.b.running.listening_ports[0]
    wrong = MTABindArgument(initiator_name=A.name, password="not-the-password")
    with pytest.raises(BindRefusedError, match="PRefuse validation_failure") as raised:
        await open_link("127.0.0.1", port, wrong, settings=X410)
    assert raised.value.error is MTABindError.AUTHENTICATION_ERROR


async def test_a_two_way_alternate_1984_peer_gets_the_turn_back_and_releases(lab: Lab) -> None:
    """X.410 (1984) two-way alternate: the daemon holds a turn given to it only until the
    peer asks for it back (S-TOKEN-PLEASE), so the peer can transfer again and release."""
    await lab.b.start()
    bob = lab.b.address("Bob")
    port = lab.b.running.listening_ports[1]
    settings = X410Settings(dialogue_mode=DialogueMode.TWA)
    link, accepted = await open_link("127.0.0.1", port, AS_A, settings=settings)
    assert accepted.dialogue_mode is DialogueMode.TWA
    await link.transfer(message_from_a("twa-1", bob), timeout=30)
    await link.give_turn()
    await link.take_turn(priority=2, timeout=30)  # a deadlock would time out here
    assert link.association.has_turn
    await link.transfer(message_from_a("twa-2", bob), timeout=30)
    await link.release(timeout=30)

    async def inbox() -> int:
        return len(await lab.b.inbox(bob))

    await eventually(inbox, lambda n: n == 2, what="both messages delivered")
