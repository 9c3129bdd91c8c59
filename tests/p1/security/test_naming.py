"""A label made from names (``x400 send --label``) against the test policy."""

from __future__ import annotations

import pytest

from p1.mts.security_label import SecurityLabel, decode_security_label, encode_security_label
from p1.security.categories import decode_categories
from p1.security.clearance import display_marking
from p1.security.naming import UnknownName, label_from_names
from tests.p1.security.policies import EXAMPLE, label, ref


def test_names_make_the_label_the_policy_encodes() -> None:
    made = label_from_names(EXAMPLE, "secret", ["GBR", "Special Access/BRAVO", "STAFF"], "NATO")
    assert made.policy == EXAMPLE.id
    assert made.classification == 4
    assert made.privacy_mark == "NATO"
    assert decode_categories(made.categories) == {ref("GBR"), ref("BRAVO"), ref("STAFF")}
    assert made.categories == label("SECRET", "GBR", "BRAVO", "STAFF").categories
    assert decode_security_label(encode_security_label(made)) == made
    assert display_marking(EXAMPLE, made) == "EXAMPLE SECRET REL TO GBR BRAVO STAFF"


def test_a_number_is_the_classification_s_value() -> None:
    assert label_from_names(EXAMPLE, "5", ["NATO"]).classification == 5
    assert label_from_names(None, "4") == SecurityLabel(classification=4)
    assert label_from_names(None, "0", privacy_mark="X") == SecurityLabel(
        classification=0, privacy_mark="X"
    )


@pytest.mark.parametrize(
    ("policy", "classification", "categories", "mark", "why"),
    [
        (EXAMPLE, "COSMIC", [], None, "classification 'COSMIC' is not in policy EXAMPLE (known: "),
        (EXAMPLE, "9", [], None, "classification '9' is not in policy EXAMPLE"),
        (EXAMPLE, "SECRET", ["GBR", "MARS"], None, "category 'MARS' is not in policy EXAMPLE"),
        (EXAMPLE, "SECRET", [], "ü", "privacy-mark"),
        (None, "SECRET", [], None, "classification 'SECRET': no security policy is configured"),
        (None, "4", ["GBR"], None, "category 'GBR': no security policy is configured"),
        (None, "257", [], None, "classification 257: not 0..256"),
    ],
)
def test_what_the_policy_does_not_define_is_named(
    policy: object, classification: str, categories: list[str], mark: str | None, why: str
) -> None:
    with pytest.raises(UnknownName) as raised:
        label_from_names(EXAMPLE if policy else None, classification, categories, mark)
    assert why in str(raised.value)
