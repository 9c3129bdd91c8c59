"""The SPDU codec (X.225 clause 8): tables of values and bytes, the golden captures, lengths,
segmenting, decode errors, and random and mutated TSDUs."""

from __future__ import annotations

import contextlib
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p1.errors import DecodeError, EncodeError
from p1.osi.x225 import spdu
from p1.osi.x225.spdu import (
    ConnectAcceptItem,
    ConnectionIdentifier,
    Kind,
    LinkingInformation,
    Spdu,
)
from tests.profiles import examples
from tests.support import golden

# (SPDU, the TSDU that carries it): encode_tsdu gives the bytes, decode_tsdu the value.
TSDUS: list[tuple[Spdu, str]] = [
    (Spdu(kind=Kind.DT, user_data=b"\xab\xcd"), "0100 0100 abcd"),
    (Spdu(kind=Kind.AS, activity_identifier=b"\x02\x01\x01"), "0100 2d05 2903020101"),
    (
        Spdu(
            kind=Kind.AR,
            linking_information=LinkingInformation(
                connection_identifier=ConnectionIdentifier(
                    calling_ss_user_reference=b"ref", common_reference=b"260422101500Z"
                ),
                old_activity_identifier=b"\x02\x01\x03",
                serial_number=4,
            ),
            activity_identifier=b"\x02\x01\x01",
        ),
        "0100 1d23 211c 0a03726566 0b0d3236303432323130313530305a 2903020103 2a0134 2903020101",
    ),
    (Spdu(kind=Kind.MAP, serial_number=1), "0100 2903 2a0131"),  # activity end
    (Spdu(kind=Kind.MAA, serial_number=1), "0200 2a03 2a0131"),
    (Spdu(kind=Kind.MIP, serial_number=12), "0100 3104 2a023132"),
    (Spdu(kind=Kind.MIP, sync_type_item=1, serial_number=3), "0100 3106 0f0101 2a0133"),
    (Spdu(kind=Kind.MIA, serial_number=3, user_data=b"u"), "0200 3206 2a0133 2e0175"),
    (Spdu(kind=Kind.AI, reason_code=0), "0100 1903 320100"),
    (Spdu(kind=Kind.AIA), "0200 1a00"),
    (Spdu(kind=Kind.AD, reason_code=5), "0100 3903 320105"),
    (Spdu(kind=Kind.ADA), "0200 3a00"),
    (Spdu(kind=Kind.ED, reason_code=1, user_data=b"x"), "0200 3006 320101 c10178"),
    (Spdu(kind=Kind.ER, reflect_parameter_values=b"\x01"), "0200 0003 310101"),
    (Spdu(kind=Kind.GT, token_item=0x15), "0103 100115"),
    (Spdu(kind=Kind.PT, token_item=0x15, user_data=b"pq"), "0207 100115 c1027071"),
    (Spdu(kind=Kind.GTC), "1500"),
    (Spdu(kind=Kind.GTA), "1600"),
    (Spdu(kind=Kind.AB, transport_disconnect=0x0B), "1903 11010b"),
    (Spdu(kind=Kind.AB, transport_disconnect=5, user_data=b"\x00"), "1906 110105 c10100"),
    (Spdu(kind=Kind.AA), "1a00"),
    (Spdu(kind=Kind.FN, transport_disconnect=1, user_data=b"f"), "0906 110101 c10166"),
    (Spdu(kind=Kind.DN), "0a00"),
    (Spdu(kind=Kind.NF, user_data=b"n"), "0803 c1016e"),
    (Spdu(kind=Kind.CDO, enclosure_item=2, user_data=b"c"), "0f06 190102 c10163"),
    (Spdu(kind=Kind.OA, tsdu_maximum_size=(512, 0), version_number=2), "1009 1504 02000000 160102"),
    (
        Spdu(kind=Kind.RF, transport_disconnect=1, reason_code=2, user_data=b"no"),
        "0c08 110101 3203 02 6e6f",
    ),
    (
        Spdu(
            kind=Kind.CN,
            connection_identifier=ConnectionIdentifier(common_reference=b"r"),
            connect_accept_item=ConnectAcceptItem(
                protocol_options=0, tsdu_maximum_size=(256, 256), version_number=2, token_setting=0
            ),
            session_user_requirements=0x0249,
            calling_ssap=b"\x00\x01",
            called_ssap=b"\x00\x02",
            data_overflow=1,
            user_data=b"d",
        ),
        "0d28 0103 0b0172 050f 130100 150401000100 160102 1a0100 14020249"
        " 33020001 34020002 3c0101 c10164",
    ),
    (
        Spdu(
            kind=Kind.AC,
            connection_identifier=ConnectionIdentifier(called_ss_user_reference=b"x"),
            connect_accept_item=ConnectAcceptItem(version_number=2, initial_serial_number=7),
            token_item=0x01,
            session_user_requirements=0x0249,
            called_ssap=b"",
            user_data=b"a",
        ),
        "0e19 0103 090178 0506 160102 170137 100101 14020249 3400 c10161",
    ),
]


