"""The PDUs of a P1 association across the upper layers, built and read (X.419 clause 7).

What :class:`p1.association.connection.P1Association` puts in and takes out of the session
user data: a presentation PPDU around an ACSE APDU around an RTSE APDU around the MTA-bind values
(X.226, X.227, X.228, X.411), and the RT-TRANSFER octets around an MTS-APDU.

Public API::

    MTS_TRANSFER_CONTEXT, SUPPORTED_SYNTAXES
    connect_data(rtorq, calling_psap, called_psap) / accept_data(results, rtoac, responding_psap)
    refuse_data(results, aare)
    bind_rejection(error) -> Aare / recovery_rejection() -> Aare / context_rejection() -> Aare
    abort_data(reason) / release_request_data() / release_response_data()
    turn_please_data(priority) / turn_priority(user_data)
    rtse_external(value) / acse_value(pdvs, kind) / rtse_value(externals, kind)
    describe_rejection(aare)
    activity_identifier(number) / activity_number(activity_id)
    piece_prefix(size) / check_rtse_context(context_id)
    transfer_head(apdu) / plain_apdu(inbound)
"""

from __future__ import annotations

import functools
from typing import TypeVar

from p1 import ber
from p1.association.mtabind import MTABindError, encode_bind_error, wrap_bind_error
from p1.errors import DecodeError
from p1.osi import RemoteProtocolError, acse, presentation, rtse
from p1.osi.presentation import MTSE_CONTEXT
from p1.osi.rtse_transfer import InboundTransfer

_T = TypeVar("_T")

MTS_TRANSFER_CONTEXT = "2.6.0.1.6"
"""id-ac-mts-transfer: the application context of a 1988 P1 association (X.419 A.1)."""

SUPPORTED_SYNTAXES = {
    presentation.ACSE_AS: presentation.BER,
    presentation.MTA_RTSE_AS: presentation.BER,
    presentation.MTSE_AS: presentation.BER,
}
"""The abstract syntaxes of a P1 association and the transfer syntax we accept for each."""


# --- bind -------------------------------------------------------------------------------


def connect_data(rtorq: rtse.Rtorq, calling_psap: bytes = b"", called_psap: bytes = b"") -> bytes:
    """CP{AARQ{RTORQ}}: the S-CONNECT user data of RT-OPEN (X.228 7.3, X.227 9), with the
    calling and called presentation selectors when given (X.226 CP-type [1], [2])."""
    aarq = acse.Aarq(
        application_context=MTS_TRANSFER_CONTEXT,
        user_information=(rtse_external(rtse.encode_rtse(rtorq)),),
    )
    return presentation.encode_cp(
        presentation.ConnectPpdu(
            calling_selector=calling_psap or None,
            called_selector=called_psap or None,
            contexts=presentation.P1_CONTEXTS,
            user_data=(_acse_pdv(aarq),),
        )
    )


def accept_data(
    results: tuple[presentation.ContextResult, ...],
    rtoac: rtse.Rtoac,
    responding_psap: bytes | None = None,
) -> bytes:
    """CPA{AARE accepted{RTOAC}}: the S-CONNECT accept user data of RT-OPEN; the responding
    presentation selector, when given, is the one the CP called (X.226 CPA-PPDU [3])."""
    aare = acse.Aare(
        application_context=MTS_TRANSFER_CONTEXT,
        result=acse.ACCEPTED,
        diagnostic=acse.Diagnostic(source=acse.SERVICE_USER, value=acse.NULL_DIAGNOSTIC),
        user_information=(rtse_external(rtse.encode_rtse(rtoac)),),
    )
    return presentation.encode_cpa(
        presentation.AcceptPpdu(
            responding_selector=responding_psap, results=results, user_data=(_acse_pdv(aare),)
        )
    )


def refuse_data(results: tuple[presentation.ContextResult, ...], aare: acse.Aare) -> bytes:
    """CPR{AARE}: the S-CONNECT refuse user data (X.226 8.2)."""
    return presentation.encode_cpr(
        presentation.RefusePpdu(results=results, user_data=(_acse_pdv(aare),))
    )


def bind_rejection(error: MTABindError) -> acse.Aare:
    """AARE rejected-permanent{RTORJ{[18] error}}: MTA-BIND refused (X.419 7, X.228 7.3)."""
    rtorj = rtse.Rtorj(user_data=wrap_bind_error(encode_bind_error(error)))
    return acse.Aare(
        application_context=MTS_TRANSFER_CONTEXT,
        result=acse.REJECTED_PERMANENT,
        diagnostic=acse.Diagnostic(source=acse.SERVICE_USER, value=acse.NO_REASON_GIVEN),
        user_information=(rtse_external(rtse.encode_rtse(rtorj)),),
    )


