"""The IPM and IPN models (X.420 clause 7; STANAG 4406 Annex A): frozen dataclasses.

The codecs are in :mod:`p1.ipms.ipm`, which re-exports every name here; import from there.
Each class quotes the ASN.1 it mirrors.  Empty tuples and None stand for absent
components; times are ``datetime`` to the second (naive ones are taken as UTC).

Body parts (X.420 7.3, 7.4; STANAG 4406 Annex A extended body part types) also have
the object identifiers of their types (``ID_ET_*``, ``ID_EP_*``, ``ID_MMHS_ET_*``) and::

    body_part_type(part) -> str          "ia5-text", "adatp3", "teletex", ... or the OID
    body_part_text(part) -> str | None   the text of a text-like part
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypeAlias, TypeVar

from p1 import ber
from p1.errors import DecodeError
from p1.mts.orname import ORName
from p1.mts.precedence import Precedence
from p1.mts.security_label import SecurityLabel

P2_CONTENT_TYPE: Final = 22
"""X.420: built-in content type of interpersonal messaging 1988 (P22)."""
P2_1984_CONTENT_TYPE: Final = 2
"""X.420 (1984): built-in content type of interpersonal messaging 1984 (P2), the IPM
syntax of P22 without what 1988 added (:mod:`p1.ipms.p2_1984`)."""
P772_CONTENT_TYPE: Final = "1.3.26.0.4406.0.4.1"
"""STANAG 4406 Annex A: extended content type id-mcont 1 of military messaging."""


class ContentKind(enum.Enum):
    """The content type of the envelope; ``ContentKind(22)``, ``ContentKind(2)`` or
    ``ContentKind(oid)``.  A 1984 IPM (2) is read with the codec of P22, whose syntax is
    its superset; its body parts are in their basic form, as P22's."""

    P2 = P2_CONTENT_TYPE
    P772 = P772_CONTENT_TYPE
    P2_1984 = P2_1984_CONTENT_TYPE


Kind: TypeAlias = ContentKind | int | str
"""A content kind, or the content type it stands for (22, 2 or the P772 OID)."""


# --- enumerations ---------------------------------------------------------------------


class Importance(enum.IntEnum):
    """``ImportanceField ::= ENUMERATED {low(0), normal(1), high(2)}`` (X.420 7.2.13)."""

    LOW = 0
    NORMAL = 1
    HIGH = 2


class Sensitivity(enum.IntEnum):
    """``SensitivityField ::= ENUMERATED {personal(1), private(2),
    company-confidential(3)}`` (X.420 7.2.14)."""

    PERSONAL = 1
    PRIVATE = 2
    COMPANY_CONFIDENTIAL = 3


class NotificationRequests(enum.IntFlag):
    """``NotificationRequests ::= BIT STRING {rn(0), nrn(1), ipm-return(2),
    an-supported(3), suppress-an(4)}`` (X.420 7.1.4); flag value ``1 << bit``."""

    RN = 1
    NRN = 2
    IPM_RETURN = 4
    AN_SUPPORTED = 8
    SUPPRESS_AN = 16


NO_REQUESTS: Final = NotificationRequests(0)


class Repertoire(enum.IntEnum):
    """``Repertoire ::= ENUMERATED {ita2(2), ia5(5)}`` (X.420 7.4.1)."""

    ITA2 = 2
    IA5 = 5


class TextKind(enum.Enum):
    """Which text body part: IA5 text (X.420 7.4.1) or general text (X.420 7.4.11)."""

    IA5 = "ia5-text"
    GENERAL = "general-text"


class ForwardedForm(enum.Enum):
    """The wire form of a forwarded message body part."""

    BASIC = "message"
    """X.420 7.4.9: basic ``message [9] MessageBodyPart``."""
    EXTENDED = "extended-message"
    """X.420: the extended message body part (id-et-message, id-ep-message)."""
    MM_MESSAGE = "mm-message"
    """STANAG 4406 Annex A: mm-message-body-part (id-nato-mmhs-et-mm-message)."""


class TypeMessage(enum.IntEnum):
    """``TypeMessage ::= INTEGER {exercise(0), operation(1), project(2), drill(3)}``;
    0..127 NATO, 128..255 national or bilateral (STANAG 4406 Annex A)."""

    EXERCISE = 0
    OPERATION = 1
    PROJECT = 2
    DRILL = 3


class AddressListType(enum.IntEnum):
    """The ``type`` of an AddressListDesignator: ``INTEGER {primaryAddressList(0),
    copyAddressList(1)}`` (STANAG 4406 Annex A address-list-indicator)."""

    PRIMARY_ADDRESS_LIST = 0
    COPY_ADDRESS_LIST = 1


class AddressListRequest(enum.IntEnum):
    """``AddressListRequest ::= INTEGER {action(0), info(1), both(2)}`` (STANAG 4406
    Annex A)."""

    ACTION = 0
    INFO = 1
    BOTH = 2


