"""The MTA bind of a real X.400 product, decoded and re-encoded with the project's modules.

Two captures of the same product: a successful bind (then release) and a refused one; and
PP 6.0's refusal (pp/03), whose RTORJ user data leaves out the ``[18]`` wrapper.  The
layers are X.226 (presentation), X.227 (ACSE), X.228 (RTSE) and X.411 clause 12.1.1 (MTA
bind), carried as X.419 says; see tests/support/golden.py for how the bytes are reached.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p1 import asn1
from p1.association import mtabind
from p1.ber import Deviation
from tests.support import golden

SUCCESS = "x400-ping-success"
REFUSE = "x400-ping-refuse"
PP_REFUSE = "pp/03-ping-wrong-password"
ROS = "Remote-Operations-Generic-ROS-PDUs"
MTA = "MTAAbstractService"
BIND_TYPES = {
    "bind-invoke": "MTABindArgument",
    "bind-result": "MTABindResult",
    "bind-error": "MTABindError",
}

# Every presentation, ACSE and RTSE PDU of the captures, and whether re-encoding it gives
# the captured bytes.  Only the CP-type differs: the product sends it with indefinite
# lengths, we write definite ones (test_cp_type_differs_only_in_its_indefinite_lengths).
BYTE_IDENTICAL = {
    SUCCESS: [
        ("CN", "CP-type", False),
        ("CN", "ACSE-apdu", True),
        ("CN", "RTSE-apdus", True),
        ("AC", "CPA-PPDU", True),
        ("AC", "ACSE-apdu", True),
        ("AC", "RTSE-apdus", True),
        ("FN", "User-data", True),
        ("FN", "ACSE-apdu", True),
        ("DN", "User-data", True),
        ("DN", "ACSE-apdu", True),
    ],
    REFUSE: [
        ("CN", "CP-type", False),
        ("CN", "ACSE-apdu", True),
        ("CN", "RTSE-apdus", True),
        ("RF", "CPR-PPDU", True),
        ("RF", "ACSE-apdu", True),
        ("RF", "RTSE-apdus", True),
    ],
}


@pytest.fixture(scope="module", params=[SUCCESS, REFUSE])
def capture(request: pytest.FixtureRequest) -> tuple[str, list[golden.Exchange]]:
    name: str = request.param
    return name, golden.decode_capture(name)


def _exchange(exchanges: list[golden.Exchange], spdu: str) -> golden.Exchange:
    return next(e for e in exchanges if e.spdu == spdu)


def _bind(exchanges: list[golden.Exchange], spdu: str) -> bytes:
    bind = _exchange(exchanges, spdu).bind
    assert bind is not None, f"no RTSE connection data in {spdu}"
    return bind


def _tlv(tag: str, contents: bytes) -> bytes:
    """Tag, definite length (X.690 8.1.3.4 / 8.1.3.5), contents."""
    size = len(contents)
    length = bytes([size]) if size < 0x80 else bytes([0x81, size])
    return bytes.fromhex(tag) + length + contents


def test_bind_argument_names_percival(capture: tuple[str, list[golden.Exchange]]) -> None:
    name, exchanges = capture
    argument = mtabind.decode_bind_argument(mtabind.unwrap_bind_argument(_bind(exchanges, "CN")))
    assert argument.initiator_name == "percival.smhs.co.uk"
    # The refused attempt sent a one-space password: that is what it was refused for.
    assert argument.password == {SUCCESS: "excalibur", REFUSE: " "}[name]
    assert argument.strong_credentials is None
    assert argument.security_context is None


def test_bind_result_names_guinevere() -> None:
    exchanges = golden.decode_capture(SUCCESS)
    result = mtabind.decode_bind_result(mtabind.unwrap_bind_result(_bind(exchanges, "AC")))
    assert result.responder_name == "guinevere.smhs.co.uk"
    assert result.password == "merlin"


def test_refused_bind_is_authentication_error() -> None:
    exchanges = golden.decode_capture(REFUSE)
    refusal = _exchange(exchanges, "RF")
    error = mtabind.decode_bind_error(mtabind.unwrap_bind_error(_bind(exchanges, "RF")))
    assert error is mtabind.MTABindError.AUTHENTICATION_ERROR
    # The layers above say the same: AARE rejected-permanent (1), no-reason-given (1),
    # RTORJ with user data only (normal mode).
    _, aare = refusal.pdu("ACSE-apdu").value
    assert aare["result"] == 1
    assert aare["result-source-diagnostic"] == ("service-user", 1)
    kind, rtorj = refusal.pdu("RTSE-apdus").value
    assert kind == "rtorj-apdu"
    assert set(rtorj) == {"userDataRJ"}


def test_pps_bare_integer_refusal_is_authentication_error() -> None:
    """PP 6.0 refuses a wrong password with RTORJ { userDataRJ [1] INTEGER 2 }: X.411's
    authentication-error, without the X.410 BIND-macro tag [18]; read, and listed."""
    exchanges = golden.decode_capture(PP_REFUSE)
    user_data = _bind(exchanges, "RF")
    assert user_data.hex() == "020102"
    deviations: list[Deviation] = []
    error = mtabind.decode_bind_error(mtabind.unwrap_bind_error(user_data, deviations))
    assert error is mtabind.MTABindError.AUTHENTICATION_ERROR
    read_as = "MTABindError authentication-error"
    assert deviations == [Deviation("RTORJapdu.userDataRJ", "02 01 02", read_as)]
    # The layers above are as the standards have them: AARE rejected-permanent (1),
    # service-user no-reason-given (1), an RTORJ with user data only (normal mode).
    refusal = _exchange(exchanges, "RF")
    _, aare = refusal.pdu("ACSE-apdu").value
    assert (aare["result"], aare["result-source-diagnostic"]) == (1, ("service-user", 1))
    assert refusal.pdu("RTSE-apdus").value == ("rtorj-apdu", {"userDataRJ": user_data})


def test_bind_values_decode_with_the_mta_module(
    capture: tuple[str, list[golden.Exchange]],
) -> None:
    """The X.410 BIND-macro wrapper is ROS Bind{} (X.880); inside, the X.411 types."""
    _, exchanges = capture
    binds = [e.bind for e in exchanges if e.bind is not None]
    assert len(binds) == 2  # request and reply
    for bind in binds:
        kind, inner = asn1.decode(ROS, "Bind", bind)
        value = asn1.decode(MTA, BIND_TYPES[kind], inner)
        assert asn1.encode(MTA, BIND_TYPES[kind], value) == inner
        assert asn1.encode(ROS, "Bind", (kind, inner)) == bind


def test_association_and_contexts() -> None:
    exchanges = golden.decode_capture(SUCCESS)
    connect = _exchange(exchanges, "CN")
    normal = connect.pdu("CP-type").value["normal-mode-parameters"]
    contexts = {
        c["presentation-context-identifier"]: (
            c["abstract-syntax-name"],
            c["transfer-syntax-name-list"],
        )
        for c in normal["presentation-context-definition-list"]
    }
    assert contexts == {
        1: ("2.2.1.0.1", ["2.1.1"]),
        3: ("2.6.0.2.12", ["2.1.1"]),
        5: ("2.6.0.2.7", ["2.1.1"]),
    }
    kind, aarq = connect.pdu("ACSE-apdu").value
    assert (kind, aarq["aSO-context-name"]) == ("aarq", "2.6.0.1.6")
    external = aarq["user-information"][0]
    assert (external["direct-reference"], external["indirect-reference"]) == ("2.1.1", 3)
    kind, rtorq = connect.pdu("RTSE-apdus").value
    assert kind == "rtorq-apdu"
    # checkpointSize 63 (x 1024 octets), windowSize default 3, dialogueMode sent as 0.
    assert (rtorq["checkpointSize"], rtorq["windowSize"], rtorq["dialogueMode"]) == (63, 3, 0)
    accept = _exchange(exchanges, "AC")
    kind, rtoac = accept.pdu("RTSE-apdus").value
    assert (kind, rtoac["checkpointSize"], rtoac["windowSize"]) == ("rtoac-apdu", 63, 3)


def test_release_is_rlrq_rlre_normal() -> None:
    exchanges = golden.decode_capture(SUCCESS)
    assert _exchange(exchanges, "FN").pdu("ACSE-apdu").data.hex() == "6203800100"
    assert _exchange(exchanges, "DN").pdu("ACSE-apdu").data.hex() == "6303800100"


def test_every_pdu_decodes_and_re_encodes(capture: tuple[str, list[golden.Exchange]]) -> None:
    name, exchanges = capture
    seen = []
    for exchange in exchanges:
        for pdu in exchange.pdus:
            encoded = asn1.encode(pdu.module, pdu.type_name, pdu.value)
            assert asn1.decode(pdu.module, pdu.type_name, encoded) == pdu.value
            seen.append((exchange.spdu, pdu.type_name, encoded == pdu.data))
    assert seen == BYTE_IDENTICAL[name]


def test_cp_type_differs_only_in_its_indefinite_lengths(
    capture: tuple[str, list[golden.Exchange]],
) -> None:
    """The CP's SET has an indefinite length in both captures, its normal-mode-parameters
    [2] in the successful one; with those lengths made definite the bytes are ours."""
    name, exchanges = capture
    cp = _exchange(exchanges, "CN").pdu("CP-type")
    assert cp.data[:2] == b"\x31\x80" and cp.data[-2:] == b"\0\0"
    body = cp.data[2:-2]
    mode_selector, normal = body[:5], body[5:]
    assert mode_selector.hex() == "a003800101"  # normal-mode
    if name == SUCCESS:
        assert normal[:2] == b"\xa2\x80" and normal[-2:] == b"\0\0"
        normal = _tlv("a2", normal[2:-2])
    assert asn1.encode(cp.module, cp.type_name, cp.value) == _tlv("31", mode_selector + normal)


def test_session_parameters_of_the_connect() -> None:
    """X.225: the CN offers half-duplex, minor-sync, activity and exceptions (0x0249)."""
    tsdu = golden.tsdus(golden.load_tpkts(SUCCESS))[0]
    assert tsdu.from_initiator
    (spdu,) = golden.spdus(tsdu.data)
    assert spdu.name == "CN"
    parameters = dict(spdu.parameters)
    assert parameters[20] == b"\x02\x49"  # session user requirements
    assert spdu.user_data[:2] == b"\x31\x80"  # the CP-type, indefinite length


def test_refuse_carries_the_cpr_in_its_reason_code() -> None:
    """X.225: RF reason code 2 (rejected by the called SS-user), then the user data."""
    tsdu = golden.tsdus(golden.load_tpkts(REFUSE))[1]
    assert not tsdu.from_initiator
    (spdu,) = golden.spdus(tsdu.data)
    assert spdu.name == "RF"
    assert dict(spdu.parameters)[golden.PI_REASON_CODE][:1] == b"\x02"
    assert spdu.user_data[:2] == b"\x30\x52"  # CPR-PPDU normal-mode-parameters


def test_session_helper_reads_gt_then_dt_and_long_lengths() -> None:
    """X.225 clause 8: after a GT, a DT's user information is the rest of the TSDU;
    a length of 255 or more is 0xFF and two octets."""
    user_data = bytes(300)
    (gt, dt) = golden.spdus(b"\x01\x00\x01\x00" + user_data)
    assert (gt.name, gt.user_data, dt.name, dt.user_data) == ("GT", b"", "DT", user_data)
    finish = b"\x09\xff\x01\x30" + b"\xc1\xff\x01\x2c" + user_data
    (fn,) = golden.spdus(finish)
    assert (fn.name, fn.user_data) == ("FN", user_data)


def test_missing_captures_skip_with_a_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AIOX400_SHARED", str(tmp_path))
    monkeypatch.delenv("AIOX400_REQUIRE_SHARED", raising=False)
    with pytest.raises(pytest.skip.Exception, match="AIOX400_SHARED"):
        golden.load_tpkts(SUCCESS)


def test_missing_captures_fail_when_required(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # CI sets AIOX400_REQUIRE_SHARED: a missing reference is a failure, not a skip.
    monkeypatch.setenv("AIOX400_SHARED", str(tmp_path))
    monkeypatch.setenv("AIOX400_REQUIRE_SHARED", "1")
    with pytest.raises(pytest.fail.Exception, match="not found"):
        golden.load_tpkts(SUCCESS)
