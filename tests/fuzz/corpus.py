"""Real P1 conversations for the fuzz harness: captured ones and our own, recorded.

Two sources, each conversation kept as the writes of each side in order:

- the captures in ``<shared>/reference/pcaps`` (a product's bind accepted and refused, and
  PP 6.0 on ISODE binding, transferring and releasing to and from aiox400), read with the
  pure-Python reader of :mod:`tests.fuzz.pcap`;
- conversations between our own initiator and responder (:class:`P1Association` pairs
  wired in memory): binds accepted and refused, transfers in monologue and in two-way
  alternate with checkpoints and the turn moving, release and abort.

Our conversations bind as :data:`FUZZ_PEER` and transfer messages to :data:`ALICE` in the
domain of the MTA that :mod:`tests.fuzz.live` runs, which also knows the captures' peers
(:data:`KNOWN_PEERS`), so that a replay reaches the transfer phase of a real daemon.

Public API::

    Recorded(name, client, server)          the writes of the initiator and of the responder
    captured(directory) -> list[Recorded]   every TPKT conversation of the captures
    ours() -> list[Recorded]
    corpus(*, require_shared) -> list[Recorded]
    shared_pcaps() -> Path | None           where the captures are (None: absent)
    message_apdu(local_id, recipient=ALICE, size=...) -> bytes   an MTS-APDU to deliver
    FUZZ_PEER, FUZZ_PASSWORD, KNOWN_PEERS, DOMAIN, ALICE, BOB, LOCAL_USERS
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from p1.association.connection import (
    AssociationSettings,
    BindRequested,
    P1Association,
    TransferReceived,
)
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult
from p1.ipms.ipm import (
    IPM,
    ContentKind,
    Heading,
    IPMIdentifier,
    ORDescriptor,
    Recipient,
    TextBodyPart,
    encode_content,
)
from p1.mts.envelope import (
    Message,
    MessageEnvelope,
    MTSIdentifier,
    PerRecipientIndicators,
    RecipientField,
    TraceEntry,
    encode_mts_apdu,
)
from p1.mts.fields import GlobalDomainIdentifier
from p1.mts.orname import parse_orname
from p1.mts.precedence import Precedence
from p1.osi import Event, Role
from p1.osi.rtse import DialogueMode
from tests.fuzz.pcap import read_conversations

DOMAIN = "C=GB;ADMD= ;PRMD=AIOX"
"""The global domain of the daemon the live run starts (the captures' aiox400 site)."""
ALICE = f"{DOMAIN};O=HQ;S=alice"
BOB = f"{DOMAIN};S=bob"
"""The recipient of PP's message in the captures."""
LOCAL_USERS = (ALICE, BOB)
UNIQUE = b"QQQQQQQQ"
"""In the MTS identifiers of our conversations' messages: each case puts its own number
there (:meth:`Recorded.numbered`), so a message is not taken for a duplicate of another
case's, which the MTA acknowledges without reading further."""
FUZZ_PEER = "MTA-FUZZ"
FUZZ_PASSWORD = "fuzz-secret"
KNOWN_PEERS = {
    FUZZ_PEER: FUZZ_PASSWORD,
    "pp.test": "pp-secret",  # PP binding to aiox400 in the captures
    "aiox": "aiox-secret",  # aiox400 binding to PP
    "percival.smhs.co.uk": "excalibur",  # the product's accepted bind
}
"""MTA names and the passwords they present in the conversations of the corpus."""

_SENDER_DOMAIN = GlobalDomainIdentifier(country="GB", admd=" ", prmd="FUZZ")
_ORIGINATOR = parse_orname("C=GB;ADMD= ;PRMD=FUZZ;O=HQ;S=mallory")
_SENT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
_RESULT = MTABindResult(responder_name="aiox", password="aiox-secret")


@dataclass(frozen=True, slots=True)
class Recorded:
    """One conversation: the initiator's writes and the responder's, each side in order."""

    name: str
    client: tuple[bytes, ...]
    server: tuple[bytes, ...]

    def numbered(self, number: int) -> Recorded:
        """This conversation with ``number`` (as 8 hexadecimal digits) for :data:`UNIQUE`."""
        if not any(UNIQUE in w for w in self.client):
            return self
        mark = f"{number & 0xFFFFFFFF:08X}".encode()
        return Recorded(self.name, _replaced(self.client, mark), _replaced(self.server, mark))


def _replaced(writes: tuple[bytes, ...], mark: bytes) -> tuple[bytes, ...]:
    """``writes`` with :data:`UNIQUE` replaced, also where it straddles two writes."""
    joined = b"".join(writes).replace(UNIQUE, mark)
    out, offset = [], 0
    for write in writes:
        out.append(joined[offset : offset + len(write)])
        offset += len(write)
    return tuple(out)


# --- captures -------------------------------------------------------------------------------


def shared_pcaps() -> Path | None:
    """``<shared>/reference/pcaps``: ``$AIOX400_SHARED`` or the folder beside the checkout."""
    shared = os.environ.get("AIOX400_SHARED")
    base = Path(shared) if shared else Path(__file__).resolve().parents[3] / "shared"
    pcaps = base / "reference" / "pcaps"
    return pcaps if pcaps.is_dir() else None


def captured(directory: Path) -> list[Recorded]:
    """The conversations of every capture under ``directory`` whose initiator speaks RFC
    1006 (its first octets are a TPKT header)."""
    found = []
    for path in sorted(directory.rglob("*.pcap")):
        for conversation in read_conversations(path):
            client = tuple(s.data for s in conversation.segments if s.from_client)
            server = tuple(s.data for s in conversation.segments if not s.from_client)
            if client and client[0][:2] == b"\x03\x00":
                found.append(Recorded(conversation.name, client, server))
    return found


# --- our own -----------------------------------------------------------------------------


def message_apdu(local_id: str, recipient: str = ALICE, size: int = 200) -> bytes:
    """An X.411 message (P772 IPM, ``size`` octets of text) to ``recipient``."""
    to = parse_orname(recipient)
    envelope = MessageEnvelope(
        mts_identifier=MTSIdentifier(
            global_domain_identifier=_SENDER_DOMAIN, local_identifier=local_id
        ),
        originator_name=_ORIGINATOR,
        content_type=ContentKind.P772.value,
        trace_information=(
            TraceEntry(global_domain_identifier=_SENDER_DOMAIN, arrival_time=_SENT),
        ),
        recipients=(
            RecipientField(
                recipient_name=to,
                originally_specified_recipient_number=1,
                per_recipient_indicators=PerRecipientIndicators(responsibility=True),
            ),
        ),
    ).with_precedence(Precedence.ROUTINE)
    heading = Heading(
        this_ipm=IPMIdentifier(user=_ORIGINATOR, user_relative_identifier=local_id),
        originator=ORDescriptor(formal_name=_ORIGINATOR),
        primary_recipients=(Recipient(name=to),),
        subject=f"fuzz {local_id}",
    )
    text = ("ALL QUIET ON THE NORTHERN SECTOR. " * (size // 34 + 1))[:size]
    ipm = IPM(heading=heading, body=(TextBodyPart.from_text(text),))
    content = encode_content(ipm, ContentKind.P772)
    return encode_mts_apdu(Message(envelope=envelope, content=content))


class _Talk:
    """Our initiator and responder joined in memory, every write of each side kept."""

    def __init__(self, settings: AssociationSettings, password: str = FUZZ_PASSWORD) -> None:
        self.initiator = P1Association(Role.INITIATOR, settings)
        self.responder = P1Association(Role.RESPONDER)
        self.client: list[bytes] = []
        self.server: list[bytes] = []
        self.password = password
        self.initiator.send_bind(MTABindArgument(initiator_name=FUZZ_PEER, password=password))

    def pump(self) -> None:
        """Deliver both ways until both are quiet; the responder answers as an MTA does."""
        while True:
            sent = self.initiator.data_to_send()
            if sent:
                self.client.append(sent)
                self._answer(self.responder.receive_data(sent))
            answer = self.responder.data_to_send()
            if answer:
                self.server.append(answer)
                self.initiator.receive_data(answer)
            if not sent and not answer:
                return

    def _answer(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, BindRequested):
                if event.argument.password == FUZZ_PASSWORD:
                    self.responder.accept_bind(_RESULT)
                else:
                    self.responder.refuse_bind(MTABindError.AUTHENTICATION_ERROR)
            elif isinstance(event, TransferReceived):
                self.responder.confirm_transfer(event.transfer_id)

    def transfer(self, apdu: bytes) -> None:
        self.initiator.send_transfer(apdu)
        self.pump()

    def recorded(self, name: str) -> Recorded:
        return Recorded(f"ours:{name}", tuple(self.client), tuple(self.server))


def _monologue() -> Recorded:
    talk = _Talk(AssociationSettings())
    talk.pump()
    talk.transfer(message_apdu("mono-" + UNIQUE.decode()))
    talk.initiator.send_release()
    talk.pump()
    return talk.recorded("monologue")


def _two_transfers() -> Recorded:
    talk = _Talk(AssociationSettings())
    talk.pump()
    talk.transfer(message_apdu("two-1-" + UNIQUE.decode()))
    talk.transfer(message_apdu("two-2-" + UNIQUE.decode(), size=600))
    talk.initiator.send_release()
    talk.pump()
    return talk.recorded("two-transfers")


def _checkpoints() -> Recorded:
    settings = AssociationSettings(dialogue_mode=DialogueMode.TWA, checkpoint_size=1, window_size=2)
    talk = _Talk(settings)
    talk.pump()
    talk.transfer(message_apdu("twa-" + UNIQUE.decode(), size=3000))
    talk.responder.request_turn(2)
    talk.pump()
    talk.initiator.give_turn()
    talk.pump()
    talk.initiator.request_turn(1)
    talk.pump()
    talk.responder.give_turn()
    talk.pump()
    talk.initiator.send_release()
    talk.pump()
    return talk.recorded("two-way-alternate")


def _refused() -> Recorded:
    talk = _Talk(AssociationSettings(), password="not-the-password")
    talk.pump()
    return talk.recorded("refused")


def _aborted() -> Recorded:
    talk = _Talk(AssociationSettings(checkpoint_size=1, window_size=1))
    talk.pump()
    talk.initiator.send_transfer(message_apdu("aborted-" + UNIQUE.decode(), size=4000))
    talk.pump()
    talk.initiator.abort("fuzz")
    talk.pump()
    return talk.recorded("aborted")


_OURS: tuple[Callable[[], Recorded], ...] = (
    _monologue,
    _two_transfers,
    _checkpoints,
    _refused,
    _aborted,
)


def ours() -> list[Recorded]:
    """Conversations between our own initiator and responder."""
    return [record() for record in _OURS]


def corpus(*, require_shared: bool) -> list[Recorded]:
    """Ours and, when the shared folder is there, the captured ones.  ``require_shared``:
    their absence is an error (as in CI)."""
    pcaps = shared_pcaps()
    if pcaps is None:
        if require_shared:
            raise FileNotFoundError("the reference captures (<shared>/reference/pcaps) are absent")
        return ours()
    return ours() + captured(pcaps)
