"""How ``x400 read`` and ``x400-dump`` show body parts: text of text-like parts in any BER
form (a real product's indefinite-length, segmented IA5 text), type and size of others."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest

from benchmarks import samples
from client import x400
from client.dump import main as dump_main
from p1 import ber
from p1.ipms.ipm import (
    BinaryBodyPart,
    BodyPart,
    ContentKind,
    ForwardedMessageBodyPart,
    RawBodyPart,
    TextBodyPart,
    encode_ipm,
)
from p1.ipms.models import ACP127DataBodyPart, ADatP3BodyPart
from p1.mts.envelope import decode_mts_apdu, encode_mts_apdu

# ia5-text [0] of indefinite length: empty parameters, then the text as a constructed
# IA5String of indefinite length in one OCTET STRING segment (as a real product sent it).
REAL_PRODUCT_PART = bytes.fromhex("a080 3100 3680 0407") + b"hello\r\n" + bytes.fromhex("0000 0000")
TELETEX_PART = bytes.fromhex("a5 07 3100 3003 140161")  # teletex [5]: kept raw, shown as text
G3_PART = bytes.fromhex("a3 07 3100 3003 030100")  # g3-facsimile [3]: kept raw, not text
GENERAL_TEXT = TextBodyPart.from_text("Gr\xfc\xdfe")


def _message_bytes(*parts: bytes) -> bytes:
    """The sample P772 message with its body replaced by ``parts`` (BodyPart TLVs)."""
    message = samples.message(10)
    view, outer = ber.single(message.content, "IPM")
    heading = ber.items(view, outer, "IPM")[0]
    body = ber.tlv(ber.SEQUENCE, b"".join(parts), constructed=True)
    content = ber.tlv(ber.context(0), bytes(view[heading[1] : heading[4]]) + body, True)
    return encode_mts_apdu(dataclasses.replace(message, content=content))


def _general_text_part() -> bytes:
    """The BodyPart TLV of :data:`GENERAL_TEXT`, as our encoder writes it."""
    content = encode_ipm(
        dataclasses.replace(samples.p772_ipm(1), body=(GENERAL_TEXT,)), ContentKind.P772
    )
    view, outer = ber.single(content, "IPM")
    body = ber.items(view, outer, "IPM")[1]
    (part,) = ber.items(view, body, "Body")
    return bytes(view[part[1] : part[4]])


def test_read_shows_the_real_products_text_and_the_size_of_a_raw_part() -> None:
    out = io.StringIO()
    x400._show_apdu(decode_mts_apdu(_message_bytes(REAL_PRODUCT_PART, G3_PART)), out)
    shown = out.getvalue()
    assert shown.endswith("\nhello\r\n\n[g3-facsimile body part: 9 octets]\n")
    assert "RawBodyPart" not in shown


@pytest.mark.parametrize(
    ("part", "shown"),
    [
        (TextBodyPart(data=b"hello\r\n"), "hello\r\n"),
        (GENERAL_TEXT, "Gr\xfc\xdfe"),
        (ADatP3BodyPart(sets=(b"MSGID/X//", b"ORDER//")), "MSGID/X//\r\nORDER//"),
        (ACP127DataBodyPart(data=b"ZNR UUUUU"), "ZNR UUUUU"),
        (RawBodyPart(encoding=TELETEX_PART), "a"),
        (RawBodyPart(encoding=G3_PART), "[g3-facsimile body part: 9 octets]"),
        (BinaryBodyPart(data=b"\x00\x01\x02"), "[bilaterally-defined body part: 3 octets]"),
        (ForwardedMessageBodyPart(message=b"\x30\x00"), "[message body part: 2 octets]"),
    ],
)
def test_read_formats_each_kind_of_body_part(part: BodyPart, shown: str) -> None:
    assert x400.format_body_part(part) == shown


def test_dump_json_shows_body_part_types_and_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wire = tmp_path / "product.ber"
    wire.write_bytes(_message_bytes(REAL_PRODUCT_PART, TELETEX_PART, _general_text_part()))
    assert dump_main([str(wire), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)["value"]["content"]["body"]
    assert body[0]["@type"] == "TextBodyPart"
    assert body[0]["body-part-type"] == "ia5-text"
    assert body[0]["data"] == "hello\r\n"
    assert "encoding" not in body[0]  # the bytes received are bookkeeping, not shown
    assert body[1]["body-part-type"] == "teletex"
    assert body[1]["text"] == "a"  # (a raw part: its text read from its encoding)
    assert body[2]["body-part-type"] == "general-text"
    assert body[2]["text"] == "Gr\xfc\xdfe"  # (its data, ISO 8859-1, shows in hex)


def test_dump_text_shows_the_real_products_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wire = tmp_path / "product.ber"
    wire.write_bytes(_message_bytes(REAL_PRODUCT_PART))
    assert dump_main([str(wire)]) == 0
    out = capsys.readouterr().out
    assert "body-part-type: ia5-text" in out
    assert "data: |\n" in out and "\n        hello\n" in out


def test_read_shows_body_text_with_terminal_controls_escaped() -> None:
    part = TextBodyPart(data=b"line 1\tcol\r\nline 2\x1b[2J\x07 end")
    assert x400.format_body_part(part) == "line 1\tcol\r\nline 2\\x1b[2J\\x07 end"
