"""MTA bind values (X.411 clause 12.1.1) and their X.410 BIND-macro wrappers."""

from __future__ import annotations

import contextlib
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p1 import asn1, ber
from p1.association.mtabind import (
    MTABindArgument,
    MTABindError,
    MTABindResult,
    decode_bind_argument,
    decode_bind_error,
    decode_bind_result,
    encode_bind_argument,
    encode_bind_error,
    encode_bind_result,
    unwrap_bind_argument,
    unwrap_bind_error,
    unwrap_bind_result,
    wrap_bind_argument,
    wrap_bind_error,
    wrap_bind_result,
)
from p1.ber import Deviation
from p1.errors import DecodeError, EncodeError
from tests.p1 import ber_forms
from tests.profiles import examples

# StrongCredentials { bind-token [0] Token { [0] 1.2.3.4, [1] INTEGER 5 } }, as a SET
STRONG = bytes.fromhex("310ca00a80032a0304a103020105")
# SecurityContext: SET OF SecurityLabel { classification confidential(3), policy 1.2.3 }
CONTEXT = bytes.fromhex("3109310702010306022a03")

ARGUMENTS = [
    (MTABindArgument(), "0500"),
    (
        MTABindArgument(initiator_name="MTA1", password="secret"),
        "a11080044d544131a1081606736563726574",
    ),
    (MTABindArgument(initiator_name="MTA1", password=b"\x00\xff"), "a10c80044d544131a104040200ff"),
    (MTABindArgument(initiator_name="MTA1", password=""), "a10a80044d544131a1021600"),
    (
        MTABindArgument(initiator_name="MTA1", strong_credentials=STRONG),
        "a11680044d544131a10ea00ca00a80032a0304a103020105",
    ),
    (
        MTABindArgument(initiator_name="MTA1", password="secret", security_context=CONTEXT),
        "a11b80044d544131a1081606736563726574a209310702010306022a03",
    ),
]
RESULTS = [
    (MTABindResult(), "0500"),
    (
        MTABindResult(responder_name="MTA2", password="secret"),
        "a11080044d544132a1081606736563726574",
    ),
    (
        MTABindResult(responder_name="MTA2", strong_credentials=STRONG),
        "a11680044d544132a10ea00ca00a80032a0304a103020105",
    ),
]


@pytest.mark.parametrize(("argument", "hex_"), ARGUMENTS)
def test_bind_argument_bytes(argument: MTABindArgument, hex_: str) -> None:
    assert encode_bind_argument(argument).hex() == hex_
    assert decode_bind_argument(bytes.fromhex(hex_)) == argument


@pytest.mark.parametrize(("result", "hex_"), RESULTS)
def test_bind_result_bytes(result: MTABindResult, hex_: str) -> None:
    assert encode_bind_result(result).hex() == hex_
    assert decode_bind_result(bytes.fromhex(hex_)) == result


def test_the_documented_example() -> None:
    argument = decode_bind_argument(bytes.fromhex("a11080044d544131a1081606736563726574"))
    assert argument == MTABindArgument(initiator_name="MTA1", password="secret")
    assert argument.authenticated
    assert not MTABindArgument().authenticated


def test_a_real_peers_bind_through_the_wrappers() -> None:
    # reference/pcaps/x400-ping-success.pcap: RTORQ open [0] value and RTOAC [0] value
    rtorq_open = bytes.fromhex(
        "b024a1228013706572636976616c2e736d68732e636f2e756ba10b1609657863616c69627572"
    )
    rtoac_open = bytes.fromhex(
        "b122a12080146775696e65766572652e736d68732e636f2e756ba10816066d65726c696e"
    )
    argument = decode_bind_argument(unwrap_bind_argument(rtorq_open))
    result = decode_bind_result(unwrap_bind_result(rtoac_open))
    assert argument == MTABindArgument(initiator_name="percival.smhs.co.uk", password="excalibur")
    assert result == MTABindResult(responder_name="guinevere.smhs.co.uk", password="merlin")
    assert wrap_bind_argument(encode_bind_argument(argument)) == rtorq_open
    assert wrap_bind_result(encode_bind_result(result)) == rtoac_open


