"""Whole transfers between P_MUL nodes on the simulated network (tests/p1/acp142/network.py):
delivery exactly once through loss, copies and reordering; expiry and the discard under
loss that never stops; EMCON; a refused or slow commit; copies after the commit."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p1.acp142.node import BadPdu, Delivered, Node, Undelivered
from p1.acp142.pdu import AckPdu, AddressPdu, DataPdu, DiscardPdu, Pdu, node_id
from p1.acp142.receiver import Dropped, MessageComplete, ReceiverLimits, Refused
from p1.acp142.sender import Destination, SenderTimers, fragments_of
from tests.p1.acp142.network import T0, Faults, Network
from tests.profiles import examples

A = node_id("10.0.0.1")
B = node_id("10.0.0.2")
C = node_id("10.0.0.3")
D = node_id("10.0.0.4")
TIMERS = SenderTimers(
    retransmission=2.0,
    backoff=2.0,
    max_retransmission=30.0,
    emcon_repetitions=3,
    emcon_interval=10.0,
)


def _message(size: int, seed: int = 1) -> bytes:
    pattern = bytes((seed * 7 + i * 13) % 256 for i in range(251))
    return (pattern * (size // len(pattern) + 1))[:size]


def _nodes(*ids: int) -> list[Node]:
    return [Node(n, first_message_id=1000 * (i + 1)) for i, n in enumerate(ids)]


def _outcomes(
    net: Network, sender: int, message_id: int
) -> dict[int, list[Delivered | Undelivered]]:
    found: dict[int, list[Delivered | Undelivered]] = {}
    for _, event in net.events[sender]:
        if isinstance(event, Delivered | Undelivered) and event.message_id == message_id:
            found.setdefault(event.node, []).append(event)
    return found


def _handed(net: Network, node: int) -> list[MessageComplete]:
    return net.of(node, MessageComplete)


def _no_bad_pdus(net: Network) -> None:
    for node in net.nodes:
        assert net.of(node, BadPdu) == []


# --- delivery through faults that stop ------------------------------------------------------

SIZES = st.one_of(st.integers(0, 3000), st.integers(0, 200_000))
LOSS = st.floats(0.0, 0.6)


@st.composite
def faults(draw: st.DrawFn, calm: st.SearchStrategy[float]) -> Faults:
    return Faults(
        seed=draw(st.integers(0, 2**32)),
        loss={k: draw(LOSS, label=k) for k in ("address", "data", "last", "ack", "discard")},
        duplicate=draw(st.floats(0.0, 0.5), label="duplicate"),
        jitter=draw(st.sampled_from([0.0, 0.001, 0.02, 0.5]), label="jitter"),
        calm=draw(calm, label="calm"),
    )


@settings(max_examples=examples(0.6), suppress_health_check=[HealthCheck.too_slow])
@given(
    size=SIZES,
    max_pdu=st.integers(64, 1400),
    destinations=st.integers(1, 3),
    faults=faults(st.floats(0.0, 600.0)),
)
def test_each_destination_gets_the_message_once(
    size: int, max_pdu: int, destinations: int, faults: Faults
) -> None:
    data = _message(size)
    receivers = (B, C, D)[:destinations]
    net = Network(_nodes(A, *receivers), faults)
    message_id = net.send(
        A, data, [Destination(n) for n in receivers], max_pdu=max_pdu, timers=TIMERS
    )
    net.run(3700.0)

    for node in receivers:
        handed = _handed(net, node)
        assert [(e.source, e.message_id) for e in handed] == [(A, message_id)]
        assert handed[0].data == data
        assert net.of(node, Dropped) == []
        assert net.nodes[node].receiver.holding == 0
    outcomes = _outcomes(net, A, message_id)
    assert outcomes == {
        n: [Delivered(message_id=message_id, node=n, acknowledged=True)] for n in receivers
    }
    assert net.nodes[A].sending == 0
    assert net.sent_by(A, "discard") == []
    _no_bad_pdus(net)


@settings(max_examples=examples(0.6), suppress_health_check=[HealthCheck.too_slow])
@given(
    size=st.integers(0, 20_000),
    max_pdu=st.integers(64, 1400),
    faults=faults(st.just(math.inf)),
    data=st.data(),
)
def test_under_loss_that_never_stops_the_message_expires(
    size: int, max_pdu: int, faults: Faults, data: st.DataObject
) -> None:
    message = _message(size)
    total = len(fragments_of(message, max_pdu))
    never = data.draw(st.integers(1, total), label="never arrives")

    def cut(time: float, source: int, to: int, pdu: Pdu) -> bool:
        return isinstance(pdu, DataPdu) and to == B and pdu.sequence == never

    faults = Faults(
        seed=faults.seed,
        loss=faults.loss,
        duplicate=faults.duplicate,
        jitter=faults.jitter,
        cut=cut,
    )
    net = Network(_nodes(A, B, C), faults)
    expiry = 300.0
    message_id = net.send(
        A, message, [Destination(B), Destination(C)], max_pdu=max_pdu, timers=TIMERS, expiry=expiry
    )
    net.run(expiry + 60.0)

    outcomes = _outcomes(net, A, message_id)
    assert outcomes[B] == [Undelivered(message_id=message_id, node=B)]
    assert len(outcomes[C]) == 1  # C may have had it, or not
    discards = net.sent_by(A, "discard")
    assert {s.datagram.to for s in discards} >= {B}
    assert all(s.time >= T0 + expiry for s in discards)
    # Nothing of the message goes after its discard.
    assert [s for s in net.sent if s.source == A and s.time > discards[-1].time] == []

    assert _handed(net, B) == []
    announced = any(
        isinstance(d.pdu, AddressPdu) and d.to == B and d.time < d.pdu.expiry for d in net.delivered
    )
    dropped = net.of(B, Dropped)
    assert len(dropped) == (1 if announced else 0)
    assert all(d.total == total and d.received < total for d in dropped)
    assert net.nodes[B].receiver.holding == 0
    assert net.nodes[C].receiver.holding == 0
    assert net.nodes[A].sending == 0
    _no_bad_pdus(net)


def test_the_discard_goes_at_the_expiry() -> None:
    def cut(time: float, source: int, to: int, pdu: Pdu) -> bool:
        return isinstance(pdu, DataPdu) and pdu.sequence == 2

    net = Network(_nodes(A, B, C), Faults(cut=cut))
    message_id = net.send(
        A,
        _message(3000),
        [Destination(B), Destination(C)],
        max_pdu=1000,
        timers=TIMERS,
        expiry=100.0,
    )
    net.run(200.0)
    discards = net.sent_by(A, "discard")
    assert [(s.time, s.datagram.to) for s in discards] == [
        (T0 + 100.0 + 16 / net.rate, B),
        (T0 + 100.0 + 32 / net.rate, C),
    ]
    assert {s.pdu for s in discards} == {DiscardPdu(priority=1, source=A, message_id=message_id)}
    assert all(s.datagram.ends_burst is None for s in discards)
    # The receivers' own clocks expired the message as the discard left.
    for node in (B, C):
        [dropped] = net.of(node, Dropped)
        assert (dropped.why, dropped.received, dropped.total) == (
            "expired before it was complete",
            3,
            4,
        )
    assert _outcomes(net, A, message_id) == {
        n: [Undelivered(message_id=message_id, node=n)] for n in (B, C)
    }


# --- EMCON ------------------------------------------------------------------------------------


def _silent(*nodes: int) -> Faults:
    """Nothing the ``nodes`` send arrives: they are in EMCON."""
    return Faults(cut=lambda time, source, to, pdu: source in nodes)


def _bursts(net: Network, sender: int, message_id: int) -> list[float]:
    """When each burst of the message left the sender's link (its last datagram)."""
    return [s.time for s in net.sent if s.source == sender and s.datagram.ends_burst == message_id]


