"""Golden PDUs from captures of a real X.400 product (test helper, not a test module).

``shared/reference/pcaps/<capture>.tpkts.jsonl`` holds one JSON object per TPKT (RFC 1006)
with its bytes as ``hex``.  This module undoes the lower layers just far enough to reach the
BER: the TPKT header, the transport DT header (X.224 class 0, fragments joined at EOT), and
the session SPDUs (X.225 clause 8), parsed minimally to find their user data.  It then
decodes, with the project's ASN.1 modules, the presentation PPDU (X.226), the ACSE APDU in
the presentation context of ACSE (X.227), the RTSE APDU (X.228) in the ACSE user information
or in the RTSE context, and keeps the RTSE connection data: the MTA-BIND value with its
``[16]`` / ``[17]`` / ``[18]`` tag (X.419).

The captures live beside the checkout (``<checkout>/../shared``), or wherever
``$AIOX400_SHARED`` points; :func:`load_tpkts` skips the calling test when they are absent.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from p1 import asn1
from p1.association.connection import BindRequested, P1Association, TransferReceived
from p1.association.mtabind import MTABindResult
from p1.osi import Role

CAPTURES = ("x400-ping-success", "x400-ping-refuse")

ACSE_CONTEXT = 1  # presentation context id of ACSE (2.2.1.0.1) in these captures
RTSE_CONTEXT = 3  # id-as-mta-rtse (2.6.0.2.12)

TPKT_HEADER = 4
COTP_DT = 0xF0
COTP_EOT = 0x80

# Session (X.225 clause 8): SPDU identifiers and the parameters that carry user data.
SPDU_NAMES = {0x0D: "CN", 0x0E: "AC", 0x0C: "RF", 0x09: "FN", 0x0A: "DN", 0x19: "AB", 0x01: "DT"}
# Category 0 (GT, PT) comes first in a TSDU, concatenated with a category 2 SPDU.
CATEGORY_0 = {0x01: "GT", 0x02: "PT"}
DT = 0x01
PI_REASON_CODE = 50  # RF: reason code octet, then the user data
PGI_USER_DATA = 193
PGI_EXTENDED_USER_DATA = 194
RF_USER_REJECT = 2  # reason "rejection by the called SS-user": user data follows

# The presentation PPDU carried by each SPDU (X.226).
PRESENTATION_TYPE = {
    "CN": "CP-type",
    "AC": "CPA-PPDU",
    "RF": "CPR-PPDU",
    "AB": "Abort-type",
    "FN": "User-data",
    "DN": "User-data",
    "DT": "User-data",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Tsdu:
    """One TSDU: the data of one or more DT TPDUs, up to the one marked EOT."""

    frames: tuple[int, ...]
    from_initiator: bool
    data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Spdu:
    """One session SPDU: its identifier, its parameters and its user data."""

    si: int
    name: str
    parameters: tuple[tuple[int, bytes], ...]
    user_data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Pdu:
    """A decoded BER PDU next to the bytes it was decoded from."""

    module: str
    type_name: str
    data: bytes
    value: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Exchange:
    """The presentation, ACSE and RTSE PDUs of one SPDU, outermost first."""

    frames: tuple[int, ...]
    from_initiator: bool
    spdu: str
    pdus: tuple[Pdu, ...]
    bind: bytes | None  # the RTSE connection data: the tagged MTA-BIND value

    def pdu(self, type_name: str) -> Pdu:
        return next(p for p in self.pdus if p.type_name == type_name)


# --- files ----------------------------------------------------------------------------


def pcaps_dir() -> Path:
    """``<shared>/reference/pcaps``; ``<shared>`` is ``$AIOX400_SHARED`` or beside the checkout."""
    shared = os.environ.get("AIOX400_SHARED")
    base = Path(shared) if shared else Path(__file__).resolve().parents[3] / "shared"
    return base / "reference" / "pcaps"


def load_tpkts(capture: str) -> list[dict[str, Any]]:
    """The TPKT records of ``capture``; skips the calling test when the file is absent."""
    path = pcaps_dir() / f"{capture}.tpkts.jsonl"
    if not path.is_file():
        why = f"golden capture {path} not found (set AIOX400_SHARED to the shared folder)"
        if os.environ.get("AIOX400_REQUIRE_SHARED"):
            pytest.fail(why)  # CI must run the golden tests, never skip them
        pytest.skip(why)
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def transferred_apdus(capture: str) -> list[bytes]:
    """The MTS-APDUs the initiator of ``capture`` transferred, read by a sans-I/O responder
    association of ours that accepts every bind."""
    records = load_tpkts(capture)
    initiator = records[0]["src_port"]
    association = P1Association(Role.RESPONDER)
    apdus = []
    for record in records:
        if record["src_port"] != initiator:
            continue
        for event in association.receive_data(bytes.fromhex(record["hex"])):
            if isinstance(event, BindRequested):
                association.accept_bind(MTABindResult(responder_name="responder", password=""))
            elif isinstance(event, TransferReceived):
                apdus.append(event.apdu)
    return apdus


# --- transport ------------------------------------------------------------------------


def tsdus(records: list[dict[str, Any]]) -> list[Tsdu]:
    """Join the DT TPDUs of each direction into TSDUs (RFC 1006 + X.224 class 0)."""
    initiator_port = next(r["src_port"] for r in records if r.get("cotp") == "CR")
    pending: dict[bool, tuple[list[int], bytearray]] = {}
    result = []
    for record in records:
        tpkt = bytes.fromhex(record["hex"])
        assert tpkt[:2] == b"\x03\x00" and int.from_bytes(tpkt[2:4], "big") == len(tpkt)
        tpdu = tpkt[TPKT_HEADER:]
        if tpdu[1] != COTP_DT:
            continue  # CR, CC: no user data
        forward = record["src_port"] == initiator_port
        frames, data = pending.setdefault(forward, ([], bytearray()))
        frames.append(record["frame_first"])
        data += tpdu[tpdu[0] + 1 :]  # LI counts the header octets after itself
        if tpdu[2] & COTP_EOT:
            result.append(Tsdu(frames=tuple(frames), from_initiator=forward, data=bytes(data)))
            del pending[forward]
    return result


# --- session --------------------------------------------------------------------------


def _length(data: bytes, offset: int) -> tuple[int, int]:
    """An X.225 length: one octet, or 0xFF and two octets (X.225 clause 8)."""
    if data[offset] == 0xFF:
        return int.from_bytes(data[offset + 1 : offset + 3], "big"), offset + 3
    return data[offset], offset + 1


def _parameters(data: bytes) -> Iterator[tuple[int, bytes]]:
    offset = 0
    while offset < len(data):
        code = data[offset]
        length, offset = _length(data, offset + 1)
        yield code, data[offset : offset + length]
        offset += length


def _one_spdu(data: bytes, offset: int) -> tuple[Spdu, int]:
    si = data[offset]
    length, start = _length(data, offset + 1)
    end = start + length
    parameters = tuple(_parameters(data[start:end]))
    found = dict(parameters)
    user_data = found.get(PGI_USER_DATA, found.get(PGI_EXTENDED_USER_DATA, b""))
    reason = found.get(PI_REASON_CODE, b"")
    if reason[:1] == bytes([RF_USER_REJECT]):
        user_data = reason[1:]
    name = SPDU_NAMES.get(si, f"SI {si:#04x}")
    return Spdu(si=si, name=name, parameters=parameters, user_data=user_data), end


def spdus(tsdu: bytes) -> list[Spdu]:
    """The SPDUs of one TSDU.  After a GT or PT, a DT's user information is the rest."""
    first, offset = _one_spdu(tsdu, 0)
    if first.si not in CATEGORY_0 or offset == len(tsdu):
        return [first]
    second, end = _one_spdu(tsdu, offset)
    if second.si == DT:
        second = replace(second, user_data=tsdu[end:])
    return [replace(first, name=CATEGORY_0[first.si]), second]


