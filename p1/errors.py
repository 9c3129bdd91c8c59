"""Errors raised by the p1 codec.

Every malformed input to a ``decode_*`` function of this package raises
:class:`DecodeError` and nothing else; every value a caller cannot encode raises
:class:`EncodeError`.  Both carry *where* (a path such as
``MessageTransferEnvelope.per-recipient-fields[0]`` or a byte offset) and *why*.
"""

from __future__ import annotations


class CodecError(ValueError):
    """Base of the codec's errors: ``where`` the problem is and ``why`` it is one."""

    def __init__(self, why: str, where: str = "") -> None:
        self.why = why
        self.where = where
        super().__init__(f"{where}: {why}" if where else why)


class DecodeError(CodecError):
    """Input bytes or text that are not a valid encoding of the expected type."""


class EncodeError(CodecError):
    """A value that cannot be encoded (missing field, out of range, bad text)."""
