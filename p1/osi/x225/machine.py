"""The session protocol machine as data: tokens, states, inputs and transitions (X.225).

X.225 Annex A defines the states; this module names them, names every input (an SPDU sent
or received, as p1.osi.session drives them) and says which state each (state, input) pair leads
to.  A pair missing from :data:`TABLE` is a protocol error.  Tokens (X.225 5.6) exist when
their functional unit was selected; the token setting item (PI 26) says where each starts.

Public API::

    RTSE_REQUIREMENTS, DEFAULT_REQUIREMENTS, SUPPORTED_REQUIREMENTS
    Token (Flag valued as PI 16 codes it), available_tokens(requirements),
    tokens_of(setting, requirements, role), resolve_setting(setting), token_names(tokens)
    DATA_BIT, MINOR_SYNC_BIT, MAJOR_ACTIVITY_BIT, RELEASE_BIT: the tokens as ints,
    available_token_bits(requirements), token_bits_of(setting, requirements, role)
    INITIATOR_SIDE, RESPONDER_SIDE, CALLED_USERS_CHOICE, ALL_ON_INITIATOR   (PI 26 values)
    State, Input, TABLE, DISCARDED, UNIT_OF, input_of(spdu)
"""

from __future__ import annotations

import enum

from p1.osi import Role
from p1.osi.x225 import spdu as codec
from p1.osi.x225.spdu import Kind, Requirement, Spdu

RTSE_REQUIREMENTS = 0x0249
"""Half-duplex, minor synchronize, activity management and exceptions (X.228 needs them)."""
DEFAULT_REQUIREMENTS = 0x0349
"""What a CN or AC without PI 20 means (X.225 8.3.1.16): RTSE's units and capability data."""
SUPPORTED_REQUIREMENTS = (
    Requirement.HALF_DUPLEX
    | Requirement.DUPLEX
    | Requirement.MINOR_SYNC
    | Requirement.ACTIVITY
    | Requirement.NEGOTIATED_RELEASE
    | Requirement.EXCEPTIONS
)
"""The functional units this machine implements; a responder accepts at most these."""

INITIATOR_SIDE = 0
RESPONDER_SIDE = 1
CALLED_USERS_CHOICE = 2
"""Token setting (PI 26) values, two bits a token."""

ALL_ON_INITIATOR = 0x00
"""Token setting putting every token on the initiator's side (what RTSE starts with)."""


class Token(enum.Flag):
    """A session token, valued as the token item (PI 16) codes it."""

    DATA = 0x01
    MINOR_SYNC = 0x04
    MAJOR_ACTIVITY = 0x10
    RELEASE = 0x40


# The same bits as plain ints: p1.osi.session keeps its tokens as ints, because every Flag
# operation is a Python-level call and the data phase tests tokens on every SPDU.
DATA_BIT = Token.DATA.value
MINOR_SYNC_BIT = Token.MINOR_SYNC.value
MAJOR_ACTIVITY_BIT = Token.MAJOR_ACTIVITY.value
RELEASE_BIT = Token.RELEASE.value

# Each token, the functional units that make it exist, and its place in PI 26.
_TOKEN_UNITS = (
    (DATA_BIT, int(Requirement.HALF_DUPLEX), 0),
    (MINOR_SYNC_BIT, int(Requirement.MINOR_SYNC), 2),
    (MAJOR_ACTIVITY_BIT, int(Requirement.MAJOR_SYNC | Requirement.ACTIVITY), 4),
    (RELEASE_BIT, int(Requirement.NEGOTIATED_RELEASE), 6),
)


def available_token_bits(requirements: int) -> int:
    """:func:`available_tokens` as token bits."""
    return sum(token for token, units, _ in _TOKEN_UNITS if requirements & units)


def available_tokens(requirements: int) -> Token:
    """The tokens that exist on a connection with these functional units."""
    return Token(available_token_bits(requirements))


def token_bits_of(setting: int, requirements: int, role: Role) -> int:
    """:func:`tokens_of` as token bits."""
    mine = INITIATOR_SIDE if role is Role.INITIATOR else RESPONDER_SIDE
    return sum(
        token
        for token, units, shift in _TOKEN_UNITS
        if requirements & units and (setting >> shift) & 3 == mine
    )


def tokens_of(setting: int, requirements: int, role: Role) -> Token:
    """The tokens ``role`` starts with under token setting ``setting`` (PI 26)."""
    return Token(token_bits_of(setting, requirements, role))


def resolve_setting(setting: int) -> int:
    """Settle "called SS-user's choice" on the initiator's side, where RTSE's turn starts."""
    for _, _, shift in _TOKEN_UNITS:
        if (setting >> shift) & 3 == CALLED_USERS_CHOICE:
            setting &= ~(3 << shift)
    return setting & 0xFF


