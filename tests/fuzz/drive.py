"""Feed a mutated conversation to one end of the stack and check what comes out (sans-I/O).

The association is driven as ``mta/link.py`` drives it: every read goes to
:meth:`P1Association.receive_data`, what it queued is taken at once, and its user answers
each event in order without looking at the state first (the daemon answers the events a
read gave before it sees the next one): a responder's user accepts the bind of a known
peer and refuses others, confirms every transfer, gives the turn held when asked for it; an
initiator's user transfers once bound, then releases.  After the last read, the connection
ends (:meth:`receive_eof`).

What must hold, whatever the peer sent (style.md section 5):

- nothing raises: not ``receive_data``, ``receive_eof``, ``data_to_send``, nor an answer to
  an event the association returned;
- only the association's own events come out;
- the association says how it ended: an ``Aborted``, ``Released`` or (initiator)
  ``BindRefused`` event comes with the move to CLOSED (except when its own user refused
  the bind), nothing comes after it, and a closed association ignores what it is fed;
- an abort for the peer's error (``Aborted(by_peer=False)``) leaves an abort on the wire:
  ER or DR (transport), AB (session: with ARP, or ABRT carrying RTAB) as the last TPDU;
- what we write is whole TPKTs.

Public API::

    Outcome(events, sent, problems, error)     .ok, .kinds
    play_responder(reads) -> Outcome            play_initiator(reads) -> Outcome
    check(case) -> Outcome                      by the case's side
    run_cases(mutator, indices, *, from_client) -> [Failure(case, outcome)]
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from p1.association.connection import (
    Aborted,
    AssociationSettings,
    BindAccepted,
    BindRefused,
    BindRequested,
    P1Association,
    Released,
    TransferConfirmed,
    TransferReceived,
    TurnGiven,
    TurnRequested,
)
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult
from p1.osi import Event, Role
from p1.osi.rtse import DialogueMode
from tests.fuzz.corpus import FUZZ_PASSWORD, FUZZ_PEER, KNOWN_PEERS, message_apdu
from tests.fuzz.layers import DT, EOT
from tests.fuzz.mutate import Case, Mutator

EVENT_TYPES = (
    BindRequested,
    BindAccepted,
    BindRefused,
    TransferReceived,
    TransferConfirmed,
    TurnRequested,
    TurnGiven,
    Released,
    Aborted,
)
_ENDINGS = (Aborted, Released, BindRefused)
_RESULT = MTABindResult(responder_name="aiox", password="aiox-secret")
_ARGUMENT = MTABindArgument(initiator_name=FUZZ_PEER, password=FUZZ_PASSWORD)
_APDU = message_apdu("fuzz-initiator")
_CR, _DR, _ER = 0xE0, 0x80, 0x70
_SI_AB = 25  # AB (and AI: told apart by position; an abort TSDU holds AB alone)
_SI_RF = 12
_TPKT_HEADER = 4


@dataclass(slots=True)
class Outcome:
    """What one played case gave: events, octets written, broken rules, an exception."""

    events: list[Event] = field(default_factory=list)
    sent: bytes = b""
    problems: list[str] = field(default_factory=list)
    error: str | None = None
    """The traceback of an exception that escaped the stack (None: none did)."""

    @property
    def ok(self) -> bool:
        return self.error is None and not self.problems

    @property
    def kinds(self) -> list[str]:
        return [type(event).__name__ for event in self.events]


class _Player:
    """One association, its user, and the checks made after every call."""

    def __init__(self, association: P1Association) -> None:
        self.association = association
        self.outcome = Outcome()
        self.ended = False  # an ending event was given
        self.refused_by_us = False  # by its user, or by the association before asking it
        self.asked = False  # a BindRequested was given
        self._sent: list[bytes] = []
        self._disconnects = _Disconnects()

    def feed(self, data: bytes) -> None:
        was_closed = self.association.closed
        events = self.association.receive_data(data) if data else self.association.receive_eof()
        if was_closed and events:
            self._problem(f"events from a closed association: {_names(events)}")
        self._take(events, data)

    def _take(self, events: list[Event], data: bytes) -> None:
        sent = self.association.data_to_send()
        for event in list(events):
            events += self.answer(event)  # (an answer may end it: its events count too)
            if self.association.closed:
                break  # as mta.link's serve loop, which returns once the association closed
        sent += self.association.data_to_send()
        self.outcome.events += events
        for index, event in enumerate(events):
            self.asked = self.asked or isinstance(event, BindRequested)
            if not isinstance(event, EVENT_TYPES):
                self._problem(f"a foreign event: {event!r}")
            if isinstance(event, _ENDINGS):
                if index != len(events) - 1:
                    self._problem(f"events after {type(event).__name__}: {_names(events)}")
                self.ended = True
        self._check_close(events, sent, data)
        self._sent.append(sent)

    def answer(self, event: Event) -> list[Event]:
        """The user's answer to ``event``; the events it gave (of the association's end)."""
        raise NotImplementedError

    def _check_close(self, events: list[Event], sent: bytes, data: bytes) -> None:
        closed = self.association.closed
        disconnected = self._disconnects.feed(data)
        if closed and not self.ended and not self.refused_by_us:
            # Refused before its user was asked: an RF, unless the peer's DR or ER in the
            # same read took the transport first.
            self.refused_by_us = self._refused(sent) or (disconnected and not self.asked)
        if closed and not self.ended and not self.refused_by_us:
            self._problem(f"closed without an ending event (events: {_names(events)})")
        if self.ended and not closed:
            self._problem("an ending event, yet the association is not closed")
        framing = _framing_problem(sent)
        if framing:
            self._problem(framing)
        ours = [e for e in events if isinstance(e, Aborted) and not e.by_peer]
        if ours and not _ends_with_abort(sent) and not disconnected:
            self._problem(f"aborted ({ours[0].why}) with no abort written: {sent[-40:].hex()}")

    def _refused(self, sent: bytes) -> bool:
        """A responder refused a bind before asking its user (p1.association.connection
        rule 1): it says so to the peer only, with an RF."""
        if self.association.role is not Role.RESPONDER:
            return False
        return _last_tsdu(sent)[:1] == bytes((_SI_RF,))

    def _problem(self, what: str) -> None:
        if what not in self.outcome.problems:
            self.outcome.problems.append(what)

    def finish(self) -> Outcome:
        self.feed(b"")
        self._take([], b"")
        if self.association.data_to_send():
            self._problem("data queued after everything was taken")
        self.outcome.sent = b"".join(self._sent)
        return self.outcome


class _ResponderUser(_Player):
    """As mta.link.serve_link with the daemon's Responder: bind of a known peer accepted."""

    def answer(self, event: Event) -> list[Event]:
        association = self.association
        if isinstance(event, BindRequested):
            argument = event.argument
            password = argument.password
            if isinstance(password, bytes):
                password = password.decode("latin-1")
            if KNOWN_PEERS.get(argument.initiator_name or "") == password:
                return association.accept_bind(_RESULT)
            association.refuse_bind(MTABindError.AUTHENTICATION_ERROR)
            self.refused_by_us = True
        elif isinstance(event, TransferReceived):
            association.confirm_transfer(event.transfer_id)
        elif isinstance(event, TurnRequested) and _gives_turn(association):
            association.give_turn()
        return []


