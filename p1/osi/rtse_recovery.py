"""An RT-TRANSFER cut off by a lost connection, and where it goes on (X.228 recovery).

With checkpointing (checkpointSize > 0, X.228 7.5) both sides know where each
checkpoint of a transfer fell.  When the association ends abnormally in the middle of the
transfer, the receiver keeps the octets up to the last checkpoint it confirmed, and the
sender knows the last checkpoint confirmed to it; on a later association the sender
opens with RT-OPEN ``recover`` (RTORQ connectionDataRQ naming the session connection
lost) and resumes the activity with S-ACTIVITY-RESUME (X.225 7.31: the old activity
identifier, the serial number of that checkpoint and the old session connection
identifier), then sends the remaining octets only.  The receiver goes on from the octets
it kept up to that checkpoint (an earlier one than its last, when the last confirmations
were lost with the connection) and delivers the whole transfer once.

A session connection is named by its session connection identifier: the calling
SS-user reference, common reference and additional reference information of the CN's
connection identifier (X.225 PGI 1), which X.228 carries as::

    SessionConnectionIdentifier ::= SEQUENCE {
        callingSSuserReference  CHOICE { t61String T61String,       -- X.410-1984 mode
                                         octetString OCTET STRING }, -- normal mode
        commonReference         UTCTime,
        additionalReferenceInformation [0] IMPLICIT T61String OPTIONAL }

Each field is compared as the octets it holds.

A resumed transfer that is cut off again before its receiver confirmed a checkpoint of
the new association leaves its sender unsure whether the S-ACTIVITY-RESUME arrived: it
names the transfer as it did when it resumed it.  So the receiver keeps what it has of a
resumed transfer under its new names (the new connection and activity) and under the
names it had before (:attr:`PartialTransfer.aliases`), and either finds it.

The receiver's keep (:class:`PartialTransfers`) is bounded: at most ``max_count``
transfers, ``max_octets`` together, each for ``keep_for`` seconds (time is the caller's:
``now`` comes in as an argument), keyed by the peer (as its user names it), the session
connection identifier and the activity identifier.

Public API::

    SessionConnectionId(calling_reference, common_reference, additional=None)
        .encode() -> bytes / decode_session_connection_id(data)
        .connection_identifier() / SessionConnectionId.of(connection_identifier) -> ... | None
    ResumePoint(identifier, activity_id, serial, offset)      the sender's
    PartialTransfer(identifier, activity_id, octets, marks, aliases=())   the receiver's
        .at(serial) -> (octets, marks) | None / .names
    PartialTransfers(max_count=, max_octets=, keep_for=)
        .keep(peer, partial, now) -> bool / .take(peer, identifier, activity_id, now)
        .owner(identifier, now) -> peer | None / .expire(now) / len() / .octets
    Resumption (Protocol): take(identifier, activity_id) -> PartialTransfer | None
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from p1 import ber
from p1.errors import DecodeError
from p1.osi.x225.spdu import ConnectionIdentifier

__all__ = [
    "PartialTransfer",
    "PartialTransfers",
    "ResumePoint",
    "Resumption",
    "SessionConnectionId",
    "decode_session_connection_id",
]

_WHAT = "SessionConnectionIdentifier"
_T61_STRING = ber.universal(20)
_ADDITIONAL = ber.context(0)


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionConnectionId:
    """A session connection identifier: which session connection (X.228, X.225 PGI 1)."""

    calling_reference: bytes
    """The calling SS-user reference: the initiator's name for the connection."""
    common_reference: bytes
    """The common reference: a UTCTime's text ("YYMMDDhhmmssZ")."""
    additional: bytes | None = None
    """The additional reference information, if any."""

    def encode(self) -> bytes:
        """The BER of X.228's SessionConnectionIdentifier (normal mode)."""
        parts = [
            ber.tlv(ber.OCTET_STRING, self.calling_reference),
            ber.tlv(ber.UTC_TIME, self.common_reference),
        ]
        if self.additional is not None:
            parts.append(ber.tlv(_ADDITIONAL, self.additional))
        return ber.constructed(ber.SEQUENCE, parts)

    def connection_identifier(self) -> ConnectionIdentifier:
        """As the CN's connection identifier (PGI 1) carries it."""
        return ConnectionIdentifier(
            calling_ss_user_reference=self.calling_reference,
            common_reference=self.common_reference,
            additional_reference_information=self.additional,
        )

    @classmethod
    def of(cls, identifier: ConnectionIdentifier | None) -> SessionConnectionId | None:
        """The identifier a CN's PGI 1 (or an AR's linking information) gives; None when
        it lacks the calling SS-user reference or the common reference."""
        if identifier is None:
            return None
        calling, common = identifier.calling_ss_user_reference, identifier.common_reference
        if calling is None or common is None:
            return None
        additional = identifier.additional_reference_information
        return cls(calling_reference=calling, common_reference=common, additional=additional)


