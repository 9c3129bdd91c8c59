"""A transfer cut off by a lost connection goes on from its last confirmed checkpoint on
the next association (X.228 recovery, X.225 S-ACTIVITY-RESUME), on both sides, sans I/O.

The connection is cut by delivering only part of what the initiator wrote (and nothing
of what the responder answered after it), then ending both sides as a lost TCP
connection would; the next association recovers with RT-OPEN ``recover`` (or binds and
resumes), and the APDU arrives once, byte for byte, with only the octets after the
checkpoint sent again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p1.association.connection import (
    Aborted,
    AssociationSettings,
    BindAccepted,
    BindRequested,
    P1Association,
    RecoveryRequested,
    TransferConfirmed,
    TransferReceived,
    TransferResumed,
)
from p1.association.pdus import transfer_head
from p1.osi import Event, Role
from p1.osi.rtse import AbortReason
from p1.osi.rtse_recovery import (
    PartialTransfer,
    PartialTransfers,
    ResumePoint,
    SessionConnectionId,
)
from p1.osi.rtse_transfer import CHECKPOINT_UNIT
from p1.osi.x225.spdu import Kind
from tests.p1.association.pair import (
    ARGUMENT,
    RESULT,
    Pair,
    apdu,
    rttr_lengths,
    spdu_kinds,
    spdus,
    user_abort_rtab,
)
from tests.profiles import examples

PEER = "MTA-A"


def identifier(number: int) -> SessionConnectionId:
    """The session connection identifier of the initiator's ``number``-th connection."""
    return SessionConnectionId(
        calling_reference=number.to_bytes(4, "big"), common_reference=b"260422101500Z"
    )


@dataclass
class Keep:
    """The receiving MTA's keep of partial transfers, as its user holds it (one peer)."""

    kept: PartialTransfers = field(
        default_factory=lambda: PartialTransfers(max_count=4, max_octets=1 << 24, keep_for=60.0)
    )
    peer: str = PEER

    def take(self, identifier: SessionConnectionId, activity_id: bytes) -> PartialTransfer | None:
        return self.kept.take(self.peer, identifier, activity_id, now=0.0)

    def keep(self, association: P1Association) -> None:
        partial = association.interrupted_transfer
        if partial is not None:
            self.kept.keep(self.peer, partial, now=0.0)


def checkpointed(size: int = 2, window: int = 3) -> AssociationSettings:
    return AssociationSettings(checkpoint_size=size, window_size=window)


def bound(keep: Keep, number: int, settings: AssociationSettings) -> Pair:
    """A pair bound with an MTA-bind, the initiator's CN naming connection ``number``."""
    pair = Pair(settings, AssociationSettings())
    pair.initiator.send_bind(ARGUMENT, identifier=identifier(number))
    (requested,) = pair.pump().responder
    assert isinstance(requested, BindRequested)
    pair.responder.accept_bind(RESULT, resumption=keep)
    (accepted,) = pair.pump().initiator
    assert isinstance(accepted, BindAccepted) and not accepted.recovered
    return pair


def recovered(keep: Keep, number: int, point: ResumePoint, settings: AssociationSettings) -> Pair:
    """A pair whose initiator recovers the association of ``point`` (RT-OPEN recover)."""
    pair = Pair(settings, AssociationSettings())
    pair.initiator.send_bind(ARGUMENT, identifier=identifier(number), recover=point.identifier)
    (requested,) = pair.pump().responder
    assert isinstance(requested, RecoveryRequested)
    assert requested.identifier == point.identifier
    pair.responder.accept_recovery(keep)
    (accepted,) = pair.pump().initiator
    assert isinstance(accepted, BindAccepted) and accepted.recovered
    assert accepted.result.responder_name is None  # no MTA-bind
    return pair


def cut(pair: Pair, after: int) -> bool:
    """Pump the pair, the initiator's octets (from now) cut after ``after`` of them: what
    follows, and every answer after the cut, is lost with the connection, and both sides
    see its end.  False when the cut falls past all the initiator wrote."""
    sent = 0
    while True:
        data = pair.initiator.data_to_send()
        if not data:
            pair.pump()
            return False
        if sent + len(data) > after:
            pair.sent_by_initiator.append(data[: after - sent])
            pair.responder_events += pair.responder.receive_data(data[: after - sent])
            pair.responder.data_to_send()  # (lost)
            pair.responder_events += pair.responder.receive_eof()
            pair.initiator_events += pair.initiator.receive_eof()
            return True
        sent += len(data)
        pair.sent_by_initiator.append(data)
        pair.responder_events += pair.responder.receive_data(data)
        pair.initiator_events += pair.initiator.receive_data(pair.responder.data_to_send())


def received(events: list[Event]) -> list[TransferReceived]:
    return [event for event in events if isinstance(event, TransferReceived)]


def confirm(pair: Pair) -> list[Event]:
    """The responder stores and confirms what it received; the initiator's events."""
    for event in received(pair.responder_events):
        pair.responder.confirm_transfer(event.transfer_id)
    return pair.pump().initiator