def _gives_turn(association: P1Association) -> bool:
    """As mta.link's Link.answer_turn_request: the turn held in two-way alternate mode,
    with no transfer of ours in progress, is given to a peer that asks."""
    return (
        association.has_turn
        and not association.busy
        and association.dialogue_mode is DialogueMode.TWA
    )


class _InitiatorUser(_Player):
    """As mta.outbound.channels with mta.link: transfer once bound, release once confirmed."""

    def answer(self, event: Event) -> list[Event]:
        association = self.association
        if isinstance(event, BindAccepted):
            association.send_transfer(_APDU)
        elif isinstance(event, TransferConfirmed):
            association.send_release()
        elif isinstance(event, TransferReceived):
            association.confirm_transfer(event.transfer_id)
        return []


def _names(events: list[Event]) -> str:
    return ", ".join(type(e).__name__ for e in events) or "none"


def _tpkts(data: bytes) -> list[bytes] | None:
    out = []
    while data:
        size = int.from_bytes(data[2:4], "big")
        if data[:2] != b"\x03\x00" or size < _TPKT_HEADER + 3 or size > len(data):
            return None
        out.append(data[_TPKT_HEADER:size])
        data = data[size:]
    return out


def _framing_problem(sent: bytes) -> str | None:
    if _tpkts(sent) is None:
        return f"we wrote octets that are not whole TPKTs: {sent[:40].hex()}"
    return None


