"""Extension fields of the X.411 transfer envelopes (X.411 clause 9.1, Annex A).

Extension fields are kept as received (:class:`ExtensionField`: type, criticality,
value BER), so unknown standard and private extensions are relayed byte-exact.  The
ones an MTA acts on are read through typed accessors (:func:`latest_delivery_time`,
:func:`priority_level_qualifier`, :func:`internal_trace`, :func:`prohibited`) or the
:class:`ExtensionViews` properties of an envelope, and built with the ``*_extension``
functions.

PP's form of ``ExtensionField.type`` (``[0] EXPLICIT CHOICE { INTEGER, OBJECT IDENTIFIER
}``, ``a0 03 02 01 26``, where X.411 has the untagged choice ``[0] INTEGER | [3] OBJECT
IDENTIFIER``, ``80 01 26``) is read as the type it names and listed as a
:class:`p1.ber.Deviation`; the field remembers that encoding
(:attr:`ExtensionField.type_encoding`) and writes it back as received while its type is
unchanged, so a relayed envelope or report, and a received extension copied into a report
(content-correlator), keep PP's octets.  An extension built in code is written in the
standard's form.

Public API::

    ExtensionField, ExtensionType (= int | str), StandardExtension
    find_extension, with_extension, without_extension
    latest_delivery_time / latest_delivery_time_extension
    priority_level_qualifier / priority_level_qualifier_extension
    internal_trace / internal_trace_extension / with_internal_trace_entry
    prohibited / prohibition_extension
    ExtensionViews (mixin), check_known_extensions
    decode_extension(s) / encode_extension(s) (TLV level)
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from p1 import ber
from p1.ber import Deviations, Tlv, context
from p1.errors import DecodeError, EncodeError
from p1.mts.fields import Criticality, decode_bits, encode_bits
from p1.mts.precedence import PRIORITY_LEVEL_QUALIFIER_OID, LevelQualifier
from p1.mts.trace import (
    InternalTraceEntry,
    decode_internal_trace_entry,
    encode_internal_trace_entry,
)

# --- extensions ------------------------------------------------------------------------


class StandardExtension(enum.IntEnum):
    """X.411 clause 9 ``StandardExtension`` integer codes (MTSAbstractService)."""

    RECIPIENT_REASSIGNMENT_PROHIBITED = 1
    ORIGINATOR_REQUESTED_ALTERNATE_RECIPIENT = 2
    DL_EXPANSION_PROHIBITED = 3
    CONVERSION_WITH_LOSS_PROHIBITED = 4
    LATEST_DELIVERY_TIME = 5
    REQUESTED_DELIVERY_METHOD = 6
    PHYSICAL_FORWARDING_PROHIBITED = 7
    PHYSICAL_FORWARDING_ADDRESS_REQUEST = 8
    PHYSICAL_DELIVERY_MODES = 9
    REGISTERED_MAIL_TYPE = 10
    RECIPIENT_NUMBER_FOR_ADVICE = 11
    PHYSICAL_RENDITION_ATTRIBUTES = 12
    ORIGINATOR_RETURN_ADDRESS = 13
    PHYSICAL_DELIVERY_REPORT_REQUEST = 14
    ORIGINATOR_CERTIFICATE = 15
    MESSAGE_TOKEN = 16
    CONTENT_CONFIDENTIALITY_ALGORITHM_IDENTIFIER = 17
    CONTENT_INTEGRITY_CHECK = 18
    MESSAGE_ORIGIN_AUTHENTICATION_CHECK = 19
    MESSAGE_SECURITY_LABEL = 20
    PROOF_OF_SUBMISSION_REQUEST = 21
    PROOF_OF_DELIVERY_REQUEST = 22
    CONTENT_CORRELATOR = 23
    PROBE_ORIGIN_AUTHENTICATION_CHECK = 24
    REDIRECTION_HISTORY = 25
    DL_EXPANSION_HISTORY = 26
    PHYSICAL_FORWARDING_ADDRESS = 27
    RECIPIENT_CERTIFICATE = 28
    PROOF_OF_DELIVERY = 29
    ORIGINATOR_AND_DL_EXPANSION_HISTORY = 30
    REPORTING_DL_NAME = 31
    REPORTING_MTA_CERTIFICATE = 32
    REPORT_ORIGIN_AUTHENTICATION_CHECK = 33
    ORIGINATING_MTA_CERTIFICATE = 34
    PROOF_OF_SUBMISSION = 35
    FORWARDING_REQUEST = 36
    TRACE_INFORMATION = 37
    INTERNAL_TRACE_INFORMATION = 38
    REPORTING_MTA_NAME = 39
    MULTIPLE_ORIGINATOR_CERTIFICATES = 40
    BLIND_COPY_RECIPIENTS = 41
    DL_EXEMPTED_RECIPIENTS = 42
    BODY_PART_ENCRYPTION_TOKEN = 43
    FORWARDED_CONTENT_TOKEN = 44
    CERTIFICATE_SELECTORS = 45
    CERTIFICATE_SELECTORS_OVERRIDE = 46


ExtensionType = int | str
"""``standard-extension`` integer or ``private-extension`` object identifier (dotted)."""


# ExtensionField ::= SEQUENCE {
#   type         ExtensionType,      -- CHOICE { standard-extension [0] INTEGER,
#                                    --          private-extension  [3] OBJECT IDENTIFIER }
#   criticality  [1] Criticality DEFAULT {},
#   value        [2] ANY DEFAULT NULL:NULL }
@dataclass(frozen=True, slots=True, kw_only=True)
class ExtensionField:
    """One extension of an envelope or recipient, kept byte-exact (X.411 clause 9.1).

    ``criticality`` None means the member was absent (non-critical); ``value`` is the
    BER of the value inside ``[2]`` (None: absent, which means NULL).
    """

    type: ExtensionType
    criticality: Criticality | None = None
    value: bytes | None = None
    type_encoding: bytes | None = field(default=None, compare=False, repr=False)
    """The type's encoding as received when it was not the standard's (PP's ``[0]
    EXPLICIT``), written back as received while it still names ``type``; None for the
    standard's form."""

    @property
    def critical_for_transfer(self) -> bool:
        """An MTA that does not know this extension must not transfer the message."""
        return self.criticality is not None and self.criticality.for_transfer

    @property
    def critical_for_delivery(self) -> bool:
        """A delivering MTA that does not know this extension must not deliver."""
        return self.criticality is not None and self.criticality.for_delivery


