"""Transport protocol class 0 over TCP (ITU-T X.224 | ISO/IEC 8073 clause 8, the simple class,
with the TPDUs of clause 13, as RFC 1006 clause 5 profiles it): connection, TSDU segmentation
and reassembly, refusal, errors.

Rules:

1. One TCP connection carries one transport connection.  The initiator sends CR and waits for
   CC or DR; the responder answers a CR with CC (:meth:`~TransportConnection.send_accept`) or
   DR (:meth:`~TransportConnection.send_refuse`).  Class 0 has no DR after the CC: the
   connection ends when TCP closes (class 0's implicit release).
2. A CR whose preferred class is above 0 is answered in class 0 when X.224 Table 3 allows it
   (preferred class 1, or class 0 among the alternatives, or preferred class 3 or 4 with
   class 1 among them); otherwise it is refused with DR reason 130, "negotiation failed".
3. TPDU size: the initiator proposes ``limits.max_tpdu_size``; the responder takes the smaller
   of that and the proposal; absent means 128 (13.3.4 b).  We send DT TPDUs of the agreed
   size; we accept larger ones, up to what a TPKT holds, because real peers send them.
4. A TSDU is the data of DT TPDUs up to the one with EOT, joined once; more than
   ``limits.max_tsdu_size`` octets is an error.
5. Anything the peer sends that X.224 or the state does not allow (a bad TPKT, a bad TPDU, DT
   before CC, ...) closes the connection: an ER TPDU quoting the TPDU in error is queued and
   :class:`Disconnected` (``by_peer=False``) returned.  A DR or ER received closes it too
   (``by_peer=True``).  Once closed, received bytes are ignored.
6. ``send_*`` that the state does not allow raises LocalProtocolError and changes nothing.

Public API::

    TransportState, Input, TRANSITIONS, class_0_allowed(preferred, alternatives) -> bool
    TransportConnection(role, *, limits, calling_tsap=b"", called_tsap=b"", source_reference=None)
        .state  .tpdu_size  .closed
        send_connect() / send_accept() / send_refuse(reason=0) / send_tsdu(data)
        receive_data(data) -> list[Event] / data_to_send(max_size=None) -> bytes
    next_reference() -> int    the SRC-REF of the next connection
    Events: ConnectRequested, Connected, TsduReceived, Disconnected

The TPDU codec is p1.osi.tpdu; TPKT framing is p1.osi.tpkt.
"""

from __future__ import annotations

import enum
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass

from p1.osi import (
    DEFAULT_LIMITS,
    Event,
    LocalProtocolError,
    RemoteProtocolError,
    Role,
    StackLimits,
)
from p1.osi import tpdu as x224
from p1.osi.tpkt import HEADER_SIZE, MAX_TPKT_SIZE, VERSION, FramingError, TpktReader, tpkt_header

DEFAULT_TPDU_SIZE = 128
"""The TPDU size when a CR or CC has no TPDU size parameter (X.224 13.3.4 b)."""
MAX_CLASS_0_TPDU_SIZE = 2048
"""The largest TPDU size class 0 may agree (X.224 13.3.4 b, PICS item 14.6 e)."""


class TransportState(enum.Enum):
    """Where a transport connection is (after X.224 Annex A's class 0 states, split by role)."""

    # Members are singletons, so identity is equality: hash by identity, in C, rather than
    # by Enum's Python-level hash of the name.
    __hash__ = object.__hash__

    IDLE = "idle"  # initiator, nothing sent
    LISTEN = "listen"  # responder, waiting for a CR
    WAIT_CC = "wait-cc"  # initiator, CR sent
    WAIT_ACCEPT = "wait-accept"  # responder, CR received, its user to answer
    OPEN = "open"
    CLOSED = "closed"


class Input(enum.Enum):
    """What can happen to a transport connection: a TPDU sent or received."""

    __hash__ = object.__hash__  # as TransportState's

    SEND_CR = "send CR"
    RECV_CR = "receive CR"
    SEND_CC = "send CC"
    RECV_CC = "receive CC"
    SEND_DR = "send DR"
    RECV_DR = "receive DR"
    SEND_DT = "send DT"
    RECV_DT = "receive DT"
    RECV_ER = "receive ER"


