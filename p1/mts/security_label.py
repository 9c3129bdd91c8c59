"""The security label of X.411 (clause 8.5.9, SecurityLabel of MTSAbstractService) read
and written, and the transfer envelope's message-security-label extension
(standard-extension 20, clause 12.2.1.1.1) that carries it.

STANAG 4406 messages carry it in the envelope; its policy identifiers are NATO's own
(``id-policy``, 1.3.26.0.4406.0.5, MMSObjectIdentifiers), but the classification values
are the six of X.411 (the MMS modules define no others).  The label is read as a view of
the extension: the extension itself stays byte-exact in the envelope.

Public API::

    SecurityLabel, SecurityCategory, SecurityClassification, classification_name
    decode_security_label(value_ber) / encode_security_label(label)
    read_security_categories(tlv, what)   (also the ESS form's, RFC 2634 5.3)
    message_security_label(extensions) -> SecurityLabel | None
    is_message_security_label(extension), decode_security_label_extension(extension)
    security_label_extension(label)
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from p1 import ber
from p1.ber import Tlv
from p1.ber.values import PRINTABLE_OCTETS
from p1.errors import DecodeError, EncodeError
from p1.mts.extensions import ExtensionField, StandardExtension, find_extension
from p1.mts.fields import Criticality

UB_INTEGER_OPTIONS = 256
"""ub-integer-options (MTSUpperBounds): the highest SecurityClassification."""
UB_PRIVACY_MARK_LENGTH = 128
"""ub-privacy-mark-length (MTSUpperBounds)."""
UB_SECURITY_CATEGORIES = 64
"""ub-security-categories (MTSUpperBounds)."""

_WHAT = "SecurityLabel"
_T = TypeVar("_T")


# SecurityClassification ::= INTEGER {
#   unmarked(0), unclassified(1), restricted(2), confidential(3), secret(4),
#   top-secret(5)}(0..ub-integer-options)
class SecurityClassification(enum.IntEnum):
    """The classifications X.411 names (clause 8.5.9); a policy may define others."""

    UNMARKED = 0
    UNCLASSIFIED = 1
    RESTRICTED = 2
    CONFIDENTIAL = 3
    SECRET = 4
    TOP_SECRET = 5


_CLASSIFICATIONS = {int(c): c for c in SecurityClassification}


def classification_name(value: int) -> str:
    """``secret``, ``top-secret``... for the standard values, else the number as text."""
    known = _CLASSIFICATIONS.get(value)
    return str(value) if known is None else known.name.lower().replace("_", "-")


# SecurityCategory ::= SEQUENCE {
#   type   [0]  SecurityCategoryIdentifier,   -- OBJECT IDENTIFIER (IMPLICIT TAGS)
#   value  [1]  SecurityCategoryValue }       -- ANY: explicitly tagged
class SecurityCategory(NamedTuple):
    """One security category: its type (dotted OID) and its value's BER, as received."""

    type: str
    value: bytes


# SecurityLabel ::= SET {
#   security-policy-identifier  SecurityPolicyIdentifier OPTIONAL,   -- OBJECT IDENTIFIER
#   security-classification     SecurityClassification OPTIONAL,
#   privacy-mark                PrivacyMark OPTIONAL,                 -- PrintableString
#   security-categories         SecurityCategories OPTIONAL }        -- SET OF
@dataclass(frozen=True, slots=True, kw_only=True)
class SecurityLabel:
    """X.411 clause 8.5.9 SecurityLabel; every member is optional (None or ())."""

    policy: str | None = None
    """security-policy-identifier, dotted."""
    classification: int | None = None
    """security-classification, 0..256 (:class:`SecurityClassification` names 0..5)."""
    privacy_mark: str | None = None
    """privacy-mark, a PrintableString of 1..128 characters."""
    categories: tuple[SecurityCategory, ...] = ()
    """security-categories in the order received (none: the member is absent)."""

    @property
    def classification_name(self) -> str | None:
        """The classification by name (``secret``), or its number as text; None if absent."""
        return None if self.classification is None else classification_name(self.classification)

    def describe(self) -> str:
        """One line for people: ``SECRET; policy 1.3.26.0.4406.0.5.1; privacy mark
        'NATO'; categories: 2.16.840.1 = a1030201 01``."""
        parts = []
        if self.classification is not None:
            known = self.classification in _CLASSIFICATIONS
            name = classification_name(self.classification).replace("-", " ").upper()
            parts.append(name if known else f"classification {name}")
        if self.policy is not None:
            parts.append(f"policy {self.policy}")
        if self.privacy_mark is not None:
            parts.append(f"privacy mark '{self.privacy_mark}'")
        if self.categories:
            shown = ", ".join(f"{c.type} = {c.value.hex()}" for c in self.categories)
            parts.append(f"categories: {shown}")
        return "; ".join(parts) or "empty label"

    @property
    def text(self) -> str:
        """:meth:`describe`."""
        return self.describe()


