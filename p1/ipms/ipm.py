"""Interpersonal messaging content: IPM and IPN (X.420 clause 7; STANAG 4406 Annex A).

The content of a P1 message whose content type is P2 (built-in 22, X.420; or 2, the
X.420 (1984) IPM, read with the same codec) or P772
(extended 1.3.26.0.4406.0.4.1, STANAG 4406) is an ``InformationObject``: an IPM (an MM
in STANAG 4406 terms: the same heading and body) or an IPN (an MN).  This module models
both as frozen dataclasses (:mod:`p1.ipms.models`, re-exported here) and encodes them.

Public API::

    P2_CONTENT_TYPE = 22, P772_CONTENT_TYPE = "1.3.26.0.4406.0.4.1",
    P2_1984_CONTENT_TYPE = 2, ContentKind
    encode_ipm(ipm, kind) -> bytes           decode_ipm(data, kind) -> IPM
    encode_ipn(ipn) -> bytes                 decode_ipn(data) -> IPN
    encode_content(obj, kind) -> bytes       decode_content(data, kind) -> IPM | IPN
    decode_content_heading(data, kind) -> Heading | IPN     (the body left undecoded)
    encode_message_data(ipm, kind) -> bytes  decode_message_data(data, kind) -> IPM
        (the bare ``IPM`` SEQUENCE of a forwarded or returned message)
    IPM(heading, body), Heading, IPMIdentifier, ORDescriptor, Recipient, RawExtension,
    MessageType, DistributionCodes, DistributionExtension, TextBodyPart,
    BinaryBodyPart, ForwardedMessageBodyPart, ExtendedBodyPart, RawBodyPart,
    IPN, ReceiptFields, NonReceiptFields, OtherNotificationFields, and the enumerations

``kind`` is a :class:`ContentKind` or the content type it stands for (22, 2, or the P772
object identifier as dotted text), as found in the envelope.

Wire forms.  For P2 the text, binary and message body parts travel in their basic form
(X.420 clause 7.3); for P772 as extended body parts (X.420 clause 7.3.12), which STANAG
4406 Annex A prescribes for the MMS.  A body part's ``extended`` (or ``form``) field is
None for the form its content kind prescribes and names the other form otherwise, so a
decoded IPM equals the one encoded.  General text exists only as an extended body part.

Losslessness.  ``encode_ipm(decode_ipm(b, k), k) == b`` for every ``b`` this module
produced.  Codecs are written by hand over :mod:`p1.ber` (heading and IPN in
:mod:`p1.ipms.heading`, body in :mod:`p1.ipms.body`), following the ASN.1 modules in
``p1/asn1`` (IPMSInformationObjects, MMSHeadingExtensions): asn1tools is too slow for
per-message use and copies bodies several times.  A body part is read in any legal BER
form and typed when its type is modelled; a part read from other octets than this module
would write remembers them and is written back byte for byte (:mod:`p1.ipms.body`).
Heading extensions that are not modelled, or whose value does not read as its
type, are kept in ``Heading.other_extensions`` with their value bytes.  A body's octets
are copied once on decode (into ``bytes``) and once on encode (into the result).

Times are aware ``datetime`` values to the second (a naive one is taken as UTC on
encoding); decoded times remember their UTCTime text.  Tolerance: the heading's times
and an IPN's receipt-time are not routed on, so a UTCTime without its zone (taken as
UTC) or with a three-digit year is read, and listed as a :class:`Deviation` (re-exported
from :mod:`p1.ber`) in the ``deviations`` list given to :func:`decode_ipm`,
:func:`decode_content`, :func:`decode_content_heading`, :func:`decode_ipn` or
:func:`decode_message_data` (keyword, optional: None collects nothing).  Every other
malformed input raises :class:`p1.errors.DecodeError`, every value that cannot be
encoded :class:`p1.errors.EncodeError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

from p1 import ber
from p1.ber import Deviation, Deviations, FlatTlv, View, tlv_bytes, wrap
from p1.errors import DecodeError, EncodeError
from p1.ipms.body import decode_body, encode_body
from p1.ipms.heading import (
    IPM_IDENTIFIER_OCTET,
    SEQUENCE_OCTET,
    SET_OCTET,
    context,
    decode_descriptor,
    decode_extensions,
    decode_heading,
    decode_ipm_identifier,
    encode_descriptor,
    encode_extensions,
    encode_heading,
    encode_ipm_identifier,
    printable,
    read_enum,
    utctime_bytes,
)
from p1.ipms.models import (
    IPM,
    IPN,
    NO_REQUESTS,
    P2_1984_CONTENT_TYPE,
    P2_CONTENT_TYPE,
    P772_CONTENT_TYPE,
    AcknowledgmentMode,
    AddressListDesignator,
    AddressListRequest,
    AddressListType,
    BinaryBodyPart,
    BodyPart,
    BodyPartSecurityLabel,
    ContentKind,
    DiscardReason,
    DistributionCodes,
    DistributionExtension,
    ExtendedBodyPart,
    ForwardedForm,
    ForwardedMessageBodyPart,
    Heading,
    Importance,
    IPMIdentifier,
    Kind,
    MessageType,
    NonReceiptFields,
    NonReceiptReason,
    NotificationFields,
    NotificationKind,
    NotificationRequests,
    ORDescriptor,
    OtherNotificationFields,
    OtherRecipientDesignator,
    OtherRecipientType,
    PilotInformation,
    RawBodyPart,
    RawExtension,
    ReceiptFields,
    Recipient,
    Repertoire,
    SecurityInformationLabels,
    Sensitivity,
    TextBodyPart,
    TextKind,
    TypeMessage,
)

__all__ = [
    "IPM",
    "IPN",
    "NO_REQUESTS",
    "P2_1984_CONTENT_TYPE",
    "P2_CONTENT_TYPE",
    "P772_CONTENT_TYPE",
    "AcknowledgmentMode",
    "AddressListDesignator",
    "AddressListRequest",
    "AddressListType",
    "BinaryBodyPart",
    "BodyPart",
    "BodyPartSecurityLabel",
    "ContentKind",
    "Deviation",
    "DiscardReason",
    "DistributionCodes",
    "DistributionExtension",
    "ExtendedBodyPart",
    "ForwardedForm",
    "ForwardedMessageBodyPart",
    "Heading",
    "IPMIdentifier",
    "Importance",
    "Kind",
    "MessageType",
    "NonReceiptFields",
    "NonReceiptReason",
    "NotificationFields",
    "NotificationKind",
    "NotificationRequests",
    "ORDescriptor",
    "OtherNotificationFields",
    "OtherRecipientDesignator",
    "OtherRecipientType",
    "PilotInformation",
    "RawBodyPart",
    "RawExtension",
    "ReceiptFields",
    "Recipient",
    "Repertoire",
    "SecurityInformationLabels",
    "Sensitivity",
    "TextBodyPart",
    "TextKind",
    "TypeMessage",
    "decode_content",
    "decode_content_heading",
    "decode_ipm",
    "decode_ipn",
    "decode_message_data",
    "encode_content",
    "encode_ipm",
    "encode_ipn",
    "encode_message_data",
]

IPM_OCTET: Final = 0xA0
"""InformationObject: ``ipm [0] IPM`` (``mm [0] MM``), implicit."""
IPN_OCTET: Final = 0xA1
"""InformationObject: ``ipn [1] IPN`` (``mn [1] MN``), implicit."""


def _content_kind(kind: Kind) -> ContentKind:
    if isinstance(kind, ContentKind):
        return kind
    try:
        known = _CONTENT_KINDS.get(kind)  # (a dict lookup, not ContentKind(kind): quicker)
        return ContentKind(kind) if known is None else known
    except (ValueError, TypeError):
        raise ValueError(f"not an IPM content type: {kind!r}") from None


_CONTENT_KINDS: Final[dict[object, ContentKind]] = {kind.value: kind for kind in ContentKind}


# --- IPM (X.420 7.1) ------------------------------------------------------------------


def _encode_ipm(ipm: IPM, kind: Kind, octet: int) -> bytes:
    def encode() -> list[bytes]:
        content_kind = _content_kind(kind)
        return wrap(octet, [encode_heading(ipm.heading), *encode_body(ipm.body, content_kind)])

    return b"".join(_encoding(encode))


def encode_ipm(ipm: IPM, kind: Kind) -> bytes:
    """The content octets of ``ipm`` for content ``kind``: ``InformationObject``
    (``ipm [0] IPM``, X.420 clause 7; ``mm [0] MM``, STANAG 4406 Annex A)."""
    return _encode_ipm(ipm, kind, IPM_OCTET)


def encode_message_data(ipm: IPM, kind: Kind) -> bytes:
    """The bare ``IPM`` SEQUENCE (X.420 7.4.9 MessageData), as forwarded or returned."""
    return _encode_ipm(ipm, kind, SEQUENCE_OCTET)


def _decode_ipm(
    data: bytes | bytearray | memoryview, kind: Kind, octet: int, deviations: Deviations | None
) -> IPM:
    content_kind = _content_kind(kind)
    view, heading, body = _ipm_parts(data, octet)
    return IPM(
        heading=decode_heading(view, heading, deviations),
        body=decode_body(view, body, content_kind),
    )


def _ipm_parts(data: bytes | bytearray | memoryview, octet: int) -> tuple[View, FlatTlv, FlatTlv]:
    """The IPM's octets, its heading SET and its body SEQUENCE (X.420 7.1), undecoded."""
    view, outer = _single(data, "IPM")
    if outer[0] != octet:
        raise DecodeError(f"expected tag 0x{octet:02x}, found 0x{view[0]:02x}", where="IPM")
    items = ber.items(view, outer, "IPM")
    if len(items) != 2 or items[0][0] != SET_OCTET or items[1][0] != SEQUENCE_OCTET:
        raise DecodeError("an IPM is a heading SET and a body SEQUENCE", where="IPM")
    heading, body = items
    return view, heading, body


