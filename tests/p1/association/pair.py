"""Two P1 associations wired together in memory, and what travels between them (test helper).

:class:`Pair` holds an initiator and a responder :class:`~p1.association.connection.P1Association`;
:meth:`Pair.pump` writes what each has queued into the other until neither has anything
left, collecting the events of each side (as h11's ``ConnectionPair`` and aioquic's
``client_and_server`` do).  The other helpers read and write raw bytes: TPKT / X.224
class 0 framing, session SPDUs, P-DATA, and the connect data of a hand-made bind, so that a
test can give an association what a broken or unusual peer would send and read what it
answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p1 import ber
from p1.association import mtabind
from p1.association.connection import (
    MTS_TRANSFER_CONTEXT,
    AssociationSettings,
    BindAccepted,
    BindRequested,
    P1Association,
)
from p1.association.mtabind import MTABindArgument, MTABindError, MTABindResult
from p1.osi import Event, Role, acse, presentation, rtse, session, tpdu
from p1.osi.rtse import DialogueMode
from p1.osi.tpkt import encode_tpkt
from p1.osi.x225 import spdu

TPKT_HEADER = 4
DT_HEADER = 3
ARGUMENT = MTABindArgument(initiator_name="mta-a.example", password="secret-a")
RESULT = MTABindResult(responder_name="mta-b.example", password="secret-b")
BIND_OPEN = mtabind.wrap_bind_argument(mtabind.encode_bind_argument(ARGUMENT))
"""The RT-OPEN user data of :data:`ARGUMENT`: ``[16] EXPLICIT MTABindArgument``."""


@dataclass(slots=True)
class Pumped:
    """The events each side gave during one :meth:`Pair.pump`."""

    initiator: list[Event] = field(default_factory=list)
    responder: list[Event] = field(default_factory=list)


class Pair:
    """An initiator and a responder joined by an in-memory, loss-free byte pipe."""

    def __init__(
        self,
        initiator: AssociationSettings | None = None,
        responder: AssociationSettings | None = None,
    ) -> None:
        self.initiator = P1Association(Role.INITIATOR, initiator)
        self.responder = P1Association(Role.RESPONDER, responder)
        self.initiator_events: list[Event] = []
        self.responder_events: list[Event] = []
        self.sent_by_initiator: list[bytes] = []
        self.sent_by_responder: list[bytes] = []

    def deliver(self, from_initiator: bool, *, bytewise: bool = False) -> list[Event]:
        """Write what one side has queued into the other; the receiver's events."""
        if from_initiator:
            data = self.initiator.data_to_send()
            self.sent_by_initiator.append(data)
            events = feed(self.responder, data, bytewise=bytewise)
            self.responder_events.extend(events)
        else:
            data = self.responder.data_to_send()
            self.sent_by_responder.append(data)
            events = feed(self.initiator, data, bytewise=bytewise)
            self.initiator_events.extend(events)
        return events

    def pump(self, *, bytewise: bool = False, rounds: int = 100_000) -> Pumped:
        """Deliver both ways until both sides are quiet; the events each side gave."""
        pumped = Pumped()
        for _ in range(rounds):
            pumped.responder.extend(self.deliver(True, bytewise=bytewise))
            pumped.initiator.extend(self.deliver(False, bytewise=bytewise))
            if not self.sent_by_initiator[-1] and not self.sent_by_responder[-1]:
                return pumped
        raise AssertionError(f"the pair was still talking after {rounds} rounds")

    def bind(
        self, argument: MTABindArgument = ARGUMENT, result: MTABindResult = RESULT
    ) -> tuple[BindRequested, BindAccepted]:
        """Connect and bind, the responder accepting: its BindRequested, then BindAccepted."""
        self.initiator.send_bind(argument)
        (requested,) = self.pump().responder
        assert isinstance(requested, BindRequested), requested
        self.responder.accept_bind(result)
        (accepted,) = self.pump().initiator
        assert isinstance(accepted, BindAccepted), accepted
        return requested, accepted

    def connect_transport(self) -> bytes:
        """send_bind, then CR and CC exchanged; the CN bytes the initiator then queued."""
        self.initiator.send_bind(ARGUMENT)
        assert self.deliver(True) == []
        assert self.deliver(False) == []
        return self.initiator.data_to_send()


def open_pair(
    *,
    dialogue_mode: DialogueMode = DialogueMode.MONOLOGUE,
    checkpoint_size: int = 0,
    window_size: int = 3,
    responder: AssociationSettings | None = None,
) -> Pair:
    """A bound pair whose initiator proposed these RT-OPEN parameters."""
    pair = Pair(
        AssociationSettings(
            dialogue_mode=dialogue_mode, checkpoint_size=checkpoint_size, window_size=window_size
        ),
        responder,
    )
    pair.bind()
    return pair


