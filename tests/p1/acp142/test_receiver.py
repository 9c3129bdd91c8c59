"""P_MUL's receiving node (p1.acp142.receiver): each rule of the module docstring, driven
PDU by PDU with explicit times."""

from __future__ import annotations

import pytest

from p1.acp142 import receiver as receiver_module
from p1.acp142.pdu import AckInfo, AddressPdu, DataPdu, DestinationEntry, DiscardPdu, node_id
from p1.acp142.receiver import (
    Dropped,
    MessageComplete,
    Receiver,
    ReceiverLimits,
    Refused,
)

A = node_id("10.0.0.1")
B = node_id("10.0.0.2")
C = node_id("10.0.0.3")
EXPIRY = 10_000
LIMITS = ReceiverLimits(ack_delay=2.0, unidentified_validity=30.0)


def _address(
    total: int,
    message_id: int = 7,
    *,
    to: tuple[int, ...] = (B,),
    source: int = A,
    priority: int = 4,
) -> AddressPdu:
    return AddressPdu(
        priority=priority,
        source=source,
        message_id=message_id,
        expiry=EXPIRY,
        total=total,
        destinations=tuple(DestinationEntry(n, 1) for n in to),
    )


def _data(
    sequence: int, fragment: bytes | None = None, message_id: int = 7, source: int = A
) -> DataPdu:
    return DataPdu(
        priority=4,
        source=source,
        message_id=message_id,
        sequence=sequence,
        fragment=fragment if fragment is not None else bytes((sequence,)) * 3,
    )


def _whole(total: int) -> bytes:
    return b"".join(bytes((n,)) * 3 for n in range(1, total + 1))


def _complete(
    data: bytes, message_id: int = 7, source: int = A, to: tuple[int, ...] = (B,)
) -> MessageComplete:
    return MessageComplete(
        source=source, message_id=message_id, priority=4, data=data, destinations=to
    )


def test_a_message_for_another_node_is_not_ours() -> None:
    receiver = Receiver(B, LIMITS)
    assert receiver.receive(_address(2, to=(C,)), 0.0) == []
    assert receiver.holding == 0
    assert receiver.timer is None


def test_a_message_is_handed_up_once_complete_and_acknowledged_once_committed() -> None:
    receiver = Receiver(B, LIMITS)
    assert receiver.receive(_address(3, to=(C, B)), 0.0) == []
    assert receiver.receive(_data(1), 0.1) == []
    assert receiver.receive(_data(3), 0.2) == []
    assert receiver.receive(_data(2), 0.3) == [_complete(_whole(3), to=(C, B))]
    assert receiver.acks_to_send() == []
    assert receiver.receive(_data(2), 0.4) == []  # a copy
    receiver.committed(A, 7, 0.5)
    assert receiver.acks_to_send() == [(A, AckInfo(A, 7))]
    assert receiver.acks_to_send() == []
    assert receiver.holding == 0


def test_data_in_any_order_and_copies() -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(4), 0.0)
    for sequence in (4, 4, 2, 1, 2):
        assert receiver.receive(_data(sequence), 0.0) == []
    assert receiver.receive(_data(3), 0.0) == [_complete(_whole(4))]


def test_a_data_pdu_numbered_past_the_total_is_ignored() -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(1), 0.0)
    assert receiver.receive(_data(2), 0.0) == []
    assert receiver.receive(_data(1), 0.0) == [_complete(_whole(1))]


def test_an_incomplete_message_is_answered_with_what_it_misses() -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(6), 0.0)
    receiver.receive(_data(1), 0.5)
    receiver.receive(_data(5), 1.0)
    assert receiver.timer == 3.0  # ack_delay after the last PDU arrived
    assert receiver.handle_timer(2.9) == []
    assert receiver.acks_to_send() == []
    assert receiver.handle_timer(3.0) == []
    assert receiver.acks_to_send() == [(A, AckInfo(A, 7, (2, 3, 4, 6)))]
    assert receiver.timer == EXPIRY
    # Nothing more arrives: no second answer until something does.
    assert receiver.handle_timer(100.0) == []
    assert receiver.acks_to_send() == []
    receiver.receive(_address(6), 200.0)
    receiver.handle_timer(202.0)
    assert receiver.acks_to_send() == [(A, AckInfo(A, 7, (2, 3, 4, 6)))]


