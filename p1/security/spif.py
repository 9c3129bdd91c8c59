"""A security policy read from an Open XML SPIF (Security Policy Information File, the
XML form of SDN.801c's SPIF as Isode, Nexor and the spiffing library write it).

A SPIF names one policy (``securityPolicyId``), its classifications (``lacv``: the value
a label carries; ``hierarchy``: the order of dominance), its category tag sets (each an
OID with tags of one type: restrictive, permissive, enumerated restrictive or permissive,
informative), the rules that make a label valid (``excludedClass``,
``excludedCategory``, ``requiredCategory``), the marking phrases and qualifiers of its
display marking, and the policies it takes as equivalent.

The file is operator input: it is parsed with the standard library's ElementTree and a
document type declaration (the only place entities can be declared) is refused.  Every
error names the file, the element and the value.  This module reads bytes; the caller
reads the file.

Public API::

    parse_spif(data, source) -> SecurityPolicy          SpifError
    SecurityPolicy, Classification, TagSet, Tag, Category, CategoryRef, TagType
    Clearance, clearance_up_to(policy, classification, categories, name)
    CategoryGroup, Requirement, Operation, Marking, Qualifiers
"""

from __future__ import annotations

import enum
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

__all__ = [
    "Category",
    "CategoryGroup",
    "CategoryRef",
    "Classification",
    "Clearance",
    "Marking",
    "Operation",
    "Qualifiers",
    "Requirement",
    "SecurityPolicy",
    "SpifError",
    "Tag",
    "TagSet",
    "TagType",
    "clearance_up_to",
    "parse_spif",
]

_OID = re.compile(r"[0-2](\.(0|[1-9][0-9]*))+")
_LACV = re.compile(r"0|[1-9][0-9]{0,18}")


class SpifError(ValueError):
    """A SPIF that cannot be used: the message names the file, element and value."""


class TagType(enum.Enum):
    """The type of a security category tag (SDN.801c; ``tagType``/``enumType``)."""

    RESTRICTIVE = "restrictive"
    PERMISSIVE = "permissive"
    ENUMERATED_RESTRICTIVE = "enumeratedRestrictive"
    ENUMERATED_PERMISSIVE = "enumeratedPermissive"
    INFORMATIVE = "tagType7"

    @property
    def restrictive(self) -> bool:
        """A clearance must hold every category of this type the label carries."""
        return self in (TagType.RESTRICTIVE, TagType.ENUMERATED_RESTRICTIVE)

    @property
    def permissive(self) -> bool:
        """A clearance must hold one of the categories of this type of a tag."""
        return self in (TagType.PERMISSIVE, TagType.ENUMERATED_PERMISSIVE)


class Operation(enum.Enum):
    """How many of a ``requiredCategory``'s categories a label must carry."""

    ONLY_ONE = "onlyOne"
    ONE_OR_MORE = "oneOrMore"
    ALL = "all"


@dataclass(frozen=True, slots=True)
class CategoryRef:
    """One category as a label carries it: tag set OID, tag type, LACV."""

    tag_set: str
    tag_type: TagType
    lacv: int

    @property
    def key(self) -> tuple[str, str, int]:
        """A total order and identity: tag set, tag type, LACV."""
        return (self.tag_set, self.tag_type.value, self.lacv)


