"""The ESS security label (RFC 2634 clause 5.4, ESSSecurityLabel), the form STANAG 4406
Annex B signs and CMS carries, read into the same :class:`SecurityLabel` as X.411's.

The two forms differ in two members: ESS requires the security-policy-identifier, and
its privacy mark may be a UTF8String as well as a PrintableString::

    ESSSecurityLabel ::= SET {
      security-policy-identifier  SecurityPolicyIdentifier,
      security-classification     SecurityClassification OPTIONAL,
      privacy-mark                ESSPrivacyMark OPTIONAL,
      security-categories         SecurityCategories OPTIONAL }
    ESSPrivacyMark ::= CHOICE {
      pString     PrintableString (SIZE (1..ub-privacy-mark-length)),
      utf8String  UTF8String (SIZE (1..MAX)) }

The categories are X.411's SecurityCategories (the same SEQUENCE of [0] OID and [1] ANY).

Public API::

    decode_ess_security_label(value_ber) -> SecurityLabel     (DecodeError)
"""

from __future__ import annotations

from p1 import ber
from p1.ber import Tlv
from p1.errors import DecodeError
from p1.mts.security_label import (
    UB_INTEGER_OPTIONS,
    UB_PRIVACY_MARK_LENGTH,
    SecurityLabel,
    read_security_categories,
)

__all__ = ["decode_ess_security_label"]

_WHAT = "ESSSecurityLabel"
_UTF8_STRING = ber.universal(12)
_MEMBERS = {
    ber.OBJECT_IDENTIFIER: "security-policy-identifier",
    ber.INTEGER: "security-classification",
    ber.PRINTABLE_STRING: "privacy-mark",
    _UTF8_STRING: "privacy-mark",
    ber.SET: "security-categories",
}


def decode_ess_security_label(value_ber: bytes) -> SecurityLabel:
    """An ESSSecurityLabel from its BER (any legal form); DecodeError naming the member."""
    try:
        return _decode(value_ber)
    except DecodeError as exc:
        if exc.where.startswith(_WHAT):
            raise
        where = f"{_WHAT} ({exc.where})" if exc.where else _WHAT
        raise DecodeError(exc.why, where=where) from None


def _decode(value_ber: bytes) -> SecurityLabel:
    members = ber.split_set(
        ber.expect(ber.read_single(value_ber, _WHAT), ber.SET, _WHAT), _MEMBERS, _WHAT
    )
    policy = members.get("security-policy-identifier")
    if policy is None:
        raise DecodeError("missing security-policy-identifier", where=_WHAT)
    classification = members.get("security-classification")
    mark = members.get("privacy-mark")
    categories = members.get("security-categories")
    return SecurityLabel(
        policy=ber.read_oid(policy, f"{_WHAT}.security-policy-identifier"),
        classification=None
        if classification is None
        else ber.read_bounded_int(
            classification, f"{_WHAT}.security-classification", 0, UB_INTEGER_OPTIONS
        ),
        privacy_mark=None if mark is None else _privacy_mark(mark, f"{_WHAT}.privacy-mark"),
        categories=()
        if categories is None
        else read_security_categories(categories, f"{_WHAT}.security-categories"),
    )


def _privacy_mark(tlv: Tlv, what: str) -> str:
    if tlv.tag == _UTF8_STRING:
        try:
            text = ber.read_octets(tlv, what).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"not UTF-8 ({exc.reason})", where=what) from None
        if not text:
            raise DecodeError("an empty UTF8String", where=what)
        return text
    text = ber.read_text(tlv, what, ber.PRINTABLE_STRING)
    if not 1 <= len(text) <= UB_PRIVACY_MARK_LENGTH:
        raise DecodeError(f"{len(text)} characters, not 1..{UB_PRIVACY_MARK_LENGTH}", where=what)
    return text