@pytest.mark.parametrize(("value", "hex_"), TSDUS, ids=[v.kind.name for v, _ in TSDUS])
def test_tsdu_table(value: Spdu, hex_: str) -> None:
    data = bytes.fromhex(hex_)
    assert spdu.encode_tsdu(value) == data
    decoded = spdu.decode_tsdu(data)
    assert decoded[-1] == value
    if value.kind.category == 2:  # after the empty GT or PT basic concatenation needs
        assert decoded[0] == Spdu(kind=spdu.PREFIX[value.kind])
        assert len(decoded) == 2
    else:
        assert len(decoded) == 1


@pytest.mark.parametrize(
    ("size", "header"),
    [
        (250, "0a fc c1 fa"),
        (252, "0a fe c1 fc"),
        (253, "0a ff00ff c1 fd"),  # the SPDU's parameter field reaches 255
        (254, "0a ff0100 c1 fe"),
        (255, "0a ff0103 c1 ff00ff"),  # and now the PGI's too
        (65000, "0a fffdec c1 fffde8"),
    ],
)
def test_lengths(size: int, header: str) -> None:
    """LI: one octet up to 254, else FF and two octets (X.225 8.2.5), SPDU and PGI alike."""
    value = Spdu(kind=Kind.DN, user_data=bytes(size))
    encoded = spdu.encode_spdu(value)
    assert encoded == bytes.fromhex(header) + bytes(size)
    assert spdu.decode_tsdu(encoded) == [value]


def test_lengths_too_long_to_encode() -> None:
    with pytest.raises(EncodeError, match="65,535 at most"):
        spdu.encode_spdu(Spdu(kind=Kind.DN, user_data=bytes(65536)))


def test_three_octet_length_for_the_spdu_too() -> None:
    encoded = spdu.encode_spdu(Spdu(kind=Kind.FN, transport_disconnect=1, user_data=bytes(300)))
    assert encoded[:4] == b"\x09\xff\x01\x33"  # 3 (PI 17) + 4 + 300 = 307
    assert encoded[7:11] == b"\xc1\xff\x01\x2c"


def test_user_data_pgi_by_size_in_cn_and_ac() -> None:
    """PGI 193 up to 512 octets, extended user data PGI 194 beyond (version 2)."""
    for kind in (Kind.CN, Kind.AC):
        small = spdu.encode_spdu(Spdu(kind=kind, user_data=bytes(512)))
        large = spdu.encode_spdu(Spdu(kind=kind, user_data=bytes(513)))
        assert small[4:7] == b"\xc1\xff\x02" and large[4:7] == b"\xc2\xff\x02"
        assert spdu.decode_tsdu(large)[0].user_data == bytes(513)
    # Elsewhere user data is always PGI 193, whatever its size.
    assert spdu.encode_spdu(Spdu(kind=Kind.FN, user_data=bytes(600)))[4] == 193


def test_decoded_dt_user_data_is_a_view_of_the_tsdu() -> None:
    tsdu = b"\x01\x00\x01\x00" + bytes(range(200))
    [_, dt] = spdu.decode_tsdu(tsdu)
    assert isinstance(dt.user_data, memoryview) and dt.user_data.obj is tsdu
    assert dt.user_data == bytes(range(200))


def test_dt_tsdu_costs_one_copy_of_a_megabyte() -> None:
    data = bytes(1 << 20)
    tracemalloc.start()
    try:
        tsdu = spdu.encode_tsdu(Spdu(kind=Kind.DT, user_data=data))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert tsdu[:4] == b"\x01\x00\x01\x00" and len(tsdu) == len(data) + 4
    assert peak < len(data) + 64 * 1024  # the TSDU itself, and no second copy


def test_unknown_parameters_are_skipped() -> None:
    # CN with an unknown PI 99 at the top and PI 98 inside the connect/accept item; a known
    # PI that CN does not define (41, activity identifier) is skipped too.
    data = bytes.fromhex("0d12 6301ff 0506 160102 620100 14020249 290101")
    [cn] = spdu.decode_tsdu(data)
    assert cn == Spdu(
        kind=Kind.CN,
        connect_accept_item=ConnectAcceptItem(version_number=2),
        session_user_requirements=0x0249,
    )


