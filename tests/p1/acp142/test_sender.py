"""P_MUL's transmitting node (p1.acp142.sender): fragments, bursts, the retransmission
timer and its backoff, acknowledgements, EMCON and expiry, with explicit times."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p1.acp142.pdu import (
    DATA_OVERHEAD,
    AckInfo,
    AddressPdu,
    DataPdu,
    DestinationEntry,
    DiscardPdu,
    node_id,
)
from p1.acp142.sender import (
    Burst,
    Destination,
    Expired,
    SenderTimers,
    Served,
    Transmission,
    fragments_of,
)

A = node_id("10.0.0.1")
B = node_id("10.0.0.2")
C = node_id("10.0.0.3")
EXPIRY = 10_000
TIMERS = SenderTimers(
    retransmission=30.0,
    backoff=2.0,
    max_retransmission=100.0,
    emcon_repetitions=3,
    emcon_interval=60.0,
)


def _transmission(
    data: bytes = b"abcdefghij", *destinations: Destination, max_pdu: int = DATA_OVERHEAD + 4
) -> Transmission:
    return Transmission(
        source=A,
        message_id=7,
        data=data,
        destinations=destinations or (Destination(B), Destination(C)),
        priority=6,
        expiry=EXPIRY,
        max_pdu=max_pdu,
        timers=TIMERS,
        sequences={B: 11, C: 12},
    )


def _numbers(burst: Burst | None) -> list[int]:
    assert burst is not None
    return [p.sequence for p in burst.pdus if isinstance(p, DataPdu)]


def _announced(burst: Burst | None) -> tuple[int, ...]:
    assert burst is not None
    address = burst.pdus[0]
    assert isinstance(address, AddressPdu)
    return tuple(d.node for d in address.destinations)


# --- fragments --------------------------------------------------------------------------


@given(st.binary(max_size=3000), st.integers(DATA_OVERHEAD + 1, 1400))
def test_fragments(data: bytes, max_pdu: int) -> None:
    pieces = fragments_of(data, max_pdu)
    assert b"".join(pieces) == data
    assert len(pieces) >= 1
    assert all(len(p) == max_pdu - DATA_OVERHEAD for p in pieces[:-1])
    assert 0 < len(pieces[-1]) <= max_pdu - DATA_OVERHEAD or data == b""


def test_fragments_refused() -> None:
    with pytest.raises(ValueError, match="no room for data"):
        fragments_of(b"x", DATA_OVERHEAD)
    assert len(fragments_of(bytes(0xFFFF), DATA_OVERHEAD + 1)) == 0xFFFF
    with pytest.raises(ValueError, match="more than 65535"):
        fragments_of(bytes(0x10000), DATA_OVERHEAD + 1)


# --- bursts -----------------------------------------------------------------------------


def test_the_first_burst() -> None:
    sending = _transmission()
    burst = sending.start()
    assert burst == Burst(
        (
            AddressPdu(
                priority=6,
                source=A,
                message_id=7,
                expiry=EXPIRY,
                total=3,
                destinations=(DestinationEntry(B, 11), DestinationEntry(C, 12)),
            ),
            DataPdu(priority=6, source=A, message_id=7, sequence=1, fragment=b"abcd"),
            DataPdu(priority=6, source=A, message_id=7, sequence=2, fragment=b"efgh"),
            DataPdu(priority=6, source=A, message_id=7, sequence=3, fragment=b"ij"),
        )
    )
    # Until the burst has left, only the expiry is due.
    assert sending.timer == EXPIRY
    assert sending.handle_timer(100.0) is None


def test_the_timer_starts_when_the_burst_left_and_backs_off() -> None:
    sending = _transmission()
    sending.start()
    now = 5.0
    for wait in (30.0, 60.0, 100.0, 100.0):
        sending.burst_sent(now)
        assert sending.timer == now + wait
        assert sending.handle_timer(now + wait - 0.1) is None
        assert _numbers(sending.handle_timer(now + wait)) == [1, 2, 3]
        assert sending.timer == EXPIRY
        now += wait + 1.0


def test_an_acknowledgement_of_the_whole_message_serves_its_node() -> None:
    sending = _transmission()
    sending.start()
    sending.burst_sent(1.0)
    assert sending.receive_ack(B, AckInfo(A, 7), 2.0) is None
    assert sending.outcomes() == [Served(B, acknowledged=True)]
    assert sending.outcomes() == []
    assert not sending.done
    assert _announced(sending.handle_timer(31.0)) == (C,)
    assert sending.receive_ack(C, AckInfo(A, 7), 32.0) is None
    assert sending.outcomes() == [Served(C, acknowledged=True)]
    assert sending.done
    assert sending.timer is None
    assert sending.handle_timer(EXPIRY) is None


def test_when_every_destination_answered_the_next_burst_goes_at_once() -> None:
    sending = _transmission()
    sending.start()
    sending.burst_sent(1.0)
    assert sending.receive_ack(B, AckInfo(A, 7, (2,)), 2.0) is None
    burst = sending.receive_ack(C, AckInfo(A, 7, (3,)), 3.0)
    assert _announced(burst) == (B, C)
    assert _numbers(burst) == [2, 3]
    # An answer while that burst is on its way waits for the next.
    assert sending.receive_ack(B, AckInfo(A, 7, (2,)), 3.5) is None
    sending.burst_sent(4.0)
    assert sending.timer == 4.0 + 60.0


def test_a_destination_that_never_answered_gets_everything() -> None:
    sending = _transmission()
    sending.start()
    sending.burst_sent(1.0)
    sending.receive_ack(B, AckInfo(A, 7, (2,)), 2.0)
    assert _numbers(sending.handle_timer(31.0)) == [1, 2, 3]


def test_a_destination_silent_since_its_list_gets_what_follows_it_too() -> None:
    # Its list may have been cut short, or it lost the last Data_PDUs and does not know.
    data = bytes(range(40))  # ten Data_PDUs of four octets
    sending = _transmission(data, Destination(B), Destination(C))
    sending.start()
    sending.burst_sent(1.0)
    sending.receive_ack(B, AckInfo(A, 7, (2, 5)), 2.0)  # C never answers
    assert _numbers(sending.handle_timer(31.0)) == list(range(1, 11))  # (C gets all)
    sending.burst_sent(32.0)
    sending.receive_ack(C, AckInfo(A, 7, ()), 33.0)
    assert _numbers(sending.handle_timer(200.0)) == [2, 5, 6, 7, 8, 9, 10]


def test_missing_numbers_outside_the_message_are_ignored() -> None:
    sending = _transmission(b"abcdefghij", Destination(B))
    sending.start()
    sending.burst_sent(1.0)
    assert _numbers(sending.receive_ack(B, AckInfo(A, 7, (3, 4, 900)), 2.0)) == [3]


def test_an_acknowledgement_from_elsewhere_is_ignored() -> None:
    sending = _transmission()
    sending.start()
    sending.burst_sent(1.0)
    assert sending.receive_ack(node_id("10.9.9.9"), AckInfo(A, 7), 2.0) is None
    assert sending.outcomes() == []


def test_expiry() -> None:
    sending = _transmission()
    sending.start()
    sending.burst_sent(1.0)
    sending.receive_ack(B, AckInfo(A, 7), 2.0)
    sending.outcomes()
    burst = sending.handle_timer(EXPIRY)
    assert burst == Burst((DiscardPdu(priority=6, source=A, message_id=7),), discard=True)
    assert sending.outcomes() == [Expired(C)]
    assert sending.done
    assert sending.timer is None


def test_expiry_while_a_burst_is_on_its_way() -> None:
    sending = _transmission()
    sending.start()
    assert sending.handle_timer(EXPIRY + 3.0) == Burst(
        (DiscardPdu(priority=6, source=A, message_id=7),), discard=True
    )
    assert sending.outcomes() == [Expired(B), Expired(C)]


# --- EMCON --------------------------------------------------------------------------------


def test_emcon_destinations_get_the_whole_message_each_time() -> None:
    sending = _transmission(b"abcdefghij", Destination(B, emcon=True), Destination(C, emcon=True))
    sending.start()
    now = 0.0
    for _ in range(TIMERS.emcon_repetitions - 1):
        now += 1.0
        sending.burst_sent(now)
        assert sending.outcomes() == []
        assert sending.timer == now + TIMERS.emcon_interval
        now += TIMERS.emcon_interval
        burst = sending.handle_timer(now)
        assert _numbers(burst) == [1, 2, 3]
    sending.burst_sent(now + 1.0)
    assert sending.outcomes() == [Served(B, acknowledged=False), Served(C, acknowledged=False)]
    assert sending.done


def test_an_emcon_destination_beside_a_listening_one() -> None:
    sending = _transmission(b"abcdefghij", Destination(B), Destination(C, emcon=True))
    sending.start()
    sending.burst_sent(1.0)
    # B's answer alone sends the next burst: C gives none.  C still gets all of it.
    burst = sending.receive_ack(B, AckInfo(A, 7, (2,)), 2.0)
    assert _numbers(burst) == [1, 2, 3]
    sending.burst_sent(3.0)
    assert sending.timer == 3.0 + 60.0  # the listening node's backoff, not emcon_interval
    sending.receive_ack(B, AckInfo(A, 7), 4.0)
    assert sending.outcomes() == [Served(B, acknowledged=True)]
    assert sending.timer == 3.0 + 60.0
    sending.handle_timer(63.0)
    sending.burst_sent(64.0)
    assert sending.outcomes() == [Served(C, acknowledged=False)]
