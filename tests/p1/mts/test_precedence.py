"""STANAG 4406 precedence, X.411 priority, priority-level-qualifier and DSCP mapping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p1.mts.precedence import (
    DEFAULT_TABLE,
    PRIORITY_LEVEL_QUALIFIER_OID,
    InvalidDscpError,
    InvalidMtsLevelError,
    InvalidTableError,
    LevelQualifier,
    Precedence,
    PrecedenceError,
    PrecedenceTable,
    Priority,
    UnknownPrecedenceError,
    dscp_name,
    parse_dscp,
    parse_precedence,
)

# --- the wire values ------------------------------------------------------------------


def test_enumeration_values_are_the_standards() -> None:
    assert [(p.name, p.value) for p in Precedence] == [
        ("DEFERRED", 0),
        ("ROUTINE", 1),
        ("PRIORITY", 2),
        ("IMMEDIATE", 3),
        ("FLASH", 4),
        ("OVERRIDE", 5),
    ]
    # X.411 Priority: not in order of urgency.
    assert (Priority.NORMAL, Priority.NON_URGENT, Priority.URGENT) == (0, 1, 2)
    assert (LevelQualifier.LOW, LevelQualifier.HIGH) == (0, 1)
    assert PRIORITY_LEVEL_QUALIFIER_OID == "1.3.26.0.4406.0.8.0"


def test_labels() -> None:
    assert [p.label for p in Precedence] == [
        "deferred",
        "routine",
        "priority",
        "immediate",
        "flash",
        "override",
    ]
    assert [p.label for p in Priority] == ["normal", "non-urgent", "urgent"]
    assert [q.label for q in LevelQualifier] == ["low", "high"]


def test_ordering_helpers() -> None:
    assert Precedence.FLASH > Precedence.IMMEDIATE > Precedence.ROUTINE
    assert Precedence.most_urgent_first()[0] is Precedence.OVERRIDE
    assert Precedence.most_urgent_first()[-1] is Precedence.DEFERRED
    mixed = [Precedence.ROUTINE, Precedence.FLASH, Precedence.DEFERRED, Precedence.IMMEDIATE]
    assert sorted(mixed, key=Precedence.sort_key) == [
        Precedence.FLASH,
        Precedence.IMMEDIATE,
        Precedence.ROUTINE,
        Precedence.DEFERRED,
    ]
    assert sorted(Priority, key=lambda p: p.rank) == [
        Priority.NON_URGENT,
        Priority.NORMAL,
        Priority.URGENT,
    ]


# --- the default table ----------------------------------------------------------------

DEFAULT_ROWS = [
    (Precedence.DEFERRED, Priority.NON_URGENT, LevelQualifier.LOW, 0),
    (Precedence.ROUTINE, Priority.NON_URGENT, LevelQualifier.HIGH, 0),
    (Precedence.PRIORITY, Priority.NORMAL, LevelQualifier.LOW, 8),
    (Precedence.IMMEDIATE, Priority.NORMAL, LevelQualifier.HIGH, 16),
    (Precedence.FLASH, Priority.URGENT, LevelQualifier.LOW, 24),
    (Precedence.OVERRIDE, Priority.URGENT, LevelQualifier.HIGH, 24),
]


@pytest.mark.parametrize(("precedence", "priority", "qualifier", "dscp"), DEFAULT_ROWS)
def test_default_table(
    precedence: Precedence, priority: Priority, qualifier: LevelQualifier, dscp: int
) -> None:
    assert DEFAULT_TABLE.to_mts(precedence) == (priority, qualifier)
    assert DEFAULT_TABLE.from_mts(priority, qualifier) is precedence
    assert DEFAULT_TABLE.dscp(precedence) == dscp


@pytest.mark.parametrize("precedence", list(Precedence))
def test_every_level_round_trips(precedence: Precedence) -> None:
    assert DEFAULT_TABLE.from_mts(*DEFAULT_TABLE.to_mts(precedence)) is precedence


def test_plain_ints_from_the_wire_are_accepted() -> None:
    assert DEFAULT_TABLE.from_mts(2, 1) is Precedence.OVERRIDE  # type: ignore[arg-type]
    assert DEFAULT_TABLE.to_mts(3) == (Priority.NORMAL, LevelQualifier.HIGH)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("priority", "expected"),
    [
        (Priority.NON_URGENT, Precedence.ROUTINE),
        (Priority.NORMAL, Precedence.PRIORITY),
        (Priority.URGENT, Precedence.FLASH),
    ],
)
def test_without_qualifier(priority: Priority, expected: Precedence) -> None:
    assert DEFAULT_TABLE.from_mts(priority, None) is expected


def test_from_mts_rejects_values_outside_the_enumerations() -> None:
    with pytest.raises(InvalidMtsLevelError) as info:
        DEFAULT_TABLE.from_mts(3, None)  # type: ignore[arg-type]
    assert str(info.value) == "priority 3 is not one of 0 (normal), 1 (non-urgent), 2 (urgent)"
    with pytest.raises(InvalidMtsLevelError) as info:
        DEFAULT_TABLE.from_mts(Priority.URGENT, 7)  # type: ignore[arg-type]
    assert str(info.value) == "priority-level-qualifier 7 is not one of 0 (low), 1 (high)"
    with pytest.raises(UnknownPrecedenceError, match=r"precedence 6 is not one of"):
        DEFAULT_TABLE.to_mts(6)  # type: ignore[arg-type]
    with pytest.raises(UnknownPrecedenceError):
        DEFAULT_TABLE.dscp(True)  # type: ignore[arg-type]


def test_table_is_a_value() -> None:
    assert PrecedenceTable() == DEFAULT_TABLE
    assert hash(PrecedenceTable()) == hash(DEFAULT_TABLE)
    with pytest.raises(TypeError):
        DEFAULT_TABLE.dscps[Precedence.FLASH] = 46  # type: ignore[index]


# --- overrides ------------------------------------------------------------------------


def test_with_dscp_overrides_only_the_given_levels() -> None:
    table = DEFAULT_TABLE.with_dscp({Precedence.FLASH: 46, Precedence.OVERRIDE: parse_dscp("EF")})
    assert table.dscp(Precedence.FLASH) == 46
    assert table.dscp(Precedence.OVERRIDE) == 46
    assert table.dscp(Precedence.IMMEDIATE) == 16
    assert DEFAULT_TABLE.dscp(Precedence.FLASH) == 24  # the original is unchanged
    assert table != DEFAULT_TABLE
    assert table.to_mts(Precedence.FLASH) == DEFAULT_TABLE.to_mts(Precedence.FLASH)


@pytest.mark.parametrize("bad", [-1, 64, True, "46"])
def test_with_dscp_rejects_bad_values(bad: object) -> None:
    with pytest.raises(InvalidDscpError) as info:
        DEFAULT_TABLE.with_dscp({Precedence.FLASH: bad})  # type: ignore[dict-item]
    assert str(info.value).startswith(f"flash DSCP {bad!r} is out of range: accepted CS0..CS7")


def test_with_mts_swaps_pairs_and_stays_invertible() -> None:
    table = DEFAULT_TABLE.with_mts(
        {
            Precedence.FLASH: (Priority.URGENT, LevelQualifier.HIGH),
            Precedence.OVERRIDE: (Priority.URGENT, LevelQualifier.LOW),
        }
    )
    assert table.to_mts(Precedence.OVERRIDE) == (Priority.URGENT, LevelQualifier.LOW)
    for precedence in Precedence:
        assert table.from_mts(*table.to_mts(precedence)) is precedence


def test_with_mts_rejects_two_levels_on_one_pair() -> None:
    with pytest.raises(InvalidTableError) as info:
        DEFAULT_TABLE.with_mts({Precedence.FLASH: (Priority.URGENT, LevelQualifier.HIGH)})
    assert str(info.value) == (
        "flash and override both map to (urgent, high); each precedence needs its own pair"
    )


def test_unqualified_must_agree_with_the_pairs() -> None:
    with pytest.raises(InvalidTableError) as info:
        DEFAULT_TABLE.with_mts(
            {},
            unqualified={
                Priority.NON_URGENT: Precedence.ROUTINE,
                Priority.NORMAL: Precedence.FLASH,
                Priority.URGENT: Precedence.FLASH,
            },
        )
    assert str(info.value) == ("unqualified[normal] = flash, but flash is sent as priority urgent")


def test_incomplete_table_is_rejected() -> None:
    with pytest.raises(InvalidTableError) as info:
        PrecedenceTable(dscps={Precedence.DEFERRED: 0, 9: 0})  # type: ignore[dict-item]
    assert "missing routine, priority, immediate, flash, override" in str(info.value)
    assert "unexpected 9" in str(info.value)


def test_bad_pair_is_rejected() -> None:
    mts = dict(DEFAULT_TABLE.mts)
    mts[Precedence.ROUTINE] = (Priority.NORMAL,)  # type: ignore[assignment]
    with pytest.raises(InvalidTableError, match=r"mts\[routine\] = \(<Priority.NORMAL: 0>,\)"):
        PrecedenceTable(mts=mts)
    mts[Precedence.ROUTINE] = (Priority.NORMAL, 2)  # type: ignore[assignment]
    with pytest.raises(InvalidMtsLevelError, match=r"mts\[routine\] qualifier 2 is not one of"):
        PrecedenceTable(mts=mts)


# --- parsing --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("flash", Precedence.FLASH),
        ("FLASH", Precedence.FLASH),
        (" Immediate ", Precedence.IMMEDIATE),
        ("override", Precedence.OVERRIDE),
        ("0", Precedence.DEFERRED),
        ("5", Precedence.OVERRIDE),
    ],
)
def test_parse_precedence(text: str, expected: Precedence) -> None:
    assert parse_precedence(text) is expected


@pytest.mark.parametrize("text", ["", "urgent", "6", "16", "-1", "flash!", "٣"])
def test_parse_precedence_errors(text: str) -> None:
    with pytest.raises(UnknownPrecedenceError) as info:
        parse_precedence(text)
    assert str(info.value) == (
        f"precedence {text!r} is not one of deferred (0), routine (1), priority (2), "
        "immediate (3), flash (4), override (5)"
    )
    assert isinstance(info.value, ValueError)


@given(st.sampled_from(list(Precedence)))
def test_parse_precedence_round_trips_label_and_value(precedence: Precedence) -> None:
    assert parse_precedence(precedence.label) is precedence
    assert parse_precedence(str(int(precedence))) is precedence


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("CS0", 0),
        ("cs1", 8),
        ("CS7", 56),
        ("EF", 46),
        ("ef", 46),
        ("AF11", 10),
        ("AF21", 18),
        ("AF31", 26),
        ("AF41", 34),
        ("AF43", 38),
        ("af12", 12),
        ("0", 0),
        ("63", 63),
        (" 46 ", 46),
    ],
)
def test_parse_dscp(text: str, expected: int) -> None:
    assert parse_dscp(text) == expected


@pytest.mark.parametrize("text", ["", "CS8", "AF14", "AF51", "AF10", "64", "-1", "0x2e", "EF1"])
def test_parse_dscp_errors(text: str) -> None:
    with pytest.raises(InvalidDscpError) as info:
        parse_dscp(text)
    message = str(info.value)
    assert repr(text) in message
    assert "CS0..CS7, EF, AF11..AF43" in message and "0..63" in message
    assert isinstance(info.value, PrecedenceError)


@given(st.integers(min_value=0, max_value=63))
def test_dscp_name_round_trips(value: int) -> None:
    assert parse_dscp(dscp_name(value)) == value


def test_dscp_names() -> None:
    assert [dscp_name(v) for v in (0, 8, 24, 46, 34, 1)] == ["CS0", "CS1", "CS3", "EF", "AF41", "1"]
    with pytest.raises(InvalidDscpError):
        dscp_name(64)