# --- both ends of one recovery ------------------------------------------------------------


def test_a_transfer_cut_off_goes_on_from_its_last_checkpoint_on_the_next_association() -> None:
    keep, data = Keep(), apdu(40_000)
    first = bound(keep, 1, checkpointed())
    first.initiator.send_transfer(data)
    assert cut(first, after=17_000)
    assert received(first.responder_events) == []
    point = first.initiator.resume_point
    assert point is not None and point.serial >= 1
    assert point.identifier == identifier(1)
    assert point.offset == point.serial * 2 * CHECKPOINT_UNIT
    keep.keep(first.responder)
    assert len(keep.kept) == 1

    second = recovered(keep, 2, point, checkpointed())
    bind_writes = len(second.sent_by_initiator)
    second.initiator.resume_transfer(data, point)
    resumed, delivered = second.pump().responder
    assert resumed == TransferResumed(transfer_id=1, serial=point.serial, offset=point.offset)
    assert isinstance(delivered, TransferReceived) and delivered.apdu == data
    assert confirm(second) == [TransferConfirmed(transfer_id=1)]
    whole = len(transfer_head(data)) + len(data)
    sent = b"".join(second.sent_by_initiator[bind_writes:])
    assert sum(rttr_lengths(sent)) == whole - point.offset  # only what follows
    assert spdu_kinds(sent)[:2] == [Kind.AR, Kind.DT]
    assert len(keep.kept) == 0  # taken


def test_an_s_activity_resume_may_follow_an_mta_bind() -> None:
    keep, data = Keep(), apdu(20_000)
    first = bound(keep, 1, checkpointed())
    first.initiator.send_transfer(data)
    assert cut(first, after=9_000)
    point = first.initiator.resume_point
    assert point is not None
    keep.keep(first.responder)
    second = bound(keep, 2, checkpointed())
    second.initiator.resume_transfer(data, point)
    second.pump()
    (delivered,) = received(second.responder_events)
    assert delivered.apdu == data


def test_the_receiver_goes_back_to_the_checkpoint_the_sender_saw_confirmed() -> None:
    # The cut loses the confirmations of the last checkpoints (window 4): the receiver
    # kept more than the sender knows of, and goes back to the sender's checkpoint.
    keep, data = Keep(), apdu(30_000)
    first = bound(keep, 1, checkpointed(size=1, window=4))
    first.initiator.send_transfer(data)
    first.deliver(True)  # four checkpoints' pieces, none confirmed to the sender yet
    first.responder.data_to_send()
    first.responder.receive_eof()
    first.initiator.receive_eof()
    keep.keep(first.responder)
    partial = keep.kept.take(PEER, identifier(1), b"\x02\x01\x01", now=0.0)
    assert partial is not None and max(partial.marks) == 4
    keep.kept.keep(PEER, partial, now=0.0)
    assert first.initiator.resume_point is None  # nothing confirmed to it
    # An earlier association's sender that saw checkpoint 2 confirmed:
    point = ResumePoint(
        identifier=identifier(1), activity_id=b"\x02\x01\x01", serial=2, offset=2048
    )
    second = recovered(keep, 2, point, checkpointed())
    second.initiator.resume_transfer(data, point)
    resumed, delivered = second.pump().responder
    assert resumed == TransferResumed(transfer_id=1, serial=2, offset=2048)
    assert isinstance(delivered, TransferReceived) and delivered.apdu == data


def test_a_resumption_of_what_was_not_kept_is_refused_as_an_unrecognized_activity() -> None:
    keep, data = Keep(), apdu(20_000)
    first = bound(keep, 1, checkpointed())
    first.initiator.send_transfer(data)
    assert cut(first, after=9_000)
    point = first.initiator.resume_point
    assert point is not None  # (the receiver's part is not kept)
    second = recovered(keep, 2, point, checkpointed())
    second.initiator.resume_transfer(data, point)
    pumped = second.pump()
    assert received(pumped.responder) == []
    (aborted,) = pumped.initiator
    assert aborted == Aborted(
        by_peer=True,
        why="session: aborted by the peer (unrecognized-activity)",
        reason="unrecognized-activity",
    )
    rtab = user_abort_rtab(b"".join(second.sent_by_responder))
    assert rtab.abort_reason == AbortReason.UNRECOGNIZED_ACTIVITY
    assert second.initiator.resume_point is None  # the peer gave it up: not again


def test_a_peer_that_binds_instead_of_recovering_gets_the_transfer_afresh() -> None:
    keep = Keep()
    point = ResumePoint(
        identifier=identifier(1), activity_id=b"\x02\x01\x01", serial=3, offset=6144
    )
    pair = Pair(checkpointed(), AssociationSettings())
    pair.initiator.send_bind(ARGUMENT, identifier=identifier(2), recover=point.identifier)
    (requested,) = pair.pump().responder
    assert isinstance(requested, RecoveryRequested)
    pair.responder.accept_bind(RESULT)  # as if it had been a bind: an MTA-bind result
    (accepted,) = pair.pump().initiator
    assert isinstance(accepted, BindAccepted) and not accepted.recovered
    assert accepted.result == RESULT
    data = apdu(5_000)
    pair.initiator.send_transfer(data)
    (delivered,) = received(pair.pump().responder)
    assert delivered.apdu == data
    assert keep.kept.octets == 0