def decode_session_connection_id(data: bytes | bytearray | memoryview) -> SessionConnectionId:
    """Read X.228's SessionConnectionIdentifier; raises only :class:`DecodeError`."""
    sequence = ber.expect(ber.read_single(data, _WHAT), ber.SEQUENCE, _WHAT)
    items = ber.children(sequence, _WHAT)
    if len(items) not in (2, 3):
        raise DecodeError(f"{len(items)} members, not 2 or 3", where=_WHAT)
    calling, common, *rest = items
    if calling.tag not in (ber.OCTET_STRING, _T61_STRING):
        raise DecodeError(f"callingSSuserReference is {ber.tag_name(calling.tag)}", where=_WHAT)
    ber.expect(common, ber.UTC_TIME, f"{_WHAT}.commonReference")
    additional = None
    if rest:
        ber.expect(rest[0], _ADDITIONAL, f"{_WHAT}.additionalReferenceInformation")
        additional = ber.read_octets(rest[0], f"{_WHAT}.additionalReferenceInformation")
    return SessionConnectionId(
        calling_reference=ber.read_octets(calling, f"{_WHAT}.callingSSuserReference"),
        common_reference=ber.read_octets(common, f"{_WHAT}.commonReference"),
        additional=additional,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumePoint:
    """Where the sender of an interrupted transfer goes on from: the checkpoint
    ``serial`` of activity ``activity_id`` on session connection ``identifier``, which
    fell ``offset`` octets into the transfer."""

    identifier: SessionConnectionId
    activity_id: bytes
    serial: int
    offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PartialTransfer:
    """What the receiver kept of an interrupted transfer: its ``octets`` up to the last
    checkpoint it confirmed, and where each checkpoint fell (``marks``: serial number ->
    octets before it)."""

    identifier: SessionConnectionId
    activity_id: bytes
    octets: bytes
    marks: Mapping[int, int]
    aliases: tuple[tuple[SessionConnectionId, bytes], ...] = ()
    """The (connection, activity) the transfer had before it was last resumed."""

    @property
    def names(self) -> tuple[tuple[SessionConnectionId, bytes], ...]:
        """Every (connection, activity) the transfer is known by, the latest first."""
        return ((self.identifier, self.activity_id), *self.aliases)

    def at(self, serial: int) -> tuple[bytes, dict[int, int]] | None:
        """The octets before checkpoint ``serial`` and the marks up to it; None when no
        checkpoint of that number was kept (0: the transfer's start)."""
        stop = 0 if serial == 0 else self.marks.get(serial)
        if stop is None or stop > len(self.octets):
            return None
        marks = {number: at for number, at in self.marks.items() if number <= serial}
        return self.octets[:stop], marks


class Resumption(Protocol):
    """Where an association finds the partial transfer an S-ACTIVITY-RESUME names (its
    user binds it to the peer it authenticated)."""

    def take(
        self, identifier: SessionConnectionId, activity_id: bytes
    ) -> PartialTransfer | None: ...


_Key = tuple[str, SessionConnectionId, bytes]


class PartialTransfers:
    """Partial transfers kept for their senders to resume, bounded (module docstring)."""

    def __init__(self, *, max_count: int, max_octets: int, keep_for: float) -> None:
        self.max_count = max_count
        self.max_octets = max_octets
        self.keep_for = keep_for
        self._kept: OrderedDict[_Key, tuple[PartialTransfer, float]] = OrderedDict()
        self._octets = 0

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def octets(self) -> int:
        """The octets kept, all partial transfers together."""
        return self._octets

    def keep(self, peer: str, partial: PartialTransfer, now: float) -> bool:
        """Keep ``partial`` from ``peer`` until ``now + keep_for``; the oldest kept go to
        make room.  False (nothing kept) when it alone is over ``max_octets``."""
        if len(partial.octets) > self.max_octets or self.max_count < 1:
            return False
        self.expire(now)
        key = (peer, partial.identifier, partial.activity_id)
        self._drop(key)
        self._kept[key] = (partial, now)
        self._octets += len(partial.octets)
        while len(self._kept) > self.max_count or self._octets > self.max_octets:
            self._drop(next(iter(self._kept)))
        return True

    def take(
        self, peer: str, identifier: SessionConnectionId, activity_id: bytes, now: float
    ) -> PartialTransfer | None:
        """The partial transfer ``peer`` left of ``activity_id`` on ``identifier`` (by
        any of its names), no longer kept; None when none is (never kept, taken already,
        or expired)."""
        self.expire(now)
        name = (identifier, activity_id)
        for key, (partial, _) in self._kept.items():
            if key[0] == peer and name in partial.names:
                self._drop(key)
                return partial
        return None

    def owner(self, identifier: SessionConnectionId, now: float) -> str | None:
        """The peer that left a partial transfer on session connection ``identifier``."""
        self.expire(now)
        for (peer, _, _), (partial, _) in self._kept.items():
            if any(kept == identifier for kept, _ in partial.names):
                return peer
        return None

    def expire(self, now: float) -> None:
        """Forget what was kept before ``now - keep_for``."""
        while self._kept:
            key, (_, kept_at) = next(iter(self._kept.items()))
            if now - kept_at < self.keep_for:
                return
            self._drop(key)

    def _drop(self, key: _Key) -> tuple[PartialTransfer, float] | None:
        found = self._kept.pop(key, None)
        if found is not None:
            self._octets -= len(found[0].octets)
        return found