_EXT_STANDARD = context(0)
_EXT_PRIVATE = context(3)
_EXT_CRITICALITY = context(1)
_EXT_VALUE = context(2)


def decode_extension(
    tlv: Tlv, what: str = "ExtensionField", deviations: Deviations | None = None
) -> ExtensionField:
    """ExtensionField (a SEQUENCE: type, criticality?, value?); a type in PP's form is
    appended to ``deviations``."""
    if tlv.tag != ber.SEQUENCE:
        ber.expect(tlv, ber.SEQUENCE, what)
    parts = ber.children(tlv, what)
    if not parts:
        raise DecodeError("missing type", where=what)
    ext_type = _decode_type(parts[0], what)
    type_encoding = None
    if ext_type is None:  # (not the standard's form)
        ext_type = _decode_explicit_type(parts[0], what)
        type_encoding = parts[0].raw()
        if deviations is not None:
            deviations.append(_type_deviation(type_encoding, ext_type, f"{what}.type"))
    criticality = value = None
    count, index = len(parts), 1
    if index < count and parts[index].tag == _EXT_CRITICALITY:
        criticality = decode_bits(Criticality, parts[index], f"{what}.criticality")
        index += 1
    if index < count and parts[index].tag == _EXT_VALUE:
        value = ber.only_child(parts[index], f"{what}.value").raw()
        index += 1
    if index < count:
        raise DecodeError(f"unexpected {ber.tag_name(parts[index].tag)}", where=what)
    if type_encoding is None:
        return ExtensionField(type=ext_type, criticality=criticality, value=value)
    return ExtensionField(
        type=ext_type, criticality=criticality, value=value, type_encoding=type_encoding
    )