def recovery_rejection() -> acse.Aare:
    """AARE rejected-permanent{RTORJ}: an RT-OPEN ``recover`` refused (X.228 7.3), with
    no MTA-bind error, since no MTA-bind was asked for."""
    return acse.Aare(
        application_context=MTS_TRANSFER_CONTEXT,
        result=acse.REJECTED_PERMANENT,
        diagnostic=acse.Diagnostic(source=acse.SERVICE_USER, value=acse.NO_REASON_GIVEN),
        user_information=(rtse_external(rtse.encode_rtse(rtse.Rtorj())),),
    )


def context_rejection() -> acse.Aare:
    """AARE rejected-permanent, service-user application-context-name-not-supported.

    The ACSE user refuses an A-ASSOCIATE for an application context it does not know (X.217
    A-ASSOCIATE Result and Diagnostic, X.227 AARE result-source-diagnostic); RTSE never
    saw the request, so there is no RTORJ.  The AARE names the context we support, as the
    acceptor may answer with another application context name than the one proposed.
    """
    diagnostic = acse.UserDiagnostic.APPLICATION_CONTEXT_NAME_NOT_SUPPORTED
    return acse.Aare(
        application_context=MTS_TRANSFER_CONTEXT,
        result=acse.REJECTED_PERMANENT,
        diagnostic=acse.Diagnostic(source=acse.SERVICE_USER, value=diagnostic),
    )


def describe_rejection(aare: acse.Aare) -> str:
    """``A-ASSOCIATE rejected (service-user: no-reason-given)``, for messages."""
    source = aare.diagnostic.source
    names = acse.UserDiagnostic if source is acse.SERVICE_USER else acse.ProviderDiagnostic
    try:
        diagnostic = names(aare.diagnostic.value).name.lower().replace("_", "-")
    except ValueError:
        diagnostic = str(aare.diagnostic.value)
    return f"A-ASSOCIATE rejected ({source.value}: {diagnostic})"


# --- abort, release, turn -------------------------------------------------------------


def abort_data(reason: rtse.AbortReason) -> bytes:
    """ARU{ABRT{RTAB}}: the S-U-ABORT user data of RT-U-ABORT or RTSE's own abort (X.228)."""
    rtab = rtse.encode_rtse(rtse.Rtab(abort_reason=reason))
    abrt = acse.Abrt(source=acse.SERVICE_USER, user_information=(rtse_external(rtab),))
    return presentation.encode_aru(presentation.AruPpdu(user_data=(_acse_pdv(abrt),)))


def abort_reason(user_data: bytes) -> rtse.AbortReason | None:
    """The RTAB abortReason in an S-U-ABORT's user data, ARU{ABRT{RTAB}} (X.228 9.8,
    X.226 8.3); None when the abort carries none, or another form (an ARP, say)."""
    try:
        aru = presentation.decode_aru(user_data)
        for pdv in aru.user_data:
            if pdv.context_id != presentation.ACSE_CONTEXT:
                continue
            abrt = acse.decode_acse(pdv.value)
            if isinstance(abrt, acse.Abrt) and abrt.user_information:
                rtab = rtse.decode_rtse(abrt.user_information[0].value)
                found = rtab.abort_reason if isinstance(rtab, rtse.Rtab) else None
                return None if found is None else rtse.AbortReason(found)
    except (DecodeError, RemoteProtocolError, ValueError):  # (ValueError: a reason not named)
        return None
    return None


def release_request_data() -> bytes:
    """P-DATA{RLRQ normal}: the S-RELEASE user data of RT-CLOSE (X.228 7.4, X.227 9)."""
    rlrq = acse.encode_acse(acse.Rlrq(reason=acse.RELEASE_NORMAL))
    return presentation.encode_pdv(presentation.ACSE_CONTEXT, rlrq)


def release_response_data() -> bytes:
    """P-DATA{RLRE normal}: the S-RELEASE response user data."""
    rlre = acse.encode_acse(acse.Rlre(reason=acse.RELEASE_NORMAL))
    return presentation.encode_pdv(presentation.ACSE_CONTEXT, rlre)


def turn_please_data(priority: int) -> bytes:
    """P-DATA{RTTP priority}: the S-TOKEN-PLEASE user data of RT-TURN-PLEASE (X.228 7.6)."""
    rttp = rtse.encode_rtse(rtse.Rttp(priority=priority))
    return presentation.encode_pdv(presentation.RTSE_CONTEXT, rttp)


def turn_priority(user_data: bytes) -> int:
    """The priority of the RTTP in an S-TOKEN-PLEASE's user data (0 when there is none)."""
    priority = 0
    for pdv in presentation.decode_user_data(user_data) if user_data else ():
        rttp = rtse.decode_rtse(pdv.value)
        if isinstance(rttp, rtse.Rttp):
            priority = rttp.priority
    return priority


# --- reading the layers ---------------------------------------------------------------


def rtse_external(value: bytes) -> acse.External:
    """``EXTERNAL { direct-reference BER, indirect-reference 3, single-ASN1-type value }``."""
    return acse.External(
        direct_reference=presentation.BER,
        indirect_reference=presentation.RTSE_CONTEXT,
        value=value,
    )