def test_user_data_alternatives_on_decode() -> None:
    """MIA user data arrives as PI 46 or PGI 193; RF user data in PGI 193 is taken too."""
    [_, mia] = spdu.decode_tsdu(bytes.fromhex("0200 3206 2a0131 c10175"))
    assert mia.user_data == b"u"
    [rf] = spdu.decode_tsdu(bytes.fromhex("0c06 320102 c10178"))
    assert (rf.reason_code, rf.user_data) == (2, b"x")


def test_lone_category_0() -> None:
    assert spdu.decode_tsdu(bytes.fromhex("0100")) == [Spdu(kind=Kind.GT)]
    assert spdu.decode_tsdu(bytes.fromhex("0203100101")) == [Spdu(kind=Kind.PT, token_item=1)]


def test_gt_or_pt_before_any_category_2() -> None:
    """We send the pairs ISODE expects, and accept the other category 0 SPDU too."""
    assert spdu.decode_tsdu(bytes.fromhex("01002a032a0131"))[1].kind is Kind.MAA
    assert spdu.decode_tsdu(bytes.fromhex("0200010061"))[1] == Spdu(kind=Kind.DT, user_data=b"a")


def test_ab_and_ai_share_a_code() -> None:
    assert spdu.decode_tsdu(bytes.fromhex("1903110103"))[0].kind is Kind.AB
    assert spdu.decode_tsdu(bytes.fromhex("0100 1903 320100"))[1].kind is Kind.AI
    assert spdu.decode_tsdu(bytes.fromhex("1a00"))[0].kind is Kind.AA
    assert spdu.decode_tsdu(bytes.fromhex("0200 1a00"))[1].kind is Kind.AIA


DECODE_ERRORS = [
    ("", "empty TSDU"),
    ("0d", "length missing"),
    ("0dff01", "three-octet length cut short"),
    ("0d05 1402", "runs past the TSDU"),
    ("0d03 140302", "runs past its field"),
    ("7700", "SI 119 is not an SPDU we know starting a TSDU"),
    ("0100 0d00", "SI 13 is not an SPDU we know after a category 0 SPDU"),
    ("0a00 00", "1 octets after the last SPDU"),
    ("0100 2d00 00", "1 octets after the last SPDU"),
    ("0104 10020000", "2 octets where 1 is expected"),
    ("0d03 140102", "1 octets where 2 are expected"),
    ("0100 3103 2a0178", "serial number b'x' is not 1 to 10 decimal digits"),
    ("0100 3102 2a00", "is not 1 to 10 decimal digits"),
    ("0100 1902 3200", "empty reason code"),
    ("1005 1503 000000", "3 octets where 4 are expected"),
    ("0100 1d07 2105 2903020103 ", "without old activity identifier and serial number"),
]


@pytest.mark.parametrize(("hex_", "message"), DECODE_ERRORS)
def test_decode_errors(hex_: str, message: str) -> None:
    with pytest.raises(DecodeError, match=message.replace("(", r"\(")):
        spdu.decode_tsdu(bytes.fromhex(hex_))


ENCODE_ERRORS = [
    (Spdu(kind=Kind.GT, token_item=256), "256 does not fit one octet"),
    (Spdu(kind=Kind.CN, session_user_requirements=0x10000), "does not fit two octets"),
    (Spdu(kind=Kind.MIP, serial_number=-1), "negative serial number"),
    (Spdu(kind=Kind.RF, user_data=b"x"), "RF user data needs a reason code"),
]


@pytest.mark.parametrize(("value", "message"), ENCODE_ERRORS)
def test_encode_errors(value: Spdu, message: str) -> None:
    with pytest.raises(EncodeError, match=message):
        spdu.encode_spdu(value)


# --- segmenting ----------------------------------------------------------------------------


def _join_segments(tsdus: list[bytes], kind: Kind) -> tuple[Spdu, bytes]:
    pieces = []
    for index, tsdu in enumerate(tsdus):
        unit = spdu.decode_tsdu(tsdu)[-1]
        assert unit.kind is kind
        begin = spdu.ENCLOSURE_BEGIN if index == 0 else 0
        end = spdu.ENCLOSURE_END if index == len(tsdus) - 1 else 0
        assert unit.enclosure_item == begin | end
        pieces.append(bytes(unit.user_data))
    return spdu.decode_tsdu(tsdus[0])[-1], b"".join(pieces)


