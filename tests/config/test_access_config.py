"""``[access]``: operators groups, users and their O/R names, and clear errors."""

from __future__ import annotations

import grp
import pwd
from pathlib import Path

import pytest

from config import ConfigError, MtaConfig, load_config
from config.schema import Access, LocalAccount, OperatorGroup
from config.view import effective_settings
from p1.mts.orname import parse_orname

HEAD = 'name = "MTA-A"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEA"\naccept_any_recipient = true\n'
ALICE = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Alice"
DUTY = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Duty"
UNKNOWN_GROUP = (
    'expected the name of a group on this host (getent group) or a numeric gid such as "1001"'
)
UNKNOWN_ACCOUNT = (
    'expected the name of an account on this host (getent passwd) or a numeric uid such as "1001"'
)


def load(tmp_path: Path, text: str) -> MtaConfig:
    path = tmp_path / "site-a.toml"
    path.write_text(HEAD + text, encoding="utf-8")
    return load_config(path)


def test_without_the_section_there_is_no_policy(tmp_path: Path) -> None:
    assert load(tmp_path, "").access is None


def test_an_empty_section_leaves_the_operators_to_the_daemons_group(tmp_path: Path) -> None:
    assert load(tmp_path, "[access]\n").access == Access(operators=None, users=())


def test_names_and_numbers_are_read(tmp_path: Path) -> None:
    text = '[access]\noperators = ["adm", "4242", 50]\n[access.users]\n'
    text += f'daemon = "{ALICE}"\n"1234" = ["{ALICE}", "{DUTY}", "{ALICE}"]\n'
    access = load(tmp_path, text).access
    assert access == Access(
        operators=(
            OperatorGroup(name="adm", gid=grp.getgrnam("adm").gr_gid),
            OperatorGroup(name="4242", gid=4242),
            OperatorGroup(name="50", gid=50),
        ),
        users=(
            LocalAccount(
                name="daemon", uid=pwd.getpwnam("daemon").pw_uid, names=(parse_orname(ALICE),)
            ),
            LocalAccount(name="1234", uid=1234, names=(parse_orname(ALICE), parse_orname(DUTY))),
        ),
    )


def test_the_effective_configuration_shows_it(tmp_path: Path) -> None:
    text = f'[access]\noperators = ["adm"]\n[access.users]\ndaemon = "{ALICE}"\n'
    settings = dict(effective_settings(load(tmp_path, text)))
    assert settings["access.operators"] == '["adm"]'
    assert settings["access.users.daemon"] == f'"{ALICE}"'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[access]\noperators = 'adm'\n", 'access.operators = "adm": expected a list of group'),
        (
            '[access]\noperators = ["no-such-group-here"]\n',
            f'access.operators[0] = "no-such-group-here": {UNKNOWN_GROUP}',
        ),
        ('[access]\noperators = [""]\n', f'access.operators[0] = "": {UNKNOWN_GROUP}'),
        ("[access]\noperators = [-1]\n", f"access.operators[0] = -1: {UNKNOWN_GROUP}"),
        ('[access]\noperators = ["4294967295"]\n', "access.operators[0] = "),
        ("[access]\noperator = []\n", "access.operator = []: expected one of the keys operators"),
        ("[access]\nusers = 3\n", "access.users = 3: expected an [access.users] table"),
        (
            f'[access.users]\nno-such-account-here = "{ALICE}"\n',
            f'access.users.no-such-account-here = "{ALICE}": {UNKNOWN_ACCOUNT}',
        ),
        (
            '[access.users]\ndaemon = "S=Alice;C=GB"\n',
            'access.users.daemon = "S=Alice;C=GB": expected an O/R name',
        ),
        ("[access.users]\ndaemon = []\n", "access.users.daemon = []: expected an O/R name or a"),
        ("[access.users]\ndaemon = 7\n", "access.users.daemon = 7: expected an O/R name or a"),
        (
            f'[access.users]\ndaemon = ["{ALICE}", "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Bob"]\n',
            'access.users.daemon[1] = "C=GB;ADMD= ;PRMD=SITEB;O=HQ;S=Bob": expected an O/R '
            "name under one of the local domains (C=GB;ADMD= ;PRMD=SITEA)",
        ),
        (
            f'[access.users]\ndaemon = "{ALICE}"\n"1" = "{DUTY}"\n',
            f'access.users.1 = "{DUTY}": expected an account not already listed (uid 1 is daemon)',
        ),
        ("access = 1\n", "access = 1: expected a [access] table"),
    ],
)
def test_a_bad_value_names_file_key_and_value(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, text)
    assert str(raised.value).startswith(f"{tmp_path / 'site-a.toml'}: {message}"), str(raised.value)
