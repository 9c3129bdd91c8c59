"""The optional envelope extensions this MTA adds itself, left out for a peer that cannot
read them.

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

    Ours(name, domain, originated)     whose entries and which APDU are this MTA's
    without_own(apdu, ours, internal_trace=, qualifier=) -> bytes
                                       raises DecodeError, EncodeError
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from p1 import ber
from p1.mts.envelope import (
    MessageEnvelope,
    Probe,
    decode_mts_apdu,
    encode_mts_apdu,
    peek_envelope,
    replace_message_envelope,
)
from p1.mts.extensions import ExtensionField, StandardExtension
from p1.mts.fields import GlobalDomainIdentifier
from p1.mts.precedence import PRIORITY_LEVEL_QUALIFIER_OID
from p1.mts.report import Report
from p1.mts.trace import InternalTraceEntry, decode_internal_trace_entry

__all__ = ["Ours", "without_own"]


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
