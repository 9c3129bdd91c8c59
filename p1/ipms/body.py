"""The IPM body codec (X.420 clauses 7.3, 7.4; STANAG 4406 Annex A), by hand over BER.

``Body ::= SEQUENCE OF BodyPart`` is read with :func:`p1.ber.read` (TLVs as tuples) over the
content's bytes (or a view of them), never through asn1tools, for two reasons.  Size: a body
part's octets are copied once on decode (into the ``bytes`` of the model) and once on
encode (into the result, which is joined from a list of chunks that refer to the
model's bytes).  Exactness: a body part becomes a typed model only when its bytes are
exactly what :func:`encode_body` writes for that model (one-octet tags, shortest
definite lengths, the parameters this module writes); any other body part is kept
whole, as :class:`RawBodyPart` or :class:`ExtendedBodyPart`, and written back byte for
byte.  So ``encode_body(decode_body(b))`` reproduces ``b`` whatever its form.

Forms.  Text, bilaterally defined and message body parts have a basic form (a
``BodyPart.basic`` alternative) and an extended one (``extended [15]`` with the X.420
``id-et-*`` identifiers); STANAG 4406 prescribes the extended form for P772, so a
part's ``extended`` / ``form`` field is None for the form its content kind prescribes
and names the form otherwise.  General text exists only in the extended form.

API::

    decode_body(view, tlv, kind) -> tuple[BodyPart, ...]   (tlv: the Body SEQUENCE)
    encode_body(body, kind) -> list[bytes]                  (the Body SEQUENCE's chunks)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from p1 import ber
from p1.ber import FlatTlv, View, header, tlv_bytes, wrap
from p1.errors import DecodeError, EncodeError
from p1.ipms.models import (
    BinaryBodyPart,
    BodyPart,
    ContentKind,
    ExtendedBodyPart,
    ForwardedForm,
    ForwardedMessageBodyPart,
    RawBodyPart,
    Repertoire,
    TextBodyPart,
    TextKind,
)

__all__ = ["decode_body", "encode_body"]

# X.420 IPMSObjectIdentifiers: extended body part types (id-et) and parameters (id-ep).
ID_ET_IA5_TEXT: Final = "2.6.1.4.0"
ID_EP_IA5_TEXT: Final = "2.6.1.11.0"
ID_ET_MESSAGE: Final = "2.6.1.4.7"
ID_EP_MESSAGE: Final = "2.6.1.11.7"
ID_ET_BILATERALLY_DEFINED: Final = "2.6.1.4.9"
ID_ET_GENERAL_TEXT: Final = "2.6.1.4.11"
ID_EP_GENERAL_TEXT: Final = "2.6.1.11.11"
# STANAG 4406 MMSObjectIdentifiers: id-nato-mmhs-et-mm-message and its parameters.
ID_MMHS_ET_MM_MESSAGE: Final = "1.3.26.0.4406.0.7.9"
ID_MMHS_ET_MM_MESSAGE_PARAMETERS: Final = "1.3.26.0.4406.0.7.10"

# Identifier octets (all tags here are one octet).
SEQUENCE_OCTET: Final = 0x30
SET_OCTET: Final = 0x31
_INSTANCE_OF_OCTET: Final = 0x28  # [UNIVERSAL 8] constructed: INSTANCE OF TYPE-IDENTIFIER
_CONTEXT_0_OCTET: Final = 0xA0
_IA5_OCTET: Final = 0xA0  # basic ia5-text [0] IA5TextBodyPart
_MESSAGE_OCTET: Final = 0xA9  # basic message [9] MessageBodyPart
_BILATERAL_OCTET: Final = 0x8E  # basic bilaterally-defined [14] OCTET STRING
_EXTENDED_OCTET: Final = 0xAF  # extended [15] ExtendedBodyPart
_IA5STRING_OCTET: Final = 0x16
_GENERALSTRING_OCTET: Final = 0x1B
_OCTETSTRING_OCTET: Final = 0x04
_INTEGER_OCTET: Final = 0x02
_OID_OCTET: Final = 0x06

# IA5TextParameters ::= SET {repertoire [0] Repertoire DEFAULT ia5}, as this module
# writes them (the default left out).
_IA5_PARAMETERS: Final[dict[bytes, Repertoire]] = {
    b"\x31\x00": Repertoire.IA5,
    b"\x31\x03\x80\x01\x02": Repertoire.ITA2,
}
_IA5_PARAMETER_BYTES: Final = {rep: enc for enc, rep in _IA5_PARAMETERS.items()}

_FORWARDED_TYPES: Final = {
    ForwardedForm.EXTENDED: (ID_EP_MESSAGE, ID_ET_MESSAGE),
    ForwardedForm.MM_MESSAGE: (ID_MMHS_ET_MM_MESSAGE_PARAMETERS, ID_MMHS_ET_MM_MESSAGE),
}
_FORWARDED_FORMS: Final = {
    data: (params, form) for form, (params, data) in _FORWARDED_TYPES.items()
}


# --- forms per content kind -----------------------------------------------------------


def _prescribes_extended(kind: ContentKind) -> bool:
    return kind is ContentKind.P772


def _default_form(kind: ContentKind) -> ForwardedForm:
    return ForwardedForm.EXTENDED if _prescribes_extended(kind) else ForwardedForm.BASIC


def _flag(extended: bool, kind: ContentKind) -> bool | None:
    """The ``extended`` field of a part found in that form: None when prescribed."""
    return None if extended == _prescribes_extended(kind) else extended


def _form(form: ForwardedForm, kind: ContentKind) -> ForwardedForm | None:
    return None if form is _default_form(kind) else form


# --- reading --------------------------------------------------------------------------


def _octet(view: View, tlv: FlatTlv) -> int | None:
    """The identifier octet when the header is the one this module writes (one-octet
    tag, shortest definite length), else None."""
    return tlv[0] if ber.exact(view, tlv) else None


def _one(view: View, start: int, end: int, octet: int, exact: bool) -> FlatTlv | None:
    """The one TLV filling ``view[start:end]`` if its identifier octet is ``octet``;
    with ``exact``, also its header must be the one this module writes."""
    if start >= end:
        return None
    tlv = ber.read(view, start, end, 1)
    if tlv[4] != end or tlv[0] != octet or (exact and not ber.exact(view, tlv)):
        return None
    return tlv


def _string(view: View, start: int, end: int, octet: int) -> bytes | None:
    tlv = _one(view, start, end, octet, exact=True)
    return None if tlv is None else bytes(view[tlv[2] : tlv[3]])


def _small_int(view: View, tlv: FlatTlv) -> int | None:
    """A positive INTEGER of up to four octets in its shortest form, else None."""
    body = view[tlv[2] : tlv[3]]
    if _octet(view, tlv) != _INTEGER_OCTET or not 0 < len(body) <= 4 or body[0] & 0x80:
        return None
    if len(body) > 1 and body[0] == 0 and not body[1] & 0x80:
        return None
    return int.from_bytes(body, "big")


def _raw(view: View, tlv: FlatTlv) -> bytes:
    return bytes(view[tlv[1] : tlv[4]])


def _basic_ia5(view: View, tlv: FlatTlv, kind: ContentKind) -> BodyPart | None:
    items = ber.items(view, tlv, "IA5TextBodyPart")
    if len(items) != 2:
        return None
    repertoire = _IA5_PARAMETERS.get(_raw(view, items[0]))
    data = _string(view, items[1][1], items[1][4], _IA5STRING_OCTET)
    if repertoire is None or data is None:
        return None
    return TextBodyPart(data=data, repertoire=repertoire, extended=_flag(False, kind))


def _basic_bilateral(view: View, tlv: FlatTlv, kind: ContentKind) -> BodyPart | None:
    return BinaryBodyPart(data=bytes(view[tlv[2] : tlv[3]]), extended=_flag(False, kind))


def _basic_message(view: View, tlv: FlatTlv, kind: ContentKind) -> BodyPart | None:
    items = ber.items(view, tlv, "MessageBodyPart")
    if [item[0] for item in items] != [SET_OCTET, SEQUENCE_OCTET]:
        return None
    return ForwardedMessageBodyPart(
        message=_raw(view, items[1]),
        parameters=_raw(view, items[0]),
        form=_form(ForwardedForm.BASIC, kind),
    )


@dataclass(frozen=True, slots=True)
class _Instance:
    """An INSTANCE OF TYPE-IDENTIFIER value: type-id, and the contents of its [0]."""

    type_id: str
    view: View
    start: int
    end: int

    def value(self) -> bytes:
        return bytes(self.view[self.start : self.end])


def _instance(view: View, tlv: FlatTlv) -> _Instance | None:
    """``SEQUENCE {type-id OBJECT IDENTIFIER, value [0] EXPLICIT ANY}`` with the
    headers this module writes, else None."""
    items = ber.items(view, tlv, "INSTANCE OF")
    if len(items) != 2 or _octet(view, items[0]) != _OID_OCTET:
        return None
    if _octet(view, items[1]) != _CONTEXT_0_OCTET:
        return None
    return _Instance(ber.oid(view, items[0], "type-id"), view, items[1][2], items[1][3])


def _extended_ia5(
    parameters: _Instance | None, data: _Instance, kind: ContentKind
) -> BodyPart | None:
    if parameters is None or parameters.type_id != ID_EP_IA5_TEXT:
        return None
    repertoire = _IA5_PARAMETERS.get(parameters.value())
    text = _string(data.view, data.start, data.end, _IA5STRING_OCTET)
    if repertoire is None or text is None:
        return None
    return TextBodyPart(data=text, repertoire=repertoire, extended=_flag(True, kind))


def _extended_general(
    parameters: _Instance | None, data: _Instance, kind: ContentKind
) -> BodyPart | None:
    if parameters is None or parameters.type_id != ID_EP_GENERAL_TEXT:
        return None
    view = parameters.view
    sets = _one(view, parameters.start, parameters.end, SET_OCTET, exact=True)
    text = _string(data.view, data.start, data.end, _GENERALSTRING_OCTET)
    if sets is None or text is None:
        return None
    numbers = [_small_int(view, item) for item in ber.items(view, sets, "GeneralTextParameters")]
    character_sets = tuple(number for number in numbers if number is not None)
    if len(character_sets) != len(numbers):
        return None
    return TextBodyPart(data=text, kind=TextKind.GENERAL, character_sets=character_sets)


def _extended_bilateral(
    parameters: _Instance | None, data: _Instance, kind: ContentKind
) -> BodyPart | None:
    octets = _string(data.view, data.start, data.end, _OCTETSTRING_OCTET)
    if parameters is not None or octets is None:
        return None
    return BinaryBodyPart(data=octets, extended=_flag(True, kind))


def _extended_message(
    parameters: _Instance | None, data: _Instance, kind: ContentKind
) -> BodyPart | None:
    parameters_type, form = _FORWARDED_FORMS[data.type_id]
    if parameters is None or parameters.type_id != parameters_type:
        return None
    view = data.view
    if _one(view, parameters.start, parameters.end, SET_OCTET, exact=False) is None:
        return None
    if _one(view, data.start, data.end, SEQUENCE_OCTET, exact=False) is None:
        return None
    return ForwardedMessageBodyPart(
        message=data.value(), parameters=parameters.value(), form=_form(form, kind)
    )


_ExtendedDecoder: TypeAlias = Callable[[_Instance | None, _Instance, ContentKind], BodyPart | None]

_EXTENDED_DECODERS: Final[dict[str, _ExtendedDecoder]] = {
    ID_ET_IA5_TEXT: _extended_ia5,
    ID_ET_GENERAL_TEXT: _extended_general,
    ID_ET_BILATERALLY_DEFINED: _extended_bilateral,
    ID_ET_MESSAGE: _extended_message,
    ID_MMHS_ET_MM_MESSAGE: _extended_message,
}


def _extended(view: View, tlv: FlatTlv, kind: ContentKind) -> BodyPart | None:
    items = ber.items(view, tlv, "ExtendedBodyPart")
    octets = [_octet(view, item) for item in items]
    if octets not in ([_INSTANCE_OF_OCTET], [_CONTEXT_0_OCTET, _INSTANCE_OF_OCTET]):
        return None
    parameters = _instance(view, items[0]) if len(items) == 2 else None
    data = _instance(view, items[-1])
    if data is None or (len(items) == 2 and parameters is None):
        return None
    decoder = _EXTENDED_DECODERS.get(data.type_id)
    typed = None if decoder is None else decoder(parameters, data, kind)
    if typed is not None:
        return typed
    return ExtendedBodyPart(
        data_type=data.type_id,
        data=data.value(),
        parameters_type=None if parameters is None else parameters.type_id,
        parameters=None if parameters is None else parameters.value(),
    )


# The usual P772 text body part, as encode_body writes it: ``extended [15]`` holding
# parameters [0] INSTANCE OF {id-ep-ia5-text, [0] IA5TextParameters {}} (the repertoire
# left at its default) and data INSTANCE OF {id-et-ia5-text, [0] IA5String}.
_IA5_TEXT_PARAMETERS: Final = bytes.fromhex("a00a060456010b00a0023100")
_IA5_TEXT_TYPE: Final = bytes.fromhex("060456010400")


def _extended_ia5_text(view: View, tlv: FlatTlv, kind: ContentKind) -> BodyPart | None:
    """The usual P772 text body part read straight through (a message has one or two,
    each costing a dozen calls through :func:`_extended`); None for any other."""
    start, end = tlv[2] + len(_IA5_TEXT_PARAMETERS), tlv[3]
    if view[tlv[2] : start] != _IA5_TEXT_PARAMETERS:
        return None
    start = _contents(view, start, end, _INSTANCE_OF_OCTET)
    if start < 0 or view[start : start + len(_IA5_TEXT_TYPE)] != _IA5_TEXT_TYPE:
        return None
    start = _contents(view, start + len(_IA5_TEXT_TYPE), end, _CONTEXT_0_OCTET)
    if start < 0:
        return None
    start = _contents(view, start, end, _IA5STRING_OCTET)
    if start < 0:
        return None
    return TextBodyPart(data=bytes(view[start:end]), extended=_flag(True, kind))


def _contents(view: View, pos: int, end: int, octet: int) -> int:
    """Where the contents of the TLV at ``pos`` start, if its identifier is ``octet``,
    its length the shortest definite form and it ends at ``end``; else -1."""
    if pos + 2 > end or view[pos] != octet:
        return -1
    length = view[pos + 1]
    if length < 0x80:
        return pos + 2 if pos + 2 + length == end else -1
    body = pos + 2 + (length & 0x7F)
    if not pos + 2 < body <= end or view[pos + 2] == 0:  # (a leading zero: not shortest)
        return -1
    length = int.from_bytes(view[pos + 2 : body], "big")
    return body if length >= 0x80 and body + length == end else -1


_BODY_PART_DECODERS: Final[dict[int, Callable[[View, FlatTlv, ContentKind], BodyPart | None]]] = {
    _IA5_OCTET: _basic_ia5,
    _MESSAGE_OCTET: _basic_message,
    _BILATERAL_OCTET: _basic_bilateral,
    _EXTENDED_OCTET: _extended,
}


def decode_body(view: View, body: FlatTlv, kind: ContentKind) -> tuple[BodyPart, ...]:
    """The body parts in ``body`` (the Body SEQUENCE)."""
    parts: list[BodyPart] = []
    for index, tlv in enumerate(ber.items(view, body, "Body")):
        octet = _octet(view, tlv)
        if octet == _EXTENDED_OCTET:
            part = _extended_ia5_text(view, tlv, kind)
            if part is not None:
                parts.append(part)
                continue
        decoder = None if octet is None else _BODY_PART_DECODERS.get(octet)
        try:
            part = None if decoder is None else decoder(view, tlv, kind)
        except DecodeError as exc:
            raise DecodeError(exc.why, where=f"body[{index}]: {exc.where}") from exc
        parts.append(part if part is not None else RawBodyPart(encoding=_raw(view, tlv)))
    return tuple(parts)


# --- writing --------------------------------------------------------------------------


def _instance_chunks(octet: int, type_id: str, value: list[bytes]) -> list[bytes]:
    return wrap(octet, [ber.oid_tlv(type_id), *wrap(_CONTEXT_0_OCTET, value)])


def _extended_chunks(
    parameters_type: str | None, parameters: list[bytes], data_type: str, data: list[bytes]
) -> list[bytes]:
    """``extended [15] ExtendedBodyPart`` around the two INSTANCE OF values."""
    inner: list[bytes] = []
    if parameters_type is not None:
        inner += _instance_chunks(_CONTEXT_0_OCTET, parameters_type, parameters)
    inner += _instance_chunks(_INSTANCE_OF_OCTET, data_type, data)
    return wrap(_EXTENDED_OCTET, inner)


def _is_extended(extended: bool | None, kind: ContentKind) -> bool:
    return _prescribes_extended(kind) if extended is None else extended


def _encode_text(part: TextBodyPart, kind: ContentKind) -> list[bytes]:
    if part.kind is TextKind.GENERAL:
        if part.extended is not None or part.repertoire != Repertoire.IA5:
            raise EncodeError("general text has one form and no repertoire", where="TextBodyPart")
        numbers = [
            ber.check_int(n, "CharacterSetRegistration", 1, 32767) for n in part.character_sets
        ]
        sets = wrap(
            SET_OCTET,
            [tlv_bytes(_INTEGER_OCTET, c) for c in map(ber.int_contents, numbers)],
        )
        data = wrap(_GENERALSTRING_OCTET, [part.data])
        return _extended_chunks(ID_EP_GENERAL_TEXT, sets, ID_ET_GENERAL_TEXT, data)
    if part.character_sets:
        raise EncodeError("IA5 text has no character sets", where="TextBodyPart")
    if not part.data.isascii():
        raise EncodeError("IA5 text holds octets above 0x7f", where="TextBodyPart")
    repertoire = part.repertoire
    if type(repertoire) is not Repertoire:  # (a member is one already: no lookup)
        repertoire = Repertoire(repertoire)
    parameters = _IA5_PARAMETER_BYTES[repertoire]
    extended = _is_extended(part.extended, kind)
    if extended and repertoire is Repertoire.IA5:
        return _extended_ia5_text_chunks(part.data)  # (the usual P772 text)
    data = wrap(_IA5STRING_OCTET, [part.data])
    if extended:
        return _extended_chunks(ID_EP_IA5_TEXT, [parameters], ID_ET_IA5_TEXT, data)
    return wrap(_IA5_OCTET, [parameters, *data])


def _extended_ia5_text_chunks(data: bytes) -> list[bytes]:
    """What :func:`_extended_chunks` gives for IA5 text in the default repertoire (the
    form :func:`_extended_ia5_text` reads straight through), its headers written in one
    piece: a dozen calls fewer for the usual P772 body part."""
    string = header(_IA5STRING_OCTET, len(data))
    value = header(_CONTEXT_0_OCTET, len(string) + len(data))
    inner = len(_IA5_TEXT_TYPE) + len(value) + len(string) + len(data)
    instance = header(_INSTANCE_OF_OCTET, inner)
    size = len(_IA5_TEXT_PARAMETERS) + len(instance) + inner
    heads = (header(_EXTENDED_OCTET, size), _IA5_TEXT_PARAMETERS, instance, _IA5_TEXT_TYPE)
    return [b"".join((*heads, value, string)), data]


def _encode_binary(part: BinaryBodyPart, kind: ContentKind) -> list[bytes]:
    if _is_extended(part.extended, kind):
        data = wrap(_OCTETSTRING_OCTET, [part.data])
        return _extended_chunks(None, [], ID_ET_BILATERALLY_DEFINED, data)
    return wrap(_BILATERAL_OCTET, [part.data])


def _encode_forwarded(part: ForwardedMessageBodyPart, kind: ContentKind) -> list[bytes]:
    if part.message[:1] != bytes((SEQUENCE_OCTET,)) or part.parameters[:1] != bytes((SET_OCTET,)):
        raise EncodeError(
            "message must be an IPM SEQUENCE and parameters a SET", where="ForwardedMessageBodyPart"
        )
    form = _default_form(kind) if part.form is None else part.form
    if form is ForwardedForm.BASIC:
        return wrap(_MESSAGE_OCTET, [part.parameters, part.message])
    parameters_type, data_type = _FORWARDED_TYPES[form]
    return _extended_chunks(parameters_type, [part.parameters], data_type, [part.message])


def _encode_extended(part: ExtendedBodyPart, kind: ContentKind) -> list[bytes]:
    if (part.parameters_type is None) != (part.parameters is None):
        raise EncodeError("parameters and their type go together", where="ExtendedBodyPart")
    parameters = [] if part.parameters is None else [part.parameters]
    return _extended_chunks(part.parameters_type, parameters, part.data_type, [part.data])


def _encode_raw(part: RawBodyPart, kind: ContentKind) -> list[bytes]:
    return [part.encoding]


_BODY_PART_ENCODERS: Final[dict[type, Callable[[Any, ContentKind], list[bytes]]]] = {
    TextBodyPart: _encode_text,
    BinaryBodyPart: _encode_binary,
    ForwardedMessageBodyPart: _encode_forwarded,
    ExtendedBodyPart: _encode_extended,
    RawBodyPart: _encode_raw,
}


def encode_body(body: Sequence[BodyPart], kind: ContentKind) -> list[bytes]:
    """The chunks of ``Body ::= SEQUENCE OF BodyPart`` for content ``kind``."""
    chunks: list[bytes] = []
    for index, part in enumerate(body):
        encoder = _BODY_PART_ENCODERS.get(type(part))
        if encoder is None:
            raise EncodeError(f"not a body part: {type(part).__name__}", where=f"body[{index}]")
        try:
            chunks += encoder(part, kind)
        except EncodeError as exc:
            raise EncodeError(exc.why, where=f"body[{index}]: {exc.where}") from exc
    return wrap(SEQUENCE_OCTET, chunks)