def _decode_type(tlv: Tlv, what: str) -> ExtensionType | None:
    """``ExtensionType ::= CHOICE { standard-extension [0] INTEGER, private-extension
    [3] OBJECT IDENTIFIER }`` (X.411 clause 9.1), or None for a constructed ``[0]``."""
    if tlv.tag == _EXT_PRIVATE:
        return ber.read_oid(tlv, f"{what}.type")
    if tlv.constructed and tlv.tag == _EXT_STANDARD:
        return None
    number = ber.read_int(ber.expect(tlv, _EXT_STANDARD, f"{what}.type"), f"{what}.type")
    return _standard(number)


def _decode_explicit_type(tlv: Tlv, what: str) -> ExtensionType:
    """PP's ``[0] EXPLICIT CHOICE { INTEGER, OBJECT IDENTIFIER }``."""
    inner = ber.only_child(tlv, f"{what}.type")
    if inner.tag == ber.OBJECT_IDENTIFIER:
        return ber.read_oid(inner, f"{what}.type")
    number = ber.read_int(ber.expect(inner, ber.INTEGER, f"{what}.type"), f"{what}.type")
    return _standard(number)


def _type_deviation(encoding: bytes, ext_type: ExtensionType, what: str) -> ber.Deviation:
    kind = "private-extension" if isinstance(ext_type, str) else "standard-extension"
    return ber.Deviation(what, encoding.hex(" "), f"{kind} {ext_type}")


def _type_part(value: ExtensionField, what: str) -> bytes:
    """The type as received when it was received in another form and still names
    ``value.type``, else in the standard's form."""
    received = value.type_encoding
    if received is not None:
        try:
            tlv = ber.read_single(received, what)
            same = tlv.tag == _EXT_STANDARD and _same_type(
                _decode_explicit_type(tlv, what), value.type
            )
        except DecodeError:
            same = False
        if same:
            return bytes(received)
    if isinstance(value.type, str):
        return ber.tlv(_EXT_PRIVATE, ber.oid_contents(value.type, what))
    number = ber.check_int(value.type, what, 0, 2**31 - 1)
    return ber.tlv(_EXT_STANDARD, ber.int_contents(number))


def _standard(number: int) -> int:
    return _STANDARD_EXTENSIONS.get(number, number)


_STANDARD_EXTENSIONS: dict[int, int] = {int(kind): kind for kind in StandardExtension}


def encode_extension(value: ExtensionField) -> bytes:
    """ExtensionField as a SEQUENCE."""
    what = "ExtensionField"
    if not isinstance(value, ExtensionField):
        raise EncodeError(f"{value!r} is not an ExtensionField", where=what)
    parts = [_type_part(value, f"{what}.type")]
    if value.criticality is not None:
        parts.append(encode_bits(value.criticality, _EXT_CRITICALITY, f"{what}.criticality"))
    if value.value is not None:
        if not isinstance(value.value, bytes | bytearray):
            raise EncodeError("value must be the BER of the value", where=f"{what}.value")
        ber.check_single_tlv(value.value, f"{what}.value")
        parts.append(ber.tlv(_EXT_VALUE, value.value, True))  # (constructed)
    return ber.constructed(ber.SEQUENCE, parts)


def decode_extensions(
    tlv: Tlv, what: str, deviations: Deviations | None = None
) -> tuple[ExtensionField, ...]:
    """``SET OF ExtensionField`` (under any tag), in the order received."""
    return tuple(
        decode_extension(child, f"{what}[{index}]", deviations)
        for index, child in enumerate(ber.children(tlv, what))
    )


def encode_extensions(values: Sequence[ExtensionField], tag: int) -> bytes:
    """``SET OF ExtensionField`` under ``tag``, in the order given."""
    return ber.constructed(tag, (encode_extension(v) for v in values))


def decode_optional_extensions(
    tlv: Tlv | None, what: str, deviations: Deviations | None = None
) -> tuple[ExtensionField, ...]:
    """The ``extensions`` member of ``what`` (``DEFAULT {}``): empty when absent."""
    return () if tlv is None else decode_extensions(tlv, f"{what}.extensions", deviations)


def encode_kept_extensions(
    values: Sequence[ExtensionField], tag: int, order: Sequence[str]
) -> bytes | None:
    """The ``extensions`` member under ``tag``, or None where the SET leaves its empty
    ``DEFAULT {}`` out (:func:`p1.ber.keep`)."""
    return encode_extensions(values, tag) if ber.keep("extensions", not values, order) else None


