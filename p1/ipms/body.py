"""The IPM body codec (X.420 clauses 7.3, 7.4; STANAG 4406 Annex A), by hand over BER.

``Body ::= SEQUENCE OF BodyPart`` is read with :func:`p1.ber.read` (TLVs as tuples) over the
content's bytes (or a view of them), never through asn1tools: a body part's octets are
copied once on decode (into the ``bytes`` of the model) and once on encode (into the
result, which is joined from a list of chunks that refer to the model's bytes).

Types.  Typed models: ia5-text and general-text (:class:`TextBodyPart`),
bilaterally-defined (:class:`BinaryBodyPart`), message, extended message and the STANAG
4406 mm-message (:class:`ForwardedMessageBodyPart`), and the STANAG 4406 extended types
adatp3 (:class:`ADatP3BodyPart`), acp127data (:class:`ACP127DataBodyPart`), corrections
(:class:`CorrectionsBodyPart`) and forwarded-encrypted
(:class:`ForwardedEncryptedBodyPart`).  Any other extended body part is an
:class:`ExtendedBodyPart` (its type identifier, and its values' BER as received); any
other basic one, or a part that does not read as its type, a :class:`RawBodyPart`.
:func:`p1.ipms.models.body_part_type` names the type of each, standard or not.

Reading.  A body part is read in any legal BER form (X.690 8.1 to 8.7, 8.23): short,
long or indefinite lengths, strings split into segments, a DEFAULT value sent
explicitly, tag numbers below 31 in the high-number form.  Each form gives the model the
shortest form gives.  A part that does not read as the type its tag or identifier names
(its BER malformed inside, or not that type's syntax) is kept as received, so one odd
part never hides the others; only a Body that is not a SEQUENCE of TLVs is a
:class:`p1.errors.DecodeError`.

Writing and exactness.  :func:`encode_body` writes a model in the shortest definite form
(one-octet tags, DEFAULTs left out, the parameters this module writes).  When a decoded
part's bytes are not that form, the decoder keeps them in the model's ``encoding``
field, which is no part of the value (``compare=False``) and is not shown
(``repr=False``); the encoder writes it back as long as it still decodes to the part,
as :class:`p1.ber.WireTime` keeps its UTCTime text, so a part changed with
``dataclasses.replace`` is written afresh, never with stale bytes.  Whether the bytes
differ is found by encoding the model read and comparing, chunk by chunk, with the
bytes received: one rule for every type, instead of a check of exactness per field.
(A part whose received octets the encoder refuses, IA5 text above 0x7f, keeps them
too, so it can still be read as text.)  So ``encode_body(decode_body(b))`` reproduces
every body part of ``b`` byte for byte; the Body SEQUENCE's own header, like the
heading's, is written in the shortest form.

Forms.  Text, bilaterally defined and message body parts have a basic form (a
``BodyPart.basic`` alternative) and an extended one (``extended [15]`` with the X.420
``id-et-*`` identifiers); STANAG 4406 prescribes the extended form for P772, so a
part's ``extended`` / ``form`` field is None for the form its content kind prescribes
and names the form otherwise.  General text and the STANAG 4406 types exist only in
the extended form.

API::

    decode_body(view, tlv, kind) -> tuple[BodyPart, ...]   (tlv: the Body SEQUENCE)
    encode_body(body, kind) -> list[bytes]                  (the Body SEQUENCE's chunks)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from p1 import ber
from p1.ber import CONSTRUCTED, FlatTlv, View, header, tlv_bytes, wrap
from p1.errors import DecodeError, EncodeError
from p1.ipms.models import (
    ID_EP_GENERAL_TEXT,
    ID_EP_IA5_TEXT,
    ID_EP_MESSAGE,
    ID_ET_BILATERALLY_DEFINED,
    ID_ET_GENERAL_TEXT,
    ID_ET_IA5_TEXT,
    ID_ET_MESSAGE,
    ID_MMHS_ET_ACP127DATA,
    ID_MMHS_ET_ACP127DATA_PARAMETERS,
    ID_MMHS_ET_ADATP3,
    ID_MMHS_ET_ADATP3_PARAMETERS,
    ID_MMHS_ET_CORRECTIONS,
    ID_MMHS_ET_CORRECTIONS_PARAMETERS,
    ID_MMHS_ET_FORWARDED_ENCRYPTED,
    ID_MMHS_ET_FORWARDED_ENCRYPTED_PARAMETERS,
    ID_MMHS_ET_MM_MESSAGE,
    ID_MMHS_ET_MM_MESSAGE_PARAMETERS,
    ACP127DataBodyPart,
    ADatP3BodyPart,
    BinaryBodyPart,
    BodyPart,
    ContentKind,
    CorrectionsBodyPart,
    ExtendedBodyPart,
    ForwardedEncryptedBodyPart,
    ForwardedForm,
    ForwardedMessageBodyPart,
    RawBodyPart,
    Repertoire,
    TextBodyPart,
    TextKind,
)

__all__ = [
    "ID_EP_GENERAL_TEXT",
    "ID_EP_IA5_TEXT",
    "ID_EP_MESSAGE",
    "ID_ET_BILATERALLY_DEFINED",
    "ID_ET_GENERAL_TEXT",
    "ID_ET_IA5_TEXT",
    "ID_ET_MESSAGE",
    "ID_MMHS_ET_ACP127DATA",
    "ID_MMHS_ET_ACP127DATA_PARAMETERS",
    "ID_MMHS_ET_ADATP3",
    "ID_MMHS_ET_ADATP3_PARAMETERS",
    "ID_MMHS_ET_CORRECTIONS",
    "ID_MMHS_ET_CORRECTIONS_PARAMETERS",
    "ID_MMHS_ET_FORWARDED_ENCRYPTED",
    "ID_MMHS_ET_FORWARDED_ENCRYPTED_PARAMETERS",
    "ID_MMHS_ET_MM_MESSAGE",
    "ID_MMHS_ET_MM_MESSAGE_PARAMETERS",
    "decode_body",
    "encode_body",
]
"""The codec, and the identifiers of the extended types it reads (from :mod:`.models`)."""

# Identifier octets (keys of p1.ber.read: a low tag number in the high-number form has
# the key of its one-octet form).
SEQUENCE_OCTET: Final = 0x30
SET_OCTET: Final = 0x31
_INSTANCE_OF_OCTET: Final = 0x28  # [UNIVERSAL 8] constructed: INSTANCE OF TYPE-IDENTIFIER
_CONTEXT_0_OCTET: Final = 0xA0
_CONTEXT_0_PRIMITIVE: Final = 0x80
_CONTEXT_1_OCTET: Final = 0xA1
_IA5_OCTET: Final = 0xA0  # basic ia5-text [0] IA5TextBodyPart
_MESSAGE_OCTET: Final = 0xA9  # basic message [9] MessageBodyPart
_BILATERAL_OCTET: Final = 0x8E  # basic bilaterally-defined [14] OCTET STRING
_EXTENDED_OCTET: Final = 0xAF  # extended [15] ExtendedBodyPart
_IA5STRING_OCTET: Final = 0x16
_GENERALSTRING_OCTET: Final = 0x1B
_OCTETSTRING_OCTET: Final = 0x04
_BITSTRING_OCTET: Final = 0x03
_INTEGER_OCTET: Final = 0x02
_OID_OCTET: Final = 0x06

# IA5TextParameters ::= SET {repertoire [0] Repertoire DEFAULT ia5}, as this module
# writes them (the default left out).
_IA5_PARAMETER_BYTES: Final = {
    Repertoire.IA5: b"\x31\x00",
    Repertoire.ITA2: b"\x31\x03\x80\x01\x02",
}

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


# --- reading values in any form -------------------------------------------------------


def _raw(view: View, tlv: FlatTlv) -> bytes:
    """The TLV exactly as received."""
    return bytes(view[tlv[1] : tlv[4]])


def _string(view: View, tlv: FlatTlv, octet: int, what: str) -> bytes | None:
    """The octets of a string whose primitive identifier is ``octet``, primitive or
    segmented (X.690 8.7.3, 8.23.6); None for another tag."""
    if tlv[0] & ~CONSTRUCTED != octet:
        return None
    return ber.octets(view, tlv, what)


def _integer(view: View, tlv: FlatTlv, what: str) -> int | None:
    """A primitive INTEGER (X.690 8.3); None for another tag."""
    if tlv[0] != _INTEGER_OCTET:
        return None
    return ber.integer(view, tlv, what)


def _bit_string(view: View, tlv: FlatTlv, what: str) -> tuple[bytes, int] | None:
    """(octets, unused bits) of a BIT STRING, primitive or segmented (X.690 8.6)."""
    if tlv[0] & ~CONSTRUCTED != _BITSTRING_OCTET:
        return None
    octets, length = ber.bit_string(view, tlv, what)
    return octets, len(octets) * 8 - length


def _repertoire(view: View, tlv: FlatTlv) -> Repertoire | None:
    """``IA5TextParameters ::= SET {repertoire [0] Repertoire DEFAULT ia5}``; None when
    ``tlv`` is not that."""
    if tlv[0] != SET_OCTET:
        return None
    items = ber.items(view, tlv, "IA5TextParameters")
    if not items:
        return Repertoire.IA5
    if len(items) != 1 or items[0][0] != _CONTEXT_0_PRIMITIVE:
        return None
    value = ber.integer(view, items[0], "Repertoire")
    return Repertoire(value) if value in _REPERTOIRES else None


_REPERTOIRES: Final = frozenset(Repertoire)


def _character_sets(view: View, tlv: FlatTlv) -> tuple[int, ...] | None:
    """``GeneralTextParameters ::= SET OF CharacterSetRegistration`` (INTEGER 1..32767)."""
    if tlv[0] != SET_OCTET:
        return None
    numbers = [
        _integer(view, item, "CharacterSetRegistration") for item in ber.items(view, tlv, "")
    ]
    if not all(number is not None and 0 < number < 0x8000 for number in numbers):
        return None
    return tuple(number for number in numbers if number is not None)


# --- the basic forms ------------------------------------------------------------------


def _basic_ia5(view: View, tlv: FlatTlv, kind: ContentKind) -> BodyPart | None:
    items = ber.items(view, tlv, "IA5TextBodyPart")
    if len(items) != 2:
        return None
    repertoire = _repertoire(view, items[0])
    data = _string(view, items[1], _IA5STRING_OCTET, "IA5TextData")
    if repertoire is None or data is None:
        return None
    return TextBodyPart(data=data, repertoire=repertoire, extended=_flag(False, kind))


def _basic_bilateral(view: View, tlv: FlatTlv, kind: ContentKind) -> BodyPart | None:
    data = ber.octets(view, tlv, "BilaterallyDefinedBodyPart")
    return BinaryBodyPart(data=data, extended=_flag(False, kind))


def _basic_message(view: View, tlv: FlatTlv, kind: ContentKind) -> BodyPart | None:
    items = ber.items(view, tlv, "MessageBodyPart")
    if [item[0] for item in items] != [SET_OCTET, SEQUENCE_OCTET]:
        return None
    return ForwardedMessageBodyPart(
        message=_raw(view, items[1]),
        parameters=_raw(view, items[0]),
        form=_form(ForwardedForm.BASIC, kind),
    )


# --- the extended form ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Instance:
    """An INSTANCE OF TYPE-IDENTIFIER value: its type-id, and the one TLV in its [0]."""

    type_id: str
    view: View
    tlv: FlatTlv

    def value(self) -> bytes:
        """The value's TLV as received."""
        return _raw(self.view, self.tlv)

    def of_type(self, octet: int) -> bool:
        """The value's identifier is ``octet``."""
        return self.tlv[0] == octet


