"""Envelope and per-recipient extensions shown for people: name and decoded value
(X.411 clause 9.1 and the EXTENSION objects of MTSAbstractService, X.411 Annex A;
STANAG 4406 Annex A for priority-level-qualifier).

An :class:`~p1.mts.extensions.ExtensionField` carries its value as BER, kept as received
for relaying.  This module reads that value as the type its extension declares, for
display only (``x400-dump``, ``x400 read``, log lines): O/R names as text, ENUMERATED and
named INTEGER and BIT STRING values by name, times in ISO 8601, object identifiers
dotted, octets in hex.  A value that does not decode as its type gives the reason and its
hex, never an exception.

Every legal BER form of a value shows the same view: the value is first rewritten with
definite lengths, low tag numbers and its universal strings in one segment (X.690
8.1.2.4, 8.1.3, 8.7.3.2), then decoded with the compiled MTSAbstractService (asn1tools);
O/R names, trace, the security label and priority-level-qualifier are read with the
project's own decoders, which take every form.

Public API::

    extension_label(ext_type) -> str          "latest-delivery-time", "standard-extension 99"
    view_extension(ext, full_bytes=False) -> ExtensionView
    describe_extension(ext) -> str            one line for people
    ExtensionView                             label, criticality, value | error and hex
    UNKNOWN                                   the error of an extension type not known here
    normalised(data) -> bytes                 one BER value in definite, low-tag form
    security_label_plain(label, full_bytes)   a SecurityLabel as JSON-ready data
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from p1 import ber
from p1.ber import Tlv
from p1.errors import DecodeError
from p1.mts.extensions import (
    ExtensionField,
    ExtensionType,
    StandardExtension,
    internal_trace,
    priority_level_qualifier,
)
from p1.mts.fields import Criticality, GlobalDomainIdentifier
from p1.mts.precedence import PRIORITY_LEVEL_QUALIFIER_OID
from p1.mts.security_label import SecurityLabel, decode_security_label
from p1.render import HEX_LIMIT, Plain, to_plain

_MTS = "MTSAbstractService"
_MTA = "MTAAbstractService"
_IPMS = "IPMSInformationObjects"
_IPMS_SECURITY = "IPMSSecurityExtensions"
_AUTHENTICATION = "AuthenticationFramework"

_Decoder = Callable[[bytes, bool], Plain]
"""Reads the BER of a value, :func:`normalised` (``full``: long octets whole), or raises
DecodeError."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtensionView:
    """One extension as people read it (X.411 clause 9.1).

    ``value`` is the decoded value as :func:`p1.render.to_plain` data (None: the
    extension has no value, which means NULL); when the value does not decode as its
    type, or the type is not known, ``error`` says why and ``hex`` holds its BER.
    """

    label: str
    """The extension's name (:func:`extension_label`)."""
    criticality: tuple[str, ...] = ()
    """The steps it is critical for: ``for-submission``, ``for-transfer``, ``for-delivery``."""
    value: Plain = None
    """The decoded value; None when absent or not decoded."""
    error: str | None = None
    """Why the value is not shown decoded; None when it is."""
    hex: str | None = None
    """The value's BER in hex when it is not shown decoded."""

    @property
    def decoded(self) -> bool:
        """Whether ``value`` is the decoded value (or the value is absent)."""
        return self.error is None


@dataclass(frozen=True, slots=True)
class _Syntax:
    """An EXTENSION object: its identifier and how its value reads."""

    name: str
    decode: _Decoder


# --- value renderings ------------------------------------------------------------------


def _hex(data: bytes, full: bool) -> Plain:
    """Octets in hex, as :func:`p1.render.to_plain` shows binary: whole, or summarised."""
    if full or len(data) <= HEX_LIMIT:
        return data.hex()
    return {"length": len(data), "hex-prefix": data[:HEX_LIMIT].hex()}


def _iso_time(text: str) -> str:
    """An X.411 ``Time`` (UTCTime text) in ISO 8601 (X.411 clause 18.2, X.680 47.3)."""
    return ber.parse_utctime(text, "Time").isoformat()