# --- decoding --------------------------------------------------------------------------

_POLICY = "security-policy-identifier"
_CLASSIFICATION = "security-classification"
_PRIVACY_MARK = "privacy-mark"
_CATEGORIES = "security-categories"

_MEMBERS = {
    ber.OBJECT_IDENTIFIER: _POLICY,
    ber.INTEGER: _CLASSIFICATION,
    ber.PRINTABLE_STRING: _PRIVACY_MARK,
    ber.SET: _CATEGORIES,
}
_CATEGORY_TYPE = ber.context(0)
_CATEGORY_VALUE = ber.context(1)


def decode_security_label(value_ber: bytes, what: str = _WHAT) -> SecurityLabel:
    """A SecurityLabel from its BER (any legal form); a DecodeError naming the member."""
    try:
        return _decode(ber.read_single(value_ber, what), what)
    except DecodeError as exc:
        raise _located(exc, what) from None


def _decode(tlv: Tlv, what: str) -> SecurityLabel:
    members = ber.split_set(ber.expect(tlv, ber.SET, what), _MEMBERS, what)
    categories = _member(members, _CATEGORIES, read_security_categories, what)
    return SecurityLabel(
        policy=_member(members, _POLICY, ber.read_oid, what),
        classification=_member(members, _CLASSIFICATION, _read_classification, what),
        privacy_mark=_member(members, _PRIVACY_MARK, _read_privacy_mark, what),
        categories=() if categories is None else categories,
    )


def _member(
    members: ber.SetMembers, name: str, reader: Callable[[Tlv, str], _T], what: str
) -> _T | None:
    """The member ``name`` read, or None when absent."""
    tlv = members.get(name)
    return None if tlv is None else reader(tlv, f"{what}.{name}")


def _located(exc: DecodeError, what: str) -> DecodeError:
    """``exc`` named under ``what`` when the reader only gave an offset (a TLV that
    does not parse)."""
    if exc.where.startswith(what):
        return exc
    return DecodeError(exc.why, where=f"{what} ({exc.where})" if exc.where else what)


def _read_classification(tlv: Tlv, what: str) -> int:
    return ber.read_bounded_int(tlv, what, 0, UB_INTEGER_OPTIONS)


def _read_privacy_mark(tlv: Tlv, what: str) -> str:
    text = ber.read_text(tlv, what, ber.PRINTABLE_STRING)
    if not 1 <= len(text) <= UB_PRIVACY_MARK_LENGTH:
        raise DecodeError(f"{len(text)} characters, not 1..{UB_PRIVACY_MARK_LENGTH}", where=what)
    return text


def read_security_categories(tlv: Tlv, what: str) -> tuple[SecurityCategory, ...]:
    """SecurityCategories (SET SIZE (1..ub-security-categories) OF SecurityCategory)."""
    items = ber.children(tlv, what)
    if not 1 <= len(items) <= UB_SECURITY_CATEGORIES:
        raise DecodeError(f"{len(items)} categories, not 1..{UB_SECURITY_CATEGORIES}", where=what)
    return tuple(_read_category(item, f"{what}[{index}]") for index, item in enumerate(items))


def _read_category(tlv: Tlv, what: str) -> SecurityCategory:
    parts = ber.children(ber.expect(tlv, ber.SEQUENCE, what), what)
    if len(parts) != 2:
        raise DecodeError(f"{len(parts)} members, not type and value", where=what)
    kind = ber.read_oid(ber.expect(parts[0], _CATEGORY_TYPE, f"{what}.type"), f"{what}.type")
    value = ber.expect(parts[1], _CATEGORY_VALUE, f"{what}.value")
    return SecurityCategory(kind, ber.only_child(value, f"{what}.value").raw())


# --- encoding --------------------------------------------------------------------------