def feed(association: P1Association, data: bytes, *, bytewise: bool = False) -> list[Event]:
    """``receive_data`` of ``data``, whole or one octet at a time; the events."""
    if not bytewise:
        return association.receive_data(data)
    events: list[Event] = []
    for index in range(len(data)):
        events.extend(association.receive_data(data[index : index + 1]))
    return events


# --- reading the wire -------------------------------------------------------------------


def tpdus(data: bytes) -> list[bytes]:
    """The TPDUs of TPKT-framed ``data`` (RFC 1006: the length counts the header)."""
    out = []
    while data:
        length = int.from_bytes(data[2:4], "big")
        assert data[:2] == b"\x03\x00" and TPKT_HEADER < length <= len(data), data[:4].hex()
        out.append(data[TPKT_HEADER:length])
        data = data[length:]
    return out


def tpdu_codes(data: bytes) -> list[int]:
    """The X.224 TPDU codes in ``data`` (CR 0xE0, CC 0xD0, DR 0x80, DT 0xF0, ER 0x70)."""
    return [unit[1] & 0xF0 for unit in tpdus(data)]


def tsdus(data: bytes) -> list[bytes]:
    """The TSDUs of the DT TPDUs in ``data``, joined at EOT."""
    out: list[bytes] = []
    parts: list[bytes] = []
    for unit in tpdus(data):
        if unit[1] & 0xF0 != tpdu.DT:
            continue
        parts.append(unit[DT_HEADER:])
        if unit[2] & tpdu.EOT:
            out.append(b"".join(parts))
            parts = []
    assert not parts, "a TSDU without its EOT"
    return out


def spdus(data: bytes) -> list[spdu.Spdu]:
    """The session SPDUs in ``data``, without the empty GT / PT of concatenation."""
    return [
        unit
        for tsdu in tsdus(data)
        for unit in spdu.decode_tsdu(tsdu)
        if unit.kind not in (spdu.Kind.GT, spdu.Kind.PT) or unit.token_item or unit.user_data
    ]


def spdu_kinds(data: bytes) -> list[spdu.Kind]:
    """The kinds of the SPDUs in ``data`` (see :func:`spdus`)."""
    return [unit.kind for unit in spdus(data)]


def only_spdu(data: bytes, kind: spdu.Kind) -> spdu.Spdu:
    """The one SPDU of ``kind`` in ``data``."""
    (unit,) = [unit for unit in spdus(data) if unit.kind is kind]
    return unit


def user_abort_rtab(data: bytes) -> rtse.Rtab:
    """The RTAB of the AB{ARU{ABRT{RTAB}}} in ``data`` (the ABRT from the service-user)."""
    aru = presentation.decode_aru(only_spdu(data, spdu.Kind.AB).user_data)
    (pdv,) = aru.user_data
    assert pdv.context_id == presentation.ACSE_CONTEXT
    abrt = acse.decode_acse(pdv.value)
    assert isinstance(abrt, acse.Abrt), abrt
    assert abrt.source is acse.SERVICE_USER
    (value,) = abrt.user_information
    rtab = rtse.decode_rtse(value.value)
    assert isinstance(rtab, rtse.Rtab), rtab
    return rtab


def refusal_aare(data: bytes) -> acse.Aare:
    """The AARE of the RF{CPR{AARE}} in ``data``."""
    cpr = presentation.decode_cpr(only_spdu(data, spdu.Kind.RF).user_data)
    (pdv,) = cpr.user_data
    assert pdv.context_id == presentation.ACSE_CONTEXT
    aare = acse.decode_acse(pdv.value)
    assert isinstance(aare, acse.Aare), aare
    return aare


def refusal_error(data: bytes) -> MTABindError:
    """The MTABindError of the RF{CPR{AARE{RTORJ{[18] error}}}} in ``data``."""
    aare = refusal_aare(data)
    assert aare.result == acse.REJECTED_PERMANENT
    (value,) = aare.user_information
    rtorj = rtse.decode_rtse(value.value)
    assert isinstance(rtorj, rtse.Rtorj) and rtorj.user_data is not None, rtorj
    return mtabind.decode_bind_error(mtabind.unwrap_bind_error(rtorj.user_data))


def rttr_lengths(data: bytes) -> list[int]:
    """The octets each P-DATA (one RTTR in context 3) in ``data`` carries, in order."""
    lengths = []
    for unit in spdus(data):
        if unit.kind is spdu.Kind.DT:
            (pdv,) = presentation.decode_user_data(unit.user_data)
            assert pdv.context_id == presentation.RTSE_CONTEXT
            lengths.append(len(rtse.decode_rttr(pdv.value)))
    return lengths


# --- writing the wire -------------------------------------------------------------------


def dt(tsdu: bytes) -> bytes:
    """``tsdu`` in one DT TPDU with EOT, TPKT-framed (class 0 DT names no connection)."""
    return encode_tpkt(tpdu.encode_dt(tsdu, eot=True))