class OtherRecipientType(enum.IntEnum):
    """The ``type`` of an OtherRecipientDesignator: ``INTEGER {primary(0), copy(1)}``
    (STANAG 4406 Annex A other-recipients-indicator)."""

    PRIMARY = 0
    COPY = 1


_I = TypeVar("_I", bound=enum.IntEnum)


def _named(cls: type[_I], value: int | None) -> _I | None:
    """The member of ``cls`` whose value is ``value``; None for another value (national
    or bilateral use) or an absent one."""
    if value is None:
        return None
    try:
        return cls(value)
    except ValueError:
        return None


class NotificationKind(enum.Enum):
    """Which alternative of the IPN's ``choice`` is present (X.420 7.2)."""

    NON_RECEIPT = "non-receipt-fields"
    RECEIPT = "receipt-fields"
    OTHER = "other-notification-type-fields"


class NonReceiptReason(enum.IntEnum):
    """``NonReceiptReasonField ::= ENUMERATED {ipm-discarded(0),
    ipm-auto-forwarded(1), ...}`` (X.420 7.2.2.1)."""

    IPM_DISCARDED = 0
    IPM_AUTO_FORWARDED = 1


class DiscardReason(enum.IntEnum):
    """``DiscardReasonField`` (X.420 7.2.2.2, ITU-T version)."""

    IPM_EXPIRED = 0
    IPM_OBSOLETED = 1
    USER_SUBSCRIPTION_TERMINATED = 2
    NOT_USED = 3


class AcknowledgmentMode(enum.IntEnum):
    """``AcknowledgmentModeField ::= ENUMERATED {manual(0), automatic(1)}``."""

    MANUAL = 0
    AUTOMATIC = 1


# --- heading models -------------------------------------------------------------------


# IPMIdentifier ::= [APPLICATION 11] SET {
#   user                      ORName OPTIONAL,
#   user-relative-identifier  LocalIPMIdentifier }
@dataclass(frozen=True, slots=True, kw_only=True)
class IPMIdentifier:
    """Identifies an IPM (X.420 7.1.1).  STANAG 4406 makes ``user`` mandatory."""

    user: ORName | None = None
    user_relative_identifier: str
    """LocalIPMIdentifier: PrintableString of 0..64 characters."""


# ORDescriptor ::= SET {
#   formal-name       ORName OPTIONAL,
#   free-form-name    [0] FreeFormName OPTIONAL,
#   telephone-number  [1] TelephoneNumber OPTIONAL }
@dataclass(frozen=True, slots=True, kw_only=True)
class ORDescriptor:
    """A user or distribution list, by O/R name and/or free text (X.420 7.1.3)."""

    formal_name: ORName | None = None
    free_form_name: str | None = None
    """FreeFormName: TeletexString of 0..64 characters."""
    telephone_number: str | None = None


# IPMSExtension ::= SEQUENCE { type OBJECT IDENTIFIER, value ANY DEFAULT NULL }
@dataclass(frozen=True, slots=True, kw_only=True)
class RawExtension:
    """An IPMS extension (X.420 7.1.5) kept as its identifier and value bytes."""

    type: str
    """The extension's OBJECT IDENTIFIER, dotted."""
    value: bytes | None = None
    """The BER of the value (complete TLV); None when absent (which means NULL)."""


# RecipientSpecifier ::= SET {
#   recipient              [0] ORDescriptor,
#   notification-requests  [1] NotificationRequests DEFAULT {},
#   reply-requested        [2] BOOLEAN DEFAULT FALSE,
#   recipient-extensions   [3] RecipientExtensionsField OPTIONAL }
@dataclass(frozen=True, kw_only=True)
class Recipient:
    """A primary, copy or blind copy recipient (X.420 7.1.2): an O/R descriptor
    (``name``, ``free_form_name``, ``telephone_number``) and what the originator asks.

    (Not slots: the decoder sets every field in the instance dictionary at once, as for
    :class:`Heading`.)
    """

    name: ORName | None = None
    """The formal name (ORDescriptor.formal-name)."""
    free_form_name: str | None = None
    telephone_number: str | None = None
    notification_requests: NotificationRequests = NO_REQUESTS
    reply_requested: bool = False
    extensions: tuple[RawExtension, ...] = ()
    """recipient-extensions, e.g. STANAG 4406 acp127-notification-request."""

    @property
    def descriptor(self) -> ORDescriptor:
        """The recipient as an :class:`ORDescriptor`."""
        return ORDescriptor(
            formal_name=self.name,
            free_form_name=self.free_form_name,
            telephone_number=self.telephone_number,
        )


# MessageType ::= SET { type [0] TypeMessage, identifier [1] MessageIdentifier OPTIONAL }
@dataclass(frozen=True, slots=True, kw_only=True)
class MessageType:
    """STANAG 4406 Annex A message-type heading extension."""

    type: int
    """A :class:`TypeMessage` value, or 128..255 for national use."""
    identifier: str | None = None
    """MessageIdentifier: MilitaryString (PrintableString of 1..69)."""


