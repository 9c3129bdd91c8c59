"""IPM body parts read in every legal BER form (X.420 clauses 7.3, 7.4; STANAG 4406
Annex A; X.690 8.1 to 8.7): the same typed model as the shortest form, written back byte
for byte; and the STANAG 4406 extended body part types."""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p1 import asn1, ber
from p1.ipms.body import decode_body, encode_body
from p1.ipms.ipm import (
    IPM,
    ContentKind,
    Heading,
    IPMIdentifier,
    decode_ipm,
    encode_ipm,
    encode_message_data,
)
from p1.ipms.models import (
    ACP127DataBodyPart,
    ADatP3BodyPart,
    BinaryBodyPart,
    BodyPart,
    CorrectionsBodyPart,
    ExtendedBodyPart,
    ForwardedEncryptedBodyPart,
    ForwardedForm,
    ForwardedMessageBodyPart,
    RawBodyPart,
    Repertoire,
    TextBodyPart,
    TextKind,
    body_part_text,
    body_part_type,
)
from tests.p1 import ber_forms
from tests.profiles import examples

P2 = ContentKind.P2
P772 = ContentKind.P772
KINDS = [P2, P772]

# The body part a real product sent: ia5-text [0] of indefinite length holding empty
# IA5TextParameters (31 00) and its text as a constructed IA5String of indefinite length
# (36 80) in one OCTET STRING segment (04 07), then the two end-of-contents.
REAL_PRODUCT_PART = bytes.fromhex("a080 3100 3680 0407") + b"hello\r\n" + bytes.fromhex("0000 0000")


def body_bytes(*parts: bytes) -> bytes:
    """A Body SEQUENCE (shortest header) around the body part encodings."""
    return ber.tlv(ber.SEQUENCE, b"".join(parts), constructed=True)


def decode(body: bytes | bytearray | memoryview, kind: ContentKind) -> tuple[BodyPart, ...]:
    view, tlv = ber.single(body, "Body")
    return decode_body(view, tlv, kind)


def encode(parts: tuple[BodyPart, ...], kind: ContentKind) -> bytes:
    return b"".join(encode_body(parts, kind))


def part_encodings(body: bytes) -> list[bytes]:
    """Each body part's TLV in a Body SEQUENCE."""
    view, tlv = ber.single(body, "Body")
    return [bytes(view[item[1] : item[4]]) for item in ber.items(view, tlv, "Body")]


# --- strategies: every modelled kind, as decoding gives it ------------------------------

ia5 = st.binary(max_size=200).map(lambda raw: bytes(octet & 0x7F for octet in raw))
parameters_numbers = st.one_of(st.none(), st.integers(-300, 70000))
IPM_SEQUENCE = encode_message_data(
    IPM(heading=Heading(this_ipm=IPMIdentifier(user_relative_identifier="FWD"))), P772
)
DELIVERY_TIME = bytes.fromhex("310f 800d") + b"240102030405Z"  # MessageParameters


@st.composite
def bit_strings(draw: st.DrawFn) -> tuple[bytes, int]:
    data = draw(st.binary(max_size=40))
    unused = draw(st.integers(0, 7)) if data else 0
    if unused:
        data = data[:-1] + bytes((data[-1] & (0xFF << unused) & 0xFF,))
    return data, unused


