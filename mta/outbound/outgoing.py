"""What a claimed queue entry becomes on the wire to one peer, in the peer's protocol.

A peer configured ``protocol = "1984"`` is a 1984 MTA: what this MTA transfers to it is
first down-graded as X.419 Annex B says (:func:`p1.mts.downgrade.downgrade_to_1984`).
A peer with ``omit_extensions`` gets what this MTA transfers without the optional
extensions it adds itself (:func:`p1.mts.relay.without_own`): its own
internal-trace entries, the priority-level-qualifier of a message originated here.
Recipients that cannot be down-graded are non-delivered, reason unable-to-transfer and
diagnostic unable-to-downgrade (X.411 8.3.1.2.1.9-10); a report that cannot be is
dropped (a report is never reported on).  With a ``[security]`` policy, a message or
probe whose security label the clearance of the link to the peer does not allow is not
transferred: its claimed recipients are non-delivered, reason unable-to-transfer and
diagnostic secure-messaging-error (X.411 8.5.9), whatever was decided when it was taken
in (a reload may have lowered the link's clearance since).  In the other protocols the APDU goes as
:func:`transfer_apdu` makes it: the next hop becomes responsible for the claimed
recipients only (X.411 12.2.1.1.1.3), the content as received.

Public API::

    outgoing(entry, protocol, own=None, link=None) -> Outgoing
    LinkClearance(security, clearance)   the label check of the link to one peer
    OwnPolicy(omit, name, domain)   which of this MTA's extensions a peer does not get
    Outgoing(entry, apdu, refused, report, why, removed)
    transfer_apdu(entry) -> bytes | mmap   the APDU with responsibility for the claimed recipients

An entry claimed to be sent may hold a large APDU as its spool file's mapping
(:meth:`store.spool.Spool.mapped`): it goes to the link as it is when it is sent as
queued, and is read from the mapping, not copied, where only its envelope is looked at.
"""

from __future__ import annotations

import contextlib
import dataclasses
import mmap
from dataclasses import dataclass

from config.schema import P1Protocol, Security
from config.values import OwnExtension
from mta.intake.journal import NAMED, few
from mta.intake.routing import check_label
from p1.errors import DecodeError, EncodeError
from p1.mts.downgrade import Downgraded, NotDowngradable, downgrade_to_1984
from p1.mts.envelope import (
    MessageEnvelope,
    Probe,
    RecipientField,
    Report,
    encode_mts_apdu,
    peek_envelope,
    replace_message_envelope,
)
from p1.mts.fields import GlobalDomainIdentifier
from p1.mts.relay import Ours, without_own
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason, NonDeliveryReport
from p1.security.spif import Clearance
from store import ApduKind, QueueEntry
from store.spool import as_bytes