@dataclass(frozen=True, slots=True, kw_only=True)
class Marking:
    """A ``markingData``: the phrase shown instead of the name, and its codes."""

    phrase: str | None = None
    codes: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class Qualifiers:
    """A ``markingQualifier``: text put before, between and after the parts."""

    prefix: str = ""
    separator: str = ""
    suffix: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CategoryGroup:
    """A ``categoryGroup`` or ``excludedCategory``: one category, or all of a tag's."""

    tag_set: str
    """The tag set's OID (the file refers to it by name)."""
    tag_type: TagType
    lacv: int | None
    """None: every category of that tag set and type (``all="true"``)."""

    def matches(self, ref: CategoryRef) -> bool:
        """Whether ``ref`` is one of this group's categories."""
        return (
            ref.tag_set == self.tag_set
            and ref.tag_type is self.tag_type
            and (self.lacv is None or ref.lacv == self.lacv)
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Requirement:
    """A ``requiredCategory``: of these groups' categories, one, some or all."""

    operation: Operation
    groups: tuple[CategoryGroup, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Classification:
    """A ``securityClassification``."""

    name: str
    lacv: int
    hierarchy: int
    """Dominance: a clearance up to this classification holds every lower one."""
    obsolete: bool = False
    marking: Marking | None = None
    required: tuple[Requirement, ...] = ()
    decrypt_equivalents: frozenset[tuple[str, int]] = frozenset()
    """(policy OID, LACV) of the equivalent policies' classifications read as this one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Category:
    """A ``tagCategory`` and the rules a label carrying it must keep."""

    ref: CategoryRef
    name: str
    tag_name: str
    marking: Marking | None = None
    excluded_classes: frozenset[int] = frozenset()
    """LACVs of the classifications a label with this category must not have."""
    excluded: tuple[CategoryGroup, ...] = ()
    required: tuple[Requirement, ...] = ()
    decrypt_equivalents: frozenset[tuple[str, CategoryRef]] = frozenset()
    """(policy OID, category) of the equivalent policies' categories read as this one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tag:
    """A ``securityCategoryTag``: categories of one type in a tag set."""

    name: str
    tag_type: TagType
    qualifiers: Qualifiers | None = None
    categories: tuple[Category, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TagSet:
    """A ``securityCategoryTagSet``."""

    id: str
    name: str
    tags: tuple[Tag, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SecurityPolicy:
    """One SPIF, validated: classifications and categories looked up by value or name."""

    source: str
    name: str
    id: str
    classifications: tuple[Classification, ...]
    tag_sets: tuple[TagSet, ...] = ()
    equivalent_policies: tuple[tuple[str, str], ...] = ()
    """(name, OID) of each ``equivalentPolicy``."""
    qualifiers: Qualifiers | None = None

    def classification(self, lacv: int) -> Classification | None:
        """The classification whose LACV is ``lacv``."""
        return next((c for c in self.classifications if c.lacv == lacv), None)

    def classification_named(self, name: str) -> Classification | None:
        """The classification called ``name`` (case as written, then ignoring case)."""
        exact = next((c for c in self.classifications if c.name == name), None)
        return exact or next(
            (c for c in self.classifications if c.name.casefold() == name.casefold()), None
        )

    def categories(self) -> Iterator[Category]:
        """Every category, in file order."""
        for tag_set in self.tag_sets:
            for tag in tag_set.tags:
                yield from tag.categories

    def category(self, ref: CategoryRef) -> Category | None:
        """The category ``ref`` names (tag set, type and LACV)."""
        return next((c for c in self.categories() if c.ref == ref), None)

    def categories_named(self, name: str) -> list[Category]:
        """The categories called ``name``, or ``tag set/name`` or ``tag set/tag/name``."""
        wanted = name.casefold()
        return [c for c in self.categories() if wanted in _category_names(self, c)]

    def knows_policy(self, policy: str) -> bool:
        """Whether labels of ``policy`` are read under this one (itself or equivalent)."""
        return policy == self.id or any(oid == policy for _, oid in self.equivalent_policies)

    def tag_of(self, ref: CategoryRef) -> Tag | None:
        """The tag holding ``ref``."""
        for tag_set in self.tag_sets:
            for tag in tag_set.tags:
                if any(c.ref == ref for c in tag.categories):
                    return tag
        return None


def _category_names(policy: SecurityPolicy, category: Category) -> set[str]:
    tag_set = next(t for t in policy.tag_sets if t.id == category.ref.tag_set)
    names = (
        category.name,
        f"{tag_set.name}/{category.name}",
        f"{tag_set.name}/{category.tag_name}/{category.name}",
    )
    return {n.casefold() for n in names}


@dataclass(frozen=True, slots=True, kw_only=True)
class Clearance:
    """What a recipient or a link may receive (X.501 Clearance: policy, class list,
    categories)."""

    policy: str
    """The policy's OID."""
    classes: frozenset[int]
    """LACVs of the classifications held."""
    categories: frozenset[CategoryRef] = frozenset()
    name: str = ""
    """What the configuration calls it, for logs."""


def clearance_up_to(
    policy: SecurityPolicy,
    classification: Classification,
    categories: Iterable[CategoryRef] = (),
    name: str = "",
) -> Clearance:
    """A clearance holding ``classification`` and every classification it dominates."""
    held = frozenset(
        c.lacv for c in policy.classifications if c.hierarchy <= classification.hierarchy
    )
    return Clearance(policy=policy.id, classes=held, categories=frozenset(categories), name=name)


# --- parsing -----------------------------------------------------------------------------


class _Builder(ElementTree.TreeBuilder):
    """A tree builder that refuses a document type declaration: no DTD, no entities."""

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise SpifError(f"a document type declaration (<!DOCTYPE {name}>) is not allowed")


def parse_spif(data: bytes, source: str) -> SecurityPolicy:
    """The policy ``data`` (an Open XML SPIF) states; ``source`` names it in errors."""
    return _Reader(source).policy(_root(data, source))


def _root(data: bytes, source: str) -> ElementTree.Element:
    parser = ElementTree.XMLParser(target=_Builder())
    try:
        parser.feed(data)
        root = parser.close()
    except SpifError as exc:
        raise SpifError(f"{source}: {exc}") from None
    except ElementTree.ParseError as exc:
        raise SpifError(f"{source}: not well-formed XML ({exc})") from None
    if _local(root.tag) != "SPIF":
        raise SpifError(f"{source}: the root element is {_local(root.tag)}, not SPIF")
    return root


def _local(tag: str) -> str:
    """An element's name without its namespace (SPIFs come with and without one)."""
    return tag.rpartition("}")[2]


def _children(element: ElementTree.Element, name: str) -> list[ElementTree.Element]:
    return [child for child in element if _local(child.tag) == name]


def _child(element: ElementTree.Element, name: str) -> ElementTree.Element | None:
    found = _children(element, name)
    return found[0] if found else None


@dataclass
class _Reader:
    """One SPIF's reading: what later elements refer to by name."""

    source: str
    class_lacvs: dict[str, int] = field(default_factory=dict)
    tag_set_ids: dict[str, str] = field(default_factory=dict)
    policy_ids: dict[str, str] = field(default_factory=dict)

    def fail(self, where: str, why: str) -> SpifError:
        return SpifError(f"{self.source}: {where}: {why}")

    def attr(self, element: ElementTree.Element, name: str, where: str) -> str:
        text = element.get(name)
        if text is None or not text.strip():
            raise self.fail(where, f"the {name} attribute is missing")
        return text.strip()

    def number(self, element: ElementTree.Element, name: str, where: str) -> int:
        text = self.attr(element, name, where)
        if not _LACV.fullmatch(text):
            raise self.fail(where, f"{name} {text!r} is not a number 0 or more")
        return int(text)

    def oid(self, element: ElementTree.Element, name: str, where: str) -> str:
        text = self.attr(element, name, where)
        if not _OID.fullmatch(text):
            raise self.fail(where, f"{name} {text!r} is not an object identifier")
        return text

    def policy(self, root: ElementTree.Element) -> SecurityPolicy:
        ident = _child(root, "securityPolicyId")
        if ident is None:
            raise self.fail("SPIF", "it has no securityPolicyId")
        name = self.attr(ident, "name", "securityPolicyId")
        policy_id = self.oid(ident, "id", f"securityPolicyId {name!r}")
        self.policy_ids[name] = policy_id
        equivalents = self.equivalent_policies(root)
        class_elements = self.classification_names(root)
        set_elements = self.tag_set_names(root)
        classifications = tuple(self.classification(e) for e in class_elements)
        tag_sets = tuple(self.tag_set(e) for e in set_elements)
        policy = SecurityPolicy(
            source=self.source,
            name=name,
            id=policy_id,
            classifications=classifications,
            tag_sets=tag_sets,
            equivalent_policies=equivalents,
            qualifiers=self.qualifiers(root, "SPIF"),
        )
        self.check_references(policy)
        return policy

    # -- policies and classifications --

    def equivalent_policies(self, root: ElementTree.Element) -> tuple[tuple[str, str], ...]:
        found = []
        holder = _child(root, "equivalentPolicies")
        for element in [] if holder is None else _children(holder, "equivalentPolicy"):
            name = self.attr(element, "name", "equivalentPolicy")
            oid = self.oid(element, "id", f"equivalentPolicy {name!r}")
            if name in self.policy_ids:
                raise self.fail(f"equivalentPolicy {name!r}", "the name is used twice")
            self.policy_ids[name] = oid
            found.append((name, oid))
        return tuple(found)

    def classification_names(self, root: ElementTree.Element) -> list[ElementTree.Element]:
        holder = _child(root, "securityClassifications")
        elements = [] if holder is None else _children(holder, "securityClassification")
        if not elements:
            raise self.fail("securityClassifications", "the policy has no classification")
        for element in elements:
            name = self.attr(element, "name", "securityClassification")
            where = f"securityClassification {name!r}"
            lacv = self.number(element, "lacv", where)
            if name in self.class_lacvs:
                raise self.fail(where, "the name is used twice")
            if lacv in self.class_lacvs.values():
                raise self.fail(where, f"lacv {lacv} is used twice")
            self.class_lacvs[name] = lacv
        return elements

    def classification(self, element: ElementTree.Element) -> Classification:
        name = self.attr(element, "name", "securityClassification")
        where = f"securityClassification {name!r}"
        return Classification(
            name=name,
            lacv=self.class_lacvs[name],
            hierarchy=self.number(element, "hierarchy", where),
            obsolete=element.get("obsolete", "false").strip() == "true",
            marking=self.marking(element, where),
            required=tuple(self.requirements(element, where)),
            decrypt_equivalents=frozenset(self.equivalent_classes(element, where)),
        )

    def equivalent_classes(
        self, element: ElementTree.Element, where: str
    ) -> Iterator[tuple[str, int]]:
        for equivalent in _children(element, "equivalentClassification"):
            here = f"{where} equivalentClassification"
            applied = self.attr(equivalent, "applied", here)
            if applied not in ("encrypt", "decrypt", "both"):
                raise self.fail(here, f"applied {applied!r} is not encrypt, decrypt or both")
            policy = self.policy_ref(equivalent, here)
            lacv = self.number(equivalent, "lacv", here)
            if applied != "encrypt":
                yield (policy, lacv)

    def policy_ref(self, element: ElementTree.Element, where: str) -> str:
        name = self.attr(element, "policyRef", where)
        if name not in self.policy_ids:
            raise self.fail(where, f"policyRef {name!r} is no equivalentPolicy")
        return self.policy_ids[name]

    # -- category tag sets --

    def tag_set_names(self, root: ElementTree.Element) -> list[ElementTree.Element]:
        holder = _child(root, "securityCategoryTagSets")
        elements = [] if holder is None else _children(holder, "securityCategoryTagSet")
        for element in elements:
            name = self.attr(element, "name", "securityCategoryTagSet")
            where = f"securityCategoryTagSet {name!r}"
            oid = self.oid(element, "id", where)
            if name in self.tag_set_ids:
                raise self.fail(where, "the name is used twice")
            if oid in self.tag_set_ids.values():
                raise self.fail(where, f"id {oid} is used twice")
            self.tag_set_ids[name] = oid
        return elements

    def tag_set(self, element: ElementTree.Element) -> TagSet:
        name = self.attr(element, "name", "securityCategoryTagSet")
        tags = tuple(
            self.tag(t, name, self.tag_set_ids[name])
            for t in _children(element, "securityCategoryTag")
        )
        return TagSet(id=self.tag_set_ids[name], name=name, tags=tags)

    def tag_type(self, element: ElementTree.Element, where: str) -> TagType:
        written = self.attr(element, "tagType", where)
        if written == "enumerated":
            kind = self.attr(element, "enumType", where)
            if kind not in ("restrictive", "permissive"):
                raise self.fail(where, f"enumType {kind!r} is not restrictive or permissive")
            written = "enumeratedRestrictive" if kind == "restrictive" else "enumeratedPermissive"
        try:
            return TagType(written)
        except ValueError:
            raise self.fail(
                where, f"tagType {written!r} is not restrictive, permissive, enumerated or tagType7"
            ) from None

    def tag(self, element: ElementTree.Element, set_name: str, set_id: str) -> Tag:
        name = self.attr(element, "name", f"securityCategoryTagSet {set_name!r} tag")
        where = f"securityCategoryTag {set_name}/{name}"
        tag_type = self.tag_type(element, where)
        categories = []
        seen: set[int] = set()
        for category in _children(element, "tagCategory"):
            read = self.category(category, where, name, CategoryRef(set_id, tag_type, 0))
            if read.ref.lacv in seen:
                raise self.fail(f"{where} tagCategory {read.name!r}", "lacv used twice")
            seen.add(read.ref.lacv)
            categories.append(read)
        return Tag(
            name=name,
            tag_type=tag_type,
            qualifiers=self.qualifiers(element, where),
            categories=tuple(categories),
        )

    def category(
        self, element: ElementTree.Element, where: str, tag_name: str, base: CategoryRef
    ) -> Category:
        name = self.attr(element, "name", f"{where} tagCategory")
        here = f"{where} tagCategory {name!r}"
        ref = CategoryRef(base.tag_set, base.tag_type, self.number(element, "lacv", here))
        return Category(
            ref=ref,
            name=name,
            tag_name=tag_name,
            marking=self.marking(element, here),
            excluded_classes=frozenset(self.excluded_classes(element, here)),
            excluded=tuple(
                self.group(e, f"{here} excludedCategory")
                for e in _children(element, "excludedCategory")
            ),
            required=tuple(self.requirements(element, here)),
            decrypt_equivalents=frozenset(self.equivalent_categories(element, here)),
        )

    def excluded_classes(self, element: ElementTree.Element, where: str) -> Iterator[int]:
        for excluded in _children(element, "excludedClass"):
            name = (excluded.text or "").strip()
            if name not in self.class_lacvs:
                raise self.fail(f"{where} excludedClass", f"{name!r} is no classification")
            yield self.class_lacvs[name]

    def requirements(self, element: ElementTree.Element, where: str) -> Iterator[Requirement]:
        for required in _children(element, "requiredCategory"):
            here = f"{where} requiredCategory"
            written = self.attr(required, "operation", here)
            try:
                operation = Operation(written)
            except ValueError:
                raise self.fail(
                    here, f"operation {written!r} is not onlyOne, oneOrMore or all"
                ) from None
            groups = tuple(
                self.group(g, f"{here} categoryGroup") for g in _children(required, "categoryGroup")
            )
            yield Requirement(operation=operation, groups=groups)

    def group(self, element: ElementTree.Element, where: str) -> CategoryGroup:
        ref = self.attr(element, "tagSetRef", where)
        if ref not in self.tag_set_ids:
            raise self.fail(where, f"tagSetRef {ref!r} is no securityCategoryTagSet")
        every = element.get("all", "false").strip() == "true"
        return CategoryGroup(
            tag_set=self.tag_set_ids[ref],
            tag_type=self.tag_type(element, where),
            lacv=None if every else self.number(element, "lacv", where),
        )

    def equivalent_categories(
        self, element: ElementTree.Element, where: str
    ) -> Iterator[tuple[str, CategoryRef]]:
        for equivalent in _children(element, "equivalentSecCategoryTag"):
            here = f"{where} equivalentSecCategoryTag"
            policy = self.policy_ref(equivalent, here)
            if (
                equivalent.get("applied", "both").strip() == "encrypt"
                or "action" in equivalent.attrib
            ):
                continue
            ref = CategoryRef(
                self.oid(equivalent, "tagSetId", here),
                self.tag_type(equivalent, here),
                self.number(equivalent, "lacv", here),
            )
            yield (policy, ref)

    # -- markings --

    def marking(self, element: ElementTree.Element, where: str) -> Marking | None:
        data = [d for d in _children(element, "markingData") if _default_language(d)]
        if not data:
            return None
        codes = frozenset((c.text or "").strip() for d in data for c in _children(d, "code"))
        phrase = next((d.get("phrase") for d in data if d.get("phrase") is not None), None)
        return Marking(phrase=phrase, codes=codes)

    def qualifiers(self, element: ElementTree.Element, where: str) -> Qualifiers | None:
        parts: dict[str, str] = {}
        for holder in _children(element, "markingQualifier"):
            for qualifier in _children(holder, "qualifier"):
                if not _default_language(qualifier):
                    continue
                code = self.attr(qualifier, "qualifierCode", f"{where} qualifier")
                if code not in ("prefix", "separator", "suffix"):
                    raise self.fail(
                        f"{where} qualifier",
                        f"qualifierCode {code!r} is not prefix, separator or suffix",
                    )
                parts.setdefault(code, qualifier.get("markingQualifier", ""))
        return Qualifiers(**parts) if parts else None

    # -- the whole --

    def check_references(self, policy: SecurityPolicy) -> None:
        """Every category a rule names exists in the policy."""
        for category in policy.categories():
            groups = [*category.excluded, *(g for r in category.required for g in r.groups)]
            for group in groups:
                if group.lacv is not None and not _any_match(policy.categories(), group):
                    raise self.fail(
                        f"tagCategory {category.name!r}",
                        f"it refers to lacv {group.lacv} ({group.tag_type.value}) of tag set "
                        f"{group.tag_set}, which has no such category",
                    )


def _any_match(categories: Iterable[Category], group: CategoryGroup) -> bool:
    return any(group.matches(c.ref) for c in categories)


def _default_language(element: ElementTree.Element) -> bool:
    """Markings without a language, or in English: the ones shown."""
    lang = element.get("{http://www.w3.org/XML/1998/namespace}lang", "")
    return lang == "" or lang.lower().startswith("en")