def _instance(view: View, tlv: FlatTlv) -> _Instance | None:
    """``SEQUENCE {type-id OBJECT IDENTIFIER, value [0] EXPLICIT ANY}``, else None."""
    items = ber.items(view, tlv, "INSTANCE OF")
    if len(items) != 2 or items[0][0] != _OID_OCTET or items[1][0] != _CONTEXT_0_OCTET:
        return None
    inner = ber.items(view, items[1], "INSTANCE OF value")
    if len(inner) != 1:
        return None
    return _Instance(ber.oid(view, items[0], "type-id"), view, inner[0])


def _extended_ia5(
    parameters: _Instance | None, data: _Instance, kind: ContentKind
) -> BodyPart | None:
    if parameters is None or parameters.type_id != ID_EP_IA5_TEXT:
        return None
    repertoire = _repertoire(parameters.view, parameters.tlv)
    text = _string(data.view, data.tlv, _IA5STRING_OCTET, "IA5TextData")
    if repertoire is None or text is None:
        return None
    return TextBodyPart(data=text, repertoire=repertoire, extended=_flag(True, kind))


def _extended_general(
    parameters: _Instance | None, data: _Instance, kind: ContentKind
) -> BodyPart | None:
    if parameters is None or parameters.type_id != ID_EP_GENERAL_TEXT:
        return None
    character_sets = _character_sets(parameters.view, parameters.tlv)
    text = _string(data.view, data.tlv, _GENERALSTRING_OCTET, "GeneralTextData")
    if character_sets is None or text is None:
        return None
    return TextBodyPart(data=text, kind=TextKind.GENERAL, character_sets=character_sets)