def body_parts(kind: ContentKind) -> st.SearchStrategy[BodyPart]:
    """Each typed body part kind, with ``extended`` / ``form`` None for the form ``kind``
    prescribes (as decoding under ``kind`` gives it)."""
    other_form = st.one_of(st.none(), st.just(kind is P2))
    forms = [ForwardedForm.MM_MESSAGE, ForwardedForm.BASIC if kind is P772 else None]
    forms.append(ForwardedForm.EXTENDED if kind is P2 else None)
    return st.one_of(
        st.builds(
            TextBodyPart, data=ia5, repertoire=st.sampled_from(Repertoire), extended=other_form
        ),
        st.builds(
            TextBodyPart,
            data=st.binary(max_size=60),
            kind=st.just(TextKind.GENERAL),
            character_sets=st.lists(st.integers(1, 32767), max_size=4).map(tuple),
        ),
        st.builds(BinaryBodyPart, data=st.binary(max_size=200), extended=other_form),
        st.builds(
            ForwardedMessageBodyPart,
            message=st.sampled_from([IPM_SEQUENCE, b"\x30\x00"]),
            parameters=st.sampled_from([b"\x31\x00", DELIVERY_TIME]),
            form=st.sampled_from(forms),
        ),
        st.builds(ADatP3BodyPart, data=ia5, parameters=parameters_numbers),
        st.builds(
            ADatP3BodyPart,
            sets=st.lists(ia5, max_size=5).map(tuple),
            parameters=parameters_numbers,
        ),
        st.builds(ACP127DataBodyPart, data=ia5, parameters=parameters_numbers),
        st.builds(CorrectionsBodyPart, data=ia5, parameters=parameters_numbers),
        st.builds(
            lambda bits, parameters: ForwardedEncryptedBodyPart(
                parameters=parameters, data=bits[0], unused_bits=bits[1]
            ),
            bit_strings(),
            st.sampled_from([b"\x31\x00", DELIVERY_TIME]),
        ),
        st.builds(
            ExtendedBodyPart,
            data_type=st.sampled_from(["2.6.1.4.18", "2.6.1.4.5", "1.2.840.113549.1.7.1"]),
            data=st.sampled_from(
                [b"\x05\x00", b"\x04\x81\x80" + bytes(128), b"\x30\x03\x02\x01\x07"]
            ),
        ),
        st.builds(
            ExtendedBodyPart,
            data_type=st.just("1.3.26.0.4406.0.7.99"),
            data=st.just(b"\x16\x02ok"),
            parameters_type=st.just("1.3.26.0.4406.0.7.98"),
            parameters=st.sampled_from([b"\x02\x01\x00", b"\x31\x00"]),
        ),
    )


# --- the forms a sender may choose ------------------------------------------------------

_STRINGS = frozenset({0x04, 0x16, 0x1B})  # OCTET STRING, IA5String, GeneralString


def _string(path: ber_forms.Path, octet: int) -> bool:
    """The primitive values that are strings: the universal string types, basic
    bilaterally-defined [14], and ADatP-3 lineOriented [0] (inside a value's [0])."""
    if octet in _STRINGS:
        return True
    if octet == 0x8E:
        return path == ()
    return octet == 0x80 and path[-1:] == (0xA0,)


def _values_kept(path: ber_forms.Path, octet: int, contents: bytes) -> bool:
    """Values the models keep as BER (a forwarded message and its parameters, the
    values of an extended type not modelled): their contents stay as they are."""
    return (octet == 0xA9 and path == ()) or (
        octet == 0xA0 and path in {(0xAF, 0xA0), (0xAF, 0x28)}
    )


def _parameters_kept(path: ber_forms.Path, octet: int, contents: bytes) -> bool:
    """Forwarded-encrypted parameters: kept as BER."""
    return octet == 0xA0 and path == (0xAF, 0xA0)


_KEPT = {
    ForwardedMessageBodyPart: _values_kept,
    ExtendedBodyPart: _values_kept,
    ForwardedEncryptedBodyPart: _parameters_kept,
}


def rules(part: BodyPart) -> ber_forms.Rules:
    opaque = _KEPT.get(type(part))
    if opaque is None:
        return ber_forms.Rules(string=_string, high_tags=True)
    return ber_forms.Rules(string=_string, opaque=opaque, high_tags=True)


@pytest.mark.slow
@settings(max_examples=examples(4), suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(KINDS).flatmap(
        lambda kind: st.tuples(st.just(kind), st.lists(body_parts(kind), min_size=1, max_size=4))
    ),
    st.randoms(use_true_random=False),
)
def test_every_legal_form_decodes_to_the_same_parts_and_encodes_back(
    kind_and_parts: tuple[ContentKind, list[BodyPart]], rnd: random.Random
) -> None:
    kind, parts = kind_and_parts
    original = tuple(parts)
    minimal = encode(original, kind)
    assert decode(minimal, kind) == original
    ours = part_encodings(minimal)
    theirs = [ber_forms.reform(der, rnd, rules(p)) for der, p in zip(ours, parts, strict=True)]
    received = body_bytes(*theirs)
    decoded = decode(received, kind)
    assert decoded == original
    assert encode(decoded, kind) == received
    # Read through a view of the whole buffer, and of a part of one.
    for view in (memoryview(bytearray(received)), memoryview(b"\0" + received)[1:]):
        assert decode(view, kind) == original
        assert encode(decode(view, kind), kind) == received
    for part, mine, sent in zip(decoded, ours, theirs, strict=True):
        assert part.encoding == (None if sent == mine else sent)


