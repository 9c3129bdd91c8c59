"""The access decision (X.411 8.5.9 and the SPIF's rules), a table of cases and its
properties, and the display marking."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p1 import ber
from p1.mts.security_label import SecurityCategory, SecurityLabel
from p1.security.categories import TAG_TYPE_OIDS, decode_categories, encode_categories
from p1.security.clearance import (
    Clearance,
    clearance_up_to,
    decide,
    display_marking,
    read_label,
)
from p1.security.spif import CategoryRef, Classification, TagType
from tests.p1.security.policies import EXAMPLE, PARTNER, label, ref
from tests.profiles import examples


def cleared(classification: str, *categories: str) -> Clearance:
    found = EXAMPLE.classification_named(classification)
    assert found is not None
    return clearance_up_to(EXAMPLE, found, (ref(c) for c in categories))


SECRET_GBR = cleared("SECRET", "GBR")

CASES = [
    # (label, clearance, allowed, reason)
    (label("SECRET"), SECRET_GBR, True, "cleared for SECRET"),
    (label("CONFIDENTIAL"), SECRET_GBR, True, "cleared for CONFIDENTIAL"),
    (label("TOP SECRET", "GBR"), SECRET_GBR, False, "not cleared for TOP SECRET"),
    (label("SECRET"), cleared("CONFIDENTIAL", "GBR"), False, "not cleared for SECRET"),
    (label("SECRET"), None, False, "no clearance"),
    # restrictive: every one held
    (label("SECRET", "ALPHA"), SECRET_GBR, False, "not cleared for ALPHA"),
    (label("SECRET", "ALPHA", "BRAVO"), cleared("SECRET", "ALPHA"), False, "not cleared for BRAVO"),
    (
        label("SECRET", "ALPHA", "BRAVO"),
        cleared("SECRET", "ALPHA", "BRAVO"),
        True,
        "cleared for SECRET",
    ),
    # permissive: one of the tag's held
    (label("SECRET", "GBR", "USA"), SECRET_GBR, True, "cleared for SECRET"),
    (label("SECRET", "USA", "FRA"), SECRET_GBR, False, "not cleared for any of Releasable To"),
    # enumerated restrictive and permissive
    (label("SECRET", "STAFF"), SECRET_GBR, False, "not cleared for STAFF"),
    (label("SECRET", "STAFF"), cleared("SECRET", "STAFF"), True, "cleared for SECRET"),
    (label("SECRET", "KFOR", "ISAF"), cleared("SECRET", "ISAF"), True, "cleared for SECRET"),
    (
        label("SECRET", "KFOR"),
        cleared("SECRET", "ISAF"),
        False,
        "not cleared for any of Operations",
    ),
    # informative: decides nothing
    (label("SECRET", "PERSONAL"), SECRET_GBR, True, "cleared for SECRET"),
    # the SPIF's rules make a label invalid for every clearance
    (
        label("UNCLASSIFIED", "ALPHA"),
        cleared("SECRET", "ALPHA"),
        False,
        "ALPHA is excluded from UNCLASSIFIED",
    ),
    (
        label("SECRET", "ALPHA", "EXERCISE"),
        cleared("SECRET", "ALPHA", "EXERCISE"),
        False,
        "EXERCISE excludes ALPHA",
    ),
    (
        label("SECRET", "CRYPTO"),
        cleared("SECRET", "CRYPTO", "BRAVO"),
        False,
        "CRYPTO requires all of its required categories",
    ),
    (
        label("SECRET", "CRYPTO", "BRAVO"),
        cleared("SECRET", "CRYPTO", "BRAVO"),
        True,
        "cleared for SECRET",
    ),
    (
        label("TOP SECRET"),
        cleared("TOP SECRET"),
        False,
        "TOP SECRET requires oneOrMore of its required categories",
    ),
    (label("TOP SECRET", "NATO"), cleared("TOP SECRET", "NATO"), True, "cleared for TOP SECRET"),
    # policies
    (
        SecurityLabel(policy="1.2.3", classification=4),
        SECRET_GBR,
        False,
        "the label is of policy 1.2.3, not 1.3.6.1.4.1.32473.1",
    ),
    (SecurityLabel(classification=4), SECRET_GBR, True, "cleared for SECRET"),
    (SecurityLabel(), SECRET_GBR, True, "cleared for UNMARKED"),
    (SecurityLabel(policy=PARTNER, classification=40), SECRET_GBR, True, "cleared for SECRET"),
    (
        SecurityLabel(policy=PARTNER, classification=40),
        cleared("CONFIDENTIAL"),
        False,
        "not cleared for SECRET",
    ),
    (
        SecurityLabel(policy=PARTNER, classification=4),
        SECRET_GBR,
        False,
        "classification 4 of policy 1.3.6.1.4.1.32473.2 has no equivalent",
    ),
    (
        SecurityLabel(
            policy=PARTNER,
            classification=40,
            categories=encode_categories(
                [CategoryRef("1.3.6.1.4.1.32473.2.1", TagType.PERMISSIVE, 7)]
            ),
        ),
        SECRET_GBR,
        True,
        "cleared for SECRET",
    ),
    (
        SecurityLabel(
            policy=PARTNER,
            classification=40,
            categories=encode_categories(
                [CategoryRef("1.3.6.1.4.1.32473.2.1", TagType.PERMISSIVE, 7)]
            ),
        ),
        cleared("SECRET", "USA"),
        False,
        "not cleared for any of Releasable To",
    ),
    (
        label("SECRET"),
        Clearance(policy="1.2.3", classes=frozenset({4})),
        False,
        "the clearance is of policy 1.2.3",
    ),
    # what the policy does not define
    (
        SecurityLabel(policy=EXAMPLE.id, classification=9),
        SECRET_GBR,
        False,
        "classification 9: policy EXAMPLE defines none such",
    ),
    (
        SecurityLabel(
            policy=EXAMPLE.id,
            classification=4,
            categories=encode_categories(
                [CategoryRef("1.3.6.1.4.1.32473.1.1", TagType.PERMISSIVE, 9)]
            ),
        ),
        SECRET_GBR,
        False,
        "category 9 (permissive) of tag set 1.3.6.1.4.1.32473.1.1 is not in policy EXAMPLE",
    ),
    (
        SecurityLabel(
            policy=EXAMPLE.id,
            classification=4,
            categories=(SecurityCategory("1.2.3", b"\x05\x00"),),
        ),
        SECRET_GBR,
        False,
        "its categories cannot be read (security-categories[0]: "
        "category type 1.2.3 is not one a SPIF defines)",
    ),
]


@pytest.mark.parametrize(("label_", "clearance", "allowed", "reason"), CASES)
def test_decisions(
    label_: SecurityLabel, clearance: Clearance | None, allowed: bool, reason: str
) -> None:
    decision = decide(EXAMPLE, label_, clearance)
    assert (decision.allowed, decision.reason) == (allowed, reason)


# --- properties --------------------------------------------------------------------------

_CATEGORIES = sorted((c.ref for c in EXAMPLE.categories()), key=lambda r: r.key)
_CLASSES = EXAMPLE.classifications

category_sets = st.frozensets(st.sampled_from(_CATEGORIES))
policy_labels = st.builds(
    lambda c, refs: SecurityLabel(
        policy=EXAMPLE.id, classification=c.lacv, categories=encode_categories(refs)
    ),
    st.sampled_from(_CLASSES),
    category_sets,
)
clearances = st.builds(
    lambda classes, refs: Clearance(policy=EXAMPLE.id, classes=classes, categories=refs),
    st.frozensets(st.sampled_from([c.lacv for c in _CLASSES])),
    category_sets,
)


@settings(max_examples=examples(2))
@given(policy_labels, clearances, category_sets, st.sampled_from(_CLASSES))
def test_more_in_a_clearance_never_turns_allow_into_deny(
    label_: SecurityLabel,
    clearance: Clearance,
    more: frozenset[CategoryRef],
    higher: Classification,
) -> None:
    wider = Clearance(
        policy=clearance.policy,
        classes=clearance.classes | {higher.lacv},
        categories=clearance.categories | more,
    )
    if decide(EXAMPLE, label_, clearance).allowed:
        assert decide(EXAMPLE, label_, wider).allowed


@settings(max_examples=examples(2))
@given(policy_labels)
def test_a_valid_label_is_allowed_to_the_clearance_made_of_it(label_: SecurityLabel) -> None:
    if not _valid(label_):
        assert not decide(EXAMPLE, label_, _everything()).allowed
        return
    read = read_label(EXAMPLE, label_)
    own = clearance_up_to(EXAMPLE, read.classification, read.categories)
    assert decide(EXAMPLE, label_, own).allowed


@settings(max_examples=examples(2))
@given(policy_labels, st.sampled_from(_CLASSES), st.sampled_from(_CLASSES))
def test_classification_dominance_follows_the_hierarchy(
    label_: SecurityLabel, low: Classification, high: Classification
) -> None:
    """A clearance up to a classification dominates exactly the ones not above it: the
    order is reflexive and transitive because it is the hierarchy's."""
    if not _valid(label_):
        return
    read = read_label(EXAMPLE, label_)
    up_to = clearance_up_to(EXAMPLE, high, _CATEGORIES)
    allowed = decide(EXAMPLE, label_, up_to).allowed
    assert allowed == (read.classification.hierarchy <= high.hierarchy)
    if low.hierarchy <= high.hierarchy:
        lower = clearance_up_to(EXAMPLE, low, _CATEGORIES)
        assert lower.classes <= up_to.classes


