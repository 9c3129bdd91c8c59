"""One RT-TRANSFER in each direction: checkpoints, window and bounded reassembly (X.228 7.5).

An RT-TRANSFER is one session activity.  The sender cuts the transfer's octets (the EXTERNAL
around the MTS-APDU) into pieces of ``checkpoint_size`` x 1024 octets, sends each as one
P-DATA, and puts a confirmed S-SYNC-MINOR between pieces; at most ``window_size`` of them may
be unconfirmed at a time.  With ``checkpoint_size`` 0 all octets go in one P-DATA.  The
activity end (S-ACTIVITY-END) takes a window slot like a minor synchronization point: it is
sent only once fewer than ``window_size`` points are unconfirmed.

The receiver joins the pieces, refusing to hold more than a configured bound.

These are plain bookkeeping objects; :mod:`p1.association` turns their steps into PDUs.

Public API::

    Piece(data), Sync(), End()                          what the sender may do next
    OutboundTransfer(transfer_id, octets, checkpoint_size, window_size)
        .steps() -> list[Piece | Sync | End]            everything sendable now
        .confirm_sync()                                  an S-SYNC-MINOR was confirmed
        .done                                            the activity end was sent
    InboundTransfer(transfer_id, limit)
        .add(data)                                       raises RemoteProtocolError past limit
        .octets() -> bytes
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p1.osi import LocalProtocolError, RemoteProtocolError

CHECKPOINT_UNIT = 1024
"""X.228 measures checkpointSize in units of 1024 octets."""


@dataclass(frozen=True, slots=True)
class Piece:
    """Send these octets as one P-DATA (one RTTR APDU)."""

    data: memoryview


@dataclass(frozen=True, slots=True)
class Sync:
    """Send a confirmed S-SYNC-MINOR."""


@dataclass(frozen=True, slots=True)
class End:
    """Send the S-ACTIVITY-END that closes the transfer."""


Step = Piece | Sync | End


@dataclass(slots=True)
class OutboundTransfer:
    """The sending side of one RT-TRANSFER."""

    transfer_id: int
    octets: bytes
    checkpoint_size: int
    window_size: int
    _offset: int = 0
    _unconfirmed: int = 0
    done: bool = False

    def __post_init__(self) -> None:
        if self.checkpoint_size < 0 or self.window_size < 1:
            raise LocalProtocolError(
                f"checkpoint size {self.checkpoint_size} and window {self.window_size} "
                "must be >= 0 and >= 1",
                layer="rtse",
            )

    def steps(self) -> list[Step]:
        """Every step the window allows now, in order; [] when waiting or done."""
        out: list[Step] = []
        while not self.done and self._unconfirmed < self.window_size:
            out.extend(self._next())
        return out

    def _next(self) -> list[Step]:
        view = memoryview(self.octets)
        if self.checkpoint_size == 0:
            self._offset = len(view)
            self.done = True
            return [Piece(view), End()]
        size = self.checkpoint_size * CHECKPOINT_UNIT
        piece = view[self._offset : self._offset + size]
        self._offset += len(piece)
        if self._offset >= len(view):
            self.done = True
            return [Piece(piece), End()]
        self._unconfirmed += 1
        return [Piece(piece), Sync()]

    def confirm_sync(self) -> None:
        """One outstanding S-SYNC-MINOR was confirmed by the receiver."""
        if self._unconfirmed == 0:
            raise RemoteProtocolError("minor sync confirmed that was never asked", layer="rtse")
        self._unconfirmed -= 1


@dataclass(slots=True)
class InboundTransfer:
    """The receiving side of one RT-TRANSFER: the pieces so far, bounded by ``limit``."""

    transfer_id: int
    limit: int
    _parts: list[bytes] = field(default_factory=list)
    _size: int = 0

    def add(self, data: bytes) -> None:
        """Append one piece; a transfer larger than ``limit`` is the peer's error."""
        self._size += len(data)
        if self._size > self.limit:
            raise RemoteProtocolError(
                f"transfer exceeds the limit of {self.limit} octets", layer="rtse"
            )
        self._parts.append(data)

    def octets(self) -> bytes:
        """The transfer's octets, joined once."""
        if len(self._parts) == 1:
            return self._parts[0]
        return b"".join(self._parts)