# --- the real product's body part --------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_the_real_products_text_is_read_as_text(kind: ContentKind) -> None:
    body = body_bytes(REAL_PRODUCT_PART)
    (part,) = decode(body, kind)
    assert part == TextBodyPart(data=b"hello\r\n", extended=False if kind is P772 else None)
    assert body_part_text(part) == "hello\r\n"
    assert body_part_type(part) == "ia5-text"
    assert encode((part,), kind) == body


@pytest.mark.parametrize("kind", KINDS)
def test_the_real_products_message_is_written_back_as_received(kind: ContentKind) -> None:
    empty = encode_ipm(
        IPM(heading=Heading(this_ipm=IPMIdentifier(user_relative_identifier="1"))), kind
    )
    view, outer = ber.single(empty, "IPM")
    heading = ber.items(view, outer, "IPM")[0]
    content = ber.tlv(
        ber.context(0),
        bytes(view[heading[1] : heading[4]]) + body_bytes(REAL_PRODUCT_PART),
        constructed=True,
    )
    ipm = decode_ipm(content, kind)
    assert [body_part_text(part) for part in ipm.body] == ["hello\r\n"]
    assert encode_ipm(ipm, kind) == content


def test_a_changed_part_is_written_afresh_not_with_the_bytes_received() -> None:
    (part,) = decode(body_bytes(REAL_PRODUCT_PART), P2)
    assert isinstance(part, TextBodyPart)
    assert part.encoding == REAL_PRODUCT_PART
    changed = dataclasses.replace(part, data=b"bye\r\n")
    assert changed.encoding == REAL_PRODUCT_PART  # (replace copies it along)
    written = encode((changed,), P2)
    assert written == encode((TextBodyPart(data=b"bye\r\n"),), P2)
    assert decode(written, P2) == (changed,)


def test_the_bytes_received_are_written_only_under_the_kind_they_read_as() -> None:
    (part,) = decode(body_bytes(REAL_PRODUCT_PART), P2)  # basic form: prescribed for P2
    # Under P772 the same part (extended None) is the extended form: written afresh.
    written = encode((part,), P772)
    assert written == encode((TextBodyPart(data=b"hello\r\n"),), P772)
    assert decode(written, P772) == (part,)


def test_ia5_text_with_octets_above_0x7f_is_text_and_written_back() -> None:
    received = body_bytes(bytes.fromhex("a0 07 3100 1603") + b"x\xe9y")
    for kind in KINDS:
        (part,) = decode(received, kind)
        assert isinstance(part, TextBodyPart)
        assert part.text == "x\ufffdy"
        assert encode((part,), kind) == received


@pytest.mark.parametrize(
    "part",
    [
        bytes.fromhex("a0 09 3100 3605 1603414243"),  # IA5String segments must be 04
        bytes.fromhex("a0 08 3103 800109 160141"),  # repertoire 9: not ita2 or ia5
        bytes.fromhex("a0 05 3100 040141"),  # data not an IA5String
    ],
)
def test_a_part_that_is_not_its_types_syntax_is_kept_as_received(part: bytes) -> None:
    received = body_bytes(part, REAL_PRODUCT_PART)
    for kind in KINDS:
        decoded = decode(received, kind)
        assert decoded[0] == RawBodyPart(encoding=part)
        assert isinstance(decoded[1], TextBodyPart)
        assert encode(decoded, kind) == received


# --- the STANAG 4406 extended body part types -----------------------------------------


def _mmhs_et(number: int) -> str:
    """The hex of the OBJECT IDENTIFIER id-nato-mmhs-et-* {1 3 26 0 4406 0 7 number}."""
    return f"0608 2b1a00a2360007{number:02x}"