def _everything() -> Clearance:
    return Clearance(
        policy=EXAMPLE.id,
        classes=frozenset(c.lacv for c in _CLASSES),
        categories=frozenset(_CATEGORIES),
    )


def _valid(label_: SecurityLabel) -> bool:
    return decide(EXAMPLE, label_, _everything()).allowed


# --- category encodings -----------------------------------------------------------------


def test_categories_are_written_in_der() -> None:
    assert encode_categories([ref("NATO"), ref("USA"), ref("ISAF"), ref("KFOR")]) == (
        # PermissiveTag: tagName 1.3.6.1.4.1.32473.1.1, attributeFlags '0101'B
        SecurityCategory(
            TAG_TYPE_OIDS[TagType.PERMISSIVE],
            bytes.fromhex("3010060a2b0601040181fd590101 03020450"),
        ),
        # EnumeratedTag: tagName 1.3.6.1.4.1.32473.1.3, attributeList {10, 11}, sorted
        SecurityCategory(
            TAG_TYPE_OIDS[TagType.ENUMERATED_PERMISSIVE],
            bytes.fromhex("3014060a2b0601040181fd590103 3106 02010a 02010b"),
        ),
    )


@pytest.mark.parametrize(
    ("category", "value_hex", "refs"),
    [
        # PermissiveTag: tagName 1.3.6.1.4.1.32473.1.1, attributeFlags '0101'B
        (
            TAG_TYPE_OIDS[TagType.PERMISSIVE],
            "3010060a2b0601040181fd590101 03020450",
            {ref("USA"), ref("NATO")},
        ),
        # the same bits with trailing zero bits, in a constructed BIT STRING, indefinite
        (
            TAG_TYPE_OIDS[TagType.PERMISSIVE],
            "3080060a2b0601040181fd590101 2380 03020050 0000 0000",
            {ref("USA"), ref("NATO")},
        ),
        # EnumeratedTag: tagName 1.3.6.1.4.1.32473.1.3, attributeList {11, 10}, any order
        (
            TAG_TYPE_OIDS[TagType.ENUMERATED_PERMISSIVE],
            "3014060a2b0601040181fd590103 3106 02010b 02010a",
            {ref("KFOR"), ref("ISAF")},
        ),
        # EnumeratedTag of the restrictive type: the same tag set, another tag
        (
            TAG_TYPE_OIDS[TagType.ENUMERATED_RESTRICTIVE],
            "3011060a2b0601040181fd590103 3103 020101",
            {ref("STAFF")},
        ),
    ],
)
def test_categories_read_in_any_form(category: str, value_hex: str, refs: set[CategoryRef]) -> None:
    assert decode_categories([SecurityCategory(category, bytes.fromhex(value_hex))]) == refs


