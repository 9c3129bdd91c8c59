"""x400-dump: called as main(argv) on real encodings, and once as the installed command."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks import samples
from client.dump import main
from p1.association import mtabind
from p1.mts.envelope import encode_mts_apdu
from p1.mts.extensions import (
    ExtensionField,
    StandardExtension,
    latest_delivery_time_extension,
    with_extension,
)
from p1.mts.fields import Criticality
from p1.mts.orname import encode_oraddress, parse_orname
from p1.mts.precedence import Precedence

SAMPLES = Path(__file__).parent.parent / "p1" / "samples"
SAMPLE = SAMPLES / "p772-message.hex"


def _hex_lines(data: bytes) -> str:
    text = data.hex()
    return "\n".join(text[i : i + 64] for i in range(0, len(text), 64)) + "\n"


def test_the_committed_sample_is_the_sample_message() -> None:
    # The example file of docs/operating.md; regenerate with _hex_lines(samples.message_bytes(300)).
    assert SAMPLE.read_text() == _hex_lines(samples.message_bytes(300))


def test_text_output_of_a_p772_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(SAMPLE)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("kind: mts-apdu (Message)\n")
    assert "originator-name: C=GB;ADMD= ;PRMD=NATO;O=ACT;OU=J6;S=Smith;G=John" in out
    assert "  precedence: flash" in out  # from P1 priority + priority-level-qualifier
    assert "primary-precedence: flash" in out  # from the P772 heading
    assert "subject: SITREP 042 NORTHERN SECTOR" in out


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wire = tmp_path / "immediate.ber"
    wire.write_bytes(samples.message_bytes(100, Precedence.IMMEDIATE))
    assert main([str(wire), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "mts-apdu"
    envelope = doc["value"]["envelope"]
    assert envelope["precedence"] == "immediate"
    assert envelope["mts-identifier"] == "[GB; ;NATO;bench-1]"
    assert "priority" not in envelope  # normal is the DEFAULT, left out as on the wire
    assert [r["recipient-name"] for r in envelope["recipients"]] == [
        "C=GB;ADMD= ;PRMD=NATO;O=JFC;OU=J3;S=Jones;G=Anne",
        "C=GB;ADMD= ;PRMD=NATO;O=JFC;OU=J3;CN=Duty Officer",
    ]
    heading = doc["value"]["content"]["heading"]
    assert heading["primary-precedence"] == "immediate"
    assert doc["value"]["content"]["body"][0]["data"] == samples.body_text(100).decode()


def test_long_bodies_are_summarised_unless_full(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wire = tmp_path / "big.ber"
    wire.write_bytes(samples.message_bytes(5000))
    assert main([str(wire), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)["value"]["content"]["body"][0]["data"]
    assert body["length"] == 5000
    assert main([str(wire), "--json", "--full"]) == 0
    body = json.loads(capsys.readouterr().out)["value"]["content"]["body"][0]["data"]
    assert body == samples.body_text(5000).decode()


def test_no_content_leaves_the_ipm_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(SAMPLE), "--json", "--no-content"]) == 0
    value = json.loads(capsys.readouterr().out)["value"]
    assert "content" in value and isinstance(value["content"], dict)
    assert "heading" not in value["content"]  # the raw octets, summarised


def test_ipm_alone_and_bind_pdus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from p1.ipms.ipm import ContentKind, encode_ipm

    ipm = tmp_path / "ipm.ber"
    ipm.write_bytes(encode_ipm(samples.p772_ipm(10), ContentKind.P772))
    assert main([str(ipm)]) == 0
    assert capsys.readouterr().out.startswith("kind: ipm (IPM)\n")

    bind = tmp_path / "bind.ber"
    argument = mtabind.MTABindArgument(initiator_name="percival", password="excalibur")
    bind.write_bytes(mtabind.wrap_bind_argument(mtabind.encode_bind_argument(argument)))
    assert main([str(bind)]) == 0
    out = capsys.readouterr().out
    assert "initiator-name: percival" in out and "password: excalibur" in out

    bind.write_bytes(
        mtabind.wrap_bind_error(
            mtabind.encode_bind_error(mtabind.MTABindError.AUTHENTICATION_ERROR)
        )
    )
    assert main([str(bind), "--as", "bind"]) == 0
    assert "authentication-error" in capsys.readouterr().out


def test_errors_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x30\x05\x02\x01")
    assert main([str(junk)]) == 1
    err = capsys.readouterr().err
    assert "not a valid PDU" in err and "as mts-apdu" in err and "as bind" in err

    truncated = tmp_path / "truncated"
    truncated.write_bytes(SAMPLE.read_text().replace("\n", "")[:200].encode())
    assert main([str(truncated), "--as", "mts-apdu"]) == 1
    assert "truncated" in capsys.readouterr().err

    assert main([str(tmp_path / "missing")]) == 2
    assert "cannot read" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main([str(SAMPLE), "--as", "nonsense"])
    assert usage.value.code == 2


def test_installed_command_reads_standard_input() -> None:
    beside = Path(sys.executable).with_name("x400-dump")
    exe = str(beside) if beside.exists() else shutil.which("x400-dump")
    if exe is None:
        pytest.fail("x400-dump is not installed: run `make install` (pip install -e .)")
    result = subprocess.run(
        [exe, "-"], input=SAMPLE.read_bytes(), capture_output=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr.decode()
    assert b"subject: SITREP 042 NORTHERN SECTOR" in result.stdout


# --- extensions by name and value ------------------------------------------------------

RETURN_ADDRESS = "C=GB;ADMD= ;PRMD=NATO;O=ACT;OU=Registry"


def _extended_message() -> bytes:
    """The sample message with typed envelope and per-recipient extensions added."""
    message = samples.message(10)
    envelope = message.envelope
    found = with_extension(
        envelope.extensions,
        latest_delivery_time_extension(datetime(2026, 11, 25, 10, tzinfo=UTC)),
    )
    for extension in (
        ExtensionField(type=StandardExtension.CONTENT_CORRELATOR, value=b"\x16\x03abc"),
        ExtensionField(
            type=StandardExtension.ORIGINATOR_RETURN_ADDRESS,
            criticality=Criticality(for_delivery=True),
            value=encode_oraddress(parse_orname(RETURN_ADDRESS)),
        ),
        ExtensionField(type=StandardExtension.PROOF_OF_DELIVERY_REQUEST, value=b"\x0a\x01\x09"),
        ExtensionField(type="1.2.3.4", value=b"\x05\x00"),
    ):
        found = with_extension(found, extension)
    first = dataclasses.replace(
        envelope.recipients[0],
        extensions=(
            ExtensionField(
                type=StandardExtension.REQUESTED_DELIVERY_METHOD, value=bytes.fromhex("3003020101")
            ),
        ),
    )
    envelope = dataclasses.replace(
        envelope, extensions=found, recipients=(first, *envelope.recipients[1:])
    )
    return encode_mts_apdu(dataclasses.replace(message, envelope=envelope))


def test_json_shows_every_extension_by_name_and_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wire = tmp_path / "extended.ber"
    wire.write_bytes(_extended_message())
    assert main([str(wire), "--json"]) == 0
    envelope = json.loads(capsys.readouterr().out)["value"]["envelope"]
    shown = {e["name"]: e for e in envelope["extensions"]}
    assert shown["priority-level-qualifier"]["value-decoded"] == "low"  # flash: urgent, low
    assert shown["latest-delivery-time"]["value-decoded"] == "2026-11-25T10:00:00+00:00"
    assert shown["content-correlator"]["value-decoded"] == {"ia5text": "abc"}
    returned = shown["originator-return-address"]
    assert returned["value-decoded"] == RETURN_ADDRESS
    assert returned["criticality"] == {"@type": "Criticality", "for-delivery": True}
    assert "value" not in returned  # the decoded value stands for the hex
    # What does not decode keeps its hex and says why.
    bad = shown["proof-of-delivery-request"]
    assert bad["value"] == "0a0109"
    assert bad["value-error"].startswith("ProofOfDeliveryRequest: ")
    assert "value-decoded" not in bad
    assert shown["1.2.3.4"]["value"] == "0500"
    assert shown["1.2.3.4"]["value-error"] == "unknown extension type"
    (method,) = envelope["recipients"][0]["extensions"]
    assert method["name"] == "requested-delivery-method"
    assert method["value-decoded"] == ["mhs-delivery"]
    assert "extensions" not in envelope["recipients"][1]


def test_text_shows_extensions_by_name_and_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wire = tmp_path / "extended.ber"
    wire.write_bytes(_extended_message())
    assert main([str(wire)]) == 0
    out = capsys.readouterr().out
    assert "name: latest-delivery-time\n" in out
    assert "value-decoded: 2026-11-25T10:00:00+00:00\n" in out
    assert f"value-decoded: {RETURN_ADDRESS}\n" in out
    assert "value-decoded:\n" in out and "ia5text: abc\n" in out