_TIME_MEMBERS = frozenset(
    {"redirection-time", "dl-expansion-time", "origination-or-expansion-time"}
)
"""The members of type ``Time`` in the histories (X.411 clause 9: Redirection,
DLExpansion, OriginatorAndDLExpansion): asn1tools gives them as their UTCTime text."""

_GDI_MEMBERS = frozenset(
    {"country-name", "administration-domain-name", "private-domain-identifier"}
)
"""The members of ``GlobalDomainIdentifier`` (X.411 clause 18.3.1)."""


def _generic(value: Any, full: bool) -> Plain:
    """An asn1tools value as plain data: SEQUENCE and SET as dicts, CHOICE as
    ``{alternative: value}``, octets in hex; O/R names and domains as text."""
    if isinstance(value, dict):
        return _members(value, full)
    if isinstance(value, tuple):
        return _tuple(value, full)
    if isinstance(value, list):
        return [_generic(item, full) for item in value]
    if isinstance(value, bytes | bytearray):
        return _hex(bytes(value), full)
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _members(value: dict[str, Any], full: bool) -> Plain:
    if "built-in-standard-attributes" in value:
        text = _orname_text(value)
        if text is not None:
            return text
    if {"country-name", "administration-domain-name"} <= value.keys() <= _GDI_MEMBERS:
        return _gdi_text(value)
    return {key: _member(key, item, full) for key, item in value.items()}


def _member(key: str, item: Any, full: bool) -> Plain:
    if key in _TIME_MEMBERS and isinstance(item, str):
        return _iso_time(item)
    return _generic(item, full)