ADATP3 = _mmhs_et(0)


def _extended(parameters: str, data: str) -> bytes:
    """``extended [15]`` from the hex of its parameters [0] and data INSTANCE OF."""
    inner = bytes.fromhex(parameters) + ber.tlv(ber.universal(8), bytes.fromhex(data), True)
    return ber.tlv(ber.context(15), inner, constructed=True)


@pytest.mark.parametrize(
    ("part", "encoding"),
    [
        (
            ADatP3BodyPart(data=b"EXER/X//\r\n", parameters=0),
            _extended(
                "a00f" + _mmhs_et(2) + "a003020100",
                ADATP3 + "a00c 800a" + b"EXER/X//\r\n".hex(),
            ),
        ),
        (
            ADatP3BodyPart(sets=(b"MSGID/A//", b"ORDER/1//")),
            _extended(
                "", ADATP3 + "a018 a116 1609" + b"MSGID/A//".hex() + "1609" + b"ORDER/1//".hex()
            ),
        ),
        (
            ACP127DataBodyPart(data=b"ZNR UUUUU", parameters=1),
            _extended(
                "a00f" + _mmhs_et(13) + "a003020101",
                _mmhs_et(12) + "a00b 1609" + b"ZNR UUUUU".hex(),
            ),
        ),
        (
            CorrectionsBodyPart(data=b"PARA 2 READ 0600Z"),
            _extended("", _mmhs_et(1) + "a013 1611" + b"PARA 2 READ 0600Z".hex()),
        ),
        (
            ForwardedEncryptedBodyPart(parameters=b"\x31\x00", data=b"\xab\xc0", unused_bits=4),
            _extended(
                "a00e" + _mmhs_et(7) + "a0023100",
                _mmhs_et(6) + "a005 030304abc0",
            ),
        ),
    ],
)
@pytest.mark.parametrize("kind", KINDS)
def test_stanag_4406_extended_body_parts(
    part: BodyPart, encoding: bytes, kind: ContentKind
) -> None:
    body = body_bytes(encoding)
    assert encode((part,), kind) == body
    assert decode(body, kind) == (part,)
    assert decode(body, kind)[0].encoding is None


def test_the_stanag_4406_values_agree_with_the_asn1_module() -> None:
    """asn1tools, compiled from MMSExtendedBodyPartTypes, reads the values written."""
    module = "MMSExtendedBodyPartTypes"
    line = ADatP3BodyPart(data=b"EXER/X//\r\n", parameters=5)
    sets = ADatP3BodyPart(sets=(b"MSGID/A//", b"ORDER/1//"))
    acp127 = ACP127DataBodyPart(data=b"ZNR UUUUU", parameters=3)
    corrections = CorrectionsBodyPart(data=b"PARA 2", parameters=7)
    encrypted = ForwardedEncryptedBodyPart(parameters=b"\x31\x00", data=b"\xab\xc0", unused_bits=4)
    values = [_instance_values(part) for part in (line, sets, acp127, corrections, encrypted)]
    assert asn1.decode(module, "ADatP3Data", values[0][1]) == ("lineOriented", "EXER/X//\r\n")
    assert asn1.decode(module, "ADatP3Parameters", values[0][0]) == 5
    assert asn1.decode(module, "ADatP3Data", values[1][1]) == (
        "setOriented",
        ["MSGID/A//", "ORDER/1//"],
    )
    assert asn1.decode(module, "ACP127DataData", values[2][1]) == "ZNR UUUUU"
    assert asn1.decode(module, "ACP127DataParameters", values[2][0]) == 3
    assert asn1.decode(module, "CorrectionsData", values[3][1]) == "PARA 2"
    assert asn1.decode(module, "CorrectionsParameters", values[3][0]) == 7
    assert asn1.decode(module, "ForwardedEncryptedData", values[4][1]) == (b"\xab\xc0", 12)