def _served_at(net: Network, sender: int, node: int) -> tuple[float, Delivered]:
    [(time, event)] = [
        (t, e) for t, e in net.events[sender] if isinstance(e, Delivered) and e.node == node
    ]
    return time, event


@given(repetitions=st.integers(1, 5), size=st.integers(0, 5000))
def test_an_emcon_destination_is_served_after_its_repetitions(repetitions: int, size: int) -> None:
    timers = SenderTimers(retransmission=2.0, emcon_repetitions=repetitions, emcon_interval=10.0)
    net = Network(_nodes(A, B), _silent(B))
    message_id = net.send(
        A, _message(size), [Destination(B, emcon=True)], max_pdu=500, timers=timers
    )
    net.run(3700.0)

    bursts = _bursts(net, A, message_id)
    assert len(bursts) == repetitions
    time, event = _served_at(net, A, B)
    assert event == Delivered(message_id=message_id, node=B, acknowledged=False)
    assert time == bursts[-1]
    # Each repetition goes emcon_interval after the last one left.
    starts = [s.time for s in net.sent_by(A, "address")]
    for left, start in zip(bursts, starts[1:], strict=False):
        assert 10.0 <= start - left < 10.1
    # Every repetition carries the whole message.
    assert len(net.sent_by(A, "data")) == repetitions * len(fragments_of(_message(size), 500))
    assert [e.data for e in _handed(net, B)] == [_message(size)]