# DistributionExtensionField ::= INSTANCE OF TYPE-IDENTIFIER
@dataclass(frozen=True, slots=True, kw_only=True)
class DistributionExtension:
    """A distribution extension field (STANAG 4406 Annex A), kept raw."""

    type_id: str
    value: bytes
    """The BER of the value (the TLV inside the ``[0]``)."""


# DistributionCodes ::= SET {
#   sics [0] SEQUENCE SIZE (1..8) OF Sic OPTIONAL,
#   dist-Extensions [1] SEQUENCE OF DistributionExtensionField OPTIONAL }
@dataclass(frozen=True, slots=True, kw_only=True)
class DistributionCodes:
    """STANAG 4406 Annex A distribution-codes heading extension."""

    sics: tuple[str, ...] = ()
    """Subject indicator codes (PrintableString of 3..8 characters, at most 8)."""
    dist_extensions: tuple[DistributionExtension, ...] = ()


# AddressListDesignator ::= SET {
#   type                 [0]  INTEGER {primaryAddressList(0), copyAddressList(1)},
#   listName             [1]  ORDescriptor,
#   notificationRequest  [2]  AddressListRequest OPTIONAL,
#   replyRequest         [3]  AddressListRequest OPTIONAL }
@dataclass(frozen=True, slots=True, kw_only=True)
class AddressListDesignator:
    """An address list the message was sent to (STANAG 4406 Annex A
    address-list-indicator, ``SEQUENCE OF AddressListDesignator``)."""

    type: int
    """An :class:`AddressListType` value, or another for national use."""
    list_name: ORDescriptor
    notification_request: int | None = None
    """An :class:`AddressListRequest` value, or another for national use."""
    reply_request: int | None = None
    """An :class:`AddressListRequest` value, or another for national use."""

    @property
    def named_type(self) -> AddressListType | None:
        """``type`` as an :class:`AddressListType`; None for a national value."""
        return _named(AddressListType, self.type)

    @property
    def named_notification_request(self) -> AddressListRequest | None:
        """``notification_request`` as an :class:`AddressListRequest`; None when absent
        or national."""
        return _named(AddressListRequest, self.notification_request)

    @property
    def named_reply_request(self) -> AddressListRequest | None:
        """``reply_request`` as an :class:`AddressListRequest`; None when absent or
        national."""
        return _named(AddressListRequest, self.reply_request)


# OtherRecipientDesignator ::= SET {
#   type        [0]  INTEGER {primary(0), copy(1)},
#   designator  [1]  MilitaryString }
@dataclass(frozen=True, slots=True, kw_only=True)
class OtherRecipientDesignator:
    """A recipient outside the MMHS, by designator (STANAG 4406 Annex A
    other-recipients-indicator, ``SEQUENCE OF OtherRecipientDesignator``)."""

    type: int
    """An :class:`OtherRecipientType` value, or another for national use."""
    designator: str
    """MilitaryString: PrintableString of 1..69 characters."""

    @property
    def named_type(self) -> OtherRecipientType | None:
        """``type`` as an :class:`OtherRecipientType`; None for a national value."""
        return _named(OtherRecipientType, self.type)


# PilotInformation ::= SEQUENCE {
#   pilotPrecedence  [0]  MMHSPrecedence OPTIONAL,
#   pilotRecipient   [1]  SEQUENCE OF ORDescriptor OPTIONAL,
#   pilotSecurity    [2]  SecurityLabel OPTIONAL,
#   pilotHandling    [3]  SEQUENCE OF MilitaryString OPTIONAL }
@dataclass(frozen=True, slots=True, kw_only=True)
class PilotInformation:
    """One pilot of a forwarded message (STANAG 4406 Annex A pilot-forwarding-info,
    ``SEQUENCE OF PilotInformation``).  Empty tuples and None mean absent."""

    precedence: int | None = None
    """pilotPrecedence: a :class:`Precedence` value, or 16..31 for national use."""
    recipients: tuple[ORDescriptor, ...] = ()
    """pilotRecipient."""
    security_label: SecurityLabel | None = None
    """pilotSecurity: an X.411 8.5.9 SecurityLabel."""
    handling: tuple[str, ...] = ()
    """pilotHandling: MilitaryStrings (PrintableString of 1..69 characters)."""

    @property
    def named_precedence(self) -> Precedence | None:
        """``precedence`` as a :class:`Precedence`; None when absent or national."""
        return _named(Precedence, self.precedence)


# BodyPartSecurityLabel ::= SET {
#   body-part-security-label   [0]  SecurityLabel,
#   body-part-sequence-number  [1]  BodyPartSequenceNumber OPTIONAL }   -- INTEGER
@dataclass(frozen=True, slots=True, kw_only=True)
class BodyPartSecurityLabel:
    """The security label of one body part (STANAG 4406 Annex A)."""

    security_label: SecurityLabel
    sequence_number: int | None = None
    """The body part's position in the body; None: the label's own position."""


