"""What a user sees of a message from a peer: ``x400 inbox`` lists its security label
(X.411 8.5.9) and P772 message type (STANAG 4406 Annex A) from the store's index, and
``x400 read`` shows the whole heading, STANAG 4406 heading extensions included, with
control characters a peer sent escaped."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from client import x400
from p1 import ber
from p1.ber import parse_lenient_utctime
from p1.ipms.ipm import IPM, ContentKind, decode_content, encode_ipm
from p1.ipms.models import MessageType, RawExtension, TypeMessage
from p1.mts.envelope import Message, decode_mts_apdu, encode_mts_apdu
from p1.mts.extensions import ExtensionField, StandardExtension
from p1.mts.fields import Criticality
from p1.mts.precedence import Precedence
from p1.mts.security_label import SecurityLabel, security_label_extension
from tests.support.sites import A, B, Lab, eventually, message_from_a, transfer_as_a

JONES_AT_B = f"{B.domain};O=HQ;S=Jones"
LABEL = SecurityLabel(policy="1.3.26.0.4406.0.5.1", classification=4, privacy_mark="NATO")
CORRELATOR = ExtensionField(type=StandardExtension.CONTENT_CORRELATOR, value=b"\x16\x05REF-7")
PRIVATE = RawExtension(type="1.2.826.0.1.4242.7", value=bytes.fromhex("0403414243"))


def marked_message(local: str, *, subject: str = "EXERCISE ORDERS") -> bytes:
    """A message from A for Jones at B: labelled (not critical, so B delivers it),
    with a content correlator, typed as an exercise, with handling instructions, copy
    precedence and one private heading extension."""
    message = decode_mts_apdu(message_from_a(local, JONES_AT_B, subject=subject))
    assert isinstance(message, Message)
    ipm = decode_content(message.content, ContentKind.P772)
    assert isinstance(ipm, IPM)
    heading = dataclasses.replace(
        ipm.heading,
        message_type=MessageType(type=TypeMessage.EXERCISE, identifier="STEADFAST 26"),
        copy_precedence=Precedence.ROUTINE,
        handling_instructions=("NO FORWARDING",),
        other_extensions=(PRIVATE,),
    )
    content = encode_ipm(dataclasses.replace(ipm, heading=heading), ContentKind.P772)
    label = security_label_extension(LABEL, Criticality())
    envelope = dataclasses.replace(
        message.envelope, extensions=(*message.envelope.extensions, label, CORRELATOR)
    )
    return encode_mts_apdu(Message(envelope=envelope, content=content))


async def delivered_to_jones(lab: Lab) -> int:
    (entry,) = await eventually(
        lambda: lab.b.inbox(JONES_AT_B), lambda found: len(found) == 1, what="Jones's at B"
    )
    return int(entry["id"])


async def test_inbox_lists_the_label_and_message_type(lab: Lab) -> None:
    await lab.start()
    await transfer_as_a(lab.b, marked_message("marked"))
    await delivered_to_jones(lab)

    code, out, err = await lab.b.x400("inbox", "--socket", str(lab.b.socket), "--user", JONES_AT_B)
    assert code == x400.EXIT_OK, err
    _header, line, subject, marks = out.splitlines()
    assert line.split()[2] == "priority"
    assert subject.strip() == "EXERCISE ORDERS"
    assert marks.strip() == f"[{LABEL.describe()}] (exercise STEADFAST 26)"


async def test_read_shows_the_heading_extensions(lab: Lab) -> None:
    await lab.start()
    await transfer_as_a(lab.b, marked_message("marked", subject="line\x1b[2Jcleared"))
    entry_id = await delivered_to_jones(lab)

    argv = ("read", str(entry_id), "--socket", str(lab.b.socket), "--user", JONES_AT_B)
    code, out, err = await lab.b.x400(*argv)
    assert code == x400.EXIT_OK, err
    lines = out.splitlines()
    assert f"security label: {LABEL.describe()}" in lines
    assert lines[lines.index("extensions:") + 1] == "  content-correlator: {ia5text: REF-7}"
    assert "subject:        line\\x1b[2Jcleared" in lines  # no escape reaches the terminal
    assert "\x1b" not in out
    heading = lines[lines.index("heading:") :]
    assert "  primary-precedence: priority" in heading
    assert "  copy-precedence: routine" in heading
    assert "  message-type: (MessageType)" in heading
    assert "    identifier: STEADFAST 26" in heading
    assert "    - NO FORWARDING" in heading
    assert "      type: 1.2.826.0.1.4242.7" in heading
    assert "      value: 0403414243" in heading
    assert out.endswith("\ntext\n")


async def test_a_heading_time_without_zone_is_delivered_and_logged_once(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="aiox400.tolerance")
    await lab.start()
    message = decode_mts_apdu(message_from_a("zoneless", JONES_AT_B))
    assert isinstance(message, Message)
    ipm = decode_content(message.content, ContentKind.P772)
    assert isinstance(ipm, IPM)
    expiry = parse_lenient_utctime("260302120000", "expiry-time", None)  # written as is
    heading = dataclasses.replace(ipm.heading, expiry_time=expiry)
    content = encode_ipm(dataclasses.replace(ipm, heading=heading), ContentKind.P772)
    await transfer_as_a(lab.b, encode_mts_apdu(dataclasses.replace(message, content=content)))
    await delivered_to_jones(lab)

    (line,) = [r.getMessage() for r in caplog.records if r.name == "aiox400.tolerance"]
    assert line == (
        f"{A.name}: [GB; ;SITEA;zoneless]: tolerated IPM.heading.expiry-time = 260302120000, "
        "read as 2026-03-02T12:00:00+00:00; kept as received"
    )


def with_long_extensions_tag(apdu: bytes) -> bytes:
    """The message ``apdu`` with its envelope's extensions ([3], a3) written with the
    tag number in the long form (bf 03), which X.690 8.1.2.2 does not allow below 31."""
    view, outer = ber.single(apdu, "apdu")
    envelope, content = ber.items(view, outer, "apdu")
    members = [bytes(view[m[1] : m[4]]) for m in ber.items(view, envelope, "envelope")]
    (at,) = [i for i, member in enumerate(members) if member[0] == 0xA3]
    members[at] = b"\xbf\x03" + members[at][1:]
    rebuilt = ber.tlv_bytes(0x31, b"".join(members)) + bytes(view[content[1] : content[4]])
    return ber.tlv_bytes(apdu[0], rebuilt)


async def test_a_long_form_tag_in_a_message_envelope_is_logged_once(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="aiox400.tolerance")
    await lab.start()
    await transfer_as_a(lab.b, with_long_extensions_tag(message_from_a("long-tag", JONES_AT_B)))
    await delivered_to_jones(lab)

    (line,) = [r.getMessage() for r in caplog.records if r.name == "aiox400.tolerance"]
    assert line == (
        f"{A.name}: [GB; ;SITEA;long-tag]: tolerated MessageTransferEnvelope.extensions tag "
        "= bf 03, read as [3] (a3); kept as received"
    )