def token_names(tokens: Token | int) -> str:
    """``DATA+MINOR_SYNC``: the tokens (a Token or token bits) named for messages."""
    bits = tokens if isinstance(tokens, int) else tokens.value
    return "+".join(token.name or "" for token in Token if token.value & bits)


class State(enum.Enum):
    """Connection states, named after X.225 Annex A."""

    # Members are singletons, so identity is equality: hash by identity, in C, rather than
    # by Enum's Python-level hash of the name (TABLE is looked up for every SPDU).
    __hash__ = object.__hash__

    IDLE = "STA01"
    WAIT_OA = "STA02B"
    WAIT_AC = "STA02A"
    WAIT_CDO = "STA01D"
    WAIT_CONNECT_RESPONSE = "STA08"
    OPEN = "STA713"
    WAIT_GTA = "STA18"
    WAIT_MAA = "STA04B"
    WAIT_ACTIVITY_END_RESPONSE = "STA10B"
    WAIT_AIA = "STA05B"
    WAIT_ACTIVITY_INTERRUPT_RESPONSE = "STA11B"
    WAIT_ADA = "STA05C"
    WAIT_ACTIVITY_DISCARD_RESPONSE = "STA11C"
    EXCEPTION_RECEIVED = "STA19"
    EXCEPTION_SENT = "STA20"
    WAIT_DN = "STA03"
    WAIT_FN_RESPONSE = "STA09"
    CLOSED = "closed"


class Input(enum.Enum):
    """What drives the machine: an SPDU we send or one we receive."""

    __hash__ = object.__hash__  # as State's

    SEND_CN = "send CN"
    SEND_CN_OVERFLOW = "send CN with data overflow"
    RECV_CN = "receive CN"
    RECV_CN_OVERFLOW = "receive CN with data overflow"
    RECV_OA = "receive OA"
    RECV_CDO = "receive CDO"
    RECV_CDO_LAST = "receive last CDO"
    SEND_AC = "send AC"
    RECV_AC = "receive AC"
    SEND_RF = "send RF"
    RECV_RF = "receive RF"
    SEND_DT = "send DT"
    RECV_DT = "receive DT"
    SEND_GT = "send GT"
    RECV_GT = "receive GT"
    SEND_PT = "send PT"
    RECV_PT = "receive PT"
    SEND_GTC = "send GTC"
    RECV_GTC = "receive GTC"
    RECV_GTA = "receive GTA"
    SEND_AS = "send AS"
    RECV_AS = "receive AS"
    SEND_AR = "send AR"
    RECV_AR = "receive AR"
    SEND_AE = "send AE"
    RECV_AE = "receive AE"
    RECV_MAP = "receive MAP"
    SEND_AEA = "send AEA"
    RECV_AEA = "receive AEA"
    SEND_MIP = "send MIP"
    RECV_MIP = "receive MIP"
    SEND_MIA = "send MIA"
    RECV_MIA = "receive MIA"
    SEND_AI = "send AI"
    RECV_AI = "receive AI"
    SEND_AIA = "send AIA"
    RECV_AIA = "receive AIA"
    SEND_AD = "send AD"
    RECV_AD = "receive AD"
    SEND_ADA = "send ADA"
    RECV_ADA = "receive ADA"
    SEND_ED = "send ED"
    RECV_ED = "receive ED"
    RECV_ER = "receive ER"
    SEND_FN = "send FN"
    RECV_FN = "receive FN"
    SEND_DN = "send DN"
    RECV_DN = "receive DN"
    SEND_NF = "send NF"
    RECV_NF = "receive NF"
    SEND_AB = "send AB"
    RECV_AB = "receive AB"
    RECV_AA = "receive AA"


_S, _I = State, Input