# SecurityInformationLabels ::= SEQUENCE {
#   content-security-label     [0]  SecurityLabel,
#   heading-security-label     [1]  SecurityLabel OPTIONAL,
#   body-part-security-labels  [2]  SEQUENCE OF BodyPartSecurityLabel OPTIONAL }
@dataclass(frozen=True, slots=True, kw_only=True)
class SecurityInformationLabels:
    """STANAG 4406 Annex A security-information-labels heading extension (deprecated
    by Annex B's ESSSecurityLabel, still read and written)."""

    content_security_label: SecurityLabel
    heading_security_label: SecurityLabel | None = None
    body_part_security_labels: tuple[BodyPartSecurityLabel, ...] = ()


# Heading ::= SET { this-IPM ThisIPMField, originator [0] ..., ..., extensions [15] ... }
@dataclass(frozen=True, kw_only=True)
class Heading:
    """The IPM heading (X.420 7.2) with the STANAG 4406 Annex A heading extensions.

    The military extensions are typed fields; every other extension, and a military
    one whose value does not decode, is in ``other_extensions`` (encoded after the
    typed ones, which are encoded in the order of their identifiers).  Empty tuples and
    None mean absent.

    (Not slots: the decoder sets its 33 fields in the instance dictionary at once,
    see :data:`_HEADING_DEFAULTS`.)
    """

    this_ipm: IPMIdentifier
    originator: ORDescriptor | None = None
    authorizing_users: tuple[ORDescriptor, ...] = ()
    primary_recipients: tuple[Recipient, ...] = ()
    copy_recipients: tuple[Recipient, ...] = ()
    blind_copy_recipients: tuple[Recipient, ...] = ()
    replied_to_ipm: IPMIdentifier | None = None
    obsoleted_ipms: tuple[IPMIdentifier, ...] = ()
    related_ipms: tuple[IPMIdentifier, ...] = ()
    subject: str | None = None
    """SubjectField: TeletexString of 0..128 characters (ISO 8859-1 here)."""
    expiry_time: datetime | None = None
    reply_time: datetime | None = None
    reply_recipients: tuple[ORDescriptor, ...] = ()
    importance: Importance = Importance.NORMAL
    sensitivity: Sensitivity | None = None
    auto_forwarded: bool = False
    # STANAG 4406 Annex A heading extensions (id-nato-mmhs-mm-*).
    primary_precedence: Precedence | None = None
    copy_precedence: Precedence | None = None
    message_type: MessageType | None = None
    address_list_indicator: tuple[AddressListDesignator, ...] = ()
    exempted_addresses: tuple[ORDescriptor, ...] = ()
    extended_authorisation_info: datetime | None = None
    distribution_codes: DistributionCodes | None = None
    handling_instructions: tuple[str, ...] = ()
    message_instructions: tuple[str, ...] = ()
    codress_message: int | None = None
    originator_reference: str | None = None
    other_recipients_indicator: tuple[OtherRecipientDesignator, ...] = ()
    pilot_forwarding_info: tuple[PilotInformation, ...] = ()
    acp127_message_identifier: str | None = None
    originator_plad: str | None = None
    security_information_labels: SecurityInformationLabels | None = None
    """Deprecated (STANAG 4406 Annex B replaces it by the ESSSecurityLabel)."""
    other_extensions: tuple[RawExtension, ...] = ()


_HEADING_DEFAULTS: Final[dict[str, Any]] = {
    f.name: f.default for f in dataclasses.fields(Heading) if f.default is not dataclasses.MISSING
}
"""Every field of :class:`Heading` but ``this_ipm``, at its default.  The decoder makes a
heading with ``object.__new__``, copies these into its instance dictionary and then the
fields it read: the generated ``__init__`` of a frozen dataclass sets the fields one
``object.__setattr__`` call at a time (a few microseconds for 33)."""


# --- body part models -----------------------------------------------------------------
#
# Every typed body part has ``encoding``: the BodyPart TLV exactly as received when it was
# decoded from a form other than the one the encoder writes (indefinite or long lengths,
# segmented strings, a DEFAULT sent explicitly, a high-number tag), else None.  It is not
# part of the value (compare=False) and not shown (repr=False); :mod:`p1.ipms.body` writes
# it back while it still decodes to the part, so a relayed body keeps its bytes.


def _received() -> Any:
    """The ``encoding`` field of a typed body part (see above)."""
    return dataclasses.field(default=None, compare=False, repr=False)


