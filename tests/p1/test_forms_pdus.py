"""Every decoder reads every legal BER form of its PDU (X.690 8.1.2-8.1.5, 8.7, 8.21).

For a value drawn at random: encode it, write the encoding again in random legal BER
forms (:func:`tests.p1.ber_forms.reform`: long-form and indefinite lengths, segmented
strings, high-number tag forms), decode, and compare with the value.  One property per
decoder: the MTS-APDUs (message, report, probe, and :func:`peek_envelope`), the relay's
:func:`with_trace_added`, the MTA-bind argument, result and error, the IPM and the IPN.

The rules say what may change where, so that every form written is legal for the ASN.1
type at that position: string types (the universal ones, UTCTime and GeneralizedTime
among them, and the implicitly tagged ones named below) are segmented in OCTET STRINGs,
BIT STRINGs (the universal ones and the implicitly tagged ones named below) in BIT
STRINGs; INTEGER, ENUMERATED, BOOLEAN and OBJECT IDENTIFIER values keep their primitive
form; values the models keep as received (extension values, bilateral information, O/R
name extension attributes, additional information, teletex parameters, IPMS extensions,
body parts) keep their contents as they are.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p1 import ber
from p1.association.mtabind import (
    MTABindArgument,
    MTABindError,
    MTABindResult,
    decode_bind_argument,
    decode_bind_error,
    decode_bind_result,
    encode_bind_argument,
    encode_bind_error,
    encode_bind_result,
)
from p1.ipms.ipm import (
    IPM,
    IPN,
    ContentKind,
    Heading,
    NonReceiptFields,
    decode_ipm,
    decode_ipn,
    decode_message_data,
    encode_ipm,
    encode_ipn,
)
from p1.mts.envelope import (
    Message,
    Probe,
    Report,
    decode_mts_apdu,
    encode_mts_apdu,
    message_content,
    peek_envelope,
)
from p1.mts.extension_view import normalised
from p1.mts.extensions import with_internal_trace_entry
from p1.mts.fields import decode_eits
from p1.mts.relay import with_trace_added
from p1.mts.trace import InternalTraceEntry, TraceEntry
from tests.p1 import ber_forms, strategies
from tests.p1.association.test_mtabind import CONTEXT, STRONG
from tests.p1.ipms.test_ipm import IPNS, KINDS, P2, headings
from tests.profiles import examples

FORMS = settings(max_examples=examples(1), suppress_health_check=[HealthCheck.too_slow])
randoms = st.randoms(use_true_random=False)

Path = ber_forms.Path

# Universal string types (X.690 8.7, 8.23.6), UTCTime and GeneralizedTime among them (X.680
# 46.3, 47.3): any of them may be segmented.
_UNIVERSAL_STRINGS = (
    frozenset({0x04, 0x0C, 0x12, 0x13, 0x14, 0x16, 0x1A, 0x1B, 0x1E}) | ber_forms.TIMES
)

# --- MTS-APDUs ---------------------------------------------------------------------------

_ORNAME_TOPS = frozenset({0x60, 0xA0, 0xA4})  # ORName, and [0]/[4] IMPLICIT in a report
_EXTENSION_SETS = frozenset({0xA1, 0xA3, 0xA6})  # the tags of SET OF ExtensionField
_EIT = 0x65  # EncodedInformationTypes, [APPLICATION 5]


def _p1_string(path: Path, octet: int) -> bool:
    """Universal strings, content-identifier ([APPLICATION 10] PrintableString), the
    implicitly tagged attributes of an O/R name (organization-name [3], the personal
    name's [0]-[3]) and supplementary-information ([5] PrintableString)."""
    if octet in _UNIVERSAL_STRINGS:
        return True
    if octet == 0x4A:
        return True
    if octet == 0x83 and path[-1:] and path[-1] in _ORNAME_TOPS and len(path) > 1:
        return path[-2] in {0x31, 0x69, 0xA1, 0xA2} or path[-2:] == (0xA0, 0x31)
    return False


def _p1_opaque(path: Path, octet: int, contents: bytes) -> bool:
    """What the models keep as received."""
    if octet == 0xA2 and path[-1:] == (0x30,) and path[-2:-1] and path[-2] in _EXTENSION_SETS:
        return True  # ExtensionField value [2]
    if octet == 0xA1 and path in {(0xA0, 0x31), (0xA2,)}:
        return True  # per-domain-bilateral-information [1] (message and probe)
    if octet == 0xA2 and path == (0xA1, 0x31):
        return True  # a report's additional-information [2]
    if octet == 0xA2 and path[-1:] == (_EIT,):
        return True  # teletex non-basic parameters
    return (
        octet == 0x30
        and path[-1:] == (0x31,)
        and len(path) > 1
        and path[-2] in _ORNAME_TOPS
        and not contents.startswith(b"\x80\x01\x01")
    )  # an O/R name's extension attribute other than common-name


def _p1_bits(path: Path, octet: int) -> bool:
    """Universal BIT STRINGs and per-message-indicators ([APPLICATION 8] BIT STRING)."""
    return octet in (ber_forms.BIT_STRING, 0x48)


P1_FORMS = ber_forms.Rules(string=_p1_string, opaque=_p1_opaque, high_tags=True, bits=_p1_bits)


@pytest.mark.slow
@FORMS
@given(strategies.mts_apdus, randoms)
def test_every_legal_form_of_an_mts_apdu_decodes_to_the_same_value(
    apdu: Message | Probe | Report, rnd: random.Random
) -> None:
    received = ber_forms.reform(encode_mts_apdu(apdu), rnd, P1_FORMS)
    assert decode_mts_apdu(received) == apdu
    envelope = apdu.envelope if isinstance(apdu, Message) else apdu
    assert peek_envelope(received) == envelope
    if isinstance(apdu, Message):
        assert message_content(received) == apdu.content


# --- the relay ---------------------------------------------------------------------------


@pytest.mark.slow
@FORMS
@given(
    strategies.messages,
    randoms,
    strategies.optional(strategies.trace_entries),
    strategies.internal_trace_entries(),
)
def test_the_relay_reads_every_legal_form_and_keeps_the_content_octets(
    message: Message,
    rnd: random.Random,
    trace: TraceEntry | None,
    internal: InternalTraceEntry,
) -> None:
    received = ber_forms.reform(encode_mts_apdu(message), rnd, P1_FORMS)
    relayed = with_trace_added(received, trace, internal)
    out = decode_mts_apdu(relayed)
    assert isinstance(out, Message)
    envelope = message.envelope
    expected = dataclasses.replace(
        envelope,
        trace_information=(*envelope.trace_information, *(() if trace is None else (trace,))),
        extensions=with_internal_trace_entry(envelope.extensions, internal),
    )
    assert out.envelope == expected
    assert out.content == message.content
    # The content's TLV, in whatever form it was received, ends both APDUs unchanged.
    assert relayed.endswith(_content_tlv(received))


def _content_tlv(apdu: bytes) -> bytes:
    """The content TLV of a reformed message: what follows the envelope."""
    tlv = ber.read_single(apdu, "MTS-APDU")
    children = ber.children(tlv, "Message")
    return bytes(children[1].raw())


# --- MTA-bind ----------------------------------------------------------------------------

mta_names = st.text(strategies.IA5, min_size=1, max_size=32)
passwords = st.one_of(st.text(strategies.IA5, max_size=16), st.binary(max_size=16))


@st.composite
def bind_arguments(draw: st.DrawFn) -> MTABindArgument:
    """Unauthenticated, or a name with a password or strong credentials, and sometimes a
    security context."""
    if draw(st.booleans()):
        return MTABindArgument()
    strong = draw(st.booleans())
    return MTABindArgument(
        initiator_name=draw(mta_names),
        password=None if strong else draw(passwords),
        strong_credentials=STRONG if strong else None,
        security_context=draw(st.sampled_from([None, CONTEXT])),
    )


@st.composite
def bind_results(draw: st.DrawFn) -> MTABindResult:
    """Unauthenticated, or a name with a password or strong credentials."""
    if draw(st.booleans()):
        return MTABindResult()
    strong = draw(st.booleans())
    return MTABindResult(
        responder_name=draw(mta_names),
        password=None if strong else draw(passwords),
        strong_credentials=STRONG if strong else None,
    )


def _bind_string(path: Path, octet: int) -> bool:
    """The IA5String and OCTET STRING passwords, and the MTA name ([0] IA5String)."""
    return octet in _UNIVERSAL_STRINGS or (octet == 0x80 and path == (0xA1,))


def _bind_opaque(path: Path, octet: int, contents: bytes) -> bool:
    """Strong credentials ([0] inside [1]) are kept as received."""
    return octet == 0xA0 and path == (0xA1, 0xA1)


BIND_FORMS = ber_forms.Rules(string=_bind_string, opaque=_bind_opaque, high_tags=True)


def _same_set(kept: bytes | None, original: bytes | None) -> bool:
    """A SET kept as received is the original in another legal form: the same once both
    are written with definite lengths, low tag numbers and strings in one segment."""
    if kept is None or original is None:
        return kept is original
    return normalised(kept) == normalised(original)


@FORMS
@given(bind_arguments(), randoms)
def test_every_legal_form_of_a_bind_argument_decodes_to_the_same_value(
    argument: MTABindArgument, rnd: random.Random
) -> None:
    decoded = decode_bind_argument(
        ber_forms.reform(encode_bind_argument(argument), rnd, BIND_FORMS)
    )
    context, strong = decoded.security_context, decoded.strong_credentials
    assert _same_set(context, argument.security_context)
    assert _same_set(strong, argument.strong_credentials)
    assert (
        dataclasses.replace(
            decoded,
            security_context=argument.security_context,
            strong_credentials=argument.strong_credentials,
        )
        == argument
    )


@FORMS
@given(bind_results(), randoms)
def test_every_legal_form_of_a_bind_result_decodes_to_the_same_value(
    result: MTABindResult, rnd: random.Random
) -> None:
    decoded = decode_bind_result(ber_forms.reform(encode_bind_result(result), rnd, BIND_FORMS))
    strong = decoded.strong_credentials
    assert _same_set(strong, result.strong_credentials)
    assert dataclasses.replace(decoded, strong_credentials=result.strong_credentials) == result


@FORMS
@given(st.sampled_from(MTABindError), randoms)
def test_every_legal_form_of_a_bind_error_decodes_to_the_same_value(
    error: MTABindError, rnd: random.Random
) -> None:
    assert decode_bind_error(ber_forms.reform(encode_bind_error(error), rnd, BIND_FORMS)) == error


# --- IPM heading and IPN -----------------------------------------------------------------

_RAW_EXTENSION_TYPES = (
    "1.2.3.4",
    "2.6.1.5.1",
    "1.3.26.0.4406.0.2.3",
    "1.2.3",
    "1.3.26.0.4406.0.2.16",
)


def _ipms_string(path: Path, octet: int) -> bool:
    """Universal strings, and the implicitly tagged strings of an O/R name (as in
    :func:`_p1_string`), of an ORDescriptor (free-form-name [0] TeletexString,
    telephone-number [1] PrintableString) and the subject ([8] TeletexString)."""
    if octet in _UNIVERSAL_STRINGS:
        return True
    if octet == 0x88 and path == (0xA0, 0x31):
        return True
    if octet in _HEADING_TIMES and len(path) == 2 and path[-1] == 0x31:
        return True  # in the heading, itself in the IPM
    return octet == 0x83 and path[-1:] == (0x60,)


_HEADING_TIMES = frozenset({0x89, 0x8A})  # expiry-time [9], reply-time [10]: UTCTime
_RECIPIENTS = frozenset({0xA2, 0xA3, 0xA4})  # primary-, copy-, blind-copy-recipients


def _ipms_bits(path: Path, octet: int) -> bool:
    """Universal BIT STRINGs and a recipient's notification-requests ([1] BIT STRING)."""
    if octet == ber_forms.BIT_STRING:
        return True
    # The heading's SET is in the IPM: its recipients' SETs are two levels down.
    return (
        octet == 0x81 and len(path) == 4 and path[1] == path[3] == 0x31 and path[2] in _RECIPIENTS
    )


def _ipms_opaque(path: Path, octet: int, contents: bytes) -> bool:
    """Kept as received: IPMS extensions of types the models do not read, the body, O/R
    name extension attributes."""
    if octet == 0x30 and path == (0xA0,):
        return True  # the body (tests/p1/ipms/test_body_forms.py covers its forms)
    if octet == 0x30 and _raw_extension(contents):
        return True
    return octet == 0x30 and path[-2:] == (0x60, 0x31) and not contents.startswith(b"\x80\x01\x01")


_RAW_EXTENSION_OIDS = tuple(
    ber.tlv(ber.OBJECT_IDENTIFIER, ber.oid_contents(oid, "type")) for oid in _RAW_EXTENSION_TYPES
)


def _raw_extension(contents: bytes) -> bool:
    """An IPMSExtension of a type the models keep raw (the strategies' and IPNS's)."""
    return contents.startswith(_RAW_EXTENSION_OIDS)


IPMS_FORMS = ber_forms.Rules(
    string=_ipms_string, opaque=_ipms_opaque, high_tags=True, bits=_ipms_bits
)


@pytest.mark.slow
@FORMS
@given(st.sampled_from(KINDS), headings, randoms)
def test_every_legal_form_of_an_ipm_heading_decodes_to_the_same_heading(
    kind: ContentKind, heading: Heading, rnd: random.Random
) -> None:
    ipm = IPM(heading=heading)
    received = ber_forms.reform(encode_ipm(ipm, kind), rnd, IPMS_FORMS)
    assert decode_ipm(received, kind) == ipm


def _kept_ipn_parts(ipn: IPN) -> tuple[object, object]:
    """What an IPN keeps as received, read: the conversion EITs and a returned IPM."""
    eits = None
    if ipn.conversion_eits is not None:
        eits = decode_eits(ber.read_single(ipn.conversion_eits, "conversion-eits"))
    returned = None
    if isinstance(ipn.fields, NonReceiptFields) and ipn.fields.returned_ipm is not None:
        returned = decode_message_data(ipn.fields.returned_ipm, P2)
    return eits, returned


def _without_kept_parts(ipn: IPN) -> IPN:
    fields = ipn.fields
    if isinstance(fields, NonReceiptFields):
        fields = dataclasses.replace(fields, returned_ipm=None)
    return dataclasses.replace(ipn, conversion_eits=None, fields=fields)


@pytest.mark.slow
@FORMS
@given(st.sampled_from(IPNS), randoms)
def test_every_legal_form_of_an_ipn_decodes_to_the_same_ipn(ipn: IPN, rnd: random.Random) -> None:
    decoded = decode_ipn(ber_forms.reform(encode_ipn(ipn), rnd, IPMS_FORMS))
    # The conversion EITs and the returned IPM are kept as received: the same values,
    # in the form received.
    assert _kept_ipn_parts(decoded) == _kept_ipn_parts(ipn)
    assert _without_kept_parts(decoded) == _without_kept_parts(ipn)


def _indefinite(der: bytes) -> bytes:
    """``der`` with every constructed value in the indefinite-length form."""
    octet, contents, _ = ber_forms.parse_der(der)
    if not octet & 0x20:
        return der
    parts = ber_forms.parse_all(contents)
    inner = (_indefinite(bytes((o,)) + ber.length_octets(len(c)) + c) for o, c in parts)
    return bytes((octet, 0x80)) + b"".join(inner) + b"\x00\x00"


def test_a_returned_ipm_tagged_in_the_high_number_form_is_read_whole() -> None:
    # returned-ipm [3] IMPLICIT IPM as BF 03 (X.690 8.1.2.4): once read as BF 03 80 ...,
    # the SEQUENCE tag replaced the first identifier octet only ("trailing bytes").
    ipn = IPNS[1]
    assert isinstance(ipn.fields, NonReceiptFields)
    returned = ipn.fields.returned_ipm
    assert returned is not None
    low = _indefinite(encode_ipn(ipn))
    assert low.count(b"\xa3\x80\x31\x80") == 1  # returned-ipm, its heading first
    received = low.replace(b"\xa3\x80\x31\x80", b"\xbf\x03\x80\x31\x80")
    decoded = decode_ipn(received)
    assert isinstance(decoded.fields, NonReceiptFields)
    assert decoded.fields.returned_ipm is not None
    assert decode_message_data(decoded.fields.returned_ipm, P2) == decode_message_data(returned, P2)