_MOVES: dict[State, dict[Input, State]] = {
    # Connection establishment.
    _S.IDLE: {
        _I.SEND_CN: _S.WAIT_AC,
        _I.SEND_CN_OVERFLOW: _S.WAIT_OA,
        _I.RECV_CN: _S.WAIT_CONNECT_RESPONSE,
        _I.RECV_CN_OVERFLOW: _S.WAIT_CDO,
    },
    _S.WAIT_OA: {_I.RECV_OA: _S.WAIT_AC, _I.RECV_RF: _S.CLOSED},
    _S.WAIT_AC: {_I.RECV_AC: _S.OPEN, _I.RECV_RF: _S.CLOSED},
    _S.WAIT_CDO: {_I.RECV_CDO: _S.WAIT_CDO, _I.RECV_CDO_LAST: _S.WAIT_CONNECT_RESPONSE},
    _S.WAIT_CONNECT_RESPONSE: {_I.SEND_AC: _S.OPEN, _I.SEND_RF: _S.CLOSED},
    # Data transfer: data, tokens, activities, synchronization, exceptions, release.
    _S.OPEN: {
        **dict.fromkeys((_I.SEND_DT, _I.RECV_DT, _I.SEND_GT, _I.RECV_GT, _I.SEND_PT), _S.OPEN),
        **dict.fromkeys((_I.RECV_PT, _I.RECV_GTC, _I.SEND_AS, _I.RECV_AS), _S.OPEN),
        **dict.fromkeys((_I.SEND_AR, _I.RECV_AR), _S.OPEN),
        **dict.fromkeys((_I.SEND_MIP, _I.RECV_MIP, _I.SEND_MIA, _I.RECV_MIA), _S.OPEN),
        _I.SEND_GTC: _S.WAIT_GTA,
        _I.SEND_AE: _S.WAIT_MAA,
        _I.RECV_AE: _S.WAIT_ACTIVITY_END_RESPONSE,
        _I.SEND_AI: _S.WAIT_AIA,
        _I.RECV_AI: _S.WAIT_ACTIVITY_INTERRUPT_RESPONSE,
        _I.SEND_AD: _S.WAIT_ADA,
        _I.RECV_AD: _S.WAIT_ACTIVITY_DISCARD_RESPONSE,
        _I.SEND_ED: _S.EXCEPTION_SENT,
        _I.RECV_ED: _S.EXCEPTION_RECEIVED,
        _I.RECV_ER: _S.EXCEPTION_RECEIVED,
        _I.SEND_FN: _S.WAIT_DN,
        _I.RECV_FN: _S.WAIT_FN_RESPONSE,
    },
    # We gave every token: a PT or GT sent before the peer saw GTC is discarded.
    _S.WAIT_GTA: {_I.RECV_GTA: _S.OPEN, _I.RECV_PT: _S.WAIT_GTA, _I.RECV_GT: _S.WAIT_GTA},
    # We ended the activity: minor syncs may still be confirmed, the turn asked for.
    _S.WAIT_MAA: {
        _I.RECV_AEA: _S.OPEN,
        _I.RECV_MIA: _S.WAIT_MAA,
        _I.RECV_PT: _S.WAIT_MAA,
        _I.RECV_ED: _S.EXCEPTION_RECEIVED,
        _I.RECV_ER: _S.EXCEPTION_RECEIVED,
    },
    _S.WAIT_ACTIVITY_END_RESPONSE: {
        _I.SEND_AEA: _S.OPEN,
        _I.SEND_MIA: _S.WAIT_ACTIVITY_END_RESPONSE,
        _I.SEND_PT: _S.WAIT_ACTIVITY_END_RESPONSE,
        _I.SEND_ED: _S.EXCEPTION_SENT,
    },
    # Exceptions: the data token holder recovers (X.225 7.27, 7.28).
    _S.EXCEPTION_RECEIVED: {
        _I.SEND_AI: _S.WAIT_AIA,
        _I.SEND_AD: _S.WAIT_ADA,
        _I.SEND_GT: _S.OPEN,
        _I.RECV_PT: _S.EXCEPTION_RECEIVED,
        _I.RECV_MIA: _S.EXCEPTION_RECEIVED,
    },
    _S.EXCEPTION_SENT: {
        **dict.fromkeys((_I.RECV_DT, _I.RECV_MIP, _I.RECV_AE, _I.RECV_PT), _S.EXCEPTION_SENT),
        _I.RECV_AI: _S.WAIT_ACTIVITY_INTERRUPT_RESPONSE,
        _I.RECV_AD: _S.WAIT_ACTIVITY_DISCARD_RESPONSE,
        _I.RECV_GT: _S.OPEN,
    },
    # Interrupt and discard: what the peer sent before it saw AI / AD is discarded.
    _S.WAIT_AIA: {
        _I.RECV_AIA: _S.OPEN,
        **dict.fromkeys((_I.RECV_MIA, _I.RECV_ED, _I.RECV_ER, _I.RECV_PT), _S.WAIT_AIA),
    },
    _S.WAIT_ACTIVITY_INTERRUPT_RESPONSE: {_I.SEND_AIA: _S.OPEN},
    _S.WAIT_ADA: {
        _I.RECV_ADA: _S.OPEN,
        **dict.fromkeys((_I.RECV_MIA, _I.RECV_ED, _I.RECV_ER, _I.RECV_PT), _S.WAIT_ADA),
    },
    _S.WAIT_ACTIVITY_DISCARD_RESPONSE: {_I.SEND_ADA: _S.OPEN},
    # Orderly release.
    _S.WAIT_DN: {_I.RECV_DN: _S.CLOSED, _I.RECV_NF: _S.OPEN, _I.RECV_PT: _S.WAIT_DN},
    _S.WAIT_FN_RESPONSE: {_I.SEND_DN: _S.CLOSED, _I.SEND_NF: _S.OPEN},
    _S.CLOSED: {},
}