# IA5TextBodyPart ::= SEQUENCE { parameters SET {repertoire [0] Repertoire DEFAULT ia5},
#                                data IA5String }
# general-text: PARAMETERS SET OF CharacterSetRegistration, DATA GeneralString
@dataclass(frozen=True, slots=True, kw_only=True)
class TextBodyPart:
    """IA5 text (X.420 7.4.1) or general text (X.420 7.4.11), as the octets sent."""

    data: bytes
    kind: TextKind = TextKind.IA5
    repertoire: Repertoire = Repertoire.IA5
    """IA5 text only (general text leaves it IA5)."""
    character_sets: tuple[int, ...] = ()
    """General text only: ISO-IR registration numbers (e.g. 1, 6, 100: ISO 8859-1)."""
    extended: bool | None = None
    """IA5 text: None for the content kind's form, else True (extended) / False
    (basic).  General text: None (it has only the extended form)."""
    encoding: bytes | None = _received()
    """The BodyPart TLV as received, when not in the form the encoder writes."""

    @classmethod
    def from_text(cls, text: str) -> TextBodyPart:
        """IA5 text when ``text`` is ASCII, else general text in ISO 8859-1 (ISO-IR 1,
        6, 100) or, failing that, UTF-8 (ISO-IR 196)."""
        if text.isascii():
            return cls(data=text.encode("ascii"))
        try:
            return cls(
                data=text.encode("latin-1"), kind=TextKind.GENERAL, character_sets=_LATIN1_SETS
            )
        except UnicodeEncodeError:
            return cls(data=text.encode("utf-8"), kind=TextKind.GENERAL, character_sets=_UTF8_SETS)

    @property
    def text(self) -> str:
        """The text, decoded by its character sets; undecodable octets become U+FFFD."""
        if self.kind is TextKind.GENERAL and _UTF8_SET in self.character_sets:
            return self.data.decode("utf-8", errors="replace")
        if self.kind is TextKind.GENERAL and _LATIN1_SET in self.character_sets:
            return self.data.decode("latin-1")
        return _ia5(self.data)


def _ia5(data: bytes) -> str:
    """IA5 octets as text; octets above 0x7f become U+FFFD."""
    return data.decode("ascii", errors="replace")


_LATIN1_SET: Final = 100
_UTF8_SET: Final = 196
_LATIN1_SETS: Final = (1, 6, 100)
_UTF8_SETS: Final = (1, 6, 196)


# BilaterallyDefinedBodyPart ::= OCTET STRING
@dataclass(frozen=True, slots=True, kw_only=True)
class BinaryBodyPart:
    """A bilaterally defined body part (X.420 7.4.10): octets."""

    data: bytes
    extended: bool | None = None
    """None for the content kind's form, else True (extended) / False (basic)."""
    encoding: bytes | None = _received()
    """The BodyPart TLV as received, when not in the form the encoder writes."""


# MessageBodyPart ::= SEQUENCE { parameters MessageParameters, data MessageData }
@dataclass(frozen=True, slots=True, kw_only=True)
class ForwardedMessageBodyPart:
    """A forwarded message (X.420 7.4.9; STANAG 4406 mm-message), kept as BER."""

    message: bytes
    """The forwarded IPM: BER of ``IPM ::= SEQUENCE {heading, body}`` (tag 0x30)."""
    parameters: bytes = b"\x31\x00"
    """BER of MessageParameters (a SET: delivery-time, delivery-envelope)."""
    form: ForwardedForm | None = None
    """None for the content kind's form (P2: basic, P772: extended), else the form.

    Build one with ``ForwardedMessageBodyPart(message=encode_message_data(ipm, kind))``
    and read it with ``decode_message_data(part.message, kind)`` (:mod:`p1.ipms.ipm`).
    """
    encoding: bytes | None = _received()
    """The BodyPart TLV as received, when not in the form the encoder writes."""


# ADatP3Parameters ::= INTEGER -- DEFAULT (0)
# ADatP3Data ::= CHOICE { lineOriented [0] IMPLICIT IA5String,
#                         setOriented  [1] IMPLICIT SEQUENCE OF IA5String }
@dataclass(frozen=True, slots=True, kw_only=True)
class ADatP3BodyPart:
    """An ADatP-3 formatted message (STANAG 4406 Annex A adatp3-body-part,
    id-nato-mmhs-et-adatp3), as the IA5 octets sent."""

    data: bytes = b""
    """lineOriented: the text, its lines ending CR LF (empty when set-oriented)."""
    sets: tuple[bytes, ...] | None = None
    """setOriented: one IA5String per set; None for the line-oriented form."""
    parameters: int | None = None
    """ADatP3Parameters (id-nato-mmhs-et-adatp3-parameters); None when absent."""
    encoding: bytes | None = _received()
    """The BodyPart TLV as received, when not in the form the encoder writes."""

    @property
    def lines(self) -> tuple[str, ...]:
        """The text lines: the sets of a set-oriented part, else the lines of ``data``."""
        if self.sets is not None:
            return tuple(_ia5(item) for item in self.sets)
        return tuple(_ia5(self.data).splitlines())

    @property
    def text(self) -> str:
        """The text: ``data``, or the sets one to a line."""
        if self.sets is not None:
            return "\r\n".join(self.lines)
        return _ia5(self.data)