def spdu_bytes(unit: spdu.Spdu) -> bytes:
    """One SPDU (after its empty GT / PT when it is of category 2) as a TPKT-framed DT."""
    return dt(spdu.encode_tsdu(unit))


def data_bytes(user_data: bytes) -> bytes:
    """S-DATA: GT + DT carrying ``user_data``."""
    return spdu_bytes(spdu.Spdu(kind=spdu.Kind.DT, user_data=user_data))


def rttr_bytes(octets: bytes) -> bytes:
    """P-DATA of one RTTR (context 3) carrying ``octets``."""
    return data_bytes(presentation.encode_pdv(presentation.RTSE_CONTEXT, rtse.encode_rttr(octets)))


def activity_start_bytes(number: int) -> bytes:
    """S-ACTIVITY-START with the activity identifier RTSE uses (a BER INTEGER)."""
    identifier = ber.tlv(ber.INTEGER, ber.int_contents(number))
    return spdu_bytes(spdu.Spdu(kind=spdu.Kind.AS, activity_identifier=identifier))


def activity_end_bytes(serial: int = 1) -> bytes:
    """S-ACTIVITY-END: MAP without sync type item, carrying ``serial``."""
    return spdu_bytes(spdu.Spdu(kind=spdu.Kind.MAP, serial_number=serial))


def minor_sync_ack_bytes(serial: int) -> bytes:
    """S-SYNC-MINOR response: MIA confirming every point up to ``serial``."""
    return spdu_bytes(spdu.Spdu(kind=spdu.Kind.MIA, serial_number=serial))


def rtse_external(value: bytes) -> acse.External:
    """``EXTERNAL { direct-reference BER, indirect-reference 3, single-ASN1-type value }``."""
    return acse.External(
        direct_reference=presentation.BER,
        indirect_reference=presentation.RTSE_CONTEXT,
        value=value,
    )


def rtorq_bytes(
    *,
    open_data: bytes | None = BIND_OPEN,
    recover: bytes | None = None,
    dialogue_mode: DialogueMode = DialogueMode.MONOLOGUE,
) -> bytes:
    """The BER of an RTORQ (by default carrying :data:`BIND_OPEN`)."""
    return rtse.encode_rtse(
        rtse.Rtorq(dialogue_mode=dialogue_mode, open=open_data, recover=recover)
    )


def aarq_bytes(rtorq_value: bytes, application_context: str = MTS_TRANSFER_CONTEXT) -> bytes:
    """The BER of an AARQ whose user information is ``rtorq_value`` (context 3)."""
    return acse.encode_acse(
        acse.Aarq(
            application_context=application_context,
            user_information=(rtse_external(rtorq_value),),
        )
    )


def connect_data(aarq_value: bytes) -> bytes:
    """CP-type proposing the P1 contexts, with ``aarq_value`` in the ACSE context."""
    return presentation.encode_cp(
        presentation.ConnectPpdu(
            contexts=presentation.P1_CONTEXTS,
            user_data=(presentation.Pdv(presentation.ACSE_CONTEXT, aarq_value),),
        )
    )


def cn_bytes(user_data: bytes) -> bytes:
    """A CN as our session layer sends it (RTSE's functional units) carrying ``user_data``."""
    connection = session.SessionConnection(Role.INITIATOR)
    connection.send_connect(user_data)
    return b"".join(dt(tsdu) for tsdu in connection.tsdus_to_send())


def apdu(size: int) -> bytes:
    """An MTS-APDU-shaped BER value (``[0]`` around an OCTET STRING) of ``size`` octets.

    The content cycles through every octet value so that a piece out of place shows.
    ``size`` 2 or less gives the smallest value, ``a0 00``.
    """
    if size <= 2:
        return bytes((0xA0, 0))
    for headers in range(4, 16):  # the two headers grow with the size
        inner = max(size - headers, 0)
        pattern = bytes(range(256)) * (inner // 256 + 1)
        value = ber.tlv(ber.context(0), ber.tlv(ber.OCTET_STRING, pattern[:inner]), True)
        if len(value) == size:
            return value
    return _apdu_long_form(size)


def _apdu_long_form(size: int) -> bytes:
    """A size the minimal lengths skip (259, say): the outer length in a long form one
    octet longer than it needs, which BER allows (X.690 8.1.3.5)."""
    for octets in range(2, 5):
        for headers in range(2, 8):
            inner = size - 2 - octets - headers
            if inner < 0:
                continue
            octet_string = ber.tlv(
                ber.OCTET_STRING, (bytes(range(256)) * (inner // 256 + 1))[:inner]
            )
            fits = len(octet_string) < 256**octets
            if fits and 2 + octets + len(octet_string) == size:
                length = len(octet_string).to_bytes(octets, "big")
                return bytes((0xA0, 0x80 | octets)) + length + octet_string
    raise AssertionError(f"no APDU of {size} octets")