@pytest.mark.parametrize(
    ("error", "hex_"),
    [
        (MTABindError.BUSY, "020100"),
        (MTABindError.AUTHENTICATION_ERROR, "020102"),
        (MTABindError.UNACCEPTABLE_DIALOGUE_MODE, "020103"),
        (MTABindError.UNACCEPTABLE_SECURITY_CONTEXT, "020104"),
        (MTABindError.INADEQUATE_ASSOCIATION_CONFIDENTIALITY, "020105"),
    ],
)
def test_bind_error_bytes(error: MTABindError, hex_: str) -> None:
    assert encode_bind_error(error).hex() == hex_
    assert decode_bind_error(bytes.fromhex(hex_)) is error
    assert wrap_bind_error(bytes.fromhex(hex_)).hex() == "b203" + hex_
    assert unwrap_bind_error(bytes.fromhex("b203" + hex_)).hex() == hex_


def test_unknown_bind_error_codes() -> None:
    with pytest.raises(DecodeError, match="unknown MTA-bind error 1"):
        decode_bind_error(b"\x02\x01\x01")
    with pytest.raises(DecodeError, match=r"at least one content octet \(X.690 8.3.1\)"):
        decode_bind_error(b"\x02\x00")  # not busy (0): no value at all
    with pytest.raises(EncodeError):
        encode_bind_error(7)  # type: ignore[arg-type]


# PP 6.0 leaves the [18] wrapper out of its RTORJ user data (reference pcaps pp/03).
@pytest.mark.parametrize("error", list(MTABindError))
def test_a_bare_bind_error_is_read_and_listed_as_a_deviation(error: MTABindError) -> None:
    bare = encode_bind_error(error)
    deviations: list[Deviation] = []
    assert unwrap_bind_error(bare, deviations) == bare
    assert decode_bind_error(unwrap_bind_error(bare)) is error
    name = error.name.lower().replace("_", "-")
    assert deviations == [Deviation("RTORJapdu.userDataRJ", bare.hex(" "), f"MTABindError {name}")]


def test_the_wrapped_bind_error_is_no_deviation() -> None:
    deviations: list[Deviation] = []
    unwrap_bind_error(bytes.fromhex("b203020102"), deviations)
    assert deviations == []


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("", "expected identifier 0xb2 or a bare INTEGER 0x02, found nothing"),
        ("0a0102", "expected identifier 0xb2 or a bare INTEGER 0x02, found 0x0a"),
        ("3003020102", "expected identifier 0xb2 or a bare INTEGER 0x02, found 0x30"),
        ("0201", "1 content octets announced, 0 present"),
        ("020102ff", "1 trailing byte"),
        ("0280020000", "indefinite length on a primitive"),
        ("0200", "at least one content octet"),
        ("020107", "unknown MTA-bind error 7"),
        ("020201ff", "unknown MTA-bind error 511"),
    ],
)
def test_bad_bare_bind_errors(data: str, message: str) -> None:
    deviations: list[Deviation] = []
    with pytest.raises(DecodeError, match=message):
        unwrap_bind_error(bytes.fromhex(data), deviations)
    assert deviations == []


_INTEGER_FORMS = ber_forms.Rules(string=lambda path, octet: False)


@settings(max_examples=examples(1))
@given(st.sampled_from(MTABindError), st.booleans(), st.randoms(use_true_random=False))
def test_every_bind_error_reads_the_same_tagged_or_bare(
    error: MTABindError, tagged: bool, rnd: random.Random
) -> None:
    """In any legal BER form, [18]-wrapped or bare, each error value reads as itself."""
    encoded = encode_bind_error(error)
    sent = ber_forms.reform(wrap_bind_error(encoded) if tagged else encoded, rnd, _INTEGER_FORMS)
    deviations: list[Deviation] = []
    assert decode_bind_error(unwrap_bind_error(sent, deviations)) is error
    assert [d.found for d in deviations] == ([] if tagged else [sent.hex(" ")])


