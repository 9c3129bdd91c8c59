"""One P_MUL node (p1.acp142.node), as an adapter drives it: datagrams per destination with
their rank, the burst's end, Message_IDs and sequence numbers, acknowledgements out and in,
bad datagrams, and its one timer over random sequences of what an adapter does."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from p1.acp142.node import BadPdu, Datagram, Delivered, Node, Undelivered
from p1.acp142.pdu import (
    AckInfo,
    AckPdu,
    AddressPdu,
    DataPdu,
    DestinationEntry,
    DiscardPdu,
    Pdu,
    decode_pdu,
    encode_pdu,
    node_id,
)
from p1.acp142.receiver import MessageComplete, ReceiverLimits
from p1.acp142.sender import Destination, SenderTimers
from tests.profiles import examples

A = node_id("10.0.0.1")
B = node_id("10.0.0.2")
C = node_id("10.0.0.3")
EXPIRY = 10_000
TIMERS = SenderTimers(retransmission=30.0, backoff=2.0, max_retransmission=100.0)


def _send(node: Node, data: bytes = b"x" * 100, *to: int, rank: int = 3, priority: int = 9) -> int:
    return node.send_message(
        data,
        [Destination(n) for n in to or (B, C)],
        priority=priority,
        rank=rank,
        expiry=EXPIRY,
        max_pdu=56,
        timers=TIMERS,
    )


def _pdus(datagrams: list[Datagram]) -> list[tuple[int, Pdu]]:
    return [(d.to, decode_pdu(d.data)) for d in datagrams]


def test_a_burst_goes_to_each_destination_in_the_order_made() -> None:
    node = Node(A)
    message_id = _send(node)
    datagrams = node.datagrams_to_send()
    assert node.datagrams_to_send() == []
    # 100 octets in fragments of 40: an Address_PDU and three Data_PDUs, each to B and C.
    kinds = [(to, type(pdu).__name__, getattr(pdu, "sequence", 0)) for to, pdu in _pdus(datagrams)]
    assert kinds == [
        (B, "AddressPdu", 0),
        (C, "AddressPdu", 0),
        (B, "DataPdu", 1),
        (C, "DataPdu", 1),
        (B, "DataPdu", 2),
        (C, "DataPdu", 2),
        (B, "DataPdu", 3),
        (C, "DataPdu", 3),
    ]
    assert [d.ends_burst for d in datagrams] == [None] * 7 + [message_id]
    assert {d.rank for d in datagrams} == {3}
    assert {pdu.priority for _, pdu in _pdus(datagrams)} == {9}


@given(priority=st.integers(0, 255), rank=st.integers(-5, 20))
def test_every_datagram_of_a_message_carries_its_rank(priority: int, rank: int) -> None:
    node = Node(A)
    message_id = _send(node, b"y" * 200, B, rank=rank, priority=priority)
    out = node.datagrams_to_send()
    node.burst_sent(message_id, 1.0)
    node.handle_timer(31.0)
    out += node.datagrams_to_send()
    node.handle_timer(EXPIRY)
    discard = node.datagrams_to_send()
    assert [type(decode_pdu(d.data)) for d in discard] == [DiscardPdu]
    for datagram in out + discard:
        assert datagram.rank == rank
        assert decode_pdu(datagram.data).priority == priority


def test_message_ids_and_sequence_numbers() -> None:
    node = Node(A, first_message_id=0xFFFFFFFF)
    first = _send(node, b"a", B)
    second = _send(node, b"b", B, C)
    third = _send(node, b"c", C)
    assert (first, second, third) == (0xFFFFFFFF, 1, 2)
    addresses = [p for _, p in _pdus(node.datagrams_to_send()) if isinstance(p, AddressPdu)]
    sequences = [tuple((d.node, d.sequence) for d in a.destinations) for a in addresses]
    # Message_Sequence_Number counts the messages sent to each node.
    assert sequences == [((B, 1),), ((B, 2), (C, 1)), ((B, 2), (C, 1)), ((C, 2),)]


def test_a_message_id_in_use_is_not_given_again() -> None:
    node = Node(A, first_message_id=0)
    assert _send(node) == 1
    for _ in range(3):
        _send(node)
    node._next_id = 1  # the counter came round while message 1 is still being sent
    assert _send(node) == 5
    assert node.sending == 5


def test_an_acknowledgement_serves_its_destination() -> None:
    node = Node(A)
    message_id = _send(node)
    node.datagrams_to_send()
    assert node.burst_sent(message_id, 1.0) == []
    ack = AckPdu(priority=0, node=B, entries=(AckInfo(A, message_id),))
    assert node.receive_datagram(encode_pdu(ack), 2.0) == [
        Delivered(message_id=message_id, node=B, acknowledged=True)
    ]
    ack = AckPdu(priority=0, node=C, entries=(AckInfo(A, message_id), AckInfo(A, 999)))
    assert node.receive_datagram(encode_pdu(ack), 3.0) == [
        Delivered(message_id=message_id, node=C, acknowledged=True)
    ]
    assert node.sending == 0
    assert node.timer is None
    assert node.datagrams_to_send() == []


def test_a_destination_served_gets_no_more_of_the_message() -> None:
    node = Node(A)
    message_id = _send(node)
    node.datagrams_to_send()
    node.burst_sent(message_id, 1.0)
    ack = AckPdu(priority=0, node=B, entries=(AckInfo(A, message_id),))
    node.receive_datagram(encode_pdu(ack), 2.0)
    node.handle_timer(31.0)
    burst = node.datagrams_to_send()
    assert [type(p).__name__ for _, p in _pdus(burst)] == ["AddressPdu"] + ["DataPdu"] * 3
    assert {d.to for d in burst} == {C}
    assert burst[-1].ends_burst == message_id


def test_acknowledgements_of_others_messages_are_not_ours() -> None:
    node = Node(A)
    message_id = _send(node)
    node.datagrams_to_send()
    node.burst_sent(message_id, 1.0)
    ack = AckPdu(priority=0, node=B, entries=(AckInfo(C, message_id),))
    assert node.receive_datagram(encode_pdu(ack), 2.0) == []
    assert node.sending == 1


def test_when_both_destinations_list_what_they_miss_the_next_burst_goes() -> None:
    node = Node(A)
    message_id = _send(node)
    node.datagrams_to_send()
    node.burst_sent(message_id, 1.0)
    for destination, missing in ((B, (2,)), (C, (3,))):
        ack = AckPdu(priority=0, node=destination, entries=(AckInfo(A, message_id, missing),))
        assert node.receive_datagram(encode_pdu(ack), 2.0) == []
    burst = _pdus(node.datagrams_to_send())
    assert [(to, getattr(p, "sequence", 0)) for to, p in burst] == [
        (B, 0),
        (C, 0),
        (B, 2),
        (C, 2),
        (B, 3),
        (C, 3),
    ]


def test_expiry_gives_undelivered_and_a_discard() -> None:
    node = Node(A)
    message_id = _send(node)
    node.datagrams_to_send()
    assert node.timer == EXPIRY
    assert node.handle_timer(EXPIRY) == [
        Undelivered(message_id=message_id, node=B),
        Undelivered(message_id=message_id, node=C),
    ]
    discards = node.datagrams_to_send()
    assert _pdus(discards) == [
        (n, DiscardPdu(priority=9, source=A, message_id=message_id)) for n in (B, C)
    ]
    assert all(d.ends_burst is None for d in discards)
    assert node.sending == 0
    assert node.timer is None


def test_cancel_sends_nothing_more() -> None:
    node = Node(A)
    message_id = _send(node)
    node.datagrams_to_send()
    node.cancel(message_id)
    assert node.burst_sent(message_id, 1.0) == []
    assert node.timer is None
    assert node.handle_timer(EXPIRY) == []
    assert node.datagrams_to_send() == []
    assert node.sending == 0


def _announce(node: Node, message_id: int, total: int, source: int = A) -> None:
    address = AddressPdu(
        priority=2,
        source=source,
        message_id=message_id,
        expiry=EXPIRY,
        total=total,
        destinations=(DestinationEntry(node.node_id, 1),),
    )
    assert node.receive_datagram(encode_pdu(address), 0.0) == []


def _deliver(node: Node, message_id: int, sequence: int, source: int = A) -> list[object]:
    data = DataPdu(
        priority=2, source=source, message_id=message_id, sequence=sequence, fragment=b"z"
    )
    return list(node.receive_datagram(encode_pdu(data), 0.0))


def test_a_message_received_is_acknowledged_once_committed() -> None:
    node = Node(B)
    _announce(node, 5, 2)
    assert _deliver(node, 5, 1) == []
    assert _deliver(node, 5, 2) == [
        MessageComplete(source=A, message_id=5, priority=2, data=b"zz", destinations=(B,))
    ]
    assert node.datagrams_to_send() == []
    node.committed(A, 5, 1.0)
    [ack] = node.datagrams_to_send()
    assert ack.to == A
    assert ack.rank == -1
    assert ack.ends_burst is None
    assert decode_pdu(ack.data) == AckPdu(priority=0, node=B, entries=(AckInfo(A, 5),))


def test_acknowledgements_due_together_share_an_ack_pdu_per_node() -> None:
    node = Node(B, receiver=ReceiverLimits(max_messages=100))
    for message_id in range(1, 71):
        _announce(node, message_id, 2)
        _deliver(node, message_id, 1)
    _announce(node, 1, 2, source=C)
    assert node.handle_timer(2.0) == []
    acks = _pdus(node.datagrams_to_send())
    assert [(to, len(pdu.entries)) for to, pdu in acks if isinstance(pdu, AckPdu)] == [
        (A, 64),
        (A, 6),
        (C, 1),
    ]
    entries = [e for _, pdu in acks if isinstance(pdu, AckPdu) for e in pdu.entries]
    assert entries[:70] == [AckInfo(A, n, (2,)) for n in range(1, 71)]
    assert entries[70] == AckInfo(C, 1, (1, 2))


UDP_MAX = 65507
"""The largest UDP payload over IPv4."""


def _every_fifth(node: Node, message_id: int, total: int) -> set[int]:
    """Announce ``total`` Data_PDUs to ``node``, deliver one in five; what it misses."""
    _announce(node, message_id, total)
    received = range(1, total + 1, 5)
    for sequence in received:
        _deliver(node, message_id, sequence)
    return set(range(1, total + 1)) - set(received)


def test_a_long_list_of_missing_numbers_is_cut_to_fit_an_ack_pdu() -> None:
    # 65535 Data_PDUs, one in five received: the missing numbers take 13107 ranges, 78642
    # octets, more than a datagram holds.  The lowest are listed; the rest next time.
    node = Node(B)
    missing = _every_fifth(node, 5, 0xFFFF)
    node.handle_timer(2.0)
    [ack] = node.datagrams_to_send()
    assert len(ack.data) <= UDP_MAX
    pdu = decode_pdu(ack.data)
    assert isinstance(pdu, AckPdu)
    [entry] = pdu.entries
    listed = set(entry.missing)
    assert listed < missing
    assert sorted(listed) == sorted(missing)[: len(listed)]
    assert len(listed) > 0.8 * len(missing)


def test_entries_too_long_together_go_in_several_ack_pdus() -> None:
    node = Node(B)
    first = _every_fifth(node, 5, 30_000)
    second = _every_fifth(node, 6, 30_000)
    node.handle_timer(2.0)
    acks = node.datagrams_to_send()
    assert [len(a.data) <= UDP_MAX for a in acks] == [True, True]
    entries = [e for a in acks for e in decode_pdu(a.data).entries]  # type: ignore[union-attr]
    assert entries == [AckInfo(A, 5, tuple(sorted(first))), AckInfo(A, 6, tuple(sorted(second)))]


def test_a_datagram_that_is_not_a_pdu_changes_nothing() -> None:
    node = Node(B)
    _announce(node, 5, 2)
    good = encode_pdu(DataPdu(priority=2, source=A, message_id=5, sequence=1, fragment=b"z"))
    for bad, kind in ((b"", "short"), (good[:-1], "length"), (good[:-1] + b"y", "checksum")):
        [event] = node.receive_datagram(bad, 0.0)
        assert isinstance(event, BadPdu)
        assert event.kind == kind
    assert node.receiver.holding == 1
    assert node.handle_timer(2.0) == []
    [ack] = _pdus(node.datagrams_to_send())
    assert ack == (A, AckPdu(priority=0, node=B, entries=(AckInfo(A, 5, (1, 2)),)))


# --- the timer ----------------------------------------------------------------------------

PEERS = (B, C)


@st.composite
def operations(draw: st.DrawFn) -> list[tuple[str, int, int, float]]:
    """What an adapter may do, in any order: (operation, a, b, how long after the last)."""
    names = st.sampled_from(
        [
            "send",
            "address",
            "data",
            "ack",
            "nack",
            "discard",
            "junk",
            "committed",
            "refused",
            "burst_sent",
            "cancel",
            "timer",
            "timer",
            "timer",
        ]
    )
    return draw(
        st.lists(
            st.tuples(names, st.integers(1, 4), st.integers(1, 4), st.floats(0.0, 80.0)),
            max_size=60,
        )
    )


def _apply(node: Node, operation: str, a: int, b: int, now: float) -> list[object]:
    peer = PEERS[a % 2]
    pdu: Pdu | None = None
    if operation == "send":
        _send(node, b"q" * (a * 30), *PEERS[: b % 2 + 1])
    elif operation == "address":
        pdu = AddressPdu(
            priority=1,
            source=peer,
            message_id=b,
            expiry=int(now) + a * 40,
            total=a,
            destinations=(DestinationEntry(A, b),),
        )
    elif operation == "data":
        pdu = DataPdu(priority=1, source=peer, message_id=b, sequence=a, fragment=b"d")
    elif operation in ("ack", "nack"):
        missing = (a,) if operation == "nack" else ()
        pdu = AckPdu(priority=0, node=peer, entries=(AckInfo(A, b, missing),))
    elif operation == "discard":
        pdu = DiscardPdu(priority=1, source=peer, message_id=b)
    elif operation == "junk":
        return list(node.receive_datagram(bytes(a * 5), now))
    elif operation == "committed":
        node.committed(peer, b, now)
    elif operation == "refused":
        node.refused(peer, b)
    elif operation == "burst_sent":
        return list(node.burst_sent(b, now))
    elif operation == "cancel":
        node.cancel(b)
    if pdu is not None:
        return list(node.receive_datagram(encode_pdu(pdu), now))
    return []


@given(operations())
def test_the_timer_is_never_due_once_handled(steps: list[tuple[str, int, int, float]]) -> None:
    node = Node(A)
    now = 1000.0
    for operation, a, b, later in steps:
        now += later
        _apply(node, operation, a, b, now)
        if operation == "timer":
            due = node.timer
            if due is not None and due <= now:
                node.handle_timer(now)
                after = node.timer
                assert after is None or after > now
        node.datagrams_to_send()
    # Whatever was left, firing the timer each time it is due comes to an end.
    for _ in range(examples(4) * 50):
        due = node.timer
        if due is None:
            break
        now = max(now, due)
        node.handle_timer(now)
        for datagram in node.datagrams_to_send():
            if datagram.ends_burst is not None:
                node.burst_sent(datagram.ends_burst, now)
        after = node.timer
        assert after is None or after > now
    else:
        raise AssertionError("the timer was still set after every message expired")


def test_a_message_sent_to_a_group_goes_there_once_each_burst() -> None:
    group = 0xEFFF2A01
    sender = Node(A)
    sender.send_message(
        b"x" * 100,
        [Destination(B), Destination(C)],
        priority=1,
        rank=4,
        expiry=1000,
        max_pdu=1400,
        timers=SenderTimers(retransmission=1.0),
        to=(group,),
    )
    first = sender.datagrams_to_send()
    assert [d.to for d in first] == [group, group]  # the Address_PDU and one Data_PDU
    sender.burst_sent(first[-1].ends_burst or 0, 1.0)
    sender.handle_timer(2.0)  # nobody answered: a second burst, to the group again
    assert {d.to for d in sender.datagrams_to_send()} == {group}
