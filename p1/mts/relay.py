"""This MTA's own marks on an APDU it sends on: its trace added, and its optional
extensions taken out for a peer that cannot read them.

A relaying (or delivering) MTA appends its trace-information element when its domain
is not the last in the trace, and its internal-trace-information element always (X.411
clause 12.2.1.1.1.10; the internal trace is standard-extension 38).
:func:`with_trace_added` does that on the bytes: the envelope's other members, the other
trace elements and extensions, and the content are copied as received; only the members
that grow, the envelope and the message get new lengths.  For an envelope our codec
reads losslessly, the result is the one re-encoding the decoded envelope with the new
entries gives (:func:`p1.mts.envelope.replace_message_envelope`; the tests compare the two),
at a fraction of the cost: a received transfer's envelope is not encoded again.

This MTA adds two optional, non-critical envelope extensions of its own:

- internal-trace-information (X.411 standard-extension 38, clause 12.2.1.1.1.10) to every
  message, probe and report it originates or relays: one entry naming this MTA;
- the STANAG 4406 priority-level-qualifier (Annex A, private 1.3.26.0.4406.0.8.0) to every
  message it originates.

Both are optional (X.411 9.1: an MTA that does not know a non-critical extension ignores
it), but an MTA that cannot parse one aborts the whole transfer.  :func:`without_own` takes
out of an APDU what this MTA added: its own internal-trace entries (the extension goes when
no other MTA's entry is left) and, on a message originated here, the qualifier.  What other
MTAs put in is relayed as received (X.411 12.2.1.1.1: extensions are carried on).

Public API::

    with_trace_added(apdu, trace, internal) -> bytes     raises DecodeError
    Ours(name, domain, originated)     whose entries and which APDU are this MTA's
    without_own(apdu, ours, internal_trace=, qualifier=) -> bytes
                                       raises DecodeError, EncodeError
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from p1 import ber
from p1.ber import Tlv
from p1.errors import DecodeError
from p1.mts.envelope import (
    _EXTENSIONS_TAG,
    _MESSAGE_MEMBERS,
    _MESSAGE_TAG,
    MessageEnvelope,
    Probe,
    _apdu_tlv,
    _message_parts,
    _wrap_message,
    decode_mts_apdu,
    encode_mts_apdu,
    peek_envelope,
    replace_message_envelope,
)
from p1.mts.extensions import (
    ExtensionField,
    StandardExtension,
    decode_extension,
    encode_extension,
    internal_trace_extension,
    with_internal_trace_entry,
)
from p1.mts.fields import GlobalDomainIdentifier
from p1.mts.precedence import PRIORITY_LEVEL_QUALIFIER_OID
from p1.mts.report import Report
from p1.mts.trace import (
    TRACE_TAG,
    InternalTraceEntry,
    TraceEntry,
    decode_internal_trace_entry,
    encode_trace_entry,
)

__all__ = ["Ours", "with_trace_added", "without_own"]

_WHAT = "MessageTransferEnvelope"
_DEFINITION_ORDER = tuple(dict.fromkeys(_MESSAGE_MEMBERS.values()))
_INTERNAL_TRACE = StandardExtension.INTERNAL_TRACE_INFORMATION


def with_trace_added(
    apdu: bytes | bytearray | memoryview, trace: TraceEntry | None, internal: InternalTraceEntry
) -> bytes:
    """The message ``apdu`` with ``trace`` (None: none) appended to its
    trace-information and ``internal`` to its internal-trace-information; raises
    DecodeError if ``apdu`` is not a message."""
    tlv = _apdu_tlv(apdu)
    if tlv.tag != _MESSAGE_TAG:
        raise DecodeError("the MTS-APDU is not a message", where="MTS-APDU")
    envelope, content = _message_parts(tlv, "Message")
    members = ber.split_set(ber.expect(envelope, ber.SET, _WHAT), _MESSAGE_MEMBERS, _WHAT)
    grown = {"extensions": _extensions(members.get("extensions"), internal)}
    if trace is not None:
        grown["trace_information"] = _trace(members.get("trace_information"), trace)
    parts = [grown[name] if name in grown else members[name].raw() for name in members.order]
    # A member the envelope lacked goes after the others, in the standard's order, as
    # encoding the SET puts it (p1.ber.encode_set).
    parts += [grown[name] for name in _DEFINITION_ORDER if name in grown and name not in members]
    return _wrap_message(ber.constructed(ber.SET, parts), b"", content.raw_view())


def _trace(received: Tlv | None, entry: TraceEntry) -> bytes:
    """trace-information with ``entry`` appended."""
    elements = [] if received is None else ber.children(received, f"{_WHAT}.trace-information")
    return ber.constructed(TRACE_TAG, [*(e.raw() for e in elements), encode_trace_entry(entry)])


def _extensions(received: Tlv | None, entry: InternalTraceEntry) -> bytes:
    """extensions with ``entry`` appended to internal-trace-information, which keeps its
    place, or is added at the end (as :func:`with_internal_trace_entry` does)."""
    what = f"{_WHAT}.extensions"
    fields = [] if received is None else ber.children(received, what)
    parts: list[bytes] = []
    added = False
    for field in fields:
        decoded = decode_extension(field, what)
        internal = isinstance(decoded.type, int) and decoded.type == _INTERNAL_TRACE
        if added or not internal:
            parts.append(field.raw())
            continue
        (grown,) = with_internal_trace_entry((decoded,), entry)
        parts.append(encode_extension(grown))
        added = True
    if not added:
        parts.append(encode_extension(internal_trace_extension([entry])))
    return ber.constructed(_EXTENSIONS_TAG, parts)


# --- this MTA's own optional extensions, left out ------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Ours:
    """What marks an extension as this MTA's."""

    name: str
    """This MTA's MTAName, as its internal-trace entries carry it."""
    domain: GlobalDomainIdentifier
    """This MTA's global domain identifier, as its internal-trace entries carry it."""
    originated: bool
    """Whether the APDU was originated here (submitted by a local user, or a report made
    here), not received from a peer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Omit:
    internal_trace: bool
    qualifier: bool


_INTERNAL_TRACE = StandardExtension.INTERNAL_TRACE_INFORMATION


def without_own(apdu: bytes, ours: Ours, *, internal_trace: bool, qualifier: bool) -> bytes:
    """``apdu`` without what this MTA (``ours``) added: its internal-trace entries
    (``internal_trace``), the priority-level-qualifier (``qualifier``); the
    same object when it has none.  A message's content is kept byte for byte; the
    envelope's members keep their order, and an ``extensions`` member left empty is sent
    empty (BER may send a DEFAULT value; PP 6.0 takes a message so)."""
    omit = _Omit(internal_trace=internal_trace, qualifier=qualifier and ours.originated)
    if not (omit.internal_trace or omit.qualifier):
        return apdu
    envelope = peek_envelope(apdu)
    if isinstance(envelope, Report):
        report = decode_mts_apdu(apdu)
        assert isinstance(report, Report)
        kept = _kept(report.envelope.extensions, omit, ours)
        if kept is None:
            return apdu
        new = dataclasses.replace(report.envelope, extensions=kept)
        return encode_mts_apdu(dataclasses.replace(report, envelope=new))
    kept = _kept(envelope.extensions, omit, ours)
    if kept is None:
        return apdu
    if isinstance(envelope, MessageEnvelope):
        changed = dataclasses.replace(envelope, extensions=kept)
        return replace_message_envelope(apdu, changed)
    assert isinstance(envelope, Probe)
    return encode_mts_apdu(dataclasses.replace(envelope, extensions=kept))


def _kept(
    extensions: Sequence[ExtensionField], omit: _Omit, ours: Ours
) -> tuple[ExtensionField, ...] | None:
    """``extensions`` without ours of the kinds ``omit`` names; None when nothing changes."""
    kept: list[ExtensionField] = []
    changed = False
    for extension in extensions:
        left = _without_ours(extension, omit, ours)
        changed = changed or left is not extension
        if left is not None:
            kept.append(left)
    return tuple(kept) if changed else None


def _without_ours(extension: ExtensionField, omit: _Omit, ours: Ours) -> ExtensionField | None:
    """``extension`` itself, what is left of it without our part, or None."""
    kind = extension.type
    if isinstance(kind, str):
        return None if omit.qualifier and kind == PRIORITY_LEVEL_QUALIFIER_OID else extension
    if kind != _INTERNAL_TRACE or not omit.internal_trace:
        return extension
    if extension.value is None:
        return extension
    what = "internal-trace-information"
    value = ber.expect(ber.read_single(extension.value, what), ber.SEQUENCE, what)
    entries = ber.children(value, what)
    others = [e for e in entries if not _is_ours(decode_internal_trace_entry(e, what), ours)]
    if len(others) == len(entries):
        return extension
    if not others:
        return None
    # Another MTA's entries go on as received, under the type as received.
    return dataclasses.replace(
        extension, value=ber.constructed(ber.SEQUENCE, [e.raw() for e in others])
    )


def _is_ours(entry: InternalTraceEntry, ours: Ours) -> bool:
    return entry.mta_name == ours.name and entry.global_domain_identifier == ours.domain