def _ends_with_abort(sent: bytes) -> bool:
    """The last TPDU written is ER or DR, or a DT whose TSDU is an AB SPDU."""
    tpdus = _tpkts(sent)
    if not tpdus:
        return False
    if tpdus[-1][1] & 0xF0 in (_ER, _DR):
        return True
    return _last_tsdu(sent)[:1] == bytes((_SI_AB,))


def _last_tsdu(sent: bytes) -> bytes:
    """The TSDU of the last TPDU written, if it is a DT with EOT (else nothing)."""
    tpdus = _tpkts(sent) or []
    if not tpdus or tpdus[-1][1] & 0xF0 != DT or not tpdus[-1][2] & EOT:
        return b""
    start = len(tpdus) - 1  # back to the DT after the last one with EOT
    while start > 0 and tpdus[start - 1][1] & 0xF0 == DT and not tpdus[start - 1][2] & EOT:
        start -= 1
    return b"".join(t[3:] for t in tpdus[start:])


class _Disconnects:
    """Follows the TPKTs of the reads to tell whether a read completed a DR or ER: the peer
    closed the transport, so nothing the layers above answered in that read is sent
    (p1.association.connection rule 5)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._lost = False

    def feed(self, data: bytes) -> bool:
        if self._lost:
            return False
        buffer = self._buffer + data
        found = False
        while len(buffer) >= _TPKT_HEADER:
            size = int.from_bytes(buffer[2:4], "big")
            if buffer[0] != 3 or size < _TPKT_HEADER + 2:
                self._lost = True
                return found
            if len(buffer) < size:
                break
            found = found or buffer[5] & 0xF0 in (_DR, _ER)
            buffer = buffer[size:]
        self._buffer = buffer
        return found


def _play(player: _Player, reads: tuple[bytes, ...] | list[bytes]) -> Outcome:
    try:
        for data in reads:
            if data:
                player.feed(data)
        return player.finish()
    except Exception:
        player.outcome.error = traceback.format_exc()
        return player.outcome


def play_responder(reads: tuple[bytes, ...] | list[bytes]) -> Outcome:
    """A fresh responder fed ``reads`` (what an initiator sent)."""
    return _play(_ResponderUser(P1Association(Role.RESPONDER)), reads)


_INITIATOR_SETTINGS = (
    AssociationSettings(),
    AssociationSettings(dialogue_mode=DialogueMode.TWA, checkpoint_size=1, window_size=2),
)


def play_initiator(reads: tuple[bytes, ...] | list[bytes], *, two_way: bool = False) -> Outcome:
    """An initiator that has sent its bind, fed ``reads`` (what a responder sent)."""
    association = P1Association(Role.INITIATOR, _INITIATOR_SETTINGS[two_way])
    player = _InitiatorUser(association)
    try:
        association.send_bind(_ARGUMENT)
        player._sent.append(association.data_to_send())
    except Exception:
        player.outcome.error = traceback.format_exc()
        return player.outcome
    return _play(player, reads)


def check(case: Case) -> Outcome:
    """Play ``case`` against the end that would receive it."""
    player: Callable[[tuple[bytes, ...]], Outcome]
    player = play_responder if case.from_client else play_initiator
    return player(case.reads)


def run_cases(mutator: Mutator, indices: Iterable[int], *, from_client: bool) -> list[Failure]:
    """Play case ``i`` of ``mutator`` for each index; the cases that broke a rule."""
    failures = []
    for index in indices:
        case = mutator.case(index, from_client=from_client)
        outcome = check(case)
        if not outcome.ok:
            failures.append(Failure(case, outcome))
    return failures


@dataclass(frozen=True, slots=True)
class Failure:
    """A case and what it broke."""

    case: Case
    outcome: Outcome

    def describe(self, seed: int) -> str:
        side = "initiator" if self.case.from_client else "responder"
        what = self.outcome.error or "; ".join(self.outcome.problems)
        return (
            f"{self.case.describe()}\n  replay: python -m tests.fuzz --seed {seed} "
            f"--case {self.case.index} --side {side}\n  {what.strip()}"
        )