def _extended_bilateral(
    parameters: _Instance | None, data: _Instance, kind: ContentKind
) -> BodyPart | None:
    octets = _string(data.view, data.tlv, _OCTETSTRING_OCTET, "BilaterallyDefinedBodyPart")
    if parameters is not None or octets is None:
        return None
    return BinaryBodyPart(data=octets, extended=_flag(True, kind))


def _extended_message(
    parameters: _Instance | None, data: _Instance, kind: ContentKind
) -> BodyPart | None:
    parameters_type, form = _FORWARDED_FORMS[data.type_id]
    if parameters is None or parameters.type_id != parameters_type:
        return None
    if not parameters.of_type(SET_OCTET) or not data.of_type(SEQUENCE_OCTET):
        return None
    return ForwardedMessageBodyPart(
        message=data.value(), parameters=parameters.value(), form=_form(form, kind)
    )


def _integer_parameters(parameters: _Instance | None, type_id: str) -> tuple[bool, int | None]:
    """(whether the parameters are absent or an INTEGER of ``type_id``, their value)."""
    if parameters is None:
        return True, None
    if parameters.type_id != type_id:
        return False, None
    value = _integer(parameters.view, parameters.tlv, "parameters")
    return value is not None, value


def _adatp3(parameters: _Instance | None, data: _Instance, kind: ContentKind) -> BodyPart | None:
    good, number = _integer_parameters(parameters, ID_MMHS_ET_ADATP3_PARAMETERS)
    if not good:
        return None
    view, tlv = data.view, data.tlv
    if tlv[0] == _CONTEXT_1_OCTET:  # setOriented [1] IMPLICIT SEQUENCE OF IA5String
        sets = [
            _string(view, item, _IA5STRING_OCTET, "ADatP3Data") for item in ber.items(view, tlv, "")
        ]
        if not all(item is not None for item in sets):
            return None
        return ADatP3BodyPart(sets=tuple(s for s in sets if s is not None), parameters=number)
    text = _string(view, tlv, _CONTEXT_0_PRIMITIVE, "ADatP3Data")  # lineOriented [0]
    return None if text is None else ADatP3BodyPart(data=text, parameters=number)