def _single(data: bytes | bytearray | memoryview, what: str) -> tuple[View, FlatTlv]:
    """:func:`p1.ber.single`, reading ``data`` itself when it is ``bytes`` (the usual
    content): slicing bytes costs a fraction of slicing a view and copying that."""
    if type(data) is bytes:  # (read in place: no view to make)
        outer = ber.read(data, 0, len(data))
        if outer[4] == len(data):
            return data, outer
    view, outer = ber.single(data, what)  # (trailing bytes: says so)
    return (data if type(data) is bytes else view), outer


def decode_ipm(
    data: bytes | bytearray | memoryview, kind: Kind, *, deviations: Deviations | None = None
) -> IPM:
    """The IPM in content octets of ``kind`` (see :func:`encode_ipm`); what was
    tolerated is appended to ``deviations``."""
    return _decoding("IPM", lambda: _decode_ipm(data, kind, IPM_OCTET, deviations))


def decode_message_data(
    data: bytes | bytearray | memoryview, kind: Kind, *, deviations: Deviations | None = None
) -> IPM:
    """The IPM in a bare ``IPM`` SEQUENCE (see :func:`encode_message_data`)."""
    return _decoding("IPM", lambda: _decode_ipm(data, kind, SEQUENCE_OCTET, deviations))