def _same_type(a: ExtensionType, b: ExtensionType) -> bool:
    # A standard integer never equals a private OID, even as text.
    return a == b and isinstance(a, str) == isinstance(b, str)


def find_extension(
    extensions: Iterable[ExtensionField], ext_type: ExtensionType
) -> ExtensionField | None:
    """The first extension of ``ext_type``, or None."""
    for extension in extensions:
        if _same_type(extension.type, ext_type):
            return extension
    return None


def with_extension(
    extensions: Sequence[ExtensionField], new: ExtensionField
) -> tuple[ExtensionField, ...]:
    """``extensions`` with the one of ``new.type`` replaced in place, else ``new`` appended."""
    out = list(extensions)
    for index, extension in enumerate(out):
        if _same_type(extension.type, new.type):
            out[index] = new
            return tuple(out)
    return (*out, new)


def without_extension(
    extensions: Sequence[ExtensionField], ext_type: ExtensionType
) -> tuple[ExtensionField, ...]:
    """``extensions`` without those of ``ext_type``."""
    return tuple(e for e in extensions if not _same_type(e.type, ext_type))


# --- typed extensions ------------------------------------------------------------------


def _value_tlv(extension: ExtensionField, what: str) -> Tlv | None:
    if extension.value is None:
        return None
    return ber.read_single(extension.value, what)


def latest_delivery_time(extensions: Iterable[ExtensionField]) -> datetime | None:
    """The latest-delivery-time extension (standard-extension 5), or None."""
    extension = find_extension(extensions, StandardExtension.LATEST_DELIVERY_TIME)
    if extension is None:
        return None
    what = "latest-delivery-time"
    value = _value_tlv(extension, what)
    if value is None:
        raise DecodeError("the extension has no value", where=what)
    return ber.read_utctime(ber.expect(value, ber.UTC_TIME, what), what)


def latest_delivery_time_extension(value: datetime) -> ExtensionField:
    """latest-delivery-time, with its recommended criticality {for-delivery}."""
    return ExtensionField(
        type=StandardExtension.LATEST_DELIVERY_TIME,
        criticality=Criticality(for_delivery=True),
        value=ber.tlv(ber.UTC_TIME, ber.utctime_contents(value, "latest-delivery-time")),
    )


_LEVEL_QUALIFIER_TAGS = (ber.ENUMERATED, ber.INTEGER)


def priority_level_qualifier(extensions: Iterable[ExtensionField]) -> LevelQualifier | None:
    """STANAG 4406 priority-level-qualifier (private 1.3.26.0.4406.0.8.0), or None.

    ``ENUMERATED { low(0), high(1) }``; an INTEGER is accepted too.
    """
    extension = find_extension(extensions, PRIORITY_LEVEL_QUALIFIER_OID)
    if extension is None:
        return None
    if type(extension.value) is bytes:
        known = _LEVEL_QUALIFIER_ENCODINGS.get(extension.value)
        if known is not None:  # the usual encodings, looked up: read below as they would be
            return known
    what = "priority-level-qualifier"
    value = _value_tlv(extension, what)
    if value is None or value.tag not in _LEVEL_QUALIFIER_TAGS:
        raise DecodeError("expected ENUMERATED { low(0), high(1) }", where=what)
    return _LEVEL_QUALIFIERS[ber.read_bounded_int(value, what, 0, 1)]


_LEVEL_QUALIFIERS = (LevelQualifier.LOW, LevelQualifier.HIGH)
"""By value (an index, not LevelQualifier(value): quicker)."""
_LEVEL_QUALIFIER_ENCODINGS = {
    ber.tlv(tag, ber.int_contents(qualifier)): qualifier
    for tag in _LEVEL_QUALIFIER_TAGS
    for qualifier in _LEVEL_QUALIFIERS
}
"""Each qualifier by its shortest encodings (ENUMERATED, and INTEGER)."""