def test_an_address_pdu_alone_is_answered_with_everything_missing() -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(3), 0.0)
    receiver.handle_timer(2.0)
    assert receiver.acks_to_send() == [(A, AckInfo(A, 7, (1, 2, 3)))]


def test_data_before_its_address_pdu_is_held_then_used() -> None:
    receiver = Receiver(B, LIMITS)
    assert receiver.receive(_data(2), 0.0) == []
    assert receiver.receive(_data(1), 1.0) == []
    assert receiver.holding == 0
    assert receiver.timer == 30.0
    assert receiver.receive(_address(2), 5.0) == [_complete(_whole(2))]
    assert receiver.timer is None


def test_held_data_expires() -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_data(1), 0.0)
    receiver.receive(_data(2), 20.0)
    assert receiver.handle_timer(30.0) == []
    assert receiver.timer == 50.0
    assert receiver.receive(_address(3), 31.0) == []
    receiver.handle_timer(33.0)
    assert receiver.acks_to_send() == [(A, AckInfo(A, 7, (1, 3)))]


def test_at_most_max_unidentified_held() -> None:
    receiver = Receiver(B, ReceiverLimits(max_unidentified=3))
    for sequence in range(1, 6):
        receiver.receive(_data(sequence), 0.0)
    receiver.receive(_address(5), 1.0)
    receiver.handle_timer(3.0)
    assert receiver.acks_to_send() == [(A, AckInfo(A, 7, (4, 5)))]


def test_at_most_max_messages_incomplete() -> None:
    receiver = Receiver(B, ReceiverLimits(max_messages=2))
    assert receiver.receive(_address(2, 1), 0.0) == []
    assert receiver.receive(_address(2, 2), 0.0) == []
    assert receiver.receive(_address(2, 3), 0.0) == [
        Refused(source=A, message_id=3, why="2 incomplete messages are held already")
    ]
    assert receiver.holding == 2
    # Already held: announced again, not refused.
    assert receiver.receive(_address(2, 2), 0.0) == []
    receiver.receive(_data(1, message_id=1), 0.0)
    assert receiver.receive(_data(2, message_id=1), 0.0) == [_complete(_whole(2), 1)]
    receiver.committed(A, 1, 0.0)
    assert receiver.receive(_address(2, 3), 0.0) == []
    assert receiver.holding == 2


def test_no_new_message_once_max_octets_are_held() -> None:
    receiver = Receiver(B, ReceiverLimits(max_octets=6))
    receiver.receive(_address(3, 1), 0.0)
    receiver.receive(_data(1, message_id=1), 0.0)
    receiver.receive(_data(2, message_id=1), 0.0)
    assert receiver.receive(_address(3, 2), 0.0) == [
        Refused(source=A, message_id=2, why="6 octets of incomplete messages are held already")
    ]


def test_data_that_would_pass_max_octets_in_all_gives_its_message_up() -> None:
    # Two messages admitted while little is held may not grow past the bound together.
    receiver = Receiver(B, ReceiverLimits(max_octets=10, max_message=100))
    receiver.receive(_address(4, 1), 0.0)
    receiver.receive(_address(4, 2), 0.0)
    for message_id, sequence in ((1, 1), (1, 2), (2, 1)):
        assert receiver.receive(_data(sequence, message_id=message_id), 0.0) == []
    assert receiver.receive(_data(2, message_id=2), 0.0) == [
        Dropped(
            source=A,
            message_id=2,
            why="more than 10 octets of incomplete messages held",
            received=2,
            total=4,
        )
    ]
    assert receiver.holding == 1
    receiver.receive(_data(3, message_id=1), 0.0)
    assert receiver.receive(_data(4, message_id=1), 0.0) == [
        Dropped(
            source=A,
            message_id=1,
            why="more than 10 octets of incomplete messages held",
            received=4,
            total=4,
        )
    ]


def test_a_message_as_large_as_max_octets_is_taken() -> None:
    receiver = Receiver(B, ReceiverLimits(max_octets=6, max_message=6))
    receiver.receive(_address(2), 0.0)
    receiver.receive(_data(1), 0.0)
    assert receiver.receive(_data(2), 0.0) == [_complete(_whole(2))]


def test_a_message_over_max_message_is_given_up() -> None:
    receiver = Receiver(B, ReceiverLimits(max_message=5))
    receiver.receive(_address(3), 0.0)
    assert receiver.receive(_data(1), 0.0) == []
    assert receiver.receive(_data(2), 0.0) == [
        Dropped(source=A, message_id=7, why="larger than 5 octets", received=2, total=3)
    ]
    assert receiver.holding == 0
    assert receiver.timer is None