# --- IPN (X.420 7.2) ------------------------------------------------------------------

# IPN ::= SET { COMPONENTS OF CommonFields, choice [0] CHOICE {
#   non-receipt-fields [0] NonReceiptFields, receipt-fields [1] ReceiptFields,
#   other-notification-type-fields [2] OtherNotificationTypeFields } }
# Member keys: identifier octets with the constructed bit clear.
_IPN: Final = {
    0x4B: "subject-ipm",  # [APPLICATION 11]
    0x45: "conversion-eits",  # [APPLICATION 5]
    context(0, False): "choice",
    context(1, False): "ipn-originator",
    context(2, False): "ipm-intended-recipient",
    context(3, False): "notification-extensions",
}
_RECEIPT: Final = {
    context(0, False): "receipt-time",
    context(1, False): "acknowledgment-mode",
    context(2, False): "suppl-receipt-info",
    context(3, False): "rn-extensions",
}
_NON_RECEIPT: Final = {
    context(0, False): "non-receipt-reason",
    context(1, False): "discard-reason",
    context(2, False): "auto-forward-comment",
    context(3, False): "returned-ipm",
    context(4, False): "nrn-extensions",
}


def _receipt_from(view: View, tlv: FlatTlv, deviations: Deviations | None) -> ReceiptFields:
    found = ber.members(view, tlv, _RECEIPT, "ReceiptFields")
    if "receipt-time" not in found:
        raise DecodeError("receipt-time missing", where="ReceiptFields")
    mode = found.get("acknowledgment-mode")
    info = found.get("suppl-receipt-info")
    extensions = found.get("rn-extensions")
    return ReceiptFields(
        receipt_time=ber.parse_lenient_utctime(
            ber.text(view, found["receipt-time"], "receipt-time"), "receipt-time", deviations
        ),
        acknowledgment_mode=(
            AcknowledgmentMode.MANUAL
            if mode is None
            else read_enum(view, mode, AcknowledgmentMode, "acknowledgment-mode")
        ),
        suppl_receipt_info=None if info is None else ber.text(view, info, "suppl-receipt-info"),
        extensions=() if extensions is None else decode_extensions(view, extensions),
    )