def _tuple(value: tuple[Any, ...], full: bool) -> Plain:
    first, second = value if len(value) == 2 else (None, None)
    if isinstance(first, str):  # CHOICE: (alternative, value)
        return {first: _generic(second, full)}
    if isinstance(first, bytes | bytearray) and isinstance(second, int):  # BIT STRING
        octets = bytes(first)[: (second + 7) // 8]
        return _hex(octets, full) if second % 8 == 0 else {"bits": second, "hex": octets.hex()}
    return [_generic(item, full) for item in value]


def _orname_text(value: dict[str, Any]) -> str | None:
    """An asn1tools ORName or ORAddress as its text form, through the project's model;
    None when the model refuses it (the structure is shown instead)."""
    from p1.mts.orname import format_orname
    from p1.orname.ber import orname_from_asn1

    try:
        return format_orname(orname_from_asn1(value))
    except (DecodeError, ValueError):
        return None


def _gdi_text(value: dict[str, Any]) -> str:
    """``GB;ADMD;PRMD``, as :attr:`GlobalDomainIdentifier.text` writes a domain."""
    prmd = value.get("private-domain-identifier")
    return GlobalDomainIdentifier(
        country=str(value["country-name"][1]),
        admd=str(value["administration-domain-name"][1]),
        prmd=None if prmd is None else str(prmd[1]),
    ).text


# --- BER forms -------------------------------------------------------------------------

_UNIVERSAL_STRINGS = frozenset(ber.universal(n) for n in (4, 7, 12, *range(18, 31)))
"""Universal types whose value may be sent in segments (X.690 8.7.3, 8.21.5, 8.23.6)."""


def normalised(data: bytes) -> bytes:
    """``data`` (one BER value) with definite lengths, low tag numbers and every
    universal string in one primitive segment: the same value, in the form asn1tools
    reads (X.690 8.1.2.4, 8.1.3, 8.7.3.2, 8.6.4)."""
    return _rewrite(ber.read_single(data, "value"))


def _rewrite(tlv: Tlv) -> bytes:
    if tlv.tag == ber.BIT_STRING:
        octets, length = ber.read_bits(tlv, "BIT STRING")
        return ber.tlv(tlv.tag, ber.bits_contents(octets, length))
    if tlv.tag in _UNIVERSAL_STRINGS:
        return ber.tlv(tlv.tag, ber.read_octets(tlv, "string"))
    if not tlv.constructed:
        return ber.tlv(tlv.tag, tlv.contents())
    return ber.constructed(tlv.tag, (_rewrite(child) for child in ber.children(tlv, "value")))


# --- decoders --------------------------------------------------------------------------


def _asn1_value(module: str, type_name: str, data: bytes) -> Any:
    from p1 import asn1

    return asn1.decode(module, type_name, data)


def _asn1(module: str, type_name: str) -> _Decoder:
    """The value as ``module.type_name``, shown generically."""

    def decode(data: bytes, full: bool) -> Plain:
        return _generic(_asn1_value(module, type_name, data), full)

    return decode


def _named_int(module: str, type_name: str, names: Mapping[int, str]) -> _Decoder:
    """An INTEGER with named numbers, by name (the number when it has none)."""

    def decode(data: bytes, full: bool) -> Plain:
        number = int(_asn1_value(module, type_name, data))
        return names.get(number, number)

    return decode


def _named_ints(module: str, type_name: str, names: Mapping[int, str]) -> _Decoder:
    """A SEQUENCE OF named INTEGER, each by name."""

    def decode(data: bytes, full: bool) -> Plain:
        return [names.get(int(n), int(n)) for n in _asn1_value(module, type_name, data)]

    return decode


def _named_bits(module: str, type_name: str, names: tuple[str, ...]) -> _Decoder:
    """A BIT STRING with named bits: the names of the bits that are one."""

    def decode(data: bytes, full: bool) -> Plain:
        octets, length = _asn1_value(module, type_name, data)
        numbers = sorted(ber.bits_to_numbers(bytes(octets), int(length)))
        return [names[n] if n < len(names) else f"bit-{n}" for n in numbers]

    return decode


def _time(module: str, type_name: str) -> _Decoder:
    """An X.411 ``Time`` in ISO 8601."""

    def decode(data: bytes, full: bool) -> Plain:
        return _iso_time(str(_asn1_value(module, type_name, data)))

    return decode


def _orname(data: bytes, full: bool) -> Plain:
    """``ORAddressAndOrDirectoryName`` / ``ORAddressAndOptionalDirectoryName`` (ORName,
    X.411 clause 18.5) as text."""
    from p1.mts.orname import decode_orname, format_orname

    return format_orname(decode_orname(data))


def _oraddress(data: bytes, full: bool) -> Plain:
    """``ORAddress`` (X.411 clause 18.5) as text."""
    from p1.mts.orname import decode_oraddress, format_orname

    return format_orname(decode_oraddress(data))


def _sequence_number(data: bytes, full: bool) -> Plain:
    """forwarding-request: ``SequenceNumber ::= INTEGER (0..ub-messages)`` (X.413 clause
    7.2.4; the MS module is not compiled here)."""
    return ber.read_int(ber.expect(ber.read_single(data, "value"), ber.INTEGER, "value"), "value")


def _trace(data: bytes, full: bool) -> Plain:
    """``TraceInformation`` (X.411 clause 12.2.1.1.1), read by :mod:`p1.mts.trace`."""
    from p1.mts.trace import decode_trace

    return to_plain(decode_trace(ber.read_single(data, "value"), "value"), full_bytes=full)


def _internal_trace(data: bytes, full: bool) -> Plain:
    """``InternalTraceInformation`` (X.411 clause 12.2.1.1.1)."""
    probe = ExtensionField(type=StandardExtension.INTERNAL_TRACE_INFORMATION, value=data)
    return to_plain(internal_trace((probe,), None, "value"), full_bytes=full)


def _security_label(data: bytes, full: bool) -> Plain:
    """``MessageSecurityLabel ::= SecurityLabel`` (X.411 clause 10.3), by
    :mod:`p1.mts.security_label`."""
    return security_label_plain(decode_security_label(data, "message-security-label"), full)


def _level_qualifier(data: bytes, full: bool) -> Plain:
    """STANAG 4406 Annex A ``PriorityLevelQualifier ::= ENUMERATED { low(0), high(1) }``,
    read as the MTA reads it (:func:`p1.mts.extensions.priority_level_qualifier`)."""
    probe = ExtensionField(type=PRIORITY_LEVEL_QUALIFIER_OID, value=data)
    qualifier = priority_level_qualifier((probe,))
    if qualifier is None:  # (not reached: the extension is there)
        raise DecodeError("no value", where="priority-level-qualifier")
    return qualifier.label


def security_label_plain(label: SecurityLabel, full_bytes: bool = False) -> Plain:
    """A SecurityLabel for JSON and text: classification by name (and number), policy,
    privacy mark, categories (type and value hex) and the one-line ``text``
    (X.411 clause 10.3)."""
    out: dict[str, Plain] = {"@type": "SecurityLabel"}
    if label.classification is not None:
        out["classification"] = label.classification_name
        out["classification-value"] = label.classification
    if label.policy is not None:
        out["policy"] = label.policy
    if label.privacy_mark is not None:
        out["privacy-mark"] = label.privacy_mark
    if label.categories:
        out["categories"] = [
            {"type": c.type, "value": _hex(c.value, full_bytes)} for c in label.categories
        ]
    out["text"] = label.describe()
    return out


# --- the EXTENSION objects -------------------------------------------------------------

# RequestedDeliveryMethod ::= SEQUENCE OF INTEGER { any-delivery-method(0),
#   mhs-delivery(1), physical-delivery(2), telex-delivery(3), teletex-delivery(4),
#   g3-facsimile-delivery(5), g4-facsimile-delivery(6), ia5-terminal-delivery(7),
#   videotex-delivery(8), telephone-delivery(9) } (0..ub-integer-options)
_DELIVERY_METHODS = dict(
    enumerate(
        (
            "any-delivery-method",
            "mhs-delivery",
            "physical-delivery",
            "telex-delivery",
            "teletex-delivery",
            "g3-facsimile-delivery",
            "g4-facsimile-delivery",
            "ia5-terminal-delivery",
            "videotex-delivery",
            "telephone-delivery",
        )
    )
)

# PhysicalDeliveryModes ::= BIT STRING { ordinary-mail(0), special-delivery(1),
#   express-mail(2), counter-collection(3), counter-collection-with-telephone-advice(4),
#   counter-collection-with-telex-advice(5), counter-collection-with-teletex-advice(6),
#   bureau-fax-delivery(7) } (SIZE (0..ub-bit-options))
_DELIVERY_MODES = (
    "ordinary-mail",
    "special-delivery",
    "express-mail",
    "counter-collection",
    "counter-collection-with-telephone-advice",
    "counter-collection-with-telex-advice",
    "counter-collection-with-teletex-advice",
    "bureau-fax-delivery",
)

# RegisteredMailType ::= INTEGER { non-registered-mail(0), registered-mail(1),
#   registered-mail-to-addressee-in-person(2) } (0..ub-integer-options)
_MAIL_TYPES = dict(
    enumerate(("non-registered-mail", "registered-mail", "registered-mail-to-addressee-in-person"))
)

# PhysicalDeliveryReportRequest ::= INTEGER { return-of-undeliverable-mail-by-PDS(0),
#   return-of-notification-by-PDS(1), return-of-notification-by-MHS(2),
#   return-of-notification-by-MHS-and-PDS(3) } (0..ub-integer-options)
_REPORT_REQUESTS = dict(
    enumerate(
        (
            "return-of-undeliverable-mail-by-PDS",
            "return-of-notification-by-PDS",
            "return-of-notification-by-MHS",
            "return-of-notification-by-MHS-and-PDS",
        )
    )
)


def _mts(type_name: str) -> _Decoder:
    return _asn1(_MTS, type_name)


_STANDARD: dict[int, _Syntax] = {
    # X.411 clause 9 (MTSAbstractService), in standard-extension order.
    1: _Syntax("recipient-reassignment-prohibited", _mts("RecipientReassignmentProhibited")),
    2: _Syntax("originator-requested-alternate-recipient", _orname),
    3: _Syntax("dl-expansion-prohibited", _mts("DLExpansionProhibited")),
    4: _Syntax("conversion-with-loss-prohibited", _mts("ConversionWithLossProhibited")),
    5: _Syntax("latest-delivery-time", _time(_MTS, "LatestDeliveryTime")),
    6: _Syntax(
        "requested-delivery-method",
        _named_ints(_MTS, "RequestedDeliveryMethod", _DELIVERY_METHODS),
    ),
    7: _Syntax("physical-forwarding-prohibited", _mts("PhysicalForwardingProhibited")),
    8: _Syntax("physical-forwarding-address-request", _mts("PhysicalForwardingAddressRequest")),
    9: _Syntax(
        "physical-delivery-modes", _named_bits(_MTS, "PhysicalDeliveryModes", _DELIVERY_MODES)
    ),
    10: _Syntax("registered-mail-type", _named_int(_MTS, "RegisteredMailType", _MAIL_TYPES)),
    11: _Syntax("recipient-number-for-advice", _mts("RecipientNumberForAdvice")),
    12: _Syntax("physical-rendition-attributes", _mts("PhysicalRenditionAttributes")),
    13: _Syntax("originator-return-address", _oraddress),
    14: _Syntax(
        "physical-delivery-report-request",
        _named_int(_MTS, "PhysicalDeliveryReportRequest", _REPORT_REQUESTS),
    ),
    15: _Syntax("originator-certificate", _mts("OriginatorCertificate")),
    16: _Syntax("message-token", _mts("MessageToken")),
    17: _Syntax(
        "content-confidentiality-algorithm-identifier",
        _mts("ContentConfidentialityAlgorithmIdentifier"),
    ),
    18: _Syntax("content-integrity-check", _mts("ContentIntegrityCheck")),
    19: _Syntax("message-origin-authentication-check", _mts("MessageOriginAuthenticationCheck")),
    20: _Syntax("message-security-label", _security_label),
    21: _Syntax("proof-of-submission-request", _mts("ProofOfSubmissionRequest")),
    22: _Syntax("proof-of-delivery-request", _mts("ProofOfDeliveryRequest")),
    23: _Syntax("content-correlator", _mts("ContentCorrelator")),
    24: _Syntax("probe-origin-authentication-check", _mts("ProbeOriginAuthenticationCheck")),
    25: _Syntax("redirection-history", _mts("RedirectionHistory")),
    26: _Syntax("dl-expansion-history", _mts("DLExpansionHistory")),
    27: _Syntax("physical-forwarding-address", _orname),
    28: _Syntax("recipient-certificate", _mts("RecipientCertificate")),
    29: _Syntax("proof-of-delivery", _mts("ProofOfDelivery")),
    30: _Syntax("originator-and-DL-expansion-history", _mts("OriginatorAndDLExpansionHistory")),
    31: _Syntax("reporting-DL-name", _orname),
    32: _Syntax("reporting-MTA-certificate", _mts("ReportingMTACertificate")),
    33: _Syntax("report-origin-authentication-check", _mts("ReportOriginAuthenticationCheck")),
    34: _Syntax("originating-MTA-certificate", _mts("OriginatingMTACertificate")),
    35: _Syntax("proof-of-submission", _mts("ProofOfSubmission")),
    # X.413 clause 7.2.4 (MSAbstractService).
    36: _Syntax("forwarding-request", _sequence_number),
    # X.411 clause 12.2.1.1.1 (MTAAbstractService, Figure 4).
    37: _Syntax("trace-information", _trace),
    38: _Syntax("internal-trace-information", _internal_trace),
    # X.411 clause 9 again.
    39: _Syntax("reporting-MTA-name", _mts("ReportingMTAName")),
    40: _Syntax("multiple-originator-certificates", _mts("ExtendedCertificates")),
    # X.420 clause 7.2.4 (IPMSInformationObjects): BlindCopyRecipientsField.
    41: _Syntax("blind-copy-recipients", _asn1(_IPMS, "BlindCopyRecipientsField")),
    42: _Syntax("dl-exempted-recipients", _mts("DLExemptedRecipients")),
    # X.420 clause 11.2 (IPMSSecurityExtensions).
    43: _Syntax("body-part-encryption-token", _asn1(_IPMS_SECURITY, "BodyPartTokens")),
    44: _Syntax("forwarded-content-token", _asn1(_IPMS_SECURITY, "ForwardedContentToken")),
    45: _Syntax("certificate-selectors", _mts("CertificateSelectors")),
    # CertificateSelectors (WITH COMPONENTS {..., message-origin-authentication ABSENT}).
    46: _Syntax("certificate-selectors-override", _mts("CertificateSelectors")),
}
"""Each standard-extension by number: its EXTENSION object's name and value type."""

_PRIVATE: dict[str, _Syntax] = {
    PRIORITY_LEVEL_QUALIFIER_OID: _Syntax("priority-level-qualifier", _level_qualifier),
}
"""The private extensions known here, by object identifier (STANAG 4406 Annex A)."""


def _syntax(ext_type: ExtensionType) -> _Syntax | None:
    if isinstance(ext_type, str):
        return _PRIVATE.get(ext_type)
    return _STANDARD.get(int(ext_type))


# --- the views -------------------------------------------------------------------------


def extension_label(ext_type: ExtensionType) -> str:
    """The name of an extension type: its EXTENSION object's identifier
    (``latest-delivery-time`` for standard-extension 5, ``priority-level-qualifier`` for
    STANAG 4406's 1.3.26.0.4406.0.8.0); ``standard-extension 99`` or the dotted object
    identifier for one not known here (X.411 clause 9.1)."""
    syntax = _syntax(ext_type)
    if syntax is not None:
        return syntax.name
    return ext_type if isinstance(ext_type, str) else f"standard-extension {int(ext_type)}"


def _criticality_names(criticality: Criticality | None) -> tuple[str, ...]:
    if criticality is None:
        return ()
    flags = (
        ("for-submission", criticality.for_submission),
        ("for-transfer", criticality.for_transfer),
        ("for-delivery", criticality.for_delivery),
    )
    return tuple(name for name, on in flags if on)


UNKNOWN = "unknown extension type"
"""The ``error`` of a view whose extension type is not known here."""


def view_extension(ext: ExtensionField, *, full_bytes: bool = False) -> ExtensionView:
    """``ext`` named and its value decoded as its type (X.411 clause 9.1); a value that
    does not decode, or of a type not known here, gives ``error`` and ``hex``."""
    label = extension_label(ext.type)
    criticality = _criticality_names(ext.criticality)
    if ext.value is None:
        return ExtensionView(label=label, criticality=criticality)
    syntax = _syntax(ext.type)
    data = bytes(ext.value)
    if syntax is None:
        return ExtensionView(label=label, criticality=criticality, error=UNKNOWN, hex=data.hex())
    try:
        value = syntax.decode(normalised(data), full_bytes)
    except (DecodeError, ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:
        why = str(exc) if isinstance(exc, DecodeError) else f"{type(exc).__name__}: {exc}"
        return ExtensionView(label=label, criticality=criticality, error=why, hex=data.hex())
    return ExtensionView(label=label, criticality=criticality, value=value)


def describe_extension(ext: ExtensionField) -> str:
    """One line for people: ``latest-delivery-time: 2026-11-25T10:00:00+00:00 (critical
    for delivery)``; a value that does not decode shows its hex and why."""
    view = view_extension(ext)
    if view.error == UNKNOWN:
        text = f"{view.hex} ({UNKNOWN})"
    elif view.error is not None:
        text = f"{view.hex} (does not decode: {view.error})"
    elif ext.value is None:
        text = "no value"
    else:
        text = _inline(view.value)
    steps = ", ".join(step.removeprefix("for-") for step in view.criticality)
    return f"{view.label}: {text}" + (f" (critical for {steps})" if steps else "")


def _inline(plain: Plain) -> str:
    """Plain data on one line: lists in brackets, dicts as ``key: value`` pairs in
    braces; a security label by its one-line text."""
    if isinstance(plain, dict):
        text = plain.get("text")
        if plain.get("@type") == "SecurityLabel" and isinstance(text, str):
            return text
        items = (f"{key}: {_inline(item)}" for key, item in plain.items() if key != "@type")
        return "{" + ", ".join(items) + "}"
    if isinstance(plain, list):
        return "[" + ", ".join(_inline(item) for item in plain) + "]"
    if plain is None:
        return "-"
    if isinstance(plain, bool):
        return "yes" if plain else "no"
    return str(plain)