def test_raw_parts_are_kept_byte_for_byte() -> None:
    # A bind token sent with indefinite lengths, its token value a UTCTime without
    # seconds, the credentials [1] with an indefinite length too: nothing may be
    # normalised.
    token = "a08080032a0304a10d170b323430353031313233305a0000"
    received = bytes.fromhex("a10080044d544131a180a018" + token + "0000" + "a209310702010306022a03")
    received = received[:1] + bytes([len(received) - 2]) + received[2:]
    argument = decode_bind_argument(received)
    assert argument.strong_credentials == bytes.fromhex("3118" + token)
    assert argument.security_context == CONTEXT
    again = encode_bind_argument(argument)
    assert again.hex() == ("a12d80044d544131a11aa018" + token + "a209310702010306022a03")
    assert decode_bind_argument(again) == argument


def test_strong_credentials_with_indefinite_length() -> None:
    token = "a08080032a0304a1030201050000"
    received = bytes.fromhex("a11c80044d544131a180a080" + token + "00000000")
    strong = decode_bind_argument(received).strong_credentials
    assert strong == bytes.fromhex("3180" + token + "0000")


def test_protected_credentials_are_refused() -> None:
    # credentials [1] holding protected [1] ProtectedPassword { signature, ... }
    protected = bytes.fromhex("a11a80044d544131a112a110300e300406022a0303060001020304ff")
    with pytest.raises(DecodeError, match="protected credentials are not allowed"):
        decode_bind_argument(protected)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"password": "x"}, ValueError),
        ({"strong_credentials": STRONG}, ValueError),
        ({"security_context": CONTEXT}, ValueError),
        ({"initiator_name": "A"}, ValueError),
        ({"initiator_name": "A", "password": "x", "strong_credentials": STRONG}, ValueError),
        ({"initiator_name": "A", "password": 5}, TypeError),
    ],
)
def test_inconsistent_arguments_are_refused(kwargs: dict[str, object], error: type) -> None:
    with pytest.raises(error):
        MTABindArgument(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "argument",
    [
        MTABindArgument(initiator_name="Zoë", password="x"),
        MTABindArgument(initiator_name="A", password="pässword"),
        MTABindArgument(initiator_name="A", strong_credentials=b"\x30\x00"),
        MTABindArgument(initiator_name="A", strong_credentials=b"\x31\x05\x00"),
        MTABindArgument(initiator_name="A", password="x", security_context=b""),
    ],
)
def test_values_that_cannot_be_encoded(argument: MTABindArgument) -> None:
    with pytest.raises(EncodeError):
        encode_bind_argument(argument)