def _non_receipt_from(view: View, tlv: FlatTlv, deviations: Deviations | None) -> NonReceiptFields:
    found = ber.members(view, tlv, _NON_RECEIPT, "NonReceiptFields")
    if "non-receipt-reason" not in found:
        raise DecodeError("non-receipt-reason missing", where="NonReceiptFields")
    discard = found.get("discard-reason")
    comment = found.get("auto-forward-comment")
    returned = found.get("returned-ipm")
    extensions = found.get("nrn-extensions")
    return NonReceiptFields(
        non_receipt_reason=read_enum(
            view, found["non-receipt-reason"], NonReceiptReason, "non-receipt-reason"
        ),
        discard_reason=(
            None if discard is None else read_enum(view, discard, DiscardReason, "discard-reason")
        ),
        auto_forward_comment=(
            None if comment is None else ber.text(view, comment, "auto-forward-comment")
        ),
        returned_ipm=None if returned is None else _returned_ipm(view, returned),
        extensions=() if extensions is None else decode_extensions(view, extensions),
    )


def _returned_ipm(view: View, tlv: FlatTlv) -> bytes:
    # returned-ipm [3] IPM is implicit: the SEQUENCE tag comes back in place of [3].
    if not tlv[0] & ber.CONSTRUCTED:
        raise DecodeError("returned-ipm must be constructed", where="returned-ipm")
    # The length octets follow the identifier, which may take the high-number form.
    after = tlv[1] + 1
    if view[tlv[1]] & 0x1F == 0x1F:
        while view[after] & 0x80:
            after += 1
        after += 1
    return bytes((SEQUENCE_OCTET,)) + bytes(view[after : tlv[4]])


def _other_from(view: View, tlv: FlatTlv, deviations: Deviations | None) -> OtherNotificationFields:
    return OtherNotificationFields(extensions=decode_extensions(view, tlv))


_FIELDS_FROM: Final[dict[int, Callable[[View, FlatTlv, Deviations | None], NotificationFields]]] = {
    context(0): _non_receipt_from,
    context(1): _receipt_from,
    context(2): _other_from,
}