@settings(max_examples=examples(2))
@given(category_sets)
def test_categories_round_trip(refs: frozenset[CategoryRef]) -> None:
    assert decode_categories(encode_categories(refs)) == refs


# --- display marking --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label_", "marking"),
    [
        (label("SECRET"), "EXAMPLE SECRET"),
        (label("TOP SECRET", "NATO", "GBR"), "EXAMPLE TOP SECRET REL TO GBR, NATO"),
        (label("SECRET", "ALPHA", "BRAVO", "KFOR"), "EXAMPLE SECRET ALPHA/BRAVO KFOR"),
        (label("SECRET", "EXERCISE"), "EXAMPLE SECRET EXERCISE ONLY"),
        (
            SecurityLabel(policy="1.2.3", classification=4),
            "(not valid in policy EXAMPLE: the label is of policy 1.2.3, not 1.3.6.1.4.1.32473.1)",
        ),
    ],
)
def test_display_marking(label_: SecurityLabel, marking: str) -> None:
    assert display_marking(EXAMPLE, label_) == marking


def test_a_bit_map_beyond_the_limit_is_refused() -> None:
    value = ber.constructed(
        ber.SEQUENCE,
        (ber.oid_tlv("1.2.3"), ber.tlv(ber.BIT_STRING, b"\x00" + bytes(8193))),
    )
    reason = decide(
        EXAMPLE,
        SecurityLabel(categories=(SecurityCategory(TAG_TYPE_OIDS[TagType.PERMISSIVE], value),)),
        _everything(),
    ).reason
    assert reason.startswith("its categories cannot be read") and "65544 bits" in reason