def _instance_values(part: BodyPart) -> tuple[bytes, bytes]:
    """(parameters value, data value) of an extended body part as written (b"" when
    there are no parameters)."""
    (encoding,) = part_encodings(encode((part,), P772))
    view, tlv = ber.single(encoding, "extended")
    found = []
    for instance in ber.items(view, tlv, "extended"):
        value = ber.items(view, ber.items(view, instance, "instance")[1], "value")[0]
        found.append(bytes(view[value[1] : value[4]]))
    return (b"", found[0]) if len(found) == 1 else (found[0], found[1])


def test_text_like_stanag_4406_parts_show_their_text() -> None:
    assert ADatP3BodyPart(data=b"A//\r\nB//\r\n").lines == ("A//", "B//")
    sets = ADatP3BodyPart(sets=(b"A//", b"B//"))
    assert (sets.lines, sets.text) == (("A//", "B//"), "A//\r\nB//")
    assert body_part_text(ACP127DataBodyPart(data=b"ZNR")) == "ZNR"
    assert body_part_text(CorrectionsBodyPart(data=b"FIX")) == "FIX"
    assert body_part_text(BinaryBodyPart(data=b"FIX")) is None
    encrypted = ForwardedEncryptedBodyPart(parameters=b"\x31\x00", data=b"")
    assert body_part_text(encrypted) is None


@pytest.mark.parametrize(
    "part",
    [
        ADatP3BodyPart(data=b"x", sets=(b"y",)),  # both forms at once
        ADatP3BodyPart(sets=(b"caf\xe9",)),
        ACP127DataBodyPart(data=b"caf\xe9"),
        ForwardedEncryptedBodyPart(parameters=b"\x30\x00", data=b""),
        ForwardedEncryptedBodyPart(parameters=b"\x31\x00", data=b"\x01", unused_bits=1),
        ForwardedEncryptedBodyPart(parameters=b"\x31\x00", data=b"", unused_bits=2),
    ],
)
def test_bad_stanag_4406_parts_raise_encode_error(part: BodyPart) -> None:
    from p1.errors import EncodeError

    with pytest.raises(EncodeError):
        encode((part,), P772)


def test_an_extended_type_read_that_is_not_its_syntax_stays_an_extended_part() -> None:
    # ADatP3Data lineOriented is [0] IMPLICIT IA5String: an IA5String inside is not it.
    part = ExtendedBodyPart(data_type="1.3.26.0.4406.0.7.0", data=b"\xa0\x03\x16\x01A")
    body = encode((part,), P772)
    assert decode(body, P772) == (part,)


# --- names -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("part", "name"),
    [
        (TextBodyPart(data=b"x"), "ia5-text"),
        (TextBodyPart.from_text("caf\xe9"), "general-text"),
        (BinaryBodyPart(data=b""), "bilaterally-defined"),
        (ForwardedMessageBodyPart(message=b"\x30\x00"), "message"),
        (
            ForwardedMessageBodyPart(message=b"\x30\x00", form=ForwardedForm.MM_MESSAGE),
            "mm-message",
        ),
        (ADatP3BodyPart(), "adatp3"),
        (ACP127DataBodyPart(data=b"x"), "acp127data"),
        (CorrectionsBodyPart(data=b"x"), "corrections"),
        (ForwardedEncryptedBodyPart(parameters=b"\x31\x00", data=b""), "forwarded-encrypted"),
        (ExtendedBodyPart(data_type="2.6.1.4.18", data=b"\x05\x00"), "pkcs7"),
        (ExtendedBodyPart(data_type="2.6.1.4.16", data=b"\x05\x00"), "voice"),
        (ExtendedBodyPart(data_type="2.6.1.4.17.22", data=b"\x05\x00"), "content"),
        (ExtendedBodyPart(data_type="1.2.3.4", data=b"\x05\x00"), "1.2.3.4"),
        (RawBodyPart(encoding=bytes.fromhex("a5 07 3100 3003 140161")), "teletex"),
        (RawBodyPart(encoding=bytes.fromhex("bf05 07 3100 3003 140161")), "teletex"),
        (RawBodyPart(encoding=bytes.fromhex("a3 02 3100")), "g3-facsimile"),
        (RawBodyPart(encoding=bytes.fromhex("9f2a 00")), "unknown"),
    ],
)
def test_body_part_types_are_named(part: BodyPart, name: str) -> None:
    assert body_part_type(part) == name
