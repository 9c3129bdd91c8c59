"""How ``x400 read`` and ``x400-dump`` show the envelope's message-security-label
(X.411 clause 8.5.9, standard-extension 20): typed when it decodes, type and hex with
the reason when it does not; other extensions stay type and hex."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest

from benchmarks import samples
from client import x400
from client.dump import main as dump_main
from p1.mts.envelope import Probe, decode_mts_apdu, encode_mts_apdu
from p1.mts.extensions import ExtensionField, StandardExtension, with_extension
from p1.mts.security_label import (
    SecurityCategory,
    SecurityClassification,
    SecurityLabel,
    security_label_extension,
)

LABEL = SecurityLabel(
    policy="1.3.26.0.4406.0.5.1",
    classification=SecurityClassification.SECRET,
    privacy_mark="NATO",
    categories=(SecurityCategory("2.16.840.1.101.2.1.8.3.1", bytes.fromhex("020105")),),
)
LABEL_TEXT = (
    "SECRET; policy 1.3.26.0.4406.0.5.1; privacy mark 'NATO'; "
    "categories: 2.16.840.1.101.2.1.8.3.1 = 020105"
)
BAD_LABEL = ExtensionField(
    type=StandardExtension.MESSAGE_SECURITY_LABEL, value=bytes.fromhex("3103130121")
)
PRIVATE = ExtensionField(type="1.2.3.4", value=bytes.fromhex("0401ff"))


def _message_bytes(*extensions: ExtensionField) -> bytes:
    """The sample P772 message with ``extensions`` added to its envelope."""
    message = samples.message(10)
    found = message.envelope.extensions
    for extension in extensions:
        found = with_extension(found, extension)
    envelope = dataclasses.replace(message.envelope, extensions=found)
    return encode_mts_apdu(dataclasses.replace(message, envelope=envelope))


def _envelope_extensions(doc: dict[str, object]) -> list[dict[str, object]]:
    value = doc["value"]
    assert isinstance(value, dict)
    extensions = value["envelope"]["extensions"]
    assert isinstance(extensions, list)
    return extensions


def _dump_json(
    data: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> list[dict[str, object]]:
    wire = tmp_path / "labelled.ber"
    wire.write_bytes(data)
    assert dump_main([str(wire), "--json"]) == 0
    return _envelope_extensions(json.loads(capsys.readouterr().out))


def _by_type(extensions: list[dict[str, object]], ext_type: str) -> dict[str, object]:
    (found,) = [e for e in extensions if e["type"] == ext_type]
    return found


# --- x400-dump --------------------------------------------------------------------------


def test_dump_json_shows_the_label_typed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _message_bytes(security_label_extension(LABEL), PRIVATE)
    extensions = _dump_json(data, tmp_path, capsys)
    shown = _by_type(extensions, "message-security-label")
    assert "value" not in shown  # the typed label stands for the hex
    assert shown["criticality"] == {"@type": "Criticality", "for-delivery": True}
    assert shown["security-label"] == {
        "@type": "SecurityLabel",
        "classification": "secret",
        "classification-value": 4,
        "policy": "1.3.26.0.4406.0.5.1",
        "privacy-mark": "NATO",
        "categories": [{"type": "2.16.840.1.101.2.1.8.3.1", "value": "020105"}],
        "text": LABEL_TEXT,
    }
    private = _by_type(extensions, "1.2.3.4")
    assert private["value"] == "0401ff"  # unknown extensions: type and hex, as before
    assert "security-label" not in private


def test_dump_text_shows_the_classification_and_privacy_mark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wire = tmp_path / "labelled.ber"
    wire.write_bytes(_message_bytes(security_label_extension(LABEL)))
    assert dump_main([str(wire)]) == 0
    out = capsys.readouterr().out
    assert "security-label: (SecurityLabel)\n" in out
    assert "classification: secret\n" in out
    assert "privacy-mark: NATO\n" in out
    assert f"text: {LABEL_TEXT}\n" in out


def test_dump_shows_an_undecodable_label_as_hex_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extensions = _dump_json(_message_bytes(BAD_LABEL), tmp_path, capsys)
    shown = _by_type(extensions, "message-security-label")
    assert shown["value"] == "3103130121"
    assert shown["security-label-error"] == (
        "message-security-label.privacy-mark: '!' at 0 is not a PrintableString character"
    )
    assert "security-label" not in shown


def test_dump_text_of_an_undecodable_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wire = tmp_path / "bad.ber"
    wire.write_bytes(_message_bytes(BAD_LABEL))
    assert dump_main([str(wire)]) == 0  # the message still decodes
    out = capsys.readouterr().out
    assert "value: 3103130121\n" in out
    assert "security-label-error: message-security-label.privacy-mark: " in out


# --- x400 read --------------------------------------------------------------------------


def test_read_shows_the_label_under_the_originator() -> None:
    out = io.StringIO()
    x400._show_apdu(decode_mts_apdu(_message_bytes(security_label_extension(LABEL))), out)
    lines = out.getvalue().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("originator:"))
    assert lines[at + 1] == f"security label: {LABEL_TEXT}"


def test_read_shows_no_label_line_without_one() -> None:
    out = io.StringIO()
    x400._show_apdu(decode_mts_apdu(_message_bytes(PRIVATE)), out)
    assert "security label" not in out.getvalue()


@pytest.mark.parametrize(
    ("extensions", "shown"),
    [
        ((), None),
        ((PRIVATE,), None),
        ((security_label_extension(SecurityLabel(classification=2)),), "RESTRICTED"),
        (
            (PRIVATE, security_label_extension(SecurityLabel(privacy_mark="IN CONFIDENCE"))),
            "privacy mark 'IN CONFIDENCE'",
        ),
        (
            (BAD_LABEL,),
            "message-security-label 3103130121 (does not decode: message-security-label."
            "privacy-mark: '!' at 0 is not a PrintableString character)",
        ),
        (
            (ExtensionField(type=StandardExtension.MESSAGE_SECURITY_LABEL),),
            "message-security-label - (does not decode: message-security-label: "
            "the extension has no value)",
        ),
    ],
)
def test_read_formats_the_label(extensions: tuple[ExtensionField, ...], shown: str | None) -> None:
    assert x400.format_security_label(extensions) == shown


def test_dump_shows_a_probes_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    envelope = samples.message(10).envelope
    probe = Probe(
        probe_identifier=envelope.mts_identifier,
        originator_name=envelope.originator_name,
        content_type=envelope.content_type,
        trace_information=envelope.trace_information,
        extensions=(security_label_extension(SecurityLabel(classification=3)),),
        recipients=envelope.recipients,
    )
    wire = tmp_path / "probe.ber"
    wire.write_bytes(encode_mts_apdu(probe))
    assert dump_main([str(wire), "--json"]) == 0
    (shown,) = json.loads(capsys.readouterr().out)["value"]["extensions"]
    assert shown["security-label"]["classification"] == "confidential"