_S = TransportState
_I = Input

TRANSITIONS: dict[tuple[TransportState, Input], TransportState] = {
    # initiator, before its CR: a DR or ER from the peer still ends the connection
    (_S.IDLE, _I.SEND_CR): _S.WAIT_CC,
    (_S.IDLE, _I.RECV_DR): _S.CLOSED,
    (_S.IDLE, _I.RECV_ER): _S.CLOSED,
    # responder, waiting for a CR
    (_S.LISTEN, _I.RECV_CR): _S.WAIT_ACCEPT,
    (_S.LISTEN, _I.RECV_DR): _S.CLOSED,
    (_S.LISTEN, _I.RECV_ER): _S.CLOSED,
    # initiator, CR sent: CC accepts, DR refuses
    (_S.WAIT_CC, _I.RECV_CC): _S.OPEN,
    (_S.WAIT_CC, _I.RECV_DR): _S.CLOSED,
    (_S.WAIT_CC, _I.RECV_ER): _S.CLOSED,
    # responder, CR received: its user accepts or refuses; the initiator may give up
    (_S.WAIT_ACCEPT, _I.SEND_CC): _S.OPEN,
    (_S.WAIT_ACCEPT, _I.SEND_DR): _S.CLOSED,
    (_S.WAIT_ACCEPT, _I.RECV_DR): _S.CLOSED,
    (_S.WAIT_ACCEPT, _I.RECV_ER): _S.CLOSED,
    # data transfer; a DR here is not class 0's but still means the peer has gone
    (_S.OPEN, _I.SEND_DT): _S.OPEN,
    (_S.OPEN, _I.RECV_DT): _S.OPEN,
    (_S.OPEN, _I.RECV_DR): _S.CLOSED,
    (_S.OPEN, _I.RECV_ER): _S.CLOSED,
}
"""(state, input) -> next state.  A pair not here is a protocol error: LocalProtocolError for
a ``send_*`` (nothing changes), an ER and state CLOSED for a received TPDU."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectRequested(Event):
    """T-CONNECT indication (X.214), from a CR TPDU (X.224 13.3): answer it with send_accept
    or send_refuse."""

    calling_tsap: bytes
    called_tsap: bytes
    tpdu_size: int
    source_reference: int
    """The initiator's reference (the CR's SRC-REF)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Connected(Event):
    """T-CONNECT confirm (X.214), from a CC TPDU (X.224 13.4)."""

    tpdu_size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TsduReceived(Event):
    """T-DATA indication (X.214): one TSDU, the DT TPDUs up to EOT joined (X.224 13.7)."""

    data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Disconnected(Event):
    """T-DISCONNECT indication (X.214): a DR or ER TPDU received (``by_peer``), or a protocol
    error we answered with ER (X.224 6.22); ``reason`` is the DR reason or ER reject cause."""

    reason: int | None
    by_peer: bool
    why: str


_DR_REASONS = {
    x224.REASON_NOT_SPECIFIED: "reason not specified",
    x224.REASON_CONGESTION_AT_TSAP: "congestion at TSAP",
    x224.REASON_NOT_ATTACHED_TO_TSAP: "session entity not attached to TSAP",
    x224.REASON_ADDRESS_UNKNOWN: "address unknown",
    x224.REASON_NORMAL: "normal disconnect",
    x224.REASON_NEGOTIATION_FAILED: "connection negotiation failed",
    x224.REASON_PROTOCOL_ERROR: "protocol error",
}
_ER_CAUSES = {
    x224.CAUSE_NOT_SPECIFIED: "reason not specified",
    x224.CAUSE_INVALID_PARAMETER_CODE: "invalid parameter code",
    x224.CAUSE_INVALID_TPDU_TYPE: "invalid TPDU type",
    x224.CAUSE_INVALID_PARAMETER_VALUE: "invalid parameter value",
}
_DT_START = bytes((x224.DT_HEADER_SIZE - 1, x224.DT))  # LI 2, DT: class 0's only DT header
_DT_LI = x224.DT_HEADER_SIZE - 1
_DT_TPKT_SIZE = HEADER_SIZE + x224.DT_HEADER_SIZE  # TPKT and DT headers
_MAX_DT_DATA = MAX_TPKT_SIZE - _DT_TPKT_SIZE
_ER_OVERHEAD = 7  # ER fixed part (5) + the invalid TPDU parameter's code and length
_MAX_QUOTE = x224.MAX_LI - (_ER_OVERHEAD - 1)