# --- presentation, ACSE, RTSE ---------------------------------------------------------


def _decoded(module: str, type_name: str, data: bytes) -> Pdu:
    return Pdu(
        module=module, type_name=type_name, data=data, value=asn1.decode(module, type_name, data)
    )


def _normal_mode_user_data(value: dict[str, Any]) -> Any:
    return value.get("normal-mode-parameters", {}).get("user-data")


def _choice_user_data(value: tuple[str, Any]) -> Any:
    kind, parameters = value
    return parameters.get("user-data") if kind == "normal-mode-parameters" else None


# Where each PPDU keeps its User-data (X.226); None where it has none.
_USER_DATA: dict[str, Callable[[Any], Any]] = {
    "CP-type": _normal_mode_user_data,
    "CPA-PPDU": _normal_mode_user_data,
    "CPR-PPDU": _choice_user_data,
    "Abort-type": lambda v: _choice_user_data(v[1]) if v[0] == "aru-ppdu" else None,
    "User-data": lambda v: v,
}


def _pdv(user_data: Any, context: int) -> bytes | None:
    if not user_data or user_data[0] != "fully-encoded-data":
        return None
    for pdv in user_data[1]:
        values = pdv["presentation-data-values"]
        if pdv["presentation-context-identifier"] == context and values[0] == "single-ASN1-type":
            return bytes(values[1])
    return None