def _acse_pdv(apdu: acse.AcseApdu) -> presentation.Pdv:
    return presentation.Pdv(presentation.ACSE_CONTEXT, acse.encode_acse(apdu))


def acse_value(pdvs: tuple[presentation.Pdv, ...], kind: type[_T]) -> _T:
    """The ACSE APDU of ``kind`` in the ACSE context of ``pdvs``; else the peer's error."""
    for pdv in pdvs:
        if pdv.context_id == presentation.ACSE_CONTEXT:
            apdu = acse.decode_acse(pdv.value)
            if not isinstance(apdu, kind):
                raise RemoteProtocolError(
                    f"expected {kind.__name__}, found {type(apdu).__name__}", layer="acse"
                )
            return apdu
    raise RemoteProtocolError(f"no {kind.__name__} in the ACSE context", layer="acse")


def rtse_value(externals: tuple[acse.External, ...], kind: type[_T]) -> _T:
    """The one RTSE APDU of ``kind`` in an ACSE user-information; else the peer's error."""
    if len(externals) != 1:
        raise RemoteProtocolError(
            f"expected one EXTERNAL in user-information, found {len(externals)}", layer="rtse"
        )
    apdu = rtse.decode_rtse(externals[0].value)
    if not isinstance(apdu, kind):
        raise RemoteProtocolError(
            f"expected {kind.__name__}, found {type(apdu).__name__}", layer="rtse"
        )
    return apdu


def check_rtse_context(context_id: int) -> None:
    """P-DATA of the data phase belongs to the RTSE context (X.419 7)."""
    if context_id != presentation.RTSE_CONTEXT:
        raise RemoteProtocolError(f"P-DATA in presentation context {context_id}", layer="rtse")


def activity_identifier(number: int) -> bytes:
    """The activity identifier RTSE gives transfer ``number``: a BER INTEGER."""
    return ber.tlv(ber.INTEGER, ber.int_contents(number))


def activity_number(activity_id: bytes) -> int:
    """The transfer number RTSE puts in the activity identifier (a BER INTEGER)."""
    try:
        return ber.read_int(ber.read_single(activity_id, "activity identifier"), "activity id")
    except DecodeError:
        return 0


# --- the transfer path ----------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def piece_prefix(size: int) -> bytes:
    """The PDV and RTTR headers of a piece of ``size`` octets (pieces share a few sizes)."""
    rttr = rtse.rttr_header(size)
    return presentation.pdv_header(presentation.RTSE_CONTEXT, len(rttr) + size) + rttr


_EXTERNAL = ber.identifier(ber.universal(8), constructed=True)
_SINGLE_ASN1_TYPE = ber.identifier(ber.context(0), constructed=True)
_MTSE_REFERENCE = ber.tlv(ber.INTEGER, ber.int_contents(MTSE_CONTEXT))


def transfer_head(apdu: bytes | memoryview) -> bytes:
    """What p1.association.transfer.encode_transfer puts before ``apdu`` (the EXTERNAL with indirect
    reference 5): the transfer path sends the two apart, so the APDU is not copied."""
    ber.check_single_tlv(apdu, "transfer EXTERNAL")
    single = _SINGLE_ASN1_TYPE + ber.length_octets(len(apdu))
    size = len(_MTSE_REFERENCE) + len(single) + len(apdu)
    return _EXTERNAL + ber.length_octets(size) + _MTSE_REFERENCE + single


def plain_apdu(inbound: InboundTransfer) -> bytes | None:
    """The MTS-APDU of a transfer in the form :func:`transfer_head` gives (what we send:
    ``28 L { 02 01 05  a0 L { apdu } }``, definite lengths), joined once from the pieces;
    None for any other form, which p1.association.transfer.decode_transfer reads (or refuses)."""
    size = inbound.size
    head = memoryview(inbound.head(_PLAIN_HEAD))
    if len(head) < _PLAIN_HEAD:  # (a transfer this short takes the general path)
        return None
    # read_definite reads only the headers from ``head``; their lengths are checked
    # against the size of the whole transfer.
    external = presentation.read_definite(head, 0, size)
    if external is None or external[0] != _EXTERNAL[0] or external[2] != size:
        return None
    start = external[1] + len(_MTSE_REFERENCE)
    if head[external[1] : start] != _MTSE_REFERENCE:
        return None
    single = presentation.read_definite(head, start, size)
    if single is None or single[0] != _SINGLE_ASN1_TYPE[0] or single[2] != size:
        return None
    apdu = inbound.octets_from(single[1])
    try:
        ber.read_single(apdu, "transfer EXTERNAL.single-ASN1-type")  # one value, as [0] holds
    except DecodeError:
        return None
    return apdu


_PLAIN_HEAD = 16  # EXTERNAL and [0] headers (at most 6 octets each) and the reference (3)