def _ipn_from(view: View, tlv: FlatTlv, deviations: Deviations | None) -> IPN:
    found = ber.members(view, tlv, _IPN, "IPN")
    for name in ("subject-ipm", "choice"):
        if name not in found:
            raise DecodeError(f"{name} missing", where="IPN")
    choice = ber.items(view, found["choice"], "IPN.choice")
    fields_from = _FIELDS_FROM.get(choice[0][0]) if len(choice) == 1 else None
    if fields_from is None:
        raise DecodeError("not one known alternative", where="IPN.choice")
    originator = found.get("ipn-originator")
    intended = found.get("ipm-intended-recipient")
    eits = found.get("conversion-eits")
    extensions = found.get("notification-extensions")
    return IPN(
        subject_ipm=decode_ipm_identifier(view, found["subject-ipm"]),
        fields=fields_from(view, choice[0], deviations),
        ipn_originator=None if originator is None else decode_descriptor(view, originator),
        ipm_intended_recipient=None if intended is None else decode_descriptor(view, intended),
        conversion_eits=None if eits is None else bytes(view[eits[1] : eits[4]]),
        notification_extensions=(() if extensions is None else decode_extensions(view, extensions)),
    )


def _receipt_to(fields: ReceiptFields) -> bytes:
    parts = [tlv_bytes(0x80, utctime_bytes(fields.receipt_time, "receipt-time"))]
    if fields.acknowledgment_mode != AcknowledgmentMode.MANUAL:
        mode = AcknowledgmentMode(fields.acknowledgment_mode)
        parts.append(tlv_bytes(0x81, ber.int_contents(mode)))
    if fields.suppl_receipt_info is not None:
        info = printable(fields.suppl_receipt_info, "SupplementaryInformation", 1, 256)
        parts.append(tlv_bytes(0x82, info))
    if fields.extensions:
        parts.append(encode_extensions(fields.extensions, 0xA3))
    return tlv_bytes(0xA1, b"".join(parts))


def _non_receipt_to(fields: NonReceiptFields) -> bytes:
    reason = NonReceiptReason(fields.non_receipt_reason)
    parts = [tlv_bytes(0x80, ber.int_contents(reason))]
    if fields.discard_reason is not None:
        discard = DiscardReason(fields.discard_reason)
        parts.append(tlv_bytes(0x81, ber.int_contents(discard)))
    if fields.auto_forward_comment is not None:
        comment = printable(fields.auto_forward_comment, "AutoForwardComment", 0, 256)
        parts.append(tlv_bytes(0x82, comment))
    if fields.returned_ipm is not None:
        _single_value(fields.returned_ipm, SEQUENCE_OCTET, "returned-ipm")
        parts.append(bytes((context(3),)) + fields.returned_ipm[1:])
    if fields.extensions:
        parts.append(encode_extensions(fields.extensions, 0xA4))
    return tlv_bytes(0xA0, b"".join(parts))


def _other_to(fields: OtherNotificationFields) -> bytes:
    return encode_extensions(fields.extensions, 0xA2)


_FIELDS_TO: Final[dict[type, Callable[[Any], bytes]]] = {
    NonReceiptFields: _non_receipt_to,
    ReceiptFields: _receipt_to,
    OtherNotificationFields: _other_to,
}


def _ipn_to(ipn: IPN) -> bytes:
    fields_to = _FIELDS_TO.get(type(ipn.fields))
    if fields_to is None:
        raise EncodeError(f"not notification fields: {ipn.fields!r}", where="IPN.choice")
    # DER order: [APPLICATION 5], [APPLICATION 11], then [0] to [3].
    parts = []
    if ipn.conversion_eits is not None:
        _single_value(ipn.conversion_eits, 0x65, "conversion-eits")  # [APPLICATION 5] SET
        parts.append(ipn.conversion_eits)
    parts.append(encode_ipm_identifier(ipn.subject_ipm, IPM_IDENTIFIER_OCTET))
    parts.append(tlv_bytes(0xA0, fields_to(ipn.fields)))
    if ipn.ipn_originator is not None:
        parts.append(encode_descriptor(ipn.ipn_originator, 0xA1))
    if ipn.ipm_intended_recipient is not None:
        parts.append(encode_descriptor(ipn.ipm_intended_recipient, 0xA2))
    if ipn.notification_extensions:
        parts.append(encode_extensions(ipn.notification_extensions, 0xA3))
    return tlv_bytes(IPN_OCTET, b"".join(parts))