def test_emcon_and_listening_destinations_together() -> None:
    # C is in EMCON; B listens, but its first burst loses a Data_PDU.
    lost = {"once": True}

    def cut(time: float, source: int, to: int, pdu: Pdu) -> bool:
        if source == C:
            return True
        if to == B and isinstance(pdu, DataPdu) and pdu.sequence == 2 and lost["once"]:
            lost["once"] = False
            return True
        return False

    net = Network(_nodes(A, B, C), Faults(cut=cut))
    message_id = net.send(
        A, _message(4000), [Destination(B), Destination(C, emcon=True)], max_pdu=1000, timers=TIMERS
    )
    net.run(3700.0)

    bursts = _bursts(net, A, message_id)
    assert len(bursts) == TIMERS.emcon_repetitions
    b_time, b_event = _served_at(net, A, B)
    c_time, c_event = _served_at(net, A, C)
    assert b_event.acknowledged and not c_event.acknowledged
    assert b_time < c_time == bursts[-1]
    assert [e.data for e in _handed(net, B)] == [_message(4000)]
    assert [e.data for e in _handed(net, C)] == [_message(4000)]


def test_an_emcon_destination_that_acknowledges_is_served_sooner() -> None:
    net = Network(_nodes(A, B))
    message_id = net.send(A, _message(2000), [Destination(B, emcon=True)], timers=TIMERS)
    net.run(3700.0)
    assert _served_at(net, A, B)[1].acknowledged
    assert len(_bursts(net, A, message_id)) == 1


# --- commit -----------------------------------------------------------------------------------


def _full_acks(net: Network, node: int) -> list[float]:
    """When ``node``'s Ack_PDUs saying it has a whole message left its link."""
    return [
        s.time
        for s in net.sent_by(node, "ack")
        if isinstance(s.pdu, AckPdu) and any(not e.missing for e in s.pdu.entries)
    ]


def test_a_refused_message_is_not_acknowledged_and_comes_again() -> None:
    refusals = []

    def commit(node: int, event: MessageComplete, count: int) -> bool | float:
        refusals.append(count)
        return count > 1

    net = Network(_nodes(A, B), commit=commit)
    message_id = net.send(A, _message(5000), [Destination(B)], max_pdu=1000, timers=TIMERS)
    net.run(3700.0)

    assert refusals == [1, 2]
    handed = [t for t, e in net.events[B] if isinstance(e, MessageComplete)]
    assert len(handed) == 2
    assert all(t > handed[1] for t in _full_acks(net, B))
    assert _outcomes(net, A, message_id) == {
        B: [Delivered(message_id=message_id, node=B, acknowledged=True)]
    }


def test_no_acknowledgement_before_the_commit() -> None:
    # The commit takes longer than the sender waits: its next burst announces the message
    # again while the receiver is still committing it.
    def commit(node: int, event: MessageComplete, count: int) -> bool | float:
        return 7.0

    net = Network(_nodes(A, B), commit=commit)
    message_id = net.send(A, _message(5000), [Destination(B)], max_pdu=1000, timers=TIMERS)
    net.run(3700.0)

    [(handed_at, _)] = [(t, e) for t, e in net.events[B] if isinstance(e, MessageComplete)]
    assert len(_bursts(net, A, message_id)) >= 2
    assert _full_acks(net, B)
    assert all(t >= handed_at + 7.0 for t in _full_acks(net, B))
    assert len(_handed(net, B)) == 1


