"""Clearances and the access decision: may a message with this security label go to a
recipient (or over a link) with this clearance (X.411 8.5.9 security-label and 8.1.1.1.1.3
security-context; the SPIF's rules, SDN.801c).

A label is first read under the policy: its policy must be the policy's or one it lists
as equivalent (then its classification and categories are mapped by the SPIF's
equivalents read on receipt); its classification and every category must exist; and it
must keep the SPIF's rules (a category's excluded classifications and categories, the
categories a classification or category requires).  An invalid label goes to nobody.

A valid label is allowed to a clearance of the same policy that holds its classification
(a clearance up to a classification holds every one lower in the hierarchy), every
restrictive category it carries, and at least one of the permissive categories it carries
in each permissive tag.  Informative categories decide nothing.

Public API::

    Clearance, clearance_up_to(policy, classification, categories, name)   (from spif)
    Decision, decide(policy, label, clearance) -> Decision
    PolicyLabel, read_label(policy, label) -> PolicyLabel        (LabelRefused)
    display_marking(policy, label) -> str
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from p1.errors import DecodeError
from p1.mts.security_label import SecurityLabel
from p1.security.categories import decode_categories
from p1.security.spif import (
    Category,
    CategoryRef,
    Classification,
    Clearance,
    Operation,
    Requirement,
    SecurityPolicy,
    clearance_up_to,
)

__all__ = [
    "Clearance",
    "Decision",
    "LabelRefused",
    "PolicyLabel",
    "clearance_up_to",
    "decide",
    "display_marking",
    "read_label",
]


class LabelRefused(Exception):
    """A label the policy cannot accept: ``reason`` says why, for the audit log."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyLabel:
    """A label read under the policy: its classification and categories."""

    classification: Classification
    categories: frozenset[CategoryRef]


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """The access decision; ``reason`` is for the audit log."""

    allowed: bool
    reason: str


def decide(policy: SecurityPolicy, label: SecurityLabel, clearance: Clearance | None) -> Decision:
    """Whether ``label`` may go where ``clearance`` is held (None: no clearance)."""
    try:
        read = read_label(policy, label)
    except LabelRefused as exc:
        return Decision(allowed=False, reason=exc.reason)
    if clearance is None:
        return Decision(allowed=False, reason="no clearance")
    if clearance.policy != policy.id:
        return Decision(allowed=False, reason=f"the clearance is of policy {clearance.policy}")
    return _against(policy, read, clearance)


def _against(policy: SecurityPolicy, read: PolicyLabel, clearance: Clearance) -> Decision:
    if read.classification.lacv not in clearance.classes:
        return Decision(allowed=False, reason=f"not cleared for {read.classification.name}")
    for ref in sorted(read.categories, key=_order):
        if ref.tag_type.restrictive and ref not in clearance.categories:
            return Decision(allowed=False, reason=f"not cleared for {_name(policy, ref)}")
    for tag_name, refs in _permissive_tags(policy, read.categories).items():
        if not refs & clearance.categories:
            return Decision(allowed=False, reason=f"not cleared for any of {tag_name}")
    return Decision(allowed=True, reason=f"cleared for {read.classification.name}")


def _permissive_tags(
    policy: SecurityPolicy, refs: frozenset[CategoryRef]
) -> dict[str, frozenset[CategoryRef]]:
    """The label's permissive categories by tag (the SPIF's unit of "at least one")."""
    tags: dict[str, set[CategoryRef]] = {}
    for ref in refs:
        tag = policy.tag_of(ref)
        if ref.tag_type.permissive and tag is not None:
            tags.setdefault(tag.name, set()).add(ref)
    return {name: frozenset(members) for name, members in sorted(tags.items())}


def _order(ref: CategoryRef) -> tuple[str, str, int]:
    return ref.key


def _name(policy: SecurityPolicy, ref: CategoryRef) -> str:
    category = policy.category(ref)
    return f"{ref.tag_set}/{ref.tag_type.value}/{ref.lacv}" if category is None else category.name


# --- reading a label under the policy --------------------------------------------------


def read_label(policy: SecurityPolicy, label: SecurityLabel) -> PolicyLabel:
    """The label's classification and categories in the policy; LabelRefused when its
    policy is another, or it names what the policy does not define, or breaks a rule."""
    foreign = label.policy is not None and label.policy != policy.id
    if label.policy is not None and not policy.knows_policy(label.policy):
        raise LabelRefused(f"the label is of policy {label.policy}, not {policy.id}")
    try:
        carried = decode_categories(label.categories)
    except DecodeError as exc:
        raise LabelRefused(f"its categories cannot be read ({exc})") from None
    if foreign:
        assert label.policy is not None
        classification = _equivalent_class(policy, label.policy, label.classification)
        refs = frozenset(_equivalent_category(policy, label.policy, r) for r in carried)
    else:
        classification = _own_class(policy, label.classification)
        refs = frozenset(_own_category(policy, r).ref for r in carried)
    read = PolicyLabel(classification=classification, categories=refs)
    _check_rules(policy, read)
    return read


