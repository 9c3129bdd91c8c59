"""Whether a 1988 IPM can travel as a 1984 one: content type 22 read as content type 2.

X.420 (1984) defines P2, content type 2 (interpersonal-messaging-1984); X.420 (1988)
defines content type 22 (interpersonal-messaging-1988) as its superset: the same
``InformationObject`` tags, heading SET and body SEQUENCE, with members 1984 lacks.  A
1988 MTA transferring to a 1984 MTA (X.419 Annex B) cannot send content type 22, which a
1984 MTA does not know; an IPM that uses nothing 1984 lacks has the very octets a 1984
UA would have written, and goes as content type 2, its content untouched.  One that uses
something 1984 lacks cannot go (unable-to-downgrade).

What 1984 lacks, by comparing ``IPMSInformationObjects`` (X.420 1988 and later) with
``IPMSInformationObjects`` of X.420 (1984)::

    heading.extensions [15]                       1984 Heading ends at autoforwarded [14]
    <list>[i].recipient-extensions [3]            1984 Recipient: [0], reportRequest [1],
                                                  replyRequest [2] only
    <list>[i].notification-requests bits 3, 4     1984 reportRequest: receipt(0),
      (an-supported, suppress-an)                 nonReceipt(1), ipmReturn(2)
    an O/R name with extension attributes         1984 ORName: standard and domain-
      (common-name among them) or a directory     defined attributes only (X.411 1984)
      name, anywhere in the heading
    body[i] bilaterally-defined [14]              not a 1984 BodyPart
    body[i] extended [15]                         not a 1984 BodyPart (every externally
      (general text, file transfer, ...)          defined body part)
    body[i] message [9]                           1984 ForwardedIPMessage has no
                                                  parameters SET: another syntax
    an IPN                                        1984 StatusReport has another syntax

Importance and sensitivity (1984 INTEGER, 1988 ENUMERATED) are written alike under
their implicit tags; the subject, times, O/R descriptors and the basic body parts
(IA5 text, G3 facsimile, G4 class 1, teletex, videotex, encrypted, mixed-mode,
nationally defined) have one syntax in both.

Public API::

    fields_1984_lacks(content) -> tuple[str, ...]   () when the IPM can go as type 2

Raises :class:`p1.errors.DecodeError` when ``content`` is not an IPM or IPN that
decodes; sans-I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from p1 import ber
from p1.ber import Tlv
from p1.errors import DecodeError
from p1.ipms.ipm import decode_ipm
from p1.ipms.models import (
    P2_CONTENT_TYPE,
    Heading,
    IPMIdentifier,
    NotificationRequests,
    ORDescriptor,
)
from p1.mts.orname import ORName

__all__ = ["fields_1984_lacks"]

_IPM: Final = ber.context(0)
_IPN: Final = ber.context(1)
_HEADING_EXTENSIONS: Final = ber.context(15)
_RECIPIENT_LISTS: Final = {
    ber.context(2): "primary-recipients",
    ber.context(3): "copy-recipients",
    ber.context(4): "blind-copy-recipients",
}
_RECIPIENT_EXTENSIONS: Final = ber.context(3)
_BODY_PARTS_1988: Final = {
    ber.context(9): "message (forwarded IPM)",
    ber.context(14): "bilaterally-defined",
    ber.context(15): "extended",
}
_REQUESTS_1984: Final = (
    NotificationRequests.RN | NotificationRequests.NRN | (NotificationRequests.IPM_RETURN)
)


def fields_1984_lacks(content: bytes | memoryview) -> tuple[str, ...]:
    """The fields of ``content`` (content type 22) that X.420 (1984) lacks, each named
    where it is (``heading.extensions``, ``body[1]: extended``); () when none."""
    outer = ber.read_single(content, "content")
    if outer.tag == _IPN:
        return ("ipn (an IP notification)",)
    if outer.tag != _IPM:
        raise DecodeError("not an IPM or IPN", where="content")
    parts = ber.children(outer, "IPM")
    if len(parts) != 2:
        raise DecodeError("an IPM is a heading SET and a body SEQUENCE", where="IPM")
    heading, body = parts
    return (
        *_heading_members(heading),
        *_names(decode_ipm(content, P2_CONTENT_TYPE).heading),
        *_body_parts(body),
    )


def _heading_members(heading: Tlv) -> Iterator[str]:
    for member in ber.children(heading, "IPM.heading"):
        if member.tag == _HEADING_EXTENSIONS:
            yield "heading.extensions"
        elif member.tag in _RECIPIENT_LISTS:
            yield from _recipients(member, f"heading.{_RECIPIENT_LISTS[member.tag]}")


def _recipients(recipients: Tlv, where: str) -> Iterator[str]:
    for index, recipient in enumerate(ber.children(recipients, where)):
        members = ber.children(recipient, f"{where}[{index}]")
        if any(member.tag == _RECIPIENT_EXTENSIONS for member in members):
            yield f"{where}[{index}].recipient-extensions"


def _body_parts(body: Tlv) -> Iterator[str]:
    for index, part in enumerate(ber.children(body, "IPM.body")):
        name = _BODY_PARTS_1988.get(part.tag)
        if name is not None:
            yield f"body[{index}]: {name}"


def _names(heading: Heading) -> Iterator[str]:
    """O/R names 1984 cannot carry, and notification requests it does not have."""
    for where, name in _heading_names(heading):
        lacking = _name_1984_lacks(name)
        if lacking:
            yield f"heading.{where}: {lacking}"
    lists = (
        ("primary-recipients", heading.primary_recipients),
        ("copy-recipients", heading.copy_recipients),
        ("blind-copy-recipients", heading.blind_copy_recipients),
    )
    for where, recipients in lists:
        for index, recipient in enumerate(recipients):
            if recipient.notification_requests & ~_REQUESTS_1984:
                yield f"heading.{where}[{index}].notification-requests: an-supported/suppress-an"


def _heading_names(heading: Heading) -> Iterator[tuple[str, ORName]]:
    yield from _identifier("this-IPM", heading.this_ipm)
    if heading.originator is not None:
        yield from _descriptor("originator", heading.originator)
    for index, user in enumerate(heading.authorizing_users):
        yield from _descriptor(f"authorizing-users[{index}]", user)
    lists = (
        ("primary-recipients", heading.primary_recipients),
        ("copy-recipients", heading.copy_recipients),
        ("blind-copy-recipients", heading.blind_copy_recipients),
    )
    for where, recipients in lists:
        for index, recipient in enumerate(recipients):
            if recipient.name is not None:
                yield f"{where}[{index}].formal-name", recipient.name
    if heading.replied_to_ipm is not None:
        yield from _identifier("replied-to-IPM", heading.replied_to_ipm)
    for index, identifier in enumerate(heading.obsoleted_ipms):
        yield from _identifier(f"obsoleted-IPMs[{index}]", identifier)
    for index, identifier in enumerate(heading.related_ipms):
        yield from _identifier(f"related-IPMs[{index}]", identifier)
    for index, descriptor in enumerate(heading.reply_recipients):
        yield from _descriptor(f"reply-recipients[{index}]", descriptor)


def _identifier(where: str, identifier: IPMIdentifier) -> Iterator[tuple[str, ORName]]:
    if identifier.user is not None:
        yield f"{where}.user", identifier.user


def _descriptor(where: str, descriptor: ORDescriptor) -> Iterator[tuple[str, ORName]]:
    if descriptor.formal_name is not None:
        yield f"{where}.formal-name", descriptor.formal_name


def _name_1984_lacks(name: ORName) -> str:
    """What of ``name`` an ORName of X.411 (1984) cannot hold, or ""."""
    if name.common_name is not None:
        return "extension attribute common-name"
    if name.extension_attributes:
        kinds = ", ".join(str(a.type) for a in name.extension_attributes)
        return f"extension attribute(s) {kinds}"
    if name.directory_name is not None:
        return "directory-name"
    return ""