def encode_ipn(ipn: IPN) -> bytes:
    """The content octets of ``ipn``: ``InformationObject`` (``ipn [1] IPN``, X.420;
    ``mn [1] MN``, STANAG 4406 Annex A, is encoded the same way)."""
    return _encoding(lambda: _ipn_to(ipn))


def _single_value(data: bytes, octet: int, what: str) -> FlatTlv:
    """The one TLV of raw bytes to be sent, with identifier ``octet``; else EncodeError."""
    try:
        _, tlv = ber.single(data, what)
    except DecodeError as exc:
        raise EncodeError(f"not one BER value: {exc.why}", where=what) from None
    if tlv[0] != octet:
        raise EncodeError(f"expected tag 0x{octet:02x}, found 0x{data[0]:02x}", where=what)
    return tlv


def _decode_ipn(data: bytes | bytearray | memoryview, deviations: Deviations | None) -> IPN:
    view, outer = _single(data, "IPN")
    if outer[0] != IPN_OCTET:
        raise DecodeError(f"expected tag 0x{IPN_OCTET:02x}, found 0x{view[0]:02x}", where="IPN")
    return _ipn_from(view, outer, deviations)


def decode_ipn(
    data: bytes | bytearray | memoryview, *, deviations: Deviations | None = None
) -> IPN:
    """The IPN in content octets (see :func:`encode_ipn`); a tolerated receipt-time is
    appended to ``deviations``."""
    return _decoding("IPN", lambda: _decode_ipn(data, deviations))


# --- either ---------------------------------------------------------------------------


def encode_content(obj: IPM | IPN, kind: Kind) -> bytes:
    """The content octets of an IPM or IPN for content ``kind``."""
    return encode_ipn(obj) if isinstance(obj, IPN) else encode_ipm(obj, kind)


def decode_content(
    data: bytes | bytearray | memoryview, kind: Kind, *, deviations: Deviations | None = None
) -> IPM | IPN:
    """The IPM or IPN in content octets of ``kind``; what was tolerated is appended to
    ``deviations``."""
    if bytes(memoryview(data)[:1]) == bytes((IPN_OCTET,)):
        return decode_ipn(data, deviations=deviations)
    return decode_ipm(data, kind, deviations=deviations)


def decode_content_heading(
    data: bytes | bytearray | memoryview, kind: Kind, *, deviations: Deviations | None = None
) -> Heading | IPN:
    """The heading of the IPM, or the IPN, in content octets of ``kind``: what a listing
    shows, without decoding the body (its body parts may be megabytes of text); what was
    tolerated is appended to ``deviations``."""
    if bytes(memoryview(data)[:1]) == bytes((IPN_OCTET,)):
        return decode_ipn(data, deviations=deviations)
    _content_kind(kind)  # (an unknown content type is refused as by decode_ipm)

    def heading() -> Heading:
        view, tlv, _ = _ipm_parts(data, IPM_OCTET)
        return decode_heading(view, tlv, deviations)

    return _decoding("IPM", heading)


_T = TypeVar("_T")

_MALFORMED: Final = (
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    OverflowError,
    RecursionError,
)


def _decoding(what: str, decode: Callable[[], _T]) -> _T:
    """Run ``decode``; any other error it raises becomes a DecodeError."""
    try:
        return decode()
    except DecodeError:
        raise
    except _MALFORMED as exc:
        raise DecodeError(f"malformed {what} ({type(exc).__name__}: {exc})", where=what) from exc


def _encoding(encode: Callable[[], _T]) -> _T:
    """Run ``encode``; a bad value (wrong type, out of range) becomes an EncodeError."""
    try:
        return encode()
    except EncodeError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
        raise EncodeError(f"{type(exc).__name__}: {exc}", where="IPM") from exc