def priority_level_qualifier_extension(value: LevelQualifier) -> ExtensionField:
    """priority-level-qualifier as an ENUMERATED, non-critical."""
    number = ber.check_int(value, "priority-level-qualifier", 0, 1)
    return ExtensionField(
        type=PRIORITY_LEVEL_QUALIFIER_OID, value=ber.tlv(ber.ENUMERATED, ber.int_contents(number))
    )


def internal_trace(
    extensions: Iterable[ExtensionField],
    deviations: Deviations | None = None,
    what: str = "internal-trace-information",
) -> tuple[InternalTraceEntry, ...]:
    """The internal-trace-information extension (standard-extension 38); () if absent.
    Its times are read leniently (:mod:`p1.mts.trace`), tolerated ones appended to
    ``deviations``."""
    extension = find_extension(extensions, StandardExtension.INTERNAL_TRACE_INFORMATION)
    if extension is None:
        return ()
    value = _value_tlv(extension, what)
    if value is None:
        raise DecodeError("the extension has no value", where=what)
    return tuple(
        decode_internal_trace_entry(child, f"{what}[{index}]", deviations)
        for index, child in enumerate(ber.children(ber.expect(value, ber.SEQUENCE, what), what))
    )


def internal_trace_extension(
    entries: Sequence[InternalTraceEntry], criticality: Criticality | None = None
) -> ExtensionField:
    """internal-trace-information holding ``entries``."""
    value = ber.constructed(ber.SEQUENCE, (encode_internal_trace_entry(e) for e in entries))
    return ExtensionField(
        type=StandardExtension.INTERNAL_TRACE_INFORMATION, criticality=criticality, value=value
    )


def with_internal_trace_entry(
    extensions: Sequence[ExtensionField], entry: InternalTraceEntry
) -> tuple[ExtensionField, ...]:
    """``extensions`` with ``entry`` appended to internal-trace-information.

    The extension keeps its place, criticality and type encoding, and the entries
    already there keep their bytes; it is added at the end when absent.
    """
    old = find_extension(extensions, StandardExtension.INTERNAL_TRACE_INFORMATION)
    if old is None or old.value is None:
        return with_extension(extensions, internal_trace_extension([entry]))
    what = "internal-trace-information"
    value = ber.expect(ber.read_single(old.value, what), ber.SEQUENCE, what)
    items = [child.raw() for child in ber.children(value, what)]
    items.append(encode_internal_trace_entry(entry))
    new_value = ber.constructed(ber.SEQUENCE, items)
    return with_extension(extensions, replace(old, value=new_value))


_PROHIBITIONS = {
    StandardExtension.RECIPIENT_REASSIGNMENT_PROHIBITED,
    StandardExtension.DL_EXPANSION_PROHIBITED,
    StandardExtension.CONVERSION_WITH_LOSS_PROHIBITED,
}


def prohibited(extensions: Iterable[ExtensionField], ext_type: StandardExtension) -> bool:
    """recipient-reassignment-, dl-expansion- or conversion-with-loss-prohibited.

    ``ENUMERATED { ...-allowed(0), ...-prohibited(1) }``; an absent extension or value
    means allowed (X.411 clause 9, ``IF ABSENT``).
    """
    if ext_type not in _PROHIBITIONS:
        raise ValueError(f"{ext_type!r} is not a prohibition extension")
    extension = find_extension(extensions, ext_type)
    if extension is None:
        return False
    what = ext_type.name.lower().replace("_", "-")
    value = _value_tlv(extension, what)
    if value is None:
        return False
    return ber.read_bounded_int(ber.expect(value, ber.ENUMERATED, what), what, 0, 1) == 1


def prohibition_extension(ext_type: StandardExtension, value: bool = True) -> ExtensionField:
    """A prohibition extension with its recommended criticality {for-delivery}."""
    if ext_type not in _PROHIBITIONS:
        raise ValueError(f"{ext_type!r} is not a prohibition extension")
    return ExtensionField(
        type=ext_type,
        criticality=Criticality(for_delivery=True),
        value=ber.tlv(ber.ENUMERATED, ber.int_contents(int(value))),
    )


# --- typed extension views (mixin) -------------------------------------------------------------