# ACP127DataParameters ::= INTEGER
# ACP127DataData ::= IA5String (SIZE (1..ub-data-size))
@dataclass(frozen=True, slots=True, kw_only=True)
class ACP127DataBodyPart:
    """An ACP 127 message carried whole (STANAG 4406 Annex A acp127data-body-part,
    id-nato-mmhs-et-mm-acp127data): IA5 octets."""

    data: bytes
    parameters: int | None = None
    """ACP127DataParameters; None when absent."""
    encoding: bytes | None = _received()
    """The BodyPart TLV as received, when not in the form the encoder writes."""

    @property
    def text(self) -> str:
        """The ACP 127 text."""
        return _ia5(self.data)


# CorrectionsParameters ::= INTEGER
# CorrectionsData ::= IA5String
@dataclass(frozen=True, slots=True, kw_only=True)
class CorrectionsBodyPart:
    """Corrections to a message (STANAG 4406 Annex A corrections-body-part,
    id-nato-mmhs-et-corrections): IA5 octets."""

    data: bytes
    parameters: int | None = None
    """CorrectionsParameters; None when absent."""
    encoding: bytes | None = _received()
    """The BodyPart TLV as received, when not in the form the encoder writes."""

    @property
    def text(self) -> str:
        """The corrections' text."""
        return _ia5(self.data)


# ForwardedEncryptedParameters ::= SET { delivery-time [0] MessageDeliveryTime OPTIONAL,
#                                        delivery-envelope [1] OtherMessageDeliveryFields }
# ForwardedEncryptedData ::= BIT STRING
@dataclass(frozen=True, slots=True, kw_only=True)
class ForwardedEncryptedBodyPart:
    """A forwarded encrypted message (STANAG 4406 Annex A forwarded-encrypted-body-part,
    id-nato-mmhs-et-forwarded-encrypted)."""

    parameters: bytes
    """BER of ForwardedEncryptedParameters (a SET), kept as received."""
    data: bytes
    """The octets of the BIT STRING (the encrypted content)."""
    unused_bits: int = 0
    """Bits of the last octet that are not part of the string (0..7)."""
    encoding: bytes | None = _received()
    """The BodyPart TLV as received, when not in the form the encoder writes."""


# ExtendedBodyPart ::= SEQUENCE { parameters [0] INSTANCE OF TYPE-IDENTIFIER OPTIONAL,
#                                 data INSTANCE OF TYPE-IDENTIFIER }
@dataclass(frozen=True, slots=True, kw_only=True)
class ExtendedBodyPart:
    """Any other extended body part (X.420 7.3.12), kept as identifiers and BER."""

    data_type: str
    data: bytes
    """The BER of the data value (the TLV inside the data's ``[0]``), as received."""
    parameters_type: str | None = None
    parameters: bytes | None = None
    """The BER of the parameters value, when present, as received."""
    encoding: bytes | None = _received()
    """The BodyPart TLV as received, when not in the form the encoder writes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RawBodyPart:
    """Any other body part, kept as its complete BER (the BodyPart CHOICE TLV)."""

    encoding: bytes


BodyPart: TypeAlias = (
    TextBodyPart
    | BinaryBodyPart
    | ForwardedMessageBodyPart
    | ADatP3BodyPart
    | ACP127DataBodyPart
    | CorrectionsBodyPart
    | ForwardedEncryptedBodyPart
    | ExtendedBodyPart
    | RawBodyPart
)
TEXT_LIKE_BODY_PARTS: Final = (  # (each has a ``text`` property)
    TextBodyPart,
    ADatP3BodyPart,
    ACP127DataBodyPart,
    CorrectionsBodyPart,
)


# --- body part types: identifiers and names ------------------------------------------

# X.420 IPMSObjectIdentifiers: extended body part types (id-et) and parameters (id-ep).
ID_ET: Final = "2.6.1.4"
ID_ET_IA5_TEXT: Final = "2.6.1.4.0"
ID_EP_IA5_TEXT: Final = "2.6.1.11.0"
ID_ET_MESSAGE: Final = "2.6.1.4.7"
ID_EP_MESSAGE: Final = "2.6.1.11.7"
ID_ET_BILATERALLY_DEFINED: Final = "2.6.1.4.9"
ID_ET_GENERAL_TEXT: Final = "2.6.1.4.11"
ID_EP_GENERAL_TEXT: Final = "2.6.1.11.11"
ID_ET_CONTENT: Final = "2.6.1.4.17"
"""id-et-content: a prefix, followed by the forwarded content's type."""
# STANAG 4406 MMSObjectIdentifiers: id-nato-mmhs-et-* (types and their parameters).
ID_MMHS_ET_ADATP3: Final = "1.3.26.0.4406.0.7.0"
ID_MMHS_ET_CORRECTIONS: Final = "1.3.26.0.4406.0.7.1"
ID_MMHS_ET_ADATP3_PARAMETERS: Final = "1.3.26.0.4406.0.7.2"
ID_MMHS_ET_CORRECTIONS_PARAMETERS: Final = "1.3.26.0.4406.0.7.3"
ID_MMHS_ET_FORWARDED_ENCRYPTED: Final = "1.3.26.0.4406.0.7.6"
ID_MMHS_ET_FORWARDED_ENCRYPTED_PARAMETERS: Final = "1.3.26.0.4406.0.7.7"
ID_MMHS_ET_MM_MESSAGE: Final = "1.3.26.0.4406.0.7.9"
ID_MMHS_ET_MM_MESSAGE_PARAMETERS: Final = "1.3.26.0.4406.0.7.10"
ID_MMHS_ET_ACP127DATA: Final = "1.3.26.0.4406.0.7.12"
ID_MMHS_ET_ACP127DATA_PARAMETERS: Final = "1.3.26.0.4406.0.7.13"