__all__ = ["LinkClearance", "Outgoing", "OwnPolicy", "outgoing", "transfer_apdu"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnPolicy:
    """Which of this MTA's own optional extensions one peer does not get."""

    omit: frozenset[OwnExtension]
    name: str
    """This MTA's MTAName."""
    domain: GlobalDomainIdentifier
    """This MTA's global domain identifier."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One claimed entry, split into what is transferred and what is non-delivered."""

    entry: QueueEntry | None
    """The recipients transferred (None: nothing is)."""
    apdu: bytes | mmap.mmap
    """What is transferred for them (empty when nothing is)."""
    refused: QueueEntry | None = None
    """The recipients to non-deliver with ``report`` (None: none)."""
    report: NonDeliveryReport | None = None
    why: str = ""
    """Why they are refused, or why a report is dropped: one line for the log."""
    removed: tuple[str, ...] = ()
    """What down-grading removed (for one log line)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkClearance:
    """What the link to one peer is accredited for, under the configured policy."""

    security: Security
    clearance: Clearance | None
    """None: the link is accredited for no label."""

    def refusal(self, entry: QueueEntry, apdu: bytes | mmap.mmap) -> str | None:
        """Why ``apdu`` (a message or probe) may not cross the link, or None."""
        if entry.kind is ApduKind.REPORT:
            return None
        try:
            envelope = peek_envelope(_view(apdu))
        except DecodeError as error:  # it decoded when queued: never sent unjudged
            return f"the envelope does not decode, so its label cannot be judged: {error}"
        if isinstance(envelope, Report):
            return None
        verdict = check_label(self.security, envelope.extensions, self.clearance)
        if verdict is None or verdict.allowed:
            return None
        return f"security label {verdict.marking} refused for the link: {verdict.reason}"


def outgoing(
    entry: QueueEntry,
    protocol: P1Protocol,
    own: OwnPolicy | None = None,
    link: LinkClearance | None = None,
) -> Outgoing:
    """What ``entry`` (claimed for a peer speaking ``protocol`` that does not get the
    extensions ``own`` omits, over a link cleared as ``link`` says) becomes on the wire."""
    apdu = transfer_apdu(entry)
    refusal = None if link is None else link.refusal(entry, apdu)
    if refusal is not None:
        return Outgoing(None, b"", entry, _SECURE_MESSAGING_ERROR, refusal)
    if protocol is not P1Protocol.X410_1984:
        return _without_own(entry, apdu, own)
    try:
        result = downgrade_to_1984(as_bytes(apdu))
    except (DecodeError, EncodeError) as error:  # it decoded when queued: a fault of ours
        return _refused(entry, f"cannot be down-graded: {error}")
    if isinstance(result, NotDowngradable):
        report = NonDeliveryReport(reason_code=result.reason, diagnostic_code=result.diagnostic)
        return Outgoing(None, b"", entry, report, result.why)
    if not isinstance(result, Downgraded):  # a report that cannot be down-graded
        return Outgoing(None, b"", entry, None, result.why)
    if not result.refused:
        return Outgoing(entry, result.apdu, removed=result.removed)
    refused = set(result.refused)
    left_out = tuple(r for r in entry.recipients if r.recipient_number in refused)
    kept = tuple(r for r in entry.recipients if r.recipient_number not in refused)
    return Outgoing(
        dataclasses.replace(entry, recipients=kept) if kept else None,
        result.apdu if kept else b"",
        dataclasses.replace(entry, recipients=left_out),
        _UNABLE_TO_DOWNGRADE,
        f"recipient(s) {few([str(n) for n in sorted(refused)[:NAMED]], len(refused))} "
        "cannot be down-graded",
        result.removed,
    )


_SECURE_MESSAGING_ERROR = NonDeliveryReport(
    reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
    diagnostic_code=NonDeliveryDiagnostic.SECURE_MESSAGING_ERROR,
)
_UNABLE_TO_DOWNGRADE = NonDeliveryReport(
    reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
    diagnostic_code=NonDeliveryDiagnostic.UNABLE_TO_DOWNGRADE,
)


def _without_own(entry: QueueEntry, apdu: bytes | mmap.mmap, own: OwnPolicy | None) -> Outgoing:
    if own is None or not own.omit:
        return Outgoing(entry, apdu)
    ours = Ours(name=own.name, domain=own.domain, originated=entry.origin_peer is None)
    # (It decoded when queued; should it not now, it goes as it is.)
    with contextlib.suppress(DecodeError, EncodeError):
        apdu = without_own(
            as_bytes(apdu),
            ours,
            internal_trace=OwnExtension.INTERNAL_TRACE in own.omit,
            qualifier=OwnExtension.PRIORITY_LEVEL_QUALIFIER in own.omit,
        )
    return Outgoing(entry, apdu)


def _refused(entry: QueueEntry, why: str) -> Outgoing:
    return Outgoing(None, b"", entry, _UNABLE_TO_DOWNGRADE, why)


def transfer_apdu(entry: QueueEntry) -> bytes | mmap.mmap:
    """The APDU to transfer for a claimed ``entry``: this hop's peer becomes responsible
    for the claimed recipients only (X.411 12.2.1.1.1.3 responsibility bit).

    The envelope is rewritten only when a bit must change; the content stays as received.
    It is not even decoded when the entry claims every recipient of an envelope whose bits
    are all set (:attr:`store.QueueEntry.envelope_recipients`), as for a message taken in
    for one peer only.
    """
    if entry.kind is ApduKind.REPORT or _whole(entry):
        return entry.apdu
    envelope = peek_envelope(_view(entry.apdu))
    assert isinstance(envelope, MessageEnvelope | Probe)
    claimed = {r.recipient_number for r in entry.recipients}
    recipients = tuple(
        _responsible(r, r.originally_specified_recipient_number in claimed)
        for r in envelope.recipients
    )
    if recipients == envelope.recipients:
        return entry.apdu
    if isinstance(envelope, MessageEnvelope):
        return replace_message_envelope(
            _view(entry.apdu), dataclasses.replace(envelope, recipients=recipients)
        )
    return encode_mts_apdu(dataclasses.replace(envelope, recipients=recipients))


def _view(apdu: bytes | mmap.mmap) -> bytes | memoryview:
    """``apdu`` to be read without copying it."""
    return apdu if type(apdu) is bytes else memoryview(apdu)


def _whole(entry: QueueEntry) -> bool:
    """Whether ``entry`` claims every recipient its envelope names, each bit already set."""
    numbers = {r.recipient_number for r in entry.recipients if r.recipient_number is not None}
    return entry.envelope_recipients is not None and len(numbers) == entry.envelope_recipients


def _responsible(recipient: RecipientField, responsible: bool) -> RecipientField:
    indicators = recipient.per_recipient_indicators
    if indicators.responsibility == responsible:
        return recipient
    return dataclasses.replace(
        recipient,
        per_recipient_indicators=dataclasses.replace(indicators, responsibility=responsible),
    )