def test_the_cn_names_the_connection_only_when_given_an_identifier() -> None:
    plain = Pair()
    plain.bind()
    (cn,) = [unit for unit in spdus(plain.sent_by_initiator[1]) if unit.kind is Kind.CN]
    assert cn.connection_identifier is None
    named = bound(Keep(), 7, checkpointed())
    (cn,) = [unit for unit in spdus(named.sent_by_initiator[1]) if unit.kind is Kind.CN]
    assert cn.connection_identifier == identifier(7).connection_identifier()


# --- what is not left for recovery ------------------------------------------------------


def test_nothing_is_left_before_the_first_checkpoint_is_confirmed() -> None:
    keep = Keep()
    pair = bound(keep, 1, checkpointed())
    pair.initiator.send_transfer(apdu(20_000))
    assert cut(pair, after=1_000)
    assert pair.initiator.resume_point is None
    assert pair.responder.interrupted_transfer is None


def test_nothing_is_left_without_checkpoints() -> None:
    keep = Keep()
    pair = bound(keep, 1, checkpointed(size=0))
    pair.initiator.send_transfer(apdu(20_000))
    assert cut(pair, after=9_000)
    assert pair.initiator.resume_point is None
    assert pair.responder.interrupted_transfer is None


def test_nothing_is_left_on_a_connection_the_cn_did_not_name() -> None:
    pair = Pair(checkpointed(), AssociationSettings())
    pair.bind()
    pair.initiator.send_transfer(apdu(20_000))
    assert cut(pair, after=9_000)
    assert pair.initiator.resume_point is None
    assert pair.responder.interrupted_transfer is None


def test_nothing_is_left_when_the_sender_aborts_the_transfer() -> None:
    keep = Keep()
    pair = bound(keep, 1, checkpointed())
    pair.initiator.send_transfer(apdu(20_000))
    for _ in range(3):
        pair.deliver(True)
        pair.deliver(False)
    pair.initiator.abort("given up")  # RT-U-ABORT, user-error: the peer drops it
    pair.pump()
    assert pair.responder.closed and pair.responder.interrupted_transfer is None
    assert pair.initiator.resume_point is not None  # (its user knows it gave up)


def test_the_receivers_own_temporary_abort_keeps_what_it_had() -> None:
    keep = Keep()
    pair = bound(keep, 1, checkpointed())
    pair.initiator.send_transfer(apdu(20_000))
    for _ in range(3):
        pair.deliver(True)
        pair.deliver(False)
    pair.responder.abort("stopping", temporary=True)
    (aborted,) = pair.pump().initiator
    assert isinstance(aborted, Aborted) and aborted.reason == "temporary-problem"
    assert pair.responder.interrupted_transfer is not None
    assert pair.initiator.resume_point is not None


# --- the property: any cuts, one delivery ------------------------------------------------


@settings(max_examples=examples(1), deadline=None)
@given(
    size=st.integers(4, 100_000),
    checkpoint=st.integers(1, 4),
    window=st.integers(1, 4),
    cuts=st.lists(st.integers(0, 99), min_size=1, max_size=4),
)
def test_any_cuts_deliver_the_apdu_once_byte_for_byte(
    size: int, checkpoint: int, window: int, cuts: list[int]
) -> None:
    # Each cut falls after ``cuts[n]`` percent of what is left of the transfer on the
    # wire (plus a tenth: past its end, the transfer completes uncut).
    keep, data = Keep(), apdu(size)
    whole = len(transfer_head(data)) + len(data)
    settings_ = checkpointed(checkpoint, window)
    deliveries: list[bytes] = []
    point: ResumePoint | None = None
    for number, percent in enumerate([*cuts, None], start=1):
        if point is None:
            pair = bound(keep, number, settings_)
            pair.initiator.send_transfer(data)
        else:
            pair = recovered(keep, number, point, settings_)
            pair.initiator.resume_transfer(data, point)
        left = whole - (0 if point is None else point.offset)
        was_cut = percent is not None and cut(pair, after=percent * left * 11 // 1000)
        if not was_cut:
            pair.pump()
        deliveries += [event.apdu for event in received(pair.responder_events)]
        if not was_cut:
            assert TransferConfirmed(transfer_id=1) in confirm(pair)
            if point is not None:  # only what follows the checkpoint went again
                assert sum(rttr_lengths(b"".join(pair.sent_by_initiator))) == whole - point.offset
            break
        assert received(pair.responder_events) == []  # (a cut falls before the end)
        keep.keep(pair.responder)
        point = pair.initiator.resume_point
    assert deliveries == [data]


@pytest.mark.parametrize("role", [Role.INITIATOR, Role.RESPONDER])
def test_a_fresh_association_leaves_nothing(role: Role) -> None:
    association = P1Association(role, checkpointed())
    assert association.resume_point is None and association.interrupted_transfer is None