# The names of the standard body part types: X.420 BodyPart alternatives (by the tag
# number of the basic form) and extended body part types (id-et-*, X.420 and STANAG 4406
# Annex A).
_BASIC_NAMES: Final = {
    0: "ia5-text",
    3: "g3-facsimile",
    4: "g4-class1",
    5: "teletex",
    6: "videotex",
    7: "nationally-defined",
    8: "encrypted",
    9: "message",
    11: "mixed-mode",
    14: "bilaterally-defined",
    15: "extended",
}
_X420_EXTENDED_NAMES: Final = {
    2: "g3-facsimile",
    3: "g4-class1",
    4: "teletex",
    5: "videotex",
    6: "encrypted",
    7: "message",
    8: "mixed-mode",
    9: "bilaterally-defined",
    10: "nationally-defined",
    11: "general-text",
    12: "file-transfer",
    14: "report",
    15: "notification",
    16: "voice",
    18: "pkcs7",
}
_EXTENDED_NAMES: Final = {
    ID_ET_IA5_TEXT: "ia5-text",
    **{f"{ID_ET}.{number}": name for number, name in _X420_EXTENDED_NAMES.items()},
    ID_MMHS_ET_ADATP3: "adatp3",
    ID_MMHS_ET_CORRECTIONS: "corrections",
    ID_MMHS_ET_FORWARDED_ENCRYPTED: "forwarded-encrypted",
    ID_MMHS_ET_MM_MESSAGE: "mm-message",
    ID_MMHS_ET_ACP127DATA: "acp127data",
}


def body_part_type(part: BodyPart) -> str:
    """The name of the part's type in X.420 / STANAG 4406 Annex A ("ia5-text",
    "general-text", "bilaterally-defined", "message", "mm-message", "adatp3",
    "acp127data", "corrections", "forwarded-encrypted", "teletex", ...); for an
    extended type that is not a standard one, its object identifier."""
    if isinstance(part, TextBodyPart):
        return part.kind.value
    if isinstance(part, ForwardedMessageBodyPart):
        return "mm-message" if part.form is ForwardedForm.MM_MESSAGE else "message"
    if isinstance(part, ExtendedBodyPart):
        return _extended_name(part.data_type)
    if isinstance(part, RawBodyPart):
        return _raw_name(part.encoding)
    return _TYPE_NAMES[type(part)]


_TYPE_NAMES: Final[dict[type, str]] = {
    BinaryBodyPart: "bilaterally-defined",
    ADatP3BodyPart: "adatp3",
    ACP127DataBodyPart: "acp127data",
    CorrectionsBodyPart: "corrections",
    ForwardedEncryptedBodyPart: "forwarded-encrypted",
}


def _extended_name(type_id: str) -> str:
    name = _EXTENDED_NAMES.get(type_id)
    if name is None and type_id.startswith(ID_ET_CONTENT + "."):
        return "content"  # (X.420 forwarded content: id-et-content and the content type)
    return type_id if name is None else name


def _raw_name(encoding: bytes) -> str:
    """The BodyPart alternative of a raw part, by its tag (X.420 7.3)."""
    try:
        key = ber.read_identifier(encoding, 0, len(encoding))[0]
    except DecodeError:
        return "unknown"
    low_context = key < 0x100 and key & 0xC0 == ber.CONTEXT
    name = _BASIC_NAMES.get(key & 0x1F) if low_context else None
    return "unknown" if name is None else name


def body_part_text(part: BodyPart) -> str | None:
    """The text of a text-like part (IA5 and general text, ADatP-3, ACP 127 data,
    corrections, teletex, videotex); None for the others, and for a teletex or videotex
    part whose data does not read as its type."""
    if isinstance(part, TEXT_LIKE_BODY_PARTS):
        return part.text
    if isinstance(part, RawBodyPart | ExtendedBodyPart):
        return _kept_text(part)
    return None


_TELETEX: Final = "teletex"
_VIDEOTEX: Final = "videotex"
_SEQUENCE_KEY: Final = 0x30  # (the identifier octet, constructed)
_TELETEX_STRING_KEY: Final = 0x14  # TeletexString, UNIVERSAL 20
_VIDEOTEX_STRING_KEY: Final = 0x15  # VideotexData ::= [UNIVERSAL 21] IMPLICIT OCTET STRING