@pytest.mark.parametrize(
    ("unwrap", "data", "message"),
    [
        (unwrap_bind_argument, "", "found nothing"),
        (unwrap_bind_argument, "b1020500", "expected identifier 0xb0"),
        (unwrap_bind_argument, "b0020500ff", "1 trailing byte"),
        (unwrap_bind_argument, "b00405000500", "explicit tag holds 2 values, not one"),
        (unwrap_bind_argument, "b000", "explicit tag holds 0 values, not one"),
        (unwrap_bind_argument, "b0030500", "3 content octets announced, 2 present"),
        (unwrap_bind_result, "b1800500", "missing end-of-contents"),
        (unwrap_bind_error, "b28402", "truncated length"),
        (unwrap_bind_error, "b2020280", "indefinite length on a primitive"),
    ],
)
def test_bad_wrappers(unwrap: object, data: str, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        unwrap(bytes.fromhex(data))  # type: ignore[operator]


def test_indefinite_length_wrapper() -> None:
    inner = bytes.fromhex("a11080044d544131a1081606736563726574")
    assert unwrap_bind_argument(b"\xb0\x80" + inner + b"\x00\x00") == inner


DECODERS = [
    decode_bind_argument,
    decode_bind_result,
    decode_bind_error,
    unwrap_bind_argument,
    unwrap_bind_result,
    unwrap_bind_error,
]
VALID = [bytes.fromhex(h) for _, h in ARGUMENTS + RESULTS] + [
    bytes.fromhex("b012a11080044d544131a1081606736563726574"),
    bytes.fromhex("020102"),
]


@settings(max_examples=examples(3))
@given(st.binary(max_size=64))
def test_random_bytes_raise_only_decode_error(data: bytes) -> None:
    for decoder in DECODERS:
        with contextlib.suppress(DecodeError):
            decoder(data)


@settings(max_examples=examples(3))
@given(
    st.sampled_from(VALID),
    st.integers(min_value=0, max_value=200),
    st.integers(min_value=0, max_value=255),
    st.booleans(),
)
def test_mutated_bind_values_raise_only_decode_error(
    valid: bytes, position: int, octet: int, truncate: bool
) -> None:
    position %= len(valid)
    data = valid[:position]
    if not truncate:
        data += bytes([octet]) + valid[position + 1 :]
    for decoder in DECODERS:
        with contextlib.suppress(DecodeError):
            decoder(data)


# --- the codec against asn1tools, an independent reader and writer of the same ASN.1 -------

MTA = "MTAAbstractService"
MTS = "MTSAbstractService"


def _oracle_credentials(password: str | bytes | None, strong: bytes | None) -> object:
    """asn1tools' value of ``Credentials`` (X.411 12.1.1.1.1.2)."""
    if strong is not None:
        return ("strong", asn1.decode(MTS, "StrongCredentials", strong))
    if isinstance(password, str):
        return ("simple", ("ia5-string", password))
    return ("simple", ("octet-string", password))


def _oracle_argument(argument: MTABindArgument) -> object:
    """asn1tools' value of ``MTABindArgument``."""
    if argument.initiator_name is None:
        return ("unauthenticated", None)
    fields = {
        "initiator-name": argument.initiator_name,
        "initiator-credentials": _oracle_credentials(
            argument.password, argument.strong_credentials
        ),
    }
    if argument.security_context is not None:
        fields["security-context"] = asn1.decode(MTS, "SecurityContext", argument.security_context)
    return ("authenticated", fields)


def _oracle_result(result: MTABindResult) -> object:
    """asn1tools' value of ``MTABindResult``."""
    if result.responder_name is None:
        return ("unauthenticated", None)
    credentials = _oracle_credentials(result.password, result.strong_credentials)
    return (
        "authenticated",
        {"responder-name": result.responder_name, "responder-credentials": credentials},
    )


_mta_names = st.text(st.characters(max_codepoint=0x7F), min_size=1, max_size=32)
_passwords = st.one_of(
    st.text(st.characters(max_codepoint=0x7F), max_size=62), st.binary(max_size=62)
)
_STRONGS = [
    STRONG,
    bytes.fromhex("3100"),  # every member is optional
    # certificate-selector [2] CertificateAssertion { serialNumber [0] 7,
    # privateKeyValid [5] GeneralizedTime }: an extension addition
    bytes.fromhex("3116a214800107850f32303236303130313132303033305a"),
]


@st.composite
def _arguments(draw: st.DrawFn) -> MTABindArgument:
    if draw(st.booleans()):
        return MTABindArgument()
    strong = draw(st.sampled_from([None, *_STRONGS]))
    return MTABindArgument(
        initiator_name=draw(_mta_names),
        password=draw(_passwords) if strong is None else None,
        strong_credentials=strong,
        security_context=draw(st.sampled_from([None, CONTEXT])),
    )


@st.composite
def _results(draw: st.DrawFn) -> MTABindResult:
    if draw(st.booleans()):
        return MTABindResult()
    strong = draw(st.sampled_from([None, *_STRONGS]))
    return MTABindResult(
        responder_name=draw(_mta_names),
        password=draw(_passwords) if strong is None else None,
        strong_credentials=strong,
    )


@settings(max_examples=examples(2))
@given(_arguments())
def test_bind_arguments_agree_with_asn1tools(argument: MTABindArgument) -> None:
    ours = encode_bind_argument(argument)
    assert asn1.decode(MTA, "MTABindArgument", ours) == _oracle_argument(argument)
    theirs = asn1.encode(MTA, "MTABindArgument", _oracle_argument(argument))
    assert decode_bind_argument(theirs) == argument
    assert theirs == ours


@settings(max_examples=examples(2))
@given(_results())
def test_bind_results_agree_with_asn1tools(result: MTABindResult) -> None:
    ours = encode_bind_result(result)
    assert asn1.decode(MTA, "MTABindResult", ours) == _oracle_result(result)
    theirs = asn1.encode(MTA, "MTABindResult", _oracle_result(result))
    assert decode_bind_result(theirs) == result
    assert theirs == ours


@pytest.mark.parametrize("error", list(MTABindError))
def test_bind_errors_agree_with_asn1tools(error: MTABindError) -> None:
    assert asn1.decode(MTA, "MTABindError", encode_bind_error(error)) == error
    assert decode_bind_error(asn1.encode(MTA, "MTABindError", int(error))) is error


@pytest.mark.parametrize(
    ("strong", "asn1tools_refuses"),
    [
        ("3106a0048002510a", True),  # a bind-token without its [1] value
        ("3108a0068002510a0500", True),  # a bind-token whose value is not [1]
        ("3103810105", False),  # a certificate not constructed (asn1tools ignores the form)
        ("3104a200a200", False),  # certificate-selector twice (asn1tools keeps the last)
    ],
)
def test_strong_credentials_that_are_not_strong_credentials(
    strong: str, asn1tools_refuses: bool
) -> None:
    data = bytes.fromhex(strong)
    if asn1tools_refuses:
        with pytest.raises(DecodeError):
            asn1.decode(MTS, "StrongCredentials", data)
    credentials = ber.tlv(ber.context(1), ber.retag(data, ber.context(0)), True)
    received = ber.tlv(ber.context(1), ber.tlv(ber.context(0), b"M") + credentials, True)
    with pytest.raises(DecodeError, match="strong"):
        decode_bind_argument(received)
    with pytest.raises(EncodeError, match="strong"):
        encode_bind_argument(MTABindArgument(initiator_name="M", strong_credentials=data))


def test_the_password_alternatives_stay_apart() -> None:
    """Password is a CHOICE: an IA5String and an OCTET STRING of the same octets are two
    values (X.411 12.1.1.1.1.2), and each decodes as the alternative it was sent as."""
    text = MTABindArgument(initiator_name="A", password="secret")
    octets = MTABindArgument(initiator_name="A", password=b"secret")
    assert decode_bind_argument(encode_bind_argument(text)).password == "secret"
    assert decode_bind_argument(encode_bind_argument(octets)).password == b"secret"
    assert encode_bind_argument(text) != encode_bind_argument(octets)


@pytest.mark.parametrize("password", ["p" * 63, b"p" * 63])
def test_a_password_over_ub_password_length_is_refused_both_ways(password: str | bytes) -> None:
    tag = ber.IA5_STRING if isinstance(password, str) else ber.OCTET_STRING
    long = ber.constructed(
        ber.context(1),
        [
            ber.tlv(ber.context(0), b"A"),
            ber.tlv(ber.context(1), ber.tlv(tag, b"p" * 63), True),
        ],
    )
    with pytest.raises(DecodeError, match=r"a password of 63, over ub-password-length \(62\)"):
        decode_bind_argument(long)
    with pytest.raises(EncodeError, match="62 long at most"):
        encode_bind_argument(MTABindArgument(initiator_name="A", password=password))
    at_bound = MTABindArgument(initiator_name="A", password=password[:62])
    assert decode_bind_argument(encode_bind_argument(at_bound)) == at_bound
