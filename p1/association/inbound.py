"""Which mode an inbound P1 connection uses, told from its CN (X.419 7, X.226 6.2), sans-I/O.

A responder cannot choose between the 1988 normal-mode association
(:class:`p1.association.connection.P1Association`) and the X.410-1984 one
(:class:`p1.association.x410.X410Association`) before the peer's session CN: the transport
connect (CR) is the same for both.  :class:`ConnectSniffer` answers the CR, reads the CN's
user data with :func:`p1.association.x410_pdus.connect_mode`, and then replays everything
received into the responder of that mode.

Public API::

    ConnectSniffer(limits)
        receive_data(data) -> ConnectMode | None / data_to_send() / .received / .mode
        replay(association) -> (events, bytes to send)
"""

from __future__ import annotations

from typing import Protocol

from p1.association import x410_pdus as pdus
from p1.association.x410_pdus import ConnectMode
from p1.errors import DecodeError
from p1.osi import DEFAULT_LIMITS, Event, Role, StackLimits, cotp, spdu

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
    connection that breaks a rule before its CN is given to the normal-mode machine, which
    answers it as it always did.
    """

    def __init__(self, limits: StackLimits = DEFAULT_LIMITS) -> None:
        self._transport = cotp.TransportConnection(Role.RESPONDER, limits=limits)
        self._received = bytearray()
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
            if isinstance(event, cotp.ConnectRequested) and not self._transport.closed:
                self._transport.send_accept()
            elif isinstance(event, cotp.TsduReceived):
                self.mode = _tsdu_mode(event.data)
                break
            elif isinstance(event, cotp.Disconnected):
                self.mode = ConnectMode.NORMAL
                break
        return self.mode

    def data_to_send(self) -> bytes:
        """What to write to TCP before the mode is known (the CC)."""
        return self._transport.data_to_send() if self.mode is None else b""

    def replay(self, association: _Association) -> tuple[list[Event], bytes]:
        """Give ``association`` (a fresh responder) every octet received; its events and
        what it has to send, less the CC the peer already had from this sniffer.  The CR
        goes first on its own, as it came (the peer sent nothing more before our CC)."""
        received = self.received
        split = _first_tpkt_size(received)
        events = association.receive_data(received[:split])
        association.data_to_send()  # the CC again
        if split < len(received):
            events += association.receive_data(received[split:])
        return events, association.data_to_send()


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