def _ia5_extended(
    cls: type[ACP127DataBodyPart] | type[CorrectionsBodyPart], parameters_type: str
) -> _ExtendedDecoder:
    """The decoder of an extended type of IA5String data and INTEGER parameters."""

    def decode(parameters: _Instance | None, data: _Instance, kind: ContentKind) -> BodyPart | None:
        good, number = _integer_parameters(parameters, parameters_type)
        text = _string(data.view, data.tlv, _IA5STRING_OCTET, cls.__name__)
        return cls(data=text, parameters=number) if good and text is not None else None

    return decode


def _forwarded_encrypted(
    parameters: _Instance | None, data: _Instance, kind: ContentKind
) -> BodyPart | None:
    if parameters is None or parameters.type_id != ID_MMHS_ET_FORWARDED_ENCRYPTED_PARAMETERS:
        return None
    bits = _bit_string(data.view, data.tlv, "ForwardedEncryptedData")
    if not parameters.of_type(SET_OCTET) or bits is None:
        return None
    return ForwardedEncryptedBodyPart(
        parameters=parameters.value(), data=bits[0], unused_bits=bits[1]
    )


_ExtendedDecoder: TypeAlias = Callable[[_Instance | None, _Instance, ContentKind], BodyPart | None]

_EXTENDED_DECODERS: Final[dict[str, _ExtendedDecoder]] = {
    ID_ET_IA5_TEXT: _extended_ia5,
    ID_ET_GENERAL_TEXT: _extended_general,
    ID_ET_BILATERALLY_DEFINED: _extended_bilateral,
    ID_ET_MESSAGE: _extended_message,
    ID_MMHS_ET_MM_MESSAGE: _extended_message,
    ID_MMHS_ET_ADATP3: _adatp3,
    ID_MMHS_ET_ACP127DATA: _ia5_extended(ACP127DataBodyPart, ID_MMHS_ET_ACP127DATA_PARAMETERS),
    ID_MMHS_ET_CORRECTIONS: _ia5_extended(CorrectionsBodyPart, ID_MMHS_ET_CORRECTIONS_PARAMETERS),
    ID_MMHS_ET_FORWARDED_ENCRYPTED: _forwarded_encrypted,
}