def test_an_address_pdu_announcing_nothing_is_refused() -> None:
    receiver = Receiver(B, LIMITS)
    assert receiver.receive(_address(0), 0.0) == [
        Refused(source=A, message_id=7, why="an Address_PDU announcing no Data_PDU")
    ]


def test_announced_again_with_another_total_the_first_stands() -> None:
    # Some senders write, in a retransmission's Address_PDU, how many Data_PDUs they
    # resend: the message is still the one first announced.
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(3), 0.0)
    receiver.receive(_data(1), 0.0)
    receiver.receive(_data(3), 0.0)
    assert receiver.receive(_address(1), 0.5) == []
    assert receiver.holding == 1
    assert receiver.receive(_data(2), 0.6) == [_complete(_whole(3))]


def test_committed_messages_are_remembered_within_a_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(receiver_module, "_REMEMBERED", 3)
    receiver = Receiver(B, LIMITS)
    for message_id in range(1, 6):
        receiver.receive(_address(1, message_id), 0.0)
        receiver.receive(_data(1, message_id=message_id), 0.0)
        receiver.committed(A, message_id, 0.0)
    receiver.acks_to_send()
    receiver.receive(_address(1, 5), 1.0)  # remembered: acknowledged again
    assert receiver.acks_to_send() == [(A, AckInfo(A, 5))]
    receiver.receive(_address(1, 1), 1.0)  # the oldest, forgotten: taken as new
    assert receiver.acks_to_send() == []
    assert receiver.holding == 1


def test_a_discard_drops_an_incomplete_message() -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(3), 0.0)
    receiver.receive(_data(2), 0.0)
    assert receiver.receive(DiscardPdu(priority=4, source=A, message_id=7), 1.0) == [
        Dropped(source=A, message_id=7, why="discarded by its sender", received=1, total=3)
    ]
    assert receiver.holding == 0
    assert receiver.timer is None
    assert receiver.receive(DiscardPdu(priority=4, source=A, message_id=7), 1.0) == []


def test_a_discard_forgets_held_data() -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_data(1), 0.0)
    assert receiver.receive(DiscardPdu(priority=4, source=A, message_id=7), 1.0) == []
    assert receiver.timer is None
    receiver.receive(_address(1), 2.0)
    receiver.handle_timer(4.0)
    assert receiver.acks_to_send() == [(A, AckInfo(A, 7, (1,)))]


def test_a_discard_after_the_message_was_handed_up_changes_nothing() -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(1), 0.0)
    receiver.receive(_data(1), 0.0)
    assert receiver.receive(DiscardPdu(priority=4, source=A, message_id=7), 1.0) == []
    receiver.committed(A, 7, 2.0)
    assert receiver.acks_to_send() == [(A, AckInfo(A, 7))]


def test_an_incomplete_message_expires() -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(2), 0.0)
    receiver.receive(_data(1), 0.0)
    receiver.handle_timer(2.0)
    receiver.acks_to_send()
    assert receiver.timer == EXPIRY
    assert receiver.handle_timer(EXPIRY - 0.5) == []
    assert receiver.handle_timer(EXPIRY) == [
        Dropped(source=A, message_id=7, why="expired before it was complete", received=1, total=2)
    ]
    assert receiver.timer is None
    assert receiver.acks_to_send() == []


def test_an_address_pdu_that_arrives_expired_is_ignored() -> None:
    # A late copy of the last announcement: the message was dropped at its expiry already.
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(2), 0.0)
    assert receiver.handle_timer(EXPIRY) == [
        Dropped(source=A, message_id=7, why="expired before it was complete", received=0, total=2)
    ]
    assert receiver.receive(_address(2), EXPIRY + 0.2) == []
    assert receiver.receive(_data(1), EXPIRY + 0.3) == []
    assert receiver.holding == 0
    assert receiver.handle_timer(EXPIRY + 1.0) == []