def _dt_headers(size: int, *, eot: bool) -> bytes:
    """The TPKT header and DT header in front of ``size`` octets of user data."""
    if size > _MAX_DT_DATA:
        return tpkt_header(x224.DT_HEADER_SIZE + size)  # (raises EncodeError)
    length = _DT_TPKT_SIZE + size
    return bytes((VERSION, 0, length >> 8, length & 0xFF, _DT_LI, x224.DT, x224.EOT if eot else 0))


_FULL_HEADERS = {
    size: _dt_headers(size - x224.DT_HEADER_SIZE, eot=False)
    for size in (128, 256, 512, 1024, MAX_CLASS_0_TPDU_SIZE)
}


def _dr_text(user_data: bytes) -> str:
    """What a DR's user data says, when it is text: some products explain a refusal there
    (PP: "Service ... not found") although class 0 defines no DR user data (X.224 13.5)."""
    text = user_data.rstrip(b"\0").decode("latin-1")
    if not text or not text.isascii() or not text.isprintable():
        return ""
    return f" ({text[:_MAX_DR_TEXT]})"


_MAX_DR_TEXT = 120


def class_0_allowed(preferred: int, alternatives: tuple[int, ...]) -> bool:
    """Whether a responder may select class 0 for this CR (X.224 6.5.4 h, Table 3)."""
    if preferred in (0, 1) or 0 in alternatives:
        return True
    return preferred in (3, 4) and 1 in alternatives


def _checked_tpdu_size(size: int) -> int:
    if size not in (128, 256, 512, 1024, MAX_CLASS_0_TPDU_SIZE):
        raise ValueError(f"max_tpdu_size {size}: class 0 needs a power of two in 128 ... 2048")
    return size


_references = itertools.count(random.SystemRandom().randrange(0xFFFF))


def next_reference() -> int:
    """A reference for a new connection: 1 ... 65535 in turn, from a random start, so
    that references tell the connections of a capture or a log apart (X.224 13.3.4 b:
    unique among this end's connections; 0 is not used)."""
    return next(_references) % 0xFFFF + 1