def _extended(view: View, tlv: FlatTlv, kind: ContentKind) -> BodyPart | None:
    items = ber.items(view, tlv, "ExtendedBodyPart")
    keys = [item[0] for item in items]
    if keys not in ([_INSTANCE_OF_OCTET], [_CONTEXT_0_OCTET, _INSTANCE_OF_OCTET]):
        return None
    parameters = _instance(view, items[0]) if len(items) == 2 else None
    data = _instance(view, items[-1])
    if data is None or (len(items) == 2 and parameters is None):
        return None
    decoder = _EXTENDED_DECODERS.get(data.type_id)
    try:
        typed = None if decoder is None else decoder(parameters, data, kind)
    except DecodeError:  # (values not of the type's syntax: kept as received)
        typed = None
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
    each costing a dozen calls through :func:`_extended` and a comparison with what
    the encoder writes); None for any other, and for text the encoder would refuse."""
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
    data = bytes(view[start:end])
    return TextBodyPart(data=data, extended=_flag(True, kind)) if data.isascii() else None


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


# --- one body part, and the body ------------------------------------------------------

_BODY_PART_DECODERS: Final[dict[int, Callable[[View, FlatTlv, ContentKind], BodyPart | None]]] = {
    _IA5_OCTET: _basic_ia5,
    _MESSAGE_OCTET: _basic_message,
    _BILATERAL_OCTET: _basic_bilateral,
    _BILATERAL_OCTET | CONSTRUCTED: _basic_bilateral,  # (segmented)
    _EXTENDED_OCTET: _extended,
}


def _decode_part(view: View, tlv: FlatTlv, kind: ContentKind) -> BodyPart:
    """The body part ``tlv``, typed when it reads as a type modelled here."""
    decoder = _BODY_PART_DECODERS.get(tlv[0])
    try:
        part = None if decoder is None else decoder(view, tlv, kind)
    except DecodeError:  # (not its type's syntax: kept as received)
        part = None
    if part is None:
        return RawBodyPart(encoding=_raw(view, tlv))
    return _as_received(part, view, tlv, kind)


def _as_received(part: BodyPart, view: View, tlv: FlatTlv, kind: ContentKind) -> BodyPart:
    """``part``, holding the bytes it was read from unless the encoder writes the same."""
    try:
        chunks = _BODY_PART_ENCODERS[type(part)](part, kind)
    except EncodeError:
        chunks = []  # (octets the encoder refuses: the part keeps the received ones)
    if chunks and _written_as(view, tlv[1], tlv[4], chunks):
        return part
    return dataclasses.replace(part, encoding=_raw(view, tlv))


def _written_as(view: View, start: int, stop: int, chunks: list[bytes]) -> bool:
    """``view[start:stop]`` holds exactly ``chunks`` (compared in place, not joined)."""
    whole = _whole(view)
    pos = start
    for chunk in chunks:
        end = pos + len(chunk)
        if end > stop:
            return False
        if not (view[pos:end] == chunk if whole is None else whole.startswith(chunk, pos)):
            return False
        pos = end
    return pos == stop


def _whole(view: View) -> bytes | bytearray | None:
    """The bytes ``view`` shows whole, so at the same offsets, if they are bytes or a
    bytearray: their ``startswith`` compares a 10 MB text ten times faster than a view."""
    if isinstance(view, bytes):
        return view
    whole = view.obj
    if isinstance(whole, bytes | bytearray) and view.c_contiguous and len(whole) == view.nbytes:
        return whole
    return None


def decode_body(view: View, body: FlatTlv, kind: ContentKind) -> tuple[BodyPart, ...]:
    """The body parts in ``body`` (the Body SEQUENCE)."""
    parts: list[BodyPart] = []
    for tlv in ber.items(view, body, "Body"):
        if tlv[0] == _EXTENDED_OCTET and ber.exact(tlv):
            part = _extended_ia5_text(view, tlv, kind)
            if part is not None:
                parts.append(part)
                continue
        parts.append(_decode_part(view, tlv, kind))
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
    _check_ia5(part.data, "TextBodyPart")
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


def _check_ia5(data: bytes, what: str) -> None:
    if not data.isascii():
        raise EncodeError("IA5 text holds octets above 0x7f", where=what)


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


def _first_key(encoding: bytes) -> int | None:
    """The identifier key of the one BER value ``encoding`` holds, else None."""
    try:
        return ber.single(encoding, "")[1][0]
    except DecodeError:
        return None


def _encode_forwarded(part: ForwardedMessageBodyPart, kind: ContentKind) -> list[bytes]:
    if _first_key(part.message) != SEQUENCE_OCTET or _first_key(part.parameters) != SET_OCTET:
        raise EncodeError(
            "message must be an IPM SEQUENCE and parameters a SET", where="ForwardedMessageBodyPart"
        )
    form = _default_form(kind) if part.form is None else part.form
    if form is ForwardedForm.BASIC:
        return wrap(_MESSAGE_OCTET, [part.parameters, part.message])
    parameters_type, data_type = _FORWARDED_TYPES[form]
    return _extended_chunks(parameters_type, [part.parameters], data_type, [part.message])


def _integer_chunks(number: int | None) -> list[bytes]:
    return [] if number is None else [tlv_bytes(_INTEGER_OCTET, ber.int_contents(number))]


def _encode_adatp3(part: ADatP3BodyPart, kind: ContentKind) -> list[bytes]:
    if part.sets is None:
        _check_ia5(part.data, "ADatP3BodyPart")
        data = wrap(_CONTEXT_0_PRIMITIVE, [part.data])
    elif part.data:
        raise EncodeError("line-oriented data and sets together", where="ADatP3BodyPart")
    else:
        for item in part.sets:
            _check_ia5(item, "ADatP3BodyPart")
        data = wrap(_CONTEXT_1_OCTET, [tlv_bytes(_IA5STRING_OCTET, item) for item in part.sets])
    parameters_type = None if part.parameters is None else ID_MMHS_ET_ADATP3_PARAMETERS
    parameters = _integer_chunks(part.parameters)
    return _extended_chunks(parameters_type, parameters, ID_MMHS_ET_ADATP3, data)


_IA5_EXTENDED_TYPES: Final = {
    ACP127DataBodyPart: (ID_MMHS_ET_ACP127DATA_PARAMETERS, ID_MMHS_ET_ACP127DATA),
    CorrectionsBodyPart: (ID_MMHS_ET_CORRECTIONS_PARAMETERS, ID_MMHS_ET_CORRECTIONS),
}


def _encode_ia5_extended(
    part: ACP127DataBodyPart | CorrectionsBodyPart, kind: ContentKind
) -> list[bytes]:
    _check_ia5(part.data, type(part).__name__)
    parameters_type, data_type = _IA5_EXTENDED_TYPES[type(part)]
    parameters = _integer_chunks(part.parameters)
    data = wrap(_IA5STRING_OCTET, [part.data])
    return _extended_chunks(
        None if part.parameters is None else parameters_type, parameters, data_type, data
    )


def _encode_forwarded_encrypted(part: ForwardedEncryptedBodyPart, kind: ContentKind) -> list[bytes]:
    what = "ForwardedEncryptedBodyPart"
    if _first_key(part.parameters) != SET_OCTET:
        raise EncodeError("parameters must be a SET", where=what)
    unused = part.unused_bits
    if not _unused_bits_clear(part.data, unused):
        raise EncodeError(f"{unused} unused bits that are not zero bits", where=what)
    data = wrap(_BITSTRING_OCTET, [bytes((unused,)), part.data])
    return _extended_chunks(
        ID_MMHS_ET_FORWARDED_ENCRYPTED_PARAMETERS,
        [part.parameters],
        ID_MMHS_ET_FORWARDED_ENCRYPTED,
        data,
    )


def _unused_bits_clear(data: bytes, unused: int) -> bool:
    """``unused`` trailing bits of ``data`` can be left out: 0..7, all zero (X.690 8.6.2)."""
    if not 0 <= unused <= 7 or (unused and not data):
        return False
    return not data or not data[-1] & ((1 << unused) - 1)


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
    ADatP3BodyPart: _encode_adatp3,
    ACP127DataBodyPart: _encode_ia5_extended,
    CorrectionsBodyPart: _encode_ia5_extended,
    ForwardedEncryptedBodyPart: _encode_forwarded_encrypted,
    ExtendedBodyPart: _encode_extended,
    RawBodyPart: _encode_raw,
}


def _still_reads_as(part: BodyPart, encoding: bytes, kind: ContentKind) -> bool:
    """``encoding`` (a part's received bytes) decodes to ``part`` under ``kind``."""
    try:
        view, tlv = ber.single(encoding, "BodyPart")
        return _decode_part(view, tlv, kind) == part
    except DecodeError:
        return False


def encode_body(body: Sequence[BodyPart], kind: ContentKind) -> list[bytes]:
    """The chunks of ``Body ::= SEQUENCE OF BodyPart`` for content ``kind``."""
    chunks: list[bytes] = []
    for index, part in enumerate(body):
        encoder = _BODY_PART_ENCODERS.get(type(part))
        if encoder is None:
            raise EncodeError(f"not a body part: {type(part).__name__}", where=f"body[{index}]")
        received = None if type(part) is RawBodyPart else part.encoding
        if received is not None and _still_reads_as(part, received, kind):
            chunks.append(received)
            continue
        try:
            chunks += encoder(part, kind)
        except EncodeError as exc:
            raise EncodeError(exc.why, where=f"body[{index}]: {exc.where}") from exc
    return wrap(SEQUENCE_OCTET, chunks)
