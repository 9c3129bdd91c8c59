"""Which mode an inbound P1 connection uses, told from its CN (X.419 7, X.226 6.2), sans-I/O.

A responder cannot choose between the 1988 normal-mode association
(:class:`p1.association.connection.P1Association`) and the X.410-1984 one
(:class:`p1.association.x410.X410Association`) before the peer's session CN: the transport
connect (CR) is the same for both.  :class:`ConnectSniffer` answers the CR, reads the CN's
user data with :func:`p1.association.x410_pdus.connect_mode`, and then replays everything
received into the responder of that mode.

Public API::

    ConnectSniffer(limits, served_tsaps=None)
        receive_data(data) -> ConnectMode | None / data_to_send() / .received / .mode
        replay(association) -> events   (the association's answer left queued in it)
"""

from __future__ import annotations

from typing import Protocol

from p1.association import x410_pdus as pdus
from p1.association.x410_pdus import ConnectMode
from p1.errors import DecodeError
from p1.osi import DEFAULT_LIMITS, Event, Role, StackLimits, cotp
from p1.osi.x225 import spdu

__all__ = ["ConnectSniffer"]


class _Association(Protocol):
    def receive_data(self, data: bytes) -> list[Event]: ...

    def data_to_send(self) -> bytes: ...


class ConnectSniffer:
    """Which mode an inbound connection uses, told from its CN before any machine sees it.

    It answers the CR with CC as either responder would, keeps every octet received, and
    reads the first TSDU (the CN) with :func:`p1.association.x410_pdus.connect_mode`.  The
    caller then builds the responder of that mode and :meth:`replay`\\ s the octets into it;
    the CC that responder answers again is dropped, since the peer already has ours.  A
    connection that breaks a rule before its CN, or whose CR calls a TSAP selector not in
    ``served_tsaps`` (None: any), is given to the normal-mode machine unanswered, which
    answers it as it always did (with a DR, address unknown, for the selector).
    """

    def __init__(
        self, limits: StackLimits = DEFAULT_LIMITS, served_tsaps: frozenset[bytes] | None = None
    ) -> None:
        self._transport = cotp.TransportConnection(Role.RESPONDER, limits=limits)
        self._served = served_tsaps
        self._received = bytearray()
        self._answered = False  # our CC went out: the replayed machine's is dropped
        self.mode: ConnectMode | None = None

    @property
    def received(self) -> bytes:
        """Every octet received so far."""
        return bytes(self._received)

    def receive_data(self, data: bytes) -> ConnectMode | None:
        """Feed bytes from TCP; the mode once known (None: not yet)."""
        if self.mode is not None:
            self._received += data
            return self.mode
        self._received += data
        for event in self._transport.receive_data(data):
            if isinstance(event, cotp.ConnectRequested):
                if self._served is not None and event.called_tsap not in self._served:
                    self.mode = ConnectMode.NORMAL  # (its DR is the normal machine's)
                    break
                if not self._transport.closed:
                    self._transport.send_accept()
                    self._answered = True
            elif isinstance(event, cotp.TsduReceived):
                self.mode = _tsdu_mode(event.data)
                break
            elif isinstance(event, cotp.Disconnected):
                self.mode = ConnectMode.NORMAL
                break
        if self.mode is None and self._transport.closed:
            self.mode = ConnectMode.NORMAL  # (a broken TPDU: the normal machine answers it)
        return self.mode

    def data_to_send(self) -> bytes:
        """What to write to TCP before the mode is known (the CC)."""
        return self._transport.data_to_send() if self.mode is None else b""

    def replay(self, association: _Association) -> list[Event]:
        """Give ``association`` (a fresh responder) every octet received; its events.  Its
        answer stays queued in it (:meth:`data_to_send`), less the CC the peer already had
        from this sniffer: when one was sent, the CR goes first on its own, as it came
        (the peer sent nothing more before our CC), and what it answers is dropped."""
        received = self.received
        if not self._answered:
            return association.receive_data(received)
        split = _first_tpkt_size(received)
        events = association.receive_data(received[:split])
        association.data_to_send()  # the CC again
        if split < len(received):
            events += association.receive_data(received[split:])
        return events


def _first_tpkt_size(data: bytes) -> int:
    """The size of the first TPKT of ``data`` (RFC 1006: length octets 3-4), or all of it."""
    if len(data) < 4:
        return len(data)
    return min(len(data), max(int.from_bytes(data[2:4], "big"), 4))


def _tsdu_mode(tsdu: bytes | memoryview) -> ConnectMode:
    """The mode of the first TSDU: X.410-1984 when it is a CN carrying a PConnect."""
    try:
        units = spdu.decode_tsdu(bytes(tsdu))
    except DecodeError:
        return ConnectMode.NORMAL
    if len(units) != 1 or units[0].kind is not spdu.Kind.CN:
        return ConnectMode.NORMAL
    return pdus.connect_mode(units[0].user_data)