@pytest.mark.parametrize("limit", [64, 100, 255, 256, 1000])
def test_dt_segments(limit: int) -> None:
    data = bytes(range(256)) * 20
    tsdus = spdu.encode_segments(Spdu(kind=Kind.DT, user_data=data), limit)
    assert all(len(t) <= limit for t in tsdus)
    assert all(t[:7] == b"\x01\x00\x01\x03\x19\x01" + t[6:7] for t in tsdus)
    assert len(tsdus) == -(-len(data) // (limit - 7))  # 7 octets of GT, DT and PI 25
    assert _join_segments(tsdus, Kind.DT)[1] == data


def test_short_dt_still_gets_an_enclosure_item() -> None:
    assert spdu.encode_segments(Spdu(kind=Kind.DT, user_data=b"z"), 100) == [
        bytes.fromhex("0100 0103 190103 7a")
    ]


@pytest.mark.parametrize("kind", [Kind.AS, Kind.MAP, Kind.FN, Kind.PT, Kind.AB])
def test_other_segments_keep_the_parameters_in_the_first(kind: Kind) -> None:
    first = {
        Kind.AS: Spdu(kind=kind, activity_identifier=b"\x02\x01\x07"),
        Kind.MAP: Spdu(kind=kind, serial_number=4),
        Kind.FN: Spdu(kind=kind, transport_disconnect=1),
        Kind.PT: Spdu(kind=kind, token_item=1),
        Kind.AB: Spdu(kind=kind, transport_disconnect=3),
    }[kind]
    data = bytes(range(250)) * 4
    tsdus = spdu.encode_segments(Spdu(**{**_fields(first), "user_data": data}), 128)
    assert all(len(t) <= 128 for t in tsdus) and len(tsdus) > 1
    head, joined = _join_segments(tsdus, kind)
    assert joined == data
    assert head == Spdu(**{**_fields(first), "enclosure_item": 1, "user_data": head.user_data})


def _fields(value: Spdu) -> dict[str, Any]:
    return {name: getattr(value, name) for name in Spdu.__dataclass_fields__}


def test_segment_errors() -> None:
    with pytest.raises(EncodeError, match="CN is not segmented"):
        spdu.encode_segments(Spdu(kind=Kind.CN), 100)
    with pytest.raises(EncodeError, match="do not fit a 7-octet TSDU"):
        spdu.encode_segments(Spdu(kind=Kind.DT, user_data=b"x"), 7)


# --- golden captures -------------------------------------------------------------------------

TPDU_HEADER = 7  # TPKT (4) and the DT TPDU header 02 f0 80 (3)


def _captured(capture: str) -> list[tuple[int, bytes]]:
    records = golden.load_tpkts(capture)
    return [
        (record["spdu_first_byte"], bytes.fromhex(record["hex"])[TPDU_HEADER:])
        for record in records
        if "spdu_first_byte" in record
    ]


@pytest.mark.parametrize("capture", golden.CAPTURES)
def test_golden_spdus_round_trip(capture: str) -> None:
    captured = _captured(capture)
    expected = {13, 14, 9, 10} if "success" in capture else {13, 12}
    assert {si for si, _ in captured} == expected
    for si, tsdu in captured:
        units = spdu.decode_tsdu(tsdu)
        assert [u.kind.si for u in units] == [si]
        assert b"".join(spdu.encode_tsdu(u) for u in units) == tsdu


def _golden(capture: str, si: int) -> Spdu:
    tsdu = next(t for s, t in _captured(capture) if s == si)
    [unit] = spdu.decode_tsdu(tsdu)
    return unit


def test_golden_cn() -> None:
    cn = _golden("x400-ping-success", 13)
    assert cn.connection_identifier == ConnectionIdentifier(
        calling_ss_user_reference=b"\x04\x08Percival",
        common_reference=b"\x17\x0d051001144852Z",
    )
    assert cn.connect_accept_item == ConnectAcceptItem(
        protocol_options=0, version_number=spdu.VERSION_2, token_setting=0
    )
    assert cn.session_user_requirements == 0x0249
    assert (cn.calling_ssap, cn.called_ssap, cn.data_overflow) == (None, None, None)
    assert len(cn.user_data) == 148 and bytes(cn.user_data[:2]) == b"\x31\x80"  # CP-type


def test_golden_ac_has_an_empty_responding_ssap() -> None:
    ac = _golden("x400-ping-success", 14)
    assert ac.called_ssap == b""
    assert ac.connection_identifier is not None
    assert ac.connection_identifier.called_ss_user_reference == b"\x04\x08Percival"
    assert ac.session_user_requirements == 0x0249 and len(ac.user_data) == 127


def test_golden_fn_and_dn() -> None:
    fn = _golden("x400-ping-success", 9)
    assert fn.transport_disconnect == spdu.TRANSPORT_RELEASED
    assert bytes(fn.user_data) == bytes.fromhex("610c300a020101a0056203800100")  # RLRQ
    dn = _golden("x400-ping-success", 10)
    assert bytes(dn.user_data) == bytes.fromhex("610c300a020101a0056303800100")  # RLRE


def test_golden_rf_reason_and_user_data() -> None:
    rf = _golden("x400-ping-refuse", 12)
    assert rf.transport_disconnect == spdu.TRANSPORT_RELEASED
    assert rf.session_user_requirements == 0x0249
    assert rf.reason_code == spdu.REFUSED_BY_USER
    assert len(rf.user_data) == 0x55 - 1 and bytes(rf.user_data[:2]) == b"\x30\x52"  # CPR


# --- random values and bytes -------------------------------------------------------------

_OCTET = st.integers(0, 255)
_SHORT = st.binary(max_size=8)
_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "connection_identifier": st.builds(
        ConnectionIdentifier,
        called_ss_user_reference=st.none() | _SHORT,
        calling_ss_user_reference=st.none() | _SHORT,
        common_reference=st.none() | _SHORT,
        additional_reference_information=st.none() | _SHORT,
    ),
    "connect_accept_item": st.builds(
        ConnectAcceptItem,
        protocol_options=st.none() | _OCTET,
        tsdu_maximum_size=st.none() | st.tuples(st.integers(0, 65535), st.integers(0, 65535)),
        version_number=st.none() | _OCTET,
        initial_serial_number=st.none() | st.integers(0, 999999),
        token_setting=st.none() | _OCTET,
    ),
    "sync_type_item": _OCTET,
    "token_item": _OCTET,
    "transport_disconnect": _OCTET,
    "session_user_requirements": st.integers(0, 65535),
    "tsdu_maximum_size": st.tuples(st.integers(0, 65535), st.integers(0, 65535)),
    "version_number": _OCTET,
    "enclosure_item": _OCTET,
    "linking_information": st.builds(
        LinkingInformation,
        connection_identifier=st.builds(
            ConnectionIdentifier,
            called_ss_user_reference=st.none() | _SHORT,
            calling_ss_user_reference=st.none() | _SHORT,
            common_reference=st.none() | _SHORT,
            additional_reference_information=st.none() | _SHORT,
        ),
        old_activity_identifier=_SHORT,
        serial_number=st.integers(0, 999999),
    ),
    "activity_identifier": _SHORT,
    "serial_number": st.integers(0, 999999),
    "reflect_parameter_values": _SHORT,
    "reason_code": _OCTET,
    "calling_ssap": _SHORT,
    "called_ssap": _SHORT,
    "data_overflow": _OCTET,
}
_CODE_OF_FIELD = {name: code for code, (name, _, _) in spdu._FIELDS.items()}