def encode_security_label(label: SecurityLabel, what: str = _WHAT) -> bytes:
    """The SET with the present members in tag order (as DER sorts them), lengths
    definite and shortest; the categories in their given order, values as given."""
    if not isinstance(label, SecurityLabel):
        raise EncodeError(f"{label!r} is not a SecurityLabel", where=what)
    members = []
    if label.classification is not None:
        number = ber.check_int(
            label.classification, f"{what}.{_CLASSIFICATION}", 0, UB_INTEGER_OPTIONS
        )
        members.append(ber.tlv(ber.INTEGER, ber.int_contents(number)))
    if label.policy is not None:
        policy = ber.oid_contents(label.policy, f"{what}.{_POLICY}")
        members.append(ber.tlv(ber.OBJECT_IDENTIFIER, policy))
    if label.categories:
        members.append(_encode_categories(label.categories, f"{what}.{_CATEGORIES}"))
    if label.privacy_mark is not None:
        mark = _privacy_mark_contents(label.privacy_mark, f"{what}.{_PRIVACY_MARK}")
        members.append(ber.tlv(ber.PRINTABLE_STRING, mark))
    return ber.constructed(ber.SET, members)


def _privacy_mark_contents(text: str, what: str) -> bytes:
    contents = ber.text_contents(text, what)
    if contents.translate(None, PRINTABLE_OCTETS):
        raise EncodeError(f"{text!r} is not PrintableString text", where=what)
    if not 1 <= len(contents) <= UB_PRIVACY_MARK_LENGTH:
        raise EncodeError(
            f"{len(contents)} characters, not 1..{UB_PRIVACY_MARK_LENGTH}", where=what
        )
    return contents


def _encode_categories(categories: Iterable[SecurityCategory], what: str) -> bytes:
    items = [_encode_category(c, f"{what}[{i}]") for i, c in enumerate(categories)]
    if len(items) > UB_SECURITY_CATEGORIES:
        raise EncodeError(f"{len(items)} categories, not 1..{UB_SECURITY_CATEGORIES}", where=what)
    return ber.constructed(ber.SET, items)


def _encode_category(category: SecurityCategory, what: str) -> bytes:
    kind, value = category
    if not isinstance(value, bytes | bytearray):
        raise EncodeError("the value must be the BER of one value", where=f"{what}.value")
    ber.check_single_tlv(value, f"{what}.value")
    parts = (
        ber.tlv(_CATEGORY_TYPE, ber.oid_contents(kind, f"{what}.type")),
        ber.tlv(_CATEGORY_VALUE, bytes(value), True),
    )
    return ber.constructed(ber.SEQUENCE, parts)


# --- the envelope extension ------------------------------------------------------------

EXTENSION_NAME = "message-security-label"
"""What errors name the label read from an envelope extension."""


def message_security_label(extensions: Iterable[ExtensionField]) -> SecurityLabel | None:
    """The message-security-label extension (standard-extension 20) of an envelope,
    or None when it has none.  Two or more are a DecodeError: which one governs the
    message would be a guess (the extensions are a SET: their order is no answer)."""
    found = [e for e in extensions if is_message_security_label(e)]
    if len(found) > 1:
        raise DecodeError(
            f"the envelope has {len(found)} message-security-label extensions", where=EXTENSION_NAME
        )
    return decode_security_label_extension(found[0]) if found else None


def is_message_security_label(extension: ExtensionField) -> bool:
    """Whether ``extension`` is message-security-label (standard-extension 20)."""
    return find_extension((extension,), StandardExtension.MESSAGE_SECURITY_LABEL) is not None


def decode_security_label_extension(extension: ExtensionField) -> SecurityLabel:
    """The SecurityLabel a message-security-label extension holds."""
    if extension.value is None:  # (absent means NULL, which is no SecurityLabel)
        raise DecodeError("the extension has no value", where=EXTENSION_NAME)
    return decode_security_label(extension.value, EXTENSION_NAME)


def security_label_extension(
    label: SecurityLabel, criticality: Criticality | None = None
) -> ExtensionField:
    """message-security-label holding ``label``, by default with its recommended
    criticality {for-delivery}."""
    return ExtensionField(
        type=StandardExtension.MESSAGE_SECURITY_LABEL,
        criticality=Criticality(for_delivery=True) if criticality is None else criticality,
        value=encode_security_label(label, EXTENSION_NAME),
    )
