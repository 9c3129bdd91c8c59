"""The IPM heading codec (X.420 clause 7.2; STANAG 4406 Annex A), by hand over BER.

The heading is read with the reader of :mod:`p1.ber` and written directly, not through
asn1tools, which costs hundreds of microseconds per heading.  The ASN.1 modules
(IPMSInformationObjects, MMSHeadingExtensions) remain the definition, and the tests
check these bytes against them.  The field types the heading shares with the IPN
(IPMIdentifier, ORDescriptor, IPMSExtension) are in :mod:`p1.ipms.fields` and re-exported
here; the STANAG 4406 heading extensions, each a field of :class:`Heading`, are in
:mod:`p1.ipms.mm_heading`.

Writing follows DER's order of SET members and leaves DEFAULT values out; the STANAG
4406 extensions are written in the order of their identifiers, then
``other_extensions``.  Reading accepts any BER (members in any order, defaults present,
indefinite lengths, segmented strings).  A STANAG 4406 heading extension whose value
does not read as its type, or that appears a second time, is kept as a
:class:`RawExtension` in ``other_extensions``.  PrintableString values are checked on
writing; TeletexString (subject, free-form name) is ISO 8859-1 here.

Times (expiry-time, reply-time, extended-authorisation-info) are not routed on: they are
read leniently (:func:`p1.ber.parse_lenient_utctime`: a UTCTime without its zone, as
products write them, is taken as UTC), keep their received text for writing back, and
are appended as :class:`p1.ber.Deviation` to the ``deviations`` list the caller passes,
with members whose tag number below 31 is written in the long form.

API (``view`` and ``tlv`` as in the tuple form of :func:`p1.ber.read`)::

    decode_heading(view, tlv, deviations=None) -> Heading
                                                       encode_heading(heading) -> bytes
    decode_ipm_identifier(view, tlv) -> IPMIdentifier  encode_ipm_identifier(id, octet)
    decode_descriptor(view, tlv) -> ORDescriptor       encode_descriptor(d, octet)
    decode_extensions(view, tlv) -> (RawExtension...)  encode_extensions(exts, octet)
    read_enum(view, tlv, cls, what), printable(value, what, low, high), utctime_bytes
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from p1 import ber
from p1.ber import Deviations, FlatTlv, View, tlv_bytes
from p1.errors import DecodeError
from p1.ipms.fields import (
    IPM_IDENTIFIER_OCTET,
    SEQUENCE_OCTET,
    SET_OCTET,
    TELETEX_OCTET,
    constructed,
    context,
    decode_descriptor,
    decode_extensions,
    decode_ipm_identifier,
    descriptor_bytes,
    descriptor_fields,
    encode_descriptor,
    encode_extension,
    encode_extensions,
    encode_ipm_identifier,
    extension_parts,
    integer_bytes,
    member_key,
    printable,
    read_enum,
    teletex,
    utctime_bytes,
    value_bytes,
)
from p1.ipms.mm_heading import (
    EXTENSIONS,
    EXTENSIONS_BY_OID,
    EXTENSIONS_BY_TLV,
    ID_MM,
    Extension,
    load_time,
)
from p1.ipms.models import (
    _HEADING_DEFAULTS,
    NO_REQUESTS,
    Heading,
    Importance,
    NotificationRequests,
    RawExtension,
    Recipient,
    Sensitivity,
)

__all__ = [
    "ID_MM",
    "IPM_IDENTIFIER_OCTET",
    "SEQUENCE_OCTET",
    "SET_OCTET",
    "context",
    "decode_descriptor",
    "decode_extensions",
    "decode_heading",
    "decode_ipm_identifier",
    "encode_descriptor",
    "encode_extensions",
    "encode_heading",
    "encode_ipm_identifier",
    "printable",
    "read_enum",
    "utctime_bytes",
]

_new = object.__new__
"""Makes a model the decoder fills in without its ``__init__`` (see Heading)."""


# --- RecipientSpecifier (X.420 7.1.2) -------------------------------------------------

_RECIPIENT: Final = {
    context(0, False): "recipient",
    context(1, False): "notification-requests",
    context(2, False): "reply-requested",
    context(3, False): "recipient-extensions",
}


def _decode_recipient(view: View, tlv: FlatTlv) -> Recipient:
    found = ber.members(view, tlv, _RECIPIENT, "RecipientSpecifier")
    if "recipient" not in found:
        raise DecodeError("recipient missing", where="RecipientSpecifier")
    name, free, phone = descriptor_fields(view, found["recipient"])
    requests = found.get("notification-requests")
    reply = found.get("reply-requested")
    extensions = found.get("recipient-extensions")
    flags = ber.bits(view, requests, "NotificationRequests") if requests is not None else ()
    recipient = _new(Recipient)  # every field read: not through __init__ (see Heading)
    recipient.__dict__.update(
        name=name,
        free_form_name=free,
        telephone_number=phone,
        notification_requests=(
            NotificationRequests(sum(1 << bit for bit in flags if bit < len(NotificationRequests)))
            if flags
            else NO_REQUESTS
        ),
        reply_requested=reply is not None and ber.boolean(view, reply, "reply-requested"),
        extensions=() if extensions is None else decode_extensions(view, extensions),
    )
    return recipient


def _encode_recipient(recipient: Recipient) -> bytes:
    parts = [
        descriptor_bytes(
            0xA0, recipient.name, recipient.free_form_name, recipient.telephone_number
        )  # [0] ORDescriptor
    ]
    requests = recipient.notification_requests
    if requests is not NO_REQUESTS:  # (the default: nothing to check or write)
        flags = NotificationRequests(requests)
        if flags:
            length = int(flags).bit_length()  # a named bit list ends at its last one bit
            bits = ber.numbers_to_bits((n for n in range(length) if flags >> n & 1), length)
            parts.append(tlv_bytes(0x81, ber.bits_contents(bits, length)))
    if recipient.reply_requested:
        parts.append(b"\x82\x01\xff")  # [2] BOOLEAN TRUE
    if recipient.extensions:
        parts.append(encode_extensions(recipient.extensions, 0xA3))
    return constructed(SET_OCTET, parts)


def _modelled(view: View, tlv: FlatTlv) -> tuple[Extension, FlatTlv] | None:
    """A modelled extension and its value, when the IPMSExtension is a SEQUENCE of a
    known OBJECT IDENTIFIER (found by its encoding) and one value; None: not one of
    those, for :func:`extension_parts` to read (and to refuse, in its words)."""
    key, _, body, end, _ = tlv
    if key != SEQUENCE_OCTET or body + 2 > end or view[body + 1] > 0x7F:
        return None
    start = body + 2 + view[body + 1]  # the value's (past the identifier)
    extension = EXTENSIONS_BY_TLV.get(bytes(view[body:start])) if start < end else None
    if extension is None:
        return None
    length = end - start - 2  # the value's, if it fills the rest with a short length
    if 0 <= length < 0x80 and view[start + 1] == length and view[start] & 0x1F != 0x1F:
        return extension, (view[start], start, start + 2, end, end)  # (as items() reads it)
    value = ber.read(view, start, end, 1)
    return (extension, value) if value[4] == end else None


def _heading_extensions(
    view: View, tlv: FlatTlv, deviations: Deviations | None = None
) -> dict[str, Any]:
    """Heading keyword arguments from ``extensions [15]``: the modelled extensions,
    each read in place, and ``other_extensions``; a tolerated time is appended to
    ``deviations``."""
    fields: dict[str, Any] = {}
    others: list[RawExtension] = []
    for item in ber.items(view, tlv, "extensions"):
        modelled = _modelled(view, item)  # (the usual: no OID to decode)
        if modelled is None:
            oid, value = extension_parts(view, item)
            extension = EXTENSIONS_BY_OID.get(oid)
        else:
            extension, value = modelled
            oid = extension.oid
        if extension is not None and value is not None and extension.field not in fields:
            try:
                if extension.load is load_time:  # (the one that may tolerate a form)
                    loaded = load_time(view, value, deviations)
                else:
                    loaded = extension.load(view, value)
            except (DecodeError, ValueError):
                loaded = None  # not a value of the extension's type: kept raw
            if loaded is not None:
                fields[extension.field] = loaded
                continue
        others.append(
            RawExtension(type=oid, value=None if value is None else value_bytes(view, value))
        )
    fields["other_extensions"] = tuple(others)
    return fields


def _heading_extension_bytes(heading: Heading) -> list[bytes]:
    encoded = []
    for extension in EXTENSIONS:
        value = getattr(heading, extension.field)
        if value is not None and value != ():
            encoded.append(tlv_bytes(SEQUENCE_OCTET, extension.oid_tlv + extension.dump(value)))
    if heading.other_extensions:
        encoded.extend(map(encode_extension, heading.other_extensions))
    return encoded


# --- Heading (X.420 7.2) --------------------------------------------------------------

_HEADING_FIELDS: Final = (
    "originator", "authorizing-users", "primary-recipients", "copy-recipients",
    "blind-copy-recipients", "replied-to-IPM", "obsoleted-IPMs", "related-IPMs", "subject",
    "expiry-time", "reply-time", "reply-recipients", "importance", "sensitivity",
    "auto-forwarded", "extensions",
)  # fmt: skip
_HEADING: Final = {
    member_key(IPM_IDENTIFIER_OCTET): "this-IPM",
    **{context(number, False): name for number, name in enumerate(_HEADING_FIELDS)},
}


def _subject(view: View, tlv: FlatTlv) -> str:
    inner = ber.items(view, tlv, "subject")
    if len(inner) != 1:
        raise DecodeError("[8] holds one TeletexString", where="subject")
    return ber.text(view, inner[0], "subject", "latin-1")


def _importance(view: View, tlv: FlatTlv) -> Importance:
    return read_enum(view, tlv, Importance, "importance")


def _sensitivity(view: View, tlv: FlatTlv) -> Sensitivity:
    return read_enum(view, tlv, Sensitivity, "sensitivity")


def _auto_forwarded(view: View, tlv: FlatTlv) -> bool:
    return ber.boolean(view, tlv, "auto-forwarded")


# The members after this-IPM but the times and extensions (read with the caller's
# deviations list), in the order they are read: (member, Heading field, reader, SEQUENCE
# OF).
_HEADING_READERS: Final[tuple[tuple[str, str, Callable[[View, FlatTlv], Any], bool], ...]] = (
    ("originator", "originator", decode_descriptor, False),
    ("authorizing-users", "authorizing_users", decode_descriptor, True),
    ("primary-recipients", "primary_recipients", _decode_recipient, True),
    ("copy-recipients", "copy_recipients", _decode_recipient, True),
    ("blind-copy-recipients", "blind_copy_recipients", _decode_recipient, True),
    ("replied-to-IPM", "replied_to_ipm", decode_ipm_identifier, False),
    ("obsoleted-IPMs", "obsoleted_ipms", decode_ipm_identifier, True),
    ("related-IPMs", "related_ipms", decode_ipm_identifier, True),
    ("subject", "subject", _subject, False),
    ("reply-recipients", "reply_recipients", decode_descriptor, True),
    ("importance", "importance", _importance, False),
    ("sensitivity", "sensitivity", _sensitivity, False),
    ("auto-forwarded", "auto_forwarded", _auto_forwarded, False),
)
_HEADING_TIMES: Final = (("expiry-time", "expiry_time"), ("reply-time", "reply_time"))


def decode_heading(view: View, tlv: FlatTlv, deviations: Deviations | None = None) -> Heading:
    """``Heading ::= SET {this-IPM ThisIPMField, originator [0] ..., ...,
    extensions [15] ExtensionsField DEFAULT {}}``; what was tolerated (a time's form, a
    member's tag in the long form) is appended to ``deviations`` when it is given."""
    found = ber.members(view, tlv, _HEADING, "Heading")
    this_ipm = found.get("this-IPM")
    if this_ipm is None:
        raise DecodeError("this-IPM missing", where="Heading")
    fields: dict[str, Any] = {"this_ipm": decode_ipm_identifier(view, this_ipm)}
    get = found.get
    for name, field, read, many in _HEADING_READERS:
        member = get(name)
        if member is None:
            continue  # absent: the field's default
        if many:
            fields[field] = tuple([read(view, item) for item in ber.items(view, member, name)])
        else:
            fields[field] = read(view, member)
    for name, field in _HEADING_TIMES:
        member = get(name)
        if member is not None:
            text = ber.text(view, member, name)
            fields[field] = ber.parse_lenient_utctime(text, name, deviations)
    extensions = get("extensions")
    if extensions is not None:
        fields.update(_heading_extensions(view, extensions, deviations))
    if deviations is not None:
        _note_long_tags(view, found, deviations)
    heading = _new(Heading)  # (not through __init__: see _HEADING_DEFAULTS)
    values = heading.__dict__
    values.update(_HEADING_DEFAULTS)
    values.update(fields)
    return heading


def _note_long_tags(view: View, found: dict[str, FlatTlv], deviations: Deviations) -> None:
    """List the heading's members whose tag number is written in the long form."""
    for name, item in found.items():
        if view[item[1]] & 0x1F == 0x1F:
            ber.note_long_tag(view, item[1], ber.tag_of(item[0]), f"Heading.{name}", deviations)


def _many(octet: int, items: tuple[Any, ...], write: Callable[[Any], bytes]) -> bytes:
    return tlv_bytes(octet, b"".join(map(write, items)))


def encode_heading(heading: Heading) -> bytes:
    """The Heading SET, members in DER order, DEFAULT values left out."""
    # Straight through, context tags written out: most members are absent.
    parts = [encode_ipm_identifier(heading.this_ipm)]
    append = parts.append
    if heading.originator is not None:
        append(encode_descriptor(heading.originator, 0xA0))  # [0]
    if heading.authorizing_users:
        append(_many(0xA1, heading.authorizing_users, encode_descriptor))
    if heading.primary_recipients:
        append(_many(0xA2, heading.primary_recipients, _encode_recipient))
    if heading.copy_recipients:
        append(_many(0xA3, heading.copy_recipients, _encode_recipient))
    if heading.blind_copy_recipients:
        append(_many(0xA4, heading.blind_copy_recipients, _encode_recipient))
    if heading.replied_to_ipm is not None:
        append(encode_ipm_identifier(heading.replied_to_ipm, 0xA5))
    if heading.obsoleted_ipms:
        append(_many(0xA6, heading.obsoleted_ipms, encode_ipm_identifier))
    if heading.related_ipms:
        append(_many(0xA7, heading.related_ipms, encode_ipm_identifier))
    if heading.subject is not None:
        append(tlv_bytes(0xA8, tlv_bytes(TELETEX_OCTET, teletex(heading.subject, "subject"))))
    if heading.expiry_time is not None:
        append(tlv_bytes(0x89, utctime_bytes(heading.expiry_time, "expiry-time")))
    if heading.reply_time is not None:
        append(tlv_bytes(0x8A, utctime_bytes(heading.reply_time, "reply-time")))
    if heading.reply_recipients:
        append(_many(0xAB, heading.reply_recipients, encode_descriptor))
    if heading.importance != _NORMAL:
        append(tlv_bytes(0x8C, integer_bytes(Importance(heading.importance), "importance")))
    if heading.sensitivity is not None:
        append(tlv_bytes(0x8D, integer_bytes(Sensitivity(heading.sensitivity), "sensitivity")))
    if heading.auto_forwarded:
        append(b"\x8e\x01\xff")  # [14] BOOLEAN TRUE
    extensions = _heading_extension_bytes(heading)
    if extensions:
        append(constructed(0xAF, extensions))  # [15]
    return constructed(SET_OCTET, parts)


_NORMAL: Final = Importance.NORMAL