@st.composite
def spdus(draw: st.DrawFn) -> Spdu:
    kind = draw(st.sampled_from(list(Kind)))
    layout = spdu._LAYOUT[kind]
    fields: dict[str, Any] = {}
    for name, values in _VALUES.items():
        code = spdu.PI_REASON_CODE if name == "reason_code" else _CODE_OF_FIELD[name]
        if code in layout:
            fields[name] = draw(st.none() | values)
    if spdu._USER in layout or (kind is Kind.RF and fields.get("reason_code") is not None):
        fields["user_data"] = draw(st.binary(max_size=600))
    return Spdu(kind=kind, **fields)


@given(spdus())
def test_random_spdus_round_trip(value: Spdu) -> None:
    tsdu = spdu.encode_tsdu(value)
    decoded = spdu.decode_tsdu(tsdu)
    assert decoded[-1] == value
    assert b"".join(spdu.encode_tsdu(u) for u in decoded[-1:]) == tsdu


@settings(max_examples=examples(3))
@given(st.binary(max_size=64))
def test_random_bytes_raise_only_decode_errors(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        spdu.decode_tsdu(data)


@settings(max_examples=examples(3))
@given(st.data())
def test_mutated_golden_tsdus_raise_only_decode_errors(data: st.DataObject) -> None:
    tsdus = [t for c in golden.CAPTURES for _, t in _captured(c)] + [
        bytes.fromhex(h.replace(" ", "")) for _, h in TSDUS
    ]
    tsdu = bytearray(data.draw(st.sampled_from(tsdus)))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(tsdu) - 1))
        tsdu[position] = data.draw(_OCTET)
    cut = data.draw(st.integers(0, len(tsdu)))
    with contextlib.suppress(DecodeError):
        spdu.decode_tsdu(bytes(tsdu[:cut]))
