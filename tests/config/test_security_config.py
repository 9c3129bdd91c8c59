"""``[security]``: the policy read from its SPIF, the default label, clearances of
mailboxes and peers, and errors naming the file, the key and the value."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from config import ConfigError, MtaConfig, load_config
from config.view import effective_settings
from p1.mts.orname import parse_orname
from tests.p1.security.policies import EXAMPLE_SPIF, ref

HEAD = 'name = "MTA-A"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEA"\naccept_any_recipient = true\n'
ALICE = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Alice"
BOB = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Bob"
PEER = """
[[peers]]
name = "MTA-B"
host = "127.0.0.1"
routes = ["C=GB;ADMD= ;PRMD=SITEB"]
{extra}
[[peers.slots]]
port = 1102
precedences = ["override", "flash", "immediate", "priority", "routine", "deferred"]
"""
SECURITY = f"""
[security]
policy = "policy.xml"
default_label = "UNCLASSIFIED"
default_clearance = "basic"

[[security.clearances]]
name = "secret-gbr"
classification = "SECRET"
categories = ["GBR", "Special Access/ALPHA"]
users = ["{ALICE}"]

[[security.clearances]]
name = "basic"
classification = "unclassified"
"""


def load(tmp_path: Path, text: str) -> MtaConfig:
    shutil.copy(EXAMPLE_SPIF, tmp_path / "policy.xml")
    path = tmp_path / "site-a.toml"
    path.write_text(HEAD + text, encoding="utf-8")
    return load_config(path)


def test_without_the_section_nothing_is_enforced(tmp_path: Path) -> None:
    security = load(tmp_path, "").security
    assert not security.enforced
    assert security.mailbox_clearance(parse_orname(ALICE).canonical) is None


def test_the_policy_and_the_clearances_are_read(tmp_path: Path) -> None:
    config = load(tmp_path, SECURITY + PEER.format(extra='clearance = "secret-gbr"'))
    security = config.security
    assert security.enforced and security.spif is not None
    assert security.policy == tmp_path / "policy.xml"
    assert security.spif.name == "EXAMPLE"
    assert security.unlabelled == 1
    alice = security.mailbox_clearance(parse_orname(ALICE).canonical)
    assert alice is not None and alice.name == "secret-gbr"
    assert alice.classes == {0, 1, 2, 3, 4}
    assert alice.categories == {ref("GBR"), ref("ALPHA")}
    bob = security.mailbox_clearance(parse_orname(BOB).canonical)
    assert bob is not None and (bob.name, bob.classes, bob.categories) == (
        "basic",
        frozenset({0, 1}),
        frozenset(),
    )
    assert config.peer("MTA-B").clearance == "secret-gbr"
    assert security.clearance_named("secret-gbr") == alice


def test_the_effective_configuration_shows_it(tmp_path: Path) -> None:
    settings = dict(effective_settings(load(tmp_path, SECURITY)))
    assert settings["security.default_label"] == '"UNCLASSIFIED"'
    assert settings["security.clearances[0].categories"] == '["GBR", "Special Access/ALPHA"]'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[security]\ndefault_label = "SECRET"\n',
            "security.policy is missing: expected an Open XML SPIF file (default_label needs one)",
        ),
        (
            '[security]\npolicy = "none.xml"\n',
            'security.policy = "none.xml": expected a readable file (',
        ),
        (
            '[security]\npolicy = "site-a.toml"\n',
            'security.policy = "site-a.toml": expected an Open XML SPIF (',
        ),
        (
            '[security]\npolicy = "policy.xml"\ndefault_label = "SECRETISH"\n',
            'security.default_label = "SECRETISH": expected a classification of policy '
            "EXAMPLE (UNMARKED, UNCLASSIFIED, RESTRICTED, CONFIDENTIAL, SECRET, TOP SECRET)",
        ),
        (
            '[security]\npolicy = "policy.xml"\n[[security.clearances]]\nname = "x"\n'
            'classification = "SECRET"\ncategories = ["GBR", "OMEGA"]\n',
            'security.clearances[0].categories[1] = "OMEGA": expected a category of policy EXAMPLE',
        ),
        (
            '[security]\npolicy = "policy.xml"\n[[security.clearances]]\nname = "x"\n'
            'classification = "TOP"\n',
            'security.clearances[0].classification = "TOP": expected a classification',
        ),
        (
            '[security]\npolicy = "policy.xml"\n[[security.clearances]]\nname = "x"\n'
            'classification = "SECRET"\nusers = ["C=GB;ADMD= ;PRMD=ELSEWHERE;S=Eve"]\n',
            'security.clearances[0].users[0] = "C=GB;ADMD= ;PRMD=ELSEWHERE;S=Eve": expected '
            "an O/R name under one of the local domains",
        ),
        (
            f'[security]\npolicy = "policy.xml"\n[[security.clearances]]\nname = "x"\n'
            f'classification = "SECRET"\nusers = ["{ALICE}"]\n[[security.clearances]]\n'
            f'name = "y"\nclassification = "SECRET"\nusers = ["{ALICE}"]\n',
            f'security.clearances[1].users[0] = "{ALICE}": expected a user no other '
            "clearance lists (security.clearances[0])",
        ),
        (
            '[security]\npolicy = "policy.xml"\n[[security.clearances]]\nname = "x"\n'
            'classification = "SECRET"\n[[security.clearances]]\nname = "x"\n'
            'classification = "SECRET"\n',
            'security.clearances[1].name = "x": expected a name no other clearance has',
        ),
        (
            '[security]\npolicy = "policy.xml"\ndefault_clearance = "nobody"\n',
            'security.default_clearance = "nobody": expected the name of a '
            "[[security.clearances]] table (none are configured)",
        ),
        (
            SECURITY + PEER.format(extra='clearance = "top"'),
            'peers[0].clearance = "top": expected the name of a [[security.clearances]] '
            "table (secret-gbr, basic)",
        ),
        (
            PEER.format(extra='clearance = "top"'),
            'peers[0].clearance = "top": expected no clearance without a [security] policy',
        ),
    ],
)
def test_bad_security_settings_name_file_key_and_value(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    assert str(caught.value).startswith(f"{tmp_path / 'site-a.toml'}: {message}")


def test_a_bad_spif_is_named_with_its_element_and_value(tmp_path: Path) -> None:
    (tmp_path / "bad.xml").write_text(
        '<SPIF><securityPolicyId name="P" id="1.2.3"/><securityClassifications>'
        '<securityClassification name="U" lacv="x" hierarchy="0"/>'
        "</securityClassifications></SPIF>"
    )
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, '[security]\npolicy = "bad.xml"\n')
    assert str(caught.value) == (
        f'{tmp_path / "site-a.toml"}: security.policy = "bad.xml": expected an Open XML SPIF '
        f"({tmp_path / 'bad.xml'}: securityClassification 'U': lacv 'x' is not a number 0 "
        "or more)"
    )


def test_an_ambiguous_category_asks_which(tmp_path: Path) -> None:
    text = (
        '[security]\npolicy = "policy.xml"\n[[security.clearances]]\nname = "x"\n'
        'classification = "SECRET"\ncategories = ["HANDLING"]\n'
    )
    spif = EXAMPLE_SPIF.read_text().replace('name="STAFF"', 'name="Handling"')
    shutil.copy(EXAMPLE_SPIF, tmp_path / "policy.xml")
    path = tmp_path / "site-a.toml"
    path.write_text(HEAD + text, encoding="utf-8")
    (tmp_path / "policy.xml").write_text(spif.replace('name="KFOR"', 'name="Handling"'))
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).endswith(
        'categories[0] = "HANDLING": expected one category: write which '
        "(Handling/Handling/Handling, Handling/Operations/Handling)"
    )