def test_a_committed_message_is_remembered_until_its_expiry() -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(1), 0.0)
    receiver.receive(_data(1), 0.0)
    receiver.committed(A, 7, 1.0)
    receiver.acks_to_send()
    assert receiver.timer == EXPIRY
    # Announced again: acknowledged again, never handed up again.
    assert receiver.receive(_address(1), 50.0) == []
    assert receiver.receive(_data(1), 50.0) == []
    assert receiver.acks_to_send() == [(A, AckInfo(A, 7))]
    assert receiver.handle_timer(EXPIRY) == []
    assert receiver.timer is None


def test_committed_after_its_expiry_is_remembered_a_moment() -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(1), 0.0)
    receiver.receive(_data(1), 0.0)
    receiver.committed(A, 7, EXPIRY + 10.5)
    assert receiver.acks_to_send() == [(A, AckInfo(A, 7))]
    assert receiver.handle_timer(EXPIRY + 10.5) == []
    assert receiver.timer is None


def test_announced_again_while_being_committed_it_is_not_acknowledged() -> None:
    # Handed up, not yet committed: the sender's next burst must not hear that we have it.
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(1), 0.0)
    assert receiver.receive(_data(1), 0.0) == [_complete(_whole(1))]
    assert receiver.receive(_address(1), 5.0) == []
    assert receiver.timer is None
    assert receiver.handle_timer(10.0) == []
    assert receiver.acks_to_send() == []
    receiver.committed(A, 7, 11.0)
    assert receiver.acks_to_send() == [(A, AckInfo(A, 7))]


def test_a_refused_message_is_forgotten_and_taken_again() -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(2), 0.0)
    receiver.receive(_data(1), 0.0)
    assert receiver.receive(_data(2), 0.0) == [_complete(_whole(2))]
    receiver.refused(A, 7)
    assert receiver.holding == 0
    assert receiver.acks_to_send() == []
    assert receiver.handle_timer(100.0) == []
    assert receiver.acks_to_send() == []
    receiver.receive(_address(2), 100.0)
    receiver.receive(_data(2), 100.0)
    assert receiver.receive(_data(1), 100.0) == [_complete(_whole(2))]
    receiver.committed(A, 7, 101.0)
    assert receiver.acks_to_send() == [(A, AckInfo(A, 7))]


def test_the_same_message_id_from_two_sources() -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(1, source=A), 0.0)
    receiver.receive(_address(1, source=C), 0.0)
    assert receiver.receive(_data(1, b"a", source=C), 0.0) == [_complete(b"a", source=C)]
    assert receiver.receive(_data(1, b"c", source=A), 0.0) == [_complete(b"c", source=A)]


@pytest.mark.parametrize("total", [1, 2, 5])
def test_the_priority_handed_up_is_the_address_pdus(total: int) -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(total, priority=200), 0.0)
    events = [e for n in range(1, total + 1) for e in receiver.receive(_data(n), 0.0)]
    assert [e.priority for e in events if isinstance(e, MessageComplete)] == [200]


def test_what_is_missing_is_worked_out_only_to_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    # Listing the missing numbers walks the whole message: done for each Data_PDU, a
    # message of n Data_PDUs would cost n * n steps (65535 of them: minutes).
    listed: list[int] = []
    missing = vars(receiver_module._Incoming)["missing"]

    def counted(incoming: receiver_module._Incoming) -> tuple[int, ...]:
        listed.append(1)
        return missing.fget(incoming)  # type: ignore[no-any-return]

    monkeypatch.setattr(receiver_module._Incoming, "missing", property(counted))
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(1000), 0.0)
    for sequence in range(1000, 1, -1):
        receiver.receive(_data(sequence, b"x"), 0.0)
    assert listed == []
    receiver.handle_timer(2.0)
    assert receiver.acks_to_send() == [(A, AckInfo(A, 7, (1,)))]
    assert len(listed) == 1
    assert receiver.receive(_data(1, b"x"), 3.0) == [_complete(b"x" * 1000)]
    assert len(listed) == 1


def test_the_last_data_pdu_of_an_incomplete_message_is_answered_at_once() -> None:
    receiver = Receiver(B, LIMITS)
    receiver.receive(_address(4), 0.0)
    receiver.receive(_data(1), 0.1)
    receiver.receive(_data(2), 0.2)
    assert receiver.timer == pytest.approx(0.2 + LIMITS.ack_delay)
    receiver.receive(_data(4), 0.3)  # the last one: the first burst is over, 3 lost
    assert receiver.timer == 0.3
    receiver.handle_timer(0.3)
    assert receiver.acks_to_send() == [(A, AckInfo(A, 7, (3,)))]