def _rtse_in_acse(acse: Pdu) -> bytes | None:
    """The RTSE APDU in the first EXTERNAL of the AARQ / AARE / ABRT user information."""
    kind, apdu = acse.value
    externals = apdu.get("user-information", []) if kind in ("aarq", "aare", "abrt") else []
    for external in externals:
        if external["encoding"][0] == "single-ASN1-type":
            return bytes(external["encoding"][1])
    return None


_CONNECTION_DATA = {"rtorq-apdu": "connectionDataRQ", "rtoac-apdu": "connectionDataAC"}


def _bind_value(rtse: Pdu) -> bytes | None:
    """The RTSE connection data (X.228): RTORQ / RTOAC ``open``, RTORJ user data."""
    kind, apdu = rtse.value
    if kind == "rtorj-apdu":
        refused = apdu.get("userDataRJ")
        return None if refused is None else bytes(refused)
    if kind not in _CONNECTION_DATA:
        return None
    choice, data = apdu[_CONNECTION_DATA[kind]]
    return bytes(data) if choice == "open" else None


def exchanges(tsdu: Tsdu) -> Iterator[Exchange]:
    """Decode the presentation, ACSE and RTSE PDUs of each SPDU in ``tsdu``."""
    for spdu in spdus(tsdu.data):
        type_name = PRESENTATION_TYPE.get(spdu.name)
        if type_name is None or not spdu.user_data:
            continue
        pdus = [_decoded("ISO8823-PRESENTATION", type_name, spdu.user_data)]
        user_data = _USER_DATA[type_name](pdus[0].value)
        acse_bytes = _pdv(user_data, ACSE_CONTEXT)
        rtse_bytes = _pdv(user_data, RTSE_CONTEXT)
        if acse_bytes is not None:
            pdus.append(_decoded("ACSE-1", "ACSE-apdu", acse_bytes))
            rtse_bytes = _rtse_in_acse(pdus[-1])
        bind = None
        if rtse_bytes is not None:
            pdus.append(_decoded("Reliable-Transfer-APDU", "RTSE-apdus", rtse_bytes))
            bind = _bind_value(pdus[-1])
        yield Exchange(
            frames=tsdu.frames,
            from_initiator=tsdu.from_initiator,
            spdu=spdu.name,
            pdus=tuple(pdus),
            bind=bind,
        )


def decode_capture(capture: str) -> list[Exchange]:
    """Every presentation-bearing SPDU of ``capture``, decoded (skips if the file is absent)."""
    return [e for tsdu in tsdus(load_tpkts(capture)) for e in exchanges(tsdu)]


def x410_transferred_apdus(capture: str, *, port: int) -> list[bytes]:
    """The MTS-APDUs transferred in X.410-1984 mode to ``port`` in ``capture``, read by a
    sans-I/O responder association of ours per connection (one per CR) that accepts
    every bind and confirms every transfer."""
    from p1.association.x410 import X410Association

    association = X410Association(Role.RESPONDER)
    apdus = []
    for record in load_tpkts(capture):
        if record["dst_port"] != port:
            continue
        if record.get("cotp") == "CR":
            association = X410Association(Role.RESPONDER)
        for event in association.receive_data(bytes.fromhex(record["hex"])):
            if isinstance(event, BindRequested):
                association.accept_bind(MTABindResult(responder_name="responder", password=""))
            elif isinstance(event, TransferReceived):
                apdus.append(event.apdu)
                association.confirm_transfer(event.transfer_id)
    return apdus
