"""The test policy (example-policy.xml, written for these tests) and labels in it."""

from __future__ import annotations

from pathlib import Path

from p1.mts.security_label import SecurityLabel
from p1.security.categories import encode_categories
from p1.security.spif import CategoryRef, SecurityPolicy, parse_spif

EXAMPLE_SPIF = Path(__file__).with_name("example-policy.xml")
EXAMPLE = parse_spif(EXAMPLE_SPIF.read_bytes(), EXAMPLE_SPIF.name)
PARTNER = "1.3.6.1.4.1.32473.2"


def ref(name: str, policy: SecurityPolicy = EXAMPLE) -> CategoryRef:
    """The category called ``name`` (unique in the test policy)."""
    (category,) = policy.categories_named(name)
    return category.ref


def label(classification: str, *categories: str, policy: SecurityPolicy = EXAMPLE) -> SecurityLabel:
    """A label of the test policy with these classification and categories, by name."""
    found = policy.classification_named(classification)
    assert found is not None, classification
    return SecurityLabel(
        policy=policy.id,
        classification=found.lacv,
        categories=encode_categories(ref(c, policy) for c in categories),
    )
