"""A received message with this MTA's trace added, its other octets as received.

A relaying (or delivering) MTA appends its trace-information element when its domain
is not the last in the trace, and its internal-trace-information element always (X.411
clause 12.2.1.1.1.10; the internal trace is standard-extension 38).
:func:`with_trace_added` does that on the bytes: the envelope's other members, the other
trace elements and extensions, and the content are copied as received; only the members
that grow, the envelope and the message get new lengths.  For an envelope our codec
reads losslessly, the result is the one re-encoding the decoded envelope with the new
entries gives (:func:`p1.mts.envelope.replace_message_envelope`; the tests compare the two),
at a fraction of the cost: a received transfer's envelope is not encoded again.

Public API::

    with_trace_added(apdu, trace, internal) -> bytes     raises DecodeError
"""

from __future__ import annotations

from p1 import ber
from p1.ber import Tlv
from p1.errors import DecodeError
from p1.mts.envelope import (
    _EXTENSIONS_TAG,
    _MESSAGE_MEMBERS,
    _MESSAGE_TAG,
    _apdu_tlv,
    _message_parts,
    _wrap_message,
)
from p1.mts.extensions import (
    StandardExtension,
    decode_extension,
    encode_extension,
    internal_trace_extension,
    with_internal_trace_entry,
)
from p1.mts.trace import TRACE_TAG, InternalTraceEntry, TraceEntry, encode_trace_entry

__all__ = ["with_trace_added"]

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