def _own_class(policy: SecurityPolicy, lacv: int | None) -> Classification:
    found = policy.classification(0 if lacv is None else lacv)
    if found is None:
        shown = "no classification" if lacv is None else f"classification {lacv}"
        raise LabelRefused(f"{shown}: policy {policy.name} defines none such")
    return found


def _own_category(policy: SecurityPolicy, ref: CategoryRef) -> Category:
    found = policy.category(ref)
    if found is None:
        raise LabelRefused(
            f"category {ref.lacv} ({ref.tag_type.value}) of tag set {ref.tag_set} is not "
            f"in policy {policy.name}"
        )
    return found


def _equivalent_class(policy: SecurityPolicy, foreign: str, lacv: int | None) -> Classification:
    for classification in policy.classifications:
        if (foreign, 0 if lacv is None else lacv) in classification.decrypt_equivalents:
            return classification
    raise LabelRefused(f"classification {lacv} of policy {foreign} has no equivalent")


def _equivalent_category(policy: SecurityPolicy, foreign: str, ref: CategoryRef) -> CategoryRef:
    for category in policy.categories():
        if (foreign, ref) in category.decrypt_equivalents:
            return category.ref
    raise LabelRefused(
        f"category {ref.lacv} of tag set {ref.tag_set} ({foreign}) has no equivalent"
    )


def _check_rules(policy: SecurityPolicy, read: PolicyLabel) -> None:
    """The SPIF's rules for a valid label."""
    if read.classification.obsolete:
        raise LabelRefused(f"{read.classification.name} is obsolete")
    _check_requirements(policy, read.classification.name, read.classification.required, read)
    for ref in sorted(read.categories, key=_order):
        category = _own_category(policy, ref)
        if read.classification.lacv in category.excluded_classes:
            raise LabelRefused(f"{category.name} is excluded from {read.classification.name}")
        for group in category.excluded:
            clash = [r for r in read.categories if r != ref and group.matches(r)]
            if clash:
                raise LabelRefused(f"{category.name} excludes {_name(policy, clash[0])}")
        _check_requirements(policy, category.name, category.required, read)


def _check_requirements(
    policy: SecurityPolicy, holder: str, requirements: Iterable[Requirement], read: PolicyLabel
) -> None:
    for requirement in requirements:
        matched = [r for r in read.categories if any(g.matches(r) for g in requirement.groups)]
        every = all(any(g.matches(r) for r in read.categories) for g in requirement.groups)
        kept = {
            Operation.ONLY_ONE: len(matched) == 1,
            Operation.ONE_OR_MORE: len(matched) >= 1,
            Operation.ALL: every,
        }[requirement.operation]
        if not kept:
            raise LabelRefused(
                f"{holder} requires {requirement.operation.value} of its required categories"
            )


# --- display marking -------------------------------------------------------------------


def display_marking(policy: SecurityPolicy, label: SecurityLabel) -> str:
    """The label as the SPIF says to show it (policy, classification, categories with
    their tags' qualifiers), or why it cannot be read under the policy."""
    try:
        read = read_label(policy, label)
    except LabelRefused as exc:
        return f"(not valid in policy {policy.name}: {exc.reason})"
    outer = policy.qualifiers
    separator = outer.separator if outer is not None and outer.separator else " "
    parts = [policy.name]
    if not _class_suppressed(policy, read):
        marking = read.classification.marking
        phrase = None if marking is None else marking.phrase
        parts.append(read.classification.name if phrase is None else phrase)
    parts.extend(_tag_markings(policy, read.categories))
    text = separator.join(p for p in parts if p)
    return text if outer is None else f"{outer.prefix}{text}{outer.suffix}"


def _class_suppressed(policy: SecurityPolicy, read: PolicyLabel) -> bool:
    for ref in read.categories:
        category = policy.category(ref)
        if category and category.marking and "suppressClassName" in category.marking.codes:
            return True
    return False


def _tag_markings(policy: SecurityPolicy, refs: frozenset[CategoryRef]) -> list[str]:
    shown = []
    for tag_set in policy.tag_sets:
        for tag in tag_set.tags:
            names = [_phrase(c) for c in tag.categories if c.ref in refs]
            names = [n for n in names if n]
            if not names:
                continue
            qualifiers = tag.qualifiers
            if qualifiers is None:
                shown.append("/".join(names))
            else:
                joined = (qualifiers.separator or "/").join(names)
                shown.append(f"{qualifiers.prefix}{joined}{qualifiers.suffix}")
    return shown


def _phrase(category: Category) -> str:
    marking = category.marking
    if marking is None:
        return category.name
    if "noMarkingDisplay" in marking.codes or "noNameDisplay" in marking.codes:
        return marking.phrase or ""
    return category.name if marking.phrase is None else marking.phrase
