"""What can be read of a message or probe envelope that does not decode strictly, to
report on it (X.411 12.2.1.1.1, 12.2.1.2.1; the report's fields, 12.2.1.3).

A transfer whose envelope the strict decoder refuses (:func:`p1.mts.envelope
.peek_envelope`) is kept, not relayed, and its originator is told so by a non-delivery
report.  That report needs only a few members of the envelope: the MTS identifier, the
originator's name, the content type and, of each recipient, its name, its
originally-specified-recipient-number and its per-recipient-indicators (responsibility and
report requests).  Each is read here on its own, with the strict decoder's own member
tables and field decoders; a member that does not decode, one repeated, and every other
member (trace, extensions, ...) are left out.  A recipient whose name, number or
indicators cannot be read is left out.  The priority of a message is read if it can be
(the report is scheduled at its subject's precedence); normal otherwise.

A report is never reported on (X.411 14.3.2): nothing is salvaged from one.

Public API::

    salvage_subject(data) -> Salvage     never raises DecodeError
    Salvage(subject, why)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from p1 import ber
from p1.ber import Tlv
from p1.errors import DecodeError

# The strict decoder's member tables and readers: what is salvaged is read exactly as a
# well-formed envelope would be.
from p1.mts.envelope import (
    _MESSAGE_MEMBERS,
    _PROBE_MEMBERS,
    _RECIPIENT_MEMBERS,
    MessageEnvelope,
    Probe,
    RecipientField,
    _decode_priority,
)
from p1.mts.fields import (
    ContentType,
    PerRecipientIndicators,
    decode_bits,
    decode_content_type,
    decode_mts_identifier,
    decode_name,
    decode_recipient_number,
)
from p1.mts.orname import ORName
from p1.mts.precedence import Priority

__all__ = ["Salvage", "salvage_subject"]

_T = TypeVar("_T")

# MTS-APDU ::= CHOICE { message [0] Message, report [1] Report, probe [2] Probe }
_MESSAGE_TAG = ber.context(0)
_REPORT_TAG = ber.context(1)
_PROBE_TAG = ber.context(2)


@dataclass(frozen=True, slots=True, kw_only=True)
class Salvage:
    """What :func:`salvage_subject` could read."""

    subject: MessageEnvelope | Probe | None
    """The identifier, originator, content type and readable recipients (the message's
    priority too); None when one of them is missing."""
    why: str = ""
    """Why ``subject`` is None, e.g. ``originator not readable``; "" when it is not."""


def salvage_subject(data: bytes | bytearray | memoryview) -> Salvage:
    """What a non-delivery report on the MTS-APDU ``data`` needs, read member by member.

    ``subject`` is None unless the identifier, the originator's name, the content type
    and at least one recipient could be read (and ``data`` is a message or a probe).
    """
    try:
        apdu = ber.read_tlv(ber.as_view(data), 0, len(data))
        envelope = _first_child(apdu) if apdu.tag == _MESSAGE_TAG else apdu
    except DecodeError:
        return Salvage(subject=None, why="the MTS-APDU not readable")
    if apdu.tag == _MESSAGE_TAG:
        return _message(_members(envelope, _MESSAGE_MEMBERS))
    if apdu.tag == _PROBE_TAG:
        return _probe(_members(envelope, _PROBE_MEMBERS))
    if apdu.tag == _REPORT_TAG:
        return Salvage(subject=None, why="a report is not reported on")
    return Salvage(subject=None, why="not a message, probe or report")


def _first_child(tlv: Tlv) -> Tlv:
    """The envelope of ``Message ::= SEQUENCE { envelope, content }``."""
    children = _children(tlv)
    if not children:
        raise DecodeError("no envelope", where="Message")
    return children[0]


def _children(tlv: Tlv) -> list[Tlv]:
    """The values inside ``tlv`` up to the first that cannot be read."""
    found: list[Tlv] = []
    if not tlv.constructed:
        return found
    offset = tlv.body
    while offset < tlv.end:
        try:
            child = ber.read_tlv(tlv.data, offset, tlv.end, 1)
        except DecodeError:
            break
        found.append(child)
        offset = child.stop
    return found


def _members(tlv: Tlv, table: Mapping[int, str]) -> dict[str, Tlv]:
    """The members of a SET by name, as far as they can be read (:func:`_children`):
    the first of each name; tags not in ``table`` left out."""
    found: dict[str, Tlv] = {}
    for child in _children(tlv):
        name = table.get(child.tag)
        if name is not None:
            found.setdefault(name, child)
    return found


def _read(members: Mapping[str, Tlv], name: str, decode: Callable[[Tlv, str], _T]) -> _T | None:
    """Member ``name`` decoded, or None when it is absent or does not decode."""
    tlv = members.get(name)
    if tlv is None:
        return None
    try:
        return decode(tlv, name)
    except DecodeError:
        return None


def _message(members: Mapping[str, Tlv]) -> Salvage:
    identifier = _read(members, "mts_identifier", decode_mts_identifier)
    if identifier is None:
        return Salvage(subject=None, why="message-identifier not readable")
    common = _common(members)
    if isinstance(common, str):
        return Salvage(subject=None, why=common)
    originator, content_type, recipients = common
    priority = _read(members, "priority", _decode_priority)
    envelope = MessageEnvelope(
        mts_identifier=identifier,
        originator_name=originator,
        content_type=content_type,
        priority=Priority.NORMAL if priority is None else priority,
        recipients=recipients,
    )
    return Salvage(subject=envelope)


def _probe(members: Mapping[str, Tlv]) -> Salvage:
    identifier = _read(members, "probe_identifier", decode_mts_identifier)
    if identifier is None:
        return Salvage(subject=None, why="probe-identifier not readable")
    common = _common(members)
    if isinstance(common, str):
        return Salvage(subject=None, why=common)
    originator, content_type, recipients = common
    probe = Probe(
        probe_identifier=identifier,
        originator_name=originator,
        content_type=content_type,
        recipients=recipients,
    )
    return Salvage(subject=probe)


def _common(
    members: Mapping[str, Tlv],
) -> tuple[ORName, ContentType, tuple[RecipientField, ...]] | str:
    """The originator, content type and readable recipients, or what is missing."""
    originator = _read(members, "originator_name", decode_name)
    if originator is None:
        return "originator not readable"
    content_type = _read(members, "content_type", decode_content_type)
    if content_type is None:
        return "content-type not readable"
    recipients = _recipients(members.get("recipients"))
    if not recipients:
        return "no recipient readable"
    return originator, content_type, recipients


def _recipients(tlv: Tlv | None) -> tuple[RecipientField, ...]:
    """Each PerRecipientTransferFields whose name, number and indicators can be read."""
    if tlv is None:
        return ()
    found = (_recipient(_members(child, _RECIPIENT_MEMBERS)) for child in _children(tlv))
    return tuple(recipient for recipient in found if recipient is not None)


def _recipient(members: Mapping[str, Tlv]) -> RecipientField | None:
    name = _read(members, "recipient_name", decode_name)
    number = _read(members, "originally_specified_recipient_number", decode_recipient_number)
    indicators = _read(members, "per_recipient_indicators", _decode_indicators)
    if name is None or number is None or indicators is None:
        return None
    return RecipientField(
        recipient_name=name,
        originally_specified_recipient_number=number,
        per_recipient_indicators=indicators,
    )


def _decode_indicators(tlv: Tlv, what: str) -> PerRecipientIndicators:
    return decode_bits(PerRecipientIndicators, tlv, what)