def _kept_text(part: RawBodyPart | ExtendedBodyPart) -> str | None:
    """The text of a teletex (X.420 7.4.4: a SEQUENCE OF TeletexString, one per page) or
    videotex (7.4.5: VideotexString) part kept as received, in its basic or extended
    form, read in any BER form; TeletexString and VideotexString as ISO 8859-1 here."""
    kind = body_part_type(part)
    if kind not in (_TELETEX, _VIDEOTEX):
        return None
    try:
        view, data = _kept_data(part)
        if kind == _VIDEOTEX:
            return _string_text(view, data, _VIDEOTEX_STRING_KEY, kind)
        if data[0] & ~ber.CONSTRUCTED != _SEQUENCE_KEY & ~ber.CONSTRUCTED:
            return None
        pages = [
            _string_text(view, page, _TELETEX_STRING_KEY, kind)
            for page in ber.items(view, data, kind)
        ]
        return None if None in pages else "\n".join(page or "" for page in pages)
    except DecodeError:
        return None


def _kept_data(part: RawBodyPart | ExtendedBodyPart) -> tuple[memoryview, ber.FlatTlv]:
    """The data TLV of a kept teletex or videotex part: the second member of the basic
    form's SEQUENCE {parameters, data}, or the extended form's data value."""
    if isinstance(part, ExtendedBodyPart):
        view = memoryview(part.data)
        return view, ber.read(view, 0, len(view), 1)
    view = memoryview(part.encoding)
    members = ber.items(view, ber.read(view, 0, len(view), 1), "body part")
    if len(members) != 2:
        raise DecodeError("a SEQUENCE of parameters and data was expected", where="body part")
    return view, members[1]


def _string_text(view: memoryview, tlv: ber.FlatTlv, key: int, what: str) -> str | None:
    """A TeletexString or VideotexString as text (its universal tag checked; control
    characters kept), or None when the value has another tag."""
    if tlv[0] & ~ber.CONSTRUCTED != key:
        return None
    return ber.text(view, tlv, what, "latin-1")


# IPM ::= SEQUENCE { heading Heading, body Body }   (MM in STANAG 4406: the same)
@dataclass(frozen=True, slots=True, kw_only=True)
class IPM:
    """An interpersonal (P2) or military (P772) message (X.420 7.1)."""

    heading: Heading
    body: tuple[BodyPart, ...] = ()


# --- IPN models -----------------------------------------------------------------------


# ReceiptFields ::= SET { receipt-time [0] ..., acknowledgment-mode [1] ... DEFAULT manual,
#                         suppl-receipt-info [2] ... OPTIONAL, rn-extensions [3] ... }
@dataclass(frozen=True, slots=True, kw_only=True)
class ReceiptFields:
    """A receipt notification's fields (X.420 7.2.3)."""

    receipt_time: datetime
    acknowledgment_mode: AcknowledgmentMode = AcknowledgmentMode.MANUAL
    suppl_receipt_info: str | None = None
    extensions: tuple[RawExtension, ...] = ()


# NonReceiptFields ::= SET { non-receipt-reason [0], discard-reason [1] OPTIONAL,
#   auto-forward-comment [2] OPTIONAL, returned-ipm [3] OPTIONAL, nrn-extensions [4] }
@dataclass(frozen=True, slots=True, kw_only=True)
class NonReceiptFields:
    """A non-receipt notification's fields (X.420 7.2.2)."""

    non_receipt_reason: NonReceiptReason
    discard_reason: DiscardReason | None = None
    auto_forward_comment: str | None = None
    returned_ipm: bytes | None = None
    """BER of the returned IPM (``IPM`` SEQUENCE); see :func:`decode_message_data`."""
    extensions: tuple[RawExtension, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class OtherNotificationFields:
    """Other notification type fields (X.420 7.2.4), e.g. STANAG 4406
    acp127-notification-response: a SET OF IPMSExtension."""

    extensions: tuple[RawExtension, ...] = ()


NotificationFields: TypeAlias = ReceiptFields | NonReceiptFields | OtherNotificationFields


# IPN ::= SET { COMPONENTS OF CommonFields, choice [0] CHOICE {...} }
@dataclass(frozen=True, slots=True, kw_only=True)
class IPN:
    """An interpersonal notification (X.420 7.2; MN in STANAG 4406)."""

    subject_ipm: IPMIdentifier
    fields: NotificationFields
    ipn_originator: ORDescriptor | None = None
    ipm_intended_recipient: ORDescriptor | None = None
    conversion_eits: bytes | None = None
    """BER of the EncodedInformationTypes ([APPLICATION 5]), kept raw."""
    notification_extensions: tuple[RawExtension, ...] = ()

    @property
    def kind(self) -> NotificationKind:
        """Receipt, non-receipt or other notification."""
        return _NOTIFICATION_KINDS[type(self.fields)]


_NOTIFICATION_KINDS: Final[dict[type, NotificationKind]] = {
    ReceiptFields: NotificationKind.RECEIPT,
    NonReceiptFields: NotificationKind.NON_RECEIPT,
    OtherNotificationFields: NotificationKind.OTHER,
}
