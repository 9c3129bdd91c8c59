"""The Open XML SPIF reader: what it reads of a policy, and the errors of a bad one."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from p1.security.spif import (
    CategoryGroup,
    CategoryRef,
    Operation,
    Qualifiers,
    SpifError,
    TagType,
    parse_spif,
)
from tests.p1.security.policies import EXAMPLE, EXAMPLE_SPIF, PARTNER

RELEASABILITY = "1.3.6.1.4.1.32473.1.1"
SPECIAL = "1.3.6.1.4.1.32473.1.2"
HANDLING = "1.3.6.1.4.1.32473.1.3"


def test_the_policy_and_its_classifications() -> None:
    assert (EXAMPLE.name, EXAMPLE.id) == ("EXAMPLE", "1.3.6.1.4.1.32473.1")
    assert [(c.name, c.lacv, c.hierarchy) for c in EXAMPLE.classifications] == [
        ("UNMARKED", 0, 0),
        ("UNCLASSIFIED", 1, 1),
        ("RESTRICTED", 2, 2),
        ("CONFIDENTIAL", 3, 3),
        ("SECRET", 4, 4),
        ("TOP SECRET", 5, 5),
    ]
    assert EXAMPLE.equivalent_policies == (("PARTNER", PARTNER),)
    secret = EXAMPLE.classification_named("secret")
    assert secret is not None and secret.decrypt_equivalents == {(PARTNER, 40)}
    top = EXAMPLE.classification(5)
    assert top is not None
    assert [(r.operation, r.groups) for r in top.required] == [
        (
            Operation.ONE_OR_MORE,
            (CategoryGroup(tag_set=RELEASABILITY, tag_type=TagType.PERMISSIVE, lacv=None),),
        )
    ]


def test_tag_sets_tags_and_their_types() -> None:
    shape = [
        (
            s.id,
            s.name,
            [(t.name, t.tag_type, [(c.name, c.ref.lacv) for c in t.categories]) for t in s.tags],
        )
        for s in EXAMPLE.tag_sets
    ]
    assert shape == [
        (
            RELEASABILITY,
            "Releasability",
            [
                (
                    "Releasable To",
                    TagType.PERMISSIVE,
                    [("GBR", 0), ("USA", 1), ("FRA", 2), ("NATO", 3)],
                ),
            ],
        ),
        (
            SPECIAL,
            "Special Access",
            [
                (
                    "Compartments",
                    TagType.RESTRICTIVE,
                    [("ALPHA", 0), ("BRAVO", 1), ("EXERCISE", 5)],
                ),
            ],
        ),
        (
            HANDLING,
            "Handling",
            [
                ("Handling", TagType.ENUMERATED_RESTRICTIVE, [("STAFF", 1), ("CRYPTO", 2)]),
                ("Operations", TagType.ENUMERATED_PERMISSIVE, [("KFOR", 10), ("ISAF", 11)]),
                ("Notes", TagType.INFORMATIVE, [("PERSONAL", 1)]),
            ],
        ),
    ]


def test_category_rules_markings_and_equivalents() -> None:
    (alpha,) = EXAMPLE.categories_named("Special Access/ALPHA")
    assert alpha.excluded_classes == {0, 1}
    (exercise,) = EXAMPLE.categories_named("special access/compartments/exercise")
    assert exercise.excluded == (
        CategoryGroup(tag_set=SPECIAL, tag_type=TagType.RESTRICTIVE, lacv=0),
    )
    assert exercise.marking is not None and exercise.marking.phrase == "EXERCISE ONLY"
    (gbr,) = EXAMPLE.categories_named("GBR")
    assert gbr.decrypt_equivalents == {
        (PARTNER, CategoryRef("1.3.6.1.4.1.32473.2.1", TagType.PERMISSIVE, 7))
    }
    tag = EXAMPLE.tag_of(gbr.ref)
    assert tag is not None and tag.qualifiers == Qualifiers(prefix="REL TO ", separator=", ")
    assert EXAMPLE.qualifiers == Qualifiers(separator=" ")


def test_a_spif_without_the_namespace_reads_the_same() -> None:
    text = EXAMPLE_SPIF.read_text().replace(' xmlns="http://www.xmlspif.org/spif"', "")
    assert parse_spif(text.encode(), "plain.xml") == replace(EXAMPLE, source="plain.xml")


_ONE_CLASS = '<securityClassification name="U" lacv="1" hierarchy="0"/>'


def _spif(classes: str = _ONE_CLASS, tag_sets: str = "", head: str = "") -> bytes:
    return (
        f'{head}<SPIF><securityPolicyId name="P" id="1.2.3"/>'
        f"<securityClassifications>{classes}"
        f"</securityClassifications><securityCategoryTagSets>{tag_sets}</securityCategoryTagSets></SPIF>"
    ).encode()


def _tag_set(categories: str, tag_type: str = 'tagType="restrictive"') -> str:
    return (
        '<securityCategoryTagSet name="S" id="1.2.3.1">'
        f'<securityCategoryTag name="T" {tag_type}>{categories}</securityCategoryTag>'
        "</securityCategoryTagSet>"
    )


def _a_category(inner: str) -> str:
    return f'<tagCategory name="A" lacv="0">{inner}</tagCategory>'


LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE SPIF [<!ENTITY a "aaaaaaaaaa">'
    '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "bad.xml: not well-formed XML"),
        (b"<SPIF><securityPolicyId", "bad.xml: not well-formed XML"),
        (b"<policy/>", "bad.xml: the root element is policy, not SPIF"),
        (
            _spif(head=LAUGHS),
            "bad.xml: a document type declaration (<!DOCTYPE SPIF>) is not allowed",
        ),
        (b"<SPIF/>", "bad.xml: SPIF: it has no securityPolicyId"),
        (
            _spif().replace(b'id="1.2.3"', b'id="one"'),
            "bad.xml: securityPolicyId 'P': id 'one' is not an object identifier",
        ),
        (
            _spif(classes='<securityClassification name="U" lacv="-1" hierarchy="0"/>'),
            "bad.xml: securityClassification 'U': lacv '-1' is not a number 0 or more",
        ),
        (
            _spif(classes='<securityClassification name="U" hierarchy="0"/>'),
            "bad.xml: securityClassification 'U': the lacv attribute is missing",
        ),
        (
            _spif(
                classes='<securityClassification name="U" lacv="1" hierarchy="0"/>'
                '<securityClassification name="S" lacv="1" hierarchy="1"/>'
            ),
            "bad.xml: securityClassification 'S': lacv 1 is used twice",
        ),
        (
            _spif(tag_sets=_tag_set(_a_category("<excludedClass>SECRET</excludedClass>"))),
            "bad.xml: securityCategoryTag S/T tagCategory 'A' excludedClass: "
            "'SECRET' is no classification",
        ),
        (
            _spif(tag_sets=_tag_set('<tagCategory name="A" lacv="0"/>', 'tagType="secret"')),
            "bad.xml: securityCategoryTag S/T: tagType 'secret' is not restrictive, "
            "permissive, enumerated or tagType7",
        ),
        (
            _spif(tag_sets=_tag_set('<tagCategory name="A" lacv="0"/>', 'tagType="enumerated"')),
            "bad.xml: securityCategoryTag S/T: the enumType attribute is missing",
        ),
        (
            _spif(
                tag_sets=_tag_set(
                    '<tagCategory name="A" lacv="0"/><tagCategory name="B" lacv="0"/>'
                )
            ),
            "bad.xml: securityCategoryTag S/T tagCategory 'B': lacv used twice",
        ),
        (
            _spif(
                tag_sets=_tag_set(
                    _a_category('<excludedCategory tagSetRef="X" tagType="restrictive" lacv="1"/>')
                )
            ),
            "bad.xml: securityCategoryTag S/T tagCategory 'A' excludedCategory: "
            "tagSetRef 'X' is no securityCategoryTagSet",
        ),
        (
            _spif(
                tag_sets=_tag_set(
                    _a_category('<excludedCategory tagSetRef="S" tagType="restrictive" lacv="9"/>')
                )
            ),
            "bad.xml: tagCategory 'A': it refers to lacv 9 (restrictive) of tag set 1.2.3.1, "
            "which has no such category",
        ),
        (
            _spif(tag_sets=_tag_set(_a_category('<requiredCategory operation="some"/>'))),
            "bad.xml: securityCategoryTag S/T tagCategory 'A' requiredCategory: "
            "operation 'some' is not onlyOne, oneOrMore or all",
        ),
        (
            _spif(
                classes='<securityClassification name="U" lacv="1" hierarchy="0">'
                '<equivalentClassification policyRef="Q" lacv="1" applied="both"/>'
                "</securityClassification>"
            ),
            "bad.xml: securityClassification 'U' equivalentClassification: "
            "policyRef 'Q' is no equivalentPolicy",
        ),
    ],
)
def test_a_bad_spif_is_refused_naming_file_element_and_value(data: bytes, message: str) -> None:
    with pytest.raises(SpifError, match=f"^{re.escape(message)}"):
        parse_spif(data, "bad.xml")


def test_an_entity_reference_without_a_declaration_is_not_expanded() -> None:
    with pytest.raises(SpifError, match=r"^bad\.xml: not well-formed XML \(undefined entity"):
        parse_spif(_spif().replace(b'name="P"', b'name="&x;"'), "bad.xml")
