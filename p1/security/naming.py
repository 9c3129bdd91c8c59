"""A security label made from the names a user gives (``x400 send --label SECRET
--category GBR``): the classification and categories looked up in the policy (the
SPIF), the label written as X.411 clause 8.5.9 SecurityLabel with the policy's
identifier, the classification's LACV and the categories in the SPIF's tag encodings
(ACP 145(A), :mod:`p1.security.categories`).

A classification given as a number is taken as that LACV: under a policy it must be one
of the policy's; without a policy the label has only that classification (and the
privacy mark), and no category can be named.

Public API::

    label_from_names(policy, classification, categories=(), privacy_mark=None)
        -> SecurityLabel                                   UnknownName
"""

from __future__ import annotations

from collections.abc import Iterable

from p1.errors import EncodeError
from p1.mts.security_label import (
    UB_INTEGER_OPTIONS,
    SecurityLabel,
    encode_security_label,
)
from p1.security.categories import encode_categories
from p1.security.spif import Category, CategoryRef, SecurityPolicy

__all__ = ["UnknownName", "label_from_names"]


class UnknownName(ValueError):
    """A name the policy does not define (or defines more than once), or a label that
    cannot be written: the message names it."""


def label_from_names(
    policy: SecurityPolicy | None,
    classification: str,
    categories: Iterable[str] = (),
    privacy_mark: str | None = None,
) -> SecurityLabel:
    """The label these names make under ``policy`` (None: no policy configured)."""
    names = tuple(categories)
    if policy is None:
        label = _without_policy(classification, names, privacy_mark)
    else:
        label = SecurityLabel(
            policy=policy.id,
            classification=_classification(policy, classification),
            privacy_mark=privacy_mark,
            categories=encode_categories(_category(policy, name) for name in names),
        )
    try:
        encode_security_label(label)
    except EncodeError as error:
        raise UnknownName(str(error)) from None
    return label


def _without_policy(
    classification: str, categories: tuple[str, ...], privacy_mark: str | None
) -> SecurityLabel:
    if not _is_number(classification):
        raise UnknownName(
            f"classification {classification!r}: no security policy is configured, so "
            "only a number (the classification's value) can be given"
        )
    if categories:
        raise UnknownName(
            f"category {categories[0]!r}: no security policy is configured to define it"
        )
    return SecurityLabel(classification=_number(classification), privacy_mark=privacy_mark)


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _number(text: str) -> int:
    value = int(text)
    if value > UB_INTEGER_OPTIONS:
        raise UnknownName(f"classification {text}: not 0..{UB_INTEGER_OPTIONS}")
    return value


def _classification(policy: SecurityPolicy, name: str) -> int:
    found = (
        policy.classification(_number(name))
        if _is_number(name)
        else policy.classification_named(name)
    )
    if found is None:
        known = ", ".join(c.name for c in policy.classifications if not c.obsolete)
        raise UnknownName(
            f"classification {name!r} is not in policy {policy.name} (known: {known})"
        )
    return found.lacv


def _category(policy: SecurityPolicy, name: str) -> CategoryRef:
    found = policy.categories_named(name)
    if not found:
        raise UnknownName(f"category {name!r} is not in policy {policy.name}")
    if len(found) > 1:
        shown = " or ".join(_qualified(policy, c) for c in found)
        raise UnknownName(f"category {name!r} is more than one in policy {policy.name}: {shown}")
    return found[0].ref


def _qualified(policy: SecurityPolicy, category: Category) -> str:
    """``tag set/tag/name``: a name :meth:`SecurityPolicy.categories_named` finds once."""
    tag_set = next(t for t in policy.tag_sets if t.id == category.ref.tag_set)
    return f"{tag_set.name}/{category.tag_name}/{category.name}"
