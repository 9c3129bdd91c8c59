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

    OwnExtension                       INTERNAL_TRACE, PRIORITY_LEVEL_QUALIFIER
    Ours(name, domain, originated)     whose entries and which APDU are this MTA's
    without_own(apdu, omit, ours) -> bytes      raises DecodeError, EncodeError
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from dataclasses import dataclass

from p1.mts.envelope import (
    MessageEnvelope,
    Probe,
    decode_mts_apdu,
    encode_mts_apdu,
    peek_envelope,
    replace_message_envelope,
)
from p1.mts.extensions import (
    ExtensionField,
    StandardExtension,
    internal_trace,
    internal_trace_extension,
)
from p1.mts.fields import GlobalDomainIdentifier
from p1.mts.precedence import PRIORITY_LEVEL_QUALIFIER_OID
from p1.mts.report import Report

__all__ = ["Ours", "OwnExtension", "without_own"]


class OwnExtension(enum.Enum):
    """An optional envelope extension this MTA adds, by its name in the configuration."""

    INTERNAL_TRACE = "internal-trace"
    """internal-trace-information (X.411 standard-extension 38): this MTA's entries."""
    PRIORITY_LEVEL_QUALIFIER = "priority-level-qualifier"
    """STANAG 4406 priority-level-qualifier, on messages originated here."""


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


_INTERNAL_TRACE = StandardExtension.INTERNAL_TRACE_INFORMATION


def without_own(apdu: bytes, omit: frozenset[OwnExtension], ours: Ours) -> bytes:
    """``apdu`` without the extensions in ``omit`` that this MTA (``ours``) added; the
    same object when it has none.  A message's content is kept byte for byte."""
    if not omit:
        return apdu
    envelope = peek_envelope(apdu)
    if isinstance(envelope, Report):
        report = decode_mts_apdu(apdu)
        assert isinstance(report, Report)
        kept = _kept(report.envelope.extensions, omit, ours)
        if kept is None:
            return apdu
        order = _order(report.envelope.wire_order, kept)
        new = dataclasses.replace(report.envelope, extensions=kept, wire_order=order)
        return encode_mts_apdu(dataclasses.replace(report, envelope=new))
    kept = _kept(envelope.extensions, omit, ours)
    if kept is None:
        return apdu
    order = _order(envelope.wire_order, kept)
    if isinstance(envelope, MessageEnvelope):
        changed = dataclasses.replace(envelope, extensions=kept, wire_order=order)
        return replace_message_envelope(apdu, changed)
    assert isinstance(envelope, Probe)
    return encode_mts_apdu(dataclasses.replace(envelope, extensions=kept, wire_order=order))


def _order(order: tuple[str, ...], kept: Sequence[ExtensionField]) -> tuple[str, ...]:
    """The SET's member order, ``extensions`` left out when none is left (rather than
    sent as an explicit empty ``DEFAULT {}``)."""
    return order if kept else tuple(name for name in order if name != "extensions")


def _kept(
    extensions: Sequence[ExtensionField], omit: frozenset[OwnExtension], ours: Ours
) -> tuple[ExtensionField, ...] | None:
    """``extensions`` without ours of the kinds in ``omit``; None when nothing changes."""
    kept: list[ExtensionField] = []
    changed = False
    for extension in extensions:
        left = _without_ours(extension, omit, ours)
        changed = changed or left is not extension
        if left is not None:
            kept.append(left)
    return tuple(kept) if changed else None


def _without_ours(
    extension: ExtensionField, omit: frozenset[OwnExtension], ours: Ours
) -> ExtensionField | None:
    """``extension`` itself, what is left of it without our part, or None."""
    kind = extension.type
    if isinstance(kind, str):
        qualifier = OwnExtension.PRIORITY_LEVEL_QUALIFIER in omit and ours.originated
        return None if qualifier and kind == PRIORITY_LEVEL_QUALIFIER_OID else extension
    if kind != _INTERNAL_TRACE or OwnExtension.INTERNAL_TRACE not in omit:
        return extension
    entries = internal_trace((extension,))
    others = tuple(
        e for e in entries if e.mta_name != ours.name or e.global_domain_identifier != ours.domain
    )
    if len(others) == len(entries):
        return extension
    if not others:
        return None
    # Another MTA's entries go on; in the standard's form of the type.
    return internal_trace_extension(others, extension.criticality)