class TransportConnection:
    """One transport connection in class 0 over one TCP connection (see the module docstring)."""

    def __init__(
        self,
        role: Role,
        *,
        limits: StackLimits = DEFAULT_LIMITS,
        calling_tsap: bytes = b"",
        called_tsap: bytes = b"",
        source_reference: int | None = None,
    ) -> None:
        """``source_reference``: our SRC-REF in the CR or CC (None: the next of this
        process's references, so that each connection has its own, X.224 13.3.4 b)."""
        if source_reference is None:
            source_reference = next_reference()
        if not 0 <= source_reference <= 0xFFFF:
            raise ValueError(f"source_reference {source_reference} is not 0 ... 65535")
        self.role = role
        self.limits = limits
        self.calling_tsap = calling_tsap
        self.called_tsap = called_tsap
        self.source_reference = source_reference
        self.state = _S.IDLE if role is Role.INITIATOR else _S.LISTEN
        self.tpdu_size = DEFAULT_TPDU_SIZE
        self._max_tpdu_size = _checked_tpdu_size(limits.max_tpdu_size)
        self._peer_reference = 0
        self._size_in_cr = False  # the CR had a TPDU size parameter: the CC states ours
        self._reader = TpktReader(max_size=MAX_TPKT_SIZE)
        self._outgoing: list[bytes | memoryview] = []
        self._parts: list[memoryview | bytes] = []  # the DT data of the TSDU being received
        self._received = 0  # octets in _parts
        self._max_tsdu_size = limits.max_tsdu_size

    # --- state ---------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once the connection has ended: the adapter writes what is queued, then closes."""
        return self.state is _S.CLOSED

    def _send(self, what: Input) -> None:
        """Take ``what`` for a send_*; a pair not in the table changes nothing."""
        try:
            self.state = TRANSITIONS[self.state, what]
        except KeyError:
            raise LocalProtocolError(
                f"cannot {what.value} in state {self.state.value}", layer="cotp"
            ) from None

    def _receive(self, what: Input) -> None:
        """Take ``what`` for a received TPDU; a pair not in the table is the peer's error."""
        try:
            self.state = TRANSITIONS[self.state, what]
        except KeyError:
            raise x224.InvalidTpdu(
                f"cannot {what.value} in state {self.state.value}",
                cause=x224.CAUSE_INVALID_TPDU_TYPE,
                octet=1,
            ) from None

    # --- sending ---------------------------------------------------------------------------

    def send_connect(self) -> None:
        """T-CONNECT request: queue a CR proposing ``limits.max_tpdu_size``."""
        self._send(_I.SEND_CR)
        cr = x224.ConnectionRequest(
            source_reference=self.source_reference,
            calling_tsap=self.calling_tsap or None,
            called_tsap=self.called_tsap or None,
            tpdu_size=self._max_tpdu_size,
        )
        self._queue(x224.encode_cr(cr))

    def send_accept(self) -> None:
        """T-CONNECT response: queue the CC, stating the agreed size if the CR proposed one."""
        self._send(_I.SEND_CC)
        cc = x224.ConnectionConfirm(
            destination_reference=self._peer_reference,
            source_reference=self.source_reference,
            tpdu_size=self.tpdu_size if self._size_in_cr else None,
        )
        self._queue(x224.encode_cc(cc))

    def send_refuse(self, reason: int = x224.REASON_NOT_SPECIFIED) -> None:
        """T-DISCONNECT request before the CC: queue a DR (reason 0 ... 3 in class 0)."""
        if not 0 <= reason <= 0xFF:
            raise LocalProtocolError(f"DR reason {reason} is not one octet", layer="cotp")
        self._send(_I.SEND_DR)
        self._queue_dr(reason)

    def _queue_dr(self, reason: int) -> None:
        # Our reference is unassigned when we refuse: SRC-REF 0 (13.5.3 c).
        dr = x224.DisconnectRequest(destination_reference=self._peer_reference, reason=reason)
        self._queue(x224.encode_dr(dr))

    def send_tsdu(self, data: bytes | bytearray | memoryview, *, prefix: bytes = b"") -> None:
        """T-DATA request: queue ``prefix + data`` as DT TPDUs of ``tpdu_size``, EOT on the
        last.

        The TPDUs share ``data``'s memory until :meth:`data_to_send` (a writable buffer is
        copied once first), so a large TSDU is copied only into the outgoing bytes; a short
        ``prefix`` (the headers of the layers above) saves its caller a copy of ``data``.
        """
        if self.state is not _S.OPEN:  # (OPEN, SEND_DT) -> OPEN is the only DT move
            self._send(_I.SEND_DT)
        if type(data) is not bytes:
            data = memoryview(data).cast("B")
            if not data.readonly:
                data = bytes(data)
        room = self.tpdu_size - x224.DT_HEADER_SIZE
        out = self._outgoing
        size = len(prefix) + len(data)
        if size <= room:  # one TPDU, the usual case for everything but the data
            out.append(_dt_headers(size, eot=True) + prefix)
            out.append(data)
            return
        view = memoryview(data)  # (slices of it are not copies)
        if len(prefix) > room:  # (not what the layers above send)
            view = memoryview(prefix + view)
            prefix = b""
        # The first TPDU is the prefix and the start of data; the others, data only.
        first = room - len(prefix)
        header = self._full_header
        out.append(header)
        out.append(prefix)
        out.append(view[:first])
        full = first + (len(view) - first - 1) // room * room  # data octets of non-final TPDUs
        for start in range(first, full, room):
            out.append(header)
            out.append(view[start : start + room])
        last = view[full:]
        out.append(_dt_headers(len(last), eot=True))
        out.append(last)

    @property
    def _full_header(self) -> bytes:
        """TPKT and DT headers of a TPDU of ``tpdu_size`` without EOT."""
        header = _FULL_HEADERS.get(self.tpdu_size)
        if header is None:
            header = _dt_headers(self.tpdu_size - x224.DT_HEADER_SIZE, eot=False)
        return header

    def _queue(self, tpdu: bytes) -> None:
        self._outgoing.append(tpkt_header(len(tpdu)))
        self._outgoing.append(tpdu)

    def data_to_send(self, max_size: int | None = None) -> bytes:
        """What is queued, TPKT-framed, ready for TCP: everything, or its first
        ``max_size`` octets (the rest stays queued for the next call, so that a large
        TSDU is written piece by piece and never joined whole)."""
        out = self._outgoing
        if max_size is not None:
            if max_size < 1:
                raise ValueError(f"max_size {max_size} is not a positive number of octets")
            taken = 0
            for count, part in enumerate(out):
                taken += len(part)
                if taken >= max_size:
                    return self._take(count + 1, taken - max_size)
        data = b"".join(out)
        out.clear()
        return data

    def _take(self, count: int, over: int) -> bytes:
        """The first ``count`` queued parts joined, less the last ``over`` octets of the
        last of them, which stay queued."""
        out = self._outgoing
        taken = out[:count]
        del out[:count]
        if over:
            last = memoryview(taken[-1])
            taken[-1] = last[: len(last) - over]
            out.insert(0, last[len(last) - over :])
        return b"".join(taken)

    # --- receiving -----------------------------------------------------------------------

    def receive_data(self, data: bytes) -> list[Event]:
        """Feed bytes from TCP; returns what happened, in order.  Ignored once CLOSED."""
        if self.state is _S.CLOSED:
            return []
        try:
            tpdus: list[bytes] | list[memoryview] = self._reader.feed_views(data)
        except FramingError as error:
            events = self._receive_all(error.tpdus)
            if self.closed:
                return events
            return [*events, self._fail(error, error.header)]
        return self._receive_all(tpdus)

    def _receive_all(self, tpdus: list[bytes] | list[memoryview]) -> list[Event]:
        """The TPDUs' events.  Each TPDU has at least 3 octets (TpktReader refuses shorter
        TPKTs); a DT's data is kept as a view until its TSDU is joined, its only copy."""
        events: list[Event] = []
        parts = self._parts
        for tpdu in tpdus:
            if tpdu[0] == _DT_LI and tpdu[1] == x224.DT and self.state is _S.OPEN:
                # The hot path, inline: (OPEN, RECV_DT) -> OPEN, data kept until EOT.
                received = self._received + len(tpdu) - x224.DT_HEADER_SIZE
                if received <= self._max_tsdu_size:
                    if not tpdu[2] & x224.EOT:
                        parts.append(tpdu[x224.DT_HEADER_SIZE :])
                        self._received = received
                        continue
                    if parts:
                        parts.append(tpdu[x224.DT_HEADER_SIZE :])
                        data = b"".join(parts)
                        parts.clear()
                        self._received = 0
                    else:  # a TSDU in one DT
                        data = bytes(tpdu[x224.DT_HEADER_SIZE :])
                    events.append(TsduReceived(data=data))
                    continue
            tpdu = bytes(tpdu)  # (the rest decodes bytes)
            try:
                event = _RECEIVERS[x224.tpdu_code(tpdu)](self, tpdu)
            except RemoteProtocolError as error:
                event = self._fail(error, tpdu)
            if event is not None:
                events.append(event)
            if self.state is _S.CLOSED:
                break
        return events

    def _fail(self, error: RemoteProtocolError, tpdu: bytes) -> Disconnected:
        """Close on the peer's error: queue an ER quoting ``tpdu`` up to the octet in error."""
        self.state = _S.CLOSED
        self._parts.clear()
        cause = x224.CAUSE_NOT_SPECIFIED if error.reason is None else error.reason
        octet = error.octet if isinstance(error, x224.InvalidTpdu) else len(tpdu) - 1
        quote = tpdu[: min(octet + 1, _MAX_QUOTE, self.tpdu_size - _ER_OVERHEAD)]
        er = x224.ErrorTpdu(
            destination_reference=self._peer_reference, cause=cause, invalid_tpdu=quote
        )
        self._queue(x224.encode_er(er))
        return Disconnected(reason=cause, by_peer=False, why=str(error))

    def _receive_cr(self, tpdu: bytes) -> Event:
        self._receive(_I.RECV_CR)
        cr = x224.decode_cr(tpdu)
        self._peer_reference = cr.source_reference
        if not class_0_allowed(cr.protocol_class, cr.alternative_classes):
            return self._refuse_classes(cr)
        self._size_in_cr = cr.tpdu_size is not None
        self.tpdu_size = min(cr.tpdu_size or DEFAULT_TPDU_SIZE, self._max_tpdu_size)
        return ConnectRequested(
            calling_tsap=cr.calling_tsap or b"",
            called_tsap=cr.called_tsap or b"",
            tpdu_size=self.tpdu_size,
            source_reference=cr.source_reference,
        )

    def _refuse_classes(self, cr: x224.ConnectionRequest) -> Event:
        self._send(_I.SEND_DR)
        self._queue_dr(x224.REASON_NEGOTIATION_FAILED)
        classes = ", ".join(map(str, cr.alternative_classes)) or "none"
        return Disconnected(
            reason=x224.REASON_NEGOTIATION_FAILED,
            by_peer=False,
            why=f"CR proposes class {cr.protocol_class} (alternatives: {classes}), not class 0",
        )

    def _receive_cc(self, tpdu: bytes) -> Event:
        self._receive(_I.RECV_CC)
        cc = x224.decode_cc(tpdu)
        if cc.protocol_class != 0:
            raise x224.InvalidTpdu(
                f"CC selects class {cc.protocol_class}; we proposed class 0 only",
                cause=x224.CAUSE_INVALID_PARAMETER_VALUE,
                octet=6,
            )
        self._peer_reference = cc.source_reference
        # Never more than we proposed, whatever the CC says.
        self.tpdu_size = min(cc.tpdu_size or DEFAULT_TPDU_SIZE, self._max_tpdu_size)
        return Connected(tpdu_size=self.tpdu_size)

    def _receive_dr(self, tpdu: bytes) -> Event:
        self._receive(_I.RECV_DR)
        dr = x224.decode_dr(tpdu)
        self._parts.clear()
        why = _DR_REASONS.get(dr.reason, f"reason {dr.reason}")
        return Disconnected(
            reason=dr.reason, by_peer=True, why=f"DR received: {why}{_dr_text(dr.user_data)}"
        )

    def _receive_er(self, tpdu: bytes) -> Event:
        self._receive(_I.RECV_ER)
        er = x224.decode_er(tpdu)
        self._parts.clear()
        why = _ER_CAUSES.get(er.cause, f"cause {er.cause}")
        return Disconnected(reason=er.cause, by_peer=True, why=f"ER received: {why}")

    def _receive_dt(self, tpdu: bytes) -> Event | None:
        self._receive(_I.RECV_DT)
        if not tpdu.startswith(_DT_START):
            raise x224.InvalidTpdu(f"DT with LI {tpdu[0]}: class 0 has only LI 2", octet=0)
        return self._take_dt(tpdu)

    def _take_dt(self, tpdu: bytes) -> Event | None:
        """One DT: keep its data; at EOT join the TSDU's parts, once."""
        received = self._received + len(tpdu) - x224.DT_HEADER_SIZE
        if received > self._max_tsdu_size:
            raise x224.InvalidTpdu(f"TSDU longer than {self._max_tsdu_size} octets", octet=2)
        if not tpdu[2] & x224.EOT:
            self._parts.append(memoryview(tpdu)[x224.DT_HEADER_SIZE :])
            self._received = received
            return None
        if not self._parts:  # a TSDU in one DT, the usual case: one copy
            return TsduReceived(data=tpdu[x224.DT_HEADER_SIZE :])
        self._parts.append(memoryview(tpdu)[x224.DT_HEADER_SIZE :])
        data = b"".join(self._parts)
        self._parts.clear()
        self._received = 0
        return TsduReceived(data=data)


_RECEIVERS: dict[int, Callable[[TransportConnection, bytes], Event | None]] = {
    x224.CR: TransportConnection._receive_cr,
    x224.CC: TransportConnection._receive_cc,
    x224.DR: TransportConnection._receive_dr,
    x224.ER: TransportConnection._receive_er,
    x224.DT: TransportConnection._receive_dt,
}
