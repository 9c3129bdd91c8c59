"""Down-grading for PP 6.0's X.410-1984 channel, judged on the live3 captures.

``pcaps/pp/live3/42`` holds our P2 message (``x400 send --p2``) sent to PP's 1984 channel
with content type 22, which PP refused ("Bad content type 22 aborting"); ``41`` holds
PP's own 1984 P2 messages (content type 2) and a probe.  Our down-grade of the first must
be what PP writes itself: content type 2 in the same encoding, its content untouched, no
envelope member PP's own 1984 messages lack; and PP's 1984 APDUs are 1984 already.
"""

from __future__ import annotations

from p1 import ber
from p1.ipms.ipm import IPM, ContentKind, TextBodyPart, decode_content
from p1.mts.downgrade import Downgraded, downgrade_to_1984
from p1.mts.envelope import Message, Probe, decode_mts_apdu, message_content
from tests.support.golden import x410_transferred_apdus

OURS = "pp/live3/42-84-aiox-to-pp-p772-and-p2"
PPS = "pp/live3/41-84-pp-to-aiox"
PP_PORT, OUR_PORT = 20001, 5400
CONTENT_TYPE_2 = bytes.fromhex("460102")  # [APPLICATION 6] INTEGER 2


def envelope_members(apdu: bytes) -> list[ber.Tlv]:
    """The members of a message's envelope SET, as encoded."""
    envelope, _ = ber.children(ber.read_single(apdu, "Message"), "Message")
    return ber.children(envelope, "MessageEnvelope")


def our_p2_message() -> bytes:
    first, *again = x410_transferred_apdus(OURS, port=PP_PORT)  # (retried: the same APDU)
    assert all(apdu == first for apdu in again)
    return first


def pps_messages() -> list[bytes]:
    apdus = x410_transferred_apdus(PPS, port=OUR_PORT)
    return [apdu for apdu in apdus if isinstance(decode_mts_apdu(apdu), Message)]


def test_our_p2_message_is_downgraded_to_content_type_2_as_pp_writes_it() -> None:
    sent = our_p2_message()
    assert decode_mts_apdu(sent).envelope.content_type == 22  # type: ignore[union-attr]
    result = downgrade_to_1984(sent)
    assert isinstance(result, Downgraded)
    ours = [member.raw() for member in envelope_members(result.apdu)]
    assert CONTENT_TYPE_2 in ours
    for pp in pps_messages():
        assert CONTENT_TYPE_2 in [member.raw() for member in envelope_members(pp)]
        pp_tags = {member.tag for member in envelope_members(pp)}
        assert {member.tag for member in envelope_members(result.apdu)} <= pp_tags
    # Only the content type changed: the content octets, and every other member, as sent.
    assert message_content(result.apdu) == message_content(sent)
    before = [member.raw() for member in envelope_members(sent)]
    assert [raw for raw in before if raw != bytes.fromhex("460116")] == [
        raw for raw in ours if raw != CONTENT_TYPE_2
    ]


def test_the_downgraded_content_reads_as_1984_p2_as_it_read_as_22() -> None:
    sent = our_p2_message()
    result = downgrade_to_1984(sent)
    assert isinstance(result, Downgraded)
    message = decode_mts_apdu(result.apdu)
    assert isinstance(message, Message)
    ipm = decode_content(message.content, message.envelope.content_type)
    assert ipm == decode_content(message_content(sent), 22)
    assert isinstance(ipm, IPM)
    assert ipm.heading.subject == "AIOX84 to unknown"


def test_pps_own_1984_apdus_are_1984_already() -> None:
    apdus = x410_transferred_apdus(PPS, port=OUR_PORT)
    assert len(apdus) == 3
    assert isinstance(decode_mts_apdu(apdus[0]), Probe)
    for apdu in apdus:
        assert downgrade_to_1984(apdu) == Downgraded(apdu=apdu)


def test_pps_1984_p2_message_reads_with_its_subject_and_body() -> None:
    read = []
    for apdu in pps_messages():
        message = decode_mts_apdu(apdu)
        assert isinstance(message, Message)
        assert message.envelope.content_type == 2
        ipm = decode_content(message.content, message.envelope.content_type)
        assert isinstance(ipm, IPM)
        (part,) = ipm.body
        assert isinstance(part, TextBodyPart)
        read.append((ipm.heading.subject, part.data))
    assert read == [
        ("PP84 urgent with DR", b"Hello alice, from PP 6.0 in X.410-1984 mode (x400out84).\r\n"),
        ("PP84 to unknown", b"Should be non-delivered by aiox.\r\n"),
    ]
    assert ContentKind(2) is ContentKind.P2_1984
