"""The rules of :mod:`mta.operator.access`: who is an operator, a user or an outsider, and what
each may ask, without sockets."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from config.schema import Access, LocalAccount, OperatorGroup
from mta.operator.access import (
    NEEDS,
    Caller,
    Grant,
    Need,
    Policy,
    Role,
    grant,
    not_own_mailbox,
    not_own_name,
    refusal,
)
from mta.operator.operations import _OPERATIONS
from p1.mts.orname import parse_orname

SOURCE = Path("/etc/aiox400/site.toml")
DAEMON_UID, DAEMON_GID = 998, 997
OPERATORS_GID = 4
ALICE_UID, BOB_UID = 1001, 1002
ALICE = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Alice"
ALICE_TOO = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Duty"

ACCESS = Access(
    operators=(OperatorGroup(name="adm", gid=OPERATORS_GID),),
    users=(
        LocalAccount(
            name="alice",
            uid=ALICE_UID,
            names=(parse_orname(ALICE), parse_orname(ALICE_TOO)),
        ),
    ),
)
POLICY = Policy.of(ACCESS, SOURCE, DAEMON_UID, DAEMON_GID)
USER_OPS = ("submit", "inbox", "wait", "read", "delete")


def caller(uid: int, gid: int = 100, groups: frozenset[int] = frozenset()) -> Caller:
    return Caller(pid=4242, uid=uid, gid=gid, groups=groups, account=f"user{uid}")


def test_every_operation_of_the_api_has_its_need() -> None:
    assert set(NEEDS) == set(_OPERATIONS)
    users = {op for op, need in NEEDS.items() if need is not Need.OPERATOR}
    assert users == set(USER_OPS)


@pytest.mark.parametrize(
    ("who", "role"),
    [
        (caller(0, 0), Role.OPERATOR),
        (caller(DAEMON_UID, DAEMON_GID), Role.OPERATOR),
        (caller(1500, OPERATORS_GID), Role.OPERATOR),
        (caller(1500, 100, frozenset({50, OPERATORS_GID})), Role.OPERATOR),
        (caller(ALICE_UID, 100, frozenset({OPERATORS_GID})), Role.OPERATOR),
        (caller(ALICE_UID), Role.USER),
        (caller(BOB_UID), Role.OUTSIDER),
        (caller(BOB_UID, DAEMON_GID), Role.OUTSIDER),
    ],
)
def test_roles(who: Caller, role: Role) -> None:
    assert grant(POLICY, who).role is role


def test_without_access_everyone_is_an_operator() -> None:
    open_policy = Policy.of(None, SOURCE, DAEMON_UID, DAEMON_GID)
    assert not open_policy.enforced
    assert grant(open_policy, caller(BOB_UID)).role is Role.OPERATOR


def test_without_operators_the_daemons_group_is_theirs() -> None:
    policy = Policy.of(Access(), SOURCE, DAEMON_UID, DAEMON_GID)
    assert grant(policy, caller(1500, 100, frozenset({DAEMON_GID}))).role is Role.OPERATOR
    assert grant(policy, caller(1500, OPERATORS_GID)).role is Role.OUTSIDER
    answer = refusal(policy, caller(1500), grant(policy, caller(1500)), "status")
    assert answer is not None and f"the MTA's own group, gid {DAEMON_GID}" in answer


def test_an_outsider_is_told_who_it_is_and_how_to_get_access() -> None:
    bob = Caller(pid=1, uid=BOB_UID, gid=100, account="bob")
    assert refusal(POLICY, bob, grant(POLICY, bob), "inbox") == (
        "account bob (uid 1002) may not use this MTA: it is neither in an operators group "
        "(groups adm) nor in [access.users] of /etc/aiox400/site.toml"
    )
    nameless = Caller(pid=1, uid=4000, gid=4000)
    answer = refusal(POLICY, nameless, grant(POLICY, nameless), "inbox")
    assert answer is not None and answer.startswith("uid 4000 (no account) may not")


def test_a_user_is_told_which_operations_and_names_are_its_own() -> None:
    alice = Caller(pid=1, uid=ALICE_UID, gid=100, account="alice")
    granted = grant(POLICY, alice)
    assert refusal(POLICY, alice, granted, "status") == (
        "account alice (uid 1001) may not status: only operators (groups adm) may"
    )
    assert not_own_name(alice, granted, "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Bob") == (
        f"account alice (uid 1001) may submit only as {ALICE} or {ALICE_TOO} "
        "(its O/R names in [access.users]), not as C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Bob"
    )
    assert not_own_mailbox(alice, granted, "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Bob") == (
        f"account alice (uid 1001) may use only the mailbox of {ALICE} or {ALICE_TOO}, "
        "not that of C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Bob"
    )


def test_a_user_owns_its_names_compared_as_the_store_compares_them() -> None:
    granted = grant(POLICY, caller(ALICE_UID))
    assert granted.owns(parse_orname("c=gb;admd= ;prmd=sitea;o=hq;s=ALICE").canonical)
    assert granted.owns(parse_orname("C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Duty").canonical)
    assert not granted.owns(parse_orname("C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Bob").canonical)
    assert Grant(role=Role.OPERATOR).owns("anything")


ids = st.integers(min_value=0, max_value=2**32 - 2)
ops = st.sampled_from(sorted(NEEDS)) | st.text(min_size=1, max_size=12)
names = st.sampled_from([ALICE, ALICE_TOO, "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Bob"])


@given(
    uid=ids,
    gid=ids,
    groups=st.frozensets(ids, max_size=4),
    op=ops,
    operators=st.frozensets(ids, max_size=3),
    users=st.dictionaries(ids, st.lists(names, min_size=1, max_size=2), max_size=3),
    daemon=ids,
    name=names,
)
def test_what_a_caller_may_ask_follows_from_its_role(
    uid: int,
    gid: int,
    groups: frozenset[int],
    op: str,
    operators: frozenset[int],
    users: dict[int, list[str]],
    daemon: int,
    name: str,
) -> None:
    access = Access(
        operators=tuple(OperatorGroup(name=str(g), gid=g) for g in sorted(operators)),
        users=tuple(
            LocalAccount(name=str(u), uid=u, names=tuple(parse_orname(n) for n in written))
            for u, written in users.items()
        ),
    )
    policy = Policy.of(access, SOURCE, daemon, DAEMON_GID)
    who = caller(uid, gid, groups)
    granted = grant(policy, who)
    answer = refusal(policy, who, granted, op)
    operator = uid in (0, daemon) or bool(({gid} | groups) & operators)
    canonical = parse_orname(name).canonical
    if operator:
        assert granted.role is Role.OPERATOR and answer is None and granted.owns(canonical)
    elif uid in users:
        assert granted.role is Role.USER
        assert (answer is None) == (NEEDS.get(op, Need.OPERATOR) is not Need.OPERATOR)
        own = {parse_orname(n).canonical for n in users[uid]}
        assert granted.owns(canonical) == (canonical in own)
    else:
        assert granted.role is Role.OUTSIDER and not granted.owns(canonical)
        assert answer is not None and who.who in answer and str(SOURCE) in answer
    if answer is not None:
        assert answer.startswith(who.who)