TABLE: dict[tuple[State, Input], State] = {
    **{(state, what): after for state, row in _MOVES.items() for what, after in row.items()},
    # Abort: either side, from any state of a connection (X.225 7.9).
    # From IDLE nothing has been sent yet: the abort just closes (p1.osi.session sends no AB).
    **{(state, _I.SEND_AB): _S.CLOSED for state in State if state is not _S.CLOSED},
    **{(state, _I.RECV_AB): _S.CLOSED for state in State if state is not _S.CLOSED},
}

# SPDUs the peer sent before it saw our recovery request: dropped without an event.
DISCARDED = frozenset(
    {
        (_S.WAIT_GTA, _I.RECV_PT),
        (_S.WAIT_GTA, _I.RECV_GT),
        (_S.EXCEPTION_SENT, _I.RECV_DT),
        (_S.EXCEPTION_SENT, _I.RECV_MIP),
        (_S.EXCEPTION_SENT, _I.RECV_AE),
        *(
            (state, what)
            for state in (_S.WAIT_AIA, _S.WAIT_ADA)
            for what in (_I.RECV_MIA, _I.RECV_ED, _I.RECV_ER)
        ),
    }
)

# The functional unit each input belongs to (X.225 Table 1); none: kernel.
_UNITS: dict[Input, Requirement] = {
    **dict.fromkeys((_I.SEND_MIP, _I.RECV_MIP, _I.SEND_MIA, _I.RECV_MIA), Requirement.MINOR_SYNC),
    **dict.fromkeys(
        (_I.SEND_AS, _I.RECV_AS, _I.SEND_AR, _I.RECV_AR, _I.SEND_AE, _I.RECV_AE),
        Requirement.ACTIVITY,
    ),
    **dict.fromkeys((_I.SEND_AEA, _I.RECV_AEA), Requirement.ACTIVITY),
    **dict.fromkeys(
        (_I.SEND_AI, _I.RECV_AI, _I.SEND_AIA, _I.RECV_AIA, _I.SEND_AD, _I.RECV_AD),
        Requirement.ACTIVITY,
    ),
    **dict.fromkeys(
        (_I.SEND_ADA, _I.RECV_ADA, _I.SEND_GTC, _I.RECV_GTC, _I.RECV_GTA), Requirement.ACTIVITY
    ),
    **dict.fromkeys((_I.SEND_ED, _I.RECV_ED, _I.RECV_ER), Requirement.EXCEPTIONS),
    **dict.fromkeys((_I.SEND_NF, _I.RECV_NF), Requirement.NEGOTIATED_RELEASE),
    _I.RECV_MAP: Requirement.MAJOR_SYNC,
}
UNIT_OF: dict[Input, int] = {what: int(unit) for what, unit in _UNITS.items()}
"""The unit bits as plain ints (IntFlag operations are Python-level calls)."""

# The input each received SPDU kind is (special cases in _input_of).
_RECEIVED: dict[Kind, Input] = {
    Kind.OA: _I.RECV_OA,
    Kind.AC: _I.RECV_AC,
    Kind.RF: _I.RECV_RF,
    Kind.FN: _I.RECV_FN,
    Kind.DN: _I.RECV_DN,
    Kind.NF: _I.RECV_NF,
    Kind.AB: _I.RECV_AB,
    Kind.AA: _I.RECV_AA,
    Kind.GTC: _I.RECV_GTC,
    Kind.GTA: _I.RECV_GTA,
    Kind.GT: _I.RECV_GT,
    Kind.PT: _I.RECV_PT,
    Kind.DT: _I.RECV_DT,
    Kind.MIP: _I.RECV_MIP,
    Kind.MIA: _I.RECV_MIA,
    Kind.MAA: _I.RECV_AEA,
    Kind.AS: _I.RECV_AS,
    Kind.AR: _I.RECV_AR,
    Kind.AI: _I.RECV_AI,
    Kind.AIA: _I.RECV_AIA,
    Kind.AD: _I.RECV_AD,
    Kind.ADA: _I.RECV_ADA,
    Kind.ER: _I.RECV_ER,
    Kind.ED: _I.RECV_ED,
}


def input_of(unit: Spdu) -> Input:
    if unit.kind is Kind.CN:
        return _I.RECV_CN_OVERFLOW if unit.data_overflow else _I.RECV_CN
    if unit.kind is Kind.CDO:
        return _I.RECV_CDO_LAST if (unit.enclosure_item or 0) & codec.ENCLOSURE_END else _I.RECV_CDO
    if unit.kind is Kind.MAP:
        ongoing = (unit.sync_type_item or 0) & codec.SYNC_NO_CONFIRM
        return _I.RECV_MAP if ongoing else _I.RECV_AE
    return _RECEIVED[unit.kind]
