"""The STANAG 4406 Annex A heading extensions (MMSHeadingExtensions), each modelled as a
field of :class:`p1.ipms.models.Heading`: their values read and written by hand over BER.

``EXTENSIONS`` lists them in the order of their identifiers (id-nato-mmhs-mm-<name> =
{id-mm n}, MMSObjectIdentifiers), the order the heading codec writes them in:
primary-precedence 0, copy-precedence 1, message-type 2, address-list-indicator 3,
exempted-address 4, extended-authorisation-info 5, distribution-codes 6,
handling-instructions 7, message-instructions 8, codress-message 9,
originator-reference 10, other-recipients-indicator 11, pilot-forwarding-info 12,
acp127-message-identifier 13, originator-plad 14, security-information-labels 17.

Each value is read in place (``load(view, tlv)``) and raises DecodeError when it is not of
its type; the heading codec (:mod:`p1.ipms.heading`) then keeps the extension as a
:class:`p1.ipms.models.RawExtension`.  Reading accepts any BER (SET members in any
order, indefinite lengths, segmented strings); writing (``dump(value)``) is DER-like:
SET members in tag order, definite shortest lengths.  A SecurityLabel (X.411 8.5.9,
under an IMPLICIT context tag) goes through :mod:`p1.mts.security_label`.  Integers with
named values keep values outside the names (national use).

API::

    Extension(field, oid, load, dump)     one modelled extension
    EXTENSIONS, EXTENSIONS_BY_OID, EXTENSIONS_BY_TLV (by the OBJECT IDENTIFIER's TLV)
    load_time(view, tlv, deviations)      extended-authorisation-info, tolerating forms
    ID_MM = "1.3.26.0.4406.0.2"
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from p1 import ber
from p1.ber import Deviations, FlatTlv, View, tlv_bytes
from p1.errors import DecodeError
from p1.ipms.fields import (
    INSTANCE_OF_OCTET,
    INTEGER_OCTET,
    PRINTABLE_OCTET,
    SEQUENCE_OCTET,
    SET_OCTET,
    UTCTIME_OCTET,
    check_single,
    constructed,
    context,
    decode_descriptor,
    encode_descriptor,
    expect_octet,
    integer_bytes,
    military,
    printable,
    read_enum,
    utctime_bytes,
    value_bytes,
)
from p1.ipms.models import (
    AddressListDesignator,
    BodyPartSecurityLabel,
    DistributionCodes,
    DistributionExtension,
    MessageType,
    ORDescriptor,
    OtherRecipientDesignator,
    PilotInformation,
    SecurityInformationLabels,
)
from p1.mts.precedence import Precedence
from p1.mts.security_label import SecurityLabel, decode_security_label, encode_security_label

__all__ = [
    "EXTENSIONS",
    "EXTENSIONS_BY_OID",
    "EXTENSIONS_BY_TLV",
    "ID_MM",
    "Extension",
    "load_time",
]

ID_MM: Final = "1.3.26.0.4406.0.2"
"""STANAG 4406 MMSObjectIdentifiers id-mm: heading extensions id-nato-mmhs-mm-*."""


# --- STANAG 4406 heading extension values ---------------------------------------------
# Each _load_* reads a value in place and raises DecodeError when it is not of its type.


def _load_precedence(view: View, tlv: FlatTlv) -> Precedence:
    if tlv[0] != INTEGER_OCTET:
        expect_octet(tlv, INTEGER_OCTET, "MMHSPrecedence")
    return read_enum(view, tlv, Precedence, "MMHSPrecedence")


def _dump_precedence(value: Precedence) -> bytes:
    if type(value) is not Precedence:  # (a member is one already: no lookup)
        value = Precedence(value)
    return tlv_bytes(INTEGER_OCTET, integer_bytes(value, "MMHSPrecedence"))


def _load_string(view: View, tlv: FlatTlv) -> str:
    if tlv[0] & ~ber.CONSTRUCTED != PRINTABLE_OCTET:
        raise DecodeError("expected a PrintableString", where="MilitaryString")
    return ber.text(view, tlv, "MilitaryString")


def _dump_string(value: str) -> bytes:
    return tlv_bytes(PRINTABLE_OCTET, military(value, "MilitaryString"))


def _strings(view: View, tlv: FlatTlv, what: str) -> tuple[str, ...]:
    return tuple(_load_string(view, item) for item in ber.items(view, tlv, what))


def _load_strings(view: View, tlv: FlatTlv) -> tuple[str, ...]:
    if tlv[0] != SEQUENCE_OCTET:
        expect_octet(tlv, SEQUENCE_OCTET, "SEQUENCE OF MilitaryString")
    return _strings(view, tlv, "SEQUENCE OF MilitaryString")


def _dump_strings(values: tuple[str, ...]) -> bytes:
    return constructed(SEQUENCE_OCTET, map(_dump_string, values))


_MESSAGE_TYPE: Final = {context(0, False): "type", context(1, False): "identifier"}


def _load_message_type(view: View, tlv: FlatTlv) -> MessageType:
    if tlv[0] != SET_OCTET:
        expect_octet(tlv, SET_OCTET, "MessageType")
    found = ber.members(view, tlv, _MESSAGE_TYPE, "MessageType")
    if "type" not in found:
        raise DecodeError("type missing", where="MessageType")
    identifier = found.get("identifier")
    return MessageType(
        type=ber.integer(view, found["type"], "TypeMessage"),
        identifier=None if identifier is None else ber.text(view, identifier, "MessageIdentifier"),
    )


def _dump_message_type(value: MessageType) -> bytes:
    parts = [tlv_bytes(0x80, integer_bytes(value.type, "TypeMessage"))]  # [0]
    if value.identifier is not None:
        identifier = military(value.identifier, "MessageIdentifier")
        parts.append(tlv_bytes(0x81, identifier))  # [1]
    return constructed(SET_OCTET, parts)


def _load_descriptors(view: View, tlv: FlatTlv) -> tuple[ORDescriptor, ...]:
    expect_octet(tlv, SEQUENCE_OCTET, "ExemptedAddressSeq")
    found = ber.items(view, tlv, "ExemptedAddressSeq")
    if any(item[0] != SET_OCTET for item in found):
        raise DecodeError("expected ORDescriptors", where="ExemptedAddressSeq")
    return tuple(decode_descriptor(view, item) for item in found)


def _dump_descriptors(values: tuple[ORDescriptor, ...]) -> bytes:
    return constructed(SEQUENCE_OCTET, map(encode_descriptor, values))


def load_time(view: View, tlv: FlatTlv, deviations: Deviations | None = None) -> datetime:
    what = "ExtendedAuthorisationInfo"
    if tlv[0] & ~ber.CONSTRUCTED != UTCTIME_OCTET:
        raise DecodeError("expected a UTCTime", where=what)
    return ber.parse_lenient_utctime(ber.text(view, tlv, what), what, deviations)


def _dump_time(value: datetime) -> bytes:
    return tlv_bytes(UTCTIME_OCTET, utctime_bytes(value, "ExtendedAuthorisationInfo"))


_DISTRIBUTION: Final = {context(0, False): "sics", context(1, False): "dist-Extensions"}


def _load_dist_extension(view: View, tlv: FlatTlv) -> DistributionExtension:
    what = "DistributionExtensionField"
    found = ber.items(view, tlv, what) if tlv[0] == INSTANCE_OF_OCTET else []
    if len(found) != 2 or found[1][0] != context(0):
        raise DecodeError("expected INSTANCE OF {type-id, [0] value}", where=what)
    value = ber.items(view, found[1], what)
    if len(value) != 1:
        raise DecodeError("[0] holds one value", where=what)
    return DistributionExtension(
        type_id=ber.oid(view, found[0], what), value=bytes(view[value[0][1] : value[0][4]])
    )


def _load_distribution(view: View, tlv: FlatTlv) -> DistributionCodes:
    expect_octet(tlv, SET_OCTET, "DistributionCodes")
    found = ber.members(view, tlv, _DISTRIBUTION, "DistributionCodes")
    sics = found.get("sics")
    extensions = found.get("dist-Extensions")
    return DistributionCodes(
        sics=() if sics is None else _strings(view, sics, "Sic"),
        dist_extensions=()
        if extensions is None
        else tuple(
            _load_dist_extension(view, item)
            for item in ber.items(view, extensions, "dist-Extensions")
        ),
    )


def _dump_dist_extension(value: DistributionExtension) -> bytes:
    data = check_single(value.value, "DistributionExtensionField.value")
    parts = (ber.oid_tlv(value.type_id), tlv_bytes(context(0), data))
    return constructed(INSTANCE_OF_OCTET, parts)


def _dump_distribution(value: DistributionCodes) -> bytes:
    parts = []
    if value.sics:
        sics = (tlv_bytes(PRINTABLE_OCTET, printable(sic, "Sic", 3, 8)) for sic in value.sics)
        parts.append(constructed(context(0), sics))
    if value.dist_extensions:
        parts.append(constructed(context(1), map(_dump_dist_extension, value.dist_extensions)))
    return constructed(SET_OCTET, parts)


# --- address lists, codress, other recipients, pilots, security information labels ---
# An empty SEQUENCE OF does not load: the model's () means absent, so the extension is
# kept raw and written back as received.


def _list(view: View, tlv: FlatTlv, octet: int, what: str) -> list[FlatTlv]:
    """The items of a SEQUENCE OF under ``octet``; an empty one is a DecodeError."""
    expect_octet(tlv, octet, what)
    found = ber.items(view, tlv, what)
    if not found:
        raise DecodeError("an empty SEQUENCE OF", where=what)
    return found


def _in_order(view: View, tlv: FlatTlv, names: dict[int, str], what: str) -> dict[str, FlatTlv]:
    """The members of a SEQUENCE whose members have distinct tags, by name: each known,
    once, in the order of ``names`` (X.680 25)."""
    order = tuple(names)
    found: dict[str, FlatTlv] = {}
    last = -1
    for item in ber.items(view, tlv, what):
        key = item[0] & ~ber.CONSTRUCTED
        position = order.index(key) if key in names else -1
        if position <= last:
            raise DecodeError(f"unexpected member with tag 0x{view[item[1]]:02x}", where=what)
        found[names[key]] = item
        last = position
    return found


def _required(found: dict[str, FlatTlv], names: Iterable[str], what: str) -> None:
    for name in names:
        if name not in found:
            raise DecodeError(f"{name} missing", where=what)


def _optional_integer(view: View, found: dict[str, FlatTlv], name: str, what: str) -> int | None:
    member = found.get(name)
    return None if member is None else ber.integer(view, member, f"{what}.{name}")


def _load_label(view: View, tlv: FlatTlv, what: str) -> SecurityLabel:
    """A SecurityLabel (X.411 8.5.9) under an IMPLICIT context tag."""
    if not tlv[0] & ber.CONSTRUCTED:
        raise DecodeError("a SecurityLabel is a SET", where=what)
    return decode_security_label(ber.retag(value_bytes(view, tlv), ber.SET), what)


def _dump_label(label: SecurityLabel, number: int, what: str) -> bytes:
    return ber.retag(encode_security_label(label, what), ber.context(number))


def _load_codress(view: View, tlv: FlatTlv) -> int:
    expect_octet(tlv, INTEGER_OCTET, "CodressMessage")
    return ber.integer(view, tlv, "CodressMessage")


def _dump_codress(value: int) -> bytes:
    return tlv_bytes(INTEGER_OCTET, integer_bytes(value, "CodressMessage"))


_ADDRESS_LIST: Final = {
    context(0, False): "type",
    context(1, False): "listName",
    context(2, False): "notificationRequest",
    context(3, False): "replyRequest",
}


def _load_address_list(view: View, tlv: FlatTlv) -> AddressListDesignator:
    what = "AddressListDesignator"
    expect_octet(tlv, SET_OCTET, what)
    found = ber.members(view, tlv, _ADDRESS_LIST, what)
    _required(found, ("type", "listName"), what)
    return AddressListDesignator(
        type=ber.integer(view, found["type"], f"{what}.type"),
        list_name=decode_descriptor(view, found["listName"]),
        notification_request=_optional_integer(view, found, "notificationRequest", what),
        reply_request=_optional_integer(view, found, "replyRequest", what),
    )


def _load_address_lists(view: View, tlv: FlatTlv) -> tuple[AddressListDesignator, ...]:
    found = _list(view, tlv, SEQUENCE_OCTET, "AddressListDesignatorSeq")
    return tuple(_load_address_list(view, item) for item in found)


def _dump_address_list(value: AddressListDesignator) -> bytes:
    what = "AddressListDesignator"
    parts = [
        tlv_bytes(0x80, integer_bytes(value.type, f"{what}.type")),  # [0]
        encode_descriptor(value.list_name, context(1)),
    ]
    if value.notification_request is not None:
        parts.append(tlv_bytes(0x82, integer_bytes(value.notification_request, f"{what}.request")))
    if value.reply_request is not None:
        parts.append(tlv_bytes(0x83, integer_bytes(value.reply_request, f"{what}.replyRequest")))
    return constructed(SET_OCTET, parts)


def _dump_address_lists(values: tuple[AddressListDesignator, ...]) -> bytes:
    return constructed(SEQUENCE_OCTET, map(_dump_address_list, values))


_OTHER_RECIPIENT: Final = {context(0, False): "type", context(1, False): "designator"}


def _load_other_recipient(view: View, tlv: FlatTlv) -> OtherRecipientDesignator:
    what = "OtherRecipientDesignator"
    expect_octet(tlv, SET_OCTET, what)
    found = ber.members(view, tlv, _OTHER_RECIPIENT, what)
    _required(found, ("type", "designator"), what)
    return OtherRecipientDesignator(
        type=ber.integer(view, found["type"], f"{what}.type"),
        designator=ber.text(view, found["designator"], f"{what}.designator"),
    )


def _load_other_recipients(view: View, tlv: FlatTlv) -> tuple[OtherRecipientDesignator, ...]:
    found = _list(view, tlv, SEQUENCE_OCTET, "OtherRecipientDesignatorSeq")
    return tuple(_load_other_recipient(view, item) for item in found)


def _dump_other_recipient(value: OtherRecipientDesignator) -> bytes:
    what = "OtherRecipientDesignator"
    parts = (
        tlv_bytes(0x80, integer_bytes(value.type, f"{what}.type")),  # [0]
        tlv_bytes(0x81, military(value.designator, f"{what}.designator")),  # [1]
    )
    return constructed(SET_OCTET, parts)


def _dump_other_recipients(values: tuple[OtherRecipientDesignator, ...]) -> bytes:
    return constructed(SEQUENCE_OCTET, map(_dump_other_recipient, values))


_PILOT: Final = {
    context(0, False): "pilotPrecedence",
    context(1, False): "pilotRecipient",
    context(2, False): "pilotSecurity",
    context(3, False): "pilotHandling",
}


def _load_pilot(view: View, tlv: FlatTlv) -> PilotInformation:
    what = "PilotInformation"
    expect_octet(tlv, SEQUENCE_OCTET, what)
    found = _in_order(view, tlv, _PILOT, what)
    recipients = found.get("pilotRecipient")
    security = found.get("pilotSecurity")
    handling = found.get("pilotHandling")
    return PilotInformation(
        precedence=_optional_integer(view, found, "pilotPrecedence", what),
        recipients=() if recipients is None else _pilot_recipients(view, recipients),
        security_label=None
        if security is None
        else _load_label(view, security, f"{what}.pilotSecurity"),
        handling=() if handling is None else _pilot_handling(view, handling),
    )


def _pilot_recipients(view: View, tlv: FlatTlv) -> tuple[ORDescriptor, ...]:
    found = _list(view, tlv, context(1), "PilotInformation.pilotRecipient")
    if any(item[0] != SET_OCTET for item in found):
        raise DecodeError("expected ORDescriptors", where="PilotInformation.pilotRecipient")
    return tuple(decode_descriptor(view, item) for item in found)


def _pilot_handling(view: View, tlv: FlatTlv) -> tuple[str, ...]:
    found = _list(view, tlv, context(3), "PilotInformation.pilotHandling")
    return tuple(_load_string(view, item) for item in found)


def _load_pilots(view: View, tlv: FlatTlv) -> tuple[PilotInformation, ...]:
    return tuple(
        _load_pilot(view, item) for item in _list(view, tlv, SEQUENCE_OCTET, "PilotInformationSeq")
    )


def _dump_pilot(value: PilotInformation) -> bytes:
    what = "PilotInformation"
    parts = []
    if value.precedence is not None:
        parts.append(tlv_bytes(0x80, integer_bytes(value.precedence, f"{what}.pilotPrecedence")))
    if value.recipients:
        parts.append(constructed(context(1), map(encode_descriptor, value.recipients)))
    if value.security_label is not None:
        parts.append(_dump_label(value.security_label, 2, f"{what}.pilotSecurity"))
    if value.handling:
        parts.append(constructed(context(3), map(_dump_string, value.handling)))
    return constructed(SEQUENCE_OCTET, parts)


def _dump_pilots(values: tuple[PilotInformation, ...]) -> bytes:
    return constructed(SEQUENCE_OCTET, map(_dump_pilot, values))


_INFORMATION_LABELS: Final = {
    context(0, False): "content-security-label",
    context(1, False): "heading-security-label",
    context(2, False): "body-part-security-labels",
}
_BODY_PART_LABEL: Final = {
    context(0, False): "body-part-security-label",
    context(1, False): "body-part-sequence-number",
}


def _load_information_labels(view: View, tlv: FlatTlv) -> SecurityInformationLabels:
    what = "SecurityInformationLabels"
    expect_octet(tlv, SEQUENCE_OCTET, what)
    found = _in_order(view, tlv, _INFORMATION_LABELS, what)
    _required(found, ("content-security-label",), what)
    heading = found.get("heading-security-label")
    parts = found.get("body-part-security-labels")
    return SecurityInformationLabels(
        content_security_label=_load_label(
            view, found["content-security-label"], f"{what}.content-security-label"
        ),
        heading_security_label=None
        if heading is None
        else _load_label(view, heading, f"{what}.heading-security-label"),
        body_part_security_labels=()
        if parts is None
        else tuple(
            _load_body_part_label(view, item)
            for item in _list(view, parts, context(2), f"{what}.body-part-security-labels")
        ),
    )


def _load_body_part_label(view: View, tlv: FlatTlv) -> BodyPartSecurityLabel:
    what = "BodyPartSecurityLabel"
    expect_octet(tlv, SET_OCTET, what)
    found = ber.members(view, tlv, _BODY_PART_LABEL, what)
    _required(found, ("body-part-security-label",), what)
    label = found["body-part-security-label"]
    return BodyPartSecurityLabel(
        security_label=_load_label(view, label, f"{what}.body-part-security-label"),
        sequence_number=_optional_integer(view, found, "body-part-sequence-number", what),
    )


def _dump_information_labels(value: SecurityInformationLabels) -> bytes:
    what = "SecurityInformationLabels"
    parts = [_dump_label(value.content_security_label, 0, f"{what}.content-security-label")]
    if value.heading_security_label is not None:
        parts.append(_dump_label(value.heading_security_label, 1, f"{what}.heading-security-label"))
    if value.body_part_security_labels:
        labels = map(_dump_body_part_label, value.body_part_security_labels)
        parts.append(constructed(context(2), labels))
    return constructed(SEQUENCE_OCTET, parts)


def _dump_body_part_label(value: BodyPartSecurityLabel) -> bytes:
    what = "BodyPartSecurityLabel"
    parts = [_dump_label(value.security_label, 0, f"{what}.body-part-security-label")]
    if value.sequence_number is not None:
        number = integer_bytes(value.sequence_number, f"{what}.body-part-sequence-number")
        parts.append(tlv_bytes(0x81, number))  # [1]
    return constructed(SET_OCTET, parts)


@dataclass(frozen=True, slots=True)
class Extension:
    """A STANAG 4406 heading extension modelled as a Heading field."""

    field: str
    oid: str
    load: Callable[[View, FlatTlv], Any]
    dump: Callable[[Any], bytes]
    oid_tlv: bytes = dataclasses.field(init=False)
    """The encoding of ``oid`` (written with every value)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "oid_tlv", ber.oid_tlv(self.oid))


