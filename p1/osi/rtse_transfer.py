"""One RT-TRANSFER in each direction: checkpoints, window and bounded reassembly (X.228 7.5).

An RT-TRANSFER is one session activity.  The sender cuts the transfer's octets (the EXTERNAL
around the MTS-APDU) into pieces of ``checkpoint_size`` x 1024 octets, sends each as one
P-DATA, and puts a confirmed S-SYNC-MINOR between pieces; at most ``window_size`` of them may
be unconfirmed at a time.  With ``checkpoint_size`` 0 all octets go in one P-DATA.  The
activity end (S-ACTIVITY-END) takes a window slot like a minor synchronization point: it is
sent only once fewer than ``window_size`` points are unconfirmed.

The receiver joins the pieces, holding no more than a configured bound: of a longer transfer
it keeps the first octets and counts the rest.

Both sides note where each checkpoint fell (the octets before it), so that a transfer cut
off by a lost connection can go on from a checkpoint both have (X.228 recovery, with
S-ACTIVITY-RESUME, X.225 7.31): the sender from the last one the receiver confirmed
(:meth:`OutboundTransfer.resumed`), the receiver from the octets it kept up to it
(:meth:`InboundTransfer.resumed`).

These are plain bookkeeping objects; :mod:`p1.association.connection` turns their steps into PDUs.

Public API::

    Piece(data, head=b""), Sync(), End()                what the sender may do next
    OutboundTransfer(transfer_id, octets, checkpoint_size, window_size, head=b"")
    OutboundTransfer.resumed(..., serial=, offset=)  going on after checkpoint serial
        .steps() -> list[Piece | Sync | End]            everything sendable now
        .confirm_sync(serial)                            checkpoints up to serial confirmed
        .confirmed -> (serial, offset)                   the last checkpoint confirmed
        .done                                            the activity end was sent
    InboundTransfer(transfer_id, limit)
    InboundTransfer.resumed(transfer_id, limit, octets, marks)   from a kept partial
        .add(data)                                       past limit, only counted
        .mark(serial) / .marks                           a checkpoint, and where each fell
        .kept(serial) -> bytes                           the octets before checkpoint serial
        .too_long, .prefix() -> bytes                    the first limit octets kept
        .octets() -> bytes | memoryview                  one piece is returned as it came
        .size, .head(count) -> bytes, .octets_from(start) -> bytes   (start in the first piece)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from p1.osi import LocalProtocolError, RemoteProtocolError

CHECKPOINT_UNIT = 1024
"""X.228 measures checkpointSize in units of 1024 octets."""


class Piece(NamedTuple):
    """Send ``head + data`` as one P-DATA (one RTTR APDU); ``data`` is a view of the
    transfer's octets, not a copy.  (A NamedTuple: one is made for every checkpoint.)"""

    data: memoryview
    head: bytes = b""


@dataclass(frozen=True, slots=True)
class Sync:
    """Send a confirmed S-SYNC-MINOR."""


@dataclass(frozen=True, slots=True)
class End:
    """Send the S-ACTIVITY-END that closes the transfer."""


Step = Piece | Sync | End
_SYNC = Sync()
_END = End()