def test_copies_after_the_commit_are_acknowledged_again_never_handed_up() -> None:
    # B's first two acknowledgements are lost: A announces the message again twice, and B
    # answers each time.
    acks = {"lost": 0}

    def cut(time: float, source: int, to: int, pdu: Pdu) -> bool:
        if source == B and isinstance(pdu, AckPdu) and acks["lost"] < 2:
            acks["lost"] += 1
            return True
        return False

    net = Network(_nodes(A, B), Faults(cut=cut))
    message_id = net.send(A, _message(5000), [Destination(B)], max_pdu=1000, timers=TIMERS)
    net.run(3700.0)

    assert len(_handed(net, B)) == 1
    bursts = _bursts(net, A, message_id)
    assert len(bursts) == 3
    assert len(_full_acks(net, B)) == 3
    assert _outcomes(net, A, message_id) == {
        B: [Delivered(message_id=message_id, node=B, acknowledged=True)]
    }


def test_every_datagram_twice() -> None:
    net = Network(_nodes(A, B, C), Faults(duplicate=1.0, jitter=0.01, seed=5))
    message_id = net.send(
        A, _message(20_000), [Destination(B), Destination(C)], max_pdu=600, timers=TIMERS
    )
    net.run(3700.0)
    for node in (B, C):
        assert [e.data for e in _handed(net, node)] == [_message(20_000)]
    assert _outcomes(net, A, message_id) == {
        n: [Delivered(message_id=message_id, node=n, acknowledged=True)] for n in (B, C)
    }


# --- several messages, both ways -------------------------------------------------------------


@settings(max_examples=examples(0.3), suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(0, 6000), min_size=1, max_size=6),
    faults=faults(st.floats(0.0, 300.0)),
)
def test_several_messages_each_way(sizes: list[int], faults: Faults) -> None:
    # Every node numbers its messages from 1: the same Message_IDs from each source.
    net = Network([Node(A), Node(B), Node(C)], faults)
    sent: list[tuple[int, int, bytes, tuple[int, ...]]] = []
    for index, size in enumerate(sizes):
        source = (A, B, C)[index % 3]
        to = tuple(n for n in (A, B, C) if n != source)
        data = _message(size, seed=index)
        message_id = net.send(
            source, data, [Destination(n) for n in to], max_pdu=700, timers=TIMERS
        )
        sent.append((source, message_id, data, to))
    net.run(3700.0)

    for source, message_id, data, to in sent:
        for node in to:
            got = [
                e.data
                for e in _handed(net, node)
                if (e.source, e.message_id) == (source, message_id)
            ]
            assert got == [data]
        assert _outcomes(net, source, message_id) == {
            n: [Delivered(message_id=message_id, node=n, acknowledged=True)] for n in to
        }
    for node in (A, B, C):
        assert net.of(node, Refused) == []
        assert net.of(node, Dropped) == []
    _no_bad_pdus(net)


def test_a_message_refused_for_a_bound_is_taken_once_there_is_room() -> None:
    # B holds one incomplete message at most, and takes 3 s to commit one: the second is
    # refused until the first is committed, its Data_PDUs held meanwhile, and the
    # sender's next burst gets it in.
    limits = ReceiverLimits(max_messages=1)

    def commit(node: int, event: MessageComplete, count: int) -> bool | float:
        return 3.0

    net = Network([Node(A), Node(B, receiver=limits)], Faults(jitter=0.001, seed=2), commit=commit)
    first = net.send(A, _message(30_000, 1), [Destination(B)], max_pdu=1000, timers=TIMERS)
    second = net.send(A, _message(30_000, 2), [Destination(B)], max_pdu=1000, timers=TIMERS)
    net.run(3700.0)

    refused = net.of(B, Refused)
    assert {(r.source, r.message_id) for r in refused} == {(A, second)}
    assert [(e.message_id, e.data) for e in _handed(net, B)] == [
        (first, _message(30_000, 1)),
        (second, _message(30_000, 2)),
    ]
    for message_id in (first, second):
        assert _outcomes(net, A, message_id) == {
            B: [Delivered(message_id=message_id, node=B, acknowledged=True)]
        }