def _mm(arc: int) -> str:
    return f"{ID_MM}.{arc}"


# STANAG 4406 Annex A: id-nato-mmhs-mm-<name> = {id-mm n}, in the order written.
EXTENSIONS: Final = (
    Extension("primary_precedence", _mm(0), _load_precedence, _dump_precedence),
    Extension("copy_precedence", _mm(1), _load_precedence, _dump_precedence),
    Extension("message_type", _mm(2), _load_message_type, _dump_message_type),
    Extension("address_list_indicator", _mm(3), _load_address_lists, _dump_address_lists),
    Extension("exempted_addresses", _mm(4), _load_descriptors, _dump_descriptors),
    Extension("extended_authorisation_info", _mm(5), load_time, _dump_time),
    Extension("distribution_codes", _mm(6), _load_distribution, _dump_distribution),
    Extension("handling_instructions", _mm(7), _load_strings, _dump_strings),
    Extension("message_instructions", _mm(8), _load_strings, _dump_strings),
    Extension("codress_message", _mm(9), _load_codress, _dump_codress),
    Extension("originator_reference", _mm(10), _load_string, _dump_string),
    Extension(
        "other_recipients_indicator", _mm(11), _load_other_recipients, _dump_other_recipients
    ),
    Extension("pilot_forwarding_info", _mm(12), _load_pilots, _dump_pilots),
    Extension("acp127_message_identifier", _mm(13), _load_string, _dump_string),
    Extension("originator_plad", _mm(14), _load_string, _dump_string),
    Extension(
        "security_information_labels",
        _mm(17),
        _load_information_labels,
        _dump_information_labels,
    ),
)
EXTENSIONS_BY_OID: Final = {extension.oid: extension for extension in EXTENSIONS}
EXTENSIONS_BY_TLV: Final = {extension.oid_tlv: extension for extension in EXTENSIONS}