class ExtensionViews:
    """Typed readings of the envelope extensions an MTA acts on."""

    __slots__ = ()
    extensions: tuple[ExtensionField, ...]

    @property
    def latest_delivery_time(self) -> datetime | None:
        """latest-delivery-time (standard-extension 5), or None."""
        return latest_delivery_time(self.extensions)

    @property
    def priority_level_qualifier(self) -> LevelQualifier | None:
        """STANAG 4406 priority-level-qualifier (private 1.3.26.0.4406.0.8.0), or None."""
        return priority_level_qualifier(self.extensions)

    @property
    def internal_trace(self) -> tuple[InternalTraceEntry, ...]:
        """internal-trace-information (standard-extension 38); () when absent."""
        return internal_trace(self.extensions)

    @property
    def recipient_reassignment_prohibited(self) -> bool:
        """recipient-reassignment-prohibited (standard-extension 1)."""
        return prohibited(self.extensions, StandardExtension.RECIPIENT_REASSIGNMENT_PROHIBITED)

    @property
    def dl_expansion_prohibited(self) -> bool:
        """dl-expansion-prohibited (standard-extension 3)."""
        return prohibited(self.extensions, StandardExtension.DL_EXPANSION_PROHIBITED)

    @property
    def conversion_with_loss_prohibited(self) -> bool:
        """conversion-with-loss-prohibited (standard-extension 4)."""
        return prohibited(self.extensions, StandardExtension.CONVERSION_WITH_LOSS_PROHIBITED)

    @property
    def content_correlator(self) -> ExtensionField | None:
        """content-correlator (standard-extension 23), to copy into reports as received."""
        return find_extension(self.extensions, StandardExtension.CONTENT_CORRELATOR)

    def unsupported_critical_extensions(
        self, known: frozenset[ExtensionType] | None = None
    ) -> tuple[ExtensionField, ...]:
        """Extensions critical for transfer whose type is not in ``known``
        (default :data:`INTERPRETED_EXTENSIONS`).

        X.411 clause 9.1: an MTA that meets one must not transfer the message but
        non-deliver it (unsupported-critical-function).
        """
        accepted = INTERPRETED_EXTENSIONS if known is None else known
        return tuple(
            e for e in self.extensions if e.critical_for_transfer and not _in(e.type, accepted)
        )


def _in(ext_type: ExtensionType, types: frozenset[ExtensionType]) -> bool:
    return any(_same_type(ext_type, other) for other in types)


INTERPRETED_EXTENSIONS: frozenset[ExtensionType] = frozenset(
    {
        *_PROHIBITIONS,
        StandardExtension.LATEST_DELIVERY_TIME,
        StandardExtension.INTERNAL_TRACE_INFORMATION,
        PRIORITY_LEVEL_QUALIFIER_OID,
    }
)
"""The extension types this package reads (the typed accessors above)."""


_Key = tuple[bool, ExtensionType]


def _key(ext_type: ExtensionType) -> _Key:
    # Hashable and equal exactly when _same_type says so.
    return isinstance(ext_type, str), ext_type


_CHECKS: tuple[tuple[_Key, Callable[[Sequence[ExtensionField]], object]], ...] = (
    (_key(StandardExtension.LATEST_DELIVERY_TIME), latest_delivery_time),
    (_key(PRIORITY_LEVEL_QUALIFIER_OID), priority_level_qualifier),
    (_key(StandardExtension.INTERNAL_TRACE_INFORMATION), internal_trace),
    *(
        (_key(ext_type), functools.partial(prohibited, ext_type=ext_type))
        for ext_type in _PROHIBITIONS
    ),
)


def check_known_extensions(
    extensions: Sequence[ExtensionField],
    deviations: Deviations | None = None,
    what: str = "extensions",
) -> None:
    """Decode the extensions this package interprets, so malformed ones fail early;
    tolerated values (times of the internal trace) are appended to ``deviations``, named
    under ``what`` (the extensions' path)."""
    try:
        present = {_key(extension.type) for extension in extensions}
    except TypeError:  # an unhashable type: look at every reading
        present = {key for key, _ in _CHECKS}
    for key, check in _CHECKS:
        if key in present:  # (an absent extension reads as absent: nothing to check)
            if check is internal_trace:
                internal_trace(extensions, deviations, f"{what}.internal-trace-information")
            else:
                check(extensions)