@dataclass(slots=True)
class OutboundTransfer:
    """The sending side of one RT-TRANSFER: its octets are ``head + octets`` (``head``, a
    few octets of headers, is kept apart so that ``octets`` is never copied)."""

    transfer_id: int
    octets: bytes | memoryview
    checkpoint_size: int
    window_size: int
    head: bytes = b""
    _offset: int = 0
    _syncs: int = 0  # checkpoints sent: the n-th has serial number n (see confirm_sync)
    _confirmed: int = 0  # the highest serial number confirmed
    _marks: dict[int, int] = field(default_factory=lambda: {0: 0})  # serial -> octets before
    done: bool = False

    def __post_init__(self) -> None:
        if self.checkpoint_size < 0 or self.window_size < 1:
            raise LocalProtocolError(
                f"checkpoint size {self.checkpoint_size} and window {self.window_size} "
                "must be >= 0 and >= 1",
                layer="rtse",
            )

    @classmethod
    def resumed(
        cls,
        transfer_id: int,
        octets: bytes | memoryview,
        checkpoint_size: int,
        window_size: int,
        *,
        serial: int,
        offset: int,
        head: bytes = b"",
    ) -> OutboundTransfer:
        """The transfer of ``head + octets`` going on after its checkpoint ``serial``,
        which fell ``offset`` octets in: the next piece starts there, and the next
        checkpoint has serial number ``serial + 1`` (X.225 7.31)."""
        if serial < 0 or not 0 <= offset <= len(head) + len(octets):
            raise LocalProtocolError(
                f"no checkpoint {serial} at octet {offset} of {len(head) + len(octets)}",
                layer="rtse",
            )
        transfer = cls(transfer_id, octets, checkpoint_size, window_size, head=head)
        transfer._offset = offset
        transfer._syncs = transfer._confirmed = serial
        transfer._marks = {serial: offset}
        return transfer

    @property
    def confirmed(self) -> tuple[int, int]:
        """The last checkpoint the receiver confirmed: (serial number, octets before it);
        (0, 0) before the first."""
        return self._confirmed, self._marks[self._confirmed]

    def steps(self) -> list[Step]:
        """Every step the window allows now, in order; [] when waiting or done."""
        out: list[Step] = []
        while not self.done and self._syncs - self._confirmed < self.window_size:
            out.extend(self._next())
        return out

    def _next(self) -> list[Step]:
        view = memoryview(self.octets)
        head = self.head
        total = len(head) + len(view)
        if self.checkpoint_size == 0:
            self._offset = total
            self.done = True
            return [Piece(view, head), _END]
        # A piece is [start, stop) of head + octets: part of head, then part of octets.
        start = self._offset
        stop = min(start + self.checkpoint_size * CHECKPOINT_UNIT, total)
        skip = len(head)
        piece = Piece(view[max(start - skip, 0) : max(stop - skip, 0)], head[start:stop])
        self._offset = stop
        if stop >= total:
            self.done = True
            return [piece, _END]
        self._syncs += 1
        self._marks[self._syncs] = stop
        return [piece, _SYNC]

    def confirm_sync(self, serial: int) -> None:
        """The receiver confirmed every checkpoint up to ``serial``: one S-SYNC-MINOR
        response confirms all the points before it too (X.225 7.21).  An activity numbers
        its synchronization points from 1 (X.225 7.30), so the n-th checkpoint of a transfer
        has serial number n."""
        if not self._confirmed < serial <= self._syncs:
            raise RemoteProtocolError(
                f"minor sync {serial} confirmed; checkpoints {self._confirmed + 1} to "
                f"{self._syncs} await confirmation",
                layer="rtse",
            )
        for older in range(self._confirmed, serial):  # (no point before it is named again)
            self._marks.pop(older, None)
        self._confirmed = serial


@dataclass(slots=True)
class InboundTransfer:
    """The receiving side of one RT-TRANSFER: the pieces so far, bounded by ``limit``.

    A transfer that grows past ``limit`` is not refused here: its first ``limit`` octets
    are kept (a message's envelope comes first, X.411 12.2.1.1) and the rest is counted
    and dropped, so that the receiver can still answer the activity (its checkpoints and
    its end) and tell the originator why the message went no further."""

    transfer_id: int
    limit: int
    _parts: list[bytes | memoryview] = field(default_factory=list)
    _size: int = 0
    _marks: dict[int, int] = field(default_factory=dict)  # serial -> octets before it

    @classmethod
    def resumed(
        cls, transfer_id: int, limit: int, octets: bytes, marks: Mapping[int, int]
    ) -> InboundTransfer:
        """A transfer that goes on from ``octets``, kept from an earlier association;
        ``marks``: where its checkpoints fell (serial number -> octets before it)."""
        transfer = cls(transfer_id, limit)
        transfer.add(octets)
        transfer._marks = dict(marks)
        return transfer

    def mark(self, serial: int) -> None:
        """A checkpoint (minor synchronization point ``serial``) falls here."""
        self._marks[serial] = self._size

    @property
    def marks(self) -> dict[int, int]:
        """Where each checkpoint fell: serial number -> octets before it."""
        return dict(self._marks)

    def kept(self, serial: int) -> bytes:
        """The octets before checkpoint ``serial``, joined once (a transfer too long to
        be kept whole keeps none)."""
        stop = self._marks[serial]
        if self.too_long or stop > self._size:
            raise LocalProtocolError(f"no octets kept before checkpoint {serial}", layer="rtse")
        joined = self.octets()
        return bytes(memoryview(joined)[:stop])

    def add(self, data: bytes | memoryview) -> None:
        """Append one piece; past ``limit`` only its length counts."""
        room = self.limit - self._size
        self._size += len(data)
        if room >= len(data):
            self._parts.append(data)
        elif room > 0:
            self._parts.append(data[:room])

    @property
    def too_long(self) -> bool:
        """More than ``limit`` octets arrived: only the first ``limit`` are kept."""
        return self._size > self.limit

    def prefix(self) -> bytes:
        """The octets kept, joined (all of them when the transfer is not too long)."""
        return bytes(self.octets())

    @property
    def size(self) -> int:
        """Octets received so far."""
        return self._size

    def octets(self) -> bytes | memoryview:
        """The transfer's octets, joined once (a transfer in one piece: that piece)."""
        if len(self._parts) == 1:
            return self._parts[0]
        return b"".join(self._parts)

    def head(self, count: int) -> bytes:
        """At most ``count`` octets from the start of the first piece."""
        return bytes(self._parts[0][:count]) if self._parts else b""

    def octets_from(self, start: int) -> bytes:
        """The octets from ``start`` (inside the first piece) to the end, joined once: the
        value a transfer carries, without first joining its headers to it."""
        parts = self._parts
        first = memoryview(parts[0])[start:]
        return bytes(first) if len(parts) == 1 else b"".join([first, *parts[1:]])
