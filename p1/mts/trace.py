"""Trace information of the X.411 transfer envelopes (X.411 clause 12.2.1.1.1).

``trace-information`` records, per management domain, when a message, probe or report
arrived and what the domain did with it; ``internal-trace-information`` (an extension,
standard-extension 38) records the same per MTA inside a domain.  An MTA appends its
element before relaying and reads both to detect loops (X.411 clause 14.3).

Times are not routed on: the decoders read arrival-time and deferred-time leniently
(:func:`p1.ber.read_lenient_utctime`: no zone, PP's three-digit year), append what they
tolerated to the caller's ``deviations`` list, and the times keep their received text.

Public API::

    RoutingAction, TraceEntry, InternalTraceEntry
    decode_trace(tlv, what, deviations) / encode_trace(entries),
    decode_trace_entry / encode_trace_entry,
    decode_internal_trace_entry / encode_internal_trace_entry
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from p1 import ber
from p1.ber import Deviations, Tlv, application, context
from p1.errors import DecodeError, EncodeError
from p1.mts.fields import (
    EIT_TAG,
    GDI_TAG,
    EncodedInformationTypes,
    GlobalDomainIdentifier,
    OtherActions,
    decode_bits,
    decode_eits,
    decode_gdi,
    encode_bits,
    encode_eits,
    encode_gdi,
)

_new = object.__new__
"""Makes a model the decoder fills in without its ``__init__`` (see TraceEntry)."""

# --- trace -----------------------------------------------------------------------------


class RoutingAction(enum.IntEnum):
    """``RoutingAction ::= ENUMERATED { relayed(0), rerouted(1) }`` (X.411 clause 12.2.1.1.1)."""

    RELAYED = 0
    REROUTED = 1


# TraceInformationElement ::= SEQUENCE {
#   global-domain-identifier     GlobalDomainIdentifier,
#   domain-supplied-information  DomainSuppliedInformation }
# DomainSuppliedInformation ::= SET {
#   arrival-time      [0] ArrivalTime,
#   routing-action    [2] RoutingAction,
#   attempted-domain  GlobalDomainIdentifier OPTIONAL,
#   -- additional-actions -- COMPONENTS OF AdditionalActions }
# AdditionalActions ::= SET {
#   deferred-time                        [1] DeferredTime OPTIONAL,
#   converted-encoded-information-types  ConvertedEncodedInformationTypes OPTIONAL,
#   other-actions                        [3] OtherActions DEFAULT {} }
@dataclass(frozen=True, kw_only=True)
class TraceEntry:
    """One element of trace-information: what one domain did (X.411 clause 12.2.1.1.1).

    (Not slots: the decoder sets every field in the instance dictionary at once, rather
    than through the generated ``__init__``, which sets them one ``object.__setattr__``
    call at a time.)
    """

    global_domain_identifier: GlobalDomainIdentifier
    arrival_time: datetime
    routing_action: RoutingAction = RoutingAction.RELAYED
    attempted_domain: GlobalDomainIdentifier | None = None
    deferred_time: datetime | None = None
    converted_encoded_information_types: EncodedInformationTypes | None = None
    other_actions: OtherActions = field(default_factory=OtherActions)
    wire_order: tuple[str, ...] = field(default=(), compare=False, repr=False)
    """Member order of DomainSuppliedInformation as received."""


# InternalTraceInformationElement ::= SEQUENCE {
#   global-domain-identifier  GlobalDomainIdentifier,
#   mta-name                  MTAName,
#   mta-supplied-information  MTASuppliedInformation }
# MTASuppliedInformation ::= SET {
#   arrival-time    [0] ArrivalTime,
#   routing-action  [2] RoutingAction,
#   attempted       CHOICE { mta MTAName, domain GlobalDomainIdentifier } OPTIONAL,
#   -- additional-actions -- COMPONENTS OF InternalAdditionalActions }
@dataclass(frozen=True, slots=True, kw_only=True)
class InternalTraceEntry:
    """One element of internal-trace-information: what one MTA did (X.411 clause 12.2.1.1.1).

    At most one of ``attempted_mta`` and ``attempted_domain`` is set.
    """

    global_domain_identifier: GlobalDomainIdentifier
    mta_name: str
    arrival_time: datetime
    routing_action: RoutingAction = RoutingAction.RELAYED
    attempted_mta: str | None = None
    attempted_domain: GlobalDomainIdentifier | None = None
    deferred_time: datetime | None = None
    converted_encoded_information_types: EncodedInformationTypes | None = None
    other_actions: OtherActions = field(default_factory=OtherActions)
    wire_order: tuple[str, ...] = field(default=(), compare=False, repr=False)
    """Member order of MTASuppliedInformation as received."""


TRACE_TAG = application(9)
_ROUTING_ACTIONS = {int(action): action for action in RoutingAction}
_NO_OTHER_ACTIONS = OtherActions()  # the DEFAULT (models are immutable: one is enough)
_ARRIVAL_TAG = context(0)
_DEFERRED_TAG = context(1)
_ROUTING_TAG = context(2)
_OTHER_ACTIONS_TAG = context(3)
_SUPPLIED_MEMBERS = {
    _ARRIVAL_TAG: "arrival_time",
    _ROUTING_TAG: "routing_action",
    GDI_TAG: "attempted",
    ber.IA5_STRING: "attempted",
    _DEFERRED_TAG: "deferred_time",
    EIT_TAG: "converted_encoded_information_types",
    _OTHER_ACTIONS_TAG: "other_actions",
}


def _decode_supplied(tlv: Tlv, what: str, deviations: Deviations | None) -> dict[str, Any]:
    """The fields of DomainSuppliedInformation / MTASuppliedInformation."""
    if tlv.tag != ber.SET:
        ber.expect(tlv, ber.SET, what)
    members = ber.split_set(tlv, _SUPPLIED_MEMBERS, what)
    number = ber.read_int(members.need("routing_action", what), f"{what}.routing-action")
    action = _ROUTING_ACTIONS.get(number)
    if action is None:
        raise DecodeError(f"routing-action {number} is not relayed(0) or rerouted(1)", where=what)
    deferred = members.get("deferred_time")
    eits = members.get("converted_encoded_information_types")
    other = members.get("other_actions")
    return {
        "arrival_time": ber.read_lenient_utctime(
            members.need("arrival_time", what), f"{what}.arrival-time", deviations
        ),
        "routing_action": action,
        "attempted": members.get("attempted"),
        "deferred_time": None
        if deferred is None
        else ber.read_lenient_utctime(deferred, f"{what}.deferred-time", deviations),
        "converted_encoded_information_types": None if eits is None else decode_eits(eits, what),
        "other_actions": _NO_OTHER_ACTIONS
        if other is None
        else decode_bits(OtherActions, other, f"{what}.other-actions"),
        "wire_order": members.order,
    }


def _encode_supplied(
    entry: TraceEntry | InternalTraceEntry, attempted: bytes | None, what: str
) -> bytes:
    order = entry.wire_order
    eits = entry.converted_encoded_information_types
    return ber.encode_set(
        ber.SET,
        [
            ("arrival_time", ber.tlv(_ARRIVAL_TAG, ber.utctime_contents(entry.arrival_time, what))),
            (
                "routing_action",
                ber.tlv(
                    _ROUTING_TAG,
                    ber.int_contents(
                        ber.check_int(entry.routing_action, f"{what}.routing-action", 0, 1)
                    ),
                ),
            ),
            ("attempted", attempted),
            (
                "deferred_time",
                None
                if entry.deferred_time is None
                else ber.tlv(_DEFERRED_TAG, ber.utctime_contents(entry.deferred_time, what)),
            ),
            ("converted_encoded_information_types", None if eits is None else encode_eits(eits)),
            (
                "other_actions",
                encode_bits(entry.other_actions, _OTHER_ACTIONS_TAG, what)
                if ber.keep("other_actions", entry.other_actions.is_empty, order)
                else None,
            ),
        ],
        order,
    )


def decode_trace_entry(tlv: Tlv, what: str, deviations: Deviations | None = None) -> TraceEntry:
    """TraceInformationElement; tolerated times are appended to ``deviations``."""
    if tlv.tag != ber.SEQUENCE:
        ber.expect(tlv, ber.SEQUENCE, what)
    parts = ber.children(tlv, what)
    if len(parts) != 2:
        raise DecodeError(f"{len(parts)} components, expected 2", where=what)
    fields = _decode_supplied(parts[1], f"{what}.domain-supplied-information", deviations)
    attempted = fields.pop("attempted")
    if attempted is not None and attempted.tag != GDI_TAG:
        raise DecodeError("attempted-domain must be a GlobalDomainIdentifier", where=what)
    if parts[0].tag != GDI_TAG:
        ber.expect(parts[0], GDI_TAG, what)
    entry = _new(TraceEntry)  # every field read: not through __init__ (see there)
    entry.__dict__.update(
        global_domain_identifier=decode_gdi(parts[0], what),
        attempted_domain=None if attempted is None else decode_gdi(attempted, what),
        **fields,
    )
    return entry


def encode_trace_entry(entry: TraceEntry) -> bytes:
    """TraceInformationElement."""
    what = "TraceInformationElement"
    if not isinstance(entry, TraceEntry):
        raise EncodeError(f"{entry!r} is not a TraceEntry", where=what)
    attempted = None if entry.attempted_domain is None else encode_gdi(entry.attempted_domain)
    return ber.constructed(
        ber.SEQUENCE,
        [
            encode_gdi(entry.global_domain_identifier),
            _encode_supplied(entry, attempted, what),
        ],
    )


def decode_trace(
    tlv: Tlv, what: str = "trace-information", deviations: Deviations | None = None
) -> tuple[TraceEntry, ...]:
    """TraceInformation (``[APPLICATION 9] SEQUENCE OF``, under any tag); tolerated
    times are appended to ``deviations``."""
    return tuple(
        decode_trace_entry(child, f"{what}[{index}]", deviations)
        for index, child in enumerate(ber.children(tlv, what))
    )


def encode_trace(entries: Sequence[TraceEntry], tag: int = TRACE_TAG) -> bytes:
    """TraceInformation under ``tag``."""
    return ber.constructed(tag, (encode_trace_entry(e) for e in entries))


def decode_internal_trace_entry(
    tlv: Tlv, what: str, deviations: Deviations | None = None
) -> InternalTraceEntry:
    """InternalTraceInformationElement; tolerated times are appended to ``deviations``."""
    parts = ber.children(ber.expect(tlv, ber.SEQUENCE, what), what)
    if len(parts) != 3:
        raise DecodeError(f"{len(parts)} components, expected 3", where=what)
    fields = _decode_supplied(parts[2], f"{what}.mta-supplied-information", deviations)
    attempted = fields.pop("attempted")
    mta = (
        None
        if attempted is None or attempted.tag != ber.IA5_STRING
        else ber.read_text(attempted, f"{what}.attempted.mta")
    )
    domain = (
        None
        if attempted is None or attempted.tag != GDI_TAG
        else decode_gdi(attempted, f"{what}.attempted.domain")
    )
    return InternalTraceEntry(
        global_domain_identifier=decode_gdi(ber.expect(parts[0], GDI_TAG, what), what),
        mta_name=ber.read_text(ber.expect(parts[1], ber.IA5_STRING, what), f"{what}.mta-name"),
        attempted_mta=mta,
        attempted_domain=domain,
        **fields,
    )


def encode_internal_trace_entry(entry: InternalTraceEntry) -> bytes:
    """InternalTraceInformationElement."""
    what = "InternalTraceInformationElement"
    if not isinstance(entry, InternalTraceEntry):
        raise EncodeError(f"{entry!r} is not an InternalTraceEntry", where=what)
    if entry.attempted_mta is not None and entry.attempted_domain is not None:
        raise EncodeError("attempted is an MTA or a domain, not both", where=what)
    attempted = None
    if entry.attempted_mta is not None:
        attempted = ber.tlv(ber.IA5_STRING, ber.text_contents(entry.attempted_mta, what))
    elif entry.attempted_domain is not None:
        attempted = encode_gdi(entry.attempted_domain)
    return ber.constructed(
        ber.SEQUENCE,
        [
            encode_gdi(entry.global_domain_identifier),
            ber.tlv(ber.IA5_STRING, ber.text_contents(entry.mta_name, f"{what}.mta-name")),
            _encode_supplied(entry, attempted, what),
        ],
    )
